"""What the HuggingFace bridge's models share (grilly/utils/huggingface.py, hf_gpt2.py):
transformers' activation names, ModelOutput, input checks, and attention with padding masks."""
from __future__ import annotations

import math
from dataclasses import fields

from ..array import api as gp
from ..array.array import Array
from ..nn import functional as F

__all__ = ["ModelOutput", "activation", "as_ids", "attention", "config_fields", "heads",
           "keep_mask", "merge_heads"]


def _gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


# transformers' ACT2FN names -> grilly functions (gelu_new, gelu_fast, gelu_accurate and
# gelu_pytorch_tanh are all the tanh approximation, written differently)
_ACTS = {
    "gelu": F.gelu, "gelu_python": F.gelu,
    "gelu_new": _gelu_tanh, "gelu_fast": _gelu_tanh, "gelu_accurate": _gelu_tanh,
    "gelu_pytorch_tanh": _gelu_tanh, "gelu_python_tanh": _gelu_tanh,
    "relu": F.relu, "relu6": F.relu6, "silu": F.silu, "swish": F.silu, "mish": F.mish,
    "tanh": gp.tanh, "sigmoid": F.sigmoid, "leaky_relu": F.leaky_relu,
    "quick_gelu": lambda x: x * F.sigmoid(1.702 * x),
    "relu2": lambda x: gp.square(F.relu(x)),
    "linear": lambda x: x,
}


def config_fields(cls, cfg) -> dict:
    """The fields of dataclass ``cls`` that ``cfg`` (a transformers config object or a dict,
    config.json's) sets, by transformers' names."""
    get = cfg.get if isinstance(cfg, dict) else (lambda k, d=None: getattr(cfg, k, d))
    return {f: get(f) for f in cls.__dataclass_fields__ if get(f) is not None}


def activation(name: str, who: str):
    """transformers' activation ``name`` (ACT2FN's key) as a grilly function."""
    if name not in _ACTS:
        raise NotImplementedError(f"{who}: activation {name!r} is not supported (supported: "
                                  f"{', '.join(sorted(_ACTS))})")
    return _ACTS[name]


class ModelOutput:
    """transformers' ModelOutput: fields by name, ``out[0]`` / ``out["logits"]`` over the
    fields that are set, ``to_tuple()``."""

    def to_tuple(self) -> tuple:
        """The fields that are not None, in order."""
        return tuple(getattr(self, f.name) for f in fields(self)
                     if getattr(self, f.name) is not None)

    def keys(self) -> list:
        """The names of the fields that are not None."""
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]

    def __getitem__(self, key):
        if isinstance(key, str):
            if key not in self.keys():
                raise KeyError(key)
            return getattr(self, key)
        return self.to_tuple()[key]

    def __iter__(self):
        return iter(self.keys())


def as_ids(x, dev, who: str, name: str, shape=None) -> Array:
    """Token ids, masks or positions (an Array, numpy array, torch tensor or list) on ``dev``,
    (batch, seq) or broadcastable to ``shape``."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):      # a torch tensor
        x = x.detach().cpu().numpy()
    a = gp.asarray(x, device=dev)
    if shape is None:
        if a.ndim != 2:
            raise ValueError(f"{who}: {name} must be (batch, seq), got shape {tuple(a.shape)}")
        return a
    try:
        gp.broadcast_shapes(tuple(a.shape), shape)
    except ValueError:
        raise ValueError(f"{who}: {name} of shape {tuple(a.shape)} does not match input_ids "
                         f"{shape}") from None
    return a


def keep_mask(attention_mask, shape, causal: bool, dev, who: str, past: int = 0) -> Array | None:
    """Which keys each query sees, bool (batch, 1, seq|1, past + seq): the padding mask (1 keep,
    0 pad; over the ``past`` cached positions and the new ones) and, for a decoder, the causal
    one (query i is position past + i); None when that is every key (no mask, not causal)."""
    keep = None
    n_keys = past + shape[1]
    if attention_mask is not None:
        m = as_ids(attention_mask, dev, who, "attention_mask")
        if tuple(m.shape) != (shape[0], n_keys):
            raise ValueError(f"{who}: attention_mask of shape {tuple(m.shape)} does not match "
                             f"input_ids {shape}" + (f" after {past} cached positions (expected "
                                                     f"{(shape[0], n_keys)})" if past else ""))
        keep = gp.reshape(m != 0, (shape[0], 1, 1, n_keys))
    if causal:
        rows = gp.reshape(gp.arange(past, n_keys, device=dev), (-1, 1))
        tri = gp.reshape(gp.arange(n_keys, device=dev), (1, -1)) <= rows
        keep = tri if keep is None else gp.logical_and(keep, tri)
    return keep


def attention(q: Array, k: Array, v: Array, keep: Array | None, scale: float, causal: bool,
              with_probs: bool = False):
    """softmax(q k^T scale) v over the keys ``keep`` lets each query see (``causal`` with no
    ``keep``: the causal mask); (output, probabilities or None). A query that sees no key (a left
    pad of a decoder) gets 0, as torch's scaled_dot_product_attention that transformers uses by
    default (grilly's does too; the probabilities' softmax is given a stand-in row)."""
    if not with_probs:   # (a row that sees no key gives 0 there, as torch's)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=scale,
                                             is_causal=causal and keep is None)
        return out, None
    empty = None
    if keep is not None:
        empty = gp.logical_not(gp.any(keep, axis=-1, keepdims=True))
        keep = gp.logical_or(keep, empty)      # any finite row; zeroed below
    elif causal:
        r = gp.arange(q.shape[-2], device=q.device)
        keep = gp.reshape(r, (1, -1)) <= gp.reshape(r, (-1, 1))
    s = gp.matmul(q, gp.matrix_transpose(k)) * scale
    if keep is not None:
        s = gp.where(keep, s, gp.asarray(-math.inf, dtype=s.dtype, device=s.device))
    probs = F.softmax(s, dim=-1)
    if empty is not None:
        probs = gp.where(empty, gp.zeros_like(probs), probs)
    return gp.matmul(probs, v), probs


def heads(x: Array, n_heads: int) -> Array:
    """(batch, seq, n_heads * d) -> (batch, n_heads, seq, d)."""
    b, n, e = x.shape
    return gp.permute_dims(gp.reshape(x, (b, n, n_heads, e // n_heads)), (0, 2, 1, 3))


def merge_heads(x: Array) -> Array:
    """(batch, n_heads, seq, d) -> (batch, seq, n_heads * d)."""
    b, h, n, d = x.shape
    return gp.reshape(gp.permute_dims(x, (0, 2, 1, 3)), (b, n, h * d))
