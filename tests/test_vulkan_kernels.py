"""Differential tests of the Vulkan reduction, matmul, indexing, sorting and round-trip kernels
against numpy (phase 2 of the backend; docs/vulkan.md)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grilly as gp
from grilly.backends.vulkan.recorder import stats
from grilly.testing import assert_close

VK = [d for d in gp.devices() if str(d).startswith("vulkan")]
pytestmark = pytest.mark.skipif(not VK, reason="no Vulkan device")
DTYPES = ["bool", "int8", "int32", "int64", "uint8", "uint32", "uint64", "float16", "float32",
          "float64"]


@pytest.fixture(params=[str(d) for d in VK] or ["none"])
def vdev(request):
    return gp.backends.registry.device(request.param)


def _data(dtype: str, shape, rng) -> np.ndarray:
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if d.kind in "iu":
        return rng.integers(0 if d.kind == "u" else -5, 6, shape).astype(d)
    return (rng.standard_normal(shape) * 3).astype(d)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
def test_reductions(vdev, dtype, axis):
    rng = np.random.default_rng(0)
    x = _data(dtype, (3, 300, 5), rng)
    a = gp.asarray(x, device=vdev)
    for op in ("sum", "prod", "max", "min", "any", "all"):
        if dtype == "bool" and op in ("sum", "prod", "max", "min"):
            continue
        if dtype == "float16" and op == "prod":
            continue  # overflows: float32 accumulation and numpy's float16 one disagree on inf
        got = getattr(gp, op)(a, axis=axis)
        want = getattr(np, op)(x, axis=axis)
        if op in ("sum", "prod") and dtype in ("float16", "float32"):
            want = want.astype(dtype)
        rtol = {"float16": 1e-2, "float32": 1e-4}.get(dtype) if op in ("sum", "prod") else None
        assert_close(got, want.astype(got.dtype.name) if op in ("sum", "prod") else want,
                     rtol=rtol, atol={"float16": 2e-2, "float32": 1e-3}.get(dtype, 0.0) if rtol else 0.0)


def test_reduction_strided_nan_and_keepdims(vdev):
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x[1, 2, 3] = np.nan
    a = gp.asarray(x, device=vdev)
    v = gp.permute_dims(a, (2, 0, 1))[:, ::2]
    xv = x.transpose(2, 0, 1)[:, ::2]
    assert_close(gp.max(v, axis=(1, 2), keepdims=True), xv.max(axis=(1, 2), keepdims=True))
    assert_close(gp.min(a, axis=1), x.min(axis=1))
    assert_close(gp.sum(v, axis=0), xv.sum(axis=0))
    assert_close(gp.argmax(a, axis=1), x.argmax(axis=1))
    assert_close(gp.argmin(v, axis=2), xv.argmin(axis=2))


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64", "bool"])
def test_arg_ties_and_flat(vdev, dtype):
    x = np.array([[1, 3, 3, 0], [2, 2, 0, 0], [0, 5, 5, 5]]).astype(dtype)
    big = np.tile(x, (1, 200))
    for arr in (x, big):
        a = gp.asarray(arr, device=vdev)
        assert_close(gp.argmax(a, axis=1), arr.argmax(axis=1))
        assert_close(gp.argmin(a, axis=0), arr.argmin(axis=0))
        assert int(gp.argmax(a)) == arr.argmax()


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "uint8"])
def test_cumulative(vdev, dtype):
    x = _data(dtype, (4, 7, 3), np.random.default_rng(1))
    a = gp.asarray(x, device=vdev)
    for axis in (0, 1, 2):
        got = gp.cumulative_sum(a, axis=axis, include_initial=True)
        want = np.concatenate([np.zeros_like(np.take(x, [0], axis)), np.cumsum(x, axis)], axis)
        assert_close(got, want.astype(got.dtype.name), rtol=1e-5 if x.dtype.kind == "f" else None)
        got = gp.cumulative_prod(a, axis=axis)
        assert_close(got, np.cumprod(x, axis).astype(got.dtype.name),
                     rtol=1e-5 if x.dtype.kind == "f" else None)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=st.integers(1, 130), n=st.integers(1, 130), k=st.integers(0, 70),
       trans=st.booleans())
def test_matmul_float32(vdev, m, n, k, trans):
    rng = np.random.default_rng(m * 1000 + n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    y = rng.standard_normal((n, k) if trans else (k, n)).astype(np.float32)
    b = gp.asarray(y, device=vdev)
    b = gp.matrix_transpose(b) if trans else b
    yy = y.T if trans else y
    assert_close(gp.matmul(gp.asarray(x, device=vdev), b), x @ yy, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "int32", "int8", "uint64", "float64", "float16"])
def test_matmul_batched_broadcast(vdev, dtype):
    rng = np.random.default_rng(3)
    x = _data(dtype, (2, 1, 5, 9), rng)
    y = _data(dtype, (3, 9, 4), rng)
    got = gp.matmul(gp.asarray(x, device=vdev), gp.asarray(y, device=vdev))
    want = (x.astype(np.float64) @ y.astype(np.float64)) if dtype == "float16" else x @ y
    assert_close(got, want.astype(dtype), rtol=1e-2 if dtype == "float16" else 1e-5)


def test_matmul_stays_on_device(vdev):
    a = gp.ones((64, 64), dtype=gp.float32, device=vdev)
    before = (stats["downloads"], gp.device_stats(vdev)["host_round_trips"])
    c = gp.sum(gp.matmul(a, a), axis=0)
    assert (stats["downloads"], gp.device_stats(vdev)["host_round_trips"]) == before
    assert_close(c, np.full(64, 64 * 64, np.float32))


@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "float64"])
def test_take_getitem_setitem(vdev, dtype):
    x = _data(dtype, (6, 5, 4), np.random.default_rng(4))
    a = gp.asarray(x, device=vdev)
    idx = np.array([[5, 0], [-1, 2]])
    assert_close(a[gp.asarray(idx, device=vdev)], x[idx])
    assert_close(gp.take(a, gp.asarray([3, -2], device=vdev), axis=2), np.take(x, [3, -2], 2))
    assert_close(a[:, gp.asarray([3, 1, 3], device=vdev)], x[:, [3, 1, 3]])
    m = x.astype(bool) if dtype != "bool" else x
    assert_close(a[gp.asarray(m, device=vdev)], x[m])
    # duplicate indices: the last value wins, writes land in a strided view
    y, b = x.copy(), gp.asarray(x.copy(), device=vdev)
    vals = _data(dtype, (3, 3, 4), np.random.default_rng(5))
    y[::2][[0, 2, 0], ::2] = vals
    view = b[::2]
    view[gp.asarray([0, 2, 0], device=vdev), ::2] = gp.asarray(vals, device=vdev)
    assert_close(b, y)


def test_repeat_and_nonzero(vdev):
    x = np.arange(5, dtype=np.int32)
    r = np.array([2, 0, 3, 1, 0])
    assert_close(gp.repeat(gp.asarray(x, device=vdev), gp.asarray(r, device=vdev)),
                 np.repeat(x, r))
    z = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
    for g, w in zip(gp.nonzero(gp.asarray(z, device=vdev)), np.nonzero(z)):
        assert_close(g, w)
    with pytest.raises(IndexError):
        gp.asarray(x, device=vdev)[gp.asarray([1, 7], device=vdev)]


@pytest.mark.parametrize("dtype", ["int8", "uint32", "float16", "float32", "float64", "bool"])
@pytest.mark.parametrize("n", [1, 7, 64, 300])
def test_sort_argsort(vdev, dtype, n):
    x = _data(dtype, (3, n), np.random.default_rng(n))
    if x.dtype.kind == "f":
        x[0, :: 3] = np.nan
    a = gp.asarray(x, device=vdev)
    for axis in (0, 1):
        assert_close(gp.sort(a, axis=axis), np.sort(x, axis=axis))
        assert_close(gp.argsort(a, axis=axis), np.argsort(x, axis=axis, kind="stable"))
        want = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
        want = x.shape[axis] - 1 - want
        assert_close(gp.argsort(a, axis=axis, descending=True), want)


def test_search_unique_isin(vdev):
    s = np.array([1.0, 2.0, 2.0, 5.0, np.nan], np.float32)
    v = np.array([[0.0, 2.0], [6.0, np.nan]], np.float32)
    for side in ("left", "right"):
        assert_close(gp.searchsorted(gp.asarray(s, device=vdev), gp.asarray(v, device=vdev),
                                     side=side), np.searchsorted(s, v, side=side))
    x = np.array([3, 1, 3, 2, 1, 3], np.int32)
    res = gp.unique_all(gp.asarray(x, device=vdev))
    want = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(res, want):
        assert_close(g, w)
    t = np.array([2, 9], np.int32)
    assert_close(gp.isin(gp.asarray(x, device=vdev), gp.asarray(t, device=vdev)), np.isin(x, t))


def test_host_round_trips_counted(vdev):
    x = np.array([[4.0, 1.0], [1.0, 3.0]], np.float32)
    a = gp.asarray(x, device=vdev)
    before = gp.device_stats(vdev)["host_round_trips"]
    assert_close(gp.linalg.inv(a), np.linalg.inv(x), rtol=1e-5)
    assert_close(gp.linalg.cholesky(a), np.linalg.cholesky(x), rtol=1e-5)
    assert gp.device_stats(vdev)["host_round_trips"] == before + 2


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_long_rows_two_pass(vdev, dtype):
    x = _data(dtype, (2, 70001), np.random.default_rng(7))
    if x.dtype.kind == "f":
        x[1, 50000] = np.nan
    a = gp.asarray(x, device=vdev)
    assert_close(gp.sum(a, axis=1), x.sum(axis=1).astype(x.dtype) if x.dtype.kind == "f"
                 else x.sum(axis=1), rtol=1e-5 if x.dtype.kind == "f" else None)
    assert_close(gp.max(a, axis=1), x.max(axis=1))
    assert_close(gp.min(a), np.min(x))
    assert_close(gp.argmax(a, axis=1), x.argmax(axis=1))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int32", "int64",
                                   "float64", "complex64", "uint8"])
def test_transposed_copies(vdev, dtype, monkeypatch):
    """Copies of views with unit stride along rows (x.T, a slice of it; 2-d and 3-d, ragged
    against the shader's 32x32 tiles) run the tiled transpose shader for 2-, 4- and 8-byte
    elements, into contiguous buffers and into a strided destination (setitem), bit for bit."""
    from grilly.backends.vulkan import kernels

    used = []
    real = kernels._transpose_into
    monkeypatch.setattr(kernels, "_transpose_into", lambda d, s: used.append(real(d, s)) or used[-1])
    rng = np.random.default_rng(5)
    if dtype == "bfloat16":
        import ml_dtypes
        np_dtype = ml_dtypes.bfloat16
    else:
        np_dtype = np.dtype(dtype)
    tiled = np.dtype(np_dtype).itemsize in (2, 4, 8)
    for shape in [(100, 70), (64, 64), (3, 50, 90), (1000, 33)]:
        a = (rng.standard_normal(shape) * 100).astype(np_dtype)
        g = gp.asarray(a, device=vdev)
        used.clear()
        got = np.asarray(gp.reshape(gp.matrix_transpose(g), (-1,)))
        assert got.tobytes() == np.swapaxes(a, -1, -2).reshape(-1).tobytes()
        assert used == [tiled]
    a = (rng.standard_normal((90, 130)) * 100).astype(np_dtype)
    src = gp.matrix_transpose(gp.asarray(a, device=vdev))[3:120:2, 5:85]   # rows stride 2
    big = gp.zeros((70, 100), dtype=gp.asarray(a[:1, :1]).dtype, device=vdev)
    used.clear()
    big[4:63, 10:90] = src
    ref = np.zeros((70, 100), dtype=np_dtype)
    ref[4:63, 10:90] = a.T[3:120:2, 5:85]
    assert np.asarray(big).tobytes() == ref.tobytes()
    assert used == [False]   # (the source's unit stride went with the slice's step)
    src = gp.matrix_transpose(gp.asarray(a, device=vdev))[3:120, 5:85]
    used.clear()
    big[4:121 - 4 - 50, 10:90] = src[:63]
    ref[4:67, 10:90] = a.T[3:66, 5:85]
    assert np.asarray(big).tobytes() == ref.tobytes()
    assert used == [tiled]
