"""float16 elementwise ops on every device: float16 storage, float32 compute, one rounding back,
against NumPy's float16 (which computes the same way). Arithmetic, comparisons and selections
must match bit for bit; transcendentals within one float16 ulp."""
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly.array.elementwise import BINARY, UNARY

NP = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
      "atanh": "arctanh", "atan2": "arctan2", "pow": "power", "round": "rint"}
EXACT = {"abs", "ceil", "floor", "trunc", "round", "conj", "real", "negative", "positive", "sign",
         "square", "sqrt", "reciprocal", "add", "subtract", "multiply", "divide", "floor_divide",
         "remainder", "copysign", "maximum", "minimum"}
UN = [k for k, (allowed, _, _) in UNARY.items() if gp.float16 in allowed and k != "imag"]
BIN = [k for k, (allowed, _, _) in BINARY.items() if gp.float16 in allowed]
_RNG = np.random.default_rng(0)
X = np.concatenate([_RNG.uniform(-4, 4, 400), _RNG.uniform(-1, 1, 200),
                    [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 65504.0, 6e-8, 1e-4, 0.5]]
                   ).astype(np.float16)
Y = _RNG.permutation(X)


def _ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    g, r = got.astype(np.float64), ref.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(r)
    same = (g == r) | both_nan
    with np.errstate(all="ignore"):
        err = np.abs(g - r) / np.spacing(np.abs(r).astype(np.float16)).astype(np.float64)
    return np.where(same, 0.0, np.where(np.isfinite(err), err, np.inf))


def _check(name, got, ref):
    if got.dtype == np.bool_:
        assert np.array_equal(got, ref), name
        return
    assert got.dtype == np.float16, (name, got.dtype)
    err = _ulps(got, ref)
    assert err.max() <= (0 if name in EXACT else 1), (name, err.max(), X[np.argmax(err)])
    zero = (ref == 0) & (got == 0)
    assert np.array_equal(np.signbit(got[zero]), np.signbit(ref[zero])), name


@pytest.mark.parametrize("name", UN)
def test_unary_float16(device, name):
    got = np.asarray(getattr(gp, name)(gp.asarray(X, device=device)))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = getattr(np, NP.get(name, name))(X)
    _check(name, got, ref)


@pytest.mark.parametrize("name", BIN)
def test_binary_float16(device, name):
    a, b = gp.asarray(X, device=device), gp.asarray(Y, device=device)
    got = np.asarray(getattr(gp, name)(a, b))
    with np.errstate(all="ignore"):
        ref = getattr(np, NP.get(name, name))(X, Y)
        if name == "floor_divide":   # the standard: +-inf // finite is +-inf (NumPy: nan)
            ref = np.where(np.isinf(X) & np.isfinite(Y), X / Y, ref)
    _check(name, got, ref)


def test_where_float16_keeps_bits(device):
    c = gp.asarray(X > 0, device=device)
    got = np.asarray(gp.where(c, gp.asarray(X, device=device), gp.asarray(Y, device=device)))
    assert np.array_equal(got.view(np.uint16), np.where(X > 0, X, Y).view(np.uint16))
