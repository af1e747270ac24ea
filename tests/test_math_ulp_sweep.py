"""Sweeps of grilly's float math that tests/test_float_accuracy.py (float32, 10^6 points per
function), tests/test_vulkan_f64_math.py (float64 transcendentals), tests/test_float16_elementwise.py
(float16 on [-4, 4]) and tests/test_special_functions.py (float64 activations on the CPU) leave
out, on every device:

* remainder and floor_divide, float16/32/64, bit for bit against NumPy's divmod (an exact fmod,
  then one rounding) over random bit patterns, huge and tiny quotients, negative operands,
  signed zeros, infinities and NaN. floor_divide keeps the standard's x / y for a non-finite
  operand or a zero divisor (NumPy: NaN for inf // 2, -1 for -1 // inf).
* every float16 unary function (and the float16 activations) over all 65536 float16 values,
  within 1 float16 ulp of the float64 reference (float32 compute within a few float32 ulp,
  rounded once, can be off by at most one float16 step).
* nextafter's signed zeros: y when x == y (C99), every dtype.
* float64 activations on every device against mpmath (test_special_functions: CPU only).
"""
from __future__ import annotations

import math
import warnings

import mpmath as mp
import numpy as np
import pytest

import grilly as gp
from grilly.array.elementwise import UNARY
from grilly.nn import functional as F

DTYPES = [np.float16, np.float32, np.float64]
_INT = {np.float16: np.int16, np.float32: np.int32, np.float64: np.int64}


def _bit_patterns(rng, n: int, dt) -> np.ndarray:
    it = np.iinfo(_INT[dt])
    return rng.integers(it.min, it.max, n, endpoint=True, dtype=np.int64).astype(_INT[dt]).view(dt)


def _edges(dt) -> np.ndarray:
    fi = np.finfo(dt)
    e = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 7.0, -7.0,
         0.1, -0.1, 1e-5, -1e-5, 1e4, -1e4, float(fi.max), -float(fi.max), float(fi.tiny),
         -float(fi.tiny), float(fi.smallest_subnormal), -float(fi.smallest_subnormal), 1e30, -1e30]
    with np.errstate(over="ignore"):
        return np.array(e).astype(dt)


def _divmod_operands(dt) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20240611)
    n = 20000
    ex, ey = (g.ravel() for g in np.meshgrid(_edges(dt), _edges(dt)))
    small = rng.integers(-60, 61, (2, n)).astype(dt)
    small[1][small[1] == 0] = 1
    ordinary = rng.uniform(-10, 10, (2, n)).astype(dt)
    # quotients far beyond 2^24 (2^53): x / y rounds there, so floor(x / y) and y * q are inexact
    big = _bit_patterns(rng, n, dt)
    tiny = (rng.uniform(0.5, 2, n) * rng.choice([-1, 1], n) * (1e-3 if dt == np.float16 else 1e-12))
    x = np.concatenate([_bit_patterns(rng, n, dt), ordinary[0], small[0], big, ex])
    y = np.concatenate([_bit_patterns(rng, n, dt), ordinary[1], small[1], tiny.astype(dt), ey])
    return x, y


def _same_bits(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Elementwise: equal values with equal signs, or both NaN."""
    both_nan = np.isnan(got) & np.isnan(ref)
    return both_nan | ((got == ref) & (np.signbit(got) == np.signbit(ref)))


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", ["remainder", "floor_divide"])
def test_divmod_matches_numpy(device, op, dt):
    """Before: Vulkan computed x - y * floor(x / y), so remainder(7.8e37, 4e21) (float32) was
    -9.4e21, float64 remainder was 256 ulp off already on [-10, 10], floor_divide(2.7748426e-08,
    -3.6943716e-12) was -7511 (NumPy, exact: -7512), remainder(-0., inf) was -0 and float16
    remainder(7.44e-05, -65504) was -0 (NumPy: -65504)."""
    x, y = _divmod_operands(dt)
    got = np.asarray(getattr(gp, op)(gp.asarray(x, device=device), gp.asarray(y, device=device)))
    assert got.dtype == dt
    with np.errstate(all="ignore"):
        ref = getattr(np, op)(x, y)
        if op == "floor_divide":   # the standard's special cases: x / y (the CPU backend too)
            special = ~np.isfinite(x) | ~np.isfinite(y) | (y == 0)
            ref = np.where(special, x / y, ref)
    ok = _same_bits(got, ref)
    bad = np.flatnonzero(~ok)
    assert bad.size == 0, (f"{op} {dt.__name__} on {device}: {bad.size} results differ from "
                           f"NumPy, e.g. {op}({x[bad[0]]!r}, {y[bad[0]]!r}) = {got[bad[0]]!r}, "
                           f"NumPy {ref[bad[0]]!r}")


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
def test_divmod_identity_holds(device, dt):
    """x = floor_divide(x, y) * y + remainder(x, y) for small integers of either sign, and the
    remainder takes y's sign (a zero one too)."""
    a, b = (g.ravel() for g in np.meshgrid(np.arange(-9, 10), np.arange(-4, 5)))
    keep = b != 0
    x, y = a[keep].astype(dt), b[keep].astype(dt)
    gx, gy = gp.asarray(x, device=device), gp.asarray(y, device=device)
    q, r = np.asarray(gp.floor_divide(gx, gy)), np.asarray(gp.remainder(gx, gy))
    assert np.array_equal(q * y + r, x)
    assert np.array_equal(np.signbit(r), np.signbit(y))


def test_nextafter_signed_zeros(device):
    """nextafter(x, y) with x == y is y (C99) for every dtype: (-0, +0) gives +0. NumPy's float16
    loop gives y before 2.4 and x from 2.4 on; grilly's cpu float16 followed whichever was
    installed."""
    for dt in DTYPES:
        x, y = np.array([-0.0, 0.0, 0.0, -0.0], dt), np.array([0.0, -0.0, 0.0, -0.0], dt)
        got = np.asarray(gp.nextafter(gp.asarray(x, device=device), gp.asarray(y, device=device)))
        assert np.array_equal(np.signbit(got), np.signbit(y)), dt


ALL_F16 = np.arange(-32768, 32768).astype(np.int16).view(np.float16)
_NP = {"acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
       "atan": np.arctan, "atanh": np.arctanh, "round": np.rint}
# the rounding ones (the exact ones, abs, ceil, sqrt, ...: tests/test_float16_elementwise.py)
F16_UNARY = sorted(k for k, (allowed, _, result) in UNARY.items()
                   if gp.float16 in allowed and result(gp.float16) is gp.float16
                   and k not in ("imag", "real", "conj", "abs", "negative", "positive", "sign",
                                 "ceil", "floor", "trunc", "round", "square", "sqrt",
                                 "reciprocal"))


def _sigmoid64(x):
    return np.exp(-np.logaddexp(0.0, -x))


def _erf64(x, c=False):
    return np.vectorize(math.erfc if c else math.erf, otypes=[np.float64])(x)


F16_ACTIVATIONS = {
    "sigmoid": (F.sigmoid, _sigmoid64),
    "silu": (F.silu, lambda x: np.where(np.isneginf(x), -0.0, x * _sigmoid64(x))),
    "softplus": (F.softplus, lambda x: np.where(x > 20, x, np.logaddexp(0.0, x))),
    "erf": (F.erf, _erf64),
    "erfc": (F.erfc, lambda x: _erf64(x, True)),
    "gelu": (F.gelu, lambda x: np.where(np.isneginf(x), -0.0,
                                        0.5 * x * _erf64(-x / np.sqrt(2.0), True))),
    "elu": (F.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
}


def _f16_ulps(got: np.ndarray, ref64: np.ndarray) -> np.ndarray:
    """Distance in float16 steps from the float64 reference rounded to float16; a NaN, infinity
    or zero-sign mismatch counts as infinite."""
    with np.errstate(over="ignore", invalid="ignore"):
        ref = ref64.astype(np.float16)

    def ordered(v):
        b = v.view(np.int16).astype(np.int64)
        return np.where(b < 0, -(b & 0x7FFF), b)

    err = np.abs(ordered(got) - ordered(ref)).astype(np.float64)
    gn, rn = np.isnan(got), np.isnan(ref)
    err[gn & rn] = 0
    err[gn != rn] = np.inf
    zero = (ref == 0) & (got == 0)
    err[zero & (np.signbit(got) != np.signbit(ref))] = np.inf
    return err


def _check_f16(name, got, ref64):
    assert got.dtype == np.float16, (name, got.dtype)
    err = _f16_ulps(got, ref64)
    k = int(np.argmax(err))
    assert err[k] <= 1, f"{name}({ALL_F16[k]!r}) = {got[k]!r}, reference {ref64[k]!r}: {err[k]} ulp"


@pytest.mark.parametrize("name", F16_UNARY)
def test_float16_unary_every_value(device, name):
    got = np.asarray(getattr(gp, name)(gp.asarray(ALL_F16, device=device)))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _NP.get(name, getattr(np, name, None))(ALL_F16.astype(np.float64))
    _check_f16(name, got, ref)


@pytest.mark.parametrize("name", list(F16_ACTIVATIONS))
def test_float16_activation_every_value(device, name):
    fn, ref_fn = F16_ACTIVATIONS[name]
    got = np.asarray(fn(gp.asarray(ALL_F16, device=device)))
    with np.errstate(all="ignore"):
        ref = ref_fn(ALL_F16.astype(np.float64))
    _check_f16(name, got, ref)


mp.mp.dps = 40
_A = 2 * mp.sqrt(2 / mp.pi)
_K = mp.mpf(0.044715)
F64_ACTIVATIONS = {   # name -> (function, mpmath reference, range)
    "erf": (F.erf, mp.erf, (-7, 7)),
    "erfc": (F.erfc, mp.erfc, (-7, 27)),
    "gelu": (F.gelu, lambda x: x * mp.erfc(-x / mp.sqrt(2)) / 2, (-38, 10)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: x / (1 + mp.exp(-_A * (x + _K * x ** 3))), (-27, 10)),
    "sigmoid": (F.sigmoid, lambda x: 1 / (1 + mp.exp(-x)), (-745, 40)),
    "silu": (F.silu, lambda x: x / (1 + mp.exp(-x)), (-745, 40)),
    "softplus": (lambda x: F.softplus(x, threshold=1e300), lambda x: mp.log1p(mp.exp(x)),
                 (-745, 40)),
}


@pytest.mark.parametrize("name", list(F64_ACTIVATIONS))
def test_float64_activation_against_mpmath(device, name):
    """Within 3 float64 ulp of a 40-digit reference (of the smallest subnormal near 0)."""
    fn, ref_fn, (lo, hi) = F64_ACTIVATIONS[name]
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(lo, hi, 150), rng.uniform(-4, 4, 50),
                        -(10.0 ** rng.uniform(-300, 0, 20)), 10.0 ** rng.uniform(-300, 0, 20)])
    got = np.asarray(fn(gp.asarray(x, device=device)))
    err = []
    for g, v in zip(got, x):
        r = ref_fn(mp.mpf(float(v)))
        u = np.spacing(abs(float(r))) if r != 0 else np.spacing(0.0)
        err.append(float(abs(mp.mpf(float(g)) - r) / u))
    k = int(np.argmax(err))
    assert err[k] <= 3, f"{name}({x[k]!r}) = {got[k]!r}: {err[k]:.2f} ulp on {device}"
