"""Storage kernels of the CPU backend: buffers are numpy arrays (possibly strided views)."""
from __future__ import annotations

import sys

import numpy as np

from .pool import pool


def from_host(h: np.ndarray, dtype) -> np.ndarray:
    """A private copy of host data ``h`` as ``dtype``."""
    out = pool.empty(h.shape, dtype.np)
    np.copyto(out, h, casting="unsafe")
    return out


def to_host(buf: np.ndarray) -> np.ndarray:
    return buf


def empty(shape, dtype) -> np.ndarray:
    return pool.empty(tuple(shape), dtype.np)


def full(shape, value, dtype) -> np.ndarray:
    out = pool.empty(tuple(shape), dtype.np)
    out[...] = np.asarray(value, dtype=dtype.np) if not isinstance(value, np.ndarray) else value
    return out


def arange(start, step, n: int, dtype) -> np.ndarray:
    out = pool.empty((n,), dtype.np)
    if n:
        out[...] = start + step * np.arange(n, dtype=np.float64 if dtype.kind == "f" else None)
    return out


def linspace(start, stop, num: int, endpoint: bool, dtype) -> np.ndarray:
    out = pool.empty((num,), dtype.np)
    out[...] = np.linspace(start, stop, num, endpoint=endpoint)
    return out


def eye(n_rows: int, n_cols: int, k: int, dtype) -> np.ndarray:
    out = pool.empty((n_rows, n_cols), dtype.np)
    out[...] = 0
    i = np.arange(max(0, -k), max(0, min(n_rows, n_cols - k)))
    out[i, i + k] = 1
    return out


def astype(buf: np.ndarray, dtype) -> np.ndarray:
    out = pool.empty(buf.shape, dtype.np)
    if buf.dtype.kind == "c" and dtype.kind == "b":
        np.not_equal(buf, 0, out=out)  # either part nonzero, as numpy
        return out
    if buf.dtype.kind == "c" and dtype.kind != "c":
        buf = buf.real
    np.copyto(out, buf, casting="unsafe")
    return out


def assign(dst: np.ndarray, src: np.ndarray) -> None:
    """Copy ``src`` (broadcast) into the view ``dst``."""
    np.copyto(dst, src, casting="unsafe")


def reshape(buf: np.ndarray, shape, copy=None) -> np.ndarray:
    if copy:
        return buf.reshape(shape).copy()
    if copy is False:
        try:
            v = buf.view()
            v.shape = shape
            return v
        except AttributeError:
            raise ValueError("reshape: copy=False but the array's layout needs a copy") from None
    return buf.reshape(shape)


def permute(buf: np.ndarray, axes) -> np.ndarray:
    return buf.transpose(axes)


def broadcast_to(buf: np.ndarray, shape) -> np.ndarray:
    return np.broadcast_to(buf, shape)


def slice_view(buf: np.ndarray, key: tuple) -> np.ndarray:
    """The view ``buf[key]`` for a normalized key of ints and slices."""
    return buf[key + (Ellipsis,)]  # the Ellipsis keeps an all-int key a view, not a scalar


def copy(buf: np.ndarray) -> np.ndarray:
    out = pool.empty(buf.shape, buf.dtype)
    np.copyto(out, buf)
    return out


# Reference counts are an interpreter detail: sole_owner runs only on CPython before 3.14 (whose
# deferred and borrowed references make counts depend on context; elsewhere it says False, so
# gradients are copied), and its thresholds are measured at import on a buffer known to have
# one holder, through the same calls.
_COUNTED = sys.implementation.name == "cpython" and sys.version_info < (3, 14)


def _ref_counts(buf) -> tuple:
    """(references to buf, references to its base, 0 without one)."""
    base = buf.base
    return sys.getrefcount(buf), (0 if base is None else sys.getrefcount(base))


def _measure(buf) -> tuple:
    return _ref_counts(buf)   # the same frames as sole_owner's


class _Holder:
    __slots__ = ("buf",)


def _one_holder() -> tuple:
    h = _Holder()
    h.buf = np.empty(2)[:1]   # a view whose base nothing else holds
    return _measure(h.buf)


_ONE, _ONE_BASE = _one_holder()


def sole_owner(buf: np.ndarray) -> bool:
    """Whether nothing but the caller's one holder references buf's memory: no other holder of
    the array, no numpy view of it (a view holds its base), and, for a view carved from a pool
    block, no other holder of the block but the pool's list."""
    if not _COUNTED:
        return False
    n, nb = _ref_counts(buf)
    if n > _ONE:
        return False
    base = buf.base
    if base is None:
        return True
    return (type(base) is np.ndarray and base.base is None
            and nb <= _ONE_BASE + pool.holds(base))


KERNELS = {
    "from_host": from_host, "to_host": to_host, "empty": empty, "full": full, "arange": arange,
    "linspace": linspace, "eye": eye,
    "astype": astype, "assign": assign, "reshape": reshape, "permute": permute,
    "broadcast_to": broadcast_to, "slice": slice_view, "copy": copy, "sole_owner": sole_owner,
}
