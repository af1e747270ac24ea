"""torch.Tensor's methods that are a namespace function under another name or NumPy's own
(``x.absolute()``, ``x.arctan2(y)``, ``x.greater(y)``, ``x.inverse()``, ``x.mv(v)``,
``x.swapdims(0, 1)``), one table; their in-place twins (``x.absolute_()``); the in-place
comparisons (``x.gt_(y)``: 1 or 0 in x's own dtype); and torch's dtype predicates
(``x.is_complex()``). Each calls the namespace through ``dispatch.OPS`` (autograd, grilly.jit and
every device see it)."""
from __future__ import annotations

from . import dispatch
from .array import Array
from .torch_methods import _inplace_of, _method, _write

__all__: list[str] = []   # nothing for the namespace: these are methods

_OPS = dispatch.OPS

# method -> namespace function taking (self, *args, **kw) with the same meaning
ALIASES = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "acosh": "acosh",
    "arcsin": "asin", "arcsinh": "asinh", "asinh": "asinh", "arctan": "atan",
    "arctan2": "atan2", "arctanh": "atanh", "atanh": "atanh", "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor", "bitwise_not": "bitwise_invert",
    "bitwise_left_shift": "bitwise_left_shift", "bitwise_right_shift": "bitwise_right_shift",
    "greater": "greater", "greater_equal": "greater_equal", "less": "less",
    "less_equal": "less_equal", "not_equal": "not_equal",
    "subtract": "subtract", "true_divide": "divide", "copysign": "copysign", "hypot": "hypot",
    "logaddexp": "logaddexp", "logaddexp2": "logaddexp2", "nextafter": "nextafter",
    "fmax": "fmax", "fmin": "fmin", "heaviside": "heaviside", "signbit": "signbit",
    "sgn": "sign", "deg2rad": "deg2rad", "rad2deg": "rad2deg", "exp2": "exp2", "fix": "trunc",
    "positive": "positive", "isclose": "isclose", "inner": "inner", "kron": "kron",
    "mv": "matmul", "ger": "outer", "vdot": "vdot", "trace": "trace", "fliplr": "fliplr",
    "flipud": "flipud", "moveaxis": "moveaxis", "swapdims": "swapaxes", "sinc": "sinc",
    "inverse": "linalg.inv", "det": "linalg.det",
    "slogdet": "linalg.slogdet", "matrix_power": "linalg.matrix_power",
    "matrix_exp": "linalg.matrix_exp", "isposinf": "isposinf", "isneginf": "isneginf",
    "isreal": "isreal",
}
# torch's in-place twins of the aliases above (those whose result keeps self's dtype)
INPLACE = ("absolute", "arccos", "arccosh", "acosh", "arcsin", "arcsinh", "asinh", "arctan",
           "arctan2", "arctanh", "atanh", "bitwise_and", "bitwise_or", "bitwise_xor",
           "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "subtract",
           "true_divide", "copysign", "hypot", "nextafter", "heaviside", "sgn", "deg2rad",
           "rad2deg", "exp2", "fix", "sinc", "frac")
# torch's in-place comparisons: the result (1 or 0) stored in self's dtype
COMPARE_INPLACE = {"eq_": "equal", "ne_": "not_equal", "gt_": "greater", "ge_": "greater_equal",
                   "lt_": "less", "le_": "less_equal", "greater_": "greater",
                   "greater_equal_": "greater_equal", "less_": "less",
                   "less_equal_": "less_equal", "not_equal_": "not_equal",
                   "logical_and_": "logical_and", "logical_or_": "logical_or",
                   "logical_xor_": "logical_xor", "logical_not_": "logical_not"}


def _alias(name: str, op: str) -> None:
    def f(self: Array, *args, **kw):
        return _OPS[op](self, *args, **kw)
    f.__doc__ = f"gp.{op}(self, ...) (torch's ``Tensor.{name}``)."
    _method(name, f)


def _truth(v):
    """torch's logical ops take any dtype: nonzero is true."""
    if isinstance(v, Array):
        return v if v.dtype.kind == "b" else _OPS["not_equal"](v, 0)
    return bool(v)


def _logical(op: str, x: Array, *args) -> Array:
    return _OPS[op](_truth(x), *map(_truth, args)) if op.startswith("logical") else \
        _OPS[op](x, *args)


def logical_xor(self: Array, other) -> Array:
    """Elementwise exclusive or of the truth values (nonzero is true, as torch's)."""
    return _logical("logical_xor", self, other)


def _compare_inplace(name: str, op: str) -> None:
    def f(self: Array, *args) -> Array:
        dispatch.check_writable(self._buf, f"{name} (in place)")
        return _write(self, _OPS["astype"](_logical(op, self, *args), self.dtype))
    f.__doc__ = f"self = gp.{op}(self, ...) as 1 or 0 in self's dtype; returns self."
    _method(name, f)


def frac(self: Array) -> Array:
    """The fractional part x - trunc(x), of x's sign (torch's ``frac``)."""
    return _OPS["subtract"](self, _OPS["trunc"](self))


def rot90(self: Array, k: int = 1, dims=(0, 1)) -> Array:
    """Rotation by 90 degrees k times in the plane of ``dims`` (torch's ``rot90``)."""
    return _OPS["rot90"](self, k, tuple(dims))


def nan_to_num(self: Array, nan: float = 0.0, posinf=None, neginf=None) -> Array:
    """NaN, +inf, -inf replaced (torch's argument order: nan, posinf, neginf)."""
    return _OPS["nan_to_num"](self, nan=nan, posinf=posinf, neginf=neginf)


def msort(self: Array) -> Array:
    """The values sorted along the first axis (torch's ``msort``)."""
    return _OPS["sort"](self, axis=0)


def nanmean(self: Array, dim=None, keepdim: bool = False, *, dtype=None) -> Array:
    """The mean of the non-NaN elements along ``dim`` (torch's ``nanmean``)."""
    return dispatch.TORCH_FORMS["nanmean"](self, dim=dim, keepdim=keepdim, dtype=dtype)


def nanmedian(self: Array, dim=None, keepdim: bool = False):
    """torch's ``nanmedian``: (values, indices) along ``dim``; 0-d without it."""
    return dispatch.TORCH_FORMS["nanmedian"](self, dim=dim, keepdim=keepdim)


def quantile(self: Array, q, dim=None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Array:
    """The q-th quantiles along ``dim`` (torch's ``quantile``)."""
    return dispatch.TORCH_FORMS["quantile"](self, q, dim=dim, keepdim=keepdim,
                                            interpolation=interpolation)


def nanquantile(self: Array, q, dim=None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Array:
    """quantile ignoring NaNs (torch's ``nanquantile``)."""
    return dispatch.TORCH_FORMS["nanquantile"](self, q, dim=dim, keepdim=keepdim,
                                               interpolation=interpolation)


def cov(self: Array, *args, correction=None, fweights=None, aweights=None, **kw) -> Array:
    """torch's ``cov(*, correction=1, fweights=None, aweights=None)``: the covariance of the
    rows in self's dtype; NumPy's arguments (y, rowvar, bias, ddof, dtype) give gp.cov's."""
    if args or kw:
        if correction is not None:
            raise TypeError("Array.cov: torch's correction= does not combine with NumPy's "
                            "arguments; use ddof=")
        return _OPS["cov"](self, *args, fweights=fweights, aweights=aweights, **kw)
    return dispatch.TORCH_FORMS["cov"](self, correction=1 if correction is None else correction,
                                       fweights=fweights, aweights=aweights)


def corrcoef(self: Array, *args, **kw) -> Array:
    """torch's ``corrcoef()``: the correlation coefficients of the rows in self's dtype;
    NumPy's arguments (y, rowvar, dtype) give gp.corrcoef's."""
    if args or kw:
        return _OPS["corrcoef"](self, *args, **kw)
    return dispatch.TORCH_FORMS["corrcoef"](self)


def count_nonzero(self: Array, dim=None) -> Array:
    """The number of nonzero elements along ``dim`` (torch's ``count_nonzero``)."""
    return _OPS["count_nonzero"](self, axis=tuple(dim) if isinstance(dim, list) else dim)


def is_complex(self: Array) -> bool:
    """Whether the dtype is complex."""
    return self.dtype.kind == "c"


def is_signed(self: Array) -> bool:
    """Whether the dtype holds negative values (torch's ``is_signed``)."""
    return self.dtype.kind in "ifc"


def is_same_size(self: Array, other: Array) -> bool:
    """Whether ``other`` has this shape."""
    return tuple(other.shape) == self.shape


def is_nonzero(self: Array) -> bool:
    """The truth of a one-element array (torch's ``is_nonzero``; RuntimeError otherwise)."""
    if self.size != 1:
        raise RuntimeError(f"Array.is_nonzero: needs exactly one element, got {self.size}")
    return bool(self.reshape(()))


for _name, _op in ALIASES.items():
    _alias(_name, _op)
for _fn in (frac, rot90, nan_to_num, msort, is_complex, is_signed, is_same_size, is_nonzero,
            nanmean, nanmedian, quantile, nanquantile, count_nonzero, logical_xor, cov,
            corrcoef):
    _method(_fn.__name__, _fn)
for _name in INPLACE:
    _inplace_of(_name)
for _name, _op in COMPARE_INPLACE.items():
    _compare_inplace(_name, _op)
