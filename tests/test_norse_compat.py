"""grilly.nn.snn.norse (Norse's API on grilly Arrays) against Norse 1.1 itself: spikes, voltages,
currents and the input's, weights' and parameters' gradients step for step, for the cells, the
multi-step modules (fused and per step), the recurrent LIF, the leaky-integrator readout, the
current-free LIF, SequentialState with Linear layers, state=None and explicit states, several
dt, every threshold method, a short BPTT training loop; and the errors."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn.snn import fused as _fused

torch = pytest.importorskip("torch")
nt = pytest.importorskip("norse.torch")
from norse.torch.functional.threshold import threshold as _nthreshold  # noqa: E402
from norse.torch.functional.lif import lif_feed_forward_integral as lif_ff_integral  # noqa: E402
from norse.torch.functional.reset import reset_subtract as _n_reset_subtract  # noqa: E402

import grilly.nn.snn.norse as gn  # noqa: E402  (the alias a port writes)

T, B, N = 7, 2, 4
R = np.random.default_rng(5)
# currents that make the default LIF (dt 1 ms, tau_mem 10 ms) spike every few steps
X = (R.standard_normal((T, B, N)) * 6 + 3).astype(np.float32)
W = R.standard_normal((T, B, N)).astype(np.float32)
from norse_helpers import GTOL, STOL, _g, _np, _same, _t  # noqa: E402,F401


def _count_fused(monkeypatch):
    calls = []
    real = _fused.lif_sequence

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(_fused, "lif_sequence", counted)
    return calls


def test_alias_and_exports():
    import grilly.nn.snn as snn
    from grilly.nn.snn import norse_compat
    assert gn is norse_compat is snn.norse
    assert snn.LIF is not gn.LIF   # grilly's own LIF keeps its name
    assert gn.LIFParameters()._fields == nt.LIFParameters._fields
    assert gn.LIFState._fields == nt.LIFState._fields
    assert gn.LIFFeedForwardState._fields == nt.LIFFeedForwardState._fields
    assert gn.LIParameters._fields == nt.LIParameters._fields
    assert gn.LIState._fields == nt.LIState._fields
    for f in gn.LIFParameters._fields[:5] + ("alpha",):
        assert float(getattr(gn.LIFParameters(), f)) == pytest.approx(
            float(getattr(nt.LIFParameters(), f)))


@pytest.mark.parametrize("method,alpha", [("super", 100.0), ("super", 3.0), ("triangle", 0.3),
                                          ("tanh", 2.0), ("circ", 0.5), ("heavi_erfc", 2.0),
                                          ("heaviside", 1.0)])
def test_threshold_methods(device, method, alpha):
    x = np.array([-2.0, -1.0, -0.3, 0.0, 0.2, 0.99, 2.0], dtype=np.float32)
    xt, xg = _t(x, True), _g(x, device, True)
    zt, zg = _nthreshold(xt, method, alpha), gn.threshold(xg, method, alpha)
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    if method == "heaviside":   # Norse's step has no gradient at all
        assert not zt.requires_grad and not zg.requires_grad
        return
    (zt * torch.arange(1.0, 8.0)).sum().backward()
    gp.sum(zg * gp.arange(1.0, 8.0, device=device)).backward()
    _same(xg.grad, xt.grad, dict(rtol=1e-6, atol=1e-7))


def _ref_cell_loop(cell, x, state):
    zs, vs, is_ = [], [], []
    for t in range(x.shape[0]):
        z, state = cell(x[t], state)
        zs.append(z)
        vs.append(state.v)
        is_.append(state.i)
    return zs, vs, is_, state


@pytest.mark.parametrize("dt", [0.001, 0.0005])
@pytest.mark.parametrize("explicit", [False, True])
def test_lif_cell(device, dt, explicit):
    p_t = nt.LIFParameters(v_leak=torch.tensor(0.2), v_reset=torch.tensor(-0.1))
    p_g = gn.LIFParameters(v_leak=0.2, v_reset=-0.1)
    xs = X * (0.001 / dt)   # a smaller dt needs a larger drive to spike
    xt, xg = _t(xs, True), _g(xs, device, True)
    v0 = R.standard_normal((B, N)).astype(np.float32) * 0.5
    i0 = R.standard_normal((B, N)).astype(np.float32)
    st_t = nt.LIFFeedForwardState(_t(v0, True), _t(i0, True)) if explicit else None
    st_g = gn.LIFFeedForwardState(_g(v0, device, True), _g(i0, device, True)) if explicit \
        else None
    zt, vt, it, _ = _ref_cell_loop(nt.LIFCell(p_t, dt=dt), xt, st_t)
    zg, vg, ig, last = _ref_cell_loop(gn.LIFCell(p_g, dt=dt), xg, st_g)
    assert isinstance(last, gn.LIFFeedForwardState)
    for a, b in zip(zg, zt):
        np.testing.assert_array_equal(_np(a), b.detach().numpy())
    for a, b in zip(vg + ig, vt + it):
        _same(a, b)
    assert sum(float(z.detach().sum()) for z in zt) > 0
    wt = torch.tensor(W)
    (sum((z * wt[t]).sum() + 0.3 * vt[t].sum() for t, z in enumerate(zt)) + it[-1].sum()).backward()
    gp.sum(gp.stack([gp.sum(z * _g(W[t], device)) + 0.3 * gp.sum(vg[t])
                     for t, z in enumerate(zg)])).__add__(gp.sum(ig[-1])).backward()
    _same(xg.grad, xt.grad, GTOL)
    if explicit:
        _same(st_g.v.grad, st_t.v.grad, GTOL)
        _same(st_g.i.grad, st_t.i.grad, GTOL)


def _lif_loss(z, st, w, lib):
    if lib == "t":
        return (z * torch.tensor(w)).sum() + 0.3 * st.v.sum() + 0.2 * st.i.sum()
    return gp.sum(z * w) + 0.3 * gp.sum(st.v) + 0.2 * gp.sum(st.i)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("dt", [0.001, 0.002])
@pytest.mark.parametrize("explicit", [False, True])
def test_lif_multi_step(device, monkeypatch, fused, dt, explicit):
    calls = _count_fused(monkeypatch)
    p_t = nt.LIFParameters(tau_mem_inv=torch.tensor([100.0, 80.0, 120.0, 60.0]),
                           v_th=torch.tensor([1.0, 0.8, 1.2, 0.9]), v_leak=torch.tensor(0.1),
                           v_reset=torch.tensor(-0.2))
    p_g = gn.LIFParameters(tau_mem_inv=gp.asarray([100.0, 80.0, 120.0, 60.0], device=device),
                           v_th=np.array([1.0, 0.8, 1.2, 0.9]), v_leak=0.1, v_reset=-0.2)
    xs = X * (0.001 / dt)
    xt, xg = _t(xs, True), _g(xs, device, True)
    v0 = R.standard_normal((B, N)).astype(np.float32) * 0.5
    i0 = R.standard_normal((B, N)).astype(np.float32)
    st_t = nt.LIFFeedForwardState(_t(v0, True), _t(i0, True)) if explicit else None
    st_g = gn.LIFFeedForwardState(_g(v0, device, True), _g(i0, device, True)) if explicit \
        else None
    zt, sft = nt.LIF(p_t, dt=dt)(xt, st_t)
    zg, sfg = gn.LIF(p_g, dt=dt, fused=fused)(xg, st_g)
    assert len(calls) == int(fused)   # the fused kernels ran (or not) as asked
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    assert 0 < float(zt.detach().sum()) < zt.numel()
    _same(sfg.v, sft.v)
    _same(sfg.i, sft.i)
    _lif_loss(zt, sft, W, "t").backward()
    _lif_loss(zg, sfg, _g(W, device), "g").backward()
    _same(xg.grad, xt.grad, GTOL)
    if explicit:
        _same(st_g.v.grad, st_t.v.grad, GTOL)
        _same(st_g.i.grad, st_t.i.grad, GTOL)


def test_lif_continues_and_records(device):
    """Two calls passing the state on equal one call; record_states stacks every step's."""
    xt, xg = _t(X), _g(X, device)
    zt, st = nt.LIF(record_states=True)(xt)
    zg, sg = gn.LIF(record_states=True)(xg)
    np.testing.assert_array_equal(_np(zg), zt.numpy() if not zt.requires_grad
                                  else zt.detach().numpy())
    assert tuple(sg.v.shape) == (T, B, N)
    _same(sg.v, st.v)
    _same(sg.i, st.i)
    lif = gn.LIF()
    z1, s1 = lif(xg[:3])
    z2, s2 = lif(xg[3:], s1)
    np.testing.assert_array_equal(_np(gp.concat([z1, z2], axis=0)), _np(zg))
    _same(s2.v, st.v[-1])


@pytest.mark.parametrize("method,alpha", [("triangle", 0.3), ("tanh", 2.0), ("heaviside", 1.0)])
def test_lif_other_methods(device, monkeypatch, method, alpha):
    calls = _count_fused(monkeypatch)
    xt, xg = _t(X, True), _g(X, device, True)
    zt, st = nt.LIF(nt.LIFParameters(method=method, alpha=torch.tensor(alpha)))(xt)
    zg, sg = gn.LIF(gn.LIFParameters(method=method, alpha=alpha))(xg)
    assert not calls   # only "super" has a kernel surrogate: per step
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    _lif_loss(zt, st, W, "t").backward()
    _lif_loss(zg, sg, _g(W, device), "g").backward()
    _same(xg.grad, xt.grad, GTOL)


@pytest.mark.parametrize("fused", [True, False])
def test_lif_learnable_parameters(device, fused):
    """Parameters in LIFParameters (Norse does not register them): their gradients."""
    tm_t = torch.nn.Parameter(torch.tensor([100.0, 80.0, 120.0, 60.0]))
    th_t = torch.nn.Parameter(torch.tensor(0.9))
    ts_t = torch.nn.Parameter(torch.tensor(150.0))
    tm_g = nn.Parameter(gp.asarray([100.0, 80.0, 120.0, 60.0], device=device))
    th_g = nn.Parameter(gp.asarray(0.9, device=device))
    ts_g = nn.Parameter(gp.asarray(150.0, device=device))
    zt, st = nt.LIF(nt.LIFParameters(tau_syn_inv=ts_t, tau_mem_inv=tm_t, v_th=th_t))(_t(X))
    zg, sg = gn.LIF(gn.LIFParameters(tau_syn_inv=ts_g, tau_mem_inv=tm_g, v_th=th_g),
                    fused=fused)(_g(X, device))
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    _lif_loss(zt, st, W, "t").backward()
    _lif_loss(zg, sg, _g(W, device), "g").backward()
    for mine, ref in ((tm_g, tm_t), (th_g, th_t), (ts_g, ts_t)):
        np.testing.assert_allclose(_np(mine.grad), ref.grad.numpy(), rtol=2e-4, atol=1e-6)


def _rec_pair(device, autapses, hidden=3):
    ref = nt.LIFRecurrent(N, hidden, autapses=autapses)
    w_in = ref.input_weights.detach().numpy() * 4
    w_rec = ref.recurrent_weights.detach().numpy() * 4
    with torch.no_grad():
        ref.input_weights.copy_(torch.tensor(w_in))
        ref.recurrent_weights.copy_(torch.tensor(w_rec))
    return ref, w_in, w_rec


@pytest.mark.parametrize("autapses", [False, True])
@pytest.mark.parametrize("multi", [False, True])
def test_lif_recurrent(device, autapses, multi):
    hidden = 3
    ref, w_in, w_rec = _rec_pair(device, autapses, hidden)
    if not multi:   # the cell, with Norse's cell weights set to the same values
        cell_t = nt.LIFRecurrentCell(N, hidden, autapses=autapses)
        with torch.no_grad():
            cell_t.input_weights.copy_(torch.tensor(w_in))
            cell_t.recurrent_weights.copy_(torch.tensor(w_rec))
        ref = cell_t
    kind = gn.LIFRecurrent if multi else gn.LIFRecurrentCell
    mine = kind(N, hidden, autapses=autapses).to(device)
    mine.load_state_dict({"input_weights": w_in, "recurrent_weights": w_rec})
    xt, xg = _t(X, True), _g(X, device, True)
    if multi:
        zt, st = ref(xt)
        zg, sg = mine(xg)
        vt, vg = st.v, sg.v
    else:
        st, sg, zts, zgs, vts, vgs = None, None, [], [], [], []
        for t in range(T):
            z, st = ref(xt[t], st)
            zts.append(z)
            vts.append(st.v)
            z, sg = mine(xg[t], sg)
            zgs.append(z)
            vgs.append(sg.v)
        zt, zg, vt, vg = torch.stack(zts), gp.stack(zgs), torch.stack(vts), gp.stack(vgs)
    assert isinstance(sg, gn.LIFState)
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    assert 0 < float(zt.detach().sum()) < zt.numel()
    _same(vg, vt)
    _same(sg.i, st.i)
    wr = R.standard_normal(tuple(zt.shape)).astype(np.float32)
    ((zt * torch.tensor(wr)).sum() + 0.3 * vt.sum()).backward()
    (gp.sum(zg * _g(wr, device)) + 0.3 * gp.sum(vg)).backward()
    _same(xg.grad, xt.grad, GTOL)
    _same(mine.input_weights.grad, ref.input_weights.grad, GTOL)
    _same(mine.recurrent_weights.grad, ref.recurrent_weights.grad, GTOL)
    if not autapses:
        assert not np.diag(_np(mine.recurrent_weights.grad)).any()


def test_lif_recurrent_explicit_state_and_dt(device):
    ref, w_in, w_rec = _rec_pair(device, False)
    ref.dt = 0.0005
    mine = gn.LIFRecurrent(N, 3, dt=0.0005).to(device)
    mine.load_state_dict({"input_weights": w_in, "recurrent_weights": w_rec})
    z0 = (R.random((B, 3)) > 0.5).astype(np.float32)
    v0 = R.standard_normal((B, 3)).astype(np.float32)
    i0 = R.standard_normal((B, 3)).astype(np.float32) * 3
    xs = X * 2
    zt, st = ref(_t(xs), nt.LIFState(_t(z0), _t(v0), _t(i0)))
    zg, sg = mine(_g(xs, device), gn.LIFState(_g(z0, device), _g(v0, device), _g(i0, device)))
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    _same(sg.v, st.v)
    _same(sg.i, st.i)
    np.testing.assert_array_equal(_np(sg.z), st.z.detach().numpy())


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("explicit", [False, True])
def test_li(device, fused, explicit):
    p_t = nt.LIParameters(tau_mem_inv=torch.tensor([100.0, 50.0, 200.0, 80.0]),
                          v_leak=torch.tensor(0.3))
    p_g = gn.LIParameters(tau_mem_inv=[100.0, 50.0, 200.0, 80.0], v_leak=0.3)
    xt, xg = _t(X, True), _g(X, device, True)
    v0 = R.standard_normal((B, N)).astype(np.float32)
    i0 = R.standard_normal((B, N)).astype(np.float32)
    st_t = nt.LIState(_t(v0, True), _t(i0, True)) if explicit else None
    st_g = gn.LIState(_g(v0, device, True), _g(i0, device, True)) if explicit else None
    vt, sft = nt.LI(p_t, dt=0.002)(xt, st_t)
    vg, sfg = gn.LI(p_g, dt=0.002, fused=fused)(xg, st_g)
    _same(vg, vt)
    _same(sfg.v, sft.v)
    _same(sfg.i, sft.i)
    ((vt * torch.tensor(W)).sum() + sft.i.sum()).backward()
    (gp.sum(vg * _g(W, device)) + gp.sum(sfg.i)).backward()
    _same(xg.grad, xt.grad, GTOL)
    if explicit:
        _same(st_g.v.grad, st_t.v.grad, GTOL)
        _same(st_g.i.grad, st_t.i.grad, GTOL)
    # the cell, step by step, and record_states
    cell_t, cell_g = nt.LICell(p_t, dt=0.002), gn.LICell(p_g, dt=0.002)
    s_t = s_g = None
    for t in range(T):
        ot, s_t = cell_t(_t(X[t]), s_t)
        og, s_g = cell_g(_g(X[t], device), s_g)
        _same(og, ot)
        _same(s_g.i, s_t.i)
    vr_t, sr_t = nt.LI(p_t, dt=0.002, record_states=True)(_t(X))
    vr, sr = gn.LI(p_g, dt=0.002, record_states=True, fused=fused)(_g(X, device))
    _same(vr, vr_t)
    _same(sr.v, sr_t.v)
    _same(sr.i, sr_t.i)


def test_li_linear_cell(device):
    ref = nt.LILinearCell(N, 3)
    mine = gn.LILinearCell(N, 3).to(device)
    mine.load_state_dict({"input_weights": ref.input_weights.detach().numpy()})
    s_t = s_g = None
    for t in range(3):
        vt, s_t = ref(_t(X[t]), s_t)
        vg, s_g = mine(_g(X[t], device), s_g)
        _same(vg, vt)


@pytest.mark.parametrize("reset", ["value", "subtract"])
@pytest.mark.parametrize("fused", [True, False])
def test_lif_box(device, monkeypatch, reset, fused):
    calls = _count_fused(monkeypatch)
    kw_t = {"reset_method": _n_reset_subtract} if reset == "subtract" else {}
    kw_g = {"reset_method": gn.reset_subtract} if reset == "subtract" else {}
    p_t = nt.LIFBoxParameters(v_leak=torch.tensor(0.1), v_reset=torch.tensor(-0.3), **kw_t)
    p_g = gn.LIFBoxParameters(v_leak=0.1, v_reset=-0.3, **kw_g)
    xs = X * 1.5
    xt, xg = _t(xs, True), _g(xs, device, True)
    cell = nt.LIFBoxCell(p_t, dt=0.001)
    s, zs, vs = None, [], []
    for t in range(T):
        z, s = cell(xt[t], s)
        zs.append(z)
        vs.append(s.v)
    zt, vt = torch.stack(zs), torch.stack(vs)
    zg, sg = gn.LIFBox(p_g, fused=fused, record_states=True)(xg)
    assert not calls   # record_states: per step
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    assert 0 < float(zt.detach().sum()) < zt.numel()
    _same(sg.v, vt)
    ((zt * torch.tensor(W)).sum() + 0.3 * vt[-1].sum()).backward()
    zg2, sg2 = gn.LIFBox(p_g, fused=fused)(xg)
    assert len(calls) == int(fused)
    np.testing.assert_array_equal(_np(zg2), _np(zg))
    (gp.sum(zg2 * _g(W, device)) + 0.3 * gp.sum(sg2.v)).backward()
    _same(xg.grad, xt.grad, GTOL)
    # the cell itself, one step
    zc, sc = gn.LIFBoxCell(p_g)(_g(xs[0], device))
    np.testing.assert_array_equal(_np(zc), zs[0].detach().numpy())
    _same(sc.v, vs[0])


def test_functional_forms(device):
    p_t, p_g = nt.LIFParameters(), gn.LIFParameters()
    v0 = R.standard_normal((B, N)).astype(np.float32) + 0.5
    i0 = R.standard_normal((B, N)).astype(np.float32) * 5
    for dt in (0.001, 0.003):
        zt, st = nt.lif_feed_forward_step(_t(X[0]), nt.LIFFeedForwardState(_t(v0), _t(i0)), p_t,
                                          dt)
        zg, sg = gn.lif_feed_forward_step(_g(X[0], device), gn.LIFFeedForwardState(
            _g(v0, device), _g(i0, device)), p_g, dt)
        np.testing.assert_array_equal(_np(zg), zt.numpy())
        _same(sg.v, st.v)
        _same(sg.i, st.i)
        zt, st = lif_ff_integral(_t(X), nt.LIFFeedForwardState(_t(v0), _t(i0)),
                                              p_t, dt)
        zg, sg = gn.lif_feed_forward_integral(_g(X, device), gn.LIFFeedForwardState(
            _g(v0, device), _g(i0, device)), p_g, dt)
        np.testing.assert_array_equal(_np(zg), zt.numpy())
        _same(sg.v, st.v)
        vt, lt = nt.li_feed_forward_step(_t(X[0]), nt.LIState(_t(v0), _t(i0)), nt.LIParameters(),
                                         dt)
        vg, lg = gn.li_feed_forward_step(_g(X[0], device), gn.LIState(_g(v0, device),
                                         _g(i0, device)), gn.LIParameters(), dt)
        _same(vg, vt)
        _same(lg.i, lt.i)
        w_in = R.standard_normal((3, N)).astype(np.float32) * 3
        w_rec = R.standard_normal((3, 3)).astype(np.float32)
        z3 = np.array([[1, 0, 1], [0, 1, 0]], dtype=np.float32)
        s3 = [R.standard_normal((B, 3)).astype(np.float32) for _ in range(2)]
        zt, st = nt.lif_step(_t(X[0]), nt.LIFState(_t(z3), _t(s3[0]), _t(s3[1])), _t(w_in),
                             _t(w_rec), p_t, dt)
        zg, sg = gn.lif_step(_g(X[0], device), gn.LIFState(_g(z3, device), _g(s3[0], device),
                             _g(s3[1], device)), _g(w_in, device), _g(w_rec, device), p_g, dt)
        np.testing.assert_array_equal(_np(zg), zt.numpy())
        _same(sg.v, st.v)
        _same(sg.i, st.i)
        vt, lt = nt.li_step(_t(X[0]), nt.LIState(_t(s3[0]), _t(s3[1])), _t(w_in),
                            nt.LIParameters(), dt)
        vg, lg = gn.li_step(_g(X[0], device), gn.LIState(_g(s3[0], device), _g(s3[1], device)),
                            _g(w_in, device), gn.LIParameters(), dt)
        _same(vg, vt)


def _seq_pair(device):
    torch.manual_seed(3)
    ref = nt.SequentialState(torch.nn.Linear(N, 6), nt.LIF(), torch.nn.Linear(6, 3), nt.LI())
    mine = gn.SequentialState(nn.Linear(N, 6), gn.LIF(), nn.Linear(6, 3), gn.LI()).to(device)
    sd = {k: v.detach().numpy() * (3.0 if k == "0.weight" else 1.0)
          for k, v in ref.state_dict().items()}
    ref.load_state_dict({k: torch.tensor(v) for k, v in sd.items()})
    mine.load_state_dict(sd)
    return ref, mine


def test_sequential_state(device):
    ref, mine = _seq_pair(device)
    assert mine.stateful_layers == ref.stateful_layers == [False, True, False, True]
    xt, xg = _t(X, True), _g(X, device, True)
    ot, st = ref(xt)
    og, sg = mine(xg)
    _same(og, ot)
    assert isinstance(sg[1], gn.LIFFeedForwardState) and sg[0] is None
    _same(sg[1].v, st[1].v)
    _same(sg[3].i, st[3].i)
    # the state threaded into a second call
    ot2, _ = ref(xt, st)
    og2, _ = mine(xg, sg)
    _same(og2, ot2)
    # gradients of the Linear layers and the input through both calls
    ref2, mine2 = _seq_pair(device)
    xt, xg = _t(X, True), _g(X, device, True)
    o1, s1 = ref2(xt)
    o2, _ = ref2(xt, s1)
    wr = R.standard_normal((T, B, 3)).astype(np.float32)
    ((o1 + o2) * torch.tensor(wr)).sum().backward()
    g1, h1 = mine2(xg)
    g2, _ = mine2(xg, h1)
    gp.sum((g1 + g2) * _g(wr, device)).backward()
    _same(xg.grad, xt.grad, GTOL)
    for k in ("0.weight", "0.bias", "2.weight", "2.bias"):
        a, b = k.split(".")
        _same(getattr(mine2[int(a)], b).grad, getattr(ref2[int(a)], b).grad, GTOL)
    # return_hidden: every module's output
    hid, _ = gn.SequentialState(*list(mine2), return_hidden=True)(_g(X, device))
    assert len(hid) == 4


def test_sequential_state_of_cells(device):
    """Norse's per-step idiom: cells in a SequentialState, the state list passed back; hooks
    on the stateful modules; grilly's own neurons count as stateless (they keep their state)."""
    torch.manual_seed(4)
    ref = nt.SequentialState(torch.nn.Linear(N, 5), nt.LIFCell(), torch.nn.Linear(5, 2),
                             nt.LICell())
    mine = gn.SequentialState(nn.Linear(N, 5), gn.LIFCell(), nn.Linear(5, 2),
                              gn.LICell()).to(device)
    sd = {k: v.detach().numpy() * 3 for k, v in ref.state_dict().items()}
    ref.load_state_dict({k: torch.tensor(v) for k, v in sd.items()})
    mine.load_state_dict(sd)
    seen = []
    mine.register_forward_state_hooks(lambda m, i, o: seen.append(type(m).__name__))
    with pytest.raises(ValueError, match="already registered"):
        mine.register_forward_state_hooks(lambda m, i, o: None)
    xt, xg = _t(X, True), _g(X, device, True)
    s_t = s_g = None
    outs_t, outs_g = [], []
    for t in range(T):
        o, s_t = ref(xt[t], s_t)
        outs_t.append(o)
        o, s_g = mine(xg[t], s_g)
        outs_g.append(o)
    assert seen[:2] == ["LIFCell", "LICell"] and len(seen) == 2 * T
    mine.remove_forward_state_hooks()
    ot, og = torch.stack(outs_t), gp.stack(outs_g)
    _same(og, ot)
    _same(s_g[1].v, s_t[1].v)
    wr = R.standard_normal(tuple(ot.shape)).astype(np.float32)
    (ot * torch.tensor(wr)).sum().backward()
    gp.sum(og * _g(wr, device)).backward()
    _same(xg.grad, xt.grad, GTOL)
    _same(mine[0].weight.grad, ref[0].weight.grad, GTOL)
    from grilly.nn import snn
    assert gn.SequentialState(nn.Linear(N, N), snn.LIF(0.9, step_mode="m"),
                              gn.LIF()).stateful_layers == [False, False, True]


def test_bptt_training_tracks_norse(device):
    """Ten steps of SGD on a Linear-LIF-Linear-LI net: the losses follow Norse's."""
    ref, mine = _seq_pair(device)
    rng = np.random.default_rng(9)
    x = (rng.random((T, B, N)) < 0.6).astype(np.float32) * 2
    target = rng.standard_normal((B, 3)).astype(np.float32) * 0.1
    opt_t = torch.optim.SGD(ref.parameters(), lr=0.5)
    opt_g = gp.optim.SGD(mine.parameters(), lr=0.5)
    losses_t, losses_g = [], []
    for _ in range(10):
        opt_t.zero_grad()
        out, _ = ref(_t(x))
        lt = ((out.amax(0) - torch.tensor(target)) ** 2).mean()
        lt.backward()
        opt_t.step()
        opt_g.zero_grad()
        og, _ = mine(_g(x, device))
        lg = gp.mean(gp.square(gp.max(og, axis=0) - _g(target, device)))
        lg.backward()
        opt_g.step()
        losses_t.append(lt.item())
        losses_g.append(float(lg))
    np.testing.assert_allclose(losses_g, losses_t, rtol=1e-4, atol=1e-7)
    assert losses_t[-1] < losses_t[0]


def test_errors(device):
    x = _g(X[0], device)
    bad_v = gn.LIFFeedForwardState(_g(np.zeros((B, N + 1)), device), _g(np.zeros((B, N)), device))
    with pytest.raises(ValueError, match=r"LIFCell: state\.v has shape"):
        gn.LIFCell()(x, bad_v)
    with pytest.raises(ValueError, match=r"lif_feed_forward_step: state\.v"):
        gn.lif_feed_forward_step(x, bad_v)
    bad_i = gn.LIFFeedForwardState(_g(np.zeros((B, N)), device), _g(np.zeros((3, N)), device))
    with pytest.raises(ValueError, match=r"LIF: state\.i has shape"):
        gn.LIF()(_g(X, device), bad_i)
    with pytest.raises(ValueError, match=r"LI: state\.v has shape"):
        gn.LI()(_g(X, device), gn.LIState(_g(np.zeros((N, 2)), device),
                                          _g(np.zeros((B, N)), device)))
    z3 = _g(np.zeros((B, 3)), device)
    with pytest.raises(ValueError, match=r"LIFRecurrentCell: state\.z has shape"):
        gn.LIFRecurrentCell(N, 2).to(device)(x, gn.LIFState(z3, z3, z3))
    with pytest.raises(ValueError, match=r"LIFRecurrent: input has 3 features"):
        gn.LIFRecurrent(N, 2).to(device)(_g(X[..., :3], device))
    with pytest.raises(TypeError, match=r"LIFCell: state must be a LIFFeedForwardState"):
        gn.LIFCell()(x, (x,))
    with pytest.raises(ValueError, match="LIFCell: method must be one of"):
        gn.LIFCell(gn.LIFParameters(method="sup"))
    with pytest.raises(NotImplementedError, match="adjoint"):
        gn.LIF(gn.LIFParameters(method="adjoint"))
    with pytest.raises(ValueError, match="LIF: dt must be"):
        gn.LIF(dt=0.0)
    with pytest.raises(TypeError, match="LIF: p must be a LIFParameters"):
        gn.LIF(gn.LIParameters())
    with pytest.raises(TypeError, match="LIF: p.tau_mem_inv must be a float or an Array"):
        gn.LIF(gn.LIFParameters(tau_mem_inv="fast"))(_g(X, device))
    with pytest.raises(ValueError, match=r"LIF: p\.v_th has shape \(3,\), which does not"):
        gn.LIF(gn.LIFParameters(v_th=[1.0, 1.0, 1.0]))(_g(X, device))
    with pytest.raises(ValueError, match=r"lif_step: recurrent_weights must be \(2, 2\)"):
        gn.lif_step(x, gn.LIFState(z3, z3, z3), _g(np.ones((2, N)), device),
                    _g(np.ones((3, 3)), device))
    with pytest.raises(ValueError, match="LIF: input_tensor must be"):
        gn.LIF()(_g(np.zeros((0, B, N)), device))
    with pytest.raises(ValueError, match="SequentialState: state must be None or a list of 2"):
        gn.SequentialState(nn.Linear(N, N), gn.LIF())(_g(X, device), [None])
    with pytest.raises(TypeError, match="LIF: p.tau_mem_inv is a torch tensor that requires"):
        gn.LIF(gn.LIFParameters(tau_mem_inv=torch.nn.Parameter(torch.tensor(100.0))))(
            _g(X, device))
    with pytest.raises(TypeError, match="LIFBoxCell: p.reset_method"):
        gn.LIFBoxCell(gn.LIFBoxParameters(reset_method=_n_reset_subtract))(x)
