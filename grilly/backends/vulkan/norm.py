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

from .kernels import _view, assign, copy, full, new_buffer
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


def _eps2(eps: float, name: str) -> tuple:
    """eps as two words (float32: its bits, then 0), so the words after it keep their slots."""
    return (_eps_words(eps, name) + (0,))[:2]


def _contig(b):
    return b if b.is_contiguous() else copy(b)


def batch_norm(x, weight, bias, eps):
    """(y, mean, invstd) of x (N, C, S), one workgroup per channel, one dispatch."""
    _check("batch_norm", x)
    n, c, s = x.shape
    xc = _contig(x)
    y = new_buffer(x.ctx, x.shape, x.dtype)
    aux = new_buffer(x.ctx, (2 * c,), x.dtype)   # [mean | invstd]
    if c:
        flags = int(weight is not None) | 2 * int(bias is not None)
        w, b = (xc if v is None else _contig(v) for v in (weight, bias))
        dispatch(x.ctx, f"bnorm_{x.dtype.name}", (0, 1), [y, aux, xc, w, b], c, c * 256,
                 (y.offset, aux.offset, xc.offset, w.offset), (n, c, s, flags),
                 ((*_eps2(eps, x.dtype.name), b.offset),), writes=2)
    return y, _rows(aux, 0, 1, c, (c,)), _rows(aux, 1, 2, c, (c,))


def batch_norm_backward(g, x, mean, invstd, weight, need):
    """The gradients (x, weight, bias) of ``batch_norm``, None where ``need`` says no."""
    _check("batch_norm_backward", x)
    n, c, s = x.shape
    nx, nw, nb = (bool(v) for v in need)
    xc, gc = _contig(x), _contig(g)
    mean, invstd = _contig(mean), _contig(invstd)
    w = xc if weight is None else _contig(weight)
    # g_w and g_b in buffers of their own: two parameters' gradients sharing one allocation
    # would each be copied when taken as .grad
    gw, gb = new_buffer(x.ctx, (c,), x.dtype), new_buffer(x.ctx, (c,), x.dtype)
    gx = new_buffer(x.ctx, x.shape, x.dtype) if nx else None
    out = gx if nx else gw
    if c:   # with no values the sums are zero, and so are g_w and g_b
        flags = int(weight is not None) | 4 * int(nx)
        words = _eps2(0.0, x.dtype.name)
        dispatch(x.ctx, f"bnorm_{x.dtype.name}", (1, 1),
                 [out, gw, xc, gc, gb, mean, invstd, w], c, c * 256,
                 (out.offset, gw.offset, xc.offset, gc.offset), (n, c, s, flags),
                 ((*words, gb.offset, mean.offset, invstd.offset), (w.offset,)), writes=5)
    return gx, gw if nw else None, gb if nb else None


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
    part = _rows(out, gxn, gxn + groups * 2 * d, 1, (1, groups, 2 * d))

    def column_sum(i: int):
        # each into its own buffer: leaves that shared one would have their .grad copied apart
        total = new_buffer(x.ctx, (d,), x.dtype)
        col = _view(part, part.offset + i * d, (1, groups, d), (groups * 2 * d, 2 * d, 1))
        _run(col, CODES["sum"], f"red_{x.dtype.name}", total)
        return total

    return ((_rows(out, 0, m, d, (m, d)) if nx else None), column_sum(0) if nw else None,
            column_sum(1) if nb else None)


def batch_norm_update(running_mean, running_var, mean, invstd, momentum, eps, n) -> None:
    """The running statistics updated in place from a batch's mean and invstd (bnorm.comp's
    OP 2): one dispatch where the composition takes ten elementwise ops and two copies."""
    _check("batch_norm_update", running_mean)
    c = running_mean.shape[0]
    bufs = [running_mean, running_var, _contig(mean), _contig(invstd)]
    if any(b.dtype is not running_mean.dtype for b in bufs):
        raise TypeError("batch_norm_update: every buffer must have running_mean's dtype "
                        f"{running_mean.dtype.name}")
    if not c:
        return
    work = [b if b.is_contiguous() else copy(b) for b in bufs[:2]]
    m = float(momentum)
    vals = (1.0 - m, m, float(eps), n / (n - 1))
    fmt = "<4f" if running_mean.dtype.name == "float32" else "<4d"
    words = struct.unpack(f"<{struct.calcsize(fmt) // 4}i", struct.pack(fmt, *vals))
    dispatch(running_mean.ctx, f"bnorm_{running_mean.dtype.name}", (2, 1), [*work, *bufs[2:]],
             c, c, tuple(b.offset for b in (*work, *bufs[2:])), (1, c),
             (words[:5], words[5:]), writes=2)
    for b, w in zip(bufs[:2], work):
        if w is not b:
            assign(b, w)


KERNELS = {"batch_norm": batch_norm, "batch_norm_backward": batch_norm_backward,
           "batch_norm_update": batch_norm_update,
           "layer_norm": layer_norm, "layer_norm_backward": layer_norm_backward}
