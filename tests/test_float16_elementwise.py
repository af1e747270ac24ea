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


# 16-bit rows of four elements a step (elementwise.comp's VEC4 for 16-bit dtypes, cast.comp's
# RAW16 copies): every layout the host lets through, and the ones it must not
X4 = np.concatenate([X, X[:1]]).reshape(3, 17, 12)   # 612 elements: rows of 12
Y4 = np.concatenate([Y, Y[:1]]).reshape(3, 17, 12)
LAYOUTS = {   # name -> (x of the op, y of the op) built from the (3, 17, 12) pair
    "flat": lambda x, y: (x.reshape(-1), y.reshape(-1)),
    "permuted": lambda x, y: (x.transpose(1, 0, 2), y.transpose(1, 0, 2)),
    "column": lambda x, y: (x, y[:, :, :1]),        # a broadcast element per row
    "row": lambda x, y: (x, y[:1, :1, :]),          # a broadcast row
    "offset4": lambda x, y: (x[:, :, 4:], y[:, :, :8]),
    "offset2": lambda x, y: (x[:, :, 2:10], y[:, :, 4:12]),   # misaligned: one element a step
    "transposed": lambda x, y: (x.transpose(0, 2, 1), y.transpose(0, 2, 1)),
}


def _layout(device, name, x, y):
    a, b = gp.asarray(x, device=device), gp.asarray(y, device=device)
    xs, ys = LAYOUTS[name](x, y)
    if name == "flat":
        return gp.reshape(a, (-1,)), gp.reshape(b, (-1,)), xs, ys
    if name in ("permuted", "transposed"):
        axes = (1, 0, 2) if name == "permuted" else (0, 2, 1)
        return gp.permute_dims(a, axes), gp.permute_dims(b, axes), xs, ys
    idx = {"column": ((slice(None),) * 3, (slice(None), slice(None), slice(0, 1))),
           "row": ((slice(None),) * 3, (slice(0, 1), slice(0, 1), slice(None))),
           "offset4": ((slice(None), slice(None), slice(4, None)),
                       (slice(None), slice(None), slice(0, 8))),
           "offset2": ((slice(None), slice(None), slice(2, 10)),
                       (slice(None), slice(None), slice(4, 12)))}[name]
    return a[idx[0]], b[idx[1]], xs, ys


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "maximum"])
def test_binary_float16_rows_of_4(device, name, layout):
    """Bit for bit NumPy's float16 (subnormals, signed zeros, inf and NaN in the data) in every
    layout: contiguous, permuted outer axes, broadcast columns and rows, offset views."""
    a, b, x, y = _layout(device, layout, X4, Y4)
    with np.errstate(all="ignore"):
        ref = getattr(np, name)(x, y)
    _check(name, np.asarray(getattr(gp, name)(a, b)), ref)


@pytest.mark.parametrize("layout", ["flat", "permuted", "offset4", "offset2"])
@pytest.mark.parametrize("name", ["negative", "sqrt", "exp", "abs"])
def test_unary_float16_rows_of_4(device, name, layout):
    a, _, x, _ = _layout(device, layout, X4, Y4)
    with np.errstate(all="ignore"):
        ref = getattr(np, name)(x)
    _check(name, np.asarray(getattr(gp, name)(a)), ref)


@pytest.mark.parametrize("dtype", ["int16", "uint16"])
@pytest.mark.parametrize("layout", ["flat", "permuted", "column", "offset4"])
def test_int16_rows_of_4(device, dtype, layout):
    """16-bit integers widen with their sign (int16) or without (uint16), wrap on the store."""
    info = np.iinfo(dtype)
    x = _RNG.integers(info.min, info.max, (3, 17, 12), endpoint=True).astype(dtype)
    y = _RNG.integers(info.min, info.max, (3, 17, 12), endpoint=True).astype(dtype)
    a, b, xs, ys = _layout(device, layout, x, y)
    assert np.array_equal(np.asarray(a + b), xs + ys)
    assert np.array_equal(np.asarray(gp.maximum(a, b)), np.maximum(xs, ys))


@pytest.mark.parametrize("dtype", ["float16", "int16", "uint16", "bfloat16"])
@pytest.mark.parametrize("layout", ["permuted", "offset4", "offset2", "transposed"])
def test_16bit_copies_keep_bits(device, dtype, layout):
    """A 16-bit view made contiguous keeps every bit (NaN payloads, subnormals, -0.0)."""
    bits = _RNG.integers(0, 2**16, (3, 17, 12)).astype(np.uint16)
    bits[0, 0, :4] = (0x7C01, 0xFE37, 0x8000, 0x0001)   # NaN payloads, -0.0, a subnormal
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        bits[0, 0, 1] = 0xFFC1   # (a bfloat16 NaN with a payload)
        x = bits.view(ml_dtypes.bfloat16)
    else:
        x = bits.view(dtype)
    v, _, xs, _ = _layout(device, layout, x, x)
    got = np.asarray(gp.reshape(v, (-1,)))
    assert np.array_equal(got.view(np.uint16), np.ascontiguousarray(xs).reshape(-1).view(np.uint16))
