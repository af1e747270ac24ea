"""grilly.special against mpmath (values, float32 and float64, in ulp of the correctly rounded
result) and torch.special / torch on float64 (special values, gradients), on every device:
gammaln, digamma, polygamma, multigammaln, erfinv, erfcx, ndtr, log_ndtr, ndtri, i0, i0e, i1,
i1e, k0, k1, k0e, k1e, zeta, gammainc, gammaincc, xlogy, xlog1py, logit, entr and the aliases;
the top-level names (gp.lgamma, gp.erf, gp.i0, gp.igamma...) and the methods (x.lgamma(),
x.polygamma(n), x.erfinv_()); torch's window functions and NumPy's kaiser."""
import functools
import math
import zlib

import numpy as np
import pytest

import grilly as gp
from grilly import special as S

mp = pytest.importorskip("mpmath")
torch = pytest.importorskip("torch")
mp.mp.dps = 60


def _ulp(got, ref: np.ndarray, dt) -> float:
    got = np.asarray(got, np.float64)
    sp = np.spacing(np.abs(ref).astype(dt)).astype(np.float64)
    return float(np.max(np.abs(got - ref) / sp))


def _pts(rng, lo, hi, n, dt):
    return rng.uniform(lo, hi, n).astype(dt)


_LOGGAMMA = lambda v: mp.log(abs(mp.gamma(v)))   # noqa: E731
# (name, grilly fn, mpmath fn, ranges, max ulp float32 / float64): ranges avoid the negative
# zeros of lgamma and digamma, where reflection leaves an absolute (not relative) error
_CASES = [
    ("gammaln", S.gammaln, _LOGGAMMA, [(1e-4, 0.5), (0.5, 2.5), (2.5, 12), (12, 1e5),
                                       (-0.9, -0.1), (-1.9, -1.1)], (4, 8)),
    ("digamma", S.digamma, mp.digamma, [(1e-3, 1.2), (1.2, 1.8), (1.8, 12), (12, 1e5),
                                        (-0.4, -0.1)], (5, 8)),   # (f32: 4 at 1.2, psi(2.2) - 1/1.2)
    ("polygamma1", lambda x: S.polygamma(1, x), lambda v: mp.polygamma(1, v),
     [(1e-2, 3), (3, 50), (-0.9, -0.1)], (6, 8)),
    ("polygamma3", lambda x: S.polygamma(3, x), lambda v: mp.polygamma(3, v),
     [(1e-2, 3), (3, 50)], (8, 12)),
    ("erfinv", S.erfinv, mp.erfinv, [(-0.999, 0.999), (0.999, 1.0), (-1e-6, 1e-6)], (3, 3)),
    ("erfcx", S.erfcx, lambda v: mp.exp(v * v) * mp.erfc(v),
     [(-9, -1), (-1, 2), (2, 8.8), (8.8, 9.2), (9.2, 30), (25, 27), (30, 1e6)], (4, 4)),
    ("ndtr", S.ndtr, mp.ncdf, [(-12, -4), (-4, 4)], (3, 3)),
    ("log_ndtr", S.log_ndtr, lambda v: mp.log(mp.ncdf(v)), [(-30, -8), (-8, 0), (0, 6)],
     (3, 3)),
    ("k0", S.k0, lambda v: mp.besselk(0, v), [(1e-6, 0.01), (0.01, 1.1), (1.1, 5), (5, 80)],
     (4, 4)),
    ("k1", S.k1, lambda v: mp.besselk(1, v), [(1e-6, 0.01), (0.01, 1.1), (1.1, 5), (5, 80)],
     (4, 4)),
    ("k0e", S.k0e, lambda v: mp.besselk(0, v) * mp.exp(v), [(1e-3, 1.1), (1.1, 9), (9, 700)],
     (4, 4)),
    ("k1e", S.k1e, lambda v: mp.besselk(1, v) * mp.exp(v), [(1e-3, 1.1), (1.1, 9), (9, 700)],
     (4, 4)),
    ("i0", S.i0, lambda v: mp.besseli(0, v), [(-6, 6), (6, 40), (40, 80)], (4, 4)),
    ("i1", S.i1, lambda v: mp.besseli(1, v), [(-6, 6), (6, 40), (-80, -40)], (4, 4)),
    ("i0e", S.i0e, lambda v: mp.besseli(0, v) * mp.exp(-abs(v)), [(-6, 6), (6, 40), (40, 800)],
     (4, 4)),
    ("i1e", S.i1e, lambda v: mp.besseli(1, v) * mp.exp(-abs(v)), [(-6, 6), (-40, -6),
                                                                  (40, 800)], (4, 4)),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_values_within_ulp_of_mpmath(device, case, dt):
    name, fn, ref_fn, ranges, bounds = case
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x = np.concatenate([_pts(rng, lo, hi, 40, dt) for lo, hi in ranges])
    if dt == np.float32 and name == "log_ndtr":
        x = x[x > -12]
    ref = np.array([float(ref_fn(mp.mpf(float(v)))) for v in x])
    got = fn(gp.asarray(x, device=device))
    assert got.dtype == (gp.float32 if dt == np.float32 else gp.float64)
    assert _ulp(got, ref, dt) <= bounds[dt == np.float64]


def test_ndtri_far_tails_within_ulp(device):
    rng = np.random.default_rng(3)
    for dt, top in ((np.float64, 300), (np.float32, 37)):
        p = (10.0 ** -rng.uniform(1, top, 30)).astype(dt)
        p = np.concatenate([p, rng.uniform(0, 1, 30).astype(dt)])
        got = np.asarray(S.ndtri(gp.asarray(p, device=device)), np.float64)
        # the quantile solves log ncdf(t) = log p (mpmath's erfinv loses 1 - 2p below 1e-20)
        ref = np.array([float(mp.findroot(lambda t: mp.log(mp.ncdf(t)) - mp.log(mp.mpf(float(v))),
                                          float(np.asarray(torch.special.ndtri(
                                              torch.tensor(float(v), dtype=torch.float64))))))
                        for v in p])
        assert _ulp(got, ref, dt) <= 3


_SPECIAL_VALUES = [0.0, -0.0, 1.0, 2.0, -1.0, -2.0, -0.5, 0.5, math.inf, -math.inf, math.nan]


def _zeta_ref(s: float, q: float):
    """Hurwitz zeta by Euler-Maclaurin at 60 digits (mpmath's zeta loses digits at large q:
    at q = 8190 it was 1e-12 off at 40 digits)."""
    with mp.workdps(60):
        s, q = mp.mpf(s), mp.mpf(q)
        w = q + 60
        tot = mp.fsum((q + k) ** -s for k in range(60)) + w ** (1 - s) / (s - 1) + w ** -s / 2
        return tot + mp.fsum(mp.bernoulli(2 * j) / mp.factorial(2 * j) * mp.rf(s, 2 * j - 1)
                             * w ** (-s - 2 * j + 1) for j in range(1, 31))


@functools.lru_cache(maxsize=None)
def _zeta_points(dt):
    """(s, q, reference) in dtype ``dt``; computed once for every device."""
    rng = np.random.default_rng(11)
    boxes = [((1.001, 3), (1e-3, 1)), ((1.001, 3), (1, 50)), ((3, 30), (0.01, 2)),
             ((3, 60), (2, 1e4)), ((60, 200), (1, 30))]
    s = np.concatenate([rng.uniform(a, b, 25) for (a, b), _ in boxes]).astype(dt)
    q = np.concatenate([rng.uniform(a, b, 25) for _, (a, b) in boxes]).astype(dt)
    return s, q, np.array([float(_zeta_ref(float(a), float(b))) for a, b in zip(s, q)])


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_zeta_within_ulp(device, dt):
    s, q, ref = _zeta_points(dt)
    tiny, huge = (1e-37, 3e38) if dt == np.float32 else (1e-300, 1e300)
    keep = (np.abs(ref) > tiny) & (np.abs(ref) < huge)
    got = S.zeta(gp.asarray(s, device=device), gp.asarray(q, device=device))
    assert got.dtype == (gp.float32 if dt == np.float32 else gp.float64)
    assert _ulp(np.asarray(got)[keep], ref[keep], dt) <= 4


def test_zeta_special_values_scalars_and_gradient(device):
    s = np.array([1.0, 0.5, 2.0, 2.0, 2.0, 2.0, 3.0, 2.5, math.inf, math.inf, 2.0, math.nan])
    q = np.array([1.0, 1.0, 0.0, -1.0, -1.5, 1e-30, -2.5, -2.5, 1.0, 0.5, 1.0, 1.0])
    got = np.asarray(S.zeta(gp.asarray(s, device=device), gp.asarray(q, device=device)))
    ref = torch.special.zeta(torch.tensor(s), torch.tensor(q)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-13)   # NaN and inf where torch has them
    # q = inf: the limit 0 (torch: NaN); a Python number for either argument, as torch
    assert float(S.zeta(gp.asarray([2.0], device=device), math.inf)[0]) == 0.0
    np.testing.assert_allclose(np.asarray(S.zeta(3.0, gp.asarray([1.0, 2.0], device=device))),
                               torch.special.zeta(3.0, torch.tensor([1.0, 2.0])).numpy(),
                               rtol=1e-6)
    qg = gp.asarray([0.5, 1.0, 7.0], device=device, dtype=gp.float64, requires_grad=True)
    S.zeta(gp.asarray([2.5, 3.0, 4.0], device=device, dtype=gp.float64), qg).sum().backward()
    want = [-a * float(_zeta_ref(a + 1, b)) for a, b in ((2.5, 0.5), (3.0, 1.0), (4.0, 7.0))]
    np.testing.assert_allclose(np.asarray(qg.grad), want, rtol=1e-13)
    sg = gp.asarray([2.5], device=device, dtype=gp.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="zeta"):
        S.zeta(sg, gp.asarray([1.0], device=device, dtype=gp.float64)).sum().backward()


@functools.lru_cache(maxsize=None)
def _igamma_points(dt):
    """(a, x, P, Q) over the regions (series, continued fraction, small a, Temme), in ``dt``."""
    rng = np.random.default_rng(5)
    a = np.exp(rng.uniform(math.log(1e-3), math.log(1e4), 70))
    x = a * np.exp(rng.uniform(-2.5, 1.2, 70))
    a = np.concatenate([a, [0.3, 0.05, 0.9, 1.0, 3.0, 25.0, 500.0, 500.0]]).astype(dt)
    x = np.concatenate([x, [1.05, 0.5, 1.2, 1.0, 3.0, 30.0, 500.0, 650.0]]).astype(dt)
    p = [float(mp.gammainc(mp.mpf(float(u)), 0, mp.mpf(float(v)), regularized=True))
         for u, v in zip(a, x)]
    q = [float(mp.gammainc(mp.mpf(float(u)), mp.mpf(float(v)), mp.inf, regularized=True))
         for u, v in zip(a, x)]
    return a, x, np.array(p), np.array(q)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_gammainc_gammaincc_within_ulp(device, dt):
    """Within 8 ulp times the sensitivity 1 + |a log(x/a) - (x - a)| (the exponent of the
    prefactor x^a e^-x / Gamma(a): an input's rounding moves the result by that much)."""
    with mp.workdps(30):
        a, x, p, q = _igamma_points(dt)
    ga, gx = gp.asarray(a, device=device), gp.asarray(x, device=device)
    tiny = 1e-37 if dt == np.float32 else 1e-300
    scale = 1.0 + np.abs(a * np.log(x.astype(np.float64) / a) - (x - a.astype(np.float64)))
    for got, ref in ((S.gammainc(ga, gx), p), (S.gammaincc(ga, gx), q)):
        assert got.dtype == (gp.float32 if dt == np.float32 else gp.float64)
        keep = ref > tiny
        err = np.abs(np.asarray(got, np.float64) - ref)[keep]
        assert np.max(err / np.spacing(ref[keep].astype(dt)) / scale[keep]) <= 8


_JY = {"j0": (lambda v: mp.besselj(0, v)), "j1": (lambda v: mp.besselj(1, v)),
       "y0": (lambda v: mp.bessely(0, v)), "y1": (lambda v: mp.bessely(1, v)),
       "spherical_j0": (lambda v: mp.sin(v) / v)}


@functools.lru_cache(maxsize=None)
def _jy_points(name: str, dt):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x = np.concatenate([rng.uniform(lo, hi, 30) for lo, hi in
                        ((1e-4, 1), (1, 8), (8, 30), (30, 1e4), (1e4, 1e9))]).astype(dt)
    if name[0] == "j" or name[0] == "s":
        x = np.concatenate([x, -x[::7]])
    return x, np.array([float(_JY[name](mp.mpf(float(v)))) for v in x])


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(_JY))
def test_bessel_jy_within_ulp(device, name, dt):
    """Within 8 ulp of max(|f(x)|, sqrt(2 / (pi x))): relative away from the zeros, and next to
    the zeros past 8 (and Y's) absolute in the oscillation's amplitude, as torch's; J0 and J1
    keep their relative accuracy (8 ulp) next to their zeros below 8. (torch's bessel_j0(5) is
    1e-8 off: not an oracle for values.)"""
    x, ref = _jy_points(name, dt)
    got = np.asarray(getattr(S, name)(gp.asarray(x, device=device)), np.float64)
    amp = np.sqrt(2.0 / (np.pi * np.maximum(np.abs(x.astype(np.float64)), 1.0)))
    scale = np.maximum(np.abs(ref), amp)
    assert np.max(np.abs(got - ref) / np.spacing(scale.astype(dt))) <= 8
    if name in ("j0", "j1"):
        low = np.abs(x) <= 8
        assert _ulp(got[low], ref[low], dt) <= 8


def test_bessel_jy_special_values_and_gradients(device):
    x = np.array([-5.0, -1.0, 0.0, 1e-300, 1.0, 8.0, 1e10, math.nan])
    for name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "spherical_bessel_j0"):
        got = np.asarray(getattr(S, name)(gp.asarray(x, device=device)))
        want = getattr(torch.special, name)(torch.tensor(x)).numpy()
        # NaN and -inf where torch has them (its finite values are only ~1e-8 accurate)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=2e-6,
                                   atol=1e-10)
        inf = np.asarray(getattr(S, name)(gp.asarray([math.inf], device=device)))
        assert inf[0] == 0.0   # (the limit; torch gives NaN)
    p = np.array([0.3, 2.0, 5.5, 7.9, 12.0, 40.0])
    for name, n in (("j0", 0), ("j1", 1)):
        _grad_mp(getattr(S, name), p, lambda v, n=n: mp.diff(lambda t: mp.besselj(n, t), v))
    for name, n in (("y0", 0), ("y1", 1)):
        _grad_mp(getattr(S, name), p, lambda v, n=n: mp.diff(lambda t: mp.bessely(n, t), v))
    _grad_mp(S.spherical_j0, p, lambda v: mp.diff(lambda t: mp.sin(t) / t, v))


def test_bessel_k_special_values_as_torch(device):
    x = np.array([-1.0, 0.0, 1e-300, 1.0, 700.0, 710.0, math.inf, math.nan])
    for name in ("modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
                 "scaled_modified_bessel_k1", "modified_bessel_i0", "modified_bessel_i1"):
        got = np.asarray(getattr(S, name)(gp.asarray(x, device=device)))
        np.testing.assert_allclose(got, getattr(torch.special, name)(torch.tensor(x)).numpy(),
                                   rtol=1e-14, atol=0)


def test_gammainc_special_values_gradients_and_names(device):
    a = np.array([0.0, 0.0, 1.0, 1.0, -1.0, 1.0, math.inf, 1.0, math.nan, 2.0, 0.0, 3.0])
    x = np.array([0.0, 1.0, 0.0, math.inf, 1.0, -1.0, 1.0, math.nan, 1.0, math.inf, math.inf, 0.0])
    ga, gx = gp.asarray(a, device=device), gp.asarray(x, device=device)
    ta, tx = torch.tensor(a), torch.tensor(x)
    np.testing.assert_array_equal(np.asarray(S.gammainc(ga, gx)),
                                  torch.special.gammainc(ta, tx).numpy())
    np.testing.assert_array_equal(np.asarray(S.gammaincc(ga, gx)),
                                  torch.special.gammaincc(ta, tx).numpy())
    # the x-gradient as torch's (x = 0 too); the a-gradient (torch has none) against mpmath
    a = np.array([0.5, 1.0, 3.0, 30.0, 0.5, 2.0])
    x = np.array([0.7, 1.5, 2.0, 33.0, 0.0, 0.0])
    for upper in (False, True):
        fn, tfn = (S.gammaincc, torch.special.gammaincc) if upper else (S.gammainc,
                                                                        torch.special.gammainc)
        gxg = gp.asarray(x, device=device, requires_grad=True)
        fn(gp.asarray(a, device=device), gxg).sum().backward()
        txg = torch.tensor(x, requires_grad=True)
        tfn(torch.tensor(a), txg).sum().backward()
        np.testing.assert_allclose(np.asarray(gxg.grad), txg.grad.numpy(), rtol=1e-12)
        gag = gp.asarray(a[:4], device=device, requires_grad=True)
        fn(gag, gp.asarray(x[:4], device=device)).sum().backward()
        want = [float(mp.diff(lambda s, v=v: (mp.gammainc(s, v, mp.inf, regularized=True)
                                              if upper else
                                              mp.gammainc(s, 0, v, regularized=True)), u))
                for u, v in zip(a[:4], x[:4])]
        np.testing.assert_allclose(np.asarray(gag.grad), want, rtol=1e-9)
    # torch's names: gp.igamma / igammac and the methods, with a number for either argument
    t = gp.asarray([1.5, 4.0], device=device)
    np.testing.assert_allclose(np.asarray(gp.igamma(t, 2.0)),
                               torch.igamma(torch.tensor([1.5, 4.0]), torch.tensor(2.0)).numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(t.igammac(gp.asarray([1.0, 9.0], device=device))),
                               torch.tensor([1.5, 4.0]).igammac(torch.tensor([1.0, 9.0])).numpy(),
                               rtol=1e-6)
    u = gp.asarray([2.0, 3.0], device=device)
    u.igamma_(gp.asarray([1.0, 1.0], device=device))
    np.testing.assert_allclose(np.asarray(u), torch.special.gammainc(
        torch.tensor([2.0, 3.0]), torch.tensor([1.0, 1.0])).numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfinv", "erfcx", "ndtr", "log_ndtr",
                                  "ndtri", "logit", "entr", "polygamma1", "polygamma2"])
def test_special_values_as_torch(device, name):
    x = np.array(_SPECIAL_VALUES + [0.999, 1e-300])
    t = torch.tensor(x, dtype=torch.float64)
    ga = gp.asarray(x, device=device)
    if name.startswith("polygamma"):
        n = int(name[-1])
        got = S.polygamma(n, ga)
        # torch's trigamma is 5e-10 off (its polygamma(1, 1) is not pi^2/6): mpmath's values
        ref = torch.tensor([float(mp.polygamma(n, v)) if np.isfinite(v) and not (
            v <= 0 and v == round(v)) else float(torch.polygamma(n, torch.tensor(v)))
            for v in x], dtype=torch.float64)
        # torch's polygamma(2, inf) is NaN (the limit is 0), and its polygamma(1, -1) a finite
        # 6.6e32 (a pole: grilly gives inf)
        keep = ~np.isinf(x) & ~((x < 0) & (x == np.round(x)))
    else:
        fn = {"lgamma": S.gammaln, "digamma": S.digamma, "erfinv": S.erfinv, "erfcx": S.erfcx,
              "ndtr": S.ndtr,
              "log_ndtr": S.log_ndtr, "ndtri": S.ndtri, "logit": S.logit, "entr": S.entr}[name]
        got, ref = fn(ga), getattr(torch.special, {"lgamma": "gammaln", "digamma": "digamma"}
                                   .get(name, name))(t)
        keep = np.ones(len(x), bool)
    got, ref = np.asarray(got)[keep], ref.numpy()[keep]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got) & (got > 0), np.isinf(ref) & (ref > 0))
    np.testing.assert_array_equal(np.isinf(got) & (got < 0), np.isinf(ref) & (ref < 0))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-13, atol=1e-300)


def _grad(fn, tfn, x, *extra):
    xg = gp.asarray(x, requires_grad=True)
    fn(xg, *extra).sum().backward()
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    tfn(xt, *extra).sum().backward()
    np.testing.assert_allclose(np.asarray(xg.grad), xt.grad.numpy(), rtol=1e-12, atol=1e-14)


def _grad_mp(fn, x, dref):
    """fn's gradient against mpmath's derivative (torch's trigamma is 5e-10 off)."""
    xg = gp.asarray(x, requires_grad=True)
    fn(xg).sum().backward()
    np.testing.assert_allclose(np.asarray(xg.grad), [float(dref(mp.mpf(v))) for v in x],
                               rtol=1e-13)


def test_gradients_against_torch():
    x = np.array([0.3, 1.2, 1.46, 2.5, 7.0, 30.0, -0.4, -2.3])
    _grad(S.gammaln, torch.lgamma, x)
    _grad_mp(S.digamma, x, lambda v: mp.polygamma(1, v))
    _grad_mp(lambda a: S.polygamma(2, a), x, lambda v: mp.polygamma(3, v))
    _grad(lambda a: S.multigammaln(a, 3), lambda a: torch.special.multigammaln(a, 3),
          np.array([1.5, 2.2, 9.0]))
    p = np.array([1e-30, 0.01, 0.3, 0.5, 0.8, 0.999])
    _grad(S.ndtri, torch.special.ndtri, p)
    _grad(S.erfinv, torch.erfinv, 2 * p - 1)
    z = np.array([-40.0, -9.0, -1.0, 0.0, 2.0, 7.0])
    _grad(S.log_ndtr, torch.special.log_ndtr, z)
    _grad(S.ndtr, torch.special.ndtr, z)
    _grad(S.erfcx, torch.special.erfcx, np.array([-9.0, -1.0, 0.0, 2.0, 7.0, 30.0, 1e5]))
    _grad(S.logit, torch.logit, np.array([0.05, 0.5, 0.97]), 0.1)
    _grad(S.entr, torch.special.entr, np.array([0.1, 1.0, 3.0]))
    b = np.array([-30.0, -2.5, 0.0, 1e-3, 0.7, 9.0, 25.0])
    _grad(S.i0, torch.special.i0, b)
    _grad(S.i0e, torch.special.i0e, b)
    _grad(S.i1, torch.special.i1, b)
    _grad(S.i1e, torch.special.i1e, b)
    k = np.array([1e-3, 0.4, 1.0, 2.5, 30.0])   # (torch's K functions have no gradient)
    _grad_mp(S.k0, k, lambda v: mp.diff(lambda t: mp.besselk(0, t), v))
    _grad_mp(S.k1, k, lambda v: mp.diff(lambda t: mp.besselk(1, t), v))
    _grad_mp(S.k0e, k, lambda v: mp.diff(lambda t: mp.besselk(0, t) * mp.exp(t), v))
    _grad_mp(S.k1e, k, lambda v: mp.diff(lambda t: mp.besselk(1, t) * mp.exp(t), v))


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
def test_windows_as_torch_and_numpy(device, name):
    for n in (0, 1, 2, 9):
        for periodic in (True, False):
            got = getattr(gp, name)(n, periodic, device=device)
            # (grilly computes in float64 and rounds once; torch's float32 kaiser is 5 ulp off)
            ref = getattr(torch, name)(n, periodic, dtype=torch.float64).float()
            assert got.dtype == gp.float32 and got.shape == tuple(ref.shape)
            np.testing.assert_allclose(np.asarray(got), ref.numpy(), atol=2e-7)
    got = getattr(gp, name)(6, dtype=gp.float64, device=device)
    np.testing.assert_allclose(np.asarray(got), getattr(torch, name)(6, dtype=torch.float64)
                               .numpy(), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(np.asarray(gp.kaiser(11, 6.5, device=device)), np.kaiser(11, 6.5),
                               rtol=1e-14)
    with pytest.raises(ValueError, match=f"{name}: window_length must be >= 0"):
        getattr(gp, name)(-1)


def test_second_derivative_of_gammaln_is_trigamma():
    x = gp.asarray([0.7, 3.0], requires_grad=True)
    (d,) = gp.autograd.grad(S.gammaln(x).sum(), x, create_graph=True)
    (d2,) = gp.autograd.grad(d.sum(), x)
    np.testing.assert_allclose(np.asarray(d2), [float(mp.polygamma(1, 0.7)),
                                                float(mp.polygamma(1, 3.0))], rtol=1e-13)


@pytest.mark.parametrize("one_p", [False, True])
def test_xlogy_xlog1py_values_and_gradients(device, one_p):
    x = np.array([0.0, 0.0, 2.0, -1.5, 0.0, 3.0])
    y = np.array([0.0, 2.0, 3.0, 0.5, math.nan, -0.5])
    fn, tfn = (S.xlog1py, torch.special.xlog1py) if one_p else (S.xlogy, torch.special.xlogy)
    xg = gp.asarray(x, device=device, requires_grad=True)
    yg = gp.asarray(y, device=device, requires_grad=True)
    out = fn(xg, yg)
    xt = torch.tensor(x, requires_grad=True)
    yt = torch.tensor(y, requires_grad=True)
    ref = tfn(xt, yt)
    np.testing.assert_allclose(np.asarray(out), ref.detach().numpy(), rtol=1e-14, equal_nan=True)
    w = np.array([1.0, 2.0, 0.5, 1.0, 0.0, 1.0])
    (out * gp.asarray(w, device=device)).sum().backward()
    (ref * torch.tensor(w)).nansum().backward()
    keep = np.isfinite(ref.detach().numpy())   # (torch's nansum gives 0 where the value is NaN)
    np.testing.assert_allclose(np.asarray(xg.grad)[keep], xt.grad.numpy()[keep], rtol=1e-13)
    np.testing.assert_allclose(np.asarray(yg.grad)[keep], yt.grad.numpy()[keep], rtol=1e-13)
    # a number for either argument, as torch.special takes
    np.testing.assert_allclose(np.asarray(fn(2.0, gp.asarray(y[2:4], device=device))),
                               tfn(2.0, torch.tensor(y[2:4])).numpy(), rtol=1e-14)


def test_half_and_integer_inputs(device):
    x = np.array([0.3, 1.5, 4.0, 11.0])
    for dt in (gp.float16, gp.bfloat16):
        got = S.gammaln(gp.astype(gp.asarray(x, device=device), dt))
        assert got.dtype == dt
        np.testing.assert_allclose(np.asarray(gp.astype(got, gp.float64)),
                                   torch.lgamma(torch.tensor(x)).numpy(), rtol=1e-2, atol=1e-2)
        h = gp.astype(gp.asarray(x, device=device), dt)
        xr = torch.tensor(np.asarray(gp.astype(h, gp.float64)))   # the rounded inputs
        for got, ref in ((S.erfcx(h), torch.special.erfcx(xr)),
                         (S.zeta(h + 2.0, h), torch.special.zeta(xr + 2.0, xr))):
            assert got.dtype == dt
            np.testing.assert_allclose(np.asarray(gp.astype(got, gp.float64)), ref.numpy(),
                                       rtol=1e-2, atol=1e-7)   # (zeta(13, 11) is under float16's range)
    got = S.digamma(gp.asarray([1, 2, 5], device=device))
    assert got.dtype == gp.float64     # integers compute in the default float, as NumPy
    np.testing.assert_allclose(np.asarray(got), torch.digamma(torch.tensor([1., 2, 5],
                               dtype=torch.float64)).numpy(), rtol=1e-14)


def test_names_methods_and_in_place(device):
    x = np.array([0.2, 0.7, 2.5])
    a = gp.asarray(x, device=device)
    t = torch.tensor(x)
    pairs = [(gp.lgamma(a), torch.lgamma(t)), (a.lgamma(), torch.lgamma(t)),
             (gp.digamma(a), torch.digamma(t)), (a.digamma(), t.digamma()),
             (gp.polygamma(3, a), torch.polygamma(3, t)), (a.polygamma(2), t.polygamma(2)),
             (gp.erf(a), torch.erf(t)), (a.erfc(), t.erfc()), (gp.erfc(a), torch.erfc(t)),
             (gp.erfinv(a * 0.9), torch.erfinv(t * 0.9)), (a.erfinv(), t.erfinv()),
             (gp.logit(a * 0.3), torch.logit(t * 0.3)), (a.logit(0.25), t.logit(0.25)),
             (gp.xlogy(a, a), torch.xlogy(t, t)), (a.xlogy(2.0), t.xlogy(2.0)),
             (gp.mvlgamma(a + 2, 3), torch.mvlgamma(t + 2, 3)), ((a + 2).mvlgamma(2),
                                                                  (t + 2).mvlgamma(2)),
             (S.expit(a), torch.special.expit(t)), (S.psi(a), torch.special.psi(t)),
             (S.exp2(a), torch.special.exp2(t)), (S.sinc(a), torch.special.sinc(t)),
             (S.softmax(a, 0), torch.special.softmax(t, 0)),
             (S.log_softmax(a, 0), torch.special.log_softmax(t, 0)),
             (S.logsumexp(a, 0), torch.special.logsumexp(t, 0)),
             (gp.i0(a), torch.i0(t)), (a.i0(), t.i0()), (S.i1e(a), torch.special.i1e(t))]
    for got, ref in pairs:
        np.testing.assert_allclose(np.asarray(got), ref.numpy(), rtol=1e-13, atol=1e-15)
    b = gp.asarray(x, device=device)
    assert b.lgamma_() is b
    np.testing.assert_allclose(np.asarray(b), torch.lgamma(t).numpy(), rtol=1e-14)
    b = gp.asarray(x, device=device)
    b.polygamma_(2)
    np.testing.assert_allclose(np.asarray(b), torch.polygamma(2, t).numpy(), rtol=1e-13)


def test_bad_input_errors():
    a = gp.asarray([1.0, 2.0])
    with pytest.raises(TypeError, match="gammaln"):
        S.gammaln([1.0, 2.0])
    with pytest.raises(TypeError, match="complex"):
        S.digamma(gp.asarray([1 + 1j]))
    with pytest.raises(ValueError, match="polygamma: n must be >= 0"):
        S.polygamma(-1, a)
    with pytest.raises(TypeError, match="polygamma: n must be an integer"):
        S.polygamma(1.5, a)
    with pytest.raises(ValueError, match="multigammaln: d must be >= 1"):
        S.multigammaln(a, 0)
    with pytest.raises(TypeError, match="xlogy: expected at least one grilly Array"):
        S.xlogy(1.0, 2.0)
    with pytest.raises(TypeError, match="logit: eps"):
        S.logit(a, eps="0.1")


def test_normal_functions_at_huge_arguments(device):
    """ndtr and log_ndtr where Dekker's split of x would overflow (|x| near the dtype's top)."""
    for dt, big in ((np.float32, 3e38), (np.float64, 1e308)):
        x = np.array([big, -big, 1e30, -1e30], dt)
        t = torch.tensor(x.astype(np.float64))
        got = np.asarray(S.ndtr(gp.asarray(x, device=device)), np.float64)
        np.testing.assert_array_equal(got, torch.special.ndtr(t).numpy())
        got = np.asarray(S.log_ndtr(gp.asarray(x, device=device)), np.float64)
        assert got[0] == 0 and got[2] == 0 and got[1] < -1e59 and got[3] < -1e59
