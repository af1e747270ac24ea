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


def linear_backward(g, x, w, need):
    """(g @ w, g.T @ x, g summed over rows), each None where ``need`` says no."""
    nx, nw, nb = (bool(v) for v in need)
    g, x, w = _blas_rows(g), _blas_rows(x), _blas_rows(w)
    gx = gw = gb = None
    if nx:
        gx = pool.empty(x.shape, x.dtype)
        if gx.size:
            if g.shape[1]:
                gemm_into(False, False, g, w, 0.0, gx)
            else:
                gx[...] = 0
    if nw:
        gw = pool.empty(w.shape, x.dtype)
        if gw.size:
            if g.shape[0]:
                gemm_into(True, False, g, x, 0.0, gw)
            else:
                gw[...] = 0
    if nb:
        gb = pool.empty(g.shape[1:], x.dtype)
        np.sum(g, axis=0, out=gb)
    return gx, gw, gb


KERNELS: dict = {"linear": linear, "linear_backward": linear_backward}
