"""Indexing (__getitem__/__setitem__, take, take_along_axis) against numpy."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grilly as gp
from grilly.testing import assert_close, require as need

ADV = ("gather", "scatter", "mask_indices")   # (normalize_indices is composed on Vulkan)


def _x(device, shape, dtype=np.int64):
    h = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    return gp.asarray(h, device=device), h


fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@st.composite
def basic_keys(draw, shape):
    """A random basic key (ints, slices, None, at most one Ellipsis) valid for ``shape``."""
    items, ax = [], 0
    ell = False
    for _ in range(draw(st.integers(0, len(shape) + 2))):
        kind = draw(st.sampled_from(["int", "slice", "none", "ell"]))
        if kind == "none":
            items.append(None)
        elif kind == "ell" and not ell:
            ell = True
            items.append(Ellipsis)
        elif ax < len(shape) and kind == "int" and shape[ax] > 0:
            items.append(draw(st.integers(-shape[ax], shape[ax] - 1)))
            ax += 1
        elif ax < len(shape):
            b = st.none() | st.integers(-6, 6)
            items.append(slice(draw(b), draw(b), draw(st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3]))))
            ax += 1
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


@fixture_ok
@given(shape=shapes, data=st.data())
def test_getitem_basic_random(device, shape, data):
    x, h = _x(device, shape, np.float32)
    key = data.draw(basic_keys(shape), label="key")
    try:
        expected = np.asarray(h[key])
    except IndexError:  # an int past an Ellipsis can land on an empty axis
        with pytest.raises(IndexError):
            x[key]
        return
    assert_close(x[key], expected)


@fixture_ok
@given(shape=shapes, data=st.data())
def test_setitem_basic_random(device, shape, data):
    x, h = _x(device, shape, np.int32)
    key = data.draw(basic_keys(shape), label="key")
    try:
        sel = np.asarray(h[key]).shape
    except IndexError:
        with pytest.raises(IndexError):
            x[key] = 0
        return
    if data.draw(st.booleans(), label="scalar"):
        value, hv = -5, -5
    else:
        hv = -np.arange(int(np.prod(sel)), dtype=np.int32).reshape(sel) - 1
        value = gp.asarray(hv, device=device)
    x[key] = value
    h[key] = hv
    assert_close(x, h)


@fixture_ok
@given(shape=shapes.filter(lambda s: len(s) > 0), data=st.data())
def test_mask_random(device, shape, data):
    need(device, *ADV)
    x, h = _x(device, shape, np.float64)
    m = data.draw(st.integers(1, len(shape)), label="mask ndim")
    size = int(np.prod(shape[:m]))
    flags = data.draw(st.lists(st.booleans(), min_size=size, max_size=size), label="mask")
    hm = np.asarray(flags, dtype=bool).reshape(shape[:m])
    mask = gp.asarray(hm, device=device)
    assert_close(x[mask], h[hm])
    x[mask] = 2.5
    h[hm] = 2.5
    assert_close(x, h)


@pytest.mark.parametrize("key", [
    lambda a: (a([1, 0, -1]),),
    lambda a: (slice(None), a([1, 1, 0])),
    lambda a: (a([[0, 1], [1, 0]]), slice(None), a([3, 2])),     # not adjacent: dims go first
    lambda a: (slice(None), a([0, 2]), a([[1], [3]])),           # adjacent, broadcast
    lambda a: (1, slice(1, None), a([0, 3])),                    # int counts as advanced
    lambda a: (a([0, 1]), None, 2),
    lambda a: (Ellipsis, a([-1, 0])),
    lambda a: ([1, 0], [2, 1]),                                  # Python lists
    lambda a: (a(1), slice(None), a(0)),                         # 0-d index arrays
])
def test_integer_arrays(device, key):
    need(device, *ADV)
    x, h = _x(device, (2, 3, 4))
    k = key(lambda v: gp.asarray(v, device=device))
    hk = key(np.asarray)
    assert_close(x[k], np.asarray(h[hk]))
    vals = -np.arange(np.asarray(h[hk]).size).reshape(np.asarray(h[hk]).shape) - 1
    x[k] = gp.asarray(vals, device=device)
    h[hk] = vals
    assert_close(x, h)


def test_bool_scalars_and_dtypes(device):
    need(device, *ADV)
    x, h = _x(device, (2, 3), np.uint8)
    assert_close(x[True], h[True])
    assert_close(x[False], h[False])
    assert_close(x[gp.asarray(True, device=device)], h[np.True_])
    assert_close(x[[True, False]], h[np.array([True, False])])
    for d in (np.bool_, np.float16, np.complex128):
        if not device.backend.supports_dtype(device, gp.asarray(np.zeros(1, d)).dtype):
            continue
        y, hy = gp.asarray(h.astype(d), device=device), h.astype(d)
        k = gp.asarray([1, 0, 1], device=device)
        assert_close(y[:, k], hy[:, [1, 0, 1]])
        y[0, k] = gp.asarray(hy[1, [1, 0, 1]], device=device)
        hy[0, [1, 0, 1]] = hy[1, [1, 0, 1]]
        assert_close(y, hy)


def test_views_and_zero_d(device):
    need(device, *ADV)
    x, h = _x(device, (3, 4))
    v = x[1:, ::2]
    v[0] = 99
    h[1:, ::2][0] = 99
    assert_close(x, h)
    v[gp.asarray([1], device=device)] = 7          # scatter into a strided view
    h[1:, ::2][[1]] = 7
    assert_close(x, h)
    z = gp.asarray(5.0, device=device)
    assert z[()].shape == () and z[...].shape == () and z[None].shape == (1,)
    z[()] = 3
    assert float(z) == 3.0
    z[...] = gp.asarray(4.0, device=device)
    assert float(z) == 4.0
    assert x[1, 2].shape == ()
    x[0, :] = x[2, :]  # overlapping source and destination
    h[0, :] = h[2, :]
    assert_close(x, h)
    x[gp.asarray([0, 1], device=device)] = x[1:3]
    h[[0, 1]] = h[1:3]
    assert_close(x, h)


def test_setitem_casting(device):
    need(device, *ADV)
    x, h = _x(device, (2, 3), np.float32)
    x[0] = gp.asarray([1, 2, 3], dtype=gp.int8, device=device)  # int8 -> float32 is safe
    x[1, 1] = True
    h[0] = [1, 2, 3]
    h[1, 1] = 1
    assert_close(x, h)
    i = gp.zeros((2,), dtype=gp.int8, device=device)
    with pytest.raises(TypeError):
        i[0] = 1.5
    with pytest.raises(TypeError):
        i[0] = 1j
    with pytest.raises(TypeError):
        i[0] = gp.asarray([1.0], device=device)
    with pytest.raises(OverflowError):
        i[0] = 300
    with pytest.raises(TypeError):
        gp.zeros((2,), dtype=gp.bool, device=device)[0] = 1
    with pytest.raises(ValueError):
        x[0] = gp.zeros((2,), device=device, dtype=gp.float32)
    with pytest.raises(ValueError):
        x[gp.asarray([0, 1], device=device)] = gp.zeros((3, 3), device=device, dtype=gp.float32)


def test_errors(device):
    need(device, *ADV)
    x, _ = _x(device, (2, 3))
    with pytest.raises(TypeError):
        x[1.0]
    with pytest.raises(TypeError):
        x["a"]
    with pytest.raises(IndexError, match="axis 1 with size 3"):
        x[0, 3]
    with pytest.raises(IndexError, match="axis 0 with size 2"):
        x[-3]
    with pytest.raises(IndexError, match="axis 1 with size 3"):
        x[:, gp.asarray([0, 5], device=device)]
    with pytest.raises(IndexError, match="axis 0 with size 2"):
        x[gp.asarray([-3], device=device)] = 1
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(IndexError):
        x[..., 0, ...]
    with pytest.raises(IndexError):
        x[gp.asarray([True, False, True], device=device)]
    with pytest.raises(IndexError):
        x[gp.zeros((2, 3, 1), dtype=gp.bool, device=device)]
    with pytest.raises(IndexError):
        x[gp.asarray([0.0], device=device)]
    with pytest.raises(IndexError):
        x[gp.asarray([0, 1], device=device), gp.asarray([0, 1, 2], device=device)]
    with pytest.raises(TypeError):
        x[0] = "a"


def test_zero_sized_mask_dims(device):
    need(device, *ADV)
    x, h = _x(device, (2, 3))
    out = x[gp.zeros((0, 3), dtype=gp.bool, device=device)]
    assert out.shape == (0,)
    assert x[gp.zeros((2, 0), dtype=gp.bool, device=device)].shape == (0,)
    e, he = _x(device, (0, 3))
    assert_close(e[gp.asarray([], dtype=gp.int64, device=device)], he[[]])


@fixture_ok
@given(shape=shapes.filter(lambda s: len(s) > 0 and min(s) > 0), data=st.data())
def test_take_random(device, shape, data):
    need(device, *ADV)
    x, h = _x(device, shape, np.float32)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    idx = data.draw(st.lists(st.integers(-n, n - 1), min_size=0, max_size=5))
    i = gp.asarray(idx, dtype=gp.int32, device=device)
    assert_close(gp.take(x, i, axis=axis), np.take(h, np.asarray(idx, dtype=np.int64), axis=axis))
    j = data.draw(st.lists(st.integers(-n, n - 1), min_size=n * int(np.prod(shape)) // n,
                           max_size=n * int(np.prod(shape)) // n))
    hj = np.asarray(j, dtype=np.int64).reshape(shape)
    assert_close(gp.take_along_axis(x, gp.asarray(hj, device=device), axis=axis),
                 np.take_along_axis(h, hj, axis=axis))


def test_take_errors_and_broadcast(device):
    need(device, *ADV)
    x, h = _x(device, (3, 4))
    assert_close(gp.take(x[0], gp.asarray([3, -4], device=device)), np.take(h[0], [3, -4]))
    # NumPy's axis=None on N-D x: the flattened array (tests/test_numpy_hunt4.py)
    assert_close(gp.take(x, gp.asarray([5], device=device)), np.take(h, [5]))
    with pytest.raises(TypeError):
        gp.take(x, gp.asarray([0.0], device=device), axis=0)
    with pytest.raises(IndexError):
        gp.take(x, gp.asarray([4], device=device), axis=1)
    with pytest.raises(IndexError):
        gp.take(x, gp.asarray([0], device=device), axis=2)
    hi = np.asarray([[0, 3]])  # broadcasts along axis 0
    assert_close(gp.take_along_axis(x, gp.asarray(hi, device=device), axis=1),
                 np.take_along_axis(h, np.broadcast_to(hi, (3, 2)), axis=1))
    with pytest.raises(ValueError):
        gp.take_along_axis(x, gp.asarray([0], device=device), axis=0)


def test_writing_a_broadcast_view_raises_and_keeps_the_base(device):
    # numpy's broadcast_to is read-only; on Vulkan a write landed on the base array (every row of
    # the view at once) and ``+=`` added once per row into the same elements
    h = np.array([1.0, 2.0])
    a = gp.asarray(h, device=device)
    b = gp.broadcast_to(a, (3, 2))
    writes = [lambda: b.__setitem__((0, 0), 5.0), lambda: b.__iadd__(1.0),
              lambda: b[1:].__setitem__(..., 3.0), lambda: b.__setitem__(gp.asarray([0], device=device), 2.0)]
    for w in writes:
        with pytest.raises(ValueError, match=r"(__setitem__|add \(in place\)): .*broadcast view"):
            w()
    assert_close(a, h)
    assert_close(b, np.broadcast_to(h, (3, 2)))
    c = gp.asarray(b, copy=True)   # a copy is writable
    c[0, 0] = 5.0
    assert_close(c, [[5.0, 2.0], [1.0, 2.0], [1.0, 2.0]])
