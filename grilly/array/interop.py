"""Array API: interop (DLPack). Arrays export host memory as a kDLCPU tensor: zero-copy where
the device's memory is host-visible (the numpy buffer itself on the CPU backend; the mapped
allocation through a backend's ``host_view`` kernel, e.g. Vulkan), else a host copy. Imports go
through numpy's DLPack consumer, so any producer numpy accepts works (numpy, torch, grilly)."""
from __future__ import annotations

import numpy as np

from . import dispatch
from . import dtypes as dt
from .array import Array
from .core import check_array, kernel, resolve_device, wrap

__all__: list = []


def _zero_copy(device) -> bool:
    """Whether ``device`` keeps its buffers as host numpy arrays (DLPack can share them)."""
    return device.backend.name == "cpu"


def _shared_host(x: Array):
    """``x``'s memory as a numpy view shared with the device (a sync point), or None."""
    if _zero_copy(x._device):
        return x._host()
    view = x._device.kernels.get("host_view")
    return None if view is None else view(x._buf)


def dlpack_export(x: Array, stream=None, max_version=None, dl_device=None, copy=None):
    """The DLPack capsule of ``x`` (Array.__dlpack__)."""
    check_array(x, "__dlpack__")
    if stream is not None and stream != -1:
        raise ValueError("__dlpack__: grilly exports host memory; stream must be None")
    if copy not in (None, True, False):
        raise ValueError(f"__dlpack__: copy must be True, False or None, got {copy!r}")
    # copy=True needs no shared view: the host copy below is private already
    h = None if copy else _shared_host(x)
    if h is None:
        if copy is False:
            raise BufferError(f"__dlpack__: copy=False but the memory of device {x._device} is "
                              "not host-visible; only a copy can be exported")
        h = x._host()
    kw = {"copy": copy}
    if max_version is not None:
        kw["max_version"] = max_version
    if dl_device is not None:
        kw["dl_device"] = dl_device
    return h.__dlpack__(**kw)


def dlpack_device(x: Array) -> tuple:
    """(device type, device id) of the memory ``__dlpack__`` exports: the host CPU."""
    check_array(x, "__dlpack_device__")
    return (1, 0)  # kDLCPU: every backend exports through host memory


def from_dlpack(x, /, *, device=None, copy: bool | None = None) -> Array:
    """A grilly Array from any object exporting DLPack (on the CPU, or on ``device``)."""
    if copy not in (None, True, False):
        raise ValueError(f"from_dlpack: copy must be True, False or None, got {copy!r}")
    if isinstance(x, Array):
        dev = x._device if device is None else resolve_device(device, "from_dlpack")
        if dev is not x._device:
            if copy is False:
                raise ValueError(f"from_dlpack: copy=False but moving to {dev} needs a copy")
            return x.to_device(dev)
        if copy:
            return wrap(kernel(dev, "copy")(x._buf), x._dtype, dev)
        return x
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not implement __dlpack__")
    try:
        h = np.from_dlpack(x, copy=copy)
    except BufferError as e:
        raise ValueError(f"from_dlpack: cannot import the tensor ({e})") from None
    except (TypeError, RuntimeError) as e:
        raise TypeError(f"from_dlpack: cannot import the tensor ({e})") from None
    d = dt.from_numpy(h.dtype)
    dev = resolve_device(device, "from_dlpack")
    if _zero_copy(dev):
        return wrap(h, d, dev)  # numpy already honoured copy
    if copy is False:
        raise ValueError(f"from_dlpack: copy=False but device {dev} needs a copy")
    return wrap(kernel(dev, "from_host")(h, d), d, dev)

dispatch.export(globals())

# Array.__dlpack__ and __dlpack_device__ dispatch to these
dispatch.OPS["__dlpack__"] = dlpack_export
dispatch.OPS["__dlpack_device__"] = dlpack_device
