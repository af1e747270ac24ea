"""Segment reductions (grilly.array.segments: the segment_sum and segment_max kernels) against a
NumPy sequential reference on every device, bit for bit across devices; their gradients against
torch.segment_reduce; bincount, histogram and EmbeddingBag through them, including the sizes
whose one-hot matrices did not fit in memory."""
import tracemalloc

import ml_dtypes
import numpy as np
import pytest
import torch

import grilly as gp
from grilly import nn
from grilly.array import segments
from grilly.backends import registry


def _layout(kind: str, k: int, rng) -> tuple:
    """(starts, ends) int64 of ordered runs covering [0, k): random cuts (empty runs
    included), one run of everything among empty ones, a single run, or k = 0."""
    if kind == "random":
        cuts = np.sort(rng.integers(0, k + 1, 30))
        edges = np.concatenate([[0], cuts, [k]])
    elif kind == "huge":
        edges = np.array([0, 0, 0, k, k])
    else:   # "one"
        edges = np.array([0, k])
    return edges[:-1].astype(np.int64), edges[1:].astype(np.int64)


def _ref_sum(v: np.ndarray, starts, ends) -> np.ndarray:
    """Each run summed row by row in index order, in v's dtype (np.add.at is sequential)."""
    out = np.zeros((len(starts), *v.shape[1:]), v.dtype)
    seg = np.repeat(np.arange(len(starts)), ends - starts)
    rows = np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)] + [np.zeros(0, int)])
    np.add.at(out, seg, v[rows])
    return out


def _ref_max(v: np.ndarray, starts, ends, fill) -> tuple:
    """Each run's maximum (NaN wins) and its first row; fill and -1 for an empty run."""
    out = np.full((len(starts), *v.shape[1:]), fill, v.dtype)
    arg = np.full(out.shape, -1, np.int64)
    for s, (a, b) in enumerate(zip(starts, ends)):
        if b > a:
            r = v[a:b]
            key = np.where(np.isnan(r), np.inf, r)   # the first NaN, else the first maximum
            nan = np.isnan(r).any(0)
            first = np.where(nan, np.argmax(np.isnan(r), 0), np.argmax(key, 0))
            arg[s] = a + first
            out[s] = np.take_along_axis(r, first[None], 0)[0]
    return out, arg


def _on(device, *arrays):
    return [gp.asarray(a, device=device) for a in arrays]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["random", "huge", "one"])
@pytest.mark.parametrize("k", [0, 1, 997])
def test_segment_sum_is_sequential(device, dtype, kind, k):
    rng = np.random.default_rng(k)
    v = (rng.standard_normal((k, 5)) * 10.0 ** rng.integers(-4, 5, (k, 5))).astype(dtype)
    starts, ends = _layout(kind, k, rng)
    got = segments.segment_sum(*_on(device, v, starts, ends))
    assert got.dtype == gp.dtype(dtype) and got.shape == (len(starts), 5)
    np.testing.assert_array_equal(np.asarray(got), _ref_sum(v, starts, ends))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["random", "huge", "one"])
def test_segment_max(device, dtype, kind):
    rng = np.random.default_rng(3)
    v = rng.integers(-5, 6, (400, 4)).astype(dtype)   # ties everywhere
    v[17, 2] = v[350, 0] = np.nan
    v[100:110] = -np.inf
    starts, ends = _layout(kind, 400, rng)
    m, i = segments.segment_max(*_on(device, v, starts, ends), fill=-2.5)
    want_m, want_i = _ref_max(v, starts, ends, -2.5)
    np.testing.assert_array_equal(np.asarray(i), want_i)
    np.testing.assert_array_equal(np.asarray(m), want_m)


def test_cpu_and_vulkan_bit_identical():
    if "vulkan" not in {d.backend.name for d in gp.devices()}:
        pytest.skip("no Vulkan device")
    rng = np.random.default_rng(9)
    v = rng.standard_normal((20000, 3)).astype(np.float32) * np.float32(1e3)
    starts, ends = _layout("random", 20000, rng)
    res = []
    for dev in ("cpu", "vulkan"):
        args = _on(dev, v, starts, ends)
        res.append([np.asarray(segments.segment_sum(*args)),
                    *map(np.asarray, segments.segment_max(*args))])
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)


def test_composition_equals_kernels(device):
    """The composition (blocks made small) gives the kernels' results on exact values, for
    unordered and overlapping runs too."""
    rng = np.random.default_rng(2)
    v = rng.integers(-8, 9, (50, 3)).astype(np.float64)
    v[7, 0] = np.nan
    starts = np.array([0, 30, 5, 49, 10, 60, -3])
    ends = np.array([20, 20, 45, 50, 10, 70, 4])
    args = _on(device, v, starts, ends)
    saved, segments.BLOCK_ELEMS = segments.BLOCK_ELEMS, 40
    try:
        cs = segments.composed_segment_sum(*args)
        cm, ci = segments.composed_segment_max(*args, -1.0)
    finally:
        segments.BLOCK_ELEMS = saved
    clip_s = np.clip(starts, 0, 50)
    clip_e = np.maximum(np.clip(ends, 0, 50), clip_s)
    np.testing.assert_array_equal(np.asarray(segments.segment_sum(*args)),
                                  _ref_sum(v, clip_s, clip_e))
    np.testing.assert_array_equal(np.asarray(cs), _ref_sum(v, clip_s, clip_e))
    want_m, want_i = _ref_max(v, clip_s, clip_e, -1.0)
    m, i = segments.segment_max(*args, fill=-1.0)
    for got_m, got_i in ((m, i), (cm, ci)):
        np.testing.assert_array_equal(np.asarray(got_i), want_i)
        np.testing.assert_array_equal(np.asarray(got_m), want_m)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_dtypes_add_in_float32(device, dtype):
    rng = np.random.default_rng(4)
    npd = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    v = rng.standard_normal((300, 2)).astype(npd)
    starts, ends = _layout("random", 300, rng)
    got = segments.segment_sum(*_on(device, v, starts, ends))
    assert got.dtype == gp.dtype(dtype)
    want = _ref_sum(v.astype(np.float32), starts, ends).astype(npd)
    np.testing.assert_array_equal(np.asarray(got.astype(gp.float32)), want.astype(np.float32))


def test_one_dimensional_values(device):
    v = np.arange(6.0)
    s = segments.segment_sum(*_on(device, v, np.array([0, 2]), np.array([2, 6])))
    assert s.shape == (2,)
    np.testing.assert_array_equal(np.asarray(s), [1.0, 14.0])


@pytest.mark.parametrize("reduce", ["sum", "max"])
def test_gradients_against_torch(device, reduce):
    rng = np.random.default_rng(6)
    v = rng.standard_normal((40, 3))
    lengths = np.array([5, 0, 12, 1, 0, 22])
    ends = np.cumsum(lengths)
    starts = ends - lengths
    g = rng.standard_normal((6, 3))
    tv = torch.tensor(v, requires_grad=True)
    ty = torch.segment_reduce(tv, reduce, lengths=torch.tensor(lengths), axis=0,
                              initial=0.0 if reduce == "sum" else None)
    (ty * torch.tensor(g)).sum().backward()
    x = gp.asarray(v, device=device)
    x.requires_grad = True
    st, en, gg = _on(device, starts, ends, g)
    if reduce == "sum":
        y = segments.segment_sum(x, st, en)
    else:
        y = segments.segment_max(x, st, en, fill=float("-inf"))[0]
    np.testing.assert_allclose(np.asarray(y), ty.detach().numpy(), rtol=1e-15)
    gp.sum(y * gg).backward()
    np.testing.assert_allclose(np.asarray(x.grad), tv.grad.numpy(), rtol=1e-15)


def test_errors(device):
    v, st, en = _on(device, np.ones((4, 2)), np.array([0, 2]), np.array([2, 4]))
    with pytest.raises(TypeError, match="segment_sum: values must have a real floating dtype"):
        segments.segment_sum(gp.asarray(np.ones((4, 2), int), device=device), st, en)
    with pytest.raises(TypeError, match="segment_max: starts must be an integer array"):
        segments.segment_max(v, gp.asarray(np.zeros(2), device=device), en)
    with pytest.raises(ValueError, match="segment_sum: starts and ends must have one shape"):
        segments.segment_sum(v, st, en[:1])
    with pytest.raises(ValueError, match="segment_sum: ends must be 1-D"):
        segments.segment_sum(v, st, gp.reshape(en, (1, 2)))
    with pytest.raises(TypeError, match="segment_sum: expected a grilly Array for 'starts'"):
        segments.segment_sum(v, [0, 2], en)


# ---- the users: bincount, histogram, EmbeddingBag ------------------------------------------
def test_bincount_equals_numpy_bit_for_bit(device):
    rng = np.random.default_rng(7)
    x = rng.integers(0, 50, 20000)
    w = rng.standard_normal(20000) * 10.0 ** rng.integers(-6, 7, 20000)
    np.testing.assert_array_equal(np.asarray(gp.bincount(gp.asarray(x, device=device))),
                                  np.bincount(x))
    got = gp.bincount(*_on(device, x, w), minlength=60)
    assert got.dtype == gp.float64
    np.testing.assert_array_equal(np.asarray(got), np.bincount(x, w, minlength=60))
    w32 = w.astype(np.float32)   # float32 weights: summed in float64, as NumPy's
    np.testing.assert_array_equal(np.asarray(gp.bincount(*_on(device, x, w32))),
                                  np.bincount(x, w32))


@pytest.mark.parametrize("wdtype", ["float32", "float64", "int32", "complex128"])
def test_histogram_weights(device, wdtype):
    rng = np.random.default_rng(8)
    a = rng.standard_normal(5000)
    w = (rng.standard_normal(5000) * 100).astype(wdtype)
    if wdtype == "complex128":
        w = w + 1j * rng.standard_normal(5000)
    counts, edges = gp.histogram(*_on(device, a, w)[:1], 12, range=(-2.0, 2.5),
                                 weights=gp.asarray(w, device=device))
    want, want_edges = np.histogram(a, 12, range=(-2.0, 2.5), weights=w)
    assert counts.dtype == gp.dtype(want.dtype.name)
    np.testing.assert_array_equal(np.asarray(counts), want)
    np.testing.assert_array_equal(np.asarray(edges), want_edges)
    c, _ = gp.histogram(gp.asarray(a, device=device), 12, range=(-2.0, 2.5))
    np.testing.assert_array_equal(np.asarray(c), np.histogram(a, 12, range=(-2.0, 2.5))[0])


def _peak_bytes(device, fn):
    """fn()'s result and the most memory live while it ran (Vulkan: the device's live arrays;
    cpu: the host's allocations, NumPy's included, by tracemalloc)."""
    if device.backend.name == "vulkan":
        gp.synchronize(device)
        gp.reset_peak_memory_stats(device)
        before = gp.device_stats(device)["live_bytes"]
        out = fn()
        gp.synchronize(device)
        return out, gp.device_stats(device)["peak_live_bytes"] - before
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_bincount_large_bounded_memory(device):
    """2.5e5 values in 2.5e4 bins: the one-hot mask was 6e9 elements; now O(n + bins)."""
    rng = np.random.default_rng(10)
    n, bins = 250_000, 25_000   # above the parallel kernels' 2**17; the mask 1000x the bound
    x = rng.integers(0, bins, n)
    w = rng.standard_normal(n)
    gx, gw = _on(device, x, w)
    got, peak = _peak_bytes(device, lambda: np.asarray(gp.bincount(gx, gw)))
    np.testing.assert_array_equal(got, np.bincount(x, w))
    # a dozen int64/float64 arrays of n (the sort's scratch, sorted keys and weights, bounds),
    # where the (n, bins) mask took 5e10 bytes
    assert peak < 160 * (n + bins), peak
    counts = np.asarray(gp.bincount(gx, minlength=bins + 5))
    np.testing.assert_array_equal(counts, np.bincount(x, minlength=bins + 5))


def test_embedding_bag_many_bags(device):
    """20000 bags over 400000 indices (a membership matrix of 8e9 elements before), against
    torch, sum/mean/max, padding_idx; and a smaller bag batch's gradients."""
    rng = np.random.default_rng(12)
    n_emb, dim, k, bags = 500, 8, 400_000, 20_000
    w = rng.standard_normal((n_emb, dim)).astype(np.float32)
    idx = rng.integers(0, n_emb, k)
    offsets = np.sort(rng.integers(0, k, bags))
    offsets[0] = 0
    for mode, pad in (("sum", None), ("mean", 3), ("max", 3)):
        want = torch.nn.functional.embedding_bag(torch.tensor(idx), torch.tensor(w),
                                                 torch.tensor(offsets), mode=mode,
                                                 padding_idx=pad).numpy()
        got = nn.functional.embedding_bag(*_on(device, idx, w, offsets), mode=mode,
                                          padding_idx=pad)
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-4)
    # gradients (weight's comes back through take's own rule: a smaller batch)
    k, bags = 3000, 400
    idx, offsets = idx[:k], np.sort(rng.integers(0, k, bags))
    offsets[0] = 0
    psw = rng.standard_normal(k).astype(np.float32)
    g = rng.standard_normal((bags, dim)).astype(np.float32)
    for mode in ("sum", "max"):
        tw = torch.tensor(w, requires_grad=True)
        tp = torch.tensor(psw, requires_grad=True) if mode == "sum" else None
        torch.nn.functional.embedding_bag(torch.tensor(idx), tw, torch.tensor(offsets),
                                          mode=mode, per_sample_weights=tp).mul(
            torch.tensor(g)).sum().backward()
        gw = gp.asarray(w, device=device)
        gw.requires_grad = True
        gps = None
        if mode == "sum":
            gps = gp.asarray(psw, device=device)
            gps.requires_grad = True
        y = nn.functional.embedding_bag(*_on(device, idx), gw, gp.asarray(offsets, device=device),
                                        mode=mode, per_sample_weights=gps)
        gp.sum(y * gp.asarray(g, device=device)).backward()
        np.testing.assert_allclose(np.asarray(gw.grad), tw.grad.numpy(), rtol=1e-4, atol=1e-4)
        if mode == "sum":
            np.testing.assert_allclose(np.asarray(gps.grad), tp.grad.numpy(), rtol=1e-4,
                                       atol=1e-4)


def test_kernels_registered():
    for name in ("cpu", "vulkan"):
        if name in {d.backend.name for d in gp.devices()}:
            kernels = registry.device(name).kernels
            assert "segment_sum" in kernels and "segment_max" in kernels


def test_embedding_gradient_large_vocabulary_bounded_memory(device):
    """take's (Embedding's) gradient of 20000 tokens into 50000 rows: the one-hot was
    (20000, 50000), 4e9 bytes; now a sort and a segment sum, O(tokens + rows), equal to torch's."""
    rng = np.random.default_rng(11)
    n, k, d = 50_000, 20_000, 8
    w = rng.standard_normal((n, d)).astype(np.float32)
    idx = rng.integers(-n, n, k)   # negative indices wrap, as take's
    gy = rng.standard_normal((k, d)).astype(np.float32)
    gw = gp.asarray(w, device=device)
    gw.requires_grad_(True)
    gi, gg = gp.asarray(idx, device=device), gp.asarray(gy, device=device)

    def grad():
        gw.grad = None
        gp.sum(gp.take(gw, gi, axis=0) * gg).backward()
        return gw.grad.numpy()
    got, peak = _peak_bytes(device, grad)
    tw = torch.tensor(w, requires_grad=True)
    (tw[torch.tensor(idx)] * torch.tensor(gy)).sum().backward()
    np.testing.assert_allclose(got, tw.grad.numpy(), rtol=1e-6, atol=1e-6)
    assert peak < 64 * (n + k) * d, peak


@pytest.mark.parametrize("k", [7, 3000])
def test_getitem_gradient_repeats_match_torch(device, k):
    """x[idx] with repeated indices, small (one-hot) and large (segment sum): torch's gradient."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((40, 3))
    idx = rng.integers(0, 40, k)
    gx = gp.asarray(x, device=device)
    gx.requires_grad_(True)
    gp.sum(gx[gp.asarray(idx, device=device)] ** 2).backward()
    tx = torch.tensor(x, requires_grad=True)
    (tx[torch.tensor(idx)] ** 2).sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_scatter_add_large_bounded_memory(device):
    """torch's scatter_add of a (100, 1000) index along dim 1: the one-hot was (100, 1000, 1000)
    elements (20x the bound below, as at 400 rows); now O(index + self). Out-of-range indices
    add nothing. Equal to torch's."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal((100, 1000)).astype(np.float32)
    src = rng.standard_normal((100, 1000)).astype(np.float32)
    idx = rng.integers(0, 1000, (100, 1000))
    gx, gs, gi = _on(device, x, src, idx)
    got, peak = _peak_bytes(device, lambda: gx.scatter_add(1, gi, gs).numpy())
    want = torch.tensor(x).scatter_add(1, torch.tensor(idx), torch.tensor(src)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert peak < 200 * x.size, peak
    bad = idx.copy()
    bad[:, 0] = 1000   # out of range: dropped (torch raises)
    got = gx.scatter_add(1, gp.asarray(bad, device=device), gs).numpy()
    keep = np.ones_like(src)
    keep[:, 0] = 0
    want = torch.tensor(x).scatter_add(1, torch.tensor(np.where(keep > 0, bad, 0)),
                                       torch.tensor(src * keep)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
