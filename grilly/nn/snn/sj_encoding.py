"""SpikingJelly's stateful encoders (``encoding.PeriodicEncoder``, ``LatencyEncoder``,
``WeightedPhaseEncoder``): the first call encodes its input into a (T, ...) spike train, kept as
the memory ``spike``; every call (that one included) returns the next step ``spike[t]``, t
cycling through 0 .. T-1, until ``reset()`` (``snn.functional.reset_net``). In step_mode 'm'
each step of the given sequence is one such call, as SpikingJelly's MemoryModule. No gradient
flows through them (spike trains of a threshold)."""
from __future__ import annotations

import math
import numbers

from ...array import api as gp

from ...array.array import Array
from . import base
from .checks import _check_input

__all__ = ["StatefulEncoder", "PeriodicEncoder", "LatencyEncoder", "WeightedPhaseEncoder"]


class StatefulEncoder(base.MemoryModule):
    """SpikingJelly's ``encoding.StatefulEncoder(T, step_mode)``: subclasses define
    ``single_step_encode(x)`` (the (T, ...) train of x); memories ``spike`` and ``t``."""

    def __init__(self, T: int, step_mode: str = "s") -> None:  # noqa: N803
        super().__init__()
        self.step_mode = step_mode
        if isinstance(T, bool) or not isinstance(T, numbers.Integral) or T < 1:
            raise ValueError(f"{type(self).__name__}: T must be an int >= 1, got {T!r}")
        self.T = int(T)
        self.register_memory("spike", None)
        self.register_memory("t", 0)

    def single_step_forward(self, x: Array | None = None) -> Array:
        """The next step of the kept spike train (encoding ``x`` on the first call)."""
        if self.spike is None:
            self.spike = self.single_step_encode(x)
        out = self.spike[self.t]
        self.t = (self.t + 1) % self.spike.shape[0]
        return out

    def single_step_encode(self, x: Array) -> Array:
        """The (T, ...) spike train of ``x``: a subclass defines it."""
        raise NotImplementedError(f"{type(self).__name__}: a StatefulEncoder defines "
                                  "single_step_encode(x)")

    def extra_repr(self) -> str:
        return f"T={self.T}, step_mode={self.step_mode}"


class PeriodicEncoder(StatefulEncoder):
    """SpikingJelly's ``encoding.PeriodicEncoder(spike, step_mode)``: replays a given (T, ...)
    spike train periodically (the first call's input is the train)."""

    def __init__(self, spike: Array, step_mode: str = "s") -> None:
        if not isinstance(spike, Array) or spike.ndim < 1:
            raise TypeError("PeriodicEncoder: spike must be a (T, ...) grilly Array, got "
                            f"{getattr(spike, 'shape', type(spike).__name__)}")
        super().__init__(spike.shape[0], step_mode)

    def single_step_encode(self, spike: Array) -> Array:
        """The given train itself."""
        if not isinstance(spike, Array) or spike.ndim < 1:
            raise TypeError("PeriodicEncoder: the first call's input is the (T, ...) spike train, "
                            f"got {getattr(spike, 'shape', type(spike).__name__)}")
        return spike


class LatencyEncoder(StatefulEncoder):
    """SpikingJelly's ``encoding.LatencyEncoder(T, enc_function='linear', step_mode)``: one
    spike per value x in [0, 1] at step round((T - 1)(1 - x)) (``'linear'``) or round(T - 1 -
    log(alpha x + 1)), alpha = e^(T - 1) - 1 (``'log'``): larger values fire earlier."""

    def __init__(self, T: int, enc_function: str = "linear", step_mode: str = "s") -> None:  # noqa: N803
        super().__init__(T, step_mode)
        if enc_function not in ("linear", "log"):
            raise NotImplementedError(f"LatencyEncoder: enc_function={enc_function!r} is not "
                                      "supported; 'linear' or 'log'")
        self.enc_function = enc_function
        if enc_function == "log":
            self.alpha = math.exp(self.T - 1.0) - 1.0

    def single_step_encode(self, x: Array) -> Array:
        """The (T, ...) one-spike train of x."""
        x = _check_input(x, "LatencyEncoder", "x").detach()
        if self.enc_function == "log":
            t_f = (self.T - 1.0) - gp.log(self.alpha * x + 1.0)
        else:
            t_f = (self.T - 1.0) * (1.0 - x)
        t_f = gp.round(t_f)
        steps = gp.reshape(gp.arange(self.T, dtype=x.dtype, device=x.device),
                           (self.T,) + (1,) * x.ndim)
        # a step outside 0 .. T-1 (x outside [0, 1]) gives no spike; SpikingJelly's one_hot raises
        return gp.astype(steps == t_f, x.dtype)


class WeightedPhaseEncoder(StatefulEncoder):
    """SpikingJelly's ``encoding.WeightedPhaseEncoder(K, step_mode)``: x in [0, 1 - 2^-K] as its
    K binary digits, step i firing for the weight 2^-(i+1) (a ValueError outside that range)."""

    def __init__(self, K: int, step_mode: str = "s") -> None:  # noqa: N803
        super().__init__(K, step_mode)

    def single_step_encode(self, x: Array) -> Array:
        """The (K, ...) binary-digit train of x."""
        x = _check_input(x, "WeightedPhaseEncoder", "x").detach()
        hi = 1.0 - 2.0 ** (-self.T)
        if not bool(gp.all((x >= 0) & (x <= hi))):
            raise ValueError(f"WeightedPhaseEncoder: x must lie in [0, 1 - 2^-K] = [0, {hi}]")
        rest, w, out = x, 0.5, []
        for _ in range(self.T):
            s = gp.astype(rest >= w, x.dtype)
            rest = rest - w * s
            out.append(s)
            w *= 0.5
        return gp.stack(out, axis=0)
