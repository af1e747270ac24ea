"""Window ops beyond the Array API standard, used by grilly.nn.functional's convolution and
pooling: ``im2col`` and its adjoint ``col2im`` (the "conv" family, docs/kernels/conv.md).

Not star-imported into the grilly namespace and not differentiable by themselves (grilly.nn
wraps them in one autograd Function). A device whose backend has no "im2col"/"col2im" kernel
gets the same result composed from namespace ops on that device.
"""
from __future__ import annotations


from . import core
from .array import Array
from . import dispatch as _dispatch

__all__ = ["im2col", "col2im"]


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
