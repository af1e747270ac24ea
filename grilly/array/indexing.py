"""Indexing: Array.__getitem__/__setitem__ (NumPy semantics: basic, boolean and integer-array
indexing) and the Array API functions take and take_along_axis.

A key is resolved into a *view* of ``x`` (slices only, then a reshape that drops integer-indexed
axes and inserts new ones) plus, for advanced indexing, int64 index arrays over some axes of that
view. Basic indexing is the view; advanced indexing gathers from (or scatters into) the view with
its indexed axes permuted to the front.
"""
from __future__ import annotations

import operator

from . import dispatch
from . import dtypes as dt
from .array import Array, bump, view_of
from .core import (AxisError, broadcast_shapes, call, check_array, check_device_dtype,
                   common_device, kernel, normalize_axis, wrap)

__all__ = ["take", "take_along_axis"]

_FULL = slice(None)


def _norm_slice(s: slice, n: int, op: str) -> tuple[slice, int]:
    """A slice with a non-negative start and a non-negative (or None) stop, and its length."""
    try:
        r = range(n)[s]
    except TypeError:
        raise TypeError(f"{op}: slice bounds must be integers or None, got {s!r}") from None
    if len(r) == 0:
        return slice(0, 0, 1), 0
    stop = r.stop if r.stop >= 0 else None
    return slice(r.start, stop, r.step), len(r)


class IndexTypeError(IndexError, TypeError):
    """An index of a type that cannot index (a float, a string, a float array, ...): an IndexError
    as in NumPy, and a TypeError as the Array API's other bad-type errors."""


def _bad_index(k, op: str) -> IndexTypeError:
    return IndexTypeError(f"{op}: only integers, slices, ellipsis, None and integer or boolean "
                          f"arrays are valid indices; got {type(k).__name__} {k!r}")


def _host_index(k, x: Array, op: str):
    """A NumPy scalar or array used as an index (NumPy's own rules): an int, a bool, or an
    Array on x's device."""
    kind = getattr(k.dtype, "kind", "")
    if k.ndim == 0 and kind in "iub":
        return bool(k) if kind == "b" else int(k)
    if kind not in "iub" or not k.ndim:
        raise IndexTypeError(f"{op}: arrays used as indices must be of integer or boolean "
                             f"dtype, got {k.dtype}")
    return dispatch.ns.asarray(k, device=x._device)


def _seq_index(k, x: Array, op: str) -> Array:
    """A list (or a tuple inside the key) as an index: NumPy makes an integer/bool array of it."""
    asarray = dispatch.ns.asarray   # (creation sits above this module)
    try:
        a = asarray(k, device=x._device)
    except (TypeError, ValueError):
        raise _bad_index(k, op) from None
    if a.size == 0 and not dt.is_int(a._dtype):   # [] and [[]]: an empty integer index
        a = asarray(k, dtype=dt.int64, device=x._device)
    return a


def _on_device_of(k: Array, x: Array, op: str) -> Array:
    """Index Array ``k`` on ``x``'s device. An integer or boolean index on the cpu device (the
    host) indexes an array on any device, as a NumPy index does and as torch lets a CPU index
    tensor index a CUDA one: ``x[gp.ix_(rows, cols)]`` and ``x[gp.tril_indices(n)]`` build their
    indices on the default device. Other mixes are common_device's ValueError."""
    if k._device is not x._device and k._device.backend.name == "cpu" and \
            (k._dtype is dt.bool or dt.is_int(k._dtype)):
        return k.to_device(x._device)
    common_device(op, x, k)
    return k


def _parse(x: Array, key, op: str) -> list:
    """The key as a list of items: None, Ellipsis, slice, int, ('bool', value), ('arr', Array)."""
    if not isinstance(key, tuple):
        key = (key,)
    items = []
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice):
            items.append(k)
            continue
        if isinstance(k, int) and not isinstance(k, bool):
            items.append(k)
            continue
        if isinstance(k, bool):
            items.append(("bool", k))
            continue
        if isinstance(k, (float, complex, str, bytes)):
            raise _bad_index(k, op)
        if hasattr(k, "__array_interface__") and hasattr(k, "dtype"):   # NumPy scalar/array
            k = _host_index(k, x, op)
            if isinstance(k, bool):
                items.append(("bool", k))
                continue
            if isinstance(k, int):
                items.append(k)
                continue
        if isinstance(k, (Array, list, tuple)):
            if isinstance(k, Array):
                a = _on_device_of(k, x, op)
            else:
                a = _seq_index(k, x, op)
            if a._dtype is dt.bool:
                items.append(("bool", bool(a)) if a.ndim == 0 else ("mask", a))
            elif dt.is_int(a._dtype):
                items.append(int(a) if a.ndim == 0 else ("arr", a))
            else:
                raise IndexTypeError(f"{op}: arrays used as indices must be of integer or "
                                     f"boolean dtype, got {a._dtype.name}")
            continue
        try:
            items.append(operator.index(k))
        except TypeError:
            raise _bad_index(k, op) from None
    return items


def _consumed(it) -> int:
    if it is None or it is Ellipsis:
        return 0
    if isinstance(it, tuple):
        return it[1].ndim if it[0] == "mask" else int(it[0] == "arr")
    return 1


def _resolve(x: Array, key, op: str):
    """(slice key per axis of x, view shape, advanced [(view axis, index, axis size, x axis)],
    whether an ellipsis separates advanced indices)."""
    items = _parse(x, key, op)
    n_ell = sum(1 for it in items if it is Ellipsis)
    if n_ell > 1:
        raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
    used = sum(_consumed(it) for it in items)
    ndim = x.ndim
    if used > ndim:
        raise IndexError(f"{op}: too many indices: array is {ndim}-dimensional, but {used} "
                         "were indexed")
    fill = [_FULL] * (ndim - used)
    advanced = any(isinstance(it, tuple) for it in items)
    split = False
    if n_ell:
        e = items.index(Ellipsis)
        if advanced and not fill:
            # NumPy: an ellipsis between advanced indices separates them even when it stands
            # for no axis (x[:, i, ..., j] puts the index dims first, as x[:, i, :, j] would)
            adv_at = [isinstance(it, (int, tuple)) for it in items]
            split = any(adv_at[:e]) and any(adv_at[e + 1:])
        items[e:e + 1] = fill
    else:
        items.extend(fill)
    shape = x.shape
    skey, vshape, adv = [], [], []
    ax = 0
    for it in items:
        if it is None:
            vshape.append(1)
        elif isinstance(it, slice):
            s, n = _norm_slice(it, shape[ax], op)
            skey.append(s)
            vshape.append(n)
            ax += 1
        elif isinstance(it, int):
            n = shape[ax]
            if not -n <= it < n:
                raise IndexError(f"{op}: index {it} is out of bounds for axis {ax} with size {n}")
            i = it % n
            skey.append(slice(i, i + 1, 1) if not advanced else slice(0, n, 1))
            if advanced:
                vshape.append(n)
                adv.append((len(vshape) - 1, i, n, ax))
            ax += 1
        elif it[0] == "bool":
            vshape.append(1)
            adv.append((len(vshape) - 1, it[1], 1, None))
        elif it[0] == "arr":
            n = shape[ax]
            skey.append(slice(0, n, 1))
            vshape.append(n)
            adv.append((len(vshape) - 1, it[1], n, ax))
            ax += 1
        else:  # mask: its coordinates index the mask's axes
            m = it[1]
            sub = shape[ax:ax + m.ndim]
            if any(ms not in (xs, 0) for ms, xs in zip(m.shape, sub)):
                raise IndexError(f"{op}: boolean index of shape {m.shape} does not match the "
                                 f"indexed array's shape {sub} at axis {ax}")
            coords = kernel(x._device, "mask_indices")(m._buf)
            for c, n in zip(coords, sub):
                skey.append(slice(0, n, 1))
                vshape.append(n)
                adv.append((len(vshape) - 1, ("ok", c), n, ax))
                ax += 1
    return skey, tuple(vshape), adv, split


def _view(x: Array, skey, vshape, op: str):
    """The buffer of the basic-indexing view of ``x`` (always a view, never a copy)."""
    buf = x._buf
    shape = x.shape
    if any(s != slice(0, n, 1) for s, n in zip(skey, shape)):
        buf = kernel(x._device, "slice")(buf, tuple(skey))
    if tuple(buf.shape) != vshape:
        buf = kernel(x._device, "reshape")(buf, vshape, False)
    return buf


def _index_bufs(x: Array, adv, op: str):
    """int64 index buffers broadcast to one shape, and that shape."""
    dev = x._device
    bufs = []
    for _, idx, n, ax in adv:
        if isinstance(idx, bool):
            buf = kernel(dev, "full")((1 if idx else 0,), 0, dt.int64)
        elif isinstance(idx, int):
            buf = kernel(dev, "full")((), idx, dt.int64)
        elif isinstance(idx, tuple):
            buf = idx[1]
        else:
            buf, bad = call(dev, "normalize_indices", idx, n)
            if bad is not None:
                raise IndexError(f"{op}: index {bad} is out of bounds for axis {ax} with size {n}")
        bufs.append(buf)
    shapes = [tuple(b.shape) for b in bufs]
    try:
        s = broadcast_shapes(*shapes, op=op)
    except ValueError:
        raise IndexError(f"{op}: shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {' '.join(map(str, shapes))}") from None
    bto = kernel(dev, "broadcast_to")
    return tuple(b if tuple(b.shape) == s else bto(b, s) for b in bufs), s


def _adv_layout(vshape, adv, split: bool):
    """(permutation putting indexed view axes first, position of the result's index dims)."""
    axes = [a for a, *_ in adv]
    rest = [i for i in range(len(vshape)) if i not in axes]
    adjacent = not split and axes == list(range(axes[0], axes[0] + len(axes)))
    return tuple(axes + rest), (axes[0] if adjacent else 0)


def _out_perm(n_idx: int, n_rest: int, p: int) -> tuple:
    """Axes of a gather result (index dims, rest) placing the index dims at position ``p``."""
    rest = [n_idx + i for i in range(n_rest)]
    return tuple(rest[:p] + list(range(n_idx)) + rest[p:])


def _permute(dev, buf, perm):
    return buf if perm == tuple(range(len(perm))) else kernel(dev, "permute")(buf, perm)


def getitem(x: Array, key) -> Array:
    """``x[key]`` with NumPy semantics; basic indexing returns a view."""
    op = "__getitem__"
    skey, vshape, adv, split = _resolve(x, key, op)
    dev = x._device
    buf = _view(x, skey, vshape, op)
    if not adv:
        return view_of(x, buf, "__getitem__", (key,))
    perm, p = _adv_layout(vshape, adv, split)
    idx, s = _index_bufs(x, adv, op)
    out = kernel(dev, "gather")(_permute(dev, buf, perm), idx)
    out = _permute(dev, out, _out_perm(len(s), len(vshape) - len(adv), p))
    return wrap(out, x._dtype, dev)


def _np_scalar(v) -> bool:
    """Whether ``v`` is a NumPy bool/integer/floating/complex scalar (np.int64(2), np.float32(1))."""
    return (hasattr(v, "__array_interface__") and getattr(v, "shape", None) == ()
            and not hasattr(v, "__len__") and getattr(v.dtype, "kind", "") in "biufc")


def _value_buf(x: Array, value, shape: tuple, op: str):
    """``value`` as a buffer of x's dtype broadcast to ``shape``."""
    d, dev = x._dtype, x._device
    if isinstance(value, Array):
        common_device(op, x, value)
        if value._dtype is not d:
            vk = value._dtype.kind
            if not (dt.can_cast(value._dtype, d) or vk == "b" or (vk in "iu" and d.kind in "fc")):
                raise TypeError(f"{op}: cannot store values of dtype {value._dtype.name} in an "
                                f"array of dtype {d.name}")
            vbuf = kernel(dev, "astype")(value._buf, d)
        else:
            vbuf = value._buf
        vshape = tuple(vbuf.shape)
    elif isinstance(value, (bool, int, float, complex)) or _np_scalar(value):
        if not isinstance(value, (bool, int, float, complex)):
            value = value.item()   # a NumPy scalar counts as the Python scalar of its kind
        if dt.scalar_result(d, value, op) is not d:
            raise TypeError(f"{op}: cannot store a Python {type(value).__name__} in an array "
                            f"of dtype {d.name}")
        if isinstance(value, int) and not isinstance(value, bool) and dt.is_int(d):
            info = dt.iinfo(d)
            if not info.min <= value <= info.max:
                raise OverflowError(f"{op}: {value} does not fit in {d.name}")
        check_device_dtype(dev, d, op)
        vbuf, vshape = kernel(dev, "full")((), value, d), ()
    else:
        raise TypeError(f"{op}: value must be a grilly Array, a Python scalar or a NumPy "
                        f"scalar, got {type(value).__name__}")
    if len(vshape) > len(shape):
        extra = len(vshape) - len(shape)
        if any(v != 1 for v in vshape[:extra]):
            raise ValueError(f"{op}: value of shape {vshape} cannot be broadcast to the "
                             f"selection's shape {shape}")
        vshape = vshape[extra:]
        vbuf = kernel(dev, "reshape")(vbuf, vshape)
    if vshape != shape:
        if broadcast_shapes(vshape, shape, op=op) != shape:
            raise ValueError(f"{op}: value of shape {vshape} cannot be broadcast to the "
                             f"selection's shape {shape}")
        vbuf = kernel(dev, "broadcast_to")(vbuf, shape)
    return vbuf


def setitem(x: Array, key, value) -> None:
    """``x[key] = value``, value broadcast and cast to x's dtype (safe, bool or int-to-float casts)."""
    op = "__setitem__"
    check_array(x, op)
    skey, vshape, adv, split = _resolve(x, key, op)
    dev = x._device
    dispatch.check_writable(x._buf, op)
    buf = _view(x, skey, vshape, op)
    bump(x)
    if not adv:
        kernel(dev, "assign")(buf, _value_buf(x, value, vshape, op))
        return
    perm, p = _adv_layout(vshape, adv, split)
    idx, s = _index_bufs(x, adv, op)
    rest = tuple(vshape[a] for a in perm[len(adv):])
    operm = _out_perm(len(s), len(rest), p)
    rshape = tuple((s + rest)[a] for a in operm)
    vbuf = _value_buf(x, value, rshape, op)
    inv = tuple(operm.index(i) for i in range(len(operm)))
    kernel(dev, "scatter")(_permute(dev, buf, perm), idx, _permute(dev, vbuf, inv))


def _check_indices(indices, x: Array, op: str) -> Array:
    check_array(indices, op, "indices")
    common_device(op, x, indices)
    if not dt.is_int(indices._dtype):
        raise TypeError(f"{op}: indices must have an integer dtype, got {indices._dtype.name}")
    return indices


def take(x: Array, indices: Array, /, *, axis: int | None = None) -> Array:
    """Elements of x at ``indices`` along ``axis``."""
    check_array(x, "take")
    _check_indices(indices, x, "take")
    if indices.ndim != 1:
        raise ValueError(f"take: indices must be 1-D, got shape {indices.shape}")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required for a {x.ndim}-D array")
        axis = 0
    if x.ndim == 0:
        raise ValueError("take: x must have at least one dimension")
    axis = normalize_axis(axis, x.ndim, "take")
    return getitem(x, (_FULL,) * axis + (indices,))


def take_along_axis(x: Array, indices: Array, /, *, axis: int = -1) -> Array:
    """Elements of x at the 1-D ``indices`` along ``axis``, matched index by index elsewhere."""
    ns = dispatch.ns
    arange, broadcast_to, reshape = ns.arange, ns.broadcast_to, ns.reshape
    op = "take_along_axis"
    check_array(x, op)
    _check_indices(indices, x, op)
    if indices.ndim != x.ndim:
        raise ValueError(f"{op}: indices must have as many dimensions as x ({x.ndim}), "
                         f"got {indices.ndim}")
    if x.ndim == 0:
        raise AxisError(f"{op}: x must have at least one dimension")
    axis = normalize_axis(axis, x.ndim, op)
    xs, js = list(x.shape), list(indices.shape)
    xs[axis] = js[axis] = 1
    try:
        shape = broadcast_shapes(tuple(xs), tuple(js), op=op)
    except ValueError:
        raise ValueError(f"{op}: x of shape {x.shape} and indices of shape {indices.shape} are "
                         f"not broadcast compatible outside axis {axis}") from None
    xb = broadcast_to(x, shape[:axis] + (x.shape[axis],) + shape[axis + 1:])
    ib = broadcast_to(indices, shape[:axis] + (indices.shape[axis],) + shape[axis + 1:])
    key = []
    for d, n in enumerate(shape):
        if d == axis:
            key.append(ib)
        else:
            s = [1] * len(shape)
            s[d] = n
            key.append(reshape(arange(n, dtype=dt.int64, device=x.device), tuple(s)))
    return getitem(xb, tuple(key))


# ---- NumPy's forms (dispatch.NUMPY_FORMS / NUMPY_CALLS): composed of the canonical calls ------
_TAKE_MODES = ("raise", "wrap", "clip")


def _np_indices(indices, x: Array, op: str) -> Array:
    """NumPy's array_like ``indices`` (an int, a list, a NumPy array) as an int64 Array on x's
    device; an Array as it is."""
    if isinstance(indices, Array):
        return _check_indices(indices, x, op)
    import numpy as np

    h = np.asarray(indices)
    if h.size == 0 and h.dtype.kind == "f":   # np.take(x, []): an empty list is float64
        h = h.astype(np.int64)
    if h.dtype.kind not in "iu":
        raise TypeError(f"{op}: indices must be integers, got {h.dtype} values")
    return dispatch.ns.asarray(h.astype(np.int64), device=x.device)


def _take_np(x: Array, indices, /, *, axis: int | None = None, out=None,
             mode: str = "raise") -> Array:
    """NumPy's take: array_like indices of any shape, ``axis=None`` the flattened array, and
    out-of-range indices raised (``'raise'``), wrapped (``'wrap'``) or clipped (``'clip'``)."""
    from .numpy_args import no_out

    ns = dispatch.ns
    no_out("take", out)
    check_array(x, "take")
    if mode not in _TAKE_MODES:
        raise ValueError(f"take: mode must be one of 'raise', 'wrap', 'clip', got {mode!r}")
    idx = _np_indices(indices, x, "take")
    if axis is None:
        x, axis = ns.reshape(x, (-1,)), 0
    elif x.ndim == 0:
        raise ValueError("take: x must have at least one dimension for an axis")
    axis = normalize_axis(axis, x.ndim, "take")
    n = x.shape[axis]
    if mode != "raise" and idx.size:
        if n == 0:
            raise IndexError("take: cannot do a non-empty take from an empty axis")
        # 'clip' clips negative indices to 0 too (NumPy: the mode disables negative indexing)
        idx = ns.remainder(idx, n) if mode == "wrap" else ns.clip(idx, 0, n - 1)
    r = take(x, ns.reshape(idx, (-1,)), axis=axis)
    return ns.reshape(r, x.shape[:axis] + idx.shape + x.shape[axis + 1:])


def _take_is_np(args: tuple, kw: dict) -> bool:
    """Whether a take call is NumPy's form: indices not a 1-D Array, or axis=None on N-D x."""
    if len(args) < 2:
        return False
    x, i = args[0], args[1]
    return (not isinstance(i, Array) or i.ndim != 1
            or (kw.get("axis") is None and isinstance(x, Array) and x.ndim != 1))


def _take_along_np(x: Array, indices: Array, /, *, axis: int | None = -1) -> Array:
    """NumPy's take_along_axis with ``axis=None``: the flattened x at the 1-D indices."""
    ns = dispatch.ns
    check_array(x, "take_along_axis")
    if axis is not None:
        return take_along_axis(x, indices, axis=axis)
    _check_indices(indices, x, "take_along_axis")
    if indices.ndim != 1:
        raise ValueError("take_along_axis: with axis=None, indices must be 1-D, got shape "
                         f"{indices.shape}")
    return take_along_axis(ns.reshape(x, (-1,)), indices, axis=0)


dispatch.NUMPY_FORMS.update({"take": (frozenset({"mode", "out"}), _take_np),
                             "take_along_axis": (frozenset(), _take_along_np)})
dispatch.NUMPY_CALLS.update({
    "take": _take_is_np,
    "take_along_axis": lambda args, kw: "axis" in kw and kw["axis"] is None})

dispatch.export(globals())
# Array.__getitem__/__setitem__ dispatch by these names (autograd has rules for both)
getitem = dispatch.op("__getitem__", getitem)
dispatch.op("__setitem__", setitem)
