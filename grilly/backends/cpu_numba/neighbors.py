"""CPU kernel: matmul_topk, the k best of each row of x @ mat.T + add without the (n, m) product.

Each parallel task takes a block of x's rows and, block by block of mat's rows, makes their
product with single-threaded BLAS into a scratch block that stays in its core's cache, then
keeps each row's best k in a sorted list. A row's k-th best score is a threshold that almost
every later score fails in one vectorized comparison, so the search runs at BLAS speed. (BLAS
threads inside the tasks would fight them for the cores: while the kernel runs, BLAS is held
to one thread, cpu_numba/blas.py.) The order is topk's (NaN the largest value, ties by the smaller
index), so the result equals the composition from matmul, add and topk.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from . import jit
from .blas import one_blas_thread
from .pool import pool
from .topk import _before

_o = dict(cache=True, nogil=True)

# a task's scratch block (rows of x times rows of mat): 1 MiB of float32 scores stays in its
# core's cache between the product and the selection, and BLAS runs near its peak on it
BLOCK_X = 256
BLOCK_M = 1024
_LANES = 256   # scores tested together before any is looked at one by one


@njit(**_o)
def _insert(vals, ids, cnt, v, j, largest):
    """Put (v, j) into the sorted list vals/ids of cnt entries (a full list drops its last);
    j is larger than every index held, so an equal score goes after the ones held."""
    k = vals.shape[0]
    if cnt < k:
        p = cnt
        cnt += 1
    else:
        p = k - 1
    while p > 0 and _before(v, j, vals[p - 1], ids[p - 1], largest):
        vals[p] = vals[p - 1]
        ids[p] = ids[p - 1]
        p -= 1
    vals[p] = v
    ids[p] = j
    return cnt


@njit(**_o)
def _row(s, add, off, vals, ids, cnt, largest):
    """Merge one row of scores s + add (columns off, off + 1, ...) into the row's best list."""
    k, n = vals.shape[0], s.shape[0]
    thr = vals[k - 1] if cnt == k else np.nan   # NaN: every score takes the exact path
    for c0 in range(0, n, _LANES):
        sc, ac = s[c0:c0 + _LANES], add[c0:c0 + _LANES]
        # a branch-free count that LLVM vectorizes (over slices: an index range does not):
        # scores no better than the k-th fail one comparison (a NaN passes it, and the exact
        # test below decides)
        hit = 0
        if largest:
            for c in range(sc.shape[0]):
                hit += not (sc[c] + ac[c] <= thr)
        else:
            for c in range(sc.shape[0]):
                hit += not (sc[c] + ac[c] >= thr)
        if hit == 0:
            continue
        for c in range(sc.shape[0]):
            v = sc[c] + ac[c]
            if cnt < k or _before(v, off + c0 + c, vals[k - 1], ids[k - 1], largest):
                cnt = _insert(vals, ids, cnt, v, off + c0 + c, largest)
        if cnt == k:
            thr = vals[k - 1]
    return cnt


@njit(**_o)
def _scan(x, mat, add, a0, a1, bm, vals, ids, cnts, scratch, largest):
    """Rows of x against mat[a0:a1], bm rows of mat at a time: one BLAS product into scratch
    (in this core's cache), then each row's best list updated from it."""
    n = x.shape[0]
    for a in range(a0, a1, bm):
        b = min(a + bm, a1)
        s = scratch[: n * (b - a)].reshape(n, b - a)   # C-contiguous, as BLAS writes it
        np.dot(x, mat[a:b].T, s)
        for r in range(n):
            cnts[r] = _row(s[r], add[a:b], a, vals[r], ids[r], cnts[r], largest)


@njit(parallel=True, **_o)
def _tasks(x, mat, add, bx, bm, parts, vals, ids, cnts, largest):
    """Blocks of bx rows of x times ``parts`` spans of mat's rows, one task each; a span's best
    lists go to vals[part], merged afterwards."""
    n, m = x.shape[0], mat.shape[0]
    blocks = (n + bx - 1) // bx
    per = (m + parts - 1) // parts
    for t in prange(blocks * parts):
        i, p = (t // parts) * bx, t % parts
        j = min(i + bx, n)
        scratch = np.empty(bx * bm, x.dtype)
        _scan(x[i:j], mat, add, p * per, min(p * per + per, m), bm, vals[p, i:j], ids[p, i:j],
              cnts[p, i:j], scratch, largest)


@njit(parallel=True, **_o)
def _merge(vals, ids, cnts, largest):
    """Each row's lists of the later spans merged into the first, in span order (a later
    span's indices are larger, so ties keep topk's order)."""
    k = vals.shape[2]
    for r in prange(vals.shape[1]):
        cnt = cnts[0, r]
        for p in range(1, vals.shape[0]):
            for q in range(cnts[p, r]):
                v, j = vals[p, r, q], ids[p, r, q]
                if cnt < k or _before(v, j, vals[0, r, k - 1], ids[0, r, k - 1], largest):
                    cnt = _insert(vals[0, r], ids[0, r], cnt, v, j, largest)


def _parts(blocks: int, m: int) -> int:
    """Spans to split mat's rows into: with fewer query blocks than threads, every thread
    still gets work."""
    return max(1, min(-(-numba.get_num_threads() // blocks), m // BLOCK_M))


def matmul_topk(x: np.ndarray, mat: np.ndarray, add, k: int, largest: bool) -> tuple:
    """(values, int64 indices) (n, k) of the k best of each row of x @ mat.T + add."""
    n, m = x.shape[0], mat.shape[0]
    x, mat = np.ascontiguousarray(x), np.ascontiguousarray(mat)
    add = np.zeros(m, x.dtype) if add is None else np.ascontiguousarray(add)
    parts = _parts(-(-n // BLOCK_X), m)
    vals = np.empty((parts, n, k), x.dtype)
    ids = np.empty((parts, n, k), np.int64)
    cnts = np.zeros((parts, n), np.int64)
    # a small search (under 2^22 multiply-adds, where products split over threads: blas.py)
    # runs the same tasks and merge in order on the calling thread: the same results
    work = n * m * x.shape[1] / 32
    with one_blas_thread():
        jit.sized(_tasks, work)(x, mat, add, BLOCK_X, BLOCK_M, parts, vals, ids, cnts,
                                bool(largest))
    if parts > 1:
        jit.sized(_merge, work)(vals, ids, cnts, bool(largest))
    out_v, out_i = pool.empty((n, k), x.dtype), pool.empty((n, k), np.dtype(np.int64))
    out_v[...], out_i[...] = vals[0], ids[0]
    return out_v, out_i


KERNELS: dict = {"matmul_topk": matmul_topk}
