"""Sorting and searching kernels of the Vulkan backend (sort, argsort, searchsorted, nonzero,
unique, isin), with the CPU backend's calling conventions.

sort/argsort run a bitonic network per row (shaders/sort/sort.comp) that carries the original
index: ties break by it, so the result is stable and matches numpy's order exactly. unique and
isin compose sort, gather/scatter and the elementwise kernels; only result sizes are downloaded.
"""
from __future__ import annotations

from ...array import dtypes as _dt
from .indexing import _compact, _ew, _scalar, gather, mask_indices, scatter
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


def nonzero(buf: Buffer) -> tuple:
    """Per-axis int64 index buffers of the nonzero elements, in row-major order."""
    return mask_indices(astype(buf, _dt.bool))


def unique(buf: Buffer) -> tuple:
    """(values, first indices, inverse indices (flat), counts) of the flattened buffer."""
    ew, ctx = _ew(), buf.ctx
    n = buf.size
    flat = reshape(astype(buf, buf.dtype), (n,))
    if n == 0:
        e = new_buffer(ctx, (0,), I64)
        return new_buffer(ctx, (0,), buf.dtype), e, e, e
    keys, idx = _sort_rows(reshape(flat, (1, n)), False)
    s = reshape(slice_view(keys, (0, slice(0, n, 1))), (n,))
    order = reshape(slice_view(idx, (0, slice(0, n, 1))), (n,))
    # new[i]: s[i] starts a group (NaN != NaN, so every NaN is its own group)
    new = new_buffer(ctx, (n,), _dt.bool)
    assign(slice_view(new, (slice(0, 1, 1),)), full(ctx, (1,), True, _dt.bool))
    if n > 1:
        assign(slice_view(new, (slice(1, n, 1),)),
               ew["not_equal"]((n - 1,), _dt.bool, slice_view(s, (slice(1, n, 1),)),
                               slice_view(s, (slice(0, n - 1, 1),))))
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
    keys, _ = _sort_rows(reshape(astype(x2, x2.dtype), (1, m)), False)
    srt = reshape(slice_view(keys, (0, slice(0, m, 1))), (m,))
    pos = searchsorted(srt, x1, "left", None)
    clipped = ew["minimum"](shape, I64, pos, _scalar(ctx, m - 1))
    hit = ew["equal"](shape, _dt.bool, gather(srt, (clipped,)), x1)
    return ew["logical_not"](shape, _dt.bool, hit) if invert else hit


KERNELS: dict = {"sort": sort, "argsort": argsort, "searchsorted": searchsorted,
                 "nonzero": nonzero, "unique": unique, "isin": isin}
