"""Array API: searching functions."""
from __future__ import annotations

from . import dispatch
from . import dtypes as dt
from .array import Array
from .core import (as_compute_array, broadcast_shapes, call, check_array, common_device, kernel,
                   normalize_axis, wrap)
from .statistical import _check_kind, _reduce

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]


def _arg(op: str, x: Array, axis, keepdims: bool) -> Array:
    check_array(x, op)
    _check_kind(x, op, "biuf")
    if axis is None:
        if x.size == 0:
            raise ValueError(f"{op}: attempt to get {op} of an empty array")
        ax = None
    else:
        ax = normalize_axis(axis, x.ndim, op)
        if x.ndim and x.shape[ax] == 0:
            raise ValueError(f"{op}: axis {axis} of shape {x.shape} has zero size")
        if x.ndim == 0:
            ax = None
    dev = x._device
    return wrap(call(dev, op, x, ax, bool(keepdims)), dt.int64, dev)


def argmax(x: Array, /, *, axis=None, keepdims: bool = False) -> Array:
    """Index of the first maximum of x along axis (of the flattened array when axis is None)."""
    return _arg("argmax", x, axis, keepdims)


def argmin(x: Array, /, *, axis=None, keepdims: bool = False) -> Array:
    """Index of the first minimum of x along axis (of the flattened array when axis is None)."""
    return _arg("argmin", x, axis, keepdims)


def count_nonzero(x: Array, /, *, axis=None, keepdims: bool = False) -> Array:
    """Number of nonzero elements of x along axis."""
    check_array(x, "count_nonzero")
    return _reduce("count_nonzero", x, axis, keepdims, dt.int64)


def nonzero(x: Array, /) -> tuple:
    """Indices of the nonzero elements of x, one int64 array per axis."""
    check_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: needs an array of at least one dimension, got a 0-d array")
    dev = x._device
    return tuple(wrap(b, dt.int64, dev) for b in call(dev, "nonzero", x))


def searchsorted(x1: Array, x2, /, *, side: str = "left", sorter=None) -> Array:
    """Indices where the elements of x2 would be inserted into the sorted 1-D x1."""
    check_array(x1, "searchsorted", "x1")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {x1.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    _check_kind(x1, "searchsorted", "iuf")
    dev = x1._device
    if isinstance(x2, (list, tuple)) or type(x2).__module__ == "numpy" and getattr(x2, "ndim", 0):
        x2 = dispatch.ns.asarray(x2, device=dev)   # NumPy's array_like values
    if isinstance(x2, Array):
        common_device("searchsorted", x1, x2)
        d = dt.promote(x1._dtype, x2._dtype, "searchsorted")
    else:
        d = dt.scalar_result(x1._dtype, x2, "searchsorted")
    s = None
    if sorter is not None:
        check_array(sorter, "searchsorted", "sorter")
        common_device("searchsorted", x1, sorter)
        if not dt.is_int(sorter._dtype) or sorter.shape != x1.shape:
            raise ValueError(f"searchsorted: sorter must be an integer array of shape {x1.shape}")
        s = sorter._buf
    a = as_compute_array(x1, d, dev, "searchsorted")
    v = as_compute_array(x2, d, dev, "searchsorted")
    return wrap(kernel(dev, "searchsorted")(a._buf, v._buf, side, s), dt.int64, dev)


def where(condition: Array, x1=None, x2=None, /) -> Array:
    """Elements of x1 where condition is true, else of x2 (with broadcasting and promotion);
    ``where(condition)`` alone is ``nonzero(condition)``, as NumPy's."""
    check_array(condition, "where", "condition")
    if x1 is None and x2 is None:
        return nonzero(condition)
    if x1 is None or x2 is None:
        raise ValueError("where: give both x1 and x2, or neither")
    if condition._dtype is not dt.bool:
        raise TypeError(f"where: condition must have dtype bool, got {condition._dtype.name}")
    arrays = [a for a in (x1, x2) if isinstance(a, Array)]
    dev = common_device("where", condition, *arrays)
    if len(arrays) == 2:
        d = dt.promote(x1._dtype, x2._dtype, "where")
    elif arrays:
        d = dt.scalar_result(arrays[0]._dtype, x2 if arrays[0] is x1 else x1, "where")
    else:   # two Python scalars: NumPy's dtype of the pair (where(m, 1, -1) is int64)
        d = dt.scalar_result(dt.scalar_result(dt.bool, x1, "where"), x2, "where")
    a = as_compute_array(x1, d, dev, "where")
    b = as_compute_array(x2, d, dev, "where")
    shape = broadcast_shapes(condition.shape, a.shape, b.shape, op="where")
    return wrap(kernel(dev, "where")(shape, d, condition._buf, a._buf, b._buf), d, dev)

def _searchsorted_rows(x1: Array, x2, /, *, side: str = "left", sorter=None) -> Array:
    """torch.searchsorted with an N-D sorted sequence: each row of x1 (its last axis) searched
    for the values in the same row of x2, which has x1's leading dimensions (counting the
    row's elements below each value: O(rows * n * m))."""
    ns = dispatch.ns
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if sorter is not None:   # the count below a value is the same in any order of the row
        if (not isinstance(sorter, Array) or sorter.dtype.kind not in "iu"
                or sorter.shape != x1.shape):
            got = (f"{sorter.dtype} {sorter.shape}" if isinstance(sorter, Array)
                   else type(sorter).__name__)
            raise ValueError(f"searchsorted: sorter must be an integer array of the sorted "
                             f"sequence's shape {x1.shape}, got {got}")
    if not isinstance(x2, Array) or x2.ndim != x1.ndim or x2.shape[:-1] != x1.shape[:-1]:
        got = x2.shape if isinstance(x2, Array) else type(x2).__name__
        raise ValueError(f"searchsorted: with an N-D sorted sequence of shape {x1.shape}, the "
                         f"values must be an array with its leading dimensions "
                         f"{x1.shape[:-1]}, got {got}")
    below = (ns.less if side == "left" else ns.less_equal)(
        ns.expand_dims(x1, axis=-2), ns.expand_dims(x2, axis=-1))
    return ns.sum(below, axis=-1, dtype=dt.int64)


dispatch.NUMPY_FORMS["searchsorted"] = (frozenset(), _searchsorted_rows)
# (torch's right=/out_int32= go to its form first, grilly/array/torch_dims.py, which calls back)
dispatch.NUMPY_CALLS["searchsorted"] = lambda args, kw: bool(args) and \
    isinstance(args[0], Array) and args[0].ndim > 1 and dispatch.TORCH_KEYS.isdisjoint(kw)
dispatch.export(globals())
