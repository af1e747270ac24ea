"""CPU kernels of a dense layer: ``linear`` (x @ w.T + bias as one GEMM whose output starts as
the bias) and ``linear_backward`` (the three gradients in one call); float32/float64, direct
BLAS calls with transposed operands, so nothing is copied (docs/kernels/linalg.md)."""
from __future__ import annotations

import numpy as np

from .blas import gemm_into
from .pool import pool


def _blas_rows(x: np.ndarray) -> np.ndarray:
    """x with unit-stride rows (a copy only where it has none)."""
    ok = x.strides[1] == x.itemsize and (x.shape[0] <= 1 or x.strides[0] >= x.shape[1] * x.itemsize)
    return x if ok else np.ascontiguousarray(x)


def linear(x, w, bias):
    """(M, N) = x (M, K) @ w (N, K).T + bias (N,) or None."""
    m, n = x.shape[0], w.shape[0]
    out = pool.empty((m, n), x.dtype)
    if out.size == 0:
        return out
    if x.shape[1] == 0:
        out[...] = 0 if bias is None else bias
        return out
    if bias is not None:
        out[...] = bias
    gemm_into(False, True, _blas_rows(x), _blas_rows(w), 0.0 if bias is None else 1.0, out)
    return out


def _product(ta: bool, tb: bool, a, b, shape: tuple, dtype):
    """op(a) @ op(b) as a new (shape) buffer; zeros when the contraction is empty."""
    out = pool.empty(shape, dtype)
    if out.size:
        if a.shape[0 if ta else 1]:
            gemm_into(ta, tb, a, b, 0.0, out)
        else:
            out[...] = 0
    return out


def linear_backward(g, x, w, need):
    """(g @ w, g.T @ x, g summed over rows), each None where ``need`` says no."""
    nx, nw, nb = (bool(v) for v in need)
    g, x, w = _blas_rows(g), _blas_rows(x), _blas_rows(w)
    gx = _product(False, False, g, w, x.shape, x.dtype) if nx else None
    gw = _product(True, False, g, x, w.shape, x.dtype) if nw else None
    gb = None
    if nb:
        gb = pool.empty(g.shape[1:], x.dtype)
        np.sum(g, axis=0, out=gb)
    return gx, gw, gb


KERNELS: dict = {"linear": linear, "linear_backward": linear_backward}
