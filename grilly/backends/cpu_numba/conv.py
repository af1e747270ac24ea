"""CPU kernels of the conv family: ``im2col`` and its adjoint ``col2im`` (docs/kernels/conv.md).
float16 computes in float32, as the other CPU kernels do.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .pool import pool
from .reductions import par, use_threads

_o = dict(cache=True, nogil=True)


@njit(**_o)
def _window(src, o, i, j, sh, sw, dh, dw, pt, pl, fill):
    """Window (i, j) of one image plane ``src`` into the (Ho, Wo) block ``o``."""
    h, w = src.shape
    ho, wo = o.shape
    for a in range(ho):
        r = a * sh + i * dh - pt
        if r < 0 or r >= h:
            for b in range(wo):
                o[a, b] = fill
        else:
            # a select rather than split loops: LLVM vectorizes it (the rows are short)
            for b in range(wo):
                c = b * sw + j * dw - pl
                o[a, b] = src[r, c] if 0 <= c < w else fill


@njit(**_o)
def _unwindow(v, y, i, j, sh, sw, dh, dw, pt, pl):
    """Add the (Ho, Wo) block ``v`` of window (i, j) onto the image plane ``y``."""
    h, w = y.shape
    ho, wo = v.shape
    for a in range(ho):
        r = a * sh + i * dh - pt
        if 0 <= r < h:
            for b in range(wo):
                c = b * sw + j * dw - pl
                if 0 <= c < w:
                    y[r, c] += v[a, b]


# Task t: one (n, c) plane in the batch-major layout; one (c, window) pair for all n in the
# channel-major one, so writes follow the output's memory order. prange hands out unsigned
# indices: int64 keeps the index arithmetic integral.
@njit(**_o)
def _im2col_task(x, out, cm, t, kh, kw, sh, sw, dh, dw, pt, pl, fill):
    t = np.int64(t)
    if cm:
        ch, k = t // (kh * kw), t % (kh * kw)
        j, i = k // kh, k % kh
        for n in range(x.shape[0]):
            _window(x[n, ch], out[ch, k, n], i, j, sh, sw, dh, dw, pt, pl, fill)
    else:
        n, ch = t // x.shape[1], t % x.shape[1]
        for k in range(kh * kw):
            _window(x[n, ch], out[n, ch, k], k % kh, k // kh, sh, sw, dh, dw, pt, pl, fill)


@njit(**_o)
def s_im2col(x, out, cm, kh, kw, sh, sw, dh, dw, pt, pl, fill):
    tasks = x.shape[1] * kh * kw if cm else x.shape[0] * x.shape[1]
    for t in range(tasks):
        _im2col_task(x, out, cm, t, kh, kw, sh, sw, dh, dw, pt, pl, fill)


@njit(parallel=True, **_o)
def p_im2col(x, out, cm, kh, kw, sh, sw, dh, dw, pt, pl, fill):
    tasks = x.shape[1] * kh * kw if cm else x.shape[0] * x.shape[1]
    for t in prange(tasks):
        _im2col_task(x, out, cm, t, kh, kw, sh, sw, dh, dw, pt, pl, fill)


# Task t: one channel (all n) in the channel-major layout, one (n, c) plane otherwise; either
# way a task owns its output planes, so the overlapping window sums never race.
@njit(**_o)
def _col2im_task(g, out, cm, t, kh, kw, sh, sw, dh, dw, pt, pl):
    t = np.int64(t)
    if cm:
        ch = t
        for n in range(out.shape[0]):
            out[n, ch] = 0
        for k in range(kh * kw):
            for n in range(out.shape[0]):
                _unwindow(g[ch, k, n], out[n, ch], k % kh, k // kh, sh, sw, dh, dw, pt, pl)
    else:
        n, ch = t // out.shape[1], t % out.shape[1]
        out[n, ch] = 0
        for k in range(kh * kw):
            _unwindow(g[n, ch, k], out[n, ch], k % kh, k // kh, sh, sw, dh, dw, pt, pl)


@njit(**_o)
def s_col2im(g, out, cm, kh, kw, sh, sw, dh, dw, pt, pl):
    tasks = out.shape[1] if cm else out.shape[0] * out.shape[1]
    for t in range(tasks):
        _col2im_task(g, out, cm, t, kh, kw, sh, sw, dh, dw, pt, pl)


@njit(parallel=True, **_o)
def p_col2im(g, out, cm, kh, kw, sh, sw, dh, dw, pt, pl):
    tasks = out.shape[1] if cm else out.shape[0] * out.shape[1]
    for t in prange(tasks):
        _col2im_task(g, out, cm, t, kh, kw, sh, sw, dh, dw, pt, pl)


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
    x = np.ascontiguousarray(buf, dtype=ct)
    tasks = c * kh * kw if channel_major else n * c
    _run(s_im2col, p_im2col, x, y, tasks, bool(channel_major), kh, kw, sh, sw, dh, dw, pads[0],
         pads[2], ct.type(fill))
    if y is not res:
        np.copyto(res, y, casting="unsafe")
    return res


def col2im(buf, kernel, stride, dilation, pads, size, channel_major=False):
    """Adjoint of ``im2col``: window values (N, C, KW*KH, Ho, Wo) (or (C, KW*KH, N, Ho, Wo)
    with ``channel_major``) summed onto (N, C, H, W); what falls on the padding is dropped."""
    n, c = (buf.shape[2], buf.shape[0]) if channel_major else buf.shape[:2]
    (kh, kw), (sh, sw), (dh, dw), (h, w) = kernel, stride, dilation, size
    res = pool.empty((n, c, h, w), buf.dtype)
    if res.size == 0:
        return res
    ct = _ctype(buf.dtype)
    g = np.ascontiguousarray(buf, dtype=ct)
    y = res if ct == buf.dtype else np.empty(res.shape, ct)
    tasks = c if channel_major else n * c
    _run(s_col2im, p_col2im, g, y, tasks, bool(channel_major), kh, kw, sh, sw, dh, dw, pads[0],
         pads[2])
    if y is not res:
        np.copyto(res, y, casting="unsafe")
    return res


KERNELS: dict = {"im2col": im2col, "col2im": col2im}
