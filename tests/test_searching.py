"""Searching functions against numpy: argmax, argmin, count_nonzero, nonzero, searchsorted,
where."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grilly as gp
from grilly.testing import assert_close

fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def _arr(device, shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.integers(-3, 4, size=shape).astype(dtype)
    return h, gp.asarray(h, device=device)


@fixture_ok
@given(shape=st.lists(st.integers(1, 5), min_size=0, max_size=3), data=st.data(),
       dtype=st.sampled_from(["int8", "uint16", "float32", "float64"]), keepdims=st.booleans(),
       op=st.sampled_from(["argmax", "argmin"]))
def test_arg_extremes(device, shape, data, dtype, keepdims, op):
    nd = len(shape)
    axis = data.draw(st.none() | st.integers(-nd, nd - 1)) if nd else None
    h, x = _arr(device, tuple(shape), dtype)
    ref = getattr(np, op)(h, axis=axis, keepdims=keepdims)
    assert_close(getattr(gp, op)(x, axis=axis, keepdims=keepdims), np.asarray(ref, np.int64))


def test_arg_nan_and_errors(device):
    h = np.array([[1.0, np.nan, 5.0, np.nan], [2.0, 9.0, 9.0, 0.0]])
    x = gp.asarray(h, device=device)
    for op in ("argmax", "argmin"):
        assert_close(getattr(gp, op)(x, axis=1), getattr(np, op)(h, axis=1))
        assert int(getattr(gp, op)(x)) == getattr(np, op)(h)
    big = np.zeros((4, 1 << 16), np.float32)
    big[2, 1000] = 7
    assert_close(gp.argmax(gp.asarray(big, device=device), axis=1), np.argmax(big, axis=1))
    with pytest.raises(ValueError):
        gp.argmax(gp.asarray(np.zeros(0), device=device))
    with pytest.raises(gp.AxisError):
        gp.argmin(x, axis=2)


@fixture_ok
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3), data=st.data(),
       dtype=st.sampled_from(["bool", "int32", "float64"]))
def test_count_nonzero_and_nonzero(device, shape, data, dtype):
    h, x = _arr(device, tuple(shape), dtype)
    nd = len(shape)
    axis = data.draw(st.none() | st.integers(-nd, nd - 1) | st.just(tuple(range(nd))))
    assert_close(gp.count_nonzero(x, axis=axis), np.asarray(np.count_nonzero(h, axis=axis),
                                                            np.int64))
    got = gp.nonzero(x)
    ref = np.nonzero(h)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert_close(g, r.astype(np.int64))


def test_nonzero_0d(device):
    with pytest.raises(ValueError):
        gp.nonzero(gp.asarray(np.float64(1.0), device=device))


@fixture_ok
@given(n=st.integers(0, 30), m=st.integers(0, 10), side=st.sampled_from(["left", "right"]),
       use_sorter=st.booleans(), nan=st.booleans())
def test_searchsorted(device, n, m, side, use_sorter, nan):
    rng = np.random.default_rng(n * 31 + m)
    a = rng.integers(0, 8, n).astype(np.float64)
    if nan and n:
        a[0] = np.nan
    v = rng.integers(-1, 9, m).astype(np.float64)
    if nan and m:
        v[-1] = np.nan
    if use_sorter:
        sorter = np.argsort(a, kind="stable")
        ref = np.searchsorted(a, v, side=side, sorter=sorter)
        got = gp.searchsorted(gp.asarray(a, device=device), gp.asarray(v, device=device),
                              side=side, sorter=gp.asarray(sorter, device=device))
    else:
        a.sort()
        ref = np.searchsorted(a, v, side=side)
        got = gp.searchsorted(gp.asarray(a, device=device), gp.asarray(v, device=device), side=side)
    assert_close(got, ref.astype(np.int64))


def test_searchsorted_scalar_and_errors(device):
    a = gp.asarray(np.array([1, 3, 5], np.int32), device=device)
    assert_close(gp.searchsorted(a, 3, side="right"), np.int64(2))
    with pytest.raises(ValueError):
        gp.searchsorted(a, 3, side="middle")
    with pytest.raises(ValueError):
        gp.searchsorted(gp.asarray(np.ones((2, 2)), device=device), 1.0)
    # a Python float with an integer array: compared in float64, as NumPy (it raised TypeError)
    assert_close(gp.searchsorted(a, 1.5), np.searchsorted(np.array([1, 3, 5]), 1.5))
    assert_close(gp.searchsorted(a, 3.0, side="right"), np.int64(2))


def test_where(device):
    rng = np.random.default_rng(0)
    c = rng.random((3, 4)) > 0.5
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float64)
    gc, ga, gb = (gp.asarray(v, device=device) for v in (c, a, b))
    assert_close(gp.where(gc, ga, gb), np.where(c, a, b))
    assert_close(gp.where(gc, ga, 2.5), np.where(c, a, np.float32(2.5)))
    assert_close(gp.where(gc, 0, gp.asarray(np.arange(4, dtype=np.int16), device=device)),
                 np.where(c, np.int16(0), np.arange(4, dtype=np.int16)))
    big = rng.random(1 << 18) > 0.5
    assert_close(gp.where(gp.asarray(big, device=device), 1.0,
                          gp.asarray(np.zeros(1 << 18), device=device)), np.where(big, 1.0, 0.0))
    with pytest.raises(TypeError):
        gp.where(gp.asarray(a, device=device), ga, gb)
    # two Python scalars: NumPy's dtype of the pair (tests/test_numpy_hunt3.py; it raised)
    np.testing.assert_array_equal(np.asarray(gp.where(gc, 1, 2)), np.where(np.asarray(gc), 1, 2))
    with pytest.raises(ValueError):
        gp.where(gc, ga, gp.asarray(np.ones(3), device=device))
    # a Python float with an integer array: NumPy's float64 (it raised TypeError)
    got = gp.where(gc, gp.asarray(np.ones(4, np.int32), device=device), 1.5)
    assert got.dtype == gp.float64
    assert_close(got, np.where(c, np.ones(4, np.int32), 1.5))
