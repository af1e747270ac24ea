"""Array API: interop (DLPack). Arrays export host memory as a kDLCPU tensor: zero-copy where
the device's memory is host-visible (the numpy buffer itself on the CPU backend; the mapped
allocation through a backend's ``host_view`` kernel, e.g. Vulkan), else a host copy. Imports go
through numpy's DLPack consumer, so any producer numpy accepts works (numpy, torch, grilly)."""
from __future__ import annotations

import ctypes
import functools

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
    if x._dtype is dt.bfloat16:   # numpy has no bfloat16 DLPack code: export the bits, retyped
        return _retype(h.view(np.uint16).__dlpack__(**kw), _DL_UINT, _DL_BFLOAT)
    return h.__dlpack__(**kw)


# DLPack dtype codes, and where the dtype sits in the two capsule structs (64-bit):
# DLManagedTensor starts with its DLTensor, whose dtype (code, bits, lanes) is at byte 20;
# DLManagedTensorVersioned has version, manager_ctx, deleter and flags (32 bytes) before it.
_DL_UINT, _DL_BFLOAT = 1, 4
_DTYPE_AT = {b"dltensor": 20, b"dltensor_versioned": 52}


@functools.cache
def _capsule_api():
    """ctypes' PyCapsule_GetName and PyCapsule_GetPointer, typed once."""
    api = ctypes.pythonapi
    name, ptr = api.PyCapsule_GetName, api.PyCapsule_GetPointer
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    ptr.restype, ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return name, ptr


def _capsule_dtype(capsule) -> tuple:
    """(address of the DLDataType in the capsule's tensor, its code, its bits)."""
    get_name, get_ptr = _capsule_api()
    name = get_name(capsule)
    if name not in _DTYPE_AT:
        raise BufferError(f"DLPack: unexpected capsule {name!r}")
    at = get_ptr(capsule, name) + _DTYPE_AT[name]
    return at, ctypes.c_uint8.from_address(at).value, ctypes.c_uint8.from_address(at + 1).value


def _retype(capsule, code: int, new_code: int):
    """``capsule`` with its 16-bit dtype code ``code`` changed to ``new_code`` (bfloat16 <->
    uint16: same bits, a code numpy does not know)."""
    at, c, bits = _capsule_dtype(capsule)
    if (c, bits) == (code, 16):
        ctypes.c_uint8.from_address(at).value = new_code
    return capsule


class _Bits:
    """A DLPack producer whose bfloat16 capsule numpy imports as uint16 (viewed back after)."""

    def __init__(self, x):
        self.x, self.bfloat16 = x, False

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()

    def __dlpack__(self, **kw):
        cap = self.x.__dlpack__(**kw)
        _, code, bits = _capsule_dtype(cap)
        if (code, bits) == (_DL_BFLOAT, 16):
            self.bfloat16 = True
            _retype(cap, _DL_BFLOAT, _DL_UINT)
        return cap


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
    src = _Bits(x)
    try:
        h = np.from_dlpack(src, copy=copy)
    except BufferError as e:
        raise ValueError(f"from_dlpack: cannot import the tensor ({e})") from None
    except (TypeError, RuntimeError) as e:
        raise TypeError(f"from_dlpack: cannot import the tensor ({e})") from None
    if src.bfloat16:
        h = h.view(dt.bfloat16.np)
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
