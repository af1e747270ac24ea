"""Porting snnTorch / SpikingJelly code to grilly.nn.snn: the oracles' spellings (keyword
names, LIFNode/IFNode, init_leaky, accuracy_rate, rate's options, surrogates) give the
oracles' numbers, and wrong usage raises errors naming the layer and the argument."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import snn

torch = pytest.importorskip("torch")
snntorch = pytest.importorskip("snntorch")
TS = pytest.importorskip("snntorch.surrogate")
TSF = pytest.importorskip("snntorch.functional")

T, B, N = 6, 2, 3
R = np.random.default_rng(7)
X = R.standard_normal((T, B, N)) * 1.3
W = R.standard_normal((T, B, N))


def _np(a):
    return np.asarray(a.to_device("cpu"))


def _g(a, device, grad=False):
    x = gp.asarray(np.asarray(a, dtype=np.float64), device=device)
    return x.requires_grad_() if grad else x


@pytest.mark.parametrize("reset", ["subtract", "zero"])
def test_snntorch_keywords_and_explicit_state_idiom(reset, device):
    """Leaky(beta, spike_grad=..., reset_mechanism=...) with mem = init_leaky() and
    spk, mem = lif(x, mem) per step: spikes, membranes and the input's gradient equal
    snnTorch's (the keywords raised TypeError, init_leaky was missing)."""
    ref = snntorch.Leaky(beta=0.8, spike_grad=TS.fast_sigmoid(slope=10), reset_mechanism=reset)
    lif = snn.LIF(beta=0.8, spike_grad=snn.surrogate.fast_sigmoid(slope=10),
                  reset_mechanism=reset, dtype=gp.float64).to(device)
    xt = torch.tensor(X, requires_grad=True)
    xg = _g(X, device, grad=True)
    mt, mg = ref.init_leaky(), lif.init_leaky()
    st, sg, mts, mgs = [], [], [], []
    for t in range(T):
        s, mt = ref(xt[t], mt)
        st.append(s)
        mts.append(mt)
        s, mg = lif(xg[t], mg)
        sg.append(s)
        mgs.append(mg)
    (torch.stack(st).double() * torch.tensor(W)).sum().backward()
    gp.sum(gp.stack(sg) * _g(W, device)).backward()
    np.testing.assert_array_equal(_np(gp.stack(sg)), torch.stack(st).detach().numpy())
    np.testing.assert_allclose(_np(gp.stack(mgs)), torch.stack(mts).detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert lif.init_leaky() is None and lif.state is None   # a new sequence


def test_init_hidden_output_for_every_neuron(device):
    """init_hidden=True (and output=True) on Synaptic and RLeaky, as snnTorch's, in an
    nn.Sequential one step per call (they raised TypeError)."""
    ref_syn = snntorch.Synaptic(alpha=0.7, beta=0.8, init_hidden=True, output=True)
    syn = snn.Synaptic(0.7, 0.8, init_hidden=True, output=True, dtype=gp.float64).to(device)
    ref_rl = snntorch.RLeaky(beta=0.8, V=0.5, all_to_all=False, init_hidden=True)
    rl = snn.RLeaky(0.8, V=0.5, all_to_all=False, init_hidden=True, dtype=gp.float64).to(device)
    seq = nn.Sequential(nn.Identity(), rl)
    for t in range(T):
        s, c, m = ref_syn(torch.tensor(X[t]))
        gs, gc, gm = syn(_g(X[t], device))
        np.testing.assert_array_equal(_np(gs), s.detach().numpy())
        np.testing.assert_allclose(_np(gm), m.detach().numpy(), atol=1e-6)
        np.testing.assert_array_equal(_np(seq(_g(X[t], device))), ref_rl(torch.tensor(X[t]))
                                      .detach().numpy())
    linear = snn.RLeaky(0.9, all_to_all=True, linear_features=N)
    assert linear.recurrent.in_features == N


def test_spikingjelly_lifnode_and_reset_net(device):
    """snn.LIFNode / IFNode with SpikingJelly's defaults (hard reset, decay_input, the reset not
    detached, Sigmoid(4)): spikes, v_seq and the input's gradient equal SpikingJelly's
    multi-step nodes, and functional.reset_net resets them."""
    sj = pytest.importorskip("spikingjelly.activation_based.neuron")
    for ref, mine in [(sj.LIFNode(tau=3.0, step_mode="m", store_v_seq=True),
                       snn.LIFNode(tau=3.0, step_mode="m", store_v_seq=True, dtype=gp.float64)),
                      (sj.LIFNode(tau=2.0, v_reset=None, decay_input=False, step_mode="m",
                                  store_v_seq=True),
                       snn.LIFNode(v_reset=None, decay_input=False, step_mode="m",
                                   store_v_seq=True, dtype=gp.float64)),
                      (sj.IFNode(step_mode="m", store_v_seq=True),
                       snn.IFNode(step_mode="m", store_v_seq=True, dtype=gp.float64))]:
        mine.to(device)
        xt = torch.tensor(X, requires_grad=True)
        xg = _g(X, device, grad=True)
        s = ref(xt)
        (s * torch.tensor(W)).sum().backward()
        gs = mine(xg)
        gp.sum(gs * _g(W, device)).backward()
        np.testing.assert_array_equal(_np(gs), s.detach().numpy())
        np.testing.assert_allclose(_np(mine.v_seq), ref.v_seq.detach().numpy(), atol=1e-12)
        np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), atol=1e-10)
        snn.functional.reset_net(mine)
        assert mine.state is None and mine.v == 0.0
    single = snn.LIFNode(tau=2.0).to(device)        # step_mode 's': the spikes only
    out = single(_g(X[0] * 3, device))
    assert isinstance(out, gp.Array) and out.shape == (B, N)
    snn.reset(single)
    looped = snn.MultiStepContainer(single)(_g(X, device))   # SpikingJelly's container
    np.testing.assert_array_equal(_np(looped), _np(snn.LIFNode(tau=2.0, step_mode="m")
                                                   .to(device)(_g(X, device))))
    with pytest.raises(TypeError, match="LIFNode: v_reset must be a float"):
        snn.LIFNode(v_reset="-0.5")


def test_accuracy_rate_equals_snntorch(device):
    spk = (R.random((T, 5, 4)) < 0.4).astype(np.float32)
    y = np.array([0, 1, 2, 3, 1])
    want = TSF.accuracy_rate(torch.tensor(spk), torch.tensor(y))
    got = snn.accuracy_rate(gp.asarray(spk, device=device), gp.asarray(y, device=device))
    assert isinstance(got, float) and got == pytest.approx(float(want))


def test_rate_snntorch_options(device):
    """spikegen.rate's num_steps=None (one draw), offset, first_spike_time, time_var_input
    (they raised TypeError)."""
    data = gp.asarray(np.array([[0.0, 0.2, 1.0], [0.5, 1.0, 0.0]], np.float32), device=device)
    assert snn.rate(data).shape == (2, 3)
    spk = _np(snn.rate(data, 5, offset=1.0, first_spike_time=2))
    assert (spk[:2] == 0).all() and (spk[2:] == 1).all()
    assert (_np(snn.rate(data, 4, gain=0.0, offset=-1.0)) == 0).all()
    tv = _np(snn.rate(gp.ones((3, 2), device=device), time_var_input=True, first_spike_time=1))
    np.testing.assert_array_equal(tv, [[0, 0], [1, 1], [1, 1], [1, 1]])
    with pytest.raises(ValueError, match="rate: first_spike_time"):
        snn.rate(data, 3, first_spike_time=3)
    once = _np(snn.PoissonEncoder()(data))
    assert once.shape == (2, 3) and once[0, 0] == 0 and once[0, 2] == 1 and once[1, 1] == 1


def test_latency_targets_equal_snntorch(device):
    sg = pytest.importorskip("snntorch.spikegen")
    data = np.array([[0.05, 0.3, 0.9], [1.0, 0.5, 0.02]], np.float32)
    want = sg.latency(torch.tensor(data), num_steps=6, on_target=0.9, off_target=0.1,
                      normalize=True, linear=True)
    got = snn.latency(gp.asarray(data, device=device), 6, on_target=0.9, off_target=0.1,
                      normalize=True, linear=True)
    np.testing.assert_allclose(_np(got), want.numpy(), atol=1e-7)
    with pytest.raises(NotImplementedError, match="interpolate"):
        snn.latency(gp.asarray(data), 6, interpolate=True)


def test_surrogate_ports():
    """snnTorch's triangular (sign-flipping) and straight_through_estimator, SpikingJelly's
    ATan/Sigmoid; an uncalled factory or a torch surrogate is a TypeError naming the layer."""
    x = np.array([-1.0, -0.1, 0.0, 0.3, 2.0])
    for mine, ref in [(snn.surrogate.triangular(0.5), TS.triangular(0.5)),
                      (snn.surrogate.straight_through_estimator(),
                       TS.straight_through_estimator())]:
        xg = gp.asarray(x).requires_grad_()
        gp.sum(mine(xg) * gp.asarray(x + 3)).backward()
        xt = torch.tensor(x, requires_grad=True)
        (ref(xt).double() * torch.tensor(x + 3)).sum().backward()
        np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy())
    assert snn.surrogate.Sigmoid().slope == 4.0 and snn.surrogate.ATan().alpha == 2.0
    with pytest.raises(TypeError, match=r"LIF: surrogate=atan is the factory.*atan\(\)"):
        snn.LIF(0.9, surrogate=snn.surrogate.atan)
    with pytest.raises(TypeError, match="Synaptic: surrogate is a snntorch"):
        snn.Synaptic(0.5, 0.9, spike_grad=TS.atan())


def test_errors_name_the_layer_and_argument():
    x = gp.zeros((B, N))
    with pytest.raises(ValueError, match=r"LIF: mem has shape \(5,\)"):
        snn.LIF(0.9)(x, gp.zeros((5,)))
    with pytest.raises(ValueError, match=r"LIF: beta has shape \(2,\)"):
        snn.LIF(gp.asarray([0.5, 0.6]))(x)
    with pytest.raises(ValueError, match=r"Synaptic: threshold has shape \(4,\)"):
        snn.Synaptic(0.5, 0.5, threshold=gp.ones((4,)), step_mode="m")(gp.zeros((T, B, N)))
    with pytest.raises(TypeError, match="LIF: got both reset='zero' and snnTorch's "
                                        "reset_mechanism='none'"):
        snn.LIF(0.9, reset="zero", reset_mechanism="none")
    with pytest.raises(NotImplementedError, match="LIF: snnTorch's inhibition"):
        snn.LIF(0.9, inhibition=True, reset_delay=False)
    with pytest.raises(TypeError, match="LIF: unexpected keyword argument 'beta_'"):
        snn.LIF(0.9, beta_=1)
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchNeuron'"):
        snn.NoSuchNeuron
    snn.LIF(0.9, inhibition=False, graded_spikes_factor=1.0)   # defaults are fine


def test_numpy_parameters_and_detach_between_minibatches(device):
    """NumPy scalars and arrays as beta/threshold (they raised TypeError); snn.detach(model)
    carries the state into the next minibatch without backpropagating into the last one."""
    lif = snn.LIF(np.float32(0.9), threshold=np.array([1.0, 0.5, 2.0]), step_mode="m",
                  dtype=gp.float64).to(device)
    assert lif.beta == pytest.approx(0.9) and lif.threshold.shape == (N,)
    w = nn.Parameter(gp.ones((N,), dtype=gp.float64, device=device))
    gp.sum(lif(_g(X, device) * w)).backward()
    mem = _np(lif.state[0])
    snn.detach(lif)
    np.testing.assert_array_equal(_np(lif.state[0]), mem)
    w.grad = None
    gp.sum(lif(_g(X, device) * w)).backward()     # no "backward through the graph twice"
    ref = snn.LIF(float(np.float32(0.9)), threshold=np.array([1.0, 0.5, 2.0]), step_mode="m",
                  dtype=gp.float64).to(device)
    ref.state = (gp.asarray(mem, device=device),)
    w2 = nn.Parameter(gp.ones((N,), dtype=gp.float64, device=device))
    gp.sum(ref(_g(X, device) * w2)).backward()
    np.testing.assert_allclose(_np(w.grad), _np(w2.grad), atol=1e-12)
