"""SpikingJelly 2.0's online-learning layers (``layer.OTTTSequential``, ``ReplaceforGrad``,
``GradwithTrace``, ``SpikeTraceOp``) and its online neurons (``neuron.OTTTLIFNode``,
``SLTTLIFNode``), for Online Training Through Time (Xiao et al., 2022): a layer's forward value
comes from the spikes while its gradient flows through the neurons' presynaptic traces, so that
each step's loss is backpropagated through that step alone
(``learning.online_learning.ottt_online_training``).

    net = layer.OTTTSequential(layer.Linear(4, 8), snn.OTTTLIFNode(), layer.Linear(8, 2))
    y = net(x_t)   # training: the neuron passes [spike, trace]; the Linear after it
                   # computes W spike + b, its weight gradient from the trace
"""
from __future__ import annotations

import numbers

from ...array.array import Array
from ...autograd import Function, no_grad
from ..module import Module, Sequential
from .sj_neurons import BaseNode
from .surrogate import Surrogate

__all__ = ["ReplaceforGrad", "GradwithTrace", "SpikeTraceOp", "OTTTSequential", "OTTTLIFNode",
           "SLTTLIFNode"]


class ReplaceforGrad(Function):
    """SpikingJelly's ``layer.ReplaceforGrad``: ``ReplaceforGrad.apply(x, x_r)`` is x_r forward;
    backward passes the gradient to both x and x_r."""

    @staticmethod
    def forward(ctx, x, x_r):
        return x_r

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


def _pair(x, op: str) -> tuple:
    if not (isinstance(x, (list, tuple)) and len(x) == 2):
        raise TypeError(f"{op}: expected the pair [spike, trace], got {type(x).__name__}")
    return x[0], x[1]


def _grad_with_trace(module, x) -> Array:
    """module(spike) as the value, module(trace)'s graph (spike's too) for the gradient."""
    spike, trace = _pair(x, "GradwithTrace")
    with no_grad():
        out = module(spike)
    out_for_grad = module(ReplaceforGrad.apply(spike, trace))
    return ReplaceforGrad.apply(out_for_grad, out)


def _spike_and_trace(module, x) -> list:
    """The same operation on the spikes and, without a graph, on the trace."""
    spike, trace = _pair(x, "SpikeTraceOp")
    spike = module(spike)
    with no_grad():
        trace = module(trace)
    return [spike, trace]


class _Wrapper(Module):
    """A module around one ``module`` (SpikingJelly's state_dict keys: ``module.*``)."""

    def __init__(self, module: Module) -> None:
        super().__init__()
        self.module = module


class GradwithTrace(_Wrapper):
    """SpikingJelly's ``layer.GradwithTrace(module)``: called on [spike, trace], the module's
    output for the spikes, with its parameter gradients computed from the trace."""

    def forward(self, x) -> Array:
        """module(spike) forward; backward through module(trace)."""
        return _grad_with_trace(self.module, x)


class SpikeTraceOp(_Wrapper):
    """SpikingJelly's ``layer.SpikeTraceOp(module)``: a parameter-free module (pooling,
    dropout, flatten) applied to both members of [spike, trace]."""

    def forward(self, x) -> list:
        """[module(spike), module(trace)] (the trace without a graph)."""
        return _spike_and_trace(self.module, x)


class OTTTSequential(Sequential):
    """SpikingJelly's ``layer.OTTTSequential(*modules)``: once an ``OTTTLIFNode`` has returned
    [spike, trace], each following module with parameters runs as ``GradwithTrace`` and each
    without as ``SpikeTraceOp``; a following OTTTLIFNode takes the spikes."""

    def forward(self, input):
        """The modules in order, on an Array or a [spike, trace] pair."""
        for m in self:
            if isinstance(input, list):
                if isinstance(m, OTTTLIFNode):
                    input = m(input[0])
                elif next(iter(m.parameters()), None) is None:
                    input = _spike_and_trace(m, input)
                else:
                    input = _grad_with_trace(m, input)
                continue
            input = m(input)
        return input


class _OnlineLIFNode(BaseNode):
    """A single-step LIF whose membrane is detached before each charge while training (h = v -
    (v - v_reset) / tau + x, or v + (x - (v - v_reset)) / tau with ``decay_input``): the
    gradient of a step stays within the step."""

    def __init__(self, tau: float, decay_input: bool, v_threshold: float,
                 v_reset: float | None, surrogate_function: Surrogate | None,
                 detach_reset: bool, step_mode: str, store_v_seq: bool, dtype) -> None:
        op = type(self).__name__
        if isinstance(tau, bool) or not isinstance(tau, numbers.Real) or not tau > 1.0:
            raise ValueError(f"{op}: tau must be a number > 1, got {tau!r}")
        if step_mode != "s":
            raise ValueError(f"{op}: step_mode must be 's' (online training takes one step at a "
                             f"time), got {step_mode!r}")
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         store_v_seq=store_v_seq, dtype=dtype)
        self.tau, self.decay_input = float(tau), bool(decay_input)

    def supported_step_mode(self) -> tuple:
        """('s',)."""
        return ("s",)

    def neuronal_charge(self, x: Array) -> None:
        """The LIF charge, the membrane detached first while training."""
        v = self.v.detach() if self.training and isinstance(self.v, Array) else self.v
        rest = 0.0 if self.v_reset is None else self.v_reset
        if self.decay_input:
            self.v = v + (x - (v - rest)) / self.tau
        else:
            self.v = v - (v - rest) / self.tau + x

    def extra_repr(self) -> str:
        return f"tau={self.tau}, decay_input={self.decay_input}, " + super().extra_repr()


class OTTTLIFNode(_OnlineLIFNode):
    """SpikingJelly 2.0's ``neuron.OTTTLIFNode(tau=2., decay_input=False, v_threshold=1.,
    v_reset=None, surrogate_function=Sigmoid(), detach_reset=True, step_mode='s',
    store_v_seq=False)``: the online LIF (membrane detached before each charge while training)
    returning [spike, trace] while training, trace = trace (1 - 1/tau) + spike (no graph, a
    memory); in eval the spikes only. As SpikingJelly's, 's' only."""

    def __init__(self, tau: float = 2.0, decay_input: bool = False, v_threshold: float = 1.0,
                 v_reset: float | None = None, surrogate_function: Surrogate | None = None,
                 detach_reset: bool = True, step_mode: str = "s", store_v_seq: bool = False,
                 dtype=None) -> None:
        super().__init__(tau, decay_input, v_threshold, v_reset, surrogate_function,
                         detach_reset, step_mode, store_v_seq, dtype)
        self.register_memory("trace", None)

    def forward(self, x: Array):
        """Training: [spike, trace]; eval: the spikes."""
        spike = super().forward(x)
        if not self.training:
            return spike
        with no_grad():
            s = spike.detach()
            self.trace = s if self.trace is None else self.trace * (1.0 - 1.0 / self.tau) + s
        return [spike, self.trace]


class SLTTLIFNode(_OnlineLIFNode):
    """SpikingJelly 2.0's ``neuron.SLTTLIFNode(tau=2., decay_input=True, v_threshold=1.,
    v_reset=0., surrogate_function=Sigmoid(), detach_reset=True, step_mode='s',
    store_v_seq=False)`` (SLTT): the online LIF (membrane detached before each charge while
    training), returning the spikes. 's' only."""

    def __init__(self, tau: float = 2.0, decay_input: bool = True, v_threshold: float = 1.0,
                 v_reset: float | None = 0.0, surrogate_function: Surrogate | None = None,
                 detach_reset: bool = True, step_mode: str = "s", store_v_seq: bool = False,
                 dtype=None) -> None:
        super().__init__(tau, decay_input, v_threshold, v_reset, surrogate_function,
                         detach_reset, step_mode, store_v_seq, dtype)
