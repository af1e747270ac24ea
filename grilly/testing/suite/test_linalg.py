"""matmul and the linalg extension (decompositions checked by numpy or by reconstruction), and
the fft extension."""
from __future__ import annotations

import numpy as np
import pytest

import grilly as gp
from grilly.testing import assert_close, on, rtol_for

K = pytest.mark.kernels
_RNG = np.random.default_rng(1234)


def _mat(shape, dtype) -> np.ndarray:
    a = _RNG.standard_normal(shape)
    d = np.dtype(dtype)
    if d.kind == "c":
        a = a + 1j * _RNG.standard_normal(shape)
    return np.round(a * 4).astype(d) if d.kind in "iu" else a.astype(d)


def _wide(a: np.ndarray) -> np.ndarray:
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


@K("matmul")
@pytest.mark.parametrize("sa, sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((1, 3, 4), (2, 4, 5)),
                                    ((4,), (4, 3)), ((3, 4), (4,)), ((2, 0), (0, 3))])
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "float16", "float32", "float64",
                                   "complex64", "complex128"])
def test_matmul(device, dtype, sa, sb):
    a, b = _mat(sa, dtype), _mat(sb, dtype)
    if a.dtype.kind == "u":
        a, b = a % 4, b % 4
    want = np.matmul(_wide(a), _wide(b)).astype(dtype) if a.dtype.kind in "fc" else np.matmul(a, b)
    tol = {"float16": 5e-3, "float32": 1e-5, "complex64": 1e-5}.get(dtype, 1e-12)
    assert_close(on(device, a) @ on(device, b), want, rtol=tol, atol=tol)


@K("matmul", "permute", "reshape", family="linalg")
def test_tensordot_vecdot(device):
    a, b = _mat((2, 3, 4), "float64"), _mat((3, 4, 5), "float64")
    assert_close(gp.tensordot(on(device, a), on(device, b), axes=2), np.tensordot(a, b, axes=2))
    u, v = _mat((3, 4), "complex128"), _mat((4,), "complex128")
    assert_close(gp.vecdot(on(device, u), on(device, v)), np.sum(np.conj(u) * v, axis=-1))


@K("cross")
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_cross(device, dtype):
    a, b = _mat((2, 3), dtype), _mat((3,), dtype)
    assert_close(gp.linalg.cross(on(device, a), on(device, b)), np.cross(a, b), rtol=rtol_for(dtype))


@K("diagonal", "sum")
@pytest.mark.parametrize("offset", [0, 1, -2])
def test_diagonal_trace(device, offset):
    a = _mat((2, 4, 4), "float64")
    assert_close(gp.linalg.diagonal(on(device, a), offset=offset), np.diagonal(a, offset, -2, -1))
    assert_close(gp.linalg.trace(on(device, a), offset=offset), np.trace(a, offset, -2, -1))


def _spd(n, dtype) -> np.ndarray:
    a = _mat((2, n, n), dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


_FL = ["float32", "float64", "complex128"]


def _tol(dtype) -> float:
    return 1e-4 if dtype in ("float32", "complex64") else 1e-9


@K("inv")
@pytest.mark.parametrize("dtype", _FL)
def test_inv(device, dtype):
    a = _spd(3, dtype)
    assert_close(gp.linalg.inv(on(device, a)), np.linalg.inv(_wide(a)).astype(dtype), rtol=_tol(dtype))


@K("det", "slogdet")
@pytest.mark.parametrize("dtype", _FL)
def test_det_slogdet(device, dtype):
    a = _spd(3, dtype)
    assert_close(gp.linalg.det(on(device, a)), np.linalg.det(_wide(a)).astype(dtype), rtol=_tol(dtype))
    s, ld = gp.linalg.slogdet(on(device, a))
    ws, wld = np.linalg.slogdet(_wide(a))
    assert_close(s, ws.astype(dtype), rtol=_tol(dtype))
    assert_close(ld, wld.astype(np.asarray(ld).dtype), rtol=_tol(dtype))


@K("solve")
@pytest.mark.parametrize("dtype", _FL)
def test_solve(device, dtype):
    a, b = _spd(3, dtype), _mat((3, 2), dtype)
    assert_close(gp.linalg.solve(on(device, a), on(device, b)),
                 np.linalg.solve(_wide(a), _wide(b)).astype(dtype), rtol=_tol(dtype), atol=_tol(dtype))


@K("cholesky")
@pytest.mark.parametrize("dtype", _FL)
def test_cholesky(device, dtype):
    a = _spd(4, dtype)
    assert_close(gp.linalg.cholesky(on(device, a)), np.linalg.cholesky(_wide(a)).astype(dtype),
                 rtol=_tol(dtype), atol=_tol(dtype))


@K("qr")
@pytest.mark.parametrize("mode", ["reduced", "complete"])
@pytest.mark.parametrize("dtype", _FL)
def test_qr(device, dtype, mode):
    a = _mat((5, 3), dtype)
    q, r = (np.asarray(t) for t in gp.linalg.qr(on(device, a), mode=mode))
    assert q.shape == ((5, 3) if mode == "reduced" else (5, 5)) and q.dtype == a.dtype
    np.testing.assert_allclose(q @ r, a, rtol=_tol(dtype), atol=_tol(dtype))
    np.testing.assert_allclose(np.conj(q.T) @ q, np.eye(q.shape[1]), atol=_tol(dtype))
    assert np.allclose(np.tril(r, -1), 0)


@K("svd", "svdvals")
@pytest.mark.parametrize("dtype", _FL)
def test_svd(device, dtype):
    a = _mat((2, 4, 3), dtype)
    u, s, vh = (np.asarray(t) for t in gp.linalg.svd(on(device, a), full_matrices=False))
    real = np.float32 if dtype in ("float32", "complex64") else np.float64
    want = np.linalg.svd(_wide(a), compute_uv=False).astype(real)
    assert_close(s, want, rtol=_tol(dtype))
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, rtol=_tol(dtype), atol=_tol(dtype))
    assert_close(gp.linalg.svdvals(on(device, a)), want, rtol=_tol(dtype))


@K("eigh", "eigvalsh")
@pytest.mark.parametrize("dtype", _FL)
def test_eigh(device, dtype):
    a = _spd(3, dtype)
    w, v = (np.asarray(t) for t in gp.linalg.eigh(on(device, a)))
    real = np.float32 if dtype in ("float32", "complex64") else np.float64
    assert_close(w, np.linalg.eigvalsh(_wide(a)).astype(real), rtol=_tol(dtype))
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=_tol(dtype), atol=_tol(dtype) * 10)
    assert_close(gp.linalg.eigvalsh(on(device, a)), np.linalg.eigvalsh(_wide(a)).astype(real),
                 rtol=_tol(dtype))


@K("eig", "eigvals")
def test_eig(device):
    a = _mat((3, 3), "float64")
    w, v = (np.asarray(t) for t in gp.linalg.eig(on(device, a)))
    np.testing.assert_allclose(a @ v, v * w[None, :], atol=1e-9)
    np.testing.assert_allclose(np.sort_complex(np.asarray(gp.linalg.eigvals(on(device, a)))),
                               np.sort_complex(np.linalg.eigvals(a)), rtol=1e-9)


@K("pinv", "matrix_rank")
def test_pinv_rank(device):
    a = _mat((4, 3), "float64")
    a[:, 2] = a[:, 0] + a[:, 1]
    assert_close(gp.linalg.pinv(on(device, a)), np.linalg.pinv(a), rtol=1e-9, atol=1e-12)
    assert_close(gp.linalg.matrix_rank(on(device, a)), np.int64(2))


@K("fft_c2c")
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_fft(device, dtype, norm):
    a = _mat((3, 8), dtype)
    tol = 1e-5 if dtype == "complex64" else 1e-12
    assert_close(gp.fft.fft(on(device, a), norm=norm), np.fft.fft(_wide(a), norm=norm).astype(dtype),
                 rtol=tol, atol=tol)
    assert_close(gp.fft.ifftn(on(device, a), norm=norm), np.fft.ifftn(_wide(a), norm=norm).astype(dtype),
                 rtol=tol, atol=tol)
    assert_close(gp.fft.fft(on(device, a), n=5), np.fft.fft(_wide(a), n=5).astype(dtype), rtol=tol, atol=tol)


@K("fft_r2c", "fft_c2r")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rfft(device, dtype):
    a = _mat((2, 10), dtype)
    c = "complex64" if dtype == "float32" else "complex128"
    tol = 1e-5 if dtype == "float32" else 1e-12
    spec = np.fft.rfft(_wide(a))
    assert_close(gp.fft.rfft(on(device, a)), spec.astype(c), rtol=tol, atol=tol)
    assert_close(gp.fft.irfft(on(device, spec.astype(c)), n=10), np.fft.irfft(spec, n=10).astype(dtype),
                 rtol=tol, atol=tol)


@K("fft_roll")
def test_fftshift(device):
    a = np.arange(15.0).reshape(3, 5)
    assert_close(gp.fft.fftshift(on(device, a)), np.fft.fftshift(a))
    assert_close(gp.fft.ifftshift(on(device, a), axes=1), np.fft.ifftshift(a, axes=1))
    assert_close(gp.fft.fftfreq(6, d=0.5, device=device), np.fft.fftfreq(6, d=0.5))
