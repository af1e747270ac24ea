"""The Vulkan compute backend: SPIR-V kernels on every Vulkan device (lavapipe included).

Imports fine without a Vulkan loader or driver; then ``VULKAN_AVAILABLE`` is False and
``UNAVAILABLE_REASON`` says why.
"""
from .plugin import _backend

VULKAN_AVAILABLE: bool = bool(_backend.devices())
UNAVAILABLE_REASON: str = _backend.unavailable_reason

__all__ = ["VULKAN_AVAILABLE", "UNAVAILABLE_REASON"]
