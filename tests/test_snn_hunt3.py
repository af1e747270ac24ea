"""snnTorch / SpikingJelly parity, round 3: snnTorch's neuron options (graded_spikes_factor,
inhibition, state_quant, surrogate_disable), its exact Synaptic/RLeaky (reset_delay=False),
snntorch.functional's losses, metrics and regularizer, SpikingJelly's monitors and its
multi-step ``layer`` wrappers, each against the real library on every device."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import snn
from grilly.nn.snn import snntorch_compat as stc

pytestmark = pytest.mark.filterwarnings("ignore:Inhibition is an unstable feature")
torch = pytest.importorskip("torch")
snntorch = pytest.importorskip("snntorch")
SF = pytest.importorskip("snntorch.functional")
from snntorch.functional import quant as squant  # noqa: E402

T, B, N = 6, 2, 3
R = np.random.default_rng(23)
X = R.standard_normal((T, B, N)) * 1.3 + 0.5
W = R.standard_normal((T, B, N))
W2 = R.standard_normal((T, B, N))
# snnTorch keeps its parameters in float32: membranes agree to ~1e-7
TOL = dict(rtol=1e-5, atol=1e-6)
PTOL = dict(rtol=1e-4, atol=1e-5)


def _np(a):
    return np.asarray(a.to_device("cpu"))


def _g(a, device, grad=False):
    x = gp.asarray(np.asarray(a, dtype=np.float64), device=device)
    return x.requires_grad_() if grad else x


def _loop(layer, x, n_out, grilly):
    """The snnTorch tutorial loop, the state passed back (the spikes too for the recurrent
    neurons, whose ``n_out`` is negative): spikes and membranes (T, ...)."""
    rec = n_out < 0
    state = (None,) * (abs(n_out) - (0 if rec else 1))
    spk, mem = [], []
    for t in range(x.shape[0]):
        out = layer(x[t], *state)
        state = out if rec else out[1:]
        if rec and not grilly:   # snnTorch's spikes are float32 (its recurrence is float64 here)
            state = tuple(s.double() for s in state)
        spk.append(out[0])
        mem.append(out[-1])
    stack = gp.stack if grilly else torch.stack
    return stack(spk), stack(mem)


def _check(ref, mine, device, n_out, params=(), x=X):
    """Spikes and membranes equal, and the gradients of sum(W spk) + sum(W2 mem) for the input
    and ``params`` (snnTorch's names)."""
    xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
    st, mt = _loop(ref, xt, n_out, False)
    sg, mg = _loop(mine, xg, n_out, True)
    (st.double() * torch.tensor(W)).sum().add((mt.double() * torch.tensor(W2)).sum()).backward()
    (gp.sum(sg * _g(W, device)) + gp.sum(mg * _g(W2, device))).backward()
    np.testing.assert_allclose(_np(sg), st.detach().numpy(), rtol=1e-6, atol=0)
    np.testing.assert_allclose(_np(mg), mt.detach().numpy(), **TOL)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)
    for name in params:
        np.testing.assert_allclose(_np(getattr(mine, name).grad),
                                   getattr(ref, name).grad.numpy(), **PTOL)
    assert (st != 0).any()   # the test exercises spikes and resets
    return st


def _make(cls, grilly_cls, kw, device):
    """The snnTorch neuron and grilly's, given the same arguments (the state_dict copied)."""
    ref = cls(**kw)
    gkw = dict(kw)
    if "state_quant" in kw:
        gkw["state_quant"] = snn.functional.state_quant(**kw["state_quant"])
        kw["state_quant"] = squant.state_quant(**kw["state_quant"])
        ref = cls(**kw)
    ref = ref.double()   # (its recurrent Linear would be float32)
    mine = grilly_cls(**gkw, dtype=gp.float64)
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()
                          if not k.startswith("recurrent.V")})
    return ref, mine.to(device)


_NEURONS = {
    "Leaky": (lambda: snntorch.Leaky, lambda: stc.Leaky, dict(beta=0.8), 2),
    "Synaptic": (lambda: snntorch.Synaptic, lambda: stc.Synaptic, dict(alpha=0.6, beta=0.8), 3),
    "RLeaky": (lambda: snntorch.RLeaky, lambda: stc.RLeaky,
               dict(beta=0.8, linear_features=N), -2),
    "RLeaky1to1": (lambda: snntorch.RLeaky, lambda: stc.RLeaky,
                   dict(beta=0.8, V=0.4, all_to_all=False), -2),
    "Alpha": (lambda: snntorch.Alpha, lambda: snn.Alpha, dict(alpha=0.9, beta=0.8), 4),
    "RSynaptic": (lambda: snntorch.RSynaptic, lambda: snn.RSynaptic,
                  dict(alpha=0.6, beta=0.8, linear_features=N), -3),
    "Lapicque": (lambda: snntorch.Lapicque, lambda: snn.Lapicque, dict(beta=0.8), 2),
}
_OPTS = {
    "inhibition": dict(inhibition=True),
    "state_quant": dict(state_quant=dict(num_bits=4)),
    "state_quant_nonuniform": dict(state_quant=dict(num_bits=3, uniform=False,
                                                    upper_limit=0.5)),
    "surrogate_disable": dict(surrogate_disable=True),
}


@pytest.mark.parametrize("opt", list(_OPTS))
@pytest.mark.parametrize("name", list(_NEURONS))
def test_snntorch_options_on_every_neuron(name, opt, device):
    """snnTorch's inhibition (only each sample's largest membrane may spike), state_quant (the
    state rounded to snnTorch's levels, the gradient straight through) and surrogate_disable
    (spikes without a gradient) on Leaky, Synaptic, RLeaky, Alpha, RSynaptic, Lapicque: they
    raised NotImplementedError; now spikes, states and gradients equal snnTorch's."""
    ref_cls, my_cls, kw, n_out = _NEURONS[name]
    kw = dict(kw, **_OPTS[opt])
    if name == "Alpha":   # (its currents need room: the default levels stop at 1.2)
        kw["reset_mechanism"] = "subtract"
        if "state_quant" in kw:
            kw["state_quant"] = dict(kw["state_quant"], lower_limit=2.0, upper_limit=4.0)
    ref, mine = _make(ref_cls(), my_cls(), kw, device)
    x = X * {"Alpha": 2.0, "Lapicque": 4.0}.get(name, 1.0)
    st = _check(ref, mine, device, n_out, x=x)
    if opt == "inhibition":   # at most one spike per sample and step
        assert (st.sum(-1) <= 1).all()


@pytest.mark.parametrize("reset_delay", [True, False])
@pytest.mark.parametrize("reset", ["subtract", "zero", "none"])
@pytest.mark.parametrize("learn", [False, True])
def test_leaky_graded_spikes_equal_snntorch(reset, reset_delay, learn, device):
    """Leaky's graded_spikes_factor (spikes scaled; with reset_delay=False the reset divides it
    out) and learn_graded_spikes_factor (a Parameter, its gradient), per step and in grilly's
    multi-step mode (the fused kernels scale their spikes), equal snnTorch's."""
    kw = dict(beta=0.8, graded_spikes_factor=1.7, learn_graded_spikes_factor=learn,
              reset_mechanism=reset, reset_delay=reset_delay, learn_beta=True)
    ref, mine = _make(snntorch.Leaky, stc.Leaky, kw, device)
    x = X * 2.5 if not reset_delay else X
    _check(ref, mine, device, 2, ("beta",) + (("graded_spikes_factor",) if learn else ()), x)
    assert isinstance(mine.graded_spikes_factor, nn.Parameter) == learn
    ref2, multi = _make(snntorch.Leaky, stc.Leaky, kw, device)
    multi.step_mode = "m"
    xg = _g(x, device, grad=True)
    xt = torch.tensor(x, requires_grad=True)
    sg, st = multi(xg), _loop(ref2, xt, 2, False)[0]
    gp.sum(sg * _g(W, device)).backward()
    (st.double() * torch.tensor(W)).sum().backward()
    np.testing.assert_allclose(_np(sg), st.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)
    if learn:
        np.testing.assert_allclose(_np(multi.graded_spikes_factor.grad),
                                   ref2.graded_spikes_factor.grad.numpy(), **PTOL)


@pytest.mark.parametrize("opt", ["inhibition", "state_quant", "surrogate_disable", "graded"])
@pytest.mark.parametrize("name", ["LIF", "Synaptic", "RLeaky"])
def test_grilly_neurons_take_snntorch_options(name, opt, device):
    """grilly's own LIF, Synaptic and RLeaky (snnTorch's reset_delay=True step) take the same
    options, per step and multi-step, and equal snnTorch's Leaky/Synaptic/RLeaky."""
    okw = {"inhibition": dict(inhibition=True), "surrogate_disable": dict(surrogate_disable=True),
           "graded": dict(graded_spikes_factor=0.6)}.get(opt, {})
    gq = snn.functional.state_quant(num_bits=4) if opt == "state_quant" else False
    tq = squant.state_quant(num_bits=4) if opt == "state_quant" else False
    if name == "LIF":
        ref = snntorch.Leaky(0.8, state_quant=tq, **okw)
        mk = lambda **k: snn.LIF(0.8, state_quant=gq, dtype=gp.float64, **okw, **k)  # noqa: E731
        n_out = 2
    elif name == "Synaptic":
        okw.pop("graded_spikes_factor", None)
        ref = snntorch.Synaptic(0.6, 0.8, state_quant=tq, **okw)
        mk = lambda **k: snn.Synaptic(0.6, 0.8, state_quant=gq, dtype=gp.float64,  # noqa: E731
                                      **okw, **k)
        n_out = 3
    else:
        okw.pop("graded_spikes_factor", None)
        ref = snntorch.RLeaky(0.8, V=0.5, all_to_all=False, state_quant=tq, **okw)
        mk = lambda **k: snn.RLeaky(0.8, V=0.5, state_quant=gq, dtype=gp.float64,  # noqa: E731
                                    **okw, **k)
        n_out = -2
    if opt == "graded" and name != "LIF":
        ref.graded_spikes_factor = torch.tensor(0.6)   # (only Leaky's constructor takes it)
        mine = mk(graded_spikes_factor=0.6).to(device)
        multi = mk(graded_spikes_factor=0.6, step_mode="m").to(device)
    else:
        mine, multi = mk().to(device), mk(step_mode="m").to(device)
    st = _check(ref, mine, device, n_out)
    np.testing.assert_allclose(_np(multi(_g(X, device))), st.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("reset", ["subtract", "zero", "none"])
@pytest.mark.parametrize("name", ["Synaptic", "RLeaky", "RLeaky1to1"])
def test_snntorch_synaptic_rleaky_reset_delay_false(name, reset, device):
    """snnTorch's Synaptic and RLeaky with reset_delay=False: the delayed reset first, then the
    spike's reset less it, the spike keeping its gradient (grilly's own snn.Synaptic/RLeaky
    reset in the step instead, and differed). snntorch_compat's classes equal snnTorch's,
    with learnable parameters; their state_dict keys are snnTorch's."""
    ref_cls, my_cls, kw, n_out = _NEURONS[name]
    kw = dict(kw, reset_mechanism=reset, reset_delay=False, learn_beta=True,
              learn_threshold=True)
    ref, mine = _make(ref_cls(), my_cls(), kw, device)
    assert set(mine.state_dict()) == {k for k in ref.state_dict() if k != "recurrent.V"}
    _check(ref, mine, device, n_out, ("beta", "threshold"), X * 2.5)
    multi = _make(ref_cls(), my_cls(), kw, device)[1]
    multi.step_mode = "m"
    ref2 = _make(ref_cls(), my_cls(), kw, device)[0]
    ref2.load_state_dict(ref.state_dict())
    multi.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()
                           if k != "recurrent.V"})
    np.testing.assert_allclose(_np(multi(_g(X * 2.5, device))),
                               _loop(ref2, torch.tensor(X * 2.5), n_out, False)[0].detach(),
                               rtol=1e-6)


@pytest.mark.parametrize("kw", [dict(num_bits=3), dict(num_bits=5, threshold=0.7, lower_limit=0.2),
                                dict(num_bits=2, uniform=False),
                                dict(num_bits=4, uniform=False, thr_centered=False,
                                     threshold=0.5, lower_limit=0.1, upper_limit=0.5),
                                dict(num_bits=8, uniform=False, multiplier=0.9)])
def test_state_quant_equals_snntorch(kw, device):
    """snn.functional.state_quant: snnTorch's levels (uniform, and its threshold- or
    zero-centred geometric spacing), each value to its nearest level, the gradient straight
    through."""
    x = np.linspace(-1.6, 1.7, 41).reshape(41, 1) * np.ones((1, 2))
    q = snn.functional.state_quant(**kw)
    xg = _g(x, device, grad=True)
    out = q(xg)
    ref = squant.state_quant(**kw)(torch.tensor(x))
    np.testing.assert_allclose(_np(out), ref.numpy(), rtol=0, atol=1e-6)   # float32 levels
    gp.sum(out * _g(x, device)).backward()
    np.testing.assert_array_equal(_np(xg.grad), x)


def test_snntorch_option_errors():
    """Bad options name the layer and the argument."""
    with pytest.raises(TypeError, match="Leaky: state_quant must be a function"):
        stc.Leaky(0.9, state_quant=3)
    with pytest.raises(TypeError, match="Synaptic: inhibition must be a bool"):
        snn.Synaptic(0.5, 0.9, inhibition="yes")
    with pytest.raises(ValueError, match=r"Leaky: inhibition needs an input \(batch, features\)"):
        stc.Leaky(0.9, inhibition=True)(gp.ones((2, 3, 4)))
    with pytest.raises(NotImplementedError, match="Synaptic: snnTorch's inhibition"):
        snn.Synaptic(0.5, 0.9, inhibition=True, reset_delay=False)
    with pytest.raises(NotImplementedError, match="LIF: refractory"):
        snn.LIF(0.9, refractory=2, graded_spikes_factor=2.0)
    with pytest.raises(ValueError, match="state_quant: num_bits must be an int >= 1"):
        snn.functional.state_quant(num_bits=0)


# ---- snntorch.functional: losses, metrics, regularizer -------------------------------------
C = 4
LBL = np.array([2, 0, 3])


def _spikes(seed, steps=7, p=0.25):
    rs = np.random.default_rng(seed)
    s = (rs.random((steps, 3, C)) < p).astype(np.float64)
    s[:, 1, 1] = 0.0   # an output that never fires (its time is the last step)
    return s


def _loss_pair(ref_fn, my_fn, x, targets, device, tgt_torch=None):
    """The loss's value and its input gradient, snnTorch's and grilly's."""
    xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
    tt = torch.tensor(targets) if tgt_torch is None else tgt_torch
    lt = ref_fn(xt, tt)
    lg = my_fn(xg, gp.asarray(targets, device=device))
    try:
        lt.sum().backward()
    except RuntimeError as e:   # torch < 2.13: mse_loss's backward refuses a dtype mix
        if "Found dtype" not in str(e):
            raise
        pytest.skip(f"this torch cannot differentiate snnTorch's loss here ({e})")
    gp.sum(lg).backward()
    np.testing.assert_allclose(_np(lg).reshape(-1), lt.detach().numpy().reshape(-1),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kw", [{}, dict(on_target=0.8, off_target=-0.2)])
def test_mse_membrane_loss_equals_snntorch(kw, reduction, device):
    """SF.mse_membrane_loss (missing): the value and the membrane's gradient, each
    reduction, and time-varying targets."""
    mem = R.standard_normal((5, 3, C))
    _loss_pair(SF.mse_membrane_loss(reduction=reduction, **kw),
               snn.MSEMembraneLoss(reduction=reduction, **kw), mem, LBL, device)
    # time_var_targets: one label per step (snnTorch 1.0's own path raises for any labels:
    # its targets_convert takes (batch,) labels), against numpy
    tv = np.random.default_rng(3).integers(0, C, (5, 3))
    on, off = kw.get("on_target", 1.0), kw.get("off_target", 0.0)
    want = np.where(np.eye(C)[tv] > 0, on, max(off, 0.0) if on > off else off)
    per = (mem - want) ** 2
    ref = {"mean": per.mean(axis=(1, 2)).sum(), "sum": per.sum(), "none": per.sum(0)}[reduction]
    got = snn.mse_membrane_loss(_g(mem, device), gp.asarray(tv, device=device),
                                time_var_targets=True, reduction=reduction, **kw)
    np.testing.assert_allclose(_np(got), ref / 5, rtol=1e-12)


@pytest.mark.parametrize("kw", [{}, dict(on_target=2, off_target=-2), dict(tolerance=2),
                                dict(reduction="sum"), dict(reduction="none")])
def test_mse_temporal_loss_equals_snntorch(kw, device):
    """SF.mse_temporal_loss (missing): first spike times against target times (labels or
    ``target_is_time``), snnTorch's sign-estimator gradient, tolerance, reductions."""
    spk = _spikes(1)
    _loss_pair(SF.mse_temporal_loss(**kw), snn.MSETemporalLoss(**kw), spk, LBL, device)
    times = np.array([[0.0, 3, 6, 2], [1, 1, 4, -1], [5, 2, 0, 3]])
    _loss_pair(SF.mse_temporal_loss(target_is_time=True, **kw),
               lambda s, t: snn.mse_temporal_loss(s, t, target_is_time=True, **kw),
               spk, times, device, tgt_torch=torch.tensor(times))


@pytest.mark.parametrize("inverse", ["negate", "reciprocal"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ce_temporal_loss_and_accuracy_equal_snntorch(inverse, reduction, device):
    """SF.ce_temporal_loss and SF.accuracy_temporal (missing), and the first spike times."""
    spk = _spikes(2)
    _loss_pair(SF.ce_temporal_loss(inverse=inverse, reduction=reduction),
               snn.CETemporalLoss(inverse=inverse, reduction=reduction), spk, LBL, device)
    for seed in range(4):
        s = _spikes(seed, p=0.3)
        assert snn.accuracy_temporal(_g(s, device), gp.asarray(LBL, device=device)) == \
            pytest.approx(SF.accuracy_temporal(torch.tensor(s), torch.tensor(LBL)))
    ft = SF.SpikeTime().first_spike_fn(torch.tensor(spk), "cpu")
    np.testing.assert_array_equal(_np(snn.first_spike_time(_g(spk, device))), ft.numpy())


def test_l1_rate_sparsity_equals_snntorch(device):
    """SF.l1_rate_sparsity (missing): Lambda times the spike count, and its gradient."""
    spk = _spikes(4)
    _loss_pair(lambda s, t: SF.l1_rate_sparsity(Lambda=3e-3)(s),
               lambda s, t: snn.L1RateSparsity(Lambda=3e-3)(s), spk, LBL, device)
    assert float(snn.l1_rate_sparsity(_g(spk, device))) == pytest.approx(1e-5 * spk.sum())


def test_temporal_loss_errors():
    spk = gp.zeros((4, 3, C))
    with pytest.raises(ValueError, match="ce_temporal_loss: inverse must be 'negate'"):
        snn.ce_temporal_loss(spk, gp.asarray(LBL), inverse="log")
    with pytest.raises(ValueError, match="mse_membrane_loss: reduction must be one of"):
        snn.mse_membrane_loss(spk, gp.asarray(LBL), reduction="avg")
    with pytest.raises(ValueError, match=r"mse_temporal_loss: targets must be class indices"):
        snn.mse_temporal_loss(spk, gp.asarray([0, 1, 9]))
    with pytest.raises(NotImplementedError, match="mse_temporal_loss: multi_spike"):
        snn.mse_temporal_loss(spk, gp.asarray(LBL), multi_spike=True)


# ---- SpikingJelly's monitor and layer wrappers ----------------------------------------------
sj = pytest.importorskip("spikingjelly.activation_based")
from spikingjelly.activation_based import functional as sjf  # noqa: E402
from spikingjelly.activation_based import layer as sjl  # noqa: E402
from spikingjelly.activation_based import monitor as sjm  # noqa: E402
from spikingjelly.activation_based import neuron as sjn  # noqa: E402


def _sj_pair(device, step_mode="m"):
    """A SpikingJelly conv net and grilly's built from snn.layer, with the same weights."""
    torch.manual_seed(0)
    ref = torch.nn.Sequential(
        sjl.Conv2d(1, 2, 3, step_mode=step_mode), sjl.BatchNorm2d(2, step_mode=step_mode),
        sjn.LIFNode(step_mode=step_mode), sjl.MaxPool2d(2, step_mode=step_mode),
        sjl.Flatten(step_mode=step_mode), sjl.Linear(8, 3, step_mode=step_mode),
        sjn.IFNode(v_threshold=0.2, v_reset=None, step_mode=step_mode)).double()
    L = snn.layer
    mine = nn.Sequential(
        L.Conv2d(1, 2, 3, step_mode=step_mode, dtype=gp.float64),
        L.BatchNorm2d(2, step_mode=step_mode, dtype=gp.float64),
        snn.LIFNode(step_mode=step_mode), L.MaxPool2d(2, step_mode=step_mode),
        L.Flatten(step_mode=step_mode), L.Linear(8, 3, step_mode=step_mode, dtype=gp.float64),
        snn.IFNode(v_threshold=0.2, v_reset=None, step_mode=step_mode))
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return ref, mine.to(device)


XI = np.random.default_rng(5).standard_normal((3, 2, 1, 6, 6)) * 2.0


def test_spikingjelly_layers_multi_step(device):
    """SpikingJelly's layer.Conv2d/BatchNorm2d/MaxPool2d/Flatten/Linear with step_mode='m'
    (missing: grilly needed SeqToANNContainer): the same spikes, input and weight gradients
    and BatchNorm running statistics as SpikingJelly's net; in 's' mode step by step too."""
    ref, mine = _sj_pair(device)
    xt, xg = torch.tensor(XI, requires_grad=True), _g(XI, device, grad=True)
    wt = np.random.default_rng(6).standard_normal((3, 2, 3))
    st, sg = ref(xt), mine(xg)
    (st * torch.tensor(wt)).sum().backward()
    gp.sum(sg * _g(wt, device)).backward()
    np.testing.assert_array_equal(_np(sg), st.detach().numpy())
    assert st.sum() > 0
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    for i in (0, 5):
        np.testing.assert_allclose(_np(mine[i].weight.grad), ref[i].weight.grad.numpy(),
                                   rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_np(mine[1].running_var), ref[1].running_var.numpy(), rtol=1e-12)
    # single-step: the same layers called once per step
    ref1, mine1 = _sj_pair(device, "s")
    for t in range(3):
        np.testing.assert_array_equal(_np(mine1(_g(XI[t], device))),
                                      ref1(torch.tensor(XI[t])).detach().numpy())
    snn.functional.set_step_mode(mine1, "m")
    assert mine1[0].step_mode == "m" and mine1[4].step_mode == "m"
    with pytest.raises(ValueError, match=r"BatchNorm2d: step_mode 'm' expects \(T, B, C, H, W\)"):
        mine[1](_g(XI[0], device))
    with pytest.raises(ValueError, match="Conv2d: step_mode must be 's'"):
        snn.layer.Conv2d(1, 2, 3, step_mode="multi")


def test_spikingjelly_dropout_keeps_its_mask(device):
    """layer.Dropout: one mask for every step of a sequence (single- or multi-step), scaled by
    1/(1-p), a new one after reset, identity in eval mode, as SpikingJelly's."""
    gp.random.seed(3)
    d = snn.layer.Dropout(0.5, step_mode="m").to(device)
    x = _g(np.ones((4, 8, 16)), device)
    y = _np(d(x))
    assert set(np.unique(y)) <= {0.0, 2.0} and (y == 0).any()
    np.testing.assert_array_equal(y, np.broadcast_to(y[0], y.shape))   # one mask over time
    np.testing.assert_array_equal(_np(d(x)), y)                          # kept until reset
    snn.reset(d)
    assert d.mask is None
    y2 = _np(d(x))
    assert not np.array_equal(y2, y)
    s = snn.layer.Dropout(0.5).to(device)
    a, b = _np(s(x[0])), _np(s(x[1]))
    np.testing.assert_array_equal(a, b)
    ref = sjl.Dropout(0.5, step_mode="m")
    r = ref(torch.ones(4, 8, 16)).numpy()
    np.testing.assert_array_equal(r, np.broadcast_to(r[0], r.shape))   # SpikingJelly's too
    d.eval()
    np.testing.assert_array_equal(_np(d(x)), _np(x))


def test_spikingjelly_monitors(device):
    """SpikingJelly's monitor.OutputMonitor, InputMonitor, AttributeMonitor, GradOutputMonitor,
    GradInputMonitor (missing) on the same net: monitored_layers, every record (by index and
    by layer name), clear_recorded_data, disable/enable, remove_hooks."""
    ref, mine = _sj_pair(device)
    kinds = [("OutputMonitor", ()), ("InputMonitor", ()), ("AttributeMonitor", ("v", False)),
             ("GradOutputMonitor", ()), ("GradInputMonitor", ())]
    mons = []
    for name, pre in kinds:
        inst = (sjn.LIFNode, sjn.IFNode) if name != "InputMonitor" else sjl.Linear
        minst = (snn.LIFNode, snn.IFNode) if name != "InputMonitor" else snn.layer.Linear
        mons.append((getattr(sjm, name)(*pre, ref, inst), getattr(snn.monitor, name)(*pre, mine,
                                                                                     minst)))
    xt, xg = torch.tensor(XI, requires_grad=True), _g(XI, device, grad=True)
    for _ in range(2):   # two sequences, so that records accumulate
        sjf.reset_net(ref)
        snn.reset(mine)
        (ref(xt) * 1.5).sum().backward()
        gp.sum(mine(xg) * 1.5).backward()
    for (name, _), (mt, mg) in zip(kinds, mons):
        assert mg.monitored_layers == mt.monitored_layers
        assert len(mg.records) == len(mt.records) > 0
        for lay in mt.monitored_layers:
            for a, b in zip(mg[lay], mt[lay]):
                if b is None:
                    assert a is None
                    continue
                np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=1e-9, atol=1e-12,
                                           err_msg=f"{name} {lay}")
    out_g = mons[0][1]
    out_g.clear_recorded_data()
    assert out_g.records == [] and out_g[out_g.monitored_layers[0]] == []
    out_g.disable()
    mine(xg)
    assert out_g.records == [] and not out_g.is_enable()
    out_g.enable()
    snn.reset(mine)
    mine(xg)
    assert len(out_g.records) == 2
    out_g.remove_hooks()
    mine(xg)
    assert len(out_g.records) == 2
    with pytest.raises(KeyError, match="OutputMonitor: no monitored layer 'x'"):
        out_g["x"]
