"""``torch.nn.utils.init``: ``skip_init``."""
from __future__ import annotations

import inspect

from ..module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args, **kwargs) -> Module:
    """An instance of ``module_cls(*args, **kwargs)`` whose parameter values are unspecified
    (torch leaves them uninitialized; grilly builds the module as usual, which is one valid
    outcome)."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise TypeError(f"skip_init: expected a Module subclass, got {module_cls!r}")
    if "device" not in inspect.signature(module_cls).parameters:
        # as torch: a module that takes no device cannot be built without initializing it
        raise RuntimeError(f"skip_init: {module_cls.__name__} must support a 'device' argument")
    return module_cls(*args, **kwargs)
