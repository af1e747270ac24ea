"""TransformerEncoder, TransformerDecoderLayer, TransformerDecoder and Transformer (torch's
signatures, state_dict keys and results; the encoder layer is in attention.py)."""
from __future__ import annotations

import copy

from ..array import api as gp
from ..array.defaults import float_or_default
from ..autograd.mode import is_grad_enabled

from . import functional as F
from . import init
from .attention import MultiheadAttention, TransformerEncoderLayer, _activation
from .layers import Dropout, LayerNorm, Linear
from .module import Module, ModuleList

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder"]


def _clones(layer: Module, n: int, who: str) -> ModuleList:
    """``n`` independent deep copies of ``layer`` (torch's layers.0, layers.1, ... keys)."""
    if not isinstance(layer, Module):
        raise TypeError(f"{who}: expected a layer Module, got {type(layer).__name__}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{who}: num_layers must be a positive int, got {n!r}")
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer``, then ``norm`` (if given)."""

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        # torch packs padded batches as nested tensors when the layer allows its fused path;
        # grilly keeps the padded batch but gives the same result (see _padded_rows)
        self.use_nested_tensor = enable_nested_tensor and _fusable(encoder_layer)
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal: bool | None = None):
        """The encoded sequence, shaped as ``src``."""
        # is_causal=None: torch compares the mask with a causal one only to choose a kernel;
        # the mask itself gives the same values, without reading it back to the host
        pad = self._padded_rows(src, mask, src_key_padding_mask)
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        if pad is not None:
            out = gp.where(pad, gp.zeros((), dtype=out.dtype, device=out.device), out)
        return out if self.norm is None else self.norm(out)

    def _padded_rows(self, src, mask, kpm):
        """Where torch's inference path (eval, no gradient wanted, batched, a key padding mask
        alone) runs the layers on a nested tensor and pads it back with zeros: those positions
        as a (N, S, 1) bool array, else None."""
        first = self.layers[0]
        if (not self.use_nested_tensor or first.training or src.ndim != 3 or kpm is None
                or mask is not None):
            return None
        sa = first.self_attn
        args = (src, sa.in_proj_weight, sa.in_proj_bias, sa.out_proj.weight, sa.out_proj.bias,
                first.norm1.weight, first.norm1.bias, first.norm2.weight, first.norm2.bias,
                first.linear1.weight, first.linear1.bias, first.linear2.weight, first.linear2.bias)
        if is_grad_enabled() and any(a is not None and a.requires_grad for a in args):
            return None
        pad = kpm if kpm.dtype == gp.bool else kpm != 0
        pad = gp.expand_dims(pad, axis=-1)
        if self.mask_check:
            # torch takes that path only for left-aligned padding (each row's real tokens
            # first); decided on the device, as an array, so nothing is read back
            gap = gp.logical_and(pad[:, :-1], gp.logical_not(pad[:, 1:]))
            pad = gp.logical_and(pad, gp.logical_not(gp.any(gap)))
        return pad


def _fusable(layer) -> bool:
    """torch's conditions for a TransformerEncoder to use nested tensors (its __init__)."""
    if not isinstance(layer, TransformerEncoderLayer):
        return False
    sa = layer.self_attn
    return (not layer.norm_first and sa.batch_first and sa._qkv_same_embed_dim
            and sa.in_proj_bias is not None and bool(layer.activation_relu_or_gelu)
            and layer.norm1.eps == layer.norm2.eps and sa.num_heads % 2 == 0)


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's memory and a feed-forward block, each with
    a residual and LayerNorm (after, or before with ``norm_first``)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerDecoderLayer")

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False):
        """The decoded target, shaped as ``tgt``."""
        x = tgt
        if self.norm_first:
            x = x + self._sa(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                              memory_is_causal)
            return x + self._ff(self.norm3(x))
        x = self.norm1(x + self._sa(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha(x, memory, memory_mask, memory_key_padding_mask,
                                     memory_is_causal))
        return self.norm3(x + self._ff(x))

    def _sa(self, x, mask, kpm, is_causal):
        return self.dropout1(self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=kpm,
                                            is_causal=bool(is_causal), need_weights=False)[0])

    def _mha(self, x, mem, mask, kpm, is_causal):
        return self.dropout2(self.multihead_attn(x, mem, mem, attn_mask=mask,
                                                 key_padding_mask=kpm,
                                                 is_causal=bool(is_causal),
                                                 need_weights=False)[0])

    def _ff(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of ``decoder_layer``, then ``norm`` (if given)."""

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False):
        """The decoded target, shaped as ``tgt``."""
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """torch.nn.Transformer: an encoder and a decoder stack, each ending in a LayerNorm."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **kw), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **kw), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for p in self.parameters():   # torch's _reset_parameters (custom stacks included)
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False):
        """The decoder's output for ``tgt`` attending the encoded ``src``, shaped as ``tgt``."""
        b = 0 if self.batch_first else 1
        if src.ndim == 3 and (tgt.ndim != 3 or src.shape[b] != tgt.shape[b]):
            raise ValueError(f"Transformer: the batch sizes of src {src.shape} and tgt "
                             f"{tgt.shape} must be equal (batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"Transformer: src and tgt must have d_model={self.d_model} "
                             f"features, got {src.shape[-1]} and {tgt.shape[-1]}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The (sz, sz) causal mask: 0.0 on and below the diagonal, -inf above it."""
        return F._causal(sz, sz, float_or_default(dtype), device)
