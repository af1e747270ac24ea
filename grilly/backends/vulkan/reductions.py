"""Reduction kernels of the Vulkan backend (sum, prod, max, min, any, all, count_nonzero,
cumulative sum/prod, argmax/argmin) with the CPU backend's calling conventions.

The input is seen as an (outer, reduced, inner) strided view (a device copy only when the
reduced axes cannot be merged into one); shaders/reduce/reduce.comp reduces the middle axis,
one workgroup per output (a shared-memory tree) or, for short rows, one invocation per output.
"""
from __future__ import annotations

import operator
import struct

from .. import dtypes as _dt
from .kernels import MAXD, _cast_into, astype, keep_bounded, new_buffer, permute, reshape

_PC = struct.Struct(f"<I4i{MAXD}i{4 * MAXD}i")
CHUNK = 16384            # elements per workgroup in the first pass of a long-row reduction
PER_THREAD_MAX = 128     # rows this short run one per invocation: a tree would idle most lanes
COLUMN_INNER = 32        # an inner axis this long reduces per invocation (coalesced columns)
COLUMN_CHUNKS = 128      # at most this many row chunks (partials) per column
THREADS = 1 << 16        # invocations a chunked column reduction aims for
CODES = {"sum": 0, "prod": 1, "max": 2, "min": 3, "argmax": 2, "argmin": 3,
         "cumulative_sum": 4, "cumulative_prod": 5, "cumulative_max": 6}


def dispatch(ctx, variant: str, spec: tuple, bufs: list, n: int, items: int, offs=(),
             shape=(), strides=(), writes: int = 1) -> None:
    """Record one dispatch with raw push constants: ``n``, offsets, shape, per-operand strides."""
    # push constants depend on these values alone: packed once per key (a training step
    # repeats its shapes), the rows as tuples (callers pass lists too)
    key = (n, tuple(offs), tuple(shape), *map(tuple, strides))
    pc = _PCS.get(key)
    if pc is None:
        pc = keep_bounded(_PCS, key, _pack_pc(n, offs, shape, strides), PCS_MAX)
    pipe = ctx.pipelines.get((variant, spec)) or ctx.pipeline(variant, spec)
    # (Recorder.dispatch's work, inlined: every product and reduction records through here)
    ctx.recorder.dispatch_allocs(pipe, list(map(_ALLOC, bufs)), pc, items, writes)


def _pack_pc(n: int, offs, shape, strides) -> bytes:
    """``dispatch``'s push constants: n, offsets, shape and stride rows, zero-padded."""
    flat = []
    for row in strides:
        flat += row
        flat += _ZEROS[:MAXD - len(row)]
    return _PC.pack(n, *offs, *_ZEROS[:4 - len(offs)], *shape, *_ZEROS[:MAXD - len(shape)],
                    *flat, *_ZEROS[:4 * MAXD - len(flat)])


_ZEROS = (0,) * (4 * MAXD)
_ALLOC = operator.attrgetter("alloc")
# (n, offsets, shape, *stride rows) -> packed push constants of ``dispatch``; bounded (offsets
# and sizes vary), shared by every device (the bytes depend on nothing else)
_PCS: dict = {}
PCS_MAX = 4096


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def view3(buf, axes: tuple):
    """``buf`` as an (outer, red, inner) view (copied on the device only when it must be)."""
    nd = len(buf.shape)
    axes = tuple(sorted(axes))
    if axes != tuple(range(axes[0], axes[-1] + 1)):
        kept = tuple(a for a in range(nd) if a not in axes)
        buf = permute(buf, kept + axes)
        axes = tuple(range(nd - len(axes), nd))
    shp = buf.shape
    dims = (_prod(shp[:axes[0]]), _prod(shp[axes[0]:axes[-1] + 1]), _prod(shp[axes[-1] + 1:]))
    return reshape(buf, dims)


def _out_shape(shape: tuple, axes, keepdims: bool) -> tuple:
    return tuple(1 if i in axes else s for i, s in enumerate(shape)) if keepdims else \
        tuple(s for i, s in enumerate(shape) if i not in axes)


def _run(x, code: int, variant: str, out) -> None:
    """Reduce the middle axis of the (outer, red, inner) view ``x`` into contiguous ``out``."""
    outer, red, inner = x.shape
    n = outer * inner
    if n == 0:
        return
    if variant in _VEC4_OK and code < 4 and _vec4_rows(x):
        return _run_vec4(x, code, out)
    arg = variant.startswith("arg")
    column = inner >= COLUMN_INNER and x.strides[2] == 1 and not arg
    per_thread = int(red <= PER_THREAD_MAX or n >= 1 << 15 or column)
    if per_thread and not arg and red > PER_THREAD_MAX:
        # an invocation per output reads down its column (neighbours read neighbouring
        # columns: coalesced, where a workgroup per output reads one column at a stride);
        # too few outputs to fill the GPU split their rows into chunks, summed in a second pass
        chunks = min(COLUMN_CHUNKS, red // PER_THREAD_MAX, -(-THREADS // n))
        if chunks > 1:
            part = new_buffer(x.ctx, (chunks, n), out.dtype)
            dispatch(x.ctx, variant, (code, 1, 1), [part, x], n, n * chunks, (0, x.offset),
                     (outer, red, inner, chunks), (_ZERO3, x.strides))
            return _run(reshape(part, (1, chunks, n)), code, _second_pass(variant), out)
    chunks = 1
    if not per_thread and not arg and n < 64 and red >= 2 * CHUNK:
        # few long rows: partial results per chunk first, then a second pass over them
        chunks = min(red // CHUNK, 1024)
        part = new_buffer(x.ctx, (n, chunks), out.dtype)
        dispatch(x.ctx, variant, (code, 1, 0), [part, x], n, n * chunks * 256,
                 (0, x.offset), (outer, red, inner, chunks), (_ZERO3, x.strides))
        x = reshape(part, (n, chunks, 1))
        outer, red, inner = x.shape
        variant = _second_pass(variant)
    dispatch(x.ctx, variant, (code, 1, per_thread), [out, x], n, n if per_thread else n * 256,
             (out.offset, x.offset), (outer, red, inner, 1), (_ZERO3, x.strides))


_ZERO3 = (0, 0, 0)   # the output's stride row (one tuple: no list built per dispatch)


def _second_pass(variant: str) -> str:
    """The variant that reduces the partials: they have out's dtype, so a 16-bit -> float32
    variant's second pass reads float32."""
    return "red_float32" if variant.endswith("16_f32") else variant


# variants whose rows of quads reduce_vec4.comp takes (16-bit ones widened, in float32)
_VEC4_OK = frozenset({"red_float32", "red_float16", "red_float16_f32", "red_bfloat16",
                      "red_bfloat16_f32"})
VEC4_MIN = 1024    # row length from which float32 rows are reduced with vec4 loads
VEC4_GROUPS = 2048  # workgroups the vec4 path aims for: enough to fill a large GPU


def _vec4_rows(x) -> bool:
    """Whether the (outer, red, 1) view ``x`` is rows of aligned, contiguous quads."""
    outer, red, inner = x.shape
    return (inner == 1 and red >= VEC4_MIN and red % 4 == 0 and x.strides[1] == 1
            and x.offset % 4 == 0 and (outer == 1 or x.strides[0] % 4 == 0))


def _run_vec4(x, code: int, out) -> None:
    """Rows reduced by reduce_vec4.comp: in chunks (then a second pass) when rows are few.
    float16 rows are read as such and reduced in float32 (red4_float16), then rounded once."""
    if out.dtype is not _dt.float32:
        wide = new_buffer(x.ctx, out.shape, _dt.float32)
        _run_vec4(x, code, wide)
        _cast_into(out, wide, "sum")
        return
    rows, red, _ = x.shape
    quads = red // 4
    chunks = max(1, min(VEC4_GROUPS // rows, quads // (4 * 256)))
    dst = out if chunks == 1 else new_buffer(x.ctx, (rows, chunks), out.dtype)
    dispatch(x.ctx, "red4_" + x.dtype.name, (code, 1), [dst, x], rows * chunks,
             rows * chunks * 256, (dst.offset, x.offset), (rows, quads, chunks),
             ((x.strides[0],),))
    if chunks % 4 == 0:
        # the partials are contiguous rows of quads themselves: one more vec4 pass
        dispatch(x.ctx, "red4_float32", (code, 1), [out, dst], rows, rows * 256,
                 (out.offset, 0), (rows, chunks // 4, 1), ((chunks,),))
    elif chunks > 1:
        _run(reshape(dst, (rows, chunks, 1)), code, "red_float32", out)


_PRE = {"any": _dt.bool, "all": _dt.bool, "count_nonzero": _dt.bool}
_AS = {"any": "max", "all": "min", "count_nonzero": "sum"}


def _variant(buf, out_dtype) -> str:
    """reduce.comp's variant from ``buf``'s dtype to ``out_dtype`` (the same, or float16 or
    bfloat16 -> float32)."""
    return f"red_{buf.dtype.name}_f32" if buf.dtype is not out_dtype else f"red_{out_dtype.name}"


def _reduce_kernel(op: str):
    def k(buf, axes: tuple, keepdims: bool, out_dtype):
        if (buf.dtype is _dt.bfloat16 and out_dtype is _dt.bfloat16 and axes
                and op in ("sum", "prod")):
            # summed in float32 (partials too) and rounded once, as the composition rounds
            return astype(k(buf, axes, keepdims, _dt.float32), out_dtype)
        shape = _out_shape(buf.shape, axes, keepdims)
        orig = buf
        if op in _PRE and buf.dtype != _PRE[op]:
            buf = astype(buf, _PRE[op])
        # float16 summed into float32 (autocast's master gradients): read as it is
        mixed = (buf.dtype.name in ("float16", "bfloat16") and out_dtype is _dt.float32 and axes
                 and op in ("sum", "prod", "max", "min"))
        if buf.dtype != out_dtype and not mixed:
            buf = astype(buf, out_dtype)
        if not axes:
            return reshape(astype(buf, out_dtype) if buf is orig else buf, shape)
        code = CODES[_AS.get(op, op)]
        axes = tuple(sorted(axes))
        # (not float16: its partials would round to float16 between passes, not float32)
        while axes[-1] - axes[0] + 1 != len(axes) and out_dtype.name not in ("float16",
                                                                             "bfloat16"):
            # axes apart (a conv bias gradient's (0, 2, 3)): the last run of adjacent ones is
            # reduced first, so no transposing copy of the input is made (the ops are
            # associative; float sums change their order, as any other split would)
            i = len(axes) - 1
            while axes[i - 1] == axes[i] - 1:
                i -= 1
            run = axes[i:]
            part = new_buffer(buf.ctx, tuple(s for d, s in enumerate(buf.shape) if d not in run),
                              out_dtype)
            _run(view3(buf, run), code, _variant(buf, out_dtype), part)
            buf, axes = part, axes[:i]
        out = new_buffer(buf.ctx, shape, out_dtype)
        _run(view3(buf, axes), code, _variant(buf, out_dtype), out)
        return out
    k.__name__ = op
    return k


def _cumulative_kernel(op: str):
    def k(buf, axis: int, include_initial: bool, out_dtype):
        shape = list(buf.shape)
        shape[axis] += int(include_initial)
        out = new_buffer(buf.ctx, tuple(shape), out_dtype)
        if out.size == 0:
            return out
        if buf.dtype != out_dtype:
            buf = astype(buf, out_dtype)
        x = view3(buf, (axis,))
        outer, red, inner = x.shape
        n = outer * inner
        dispatch(x.ctx, f"red_{out_dtype.name}", (CODES[op], 1, 1), [out, x], n, n,
                 (out.offset, x.offset), (outer, red, inner, int(include_initial)),
                 (_ZERO3, x.strides))
        return out
    k.__name__ = op
    return k


def _arg_kernel(op: str):
    def k(buf, axis, keepdims: bool):
        if axis is None:
            x = reshape(buf, (1, buf.size, 1))
            shape = (1,) * len(buf.shape) if keepdims else ()
        else:
            x = view3(buf, (axis,))
            shape = _out_shape(buf.shape, (axis,), keepdims)
        out = new_buffer(buf.ctx, shape, _dt.int64)
        _run(x, CODES[op], f"arg_{buf.dtype.name}", out)
        return out
    k.__name__ = op
    return k


KERNELS: dict = {op: _reduce_kernel(op) for op in
                 ("sum", "prod", "max", "min", "any", "all", "count_nonzero")}
KERNELS.update({op: _cumulative_kernel(op) for op in ("cumulative_sum", "cumulative_prod")})
KERNELS.update({op: _arg_kernel(op) for op in ("argmax", "argmin")})
