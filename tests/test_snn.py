"""grilly.nn.snn neurons and surrogates against snnTorch and SpikingJelly (test-only oracles,
float64 torch) and against numpy implementations of docs/snn.md's equations, on every device."""
import numpy as np
import pytest

import grilly as gp
from grilly.autograd import gradcheck
from grilly.nn import snn
from grilly.nn.snn import functional as SF
from grilly.nn.snn import surrogate as SG

torch = pytest.importorskip("torch")
snntorch = pytest.importorskip("snntorch")
TS = pytest.importorskip("snntorch.surrogate")

T, B, N = 12, 2, 4
# snnTorch spikes are float32 ((x > 0).float()), so gradients through them carry float32 rounding
GRAD_TOL = dict(rtol=1e-5, atol=1e-6)


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


def _g(a, device, grad=False):
    x = gp.asarray(np.asarray(a, dtype=np.float64), device=device)
    return x.requires_grad_() if grad else x


def _np(x):
    return np.asarray(x.to_device("cpu") if isinstance(x, gp.Array) else x)


def _inputs(seed=0, shape=(T, B, N), scale=0.9):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) * scale, rng.standard_normal(shape)


# ---- surrogates ---------------------------------------------------------------------------
SURROGATES = {
    "fast_sigmoid": (SG.fast_sigmoid(5.0), lambda x: 1 / (5 * np.abs(x) + 1) ** 2,
                     lambda: TS.fast_sigmoid(5.0)),
    "atan": (SG.atan(2.0), lambda x: 1.0 / (1 + (np.pi / 2 * 2 * x) ** 2), lambda: TS.atan(2.0)),
    "sigmoid": (SG.sigmoid(4.0), lambda x: 4 * np.exp(-4 * x) / (1 + np.exp(-4 * x)) ** 2,
                lambda: TS.sigmoid(4.0)),
    "triangle": (SG.triangle(0.5), lambda x: np.maximum(0, 1 - np.abs(x) / 0.5) / 0.5, None),
    "straight_through": (SG.straight_through(), lambda x: np.ones_like(x),
                         lambda: TS.straight_through_estimator()),
}


@pytest.mark.parametrize("name", sorted(SURROGATES))
def test_surrogate_forward_and_grad(name, device):
    sg, deriv, oracle = SURROGATES[name]
    x = np.concatenate([np.linspace(-2, 2, 41), [0.0, 1e-30, -1e-30, 50.0, -50.0]])
    w = np.random.default_rng(1).standard_normal(x.shape)
    xg = _g(x, device, grad=True)
    s = sg(xg)
    np.testing.assert_array_equal(_np(s), (x > 0).astype(np.float64))  # snnTorch: x > 0 spikes
    gp.sum(s * _g(w, device)).backward()
    np.testing.assert_allclose(_np(xg.grad), w * deriv(x), rtol=1e-13, atol=1e-300)
    if oracle is not None:
        xt = _t(x).requires_grad_()
        (oracle()(xt) * _t(w)).sum().backward()
        np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_surrogate_bad_input():
    with pytest.raises(TypeError, match="atan: expected a real floating"):
        SG.atan()(gp.asarray([1, 2]))
    with pytest.raises(TypeError, match="fast_sigmoid"):
        SG.fast_sigmoid()(np.zeros(3))
    with pytest.raises(ValueError, match="sigmoid: slope must be > 0"):
        SG.sigmoid(0.0)
    with pytest.raises(ValueError, match="triangle: width"):
        SG.triangle(-1)


# ---- snnTorch Leaky / Synaptic / RLeaky ------------------------------------------------------
def _run_torch(layer, x, nstate):
    state = [torch.zeros(x.shape[1:], dtype=torch.float64) for _ in range(nstate)]
    spk, mem = [], []
    for t in range(x.shape[0]):
        s, *state = layer(x[t], *state)
        spk.append(s)
        mem.append(state[-1])
    return torch.stack(spk), torch.stack(mem)


@pytest.mark.parametrize("reset", ["subtract", "zero", "none"])
@pytest.mark.parametrize("multi", [False, True])
def test_lif_equals_snntorch_leaky(reset, multi, device):
    x, w = _inputs()
    beta = torch.tensor([0.5, 0.75, 0.875, 0.9375], dtype=torch.float64)
    ref = snntorch.Leaky(beta=beta.clone(), threshold=torch.tensor(0.75, dtype=torch.float64),
                         reset_mechanism=reset, learn_beta=True, learn_threshold=True)
    xt = _t(x).requires_grad_()
    st, mt = _run_torch(ref, xt, 1)
    ((st + 0.25 * mt) * _t(w)).sum().backward()

    lif = snn.LIF(beta.numpy().tolist(), 0.75, reset=reset, learn_beta=True, learn_threshold=True,
                  dtype=gp.float64, step_mode="m" if multi else "s", return_mem=True).to(device)
    xg = _g(x, device, grad=True)
    if multi:
        sg, mg = lif(xg)
    else:
        outs = [lif(xi) for xi in gp.unstack(xg, axis=0)]
        sg, mg = gp.stack([o[0] for o in outs]), gp.stack([o[1] for o in outs])
    gp.sum((sg + 0.25 * mg) * _g(w, device)).backward()
    assert 0 < float(_np(gp.sum(sg))) < sg.size
    np.testing.assert_array_equal(_np(sg), st.detach().numpy())
    np.testing.assert_allclose(_np(mg), mt.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **GRAD_TOL)
    np.testing.assert_allclose(_np(lif.beta.grad), ref.beta.grad.numpy(), **GRAD_TOL)
    np.testing.assert_allclose(_np(lif.threshold.grad), ref.threshold.grad.numpy(), **GRAD_TOL)


@pytest.mark.parametrize("reset", ["subtract", "zero", "none"])
def test_lif_step_functional_equals_snntorch(reset, device):
    x, w = _inputs(2)
    ref = snntorch.Leaky(beta=torch.tensor(0.75, dtype=torch.float64), reset_mechanism=reset,
                         spike_grad=TS.fast_sigmoid(10.0))
    xt = _t(x).requires_grad_()
    st, mt = _run_torch(ref, xt, 1)
    (st * _t(w)).sum().backward()
    xg = _g(x, device, grad=True)
    mem, spikes = None, []
    for t in range(T):
        s, mem = SF.lif_step(xg[t], mem, beta=0.75, reset=reset, surrogate=SG.fast_sigmoid(10.0))
        spikes.append(s)
    gp.sum(gp.stack(spikes) * _g(w, device)).backward()
    np.testing.assert_array_equal(_np(gp.stack(spikes)), st.detach().numpy())
    np.testing.assert_allclose(_np(mem), mt[-1].detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **GRAD_TOL)


@pytest.mark.parametrize("reset", ["subtract", "zero", "none"])
def test_synaptic_equals_snntorch(reset, device):
    x, w = _inputs(3, scale=0.6)
    ref = snntorch.Synaptic(alpha=torch.tensor(0.5, dtype=torch.float64),
                            beta=torch.tensor(0.75, dtype=torch.float64), reset_mechanism=reset,
                            learn_alpha=True, learn_beta=True)
    xt = _t(x).requires_grad_()
    st, mt = _run_torch(ref, xt, 2)
    ((st + 0.5 * mt) * _t(w)).sum().backward()
    syn = snn.Synaptic(0.5, 0.75, reset=reset, learn_alpha=True, learn_beta=True,
                       dtype=gp.float64, step_mode="m", return_mem=True).to(device)
    xg = _g(x, device, grad=True)
    sg, mg = syn(xg)
    gp.sum((sg + 0.5 * mg) * _g(w, device)).backward()
    assert 0 < float(_np(gp.sum(sg))) < sg.size
    np.testing.assert_array_equal(_np(sg), st.detach().numpy())
    np.testing.assert_allclose(_np(mg), mt.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **GRAD_TOL)
    np.testing.assert_allclose(_np(syn._alpha.grad), ref.alpha.grad.numpy(), **GRAD_TOL)
    np.testing.assert_allclose(_np(syn._beta.grad), ref.beta.grad.numpy(), **GRAD_TOL)


@pytest.mark.parametrize("reset", ["subtract", "zero"])
def test_rleaky_equals_snntorch(reset, device):
    # snnTorch's spikes are float32 and feed its recurrent Linear: RLeaky only runs in float32
    x, w = _inputs(4, scale=0.7)
    x, w = x.astype(np.float32), w.astype(np.float32)
    ref = snntorch.RLeaky(beta=0.75, linear_features=N, reset_mechanism=reset)
    rl = snn.RLeaky(0.75, N, reset=reset, step_mode="m", return_mem=True)
    rl.recurrent.weight = gp.nn.Parameter(gp.asarray(ref.recurrent.weight.detach().numpy()))
    rl.recurrent.bias = gp.nn.Parameter(gp.asarray(ref.recurrent.bias.detach().numpy()))
    rl.to(device)
    xt = torch.tensor(x).requires_grad_()
    spk, mem = torch.zeros(B, N), torch.zeros(B, N)
    st, mt = [], []
    for t in range(T):
        spk, mem = ref(xt[t], spk, mem)
        st.append(spk)
        mt.append(mem)
    st, mt = torch.stack(st), torch.stack(mt)
    (st * torch.tensor(w)).sum().backward()
    xg = gp.asarray(x, device=device).requires_grad_()
    sg, mg = rl(xg)
    gp.sum(sg * gp.asarray(w, device=device)).backward()
    assert 0 < float(_np(gp.sum(sg))) < sg.size
    np.testing.assert_array_equal(_np(sg), st.detach().numpy())
    np.testing.assert_allclose(_np(mg), mt.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(rl.recurrent.weight.grad), ref.recurrent.weight.grad.numpy(),
                               rtol=1e-4, atol=1e-5)


# ---- SpikingJelly LIFNode --------------------------------------------------------------------
@pytest.mark.parametrize("v_reset", [0.0, None])
@pytest.mark.parametrize("detach_reset", [False, True])
@pytest.mark.parametrize("decay_input", [False, True])
def test_lif_equals_spikingjelly(v_reset, detach_reset, decay_input, device):
    neuron = pytest.importorskip("spikingjelly.activation_based.neuron")
    surrogate = pytest.importorskip("spikingjelly.activation_based.surrogate")
    tau = 2.0
    x, w = _inputs(5, scale=1.2)
    node = neuron.LIFNode(tau=tau, decay_input=decay_input, v_reset=v_reset,
                             detach_reset=detach_reset, step_mode="m",
                             surrogate_function=surrogate.Sigmoid(alpha=4.0))
    xt = _t(x).requires_grad_()
    st = node(xt)
    (st * _t(w)).sum().backward()
    # SpikingJelly's H = V + (X - V) / tau (decay_input) or V - V / tau + X: beta = 1 - 1/tau,
    # the input scaled by 1/tau when decay_input; the reset acts within the step
    lif = snn.LIF(1 - 1 / tau, reset="zero" if v_reset == 0.0 else "subtract", reset_delay=False,
                  detach_reset=detach_reset, surrogate=SG.sigmoid(4.0), step_mode="m")
    xg = _g(x, device, grad=True)
    sg = lif(xg / tau if decay_input else xg)
    gp.sum(sg * _g(w, device)).backward()
    assert 0 < float(_np(gp.sum(sg))) < sg.size
    np.testing.assert_array_equal(_np(sg), st.detach().numpy())
    np.testing.assert_allclose(_np(lif.state[0]), node.v.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


# ---- gradcheck through time (a smooth spike function in place of the step) ---------------------
def _smooth_spike(x):
    return gp.nn.functional.sigmoid(3.0 * x)


@pytest.mark.parametrize("reset", ["subtract", "zero"])
@pytest.mark.parametrize("reset_delay", [True, False])
def test_lif_gradcheck_through_time(reset, reset_delay, device):
    rng = np.random.default_rng(6)
    x = _g(rng.standard_normal((5, 2, 3)), device)
    beta = _g([0.6, 0.8, 0.9], device)
    thr = _g([0.9], device)

    def f(x, beta, thr):
        spk, mem = [], None
        for t in range(x.shape[0]):
            s, mem = SF.lif_step(x[t], mem, beta=beta, threshold=thr, reset=reset,
                                 surrogate=_smooth_spike, detach_reset=False,
                                 reset_delay=reset_delay)
            spk.append(s)
        return gp.stack(spk), mem

    assert gradcheck(f, (x, beta, thr), eps=1e-6, atol=1e-7, rtol=1e-5)


def test_synaptic_and_alif_gradcheck(device):
    rng = np.random.default_rng(7)
    x = _g(rng.standard_normal((4, 3)), device)

    def syn(x):
        s1, c, m = None, None, None
        out = []
        for t in range(x.shape[0]):
            s1, c, m = SF.synaptic_step(x[t], c, m, alpha=0.7, beta=0.8, surrogate=_smooth_spike,
                                        detach_reset=False)
            out.append(s1)
        return gp.stack(out)

    def alif(x):
        m, a, out = None, None, []
        for t in range(x.shape[0]):
            s, m, a = SF.adaptive_lif_step(x[t], m, a, beta=0.8, rho=0.9, gamma=0.3,
                                           surrogate=_smooth_spike, detach_reset=False)
            out.append(s)
        return gp.stack(out), a

    assert gradcheck(syn, (x,), eps=1e-6, atol=1e-7, rtol=1e-5)
    assert gradcheck(alif, (x,), eps=1e-6, atol=1e-7, rtol=1e-5)


# ---- numpy references: refractory, IF, adaptive LIF ------------------------------------------
def _np_lif(x, beta, thr, reset, refractory=0):
    mem = np.zeros(x.shape[1:])
    ref = np.zeros(x.shape[1:])
    spikes = []
    for t in range(x.shape[0]):
        active = (ref <= 0).astype(float)
        r = (mem > thr).astype(float)
        if reset == "subtract":
            mem = beta * mem + active * x[t] - r * thr
        elif reset == "zero":
            mem = beta * (1 - r) * mem + active * x[t]
        else:
            mem = beta * mem + active * x[t]
        s = (mem > thr).astype(float) * active
        ref = np.where(s > 0, refractory, np.maximum(ref - 1, 0))
        spikes.append(s)
    return np.stack(spikes), mem


@pytest.mark.parametrize("refractory", [0, 1, 3])
def test_lif_refractory_and_if_match_numpy(refractory, device):
    x, _ = _inputs(8, shape=(30, 2, 5), scale=1.0)
    x = np.abs(x)
    want_s, want_m = _np_lif(x, 0.875, 1.0, "subtract", refractory)
    lif = snn.LIF(0.875, refractory=refractory, step_mode="m", dtype=gp.float64)
    got = lif(_g(x, device))
    np.testing.assert_array_equal(_np(got), want_s)
    np.testing.assert_allclose(_np(lif.state[0]), want_m, rtol=1e-12, atol=1e-12)
    if refractory:
        # no two spikes closer than refractory + 1 steps
        idx = np.argwhere(want_s.reshape(30, -1).T > 0)
        for n in range(10):
            ts = idx[idx[:, 0] == n, 1]
            assert np.all(np.diff(ts) > refractory)
    want_s, want_m = _np_lif(x * 0.3, 1.0, 1.0, "zero")
    neuron = snn.IF(reset="zero", step_mode="m")
    np.testing.assert_array_equal(_np(neuron(_g(x * 0.3, device))), want_s)


@pytest.mark.parametrize("reset_delay", [True, False])
def test_adaptive_lif_matches_numpy(reset_delay, device):
    x, _ = _inputs(9, shape=(25, 2, 3), scale=1.0)
    x = np.abs(x)
    beta, rho, gamma, thr = 0.9, 0.8, 0.5, 1.0
    mem, a, spikes = np.zeros(x.shape[1:]), np.zeros(x.shape[1:]), []
    for t in range(x.shape[0]):
        if reset_delay:
            th_old = thr + gamma * a
            r = (mem > th_old).astype(float)
            a = rho * a + r
            mem = beta * mem + x[t] - r * th_old
            s = (mem > thr + gamma * a).astype(float)
        else:
            h = beta * mem + x[t]
            th = thr + gamma * a
            s = (h > th).astype(float)
            mem = h - s * th
            a = rho * a + s
        spikes.append(s)
    layer = snn.AdaptiveLIF(beta, thr, rho=rho, gamma=gamma, reset_delay=reset_delay,
                            step_mode="m", dtype=gp.float64)
    got = layer(_g(x, device))
    np.testing.assert_array_equal(_np(got), np.stack(spikes))
    np.testing.assert_allclose(_np(layer.state[0]), mem, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(layer.state[1]), a, rtol=1e-12, atol=1e-12)
    # adaptation lowers the rate against the same LIF without it
    plain = snn.LIF(beta, thr, reset_delay=reset_delay, step_mode="m")(_g(x, device))
    assert float(_np(gp.sum(got))) < float(_np(gp.sum(plain)))


# ---- state, modes, errors ---------------------------------------------------------------------
def test_state_single_vs_multi_and_reset(device):
    x, _ = _inputs(10)
    xg = _g(x, device)
    a = snn.LIF(0.8, step_mode="m", return_mem=True)
    s_multi, m_multi = a(xg)
    b = snn.LIF(0.8)
    outs = [b(xg[t]) for t in range(T)]
    np.testing.assert_array_equal(_np(gp.stack([o[0] for o in outs])), _np(s_multi))
    np.testing.assert_array_equal(_np(gp.stack([o[1] for o in outs])), _np(m_multi))
    # the kept state continues the sequence; reset_state starts over
    s2 = a(xg)[0]
    a.reset_state()
    np.testing.assert_array_equal(_np(a(xg)[0]), _np(s_multi))
    assert not np.array_equal(_np(s2), _np(s_multi))
    with pytest.raises(ValueError, match="LIF: input shape .* call reset_state"):
        a(xg[:, :1])
    snn.reset(gp.nn.Sequential(gp.nn.Linear(N, N), a))
    assert a.state is None
    zero = a.init_state(xg[0])
    assert len(zero) == 1 and zero[0].shape == (B, N) and float(_np(gp.sum(zero[0]))) == 0


def test_explicit_state_single_step(device):
    x, _ = _inputs(11)
    lif = snn.LIF(0.9)
    mem = lif.init_state(_g(x[0], device))[0]
    spk, mem1 = lif(_g(x[0], device), mem)
    want_s, want_m = SF.lif_step(_g(x[0], device), mem, beta=0.9)
    np.testing.assert_array_equal(_np(spk), _np(want_s))
    np.testing.assert_array_equal(_np(mem1), _np(want_m))
    spk, syn, mem = snn.Synaptic(0.5, 0.9)(_g(x[0], device))
    assert spk.shape == syn.shape == mem.shape == (B, N)


def test_tau_and_bad_arguments():
    assert snn.LIF(tau=20.0, dt=1.0).beta == pytest.approx(np.exp(-1 / 20))
    with pytest.raises(ValueError, match="LIF: give exactly one of beta"):
        snn.LIF()
    with pytest.raises(ValueError, match="LIF: beta must be in"):
        snn.LIF(1.5)
    with pytest.raises(ValueError, match="reset must be one of"):
        snn.LIF(0.9, reset="hard")
    with pytest.raises(ValueError, match="step_mode"):
        snn.LIF(0.9, step_mode="x")
    with pytest.raises(ValueError, match="refractory"):
        snn.LIF(0.9, refractory=-1)
    with pytest.raises(TypeError, match="IF: got 'beta'"):
        snn.IF(beta=0.5)
    with pytest.raises(ValueError, match="RLeaky: give exactly one"):
        snn.RLeaky(0.9)
    with pytest.raises(TypeError, match="lif_step: input must have a real floating"):
        SF.lif_step(gp.asarray([1, 2]), beta=0.9)
    with pytest.raises(TypeError, match="lif_step: beta must be a float or an Array"):
        SF.lif_step(gp.asarray([1.0]), beta="0.9")
    with pytest.raises(ValueError, match="multi_step: input must be"):
        snn.LIF(0.9).multi_step(gp.zeros((0, 3)))


def test_nan_threshold_is_rejected():
    for make in (lambda t: snn.LIF(0.9, threshold=t), lambda t: snn.IF(threshold=t),
                 lambda t: snn.Synaptic(0.5, 0.9, threshold=t),
                 lambda t: snn.LIF(0.9, threshold=t, learn_threshold=True)):
        with pytest.raises(ValueError, match=r"(LIF|IF|Synaptic): threshold must not be NaN"):
            make(float("nan"))


@pytest.mark.parametrize("step_mode", ["s", "m"])
def test_kept_state_follows_to_device(step_mode):
    """A layer run on the CPU, then moved with .to (itself or in a model), continues its
    sequence on the new device with the results of a layer that stayed on the CPU."""
    vk = [d for d in gp.devices() if str(d).startswith("vulkan")]
    if not vk:
        pytest.skip("no Vulkan device")
    x, _ = _inputs(13)

    def run(layer, xs):
        if step_mode == "m":
            return layer(xs)
        outs = [layer(xi) for xi in gp.unstack(xs, axis=0)]
        return gp.stack([o[0] for o in outs]), gp.stack([o[1] for o in outs])

    stay = snn.LIF(0.8, refractory=2, step_mode=step_mode, return_mem=True)
    moved = snn.LIF(0.8, refractory=2, step_mode=step_mode, return_mem=True)
    for layer in (stay, moved):
        run(layer, _g(x[:6], "cpu"))
    gp.nn.Sequential(moved).to(vk[0])
    s_cpu, m_cpu = run(stay, _g(x[6:], "cpu"))
    s_vk, m_vk = run(moved, _g(x[6:], vk[0]))
    assert s_vk.device == vk[0] and all(st.device == vk[0] for st in moved.state)
    assert 0 < float(_np(gp.sum(s_cpu))) < s_cpu.size
    np.testing.assert_array_equal(_np(s_vk), _np(s_cpu))
    np.testing.assert_allclose(_np(m_vk), _np(m_cpu), rtol=1e-12, atol=1e-12)


def test_init_hidden_single_step_in_sequential_equals_snntorch(device):
    """snnTorch's Sequential(Linear, Leaky(init_hidden=True), ...) run one step per call: LIF and
    IF with init_hidden=True return the spikes only and keep the state (float32: snnTorch's
    spikes are float32, so the Linear after a Leaky is too)."""
    rng = np.random.default_rng(14)
    x = (rng.standard_normal((T, B, 3)) * 2).astype(np.float32)
    ws = [rng.standard_normal((N, 3)) * 0.8, np.abs(rng.standard_normal((2, N))) * 0.5]
    lin = [torch.nn.Linear(3, N), torch.nn.Linear(N, 2)]
    ours = [gp.nn.Linear(3, N), gp.nn.Linear(N, 2)]
    with torch.no_grad(), gp.autograd.no_grad():
        for w, lt, lg in zip(ws, lin, ours):
            lt.weight[...] = torch.tensor(w, dtype=torch.float32)
            lt.bias.zero_()
            lg.weight[...] = gp.asarray(w, dtype=gp.float32)
            lg.bias[...] = 0.0
    ref = torch.nn.Sequential(lin[0], snntorch.Leaky(beta=0.8, init_hidden=True), lin[1],
                              snntorch.Leaky(beta=1.0, init_hidden=True, output=True))
    net = gp.nn.Sequential(ours[0], snn.LIF(0.8, init_hidden=True), ours[1],
                           snn.IF(init_hidden=True, return_mem=True)).to(device)
    xt = torch.tensor(x, requires_grad=True)
    want = [ref(xt[t]) for t in range(T)]
    xg = gp.asarray(x, device=device).requires_grad_()
    got = [net(xg[t]) for t in range(T)]
    st, mt = torch.stack([o[0] for o in want]), torch.stack([o[1] for o in want])
    sg, mg = gp.stack([o[0] for o in got]), gp.stack([o[1] for o in got])
    (mt.sum() + st.sum()).backward()
    gp.sum(mg + sg).backward()
    assert 0 < float(_np(gp.sum(sg))) < sg.size
    np.testing.assert_array_equal(_np(sg), st.detach().numpy())
    np.testing.assert_allclose(_np(mg), mt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    spk = snn.LIF(0.8, init_hidden=True)(_g(x[0], device))
    assert isinstance(spk, gp.Array) and spk.shape == (B, 3)
    with pytest.raises(TypeError, match="LIF: init_hidden=True keeps the state"):
        snn.LIF(0.8, init_hidden=True)(_g(x[0], device), _g(x[0], device))


def test_learnable_per_neuron_parameters():
    lif = snn.LIF([0.9] * 3, [1.0] * 3, learn_beta=True, learn_threshold=True)
    names = dict(lif.named_parameters())
    assert set(names) == {"_beta", "_threshold"} and names["_beta"].shape == (3,)
    shared = snn.LIF(0.9, learn_beta=True)
    assert dict(shared.named_parameters())["_beta"].shape == ()
    fixed = snn.LIF([0.9, 0.8])
    assert list(fixed.parameters()) == [] and dict(fixed.named_buffers())["_beta"].shape == (2,)


# ---- training: a spiking Sequential learns, on every device -----------------------------------
def test_spiking_sequential_trains(device):
    gp.nn.manual_seed(0)
    rng = np.random.default_rng(12)
    x = rng.uniform(size=(32, 8)).astype(np.float32)
    y = (x[:, :4].sum(1) > x[:, 4:].sum(1)).astype(np.int64)
    model = gp.nn.Sequential(gp.nn.Linear(8, 16), snn.LIF(0.9, step_mode="m"),
                             gp.nn.Linear(16, 2), snn.LIF(0.9, step_mode="m")).to(device)
    opt = gp.optim.Adam(model.parameters(), lr=0.02)
    xs = gp.asarray(np.broadcast_to(x, (10, 32, 8)).copy(), device=device)  # constant current
    yg = gp.asarray(y, device=device)
    losses = []
    for _ in range(15):
        snn.reset(model)
        loss = snn.ce_count_loss(model(xs), yg)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(_np(loss)))
    assert losses[-1] < 0.6 * losses[0]
    assert all(p.grad is not None for p in model.parameters())


def test_train_digits_example_runs(tmp_path):
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, os.path.join(root, "examples", "train_digits_snn.py"),
                          "--epochs", "1", "--steps", "25", "--plot", str(tmp_path / "c.png")],
                         capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=root))
    assert out.returncode == 0, out.stderr
    acc = float(out.stdout.split("final test accuracy:")[1].split()[0])
    assert acc > 0.5  # one epoch; 15 epochs reach about 0.96 (docs/snn.md)


# ---- SeqToANNContainer: conv layers on a spike sequence --------------------------------------
def test_seq_to_ann_container_equals_spikingjelly(device):
    """Conv2d + BatchNorm2d (training statistics over T * B) on (T, B, C, H, W), then a
    multi-step LIF: SpikingJelly's SeqToANNContainer and LIFNode with the same weights, forward
    spikes and gradients of the input and the conv weight."""
    layer = pytest.importorskip("spikingjelly.activation_based.layer")
    neuron = pytest.importorskip("spikingjelly.activation_based.neuron")
    surrogate = pytest.importorskip("spikingjelly.activation_based.surrogate")
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 2, 3, 6, 6)) * 2
    conv_t = torch.nn.Conv2d(3, 5, 3, padding=1).double()
    ref = torch.nn.Sequential(layer.SeqToANNContainer(conv_t, torch.nn.BatchNorm2d(5).double()),
                              neuron.LIFNode(tau=2.0, decay_input=False, step_mode="m",
                                             surrogate_function=surrogate.Sigmoid(alpha=4.0)))
    xt = _t(x).requires_grad_()
    st = ref(xt)
    w = rng.standard_normal(st.shape)
    (st * _t(w)).sum().backward()

    conv = gp.nn.Conv2d(3, 5, 3, padding=1, dtype=gp.float64)
    conv.weight = gp.nn.Parameter(_g(conv_t.weight.detach().numpy(), device))
    conv.bias = gp.nn.Parameter(_g(conv_t.bias.detach().numpy(), device))
    model = gp.nn.Sequential(snn.SeqToANNContainer(conv, gp.nn.BatchNorm2d(5, dtype=gp.float64)),
                             snn.LIF(0.5, reset="zero", reset_delay=False, detach_reset=False,
                                     surrogate=SG.sigmoid(4.0), step_mode="m")).to(device)
    xg = _g(x, device, grad=True)
    sg = model(xg)
    gp.sum(sg * _g(w, device)).backward()
    assert sg.shape == (4, 2, 5, 6, 6) and 0 < float(_np(gp.sum(sg))) < sg.size
    np.testing.assert_array_equal(_np(sg), st.detach().numpy())
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(_np(conv.weight.grad), conv_t.weight.grad.numpy(), rtol=1e-9,
                               atol=1e-10)


def test_seq_to_ann_container_folds_time(device):
    """The container equals the modules applied to each time step (stateless modules), and a
    bad input gets a ValueError."""
    rng = np.random.default_rng(13)
    x = _g(rng.standard_normal((3, 2, 4, 5, 5)), device)
    conv = gp.nn.Conv2d(4, 2, 3, dtype=gp.float64).to(device)
    seq = snn.SeqToANNContainer(conv, gp.nn.Flatten())
    y = seq(x)
    assert y.shape == (3, 2, 2 * 3 * 3)
    for t in range(3):
        np.testing.assert_allclose(_np(y[t]), _np(gp.reshape(conv(x[t]), (2, -1))), rtol=1e-12,
                                   atol=1e-12)
    with pytest.raises(ValueError, match="SeqToANNContainer"):
        seq(_g(np.zeros(3), device))
