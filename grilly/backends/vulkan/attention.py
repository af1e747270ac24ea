"""Fused attention of the Vulkan backend (docs/kernels/attention.md; shader
shaders/nn/attention.comp): FlashAttention-2 with an online softmax. The forward is one
dispatch; the backward three: D = rowsum(g out) with the fully masked rows marked, then dQ, and
dK with dV (those two independent of each other).

RB adjacent rows (queries; keys for dK/dV) are held in registers by a cluster of T adjacent
lanes, each lane a 1/T share of every row's features (at most 32 float32 or 16 float64 values a
vector, so head dims up to 256), so a workgroup of 256 lanes takes RB * 256 / T rows; the other
side's rows stream through shared memory in tiles of BT rows (32, fewer where the tile would
pass the device's shared memory or 48 KiB). A cluster sums its dot products with subgroup
shuffles and computes each (row, key) exp once, in one of its lanes.

q, k, v, g and out are read through their (n, h, row) strides (a permuted multi-head
projection is read in place) where their feature axis is unit-strided, bias through four strides
(a broadcast mask is never spread out); a view of another layout, and a non-contiguous drop, is
copied first. Eight buffers are bound (dK and dV share one allocation; D and the logsumexp
another). float32 (the project's exp/log and correctly rounded division), float64, and float16
and bfloat16 storage (autocast's attention): 16-bit operands and results read and written as
such (bfloat16 through its bits), float32 registers and arithmetic as the float32 variant, and
the logsumexp (and D) float32.
"""
from __future__ import annotations

import struct

from .. import dtypes as _dt
from .kernels import _view, astype, copy, new_buffer, permute, reshape
from .linalg import _matmul, matmul4_into
from .memory import contiguous_strides
from .runtime import ffi, lib

_DTYPES = ("float16", "bfloat16", "float32", "float64")
_WG = 256
_NBUF = 8
MAX_HEAD = 256      # E and Ev: 8 lanes x 8 quads of features (the registers of a cluster)
_MAX_T = 8          # lanes per row: a cluster stays within one subgroup
_BT = 32            # rows per shared tile, halved while it does not fit
_SHARED = 48 << 10  # shared memory used at most (the common device limit)
_PC = struct.Struct("<2i6i8i16i")
# float32 attention with at most this many scores (N H L S) runs as batched GEMMs around
# materialized scores (_composed); longer ones in the fused kernels, whose memory stays linear
COMPOSE_MAX = 1 << 25
COMPOSE_MIN = 1 << 18   # below it, the one fused dispatch costs less than the passes
_SLOTS = {"q": 0, "k": 3, "v": 6, "bias": 9, "g": 13}   # first stride word of each operand
_shuffle: dict = {}  # physical device -> whether compute shaders have subgroup shuffles


def _has_shuffle(phys) -> bool:
    ok = _shuffle.get(phys)
    if ok is None:
        sub = ffi.new("VkPhysicalDeviceSubgroupProperties*",
                      {"sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES})
        props = ffi.new("VkPhysicalDeviceProperties2*",
                        {"sType": lib.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                         "pNext": sub})
        lib.vkGetPhysicalDeviceProperties2(phys.handle, props)
        ok = _shuffle[phys] = bool(sub.supportedOperations & lib.VK_SUBGROUP_FEATURE_SHUFFLE_BIT
                                   and sub.supportedStages & lib.VK_SHADER_STAGE_COMPUTE_BIT)
    return ok


def _check(op: str, *bufs) -> None:
    q = bufs[0]
    if q.dtype.name not in _DTYPES:
        raise NotImplementedError(f"{op}: dtype {q.dtype.name} has no Vulkan kernel (float16, "
                                  "bfloat16, float32 and float64 do)")
    for b in bufs:
        if b is not None and b.size >= 2**31:
            raise ValueError(f"{op}: {b.size} elements exceed the Vulkan backend's 2**31 limit")


def _layout(op: str, ctx, e: int, ev: int, itemsize: int) -> tuple:
    """(T lanes per cluster, NQ and NV feature quads per lane and row, BT rows per tile, tile
    quads, RB rows per cluster)."""
    if max(e, ev) > MAX_HEAD:
        raise NotImplementedError(f"{op}: head dims E={e}, Ev={ev}: the Vulkan kernel takes "
                                  f"at most {MAX_HEAD}")
    e4, v4 = -(-e // 4), -(-ev // 4)
    cap = 8 if itemsize == 4 else 4   # quads a lane holds per vector and row (float64: half)
    t = 1
    while t < _MAX_T and -(-max(e4, v4) // t) > cap:
        t *= 2
    phys = ctx.phys
    if ctx.bindings < _NBUF:
        raise NotImplementedError(f"{op}: the Vulkan device {phys.name!r} binds {ctx.bindings} "
                                  f"buffers per kernel; this kernel needs {_NBUF}")
    if t > 1 and (t > phys.subgroup_size or not _has_shuffle(phys)):
        raise NotImplementedError(f"{op}: head dims E={e}, Ev={ev} need subgroup shuffles over "
                                  f"{t} lanes, which Vulkan device {phys.name!r} lacks")
    nq, nv = max(1, -(-e4 // t)), max(1, -(-v4 // t))
    # two rows a cluster from four lanes on: each shared quad read serves both (float32 on an
    # H200: 1.3 to 1.5x at head dim 128; at 64 and below the registers cost more than it saves;
    # float64 rows take twice the registers already)
    rb = 2 if t >= 4 and itemsize == 4 else 1
    row_bytes = t * (nq + nv) * 4 * itemsize
    budget = min(phys.max_shared, _SHARED) - 64 * itemsize   # the shader's rowv[64]
    bt = _BT
    while bt > 4 and bt * row_bytes > budget:
        bt //= 2
    return t, nq, nv, bt, bt * t * (nq + nv), rb


def _rows(b):
    """``b`` itself when its feature (last) axis is unit-strided, else a contiguous copy."""
    return b if b.shape[-1] <= 1 or b.strides[-1] == 1 else copy(b)


def _scale_words(scale: float, dtype) -> tuple:
    if dtype.name != "float64":   # float16's arithmetic is float32
        return struct.unpack("<i", struct.pack("<f", scale)) + (0,)
    return struct.unpack("<2i", struct.pack("<d", scale))


def _run(ctx, op_code: int, lay: tuple, flags: tuple, bufs: list, strides: dict, dims: tuple,
         scale_words: tuple, items: int, writes: int = 1, work: int = 0) -> None:
    """One dispatch of shaders/nn/attention.comp: ``bufs`` at bindings 0..7 (None: unused, bound
    to binding 2's input and never read), ``strides`` by operand name (see _SLOTS). The variant
    is binding 2's dtype (q, or out in OP 1: the operands'; lse and aux are float32 under float16
    operands)."""
    t, nq, nv, bt, tile, rb = lay
    bound = [b if b is not None else bufs[2] for b in bufs]
    st = [0] * 16
    for name, (a, b, c, *d) in strides.items():
        at = _SLOTS[name]
        st[at:at + 3 + len(d)] = (a, b, c, *d)
    pc = _PC.pack(*scale_words, *dims, *[b.offset if b is not None else 0 for b in bufs], *st)
    spec = (op_code, 1, t, nq, nv, bt, *(int(f) for f in flags), tile, rb)
    variant = f"attn_{bufs[2].dtype.name}"
    pipe = ctx.pipelines.get((variant, spec)) or ctx.pipeline(variant, spec)
    rec = ctx.recorder
    rec.dispatch(pipe, bound, pc, items, writes)
    # the recorder submits a batch once it holds enough work (items), so the GPU starts while
    # Python records what follows and the pool reuses big blocks as work retires; an item here
    # (a lane) stands for about S (E + Ev) multiply-adds, so count ``work`` (multiply-adds) / 16
    # (without it, ten steps of forward + backward at head dim 128 took 2.5x as long on an
    # H200: unsubmitted work held the blocks, and the pool grew by fresh 16-32 MiB each step)
    rec.work += work // 16


def _rows_per_group(lay: tuple) -> int:
    """Rows (queries, or keys for dK/dV) of one workgroup: RB per cluster of T lanes."""
    return lay[5] * (_WG // lay[0])


def _strides3(b) -> tuple:
    return tuple(b.strides[:3])


def _bias(b):
    """The bias's four strides (0 along broadcast axes), or None."""
    if b is None:
        return None
    return tuple(0 if s == 1 else st for s, st in zip(b.shape, b.strides))


def _acc(dtype):
    """The dtype of lse and aux (and of the arithmetic): float32 for 16-bit operands."""
    return _dt.float32 if dtype.name in ("float16", "bfloat16") else dtype


def _common(op, q, k, v, bias, drop, causal):
    _check(op, q, k, v, bias, drop)
    n, h, lq, e = q.shape
    s, ev = k.shape[2], v.shape[3]
    lay = _layout(op, q.ctx, e, ev, _acc(q.dtype).itemsize)   # (registers and tiles: float32)
    q, k, v = _rows(q), _rows(k), _rows(v)
    if drop is not None and not drop.is_contiguous():
        drop = copy(drop)
    flags = (bool(causal), bias is not None, drop is not None)
    return q, k, v, drop, lay, flags, (h, lq, s, e, ev, n * h)


def attention(q, k, v, bias, drop, causal, scale, block):
    """(out (N, H, L, Ev), lse (N, H, L)) in one dispatch: one workgroup per (n, h, R query
    rows); ``block`` (the composition's key block) is not needed here. lse is float32 for
    float16 operands."""
    n, h, lq, e = q.shape
    s, ev = k.shape[2], v.shape[3]
    ctx = q.ctx
    if _widen(q, n * h * lq * s):
        out, lse = attention(*_wide(q, k, v, bias, drop), causal, scale, block)
        return astype(out, q.dtype), lse
    out = new_buffer(ctx, (n, h, lq, ev), q.dtype)
    lse = new_buffer(ctx, (n, h, lq), _acc(q.dtype))
    q, k, v, drop, lay, flags, dims = _common("attention", q, k, v, bias, drop, causal)
    if lse.size == 0:
        return out, lse
    if _compose(q, n * h * lq * s):
        return _composed(ctx, q, k, v, bias, drop, flags, dims, scale, lse), lse
    units = n * h * -(-lq // _rows_per_group(lay))
    strides = {"q": _strides3(q), "k": _strides3(k), "v": _strides3(v)}
    if bias is not None:
        strides["bias"] = _bias(bias)
    _run(ctx, 0, lay, flags, [out, lse, q, k, v, None, bias, drop], strides, dims,
         _scale_words(scale, q.dtype), units * _WG, writes=2, work=n * h * lq * s * (e + ev))
    return out, lse


def attention_backward(g, q, k, v, bias, drop, out, lse, causal, scale, block, need):
    """(dq, dk, dv) of ``attention``, None where ``need`` says no: D and the dead-row marks
    (one invocation per query row), then dQ (workgroups over query blocks) and dK with dV
    (workgroups over key blocks). lse is float32 for float16 operands (as attention makes it)."""
    op = "attention_backward"
    n, h, lq, e = q.shape
    s, ev = k.shape[2], v.shape[3]
    ctx = q.ctx
    if lse.dtype is not _acc(q.dtype):
        raise TypeError(f"{op}: lse must be {_acc(q.dtype).name} for {q.dtype.name} operands "
                        f"(as attention returns it), got {lse.dtype.name}")
    if _widen(q, n * h * lq * s):
        res = attention_backward(*_wide(g, q, k, v, bias, drop, out), lse, causal, scale, block,
                                 need)
        return tuple(None if r is None else astype(r, q.dtype) for r in res)
    q, k, v, drop, lay, flags, dims = _common(op, q, k, v, bias, drop, causal)
    nq, nk, nv = (bool(x) for x in need)
    g, out = _rows(g), _rows(out)
    words = _scale_words(scale, q.dtype)
    rows = n * h * lq
    aux = new_buffer(ctx, (2 * rows,), _acc(q.dtype))   # [lse' | D]
    if rows:
        _run(ctx, 1, lay, flags, [aux, lse, out, None, None, g, None, None],
             {"q": _strides3(out), "k": tuple(lse.strides), "g": _strides3(g)}, dims, words,
             rows)
    if _compose(q, rows * s):
        return _composed_backward(ctx, g, q, k, v, bias, drop, aux, flags, dims, scale, need)
    strides = {"q": _strides3(q), "k": _strides3(k), "v": _strides3(v), "g": _strides3(g)}
    if bias is not None:
        strides["bias"] = _bias(bias)
    r = _rows_per_group(lay)
    dq = new_buffer(ctx, q.shape, q.dtype) if nq else None
    if nq and dq.size:
        _run(ctx, 2, lay, flags, [dq, aux, q, k, v, g, bias, drop], strides, dims, words,
             n * h * -(-lq // r) * _WG, work=n * h * lq * s * (2 * e + ev))
    dk = dv = None
    if nk or nv:
        nk_el = n * h * s * e
        dkv = new_buffer(ctx, (nk_el + n * h * s * ev,), q.dtype)
        dk = _view(dkv, 0, k.shape, contiguous_strides(k.shape))
        dv = _view(dkv, nk_el, v.shape, contiguous_strides(v.shape))
        if dkv.size:
            _run(ctx, 3, lay, flags, [dkv, aux, q, k, v, g, bias, drop], strides, dims, words,
                 n * h * -(-s // r) * _WG, work=2 * n * h * lq * s * (e + ev))
    return dq, dk if nk else None, dv if nv else None


def _compose(q, scores: int) -> bool:
    """Whether attention with ``scores`` (N H L S) scores runs as _composed: float32 (the
    vec4 GEMMs), big enough to pay for its passes and small enough for its scores' memory."""
    return q.dtype.name == "float32" and COMPOSE_MIN <= scores <= COMPOSE_MAX


def _widen(q, scores: int) -> bool:
    """Whether 16-bit attention runs _composed on float32 copies (its results rounded back,
    lse kept float32): in the composition's size range its float32 GEMMs are faster on GPUs
    than the fused kernel, whose 16-bit variants take every other size."""
    return q.dtype.name in ("float16", "bfloat16") and COMPOSE_MIN <= scores <= COMPOSE_MAX


def _wide(*bufs) -> list:
    """The buffers as float32 copies (None kept)."""
    return [None if b is None else astype(b, _dt.float32) for b in bufs]


def _rows_lay(ctx) -> tuple:
    """The lanes a row of OP 4 takes (up to 32, within a subgroup) in _run's layout tuple."""
    t = 1
    while t < 32 and t * 2 <= ctx.phys.subgroup_size and _has_shuffle(ctx.phys):
        t *= 2
    return t, 1, 1, 1, 1, 1


def _bmm(a, b, out=None):
    """a (N, H, M, K) @ b (N, H, K, P) per head: one GEMM reading both in place where the
    sgemm shader takes their layouts (linalg.matmul4_into), written into ``out`` (a view, maybe
    with merged heads) or a new contiguous buffer; else over (N H)-stacked copies, into a new
    contiguous buffer (``out`` unused)."""
    n, h, m = a.shape[:3]
    p = b.shape[3]
    dst = out if out is not None else new_buffer(a.ctx, (n, h, m, p), a.dtype)
    if matmul4_into(dst, a, b):
        return dst
    return reshape(_matmul((n * h, m, p), a.dtype, reshape(a, (n * h,) + a.shape[2:]),
                           reshape(b, (n * h,) + b.shape[2:]), None), (n, h, m, p))


def _t(b):
    """The last two axes of a 4-d view swapped."""
    return permute(b, (0, 1, 3, 2))


def _composed(ctx, q, k, v, bias, drop, flags, dims, scale, lse):
    """The forward as s = q k^T (one batched GEMM), p = softmax(s scale + bias) (times drop) in
    place with the row logsumexps (OP 4), out = p v (a batched GEMM): the tensor-core-free
    GEMMs run near peak where the fused kernel's per-row loops do not (docs/kernels/attention.md).
    q, k, v are read in place (a packed projection's heads); out is written with its heads
    merged, (N, L, H, Ev) memory returned as the (N, H, L, Ev) view, so the projection after
    it reads it without a copy."""
    h, lq, s, e, ev, nh = dims
    sc = _bmm(q, _t(k))
    strides = {"bias": _bias(bias)} if bias is not None else {}
    lay = _rows_lay(ctx)
    _run(ctx, 4, lay, flags, [sc, lse, q, None, None, None, bias, drop], strides, dims,
         _scale_words(scale, q.dtype), -(-nh * lq // (_WG // lay[0])) * _WG, writes=2,
         work=nh * lq * s * 16)
    merged = new_buffer(ctx, (nh // h, lq, h, ev), q.dtype)
    return _bmm(sc, v, permute(merged, (0, 2, 1, 3)))


def _composed_backward(ctx, g, q, k, v, bias, drop, aux, flags, dims, scale, need) -> tuple:
    """The backward of _composed: s = q k^T and dP' = g v^T (batched GEMMs), OP 5 turns them
    into p drop and dS scale in place, then dV = (p drop)^T g, dQ = dS k, dK = dS^T q."""
    h, lq, s, e, ev, nh = dims
    nq, nk, nv = (bool(x) for x in need)
    words = _scale_words(scale, q.dtype)
    lay = _rows_lay(ctx)
    if flags[1]:
        # a bias can mask whole rows: their g rows (maybe NaN) are zeroed for dV (OP 6)
        g0 = new_buffer(ctx, (nh // h, h, lq, ev), q.dtype)
        _run(ctx, 6, lay, flags, [g0, aux, q, None, None, g, None, None],
             {"g": _strides3(g)}, dims, words, nh * lq * ev)
    else:
        g0 = g
    sc = _bmm(q, _t(k))
    dp = _bmm(g, _t(v))
    strides = {"bias": _bias(bias)} if bias is not None else {}
    _run(ctx, 5, lay, flags, [sc, dp, aux, None, None, None, bias, drop], strides, dims, words,
         -(-nh * lq // (_WG // lay[0])) * _WG, writes=2, work=nh * lq * s * 16)
    return (_bmm(dp, k) if nq else None, _bmm(_t(dp), q) if nk else None,
            _bmm(_t(sc), g0) if nv else None)


# the array layer composes above this (grilly.array.attention._kernel)
attention.max_features = attention_backward.max_features = MAX_HEAD
# float16 and bfloat16 operands and results (lse float32): the array layer passes autocast's
# arrays as they are
attention.takes_float16 = attention_backward.takes_float16 = True
attention.takes_bfloat16 = attention_backward.takes_bfloat16 = True
KERNELS = {"attention": attention, "attention_backward": attention_backward}
