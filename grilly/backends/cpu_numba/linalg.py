"""CPU kernels: linalg. Float/complex matmul calls BLAS through ``np.dot`` inside njit; integer
matmul is a parallel Numba loop; batch dims broadcast (the loop maps each output matrix to its
operands' matrices, nothing is copied). diagonal is numpy's view; cross one Numba loop (it
overrides the array layer's composite, which is ~30x slower on this backend: nine strided
elementwise passes). The decompositions have no kernel here: the array layer's host path
(grilly.array.host_kernels) serves every backend."""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from . import blas as blas_mod
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
        blas_mod.mm2(_blas_ok(a.reshape(-1, k) if a.ndim > 2 else a), _blas_ok(b),
                     res.reshape(-1, n), _dot2)
        if half:
            out[...] = res
        return out
    batch = tuple(out_shape[:-2])
    ia, ib = _batches(tuple(a.shape[:-2]), tuple(b.shape[:-2]), batch)
    a3, b3 = _stack(a), _stack(b)
    res = out if not half else np.empty(out.shape, np.float32)
    r3 = res.reshape((-1, m, n))
    if blas:
        blas_mod.mm3(a3, b3, r3, ia, ib, _dot3)
    elif r3.size * k >= jit.PARALLEL_MIN and r3.shape[0] * m > 1:
        _ploop_mm(a3, b3, r3, ia, ib)
    else:
        _loop_mm(a3, b3, r3, ia, ib)
    if half:
        out[...] = res
    return out


def diagonal(buf, offset: int):
    """The view of the ``offset`` diagonal of the last two axes, shape (..., K): writable
    where ``buf`` is (as the Vulkan backend's; NumPy's own diagonal view is read-only)."""
    d = np.diagonal(buf, offset, -2, -1)
    r, c = buf.shape[-2:]
    start = buf[..., max(-offset, 0):, max(offset, 0):] if d.shape[-1] else d
    return np.lib.stride_tricks.as_strided(start, d.shape, d.strides,
                                           writeable=buf.flags.writeable)


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
        # float16 has no Numba arithmetic: float32 inside (its products exact), rounded once
        ct = np.float32 if out.dtype == np.float16 else out.dtype
        res = out if ct == out.dtype else np.empty(out.shape, ct)
        _cross(np.ascontiguousarray(np.broadcast_to(a, out.shape), ct).reshape(-1, 3),
               np.ascontiguousarray(np.broadcast_to(b, out.shape), ct).reshape(-1, 3),
               res.reshape(-1, 3))
        if res is not out:
            out[...] = res
    return out


KERNELS = {"matmul": matmul, "diagonal": diagonal, "cross": cross}
