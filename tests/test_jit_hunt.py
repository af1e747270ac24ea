"""grilly.jit against the same eager code where a replay went stale (each failed before
2026-11-28): a spiking neuron's state carried across calls, an optimizer's load_state_dict,
a parameter frozen or replaced after the trace, a lazy module's first call, and a module's Python
counter (JitError)."""
import copy

import numpy as np
import pytest

import grilly as gp
import grilly.nn as nn
import grilly.nn.functional as F
from grilly.jit import JitError, Tracer
from grilly.nn import snn

R = np.random.default_rng(11)


def _arr(shape, device, scale=1.0):
    return gp.asarray((R.standard_normal(shape) * scale).astype(np.float32), device=device)


@pytest.mark.parametrize("neuron", ["LIF", "Synaptic"])
@pytest.mark.parametrize("train", [False, True])
def test_snn_state_carried_across_replays(device, neuron, train):
    """A jitted step of a spiking layer reads the membrane the previous call left (not the
    trace's), writes it back to the layer, and starts from zeros after reset_state()."""
    xs = [_arr((4, 3), device, 2.0) for _ in range(3)]

    def run(jitted):
        gp.random.seed(0)
        lin = nn.Linear(3, 4).to(device)
        cell = (snn.LIF(beta=0.9) if neuron == "LIF" else snn.Synaptic(alpha=0.8, beta=0.9))
        cell = cell.to(device)
        opt = gp.optim.SGD(lin.parameters(), lr=0.1)

        def step(x):
            cell.detach_state()
            if train:
                opt.zero_grad()
            spk = cell(lin(x))[0]
            if train:
                ((spk - 0.5) ** 2).mean().backward()
                opt.step()
            return spk

        f = gp.jit(step) if jitted else step
        outs = []
        for i in range(6):
            if i == 3:
                cell.reset_state()
            outs.append(np.asarray(f(xs[i % 3])))
        return outs, [np.asarray(s) for s in cell.state], np.asarray(lin.weight)

    (eo, es, ew), (jo, js, jw) = run(False), run(True)
    for a, b in zip(eo, jo):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    for a, b in zip(es, js):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jw, ew, rtol=1e-5, atol=1e-6)


def test_snn_sequence_reset_inside(device):
    """A jitted sequence (reset_state() first, then T steps) traces once and equals eager."""
    xs = [_arr((3, 2, 3), device, 2.0) for _ in range(2)]

    def run(jitted):
        gp.random.seed(0)
        lin, cell = nn.Linear(3, 4).to(device), snn.LIF(beta=0.8).to(device)

        def seq(x):
            cell.reset_state()
            return gp.stack([cell(lin(x[t]))[0] for t in range(x.shape[0])])

        f = gp.jit(seq) if jitted else seq
        outs = [np.asarray(f(xs[i % 2])) for i in range(4)]
        return outs, np.asarray(cell.state[0]), getattr(f, "traces", 0)

    (eo, em, _), (jo, jm, traces) = run(False), run(True)
    for a, b in zip(eo, jo):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jm, em, rtol=1e-5, atol=1e-6)
    assert traces == 1


@pytest.mark.parametrize("opt", ["Adam", "SGD"])
def test_optimizer_load_state_dict_between_replays(device, opt):
    """After opt.load_state_dict(saved) a replayed step updates the loaded state (on Vulkan the
    captured update kernels held the old state arrays)."""
    xs = [_arr((4, 3), device) for _ in range(3)]
    ts = [_arr((4, 2), device) for _ in range(3)]

    def run(jitted):
        gp.random.seed(0)
        m = nn.Linear(3, 2).to(device)
        o = (gp.optim.Adam(m.parameters(), lr=0.1) if opt == "Adam"
             else gp.optim.SGD(m.parameters(), lr=0.1, momentum=0.9))

        def step(x, t):
            o.zero_grad()
            loss = F.mse_loss(m(x), t)
            loss.backward()
            o.step()
            return loss

        f = gp.jit(step) if jitted else step
        losses, saved = [], None
        for i in range(5):
            losses.append(float(f(xs[i % 3], ts[i % 3])))
            if i == 1:
                saved = copy.deepcopy(o.state_dict())
            if i == 2:
                o.load_state_dict(saved)
        return losses, [np.asarray(p) for p in m.parameters()]

    (el, ep), (jl, jp) = run(False), run(True)
    np.testing.assert_allclose(jl, el, rtol=1e-5, atol=1e-6)
    for a, b in zip(ep, jp):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("change", ["freeze", "replace"])
def test_parameter_frozen_or_replaced_after_trace(device, change):
    """A parameter frozen (requires_grad_(False)) or replaced (m.weight = Parameter(...)) after
    the trace is seen by the next call, as eagerly."""
    xs = [_arr((4, 3), device) for _ in range(3)]
    ts = [_arr((4, 2), device) for _ in range(3)]
    w_new = np.asarray(_arr((2, 3), device))

    def run(jitted):
        gp.random.seed(0)
        m = nn.Linear(3, 2).to(device)
        o = gp.optim.SGD(m.parameters(), lr=0.1)

        def step(x, t):
            o.zero_grad()
            loss = F.mse_loss(m(x), t)
            loss.backward()
            o.step()
            return loss

        f = gp.jit(step) if jitted else step
        losses = []
        for i in range(5):
            if i == 2 and change == "freeze":
                m.weight.requires_grad_(False)
            if i == 2 and change == "replace":
                m.weight = nn.Parameter(gp.asarray(w_new, device=device))
                o = gp.optim.SGD(m.parameters(), lr=0.1)
            losses.append(float(f(xs[i % 3], ts[i % 3])))
        return losses, np.asarray(m.weight), np.asarray(m.bias)

    (el, ew, eb), (jl, jw, jb) = run(False), run(True)
    np.testing.assert_allclose(jl, el, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jw, ew, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jb, eb, rtol=1e-5, atol=1e-6)


def test_lazy_module_first_call(device):
    """A jitted LazyLinear: the call that initializes it is not replayed (a replay made new
    random weights every call); later calls equal the module's eager call."""
    x = _arr((4, 3), device)
    m = nn.LazyLinear(2).to(device)
    f = gp.jit(m)
    ys = [np.asarray(f(x)) for _ in range(3)]
    ref = np.asarray(m(x))
    for y in ys:
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)

    m2 = nn.LazyLinear(2).to(device)
    tracer = Tracer()
    with tracer:
        tracer.register_input(x)
        y = m2(x)
    graph = tracer.build(y)
    with pytest.raises(JitError, match="LazyLinear|Linear"):
        graph(x)


class _Counting(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x)


def test_module_python_counter_raises(device):
    """A module that counts its calls in a Python int cannot be replayed (the count would stay):
    JitError names it; eager code and a later trace still work."""
    x = _arr((4, 3), device)
    m = _Counting().to(device)
    f = gp.jit(m)
    with pytest.raises(JitError, match="_Counting.calls"):
        f(x)
    ref = np.asarray(m.lin(x))
    np.testing.assert_allclose(np.asarray(m(x)), ref, rtol=1e-6)
    g = gp.jit(m.lin)
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(g(x)), ref, rtol=1e-6)
