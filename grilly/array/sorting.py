"""Array API: sorting functions. NaN sorts after every number; descending order is the exact
reverse of ascending order, except that equal elements keep their original order."""
from __future__ import annotations

from . import dispatch
from . import dtypes as dt
from .array import Array
from .core import check_array, kernel, normalize_axis, wrap
from .statistical import _check_kind

__all__ = ["argsort", "sort"]


def _sort(op: str, x: Array, axis, descending: bool, stable: bool) -> Array:
    check_array(x, op)
    _check_kind(x, op, "biuf")
    ax = normalize_axis(axis, x.ndim, op)
    dev = x._device
    out = x._dtype if op == "sort" else dt.int64
    return wrap(kernel(dev, op)(x._buf, ax, bool(descending), bool(stable)), out, dev)


def argsort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """Indices that sort x along axis (stable: equal elements keep their order)."""
    return _sort("argsort", x, axis, descending, stable)


def sort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """A sorted copy of x along axis."""
    return _sort("sort", x, axis, descending, stable)

dispatch.export(globals())
