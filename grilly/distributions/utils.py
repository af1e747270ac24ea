"""Helpers shared by the distributions: parameters as Arrays, probs <-> logits, sums over
event axes, and draws from grilly.random's default generator."""
from __future__ import annotations

import numpy as np

from .. import random as _random
from ..array import api as gp
from ..array.defaults import get_default_dtype
from ..nn import functional as F

__all__ = ["as_param", "broadcast_all", "clamp_probs", "logits_to_probs", "normal_noise",
           "probs_to_logits", "promote_all", "sum_rightmost", "uniform_noise"]


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def as_param(value, like=None):
    """``value`` as a floating Array: Arrays keep their dtype (integer ones take the default
    dtype); Python numbers and lists take ``like``'s dtype and device (the default dtype,
    gp.get_default_dtype(), without one, as torch's); NumPy arrays keep a floating dtype."""
    if isinstance(value, gp.Array):
        return (value if gp.isdtype(value.dtype, "real floating")
                else gp.astype(value, get_default_dtype()))
    dtype = like.dtype if like is not None else None
    device = like.device if like is not None else None
    if dtype is None:
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            dtype = gp.float64 if value.dtype == np.float64 else gp.float32
        else:
            dtype = get_default_dtype()
    return gp.asarray(np.asarray(value, dtype=np.float64), dtype=dtype, device=device)


def promote_all(*values) -> list:
    """The values as floating Arrays of one dtype and device (the Arrays' own, promoted; else
    the default dtype or the NumPy arrays' floating dtype)."""
    arrays = [v for v in values if isinstance(v, gp.Array)]
    like = None
    if arrays:
        floats = [a for a in arrays if gp.isdtype(a.dtype, "real floating")]
        dtype = gp.result_type(*floats) if floats else get_default_dtype()
        like = gp.zeros((), dtype=dtype, device=arrays[0].device)
    out = [as_param(v, like) for v in values]
    dtype = gp.result_type(*[o.dtype for o in out])
    return [o if o.dtype == dtype else gp.astype(o, dtype) for o in out]


def broadcast_all(*values):
    """The values as floating Arrays of one dtype and device, broadcast to one shape."""
    out = promote_all(*values)
    if len(out) == 1:
        return out[0]
    return list(gp.broadcast_arrays(*out))


def sum_rightmost(x, n: int):
    """``x`` summed over its last ``n`` axes."""
    return gp.sum(x, axis=tuple(range(-n, 0))) if n > 0 else x


def clamp_probs(probs):
    """``probs`` clamped to [eps, 1 - eps] of its dtype."""
    eps = float(gp.finfo(probs.dtype).eps)
    return gp.clip(probs, eps, 1.0 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Logits of probabilities (log-odds for a binary variable)."""
    p = clamp_probs(probs)
    return gp.log(p) - gp.log1p(-p) if is_binary else gp.log(p)


def logits_to_probs(logits, is_binary: bool = False):
    """Probabilities of logits (sigmoid for a binary variable, softmax over the last axis)."""
    return F.sigmoid(logits) if is_binary else F.softmax(logits, dim=-1)


def noise(draw, shape, like):
    """``draw(shape, dtype=, device=)`` (a grilly.random law) with ``like``'s dtype and device
    (drawn in float32 or float64, the dtypes grilly.random draws)."""
    d = gp.float64 if like.dtype == gp.float64 else gp.float32
    z = draw(tuple(shape), dtype=d, device=like.device)
    return z if z.dtype == like.dtype else gp.astype(z, like.dtype)


def uniform_noise(shape, like):
    """Uniform [0, 1) draws of ``shape`` with ``like``'s dtype and device."""
    return noise(lambda s, **kw: _random.uniform(0.0, 1.0, s, **kw), shape, like)


def normal_noise(shape, like):
    """Standard normal draws of ``shape`` with ``like``'s dtype and device."""
    return noise(lambda s, **kw: _random.normal(0.0, 1.0, s, **kw), shape, like)
