"""Shared helpers of the array layer: kernel lookup, argument checks, axes, broadcasting."""
from __future__ import annotations

from ..backends import registry
from . import dtypes as dt
from .array import Array


class AxisError(ValueError, IndexError):
    """An axis argument out of range (a ValueError and an IndexError, as in NumPy)."""


def kernel(device, op: str):
    """The kernel for ``op`` on ``device``, or NotImplementedError naming both."""
    k = device.kernels.get(op)
    if k is None:
        raise NotImplementedError(f"{op}: not available on device {device}; "
                                  f"backend {device.backend.name!r} provides no {op!r} kernel")
    return k


# op -> default composition (grilly/array/composites.py fills it when grilly is imported):
# ``f(device, *kernel_args)`` with Arrays where the kernel takes buffers, returning what the
# kernel returns with Arrays in place of buffers.
COMPOSITES: dict = {}


def composite(device, op: str):
    """The default composition of ``op``, or NotImplementedError naming the op and ``device``."""
    f = COMPOSITES.get(op)
    if f is None:
        raise NotImplementedError(f"{op}: not available on device {device}; "
                                  f"backend {device.backend.name!r} provides no {op!r} kernel "
                                  "and grilly has no composition of it")
    return f


def _bufs(res):
    if isinstance(res, Array):
        return res._buf
    if isinstance(res, tuple):
        return tuple(_bufs(r) for r in res)
    return res


def call(device, op: str, *args):
    """Run ``op`` on ``device``: its kernel when the backend has one (Arrays in ``args`` passed
    as their buffers), else its default composition; buffers come back either way."""
    k = device.kernels.get(op)
    if k is not None:
        return k(*[a._buf if isinstance(a, Array) else a for a in args])
    return _bufs(composite(device, op)(device, *args))


def wrap(buf, dtype, device) -> Array:
    return Array._new(buf, dtype, device)


def sole_owner(x: Array) -> bool:
    """Whether nothing but ``x`` references its memory (the device's optional ``sole_owner``
    kernel; False without one): then ``x``'s buffer may be handed on without a copy."""
    k = x._device.kernels.get("sole_owner")
    return k is not None and k(x._buf)


def check_array(x, op: str, arg: str = "x") -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected a grilly Array for {arg!r}, got {type(x).__name__}")
    return x


def common_device(op: str, *arrays: Array):
    """The one device all ``arrays`` are on; ValueError (no implicit copy) otherwise."""
    dev = arrays[0]._device
    for a in arrays:   # (the first too: no slice to build)
        if a._device is not dev:
            raise ValueError(f"{op}: arrays are on different devices ({dev} and {a._device}); "
                             "move one with to_device() first")
    return dev


def normalize_axis(axis, ndim: int, op: str, arg: str = "axis") -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        try:
            axis = axis.__index__()
        except AttributeError:
            raise TypeError(f"{op}: {arg} must be an int, got {type(axis).__name__}") from None
    if not -ndim <= axis < ndim:
        raise AxisError(f"{op}: {arg}={axis} is out of range for an array of {ndim} dimension(s)")
    return axis % ndim


def normalize_axes(axis, ndim: int, op: str) -> tuple:
    """``axis`` (None, int or tuple) as a sorted tuple of distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        out = tuple(normalize_axis(a, ndim, op) for a in axis)
        if len(set(out)) != len(out):
            raise ValueError(f"{op}: repeated axis in {tuple(axis)}")
        return tuple(sorted(out))
    return (normalize_axis(axis, ndim, op),)


def normalize_shape(shape, op: str) -> tuple:
    """A user's shape argument (an int or a sequence of ints) as a tuple; TypeError/ValueError."""
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(int(s.__index__()) for s in shape)
    except (TypeError, AttributeError):
        raise TypeError(f"{op}: shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"{op}: negative dimension in shape {shape}")
    return shape


def grad_dtype(op: str, x, grad_dtype) -> tuple:
    """(the weight gradients' dtype, whether it differs from x's) for a layer backward's
    ``grad_dtype``: x's dtype (None), or float32 for float16/bfloat16 operands (autocast's
    float32 master weights); TypeError naming ``op`` otherwise."""
    gd = x._dtype if grad_dtype is None else grad_dtype
    wide = gd is not x._dtype
    if wide and (x._dtype.name not in ("float16", "bfloat16")
                 or getattr(gd, "name", None) != "float32"):
        raise TypeError(f"{op}: grad_dtype must be x's dtype, or float32 for float16/bfloat16 "
                        f"operands, got {gd!r} for {x._dtype.name}")
    return gd, wide


def kernel_takes(k, dtype, dtypes) -> bool:
    """Whether kernel ``k`` takes arrays of ``dtype``: one of ``dtypes`` (names: the contract's),
    or float16 / bfloat16 where the kernel declares ``takes_float16`` / ``takes_bfloat16``
    (autocast's layers on the device)."""
    name = dtype.name
    return name in dtypes or name in _TAKES and getattr(k, _TAKES[name], False)


_TAKES = {"float16": "takes_float16", "bfloat16": "takes_bfloat16"}


def check_nbytes(shape, dtype, op: str) -> None:
    """MemoryError naming ``op`` for an array of ``shape`` and ``dtype`` larger than any address
    space (the backends would raise NumPy's ValueError, or overflow)."""
    n = dtype.itemsize
    for s in shape:
        n *= s
    if n > _MAX_NBYTES:
        raise MemoryError(f"{op}: an array of shape {tuple(shape)} and dtype {dtype.name} "
                          f"({n} bytes) is larger than any device can hold")


_MAX_NBYTES = 2 ** 63 - 1


def broadcast_shapes(*shapes, op: str = "broadcast_shapes") -> tuple:
    """The shape that ``shapes`` broadcast to, or ValueError."""
    if not shapes:
        return ()
    n = max(len(s) for s in shapes)
    out = [1] * n
    for s in shapes:
        off = n - len(s)
        for i, d in enumerate(s):
            o = out[off + i]
            if d != o:
                if o == 1:
                    out[off + i] = d
                elif d != 1:
                    raise ValueError(f"{op}: shapes {' and '.join(str(tuple(x)) for x in shapes)} "
                                     "cannot be broadcast together")
    return tuple(out)


def default_device():
    return registry.default_device()


def resolve_device(device, op: str = "device"):
    if device is None:
        return registry.default_device()
    return registry.device(device)


def check_device_dtype(device, dtype, op: str) -> None:
    """TypeError when ``device`` cannot hold ``dtype``."""
    if not device.backend.supports_dtype(device, dtype):
        raise TypeError(f"{op}: device {device} does not support dtype {dtype.name}")


def full_buf(device, shape, value, dtype):
    check_device_dtype(device, dtype, "full")
    return kernel(device, "full")(tuple(shape), value, dtype)


def astype_buf(x: Array, dtype) -> object:
    """``x``'s buffer cast to ``dtype`` (the same buffer when it already is)."""
    if x._dtype is dtype:
        return x._buf
    check_device_dtype(x._device, dtype, "astype")
    return x._device.kernels["astype"](x._buf, dtype)


def int_range(dtype) -> tuple[int, int]:
    """(lowest, highest) value of an integer ``dtype``, from its width (no iinfo object per
    scalar operand)."""
    bits = 8 * dtype.itemsize
    return (-(1 << bits - 1), (1 << bits - 1) - 1) if dtype.kind == "i" else (0, (1 << bits) - 1)


def check_int_fits(x, dtype, op: str) -> None:
    """OverflowError naming ``op`` when the Python int ``x`` is out of an integer ``dtype``'s
    range (a kernel would wrap it, or raise NumPy's own error)."""
    if type(x) is int and dtype.kind in "iu":
        lo, hi = int_range(dtype)
        if not lo <= x <= hi:
            raise OverflowError(f"{op}: Python int {x} does not fit in {dtype.name}")


def as_compute_array(x, dtype, device, op: str) -> Array:
    """An Array or a Python scalar as an Array of ``dtype`` on ``device``."""
    if isinstance(x, Array):
        if x._dtype is dtype:
            return x
        return wrap(astype_buf(x, dtype), dtype, x._device)
    check_int_fits(x, dtype, op)
    return wrap(full_buf(device, (), x, dtype), dtype, device)


_SCALARS: dict = {}
_SCALARS_MAX = 512


def scalar_operand(x, dtype, device, op: str) -> Array:
    """A Python scalar as a 0-d Array for use as a read-only kernel input, cached per (device,
    dtype, value): building one costs an allocation and a host write, more than many ops.
    Never hand the result to a user: it is shared."""
    t = type(x)
    # a nonzero int or non-NaN float is its own key; repr tells -0.0 from 0.0 and keys NaN
    v = x if (t is int or t is float) and x and x == x else repr(x)
    key = (id(device), dtype.name, t, v)
    a = _SCALARS.get(key)
    if a is None:
        check_device_dtype(device, dtype, "full")
        check_int_fits(x, dtype, op)
        k = device.kernels.get("scalar")   # optional: a backend may treat it as a constant
        buf = k(x, dtype) if k is not None else full_buf(device, (), x, dtype)
        a = wrap(buf, dtype, device)
        if len(_SCALARS) >= _SCALARS_MAX:
            _SCALARS.clear()
        _SCALARS[key] = a
    return a


__all__ = []
del dt
