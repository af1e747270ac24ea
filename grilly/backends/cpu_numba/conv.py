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
    h, w = x.shape[1], x.shape[2]
    ho, wo = out.shape[2], out.shape[3]
    for j in range(kw):
        for i in range(kh):
            k = j * kh + i
            for a in range(ho):
                r = a * sh + i * dh - pt
                if r < 0 or r >= h:
                    for b in range(wo):
                        out[p, k, a, b] = fill
                    continue
                for b in range(wo):
                    c = b * sw + j * dw - pl
                    out[p, k, a, b] = x[p, r, c] if 0 <= c < w else fill


@njit(**_o)
def s_im2col(x, out, kh, kw, sh, sw, dh, dw, pt, pl, fill):
    for p in range(x.shape[0]):
        _im2col_plane(x, out, p, kh, kw, sh, sw, dh, dw, pt, pl, fill)


@njit(parallel=True, **_o)
def p_im2col(x, out, kh, kw, sh, sw, dh, dw, pt, pl, fill):
    for p in prange(x.shape[0]):
        _im2col_plane(x, out, p, kh, kw, sh, sw, dh, dw, pt, pl, fill)


@njit(**_o)
def _col2im_plane(g, out, p, kh, kw, sh, sw, dh, dw, pt, pl):
    h, w = out.shape[1], out.shape[2]
    ho, wo = g.shape[2], g.shape[3]
    for r in range(h):
        for c in range(w):
            out[p, r, c] = 0
    for j in range(kw):
        for i in range(kh):
            k = j * kh + i
            for a in range(ho):
                r = a * sh + i * dh - pt
                if r < 0 or r >= h:
                    continue
                for b in range(wo):
                    c = b * sw + j * dw - pl
                    if 0 <= c < w:
                        out[p, r, c] += g[p, k, a, b]


@njit(**_o)
def s_col2im(g, out, kh, kw, sh, sw, dh, dw, pt, pl):
    for p in range(g.shape[0]):
        _col2im_plane(g, out, p, kh, kw, sh, sw, dh, dw, pt, pl)


@njit(parallel=True, **_o)
def p_col2im(g, out, kh, kw, sh, sw, dh, dw, pt, pl):
    for p in prange(g.shape[0]):
        _col2im_plane(g, out, p, kh, kw, sh, sw, dh, dw, pt, pl)


def _ctype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt == np.float16 else dt


def _run(serial, parallel, src, dst, tasks, *args):
    if use_threads(dst.size) and tasks >= 2:
        par(parallel, tasks, 2 * dst.nbytes, src, dst, *args)
    else:
        serial(src, dst, *args)


def im2col(buf, kernel, stride, dilation, pads, fill, out):
    """(N, C, H, W) -> (N, C, KW*KH, Ho, Wo) windows, kw-major; outside the image is ``fill``."""
    n, c, h, w = buf.shape
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, stride, dilation, out
    res = pool.empty((n, c, kw * kh, ho, wo), buf.dtype)
    if res.size == 0:
        return res
    ct = _ctype(buf.dtype)
    x = np.ascontiguousarray(buf, dtype=ct).reshape(n * c, h, w)
    y = res.reshape(n * c, kw * kh, ho, wo) if ct == buf.dtype else np.empty((n * c, kw * kh, ho, wo), ct)
    _run(s_im2col, p_im2col, x, y, n * c, kh, kw, sh, sw, dh, dw, pads[0], pads[2], ct.type(fill))
    if ct != buf.dtype:
        np.copyto(res.reshape(y.shape), y, casting="unsafe")
    return res


def col2im(buf, kernel, stride, dilation, pads, size):
    """Adjoint of ``im2col``: (N, C, KW*KH, Ho, Wo) window values summed onto (N, C, H, W)."""
    n, c, _, ho, wo = buf.shape
    (kh, kw), (sh, sw), (dh, dw), (h, w) = kernel, stride, dilation, size
    res = pool.empty((n, c, h, w), buf.dtype)
    if res.size == 0:
        return res
    ct = _ctype(buf.dtype)
    g = np.ascontiguousarray(buf, dtype=ct).reshape(n * c, kw * kh, ho, wo)
    y = res.reshape(n * c, h, w) if ct == buf.dtype else np.empty((n * c, h, w), ct)
    _run(s_col2im, p_col2im, g, y, n * c, kh, kw, sh, sw, dh, dw, pads[0], pads[2])
    if ct != buf.dtype:
        np.copyto(res.reshape(y.shape), y, casting="unsafe")
    return res


KERNELS: dict = {"im2col": im2col, "col2im": col2im}
