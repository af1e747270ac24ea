"""The grilly Array: a backend buffer plus dtype and device, and every method it has.

Methods that compute (operators, indexing, ``T``, ``to_device``) call the namespace functions
through ``dispatch.OPS``, so autograd records them through its dispatch hook like any call;
autograd's state (``requires_grad``, ``grad``, the tape node, a leaf's gradient hooks,
``retains_grad``) lives in slots here."""
from __future__ import annotations

import re

from ..backends import registry
from . import dispatch
from . import dtypes as _dt
from .dtypes import DType

_OPS = dispatch.OPS
_TORCH_KEYS = dispatch.TORCH_KEYS
_SCALARS = (bool, int, float, complex)


def _foreign(name: str, other, scalars: bool = True):
    """A non-grilly operand: a NumPy scalar as the Python scalar it holds (np.int64(2) combines
    as 2 does), or None after a TypeError for a NumPy array (its data is on the host: no
    implicit copy, and no silent NumPy computation on this array's data either); None
    (NotImplemented) for anything else."""
    if type(other).__module__ != "numpy":
        return None
    if getattr(other, "shape", None) == () and scalars:
        v = other.item()
        if isinstance(v, _SCALARS):
            return v
    raise TypeError(f"{name}: cannot combine a grilly Array with a {type(other).__name__} "
                    "(host data: grilly copies nothing implicitly); convert it with "
                    "grilly.asarray(a, device=x.device)")


def _arith(name: str, scalars: bool = True):
    """The operator, reflected operator and augmented assignment for namespace function ``name``."""
    # the operand types are looked up at call time: Array does not exist yet when this runs
    def op(self, other):
        # an Array operand first: the common case, cheaper than the isinstance on a tuple
        if type(other) is Array or isinstance(other, _OPERANDS if scalars else Array):
            return _OPS[name](self, other)
        v = _foreign(name, other, scalars)
        return NotImplemented if v is None else _OPS[name](self, v)

    def rop(self, other):
        if isinstance(other, _OPERANDS if scalars else Array):
            return _OPS[name](other, self)
        v = _foreign(name, other, scalars)
        return NotImplemented if v is None else _OPS[name](v, self)

    def iop(self, other):
        if not isinstance(other, _OPERANDS if scalars else Array):
            other = _foreign(name, other, scalars)
            if other is None:
                return NotImplemented
        return dispatch.inplace(self, name, other)
    return op, rop, iop


def _compare(name: str):
    def op(self, other):
        if isinstance(other, _OPERANDS):
            return _OPS[name](self, other)
        v = _foreign(name, other)
        return NotImplemented if v is None else _OPS[name](self, v)
    return op


def _unary(name: str):
    def op(self):
        return _OPS[name](self)
    return op


# grilly.jit's tracer sees every Array made while it records (None otherwise)
_new_hook = None


class Array:
    """An n-dimensional array on a grilly device (the Array API array object)."""

    # _version: None, or the version cell [n] this array shares with its views (bumped by every
    # write in place; autograd compares it with what a node saved); _view: None, or how this
    # view was made (view_of)
    __slots__ = ("_buf", "_dtype", "_device", "requires_grad", "_grad", "_node", "_hooks",
                 "retains_grad", "_version", "_view", "__weakref__")
    __array_priority__ = 100  # numpy defers binary operators to us

    def __init__(self, *a, **k):
        raise TypeError("grilly.Array is not created directly; use grilly.asarray or a creation function")

    @classmethod
    def _new(cls, buf, dtype: DType, device) -> "Array":
        self = object.__new__(cls)
        self._buf = buf
        self._dtype = dtype
        self._device = device
        self.requires_grad = False
        self._grad = None
        self._node = None
        self._hooks = None
        self.retains_grad = False
        self._version = self._view = None
        if _new_hook is not None:
            _new_hook(self)
        return self

    # ---- attributes -------------------------------------------------------------------
    @property
    def grad(self) -> "Array | None":
        """The gradient accumulated by backward (None until one is)."""
        return self._grad

    @grad.setter
    def grad(self, value: "Array | None") -> None:
        # checked as torch's: a gradient of another shape, dtype or device would fail (or
        # silently broadcast) only later, in the optimizer's step or the next accumulation
        if value is not None and (type(value) is not Array or value._dtype is not self._dtype
                                  or tuple(value._buf.shape) != tuple(self._buf.shape)
                                  or value._device is not self._device):
            # (one test in the common case: backward assigns every leaf's gradient through here)
            if not isinstance(value, Array):
                raise TypeError(f"assigned grad expected to be a grilly Array or None but got "
                                f"grad of type {type(value).__name__}")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError(f"attempting to assign a gradient of shape {value.shape} to "
                                   f"an array of shape {self.shape}: they must be the same")
            if value._dtype is not self._dtype:
                raise RuntimeError(f"attempting to assign a gradient of dtype {value._dtype} to "
                                   f"an array of dtype {self._dtype}: they must be the same")
            if value._device != self._device:
                raise RuntimeError(f"attempting to assign a gradient on device {value._device} "
                                   f"to an array on device {self._device}: they must be the "
                                   f"same")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def shape(self) -> tuple:
        return tuple(self._buf.shape)

    @property
    def ndim(self) -> int:
        return len(self._buf.shape)

    @property
    def size(self) -> "_Size":
        shape = self._buf.shape
        out = _SIZES.get(shape)
        if out is None:   # one (immutable) _Size per shape: building one costs ~0.7 us
            n = 1
            for s in shape:
                n *= s
            out = int.__new__(_Size, n)
            out.shape = tuple(shape)
            if len(_SIZES) < 4096:
                _SIZES[shape] = out
        return out

    @property
    def T(self) -> "Array":
        if self.ndim != 2:
            raise ValueError(f"Array.T: needs a 2-D array, got {self.ndim}-D; use .mT or permute_dims")
        return _OPS["permute_dims"](self, (1, 0))

    @property
    def mT(self) -> "Array":
        return _OPS["matrix_transpose"](self)

    # NumPy's (and torch's) attributes beyond the standard's
    @property
    def real(self) -> "Array":
        """The real part: the array itself for a real dtype (as NumPy's and torch's .real)."""
        return _OPS["real"](self) if self._dtype.kind == "c" else self

    @property
    def imag(self) -> "Array":
        """The imaginary part (zeros of the array's dtype for a real one, as NumPy's .imag)."""
        return _OPS["imag"](self) if self._dtype.kind == "c" else _OPS["zeros_like"](self)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the elements (size x itemsize), as NumPy's."""
        return int(self.size) * self._dtype.itemsize

    @property
    def strides(self) -> tuple:
        """Bytes between neighbours along each axis, as NumPy's (torch's stride() counts elements)."""
        return tuple(s * self._dtype.itemsize for s in self.stride())

    def fill(self, value) -> None:
        """Set every element to ``value`` in place (NumPy's ndarray.fill; returns None)."""
        self.fill_(value)

    def __divmod__(self, other) -> tuple:
        return self // other, self % other

    def __rdivmod__(self, other) -> tuple:
        return other // self, other % self

    def __round__(self, ndigits: int | None = None) -> "Array":
        """``round(x)``, ``round(x, n)``: rounded half to even, an Array as NumPy's and torch's."""
        return self.round(0 if ndigits is None else ndigits)

    # ---- operators (each one namespace function) ----------------------------------------
    __add__, __radd__, __iadd__ = _arith("add")
    __sub__, __rsub__, __isub__ = _arith("subtract")
    __mul__, __rmul__, __imul__ = _arith("multiply")
    __truediv__, __rtruediv__, __itruediv__ = _arith("divide")
    __floordiv__, __rfloordiv__, __ifloordiv__ = _arith("floor_divide")
    __mod__, __rmod__, __imod__ = _arith("remainder")
    __pow__, __rpow__, __ipow__ = _arith("pow")
    __and__, __rand__, __iand__ = _arith("bitwise_and")
    __or__, __ror__, __ior__ = _arith("bitwise_or")
    __xor__, __rxor__, __ixor__ = _arith("bitwise_xor")
    __lshift__, __rlshift__, __ilshift__ = _arith("bitwise_left_shift")
    __rshift__, __rrshift__, __irshift__ = _arith("bitwise_right_shift")
    __matmul__, __rmatmul__, __imatmul__ = _arith("matmul", scalars=False)
    __lt__, __le__ = _compare("less"), _compare("less_equal")
    __gt__, __ge__ = _compare("greater"), _compare("greater_equal")
    __eq__, __ne__ = _compare("equal"), _compare("not_equal")
    __neg__, __pos__ = _unary("negative"), _unary("positive")
    __abs__, __invert__ = _unary("abs"), _unary("bitwise_invert")

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self._buf.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for i in range(self._buf.shape[0]):
            yield self[i]

    def __contains__(self, value) -> bool:
        """``value in x``: whether some element equals ``value`` (NumPy's ``(x == value).any()``;
        without it Python compared ``value`` with each row and failed on ``bool(row)``)."""
        eq = self.__eq__(value)
        if eq is NotImplemented:
            raise TypeError(f"__contains__: cannot compare an array with {type(value).__name__}")
        return bool(eq.any())

    __hash__ = None

    def __array_namespace__(self, *, api_version: str | None = None):
        if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12",
                                                           "2024.12", "2025.12"):
            raise ValueError(f"__array_namespace__: unsupported api_version {api_version!r}")
        return dispatch.namespace()

    # ---- host conversion (sync points) --------------------------------------------------
    def _host(self):
        """This array's data as a numpy array on the host (a sync point)."""
        return self._device.kernels["to_host"](self._buf)

    def __array__(self, dtype=None, copy=None):
        h = self._host()
        if dtype is not None:
            h = h.astype(dtype, copy=False)
        if copy:
            h = h.copy()
        return h

    def _scalar(self, op: str):
        if self.size != 1:
            raise TypeError(f"{op}: only a 0-d (or one-element) array converts to a Python scalar,"
                            f" got shape {self.shape}")
        return self._host().reshape(()).item()

    def __bool__(self) -> bool:
        return bool(self._scalar("bool()"))

    def __int__(self) -> int:
        if _dt.is_complex(self._dtype):
            raise TypeError("int(): cannot convert a complex array to int")
        v = self._scalar("int()")
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            raise (ValueError if v != v else OverflowError)(f"int(): cannot convert {v} to int")
        return int(v)

    def __float__(self) -> float:
        if _dt.is_complex(self._dtype):
            raise TypeError("float(): cannot convert a complex array to float")
        return float(self._scalar("float()"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex()"))

    def __index__(self) -> int:
        if not _dt.is_int(self._dtype):
            raise TypeError(f"__index__: needs an integer array, got {self._dtype.name}")
        return int(self._scalar("__index__"))

    def tolist(self):
        """The data as nested Python lists (a sync point)."""
        return self._host().tolist()

    def item(self):
        """The value of a one-element array as a Python scalar."""
        return self._scalar("item()")

    def __repr__(self) -> str:
        h = self._host()
        body = repr(h)
        body = body[body.index("(") + 1: body.rindex(")")] if body.startswith("array(") else body
        # numpy names the dtype last, after ", " or, where the line is full, ",\n      "
        body = re.split(r",\s*dtype=", body)[0]
        dev = "" if self._device.name == "cpu" else f", device={self._device.name!r}"
        return f"Array({body}, dtype={self._dtype.name}{dev})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        """A format spec formats a 0-d array's value (as NumPy does); "" is str()."""
        if not spec:
            return str(self)
        if self.ndim != 0:
            raise TypeError(f"format: a format spec needs a 0-d array, got shape {self.shape}")
        return format(self._scalar("format"), spec)

    # ---- NumPy's array methods (each a namespace function; torch's dim/keepdim where they
    # mean the same; README "Array methods") ----------------------------------------------
    def sum(self, axis=None, dtype=None, *, keepdims: bool = False, **kw) -> "Array":
        """Sum over ``axis`` (all when None): gp.sum."""
        extra = _np_kw(kw, _IW)
        axis, keepdims = _axis_kw("sum", axis, keepdims, kw)
        return _OPS["sum"](self, axis=axis, dtype=dtype, keepdims=keepdims, **extra)

    def prod(self, axis=None, dtype=None, *, keepdims: bool = False, **kw) -> "Array":
        """Product over ``axis`` (all when None): gp.prod."""
        extra = _np_kw(kw, _IW)
        axis, keepdims = _axis_kw("prod", axis, keepdims, kw)
        return _OPS["prod"](self, axis=axis, dtype=dtype, keepdims=keepdims, **extra)

    def mean(self, axis=None, dtype=None, *, keepdims: bool = False, **kw) -> "Array":
        """Mean over ``axis`` (all when None; in ``dtype`` where given): gp.mean."""
        extra = _np_kw(kw, _W)
        axis, keepdims = _axis_kw("mean", axis, keepdims, kw)
        return _OPS["mean"](_in_dtype(self, None), axis=axis, keepdims=keepdims,
                            **_dtype_kw(extra, dtype))

    def any(self, axis=None, *, keepdims: bool = False, **kw) -> "Array":
        """Whether any element along ``axis`` is true: gp.any."""
        extra = _np_kw(kw, _W)
        axis, keepdims = _axis_kw("any", axis, keepdims, kw)
        return _OPS["any"](self, axis=axis, keepdims=keepdims, **extra)

    def all(self, axis=None, *, keepdims: bool = False, **kw) -> "Array":
        """Whether every element along ``axis`` is true: gp.all."""
        extra = _np_kw(kw, _W)
        axis, keepdims = _axis_kw("all", axis, keepdims, kw)
        return _OPS["all"](self, axis=axis, keepdims=keepdims, **extra)

    def argmax(self, axis=None, *, keepdims: bool = False, **kw) -> "Array":
        """Index of the largest element along ``axis`` (of the flattened array when None)."""
        axis, keepdims = _axis_kw("argmax", axis, keepdims, kw)
        return _OPS["argmax"](self, axis=axis, keepdims=keepdims)

    def argmin(self, axis=None, *, keepdims: bool = False, **kw) -> "Array":
        """Index of the smallest element along ``axis`` (of the flattened array when None)."""
        axis, keepdims = _axis_kw("argmin", axis, keepdims, kw)
        return _OPS["argmin"](self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, *, keepdims: bool = False, **kw):
        """Largest element along ``axis`` (NumPy's: the values); torch's ``dim=`` gives
        torch's (values, indices): gp.max."""
        if _TORCH_KEYS.intersection(kw):
            return _torch_form("max", self, axis, keepdims, kw)
        if isinstance(axis, Array):   # torch's elementwise x.max(other)
            return _OPS["maximum"](self, axis)
        extra = _np_kw(kw, _IW)
        axis, keepdims = _axis_kw("max", axis, keepdims, kw)
        return _OPS["max"](self, axis=axis, keepdims=keepdims, **extra)

    def min(self, axis=None, *, keepdims: bool = False, **kw):
        """Smallest element along ``axis`` (NumPy's: the values); torch's ``dim=`` gives
        torch's (values, indices): gp.min."""
        if _TORCH_KEYS.intersection(kw):
            return _torch_form("min", self, axis, keepdims, kw)
        if isinstance(axis, Array):   # torch's elementwise x.min(other)
            return _OPS["minimum"](self, axis)
        extra = _np_kw(kw, _IW)
        axis, keepdims = _axis_kw("min", axis, keepdims, kw)
        return _OPS["min"](self, axis=axis, keepdims=keepdims, **extra)

    def std(self, axis=None, dtype=None, *, ddof: float = 0, keepdims: bool = False,
            **kw) -> "Array":
        """Standard deviation over ``axis`` with NumPy's ``ddof`` (0 by default); with torch's
        ``dim=``/``unbiased=``/``correction=``, torch's (unbiased by default): gp.std."""
        if _TORCH_KEYS.intersection(kw) or "correction" in kw:
            return _torch_form("std", _in_dtype(self, dtype), axis, keepdims, kw)
        extra = _np_kw(kw, _W)
        axis, keepdims = _axis_kw("std", axis, keepdims, kw)
        return _OPS["std"](_in_dtype(self, None), axis=axis, correction=ddof,
                           keepdims=keepdims, **_dtype_kw(extra, dtype))

    def var(self, axis=None, dtype=None, *, ddof: float = 0, keepdims: bool = False,
            **kw) -> "Array":
        """Variance over ``axis`` with NumPy's ``ddof`` (0 by default); with torch's
        ``dim=``/``unbiased=``/``correction=``, torch's (unbiased by default): gp.var."""
        if _TORCH_KEYS.intersection(kw) or "correction" in kw:
            return _torch_form("var", _in_dtype(self, dtype), axis, keepdims, kw)
        extra = _np_kw(kw, _W)
        axis, keepdims = _axis_kw("var", axis, keepdims, kw)
        return _OPS["var"](_in_dtype(self, None), axis=axis, correction=ddof,
                           keepdims=keepdims, **_dtype_kw(extra, dtype))

    def cumsum(self, axis=None, dtype=None, **kw) -> "Array":
        """Running sum along ``axis`` (of the flattened array when None): gp.cumulative_sum."""
        axis, _ = _axis_kw("cumsum", axis, False, kw)
        x = self if axis is not None else _OPS["reshape"](self, (-1,))
        return _OPS["cumulative_sum"](x, axis=0 if axis is None else axis, dtype=dtype)

    def astype(self, dtype, *, copy: bool = True) -> "Array":
        """This array cast to ``dtype``: gp.astype."""
        return _OPS["astype"](self, dtype, copy=copy)

    def reshape(self, *shape, **kw) -> "Array":
        """This array in ``shape`` (``x.reshape(2, 3)`` or ``x.reshape((2, 3))``): gp.reshape."""
        order = kw.pop("order", "C")
        if kw or order != "C":
            raise TypeError("Array.reshape: takes a shape (and order='C' only), got "
                            + (f"order={order!r}" if order != "C" else f"{sorted(kw)}"))
        return _OPS["reshape"](self, _shape_args("reshape", shape))

    def flatten(self, start_dim=0, end_dim: int = -1, *, order: str = "C") -> "Array":
        """A one-dimensional copy (NumPy's flatten); torch's ``flatten(start_dim, end_dim)``
        (integers, which NumPy's string ``order`` never is) joins only those axes."""
        if isinstance(start_dim, str):   # NumPy's flatten(order) passed positionally
            start_dim, order = 0, start_dim
        if order != "C":
            raise TypeError(f"Array.flatten: order={order!r} is not supported (only 'C')")
        if (start_dim, end_dim) == (0, -1):
            return _OPS["reshape"](self, (-1,), copy=True)
        nd = max(self.ndim, 1)
        a, b = (d + nd if d < 0 else d for d in (start_dim, end_dim))
        if not (0 <= a < nd and 0 <= b < nd) or a > b:
            raise IndexError(f"Array.flatten: start_dim {start_dim} and end_dim {end_dim} must "
                             f"be dimensions of the {self.ndim}-D array, start <= end")
        s = self.shape
        return _OPS["reshape"](self, s[:a] + (-1,) + s[b + 1:] if s else (1,))

    def ravel(self) -> "Array":
        """This array as one dimension (a view where it can be): gp.reshape(x, (-1,))."""
        return _OPS["reshape"](self, (-1,))

    def transpose(self, *axes) -> "Array":
        """The axes reversed, or permuted as ``axes`` (NumPy's, not torch's two-axis swap; see
        swapaxes): gp.permute_dims."""
        if not axes or axes == (None,):   # (numpy.transpose(x) passes None)
            axes = tuple(reversed(range(self.ndim)))
        else:
            torch_form = len(axes) == 2 and not isinstance(axes[0], (tuple, list))
            axes = _shape_args("transpose", axes)
            if torch_form and self.ndim != 2:
                # NumPy's permutation names every axis, so two axes of a 1-D or 3-D+ array can
                # only be torch's swap (k.transpose(-2, -1) in attention code)
                return self.swapaxes(*axes)
            # of a 2-D array, two separate axes read as torch's swap differ from NumPy's
            # permutation unless they are the swap (1, 0): refuse rather than guess (README)
            if torch_form and axes[0] % 2 == 0:
                raise TypeError(f"Array.transpose{axes}: NumPy's transpose permutes all "
                                f"{self.ndim} axes, torch's transpose(dim0, dim1) swaps two; "
                                "use swapaxes(dim0, dim1) for torch's or permute(...) / "
                                "transpose((...)) with every axis for NumPy's")
        if len(axes) != self.ndim:
            raise ValueError(f"Array.transpose: axes {axes} must name each of the {self.ndim} "
                             "axes once (to exchange two axes, use swapaxes)")
        return _OPS["permute_dims"](self, axes)

    def swapaxes(self, axis1: int, axis2: int) -> "Array":
        """Axes ``axis1`` and ``axis2`` exchanged (torch's transpose(d0, d1))."""
        axes = list(range(self.ndim))
        for a in (axis1, axis2):
            if not -self.ndim <= a < self.ndim:
                raise IndexError(f"Array.swapaxes: axis {a} is out of bounds for an array of "
                                 f"dimension {self.ndim}")
        axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
        return _OPS["permute_dims"](self, tuple(axes))

    def squeeze(self, axis=None, *, dim=None) -> "Array":
        """The axes of length one removed (``axis``: only those, each of which must have
        length one, as NumPy's; torch's ``dim=``: those of them that have length one)."""
        if dim is not None:
            if axis is not None:
                raise TypeError("Array.squeeze: got both axis and dim")
            dims = dim if isinstance(dim, (tuple, list)) else (dim,)
            nd = max(self.ndim, 1)
            if any(not -nd <= int(d) < nd for d in dims):
                raise IndexError(f"Array.squeeze: dim {dim} out of range for {self.ndim} "
                                 f"dimensions")
            axis = tuple(int(d) % nd for d in dims if self.ndim and self.shape[int(d)] == 1)
        if axis is None:
            axis = tuple(i for i, n in enumerate(self.shape) if n == 1)
        return _OPS["squeeze"](self, axis=axis)

    def clip(self, min=None, max=None, **kw) -> "Array":   # noqa: A002 (NumPy's names)
        """Each element limited to [min, max]: gp.clip."""
        _axis_kw("clip", None, False, kw)   # (numpy.clip passes out=None)
        return _OPS["clip"](self, min, max)

    def copy(self) -> "Array":
        """A copy of the data on the same device (differentiable, as torch's clone)."""
        if self.requires_grad:   # positive: a fresh buffer, and a node whose gradient passes
            return _OPS["positive"](self)
        return _OPS["asarray"](self, copy=True)

    def numpy(self):
        """The data as a NumPy array on the host (torch's; a sync point): numpy.asarray(x)."""
        return self.__array__()

    # ---- devices ------------------------------------------------------------------------
    def to_device(self, device, /, *, stream=None) -> "Array":
        """A copy of this array on ``device`` (the same array when it is already there)."""
        return _OPS["to_device"](self, device, stream=stream)

    def __deepcopy__(self, memo) -> "Array":
        """A copy of the data on the same device (a Vulkan buffer cannot be pickled): detached,
        requires_grad and a deep copy of grad kept; the device and dtype objects are shared. Each
        Array is copied once per deepcopy (memo); views come out as independent arrays."""
        alias = Array._new(self._buf, self._dtype, self._device)   # no grad: nothing recorded
        out = _OPS["asarray"](alias, copy=True)
        memo[id(self)] = out
        out.requires_grad = self.requires_grad
        if self.grad is not None:
            import copy
            out.grad = copy.deepcopy(self.grad, memo)
        h = dispatch.hooks.deepcopy
        if h is not None:   # grilly.nn: the copy of a Parameter is a Parameter
            h(self, out)
        return out

    def __copy__(self) -> "Array":
        """copy.copy: a copy of the data, as NumPy's (never an alias of the buffer)."""
        return self.__deepcopy__({})

    def __reduce__(self):
        """pickle: the data through the host, rebuilt on a device of the same name."""
        return _unpickle, (self._host().copy(), self._dtype.name, self._device.name,
                           self.requires_grad)

    # ---- DLPack -------------------------------------------------------------------------
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return _OPS["__dlpack__"](self, stream=stream, max_version=max_version,
                             dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return _OPS["__dlpack_device__"](self)

    # ---- indexing (indexing.py) ---------------------------------------------------------
    def __getitem__(self, key):
        return _OPS["__getitem__"](self, key)

    def __setitem__(self, key, value):
        h = dispatch.hooks.setitem
        if h is not None and (self.requires_grad or getattr(value, "requires_grad", False)
                              or (self._view is not None and self._view[0].requires_grad)):
            h(self, key, value)
        else:
            _OPS["__setitem__"](self, key, value)

    # ---- autograd (grilly.autograd provides the graph; these read and set the state) ----
    def backward(self, gradient=None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs=None) -> None:
        """Accumulate the gradient of this array into the ``.grad`` of the graph's leaves (of
        ``inputs`` only, where given)."""
        _OPS["autograd.backward"]([self], None if gradient is None else [gradient],
                                  retain_graph, create_graph, inputs)

    def detach(self) -> "Array":
        """This array's data without its graph (shares memory; does not require grad)."""
        return _OPS["autograd.detach"](self)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when the gradient with respect to this array is computed; a
        non-None result replaces the gradient. On a leaf it runs before ``.grad`` is added to.
        Returns a handle whose ``remove()`` takes the hook off."""
        return _OPS["autograd.register_hook"](self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(self)`` after backward has accumulated into this leaf's ``.grad``;
        returns a handle whose ``remove()`` takes the hook off."""
        return _OPS["autograd.register_post_accumulate_grad_hook"](self, hook)

    def retain_grad(self) -> None:
        """Keep this non-leaf array's gradient in its ``.grad`` on backward (as a leaf's)."""
        _OPS["autograd.retain_grad"](self)

    def requires_grad_(self, requires_grad: bool = True) -> "Array":
        """Set ``requires_grad`` in place (only floating-point arrays can); returns self."""
        if requires_grad and self._dtype.kind not in "fc":
            raise RuntimeError(f"requires_grad_: only floating-point arrays can require grad, "
                               f"got {self._dtype.name}")
        if not requires_grad and self._node is not None:
            raise RuntimeError("requires_grad_: cannot turn grad off on a non-leaf array; "
                               "use detach()")
        self.requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def grad_fn(self):
        return None if self._node is None else self._node[0]


_OPERANDS = (Array, *_SCALARS)


_SIZES: dict = {}   # shape -> its _Size


class _Size(int):
    """``Array.size``: the number of elements, an int (the Array API's attribute, arithmetic on
    it gives plain ints), also callable as torch's ``size()``: ``x.size()`` is the shape and
    ``x.size(d)`` the length of dimension ``d``."""

    def __call__(self, dim: int | None = None):
        shape = tuple(self.shape)
        if dim is None:
            return shape
        if isinstance(dim, bool) or not hasattr(dim, "__index__"):
            raise TypeError(f"Array.size: dim must be an integer, got {type(dim).__name__}")
        d = dim.__index__()
        if not -len(shape) <= d < max(len(shape), 1) or not shape:
            raise IndexError(f"Array.size: dimension {d} is out of range for an array of "
                             f"{len(shape)} dimensions")
        return shape[d]

    def __reduce__(self):   # pickles (and copies) as the plain int
        return int, (int(self),)


def version_cell(x: Array) -> list:
    """The version cell of ``x`` (made on first need: an array without one is at version 0)."""
    c = x._version
    if c is None:
        c = x._version = [0]
    return c


def bump(x: Array) -> None:
    """Count a write in place into ``x``'s memory (seen by ``x`` and every view sharing it)."""
    c = x._version
    if c is None:
        x._version = [1]
    else:
        c[0] += 1


def view_of(x: Array, buf, op: str, args: tuple = (), kw: dict | None = None) -> Array:
    """A new Array on ``buf``, the view ``op(x, *args, **kw)`` of x's memory: it shares x's
    version cell, and keeps how it was made (``_view``: [x, op, args, kw, the version it was
    made at]) for autograd to rebase x after a write through it, or remake it after a write
    into x."""
    out = Array._new(buf, x._dtype, x._device)
    c = x._version   # (version_cell, inlined: every view comes here)
    if c is None:
        c = x._version = [0]
    out._version = c
    out._view = [x, op, args, kw or {}, c[0]]
    return out


def same_memory(a, b) -> bool:
    """Whether buffers ``a`` and ``b`` view one allocation (a Vulkan buffer's ``alloc``, a
    NumPy array's ``base``; identity for other buffers)."""
    m = getattr(a, "alloc", None)
    if m is not None:
        return m is getattr(b, "alloc", None)
    ra, rb = getattr(a, "base", None), getattr(b, "base", None)
    return (a if ra is None else ra) is (b if rb is None else rb)


def _torch_form(op: str, x: Array, axis, keepdims: bool, kw: dict):
    """torch's meaning of method ``op`` (dispatch.TORCH_FORMS, as the namespace function's)."""
    if kw.pop("out", None) is not None:   # (numpy.max(x) and friends pass out=None)
        raise TypeError(f"Array.{op}: out= is not supported; use the result")
    return dispatch.TORCH_FORMS[op](x, axis, keepdims=keepdims, **kw)


_W, _IW = ("where",), ("initial", "where")


def _np_kw(kw: dict, names: tuple) -> dict:
    """NumPy's reduction keywords (``where``, ``initial``) taken out of a method's ``kw``: the
    namespace function's NumPy form takes them (np.sum(x, where=m) calls x.sum(where=m))."""
    return {n: kw.pop(n) for n in names if n in kw} if kw else {}


def _axis_kw(op: str, axis, keepdims: bool, kw: dict) -> tuple:
    """A method's (axis, keepdims) from NumPy's keywords or torch's dim/keepdim (where torch's
    method means the same)."""
    if kw:
        if kw.pop("out", None) is not None:   # (numpy.sum(x) and friends pass out=None)
            raise TypeError(f"Array.{op}: out= is not supported; use the result")
        dim, keepdim = kw.pop("dim", None), kw.pop("keepdim", None)
        if kw:
            raise TypeError(f"Array.{op}: unexpected keyword argument {next(iter(kw))!r}")
        if dim is not None:
            if axis is not None:
                raise TypeError(f"Array.{op}: got both axis and dim")
            axis = dim
        if keepdim is not None:
            keepdims = keepdim
    return (tuple(axis) if isinstance(axis, list) else axis), bool(keepdims)


def _dtype_kw(extra: dict, dtype) -> dict:
    """``extra`` with NumPy's ``dtype=`` of mean/std/var for the namespace function (which
    gives an integer dtype's result in that dtype; casting x first gave float64)."""
    return extra if dtype is None else {**extra, "dtype": dtype}


def _in_dtype(x: Array, dtype) -> Array:
    """``x`` cast to ``dtype`` (NumPy's dtype= of mean/std/var: the computation's), or x; a bool
    array goes to the default float, as NumPy's methods do (``(pred == y).mean()``)."""
    if dtype is None and x._dtype is _dt.bool:
        dtype = _dt.default_float(x._device)
    return x if dtype is None else _OPS["astype"](x, _dt.as_dtype(dtype, "dtype"))


def _shape_args(op: str, args: tuple) -> tuple:
    """``f(2, 3)`` or ``f((2, 3))`` as the tuple (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for a in args:
        if not isinstance(a, int) and not hasattr(a, "__index__"):
            raise TypeError(f"Array.{op}: expected integers, got {type(a).__name__}")
    return tuple(int(a) for a in args)


def _unpickle(host, dtype: str, device: str, requires_grad: bool) -> Array:
    out = _OPS["asarray"](host, dtype=_dt.as_dtype(dtype, "pickle"), device=device)
    out.requires_grad = requires_grad
    return out


def _to_device(x: Array, device, /, *, stream=None) -> Array:
    """A copy of ``x`` on ``device`` (``x`` itself when it is already there)."""
    if stream is not None:
        raise ValueError("to_device: grilly has no streams; pass stream=None")
    dev = registry.device(device)
    if dev is x._device:
        return x
    return Array._new(dev.kernels["from_host"](x._host(), x._dtype), x._dtype, dev)


dispatch.op("to_device", _to_device)
