"""Backend plugins: hookspecs, the registry, and the built-in backends."""
from .base import Backend, Device
from .hookspecs import hookimpl, hookspec
from .checked import KernelResultError
from .registry import ENTRY_POINT_GROUP, Overrides, overrides, registry


def register(plugin, name: str | None = None) -> None:
    """Register a backend plugin at run time (its backends and kernels join the dispatch tables)."""
    registry.register(plugin, name)


def unregister(plugin=None, name: str | None = None) -> None:
    """Remove a plugin registered earlier."""
    registry.unregister(plugin, name)


__all__ = ["Backend", "Device", "hookimpl", "hookspec", "registry", "register", "unregister",
           "ENTRY_POINT_GROUP", "KernelResultError", "Overrides", "overrides"]
