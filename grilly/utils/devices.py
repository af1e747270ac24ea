"""``get_device_manager()``: the seed's view of the GPUs, over grilly's device registry.

Selection follows grilly's rules (docs/vulkan.md, "Device choice"): ``VK_GPU_INDEX`` /
``VK_GPU_NAME`` pick a physical device at start-up, ``ALLOW_CPU_VULKAN=1`` lets a CPU Vulkan
driver (lavapipe) become the default; ``select`` changes the default device at run time."""
from __future__ import annotations

from .. import backends as _backends
from ..array import api as gp

__all__ = ["DeviceManager", "get_device_manager", "get_vulkan_backend"]


def get_vulkan_backend():
    """grilly's Vulkan backend object (its devices, kernels, ``unavailable_reason``)."""
    _backends.registry.load()
    be = _backends.registry.backends.get("vulkan")
    if be is None:
        raise RuntimeError("get_vulkan_backend: the Vulkan backend is not installed")
    return be


class DeviceManager:
    """The Vulkan devices (name, type, memory) and the default device."""

    @property
    def backend(self):
        return get_vulkan_backend()

    @property
    def devices(self) -> list[dict]:
        """One dict per usable Vulkan device: device name, GPU name, type, rank, memory."""
        out = []
        for d in self.backend.devices():
            p = d.phys
            heaps = [{"bytes": s, "device_local": bool(fl & 1)} for s, fl in p.heaps]
            out.append({"device": str(d), "name": p.name, "type": p.info()["type"],
                        "rank": d.rank, "memory_heaps": heaps})
        return out

    def memory_info(self, device=None) -> dict:
        """Device-local memory of ``device`` (default: ``vulkan``): heap size, and the driver's
        budget and usage (VK_EXT_memory_budget) where it reports them, in bytes."""
        d = _backends.registry.device(device or "vulkan")
        if d.backend.name != "vulkan":
            raise ValueError(f"memory_info: {d} is not a Vulkan device")
        p = d.phys
        local = [i for i, (_, fl) in enumerate(p.heaps) if fl & 1]
        out = {"device": str(d), "total": sum(p.heaps[i][0] for i in local)}
        budget = p.memory_budget()
        if budget:
            out["budget"] = sum(budget[i][0] for i in local)
            out["usage"] = sum(budget[i][1] for i in local)
        return out

    @property
    def current(self):
        """The default device."""
        return _backends.registry.default_device()

    def select(self, device) -> object:
        """Make a device the default: an index into ``devices``, a GPU name (substring) or a
        device name ("vulkan:1", "cpu"); returns it."""
        reg = _backends.registry
        if isinstance(device, int) and not isinstance(device, bool):
            devs = self.backend.devices()
            if not 0 <= device < len(devs):
                raise IndexError(f"select: no Vulkan device {device} (there are {len(devs)})")
            dev = devs[device]
        elif isinstance(device, str) and device.split(":")[0] not in reg.backends:
            hits = [d for d in self.backend.devices() if device.lower() in d.phys.name.lower()]
            if not hits:
                raise ValueError(f"select: no Vulkan device named like {device!r}")
            dev = hits[0]
        else:
            dev = reg.device(device)
        gp.set_default_device(dev)
        return dev


def get_device_manager() -> DeviceManager:
    """The device manager (the seed's ``utils.get_device_manager()``)."""
    return DeviceManager()
