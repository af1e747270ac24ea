"""Sorting and searching kernels of the Vulkan backend (sort, argsort, searchsorted), with the
CPU backend's calling conventions.

sort/argsort run a bitonic network per row (shaders/sort/sort.comp) that carries the original
index: ties break by it, so the result is stable and matches numpy's order exactly. unique and
isin are the array layer's compositions of these with gather/scatter and the elementwise kernels
(grilly/array/composites.py).
"""
from __future__ import annotations

from .. import dtypes as _dt
from .indexing import gather
from .kernels import astype, full, new_buffer, permute, reshape, slice_view
from .memory import Buffer
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


KERNELS: dict = {"sort": sort, "argsort": argsort, "searchsorted": searchsorted}
