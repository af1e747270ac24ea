"""Storage and creation: host round trips, every dtype, views, casts, copies and the creation
functions, each against numpy."""
from __future__ import annotations

import numpy as np
import pytest

import grilly as gp
from grilly.array import dtypes as dt
from grilly.testing import assert_close, on

K = pytest.mark.kernels
_ALL = [d.name for d in dt.ALL]


def _sample(dtype: str) -> np.ndarray:
    v = np.array([[0, 1, 2, 3], [5, 7, 11, 13], [17, 19, 23, 29]])
    d = np.dtype(dtype)
    return (v % 2 == 1) if d.kind == "b" else (v + 1j * v[::-1]).astype(d) if d.kind == "c" else v.astype(d)


@K("from_host", "to_host")
@pytest.mark.parametrize("dtype", _ALL)
def test_roundtrip(device, dtype):
    a = _sample(dtype)
    x = on(device, a)
    assert x.device == device and x.dtype == dt.from_name(dtype) and x.shape == a.shape
    assert_close(x, a)
    assert_close(on(device, a[0, 0]), a[0, 0])            # 0-d
    assert_close(on(device, a[:0]), a[:0])                 # empty


@K("empty", "full")
@pytest.mark.parametrize("dtype", _ALL)
def test_full_empty(device, dtype):
    d = dt.from_name(dtype)
    fill = True if d.kind == "b" else 1 + 2j if d.kind == "c" else 7
    assert_close(gp.full((2, 3), fill, dtype=d, device=device), np.full((2, 3), fill, dtype=d.np))
    assert_close(gp.zeros((0, 2), dtype=d, device=device), np.zeros((0, 2), dtype=d.np))
    e = gp.empty((4, 1), dtype=d, device=device)
    assert e.shape == (4, 1) and e.dtype == d and e.device == device


@K("astype")
@pytest.mark.parametrize("src, to", [(s, t) for s in ("bool", "int8", "uint8", "int64", "float32",
                                                      "float64", "complex64")
                                     for t in _ALL if s[0] != "c" or t[0] == "c"])   # no complex->real
def test_astype(device, src, to):
    a = _sample(src)
    assert_close(gp.astype(on(device, a), dt.from_name(to)), a.astype(to))


@K("copy", "assign", "slice")
def test_copy_is_independent(device):
    a = np.arange(6.0).reshape(2, 3)
    x = on(device, a)
    y = gp.asarray(x, copy=True)
    x[0, 0] = 100.0
    assert_close(y, a)
    a[0, 0] = 100.0
    assert_close(x, a)


@K("sole_owner", "slice", "reshape")
def test_sole_owner_never_claims_shared_memory(device):
    """``sole_owner`` (optional) may say False whenever it likes, but never True while a view of
    the buffer, or another holder of it, exists: autograd hands such a buffer on uncopied."""
    from grilly.array import core
    from grilly.array.array import Array
    from grilly.testing import require
    require(device, "sole_owner")
    y = on(device, np.arange(12.0).reshape(3, 4)) * 2.0
    v = y[1:]
    assert not core.sole_owner(y) and not core.sole_owner(v)
    del v
    r = gp.reshape(y, (12,))
    assert not core.sole_owner(y) and not core.sole_owner(r)
    del r
    twin = Array._new(y._buf, y.dtype, y.device)     # a second Array on the same buffer
    assert not core.sole_owner(y) and not core.sole_owner(twin)
    del twin
    kept = y._buf                                     # the caller holding the buffer itself
    assert not core.sole_owner(y)
    del kept
    assert_close(y, np.arange(12.0).reshape(3, 4) * 2.0)


@K("slice", "reshape", "permute")
@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "complex128"])
def test_views(device, dtype):
    a = _sample(dtype)
    x = on(device, a)
    assert_close(x[1:, ::2], a[1:, ::2])
    assert_close(x[::-1, ::-2], a[::-1, ::-2])
    assert_close(x[2], a[2])
    assert_close(gp.reshape(x, (4, 3)), a.reshape(4, 3))
    assert_close(gp.reshape(x.T, (12,)), a.T.reshape(12))
    assert_close(gp.permute_dims(gp.reshape(x, (2, 3, 2)), (2, 0, 1)), a.reshape(2, 3, 2).transpose(2, 0, 1))
    assert_close(gp.flip(x, axis=1), a[:, ::-1])


@K("broadcast_to")
def test_broadcast_to(device):
    a = np.arange(3, dtype=np.int32)
    assert_close(gp.broadcast_to(on(device, a), (2, 3)), np.broadcast_to(a, (2, 3)))
    assert_close(gp.broadcast_to(on(device, a[:, None]), (3, 4)), np.broadcast_to(a[:, None], (3, 4)))


@K("assign", "slice")
@pytest.mark.parametrize("dtype", ["bool", "int32", "float16", "float64", "complex64"])
def test_setitem_slices(device, dtype):
    a = _sample(dtype)
    x = on(device, a)
    x[1] = x[0]                      # overlapping source
    a[1] = a[0].copy()
    x[:, ::2] = on(device, a[:, 1::2].copy())
    a[:, ::2] = a[:, 1::2].copy()
    assert_close(x, a)


@K("assign", "slice", "permute")
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_setitem_from_an_overlapping_view(device, dtype):
    """The source is read in full before the destination is written, as NumPy does, when both
    are views of the same memory: shifted (x[1:] = x[:-1] and back), transposed into itself,
    reversed. A kernel that copies element by element in parallel reads overwritten values."""
    a = np.arange(64 * 64).astype(dtype).reshape(64, 64)
    x = on(device, a)
    x[1:] = x[:-1]
    a[1:] = a[:-1].copy()
    x[:, :-3] = x[:, 3:]
    a[:, :-3] = a[:, 3:].copy()
    x[...] = gp.matrix_transpose(x)
    a[...] = a.T.copy()
    v = gp.reshape(x, (-1,))
    v[::-1] = v
    b = a.reshape(-1)
    b[::-1] = b.copy()
    assert_close(x, a)


@K("assign", "copy", "slice")
def test_concat_stack(device):
    a, b = np.arange(6.0).reshape(2, 3), -np.arange(3.0).reshape(1, 3)
    assert_close(gp.concat([on(device, a), on(device, b)]), np.concatenate([a, b]))
    assert_close(gp.stack([on(device, a), on(device, a)], axis=1), np.stack([a, a], axis=1))


@K("arange")
@pytest.mark.parametrize("args, dtype", [((5,), None), ((2, 11, 3), "int8"), ((0.5, 3.0, 0.25), "float32"),
                                         ((10, 0, -2), "int64"), ((1.0, 2.0, 0.1), "float64"),
                                         ((3, 3), None)])
def test_arange(device, args, dtype):
    got = gp.arange(*args, dtype=dtype and dt.from_name(dtype), device=device)
    want = np.arange(*args, dtype=dtype)
    if dtype is None:
        want = want.astype(np.int64 if all(isinstance(v, int) for v in args) else np.float64)
    assert_close(got, want, rtol=1e-6)


@K("linspace")
@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_linspace(device, dtype, endpoint):
    got = gp.linspace(-1.0, 2.5, 7, endpoint=endpoint, dtype=dt.from_name(dtype), device=device)
    assert_close(got, np.linspace(-1.0, 2.5, 7, endpoint=endpoint).astype(dtype), rtol=1e-6)


@K("eye")
@pytest.mark.parametrize("n, m, k", [(3, None, 0), (3, 5, 1), (4, 2, -1), (2, 3, 7)])
@pytest.mark.parametrize("dtype", ["bool", "int32", "float32"])
def test_eye(device, n, m, k, dtype):
    got = gp.eye(n, m, k=k, dtype=dt.from_name(dtype), device=device)
    assert_close(got, np.eye(n, m, k=k, dtype=dtype))


@K("full", "astype")
def test_like_functions(device):
    x = on(device, np.zeros((2, 2), dtype=np.int16))
    for fn, want in ((gp.ones_like, np.ones((2, 2), np.int16)), (gp.zeros_like, np.zeros((2, 2), np.int16))):
        r = fn(x)
        assert r.device == device
        assert_close(r, want)
    assert_close(gp.full_like(x, 3, dtype=gp.float32), np.full((2, 2), 3, np.float32))


@K("from_host", "to_host", "astype", "copy", "slice", "gather")
@pytest.mark.parametrize("other", ["float32", "float64", "int32", "bool", "bfloat16"])
def test_bfloat16_storage_and_casts(device, other):
    """gp.bfloat16 (grilly's extension dtype): 2-byte storage, views and gathers, and casts to and
    from each dtype, bit for bit as ml_dtypes converts (round to nearest even; float64 through
    float32). A backend that cannot hold it says so in supports_dtype."""
    bf = dt.bfloat16
    if not device.backend.supports_dtype(device, bf):
        pytest.skip(f"{device} does not support bfloat16")
    v = np.array([0.0, -0.0, 1.0, 1.00390625, 1.01171875, -2.5, 3e38, 3.4e38, np.inf, -np.inf,
                  np.nan, 1e-40, 65504.0, 1.0 + 2**-8 + 2**-30], np.float64)
    if other in ("int32", "bool"):
        v = np.array([0, 1, -7, 255, 2**24 + 1, 2**25 + 3, -(2**30) - 1], np.int64)
    h = v.astype(other if other != "bfloat16" else np.float32)
    if other == "bool":
        h = v % 2 == 1
    with np.errstate(all="ignore"):
        ref = (h.astype(np.float32) if other == "float64" else h).astype(bf.np)
    x = gp.astype(on(device, h) if other != "bfloat16" else on(device, ref), bf)
    assert x.dtype == bf
    assert np.array_equal(np.asarray(x).view(np.uint16), ref.view(np.uint16))
    back = gp.astype(x, dt.from_name(other))
    finite = np.isfinite(ref.astype(np.float32))
    with np.errstate(all="ignore"):
        want = ref.astype(other if other != "bfloat16" else bf.np)
    got = np.asarray(back)
    if other == "int32":   # inf/NaN to an integer is undefined: finite values only
        got, want = got[finite], want[finite]
    nan = np.isnan(want.astype(np.float32)) if other not in ("int32", "bool") else \
        np.zeros(want.shape, bool)
    # bit for bit (signed zeros included) but for NaN, whose payload a device may canonicalize
    assert np.array_equal(np.isnan(got.astype(np.float32)) if nan.any() else nan, nan)
    assert np.array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))
    y = x[::2]
    assert np.array_equal(np.asarray(y).view(np.uint16), ref[::2].view(np.uint16))
    idx = on(device, np.array([3, 0, 2]))
    assert np.array_equal(np.asarray(x[idx]).view(np.uint16), ref[[3, 0, 2]].view(np.uint16))
