"""A SpikingJelly user's ninth hunt: the pieces of ``activation_based`` an SJ script types that
grilly lacked, each against SpikingJelly itself (float64, its state_dict loaded as it is):
the surrogates S2NN, QPseudoSpike, LeakyKReLU, FakeNumericalGradient, LogTailedReLU,
PiecewiseExp, SuperSpike, NonzeroSignLogAbs, SquarewaveFourierSeries, DeterministicPass and
Rect (spikes and BPTT input gradients through an IFNode); KLIFNode and LIAFNode (every reset,
's' and 'm', the gradients of the input and of KLIF's k); PSN, MaskedPSN and SlidingPSN (both
step modes where they have them, weight and bias gradients); LatencyEncoder, PeriodicEncoder and
WeightedPhaseEncoder (every step, cycling, reset); and functional's kernel_dot_product,
spike_similar_loss and temporal_efficient_training_cross_entropy (values and gradients). On
every device."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import snn

torch = pytest.importorskip("torch")
pytest.importorskip("spikingjelly.activation_based")
from spikingjelly.activation_based import encoding as sje  # noqa: E402
from spikingjelly.activation_based import functional as sjf  # noqa: E402
from spikingjelly.activation_based import neuron as sjn  # noqa: E402
from spikingjelly.activation_based import surrogate as sjs  # noqa: E402

if not hasattr(sjn, "PSN"):   # (the GPU machine's 0.0.0.0.14 lacks them, and differs elsewhere)
    pytest.skip("the oracle is SpikingJelly 2.0's activation_based (PSN, LIAFNode, ...)",
                allow_module_level=True)

TOL = dict(rtol=1e-9, atol=1e-11)
X = np.random.default_rng(0).normal(0.0, 1.5, (5, 2, 3))


def _np(a):
    return np.asarray(a.to_device("cpu"))


def _g(a, device, grad=False):
    x = gp.asarray(np.asarray(a, dtype=np.float64), device=device)
    return x.requires_grad_() if grad else x


def _load(mine, ref, device):
    """ref's state_dict (float64, keys as they are) into mine (float64), moved to device."""
    mine.to(gp.float64).load_state_dict({k: v.detach().double().numpy()
                                         for k, v in ref.state_dict().items()})
    return mine.to(device)


def _run_pair(mine, ref, x, device, mode, ref_mode=None):
    """Outputs and input gradients of mine (grilly) and ref (SpikingJelly, float64) on x, run
    as a sequence ('m') or step by step ('s'), for a fixed weighting of the output."""
    ref = ref.double()
    ref_mode = ref_mode or mode
    xt = torch.tensor(x, requires_grad=True)
    xg = _g(x, device, grad=True)
    if ref_mode == "m":
        yt = ref(xt)
    else:
        yt = torch.stack([ref(s) for s in xt])
    if mode == "m":
        yg = mine(xg)
    else:
        yg = gp.stack([mine(s) for s in gp.unstack(xg, axis=0)], axis=0)
    w = np.linspace(-1.0, 1.0, yt.numel()).reshape(tuple(yt.shape))
    (yt * torch.tensor(w)).sum().backward()
    gp.sum(yg * _g(w, device)).backward()
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **TOL)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)


def _check_param_grads(mine, ref, names):
    for n in names:
        np.testing.assert_allclose(_np(getattr(mine, n).grad),
                                   getattr(ref, n).grad.numpy(), **TOL, err_msg=n)


# (name, args): every SpikingJelly surrogate grilly lacked, with non-default parameters
SURROGATES = [("S2NN", (3.0, 0.7)), ("QPseudoSpike", (2.5,)), ("LeakyKReLU", (0.1, 0.8)),
              ("FakeNumericalGradient", (0.4,)), ("LogTailedReLU", (0.1,)),
              ("PiecewiseExp", (1.5,)), ("SuperSpike", (1.2,)), ("NonzeroSignLogAbs", (2.0,)),
              ("SquarewaveFourierSeries", (4, 6.0)), ("DeterministicPass", ()), ("Rect", (0.8,))]


def test_new_surrogates_through_ifnode(device):
    # a soft-reset IFNode makes the BPTT gradient run through every step's surrogate
    for name, args in SURROGATES:
        for mode in ("m", "s"):
            mine = snn.IFNode(v_reset=None, step_mode=mode, dtype=gp.float64,
                              surrogate_function=getattr(snn.surrogate, name)(*args))
            ref = sjn.IFNode(v_reset=None, step_mode=mode,
                             surrogate_function=getattr(sjs, name)(*args))
            _run_pair(mine.to(device), ref, X, device, mode)


def test_surrogate_errors():
    with pytest.raises(NotImplementedError, match="S2NN: spiking=False"):
        snn.surrogate.S2NN(spiking=False)
    with pytest.raises(ValueError, match="QPseudoSpike: alpha must be > 1"):
        snn.surrogate.QPseudoSpike(1.0)
    with pytest.raises(TypeError, match="the factory"):
        snn.IFNode(surrogate_function=snn.surrogate.Rect)
    with pytest.raises(TypeError, match="torch tensors"):
        snn.IFNode(surrogate_function=sjs.S2NN())


@pytest.mark.parametrize("scale_reset,v_reset,decay_input",
                         [(False, 0.0, True), (True, None, False), (True, -0.2, True)])
def test_klif_node(device, scale_reset, v_reset, decay_input):
    for mode in ("s", "m"):
        ref = sjn.KLIFNode(scale_reset, 2.5, decay_input, 1.0, v_reset, step_mode=mode)
        with torch.no_grad():
            ref.k.fill_(1.3)
        mine = _load(snn.KLIFNode(scale_reset, 2.5, decay_input, 1.0, v_reset, step_mode=mode),
                     ref, device)
        _run_pair(mine, ref, X * 1.3, device, mode)
        _check_param_grads(mine, ref, ["k"])
        assert [k for k, _ in mine.named_parameters()] == ["k"]


@pytest.mark.parametrize("threshold_related,v_reset", [(False, 0.0), (True, None)])
def test_liaf_node(device, threshold_related, v_reset):
    # SpikingJelly 2.0's LIAFNode in 'm' falls back to LIFNode's multi-step path and returns
    # spikes; grilly's 'm' gives the analog outputs of its 's' loop (SpikingJelly 0.0.0.0.14's)
    for mode in ("s", "m"):
        ref = sjn.LIAFNode(torch.nn.ReLU(), threshold_related, 2.0, True, 0.8, v_reset)
        mine = snn.LIAFNode(nn.ReLU(), threshold_related, 2.0, True, 0.8, v_reset,
                            step_mode=mode, dtype=gp.float64).to(device)
        _run_pair(mine, ref, X, device, mode, ref_mode="s")
    with pytest.raises(TypeError, match="LIAFNode: act is a torch function"):
        snn.LIAFNode(torch.nn.ReLU(), False)


def test_psn(device):
    T = X.shape[0]
    ref = sjn.PSN(T)
    mine = _load(snn.PSN(T), ref, device)
    _run_pair(mine, ref, X, device, "m")
    _check_param_grads(mine, ref, ["weight", "bias"])
    with pytest.raises(ValueError, match="PSN: x_seq has 4 steps"):
        mine(_g(X[:4], device))


@pytest.mark.parametrize("lam,mode", [(0.3, "m"), (1.0, "s"), (1.0, "m")])
def test_masked_psn(device, lam, mode):
    T = X.shape[0]
    ref = sjn.MaskedPSN(2, T, lam, step_mode=mode)
    mine = _load(snn.MaskedPSN(2, T, lam, step_mode=mode), ref, device)
    assert sorted(mine.state_dict()) == sorted(ref.state_dict())
    _run_pair(mine, ref, X, device, mode)
    _check_param_grads(mine, ref, ["weight", "bias"])
    if mode == "s":
        with pytest.raises(OverflowError, match="MaskedPSN"):
            mine(_g(X[0], device))
        snn.functional.reset_net(mine)
        mine.lambda_ = 0.5
        assert float(mine.lambda_) == 0.5
        with pytest.raises(ValueError, match="lambda_ >= 1"):
            mine(_g(X[0], device))


@pytest.mark.parametrize("exp_init", [True, False])
def test_sliding_psn(device, exp_init):
    for mode in ("s", "m"):
        ref = sjn.SlidingPSN(3, exp_init, step_mode=mode)
        mine = _load(snn.SlidingPSN(3, exp_init, step_mode=mode), ref, device)
        _run_pair(mine, ref, X, device, mode)
        _check_param_grads(mine, ref, ["weight", "bias"])
        if exp_init:   # SpikingJelly's initial weights 1/4, 1/2, 1
            np.testing.assert_allclose(_np(snn.SlidingPSN(3).weight), ref.weight.detach())


def test_stateful_encoders(device):
    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, 1.0, (2, 3))
    cases = [(snn.encoding.LatencyEncoder(4), sje.LatencyEncoder(4), x),
             (snn.LatencyEncoder(4, "log"), sje.LatencyEncoder(4, "log"), x),
             (snn.WeightedPhaseEncoder(3), sje.WeightedPhaseEncoder(3),
              rng.integers(0, 8, (2, 3)) / 8.0)]
    spikes = (rng.uniform(size=(3, 2)) > 0.5) * 1.0
    cases.append((snn.PeriodicEncoder(_g(spikes, device)), sje.PeriodicEncoder(
        torch.tensor(spikes)), spikes))
    for mine, ref, inp in cases:
        for _ in range(2):   # the second pass after reset_net
            got = [_np(mine(_g(inp, device))) for _ in range(6)]   # past T: cycles
            want = [ref(torch.tensor(inp)).numpy() for _ in range(6)]
            np.testing.assert_array_equal(np.stack(got), np.stack(want))
            snn.functional.reset_net(mine)
            sjf.reset_net(ref)
    # 'm': each step of the sequence is one call (the first step encoded)
    mine, ref = snn.LatencyEncoder(3, step_mode="m"), sje.LatencyEncoder(3, step_mode="m")
    seq = np.stack([x] * 4)
    np.testing.assert_array_equal(_np(mine(_g(seq, device))), ref(torch.tensor(seq)).numpy())
    with pytest.raises(ValueError, match="WeightedPhaseEncoder: x must lie"):
        snn.WeightedPhaseEncoder(2)(_g(np.full(3, 0.9), device))
    with pytest.raises(NotImplementedError, match="enc_function='exp'"):
        snn.LatencyEncoder(3, "exp")


def _loss_pair(fg, ft, arrays, device):
    ga = [_g(a, device, grad=True) for a in arrays]
    ta = [torch.tensor(a, requires_grad=True) for a in arrays]
    yg, yt = fg(*ga), ft(*ta)
    w = np.linspace(-1.0, 1.0, yt.numel()).reshape(tuple(yt.shape))
    (yt * torch.tensor(w)).sum().backward()
    gp.sum(yg * _g(w, device)).backward()
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **TOL)
    for g, t in zip(ga, ta):
        np.testing.assert_allclose(_np(g.grad), t.grad.numpy(), **TOL)


def test_sj_losses(device):
    rng = np.random.default_rng(2)
    F = snn.functional
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    for k, extra in (("linear", ()), ("polynomial", (3,)), ("sigmoid", (0.7,)),
                     ("gaussian", (1.3,))):
        _loss_pair(lambda a, b: F.kernel_dot_product(a, b, k, *extra),
                   lambda a, b: sjf.kernel_dot_product(a, b, k, *extra), [x, y], device)
    spk = (rng.uniform(size=(5, 2, 3)) > 0.5) + rng.uniform(0.0, 0.1, (5, 2, 3))
    lab = np.eye(3)[[0, 1, 0, 2, 1]]
    lab[2, 2] = 1.0   # multi-label: shares a class with samples 0 and 3
    for k, lt, extra in (("linear", "mse", ()), ("sigmoid", "l1", (0.5,)),
                         ("gaussian", "mse", (2.0,))):
        _loss_pair(lambda s: F.spike_similar_loss(s, _g(lab, device), k, lt, *extra),
                   lambda s: sjf.spike_similar_loss(s, torch.tensor(lab), k, lt, *extra),
                   [spk], device)
    # 'bce' (SpikingJelly's labels are float32 there, so compare in float32)
    s32 = gp.asarray(spk.astype(np.float32), device=device)
    got = F.spike_similar_loss(s32, gp.asarray(lab.astype(np.float32), device=device),
                               "sigmoid", "bce", 0.5)
    want = sjf.spike_similar_loss(torch.tensor(spk, dtype=torch.float32), torch.tensor(lab),
                                  "sigmoid", "bce", 0.5)
    np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-5)
    for shape, tshape in (((4, 3, 5), (3,)), ((4, 3, 5, 2), (3, 2))):
        xs, tg = rng.normal(size=shape), rng.integers(0, 5, tshape)
        _loss_pair(lambda a: F.temporal_efficient_training_cross_entropy(
            a, gp.asarray(tg, device=device)),
            lambda a: sjf.temporal_efficient_training_cross_entropy(a, torch.tensor(tg)),
            [xs], device)
    with pytest.raises(NotImplementedError, match="kernel='rbf'"):
        F.kernel_dot_product(_g(x, device), _g(y, device), "rbf")
    with pytest.raises(ValueError, match="sigma must be positive"):
        F.kernel_dot_product(_g(x, device), _g(y, device), "gaussian", 0.0)


@pytest.mark.parametrize("make", [
    lambda L, m: L.LIFNode(2.5, True, 1.0, -0.2, step_mode=m, store_v_seq=True),
    lambda L, m: L.LIFNode(2.5, False, 1.0, -0.2, detach_reset=True, step_mode=m),
    lambda L, m: L.IFNode(1.0, 0.3, step_mode=m),
    lambda L, m: L.ParametricLIFNode(2.5, True, 1.0, -0.3, step_mode=m),
], ids=["lif", "lif_no_decay_input", "if", "plif"])
def test_nonzero_v_reset(device, make):
    # was a NotImplementedError: the membrane starts at v_reset, leaks towards it, resets to it
    for mode in ("s", "m"):
        ref = make(sjn, mode)
        mine = _load(make(snn, mode), ref, device)
        assert float(make(snn, mode).v) == float(ref.v)   # before the first call
        _run_pair(mine, ref, X, device, mode)
        np.testing.assert_allclose(_np(mine.v), ref.v.detach().numpy(), **TOL)
        if mode == "m" and mine.store_v_seq:
            np.testing.assert_allclose(_np(mine.v_seq), ref.v_seq.detach().numpy(), **TOL)
        if isinstance(mine, snn.ParametricLIFNode):
            _check_param_grads(mine, ref, ["w"])


def test_liaf_nonzero_v_reset(device):
    ref = sjn.LIAFNode(torch.nn.ReLU(), True, 2.0, False, 0.8, -0.1)
    mine = snn.LIAFNode(nn.ReLU(), True, 2.0, False, 0.8, -0.1, step_mode="m",
                        dtype=gp.float64).to(device)
    _run_pair(mine, ref, X, device, "m", ref_mode="s")


@pytest.mark.parametrize("inplane", [None, 3])
def test_gated_lif_node(device, inplane):
    rng = np.random.default_rng(3)
    ref = sjn.GatedLIFNode(4, inplane)
    mine = _load(snn.GatedLIFNode(4, inplane), ref, device)
    assert sorted(mine.state_dict()) == sorted(ref.state_dict())
    ref = ref.double()
    for _ in range(2):   # the membrane carries over to the next call (detached between)
        _run_pair(mine, ref, rng.normal(0.0, 1.0, (4, 2, 3, 2, 2)), device, "m")
        _check_param_grads(mine, ref, [n for n, _ in ref.named_parameters()])
        mine.zero_grad()
        ref.zero_grad()
        snn.functional.detach_net(mine)
        sjf.detach_net(ref)
    np.testing.assert_allclose(_np(mine.v), ref.v.detach().numpy(), **TOL)
    with pytest.raises(ValueError, match="GatedLIFNode: x_seq must be an Array \\(T, N, ...\\) "
                                         "with T = 4"):
        mine(_g(np.zeros((3, 2, 3, 2, 2)), device))


def test_backend_keyword_and_set_backend(device):
    # SpikingJelly 0.0.0.0.14's LIFNode(..., step_mode='m', backend='cupy') was a TypeError
    for cls in (snn.LIFNode, snn.IFNode, snn.ParametricLIFNode, snn.QIFNode, snn.EIFNode,
                snn.IzhikevichNode, snn.KLIFNode):
        node = cls(step_mode="m", backend="cupy", store_v_seq=True)
        assert (node.backend, node.store_v_seq) == ("cupy", True)
    # 0.0.0.0.14's positional order (..., step_mode, backend, store_v_seq) and 2.0's
    old = snn.LIFNode(2.0, True, 1.0, 0.0, None, False, "m", "cupy", True)
    new = snn.LIFNode(2.0, True, 1.0, 0.0, None, False, "m", True)
    assert (old.backend, old.store_v_seq, new.backend, new.store_v_seq) == ("cupy", True,
                                                                            "torch", True)
    ref = sjn.LIFNode(step_mode="m")
    _run_pair(snn.LIFNode(step_mode="m", backend="cupy", dtype=gp.float64).to(device), ref, X,
              device, "m")
    with pytest.raises(ValueError, match="LIFNode: backend must be"):
        snn.LIFNode(backend="cuda")
    net = nn.Sequential(nn.Linear(3, 3), snn.LIFNode(), snn.QIFNode())
    snn.functional.set_backend(net, "cupy", snn.LIFNode)
    assert (net[1].backend, net[2].backend) == ("cupy", "torch")
    snn.functional.set_backend(net, "triton")
    assert (net[1].backend, net[2].backend) == ("triton", "triton")


def test_sj_surrogate_spiking_keyword_and_alpha():
    # SpikingJelly's signatures take spiking=True; Sigmoid's slope is its alpha
    for name in ("ATan", "Sigmoid", "PiecewiseQuadratic", "SoftSign", "Erf",
                 "PiecewiseLeakyReLU"):
        sg = getattr(snn.surrogate, name)(spiking=True)
        ref = getattr(sjs, name)()
        for attr in ("alpha", "w", "c"):
            if hasattr(ref, attr):
                assert getattr(sg, attr) == getattr(ref, attr)
        with pytest.raises(NotImplementedError, match=f"{name}: spiking=False"):
            getattr(snn.surrogate, name)(spiking=False)


@pytest.mark.parametrize("make", [
    lambda L, m: L.SimpleIFNode(0.8, 0.1, detach_reset=True, step_mode=m),
    lambda L, m: L.SimpleIFNode(1.0, None, step_mode=m),
    lambda L, m: L.SimpleLIFNode(2.5, True, 1.0, -0.2, step_mode=m),
    lambda L, m: L.SimpleLIFNode(2.5, False, 1.0, 0.0, step_mode=m),
], ids=["if_hard", "if_soft", "lif", "lif_no_decay_input"])
def test_simple_nodes(device, make):
    # SimpleBaseNode starts at v = 0 whatever v_reset (grilly's started at v_reset)
    for mode in ("s", "m"):
        ref = make(sjn, mode)
        mine = make(snn, mode).to(gp.float64).to(device)
        assert mine.v == ref.v == 0.0
        _run_pair(mine, ref, X, device, mode)
        np.testing.assert_allclose(_np(mine.v), ref.v.detach().numpy(), **TOL)


@pytest.mark.parametrize("cls", ["LIFNode", "QIFNode", "KLIFNode", "IzhikevichNode"])
def test_v_threshold_assignment(device, cls):
    # SpikingJelly reads v_threshold at every step; grilly's QIF/EIF/Izhikevich/KLIF kept the
    # old threshold silently and LIFNode/IFNode/ParametricLIFNode raised AttributeError
    rng = np.random.default_rng(4)
    thr = rng.uniform(0.3, 1.2, X.shape[1:])
    ref = getattr(sjn, cls)().double()
    mine = getattr(snn, cls)(dtype=gp.float64).to(device)
    xt = torch.tensor(X, requires_grad=True)
    xg = _g(X, device, grad=True)
    yt, yg = [], []
    for t in range(X.shape[0]):
        if t == 2:
            ref.v_threshold, mine.v_threshold = 0.4, 0.4
        if t == 3:   # per-neuron thresholds
            ref.v_threshold, mine.v_threshold = torch.tensor(thr), _g(thr, device)
        yt.append(ref(xt[t]))
        yg.append(mine(xg[t]))
    assert "_threshold" not in mine.state_dict()   # SpikingJelly's v_threshold is no state
    yt, yg = torch.stack(yt), gp.stack(yg, axis=0)
    w = np.linspace(-1.0, 1.0, yt.numel()).reshape(tuple(yt.shape))
    (yt * torch.tensor(w)).sum().backward()
    gp.sum(yg * _g(w, device)).backward()
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **TOL)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)
    mine.v_threshold = 1.0   # back to a float: no per-neuron buffer left behind
    assert mine.v_threshold == 1.0 and "_threshold" not in mine.state_dict()


def test_set_threshold_margin_and_kaiming(device):
    rng = np.random.default_rng(5)
    lab = np.eye(4)[rng.integers(0, 4, 3)]
    ref = sjn.LIFNode().double()
    mine = snn.LIFNode(dtype=gp.float64).to(device)
    sjf.set_threshold_margin(ref, torch.tensor(lab), 1.0, 0.8, 1.3)
    snn.functional.set_threshold_margin(mine, _g(lab, device), 1.0, 0.8, 1.3)
    np.testing.assert_allclose(_np(mine.v_threshold), ref.v_threshold.numpy())
    x = rng.uniform(0.5, 3.0, (3, 3, 4))
    _run_pair(mine, ref, x, device, "s")
    mine.eval()
    ref.eval()
    sjf.set_threshold_margin(ref, torch.tensor(lab), 1.2)
    snn.functional.set_threshold_margin(mine, _g(lab, device), 1.2)
    assert mine.v_threshold == ref.v_threshold == 1.2
    # kaiming_normal_(a=sqrt(5)) on every conv/linear weight: std gain / sqrt(fan_in)
    net = nn.Sequential(snn.layer.Conv2d(4, 16, 5), nn.ReLU(), snn.layer.Linear(60, 50),
                        nn.Conv1d(4, 6, 3), snn.LIFNode()).to(device)
    bias = _np(net[2].bias).copy()
    snn.functional.kaiming_normal_conv_linear_weight(net)
    for m, fan in ((net[0], 4 * 25), (net[2], 60)):
        std = torch.nn.init.calculate_gain("leaky_relu", 5 ** 0.5) / fan ** 0.5
        w = _np(m.weight)
        n = w.size
        assert abs(w.mean()) < 5 * std / n ** 0.5
        assert abs(w.std() / std - 1.0) < 5 * (0.5 / n) ** 0.5
    np.testing.assert_array_equal(_np(net[2].bias), bias)
