"""More torch.Tensor methods on grilly's Array: the reshapes, scatters and reductions a PyTorch
user types that NumPy has no method for (``x.unflatten(1, (2, -1))``, ``x.take_along_dim(i, 1)``,
``x.split_with_sizes([2, 3])``, ``x.unique_consecutive()``, ``x.histc(10)``,
``x.index_reduce(0, i, s, "amax")``, ``x.slice_scatter(s, 1, 0, 2)``, ``x.renorm(2, 0, 1.0)``,
``x.aminmax(dim=1)``, ``x.sum_to_size(1, 3)``, ``x.dist(y)``), and those the namespace has under
the same name but Array lacked (``x.broadcast_to``, ``x.divide``, ``x.cross``, ``x.conj``,
``x.hsplit``...).

Each composes namespace functions through ``dispatch.OPS`` (autograd, grilly.jit and every
device see them), as grilly/array/torch_methods.py's do; the top-level ``gp.<name>`` forms are
grilly/torch_toplevel.py's.
"""
from __future__ import annotations

import math
from collections import namedtuple

from . import dispatch
from . import dtypes as _dt
from .array import Array
from .torch_methods import _dim, _index_1d, _method, _pieces, _sizes, scatter_reduce

__all__: list[str] = []   # nothing for the namespace: these are methods

_OPS = dispatch.OPS

# torch.return_types.aminmax: a tuple (unpacks as (min, max)) with .min and .max
aminmax_result = namedtuple("aminmax", ("min", "max"))


def _need(op: str, x, what: str = "other") -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"Array.{op}: {what} must be an array, got {type(x).__name__}")
    return x


def unflatten(self: Array, dim: int, sizes) -> Array:
    """Axis ``dim`` split into ``sizes`` (one of them may be -1), as torch's unflatten."""
    d = _dim(self, dim, "unflatten")
    if not isinstance(sizes, (tuple, list)) or not sizes:
        raise TypeError(f"Array.unflatten: sizes must be a non-empty tuple of ints, got {sizes!r}")
    sizes = [int(s) for s in _sizes("unflatten", (sizes,))]
    n = self.shape[d]
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise ValueError(f"Array.unflatten: sizes {tuple(sizes)} may hold one -1 and no other "
                         f"negative size")
    known = math.prod(s for s in sizes if s != -1)
    if -1 in sizes:
        if known == 0 or n % known:
            raise ValueError(f"Array.unflatten: sizes {tuple(sizes)} do not divide dimension "
                             f"{d} of size {n}")
        sizes[sizes.index(-1)] = n // known
    elif known != n:
        raise ValueError(f"Array.unflatten: sizes {tuple(sizes)} multiply to {known}, not the "
                         f"size {n} of dimension {d}")
    return _OPS["reshape"](self, self.shape[:d] + tuple(sizes) + self.shape[d + 1:])


def take_along_dim(self: Array, indices: Array, dim: int | None = None) -> Array:
    """The elements at ``indices`` along ``dim`` (self and indices broadcast on the other
    axes); of the flattened array when ``dim`` is None (torch's take_along_dim)."""
    if not isinstance(indices, Array) or indices.dtype.kind not in "iu":
        got = indices.dtype.name if isinstance(indices, Array) else type(indices).__name__
        raise TypeError(f"Array.take_along_dim: indices must be an integer array, got {got}")
    if dim is None:
        return _OPS["take"](_OPS["reshape"](self, (-1,)), _OPS["reshape"](indices, (-1,)))
    if indices.ndim != self.ndim:
        raise ValueError(f"Array.take_along_dim: indices must have self's {self.ndim} "
                         f"dimensions, got {indices.ndim}")
    d = _dim(self, dim, "take_along_dim")
    one = lambda s: s[:d] + (1,) + s[d + 1:]   # noqa: E731 (dim itself is not broadcast)
    try:
        shape = list(_OPS["broadcast_shapes"](one(self.shape), one(indices.shape)))
    except ValueError:
        raise ValueError(f"Array.take_along_dim: shapes {self.shape} and {indices.shape} do not "
                         f"broadcast outside dim {d}") from None
    xs, ids = list(shape), list(shape)
    xs[d], ids[d] = self.shape[d], indices.shape[d]
    x = self if tuple(xs) == self.shape else _OPS["broadcast_to"](self, tuple(xs))
    i = indices if tuple(ids) == indices.shape else _OPS["broadcast_to"](indices, tuple(ids))
    return _OPS["take_along_axis"](x, i, axis=d)


def split_with_sizes(self: Array, split_sizes, dim: int = 0) -> tuple:
    """Views along ``dim`` of the given sizes, which must add up to that dimension."""
    d = _dim(self, dim, "split_with_sizes")
    sizes = list(_sizes("split_with_sizes", (split_sizes,)))
    if sum(sizes) != self.shape[d] or any(s < 0 for s in sizes):
        raise ValueError(f"Array.split_with_sizes: split_sizes {sizes} must be non-negative and "
                         f"add up to {self.shape[d]}, the size of dimension {d}")
    return _pieces(self, d, sizes)


def unique_consecutive(self: Array, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """Each run of equal consecutive elements (slices along ``dim``; of the flattened array
    when None) kept once, optionally with the run number of each element and the run lengths
    (torch's unique_consecutive)."""
    x = _OPS["reshape"](self, (-1,)) if dim is None else self
    d = 0 if dim is None else _dim(self, dim, "unique_consecutive")
    xs = _OPS["moveaxis"](x, d, 0) if x.ndim else _OPS["reshape"](x, (1,))
    n = xs.shape[0]
    if n:
        diff = _OPS["not_equal"](xs[1:], xs[:-1])
        if diff.ndim > 1:
            diff = _OPS["any"](diff, axis=tuple(range(1, diff.ndim)))
        first = _OPS["concat"]([_OPS["ones"]((1,), dtype=_dt.bool, device=self.device), diff])
    else:
        first = _OPS["zeros"]((0,), dtype=_dt.bool, device=self.device)
    at = _OPS["nonzero"](first)[0]
    values = _OPS["moveaxis"](_OPS["take"](xs, at, axis=0), 0, d) if x.ndim else \
        _OPS["take"](xs, at, axis=0)
    out = [values]
    if return_inverse:
        inv = _OPS["cumulative_sum"](_OPS["astype"](first, _dt.int64)) - 1
        out.append(_OPS["reshape"](inv, self.shape) if dim is None else inv)
    if return_counts:
        ends = _OPS["concat"]([at[1:], _OPS["full"]((1,), n, dtype=at.dtype, device=self.device)])
        out.append(_OPS["astype"](ends - at, _dt.int64))
    return out[0] if len(out) == 1 else tuple(out)


def histc(self: Array, bins: int = 100, min: float = 0, max: float = 0) -> Array:  # noqa: A002
    """A histogram of ``bins`` equal bins over [min, max] (the data's range when both are 0;
    elements outside are ignored), in self's floating dtype (torch's histc)."""
    if self.dtype.kind != "f":
        raise TypeError(f"Array.histc: needs a floating array, got {self.dtype.name}")
    if isinstance(bins, bool) or not hasattr(bins, "__index__") or bins <= 0:
        raise ValueError(f"Array.histc: bins must be a positive int, got {bins!r}")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise ValueError(f"Array.histc: max ({hi}) must be at least min ({lo})")
    x = _OPS["reshape"](self.detach(), (-1,))
    if lo == hi and x.shape[0]:   # the data's range (one host read), as torch takes it
        lo, hi = float(_OPS["min"](x)), float(_OPS["max"](x))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"Array.histc: range [{lo}, {hi}] is not finite")
    inside = _OPS["logical_and"](x >= lo, x <= hi)
    x = _OPS["where"](inside, _OPS["astype"](x, _dt.float64), lo)   # no NaN/inf cast to int
    b = _OPS["astype"](_OPS["floor"]((x - lo) * (bins / (hi - lo))), _dt.int64)
    b = _OPS["clip"](b, 0, bins - 1)   # the top edge belongs to the last bin
    counts = _OPS["bincount"](_OPS["where"](inside, b, bins), minlength=bins + 1)[:bins]
    return _OPS["astype"](counts, self.dtype)


def histogram(self: Array, bins=100, *, range=None, weight=None,  # noqa: A002
              density: bool = False) -> tuple:
    """torch's ``histogram``: (hist, bin_edges) of ``bins`` (a count over ``range``, the data's
    range by default, or a 1-D Array of edges) in self's floating dtype."""
    return dispatch.TORCH_FORMS["histogram"](self, bins, range, weight=weight, density=density)


def index_reduce(self: Array, dim: int, index: Array, source: Array, reduce: str, *,
                 include_self: bool = True) -> Array:
    """self with ``source[..., i, ...]`` reduced into position ``index[i]`` along ``dim``
    ("prod", "mean", "amax", "amin"; ``include_self``: self's value takes part), as torch's."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ValueError(f"Array.index_reduce: reduce must be 'prod', 'mean', 'amax' or "
                         f"'amin', got {reduce!r}")
    d = _dim(self, dim, "index_reduce")
    index = _index_1d("index_reduce", index, self.shape[d] if self.ndim else 1)
    want = self.shape[:d] + index.shape + self.shape[d + 1:]
    if not isinstance(source, Array) or source.shape != want:
        got = source.shape if isinstance(source, Array) else type(source).__name__
        raise ValueError(f"Array.index_reduce: source must have shape {want} (self's, with "
                         f"len(index) along dim {d}), got {got}")
    at = [1] * source.ndim
    at[d] = index.shape[0]
    spread = _OPS["broadcast_to"](_OPS["reshape"](index, tuple(at)), source.shape)
    return scatter_reduce(self, d, spread, source, reduce, include_self=include_self)


def _embedded(op: str, self: Array, src, key: tuple, want: tuple) -> Array:
    """A copy of self with ``src`` (of shape ``want``) written at ``key``."""
    _need(op, src, "src")
    if src.shape != tuple(want):
        raise ValueError(f"Array.{op}: src must have shape {tuple(want)}, got {src.shape}")
    out = self.copy()
    out[key] = src if src.dtype == self.dtype else _OPS["astype"](src, self.dtype)
    return out


def slice_scatter(self: Array, src: Array, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Array:
    """A copy of self with ``src`` written at ``[start:end:step]`` along ``dim``."""
    if step <= 0:
        raise ValueError(f"Array.slice_scatter: step must be positive, got {step}")
    d = _dim(self, dim, "slice_scatter")
    key = (slice(None),) * d + (slice(start, end, step),)
    n = len(range(*key[d].indices(self.shape[d])))
    return _embedded("slice_scatter", self, src, key, self.shape[:d] + (n,) + self.shape[d + 1:])


def select_scatter(self: Array, src: Array, dim: int, index: int) -> Array:
    """A copy of self with ``src`` written at ``index`` along ``dim`` (src lacks that axis)."""
    d = _dim(self, dim, "select_scatter")
    n = self.shape[d]
    if not -n <= index < n:
        raise IndexError(f"Array.select_scatter: index {index} is out of range for dimension "
                         f"{d} of size {n}")
    return _embedded("select_scatter", self, src, (slice(None),) * d + (index % n,),
                     self.shape[:d] + self.shape[d + 1:])


def diagonal_scatter(self: Array, src: Array, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Array:
    """A copy of self with ``src`` written on the diagonal ``offset`` of the planes (dim1, dim2)
    (src shaped as ``self.diagonal(offset, dim1, dim2)``: that diagonal last)."""
    a, b = _dim(self, dim1, "diagonal_scatter"), _dim(self, dim2, "diagonal_scatter")
    if a == b:
        raise ValueError("Array.diagonal_scatter: dim1 and dim2 must differ")
    n1, n2 = self.shape[a], self.shape[b]
    length = max(0, min(n1 + min(offset, 0), n2 - max(offset, 0)))
    rest = tuple(s for i, s in enumerate(self.shape) if i not in (a, b))
    _need("diagonal_scatter", src, "src")
    if src.shape != rest + (length,):
        raise ValueError(f"Array.diagonal_scatter: src must have shape {rest + (length,)}, got "
                         f"{src.shape}")
    r = _OPS["arange"](n1, device=self.device)
    c = _OPS["arange"](n2, device=self.device)
    on = _OPS["equal"](_OPS["expand_dims"](c, axis=0) - _OPS["expand_dims"](r, axis=1), offset)
    # src's k-th entry lies at row k - min(offset, 0); padded to n1 rows, then spread on columns
    lead = -min(offset, 0)
    s = _OPS["astype"](src, self.dtype) if src.dtype != self.dtype else src
    pad = [(0, 0)] * (s.ndim - 1) + [(lead, n1 - lead - length)]
    rows = _OPS["expand_dims"](_OPS["pad"](s, pad), axis=-1)   # (..., n1, 1)
    moved = _OPS["moveaxis"](self, (a, b), (-2, -1))
    out = _OPS["where"](on, rows, moved)
    return _OPS["moveaxis"](out, (-2, -1), (a, b))


@dispatch.policy("renorm")   # in torch's autocast float32 list (amp.policy)
def renorm(self: Array, p: float, dim: int, maxnorm: float) -> Array:
    """Each slice along ``dim`` whose p-norm exceeds ``maxnorm`` scaled down to that norm
    (torch's renorm, with its 1e-7 guard in the scale)."""
    if self.dtype.kind not in "fc":
        raise TypeError(f"Array.renorm: needs a floating array, got {self.dtype.name}")
    if p <= 0:
        raise ValueError(f"Array.renorm: p must be positive, got {p}")
    if maxnorm < 0:
        raise ValueError(f"Array.renorm: maxnorm must be non-negative, got {maxnorm}")
    d = _dim(self, dim, "renorm")
    others = tuple(i for i in range(self.ndim) if i != d)
    a = _OPS["abs"](self)
    if math.isinf(p):
        nrm = _OPS["max"](a, axis=others, keepdims=True)
    else:
        nrm = _OPS["sum"](a ** p, axis=others, keepdims=True) ** (1.0 / p)
    scale = _OPS["where"](nrm > maxnorm, maxnorm / (nrm + 1e-7), 1.0)
    return self * _OPS["astype"](scale, self.dtype) if scale.dtype != self.dtype else \
        self * scale


def aminmax(self: Array, *, dim: int | None = None, keepdim: bool = False):
    """(min, max) along ``dim`` (of all elements when None), a namedtuple as torch's."""
    if dim is None:
        if keepdim:
            keep = (1,) * self.ndim
            return aminmax_result(_OPS["reshape"](_OPS["min"](self), keep),
                                  _OPS["reshape"](_OPS["max"](self), keep))
        return aminmax_result(_OPS["min"](self), _OPS["max"](self))
    d = _dim(self, dim, "aminmax")
    return aminmax_result(_OPS["min"](self, axis=d, keepdims=keepdim),
                          _OPS["max"](self, axis=d, keepdims=keepdim))


def sum_to_size(self: Array, *size) -> Array:
    """self summed over the axes where ``size`` is 1 (or lacking), down to ``size``, which
    self must broadcast to (torch's sum_to_size: a gradient's reduction)."""
    size = _sizes("sum_to_size", size)
    try:
        _OPS["broadcast_shapes"](size, self.shape)
        ok = len(size) <= self.ndim and tuple(_OPS["broadcast_shapes"](size, self.shape)) == \
            self.shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"Array.sum_to_size: size {size} is not expandable to {self.shape}")
    lead = self.ndim - len(size)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and self.shape[lead + i] != 1)
    out = _OPS["sum"](self, axis=axes, keepdims=True) if axes else self
    return _OPS["reshape"](out, size)


def narrow_copy(self: Array, dim: int, start: int, length: int) -> Array:
    """narrow(dim, start, length) as a new array (not a view)."""
    return self.narrow(dim, start, length).copy()


def dist(self: Array, other: Array, p: float = 2) -> Array:
    """The p-norm of self - other over all elements (broadcast), as torch's dist."""
    diff = _OPS["reshape"](_OPS["subtract"](self, other), (-1,))
    if diff.dtype.kind not in "fc":
        raise TypeError(f"Array.dist: needs floating arrays, got {diff.dtype.name}")
    return _OPS["linalg.vector_norm"](diff, ord=p)


def adjoint(self: Array) -> Array:
    """The conjugate transpose of the last two axes (torch's adjoint)."""
    if self.ndim < 2:
        raise ValueError(f"Array.adjoint: needs at least 2 dimensions, got {self.ndim}")
    t = _OPS["matrix_transpose"](self)
    return _OPS["conj"](t) if self.dtype.kind == "c" else t


def broadcast_to(self: Array, size) -> Array:
    """This array broadcast to ``size`` (torch's broadcast_to: gp.broadcast_to)."""
    return _OPS["broadcast_to"](self, _sizes("broadcast_to", (size,)))


def divide(self: Array, other, *, rounding_mode: str | None = None) -> Array:
    """self / other, with torch's ``rounding_mode`` (Array.div)."""
    return self.div(other, rounding_mode=rounding_mode)


def cross(self: Array, other: Array, dim: int | None = None) -> Array:
    """The cross product with ``other`` along ``dim`` (the last axis when None; torch's
    linalg.cross convention)."""
    return _OPS["cross"](self, _need("cross", other), axis=-1 if dim is None else dim)


def _split_like(name: str):
    def f(self: Array, indices_or_sections) -> tuple:
        return tuple(_OPS[name](self, indices_or_sections))
    f.__doc__ = f"gp.{name}(self, indices_or_sections) as a tuple (torch's {name})."
    _method(name, f)


def _no_lazy_bit(name: str, result: bool):
    def f(self: Array):
        return self if not result else False
    f.__doc__ = ("self: grilly has no lazy conjugate or negative bit" if not result else
                 "False: grilly has no lazy conjugate or negative bit")
    _method(name, f)


for _name in ("hsplit", "vsplit", "dsplit"):
    _split_like(_name)
for _name in ("resolve_conj", "resolve_neg"):
    _no_lazy_bit(_name, False)
for _name in ("is_conj", "is_neg"):
    _no_lazy_bit(_name, True)


for _fn in (broadcast_to, divide, cross, adjoint, unflatten, take_along_dim,
            split_with_sizes, unique_consecutive, histc, histogram, index_reduce, slice_scatter,
            select_scatter, diagonal_scatter, renorm, aminmax, sum_to_size, narrow_copy, dist):
    _method(_fn.__name__, _fn)
