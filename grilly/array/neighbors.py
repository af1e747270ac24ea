"""The k best scores of a matrix product, without the product: ``matmul_topk`` returns, for each
row of x, the k largest (or smallest) entries of ``x @ mat.T + add`` and their column indices.
It is the inner loop of exact nearest-neighbour search (grilly.search): with mat = -2 y and
add = |y|^2 it ranks the rows of y by squared distance; with mat = y, by inner product.

A backend may fuse it (the contract's "search" family): the product is made block by block and
each block is cut to its best k while it is still in cache, so the (n, m) matrix is never
written. A device without the kernel runs the default composition below: blocks of matmul, add
and topk from the namespace, merged block by block.
"""
from __future__ import annotations

from ..backends.contract import MATMUL_TOPK_KMAX
from . import core
from . import dispatch as _dispatch
from . import dtypes as dt
from .array import Array

__all__ = ["matmul_topk"]

# scores held at once by the composition (64 MiB of float32) on the cpu device: big enough for
# BLAS to run at speed, small enough that 1M database rows never need an (n, 1M) matrix
BLOCK_ELEMS = 1 << 24
BLOCK_ROWS = 1024
# other devices hold this many times more: a GPU pays per op (recording, dispatch), not for
# cache misses, so fewer, larger blocks
DEVICE_BLOCK_FACTOR = 8
_KERNEL_DTYPES = frozenset({"float32", "float64"})   # what the kernels take (the contract)


def _spans(n: int, step: int):
    return ((i, min(i + step, n)) for i in range(0, n, step))


def composed_matmul_topk(x: Array, mat: Array, add, k: int, largest: bool) -> tuple:
    """matmul_topk from namespace ops: for blocks of x's rows, the product with blocks of mat's
    rows cut to k by topk and merged with the best so far (earlier blocks first, so equal scores
    keep the smaller index, as topk does)."""
    ns = _dispatch.ns
    n, m = x.shape[0], mat.shape[0]
    elems = BLOCK_ELEMS * (1 if str(x.device) == "cpu" else DEVICE_BLOCK_FACTOR)
    step = max(k, elems // BLOCK_ROWS)   # mat rows per block
    vals_out, ids_out = [], []
    for i, j in _spans(n, BLOCK_ROWS):
        xc = x[i:j]
        vals = ids = None
        for a, b in _spans(m, step):
            s = ns.matmul(xc, ns.matrix_transpose(mat[a:b]))
            if add is not None:
                s = s + ns.expand_dims(add[a:b], axis=0)
            v, t = ns.topk(s, min(k, b - a), axis=1, largest=largest)
            t = t + a
            if vals is not None:
                v, w = ns.topk(ns.concat([vals, v], axis=1), k, axis=1, largest=largest)
                t = ns.take_along_axis(ns.concat([ids, t], axis=1), w, axis=1)
            vals, ids = v, t
        vals_out.append(vals)
        ids_out.append(ids)
    if len(vals_out) == 1:
        return vals_out[0], ids_out[0]
    return ns.concat(vals_out, axis=0), ns.concat(ids_out, axis=0)


def matmul_topk(x: Array, mat: Array, k: int, /, *, add: Array | None = None,
                largest: bool = True) -> tuple[Array, Array]:
    """The k best entries of each row of ``x @ mat.T (+ add)`` and their int64 column indices,
    best first in topk's order (ties by index, NaN the largest value); x (n, d), mat (m, d),
    add (m,) or None, 1 <= k <= m."""
    op = "matmul_topk"
    core.check_array(x, op, "x")
    core.check_array(mat, op, "mat")
    if x.ndim != 2 or mat.ndim != 2:
        raise ValueError(f"{op}: x and mat must be 2-D, got shapes {x.shape} and {mat.shape}")
    if x.shape[1] != mat.shape[1]:
        raise ValueError(f"{op}: x has {x.shape[1]} columns and mat {mat.shape[1]}; want equal")
    if x._dtype.kind != "f" or mat._dtype is not x._dtype:
        raise TypeError(f"{op}: x and mat must share one real floating dtype, got "
                        f"{x._dtype.name} and {mat._dtype.name}")
    if add is not None:
        core.check_array(add, op, "add")
        if add.shape != (mat.shape[0],) or add._dtype is not x._dtype:
            raise ValueError(f"{op}: add must be ({mat.shape[0]},) of dtype {x._dtype.name}, got "
                             f"{add.shape} of {add._dtype.name}")
    m = mat.shape[0]
    kk = None if isinstance(k, bool) or not hasattr(k, "__index__") else k.__index__()
    if kk is None or not 1 <= kk <= m:
        raise ValueError(f"{op}: k must be an int with 1 <= k <= {m} (the rows of mat), got "
                         f"{k!r}")
    k = kk
    dev = core.common_device(op, x, mat, *(() if add is None else (add,)))
    if x.shape[0] == 0:
        return (core.wrap(core.full_buf(dev, (0, k), 0, x._dtype), x._dtype, dev),
                core.wrap(core.full_buf(dev, (0, k), 0, dt.int64), dt.int64, dev))
    kern = dev.kernels.get(op)
    if kern is not None and x._dtype.name in _KERNEL_DTYPES and k <= MATMUL_TOPK_KMAX:
        v, i = kern(x._buf, mat._buf, None if add is None else add._buf, k, bool(largest))
    else:
        v, i = core._bufs(core.composite(dev, op)(dev, x, mat, add, k, bool(largest)))
    return core.wrap(v, x._dtype, dev), core.wrap(i, dt.int64, dev)


_dispatch.export(globals(), "neighbors.")
