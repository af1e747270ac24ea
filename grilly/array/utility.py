"""Array API: utility functions (all, any, diff)."""
from __future__ import annotations

import builtins

from . import dispatch
from . import dtypes as dt
from .array import Array
from .core import check_array, common_device, kernel, normalize_axis, wrap
from .statistical import _reduce

__all__ = ["all", "any", "diff"]


def all(x: Array, /, *, axis=None, keepdims: bool = False) -> Array:
    """Whether every element of x along axis is true (nonzero)."""
    check_array(x, "all")
    return _reduce("all", x, axis, keepdims, dt.bool)


def any(x: Array, /, *, axis=None, keepdims: bool = False) -> Array:
    """Whether some element of x along axis is true (nonzero)."""
    check_array(x, "any")
    return _reduce("any", x, axis, keepdims, dt.bool)


def _any_all_np(op: str, x: Array, axis, keepdims: bool, where) -> Array:
    """NumPy's any/all with ``where``: masked-out elements count as False (any) or True (all)."""
    from .statistical import where_mask

    ns = dispatch.ns
    check_array(x, op)
    m = where_mask(where, x, op)
    if m is None:
        return (any if op == "any" else all)(x, axis=axis, keepdims=keepdims)
    b = ns.astype(x, dt.bool)
    if op == "any":
        return any(ns.logical_and(b, m), axis=axis, keepdims=keepdims)
    return all(ns.logical_or(b, ns.logical_not(m)), axis=axis, keepdims=keepdims)


def _any_np(x: Array, /, *, axis=None, keepdims: bool = False, where=None) -> Array:
    return _any_all_np("any", x, axis, keepdims, where)


def _all_np(x: Array, /, *, axis=None, keepdims: bool = False, where=None) -> Array:
    return _any_all_np("all", x, axis, keepdims, where)


dispatch.NUMPY_FORMS.update({"any": (frozenset({"where"}), _any_np),
                             "all": (frozenset({"where"}), _all_np)})


def _along(x: Array, axis: int, start: int, stop: int) -> Array:
    key = (slice(None),) * axis + (slice(start, stop, 1),)
    return wrap(kernel(x._device, "slice")(x._buf, key), x._dtype, x._device)


def _concat(parts: list, axis: int) -> Array:
    """``parts`` joined along ``axis`` (shapes already checked) through empty/assign kernels."""
    first = parts[0]
    dev, d = first._device, first._dtype
    shape = list(first.shape)
    shape[axis] = builtins.sum(p.shape[axis] for p in parts)
    buf = kernel(dev, "empty")(tuple(shape), d)
    out = wrap(buf, d, dev)
    at = 0
    for p in parts:
        n = p.shape[axis]
        kernel(dev, "assign")(_along(out, axis, at, at + n)._buf, p._buf)
        at += n
    return out


def _edge(v, x: Array, axis: int, name: str) -> Array:
    from .core import as_compute_array

    if not isinstance(v, Array):
        if not isinstance(v, (bool, int, float, complex)):
            raise TypeError(f"diff: {name} must be an array or a scalar, got {type(v).__name__}")
        shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
        a = as_compute_array(v, dt.scalar_result(x._dtype, v, "diff"), x._device, "diff")
        return wrap(kernel(x._device, "broadcast_to")(a._buf, shape), a._dtype, a._device)
    common_device("diff", x, v)
    if v.ndim != x.ndim or _mismatch(v.shape, x.shape, axis):
        raise ValueError(f"diff: {name} of shape {v.shape} does not match x of shape {x.shape} "
                         f"except along axis {axis}")
    return v


def _mismatch(a: tuple, b: tuple, axis: int) -> bool:
    return builtins.any(i != axis and s != t for i, (s, t) in enumerate(zip(a, b)))


def diff(x: Array, /, *, axis: int = -1, n: int = 1, prepend=None, append=None) -> Array:
    """The n-th discrete difference of x along axis (prepend/append joined first)."""
    from .core import as_compute_array
    from .elementwise import not_equal, subtract

    check_array(x, "diff")
    if x.ndim == 0:
        raise ValueError("diff: needs an array of at least one dimension, got a 0-d array")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"diff: n must be a non-negative int, got {n!r}")
    ax = normalize_axis(axis, x.ndim, "diff")
    if n == 0:
        return x  # as numpy: no differences, prepend/append ignored
    parts = [x]
    if prepend is not None:
        parts.insert(0, _edge(prepend, x, ax, "prepend"))
    if append is not None:
        parts.append(_edge(append, x, ax, "append"))
    if len(parts) > 1:
        d = parts[0]._dtype
        for p in parts[1:]:
            d = dt.promote(d, p._dtype, "diff")
        x = _concat([as_compute_array(p, d, p._device, "diff") for p in parts], ax)
    op = not_equal if x._dtype is dt.bool else subtract
    for _ in range(n):
        m = x.shape[ax]
        if m == 0:
            break
        x = op(_along(x, ax, 1, m), _along(x, ax, 0, m - 1))
    return x

def _diff_joined(x: Array, /, *, axis: int = -1, n: int = 1, prepend=None, append=None) -> Array:
    """diff with a prepend/append that requires grad: joined to x by a (recorded) concat
    first, so that their gradients flow as torch.diff's (diff's rule differentiates x only)."""
    ns = dispatch.ns
    check_array(x, "diff")
    if x.ndim == 0:
        raise ValueError("diff: needs an array of at least one dimension, got a 0-d array")
    ax = normalize_axis(axis, x.ndim, "diff")
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        return diff(x, axis=ax, n=n)   # (n == 0: x as it is, as numpy)
    parts = [x]
    if prepend is not None:
        parts.insert(0, _edge(prepend, x, ax, "prepend"))
    if append is not None:
        parts.append(_edge(append, x, ax, "append"))
    return diff(ns.concat(parts, axis=ax), axis=ax, n=n)


def _diff_edge_grad(args: tuple, kw: dict) -> bool:
    return builtins.any(getattr(kw.get(k), "requires_grad", False) for k in ("prepend", "append"))


dispatch.NUMPY_FORMS["diff"] = (frozenset(), _diff_joined)
dispatch.NUMPY_CALLS["diff"] = _diff_edge_grad

dispatch.export(globals())
