"""Hunt 11 (a Norse 1.1 user): what grilly.nn.snn.norse still lacked, against Norse itself: the
correlation sensor and LIFCorrelation (every state field over many steps, BPTT gradients of
the input and the weights through the surrogate), correlation_based_update, the STDP sensor,
Norse's STDP (stdp_step_linear for every rule, on grilly's plasticity kernel for the additive
one; stdp_step_conv2d), RecurrentSequential, LConv2d and SpikesToTimesDecoder (forward and
gradients)."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn

torch = pytest.importorskip("torch")
nt = pytest.importorskip("norse.torch")
from norse.torch.functional import stdp as _nstdp  # noqa: E402

import grilly.nn.snn.norse as gn  # noqa: E402
from grilly.nn.snn import norse_stdp as _gstdp  # noqa: E402

from norse_helpers import GTOL, _g, _np, _same, _states_same, _t  # noqa: E402


def _spikes(rng, shape, rate=0.4):
    return (rng.random(shape) < rate).astype(np.float32)


def test_names_fields_and_defaults_as_norse():
    for name in ("CorrelationSensorParameters", "CorrelationSensorState",
                 "LIFCorrelationParameters", "LIFCorrelationState", "STDPSensorParameters",
                 "STDPSensorState", "RecurrentSequentialState"):
        assert getattr(gn, name)._fields == getattr(nt, name)._fields, name
    for kind in ("CorrelationSensorParameters", "STDPSensorParameters"):
        mine, ref = getattr(gn, kind)(), getattr(nt, kind)()
        for f in mine._fields:
            assert float(getattr(mine, f)) == pytest.approx(float(getattr(ref, f))), f
    mine, ref = gn.STDPParameters(), _nstdp.STDPParameters()
    for f in ("a_pre", "a_post", "tau_pre_inv", "tau_post_inv", "w_min", "w_max", "eta_plus",
              "eta_minus", "mu", "hardbound", "convolutional", "stdp_algorithm"):
        assert getattr(mine, f) == pytest.approx(getattr(ref, f)) if f != "stdp_algorithm" \
            else getattr(mine, f) == getattr(ref, f), f
    assert gn.functional.stdp_step_linear is gn.stdp_step_linear


# ---- correlation sensor and LIFCorrelation ----------------------------------------------------

def _sample(st, b):
    """Sample b of a (nested) state, keeping its batch axis (Norse's sensor: batch 1)."""
    return type(st)(*(_sample(f, b) if isinstance(f, tuple) else f[b:b + 1] for f in st))


def test_correlation_sensor_step_as_norse(device):
    # Norse 1.1's sensor masks broadcast the batch against the neuron axes, so it is right for
    # a batch of one: grilly's batch of two against Norse run on each sample
    rng = np.random.default_rng(0)
    T, B, NI, H = 12, 2, 3, 4
    pre = rng.random((T, B, NI)).astype(np.float32)   # analog pre "spikes": gradients flow
    post = _spikes(rng, (T, B, H))
    s0 = (_spikes(rng, (B, NI, H), 0.5), rng.random((B, NI, H)), rng.random((B, NI, H)))
    p_t = nt.CorrelationSensorParameters(torch.as_tensor(0.7), torch.as_tensor(1.3),
                                         torch.as_tensor(40.0), torch.as_tensor(70.0))
    p_g = gn.CorrelationSensorParameters(0.7, 1.3, 40.0, 70.0)
    pre_t, pre_g = _t(pre, True), _g(pre, device, True)
    post_t, post_g = _t(post, True), _g(post, device, True)
    st_t = [nt.CorrelationSensorState(*(_t(s[b:b + 1]) for s in s0)) for b in range(B)]
    st_g = gn.CorrelationSensorState(*(_g(s, device) for s in s0))
    w = rng.standard_normal((NI, H))
    lt = lg = 0.0
    for k in range(T):
        st_g = gn.correlation_sensor_step(pre_g[k], post_g[k], st_g, p_g, dt=0.002)
        lg = lg + gp.sum((st_g.correlation_trace - 0.5 * st_g.anti_correlation_trace)
                         * _g(w, device))
        for b in range(B):
            st_t[b] = nt.correlation_sensor_step(pre_t[k, b:b + 1], post_t[k, b:b + 1],
                                                 st_t[b], p_t, dt=0.002)
            _states_same(_sample(st_g, b), st_t[b])
            lt = lt + ((st_t[b].correlation_trace - 0.5 * st_t[b].anti_correlation_trace)
                       * _t(w)).sum()
    lt.backward()
    lg.backward()
    _same(pre_g.grad, pre_t.grad, GTOL)
    _same(post_g.grad, post_t.grad, GTOL)


def test_lif_correlation_as_norse(device):
    rng = np.random.default_rng(1)
    T, B, NI, H = 14, 2, 3, 4
    x = _spikes(rng, (T, B, NI), 0.5)
    w_in = rng.standard_normal((H, NI)) * 3 + 1.5
    w_rec = rng.standard_normal((H, H)) * 2
    p_lif = dict(method="super", alpha=100.0)
    p_t = nt.LIFCorrelationParameters(
        lif_parameters=nt.LIFParameters(tau_mem_inv=torch.as_tensor(300.0), **p_lif))
    p_g = gn.LIFCorrelationParameters(lif_parameters=gn.LIFParameters(tau_mem_inv=300.0,
                                                                       **p_lif))
    ref = nt.LIFCorrelation(NI, H, p_t)
    mine = gn.LIFCorrelation(NI, H, p_g).to(device)
    xt, xg = _t(x, True), _g(x, device, True)
    wit, wig = _t(w_in, True), _g(w_in, device, True)
    wrt, wrg = _t(w_rec, True), _g(w_rec, device, True)
    st_t, st_g = [None] * B, None
    lt = lg = 0.0
    zs = []

    def loss(lib, z, st):
        s = (lambda a: a.sum()) if lib is torch else gp.sum
        return s(z) + 0.1 * s(st.lif_state.v) + 0.01 * (
            s(st.recurrent_correlation_state.anti_correlation_trace)
            + s(st.input_correlation_state.correlation_trace))
    for k in range(T):
        zg, st_g = mine(xg[k], wig, wrg, st_g)
        lg = lg + loss(gp, zg, st_g)
        zs.append(_np(zg))
        for b in range(B):   # Norse's sensors: a batch of one (see the sensor's test)
            zt, st_t[b] = ref(xt[k, b:b + 1], wit, wrt, st_t[b])
            np.testing.assert_array_equal(_np(zg)[b:b + 1], zt.detach().numpy())
            _states_same(_sample(st_g, b), st_t[b])
            lt = lt + loss(torch, zt, st_t[b])
    assert 0 < np.sum(zs) < np.size(zs)
    lt.backward()
    lg.backward()
    for mg, rt in ((xg, xt), (wig, wit), (wrg, wrt)):
        _same(mg.grad, rt.grad, GTOL)


def test_lif_correlation_step_none_state_and_update_as_norse(device):
    rng = np.random.default_rng(2)
    B, NI, H = 1, 3, 2
    x = _spikes(rng, (B, NI), 0.8)
    w_in = rng.standard_normal((H, NI)) * 4 + 2
    w_rec = rng.standard_normal((H, H))
    _, st_t = nt.LIFCorrelation(NI, H)(_t(x), _t(w_in), _t(w_rec), None)
    z_g, st_g = gn.lif_correlation_step(_g(x, device), None, _g(w_in, device),
                                        _g(w_rec, device))
    _states_same(st_g, st_t)
    # correlation_based_update with a Linear read-out of the traces, as Norse's example
    lin_t = torch.nn.Linear(2 * B * NI * H, H * NI)
    lin_g = nn.Linear(2 * B * NI * H, H * NI).to(device)
    lin_g.load_state_dict({k: v.detach().numpy() for k, v in lin_t.state_dict().items()})
    w = rng.standard_normal((H, NI))
    cs_t, cs_g = st_t.input_correlation_state, st_g.input_correlation_state
    for ts in (3, 4):   # ts_frequency 2: the first leaves the weights, the second updates them
        wt = nt.correlation_based_update(ts, lin_t, _t(w), cs_t, 0.1, 2)
        wg = gn.correlation_based_update(ts, lin_g, _g(w, device), cs_g, 0.1, 2)
        _same(wg, wt)
    assert not _np(cs_g.correlation_trace).any() and not _np(cs_g.anti_correlation_trace).any()


def test_stdp_sensor_step_as_norse(device):
    rng = np.random.default_rng(3)
    T, B, N = 10, 2, 5
    pre, post = _spikes(rng, (T, B, N)), _spikes(rng, (T, B, N))
    p_t = nt.STDPSensorParameters(torch.as_tensor(0.5), torch.as_tensor(2.0),
                                  torch.as_tensor(30.0), torch.as_tensor(80.0))
    p_g = gn.STDPSensorParameters(0.5, 2.0, 30.0, 80.0)
    s0 = rng.random((B, N)), rng.random((B, N))
    st_t = nt.STDPSensorState(*map(_t, s0))
    st_g = gn.STDPSensorState(*(_g(s, device) for s in s0))
    for k in range(T):
        st_t = nt.stdp_sensor_step(_t(pre[k]), _t(post[k]), st_t, p_t)
        st_g = gn.stdp_sensor_step(_g(pre[k], device), _g(post[k], device), st_g, p_g)
        _states_same(st_g, st_t)


# ---- STDP -------------------------------------------------------------------------------------

_RULES = [("additive", True), ("additive", False), ("additive_step", True),
          ("multiplicative_pow", True), ("multiplicative_relu", False)]


@pytest.mark.parametrize("rule,hard", _RULES)
def test_stdp_step_linear_as_norse(device, rule, hard, monkeypatch):
    rng = np.random.default_rng(4)
    T, B, n_pre, n_post = 12, 3, 5, 4
    pre, post = _spikes(rng, (T, B, n_pre)), _spikes(rng, (T, B, n_post))
    kw = dict(a_pre=0.8, a_post=1.2, tau_pre_inv=40.0, tau_post_inv=70.0, w_min=-0.2,
              w_max=0.6, eta_plus=0.05, eta_minus=0.03, stdp_algorithm=rule, mu=0.5,
              hardbound=hard)
    p_t = _nstdp.STDPParameters(**{k: torch.as_tensor(v) if isinstance(v, float) and k != "mu"
                                   else v for k, v in kw.items()})
    p_g = gn.STDPParameters(**kw)
    calls = []
    kernel = _gstdp._stdp_into
    monkeypatch.setattr(_gstdp, "_stdp_into", lambda *a: calls.append(1) or kernel(*a))
    w0 = rng.uniform(-0.1, 0.5, (n_post, n_pre))
    wt, wg = _t(w0), _g(w0, device)
    s0 = rng.random((B, n_pre)) * 0.5, rng.random((B, n_post)) * 0.5
    st_t = _nstdp.STDPState(*map(_t, s0))
    st_g = gn.STDPState(*(_g(s, device) for s in s0))
    for k in range(T):
        wt, st_t = _nstdp.stdp_step_linear(_t(pre[k]), _t(post[k]), wt, st_t, p_t, dt=0.002)
        wg, st_g = gn.stdp_step_linear(_g(pre[k], device), _g(post[k], device), wg, st_g, p_g,
                                       dt=0.002)
        _same(st_g.t_pre, st_t.t_pre)
        _same(st_g.t_post, st_t.t_post)
        _same(wg, wt)
    # the additive rule runs grilly's plasticity kernel (snn.stdp's), the others compose ops
    assert len(calls) == (T if rule == "additive" else 0)
    assert not np.allclose(_np(wg), w0)


def test_stdp_step_conv2d_as_norse(device):
    rng = np.random.default_rng(5)
    T, B, C_in, C_out = 4, 2, 2, 3
    kw = dict(a_pre=1.0, a_post=0.7, tau_pre_inv=50.0, tau_post_inv=30.0, eta_plus=0.02,
              eta_minus=0.01, stdp_algorithm="multiplicative_relu", convolutional=True,
              stride=2, padding=1, dilation=1)
    p_t = _nstdp.STDPParameters(**{k: torch.as_tensor(v) if isinstance(v, float) and k != "mu"
                                   else v for k, v in kw.items()})
    p_g = gn.STDPParameters(**kw)
    w0 = rng.uniform(0.1, 0.9, (C_out, C_in, 3, 3))
    pre = _spikes(rng, (T, B, C_in, 6, 6))
    post = _spikes(rng, (T, B, C_out, 3, 3))
    wt, wg = _t(w0), _g(w0, device)
    st_t = _nstdp.STDPState(_t(np.zeros(pre.shape[1:])), _t(np.zeros(post.shape[1:])))
    st_g = gn.STDPState(_g(np.zeros(pre.shape[1:]), device),
                        _g(np.zeros(post.shape[1:]), device))
    for k in range(T):
        wt, st_t = _nstdp.stdp_step_conv2d(_t(pre[k]), _t(post[k]), wt, st_t, p_t)
        wg, st_g = gn.stdp_step_conv2d(_g(pre[k], device), _g(post[k], device), wg, st_g, p_g)
        _same(st_g.t_pre, st_t.t_pre)
        _same(wg, wt)


# ---- RecurrentSequential, LConv2d, SpikesToTimesDecoder ----------------------------------------

def test_recurrent_sequential_as_norse(device):
    rng = np.random.default_rng(6)
    T, B, N = 8, 2, 3
    ref = nt.RecurrentSequential(torch.nn.Linear(N, N), nt.LIFCell(), torch.nn.Linear(N, N))
    mine = gn.RecurrentSequential(nn.Linear(N, N), gn.LIFCell(), nn.Linear(N, N)).to(device)
    sd = {k: v.detach().numpy() * 4 for k, v in ref.state_dict().items()}
    ref.load_state_dict({k: torch.tensor(v) for k, v in sd.items()})
    mine.load_state_dict(sd)
    x = rng.random((T, B, N)) * 2
    xt, xg = _t(x, True), _g(x, device, True)
    st_t = st_g = None
    lt = lg = 0.0
    for k in range(T):
        yt, st_t = ref(xt[k], st_t)
        yg, st_g = mine(xg[k], st_g)
        _same(yg, yt)
        _same(st_g.state[1].v, st_t.state[1].v)
        lt, lg = lt + (yt * yt).sum(), lg + gp.sum(yg * yg)
    lt.backward()
    lg.backward()
    _same(xg.grad, xt.grad, GTOL)
    for name, prm in ref.named_parameters():
        _same(dict(mine.named_parameters())[name].grad, prm.grad, GTOL)
    # several outputs: returned as a list, which cannot be fed back (Norse fails too)
    two = gn.RecurrentSequential(nn.Linear(N, N), gn.LIFCell(), output_modules=[0, 1])
    out, st = two.to(device)(xg[0].detach())
    assert isinstance(out, list) and len(out) == 2
    with pytest.raises(TypeError, match="RecurrentSequential"):
        two(xg[1].detach(), st)


@pytest.mark.parametrize("cfg", [dict(kernel_size=3, padding=1),
                                 dict(kernel_size=(3, 2), stride=2, padding=(1, 0),
                                      dilation=(1, 2), groups=2)])
def test_lconv2d_as_norse(device, cfg):
    rng = np.random.default_rng(7)
    ref = nt.LConv2d(4, 6, **cfg)
    mine = gn.LConv2d(4, 6, **cfg).to(device)
    assert tuple(mine.weight.shape) == tuple(ref.weight.shape)
    mine.load_state_dict({"weight": ref.weight.detach().numpy()})
    x = rng.standard_normal((3, 2, 4, 7, 6))
    xt, xg = _t(x, True), _g(x, device, True)
    yt, yg = ref(xt), mine(xg)
    _same(yg, yt)
    w = rng.standard_normal(tuple(yt.shape))
    (yt * _t(w)).sum().backward()
    gp.sum(yg * _g(w, device)).backward()
    _same(xg.grad, xt.grad, GTOL)
    _same(mine.weight.grad, ref.weight.grad, dict(rtol=1e-4, atol=1e-4))


@pytest.mark.parametrize("count,convert", [(1, True), (3, False), (20, True)])
def test_spikes_to_times_decoder_as_norse(device, count, convert):
    rng = np.random.default_rng(8)
    T = 9
    s = _spikes(rng, (T, 3, 4), 0.25)
    s[rng.permutation(T)[:min(count, T)], 1:] = 1   # traces with count spikes
    s[:, 0, 0] = 0                                    # and a silent one: inf
    ref = nt.SpikesToTimesDecoder(spike_count=torch.as_tensor(count),
                                  convert_indices_to_times=convert, dt=0.004)
    mine = gn.SpikesToTimesDecoder(spike_count=count, convert_indices_to_times=convert, dt=0.004)
    xg = _g(s, device, True)
    yt, yg = ref(_t(s)), mine(xg)
    np.testing.assert_allclose(_np(yg), yt.numpy(), rtol=1e-6)
    assert np.isinf(_np(yg)).any() and np.isfinite(_np(yg)[:, 1:]).all()
    # Norse's gradient (-1 at each returned spike) on the traces without inf: its backward
    # fails where an index is inf (a trace with fewer spikes); grilly gives those none
    w = rng.standard_normal(tuple(yt.shape))
    xt = _t(s[:, 1:], True)
    (ref(xt) * _t(w[:, 1:])).sum().backward()
    fin = gp.isfinite(yg)
    gp.sum(gp.where(fin, yg, gp.zeros_like(yg)) * _g(w, device)).backward()
    np.testing.assert_allclose(_np(xg.grad)[:, 1:], xt.grad.numpy(), **GTOL)
    assert not _np(xg.grad)[:, 0, 0].any()


def test_bad_input_is_a_clear_error(device):
    x = gp.ones((2, 3), device=device)
    with pytest.raises(ValueError, match="LIFCorrelation: input_tensor"):
        gn.LIFCorrelation(4, 2)(x, gp.ones((2, 4), device=device), gp.ones((2, 2),
                                                                           device=device))
    with pytest.raises(ValueError, match="LIFCorrelation: hidden_size"):
        gn.LIFCorrelation(3, 0)
    with pytest.raises(ValueError, match="STDPParameters: stdp_algorithm"):
        gn.STDPParameters(stdp_algorithm="soft")
    st = gn.STDPState(gp.zeros((2, 3), device=device), gp.zeros((2, 2), device=device))
    with pytest.raises(ValueError, match="stdp_step_linear: w"):
        gn.stdp_step_linear(x, gp.ones((2, 2), device=device), gp.ones((3, 2), device=device),
                            st)
    with pytest.raises(ValueError, match="stdp_step_conv2d: p_stdp"):
        gn.stdp_step_conv2d(gp.ones((1, 1, 3, 3), device=device),
                            gp.ones((1, 1, 1, 1), device=device),
                            gp.ones((1, 1, 3, 3), device=device), st, gn.STDPParameters())
    with pytest.raises(ValueError, match="LConv2d: padding"):
        gn.LConv2d(1, 1, 3, padding="same")
    with pytest.raises(ValueError, match="LConv2d: input_tensor"):
        gn.LConv2d(1, 1, 3)(gp.ones((1, 1, 5, 5), device=device))
    with pytest.raises(ValueError, match="SpikesToTimesDecoder: spike_count"):
        gn.SpikesToTimesDecoder(spike_count=0)
    with pytest.raises(ValueError, match="SpikesToTimesDecoder: spike_input"):
        gn.SpikesToTimesDecoder()(gp.ones((3, 2), device=device))
    with pytest.raises(ValueError, match="RecurrentSequential: output module 5"):
        gn.RecurrentSequential(nn.Linear(2, 2), output_modules=5)
    with pytest.raises(TypeError, match="correlation_sensor_step: state"):
        gn.correlation_sensor_step(x, x, None)
