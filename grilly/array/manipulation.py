"""Array API manipulation functions, built on the storage kernels (reshape, permute,
broadcast_to, slice, assign, empty) plus gather and repeat_indices for array repeats."""
from __future__ import annotations

from . import dispatch
from . import dtypes as dt
from .array import Array, same_memory, view_of
from .core import (AxisError, astype_buf, call, check_array, check_nbytes, common_device, kernel,
                   wrap)
from .core import broadcast_shapes as _bshapes

__all__ = ["broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims",
           "flip", "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack",
           "tile", "unstack"]


_INT = frozenset((int,))


def _ints(seq, op: str, arg: str) -> tuple:
    """``seq`` (an int or a sequence of ints) as a tuple of Python ints, or TypeError."""
    if type(seq) is int:
        return (seq,)
    # the common case: already a tuple of Python ints (tested in C: bool, numpy ints, ... are
    # checked and converted below)
    if type(seq) is tuple and _INT.issuperset(map(type, seq)):
        return seq
    if isinstance(seq, Array) or not hasattr(seq, "__iter__"):
        seq = (seq,)
    out = []
    for v in seq:
        if isinstance(v, bool) or isinstance(v, float):
            raise TypeError(f"{op}: {arg} must hold integers, got {v!r}")
        try:
            out.append(int(v.__index__()))
        except AttributeError:
            raise TypeError(f"{op}: {arg} must hold integers, got {type(v).__name__}") from None
    return tuple(out)


def _shape_arg(shape, op: str) -> tuple:
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{op}: shape must be a tuple of ints, got {type(shape).__name__}")
    return _ints(shape, op, "shape")


def normalize_axis(a, ndim: int, op: str, arg: str = "axis") -> int:
    """``a`` in [0, ndim); AxisError otherwise (a 0-d array has no valid axis)."""
    (a,) = _ints(a, op, arg)
    if not -ndim <= a < ndim:
        raise AxisError(f"{op}: {arg}={a} is out of range for an array of {ndim} dimension(s)")
    return a % ndim


def _alias(x: Array) -> Array:
    """A new Array object over x's buffer (ops return fresh objects even when nothing moves)."""
    return view_of(x, x._buf, "reshape", (x.shape,))


def _maybe_view(x: Array, buf, shape: tuple) -> Array:
    """``buf`` (x reshaped to ``shape``: a view, or a copy where the layout needed one) as an
    Array."""
    if same_memory(buf, x._buf):
        return view_of(x, buf, "reshape", (shape,))
    return wrap(buf, x._dtype, x._device)


def _axes_list(axis, ndim: int, op: str, arg: str = "axis") -> list:
    """``axis`` (int or tuple) normalized, in the given order; ValueError on repeats."""
    axes = [normalize_axis(a, ndim, op, arg) for a in _ints(axis, op, arg)]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: repeated axis in {arg}={axis!r}")
    return axes


def _reshape(x: Array, shape: tuple) -> Array:
    if tuple(x._buf.shape) == shape:
        return _alias(x)
    return _maybe_view(x, kernel(x._device, "reshape")(x._buf, shape), shape)


def _arrays(arrays, op: str) -> list:
    if isinstance(arrays, Array) or not isinstance(arrays, (tuple, list)):
        raise TypeError(f"{op}: arrays must be a tuple or list of grilly Arrays")
    if not arrays:
        raise ValueError(f"{op}: need at least one array")
    for i, a in enumerate(arrays):
        check_array(a, op, f"arrays[{i}]")
    common_device(op, *arrays)
    return list(arrays)


def broadcast_shapes(*shapes: tuple) -> tuple:
    """The shape that ``shapes`` broadcast to; ValueError when incompatible."""
    return _bshapes(*(_shape_arg(s, "broadcast_shapes") for s in shapes), op="broadcast_shapes")


def broadcast_to(x: Array, /, shape: tuple) -> Array:
    """``x`` broadcast to ``shape`` (a read-only view)."""
    check_array(x, "broadcast_to")
    shape = _shape_arg(shape, "broadcast_to")
    xs = x.shape
    if xs == shape:
        return _alias(x)
    off = len(shape) - len(xs)
    if off < 0 or any(s < 0 for s in shape) or any(
            d not in (1, shape[off + i]) for i, d in enumerate(xs)):
        raise ValueError(f"broadcast_to: an array of shape {xs} cannot be broadcast to {shape}")
    check_nbytes(shape, x._dtype, "broadcast_to")
    return wrap(kernel(x._device, "broadcast_to")(x._buf, shape), x._dtype, x._device)


def broadcast_arrays(*arrays: Array) -> tuple[Array, ...]:
    """The arrays broadcast against one another."""
    for i, a in enumerate(arrays):
        check_array(a, "broadcast_arrays", f"arrays[{i}]")
    if not arrays:
        return ()
    common_device("broadcast_arrays", *arrays)
    shape = _bshapes(*(a.shape for a in arrays), op="broadcast_arrays")
    return tuple(broadcast_to(a, shape) for a in arrays)


def concat(arrays: tuple[Array, ...] | list[Array], /, *, axis: int | None = 0) -> Array:
    """Join arrays along an existing axis (flattened first when axis is None)."""
    op = "concat"
    arrays = _arrays(arrays, op)
    d = arrays[0]._dtype
    for a in arrays[1:]:
        d = dt.promote(d, a._dtype, op)
    if axis is None:
        arrays = [_reshape(a, (a.size,)) for a in arrays]
        axis = 0
    nd = arrays[0].ndim
    if nd == 0:
        raise ValueError(f"{op}: zero-dimensional arrays cannot be concatenated along an axis")
    axis = normalize_axis(axis, nd, op)
    base = arrays[0].shape
    for i, a in enumerate(arrays):
        if a.ndim != nd or any(s != b for j, (s, b) in enumerate(zip(a.shape, base)) if j != axis):
            raise ValueError(f"{op}: arrays[{i}] has shape {a.shape}, which does not match "
                             f"{base} outside axis {axis}")
    shape = base[:axis] + (sum(a.shape[axis] for a in arrays),) + base[axis + 1:]
    dev = arrays[0]._device
    out = kernel(dev, "empty")(shape, d)
    slice_k, assign = kernel(dev, "slice"), kernel(dev, "assign")
    start = 0
    for a in arrays:
        n = a.shape[axis]
        if n:
            key = (slice(0, None, 1),) * axis + (slice(start, start + n, 1),)
            assign(slice_k(out, key), astype_buf(a, d))
        start += n
    return wrap(out, d, dev)


def stack(arrays: tuple[Array, ...] | list[Array], /, *, axis: int = 0,
          dim: int | None = None) -> Array:
    """Join arrays of one shape along a new axis (``dim`` is torch's spelling of ``axis``)."""
    if dim is not None:
        if axis != 0:
            raise TypeError("stack: give axis or dim, not both")
        axis = dim
    arrays = _arrays(arrays, "stack")
    shape = arrays[0].shape
    for i, a in enumerate(arrays):
        if a.shape != shape:
            raise ValueError(f"stack: arrays[{i}] has shape {a.shape}, expected {shape}")
    axis = normalize_axis(axis, len(shape) + 1, "stack")
    new = shape[:axis] + (1,) + shape[axis:]
    return concat([_reshape(a, new) for a in arrays], axis=axis)


def expand_dims(x: Array, /, axis: int | tuple[int, ...]) -> Array:
    """Insert axes of size one at the positions ``axis``."""
    check_array(x, "expand_dims")
    m = x.ndim + len(_ints(axis, "expand_dims", "axis"))
    axes = set(_axes_list(axis, m, "expand_dims"))
    it = iter(x.shape)
    return _reshape(x, tuple(1 if i in axes else next(it) for i in range(m)))


def squeeze(x: Array, /, axis: int | tuple[int, ...] | None = None) -> Array:
    """Remove the axes of size one named by ``axis`` (every one when None, as NumPy's)."""
    check_array(x, "squeeze")
    if axis is None:   # an extension: the Array API requires axis
        axis = tuple(i for i, s in enumerate(x.shape) if s == 1)
    axes = set(_axes_list(axis, x.ndim, "squeeze"))
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1")
    return _reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in axes))


def flip(x: Array, /, *, axis: int | tuple[int, ...] | None = None) -> Array:
    """Reverse the order of elements along ``axis`` (all axes when None)."""
    check_array(x, "flip")
    axes = range(x.ndim) if axis is None else _axes_list(axis, x.ndim, "flip")
    if all(x.shape[a] <= 1 for a in axes):
        return _alias(x)
    key = tuple(slice(n - 1, None, -1) if i in axes and n else slice(0, n, 1)
                for i, n in enumerate(x.shape))
    return view_of(x, kernel(x._device, "slice")(x._buf, key), "flip", (), {"axis": tuple(axes)})


def permute_dims(x: Array, /, axes: tuple[int, ...]) -> Array:
    """Permute the axes of ``x``."""
    check_array(x, "permute_dims")
    if not isinstance(axes, (tuple, list)):
        raise TypeError(f"permute_dims: axes must be a tuple of ints, got {type(axes).__name__}")
    perm = tuple(_axes_list(axes, x.ndim, "permute_dims", "axes"))
    if len(perm) != x.ndim:
        raise ValueError(f"permute_dims: axes {tuple(axes)} is not a permutation of "
                         f"{x.ndim} axes")
    if perm == tuple(range(x.ndim)):
        return _alias(x)
    return view_of(x, kernel(x._device, "permute")(x._buf, perm), "permute_dims", (perm,))


def moveaxis(x: Array, source: int | tuple[int, ...], destination: int | tuple[int, ...],
             /) -> Array:
    """Move axes ``source`` to positions ``destination``, keeping the others in order."""
    check_array(x, "moveaxis")
    src = _axes_list(source, x.ndim, "moveaxis", "source")
    dst = _axes_list(destination, x.ndim, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source!r} and destination {destination!r} must "
                         "have the same number of axes")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def reshape(x: Array, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Array:
    """``x`` with a new shape (one dimension may be -1); copy=False never copies."""
    check_array(x, "reshape")
    xs = x.shape
    # a shape asked for before, from x's shape: resolved (-1) and checked then (keyed on exact
    # tuples of Python ints: True or 2.0 would hash as 1 or 2 and skip their TypeError)
    new = _RESHAPED.get((xs, shape)) if type(shape) is tuple and _INT.issuperset(
        map(type, shape)) else None
    if new is not None:
        if copy not in (None, True, False):
            raise TypeError(f"reshape: copy must be True, False or None, got {copy!r}")
    else:
        new = _resolve_shape(x, shape, copy)
    if not copy and xs == new:
        return _alias(x)
    buf = kernel(x._device, "reshape")(x._buf, new, copy)
    return wrap(buf, x._dtype, x._device) if copy else _maybe_view(x, buf, new)


_RESHAPED: dict = {}   # (x's shape, the shape asked for) -> the shape, -1 resolved
RESHAPED_MAX = 4096    # bounds _RESHAPED (cleared when full)


def _resolve_shape(x: Array, shape, copy) -> tuple:
    """reshape's ``shape`` checked against ``x`` (every error of a bad shape or copy), -1
    resolved; kept in ``_RESHAPED`` (bounded)."""
    asked = shape
    shape = _shape_arg(shape, "reshape")
    exact = asked is shape   # (a tuple of Python ints: _ints returns it as it is)
    if copy not in (None, True, False):
        raise TypeError(f"reshape: copy must be True, False or None, got {copy!r}")
    known, unknown = 1, None   # (one pass)
    for i, s in enumerate(shape):
        if s >= 0:
            known *= s
        elif s == -1 and unknown is None:
            unknown = i
        else:
            raise ValueError(f"reshape: invalid shape {shape}; only one -1 and no other negatives")
    size = 1
    for s in x._buf.shape:   # (not x.size: that builds the callable int, a cost on this hot path)
        size *= s
    if unknown is not None:
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape an array of size {size} into {shape}")
        shape = shape[:unknown] + (size // known,) + shape[unknown + 1:]
    elif known != size:
        raise ValueError(f"reshape: cannot reshape an array of size {size} into {shape}")
    if exact:
        if len(_RESHAPED) >= RESHAPED_MAX:
            _RESHAPED.clear()
        _RESHAPED[x.shape, asked] = shape
    return shape


def roll(x: Array, /, shift: int | tuple[int, ...], *,
         axis: int | tuple[int, ...] | None = None) -> Array:
    """Shift elements along ``axis`` cyclically (over the flattened array when None)."""
    check_array(x, "roll")
    shifts = _ints(shift, "roll", "shift")
    if axis is None:
        if len(shifts) != 1:
            raise ValueError("roll: a tuple shift needs a tuple axis of the same length")
        flat = roll(_reshape(x, (x.size,)), shifts[0], axis=0)
        return _reshape(flat, x.shape)
    axes = [normalize_axis(a, x.ndim, "roll") for a in _ints(axis, "roll", "axis")]
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift!r} and axis {axis!r} have different lengths")
    total = {}
    for a, s in zip(axes, shifts):
        total[a] = total.get(a, 0) + s
    out, moved = x, False
    for a, s in total.items():
        n = x.shape[a]
        s = s % n if n else 0
        if s:
            pre = (slice(None),) * a
            out = concat([out[pre + (slice(n - s, None),)], out[pre + (slice(0, n - s),)]], axis=a)
            moved = True
    return out if moved else _materialize(x)


def repeat(x: Array, repeats: int | Array, /, *, axis: int | None = None) -> Array:
    """Repeat each element ``repeats`` times along ``axis`` (of the flattened array when None)."""
    check_array(x, "repeat")
    if axis is None:
        x, axis = _reshape(x, (x.size,)), 0
    axis = normalize_axis(axis, x.ndim, "repeat")
    n = x.shape[axis]
    dev = x._device
    if isinstance(repeats, Array):
        common_device("repeat", x, repeats)
        if not dt.is_int(repeats._dtype):
            raise TypeError(f"repeat: repeats must have an integer dtype, got {repeats.dtype.name}")
        if repeats.ndim > 1 or repeats.shape not in ((1,), (n,), ()):
            raise ValueError(f"repeat: repeats of shape {repeats.shape} does not match axis "
                             f"{axis} of size {n}")
        if repeats.size != 1 or n == 1:
            counts = kernel(dev, "broadcast_to")(repeats._buf, (n,))
            idx = call(dev, "repeat_indices", wrap(counts, repeats._dtype, dev))
            if idx is None:
                raise ValueError("repeat: repeats must not contain negative values")
            return dispatch.OPS["__getitem__"](x, (slice(None),) * axis + (wrap(idx, dt.int64, dev),))
        repeats = int(repeats)
    (r,) = _ints(repeats, "repeat", "repeats")
    if r < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got {r}")
    s = x.shape
    wide = broadcast_to(_reshape(x, s[:axis + 1] + (1,) + s[axis + 1:]),
                        s[:axis + 1] + (r,) + s[axis + 1:])
    return _reshape(_materialize(wide), s[:axis] + (n * r,) + s[axis + 1:])


def _materialize(x: Array) -> Array:
    """A fresh contiguous copy (so the reshape that follows is a view of new storage)."""
    return wrap(kernel(x._device, "copy")(x._buf), x._dtype, x._device)


def tile(x: Array, repetitions: int | tuple[int, ...], /) -> Array:
    """Tile ``x``: repeat the whole array ``repetitions[i]`` times along axis i (an int: along
    the last axis, as NumPy's)."""
    check_array(x, "tile")
    if isinstance(repetitions, int) and not isinstance(repetitions, bool):
        repetitions = (repetitions,)
    if not isinstance(repetitions, (tuple, list)):
        raise TypeError("tile: repetitions must be an int or a tuple of ints")
    reps = _ints(repetitions, "tile", "repetitions")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must be non-negative, got {reps}")
    nd = max(x.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    s = (1,) * (nd - x.ndim) + x.shape
    inter = tuple(v for pair in zip((1,) * nd, s) for v in pair)
    wide = broadcast_to(_reshape(x, inter), tuple(v for pair in zip(reps, s) for v in pair))
    return _reshape(_materialize(wide), tuple(r * n for r, n in zip(reps, s)))


def unstack(x: Array, /, *, axis: int = 0) -> tuple[Array, ...]:
    """Split ``x`` into the arrays along ``axis``."""
    check_array(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack: x must have at least one dimension")
    axis = normalize_axis(axis, x.ndim, "unstack")
    pre = (slice(None),) * axis
    return tuple(x[pre + (i,)] for i in range(x.shape[axis]))


dispatch.export(globals())
