"""The pluggy hooks a grilly backend plugin implements.

A plugin is any object or module with ``@hookimpl`` functions. It is found through the
``grilly.backends`` entry-point group (the built-in backends register that way too) or
registered at run time with ``grilly.backends.register(plugin)``.
"""
from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("grilly")
hookimpl = pluggy.HookimplMarker("grilly")


@hookspec
def grilly_backends() -> list:
    """Return the Backend objects this plugin provides (each owns its devices and kernels)."""


@hookspec
def grilly_kernels(backend: str) -> dict:
    """Return extra kernels {op name: callable} for the backend named ``backend``.

    A plain dict may only add kernels the backend lacks (a fused kernel for an op the array
    layer would otherwise compose); replacing a kernel another plugin provides needs
    ``grilly.backends.overrides({...})`` (logged; later plugins' overrides win). A plain dict
    that would replace one is refused with a warning (docs/backends.md).
    """
