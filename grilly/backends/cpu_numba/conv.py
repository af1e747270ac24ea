"""CPU kernels of the conv family: ``im2col`` and its adjoint ``col2im`` (docs/kernels/conv.md).

One task per (n, c) image plane, so col2im's overlapping window sums never race. float16
computes in float32, as the other CPU kernels do.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .pool import pool
from .reductions import par, use_threads

_o = dict(cache=True, nogil=True)


@njit(**_o)
def _im2col_plane(x, out, p, kh, kw, sh, sw, dh, dw, pt, pl, fill):
    # prange hands out unsigned indices: int64 keeps the index arithmetic integral
    n = np.int64(p) // x.shape[1]
    ch = np.int64(p) - n * x.shape[1]
    h, w = x.shape[2], x.shape[3]
    ho, wo = out.shape[3], out.shape[4]
    for j in range(kw):
        for i in range(kh):
            o = out[n, ch, j * kh + i]
            for a in range(ho):
                r = a * sh + i * dh - pt
                if r < 0 or r >= h:
                    for b in range(wo):
                        o[a, b] = fill
                    continue
                for b in range(wo):
                    c = b * sw + j * dw - pl
                    o[a, b] = x[n, ch, r, c] if 0 <= c < w else fill


@njit(**_o)
def s_im2col(x, out, kh, kw, sh, sw, dh, dw, pt, pl, fill):
    for p in range(x.shape[0] * x.shape[1]):
        _im2col_plane(x, out, p, kh, kw, sh, sw, dh, dw, pt, pl, fill)


@njit(parallel=True, **_o)
def p_im2col(x, out, kh, kw, sh, sw, dh, dw, pt, pl, fill):
    for p in prange(x.shape[0] * x.shape[1]):
        _im2col_plane(x, out, p, kh, kw, sh, sw, dh, dw, pt, pl, fill)


@njit(**_o)
def _col2im_plane(g, out, p, kh, kw, sh, sw, dh, dw, pt, pl):
    n = np.int64(p) // out.shape[1]
    ch = np.int64(p) - n * out.shape[1]
    h, w = out.shape[2], out.shape[3]
    ho, wo = g.shape[3], g.shape[4]
    y = out[n, ch]
    for r in range(h):
        for c in range(w):
            y[r, c] = 0
    for j in range(kw):
        for i in range(kh):
            v = g[n, ch, j * kh + i]
            for a in range(ho):
                r = a * sh + i * dh - pt
                if r < 0 or r >= h:
                    continue
                for b in range(wo):
                    c = b * sw + j * dw - pl
                    if 0 <= c < w:
                        y[r, c] += v[a, b]


@njit(**_o)
def s_col2im(g, out, kh, kw, sh, sw, dh, dw, pt, pl):
    for p in range(out.shape[0] * out.shape[1]):
        _col2im_plane(g, out, p, kh, kw, sh, sw, dh, dw, pt, pl)


@njit(parallel=True, **_o)
def p_col2im(g, out, kh, kw, sh, sw, dh, dw, pt, pl):
    for p in prange(out.shape[0] * out.shape[1]):
        _col2im_plane(g, out, p, kh, kw, sh, sw, dh, dw, pt, pl)


def _ctype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt == np.float16 else dt


def _run(serial, parallel, src, dst, tasks, *args):
    if use_threads(dst.size) and tasks >= 2:
        par(parallel, tasks, 2 * dst.nbytes, src, dst, *args)
    else:
        serial(src, dst, *args)


def im2col(buf, kernel, stride, dilation, pads, fill, out, channel_major=False):
    """(N, C, H, W) -> (N, C, KW*KH, Ho, Wo) windows, kw-major, or (C, KW*KH, N, Ho, Wo) with
    ``channel_major``; outside the image is ``fill``."""
    n, c, h, w = buf.shape
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, stride, dilation, out
    k = kw * kh
    ct = _ctype(buf.dtype)
    res = pool.empty((c, k, n, ho, wo) if channel_major else (n, c, k, ho, wo), buf.dtype)
    if res.size == 0:
        return res
    y = res if ct == buf.dtype else np.empty(res.shape, ct)
    # the kernels always see the (N, C, K, Ho, Wo) order; channel-major is a transposed view
    y5 = y.transpose(2, 0, 1, 3, 4) if channel_major else y
    x = np.ascontiguousarray(buf, dtype=ct)
    _run(s_im2col, p_im2col, x, y5, n * c, kh, kw, sh, sw, dh, dw, pads[0], pads[2], ct.type(fill))
    if y is not res:
        np.copyto(res, y, casting="unsafe")
    return res


def col2im(buf, kernel, stride, dilation, pads, size, channel_major=False):
    """Adjoint of ``im2col``: window values (N, C, KW*KH, Ho, Wo) (or (C, KW*KH, N, Ho, Wo)
    with ``channel_major``) summed onto (N, C, H, W); what falls on the padding is dropped."""
    if channel_major:
        buf = buf.transpose(2, 0, 1, 3, 4)
    n, c = buf.shape[:2]
    (kh, kw), (sh, sw), (dh, dw), (h, w) = kernel, stride, dilation, size
    res = pool.empty((n, c, h, w), buf.dtype)
    if res.size == 0:
        return res
    ct = _ctype(buf.dtype)
    g = buf if ct == buf.dtype else buf.astype(ct)
    y = res if ct == buf.dtype else np.empty(res.shape, ct)
    _run(s_col2im, p_col2im, g, y, n * c, kh, kw, sh, sw, dh, dw, pads[0], pads[2])
    if y is not res:
        np.copyto(res, y, casting="unsafe")
    return res


KERNELS: dict = {"im2col": im2col, "col2im": col2im}
