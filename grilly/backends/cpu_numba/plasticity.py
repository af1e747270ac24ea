"""plasticity_step of the CPU backend: STDP, Hebbian and Oja weight updates in one parallel pass
over the weight rows (the equations: grilly/array/plasticity.py). float32 and float64."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .reductions import use_threads

_o = dict(cache=True, nogil=True, error_model="numpy")
RULES = {"stdp": 0, "stdp_hard": 1, "stdp_soft": 2, "hebbian": 3, "oja": 4}


@njit(**_o)
def _row(i, w, x, y, u, v, mode, ap, am, lo, hi):
    B, Q = x.shape
    inv = 1.0 / B
    y2 = 0.0
    if mode == 4:
        for b in range(B):
            y2 += y[b, i] * y[b, i]
        y2 *= inv
    for j in range(Q):
        s1 = 0.0
        s2 = 0.0
        for b in range(B):
            if mode <= 2:
                s1 += y[b, i] * u[b, j]
                s2 += v[b, i] * x[b, j]
            else:
                s1 += y[b, i] * x[b, j]
        s1 *= inv
        s2 *= inv
        wij = w[i, j]
        if mode == 2:
            wij = wij + ap * (hi - wij) * s1 - am * (wij - lo) * s2
        elif mode <= 1:
            wij = wij + ap * s1 - am * s2
            if mode == 1:
                wij = min(max(wij, lo), hi)
        elif mode == 3:
            wij = wij + ap * s1 - am * wij
        else:
            wij = wij + ap * (s1 - y2 * wij)
        w[i, j] = wij


@njit(**_o)
def _traces(x, y, ptr, qtr, has_p, has_q, dp, dm, u, v):
    for b in range(x.shape[0]):
        for j in range(x.shape[1]):
            u[b, j] = (ptr[b, j] * dp if has_p else 0.0) + x[b, j]
        for i in range(y.shape[1]):
            v[b, i] = (qtr[b, i] * dm if has_q else 0.0) + y[b, i]


@njit(**_o)
def s_rows(w, x, y, u, v, mode, ap, am, lo, hi):
    for i in range(w.shape[0]):
        _row(i, w, x, y, u, v, mode, ap, am, lo, hi)


@njit(parallel=True, **_o)
def p_rows(w, x, y, u, v, mode, ap, am, lo, hi):
    for i in prange(w.shape[0]):
        _row(i, w, x, y, u, v, mode, ap, am, lo, hi)


def plasticity_step(w, pre, post, ptr, qtr, pout, qout, rule: str, params: tuple) -> None:
    """Update w (P, Q) in place by one step of ``rule``; STDP writes its new traces."""
    ap, am, dp, dm, lo, hi = params
    mode = RULES[rule]
    x, y = np.ascontiguousarray(pre), np.ascontiguousarray(post)
    if mode <= 2:
        _traces(x, y, x if ptr is None else ptr, y if qtr is None else qtr, ptr is not None,
                qtr is not None, dp, dm, pout, qout)
        u, v = pout, qout
    else:
        u, v = x, y
    wc = w if w.flags.c_contiguous else np.ascontiguousarray(w)
    run = p_rows if use_threads(w.size * max(1, x.shape[0]) * 2) else s_rows
    run(wc, x, y, u, v, mode, ap, am, lo, hi)
    if wc is not w:
        w[...] = wc


KERNELS = {"plasticity_step": plasticity_step}
