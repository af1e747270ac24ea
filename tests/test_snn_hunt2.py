"""A neuromorphic researcher's snnTorch / SpikingJelly code ported by changing the imports:
SpikingJelly's ``functional.set_step_mode`` and its other surrogate functions, snnTorch's state
attributes (``lif.mem``, ``.syn``, ``.spk``) on every neuron, and a Lapicque built from R and C
loading snnTorch's state_dict, each against the real library."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import snn

torch = pytest.importorskip("torch")
snntorch = pytest.importorskip("snntorch")
sj = pytest.importorskip("spikingjelly.activation_based")
from spikingjelly.activation_based import functional as sjf  # noqa: E402
from spikingjelly.activation_based import layer as sjl  # noqa: E402
from spikingjelly.activation_based import neuron as sjn  # noqa: E402
from spikingjelly.activation_based import surrogate as sjs  # noqa: E402

T, B, N = 5, 2, 3
R = np.random.default_rng(11)
X = R.standard_normal((T, B, N)) * 1.4 + 0.3
W = R.standard_normal((T, B, N))


def _np(a):
    return np.asarray(a.to_device("cpu"))


def _g(a, device, grad=False):
    x = gp.asarray(np.asarray(a, dtype=np.float64), device=device)
    return x.requires_grad_() if grad else x


def test_set_step_mode_as_spikingjelly(device):
    """functional.set_step_mode(net, 'm') on a net built in single-step mode, as SpikingJelly's
    examples write it: the same spikes and gradients as SpikingJelly's multi-step net (grilly had
    no set_step_mode: AttributeError). Modules inside a MultiStepContainer keep 's'."""
    torch.manual_seed(0)
    ref = torch.nn.Sequential(sjl.Linear(N, 4), sjn.LIFNode(tau=2.0),
                              sjl.Linear(4, 3), sjn.IFNode(v_reset=None)).double()
    sjf.set_step_mode(ref, "m")
    net = nn.Sequential(nn.Linear(N, 4, dtype=gp.float64), snn.LIFNode(tau=2.0),
                        nn.Linear(4, 3, dtype=gp.float64), snn.IFNode(v_reset=None))
    net.load_state_dict({k: gp.asarray(v.numpy()) for k, v in ref.state_dict().items()})
    net = net.to(device)
    assert snn.functional.set_step_mode(net, "m") is net
    assert net[1].step_mode == "m" and net[3].step_mode == "m"
    xt, xg = torch.tensor(X * 2, requires_grad=True), _g(X * 2, device, grad=True)
    st, sg = ref(xt), net(xg)
    (st * torch.tensor(W)).sum().backward()
    gp.sum(sg * _g(W, device)).backward()
    np.testing.assert_array_equal(_np(sg), st.detach().numpy())
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(net[0].weight.grad), ref[0].weight.grad.numpy(), rtol=1e-10,
                               atol=1e-12)
    # a MultiStepContainer calls its module once per step: it stays single-step
    inner = snn.LIFNode()
    box = nn.Sequential(snn.MultiStepContainer(inner), snn.IFNode())
    snn.functional.set_step_mode(box, "m")
    assert inner.step_mode == "s" and box[1].step_mode == "m"
    snn.functional.set_step_mode(box, "s")
    assert box[1].step_mode == "s"
    with pytest.raises(ValueError, match="set_step_mode: step_mode must be 's'"):
        snn.functional.set_step_mode(box, "multi")


@pytest.mark.parametrize("name,kw", [("PiecewiseQuadratic", {}), ("PiecewiseQuadratic",
                                                                   {"alpha": 2.5}),
                                     ("SoftSign", {}), ("SoftSign", {"alpha": 0.7}),
                                     ("Erf", {}), ("Erf", {"alpha": 1.3}),
                                     ("PiecewiseLeakyReLU", {}),
                                     ("PiecewiseLeakyReLU", {"w": 0.4, "c": 0.1})])
def test_spikingjelly_surrogates(name, kw, device):
    """SpikingJelly's PiecewiseQuadratic, SoftSign, Erf, PiecewiseLeakyReLU (they were missing):
    the surrogate gradient at points around the threshold, and a multi-step LIFNode trained
    with it (spikes and the input's gradient), equal SpikingJelly's."""
    x = np.linspace(-2.1, 2.1, 29)
    if name == "PiecewiseLeakyReLU":
        z = torch.zeros(1, requires_grad=True)
        sjs.PiecewiseLeakyReLU(w=1.0)(z).sum().backward()
        if float(z.grad) != 0.5:   # SpikingJelly 0.0.0.0.14's window gradient is 1/w
            pytest.skip("this SpikingJelly's PiecewiseLeakyReLU predates the 1/(2w) window")
    xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
    getattr(sjs, name)(**kw)(xt).sum().backward()
    gp.sum(getattr(snn.surrogate, name)(**kw)(xg)).backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), rtol=1e-12, atol=1e-15)
    ref = sjn.LIFNode(tau=2.0, surrogate_function=getattr(sjs, name)(**kw), step_mode="m")
    lif = snn.LIFNode(tau=2.0, surrogate_function=getattr(snn.surrogate, name)(**kw),
                      step_mode="m").to(device)
    xt, xg = torch.tensor(X * 2, requires_grad=True), _g(X * 2, device, grad=True)
    st, sg = ref(xt), lif(xg)
    (st * torch.tensor(W)).sum().backward()
    gp.sum(sg * _g(W, device)).backward()
    np.testing.assert_array_equal(_np(sg), st.detach().numpy())
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_spikingjelly_surrogate_errors():
    with pytest.raises(ValueError, match="Erf: alpha must be > 0"):
        snn.surrogate.Erf(alpha=0.0)
    with pytest.raises(TypeError, match="surrogate=SoftSign is the factory"):
        snn.LIF(0.9, surrogate=snn.surrogate.SoftSign)


@pytest.mark.parametrize("name", ["Synaptic", "RLeaky", "LIF"])
def test_state_attributes_as_snntorch(name, device):
    """snnTorch's hidden states by name on grilly's own neurons with init_hidden=True
    (``syn.syn``, ``syn.mem``, ``rlif.spk``, ``rlif.mem``, ``lif.mem``; they raised
    AttributeError): after every step they equal snnTorch's, and reset() makes them None."""
    if name == "Synaptic":
        ref = snntorch.Synaptic(alpha=0.7, beta=0.8, init_hidden=True)
        mine = snn.Synaptic(0.7, 0.8, init_hidden=True, dtype=gp.float64)
        names = ("syn", "mem")
    elif name == "RLeaky":
        ref = snntorch.RLeaky(beta=0.8, V=0.5, all_to_all=False, init_hidden=True)
        mine = snn.RLeaky(0.8, V=0.5, all_to_all=False, init_hidden=True, dtype=gp.float64)
        names = ("spk", "mem")
    else:
        ref = snntorch.Leaky(beta=0.8, init_hidden=True)
        mine = snn.LIF(0.8, init_hidden=True, dtype=gp.float64)
        names = ("mem",)
    mine = mine.to(device)
    assert all(getattr(mine, n) is None for n in names)
    for t in range(T):
        np.testing.assert_array_equal(_np(mine(_g(X[t], device))),
                                      ref(torch.tensor(X[t])).detach().numpy())
        for n in names:
            np.testing.assert_allclose(_np(getattr(mine, n)), getattr(ref, n).detach().numpy(),
                                       atol=1e-6)
    snn.reset(mine)
    assert all(getattr(mine, n) is None for n in names)
    with pytest.raises(AttributeError, match="has no attribute 'nonexistent'"):
        mine.nonexistent   # noqa: B018


@pytest.mark.parametrize("reset", ["subtract", "zero"])
def test_lapicque_from_r_and_c_loads_snntorch_state_dict(reset, device):
    """Lapicque(R=, C=, time_step=): snnTorch's state_dict (its beta a (1,) tensor) loads as it
    is (it was a shape error), and the spikes and membranes equal snnTorch's."""
    ref = snntorch.Lapicque(R=2.0, C=1.5, time_step=0.5, reset_mechanism=reset)
    mine = snn.Lapicque(R=2.0, C=1.5, time_step=0.5, reset_mechanism=reset, dtype=gp.float64)
    sd = {k: gp.asarray(v.numpy()) for k, v in ref.state_dict().items()}
    mine.load_state_dict(sd)
    assert tuple(mine.state_dict()["beta"].shape) == (1,)
    mine = mine.to(device)
    mt, mg = ref.init_lapicque(), mine.init_lapicque()
    for t in range(T):
        st, mt = ref(torch.tensor(X[t] * 3), mt)
        sg, mg = mine(_g(X[t] * 3, device), mg)
        np.testing.assert_array_equal(_np(sg), st.numpy())
        np.testing.assert_allclose(_np(mg), mt.numpy(), atol=1e-6)
