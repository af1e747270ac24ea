"""torch-style creation helpers: ``tensor``, ``zeros``, ``randn`` (with dtype, device and
requires_grad keywords) over the namespace."""
from __future__ import annotations

import operator

from .. import random as _random
from ..array import api as gp
from ..array.defaults import float_or_default
from ..array.array import Array

__all__ = ["tensor", "zeros", "randn"]


def _shape(size: tuple, op: str) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    try:   # ints and numpy integers (torch takes both); not bools, floats or strings
        if any(isinstance(s, bool) for s in size):
            raise TypeError
        size = tuple(operator.index(s) for s in size)
    except TypeError:
        raise TypeError(f"{op}: the shape must be non-negative ints, got {size!r}") from None
    if any(s < 0 for s in size):
        raise ValueError(f"{op}: the shape must be non-negative ints, got {size!r}")
    return size


def _finish(x: Array, requires_grad: bool) -> Array:
    return x.requires_grad_() if requires_grad else x


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False) -> Array:
    """A new Array holding a copy of ``data`` (torch.tensor); the dtype is ``gp.asarray``'s
    (Python floats are float64, the Array API default, where torch makes float32)."""
    return _finish(gp.asarray(data, dtype=dtype, device=device, copy=True), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad: bool = False) -> Array:
    """Zeros of ``size`` (``zeros(2, 3)`` or ``zeros((2, 3))``), of the default dtype."""
    return _finish(gp.zeros(_shape(size, "zeros"), dtype=float_or_default(dtype), device=device),
                   requires_grad)


def randn(*size, dtype=None, device=None, requires_grad: bool = False,
          generator=None) -> Array:
    """Standard normal samples of ``size``, of the default dtype (gp.random's generator)."""
    gen = generator if generator is not None else _random.default_generator
    x = gen.normal(0.0, 1.0, _shape(size, "randn"), dtype=float_or_default(dtype), device=device)
    return _finish(x, requires_grad)
