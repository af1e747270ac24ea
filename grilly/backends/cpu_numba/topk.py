"""CPU kernel: topk. Each row keeps a heap of its k best (value, index) pairs, so a row costs
O(n log k) and one pass over memory instead of a full sort; rows run in parallel. The order is
the sort kernels' (NaN the largest value, ties by index), so the result equals the composition
from sort/argsort exactly."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import jit
from .pool import pool
from .sorting import _rows, _sortable

_o = dict(cache=True, nogil=True)


@njit(**_o)
def _before(a, ia, b, ib, largest):
    """(a, ia) comes before (b, ib) in topk's output order."""
    an, bn = a != a, b != b
    if an or bn:
        if an and bn:
            return ia < ib
        return an if largest else bn
    if a != b:
        return a > b if largest else a < b
    return ia < ib


@njit(**_o)
def _sift(hv, hi, n, i, largest):
    """Restore the heap below slot i: the root holds the pair that comes last."""
    while True:
        w = i
        c1, c2 = 2 * i + 1, 2 * i + 2
        if c1 < n and _before(hv[w], hi[w], hv[c1], hi[c1], largest):
            w = c1
        if c2 < n and _before(hv[w], hi[w], hv[c2], hi[c2], largest):
            w = c2
        if w == i:
            return
        hv[i], hv[w] = hv[w], hv[i]
        hi[i], hi[w] = hi[w], hi[i]
        i = w


@njit(**_o)
def _row(x, hv, hi, largest):
    k = hv.shape[0]
    if k == 0:
        return
    for j in range(k):
        hv[j] = x[j]
        hi[j] = j
    for j in range(k // 2 - 1, -1, -1):
        _sift(hv, hi, k, j, largest)
    rv = hv[0]
    rnan = rv != rv
    for j in range(k, x.shape[0]):
        v = x[j]
        # j is larger than every index in the heap, so a tie with the root never enters
        if largest:
            better = v > rv or (v != v and not rnan)
        else:
            better = v < rv or (rnan and v == v)
        if better:
            hv[0] = v
            hi[0] = j
            _sift(hv, hi, k, 0, largest)
            rv = hv[0]
            rnan = rv != rv
    for end in range(k - 1, 0, -1):   # heap sort: the last pair goes to the end each time
        hv[0], hv[end] = hv[end], hv[0]
        hi[0], hi[end] = hi[end], hi[0]
        _sift(hv, hi, end, 0, largest)


@njit(parallel=True, **_o)
def _p_topk(x, vals, idx, largest):
    for r in prange(x.shape[0]):
        _row(x[r], vals[r], idx[r], largest)


@njit(**_o)
def _s_topk(x, vals, idx, largest):
    for r in range(x.shape[0]):
        _row(x[r], vals[r], idx[r], largest)


def topk(buf: np.ndarray, k: int, axis: int, largest: bool, sorted: bool) -> tuple:
    """(values, int64 indices) of the k best elements along ``axis``, best first."""
    x = _rows(_sortable(buf), axis)
    vals = np.empty((x.shape[0], k), x.dtype)
    idx = np.empty((x.shape[0], k), np.int64)
    if vals.size:
        par = x.size >= jit.PARALLEL_MIN and x.shape[0] > 1
        (_p_topk if par else _s_topk)(x, vals, idx, bool(largest))
    shape = buf.shape[:axis] + buf.shape[axis + 1:] + (k,)
    out_v = pool.empty(buf.shape[:axis] + (k,) + buf.shape[axis + 1:], buf.dtype)
    out_i = pool.empty(out_v.shape, np.dtype(np.int64))
    np.copyto(out_v, np.moveaxis(vals.reshape(shape), -1, axis), casting="unsafe")
    np.copyto(out_i, np.moveaxis(idx.reshape(shape), -1, axis))
    return out_v, out_i


KERNELS: dict = {"topk": topk}
