"""Statistical functions against numpy: sum, prod, max, min, mean, var, std, cumulative_*."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grilly as gp
from grilly.testing import assert_close

fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])

DTYPES = ["int8", "int32", "uint16", "int64", "float32", "float64"]


def _arr(device, shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    h = (rng.standard_normal(shape) * 5).astype(dtype) if "float" in dtype else \
        rng.integers(0, 5, size=shape).astype(dtype)
    return h, gp.asarray(h, device=device)


@st.composite
def shapes_axes(draw):
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=0, max_size=4)))
    nd = len(shape)
    if draw(st.booleans()) or nd == 0:
        axis = None
    elif draw(st.booleans()):
        axis = draw(st.integers(-nd, nd - 1))
    else:
        axis = tuple(draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd)))
    return shape, axis


@fixture_ok
@given(sa=shapes_axes(), dtype=st.sampled_from(DTYPES), keepdims=st.booleans(),
       op=st.sampled_from(["sum", "prod", "max", "min"]))
def test_reductions_match_numpy(device, sa, dtype, keepdims, op):
    shape, axis = sa
    h, x = _arr(device, shape, dtype)
    ref = getattr(np, op)(h, axis=axis, keepdims=keepdims)
    if op in ("sum", "prod") and h.dtype.kind in "iu":
        ref = ref.astype(np.int64 if h.dtype.kind == "i" else np.uint64)
    assert_close(getattr(gp, op)(x, axis=axis, keepdims=keepdims), ref, rtol=1e-5, atol=1e-5)


@fixture_ok
@given(sa=shapes_axes(), dtype=st.sampled_from(["float32", "float64", "int32"]),
       keepdims=st.booleans(), op=st.sampled_from(["mean", "var", "std"]))
def test_moments_match_numpy(device, sa, dtype, keepdims, op):
    shape, axis = sa
    h, x = _arr(device, shape, dtype)
    with np.errstate(all="ignore"):
        ref = getattr(np, op)(h.astype(np.float64) if dtype == "int32" else h, axis=axis,
                              keepdims=keepdims)
    assert_close(getattr(gp, op)(x, axis=axis, keepdims=keepdims), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [1, 1000, 4097, (1 << 17) + 3, 1 << 20])
def test_large_float32_sum_is_accurate(device, n):
    h = np.random.default_rng(1).random(n).astype(np.float32)
    x = gp.asarray(h, device=device)
    exact = h.astype(np.float64).sum()
    assert abs(float(gp.sum(x)) - exact) <= 2e-6 * exact + 1e-6
    assert float(gp.max(x)) == h.max() and float(gp.min(x)) == h.min()
    assert abs(float(gp.mean(x)) - exact / n) <= 2e-6


@pytest.mark.parametrize("shape,axis", [((300, 600), 0), ((300, 600), 1), ((3, 50000), 1),
                                        ((40, 70, 60), (0, 2))])
def test_large_axis_reductions(device, shape, axis):
    h, x = _arr(device, shape, "float64")
    for op in ("sum", "max", "min"):
        assert_close(getattr(gp, op)(x, axis=axis), getattr(np, op)(h, axis=axis), rtol=1e-10)


def test_nan_propagates(device):
    h = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    x = gp.asarray(h, device=device)
    for op in ("max", "min", "sum", "mean"):
        assert_close(getattr(gp, op)(x, axis=1), getattr(np, op)(h, axis=1))
    big = np.ones(1 << 18, np.float32)
    big[77777] = np.nan
    assert np.isnan(float(gp.max(gp.asarray(big, device=device))))


def test_dtypes(device):
    x = gp.asarray(np.array([1, 2], np.int16), device=device)
    assert gp.sum(x).dtype == gp.int64 and gp.prod(x).dtype == gp.int64
    assert gp.sum(gp.asarray(np.array([1, 2], np.uint8), device=device)).dtype == gp.uint64
    assert gp.sum(x, dtype=gp.float32).dtype == gp.float32
    assert gp.max(x).dtype == gp.int16
    assert gp.mean(x).dtype == gp.float64
    f = gp.asarray(np.array([1, 2], np.float32), device=device)
    assert gp.sum(f).dtype == gp.float32 and gp.mean(f).dtype == gp.float32
    b = gp.asarray(np.array([True, True, False]), device=device)
    assert int(gp.sum(b)) == 2 and gp.sum(b).dtype == gp.int64
    c = gp.asarray(np.array([1 + 2j, 3 - 1j], np.complex128), device=device)
    assert_close(gp.sum(c), np.sum(np.array([1 + 2j, 3 - 1j])))
    assert_close(gp.mean(c), np.mean(np.array([1 + 2j, 3 - 1j])))


def test_empty_reductions(device):
    e = gp.asarray(np.zeros((0, 3), np.float32), device=device)
    assert_close(gp.sum(e, axis=0), np.zeros(3, np.float32))
    assert_close(gp.prod(e), np.float32(1))
    assert np.isnan(float(gp.mean(e)))
    with pytest.raises(ValueError, match="max"):
        gp.max(e)
    with pytest.raises(ValueError, match="min"):
        gp.min(e, axis=0)
    assert gp.max(e, axis=1).shape == (0,)
    assert np.isnan(float(gp.var(gp.asarray(np.ones(2), device=device), correction=2)))


def test_errors(device):
    x = gp.asarray(np.ones((2, 3), np.float32), device=device)
    with pytest.raises(gp.AxisError):
        gp.sum(x, axis=2)
    with pytest.raises(IndexError):
        gp.max(x, axis=-3)
    with pytest.raises(ValueError, match="repeated"):
        gp.sum(x, axis=(0, 0))
    with pytest.raises(TypeError):
        gp.max(gp.asarray(np.array([1j]), device=device))
    with pytest.raises(TypeError):
        gp.var(gp.asarray(np.array([True]), device=device))
    with pytest.raises(TypeError):
        gp.sum(np.ones(3))
    with pytest.raises(TypeError):
        gp.sum(x, dtype=gp.bool)
    with pytest.raises(ValueError, match="axis"):
        gp.cumulative_sum(x)


@fixture_ok
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3), data=st.data(),
       dtype=st.sampled_from(["int16", "float64", "uint8"]), init=st.booleans(),
       op=st.sampled_from(["cumulative_sum", "cumulative_prod"]))
def test_cumulative(device, shape, data, dtype, init, op):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    h, x = _arr(device, tuple(shape), dtype)
    ref = (np.cumsum if op == "cumulative_sum" else np.cumprod)(
        h, axis=axis, dtype={"int16": np.int64, "uint8": np.uint64}.get(dtype))
    if init:
        pad = [(0, 0)] * h.ndim
        pad[axis] = (1, 0)
        ref = np.pad(ref, pad, constant_values=0 if op == "cumulative_sum" else 1)
    assert_close(getattr(gp, op)(x, axis=axis, include_initial=init), ref, rtol=1e-10)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("op", ["mean", "var", "std"])
def test_float16_moments_accumulate_in_float32(device, op):
    """float16 moments that fit though their sums or squares do not (a row near 4e4, a row of
    std 200, std 300 whose variance alone overflows): numpy and torch accumulate float16 in
    float32; the float64 value rounded to float16 (inf only where it does not fit)."""
    rng = np.random.default_rng(4)
    h = (rng.standard_normal((3, 8)) * np.array([[8.0], [200.0], [300.0]])
         + np.array([[4e4], [0.0], [0.0]])).astype(np.float16)
    x = gp.asarray(h, device=device)
    for axis in (None, 1, 0):
        got = getattr(gp, op)(x, axis=axis)
        with np.errstate(over="ignore"):
            want = getattr(np, op)(h.astype(np.float64), axis=axis).astype(np.float16)
        assert got.dtype == gp.float16
        np.testing.assert_allclose(np.asarray(got).astype(np.float64), want.astype(np.float64),
                                   rtol=2e-3, err_msg=f"{op} axis={axis}")
