"""grilly.search against references: scikit-learn/numpy (float64) for pairwise_distances and knn,
faiss-cpu (test-only oracle) for IndexFlat, on every device (small sizes for Vulkan)."""
import numpy as np
import pytest
from sklearn.metrics import pairwise_distances as sk_pairwise

import grilly as gp
from grilly.search import IndexFlat, knn, pairwise_distances
from grilly.array import neighbors
from grilly.backends.cpu_numba import neighbors as cpu_kernel
from grilly.backends.vulkan import neighbors as vk_kernel

faiss = pytest.importorskip("faiss")
R = np.random.default_rng(21)


def _small_blocks(monkeypatch, elems: int) -> None:
    """matmul_topk's blocks (the composition's and the cpu kernel's) made small."""
    monkeypatch.setattr(neighbors, "BLOCK_ELEMS", elems)
    monkeypatch.setattr(neighbors, "BLOCK_ROWS", 4)
    monkeypatch.setattr(cpu_kernel, "BLOCK_X", 4)
    monkeypatch.setattr(cpu_kernel, "BLOCK_M", max(1, elems // 8))
    monkeypatch.setattr(vk_kernel, "BLOCK_ROWS", 4)
    monkeypatch.setattr(vk_kernel, "BLOCK_ELEMS", elems)


def _data(n, m, d, dtype=np.float32):
    return R.standard_normal((n, d)).astype(dtype), R.standard_normal((m, d)).astype(dtype)


def _ref(x, y, metric):
    if metric == "ip":
        return x @ y.T
    return sk_pairwise(x, y, metric=metric)


@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean", "cosine", "ip"])
def test_pairwise_distances(device, metric):
    x, y = _data(9, 13, 5, np.float64)
    x[2] = 0.0   # a zero row: cosine distance 1 to everything, as scikit-learn
    want = _ref(x, y, metric)
    for chunk in (None, 1, 4, 9, 50):
        got = pairwise_distances(gp.asarray(x, device=device), gp.asarray(y, device=device),
                                 metric, chunk=chunk)
        assert got.shape == (9, 13) and got.dtype == gp.float64
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_pairwise_distances_float32_and_empty(device):
    x, y = _data(6, 4, 3)
    got = pairwise_distances(gp.asarray(x, device=device), gp.asarray(y, device=device))
    np.testing.assert_allclose(np.asarray(got), _ref(x.astype(float), y.astype(float),
                                                     "sqeuclidean"), rtol=1e-5, atol=1e-5)
    e = pairwise_distances(gp.asarray(x[:0], device=device), gp.asarray(y, device=device))
    assert e.shape == (0, 4)


def test_pairwise_errors():
    a = gp.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match="pairwise_distances: metric must be one of"):
        pairwise_distances(a, a, "l1")
    with pytest.raises(ValueError, match="pairwise_distances: x has 3 columns and y has 2"):
        pairwise_distances(a, gp.asarray(np.ones((2, 2))))
    with pytest.raises(ValueError, match="pairwise_distances: y must be 2-D"):
        pairwise_distances(a, gp.asarray(np.ones(3)))
    with pytest.raises(TypeError, match="pairwise_distances: x must be a grilly Array"):
        pairwise_distances(np.ones((2, 3)), a)
    with pytest.raises(TypeError, match="pairwise_distances: x must have a real floating"):
        pairwise_distances(gp.asarray(np.ones((2, 3), int)), a)
    with pytest.raises(ValueError, match="pairwise_distances: chunk must be a positive int"):
        pairwise_distances(a, a, chunk=0)


@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean", "cosine", "ip"])
def test_knn_blocks_match_brute_force(device, metric, monkeypatch):
    _small_blocks(monkeypatch, 24)   # many database blocks to merge
    x, y = _data(7, 40, 4, np.float64)
    full = _ref(x, y, metric)
    order = np.argsort(-full if metric == "ip" else full, axis=1, kind="stable")[:, :5]
    d, i = knn(gp.asarray(x, device=device), gp.asarray(y, device=device), 5, metric, chunk=3)
    np.testing.assert_array_equal(np.asarray(i), order)
    np.testing.assert_allclose(np.asarray(d), np.take_along_axis(full, order, axis=1),
                               rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"knn: k must be an int with 1 <= k <= 40"):
        knn(gp.asarray(x, device=device), gp.asarray(y, device=device), 41, metric)


def _same_as_faiss(dist, ids, fD, fI, rtol=1e-5):
    """ids equal where faiss's distances are distinct (gaps above float32 rounding), dist close."""
    dist, ids = np.asarray(dist), np.asarray(ids)
    assert dist.dtype == np.float32 and ids.dtype == np.int64 and ids.shape == fI.shape
    np.testing.assert_allclose(dist, fD, rtol=rtol, atol=rtol * np.abs(fD).max())
    tol = 1e-4 * (1 + np.abs(fD))
    gap = np.abs(np.diff(fD, axis=1)) > tol[:, 1:]
    distinct = np.ones(fD.shape, bool)
    distinct[:, 1:] &= gap
    distinct[:, :-1] &= gap
    assert distinct.mean() > 0.5
    np.testing.assert_array_equal(ids[distinct], fI[distinct])


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_index_matches_faiss(device, metric, monkeypatch):
    _small_blocks(monkeypatch, 2000)   # several database blocks per query block
    d = 12
    xb, xq = _data(500, 30, d)
    ix = IndexFlat(d, metric, device=device)
    ix.add(xb[:300])
    ix.add(gp.asarray(xb[300:], device=device))
    assert ix.ntotal == 500
    f = (faiss.IndexFlatL2 if metric == "l2" else faiss.IndexFlatIP)(d)
    f.add(xb)
    fD, fI = f.search(xq, 10)
    for chunk in (None, 7):
        dist, ids = ix.search(xq, 10, chunk=chunk)
        _same_as_faiss(dist, ids, fD, fI)
    # a database vector as a query: distance ~0 (never negative: clamped, as faiss) to itself
    dist, ids = ix.search(xb[:3], 1)
    if metric == "l2":
        np.testing.assert_array_equal(np.asarray(ids)[:, 0], [0, 1, 2])
        assert (np.asarray(dist) >= 0).all()
        np.testing.assert_allclose(np.asarray(dist), f.search(xb[:3], 1)[0], atol=1e-5)


def test_index_cosine_is_ip_on_unit_rows(device):
    xb, xq = _data(200, 9, 8)
    ix = IndexFlat(8, "cosine", device=device)
    ix.add(xb)
    f = faiss.IndexFlatIP(8)
    f.add(xb / np.linalg.norm(xb, axis=1, keepdims=True))
    fD, fI = f.search(xq / np.linalg.norm(xq, axis=1, keepdims=True), 5)
    _same_as_faiss(*ix.search(xq, 5), fD, fI)


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_index_fewer_than_k_and_remove_ids(device, metric):
    xb, xq = _data(6, 3, 4)
    ix = IndexFlat(4, metric, device=device)
    f = (faiss.IndexFlatL2 if metric == "l2" else faiss.IndexFlatIP)(4)
    dist, ids = ix.search(xq, 3)   # empty index
    fD, fI = f.search(xq, 3)
    np.testing.assert_array_equal(np.asarray(ids), fI)
    np.testing.assert_array_equal(np.asarray(dist), fD)
    ix.add(xb)
    f.add(xb)
    _same_as_faiss(*ix.search(xq, 9), *f.search(xq, 9))
    ids = np.array([0, 4, 4, 99], np.int64)
    assert ix.remove_ids(ids) == f.remove_ids(ids) == 2
    assert ix.ntotal == f.ntotal == 4
    _same_as_faiss(*ix.search(xq, 6), *f.search(xq, 6))
    np.testing.assert_array_equal(np.asarray(ix.reconstruct_all()), xb[[1, 2, 3, 5]])
    ix.reset()
    assert ix.ntotal == 0


def test_index_save_load(tmp_path, device):
    xb, xq = _data(50, 4, 6)
    for metric in ("l2", "ip", "cosine"):
        ix = IndexFlat(6, metric, device=device)
        ix.add(xb)
        ix.save(tmp_path / "ix.safetensors")
        back = IndexFlat.load(tmp_path / "ix.safetensors", device=device)
        assert (back.d, back.metric, back.ntotal, back.dtype) == (6, metric, 50, gp.float32)
        for a, b in zip(ix.search(xq, 4), back.search(xq, 4)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    gp.nn.save({"w": gp.asarray(np.ones(2))}, tmp_path / "other.safetensors")
    with pytest.raises(ValueError, match="IndexFlat.load: .* is not a saved IndexFlat"):
        IndexFlat.load(tmp_path / "other.safetensors")


def test_index_errors():
    with pytest.raises(ValueError, match="IndexFlat: metric must be"):
        IndexFlat(4, "l1")
    with pytest.raises(ValueError, match="IndexFlat: d must be a positive int"):
        IndexFlat(0)
    ix = IndexFlat(4)
    with pytest.raises(ValueError, match=r"IndexFlat.add: x has rows of length 3, the index d=4"):
        ix.add(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="IndexFlat.search: k must be a positive int"):
        ix.search(np.ones((1, 4), np.float32), 0)
    with pytest.raises(TypeError, match="IndexFlat.remove_ids: ids must be integers"):
        ix.remove_ids(np.array([0.5]))


def test_numpy_integer_k_d_and_chunk(device):
    # numpy integers (k from a shape or a computation) are ints, as gp.topk and faiss take them
    xb, xq = _data(40, 5, 6)
    ix = IndexFlat(np.int64(6), device=device)
    ix.add(xb)
    f = faiss.IndexFlatL2(6)
    f.add(xb)
    _same_as_faiss(*ix.search(xq, np.int64(4), chunk=np.int32(2)), *f.search(xq, 4))
    x, y = gp.asarray(xq.astype(float), device=device), gp.asarray(xb.astype(float), device=device)
    full = _ref(xq.astype(float), xb.astype(float), "sqeuclidean")
    d, i = knn(x, y, np.int64(3), chunk=np.int64(2))
    np.testing.assert_array_equal(np.asarray(i), np.argsort(full, axis=1, kind="stable")[:, :3])
    v, j = neighbors.matmul_topk(x, y, np.int32(3))
    np.testing.assert_array_equal(np.asarray(j), np.argsort(-(xq.astype(float) @ xb.T), axis=1,
                                                            kind="stable")[:, :3])
    with pytest.raises(ValueError, match="IndexFlat.search: k must be a positive int"):
        ix.search(xq, np.int64(0))
    with pytest.raises(ValueError, match="knn: k must be an int"):
        knn(x, y, 2.0)


@pytest.mark.parametrize("metric", ["l2", "ip", "cosine"])
def test_index_faiss_names(device, metric, monkeypatch):
    """range_search (lims, D, I in id order; l2 below the radius, ip above), reconstruct,
    reconstruct_n, is_trained and train as faiss's IndexFlatL2 / IndexFlatIP (cosine: IP on
    unit rows), with several score blocks."""
    import grilly.search.flat as flat_mod
    xb, xq = _data(60, 7, 5)
    xq[3] = 50.0   # a query with no vector in range
    if metric == "cosine":
        unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)   # noqa: E731
        f, fb, fq = faiss.IndexFlatIP(5), unit(xb), unit(xq)
    else:
        f = faiss.IndexFlatL2(5) if metric == "l2" else faiss.IndexFlatIP(5)
        fb, fq = xb, xq
    f.add(fb)
    g = IndexFlat(5, metric, device=device)
    assert g.is_trained and f.is_trained
    g.train(xb)   # nothing to learn; checked only
    g.add(xb)
    monkeypatch.setattr(flat_mod, "RANGE_BLOCK_BYTES", 3 * 60 * 4)   # blocks of 3 queries
    radius = {"l2": 4.0, "ip": 1.5, "cosine": 0.5}[metric]
    lims, fd, fi = f.range_search(fq, radius)
    gl, gd, gi = g.range_search(xq, radius)
    np.testing.assert_array_equal(np.asarray(gl), lims.astype(np.int64))
    np.testing.assert_array_equal(np.asarray(gi), fi)
    np.testing.assert_allclose(np.asarray(gd), fd, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(g.reconstruct(4)), f.reconstruct(4), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g.reconstruct_n(10, 5)), f.reconstruct_n(10, 5),
                               rtol=1e-6)
    with pytest.raises(IndexError, match="reconstruct: key 60"):
        g.reconstruct(60)
    with pytest.raises(IndexError, match="reconstruct_n"):
        g.reconstruct_n(58, 3)
    with pytest.raises(TypeError, match="radius"):
        g.range_search(xq, "far")
