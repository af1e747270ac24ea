"""Array API: statistical functions. sum/prod/max/min are backend reduction kernels
(docs/kernels/reductions.md); mean, var and std compose from them."""
from __future__ import annotations

from . import dispatch
from . import dtypes as dt
from .array import Array
from .core import (as_compute_array, call, check_array, check_device_dtype, normalize_axes,
                   normalize_axis, wrap)

__all__ = ["cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"]

_KIND_NAMES = {"b": "bool", "i": "signed integer", "u": "unsigned integer", "f": "real floating",
               "c": "complex floating"}


def _check_kind(x: Array, op: str, kinds: str) -> None:
    if x._dtype.kind not in kinds:
        raise TypeError(f"{op}: dtype {x._dtype.name} is not supported; expected "
                        f"{', '.join(_KIND_NAMES[k] for k in kinds)}")


def _accumulator(x: Array, dtype, op: str):
    """The result dtype of sum/prod/cumulative_*: ``dtype`` or the standard's default
    (small signed ints and bool to int64, small unsigned ints to uint64, floats unchanged)."""
    d = x._dtype
    if dtype is not None:
        out = dt.as_dtype(dtype, op)
        if out.kind == "b" or (d.kind == "c" and out.kind != "c"):
            raise TypeError(f"{op}: cannot accumulate {d.name} values in dtype {out.name}")
        return out
    if d.kind in "bi":
        return dt.int64
    if d.kind == "u":
        return dt.uint64
    return d


def _reduce(op: str, x: Array, axis, keepdims: bool, out_dtype) -> Array:
    """Run the backend reduction kernel ``op`` over ``axis`` (None, int or tuple)."""
    axes = normalize_axes(axis, x.ndim, op)
    dev = x._device
    check_device_dtype(dev, out_dtype, op)
    return wrap(call(dev, op, x, axes, bool(keepdims), out_dtype), out_dtype, dev)


def _count(x: Array, axis, op: str) -> int:
    n = 1
    for a in normalize_axes(axis, x.ndim, op):
        n *= x.shape[a]
    return n


def sum(x: Array, /, *, axis=None, dtype=None, keepdims: bool = False) -> Array:
    """Sum of the elements of x along axis."""
    check_array(x, "sum")
    return _reduce("sum", x, axis, keepdims, _accumulator(x, dtype, "sum"))


def prod(x: Array, /, *, axis=None, dtype=None, keepdims: bool = False) -> Array:
    """Product of the elements of x along axis."""
    check_array(x, "prod")
    return _reduce("prod", x, axis, keepdims, _accumulator(x, dtype, "prod"))


def _extreme(op: str, x: Array, axis, keepdims: bool) -> Array:
    check_array(x, op)
    _check_kind(x, op, "iuf")
    axes = normalize_axes(axis, x.ndim, op)
    if any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op}: zero-size reduction (axis={axis} of an array of shape {x.shape})"
                         " has no identity")
    return _reduce(op, x, axes, keepdims, x._dtype)


def max(x: Array, /, *, axis=None, keepdims: bool = False) -> Array:
    """Maximum of the elements of x along axis (NaN propagates)."""
    return _extreme("max", x, axis, keepdims)


def min(x: Array, /, *, axis=None, keepdims: bool = False) -> Array:
    """Minimum of the elements of x along axis (NaN propagates)."""
    return _extreme("min", x, axis, keepdims)


def _floating(x: Array, op: str, real_only: bool) -> Array:
    """``x`` in the dtype ``op`` computes in: integers go to the default float."""
    _check_kind(x, op, "iuf" if real_only else "iufc")
    if x._dtype.kind in "iu":
        return as_compute_array(x, dt.default_float(x._device), x._device, op)
    return x


def mean(x: Array, /, *, axis=None, keepdims: bool = False) -> Array:
    """Arithmetic mean of x along axis (NaN for an empty reduction)."""
    check_array(x, "mean")
    x = _floating(x, "mean", real_only=False)
    if x._dtype is dt.float16:   # the sum may overflow where the mean does not (torch, numpy)
        return _narrow(mean(_widen(x, "mean"), axis=axis, keepdims=keepdims), "mean")
    s = _reduce("sum", x, axis, keepdims, x._dtype)
    n = _count(x, axis, "mean")
    from .elementwise import divide

    return divide(s, float(n) if n else float("nan"))


def _widen(x: Array, op: str) -> Array:
    """A float16 ``x`` in float32: its sums and squares are computed there, as torch and numpy
    compute them (``_narrow`` rounds the result once)."""
    return as_compute_array(x, dt.float32, x._device, op)


def _narrow(r: Array, op: str) -> Array:
    return as_compute_array(r, dt.float16, r._device, op)


def var(x: Array, /, *, axis=None, correction: float = 0.0, keepdims: bool = False) -> Array:
    """Variance of x along axis, dividing by N - correction."""
    return _var("var", x, axis, correction, keepdims)


def std(x: Array, /, *, axis=None, correction: float = 0.0, keepdims: bool = False) -> Array:
    """Standard deviation of x along axis, dividing by N - correction."""
    from .elementwise import sqrt

    check_array(x, "std")
    if x._dtype is dt.float16:   # the variance overflows where the std does not (300**2 > 65504)
        return _narrow(std(_widen(x, "std"), axis=axis, correction=correction,
                           keepdims=keepdims), "std")
    return sqrt(_var("std", x, axis, correction, keepdims))


def _var(op: str, x: Array, axis, correction, keepdims: bool) -> Array:
    from .elementwise import divide, multiply, subtract

    check_array(x, op)
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"{op}: correction must be a real number, got {type(correction).__name__}")
    x = _floating(x, op, real_only=True)
    if x._dtype is dt.float16:
        return _narrow(_var(op, _widen(x, op), axis, correction, keepdims), op)
    axes = normalize_axes(axis, x.ndim, op)
    n = _count(x, axes, op)
    m = _reduce("sum", x, axes, True, x._dtype)
    m = divide(m, float(n) if n else float("nan"))
    d = subtract(x, m)
    ss = _reduce("sum", multiply(d, d), axes, keepdims, x._dtype)
    dof = n - correction
    return divide(ss, float(dof) if dof > 0 else float("nan"))


def _cumulative(op: str, x: Array, axis, dtype, include_initial: bool) -> Array:
    check_array(x, op)
    _check_kind(x, op, "biufc")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{op}: axis is required for an array of {x.ndim} dimensions")
        if x.ndim == 0:
            raise ValueError(f"{op}: needs an array of at least one dimension")
        axis = 0
    ax = normalize_axis(axis, x.ndim, op)
    out = _accumulator(x, dtype, op)
    dev = x._device
    check_device_dtype(dev, out, op)
    return wrap(call(dev, op, x, ax, bool(include_initial), out), out, dev)


def cumulative_sum(x: Array, /, *, axis=None, dtype=None, include_initial: bool = False) -> Array:
    """Cumulative sum of x along axis."""
    return _cumulative("cumulative_sum", x, axis, dtype, include_initial)


def cumulative_prod(x: Array, /, *, axis=None, dtype=None, include_initial: bool = False) -> Array:
    """Cumulative product of x along axis."""
    return _cumulative("cumulative_prod", x, axis, dtype, include_initial)

dispatch.export(globals())
