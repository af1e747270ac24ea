"""torch's ``dim=`` forms of the reductions and sorts NumPy also has, and torch's (values,
indices) results: ``gp.max(x, dim=1)``, ``gp.std(x, dim=0)`` (unbiased), ``gp.sort(x, dim=1)``,
``x.median(1)``, ``x.mode()``, ``x.kthvalue(2)``, ``gp.triu(x, diagonal=1)``.

A namespace call that passes one of torch's keywords (``dispatch.TORCH_KEYS``: dim, keepdim,
unbiased, diagonal, which NumPy and the Array API never take) is handed by dispatch.op to
``FORMS[name]`` here; without them the function keeps NumPy's meaning. Array's methods call the same forms.
Each form composes namespace functions through ``dispatch.OPS`` (autograd, grilly.jit and every
device see them); the values of a (values, indices) result are gathered at the indices, so their
gradient reaches the chosen elements only, as torch's does.
"""
from __future__ import annotations

from collections import namedtuple

from . import defaults, dispatch

__all__: list[str] = []   # nothing for the namespace: dispatch and Array's methods call FORMS

_OPS = dispatch.OPS

# torch.return_types.<name>: a tuple (unpacks as (values, indices)) with .values and .indices
RESULTS = {n: namedtuple(n, ("values", "indices")) for n in ("max", "min", "sort", "median",
                                                              "nanmedian", "mode", "kthvalue")}


def _axis(op: str, axis, dim):
    """The one axis given as NumPy's ``axis`` or torch's ``dim`` (lists as tuples)."""
    if dim is not None:
        if axis is not None:
            raise TypeError(f"{op}: got both axis and dim")
        axis = dim
    return tuple(axis) if isinstance(axis, list) else axis


def _one_dim(op: str, x, d) -> int:
    """``d`` as one non-negative axis of x (torch's (values, indices) forms take one dim)."""
    if isinstance(d, (tuple, list)) or isinstance(d, bool) or not hasattr(d, "__index__"):
        raise TypeError(f"{op}: dim must be one integer dimension, got {d!r}")
    nd = max(x.ndim, 1)
    d = d.__index__()
    if not -nd <= d < nd:
        raise IndexError(f"{op}: dim {d} is out of range for an array of {x.ndim} dimensions")
    return d % nd


def _pick(op: str, x, idx, d: int, keep: bool):
    """RESULTS[op](x at ``idx`` (kept along axis d) along d, idx), axis d dropped unless keep."""
    if x.ndim == 0:   # torch's 0-d input: dim 0 or -1, the element itself at index 0
        idx = _OPS["reshape"](idx, ())
        return RESULTS[op](x, idx)
    v = _OPS["take_along_axis"](x, idx, axis=d)
    if not keep:
        v, idx = _OPS["squeeze"](v, axis=d), _OPS["squeeze"](idx, axis=d)
    return RESULTS[op](v, idx)


def _flat(x):
    return x if x.ndim else _OPS["reshape"](x, (1,))


_NEEDS_DIM = ("sum", "prod", "mean")   # torch's refuse keepdim= alone; all, any, argmax take it


def _renamed(name: str):
    """The form of a function whose torch meaning is NumPy's: dim/keepdim renamed."""
    def form(x, *args, axis=None, dim=None, keepdim=None, keepdims=False, **kw):
        if args:   # an axis passed positionally
            axis, args = args[0], args[1:]
        if keepdim is not None and axis is None and dim is None and name in _NEEDS_DIM:
            raise TypeError(f"{name}: keepdim= needs dim= (as torch's {name})")
        return _OPS[name](x, *args, axis=_axis(name, axis, dim),
                          keepdims=keepdims if keepdim is None else keepdim, **kw)

    def scan(x, axis=None, *args, dim=None, **kw):   # cumsum/cumulative_sum: no keepdims
        return _OPS[name](x, _axis(name, axis, dim), *args, **kw)
    return scan if name in ("cumsum", "cumulative_sum", "argsort") else form


def _moment(name: str):
    """std/var: torch's unbiased estimate (correction=1) unless unbiased=False or correction=."""
    def form(x, axis=None, *, dim=None, keepdim=None, keepdims=False, unbiased=None,
             correction=None):
        if unbiased is not None and correction is not None:
            raise TypeError(f"{name}: give unbiased or correction, not both")
        c = correction if correction is not None else 1 if unbiased is None else int(unbiased)
        return _OPS[name](x, axis=_axis(name, axis, dim), correction=c,
                          keepdims=keepdims if keepdim is None else keepdim)
    return form


def _extreme(name: str, arg: str):
    """max/min with dim: (values, indices), the first index among ties (a NaN wins, as torch)."""
    def form(x, axis=None, *, dim=None, keepdim=None, keepdims=False):
        d = _axis(name, axis, dim)
        if d is None:
            if keepdim is not None:
                raise TypeError(f"{name}: keepdim= needs dim= (torch's {name}(x, dim, keepdim))")
            return _OPS[name](x)
        d = _one_dim(name, x, d)
        idx = _OPS[arg](_flat(x), axis=d, keepdims=True)
        return _pick(name, x, idx, d, keepdims if keepdim is None else keepdim)
    return form


def sort(x, axis=None, *, dim=None, descending: bool = False, stable: bool = False):
    """torch.sort: (values, indices) along ``dim`` (-1 by default); equal elements keep their
    order (stable; NaNs last, or first when descending, as torch)."""
    d = _axis("sort", axis, dim)
    d = _one_dim("sort", x, -1 if d is None else d)
    idx = _OPS["argsort"](_flat(x), axis=d, descending=descending, stable=True)
    return _pick("sort", x, idx, d, True)


def _kth(op: str, x, pos, d: int, keep: bool):
    """RESULTS[op] of the element at sorted position ``pos`` (an int or an index array)."""
    order = _OPS["argsort"](_flat(x), axis=d, stable=True)
    if isinstance(pos, int):
        pos = _OPS["full"]((1,) * max(x.ndim, 1), pos, dtype=order.dtype, device=x.device)
    return _pick(op, x, _OPS["take_along_axis"](order, pos, axis=d), d, keep)


def _middle(op: str, x, axis, dim, keepdim, keepdims, skip_nan: bool):
    """median/nanmedian's (values, indices): the lower middle of each slice (of its non-NaN
    values with ``skip_nan``), or the 0-d value of all elements without a dim."""
    d = _axis(op, axis, dim)
    keep = keepdims if keepdim is None else keepdim
    if d is None:
        return _middle(op, _OPS["reshape"](x, (-1,)), None, 0, None, False, skip_nan).values
    d = _one_dim(op, x, d)
    n = x.shape[d] if x.ndim else 1
    if n == 0:
        raise IndexError(f"{op}: dimension {d} is empty")
    pos = (n - 1) // 2
    if x.dtype.kind in "fc":   # NaNs sort last, the first one at n - (the NaN count)
        nans = _OPS["sum"](_OPS["isnan"](_flat(x.detach())), axis=d, keepdims=True)
        pos = (_OPS["maximum"](_OPS["floor_divide"](n - nans - 1, 2), 0) if skip_nan
               else _OPS["where"](nans > 0, n - nans, pos))
    return _kth(op, x, pos, d, keep)


def median(x, axis=None, *, dim=None, keepdim=None, keepdims=False):
    """torch.median: the lower of the two middle values (no average) and its index, or a NaN
    where the slice has one; without dim, the 0-d median of all elements."""
    return _middle("median", x, axis, dim, keepdim, keepdims, False)


def nanmedian(x, axis=None, *, dim=None, keepdim=None, keepdims=False):
    """torch.nanmedian: median's form ignoring NaNs (the lower middle of the non-NaN values, and
    its index; NaN where a slice is all NaN); without dim, the 0-d nanmedian of all elements."""
    return _middle("nanmedian", x, axis, dim, keepdim, keepdims, True)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")   # torch's five


def _quantile(name: str):
    """torch.quantile / nanquantile: q, dim, keepdim and ``interpolation=`` (NumPy's method)."""
    def form(x, q, axis=None, *, dim=None, keepdim=None, keepdims=False,
             interpolation=None, method="linear"):
        if interpolation is not None:
            if interpolation not in _INTERPOLATIONS:
                raise ValueError(f"{name}: interpolation must be one of "
                                 f"{', '.join(_INTERPOLATIONS)}, got {interpolation!r}")
            method = interpolation
        return _OPS[name](x, q, axis=_axis(name, axis, dim), method=method,
                          keepdims=keepdims if keepdim is None else keepdim)
    return form


def kthvalue(x, k: int, dim: int = -1, keepdim: bool = False):
    """torch.kthvalue: the k-th smallest element along ``dim`` (k from 1) and its index."""
    d = _one_dim("kthvalue", x, dim)
    n = x.shape[d] if x.ndim else 1
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise IndexError(f"kthvalue: k must be an integer in [1, {n}], got {k!r}")
    return _kth("kthvalue", x, k - 1, d, keepdim)


def mode(x, dim: int = -1, keepdim: bool = False):
    """torch.mode: the most frequent value along ``dim`` (the smallest among equally frequent
    ones; a NaN counts once, so NaN only for an all-NaN slice) and the index of its last
    occurrence. Compares all pairs: O(n^2) per slice."""
    d = _one_dim("mode", x, dim)
    if x.dtype.kind == "c":
        raise NotImplementedError("mode: complex input is not supported")
    if x.ndim and x.shape[d] == 0:
        raise IndexError(f"mode: dimension {d} is empty")
    xs = _OPS["moveaxis"](_flat(x.detach()), d, -1)
    same = _OPS["equal"](_OPS["expand_dims"](xs, axis=-1), _OPS["expand_dims"](xs, axis=-2))
    count = _OPS["sum"](same, axis=-1)
    if xs.dtype.kind == "f":   # a NaN equals nothing: it counts once (torch compares with ==)
        nan = _OPS["isnan"](xs)
        count = _OPS["add"](count, _OPS["astype"](nan, count.dtype))
        ok = _OPS["logical_not"](nan)
    top = _OPS["equal"](count, _OPS["max"](count, axis=-1, keepdims=True))
    if xs.dtype.kind == "f":
        # the smallest non-NaN value among the most frequent; NaN only for an all-NaN slice
        top = _OPS["logical_and"](top, ok)
        best = _OPS["min"](_OPS["where"](top, xs, float("inf")), axis=-1, keepdims=True)
        none = _OPS["logical_not"](_OPS["any"](top, axis=-1, keepdims=True))
        best = _OPS["where"](none, float("nan"), best)
        hit = _OPS["logical_or"](_OPS["equal"](xs, best), _OPS["logical_and"](nan, none))
    else:
        best = _OPS["min"](_OPS["where"](top, xs, _OPS["max"](xs)), axis=-1, keepdims=True)
        hit = _OPS["equal"](xs, best)
    at = _OPS["arange"](xs.shape[-1], device=x.device)
    idx = _OPS["max"](_OPS["where"](hit, at, -1), axis=-1, keepdims=True)
    return _pick("mode", x, _OPS["moveaxis"](idx, -1, d), d, keepdim)


def _triangle(name: str):
    """tril/triu with torch's ``diagonal=`` (NumPy's and the Array API's ``k``)."""
    def form(x, k=None, *, diagonal=None):
        if k is not None and diagonal is not None:
            raise TypeError(f"{name}: give k or diagonal, not both")
        return _OPS[name](x, k=(diagonal if k is None else k) or 0)
    return form


def _squeeze(x, axis=None, *, dim=None):
    """torch.squeeze(x, dim): the dims among ``dim`` that have length one (Array.squeeze)."""
    return x.squeeze(axis, dim=dim)


def _topk(x, k, axis=None, *, dim=None, largest: bool = True, sorted: bool = True):  # noqa: A002
    """torch.topk(x, k, dim=-1, largest, sorted): (values, indices) along ``dim``."""
    d = _axis("topk", axis, dim)
    return _OPS["topk"](x, k, axis=-1 if d is None else d, largest=largest, sorted=sorted)


def _trapezoid(y, x=None, dx=None, axis=None, *, dim=None):
    """torch.trapezoid(y, x=None, *, dx=None, dim=-1): gp.trapezoid with ``dim``."""
    d = _axis("trapezoid", axis, dim)
    if x is not None and dx is not None:
        raise TypeError("trapezoid: give x or dx, not both")
    return _OPS["trapezoid"](y, x, 1.0 if dx is None else dx, -1 if d is None else d)


def _rot90(x, k=1, axes=None, *, dims=None):
    """torch.rot90(x, k, dims): gp.rot90 with torch's ``dims`` for NumPy's ``axes``."""
    if axes is not None and dims is not None:
        raise TypeError("rot90: give axes or dims, not both")
    return _OPS["rot90"](x, k, tuple(dims if dims is not None else axes or (0, 1)))


def _split(x, split_size_or_sections=None, axis=None, *, dim=None):
    """torch.split(x, split_size_or_sections, dim): pieces of that size (or those sizes) along
    ``dim`` (Array.split), where NumPy's split(x, n) makes n pieces."""
    if axis is not None:
        raise TypeError("split: give axis (NumPy's split) or dim (torch's), not both")
    if split_size_or_sections is None:
        raise TypeError("split: torch's split(x, split_size_or_sections, dim) needs the size")
    return x.split(split_size_or_sections, dim)


def _diff(x, n=1, axis=None, prepend=None, append=None, *, dim=None):
    """torch.diff(input, n, dim, prepend, append)."""
    d = _axis("diff", axis, dim)
    return x.diff(n, -1 if d is None else d, prepend, append)


def _flip(x, axis=None, *, dims=None):
    """torch.flip(input, dims)."""
    if axis is not None:
        raise TypeError("flip: give axis or dims, not both")
    return _OPS["flip"](x, axis=tuple(dims) if isinstance(dims, (list, tuple)) else dims)


def _roll(x, shift=None, axis=None, *, shifts=None, dims=None):
    """torch.roll(input, shifts, dims) (the flattened array when dims is None)."""
    if (shift is None) == (shifts is None):
        raise TypeError("roll: give the shift once (shift or shifts)")
    d = _axis("roll", axis, dims)
    return x.roll(shift if shifts is None else shifts, d)


def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, *, dim=None):
    """torch.cross(input, other, dim)."""
    return _OPS["cross"](a, b, axis=_axis("cross", axis, dim))


def _tensordot(a, b, axes=None, *, dims=None):
    """torch.tensordot(a, b, dims): an int, or two lists of axes."""
    if axes is not None:
        raise TypeError("tensordot: give axes or dims, not both")
    if isinstance(dims, (list, tuple)):
        dims = tuple(tuple(d) if isinstance(d, (list, tuple)) else (d,) for d in dims)
    return _OPS["tensordot"](a, b, axes=dims)


def _unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
            dim=None, sorted=True, equal_nan=True):  # noqa: A002
    """torch.unique(input, sorted, return_inverse, return_counts, dim) (Array.unique)."""
    if return_index:
        raise TypeError("unique: torch's unique (dim=) has no return_index")
    return ar.unique(sorted, return_inverse, return_counts, _axis("unique", axis, dim))


def _nonzero(x, *, as_tuple=None):
    """torch.nonzero(input, as_tuple=False): the (N, ndim) indices; as_tuple: NumPy's tuple."""
    return x.nonzero(as_tuple=as_tuple)


def _cumprod(a, axis=None, dtype=None, out=None, *, dim=None):
    """torch.cumprod(input, dim, dtype)."""
    if out is not None:
        raise NotImplementedError("cumprod: out= is not supported")
    return _OPS["cumprod"](a, axis=_axis("cumprod", axis, dim), dtype=dtype)


def _diagonal(a, offset=0, axis1=None, axis2=None, *, dim1=None, dim2=None):
    """torch.diagonal(input, offset, dim1, dim2)."""
    d1, d2 = _axis("diagonal", axis1, dim1), _axis("diagonal", axis2, dim2)
    return _OPS["diagonal"](a, offset, 0 if d1 is None else d1, 1 if d2 is None else d2)


def _concat(name: str):
    def form(arrays, axis=None, out=None, *, dim=None, dtype=None):
        if out is not None:
            raise NotImplementedError(f"{name}: out= is not supported")
        d = _axis(name, axis, dim)
        kw = {} if dtype is None else {"dtype": dtype}
        return _OPS[name](list(arrays), axis=0 if d is None else d, **kw)
    form.__doc__ = f"torch.{name}(tensors, dim)."
    return form


def _searchsorted(sorted_sequence, values, side=None, sorter=None, *, right=None,
                  out_int32=False):
    """torch.searchsorted(sorted_sequence, input, *, out_int32, right, side, sorter) (a 1-D
    sorted_sequence)."""
    if right is not None and side is not None and (side == "right") != bool(right):
        raise ValueError("searchsorted: right and side disagree")
    s = side if side is not None else "right" if right else "left"
    if not isinstance(values, type(sorted_sequence)):   # torch takes a number too
        values = _OPS["asarray"](values, dtype=sorted_sequence.dtype,
                                 device=sorted_sequence.device)
    out = _OPS["searchsorted"](sorted_sequence, values, side=s, sorter=sorter)
    return _OPS["astype"](out, "int32") if out_int32 else out


def _torch_float(op: str, x):
    """The dtype torch computes ``op`` of x in: x's own floating or complex dtype, else the
    default floating dtype (torch's integer input)."""
    if not hasattr(x, "dtype") or not hasattr(x, "device"):
        raise TypeError(f"{op}: input must be a grilly Array, got {type(x).__name__}")
    return x.dtype if x.dtype.kind in "fc" else defaults.get_default_dtype()


def cov(input, *, correction=1, fweights=None, aweights=None):   # noqa: A002 (torch's name)
    """torch.cov(input, *, correction=1, fweights=None, aweights=None): the covariance of the
    variables in the rows of ``input`` in its own dtype (0-d for one variable)."""
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"cov: correction must be a number, got {correction!r}")
    return _OPS["cov"](input, ddof=correction, fweights=fweights, aweights=aweights,
                       dtype=_torch_float("cov", input))


def corrcoef(input):   # noqa: A002 (torch's name)
    """torch.corrcoef(input): Pearson correlation coefficients of the rows of ``input`` in its
    own dtype (NaN for a constant row)."""
    return _OPS["corrcoef"](input, dtype=_torch_float("corrcoef", input))


HISTOGRAM = namedtuple("histogram", ("hist", "bin_edges"))   # torch.return_types.histogram


def histogram(input, bins=100, range=None, *, weight=None, density=False,  # noqa: A002
              weights=None):
    """torch.histogram(input, bins, *, range=None, weight=None, density=False): (hist,
    bin_edges) in input's floating dtype; ``bins`` a count or a 1-D Array of edges."""
    if weights is not None:
        raise TypeError("histogram: give torch's weight= or NumPy's weights=, not both")
    if not hasattr(input, "dtype") or input.dtype.kind != "f":
        raise TypeError("histogram: torch's form needs a floating Array input, got "
                        f"{getattr(input, 'dtype', type(input).__name__)}")
    if isinstance(bins, str):
        raise TypeError(f"histogram: torch's bins is an int or a 1-D Array, got {bins!r}")
    h, e = _OPS["histogram"](input, bins, range, bool(density), weights=weight)
    return HISTOGRAM(_OPS["astype"](h, input.dtype), _OPS["astype"](e, input.dtype))


FORMS = {n: _renamed(n) for n in ("sum", "prod", "mean", "all", "any", "argmax", "argmin",
                                  "cumsum", "cumulative_sum", "argsort", "nansum", "nanmean",
                                  "count_nonzero")}
FORMS.update(std=_moment("std"), var=_moment("var"), max=_extreme("max", "argmax"),
             min=_extreme("min", "argmin"), sort=sort, median=median,
             tril=_triangle("tril"), triu=_triangle("triu"), squeeze=_squeeze, topk=_topk,
             nanmedian=nanmedian, quantile=_quantile("quantile"),
             nanquantile=_quantile("nanquantile"), trapezoid=_trapezoid, rot90=_rot90,
             split=_split, diff=_diff, flip=_flip, roll=_roll, cross=_cross,
             tensordot=_tensordot, unique=_unique, nonzero=_nonzero, cumprod=_cumprod,
             diagonal=_diagonal, concat=_concat("concat"), concatenate=_concat("concatenate"),
             searchsorted=_searchsorted, cov=cov, corrcoef=corrcoef,
             histogram=histogram)
dispatch.TORCH_FORMS.update(FORMS)
