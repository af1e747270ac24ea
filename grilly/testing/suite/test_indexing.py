"""Indexing: getitem/setitem with integer arrays and masks, take, take_along_axis, nonzero,
repeat, and the IndexError of an out-of-bounds index."""
from __future__ import annotations

import numpy as np
import pytest

import grilly as gp
from grilly.testing import assert_close, float_dtype, on

K = pytest.mark.kernels
_DTYPES = ["bool", "int8", "uint16", "int64", "float16", "float32", "float64", "complex64", "complex128"]


def _sample(dtype: str) -> np.ndarray:
    v = np.arange(24).reshape(4, 6) * 3 % 11
    d = np.dtype(dtype)
    return (v % 2 == 1) if d.kind == "b" else (v - 2j * v).astype(d) if d.kind == "c" else v.astype(d)


@K("gather", "normalize_indices")
@pytest.mark.parametrize("dtype", _DTYPES)
def test_getitem_integer_arrays(device, dtype):
    a = _sample(dtype)
    x = on(device, a)
    i = np.array([3, -1, 0, 0, 2])
    assert_close(x[on(device, i)], a[i])
    j = np.array([[0, 5], [-6, 2]], dtype=np.int32)
    assert_close(x[on(device, i[:2, None]), on(device, j[0])], a[i[:2, None], j[0]])
    assert_close(x.T[on(device, j)], a.T[j])               # a permuted source


@K("mask_indices", "gather")
@pytest.mark.parametrize("dtype", ["int32", "float32", "complex64"])
def test_getitem_mask(device, dtype):
    a = _sample(dtype)
    m = a.real > 4
    assert_close(on(device, a)[on(device, m)], a[m])
    assert_close(on(device, a)[on(device, m[:, 0])], a[m[:, 0]])


@K("scatter", "normalize_indices")
@pytest.mark.parametrize("dtype", _DTYPES)
def test_setitem_integer_arrays(device, dtype):
    a = _sample(dtype)
    x = on(device, a)
    i = np.array([2, -4, 1])
    x[on(device, i)] = on(device, a[:3][::-1].copy())
    a[i] = a[:3][::-1].copy()
    assert_close(x, a)
    x[on(device, np.array([0, 0])), on(device, np.array([1, 5]))] = on(device, a[3, :2].copy())
    a[np.array([0, 0]), np.array([1, 5])] = a[3, :2].copy()
    assert_close(x, a)


@K("mask_indices", "scatter")
def test_setitem_mask(device):
    a = _sample("float32")
    x = on(device, a)
    m = a > 5
    x[on(device, m)] = 0.5
    a[m] = 0.5
    assert_close(x, a)


@K("gather", "normalize_indices")
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take(device, axis):
    a = _sample("float64")
    idx = np.array([1, 0, 3, 1])
    assert_close(gp.take(on(device, a), on(device, idx), axis=axis), np.take(a, idx, axis=axis))


@K("gather")
def test_take_along_axis(device):
    a = _sample("int32")
    idx = np.argsort(a, axis=1, kind="stable")
    assert_close(gp.take_along_axis(on(device, a), on(device, idx), axis=1),
                 np.take_along_axis(a, idx, axis=1))


@K("nonzero")
@pytest.mark.parametrize("dtype", ["bool", "int8", "float32", "complex64"])
def test_nonzero(device, dtype):
    a = _sample(dtype)
    got = gp.nonzero(on(device, a))
    want = np.nonzero(a)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_close(g, w.astype(np.int64))


@K("repeat_indices", "gather")
def test_repeat(device):
    a = np.array([[1.5, 2.0], [3.0, -1.0], [0.0, 4.0]], dtype=np.float32)
    r = np.array([2, 0, 3])
    assert_close(gp.repeat(on(device, a), on(device, r), axis=0), np.repeat(a, r, axis=0))
    assert_close(gp.repeat(on(device, a), 2, axis=1), np.repeat(a, 2, axis=1))


@K("normalize_indices")
def test_out_of_bounds(device):
    x = on(device, np.arange(5.0, dtype=float_dtype(device)))
    with pytest.raises(IndexError):
        x[on(device, np.array([0, 5]))]
    with pytest.raises(IndexError):
        x[on(device, np.array([-6]))] = 1.0
    with pytest.raises(IndexError):
        gp.take(x, on(device, np.array([7])))
    with pytest.raises(IndexError):
        x[5]
