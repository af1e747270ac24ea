"""Creation functions of the Array API."""
from __future__ import annotations

import math

from . import dispatch
from . import dtypes as dt
from .array import Array
from .core import (call, check_device_dtype, check_nbytes, kernel, normalize_shape, resolve_device,
                   wrap)
from .host import to_numpy

__all__ = ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
           "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"]


def _dtype(dtype, op):
    return None if dtype is None else dt.as_dtype(dtype, op)


def array(obj, dtype=None, *, copy: bool | None = True, order: str | None = "K", ndmin: int = 0,
          device=None) -> Array:
    """NumPy's ``np.array``: ``asarray`` with a copy by default (``copy=None`` copies only when
    needed, ``copy=False`` never), at least ``ndmin`` dimensions (ones prepended); grilly
    arrays are row-major, so ``order`` may be 'K', 'A' or 'C'. Called as ``grilly.array``."""
    if order not in ("K", "A", "C", None):
        raise ValueError(f"array: order={order!r} is not supported (grilly arrays are row-major: "
                         "'C', 'K' or 'A')")
    if isinstance(ndmin, bool) or not isinstance(ndmin, int) or ndmin < 0:
        raise TypeError(f"array: ndmin must be a non-negative int, got {ndmin!r}")
    x = asarray(obj, dtype=dtype, device=device, copy=copy)
    if x.ndim < ndmin:
        x = dispatch.ns.reshape(x, (1,) * (ndmin - x.ndim) + x.shape)
    return x


def asarray(obj, /, *, dtype=None, device=None, copy=None) -> Array:
    """Convert ``obj`` (array, scalar, nested sequence, buffer, DLPack object) to an Array."""
    d = _dtype(dtype, "asarray")
    if isinstance(obj, Array):
        dev = obj._device if device is None else resolve_device(device)
        same = (d is None or d is obj._dtype) and dev is obj._device
        if same and not copy:
            return obj
        if copy is False:
            raise ValueError("asarray: copy=False but a copy is needed (dtype or device differs)")
        x = obj if dev is obj._device else obj.to_device(dev)
        nd = d or obj._dtype
        check_device_dtype(dev, nd, "asarray")
        buf = kernel(dev, "astype")(x._buf, nd) if (nd is not x._dtype or x is obj) else x._buf
        return wrap(buf, nd, dev)
    dev = resolve_device(device)
    if copy is False:
        raise ValueError("asarray: copy=False is only possible for a grilly Array on the same device")
    if hasattr(obj, "__dlpack__") and not hasattr(obj, "__array_interface__"):
        from .interop import from_dlpack as _fd

        return asarray(_fd(obj), dtype=dtype, device=device, copy=copy)
    h, d = to_numpy(obj, d)
    check_device_dtype(dev, d, "asarray")
    return wrap(kernel(dev, "from_host")(h, d), d, dev)


def _fill(op, shape, value, dtype, device) -> Array:
    dev = resolve_device(device)
    shape = normalize_shape(shape, op)
    d = _dtype(dtype, op)
    if d is None:
        if isinstance(value, Array):
            d = value.dtype
        else:
            from .host import scalar_dtype

            d = scalar_dtype(value) if value is not None else dt.float64
    check_device_dtype(dev, d, op)
    check_nbytes(shape, d, op)
    if value is None:
        return wrap(kernel(dev, "empty")(shape, d), d, dev)
    if isinstance(value, Array):
        value = value.item()
    if isinstance(value, complex) and d.kind != "c":
        raise TypeError(f"{op}: a complex fill value needs a complex dtype, got {d.name}")
    if isinstance(value, float) and d.kind in "iub":
        raise TypeError(f"{op}: a float fill value needs a floating dtype, got {d.name}")
    if isinstance(value, int) and not isinstance(value, bool) and d.kind in "iu":
        lo, hi = dt.iinfo(d).min, dt.iinfo(d).max
        if not lo <= value <= hi:
            raise OverflowError(f"{op}: fill value {value} does not fit in {d.name}")
    return wrap(kernel(dev, "full")(shape, value, d), d, dev)


def empty(shape, *, dtype=None, device=None) -> Array:
    """An uninitialized array of ``shape``."""
    return _fill("empty", shape, None, dtype or dt.float64, device)


def zeros(shape, *, dtype=None, device=None) -> Array:
    """An array of zeros."""
    return _fill("zeros", shape, 0, dtype or dt.float64, device)


def ones(shape, *, dtype=None, device=None) -> Array:
    """An array of ones."""
    return _fill("ones", shape, 1, dtype or dt.float64, device)


def full(shape, fill_value, *, dtype=None, device=None) -> Array:
    """An array filled with ``fill_value``."""
    if not isinstance(fill_value, (bool, int, float, complex, Array)):
        raise TypeError(f"full: fill_value must be a scalar, got {type(fill_value).__name__}")
    return _fill("full", shape, fill_value, dtype, device)


def _like(op, x, value, dtype, device):
    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected a grilly Array, got {type(x).__name__}")
    return _fill(op, x.shape, value, dtype or x.dtype, device or x.device)


def empty_like(x: Array, /, *, dtype=None, device=None) -> Array:
    """An uninitialized array shaped like ``x``."""
    return _like("empty_like", x, None, dtype, device)


def zeros_like(x: Array, /, *, dtype=None, device=None) -> Array:
    """Zeros shaped like ``x``."""
    return _like("zeros_like", x, 0, dtype, device)


def ones_like(x: Array, /, *, dtype=None, device=None) -> Array:
    """Ones shaped like ``x``."""
    return _like("ones_like", x, 1, dtype, device)


def full_like(x: Array, /, fill_value, *, dtype=None, device=None) -> Array:
    """``fill_value`` everywhere, shaped like ``x``."""
    return _like("full_like", x, fill_value, dtype, device)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> Array:
    """Evenly spaced values in [start, stop)."""
    if stop is None:
        start, stop = 0, start
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise TypeError(f"arange: {name} must be a real number, got {type(v).__name__}")
    if step == 0:
        raise ValueError("arange: step must not be zero")
    d = _dtype(dtype, "arange")
    if d is None:
        d = dt.float64 if any(isinstance(v, float) for v in (start, stop, step)) else dt.int64
    n = max(0, math.ceil((stop - start) / step))
    if d.kind in "iu" and n:
        last = start + (n - 1) * step
        info = dt.iinfo(d)
        if not (info.min <= start <= info.max and info.min <= last <= info.max):
            raise OverflowError(f"arange: values do not fit in {d.name}")
    dev = resolve_device(device)
    check_device_dtype(dev, d, "arange")
    check_nbytes((n,), d, "arange")
    return wrap(call(dev, "arange", start, step, n, d), d, dev)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True) -> Array:
    """``num`` evenly spaced values from start to stop."""
    if not isinstance(num, int) or isinstance(num, bool) or num < 0:
        raise ValueError(f"linspace: num must be a non-negative int, got {num!r}")
    cplx = isinstance(start, complex) or isinstance(stop, complex)
    d = _dtype(dtype, "linspace") or (dt.complex128 if cplx else dt.float64)
    if d.kind not in "fc":
        raise TypeError(f"linspace: dtype must be floating, got {d.name}")
    if cplx and d.kind != "c":
        raise TypeError("linspace: complex start/stop need a complex dtype")
    dev = resolve_device(device)
    check_device_dtype(dev, d, "linspace")
    check_nbytes((num,), d, "linspace")
    return wrap(call(dev, "linspace", start, stop, num, endpoint, d), d, dev)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None) -> Array:
    """A 2-D array with ones on the k-th diagonal."""
    n_cols = n_rows if n_cols is None else n_cols
    for name, v in (("n_rows", n_rows), ("n_cols", n_cols), ("k", k)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"eye: {name} must be an int, got {type(v).__name__}")
    d = _dtype(dtype, "eye") or dt.float64
    dev = resolve_device(device)
    check_device_dtype(dev, d, "eye")
    check_nbytes((n_rows, n_cols), d, "eye")
    # a diagonal outside the matrix is empty whatever its distance: clamping keeps a huge k
    # (2**63, say) from overflowing the backends' int64 index arithmetic
    k = max(-n_rows, min(k, n_cols))
    return wrap(call(dev, "eye", n_rows, n_cols, k, d), d, dev)


def _tri(op, x, k, lower):
    from .elementwise import binary
    from .searching import where

    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected a grilly Array, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"{op}: x must be at least 2-D, got {x.ndim}-D")
    n, m = x.shape[-2:]
    rows = arange(n, dtype=dt.int64, device=x.device)
    cols = arange(m, dtype=dt.int64, device=x.device)
    reshape = dispatch.ns.reshape   # (manipulation imports this module)
    diff = binary("subtract", reshape(cols, (1, m)), reshape(rows, (n, 1)))
    keep = binary("less_equal" if lower else "greater_equal", diff, k)
    return where(keep, x, zeros((), dtype=x.dtype, device=x.device))


def tril(x: Array, /, *, k: int = 0) -> Array:
    """The lower triangle of (a stack of) matrices."""
    return _tri("tril", x, k, True)


def triu(x: Array, /, *, k: int = 0) -> Array:
    """The upper triangle of (a stack of) matrices."""
    return _tri("triu", x, k, False)


def meshgrid(*arrays: Array, indexing: str = "xy", sparse: bool = False,
             copy: bool = True) -> tuple[Array, ...]:
    """Coordinate matrices from coordinate vectors (NumPy's ``sparse``: each array shaped to
    broadcast against the others, not broadcast; ``copy=False``: read-only broadcast views)."""
    broadcast_to, reshape = dispatch.ns.broadcast_to, dispatch.ns.reshape
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for a in arrays:
        if not isinstance(a, Array) or a.ndim != 1:
            raise ValueError("meshgrid: every argument must be a 1-D grilly Array")
    # arrays of different dtypes each keep theirs, as in NumPy (the standard says "should")
    n = len(arrays)
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        pos = i
        if indexing == "xy" and n > 1 and i < 2:
            pos = 1 - i
        s = [1] * n
        s[pos] = a.shape[0]
        b = reshape(a, tuple(s))
        if not sparse:
            b = broadcast_to(b, tuple(shape))
        out.append(wrap(kernel(a.device, "copy")(b._buf), a.dtype, a.device) if copy else b)
    # 2025.12 made meshgrid return a tuple (it was a list before)
    return tuple(out)


def from_dlpack(x, /, *, device=None, copy=None) -> Array:
    """An Array from any object exporting DLPack."""
    from .interop import from_dlpack as _fd

    return _fd(x, device=device, copy=copy)


# torch's requires_grad= on its factory functions (torch.zeros(3, requires_grad=True)), which
# NumPy and the Array API never take: the array is made as usual, then made a leaf requiring grad
_FACTORIES = ("empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like",
              "full_like", "arange", "linspace", "eye", "asarray")


def _requiring_grad(name: str):
    """``name``'s form with torch's ``requires_grad`` keyword."""
    def form(*args, requires_grad: bool = False, **kw) -> Array:
        out = dispatch.OPS[name](*args, **kw)
        if requires_grad:   # (an integer array raises there, as torch's)
            out.requires_grad_(True)
        return out
    return form


dispatch.NUMPY_FORMS.update({n: (frozenset({"requires_grad"}), _requiring_grad(n))
                             for n in _FACTORIES})
dispatch.export(globals())
