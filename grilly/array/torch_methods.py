"""torch.Tensor's methods on grilly's Array: what a PyTorch user types in a forward()
(``x.view(B, -1)``, ``x.unsqueeze(1)``, ``x.float()``, ``x.masked_fill(m, v)``, ``x.add_(y)``).

Each method calls namespace functions through ``dispatch.OPS`` (so autograd, grilly.jit and every
device see it) and is attached to Array when the namespace is assembled (grilly/array/api.py).
Where NumPy and torch give a method name different meanings, NumPy's is kept (array.py) and
torch's keywords (``dim=``) select torch's meaning (torch_dims.py: sort, median, mode, kthvalue
and the (values, indices) results); a torch-only call form that cannot be told apart raises
TypeError naming the difference (README "Array methods").
In-place methods return the array: binary ones take the ``x += y`` path (``dispatch.inplace``),
the others (one table, ``_INPLACE``) write through ``x[...] = value`` (autograd's setitem path);
both refuse a leaf that requires grad in grad mode, as torch does. The activations (relu,
sigmoid) are grilly.nn.functional's and the random fills grilly.random's, reached through the
registered namespace at call time: the array layer imports neither.
"""
from __future__ import annotations

import math

import numpy as np

from ..backends import registry
from . import dispatch
from . import dtypes as _dt
from . import segments as _segments
from . import torch_dims as _torch_dims
from .array import Array
from .core import normalize_axis
from .numpy_args import no_out

__all__: list[str] = []   # nothing for the namespace: these are methods

_OPS = dispatch.OPS


def _ns():
    """The top-level grilly namespace (grilly.nn.functional, grilly.random), registered by grilly."""
    return dispatch.namespace()


def _dim(x: Array, dim, op: str, extra: int = 0) -> int:
    """``dim`` as a non-negative axis of ``x`` (of ``x.ndim + extra`` axes), IndexError otherwise."""
    try:
        return normalize_axis(dim, max(x.ndim + extra, 1), f"Array.{op}", "dim")
    except (ValueError, IndexError) as e:
        raise IndexError(str(e)) from None


def _sizes(op: str, args: tuple) -> tuple:
    """``f(2, 3)`` or ``f((2, 3))`` as the tuple (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    out = []
    for a in args:
        if isinstance(a, bool) or not hasattr(a, "__index__"):
            raise TypeError(f"Array.{op}: expected integer sizes, got {type(a).__name__}")
        out.append(a.__index__())
    return tuple(out)


def _dims(op: str, dims, nd: int) -> tuple:
    """One dim or a sequence of dims as a tuple of non-negative axes."""
    ds = dims if isinstance(dims, (tuple, list)) else (dims,)
    return tuple(normalize_axis(d, max(nd, 1), f"Array.{op}", "dim") for d in ds)


def _method(name: str, fn) -> None:
    fn.__name__ = fn.__qualname__ = name
    setattr(Array, name, fn)


# ---- shape and layout -------------------------------------------------------------------------
def view(self: Array, *shape) -> Array:
    """This array's data in ``shape``, sharing memory (torch's view; RuntimeError where the
    layout needs a copy: use reshape). ``view(dtype)`` (reinterpreting bits) is not supported."""
    if len(shape) == 1 and isinstance(shape[0], (str, type, _dt.DType, np.dtype)):
        raise NotImplementedError("Array.view(dtype): reinterpreting the bits as another dtype "
                                  "is not supported; use astype to convert the values")
    try:
        return _OPS["reshape"](self, _sizes("view", shape), copy=False)
    except ValueError as e:
        if "copy" not in str(e):
            raise
        raise RuntimeError(f"Array.view: the array's layout (shape {self.shape}, not contiguous) "
                           "cannot be viewed in that shape without a copy; use .reshape(...) "
                           "instead") from None


def view_as(self: Array, other: Array) -> Array:
    """view(other.shape)."""
    return view(self, other.shape)


def reshape_as(self: Array, other: Array) -> Array:
    """reshape(other.shape)."""
    return _OPS["reshape"](self, tuple(other.shape))


def expand(self: Array, *sizes) -> Array:
    """This array broadcast to ``sizes`` (-1 keeps a size; new leading axes allowed): a view."""
    sizes = _sizes("expand", sizes)
    lead = len(sizes) - self.ndim
    if lead < 0:
        raise ValueError(f"Array.expand: {len(sizes)} sizes given for an array of "
                         f"{self.ndim} dimensions; give at least {self.ndim}")
    out = []
    for i, s in enumerate(sizes):
        if s == -1:
            if i < lead:
                raise ValueError(f"Array.expand: -1 is not allowed for the new leading "
                                 f"dimension {i}")
            s = self.shape[i - lead]
        out.append(s)
    return _OPS["broadcast_to"](self, tuple(out))


def expand_as(self: Array, other: Array) -> Array:
    """expand(other.shape)."""
    return _OPS["broadcast_to"](self, tuple(other.shape))


def unsqueeze(self: Array, dim: int) -> Array:
    """A new axis of length one at ``dim`` (in [-ndim-1, ndim])."""
    return _OPS["expand_dims"](self, _dim(self, dim, "unsqueeze", extra=1))


def permute(self: Array, *dims) -> Array:
    """The axes in the order ``dims``: gp.permute_dims."""
    return _OPS["permute_dims"](self, _sizes("permute", dims))


def t(self: Array) -> Array:
    """A 2-D array transposed (0-D and 1-D unchanged); RuntimeError beyond 2-D, as torch."""
    if self.ndim > 2:
        raise RuntimeError(f"Array.t: expects an array of at most 2 dimensions, got "
                           f"{self.ndim}-D; use permute or swapaxes")
    return self if self.ndim < 2 else _OPS["permute_dims"](self, (1, 0))


def movedim(self: Array, source, destination) -> Array:
    """Axes ``source`` moved to ``destination``: gp.moveaxis."""
    return _OPS["moveaxis"](self, source, destination)


def narrow(self: Array, dim: int, start: int, length: int) -> Array:
    """The ``length`` elements from ``start`` along ``dim``: a view."""
    d = _dim(self, dim, "narrow")
    n = self.shape[d]
    if start < 0:
        start += n
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise IndexError(f"Array.narrow: start {start} and length {length} do not fit "
                         f"dimension {d} of size {n}")
    return self[(slice(None),) * d + (slice(start, start + length),)]


def flip(self: Array, *dims) -> Array:
    """The order of elements reversed along ``dims``: gp.flip."""
    return _OPS["flip"](self, axis=_sizes("flip", dims))


def roll(self: Array, shifts, dims=None) -> Array:
    """Elements shifted cyclically along ``dims`` (the flattened array when None): gp.roll."""
    return _OPS["roll"](self, shifts, axis=dims)


def _pieces(self: Array, d: int, sizes: list) -> tuple:
    out, at = [], 0
    for s in sizes:
        out.append(self[(slice(None),) * d + (slice(at, at + s),)])
        at += s
    return tuple(out)


def chunk(self: Array, chunks: int, dim: int = 0) -> tuple:
    """At most ``chunks`` views along ``dim``, each of ceil(n / chunks) elements (the last
    smaller), as torch's chunk."""
    if chunks <= 0:
        raise ValueError(f"Array.chunk: chunks must be positive, got {chunks}")
    d = _dim(self, dim, "chunk")
    n = self.shape[d]
    step = max(-(-n // chunks), 1)
    return _pieces(self, d, [min(step, n - i) for i in range(0, n, step)] or [0])


def split(self: Array, split_size_or_sections, dim: int = 0) -> tuple:
    """Views along ``dim`` of ``split_size`` elements each (the last smaller), or of the given
    section sizes (which must add up to the dimension)."""
    d = _dim(self, dim, "split")
    n = self.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = list(_sizes("split", (split_size_or_sections,)))
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise ValueError(f"Array.split: sections {sizes} must be non-negative and add up to "
                             f"{n}, the size of dimension {d}")
        return _pieces(self, d, sizes)
    s = int(split_size_or_sections)
    if s <= 0:
        raise ValueError(f"Array.split: split_size must be positive, got {s}")
    return _pieces(self, d, [min(s, n - i) for i in range(0, n, s)] or [0])


def unbind(self: Array, dim: int = 0) -> tuple:
    """The slices along ``dim``, that axis removed: gp.unstack."""
    return _OPS["unstack"](self, axis=_dim(self, dim, "unbind"))


def tile(self: Array, *reps) -> Array:
    """The whole array repeated ``reps[i]`` times along axis i (NumPy's and torch's tile)."""
    return _OPS["tile"](self, _sizes("tile", reps))


def repeat(self: Array, repeats, *args, axis=None) -> Array:
    """NumPy's repeat: each element repeated ``repeats`` times along ``axis`` (flattened when
    None). torch's ``repeat(*sizes)`` (tiling the whole array) is ``tile``: a call with more than
    one positional argument is torch's form and raises TypeError."""
    if args:
        raise TypeError("Array.repeat: this is NumPy's repeat(repeats, axis=...), which "
                        "repeats each element; torch's repeat(*sizes), which tiles the whole "
                        "array, is x.tile(*sizes) here (pass NumPy's axis by keyword)")
    if (axis is None and isinstance(repeats, (tuple, list)) and len(repeats) > 1
            and len(repeats) != self.size):
        raise TypeError(f"Array.repeat: this is NumPy's repeat, whose list of repeats gives "
                        f"one count per element ({self.size} here, got {len(repeats)}); "
                        f"torch's repeat(sizes), which tiles the whole array, is x.tile(sizes)")
    return _OPS["repeat"](self, repeats, axis=axis)


def dim(self: Array) -> int:
    """The number of dimensions (ndim)."""
    return self.ndim


def numel(self: Array) -> int:
    """The number of elements (size)."""
    return math.prod(self.shape)


def element_size(self: Array) -> int:
    """Bytes per element."""
    return self._dtype.itemsize


def is_floating_point(self: Array) -> bool:
    """Whether the dtype is a real floating-point one (bfloat16 included)."""
    return self._dtype.kind == "f"


def stride(self: Array, dim: int | None = None):
    """Steps in elements between neighbours along each axis (of ``dim`` where given)."""
    buf = self._buf
    s = getattr(buf, "strides", None)
    if s is None:
        raise NotImplementedError(f"Array.stride: the {self._device} backend's buffers do not "
                                  "expose strides")
    if isinstance(buf, np.ndarray):   # host buffers count bytes; device buffers, elements
        s = tuple(v // buf.itemsize for v in s)
    s = tuple(s)
    return s if dim is None else s[_dim(self, dim, "stride")]


def is_contiguous(self: Array) -> bool:
    """Whether the elements lie in row-major order without gaps (axes of length one ignored)."""
    want = 1
    for n, s in reversed(list(zip(self.shape, stride(self)))):
        if n != 1 and s != want:
            return False
        want *= n
    return True


def contiguous(self: Array) -> Array:
    """This array when it is contiguous, else a contiguous copy (differentiable)."""
    return self if is_contiguous(self) else self.copy()


def clone(self: Array, *, memory_format=None) -> Array:
    """A copy of the data (differentiable): Array.copy."""
    if memory_format is not None:
        raise TypeError("Array.clone: memory_format is not supported (grilly arrays are "
                        "row-major)")
    return self.copy()


def type_as(self: Array, other: Array) -> Array:
    """This array in ``other``'s dtype."""
    return _OPS["astype"](self, other.dtype, copy=False)


def _cast(name: str, dtype: str):
    def conv(self: Array) -> Array:
        return _OPS["astype"](self, _dt.as_dtype(dtype), copy=False)
    conv.__doc__ = f"This array as {dtype} (itself when it already is)."
    _method(name, conv)


for _name, _dtype in (("float", "float32"), ("double", "float64"), ("half", "float16"),
                      ("bfloat16", "bfloat16"), ("long", "int64"), ("int", "int32"),
                      ("short", "int16"), ("char", "int8"), ("byte", "uint8"), ("bool", "bool")):
    _cast(_name, _dtype)


def _as_device(spec):
    """A device for ``spec`` (a Device or a name), or None when ``spec`` names a dtype."""
    if isinstance(spec, str):
        try:
            _dt.as_dtype(spec)
            return None
        except TypeError:
            pass
    elif not hasattr(spec, "kernels"):
        return None
    return registry.device(spec)


def to(self: Array, *args, dtype=None, device=None, copy: bool = False,
       non_blocking: bool = False) -> Array:
    """This array on another device and/or in another dtype: ``to(device)``, ``to(dtype)``,
    ``to(device, dtype)``, ``to(other)`` (other's device and dtype); itself when nothing
    changes (unless ``copy``)."""
    for a in args:
        if isinstance(a, Array):
            device, dtype = a.device, a.dtype
        elif _as_device(a) is not None:
            device = a
        else:
            dtype = a
    out = self
    if device is not None:
        out = _OPS["to_device"](out, registry.device(device))
    if dtype is not None:
        out = _OPS["astype"](out, _dt.as_dtype(dtype, "Array.to"), copy=False)
    return out.copy() if copy and out is self else out


def cpu(self: Array) -> Array:
    """This array on the cpu device (itself when it is there)."""
    return _OPS["to_device"](self, "cpu")


def _new(self: Array, op: str, size, dtype, device) -> tuple:
    """The shape and the dtype/device keywords of a new_* array."""
    return _sizes(op, size), dict(dtype=self.dtype if dtype is None else dtype,
                       device=self.device if device is None else device)


def _made(a: Array, requires_grad: bool) -> Array:
    return a.requires_grad_() if requires_grad else a


def new_zeros(self: Array, *size, dtype=None, device=None, requires_grad: bool = False) -> Array:
    """Zeros of ``size``, in this array's dtype and on its device unless given."""
    shape, kw = _new(self, "new_zeros", size, dtype, device)
    return _made(_OPS["zeros"](shape, **kw), requires_grad)


def new_ones(self: Array, *size, dtype=None, device=None, requires_grad: bool = False) -> Array:
    """Ones of ``size``, in this array's dtype and on its device unless given."""
    shape, kw = _new(self, "new_ones", size, dtype, device)
    return _made(_OPS["ones"](shape, **kw), requires_grad)


def new_empty(self: Array, *size, dtype=None, device=None, requires_grad: bool = False) -> Array:
    """An uninitialized array of ``size``, in this array's dtype and on its device unless given."""
    shape, kw = _new(self, "new_empty", size, dtype, device)
    return _made(_OPS["empty"](shape, **kw), requires_grad)


def new_full(self: Array, size, fill_value, *, dtype=None, device=None,
             requires_grad: bool = False) -> Array:
    """``fill_value`` everywhere in ``size``, in this array's dtype and on its device unless given."""
    shape, kw = _new(self, "new_full", (size,), dtype, device)
    return _made(_OPS["full"](shape, fill_value, **kw), requires_grad)


def new_tensor(self: Array, data, *, dtype=None, device=None, requires_grad: bool = False) -> Array:
    """A copy of ``data`` (detached), in this array's dtype and on its device unless given."""
    if isinstance(data, Array):
        data = data.detach()
    out = _OPS["asarray"](data, dtype=self.dtype if dtype is None else dtype,
                          device=self.device if device is None else device, copy=True)
    return _made(out, requires_grad)


# ---- math ---------------------------------------------------------------------------------------
def _unary(name: str, op: str) -> None:
    def f(self: Array) -> Array:
        return _OPS[op](self)
    f.__doc__ = f"gp.{op} of this array."
    _method(name, f)


for _name, _op in (("abs", "abs"), ("neg", "negative"), ("negative", "negative"), ("exp", "exp"),
                   ("expm1", "expm1"), ("log", "log"), ("log1p", "log1p"), ("log2", "log2"),
                   ("log10", "log10"), ("sqrt", "sqrt"), ("sin", "sin"), ("cos", "cos"),
                   ("tan", "tan"), ("tanh", "tanh"), ("sinh", "sinh"), ("cosh", "cosh"),
                   ("asin", "asin"), ("acos", "acos"), ("atan", "atan"), ("floor", "floor"),
                   ("ceil", "ceil"), ("trunc", "trunc"), ("sign", "sign"),
                   ("reciprocal", "reciprocal"), ("square", "square"), ("isnan", "isnan"),
                   ("isinf", "isinf"), ("isfinite", "isfinite"),
                   ("logical_not", "logical_not")):
    _unary(_name, _op)


def _binary(name: str, op: str) -> None:
    def f(self: Array, other) -> Array:
        return _OPS[op](self, other)
    f.__doc__ = f"gp.{op}(self, other)."
    _method(name, f)


for _name, _op in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"),
                   ("gt", "greater"), ("ge", "greater_equal"), ("pow", "pow"),
                   ("remainder", "remainder"), ("floor_divide", "floor_divide"),
                   ("true_divide", "divide"), ("mul", "multiply"), ("multiply", "multiply"),
                   ("matmul", "matmul"), ("logical_and", "logical_and"),
                   ("logical_or", "logical_or"), ("maximum", "maximum"),
                   ("minimum", "minimum"), ("atan2", "atan2")):
    _binary(_name, _op)


def rsqrt(self: Array) -> Array:
    """1 / sqrt(x)."""
    return _OPS["reciprocal"](_OPS["sqrt"](self))


def sigmoid(self: Array) -> Array:
    """1 / (1 + exp(-x)): grilly.nn.functional.sigmoid."""
    return _ns().nn.functional.sigmoid(self)


def relu(self: Array) -> Array:
    """max(x, 0) (gradient 0 at 0, as torch): grilly.nn.functional.relu."""
    return _ns().nn.functional.relu(self)


def round(self: Array, decimals: int = 0, out=None) -> Array:   # noqa: A001 (torch's, NumPy's)
    """Round half to even, to ``decimals`` places (as torch and NumPy: x * 10**d rounded, / 10**d)."""
    no_out("Array.round", out)   # (numpy.round(x) and friends pass out=None)
    return _OPS["round"](self, decimals)


def float_power(self: Array, exponent) -> Array:
    """pow computed in float64 (complex128 for complex input)."""
    d = _dt.as_dtype("complex128" if self._dtype.kind == "c" else "float64")
    if isinstance(exponent, Array):
        exponent = _OPS["astype"](exponent, d, copy=False)
    return _OPS["pow"](_OPS["astype"](self, d, copy=False), exponent)


def fmod(self: Array, other) -> Array:
    """C's remainder (the sign of the dividend), from gp.remainder (the divisor's sign)."""
    r = _OPS["remainder"](self, other)
    off = _OPS["logical_and"](_OPS["not_equal"](r, 0),
                              _OPS["not_equal"](_OPS["less"](r, 0), _OPS["less"](self, 0)))
    return _OPS["where"](off, _OPS["subtract"](r, other), r)


def _scaled(other, alpha):
    return other if alpha == 1 else _OPS["multiply"](other, alpha)


def add(self: Array, other, *, alpha=1) -> Array:
    """self + alpha * other."""
    return _OPS["add"](self, _scaled(other, alpha))


def sub(self: Array, other, *, alpha=1) -> Array:
    """self - alpha * other."""
    return _OPS["subtract"](self, _scaled(other, alpha))


def div(self: Array, other, *, rounding_mode: str | None = None) -> Array:
    """self / other; ``rounding_mode`` 'floor' (floor_divide) or 'trunc' (towards zero)."""
    if rounding_mode is None:
        return _OPS["divide"](self, other)
    if rounding_mode == "floor":
        return _OPS["floor_divide"](self, other)
    if rounding_mode == "trunc":
        if self._dtype.kind in "iu" and (not isinstance(other, Array) or other.dtype.kind in "iu"):
            # exact for integers: the dividend less its C remainder divides evenly
            return _OPS["floor_divide"](_OPS["subtract"](self, fmod(self, other)), other)
        return _OPS["trunc"](_OPS["divide"](self, other))
    raise ValueError(f"Array.div: rounding_mode must be None, 'floor' or 'trunc', got "
                     f"{rounding_mode!r}")


def lerp(self: Array, end, weight) -> Array:
    """self + weight * (end - self)."""
    return _OPS["add"](self, _OPS["multiply"](weight, _OPS["subtract"](end, self)))


def _check_nd(op: str, a, want: int, arg: str) -> None:
    if not isinstance(a, Array) or a.ndim != want:
        got = f"{a.ndim}-D" if isinstance(a, Array) else type(a).__name__
        raise ValueError(f"Array.{op}: {arg} must be a {want}-D array, got {got}")


def mm(self: Array, mat2: Array) -> Array:
    """The matrix product of two 2-D arrays."""
    _check_nd("mm", self, 2, "self")
    _check_nd("mm", mat2, 2, "mat2")
    return _OPS["matmul"](self, mat2)


def bmm(self: Array, mat2: Array) -> Array:
    """The batched matrix product of two 3-D arrays."""
    _check_nd("bmm", self, 3, "self")
    _check_nd("bmm", mat2, 3, "mat2")
    return _OPS["matmul"](self, mat2)


def _plus_product(self: Array, p: Array, beta, alpha) -> Array:
    """beta * self + alpha * p (self ignored where beta is 0, as torch: no NaN from it)."""
    p = _scaled(p, alpha)
    if beta == 0:
        return _OPS["broadcast_to"](p, p.shape)
    return _OPS["add"](_scaled(self, beta), p)


def addmm(self: Array, mat1: Array, mat2: Array, *, beta=1, alpha=1) -> Array:
    """beta * self + alpha * (mat1 @ mat2) (self ignored where beta is 0, as torch)."""
    self, mat1, mat2 = dispatch.autocast("addmm", self, mat1, mat2)   # one low-dtype op, as torch's
    return _plus_product(self, mm(mat1, mat2), beta, alpha)


def baddbmm(self: Array, batch1: Array, batch2: Array, *, beta=1, alpha=1) -> Array:
    """beta * self + alpha * (batch1 @ batch2), batched (self ignored where beta is 0)."""
    self, batch1, batch2 = dispatch.autocast("baddbmm", self, batch1, batch2)   # one low-dtype op, as torch's
    return _plus_product(self, bmm(batch1, batch2), beta, alpha)


def addcmul(self: Array, tensor1, tensor2, *, value=1) -> Array:
    """self + value * tensor1 * tensor2."""
    return _OPS["add"](self, _scaled(_OPS["multiply"](tensor1, tensor2), value))


def addcdiv(self: Array, tensor1, tensor2, *, value=1) -> Array:
    """self + value * tensor1 / tensor2."""
    return _OPS["add"](self, _scaled(_OPS["divide"](tensor1, tensor2), value))


def dot(self: Array, other: Array) -> Array:
    """NumPy's dot where torch's agrees: two 1-D arrays (their inner product) or 2-D ones
    (the matrix product, which torch's dot refuses); beyond 2-D use tensordot or matmul."""
    if not isinstance(other, Array) or not (1 <= self.ndim <= 2 and 1 <= other.ndim <= 2):
        got = other.ndim if isinstance(other, Array) else type(other).__name__
        raise ValueError(f"Array.dot: takes 1-D or 2-D arrays, got {self.ndim}-D and {got}; "
                         "use matmul or tensordot")
    return _OPS["matmul"](self, other)


def outer(self: Array, vec2: Array) -> Array:
    """The outer product of two 1-D arrays: gp.linalg.outer."""
    return _OPS["linalg.outer"](self, vec2)


def clamp(self: Array, min=None, max=None) -> Array:   # noqa: A002 (torch's names)
    """Each element limited to [min, max] (scalars or arrays): gp.clip."""
    if min is None and max is None:
        raise ValueError("Array.clamp: at least one of min and max must be given")
    return _OPS["clip"](self, min, max)


def where(self: Array, condition: Array, other) -> Array:
    """self where ``condition`` holds, else ``other`` (torch's x.where(cond, y))."""
    return _OPS["where"](condition, self, other)


def _check_mask(op: str, mask) -> None:
    if not isinstance(mask, Array) or mask.dtype != _dt.as_dtype("bool"):
        got = mask.dtype.name if isinstance(mask, Array) else type(mask).__name__
        raise TypeError(f"Array.{op}: mask must be a bool array, got {got}")


def masked_fill(self: Array, mask: Array, value) -> Array:
    """``value`` where ``mask`` is true, else self (self's dtype kept; mask broadcasts)."""
    _check_mask("masked_fill", mask)
    if isinstance(value, Array) and value.ndim != 0:
        raise ValueError(f"Array.masked_fill: value must be a scalar or a 0-d array, got shape "
                         f"{value.shape}")
    out = _OPS["where"](mask, value, self)
    if out.shape != self.shape:
        raise ValueError(f"Array.masked_fill: mask of shape {mask.shape} does not broadcast to "
                         f"the array's shape {self.shape}")
    return out if out.dtype is self.dtype else _OPS["astype"](out, self.dtype)


def masked_select(self: Array, mask: Array) -> Array:
    """The elements where ``mask`` (broadcast with self) is true, as a 1-D array."""
    _check_mask("masked_select", mask)
    x, m = _OPS["broadcast_arrays"](self, mask)
    return x[m]


def softmax(self: Array, dim: int, dtype=None) -> Array:
    """exp(x) / sum(exp(x)) along ``dim`` (in ``dtype`` where given)."""
    x = self if dtype is None else _OPS["astype"](self, dtype)
    return _OPS["fused.softmax"](x, axis=dim)


def log_softmax(self: Array, dim: int, dtype=None) -> Array:
    """x - logsumexp(x) along ``dim`` (in ``dtype`` where given)."""
    x = self if dtype is None else _OPS["astype"](self, dtype)
    return _OPS["fused.log_softmax"](x, axis=dim)


def logsumexp(self: Array, dim=None, keepdim: bool = False) -> Array:
    """log(sum(exp(x))) along ``dim`` (all axes when None), shifted by the (detached) maximum so
    it cannot overflow."""
    m = _OPS["max"](self.detach(), axis=dim, keepdims=True)
    m = _OPS["where"](_OPS["isfinite"](m), m, 0.0)   # an all -inf (or +inf) row: no shift
    s = _OPS["log"](_OPS["sum"](_OPS["exp"](_OPS["subtract"](self, m)), axis=dim, keepdims=True))
    out = _OPS["add"](s, m)
    return out if keepdim else _OPS["squeeze"](out, axis=dim)


def amax(self: Array, dim=None, keepdim: bool = False) -> Array:
    """The largest element along ``dim`` (all when None or ())."""
    return _OPS["max"](self, axis=None if dim == () else dim, keepdims=keepdim)


def amin(self: Array, dim=None, keepdim: bool = False) -> Array:
    """The smallest element along ``dim`` (all when None or ())."""
    return _OPS["min"](self, axis=None if dim == () else dim, keepdims=keepdim)


def norm(self: Array, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Array:
    """The vector p-norm over ``dim`` (all elements when None; 'fro' is the 2-norm);
    p='nuc' needs two dims (or a 2-D array): gp.linalg.vector_norm / matrix_norm."""
    if dtype is not None and dispatch.hooks.cast is not None:
        # the caller's dtype, autocast or not (torch's norm with dtype= is not cast)
        with dispatch.no_cast():
            return norm(_OPS["astype"](self, dtype), p, dim, keepdim)
    x = self if dtype is None else _OPS["astype"](self, dtype)
    if p == "nuc":
        dims = (0, 1) if dim is None and x.ndim == 2 else dim
        if not isinstance(dims, (tuple, list)) or len(dims) != 2:
            raise ValueError("Array.norm: p='nuc' needs two dims (or a 2-D array)")
        m = _OPS["moveaxis"](x, tuple(dims), (-2, -1))
        out = _OPS["linalg.matrix_norm"](m, ord="nuc", keepdims=keepdim)
        if keepdim:
            out = _OPS["moveaxis"](out, (-2, -1), tuple(dims))
        return out
    if p == "fro":
        p = 2
    if isinstance(p, str):
        raise ValueError(f"Array.norm: p must be a number, 'fro' or 'nuc', got {p!r}")
    axis = tuple(dim) if isinstance(dim, list) else dim
    return _OPS["linalg.vector_norm"](x, axis=axis, keepdims=keepdim, ord=p)


@dispatch.policy("nansum")   # gp.nansum's autocast class (amp.policy)
def nansum(self: Array, dim=None, keepdim: bool = False, *, dtype=None) -> Array:
    """The sum over ``dim`` with NaNs counted as zero."""
    x = _OPS["where"](_OPS["isnan"](self), 0, self) if self._dtype.kind in "fc" else self
    return _OPS["sum"](x, axis=tuple(dim) if isinstance(dim, list) else dim, keepdims=keepdim,
                       dtype=dtype)


def topk(self: Array, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:  # noqa: A002
    """(values, indices) of the ``k`` largest (smallest) elements along ``dim``: gp.topk."""
    return tuple(_OPS["topk"](self, k, axis=dim, largest=largest, sorted=sorted))


def argsort(self: Array, axis: int = -1, *, dim=None, descending: bool = False,
            stable: bool = False, kind=None, order=None) -> Array:
    """Indices that sort along ``axis`` (NumPy's, or torch's dim/descending): gp.argsort."""
    if order is not None:
        raise TypeError("Array.argsort: order= (structured arrays) is not supported")
    return _OPS["argsort"](self, axis=axis if dim is None else dim, descending=descending,
                           stable=True)


def sort(self: Array, axis: int = -1, kind=None, order=None, **kw):
    """NumPy's sort: in place along ``axis``, returning None; with torch's keywords dim=,
    descending=, stable=, torch's sort: a new (values, indices), self unchanged."""
    if kw:
        return _torch_dims.sort(self, dim=kw.pop("dim", axis), **kw)
    if order is not None:
        raise TypeError("Array.sort: order= (structured arrays) is not supported")
    dispatch.check_writable(self._buf, "sort (in place)")
    _write(self, _OPS["sort"](_old(self), axis=axis))


def take(self: Array, indices, axis=None, out=None, mode: str = "raise") -> Array:
    """The elements at ``indices`` (of the flattened array when ``axis`` is None): gp.take."""
    no_out("Array.take", out)
    return _OPS["take"](self, indices, axis=axis, mode=mode)


def _trimmed(self: Array, index: Array, d: int, op: str) -> Array:
    """self cut to ``index``'s size along every axis but ``d`` (torch lets index be smaller)."""
    if index.ndim != self.ndim:
        raise ValueError(f"Array.{op}: index must have as many dimensions as the array "
                         f"({self.ndim}), got {index.ndim}")
    for i, (a, b) in enumerate(zip(index.shape, self.shape)):
        if i != d and a > b:
            raise ValueError(f"Array.{op}: index shape {index.shape} exceeds the array's shape "
                             f"{self.shape} in dimension {i}")
    key = tuple(slice(None) if i == d else slice(0, n) for i, n in enumerate(index.shape))
    return self[key] if any(i != d and a != b for i, (a, b) in
                            enumerate(zip(index.shape, self.shape))) else self


def gather(self: Array, dim: int, index: Array) -> Array:
    """self[..., index[i, j], ...] along ``dim``, shaped as ``index``: gp.take_along_axis."""
    d = _dim(self, dim, "gather")
    return _OPS["take_along_axis"](_trimmed(self, index, d, "gather"), index, axis=d)


def _scatter_key(self: Array, d: int, index: Array) -> tuple:
    """The advanced index that puts element ``i`` of ``index`` at its position along ``d``."""
    key = []
    for i, n in enumerate(index.shape):
        if i == d:
            key.append(index)
        else:
            shape = [1] * index.ndim
            shape[i] = n
            key.append(_OPS["reshape"](_OPS["arange"](n, device=self.device), tuple(shape)))
    return tuple(key)


def scatter(self: Array, dim: int, index: Array, src=None, *, value=None, reduce=None) -> Array:
    """A copy of self with ``src`` (or the scalar ``value``) written at ``index`` along ``dim``."""
    if (src is None) == (value is None):
        raise TypeError("Array.scatter: give exactly one of src and value")
    if reduce is not None:
        if reduce != "add":
            raise NotImplementedError(f"Array.scatter: reduce={reduce!r} is not supported "
                                      f"(only 'add')")
        v = src if value is None else _OPS["full"](index.shape, value, dtype=self.dtype,
                                                   device=self.device)
        return scatter_add(self, dim, index, v)
    d = _dim(self, dim, "scatter")
    _trimmed(self, index, d, "scatter")
    v = value if src is None else src
    if isinstance(v, Array) and v.ndim:
        v = v[tuple(slice(0, n) for n in index.shape)]
    out = self.copy()
    out[_scatter_key(self, d, index)] = v
    return out


def _scatter_positions(self: Array, d: int, index: Array, src: Array) -> tuple:
    """(flat positions in self, src's values) of a scatter along ``d``, both 1-D; an index
    outside [0, n) goes to position -1 (no run: it adds nothing) with value 0."""
    _trimmed(self, index, d, "scatter")
    src = src[tuple(slice(0, n) for n in index.shape)]
    n = self.shape[d]
    idx = _OPS["astype"](index, _dt.int64)
    valid = _OPS["logical_and"](idx >= 0, idx < n)
    # each element's flat position in self: its own multi-index, index's value along dim
    stride = 1
    lin = None
    for j in range(self.ndim - 1, -1, -1):
        if j == d:
            term = _OPS["where"](valid, idx, 0) * stride
        else:
            at = [1] * index.ndim
            at[j] = index.shape[j]
            term = _OPS["reshape"](_OPS["arange"](index.shape[j], dtype=_dt.int64,
                                                  device=self.device), tuple(at)) * stride
        lin = term if lin is None else lin + term
        stride *= self.shape[j]
    vals = _OPS["where"](valid, src, _OPS["zeros"]((), dtype=src.dtype, device=src.device))
    lin = _OPS["where"](valid, _OPS["broadcast_to"](lin, index.shape), -1)
    return _OPS["reshape"](lin, (-1,)), _OPS["reshape"](vals, (-1,))


def scatter_add(self: Array, dim: int, index: Array, src: Array) -> Array:
    """self plus ``src`` added at ``index`` along ``dim`` (repeated indices accumulate, in index
    order; an index outside [0, n) adds nothing): a scatter-add of each element at its flat
    position (segments.scatter_add_rows: O(index + self) memory), differentiable in self and
    src on every device."""
    d = _dim(self, dim, "scatter_add")
    lin, vals = _scatter_positions(self, d, index, src)
    part = _segments.scatter_add_rows(int(self.size), lin, vals)
    return _OPS["add"](self, _OPS["reshape"](part, self.shape))


_SCATTER_REDUCE = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(self: Array, dim: int, index: Array, src: Array, reduce: str, *,
                   include_self: bool = True) -> Array:
    """self with ``src`` reduced into the positions ``index`` along ``dim`` ("sum", "prod",
    "mean", "amax", "amin"; ``include_self``: self's value takes part), as torch's
    scatter_reduce."""
    if reduce not in _SCATTER_REDUCE:
        raise ValueError(f"Array.scatter_reduce: reduce must be one of {_SCATTER_REDUCE}, got "
                         f"{reduce!r}")
    if not isinstance(src, Array):
        raise TypeError(f"Array.scatter_reduce: src must be an array, got {type(src).__name__}")
    d = _dim(self, dim, "scatter_reduce")
    lin, vals = _scatter_positions(self, d, index, src)
    size = int(self.size)
    count = _OPS["reshape"](_segments.scatter_add_rows(
        size, lin, _OPS["ones"](lin.shape, dtype=_dt.int64, device=self.device)), self.shape)
    hit = count > 0
    zero = _OPS["zeros"]((), dtype=self.dtype, device=self.device)
    if reduce in ("sum", "mean"):
        base = self if include_self else _OPS["where"](hit, zero, self)
        part = _segments.scatter_add_rows(size, lin, _OPS["astype"](vals, self.dtype))
        total = _OPS["add"](base, _OPS["reshape"](part, self.shape))
        if reduce == "sum":
            return total
        denom = _OPS["maximum"](count + (1 if include_self else 0), 1)
        if self.dtype.kind in "iub":   # torch's integer mean rounds down
            mean = _OPS["floor_divide"](total, _OPS["astype"](denom, self.dtype))
        else:
            mean = total / _OPS["astype"](denom, self.dtype)
        return _OPS["where"](hit, mean, self)
    if reduce == "prod":
        return _scatter_prod(self, lin, vals, hit, count, include_self)
    sign = 1 if reduce == "amax" else -1   # amin as the negated amax of the negated values
    order, starts, ends = _segments.sorted_runs(lin, size)
    best, _ = _segments.segment_max(_OPS["take"](_OPS["astype"](vals, self.dtype) * sign,
                                                 order, axis=0), starts, ends)
    best = _OPS["reshape"](best, self.shape) * sign
    if include_self:
        best = _OPS["maximum" if sign > 0 else "minimum"](self, best)
    return _OPS["where"](hit, best, self)


def _scatter_prod(self: Array, lin: Array, vals: Array, hit: Array, count: Array,
                  include_self: bool) -> Array:
    """scatter_reduce's "prod": each position's values as one row of a (self.size, longest
    run) array padded with ones, multiplied by gp.prod (whose rule gives each value the product
    of the others, zeros included, as torch's)."""
    size = int(self.size)
    order, starts, _ = _segments.sorted_runs(lin, size)
    keys = _OPS["take"](lin, order)
    inside = keys >= 0
    rank = _OPS["arange"](keys.shape[0], dtype=_dt.int64, device=self.device) - _OPS["take"](
        starts, _OPS["where"](inside, keys, 0))
    width = max(1, int(_OPS["max"](count))) if size else 1   # (one host read: the row length)
    slot = _OPS["where"](inside, keys * width + rank, -1)
    placed = _segments.scatter_add_rows(size * width, slot,
                                        _OPS["take"](_OPS["astype"](vals, self.dtype), order))
    taken = _segments.scatter_add_rows(size * width, slot, _OPS["ones"](
        slot.shape, dtype=_dt.int64, device=self.device)) > 0
    one = _OPS["ones"]((), dtype=self.dtype, device=self.device)
    rows = _OPS["reshape"](_OPS["where"](taken, placed, one), (size, width))
    part = _OPS["reshape"](_OPS["prod"](rows, axis=1, dtype=self.dtype), self.shape)
    return _OPS["where"](hit, self * part if include_self else part, self)


def index_select(self: Array, dim: int, index: Array) -> Array:
    """The slices at the 1-D ``index`` along ``dim``: gp.take."""
    if not isinstance(index, Array) or index.ndim > 1:
        raise ValueError("Array.index_select: index must be a 0-D or 1-D integer array")
    return _OPS["take"](self, _OPS["reshape"](index, (-1,)), axis=_dim(self, dim, "index_select"))


def _index_1d(op: str, index, n: int) -> Array:
    """``index`` as a 1-D integer array of positions in [-n, n) (negative ones count from the
    end); TypeError/IndexError otherwise."""
    if not isinstance(index, Array) or index.dtype.kind not in "iu" or index.ndim > 1:
        got = f"{index.dtype.name} {index.ndim}-D" if isinstance(index, Array) else \
            type(index).__name__
        raise TypeError(f"Array.{op}: index must be a 0-D or 1-D integer array, got {got}")
    index = _OPS["reshape"](index, (-1,))
    if index.shape[0] and not bool(_OPS["all"](_OPS["logical_and"](index >= -n, index < n))):
        raise IndexError(f"Array.{op}: index out of range for a dimension of size {n}")
    return _OPS["where"](index < 0, index + n, index)


def _index_source(op: str, self: Array, dim: int, index: Array, source) -> tuple:
    """(dim, index checked and made non-negative) of index_add/index_copy, whose ``source``
    must have self's shape with len(index) along dim (a ValueError naming ``op`` otherwise)."""
    d = _dim(self, dim, op)
    index = _index_1d(op, index, self.shape[d] if self.ndim else 1)
    want = self.shape[:d] + index.shape + self.shape[d + 1:]
    if not isinstance(source, Array) or source.shape != want:
        got = source.shape if isinstance(source, Array) else type(source).__name__
        raise ValueError(f"Array.{op}: source must have shape {want} (self's, with "
                         f"len(index) along dim {d}), got {got}")
    return d, index


def index_add(self: Array, dim: int, index: Array, source: Array, *, alpha=1) -> Array:
    """self with ``alpha * source[..., i, ...]`` added at ``index[i]`` along ``dim`` (repeated
    indices accumulate): scatter_add with ``index`` spread over source's shape."""
    d, index = _index_source("index_add", self, dim, index, source)
    at = [1] * source.ndim
    at[d] = index.shape[0]
    spread = _OPS["broadcast_to"](_OPS["reshape"](index, tuple(at)), source.shape)
    return scatter_add(self, d, spread, _scaled(source, alpha))


def index_fill(self: Array, dim: int, index: Array, value) -> Array:
    """self with ``value`` at the positions ``index`` along ``dim`` (masked_fill of them)."""
    d = _dim(self, dim, "index_fill")
    n = self.shape[d] if self.ndim else 1
    index = _index_1d("index_fill", index, n)
    hit = _OPS["any"](_OPS["equal"](_OPS["expand_dims"](index, axis=-1),
                                    _OPS["arange"](n, device=self.device)), axis=0)
    at = [1] * self.ndim
    if at:
        at[d] = n
    return masked_fill(self, _OPS["reshape"](hit, tuple(at)), value)


def median(self: Array, dim=None, keepdim: bool = False):
    """torch's median: without dim, the lower middle value of all elements (0-d; NumPy's
    gp.median averages the two); with dim, (values, indices) along it."""
    return _torch_dims.median(self, dim=dim, keepdim=keepdim)


def mode(self: Array, dim: int = -1, keepdim: bool = False):
    """(values, indices): the most frequent value along ``dim`` (the smallest of equally
    frequent ones) and the index of its last occurrence, as torch."""
    return _torch_dims.mode(self, dim, keepdim)


def kthvalue(self: Array, k: int, dim: int = -1, keepdim: bool = False):
    """(values, indices): the k-th smallest element along ``dim`` (k from 1)."""
    return _torch_dims.kthvalue(self, k, dim, keepdim)


def bincount(self: Array, weights: Array | None = None, minlength: int = 0) -> Array:
    """Counts of each value of a 1-D non-negative integer array (sums of ``weights`` where
    given, in their floating dtype as torch, not NumPy's float64): gp.bincount."""
    out = _OPS["bincount"](self, weights, minlength)
    if isinstance(weights, Array) and weights.dtype.kind == "f" and out.dtype != weights.dtype:
        out = _OPS["astype"](out, weights.dtype)
    return out


# torch's legacy type names (x.type()), by grilly dtype name
_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
               "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
               "bool": "BoolTensor", "complex64": "ComplexFloatTensor",
               "complex128": "ComplexDoubleTensor"}


def type_(self: Array, dtype=None, non_blocking: bool = False):
    """torch's x.type(): without ``dtype``, torch's CPU type name ('torch.FloatTensor', on
    every device); with it (a dtype or such a name), this array in that dtype."""
    if dtype is None:
        name = _TYPE_NAMES.get(self.dtype.name)
        if name is None:
            raise TypeError(f"Array.type: torch has no type name for dtype {self.dtype.name}")
        return "torch." + name
    if isinstance(dtype, str) and dtype.startswith("torch."):
        names = {"torch." + v: k for k, v in _TYPE_NAMES.items()}
        if dtype not in names:
            raise ValueError(f"Array.type: unknown type name {dtype!r} (CPU tensor types "
                             "such as 'torch.FloatTensor' only)")
        dtype = names[dtype]
    return _OPS["astype"](self, _dt.as_dtype(dtype, "Array.type"), copy=False)


def tril(self: Array, diagonal: int = 0) -> Array:
    """The lower triangle (below the ``diagonal``-th diagonal zeroed above): gp.tril."""
    return _OPS["tril"](self, k=diagonal)


def triu(self: Array, diagonal: int = 0) -> Array:
    """The upper triangle: gp.triu."""
    return _OPS["triu"](self, k=diagonal)


def diag(self: Array, diagonal: int = 0) -> Array:
    """A 1-D array as the ``diagonal``-th diagonal of a square matrix, or a 2-D array's
    ``diagonal``-th diagonal (gp.linalg.diagonal)."""
    if self.ndim == 2:
        return _OPS["linalg.diagonal"](self, offset=diagonal)
    if self.ndim != 1:
        raise ValueError(f"Array.diag: needs a 1-D or 2-D array, got {self.ndim}-D")
    n = self.shape[0] + abs(diagonal)
    i = _OPS["arange"](self.shape[0], device=self.device)
    out = _OPS["zeros"]((n, n), dtype=self.dtype, device=self.device)
    out[(i + max(-diagonal, 0), i + max(diagonal, 0))] = self
    return out


def allclose(self: Array, other: Array, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """Whether |self - other| <= atol + rtol * |other| everywhere (equal infinities count)."""
    close = _OPS["logical_or"](_OPS["equal"](self, other), _OPS["less_equal"](
        _OPS["abs"](_OPS["subtract"](self, other)),
        _OPS["add"](_OPS["multiply"](_OPS["abs"](other), rtol), atol)))
    if equal_nan:
        close = _OPS["logical_or"](close, _OPS["logical_and"](_OPS["isnan"](self),
                                                              _OPS["isnan"](other)))
    return bool(_OPS["all"](close))


def equal(self: Array, other: Array) -> bool:
    """Whether both have the same shape and elements."""
    return self.shape == other.shape and bool(_OPS["all"](_OPS["equal"](self, other)))


def unique(self: Array, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim=None):
    """The sorted unique values (and the inverse indices, the counts where asked), as torch."""
    if dim is not None:
        # the distinct slices along dim, in lexicographic order: NumPy's unique(axis=)
        return _OPS["unique"](self, return_inverse=return_inverse, return_counts=return_counts,
                              axis=_dim(self, dim, "unique"))
    if not return_inverse and not return_counts:
        return _OPS["unique_values"](self)
    if return_inverse and return_counts:
        r = _OPS["unique_all"](self)
        return r.values, r.inverse_indices, r.counts
    if return_inverse:
        return tuple(_OPS["unique_inverse"](self))
    return tuple(_OPS["unique_counts"](self))


def nonzero(self: Array, *, as_tuple: bool | None = None):
    """NumPy's nonzero: a tuple of index arrays, one per axis (torch's as_tuple=True).
    torch's default form, ``nonzero(as_tuple=False)``, is the (N, ndim) array of them stacked."""
    idx = _OPS["nonzero"](self)
    return _OPS["stack"](idx, axis=-1) if as_tuple is False else idx


# ---- in place (torch's trailing underscore; each returns self) -----------------------------------
def _old(x: Array) -> Array:
    """x, or in grad mode a differentiable copy standing for its old values (what an in-place
    write must not overwrite while the graph still needs it)."""
    return x.copy() if x.requires_grad else x


def _write(x: Array, value) -> Array:
    """x[...] = value through autograd's setitem path (a leaf that requires grad raises)."""
    x[...] = value
    return x


def _inplace_binary(name: str, op: str) -> None:
    if op in ("add", "subtract"):
        def f(self: Array, other, *, alpha=1) -> Array:
            return dispatch.inplace(self, op, _scaled(other, alpha))
    else:
        def f(self: Array, other) -> Array:
            return dispatch.inplace(self, op, other)
    f.__doc__ = f"self = gp.{op}(self, other) in place (the ``x op= y`` path); returns self."
    _method(name, f)


for _name, _op in (("add_", "add"), ("sub_", "subtract"), ("mul_", "multiply"),
                   ("div_", "divide"), ("pow_", "pow")):
    _inplace_binary(_name, _op)


def zero_(self: Array) -> Array:
    """Every element set to 0; returns self."""
    return _write(self, 0)


def fill_(self: Array, value) -> Array:
    """Every element set to ``value``; returns self."""
    return _write(self, value)


def copy_(self: Array, src) -> Array:
    """``src`` (broadcast, cast to this dtype) written into self; returns self."""
    if isinstance(src, Array) and src.device is not self.device:
        src = _OPS["to_device"](src, self.device)
    return _write(self, src)


def _inplace_of(name: str) -> None:
    """``name + '_'``: method ``name``'s result written into self (through ``x[...] =``, so a
    graph keeps the old values); TypeError where its dtype is not self's, as torch."""
    def f(self: Array, *args, **kw) -> Array:
        dispatch.check_writable(self._buf, f"{name}_ (in place)")
        if dispatch.hooks.cast is not None:   # autocast leaves in-place ops alone, as torch's
            with dispatch.no_cast():
                res = getattr(Array, name)(_old(self), *args, **kw)
        else:
            res = getattr(Array, name)(_old(self), *args, **kw)
        if res.dtype is not self.dtype:
            raise TypeError(f"Array.{name}_: the result's dtype {res.dtype.name} cannot be "
                            f"stored in an array of dtype {self.dtype.name}")
        return _write(self, res)
    f.__doc__ = f"{name} in place; returns self."
    _method(name + "_", f)


# torch's in-place twins of the methods above (the binary arithmetic ones are _inplace_binary's)
_INPLACE = ("abs", "neg", "negative", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt",
            "rsqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "asin", "acos", "atan",
            "floor", "ceil", "trunc", "round", "sign", "reciprocal", "square", "sigmoid", "relu",
            "clamp", "clip", "fmod", "remainder", "lerp", "addcmul", "addcdiv", "masked_fill",
            "scatter", "scatter_add", "scatter_reduce", "index_add", "index_fill")


def _generator(generator):
    return _ns().random.default_generator if generator is None else generator


def uniform_(self: Array, a: float = 0.0, b: float = 1.0, *, generator=None) -> Array:
    """Uniform draws in [a, b) from grilly.random (its default generator unless given)."""
    return _write(self, _generator(generator).uniform(a, b, self.shape, dtype=self.dtype,
                                                      device=self.device))


def normal_(self: Array, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Array:
    """Normal draws from grilly.random (its default generator unless given)."""
    return _write(self, _generator(generator).normal(mean, std, self.shape, dtype=self.dtype,
                                                     device=self.device))


def _float_self(self: Array, op: str) -> None:
    if self.dtype.kind != "f":
        raise TypeError(f"Array.{op}: needs a real floating array, got {self.dtype.name}")


def _draw_into(self: Array, x: Array) -> Array:
    """``x`` (drawn on self's device) written into self, cast to its dtype."""
    return _write(self, x if x.dtype is self.dtype else _OPS["astype"](x, self.dtype))


def bernoulli_(self: Array, p=0.5, *, generator=None) -> Array:
    """1 with probability ``p`` (a number or an Array broadcast to self), else 0; returns self."""
    d = self.dtype if self.dtype.kind == "f" else None
    if isinstance(p, Array):
        p = _OPS["broadcast_to"](p, self.shape)
    return _draw_into(self, _generator(generator).bernoulli(p, self.shape, dtype=d,
                                                            device=self.device))


def exponential_(self: Array, lambd: float = 1.0, *, generator=None) -> Array:
    """Exponential draws of rate ``lambd`` (> 0); returns self."""
    _float_self(self, "exponential_")
    if not lambd > 0:
        raise ValueError(f"Array.exponential_: lambd must be > 0, got {lambd}")
    return _draw_into(self, _generator(generator).exponential(
        1.0 / lambd, self.shape, dtype=self.dtype, device=self.device))


def geometric_(self: Array, p: float, *, generator=None) -> Array:
    """The number of Bernoulli(p) trials up to the first success (>= 1); returns self."""
    return _draw_into(self, _generator(generator).geometric(p, self.shape, device=self.device))


def cauchy_(self: Array, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Array:
    """Cauchy draws of ``median`` and scale ``sigma``; returns self."""
    _float_self(self, "cauchy_")
    if not sigma > 0:
        raise ValueError(f"Array.cauchy_: sigma must be > 0, got {sigma}")
    c = _generator(generator).standard_cauchy(self.shape, dtype=self.dtype, device=self.device)
    return _draw_into(self, c * sigma + median)


def log_normal_(self: Array, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Array:
    """exp of Normal(mean, std) draws; returns self."""
    _float_self(self, "log_normal_")
    if not std > 0:
        raise ValueError(f"Array.log_normal_: std must be > 0, got {std}")
    return _draw_into(self, _generator(generator).lognormal(mean, std, self.shape,
                                                            dtype=self.dtype, device=self.device))


# the top of random_'s default range, to=None: every integer the dtype holds exactly
_RANDOM_TOP = {"float16": 2 ** 11, "bfloat16": 2 ** 8, "float32": 2 ** 24, "float64": 2 ** 53,
               "int8": 2 ** 7 - 1, "uint8": 2 ** 8 - 1, "int16": 2 ** 15 - 1,
               "uint16": 2 ** 16 - 1, "int32": 2 ** 31 - 1, "uint32": 2 ** 32 - 1,
               "int64": 2 ** 63 - 1, "uint64": 2 ** 64 - 1, "bool": 1}


def random_(self: Array, from_=None, to=None, *, generator=None) -> Array:
    """Integers in [from_, to) (``random_(to)``: [0, to); ``random_()``: [0, the largest
    integer the dtype holds exactly]); returns self. Ranges must fit in 32 bits."""
    if from_ is None and to is None:
        low, high = 0, _RANDOM_TOP.get(self.dtype.name, 0) + 1
        if high - low > 2 ** 32:
            raise NotImplementedError(f"Array.random_: the default range of {self.dtype.name} "
                                      f"exceeds 2**32 values; give to= (grilly draws ranges "
                                      f"of at most 2**32)")
    elif to is None:
        low, high = 0, from_
    else:
        low, high = 0 if from_ is None else from_, to
    return _draw_into(self, _generator(generator).integers(low, high, self.shape,
                                                           device=self.device))


def bernoulli(self: Array, p=None, *, generator=None) -> Array:
    """Draws of 1 with probability self (or ``p``), else 0, in self's dtype (torch's)."""
    return _ns().bernoulli(self, p, generator=generator)


def multinomial(self: Array, num_samples: int, replacement: bool = False, *,
                generator=None) -> Array:
    """Category indices drawn per row of self's weights (torch.multinomial)."""
    return _ns().multinomial(self, num_samples, replacement, generator=generator)


for _fn in (view, view_as, reshape_as, expand, expand_as, unsqueeze, permute, t, movedim, narrow,
            flip, roll, chunk, split, unbind, tile, repeat, dim, numel, element_size,
            is_floating_point, stride, is_contiguous, contiguous, clone, type_as, to, cpu,
            new_zeros, new_ones, new_empty, new_full, new_tensor, rsqrt, sigmoid, relu, round,
            float_power, fmod, add, sub, div, lerp, mm, bmm, addmm, baddbmm, addcmul, addcdiv, dot, outer,
            clamp, where, masked_fill, masked_select, softmax, log_softmax, logsumexp, amax,
            amin, norm, nansum, topk, argsort, sort, take, gather, scatter, scatter_add,
            index_select, index_add, index_fill, tril, triu, diag, allclose, equal, unique,
            nonzero, median, mode, kthvalue, bincount, zero_, fill_, copy_, uniform_, normal_,
            bernoulli_, exponential_, geometric_, cauchy_, log_normal_, random_, bernoulli,
            multinomial):
    setattr(Array, _fn.__name__, _fn)
_method("type", type_)
Array.is_cuda = property(lambda self: False, doc="torch's x.is_cuda: always False (grilly has "
                         "no CUDA device; a Vulkan array is not a CUDA one).")
for _name in _INPLACE:
    _inplace_of(_name)



# ---- more of torch's methods (a hunt's finds: each a composition of namespace ops) ------------
def clamp_min(self: Array, min) -> Array:   # noqa: A002 (torch's name)
    """Each element at least ``min`` (a scalar or an array): clamp(min=min)."""
    return clamp(self, min=min)


def clamp_max(self: Array, max) -> Array:   # noqa: A002 (torch's name)
    """Each element at most ``max`` (a scalar or an array): clamp(max=max)."""
    return clamp(self, max=max)


def ndimension(self: Array) -> int:
    """The number of dimensions (torch's alias of dim())."""
    return self.ndim


def nelement(self: Array) -> int:
    """The number of elements (torch's alias of numel())."""
    return int(self.size)


def argwhere(self: Array) -> Array:
    """The (N, ndim) indices of the non-zero elements: gp.argwhere."""
    return _OPS["argwhere"](self)


def diff(self: Array, n: int = 1, dim: int = -1, prepend=None, append=None) -> Array:
    """The n-th forward difference along ``dim`` (prepend/append joined first): gp.diff."""
    d = _dim(self, dim, "diff")
    # an array prepend/append is joined here, so that its gradient flows as torch's does
    # (gp.diff's rule differentiates x only)
    parts = [self]
    if isinstance(prepend, Array) and prepend.ndim == self.ndim:
        parts.insert(0, prepend)
        prepend = None
    if isinstance(append, Array) and append.ndim == self.ndim:
        parts.append(append)
        append = None
    x = _OPS["concat"](parts, axis=d) if len(parts) > 1 and n else self
    return _OPS["diff"](x, n=n, axis=d, prepend=prepend, append=append)


def _cumulative(self: Array, dim: int, op: str, take_right) -> tuple:
    """(values, indices) of a running max/min along ``dim``: a log-step scan of (value, index)
    pairs without the graph, then the values gathered at the indices (the gradient goes to the
    element each running extreme came from, as torch's)."""
    d = _dim(self, dim, op)
    x = self.detach() if self.ndim else _OPS["reshape"](self.detach(), (1,))
    n = x.shape[d]
    at = [1] * x.ndim
    at[d] = n
    idx = _OPS["broadcast_to"](_OPS["reshape"](_OPS["arange"](n, dtype=_dt.int64,
                                                              device=x.device), tuple(at)),
                               x.shape)
    val, shift = x, 1
    while shift < n:   # pair i takes pair i - shift's when that one wins (ties: the later)
        lo = (slice(None),) * d + (slice(0, n - shift),)
        hi = (slice(None),) * d + (slice(shift, n),)
        keep = take_right(val[hi], val[lo])
        pad = _OPS["ones"](x.shape[:d] + (shift,) + x.shape[d + 1:], dtype=_dt.bool,
                           device=x.device)
        keep = _OPS["concat"]((pad, keep), axis=d)
        head = (slice(None),) * d + (slice(0, shift),)
        val = _OPS["where"](keep, val, _OPS["concat"]((val[head], val[lo]), axis=d))
        idx = _OPS["where"](keep, idx, _OPS["concat"]((idx[head], idx[lo]), axis=d))
        shift *= 2
    if not self.ndim:
        idx = _OPS["reshape"](idx, ())
        return self, idx
    return _OPS["take_along_axis"](self, idx, axis=d), idx


def cummax(self: Array, dim: int) -> tuple:
    """(values, indices): the running maximum along ``dim`` and where it was (the last of
    equal ones; NaN propagates), as torch's cummax."""
    return _cumulative(self, dim, "cummax",
                       lambda new, old: _OPS["logical_or"](new >= old, _OPS["isnan"](new)))


def cummin(self: Array, dim: int) -> tuple:
    """(values, indices): the running minimum along ``dim`` and where it was (the last of
    equal ones; NaN propagates), as torch's cummin."""
    return _cumulative(self, dim, "cummin",
                       lambda new, old: _OPS["logical_or"](new <= old, _OPS["isnan"](new)))


def logcumsumexp(self: Array, dim: int) -> Array:
    """log(cumsum(exp(x))) along ``dim``: a log-step scan of logaddexp (no shift by the
    maximum, which underflowed the early terms far below it)."""
    d = _dim(self, dim, "logcumsumexp")
    if self.dtype.kind == "c":
        raise NotImplementedError("Array.logcumsumexp: complex input is not supported")
    if self.dtype.kind != "f":   # torch's is defined for floating dtypes only
        raise TypeError(f"Array.logcumsumexp: needs a floating array, got {self.dtype}")
    if not self.ndim:
        return self
    n = self.shape[d]
    val, shift = self, 1
    while shift < n:   # element i adds the partial sum ending shift before it
        lo = (slice(None),) * d + (slice(0, n - shift),)
        low = _OPS["full"](self.shape[:d] + (shift,) + self.shape[d + 1:], -math.inf,
                           dtype=self.dtype, device=self.device)
        val = _OPS["logaddexp"](val, _OPS["concat"]((low, val[lo]), axis=d))
        shift *= 2
    return val


def select(self: Array, dim: int, index: int) -> Array:
    """The slice at ``index`` along ``dim``, that axis removed (a view, as torch's)."""
    d = _dim(self, dim, "select")
    n = self.shape[d]
    i = int(index)
    if not -n <= i < n:
        raise IndexError(f"Array.select: index {i} out of range for dimension {d} of size {n}")
    return self[(slice(None),) * d + (i,)]


def cumprod(self: Array, axis=None, dtype=None, **kw) -> Array:
    """Running product along ``axis`` (torch's ``dim=``; the flattened array when None)."""
    if kw.pop("out", None) is not None:
        raise TypeError("Array.cumprod: out= is not supported; use the result")
    if "dim" in kw:
        axis = kw.pop("dim")
    if kw:
        raise TypeError(f"Array.cumprod: unexpected keyword argument {next(iter(kw))!r}")
    x = self if axis is not None else _OPS["reshape"](self, (-1,))
    return _OPS["cumulative_prod"](x, axis=0 if axis is None else axis, dtype=dtype)


@dispatch.policy("addmv")   # one low-dtype op, as torch's
def addmv(self: Array, mat: Array, vec: Array, *, beta=1, alpha=1) -> Array:
    """beta * self + alpha * (mat @ vec)."""
    _check_nd("addmv", mat, 2, "mat")
    _check_nd("addmv", vec, 1, "vec")
    return _plus_product(self, _OPS["matmul"](mat, vec), beta, alpha)


@dispatch.policy("addr")   # one low-dtype op, as torch's
def addr(self: Array, vec1: Array, vec2: Array, *, beta=1, alpha=1) -> Array:
    """beta * self + alpha * outer(vec1, vec2)."""
    _check_nd("addr", vec1, 1, "vec1")
    _check_nd("addr", vec2, 1, "vec2")
    return _plus_product(self, _OPS["linalg.outer"](vec1, vec2), beta, alpha)


@dispatch.policy("addbmm")   # one low-dtype op (its batch sum too), as torch's
def addbmm(self: Array, batch1: Array, batch2: Array, *, beta=1, alpha=1) -> Array:
    """beta * self + alpha * (the sum over the batch of batch1[b] @ batch2[b])."""
    _check_nd("addbmm", batch1, 3, "batch1")
    _check_nd("addbmm", batch2, 3, "batch2")
    return _plus_product(self, _OPS["sum"](_OPS["matmul"](batch1, batch2), axis=0), beta, alpha)


def diagonal(self: Array, offset: int = 0, axis1: int = 0, axis2: int = 1, *, dim1=None,
             dim2=None) -> Array:
    """The ``offset`` diagonal of the planes (axis1, axis2) as the last axis (torch's dim1/dim2
    too): a view, as torch's (written through, it changes self)."""
    return _OPS["diagonal"](self, offset, axis1 if dim1 is None else dim1,
                            axis2 if dim2 is None else dim2)


@dispatch.policy("diag_embed")   # a composition of products: no autocast inside
def diag_embed(self: Array, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Array:
    """Each vector along the last axis as the ``offset`` diagonal of a square matrix in the
    plane (dim1, dim2) of the result (differentiable: the vector times 0/1 placement
    matrices)."""
    nd = self.ndim + 1
    d1 = _dim(self, dim1, "diag_embed", 1)
    d2 = _dim(self, dim2, "diag_embed", 1)
    if d1 == d2:
        raise ValueError(f"Array.diag_embed: dim1 and dim2 must differ, both are {d1}")
    v = self if self.ndim else _OPS["reshape"](self, (1,))
    n = v.shape[-1]
    m = n + abs(int(offset))
    i = _OPS["arange"](n, dtype=_dt.int64, device=self.device)
    rows = _OPS["arange"](m, dtype=_dt.int64, device=self.device)[:, None]
    put_r = _OPS["astype"](rows == i + max(-int(offset), 0), v.dtype)   # (m, n)
    put_c = _OPS["astype"](rows == i + max(int(offset), 0), v.dtype)    # (m, n)
    out = _OPS["matmul"](v[..., None, :] * put_r, _OPS["matrix_transpose"](put_c))
    return _OPS["moveaxis"](out, (nd - 2, nd - 1), (d1, d2))


def fill_diagonal_(self: Array, fill_value, wrap: bool = False) -> Array:
    """The main diagonal set to ``fill_value`` in place (every axis the same size beyond 2-D;
    ``wrap``: a tall matrix's diagonal restarts below, as NumPy's); returns self."""
    if self.ndim < 2 or (self.ndim > 2 and len(set(self.shape)) != 1):
        raise ValueError(f"Array.fill_diagonal_: needs a 2-D array or one whose dimensions "
                         f"are all equal, got shape {self.shape}")
    step = sum(int(np.prod(self.shape[i + 1:])) for i in range(self.ndim))
    if self.ndim == 2 and not wrap:
        end = min(self.shape) * step   # torch fills min(rows, cols) elements
    else:
        end = int(self.size) if self.ndim == 2 else self.shape[0] * step
    hit = np.zeros(int(self.size), dtype=bool)
    hit[0:end:step] = True
    mask = _OPS["asarray"](hit.reshape(self.shape), device=self.device)
    dispatch.check_writable(self._buf, "fill_diagonal_ (in place)")
    return _write(self, masked_fill(_old(self), mask, fill_value))


def unfold(self: Array, dimension: int, size: int, step: int) -> Array:
    """Every window of ``size`` elements along ``dimension``, ``step`` apart, on a new last
    axis (torch's Tensor.unfold; a copy here, gathered with gp.take)."""
    d = _dim(self, dimension, "unfold")
    n = self.shape[d] if self.ndim else 1
    if size < 0 or size > n:
        raise ValueError(f"Array.unfold: size {size} must be in [0, {n}], the size of "
                         f"dimension {d}")
    if step <= 0:
        raise ValueError(f"Array.unfold: step must be positive, got {step}")
    x = self if self.ndim else _OPS["reshape"](self, (1,))
    count = (n - size) // step + 1
    at = np.arange(count)[:, None] * step + np.arange(size)[None, :]
    idx = _OPS["asarray"](at.reshape(-1).astype(np.int64), device=self.device)
    out = _OPS["take"](x, idx, axis=d)
    out = _OPS["reshape"](out, x.shape[:d] + (count, size) + x.shape[d + 1:])
    out = _OPS["moveaxis"](out, d + 1, -1)
    return out if self.ndim else _OPS["reshape"](out, (size,))   # torch: 0-d gives (size,)


def repeat_interleave(self: Array, repeats, dim: int | None = None, *,
                      output_size: int | None = None) -> Array:
    """Each element (each slice along ``dim``; of the flattened array when None) repeated
    ``repeats`` times (an int, or an integer array of one count per slice): gp.repeat."""
    if isinstance(repeats, Array):
        if repeats.dtype.kind not in "iu" or repeats.ndim > 1:
            raise TypeError(f"Array.repeat_interleave: repeats must be an int or a 0-D/1-D "
                            f"integer array, got {repeats.dtype.name} {repeats.ndim}-D")
        if repeats.ndim == 0:
            repeats = int(repeats.item())
    elif isinstance(repeats, bool) or not hasattr(repeats, "__index__"):
        raise TypeError(f"Array.repeat_interleave: repeats must be an int or an integer "
                        f"array, got {type(repeats).__name__}")
    x = _OPS["reshape"](self, (-1,)) if dim is None else self
    d = 0 if dim is None else _dim(self, dim, "repeat_interleave")
    out = _OPS["repeat"](x, repeats, axis=d)
    if output_size is not None and out.shape[d] != output_size:
        raise ValueError(f"Array.repeat_interleave: output_size={output_size} but the "
                         f"repeats give {out.shape[d]}")
    return out


def tensor_split(self: Array, indices_or_sections, dim: int = 0) -> tuple:
    """Views along ``dim``: ``n`` pieces as equal as can be (the first ones one longer), or
    split before each of the given indices (clamped as slices are)."""
    d = _dim(self, dim, "tensor_split")
    n = self.shape[d]
    ios = indices_or_sections
    if isinstance(ios, Array):
        if ios.dtype.kind not in "iu" or ios.ndim > 1:
            raise TypeError("Array.tensor_split: indices_or_sections must be an int, a "
                            "sequence of ints or a 0-D/1-D integer array")
        ios = int(ios.item()) if ios.ndim == 0 else [int(i) for i in ios.tolist()]
    if isinstance(ios, (list, tuple)):
        cuts = [max(min(i + n if i < 0 else i, n), 0) for i in _sizes("tensor_split", (ios,))]
        bounds = [0] + cuts + [n]
        return tuple(self[(slice(None),) * d + (slice(a, max(a, b)),)]
                     for a, b in zip(bounds[:-1], bounds[1:]))
    k = int(ios)
    if k <= 0:
        raise ValueError(f"Array.tensor_split: sections must be positive, got {k}")
    return _pieces(self, d, [n // k + (1 if i < n % k else 0) for i in range(k)])


def index_copy(self: Array, dim: int, index: Array, source: Array) -> Array:
    """A copy of self with ``source[..., i, ...]`` written at ``index[i]`` along ``dim``."""
    d, index = _index_source("index_copy", self, dim, index, source)
    out = self.copy()
    out[(slice(None),) * d + (index,)] = source
    return out


def index_put(self: Array, indices, values, accumulate: bool = False) -> Array:
    """A copy of self with ``values`` at ``self[indices]`` (``indices``: a tuple of integer or
    bool arrays); ``accumulate`` adds them instead, repeated positions adding up."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"Array.index_put: indices must be a tuple of arrays, got "
                        f"{type(indices).__name__}")
    key = tuple(indices)
    if not accumulate:
        out = self.copy()
        out[key] = values
        return out
    # accumulate: each selected element's flat position, its values added there
    pos = _OPS["reshape"](_OPS["arange"](int(self.size), dtype=_dt.int64, device=self.device),
                          self.shape)[key]
    vals = _OPS["broadcast_to"](_OPS["asarray"](values, dtype=self.dtype, device=self.device)
                                if not isinstance(values, Array) else
                                _OPS["astype"](values, self.dtype), pos.shape)
    part = _segments.scatter_add_rows(int(self.size), _OPS["reshape"](pos, (-1,)),
                                      _OPS["reshape"](vals, (-1,)))
    return _OPS["add"](self, _OPS["reshape"](part, self.shape))


def masked_scatter(self: Array, mask: Array, source: Array) -> Array:
    """self with its elements where ``mask`` (broadcast) is true replaced, in row-major order,
    by the first elements of ``source``."""
    _check_mask("masked_scatter", mask)
    m = _OPS["broadcast_to"](mask, self.shape)
    flat = _OPS["reshape"](m, (-1,))
    count = int(_OPS["sum"](flat))
    src = _OPS["reshape"](source, (-1,))
    if src.shape[0] < count:
        raise ValueError(f"Array.masked_scatter: source has {src.shape[0]} elements, the "
                         f"mask selects {count}")
    at = _OPS["cumulative_sum"](_OPS["astype"](flat, _dt.int64), axis=0) - 1
    taken = _OPS["take"](src, _OPS["where"](flat, at, 0), axis=0)
    out = _OPS["where"](m, _OPS["reshape"](taken, self.shape), self)
    return out if out.dtype is self.dtype else _OPS["astype"](out, self.dtype)


for _fn in (scatter_reduce, select, clamp_min, clamp_max, ndimension, nelement, argwhere, diff,
            cummax, cummin, logcumsumexp, cumprod, addmv, addr, addbmm, diag_embed, diagonal,
            fill_diagonal_, unfold,
            repeat_interleave, tensor_split, index_copy, index_put, masked_scatter):
    setattr(Array, _fn.__name__, _fn)
for _name in ("clamp_min", "clamp_max", "addmm", "addmv", "addr", "addbmm", "baddbmm", "tril",
              "triu", "index_copy", "index_put", "masked_scatter", "cumprod"):
    _inplace_of(_name)


def _data_get(self: Array) -> Array:
    """torch's ``x.data``: the values without the graph, sharing memory (``x.detach()``)."""
    return self.detach()


def _data_set(self: Array, value) -> None:
    """``x.data = y`` writes y's values into x, outside autograd (torch swaps the storage;
    here the shape and dtype stay: y is cast, and another shape is a ValueError)."""
    shape = value.shape if hasattr(value, "shape") else np.shape(value)
    if tuple(shape) != self.shape:
        raise ValueError(f"Array.data: cannot assign values of shape {tuple(shape)} to an array "
                         f"of shape {self.shape} (grilly writes in place; the shape must match)")
    if isinstance(value, Array):   # torch would take value's dtype too; the storage stays here
        value = _OPS["astype"](value.detach(), self.dtype)
    copy_(self.detach(), value)


Array.data = property(_data_get, _data_set, doc="torch's x.data: x.detach(); assignable.")


# ---- torch.special's functions as methods (grilly.special, reached through the namespace) ------
def _special_method(name: str, attr: str, doc: str) -> None:
    def f(self: Array, *args, **kw) -> Array:
        return getattr(_ns().special, attr)(self, *args, **kw)
    f.__doc__ = doc
    _method(name, f)


for _name, _attr, _doc in (
        ("erf", "erf", "The error function (grilly.special.erf)."),
        ("erfc", "erfc", "1 - erf(x) (grilly.special.erfc)."),
        ("erfinv", "erfinv", "The inverse error function (grilly.special.erfinv)."),
        ("lgamma", "gammaln", "log |Gamma(x)| (grilly.special.gammaln)."),
        ("digamma", "digamma", "d/dx log Gamma(x) (grilly.special.digamma)."),
        ("logit", "logit", "log(x / (1 - x)), optionally clamped by eps (grilly.special.logit)."),
        ("xlogy", "xlogy", "x * log(other), 0 where x == 0 (grilly.special.xlogy)."),
        ("mvlgamma", "mvlgamma", "The log multivariate gamma of dimension p (torch.mvlgamma)."),
        ("i0", "i0", "The modified Bessel function I0 (grilly.special.i0)."),
        ("igamma", "gammainc", "The regularized lower incomplete gamma P(self, other) "
                               "(grilly.special.gammainc)."),
        ("igammac", "gammaincc", "The regularized upper incomplete gamma Q(self, other) "
                                 "(grilly.special.gammaincc).")):
    _special_method(_name, _attr, _doc)


def polygamma(self: Array, n: int) -> Array:
    """The n-th derivative of digamma at self (torch's ``x.polygamma(n)``)."""
    return _ns().special.polygamma(n, self)


_method("polygamma", polygamma)
for _name in ("erf", "erfc", "erfinv", "lgamma", "digamma", "logit", "xlogy", "mvlgamma",
              "polygamma", "i0", "igamma", "igammac"):
    _inplace_of(_name)
