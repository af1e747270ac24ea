"""The entry-point plugin of the built-in CPU backend (registered like any third-party one)."""
from ..hookspecs import hookimpl
from .backend import CpuBackend

_backend = CpuBackend()


@hookimpl
def grilly_backends():
    return [_backend]
