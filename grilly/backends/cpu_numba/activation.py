"""CPU kernels of activations' gradients: ``relu_backward`` (g where y > 0, else 0) as one pass
reading g and y once (the composition's comparison and choice read y twice and write a mask)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import jit
from .pool import pool

_o = dict(cache=True, nogil=True)


@njit(**_o)
def s_relu_bwd(g, y, out):
    for i in range(out.shape[0]):
        out[i] = g[i] if y[i] > 0 else 0


@njit(parallel=True, **_o)
def p_relu_bwd(g, y, out):
    for i in prange(out.shape[0]):
        out[i] = g[i] if y[i] > 0 else 0


def relu_backward(g, y):
    """g where y > 0, else 0 (float32/float64, one shape)."""
    out = pool.empty(g.shape, g.dtype)
    if out.size:
        gf = np.ascontiguousarray(g).reshape(-1)
        yf = np.ascontiguousarray(y).reshape(-1)
        (p_relu_bwd if out.size >= jit.PARALLEL_MIN else s_relu_bwd)(gf, yf, out.reshape(-1))
    return out


KERNELS: dict = {"relu_backward": relu_backward}
