"""Sorting and searching kernels of the Vulkan backend (sort, argsort, searchsorted, unique,
isin), with the CPU backend's calling conventions.

sort/argsort run a bitonic network per row (shaders/sort/sort.comp) that carries the original
index: ties break by it, so the result is stable and matches numpy's order exactly. unique and
isin compose sort, gather/scatter and the elementwise kernels; only result sizes are downloaded.
Complex keys (unique/isin only: the standard does not order complex numbers) are ordered like the
CPU backend's, by real part then imaginary part (NaN last in each), through two stable sorts of
the parts, which are float views of the complex buffer.
"""
from __future__ import annotations

from .. import dtypes as _dt
from .indexing import _compact, _ew, _scalar, gather, scatter
from .kernels import assign, astype, full, new_buffer, permute, reshape, slice_view
from .memory import Buffer
from .reductions import KERNELS as _RED
from .reductions import dispatch

I64 = _dt.int64


def _sort_rows(x: Buffer, descending: bool) -> tuple[Buffer, Buffer]:
    """Sorted keys and their int64 source indices of the contiguous (rows, L) buffer ``x``,
    as (rows, P) buffers whose first L columns hold the result."""
    rows, n = x.shape
    p = 1 << max(n - 1, 0).bit_length()
    ctx = x.ctx
    keys, idx = new_buffer(ctx, (rows, p), x.dtype), new_buffer(ctx, (rows, p), I64)
    variant, total = f"sort_{x.dtype.name}", rows * p
    offs = (0, 0, x.offset, int(descending))
    dispatch(ctx, variant, (0, 1), [keys, idx, x], total, total, offs, (rows, n, p), writes=2)
    k = 2
    while k <= p:
        j = k // 2
        while j:
            dispatch(ctx, variant, (1, 1), [keys, idx], total, total, offs, (rows, n, p, k, j),
                     writes=2)
            j //= 2
        k *= 2
    return keys, idx


def _sort_kernel(values: bool):
    def k(buf: Buffer, axis: int, descending: bool, stable: bool) -> Buffer:
        nd = len(buf.shape)
        if nd == 0 or buf.size == 0:
            return astype(buf, buf.dtype) if values else full(buf.ctx, buf.shape, 0, I64)
        order = tuple(a for a in range(nd) if a != axis) + (axis,)
        moved = permute(buf, order)
        n = buf.shape[axis]
        x = reshape(astype(moved, buf.dtype), (buf.size // n, n))
        keys, idx = _sort_rows(x, descending)
        res = slice_view(keys if values else idx, (slice(0, x.shape[0], 1), slice(0, n, 1)))
        res = reshape(res, moved.shape)
        back = [0] * nd
        for i, a in enumerate(order):
            back[a] = i
        res = permute(res, tuple(back))
        return astype(res, res.dtype)
    k.__name__ = "sort" if values else "argsort"
    return k


sort, argsort = _sort_kernel(True), _sort_kernel(False)


def searchsorted(x1: Buffer, x2: Buffer, side: str, sorter) -> Buffer:
    """Insertion indices of ``x2`` into the sorted 1-D ``x1`` (through ``sorter`` if given)."""
    a = gather(x1, (sorter,)) if sorter is not None else astype(x1, x1.dtype)
    v = astype(x2, x1.dtype)
    out = new_buffer(x1.ctx, tuple(x2.shape), I64)
    n = out.size
    if n:
        dispatch(x1.ctx, f"sort_{x1.dtype.name}", (2, 1), [a, out, v], n, n,
                 (a.offset, 0, v.offset, int(side == "right")), (1, a.size), writes=2)
    return out


def parts(buf: Buffer) -> tuple[Buffer, Buffer]:
    """The real and imaginary parts of a complex buffer as float views (no copy)."""
    rd = _dt.float32 if buf.dtype is _dt.complex64 else _dt.float64
    v = Buffer(buf.ctx, buf.alloc, 2 * buf.offset, tuple(buf.shape) + (2,),
               tuple(2 * st for st in buf.strides) + (1,), rd)
    lead = (slice(None),) * len(buf.shape)
    return slice_view(v, lead + (0,)), slice_view(v, lead + (1,))


def _argsort1(x: Buffer) -> Buffer:
    """Stable ascending argsort (NaN last) of a 1-D buffer, as an int64 (n,) view."""
    n = x.size
    _, idx = _sort_rows(reshape(astype(x, x.dtype), (1, n)), False)
    return reshape(slice_view(idx, (0, slice(0, n, 1))), (n,))


def _order(flat: Buffer) -> tuple[Buffer, Buffer]:
    """(the 1-D buffer sorted, the stable argsort that sorts it); complex: by (real, imag)."""
    n = flat.size
    if flat.dtype.kind != "c":
        keys, idx = _sort_rows(reshape(flat, (1, n)), False)
        return (reshape(slice_view(keys, (0, slice(0, n, 1))), (n,)),
                reshape(slice_view(idx, (0, slice(0, n, 1))), (n,)))
    re, im = parts(flat)
    o1 = _argsort1(im)
    order = gather(o1, (_argsort1(gather(re, (o1,))),))
    return gather(flat, (order,)), order


def _starts(s: Buffer) -> Buffer:
    """bool (n,): s[i] starts a group of equal values (NaN != NaN: every NaN its own group)."""
    ew, ctx, n = _ew(), s.ctx, s.size
    new = new_buffer(ctx, (n,), _dt.bool)
    assign(slice_view(new, (slice(0, 1, 1),)), full(ctx, (1,), True, _dt.bool))
    if n == 1:
        return new
    ne = None
    for c in (parts(s) if s.dtype.kind == "c" else (s,)):
        t = ew["not_equal"]((n - 1,), _dt.bool, slice_view(c, (slice(1, n, 1),)),
                            slice_view(c, (slice(0, n - 1, 1),)))
        ne = t if ne is None else ew["logical_or"]((n - 1,), _dt.bool, ne, t)
    assign(slice_view(new, (slice(1, n, 1),)), ne)
    return new


def unique(buf: Buffer) -> tuple:
    """(values, first indices, inverse indices (flat), counts) of the flattened buffer."""
    ew, ctx = _ew(), buf.ctx
    n = buf.size
    flat = reshape(astype(buf, buf.dtype), (n,))
    if n == 0:
        e = new_buffer(ctx, (0,), I64)
        return new_buffer(ctx, (0,), buf.dtype), e, e, e
    s, order = _order(flat)
    new = _starts(s)
    starts, m = _compact(new)
    values = gather(s, (starts,))
    first = gather(order, (starts,))
    gid = ew["subtract"]((n,), I64, _RED["cumulative_sum"](new, 0, False, I64), _scalar(ctx, 1))
    inverse = new_buffer(ctx, (n,), I64)
    scatter(inverse, (order,), gid)
    ends = full(ctx, (m + 1,), n, I64)
    assign(slice_view(ends, (slice(0, m, 1),)), starts)
    counts = ew["subtract"]((m,), I64, slice_view(ends, (slice(1, m + 1, 1),)),
                            slice_view(ends, (slice(0, m, 1),)))
    return values, first, inverse, counts


def isin(x1: Buffer, x2: Buffer, invert: bool) -> Buffer:
    """Whether each element of ``x1`` occurs in ``x2`` (inputs of one dtype)."""
    ew, ctx = _ew(), x1.ctx
    shape = tuple(x1.shape)
    m = x2.size
    if m == 0 or x1.size == 0:
        return full(ctx, shape, bool(invert), _dt.bool)
    if x1.dtype.kind == "c":
        return _isin_complex(x1, x2, invert)
    keys, _ = _sort_rows(reshape(astype(x2, x2.dtype), (1, m)), False)
    srt = reshape(slice_view(keys, (0, slice(0, m, 1))), (m,))
    pos = searchsorted(srt, x1, "left", None)
    clipped = ew["minimum"](shape, I64, pos, _scalar(ctx, m - 1))
    hit = ew["equal"](shape, _dt.bool, gather(srt, (clipped,)), x1)
    return ew["logical_not"](shape, _dt.bool, hit) if invert else hit


def _isin_complex(x1: Buffer, x2: Buffer, invert: bool) -> Buffer:
    """isin through unique of x2 ++ x1: an x1 element is in x2 when its group's first index
    (the smallest, the sort being stable) points into x2."""
    ew, ctx = _ew(), x1.ctx
    m, n, shape = x2.size, x1.size, tuple(x1.shape)
    both = new_buffer(ctx, (m + n,), x1.dtype)
    assign(slice_view(both, (slice(0, m, 1),)), reshape(x2, (m,)))
    assign(slice_view(both, (slice(m, m + n, 1),)), reshape(x1, (n,)))
    _, first, inverse, _ = unique(both)
    g = gather(first, (slice_view(inverse, (slice(m, m + n, 1),)),))
    hit = ew["greater_equal" if invert else "less"]((n,), _dt.bool, g, _scalar(ctx, m))
    return reshape(hit, shape)


KERNELS: dict = {"sort": sort, "argsort": argsort, "searchsorted": searchsorted,
                 "unique": unique, "isin": isin}
