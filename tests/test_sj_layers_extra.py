"""SpikingJelly 2.0's remaining ``layer.*`` classes on grilly (``snn.layer.DropConnectLinear``,
``NeuNorm``, ``BatchNormThroughTime*``, the time-last containers, ``SpikeCountToBinary``,
``TemporalBinSum`` and the attention layers) against SpikingJelly itself: its state_dict loaded
into grilly's (keys as they are), the same float64 inputs, outputs and the gradients of the input
and of every parameter, in step_mode 's' and 'm' where the layer has both, on every device.

DropConnectLinear draws random masks, so it is checked three ways: with the same masks set in
both layers (its ``dropped_w``/``dropped_b`` memories, ``invariant=True``) forward and gradients
equal SpikingJelly's; the masks grilly draws are 0/1 multiples of the weight with the kept
fraction within 5 sigma of 1 - p, kept or redrawn as ``invariant`` says; and the eval output (a
mean of ``samples_num`` Gaussian draws) is within 5 sigma / sqrt(samples_num) of its expectation
(float64 closed forms), and of SpikingJelly's own eval output."""
from importlib.metadata import version
from math import erf

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import snn

torch = pytest.importorskip("torch")
pytest.importorskip("spikingjelly.activation_based")
from spikingjelly.activation_based import layer as sjl  # noqa: E402
from spikingjelly.activation_based import neuron as sjn  # noqa: E402
from test_spikingjelly_layers import _g, _np  # noqa: E402

# the GPU host has SpikingJelly 0.0.0.0.14: BatchNormThroughTime, the time-last containers,
# SpikeCountToBinary, TemporalBinSum and the Spikformer/QKFormer/Spike-driven attention are new
# in 2.0, and its TemporalWiseAttention/MultiDimensionalAttention were built differently (other
# submodules, no use_* options): those comparisons need 2.0. NeuNorm and DropConnectLinear are
# the same in both (0.0.0.0.14's DropConnectLinear without a step_mode: single steps).
_SJ_VERSION = tuple(int(v) for v in version("spikingjelly").split(".")[:2])
SJ2 = pytest.mark.skipif(_SJ_VERSION < (2,), reason="SpikingJelly < 2.0 lacks this layer or "
                                                    "builds it differently")

L = snn.layer
TOL = dict(rtol=1e-9, atol=1e-11)
T, B = 3, 2


def _load(mine, ref, device):
    """ref's state_dict (float64, keys as they are) into mine (made float64 first: loading
    casts to the parameters' dtype), moved to device."""
    mine.to(gp.float64).load_state_dict({k: v.detach().numpy()
                                         for k, v in ref.state_dict().items()})
    return mine.to(device)


def _backward(yt, yg, device):
    w = np.random.default_rng(1).standard_normal(tuple(yt.shape))
    (yt * torch.tensor(w)).sum().backward()
    gp.sum(yg * _g(w, device)).backward()


def _compare(ref, mine, x, device, tol=TOL, run=None):
    """Forward, input gradient and every parameter gradient of ref (torch) and mine (grilly)
    on x (``run(module, x)`` calls them, default ``module(x)``), for a random weighting of the
    output."""
    run = run or (lambda m, v: m(v))
    xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
    yt, yg = run(ref, xt), run(mine, xg)
    assert tuple(yg.shape) == tuple(yt.shape)
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **tol)
    _backward(yt, yg, device)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **tol)
    mp = dict(mine.named_parameters())
    assert set(mp) == {k for k, _ in ref.named_parameters()}
    for k, p in ref.named_parameters():
        np.testing.assert_allclose(_np(mp[k].grad), p.grad.numpy(), **tol, err_msg=k)
    return yt, yg


def _steps(m, x):
    """Single-step mode: one call per step, stacked."""
    return (torch.stack if isinstance(x, torch.Tensor) else gp.stack)([m(v) for v in x])


# ---------------------------------------------------------------- DropConnectLinear

def _masks(rng, p, shape_w, shape_b):
    return ((rng.random(shape_w) >= p).astype(np.float64),
            (rng.random(shape_b) >= p).astype(np.float64))


@pytest.mark.parametrize("step_mode", ["s", "m"])
def test_dropconnect_training_equals_spikingjelly_with_the_same_masks(step_mode, device):
    """Training with the same per-sample masks in both layers (``invariant``: kept over the
    steps): act(W_b x + b_b) and the gradients of x, weight and bias equal SpikingJelly's."""
    torch.manual_seed(0)
    if _SJ_VERSION < (2,) and step_mode == "m":
        pytest.skip("SpikingJelly < 2.0's DropConnectLinear has no step_mode (single steps)")
    mode = {} if _SJ_VERSION < (2,) else {"step_mode": step_mode}
    ref = sjl.DropConnectLinear(4, 3, p=0.4, invariant=True, **mode).double()
    mine = _load(L.DropConnectLinear(4, 3, p=0.4, invariant=True, step_mode=step_mode), ref,
                 device)
    mw, mb = _masks(np.random.default_rng(3), 0.4, (B, 3, 4), (B, 3))
    ref.dropped_w, ref.dropped_b = ref.weight * torch.tensor(mw), ref.bias * torch.tensor(mb)
    mine.dropped_w, mine.dropped_b = mine.weight * _g(mw, device), mine.bias * _g(mb, device)
    x = np.random.default_rng(2).standard_normal((T, B, 4))
    _compare(ref, mine, x, device, run=None if step_mode == "m" else _steps)
    assert mine.dropped_w.shape == (B, 3, 4)


def test_dropconnect_draws_masks_as_its_equations_say(device):
    """The masks grilly draws: per sample, every weight kept (times 1) or dropped (0), the kept
    fraction within 5 sigma of 1 - p; the output act(W_b x + b_b) (float64 numpy); a new draw
    per call unless ``invariant`` (then until ``reset()``); no bias: no ``dropped_b``."""
    p, n = 0.3, 32
    lay = L.DropConnectLinear(8, 8, p=p, dtype=gp.float64).to(device)
    x = _g(np.random.default_rng(4).standard_normal((n, 8)), device)
    y = lay(x)
    w, b = _np(lay.dropped_w), _np(lay.dropped_b)
    kw, kb = w / _np(lay.weight), b / _np(lay.bias)
    assert set(np.unique(kw)) <= {0.0, 1.0} and set(np.unique(kb)) <= {0.0, 1.0}
    kept = np.concatenate([kw.ravel(), kb.ravel()])
    assert abs(kept.mean() - (1 - p)) < 5 * np.sqrt(p * (1 - p) / kept.size)
    want = np.maximum(np.einsum("boi,bi->bo", w, _np(x)) + b, 0.0)
    np.testing.assert_allclose(_np(y), want, rtol=1e-12, atol=1e-12)
    lay(x)
    assert not np.array_equal(_np(lay.dropped_w), w)        # not invariant: a new draw
    inv = L.DropConnectLinear(8, 8, p=p, invariant=True, activation=None).to(device)
    inv(x)
    w0 = _np(inv.dropped_w)
    inv(x)
    np.testing.assert_array_equal(_np(inv.dropped_w), w0)  # kept
    inv.reset()
    assert inv.dropped_w is None and inv.dropped_b is None
    with pytest.raises(ValueError, match="DropConnectLinear: invariant weights were dropped "
                                         "for a batch of 32"):
        inv(x), inv(x[:2])
    nb = L.DropConnectLinear(3, 2, bias=False).to(device)
    nb(_g(np.ones((2, 3)), device))
    assert "dropped_b" not in dict(nb.named_memories()) and nb.bias is None


def _relu_mean(mu, sd):
    """E[max(X, 0)], X ~ N(mu, sd^2)."""
    z = mu / sd
    cdf = 0.5 * (1 + np.vectorize(erf)(z / np.sqrt(2)))
    return mu * cdf + sd * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)


@pytest.mark.parametrize("activation", ["relu", None])
def test_dropconnect_eval_is_the_gaussian_mean(activation, device):
    """Eval: the mean of act over samples_num draws of N(mu, sigma^2), mu = (1-p)(x W^T + b),
    sigma^2 = p(1-p)(x^2 W^2^T + b^2), within 5 sigma / sqrt(samples_num) of E[act(X)] (float64
    closed forms; act 1-Lipschitz, so its variance is at most sigma^2) and of SpikingJelly's
    own estimate; no gradient (SpikingJelly's ``sample()``)."""
    torch.manual_seed(0)
    s, p = 2048, 0.5
    act = torch.nn.ReLU() if activation else None
    ref = sjl.DropConnectLinear(4, 3, p=p, samples_num=s, activation=act).double().eval()
    mine = _load(L.DropConnectLinear(4, 3, p=p, samples_num=s,
                                     activation=nn.ReLU() if activation else None),
                 ref, device).eval()
    x = np.random.default_rng(5).standard_normal((B, 4))
    w, b = ref.weight.detach().numpy(), ref.bias.detach().numpy()
    mu = (1 - p) * (x @ w.T + b)
    sd = np.sqrt(p * (1 - p) * (x ** 2 @ (w ** 2).T + b ** 2))
    y = mine(_g(x, device, grad=True))
    assert not y.requires_grad
    want = _relu_mean(mu, sd) if activation else mu
    bound = 5 * sd / np.sqrt(s)
    assert np.all(np.abs(_np(y) - want) < bound)
    with torch.no_grad():
        yt = ref(torch.tensor(x)).numpy()
    assert np.all(np.abs(_np(y) - yt) < np.sqrt(2) * bound)


# ---------------------------------------------------------------- NeuNorm

@pytest.mark.parametrize("shared", [False, True])
def test_neunorm_equals_spikingjelly(shared, device):
    """NeuNorm (s = k s + (1-k)/C^2 sum_c x, y = x - w s) over a sequence, in 'm' and step by
    step in 's' (its memory carried between calls, then reset), forward and gradients of x
    and w."""
    x = np.random.default_rng(6).standard_normal((T, B, 3, 2, 2))
    for mode in ("m", "s"):
        torch.manual_seed(0)
        ref = sjl.NeuNorm(3, 2, 2, k=0.8, shared_across_channels=shared, step_mode=mode)
        mine = _load(L.NeuNorm(3, 2, 2, 0.8, shared, mode), ref.double(), device)
        assert tuple(mine.w.shape) == ((1, 2, 2) if shared else (3, 2, 2))
        _compare(ref, mine, x, device, run=None if mode == "m" else _steps)
        mine.reset()
        assert mine.x == 0.0


# ---------------------------------------------------------------- BatchNormThroughTime

BNTT = [("BatchNormThroughTime1d", (B, 3)), ("BatchNormThroughTime1d", (B, 3, 4)),
        ("BatchNormThroughTime2d", (B, 3, 2, 2)), ("BatchNormThroughTime3d", (B, 2, 2, 2, 2))]


@SJ2
@pytest.mark.parametrize("name,shape", BNTT, ids=[f"{n[-2:]}-{len(s)}" for n, s in BNTT])
def test_batchnorm_through_time_equals_spikingjelly(name, shape, device):
    """BNTT: step t through ``bn_list[t]`` (a scale, no shift), in 'm' and step by step in 's';
    forward, gradients of x and of every step's weight, every step's running statistics; a step
    past T is a ValueError until reset()."""
    x = np.random.default_rng(7).standard_normal((T,) + shape) * 2 + 1
    for mode in ("m", "s"):
        torch.manual_seed(0)
        ref = getattr(sjl, name)(T, shape[1], step_mode=mode).double()
        mine = _load(getattr(L, name)(T, shape[1], step_mode=mode), ref, device)
        assert all(bn.bias is None for bn in mine.bn_list)
        _compare(ref, mine, x, device, run=None if mode == "m" else _steps)
        for a, r in zip(mine.bn_list, ref.bn_list):
            np.testing.assert_allclose(_np(a.running_mean), r.running_mean.numpy(), **TOL)
            np.testing.assert_allclose(_np(a.running_var), r.running_var.numpy(), **TOL)
    with pytest.raises(ValueError, match=f"{name}: step 3 of a layer made for T=3"):
        mine(_g(x[0], device))
    mine.reset()
    assert mine.t == -1 and mine(_g(x[0], device)).shape == shape


# ---------------------------------------------------------------- time-last containers

@SJ2
def test_t_last_containers_equal_spikingjelly(device):
    """TLastSeqToANNContainer (a Conv1d + ReLU on each step of (B, C, L, T)) and
    TLastMultiStepContainer (Linear + LIFNode looped over the last axis of (B, F, T))."""
    torch.manual_seed(0)
    ref = sjl.TLastSeqToANNContainer(torch.nn.Conv1d(2, 3, 3, padding=1), torch.nn.ReLU())
    mine = _load(L.TLastSeqToANNContainer(nn.Conv1d(2, 3, 3, padding=1), nn.ReLU()),
                 ref.double(), device)
    x = np.random.default_rng(8).standard_normal((B, 2, 5, T))
    _compare(ref, mine, x, device)
    ref = sjl.TLastMultiStepContainer(torch.nn.Linear(3, 4), sjn.LIFNode())
    mine = _load(L.TLastMultiStepContainer(nn.Linear(3, 4), snn.LIFNode()), ref.double(),
                 device)
    yt, _ = _compare(ref, mine, np.random.default_rng(9).standard_normal((B, 3, T)) * 3, device)
    assert 0 < yt.detach().numpy().mean() < 1
    # set_step_mode keeps the modules of both containers in 's', as SpikingJelly's
    snn.functional.set_step_mode(mine, "m")
    assert mine[1].step_mode == "s"
    with pytest.raises(ValueError, match=r"TLastMultiStepContainer: LIFNode.step_mode must be "
                                         r"'s'"):
        L.TLastMultiStepContainer(snn.LIFNode(step_mode="m"))
    with pytest.raises(ValueError, match=r"TLastSeqToANNContainer: expected a sequence \(B, "
                                         r"\.\.\., T\)"):
        L.TLastSeqToANNContainer(nn.ReLU())(_g(np.zeros(3), device))


# ---------------------------------------------------------------- spike-count conversions

@SJ2
@pytest.mark.parametrize("name", ["SpikeCountToBinary", "TemporalBinSum"])
def test_count_conversions_equal_spikingjelly(name, device):
    """SpikeCountToBinary (counts to num_slots binary steps, straight-through gradient
    1/num_slots) and TemporalBinSum (sums of bins of num_slots steps, the last one padded) in
    eval and with always_convert; the identity while training."""
    rng = np.random.default_rng(10)
    x = rng.integers(0, 4, (5, B, 3)).astype(np.float64) if name == "SpikeCountToBinary" \
        else rng.standard_normal((5, B, 3))
    _compare(getattr(sjl, name)(3).eval(), getattr(L, name)(3).eval(), x, device)
    _compare(getattr(sjl, name)(2, always_convert=True), getattr(L, name)(2, True), x, device)
    xg = _g(x, device)
    lay = getattr(L, name)(3)
    assert lay(xg) is xg and lay.step_mode == "m"
    with pytest.raises(ValueError, match=f"{name}: num_slots must be an int >= 1"):
        getattr(L, name)(0)
    with pytest.raises(ValueError, match=rf"{name}: x_seq must have shape \(T, N, \.\.\.\)"):
        lay.eval()(_g(np.zeros(3), device))


# ---------------------------------------------------------------- attention

@SJ2
@pytest.mark.parametrize("dimension,shape", [(4, (4, B, 3, 2, 2)), (2, (4, B, 5))])
def test_temporal_wise_attention_equals_spikingjelly(dimension, shape, device):
    """TemporalWiseAttention on (T, N, C, H, W) and (T, N, L): scores from the shared MLP of
    each step's average and maximum; forward and gradients (x, sharedMLP.0/2.weight)."""
    torch.manual_seed(0)
    ref = sjl.TemporalWiseAttention(4, 2, dimension).double()
    mine = _load(L.TemporalWiseAttention(4, 2, dimension), ref, device)
    _compare(ref, mine, np.random.default_rng(11).standard_normal(shape), device)
    with pytest.raises(ValueError, match="TemporalWiseAttention: reduction"):
        L.TemporalWiseAttention(2, 4)
    with pytest.raises(ValueError, match=f"TemporalWiseAttention: dimension={dimension}"):
        mine(_g(np.zeros((4, B, 3, 3)), device))


MDA = [{}, {"use_channel": False, "kernel_size": 7}, {"use_temporal": False,
                                                      "use_spatial": False}]


@SJ2
@pytest.mark.parametrize("kw", MDA, ids=["all", "no-channel-k7", "channel-only"])
def test_multi_dimensional_attention_equals_spikingjelly(kw, device):
    """MultiDimensionalAttention: temporal, channel, spatial attention (each optional), ReLU;
    forward and gradients of x and every weight (ta/ca.sharedMLP, sa.conv)."""
    torch.manual_seed(0)
    ref = sjl.MultiDimensionalAttention(4, 4, 2, 2, **kw).double()
    mine = _load(L.MultiDimensionalAttention(4, 4, 2, 2, **kw), ref, device)
    assert (mine.ca is None) == (ref.ca is None)
    _compare(ref, mine, np.random.default_rng(12).standard_normal((4, B, 4, 3, 3)), device)
    with pytest.raises(ValueError, match="MultiDimensionalAttention: at least one"):
        L.MultiDimensionalAttention(4, 4, use_temporal=False, use_channel=False,
                                    use_spatial=False)


def _active(ref):
    """BatchNorm weights and biases that make the neurons after them fire often (spikes
    exercise the attention; the default init rarely reaches the threshold)."""
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in ref.named_parameters():
            if "bn" in name and name.endswith("weight"):
                p.copy_(torch.rand(p.shape, generator=g, dtype=p.dtype) * 2 + 1)
            elif "bn" in name and name.endswith("bias"):
                p.copy_(torch.rand(p.shape, generator=g, dtype=p.dtype) * 2 + 0.5)
    return ref


SPIKING = [("SpikingSelfAttention", {}), ("QKAttention", {"qka_type": "channel"}),
           ("TokenQKAttention", {}), ("ChannelQKAttention", {})]


@SJ2
@pytest.mark.parametrize("name,kw", SPIKING, ids=[s[0] + str(len(s[1])) for s in SPIKING])
def test_spiking_attention_equals_spikingjelly(name, kw, device):
    """Spikformer's SSA and QKFormer's Q-K attention on spikes (T, N, C, L): spikes (its LIFs
    fire at v >= v_threshold, as SpikingJelly's: their membranes often equal 0.5 exactly),
    gradients of x and of the Conv1d/BatchNorm weights, BatchNorm running stats."""
    torch.manual_seed(0)
    ref = _active(getattr(sjl, name)(8, 2, **kw).double())
    mine = _load(getattr(L, name)(8, 2, **kw), ref, device)
    x = (np.random.default_rng(13).random((T, B, 8, 6)) < 0.5).astype(np.float64)
    yt, _ = _compare(ref, mine, x, device)
    assert 0 < yt.detach().numpy().mean() < 1
    rs = dict(ref.named_buffers())
    for k, v in mine.named_buffers():
        np.testing.assert_allclose(_np(v), rs[k].numpy(), **TOL, err_msg=k)
    assert mine.extra_repr() == ref.extra_repr()


@SJ2
def test_spike_driven_self_attention_equals_spikingjelly(device):
    """The Spike-driven Transformer's SDSA on (T, N, C, H, W): shortcut LIF, Q/K/V conv-BN-LIF,
    the K*V token sum through attn_lif masking Q, proj conv-BN plus the input."""
    torch.manual_seed(0)
    ref = _active(sjl.SpikeDrivenSelfAttention(4, 2).double())
    mine = _load(L.SpikeDrivenSelfAttention(4, 2), ref, device)
    x = np.random.default_rng(14).standard_normal((T, B, 4, 2, 3)) * 2 + 1
    _compare(ref, mine, x, device)
    assert mine.proj_conv.bias is not None


def test_attention_neurons_and_errors(device):
    """The neurons: SpikingJelly's LIF defaults (tau 2, detach_reset, attn_lif threshold 0.5) or
    ``spiking_neuron(**kwargs)`` in step_mode 'm'; bad arguments and inputs raise naming the
    layer."""
    a = L.SpikingSelfAttention(4, 2)
    assert isinstance(a.qkv_lif, snn.LIFNode) and a.qkv_lif.detach_reset
    assert a.attn_lif.v_threshold == 0.5 and a.qkv_lif.v_threshold == 1.0
    b = L.TokenQKAttention(4, 2, spiking_neuron=snn.IFNode, v_threshold=0.7)
    assert type(b.qk_lif) is snn.IFNode and b.attn_lif.v_threshold == 0.7
    assert b.qk_lif.step_mode == "m" and b.qka_type == "token"
    with pytest.raises(AttributeError):
        b.qka_type = "channel"
    with pytest.raises(ValueError, match="SpikingSelfAttention: dim 6 should be divided"):
        L.SpikingSelfAttention(6, 4)
    with pytest.raises(ValueError, match="QKAttention: qka_type should be"):
        L.QKAttention(4, 2, "row")
    with pytest.raises(ValueError, match="SpikeDrivenSelfAttention: the spiking neurons need "
                                         "step_mode='m'"):
        L.SpikeDrivenSelfAttention(4, 2, step_mode="s")
    with pytest.raises(ValueError, match=r"SpikingSelfAttention: expected x_seq \(T, N, 4, L\)"):
        a.to(device)(_g(np.zeros((2, 1, 4, 2, 2)), device))
    with pytest.raises(ValueError, match="NeuNorm: expected one step"):
        L.NeuNorm(3, 2, 2).to(device)(_g(np.zeros((1, 2, 2, 2)), device))
    with pytest.raises(ValueError, match="DropConnectLinear: p must be in"):
        L.DropConnectLinear(2, 2, p=1.5)
    with pytest.raises(TypeError, match="DropConnectLinear: activation must be"):
        L.DropConnectLinear(2, 2, activation=torch.nn.ReLU())
    with pytest.raises(ValueError, match="BatchNormThroughTime2d: step_mode must be"):
        L.BatchNormThroughTime2d(2, 3, step_mode="x")
