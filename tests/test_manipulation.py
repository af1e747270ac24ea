"""Manipulation functions against numpy."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grilly as gp
from grilly.testing import assert_close, require as need

fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


def _x(device, shape, dtype=np.float64):
    h = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    return gp.asarray(h, device=device), h


def test_broadcast(device):
    x, h = _x(device, (3, 1))
    assert gp.broadcast_shapes() == ()
    assert gp.broadcast_shapes((2, 1, 3), (4, 1)) == (2, 4, 3)
    assert_close(gp.broadcast_to(x, (2, 3, 4)), np.broadcast_to(h, (2, 3, 4)))
    y, hy = _x(device, (4,), np.int32)
    a, b = gp.broadcast_arrays(x, y)
    ha, hb = np.broadcast_arrays(h, hy)
    assert_close(a, ha)
    assert_close(b, hb)
    assert isinstance(gp.broadcast_arrays(x, y), tuple)
    with pytest.raises(ValueError):
        gp.broadcast_to(x, (3, 2, 2))
    with pytest.raises(ValueError):
        gp.broadcast_to(x, (1,))
    with pytest.raises(ValueError):
        gp.broadcast_shapes((2,), (3,))
    with pytest.raises(TypeError):
        gp.broadcast_to(h, (3, 1))


@pytest.mark.parametrize("dts", [("float32", "float32"), ("int8", "int32"),
                                 ("float32", "complex128"), ("bool", "bool")])
def test_concat_stack_promotion(device, dts):
    need(device, dtypes=dts)
    h1 = np.arange(6).reshape(2, 3).astype(dts[0])
    h2 = np.arange(6, 12).reshape(2, 3).astype(dts[1])
    a, b = gp.asarray(h1, device=device), gp.asarray(h2, device=device)
    for axis in (0, 1, -1):
        assert_close(gp.concat((a, b), axis=axis), np.concatenate((h1, h2), axis=axis))
    assert_close(gp.concat([a, b], axis=None), np.concatenate((h1, h2), axis=None))
    for axis in (0, 1, 2, -1, -3):
        assert_close(gp.stack([a, b], axis=axis), np.stack((h1, h2), axis=axis))


def test_concat_stack_errors(device):
    a, _ = _x(device, (2, 3))
    b, _ = _x(device, (2, 4))
    assert gp.concat([a, b], axis=1).shape == (2, 7)
    assert gp.concat([gp.asarray(1.0, device=device), a], axis=None).shape == (7,)
    with pytest.raises(ValueError):
        gp.concat([a, b], axis=0)
    with pytest.raises(ValueError):
        gp.concat([a, gp.zeros((2, 3, 1), device=device)])
    with pytest.raises(ValueError):
        gp.concat([gp.asarray(1.0, device=device)])
    with pytest.raises(IndexError):
        gp.concat([a, a], axis=2)
    with pytest.raises(ValueError):
        gp.concat([])
    with pytest.raises(TypeError):
        gp.concat(a)
    # a bool array with a float one promotes as NumPy's (it was a TypeError)
    got = gp.concat([a, gp.asarray([[True] * 3] * 2, device=device)])
    assert got.dtype == a.dtype and got.shape == (a.shape[0] + 2, 3)
    with pytest.raises(ValueError):
        gp.stack([a, b])
    with pytest.raises(IndexError):
        gp.stack([a, a], axis=3)


@fixture_ok
@given(shape=shapes, data=st.data())
def test_reshape_random(device, shape, data):
    x, h = _x(device, shape)
    size = h.size
    divisors = [d for d in range(1, size + 1) if size % d == 0] or [1]
    d = data.draw(st.sampled_from(divisors))
    new = data.draw(st.sampled_from([(d, size // d), (-1, d) if size else (0, d), (size,),
                                     (1, size, 1)]))
    assert_close(gp.reshape(x, new), h.reshape(new))
    c = gp.reshape(x, new, copy=True)
    if size:
        c[(0,) * c.ndim] = -1  # a copy: x must not change
        assert_close(x, h)


def test_reshape(device):
    x, h = _x(device, (2, 3, 4))
    v = gp.reshape(x, (6, 4), copy=False)
    v[0, 0] = 100
    assert float(x[0, 0, 0]) == 100
    t = gp.permute_dims(x, (2, 1, 0))
    with pytest.raises(ValueError):
        gp.reshape(t, (24,), copy=False)
    assert_close(gp.reshape(t, (24,)), np.transpose(x.__array__(), (2, 1, 0)).reshape(24))
    for bad in [(5, 5), (-1, -1), (-2, 12), (0, -1)]:
        with pytest.raises(ValueError):
            gp.reshape(x, bad)
    with pytest.raises(TypeError):
        gp.reshape(x, (2.0, 12))
    assert gp.reshape(x, [24]).shape == (24,)


def test_expand_squeeze(device):
    x, h = _x(device, (2, 1, 3))
    for ax in (0, 1, 3, -1, -4, (0, 2), (-1, 0), (1, -2)):
        assert_close(gp.expand_dims(x, ax), np.expand_dims(h, ax))
    for bad in (4, -5, (0, 0), (0, -6), (5, 0)):
        with pytest.raises(IndexError if bad != (0, 0) else ValueError):
            gp.expand_dims(x, bad)
    assert_close(gp.squeeze(x, 1), np.squeeze(h, 1))
    assert_close(gp.squeeze(x, (-2,)), np.squeeze(h, -2))
    assert gp.squeeze(gp.zeros((1, 1), device=device), (0, 1)).shape == ()
    with pytest.raises(ValueError):
        gp.squeeze(x, 0)
    with pytest.raises(IndexError):
        gp.squeeze(x, 3)
    with pytest.raises(ValueError):
        gp.squeeze(x, (1, -2))
    with pytest.raises(IndexError):
        gp.squeeze(gp.asarray(1.0, device=device), 0)


@fixture_ok
@given(shape=shapes, data=st.data())
def test_flip_permute_moveaxis_random(device, shape, data):
    x, h = _x(device, shape, np.int16)
    nd = len(shape)
    axes = st.none() if nd == 0 else (
        st.none() | st.integers(-nd, nd - 1)
        | st.lists(st.integers(0, nd - 1), unique=True, max_size=nd).map(tuple))
    ax = data.draw(axes, label="axis")
    assert_close(gp.flip(x, axis=ax), np.flip(h, axis=ax))
    perm = tuple(data.draw(st.permutations(range(nd)), label="perm"))
    neg = tuple(p - nd if data.draw(st.booleans()) else p for p in perm)
    assert_close(gp.permute_dims(x, neg), np.transpose(h, perm))
    if nd:
        src = data.draw(st.lists(st.integers(0, nd - 1), unique=True, min_size=1, max_size=nd))
        dst = data.draw(st.lists(st.integers(-nd, nd - 1), unique_by=lambda a: a % nd,
                                 min_size=len(src), max_size=len(src)))
        assert_close(gp.moveaxis(x, tuple(src), tuple(dst)), np.moveaxis(h, src, dst))
        assert_close(gp.moveaxis(x, src[0], dst[0]), np.moveaxis(h, src[0], dst[0]))


def test_axis_errors(device):
    x, _ = _x(device, (2, 3))
    with pytest.raises(IndexError):
        gp.flip(x, axis=2)
    with pytest.raises(ValueError):
        gp.flip(x, axis=(0, -2))
    with pytest.raises(ValueError):
        gp.permute_dims(x, (0,))
    with pytest.raises(ValueError):
        gp.permute_dims(x, (0, 0))
    with pytest.raises(IndexError):
        gp.permute_dims(x, (0, 2))
    with pytest.raises(ValueError):
        gp.moveaxis(x, (0, 1), (0,))
    with pytest.raises(IndexError):
        gp.moveaxis(x, 2, 0)
    with pytest.raises(TypeError):
        gp.flip(x, axis=1.0)


@fixture_ok
@given(shape=shapes, data=st.data())
def test_roll_random(device, shape, data):
    x, h = _x(device, shape, np.float32)
    nd = len(shape)
    if nd and data.draw(st.booleans()):
        axis = tuple(data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=3)))
        shift = tuple(data.draw(st.lists(st.integers(-7, 7), min_size=len(axis), max_size=len(axis))))
    else:
        axis, shift = None, data.draw(st.integers(-7, 7))
    out = gp.roll(x, shift, axis=axis)
    assert_close(out, np.roll(h, shift, axis=axis))
    if h.size:
        out[(0,) * nd] = 99  # the result owns its data
        assert_close(x, h)


@fixture_ok
@given(shape=shapes, data=st.data())
def test_repeat_tile_random(device, shape, data):
    need(device, "gather", "normalize_indices", "repeat_indices")
    x, h = _x(device, shape, np.int32)
    nd = len(shape)
    axis = data.draw(st.none() | st.integers(-nd, nd - 1)) if nd else None
    size = h.size if axis is None else shape[axis]
    reps = data.draw(st.integers(0, 3) | st.lists(st.integers(0, 3), min_size=size, max_size=size)
                     | st.lists(st.integers(0, 3), min_size=1, max_size=1))
    r = gp.asarray(reps, dtype=gp.int64, device=device) if isinstance(reps, list) else reps
    out = gp.repeat(x, r, axis=axis)
    assert_close(out, np.repeat(h, np.asarray(reps, dtype=np.int64), axis=axis))
    if out.size:
        out[(0,) * out.ndim] = -1
        assert_close(x, h)
    t = tuple(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=nd + 1)))
    assert_close(gp.tile(x, t), np.tile(h, t))


def test_repeat_tile_errors(device):
    need(device, "gather", "normalize_indices", "repeat_indices")
    x, _ = _x(device, (2, 3))
    with pytest.raises(ValueError):
        gp.repeat(x, -1)
    with pytest.raises(ValueError):
        gp.repeat(x, gp.asarray([1, -1, 1], device=device), axis=1)
    with pytest.raises(ValueError):
        gp.repeat(x, gp.asarray([1, 1], device=device), axis=1)
    with pytest.raises(TypeError):
        gp.repeat(x, gp.asarray([1.0], device=device))
    with pytest.raises(TypeError):
        gp.repeat(x, 1.5)
    with pytest.raises(IndexError):
        gp.repeat(x, 2, axis=2)
    with pytest.raises(ValueError):
        gp.tile(x, (-1,))
    with pytest.raises(TypeError):
        gp.tile(x, 2.0)   # (an int is NumPy's tile(x, 2): tests/test_numpy_more.py)


def test_unstack(device):
    x, h = _x(device, (2, 3, 4))
    for axis in (0, 1, -1):
        out = gp.unstack(x, axis=axis)
        assert isinstance(out, tuple) and len(out) == h.shape[axis]
        for o, e in zip(out, np.moveaxis(h, axis, 0)):
            assert_close(o, e)
    with pytest.raises(IndexError):
        gp.unstack(x, axis=3)
    with pytest.raises(ValueError):
        gp.unstack(gp.asarray(1.0, device=device))
