"""``Parameter``: a marker on a grilly Array (Array has __slots__, so it cannot be subclassed
cheaply). ``Parameter(x)`` sets ``x.requires_grad = True``, records ``x`` in a weak registry
and returns ``x`` itself; ``isinstance(x, Parameter)`` consults that registry."""
from __future__ import annotations

import weakref

from ..array import api as gp
from ..array.defaults import get_default_dtype
from ..array.dispatch import hooks as _hooks

__all__ = ["Parameter", "is_parameter"]

# id -> array; an entry is only trusted when it still points at the very same object.
_REGISTRY: "weakref.WeakValueDictionary[int, gp.Array]" = weakref.WeakValueDictionary()


def is_parameter(x) -> bool:
    """True when ``x`` is an Array that was marked by ``Parameter``."""
    return isinstance(x, gp.Array) and _REGISTRY.get(id(x)) is x


class _ParameterMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return is_parameter(obj)


class Parameter(metaclass=_ParameterMeta):
    """Mark an Array as a trainable parameter: returns the same Array, requires_grad set."""

    def __new__(cls, data=None, requires_grad: bool = True):
        if data is None:
            data = gp.empty((0,), dtype=get_default_dtype())
        if not isinstance(data, gp.Array):
            data = gp.asarray(data, dtype=get_default_dtype())
        data.requires_grad = bool(requires_grad)
        _REGISTRY[id(data)] = data
        return data


def _deepcopy_hook(src, out) -> None:
    if is_parameter(src):
        Parameter(out, src.requires_grad)


_hooks.deepcopy = _deepcopy_hook   # copy.deepcopy of a Parameter (a model) gives Parameters
