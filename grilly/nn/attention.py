"""MultiheadAttention and TransformerEncoderLayer (PyTorch parameter names and layouts)."""
from __future__ import annotations

from ..array import api as gp

from . import functional as F
from . import init
from .layers import GELU, Dropout, LayerNorm, Linear, ReLU, _empty
from .module import Module

__all__ = ["Attention", "MultiheadAttention", "TransformerEncoderLayer"]


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
        separate = not self._qkv_same_embed_dim
        return F._multi_head_attention(
            "MultiheadAttention", query, key, value, self.embed_dim, self.num_heads,
            self.in_proj_weight, self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn,
            self.dropout, self.out_proj.weight, self.out_proj.bias, self.training,
            key_padding_mask, need_weights, attn_mask, separate,
            self.q_proj_weight if separate else None, self.k_proj_weight if separate else None,
            self.v_proj_weight if separate else None, None, None, average_attn_weights,
            is_causal, self.batch_first)

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
