"""Differential tests of every elementwise op against numpy, on every device and dtype."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import grilly as gp
from grilly.array.elementwise import BINARY, UNARY
from grilly.testing import assert_close

NP_NAME = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
           "atan": "arctan", "atanh": "arctanh", "atan2": "arctan2", "bitwise_invert": "invert",
           "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
           "pow": "power", "round": "rint"}
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128"]


def _ref(op, *args):
    with np.errstate(all="ignore"):
        if op == "reciprocal":
            return np.reciprocal(args[0]) if args[0].dtype.kind in "fc" else 1.0 / args[0]
        if op == "real":
            return np.real(args[0]).copy()
        if op == "imag":
            return np.imag(args[0]).copy() if args[0].dtype.kind == "c" else np.zeros_like(args[0])
        if op == "logical_xor":
            return np.logical_xor(*args)
        return getattr(np, NP_NAME.get(op, op))(*args)


def _data(dtype, n, seed):
    rng = np.random.default_rng(seed)
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if d.kind in "iu":
        info = np.iinfo(d)
        lo, hi = max(info.min, -100), min(info.max, 100)
        return rng.integers(lo, hi, n).astype(d)
    x = rng.standard_normal(n) * 3
    x[:3] = [0.0, np.inf, np.nan] if n >= 3 else x[:3]
    if d.kind == "c":
        x = x + 1j * rng.standard_normal(n)
    return x.astype(d)


def _accepts(table, op, dtype):
    return gp.DType.__new__ and getattr(gp, dtype) in table[op][0]


def _check(op, got, want, dtype):
    kind = np.dtype(dtype).kind
    rtol = 1e-5 if dtype in ("float32", "complex64") else 1e-12
    if op in ("acosh", "atanh", "asinh", "tan", "expm1", "log1p", "pow") and kind in "fc":
        rtol = max(rtol, 1e-5 if "32" in dtype or "64" == dtype[-2:] and kind == "c" else 1e-9)
    want = np.asarray(want)
    if want.dtype != np.asarray(got).dtype and want.dtype.kind == "f" and kind in "iu":
        want = want.astype(np.asarray(got).dtype)
    assert_close(got, want, rtol=rtol, atol=1e-30)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(device, op, dtype):
    x = _data(dtype, 37, 1)
    gx = gp.asarray(x, device=device)
    if getattr(gp, dtype) not in UNARY[op][0]:
        with pytest.raises(TypeError, match=op):
            getattr(gp, op)(gx)
        return
    want = _ref(op, x.astype(np.float64) if x.dtype.kind in "iu" and op in (
        "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan",
        "tanh", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "reciprocal") else x)
    if op == "sign" and x.dtype.kind == "c":
        # infinite inputs: the standard's direction rule, not numpy's NaN (checked elsewhere)
        x = np.where(np.isinf(x), 1 + 1j, x).astype(x.dtype)
        gx = gp.asarray(x, device=device)
        with np.errstate(all="ignore"):
            want = np.where(np.abs(x) == 0, 0, x / np.abs(x)).astype(x.dtype)
    if op == "round" and x.dtype.kind in "iu":
        want = x.copy()
    _check(op, getattr(gp, op)(gx), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary(device, op, dtype):
    a, b = _data(dtype, 41, 2), _data(dtype, 41, 3)
    if op in ("bitwise_left_shift", "bitwise_right_shift") and a.dtype.kind in "iu":
        b = np.abs(b.astype(np.int64)).astype(b.dtype) % (8 * a.dtype.itemsize)
    if op == "pow" and a.dtype.kind in "iu":
        b = np.abs(b.astype(np.int64)).astype(b.dtype) % 5
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    if getattr(gp, dtype) not in BINARY[op][0]:
        with pytest.raises(TypeError, match=op):
            getattr(gp, op)(ga, gb)
        return
    if op == "divide" and a.dtype.kind in "iu":
        a, b = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        want = _ref(op, a, b)
    if op in ("floor_divide", "remainder") and a.dtype.kind in "iu":
        want = np.where(b == 0, 0, want).astype(a.dtype)
    _check(op, getattr(gp, op)(ga, gb), want, dtype)


@given(hnp.arrays(np.float32, hnp.array_shapes(max_dims=3, max_side=5),
                  elements=st.floats(-1e3, 1e3, width=32)),
       st.sampled_from(["add", "subtract", "multiply", "maximum", "less", "equal"]))
def test_broadcasting_and_scalars(a, op):
    b = a[..., :1] if a.ndim else a
    ga, gb = gp.asarray(a), gp.asarray(b)
    assert_close(getattr(gp, op)(ga, gb), getattr(np, op)(a, b))
    assert_close(getattr(gp, op)(ga, 2.5), getattr(np, op)(a, np.float32(2.5)))
    assert_close(getattr(gp, op)(1.5, ga), getattr(np, op)(np.float32(1.5), a))


def test_strided_inputs(device):
    a = np.arange(60, dtype=np.float64).reshape(6, 10)
    ga = gp.asarray(a, device=device)
    assert_close(ga[::2, 1::3] * ga[1::2, 1::3], a[::2, 1::3] * a[1::2, 1::3])
    assert_close(gp.exp(ga.T[::3]), np.exp(a.T[::3]))


@pytest.mark.parametrize("pair", [("int8", 1.5), ("bool", 1), ("uint8", 1j), ("int64", 0.5),
                                  ("bool", 2.5)])
def test_scalars_of_a_higher_kind_promote_as_numpy(device, pair):
    """``arange(5) * 0.5``, ``mask * 2``: the Array API leaves a Python scalar of a higher kind
    unspecified; grilly gives NumPy's result (it raised TypeError), in place it still raises."""
    dtype, scalar = pair
    a = np.arange(3).astype(dtype)
    x = gp.asarray(a, device=device)
    cases = [(gp.add(x, scalar), a + scalar), (gp.multiply(scalar, x), scalar * a)]
    if not isinstance(scalar, complex):   # (complex numbers have no order in the Array API)
        cases.append((x < scalar, a < scalar))
    for got, want in cases:
        assert got.dtype == getattr(gp, str(want.dtype))
        assert_close(got, want)
    with pytest.raises(TypeError):
        x += scalar


def test_promotion_and_inplace(device):
    a = gp.asarray(np.arange(4, dtype=np.int8), device=device)
    b = gp.asarray(np.arange(4, dtype=np.uint8), device=device)
    assert (a + b).dtype == gp.int16
    assert gp.asarray(np.ones(2, np.float32), device=device).__add__(1.0).dtype == gp.float32
    c = gp.asarray(np.arange(4, dtype=np.int16), device=device)
    c += a
    assert_close(c, np.arange(4, dtype=np.int16) * 2)
    with pytest.raises(TypeError):
        a += b  # int16 result cannot be stored in int8


def test_large_arrays_take_the_parallel_path(device):
    n = (1 << 17) + 3
    a = np.linspace(-5, 5, n).astype(np.float32)
    ga = gp.asarray(a, device=device)
    assert_close(gp.exp(ga), np.exp(a), rtol=1e-6)
    assert_close(ga + ga[::-1], a + a[::-1])
    assert_close(ga * 2, a * 2)


def test_complex_tanh_large_and_special(device):
    # the sinh/cosh quotient overflows to inf/inf = NaN for |real| past ~44 in complex64
    inf, nan = np.inf, np.nan
    z = [46 + 1j, -46 + 1j, 0.5 + 0.3j, 1e3 - 2j, 25 + 0.5j, complex(inf, 1), complex(inf, inf),
         complex(0, inf), complex(0, nan), complex(nan, 0), complex(nan, 1)]
    for dtype in (np.complex64, np.complex128):
        a = np.array(z, dtype)
        with np.errstate(invalid="ignore"):
            want = np.tanh(a.astype(np.complex128)).astype(dtype)
        want[6] = 1  # tanh(inf + inf j) is 1 +/- 0j by the standard; numpy agrees up to sign
        assert_close(gp.tanh(gp.asarray(a, device=device)), want, rtol=1e-6)


@pytest.mark.parametrize("op", ["sin", "cos", "tan"])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_trig_of_inf_and_nan_is_nan(device, op, dt):
    # NVIDIA's Vulkan float sin/cos/tan give 0 here; the standard says NaN
    x = gp.asarray(np.array([np.inf, -np.inf, np.nan, 0.5], dt), device=device)
    got = np.asarray(getattr(gp, op)(x))
    assert np.isnan(got[:3]).all()
    assert_close(got[3:], getattr(np, op)(np.array([0.5], dt)))


@pytest.mark.parametrize("xs,lo,hi", [
    ((2, 1), (2, 0), None),  # the bounds broadcast x to a larger (empty) shape
    ((3, 1), (1, 4), (3, 4)),
    ((4,), (), (2, 1)),
    ((2, 3), None, None),
])
def test_clip_broadcasts_x_with_its_bounds(device, xs, lo, hi):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs)
    mn = None if lo is None else rng.standard_normal(lo) - 0.5
    mx = None if hi is None else rng.standard_normal(hi) + 3.0
    got = gp.clip(gp.asarray(x, device=device),
                  min=None if mn is None else gp.asarray(mn, device=device),
                  max=None if mx is None else gp.asarray(mx, device=device))
    want = x.copy() if mn is None and mx is None else np.clip(x, mn, mx)
    assert got.shape == want.shape
    assert_close(got, want)


def test_clip_scalar_bounds_and_bad_bounds(device):
    x = np.arange(-4, 5, dtype=np.int16)
    gx = gp.asarray(x, device=device)
    assert_close(gp.clip(gx, min=-2, max=3), np.clip(x, -2, 3))
    with pytest.raises(TypeError, match="clip"):
        gp.clip(gx, min=0.5)
    with pytest.raises(ValueError):
        gp.clip(gx, min=gp.asarray(np.zeros(4, np.int16), device=device))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_reciprocal_of_zero_is_one_over_zero(device, dtype):
    # numba's complex division raised ZeroDivisionError on 0j; the standard asks for 1 / x
    z = np.array([0j, complex(-0.0, 0.0), complex(0.0, -0.0), 2 - 1j, complex(np.nan, 0), 1e-300j],
                 dtype)
    with np.errstate(all="ignore"):
        want = (np.ones((), dtype) / z).astype(dtype)
    assert_close(gp.reciprocal(gp.asarray(z, device=device)), want, rtol=1e-6, equal_nan=True)


def test_small_binary_fast_path_on_views(device):
    """The small-call path (same shape, or one element) on transposed, sliced and 0-d operands
    and on a one-element array that broadcasts: the general path's results."""
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal((6, 5)), rng.standard_normal((5, 6))
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    v = rng.standard_normal(17)
    gv = gp.asarray(v, device=device)
    cases = [(ga, gp.matrix_transpose(gb), a, b.T), (ga[::2], ga[1::2], a[::2], a[1::2]),
             (gv[::3], gv[1::3], v[::3], v[1::3]),                          # strided 1-D
             (gv[::-2], gp.asarray(np.array([0.5]), device=device), v[::-2], np.array([0.5])),
             (ga, gp.asarray(np.array([[2.5]]), device=device), a, np.array([[2.5]])),
             (gp.asarray(np.float64(3.0), device=device), gp.asarray(np.float64(-1.5), device=device),
              np.float64(3.0), np.float64(-1.5))]
    for x, y, hx, hy in cases:
        for op in ("add", "multiply", "subtract", "maximum"):
            got = getattr(gp, op)(x, y)
            want = getattr(np, op)(hx, hy)
            assert got.shape == np.shape(want)
            np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), want)


@pytest.mark.parametrize("dtype,s", [("int8", 128), ("int8", -129), ("uint8", 256),
                                     ("uint8", -1), ("int16", 2**15), ("int64", 2**63)])
@pytest.mark.parametrize("op", ["add", "multiply", "bitwise_or"])
def test_python_int_out_of_dtype_range_raises(device, dtype, s, op):
    # numpy raises OverflowError for x + 128 on int8 x; Vulkan's scalar operand wrapped the int
    # (int8 + 128 gave x - 128, int8 < 128 gave False) where cpu raised numpy's bare message
    x = gp.asarray(np.arange(3, dtype=dtype), device=device)
    with pytest.raises(OverflowError, match=op):
        getattr(gp, op)(x, s)
    with pytest.raises(OverflowError, match=op):
        getattr(gp, op)(s, x)
    with pytest.raises(OverflowError, match="where"):
        gp.where(x > 0, x, s)
    with pytest.raises(OverflowError, match="searchsorted"):
        gp.searchsorted(x, s)
    info = np.iinfo(dtype)
    assert_close(gp.add(x, int(info.max) - 2), np.arange(3, dtype=dtype) + (info.max - 2))


@pytest.mark.parametrize("dtype,s", [("int8", 128), ("int8", -129), ("uint8", 256),
                                     ("uint8", -1), ("int16", 2**15), ("int64", 2**63),
                                     ("int64", -2**63 - 1), ("uint64", 2**64), ("uint32", -5)])
@pytest.mark.parametrize("op", ["less", "less_equal", "greater", "greater_equal", "equal",
                                "not_equal"])
def test_comparison_with_python_int_out_of_dtype_range(device, dtype, s, op):
    # NumPy 2 compares an integer array with any Python int (int8_array < 1000 is all True)
    # where arithmetic raises; grilly raised OverflowError (before 2026-11-27)
    h = np.array([0, 1, -1, 5], dtype=np.int64).astype(dtype)
    x = gp.asarray(h, device=device)
    for got, want in ((getattr(gp, op)(x, s), getattr(np, op)(h, s)),
                      (getattr(gp, op)(s, x), getattr(np, op)(s, h))):
        assert got.dtype == gp.bool and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want)
    ops = {"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
           "equal": "==", "not_equal": "!="}
    np.testing.assert_array_equal(np.asarray(eval(f"x {ops[op]} s")), eval(f"h {ops[op]} s"))
    np.testing.assert_array_equal(np.asarray(eval(f"s {ops[op]} x")), eval(f"s {ops[op]} h"))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32"])
def test_clip_int_bounds_past_the_dtype_range(device, dtype):
    # numpy: a bound past the dtype's range clips nothing on that side; cpu raised numpy's
    # OverflowError, Vulkan wrapped the bound (uint8 clipped to max=300 became max=44)
    x = np.array([0, 5, 100], dtype=dtype)
    gx = gp.asarray(x, device=device)
    assert_close(gp.clip(gx, 2, 2**40), np.clip(x, 2, np.iinfo(dtype).max))
    assert_close(gp.clip(gx, -(2**40), 6), np.clip(x, np.iinfo(dtype).min, 6))
    assert_close(gp.clip(gx, 2**40, None), np.clip(x, np.iinfo(dtype).max, None))
