"""A faiss user on grilly.search and grilly.memory: hits faiss reports as missing (NaN vectors,
overflowing distances), ties and duplicates, query forms, metric_type, IndexIDMap, and threads
sharing an index or a memory; faiss-cpu (test-only oracle) and numpy float64 as references."""
import threading

import numpy as np
import pytest

import grilly as gp
from grilly.memory import AssociativeMemory, EpisodicMemory, KeyValueMemory
from grilly.search import IndexFlat, IndexIDMap, knn

faiss = pytest.importorskip("faiss")
R = np.random.default_rng(66)
FAISS = {"l2": lambda d: faiss.IndexFlatL2(d), "ip": lambda d: faiss.IndexFlatIP(d)}


def _np(a):
    return np.asarray(a)


def _same(got, want, rtol=1e-5):
    (gd, gi), (fd, fi) = got, want
    np.testing.assert_array_equal(_np(gi), fi)
    np.testing.assert_allclose(_np(gd), fd, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_nan_and_overflowing_hits_are_missing_as_faiss(device, metric):
    # a NaN vector was IndexFlatIP's best hit for every query (topk ranks NaN the largest), and
    # NaN/inf distances came back with their ids where faiss reports no hit (-1, the pad)
    d = 3   # not a multiple of 4
    xb = R.standard_normal((6, d)).astype(np.float32)
    xb[1, 0] = np.nan
    xb[4] = [1e20, 0, 0]          # squared distances overflow float32, products +-inf
    xq = R.standard_normal((4, d)).astype(np.float32)
    xq[1] = [-1e20, 0, 0]         # ip: -inf with xb[4] (no hit), l2: inf to everything else
    xq[2, 1] = np.nan             # no hit at all
    f = FAISS[metric](d)
    f.add(xb)
    ix = IndexFlat(d, metric, device=device)
    ix.add(xb)
    for k in (3, 6, 8):           # fewer than, exactly and more than ntotal
        _same(ix.search(xq, k), f.search(xq, k))
    # the knn function ranks a NaN similarity last too (numpy's sort order)
    s = xq[[0, 3]].astype(np.float64) @ xb.T.astype(np.float64)
    _, i = knn(gp.asarray(xq[[0, 3]], device=device), gp.asarray(xb, device=device), 6, "ip")
    np.testing.assert_array_equal(_np(i), np.argsort(-s, axis=1, kind="stable"))


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_duplicates_and_ties(device, metric):
    # small integers: every distance exact, so ties are real ties; grilly gives the smaller id
    # first (documented), faiss's tie order is unspecified: same distances, same id sets
    xb = R.integers(-2, 3, (12, 5)).astype(np.float32)
    xb[7] = xb[2]
    xb[9] = xb[2]
    xq = np.concatenate([xb[[2]], R.integers(-2, 3, (3, 5)).astype(np.float32)])
    f = FAISS[metric](5)
    f.add(xb)
    ix = IndexFlat(5, metric, device=device)
    ix.add(xb)
    fd, fi = f.search(xq, 12)
    gd, gi = (_np(a) for a in ix.search(xq, 12))
    np.testing.assert_array_equal(gd, fd)
    q, b = xq.astype(np.float64), xb.astype(np.float64)
    score = ((q[:, None] - b[None]) ** 2).sum(-1) if metric == "l2" else -(q @ b.T)
    np.testing.assert_array_equal(gi, np.argsort(score, axis=1, kind="stable"))
    for row_g, row_f, row_d in zip(gi, fi, gd):
        for v in np.unique(row_d):
            assert set(row_g[row_d == v]) == set(row_f[row_d == v])


def test_query_forms_and_faiss_attributes(device):
    xb = R.standard_normal((20, 7)).astype(np.float32)
    xq = R.standard_normal((4, 7)).astype(np.float32)
    f = faiss.IndexFlatL2(7)
    f.add(xb)
    ix = IndexFlat(7, device=device)
    ix.add(xb)
    want = f.search(xq, 5)
    # numpy float64 and Fortran order, grilly float64, a transposed and a strided view
    _same(ix.search(xq.astype(np.float64), 5), want)
    _same(ix.search(np.asfortranarray(xq), 5), want)
    _same(ix.search(gp.asarray(xq.astype(np.float64), device=device), 5), want)
    t = gp.asarray(np.ascontiguousarray(xq.T), device=device)
    _same(ix.search(gp.matrix_transpose(t), 5), want)
    _same(ix.search(gp.asarray(np.repeat(xq, 2, axis=0), device=device)[::2], 5), want)
    qi = R.integers(-3, 4, (3, 7))
    _same(ix.search(qi, 4), f.search(qi.astype(np.float32), 4))
    # faiss's attributes; its 1-D query and k=0 are errors (a clear ValueError here)
    for metric, fi in (("l2", faiss.IndexFlatL2(7)), ("ip", faiss.IndexFlatIP(7))):
        assert IndexFlat(7, metric).metric_type == fi.metric_type
        assert (IndexFlat(7, metric).d, IndexFlat(7, metric).ntotal) == (fi.d, fi.ntotal)
    assert IndexFlat(7, "cosine").metric_type == faiss.METRIC_INNER_PRODUCT
    with pytest.raises(ValueError, match=r"IndexFlat.search: queries must be 2-D"):
        ix.search(xq[0], 2)
    with pytest.raises(ValueError, match=r"IndexFlat.search: k must be a positive int"):
        ix.search(xq, 0)
    with pytest.raises(NotImplementedError, match=r"IndexFlat.add_with_ids: .*IndexIDMap"):
        ix.add_with_ids(xb, np.arange(20))


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_index_id_map_matches_faiss(device, metric):
    xb = R.standard_normal((7, 4)).astype(np.float32)
    xq = R.standard_normal((3, 4)).astype(np.float32)
    ids = np.array([10, 20, 30, 20, 50, 7, 1 << 40])   # repeated and large ids, as faiss allows
    f = faiss.IndexIDMap(FAISS[metric](4))
    f.add_with_ids(xb, ids)
    g = IndexIDMap(IndexFlat(4, metric, device=device))
    g.add_with_ids(xb[:3], ids[:3])
    g.add_with_ids(gp.asarray(xb[3:], device=device), gp.asarray(ids[3:], device=device))
    assert (g.ntotal, g.d, g.metric_type) == (f.ntotal, f.d, f.metric_type)
    _same(g.search(xq, 9), f.search(xq, 9))
    assert g.remove_ids([20, 99]) == f.remove_ids(np.array([20, 99])) == 2
    np.testing.assert_array_equal(g.id_map, faiss.vector_to_array(f.id_map))
    _same(g.search(xq, 6), f.search(xq, 6))
    radius = 0.5 if metric == "ip" else 4.0
    fl, fd, fi = f.range_search(xq, radius)
    gl, gd, gi = g.range_search(xq, radius)
    np.testing.assert_array_equal(_np(gl), fl.astype(np.int64))
    np.testing.assert_array_equal(_np(gi), fi)
    np.testing.assert_allclose(_np(gd), fd, rtol=1e-5, atol=1e-6)
    g.reset()
    f.reset()
    _same(g.search(xq, 2), f.search(xq, 2))
    with pytest.raises(NotImplementedError, match=r"IndexIDMap.add: .*add_with_ids"):
        g.add(xb)
    with pytest.raises(ValueError, match=r"IndexIDMap.add_with_ids: 2 ids for 7 vectors"):
        g.add_with_ids(xb, ids[:2])
    with pytest.raises(TypeError, match=r"IndexIDMap.add_with_ids: ids must be integers"):
        g.add_with_ids(xb, ids.astype(float))
    full = IndexFlat(4)
    full.add(xb)
    with pytest.raises(ValueError, match=r"IndexIDMap: index must be empty"):
        IndexIDMap(full)


def _run(*targets):
    errors = []

    def guard(fn):
        try:
            fn()
        except Exception as e:   # noqa: BLE001 (reported by the test)
            errors.append(e)

    threads = [threading.Thread(target=guard, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_threads_share_an_index_and_a_memory(device):
    # a read took a KeyValueMemory's keys and values at different moments: "matmul: inner
    # dimensions differ" when a write came between (and an index's search its size and vectors)
    xb = R.standard_normal((60, 6)).astype(np.float32)
    xq = R.standard_normal((3, 6)).astype(np.float32)
    ix = IndexFlat(6, device=device)
    ix.add(xb[:30])
    found = []

    def add():
        for i in range(30, 60, 5):
            ix.add(xb[i:i + 5])

    def search():
        for _ in range(6):
            found.append([_np(a) for a in ix.search(xq, 3)])

    _run(add, search)
    assert ix.ntotal == 60
    ref = ((xq[:, None].astype(np.float64) - xb[None]) ** 2).sum(-1)
    for dist, ids in found:   # each result is exact for the vectors it saw
        np.testing.assert_allclose(dist, np.take_along_axis(ref, ids, 1), rtol=1e-4)
    mem = KeyValueMemory(6, 2, capacity=12, device=device)
    mem.write(xb[:6], xb[:6, :2])

    def write():
        for i in range(6, 60, 3):
            mem.write(xb[i:i + 3], xb[i:i + 3, :2])

    def read():
        for _ in range(10):
            out, w = mem.read(xq)
            assert out.shape == (3, 2) and w.shape[0] == 3

    _run(write, read)
    assert len(mem) == 12
    # the slots left are the last 12 written (FIFO), in order
    np.testing.assert_array_equal(_np(gp.stack(mem.keys)), xb[48:60])


def test_memories_reset_and_capacity(device):
    em = EpisodicMemory(3, capacity=2, device=device)
    seqs = [R.standard_normal((4, 3)).astype(np.float32) for _ in range(3)]
    for s in seqs:
        em.store(s, s[0])
    assert len(em) == 2   # the oldest went
    np.testing.assert_array_equal(_np(em.recall(context=seqs[2][0])["sequence"]), seqs[2])
    em.reset()
    assert len(em) == 0
    with pytest.raises(RuntimeError, match="no episodes stored"):
        em.recall(context=seqs[0][0])
    one = EpisodicMemory(3, capacity=1, device=device)
    for s in seqs:
        one.store(s, s[0])
    np.testing.assert_array_equal(_np(one.episodes[0][0]), seqs[2])
    am = AssociativeMemory(4, device=device)
    am.store(np.eye(4, dtype=np.float32))
    am.reset()
    with pytest.raises(RuntimeError, match="nothing stored"):
        am(np.ones(4, np.float32))
    am.store(np.eye(4, dtype=np.float32)[:2])
    assert am.patterns.shape == (2, 4)


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_index_id_map_write_and_read_as_faiss(tmp_path, device, metric):
    # IndexIDMap had no save/load: faiss.write_index/read_index keep the ids with the vectors
    from grilly.search import read_index, write_index
    d = 5
    xb, xq = R.standard_normal((7, d)).astype(np.float32), R.standard_normal((3, d)).astype(
        np.float32)
    ids = np.array([40, 7, 7, 900, 3, 12, 5], np.int64)
    f = faiss.IndexIDMap(FAISS[metric](d))
    f.add_with_ids(xb, ids)
    f.remove_ids(np.array([12], np.int64))
    faiss.write_index(f, str(tmp_path / "f.index"))
    want = faiss.read_index(str(tmp_path / "f.index")).search(xq, 4)
    g = IndexIDMap(IndexFlat(d, metric, device=device))
    g.add_with_ids(gp.asarray(xb, device=device), ids)
    g.remove_ids([12])
    write_index(g, tmp_path / "g.safetensors")
    back = read_index(tmp_path / "g.safetensors", device=device)
    assert isinstance(back, IndexIDMap) and back.ntotal == 6 and back.metric_type == f.metric_type
    np.testing.assert_array_equal(back.id_map, faiss.vector_to_array(f.id_map))
    _same(back.search(gp.asarray(xq, device=device), 4), want)
    flat = IndexFlat(d, metric, device=device)   # read_index gives back an IndexFlat too
    flat.add(gp.asarray(xb, device=device))
    write_index(flat, tmp_path / "flat.safetensors")
    assert isinstance(read_index(tmp_path / "flat.safetensors"), IndexFlat)
    with pytest.raises(ValueError, match="IndexIDMap.load: .* is not a saved IndexIDMap"):
        IndexIDMap.load(tmp_path / "flat.safetensors")
    with pytest.raises(TypeError, match="write_index: index must be"):
        write_index(f, tmp_path / "x.safetensors")
