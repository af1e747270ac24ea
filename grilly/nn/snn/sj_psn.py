"""SpikingJelly's parallel spiking neurons (``neuron.PSN``, ``MaskedPSN``, ``SlidingPSN``; Fang
et al. 2023): no reset, so the membranes of all T steps are one linear map of the inputs,
h = W x_seq + b over the time axis, and spike = surrogate(h). PSN learns a full (T, T) W,
MaskedPSN a W masked to the last k steps (blended in by ``lambda_``, which may also run step by
step once it reaches 1), SlidingPSN k weights shared by every step (any T, step by step too).
The default surrogate is SpikingJelly's ``ATan()`` (alpha 2); the bias starts at -1 and W
(except SlidingPSN's ``exp_init``) as torch's kaiming_uniform_(a=sqrt(5)), from gp.random."""
from __future__ import annotations

import math
import numbers

from ...array import api as gp
from ...array.defaults import float_or_default

from ...array.array import Array
from .. import init as _init
from ..module import Module
from ..parameter import Parameter
from . import base
from .surrogate import ATan, check_surrogate

__all__ = ["PSN", "MaskedPSN", "SlidingPSN"]


def _pos_int(v, name: str, op: str) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
        raise ValueError(f"{op}: {name} must be an int >= 1, got {v!r}")
    return int(v)


def _seq(x, T: int | None, op: str) -> Array:  # noqa: N803
    if not isinstance(x, Array) or x.ndim < 1 or x.shape[0] == 0:
        raise ValueError(f"{op}: x_seq must be an Array (T, N, ...) with T >= 1, got "
                         f"{getattr(x, 'shape', type(x).__name__)}")
    if T is not None and x.shape[0] != T:
        raise ValueError(f"{op}: x_seq has {x.shape[0]} steps, the layer was built for T={T}")
    return x


def _sg(surrogate_function, op: str):
    return ATan(2.0) if surrogate_function is None else check_surrogate(surrogate_function, op)


def _square(T: int, dtype) -> Parameter:  # noqa: N803
    w = Parameter(gp.zeros((T, T), dtype=dtype))
    _init.kaiming_uniform_(w, a=math.sqrt(5))
    return w


def _gemm(weight: Array, bias: Array, x_seq: Array, sg) -> Array:
    """surrogate(W x + b) over the time axis of a (T, ...) sequence."""
    h = weight @ gp.reshape(x_seq, (x_seq.shape[0], -1)) + bias
    return sg(gp.reshape(h, x_seq.shape))


class PSN(base.MultiStepModule, Module):
    """SpikingJelly's ``neuron.PSN(T, surrogate_function=ATan())``: spikes surrogate(W x_seq +
    b) of a (T, N, ...) sequence, W (T, T) and b (T, 1) learnable (keys ``weight``, ``bias``);
    step_mode 'm' only."""

    def __init__(self, T: int, surrogate_function=None, dtype=None) -> None:  # noqa: N803
        super().__init__()
        self.step_mode = "m"
        self.T = _pos_int(T, "T", "PSN")
        self.surrogate_function = _sg(surrogate_function, "PSN")
        dtype = float_or_default(dtype)
        self.weight = _square(self.T, dtype)
        self.bias = Parameter(gp.full((self.T, 1), -1.0, dtype=dtype))

    def forward(self, x_seq: Array) -> Array:
        """The (T, N, ...) spikes of a (T, N, ...) input sequence."""
        x_seq = _seq(x_seq, self.T, "PSN")
        return _gemm(self.weight, self.bias, x_seq, self.surrogate_function)

    def extra_repr(self) -> str:
        return f"T={self.T}"


class MaskedPSN(base.MemoryModule):
    """SpikingJelly's ``neuron.MaskedPSN(k, T, lambda_init=0., surrogate_function=ATan(),
    step_mode='s')``: PSN with W (lambda mask0 + (1 - lambda) ones) W, mask0 keeping each
    step's last k inputs (W mask0 once ``lambda_`` >= 1); keys ``weight``, ``bias``,
    ``_lambda_``, ``mask0``, ``mask1``. 'm' takes T steps; 's' needs ``lambda_`` >= 1 (a
    ValueError otherwise) and at most T steps until ``reset()`` (an OverflowError after)."""

    def __init__(self, k: int, T: int, lambda_init: float = 0.0,  # noqa: N803
                 surrogate_function=None, step_mode: str = "s", dtype=None) -> None:
        super().__init__()
        op = "MaskedPSN"
        self.register_memory("time_step", 0)
        self.register_memory("queue", [])
        self.step_mode = step_mode
        self.k, self.T = _pos_int(k, "k", op), _pos_int(T, "T", op)
        self.surrogate_function = _sg(surrogate_function, op)
        dtype = float_or_default(dtype)
        self.register_buffer("_lambda_", gp.asarray(float(lambda_init), dtype=dtype))
        self.weight = _square(self.T, dtype)
        self.bias = Parameter(gp.full((self.T, 1), -1.0, dtype=dtype))
        # the band of the last k steps: row t keeps columns t - k + 1 .. t
        idx = gp.arange(self.T)
        diff = gp.reshape(idx, (-1, 1)) - gp.reshape(idx, (1, -1))
        self.register_buffer("mask0", gp.astype((diff >= 0) & (diff < self.k), dtype))
        self.register_buffer("mask1", gp.ones((self.T, self.T), dtype=dtype))

    @property
    def lambda_(self) -> Array:
        """The mask's blend (a 0-d buffer): 0 the full W, 1 only the last k steps."""
        return self._lambda_

    @lambda_.setter
    def lambda_(self, value) -> None:
        lam = self._lambda_
        self._lambda_ = gp.asarray(float(value), dtype=lam.dtype, device=lam.device)

    def masked_weight(self) -> Array:
        """The (T, T) weight in use: W mask0 once lambda_ >= 1, else the blend."""
        lam = float(self._lambda_)
        if lam >= 1.0:
            return self.weight * self.mask0
        return (lam * self.mask0 + (1.0 - lam) * self.mask1) * self.weight

    def single_step_forward(self, x: Array) -> Array:
        """One step t: surrogate(sum over the last k inputs of W[t, s] x[s] + b[t])."""
        op = "MaskedPSN"
        if float(self._lambda_) < 1.0:
            raise ValueError(f"{op}: step_mode 's' needs lambda_ >= 1 (the masked weight), got "
                             f"{float(self._lambda_)}")
        t = self.time_step
        if t + 1 > self.T:
            raise OverflowError(f"{op}(T={self.T}) has run {t + 1} steps; reset() it first")
        queue = [*self.queue, gp.reshape(x, (-1,))][-self.k:]
        w = self.masked_weight()[t, t + 1 - len(queue):t + 1]
        h = gp.sum(gp.reshape(w, (-1, 1)) * gp.stack(queue, axis=0), axis=0) + self.bias[t]
        self.queue, self.time_step = queue, t + 1
        return self.surrogate_function(gp.reshape(h, x.shape))

    def multi_step_forward(self, x_seq: Array) -> Array:
        """The (T, N, ...) spikes of a T-step sequence (the memories untouched)."""
        x_seq = _seq(x_seq, self.T, "MaskedPSN")
        return _gemm(self.masked_weight(), self.bias, x_seq, self.surrogate_function)

    def extra_repr(self) -> str:
        return f"k={self.k}, T={self.T}, lambda_={float(self._lambda_)}, step_mode={self.step_mode}"


class SlidingPSN(base.MemoryModule):
    """SpikingJelly's ``neuron.SlidingPSN(k, exp_init=True, surrogate_function=ATan(),
    step_mode='s')``: h[t] = sum_{j < k} weight[k - 1 - j] x[t - j] + bias (inputs before the
    first step are absent), spike = surrogate(h); ``weight`` (k,) starts at 2^-(k-1), ..., 1/2,
    1 (``exp_init``) or kaiming-uniform, ``bias`` -1 (0-d). Any T; 's' keeps the last k inputs
    (``queue``) until ``reset()``."""

    def __init__(self, k: int, exp_init: bool = True, surrogate_function=None,
                 step_mode: str = "s", dtype=None) -> None:
        super().__init__()
        self.register_memory("queue", [])
        self.step_mode = step_mode
        self.k = _pos_int(k, "k", "SlidingPSN")
        self.surrogate_function = _sg(surrogate_function, "SlidingPSN")
        dtype = float_or_default(dtype)
        if exp_init:
            w = gp.asarray([2.0 ** -(self.k - 1 - i) for i in range(self.k)], dtype=dtype)
        else:
            w = gp.zeros((1, self.k), dtype=dtype)
            _init.kaiming_uniform_(w, a=math.sqrt(5))
            w = gp.reshape(w, (self.k,))
        self.weight = Parameter(w)
        self.bias = Parameter(gp.asarray(-1.0, dtype=dtype))

    def single_step_forward(self, x: Array) -> Array:
        """One step from the last k inputs (this one included)."""
        queue = [*self.queue, gp.reshape(x, (-1,))][-self.k:]
        w = self.weight[self.k - len(queue):]
        h = gp.sum(gp.reshape(w, (-1, 1)) * gp.stack(queue, axis=0), axis=0) + self.bias
        self.queue = queue
        return self.surrogate_function(gp.reshape(h, x.shape))

    def multi_step_forward(self, x_seq: Array) -> Array:
        """The (T, N, ...) spikes of a sequence (the queue untouched, as SpikingJelly's)."""
        x_seq = _seq(x_seq, None, "SlidingPSN")
        T = x_seq.shape[0]  # noqa: N806
        h = self.weight[self.k - 1] * x_seq + self.bias
        for j in range(1, min(self.k, T)):
            # x delayed by j steps, zeros first
            shifted = gp.concat([gp.zeros_like(x_seq[:j]), x_seq[:T - j]], axis=0)
            h = h + self.weight[self.k - 1 - j] * shifted
        return self.surrogate_function(h)

    def extra_repr(self) -> str:
        return f"order={self.k}, step_mode={self.step_mode}"
