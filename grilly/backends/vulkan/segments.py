"""segment_sum and segment_max of the Vulkan backend (the contract's calls; grilly.array.segments):
shaders/reduce/segment.comp, one invocation per (segment, column) walking its run in index
order, so the sums equal the CPU kernel's bit for bit. starts and ends are packed into one int64
buffer (segment_max binds 4 buffers, what every device allows). float32 and float64."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .kernels import assign, copy, new_buffer, slice_view
from .reductions import dispatch

_DTYPES = ("float32", "float64")


def _prepare(op: str, values, starts, ends) -> tuple:
    """(contiguous values, the (2, S) int64 bounds buffer) after the size and dtype checks."""
    if values.dtype.name not in _DTYPES:
        raise NotImplementedError(f"{op}: dtype {values.dtype.name} is not supported on Vulkan "
                                  f"device {values.ctx.phys.name!r} (float32 and float64 are)")
    s, d = starts.shape[0], values.shape[1]
    if max(values.size, s * d, 2 * s) >= 2**31:
        raise ValueError(f"{op}: {max(values.size, s * d)} elements exceed the Vulkan backend's "
                         "2**31 limit")
    v = values if values.is_contiguous() else copy(values)
    bounds = new_buffer(values.ctx, (2, s), _dt.int64)
    assign(slice_view(bounds, (0,)), starts)
    assign(slice_view(bounds, (1,)), ends)
    return v, bounds


def _fill_words(fill: float, dtype_name: str) -> tuple:
    """The fill value's bits as push-constant words (two for float64)."""
    bits = np.array(fill, dtype=dtype_name).reshape(1).view(np.int32)
    return tuple(int(w) for w in bits)


def segment_sum(values, starts, ends):
    """out[s] = values[starts[s]:ends[s]] summed row by row in index order (S, D)."""
    v, bounds = _prepare("segment_sum", values, starts, ends)
    (k, d), s = v.shape, starts.shape[0]
    out = new_buffer(v.ctx, (s, d), v.dtype)
    if s * d:
        dispatch(v.ctx, f"segsum_{v.dtype.name}", (0, 1), [out, v, bounds], s * d, s * d,
                 (out.offset, 0, v.offset, bounds.offset), (k, d, s))
    return out


def segment_max(values, starts, ends, fill):
    """(maxima (S, D), int64 rows of the first maxima); an empty run gives fill and -1."""
    v, bounds = _prepare("segment_max", values, starts, ends)
    (k, d), s = v.shape, starts.shape[0]
    out = new_buffer(v.ctx, (s, d), v.dtype)
    arg = new_buffer(v.ctx, (s, d), _dt.int64)
    if s * d:
        with np.errstate(over="ignore"):   # a float64 fill beyond float32 rounds to inf
            words = _fill_words(fill, v.dtype.name)
        dispatch(v.ctx, f"segmax_{v.dtype.name}", (0, 1), [out, arg, v, bounds], s * d, s * d,
                 (out.offset, arg.offset, v.offset, bounds.offset), (k, d, s), (words,),
                 writes=2)
    return out, arg


KERNELS: dict = {"segment_sum": segment_sum, "segment_max": segment_max}
