"""complex64/complex128 beyond elementwise ops: storage, creation, casts, reductions, matmul,
indexing, sets, fft and linalg, on every device (Vulkan above all) against numpy."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import grilly as gp
from grilly.array.core import wrap
from grilly.testing import assert_close

CPLX = ["complex64", "complex128"]
REAL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64"]
INF, NAN = np.inf, np.nan
SPECIAL = [complex(a, b) for a in (0.0, -0.0, 1.5, -2.0, INF, -INF, NAN)
           for b in (0.0, -0.0, -1.0, INF, NAN)]
TOL = {"complex64": 1e-5, "complex128": 1e-12}


def _cdata(dtype: str, shape, rng, unit: bool = False) -> np.ndarray:
    z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    if unit:  # products of many factors neither overflow nor underflow
        z = z / np.abs(z)
    return z.astype(dtype)


def _vk(device, x: np.ndarray):
    return gp.asarray(x, device=device)


def _cast_kernel(x, dtype: str):
    """The backend's astype kernel (the array layer refuses complex -> real; reductions and
    nonzero use the kernel's complex -> bool, and it must match numpy's)."""
    d = getattr(gp, dtype)
    return wrap(x.device.kernels["astype"](x._buf, d), d, x.device)


# ---- dtypes, storage, creation --------------------------------------------------------------
def test_dtypes_reported(device):
    names = gp.__array_namespace_info__().dtypes(device=device)
    assert "complex64" in names
    assert ("complex128" in names) == ("float64" in names)
    assert set(gp.__array_namespace_info__().dtypes(device=device, kind="complex floating")) \
        == {"complex64", "complex128"} & set(names)


@pytest.mark.parametrize("dtype", CPLX)
def test_round_trip(device, dtype):
    x = np.array(SPECIAL, dtype).reshape(5, 7)
    a = _vk(device, x)
    assert a.dtype == getattr(gp, dtype) and a.device == device
    np.testing.assert_array_equal(np.asarray(a), x)
    np.testing.assert_array_equal(np.signbit(np.asarray(a).real), np.signbit(x.real))
    np.testing.assert_array_equal(np.signbit(np.asarray(a).imag), np.signbit(x.imag))
    np.testing.assert_array_equal(np.from_dlpack(a), x)
    np.testing.assert_array_equal(np.asarray(a[1:4, ::-2]), x[1:4, ::-2])
    np.testing.assert_array_equal(np.asarray(gp.matrix_transpose(a)), x.T)
    np.testing.assert_array_equal(np.asarray(a.to_device(gp.backends.registry.device("cpu"))), x)
    assert complex(a[0, 2]) == x[0, 2]


def test_python_scalars(device):
    a = gp.asarray(1 - 2j, device=device)
    assert a.dtype == gp.complex128 and complex(a) == 1 - 2j
    b = gp.asarray([1 + 2j, 3, -0.5j], device=device)
    assert_close(b, np.array([1 + 2j, 3, -0.5j]))
    c = gp.asarray([1j, 2], dtype=gp.complex64, device=device)
    assert_close(c, np.array([1j, 2], np.complex64))


@pytest.mark.parametrize("dtype", CPLX)
def test_creation(device, dtype):
    d = getattr(gp, dtype)
    assert_close(gp.zeros((2, 3), dtype=d, device=device), np.zeros((2, 3), dtype))
    assert_close(gp.ones((4,), dtype=d, device=device), np.ones(4, dtype))
    assert_close(gp.full((2, 2), 1.5 - 2j, dtype=d, device=device), np.full((2, 2), 1.5 - 2j, dtype))
    assert_close(gp.full((3,), 2, dtype=d, device=device), np.full(3, 2, dtype))
    assert gp.empty((3, 0), dtype=d, device=device).shape == (3, 0)
    for endpoint in (True, False):
        assert_close(gp.linspace(1 + 1j, -2 - 3j, 7, dtype=d, device=device, endpoint=endpoint),
                     np.linspace(1 + 1j, -2 - 3j, 7, endpoint=endpoint).astype(dtype))
    assert_close(gp.linspace(0, 1, 5, dtype=d, device=device), np.linspace(0, 1, 5).astype(dtype))
    assert_close(gp.eye(3, 4, k=1, dtype=d, device=device), np.eye(3, 4, 1, dtype=dtype))
    assert_close(gp.arange(0, 2, 0.5, dtype=d, device=device), np.arange(0, 2, 0.5).astype(dtype))
    x = _vk(device, np.array([1j, 2], dtype))
    assert_close(gp.zeros_like(x), np.zeros(2, dtype))
    assert_close(gp.full_like(x, 3j), np.full(2, 3j, dtype))
    with pytest.raises(TypeError):
        gp.full((2,), 1j, dtype=gp.float32, device=device)


def test_default_complex_linspace(device):
    assert_close(gp.linspace(0, 1j, 3, device=device), np.linspace(0, 1j, 3))


# ---- casts ----------------------------------------------------------------------------------
def _real_source(dtype: str) -> np.ndarray:
    d = np.dtype(dtype)
    if d.kind == "b":
        return np.array([True, False, True])
    if d.kind in "iu":
        info = np.iinfo(d)
        return np.array([0, 1, 7, info.max, info.min], d)
    return np.array([0.0, -0.0, 1.25, -3.5, INF, -INF, NAN, 6e4 if d.itemsize == 2 else 1e30], d)


@pytest.mark.parametrize("src", REAL)
@pytest.mark.parametrize("dst", CPLX)
def test_cast_real_to_complex(device, src, dst):
    x = _real_source(src)
    a = gp.astype(_vk(device, x), getattr(gp, dst))
    e = x.astype(dst)
    assert_close(a, e, rtol=0)
    np.testing.assert_array_equal(np.signbit(np.asarray(a).real), np.signbit(e.real))
    assert not np.signbit(np.asarray(a).imag).any()


@pytest.mark.parametrize("src", CPLX)
@pytest.mark.parametrize("dst", CPLX)
def test_cast_complex_to_complex(device, src, dst):
    x = np.array(SPECIAL + [1e-30 + 3e30j, 0.1 + 0.7j], src)
    a = gp.astype(_vk(device, x), getattr(gp, dst))
    e = x.astype(dst)
    assert_close(a, e, rtol=0)
    np.testing.assert_array_equal(np.signbit(np.asarray(a).imag), np.signbit(e.imag))


@pytest.mark.parametrize("src", CPLX)
@pytest.mark.parametrize("dst", REAL)
def test_cast_complex_to_real_kernel(device, src, dst):
    # the public astype refuses; the kernel takes the real part (bool: either part nonzero)
    with pytest.raises(TypeError, match="astype"):
        gp.astype(_vk(device, np.array([1j], src)), getattr(gp, dst))
    d = np.dtype(dst)
    if d.kind == "b":
        x = np.array(SPECIAL, src)
        e = x != 0
    elif d.kind in "iu":
        x = np.array([0, 1 + 5j, 7.9 - 2j, complex(100.2, INF), -0.0 - 1j], src)
        if d.kind == "i":
            x = np.concatenate([x, np.array([-5.5 + 1j], src)])
        e = x.real.astype(d)
    else:
        x = np.array(SPECIAL + [3.3 + 1j], src)
        e = x.real.astype(d)
    a = _cast_kernel(_vk(device, x), dst)
    assert_close(a, e, rtol=0)


@pytest.mark.parametrize("dtype", CPLX)
def test_assign_and_promotion(device, dtype):
    x = np.zeros((3, 4), dtype)
    a = _vk(device, x)
    a[1] = _vk(device, np.arange(4.0, dtype=np.float32))
    x[1] = np.arange(4.0, dtype=np.float32)
    a[:, 2] = 2 - 1j
    x[:, 2] = 2 - 1j
    a[2, ::2] = _vk(device, np.array([5j], dtype))
    x[2, ::2] = 5j
    assert_close(a, x)


# ---- reductions -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", CPLX)
@pytest.mark.parametrize("shape,axis", [((3, 300, 5), None), ((3, 300, 5), 1), ((3, 300, 5), (0, 2)),
                                        ((3, 300, 5), -1), ((2, 40000), 1), ((7,), 0),
                                        ((4, 0), 1), ((4, 0), 0)])
def test_sum_prod(device, dtype, shape, axis):
    rng = np.random.default_rng(1)
    x = _cdata(dtype, shape, rng)
    a = _vk(device, x)
    tol = TOL[dtype] * (10 if dtype == "complex64" else 1)
    s = gp.sum(a, axis=axis)
    assert s.dtype == a.dtype
    assert_close(s, x.sum(axis=axis), rtol=tol, atol=tol * np.sqrt(max(x.size, 1)))
    assert_close(gp.sum(a, axis=axis, keepdims=True), x.sum(axis=axis, keepdims=True),
                 rtol=tol, atol=tol * np.sqrt(max(x.size, 1)))
    u = _cdata(dtype, shape, rng, unit=True)
    p = gp.prod(_vk(device, u), axis=axis)
    e = u.prod(axis=axis, dtype=np.complex128).astype(dtype)
    assert_close(p, e, rtol=0, atol=tol * 100 if dtype == "complex64" else 1e-10)


def test_sum_dtype_and_mixed(device):
    x = _cdata("complex64", (5, 6), np.random.default_rng(2))
    s = gp.sum(_vk(device, x), axis=0, dtype=gp.complex128)
    assert_close(s, x.astype(np.complex128).sum(axis=0), rtol=1e-6)
    assert_close(gp.sum(_vk(device, x.real.copy()), dtype=gp.complex64),
                 np.sum(x.real, dtype=np.complex64), rtol=1e-5)


@pytest.mark.parametrize("dtype", CPLX)
@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative(device, dtype, include_initial):
    rng = np.random.default_rng(3)
    x = _cdata(dtype, (4, 9, 3), rng)
    u = _cdata(dtype, (4, 9, 3), rng, unit=True)
    for ax in (0, 1, 2):
        assert_close(gp.cumulative_sum(_vk(device, x), axis=ax, include_initial=include_initial),
                     np.cumulative_sum(x, axis=ax, include_initial=include_initial),
                     rtol=TOL[dtype], atol=TOL[dtype] * 10)
        assert_close(gp.cumulative_prod(_vk(device, u), axis=ax, include_initial=include_initial),
                     np.cumulative_prod(u, axis=ax, include_initial=include_initial),
                     rtol=TOL[dtype], atol=TOL[dtype] * 10)


@pytest.mark.parametrize("dtype", CPLX)
def test_any_all_count_nonzero(device, dtype):
    x = np.array([[0j, -0.0 + 0j, 1j], [complex(NAN, 0), 0j, complex(0, -0.0)],
                  [2, 1j, complex(INF, 0)]], dtype)
    a = _vk(device, x)
    for axis in (None, 0, 1):
        assert_close(gp.any(a, axis=axis), np.any(x, axis=axis))
        assert_close(gp.all(a, axis=axis), np.all(x, axis=axis))
        assert_close(gp.count_nonzero(a, axis=axis), np.count_nonzero(x, axis=axis))
    for b in (_vk(device, np.zeros((2, 130), dtype)), _vk(device, np.full((2, 130), 1j, dtype))):
        h = np.asarray(b)
        assert_close(gp.any(b, axis=1), h.any(axis=1))
        assert_close(gp.all(b, axis=1), h.all(axis=1))


@pytest.mark.parametrize("dtype", CPLX)
def test_mean(device, dtype):
    x = _cdata(dtype, (6, 5), np.random.default_rng(4))
    assert_close(gp.mean(_vk(device, x), axis=0), x.mean(axis=0), rtol=TOL[dtype])


@pytest.mark.parametrize("op", [gp.max, gp.min, gp.argmax, gp.sort, gp.argsort])
def test_unordered_ops_refuse_complex(device, op):
    with pytest.raises(TypeError):
        op(_vk(device, np.array([1j, 2], np.complex64)))


# ---- matmul ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", CPLX)
@pytest.mark.parametrize("sa,sb", [((4, 5), (5, 3)), ((2, 1, 3, 4), (5, 4, 2)), ((6,), (6, 2)),
                                   ((3, 6), (6,)), ((2, 0), (0, 3)), ((70, 33), (33, 65))])
def test_matmul(device, dtype, sa, sb):
    rng = np.random.default_rng(5)
    x, y = _cdata(dtype, sa, rng), _cdata(dtype, sb, rng)
    r = gp.matmul(_vk(device, x), _vk(device, y))
    assert_close(r, x @ y, rtol=TOL[dtype], atol=TOL[dtype] * 10)


def test_matmul_strided_and_mixed(device):
    rng = np.random.default_rng(6)
    x, y = _cdata("complex128", (5, 4), rng), _cdata("complex64", (3, 5), rng)
    a, b = _vk(device, x), _vk(device, y)
    assert_close(gp.matrix_transpose(a) @ gp.matrix_transpose(b), x.T @ y.T.astype(np.complex128))
    f = rng.standard_normal((3, 4)).astype(np.float32)
    assert_close(_vk(device, f) @ gp.matrix_transpose(b[:, 1:]), f @ y[:, 1:].T, rtol=1e-5)


@pytest.mark.parametrize("dtype", CPLX)
def test_tensordot_vecdot(device, dtype):
    rng = np.random.default_rng(7)
    x, y = _cdata(dtype, (3, 4, 5), rng), _cdata(dtype, (4, 5, 2), rng)
    assert_close(gp.tensordot(_vk(device, x), _vk(device, y), axes=2),
                 np.tensordot(x, y, axes=2), rtol=TOL[dtype], atol=TOL[dtype] * 10)
    z = _cdata(dtype, (3, 4, 5), rng)
    assert_close(gp.vecdot(_vk(device, x), _vk(device, z)), np.vecdot(x, z),
                 rtol=TOL[dtype], atol=TOL[dtype] * 10)


# ---- indexing, searching, sets ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", CPLX)
def test_getitem(device, dtype):
    rng = np.random.default_rng(8)
    x = _cdata(dtype, (6, 5, 3), rng)
    a = _vk(device, x)
    i = np.array([5, 0, -1, 2, 2])
    j = np.array([[1, 4], [0, -2]])
    ii, jj = _vk(device, i), _vk(device, j)
    assert_close(a[ii], x[i], rtol=0)
    assert_close(a[:, jj], x[:, j], rtol=0)
    k = np.array([3, -5, 0])
    assert_close(a[_vk(device, k), _vk(device, k)], x[k, k], rtol=0)
    assert_close(a[:, ::2][ii], x[:, ::2][i], rtol=0)
    m = x.real > 0
    assert_close(a[_vk(device, m)], x[m], rtol=0)
    assert_close(a[_vk(device, m[:, :, 0])], x[m[:, :, 0]], rtol=0)
    assert_close(gp.take(a, _vk(device, np.array([2, 0])), axis=2), np.take(x, [2, 0], axis=2),
                 rtol=0)


@pytest.mark.parametrize("dtype", CPLX)
def test_setitem(device, dtype):
    rng = np.random.default_rng(9)
    x = _cdata(dtype, (6, 4), rng)
    a = _vk(device, x)
    i = np.array([1, 4, 1, -1])
    v = _cdata(dtype, (4, 4), rng)
    a[_vk(device, i)] = _vk(device, v)
    x[i] = v   # duplicates: the last one wins, as here
    m = x.imag < 0
    a[_vk(device, m)] = 3 - 7j
    x[m] = 3 - 7j
    a[:, _vk(device, np.array([0, 2]))] = _vk(device, np.array([1j, -1], dtype))
    x[:, [0, 2]] = np.array([1j, -1], dtype)
    assert_close(a, x, rtol=0)


@pytest.mark.parametrize("dtype", CPLX)
def test_nonzero(device, dtype):
    x = np.array([[0j, 1j, -0.0 + 0j], [complex(NAN, 0), 0, complex(0, -0.0)], [2, 0, 0]], dtype)
    for r, e in zip(gp.nonzero(_vk(device, x)), np.nonzero(x)):
        assert_close(r, e)


@pytest.mark.parametrize("dtype", CPLX)
def test_unique_isin(device, dtype):
    rng = np.random.default_rng(10)
    x = (rng.integers(-2, 3, 40) + 1j * rng.integers(-1, 2, 40)).astype(dtype).reshape(5, 8)
    r = gp.unique_all(_vk(device, x))
    v, idx, inv, cnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    assert_close(r.values, v, rtol=0)
    assert_close(r.indices, idx)
    assert_close(r.inverse_indices, inv.reshape(x.shape))
    assert_close(r.counts, cnt)
    y = np.array([0j, 1 + 1j, -2, 5j, 2 - 1j], dtype)
    assert_close(gp.isin(_vk(device, x), _vk(device, y)), np.isin(x, y))
    assert_close(gp.isin(_vk(device, x), _vk(device, y), invert=True), np.isin(x, y, invert=True))


@pytest.mark.parametrize("dtype", CPLX)
def test_unique_nan(device, dtype):
    # every NaN is its own value; order: by real part, then imaginary part, NaN last in each
    x = np.array([1j, complex(NAN, 0), 1, 1j, complex(0, NAN), complex(NAN, 0), -0.0], dtype)
    r = gp.unique_counts(_vk(device, x))
    e = np.array([0, 1j, complex(0, NAN), 1, complex(NAN, 0), complex(NAN, 0)], dtype)
    np.testing.assert_array_equal(np.asarray(r.values), e)
    assert_close(r.counts, np.array([1, 2, 1, 1, 1, 1]))
    assert_close(gp.isin(_vk(device, x), _vk(device, np.array([complex(NAN, 0), 1], dtype))),
                 np.array([False, False, True, False, False, False, False]))


# ---- fft (device kernels) and linalg (host round trips) ---------------------------------------
@pytest.mark.parametrize("dtype", CPLX)
def test_fft(device, dtype):
    rng = np.random.default_rng(11)
    x = _cdata(dtype, (6, 8), rng)
    a = _vk(device, x)
    tol = dict(rtol=TOL[dtype], atol=TOL[dtype] * 10)
    for f in ("fft", "ifft", "fftn", "ifftn"):
        r = getattr(gp.fft, f)(a)
        assert r.device == device and r.dtype == a.dtype
        assert_close(r, getattr(np.fft, f)(x).astype(dtype), **tol)
    assert_close(gp.fft.fft(a, n=5, axis=0), np.fft.fft(x, n=5, axis=0).astype(dtype), **tol)
    rdt = "float32" if dtype == "complex64" else "float64"
    assert_close(gp.fft.irfft(a), np.fft.irfft(x).astype(rdt), **tol)
    assert_close(gp.fft.hfft(a), np.fft.hfft(x).astype(rdt), **tol)
    h = x.real.astype(rdt)
    assert_close(gp.fft.rfft(_vk(device, h)), np.fft.rfft(h).astype(dtype), **tol)
    back = gp.fft.ifft(gp.fft.fft(a))
    assert_close(back, x, **tol)


@pytest.mark.parametrize("dtype", CPLX)
def test_linalg(device, dtype):
    rng = np.random.default_rng(12)
    m = _cdata(dtype, (2, 4, 4), rng) + 4 * np.eye(4, dtype=dtype)
    b = _cdata(dtype, (2, 4, 2), rng)
    a = _vk(device, m)
    tol = dict(rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
    assert_close(gp.linalg.inv(a), np.linalg.inv(m), **tol)
    assert_close(gp.linalg.solve(a, _vk(device, b)), np.linalg.solve(m, b), **tol)
    assert_close(gp.linalg.det(a), np.linalg.det(m), **tol)
    w = gp.linalg.eigvals(a)
    assert w.device == device and w.dtype == a.dtype
    np.testing.assert_allclose(np.sort_complex(np.asarray(w).ravel()),
                               np.sort_complex(np.linalg.eigvals(m).ravel()), **tol)
    assert_close(gp.linalg.svdvals(a), np.linalg.svd(m, compute_uv=False), **tol)
    r = _vk(device, rng.standard_normal((3, 3)).astype(np.float32))
    e = gp.linalg.eigvals(r)
    assert e.dtype == gp.complex64 and e.device == device


# ---- properties -------------------------------------------------------------------------------
_finite = st.complex_numbers(max_magnitude=1e3, allow_nan=False, allow_infinity=False)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(x=hnp.arrays(np.complex128, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                    elements=_finite), data=st.data())
def test_property_sum_gather(device, x, data):
    a = _vk(device, x)
    np.testing.assert_array_equal(np.asarray(a), x)
    ax = data.draw(st.integers(0, x.ndim - 1))
    assert_close(gp.sum(a, axis=ax), x.sum(axis=ax), rtol=1e-12, atol=1e-9)
    i = np.array(data.draw(st.lists(st.integers(-x.shape[0], x.shape[0] - 1), max_size=5)),
                 np.int64)
    assert_close(a[_vk(device, i)], x[i], rtol=0)
    assert_close(gp.astype(a, gp.complex64), x.astype(np.complex64), rtol=0)
