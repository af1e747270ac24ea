"""sole_owner for the Vulkan backend: whether nothing but its one holder references a buffer's
memory (then autograd hands a fresh gradient on as ``.grad`` without a copy).

From reference counts, as the CPU backend's (CPython before 3.14 only; elsewhere False): the
Buffer must have no holder but the caller's one, and its Allocation no Buffer but this one. The
recorder's bookkeeping (allocations pending work keeps alive, its hazard sets, its descriptor
cache) holds allocations too but is no holder, so it is subtracted. The thresholds are measured
on first use through the device table's own call path (the device lock's wrapper), on a probe
known to have one holder; an extra frame anywhere only makes the answer False.
"""
from __future__ import annotations

import functools
import sys
import threading

from .locking import locked

_COUNTED = sys.implementation.name == "cpython" and sys.version_info < (3, 14)
_LIMITS: list = []   # [(buffer refs, allocation refs)] once measured


def _counts(buf) -> tuple:
    """(references to buf, references to its allocation other than the recorder's)."""
    a = buf.alloc
    if a.const is not None:   # a shared scalar operand (kernels.scalar): never handed on
        return sys.maxsize, sys.maxsize
    return sys.getrefcount(buf), sys.getrefcount(a) - buf.ctx.recorder.references(a)


def sole_owner(buf) -> bool:
    """Whether nothing but its one holder references ``buf`` or its memory."""
    if not _COUNTED or buf.ctx.recorder.capturing is not None:
        return False   # (in a captured graph the copy is part of what replays)
    nb, na = _counts(buf)
    lim = _LIMITS[0] if _LIMITS else _calibrate()
    return nb <= lim[0] and na <= lim[1]


def _probe(buf) -> tuple:
    nb, na = _counts(buf)   # the frames sole_owner has
    return nb, na


class _Recorder:
    capturing = None

    @staticmethod
    def references(a) -> int:
        return 0


class _Ctx:
    recorder = _Recorder()


class _Alloc:
    __slots__ = ("const",)


class _Buf:
    __slots__ = ("alloc", "ctx")   # (as memory.Buffer: slots hold the references)


class _Holder:
    __slots__ = ("_buf",)


def _call(k, x) -> tuple:
    return k(x._buf)   # the shape of grilly.array.core.sole_owner's call


def _calibrate() -> tuple:
    h = _Holder()
    h._buf = _Buf()
    h._buf.alloc = _Alloc()
    h._buf.alloc.const = None
    h._buf.ctx = _Ctx()
    # through the wrapper every kernel of a device's table runs in
    lim = _call(functools.partial(locked, _probe, threading.RLock()), h)
    _LIMITS.append(lim)
    return lim


KERNELS: dict = {"sole_owner": sole_owner}
