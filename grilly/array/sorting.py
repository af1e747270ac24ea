"""Array API: sorting functions. NaN sorts after every number; descending order is the exact
reverse of ascending order, except that equal elements keep their original order. ``topk``
follows the same order (NaN is the largest value, as in torch.topk)."""
from __future__ import annotations

from . import dispatch
from . import dtypes as dt
from .array import Array
from . import core
from .core import check_array, kernel, normalize_axis, wrap
from .statistical import _check_kind

__all__ = ["argsort", "sort", "topk"]


_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _sort(op: str, x: Array, axis, descending: bool, stable: bool, kind) -> Array:
    check_array(x, op)
    _check_kind(x, op, "biuf")
    if kind is not None and not isinstance(kind, str):
        raise TypeError(f"{op}: kind must be a str, got {type(kind).__name__}")
    if kind not in _KINDS:
        raise ValueError(f"{op}: kind must be one of 'quicksort', 'mergesort', 'heapsort' or "
                         f"'stable', got {kind!r}")
    # grilly's sort is stable whatever the kind: any kind's result is one NumPy could give
    stable = stable or kind in ("stable", "mergesort")
    dev = x._device
    if axis is None:   # NumPy's: the flattened array
        x, axis = wrap(kernel(dev, "reshape")(x._buf, (x.size,)), x._dtype, dev), 0
    ax = normalize_axis(axis, x.ndim, op)
    out = x._dtype if op == "sort" else dt.int64
    return wrap(kernel(dev, op)(x._buf, ax, bool(descending), bool(stable)), out, dev)


def argsort(x: Array, /, *, axis: int | None = -1, descending: bool = False, stable: bool = True,
            kind: str | None = None) -> Array:
    """Indices that sort x along axis (stable: equal elements keep their order); NumPy's
    ``axis=None`` sorts the flattened array, and ``kind`` is accepted (every kind is stable)."""
    return _sort("argsort", x, axis, descending, stable, kind)


def sort(x: Array, /, *, axis: int | None = -1, descending: bool = False, stable: bool = True,
         kind: str | None = None) -> Array:
    """A sorted copy of x along axis (NumPy's ``axis=None`` and ``kind`` as in argsort)."""
    return _sort("sort", x, axis, descending, stable, kind)

def _check_k(k, n: int) -> int:
    if isinstance(k, bool) or not hasattr(k, "__index__"):
        raise TypeError(f"topk: k must be an int, got {type(k).__name__}")
    k = k.__index__()
    if not 0 <= k <= n:
        raise ValueError(f"topk: k={k} is out of range for an axis of size {n} (want 0 <= k <= {n})")
    return k


def topk(x: Array, k: int, /, *, axis: int = -1, largest: bool = True,
         sorted: bool = True) -> tuple[Array, Array]:
    """The k largest (smallest) elements along axis and their int64 indices, best first."""
    check_array(x, "topk")
    _check_kind(x, "topk", "biuf")
    dev = x._device
    if x.ndim == 0:   # one row of one element, as in torch
        v, i = topk(wrap(kernel(dev, "reshape")(x._buf, (1,)), x._dtype, dev), k, axis=axis,
                    largest=largest, sorted=sorted)
        return (wrap(kernel(dev, "reshape")(v._buf, v.shape[:0]), v._dtype, dev),
                wrap(kernel(dev, "reshape")(i._buf, i.shape[:0]), i._dtype, dev))
    ax = normalize_axis(axis, x.ndim, "topk")
    k = _check_k(k, x.shape[ax])
    v, i = core.call(dev, "topk", x, k, ax, bool(largest), bool(sorted))
    return wrap(v, x._dtype, dev), wrap(i, dt.int64, dev)


dispatch.export(globals())
