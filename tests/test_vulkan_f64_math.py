"""float64 transcendental functions on Vulkan (shaders/math_f64.glsl) against NumPy.

Accuracy that holds (max error in units of NumPy's ulp, ``np.spacing`` of NumPy's result, over
every input tested here: tiny, subnormal, near 0 and 1, large, huge, negative):
BOUND below, per function. sin/cos/tan reduce with Cody-Waite (pi/2 in four parts, exact
products) below 2**40 and Payne-Hanek (2/pi in 24-bit chunks, double-double) above, so the bound
holds for every finite argument, except arguments within ~2**-50 of a multiple of pi/2 above
2**40 (double-double carries the fraction to ~2**-100 absolute). Special values (nan, +-inf,
+-0, domain errors, pow's C99 cases) must match NumPy exactly, sign of zero included.
logaddexp counts ulps of max(|result|, |max(a, b)|): near a zero result the formula cancels and
NumPy's own error there is many ulps of the result.
"""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grilly as gp
from grilly.testing import assert_close

pytestmark = pytest.mark.skipif(
    not any(str(d).startswith("vulkan") for d in gp.devices()), reason="no Vulkan device")

NP_NAME = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
           "atan": "arctan", "atanh": "arctanh", "atan2": "arctan2", "pow": "power"}
BOUND = {"exp": 2, "expm1": 2, "log": 2, "log1p": 3, "log2": 2, "log10": 2, "sin": 2,
         "cos": 2, "tan": 4, "asin": 3, "acos": 3, "atan": 2, "sinh": 3, "cosh": 2, "tanh": 4,
         "asinh": 3, "acosh": 4, "atanh": 3, "pow": 2, "atan2": 2, "logaddexp": 4, "hypot": 2}
UNARY = [op for op in BOUND if op not in ("pow", "atan2", "logaddexp", "hypot")]
BINARY = ["pow", "atan2", "logaddexp", "hypot"]
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0,
                    -3.0, 5e-324, -5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 1e300,
                    1e308, -1e308, 0.3, -0.7, 1.5, 710.0, -746.0])


def _mag(rng, n: int, lo: float, hi: float, signed: bool = True) -> np.ndarray:
    v = 10.0 ** rng.uniform(lo, hi, n)
    return v * rng.choice([-1.0, 1.0], n) if signed else v


def _domain(op: str, n: int = 1500) -> np.ndarray:
    """Inputs for ``op``: its interesting ranges plus tiny, subnormal, huge and special."""
    rng = np.random.default_rng(sum(map(ord, op)))
    u = rng.uniform
    near1 = 1.0 - _mag(rng, n, -16, -1, signed=False)
    parts = {
        "exp": [u(-745.2, 709.8, n), u(-745.2, -700, n), _mag(rng, n, -320, 0)],
        "expm1": [u(-40, 40, n), _mag(rng, n, -320, 0), u(-1, 1, n)],
        "log": [_mag(rng, n, -324, 308, False), 1 + u(-1e-3, 1e-3, n), near1],
        "log1p": [u(-1, 3, n), _mag(rng, n, -320, 308), near1 - 1],
        "sin": [u(-10, 10, n), _mag(rng, n, -320, 308), np.round(u(-1e6, 1e6, n)) * np.pi / 2],
        "asin": [u(-1, 1, n), _mag(rng, n, -320, 0), near1, -near1],
        "atan": [u(-3, 3, n), _mag(rng, n, -320, 308)],
        "sinh": [u(-711, 711, n), _mag(rng, n, -320, 1)],
        "tanh": [u(-25, 25, n), _mag(rng, n, -320, 2)],
        "acosh": [1 + _mag(rng, n, -16, 0, False), _mag(rng, n, 0, 308, False)],
    }
    alias = {"log2": "log", "log10": "log", "cos": "sin", "tan": "sin", "acos": "asin",
             "atanh": "asin", "asinh": "atan", "cosh": "sinh"}
    return np.concatenate(parts[alias.get(op, op)] + [SPECIAL])


def _np(op: str, *xs: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return getattr(np, NP_NAME.get(op, op))(*xs)


def _run(device, op: str, *xs: np.ndarray) -> np.ndarray:
    """``op`` on ``device``; a missing float64 kernel is a failure here, never an xfail."""
    try:
        return np.asarray(getattr(gp, op)(*[gp.asarray(x, device=device) for x in xs]))
    except NotImplementedError as e:
        pytest.fail(f"{op} float64 is not implemented on {device}: {e}")


def _ulps(got: np.ndarray, ref: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
    """Error in ulps of ``scale`` (default ``ref``); inf where a non-finite result or a zero's
    sign differs."""
    err = np.zeros(ref.shape)
    fin = np.isfinite(ref)
    scale = np.abs(ref) if scale is None else np.maximum(np.abs(ref), scale)
    with np.errstate(all="ignore"):
        err[fin] = np.abs(got[fin] - ref[fin]) / np.spacing(scale[fin])
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    err[~fin & ~same] = np.inf
    zero = (ref == 0) & (got == 0)
    err[zero & (np.signbit(got) != np.signbit(ref))] = np.inf
    return np.where(np.isnan(err), np.inf, err)


def _check(op: str, got: np.ndarray, ref: np.ndarray, *xs: np.ndarray) -> None:
    scale = None
    if op == "logaddexp":
        # log(e^a + e^b) cancels to near 0 when max(a, b) ~ -log1p(e^-|a-b|): there NumPy
        # itself is off by many of the result's ulps, so count ulps of the operands' scale
        with np.errstate(all="ignore"):
            m = np.abs(np.maximum(*xs))
        scale = np.where(np.isfinite(m), m, 0.0)
    err = _ulps(got, ref, scale)
    i = int(np.argmax(err))
    args = ", ".join(repr(x.ravel()[i]) for x in xs)
    assert err[i] <= BOUND[op], (f"{op}({args}) = {got.ravel()[i]!r}, NumPy {ref.ravel()[i]!r}: "
                                 f"{err[i]:.3g} ulp > {BOUND[op]}")


def test_ulp_metric_can_fail():
    r = np.array([1.0, 3e-300, -2.5, 0.0])
    assert _ulps(r * (1 + 16 * np.finfo(float).eps), r)[:3].min() >= 8
    assert np.isinf(_ulps(np.array([-0.0, np.nan, 1.0]), np.array([0.0, 1.0, np.inf]))).all()


@pytest.mark.parametrize("op", UNARY)
def test_unary_accuracy(device, op):
    x = _domain(op)
    _check(op, _run(device, op, x), _np(op, x), x)


@pytest.mark.parametrize("op", BINARY)
def test_binary_accuracy(device, op):
    rng = np.random.default_rng(sum(map(ord, op)))
    n = 3000
    if op == "pow":
        base = np.concatenate([_mag(rng, n, -5, 5, False), np.exp(rng.uniform(-700, 700, n)),
                               1 + rng.uniform(-1e-6, 1e-6, n), -_mag(rng, n, -3, 3, False)])
        expo = np.concatenate([rng.uniform(-60, 60, n), rng.uniform(-700, 700, n),
                               _mag(rng, n, 0, 9), rng.integers(-50, 50, n).astype(float)])
        expo[n:2 * n] /= np.log(base[n:2 * n])   # results spread over the whole exponent range
    elif op == "logaddexp":
        base, expo = rng.uniform(-50, 50, (2, 2 * n))
        base[:n] = _mag(rng, n, -300, 300)
        expo[:n] = base[:n] + rng.uniform(-40, 40, n)
    else:
        base, expo = _mag(rng, 2 * n, -320, 308), _mag(rng, 2 * n, -320, 308)
    _check(op, _run(device, op, base, expo), _np(op, base, expo), base, expo)


@pytest.mark.parametrize("op", BINARY)
def test_binary_special_values(device, op):
    # every pair of specials: pow's C99 table (0, +-inf, -1, odd/even integers, nan) among them
    a, b = (g.ravel() for g in np.meshgrid(SPECIAL, SPECIAL))
    _check(op, _run(device, op, a, b), _np(op, a, b), a, b)


def test_every_bit_pattern_class(device):
    # uniform random bit patterns: every exponent, subnormals, infinities and NaN payloads
    rng = np.random.default_rng(7)
    x = rng.integers(0, 2**64, 20000, dtype=np.uint64, endpoint=False).view(np.float64)
    y = rng.permutation(x)
    for op in UNARY:
        _check(op, _run(device, op, x), _np(op, x), x)
    for op in BINARY:
        _check(op, _run(device, op, x, y), _np(op, x, y), x, y)


def test_pow_integer_powers_exact(device):
    x = np.array([2.0, 3.0, -3.0, 10.0, 0.5, -2.0, 7.0, 1e10])
    y = np.array([10.0, 5.0, 3.0, 22.0, -4.0, -3.0, 18.0, 3.0])
    assert (_run(device, "pow", x, y) == x ** y).all()


def test_trig_huge_arguments(device):
    # sin(1e22) is the classic Payne-Hanek check; 2**40 is where the reduction switches
    x = np.array([1e22, 2.0 ** 40, np.nextafter(2.0 ** 40, 0), 1e300, -1.7e308, 2.0 ** 1023])
    for op in ("sin", "cos", "tan"):
        _check(op, _run(device, op, x), _np(op, x), x)
    assert _run(device, "sin", x[:1])[0] == -0.8522008497671888


def test_exact_points(device):
    assert (_run(device, "log2", 2.0 ** np.arange(-1074, 1024, 7.0)) ==
            np.arange(-1074, 1024, 7.0)).all()
    assert (_run(device, "log10", 10.0 ** np.arange(-20.0, 21.0)) == np.arange(-20.0, 21.0)).all()
    assert (_run(device, "exp", np.array([0.0, -0.0])) == 1.0).all()
    assert _run(device, "acos", np.array([-1.0]))[0] == np.pi
    assert _run(device, "atan", np.array([np.inf]))[0] == np.pi / 2


def test_integer_input_promotes_and_runs(device):
    x = np.arange(-5, 6, dtype=np.int32)
    got = gp.sin(gp.asarray(x, device=device))
    assert got.dtype == gp.float64
    _check("sin", np.asarray(got), np.sin(x.astype(np.float64)), x)


def test_reductions_untouched(device):
    x = np.random.default_rng(1).uniform(-3, 3, (37, 41))
    e = gp.exp(gp.asarray(x, device=device))
    assert_close(gp.sum(e, axis=0), np.exp(x).sum(axis=0), rtol=1e-12)
    assert_close(gp.max(gp.log1p(gp.abs(e))), np.log1p(np.exp(x)).max(), rtol=1e-15)
    assert_close(gp.cumulative_sum(gp.sin(e[0])), np.cumsum(np.sin(np.exp(x[0]))), rtol=1e-12)


_f64 = st.floats(width=64, allow_nan=True, allow_infinity=True, allow_subnormal=True)
fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@fixture_ok
@given(xs=st.lists(_f64, min_size=1, max_size=48))
def test_unary_property(device, xs):
    x = np.array(xs, dtype=np.float64)
    for op in UNARY:
        _check(op, _run(device, op, x), _np(op, x), x)


@fixture_ok
@given(pairs=st.lists(st.tuples(_f64, _f64), min_size=1, max_size=48))
def test_binary_property(device, pairs):
    a, b = np.array(pairs, dtype=np.float64).T.copy()
    for op in BINARY:
        _check(op, _run(device, op, a, b), _np(op, a, b), a, b)
