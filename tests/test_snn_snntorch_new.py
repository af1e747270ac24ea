"""snnTorch 1.0's newer neurons (LeakyParallel, StateLeaky, LinearLeaky, DeltaLeaky,
AssociativeLeaky, GradedSpikes), spikegen.targets_convert and backprop.RTRL against snnTorch
itself: the same weights loaded from snnTorch's state_dict (strict: the keys match), the same
outputs and states over several steps, and the gradients of a loss with respect to the input
and every learnable parameter equal torch's autograd, on every device."""
import numpy as np
import pytest

import grilly as gp
import grilly.nn.snn.functional as SF
from grilly import nn
from grilly.nn import snn
from grilly.nn.snn import spikegen

torch = pytest.importorskip("torch")
snntorch = pytest.importorskip("snntorch")
from snntorch import functional as tSF  # noqa: E402
from snntorch import spikegen as tspikegen  # noqa: E402
from snntorch import surrogate as tsurrogate  # noqa: E402
from snntorch.functional import quant as tquant  # noqa: E402

# float32 throughout (snnTorch's parameters and spikes are float32)
TOL = dict(rtol=2e-5, atol=2e-6)
T, B = 5, 2
R = np.random.default_rng(11)


def _np(a):
    return np.asarray(a.to_device("cpu"))


def _load(mine, ref, device):
    """snnTorch's state_dict into grilly's module, strict (every key matches), then moved."""
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return mine.to(device)


def _pair(x, device):
    """The same float32 data as a torch leaf and a grilly leaf (both requiring grad)."""
    x = np.asarray(x, dtype=np.float32)
    return (torch.tensor(x, requires_grad=True),
            gp.asarray(x, device=device).requires_grad_())


def _backward(out_t, out_g, device, seed=0):
    """A random cotangent through both outputs (the loss sum(out * w))."""
    w = np.random.default_rng(seed).standard_normal(tuple(out_t.shape)).astype(np.float32)
    (out_t * torch.tensor(w)).sum().backward()
    gp.sum(out_g * gp.asarray(w, device=device)).backward()


def _close(a, b, what=""):
    """float32 sums of terms of either sign: the absolute tolerance scales with the largest."""
    b = np.asarray(b)
    atol = TOL["atol"] * max(1.0, float(np.abs(b).max(initial=0.0)))
    np.testing.assert_allclose(_np(a), b, rtol=TOL["rtol"], atol=atol, err_msg=what)


def _check_grads(ref, mine, xt, xg):
    _close(xg.grad, xt.grad.numpy(), "input")
    params = dict(mine.named_parameters())
    assert set(params) == {k for k, _ in ref.named_parameters()}
    for k, p in ref.named_parameters():
        g = params[k].grad
        if p.grad is None:   # not on the graph (snnTorch's unused beta, a frozen weight)
            assert g is None or not np.any(_np(g)), k
        else:
            _close(g, p.grad.numpy(), k)


def _spikes_equal(a, b):
    np.testing.assert_array_equal(_np(a), b.detach().numpy())


# ---- LeakyParallel ----------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [
    dict(),
    dict(beta=0.6, learn_beta=True, learn_threshold=True, threshold=0.4,
         graded_spikes_factor=1.5, learn_graded_spikes_factor=True),
    dict(beta=0.3, weight_hh_enable=True, learn_beta=True, bias=False,
         spike_grad="fast_sigmoid"),
    dict(surrogate_disable=True, threshold=0.2),
])
def test_leaky_parallel_equals_snntorch(kw, device):
    """The spikes of a (T, B, N) sequence (and of an unbatched (T, N) one) through the ReLU RNN,
    and the gradients of the input, the RNN's weights (W_hh diagonal unless weight_hh_enable,
    frozen unless learn_beta), threshold and graded_spikes_factor."""
    kw = dict(kw)
    tkw = dict(kw)
    if kw.get("spike_grad") == "fast_sigmoid":
        kw["spike_grad"] = snn.surrogate.fast_sigmoid(slope=5)
        tkw["spike_grad"] = tsurrogate.fast_sigmoid(slope=5)
    torch.manual_seed(1)
    ref = snntorch.LeakyParallel(3, 4, **tkw)
    mine = _load(snn.LeakyParallel(3, 4, **kw), ref, device)
    for shape in ((T, B, 3), (T, 3)):
        xt, xg = _pair(R.standard_normal(shape) * 4, device)
        st, sg = ref(xt), mine(xg)
        assert sg.shape == tuple(st.shape)
        _spikes_equal(sg, st)
        fired = float((st.detach() != 0).float().mean())
        assert 0 < fired < 1   # some spikes, not all
        if kw.get("surrogate_disable"):   # the plain step: no gradient at all
            assert not st.requires_grad and not sg.requires_grad
            continue
        ref.zero_grad()
        mine.zero_grad()
        _backward(st, sg, device)
        _check_grads(ref, mine, xt, xg)
    w = _np(mine.rnn.weight_hh_l0)
    if not kw.get("weight_hh_enable"):
        assert not np.any(w - np.diag(np.diag(w)))   # still diagonal after the loads and grads
    assert mine.rnn.weight_hh_l0.requires_grad == bool(kw.get("learn_beta"))


def test_leaky_parallel_beta_fills_weight_hh(device):
    """beta on W_hh's diagonal (dense: every entry), clamped to [0, 1], kept as the (1,) buffer
    ``beta`` as snnTorch's; per-neuron beta goes on the diagonal (snnTorch 1.0 leaves its random
    diagonal there), None is no buffer."""
    for beta, dense in ((0.5, False), (1.7, False), (0.25, True)):
        ref = snntorch.LeakyParallel(2, 3, beta=beta, weight_hh_enable=dense)
        mine = snn.LeakyParallel(2, 3, beta=beta, weight_hh_enable=dense).to(device)
        np.testing.assert_array_equal(_np(mine.rnn.weight_hh_l0),
                                      ref.rnn.weight_hh_l0.detach().numpy())
        np.testing.assert_array_equal(_np(mine.beta), ref.beta.numpy())
    mine = snn.LeakyParallel(2, 3, beta=[0.1, 0.2, 0.3])
    np.testing.assert_allclose(_np(mine.rnn.weight_hh_l0), np.diag([0.1, 0.2, 0.3]), rtol=1e-7)
    assert "beta" not in snn.LeakyParallel(2, 3).state_dict()
    # device= (snnTorch's, for the RNN / Linear) puts every parameter and buffer there
    x = gp.ones((T, B, 2), device=device)
    assert snn.LeakyParallel(2, 3, beta=0.5, device=device)(x).device == x.device
    assert snn.LinearLeaky(0.5, 2, 3, device=device)(x)[1].device == x.device
    with pytest.raises(ValueError, match="LeakyParallel: beta must be a single value or"):
        snn.LeakyParallel(2, 3, beta=[0.1, 0.2])


# ---- StateLeaky / LinearLeaky -----------------------------------------------------------------
@pytest.mark.parametrize("kw", [
    dict(beta=0.8),
    dict(beta="per_channel", learn_beta=True, learn_threshold=True, threshold=0.7),
    dict(beta=0.9, kernel_truncation_steps=2, learn_beta=True, spike_grad="sigmoid"),
    dict(beta="per_channel", output=False, learn_beta=True),
    dict(beta=0.7, state_quant=True),
])
def test_state_leaky_equals_snntorch(kw, device):
    """mem = the causal exponential-kernel convolution of the sequence, spk = its threshold
    crossings: both equal snnTorch's, with the gradients of the input, tau (learn_beta),
    threshold and graded_spikes_factor."""
    kw, tkw = dict(kw), dict(kw)
    if kw["beta"] == "per_channel":
        kw["beta"], tkw["beta"] = [0.5, 0.8, 0.95], torch.tensor([0.5, 0.8, 0.95])
    if kw.get("spike_grad") == "sigmoid":
        kw["spike_grad"], tkw["spike_grad"] = snn.surrogate.sigmoid(5), tsurrogate.sigmoid(5)
    if kw.get("state_quant"):
        kw["state_quant"] = SF.state_quant(num_bits=4, threshold=1.0)
        tkw["state_quant"] = tquant.state_quant(num_bits=4, threshold=1.0)
    ref = snntorch.StateLeaky(channels=3, **tkw)
    mine = _load(snn.StateLeaky(channels=3, **kw), ref, device)
    xt, xg = _pair(R.standard_normal((T, B, 3)), device)
    out_t, out_g = ref(xt), mine(xg)
    if kw.get("output", True):
        _spikes_equal(out_g[0], out_t[0])
        np.testing.assert_allclose(_np(out_g[1]), out_t[1].detach().numpy(), **TOL)
        out_t = out_t[0] * 0.5 + out_t[1]
        out_g = out_g[0] * 0.5 + out_g[1]
    else:
        np.testing.assert_allclose(_np(out_g), out_t.detach().numpy(), **TOL)
    np.testing.assert_allclose(_np(mine.beta), ref.beta.detach().numpy(), **TOL)
    _backward(out_t, out_g, device)
    _check_grads(ref, mine, xt, xg)


def test_state_leaky_graded_spikes_once(device):
    """graded_spikes_factor g scales StateLeaky's spikes once, as snnTorch documents (snnTorch
    1.0's forward multiplies them by g twice): against snnTorch with sqrt(g), the same spikes,
    membranes and input gradient, and d/dg = snnTorch's d/d(sqrt g) / (2 sqrt g)."""
    g = 2.0
    ref = snntorch.StateLeaky(0.8, 3, threshold=0.5, graded_spikes_factor=g ** 0.5,
                              learn_graded_spikes_factor=True)
    mine = _load(snn.StateLeaky(0.8, 3, threshold=0.5, learn_graded_spikes_factor=True), ref,
                 device)
    with gp.no_grad():
        mine.graded_spikes_factor[...] = g
    xt, xg = _pair(R.standard_normal((T, B, 3)), device)
    (st, mt), (sg, mg) = ref(xt), mine(xg)
    np.testing.assert_allclose(_np(sg), st.detach().numpy(), **TOL)   # sqrt(2)^2 in float32
    assert set(np.unique(_np(sg))) == {0.0, g}
    _backward(st + mt, sg + mg, device)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)
    np.testing.assert_allclose(_np(mine.graded_spikes_factor.grad),
                               ref.graded_spikes_factor.grad.numpy() / (2 * g ** 0.5), **TOL)


def test_linear_leaky_equals_snntorch(device):
    """Linear at every step then StateLeaky: spikes, membrane (kept as .mem) and the gradients
    of the input, the linear layer's weight and bias and tau."""
    torch.manual_seed(2)
    ref = snntorch.LinearLeaky(0.85, 4, 3, learn_beta=True, threshold=0.3,
                               kernel_truncation_steps=3)
    mine = _load(snn.LinearLeaky(0.85, 4, 3, learn_beta=True, threshold=0.3,
                                 kernel_truncation_steps=3), ref, device)
    xt, xg = _pair(R.standard_normal((T, B, 4)), device)
    (st, mt), (sg, mg) = ref(xt), mine(xg)
    _spikes_equal(sg, st)
    np.testing.assert_allclose(_np(mg), mt.detach().numpy(), **TOL)
    assert mine.mem is mg
    _backward(st * 0.5 + mt, sg * 0.5 + mg, device)
    _check_grads(ref, mine, xt, xg)
    with pytest.raises(ValueError, match="LinearLeaky: input has 3 features, expected 4"):
        mine(gp.zeros((T, B, 3), device=device))


def test_state_leaky_errors_and_warning():
    with pytest.raises(ValueError, match=r"StateLeaky: beta has shape \(2,\)"):
        snn.StateLeaky([0.5, 0.6], 3)
    with pytest.raises(ValueError, match="StateLeaky: kernel_truncation_steps must be a "
                                         "positive int"):
        snn.StateLeaky(0.5, 3, kernel_truncation_steps=0)
    with pytest.raises(ValueError, match="StateLeaky: channels must be a positive int"):
        snn.StateLeaky(0.5, 0)
    with pytest.raises(ValueError, match=r"StateLeaky: expected a \(T, batch, channels\)"):
        snn.StateLeaky(0.5, 3)(gp.zeros((T, 3)))
    with pytest.raises(ValueError, match="StateLeaky: input has 2 channels, but beta/tau has 3"):
        snn.StateLeaky([0.5, 0.6, 0.7], 3)(gp.zeros((T, B, 2)))
    with pytest.raises(TypeError, match="StateLeaky: state_quant must be a function"):
        snn.StateLeaky(0.5, 3, state_quant=True)
    with pytest.warns(UserWarning, match="StateLeaky: spike-related settings are unused"):
        snn.StateLeaky(0.5, 3, output=False, learn_threshold=True)


# ---- DeltaLeaky -------------------------------------------------------------------------------
@pytest.mark.parametrize("init_hidden", [False, True])
def test_delta_leaky_equals_snntorch(init_hidden, device):
    """mem = beta mem + x with no reset, a spike where |mem[t] - mem[t-1]| > delta_threshold:
    spikes and both states over T steps, and the gradients of the input and a learnable beta."""
    kw = dict(learn_beta=True, init_hidden=init_hidden)
    ref = snntorch.DeltaLeaky(0.6, 0.8, spike_grad=tsurrogate.fast_sigmoid(), **kw)
    mine = _load(snn.DeltaLeaky(0.6, 0.8, spike_grad=snn.surrogate.fast_sigmoid(), **kw),
                 ref, device)
    xt, xg = _pair(R.standard_normal((T, B, 3)), device)
    st_t = st_g = None
    outs_t, outs_g = [], []
    state_t, state_g = ref.reset_mem(), mine.reset_mem()
    assert state_g == (None, None)
    for t in range(T):
        if init_hidden:
            st_t, state_t = ref(xt[t])
            st_g, state_g = mine(xg[t])
        else:
            st_t, state_t = ref(xt[t], state_t)
            st_g, state_g = mine(xg[t], state_g)
        _spikes_equal(st_g, st_t)
        for a, b in zip(state_g, state_t):
            np.testing.assert_allclose(_np(a), b.detach().numpy(), **TOL)
        outs_t.append(st_t + state_t[0])
        outs_g.append(st_g + state_g[0])
    _backward(torch.stack(outs_t), gp.stack(outs_g), device)
    _check_grads(ref, mine, xt, xg)
    mine.reset_state()
    assert mine.mem is None and mine.mem_prev is None


def test_delta_leaky_errors(device):
    lif = snn.DeltaLeaky(0.5, 0.9).to(device)
    x = gp.zeros((B, 3), device=device)
    with pytest.raises(TypeError, match=r"DeltaLeaky: the state \(mem, mem_prev\) must be "
                                        "given"):
        lif(x)
    with pytest.raises(TypeError, match="DeltaLeaky: missing the argument beta"):
        snn.DeltaLeaky(0.5)
    with pytest.raises(ValueError, match="DeltaLeaky: reset_mechanism must be one of"):
        snn.DeltaLeaky(0.5, 0.9, reset_mechanism="soft")
    with pytest.raises(TypeError, match="DeltaLeaky: surrogate is a snntorch spike function"):
        snn.DeltaLeaky(0.5, 0.9, spike_grad=tsurrogate.atan())
    hidden = snn.DeltaLeaky(0.5, 0.9, init_hidden=True).to(device)
    hidden(x)
    with pytest.raises(ValueError, match="DeltaLeaky: input shape"):
        hidden(gp.zeros((1, 3), device=device))


# ---- AssociativeLeaky -------------------------------------------------------------------------
@pytest.mark.parametrize("use_q", [True, False])
def test_associative_leaky_equals_snntorch(use_q, device):
    """The decaying outer-product memory, its spikes and the q readout (T, B, d_value^2) or the
    spikes (T, B, d_value d_key): outputs, and the gradients of the input and of every
    projection (to_v, to_k, to_alpha, to_q)."""
    torch.manual_seed(3)
    ref = snntorch.AssociativeLeaky(3, 2, 3, 6, use_q_projection=use_q)
    mine = _load(snn.AssociativeLeaky(3, 2, 3, 6, use_q_projection=use_q), ref, device)
    xt, xg = _pair(R.standard_normal((4, B, 3)) * 2, device)
    yt, yg = ref(xt), mine(xg)
    assert yg.shape == tuple(yt.shape)
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **TOL)
    _backward(yt, yg, device)
    _check_grads(ref, mine, xt, xg)


def test_associative_leaky_constructors_and_errors():
    m = snn.AssociativeLeaky.from_num_spiking_neurons(3, 9)
    assert (m.d_value, m.d_key, m.to_q.out_features) == (3, 3, 9)
    assert snn.AssociativeLeaky(3, 2, 2, None).num_spiking_neurons is None
    with pytest.raises(ValueError, match="AssociativeLeaky: num_spiking_neurons=5 must equal"):
        snn.AssociativeLeaky(3, 2, 2, 5)
    with pytest.raises(ValueError, match="AssociativeLeaky: d_value and d_key must be"):
        snn.AssociativeLeaky(3, 0, 2, None)
    with pytest.raises(ValueError, match="must be a perfect square"):
        snn.AssociativeLeaky.from_num_spiking_neurons(3, 8)
    with pytest.raises(ValueError, match="AssociativeLeaky: input has 2 features"):
        m(gp.zeros((T, B, 2)))


# ---- GradedSpikes -----------------------------------------------------------------------------
def test_graded_spikes_equals_snntorch(device):
    """x * weights (size, 1), broadcast as torch.multiply; constant or U(0.5, 1.5) weights."""
    ref = snntorch.GradedSpikes(3, 2.5)
    mine = _load(snn.GradedSpikes(3, 2.5), ref, device)
    np.testing.assert_array_equal(_np(mine.weights), np.full((3, 1), 2.5, np.float32))
    with torch.no_grad():
        ref.weights.copy_(torch.tensor([[0.7], [1.2], [0.9]]))
    mine = _load(snn.GradedSpikes(3, 1.0), ref, device)
    for shape in ((3, 4), (B, 3, 1)):
        xt, xg = _pair(R.random(shape) > 0.5, device)
        yt, yg = ref(xt), mine(xg)
        np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **TOL)
        ref.zero_grad()
        mine.zero_grad()
        _backward(yt, yg, device)
        _check_grads(ref, mine, xt, xg)
    w = _np(snn.GradedSpikes(50, None).weights)
    assert w.shape == (50, 1) and w.min() >= 0.5 and w.max() < 1.5 and w.std() > 0.1
    with pytest.raises(ValueError, match="GradedSpikes: size must be a positive int"):
        snn.GradedSpikes(0, 1.0)
    with pytest.raises(TypeError, match="GradedSpikes: constant_factor must be a float"):
        snn.GradedSpikes(3, "1")


# ---- the shared arguments ---------------------------------------------------------------------
def test_state_dict_keys_and_argument_errors():
    """state_dict keys as snnTorch's (so its checkpoints load, _load above is strict), and the
    shared arguments checked with errors naming the class."""
    pairs = [(snntorch.StateLeaky(0.9, 3, learn_threshold=True),
              snn.StateLeaky(0.9, 3, learn_threshold=True)),
             (snntorch.DeltaLeaky(0.5, 0.9, reset_mechanism="zero"),
              snn.DeltaLeaky(0.5, 0.9, reset_mechanism="zero")),
             (snntorch.LeakyParallel(2, 3, beta=0.5, bias=False),
              snn.LeakyParallel(2, 3, beta=0.5, bias=False))]
    for ref, mine in pairs:
        assert set(mine.state_dict()) == set(ref.state_dict())
        for k, v in ref.state_dict().items():
            assert tuple(mine.state_dict()[k].shape) == tuple(v.shape), k
            if not k.startswith("rnn."):   # (the RNN's weights are drawn at random)
                np.testing.assert_allclose(_np(mine.state_dict()[k]), v.numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="LeakyParallel: learn_beta must be a bool"):
        snn.LeakyParallel(2, 3, learn_beta="yes")
    with pytest.raises(ValueError, match="LeakyParallel: hidden_size must be a positive int"):
        snn.LeakyParallel(2, 0)
    with pytest.raises(TypeError, match="LeakyParallel: surrogate=atan is the factory"):
        snn.LeakyParallel(2, 3, spike_grad=snn.surrogate.atan)
    with pytest.raises(TypeError, match="LeakyParallel: expected a grilly Array"):
        snn.LeakyParallel(2, 3)(np.zeros((T, B, 2), np.float32))
    with pytest.raises(ValueError, match="StateLeaky: threshold must not be NaN"):
        snn.StateLeaky(0.9, 3, threshold=float("nan"))


# ---- spikegen.targets_convert -----------------------------------------------------------------
Y = np.array([1, 0, 2, 1])


def _targets(device):
    return gp.asarray(Y, device=device), torch.tensor(Y)


@pytest.mark.parametrize("kw", [
    dict(),
    dict(on_target=0.8, off_target=0.1),
    dict(on_target=0.2, off_target=0.6),
    dict(num_steps=4, first_spike_time=2),
    dict(num_steps=4, first_spike_time=1, on_target=0.5, off_target=0.7),
    dict(code="latency", num_steps=5, bypass=True),
    dict(code="latency", num_steps=5, linear=True, normalize=True),
    dict(code="latency", num_steps=6, tau=0.5, first_spike_time=1, threshold=0.2, bypass=True),
    # snnTorch 1.0's time-varying rate targets work only where num_steps == num_classes
    dict(num_steps=3, correct_rate=0.5, interpolate=True),
    dict(num_steps=3, correct_rate=0.5, incorrect_rate=0.25, interpolate=True,
         on_target=1.2, off_target=0.3),
])
def test_targets_convert_equals_snntorch(kw, device):
    gy, ty = _targets(device)
    ref = tspikegen.targets_convert(ty, 3, **kw)
    mine = spikegen.targets_convert(gy, 3, **kw)
    assert mine.shape == tuple(ref.shape) and mine.dtype == gp.float32
    np.testing.assert_allclose(_np(mine), ref.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("correct,incorrect,fst", [(0.5, 0.0, 0), (0.3, 0.2, 1), (0.7, 0.7, 2)])
@pytest.mark.parametrize("interpolate", [False, True])
def test_targets_convert_time_varying_rates(correct, incorrect, fst, interpolate, device):
    """Time-varying rate targets (T, B, C) for any num_steps: each class's train from
    snnTorch's target_rate_code (its spike times) and rate_interpolate, one-hot combined (a
    float64 reference: snnTorch 1.0's own combination broadcasts wrongly)."""
    steps, on, off = 7, 1.1, 0.2
    ct, ctimes = tspikegen.target_rate_code(steps, fst, correct)
    it, itimes = tspikegen.target_rate_code(steps, fst, incorrect)
    if interpolate:
        ct = tspikegen.rate_interpolate(ctimes, steps, on, off)
        it = tspikegen.rate_interpolate(itimes, steps, on, off)
    onehot = np.eye(3)[Y]
    ref = (onehot[None] * ct.numpy().astype(np.float64)[:, None, None]
           + (1 - onehot[None]) * it.numpy().astype(np.float64)[:, None, None])
    if not interpolate:
        ref = np.maximum(ref * on, off)
    mine = spikegen.targets_convert(gp.asarray(Y, device=device), 3, num_steps=steps,
                                    first_spike_time=fst, correct_rate=correct,
                                    incorrect_rate=incorrect, on_target=on, off_target=off,
                                    interpolate=interpolate)
    np.testing.assert_allclose(_np(mine), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("pattern", ["poisson", "uniform"])
def test_targets_convert_random_patterns(pattern, device):
    """'poisson' draws each step with the class's rate, from first_spike_time on; 'uniform'
    scatters as many spikes as 'regular' would at random steps (gp.random's draws)."""
    steps = 400
    out = _np(spikegen.targets_convert(gp.asarray(Y, device=device), 3, num_steps=steps,
                                       first_spike_time=3, correct_rate=0.5,
                                       incorrect_rate=0.1, firing_pattern=pattern))
    onehot = np.eye(3, dtype=bool)[Y]
    assert out.shape == (steps, 4, 3) and set(np.unique(out)) <= {0.0, 1.0}
    assert not out[:3].any()
    # every sample and class share one train per rate
    assert (out[:, onehot] == out[:, onehot][:, :1]).all()
    rate_c, rate_i = out[:, onehot].mean(), out[:, ~onehot].mean()
    if pattern == "poisson":
        assert abs(rate_c - 0.5) < 0.1 and abs(rate_i - 0.1) < 0.05
    else:   # at most the number of regular spikes (duplicates fall together)
        assert 0.3 < rate_c <= 0.5 and 0.05 < rate_i <= 0.1


def test_targets_convert_errors(device):
    gy = gp.asarray(Y, device=device)
    for kw, msg in ((dict(code="phase"), "code must be 'rate' or 'latency'"),
                    (dict(correct_rate=1.5, num_steps=3), "correct_rate and incorrect_rate must"),
                    (dict(correct_rate=0.5), "num_steps is required"),
                    (dict(correct_rate=0.2, incorrect_rate=0.5, num_steps=3),
                     "incorrect_rate must not exceed correct_rate"),
                    (dict(correct_rate=0.5, num_steps=3, firing_pattern="burst"),
                     "firing_pattern must be"),
                    (dict(first_spike_time=2), "first_spike_time needs num_steps"),
                    (dict(num_steps=3, correct_rate=0.5, first_spike_time=4),
                     "first_spike_time .* must be <= num_steps"),
                    (dict(num_steps=3, correct_rate=0.5, interpolate=True, on_target=0.5,
                          off_target=0.5), "interpolate needs on_target != off_target"),
                    (dict(code="latency"), "latency: num_steps is required")):
        with pytest.raises(ValueError, match=msg):
            spikegen.targets_convert(gy, 3, **kw)
    with pytest.raises(ValueError, match="targets_convert: targets must be a 1-d"):
        spikegen.targets_convert(gp.zeros((2, 2), device=device), 3)


# ---- backprop.RTRL ----------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:The module snntorch.backprop will be deprecated")
def test_backprop_rtrl_equals_snntorch(device):
    """snnTorch's backprop.RTRL (an update at every step, TBPTT with K=1) for one epoch of two
    time-static batches: the same mean loss and trained weights; and grilly's on the same data
    repeated over time (time-varying, where snnTorch 1.0's RTRL fails) too."""
    from snntorch import backprop as tbackprop
    from grilly.nn.snn import backprop
    # snnTorch resets every Leaky it ever built (class-wide): forget the other tests' neurons
    snntorch.SpikingNeuron.init()
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4),
                              snntorch.Leaky(beta=0.5, init_hidden=True, output=True))
    start = {k: v.detach().numpy().copy() for k, v in ref.state_dict().items()
             if k.startswith("0.")}
    mines = []
    for _ in range(2):
        m = nn.Sequential(nn.Linear(3, 4), snn.Leaky(beta=0.5, init_hidden=True, output=True))
        m.load_state_dict(start, strict=False)
        mines.append(m.to(device))
    rng = np.random.default_rng(3)
    steps = 3
    batches = [(rng.random((2, 3)).astype(np.float32) * 2, rng.integers(0, 4, 2))
               for _ in range(2)]
    loader_t = [(torch.tensor(x), torch.tensor(y)) for x, y in batches]
    opt_t = torch.optim.SGD(ref.parameters(), lr=0.5)
    lt = tbackprop.RTRL(ref, loader_t, opt_t, tSF.mse_count_loss(), num_steps=steps,
                        time_var=False)
    for mine, time_var in zip(mines, (False, True)):
        loader_g = [(gp.asarray(np.stack([x] * steps) if time_var else x, device=device),
                     gp.asarray(y, device=device)) for x, y in batches]
        opt_g = gp.optim.SGD(mine.parameters(), lr=0.5)
        kw = dict(time_var=True) if time_var else dict(num_steps=steps, time_var=False)
        lg = backprop.RTRL(mine, loader_g, opt_g, SF.mse_count_loss(), device=device, **kw)
        np.testing.assert_allclose(_np(lg), lt.detach().numpy(), rtol=2e-4, atol=2e-5)
        for k, p in ref.named_parameters():
            np.testing.assert_allclose(_np(dict(mine.named_parameters())[k]),
                                       p.detach().numpy(), rtol=2e-4, atol=2e-5, err_msg=k)
    with pytest.raises(ValueError, match="RTRL: num_steps must not be given"):
        backprop.RTRL(mine, loader_g, opt_g, SF.mse_count_loss(), num_steps=3)


@pytest.mark.parametrize("steps,first,rate", [(10, 2, 0.5), (9, 0, 1.0), (12, 3, 0.3), (6, 6, 0.5),
                                              (8, 0, 0.0)])
def test_target_rate_code_and_rate_interpolate_equal_snntorch(steps, first, rate, device):
    """The public helpers under targets_convert: a regular train and its spike steps, and the
    interpolated ramps over them, as snnTorch's."""
    train, times = spikegen.target_rate_code(steps, first, rate, device=device)
    ref, ref_times = tspikegen.target_rate_code(steps, first, rate)
    assert train.dtype == gp.float32 and times.dtype == gp.int64 and train.device == device
    np.testing.assert_array_equal(_np(train), ref.numpy())
    np.testing.assert_array_equal(_np(times), ref_times.numpy().astype(np.int64))
    if ref_times.numel():
        for on, off in ((1.0, 0.0), (1.5, 0.25)):
            mine = spikegen.rate_interpolate(times, steps, on, off)
            want = tspikegen.rate_interpolate(ref_times, steps, on, off)
            assert mine.device == device
            np.testing.assert_allclose(_np(mine), want.numpy(), rtol=1e-6, atol=1e-7)


def test_targets_rate_and_latency_are_targets_convert(device):
    """snnTorch's targets_rate / targets_latency: targets_convert's two codes (snnTorch as the
    oracle where its code runs: steady rates, delayed ones, latency)."""
    gy, ty = _targets(device)
    for kw in (dict(), dict(num_steps=5, first_spike_time=2, on_target=1.5, off_target=0.5)):
        np.testing.assert_allclose(_np(spikegen.targets_rate(gy, 3, **kw)),
                                   tspikegen.targets_rate(ty, 3, **kw).numpy(), rtol=1e-6)
    kw = dict(num_steps=6, tau=2, threshold=0.05, normalize=True, linear=True)
    np.testing.assert_allclose(_np(spikegen.targets_latency(gy, 3, **kw)),
                               tspikegen.targets_latency(ty, 3, **kw).numpy(), rtol=1e-6)


def test_target_rate_code_errors():
    for args, msg in (((5, 0, 1.5), "rate must be a number in"), ((5, 6, 0.5), "first_spike_time"),
                      ((5, 0, 0.5, "burst"), "firing_pattern must be")):
        with pytest.raises(ValueError, match=msg):
            spikegen.target_rate_code(*args)
    with pytest.raises(ValueError, match="spike_time must lie in"):
        spikegen.rate_interpolate(gp.asarray([1, 7]), 5)
