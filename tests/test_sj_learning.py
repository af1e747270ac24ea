"""SpikingJelly 2.0's plasticity learners (``learning.STDPLearner``, ``MSTDPLearner``,
``MSTDPETLearner``) and online-learning pieces (``layer.ReplaceforGrad``, ``GradwithTrace``,
``SpikeTraceOp``, ``OTTTSequential``, ``neuron.OTTTLIFNode``, ``learning.online_learning``'s
``ottt_online_training`` and ``fptt_online_training``) on grilly against SpikingJelly itself:
the same float64 weights and input spikes in both, several steps, then the updates the learners
return, the weights after optimizer steps on the .grad they accumulate, and the OTTT layers'
outputs and gradients, on every device.

The GPU host has SpikingJelly 0.0.0.0.14, whose learners differ (a ``learning.py`` module of
other semantics) and whose OTTT neuron and loops are built otherwise: those comparisons need the
2.0 API, recognized by its attributes (``learning.plasticity`` with ``MSTDPETLearner``,
``OTTTLIFNode.materialize_states``, ``online_learning.ottt_online_training``); the four OTTT
layers are compared wherever SpikingJelly has them."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn, optim
from grilly.nn import functional as GF
from grilly.nn import snn
from grilly.nn.snn import layer as L
from grilly.nn.snn import learning
from grilly.nn.snn.learning import online_learning as GOL

torch = pytest.importorskip("torch")
pytest.importorskip("spikingjelly.activation_based")
from spikingjelly.activation_based import functional as sjf  # noqa: E402
from spikingjelly.activation_based import layer as sjl  # noqa: E402
from spikingjelly.activation_based import neuron as sjn  # noqa: E402
from test_sj_layers_extra import _g, _load, _np  # noqa: E402  (float64 both sides)

try:
    from spikingjelly.activation_based import learning as sjlearn
except ImportError:   # pragma: no cover
    sjlearn = None
try:
    from spikingjelly.activation_based.learning import online_learning as sjol
except ImportError:   # pragma: no cover
    sjol = None

# 2.0's learning is a package (learning.plasticity); earlier releases' learning.py module had
# learners of the same names but other semantics
LEARN2 = pytest.mark.skipif(
    not (hasattr(sjlearn, "plasticity") and hasattr(sjlearn, "MSTDPETLearner")),
    reason="SpikingJelly without 2.0's learners (learning.plasticity.MSTDPETLearner)")
OTTT2 = pytest.mark.skipif(
    not (hasattr(getattr(sjn, "OTTTLIFNode", None), "materialize_states")
         and hasattr(sjol, "ottt_online_training") and hasattr(sjol, "fptt_online_training")),
    reason="SpikingJelly without 2.0's OTTTLIFNode / online_learning loops")


def _need(*names):
    missing = [n for n in names if not hasattr(sjl, n)]
    if missing:
        pytest.skip(f"SpikingJelly's layer lacks {missing}")


TOL = dict(rtol=1e-9, atol=1e-11)
T, B = 4, 2


def _learn_both(ref: tuple, mine: tuple, ref_args=(), mine_args=None,
                check_grad: bool = False) -> None:
    """One learner step into .grad and one optimizer step on each side ((learner, optimizer,
    synapse) each; ``ref_args`` a tuple of step's arguments, or a dict of its keywords for
    both): the weights (and with ``check_grad`` the gradients) equal SpikingJelly's."""
    (rl, ropt, rs), (ml, mopt, ms) = ref, mine
    ropt.zero_grad()
    mopt.zero_grad()
    if isinstance(ref_args, dict):
        rl.step(**ref_args)
        ml.step(**ref_args)
    else:
        rl.step(*ref_args)
        ml.step(*(ref_args if mine_args is None else mine_args))
    if check_grad:
        _close(ms.weight.grad, rs.weight.grad, msg="grad")
    ropt.step()
    mopt.step()
    _close(ms.weight, rs.weight, msg="weight")


def _close(a, b, tol=TOL, msg=""):
    np.testing.assert_allclose(_np(a) if isinstance(a, gp.Array) else a,
                               b.detach().numpy() if isinstance(b, torch.Tensor) else b,
                               **tol, err_msg=msg)


def _spikes(shape, seed, p=0.6):
    return (np.random.default_rng(seed).random(shape) < p).astype(np.float64)


# ---------------------------------------------------------------- the synapse-neuron pairs

def _pair(kind: str, step_mode: str, device):
    """(torch synapse, torch neuron), (grilly synapse, grilly neuron), the input shape of one
    step: IF neurons after a bias-free Linear(5, 3), Conv2d(2, 3, 3, stride 2, padding 1) or
    Conv1d(2, 3, 3, padding 1) with weights U(0, 0.8) (the neurons fire)."""
    torch.manual_seed(0)
    if kind == "linear":
        ref = sjl.Linear(5, 3, bias=False, step_mode=step_mode)
        mine = L.Linear(5, 3, bias=False, step_mode=step_mode)
        shape = (B, 5)
    elif kind == "conv2d":
        ref = sjl.Conv2d(2, 3, 3, stride=2, padding=1, bias=False, step_mode=step_mode)
        mine = L.Conv2d(2, 3, 3, stride=2, padding=1, bias=False, step_mode=step_mode)
        shape = (B, 2, 5, 5)
    else:
        ref = sjl.Conv1d(2, 3, 3, padding=1, bias=False, step_mode=step_mode)
        mine = L.Conv1d(2, 3, 3, padding=1, bias=False, step_mode=step_mode)
        shape = (B, 2, 6)
    ref = ref.double()
    with torch.no_grad():
        ref.weight.uniform_(0.0, 0.8)
    mine = _load(mine, ref, device)
    return (ref, sjn.IFNode(step_mode=step_mode)), (mine, snn.IFNode(step_mode=step_mode)), shape


def _run(syn, sn, x):
    return sn(syn(x))


# non-identity weight modulations (the same code runs on torch tensors and grilly Arrays)
F_MOD = dict(f_pre=lambda w: w * w, f_post=lambda w: 1.0 - w)


# ---------------------------------------------------------------- STDPLearner

@LEARN2
@pytest.mark.parametrize("kind", ["linear", "conv2d", "conv1d"])
@pytest.mark.parametrize("step_mode", ["s", "m"])
def test_stdp_learner_updates_equal_spikingjelly(kind, step_mode, device):
    """STDPLearner on a Linear/Conv2d/Conv1d in 's' (a learner step after each step, and two
    records consumed by one step) and 'm' (a (T, B, ...) sequence per call): the returned
    delta_w (on_grad=False, scale) and the weights after SGD on the .grad it accumulates
    (on_grad=True) equal SpikingJelly's, over several steps with the weights changing."""
    (rs, rn), (ms, mn), shape = _pair(kind, step_mode, device)
    kw = F_MOD if kind != "conv1d" else {}   # (Conv1d: the default identities)
    rl = sjlearn.STDPLearner(step_mode, rs, rn, tau_pre=2.0, tau_post=3.0, **kw)
    ml = learning.STDPLearner(step_mode, ms, mn, tau_pre=2.0, tau_post=3.0, **kw)
    ropt = torch.optim.SGD(rs.parameters(), lr=0.1)
    mopt = optim.SGD(ms.parameters(), lr=0.1)
    seq_shape = (T,) + shape if step_mode == "m" else shape
    for i in range(3):
        x = _spikes(seq_shape, 10 + i)
        with torch.no_grad():
            yr = _run(rs, rn, torch.tensor(x))
        ym = _run(ms, mn, _g(x, device))
        _close(ym, yr)
        if i == 1:   # a second record before the learner's step (summed)
            x2 = _spikes(seq_shape, 20)
            with torch.no_grad():
                _run(rs, rn, torch.tensor(x2))
            _run(ms, mn, _g(x2, device))
        if i == 0:   # returned, scaled; the weights stay
            dr, dm = rl.step(on_grad=False, scale=0.5), ml.step(on_grad=False, scale=0.5)
            assert tuple(dm.shape) == tuple(rs.weight.shape)
            _close(dm, dr, msg="delta_w")
            # the neurons fired: a real update (with f_pre = f_post a pair within one step
            # adds as much LTP as LTD, so the identity's first update is 0, as SpikingJelly's)
            assert np.any(_np(dm) != 0) or not kw
            continue
        _learn_both((rl, ropt, rs), (ml, mopt, ms), dict(on_grad=True), check_grad=True)
    _close(ml.trace_pre, rl.trace_pre, msg="trace_pre")
    _close(ml.trace_post, rl.trace_post, msg="trace_post")
    assert ml.step() is None   # nothing recorded since
    rl.close()
    ml.close()


def test_stdp_learner_enable_disable_reset_close(device):
    """disable() stops recording, enable() resumes, reset() forgets traces and records,
    close() removes the hooks for good (enable/step then RuntimeError); bad arguments are
    errors naming the class."""
    syn, sn = L.Linear(4, 3, bias=False).to(device), snn.IFNode()
    lr = learning.STDPLearner("s", syn, sn, tau_pre=2.0, tau_post=2.0)
    x = _g(_spikes((B, 4), 1), device)
    lr.disable()
    sn(syn(x))
    assert lr.step() is None and lr.trace_pre is None
    lr.enable()
    sn(syn(x))
    assert lr.step(on_grad=False) is not None and lr.trace_pre is not None
    sn(syn(x))
    lr.reset()
    assert lr.trace_pre is None and lr.step() is None
    lr.close()
    lr.close()
    with pytest.raises(RuntimeError, match="closed"):
        lr.enable()
    with pytest.raises(RuntimeError, match="closed"):
        lr.step()
    with pytest.raises(ValueError, match="STDPLearner.*tau_pre"):
        learning.STDPLearner("s", syn, sn, tau_pre=0.5, tau_post=2.0)
    with pytest.raises(ValueError, match="STDPLearner.*step_mode"):
        learning.STDPLearner("x", syn, sn, tau_pre=2.0, tau_post=2.0)
    with pytest.raises(NotImplementedError, match="STDPLearner.*groups"):
        learning.STDPLearner("s", nn.Conv2d(2, 2, 3, groups=2), sn, 2.0, 2.0)
    with pytest.raises(NotImplementedError, match="MSTDPLearner.*Conv2d"):
        learning.MSTDPLearner("s", nn.Conv2d(2, 2, 3), sn, 2.0, 2.0)
    with pytest.raises(ValueError, match="MSTDPLearner.*step_mode"):
        learning.MSTDPLearner("m", syn, sn, 2.0, 2.0)
    with pytest.raises(TypeError, match="STDPLearner.*synapse"):
        learning.STDPLearner("s", "linear", sn, 2.0, 2.0)


# ---------------------------------------------------------------- reward learners

@LEARN2
@pytest.mark.parametrize("reward", ["scalar", "batch"])
def test_mstdp_learner_equals_spikingjelly(reward, device):
    """MSTDPLearner on a Linear: per step a scalar or (N,) reward on the previous step's
    eligibility; the returned delta_w and the weights after SGD on .grad equal SpikingJelly's."""
    (rs, rn), (ms, mn), shape = _pair("linear", "s", device)
    rl = sjlearn.MSTDPLearner("s", rs, rn, tau_pre=2.0, tau_post=1.5, **F_MOD)
    ml = learning.MSTDPLearner("s", ms, mn, tau_pre=2.0, tau_post=1.5, **F_MOD)
    ropt = torch.optim.SGD(rs.parameters(), lr=0.1)
    mopt = optim.SGD(ms.parameters(), lr=0.1)
    rng = np.random.default_rng(5)
    for i in range(T):
        x = _spikes(shape, 30 + i)
        with torch.no_grad():
            _run(rs, rn, torch.tensor(x))
        _run(ms, mn, _g(x, device))
        r = rng.standard_normal(B) if reward == "batch" else float(rng.standard_normal())
        rr = torch.tensor(r) if reward == "batch" else r
        rm = _g(r, device) if reward == "batch" else r
        if i % 2 == 0:
            _close(ml.step(rm, on_grad=False, scale=2.0), rl.step(rr, on_grad=False, scale=2.0),
                   msg="delta_w")
            continue
        _learn_both((rl, ropt, rs), (ml, mopt, ms), (rr,), (rm,))
    _close(ml.eligibility, rl.eligibility, msg="eligibility")
    _run(ms, mn, _g(_spikes(shape, 1), device))
    with pytest.raises(ValueError, match="MSTDPLearner.step.*reward"):
        ml.step(_g(np.ones(B + 1), device))


@LEARN2
def test_mstdpet_learner_equals_spikingjelly(device):
    """MSTDPETLearner on a Linear with unbatched (I,)/(O,) spikes: the eligibility trace and
    the returned delta_w = reward trace_e, then the weights after SGD on .grad, equal
    SpikingJelly's."""
    (rs, rn), (ms, mn), _ = _pair("linear", "s", device)
    rl = sjlearn.MSTDPETLearner("s", rs, rn, 2.0, 1.5, 3.0, **F_MOD)
    ml = learning.MSTDPETLearner("s", ms, mn, 2.0, 1.5, 3.0, **F_MOD)
    ropt = torch.optim.SGD(rs.parameters(), lr=0.1)
    mopt = optim.SGD(ms.parameters(), lr=0.1)
    rng = np.random.default_rng(6)
    for i in range(T + 1):
        x = _spikes((5,), 40 + i)
        with torch.no_grad():
            _run(rs, rn, torch.tensor(x))
        _run(ms, mn, _g(x, device))
        r = float(rng.standard_normal())
        if i < 2:
            _close(ml.step(r, on_grad=False), rl.step(r, on_grad=False), msg="delta_w")
            continue
        _learn_both((rl, ropt, rs), (ml, mopt, ms), (r,), (r,))
    _close(ml.trace_e, rl.trace_e, msg="trace_e")
    assert np.any(_np(ml.trace_e) != 0)


# ---------------------------------------------------------------- the OTTT layers

def test_replace_for_grad_and_grad_with_trace_equal_spikingjelly(device):
    """ReplaceforGrad: x_r forward, the gradient to both; GradwithTrace(Linear) on [spike,
    trace]: W spike + b forward, the gradients of spike, trace, weight and bias as
    SpikingJelly's."""
    _need("ReplaceforGrad", "GradwithTrace")
    rng = np.random.default_rng(7)
    a, b, w = rng.standard_normal((B, 3)), rng.standard_normal((B, 3)), rng.standard_normal((B, 3))
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ag, bg = _g(a, device, True), _g(b, device, True)
    yt, yg = sjl.ReplaceforGrad.apply(at, bt), L.ReplaceforGrad.apply(ag, bg)
    _close(yg, yt)
    (yt * torch.tensor(w)).sum().backward()
    gp.sum(yg * _g(w, device)).backward()
    _close(ag.grad, at.grad)
    _close(bg.grad, bt.grad)

    torch.manual_seed(1)
    ref = sjl.GradwithTrace(torch.nn.Linear(4, 3).double())
    mine = _load(L.GradwithTrace(nn.Linear(4, 3)), ref, device)
    s, tr = _spikes((B, 4), 8), rng.random((B, 4))
    st, trt = torch.tensor(s, requires_grad=True), torch.tensor(tr, requires_grad=True)
    sg, trg = _g(s, device, True), _g(tr, device, True)
    yt, yg = ref([st, trt]), mine([sg, trg])
    _close(yg, yt)
    wo = rng.standard_normal((B, 3))
    (yt * torch.tensor(wo)).sum().backward()
    gp.sum(yg * _g(wo, device)).backward()
    _close(sg.grad, st.grad, msg="spike")
    _close(trg.grad, trt.grad, msg="trace")
    mp = dict(mine.named_parameters())
    for k, p in ref.named_parameters():
        _close(mp[k].grad, p.grad, msg=k)


def test_spike_trace_op_equals_spikingjelly(device):
    """SpikeTraceOp(AvgPool2d) on [spike, trace]: both pooled, the spike's gradient as
    SpikingJelly's (the trace's output carries none)."""
    _need("SpikeTraceOp")
    rng = np.random.default_rng(9)
    s, tr = _spikes((B, 2, 4, 4), 9), rng.random((B, 2, 4, 4))
    ref, mine = sjl.SpikeTraceOp(torch.nn.AvgPool2d(2)), L.SpikeTraceOp(nn.AvgPool2d(2))
    st = torch.tensor(s, requires_grad=True)
    sg = _g(s, device, True)
    (yt, ut), (yg, ug) = ref([st, torch.tensor(tr)]), mine([sg, _g(tr, device)])
    _close(yg, yt)
    _close(ug, ut)
    assert not ug.requires_grad
    wo = rng.standard_normal(tuple(yt.shape))
    (yt * torch.tensor(wo)).sum().backward()
    gp.sum(yg * _g(wo, device)).backward()
    _close(sg.grad, st.grad)


def _ottt_nets(device):
    """OTTTSequential(Linear(4, 6), OTTTLIFNode, Flatten, Linear(6, 2)) in both libraries,
    the same weights (Flatten runs as SpikeTraceOp, the last Linear as GradwithTrace)."""
    torch.manual_seed(2)
    ref = sjl.OTTTSequential(torch.nn.Linear(4, 6), sjn.OTTTLIFNode(), torch.nn.Flatten(),
                             torch.nn.Linear(6, 2)).double()
    mine = _load(L.OTTTSequential(nn.Linear(4, 6), snn.OTTTLIFNode(), nn.Flatten(),
                                  nn.Linear(6, 2)), ref, device)
    return ref, mine


@OTTT2
def test_ottt_sequential_and_neuron_equal_spikingjelly(device):
    """OTTTSequential with an OTTTLIFNode: per step the output and the gradients of the input
    and of every parameter (the second Linear's from the trace) as SpikingJelly's, the states
    detached between steps; the trace memory; eval mode returns the spikes alone."""
    _need("OTTTSequential")
    ref, mine = _ottt_nets(device)
    rng = np.random.default_rng(3)
    for t in range(T):
        x = rng.standard_normal((B, 4)) * 2.0
        xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, True)
        yt, yg = ref(xt), mine(xg)
        _close(yg, yt, msg=f"y[{t}]")
        wo = rng.standard_normal((B, 2))
        ref.zero_grad()
        mine.zero_grad()
        (yt * torch.tensor(wo)).sum().backward()
        gp.sum(yg * _g(wo, device)).backward()
        _close(xg.grad, xt.grad, msg=f"x.grad[{t}]")
        mp = dict(mine.named_parameters())
        for k, p in ref.named_parameters():
            _close(mp[k].grad, p.grad, msg=f"{k}[{t}]")
        snn.functional.detach_net(mine)
        sjf.detach_net(ref)
    _close(mine[1].trace, ref[1].trace, msg="trace")
    assert np.any(_np(mine[1].trace) != 0)
    ref.eval()
    mine.eval()
    x = rng.standard_normal((B, 4)) * 2.0
    with torch.no_grad():
        yt = ref(torch.tensor(x))
    _close(mine(_g(x, device)), yt, msg="eval")


@OTTT2
@pytest.mark.parametrize("online", [True, False])
def test_ottt_online_training_equals_spikingjelly(online, device):
    """ottt_online_training over (B, T, 4) inputs and (B, T, 2) targets, MSE per step, SGD
    (online: a step after every time step; else one at the end): the summed loss, the outputs
    (B, T, 2) and the trained weights equal SpikingJelly's."""
    ref, mine = _ottt_nets(device)
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((B, T, 4)) * 2.0, rng.random((B, T, 2))
    ropt = torch.optim.SGD(ref.parameters(), lr=0.5)
    mopt = optim.SGD(mine.parameters(), lr=0.5)
    lt, yt = sjol.ottt_online_training(ref, ropt, torch.tensor(x), torch.tensor(y),
                                       torch.nn.functional.mse_loss, online)
    lg, yg = GOL.ottt_online_training(mine, mopt, _g(x, device), _g(y, device), GF.mse_loss,
                                      online)
    _close(lg, lt, msg="loss")
    _close(yg, yt, msg="outputs")
    mp = dict(mine.named_parameters())
    for k, p in ref.named_parameters():
        _close(mp[k], p, msg=k)


@OTTT2
def test_fptt_online_training_equals_spikingjelly(device):
    """fptt_online_training on Linear(3, 4) -> LIFNode -> Linear(4, 2) over (T, B, 3): the
    weights after the per-step regularized updates and the running averages w_ra equal
    SpikingJelly's."""
    torch.manual_seed(3)
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), sjn.LIFNode(),
                              torch.nn.Linear(4, 2)).double()
    mine = _load(nn.Sequential(nn.Linear(3, 4), snn.LIFNode(), nn.Linear(4, 2)), ref, device)
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((T, B, 3)) * 2.0, rng.random((T, B, 2))
    ropt = torch.optim.SGD(ref.parameters(), lr=0.3)
    mopt = optim.SGD(mine.parameters(), lr=0.3)
    rw, mw = sjol.fptt_online_training_init_w_ra(ropt), GOL.fptt_online_training_init_w_ra(mopt)
    for _ in range(2):
        sjol.fptt_online_training(ref, ropt, torch.tensor(x), torch.tensor(y),
                                  torch.nn.functional.mse_loss, 0.2, rw)
        GOL.fptt_online_training(mine, mopt, _g(x, device), _g(y, device), GF.mse_loss, 0.2, mw)
    mp = dict(mine.named_parameters())
    for k, p in ref.named_parameters():
        _close(mp[k], p, msg=k)
    for a, b in zip(mw, rw):
        _close(a, b, msg="w_ra")


@OTTT2
@pytest.mark.parametrize("cls, kw", [("SLTTLIFNode", {}),
                                     ("OTTTLIFNode", dict(decay_input=True, v_reset=0.0)),
                                     ("OTTTLIFNode", dict(tau=3.0))])
def test_online_neurons_equal_spikingjelly(cls, kw, device):
    """SLTTLIFNode, and OTTTLIFNode with other options, after a Linear over T single steps
    (detach_net between steps, as the online loops): spikes, the gradients of the input and
    the Linear's parameters, the membrane (and trace) as SpikingJelly's."""
    torch.manual_seed(4)
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), getattr(sjn, cls)(**kw)).double()
    mine = _load(nn.Sequential(nn.Linear(3, 4), getattr(snn, cls)(**kw)), ref, device)
    rng = np.random.default_rng(6)
    for t in range(T):
        x = rng.standard_normal((B, 3)) * 2.0
        xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, True)
        yt, yg = ref(xt), mine(xg)
        yt, yg = (yt[0], yg[0]) if isinstance(yt, list) else (yt, yg)
        _close(yg, yt, msg=f"y[{t}]")
        ref.zero_grad()
        mine.zero_grad()
        wo = rng.standard_normal((B, 4))
        (yt * torch.tensor(wo)).sum().backward()
        gp.sum(yg * _g(wo, device)).backward()
        _close(xg.grad, xt.grad, msg=f"x.grad[{t}]")
        mp = dict(mine.named_parameters())
        for k, p in ref.named_parameters():
            _close(mp[k].grad, p.grad, msg=f"{k}[{t}]")
        _close(mine[1].v, ref[1].v, msg=f"v[{t}]")
        snn.functional.detach_net(mine)
        sjf.detach_net(ref)
    if cls == "OTTTLIFNode":
        _close(mine[1].trace, ref[1].trace, msg="trace")
    with pytest.raises(ValueError, match=f"{cls}.*step_mode"):
        getattr(snn, cls)(step_mode="m")
