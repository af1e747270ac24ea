"""Norse 1.1's receptive fields in grilly.nn.snn.norse, against Norse itself: the functional
kernels (gaussian_kernel, covariance_matrix, derive_kernel, spatial_receptive_field, the fields
of (n, 5) parameter rows, spatial_parameters, temporal_scale_distribution) and the modules
(SpatialReceptiveField2d, Sampled-/ParameterizedSpatialReceptiveField2d,
TemporalReceptiveField): values and gradients, and SGD steps through the learnable fields."""
import numpy as np
import pytest

import grilly as gp

torch = pytest.importorskip("torch")
nt = pytest.importorskip("norse.torch")
from norse.torch.functional import receptive_field as _nrf  # noqa: E402

import grilly.nn.snn.norse as gn  # noqa: E402

from norse_helpers import GTOL, STOL, _g, _np, _same, _t  # noqa: E402

VTOL = dict(rtol=1e-5, atol=1e-6)   # fields: float32 sums and exps
# Norse's rows: (scale, angle, ratio, dx, dy); derivatives up to 2, eccentric and round fields
ROWS = np.array([[1.0, 0.3, 0.5, 0, 0], [2.0, 1.0, 1.0, 1, 1], [1.5, -0.5, 2.0, 2, 0],
                 [0.8, 0.2, 1.5, 0, 1]], np.float32)


def _gsame(mine, ref):
    """A parameter's gradient: a sum over every kernel tap and output pixel, so its float32
    cancellation is measured against the gradient's largest entry."""
    r = ref.detach().numpy()
    np.testing.assert_allclose(_np(mine), r, rtol=1e-4, atol=max(1e-5, 1e-5 * np.abs(r).max()))


def _w(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_names_as_norse():
    for name in ("gaussian_kernel", "spatial_receptive_field",
                 "spatial_receptive_fields_with_derivatives", "SpatialReceptiveField2d",
                 "ParameterizedSpatialReceptiveField2d", "SampledSpatialReceptiveField2d",
                 "TemporalReceptiveField"):
        assert hasattr(nt, name) and hasattr(gn, name), name
    assert gn.functional.spatial_parameters is gn.spatial_parameters
    assert gn.module.TemporalReceptiveField is gn.TemporalReceptiveField


# ---- functional ------------------------------------------------------------------------------

def test_gaussian_kernel_and_covariance_as_norse(device):
    rng = np.random.default_rng(0)
    c = np.array([[2.0, 0.3], [0.5, 1.2]], np.float32)   # not symmetric: both off-diagonals
    ct, cg = _t(c, True), _g(c, device, True)
    kt, kg = _nrf.gaussian_kernel(7, ct, domain=3), gn.gaussian_kernel(7, cg, domain=3)
    _same(kg, kt, VTOL)
    w = _w(rng, (7, 7))
    (kt * _t(w)).sum().backward()
    gp.sum(kg * _g(w, device)).backward()
    _gsame(cg.grad, ct.grad)
    # covariance_matrix(sigma1, sigma2, phi), its gradients
    vt = [_t(v, True) for v in (1.3, 0.6, 0.4)]
    vg = [_g(v, device, True) for v in (1.3, 0.6, 0.4)]
    mt, mg = _nrf.covariance_matrix(*vt), gn.covariance_matrix(*vg)
    _same(mg, mt, VTOL)
    w = _w(rng, (2, 2))
    (mt * _t(w)).sum().backward()
    gp.sum(mg * _g(w, device)).backward()
    for a, b in zip(vg, vt):
        _gsame(a.grad, b.grad)


def test_derive_kernel_and_normalization_as_norse(device):
    rng = np.random.default_rng(1)
    k = _w(rng, (6, 5))
    kt, kg = _t(k, True), _g(k, device, True)
    dt_, dg = _nrf.derive_kernel(kt, torch.tensor(0.7)), gn.derive_kernel(kg, 0.7)
    _same(dg, dt_, VTOL)
    w = _w(rng, (6, 5))
    (dt_ * _t(w)).sum().backward()
    gp.sum(dg * _g(w, device)).backward()
    _same(kg.grad, kt.grad, GTOL)
    for dx, scale, gamma in ((1, 2.0, 1), (2, 1.5, 0.5), (0, 3.0, 0.75)):
        assert gn.calculate_normalization(dx, scale, gamma) == pytest.approx(
            _nrf.calculate_normalization(dx, scale, gamma))
    # several derivatives of one field at once
    f = np.abs(_w(rng, (7, 7)))
    ref = _nrf.derive_spatial_receptive_field(_t(f), 1.5, 0.3, [(0, 0), (1, 0), (1, 2)])
    _same(gn.derive_spatial_receptive_field(_g(f, device), 1.5, 0.3, [(0, 0), (1, 0), (1, 2)]),
          ref, VTOL)


@pytest.mark.parametrize("dx,dy", [(0, 0), (1, 0), (0, 1), (2, 1)])
def test_spatial_receptive_field_as_norse(device, dx, dy):
    rng = np.random.default_rng(dx + 3 * dy)
    vals = (1.7, 0.6, 0.7)   # scale, angle, ratio
    vt = [_t(v, True) for v in vals]
    vg = [_g(v, device, True) for v in vals]
    ft = _nrf.spatial_receptive_field(*vt, size=9, dx=dx, dy=dy, domain=4)
    fg = gn.spatial_receptive_field(*vg, size=9, dx=dx, dy=dy, domain=4)
    _same(fg, ft, VTOL)
    w = _w(rng, (9, 9))
    (ft * _t(w)).sum().backward()
    gp.sum(fg * _g(w, device)).backward()
    for a, b in zip(vg, vt):
        _gsame(a.grad, b.grad)
    # numbers work as well (float32, as Norse's)
    _same(gn.spatial_receptive_field(*vals, size=9, dx=dx, dy=dy, domain=4), ft, VTOL)


def test_spatial_receptive_fields_with_derivatives_as_norse(device):
    rng = np.random.default_rng(2)
    pt, pg = _t(ROWS, True), _g(ROWS, device, True)
    ft = _nrf.spatial_receptive_fields_with_derivatives(pt, 7, domain=3)
    fg = gn.spatial_receptive_fields_with_derivatives(pg, 7, domain=3)
    _same(fg, ft, VTOL)
    w = _w(rng, (4, 7, 7))
    (ft * _t(w)).sum().backward()
    gp.sum(fg * _g(w, device)).backward()
    _gsame(pg.grad, pt.grad)   # the derivative columns get zeros, as Norse's
    # the default domain (1)
    _same(gn.spatial_receptive_fields_with_derivatives(_g(ROWS, device), 5),
          _nrf.spatial_receptive_fields_with_derivatives(_t(ROWS), 5), VTOL)


@pytest.mark.parametrize("ratios,derivatives,replicas", [
    ([0.5, 1.0, 2.0], [(0, 0), (1, 0)], False), ([1.0, 0.5], 1, False),
    ([0.5, 1.0], 2, True), ([2.0], 0, False), ([1.0], [(1, 1)], False)])
def test_spatial_parameters_as_norse(device, ratios, derivatives, replicas):
    rng = np.random.default_rng(3)
    s, a, r = [1.0, 2.0], [0.0, 0.4], np.asarray(ratios, np.float32)
    tt = [_t(v, True) for v in (s, a, r)]
    tg = [_g(v, device, True) for v in (s, a, r)]
    pt = _nrf.spatial_parameters(*tt, derivatives, replicas)
    pg = gn.spatial_parameters(*tg, derivatives, replicas)
    _same(pg, pt, VTOL)
    w = _w(rng, tuple(pt.shape))
    (pt * _t(w)).sum().backward()
    gp.sum(pg * _g(w, device)).backward()
    for x, y in zip(tg, tt):
        _gsame(x.grad, y.grad)


def test_temporal_scale_distribution_as_norse():
    for args in ((4,), (3, 1, 8), (1, 2, 5), (1,), (5, 0.5, None, 1.2)):
        np.testing.assert_allclose(_np(gn.temporal_scale_distribution(*args)),
                                   _nrf.temporal_scale_distribution(*args).numpy(), rtol=1e-6)


def test_functional_bad_input():
    with pytest.raises(ValueError, match="gaussian_kernel: c must be a 2x2"):
        gn.gaussian_kernel(5, gp.ones((3, 3)))
    with pytest.raises(ValueError, match="spatial_receptive_field: size"):
        gn.spatial_receptive_field(1.0, 0.0, 1.0, 1)
    with pytest.raises(ValueError, match="dx must be >= 0"):
        gn.spatial_receptive_field(1.0, 0.0, 1.0, 5, dx=-1)
    with pytest.raises(ValueError, match=r"\(n, 5\) rows"):
        gn.spatial_receptive_fields_with_derivatives(gp.ones((3, 4)), 5)
    with pytest.raises(ValueError, match="derivatives must be an int or a list"):
        gn.spatial_parameters(gp.ones(2), gp.ones(2), gp.ones(2), "x")
    with pytest.raises(TypeError, match="spatial_parameters: expected a grilly Array"):
        gn.spatial_parameters([1.0], gp.ones(2), gp.ones(2), 0)
    with pytest.raises(ValueError, match="n_scales"):
        gn.temporal_scale_distribution(0)


# ---- modules ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"padding": 1, "stride": 2}])
def test_spatial_receptive_field_2d_as_norse(device, kw):
    """Forward, the gradients of the input and the learnable rows, and two SGD steps (the
    fields recomputed from the updated rows)."""
    rng = np.random.default_rng(4)
    x = _w(rng, (2, 2, 8, 8))
    ref = nt.SpatialReceptiveField2d(2, 5, _t(ROWS), domain=3, **kw)
    mine = gn.SpatialReceptiveField2d(2, 5, _g(ROWS, device), domain=3, **kw)
    assert list(mine.state_dict()) == list(ref.state_dict()) == ["rf_parameters"]
    assert tuple(mine.weights.shape) == tuple(ref.weights.shape) == (4, 2, 5, 5)
    assert mine.out_channels == ref.out_channels == 4
    _same(mine.weights, ref.weights, VTOL)
    opt_t = torch.optim.SGD(ref.parameters(), lr=0.05)
    opt_g = gp.optim.SGD(mine.parameters(), lr=0.05)
    for _ in range(2):
        xt, xg = _t(x, True), _g(x, device, True)
        yt, yg = ref(xt), mine(xg)
        _same(yg, yt, STOL)
        w = _w(rng, tuple(yt.shape))
        (yt * _t(w)).sum().backward()
        gp.sum(yg * _g(w, device)).backward()
        _same(xg.grad, xt.grad, GTOL)
        _gsame(mine.rf_parameters.grad, ref.rf_parameters.grad)
        opt_t.step()
        opt_g.step()
        opt_t.zero_grad()
        opt_g.zero_grad()
    _same(mine.rf_parameters, ref.rf_parameters, VTOL)


def test_spatial_receptive_field_2d_fixed_and_separate_channels(device):
    rng = np.random.default_rng(5)
    x = _w(rng, (1, 3, 6, 6))
    # fixed fields: not a parameter (Norse keeps them as a plain tensor)
    ref = nt.SpatialReceptiveField2d(3, 3, _t(ROWS[:2]), domain=2, optimize_fields=False)
    mine = gn.SpatialReceptiveField2d(3, 3, _g(ROWS[:2], device), domain=2,
                                      optimize_fields=False)
    assert list(mine.state_dict()) == list(ref.state_dict()) == []
    xt, xg = _t(x, True), _g(x, device, True)
    yt, yg = ref(xt), mine(xg)
    _same(yg, yt, STOL)
    w = _w(rng, tuple(yt.shape))
    (yt * _t(w)).sum().backward()
    gp.sum(yg * _g(w, device)).backward()
    _same(xg.grad, xt.grad, GTOL)
    # aggregate=False: each field on each input channel alone (out channel i n + f). Norse
    # 1.1's constructor fails there (it reads self.fields); its own weight layout, reached by
    # giving it that attribute, is the reference
    ref.aggregate, ref.fields, ref.has_updated = False, ref.weights, True
    ref.rf_parameters_previous = torch.zeros_like(ref.rf_parameters)
    ref._update_weights()
    mine = gn.SpatialReceptiveField2d(3, 3, _g(ROWS[:2], device), aggregate=False, domain=2,
                                      padding=1)
    assert mine.out_channels == 6 and tuple(mine.weights.shape) == (6, 3, 3, 3)
    _same(mine.weights, ref.weights, VTOL)
    pt = _t(ROWS[:2], True)
    wt = _nrf.spatial_receptive_fields_with_derivatives(pt, 3, domain=2)
    wt = (torch.eye(3).reshape(3, 1, 3, 1, 1) * wt.reshape(1, 2, 1, 3, 3)).reshape(6, 3, 3, 3)
    assert torch.equal(wt.detach(), ref.weights)
    xt, xg = _t(x, True), _g(x, device, True)
    yt, yg = torch.nn.functional.conv2d(xt, wt, padding=1), mine(xg)
    _same(yg, yt, STOL)
    w = _w(rng, tuple(yt.shape))
    (yt * _t(w)).sum().backward()
    gp.sum(yg * _g(w, device)).backward()
    _same(xg.grad, xt.grad, GTOL)
    _gsame(mine.rf_parameters.grad, pt.grad)


@pytest.mark.parametrize("kind", ["Sampled", "Parameterized"])
def test_sampled_and_parameterized_as_norse(device, kind):
    rng = np.random.default_rng(6)
    s, a, r = [1.0, 2.0], [0.0, 0.7], [0.5, 1.0]
    deriv = [(0, 0), (1, 0)]
    x = _w(rng, (1, 2, 7, 7))
    cls_t = getattr(nt, kind + "SpatialReceptiveField2d")
    cls_g = getattr(gn, kind + "SpatialReceptiveField2d")
    ref = cls_t(2, 5, *(_t(v) for v in (s, a, r)), deriv, optimize_angles=False, domain=3,
                padding=2)
    mine = cls_g(2, 5, *(_g(v, device) for v in (s, a, r)), deriv, optimize_angles=False,
                 domain=3, padding=2)
    assert list(mine.state_dict()) == list(ref.state_dict()) == ["scales", "ratios"]
    opt_t = torch.optim.SGD(ref.parameters(), lr=0.05)
    opt_g = gp.optim.SGD(mine.parameters(), lr=0.05)
    for _ in range(2):
        xt, xg = _t(x, True), _g(x, device, True)
        yt, yg = ref(xt), mine(xg)
        _same(yg, yt, STOL)
        w = _w(rng, tuple(yt.shape))
        (yt * _t(w)).sum().backward()
        gp.sum(yg * _g(w, device)).backward()
        _same(xg.grad, xt.grad, GTOL)
        _gsame(mine.scales.grad, ref.scales.grad)
        _gsame(mine.ratios.grad, ref.ratios.grad)
        opt_t.step()
        opt_g.step()
        opt_t.zero_grad()
        opt_g.zero_grad()


def test_modules_move_with_to(device):
    """Built on the CPU, moved with .to(device): the fixed rows and generators go along."""
    rng = np.random.default_rng(8)
    x = _w(rng, (1, 1, 6, 6))
    s, a, r = [1.0, 2.0], [0.0, 0.7], [0.5, 1.0]
    for kind, opt in (("Sampled", False), ("Parameterized", True)):
        flags = dict(optimize_scales=opt, optimize_angles=False, optimize_ratios=False)
        ref = getattr(nt, kind + "SpatialReceptiveField2d")(1, 3, *(_t(v) for v in (s, a, r)),
                                                             1, domain=2, **flags)
        mine = getattr(gn, kind + "SpatialReceptiveField2d")(
            1, 3, *(gp.asarray(np.float32(v)) for v in (s, a, r)), 1, domain=2, **flags)
        _same(mine.to(device)(_g(x, device)), ref(_t(x)), STOL)
    ref = nt.SpatialReceptiveField2d(1, 3, _t(ROWS), domain=2, optimize_fields=False)
    mine = gn.SpatialReceptiveField2d(1, 3, gp.asarray(ROWS), domain=2, optimize_fields=False)
    _same(mine.to(device)(_g(x, device)), ref(_t(x)), STOL)


def test_temporal_receptive_field_as_norse(device):
    rng = np.random.default_rng(7)
    T, shape = 4, (2, 3)
    x = _w(rng, (T, 2, *shape))
    ref = nt.TemporalReceptiveField(shape, n_scales=3, dt=0.01)
    mine = gn.TemporalReceptiveField(shape, n_scales=3, dt=0.01).to(device)
    assert list(mine.state_dict()) == list(ref.state_dict()) == ["ps"]
    _same(mine.ps, ref.ps, VTOL)
    xt, xg = _t(x, True), _g(x, device, True)
    st = sg = None
    lt = lg = 0.0
    for k in range(T):
        yt, st = ref(xt[k], st)
        yg, sg = mine(xg[k], sg)
        assert tuple(yg.shape) == tuple(yt.shape) == (2, 3, *shape)
        _same(yg, yt, STOL)
        w = _w(rng, tuple(yt.shape))
        lt = lt + (yt * _t(w)).sum()
        lg = lg + gp.sum(yg * _g(w, device))
    lt.backward()
    lg.backward()
    _same(xg.grad, xt.grad, GTOL)
    _gsame(mine.ps.grad, ref.ps.grad)
    # hard-coded time constants
    tc = np.array([[[50.0]], [[20.0]]], np.float32)
    ref = nt.TemporalReceptiveField((1, 3), n_scales=2, time_constants=_t(tc))
    mine = gn.TemporalReceptiveField((1, 3), n_scales=2, time_constants=_g(tc, device))
    _same(mine(_g(x[0, :, :1], device))[0], ref(_t(x[0, :, :1]))[0], STOL)


def test_modules_bad_input():
    rows = gp.asarray(ROWS)
    with pytest.raises(TypeError, match="SpatialReceptiveField2d: unexpected keyword argument "
                                        "'kernel_size'"):
        gn.SpatialReceptiveField2d(1, 5, rows, kernel_size=3)
    with pytest.raises(ValueError, match="SpatialReceptiveField2d: the parameters must be"):
        gn.SpatialReceptiveField2d(1, 5, gp.ones((2, 3)))
    with pytest.raises(ValueError, match="SpatialReceptiveField2d: in_channels"):
        gn.SpatialReceptiveField2d(0, 5, rows)
    with pytest.raises(TypeError, match="SpatialReceptiveField2d: expected a grilly Array"):
        gn.SpatialReceptiveField2d(1, 5, rows)(np.ones((1, 1, 5, 5), np.float32))
    with pytest.raises(ValueError, match="TemporalReceptiveField: shape"):
        gn.TemporalReceptiveField((0, 2))
    with pytest.raises(ValueError, match="TemporalReceptiveField: x must have at least 2"):
        gn.TemporalReceptiveField((2, 3))(gp.ones(3))
