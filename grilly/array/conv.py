"""Window ops beyond the Array API standard, used by grilly.nn.functional's convolution and
pooling: ``im2col`` and its adjoint ``col2im``, the whole 2-D convolution (``conv2d``,
``conv2d_backward``) and max pooling (``max_pool2d``, ``max_pool2d_backward``) (the "conv"
family, docs/kernels/conv.md).

Not star-imported into the grilly namespace and not differentiable by themselves (grilly.nn
wraps them in autograd Functions). A device whose backend lacks one of these kernels gets the
same result composed from namespace ops on that device (conv2d: im2col and one batched matmul).
"""
from __future__ import annotations


from . import core
from .array import Array
from . import dispatch as _dispatch

__all__ = ["im2col", "col2im", "conv2d", "conv2d_backward", "max_pool2d", "max_pool2d_backward"]

_CONV_DTYPES = frozenset({"float32", "float64"})   # what the conv2d kernels take (the contract)
_POOL_DTYPES = frozenset({"float16", "float32", "float64"})   # and the max_pool2d kernels


def _ns():
    return _dispatch.ns


def _windows(x: Array, kernel, stride, dilation, out) -> Array:
    gp = _ns()
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, stride, dilation, out
    views = [x[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh, j * dw:j * dw + sw * (wo - 1) + 1:sw]
             for j in range(kw) for i in range(kh)]
    return gp.expand_dims(views[0], axis=2) if len(views) == 1 else gp.stack(views, axis=2)


def _col2im_axis(g: Array, k: int, s: int, d: int, n: int) -> Array:
    """Adjoint of taking ``k`` windows (stride ``s``, dilation ``d``) along one axis:
    ``g`` (B, k, o, E) -> (B, n, E) with ``out[:, i*s + j*d] += g[:, j, i]``."""
    gp = _ns()
    b, _, o, e = g.shape
    z = dict(dtype=g.dtype, device=g.device)
    if s > 1:
        # window starts land s apart: interleave s-1 zero rows after each
        g = gp.stack([g] + [gp.zeros((b, k, o, e), **z)] * (s - 1), axis=3)
        g = gp.reshape(g, (b, k, o * s, e))[:, :, :(o - 1) * s + 1]
    r = g.shape[2]
    if k == 1:
        g, t = gp.reshape(g, (b, r, e)), r
    else:
        # skew: give each of the k rows k*d trailing zeros, flatten, and re-read it with rows d
        # shorter, so row j comes out shifted by j*d (what wraps in is the zeros); then one sum
        t = r + (k - 1) * d
        g = gp.concat([g, gp.zeros((b, k, k * d, e), **z)], axis=2)
        g = gp.reshape(gp.reshape(g, (b, k * (r + k * d) * e))[:, :k * t * e], (b, k, t, e))
        g = gp.sum(g, axis=1)
    return g if n == t else gp.concat([g, gp.zeros((b, n - t, e), **z)], axis=1)


def _pad(x: Array, pads, fill) -> Array:
    gp = _ns()
    pt, pb, pl, pr = pads
    for ax, lo, hi in ((2, pt, pb), (3, pl, pr)):
        parts = []
        for m in (lo, hi):
            shp = list(x.shape)
            shp[ax] = m
            parts.append(gp.full(tuple(shp), fill, dtype=x.dtype, device=x.device) if m else None)
        if lo or hi:
            x = gp.concat([a for a in (parts[0], x, parts[1]) if a is not None], axis=ax)
    return x


def im2col(x: Array, kernel: tuple, stride: tuple, dilation: tuple, pads: tuple, fill: float,
           out: tuple, channel_major: bool = False) -> Array:
    """The kernel windows of (N, C, H, W) padded by ``pads`` (top, bottom, left, right) with
    ``fill``: (N, C, KW*KH, Ho, Wo), kw-major, or (C, KW*KH, N, Ho, Wo) with ``channel_major``
    (the layout whose (C*KW*KH, N*Ho*Wo) reshape is one matmul operand)."""
    k = x._device.kernels.get("im2col")
    if k is not None:
        buf = k(x._buf, kernel, stride, dilation, pads, fill, out, channel_major)
        return core.wrap(buf, x._dtype, x._device)
    xp = _pad(x, pads, fill) if any(pads) else x
    cols = _windows(xp, kernel, stride, dilation, out)
    return _ns().permute_dims(cols, (1, 2, 0, 3, 4)) if channel_major else cols


def col2im(g: Array, kernel: tuple, stride: tuple, dilation: tuple, pads: tuple,
           size: tuple, channel_major: bool = False) -> Array:
    """Adjoint of ``im2col``: window values (N, C, KW*KH, Ho, Wo) (or (C, KW*KH, N, Ho, Wo) with
    ``channel_major``) summed onto the (N, C, H, W) image of ``size`` (H, W); what falls on
    the padding is dropped."""
    k = g._device.kernels.get("col2im")
    if k is not None:
        buf = k(g._buf, kernel, stride, dilation, pads, size, channel_major)
        return core.wrap(buf, g._dtype, g._device)
    gp = _ns()
    if channel_major:
        g = gp.permute_dims(g, (2, 0, 1, 3, 4))
    n, c, _, ho, wo = g.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    pt, pb, pl, pr = pads
    h, w = size[0] + pt + pb, size[1] + pl + pr
    g = _col2im_axis(gp.reshape(g, (n * c * kw, kh, ho, wo)), kh, sh, dh, h)  # (n c kw, h, wo)
    if kw > 1:
        g = gp.permute_dims(gp.reshape(g, (n * c, kw, h, wo)), (0, 2, 1, 3))
    g = gp.reshape(_col2im_axis(gp.reshape(g, (n * c * h, kw, wo, 1)), kw, sw, dw, w), (n, c, h, w))
    return g[:, :, pt:pt + size[0], pl:pl + size[1]] if (h, w) != tuple(size) else g


def conv2d(x: Array, w: Array, bias: Array | None, stride: tuple, dilation: tuple, pads: tuple,
           groups: int, out: tuple) -> Array:
    """The cross-correlation of x (N, C, H, W) with w (O, C/groups, KH, KW), padded by ``pads``
    (top, bottom, left, right) with zeros, plus bias (O,): (N, O, Ho, Wo) with ``out`` = (Ho, Wo).
    x, w and bias share one real floating dtype and device (the caller checked the geometry)."""
    dev = x._device
    k = dev.kernels.get("conv2d")
    if k is not None and core.kernel_takes(k, x._dtype, _CONV_DTYPES):
        buf = k(x._buf, w._buf, None if bias is None else bias._buf, stride, dilation, pads,
                groups, out)
        return core.wrap(buf, x._dtype, dev)
    return core.composite(dev, "conv2d")(dev, x, w, bias, stride, dilation, pads, groups, out)


def conv2d_backward(g: Array, x: Array, w: Array, stride: tuple, dilation: tuple, pads: tuple,
                    groups: int, need: tuple, grad_dtype=None) -> tuple:
    """The gradients (of x, of w, of the bias) of ``conv2d`` for the output gradient g, each
    None where ``need`` (three bools) does not ask for it. ``grad_dtype`` float32 with float16
    operands gives the weight and bias gradients in float32 (autocast's float32 master
    weights): computed there by a kernel that declares ``takes_grad_dtype``, else cast."""
    gd, wide = core.grad_dtype("conv2d_backward", x, grad_dtype)
    need = tuple(bool(v) for v in need)
    dev = x._device
    k = dev.kernels.get("conv2d_backward")
    if k is not None and core.kernel_takes(k, x._dtype, _CONV_DTYPES) and (
            not wide or getattr(k, "takes_grad_dtype", False)):
        args = (g._buf, x._buf, w._buf, stride, dilation, pads, groups, need)
        bufs = k(*args, gd) if wide else k(*args)
        return tuple(None if b is None else core.wrap(b, d, dev)
                     for b, d in zip(bufs, (x._dtype, gd, gd)))
    comp = core.composite(dev, "conv2d_backward")
    if not wide:
        return comp(dev, g, x, w, stride, dilation, pads, groups, need)
    gp = _ns()
    gx, gw, _ = comp(dev, g, x, w, stride, dilation, pads, groups, need[:2] + (False,))
    return (gx, None if gw is None else gp.astype(gw, gd),
            gp.sum(g, axis=(0, 2, 3), dtype=gd) if need[2] else None)


def _flat_weight(w: Array, groups: int) -> Array:
    """w (O, C/g, KH, KW) as (g, O/g, C/g*KW*KH), its window axes in im2col's kw-major order."""
    gp = _ns()
    o, cg, kh, kw = w.shape
    wt = gp.permute_dims(w, (0, 1, 3, 2)) if kh > 1 and kw > 1 else w
    return gp.reshape(wt, (groups, o // groups, cg * kh * kw))


def composed_conv2d(x: Array, w: Array, bias, stride, dilation, pads, groups, out) -> Array:
    """conv2d as one GEMM per group: the (O/g, C/g*K) weight times the channel-major windows
    (C/g*K, N*Ho*Wo) of the whole batch, then the (O, N, Ho*Wo) product laid out as
    (N, O, Ho, Wo)."""
    gp = _ns()
    n, o = x.shape[0], w.shape[0]
    cols = im2col(x, tuple(w.shape[2:]), stride, dilation, pads, 0.0, out, True)
    y = gp.matmul(_flat_weight(w, groups), gp.reshape(cols, (groups, -1, n * out[0] * out[1])))
    y = gp.permute_dims(gp.reshape(y, (o, n) + tuple(out)), (1, 0, 2, 3))
    return y if bias is None else y + gp.reshape(bias, (1, o, 1, 1))


def composed_conv2d_backward(g: Array, x: Array, w: Array, stride, dilation, pads, groups,
                             need, *, take=None, put=None) -> tuple:
    """conv2d's gradients from namespace ops, one GEMM per group each (the batch folded into
    the GEMM's K for the weight, into its N for the input): the bias's a sum, the weight's the
    output gradient times the (recomputed, channel-major) windows, the input's the weight
    times the output gradient, then col2im. ``take`` and ``put`` stand for im2col and col2im
    where given (grilly.nn's autograd nodes: a gradient that is itself differentiable)."""
    gp = _ns()
    take, put = take or im2col, put or col2im
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    ho, wo = g.shape[2:]
    # (O, N, Ho*Wo) per group: the layout of the channel-major windows' columns
    g3 = gp.reshape(gp.permute_dims(g, (1, 0, 2, 3)), (groups, o // groups, n * ho * wo))
    gx = gw = gb = None
    if need[2]:
        gb = gp.sum(g, axis=(0, 2, 3))
    if need[1]:
        cols = gp.reshape(take(x, (kh, kw), stride, dilation, pads, 0.0, (ho, wo), True),
                          (groups, cg * kh * kw, n * ho * wo))
        gw = gp.reshape(gp.matmul(g3, gp.matrix_transpose(cols)), (o, cg, kw, kh))
        gw = gp.permute_dims(gw, (0, 1, 3, 2)) if kh > 1 and kw > 1 else gp.reshape(gw, w.shape)
    if need[0]:
        gcols = gp.matmul(gp.matrix_transpose(_flat_weight(w, groups)), g3)
        gx = put(gp.reshape(gcols, (c, kh * kw, n, ho, wo)), (kh, kw), stride, dilation, pads,
                 tuple(x.shape[2:]), True)
    return gx, gw, gb


def max_pool2d(x: Array, kernel: tuple, stride: tuple, dilation: tuple, pads: tuple,
               out: tuple) -> tuple:
    """(y, idx) for x (N, C, H, W): each window's maximum, (N, C, Ho, Wo), and int32 idx, its
    window index j*KH + i (im2col's kw-major order) of the first maximum row by row (torch's
    choice among ties, so gradients go where torch's do; a NaN before all).
    Positions in ``pads`` take no part (every window holds an image position)."""
    dev = x._device
    k = dev.kernels.get("max_pool2d")
    if k is not None and core.kernel_takes(k, x._dtype, _POOL_DTYPES):
        y, idx = k(x._buf, kernel, stride, dilation, pads, out)
        return core.wrap(y, x._dtype, dev), core.wrap(idx, _dispatch.ns.int32, dev)
    return core.composite(dev, "max_pool2d")(dev, x, kernel, stride, dilation, pads, out)


def max_pool2d_backward(g: Array, idx: Array, kernel: tuple, stride: tuple, dilation: tuple,
                        pads: tuple, size: tuple) -> Array:
    """The input gradient (N, C, H, W) of ``max_pool2d``: each of g (N, C, Ho, Wo) added at
    the position its idx names; ``size`` = (H, W)."""
    dev = g._device
    k = dev.kernels.get("max_pool2d_backward")
    if k is not None and core.kernel_takes(k, g._dtype, _POOL_DTYPES):
        return core.wrap(k(g._buf, idx._buf, kernel, stride, dilation, pads, size), g._dtype, dev)
    return core.composite(dev, "max_pool2d_backward")(dev, g, idx, kernel, stride, dilation,
                                                      pads, size)


def composed_max_pool2d(x: Array, kernel, stride, dilation, pads, out) -> tuple:
    """im2col with -inf outside the image, then max and argmax over the windows (NaN wins both:
    the same value as take_along_axis at the argmax, with no host-side index check); the
    argmax over the window in row-major order (the first maximum as torch's), named in
    im2col's kw-major index."""
    gp = _ns()
    kh, kw = kernel
    cols = im2col(x, kernel, stride, dilation, pads, float("-inf"), out)
    n, c = cols.shape[:2]
    rows = gp.reshape(gp.permute_dims(gp.reshape(cols, (n, c, kw, kh) + tuple(out)),
                                      (0, 1, 3, 2, 4, 5)), (n, c, kh * kw) + tuple(out))
    r = gp.argmax(rows, axis=2)
    # row-major position t -> im2col's j*KH + i, through a table (a gather: a required kernel)
    table = gp.asarray([(t % kw) * kh + t // kw for t in range(kh * kw)], dtype=gp.int32,
                       device=x.device)
    return gp.max(cols, axis=2), gp.reshape(gp.take(table, gp.reshape(r, (-1,))), r.shape)


def composed_max_pool2d_backward(g: Array, idx: Array, kernel, stride, dilation, pads,
                                 size) -> Array:
    """g spread onto the windows by a one-hot of idx, then col2im."""
    gp = _ns()
    kk = kernel[0] * kernel[1]
    ks = gp.reshape(gp.arange(kk, dtype=gp.int32, device=g.device), (1, 1, kk, 1, 1))
    hot = gp.expand_dims(idx, axis=2) == ks
    gcols = gp.where(hot, gp.expand_dims(g, axis=2), gp.zeros((), dtype=g.dtype, device=g.device))
    return col2im(gcols, kernel, stride, dilation, pads, size)


# through the dispatcher (as "conv.<name>"): bfloat16 arrays compute in float32 there, unless
# the device's backend runs the op on bfloat16 itself (grilly/array/bfloat16.py DEVICE_NATIVE)
_dispatch.export(globals(), "conv.")
