"""MultiheadAttention and TransformerEncoderLayer (PyTorch parameter names and layouts)."""
from __future__ import annotations

import math

from ..array import api as gp

from . import functional as F
from . import init
from .layers import GELU, Dropout, LayerNorm, Linear, ReLU, _empty
from .module import Module

__all__ = ["Attention", "MultiheadAttention", "TransformerEncoderLayer"]


def _additive(mask, dtype, invert: bool, name: str = "attn_mask"):
    """A bool mask (True = blocked when ``invert``) or float mask as an additive float array."""
    if mask is None:
        return None
    if not gp.isdtype(mask.dtype, ("bool", "real floating")):
        raise TypeError(f"MultiheadAttention: {name} must be a bool or floating mask, got "
                        f"{mask.dtype}")
    if mask.dtype == gp.bool:
        ninf = gp.asarray(-math.inf, dtype=dtype, device=mask.device)
        zero = gp.asarray(0.0, dtype=dtype, device=mask.device)
        return gp.where(mask, ninf, zero) if invert else gp.where(mask, zero, ninf)
    return gp.astype(mask, dtype) if mask.dtype != dtype else mask


def _activation(activation, who: str):
    """torch's 'relu' / 'gelu' names as the functions; a callable (a module too) as given."""
    if isinstance(activation, str):
        acts = {"relu": F.relu, "gelu": F.gelu}
        if activation not in acts:
            raise ValueError(f"{who}: activation must be 'relu', 'gelu' or a callable, "
                             f"got {activation!r}")
        return acts[activation]
    if not callable(activation):
        raise TypeError(f"{who}: activation must be 'relu', 'gelu' or a callable, "
                        f"got {type(activation).__name__}")
    return activation


def _relu_or_gelu(activation) -> int:
    """1 for relu, 2 for gelu (function or module), else 0: torch's activation_relu_or_gelu."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


class MultiheadAttention(Module):
    """Multi-head attention with a packed in-projection (in_proj_weight: (3E, E)) and out_proj."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim {embed_dim} is not divisible by "
                             f"num_heads {num_heads}")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim, self.batch_first = embed_dim // num_heads, batch_first
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        # torch's layout: one packed (3E, E) in-projection when keys and values have the
        # embedding size, else separate q/k/v projection weights (E, E), (E, kdim), (E, vdim)
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _empty((3 * embed_dim, embed_dim), dtype, device)
            init.xavier_uniform_(self.in_proj_weight)
        else:
            self.register_parameter("in_proj_weight", None)
            for name, d_in in (("q", embed_dim), ("k", self.kdim), ("v", self.vdim)):
                w = _empty((embed_dim, d_in), dtype, device)
                init.xavier_uniform_(w)
                setattr(self, f"{name}_proj_weight", w)
        if bias:
            self.in_proj_bias = _empty((3 * embed_dim,), dtype, device)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            # torch's learned key/value rows, appended to every sequence's keys and values
            self.bias_k = _empty((1, 1, embed_dim), dtype, device)
            self.bias_v = _empty((1, 1, embed_dim), dtype, device)
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        if bias:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False):
        """(attn_output, attn_weights or None), as torch.nn.MultiheadAttention."""
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = (gp.expand_dims(t, axis=0 if self.batch_first else 1)
                                 for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = gp.expand_dims(key_padding_mask, axis=0)
        if not self.batch_first:
            query, key, value = (gp.permute_dims(t, (1, 0, 2)) for t in (query, key, value))
        n, lq, e = query.shape
        s_len = key.shape[1]
        if e != self.embed_dim:
            raise ValueError(f"MultiheadAttention: query has embedding size {e}, expected {self.embed_dim}")
        h, d = self.num_heads, self.head_dim
        w, b = self.in_proj_weight, self.in_proj_bias
        for t, want, name in ((key, self.kdim, "key"), (value, self.vdim, "value")):
            if t.shape[-1] != want:
                raise ValueError(f"MultiheadAttention: {name} has feature size {t.shape[-1]}, "
                                 f"expected {want} ({name[0]}dim)")
        if key.shape[:-1] != value.shape[:-1]:
            raise ValueError(f"MultiheadAttention: key and value must have the same batch and "
                             f"source length, got {key.shape} and {value.shape}")
        if w is None:   # kdim/vdim: separate projections
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
            proj = [F.linear(t, wi, None if b is None else b[i * e:(i + 1) * e])
                    for i, (t, wi) in enumerate(zip((query, key, value), ws))]
            q, k, v = (gp.permute_dims(gp.reshape(p, (n, p.shape[1], h, d)), (0, 2, 1, 3))
                       for p in proj)
        elif query is key and key is value:
            # self-attention: one GEMM against the packed weight (torch's path), split as views;
            # the split's backward is one stack, where slices of the weight each took a zeroed
            # gradient, a copy into it and an add
            p = gp.reshape(F.linear(query, w, b), (n, lq, 3, h, d))
            q, k, v = (gp.permute_dims(t, (0, 2, 1, 3)) for t in gp.unstack(p, axis=2))
        else:
            proj = [F.linear(t, w[i * e:(i + 1) * e], None if b is None else b[i * e:(i + 1) * e])
                    for i, t in enumerate((query, key, value))]
            q, k, v = (gp.permute_dims(gp.reshape(p, (n, p.shape[1], h, d)), (0, 2, 1, 3))
                       for p in proj)

        # add_bias_kv / add_zero_attn: extra key/value rows after the source, which every query
        # may attend (torch pads the masks with unmasked columns for them)
        extra = []
        if self.bias_k is not None:
            extra.append((self._heads(self.bias_k, n), self._heads(self.bias_v, n)))
        if self.add_zero_attn:
            z = gp.zeros((n, h, 1, d), dtype=k.dtype, device=k.device)
            extra.append((z, z))
        if extra:
            k = gp.concat([k, *(ek for ek, _ in extra)], axis=2)
            v = gp.concat([v, *(ev for _, ev in extra)], axis=2)

        bias = None
        # a causal mask alone goes to the attention kernels as a flag (no (L, S) bias is made)
        causal = (is_causal and attn_mask is None and key_padding_mask is None and not need_weights
                  and not extra)
        if key_padding_mask is not None and tuple(key_padding_mask.shape) != (n, s_len):
            raise ValueError(f"MultiheadAttention: key_padding_mask must have shape "
                             f"{(n, s_len)} (batch, source length), got {key_padding_mask.shape}")
        if attn_mask is not None and tuple(attn_mask.shape) not in ((lq, s_len), (n * h, lq, s_len)):
            raise ValueError(f"MultiheadAttention: attn_mask must have shape {(lq, s_len)} or "
                             f"{(n * h, lq, s_len)}, got {attn_mask.shape}")
        if attn_mask is not None:
            am = _additive(attn_mask, q.dtype, invert=True)
            bias = gp.reshape(am, (n, h, lq, s_len)) if am.ndim == 3 else am
        elif is_causal and not causal:
            bias = F._causal(lq, s_len, q.dtype, q.device)
        if key_padding_mask is not None:
            kp = _additive(key_padding_mask, q.dtype, True, "key_padding_mask")
            kp = gp.reshape(kp, (n, 1, 1, s_len))
            bias = kp if bias is None else bias + kp
        if extra and bias is not None:
            pad = gp.zeros(bias.shape[:-1] + (len(extra),), dtype=bias.dtype, device=bias.device)
            bias = gp.concat([bias, pad], axis=-1)

        p_drop = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            sc = gp.matmul(q, gp.matrix_transpose(k)) * (1.0 / math.sqrt(d))
            a = F.softmax(sc if bias is None else sc + bias, dim=-1)
            if p_drop > 0:
                a = F.dropout(a, p_drop, True)
            out = gp.matmul(a, v)
            weights = gp.mean(a, axis=1) if average_attn_weights else a
        elif p_drop > 0:
            out = F.scaled_dot_product_attention(q, k, v, bias, p_drop, is_causal=causal)
        else:
            out = F.flash_attention2(q, k, v, bias, is_causal=causal)
        out = gp.reshape(gp.permute_dims(out, (0, 2, 1, 3)), (n, lq, e))
        out = self.out_proj(out)
        if not self.batch_first:
            out = gp.permute_dims(out, (1, 0, 2))
        if unbatched:
            out = gp.squeeze(out, axis=0 if self.batch_first else 1)
            weights = None if weights is None else gp.squeeze(weights, axis=0)
        return out, weights

    def _heads(self, row, n: int):
        """A (1, 1, E) bias_k/bias_v row as (n, heads, 1, head_dim), as the projected keys."""
        r = gp.permute_dims(gp.reshape(row, (1, 1, self.num_heads, self.head_dim)), (0, 2, 1, 3))
        return gp.broadcast_to(r, (n, self.num_heads, 1, self.head_dim))

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"


class TransformerEncoderLayer(Module):
    """Self-attention + feed-forward block with residuals and LayerNorm (post- or pre-norm)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        activation = _activation(activation, "TransformerEncoderLayer")
        # torch's record of a relu/gelu activation (its fused inference path keys on it)
        self.activation_relu_or_gelu = _relu_or_gelu(activation)
        self.activation = activation

    def _sa(self, x, mask, kpm, is_causal):
        return self.dropout1(self.self_attn(x, x, x, key_padding_mask=kpm, attn_mask=mask,
                                            need_weights=False, is_causal=is_causal)[0])

    def _ff(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        x = src
        if self.norm_first:
            x = x + self._sa(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff(self.norm2(x))
        x = self.norm1(x + self._sa(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff(x))


class Attention(MultiheadAttention):
    """The seed's ``nn.Attention(embed_dim, num_heads)``: multi-head self-attention that returns
    the attended output only. Inputs (seq, embed) or (batch, seq, embed) (batch first);
    ``attention(x)`` attends x to itself, ``attention(q, k, v)`` as MultiheadAttention."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 batch_first: bool = True, device=None, dtype=None) -> None:
        super().__init__(embed_dim, num_heads, dropout=dropout, bias=bias,
                         batch_first=batch_first, device=device, dtype=dtype)

    def forward(self, query, key=None, value=None, key_padding_mask=None, attn_mask=None,
                is_causal: bool = False):
        """The attended output (same shape as ``query``). numpy arrays and lists are taken
        too (the seed's modules took numpy), placed on the device of the weights."""
        dev = self.out_proj.weight.device
        query, key, value = (t if t is None or isinstance(t, gp.Array) else
                             gp.asarray(t, device=dev) for t in (query, key, value))
        key = query if key is None else key
        value = key if value is None else value
        return super().forward(query, key, value, key_padding_mask=key_padding_mask,
                               need_weights=False, attn_mask=attn_mask, is_causal=is_causal)[0]
