"""SpikingJelly's stateful and small layers (``activation_based.layer``): Dropout and Dropout2d
keeping one mask over a whole sequence, SynapseFilter, Delay, VotingLayer, PrintShapeModule.
Their state is forgotten by ``reset()`` / ``snn.reset(net)`` (SpikingJelly's
``functional.reset_net``)."""
from __future__ import annotations

import math
import numbers

from ...array import api as gp
from ...array.defaults import float_or_default
from ...array.array import Array
from .. import functional as NF
from ..module import Module
from ..parameter import Parameter
from .base import KeptState
from .checks import _check_mode

__all__ = ["Dropout", "Dropout2d", "SynapseFilter", "Delay", "VotingLayer", "PrintShapeModule"]


def _check_seq(x, op: str) -> Array:
    if not isinstance(x, gp.Array) or x.ndim < 1 or x.shape[0] == 0:
        raise ValueError(f"{op}: step_mode 'm' expects a sequence (T, ...) with T >= 1, got "
                         f"{getattr(x, 'shape', type(x).__name__)}")
    return x


class Dropout(KeptState, Module):
    """SpikingJelly's ``layer.Dropout(p=0.5, step_mode)``: while training, one mask (0 or
    1 / (1 - p)) drawn at the first step of a sequence multiplies every step until ``reset()``
    (or ``snn.reset(net)``); identity in eval mode."""

    def __init__(self, p: float = 0.5, step_mode: str = "s") -> None:
        super().__init__()
        op = type(self).__name__
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p < 1:
            raise ValueError(f"{op}: p must be in [0, 1), got {p!r}")
        self.p, self.step_mode = float(p), _check_mode(step_mode, op)
        self.mask = None

    def _draw(self, one: Array) -> Array:
        return NF.dropout(gp.ones_like(one), self.p, training=True)

    def forward(self, x: Array) -> Array:
        """x times the sequence's mask (training), or x (eval)."""
        op = type(self).__name__
        if _check_mode(self.step_mode, op) == "m":
            _check_seq(x, op)
        if not self.training:
            return x
        one = x if self.step_mode == "s" else x[0]
        if self.mask is None or self.mask.shape != one.shape:
            self.mask = self._draw(one)
        return x * self.mask

    def reset_state(self) -> None:
        """A new sequence: the next training call draws a new mask."""
        self.mask = None

    reset = reset_state

    def extra_repr(self) -> str:
        return f"p={self.p}, step_mode={self.step_mode}"


class Dropout2d(Dropout):
    """SpikingJelly's ``layer.Dropout2d(p=0.2, step_mode)``: whole channels of one step (B, C,
    H, W) dropped (torch's dropout2d), the mask kept over the sequence until ``reset()``."""

    def __init__(self, p: float = 0.2, step_mode: str = "s") -> None:
        super().__init__(p, step_mode)

    def _draw(self, one: Array) -> Array:
        return NF.dropout2d(gp.ones_like(one), self.p, training=True)


class SynapseFilter(KeptState, Module):
    """SpikingJelly's ``layer.SynapseFilter(tau=100.0, learnable=False, step_mode)``: the
    current I = I - (1 - x) I / tau + x (starting at 0), returned each step; ``learnable``
    learns 1/tau = sigmoid(w), w starting at -log(tau - 1) (state_dict key ``w``; ``dtype`` its
    dtype, float32 by default)."""

    def __init__(self, tau: float = 100.0, learnable: bool = False, step_mode: str = "s", *,
                 dtype=None) -> None:
        super().__init__()
        if isinstance(tau, bool) or not isinstance(tau, numbers.Real) or not tau > 1:
            raise ValueError(f"SynapseFilter: tau must be a number > 1, got {tau!r}")
        self.step_mode, self.learnable = _check_mode(step_mode, "SynapseFilter"), bool(learnable)
        if self.learnable:
            self.w = Parameter(gp.asarray(-math.log(float(tau) - 1.0), dtype=float_or_default(dtype)))
        else:
            self.tau = float(tau)
        self.out_i = None

    def _step(self, x: Array) -> Array:
        if self.out_i is None or self.out_i.shape != x.shape:   # SpikingJelly: zeros then
            self.out_i = gp.zeros_like(x)
        inv_tau = NF.sigmoid(gp.astype(self.w, x.dtype)) if self.learnable else 1.0 / self.tau
        self.out_i = self.out_i - (1.0 - x) * self.out_i * inv_tau + x
        return self.out_i

    def forward(self, x: Array) -> Array:
        """The filtered current of one step, or of each step of a (T, ...) sequence."""
        if not isinstance(x, gp.Array):
            raise TypeError(f"SynapseFilter: expected a grilly Array, got {type(x).__name__}")
        if _check_mode(self.step_mode, "SynapseFilter") == "s":
            return self._step(x)
        return gp.stack([self._step(xt) for xt in gp.unstack(_check_seq(x, "SynapseFilter"))])

    def reset_state(self) -> None:
        """A new sequence: the current starts from zero."""
        self.out_i = None

    reset = reset_state

    def detach_state(self) -> None:
        """Keep the current, cut its graph (truncated BPTT)."""
        if self.out_i is not None:
            self.out_i = self.out_i.detach()

    def extra_repr(self) -> str:
        # 1 / sigmoid(w) = 1 + exp(-w)
        tau = 1.0 + math.exp(-float(self.w.detach().item())) if self.learnable else self.tau
        return f"tau={tau}, learnable={self.learnable}, step_mode={self.step_mode}"


class Delay(KeptState, Module):
    """SpikingJelly's ``layer.Delay(delay_steps, step_mode)``: y[t] = x[t - delay_steps], zeros
    before the first input arrives; the queue is kept across calls until ``reset()``."""

    def __init__(self, delay_steps: int, step_mode: str = "s") -> None:
        super().__init__()
        if isinstance(delay_steps, bool) or not isinstance(delay_steps, int) or delay_steps < 0:
            raise ValueError(f"Delay: delay_steps must be an int >= 0, got {delay_steps!r}")
        self.delay_steps, self.step_mode = delay_steps, _check_mode(step_mode, "Delay")
        self.queue = []

    def _step(self, x: Array) -> Array:
        if self.queue and tuple(self.queue[-1].shape) != tuple(x.shape):
            # SpikingJelly would return the earlier batch's step, of the other shape
            raise ValueError(f"Delay: the queued steps have shape {tuple(self.queue[-1].shape)}"
                             f", this input {tuple(x.shape)}; call reset() (or snn.reset(net)) "
                             "before changing the batch shape")
        self.queue.append(x)
        if len(self.queue) > self.delay_steps:
            return self.queue.pop(0)
        return gp.zeros_like(x)

    def forward(self, x: Array) -> Array:
        """One step delayed, or each step of a (T, ...) sequence."""
        if not isinstance(x, gp.Array):
            raise TypeError(f"Delay: expected a grilly Array, got {type(x).__name__}")
        if _check_mode(self.step_mode, "Delay") == "s":
            return self._step(x)
        return gp.stack([self._step(xt) for xt in gp.unstack(_check_seq(x, "Delay"))])

    def reset_state(self) -> None:
        """A new sequence: the queue is emptied."""
        self.queue = []

    reset = reset_state

    def extra_repr(self) -> str:
        return f"delay_steps={self.delay_steps}, step_mode={self.step_mode}"


class VotingLayer(Module):
    """SpikingJelly's ``layer.VotingLayer(voting_size=10, step_mode)``: the mean of each group
    of ``voting_size`` consecutive features of the last axis (..., C * voting_size) -> (..., C),
    a trailing incomplete group dropped (avg_pool1d's floor); any step mode."""

    def __init__(self, voting_size: int = 10, step_mode: str = "s") -> None:
        super().__init__()
        if isinstance(voting_size, bool) or not isinstance(voting_size, int) or voting_size < 1:
            raise ValueError(f"VotingLayer: voting_size must be an int >= 1, got "
                             f"{voting_size!r}")
        self.voting_size, self.step_mode = voting_size, _check_mode(step_mode, "VotingLayer")

    def forward(self, x: Array) -> Array:
        """The per-class mean of the votes on the last axis."""
        _check_mode(self.step_mode, "VotingLayer")
        v = self.voting_size
        if not isinstance(x, gp.Array) or x.ndim < 1 or x.shape[-1] < v:
            raise ValueError(f"VotingLayer: expected an input (..., C * {v}) with C >= 1, got "
                             f"{getattr(x, 'shape', type(x).__name__)}")
        c = x.shape[-1] // v
        x = x[..., :c * v] if c * v != x.shape[-1] else x
        return gp.mean(gp.reshape(x, tuple(x.shape[:-1]) + (c, v)), axis=-1)

    def extra_repr(self) -> str:
        return f"voting_size={self.voting_size}, step_mode={self.step_mode}"


class PrintShapeModule(Module):
    """SpikingJelly's ``layer.PrintShapeModule(ext_str)``: prints ``ext_str`` and the input's
    shape, returns the input (debugging a net's shapes)."""

    def __init__(self, ext_str: str = "PrintShapeModule") -> None:
        super().__init__()
        self.ext_str = ext_str

    def forward(self, x: Array) -> Array:
        """x, after printing its shape."""
        print(self.ext_str, getattr(x, "shape", type(x).__name__))
        return x
