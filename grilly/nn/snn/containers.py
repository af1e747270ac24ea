"""SpikingJelly's containers (``activation_based.layer``): stateless layers applied to a whole
spike sequence with time folded into the batch (``SeqToANNContainer``), single-step modules
looped over time (``MultiStepContainer``), either by a flag (``StepModeContainer``), and the
recurrent wrappers ``ElementWiseRecurrentContainer`` and ``LinearRecurrentContainer``. The first
three are Sequentials, as SpikingJelly's, so their state_dict keys (``0.weight``, ...) and
indexing are SpikingJelly's. ``seq_to_ann_forward`` and ``multi_step_forward`` are its
``functional`` helpers (also ``snn.functional.*``)."""
from __future__ import annotations

from typing import Callable

from ...array import api as gp
from ...array.array import Array
from ..layers import Linear
from ..module import Module, Sequential
from .base import KeptState

__all__ = ["SeqToANNContainer", "MultiStepContainer", "StepModeContainer",
           "ElementWiseRecurrentContainer", "LinearRecurrentContainer"]


def _apply(x, modules):
    # a tuple x (values and indices, say) is the first module's positional arguments, as
    # SpikingJelly's; each later module gets the one output of the module before it
    args = x if isinstance(x, tuple) else (x,)
    if isinstance(modules, (list, tuple)):
        for m in modules:
            x = m(*args)
            args = (x,)
        return x
    return modules(*args)


def _check_seq(x, op: str, min_ndim: int = 1) -> Array:
    if not isinstance(x, gp.Array) or x.ndim < min_ndim or x.shape[0] == 0:
        want = "(T, ...) with T >= 1" if min_ndim == 1 else "(T, B, ...)"
        raise ValueError(f"{op}: expected an input {want}, got "
                         f"{getattr(x, 'shape', type(x).__name__)}")
    return x


def seq_to_ann_forward(x_seq: Array | tuple, stateless_module) -> Array | tuple:
    """SpikingJelly's ``functional.seq_to_ann_forward``: ``stateless_module`` (a module, a
    callable or a list of them) on x_seq (T, B, ...) reshaped to (T * B, ...), the result
    reshaped to (T, B, ...). A tuple x_seq (e.g. MaxPool's values and indices, each (T, B,
    ...)) is passed as the first module's arguments; a tuple result is reshaped item by
    item."""
    op = "seq_to_ann_forward"
    if isinstance(x_seq, tuple):
        if not x_seq:
            raise ValueError(f"{op}: x_seq is an empty tuple")
        for item in x_seq:
            _check_seq(item, op, 2)
        t, b = x_seq[0].shape[:2]
        if any(tuple(item.shape[:2]) != (t, b) for item in x_seq[1:]):
            raise ValueError(f"{op}: every Array of x_seq must share its (T, B) leading axes, "
                             f"got shapes {[tuple(item.shape) for item in x_seq]}")
        x = tuple(gp.reshape(item, (t * b,) + tuple(item.shape[2:])) for item in x_seq)
    else:
        _check_seq(x_seq, op, 2)
        t, b = x_seq.shape[:2]
        x = gp.reshape(x_seq, (t * b,) + tuple(x_seq.shape[2:]))
    y = _apply(x, stateless_module)
    if isinstance(y, tuple):
        return tuple(gp.reshape(item, (t, b) + tuple(item.shape[1:])) for item in y)
    return gp.reshape(y, (t, b) + tuple(y.shape[1:]))


def multi_step_forward(x_seq: Array, single_step_module) -> Array:
    """SpikingJelly's ``functional.multi_step_forward``: ``single_step_module`` (a module, a
    callable or a list of them) on each x_seq[t], the outputs stacked along time."""
    _check_seq(x_seq, "multi_step_forward")
    return gp.stack([_apply(x, single_step_module) for x in gp.unstack(x_seq, axis=0)], axis=0)


def chunk_multi_step_forward(split_size: int, x_seq: Array, multi_step_module) -> Array:
    """SpikingJelly's ``functional.chunk_multi_step_forward``: ``multi_step_module`` on chunks
    of ``split_size`` steps of x_seq, the outputs concatenated along time."""
    if isinstance(split_size, bool) or not isinstance(split_size, int) or split_size < 1:
        raise ValueError(f"chunk_multi_step_forward: split_size must be an int >= 1, got "
                         f"{split_size!r}")
    _check_seq(x_seq, "chunk_multi_step_forward")
    n = x_seq.shape[0]
    return gp.concat([multi_step_module(x_seq[i:i + split_size])
                      for i in range(0, n, split_size)], axis=0)


def _modules(op: str, modules) -> tuple:
    if not modules:
        raise ValueError(f"{op}: give at least one module")
    for m in modules:
        if getattr(m, "step_mode", "s") != "s":
            # as SpikingJelly's: the container decides how the steps run
            raise ValueError(f"{op}: {type(m).__name__}.step_mode must be 's' inside this "
                             f"container, got {m.step_mode!r}")
    return modules


class SeqToANNContainer(Sequential):
    """Run stateless modules (Conv2d, BatchNorm2d, pooling, Flatten, Linear...) on a sequence
    (T, B, ...) at once: the input is reshaped to (T * B, ...), the modules applied, and the
    result reshaped to (T, B, ...). SpikingJelly's container of the same name (a Sequential)."""

    def __init__(self, *modules: Module) -> None:
        super().__init__(*_modules("SeqToANNContainer", modules))

    def forward(self, x: Array) -> Array:
        """The modules on x (T, B, ...) with its first two axes merged, then split again."""
        if not isinstance(x, gp.Array) or x.ndim < 2:
            raise ValueError(f"SeqToANNContainer: expected an input (T, B, ...), got shape "
                             f"{getattr(x, 'shape', type(x).__name__)}")
        return seq_to_ann_forward(x, super().forward)


class MultiStepContainer(Sequential):
    """Run single-step modules (a spiking layer in step_mode 's', or any module taking one step)
    over a sequence (T, B, ...): one call per step, the outputs stacked along time.
    SpikingJelly's container of the same name (a Sequential). A layer returning a tuple (spikes
    and state) contributes its first element, the spikes."""

    def __init__(self, *modules: Module) -> None:
        super().__init__(*_modules("MultiStepContainer", modules))

    def _one_step(self, x):
        y = super().forward(x)
        return y[0] if isinstance(y, tuple) else y

    def forward(self, x: Array) -> Array:
        """The modules on each x[t] of x (T, B, ...), stacked to (T, B, ...)."""
        _check_seq(x, "MultiStepContainer")
        return multi_step_forward(x, self._one_step)


class StepModeContainer(Sequential):
    """SpikingJelly's ``StepModeContainer(stateful, step_mode='s', *modules)``: in step_mode 's'
    the modules on one step; in 'm' looped over the steps (``stateful``, as MultiStepContainer)
    or on the (T * B, ...) sequence at once (as SeqToANNContainer)."""

    def __init__(self, stateful: bool, step_mode: str = "s", *modules: Module) -> None:
        super().__init__(*_modules("StepModeContainer", modules))
        self.stateful = bool(stateful)
        self.step_mode = step_mode

    def forward(self, x: Array) -> Array:
        """One step ('s') or a (T, B, ...) sequence ('m')."""
        if self.step_mode == "s":
            return super().forward(x)
        if self.step_mode != "m":
            raise ValueError(f"StepModeContainer: step_mode must be 's' or 'm', got "
                             f"{self.step_mode!r}")
        if self.stateful:
            _check_seq(x, "StepModeContainer")
            return multi_step_forward(x, super().forward)
        return seq_to_ann_forward(x, super().forward)

    def extra_repr(self) -> str:
        return f"stateful={self.stateful}, step_mode={self.step_mode}"


class _Recurrent(KeptState, Module):
    """A container feeding its last output y[t-1] back (y[-1] = 0): ``y`` is the kept output,
    ``reset_state()`` (SpikingJelly's ``reset()``) forgets it; ``snn.reset(net)`` also resets the
    wrapped module."""

    def __init__(self, sub_module: Module, step_mode: str) -> None:
        super().__init__()
        op = type(self).__name__
        if not isinstance(sub_module, Module):
            raise TypeError(f"{op}: sub_module must be a grilly.nn Module, got "
                            f"{type(sub_module).__name__}")
        if getattr(sub_module, "step_mode", "s") != "s":
            raise ValueError(f"{op}: sub_module.step_mode must be 's' (the container runs the "
                             f"steps), got {sub_module.step_mode!r}")
        if step_mode not in ("s", "m"):
            raise ValueError(f"{op}: step_mode must be 's' or 'm', got {step_mode!r}")
        self.step_mode, self.sub_module, self.y = step_mode, sub_module, None

    def forward(self, x: Array) -> Array:
        """One step (step_mode 's'), or each step of a (T, ...) sequence ('m') stacked."""
        op = type(self).__name__
        if self.step_mode == "s":
            return self._step(x)
        if self.step_mode != "m":
            raise ValueError(f"{op}: step_mode must be 's' or 'm', got {self.step_mode!r}")
        return multi_step_forward(_check_seq(x, op), self._step)

    def _step(self, x: Array) -> Array:
        op = type(self).__name__
        if not isinstance(x, gp.Array):
            raise TypeError(f"{op}: expected a grilly Array, got {type(x).__name__}")
        want = self._y_shape(x)
        if self.y is None:
            y = gp.zeros(want, dtype=x.dtype, device=x.device)
        elif self.y.shape != want:
            raise ValueError(f"{op}: the kept output has shape {self.y.shape}, this input needs "
                             f"{want}; call snn.reset(net) before changing the batch shape")
        else:
            y = self.y
        self.y = self.sub_module(self._input(y, x))
        return self.y

    def reset_state(self) -> None:
        """A new sequence: the next step feeds back zeros."""
        self.y = None

    reset = reset_state

    def detach_state(self) -> None:
        """Keep the last output but cut its graph (truncated BPTT)."""
        if self.y is not None:
            self.y = self.y.detach()


class ElementWiseRecurrentContainer(_Recurrent):
    """SpikingJelly's ``ElementWiseRecurrentContainer(sub_module, element_wise_function,
    step_mode)``: y[t] = sub_module(f(y[t-1], x[t])), y[-1] = 0; f element-wise, e.g.
    ``lambda y, x: x + y``; sub_module keeps the input's shape."""

    def __init__(self, sub_module: Module, element_wise_function: Callable,
                 step_mode: str = "s") -> None:
        super().__init__(sub_module, step_mode)
        if not callable(element_wise_function):
            raise TypeError(f"ElementWiseRecurrentContainer: element_wise_function must be "
                            f"callable, got {type(element_wise_function).__name__}")
        self.element_wise_function = element_wise_function

    def _y_shape(self, x):
        return tuple(x.shape)

    def _input(self, y, x):
        return self.element_wise_function(y, x)

    def extra_repr(self) -> str:
        return f"element-wise function={self.element_wise_function}, step_mode={self.step_mode}"


class LinearRecurrentContainer(_Recurrent):
    """SpikingJelly's ``LinearRecurrentContainer(sub_module, in_features, out_features, bias,
    step_mode)``: y[t] = sub_module(rc(concat(x[t], y[t-1]))), rc a Linear(in_features +
    out_features, in_features) (state_dict keys ``rc.weight``, ``rc.bias``), y[-1] = 0 of shape
    (..., out_features)."""

    def __init__(self, sub_module: Module, in_features: int, out_features: int,
                 bias: bool = True, step_mode: str = "s", *, device=None, dtype=None) -> None:
        super().__init__(sub_module, step_mode)
        for name, v in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"LinearRecurrentContainer: {name} must be an int >= 1, got "
                                 f"{v!r}")
        self.sub_module_out_features = out_features
        self.rc = Linear(in_features + out_features, in_features, bias, device=device,
                         dtype=dtype)

    def _y_shape(self, x):
        return tuple(x.shape[:-1]) + (self.sub_module_out_features,)

    def _input(self, y, x):
        return self.rc(gp.concat([x, y], axis=-1))

    def extra_repr(self) -> str:
        return f"step_mode={self.step_mode}"
