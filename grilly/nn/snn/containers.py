"""Stateless layers applied to a whole spike sequence: time folded into the batch."""
from __future__ import annotations

from ...array import api as gp
from ..module import Module, Sequential

__all__ = ["SeqToANNContainer"]


class SeqToANNContainer(Module):
    """Run stateless modules (Conv2d, BatchNorm2d, pooling, Flatten, Linear...) on a sequence
    (T, B, ...) at once: the input is reshaped to (T * B, ...), the modules applied, and the
    result reshaped to (T, B, ...). SpikingJelly's container of the same name."""

    def __init__(self, *modules: Module) -> None:
        super().__init__()
        if not modules:
            raise ValueError("SeqToANNContainer: give at least one module")
        self.module = modules[0] if len(modules) == 1 else Sequential(*modules)

    def forward(self, x):
        """The modules on x (T, B, ...) with its first two axes merged, then split again."""
        if x.ndim < 2:
            raise ValueError(f"SeqToANNContainer: expected an input (T, B, ...), got shape "
                             f"{x.shape}")
        t, b = x.shape[:2]
        y = self.module(gp.reshape(x, (t * b,) + tuple(x.shape[2:])))
        return gp.reshape(y, (t, b) + tuple(y.shape[1:]))
