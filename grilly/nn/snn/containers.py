"""Stateless layers applied to a whole spike sequence: time folded into the batch."""
from __future__ import annotations

from ...array import api as gp
from ..module import Module, Sequential

__all__ = ["SeqToANNContainer", "MultiStepContainer"]


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


class MultiStepContainer(Module):
    """Run single-step modules (a spiking layer in step_mode 's', or any module taking one step)
    over a sequence (T, B, ...): one call per step, the outputs stacked along time.
    SpikingJelly's container of the same name. A layer returning a tuple (spikes and state)
    contributes its first element, the spikes."""

    def __init__(self, *modules: Module) -> None:
        super().__init__()
        if not modules:
            raise ValueError("MultiStepContainer: give at least one module")
        self.module = modules[0] if len(modules) == 1 else Sequential(*modules)

    def forward(self, x):
        """The modules on each x[t] of x (T, B, ...), stacked to (T, B, ...)."""
        if not isinstance(x, gp.Array) or x.ndim < 1 or x.shape[0] == 0:
            raise ValueError(f"MultiStepContainer: expected an input (T, ...) with T >= 1, got "
                             f"{getattr(x, 'shape', type(x).__name__)}")
        outs = []
        for t in range(x.shape[0]):
            y = self.module(x[t])
            outs.append(y[0] if isinstance(y, tuple) else y)
        return gp.stack(outs, axis=0)
