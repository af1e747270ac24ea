"""Accuracy of grilly's float math on every device, in ulps against a float64 reference.

Each function is swept over 10^6 random points per range (GRILLY_ACCURACY_N changes that) plus
edge points: a "typical" range drawn uniformly, and a "wide" range drawn uniformly over the bit
patterns of the function's whole float32 domain, so every binade counts alike. The reference is
NumPy's float64 function of the float32 input, rounded to float32; the error of a result is its
distance from the reference in float32 steps (subnormal steps included). Bar: 4 ulp.
Special values (nan, +-inf, +-0) must match the reference exactly, sign of zero included.

Subnormals: functions of grilly's shader library (shaders/math_f32*.glsl) must get subnormal
inputs and results right on every device, also on one whose float32 arithmetic flushes them to
zero (NVIDIA's Vulkan driver: shaderDenormPreserveFloat32 is false there), since they read and
build such values from bits. The activations written as array-level composites (COMPOSITES) are as
exact as the device's arithmetic: on a flushing device their subnormal inputs count as +-0 and a
subnormal result may come out as +-0 (docs/vulkan.md, floating-point semantics).

    python tests/test_float_accuracy.py [DEVICE ...]     # prints the table of worst errors
"""
from __future__ import annotations

import math
import os
import sys
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly.nn import functional as F

N = int(os.environ.get("GRILLY_ACCURACY_N", 10**6))
BAR = 4
F32_MAX = float(np.finfo(np.float32).max)
TINY = float(np.finfo(np.float32).smallest_subnormal)


def _erf64(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _erfc64(x):
    return np.vectorize(math.erfc, otypes=[np.float64])(x)


def _softplus64(x):
    return np.logaddexp(0.0, x)


def _sigmoid64(x):
    return np.exp(-np.logaddexp(0.0, -x))


def _gelu64(x):
    # x * erfc(-x / sqrt 2) / 2: 1 + erf(x / sqrt 2) cancels in float64 for x << 0; the limit
    # at -inf is -0 (x * 0 would be nan)
    return np.where(np.isneginf(x), -0.0, 0.5 * x * _erfc64(-x / math.sqrt(2.0)))


def _gelu_tanh64(x):
    # torch's tanh form 0.5 x (1 + tanh(u)) as x sigmoid(2u), which does not cancel for x << 0
    v = math.sqrt(8.0 / math.pi) * (x + 0.044715 * x ** 3)
    return np.where(np.isneginf(x), -0.0, x * _sigmoid64(v))


def _silu64(x):
    return np.where(np.isneginf(x), -0.0, x * _sigmoid64(x))


# name -> (grilly function, float64 reference, typical range, wide range (whole float32 domain));
# binary functions take both operands from the same ranges
UNARY = {
    "exp": (gp.exp, np.exp, (-10, 10), (-104, 89)),
    "expm1": (gp.expm1, np.expm1, (-1, 1), (-F32_MAX, 89)),
    "log": (gp.log, np.log, (0, 10), (0, F32_MAX)),
    "log1p": (gp.log1p, np.log1p, (-0.5, 1), (-1, F32_MAX)),
    "log2": (gp.log2, np.log2, (0, 10), (0, F32_MAX)),
    "log10": (gp.log10, np.log10, (0, 10), (0, F32_MAX)),
    "sinh": (gp.sinh, np.sinh, (-5, 5), (-90, 90)),
    "cosh": (gp.cosh, np.cosh, (-5, 5), (-90, 90)),
    "tanh": (gp.tanh, np.tanh, (-5, 5), (-F32_MAX, F32_MAX)),
    "asinh": (gp.asinh, np.arcsinh, (-10, 10), (-F32_MAX, F32_MAX)),
    "acosh": (gp.acosh, np.arccosh, (1, 10), (1, F32_MAX)),
    "atanh": (gp.atanh, np.arctanh, (-0.99, 0.99), (-1, 1)),
    "sin": (gp.sin, np.sin, (-10, 10), (-F32_MAX, F32_MAX)),
    "cos": (gp.cos, np.cos, (-10, 10), (-F32_MAX, F32_MAX)),
    "tan": (gp.tan, np.tan, (-10, 10), (-F32_MAX, F32_MAX)),
    "asin": (gp.asin, np.arcsin, (-1, 1), (-1, 1)),
    "acos": (gp.acos, np.arccos, (-1, 1), (-1, 1)),
    "atan": (gp.atan, np.arctan, (-10, 10), (-F32_MAX, F32_MAX)),
    "sqrt": (gp.sqrt, np.sqrt, (0, 10), (0, F32_MAX)),
    "reciprocal": (gp.reciprocal, np.reciprocal, (-10, 10), (-F32_MAX, F32_MAX)),
    "sigmoid": (F.sigmoid, _sigmoid64, (-10, 10), (-F32_MAX, F32_MAX)),
    "softplus": (lambda x: F.softplus(x, threshold=1e30), _softplus64, (-10, 10), (-F32_MAX, F32_MAX)),
    "silu": (F.silu, _silu64, (-10, 10), (-F32_MAX, F32_MAX)),
    "erf": (F.erf, _erf64, (-3, 3), (-F32_MAX, F32_MAX)),
    "erfc": (F.erfc, _erfc64, (-3, 10), (-F32_MAX, F32_MAX)),
    "gelu": (F.gelu, _gelu64, (-5, 5), (-F32_MAX, F32_MAX)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), _gelu_tanh64, (-5, 5), (-F32_MAX, F32_MAX)),
}
BINARY = {
    "atan2": (gp.atan2, np.arctan2, (-10, 10), (-F32_MAX, F32_MAX)),
    "pow": (gp.pow, np.power, (0, 4), (0, F32_MAX)),
    "hypot": (gp.hypot, np.hypot, (-10, 10), (-F32_MAX, F32_MAX)),
    "logaddexp": (gp.logaddexp, np.logaddexp, (-10, 10), (-F32_MAX, F32_MAX)),
    "divide": (gp.divide, np.divide, (-10, 10), (-F32_MAX, F32_MAX)),
}
FUNCS = {**UNARY, **BINARY}
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, TINY, -TINY,
                  1e-40, -1e-40, 1.1754944e-38, -1.1754944e-38, 1e-30, -1e-30, 1e-7, -1e-7, 1e-4,
                  -1e-4, 0.1, -0.1, 0.999999, -0.999999, 1.000001, 3.0, -3.0, 10.0, -10.0, 20.0,
                  -20.0, 88.7, -87.4, 89.0, -103.9, -104.0, 1e10, -1e10, 3.4e38, -3.4e38, F32_MAX,
                  -F32_MAX, 1.5707964, 3.1415927, 6.2831855, 1e5, 7e5, 1e20], dtype=np.float32)


def _ordered(bits: np.ndarray) -> np.ndarray:
    """float32 bit patterns as integers ordered like the floats (-0 and +0 both 0)."""
    b = bits.astype(np.int64)
    return np.where(b < 0, -(b & 0x7FFFFFFF), b)


def _wide(rng, n: int, lo: float, hi: float) -> np.ndarray:
    """n float32 values drawn uniformly over the bit patterns of [lo, hi]."""
    a, b = _ordered(np.array([lo, hi], np.float32).view(np.int32))
    o = rng.integers(a, b + 1, n)
    return np.where(o < 0, (-o) | np.int64(-2**31), o).astype(np.int32).view(np.float32)


# composites of array operations (grilly/nn/functional.py), not shader-library functions
COMPOSITES = {"sigmoid", "softplus", "silu", "erf", "erfc", "gelu", "gelu_tanh"}
F32_MIN = float(np.finfo(np.float32).tiny)


def flushes_subnormals(device) -> bool:
    """Whether float32 arithmetic on ``device`` flushes subnormal results to zero."""
    x = gp.asarray(np.array([1e-20], np.float32), device=device)
    return float(np.asarray(x * x)[0]) == 0.0


def _flush(v: np.ndarray) -> np.ndarray:
    """Subnormals replaced by zeros of their sign (what a flushing device's arithmetic sees)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(v) < F32_MIN, np.copysign(0.0, v), v).astype(v.dtype)


def _points(rng, rng_typ, rng_wide, n: int) -> dict[str, np.ndarray]:
    lo, hi = rng_typ
    typ = rng.uniform(lo, hi, n).astype(np.float32)
    wide = _wide(rng, n, *rng_wide)
    return {"typical": typ, "wide": wide, "edges": EDGES.copy()}


def ulp_error(got: np.ndarray, ref64: np.ndarray) -> np.ndarray:
    """Distance in float32 steps from the float64 reference rounded to float32; a NaN or
    infinity mismatch, or a zero of the wrong sign, counts as an infinite error."""
    with np.errstate(over="ignore", invalid="ignore"):
        ref = ref64.astype(np.float32)
    got = got.astype(np.float32)
    err = np.abs(_ordered(got.view(np.int32)) - _ordered(ref.view(np.int32))).astype(np.float64)
    gn, rn = np.isnan(got), np.isnan(ref)
    err[gn & rn] = 0
    err[gn != rn] = np.inf
    zero = ref == 0
    err[zero & (np.signbit(got) != np.signbit(ref)) & (got == 0)] = np.inf
    return err


def measure(name: str, device, n: int = N, seed: int = 0) -> dict[str, tuple[float, float]]:
    """Worst ulp error (and the input where it occurs) per range of function ``name``."""
    fn, ref_fn, typ, wide = FUNCS[name]
    ftz = name in COMPOSITES and flushes_subnormals(device)
    rng = np.random.default_rng(seed)
    out = {}
    for rname, x in _points(rng, typ, wide, n).items():
        if name in BINARY:
            if rname == "edges":
                x, y = np.meshgrid(x, x)
                x, y = x.ravel(), y.ravel()
            else:
                y = _points(rng, typ, wide, n)[rname]
            got = np.asarray(fn(gp.asarray(x, device=device), gp.asarray(y, device=device)))
            with np.errstate(all="ignore"):
                ref = ref_fn(x.astype(np.float64), y.astype(np.float64))
        else:
            got = np.asarray(fn(gp.asarray(x, device=device)))
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = ref_fn(x.astype(np.float64))
        err = ulp_error(got, ref)
        if ftz:  # a flushing device: inputs read as +-0, a subnormal result may come out 0
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref0 = ref_fn(_flush(x).astype(np.float64))
            err = np.fmin(err, np.fmin(ulp_error(got, ref0), ulp_error(got, _flush(ref0))))
        if name == "logaddexp":  # cancels near a zero result: ulps of max(|result|, |max(a, b)|)
            with np.errstate(all="ignore"):
                scale = np.fmax(np.abs(ref), np.abs(np.fmax(x, y))).astype(np.float32)
                err = np.fmin(err, np.abs(got - ref) / np.spacing(scale))
        k = int(np.argmax(err))
        out[rname] = (float(err[k]), float(x[k]) if name in UNARY else (float(x[k]), float(y[k])))
    return out


@pytest.mark.parametrize("name", list(FUNCS))
def test_float32_accuracy(device, name):
    """The worst error over 10^6 points per range, plus edge points, is within the bar."""
    res = measure(name, device)
    bad = {r: v for r, v in res.items() if not v[0] <= BAR}
    assert not bad, f"{name} on {device}: worst ulp error (error, at input) {bad}, bar {BAR}"


def main(argv: list[str]) -> int:
    """Print the worst error per function and range on each device given (default: all)."""
    devs = argv or [str(d) for d in gp.devices()]
    print(f"worst float32 error in ulp, {N} points per range (+ edges); bar {BAR}")
    cols = [f"{d} {r}" for d in devs for r in ("typical", "wide", "edges")]
    print(f"{'function':12s}" + "".join(f"{c:>24s}" for c in cols))
    worst = 0.0
    for name in FUNCS:
        row = []
        for d in devs:
            res = measure(name, gp.backends.registry.device(d))
            row += [res[r][0] for r in ("typical", "wide", "edges")]
        worst = max(worst, *row)
        print(f"{name:12s}" + "".join(f"{v:24.0f}" if math.isfinite(v) else f"{'special':>24s}" for v in row),
              flush=True)
    return 0 if worst <= BAR else 1



def test_negative_abs_exact(device):
    """negative and abs change only the sign bit, subnormals and NaN payloads included, also on a
    device whose float32 arithmetic flushes subnormals."""
    x = np.concatenate([EDGES, _wide(np.random.default_rng(1), 10000, -F32_MAX, F32_MAX)])
    a = gp.asarray(x, device=device)
    bits = x.view(np.uint32)
    assert np.array_equal(np.asarray(gp.negative(a)).view(np.uint32), bits ^ np.uint32(0x80000000))
    assert np.array_equal(np.asarray(gp.abs(a)).view(np.uint32), bits & np.uint32(0x7FFFFFFF))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
