"""linalg and fft kernels of the Vulkan backend (docs/kernels/linalg.md conventions).

matmul is native (shaders/linalg/: a 64x64-tiled shared-memory shader for float32, one
invocation per output for other dtypes); diagonal is a view, cross and fft_roll compose device
kernels. The decompositions and the FFTs are host round trips: download, the CPU backend's kernel,
upload; each call counts one in ``recorder.stats["host_round_trips"]`` (docs/vulkan.md lists them).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..cpu_numba import fft as _cpu_fft
from ..cpu_numba import linalg as _cpu_linalg
from .kernels import (assign, broadcast_to, elementwise, from_host, full, new_buffer, reshape,
                      slice_view, to_host)
from .memory import Buffer
from .recorder import stats
from .reductions import _prod, dispatch

TILE = 64


def _stack3(buf: Buffer, batch: tuple, rows: int, cols: int) -> Buffer:
    """``buf`` broadcast to ``batch + (rows, cols)`` as a (B, rows, cols) view (or device copy)."""
    return reshape(broadcast_to(buf, batch + (rows, cols)), (_prod(batch), rows, cols))


SGEMM_BK = 16   # k depth of the large-matmul shader's slabs (shaders/linalg/sgemm.comp)


def _sgemm_ok(a3: Buffer, b3: Buffer, m: int, n: int, k: int) -> bool:
    """Whether the vec4, 128x128-tile shader applies: aligned rows, tile-multiple sizes."""
    return (m % 128 == 0 and n % 128 == 0 and k % SGEMM_BK == 0 and a3.strides[2] == 1
            and b3.strides[2] == 1 and all(v % 4 == 0 for v in (
                a3.strides[0], a3.strides[1], b3.strides[0], b3.strides[1], a3.offset, b3.offset)))


def matmul(out_shape, out_dtype, a: Buffer, b: Buffer) -> Buffer:
    """(..., M, K) @ (..., K, N) -> out_shape = broadcast batch + (M, N); inputs of out_dtype."""
    out_shape = tuple(out_shape)
    batch, (m, n) = out_shape[:-2], out_shape[-2:]
    k = a.shape[-1]
    ctx = a.ctx
    if k == 0:
        return full(ctx, out_shape, 0, out_dtype)
    out = new_buffer(ctx, out_shape, out_dtype)
    if out.size == 0:
        return out
    a3, b3 = _stack3(a, batch, m, k), _stack3(b, batch, k, n)
    nb = a3.shape[0]
    args = ((out.offset, a3.offset, b3.offset), (nb, m, n, k), (a3.strides, b3.strides))
    if out_dtype.name == "float32" and _sgemm_ok(a3, b3, m, n, k):
        tiles = nb * (m // 128) * (n // 128)
        dispatch(ctx, "sgemm_float32", (0, 1), [out, a3, b3], 0, tiles * 256, *args)
    elif out_dtype.name == "float32":
        tiles = nb * -(-m // TILE) * -(-n // TILE)
        dispatch(ctx, "mm_tiled_float32", (0, 1), [out, a3, b3], 0, tiles * 256, *args)
    else:
        dispatch(ctx, f"mm_{out_dtype.name}", (0, 1), [out, a3, b3], out.size, out.size, *args)
    return out


def diagonal(buf: Buffer, offset: int) -> Buffer:
    """The view of the ``offset`` diagonal of the last two axes, shape (..., K)."""
    r, c = buf.shape[-2:]
    start = (max(-offset, 0), max(offset, 0))
    kdim = max(0, min(r - start[0], c - start[1]))
    sr, sc = buf.strides[-2:]
    off = buf.offset + (start[0] * sr + start[1] * sc if kdim else 0)
    return Buffer(buf.ctx, buf.alloc, off, buf.shape[:-2] + (kdim,), buf.strides[:-2] + (sr + sc,),
                  buf.dtype)


def _last(buf: Buffer, i: int) -> Buffer:
    return slice_view(buf, (slice(None),) * (len(buf.shape) - 1) + (i,))


def cross(out_shape, out_dtype, a: Buffer, b: Buffer) -> Buffer:
    """3-vector cross product along the last axis; a and b broadcast to out_shape (..., 3)."""
    out_shape = tuple(out_shape)
    out = new_buffer(a.ctx, out_shape, out_dtype)
    if out.size == 0:
        return out
    ew = elementwise()
    mul, sub = ew["multiply"], ew["subtract"]
    a, b = broadcast_to(a, out_shape), broadcast_to(b, out_shape)
    part = out_shape[:-1]
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        t = sub(part, out_dtype, mul(part, out_dtype, _last(a, j), _last(b, k)),
                mul(part, out_dtype, _last(a, k), _last(b, j)))
        assign(_last(out, i), t)
    return out


def fft_roll(buf: Buffer, shifts: tuple, axes: tuple) -> Buffer:
    """A copy of ``buf`` rolled by ``shifts`` along ``axes``: two slice copies per axis."""
    cur = new_buffer(buf.ctx, buf.shape, buf.dtype)
    assign(cur, buf)
    for s, ax in zip(shifts, axes):
        n = buf.shape[ax]
        s = s % n if n else 0
        if s == 0:
            continue
        nxt = new_buffer(buf.ctx, buf.shape, buf.dtype)
        full_ = (slice(None),) * ax
        assign(slice_view(nxt, full_ + (slice(s, n),)), slice_view(cur, full_ + (slice(0, n - s),)))
        assign(slice_view(nxt, full_ + (slice(0, s),)), slice_view(cur, full_ + (slice(n - s, n),)))
        cur = nxt
    return cur


# ---- host round trips ---------------------------------------------------------------------
HOST_LINALG = ("cholesky", "inv", "det", "slogdet", "solve", "eig", "eigvals", "eigh",
               "eigvalsh", "svd", "svdvals", "qr", "pinv", "matrix_rank")
HOST_FFT = ("fft_c2c", "fft_r2c", "fft_c2r")


def _host_kernel(name: str, cpu_fn):
    def k(*args):
        ctx = next(x.ctx for x in args if isinstance(x, Buffer))
        stats["host_round_trips"] += 1
        res = cpu_fn(*[to_host(x) if isinstance(x, Buffer) else x for x in args])

        def up(h):
            h = np.asarray(h)
            return from_host(ctx, h, _dt.from_numpy(h.dtype))
        return tuple(up(r) for r in res) if isinstance(res, tuple) else up(res)
    k.__name__ = name
    return k


KERNELS: dict = {"matmul": matmul, "diagonal": diagonal, "cross": cross, "fft_roll": fft_roll}
KERNELS.update({n: _host_kernel(n, _cpu_linalg.KERNELS[n]) for n in HOST_LINALG})
KERNELS.update({n: _host_kernel(n, _cpu_fft.KERNELS[n]) for n in HOST_FFT})
