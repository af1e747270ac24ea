"""CPU kernels of the conv family: ``im2col`` and its adjoint ``col2im``, and the fused
``conv2d``/``conv2d_backward`` (docs/kernels/conv.md). float16 computes in float32, as the
other CPU kernels do.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from . import jit
from .microgemm import mgemm
from .pool import pool
from .reductions import par, use_threads

_o = dict(cache=True, nogil=True)
# reassociation lets LLVM split a row sum into vector partial sums (a strict chain of scalar
# adds ran the bias gradient of a 3x32x32 CNN's first layer at 8.6 ms of its 20)
_fm = dict(_o, fastmath={"reassoc"})


@njit(**_fm)
def _row_sum(v, o, n):
    """v[o, :n] summed."""
    acc = 0.0
    for q in range(n):
        acc += v[o, q]
    return acc


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


# ---- conv2d: per image, its windows in a thread's scratch and one GEMM per group -------------
# The windows of one image (C/g*KH*KW, Ho*Wo) stay in cache between im2col and the GEMM, the
# batch never materializes them, and the weight, bias and input gradients come out of the
# same per-image pass (weight and bias as one partial sum per thread).
# Plain multi-dimensional indexing throughout: a row view costs an NRT reference count pair,
# which on small images costs more than the row itself.
@njit(**_o)
def _cols(x, cols, c0, cg, kh, kw, sh, sw, dh, dw, pt, pl, ho, wo):
    """Window rows (c, i, j), kh-major, of channels c0..c0+cg of one image x (C, H, W) into
    cols (cg*KH*KW, Ho*Wo); zero outside the image."""
    h, w = x.shape[1], x.shape[2]
    for c in range(cg):
        for i in range(kh):
            for j in range(kw):
                row = (c * kh + i) * kw + j
                for a in range(ho):
                    r = a * sh + i * dh - pt
                    q = a * wo
                    if r < 0 or r >= h:
                        for b in range(wo):
                            cols[row, q + b] = 0
                    else:
                        for b in range(wo):
                            cc = b * sw + j * dw - pl
                            cols[row, q + b] = x[c0 + c, r, cc] if 0 <= cc < w else 0


@njit(**_o)
def _uncols(gc, gx, c0, cg, kh, kw, sh, sw, dh, dw, pt, pl, ho, wo):
    """The adjoint of ``_cols``: window rows gc added onto channels c0.. of gx (C, H, W)."""
    h, w = gx.shape[1], gx.shape[2]
    for c in range(cg):
        for i in range(kh):
            for j in range(kw):
                row = (c * kh + i) * kw + j
                for a in range(ho):
                    r = a * sh + i * dh - pt
                    if 0 <= r < h:
                        q = a * wo
                        for b in range(wo):
                            cc = b * sw + j * dw - pl
                            if 0 <= cc < w:
                                gx[c0 + c, r, cc] += gc[row, q + b]


@njit(parallel=True, **_o)
def _conv_fwd(x, w2, bias, y, groups, kh, kw, sh, sw, dh, dw, pt, pl, parts, direct):
    n, cin = x.shape[0], x.shape[1]
    o_all, kg = w2.shape
    og, cg = o_all // groups, cin // groups
    ho, wo = y.shape[2], y.shape[3]
    L = ho * wo
    step = (n + parts - 1) // parts
    for t in prange(parts):
        cols = np.empty((kg, L), x.dtype)
        for im in range(t * step, min(n, (t + 1) * step)):
            yi = y[im].reshape((o_all, L))
            for g in range(groups):
                yg = yi[g * og:(g + 1) * og]
                beta = 0.0
                if bias.size:
                    for o in range(og):
                        bo = bias[g * og + o]
                        for q in range(L):
                            yi[g * og + o, q] = bo
                    beta = 1.0
                wg = w2[g * og:(g + 1) * og]
                if direct:   # a 1x1, stride-1, unpadded kernel: the image is its own windows
                    mgemm(False, False, 1.0, wg, x[im].reshape((cin, L))[g * cg:(g + 1) * cg],
                          beta, yg)
                else:
                    _cols(x[im], cols, g * cg, cg, kh, kw, sh, sw, dh, dw, pt, pl, ho, wo)
                    mgemm(False, False, 1.0, wg, cols, beta, yg)


@njit(parallel=True, **_o)
def _conv_bwd(x, w2, gy, gx, gwp, gbp, groups, kh, kw, sh, sw, dh, dw, pt, pl, parts, direct,
              nx, nw, nb):
    n, cin = x.shape[0], x.shape[1]
    o_all, kg = w2.shape
    og, cg = o_all // groups, cin // groups
    ho, wo = gy.shape[2], gy.shape[3]
    L = ho * wo
    step = (n + parts - 1) // parts
    for t in prange(parts):
        cols = np.empty((kg, L), x.dtype)
        gc = np.empty((kg, L), x.dtype)
        for im in range(t * step, min(n, (t + 1) * step)):
            gi = gy[im].reshape((o_all, L))
            if nb:
                for o in range(o_all):
                    gbp[t, o] += _row_sum(gi, o, L)
            if nx and not direct:
                gxi = gx[im]
                for c in range(cin):
                    for r in range(gxi.shape[1]):
                        for q in range(gxi.shape[2]):
                            gxi[c, r, q] = 0
            for g in range(groups):
                gg = gi[g * og:(g + 1) * og]
                if nw:
                    # one operand is transposed into the micro-kernel's B panels: gW^T (kg, og)
                    # += windows gy^T packs gy (og x L), gW += gy windows^T the windows
                    # (kg x L); the smaller is packed
                    dst = gwp[t, :, g * og:(g + 1) * og]
                    src = x[im].reshape((cin, L))[g * cg:(g + 1) * cg] if direct else cols
                    if not direct:
                        _cols(x[im], cols, g * cg, cg, kh, kw, sh, sw, dh, dw, pt, pl, ho, wo)
                    if og <= kg:
                        mgemm(False, True, 1.0, src, gg, 1.0, dst)
                    else:
                        mgemm(False, True, 1.0, gg, src, 1.0, dst.T)
                if nx:
                    wg = w2[g * og:(g + 1) * og]
                    if direct:
                        mgemm(True, False, 1.0, wg, gg, 0.0,
                              gx[im].reshape((cin, L))[g * cg:(g + 1) * cg])
                    else:
                        mgemm(True, False, 1.0, wg, gg, 0.0, gc)
                        _uncols(gc, gx[im], g * cg, cg, kh, kw, sh, sw, dh, dw, pt, pl, ho, wo)


# multiply-adds (output elements x window x channels per group) per jit.sized unit: conv2d and
# its backward run their images' tasks in parallel from 2^20 of them; below, the serial twins
# run the same tasks in order (the same per-task partial sums, so the same bits). About where
# the parallel kernels start to win on two cores (docs/kernels/conv.md)
_MACS = 8


def _geometry(x, w, stride, dilation, pads, groups):
    kh, kw = w.shape[2], w.shape[3]
    direct = kh == 1 and kw == 1 and tuple(stride) == (1, 1) and not any(pads)
    parts = max(1, min(numba.get_num_threads(), x.shape[0]))
    return (groups, kh, kw, stride[0], stride[1], dilation[0], dilation[1], pads[0], pads[2],
            parts, direct)


def conv2d(x, w, bias, stride, dilation, pads, groups, out):
    """y (N, O, Ho, Wo) = the cross-correlation of x (N, C, H, W) with w (O, C/groups, KH, KW)
    plus bias (O,) or None; float32/float64 (the array layer composes the rest)."""
    n, o = x.shape[0], w.shape[0]
    y = pool.empty((n, o) + tuple(out), x.dtype)
    if y.size == 0:
        return y
    x = np.ascontiguousarray(x)
    w2 = np.ascontiguousarray(w).reshape(o, -1)
    b = np.ascontiguousarray(bias) if bias is not None else np.empty(0, x.dtype)
    if w2.shape[1] == 0:
        y[...] = b.reshape(1, o, 1, 1) if bias is not None else 0
        return y
    run = jit.sized(_conv_fwd, y.size * w2.shape[1] / _MACS)
    run(x, w2, b, y, *_geometry(x, w, stride, dilation, pads, groups))
    return y


def conv2d_backward(g, x, w, stride, dilation, pads, groups, need):
    """The gradients (x, w, bias) of ``conv2d`` for the output gradient g, each None where
    ``need`` says it is not wanted."""
    n, cin = x.shape[:2]
    o = w.shape[0]
    nx, nw, nb = (bool(v) for v in need)
    geo = _geometry(x, w, stride, dilation, pads, groups)
    parts = geo[-2]
    dt = x.dtype
    gx = pool.empty(x.shape, dt) if nx else np.empty((0, 0, 0, 0), dt)
    gwp = np.zeros((parts, w[0].size, o) if nw else (0, 0, 0), dt)   # gW^T per thread
    gbp = np.zeros((parts, o) if nb else (0, 0), dt)
    if g.size and x.size and w.size:
        run = jit.sized(_conv_bwd, g.size * w[0].size / _MACS)
        run(np.ascontiguousarray(x), np.ascontiguousarray(w).reshape(o, -1),
            np.ascontiguousarray(g), gx, gwp, gbp, *geo, nx, nw, nb)
    elif nx:
        gx[...] = 0
    return (gx if nx else None,
            gwp.sum(axis=0).T.reshape(w.shape) if nw else None,
            gbp.sum(axis=0) if nb else None)


# ---- max_pool2d: the maximum of each window and where it was, one pass per plane ------------
@njit(**_o)
def _maxpool_task(x, y, idx, t, kh, kw, sh, sw, dh, dw, pt, pl):
    n, c = t // x.shape[1], t % x.shape[1]
    h, w = x.shape[2], x.shape[3]
    ho, wo = y.shape[2], y.shape[3]
    if kh == 2 and kw == 2 and sh == 2 and sw == 2 and dh == 1 and dw == 1 and pt == 0 \
            and pl == 0 and 2 * ho <= h and 2 * wo <= w:
        # the common 2x2/2 pool: every window whole, its four values compared row by row
        # (torch's first maximum among ties), k = j*2 + i
        for a in range(ho):
            for b in range(wo):
                best = x[n, c, 2 * a, 2 * b]
                k = 0
                for s in range(1, 4):
                    q = (s >> 1) | ((s & 1) << 1)   # 0, 2, 1, 3: (i, j) in row-major order
                    v = x[n, c, 2 * a + (q & 1), 2 * b + (q >> 1)]
                    if v > best or (v != v and best == best):
                        best = v
                        k = q
                y[n, c, a, b] = best
                idx[n, c, a, b] = k
        return
    # plain 4-D indexing: a row view per output row costs more than the row on small planes
    for a in range(ho):
        for b in range(wo):
            y[n, c, a, b] = -np.inf
            idx[n, c, a, b] = -1
        # window offsets row by row: the first maximum wins (torch's choice among ties), a
        # NaN beats all; k = j*KH + i is im2col's index; a whole output row per offset, as
        # selects, so the loop vectorizes
        for i in range(kh):
            r = a * sh + i * dh - pt
            if r < 0 or r >= h:
                continue
            for j in range(kw):
                off = j * dw - pl
                b0 = max(0, (-off + sw - 1) // sw)
                b1 = min(wo, (w - 1 - off) // sw + 1) if w - 1 - off >= 0 else 0
                k = j * kh + i
                for b in range(b0, b1):
                    v = x[n, c, r, b * sw + off]
                    cur = y[n, c, a, b]
                    prev = idx[n, c, a, b]
                    take = (v > cur) | (prev < 0) | ((v != v) & (cur == cur))
                    y[n, c, a, b] = v if take else cur
                    idx[n, c, a, b] = k if take else prev


@njit(**_o)
def s_maxpool(x, y, idx, kh, kw, sh, sw, dh, dw, pt, pl):
    for t in range(x.shape[0] * x.shape[1]):
        _maxpool_task(x, y, idx, t, kh, kw, sh, sw, dh, dw, pt, pl)


@njit(parallel=True, **_o)
def p_maxpool(x, y, idx, kh, kw, sh, sw, dh, dw, pt, pl):
    for t in prange(x.shape[0] * x.shape[1]):
        _maxpool_task(x, y, idx, np.int64(t), kh, kw, sh, sw, dh, dw, pt, pl)


@njit(**_o)
def _unpool_task(g, idx, gx, t, kh, kw, sh, sw, dh, dw, pt, pl):
    n, c = t // g.shape[1], t % g.shape[1]
    ho, wo = g.shape[2], g.shape[3]
    h, w = gx.shape[2], gx.shape[3]
    if kh == 2 and kw == 2 and sh == 2 and sw == 2 and dh == 1 and dw == 1 and pt == 0 \
            and pl == 0 and 2 * ho <= h and 2 * wo <= w:
        # the common 2x2/2 pool: each input position belongs to one window, so every one is
        # written once (the gradient or zero) with no zeroing pass and no scatter
        for a in range(ho):
            for i in range(2):
                r = 2 * a + i
                for b in range(wo):
                    k = idx[n, c, a, b]
                    v = g[n, c, a, b]
                    gx[n, c, r, 2 * b] = v if k == i else 0
                    gx[n, c, r, 2 * b + 1] = v if k == 2 + i else 0
                for q in range(2 * wo, w):
                    gx[n, c, r, q] = 0
        for r in range(2 * ho, h):
            for q in range(w):
                gx[n, c, r, q] = 0
        return
    for r in range(h):
        for q in range(w):
            gx[n, c, r, q] = 0
    for a in range(ho):
        for b in range(wo):
            k = idx[n, c, a, b]
            gx[n, c, a * sh + (k % kh) * dh - pt, b * sw + (k // kh) * dw - pl] += g[n, c, a, b]


@njit(**_o)
def s_unpool(g, idx, gx, kh, kw, sh, sw, dh, dw, pt, pl):
    for t in range(g.shape[0] * g.shape[1]):
        _unpool_task(g, idx, gx, t, kh, kw, sh, sw, dh, dw, pt, pl)


@njit(parallel=True, **_o)
def p_unpool(g, idx, gx, kh, kw, sh, sw, dh, dw, pt, pl):
    for t in prange(g.shape[0] * g.shape[1]):
        _unpool_task(g, idx, gx, np.int64(t), kh, kw, sh, sw, dh, dw, pt, pl)


def max_pool2d(buf, kernel, stride, dilation, pads, out):
    """(y (N, C, Ho, Wo), int32 idx): each window's maximum (positions outside the image take
    no part) and its window index j*KH + i (im2col's order; the first maximum row by row, as
    torch's, NaN first)."""
    n, c = buf.shape[:2]
    y = pool.empty((n, c) + tuple(out), buf.dtype)
    idx = pool.empty((n, c) + tuple(out), np.dtype(np.int32))
    if y.size:
        (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
        ct = _ctype(buf.dtype)   # float16 compares in float32: the maxima are its own values
        yc = y if ct == buf.dtype else np.empty(y.shape, ct)
        args = (np.ascontiguousarray(buf, dtype=ct), yc, idx, kh, kw, sh, sw, dh, dw, pads[0],
                pads[2])
        # compute-bound: not under the memory-bound kernels' back-off (reductions.par)
        if y.size * kh * kw >= jit.PARALLEL_MIN and n * c >= 2:
            p_maxpool(*args)
        else:
            s_maxpool(*args)
        if yc is not y:
            y[...] = yc
    return y, idx


def max_pool2d_backward(g, idx, kernel, stride, dilation, pads, size):
    """The input gradient of ``max_pool2d``: each g added at its window's maximum."""
    n, c = g.shape[:2]
    gx = pool.empty((n, c) + tuple(size), g.dtype)
    if gx.size:
        (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
        ct = _ctype(g.dtype)   # float16 sums in float32, rounded once
        gc = gx if ct == g.dtype else np.empty(gx.shape, ct)
        args = (np.ascontiguousarray(g, dtype=ct), np.ascontiguousarray(idx), gc, kh, kw, sh,
                sw, dh, dw, pads[0], pads[2])
        if gx.size >= jit.PARALLEL_MIN and n * c >= 2:
            p_unpool(*args)
        else:
            s_unpool(*args)
        if gc is not gx:
            np.copyto(gx, gc, casting="unsafe")
    return gx


KERNELS: dict = {"im2col": im2col, "col2im": col2im, "conv2d": conv2d,
                 "conv2d_backward": conv2d_backward, "max_pool2d": max_pool2d,
                 "max_pool2d_backward": max_pool2d_backward}
