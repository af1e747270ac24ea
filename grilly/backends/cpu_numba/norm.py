"""CPU kernels of normalizations: training-mode ``batch_norm`` (the normalized output and the
batch statistics in one call) and ``batch_norm_backward`` (the three gradients), one task per
channel over (N, C, S) buffers; ``layer_norm`` and ``layer_norm_backward``, one pass per row of
(M, D) buffers, the weight and bias gradients as per-task partial sums; sums in float64
(docs/kernels/norm.md)."""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from . import jit
from .pool import pool

_o = dict(cache=True, nogil=True, error_model="numpy")
# reassociation lets LLVM split each channel sum into vector partial sums (a float64 chain
# otherwise waits on every add); the values themselves are not reordered elsewhere
_fm = dict(_o, fastmath={"reassoc", "contract"})


@njit(**_fm)
def _bn_channel(x, w, b, eps, y, mean, invstd, c):
    n, s = x.shape[0], x.shape[2]
    acc = 0.0
    for i in range(n):
        for j in range(s):
            acc += x[i, c, j]
    m = acc / (n * s)
    acc = 0.0
    for i in range(n):
        for j in range(s):
            d = x[i, c, j] - m
            acc += d * d
    inv = 1.0 / np.sqrt(acc / (n * s) + eps)
    scale = inv * (w[c] if w.size else 1.0)
    shift = b[c] if b.size else 0.0
    for i in range(n):
        for j in range(s):
            y[i, c, j] = (x[i, c, j] - m) * scale + shift
    mean[c] = m
    invstd[c] = inv


@njit(**_o)
def s_bn(x, w, b, eps, y, mean, invstd):
    for c in range(x.shape[1]):
        _bn_channel(x, w, b, eps, y, mean, invstd, c)


@njit(parallel=True, **_o)
def p_bn(x, w, b, eps, y, mean, invstd):
    for c in prange(x.shape[1]):
        _bn_channel(x, w, b, eps, y, mean, invstd, c)


@njit(**_fm)
def _bn_back_channel(g, x, mean, invstd, w, gx, gw, gb, c):
    n, s = x.shape[0], x.shape[2]
    m, inv = mean[c], invstd[c]
    sg = 0.0
    sgx = 0.0
    for i in range(n):
        for j in range(s):
            v = g[i, c, j]
            sg += v
            sgx += v * (x[i, c, j] - m)
    sgx *= inv                           # sum of g * xhat
    if gw.size:
        gw[c] = sgx
    if gb.size:
        gb[c] = sg
    if gx.size:
        cnt = n * s
        k = inv * (w[c] if w.size else 1.0)
        a, bb = sg / cnt, sgx / cnt
        for i in range(n):
            for j in range(s):
                xh = (x[i, c, j] - m) * inv
                gx[i, c, j] = k * (g[i, c, j] - a - xh * bb)


@njit(**_o)
def s_bn_back(g, x, mean, invstd, w, gx, gw, gb):
    for c in range(x.shape[1]):
        _bn_back_channel(g, x, mean, invstd, w, gx, gw, gb, c)


@njit(parallel=True, **_o)
def p_bn_back(g, x, mean, invstd, w, gx, gw, gb):
    for c in prange(x.shape[1]):
        _bn_back_channel(g, x, mean, invstd, w, gx, gw, gb, c)


def _opt(a, dt):
    return np.empty(0, dt) if a is None else np.ascontiguousarray(a)


def _par(x) -> bool:
    return x.size >= jit.PARALLEL_MIN and x.shape[1] >= 2


def batch_norm(x, weight, bias, eps):
    """(y, mean (C,), invstd (C,)) of x (N, C, S) normalized per channel with the biased
    batch variance, then scaled by weight and shifted by bias (either may be None)."""
    xc = np.ascontiguousarray(x)
    y = pool.empty(x.shape, x.dtype)
    mean = pool.empty(x.shape[1:2], x.dtype)
    invstd = pool.empty(x.shape[1:2], x.dtype)
    if x.shape[1] and x.size:
        (p_bn if _par(x) else s_bn)(xc, _opt(weight, x.dtype), _opt(bias, x.dtype), float(eps),
                                    y, mean, invstd)
    return y, mean, invstd


def batch_norm_backward(g, x, mean, invstd, weight, need):
    """The gradients (x, weight, bias) of ``batch_norm``, None where ``need`` says no."""
    nx, nw, nb = (bool(v) for v in need)
    dt = x.dtype
    gx = pool.empty(x.shape, dt) if nx else np.empty((0, 0, 0), dt)
    gw = pool.empty(x.shape[1:2], dt) if nw else np.empty(0, dt)
    gb = pool.empty(x.shape[1:2], dt) if nb else np.empty(0, dt)
    if x.shape[1] and x.size:
        (p_bn_back if _par(x) else s_bn_back)(
            np.ascontiguousarray(g), np.ascontiguousarray(x), np.ascontiguousarray(mean),
            np.ascontiguousarray(invstd), _opt(weight, dt), gx, gw, gb)
    return gx if nx else None, gw if nw else None, gb if nb else None


# ---- layer norm: rows ------------------------------------------------------------------------
@njit(**_fm)
def _ln_row(x, w, b, eps, y, mean, rstd, r):
    d = x.shape[1]
    acc = 0.0
    for j in range(d):
        acc += x[r, j]
    m = acc / d
    acc = 0.0
    for j in range(d):
        v = x[r, j] - m
        acc += v * v
    inv = 1.0 / np.sqrt(acc / d + eps)
    mean[r] = m
    rstd[r] = inv
    for j in range(d):
        v = (x[r, j] - m) * inv
        if w.size:
            v = v * w[j]
        if b.size:
            v = v + b[j]
        y[r, j] = v


@njit(**_o)
def s_ln(x, w, b, eps, y, mean, rstd):
    for r in range(x.shape[0]):
        _ln_row(x, w, b, eps, y, mean, rstd, r)


@njit(parallel=True, **_o)
def p_ln(x, w, b, eps, y, mean, rstd):
    for r in prange(x.shape[0]):
        _ln_row(x, w, b, eps, y, mean, rstd, r)


@njit(**_fm)
def _ln_back_rows(g, x, mean, rstd, w, gx, pw, pb, r0, r1, nx, nw, nb):
    """Rows r0..r1: their input gradients, and their weight/bias gradient sums added onto the
    float64 partials pw, pb (D,)."""
    d = x.shape[1]
    for r in range(r0, r1):
        m, inv = mean[r], rstd[r]
        s1 = 0.0
        s2 = 0.0
        for j in range(d):
            xh = (x[r, j] - m) * inv
            gh = g[r, j] * w[j] if w.size else g[r, j]
            s1 += gh
            s2 += gh * xh
            if nw:
                pw[j] += g[r, j] * xh
            if nb:
                pb[j] += g[r, j]
        if nx:
            a1, a2 = s1 / d, s2 / d
            for j in range(d):
                xh = (x[r, j] - m) * inv
                gh = g[r, j] * w[j] if w.size else g[r, j]
                gx[r, j] = inv * (gh - a1 - xh * a2)


@njit(parallel=True, **_o)
def p_ln_back(g, x, mean, rstd, w, gx, pw, pb, nx, nw, nb):
    parts = pw.shape[0]
    m = x.shape[0]
    step = (m + parts - 1) // parts
    for t in prange(parts):
        _ln_back_rows(g, x, mean, rstd, w, gx, pw[t], pb[t], t * step, min(m, (t + 1) * step),
                      nx, nw, nb)


@njit(**_o)
def s_ln_back(g, x, mean, rstd, w, gx, pw, pb, nx, nw, nb):
    _ln_back_rows(g, x, mean, rstd, w, gx, pw[0], pb[0], 0, x.shape[0], nx, nw, nb)


def layer_norm(x, weight, bias, eps):
    """(y, mean (M,), rstd (M,)) of x (M, D), each row normalized with its biased variance,
    then scaled by weight and shifted by bias (either may be None)."""
    xc = np.ascontiguousarray(x)
    y = pool.empty(x.shape, x.dtype)
    mean = pool.empty(x.shape[:1], x.dtype)
    rstd = pool.empty(x.shape[:1], x.dtype)
    if x.size:
        run = p_ln if x.size >= jit.PARALLEL_MIN and x.shape[0] >= 2 else s_ln
        run(xc, _opt(weight, x.dtype), _opt(bias, x.dtype), float(eps), y, mean, rstd)
    elif x.shape[0]:   # D = 0: the mean and variance of nothing, as numpy's
        mean[...] = np.nan
        rstd[...] = np.nan
    return y, mean, rstd


def layer_norm_backward(g, x, mean, rstd, weight, need):
    """The gradients (x, weight, bias) of ``layer_norm``, None where ``need`` says no."""
    nx, nw, nb = (bool(v) for v in need)
    dt = x.dtype
    m, d = x.shape
    gx = pool.empty(x.shape, dt) if nx else np.empty((0, 0), dt)
    par = x.size >= jit.PARALLEL_MIN and m >= 2
    parts = numba.get_num_threads() if par else 1
    pw = np.zeros((parts, d if nw else 0))
    pb = np.zeros((parts, d if nb else 0))
    if x.size:
        (p_ln_back if par else s_ln_back)(
            np.ascontiguousarray(g), np.ascontiguousarray(x), np.ascontiguousarray(mean),
            np.ascontiguousarray(rstd), _opt(weight, dt), gx, pw, pb, nx, nw, nb)
    return (gx if nx else None, pw.sum(axis=0).astype(dt) if nw else None,
            pb.sum(axis=0).astype(dt) if nb else None)


KERNELS: dict = {"batch_norm": batch_norm, "batch_norm_backward": batch_norm_backward,
                 "layer_norm": layer_norm, "layer_norm_backward": layer_norm_backward}
