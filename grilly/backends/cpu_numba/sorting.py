"""CPU kernels: sort, argsort, searchsorted, unique, isin. Conventions:
docs/kernels/reductions.md. Floats order NaN after everything (as numpy), and descending order
is the exact reverse of that, with ties kept in their original order."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import jit
from .pool import pool

_o = dict(cache=True, nogil=True)


@njit(**_o)
def _argsort_row(row, out, desc):
    n = row.shape[0]
    if desc:
        # stable ascending sort of the reversed row, reversed again: ties keep their order
        idx = np.argsort(row[::-1], kind="mergesort")
        for i in range(n):
            out[i] = n - 1 - idx[n - 1 - i]
    else:
        out[:] = np.argsort(row, kind="mergesort")


@njit(**_o)
def _sort_row(row, out, desc):
    s = np.sort(row)
    n = row.shape[0]
    if desc:
        for i in range(n):
            out[i] = s[n - 1 - i]
    else:
        out[:] = s


@njit(parallel=True, **_o)
def p_argsort(x, out, desc):
    for r in prange(x.shape[0]):
        _argsort_row(x[r], out[r], desc)


@njit(parallel=True, **_o)
def p_sort(x, out, desc):
    for r in prange(x.shape[0]):
        _sort_row(x[r], out[r], desc)


def s_argsort(x: np.ndarray, out: np.ndarray, desc: bool) -> None:
    """Stable argsort of each row, on one thread."""
    # NumPy's C sort, not a Numba one: Numba compiles np.sort/argsort for 15-45 s per dtype,
    # which a small array's first call cannot afford; numpy also orders NaN last, stably.
    if desc:
        # the stable ascending order of the reversed row, reversed: ties keep their order
        out[:] = x.shape[1] - 1 - np.argsort(x[:, ::-1], axis=1, kind="stable")[:, ::-1]
    else:
        out[:] = np.argsort(x, axis=1, kind="stable")


def s_sort(x: np.ndarray, out: np.ndarray, desc: bool) -> None:
    """Sort each row, on one thread (NumPy's C sort: see s_argsort)."""
    s = np.sort(x, axis=1)
    out[:] = s[:, ::-1] if desc else s


def _sortable(buf: np.ndarray) -> np.ndarray:
    if buf.dtype.kind == "b":
        return buf.view(np.uint8)
    if buf.dtype == np.float16:
        return buf.astype(np.float32)
    return buf


def _rows(buf: np.ndarray, axis: int) -> np.ndarray:
    """``buf`` with ``axis`` moved last, as a C-contiguous 2-D array of rows."""
    m = np.moveaxis(buf, axis, -1)
    return np.ascontiguousarray(m).reshape(int(np.prod(m.shape[:-1])), m.shape[-1])


def _sort_kernel(values: bool):
    def k(buf: np.ndarray, axis: int, descending: bool, stable: bool) -> np.ndarray:
        x = _rows(_sortable(buf), axis) if buf.ndim else _sortable(buf).reshape(1, 1)
        res = np.empty(x.shape, x.dtype if values else np.int64)
        if x.size:
            par = x.size >= jit.PARALLEL_MIN and x.shape[0] > 1
            if values:
                (p_sort if par else s_sort)(x, res, bool(descending))
            else:
                (p_argsort if par else s_argsort)(x, res, bool(descending))
        moved = tuple(s for i, s in enumerate(buf.shape) if i != axis) + buf.shape[axis:axis + 1]
        res = np.moveaxis(res.reshape(moved), -1, axis) if buf.ndim else res.reshape(())
        out = pool.empty(buf.shape, buf.dtype if values else np.dtype(np.int64))
        np.copyto(out, res, casting="unsafe")
        return out
    k.__name__ = "sort" if values else "argsort"
    return k


@njit(**_o)
def _lt(a, b):
    """a before b in sort order: NaN after every number."""
    return a < b or (b != b and a == a)


@njit(**_o)
def _search(a, v, out, right):
    n = a.shape[0]
    for j in range(v.shape[0]):
        x = v[j]
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) >> 1
            go_right = not _lt(x, a[mid]) if right else _lt(a[mid], x)
            if go_right:
                lo = mid + 1
            else:
                hi = mid
        out[j] = lo


def searchsorted(x1: np.ndarray, x2: np.ndarray, side: str, sorter) -> np.ndarray:
    """Insertion indices of ``x2`` into the sorted 1-D ``x1`` (through ``sorter`` if given)."""
    a = _sortable(x1) if sorter is None else _sortable(x1)[sorter]
    v = np.ascontiguousarray(_sortable(x2)).reshape(-1)
    out = pool.empty(x2.shape, np.dtype(np.int64))
    if v.size:
        _search(np.ascontiguousarray(a), v, out.reshape(-1), side == "right")
    return out


@njit(**_o)
def _unique(flat, order):
    n = flat.shape[0]
    s = flat[order]
    first = np.empty(n, np.bool_)
    for i in range(n):
        # NaN != NaN: every NaN starts its own group, as the standard asks
        first[i] = i == 0 or s[i] != s[i - 1]
    starts = np.nonzero(first)[0]
    m = starts.shape[0]
    values = s[starts]
    index = order[starts]
    counts = np.empty(m, np.int64)
    inverse = np.empty(n, np.int64)
    for g in range(m):
        end = starts[g + 1] if g + 1 < m else n
        counts[g] = end - starts[g]
        for i in range(starts[g], end):
            inverse[order[i]] = g
    return values, index, inverse, counts


def _order_complex(flat: np.ndarray) -> np.ndarray:
    """Stable order by real part, then imaginary part (NaN last in each)."""
    o1 = np.argsort(flat.imag, kind="stable")
    o2 = np.argsort(flat.real[o1], kind="stable")
    return o1[o2]


def _order(flat: np.ndarray) -> np.ndarray:
    """Stable sorting order of a real 1-D buffer (NumPy's C sort: see s_argsort)."""
    return np.argsort(flat, kind="stable")


def unique(buf: np.ndarray) -> tuple:
    """(values, first indices, inverse indices (flat), counts) of the flattened buffer."""
    flat = np.ascontiguousarray(buf).reshape(-1)
    key = _sortable(flat)
    order = _order_complex(key) if key.dtype.kind == "c" else _order(key)
    values, index, inverse, counts = _unique(key, order)
    return values.astype(buf.dtype), index, inverse, counts


@njit(**_o)
def _isin_sorted(v, s, out, invert):
    n = s.shape[0]
    tmp = np.empty(1, np.int64)
    for j in range(v.shape[0]):
        _search(s, v[j:j + 1], tmp, False)
        i = tmp[0]
        out[j] = (i < n and s[i] == v[j]) != invert


@njit(**_o)
def _isin_scan(v, s, out, invert):
    for j in range(v.shape[0]):
        hit = False
        for i in range(s.shape[0]):
            if s[i] == v[j]:
                hit = True
                break
        out[j] = hit != invert


def isin(x1: np.ndarray, x2: np.ndarray, invert: bool) -> np.ndarray:
    """Whether each element of ``x1`` occurs in ``x2`` (inputs of one dtype)."""
    v = np.ascontiguousarray(_sortable(x1)).reshape(-1)
    s = np.ascontiguousarray(_sortable(x2)).reshape(-1)
    out = pool.empty(x1.shape, np.dtype(np.bool_))
    if v.size:
        if s.dtype.kind == "c":
            _isin_scan(v, s, out.reshape(-1), bool(invert))
        else:
            _isin_sorted(v, np.sort(s), out.reshape(-1), bool(invert))
    return out


KERNELS: dict = {
    "sort": _sort_kernel(True), "argsort": _sort_kernel(False), "searchsorted": searchsorted,
    "unique": unique, "isin": isin,
}
