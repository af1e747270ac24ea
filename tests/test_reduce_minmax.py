"""Float max/min reductions on the CPU backend against numpy: every NaN position (block and
chunk boundaries, the last partial block, the last chunk, one row or column), infinities,
all-NaN input, serial and parallel kernels, full and axis reductions.

The CPU kernels reduce 4096-element blocks and hand 65536-element chunks to threads; a block's
max is found NaN-ignoring and its NaNs separately, so NaN placement is what these tests vary.
"""
import numpy as np
import pytest

import grilly as gp

B, CHUNK = 4096, 1 << 16
FLOATS = ["float32", "float64"]
OPS = ["max", "min"]
SIZES = [1, 2, 15, 16, 17, 63, 64, 65, B - 1, B, B + 1, 3 * B + 7, CHUNK - 1, CHUNK, CHUNK + 1,
         3 * CHUNK + 5]


@pytest.fixture(params=[False, True], ids=["serial", "parallel"])
def threads(request, monkeypatch):
    """Run the test with the serial kernels, then with the parallel ones forced at any size."""
    from grilly.backends.cpu_numba import jit, reductions

    if request.param:
        monkeypatch.setattr(jit, "PARALLEL_MIN", 1)
        monkeypatch.setattr(reductions, "_serial_until", [0.0])
    else:
        monkeypatch.setattr(jit, "PARALLEL_MIN", 1 << 62)
    return request.param


def _data(n, dtype, seed=0):
    return (np.random.default_rng(seed).standard_normal(n) * 100).astype(dtype)


def _check(h, op, **kw):
    got = np.asarray(getattr(gp, op)(gp.asarray(h, device="cpu"), **kw))
    want = getattr(np, op)(h, **kw)
    assert got.dtype == want.dtype
    assert got.shape == np.shape(want)
    np.testing.assert_array_equal(got, want)   # exact; NaN equals NaN
    return got


def _nan_positions(n):
    pos = {0, n - 1, n // 2, B - 1, B, B + 1, 2 * B - 1, CHUNK - 1, CHUNK, CHUNK + 1,
           (n // B) * B, n - 2, n - B, n - CHUNK}   # (n // B) * B: the last partial block
    return sorted(p for p in pos if 0 <= p < n)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("n", SIZES)
def test_full_matches_numpy(threads, dtype, op, n):
    h = _data(n, dtype, seed=n)
    _check(h, op)
    _check(-np.abs(h), op)     # all negative: the identity (+-inf) must not leak
    _check(np.abs(h) + 1, op)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("n", [B + 1, 3 * B + 7, 3 * CHUNK + 5])
def test_nan_anywhere(threads, dtype, op, n):
    h = _data(n, dtype)
    for p in _nan_positions(n):
        for nan in (np.nan, -np.nan):          # either sign bit (x86's default NaN is negative)
            g = h.copy()
            g[p] = nan
            assert np.isnan(_check(g, op)), (p, nan)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("n", [1, 17, B - 1, B + 1, CHUNK + 1])
def test_nan_small_and_payloads(threads, dtype, op, n):
    h = _data(n, dtype)
    bits = np.dtype(dtype.replace("float", "uint"))
    quiet, signaling = (0x7FC00001, 0x7F800001) if dtype == "float32" else \
        (0x7FF8000000000001, 0x7FF0000000000001)
    for raw in (quiet, signaling, quiet | (1 << (bits.itemsize * 8 - 1))):
        g = h.copy()
        g.view(bits)[n - 1] = raw
        assert np.isnan(_check(g, op))
        g = np.full(n, np.inf if op == "max" else -np.inf, dtype)   # NaN next to the extreme
        g.view(bits)[n // 2] = raw
        assert np.isnan(_check(g, op))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 5, B + 3, CHUNK + 9])
def test_all_nan(threads, dtype, n):
    h = np.full(n, np.nan, dtype)
    for op in OPS:
        assert np.isnan(_check(h, op))
        assert np.isnan(_check(-h, op))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 7, B, B + 5, CHUNK + 3])
def test_infinities(threads, dtype, n):
    h = _data(n, dtype)
    for op in OPS:
        for fill in (np.inf, -np.inf):
            _check(np.full(n, fill, dtype), op)         # all -inf: max is -inf (and so on)
        for p in _nan_positions(n):
            for v in (np.inf, -np.inf):
                g = h.copy()
                g[p] = v
                _check(g, op)
        g = h.copy()                                    # +inf and -inf in one block
        g[0], g[n - 1] = np.inf, -np.inf
        _check(g, op)
        g[n // 2] = np.nan
        assert np.isnan(_check(g, op))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", OPS)
def test_extreme_magnitudes(threads, dtype, op):
    # values whose sum overflows both ways, subnormals, the largest finite values
    fi = np.finfo(dtype)
    n = 2 * B + 11
    h = _data(n, dtype)
    g = np.where(np.arange(n) % 2 == 0, fi.max, -fi.max).astype(dtype)
    _check(g, op)
    g[B + 3] = fi.max * np.asarray(0.5, dtype)
    _check(g, op)
    s = (h * fi.smallest_subnormal).astype(dtype)
    _check(s, op)
    t = h.copy()
    t[n - 1] = fi.max if op == "max" else -fi.max
    _check(t, op)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", [(5, B + 3), (3, 2 * CHUNK + 1), (200, 700), (9, 1)])
def test_rows(threads, dtype, op, shape):
    h = _data(shape[0] * shape[1], dtype).reshape(shape)
    _check(h, op, axis=1)
    _check(h, op, axis=-1, keepdims=True)
    g = h.copy()
    g[shape[0] // 2, shape[1] - 1] = np.nan     # one row's last element
    g[0, 0] = -np.inf
    got = _check(g, op, axis=1)
    assert np.isnan(got).sum() == 1


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", [(B + 3, 5), (700, 1030), (3, 70000), (70000, 3), (1, 9)])
def test_columns(threads, dtype, op, shape):
    h = _data(shape[0] * shape[1], dtype).reshape(shape)
    _check(h, op, axis=0)
    _check(h, op, axis=0, keepdims=True)
    g = h.copy()
    g[shape[0] - 1, shape[1] - 1] = np.nan      # only the last column
    g[0, 0] = np.inf
    got = _check(g, op, axis=0)
    assert np.isnan(got).sum() == 1


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", OPS)
def test_middle_and_several_axes(threads, dtype, op):
    shape = (6, 1500, 40)
    h = _data(np.prod(shape), dtype).reshape(shape)
    g = h.copy()
    g[2, 1499, 7] = np.nan
    g[4, 0, 39] = -np.nan
    for axis in (1, (0, 2), (1, 2), (0, 1), None):
        for keepdims in (False, True):
            _check(h, op, axis=axis, keepdims=keepdims)
            got = _check(g, op, axis=axis, keepdims=keepdims)
            assert np.isnan(got).any()
    got = _check(g, op, axis=1)
    assert np.isnan(got).sum() == 2 and np.isnan(got[2, 7]) and np.isnan(got[4, 39])


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("op", OPS)
def test_integers_unchanged(threads, dtype, op):
    n = 7 * (CHUNK // 4 + B)
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    h = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    h[n - 1] = info.max if op == "max" else info.min
    _check(h, op)
    _check(h.reshape(-1, 7), op, axis=1)
    _check(h.reshape(-1, 7), op, axis=0)


def test_float16_and_empty(threads):
    h = _data(B + 9, "float16")
    h[B + 4] = np.nan
    for op in OPS:
        assert np.isnan(_check(h, op))
        _check(h[:B], op)
    e = gp.asarray(np.zeros((0, 3), np.float32), device="cpu")
    with pytest.raises(ValueError, match="max"):
        gp.max(e)
    with pytest.raises(ValueError, match="min"):
        gp.min(e, axis=0)
