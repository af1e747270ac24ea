"""Indexing as a NumPy user writes it (NumPy arrays and scalars as indices, nested sequences,
an ellipsis between advanced indices, bad index types, NumPy scalar values, ``in``), against
numpy. tests/test_indexing.py covers the grilly-array forms of the keys."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grilly as gp
from grilly.testing import assert_close, require as need

ADV = ("gather", "scatter", "mask_indices")   # (normalize_indices is composed on Vulkan)
fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def _x(device, shape=(2, 3, 4), dtype=np.float32):
    h = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    return gp.asarray(h, device=device), h


def _check(device, x, h, key, hkey=None):
    """x[key] against h[hkey], then x[key] = v against h[hkey] = v (x, h are updated)."""
    hkey = key if hkey is None else hkey
    expected = np.asarray(h[hkey])
    got = x[key]
    assert got.shape == expected.shape
    assert_close(got, expected)
    v = (-np.arange(expected.size) - 1).reshape(expected.shape).astype(h.dtype)
    x[key] = gp.asarray(v, device=device)
    h[hkey] = v
    assert_close(x, h)


def test_bad_index_types_are_index_errors(device):
    # NumPy raises IndexError for a float, a string or a float array used as an index; grilly
    # raised a bare TypeError (a NumPy user's ``except IndexError`` missed it). The error is both.
    x, h = _x(device)
    keys = [1.0, np.float32(1.0), (0, 1.5), "a", (slice(None), "b"), [slice(None), 1], [0, None],
            gp.asarray(1.0, device=device), np.array([0.0, 1.0]), np.array(1.0), 1j, b"x"]
    for k in keys:
        with pytest.raises(IndexError, match="__getitem__"):
            x[k]
        with pytest.raises(TypeError, match="__setitem__"):
            x[k] = 0.0
    assert_close(x, h)


def test_numpy_arrays_and_scalars_as_indices(device):
    # a NumPy index array failed with numpy's "only integer scalar arrays can be converted to a
    # scalar index"; np.True_ / np.False_ were refused as "got bool"
    need(device, *ADV)
    x, h = _x(device)
    _check(device, x, h, np.array([1, 0, -1]))
    _check(device, x, h, (slice(None), np.array([[0], [2]]), np.array([1, -1], np.int8)))
    _check(device, x, h, np.array([True, False]))
    _check(device, x, h, (np.array([True, False]), slice(None), np.array([3, 0])))
    _check(device, x, h, (np.array(1), Ellipsis, np.array(-1)))
    _check(device, x, h, (slice(None), np.uint8(2)))
    _check(device, x, h, np.True_)
    _check(device, x, h, (0, np.False_))
    _check(device, x, h, (np.True_, 1, np.array([0, -1])))
    with pytest.raises(IndexError, match="axis 0 with size 2"):
        x[np.array([0, 2])]
    assert_close(x, h)


def test_nested_sequences_as_indices(device):
    # [[]] is an empty integer index in NumPy (grilly made a float64 array and refused it);
    # a tuple inside the key is a sequence index in NumPy (grilly refused it as a TypeError)
    need(device, *ADV)
    x, h = _x(device)
    assert x[[[]]].shape == h[[[]]].shape == (1, 0, 3, 4)
    assert x[[]].shape == h[[]].shape
    _check(device, x, h, ((1, 0),))
    _check(device, x, h, ((0, 1), Ellipsis, (3, -4)))
    _check(device, x, h, (slice(None), ((0, 2), (1, 1))))
    _check(device, x, h, ([[True, False, True], [False, True, True]],))
    _check(device, x, h, ([1, 0], [True, False, True]), ([1, 0], np.array([True, False, True])))


@pytest.mark.parametrize("key", [
    (slice(None), [0, 2], Ellipsis, [1, 3]),     # the ellipsis stands for no axis
    (slice(None), [2], Ellipsis, -1),            # an int counts as an advanced index
    (slice(None), 1, Ellipsis, [[0], [3]]),
    (slice(None), [True, False, True], Ellipsis, 0),
    ([1], Ellipsis, [0, 2], slice(1, 3)),
    (Ellipsis, [0], [1, 2]),                     # not between: the dims stay in place
    (slice(None), [1], [0, 2], Ellipsis),
])
def test_ellipsis_separates_advanced_indices(device, key):
    # NumPy: x[:, i, ..., j] puts the broadcast index dims first (as x[:, i, :, j] would) even
    # when the ellipsis stands for no axis; grilly kept them in place (a (2, 1) result where
    # NumPy gives (1, 2)), and setitem wrote a value of NumPy's shape to the wrong elements
    need(device, *ADV)
    x, h = _x(device)
    hkey = tuple(np.asarray(k) if isinstance(k, list) else k for k in key)
    _check(device, x, h, key, hkey)


def test_setitem_numpy_scalar_values(device):
    # np.float64 (a float subclass) was accepted, np.float32 / np.int64 / np.bool_ were not
    x, h = _x(device, (4,))
    for i, v in enumerate([np.int64(7), np.float32(1.5), np.bool_(True), np.float16(-2.0)]):
        x[i] = v
        h[i] = v
    assert_close(x, h)
    n = gp.zeros((2,), dtype=gp.int8, device=device)
    n[0] = np.int64(-5)
    n[1] = np.uint8(100)
    assert n.tolist() == [-5, 100]
    with pytest.raises(OverflowError, match="__setitem__"):
        n[0] = np.int64(300)
    with pytest.raises(TypeError, match="__setitem__"):
        n[0] = np.float32(1.5)
    with pytest.raises(TypeError, match="__setitem__"):
        n[0] = np.array([1, 2])
    assert n.tolist() == [-5, 100]


def test_concat_promotion_error_names_concat(device):
    # a promotion that does not exist names concat/stack (the error named result_type); an
    # int/float mix promotes as NumPy's
    a = gp.zeros((2,), dtype=gp.bfloat16, device=device)
    b = gp.zeros((2,), dtype=gp.int8, device=device)
    with pytest.raises(TypeError, match="concat"):
        gp.concat([a, b])
    with pytest.raises(TypeError, match="stack"):
        gp.stack([a, b])
    f = gp.zeros((2,), dtype=gp.float32, device=device)
    assert gp.concat([f, b]).dtype == gp.float32 == gp.stack([f, b]).dtype


def test_contains(device):
    # ``v in x`` iterated the rows and failed on bool(row) for a 2-D array
    x, h = _x(device, (3, 4))
    for v in (5.0, 5, 50.0, -1):
        assert (v in x) == (v in h)
    assert (True in (x > 10)) and (False in (x > 10))
    assert 3.0 in gp.asarray(3.0, device=device)
    assert gp.asarray(7.0, device=device) in x


@st.composite
def mixed_keys(draw, shape):
    """A key mixing ints, slices, None, one Ellipsis, integer arrays/lists/tuples, masks and bool
    scalars, valid for ``shape`` (NumPy side: every sequence as an array)."""
    items, ax, ell = [], 0, False
    bshape = draw(st.sampled_from([(), (2,), (1, 2), (2, 1)]))
    for _ in range(draw(st.integers(0, len(shape) + 2))):
        kind = draw(st.sampled_from(["int", "slice", "none", "ell", "arr", "list", "mask", "b0"]))
        n = shape[ax] if ax < len(shape) else 0
        if kind == "none":
            items.append(("none", None))
        elif kind == "b0":
            items.append(("b0", draw(st.booleans())))
        elif kind == "ell":
            if not ell:
                ell = True
                items.append(("ell", Ellipsis))
        elif kind == "int" and n:
            items.append(("int", draw(st.integers(-n, n - 1))))
            ax += 1
        elif kind in ("arr", "list") and n:
            size = int(np.prod(bshape)) if bshape else draw(st.integers(0, 2))
            vals = draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size))
            items.append((kind, np.asarray(vals, dtype=np.int64).reshape(bshape or (size,))))
            ax += 1
        elif kind == "mask" and ax < len(shape):
            m = draw(st.integers(1, min(2, len(shape) - ax)))
            sub = shape[ax:ax + m]
            flags = draw(st.lists(st.booleans(), min_size=int(np.prod(sub)), max_size=int(np.prod(sub))))
            items.append(("mask", np.asarray(flags, dtype=bool).reshape(sub)))
            ax += m
        elif ax < len(shape):
            b = st.none() | st.integers(-n - 2, n + 2)
            step = st.none() | st.sampled_from([-2, -1, 1, 2])
            items.append(("slice", slice(draw(b), draw(b), draw(step))))
            ax += 1
    return items


@fixture_ok
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=4).map(tuple), data=st.data())
def test_mixed_keys_random(device, shape, data):
    need(device, *ADV)
    x, h = _x(device, shape, np.int32)
    items = data.draw(mixed_keys(shape), label="key")

    def key(conv):
        return tuple(conv(v) if k in ("arr", "mask") else v.tolist() if k == "list" else v
                     for k, v in items)
    hkey = tuple(v for _, v in items)   # (lists as int64 arrays: numpy makes [] a float array)
    try:
        expected = np.asarray(h[hkey])
    except IndexError:
        with pytest.raises(IndexError):
            x[key(lambda v: gp.asarray(v, device=device))]
        return
    _check(device, x, h, key(lambda v: gp.asarray(v, device=device)), hkey)
    _check(device, x, h, key(lambda v: v), hkey)   # the same key with NumPy index arrays
    assert expected.shape == np.asarray(h[hkey]).shape
