"""Second-order gradients through the fused SNN sequences (LIF/IF with or without a refractory
period, Synaptic, AdaptiveLIF in step_mode "m"), against a float64 torch re-implementation of
docs/snn.md's per-step equations (its spike a torch Function with the surrogate's derivative
as backward, itself differentiable) and against snnTorch (test-only oracles).

Each case is a gradient penalty: g = grad(sum(r * f(x)**2), x, create_graph=True) for a fixed
random positive r, f(x) the spike train and the final state, then sum(g**2).backward(); g,
x.grad and the learnable parameters' grads must match the oracle's. Under create_graph the
layers' backward differentiates a per-step recomputation (grilly/nn/snn/fused.py); the plain
backward stays the fused kernels."""
import math

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.array import spiking
from grilly.autograd import grad
from grilly.nn import snn
from grilly.nn.snn import fused as snn_fused

torch = pytest.importorskip("torch")
T, B, N = 8, 2, 3
TOL = dict(rtol=1e-9, atol=1e-10)


def _np(x):
    return np.asarray(x.to_device("cpu"))


# ---- the torch oracle ------------------------------------------------------------------------
class _TSpike(torch.autograd.Function):
    """Heaviside forward, ``g * d(x)`` backward (differentiable: torch ops on saved x)."""

    @staticmethod
    def forward(ctx, x, d):
        ctx.save_for_backward(x)
        ctx.d = d
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.d(x), None


# name: (grilly surrogate, its derivative in torch ops), as grilly/nn/snn/surrogate.py's
SURR = {
    "atan": (snn.surrogate.atan(2.0),
             lambda x: 1.0 / (1.0 + (math.pi / 2 * 2.0 * x) ** 2)),
    "fast_sigmoid": (snn.surrogate.fast_sigmoid(5.0),
                     lambda x: 1.0 / (5.0 * x.abs() + 1.0) ** 2),
    "sigmoid": (snn.surrogate.sigmoid(4.0),
                lambda x: 4.0 * torch.sigmoid(4.0 * x) * (1 - torch.sigmoid(4.0 * x))),
}


def _fire(cur, mem, beta, thr_r, thr_s, reset, spike, detach, delay, zero_after, active):
    """One integrate-fire-reset step of docs/snn.md (torch): (spikes, membrane, reset signal)."""
    if active is not None:
        cur = cur * active
    if delay:
        r = (mem > thr_r).to(mem.dtype) if detach else spike(mem - thr_r)
        if reset == "subtract":
            mem = beta * mem + cur - r * thr_r
        elif reset == "zero":
            mem = (1 - r) * (beta * mem + cur) if zero_after else beta * ((1 - r) * mem) + cur
        else:
            mem = beta * mem + cur
        spk = spike(mem - thr_s)
        return (spk if active is None else spk * active), mem, r
    h = beta * mem + cur
    spk = spike(h - thr_s)
    if active is not None:
        spk = spk * active
    r = (spk > 0).to(h.dtype) if detach else spk
    if reset == "subtract":
        h = h - r * thr_s
    elif reset == "zero":
        h = h * (1 - r)
    return spk, h, r


def _torch_layer(kind, o, x, p):
    """The torch oracle of a layer on x (T, B, N): (spike train, final state)."""
    d = SURR[o["surrogate"]][1]

    def spike(v):
        return _TSpike.apply(v, d)
    beta, thr = p["beta"].clamp(0, 1), p["threshold"]
    mem = torch.zeros(x.shape[1:], dtype=x.dtype)
    spikes = []
    if kind == "Synaptic":
        alpha, syn = p["alpha"].clamp(0, 1), torch.zeros_like(mem)
        for t in range(x.shape[0]):
            syn = alpha * syn + x[t]
            spk, mem, _ = _fire(syn, mem, beta, thr, thr, o["reset"], spike, o["detach"],
                                o["delay"], True, None)
            spikes.append(spk)
        return torch.stack(spikes), (syn, mem)
    if kind == "AdaptiveLIF":
        rho, gamma, a = o["rho"], o["gamma"], torch.zeros_like(mem)
        for t in range(x.shape[0]):
            if o["delay"]:
                tho = thr + gamma * a
                r = (mem > tho).to(x.dtype) if o["detach"] else spike(mem - tho)
                a = rho * a + r
                spk, mem, _ = _fire(x[t], mem, beta, tho, thr + gamma * a, o["reset"], spike,
                                    o["detach"], True, False, None)
            else:
                spk, mem, r = _fire(x[t], mem, beta, thr, thr + gamma * a, o["reset"], spike,
                                    o["detach"], False, False, None)
                a = rho * a + r
            spikes.append(spk)
        return torch.stack(spikes), (mem, a)
    k, ref = o.get("refractory", 0), torch.zeros_like(mem)
    for t in range(x.shape[0]):
        active = (ref <= 0).to(x.dtype) if k else None
        spk, mem, _ = _fire(x[t], mem, beta, thr, thr, o["reset"], spike, o["detach"],
                            o["delay"], False, active)
        if k:
            ref = torch.where(spk > 0, float(k), (ref - 1).clamp(min=0))
        spikes.append(spk)
    return torch.stack(spikes), (mem,)


# ---- the cases -------------------------------------------------------------------------------
def _params(kind, rng):
    """Per-neuron learnable values (away from the clip bounds)."""
    p = {"beta": rng.uniform(0.5, 0.9, N), "threshold": rng.uniform(0.7, 1.1, N)}
    if kind == "Synaptic":
        p["alpha"] = rng.uniform(0.4, 0.8, N)
    return p


def _grilly_layer(kind, o, p, device):
    common = dict(reset=o["reset"], reset_delay=o["delay"], detach_reset=o["detach"],
                  surrogate=SURR[o["surrogate"]][0], learn_beta=True, learn_threshold=True,
                  step_mode="m", return_mem=o.get("return_mem", False), dtype=gp.float64)
    if kind == "Synaptic":
        m = snn.Synaptic(p["alpha"].tolist(), p["beta"].tolist(), p["threshold"].tolist(),
                         learn_alpha=True, **common)
    elif kind == "AdaptiveLIF":
        m = snn.AdaptiveLIF(p["beta"].tolist(), p["threshold"].tolist(), rho=o["rho"],
                            gamma=o["gamma"], **common)
    else:
        m = snn.LIF(p["beta"].tolist(), p["threshold"].tolist(),
                    refractory=o.get("refractory", 0), **common)
    return m.to(device)


def _f_grilly(m, x):
    """The spike train (and membrane trace) and the final state (the refractory counter, which
    carries no gradient, left out)."""
    m.reset_state()
    out = m(x)
    outs = list(out) if isinstance(out, tuple) else [out]
    return outs + list(m.state[:1] if isinstance(m, snn.LIF) else m.state)


def _weights(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 1.5, s) for s in shapes]


def _penalty_grilly(m, xs, device, create_graph=True, calls=None):
    x = gp.asarray(xs, device=device)
    x.requires_grad_()
    outs = _f_grilly(m, x)
    rs = _weights([o.shape for o in outs], 7)
    loss = sum(gp.sum(gp.asarray(r, device=device) * o ** 2) for r, o in zip(rs, outs))
    (g,) = grad(loss, [x], create_graph=create_graph)
    if calls is not None:
        # the fused forward ran; under create_graph its backward was the recomputed graph
        # (the kernels' backward may run later: sum(g**2) reaches the spikes through g's seed)
        assert any(c.endswith("_forward") for c in calls)
        assert not any(c.endswith("_backward") for c in calls) == create_graph
    if create_graph:
        gp.sum(g * g).backward()
    return x, g


def _penalty_torch(kind, o, xs, p):
    x = torch.tensor(xs, requires_grad=True)
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
    spk, st = _torch_layer(kind, o, x, tp)
    outs = [spk, *st]
    rs = _weights([tuple(t.shape) for t in outs], 7)
    loss = sum((torch.tensor(r) * t ** 2).sum() for r, t in zip(rs, outs))
    (g,) = torch.autograd.grad(loss, x, create_graph=True)
    (g * g).sum().backward()
    return x, g, tp


def _check(kind, o, device, monkeypatch, seed=0):
    rng = np.random.default_rng(seed)
    xs = rng.normal(0.5, 0.8, (T, B, N))
    p = _params(kind, rng)
    calls = []
    for name in ("lif_forward", "alif_forward", "lif_backward", "alif_backward"):
        real = getattr(spiking, name)
        monkeypatch.setattr(snn_fused.spiking, name,
                            lambda *a, _r=real, _n=name, **k: calls.append(_n) or _r(*a, **k))
    m = _grilly_layer(kind, o, p, device)
    x, g = _penalty_grilly(m, xs, device, calls=calls)
    tx, tg, tp = _penalty_torch(kind, o, xs, p)
    np.testing.assert_allclose(_np(g), tg.detach().numpy(), **TOL)
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), **TOL)
    # the surrogate's derivative makes the second order nonzero
    assert np.abs(_np(x.grad)).max() > 1e-3
    names = {"_beta": "beta", "_threshold": "threshold", "_alpha": "alpha"}
    got = dict(m.named_parameters())
    assert sorted(got) == sorted("_" + k for k in p)
    for name, par in got.items():
        np.testing.assert_allclose(_np(par.grad), tp[names[name]].grad.numpy(), **TOL)
    # the first order alone still runs the fused kernels, to the same values
    del calls[:]
    m.zero_grad()
    _, g0 = _penalty_grilly(m, xs, device, create_graph=False, calls=calls)
    np.testing.assert_allclose(_np(g0), _np(g), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("detach", [True, False])
@pytest.mark.parametrize("delay", [True, False])
@pytest.mark.parametrize("reset", ["subtract", "zero"])
def test_lif_penalty(reset, delay, detach, device, monkeypatch):
    sg = "atan" if detach else "fast_sigmoid"
    _check("LIF", dict(reset=reset, delay=delay, detach=detach, surrogate=sg), device,
           monkeypatch)


@pytest.mark.parametrize("delay", [True, False])
def test_lif_no_reset_and_sigmoid(delay, device, monkeypatch):
    _check("LIF", dict(reset="none", delay=delay, detach=True, surrogate="sigmoid"), device,
           monkeypatch, seed=1)


@pytest.mark.parametrize("detach", [True, False])
@pytest.mark.parametrize("delay", [True, False])
def test_refractory_lif_penalty(delay, detach, device, monkeypatch):
    _check("LIF", dict(reset="subtract", delay=delay, detach=detach, surrogate="atan",
                       refractory=2), device, monkeypatch, seed=2)


@pytest.mark.parametrize("reset, delay", [("subtract", True), ("subtract", False),
                                          ("zero", False)])
def test_synaptic_penalty(reset, delay, device, monkeypatch):
    _check("Synaptic", dict(reset=reset, delay=delay, detach=True, surrogate="atan"), device,
           monkeypatch, seed=3)


@pytest.mark.parametrize("detach", [True, False])
@pytest.mark.parametrize("delay", [True, False])
def test_adaptive_lif_penalty(delay, detach, device, monkeypatch):
    _check("AdaptiveLIF", dict(reset="subtract", delay=delay, detach=detach, surrogate="atan",
                               rho=0.9, gamma=0.3), device, monkeypatch, seed=4)


@pytest.mark.parametrize("kind", ["LIF", "AdaptiveLIF"])
def test_membrane_trace_penalty(kind, device):
    """return_mem: the penalty on the membrane trace too (the fused kernels' trace output)."""
    rng = np.random.default_rng(5)
    xs = rng.normal(0.5, 0.8, (T, B, N))
    p = _params(kind, rng)
    o = dict(reset="subtract", delay=True, detach=True, surrogate="atan", rho=0.9, gamma=0.3)
    m = _grilly_layer(kind, dict(o, return_mem=True), p, device)
    x, g = _penalty_grilly(m, xs, device)

    tx = torch.tensor(xs, requires_grad=True)
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
    d = SURR["atan"][1]
    beta, thr = tp["beta"].clamp(0, 1), tp["threshold"]
    # the trace: the membrane of every step, spikes from it (the oracle above, unrolled)
    mem, a = torch.zeros(B, N, dtype=torch.float64), torch.zeros(B, N, dtype=torch.float64)
    spikes, mems = [], []
    for t in range(T):
        tho = thr + 0.3 * a if kind == "AdaptiveLIF" else thr
        r = (mem > tho).to(mem.dtype)
        if kind == "AdaptiveLIF":
            a = 0.9 * a + r
        mem = beta * mem + tx[t] - r * tho
        spikes.append(_TSpike.apply(mem - (thr + 0.3 * a if kind == "AdaptiveLIF" else thr), d))
        mems.append(mem)
    outs = [torch.stack(spikes), torch.stack(mems), mem] + ([a] if kind == "AdaptiveLIF" else [])
    rs = _weights([tuple(t.shape) for t in outs], 7)
    (tg,) = torch.autograd.grad(sum((torch.tensor(r) * t ** 2).sum() for r, t in zip(rs, outs)),
                                tx, create_graph=True)
    (tg * tg).sum().backward()
    np.testing.assert_allclose(_np(g), tg.detach().numpy(), **TOL)
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), **TOL)
    np.testing.assert_allclose(_np(m._beta.grad), tp["beta"].grad.numpy(), **TOL)
    np.testing.assert_allclose(_np(m._threshold.grad), tp["threshold"].grad.numpy(), **TOL)


@pytest.mark.parametrize("kind", ["Leaky", "Synaptic"])
def test_penalty_equals_snntorch(kind, device):
    """The oracle's oracle: snnTorch's Leaky and Synaptic (their spikes float32, so float32
    rounding in the gradients) under the same gradient penalty."""
    snntorch = pytest.importorskip("snntorch")
    TS = pytest.importorskip("snntorch.surrogate")
    rng = np.random.default_rng(6)
    xs = rng.normal(0.5, 0.8, (T, B, N))
    p = _params("Synaptic" if kind == "Synaptic" else "LIF", rng)
    tp = {k: torch.tensor(v) for k, v in p.items()}
    common = dict(threshold=tp["threshold"], spike_grad=TS.atan(2.0), learn_beta=True,
                  learn_threshold=True)
    if kind == "Synaptic":
        ref = snntorch.Synaptic(alpha=tp["alpha"], beta=tp["beta"], learn_alpha=True, **common)
    else:
        ref = snntorch.Leaky(beta=tp["beta"], **common)
    tx = torch.tensor(xs, requires_grad=True)
    state = [torch.zeros(B, N, dtype=torch.float64)] * (2 if kind == "Synaptic" else 1)
    spikes = []
    for t in range(T):
        s, *state = ref(tx[t], *state)
        spikes.append(s)
    outs = [torch.stack(spikes)] + state
    rs = _weights([tuple(t.shape) for t in outs], 7)
    (tg,) = torch.autograd.grad(sum((torch.tensor(r) * t ** 2).sum() for r, t in zip(rs, outs)),
                                tx, create_graph=True)
    (tg * tg).sum().backward()

    o = dict(reset="subtract", delay=True, detach=True, surrogate="atan")
    m = _grilly_layer("Synaptic" if kind == "Synaptic" else "LIF", o, p, device)
    x, g = _penalty_grilly(m, xs, device)
    tol = dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(g), tg.detach().numpy(), **tol)
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), **tol)
    np.testing.assert_allclose(_np(m._beta.grad), ref.beta.grad.numpy(), **tol)
    np.testing.assert_allclose(_np(m._threshold.grad), ref.threshold.grad.numpy(), **tol)
    if kind == "Synaptic":
        np.testing.assert_allclose(_np(m._alpha.grad), ref.alpha.grad.numpy(), **tol)


def test_stacked_layers_equal_per_step(device):
    """Linear -> LIF -> Linear -> AdaptiveLIF: the penalty's gradients of every parameter equal
    the per-step path's (fused=False, plain autograd), the upstream graph included."""
    def run(fused):
        gp.random.seed(0)
        model = nn.Sequential(
            nn.Linear(N, 4, dtype=gp.float64),
            snn.LIF(0.8, 0.9, learn_beta=True, step_mode="m", fused=fused, dtype=gp.float64),
            nn.Linear(4, N, dtype=gp.float64),
            snn.AdaptiveLIF(0.7, 0.8, learn_threshold=True, step_mode="m", fused=fused,
                            dtype=gp.float64)).to(device)
        xs = np.random.default_rng(8).normal(0.6, 1.0, (T, B, N))
        x = gp.asarray(xs, device=device)
        x.requires_grad_()
        r = gp.asarray(_weights([(T, B, N)], 9)[0], device=device)
        (g,) = grad(gp.sum(r * model(x) ** 2), [x], create_graph=True)
        gp.sum(g * g).backward()
        return [_np(g), _np(x.grad)] + [_np(q.grad) for q in model.parameters()]
    a, b = run(True), run(False)
    assert len(a) == 2 + 6
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)
    assert np.abs(a[1]).max() > 1e-3


def test_third_order(device):
    """The second-order graph is namespace ops and surrogate spikes: differentiable again."""
    xs = np.random.default_rng(10).normal(0.5, 0.8, (T, B, N))

    def run(fused):
        m = snn.LIF(0.7, 0.9, step_mode="m", fused=fused, dtype=gp.float64).to(device)
        x = gp.asarray(xs, device=device)
        x.requires_grad_()
        s = m(x)
        (g,) = grad(gp.sum(s ** 2), [x], create_graph=True)
        (g2,) = grad(gp.sum(g * g), [x], create_graph=True)
        (g3,) = grad(gp.sum(g2 * g2), [x])
        return _np(g3)
    a = run(True)
    np.testing.assert_allclose(a, run(False), rtol=1e-10, atol=1e-12)
    assert np.abs(a).max() > 0
