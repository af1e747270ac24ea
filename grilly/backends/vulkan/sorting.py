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


TOPK_KMAX = (16, 64)   # the register-list variants of shaders/sort/topk.comp (variants.py)
TOPK_SCAN = 256        # elements each invocation of a pass scans, at least (8 k for larger k)


def topk_passes(vals: Buffer, idx: Buffer | None, n: int, k: int, largest: bool,
                kmax: int) -> tuple[Buffer, Buffer]:
    """(rows, k) best values and int64 indices of the contiguous (rows, n) buffer ``vals``
    (with ``idx``, its elements' indices, -1 for an empty slot; without, their positions):
    passes of shaders/sort/topk.comp, each cutting a row to P*k candidates, until P = 1."""
    ctx = vals.ctx
    rows = vals.shape[0]
    if idx is not None and n == k:
        return vals, idx   # one pass's output: already the k best, in order
    variant = f"topk{kmax}_{vals.dtype.name}"
    has_idx = int(idx is not None)
    while True:
        scan = max(TOPK_SCAN, 8 * k)
        p = max(1, -(-n // scan))
        ov, oi = new_buffer(ctx, (rows, p * k), vals.dtype), new_buffer(ctx, (rows, p * k), I64)
        total = rows * p
        src_i = idx if has_idx else vals
        dispatch(ctx, variant, (0, 1), [ov, oi, vals, src_i], total, total,
                 (0, 0, vals.offset, idx.offset if has_idx else 0), (rows, n, p, k, has_idx),
                 ((int(largest),),), writes=2)
        if p == 1:
            return ov, oi
        vals, idx, has_idx, n = ov, oi, 1, p * k


def topk(buf: Buffer, k: int, axis: int, largest: bool, sorted: bool) -> tuple:
    """(values, int64 indices) of the k best elements along ``axis``, best first, in topk's
    order (NaN largest, ties to the smaller index): register-list passes for k <= 64, the
    stable bitonic argsort for larger k."""
    nd = len(buf.shape)
    n = buf.shape[axis]
    order = tuple(a for a in range(nd) if a != axis) + (axis,)
    moved = permute(buf, order)
    outer = moved.shape[:-1]
    if k == 0 or buf.size == 0:
        shape = outer + (k,)
        v, i = new_buffer(buf.ctx, shape, buf.dtype), new_buffer(buf.ctx, shape, I64)
    else:
        x = reshape(astype(moved, buf.dtype), (buf.size // n, n))
        kmax = next((m for m in TOPK_KMAX if k <= m), None)
        if kmax is not None:
            v, i = topk_passes(x, None, n, k, largest, kmax)
        else:
            keys, idx = _sort_rows(x, largest)
            cut = (slice(0, x.shape[0], 1), slice(0, k, 1))
            v, i = slice_view(keys, cut), slice_view(idx, cut)
        v, i = reshape(v, outer + (k,)), reshape(i, outer + (k,))
    back = [0] * nd
    for j, a in enumerate(order):
        back[a] = j
    v, i = permute(v, tuple(back)), permute(i, tuple(back))
    return astype(v, v.dtype), astype(i, I64)


KERNELS: dict = {"sort": sort, "argsort": argsort, "searchsorted": searchsorted, "topk": topk}
