"""Norse 1.1's small helpers on grilly Arrays: ``Lift`` / ``lift`` (a module or a step
function run over the first, time axis), the spike logic ``logical_and`` / ``logical_or`` /
``logical_xor``, the threshold functions by name (``super_fn``, ``triangle_fn``,
``heavi_tanh_fn``, ``heavi_erfc_fn``, ``heavi_circ_fn``) and the regularization accumulators
(``regularize_step``, ``spike_accumulator``, ``voltage_accumulator``, ``RegularizationCell``);
the names are re-exported by ``grilly.nn.snn.norse``.
"""
from __future__ import annotations

from typing import Any, Callable

from ...array import api as gp

from ...array.array import Array
from ..module import Module
from . import functional as F
from .norse_compat import _check_seq, _float, _is_stateful, _spike_fn

__all__ = ["Lift", "lift", "logical_and", "logical_or", "logical_xor", "super_fn",
           "triangle_fn", "heavi_tanh_fn", "heavi_erfc_fn", "heavi_circ_fn", "regularize_step",
           "spike_accumulator", "voltage_accumulator", "RegularizationCell"]


# ---- Lift ------------------------------------------------------------------------------------

class Lift(Module):
    """Norse's ``Lift(module)``: ``module`` applied to every step of (T, ...) input, the
    outputs stacked; a stateful module (its forward takes ``state``) threads its state and
    returns (outputs, state), and an input ``(x, state)`` starts from that state."""

    def __init__(self, module: Module) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"Lift: module must be a grilly nn.Module, got "
                            f"{type(module).__name__}")
        self.lifted_module = module
        self.is_stateful = _is_stateful(module)

    def forward(self, x: Array | tuple) -> Array | tuple:
        """The lifted module over the first axis of x (or of x[0] for a tuple (x, state))."""
        state = None
        if isinstance(x, tuple):
            if len(x) != 2:
                raise ValueError(f"Lift: a tuple input must be (input, state), got {len(x)} "
                                 "entries")
            x, state = x
        x = _check_seq(x, "Lift", "x")
        outs = []
        for xt in gp.unstack(x, axis=0):
            if self.is_stateful:
                out, state = self.lifted_module(xt, state)
            else:
                out = self.lifted_module(xt)
            outs.append(out)
        y = gp.stack(outs, axis=0)
        return (y, state) if self.is_stateful else y


class _Lifted:
    """``lift``'s callable (a class, so that it pickles)."""

    def __init__(self, activation: Callable, p: Any = None) -> None:
        self.activation, self.p = activation, p

    def __call__(self, input_tensor: Array, **kwargs) -> tuple:
        """(outputs (T, ...), the last state)."""
        if self.p is not None and "p" not in kwargs:
            kwargs["p"] = self.p
        state = kwargs.pop("state", None)
        x = _check_seq(input_tensor, "lift", "input_tensor")
        outs = []
        for xt in gp.unstack(x, axis=0):
            # state=None too: grilly's functional steps take None as their initial state
            out, state = self.activation(xt, state=state, **kwargs)
            outs.append(out)
        return gp.stack(outs, axis=0), state


def lift(activation: Callable, p: Any = None) -> Callable:
    """Norse's ``lift``: ``activation(x, state=..., p=...) -> (out, state)`` as a function
    of (T, ...) input returning (outputs (T, ...), the last state); ``p`` is passed unless the
    call gives one."""
    if not callable(activation):
        raise TypeError(f"lift: activation must be callable, got {type(activation).__name__}")
    return _Lifted(activation, p)


# ---- spike logic and the threshold functions -------------------------------------------------

def logical_and(x: Array, y: Array) -> Array:
    """Norse's ``logical_and`` of spike (0/1) tensors: x y."""
    return F._check_input(x, "logical_and", "x") * F._check_input(y, "logical_and", "y")


def logical_xor(x: Array, y: Array) -> Array:
    """Norse's ``logical_xor`` of spike tensors: |x - y|."""
    return gp.abs(F._check_input(x, "logical_xor", "x") - F._check_input(y, "logical_xor", "y"))


def logical_or(x: Array, y: Array) -> Array:
    """Norse's ``logical_or`` of spike tensors: H(x + y) with the SuperSpike gradient."""
    return super_fn(F._check_input(x, "logical_or", "x") + F._check_input(y, "logical_or", "y"))


def _threshold_fn(method: str, op: str, x: Array, alpha) -> Array:
    x = F._check_input(x, op, "x")
    return _spike_fn(method, _float(alpha, "alpha", op), op)(x)


def super_fn(x: Array, alpha: float = 100.0) -> Array:
    """Norse's ``super_fn``: H(x) with the SuperSpike gradient 1 / (|x| + 1)^2 (Norse 1.1
    ignores alpha)."""
    return _threshold_fn("super", "super_fn", x, alpha)


def triangle_fn(x: Array, alpha: float = 0.3) -> Array:
    """Norse's ``triangle_fn``: H(x) with the gradient alpha max(1 - |x|, 0)."""
    return _threshold_fn("triangle", "triangle_fn", x, alpha)


def heavi_tanh_fn(x: Array, k: float) -> Array:
    """Norse's ``heavi_tanh_fn``: H(x) with the gradient 1 - tanh(k x)^2."""
    return _threshold_fn("tanh", "heavi_tanh_fn", x, k)


def heavi_erfc_fn(x: Array, k: float) -> Array:
    """Norse's ``heavi_erfc_fn``: H(x) with the gradient 2 exp(-(k x)^2) / sqrt(pi)."""
    return _threshold_fn("heavi_erfc", "heavi_erfc_fn", x, k)


def heavi_circ_fn(x: Array, k: float) -> Array:
    """Norse's ``heavi_circ_fn``: H(x) with the gradient k^3 / (x^2 + k^2)^1.5."""
    return _threshold_fn("circ", "heavi_circ_fn", x, k)


# ---- regularization --------------------------------------------------------------------------

def spike_accumulator(z: Array, _: Any, state: Any = None) -> Array:
    """Norse's ``spike_accumulator``: state (0 for None) plus the total count of z's spikes."""
    s = gp.sum(F._check_input(z, "spike_accumulator", "z"))
    return s if state is None else state + s


def voltage_accumulator(z: Array, s: Any, state: Any = None) -> Array:
    """Norse's ``voltage_accumulator``: state (zeros for None) plus the neuron state's
    membrane ``s.v``."""
    if not isinstance(getattr(s, "v", None), Array):
        raise TypeError(f"voltage_accumulator: s must be a neuron state with a membrane v (a "
                        f"grilly Array), got {type(s).__name__}")
    return s.v if state is None else state + s.v


def regularize_step(z: Array, s: Any, accumulator: Callable = spike_accumulator,
                    state: Any = None) -> tuple:
    """Norse's ``regularize_step``: (z, accumulator(z, s, state)), the term to add to a loss."""
    if not callable(accumulator):
        raise TypeError(f"regularize_step: accumulator must be callable, got "
                        f"{type(accumulator).__name__}")
    return z, accumulator(z, s, state)


class RegularizationCell(Module):
    """Norse's ``RegularizationCell(accumulator, state)``: ``z, reg = cell(z, s)`` accumulates
    over calls (its ``state``; set it to None to start again)."""

    def __init__(self, accumulator: Callable = spike_accumulator, state: Any = None) -> None:
        super().__init__()
        if not callable(accumulator):
            raise TypeError(f"RegularizationCell: accumulator must be callable, got "
                            f"{type(accumulator).__name__}")
        self.accumulator, self.state = accumulator, state

    def forward(self, z: Array, s: Any) -> tuple:
        """(z, the accumulated state)."""
        _, self.state = regularize_step(z, s, self.accumulator, self.state)
        return z, self.state
