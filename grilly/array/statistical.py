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


# ---- NumPy's keywords (dispatch.NUMPY_FORMS): where=, initial=, mean/std/var's dtype= --------
# Each form composes the canonical calls above through the namespace (autograd and grilly.jit
# record those); a call without the keywords never reaches them.
def where_mask(where, x: Array, op: str) -> Array | None:
    """NumPy's ``where=`` of a reduction as a bool Array of x's shape (None for no mask)."""
    ns = dispatch.ns
    if where is None or where is True:
        return None
    if not isinstance(where, Array):
        import numpy as np

        h = np.asarray(where)
        if h.dtype.kind != "b":
            raise TypeError(f"{op}: where must be a bool array (a mask), got {h.dtype} values")
        where = ns.asarray(h, device=x.device)
    elif where._dtype is not dt.bool:
        raise TypeError(f"{op}: where must be a bool array (a mask), got {where._dtype.name}")
    try:
        return ns.broadcast_to(where, x.shape)
    except ValueError:
        raise ValueError(f"{op}: where of shape {where.shape} does not broadcast to the array's "
                         f"shape {x.shape}") from None


def _value(v, d, x: Array, op: str) -> Array:
    """The number ``v`` as a 0-d Array of dtype ``d`` on x's device (cast as NumPy casts a
    reduction's ``initial``: 2.7 is 2 in an integer sum)."""
    ns = dispatch.ns
    if isinstance(v, Array):
        if v.ndim != 0:
            raise ValueError(f"{op}: initial must be a scalar, got an array of shape {v.shape}")
        return ns.astype(v, d)
    if isinstance(v, bool) or not isinstance(v, (int, float, complex)):
        import numpy as np

        if not isinstance(v, np.generic):
            raise TypeError(f"{op}: initial must be a number, got {type(v).__name__}")
        v = v.item()
    if d.kind in "iu" and isinstance(v, float):
        v = int(v) if v == v and abs(v) != float("inf") else v
    return ns.astype(ns.asarray(v, device=x.device), d)


def _zero(x: Array, v) -> Array:
    return dispatch.ns.astype(dispatch.ns.asarray(v, device=x.device), x._dtype)


def _sum_np(x: Array, /, *, axis=None, dtype=None, keepdims: bool = False, initial=None,
            where=None) -> Array:
    return _sum_prod_np("sum", x, axis, dtype, keepdims, initial, where)


def _prod_np(x: Array, /, *, axis=None, dtype=None, keepdims: bool = False, initial=None,
             where=None) -> Array:
    return _sum_prod_np("prod", x, axis, dtype, keepdims, initial, where)


def _sum_prod_np(op: str, x: Array, axis, dtype, keepdims: bool, initial, where) -> Array:
    """NumPy's sum/prod with ``where`` (masked-out elements count as 0 or 1) and ``initial``
    (added to or multiplied into every result)."""
    ns = dispatch.ns
    check_array(x, op)
    m = where_mask(where, x, op)
    if m is not None:
        x = ns.where(m, x, _zero(x, 0 if op == "sum" else 1))
    r = (sum if op == "sum" else prod)(x, axis=axis, dtype=dtype, keepdims=keepdims)
    if initial is None:
        return r
    return (ns.add if op == "sum" else ns.multiply)(r, _value(initial, r._dtype, x, op))


def _extreme_np(op: str, x: Array, axis, keepdims: bool, initial, where) -> Array:
    """NumPy's max/min with ``initial`` (a value every result includes) and ``where`` (which
    needs ``initial``: the extreme of nothing is undefined)."""
    ns = dispatch.ns
    check_array(x, op)
    m = where_mask(where, x, op)
    f = max if op == "max" else min
    if initial is None:
        if m is not None:
            raise ValueError(f"{op}: where= needs initial= (the {op}imum of an empty selection "
                             "is undefined)")
        return f(x, axis=axis, keepdims=keepdims)
    _check_kind(x, op, "iuf")
    init = _value(initial, x._dtype, x, op)
    if m is not None:
        x = ns.where(m, x, init)
    axes = normalize_axes(axis, x.ndim, op)
    if any(x.shape[a] == 0 for a in axes):   # nothing but initial
        shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape)) if keepdims else \
            tuple(n for i, n in enumerate(x.shape) if i not in axes)
        return ns.broadcast_to(init, shape)
    return (ns.maximum if op == "max" else ns.minimum)(f(x, axis=axes, keepdims=keepdims), init)


def _max_np(x: Array, /, *, axis=None, keepdims: bool = False, initial=None,
            where=None) -> Array:
    return _extreme_np("max", x, axis, keepdims, initial, where)


def _min_np(x: Array, /, *, axis=None, keepdims: bool = False, initial=None,
            where=None) -> Array:
    return _extreme_np("min", x, axis, keepdims, initial, where)


def _as_dtype_np(x: Array, dtype, op: str) -> Array:
    """x cast to NumPy's ``dtype=`` of mean/std/var (the dtype computed in), or x."""
    return x if dtype is None else dispatch.ns.astype(x, dt.as_dtype(dtype, op))


def _masked_count(m: Array, axes, keepdims: bool, d) -> Array:
    return dispatch.ns.astype(sum(m, axis=axes, keepdims=keepdims), d)


def _mean_np(x: Array, /, *, axis=None, keepdims: bool = False, dtype=None,
             where=None) -> Array:
    """NumPy's mean with ``dtype`` (computed in it; an integer dtype truncates the mean) and
    ``where`` (the mean of the selected elements; NaN where none is)."""
    ns = dispatch.ns
    check_array(x, "mean")
    want = None if dtype is None else dt.as_dtype(dtype, "mean")
    if want is not None and want.kind in "iub":
        return ns.astype(_mean_np(x, axis=axis, keepdims=keepdims, where=where), want)
    x = _as_dtype_np(x, want, "mean")
    m = where_mask(where, x, "mean")
    if m is None:
        return mean(x, axis=axis, keepdims=keepdims)
    x = _floating(x, "mean", real_only=False)
    if x._dtype is dt.float16:
        return _narrow(_mean_np(_widen(x, "mean"), axis=axis, keepdims=keepdims, where=m), "mean")
    axes = normalize_axes(axis, x.ndim, "mean")
    s = sum(ns.where(m, x, _zero(x, 0)), axis=axes, keepdims=keepdims)
    cd = dt.float32 if x._dtype in (dt.float32, dt.complex64) else dt.float64
    return ns.divide(s, _masked_count(m, axes, keepdims, cd))


def _moment_np(op: str, x: Array, axis, correction, keepdims: bool, dtype, where) -> Array:
    """NumPy's var/std with ``dtype`` and ``where``: the moment of the selected elements,
    divided by max(count - correction, 0), as NumPy divides."""
    ns = dispatch.ns
    check_array(x, op)
    want = None if dtype is None else dt.as_dtype(dtype, op)
    if want is not None and want.kind in "iub":   # as mean's: the moment, truncated
        return ns.astype(_moment_np(op, x, axis, correction, keepdims, None, where), want)
    x = _as_dtype_np(x, want, op)
    m = where_mask(where, x, op)
    if m is None:
        return (var if op == "var" else std)(x, axis=axis, correction=correction,
                                              keepdims=keepdims)
    x = _floating(x, op, real_only=True)
    if x._dtype is dt.float16:
        return _narrow(_moment_np(op, _widen(x, op), axis, correction, keepdims, None, m), op)
    axes = normalize_axes(axis, x.ndim, op)
    mu = _mean_np(x, axis=axes, keepdims=True, where=m)
    d = ns.where(m, ns.subtract(x, mu), _zero(x, 0))
    ss = sum(ns.multiply(d, d), axis=axes, keepdims=keepdims)
    dof = ns.subtract(_masked_count(m, axes, keepdims, x._dtype), correction)
    r = ns.divide(ss, ns.maximum(dof, _zero(dof, 0)))
    return ns.sqrt(r) if op == "std" else r


def _var_np(x: Array, /, *, axis=None, correction: float = 0.0, keepdims: bool = False,
            dtype=None, where=None) -> Array:
    return _moment_np("var", x, axis, correction, keepdims, dtype, where)


def _std_np(x: Array, /, *, axis=None, correction: float = 0.0, keepdims: bool = False,
            dtype=None, where=None) -> Array:
    return _moment_np("std", x, axis, correction, keepdims, dtype, where)


_IW = frozenset({"initial", "where"})
_DW = frozenset({"dtype", "where"})
dispatch.NUMPY_FORMS.update({"sum": (_IW, _sum_np), "prod": (_IW, _prod_np),
                             "max": (_IW, _max_np), "min": (_IW, _min_np),
                             "mean": (_DW, _mean_np), "var": (_DW, _var_np),
                             "std": (_DW, _std_np)})


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


def _torch_pairwise(name: str, elementwise: str):
    """torch.max(input, other) / torch.min(input, other): the elementwise maximum / minimum.
    NumPy's second argument is an axis, which an N-D or non-integer array never is."""
    def pairwise(ax) -> bool:
        return isinstance(ax, Array) and (ax.ndim > 0 or ax.dtype.kind not in "iu")

    keys, numpy_form = dispatch.NUMPY_FORMS[name]   # (initial=, where=: NumPy's form)

    def form(x, *, axis=None, keepdims: bool = False, **kw):
        if not pairwise(axis):
            return numpy_form(x, axis=axis, keepdims=keepdims, **kw)
        if keepdims or kw:
            raise TypeError(f"{name}(input, other): the elementwise form takes no other "
                            f"arguments")
        return dispatch.OPS[elementwise](x, axis)
    dispatch.NUMPY_FORMS[name] = (keys, form)
    dispatch.NUMPY_CALLS[name] = lambda args, kw: pairwise(kw.get("axis"))


_torch_pairwise("max", "maximum")
_torch_pairwise("min", "minimum")
dispatch.export(globals())
