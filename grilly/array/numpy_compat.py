"""NumPy's names for what the Array API namespace already has (concatenate, transpose, arccos,
cumsum, unique ...), NumPy's array manipulation (hstack, split, pad, insert ...), and its linear
algebra and comparison helpers (dot, kron, diag, isclose ...), each composed of namespace
functions, so autograd, grilly.jit and every device take them as they take those.

Arguments, defaults, result shapes and dtypes are NumPy 2's, under grilly's promotion rules
(docs/numpy.md lists the differences). Positions derived from Python ints (split points,
pad widths, inserted indices) are computed on the host; the data never is, except where a
function's answer is a Python value (allclose, array_equal) or its size depends on the data
(unique)."""
from __future__ import annotations

import builtins
import itertools
import math
from typing import Sequence

import numpy as np

from . import dispatch
from . import dtypes as dt
from .array import Array
from .core import AxisError, check_array, common_device
from .manipulation import normalize_axis
from .numpy_args import no_out as _no_out  # (numpy_stats imports it from here)

__all__ = [
    # names NumPy 2 keeps for Array API functions
    "absolute", "amax", "amin", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2",
    "arctanh", "around", "bitwise_not", "concatenate", "conjugate", "copy", "cumprod", "cumsum",
    "deg2rad", "degrees", "fabs", "fix", "invert", "isscalar", "left_shift", "mod", "ndim",
    "power", "rad2deg", "radians", "ravel", "right_shift", "rint", "shape", "size", "swapaxes",
    "transpose", "true_divide", "unique",
    # manipulation
    "append", "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "block", "column_stack",
    "delete", "dsplit", "dstack", "fliplr", "flipud", "hsplit", "hstack", "insert", "pad",
    "resize", "rollaxis", "rot90", "split", "trim_zeros", "vsplit", "vstack",
    # linear algebra and comparisons
    "allclose", "array_equal", "array_equiv", "cross", "diag", "diag_indices",
    "diag_indices_from", "diagflat", "diagonal", "dot", "fill_diagonal", "identity", "inner",
    "isclose", "kron", "outer", "trace", "tri", "tril_indices", "tril_indices_from",
    "triu_indices", "triu_indices_from", "vdot",
    # classification
    "iscomplex", "iscomplexobj", "isneginf", "isposinf", "isreal", "isrealobj",
    # host iteration helpers
    "apply_along_axis", "apply_over_axes", "ndenumerate", "ndindex",
]

_ns = dispatch.ns
_OPS = dispatch.OPS


# ---- helpers --------------------------------------------------------------------------------
def _arr(x, op: str, arg: str = "a") -> Array:
    return check_array(x, op, arg)


def _operand(v, like: Array, op: str, arg: str) -> Array:
    """``v`` as an Array on ``like``'s device: an Array as it is; Python scalars and nested
    lists of them take ``like``'s dtype where they fit it, as a Python scalar operand does."""
    if isinstance(v, Array):
        common_device(op, like, v)
        return v
    if isinstance(v, np.ndarray):
        return _ns.asarray(v, device=like.device)
    h = np.asarray(v)
    if h.dtype.kind not in "biufc":
        raise TypeError(f"{op}: {arg} must be an array, a number or a sequence of numbers, got "
                        f"{type(v).__name__}")
    sample = h.reshape(-1)[0].item() if h.size else like.dtype.kind == "b"
    try:
        d = dt.scalar_result(like.dtype, sample, op)
    except TypeError:
        d = None
    return _ns.asarray(h, dtype=d, device=like.device)


def _ints_arg(v, op: str, arg: str) -> tuple:
    """``v`` (an int or a sequence of ints) as a tuple of Python ints; TypeError otherwise."""
    seq = v if isinstance(v, (tuple, list, range)) else (v,)
    out = []
    for s in seq:
        if isinstance(s, (bool, float)) or not hasattr(s, "__index__"):
            raise TypeError(f"{op}: {arg} must be an int or a sequence of ints, got {v!r}")
        out.append(int(s.__index__()))
    return tuple(out)


def _index(values, device) -> Array:
    """Host-computed positions as an int64 Array on ``device``."""
    return _ns.asarray(np.asarray(values, dtype=np.int64).reshape(-1), device=device)


def _flat(x: Array) -> Array:
    return _ns.reshape(x, (-1,))


def _float_of(x: Array, op: str) -> Array:
    """``x`` in the dtype NumPy computes ``op`` in: integers and bools in float64."""
    if x.dtype.kind in "biu":
        return _ns.astype(x, dt.float64)
    return x


def _along(x: Array, axis: int, start: int, stop: int) -> Array:
    return x[(slice(None),) * axis + (slice(start, stop),)]


# ---- NumPy's names for namespace functions ---------------------------------------------------
absolute = _OPS["abs"]
arccos, arcsin, arctan = _OPS["acos"], _OPS["asin"], _OPS["atan"]
arccosh, arcsinh, arctanh = _OPS["acosh"], _OPS["asinh"], _OPS["atanh"]
arctan2 = _OPS["atan2"]
power = _OPS["pow"]
mod = _OPS["remainder"]
true_divide = _OPS["divide"]
invert = bitwise_not = _OPS["bitwise_invert"]
left_shift, right_shift = _OPS["bitwise_left_shift"], _OPS["bitwise_right_shift"]
conjugate = _OPS["conj"]


def concatenate(arrays: Sequence[Array], axis: int | None = 0, out=None, *,
                dtype=None) -> Array:
    """Join arrays along an existing axis (NumPy's concatenate; axis=None flattens)."""
    _no_out("concatenate", out)
    res = _ns.concat(list(arrays) if isinstance(arrays, tuple) else arrays, axis=axis)
    return res if dtype is None else _ns.astype(res, dtype)


def transpose(a: Array, axes: Sequence[int] | None = None) -> Array:
    """The axes of ``a`` reversed, or permuted as ``axes``."""
    _arr(a, "transpose")
    if axes is None:
        axes = tuple(range(a.ndim - 1, -1, -1))
    return _ns.permute_dims(a, tuple(_ints_arg(axes, "transpose", "axes")))


def fabs(x: Array, /) -> Array:
    """Absolute values of a real array, as floats (integers in float64)."""
    _arr(x, "fabs", "x")
    if x.dtype.kind == "c":
        raise TypeError("fabs: complex arrays are not supported; use absolute")
    return _ns.abs(_float_of(x, "fabs"))


def amax(a: Array, axis=None, out=None, keepdims: bool = False) -> Array:
    """Largest element along ``axis`` (NumPy's amax: max)."""
    _no_out("amax", out)
    return _ns.max(_arr(a, "amax"), axis=axis, keepdims=keepdims)


def amin(a: Array, axis=None, out=None, keepdims: bool = False) -> Array:
    """Smallest element along ``axis`` (NumPy's amin: min)."""
    _no_out("amin", out)
    return _ns.min(_arr(a, "amin"), axis=axis, keepdims=keepdims)


def _cum(op: str, fn, a: Array, axis, dtype, out) -> Array:
    _no_out(op, out)
    _arr(a, op)
    if axis is None:
        a, axis = _flat(a), 0
    return fn(a, axis=axis, dtype=dtype)


def cumsum(a: Array, axis: int | None = None, dtype=None, out=None) -> Array:
    """Running sum along ``axis`` (of the flattened array when None)."""
    return _cum("cumsum", _ns.cumulative_sum, a, axis, dtype, out)


def cumprod(a: Array, axis: int | None = None, dtype=None, out=None) -> Array:
    """Running product along ``axis`` (of the flattened array when None)."""
    return _cum("cumprod", _ns.cumulative_prod, a, axis, dtype, out)


def ravel(a: Array, order: str = "C") -> Array:
    """``a`` as one dimension (C order only)."""
    _arr(a, "ravel")
    if order not in ("C", "K", "A"):
        raise NotImplementedError(f"ravel: order={order!r} is not supported (only 'C')")
    return _flat(a)


def swapaxes(a: Array, axis1: int, axis2: int) -> Array:
    """``a`` with axes ``axis1`` and ``axis2`` exchanged."""
    _arr(a, "swapaxes")
    i = normalize_axis(axis1, a.ndim, "swapaxes", "axis1")
    j = normalize_axis(axis2, a.ndim, "swapaxes", "axis2")
    perm = list(range(a.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return _ns.permute_dims(a, tuple(perm))


def _scaled(x: Array, factor: float, op: str) -> Array:
    _arr(x, op, "x")
    return _ns.multiply(_float_of(x, op), factor)


def degrees(x: Array, /) -> Array:
    """Angles in radians converted to degrees."""
    return _scaled(x, 180.0 / math.pi, "degrees")


def radians(x: Array, /) -> Array:
    """Angles in degrees converted to radians."""
    return _scaled(x, math.pi / 180.0, "radians")


def rad2deg(x: Array, /) -> Array:
    """Angles in radians converted to degrees (degrees)."""
    return _scaled(x, 180.0 / math.pi, "rad2deg")


def deg2rad(x: Array, /) -> Array:
    """Angles in degrees converted to radians (radians)."""
    return _scaled(x, math.pi / 180.0, "deg2rad")


def rint(x: Array, /) -> Array:
    """Round to the nearest integer, half to even (integers as float64, as NumPy)."""
    _arr(x, "rint", "x")
    return _ns.round(_float_of(x, "rint"))


def fix(x: Array, /) -> Array:
    """Round toward zero (trunc); integers are returned as they are."""
    _arr(x, "fix", "x")
    return _ns.asarray(x, copy=True) if x.dtype.kind in "biu" else _ns.trunc(x)


def around(a: Array, decimals: int = 0, out=None) -> Array:
    """Round to ``decimals`` decimal places, half to even: the namespace's ``round``."""
    return _ns.round(a, decimals, out)


def ndim(a) -> int:
    """Number of dimensions of ``a`` (an Array, scalar or nested sequence)."""
    return a.ndim if isinstance(a, Array) else np.ndim(a)


def shape(a) -> tuple:
    """Shape of ``a`` (an Array, scalar or nested sequence)."""
    return a.shape if isinstance(a, Array) else np.shape(a)


def size(a, axis: int | None = None) -> int:
    """Number of elements of ``a`` (along ``axis`` where given)."""
    if not isinstance(a, Array):
        return np.size(a, axis)
    if axis is None:
        return a.size
    return a.shape[normalize_axis(axis, a.ndim, "size")]


def isscalar(element) -> bool:
    """Whether ``element`` is a scalar (a Python or NumPy number, str, bytes); Arrays, even
    0-d ones, are not."""
    return not isinstance(element, Array) and bool(np.isscalar(element))


def copy(a: Array, order: str = "K", subok: bool = False) -> Array:
    """A copy of ``a`` on its device (differentiable, as Array.copy)."""
    return _arr(a, "copy").copy()


def unique(ar: Array, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           sorted: bool = True):
    """The sorted unique elements of ``ar`` (flattened; with ``axis``, the unique slices along
    it, in lexicographic order), with NumPy's optional first indices, inverse (shaped like
    ``ar``; 1-D with ``axis``) and counts; NaNs count as one value when equal_nan (not in
    slices, as NumPy's)."""
    _arr(ar, "unique", "ar")
    if axis is not None:
        return _unique_axis(ar, axis, return_index, return_inverse, return_counts)
    vals, idx, inv, cnt = _ns.unique_all(ar)
    n = vals.shape[0]
    if equal_nan and vals.dtype.kind in "fc" and n:
        k = int(_ns.sum(_ns.isnan(vals)))   # NaNs sort last, each its own value: merge them
        if k > 1:
            m = n - k + 1
            first = _ns.min(idx[m - 1:])
            idx = _ns.concat([idx[:m - 1], _ns.reshape(first, (1,))])
            cnt = _ns.concat([cnt[:m - 1], _ns.reshape(_ns.sum(cnt[m - 1:]), (1,))])
            inv = _ns.minimum(inv, m - 1)
            vals = vals[:m]
    out = [vals]
    if return_index:
        out.append(idx)
    if return_inverse:
        out.append(inv)
    if return_counts:
        out.append(cnt)
    return out[0] if len(out) == 1 else tuple(out)


def _unique_axis(ar: Array, axis: int, return_index: bool, return_inverse: bool,
                 return_counts: bool):
    """unique(axis=...): a stable lexicographic sort of the slices along ``axis`` (each
    flattened to a row), then the rows that differ from the one before (their count read on
    the host, as unique_values reads it)."""
    op = "unique"
    if ar.ndim == 0:
        raise AxisError(f"{op}: axis {axis} is out of bounds for a 0-d array")
    ax = normalize_axis(axis, ar.ndim, op)
    moved = _ns.moveaxis(ar, ax, 0)
    n = moved.shape[0]
    rows = _ns.reshape(moved, (n, math.prod(moved.shape[1:])))
    m = rows.shape[1]
    if m and n:   # the first column is the primary key: lexsort's last
        perm = _OPS["lexsort"]([rows[:, j] for j in range(m - 1, -1, -1)])
    else:
        perm = _ns.arange(n, dtype=dt.int64, device=ar.device)
    srt = _ns.take(rows, perm, axis=0)
    new = _ns.any(_ns.not_equal(srt[1:], srt[:-1]), axis=1)   # (NaN rows never match)
    first = _ns.concat([_ns.ones((builtins.min(n, 1),), dtype=dt.bool, device=ar.device), new])
    (starts,) = _ns.nonzero(first)
    vals = _ns.take(srt, starts, axis=0)
    vals = _ns.moveaxis(_ns.reshape(vals, (starts.shape[0],) + moved.shape[1:]), 0, ax)
    out = [vals]
    if return_index:
        out.append(_ns.take(perm, starts))
    if return_inverse:
        group = _ns.subtract(_ns.cumulative_sum(_ns.astype(first, dt.int64)), 1)
        out.append(_ns.take(group, _ns.argsort(perm, stable=True)) if n else group)
    if return_counts:
        ends = _ns.concat([starts[1:], _ns.asarray([n], dtype=dt.int64, device=ar.device)])
        out.append(_ns.subtract(ends, starts))
    return out[0] if len(out) == 1 else tuple(out)


# ---- manipulation ----------------------------------------------------------------------------
def _atleast(arys: tuple, n: int, op: str):
    out = []
    for k, a in enumerate(arys):
        _arr(a, op, f"arys[{k}]")
        s = a.shape
        if a.ndim < n:
            if n == 3 and a.ndim == 1:
                s = (1, s[0], 1)
            elif n == 3 and a.ndim == 2:
                s = s + (1,)
            else:
                s = (1,) * (n - a.ndim) + s
            a = _ns.reshape(a, s)
        out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*arys: Array):
    """Each array with at least one dimension (one array, or a tuple for several)."""
    return _atleast(arys, 1, "atleast_1d")


def atleast_2d(*arys: Array):
    """Each array with at least two dimensions (a 1-D array of N as shape (1, N))."""
    return _atleast(arys, 2, "atleast_2d")


def atleast_3d(*arys: Array):
    """Each array with at least three dimensions ((N,) as (1, N, 1), (M, N) as (M, N, 1))."""
    return _atleast(arys, 3, "atleast_3d")


def _seq(tup, op: str) -> list:
    if isinstance(tup, Array) or not isinstance(tup, (tuple, list)):
        raise TypeError(f"{op}: expected a sequence of arrays, got {type(tup).__name__}")
    if not tup:
        raise ValueError(f"{op}: need at least one array to concatenate")
    return [_arr(a, op, f"tup[{k}]") for k, a in enumerate(tup)]


def _joined(arrays: list, axis: int, dtype) -> Array:
    res = _ns.concat(arrays, axis=axis)
    return res if dtype is None else _ns.astype(res, dtype)


def hstack(tup: Sequence[Array], *, dtype=None) -> Array:
    """Join arrays column-wise (along axis 1; along axis 0 for 1-D arrays)."""
    arrs = [atleast_1d(a) for a in _seq(tup, "hstack")]
    return _joined(arrs, 0 if arrs[0].ndim == 1 else 1, dtype)


def vstack(tup: Sequence[Array], *, dtype=None) -> Array:
    """Join arrays row-wise (1-D arrays as rows)."""
    return _joined([atleast_2d(a) for a in _seq(tup, "vstack")], 0, dtype)


def dstack(tup: Sequence[Array]) -> Array:
    """Join arrays along the third axis (after atleast_3d)."""
    return _ns.concat([atleast_3d(a) for a in _seq(tup, "dstack")], axis=2)


def column_stack(tup: Sequence[Array]) -> Array:
    """Join 1-D arrays as columns (2-D arrays as they are) into a 2-D array."""
    arrs = [_ns.reshape(a, (a.shape[0], 1)) if a.ndim == 1 else atleast_2d(a)
            for a in _seq(tup, "column_stack")]
    return _ns.concat(arrs, axis=1)


def array_split(ary: Array, indices_or_sections, axis: int = 0) -> list[Array]:
    """Split ``ary`` into sections (sizes differ by at most one) or at the given indices."""
    return _split(ary, indices_or_sections, axis, "array_split", equal=False)


def split(ary: Array, indices_or_sections, axis: int = 0) -> list[Array]:
    """Split ``ary`` into equal sections (ValueError when they cannot be) or at indices."""
    return _split(ary, indices_or_sections, axis, "split", equal=True)


def _split(ary: Array, ios, axis, op: str, equal: bool) -> list[Array]:
    _arr(ary, op, "ary")
    if ary.ndim == 0:
        raise ValueError(f"{op}: cannot split a 0-d array")
    axis = normalize_axis(axis, ary.ndim, op)
    n = ary.shape[axis]
    if isinstance(ios, (int, np.integer)) and not isinstance(ios, bool):
        sections = int(ios)
        if sections <= 0:
            raise ValueError(f"{op}: number of sections must be larger than 0, got {sections}")
        if equal and n % sections:
            raise ValueError(f"{op}: array split does not result in an equal division "
                             f"({n} elements into {sections} sections)")
        each, extra = divmod(n, sections)
        bounds = [0]
        for k in range(sections):
            bounds.append(bounds[-1] + each + (k < extra))
        pairs = list(zip(bounds[:-1], bounds[1:]))
    else:
        idx = list(_ints_arg(ios, op, "indices_or_sections"))
        pairs = list(zip([0] + idx, idx + [None]))
    return [_along(ary, axis, s, e) for s, e in pairs]


def hsplit(ary: Array, indices_or_sections) -> list[Array]:
    """Split column-wise (along axis 1; axis 0 for 1-D arrays)."""
    _arr(ary, "hsplit", "ary")
    if ary.ndim == 0:
        raise ValueError("hsplit: only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


def vsplit(ary: Array, indices_or_sections) -> list[Array]:
    """Split row-wise (along axis 0) an array of at least 2 dimensions."""
    _arr(ary, "vsplit", "ary")
    if ary.ndim < 2:
        raise ValueError("vsplit: only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary: Array, indices_or_sections) -> list[Array]:
    """Split along the third axis an array of at least 3 dimensions."""
    _arr(ary, "dsplit", "ary")
    if ary.ndim < 3:
        raise ValueError("dsplit: only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def append(arr: Array, values, axis: int | None = None) -> Array:
    """``values`` appended to ``arr`` along ``axis`` (both flattened when None)."""
    _arr(arr, "append", "arr")
    values = _operand(values, arr, "append", "values")
    if axis is None:
        return _ns.concat([_flat(arr), _flat(values)], axis=0)
    return _ns.concat([arr, values], axis=axis)


def _positions(obj, n: int, op: str) -> tuple[list, bool]:
    """``obj`` (int, slice, sequence of ints or bools) as positions in [0, n) and whether it
    was a single int."""
    if isinstance(obj, slice):
        return list(range(*obj.indices(n))), False
    if isinstance(obj, Array):
        obj = np.asarray(obj)
    h = np.asarray(obj)
    if h.dtype.kind == "b":
        if h.shape != (n,):
            raise ValueError(f"{op}: boolean obj must have shape ({n},), got {h.shape}")
        return [int(i) for i in np.flatnonzero(h)], False
    if h.dtype.kind not in "iu" and h.size:
        raise IndexError(f"{op}: obj must be an int, a slice or a sequence of ints, got "
                         f"{obj!r}")
    return [int(i) for i in h.reshape(-1)], h.ndim == 0


def delete(arr: Array, obj, axis: int | None = None) -> Array:
    """``arr`` without the entries ``obj`` (ints, a slice or a boolean mask) along ``axis``."""
    _arr(arr, "delete", "arr")
    if axis is None:
        arr, axis = _flat(arr), 0
    axis = normalize_axis(axis, arr.ndim, "delete")
    n = arr.shape[axis]
    pos, _ = _positions(obj, n, "delete")
    for p in pos:
        if not -n <= p < n:
            raise IndexError(f"delete: index {p} is out of bounds for axis {axis} with size {n}")
    drop = {p % n for p in pos}
    keep = [i for i in range(n) if i not in drop]
    return _ns.take(arr, _index(keep, arr.device), axis=axis)


def insert(arr: Array, obj, values, axis: int | None = None) -> Array:
    """``values`` inserted into ``arr`` before the positions ``obj`` along ``axis`` (cast to
    ``arr``'s dtype, as NumPy)."""
    op = "insert"
    _arr(arr, op, "arr")
    if axis is None:
        arr, axis = _flat(arr), 0
    axis = normalize_axis(axis, arr.ndim, op)
    n = arr.shape[axis]
    pos, scalar = _positions(obj, n, op)
    if isinstance(obj, slice):
        pos = list(range(*obj.indices(n)))
    for p in pos:
        if not -n <= p <= n:
            raise IndexError(f"{op}: index {p} is out of bounds for axis {axis} with size {n}")
    pos = [p + n if p < 0 else p for p in pos]
    v = _ns.astype(_operand(values, arr, op, "values"), arr.dtype)
    if v.ndim < arr.ndim:
        v = _ns.reshape(v, (1,) * (arr.ndim - v.ndim) + v.shape)
    if len(pos) == 1:
        if scalar:
            v = _ns.moveaxis(v, 0, axis)
        new = v.shape[axis]
        where = [pos[0]] * new
    else:
        new = len(pos)
        where = pos
    shp = arr.shape[:axis] + (new,) + arr.shape[axis + 1:]
    try:
        v = _ns.broadcast_to(v, shp)
    except ValueError:
        raise ValueError(f"{op}: values of shape {v.shape} cannot be broadcast to {shp}") from None
    # output slot of each source: old entries shift past the values inserted before them
    order = sorted(range(new), key=lambda k: where[k])
    slots = {where[k] + r: n + k for r, k in enumerate(order)}
    perm, old = [], 0
    for j in range(n + new):
        if j in slots:
            perm.append(slots[j])
        else:
            perm.append(old)
            old += 1
    return _ns.take(_ns.concat([arr, v], axis=axis), _index(perm, arr.device), axis=axis)


def fliplr(m: Array) -> Array:
    """``m`` with its columns (axis 1) reversed."""
    _arr(m, "fliplr", "m")
    if m.ndim < 2:
        raise ValueError("fliplr: input must be at least 2-d")
    return _ns.flip(m, axis=1)


def flipud(m: Array) -> Array:
    """``m`` with its rows (axis 0) reversed."""
    _arr(m, "flipud", "m")
    if m.ndim < 1:
        raise ValueError("flipud: input must be at least 1-d")
    return _ns.flip(m, axis=0)


def rot90(m: Array, k: int = 1, axes: Sequence[int] = (0, 1)) -> Array:
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes`` (from the first axis
    toward the second)."""
    _arr(m, "rot90", "m")
    axes = _ints_arg(axes, "rot90", "axes")
    if len(axes) != 2:
        raise ValueError("rot90: len(axes) must be 2")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("rot90: axes must be different")
    if not (-m.ndim <= axes[0] < m.ndim and -m.ndim <= axes[1] < m.ndim):
        raise ValueError(f"rot90: axes={axes} out of range for array of ndim={m.ndim}")
    (k,) = _ints_arg(k, "rot90", "k")
    k %= 4
    if k == 0:
        return m.copy()   # (differentiable: asarray(copy=True) would detach it)
    if k == 2:
        return _ns.flip(_ns.flip(m, axis=axes[0]), axis=axes[1])
    perm = list(range(m.ndim))
    a0, a1 = axes[0] % m.ndim, axes[1] % m.ndim
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return _ns.permute_dims(_ns.flip(m, axis=axes[1]), tuple(perm))
    return _ns.flip(_ns.permute_dims(m, tuple(perm)), axis=axes[1])


def rollaxis(a: Array, axis: int, start: int = 0) -> Array:
    """``a`` with ``axis`` moved to sit before position ``start`` (NumPy's rollaxis)."""
    _arr(a, "rollaxis")
    n = a.ndim
    axis = normalize_axis(axis, n, "rollaxis")
    (start,) = _ints_arg(start, "rollaxis", "start")
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise AxisError(f"rollaxis: start={start} must satisfy {-n} <= start < {n + 1}")
    if axis < start:
        start -= 1
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return _ns.permute_dims(a, tuple(order))


def resize(a: Array, new_shape) -> Array:
    """An array of ``new_shape`` filled with ``a``'s elements repeated in order (zeros when
    ``a`` is empty)."""
    _arr(a, "resize")
    shp = _ints_arg(new_shape, "resize", "new_shape")
    if any(s < 0 for s in shp):
        raise ValueError("resize: all elements of new_shape must be non-negative")
    total = math.prod(shp)
    if a.size == 0 or total == 0:
        return _ns.zeros(shp, dtype=a.dtype, device=a.device)
    flat = _flat(a)
    reps = -(-total // a.size)
    if reps > 1:
        flat = _ns.tile(flat, (reps,))
    return _ns.reshape(flat[:total], shp)


def block(arrays) -> Array:
    """An array assembled from nested lists of blocks (the innermost lists join along the
    last axis, the next along the one before, ...)."""
    def depth(x, path) -> int:
        if isinstance(x, tuple):
            raise TypeError(f"block: {path} is a tuple; only lists can be used to arrange blocks")
        if isinstance(x, list):
            if not x:
                raise ValueError(f"block: {path} is an empty list")
            ds = [depth(e, f"{path}[{i}]") for i, e in enumerate(x)]
            if any(d != ds[0] for d in ds):
                raise ValueError(f"block: list depths are mismatched under {path}")
            return ds[0] + 1
        _arr(x, "block", path)
        return 0

    list_nd = depth(arrays, "arrays")
    leaves = []

    def collect(x):
        if isinstance(x, list):
            for e in x:
                collect(e)
        else:
            leaves.append(x)

    collect(arrays)
    nd = builtins.max(list_nd, builtins.max(a.ndim for a in leaves))

    def build(x, level: int) -> Array:
        if not isinstance(x, list):
            return _ns.reshape(x, (1,) * (nd - x.ndim) + x.shape) if x.ndim < nd else x
        return _ns.concat([build(e, level + 1) for e in x], axis=-(list_nd - level))

    return build(arrays, 0)


def _pairs(v, nd: int, op: str, arg: str, as_index: bool) -> list:
    """NumPy's pad argument broadcast to (ndim, 2) pairs of Python values."""
    h = np.asarray(v)
    if as_index:
        if h.dtype.kind not in "iu":
            if h.dtype.kind == "f" and np.all(h == np.round(h)):
                h = h.astype(np.int64)
            else:
                raise TypeError(f"{op}: `{arg}` must be of integral type")
        if np.any(h < 0):
            raise ValueError(f"{op}: index can't contain negative values ({arg}={v!r})")
    try:
        b = np.broadcast_to(h, (nd, 2))
    except ValueError:
        raise ValueError(f"{op}: {arg}={v!r} cannot be broadcast to ({nd}, 2)") from None
    return [(b[i, 0].item(), b[i, 1].item()) for i in range(nd)]


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "maximum",
              "minimum", "mean", "median", "empty")


def _dict_widths(pad_width: dict, nd: int, op: str) -> list:
    """NumPy 2's dict pad_width ({axis: width or (before, after)}; other axes unpadded)."""
    seq = [(0, 0)] * nd
    for axis, w in pad_width.items():
        ax = normalize_axis(axis, nd, op)
        if isinstance(w, (int, np.integer)) and not isinstance(w, bool):
            seq[ax] = (int(w), int(w))
        elif isinstance(w, tuple) and len(w) == 2 and all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in w):
            seq[ax] = (int(w[0]), int(w[1]))
        else:
            raise TypeError(f"{op}: a pad_width dict maps an axis to an int or a pair of ints, "
                            f"got {w!r} for axis {axis}")
    return seq


def pad(array: Array, pad_width, mode: str = "constant", **kwargs) -> Array:
    """``array`` padded by ``pad_width`` ((before, after) per axis, or a dict of axis to
    width) in NumPy's ``mode``: constant (constant_values), edge, reflect and symmetric
    (reflect_type 'even' or 'odd'), wrap, linear_ramp (end_values), maximum, minimum, mean,
    median (stat_length), empty."""
    op = "pad"
    _arr(array, op, "array")
    if callable(mode) or mode not in _PAD_MODES:
        raise ValueError(f"{op}: mode {mode!r} is not supported; expected one of "
                         f"{', '.join(_PAD_MODES)}")
    allowed = {"constant": {"constant_values"}, "linear_ramp": {"end_values"},
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
               "maximum": {"stat_length"}, "minimum": {"stat_length"},
               "mean": {"stat_length"}, "median": {"stat_length"}}.get(mode, set())
    bad = set(kwargs) - allowed
    if bad:
        raise ValueError(f"{op}: unsupported keyword arguments for mode {mode!r}: {sorted(bad)}")
    odd = kwargs.get("reflect_type", "even")
    if odd not in ("even", "odd"):
        raise ValueError(f"{op}: reflect_type must be 'even' or 'odd', got {odd!r}")
    odd = odd == "odd"
    nd = array.ndim
    widths = _dict_widths(pad_width, nd, op) if isinstance(pad_width, dict) else \
        _pairs(pad_width, nd, op, "pad_width", True)
    if isinstance(pad_width, dict) and any(b < 0 or e < 0 for b, e in widths):
        raise ValueError(f"{op}: index can't contain negative values (pad_width={pad_width!r})")
    x = array
    if mode in ("constant", "empty"):
        vals = _pairs(kwargs.get("constant_values", 0), nd, op, "constant_values", False)
    elif mode == "linear_ramp":
        vals = _pairs(kwargs.get("end_values", 0), nd, op, "end_values", False)
    elif mode in ("maximum", "minimum", "mean", "median"):
        sl = kwargs.get("stat_length")
        vals = [(None, None)] * nd if sl is None else _pairs(sl, nd, op, "stat_length", True)
    for ax, (b, e) in enumerate(widths):
        if not (b or e):
            continue
        n = x.shape[ax]
        if mode in ("constant", "empty"):
            x = _pad_constant(x, ax, b, e, vals[ax])
            continue
        if n == 0:
            raise ValueError(f"{op}: can't extend empty axis {ax} using modes other than "
                             "'constant' or 'empty'")
        if odd and mode in ("reflect", "symmetric") and not (mode == "reflect" and n == 1):
            x = _pad_odd(x, ax, b, e, mode)
        elif mode in ("edge", "reflect", "symmetric", "wrap"):
            x = _ns.take(x, _index([_pad_src(j - b, n, mode) for j in range(b + n + e)],
                                   x.device), axis=ax)
        elif mode == "linear_ramp":
            x = _pad_ramp(x, ax, b, e, vals[ax])
        else:
            x = _pad_stat(x, ax, b, e, vals[ax], mode)
    return x if x is not array else array.copy()   # (differentiable, as the padded results)


def _pad_src(t: int, n: int, mode: str) -> int:
    """The source position along an axis of ``n`` for output position ``t`` (relative to the
    first original element)."""
    if mode == "edge":
        return builtins.min(builtins.max(t, 0), n - 1)
    if mode == "wrap":
        return t % n
    if mode == "symmetric":
        t %= 2 * n
        return t if t < n else 2 * n - 1 - t
    if n == 1:   # reflect
        return 0
    t %= 2 * n - 2
    return t if t < n else 2 * n - 2 - t


def _pad_odd(x: Array, ax: int, b: int, e: int, mode: str) -> Array:
    """NumPy's reflect_type='odd': each reflected value is 2 * edge - value, repeated
    reflections drifting by 2 * (last - first) per period, as NumPy's chunk-by-chunk padding
    gives. Composed: x's elements at host-computed positions, with signs, plus multiples of the
    first and last elements."""
    n = x.shape[ax]
    per = 2 * (n - 1) if mode == "reflect" else 2 * n
    src, sign, c_first, c_last = [], [], [], []
    for j in range(b + n + e):
        q, r = divmod(j - b, per)
        if r < n:   # (reflect: r == n - 1 reads the last element either way)
            src.append(r)
            sign.append(1)
            c_last.append(2 * q)
        else:   # reflected about the last element
            src.append(per - r if mode == "reflect" else per - 1 - r)
            sign.append(-1)
            c_last.append(2 * q + 2)
        c_first.append(-2 * q)
    body = _ns.take(x, _index(src, x.device), axis=ax)
    first, last = _along(x, ax, 0, 1), _along(x, ax, n - 1, n)

    def coef(v: list) -> Array:
        shp = [1] * x.ndim
        shp[ax] = len(v)
        return _ns.reshape(_ns.astype(_index(v, x.device), x.dtype), tuple(shp))

    return _ns.add(_ns.multiply(body, coef(sign)),
                   _ns.add(_ns.multiply(first, coef(c_first)), _ns.multiply(last, coef(c_last))))


def _fill_block(x: Array, ax: int, width: int, value) -> Array:
    shp = x.shape[:ax] + (width,) + x.shape[ax + 1:]
    v = np.asarray(value).astype(np.dtype(x.dtype.name)).item()
    return _ns.full(shp, v, dtype=x.dtype, device=x.device)


def _pad_constant(x: Array, ax: int, b: int, e: int, vals) -> Array:
    parts = ([_fill_block(x, ax, b, vals[0])] if b else []) + [x] + \
            ([_fill_block(x, ax, e, vals[1])] if e else [])
    return _ns.concat(parts, axis=ax)


def _weights(ws: list, x: Array, ax: int) -> Array:
    shp = [1] * x.ndim
    shp[ax] = len(ws)
    d = x.dtype if x.dtype.kind in "fc" else dt.float64
    return _ns.reshape(_ns.asarray(np.asarray(ws), dtype=d, device=x.device), tuple(shp))


def _as_dtype_of(v: Array, x: Array) -> Array:
    if x.dtype.kind in "iu" and v.dtype.kind == "f":
        return _ns.astype(_ns.floor(v), x.dtype)   # NumPy 2 linspace floors for ints
    return v if v.dtype is x.dtype else _ns.astype(v, x.dtype)


def _pad_ramp(x: Array, ax: int, b: int, e: int, ends) -> Array:
    n = x.shape[ax]
    parts = []
    xf = _float_of(x, "pad")
    if b:   # NumPy's linspace(end, edge, b, endpoint=False)
        edge = _along(xf, ax, 0, 1)
        w = _weights([k / b for k in range(b)], x, ax)
        parts.append(_as_dtype_of(_ns.add(ends[0], _ns.multiply(_ns.subtract(edge, ends[0]), w)),
                                  x))
    parts.append(x)
    if e:
        edge = _along(xf, ax, n - 1, n)
        w = _weights([(e - 1 - k) / e for k in range(e)], x, ax)
        parts.append(_as_dtype_of(_ns.add(ends[1], _ns.multiply(_ns.subtract(edge, ends[1]), w)),
                                  x))
    return _ns.concat(parts, axis=ax)


def _pad_stat(x: Array, ax: int, b: int, e: int, lengths, mode: str) -> Array:
    n = x.shape[ax]
    parts = []
    for width, length, left in ((b, lengths[0], True), (e, lengths[1], False)):
        if not width:
            continue
        m = n if length is None else builtins.min(builtins.max(length, 1), n)
        if length == 0:
            raise ValueError("pad: stat_length of 0 yields no value for padding")
        chunk = _along(x, ax, 0, m) if left else _along(x, ax, n - m, n)
        if mode in ("mean", "median"):
            f = _ns.mean if mode == "mean" else _OPS["median"]
            s = f(_float_of(chunk, "pad"), axis=ax, keepdims=True)
            s = _ns.astype(_ns.round(s), x.dtype) if x.dtype.kind in "iub" else s
        else:
            s = getattr(_ns, "max" if mode == "maximum" else "min")(chunk, axis=ax, keepdims=True)
        rep = [1] * x.ndim
        rep[ax] = width
        parts.append((left, _ns.tile(s, tuple(rep))))
    lhs = [p for left, p in parts if left]
    rhs = [p for left, p in parts if not left]
    return _ns.concat(lhs + [x] + rhs, axis=ax)


def trim_zeros(filt: Array, trim: str = "fb") -> Array:
    """The 1-D ``filt`` without its leading ('f') and/or trailing ('b') zeros (reads which
    elements are zero on the host: the result's size depends on them)."""
    _arr(filt, "trim_zeros", "filt")
    if filt.ndim != 1:
        raise ValueError(f"trim_zeros: filt must be 1-D, got shape {filt.shape}")
    trim = trim.lower()
    if not set(trim) <= {"f", "b"}:
        raise ValueError(f"trim_zeros: unexpected character(s) in trim={trim!r}")
    nz = np.flatnonzero(np.asarray(_ns.not_equal(filt, 0) if filt.dtype.kind != "b" else filt))
    if nz.size == 0:
        return filt[0:0]
    start = int(nz[0]) if "f" in trim else 0
    stop = int(nz[-1]) + 1 if "b" in trim else filt.shape[0]
    return filt[start:stop]


# ---- linear algebra --------------------------------------------------------------------------
def _pair(a, b, op: str) -> tuple[Array, Array]:
    if not isinstance(a, Array) and not isinstance(b, Array):
        raise TypeError(f"{op}: at least one of a and b must be a grilly Array")
    if not isinstance(a, Array):
        a = _operand(a, b, op, "a")
    if not isinstance(b, Array):
        b = _operand(b, a, op, "b")
    common_device(op, a, b)
    return a, b


def dot(a: Array, b: Array, out=None) -> Array:
    """NumPy's dot: scalars multiply, 1-D with 1-D is the inner product, 2-D with 2-D the
    matrix product, otherwise a sum over a's last axis and b's second-to-last."""
    _no_out("dot", out)
    a, b = _pair(a, b, "dot")
    if a.ndim == 0 or b.ndim == 0:
        return _ns.multiply(a, b)
    kb = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[kb]:
        raise ValueError(f"dot: shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} "
                         f"(dim {a.ndim - 1}) != {b.shape[kb]} (dim {kb})")
    if a.ndim <= 2 and b.ndim <= 2:
        return _ns.matmul(a, b)
    return _ns.tensordot(a, b, axes=([a.ndim - 1], [kb]))


def vdot(a: Array, b: Array, /) -> Array:
    """Inner product of the flattened arrays, conjugating ``a``."""
    a, b = _pair(a, b, "vdot")
    if a.size != b.size:
        raise ValueError(f"vdot: a and b have different sizes ({a.size} and {b.size})")
    a = _flat(a)
    return _ns.sum(_ns.multiply(_ns.conj(a) if a.dtype.kind == "c" else a, _flat(b)))


def inner(a: Array, b: Array, /) -> Array:
    """Inner product over the last axes of ``a`` and ``b`` (products for scalars)."""
    a, b = _pair(a, b, "inner")
    if a.ndim == 0 or b.ndim == 0:
        return _ns.multiply(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"inner: shapes {a.shape} and {b.shape} do not match on the last axis")
    return _ns.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


def outer(a: Array, b: Array, out=None) -> Array:
    """Outer product of the flattened ``a`` and ``b``."""
    _no_out("outer", out)
    a, b = _pair(a, b, "outer")
    return _ns.multiply(_ns.reshape(a, (-1, 1)), _ns.reshape(b, (1, -1)))


def kron(a: Array, b: Array) -> Array:
    """Kronecker product: blocks of ``b`` scaled by each element of ``a``."""
    a, b = _pair(a, b, "kron")
    nd = builtins.max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + a.shape
    sb = (1,) * (nd - b.ndim) + b.shape
    ra = _ns.reshape(a, tuple(v for s in sa for v in (s, 1)))
    rb = _ns.reshape(b, tuple(v for s in sb for v in (1, s)))
    return _ns.reshape(_ns.multiply(ra, rb), tuple(p * q for p, q in zip(sa, sb)))


def cross(a: Array, b: Array, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Array:
    """Cross product of 3-element (or 2-element, z only) vectors along the given axes."""
    op = "cross"
    a, b = _pair(a, b, op)
    if axis is not None:
        axisa = axisb = axisc = axis
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"{op}: a and b must have at least one dimension")
    a = _ns.moveaxis(a, normalize_axis(axisa, a.ndim, op, "axisa"), -1)
    b = _ns.moveaxis(b, normalize_axis(axisb, b.ndim, op, "axisb"), -1)
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"{op}: incompatible dimensions for cross product (dimension must be "
                         f"2 or 3), got {na} and {nb}")
    comp = [a[..., i] for i in range(na)]
    comq = [b[..., i] for i in range(nb)]
    mul, sub = _ns.multiply, _ns.subtract
    z = sub(mul(comp[0], comq[1]), mul(comp[1], comq[0]))
    if na == 2 and nb == 2:
        return z
    if na == 2:
        x = mul(comp[1], comq[2])
        y = _ns.negative(mul(comp[0], comq[2]))
    elif nb == 2:
        x = _ns.negative(mul(comp[2], comq[1]))
        y = mul(comp[2], comq[0])
    else:
        x = sub(mul(comp[1], comq[2]), mul(comp[2], comq[1]))
        y = sub(mul(comp[2], comq[0]), mul(comp[0], comq[2]))
    x, y, z = _ns.broadcast_arrays(x, y, z)
    res = _ns.stack([x, y, z], axis=-1)
    return _ns.moveaxis(res, -1, normalize_axis(axisc, res.ndim, op, "axisc"))


def diagonal(a: Array, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """The ``offset`` diagonal of the planes (axis1, axis2), as the last axis."""
    op = "diagonal"
    _arr(a, op)
    if a.ndim < 2:
        raise ValueError(f"{op}: a must have at least 2 dimensions, got shape {a.shape}")
    i = normalize_axis(axis1, a.ndim, op, "axis1")
    j = normalize_axis(axis2, a.ndim, op, "axis2")
    if i == j:
        raise ValueError(f"{op}: axis1 and axis2 cannot be the same")
    (offset,) = _ints_arg(offset, op, "offset")
    return _ns.linalg.diagonal(_ns.moveaxis(a, (i, j), (-2, -1)), offset=offset)


def trace(a: Array, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None,
          out=None) -> Array:
    """Sum along the ``offset`` diagonal of the planes (axis1, axis2)."""
    _no_out("trace", out)
    d = diagonal(a, offset, axis1, axis2)
    if d.dtype.kind == "b" and dtype is None:
        dtype = dt.int64
    return _ns.sum(d, axis=-1, dtype=dtype)


def diag(v: Array, k: int = 0) -> Array:
    """The 2-D array with 1-D ``v`` on its ``k``-th diagonal, or the ``k``-th diagonal of a
    2-D ``v``."""
    _arr(v, "diag", "v")
    (k,) = _ints_arg(k, "diag", "k")
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag: input must be 1- or 2-d, got shape {v.shape}")
    m = v.shape[0]
    n = m + abs(k)
    if m == 0:
        return _ns.zeros((n, n), dtype=v.dtype, device=v.device)
    cols = _ns.take(v, _index([builtins.min(builtins.max(j - builtins.max(k, 0), 0), m - 1)
                               for j in range(n)], v.device))
    mask = _ns.astype(_ns.eye(n, n, k=k, dtype=dt.int8, device=v.device), dt.bool)
    zero = False if v.dtype.kind == "b" else 0
    return _ns.where(mask, _ns.reshape(cols, (1, n)), zero)


def diagflat(v: Array, k: int = 0) -> Array:
    """The 2-D array with the flattened ``v`` on its ``k``-th diagonal."""
    return diag(_flat(_arr(v, "diagflat", "v")), k)


def tri(N: int, M: int | None = None, k: int = 0, dtype=float, *, device=None) -> Array:
    """An N x M array with ones at and below the ``k``-th diagonal, zeros elsewhere."""
    (N,) = _ints_arg(N, "tri", "N")
    (M,) = _ints_arg(N if M is None else M, "tri", "M")
    (k,) = _ints_arg(k, "tri", "k")
    d = dt.float64 if dtype is float else dt.as_dtype(dtype, "tri")
    rows = _ns.reshape(_ns.arange(N, dtype=dt.int64, device=device), (N, 1))
    cols = _ns.reshape(_ns.arange(M, dtype=dt.int64, device=device), (1, M))
    return _ns.astype(_ns.greater_equal(_ns.add(rows, k), cols), d)


def _index_arrays(idx: tuple, device) -> tuple:
    return tuple(_index(i, device) for i in idx)


def tril_indices(n: int, k: int = 0, m: int | None = None, *, device=None) -> tuple:
    """Row and column indices of the lower triangle (at and below diagonal ``k``) of n x m."""
    return _index_arrays(np.tril_indices(n, k, m), device)


def triu_indices(n: int, k: int = 0, m: int | None = None, *, device=None) -> tuple:
    """Row and column indices of the upper triangle (at and above diagonal ``k``) of n x m."""
    return _index_arrays(np.triu_indices(n, k, m), device)


def _check_2d(arr, op: str) -> Array:
    _arr(arr, op, "arr")
    if arr.ndim != 2:
        raise ValueError(f"{op}: input array must be 2-d, got shape {arr.shape}")
    return arr


def tril_indices_from(arr: Array, k: int = 0) -> tuple:
    """tril_indices for the shape of the 2-D ``arr``."""
    _check_2d(arr, "tril_indices_from")
    return tril_indices(arr.shape[0], k, arr.shape[1], device=arr.device)


def triu_indices_from(arr: Array, k: int = 0) -> tuple:
    """triu_indices for the shape of the 2-D ``arr``."""
    _check_2d(arr, "triu_indices_from")
    return triu_indices(arr.shape[0], k, arr.shape[1], device=arr.device)


def diag_indices(n: int, ndim: int = 2, *, device=None) -> tuple:
    """Indices of the main diagonal of an n x ... x n array of ``ndim`` dimensions."""
    (n,) = _ints_arg(n, "diag_indices", "n")
    i = _ns.arange(n, dtype=dt.int64, device=device)
    return (i,) * ndim


def diag_indices_from(arr: Array) -> tuple:
    """diag_indices for ``arr`` (at least 2-D, all dimensions of one length)."""
    _arr(arr, "diag_indices_from", "arr")
    if arr.ndim < 2:
        raise ValueError("diag_indices_from: input array must be at least 2-d")
    if any(s != arr.shape[0] for s in arr.shape):
        raise ValueError("diag_indices_from: all dimensions of input must be of equal length")
    return diag_indices(arr.shape[0], arr.ndim, device=arr.device)


def fill_diagonal(a: Array, val, wrap: bool = False) -> None:
    """Write ``val`` (repeated as needed) into the main diagonal of ``a``, in place."""
    op = "fill_diagonal"
    _arr(a, op)
    if a.ndim < 2:
        raise ValueError(f"{op}: array must be at least 2-d")
    if a.ndim == 2:
        step = a.shape[1] + 1
        end = None if wrap else a.shape[1] * a.shape[1]
    else:
        if any(s != a.shape[0] for s in a.shape):
            raise ValueError(f"{op}: all dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(a.shape[:-1]).sum())
        end = None
    flat = list(range(0, a.size if end is None else builtins.min(end, a.size), step))
    if not flat:
        return None
    idx = _index_arrays(np.unravel_index(np.asarray(flat, dtype=np.int64), a.shape), a.device)
    v = _operand(val, a, op, "val")
    v = resize(_ns.astype(v, a.dtype), (len(flat),)) if v.ndim else v
    a[idx] = v
    return None


def identity(n: int, dtype=None, *, device=None) -> Array:
    """The n x n identity matrix (float64 by default)."""
    return _ns.eye(n, dtype=dt.float64 if dtype is None else dtype, device=device)


# ---- classification --------------------------------------------------------------------------
def isposinf(x: Array, out=None) -> Array:
    """Whether each element is +inf (False for NaN; real input, as NumPy's)."""
    _no_out("isposinf", out)
    x = _arr(x, "isposinf", "x")
    if x.dtype.kind == "c":
        raise TypeError("isposinf: complex input is not supported (as NumPy)")
    return _ns.logical_and(_ns.isinf(x), _ns.greater(x, 0))


def isneginf(x: Array, out=None) -> Array:
    """Whether each element is -inf (False for NaN; real input, as NumPy's)."""
    _no_out("isneginf", out)
    x = _arr(x, "isneginf", "x")
    if x.dtype.kind == "c":
        raise TypeError("isneginf: complex input is not supported (as NumPy)")
    return _ns.logical_and(_ns.isinf(x), _ns.less(x, 0))


def isreal(x: Array) -> Array:
    """Whether each element's imaginary part is zero (all True for a real dtype)."""
    x = _arr(x, "isreal", "x")
    return _ns.equal(_ns.imag(x), 0) if x.dtype.kind == "c" else _ns.ones_like(x, dtype=dt.bool)


def iscomplex(x: Array) -> Array:
    """Whether each element's imaginary part is nonzero."""
    return _ns.logical_not(isreal(x))


def isrealobj(x) -> bool:
    """Whether ``x``'s dtype is not complex (a Python bool, as NumPy's)."""
    return not iscomplexobj(x)


def iscomplexobj(x) -> bool:
    """Whether ``x``'s dtype is complex (a Python bool, as NumPy's)."""
    d = x.dtype if isinstance(x, Array) else np.asarray(x).dtype
    return d.kind == "c"


# ---- comparisons -----------------------------------------------------------------------------
def isclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Array:
    """Whether ``|a - b| <= atol + rtol * |b|`` elementwise (equal infinities are close; NaNs
    only where equal_nan)."""
    op = "isclose"
    a, b = _pair(a, b, op)
    if a.dtype.kind in "biu" and b.dtype.kind in "biu":
        a, b = _float_of(a, op), _float_of(b, op)
    elif a.dtype.kind in "biu":
        a = _ns.astype(a, b.dtype)
    elif b.dtype.kind in "biu":
        b = _ns.astype(b, a.dtype)
    diff = _ns.abs(_ns.subtract(a, b))
    tol = _ns.add(_ns.multiply(_ns.abs(b), rtol), atol) if rtol else atol
    res = _ns.logical_or(_ns.logical_and(_ns.less_equal(diff, tol), _ns.isfinite(b)),
                         _ns.equal(a, b))
    if equal_nan:
        res = _ns.logical_or(res, _ns.logical_and(_ns.isnan(a), _ns.isnan(b)))
    return res


def allclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether isclose holds everywhere (a Python bool: read on the host)."""
    return bool(_ns.all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def array_equal(a1, a2, equal_nan: bool = False) -> bool:
    """Whether ``a1`` and ``a2`` have one shape and equal elements (a Python bool)."""
    a1, a2 = _pair(a1, a2, "array_equal")
    if a1.shape != a2.shape:
        return False
    eq = _ns.equal(a1, a2)
    if equal_nan and a1.dtype.kind in "fc" and a2.dtype.kind in "fc":
        eq = _ns.logical_or(eq, _ns.logical_and(_ns.isnan(a1), _ns.isnan(a2)))
    return bool(_ns.all(eq))


def array_equiv(a1, a2) -> bool:
    """Whether ``a1`` and ``a2`` broadcast together and are equal everywhere (a Python bool)."""
    a1, a2 = _pair(a1, a2, "array_equiv")
    try:
        np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return False
    return bool(_ns.all(_ns.equal(a1, a2)))


# ---- host iteration helpers ------------------------------------------------------------------
class ndindex:
    """Iterator over the index tuples of an array of ``shape`` (C order), as NumPy's:
    ``ndindex(2, 3)`` or ``ndindex((2, 3))``."""

    def __init__(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        for n in shape:
            if isinstance(n, bool) or not hasattr(n, "__index__") or n.__index__() < 0:
                raise ValueError(f"ndindex: dimensions must be non-negative integers, got {n!r}")
        self.shape = tuple(n.__index__() for n in shape)
        self._it = itertools.product(*(range(n) for n in self.shape))

    def __iter__(self):
        return self

    def __next__(self) -> tuple:
        return next(self._it)


class ndenumerate:
    """Iterator of ``(index, value)`` over an array's elements (C order), as NumPy's: the
    array is read on the host once and each value is a NumPy scalar."""

    def __init__(self, arr):
        h = np.asarray(arr)
        self._items = iter(zip(ndindex(h.shape), h.reshape(-1)))

    def __iter__(self):
        return self

    def __next__(self) -> tuple:
        return next(self._items)


def apply_along_axis(func1d, axis: int, arr: Array, *args, **kwargs) -> Array:
    """``func1d`` applied to each 1-D slice of ``arr`` along ``axis`` (a host loop over the
    slices); its results (all of one shape) take the place of that axis, as NumPy's."""
    op = "apply_along_axis"
    check_array(arr, op, "arr")
    if arr.ndim == 0:
        raise AxisError(f"{op}: arr must have at least one dimension")
    ax = normalize_axis(axis, arr.ndim, op)
    moved = _ns.moveaxis(arr, ax, -1)
    outer = moved.shape[:-1]
    if 0 in outer:
        raise ValueError(f"{op}: cannot apply_along_axis when any iteration dimensions are 0")
    res, first = [], None
    for i in itertools.product(*(range(n) for n in outer)):
        r = func1d(moved[i], *args, **kwargs)
        r = r if isinstance(r, Array) else _ns.asarray(np.asarray(r), device=arr.device)
        if first is None:
            first = r
        elif r.shape != first.shape:
            raise ValueError(f"{op}: func1d returned shape {r.shape} for one slice and "
                             f"{first.shape} for another (they must all match)")
        res.append(r if r.dtype == first.dtype else _ns.astype(r, first.dtype))
    out = _ns.reshape(_ns.stack(res), outer + first.shape)
    k = first.ndim   # the result's own axes go where ``axis`` was
    return _ns.moveaxis(out, tuple(range(len(outer), len(outer) + k)),
                        tuple(range(ax, ax + k))) if k else out


def apply_over_axes(func, a: Array, axes) -> Array:
    """``func(a, axis)`` applied over each of ``axes`` in turn, each result keeping a's number
    of dimensions (a reduced axis put back with length one), as NumPy's."""
    op = "apply_over_axes"
    val = check_array(a, op)
    n = a.ndim
    for axis in ((axes,) if np.ndim(axes) == 0 else tuple(np.asarray(axes).reshape(-1))):
        axis = int(axis)
        if axis < 0:
            axis += n
        res = func(val, axis)
        if not isinstance(res, Array):
            res = _ns.asarray(np.asarray(res), device=a.device)
        if res.ndim != val.ndim:
            res = _ns.expand_dims(res, axis=axis)
            if res.ndim != val.ndim:
                raise ValueError(f"{op}: function is not returning an array of the correct shape")
        val = res
    return val


def _torch_transpose(a: Array, dim0: int, dim1: int) -> Array:
    """torch.transpose(input, dim0, dim1): the two axes swapped (NumPy's transpose takes one
    ``axes``, so three arguments are torch's call)."""
    _arr(a, "transpose")
    return _ns.swapaxes(a, dim0, dim1)


dispatch.NUMPY_FORMS["transpose"] = (frozenset(), _torch_transpose)
dispatch.NUMPY_CALLS["transpose"] = lambda args, kw: len(args) == 3 and not kw
dispatch.export(globals())
