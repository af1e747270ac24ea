"""Hunt 10 (a Norse 1.1 user): the neuron and synapse models grilly.nn.snn.norse lacked, against
Norse itself: the conductance-based LIF (CobaLIFCell, coba_lif_step,
coba_lif_feed_forward_step), the multi-compartment LIF (LIFMCRecurrentCell, lif_mc_step,
lif_mc_feed_forward_step) and its refractory form (LIFMCRefracRecurrentCell, lif_mc_refrac_*),
Tsodyks-Markram short-term plasticity (stp_step); spikes and every state field over many
steps, and the gradients through time (BPTT) of the input, weights, coupling and parameters."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn

torch = pytest.importorskip("torch")
nt = pytest.importorskip("norse.torch")
from norse.torch.functional import coba_lif as _ncoba  # noqa: E402
from norse.torch.functional import lif_mc as _nmc  # noqa: E402
from norse.torch.functional import lif_mc_refrac as _nmcr  # noqa: E402
from norse.torch.functional import tsodyks_makram as _ntm  # noqa: E402

import grilly.nn.snn.norse as gn  # noqa: E402

from norse_helpers import GTOL, STOL, _g, _np, _same, _states_same, _t  # noqa: E402,F401


def test_names_fields_and_defaults_as_norse():
    for name in ("CobaLIFParameters", "CobaLIFState", "CobaLIFFeedForwardState",
                 "TsodyksMakramParameters", "TsodyksMakramState"):
        assert getattr(gn, name)._fields == getattr(nt, name)._fields, name
    for kind in ("CobaLIFParameters", "TsodyksMakramParameters"):
        mine, ref = getattr(gn, kind)(), getattr(nt, kind)()
        for f in mine._fields:
            if f not in ("method", "alpha"):
                assert float(getattr(mine, f)) == pytest.approx(float(getattr(ref, f))), f
    for name in ("CobaLIFCell", "LIFMCRecurrentCell", "LIFMCRefracRecurrentCell", "stp_step",
                 "coba_lif_step", "coba_lif_feed_forward_step", "lif_mc_step",
                 "lif_mc_feed_forward_step", "lif_mc_refrac_step",
                 "lif_mc_refrac_feed_forward_step"):
        assert callable(getattr(gn, name)), name


# ---- conductance-based LIF -------------------------------------------------------------------

# a regime with spikes and silences: strong synapses, fast conductances
_COBA = dict(tau_syn_exc_inv=200.0, tau_syn_inh_inv=100.0, v_reset=-70.0)


def _coba_p(lib):
    return lib.CobaLIFParameters(**_COBA) if lib is gn else _ncoba.CobaLIFParameters(
        **{k: torch.as_tensor(v) for k, v in _COBA.items()})


def _coba_ref(x, s, w_in, w_rec, p):
    """The documented CobaLIF step on Norse's own coba_lif_step: Norse 1.1 overwrites the
    input's conductance jump with the recurrent one's, so the input's jump is added to the
    state's conductances first (the rest of the step is Norse's)."""
    s = _ncoba.CobaLIFState(s.z, s.v, s.g_e + torch.nn.functional.linear(x, w_in.relu()),
                            s.g_i + torch.nn.functional.linear(x, (-w_in).relu()))
    return _ncoba.coba_lif_step(x, s, w_in, w_rec, p)


def test_coba_feed_forward_step_as_norse(device):
    rng = np.random.default_rng(1)
    T = 10
    x = rng.standard_normal((T, 2, 3)) * 60 + 25
    w = rng.standard_normal((T, 2, 3))
    xt, xg = _t(x, True), _g(x, device, True)
    s0 = (rng.uniform(-70, -30, (2, 3)), rng.uniform(0, 5, (2, 3)), rng.uniform(0, 5, (2, 3)))
    st_t = _ncoba.CobaLIFFeedForwardState(*map(_t, s0))
    st_g = gn.CobaLIFFeedForwardState(*(_g(s, device) for s in s0))
    lt = lg = 0.0
    zs = []
    for k in range(T):
        zt, st_t = _ncoba.coba_lif_feed_forward_step(xt[k], st_t, _coba_p(nt))
        zg, st_g = gn.coba_lif_feed_forward_step(xg[k], st_g, _coba_p(gn))
        np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
        _states_same(st_g, st_t, dict(rtol=1e-5, atol=1e-4))
        zs.append(zt.detach().numpy())
        lt = lt + (zt * _t(w[k])).sum() + 0.01 * st_t.v.sum()
        lg = lg + gp.sum(zg * _g(w[k], device)) + 0.01 * gp.sum(st_g.v)
    assert 0 < np.sum(zs) < np.size(zs)
    lt.backward()
    lg.backward()
    _same(xg.grad, xt.grad, dict(rtol=1e-4, atol=1e-4))


@pytest.mark.parametrize("seq", [False, True])
def test_coba_cell_and_sequence(device, seq):
    rng = np.random.default_rng(2)
    T = 8
    x = (rng.uniform(size=(T, 2, 3)) < 0.6).astype(np.float32)
    w_in = rng.standard_normal((4, 3)) * 30 + 10
    w_rec = rng.standard_normal((4, 4)) * 20
    w = rng.standard_normal((T, 2, 4))
    wit, wrt = torch.nn.Parameter(_t(w_in)), torch.nn.Parameter(_t(w_rec))
    wig, wrg = nn.Parameter(_g(w_in, device)), nn.Parameter(_g(w_rec, device))
    xt, xg = _t(x, True), _g(x, device, True)
    # Norse's cell starts from zeros (v too): the same reference state
    st_t = _ncoba.CobaLIFState(*(torch.zeros(2, 4),) * 4)
    zs_t, states_t = [], []
    for k in range(T):
        zt, st_t = _coba_ref(xt[k], st_t, wit, wrt, _coba_p(nt))
        zs_t.append(zt)
        states_t.append(st_t)
    zt = torch.stack(zs_t)
    if seq:
        zg, rec_g = gn.CobaLIF(3, 4, _coba_p(gn), record_states=True, input_weights=wig,
                               recurrent_weights=wrg)(xg)
        np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
        _states_same(rec_g, _ncoba.CobaLIFState(*(torch.stack(f) for f in zip(*states_t))),
                     dict(rtol=1e-5, atol=1e-4))
        vg, vt = rec_g.v, torch.stack([s.v for s in states_t])
    else:
        cell = gn.CobaLIFCell(3, 4, _coba_p(gn), input_weights=wig, recurrent_weights=wrg)
        st_g, zs_g, vs = None, [], []
        for k in range(T):
            z, st_g = cell(xg[k], st_g)
            np.testing.assert_array_equal(_np(z), zs_t[k].detach().numpy())
            _states_same(st_g, states_t[k], dict(rtol=1e-5, atol=1e-4))
            zs_g.append(z)
            vs.append(st_g.v)
        zg, vg, vt = gp.stack(zs_g), gp.stack(vs), torch.stack([s.v for s in states_t])
    assert 0 < float(zt.detach().sum()) < zt.numel()
    ((zt * _t(w)).sum() + 0.01 * vt.sum()).backward()
    (gp.sum(zg * _g(w, device)) + 0.01 * gp.sum(vg)).backward()
    for mine, ref in ((xg, xt), (wig, wit), (wrg, wrt)):
        _same(mine.grad, ref.grad, dict(rtol=2e-4, atol=1e-4))


def test_coba_functional_and_module_defaults(device):
    rng = np.random.default_rng(3)
    x = (rng.uniform(size=(2, 3)) < 0.5).astype(np.float32)
    w_in, w_rec = rng.standard_normal((4, 3)) * 20, rng.standard_normal((4, 4)) * 10
    s0 = [rng.uniform(-70, -20, (2, 4)) if k == 1 else rng.uniform(0, 3, (2, 4))
          for k in range(4)]
    s0[0] = (rng.uniform(size=(2, 4)) < 0.5).astype(np.float32)
    zt, st = _coba_ref(_t(x), _ncoba.CobaLIFState(*map(_t, s0)), _t(w_in), _t(w_rec),
                       _ncoba.CobaLIFParameters())
    zg, sg = gn.coba_lif_step(_g(x, device), gn.CobaLIFState(*(_g(s, device) for s in s0)),
                              _g(w_in, device), _g(w_rec, device))
    np.testing.assert_array_equal(_np(zg), zt.numpy())
    _states_same(sg, st, dict(rtol=1e-5, atol=1e-4))
    # with no input, the step is exactly Norse 1.1's (which drops the input's jump)
    zt, st = _ncoba.coba_lif_step(_t(0 * x), _ncoba.CobaLIFState(*map(_t, s0)), _t(w_in),
                                  _t(w_rec))
    zg, sg = gn.coba_lif_step(_g(0 * x, device), gn.CobaLIFState(*(_g(s, device) for s in s0)),
                              _g(w_in, device), _g(w_rec, device))
    _states_same(sg, st, dict(rtol=1e-5, atol=1e-4))
    # Norse's weight scales, its recurrent diagonal kept, parameters under Norse's names
    cell = gn.CobaLIFCell(30, 40)
    assert sorted(dict(cell.named_parameters())) == ["input_weights", "recurrent_weights"]
    assert float(np.std(_np(cell.input_weights))) == pytest.approx(30 ** -0.5, rel=0.2)
    assert float(np.std(_np(cell.recurrent_weights))) == pytest.approx(40 ** -0.5, rel=0.2)
    assert float(np.abs(np.diag(_np(cell.recurrent_weights))).sum()) > 0


# ---- multi-compartment LIF -------------------------------------------------------------------

@pytest.mark.parametrize("refrac", [False, True])
def test_lif_mc_cell_as_norse(device, refrac):
    rng = np.random.default_rng(4)
    T = 10
    x = (rng.uniform(size=(T, 2, 3)) < 0.6).astype(np.float32)
    w_in = rng.standard_normal((4, 3)) * 3 + 4
    w_rec = rng.standard_normal((4, 4)) * 2
    g_c = rng.standard_normal((4, 4)) * (3.0 if not refrac else 0.05)
    w = rng.standard_normal((T, 2, 4))
    wit, wrt, gt = (torch.nn.Parameter(_t(a)) for a in (w_in, w_rec, g_c))
    wig, wrg, gg = (nn.Parameter(_g(a, device)) for a in (w_in, w_rec, g_c))
    if refrac:
        p_t = nt.LIFRefracParameters(nt.LIFParameters(v_reset=torch.as_tensor(-0.1)),
                                     torch.as_tensor(2.0))
        p_g = gn.LIFRefracParameters(gn.LIFParameters(v_reset=-0.1), 2.0)
        ct = nt.LIFMCRefracRecurrentCell(3, 4, p_t, g_coupling=gt, input_weights=wit,
                                         recurrent_weights=wrt)
        cg = gn.LIFMCRefracRecurrentCell(3, 4, p_g, g_coupling=gg, input_weights=wig,
                                         recurrent_weights=wrg)
    else:
        p_t, p_g = nt.LIFParameters(v_reset=torch.as_tensor(-0.1)), gn.LIFParameters(v_reset=-0.1)
        ct = nt.LIFMCRecurrentCell(3, 4, p_t, g_coupling=gt, input_weights=wit,
                                   recurrent_weights=wrt)
        cg = gn.LIFMCRecurrentCell(3, 4, p_g, g_coupling=gg, input_weights=wig,
                                   recurrent_weights=wrg)
    assert "g_coupling" in dict(cg.named_parameters())
    xt, xg = _t(x, True), _g(x, device, True)
    st_t = st_g = None
    lt = lg = 0.0
    zs, states_t = [], []
    for k in range(T):
        zt, st_t = ct(xt[k], st_t)
        zg, st_g = cg(xg[k], st_g)
        np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
        _states_same(st_g, st_t)
        zs.append(zt.detach().numpy())
        states_t.append(st_t)
        v_t, v_g = (st_t.lif.v, st_g.lif.v) if refrac else (st_t.v, st_g.v)
        lt = lt + (zt * _t(w[k])).sum() + 0.1 * v_t.sum()
        lg = lg + gp.sum(zg * _g(w[k], device)) + 0.1 * gp.sum(v_g)
    zs = np.asarray(zs)
    assert 0 < zs.sum() < zs.size
    lt.backward()
    lg.backward()
    for mine, ref in ((xg, xt), (wig, wit), (wrg, wrt), (gg, gt)):
        _same(mine.grad, ref.grad, GTOL)
    # the sequence module (grilly's) runs the same steps
    name = "LIFMCRefracRecurrent" if refrac else "LIFMCRecurrent"
    zg, rec = getattr(gn, name)(3, 4, p_g, g_coupling=_g(g_c, device),
                                input_weights=_g(w_in, device),
                                recurrent_weights=_g(w_rec, device), record_states=True)(
        _g(x, device))
    np.testing.assert_array_equal(_np(zg), zs)
    stacked = [torch.stack([s.lif.v if refrac else s.v for s in states_t])]
    _same(rec.lif.v if refrac else rec.v, stacked[0])


@pytest.mark.parametrize("refrac", [False, True])
def test_lif_mc_functional_as_norse(device, refrac):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4)) * 40 + 30
    g_c = rng.standard_normal((4, 4)) * 0.5
    v0, i0 = rng.uniform(-0.5, 0.9, (2, 4)), rng.standard_normal((2, 4)) * 50 + 30
    rho0 = rng.integers(0, 3, (2, 4)).astype(np.float32)
    xt, xg = _t(x, True), _g(x, device, True)
    gt, gg = _t(g_c, True), _g(g_c, device, True)
    if refrac:
        st = nt.LIFRefracFeedForwardState(nt.LIFFeedForwardState(_t(v0), _t(i0)), _t(rho0))
        sg = gn.LIFRefracFeedForwardState(gn.LIFFeedForwardState(_g(v0, device),
                                                                 _g(i0, device)),
                                          _g(rho0, device))
        zt, s1t = _nmcr.lif_mc_refrac_feed_forward_step(xt, st, gt)
        zg, s1g = gn.lif_mc_refrac_feed_forward_step(xg, sg, gg)
        vt, vg = s1t.lif.v + s1t.lif.i, s1g.lif.v + s1g.lif.i   # (x joins i after the step)
    else:
        st = nt.LIFFeedForwardState(_t(v0), _t(i0))
        sg = gn.LIFFeedForwardState(_g(v0, device), _g(i0, device))
        zt, s1t = _nmc.lif_mc_feed_forward_step(xt, st, gt, dt=0.002)
        zg, s1g = gn.lif_mc_feed_forward_step(xg, sg, gg, dt=0.002)
        vt, vg = s1t.v, s1g.v
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    assert 0 < float(zt.detach().sum()) < zt.numel()
    _states_same(s1g, s1t)
    (zt.sum() + vt.sum()).backward()
    (gp.sum(zg) + gp.sum(vg)).backward()
    _same(xg.grad, xt.grad, GTOL)
    _same(gg.grad, gt.grad, GTOL)
    # the recurrent functional step from an explicit state
    w_in, w_rec = rng.standard_normal((3, 4)) * 3, rng.standard_normal((3, 3))
    xs = (rng.uniform(size=(2, 4)) < 0.5).astype(np.float32)
    g3 = rng.standard_normal((3, 3)) * 0.3
    z0 = (rng.uniform(size=(2, 3)) < 0.5).astype(np.float32)
    v0, i0 = rng.uniform(-0.5, 0.9, (2, 3)), rng.standard_normal((2, 3))
    if refrac:
        st = nt.LIFRefracState(nt.LIFState(_t(z0), _t(v0), _t(i0)), _t(rho0[:, :3]))
        sg = gn.LIFRefracState(gn.LIFState(*(_g(a, device) for a in (z0, v0, i0))),
                               _g(rho0[:, :3], device))
        zt, s1t = _nmcr.lif_mc_refrac_step(_t(xs), st, _t(w_in), _t(w_rec), _t(g3))
        zg, s1g = gn.lif_mc_refrac_step(_g(xs, device), sg, _g(w_in, device),
                                        _g(w_rec, device), _g(g3, device))
    else:
        st = nt.LIFState(_t(z0), _t(v0), _t(i0))
        sg = gn.LIFState(*(_g(a, device) for a in (z0, v0, i0)))
        zt, s1t = _nmc.lif_mc_step(_t(xs), st, _t(w_in), _t(w_rec), _t(g3))
        zg, s1g = gn.lif_mc_step(_g(xs, device), sg, _g(w_in, device), _g(w_rec, device),
                                 _g(g3, device))
    np.testing.assert_array_equal(_np(zg), zt.numpy())
    _states_same(s1g, s1t)


# ---- Tsodyks-Markram -------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["depressing", "facilitating"])
def test_stp_as_norse(device, kind):
    taus = (1 / 50e-3, 1 / 750e-3, 0.45) if kind == "depressing" else (1 / 750e-3, 1 / 50e-3,
                                                                         0.15)
    rng = np.random.default_rng(6)
    T = 40
    z = (rng.uniform(size=(T, 3)) < 0.3).astype(np.float32) * rng.uniform(0.5, 1.5, (T, 3))
    w = rng.standard_normal((T, 3))
    u_t = torch.nn.Parameter(torch.tensor(taus[2]))
    u_g = nn.Parameter(gp.asarray(np.float32(taus[2]), device=device))
    p_t = _ntm.TsodyksMakramParameters(tau_f_inv=taus[0], tau_d_inv=taus[1], U=u_t)
    p_g = gn.TsodyksMakramParameters(tau_f_inv=taus[0], tau_d_inv=taus[1], U=u_g)
    zt, zg = _t(z, True), _g(z, device, True)
    st, sg = _ntm.TsodyksMakramState(u=0.0, x=1.0), gn.TsodyksMakramState(u=0.0, x=1.0)
    lt = lg = 0.0
    for k in range(T):
        yt, st = _ntm.stp_step(zt[k], st, p_t)
        yg, sg = gn.stp_step(zg[k], sg, p_g)
        _same(yg, yt)
        _states_same(sg, st)
        lt = lt + (yt * _t(w[k])).sum()
        lg = lg + gp.sum(yg * _g(w[k], device))
    lt.backward()
    lg.backward()
    _same(zg.grad, zt.grad, GTOL)
    np.testing.assert_allclose(float(_np(u_g.grad)), float(u_t.grad), rtol=1e-4, atol=1e-5)
    # state None is the resting synapse, and a state of Arrays continues
    y0, s0 = gn.stp_step(_g(z[0], device), None, gn.TsodyksMakramParameters())
    yt, s0t = _ntm.stp_step(_t(z[0]), _ntm.TsodyksMakramState(0.0, 1.0),
                            _ntm.TsodyksMakramParameters())
    _same(y0, yt)
    y1, _ = gn.stp_step(_g(z[1], device), s0, gn.TsodyksMakramParameters(), dt=0.002)
    _same(y1, _ntm.stp_step(_t(z[1]), s0t, _ntm.TsodyksMakramParameters(), dt=0.002)[0])


# ---- errors ----------------------------------------------------------------------------------

def test_errors():
    x = gp.zeros((2, 3))
    with pytest.raises(ValueError, match="lif_mc_feed_forward_step: g_coupling must be a"):
        gn.lif_mc_feed_forward_step(x, None, gp.zeros((2, 2)))
    with pytest.raises(ValueError, match="LIFMCRecurrentCell: g_coupling must be a"):
        gn.LIFMCRecurrentCell(3, 4, g_coupling=gp.zeros((3, 3)))
    with pytest.raises(TypeError, match="coba_lif_feed_forward_step: p must be a "
                                        "CobaLIFParameters"):
        gn.coba_lif_feed_forward_step(x, None, gn.LIFParameters())
    with pytest.raises(ValueError, match="CobaLIFCell: method"):
        gn.CobaLIFCell(3, 4, gn.CobaLIFParameters(method="nope"))
    with pytest.raises(ValueError, match="coba_lif_step: input has 3 features"):
        gn.coba_lif_step(x, None, gp.zeros((4, 2)), gp.zeros((4, 4)))
    with pytest.raises(TypeError, match="stp_step: s must be a TsodyksMakramState"):
        gn.stp_step(x, (1.0,), gn.TsodyksMakramParameters())
    with pytest.raises(ValueError, match=r"stp_step: s.x has shape \(5,\)"):
        gn.stp_step(x, gn.TsodyksMakramState(0.0, gp.ones((5,))), gn.TsodyksMakramParameters())
    with pytest.raises(TypeError, match="stp_step: s.u must be a number"):
        gn.stp_step(x, gn.TsodyksMakramState("a", 1.0), gn.TsodyksMakramParameters())
    with pytest.raises(ValueError, match="LIFMCRefracRecurrentCell: state.z has shape"):
        gn.LIFMCRefracRecurrentCell(3, 4)(x, gn.LIFRefracState(
            gn.LIFState(gp.zeros((2, 5)), gp.zeros((2, 4)), gp.zeros((2, 4))),
            gp.zeros((2, 4))))


# ---- the recurrent functional steps from state None ------------------------------------------

def test_recurrent_functional_steps_start_at_rest(device):
    """lif_step / lsnn_step with state None (docs: None is the initial state) used to be a
    TypeError saying "... or None, got NoneType"; now the rest state, as Norse's cells start."""
    rng = np.random.default_rng(7)
    x = (rng.uniform(size=(2, 3)) < 0.6).astype(np.float32)
    w_in, w_rec = rng.standard_normal((4, 3)) * 3 + 3, rng.standard_normal((4, 4))
    for fn_g, fn_t, P, cell_t in (
            (gn.lif_step, nt.lif_step, "LIFParameters", nt.LIFRecurrentCell),
            (gn.lsnn_step, nt.lsnn_step, "LSNNParameters", nt.LSNNRecurrentCell)):
        p_t = getattr(nt, P)(v_leak=torch.as_tensor(0.2))
        # Norse's rest state: the one its cell starts from
        st0 = cell_t(3, 4, p_t, autapses=True).state_fallback(_t(x))
        zt, st = fn_t(_t(x), st0, _t(w_in), _t(w_rec), p_t)
        zg, sg = fn_g(_g(x, device), None, _g(w_in, device), _g(w_rec, device),
                      getattr(gn, P)(v_leak=0.2))
        np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
        _states_same(sg, st)


# ---- Lift, lift, logic, threshold functions, regularization ----------------------------------

def test_lift_as_norse(device):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 2, 3)) * 4
    w, b = rng.standard_normal((4, 3)), rng.standard_normal(4)
    lin_t = torch.nn.Linear(3, 4)
    with torch.no_grad():
        lin_t.weight.copy_(_t(w))
        lin_t.bias.copy_(_t(b))
    lin_g = nn.Linear(3, 4).to(device)
    lin_g.load_state_dict({"weight": _g(w, device), "bias": _g(b, device)})
    mt = nt.SequentialState(nt.Lift(lin_t), nt.LIF())
    mg = gn.SequentialState(gn.Lift(lin_g), gn.LIF())
    assert [gn.Lift(gn.LIFCell()).is_stateful, gn.Lift(lin_g).is_stateful] == [True, False]
    xt, xg = _t(x, True), _g(x, device, True)
    yt, _ = mt(xt)
    yg, _ = mg(xg)
    np.testing.assert_array_equal(_np(yg), yt.detach().numpy())
    assert 0 < float(yt.detach().sum()) < yt.numel()
    yt.sum().backward()
    gp.sum(yg).backward()
    _same(xg.grad, xt.grad, GTOL)
    # a stateful module lifted: its state threaded, an (x, state) tuple continues
    zt, st = nt.Lift(nt.LIFCell())(_t(x))
    zg, sg = gn.Lift(gn.LIFCell())(_g(x, device))
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    _states_same(sg, st)
    zt, st = nt.Lift(nt.LIFCell())((_t(x), st))
    zg, sg = gn.Lift(gn.LIFCell())((_g(x, device), sg))
    _states_same(sg, st)
    # the functional lift with p
    p_t, p_g = nt.LIFParameters(v_th=torch.as_tensor(0.3)), gn.LIFParameters(v_th=0.3)
    s0t = nt.LIFFeedForwardState(torch.zeros(2, 3), torch.zeros(2, 3))
    zt, st = nt.lift(nt.lif_feed_forward_step, p_t)(_t(x) * 50,
                                                                          state=s0t)
    zg, sg = gn.lift(gn.lif_feed_forward_step, p_g)(_g(x, device) * 50)
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    _states_same(sg, st)


def test_logic_threshold_fns_and_regularization_as_norse(device):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = (rng.uniform(size=(3, 4)) < 0.5).astype(np.float32)
    c = (rng.uniform(size=(3, 4)) < 0.5).astype(np.float32)
    for name, args in (("super_fn", (50.0,)), ("triangle_fn", (0.7,)), ("heavi_tanh_fn", (2.0,)),
                       ("heavi_erfc_fn", (1.5,)), ("heavi_circ_fn", (0.8,))):
        xt, xg = _t(a, True), _g(a, device, True)
        yt, yg = getattr(nt, name)(xt, *args), getattr(gn, name)(xg, *args)
        np.testing.assert_array_equal(_np(yg), yt.detach().numpy())
        (yt * _t(b + 1)).sum().backward()
        gp.sum(yg * _g(b + 1, device)).backward()
        _same(xg.grad, xt.grad, GTOL)
    for name in ("logical_and", "logical_or", "logical_xor"):
        bt, ct, bg, cg = _t(b, True), _t(c, True), _g(b, device, True), _g(c, device, True)
        yt, yg = getattr(nt, name)(bt, ct), getattr(gn, name)(bg, cg)
        np.testing.assert_array_equal(_np(yg), yt.detach().numpy())
        (yt * _t(a)).sum().backward()
        gp.sum(yg * _g(a, device)).backward()
        _same(bg.grad, bt.grad, GTOL)
        _same(cg.grad, ct.grad, GTOL)
    # regularization: spikes counted and membranes summed over a few calls
    s_t = nt.LIFFeedForwardState(_t(a), _t(b))
    s_g = gn.LIFFeedForwardState(_g(a, device), _g(b, device))
    for acc in ("spike_accumulator", "voltage_accumulator"):
        ct_, cg_ = nt.RegularizationCell(getattr(nt, acc)), gn.RegularizationCell(getattr(gn, acc))
        for _ in range(3):
            _, rt = ct_(_t(c), s_t)
            _, rg = cg_(_g(c, device), s_g)
        _same(rg, rt)
    zt, rt = nt.regularize_step(_t(c), s_t)
    zg, rg = gn.regularize_step(_g(c, device), s_g)
    _same(rg, rt)


def test_misc_errors():
    with pytest.raises(TypeError, match="Lift: module must be a grilly nn.Module"):
        gn.Lift(lambda x: x)
    with pytest.raises(ValueError, match="Lift: x must be"):
        gn.Lift(nn.Linear(2, 2))(gp.zeros(()))
    with pytest.raises(TypeError, match="lift: activation must be callable"):
        gn.lift(3)
    with pytest.raises(TypeError, match="voltage_accumulator: s must be a neuron state"):
        gn.voltage_accumulator(gp.zeros((2,)), None)
    with pytest.raises(TypeError, match="triangle_fn: alpha must be a number"):
        gn.triangle_fn(gp.zeros((2,)), "a")


def test_functional_and_module_spellings():
    """``norse.functional.lif_step`` / ``norse.module.LIFCell`` after ``import
    grilly.nn.snn.norse as norse`` were AttributeErrors."""
    from grilly.nn.snn.norse.functional import lif_mc_step, stp_step
    from grilly.nn.snn.norse.module import CobaLIFCell
    assert (lif_mc_step, stp_step, CobaLIFCell) == (gn.lif_mc_step, gn.stp_step, gn.CobaLIFCell)
    for name in ("lif_step", "lif_feed_forward_step", "coba_lif_step", "lift"):
        assert getattr(gn.functional, name) is getattr(gn, name)
    for name in ("LIFCell", "LIFMCRecurrentCell", "Lift", "SequentialState"):
        assert getattr(gn.module, name) is getattr(gn, name)
