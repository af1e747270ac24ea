"""Training-mode batch normalization of the Vulkan backend (docs/kernels/norm.md; shader
shaders/nn/bnorm.comp): one workgroup per channel, forward (statistics and output in one
dispatch) and backward (both channel sums and the input gradient in one dispatch). The
per-channel vectors travel in one auxiliary buffer (the shader binds four buffers), filled by
small copies: [mean | invstd | weight | bias] forward, [mean | invstd | weight | g_w | g_b]
backward. float32 (the correctly rounded float32 sqrt and division) and float64."""
from __future__ import annotations

import struct

from .kernels import assign, copy, new_buffer
from .reductions import dispatch
from .snn import _rows


def _check(op: str, x) -> None:
    if x.dtype.name not in ("float32", "float64"):
        raise NotImplementedError(f"{op}: dtype {x.dtype.name} has no Vulkan kernel (float32 and "
                                  "float64 do)")
    if x.size >= 2**31:
        raise ValueError(f"{op}: {x.size} elements exceed the Vulkan backend's 2**31 limit")


def _eps_words(eps: float, name: str) -> tuple:
    if name == "float32":
        return struct.unpack("<i", struct.pack("<f", eps))
    return struct.unpack("<2i", struct.pack("<d", eps))


def _contig(b):
    return b if b.is_contiguous() else copy(b)


def batch_norm(x, weight, bias, eps):
    """(y, mean, invstd) of x (N, C, S), one workgroup per channel, one dispatch."""
    _check("batch_norm", x)
    n, c, s = x.shape
    xc = _contig(x)
    y = new_buffer(x.ctx, x.shape, x.dtype)
    aux = new_buffer(x.ctx, (4 * c,), x.dtype)
    for k, v in ((2, weight), (3, bias)):
        if v is not None:
            assign(_rows(aux, k, k + 1, c, (c,)), v)
    if c:
        flags = int(weight is not None) | 2 * int(bias is not None)
        dispatch(x.ctx, f"bnorm_{x.dtype.name}", (0, 1), [y, aux, xc, xc], c, c * 256,
                 (y.offset, aux.offset, xc.offset, xc.offset), (n, c, s, flags),
                 (_eps_words(eps, x.dtype.name),), writes=2)
    return y, _rows(aux, 0, 1, c, (c,)), _rows(aux, 1, 2, c, (c,))


def batch_norm_backward(g, x, mean, invstd, weight, need):
    """The gradients (x, weight, bias) of ``batch_norm``, None where ``need`` says no."""
    _check("batch_norm_backward", x)
    n, c, s = x.shape
    nx, nw, nb = (bool(v) for v in need)
    xc, gc = _contig(x), _contig(g)
    aux = new_buffer(x.ctx, (5 * c,), x.dtype)
    for k, v in ((0, mean), (1, invstd), (2, weight)):
        if v is not None:
            assign(_rows(aux, k, k + 1, c, (c,)), v)
    gx = new_buffer(x.ctx, x.shape, x.dtype) if nx else None
    out = gx if nx else aux
    if c:   # with no values the sums are zero, and so are g_w and g_b
        flags = int(weight is not None) | 4 * int(nx)
        dispatch(x.ctx, f"bnorm_{x.dtype.name}", (1, 1), [out, aux, xc, gc], c, c * 256,
                 (out.offset, aux.offset, xc.offset, gc.offset), (n, c, s, flags),
                 (_eps_words(0.0, x.dtype.name),), writes=2)
    return (gx, _rows(aux, 3, 4, c, (c,)) if nw else None,
            _rows(aux, 4, 5, c, (c,)) if nb else None)


KERNELS = {"batch_norm": batch_norm, "batch_norm_backward": batch_norm_backward}
