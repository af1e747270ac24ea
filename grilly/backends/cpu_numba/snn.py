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
    n = min(lo + BLOCK, N) - lo
    one, zero = x.dtype.type(1), x.dtype.type(0)
    m = m0[lo:lo + n].copy()
    for t in range(T):
        for j in range(n):
            i = lo + j
            th, u = thr[i], m[j]
            if delay:
                # snnTorch: the reset of step t comes from the membrane of step t-1
                r = one if u > th else zero
                if code == 0:
                    u = beta[i] * u + x[t, i] - r * th
                elif code == 1:
                    u = beta[i] * ((one - r) * u) + x[t, i]
                else:
                    u = beta[i] * u + x[t, i]
                if store:
                    tr[t, i] = u
                spk[t, i] = one if u > th else zero
                m[j] = u
            else:
                # SpikingJelly: the spike resets the membrane within its step
                h = beta[i] * u + x[t, i]
                if store:
                    tr[t, i] = h
                s = one if h > th else zero
                spk[t, i] = s
                if code == 0:
                    h = h - s * th
                elif code == 1:
                    h = h * (one - s)
                m[j] = h
    mout[lo:lo + n] = m


@njit(**_o)
def s_fwd(x, m0, beta, thr, code, delay, store, spk, tr, mout):
    for b in range((x.shape[1] + BLOCK - 1) // BLOCK):
        _fwd_block(b, x, m0, beta, thr, code, delay, store, spk, tr, mout)


@njit(parallel=True, **_o)
def p_fwd(x, m0, beta, thr, code, delay, store, spk, tr, mout):
    for b in prange((x.shape[1] + BLOCK - 1) // BLOCK):
        _fwd_block(b, x, m0, beta, thr, code, delay, store, spk, tr, mout)


@njit(**_o)
def _sg(kind, a, c1, c2, one, v):
    """The surrogate derivative at v (grilly.nn.snn.surrogate); c1, c2: slope-derived constants
    rounded once to v's precision, as the composition's Python scalars are."""
    if kind == 0:
        z = c1 * v
        return c2 / (one + z * z)
    if kind == 1:
        d = a * abs(v) + one
        return one / (d * d)
    if kind == 2:
        h = c2 * v
        e = np.exp(h) + np.exp(-h)
        return a / (e * e)
    if kind == 3:
        return max(one - abs(v) / a, one - one) / a
    return one


@njit(**_o)
def _bwd_block(b, gs, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2,
               gx, gm0, gb, gth):
    T, N = x.shape
    lo = b * BLOCK
    n = min(lo + BLOCK, N) - lo
    one, zero = x.dtype.type(1), x.dtype.type(0)
    gu = gm[lo:lo + n].copy()            # dL/dU[t], carried back from step t+1
    acc_b = np.zeros(n, x.dtype)
    acc_t = np.zeros(n, x.dtype)
    for t in range(T - 1, -1, -1):
        for j in range(n):
            i = lo + j
            th, be, g = thr[i], beta[i], gu[j]
            if delay:
                u = tr[t, i]
                up = tr[t - 1, i] if t > 0 else m0[i]
                r = one if up > th else zero
                d = _sg(kind, a, c1, c2, one, u - th)
                g = g + gs[t, i] * d
                acc_t[j] -= gs[t, i] * d
                gx[t, i] = g
                if code == 0:
                    acc_t[j] -= g * r
                    acc_b[j] += g * up
                    g = g * be
                elif code == 1:
                    acc_b[j] += g * ((one - r) * up)
                    g = g * (be * (one - r))
                else:
                    acc_b[j] += g * up
                    g = g * be
            else:
                h = tr[t, i]
                s = one if h > th else zero
                d = _sg(kind, a, c1, c2, one, h - th)
                gh = g * (one - s) if code == 1 else g
                if code == 0:
                    acc_t[j] -= g * s
                gh = gh + gs[t, i] * d
                acc_t[j] -= gs[t, i] * d
                gx[t, i] = gh
                if t > 0:
                    hp = tr[t - 1, i]
                    sp = one if hp > th else zero
                    up = hp - sp * th if code == 0 else hp * (one - sp) if code == 1 else hp
                else:
                    up = m0[i]
                acc_b[j] += gh * up
                g = gh * be
            gu[j] = g
    gm0[lo:lo + n] = gu
    gb[lo:lo + n] = acc_b
    gth[lo:lo + n] = acc_t


@njit(**_o)
def s_bwd(gs, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, gx, gm0, gb, gth):
    for b in range((x.shape[1] + BLOCK - 1) // BLOCK):
        _bwd_block(b, gs, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, gx, gm0, gb, gth)


@njit(parallel=True, **_o)
def p_bwd(gs, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, gx, gm0, gb, gth):
    for b in prange((x.shape[1] + BLOCK - 1) // BLOCK):
        _bwd_block(b, gs, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, gx, gm0, gb, gth)


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
                 slope: float):
    """BPTT of lif_forward: (grad input (T, N), grad mem0 (N,), grad beta (N,), grad thr (N,))."""
    d = x.dtype
    ct = _ctype(d)
    T, N = x.shape
    if trace is None:   # recompute: the forward again, its trace kept only for this call
        trace = lif_forward(x, mem0, beta, thr, reset, delay, True)[2]
    g, gmf, xs, m0, b, th, tr = (_c(v, ct) for v in (gs, gm, x, mem0, beta, thr, trace))
    gx, gm0, gb, gth = _out((T, N), d, ct), _out((N,), d, ct), _out((N,), d, ct), _out((N,), d, ct)
    if x.size:
        _run(s_bwd, p_bwd, N, 4 * xs.nbytes, g, gmf, xs, m0, b, th, tr, RESETS[reset],
             bool(delay), SURROGATES[surrogate], ct(slope), *_consts(surrogate, slope, ct), gx, gm0, gb, gth)
    else:
        gm0[...] = gmf
        gb[...] = 0
        gth[...] = 0
    return tuple(_back(v, d) for v in (gx, gm0, gb, gth))


KERNELS: dict = {"lif_forward": lif_forward, "lif_backward": lif_backward}
