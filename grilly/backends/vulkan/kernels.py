"""Storage and elementwise kernels of the Vulkan backend, with the CPU backend's calling
conventions (docs/architecture.md). Creation kernels take the device first; the backend binds
it per device (see VulkanDevice)."""
from __future__ import annotations

import functools
import math
import operator
import struct

import numpy as np

from .. import dtypes as _dtypes
from ..contract import BINARY_OPS as BINARY, UNARY_OPS as UNARY
from .fusion import FUSE_MAX, FUSED
from .memory import _CONTIGUOUS, Buffer, contiguous_strides
from .recorder import stats
from .variants import COMPLEX_OPS, op_codes, variants

MAXD = 5
# downloads from uncached memory (resizable BAR) at least this big go through staging: the
# CPU reads such memory at about 25 ns a byte, a staged read costs one submit and wait (H200:
# 16 KiB 574 -> 69 us, 1 KiB 60 -> 71 us when idle, 104 -> 91 us after pending work)
STAGE_MIN = 1 << 11
_PC = struct.Struct(f"<I4i{MAXD}i{4 * MAXD}i")

PREDICATES = {"isfinite", "isinf", "isnan", "signbit", "equal", "not_equal", "less",
              "less_equal", "greater", "greater_equal"}
# Transcendentals: float32 uses the driver's GLSL.std.450 functions (tests loosen their
# tolerance) except sin/cos/tan; float64, and float32 sin/cos/tan, shaders/math_f64.glsl
TRANSCENDENTAL = {"acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh",
             "tan", "tanh", "exp", "expm1", "log", "log1p", "log2", "log10", "pow", "atan2",
             "logaddexp"}
# (op -> dtypes a shader variant cannot compute); none today
UNSUPPORTED: dict = {}


def _unsupported(op: str, dtype, ctx) -> NotImplementedError:
    return NotImplementedError(
        f"{op}: dtype {dtype.name} is not supported on Vulkan device {ctx.phys.name!r} "
        "(float16 computes in float32 there); use float32 or the cpu device")


# ---- launching ------------------------------------------------------------------------------
def bcast_strides(buf: Buffer, shape: tuple) -> list:
    """``buf``'s element strides once broadcast to ``shape`` (0 along broadcast axes)."""
    pad = len(shape) - len(buf.shape)
    out = [0] * pad
    for s, st, o in zip(buf.shape, buf.strides, shape[pad:]):
        out.append(0 if s == 1 and o != 1 else st)
    return out


def collapse(shape: tuple, strides: list[list]) -> tuple[list, list[list]]:
    """Drop unit axes and merge axes every operand walks contiguously; fewer axes, less index math."""
    dims = [(s, [st[i] for st in strides]) for i, s in enumerate(shape) if s != 1]
    if not dims:
        return [1], [[0] for _ in strides]
    merged = [dims[0]]
    for s, sts in dims[1:]:
        ps, psts = merged[-1]
        if all(p == q * s for p, q in zip(psts, sts)):
            merged[-1] = (ps * s, sts)
        else:
            merged.append((s, sts))
    return [s for s, _ in merged], [[m[1][k] for m in merged] for k in range(len(strides))]


def launch(ctx, variant: str, op: int, bufs: list, shape: tuple, name: str) -> None:
    """Record one strided elementwise dispatch: bufs[0] (written) and inputs over ``shape``."""
    n = math.prod(shape)
    if n == 0:
        return
    if n >= 2**31:
        raise ValueError(f"{name}: {n} elements exceed the Vulkan backend's 2**31 limit")
    # the flat pattern (_flat_pattern_of), kept per (shape, each operand's shape and strides)
    key = (shape, *map(_GEOMETRY, bufs))
    flat = _PATTERNS.get(key, key)
    if flat is key:
        flat = keep_bounded(_PATTERNS, key, _flat_pattern_of(bufs, shape), FLAT_CALLS_MAX)
    if flat is not None:
        # every operand contiguous over ``shape`` or a single element: one flat axis
        fuser = ctx.fuser
        if (fuser is not None and n <= FUSE_MAX and variant in FUSED and op != _WHERE
                and bufs[0].dtype is bufs[1].dtype):   # (registers hold one dtype)
            fuser.add(variant, op, bufs, flat, n)
            return
        # (dispatch_flat, inlined: its key takes the offsets straight from the buffers)
        key = (variant, op, flat, n, *map(_OFFSET, bufs))
        call = ctx.flat_calls.get(key)
        if call is None:
            call = keep_bounded(ctx.flat_calls, key, _flat_call(ctx, variant, op, key[4:], flat, n),
                                FLAT_CALLS_MAX)
        pipe, pc, items = call
        ctx.recorder.dispatch_allocs(pipe, list(map(_ALLOC, bufs)), pc, items)
        return
    # the dispatches of a strided launch depend on the operands' layouts alone: planned once
    # per key (collapsing the axes and packing the push constants cost microseconds)
    key = (ctx, variant, op, shape, *map(_LAYOUT, bufs))
    calls = _STRIDED.get(key)
    if calls is None:
        calls = keep_bounded(_STRIDED, key, _strided_calls(ctx, variant, op, bufs, shape, n),
                             FLAT_CALLS_MAX)
    rec, allocs = ctx.recorder, list(map(_ALLOC, bufs))
    for pipe, pc, items in calls:
        rec.dispatch_allocs(pipe, allocs, pc, items)


_ALLOC = operator.attrgetter("alloc")
_OFFSET = operator.attrgetter("offset")
_LAYOUT = operator.attrgetter("shape", "strides", "offset")
# (context, variant, op, shape, each operand's (shape, strides, offset)) -> the (pipeline, push
# constants, items) of each dispatch of a strided launch; bounded as dispatch_flat's
_STRIDED: dict = {}


def _strided_calls(ctx, variant: str, op: int, bufs: list, shape: tuple, n: int) -> list:
    """The (pipeline, push constants, items) of each dispatch of launch's strided path."""
    dims, sts = collapse(tuple(shape), [bcast_strides(b, shape) for b in bufs])
    offs = [b.offset for b in bufs]
    if (variant in VEC16_VARIANTS and op != _WHERE and _rows_of_4(dims, sts, offs)
            or variant in RAW16_VARIANTS and _rows_of_4(dims, sts, offs, True)):
        # four elements of a row per step (elementwise.comp's 16-bit VEC4)
        pc = _PC.pack(n >> 2, *offs, *_PAD[len(offs)], *dims, *([0] * (MAXD - len(dims))),
                      *_strides_pc(sts))
        return [(ctx.pipeline(variant, (op, len(dims), 1)), pc, n >> 2)]
    calls: list = []
    _launch(ctx.pipeline(variant, (op, min(len(dims), MAXD))), dims, sts, offs, calls)
    return calls


def _rows_of_4(dims: list, sts: list, offs: list, words: bool = False) -> bool:
    """Whether a 16-bit strided dispatch can take four elements of a row per step: rows of a
    multiple of 4, the output's rows unit-strided, each input's unit-strided from multiples of
    4 (its 64-bit loads) or broadcast (stride 0); with ``words`` (a copy's 64-bit stores) every
    operand's rows unit-strided from multiples of 4, the output's too."""
    if len(dims) > MAXD or dims[-1] & 3 or sts[0][-1] != 1:
        return False
    for k, (st, off) in enumerate(zip(sts, offs)):
        if st[-1] == 1:
            if (words or k) and (off & 3 or any(v & 3 for v in st[:-1])):
                return False
        elif words or st[-1] != 0:
            return False
    return True


def _strides_pc(sts: list) -> list:
    """The push constants' four rows of MAXD strides."""
    flat = []
    for k in range(4):
        row = sts[k] if k < len(sts) else []
        flat += row + [0] * (MAXD - len(row))
    return flat


def dispatch_flat(ctx, variant: str, op: int, allocs: list, offs: list, flat: tuple, n: int) -> None:
    """Record one elementwise dispatch whose operands are contiguous (``flat`` True) or one
    element, at element offsets ``offs`` of ``allocs`` (the output first)."""
    # the pipeline, push constants and item count depend on nothing else: made once per key
    # (packing the push constants alone costs about half a microsecond a call)
    key = (variant, op, flat, n, *offs)
    call = ctx.flat_calls.get(key)
    if call is None:
        call = keep_bounded(ctx.flat_calls, key, _flat_call(ctx, variant, op, offs, flat, n),
                            FLAT_CALLS_MAX)
    pipe, pc, items = call
    ctx.recorder.dispatch_allocs(pipe, allocs, pc, items)


FLAT_CALLS_MAX = 4096   # bounds a context's dispatch_flat cache (sizes and offsets vary)


def keep_bounded(cache: dict, key, value, limit: int):
    """``cache[key] = value``, the cache emptied first where it holds ``limit`` entries (the
    backend's per-layout caches: sizes and offsets vary without end); returns ``value``."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = value
    return value


def _flat_call(ctx, variant: str, op: int, offs, flat: tuple, n: int) -> tuple:
    """(pipeline, push constants, items) of a dispatch_flat call (``offs`` a list or tuple)."""
    spec = (op, 1)
    if n & 3 == 0 and (variant in VEC4_VARIANTS and op != _WHERE
                       or variant in RAW16_VARIANTS and all(flat[:len(offs)])):
        for o, c in zip(offs, flat):
            if c and o & 3:
                break
        else:
            spec, n = (op, 1, 1), n >> 2   # 128-bit loads and stores, 4 elements per step
    pipe = ctx.pipeline(variant, spec)
    return pipe, _PC.pack(n, *offs, *_PAD[len(offs)], n, 0, 0, 0, 0, *_FLAT[flat]), n


# elementwise variants with the VEC4 path (32-bit dtypes, output of the input's dtype; 16-bit
# ones: four elements of a row per step, flat or strided)
VEC16_VARIANTS = frozenset({"ew_float16", "ew_bfloat16", "ew_int16", "ew_uint16"})
VEC4_VARIANTS = frozenset({"ew_float32", "ew_int32", "ew_uint32"}) | VEC16_VARIANTS
# 16-bit copies with a VEC4 path (cast.comp's RAW16: 64-bit loads and stores, no broadcast)
RAW16_VARIANTS = frozenset(f"cast_{d}_{d}" for d in ("float16", "bfloat16", "int16", "uint16"))
_WHERE = op_codes()["where"]
_RELU_GRAD = op_codes()["relu_grad"]


_GEOMETRY = operator.attrgetter("shape", "strides")
_PATTERNS: dict = {}   # (shape, each operand's (shape, strides)) -> _flat_pattern_of's answer


def _flat_pattern_of(bufs: list, shape: tuple):
    """Which operands are contiguous over ``shape`` (True) or one element (False), or None when
    some operand needs real strides; kept per (shape, each operand's shape and strides) in
    _PATTERNS (launch: every elementwise launch asks)."""
    cs = contiguous_strides(shape)
    pat = []
    for b in bufs:
        bs = b.shape
        if bs == shape and b.strides == cs:
            pat.append(True)
        elif not bs or math.prod(bs) == 1:
            pat.append(False)
        else:
            return None
    return tuple(pat)


_PAD = [[0] * (4 - k) for k in range(5)]


class _FlatStrides(dict):
    """Push-constant strides of a flat pattern: 1 along the single axis, 0 for one element."""

    def __missing__(self, pat):
        row = []
        for c in pat:
            row += [int(c)] + [0] * (MAXD - 1)
        self[pat] = row = tuple(row + [0] * (4 * MAXD - len(row)))
        return row


_FLAT = _FlatStrides()


def _launch(pipe, dims, sts, offs, calls: list) -> None:
    """Append to ``calls`` the (pipeline, push constants, items) of a strided dispatch."""
    nd = len(dims)
    if nd > MAXD:
        # layouts no merging can flatten: one dispatch per index of the leading axis
        for i in range(dims[0]):
            _launch(pipe, dims[1:], [s[1:] for s in sts],
                    [o + i * s[0] for o, s in zip(offs, sts)], calls)
        return
    n = 1
    for s in dims:
        n *= s
    offs = list(offs) + [0] * (4 - len(offs))
    calls.append((pipe, _PC.pack(n, *offs, *dims, *([0] * (MAXD - nd)), *_strides_pc(sts)), n))


def new_buffer(ctx, shape: tuple, dtype) -> Buffer:
    if type(shape) is not tuple:
        shape = tuple(int(s) for s in shape)
    st = _CONTIGUOUS.get(shape)   # (contiguous_strides' cache, read inline: every op's output)
    return Buffer(ctx, ctx.pool.alloc(math.prod(shape) * dtype.itemsize), 0, shape,
                  contiguous_strides(shape) if st is None else st, dtype)


def _host_fill(ctx, h: np.ndarray, dtype) -> Buffer:
    """Upload host data into a fresh buffer: mapped memory, so one memcpy and no GPU work."""
    out = new_buffer(ctx, h.shape, dtype)
    if h.size:   # (out's size, without its property)
        dst = out.alloc.host()[:h.size * dtype.itemsize].view(dtype.np).reshape(h.shape)
        np.copyto(dst, h, casting="unsafe")
    stats["uploads"] += 1
    ctx.n_uploads += 1
    return out


# ---- storage kernels ------------------------------------------------------------------------
def from_host(ctx, h: np.ndarray, dtype) -> Buffer:
    """A private device copy of host data ``h`` as ``dtype``."""
    if h.dtype.kind == "c" and dtype.kind != "c":
        h = h.real
    return _host_fill(ctx, np.asarray(h), dtype)


def to_host(buf: Buffer) -> np.ndarray:
    """Sync point: wait for pending work, copy the view out of mapped memory."""
    stats["downloads"] += 1
    ctx = buf.ctx
    ctx.n_downloads += 1
    if ctx.pool.staged_reads() is not None and buf.size * buf.dtype.itemsize >= STAGE_MIN:
        return ctx.staging.read(buf)
    ctx.recorder.flush()
    return np.array(buf.host_view(), copy=True)


def empty(ctx, shape, dtype) -> Buffer:
    return new_buffer(ctx, tuple(shape), dtype)


def full(ctx, shape, value, dtype) -> Buffer:
    shape = tuple(shape)
    v = np.asarray(value)
    if v.dtype.kind == "c" and dtype.kind != "c":
        v = v.real
    elif v.dtype.kind == "O" and dtype.kind == "f":
        v = np.asarray(value, np.float64)   # an int past int64 (ml_dtypes casts no objects)
    return _host_fill(ctx, np.broadcast_to(v.astype(dtype.np, casting="unsafe"), shape), dtype)


def scratch_full(ctx, shape, value, dtype) -> Buffer:
    """A buffer of ``value`` that a kernel then writes (scatter's claims): filled on the device
    while a capture records (grilly.jit: a host fill would happen once, at capture, and a replay
    would start from the last run's writes), by the host otherwise."""
    if ctx.recorder.capturing is None:
        return full(ctx, shape, value, dtype)
    out = new_buffer(ctx, tuple(shape), dtype)
    assign(out, scalar(ctx, value, dtype))
    return out


def scalar(ctx, value, dtype) -> Buffer:
    """A shared read-only 0-d operand (the array layer's ``scalar_operand``): 32- and 64-bit ones
    carry their bits on the allocation, so fused kernels take them as immediates."""
    out = full(ctx, (), value, dtype)
    if dtype.itemsize in (4, 8) and dtype.kind in "fiu":
        v = np.asarray(value)
        v = (v.real if v.dtype.kind == "c" else v).astype(dtype.np, casting="unsafe")
        out.alloc.const = int(v.reshape(1).view(f"u{dtype.itemsize}")[0])
    return out


def arange(ctx, start, step, n: int, dtype) -> Buffer:
    h = start + step * np.arange(n, dtype=np.float64 if dtype.kind in "fc" else None)
    return _host_fill(ctx, h, dtype)


def linspace(ctx, start, stop, num: int, endpoint: bool, dtype) -> Buffer:
    return _host_fill(ctx, np.linspace(start, stop, num, endpoint=endpoint), dtype)


def eye(ctx, n_rows: int, n_cols: int, k: int, dtype) -> Buffer:
    return _host_fill(ctx, np.eye(n_rows, n_cols, k), dtype)


TRANSPOSE_MIN = 4096   # elements from which a transposed copy takes the tiled shader


def _transpose_into(dst: Buffer, src: Buffer) -> bool:
    """Copy ``src`` into ``dst`` with shaders/elementwise/transpose.comp where both have one
    dtype and shape and src is a 2-d or 3-d view with unit stride along its rows and dst has unit stride along
    its columns (a transposed matrix made contiguous: 2.5x the strided copy's speed on an H200;
    docs/vulkan.md); False where that does not apply."""
    ss, ds = src.strides, dst.strides
    nd = len(ss)
    # (every copy comes here: the usual contiguous source leaves at the first test)
    if nd not in (2, 3) or ss[-2] != 1 or ss[-1] == 1 or ds[-1] != 1:
        return False
    r, c = src.shape[-2], src.shape[-1]
    if (src.shape != dst.shape or src.dtype is not dst.dtype
            or src.dtype.itemsize not in (2, 4, 8) or r < 8 or c < 8
            or not TRANSPOSE_MIN <= src.size < 2**31):
        return False
    b = src.shape[0] if nd == 3 else 1
    sb, db = (ss[0], ds[0]) if nd == 3 else (0, 0)
    pc = _PC.pack(src.size, dst.offset, src.offset, 0, 0, b, r, c, 0, 0,
                  db, ds[-2], 1, 0, 0, sb, 1, ss[-1], 0, 0, *([0] * (2 * MAXD)))
    ctx = dst.ctx
    pipe = ctx.pipeline(f"transpose_u{src.dtype.itemsize * 8}", (0, 3))
    ctx.recorder.dispatch(pipe, [dst, src], pc, b * -(-r // 32) * -(-c // 32) * 256)
    return True


# bytes up to which a same-dtype copy between contiguous views is one vkCmdCopyBuffer: a
# transfer command costs the host a third of a kernel launch, but the GPU more than the copy
# shader on large buffers (H200: a jitted encoder step copying 16-67 MB dropout masks ran
# 5.65 ms with transfers, 5.30 without; docs/vulkan.md)
TRANSFER_MAX = 1 << 18


def _cast_into(dst: Buffer, src: Buffer, name: str) -> None:
    if src.dtype is dst.dtype and src.shape == dst.shape:
        n = math.prod(src.shape) * src.dtype.itemsize
        if n <= TRANSFER_MAX and src.is_contiguous() and dst.is_contiguous():
            # the bytes as they are (a replay's inputs and outputs, small copies)
            if n:
                item = src.dtype.itemsize
                dst.ctx.recorder.copy_allocs(dst.alloc, dst.offset * item, src.alloc,
                                             src.offset * item, n)
            return
    if _transpose_into(dst, src):
        return
    if src.dtype.name == "bfloat16" and dst.dtype.kind == "c":
        # no bfloat16 -> complex cast shader: through float32 (exact), as the cpu backend casts
        src = astype(src, _F32)
    variant = _CASTS.get((src.dtype, dst.dtype))
    if variant is None:   # (built once per pair: every copy, astype and assign comes here)
        variant = _CASTS[src.dtype, dst.dtype] = f"cast_{src.dtype.name}_{dst.dtype.name}"
    launch(dst.ctx, variant, 0, [dst, src], dst.shape, name)


_CASTS: dict = {}   # (source dtype, destination dtype) -> cast shader variant
_F32 = _dtypes.float32


def copy_plain(rec, dst: Buffer, src: Buffer) -> bool:
    """Record ``src`` copied into ``dst`` as bytes where both are contiguous views of one shape
    and dtype that do not overlap; False (nothing recorded) otherwise."""
    shape, dtype = src.shape, src.dtype
    if dst.dtype is not dtype or dst.shape != shape or dst.strides != src.strides \
            or src.strides != _CONTIGUOUS.get(shape) or dst.alloc is src.alloc:
        return False
    item = dtype.itemsize
    n = math.prod(shape) * item
    if n > TRANSFER_MAX:
        return False
    if n:
        rec.copy_allocs(dst.alloc, dst.offset * item, src.alloc, src.offset * item, n)
    return True


def astype(buf: Buffer, dtype) -> Buffer:
    out = new_buffer(buf.ctx, buf.shape, dtype)
    _cast_into(out, buf, "astype")
    return out


def copy(buf: Buffer) -> Buffer:
    return astype(buf, buf.dtype)


def assign(dst: Buffer, src: Buffer) -> None:
    """Copy ``src`` (broadcast) into the view ``dst``; a source overlapping the destination
    (``x[1:] = x[:-1]``, ``x[...] = x.T``) is read in full first, as NumPy reads it: the
    invocations of one dispatch would otherwise read elements others have written."""
    if src.shape != dst.shape:
        src = broadcast_to(src, dst.shape)
    if src.alloc is dst.alloc and src.size and dst.size:
        (a, b), (c, d) = src.span(), dst.span()
        if a < d and c < b:
            src = copy(src)
    _cast_into(dst, src, "assign")


def _view(buf: Buffer, offset: int, shape: tuple, strides: tuple) -> Buffer:
    return Buffer(buf.ctx, buf.alloc, offset, tuple(shape), tuple(strides), buf.dtype)


def _nocopy_strides(buf: Buffer, shape: tuple):
    """Strides that give ``buf`` the new ``shape`` without moving data, or None (NumPy's rule);
    kept per (shape, strides, new shape): every reshape asks."""
    key = (buf.shape, buf.strides, shape)
    st = _NOCOPY.get(key, key)
    if st is key:
        st = keep_bounded(_NOCOPY, key, _nocopy_strides_of(buf, shape), FLAT_CALLS_MAX)
    return st


_NOCOPY: dict = {}   # (shape, strides, new shape) -> the view's strides or None (bounded as
# dispatch_flat's cache)


def _nocopy_strides_of(buf: Buffer, shape: tuple):
    if buf.is_contiguous() or buf.size == 0:
        return contiguous_strides(shape)
    od = [(s, st) for s, st in zip(buf.shape, buf.strides) if s != 1]
    nd = list(shape)
    nst = [0] * len(nd)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(nd) and oi < len(od):
        pn, po = nd[ni], od[oi][0]
        while pn != po:
            if pn < po:
                pn *= nd[nj]
                nj += 1
            else:
                po *= od[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if od[k][1] != od[k + 1][0] * od[k + 1][1]:
                return None
        nst[nj - 1] = od[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            nst[k - 1] = nst[k] * nd[k]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    return tuple(nst)


def reshape(buf: Buffer, shape, copy=None) -> Buffer:
    shape = tuple(shape)
    if not copy:
        # (_nocopy_strides' cache, read inline: every reshape, view3 and flattening asks)
        key = (buf.shape, buf.strides, shape)
        st = _NOCOPY.get(key, key)
        if st is key:
            st = _nocopy_strides(buf, shape)
        if st is not None:
            return Buffer(buf.ctx, buf.alloc, buf.offset, shape, st, buf.dtype)
    if copy is False:
        raise ValueError("reshape: copy=False but the array's layout needs a copy")
    c = astype(buf, buf.dtype)
    return _view(c, 0, shape, contiguous_strides(shape))


def permute(buf: Buffer, axes) -> Buffer:
    # (map over the tuples' __getitem__: in C, where list comprehensions cost a frame each)
    return Buffer(buf.ctx, buf.alloc, buf.offset, tuple(map(buf.shape.__getitem__, axes)),
                  tuple(map(buf.strides.__getitem__, axes)), buf.dtype)


def broadcast_to(buf: Buffer, shape) -> Buffer:
    shape = tuple(shape)
    return _view(buf, buf.offset, shape, bcast_strides(buf, shape))


def slice_view(buf: Buffer, key: tuple) -> Buffer:
    """The view ``buf[key]`` for a normalized key of ints and slices over leading axes."""
    off, shape, strides = buf.offset, [], []
    bshape, bstrides = buf.shape, buf.strides
    for i, k in enumerate(key):
        st = bstrides[i]
        if isinstance(k, slice):
            # (a range sliced: the indices k selects of the axis, their count, first and step
            # in C, as k.indices(dim) and a range of them would give)
            r = range(bshape[i])[k]
            n = len(r)
            shape.append(n)
            strides.append(st * r.step)
            if n:
                off += r.start * st
        else:
            off += int(k) * st
    rest = len(key)
    shape += bshape[rest:]
    strides += bstrides[rest:]
    return Buffer(buf.ctx, buf.alloc, off, tuple(shape), tuple(strides), buf.dtype)


STORAGE = {"to_host": to_host, "astype": astype, "assign": assign, "reshape": reshape,
           "permute": permute, "broadcast_to": broadcast_to, "slice": slice_view, "copy": copy}
CREATION = {"from_host": from_host, "empty": empty, "full": full, "scalar": scalar, "arange": arange,
            "linspace": linspace, "eye": eye}


# ---- elementwise ----------------------------------------------------------------------------
_C_REAL = {"abs", "real", "imag"}   # complex in, real out (shaders/elementwise/complex.comp)


@functools.cache
def _built_variants() -> frozenset:
    return frozenset(variants())


def _complex_variant(op: str, dtype, ctx) -> str:
    """The shader variant of complex ``op`` (built per op only: variants.COMPLEX_OPS)."""
    tag = "ewcb" if op in PREDICATES else "ewcr" if op in _C_REAL else "ewc"
    if op not in COMPLEX_OPS[tag] or f"{tag}_{dtype.name}_{op}" not in _built_variants():
        raise NotImplementedError(f"{op}: dtype {dtype.name} is not supported on Vulkan device "
                                  f"{ctx.phys.name!r}; use the cpu device")
    return f"{tag}_{dtype.name}"


def _ew_kernel(op: str, code: int):
    variant = "ewb_" if op in PREDICATES else "ew_"
    bad = UNSUPPORTED.get(op, ())

    def k(shape, out_dtype, *bufs):
        a = bufs[0]
        d = a.dtype.name
        if d in bad:
            raise _unsupported(op, a.dtype, a.ctx)
        v = _complex_variant(op, a.dtype, a.ctx) if a.dtype.kind == "c" else variant + d
        out = new_buffer(a.ctx, shape, out_dtype)
        launch(a.ctx, v, code, [out, *bufs], tuple(shape), op)
        return out
    k.__name__ = op
    return k


def where(shape, out_dtype, c, a, b):
    """Choose from ``a`` where ``c`` is true, else from ``b`` (broadcast to ``shape``)."""
    v = _complex_variant("where", a.dtype, a.ctx) if a.dtype.kind == "c" else "ew_" + a.dtype.name
    out = new_buffer(a.ctx, shape, out_dtype)
    launch(a.ctx, v, _WHERE, [out, a, b, c], tuple(shape), "where")
    return out


def relu_backward(g, y):
    """g where y > 0, else 0 (the contract's relu_backward: ReLU's gradient from its output), as
    one elementwise pass (op relu_grad) instead of a comparison and a where."""
    out = new_buffer(g.ctx, g.shape, g.dtype)
    launch(g.ctx, "ew_" + g.dtype.name, _RELU_GRAD, [out, g, y], tuple(g.shape), "relu_backward")
    return out


# (the ew shader has every op for float16, and for bfloat16's bits)
relu_backward.takes_float16 = relu_backward.takes_bfloat16 = True


def elementwise() -> dict:
    codes = op_codes()
    table = {op: _ew_kernel(op, codes[op]) for op in (*UNARY, *BINARY)}
    table["where"] = where
    table["relu_backward"] = relu_backward
    return table
