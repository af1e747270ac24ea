"""CPU kernels: linalg. Float/complex matmul calls BLAS through ``np.dot`` inside njit; integer
matmul is a parallel Numba loop; decompositions call NumPy's batched ``np.linalg`` (LAPACK,
nothing to compile). Kernels take ``(..., M, N)`` buffers; batch dims of two-operand kernels
broadcast (the loop maps each output matrix to its operands' matrices, nothing is copied)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from . import jit
from .pool import pool

_opts = dict(cache=True, nogil=True)

# A product below this many multiply-adds runs in a Numba loop: a BLAS call costs ~1 us.
_SMALL_MM = 4096


@njit(**_opts)
def _dot2(a, b, out):
    np.dot(a, b, out)


@njit(**_opts)
def _dot3(a, b, out, ia, ib):
    for i in range(out.shape[0]):
        np.dot(a[ia[i]], b[ib[i]], out[i])


@njit(**_opts)
def _loop_mm(a, b, out, ia, ib):
    m, k, n = a.shape[1], a.shape[2], b.shape[2]
    for i in range(out.shape[0]):
        x, y = a[ia[i]], b[ib[i]]
        for r in range(m):
            for c in range(n):
                out[i, r, c] = 0
            for p in range(k):
                v = x[r, p]
                for c in range(n):
                    out[i, r, c] += v * y[p, c]


@njit(parallel=True, **_opts)
def _ploop_mm(a, b, out, ia, ib):
    m, k, n = a.shape[1], a.shape[2], b.shape[2]
    for t in prange(out.shape[0] * m):
        i, r = t // m, t % m
        x, y = a[ia[i]], b[ib[i]]
        for c in range(n):
            out[i, r, c] = 0
        for p in range(k):
            v = x[r, p]
            for c in range(n):
                out[i, r, c] += v * y[p, c]


def _batches(a_batch: tuple, b_batch: tuple, batch: tuple):
    """Flat matrix indices of ``a`` and ``b`` for each output matrix of the broadcast batch."""
    def idx(s):
        n = int(np.prod(s, dtype=np.int64))
        return np.ascontiguousarray(np.broadcast_to(
            np.arange(n, dtype=np.int64).reshape((1,) * (len(batch) - len(s)) + s), batch).reshape(-1))
    return idx(a_batch), idx(b_batch)


def _stack(x: np.ndarray) -> np.ndarray:
    """``x`` as a C-contiguous (B, M, N) stack."""
    # an explicit batch count, since -1 is ambiguous when a matrix dimension is 0
    return np.ascontiguousarray(x).reshape((math.prod(x.shape[:-2]),) + x.shape[-2:])


def _blas_ok(x: np.ndarray) -> np.ndarray:
    return x if x.flags.c_contiguous or x.flags.f_contiguous else np.ascontiguousarray(x)


def matmul(out_shape, out_dtype, a, b):
    """(..., M, K) @ (..., K, N) -> out_shape = broadcast batch + (M, N); inputs of out_dtype."""
    out = pool.empty(tuple(out_shape), out_dtype.np)
    if out.size == 0:
        return out
    k = a.shape[-1]
    if k == 0:
        out[...] = 0
        return out
    half = a.dtype == np.float16
    if half:  # BLAS has no half precision: compute in float32
        a, b = a.astype(np.float32), b.astype(np.float32)
    m, n = out.shape[-2], out.shape[-1]
    blas = a.dtype.kind in "fc" and m * n * k >= _SMALL_MM
    if blas and b.ndim == 2 and (a.ndim == 2 or a.flags.c_contiguous):
        # a stack times one matrix is one big product
        res = out if not half else np.empty(out.shape, np.float32)
        _dot2(_blas_ok(a.reshape(-1, k) if a.ndim > 2 else a), _blas_ok(b), res.reshape(-1, n))
        if half:
            out[...] = res
        return out
    batch = tuple(out_shape[:-2])
    ia, ib = _batches(tuple(a.shape[:-2]), tuple(b.shape[:-2]), batch)
    a3, b3 = _stack(a), _stack(b)
    res = out if not half else np.empty(out.shape, np.float32)
    r3 = res.reshape((-1, m, n))
    if blas:
        _dot3(a3, b3, r3, ia, ib)
    elif r3.size * k >= jit.PARALLEL_MIN and r3.shape[0] * m > 1:
        _ploop_mm(a3, b3, r3, ia, ib)
    else:
        _loop_mm(a3, b3, r3, ia, ib)
    if half:
        out[...] = res
    return out


def diagonal(buf, offset: int):
    """The view of the ``offset`` diagonal of the last two axes, shape (..., K)."""
    return np.diagonal(buf, offset, -2, -1)


@njit(**_opts)
def _cross(a, b, out):
    for i in range(out.shape[0]):
        out[i, 0] = a[i, 1] * b[i, 2] - a[i, 2] * b[i, 1]
        out[i, 1] = a[i, 2] * b[i, 0] - a[i, 0] * b[i, 2]
        out[i, 2] = a[i, 0] * b[i, 1] - a[i, 1] * b[i, 0]


def cross(out_shape, out_dtype, a, b):
    """3-vector cross product along the last axis; a and b broadcast to out_shape (..., 3)."""
    out = pool.empty(tuple(out_shape), out_dtype.np)
    if out.size:
        _cross(np.ascontiguousarray(np.broadcast_to(a, out.shape)).reshape(-1, 3),
               np.ascontiguousarray(np.broadcast_to(b, out.shape)).reshape(-1, 3),
               out.reshape(-1, 3))
    return out


# ---- decompositions: each takes a (B, M, N) stack ---------------------------------------------
# NumPy's own batched LAPACK calls, not Numba's np.linalg: the LAPACK routines are the same, and
# they compile nothing (Numba's took 1-3 s per kernel and dtype on a first call, over the array
# API suite's 800 ms deadline); NumPy loops over the batch in C and releases the GIL.
def _cholesky(a, out):
    out[...] = np.linalg.cholesky(a)


def _inv(a, out):
    out[...] = np.linalg.inv(a)


def _det(a, out):
    out[...] = np.linalg.det(a)


def _slogdet(a, sign, logabs):
    sign[...], logabs[...] = np.linalg.slogdet(a)


def _solve(a, b, out, ia, ib):
    out[...] = np.linalg.solve(a[ia], b[ib])


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


_REAL = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}


def _real(d: np.dtype) -> np.dtype:
    return _REAL.get(d, d)


def _complex(d: np.dtype) -> np.dtype:
    return np.dtype(np.complex64) if d in (np.float32, np.complex64) else np.dtype(np.complex128)


def _msg(e: Exception) -> str:
    """NumPy's LinAlgError text as the tail of grilly's ("inv: singular matrix")."""
    t = str(e)
    return t[:1].lower() + t[1:]


def _lapack(op: str, fn, x: np.ndarray, outs: list, *extra):
    """Run ``fn(stack, *extra, *out_stacks)`` with outs given as (batch-relative shape, dtype).

    Returns the outputs shaped batch + shape. float16 computes in float32 and casts back;
    numpy's LinAlgError keeps its class, with the op named in the message."""
    batch = x.shape[:-2]
    half = x.dtype == np.float16
    a = _stack(x.astype(np.float32) if half else x)
    res = [pool.empty(batch + tuple(s), np.dtype(np.float32) if half and d == np.float16 else d)
           for s, d in outs]
    if a.shape[0] and a.size:
        try:
            fn(a, *extra, *[r.reshape((-1,) + tuple(s)) for r, (s, _) in zip(res, outs)])
        except np.linalg.LinAlgError as e:
            raise np.linalg.LinAlgError(f"{op}: {_msg(e)}") from None
    if half:
        res = [r.astype(np.float16) if d == np.float16 else r for r, (_, d) in zip(res, outs)]
    return res


def cholesky(buf):
    """Lower Cholesky factor of each (M, M) Hermitian positive-definite matrix."""
    n = buf.shape[-1]
    (out,) = _lapack("cholesky", _cholesky, buf, [((n, n), buf.dtype)])
    return out


def inv(buf):
    """Inverse of each (M, M) matrix; LinAlgError when singular."""
    n = buf.shape[-1]
    (out,) = _lapack("inv", _inv, buf, [((n, n), buf.dtype)])
    return out


def det(buf):
    """Determinant of each (M, M) matrix, shape (...)."""
    if buf.shape[-1] == 0:
        return np.ones(buf.shape[:-2], buf.dtype)
    (out,) = _lapack("det", _det, buf, [((), buf.dtype)])
    return out


def slogdet(buf):
    """(sign, log|det|) of each (M, M) matrix; sign has buf's dtype, log|det| the real dtype."""
    if buf.shape[-1] == 0:
        return np.ones(buf.shape[:-2], buf.dtype), np.zeros(buf.shape[:-2], _real(buf.dtype))
    return tuple(_lapack("slogdet", _slogdet, buf, [((), buf.dtype), ((), _real(buf.dtype))]))


def solve(out_shape, out_dtype, a, b):
    """Solve A X = B for (..., M, M) A and (..., M, K) B with broadcast batches."""
    out = pool.empty(tuple(out_shape), out_dtype.np)
    if out.size == 0:
        return out
    half = a.dtype == np.float16
    if half:
        a, b = a.astype(np.float32), b.astype(np.float32)
    ia, ib = _batches(tuple(a.shape[:-2]), tuple(b.shape[:-2]), tuple(out_shape[:-2]))
    res = np.empty(out.shape, np.float32) if half else out
    try:
        _solve(_stack(a), _stack(b), res.reshape((-1,) + res.shape[-2:]), ia, ib)
    except np.linalg.LinAlgError as e:
        raise np.linalg.LinAlgError(f"solve: {_msg(e)}") from None
    if half:
        out[...] = res
    return out


def eig(buf):
    """(eigenvalues (..., M), eigenvectors (..., M, M)), both complex, of general matrices."""
    n = buf.shape[-1]
    c = _complex(buf.dtype)
    return tuple(_lapack("eig", _eig, buf.astype(c, copy=False), [((n,), c), ((n, n), c)]))


def eigvals(buf):
    """Complex eigenvalues (..., M) of general matrices."""
    c = _complex(buf.dtype)
    (w,) = _lapack("eigvals", _eigvals, buf.astype(c, copy=False), [((buf.shape[-1],), c)])
    return w


def eigh(buf):
    """(eigenvalues ascending, real (..., M); eigenvectors (..., M, M)) of Hermitian matrices."""
    n = buf.shape[-1]
    return tuple(_lapack("eigh", _eigh, buf, [((n,), _real(buf.dtype)), ((n, n), buf.dtype)]))


def eigvalsh(buf):
    """Real eigenvalues (..., M), ascending, of Hermitian matrices."""
    (w,) = _lapack("eigvalsh", _eigvalsh, buf, [((buf.shape[-1],), _real(buf.dtype))])
    return w


def svd(buf, full_matrices: bool):
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


def svdvals(buf):
    """Singular values (..., K), descending."""
    k = min(buf.shape[-2:])
    if k == 0:
        return np.empty(buf.shape[:-2] + (0,), _real(buf.dtype))
    (s,) = _lapack("svdvals", _svdvals, buf, [((k,), _real(buf.dtype))])
    return s


def qr(buf, mode: str):
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


def pinv(buf, rtol):
    """Moore-Penrose pseudo-inverse (..., N, M); singular values <= rtol * largest are cut
    (rtol a buffer broadcastable to the batch shape)."""
    m, n = buf.shape[-2:]
    if m == 0 or n == 0:
        return np.zeros(buf.shape[:-2] + (n, m), buf.dtype)
    (out,) = _lapack("pinv", _pinv, buf, [((n, m), buf.dtype)], _rtol_stack(rtol, buf.shape[:-2]))
    return out


def matrix_rank(buf, rtol):
    """Number of singular values > rtol * largest, as int64 (...)."""
    if min(buf.shape[-2:]) == 0:
        return np.zeros(buf.shape[:-2], np.int64)
    (out,) = _lapack("matrix_rank", _rank, buf, [((), np.dtype(np.int64))],
                     _rtol_stack(rtol, buf.shape[:-2]))
    return out


KERNELS = {
    "matmul": matmul, "diagonal": diagonal, "cross": cross, "cholesky": cholesky, "inv": inv,
    "det": det, "slogdet": slogdet, "solve": solve, "eig": eig, "eigvals": eigvals, "eigh": eigh,
    "eigvalsh": eigvalsh, "svd": svd, "svdvals": svdvals, "qr": qr, "pinv": pinv,
    "matrix_rank": matrix_rank,
}
