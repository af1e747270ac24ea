"""CPU kernels of the spiking family: ``lif_forward`` and ``lif_backward`` (the contract's calls),
every time step of a leaky integrate-and-fire layer in one call (docs/snn.md, "The fused path").

Neurons are independent, so blocks of BLOCK neurons run in parallel and each block walks all T
steps with its membranes in a small local array; the inner loop runs over contiguous neurons of
one step. The arithmetic is written in the same order as the per-step composition
(grilly.nn.snn.functional._fire), so spikes match it bit for bit; float16 computes in float32.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .pool import pool
from .reductions import par, use_threads

BLOCK = 256   # neurons per parallel task
RESETS = {"subtract": 0, "zero": 1, "none": 2}
SURROGATES = {"atan": 0, "fast_sigmoid": 1, "sigmoid": 2, "triangle": 3, "straight_through": 4}

_o = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_o)
def _fwd_block(b, x, m0, beta, thr, code, delay, store, spk, tr, mout):
    T, N = x.shape
    lo = b * BLOCK
    hi = min(lo + BLOCK, N)
    one, zero = x.dtype.type(1), x.dtype.type(0)
    m = m0[lo:hi].copy()
    be, th = beta[lo:hi], thr[lo:hi]
    n = hi - lo
    # one branch-free loop per option, so LLVM vectorizes the loop over neurons
    for t in range(T):
        xt, st = x[t, lo:hi], spk[t, lo:hi]
        tt = tr[t, lo:hi] if store else tr[0, :0]
        if delay:
            if code == 0:
                for j in range(n):
                    u = m[j]
                    r = one if u > th[j] else zero
                    m[j] = be[j] * u + xt[j] - r * th[j]
            elif code == 1:
                for j in range(n):
                    u = m[j]
                    r = one if u > th[j] else zero
                    m[j] = be[j] * ((one - r) * u) + xt[j]
            else:
                for j in range(n):
                    m[j] = be[j] * m[j] + xt[j]
            for j in range(n):
                st[j] = one if m[j] > th[j] else zero
            if store:
                tt[:] = m
        else:
            for j in range(n):
                m[j] = be[j] * m[j] + xt[j]
            for j in range(n):
                st[j] = one if m[j] > th[j] else zero
            if store:
                tt[:] = m
            # SpikingJelly: the spike resets the membrane within its step
            if code == 0:
                for j in range(n):
                    m[j] = m[j] - st[j] * th[j]
            elif code == 1:
                for j in range(n):
                    m[j] = m[j] * (one - st[j])
    mout[lo:hi] = m


@njit(**_o)
def s_fwd(x, m0, beta, thr, code, delay, store, spk, tr, mout):
    for b in range((x.shape[1] + BLOCK - 1) // BLOCK):
        _fwd_block(b, x, m0, beta, thr, code, delay, store, spk, tr, mout)


@njit(parallel=True, **_o)
def p_fwd(x, m0, beta, thr, code, delay, store, spk, tr, mout):
    for b in prange((x.shape[1] + BLOCK - 1) // BLOCK):
        _fwd_block(b, x, m0, beta, thr, code, delay, store, spk, tr, mout)


@njit(**_o)
def _surrogate(kind, a, c1, c2, one, v, th, gs, d):
    """d = gs * sg(v - th), the surrogate derivative of grilly.nn.snn.surrogate; c1, c2:
    slope-derived constants rounded once to v's precision, as the composition's Python scalars
    are. One loop per kind, so each vectorizes."""
    n = v.shape[0]
    if kind == 0:
        for j in range(n):
            z = c1 * (v[j] - th[j])
            d[j] = gs[j] * (c2 / (one + z * z))
    elif kind == 1:
        for j in range(n):
            e = a * abs(v[j] - th[j]) + one
            d[j] = gs[j] * (one / (e * e))
    elif kind == 2:
        for j in range(n):
            h = c2 * (v[j] - th[j])
            e = np.exp(h) + np.exp(-h)
            d[j] = gs[j] * (a / (e * e))
    elif kind == 3:
        for j in range(n):
            d[j] = gs[j] * (max(one - abs(v[j] - th[j]) / a, one - one) / a)
    else:
        for j in range(n):
            d[j] = gs[j]


@njit(**_o)
def _bwd_block(b, gs, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, detach,
               gx, gm0, gb, gth):
    T, N = x.shape
    lo = b * BLOCK
    hi = min(lo + BLOCK, N)
    n = hi - lo
    one, zero = x.dtype.type(1), x.dtype.type(0)
    be, th, mz = beta[lo:hi], thr[lo:hi], m0[lo:hi]
    g = gm[lo:hi].copy()                 # dL/dU[t], carried back from step t+1
    acc_b = np.zeros(n, x.dtype)
    acc_t = np.zeros(n, x.dtype)
    d = np.empty(n, x.dtype)
    dr = np.zeros(n, x.dtype)            # the reset signal's surrogate slope (detach=False)
    ones = np.ones(n, x.dtype)
    up = np.empty(n, x.dtype)
    for t in range(T - 1, -1, -1):
        v, gxt = tr[t, lo:hi], gx[t, lo:hi]
        _surrogate(kind, a, c1, c2, one, v, th, gs[t, lo:hi], d)
        prev = tr[t - 1, lo:hi] if t > 0 else mz
        if delay:
            # U[t] = beta U[t-1] + x[t] - R[t] thr, R[t] = H(U[t-1] - thr): detached, or (detach
            # False) differentiated through the surrogate at U[t-1]
            if not detach:
                _surrogate(kind, a, c1, c2, one, prev, th, ones, dr)
            for j in range(n):
                gj = g[j] + d[j]
                acc_t[j] -= d[j]
                gxt[j] = gj
                r = one if prev[j] > th[j] else zero
                if code == 0:
                    acc_t[j] -= gj * r
                    acc_b[j] += gj * prev[j]
                    if detach:
                        g[j] = gj * be[j]
                    else:
                        acc_t[j] += gj * (th[j] * dr[j])
                        g[j] = gj * (be[j] - th[j] * dr[j])
                elif code == 1:
                    acc_b[j] += gj * ((one - r) * prev[j])
                    if detach:
                        g[j] = gj * (be[j] * (one - r))
                    else:
                        k = be[j] * prev[j] * dr[j]
                        acc_t[j] += gj * k
                        g[j] = gj * (be[j] * (one - r) - k)
                else:
                    acc_b[j] += gj * prev[j]
                    g[j] = gj * be[j]
        else:
            # h[t] = beta U[t-1] + x[t]; U[t] = h[t] reset by S[t] = H(h[t] - thr): detached, or
            # differentiated through the surrogate at h[t]
            if not detach:
                _surrogate(kind, a, c1, c2, one, v, th, ones, dr)
            if t > 0:
                for j in range(n):
                    sp = one if prev[j] > th[j] else zero
                    up[j] = (prev[j] - sp * th[j] if code == 0 else
                             prev[j] * (one - sp) if code == 1 else prev[j])
            else:
                up[:] = mz
            for j in range(n):
                s = one if v[j] > th[j] else zero
                gh = g[j] * (one - s) if code == 1 else g[j]
                if code == 0:
                    acc_t[j] -= g[j] * s
                    if not detach:
                        acc_t[j] += g[j] * (th[j] * dr[j])
                        gh = gh - g[j] * (th[j] * dr[j])
                elif code == 1 and not detach:
                    acc_t[j] += g[j] * (v[j] * dr[j])
                    gh = gh - g[j] * (v[j] * dr[j])
                gh = gh + d[j]
                acc_t[j] -= d[j]
                gxt[j] = gh
                acc_b[j] += gh * up[j]
                g[j] = gh * be[j]
    gm0[lo:hi] = g
    gb[lo:hi] = acc_b
    gth[lo:hi] = acc_t


@njit(**_o)
def s_bwd(gs, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, detach, gx, gm0, gb, gth):
    for b in range((x.shape[1] + BLOCK - 1) // BLOCK):
        _bwd_block(b, gs, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, detach, gx, gm0,
                   gb, gth)


@njit(parallel=True, **_o)
def p_bwd(gs, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, detach, gx, gm0, gb, gth):
    for b in prange((x.shape[1] + BLOCK - 1) // BLOCK):
        _bwd_block(b, gs, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, detach, gx, gm0,
                   gb, gth)


def _consts(surrogate: str, a: float, ct):
    """(c1, c2) of _sg: atan's pi/2 alpha and alpha/2; sigmoid's slope/2."""
    if surrogate == "atan":
        return ct(math.pi / 2 * a), ct(a / 2)
    return ct(0), ct(a / 2)


def _c(buf, ctype):
    return np.ascontiguousarray(buf, dtype=ctype)


def _ctype(d):
    """The compute scalar type of storage dtype d."""
    return np.float32 if d == np.float16 else np.dtype(d).type


def _run(serial, parallel, n_neurons: int, nbytes: int, *args) -> None:
    tasks = -(-n_neurons // BLOCK)
    if use_threads(nbytes // 4) and tasks >= 2:
        par(parallel, tasks, nbytes, *args)
    else:
        serial(*args)


def _out(shape, d, ctype):
    return pool.empty(shape, d) if d == ctype else np.empty(shape, ctype)


def _back(y, d):
    return y if y.dtype == d else y.astype(d)


def lif_forward(x, mem0, beta, thr, reset: str, delay: bool, store: bool):
    """(T, N) currents -> (spikes (T, N), final membrane (N,), membrane trace (T, N) or None)."""
    d = x.dtype
    ct = _ctype(d)
    T, N = x.shape
    xs, m0, b, th = (_c(v, ct) for v in (x, mem0, beta, thr))
    spk, mout = _out((T, N), d, ct), _out((N,), d, ct)
    tr = _out((T, N), d, ct) if store else np.empty((1, 1), ct)
    if x.size:
        _run(s_fwd, p_fwd, N, (3 if store else 2) * xs.nbytes, xs, m0, b, th, RESETS[reset],
             bool(delay), bool(store), spk, tr, mout)
    else:
        mout[...] = m0
    return _back(spk, d), _back(mout, d), (_back(tr, d) if store else None)


def lif_backward(gs, gm, x, mem0, beta, thr, trace, reset: str, delay: bool, surrogate: str,
                 slope: float, detach_reset: bool = True):
    """BPTT of lif_forward: (grad input (T, N), grad mem0 (N,), grad beta (N,), grad thr (N,));
    ``detach_reset=False`` differentiates the reset signal through the surrogate too."""
    d = x.dtype
    ct = _ctype(d)
    T, N = x.shape
    if trace is None:   # recompute: the forward again, its trace kept only for this call
        trace = lif_forward(x, mem0, beta, thr, reset, delay, True)[2]
    g, gmf, xs, m0, b, th, tr = (_c(v, ct) for v in (gs, gm, x, mem0, beta, thr, trace))
    gx, gm0, gb, gth = _out((T, N), d, ct), _out((N,), d, ct), _out((N,), d, ct), _out((N,), d, ct)
    if x.size:
        _run(s_bwd, p_bwd, N, 4 * xs.nbytes, g, gmf, xs, m0, b, th, tr, RESETS[reset],
             bool(delay), SURROGATES[surrogate], ct(slope), *_consts(surrogate, slope, ct),
             bool(detach_reset), gx, gm0, gb, gth)
    else:
        gm0[...] = gmf
        gb[...] = 0
        gth[...] = 0
    return tuple(_back(v, d) for v in (gx, gm0, gb, gth))


@njit(**_o)
def _leaky_block(b, x, s0, alpha, reverse, out):
    T, N = x.shape
    lo = b * BLOCK
    hi = min(lo + BLOCK, N)
    s = s0[lo:hi].copy()
    al = alpha[lo:hi]
    n = hi - lo
    for k in range(T):
        t = T - 1 - k if reverse else k
        xt, ot = x[t, lo:hi], out[t, lo:hi]
        for j in range(n):
            s[j] = al[j] * s[j] + xt[j]
        ot[:] = s


@njit(**_o)
def s_leaky(x, s0, alpha, reverse, out):
    for b in range((x.shape[1] + BLOCK - 1) // BLOCK):
        _leaky_block(b, x, s0, alpha, reverse, out)


@njit(parallel=True, **_o)
def p_leaky(x, s0, alpha, reverse, out):
    for b in prange((x.shape[1] + BLOCK - 1) // BLOCK):
        _leaky_block(b, x, s0, alpha, reverse, out)


def leaky_integrate(x, s0, alpha, reverse: bool):
    """out[t] = alpha out[t -/+ 1] + x[t] over the T steps of x (T, N), from s0."""
    d = x.dtype
    ct = _ctype(d)
    T, N = x.shape
    xs, s, a = (_c(v, ct) for v in (x, s0, alpha))
    out = _out((T, N), d, ct)
    if x.size:
        _run(s_leaky, p_leaky, N, 2 * xs.nbytes, xs, s, a, bool(reverse), out)
    return _back(out, d)


KERNELS: dict = {"lif_forward": lif_forward, "lif_backward": lif_backward,
                 "leaky_integrate": leaky_integrate}
