"""grilly.special's orthogonal polynomials (torch.special's chebyshev_polynomial_t/u/v/w, their
shifted forms, hermite_polynomial_h/he, laguerre_polynomial_l, legendre_polynomial_p; scipy's
eval_* names) against mpmath (values in ulp of max(|P_n(x)|, |P_{n-1}(x)|): relative away from
the roots, the local amplitude next to them; derivatives) and torch (special values, n < 0,
float n, broadcasting), on every device."""
import functools
import math

import numpy as np
import pytest

import grilly as gp
from grilly import special as S

mp = pytest.importorskip("mpmath")
torch = pytest.importorskip("torch")


def _u(n, x):
    return mp.chebyu(n, x) if n >= 0 else mp.mpf(0)


# kind -> (grilly name, mpmath P_n(t))
_REF = {"T": lambda n, t: mp.chebyt(n, t), "U": _u,
        "V": lambda n, t: _u(n, t) - _u(n - 1, t), "W": lambda n, t: _u(n, t) + _u(n - 1, t),
        "H": lambda n, t: mp.hermite(n, t),
        "He": lambda n, t: mp.hermite(n, t / mp.sqrt(2)) * mp.mpf(2) ** (-mp.mpf(n) / 2),
        "L": lambda n, t: mp.laguerre(n, 0, t), "P": lambda n, t: mp.legendre(n, t)}
_NAMES = {"T": "chebyshev_polynomial_t", "U": "chebyshev_polynomial_u",
          "V": "chebyshev_polynomial_v", "W": "chebyshev_polynomial_w",
          "sT": "shifted_chebyshev_polynomial_t", "sU": "shifted_chebyshev_polynomial_u",
          "sV": "shifted_chebyshev_polynomial_v", "sW": "shifted_chebyshev_polynomial_w",
          "H": "hermite_polynomial_h", "He": "hermite_polynomial_he",
          "L": "laguerre_polynomial_l", "P": "legendre_polynomial_p"}
_DEGREES = (7, 40)


def _ref_at(kind: str, n: int, v):
    """P_n(v) at the working precision (v an mpf)."""
    return _REF[kind.lstrip("s")](n, 2 * v - 1 if kind[0] == "s" else v)


def _ref(kind: str, n: int, x: float):
    with mp.workdps(40):
        return _ref_at(kind, n, mp.mpf(x))


def _bound(kind: str, n: int) -> float:
    """The documented bound (docs/special.md), in ulp of max(|P_n|, |P_{n-1}|)."""
    return 8 + n / 2 if kind.lstrip("s") in "TUVWP" else 8 + 5 * n


@functools.lru_cache(maxsize=None)
def _points(kind: str, dt):
    """(x, n, P_n(x), scale) for both degrees, in dtype ``dt``; computed once per module."""
    rng = np.random.default_rng(len(kind) * 7 + ord(kind[-1]))
    xs, ns = [], []
    for n in _DEGREES:
        base = kind.lstrip("s")
        if base in "TUVWP":
            x = np.concatenate([rng.uniform(-1, 1, 14), 1 - 10 ** rng.uniform(-7, 0, 4),
                                -1 + 10 ** rng.uniform(-7, 0, 4), rng.uniform(-1.2, 1.2, 3)])
            x = (x + 1) / 2 if kind[0] == "s" else x
        elif base == "L":
            x = rng.uniform(0, 4 * n, 25)
        else:   # the oscillating range, a little past the largest root
            x = rng.uniform(-1.1, 1.1, 25) * math.sqrt(2 * n + 1) * (1 if base == "H" else 1.4)
        xs.append(x.astype(dt))
        ns.append(np.full(len(x), n))
    x, n = np.concatenate(xs), np.concatenate(ns)
    ref = np.array([float(_ref(kind, int(k), float(v))) for k, v in zip(n, x)])
    prev = np.array([float(_ref(kind, int(k) - 1, float(v))) for k, v in zip(n, x)])
    return x, n, ref, np.maximum(np.abs(ref), np.abs(prev))


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("kind", list(_NAMES))
def test_values_within_ulp_of_mpmath(device, kind, dt):
    x, n, ref, scale = _points(kind, dt)
    # n as an Array of per-element degrees (the recurrence runs to the largest)
    got = getattr(S, _NAMES[kind])(gp.asarray(x, device=device), gp.asarray(n, device=device))
    assert got.dtype == (gp.float32 if dt == np.float32 else gp.float64)
    got = np.asarray(got, np.float64)
    keep = scale < np.finfo(dt).max / 4   # (float32's H_40 and He_40 overflow past their roots)
    err = np.abs(got - ref)[keep] / np.spacing(scale[keep].astype(dt)).astype(np.float64)
    for deg in _DEGREES:
        sel = n[keep] == deg
        assert np.max(err[sel]) <= _bound(kind, deg), (deg, np.max(err[sel]))


_X = [-2.5, -1.0, -0.7, -0.3, 0.0, 0.2, 0.5, 0.9, 1.0, 1.7]


@pytest.mark.parametrize("kind", list(_NAMES))
def test_special_values_as_torch(device, kind):
    name = _NAMES[kind]
    x = np.array(_X + [math.nan, math.inf, -math.inf])
    for n in (-3, -1, 0, 1, 2, 3, 12, 2.7, -0.5, math.nan, math.inf):
        got = np.asarray(getattr(S, name)(gp.asarray(x, device=device), n))
        want = getattr(torch.special, name)(torch.tensor(x), n).numpy()
        fin = slice(0, len(_X))
        np.testing.assert_allclose(got[fin], want[fin], rtol=1e-12, atol=1e-12)
        k = int(n) if math.isfinite(n) else -1
        # NaN x: 1 for n = 0, 0 for n < 0, else NaN (torch returns an uninitialized value
        # for n >= 2 in most of these)
        assert np.array_equal(got[-3], 1.0 if k == 0 else 0.0 if k < 0 else math.nan,
                              equal_nan=True)
        # +-inf: the limit (torch gives NaN from n = 3): the leading term's sign
        for v, g in zip((math.inf, -math.inf), got[-2:]):
            if k < 1:
                assert g == (1.0 if k == 0 else 0.0)
            else:
                lead = -1.0 if kind == "L" and k % 2 else 1.0
                odd = -1.0 if (v < 0 and k % 2) else 1.0
                assert g == (math.inf * lead * odd if kind != "L" or v > 0 else math.inf)


def test_degree_array_broadcast_dtypes_and_scipy_names(device):
    x = gp.asarray([[0.3], [-0.8]], device=device, dtype=gp.float32)
    n = gp.asarray([0, 1, 5, 9], device=device)
    got = S.legendre_polynomial_p(x, n)
    want = torch.special.legendre_polynomial_p(torch.tensor([[0.3], [-0.8]]), torch.tensor(
        [0, 1, 5, 9]))
    assert got.shape == (2, 4) and got.dtype == gp.float32
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-6)
    # a float64 n widens float32 x (torch's promotion); integer-valued float n
    nf = gp.asarray([2.0, 3.0], device=device, dtype=gp.float64)
    got = S.hermite_polynomial_h(gp.asarray([0.5, 1.5], device=device, dtype=gp.float32), nf)
    assert got.dtype == gp.float64
    # a number x with an Array n; integer x computes in float64 (as NumPy)
    np.testing.assert_allclose(np.asarray(S.chebyshev_polynomial_t(0.5, gp.asarray(
        [3, 4], device=device))), [-1.0, -0.5], atol=1e-15)
    assert S.laguerre_polynomial_l(gp.asarray([1, 2], device=device), 2).dtype == gp.float64
    t = gp.asarray([0.25, 0.6], device=device, dtype=gp.float64)
    tt = torch.tensor([0.25, 0.6], dtype=torch.float64)
    for sp, tn in ((S.eval_chebyt, "chebyshev_polynomial_t"),
                   (S.eval_chebyu, "chebyshev_polynomial_u"),
                   (S.eval_hermite, "hermite_polynomial_h"),
                   (S.eval_hermitenorm, "hermite_polynomial_he"),
                   (S.eval_laguerre, "laguerre_polynomial_l"),
                   (S.eval_legendre, "legendre_polynomial_p")):
        np.testing.assert_allclose(np.asarray(sp(6, t)), getattr(torch.special, tn)(tt, 6)
                                   .numpy(), rtol=1e-13)


def test_overflow_is_signed_inf(device):
    """Past the dtype's range the value is +-inf with its sign, not torch's NaN; a value whose
    recurrence passes 2^60 (float32) on the way is still exact."""
    x = np.array([-30.0, 30.0, 3.0], np.float32)
    got = np.asarray(S.hermite_polynomial_h(gp.asarray(x, device=device), 31))
    assert got[0] == -math.inf and got[1] == math.inf
    assert np.isclose(got[2], float(mp.hermite(31, 3)), rtol=1e-5)
    got = np.asarray(S.laguerre_polynomial_l(gp.asarray([1e30, -1e30], device=device,
                                                        dtype=gp.float32), 3))
    assert got[0] == -math.inf and got[1] == math.inf


def test_gradients_against_mpmath(device):
    x = np.array([-0.95, -0.4, 0.1, 0.7, 0.999, 1.3])
    for kind, name in _NAMES.items():
        xs = (x + 1) / 2 if kind[0] == "s" else (x * 4 + 4 if kind == "L" else x)
        for n in (0, 1, 6):
            xg = gp.asarray(xs, device=device, requires_grad=True)
            getattr(S, name)(xg, n).sum().backward()
            # (40 digits whatever the global precision another test module set: mp.diff's
            # step follows it, so the function must not round its argument to fewer digits)
            with mp.workdps(40):
                want = [float(mp.diff(lambda v: _ref_at(kind, n, v), mp.mpf(float(v))))
                        for v in xs]
            np.testing.assert_allclose(np.asarray(xg.grad), want, rtol=1e-11, atol=1e-11,
                                       err_msg=f"{name} n={n}")
    # second derivative (H'' = 4 n (n - 1) H_{n-2})
    xg = gp.asarray([0.3, 1.1], device=device, requires_grad=True)
    (d,) = gp.autograd.grad(S.hermite_polynomial_h(xg, 4).sum(), xg, create_graph=True)
    (d2,) = gp.autograd.grad(d.sum(), xg)
    np.testing.assert_allclose(np.asarray(d2), [48 * float(mp.hermite(2, v)) for v in (0.3, 1.1)],
                               rtol=1e-12)


def test_bad_input_errors():
    a = gp.asarray([0.5])
    with pytest.raises(TypeError, match="chebyshev_polynomial_t: n must be"):
        S.chebyshev_polynomial_t(a, "3")
    with pytest.raises(TypeError, match="legendre_polynomial_p: input must be"):
        S.legendre_polynomial_p([0.5], 3)
    with pytest.raises(TypeError, match="hermite_polynomial_h: expected at least one"):
        S.hermite_polynomial_h(0.5, 3)
    with pytest.raises(TypeError, match="eval_laguerre: complex"):
        S.eval_laguerre(2, gp.asarray([1 + 1j]))
