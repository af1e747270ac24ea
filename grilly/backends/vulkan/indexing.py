"""Indexing kernels of the Vulkan backend (docs/kernels/indexing.md conventions).

gather/scatter move raw words (shaders/indexing/gather.comp, one variant per element size)
addressed by a flat element offset per index tuple, computed on the device with the int64
elementwise kernels. scatter keeps NumPy's "last index wins" for duplicates by a claim pass:
an atomicMax of the iteration index per destination element, then only the winner writes.
mask_indices composes device kernels and downloads only the count its result shape needs;
normalize_indices and repeat_indices are the array layer's compositions.
"""
from __future__ import annotations

import functools

from .. import dtypes as _dt
from .kernels import (MAXD, arange, astype, collapse, elementwise, full, new_buffer, reshape,
                      scratch_full, slice_view, to_host)
from .memory import Buffer
from .reductions import KERNELS as _RED
from .reductions import _prod, dispatch

I64 = _dt.int64


@functools.cache
def _ew() -> dict:
    return elementwise()


def _scalar(ctx, v: int, dtype=I64) -> Buffer:
    return full(ctx, (), v, dtype)


def _offsets(indices: tuple, strides) -> Buffer:
    """int64 (S) buffer: the flat element offset sum_j indices[j] * strides[j] (contiguous)."""
    ctx = indices[0].ctx
    s = tuple(indices[0].shape)
    mul, add = _ew()["multiply"], _ew()["add"]
    acc = None
    for idx, st in zip(indices, strides):
        t = mul(s, I64, idx if idx.dtype == I64 else astype(idx, I64), _scalar(ctx, st))
        acc = t if acc is None else add(s, I64, acc, t)
    return acc


def _rest(buf: Buffer, k: int):
    """Collapsed (dims, strides) of ``buf``'s axes after the first ``k``, or None if too many."""
    rest = tuple(buf.shape[k:])
    if not rest:
        return [1], [0]
    dims, sts = collapse(rest, [list(buf.strides[k:])])
    return (dims, sts[0]) if len(dims) <= MAXD - 1 else None


def _launch(buf: Buffer, op: int, bufs: list, n: int, offs: tuple, rest) -> None:
    dims, sts = rest
    shape = list(dims) + [0] * (MAXD - 1 - len(dims)) + [_prod(dims)]
    dispatch(buf.ctx, f"gather_u{buf.dtype.itemsize * 8}", (op, len(dims)), bufs, n, n, offs,
             shape, ([], sts))


def gather(buf: Buffer, indices: tuple) -> Buffer:
    """``buf[i0, i1, ..., ik-1]``: k int64 index buffers of one shape S over buf's first k axes."""
    k = len(indices)
    s = tuple(indices[0].shape)
    out = new_buffer(buf.ctx, s + tuple(buf.shape[k:]), buf.dtype)
    if out.size == 0:
        return out
    rest = _rest(buf, k)
    if rest is None:
        buf = astype(buf, buf.dtype)
        rest = _rest(buf, k)
    offs = _offsets(indices, buf.strides[:k])
    _launch(buf, 0, [out, buf, offs], out.size, (0, buf.offset), rest)
    return out


def scatter(buf: Buffer, indices: tuple, values: Buffer) -> None:
    """``buf[i0, ..., ik-1] = values`` in place; values has shape S + buf.shape[k:]."""
    k = len(indices)
    n = _prod(indices[0].shape) * _prod(buf.shape[k:])
    if n == 0:
        return
    rest = _rest(buf, k)
    if rest is None:
        raise NotImplementedError(
            f"scatter: a strided destination with more than {MAXD - 1} non-mergeable trailing "
            "axes is not supported on Vulkan")
    vals = astype(values, buf.dtype)   # contiguous, and never aliases buf
    offs = _offsets(indices, buf.strides[:k])
    claim = scratch_full(buf.ctx, (buf.alloc.size // buf.dtype.itemsize,), -1, _dt.int32)
    _launch(buf, 1, [claim, vals, offs, claim], n, (buf.offset, 0), rest)
    _launch(buf, 2, [buf, vals, offs, claim], n, (buf.offset, vals.offset), rest)


def _compact(mask: Buffer):
    """(flat positions of the True elements of a 1-D bool buffer, their count)."""
    ctx, n = mask.ctx, mask.size
    cs = _RED["cumulative_sum"](mask, 0, False, I64)
    count = int(to_host(slice_view(cs, (slice(n - 1, n, 1),)))[0]) if n else 0
    ew = _ew()
    target = ew["where"]((n,), I64, mask, ew["subtract"]((n,), I64, cs, _scalar(ctx, 1)),
                         _scalar(ctx, count))
    out = new_buffer(ctx, (count + 1,), I64)
    scatter(out, (target,), arange(ctx, 0, 1, n, I64))
    return slice_view(out, (slice(0, count, 1),)), count


def mask_indices(mask: Buffer) -> tuple:
    """The coordinates of the True elements of ``mask`` in row-major order: ndim int64 buffers."""
    shape = tuple(mask.shape)
    flat = reshape(mask, (mask.size,))
    pos, count = _compact(flat)
    if len(shape) == 1:
        return (astype(pos, I64),)
    ew, ctx, out = _ew(), mask.ctx, []
    for d in range(len(shape)):
        q = ew["floor_divide"]((count,), I64, pos, _scalar(ctx, _prod(shape[d + 1:])))
        out.append(ew["remainder"]((count,), I64, q, _scalar(ctx, shape[d])))
    return tuple(out)


KERNELS: dict = {
    "gather": gather, "scatter": scatter, "mask_indices": mask_indices,
}
