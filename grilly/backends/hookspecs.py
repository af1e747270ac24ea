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
    """Return extra or overriding kernels {op name: callable} for the backend named ``backend``.

    Later-registered plugins win, so a plugin can replace a built-in kernel or give a fused
    kernel for an op the array layer would otherwise compose.
    """
