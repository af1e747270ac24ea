"""Sorting, set and utility functions against numpy: sort, argsort, unique_*, isin, all, any,
diff."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grilly as gp
from grilly.testing import assert_close

fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def _arr(device, shape, dtype, seed=0, nan=False):
    rng = np.random.default_rng(seed)
    h = rng.integers(-3, 4, size=shape).astype(dtype)
    if nan and h.size and h.dtype.kind == "f":
        h.reshape(-1)[rng.integers(0, h.size, 2)] = np.nan
    return h, gp.asarray(h, device=device)


@fixture_ok
@given(shape=st.lists(st.integers(0, 6), min_size=1, max_size=3), data=st.data(),
       dtype=st.sampled_from(["bool", "int16", "uint8", "float32", "float64"]),
       descending=st.booleans(), nan=st.booleans())
def test_sort_argsort(device, shape, data, dtype, descending, nan):
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    h, x = _arr(device, tuple(shape), dtype, seed=nd, nan=nan)
    if descending:
        # the reverse of numpy's stable order, ties kept in their original order (array-api-strict)
        rev = np.flip(np.argsort(np.flip(h, axis), axis=axis, kind="stable"), axis)
        ref_idx = h.shape[axis] - 1 - rev
    else:
        ref_idx = np.argsort(h, axis=axis, kind="stable")
    assert_close(gp.argsort(x, axis=axis, descending=descending), ref_idx.astype(np.int64))
    assert_close(gp.sort(x, axis=axis, descending=descending),
                 np.take_along_axis(h, ref_idx, axis))


def test_sort_large_and_errors(device):
    h = np.random.default_rng(0).standard_normal((64, 4096))
    x = gp.asarray(h, device=device)
    assert_close(gp.sort(x, axis=0), np.sort(h, axis=0))
    assert_close(gp.argsort(x), np.argsort(h, kind="stable"))
    with pytest.raises(gp.AxisError):
        gp.sort(x, axis=2)
    with pytest.raises(TypeError):
        gp.sort(gp.asarray(np.array([1j]), device=device))
    with pytest.raises(gp.AxisError):
        gp.sort(gp.asarray(np.float64(1.0), device=device))


@fixture_ok
@given(shape=st.lists(st.integers(0, 5), min_size=0, max_size=3),
       dtype=st.sampled_from(["bool", "int32", "float64", "complex128"]), nan=st.booleans())
def test_unique(device, shape, dtype, nan):
    h, x = _arr(device, tuple(shape), dtype, nan=nan)
    # np.unique sorts (numpy 2.3+ unique_values may not); grilly returns sorted values
    values, index, inverse, counts = np.unique(h, return_index=True, return_inverse=True,
                                               return_counts=True, equal_nan=False)
    got = gp.unique_all(x)
    assert_close(got.values, values)
    assert_close(got.indices, index.astype(np.int64))
    assert_close(got.inverse_indices, inverse.reshape(h.shape).astype(np.int64))
    assert_close(got.counts, counts.astype(np.int64))
    assert_close(gp.unique_values(x), values)
    v, c = gp.unique_counts(x)
    assert_close(c, counts.astype(np.int64))
    v, inv = gp.unique_inverse(x)
    assert inv.shape == h.shape


def test_unique_nans_are_distinct(device):
    x = gp.asarray(np.array([np.nan, 1.0, np.nan, 1.0]), device=device)
    v, c = gp.unique_counts(x)
    assert v.shape == (3,)
    assert c.tolist() == [2, 1, 1]


@fixture_ok
@given(n=st.integers(0, 20), m=st.integers(0, 20), invert=st.booleans(),
       dtype=st.sampled_from(["int8", "float64"]))
def test_isin(device, n, m, invert, dtype):
    rng = np.random.default_rng(n * 7 + m)
    a = rng.integers(0, 10, n).astype(dtype)
    b = rng.integers(0, 10, m).astype(dtype)
    if dtype == "float64" and n and m:
        a[0] = b[0] = np.nan
    got = gp.isin(gp.asarray(a, device=device), gp.asarray(b, device=device), invert=invert)
    assert_close(got, np.isin(a, b, invert=invert))


def test_isin_scalars_and_promotion(device):
    a = gp.asarray(np.array([[1, 2], [3, 4]], np.int16), device=device)
    assert_close(gp.isin(a, 3), np.isin(np.array([[1, 2], [3, 4]]), 3))
    assert_close(gp.isin(2, a), np.asarray(True))
    b = gp.asarray(np.array([2.0, 4.5]), device=device)   # int16 with float64: NumPy's promotion
    assert_close(gp.isin(a, b), np.isin(np.array([[1, 2], [3, 4]], np.int16), [2.0, 4.5]))
    c = gp.asarray(np.array([2, 4], np.int64), device=device)
    assert_close(gp.isin(a, c), np.isin(np.array([[1, 2], [3, 4]]), [2, 4]))


@fixture_ok
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=3), data=st.data(),
       dtype=st.sampled_from(["bool", "int8", "float32", "complex64"]), keepdims=st.booleans(),
       op=st.sampled_from(["all", "any"]))
def test_all_any(device, shape, data, dtype, keepdims, op):
    nd = len(shape)
    axis = data.draw(st.none() | st.integers(-nd, nd - 1)) if nd else None
    rng = np.random.default_rng(nd)
    h = (rng.random(tuple(shape)) > 0.3).astype(dtype)
    x = gp.asarray(h, device=device)
    assert_close(getattr(gp, op)(x, axis=axis, keepdims=keepdims),
                 getattr(np, op)(h, axis=axis, keepdims=keepdims))


def test_all_any_large(device):
    h = np.ones(1 << 18, bool)
    h[123456] = False
    x = gp.asarray(h, device=device)
    assert not bool(gp.all(x)) and bool(gp.any(x))


@fixture_ok
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data(),
       n=st.integers(0, 3), dtype=st.sampled_from(["int32", "float64", "bool"]),
       pre=st.booleans(), app=st.booleans())
def test_diff(device, shape, data, n, dtype, pre, app):
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    h, x = _arr(device, tuple(shape), dtype)
    kw, gkw = {}, {}
    if pre:
        gkw["prepend"] = 1 if dtype != "bool" else True
        kw["prepend"] = np.array(gkw["prepend"], dtype)  # a Python scalar takes x's dtype
    if app:
        es = list(shape)
        es[axis] = 2
        e = np.ones(es, dtype)
        kw["append"], gkw["append"] = e, gp.asarray(e, device=device)
    assert_close(gp.diff(x, axis=axis, n=n, **gkw), np.diff(h, axis=axis, n=n, **kw))


def test_diff_errors(device):
    x = gp.asarray(np.ones((2, 3)), device=device)
    with pytest.raises(ValueError):
        gp.diff(gp.asarray(np.float64(1.0), device=device))
    with pytest.raises(gp.AxisError):
        gp.diff(x, axis=2)
    with pytest.raises(ValueError):
        gp.diff(x, n=-1)
    with pytest.raises(ValueError):
        gp.diff(x, axis=1, append=gp.asarray(np.ones((3, 1)), device=device))
