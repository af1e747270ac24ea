"""Custom stateful modules and neurons written the SpikingJelly way (``snn.base.MemoryModule``,
``snn.BaseNode`` and subclasses of grilly's SpikingJelly neurons overriding ``neuronal_charge``)
against the same classes written against SpikingJelly: outputs, membranes and gradients in
float64, step_mode 's' and 'm', reset and detach, on every device."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import snn

torch = pytest.importorskip("torch")
pytest.importorskip("spikingjelly.activation_based")
from spikingjelly.activation_based import base as sjb  # noqa: E402
from spikingjelly.activation_based import functional as sjf  # noqa: E402
from spikingjelly.activation_based import neuron as sjn  # noqa: E402

# SpikingJelly 2 moved the neuronal_charge hooks to SimpleBaseNode; 0.0.0.0.14 has them on
# BaseNode
SJNode = getattr(sjn, "SimpleBaseNode", sjn.BaseNode)
TOL = dict(rtol=1e-10, atol=1e-12)
T, B, F = 4, 2, 3


def _np(a):
    return np.asarray(a.to_device("cpu"))


def _g(a, device, grad=False):
    x = gp.asarray(np.asarray(a, dtype=np.float64), device=device)
    return x.requires_grad_() if grad else x


def _x(seed=0, shape=(T, B, F)):
    return np.random.default_rng(seed).normal(0.6, 1.0, shape)


# ---- the same classes, written against SpikingJelly (torch) and grilly -------------------
class TraceT(sjb.MemoryModule):
    def __init__(self, tau):
        super().__init__()
        self.tau = tau
        self.register_memory("trace", 0.0)

    def single_step_forward(self, x):
        self.trace = self.trace + (x - self.trace) / self.tau
        return self.trace * 2.0


class TraceG(snn.base.MemoryModule):
    def __init__(self, tau, step_mode="s"):
        super().__init__()
        self.tau = tau
        self.step_mode = step_mode
        self.register_memory("trace", 0.0)

    def single_step_forward(self, x):
        self.trace = self.trace + (x - self.trace) / self.tau
        return self.trace * 2.0


class SquareIFT(SJNode):
    def neuronal_charge(self, x):
        self.v = self.v + x ** 2


class SquareIFG(snn.BaseNode):
    def neuronal_charge(self, x):
        self.v = self.v + x ** 2


class LeakyT(SJNode):
    """The tutorial's LIF by hand, with an adaptation memory updated at the reset."""

    def __init__(self, tau=2.0, **kw):
        super().__init__(**kw)
        self.tau = tau
        self.register_memory("adapt", 0.0)

    def neuronal_charge(self, x):
        self.v = self.v + (x - self.adapt - self.v) / self.tau

    def neuronal_reset(self, spike):
        super().neuronal_reset(spike)
        self.adapt = 0.5 * self.adapt + 0.2 * spike


class LeakyG(snn.BaseNode):
    def __init__(self, tau=2.0, **kw):
        super().__init__(**kw)
        self.tau = tau
        self.register_memory("adapt", 0.0)

    def neuronal_charge(self, x):
        self.v = self.v + (x - self.adapt - self.v) / self.tau

    def neuronal_reset(self, spike):
        super().neuronal_reset(spike)
        self.adapt = 0.5 * self.adapt + 0.2 * spike


class BiasedLIFG(snn.LIFNode):
    """A subclass of grilly's LIFNode reusing its charge on a shifted input."""

    def neuronal_charge(self, x):
        super().neuronal_charge(x + 0.3)


class SteepFireLIFG(snn.LIFNode):
    """A subclass of grilly's LIFNode overriding the fire only."""

    def neuronal_fire(self):
        return self.surrogate_function(2.0 * (self.v - self.v_threshold))


class SteepFireLIFT(SJNode):
    def __init__(self, tau=2.0, **kw):
        super().__init__(**kw)
        self.tau = tau

    def neuronal_charge(self, x):
        self.v = self.v + (x - self.v) / self.tau

    def neuronal_fire(self):
        return self.surrogate_function(2.0 * (self.v - self.v_threshold))


def _run(ref, mine, x, device, mode):
    """Forward (per step in 's', one call in 'm'), the input gradient and the last membrane."""
    xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
    # SpikingJelly 2 runs 'm' through single_step_functional_forward: the reference loops 's'
    yt = torch.stack([ref(v) for v in xt])
    if mode == "s":
        yg = gp.stack([mine(v) for v in gp.unstack(xg, axis=0)], axis=0)
    else:
        mine.step_mode = "m"
        yg = mine(xg)
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **TOL)
    w = np.random.default_rng(1).standard_normal(x.shape)
    (yt * torch.tensor(w)).sum().backward()
    gp.sum(yg * _g(w, device)).backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)
    return xt, xg


@pytest.mark.parametrize("mode", ["s", "m"])
def test_memory_module_matches_spikingjelly(device, mode):
    ref, mine = TraceT(3.0), TraceG(3.0)
    _run(ref, mine, _x(), device, mode)
    np.testing.assert_allclose(_np(mine.trace), ref.trace.detach().numpy(), **TOL)
    assert "trace" not in mine.state_dict() and dict(mine.named_memories()).keys() == {"trace"}
    snn.functional.reset_net(mine)
    assert mine.trace == 0.0


def test_memory_array_default_copied_and_reset(device):
    m = TraceG(2.0)
    init = _g(np.full((B, F), 0.5), device)
    del m.trace
    m.register_memory("trace", init)
    y = m(_g(_x()[0], device))
    assert m.trace is not init
    m.reset()
    assert m.trace is not init and m.trace is not m.get_reset_value("trace")
    np.testing.assert_array_equal(_np(m.trace), _np(init))
    np.testing.assert_allclose(_np(y), (0.5 + (_x()[0] - 0.5) / 2.0) * 2.0, **TOL)


def test_memory_module_errors():
    m = TraceG(2.0)
    with pytest.raises(KeyError, match="trace"):
        m.register_memory("trace", 1.0)
    with pytest.raises(ValueError, match="step_mode"):
        m.step_mode = "x"
    with pytest.raises(NotImplementedError, match="single_step_forward"):
        snn.base.MemoryModule()(gp.ones(2))
    snn.functional.set_step_mode(m, "m")
    assert m.step_mode == "m"


@pytest.mark.parametrize("mode", ["s", "m"])
@pytest.mark.parametrize("v_reset", [0.0, None])
def test_base_node_subclass_matches_spikingjelly(device, mode, v_reset):
    for ref, mine in ((SquareIFT(v_reset=v_reset), SquareIFG(v_reset=v_reset, dtype=gp.float64)),
                      (LeakyT(3.0, v_reset=v_reset, detach_reset=True),
                       LeakyG(3.0, v_reset=v_reset, detach_reset=True, dtype=gp.float64))):
        _run(ref, mine, _x(), device, mode)
        np.testing.assert_allclose(_np(mine.v), ref.v.detach().numpy(), **TOL)
        if isinstance(mine, LeakyG):
            np.testing.assert_allclose(_np(mine.adapt), ref.adapt.detach().numpy(), **TOL)
        snn.reset_net(mine)
        assert mine.v == (0.0 if v_reset is None else v_reset)
        if isinstance(mine, LeakyG):
            assert mine.adapt == 0.0


@pytest.mark.parametrize("mode", ["s", "m"])
def test_lifnode_subclass_runs_its_own_charge(device, mode):
    assert not snn.LIFNode._custom_hooks and BiasedLIFG._custom_hooks
    x = _x()
    # the charge of LIFNode on x + 0.3 is SpikingJelly's LIFNode on x + 0.3
    ref, mine = sjn.LIFNode(tau=2.0), BiasedLIFG(tau=2.0, dtype=gp.float64)
    xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
    yt = torch.stack([ref(v + 0.3) for v in xt])
    if mode == "m":
        mine.step_mode = "m"
        yg = mine(xg)
    else:
        yg = gp.stack([mine(v) for v in gp.unstack(xg, axis=0)], axis=0)
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **TOL)
    yt.sum().backward()
    gp.sum(yg).backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)
    # overriding the fire only
    _run(SteepFireLIFT(2.0), SteepFireLIFG(2.0, dtype=gp.float64), x, device, mode)


def test_builtin_neurons_keep_the_fused_path(device, monkeypatch):
    from grilly.nn.snn import fused
    calls = []
    real = fused.lif_sequence
    monkeypatch.setattr(fused, "lif_sequence", lambda *a, **k: calls.append(1) or real(*a, **k))
    x = _g(_x(), device)
    snn.LIFNode(step_mode="m")(x)
    assert calls
    calls.clear()
    BiasedLIFG(step_mode="m")(x)
    assert not calls


def test_reset_and_detach_net_reach_both_styles(device):
    net = nn.Sequential(TraceG(2.0), snn.LIFNode(), LeakyG(2.0, dtype=gp.float64))
    ref = torch.nn.Sequential(TraceT(2.0), sjn.LIFNode(), LeakyT(2.0))
    x = _x(3)
    xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
    for t in range(2):
        ref(xt[t]), net(xg[t])
    sjf.detach_net(ref)
    snn.functional.detach_net(net)
    yt, yg = ref(xt[2]), net(xg[2])
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **TOL)
    yt.sum().backward()
    gp.sum(yg).backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)
    assert not np.any(_np(xg.grad)[:2])
    snn.reset_net(net)
    assert net[0].trace == 0.0 and net[1].v == 0.0 and net[2].v == 0.0 and net[2].adapt == 0.0
