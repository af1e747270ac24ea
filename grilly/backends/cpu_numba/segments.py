"""CPU kernels of segment reductions: ``segment_sum`` and ``segment_max`` of contiguous runs of
rows (grilly.array.segments). Each segment's run is walked row by row in index order, so a sum
is NumPy's sequential accumulation (np.add.at, np.bincount) in the values' dtype, whatever the
thread count; threads split the segments, never a run."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import jit
from .pool import pool

_o = dict(cache=True, nogil=True)


@njit(**_o)
def _bounds(starts, ends, s, k):
    """Segment s's run [a, b), clipped to the K rows (an inverted run is empty)."""
    a = min(max(starts[s], 0), k)
    return a, min(max(ends[s], a), k)


@njit(**_o)
def _sum_one(v, a, b, out):
    out[:] = 0
    for i in range(a, b):
        for d in range(out.shape[0]):
            out[d] += v[i, d]


@njit(**_o)
def _max_one(v, a, b, fill, out, arg):
    arg[:] = -1
    for i in range(a, b):
        for d in range(out.shape[0]):
            x = v[i, d]
            # the first row wins ties; a NaN beats every number and the first NaN stays
            if arg[d] < 0 or x > out[d] or (x != x and out[d] == out[d]):
                out[d] = x
                arg[d] = i
    if a == b:
        out[:] = fill


@njit(**_o)
def _sum_s(v, starts, ends, out):
    for s in range(out.shape[0]):
        a, b = _bounds(starts, ends, s, v.shape[0])
        _sum_one(v, a, b, out[s])


@njit(parallel=True, **_o)
def _sum_p(v, starts, ends, out):
    for s in prange(out.shape[0]):
        a, b = _bounds(starts, ends, s, v.shape[0])
        _sum_one(v, a, b, out[s])


@njit(**_o)
def _max_s(v, starts, ends, fill, out, arg):
    for s in range(out.shape[0]):
        a, b = _bounds(starts, ends, s, v.shape[0])
        _max_one(v, a, b, fill, out[s], arg[s])


@njit(parallel=True, **_o)
def _max_p(v, starts, ends, fill, out, arg):
    for s in prange(out.shape[0]):
        a, b = _bounds(starts, ends, s, v.shape[0])
        _max_one(v, a, b, fill, out[s], arg[s])


def _args(values, starts, ends) -> tuple:
    """Contiguous operands, and whether the work is big enough for threads."""
    v = np.ascontiguousarray(values)
    st = np.ascontiguousarray(starts, dtype=np.int64)
    en = np.ascontiguousarray(ends, dtype=np.int64)
    par = v.size + st.shape[0] * v.shape[1] >= jit.PARALLEL_MIN and st.shape[0] > 1
    return v, st, en, par


def segment_sum(values, starts, ends):
    """out[s] = values[starts[s]:ends[s]] summed row by row in index order (S, D)."""
    v, st, en, par = _args(values, starts, ends)
    out = pool.empty((st.shape[0], v.shape[1]), v.dtype)
    if out.size:
        (_sum_p if par else _sum_s)(v, st, en, out)
    return out


def segment_max(values, starts, ends, fill):
    """(maxima (S, D), int64 rows of the first maxima); an empty run gives fill and -1."""
    v, st, en, par = _args(values, starts, ends)
    out = pool.empty((st.shape[0], v.shape[1]), v.dtype)
    arg = pool.empty(out.shape, np.dtype(np.int64))
    if out.size:
        (_max_p if par else _max_s)(v, st, en, v.dtype.type(fill), out, arg)
    return out, arg


KERNELS: dict = {"segment_sum": segment_sum, "segment_max": segment_max}
