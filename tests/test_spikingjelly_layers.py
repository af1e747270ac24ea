"""SpikingJelly's ``activation_based.layer`` classes and ``functional`` helpers on grilly
(``snn.layer.*``, ``snn.functional.*``) against SpikingJelly itself: the same weights copied in,
the same inputs, outputs and gradients in float64, in step_mode 's' and 'm', on every device."""
from importlib.metadata import version

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import snn

torch = pytest.importorskip("torch")
pytest.importorskip("spikingjelly.activation_based")
from spikingjelly.activation_based import functional as sjf  # noqa: E402
from spikingjelly.activation_based import layer as sjl  # noqa: E402
from spikingjelly.activation_based import neuron as sjn  # noqa: E402

# grilly follows SpikingJelly 2.0 where it differs from 0.0.0.0.14 (BatchNorm1d on (T, B, C),
# Upsample, MaxPool's indices in 'm', Delay, StepModeContainer(stateful, step_mode, ...)): with
# an older SpikingJelly installed, those comparisons have no oracle
_SJ_VERSION = tuple(int(v) for v in version("spikingjelly").split(".")[:2])
SJ2 = pytest.mark.skipif(_SJ_VERSION < (2,), reason="SpikingJelly < 2.0 differs here")

L = snn.layer
TOL = dict(rtol=1e-10, atol=1e-12)
T, B = 3, 2


def _np(a):
    return np.asarray(a.to_device("cpu"))


def _g(a, device, grad=False):
    x = gp.asarray(np.asarray(a, dtype=np.float64), device=device)
    return x.requires_grad_() if grad else x


def _load(mine, ref, device):
    """ref's state_dict (float64) into mine, moved to device."""
    sd = ref.state_dict()
    if sd:
        mine.load_state_dict({k: v.detach().numpy() for k, v in sd.items()})
    return mine.to(device)


def _compare(ref, mine, x, device, tol=TOL):
    """Forward, input gradient and every parameter gradient of ref (torch) and mine (grilly)
    on x, for a random weighting of the output."""
    xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
    yt, yg = ref(xt), mine(xg)
    assert tuple(yg.shape) == tuple(yt.shape)
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **tol)
    w = np.random.default_rng(1).standard_normal(tuple(yt.shape))
    (yt * torch.tensor(w)).sum().backward()
    gp.sum(yg * _g(w, device)).backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **tol)
    mp = dict(mine.named_parameters())
    for k, p in ref.named_parameters():
        np.testing.assert_allclose(_np(mp[k].grad), p.grad.numpy(), **tol, err_msg=k)
    return yt, yg


# name, positional arguments, keywords, one step's shape (B, ...), has parameters
STATELESS = [
    ("Conv1d", (2, 3, 3), {"padding": 1}, (B, 2, 5), True),
    ("Conv2d", (1, 2, 3), {"stride": 2}, (B, 1, 5, 5), True),
    ("Conv3d", (1, 2, 2), {}, (B, 1, 3, 3, 3), True),
    ("ConvTranspose1d", (2, 1, 3), {"stride": 2}, (B, 2, 3), True),
    ("ConvTranspose2d", (1, 2, 2), {"stride": 2}, (B, 1, 3, 3), True),
    ("BatchNorm1d", (3,), {}, (B, 3), True),
    ("BatchNorm1d", (2,), {}, (B, 2, 4), True),
    ("BatchNorm2d", (2,), {}, (B, 2, 3, 3), True),
    ("BatchNorm3d", (2,), {}, (B, 2, 2, 2, 2), True),
    ("GroupNorm", (2, 4), {}, (B, 4, 3), True),
    ("MaxPool1d", (2,), {}, (B, 2, 6), False),
    ("MaxPool2d", (2,), {"stride": 1}, (B, 2, 4, 4), False),
    ("MaxPool3d", (2,), {}, (B, 1, 4, 4, 4), False),
    ("AvgPool1d", (3,), {"stride": 2, "padding": 1}, (B, 2, 6), False),
    ("AvgPool2d", (2,), {"ceil_mode": True}, (B, 2, 5, 5), False),
    ("AvgPool3d", (2,), {}, (B, 1, 4, 4, 4), False),
    ("AdaptiveAvgPool1d", (2,), {}, (B, 2, 5), False),
    ("AdaptiveAvgPool2d", ((1, 2),), {}, (B, 2, 5, 4), False),
    ("AdaptiveAvgPool3d", (1,), {}, (B, 2, 3, 3, 3), False),
    ("Upsample", (), {"scale_factor": 2}, (B, 2, 3), False),
    ("Flatten", (), {}, (B, 2, 3, 2), False),
    ("Linear", (4, 3), {}, (B, 4), True),
]


def _pair(name, args, kw, has_params, step_mode):
    torch.manual_seed(0)
    ref = getattr(sjl, name)(*args, **kw, step_mode=step_mode).double()
    if has_params:
        mine = getattr(L, name)(*args, **kw, step_mode=step_mode, dtype=gp.float64)
    else:
        mine = getattr(L, name)(*args, **kw, step_mode=step_mode)
    return ref, mine


@pytest.mark.parametrize("name,args,kw,shape,has_params", STATELESS,
                         ids=[f"{s[0]}-{len(s[3])}d" for s in STATELESS])
def test_stateless_layers_equal_spikingjelly(name, args, kw, shape, has_params, device):
    """Each of SpikingJelly's stateless wrappers (missing in grilly but Conv2d, BatchNorm2d,
    MaxPool2d, Flatten, Linear): a (T, B, ...) sequence in 'm' (statistics of BatchNorm over
    T * B, running stats updated once) and one step in 's', forward and gradients."""
    if _SJ_VERSION < (2,) and (name == "Upsample" or (name, len(shape)) == ("BatchNorm1d", 2)):
        pytest.skip("SpikingJelly < 2.0 has no Upsample and no BatchNorm1d on (T, B, C)")
    x = np.random.default_rng(2).standard_normal((T,) + shape) * 2
    ref, mine = _pair(name, args, kw, has_params, "m")
    _compare(ref, _load(mine, ref, device), x, device)
    if name.startswith("BatchNorm"):
        np.testing.assert_allclose(_np(mine.running_var), ref.running_var.numpy(), rtol=1e-12)
    ref, mine = _pair(name, args, kw, has_params, "s")
    _compare(ref, _load(mine, ref, device), x[0], device)
    assert mine.step_mode == "s" and "step_mode=s" in repr(mine)


def test_stateless_layers_positional_step_mode_and_errors(device):
    """step_mode at SpikingJelly's position (after torch's arguments), the 'm' shape checks as
    SpikingJelly's (a ValueError naming the layer and the shape), bad step modes."""
    c = L.Conv1d(1, 2, 3, 1, 0, 1, 1, True, "zeros", "m")
    assert c.step_mode == "m"
    assert L.MaxPool2d(2, None, 0, 1, False, False, "m").step_mode == "m"
    assert L.Linear(3, 2, False, "m").bias is None
    with pytest.raises(TypeError, match="Linear: takes at most 4 positional"):
        L.Linear(3, 2, True, "m", None)
    with pytest.raises(ValueError, match=r"Conv1d: step_mode 'm' expects \(T, B, C, L\)"):
        c.to(device)(_g(np.zeros((2, 1, 5)), device))
    with pytest.raises(ValueError, match=r"BatchNorm1d: step_mode 'm' expects \(T, B, C\) or "
                                         r"\(T, B, C, L\)"):
        L.BatchNorm1d(2, step_mode="m")(_g(np.zeros((2, 1, 2, 2, 2)), device))
    with pytest.raises(ValueError, match="AvgPool2d: step_mode must be 's'"):
        L.AvgPool2d(2, step_mode="multi")
    # Linear acts on the last axis in either mode, as SpikingJelly's (a (T, F) sequence too)
    lin = L.Linear(3, 2, step_mode="m", dtype=gp.float64).to(device)
    x = _g(np.arange(6.0).reshape(2, 3), device)
    np.testing.assert_allclose(_np(lin(x)), _np(x) @ _np(lin.weight).T + _np(lin.bias), **TOL)


@SJ2
def test_maxpool_return_indices_multi_step(device):
    """MaxPool2d(return_indices=True) in 'm': values and indices, each (T, B, ...)."""
    x = np.random.default_rng(3).standard_normal((T, B, 1, 4, 4))
    vt, it = sjl.MaxPool2d(2, return_indices=True, step_mode="m")(torch.tensor(x))
    vg, ig = L.MaxPool2d(2, return_indices=True, step_mode="m")(_g(x, device))
    np.testing.assert_array_equal(_np(vg), vt.numpy())
    np.testing.assert_array_equal(_np(ig), it.numpy())


def test_conv_net_state_dict_and_set_step_mode(device):
    """A SpikingJelly net written single-step then ``set_step_mode(net, 'm')``, with its
    state_dict loaded as it is (Conv1d, BatchNorm1d, AvgPool1d, Flatten, Linear, neurons)."""
    def build(lib, neuron, **kw):
        return [lib.Conv1d(1, 2, 3, **kw), lib.BatchNorm1d(2, **kw), neuron.LIFNode(tau=1.2),
                lib.AvgPool1d(2), lib.Flatten(), lib.Linear(8, 3, **kw), neuron.IFNode(v_threshold=0.2)]
    torch.manual_seed(1)
    ref = torch.nn.Sequential(*build(sjl, sjn)).double()
    mine = nn.Sequential(*build(L, snn, dtype=gp.float64))
    _load(mine, ref, device)
    sjf.set_step_mode(ref, "m")
    assert snn.functional.set_step_mode(mine, "m") is mine
    assert all(m.step_mode == "m" for m in mine)
    x = np.random.default_rng(4).standard_normal((6, B, 1, 10)) * 3
    yt, yg = _compare(ref, mine, x, device)
    assert yt.sum() > 0


def test_dropout2d_keeps_channel_mask_over_time(device):
    """layer.Dropout2d: whole channels of one step dropped, the same mask at every step (and
    every call) until reset, scaled by 1/(1-p); identity in eval; as SpikingJelly's."""
    gp.random.seed(7)
    d = L.Dropout2d(0.5, step_mode="m").to(device)
    assert d.p == 0.5 and L.Dropout2d().p == 0.2   # SpikingJelly's default
    x = _g(np.ones((T, 4, 6, 3, 3)), device)
    y = _np(d(x))
    assert set(np.unique(y)) <= {0.0, 2.0} and (y == 0).any() and (y == 2).any()
    np.testing.assert_array_equal(y, np.broadcast_to(y[0], y.shape))
    np.testing.assert_array_equal(y, np.broadcast_to(y[..., :1, :1], y.shape))  # per channel
    np.testing.assert_array_equal(_np(d(x)), y)
    r = sjl.Dropout2d(0.5, step_mode="m")(torch.ones(T, 4, 6, 3, 3)).numpy()
    np.testing.assert_array_equal(r, np.broadcast_to(r[0], r.shape))
    np.testing.assert_array_equal(r, np.broadcast_to(r[..., :1, :1], r.shape))
    snn.reset(d)
    assert d.mask is None and not np.array_equal(_np(d(x)), y)
    s = L.Dropout2d(0.5).to(device)
    np.testing.assert_array_equal(_np(s(x[0])), _np(s(x[1])))
    d.eval()
    np.testing.assert_array_equal(_np(d(x)), _np(x))
    with pytest.raises(ValueError, match=r"Dropout2d: p must be in \[0, 1\)"):
        L.Dropout2d(1.0)


@pytest.mark.parametrize("learnable", [False, True])
def test_synapse_filter_equals_spikingjelly(learnable, device):
    """layer.SynapseFilter(tau, learnable): the filtered current, single- and multi-step (the
    state carried over calls), gradients of the input and of w."""
    x = (np.random.default_rng(5).random((5, B, 3)) > 0.6) * 1.0 + 0.1
    ref = sjl.SynapseFilter(tau=4.0, learnable=learnable, step_mode="m").double()
    mine = L.SynapseFilter(tau=4.0, learnable=learnable, step_mode="m", dtype=gp.float64)
    _load(mine, ref, device)
    _compare(ref, mine, x, device)
    ref.step_mode, mine.step_mode = "s", "s"   # continues from the kept current
    yt, yg = ref(torch.tensor(x[0])), mine(_g(x[0], device))
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **TOL)
    sjf.reset_net(ref)
    snn.reset(mine)
    assert mine.out_i is None
    for t in range(2):
        np.testing.assert_allclose(_np(mine(_g(x[t], device))),
                                   ref(torch.tensor(x[t])).detach().numpy(), **TOL)
    assert ("w" in dict(mine.named_parameters())) == learnable
    with pytest.raises(ValueError, match="SynapseFilter: tau must be a number > 1"):
        L.SynapseFilter(tau=1.0)


@SJ2
def test_delay_equals_spikingjelly(device):
    """layer.Delay(delay_steps): y[t] = x[t - d], multi-step and single-step with the queue
    kept across calls, the gradient reaching the delayed steps only; functional.delay."""
    x = np.random.default_rng(6).standard_normal((5, B, 3))
    ref, mine = sjl.Delay(2, step_mode="m"), L.Delay(2, step_mode="m").to(device)
    _compare(ref, mine, x, device)
    ref.step_mode, mine.step_mode = "s", "s"
    for t in range(3):
        np.testing.assert_array_equal(_np(mine(_g(x[t], device))),
                                      ref(torch.tensor(x[t])).detach().numpy())
    snn.reset(mine)
    assert mine.queue == []
    for d in (0, 2, 7):
        np.testing.assert_array_equal(_np(snn.functional.delay(_g(x, device), d)),
                                      sjf.delay(torch.tensor(x), d).numpy())
    with pytest.raises(ValueError, match="Delay: delay_steps must be an int >= 0"):
        L.Delay(-1)


@pytest.mark.parametrize("step_mode,shape", [("s", (B, 12)), ("m", (T, B, 12)),
                                             ("s", (B, 13))])
def test_voting_layer_equals_spikingjelly(step_mode, shape, device):
    """layer.VotingLayer(voting_size): the mean of each group of votes (a trailing partial
    group dropped), forward and gradient; redundant_one_hot as its target."""
    x = np.random.default_rng(7).random(shape)
    _compare(sjl.VotingLayer(4, step_mode=step_mode), L.VotingLayer(4, step_mode=step_mode), x,
             device)
    lab = np.array([0, 2, 1])
    np.testing.assert_array_equal(
        _np(snn.functional.redundant_one_hot(gp.asarray(lab, device=device), 3, 4)),
        sjf.redundant_one_hot(torch.tensor(lab), 3, 4).numpy())
    with pytest.raises(ValueError, match="VotingLayer: expected an input"):
        L.VotingLayer(4)(_g(np.zeros((2, 3)), device))


@pytest.mark.parametrize("step_mode", ["s", "m"])
def test_element_wise_recurrent_container_equals_spikingjelly(step_mode, device):
    """ElementWiseRecurrentContainer(IFNode(v_reset=None), f): i[t] = f(y[t-1], x[t]), the
    spikes and input gradient through time; reset_net clears y and the neuron."""
    x = np.random.default_rng(8).standard_normal((5, B, 3)) + 0.6
    f = lambda y, x: x + 0.7 * y   # noqa: E731
    ref = sjl.ElementWiseRecurrentContainer(sjn.IFNode(v_reset=None), f, step_mode=step_mode)
    mine = L.ElementWiseRecurrentContainer(snn.IFNode(v_reset=None), f, step_mode=step_mode)
    mine.to(device)
    if step_mode == "m":
        yt, _ = _compare(ref, mine, x, device)
    else:
        xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
        yt = torch.stack([ref(xt[t]) for t in range(5)])
        yg = gp.stack([mine(xg[t]) for t in range(5)])
        np.testing.assert_array_equal(_np(yg), yt.detach().numpy())
        (yt * torch.tensor(x)).sum().backward()
        gp.sum(yg * _g(x, device)).backward()
        np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)
    assert 0 < yt.sum() < yt.numel()
    snn.reset(mine)
    assert mine.y is None and mine.sub_module.state is None


@pytest.mark.parametrize("step_mode", ["s", "m"])
def test_linear_recurrent_container_equals_spikingjelly(step_mode, device):
    """LinearRecurrentContainer(Sequential(Linear, LIFNode), in, out): i[t] = rc([x[t],
    y[t-1]]), the state_dict keys (rc.*, sub_module.*) SpikingJelly's, spikes and gradients of
    the input and every weight; a new batch shape without a reset is a ValueError."""
    torch.manual_seed(3)
    x = np.random.default_rng(9).standard_normal((5, B, 4)) * 6
    ref = sjl.LinearRecurrentContainer(
        torch.nn.Sequential(sjl.Linear(4, 3), sjn.LIFNode()), 4, 3, step_mode=step_mode).double()
    mine = L.LinearRecurrentContainer(
        nn.Sequential(L.Linear(4, 3, dtype=gp.float64), snn.LIFNode()), 4, 3,
        step_mode=step_mode, dtype=gp.float64)
    assert set(mine.state_dict()) == set(ref.state_dict())
    _load(mine, ref, device)
    if step_mode == "m":
        yt, _ = _compare(ref, mine, x, device)
    else:
        xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
        yt = torch.stack([ref(xt[t]) for t in range(5)])
        yg = gp.stack([mine(xg[t]) for t in range(5)])
        np.testing.assert_array_equal(_np(yg), yt.detach().numpy())
        yt.sum().backward()
        gp.sum(yg).backward()
        np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)
        np.testing.assert_allclose(_np(mine.rc.weight.grad), ref.rc.weight.grad.numpy(), **TOL)
    assert 0 < yt.sum() < yt.numel()
    if step_mode == "s":
        with pytest.raises(ValueError, match="LinearRecurrentContainer: the kept output"):
            mine(_g(np.zeros((3, 4)), device))
    snn.functional.reset_net(mine)
    assert mine.y is None


@SJ2
@pytest.mark.parametrize("stateful", [True, False])
def test_step_mode_container_and_set_step_mode(stateful, device):
    """StepModeContainer(stateful, step_mode, *modules): 'm' loops the steps (stateful) or
    merges T * B; set_step_mode sets the container and leaves its modules single-step."""
    torch.manual_seed(4)
    mods = lambda lib, n, **kw: ([lib.Linear(3, 2, **kw), n.LIFNode()] if stateful  # noqa: E731
                                 else [lib.Linear(3, 2, **kw), lib.BatchNorm1d(2, **kw)])
    ref = sjl.StepModeContainer(stateful, "s", *mods(sjl, sjn)).double()
    mine = L.StepModeContainer(stateful, "s", *mods(L, snn, dtype=gp.float64))
    _load(mine, ref, device)
    sjf.set_step_mode(ref, "m")
    snn.functional.set_step_mode(mine, "m")
    assert mine.step_mode == "m" and all(m.step_mode == "s" for m in mine)
    x = np.random.default_rng(10).standard_normal((4, B, 3)) * 2
    _compare(ref, mine, x, device)
    with pytest.raises(ValueError, match="StepModeContainer: LIFNode.step_mode must be 's'"):
        L.StepModeContainer(True, "m", snn.LIFNode(step_mode="m"))


def test_seq_to_ann_and_multi_step_containers_load_spikingjelly(device):
    """SeqToANNContainer / MultiStepContainer are Sequentials as SpikingJelly's: its
    state_dict (``0.weight``, ...) loads as it is (grilly's keys were ``module.0.weight``),
    ``container[i]`` indexes; multi_step_forward, seq_to_ann_forward and
    chunk_multi_step_forward as SpikingJelly's functional."""
    torch.manual_seed(5)
    ref = torch.nn.Sequential(sjl.SeqToANNContainer(torch.nn.Conv2d(1, 2, 3),
                                                    torch.nn.BatchNorm2d(2)),
                              sjl.MultiStepContainer(torch.nn.Flatten(), torch.nn.Linear(8, 3),
                                                     sjn.IFNode())).double()
    mine = nn.Sequential(L.SeqToANNContainer(nn.Conv2d(1, 2, 3, dtype=gp.float64),
                                             nn.BatchNorm2d(2, dtype=gp.float64)),
                         L.MultiStepContainer(nn.Flatten(), nn.Linear(8, 3, dtype=gp.float64),
                                              snn.IFNode()))
    assert set(mine.state_dict()) == set(ref.state_dict())
    _load(mine, ref, device)
    assert isinstance(mine[0][0], nn.Conv2d) and len(mine[1]) == 3
    x = np.random.default_rng(11).standard_normal((T, B, 1, 4, 4)) * 2
    _compare(ref, mine, x, device)
    conv_t, conv = ref[0][0], mine[0][0]
    xs = np.random.default_rng(12).standard_normal((4, B, 1, 4, 4))
    for fn in ("seq_to_ann_forward", "multi_step_forward"):
        np.testing.assert_allclose(_np(getattr(snn.functional, fn)(_g(xs, device), conv)),
                                   getattr(sjf, fn)(torch.tensor(xs), conv_t).detach().numpy(),
                                   **TOL)
    y = snn.functional.chunk_multi_step_forward(3, _g(xs, device), mine[0])
    np.testing.assert_allclose(_np(y), sjf.chunk_multi_step_forward(
        3, torch.tensor(xs), ref[0]).detach().numpy(), **TOL)
    with pytest.raises(ValueError, match="seq_to_ann_forward: expected an input"):
        snn.functional.seq_to_ann_forward(_g(np.zeros(3), device), conv)


def test_functional_helpers(device, capsys):
    """first_spike_index, detach_net, set_backend and PrintShapeModule as SpikingJelly's."""
    s = (np.random.default_rng(13).random((B, 3, 6)) > 0.6) * 1.0
    np.testing.assert_array_equal(_np(snn.functional.first_spike_index(_g(s, device))),
                                  sjf.first_spike_index(torch.tensor(s)).numpy())
    net = nn.Sequential(L.SynapseFilter(2.0), snn.LIFNode())
    x = _g(np.ones((B, 3)), device, grad=True)
    net(x * 2.0)
    assert snn.functional.detach_net(net) is net
    assert not net[0].out_i.requires_grad and not net[1].v.requires_grad
    assert snn.functional.set_backend(net, "cupy") is net
    with pytest.raises(ValueError, match="set_backend: backend must be"):
        snn.functional.set_backend(net, "cuda")
    y = L.PrintShapeModule("here")(x)
    assert y is x and "here (2, 3)" in capsys.readouterr().out


# ---- weight standardization, MaxUnpool, tdBN and TEBN (issue 12) --------------------------
@SJ2   # (0.0.0.0.14 has no WSLinear)
@pytest.mark.parametrize("gain", [True, False])
@pytest.mark.parametrize("step_mode", ["s", "m"])
def test_ws_linear_and_ws_conv2d_equal_spikingjelly(gain, step_mode, device):
    torch.manual_seed(0)
    ref = sjl.WSLinear(4, 3, step_mode=step_mode, gain=gain).double()
    if gain:   # a non-trivial gain, so its gradient is checked too
        ref.gain.data.uniform_(0.5, 1.5)
    mine = _load(L.WSLinear(4, 3, step_mode=step_mode, gain=gain, dtype=gp.float64), ref, device)
    shape = (T, B, 4) if step_mode == "m" else (B, 4)
    _compare(ref, mine, np.random.default_rng(2).standard_normal(shape), device)
    ref = sjl.WSConv2d(2, 3, 3, padding=1, step_mode=step_mode, gain=gain).double()
    if gain:
        ref.gain.data.uniform_(0.5, 1.5)
    mine = _load(L.WSConv2d(2, 3, 3, padding=1, step_mode=step_mode, gain=gain,
                            dtype=gp.float64), ref, device)
    shape = (T, B, 2, 4, 4) if step_mode == "m" else (B, 2, 4, 4)
    _compare(ref, mine, np.random.default_rng(3).standard_normal(shape), device)
    with pytest.raises(ValueError, match=r"WSConv2d: expected a sequence \(T, B, C, H, W\)"):
        L.WSConv2d(2, 3, 3, step_mode="m")(_g(np.zeros((B, 2, 4, 4)), device))


@SJ2
@pytest.mark.parametrize("step_mode", ["s", "m"])
def test_max_unpool_equals_spikingjelly(step_mode, device):
    x = np.random.default_rng(4).standard_normal((T, B, 2, 4, 4) if step_mode == "m"
                                                 else (B, 2, 4, 4))
    pool = sjl.MaxPool2d(2, return_indices=True, step_mode=step_mode)
    v, idx = pool(torch.tensor(x))
    ref = sjl.MaxUnpool2d(2, step_mode=step_mode)
    mine = L.MaxUnpool2d(2, step_mode=step_mode)
    vt, vg = v.clone().requires_grad_(), _g(v.numpy(), device, grad=True)
    yt = ref(vt, idx)
    yg = mine(vg, gp.asarray(idx.numpy(), device=device))
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **TOL)
    w = np.random.default_rng(5).standard_normal(tuple(yt.shape))
    (yt * torch.tensor(w)).sum().backward()
    gp.sum(yg * _g(w, device)).backward()
    np.testing.assert_allclose(_np(vg.grad), vt.grad.numpy(), **TOL)
    x1 = np.random.default_rng(6).standard_normal((T, B, 2, 6))
    v1, i1 = sjl.MaxPool1d(2, return_indices=True, step_mode="m")(torch.tensor(x1))
    np.testing.assert_allclose(
        _np(L.MaxUnpool1d(2, step_mode="m")(_g(v1.numpy(), device),
                                           gp.asarray(i1.numpy(), device=device))),
        sjl.MaxUnpool1d(2, step_mode="m")(v1, i1).numpy(), **TOL)
    if step_mode == "m":
        with pytest.raises(ValueError, match="MaxUnpool2d: indices must have the shape"):
            mine(vg, gp.asarray(idx.numpy()[:1], device=device))


@SJ2   # (0.0.0.0.14's TEBN raises NotImplementedError)
@pytest.mark.parametrize("dim", [1, 2])
def test_threshold_dependent_and_temporal_effective_bn_equal_spikingjelly(dim, device):
    shape = (T, B, 3) if dim == 1 else (T, B, 3, 2, 2)
    x = np.random.default_rng(7).standard_normal(shape) * 2 + 1
    ref = getattr(sjl, f"ThresholdDependentBatchNorm{dim}d")(0.7, 1.5, 3).double()
    mine = _load(getattr(L, f"ThresholdDependentBatchNorm{dim}d")(0.7, 1.5, 3, dtype=gp.float64),
                 ref, device)
    np.testing.assert_allclose(_np(mine.weight), ref.weight.detach().numpy(), **TOL)
    _compare(ref, mine, x, device)
    np.testing.assert_allclose(_np(mine.running_var), ref.running_var.numpy(), **TOL)
    ref = getattr(sjl, f"TemporalEffectiveBatchNorm{dim}d")(T, 3).double()
    ref.scale.data.uniform_(0.5, 1.5)
    mine = _load(getattr(L, f"TemporalEffectiveBatchNorm{dim}d")(T, 3, dtype=gp.float64),
                 ref, device)
    _compare(ref, mine, x, device)
    with pytest.raises(ValueError, match="step_mode must be 'm'"):
        mine.step_mode = "s"
    with pytest.raises(ValueError, match="made for T=3"):
        mine(_g(x[:2], device))
