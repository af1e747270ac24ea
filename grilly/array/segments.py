"""Segment reductions: the sum or maximum of each contiguous run of rows, ``values[starts[s]:
ends[s]]``. They are grilly's scatter-add: bincount and histogram (a stable sort puts each bin's
weights in one run), and embedding_bag (each bag is a run) reduce through them in O(K + S) memory
where a one-hot (S, K) matrix took O(S K).

A run's rows are added one after another in index order from 0, so a sum is NumPy's sequential
accumulation (np.add.at, np.bincount) in the values' dtype, the same on every device; float16
and bfloat16 add in float32 and round once. A backend provides the kernels (the contract's
``segment_sum`` and ``segment_max``); a device without them runs the composition below, a
masked sum in bounded blocks (its float sums may round differently from the kernels').

Not star-imported into the grilly namespace.
"""
from __future__ import annotations

import math

from . import core
from . import dispatch as _dispatch
from . import dtypes as dt
from .array import Array

__all__ = ["segment_sum", "segment_max"]

# masked elements the composition holds at once (4M: 32 MiB of float64)
BLOCK_ELEMS = 1 << 22
_KERNEL_DTYPES = frozenset({"float32", "float64"})   # what the kernels take (the contract)


def _spans(n: int, step: int):
    return ((i, min(i + step, n)) for i in range(0, n, step))


def _member(starts: Array, ends: Array, s0: int, s1: int, k0: int, k1: int) -> Array:
    """(s1 - s0, k1 - k0) bool: row k of the block lies in segment s's run."""
    ns = _dispatch.ns
    pos = ns.reshape(ns.arange(k0, k1, dtype=dt.int64, device=starts.device), (1, -1))
    return ns.logical_and(ns.greater_equal(pos, ns.reshape(starts[s0:s1], (-1, 1))),
                          ns.less(pos, ns.reshape(ends[s0:s1], (-1, 1))))


def _blocks(values: Array, s: int) -> tuple:
    """(segments, rows) per block: at most BLOCK_ELEMS masked elements of (sb, kb, D)."""
    k, d = values.shape
    sb = max(1, min(s, 64))
    return sb, max(1, min(k, BLOCK_ELEMS // (sb * max(d, 1))))


def composed_segment_sum(values: Array, starts: Array, ends: Array) -> Array:
    """segment_sum from namespace ops: for blocks of segments and of rows, the rows masked to
    0 outside each run (a where, not a one-hot matmul: 0 * inf would be NaN) and summed, the
    row blocks' sums added. Holds at most BLOCK_ELEMS masked elements (plus the (S, D)
    result), for any layout of the runs."""
    ns = _dispatch.ns
    (k, d), s = values.shape, starts.shape[0]
    sb, kb = _blocks(values, s)
    zero = ns.zeros((), dtype=values.dtype, device=values.device)
    parts = []
    for s0, s1 in _spans(s, sb):
        acc = ns.zeros((s1 - s0, d), dtype=values.dtype, device=values.device)
        for k0, k1 in _spans(k, kb):
            m = ns.expand_dims(_member(starts, ends, s0, s1, k0, k1), axis=2)
            acc = acc + ns.sum(ns.where(m, ns.expand_dims(values[k0:k1], axis=0), zero), axis=1)
        parts.append(acc)
    if not parts:
        return ns.zeros((0, d), dtype=values.dtype, device=values.device)
    return parts[0] if len(parts) == 1 else ns.concat(parts, axis=0)


def composed_segment_max(values: Array, starts: Array, ends: Array, fill: float) -> tuple:
    """segment_max from namespace ops: for blocks of segments and of rows, the rows masked to
    -inf outside each run, their maximum and first maximal row, merged block by block (earlier
    rows win ties). Holds at most BLOCK_ELEMS masked elements (plus the (S, D) results)."""
    ns = _dispatch.ns
    (k, d), s = values.shape, starts.shape[0]
    dev, vd = values.device, values.dtype
    sb, kb = _blocks(values, s)
    neg = ns.asarray(float("-inf"), dtype=vd, device=dev)
    vals_out, args_out = [], []
    for s0, s1 in _spans(s, sb):
        best = ns.full((s1 - s0, d), fill, dtype=vd, device=dev)
        arg = ns.full((s1 - s0, d), -1, dtype=dt.int64, device=dev)
        for k0, k1 in _spans(k, kb):
            m = ns.expand_dims(_member(starts, ends, s0, s1, k0, k1), axis=2)
            w = ns.where(m, ns.expand_dims(values[k0:k1], axis=0), neg)   # (sb, kb, D)
            top = ns.max(w, axis=1, keepdims=True)
            hit = ns.logical_and(m, ns.logical_or(ns.equal(w, top), ns.logical_and(
                ns.isnan(w), ns.isnan(top))))
            first = ns.argmax(ns.astype(hit, dt.int8), axis=1) + k0
            top = ns.squeeze(top, axis=1)
            # a block's maximum replaces the one so far when it is the run's first, larger,
            # or a NaN over a number (ties keep the earlier row, as the kernels do)
            take = ns.logical_and(ns.any(hit, axis=1), ns.logical_or(
                ns.less(arg, 0), ns.logical_or(ns.greater(top, best), ns.logical_and(
                    ns.isnan(top), ns.logical_not(ns.isnan(best))))))
            best, arg = ns.where(take, top, best), ns.where(take, first, arg)
        vals_out.append(best)
        args_out.append(arg)
    if not vals_out:
        return (ns.zeros((0, d), dtype=vd, device=dev), ns.zeros((0, d), dtype=dt.int64,
                                                                 device=dev))
    if len(vals_out) == 1:
        return vals_out[0], args_out[0]
    return ns.concat(vals_out, axis=0), ns.concat(args_out, axis=0)


def _operands(op: str, values, starts, ends) -> tuple:
    """(values as (K, D) of the compute dtype, int64 starts and ends, the device)."""
    core.check_array(values, op, "values")
    core.check_array(starts, op, "starts")
    core.check_array(ends, op, "ends")
    if not dt.is_real_float(values._dtype):
        raise TypeError(f"{op}: values must have a real floating dtype, got "
                        f"{values._dtype.name}")
    if values.ndim == 0:
        raise ValueError(f"{op}: values must have at least one dimension (the rows), got a 0-d "
                         "array")
    for name, a in (("starts", starts), ("ends", ends)):
        if not dt.is_int(a._dtype):
            raise TypeError(f"{op}: {name} must be an integer array, got {a._dtype.name}")
        if a.ndim != 1:
            raise ValueError(f"{op}: {name} must be 1-D, got shape {a.shape}")
    if starts.shape != ends.shape:
        raise ValueError(f"{op}: starts and ends must have one shape, got {starts.shape} and "
                         f"{ends.shape}")
    dev = core.common_device(op, values, starts, ends)
    ns = _dispatch.ns
    v = ns.reshape(values, (values.shape[0], -1)) if values.ndim != 2 else values
    if values._dtype.name not in _KERNEL_DTYPES:   # float16, bfloat16: add in float32
        v = ns.astype(v, dt.float32)
    st, en = (a if a._dtype is dt.int64 else ns.astype(a, dt.int64) for a in (starts, ends))
    return v, st, en, dev


def _shaped(buf, like: Array, values: Array, dev) -> Array:
    """A kernel result (S, D) as an Array (S, *values.shape[1:]) of values' dtype."""
    out = core.wrap(buf, like._dtype, dev)
    if out._dtype is not values._dtype:
        out = _dispatch.ns.astype(out, values._dtype)
    shape = (out.shape[0], *values.shape[1:])
    return out if out.shape == shape else _dispatch.ns.reshape(out, shape)


def segment_sum(values: Array, starts: Array, ends: Array, /) -> Array:
    """The sums of the runs ``values[starts[s]:ends[s]]`` (rows added in index order from 0;
    runs clipped to the K rows, an empty one 0; complex values: their parts apart):
    (S, *values.shape[1:]). The gradient needs
    ordered, disjoint runs (starts non-decreasing, ends[s] <= starts[s + 1])."""
    op = "segment_sum"
    if isinstance(values, Array) and values._dtype.kind == "c":   # (the kernels add reals)
        ns = _dispatch.ns
        re, im = (ns.astype(segment_sum(part(values), starts, ends), values._dtype)
                  for part in (ns.real, ns.imag))
        return ns.add(re, ns.multiply(im, 1j))
    v, st, en, dev = _operands(op, values, starts, ends)
    kern = dev.kernels.get(op)
    if kern is not None:
        buf = kern(v._buf, st._buf, en._buf)
    else:
        buf = core._bufs(core.composite(dev, op)(dev, v, st, en))
    return _shaped(buf, v, values, dev)


def segment_max(values: Array, starts: Array, ends: Array, /, *,
                fill: float = 0.0) -> tuple[Array, Array]:
    """The maxima of the runs ``values[starts[s]:ends[s]]`` (NaN propagates) and the int64 row
    of each first maximum, (S, *values.shape[1:]) each; an empty run gives ``fill`` and -1.
    The gradient goes to that row (torch's embedding_bag max); it needs ordered, disjoint
    runs, as segment_sum's does."""
    op = "segment_max"
    v, st, en, dev = _operands(op, values, starts, ends)
    fill = float(fill)
    kern = dev.kernels.get(op)
    if kern is not None:
        vb, ib = kern(v._buf, st._buf, en._buf, fill)
    else:
        vb, ib = core._bufs(core.composite(dev, op)(dev, v, st, en, fill))
    idx = core.wrap(ib, dt.int64, dev)
    shape = (idx.shape[0], *values.shape[1:])
    return (_shaped(vb, v, values, dev),
            idx if idx.shape == shape else _dispatch.ns.reshape(idx, shape))


# below this many (row, position) pairs scatter_add_rows is one one-hot matmul (one dispatch);
# above, a stable sort and a segment sum, O(K + n) memory where the one-hot takes O(K n)
ONE_HOT_MAX = 1 << 16


def scatter_add_rows(n: int, index: Array, values: Array) -> Array:
    """(n, *values.shape[1:]) zeros with row k of ``values`` added at row ``index[k]`` (1-D,
    in [0, n)), repeats accumulating in index order: grilly's scatter-add (take's gradient,
    torch's scatter_add/index_add). Composed of differentiable namespace ops."""
    ns = _dispatch.ns
    k = index.shape[0]
    rest = values.shape[1:]
    flat = ns.reshape(values, (k, math.prod(rest)))   # (not -1: k may be 0)
    if k * n <= ONE_HOT_MAX:
        hit = ns.equal(ns.reshape(index, (1, -1)),
                       ns.reshape(ns.arange(n, dtype=index.dtype, device=index.device), (-1, 1)))
        out = ns.matmul(ns.astype(hit, flat.dtype), flat)
    else:   # each row's values as one run, in index order
        order, starts, ends = sorted_runs(index, n)
        out = segment_sum(ns.take(flat, order, axis=0), starts, ends)
    return ns.reshape(out, (n, *rest))


def sorted_runs(index: Array, n: int) -> tuple:
    """(order, starts, ends): the stable order that sorts the 1-D ``index``, and for each of
    0 .. n - 1 the run of sorted positions holding it (an index outside [0, n) in none)."""
    ns = _dispatch.ns
    order = ns.argsort(index, stable=True)
    keys = ns.take(index, order)
    pos = ns.arange(n, dtype=keys.dtype, device=keys.device)
    return order, ns.searchsorted(keys, pos, side="left"), ns.searchsorted(keys, pos,
                                                                           side="right")


_dispatch.export(globals(), "segments.")
