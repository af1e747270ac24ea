"""The entry-point plugin of the built-in Vulkan backend (registered like any third-party one)."""
from ..hookspecs import hookimpl
from . import backend

_backend = backend.VulkanBackend()


@hookimpl
def grilly_backends():
    return [_backend]
