"""Accuracy of complex expm1, log1p, multiply and square where naive formulas fail: tiny |z|
(exp(z) - 1 and log(1 + z) cancel), near log1p's branch cut and the circle |1 + z| = 1, and
huge parts (complex64 products overflowing float32 early). References come from mpmath, or
from Python's decimal when mpmath is missing, or from numpy in complex128 for products."""
import cmath
import decimal
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grilly as gp

try:
    import mpmath
except ImportError:  # pragma: no cover - the decimal references take over
    mpmath = None

RTOL = {"complex64": 4e-6, "complex128": 2e-15}
CDTYPES = ["complex64", "complex128"]

# ---- high-precision references ---------------------------------------------------------------
_PI = decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899")


def _sincos(y: decimal.Decimal) -> tuple:
    """sin and cos of a Decimal by reduction modulo 2 pi and the Taylor series."""
    y = y % (2 * _PI)
    s, c, term, k = decimal.Decimal(0), decimal.Decimal(0), decimal.Decimal(1), 0
    while True:
        if k % 4 == 0:
            c += term
        elif k % 4 == 1:
            s += term
        elif k % 4 == 2:
            c -= term
        else:
            s -= term
        k += 1
        term = term * y / k
        if k > 10 and abs(term) < decimal.Decimal(10) ** -70:
            return s, c


def _atan2(y: decimal.Decimal, x: decimal.Decimal) -> decimal.Decimal:
    """atan2 of Decimals: argument halving, then the Taylor series of atan."""
    if x == 0:
        return _PI / 2 if y > 0 else -_PI / 2
    t = y / x
    halvings = 0
    while abs(t) > decimal.Decimal("0.1"):
        t = t / (1 + (1 + t * t).sqrt())
        halvings += 1
    r, term, k = decimal.Decimal(0), t, 1
    while abs(term) > decimal.Decimal(10) ** -70:
        r += term / k
        term = -term * t * t
        k += 2
    r *= 2 ** halvings
    if x < 0:
        r += _PI if y >= 0 else -_PI
    return r


def _ref_decimal(op: str, z: complex) -> complex:
    """expm1 or log1p of a finite z with 80 significant digits."""
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        ctx.traps[decimal.Overflow] = False  # exp of a huge x is Decimal infinity
        x, y = decimal.Decimal(z.real), decimal.Decimal(z.imag)
        if op == "expm1":
            s, c = _sincos(y)
            e = x.exp()
            # infinity times a zero sine is the standard's +0 imaginary part, not NaN
            return complex(float(e * c - 1), float(e * s) if s else 0.0)
        u = 1 + x
        return complex(float((u * u + y * y).ln() / 2), float(_atan2(y, u)))


def _ref_one(op: str, z: complex) -> complex:
    if mpmath is None:
        return _ref_decimal(op, z)
    with mpmath.workdps(60):
        return complex(getattr(mpmath, op)(mpmath.mpc(z.real, z.imag)))


def _ref(op: str, h: np.ndarray) -> np.ndarray:
    """The correctly rounded result per element, with the signs of zero the standard asks."""
    out = np.empty(h.shape, np.complex128)
    for i, v in enumerate(h.astype(np.complex128).ravel()):
        r = _ref_one(op, complex(v))
        im = r.imag
        if op == "log1p" and v.real < -1 and v.imag == 0:
            im = math.copysign(math.pi, v.imag)  # the cut: log1p(conj z) = conj log1p(z)
        elif im == 0:
            im = math.copysign(0.0, v.imag)  # underflowed or exact zeros: the sign of y
        out.flat[i] = complex(r.real, im)
    return out.reshape(h.shape)


# ---- checks -----------------------------------------------------------------------------------
def _check(got, e: np.ndarray, cd: str, parts: str = "norm") -> None:
    """Each part within rtol of |expected| ("norm"), or of its own size where the formula keeps
    it accurate ("re", "im", "both")."""
    a = np.asarray(got)
    assert a.dtype == np.dtype(cd)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        e = e.astype(cd).astype(np.complex128)
        a = a.astype(np.complex128)
        mag = np.abs(e)
        for name, p, q in (("re", a.real, e.real), ("im", a.imag, e.imag)):
            scale = np.abs(q) if parts in (name, "both") else mag
            ok = (p == q) | (np.abs(p - q) <= RTOL[cd] * scale)
            if not ok.all():
                i = np.nonzero(~ok)[0][:4]
                raise AssertionError(f"{name} part: got {a[i].tolist()}, expected {e[i].tolist()}")


def _run(device, op: str, *hs) -> np.ndarray:
    return np.asarray(getattr(gp, op)(*[gp.asarray(h, device=device) for h in hs]))


def _tiny(cd: str, n: int = 240) -> np.ndarray:
    rng = np.random.default_rng(7)
    r = 10.0 ** rng.uniform(-10, -3, n)
    z = r * np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    z[:8] = [1e-10, -1e-10, 1e-10j, -1e-10j, 1e-3, -1e-3, 1e-3j, -1e-3 - 1e-7j]
    return z.astype(cd)


# ---- expm1 and log1p -----------------------------------------------------------------------------
@pytest.mark.parametrize("cd", CDTYPES)
@pytest.mark.parametrize("op", ["expm1", "log1p"])
def test_tiny_arguments(device, op, cd):
    h = _tiny(cd)
    # imaginary parts never cancel; log1p's real part is summed in double-double
    _check(_run(device, op, h), _ref(op, h), cd, "im" if op == "expm1" else "both")


@pytest.mark.parametrize("cd", CDTYPES)
def test_expm1_near_real_part_cancellation(device, cd):
    # Re(exp(z)) = 1 where x = -log(cos y): exp(x) cos y - 1 cancels completely there
    y = np.array([1e-4, 3e-3, 0.01, 0.1, 0.5, -0.7, 1.0, -1.3])
    h = (-np.log(np.cos(y)) + 1j * y).astype(cd)
    _check(_run(device, "expm1", h), _ref("expm1", h), cd, "im")


@pytest.mark.parametrize("cd", CDTYPES)
def test_log1p_near_unit_circle_and_cut(device, cd):
    # |1 + z| = 1: log|1 + z| cancels completely in log(hypot(1 + x, y))
    t = np.array([1e-6, 1e-3, 0.05, 0.4, 1.0, 2.0, 3.0, -0.3, -2.5])
    circle = np.exp(1j * t) - 1
    circle = np.concatenate([circle, circle * (1 + 1e-9), circle * (1 - 1e-7)])
    _check(_run(device, "log1p", circle.astype(cd)), _ref("log1p", circle.astype(cd)), cd, "im")
    # the cut x < -1: the imaginary part is +-pi by the sign of y, zero included
    xs = np.array([-1.5, -2.0, -3.0, -1e5])
    cut = np.concatenate([xs + 0j, xs - 0j, xs + 1e-30j, xs - 1e-8j]).astype(cd)
    cut.imag[len(xs):2 * len(xs)] = -0.0
    got = _run(device, "log1p", cut)
    _check(got, _ref("log1p", cut), cd, "both")
    assert (np.signbit(got.imag) == np.signbit(cut.imag)).all()


@pytest.mark.parametrize("cd", CDTYPES)
@pytest.mark.parametrize("op", ["expm1", "log1p"])
def test_huge_parts(device, op, cd):
    big = 1e30 if cd == "complex64" else 1e300
    if op == "expm1":  # huge negative x, exp(x) near overflow; |y| kept where sin/cos reduce
        h = np.array([complex(-big, 0.5), complex(-big, -3.0), complex(-745.0, 1.0),
                      complex(40.0 if cd == "complex64" else 700.0, 1.5), complex(85.0, 1e-20),
                      complex(big, 0.0), complex(88.0 if cd == "complex64" else 709.9, -2.0)])
    else:
        h = np.array([complex(big, big), complex(-big, big), complex(big, -1.0),
                      complex(-1.0, big), complex(3.0, -big), complex(-big, -0.0)])
    h = h.astype(cd)
    _check(_run(device, op, h), _ref(op, h), cd)


@pytest.mark.parametrize("cd", CDTYPES)
def test_zero_and_special_values_kept(device, cd):
    # the Annex G cases the formulas must not disturb (the conformance suite checks them all)
    h = np.array([0j, complex(-0.0, 0.0), complex(np.inf, 0.0), complex(-np.inf, 0.0),
                  complex(np.nan, 0.0), complex(1.0, np.inf)], dtype=cd)
    e = np.asarray(gp.expm1(gp.asarray(h, device=device)))
    assert e[0] == 0 and not np.signbit(e[0].real) and e[1] == 0  # the standard: 0 + 0j
    assert e[2] == complex(np.inf, 0.0) and e[3] == complex(-1.0, 0.0)
    assert np.isnan(e[4].real) and e[4].imag == 0 and np.isnan(e[5].real) and np.isnan(e[5].imag)
    g = np.array([complex(-1.0, 0.0), complex(np.inf, 1.0), complex(1.0, np.inf)], dtype=cd)
    r = np.asarray(gp.log1p(gp.asarray(g, device=device)))
    assert r[0] == complex(-np.inf, 0.0) and r[1] == complex(np.inf, 0.0)
    assert r[2].real == np.inf and r[2].imag == np.dtype(cd).type(0.5j * np.pi).imag


_SMALL = st.floats(-1e-3, 1e-3, allow_subnormal=False).filter(lambda v: v == 0 or abs(v) > 1e-12)


@given(st.lists(st.builds(complex, _SMALL, _SMALL), min_size=1, max_size=20),
       st.sampled_from(["expm1", "log1p"]))
def test_hypothesis_small_complex128(zs, op):
    h = np.array(zs, dtype=np.complex128)
    _check(_run(gp.backends.registry.device("cpu"), op, h), _ref(op, h), "complex128",
           "im" if op == "expm1" else "both")


# ---- complex64 products ---------------------------------------------------------------------------
def _products(n: int = 300) -> tuple:
    """complex64 operands with parts up to 3e19 (float32 squares overflow) and 1e30 with tiny
    partners (float32 products fine, but easy to get wrong through a scaled formula)."""
    rng = np.random.default_rng(11)
    mags = np.array([1e-20, 1e-3, 1.0, 1e10, 1e19, 3e19, 1e30])
    def draw():
        r = mags[rng.integers(0, len(mags), n)] * rng.uniform(0.5, 2.0, n)
        return r * np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    a, b = draw(), draw()
    a[:4] = [3e19 + 3e19j, 1e19 + 2e19j, 1e30 + 1e30j, 2.5e19 - 2.5e19j]
    b[:4] = [3e19 + 3e19j, 1e19 - 1e19j, 1e-20 + 1e-20j, 2.5e19 + 2.5e19j]
    return a.astype(np.complex64), b.astype(np.complex64)


def _exact_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The complex64 product rounded once: float32 parts multiply exactly in float64."""
    with np.errstate(all="ignore"):
        ar, ai = a.real.astype(np.float64), a.imag.astype(np.float64)
        br, bi = b.real.astype(np.float64), b.imag.astype(np.float64)
        return (ar * br - ai * bi) + 1j * (ar * bi + ai * br)


def test_complex64_multiply_no_early_overflow(device):
    a, b = _products()
    e = _exact_product(a, b)
    got = _run(device, "multiply", a, b)
    _check(got, e, "complex64")
    assert np.isfinite(got[1].real) and got[0].real == 0 and got[3].imag == 0


def test_complex64_square_no_early_overflow(device):
    a, _ = _products()
    got = _run(device, "square", a)
    _check(got, _exact_product(a, a), "complex64")
    assert got[0].real == 0 and np.isfinite(got[1].real) and np.isinf(got[1].imag)


_HUGE32 = st.floats(-2.0 ** 65, 2.0 ** 65, width=32)  # float32 squares overflow from 2^64


@given(st.lists(st.builds(complex, _HUGE32, _HUGE32),
                min_size=1, max_size=20))
def test_hypothesis_complex64_square(zs):
    h = np.array(zs, dtype=np.complex64)
    _check(_run(gp.backends.registry.device("cpu"), "square", h), _exact_product(h, h), "complex64")


def test_decimal_reference_agrees_with_cmath():
    # the fallback reference must itself be right where cmath is exact enough
    for z in (0.3 + 0.4j, -0.2 + 2.0j, 1e30 - 0.5j, -2.0 - 1e-30j):
        for op, f in (("expm1", lambda w: cmath.exp(w) - 1), ("log1p", lambda w: cmath.log(1 + w))):
            if op == "expm1" and abs(z.real) > 700:
                continue
            assert cmath.isclose(_ref_decimal(op, z), f(z), rel_tol=1e-12), (op, z)
