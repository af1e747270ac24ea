"""Sorting, searching and sets."""
from __future__ import annotations

import numpy as np
import pytest

import grilly as gp
from grilly.testing import assert_close, on

K = pytest.mark.kernels
_REAL = ["bool", "int8", "uint32", "int64", "float16", "float32", "float64"]


def _sample(dtype: str) -> np.ndarray:
    v = np.array([[3, 1, 4, 1, 5, 9, 2, 6], [5, 3, 5, 8, 9, 7, 9, 3], [2, 3, 8, 4, 6, 2, 6, 4]])
    d = np.dtype(dtype)
    return (v % 2 == 1) if d.kind == "b" else v.astype(d)


@K("sort")
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("dtype", _REAL)
def test_sort(device, dtype, axis, descending):
    a = _sample(dtype)
    want = np.sort(a, axis=axis)
    want = np.flip(want, axis=axis) if descending else want
    assert_close(gp.sort(on(device, a), axis=axis, descending=descending), want)


@K("sort", "argsort")
def test_sort_nan_last(device):
    a = np.array([2.0, np.nan, -1.0, np.inf, 0.0, np.nan, -np.inf])
    assert_close(gp.sort(on(device, a)), np.sort(a))
    assert_close(gp.argsort(on(device, a)), np.argsort(a, kind="stable"))


@K("argsort")
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", _REAL)
def test_argsort_stable(device, dtype, descending):
    a = _sample(dtype)
    # Python's sorted is stable in both directions: equal elements keep their order
    want = np.array([sorted(range(a.shape[-1]), key=lambda i: row[i], reverse=descending) for row in a])
    assert_close(gp.argsort(on(device, a), descending=descending), want.astype(np.int64))


@K("searchsorted")
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_searchsorted(device, side, dtype):
    s = np.array([1, 2, 2, 4, 7, 9]).astype(dtype)
    v = np.array([[0, 2, 5], [9, 10, 1]]).astype(dtype)
    assert_close(gp.searchsorted(on(device, s), on(device, v), side=side),
                 np.searchsorted(s, v, side=side).astype(np.int64))
    p = np.array([3, 0, 5, 1, 2, 4])
    u = s[np.argsort(p)]
    got = gp.searchsorted(on(device, u[p]), on(device, v), side=side, sorter=on(device, np.argsort(u[p])))
    assert_close(got, np.searchsorted(u[p], v, side=side, sorter=np.argsort(u[p])).astype(np.int64))


@K("unique")
@pytest.mark.parametrize("dtype", ["bool", "int16", "uint8", "float32", "float64", "complex64"])
def test_unique_all(device, dtype):
    a = _sample(dtype)
    if a.dtype.kind == "c":
        a = a + 1j * (a.real % 2)
    r = gp.unique_all(on(device, a))
    vals, idx, inv, cnt = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    assert_close(r.values, vals)
    assert_close(r.indices, idx.astype(np.int64))
    assert_close(r.inverse_indices, inv.reshape(a.shape).astype(np.int64))
    assert_close(r.counts, cnt.astype(np.int64))
    assert_close(gp.unique_values(on(device, a)), vals)


@K("unique")
def test_unique_nan(device):
    a = np.array([1.0, np.nan, 1.0, np.nan])
    assert gp.unique_values(on(device, a)).shape == (3,)   # every NaN is its own value


@K("isin")
@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("dtype", ["int32", "float64", "complex64"])
def test_isin(device, dtype, invert):
    a = np.array([[1, 5, 2], [7, 2, 0]]).astype(dtype)
    b = np.array([2, 7, 9]).astype(dtype)
    assert_close(gp.isin(on(device, a), on(device, b), invert=invert), np.isin(a, b, invert=invert))


def _topk_order(s: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """topk's order of each row: best first, NaN the largest value, ties by the smaller index."""
    def key(row, j):
        v = row[j]
        nan = bool(v != v)
        if largest:
            return (0 if nan else 1, 0.0 if nan else -v, j)
        return (1 if nan else 0, 0.0 if nan else v, j)
    return np.array([sorted(range(s.shape[1]), key=lambda j: key(r, j))[:k] for r in s],
                    dtype=np.int64)


@K("topk")
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_topk_ties_and_nan(device, dtype, largest):
    a = _sample(dtype)
    if a.dtype.kind == "f":
        a[1, 4] = np.nan
    want = _topk_order(a, 4, largest)
    v, i = gp.topk(on(device, a), 4, largest=largest)
    assert_close(i, want)
    assert_close(v, np.take_along_axis(a, want, 1))


@K("matmul_topk")
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_topk(device, dtype, largest):
    """The k best of x @ mat.T + add (exact small-integer scores: ties, and a NaN in add)."""
    from grilly.array.neighbors import matmul_topk

    rng = np.random.default_rng(11)
    x = rng.integers(-2, 3, (5, 3)).astype(dtype)
    mat = rng.integers(-2, 3, (40, 3)).astype(dtype)
    add = rng.integers(-1, 2, 40).astype(dtype)
    add[7] = np.nan
    s = x @ mat.T + add
    for k in (1, 6, 40):
        v, i = matmul_topk(on(device, x), on(device, mat), k, add=on(device, add),
                           largest=largest)
        want = _topk_order(s, k, largest)
        assert_close(i, want)
        assert_close(v, np.take_along_axis(s, want, 1))
