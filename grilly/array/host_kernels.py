"""The NumPy/SciPy implementations of the host-path ops (grilly.array.host.HOST_OPS): the linalg
decompositions and the FFTs, on host numpy arrays. ``host_call`` runs them for a device whose
backend has no kernel of that name; they follow the kernels' calls (docs/kernels/linalg.md).

Decompositions call NumPy's batched ``np.linalg`` (LAPACK, looping over the batch in C with the
GIL released); float16 computes in float32 and casts back; NumPy's LinAlgError keeps its class
with the op named in the message. FFTs call scipy.fft, which keeps single precision
(float32/complex64 in, complex64/float32 out)."""
from __future__ import annotations

import math

import numpy as np

_REAL = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}


def _real(d: np.dtype) -> np.dtype:
    return _REAL.get(d, d)


def _complex(d: np.dtype) -> np.dtype:
    return np.dtype(np.complex64) if d in (np.float32, np.complex64) else np.dtype(np.complex128)


def _stack(x: np.ndarray) -> np.ndarray:
    """``x`` as a C-contiguous (B, M, N) stack."""
    # an explicit batch count, since -1 is ambiguous when a matrix dimension is 0
    return np.ascontiguousarray(x).reshape((math.prod(x.shape[:-2]),) + x.shape[-2:])


def _batches(a_batch: tuple, b_batch: tuple, batch: tuple):
    """Flat matrix indices of ``a`` and ``b`` for each output matrix of the broadcast batch."""
    def idx(s):
        n = math.prod(s)
        return np.ascontiguousarray(np.broadcast_to(
            np.arange(n, dtype=np.int64).reshape((1,) * (len(batch) - len(s)) + s), batch).reshape(-1))
    return idx(a_batch), idx(b_batch)


def _msg(e: Exception) -> str:
    """NumPy's LinAlgError text as the tail of grilly's ("inv: singular matrix")."""
    t = str(e)
    return t[:1].lower() + t[1:]


def _lapack(op: str, fn, x: np.ndarray, outs: list, *extra):
    """Run ``fn(stack, *extra, *out_stacks)`` with outs given as (batch-relative shape, dtype);
    returns the outputs shaped batch + shape."""
    batch = x.shape[:-2]
    half = x.dtype == np.float16
    a = _stack(x.astype(np.float32) if half else x)
    res = [np.empty(batch + tuple(s), np.dtype(np.float32) if half and d == np.float16 else d)
           for s, d in outs]
    if a.shape[0] and a.size:
        try:
            fn(a, *extra, *[r.reshape((-1,) + tuple(s)) for r, (s, _) in zip(res, outs)])
        except np.linalg.LinAlgError as e:
            raise np.linalg.LinAlgError(f"{op}: {_msg(e)}") from None
    if half:
        res = [r.astype(np.float16) if d == np.float16 else r for r, (_, d) in zip(res, outs)]
    return res


def _cholesky(a, out):
    out[...] = np.linalg.cholesky(a)


def _inv(a, out):
    out[...] = np.linalg.inv(a)


def _det(a, out):
    out[...] = np.linalg.det(a)


def _slogdet(a, sign, logabs):
    sign[...], logabs[...] = np.linalg.slogdet(a)


def _eig(a, w, v):
    w[...], v[...] = np.linalg.eig(a)


def _eigvals(a, w):
    w[...] = np.linalg.eigvals(a)


def _eigh(a, w, v):
    w[...], v[...] = np.linalg.eigh(a)


def _eigvalsh(a, w):
    w[...] = np.linalg.eigvalsh(a)


def _svd(a, full, u, s, vh):
    u[...], s[...], vh[...] = np.linalg.svd(a, full_matrices=full)


def _svdvals(a, s):
    s[...] = np.linalg.svd(a, compute_uv=False)


def _qr(a, q, r):
    q[...], r[...] = np.linalg.qr(a)


def _pinv(a, rtol, out):
    out[...] = np.linalg.pinv(a, rcond=rtol)


def _rank(a, rtol, out):
    s = np.linalg.svd(a, compute_uv=False)
    out[...] = np.count_nonzero(s > s.max(axis=-1, keepdims=True) * rtol[:, None], axis=-1)


def cholesky(buf: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor of each (M, M) Hermitian positive-definite matrix."""
    n = buf.shape[-1]
    (out,) = _lapack("cholesky", _cholesky, buf, [((n, n), buf.dtype)])
    return out


def inv(buf: np.ndarray) -> np.ndarray:
    """Inverse of each (M, M) matrix; LinAlgError when singular."""
    n = buf.shape[-1]
    (out,) = _lapack("inv", _inv, buf, [((n, n), buf.dtype)])
    return out


def det(buf: np.ndarray) -> np.ndarray:
    """Determinant of each (M, M) matrix, shape (...)."""
    if buf.shape[-1] == 0:
        return np.ones(buf.shape[:-2], buf.dtype)
    (out,) = _lapack("det", _det, buf, [((), buf.dtype)])
    return out


def slogdet(buf: np.ndarray) -> tuple:
    """(sign, log|det|) of each (M, M) matrix; sign has buf's dtype, log|det| the real dtype."""
    if buf.shape[-1] == 0:
        return np.ones(buf.shape[:-2], buf.dtype), np.zeros(buf.shape[:-2], _real(buf.dtype))
    return tuple(_lapack("slogdet", _slogdet, buf, [((), buf.dtype), ((), _real(buf.dtype))]))


def solve(out_shape: tuple, out_dtype, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve A X = B for (..., M, M) A and (..., M, K) B with broadcast batches."""
    out = np.empty(tuple(out_shape), out_dtype.np)
    if out.size == 0:
        return out
    half = a.dtype == np.float16
    if half:
        a, b = a.astype(np.float32), b.astype(np.float32)
    ia, ib = _batches(tuple(a.shape[:-2]), tuple(b.shape[:-2]), tuple(out_shape[:-2]))
    try:
        res = np.linalg.solve(_stack(a)[ia], _stack(b)[ib])
    except np.linalg.LinAlgError as e:
        raise np.linalg.LinAlgError(f"solve: {_msg(e)}") from None
    out[...] = res.reshape(out.shape)
    return out


def eig(buf: np.ndarray) -> tuple:
    """(eigenvalues (..., M), eigenvectors (..., M, M)), both complex, of general matrices."""
    n = buf.shape[-1]
    c = _complex(buf.dtype)
    return tuple(_lapack("eig", _eig, buf.astype(c, copy=False), [((n,), c), ((n, n), c)]))


def eigvals(buf: np.ndarray) -> np.ndarray:
    """Complex eigenvalues (..., M) of general matrices."""
    c = _complex(buf.dtype)
    (w,) = _lapack("eigvals", _eigvals, buf.astype(c, copy=False), [((buf.shape[-1],), c)])
    return w


def eigh(buf: np.ndarray) -> tuple:
    """(eigenvalues ascending, real (..., M); eigenvectors (..., M, M)) of Hermitian matrices."""
    n = buf.shape[-1]
    return tuple(_lapack("eigh", _eigh, buf, [((n,), _real(buf.dtype)), ((n, n), buf.dtype)]))


def eigvalsh(buf: np.ndarray) -> np.ndarray:
    """Real eigenvalues (..., M), ascending, of Hermitian matrices."""
    (w,) = _lapack("eigvalsh", _eigvalsh, buf, [((buf.shape[-1],), _real(buf.dtype))])
    return w


def svd(buf: np.ndarray, full_matrices: bool) -> tuple:
    """(U, S, Vh) of each (M, N) matrix; S real, descending."""
    m, n = buf.shape[-2:]
    k = min(m, n)
    um, vn = (m, n) if full_matrices else (k, k)
    if k == 0:  # LAPACK wants at least one row and column: the factors are identities
        u = np.broadcast_to(np.eye(m, um, dtype=buf.dtype), buf.shape[:-2] + (m, um)).copy()
        vh = np.broadcast_to(np.eye(vn, n, dtype=buf.dtype), buf.shape[:-2] + (vn, n)).copy()
        return u, np.empty(buf.shape[:-2] + (0,), _real(buf.dtype)), vh
    return tuple(_lapack("svd", _svd, buf, [((m, um), buf.dtype), ((k,), _real(buf.dtype)),
                                            ((vn, n), buf.dtype)], bool(full_matrices)))


def svdvals(buf: np.ndarray) -> np.ndarray:
    """Singular values (..., K), descending."""
    k = min(buf.shape[-2:])
    if k == 0:
        return np.empty(buf.shape[:-2] + (0,), _real(buf.dtype))
    (s,) = _lapack("svdvals", _svdvals, buf, [((k,), _real(buf.dtype))])
    return s


def qr(buf: np.ndarray, mode: str) -> tuple:
    """(Q, R) with mode 'reduced' ((M, K), (K, N)) or 'complete' ((M, M), (M, N))."""
    m, n = buf.shape[-2:]
    if mode == "complete" and m > n:
        # Householder QR of [A | I] does A's columns first: its Q is A's complete Q
        eye = np.broadcast_to(np.eye(m, dtype=buf.dtype), buf.shape[:-2] + (m, m))
        q, r = qr(np.concatenate([buf, eye], axis=-1), "reduced")
        return q, np.ascontiguousarray(r[..., :, :n])
    k = min(m, n)
    if k == 0:
        return (np.broadcast_to(np.eye(m, k, dtype=buf.dtype), buf.shape[:-2] + (m, k)).copy(),
                np.zeros(buf.shape[:-2] + (k, n), buf.dtype))
    return tuple(_lapack("qr", _qr, buf, [((m, k), buf.dtype), ((k, n), buf.dtype)]))


def _rtol_stack(rtol, batch: tuple) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(np.asarray(rtol, np.float64), batch)).reshape(-1)


def pinv(buf: np.ndarray, rtol) -> np.ndarray:
    """Moore-Penrose pseudo-inverse (..., N, M); singular values <= rtol * largest are cut
    (rtol broadcastable to the batch shape)."""
    m, n = buf.shape[-2:]
    if m == 0 or n == 0:
        return np.zeros(buf.shape[:-2] + (n, m), buf.dtype)
    (out,) = _lapack("pinv", _pinv, buf, [((n, m), buf.dtype)], _rtol_stack(rtol, buf.shape[:-2]))
    return out


def matrix_rank(buf: np.ndarray, rtol) -> np.ndarray:
    """Number of singular values > rtol * largest, as int64 (...)."""
    if min(buf.shape[-2:]) == 0:
        return np.zeros(buf.shape[:-2], np.int64)
    (out,) = _lapack("matrix_rank", _rank, buf, [((), np.dtype(np.int64))],
                     _rtol_stack(rtol, buf.shape[:-2]))
    return out


# ---- FFTs: scipy.fft (importing it costs ~0.4 s: paid on the first transform) --------------
def _prep(buf: np.ndarray) -> np.ndarray:
    # scipy has no half-precision transform
    return buf.astype(np.float32) if buf.dtype == np.float16 else buf


def fft_c2c(buf: np.ndarray, s: tuple, axes: tuple, norm: str, inverse: bool) -> np.ndarray:
    """Complex n-D (inverse) DFT over ``axes``, each cropped/zero-padded to ``s``."""
    import scipy.fft

    f = scipy.fft.ifftn if inverse else scipy.fft.fftn
    return np.ascontiguousarray(f(_prep(buf), s=s, axes=axes, norm=norm, workers=-1))


def fft_r2c(buf: np.ndarray, s: tuple, axes: tuple, norm: str) -> np.ndarray:
    """Real-input n-D DFT; the last of ``axes`` keeps s[-1] // 2 + 1 frequencies."""
    import scipy.fft

    return np.ascontiguousarray(scipy.fft.rfftn(_prep(buf), s=s, axes=axes, norm=norm, workers=-1))


def fft_c2r(buf: np.ndarray, s: tuple, axes: tuple, norm: str) -> np.ndarray:
    """Inverse of fft_r2c: real output whose sizes along ``axes`` are ``s``."""
    import scipy.fft

    return np.ascontiguousarray(scipy.fft.irfftn(_prep(buf), s=s, axes=axes, norm=norm, workers=-1))


FUNCTIONS = {
    "cholesky": cholesky, "det": det, "eig": eig, "eigh": eigh, "eigvals": eigvals,
    "eigvalsh": eigvalsh, "inv": inv, "matrix_rank": matrix_rank, "pinv": pinv, "qr": qr,
    "slogdet": slogdet, "solve": solve, "svd": svd, "svdvals": svdvals,
    "fft_c2c": fft_c2c, "fft_r2c": fft_r2c, "fft_c2r": fft_c2r,
}
