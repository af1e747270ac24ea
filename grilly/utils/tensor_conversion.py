"""Names the seed's users type for moving data to and from the GPU, over grilly's one array
type: a "VulkanTensor" is a grilly Array on a Vulkan device. ``to_vulkan`` never falls back to
the CPU: without a usable Vulkan device it raises and says why."""
from __future__ import annotations

import numpy as np

from .. import backends as _backends
from ..array import api as gp
from ..array.array import Array

__all__ = ["VulkanTensor", "to_vulkan", "from_vulkan", "to_torch", "from_torch"]


def vulkan_device(op: str = "to_vulkan"):
    """The best Vulkan device (``vulkan``), or a RuntimeError naming ``op`` and the reason."""
    reg = _backends.registry
    reg.load()
    be = reg.backends.get("vulkan")
    devs = be.devices() if be is not None else []
    if not devs:
        why = getattr(be, "unavailable_reason", "") or "the Vulkan backend is not installed"
        raise RuntimeError(f"{op}: no usable Vulkan device ({why}); grilly does not fall back "
                           "to the CPU here: use gp.asarray(x, device='cpu') for that")
    return reg.device("vulkan")


def _is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def to_vulkan(x, dtype=None) -> Array:
    """``x`` (numpy array, list, scalar, torch tensor or grilly Array) as a grilly Array on the
    Vulkan device (a copy in device memory; a torch CPU tensor is read through DLPack)."""
    dev = vulkan_device("to_vulkan")
    if isinstance(x, Array):   # always a new array, as documented (never the caller's own)
        x = x.to_device(dev) if x.device != dev else gp.asarray(x, copy=True)
        return x if dtype is None else gp.astype(x, dtype, copy=False)
    if _is_torch(x):
        x = from_torch(x.detach().cpu())
        return to_vulkan(x, dtype)
    return gp.asarray(x, dtype=dtype, device=dev)


def from_vulkan(x) -> np.ndarray:
    """A grilly Array (on any device) as a numpy array on the host (a copy from the GPU)."""
    if not isinstance(x, Array):
        raise TypeError(f"from_vulkan: expected a grilly Array, got {type(x).__name__}")
    # a copy on every device: on cpu, asarray alone would be a view of the Array's buffer
    return np.array(x.to_device("cpu"), copy=True)


def from_torch(t) -> Array:
    """A torch CPU tensor as a grilly Array on the cpu device, sharing memory (DLPack)."""
    if not _is_torch(t):
        raise TypeError(f"from_torch: expected a torch tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise ValueError(f"from_torch: the tensor is on {t.device}; grilly reads CPU tensors "
                         "(call .cpu() first: a device-to-device copy needs a shared API)")
    return gp.from_dlpack(t.detach().contiguous(), device="cpu")


def to_torch(x):
    """A grilly Array as a torch CPU tensor: shares memory for a cpu-device Array (DLPack),
    copies from a Vulkan one."""
    import torch

    if not isinstance(x, Array):
        raise TypeError(f"to_torch: expected a grilly Array, got {type(x).__name__}")
    if str(x.device) != "cpu":
        x = x.to_device("cpu")
    return torch.from_dlpack(x)


class _VulkanTensorMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Array) and str(obj.device).startswith("vulkan")


class VulkanTensor(metaclass=_VulkanTensorMeta):
    """``VulkanTensor(data)`` is ``to_vulkan(data)``: a grilly Array on the Vulkan device;
    ``isinstance(x, VulkanTensor)`` is true for any grilly Array on a Vulkan device."""

    def __new__(cls, data, dtype=None) -> Array:
        return to_vulkan(data, dtype)
