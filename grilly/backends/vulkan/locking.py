"""The wrappers every kernel of a Vulkan device's table runs in (backend._Kernels).

A kernel allocates, records into the shared command buffer (and the open fused run), or syncs:
one device-wide re-entrant lock makes each kernel call atomic with respect to other threads'
(docs/architecture.md, "Threads"); kernels that call kernels take it again.
"""
from __future__ import annotations


def with_ctx(fn, dev, *args):
    """``fn(dev.ctx, *args)`` under the device lock (creation kernels take the context)."""
    with dev.lock:
        return fn(dev.ctx, *args)


def locked(fn, lock, *args, **kw):
    """``fn(*args, **kw)`` under ``lock``."""
    with lock:
        return fn(*args, **kw)
