"""The fused multi-step LIF (grilly.array.spiking's lif_forward/lif_backward kernels, with and
without a refractory period, alif_forward/alif_backward, and the LIF/IF/Synaptic/AdaptiveLIF
multi-step paths over them) against a float64 numpy implementation of docs/snn.md's equations
and their backward through time, and against the per-step path, on every device."""
import math

import numpy as np
import pytest

import grilly as gp
from grilly.array import spiking
from grilly.autograd import gradcheck, grad, no_grad
from grilly import nn
from grilly.nn import snn
from grilly.nn.snn import fused as snn_fused
from grilly.testing.suite.test_snn import case as ext_case
from grilly.testing.suite.test_snn import np_backward, np_forward

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


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("reset", RESETS)
def test_kernels_read_parameter_views(reset, packed, device, monkeypatch):
    """Broadcast (stride 0) and strided parameter rows, as a layer with a shared beta and
    threshold passes them: read in place where the device binds each row (Vulkan with 8
    bindings), or packed by copies (``packed``: the 4-binding layout), against numpy."""
    x, m0, beta, thr, gs, gm = _case(7, T=11, N=40)
    beta[:], thr[:] = 0.8, 1.1
    X, GS = _on(device, x, gs)
    M0 = gp.asarray(np.stack([m0, -m0], 1), device=device)[:, 0]        # stride 2
    GM = gp.asarray(np.stack([-gm, gm], 1), device=device)[:, 1]
    B = gp.broadcast_to(gp.asarray(0.8, device=device), (40,))          # stride 0
    TH = gp.broadcast_to(gp.asarray(np.array([1.1]), device=device), (40,))
    if packed and str(device).startswith("vulkan"):
        from grilly.backends.vulkan import snn as vk_snn
        monkeypatch.setattr(vk_snn, "SEPARATE", False)
    spk, mem, tr = ref_forward(x, m0, beta, thr, reset, True)
    s, m, t = spiking.lif_forward(X, M0, B, TH, reset=reset)
    np.testing.assert_array_equal(_np(s), spk)
    np.testing.assert_allclose(_np(m), mem, rtol=1e-13, atol=1e-13)
    want = ref_backward(gs, gm, x, m0, beta, thr, reset, True, "atan", 2.0)
    for trace in (t, None):
        got = spiking.lif_backward(GS, GM, X, M0, B, TH, trace, reset=reset)
        for g, w in zip(got, want):
            np.testing.assert_allclose(_np(g), w, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("reset", RESETS)
def test_kernel_broadcast_spike_gradients(reset, device):
    """A loss over the steps hands the backward a broadcast gradient: one row for every step
    (a sum over time), or one value (a sum over everything). The kernels read it as it is and
    give the numpy reference's gradients, for the plain, refractory and adaptive neurons."""
    x, m0, beta, thr, _, gm = _case(3, T=11, N=37)
    rng = np.random.default_rng(5)
    row, val = rng.standard_normal(37), np.float64(rng.standard_normal())
    for gs_np, gs_dev in ((np.broadcast_to(row, (11, 37)),
                           gp.broadcast_to(gp.asarray(row, device=device), (11, 37))),
                          (np.broadcast_to(val, (11, 37)),
                           gp.broadcast_to(gp.asarray(val, device=device), (11, 37)))):
        want = ref_backward(np.ascontiguousarray(gs_np), gm, x, m0, beta, thr, reset, True,
                            "atan", 2.0)
        X, M0, B, TH, GM = _on(device, x, m0, beta, thr, gm)
        got = spiking.lif_backward(gs_dev, GM, X, M0, B, TH, None, reset=reset)
        for g, w in zip(got, want):
            np.testing.assert_allclose(_np(g), w, rtol=1e-11, atol=1e-12)
        # the other neurons: a broadcast and a contiguous gradient give the same result
        GS = gp.asarray(np.ascontiguousarray(gs_np), device=device)
        S0 = gp.asarray(np.zeros(37), device=device)
        ref = dict(reset=reset, refractory=2, ref0=S0)
        for a, b in zip(spiking.lif_backward(gs_dev, GM, X, M0, B, TH, None, **ref),
                        spiking.lif_backward(GS, GM, X, M0, B, TH, None, **ref)):
            np.testing.assert_array_equal(_np(a), _np(b))
        P, G = _on(device, np.full(37, 0.9), np.full(37, 0.2))
        for a, b in zip(spiking.alif_backward(gs_dev, GM, GM, X, M0, S0, B, P, G, TH, None,
                                              reset=reset),
                        spiking.alif_backward(GS, GM, GM, X, M0, S0, B, P, G, TH, None,
                                              reset=reset)):
            np.testing.assert_array_equal(_np(a), _np(b))


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


def test_kernels_across_cpu_blocks():
    """N = 2 blocks of the CPU kernels' neuron blocking + 37: every neuron of every block
    forward and backward against the numpy reference (plain LIF, and refractory/adaptive)."""
    from grilly.backends.cpu_numba import snn as cpu_snn
    N = 2 * cpu_snn.BLOCK + 37
    x, m0, beta, thr, gs, gm = _case(7, T=4, N=N)
    spk, mem, tr = ref_forward(x, m0, beta, thr, "subtract", True)
    gx, gm0, gb, gt = ref_backward(gs, gm, x, m0, beta, thr, "subtract", True, "atan", 2.0)
    X, M0, B, TH, GS, GM = _on("cpu", x, m0, beta, thr, gs, gm)
    s, m, t = spiking.lif_forward(X, M0, B, TH, reset="subtract", reset_delay=True)
    np.testing.assert_array_equal(_np(s), spk)
    np.testing.assert_allclose(_np(m), mem, rtol=1e-13, atol=1e-13)
    got = spiking.lif_backward(GS, GM, X, M0, B, TH, t, reset="subtract", reset_delay=True,
                               surrogate="atan", slope=2.0)
    for g, w in zip(got, (gx, gm0, gb, gt)):
        np.testing.assert_allclose(_np(g), w, rtol=1e-11, atol=1e-12)
    c = ext_case(8, T=4, N=N)
    ext = _ext_args("adaptive", c)
    want_spk, want_mem, want_s, _ = np_forward(c["x"], c["m0"], c["beta"], c["thr"],
                                               "subtract", True, **ext)
    X, M0, B, TH, S0, P, G = _on("cpu", c["x"], c["m0"], c["beta"], c["thr"], ext["s0"],
                                 ext["rho"], ext["gamma"])
    got = spiking.alif_forward(X, M0, S0, B, P, G, TH, reset="subtract", reset_delay=True)
    for g, w in zip(got[:3], (want_spk, want_mem, want_s)):
        np.testing.assert_allclose(_np(g), w, rtol=1e-13, atol=1e-13)


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
    for kw in (dict(return_mem=True, detach_reset=False),
               dict(return_mem=True, reset_delay=False),
               dict(surrogate=lambda v: snn.surrogate.atan()(v))):
        snn.LIF(0.9, step_mode="m", **kw)(x)
    assert len(calls) == 3
    # a refractory period runs fused, the counter's trace stored with the membrane's
    snn.LIF(0.9, step_mode="m", refractory=2)(x)
    snn.IF(step_mode="m", refractory=1, recompute=True)(x)
    assert calls == [False, True, False, True, False]
    # AdaptiveLIF: its own kernels; per step with fused=False or a custom surrogate
    real_a = spiking.alif_forward
    monkeypatch.setattr(snn_fused.spiking, "alif_forward",
                        lambda *a, **k: calls.append(("alif", k["store"])) or real_a(*a, **k))
    snn.AdaptiveLIF(0.9, step_mode="m")(x)
    snn.AdaptiveLIF(0.9, step_mode="m", recompute=True)(x)
    snn.AdaptiveLIF(0.9, step_mode="m", fused=False)(x)
    snn.AdaptiveLIF(0.9, step_mode="m", surrogate=lambda v: snn.surrogate.atan()(v))(x)
    assert calls[5:] == [("alif", True), ("alif", False)]


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
    assert not fused.supported(x, snn.surrogate.atan(), detach_reset=True, return_mem=True,
                               reset="zero", reset_delay=True)
    assert not fused.supported(x, snn.surrogate.atan(), detach_reset=True, return_mem=True,
                               reset="subtract", reset_delay=False)
    assert fused.supported(x, snn.surrogate.atan(), detach_reset=True, return_mem=True,
                           reset="subtract", reset_delay=True)


# ---- a second state: the refractory counter (LIF/IF) and the adaptive threshold (AdaptiveLIF) --
# the numpy reference of docs/snn.md's equations and their BPTT is the conformance kit's
# (np_forward, np_backward, ext_case)
KINDS = ("refractory", "adaptive")


def _ext_args(kind, c, refractory=2):
    """np_forward/np_backward's keyword arguments of a kind (the counter starts in 0..2)."""
    if kind == "refractory":
        ref0 = np.random.default_rng(1).integers(0, 3, c["m0"].size).astype(float)
        return dict(refractory=refractory, s0=ref0)
    return dict(s0=c["s0"], rho=c["rho"], gamma=c["gamma"])


def _per_step(c, ext, reset, delay, detach, sg):
    """The per-step path (grilly.nn.snn.functional, float64 autograd on cpu): spikes, final
    membrane and second state, and the gradients of sum(gs spikes) + sum(gm mem) (+ sum(ga a))
    in x, mem0, beta, thr (and a0)."""
    X, M0, B, TH = (gp.asarray(c[n]) for n in ("x", "m0", "beta", "thr"))
    S0 = gp.asarray(ext["s0"])
    wrt = [X, M0, B, TH] + ([S0] if "rho" in ext else [])
    for v in wrt:
        v.requires_grad_()
    u, s, spikes = M0, S0, []
    for t in range(c["x"].shape[0]):
        if "rho" in ext:
            spk, u, s = snn.functional.adaptive_lif_step(
                X[t], u, s, beta=B, rho=gp.asarray(ext["rho"]), gamma=gp.asarray(ext["gamma"]),
                threshold=TH, reset=reset, surrogate=sg, detach_reset=detach, reset_delay=delay)
        else:
            active = gp.astype(s <= 0, X.dtype)
            spk, u, _ = snn.functional._fire(X[t], u, B, TH, TH, reset, sg, detach, delay, False,
                                             active)
            s = snn.functional._count_down(s, spk, ext["refractory"])
        spikes.append(spk)
    spk = gp.stack(spikes)
    loss = gp.sum(spk * gp.asarray(c["gs"])) + gp.sum(u * gp.asarray(c["gm"]))
    if "rho" in ext:
        loss = loss + gp.sum(s * gp.asarray(c["ga"]))
    return _np(spk), _np(u), _np(s), [_np(g) for g in grad(loss, wrt)]


def _surrogates():
    for name, (a, _) in SURR.items():
        make = getattr(snn.surrogate, name)
        yield name, a, (make() if name == "straight_through" else make(a))


@pytest.mark.parametrize("detach", [True, False])
@pytest.mark.parametrize("delay", [True, False])
@pytest.mark.parametrize("reset", RESETS)
@pytest.mark.parametrize("kind", KINDS)
def test_numpy_reference_is_the_per_step_path(kind, reset, delay, detach):
    """The numpy reference (the kit's np_forward/np_backward) equals grilly's per-step code:
    spikes and states exactly, every gradient to 1e-12 (float64), each surrogate."""
    for k, (name, a, sg) in enumerate(_surrogates()):
        c = ext_case(20 + k)
        ext = _ext_args(kind, c)
        spk, mem, s, grads = _per_step(c, ext, reset, delay, detach, sg)
        want_spk, want_mem, want_s, _ = np_forward(c["x"], c["m0"], c["beta"], c["thr"], reset,
                                                   delay, **ext)
        np.testing.assert_array_equal(spk, want_spk)
        np.testing.assert_array_equal(mem, want_mem)
        np.testing.assert_array_equal(s, want_s)
        want = np_backward(c["gs"], c["gm"], c["x"], c["m0"], c["beta"], c["thr"], reset, delay,
                           name, a, detach, ga=c["ga"] if kind == "adaptive" else None, **ext)
        for g, w in zip(grads, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("delay", [True, False])
@pytest.mark.parametrize("reset", RESETS)
@pytest.mark.parametrize("kind", KINDS)
def test_ext_kernels_match_numpy(kind, reset, delay, device):
    """The device's kernels on N = 300 neurons and T = 17 against the numpy
    reference, the reset detached or not, the trace stored or recomputed; float32 spikes match
    float32 per-step arithmetic."""
    for k, (name, a, _) in enumerate(_surrogates()):
        c = ext_case(30 + k, T=17, N=300)
        ext = _ext_args(kind, c, refractory=1 + k % 3)
        spk, mem, s, trace = np_forward(c["x"], c["m0"], c["beta"], c["thr"], reset, delay, **ext)
        X, M0, B, TH, GS, GM, GA, S0 = _on(device, c["x"], c["m0"], c["beta"], c["thr"], c["gs"],
                                           c["gm"], c["ga"], ext["s0"])
        kw = dict(reset=reset, reset_delay=delay)
        if kind == "refractory":
            kw.update(refractory=ext["refractory"], ref0=S0)
            got_spk, got_mem, got_tr, got_s = spiking.lif_forward(X, M0, B, TH, **kw)
        else:
            P, G = _on(device, ext["rho"], ext["gamma"])
            got_spk, got_mem, got_s, got_tr = spiking.alif_forward(X, M0, S0, B, P, G, TH, **kw)
        np.testing.assert_array_equal(_np(got_spk), spk)
        np.testing.assert_array_equal(_np(got_s), s)
        np.testing.assert_allclose(_np(got_mem), mem, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(_np(got_tr), trace, rtol=1e-13, atol=1e-13)
        assert got_tr.shape == (2, 17, 300)
        for detach in (True, False):
            want = np_backward(c["gs"], c["gm"], c["x"], c["m0"], c["beta"], c["thr"], reset,
                               delay, name, a, detach, ga=c["ga"], **ext)
            for tr in (got_tr, None):
                if kind == "refractory":
                    got = spiking.lif_backward(GS, GM, X, M0, B, TH, tr, surrogate=name, slope=a,
                                               detach_reset=detach, **kw)
                    want4 = want[:4]
                else:
                    got = spiking.alif_backward(GS, GM, GA, X, M0, S0, B, P, G, TH, tr,
                                                surrogate=name, slope=a, detach_reset=detach,
                                                **kw)
                    want4 = (want[0], want[1], want[4], want[2], want[3])
                for g, w in zip(got, want4):
                    np.testing.assert_allclose(_np(g), w, rtol=1e-11, atol=1e-12)
    # float32: the same float32 operations as the per-step path, so the same spikes
    c32 = {n: v.astype(np.float32) for n, v in ext_case(40, T=30, N=64).items()}
    ext = {n: (v.astype(np.float32) if isinstance(v, np.ndarray) else v)
           for n, v in _ext_args(kind, c32).items()}
    want_spk, want_mem, want_s, _ = np_forward(c32["x"], c32["m0"], c32["beta"], c32["thr"],
                                               reset, delay, **ext)
    assert want_spk.dtype == np.float32
    X, M0, B, TH, S0 = _on(device, c32["x"], c32["m0"], c32["beta"], c32["thr"], ext["s0"])
    if kind == "refractory":
        got = spiking.lif_forward(X, M0, B, TH, reset=reset, reset_delay=delay, store=False,
                                  refractory=ext["refractory"], ref0=S0)
        assert got[2] is None
        got = (got[0], got[1], got[3])
    else:
        P, G = _on(device, ext["rho"], ext["gamma"])
        got = spiking.alif_forward(X, M0, S0, B, P, G, TH, reset=reset, reset_delay=delay,
                                   store=False)
        assert got[3] is None
    for g, w in zip(got, (want_spk, want_mem, want_s)):
        np.testing.assert_array_equal(_np(g), w)


def _spy(monkeypatch, names=("lif_forward", "alif_forward", "lif_backward", "alif_backward")):
    """Count the fused kernels' calls (grilly.array.spiking as the layers call it)."""
    calls = []
    for n in names:
        real = getattr(spiking, n)
        monkeypatch.setattr(snn_fused.spiking, n,
                            lambda *a, _r=real, _n=n, **k: calls.append(_n) or _r(*a, **k))
    return calls


def _run_ext(make, xs, w, wm, device, fused, calls=2, switch=False):
    """Spikes (and membrane traces), the final state and the gradients of a loss on the spikes,
    the membrane traces and the carried state, over ``calls`` calls (BPTT across them); with
    ``switch`` the calls after the first run per step."""
    m = make(fused).to(device)
    x = gp.asarray(xs, device=device)
    x.requires_grad_()
    loss, outs = 0.0, []
    for i in range(calls):
        if switch and i:
            m.fused = False
        o = m(x)
        s = o[0] if m.return_mem else o
        outs.append(_np(s))
        if m.return_mem:
            outs.append(_np(o[1]))
            loss = loss + gp.sum(o[1] * gp.asarray(wm, device=device))
        loss = loss + gp.sum(s * gp.asarray(w, device=device)) + gp.sum(0.3 * m.state[0])
        if isinstance(m, snn.AdaptiveLIF):   # the adaptation carries a gradient too
            loss = loss + gp.sum(0.7 * m.state[1])
    outs += [_np(v) for v in m.state]
    return outs, [_np(g) for g in grad(loss, [x, m._beta, m._threshold])]


def _make_ext(kind, reset, delay, detach, sg, k, rng, return_mem=False, **kw):
    beta = rng.uniform(0.4, 1.0, 6).tolist()
    rho = rng.uniform(0.5, 0.99, 6)

    def make(fused, second_state=True):
        common = dict(reset=reset, reset_delay=delay, surrogate=sg, detach_reset=detach,
                      learn_beta=True, learn_threshold=True, step_mode="m", fused=fused,
                      recompute=bool(k % 2), return_mem=return_mem, dtype=gp.float64)
        common.update(kw)
        if kind == "refractory":
            return snn.LIF(beta, 0.9, refractory=(1 + k % 3) * second_state, **common)
        return snn.AdaptiveLIF(beta, 0.9, rho=gp.asarray(rho), gamma=0.3 * second_state,
                               **common)
    return make


@pytest.mark.parametrize("detach", [True, False])
@pytest.mark.parametrize("delay", [True, False])
@pytest.mark.parametrize("reset", RESETS)
@pytest.mark.parametrize("kind", KINDS)
def test_ext_layer_fused_equals_per_step(kind, reset, delay, detach, device, monkeypatch):
    """LIF with a refractory period and AdaptiveLIF, multi-step: the fused kernels' spikes,
    membrane traces (return_mem where the fused path has it) and final state (membrane and
    counter / adaptation) equal the per-step path's, and so do the gradients of x, a learnable
    per-neuron beta and threshold, through two calls (the state carried); the kernels ran."""
    rng = np.random.default_rng(3)
    xs = rng.normal(0.5, 0.9, (15, 2, 6))
    w, wm = rng.standard_normal(xs.shape), rng.standard_normal(xs.shape)
    for k, (name, _, sg) in enumerate(_surrogates()):
        rm = k % 2 == 0 and delay and detach and reset != "zero"
        make = _make_ext(kind, reset, delay, detach, sg, k, rng, return_mem=rm)
        calls = _spy(monkeypatch)
        a = _run_ext(make, xs, w, wm, device, True)
        n_fused = len(calls)
        b = _run_ext(make, xs, w, wm, device, False)
        assert n_fused == 4 and len(calls) == 4   # 2 forward + 2 backward calls, all fused
        for oa, ob in zip(a[0], b[0]):
            np.testing.assert_array_equal(oa, ob)
        for ga, gb in zip(a[1], b[1]):
            np.testing.assert_allclose(ga, gb, rtol=1e-11, atol=1e-12)
        # the second state matters here: without it (no refractory period, gamma 0) the
        # spikes differ
        plain = make(True, second_state=False).to(device)(gp.asarray(xs, device=device))
        assert not np.array_equal(_np(plain[0] if rm else plain), a[0][0])
        monkeypatch.undo()


@pytest.mark.parametrize("kind", KINDS)
def test_ext_state_carries_between_fused_and_per_step(kind, device):
    """A fused call leaves the per-step path's state (membrane and counter / adaptation): a
    per-step call after it continues exactly, forward and backward."""
    rng = np.random.default_rng(12)
    xs = rng.normal(0.5, 0.9, (11, 3, 6))
    w, wm = rng.standard_normal(xs.shape), rng.standard_normal(xs.shape)
    make = _make_ext(kind, "subtract", True, True, snn.surrogate.atan(), 0, rng)
    a = _run_ext(make, xs, w, wm, device, True, calls=3, switch=True)
    b = _run_ext(make, xs, w, wm, device, False, calls=3)
    for oa, ob in zip(a[0], b[0]):
        np.testing.assert_array_equal(oa, ob)
    for ga, gb in zip(a[1], b[1]):
        np.testing.assert_allclose(ga, gb, rtol=1e-11, atol=1e-12)
    # the state's dtype and shape are the per-step path's; the counter carries no gradient
    m = make(True).to(device)
    m(gp.asarray(xs, device=device))
    assert [s.shape for s in m.state] == [(3, 6), (3, 6)]
    assert all(s.dtype == gp.float64 for s in m.state)
    if kind == "refractory":
        assert not m.state[1].requires_grad


@pytest.mark.parametrize("kind", KINDS)
def test_ext_float32_fused(kind, device):
    """float32: spikes equal the per-step path's bit for bit; gradients to float32 rounding."""
    rng = np.random.default_rng(14)
    xs = rng.normal(0.3, 0.7, (30, 4, 8)).astype(np.float32)
    w = rng.standard_normal(xs.shape).astype(np.float32)

    def make(fused):
        if kind == "refractory":
            return snn.LIF(0.8, refractory=2, learn_threshold=True, step_mode="m", fused=fused)
        return snn.AdaptiveLIF(0.8, rho=0.9, gamma=0.2, learn_threshold=True, step_mode="m",
                               fused=fused)
    a = _run_layer(make, xs, w, device, True, calls=2)
    b = _run_layer(make, xs, w, device, False, calls=2)
    for sa, sb in zip(a[0], b[0]):
        np.testing.assert_array_equal(sa, sb)
    np.testing.assert_allclose(a[1][0], b[1][0], rtol=1e-5, atol=1e-5)


def test_ext_gradcheck_membrane_path(device):
    """With the resets detached and the refractory mask constant, the final membrane (and the
    final adaptation) are piecewise linear in x, beta, thr (and a0): central differences check
    those paths of the fused backward."""
    rng = np.random.default_rng(5)
    x = gp.asarray(rng.normal(0.5, 0.4, (7, 2, 3)), device=device)
    beta = gp.asarray([0.6, 0.8, 0.9], device=device)
    thr = gp.asarray([0.9], device=device)
    a0 = gp.asarray(rng.uniform(0, 1, (2, 3)), device=device)
    ref0 = gp.asarray([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]], device=device)
    for reset in RESETS:
        for delay in (True, False):
            def lif(x, beta, thr):
                return snn_fused.lif_sequence(x, gp.zeros_like(x[0]), beta, thr, reset=reset,
                                              reset_delay=delay, surrogate=snn.surrogate.atan(),
                                              refractory=2, ref0=ref0)[1]

            def alif(x, a0, beta, thr):
                _, mem, a = snn_fused.alif_sequence(
                    x, gp.zeros_like(x[0]), a0, beta, thr, rho=0.8, gamma=0.4, reset=reset,
                    reset_delay=delay, surrogate=snn.surrogate.atan())
                return mem + 0.5 * a
            assert gradcheck(lif, (x, beta, thr), eps=1e-6, atol=1e-7, rtol=1e-5)
            assert gradcheck(alif, (x, a0, beta, thr), eps=1e-6, atol=1e-7, rtol=1e-5)


def test_ext_kernel_bad_arguments():
    c = ext_case(0)
    x, m0, beta, thr, gs, gm, a0 = _on("cpu", c["x"], c["m0"], c["beta"], c["thr"], c["gs"],
                                       c["gm"], c["s0"])
    with pytest.raises(ValueError, match="lif_forward: ref0 .* is given exactly when"):
        spiking.lif_forward(x, m0, beta, thr, refractory=2)
    with pytest.raises(ValueError, match="lif_forward: ref0 .* is given exactly when"):
        spiking.lif_forward(x, m0, beta, thr, ref0=a0)
    with pytest.raises(ValueError, match="lif_backward: refractory must be an int >= 0"):
        spiking.lif_backward(gs, gm, x, m0, beta, thr, None, refractory=-1, ref0=a0)
    with pytest.raises(ValueError, match="lif_forward: refractory must be an int >= 0"):
        spiking.lif_forward(x, m0, beta, thr, refractory=1.5, ref0=a0)
    with pytest.raises(ValueError, match="lif_forward: ref0 must have shape"):
        spiking.lif_forward(x, m0, beta, thr, refractory=2, ref0=a0[:4])
    with pytest.raises(ValueError, match=r"lif_backward: trace must have shape \(2, 9, 13\)"):
        spiking.lif_backward(gs, gm, x, m0, beta, thr, gs, refractory=2, ref0=a0)
    with pytest.raises(TypeError, match="alif_forward: rho must have x's dtype"):
        spiking.alif_forward(x, m0, a0, beta, gp.astype(beta, gp.float32), beta, thr)
    with pytest.raises(ValueError, match="alif_forward: gamma must have shape"):
        spiking.alif_forward(x, m0, a0, beta, beta, beta[:3], thr)
    with pytest.raises(ValueError, match="alif_forward: reset must be one of"):
        spiking.alif_forward(x, m0, a0, beta, beta, beta, thr, reset="hard")
    with pytest.raises(ValueError, match="alif_backward: grad_adapt must have shape"):
        spiking.alif_backward(gs, gm, gs, x, m0, a0, beta, beta, beta, thr, None)
    with pytest.raises(ValueError, match="alif_backward: surrogate must be one of"):
        spiking.alif_backward(gs, gm, gm, x, m0, a0, beta, beta, beta, thr, None,
                              surrogate="relu")
    with pytest.raises(TypeError, match="alif_backward: expected a grilly Array for 'x'"):
        spiking.alif_backward(gs, gm, gm, c["x"], m0, a0, beta, beta, beta, thr, None)
