"""CPU kernels of the spiking family: ``lif_forward`` and ``lif_backward`` (the contract's calls),
every time step of a leaky integrate-and-fire layer in one call (docs/snn.md, "The fused path"),
and ``alif_forward``/``alif_backward``, the same for the adaptive-threshold neuron.

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
from .vmath import vexp

BLOCK = 2048  # neurons per parallel task (256: the per-step row views cost 1.25x in backward)
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
            e = vexp(h) + vexp(-h)
            d[j] = gs[j] * (a / (e * e))
    elif kind == 3:
        for j in range(n):
            d[j] = gs[j] * (max(one - abs(v[j] - th[j]) / a, one - one) / a)
    else:
        for j in range(n):
            d[j] = gs[j]


@njit(**_o)
def _bwd_block(b, gs, gt, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, detach,
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
        _surrogate(kind, a, c1, c2, one, v, th, gs[t * gt, lo:hi], d)
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
def s_bwd(gs, gt, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, detach, gx, gm0, gb,
          gth):
    for b in range((x.shape[1] + BLOCK - 1) // BLOCK):
        _bwd_block(b, gs, gt, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, detach, gx,
                   gm0, gb, gth)


@njit(parallel=True, **_o)
def p_bwd(gs, gt, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, detach, gx, gm0, gb,
          gth):
    for b in prange((x.shape[1] + BLOCK - 1) // BLOCK):
        _bwd_block(b, gs, gt, gm, x, m0, beta, thr, tr, code, delay, kind, a, c1, c2, detach, gx,
                   gm0, gb, gth)


def _consts(surrogate: str, a: float, ct):
    """(c1, c2) of _sg: atan's pi/2 alpha and alpha/2; sigmoid's slope/2."""
    if surrogate == "atan":
        return ct(math.pi / 2 * a), ct(a / 2)
    return ct(0), ct(a / 2)


def _c(buf, ctype):
    return np.ascontiguousarray(buf, dtype=ctype)


def _grad(gs, ctype) -> tuple:
    """The spikes' gradient (T, N) as the backward loop reads it, and its step stride: a
    broadcast over the steps (a loss summed over them, or over everything, leaves one) as one
    contiguous (1, N) row read at every step (0), where a (T, N) copy would add a third to the
    backward's memory traffic; anything else contiguous (1)."""
    if gs.ndim == 2 and gs.strides[0] == 0:
        return _c(gs[:1], ctype), 0
    return _c(gs, ctype), 1


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


def lif_forward(x, mem0, beta, thr, reset: str, delay: bool, store: bool, refractory: int = 0,
                ref0=None):
    """(T, N) currents -> (spikes (T, N), final membrane (N,), membrane trace (T, N) or None);
    with ``refractory`` steps from counter ref0, the final counter too and a (2, T, N) trace."""
    if refractory:
        spk, mem, ref, tr = _ext_forward(x, mem0, beta, thr, ref0, None, None, refractory, reset,
                                         delay, store)
        return spk, mem, tr, ref
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
                 slope: float, detach_reset: bool = True, refractory: int = 0, ref0=None):
    """BPTT of lif_forward: (grad input (T, N), grad mem0 (N,), grad beta (N,), grad thr (N,));
    ``detach_reset=False`` differentiates the reset signal through the surrogate too."""
    if refractory:
        return _ext_backward(gs, gm, None, x, mem0, beta, thr, ref0, None, None, trace,
                             refractory, reset, delay, surrogate, slope, detach_reset)[:4]
    d = x.dtype
    ct = _ctype(d)
    T, N = x.shape
    if trace is None:   # recompute: the forward again, its trace kept only for this call
        trace = lif_forward(x, mem0, beta, thr, reset, delay, True)[2]
    gmf, xs, m0, b, th, tr = (_c(v, ct) for v in (gm, x, mem0, beta, thr, trace))
    g, gt = _grad(gs, ct)
    gx, gm0, gb, gth = _out((T, N), d, ct), _out((N,), d, ct), _out((N,), d, ct), _out((N,), d, ct)
    if x.size:
        _run(s_bwd, p_bwd, N, 4 * xs.nbytes, g, gt, gmf, xs, m0, b, th, tr, RESETS[reset],
             bool(delay), SURROGATES[surrogate], ct(slope), *_consts(surrogate, slope, ct),
             bool(detach_reset), gx, gm0, gb, gth)
    else:
        gm0[...] = gmf
        gb[...] = 0
        gth[...] = 0
    return tuple(_back(v, d) for v in (gx, gm0, gb, gth))


# ---- a second state per neuron: the refractory counter, or the adaptation of an adaptive
# threshold (lif_forward/lif_backward's refractory arguments, alif_forward/alif_backward). One
# scalar loop for every option, neurons innermost; trace (2, T, N): the membrane and the second
# state of every step. The arithmetic is grilly.array.spiking.composed_forward/backward's.
@njit(**_o)
def _sg1(kind, a, c1, c2, one, v):
    """The surrogate derivative at v (c1, c2 as in _surrogate)."""
    if kind == 0:
        z = c1 * v
        return c2 / (one + z * z)
    if kind == 1:
        e = a * abs(v) + one
        return one / (e * e)
    if kind == 2:
        h = c2 * v
        e = vexp(h) + vexp(-h)
        return a / (e * e)
    if kind == 3:
        return max(one - abs(v) / a, one - one) / a
    return one


@njit(**_o)
def _ext_fwd_block(b, x, m0, beta, thr, s0, rho, gam, adapt, k, code, delay, store, spk, tr,
                   mout, sout):
    T, N = x.shape
    lo = b * BLOCK
    hi = min(lo + BLOCK, N)
    n = hi - lo
    one, zero = x.dtype.type(1), x.dtype.type(0)
    kk = x.dtype.type(k)
    m = m0[lo:hi].copy()
    s = s0[lo:hi].copy()
    be, th, rh, ga = beta[lo:hi], thr[lo:hi], rho[lo:hi], gam[lo:hi]
    act = np.ones(n, x.dtype)       # not refractory: input and spikes pass
    tho = th.copy()                 # the threshold of the old state (adaptive: thr + gamma a)
    thn = th.copy()                 # the spike threshold (reset_delay, adaptive: of the new a)
    xa = np.empty(n, x.dtype)
    r = np.empty(n, x.dtype)
    # one branch-free loop per phase and option, so LLVM vectorizes the loops over neurons
    for t in range(T):
        xt, st = x[t, lo:hi], spk[t, lo:hi]
        if adapt:
            for j in range(n):
                tho[j] = th[j] + ga[j] * s[j]
            xa[:] = xt
        else:
            for j in range(n):
                a = one if s[j] <= zero else zero
                act[j] = a
                xa[j] = xt[j] * a
        if delay:
            for j in range(n):
                r[j] = one if m[j] > tho[j] else zero
            if adapt:
                for j in range(n):
                    s[j] = rh[j] * s[j] + r[j]
                    thn[j] = th[j] + ga[j] * s[j]
            if code == 0:
                for j in range(n):
                    m[j] = be[j] * m[j] + xa[j] - r[j] * tho[j]
            elif code == 1:
                for j in range(n):
                    m[j] = be[j] * ((one - r[j]) * m[j]) + xa[j]
            else:
                for j in range(n):
                    m[j] = be[j] * m[j] + xa[j]
            if store:
                tr[0, t, lo:hi] = m
            for j in range(n):
                st[j] = (one if m[j] > thn[j] else zero) * act[j]
        else:
            for j in range(n):
                m[j] = be[j] * m[j] + xa[j]
            if store:
                tr[0, t, lo:hi] = m
            for j in range(n):
                st[j] = (one if m[j] > tho[j] else zero) * act[j]
            if code == 0:
                for j in range(n):
                    m[j] = m[j] - st[j] * tho[j]
            elif code == 1:
                for j in range(n):
                    m[j] = m[j] * (one - st[j])
            if adapt:
                for j in range(n):
                    s[j] = rh[j] * s[j] + st[j]
        if not adapt:   # the counter: k after a spike, else one step down to 0
            for j in range(n):
                d = s[j] - one
                s[j] = kk if st[j] > zero else (d if d > zero else zero)
        if store:
            tr[1, t, lo:hi] = s
    mout[lo:hi] = m
    sout[lo:hi] = s


@njit(**_o)
def s_ext_fwd(x, m0, beta, thr, s0, rho, gam, adapt, k, code, delay, store, spk, tr, mout, sout):
    for b in range((x.shape[1] + BLOCK - 1) // BLOCK):
        _ext_fwd_block(b, x, m0, beta, thr, s0, rho, gam, adapt, k, code, delay, store, spk, tr,
                       mout, sout)


@njit(parallel=True, **_o)
def p_ext_fwd(x, m0, beta, thr, s0, rho, gam, adapt, k, code, delay, store, spk, tr, mout, sout):
    for b in prange((x.shape[1] + BLOCK - 1) // BLOCK):
        _ext_fwd_block(b, x, m0, beta, thr, s0, rho, gam, adapt, k, code, delay, store, spk, tr,
                       mout, sout)


@njit(**_o)
def _ext_before(adapt, sp, th, ga, one, zero, act, tho):
    """The state before a step, from its second state sp: the active mask and the old
    threshold (thr + gamma a)."""
    n = sp.shape[0]
    if adapt:
        for j in range(n):
            tho[j] = th[j] + ga[j] * sp[j]
    else:
        for j in range(n):
            act[j] = one if sp[j] <= zero else zero


@njit(**_o)
def _ext_bwd_block(b, gs, gt, gm, ga, m0, beta, thr, s0, rho, gam, tr, adapt, code, delay, kind,
                   a, c1, c2, detach, gx, gm0, gb, gth, ga0):
    T, N = gx.shape
    lo = b * BLOCK
    hi = min(lo + BLOCK, N)
    n = hi - lo
    one, zero = gs.dtype.type(1), gs.dtype.type(0)
    be, th, rh, gma, mz, sz = beta[lo:hi], thr[lo:hi], rho[lo:hi], gam[lo:hi], m0[lo:hi], s0[lo:hi]
    g = gm[lo:hi].copy()       # dL/dU[t], carried back from step t+1
    gA = ga[lo:hi].copy()      # dL/dA[t] (adaptive)
    acc_b = np.zeros(n, gs.dtype)
    acc_t = np.zeros(n, gs.dtype)
    act, act1 = np.ones(n, gs.dtype), np.ones(n, gs.dtype)
    tho, tho1, thn = th.copy(), th.copy(), th.copy()
    gsa, d, gr = np.empty(n, gs.dtype), np.empty(n, gs.dtype), np.empty(n, gs.dtype)
    gtho, up = np.empty(n, gs.dtype), np.empty(n, gs.dtype)
    for t in range(T - 1, -1, -1):
        v, gxt = tr[0, t, lo:hi], gx[t, lo:hi]
        _ext_before(adapt, tr[1, t - 1, lo:hi] if t > 0 else sz, th, gma, one, zero, act, tho)
        if delay:
            # U[t] = beta U[t-1] + act x[t] - R tho (subtract), R = H(U[t-1] - tho),
            # A[t] = rho A[t-1] + R, S[t] = act H(U[t] - (thr + gamma A[t]))
            if adapt:
                st = tr[1, t, lo:hi]
                for j in range(n):
                    thn[j] = th[j] + gma[j] * st[j]
            for j in range(n):
                gsa[j] = gs[t * gt, lo + j] * act[j]
            _surrogate(kind, a, c1, c2, one, v, thn, gsa, d)
            prev = tr[0, t - 1, lo:hi] if t > 0 else mz
            for j in range(n):
                gu = g[j] + d[j]
                acc_t[j] -= d[j]
                gxt[j] = gu * act[j]
                g[j] = gu
            if adapt:
                for j in range(n):
                    gA[j] = gA[j] - gma[j] * d[j]
            if code == 0:
                for j in range(n):
                    gu = g[j]
                    acc_b[j] += gu * prev[j]
                    gr[j] = -(gu * tho[j])
                    gtho[j] = -(gu * (one if prev[j] > tho[j] else zero))
                    g[j] = gu * be[j]
            elif code == 1:
                for j in range(n):
                    gu = g[j]
                    r = one if prev[j] > tho[j] else zero
                    acc_b[j] += gu * ((one - r) * prev[j])
                    gr[j] = -(gu * (be[j] * prev[j]))
                    gtho[j] = zero
                    g[j] = gu * (be[j] * (one - r))
            else:
                for j in range(n):
                    acc_b[j] += g[j] * prev[j]
                    gr[j] = zero
                    gtho[j] = zero
                    g[j] = g[j] * be[j]
            if adapt:
                for j in range(n):
                    gr[j] = gr[j] + gA[j]
            if not detach:   # R differentiated through the surrogate at U[t-1] - tho
                _surrogate(kind, a, c1, c2, one, prev, tho, gr, d)
                for j in range(n):
                    g[j] = g[j] + d[j]
                    gtho[j] = gtho[j] - d[j]
        else:
            # h = beta U[t-1] + act x[t]; R = S[t] = act H(h - tho); U[t] = h - R tho
            # (subtract) or h (1 - R) (zero); A[t] = rho A[t-1] + R
            for j in range(n):   # gsa: dL/dS[t] times the mask; d: the gradient of h kept
                sj = (one if v[j] > tho[j] else zero) * act[j]
                gj = g[j]
                gss = gs[t * gt, lo + j]
                if not detach:
                    grj = -(gj * tho[j]) if code == 0 else -(gj * v[j]) if code == 1 else zero
                    if adapt:
                        grj = grj + gA[j]
                    gss = gss + grj
                gsa[j] = gss * act[j]
                d[j] = gj * (one - sj) if code == 1 else gj
                gtho[j] = -(gj * sj) if code == 0 else zero
            _surrogate(kind, a, c1, c2, one, v, tho, gsa, gr)   # gr: e = a dL/dS sg'(h - tho)
            if t > 0:   # U[t-1]: the previous step's membrane after its reset
                hp = tr[0, t - 1, lo:hi]
                _ext_before(adapt, tr[1, t - 2, lo:hi] if t > 1 else sz, th, gma, one, zero,
                            act1, tho1)
                for j in range(n):
                    s1 = (one if hp[j] > tho1[j] else zero) * act1[j]
                    up[j] = (hp[j] - s1 * tho1[j] if code == 0 else
                             hp[j] * (one - s1) if code == 1 else hp[j])
            else:
                up[:] = mz
            for j in range(n):
                gh = d[j] + gr[j]
                gtho[j] = gtho[j] - gr[j]
                gxt[j] = gh * act[j]
                acc_b[j] += gh * up[j]
                g[j] = gh * be[j]
        for j in range(n):
            acc_t[j] += gtho[j]
        if adapt:   # tho = thr + gamma A[t-1]; A[t] = rho A[t-1] + R
            for j in range(n):
                gA[j] = rh[j] * gA[j] + gma[j] * gtho[j]
    gm0[lo:hi] = g
    gb[lo:hi] = acc_b
    gth[lo:hi] = acc_t
    ga0[lo:hi] = gA


@njit(**_o)
def s_ext_bwd(gs, gt, gm, ga, m0, beta, thr, s0, rho, gam, tr, adapt, code, delay, kind, a, c1,
              c2, detach, gx, gm0, gb, gth, ga0):
    for b in range((gx.shape[1] + BLOCK - 1) // BLOCK):
        _ext_bwd_block(b, gs, gt, gm, ga, m0, beta, thr, s0, rho, gam, tr, adapt, code, delay,
                       kind, a, c1, c2, detach, gx, gm0, gb, gth, ga0)


@njit(parallel=True, **_o)
def p_ext_bwd(gs, gt, gm, ga, m0, beta, thr, s0, rho, gam, tr, adapt, code, delay, kind, a, c1,
              c2, detach, gx, gm0, gb, gth, ga0):
    for b in prange((gx.shape[1] + BLOCK - 1) // BLOCK):
        _ext_bwd_block(b, gs, gt, gm, ga, m0, beta, thr, s0, rho, gam, tr, adapt, code, delay,
                       kind, a, c1, c2, detach, gx, gm0, gb, gth, ga0)


def _ext_forward(x, m0, beta, thr, s0, rho, gam, k: int, reset: str, delay: bool, store: bool):
    """(spikes, final membrane, final second state, trace (2, T, N) or None); rho None: the
    refractory counter of k steps, else the adaptation."""
    d = x.dtype
    ct = _ctype(d)
    T, N = x.shape
    adapt = rho is not None
    xs, m, b, th, s = (_c(v, ct) for v in (x, m0, beta, thr, s0))
    r, gm = (_c(rho, ct), _c(gam, ct)) if adapt else (b, b)   # unread without adaptation
    spk, mout, sout = _out((T, N), d, ct), _out((N,), d, ct), _out((N,), d, ct)
    tr = _out((2, T, N), d, ct) if store else np.empty((2, 1, 1), ct)
    if x.size:
        _run(s_ext_fwd, p_ext_fwd, N, (5 if store else 2) * xs.nbytes, xs, m, b, th, s, r, gm,
             adapt, int(k), RESETS[reset], bool(delay), bool(store), spk, tr, mout, sout)
    else:
        mout[...] = m
        sout[...] = s
    return (_back(spk, d), _back(mout, d), _back(sout, d), _back(tr, d) if store else None)


def _ext_backward(gs, gm, ga, x, m0, beta, thr, s0, rho, gam, trace, k: int, reset: str,
                  delay: bool, surrogate: str, slope: float, detach: bool):
    """(grad x, grad mem0, grad beta, grad thr, grad of the second state's start)."""
    d = x.dtype
    ct = _ctype(d)
    T, N = x.shape
    if trace is None:   # recompute: the forward again, its trace kept only for this call
        trace = _ext_forward(x, m0, beta, thr, s0, rho, gam, k, reset, delay, True)[3]
    adapt = rho is not None
    gmf, m, b, th, s, tr = (_c(v, ct) for v in (gm, m0, beta, thr, s0, trace))
    g, gt = _grad(gs, ct)
    gaf = _c(ga, ct) if ga is not None else np.zeros(N, ct)
    r, gmm = (_c(rho, ct), _c(gam, ct)) if adapt else (b, b)
    gx = _out((T, N), d, ct)
    gm0, gb, gth, ga0 = (_out((N,), d, ct) for _ in range(4))
    if x.size:
        _run(s_ext_bwd, p_ext_bwd, N, 5 * gx.nbytes, g, gt, gmf, gaf, m, b, th, s, r, gmm, tr, adapt,
             RESETS[reset], bool(delay), SURROGATES[surrogate], ct(slope),
             *_consts(surrogate, slope, ct), bool(detach), gx, gm0, gb, gth, ga0)
    else:
        gm0[...] = gmf
        ga0[...] = gaf
        gb[...] = 0
        gth[...] = 0
    return tuple(_back(v, d) for v in (gx, gm0, gb, gth, ga0))


def alif_forward(x, mem0, a0, beta, rho, gamma, thr, reset: str, delay: bool, store: bool):
    """(T, N) currents -> (spikes, final membrane, final adaptation, trace (2, T, N) or None)."""
    spk, mem, a, tr = _ext_forward(x, mem0, beta, thr, a0, rho, gamma, 0, reset, delay, store)
    return spk, mem, a, tr


def alif_backward(gs, gm, ga, x, mem0, a0, beta, rho, gamma, thr, trace, reset: str, delay: bool,
                  surrogate: str, slope: float, detach_reset: bool):
    """BPTT of alif_forward: (grad x, grad mem0, grad a0, grad beta, grad thr)."""
    gx, gm0, gb, gth, ga0 = _ext_backward(gs, gm, ga, x, mem0, beta, thr, a0, rho, gamma, trace,
                                          0, reset, delay, surrogate, slope, detach_reset)
    return gx, gm0, ga0, gb, gth


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
                 "alif_forward": alif_forward, "alif_backward": alif_backward,
                 "leaky_integrate": leaky_integrate}
