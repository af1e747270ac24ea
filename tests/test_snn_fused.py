"""The fused multi-step LIF (grilly.array.spiking's lif_forward/lif_backward kernels and the
LIF/IF multi-step path over them) against a float64 numpy implementation of docs/snn.md's
equations and their backward through time, and against the per-step path, on every device."""
import math

import numpy as np
import pytest

import grilly as gp
from grilly.array import spiking
from grilly.autograd import gradcheck, grad, no_grad
from grilly import nn
from grilly.nn import snn
from grilly.nn.snn import fused as snn_fused

RESETS = ("subtract", "zero", "none")
SURR = {  # name: (slope, derivative in numpy)
    "atan": (2.0, lambda v, a: (a / 2) / (1 + (np.pi / 2 * a * v) ** 2)),
    "fast_sigmoid": (5.0, lambda v, a: 1 / (a * np.abs(v) + 1) ** 2),
    "sigmoid": (4.0, lambda v, a: a * np.exp(-a * v) / (1 + np.exp(-a * v)) ** 2),
    "triangle": (0.5, lambda v, a: np.maximum(0, 1 - np.abs(v) / a) / a),
    "straight_through": (1.0, lambda v, a: np.ones_like(v)),
}


# ---- the numpy reference (float64) -----------------------------------------------------------
def ref_forward(x, m0, beta, thr, reset, delay):
    """Spikes, final membrane and the pre-reset membrane trace of docs/snn.md's LIF."""
    u, spk, tr = m0.copy(), np.zeros_like(x), np.zeros_like(x)
    for t in range(x.shape[0]):
        if delay:
            r = (u > thr).astype(x.dtype)
            u = {"subtract": beta * u + x[t] - r * thr, "zero": beta * (1 - r) * u + x[t],
                 "none": beta * u + x[t]}[reset]
            tr[t], spk[t] = u, u > thr
        else:
            h = beta * u + x[t]
            s = (h > thr).astype(x.dtype)
            tr[t], spk[t] = h, s
            u = {"subtract": h - s * thr, "zero": h * (1 - s), "none": h}[reset]
    return spk, u, tr


def ref_backward(gs, gm, x, m0, beta, thr, reset, delay, surrogate, a):
    """dL/dx, dL/dmem0, dL/dbeta, dL/dthr (per neuron) for the reset detached from the graph."""
    _, _, tr = ref_forward(x, m0, beta, thr, reset, delay)
    sg = SURR[surrogate][1]
    T = x.shape[0]
    post = [{"subtract": h - (h > thr) * thr, "zero": h * (h <= thr), "none": h}[reset]
            for h in tr] if not delay else list(tr)
    gx, g = np.zeros_like(x), gm.copy()
    gb, gt = np.zeros_like(m0), np.zeros_like(m0)
    for t in range(T - 1, -1, -1):
        d = gs[t] * sg(tr[t] - thr, a)
        gt -= d
        up = post[t - 1] if t else m0
        if delay:
            r = (up > thr).astype(x.dtype)
            g = g + d
            keep = (1 - r) if reset == "zero" else 1.0
            gt -= g * r if reset == "subtract" else 0.0
            gb += g * keep * up
            gx[t], g = g, g * beta * keep
        else:
            s = (tr[t] > thr).astype(x.dtype)
            gt -= g * s if reset == "subtract" else 0.0
            gh = (g * (1 - s) if reset == "zero" else g) + d
            gb += gh * up
            gx[t], g = gh, gh * beta
    return gx, g, gb, gt


def _case(seed, T=9, N=13, dtype=np.float64):
    rng = np.random.default_rng(seed)
    x = rng.normal(0.4, 0.8, (T, N))
    m0 = rng.normal(0.0, 0.5, N)
    beta = rng.uniform(0.3, 1.0, N)
    thr = rng.uniform(0.7, 1.3, N)
    gs, gm = rng.standard_normal((T, N)), rng.standard_normal(N)
    return [v.astype(dtype) for v in (x, m0, beta, thr, gs, gm)]


def _on(dev, *arrays):
    return [gp.asarray(a, device=dev) for a in arrays]


def _np(x):
    return np.asarray(x.to_device("cpu"))


@pytest.mark.parametrize("delay", [True, False])
@pytest.mark.parametrize("reset", RESETS)
def test_kernels_match_numpy(reset, delay, device):
    for k, (name, (a, _)) in enumerate(SURR.items()):
        x, m0, beta, thr, gs, gm = _case(k)
        spk, mem, tr = ref_forward(x, m0, beta, thr, reset, delay)
        gx, gm0, gb, gt = ref_backward(gs, gm, x, m0, beta, thr, reset, delay, name, a)
        X, M0, B, TH, GS, GM = _on(device, x, m0, beta, thr, gs, gm)
        s, m, t = spiking.lif_forward(X, M0, B, TH, reset=reset, reset_delay=delay)
        np.testing.assert_array_equal(_np(s), spk)
        np.testing.assert_allclose(_np(m), mem, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(_np(t), tr, rtol=1e-13, atol=1e-13)
        for trace in (t, None):   # stored, then recomputed
            got = spiking.lif_backward(GS, GM, X, M0, B, TH, trace, reset=reset,
                                       reset_delay=delay, surrogate=name, slope=a)
            for g, w in zip(got, (gx, gm0, gb, gt)):
                np.testing.assert_allclose(_np(g), w, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("delay", [True, False])
@pytest.mark.parametrize("reset", RESETS)
def test_kernel_undetached_reset_matches_the_composition(reset, delay, device):
    """lif_backward with detach_reset=False: the device's kernel against the contract's
    composition (per-step array ops) on the cpu device."""
    from grilly.array import composites
    cpu = gp.backends.registry.device("cpu")
    for k, (name, (a, _)) in enumerate(SURR.items()):
        x, m0, beta, thr, gs, gm = _case(k)
        X, M0, B, TH, GS, GM = _on(device, x, m0, beta, thr, gs, gm)
        got = spiking.lif_backward(GS, GM, X, M0, B, TH, None, reset=reset, reset_delay=delay,
                                   surrogate=name, slope=a, detach_reset=False)
        want = composites.COMPOSITES["lif_backward"](
            cpu, *_on(cpu, gs, gm, x, m0, beta, thr), None, reset, delay, name, a, False)
        detached = spiking.lif_backward(GS, GM, X, M0, B, TH, None, reset=reset,
                                        reset_delay=delay, surrogate=name, slope=a)
        for g, w in zip(got, want):
            np.testing.assert_allclose(_np(g), _np(w), rtol=1e-11, atol=1e-12)
        if reset != "none" and name != "straight_through":   # the reset's slope matters
            assert any(not np.allclose(_np(g), _np(d)) for g, d in zip(got, detached))


def test_kernels_float32_and_no_trace(device):
    x, m0, beta, thr, gs, gm = _case(9, T=40, N=70)
    spk, mem, _ = ref_forward(x, m0, beta, thr, "subtract", True)
    X, M0, B, TH = _on(device, *(v.astype(np.float32) for v in (x, m0, beta, thr)))
    s, m, t = spiking.lif_forward(X, M0, B, TH, store=False)
    assert t is None and s.dtype == gp.float32
    # float32 rounding may flip a spike whose membrane is within rounding of the threshold
    assert np.mean(_np(s) != spk) < 0.01
    s64 = ref_forward(*(v.astype(np.float32).astype(np.float64) for v in (x, m0, beta, thr)),
                      "subtract", True)[0]
    assert np.mean(_np(s) != s64) < 0.01


def test_kernel_bad_arguments():
    x, m0, beta, thr, gs, gm = _on("cpu", *_case(0))
    with pytest.raises(ValueError, match="lif_forward: mem0 must have shape"):
        spiking.lif_forward(x, m0[:3], beta, thr)
    with pytest.raises(TypeError, match="lif_forward: x must be a real floating"):
        spiking.lif_forward(gp.astype(x, gp.int32), m0, beta, thr)
    with pytest.raises(TypeError, match="lif_forward: beta must have x's dtype"):
        spiking.lif_forward(x, m0, gp.astype(beta, gp.float32), thr)
    with pytest.raises(ValueError, match="lif_forward: reset must be one of"):
        spiking.lif_forward(x, m0, beta, thr, reset="hard")
    with pytest.raises(TypeError, match="lif_forward: expected a grilly Array for 'x'"):
        spiking.lif_forward(np.zeros((2, 13)), m0, beta, thr)
    with pytest.raises(ValueError, match="lif_backward: surrogate must be one of"):
        spiking.lif_backward(gs, gm, x, m0, beta, thr, None, surrogate="relu")
    with pytest.raises(ValueError, match="lif_backward: slope must be > 0"):
        spiking.lif_backward(gs, gm, x, m0, beta, thr, None, slope=0.0)
    with pytest.raises(ValueError, match="lif_backward: grad_spikes must have shape"):
        spiking.lif_backward(gm, gm, x, m0, beta, thr, None)


def _ref_leaky(x, s0, alpha, reverse):
    out, s = np.empty_like(x), s0.copy()
    for t in (range(len(x) - 1, -1, -1) if reverse else range(len(x))):
        s = alpha * s + x[t]
        out[t] = s
    return out


@pytest.mark.parametrize("reverse", [False, True])
def test_leaky_integrate_kernel(reverse, device):
    rng = np.random.default_rng(8)
    x, s0, al = rng.standard_normal((9, 300)), rng.standard_normal(300), rng.random(300)
    for dt in (np.float64, np.float32):
        got = spiking.leaky_integrate(*(gp.asarray(v.astype(dt), device=device)
                                        for v in (x, s0, al)), reverse=reverse)
        assert got.dtype == gp.asarray(x.astype(dt)).dtype and got.shape == x.shape
        want = _ref_leaky(*(v.astype(dt) for v in (x, s0, al)), reverse)
        np.testing.assert_array_equal(np.asarray(got), want)   # the same operations, in order
    with pytest.raises(ValueError, match="leaky_integrate: alpha must have shape"):
        spiking.leaky_integrate(gp.asarray(x, device=device), gp.asarray(s0, device=device),
                                gp.asarray(al[:5], device=device))
    with pytest.raises(TypeError, match="leaky_integrate: x must be a real floating"):
        spiking.leaky_integrate(gp.asarray(x[0], device=device), gp.asarray(s0, device=device),
                                gp.asarray(al, device=device))


# ---- the layer: fused equals the per-step path -------------------------------------------------
def _run_layer(make, xs, w, device, fused, calls=1, **grad_of):
    lif = make(fused)
    lif.to(device)
    x = gp.asarray(xs, device=device)
    x.requires_grad_()
    loss, spikes = 0.0, []
    for _ in range(calls):   # the state carries over: BPTT across calls
        s = lif(x)
        spikes.append(_np(s))
        loss = loss + gp.sum(s * gp.asarray(w, device=device)) + gp.sum(0.3 * lif.state[0])
    params = [x] + [getattr(lif, "_" + p) for p in grad_of]
    return spikes, [_np(g) for g in grad(loss, params)]


@pytest.mark.parametrize("detach", [True, False])
@pytest.mark.parametrize("delay", [True, False])
@pytest.mark.parametrize("reset", RESETS)
def test_layer_fused_equals_per_step(reset, delay, detach, device):
    rng = np.random.default_rng(3)
    xs = rng.normal(0.4, 0.8, (15, 2, 6))
    w = rng.standard_normal(xs.shape)
    for k, name in enumerate(SURR):
        make_sg = getattr(snn.surrogate, name)
        sg = make_sg() if name == "straight_through" else make_sg(SURR[name][0])
        beta = rng.uniform(0.4, 1.0, 6).tolist()

        def make(fused):
            return snn.LIF(beta, 0.9, reset=reset, reset_delay=delay, surrogate=sg,
                           detach_reset=detach, learn_beta=True, learn_threshold=True,
                           step_mode="m", fused=fused, recompute=bool(k % 2),
                           dtype=gp.float64)
        a = _run_layer(make, xs, w, device, True, calls=2, beta=1, threshold=1)
        b = _run_layer(make, xs, w, device, False, calls=2, beta=1, threshold=1)
        for sa, sb in zip(a[0], b[0]):
            np.testing.assert_array_equal(sa, sb)
        for ga, gb in zip(a[1], b[1]):
            np.testing.assert_allclose(ga, gb, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("detach", [True, False])
@pytest.mark.parametrize("delay", [True, False])
@pytest.mark.parametrize("reset", RESETS)
def test_synaptic_fused_equals_per_step(reset, delay, detach, device):
    rng = np.random.default_rng(9)
    xs = rng.normal(0.3, 0.7, (12, 2, 5))
    w = rng.standard_normal(xs.shape)
    alpha = rng.uniform(0.3, 0.95, 5).tolist()

    def make(fused):
        return snn.Synaptic(alpha, 0.85, 0.9, reset=reset, reset_delay=delay,
                            detach_reset=detach,
                            surrogate=snn.surrogate.fast_sigmoid(10.0), learn_alpha=True,
                            learn_beta=True, learn_threshold=True, step_mode="m", fused=fused,
                            dtype=gp.float64)

    def run(fused):
        syn = make(fused).to(device)
        x = gp.asarray(xs, device=device)
        x.requires_grad_()
        loss, spikes = 0.0, []
        for _ in range(2):   # the state (current and membrane) carries over between calls
            s = syn(x)
            spikes.append(np.asarray(s))
            loss = loss + gp.sum(s * gp.asarray(w, device=device)) \
                + gp.sum(0.3 * syn.state[1]) + gp.sum(0.2 * syn.state[0])
        params = [x, syn._alpha, syn._beta, syn._threshold]
        return spikes, [np.asarray(g) for g in grad(loss, params)]

    a, b = run(True), run(False)
    for sa, sb in zip(a[0], b[0]):
        np.testing.assert_array_equal(sa, sb)
    for ga, gb in zip(a[1], b[1]):
        np.testing.assert_allclose(ga, gb, rtol=1e-11, atol=1e-12)


def test_synaptic_fused_path_taken(monkeypatch):
    calls = []
    real = spiking.leaky_integrate

    def spy(*a, **k):
        calls.append(k.get("reverse", False))
        return real(*a, **k)
    monkeypatch.setattr(snn_fused.spiking, "leaky_integrate", spy)
    x = gp.asarray(np.random.default_rng(6).random((5, 2, 3)), dtype=gp.float32)
    x.requires_grad_()
    gp.sum(snn.Synaptic(0.8, 0.9, step_mode="m")(x)).backward()
    assert calls == [False, True]   # one scan forward, one in reverse for backward
    snn.Synaptic(0.8, 0.9, step_mode="m", fused=False)(x)
    snn.Synaptic(0.8, 0.9, step_mode="m", return_mem=True, reset="zero")(x)   # per step
    assert calls == [False, True]


def test_if_and_float32_fused(device):
    rng = np.random.default_rng(4)
    xs = rng.normal(0.2, 0.6, (30, 4, 8)).astype(np.float32)
    w = rng.standard_normal(xs.shape).astype(np.float32)
    for make in (lambda f: snn.IF(1.0, step_mode="m", fused=f),
                 lambda f: snn.LIF(0.8, step_mode="m", fused=f, learn_threshold=True)):
        a = _run_layer(make, xs, w, device, True)
        b = _run_layer(make, xs, w, device, False)
        np.testing.assert_array_equal(a[0][0], b[0][0])
        np.testing.assert_allclose(a[1][0], b[1][0], rtol=1e-5, atol=1e-5)


def test_gradcheck_membrane_path(device):
    """The final membrane is piecewise linear in x, beta, thr (resets detached): central
    differences check that path of the fused backward exactly."""
    rng = np.random.default_rng(5)
    x = gp.asarray(rng.normal(0.3, 0.3, (6, 2, 3)), device=device)
    beta = gp.asarray([0.6, 0.8, 0.9], device=device)
    thr = gp.asarray([0.9], device=device)
    for reset in RESETS:
        for delay in (True, False):
            def f(x, beta, thr):
                return snn_fused.lif_sequence(x, gp.zeros_like(x[0]), beta, thr, reset=reset,
                                              reset_delay=delay, surrogate=snn.surrogate.atan())[1]
            assert gradcheck(f, (x, beta, thr), eps=1e-6, atol=1e-7, rtol=1e-5)


def test_fused_path_taken_and_what_it_stores(monkeypatch):
    calls = []
    real = spiking.lif_forward

    def spy(*a, **k):
        calls.append(k["store"])
        return real(*a, **k)
    monkeypatch.setattr(snn_fused.spiking, "lif_forward", spy)
    x = gp.asarray(np.random.default_rng(6).random((5, 2, 3)), dtype=gp.float32)
    lif = snn.LIF(0.9, step_mode="m")
    with no_grad():
        lif(x)
    x.requires_grad_()
    snn.reset(lif)
    lif(x)
    snn.reset(lif)
    snn.LIF(0.9, step_mode="m", recompute=True)(x)
    assert calls == [False, True, False]   # no grad or recompute: no trace kept
    # options the kernels do not cover run per step
    for kw in (dict(refractory=2), dict(return_mem=True, detach_reset=False),
               dict(return_mem=True, reset_delay=False),
               dict(surrogate=lambda v: snn.surrogate.atan()(v))):
        snn.LIF(0.9, step_mode="m", **kw)(x)
    assert len(calls) == 3


def test_sequential_trains_with_fused_lif(device):
    rng = np.random.default_rng(8)
    model = nn.Sequential(nn.Linear(6, 5), snn.LIF(0.8, step_mode="m"))
    model.to(device)
    x = gp.asarray(rng.random((10, 3, 6)).astype(np.float32), device=device)
    out = model(x)
    gp.sum(out).backward()
    w = model[0].weight
    assert w.grad is not None and w.grad.shape == w.shape
    assert math.isfinite(float(gp.sum(w.grad)))


@pytest.mark.parametrize("reset", ["subtract", "none"])
@pytest.mark.parametrize("layer", ["LIF", "Synaptic"])
def test_return_mem_fused_equals_per_step(reset, layer, device, monkeypatch):
    """return_mem=True (snnTorch's membrane readout) on the fused path: the membrane trace and
    every gradient through it (input, carried state, learnable beta/alpha and threshold) equal
    the per-step path's; the fused kernels ran."""
    from grilly.array import spiking
    rng = np.random.default_rng(11)
    xs = rng.normal(0.4, 0.8, (13, 2, 5))
    w, wm = rng.standard_normal(xs.shape), rng.standard_normal(xs.shape)
    beta = rng.uniform(0.5, 0.95, 5).tolist()

    def make(fused):
        kw = dict(reset=reset, surrogate=snn.surrogate.atan(2.0), learn_beta=True,
                  learn_threshold=True, step_mode="m", fused=fused, return_mem=True,
                  dtype=gp.float64)
        if layer == "LIF":
            return snn.LIF(beta, 0.9, **kw)
        return snn.Synaptic(0.8, beta, 0.9, learn_alpha=True, **kw)

    def run(fused):
        calls = []
        real = spiking.lif_forward
        monkeypatch.setattr(spiking, "lif_forward",
                            lambda *a, **k: calls.append(1) or real(*a, **k))
        m = make(fused).to(device)
        x = gp.asarray(xs, device=device)
        x.requires_grad_()
        loss, outs = 0.0, []
        for _ in range(2):   # the final membrane carries over into the second call
            s, mem = m(x)
            outs += [np.asarray(s), np.asarray(mem)]
            loss = loss + gp.sum(s * gp.asarray(w, device=device)) \
                + gp.sum(mem * gp.asarray(wm, device=device))
        params = [x, m._beta, m._threshold] + ([m._alpha] if layer == "Synaptic" else [])
        monkeypatch.setattr(spiking, "lif_forward", real)
        return outs, [np.asarray(g) for g in grad(loss, params)], len(calls)

    a, b = run(True), run(False)
    assert a[2] == 2 and b[2] == 0
    for oa, ob in zip(a[0], b[0]):
        np.testing.assert_array_equal(oa, ob)
    for ga, gb in zip(a[1], b[1]):
        np.testing.assert_allclose(ga, gb, rtol=1e-10, atol=1e-11)


def test_return_mem_zero_reset_runs_per_step():
    """A zero reset's trace gradient is not one leaky scan: that option stays per step."""
    from grilly.nn.snn import fused
    x = gp.zeros((3, 2))
    assert not fused.supported(x, snn.surrogate.atan(), detach_reset=True, refractory=0,
                               return_mem=True, reset="zero", reset_delay=True)
    assert not fused.supported(x, snn.surrogate.atan(), detach_reset=True, refractory=0,
                               return_mem=True, reset="subtract", reset_delay=False)
    assert fused.supported(x, snn.surrogate.atan(), detach_reset=True, refractory=0,
                           return_mem=True, reset="subtract", reset_delay=True)
