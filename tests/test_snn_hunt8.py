"""Hunt 8 (a Norse / snnTorch user): Norse 1.1's adaptive-threshold LSNN (LSNNCell, LSNN,
LSNNRecurrentCell, LSNNRecurrent, lsnn_step, lsnn_feed_forward_step), its Izhikevich neuron and
presets (IzhikevichCell, Izhikevich, IzhikevichRecurrent*, tonic_spiking, ...) and its
refractory LIF / AdEx (LIFRefrac*, LIFAdExRefrac*) in grilly.nn.snn.norse, against Norse itself:
spikes and every state field step for step, and the input's, weights' and parameters' gradients
through a few steps (BPTT)."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn

torch = pytest.importorskip("torch")
nt = pytest.importorskip("norse.torch")
from norse.torch.functional import lsnn as _nlsnn  # noqa: E402
from norse.torch.functional import izhikevich as _nizh  # noqa: E402
from norse.torch.functional import lif_refrac as _nref  # noqa: E402
from norse.torch.functional import lif_adex_refrac as _naref  # noqa: E402

import grilly.nn.snn.norse as gn  # noqa: E402

from norse_helpers import GTOL, STOL, _g, _np, _same, _states_same, _t  # noqa: E402,F401


def test_names_and_fields_as_norse():
    for name in ("LSNNParameters", "LSNNState", "LSNNFeedForwardState", "IzhikevichParameters",
                 "IzhikevichState", "IzhikevichRecurrentState", "LIFRefracParameters",
                 "LIFRefracState", "LIFRefracFeedForwardState", "LIFAdExRefracParameters",
                 "LIFAdExRefracState", "LIFAdExRefracFeedForwardState"):
        assert getattr(gn, name)._fields == getattr(nt, name)._fields, name
    for f in gn.LSNNParameters._fields[:7]:
        assert float(getattr(gn.LSNNParameters(), f)) == pytest.approx(
            float(getattr(nt.LSNNParameters(), f)))
    for name in ("tonic_spiking", "phasic_bursting", "class_1_exc", "accomodation", "dap",
                 "inhibition_induced_bursting"):
        mine, ref = getattr(gn, name), getattr(nt, name)
        assert tuple(mine.p[:9]) == pytest.approx(tuple(float(v) for v in ref.p[:9])), name
        assert (mine.s.v, mine.s.u) == pytest.approx((float(ref.s.v.detach()), float(ref.s.u))), name
    assert gn.create_izhikevich_spiking_behavior(0.02, 0.2, -65, 6, -70, -70).s.u == \
        pytest.approx(float(nt.create_izhikevich_spiking_behavior(0.02, 0.2, -65, 6, -70, -70).s.u))


# ---- LSNN ------------------------------------------------------------------------------------

def _lsnn_p(lib, learn=None):
    # a fast adaptation (tau_adapt 20 ms) so that a few steps show the threshold moving
    kw = dict(tau_adapt_inv=50.0, beta=0.7, v_reset=-0.2)
    if lib is gn:
        if learn is not None:
            kw["v_th"] = learn
        return gn.LSNNParameters(**kw)
    p = {k: torch.as_tensor(v) for k, v in kw.items()}
    if learn is not None:
        p["v_th"] = learn
    return _nlsnn.LSNNParameters(**p)


def test_lsnn_cell_and_sequence_as_norse(device):
    rng = np.random.default_rng(1)
    T = 7
    x = rng.standard_normal((T, 2, 3)) * 40 + 60
    w = rng.standard_normal((T, 2, 3))
    # the cell step by step from state None, a learnable threshold's gradient too
    th_t = torch.nn.Parameter(torch.tensor(0.8))
    th_g = nn.Parameter(gp.asarray(np.float32(0.8), device=device))
    cell_t, cell_g = nt.LSNNCell(_lsnn_p(nt, th_t)), gn.LSNNCell(_lsnn_p(gn, th_g))
    xt, xg = _t(x, True), _g(x, device, True)
    st_t = st_g = None
    loss_t = loss_g = 0.0
    zs = []
    for k in range(T):
        zt, st_t = cell_t(xt[k], st_t)
        zg, st_g = cell_g(xg[k], st_g)
        np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
        _states_same(st_g, st_t)
        zs.append(zt.detach().numpy())
        loss_t = loss_t + (zt * _t(w[k])).sum() + 0.1 * st_t.v.sum() + st_t.b.sum()
        loss_g = loss_g + (zg * _g(w[k], device)).sum() + 0.1 * st_g.v.sum() + gp.sum(st_g.b)
    assert 0 < np.sum(zs) < np.size(zs)
    loss_t.backward()
    loss_g.backward()
    _same(xg.grad, xt.grad, GTOL)
    np.testing.assert_allclose(float(_np(th_g.grad)), float(th_t.grad), rtol=1e-4, atol=1e-5)
    # the module over the sequence, every step's state recorded
    xt2, xg2 = _t(x, True), _g(x, device, True)
    zt, rec_t = nt.LSNN(_lsnn_p(nt), record_states=True)(xt2)
    zg, rec_g = gn.LSNN(_lsnn_p(gn), record_states=True)(xg2)
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    _states_same(rec_g, rec_t)
    ((zt * _t(w)).sum() + rec_t.b.sum()).backward()
    (gp.sum(zg * _g(w, device)) + gp.sum(rec_g.b)).backward()
    _same(xg2.grad, xt2.grad, GTOL)
    # the functional step from an explicit state
    s0 = [rng.standard_normal((2, 3)) for _ in range(3)]
    zt, s1t = _nlsnn.lsnn_feed_forward_step(_t(x[0]), _nlsnn.LSNNFeedForwardState(
        *map(_t, s0)), _lsnn_p(nt), 0.002)
    zg, s1g = gn.lsnn_feed_forward_step(_g(x[0], device), gn.LSNNFeedForwardState(
        *(_g(s, device) for s in s0)), _lsnn_p(gn), 0.002)
    np.testing.assert_array_equal(_np(zg), zt.numpy())
    _states_same(s1g, s1t)


def test_lsnn_recurrent_as_norse(device):
    rng = np.random.default_rng(2)
    T = 6
    x = (rng.uniform(size=(T, 2, 3)) < 0.6).astype(np.float32)
    w_in = rng.standard_normal((4, 3)) * 30 + 40
    w_rec = rng.standard_normal((4, 4)) * 10
    w = rng.standard_normal((T, 2, 4))
    wit, wrt = torch.nn.Parameter(_t(w_in)), torch.nn.Parameter(_t(w_rec))
    wig, wrg = nn.Parameter(_g(w_in, device)), nn.Parameter(_g(w_rec, device))
    mt = nt.LSNNRecurrent(3, 4, _lsnn_p(nt), input_weights=wit, recurrent_weights=wrt,
                          record_states=True)
    mg = gn.LSNNRecurrent(3, 4, _lsnn_p(gn), input_weights=wig, recurrent_weights=wrg,
                          record_states=True)
    xt, xg = _t(x, True), _g(x, device, True)
    zt, rt = mt(xt)
    zg, rg = mg(xg)
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    assert 0 < float(zt.detach().sum()) < zt.numel()
    _states_same(rg, rt)
    ((zt * _t(w)).sum() + 0.1 * rt.v.sum()).backward()
    (gp.sum(zg * _g(w, device)) + 0.1 * gp.sum(rg.v)).backward()
    _same(xg.grad, xt.grad, GTOL)
    _same(wig.grad, wit.grad, GTOL)
    _same(wrg.grad, wrt.grad, GTOL)
    # the cell: two steps from state None, then the functional step with the same weights
    ct = nt.LSNNRecurrentCell(3, 4, _lsnn_p(nt), input_weights=_t(w_in),
                              recurrent_weights=_t(w_rec))
    cg = gn.LSNNRecurrentCell(3, 4, _lsnn_p(gn), input_weights=_g(w_in, device),
                              recurrent_weights=_g(w_rec, device))
    st_t = st_g = None
    for k in range(3):
        zt, st_t = ct(_t(x[k]), st_t)
        zg, st_g = cg(_g(x[k], device), st_g)
        np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
        _states_same(st_g, st_t)
    zt, s2t = _nlsnn.lsnn_step(_t(x[3]), st_t, ct.input_weights, ct.recurrent_weights,
                               _lsnn_p(nt))
    zg, s2g = gn.lsnn_step(_g(x[3], device), st_g, cg.input_weights, cg._w_rec(), _lsnn_p(gn))
    _states_same(s2g, s2t)


def test_lsnn_errors():
    with pytest.raises(NotImplementedError, match="LSNN: adjoint"):
        gn.LSNN(adjoint=True)
    with pytest.raises(NotImplementedError, match="LSNNRecurrentCell: adjoint"):
        gn.LSNNRecurrentCell(2, 3, adjoint=True)
    with pytest.raises(TypeError, match="LSNNCell: p must be a LSNNParameters"):
        gn.LSNNCell(gn.LIFParameters())
    with pytest.raises(ValueError, match="LSNN: method"):
        gn.LSNN(gn.LSNNParameters(method="nope"))
    with pytest.raises(TypeError, match="lsnn_feed_forward_step: state must be a "
                                        "LSNNFeedForwardState"):
        gn.lsnn_feed_forward_step(gp.zeros((2,)), gn.LIFFeedForwardState(gp.zeros((2,)),
                                                                         gp.zeros((2,))))


# ---- Izhikevich ------------------------------------------------------------------------------

@pytest.mark.parametrize("preset", ["tonic_spiking", "class_1_exc"])
def test_izhikevich_cell_and_sequence_as_norse(device, preset):
    rng = np.random.default_rng(3)
    T = 12
    # currents around 10 (Izhikevich's tonic drive): a spike within a few ms of dt = 1 ms
    x = rng.uniform(5.0, 25.0, (T, 2, 3))
    w = rng.standard_normal((T, 2, 3))
    bt, bg = getattr(nt, preset), getattr(gn, preset)
    cell_t, cell_g = nt.IzhikevichCell(bt), gn.IzhikevichCell(bg)
    xt, xg = _t(x, True), _g(x, device, True)
    st_t = st_g = None
    loss_t = loss_g = 0.0
    zs = []
    for k in range(T):
        zt, st_t = cell_t(xt[k], st_t)
        zg, st_g = cell_g(xg[k], st_g)
        np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
        _states_same(st_g, st_t, dict(rtol=1e-5, atol=1e-4))
        zs.append(zt.detach().numpy())
        loss_t = loss_t + (zt * _t(w[k])).sum() + 0.01 * st_t.v.sum() + 0.1 * st_t.u.sum()
        loss_g = loss_g + (gp.sum(zg * _g(w[k], device)) + 0.01 * gp.sum(st_g.v)
                           + 0.1 * gp.sum(st_g.u))
    assert 0 < np.sum(zs) < np.size(zs)
    loss_t.backward()
    loss_g.backward()
    _same(xg.grad, xt.grad, dict(rtol=2e-4, atol=1e-5))
    # the module over the sequence (record_states), the functional step from the preset state
    xt2, xg2 = _t(x, True), _g(x, device, True)
    zt, rt = nt.Izhikevich(bt, record_states=True)(xt2)
    zg, rg = gn.Izhikevich(bg, record_states=True)(xg2)
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    _states_same(rg, rt, dict(rtol=1e-5, atol=1e-4))
    ((zt * _t(w)).sum() + 0.01 * rt.v.sum()).backward()
    (gp.sum(zg * _g(w, device)) + 0.01 * gp.sum(rg.v)).backward()
    _same(xg2.grad, xt2.grad, dict(rtol=2e-4, atol=1e-5))
    zt, s1t = _nizh.izhikevich_feed_forward_step(_t(x[0]), bt.s, bt.p, 0.002)
    zg, s1g = gn.izhikevich_feed_forward_step(_g(x[0], device), bg.s, bg.p, 0.002)
    _states_same(s1g, s1t, dict(rtol=1e-5, atol=1e-4))


def test_izhikevich_recurrent_as_norse(device):
    rng = np.random.default_rng(4)
    T = 10
    x = (rng.uniform(size=(T, 2, 3)) < 0.6).astype(np.float32)
    w_in = rng.uniform(5.0, 20.0, (4, 3))
    w_rec = rng.standard_normal((4, 4)) * 5
    w = rng.standard_normal((T, 2, 4))
    wit, wrt = torch.nn.Parameter(_t(w_in)), torch.nn.Parameter(_t(w_rec))
    wig, wrg = nn.Parameter(_g(w_in, device)), nn.Parameter(_g(w_rec, device))
    b = "tonic_bursting"
    mt = nt.IzhikevichRecurrent(3, 4, getattr(nt, b), input_weights=wit, recurrent_weights=wrt)
    mg = gn.IzhikevichRecurrent(3, 4, getattr(gn, b), input_weights=wig, recurrent_weights=wrg)
    xt, xg = _t(x, True), _g(x, device, True)
    zt, st = mt(xt)
    zg, sg = mg(xg)
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    assert 0 < float(zt.detach().sum()) < zt.numel()
    _states_same(sg, st, dict(rtol=1e-5, atol=1e-4))
    ((zt * _t(w)).sum() + 0.01 * st.v.sum()).backward()
    (gp.sum(zg * _g(w, device)) + 0.01 * gp.sum(sg.v)).backward()
    _same(xg.grad, xt.grad, dict(rtol=2e-4, atol=1e-5))
    _same(wig.grad, wit.grad, dict(rtol=2e-4, atol=1e-5))
    _same(wrg.grad, wrt.grad, dict(rtol=2e-4, atol=1e-5))
    # one step of the cell from state None
    ct = nt.IzhikevichRecurrentCell(3, 4, getattr(nt, b), input_weights=_t(w_in),
                                    recurrent_weights=_t(w_rec))
    cg = gn.IzhikevichRecurrentCell(3, 4, getattr(gn, b), input_weights=_g(w_in, device),
                                    recurrent_weights=_g(w_rec, device))
    _states_same(cg(_g(x[0], device))[1], ct(_t(x[0]))[1], dict(rtol=1e-5, atol=1e-4))


def test_izhikevich_errors():
    with pytest.raises(TypeError, match="IzhikevichCell: spiking_method must be an "
                                        "IzhikevichSpikingBehavior"):
        gn.IzhikevichCell(gn.tonic_spiking.p)
    with pytest.raises(TypeError, match="izhikevich_feed_forward_step: state must be a "
                                        "IzhikevichState"):
        gn.izhikevich_feed_forward_step(gp.zeros((2,)), (1.0,), gn.tonic_spiking.p)
    with pytest.raises(ValueError, match="Izhikevich: method"):
        gn.Izhikevich(gn.IzhikevichSpikingBehavior(
            gn.tonic_spiking.p._replace(method="bad"), gn.tonic_spiking.s))


# ---- refractory LIF and AdEx -----------------------------------------------------------------

def _refrac_p(lib, adex: bool):
    if adex:
        kw = dict(adaptation_current=2.0, adaptation_spike=0.5, delta_T=0.4, tau_ada_inv=50.0,
                  v_reset=-0.1)
        if lib is gn:
            return gn.LIFAdExRefracParameters(gn.LIFAdExParameters(**kw), 2.0)
        return nt.LIFAdExRefracParameters(
            nt.LIFAdExParameters(**{k: torch.as_tensor(v) for k, v in kw.items()}),
            torch.as_tensor(2.0))
    if lib is gn:
        return gn.LIFRefracParameters(gn.LIFParameters(v_reset=-0.1), 2.0)
    return nt.LIFRefracParameters(nt.LIFParameters(v_reset=torch.as_tensor(-0.1)),
                                  torch.as_tensor(2.0))


@pytest.mark.parametrize("adex", [False, True])
def test_refrac_cell_as_norse(device, adex):
    rng = np.random.default_rng(5)
    T = 8
    x = rng.standard_normal((T, 2, 3)) * 40 + 60
    w = rng.standard_normal((T, 2, 3))
    name = "LIFAdExRefracCell" if adex else "LIFRefracCell"
    cell_t = getattr(nt, name)(_refrac_p(nt, adex))
    cell_g = getattr(gn, name)(_refrac_p(gn, adex))
    xt, xg = _t(x, True), _g(x, device, True)
    st_t = st_g = None
    loss_t = loss_g = 0.0
    zs = []
    for k in range(T):
        zt, st_t = cell_t(xt[k], st_t)
        zg, st_g = cell_g(xg[k], st_g)
        np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
        _states_same(st_g, st_t)
        zs.append(zt.detach().numpy())
        loss_t = loss_t + (zt * _t(w[k])).sum() + 0.1 * st_t[0].v.sum() + st_t.rho.sum()
        loss_g = loss_g + (gp.sum(zg * _g(w[k], device)) + 0.1 * gp.sum(st_g[0].v)
                           + gp.sum(st_g.rho))
    zs = np.asarray(zs)
    # spikes, and steps where the refractory period held a neuron back
    assert 0 < zs.sum() < zs.size
    loss_t.backward()
    loss_g.backward()
    _same(xg.grad, xt.grad, GTOL)
    # the functional step from an explicit mid-period state
    fn_t = _naref.lif_adex_refrac_feed_forward_step if adex else _nref.lif_refrac_feed_forward_step
    fn_g = gn.lif_adex_refrac_feed_forward_step if adex else gn.lif_refrac_feed_forward_step
    zt, s1t = fn_t(_t(x[0]), st_t, _refrac_p(nt, adex))
    zg, s1g = fn_g(_g(x[0], device), st_g, _refrac_p(gn, adex))
    _states_same(s1g, s1t)


@pytest.mark.parametrize("adex", [False, True])
def test_refrac_recurrent_as_norse(device, adex):
    rng = np.random.default_rng(6)
    T = 6
    x = (rng.uniform(size=(T, 2, 3)) < 0.6).astype(np.float32)
    w_in = rng.standard_normal((4, 3)) * 40 + 50
    w_rec = rng.standard_normal((4, 4)) * 10
    w = rng.standard_normal((T, 2, 4))
    wit, wrt = torch.nn.Parameter(_t(w_in)), torch.nn.Parameter(_t(w_rec))
    wig, wrg = nn.Parameter(_g(w_in, device)), nn.Parameter(_g(w_rec, device))
    name = "LIFAdExRefracRecurrent" if adex else "LIFRefracRecurrent"
    mt = getattr(nt, name)(3, 4, _refrac_p(nt, adex), input_weights=wit, recurrent_weights=wrt,
                           record_states=True)
    mg = getattr(gn, name)(3, 4, _refrac_p(gn, adex), input_weights=wig, recurrent_weights=wrg,
                           record_states=True)
    xt, xg = _t(x, True), _g(x, device, True)
    zt, rt = mt(xt)
    zg, rg = mg(xg)
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    assert 0 < float(zt.detach().sum()) < zt.numel()
    _states_same(rg, rt)
    ((zt * _t(w)).sum() + 0.1 * rt[0].v.sum()).backward()
    (gp.sum(zg * _g(w, device)) + 0.1 * gp.sum(rg[0].v)).backward()
    _same(xg.grad, xt.grad, GTOL)
    _same(wig.grad, wit.grad, GTOL)
    _same(wrg.grad, wrt.grad, GTOL)
    # the cell: three steps from state None
    cname = name.replace("Recurrent", "RecurrentCell")
    ct = getattr(nt, cname)(3, 4, _refrac_p(nt, adex), input_weights=_t(w_in),
                            recurrent_weights=_t(w_rec))
    cg = getattr(gn, cname)(3, 4, _refrac_p(gn, adex), input_weights=_g(w_in, device),
                            recurrent_weights=_g(w_rec, device))
    st_t = st_g = None
    for k in range(3):
        zt, st_t = ct(_t(x[k]), st_t)
        zg, st_g = cg(_g(x[k], device), st_g)
        np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
        _states_same(st_g, st_t)


def test_refrac_errors():
    with pytest.raises(TypeError, match="LIFRefracCell: p must be a LIFRefracParameters"):
        gn.LIFRefracCell(gn.LIFParameters())
    with pytest.raises(TypeError, match="lif_refrac_feed_forward_step: state must be a "
                                        "LIFRefracFeedForwardState"):
        gn.lif_refrac_feed_forward_step(gp.zeros((2,)), None)
    with pytest.raises(ValueError, match="LIFRefracRecurrent: method"):
        gn.LIFRefracRecurrent(2, 3, gn.LIFRefracParameters(gn.LIFParameters(method="x")))


# ---- snnTorch's functional losses' weight= ---------------------------------------------------

tSF = pytest.importorskip("snntorch.functional")
import grilly.nn.snn.functional as SF  # noqa: E402

_CLS = np.array([0.5, 2.0, 1.0, 1.5], dtype=np.float32)


def _loss_pair(name, kw, out, y, device, split=False):
    """(grilly's loss and input grad, snnTorch's) for one loss with weight=; ``split``: the
    peer run one sample at a time (its mse losses weigh the last axis by weight[targets],
    right only for a batch of one) and its per-sample results stacked and reduced."""
    red = kw.get("reduction", "mean")
    xg = _g(out, device, True)
    lg = getattr(SF, name)(weight=_g(_CLS, device), **kw)(xg, gp.asarray(y, device=device))
    gp.sum(lg).backward() if red == "none" else lg.backward()
    xt = _t(out, True)
    wt = torch.tensor(_CLS)
    if split:
        kw1 = dict(kw, reduction="none")
        per = torch.cat([getattr(tSF, name)(weight=wt, **kw1)(xt[:, b:b + 1],
                                                                torch.tensor(y[b:b + 1]))
                         for b in range(len(y))])
        lt = per.mean() if red == "mean" else per.sum() if red == "sum" else per
    else:
        lt = getattr(tSF, name)(weight=wt, **kw)(xt, torch.tensor(y))
        if red == "sum":
            lt = lt.sum()   # (snnTorch 1.0 leaves a weighted "sum" per sample)
    lt.sum().backward()
    return lg, xg.grad, lt, xt.grad


@pytest.mark.parametrize("reduction", ["mean", "none", "sum"])
def test_snntorch_losses_weight_as_snntorch(device, reduction):
    rng = np.random.default_rng(7)
    T, B, C = 5, 3, 4
    spk = (rng.uniform(size=(T, B, C)) < 0.4).astype(np.float32)
    mem = rng.standard_normal((T, B, C)).astype(np.float32)
    y = np.array([1, 3, 0])
    cases = [("ce_rate_loss", {}, spk, False), ("ce_count_loss", {}, spk, False),
             ("ce_max_membrane_loss", {}, mem, False), ("ce_temporal_loss", {}, spk, False),
             ("mse_count_loss", dict(correct_rate=0.8, incorrect_rate=0.2), spk, True),
             ("mse_membrane_loss", dict(on_target=1.0, off_target=0.2), mem, True),
             ("mse_temporal_loss", {}, spk, True)]
    for name, kw, out, split in cases:
        lg, gg, lt, gt = _loss_pair(name, dict(kw, reduction=reduction), out, y, device, split)
        np.testing.assert_allclose(_np(lg), lt.detach().numpy().reshape(_np(lg).shape),
                                   rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(_np(gg), gt.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_snntorch_losses_weight_errors():
    spk = gp.zeros((2, 3, 4))
    y = gp.asarray(np.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"ce_count_loss: weight must have shape \(4,\)"):
        SF.ce_count_loss(weight=gp.ones(3))(spk, y)
    with pytest.raises(TypeError, match="ce_rate_loss: weight must be an array"):
        SF.ce_rate_loss(weight="heavy")(spk, y)
    with pytest.raises(NotImplementedError, match="mse_temporal_loss: weight with target_is"):
        import grilly.nn.snn as snn
        snn.mse_temporal_loss(spk, gp.zeros((3, 4)), target_is_time=True, weight=gp.ones(4))


def test_li_box_as_norse(device):
    from norse.torch.functional import leaky_integrator_box as _nlib
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 2, 3)) * 5
    w_in = rng.standard_normal((5, 3))
    w = rng.standard_normal((4, 2, 3))
    pt = nt.LIBoxParameters(torch.as_tensor(150.0), torch.as_tensor(0.3))
    pg = gn.LIBoxParameters(150.0, 0.3)
    xt, xg = _t(x, True), _g(x, device, True)
    ct, cg = nt.LIBoxCell(pt), gn.LIBoxCell(pg)
    st_t = st_g = None
    loss_t = loss_g = 0.0
    for k in range(4):
        vt, st_t = ct(xt[k], st_t)
        vg, st_g = cg(xg[k], st_g)
        _states_same(st_g, st_t)
        loss_t = loss_t + (vt * _t(w[k])).sum()
        loss_g = loss_g + gp.sum(vg * _g(w[k], device))
    loss_t.backward()
    loss_g.backward()
    _same(xg.grad, xt.grad, GTOL)
    v0 = rng.standard_normal((2, 5))
    vt, _ = _nlib.li_box_step(_t(x[0]), nt.LIBoxState(_t(v0)), _t(w_in), pt, 0.002)
    vg, _ = gn.li_box_step(_g(x[0], device), gn.LIBoxState(_g(v0, device)), _g(w_in, device),
                           pg, 0.002)
    _same(vg, vt)


# ---- LIFEx and IAF ---------------------------------------------------------------------------

def _ex_p(lib):
    kw = dict(delta_T=0.4, v_reset=-0.1)
    if lib is gn:
        return gn.LIFExParameters(**kw)
    return nt.LIFExParameters(**{k: torch.as_tensor(v) for k, v in kw.items()})


def test_lif_ex_as_norse(device):
    from norse.torch.functional import lif_ex as _nex
    rng = np.random.default_rng(9)
    T = 6
    x = rng.standard_normal((T, 2, 3)) * 30 + 40
    w = rng.standard_normal((T, 2, 3))
    xt, xg = _t(x, True), _g(x, device, True)
    zt, rt = nt.LIFEx(_ex_p(nt), record_states=True)(xt)
    zg, rg = gn.LIFEx(_ex_p(gn), record_states=True)(xg)
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    assert 0 < float(zt.detach().sum()) < zt.numel()
    _states_same(rg, rt)
    ((zt * _t(w)).sum() + 0.1 * rt.v.sum()).backward()
    (gp.sum(zg * _g(w, device)) + 0.1 * gp.sum(rg.v)).backward()
    _same(xg.grad, xt.grad, GTOL)
    # the cell's first step, the functional default state, the encoder
    _states_same(gn.LIFExCell(_ex_p(gn))(_g(x[0], device))[1], nt.LIFExCell(_ex_p(nt))(_t(x[0]))[1])
    _states_same(gn.lif_ex_feed_forward_step(_g(x[0], device), p=_ex_p(gn))[1],
                 _nex.lif_ex_feed_forward_step(_t(x[0]), p=_ex_p(nt))[1])
    v0 = rng.standard_normal((2, 3))
    zt, vt = _nex.lif_ex_current_encoder(_t(x[0]), _t(v0), _ex_p(nt))
    zg, vg = gn.lif_ex_current_encoder(_g(x[0], device), _g(v0, device), _ex_p(gn))
    _same(vg, vt)
    # the recurrent module
    xs = (rng.uniform(size=(T, 2, 3)) < 0.6).astype(np.float32)
    w_in = rng.standard_normal((4, 3)) * 40 + 50
    w_rec = rng.standard_normal((4, 4)) * 10
    wo = rng.standard_normal((T, 2, 4))
    wit, wrt = torch.nn.Parameter(_t(w_in)), torch.nn.Parameter(_t(w_rec))
    wig, wrg = nn.Parameter(_g(w_in, device)), nn.Parameter(_g(w_rec, device))
    xt, xg = _t(xs, True), _g(xs, device, True)
    zt, st = nt.LIFExRecurrent(3, 4, _ex_p(nt), input_weights=wit, recurrent_weights=wrt)(xt)
    zg, sg = gn.LIFExRecurrent(3, 4, _ex_p(gn), input_weights=wig, recurrent_weights=wrg)(xg)
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    _states_same(sg, st)
    (zt * _t(wo)).sum().backward()
    gp.sum(zg * _g(wo, device)).backward()
    _same(xg.grad, xt.grad, GTOL)
    _same(wrg.grad, wrt.grad, GTOL)


def test_iaf_as_norse(device):
    from norse.torch.functional import iaf as _niaf
    rng = np.random.default_rng(10)
    T = 6
    x = rng.standard_normal((T, 2, 3)) * 0.6 + 0.4
    w = rng.standard_normal((T, 2, 3))
    pt = nt.IAFParameters(torch.as_tensor(1.0), torch.as_tensor(-0.2), "triangle", 0.5)
    pg = gn.IAFParameters(1.0, -0.2, "triangle", 0.5)
    xt, xg = _t(x, True), _g(x, device, True)
    zt, rt = nt.IAF(pt)(xt)
    # (record_states is grilly's: Norse 1.1's IAF has none; its last step is Norse's state)
    zg, rg = gn.IAF(pg, record_states=True)(xg)
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    assert 0 < float(zt.detach().sum()) < zt.numel()
    _same(rg.v[-1], rt.v)
    ((zt * _t(w)).sum() + rt.v.sum()).backward()
    (gp.sum(zg * _g(w, device)) + gp.sum(rg.v[-1])).backward()
    _same(xg.grad, xt.grad, GTOL)
    _states_same(gn.IAFCell(pg)(_g(x[0], device))[1], nt.IAFCell(pt)(_t(x[0]))[1])
    w_in, w_rec = rng.standard_normal((4, 3)), rng.standard_normal((4, 4))
    s0 = (rng.uniform(size=(2, 4)) < 0.5).astype(np.float32), rng.standard_normal((2, 4))
    zt, st = _niaf.iaf_step(_t(x[0]), nt.IAFState(*map(_t, s0)), _t(w_in), _t(w_rec), pt)
    zg, sg = gn.iaf_step(_g(x[0], device), gn.IAFState(*(_g(s, device) for s in s0)),
                         _g(w_in, device), _g(w_rec, device), pg)
    _states_same(sg, st)
