"""Training-mode batch normalization and layer normalization of the Vulkan backend
(docs/kernels/norm.md; float32, with the correctly rounded float32 sqrt and division, and
float64). A shader binds four buffers, so small vectors share an allocation:
- batch norm (shaders/nn/bnorm.comp): one workgroup per channel, forward (statistics and output
  in one dispatch) and backward (both channel sums and the input gradient in one dispatch); the
  per-channel vectors travel in one auxiliary buffer filled by small copies: [mean | invstd |
  weight | bias] forward, [mean | invstd | weight | g_w | g_b] backward;
- layer norm (shaders/nn/lnorm.comp): a workgroup per block of rows; forward writes [y | mean |
  rstd] in one dispatch; backward writes [g_x | mean | rstd | column partials] (mean and rstd
  copied in) in one dispatch, and g_w, g_b are the partials summed (one reduction)."""
from __future__ import annotations

import struct

from .kernels import assign, copy, full, new_buffer
from .memory import Buffer
from .reductions import CODES, _run, dispatch
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


LN_GROUPS = 1024   # workgroups a layer norm aims for: its rows go in blocks of ceil(M / this)


def layer_norm(x, weight, bias, eps):
    """(y, mean, rstd) of x (M, D), each row normalized, one dispatch."""
    _check("layer_norm", x)
    m, d = x.shape
    xc = _contig(x)
    out = new_buffer(x.ctx, (m * d + 2 * m,), x.dtype)
    if m:
        flags = int(weight is not None) | 2 * int(bias is not None)
        w, b = (xc if v is None else _contig(v) for v in (weight, bias))
        dispatch(x.ctx, f"lnorm_{x.dtype.name}", (0, 1), [out, xc, w, b], m, m * 256,
                 (out.offset, xc.offset, w.offset, b.offset), (m, d, 1, flags),
                 ((m * d, m * d + m, 0, *_eps_words(eps, x.dtype.name)),))
    return (_rows(out, 0, m, d, (m, d)), _rows(out, m * d, m * d + m, 1, (m,)),
            _rows(out, m * d + m, m * d + 2 * m, 1, (m,)))


def layer_norm_backward(g, x, mean, rstd, weight, need):
    """The gradients (x, weight, bias) of ``layer_norm``, None where ``need`` says no."""
    _check("layer_norm_backward", x)
    m, d = x.shape
    nx, nw, nb = (bool(v) for v in need)
    if not m:
        z = full(x.ctx, (d,), 0, x.dtype)
        return (new_buffer(x.ctx, (0, d), x.dtype) if nx else None, z if nw else None,
                z if nb else None)
    xc, gc = _contig(x), _contig(g)
    rows = -(-m // LN_GROUPS)
    groups = -(-m // rows)
    gxn = m * d if nx else 0
    out = new_buffer(x.ctx, (gxn + groups * 2 * d,), x.dtype)
    mean, rstd = _contig(mean), _contig(rstd)
    w = xc if weight is None else _contig(weight)
    flags = int(weight is not None) | 4 * int(nx)
    dispatch(x.ctx, f"lnorm_{x.dtype.name}", (1, 1), [out, xc, gc, w, mean, rstd], groups,
             groups * 256, (out.offset, xc.offset, gc.offset, w.offset), (m, d, rows, flags),
             ((mean.offset, rstd.offset, gxn, *_eps_words(0.0, x.dtype.name)),))
    gw = gb = None
    # the column sums of the partials, each into its own buffer: leaves that shared one would
    # have their .grad copied apart
    part = _rows(out, gxn, gxn + groups * 2 * d, 1, (1, groups, 2 * d))
    for i, want in ((0, nw), (1, nb)):
        if want:
            col = Buffer(part.ctx, part.alloc, part.offset + i * d, (1, groups, d),
                         (groups * 2 * d, 2 * d, 1), part.dtype)
            total = new_buffer(x.ctx, (d,), x.dtype)
            _run(col, CODES["sum"], f"red_{x.dtype.name}", total)
            gw, gb = (total, gb) if i == 0 else (gw, total)
    return (_rows(out, 0, m, d, (m, d)) if nx else None), gw, gb


KERNELS = {"batch_norm": batch_norm, "batch_norm_backward": batch_norm_backward,
           "layer_norm": layer_norm, "layer_norm_backward": layer_norm_backward}
