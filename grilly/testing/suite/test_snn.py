"""The fused spiking kernels (grilly.array.spiking: lif_forward/lif_backward with and without a
refractory period, alif_forward/alif_backward) against a float64 numpy implementation of
docs/snn.md's update equations and their backward through time, on the device's kernels or the
compositions. The reference functions are also what grilly's own tests/test_snn_fused.py uses."""
from __future__ import annotations

import numpy as np
import pytest

from grilly.testing import on

K = pytest.mark.kernels
RESETS = ("subtract", "zero", "none")
SURROGATES = {  # name: (slope, derivative)
    "atan": (2.0, lambda v, a: (a / 2) / (1 + (np.pi / 2 * a * v) ** 2)),
    "fast_sigmoid": (5.0, lambda v, a: 1 / (a * np.abs(v) + 1) ** 2),
    "sigmoid": (4.0, lambda v, a: a * np.exp(-a * v) / (1 + np.exp(-a * v)) ** 2),
    "triangle": (0.5, lambda v, a: np.maximum(0, 1 - np.abs(v) / a) / a),
    "straight_through": (1.0, lambda v, a: np.ones_like(v)),
}


def np_forward(x, m0, beta, thr, reset, delay, refractory=0, s0=None, rho=None, gamma=None):
    """(spikes, final membrane, final second state or None, trace): LIF, LIF with a refractory
    counter s (``refractory`` steps from s0) or the adaptive threshold thr + gamma s (s = the
    adaptation, from s0, decaying by rho). The trace is the pre-reset membrane of every step,
    stacked with the second state's as (2, T, N) when there is one."""
    ext = refractory or rho is not None
    u = m0.copy()
    s = s0.copy() if ext else None
    spk, tr, st = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    for t in range(x.shape[0]):
        act = (s <= 0).astype(x.dtype) if refractory else 1.0   # not refractory
        tho = thr + gamma * s if rho is not None else thr        # the old state's threshold
        cur = act * x[t]
        if delay:
            r = (u > tho).astype(x.dtype)
            thn = thr
            if rho is not None:
                s = rho * s + r
                thn = thr + gamma * s
            u = {"subtract": beta * u + cur - r * tho, "zero": beta * ((1 - r) * u) + cur,
                 "none": beta * u + cur}[reset]
            tr[t], spk[t] = u, act * (u > thn)
        else:
            h = beta * u + cur
            tr[t] = h
            spk[t] = act * (h > tho)
            u = {"subtract": h - spk[t] * tho, "zero": h * (1 - spk[t]), "none": h}[reset]
            if rho is not None:
                s = rho * s + spk[t]
        if refractory:
            s = np.where(spk[t] > 0, float(refractory), np.maximum(s - 1, 0))
        if ext:
            st[t] = s
    return spk, u, s, (np.stack([tr, st]) if ext else tr)


def np_backward(gs, gm, x, m0, beta, thr, reset, delay, surrogate, slope, detach=True,
                refractory=0, s0=None, rho=None, gamma=None, ga=None):
    """dL/dx, dL/dmem0, dL/dbeta, dL/dthr and dL/ds0 (adaptive; else None) of np_forward, the
    spike's derivative replaced by the surrogate's; ``detach`` False differentiates the reset
    signal R through the surrogate too. The refractory counter and mask carry no gradient."""
    _, _, _, trace = np_forward(x, m0, beta, thr, reset, delay, refractory, s0, rho, gamma)
    ext = refractory or rho is not None
    tr, st = (trace[0], trace[1]) if ext else (trace, None)
    sg = SURROGATES[surrogate][1]

    def before(t):   # (active mask, old threshold) of step t
        s = (st[t - 1] if t else s0) if ext else None
        act = (s <= 0).astype(x.dtype) if refractory else 1.0
        return act, (thr + gamma * s if rho is not None else thr)

    gx, g = np.zeros_like(x), gm.copy()
    gA = ga.copy() if rho is not None else 0.0
    gb, gt = np.zeros_like(m0), np.zeros_like(m0)
    for t in range(x.shape[0] - 1, -1, -1):
        act, tho = before(t)
        v = tr[t]
        gr = 0.0   # dL/dR
        if delay:
            thn = thr + gamma * st[t] if rho is not None else thr
            d = gs[t] * act * sg(v - thn, slope)   # S[t] = act H(U[t] - thn)
            gu = g + d
            gt -= d
            gA = gA - gamma * d if rho is not None else gA
            gx[t] = gu * act
            up = tr[t - 1] if t else m0
            r = (up > tho).astype(x.dtype)
            if reset == "subtract":   # U = beta U' + act x - R tho
                gb += gu * up
                gr, gtho, g = -gu * tho, -gu * r, gu * beta
            elif reset == "zero":     # U = beta (1 - R) U' + act x
                gb += gu * (1 - r) * up
                gr, gtho, g = -gu * beta * up, 0.0, gu * beta * (1 - r)
            else:
                gb += gu * up
                gtho, g = 0.0, gu * beta
            gr = gr + gA if rho is not None else gr   # A[t] = rho A[t-1] + R
            if not detach:   # R = H(U[t-1] - tho)
                dr = gr * sg(up - tho, slope)
                g, gtho = g + dr, gtho - dr
        else:
            s = act * (v > tho)   # R = S[t]
            gh = g * (1 - s) if reset == "zero" else g
            gtho = -g * s if reset == "subtract" else 0.0
            gss = gs[t]
            if not detach:
                gr = -g * tho if reset == "subtract" else -g * v if reset == "zero" else 0.0
                gss = gss + (gr + gA if rho is not None else gr)
            e = gss * act * sg(v - tho, slope)
            gh, gtho = gh + e, gtho - e
            gx[t] = gh * act
            up = m0
            if t:
                act1, th1 = before(t - 1)
                s1 = act1 * (tr[t - 1] > th1)
                up = {"subtract": tr[t - 1] - s1 * th1, "zero": tr[t - 1] * (1 - s1),
                      "none": tr[t - 1]}[reset]
            gb += gh * up
            g = gh * beta
        gt += gtho
        if rho is not None:   # tho = thr + gamma A[t-1]
            gA = rho * gA + gamma * gtho
    return gx, g, gb, gt, (gA if rho is not None else None)


def case(seed, T=9, N=13):
    """Random inputs (float64): x, mem0, beta, thr, g_spikes, g_mem, a second state s0 (the
    adaptation), rho, gamma, g_a."""
    rng = np.random.default_rng(seed)
    return dict(x=rng.normal(0.5, 0.8, (T, N)), m0=rng.normal(0.0, 0.5, N),
                beta=rng.uniform(0.3, 1.0, N), thr=rng.uniform(0.7, 1.3, N),
                gs=rng.standard_normal((T, N)), gm=rng.standard_normal(N),
                s0=rng.uniform(0.0, 1.0, N), rho=rng.uniform(0.5, 0.99, N),
                gamma=rng.uniform(0.05, 0.5, N), ga=rng.standard_normal(N))


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-11, atol=1e-12)


@K("lif_forward", "lif_backward", family="snn")
@pytest.mark.parametrize("refractory", [0, 2])
@pytest.mark.parametrize("delay", [True, False])
@pytest.mark.parametrize("reset", RESETS)
def test_lif_kernels(device, reset, delay, refractory):
    """Spikes exactly, the membrane, counter and trace, and every gradient (each surrogate,
    the reset detached or not, the trace stored or recomputed)."""
    from grilly.array import spiking

    for k, (name, (slope, _)) in enumerate(SURROGATES.items()):
        c = case(k)
        ref0 = np.random.default_rng(k).integers(0, 3, c["m0"].size).astype(float)
        ext = dict(refractory=refractory, s0=ref0) if refractory else {}
        spk, mem, ref, trace = np_forward(c["x"], c["m0"], c["beta"], c["thr"], reset, delay,
                                          **ext)
        X, M0, B, TH, GS, GM = (on(device, c[n]) for n in ("x", "m0", "beta", "thr", "gs", "gm"))
        R0 = on(device, ref0)
        kw = dict(reset=reset, reset_delay=delay, refractory=refractory,
                  ref0=R0 if refractory else None)
        res = spiking.lif_forward(X, M0, B, TH, **kw)
        np.testing.assert_array_equal(np.asarray(res[0]), spk)
        _close(res[1], mem)
        _close(res[2], trace)
        if refractory:
            np.testing.assert_array_equal(np.asarray(res[3]), ref)
        for detach in (True, False):
            want = np_backward(c["gs"], c["gm"], c["x"], c["m0"], c["beta"], c["thr"], reset,
                               delay, name, slope, detach, **ext)
            for tr in (res[2], None):   # stored, then recomputed
                got = spiking.lif_backward(GS, GM, X, M0, B, TH, tr, surrogate=name, slope=slope,
                                           detach_reset=detach, **kw)
                for g, w in zip(got, want[:4]):
                    _close(g, w)


@K("alif_forward", "alif_backward", family="snn")
@pytest.mark.parametrize("delay", [True, False])
@pytest.mark.parametrize("reset", RESETS)
def test_alif_kernels(device, reset, delay):
    """The adaptive-threshold neuron: spikes exactly, membrane, adaptation and trace, and the
    gradients of x, mem0, a0, beta and thr."""
    from grilly.array import spiking

    for k, (name, (slope, _)) in enumerate(SURROGATES.items()):
        c = case(10 + k)
        ext = dict(s0=c["s0"], rho=c["rho"], gamma=c["gamma"])
        spk, mem, a, trace = np_forward(c["x"], c["m0"], c["beta"], c["thr"], reset, delay, **ext)
        X, M0, A0, B, P, G, TH, GS, GM, GA = (
            on(device, c[n]) for n in ("x", "m0", "s0", "beta", "rho", "gamma", "thr", "gs", "gm",
                                       "ga"))
        kw = dict(reset=reset, reset_delay=delay)
        res = spiking.alif_forward(X, M0, A0, B, P, G, TH, **kw)
        np.testing.assert_array_equal(np.asarray(res[0]), spk)
        for got, want in zip(res[1:], (mem, a, trace)):
            _close(got, want)
        for detach in (True, False):
            gx, gm0, gb, gt, ga0 = np_backward(c["gs"], c["gm"], c["x"], c["m0"], c["beta"],
                                               c["thr"], reset, delay, name, slope, detach,
                                               ga=c["ga"], **ext)
            for tr in (res[3], None):
                got = spiking.alif_backward(GS, GM, GA, X, M0, A0, B, P, G, TH, tr, surrogate=name,
                                            slope=slope, detach_reset=detach, **kw)
                for g, w in zip(got, (gx, gm0, ga0, gb, gt)):
                    _close(g, w)
