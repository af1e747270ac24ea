"""CPU kernels of the softmax family: ``softmax`` and ``log_softmax``, ``(buf, axis) -> buf``
(docs/kernels/softmax.md). One fused pass per row: max, sum of exp(x - max), then the output.
``cross_entropy`` and its backward: the loss of (N, C) logits against class indices, and its
gradient, one pass per row each.

The input is seen as a C-contiguous (outer, n, inner) array. inner == 1 (the axis is last) runs
row by row; otherwise a block of up to COLS columns is carried along the axis at once, so every
inner loop walks contiguous memory. float16 computes in float32, as the other CPU kernels do.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from .pool import pool
from .reduce_ops import fmaxnum
from .reductions import par, use_threads
from .vmath import vexp

COLS = 512  # columns of an (outer, n, inner) view per task when the axis is not last

_o = dict(cache=True, nogil=True, error_model="numpy")
# reassociation lets LLVM vectorize the running sum; max and exp stay exact
_fm = dict(_o, fastmath={"reassoc", "contract"})


@njit(**_fm)
def _row(x, y, log):
    n = x.shape[0]
    m = x.dtype.type(-np.inf)
    for i in range(n):
        m = fmaxnum(m, x[i])
    s = x.dtype.type(0)
    if log:
        for i in range(n):
            s += vexp(x[i] - m)
        # a row of -inf has m = -inf: x - m is nan, as in torch
        ls = np.log(s)
        for i in range(n):
            y[i] = (x[i] - m) - ls
    else:
        for i in range(n):
            e = vexp(x[i] - m)
            y[i] = e
            s += e
        for i in range(n):
            y[i] = y[i] / s


@njit(**_o)
def s_rows(x, y, log):
    for r in range(x.shape[0]):
        _row(x[r], y[r], log)


@njit(parallel=True, **_o)
def p_rows(x, y, log):
    for r in prange(x.shape[0]):
        _row(x[r], y[r], log)


@njit(**_fm)
def _cols(x, y, t, log, cols):
    inner = x.shape[2]
    nj = (inner + cols - 1) // cols
    o = t // nj
    j0 = (t % nj) * cols
    w = min(j0 + cols, inner) - j0
    m = np.full(w, -np.inf, x.dtype)
    s = np.zeros(w, x.dtype)
    # each row's run of w columns as its own 1-D slice: the j loops then vectorize
    for r in range(x.shape[1]):
        xr = x[o, r, j0:j0 + w]
        for j in range(w):
            m[j] = fmaxnum(m[j], xr[j])
    for r in range(x.shape[1]):
        xr = x[o, r, j0:j0 + w]
        for j in range(w):
            s[j] += vexp(xr[j] - m[j])
    if log:
        for j in range(w):
            s[j] = np.log(s[j])
        for r in range(x.shape[1]):
            xr, yr = x[o, r, j0:j0 + w], y[o, r, j0:j0 + w]
            for j in range(w):
                yr[j] = (xr[j] - m[j]) - s[j]
    else:
        for r in range(x.shape[1]):
            xr, yr = x[o, r, j0:j0 + w], y[o, r, j0:j0 + w]
            for j in range(w):
                yr[j] = vexp(xr[j] - m[j]) / s[j]


@njit(**_o)
def s_cols(x, y, log, cols):
    nt = x.shape[0] * ((x.shape[2] + cols - 1) // cols)
    for t in range(nt):
        _cols(x, y, t, log, cols)


@njit(parallel=True, **_o)
def p_cols(x, y, log, cols):
    nt = x.shape[0] * ((x.shape[2] + cols - 1) // cols)
    for t in prange(nt):
        _cols(x, y, t, log, cols)


def _kernel(op: str, log: bool):
    def k(buf: np.ndarray, axis: int) -> np.ndarray:
        shape = buf.shape
        out = pool.empty(shape, buf.dtype)
        if out.size == 0:
            return out
        ctype = np.float32 if buf.dtype == np.float16 else buf.dtype
        x = np.ascontiguousarray(buf, dtype=ctype)
        outer, n, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
        y = out if ctype == buf.dtype else np.empty(shape, ctype)
        threads = use_threads(x.size)
        if inner == 1:
            x2, y2 = x.reshape(outer, n), y.reshape(outer, n)
            if threads and outer >= 2:
                par(p_rows, outer, 2 * x.nbytes, x2, y2, log)
            else:
                s_rows(x2, y2, log)
        else:
            x3, y3 = x.reshape(outer, n, inner), y.reshape(outer, n, inner)
            cols = COLS
            if threads and outer < 8:   # few tasks: narrower column blocks, so every thread works
                cols = min(COLS, max(16, -(-inner // (4 * numba.get_num_threads()) // 16 * 16)))
            tasks = outer * -(-inner // cols)
            if threads and tasks >= 2:
                par(p_cols, tasks, 2 * x.nbytes, x3, y3, log, cols)
            else:
                s_cols(x3, y3, log, cols)
        if y is not out:
            np.copyto(out, y, casting="unsafe")
        return out
    k.__name__ = op
    return k


# ---- cross entropy against class indices ------------------------------------------------------
@njit(**_fm)
def _lse_parts(x):
    """(max, log(sum(exp(x - max)))) of one row."""
    m = x.dtype.type(-np.inf)
    for i in range(x.shape[0]):
        m = fmaxnum(m, x[i])
    s = 0.0
    for i in range(x.shape[0]):
        s += vexp(x[i] - m)
    return m, np.log(s)


@njit(**_fm)
def _ce_row(x, k):
    """-log_softmax(x)[k], formed as torch forms it; 0 for a k outside the row."""
    if not 0 <= k < x.shape[0]:
        return 0.0
    m, ls = _lse_parts(x)
    return ls - (x[k] - m)


# serial and parallel variants apart: a parallel=True function turns even its array
# allocations into parallel regions, which wake the thread pool on every call
@njit(**_o)
def s_ce(x, t, rows):
    for r in range(x.shape[0]):
        rows[r] = _ce_row(x[r], t[r])


@njit(parallel=True, **_o)
def p_ce(x, t, rows):
    for r in prange(x.shape[0]):
        rows[r] = _ce_row(x[r], t[r])


@njit(**_o)
def _count_in(t, c):
    """How many targets are in [0, C) (a loop, not numpy's three mask passes)."""
    n = 0
    for r in range(t.shape[0]):
        n += 0 <= t[r] < c
    return n


@njit(**_fm)
def _ce_bwd_row(x, k, scale, g):
    c = x.shape[0]
    if not 0 <= k < c:
        for i in range(c):
            g[i] = 0
        return
    # softmax as exp(x - max) / sum: one exp per element (the log-sum-exp form, exp(x - max -
    # log(sum)), takes two), the exps kept in g between the passes
    m = x.dtype.type(-np.inf)
    for i in range(c):
        m = fmaxnum(m, x[i])
    s = 0.0
    for i in range(c):
        e = vexp(x[i] - m)
        g[i] = e
        s += e
    r = scale / s
    for i in range(c):
        g[i] = g[i] * r
    g[k] -= scale


@njit(**_o)
def s_ce_bwd(x, t, scale, gx):
    for r in range(x.shape[0]):
        _ce_bwd_row(x[r], t[r], scale, gx[r])


@njit(parallel=True, **_o)
def p_ce_bwd(x, t, scale, gx):
    for r in prange(x.shape[0]):
        _ce_bwd_row(x[r], t[r], scale, gx[r])


def _ce_args(x, t):
    ct = np.float32 if x.dtype == np.float16 else x.dtype
    return np.ascontiguousarray(x, dtype=ct), np.ascontiguousarray(t)


@njit(**_o)
def _any_bad(t, c, ignore_index):
    """Whether a target lies outside [0, C) and is not ignore_index (one pass, no temporaries:
    this runs on every training step's loss)."""
    for r in range(t.shape[0]):
        if not 0 <= t[r] < c and t[r] != ignore_index:
            return True
    return False


def _bad(t, c: int, ignore_index):
    """Rows whose target is outside [0, C) and not ignore_index (None: no row is bad)."""
    if ignore_index is None or not _any_bad(t, c, ignore_index):
        return None
    return ((t < 0) | (t >= c)) & (t != ignore_index)


def cross_entropy(x, target, mean, ignore_index=None):
    """0-d: the summed (``mean``: averaged) cross entropy of logits x (N, C) against the class
    indices target (N,); rows whose target is ignore_index take no part, other rows outside
    [0, C) make it NaN (with ignore_index None, every row outside takes no part)."""
    out = pool.empty((), x.dtype)
    xc, t = _ce_args(x, target)
    rows = np.empty(x.shape[0])   # float64: the rows are summed in double
    (p_ce if use_threads(x.size) and x.shape[0] >= 2 else s_ce)(xc, t, rows)
    total = rows.sum()
    if mean:
        count = _count_in(t, x.shape[1])
        total = total / count if count else np.nan
    if _bad(t, x.shape[1], ignore_index) is not None:
        total = np.nan
    out[()] = total
    return out


def cross_entropy_backward(x, target, g, mean, ignore_index=None):
    """The gradient (N, C) of ``cross_entropy`` for its 0-d output gradient g (NaN rows where
    the target is out of range and not ignore_index)."""
    gx = pool.empty(x.shape, x.dtype)
    if gx.size == 0:
        return gx
    xc, t = _ce_args(x, target)
    scale = float(np.asarray(g).reshape(()))
    if mean:
        count = _count_in(t, x.shape[1])
        scale = scale / count if count else np.nan
    y = gx if xc.dtype == gx.dtype else np.empty(x.shape, xc.dtype)
    (p_ce_bwd if use_threads(x.size) and x.shape[0] >= 2 else s_ce_bwd)(xc, t, scale, y)
    bad = _bad(t, x.shape[1], ignore_index)
    if bad is not None:
        y[bad] = np.nan
    if y is not gx:
        np.copyto(gx, y, casting="unsafe")
    return gx


KERNELS: dict = {"softmax": _kernel("softmax", False), "log_softmax": _kernel("log_softmax", True),
                 "cross_entropy": cross_entropy, "cross_entropy_backward": cross_entropy_backward}
