"""Devices, the default device, and the namespace info object."""
from __future__ import annotations

from contextlib import contextmanager

from ..backends import registry
from . import dispatch
from . import dtypes as dt

__all__ = ["devices", "default_device", "set_default_device", "device_scope", "synchronize",
           "__array_namespace_info__", "astype"]


def devices() -> list:
    """Every device grilly can place arrays on."""
    return registry.devices()


def default_device():
    """The device arrays are created on when none is given."""
    return registry.default_device()


def _default_device_key():
    """This thread's default device (a Device: one object per device), on which grilly.jit keys
    a graph (a creation op without ``device=`` in a traced function made its array there)."""
    return registry.default_device()


dispatch.mode_keys.append(_default_device_key)


def set_default_device(device) -> None:
    """Set the default device (a Device or a name such as 'cpu' or 'vulkan:0'); None resets it."""
    registry.set_default_device(device)


def synchronize(device=None) -> None:
    """Wait until the work queued on ``device`` (default: the default device) has finished."""
    (registry.default_device() if device is None else registry.device(device)).synchronize()


@contextmanager
def device_scope(device):
    """Within the block, arrays this thread creates go on ``device`` by default (other threads
    keep theirs)."""
    d = registry.push_scope(device)
    try:
        yield d
    finally:
        registry.pop_scope()


def astype(x, dtype, /, *, copy: bool = True, device=None):
    """``x`` cast to ``dtype`` (optionally on another device)."""
    from .core import check_array, check_device_dtype, kernel, resolve_device, wrap

    check_array(x, "astype")
    d = dt.as_dtype(dtype, "astype")
    if device is not None:
        x = x.to_device(resolve_device(device))
    if d is x.dtype and not copy:
        return x
    if x.dtype.kind == "c" and d.kind != "c":
        raise TypeError(f"astype: casting complex {x.dtype.name} to real {d.name} is not allowed")
    check_device_dtype(x.device, d, "astype")
    return wrap(kernel(x.device, "astype")(x._buf, d), d, x.device)


class Info:
    """The object __array_namespace_info__() returns."""

    def capabilities(self) -> dict:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return default_device()

    def device_info(self, *, device=None) -> dict:
        """What the backend probed on ``device`` (an extension: features, limits, memory)."""
        from .core import resolve_device

        dev = resolve_device(device)
        return dev.backend.info(dev)

    def default_dtypes(self, *, device=None) -> dict:
        return {"real floating": dt.float64, "complex floating": dt.complex128,
                "integral": dt.int64, "indexing": dt.int64}

    def devices(self) -> tuple:
        # 2025.12 made this a tuple (it was a list before)
        return tuple(devices())

    def dtypes(self, *, device=None, kind=None) -> dict:
        from .core import resolve_device

        dev = resolve_device(device)
        if kind in ("bfloat16", "float16"):   # not Array API dtypes: each under its own kind
            d = getattr(dt, kind)
            return {kind: d} if dev.backend.supports_dtype(dev, d) else {}
        out = {d.name: d for d in dt.STANDARD if dev.backend.supports_dtype(dev, d)}
        if kind is None:
            return out
        return {n: d for n, d in out.items() if dt.isdtype(d, kind)}


def __array_namespace_info__() -> Info:
    """Inspection of the namespace: capabilities, devices, dtypes."""
    return Info()

dispatch.export(globals())
