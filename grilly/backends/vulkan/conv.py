"""im2col / col2im kernels of the Vulkan backend (docs/kernels/conv.md; shader
shaders/nn/conv.comp), with the CPU backend's calling conventions, and max pooling with its
backward (shaders/nn/pool.comp).

One invocation per output element: im2col reads its input through the view's strides, so a
permuted or sliced image costs no copy; col2im gathers, per image pixel, the window entries that
read it (no float atomics, so the sums are deterministic and in the CPU kernel's order).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .kernels import _view, astype, copy, new_buffer, permute, reshape
from .linalg import TILE, _add, _coop, _matmul, _tiled_bias_ok, matmul, matmul4_into
from .reductions import KERNELS as _REDUCTIONS
from .reductions import dispatch
from .variants import CONV_DW_DTYPES

_DTYPES = {"float16", "bfloat16", "float32", "float64"}
_sum = _REDUCTIONS["sum"]
_LIMIT = 2**31  # the shader indexes with 32-bit ints


def _check(op: str, buf, size: int) -> None:
    if buf.dtype.name not in _DTYPES:
        raise NotImplementedError(
            f"{op}: dtype {buf.dtype.name} is not supported on Vulkan device "
            f"{buf.ctx.phys.name!r}; expected float16, bfloat16, float32 or float64")
    if size >= _LIMIT or buf.alloc.size // buf.dtype.itemsize >= _LIMIT:
        raise ValueError(f"{op}: more than 2**31 elements exceed the Vulkan backend's limit")


def _fill_bits(fill: float, dtype) -> tuple:
    """``fill`` as the signed 32-bit words the shader rebuilds it from (float16, bfloat16:
    float32 bits of the 16-bit value, rounded as the CPU kernel rounds it)."""
    # cached: the numpy conversion costs microseconds and every im2col asks (repr keys -0.0
    # apart from 0.0, and NaN)
    key = (dtype.name, type(fill), repr(fill))
    words = _FILL_BITS.get(key)
    if words is None:
        with np.errstate(over="ignore"):
            if dtype.name == "float64":
                words = tuple(int(w) for w in np.array([fill], np.float64).view(np.int32))
            else:
                v = np.float32(fill)
                words = ()
                if dtype.name in ("float16", "bfloat16"):
                    h = np.array([v]).astype(dtype.np)   # (rounded as the CPU kernel rounds)
                    v = np.float32(h[0])
                    words = (int(h.view(np.uint16)[0]),)   # its own bits: im2col moves raw bits
                words = (int(np.array([v]).view(np.int32)[0]),) + words
        if len(_FILL_BITS) >= 256:
            _FILL_BITS.clear()
        _FILL_BITS[key] = words
    return words


_FILL_BITS: dict = {}   # (dtype name, fill's type, repr(fill)) -> words
_SIXTEEN = {"float16", "bfloat16"}   # im2col: eight 16-bit outputs in one 16-byte store
_PAIRS = {"bfloat16", "float32"}     # col2im: two pixels per invocation (conv.comp)


def _run(op: int, cm: bool, out, src, image: tuple, kernel, stride, dilation, pads, hw,
         src_strides, fill_words=(), khm: bool = False) -> None:
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, stride, dilation, hw
    # im2col: VEC outputs of a row per invocation, one vector store (16-bit: 8 where rows
    # split into eights); col2im: pixel pairs (bfloat16, float32) where image rows are even
    # (conv.comp). The output is a fresh buffer: its offset a multiple of VEC.
    name = src.dtype.name
    if op == 0:
        vec = (8 if wo % 8 == 0 and name in _SIXTEEN else 4 if wo % 4 == 0 else 1)
    else:
        vec = 2 if image[3] % 2 == 0 and name in _PAIRS else 1
    if out.offset % vec:
        vec = 1
    n = out.size // vec
    spec = (op, 1, int(cm), vec) + ((1,) if khm else ())   # (KHM: kh-major windows)
    dispatch(src.ctx, f"conv_{name}", spec, [out, src], n,
             n, (out.offset, src.offset), (*image, kh),
             (src_strides, (kw, sh, sw, dh, dw), (pads[0], pads[2], ho, wo, *fill_words[:1]),
              tuple(fill_words[1:])))


def im2col(buf, kernel, stride, dilation, pads, fill, out, channel_major=False):
    """(N, C, H, W) -> (N, C, KW*KH, Ho, Wo) windows, kw-major, or (C, KW*KH, N, Ho, Wo) with
    ``channel_major``; outside the image is ``fill``."""
    return _im2col(buf, kernel, stride, dilation, pads, fill, out, channel_major, False)


def col2im(buf, kernel, stride, dilation, pads, size, channel_major=False):
    """Adjoint of ``im2col``: window values (N, C, KW*KH, Ho, Wo) (or (C, KW*KH, N, Ho, Wo)
    with ``channel_major``) summed onto (N, C, H, W); what falls on the padding is dropped."""
    return _col2im(buf, kernel, stride, dilation, pads, size, channel_major, False)


def _im2col(buf, kernel, stride, dilation, pads, fill, out, channel_major, khm):
    """im2col, with the windows kh-major where ``khm`` (this backend's conv2d: its weight is
    then a GEMM operand as stored)."""
    n, c, h, w = buf.shape
    k = kernel[0] * kernel[1]
    shape = (c, k, n, *out) if channel_major else (n, c, k, *out)
    _check("im2col", buf, n * c * k * out[0] * out[1])
    res = new_buffer(buf.ctx, shape, buf.dtype)
    if res.size:
        _run(0, channel_major, res, buf, (n, c, h, w), kernel, stride, dilation, pads, out,
             buf.strides, _fill_bits(fill, buf.dtype), khm)
    return res


def _col2im(buf, kernel, stride, dilation, pads, size, channel_major, khm):
    """col2im, of kh-major windows where ``khm``."""
    st = buf.strides
    if channel_major:
        c, _, n, ho, wo = buf.shape
        st = (st[2], st[0], st[1], st[3], st[4])   # the shader reads (n, c, k, a, b) strides
    else:
        n, c, _, ho, wo = buf.shape
    _check("col2im", buf, n * c * size[0] * size[1])
    res = new_buffer(buf.ctx, (n, c, *size), buf.dtype)
    if res.size:
        _run(1, False, res, buf, (n, c, *size), kernel, stride, dilation, pads, (ho, wo), st,
             khm=khm)
    return res


def _pool_geom(kernel, stride, dilation, pads) -> tuple:
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    return (kh, kw, sh, sw, dh), (dw, pads[0], pads[2])   # pc.st[0..7], in rows of MAXD


def _pool_check(op: str, buf, size: int) -> None:
    if buf.dtype.name not in _DTYPES:
        raise NotImplementedError(f"{op}: dtype {buf.dtype.name} has no Vulkan kernel (float16, "
                                  "bfloat16, float32 and float64 do)")
    _check(op, buf, size)


def max_pool2d(buf, kernel, stride, dilation, pads, out):
    """(y (N, C, Ho, Wo), int32 idx): each window's maximum (padding takes no part) and its
    window index j*KH + i, kw-major, the first maximum (NaN first); one dispatch."""
    n, c, h, w = buf.shape
    ho, wo = out
    _pool_check("max_pool2d", buf, buf.size)
    x = buf if buf.is_contiguous() else copy(buf)
    y = new_buffer(buf.ctx, (n, c, ho, wo), buf.dtype)
    idx = new_buffer(buf.ctx, (n, c, ho, wo), _dt.int32)
    # the 2x2/2 pool (no padding, no dilation) on 16- or 32-bit elements, W a multiple of 4:
    # pairs of outputs per invocation, one load a row of their windows (pool.comp)
    vec = 2 if (_pairs(kernel, stride, dilation, pads, buf.dtype) and w % 4 == 0
                and (ho, wo) == (h // 2, w // 2) and x.offset % 4 == 0) else 1
    if y.size:
        m = y.size // vec
        dispatch(x.ctx, f"pool_{buf.dtype.name}", (0, 1, 0, vec), [y, idx, x], m, m,
                 (y.offset, idx.offset, x.offset), (n * c, h, w, ho, wo),
                 _pool_geom(kernel, stride, dilation, pads), writes=2)
    return y, idx


def _pairs(kernel, stride, dilation, pads, dtype) -> bool:
    """Whether a max pool is the 2x2/2 one without padding or dilation on 16- or 32-bit
    elements, whose kernels take pairs (pool.comp's VEC 2)."""
    return (tuple(kernel) == (2, 2) and tuple(stride) == (2, 2) and tuple(dilation) == (1, 1)
            and not any(pads) and dtype.name != "float64")


def max_pool2d_backward(g, idx, kernel, stride, dilation, pads, size):
    """The input gradient of ``max_pool2d``: per image position, the gradients of the windows
    whose maximum it was (a gather, one dispatch)."""
    n, c, ho, wo = g.shape
    h, w = size
    _pool_check("max_pool2d_backward", g, n * c * h * w)
    gc = g if g.is_contiguous() else copy(g)
    ic = idx if idx.dtype is _dt.int32 else astype(idx, _dt.int32)
    ic = ic if ic.is_contiguous() else copy(ic)
    gx = new_buffer(g.ctx, (n, c, h, w), g.dtype)
    # the 2x2/2 pool (no padding, no dilation) on 16- or 32-bit elements, W even: pairs of
    # positions per invocation, one store each (pool.comp)
    vec = 2 if (w % 2 == 0 and _pairs(kernel, stride, dilation, pads, g.dtype)
                and gx.offset % 2 == 0) else 1
    if gx.size:
        m = gx.size // vec
        dispatch(g.ctx, f"pool_{g.dtype.name}", (1, 1, 0, vec), [gx, ic, gc], m, m,
                 (gx.offset, ic.offset, gc.offset), (n * c, h, w, ho, wo),
                 _pool_geom(kernel, stride, dilation, pads))
    return gx


def conv2d(x, w, bias, stride, dilation, pads, groups, out):
    """(N, O, Ho, Wo): the channel-major windows of x (im2col, kh-major: the weight (O, C/g, KH,
    KW) is the GEMM's other operand as stored) times the weight. float32 with one group, window
    rows and Ho*Wo multiples of 4: one sgemm per image batch (two batch levels: the images, the
    weight shared) writing (N, O, Ho*Wo) directly, the bias in its epilogue; other float32 ones
    (ragged window rows or pixels) the same on the generic tiled shader; otherwise one GEMM
    per group over the whole batch, then the (O, N) -> (N, O) layout and the bias in one
    elementwise pass (the array layer's composition, with the windows kh-major)."""
    n = x.shape[0]
    o, cg, kh, kw = w.shape
    ho, wo = out
    hw, ck = ho * wo, cg * kh * kw
    cols = _im2col(x, (kh, kw), stride, dilation, pads, 0.0, out, True, True)
    wt = _flat_weight(w, groups)
    if groups == 1 and n and hw and o:
        res = new_buffer(x.ctx, (n, o, ho, wo), x.dtype)
        a = _view(wt, wt.offset, (n, 1, o, ck), (0, 0, wt.strides[1], wt.strides[2]))
        b = _view(cols, cols.offset, (n, 1, ck, hw), (hw, 0, n * hw, 1))
        dst = _view(res, res.offset, (n, 1, o, hw), (o * hw, 0, hw, 1))
        if matmul4_into(dst, a, b, bias):
            return res
        if x.dtype is _dt.float32:
            # window rows or Ho*Wo not multiples of 4 (a first layer's 3 x 3 x 3 windows): the
            # generic tiled shader, batched over the images the same way (the weight shared,
            # each image's columns a strided view), the bias per row in its epilogue; one
            # dispatch where the product, the layout and the bias took two
            a3 = _view(wt, wt.offset, (n, o, ck), (0, wt.strides[1], wt.strides[2]))
            b3 = _view(cols, cols.offset, (n, ck, hw), (hw, n * hw, 1))
            tiles = n * -(-o // TILE) * -(-hw // TILE)
            ops, spec, offs = [res, a3, b3], (0, 1), (res.offset, a3.offset, b3.offset)
            if _tiled_bias_ok(bias, x.dtype):
                ops, spec, offs = ops + [bias], (0, 1, 2), offs + (bias.offset,)
            dispatch(x.ctx, "mm_tiled_float32", spec, ops, 0, tiles * 256, offs, (n, o, hw, ck),
                     (a3.strides, b3.strides))
            if len(ops) == 3 and bias is not None:
                return _add(res.shape, res.dtype, res, reshape(bias, (1, o, 1, 1)))
            return res
    y = _matmul((groups, o // groups, n * hw), x.dtype, wt,
                reshape(cols, (groups, ck, n * hw)), None)
    y = permute(reshape(y, (o, n, ho, wo)), (1, 0, 2, 3))
    if bias is None:
        return copy(y)
    return _add((n, o, ho, wo), x.dtype, y, reshape(bias, (1, o, 1, 1)))


def _flat_weight(w, groups: int):
    """w (O, C/g, KH, KW) as (g, O/g, C/g*KH*KW): kh-major windows (khm), no copy of a
    contiguous weight."""
    o, cg, kh, kw = w.shape
    return reshape(w, (groups, o // groups, cg * kh * kw))


def conv2d_backward(g, x, w, stride, dilation, pads, groups, need, grad_dtype=None):
    """The gradients (x, w, bias) of ``conv2d``: the array layer's composition
    (grilly.array.conv.composed_conv2d_backward) on buffers with the windows kh-major (the
    weight and its gradient are GEMM operands as stored: no copies): the bias's a sum, the
    weight's the output gradient times the recomputed channel-major windows (one GEMM per
    group, the batch in its K), the input's the weight times the output gradient, then
    col2im. The weight gradient comes back contiguous. ``grad_dtype`` float32 for float16
    operands (autocast's master weights): the weight and bias gradients in float32, from the
    tensor-core product's float32 accumulators where the device has them (else rounded to
    float16 and widened) and a float32 sum."""
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    ho, wo = g.shape[2:]
    m, ck = n * ho * wo, cg * kh * kw
    gd = g.dtype if grad_dtype is None else grad_dtype
    gx = gw = gb = None
    if need[1] and groups == 1 and _small_dw(g, o, ck, m, gd):
        # (a first layer's gradient: g read as it is, no (O, N*P) copy, the bias's with it)
        cols = _im2col(x, (kh, kw), stride, dilation, pads, 0.0, (ho, wo), True, True)
        gw, gb = _dw_small(g, cols, (o, ck, n, ho * wo), gd, w.shape)
        gb = gb if need[2] else None
        if not need[0]:
            return gx, gw, gb
        need = (need[0], False, False)
    g3 = reshape(permute(g, (1, 0, 2, 3)), (groups, o // groups, m))
    if need[2]:
        # the rows of g3 (laid out for the products anyway): no copy of g for the sum
        gb = reshape(_sum(g3, (2,), False, gd), (o,))
    if need[1]:
        cols = reshape(_im2col(x, (kh, kw), stride, dilation, pads, 0.0, (ho, wo), True, True),
                       (groups, ck, m))
        direct = gd is g.dtype or _coop(g)
        gw = reshape(matmul((groups, o // groups, ck), gd if direct else g.dtype, g3,
                            permute(cols, (0, 2, 1))), w.shape)
        if not direct:
            gw = astype(gw, gd)
    if need[0]:
        gcols = matmul((groups, ck, m), g.dtype, permute(_flat_weight(w, groups), (0, 2, 1)), g3)
        gx = _col2im(reshape(gcols, (c, kh * kw, n, ho, wo)), (kh, kw), stride, dilation, pads,
                     tuple(x.shape[2:]), True, True)
    return gx, gw, gb


_DW = frozenset(CONV_DW_DTYPES)   # conv_dw variants (operands, gradients)
DW_MAX_TILES = 8    # conv_dw's 64 x 32 tiles of (O, CK + 1): a small gradient
DW_MIN_K = 2048     # and a long K (N * Ho * Wo), else the GEMM
DW_KS = 1024        # K per slice at most (whole 32-steps)
DW_WORKGROUPS = 512   # slices x tiles aimed at: a few waves of workgroups on a large GPU


def _small_dw(g, o: int, ck: int, m: int, gd) -> bool:
    """Whether ``conv_dw.comp`` takes this weight gradient: few output tiles, a long K, g
    contiguous, a dtype pair it has."""
    tiles = -(-o // 64) * -(-(ck + 1) // 32)
    # 16-bit operands on tensor cores: the product (H200, cnn32's first layer in bfloat16:
    # 121 us on them, 180-200 here; float32 190-195 here against 160 and a 70 us copy of g)
    return (tiles <= DW_MAX_TILES and m >= DW_MIN_K and (g.dtype.name, gd.name) in _DW
            and (g.dtype is _dt.float32 or not _coop(g))
            and g.is_contiguous() and m * max(o, ck + 1) < _LIMIT)


def _dw_small(g, cols, dims: tuple, gd, wshape: tuple) -> tuple:
    """(weight gradient (wshape), bias gradient (O,)) in dtype ``gd`` from g (N, O, Ho, Wo) and
    the channel-major windows cols (CK, N*Ho*Wo): K slices summed into float32 partials,
    then their sum in slice order (conv_dw.comp)."""
    o, ck, n, p = dims
    m = n * p
    tiles_c = -(-(ck + 1) // 32)
    tiles = -(-o // 64) * tiles_c
    slices = max(1, min(-(-m // DW_KS), max(1, DW_WORKGROUPS // tiles)))
    per = -(-m // slices)
    ks = -(-per // 32) * 32      # whole 32-deep steps; the last slice may be short
    slices = -(-m // ks)
    variant = f"conv_dw_{g.dtype.name}_{gd.name}"
    shape = (o, ck, n, p, slices)
    part = new_buffer(g.ctx, (slices, o, ck + 1), _dt.float32)
    dispatch(g.ctx, variant, (0, 1), [part, g, cols], 0, slices * tiles * 256,
             (part.offset, g.offset, cols.offset), shape, ((ks, tiles_c),))
    gw = new_buffer(g.ctx, wshape, gd)
    gb = new_buffer(g.ctx, (o,), gd)
    items = o * (ck + 1)
    dispatch(g.ctx, variant, (1, 1), [gw, gb, part], items, items,
             (gw.offset, gb.offset, part.offset), shape, ((ks, tiles_c),), writes=2)
    return gw, gb


# autocast's float16 and bfloat16 convolutions and pools: the same windows (conv_float16,
# conv_bfloat16: its bits, float32 registers) and products (tensor cores where the device has
# them, else sgemm.comp's 16-bit variants), without the composition's weight and gradient copies
# and (bfloat16) float32 casts
for _k in (conv2d, conv2d_backward, max_pool2d, max_pool2d_backward):
    _k.takes_float16 = _k.takes_bfloat16 = True
conv2d_backward.takes_grad_dtype = True   # (float32 gradients of float16 operands)
KERNELS: dict = {"im2col": im2col, "col2im": col2im, "conv2d": conv2d,
                 "conv2d_backward": conv2d_backward, "max_pool2d": max_pool2d,
                 "max_pool2d_backward": max_pool2d_backward}
