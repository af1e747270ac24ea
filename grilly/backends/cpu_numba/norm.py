"""CPU kernels of training-mode batch normalization: ``batch_norm`` (the normalized output and
the batch statistics in one call) and ``batch_norm_backward`` (the three gradients), one task
per channel over (N, C, S) buffers, sums in float64 (docs/kernels/norm.md)."""
from __future__ import annotations

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


KERNELS: dict = {"batch_norm": batch_norm, "batch_norm_backward": batch_norm_backward}
