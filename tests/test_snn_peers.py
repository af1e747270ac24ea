"""snnTorch's and SpikingJelly's neurons under their names (snn.Leaky, Alpha, Lapicque,
RSynaptic; ParametricLIFNode, QIFNode, EIFNode, IzhikevichNode, NonSpiking*Node) against the
installed libraries: spikes and membranes step by step, BPTT gradients of the input and the
learnable parameters, state reset, state_dict keys, and the errors."""
import numpy as np
import pytest

import grilly as gp
from grilly.nn import snn

torch = pytest.importorskip("torch")
snntorch = pytest.importorskip("snntorch")
sjn = pytest.importorskip("spikingjelly.activation_based.neuron")

T, B, N = 6, 2, 3
R = np.random.default_rng(11)
X = R.standard_normal((T, B, N)) * 1.3 + 0.4
W = R.standard_normal((T, B, N))
# snnTorch keeps its parameters in float32 (0.8 -> 0.800000012): membranes agree to ~1e-7
TOL = dict(rtol=1e-5, atol=1e-6)
PTOL = dict(rtol=1e-4, atol=1e-5)   # parameter gradients: summed in float32 by snnTorch


def _np(a):
    return np.asarray(a.to_device("cpu"))


def _g(a, device, grad=False):
    x = gp.asarray(np.asarray(a, dtype=np.float64), device=device)
    return x.requires_grad_() if grad else x


def _loop(layer, x, n_out, grilly):
    """The snnTorch tutorial loop, state passed back explicitly: spikes and membranes (T, ...)."""
    state = (None,) * (n_out - 1)
    spk, mem = [], []
    for t in range(T):
        out = layer(x[t], *state)
        state = out[1:]
        spk.append(out[0])
        mem.append(out[-1])
    stack = gp.stack if grilly else torch.stack
    return stack(spk), stack(mem)


def _check_snntorch(ref, mine, device, n_out, params=(), x=X):
    """Spikes and membranes equal; the input's and ``params``' gradients of sum(W * spk)."""
    xt = torch.tensor(x, requires_grad=True)
    xg = _g(x, device, grad=True)
    st, mt = _loop(ref, xt, n_out, False)
    sg, mg = _loop(mine, xg, n_out, True)
    (st.double() * torch.tensor(W)).sum().backward()
    gp.sum(sg * _g(W, device)).backward()
    np.testing.assert_array_equal(_np(sg), st.detach().numpy())
    np.testing.assert_allclose(_np(mg), mt.detach().numpy(), **TOL)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)
    for name in params:
        np.testing.assert_allclose(_np(getattr(mine, name).grad),
                                   getattr(ref, name).grad.numpy(), **PTOL)
    assert st.sum() > 0   # the test exercises spikes and resets


def _copy(ref, mine, device):
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return mine.to(device)


@pytest.mark.parametrize("reset_delay", [True, False])
@pytest.mark.parametrize("reset", ["subtract", "zero", "none"])
def test_leaky_equals_snntorch(reset, reset_delay, device):
    """snn.Leaky: the tutorial loop spk, mem = lif(cur, mem) from init_leaky(), with learnable
    beta/threshold; reset_delay=False as snnTorch 1.0 computes it (its double-reset correction
    is hit: inputs large enough for the membrane to stay above threshold after a reset)."""
    x = X * 2.5 if not reset_delay else X
    ref = snntorch.Leaky(0.8, 1.0, None, reset_mechanism=reset, reset_delay=reset_delay,
                         learn_beta=True, learn_threshold=True)
    mine = snn.Leaky(0.8, 1.0, None, reset_mechanism=reset, reset_delay=reset_delay,
                     learn_beta=True, learn_threshold=True, dtype=gp.float64).to(device)
    assert ref.init_leaky() is not None and mine.init_leaky() is None
    _check_snntorch(ref, mine, device, 2, ("beta", "threshold"), x)
    # the layer in grilly's multi-step mode: the same spikes (fused kernels where they apply)
    multi = snn.Leaky(0.8, reset_mechanism=reset, reset_delay=reset_delay, step_mode="m",
                      dtype=gp.float64).to(device)
    ref2 = snntorch.Leaky(0.8, reset_mechanism=reset, reset_delay=reset_delay)
    np.testing.assert_array_equal(_np(multi(_g(x, device))),
                                  _loop(ref2, torch.tensor(x), 2, False)[0].numpy())


def test_leaky_conventions(device):
    """init_hidden returns the spikes (and mem with output=True); the state restarts from zeros
    when the input's shape changes, as snnTorch's; lif.mem; state_dict keys and a snnTorch
    checkpoint loading as it is; snn.reset."""
    ref = snntorch.Leaky(0.7, threshold=0.8, init_hidden=True)
    mine = snn.Leaky(0.7, threshold=0.8, init_hidden=True, dtype=gp.float64)
    assert set(mine.state_dict()) == set(ref.state_dict()) == {
        "beta", "threshold", "graded_spikes_factor", "reset_mechanism_val"}
    _copy(ref, mine, device)
    for t in range(T):
        out = mine(_g(X[t], device))
        assert isinstance(out, gp.Array)
        np.testing.assert_array_equal(_np(out), ref(torch.tensor(X[t])).numpy())
    np.testing.assert_allclose(_np(mine.mem), ref.mem.numpy(), **TOL)
    # a batch of another shape: both start from zeros
    x2 = R.standard_normal((1, N)) * 2
    np.testing.assert_array_equal(_np(mine(_g(x2, device))), ref(torch.tensor(x2)).numpy())
    np.testing.assert_allclose(_np(mine.mem), ref.mem.numpy(), **TOL)
    with pytest.raises(TypeError, match="init_hidden=True"):
        mine(_g(x2, device), _g(x2, device))
    snn.reset(mine)
    assert mine.mem is None
    both = snn.Leaky(0.7, init_hidden=True, output=True).to(device)
    spk, mem = both(_g(X[0], device))
    assert spk.shape == mem.shape == (B, N)
    lif = snn.Leaky(0.9, learn_beta=True)
    assert [k for k, _ in lif.named_parameters()] == ["beta"]
    assert dict(lif.named_buffers())["reset_mechanism_val"].dtype == gp.int64


@pytest.mark.parametrize("reset", ["subtract", "zero", "none"])
def test_synaptic_equals_snntorch(reset, device):
    """grilly's Synaptic is snnTorch's (same arguments and returns): (spk, syn, mem) per step
    from init_synaptic(), learnable alpha/beta/threshold."""
    ref = snntorch.Synaptic(0.6, 0.8, reset_mechanism=reset, learn_alpha=True, learn_beta=True,
                            learn_threshold=True)
    mine = snn.Synaptic(0.6, 0.8, reset_mechanism=reset, learn_alpha=True, learn_beta=True,
                        learn_threshold=True, dtype=gp.float64).to(device)
    assert mine.init_synaptic() == (None, None)
    _check_snntorch(ref, mine, device, 3)
    for name in ("alpha", "beta", "threshold"):
        np.testing.assert_allclose(_np(getattr(mine, "_" + name).grad),
                                   getattr(ref, name).grad.numpy(), **PTOL)


@pytest.mark.parametrize("reset", ["subtract", "zero", "none"])
@pytest.mark.parametrize("kw", [dict(beta=0.8), dict(R=5.0, C=2.0, time_step=1.5),
                                dict(beta=0.85, R=2.0), dict(beta=0.85, C=3.0)])
def test_lapicque_equals_snntorch(kw, reset, device):
    """snn.Lapicque from beta, or R and C and time_step, as snnTorch derives them: spikes,
    membranes, the input's and the learnable threshold's gradients; its buffers."""
    ref = snntorch.Lapicque(**kw, reset_mechanism=reset, learn_threshold=True)
    mine = snn.Lapicque(**kw, reset_mechanism=reset, learn_threshold=True,
                        dtype=gp.float64).to(device)
    assert set(mine.state_dict()) == set(ref.state_dict())
    for k in ("R", "C", "time_step"):
        np.testing.assert_allclose(_np(mine.state_dict()[k]), float(ref.state_dict()[k]),
                                   rtol=1e-6)
    assert mine.init_lapicque() is None
    _check_snntorch(ref, mine, device, 2, ("threshold",), X * 3)
    multi = snn.Lapicque(**kw, reset_mechanism=reset, step_mode="m",
                         dtype=gp.float64).to(device)
    np.testing.assert_array_equal(
        _np(multi(_g(X * 3, device))),
        _loop(snntorch.Lapicque(**kw, reset_mechanism=reset), torch.tensor(X * 3), 2,
              False)[0].numpy())


@pytest.mark.parametrize("reset", ["subtract", "zero", "none"])
def test_alpha_equals_snntorch(reset, device):
    """snn.Alpha: (spk, syn_exc, syn_inh, mem) per step; the gradients of the input and a
    learnable beta and threshold (snnTorch's learn_alpha=True raises TypeError in its own
    constructor, so alpha's gradient is only checked to exist)."""
    ref = snntorch.Alpha(0.9, 0.8, reset_mechanism=reset, learn_beta=True,
                         learn_threshold=True)
    mine = snn.Alpha(0.9, 0.8, reset_mechanism=reset, learn_beta=True, learn_threshold=True,
                     dtype=gp.float64).to(device)
    assert set(mine.state_dict()) == set(ref.state_dict())
    assert mine.init_alpha() == (None, None, None)
    _check_snntorch(ref, mine, device, 4, ("beta", "threshold"), X * 4)
    learn = snn.Alpha(0.9, 0.8, learn_alpha=True, dtype=gp.float64).to(device)
    gp.sum(learn.multi_step(_g(X * 4, device), return_mem=True)[1]).backward()
    assert learn.alpha.grad is not None
    with pytest.raises(ValueError, match="Alpha: alpha must be greater than beta"):
        snn.Alpha(0.5, 0.8)


@pytest.mark.parametrize("reset", ["subtract", "zero", "none"])
@pytest.mark.parametrize("all_to_all", [False, True])
def test_rsynaptic_equals_snntorch(all_to_all, reset, device):
    """snn.RSynaptic: one-to-one V or a Linear recurrence (snnTorch's weights loaded from its
    state_dict), learnable alpha/beta/threshold/recurrence; (spk, syn, mem) per step."""
    torch.manual_seed(0)
    kw = (dict(all_to_all=True, linear_features=N) if all_to_all
          else dict(V=0.5, all_to_all=False))
    ref = snntorch.RSynaptic(0.6, 0.8, **kw, reset_mechanism=reset, learn_alpha=True,
                             learn_beta=True, learn_threshold=True).double()
    mine = snn.RSynaptic(0.6, 0.8, **kw, reset_mechanism=reset, learn_alpha=True,
                         learn_beta=True, learn_threshold=True, dtype=gp.float64)
    sd = ref.state_dict()
    if not all_to_all:   # snnTorch also lists its learnable V as recurrent.V (the same tensor)
        assert set(sd) - set(mine.state_dict()) == {"recurrent.V"}
        sd = {k: v for k, v in sd.items() if k != "recurrent.V"}
    else:
        assert set(sd) == set(mine.state_dict())
    mine.load_state_dict({k: v.detach().numpy() for k, v in sd.items()})
    mine.to(device)
    assert mine.init_rsynaptic() == (None, None, None)
    _check_snntorch(ref, mine, device, 4, ("alpha", "beta", "threshold"))
    if all_to_all:
        np.testing.assert_allclose(_np(mine.recurrent.weight.grad),
                                   ref.recurrent.weight.grad.numpy(), **PTOL)
    else:
        np.testing.assert_allclose(_np(mine.V.grad), ref.V.grad.numpy(), **PTOL)


def _check_sj(ref, mine, device, params=(), x=X):
    """SpikingJelly's multi-step node and grilly's: spikes, v_seq and the gradients."""
    xt = torch.tensor(x, requires_grad=True)
    xg = _g(x, device, grad=True)
    s = ref(xt)
    (s * torch.tensor(W)).sum().backward()
    g = mine(xg)
    gp.sum(g * _g(W, device)).backward()
    np.testing.assert_array_equal(_np(g), s.detach().numpy())
    # SpikingJelly computes PLIF's sigmoid(w) in float32: ~1e-9
    np.testing.assert_allclose(_np(mine.v_seq), ref.v_seq.detach().numpy(), atol=1e-7)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), atol=1e-7)
    for name in params:
        np.testing.assert_allclose(_np(getattr(mine, name).grad),
                                   getattr(ref, name).grad.numpy(), atol=1e-7)
    assert 0 < float(s.detach().sum()) < s.numel()


@pytest.mark.parametrize("decay_input", [True, False])
@pytest.mark.parametrize("detach_reset", [False, True])
@pytest.mark.parametrize("v_reset", [0.0, None])
def test_parametric_lif_equals_spikingjelly(v_reset, detach_reset, decay_input, device):
    """ParametricLIFNode: spikes, v_seq, the input's and w's gradients (multi-step, the fused
    kernels); single-step calls give the same; reset_net; state_dict key w."""
    kw = dict(v_reset=v_reset, detach_reset=detach_reset, decay_input=decay_input)
    ref = sjn.ParametricLIFNode(init_tau=3.0, step_mode="m", store_v_seq=True, **kw).double()
    mine = snn.ParametricLIFNode(3.0, step_mode="m", store_v_seq=True, dtype=gp.float64,
                                 **kw).to(device)
    assert list(mine.state_dict()) == list(ref.state_dict()) == ["w"]
    _check_sj(ref, mine, device, ("w",))
    snn.functional.reset_net(mine)
    assert mine.state is None and mine.v == (0.0 if v_reset is None else v_reset)
    single = snn.ParametricLIFNode(3.0, dtype=gp.float64, **kw).to(device)
    ref1 = sjn.ParametricLIFNode(init_tau=3.0, **kw).double()
    for t in range(T):
        np.testing.assert_array_equal(_np(single(_g(X[t], device))),
                                      ref1(torch.tensor(X[t])).detach().numpy())
    np.testing.assert_allclose(_np(single.v), ref1.v.detach().numpy(), atol=1e-7)
    assert float(_np(single.tau)) == pytest.approx(3.0)


@pytest.mark.parametrize("v_reset", ["default", None])
@pytest.mark.parametrize("kind", ["QIFNode", "EIFNode", "IzhikevichNode"])
def test_nonlinear_nodes_equal_spikingjelly(kind, v_reset, device):
    """QIFNode, EIFNode, IzhikevichNode (with a recovery a, b): spikes, v_seq and the input's
    gradient; the membrane starts at v_reset; single steps; reset_net."""
    kw = {} if v_reset == "default" else {"v_reset": None}
    if kind == "IzhikevichNode":
        kw.update(a=0.3, b=0.2)
    ref = getattr(sjn, kind)(tau=2.0, step_mode="m", store_v_seq=True, **kw)
    mine = getattr(snn, kind)(step_mode="m", store_v_seq=True, dtype=gp.float64,
                              **kw).to(device)
    assert mine.v == ref.v
    _check_sj(ref, mine, device)
    if kind == "IzhikevichNode":
        np.testing.assert_allclose(_np(mine.w), ref.w.detach().numpy(), atol=1e-12)
    mine.reset()   # SpikingJelly's MemoryModule.reset
    assert mine.state is None and mine.v_seq is None
    single = getattr(snn, kind)(dtype=gp.float64, **kw).to(device)
    ref1 = getattr(sjn, kind)(tau=2.0, **kw)
    for t in range(T):
        np.testing.assert_array_equal(_np(single(_g(X[t], device))),
                                      ref1(torch.tensor(X[t])).detach().numpy())
    np.testing.assert_allclose(_np(single.v), ref1.v.detach().numpy(), atol=1e-12)


@pytest.mark.parametrize("decode", [None, "max-mem", "max-abs-mem", "mean-mem", "last_mem"])
def test_nonspiking_nodes_equal_spikingjelly(decode, device):
    if not hasattr(sjn, "NonSpikingLIFNode"):   # (SpikingJelly 0.0.0.0.14 has none)
        pytest.skip("this SpikingJelly has no NonSpikingLIFNode")
    for ref, mine in [(sjn.NonSpikingLIFNode(tau=3.0, decode=decode),
                       snn.NonSpikingLIFNode(3.0, decode=decode)),
                      (sjn.NonSpikingIFNode(decode=decode), snn.NonSpikingIFNode(decode=decode))]:
        xt = torch.tensor(X, requires_grad=True)
        xg = _g(X, device, grad=True)
        r, m = ref(xt), mine(xg)
        if decode is None:   # a list of every step's membrane, as SpikingJelly's
            assert isinstance(m, list) and len(m) == T
            r, m = torch.stack(r), gp.stack(m)
        (r * torch.tensor(W[0] if decode else W)).sum().backward()
        gp.sum(m * _g(W[0] if decode else W, device)).backward()
        np.testing.assert_allclose(_np(m), r.detach().numpy(), atol=1e-12)
        np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), atol=1e-12)


def test_errors_name_the_neuron_and_argument():
    with pytest.raises(NotImplementedError, match="Lapicque: learn_beta"):
        snn.Lapicque(beta=0.9, learn_beta=True)
    with pytest.raises(ValueError, match="Lapicque: give beta, or two of beta, R and C"):
        snn.Lapicque(R=2.0)
    with pytest.raises(NotImplementedError, match="RSynaptic: reset_delay=False"):
        snn.RSynaptic(0.5, 0.5, V=1.0, all_to_all=False, reset_delay=False)
    with pytest.raises(TypeError, match="RSynaptic: all_to_all=True needs linear_features"):
        snn.RSynaptic(0.5, 0.5)
    with pytest.raises(TypeError, match="Leaky: state_quant must be a function"):
        snn.Leaky(0.9, state_quant=True)
    with pytest.raises(ValueError, match="QIFNode: needs v_threshold > v_reset"):
        snn.QIFNode(v_reset=2.0)
    with pytest.raises(ValueError, match="EIFNode: tau must be a number > 1"):
        snn.EIFNode(tau=0.5)
    with pytest.raises(ValueError, match="NonSpikingLIFNode: decode must be one of"):
        snn.NonSpikingLIFNode(decode="max")
    with pytest.raises(TypeError, match="ParametricLIFNode: v_reset must be a float"):
        snn.ParametricLIFNode(v_reset="0")
