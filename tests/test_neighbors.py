"""grilly.array.neighbors.matmul_topk (the k best of x @ mat.T + add) against a float64 numpy
reference and an exact sort, on every device; the cpu backend's fused kernel against the
composition, with blocks small enough that every path (many blocks, split spans, merges) runs."""
import threading

import numpy as np
import pytest

import grilly as gp
from grilly.array import neighbors
from grilly.backends.contract import MATMUL_TOPK_KMAX
from grilly.backends.cpu_numba import neighbors as cpu_kernel
from grilly.backends.vulkan import neighbors as vk_kernel

R = np.random.default_rng(5)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few rows in the composition and in the cpu kernel."""
    monkeypatch.setattr(neighbors, "BLOCK_ELEMS", 12)
    monkeypatch.setattr(neighbors, "BLOCK_ROWS", 3)
    monkeypatch.setattr(cpu_kernel, "BLOCK_X", 3)
    monkeypatch.setattr(cpu_kernel, "BLOCK_M", 5)
    monkeypatch.setattr(vk_kernel, "BLOCK_ROWS", 3)
    monkeypatch.setattr(vk_kernel, "BLOCK_ELEMS", 15)
    monkeypatch.setattr(vk_kernel, "SCAN", 2)


def _order(s: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """topk's order of each row of s: best first, NaN the largest value, ties by index."""
    def key(row, j):
        v = row[j]
        nan = v != v
        return ((0 if nan else 1, -v if not nan else 0, j) if largest
                else (1 if nan else 0, v if not nan else 0, j))
    return np.array([sorted(range(s.shape[1]), key=lambda j: key(row, j))[:k] for row in s],
                    dtype=np.int64).reshape(s.shape[0], k)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("with_add", [True, False])
@pytest.mark.parametrize("blocks", ["default", "small"])
def test_matches_reference(device, dtype, largest, with_add, blocks, request):
    if blocks == "small":
        request.getfixturevalue("small_blocks")
    n, m, d = 11, 53, 7
    x = R.standard_normal((n, d)).astype(dtype)
    mat = R.standard_normal((m, d)).astype(dtype)
    add = R.standard_normal(m).astype(dtype)
    s = x.astype(np.float64) @ mat.T.astype(np.float64) + (add if with_add else 0)
    for k in (1, 6, m):
        v, i = neighbors.matmul_topk(gp.asarray(x, device=device), gp.asarray(mat, device=device),
                                     k, add=gp.asarray(add, device=device) if with_add else None,
                                     largest=largest)
        assert v.shape == i.shape == (n, k) and v.dtype == getattr(gp, dtype) and i.dtype == gp.int64
        want = _order(s, k, largest)
        np.testing.assert_array_equal(np.asarray(i), want)
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(np.asarray(v), np.take_along_axis(s, want, 1), rtol=tol,
                                   atol=tol)


@pytest.mark.parametrize("largest", [True, False])
def test_ties_nan_inf_signed_zero(device, small_blocks, largest):
    """Exact scores (small integers): ties keep the smaller index, NaN is the largest value,
    -0.0 and 0.0 tie; the kernel and the composition agree bit for bit."""
    m = 40
    mat = R.integers(-2, 3, (m, 2)).astype(np.float32)
    add = R.integers(-2, 3, m).astype(np.float32)
    add[[3, 17, 30]] = np.nan
    add[[5, 22]] = np.inf
    add[[8, 33]] = -np.inf
    x = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [0, -0.0]], np.float32)
    s = x.astype(np.float64) @ mat.T.astype(np.float64) + add
    gx, gm, ga = (gp.asarray(a, device=device) for a in (x, mat, add))
    for k in (1, 4, 12, m):
        v, i = neighbors.matmul_topk(gx, gm, k, add=ga, largest=largest)
        want = _order(s, k, largest)
        np.testing.assert_array_equal(np.asarray(i), want)
        np.testing.assert_array_equal(np.asarray(v), np.take_along_axis(s, want, 1).astype(np.float32))
        cv, ci = neighbors.composed_matmul_topk(gx, gm, ga, k, largest)
        np.testing.assert_array_equal(np.asarray(ci), np.asarray(i))


@pytest.mark.parametrize("largest", [True, False])
def test_k_above_the_kernel_limit(device, largest):
    """k > MATMUL_TOPK_KMAX runs the composition on every device: the same answer."""
    x = R.standard_normal((3, 4)).astype(np.float32)
    mat = R.standard_normal((90, 4)).astype(np.float32)
    s = x.astype(np.float64) @ mat.T.astype(np.float64)
    k = MATMUL_TOPK_KMAX + 6
    v, i = neighbors.matmul_topk(gp.asarray(x, device=device), gp.asarray(mat, device=device), k,
                                 largest=largest)
    want = _order(s, k, largest)
    np.testing.assert_array_equal(np.asarray(i), want)
    np.testing.assert_allclose(np.asarray(v), np.take_along_axis(s, want, 1), rtol=1e-5,
                               atol=1e-5)


def test_split_spans_merge(small_blocks, monkeypatch):
    """One query row and a long mat: the cpu kernel splits mat's rows over tasks and merges."""
    monkeypatch.setattr(cpu_kernel, "_parts", lambda blocks, m: 4)
    m = 61
    x = R.integers(-3, 4, (2, 5)).astype(np.float32)   # exact scores, many ties
    mat = R.integers(-2, 3, (m, 5)).astype(np.float32)
    s = x.astype(np.float64) @ mat.T.astype(np.float64)
    for largest in (True, False):
        for k in (1, 7, m):
            v, i = neighbors.matmul_topk(gp.asarray(x), gp.asarray(mat), k, largest=largest)
            np.testing.assert_array_equal(np.asarray(i), _order(s, k, largest))


def test_float16_and_empty(device):
    x = R.standard_normal((4, 3)).astype(np.float16)
    mat = R.standard_normal((9, 3)).astype(np.float16)
    v, i = neighbors.matmul_topk(gp.asarray(x, device=device), gp.asarray(mat, device=device), 3)
    s = x.astype(np.float64) @ mat.T.astype(np.float64)
    assert v.dtype == gp.float16
    np.testing.assert_allclose(np.asarray(v), -np.sort(-s, axis=1)[:, :3], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(np.take_along_axis(s, np.asarray(i), 1), np.asarray(v),
                               rtol=2e-3, atol=2e-3)
    e, ei = neighbors.matmul_topk(gp.asarray(x[:0], device=device), gp.asarray(mat, device=device),
                                  2)
    assert e.shape == ei.shape == (0, 2) and ei.dtype == gp.int64


def test_errors():
    x = gp.asarray(np.ones((2, 3), np.float32))
    mat = gp.asarray(np.ones((4, 3), np.float32))
    with pytest.raises(ValueError, match=r"matmul_topk: k must be an int with 1 <= k <= 4"):
        neighbors.matmul_topk(x, mat, 5)
    with pytest.raises(ValueError, match=r"matmul_topk: k must be an int"):
        neighbors.matmul_topk(x, mat, 0)
    with pytest.raises(ValueError, match="matmul_topk: x has 3 columns and mat 2"):
        neighbors.matmul_topk(x, gp.asarray(np.ones((4, 2), np.float32)), 1)
    with pytest.raises(TypeError, match="matmul_topk: x and mat must share one real floating"):
        neighbors.matmul_topk(x, gp.asarray(np.ones((4, 3))), 1)
    with pytest.raises(TypeError, match="matmul_topk: x and mat must share one real floating"):
        neighbors.matmul_topk(gp.asarray(np.ones((2, 3), int)), gp.asarray(np.ones((4, 3), int)), 1)
    with pytest.raises(ValueError, match=r"matmul_topk: add must be \(4,\)"):
        neighbors.matmul_topk(x, mat, 1, add=gp.asarray(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match="matmul_topk: x and mat must be 2-D"):
        neighbors.matmul_topk(gp.asarray(np.ones(3, np.float32)), mat, 1)
    with pytest.raises(TypeError, match="matmul_topk: expected a grilly Array for 'mat'"):
        neighbors.matmul_topk(x, np.ones((4, 3), np.float32), 1)


def test_many_threads():
    """Concurrent calls from Python threads give each caller its own, correct result."""
    xs = [R.standard_normal((37, 16)).astype(np.float32) for _ in range(6)]
    mat = R.standard_normal((3000, 16)).astype(np.float32)
    gm = gp.asarray(mat)
    out = [None] * len(xs)

    def work(t):
        out[t] = np.asarray(neighbors.matmul_topk(gp.asarray(xs[t]), gm, 10)[1])

    ts = [threading.Thread(target=work, args=(t,)) for t in range(len(xs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for t, x in enumerate(xs):
        s = x.astype(np.float64) @ mat.T.astype(np.float64)
        np.testing.assert_array_equal(out[t], np.argsort(-s, axis=1, kind="stable")[:, :10])
