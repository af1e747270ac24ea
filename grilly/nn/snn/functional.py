"""Stateless spiking-neuron steps: each takes the input current and the old state and returns the
spikes and the new state, written with namespace ops so they run (and differentiate) on every
device. The update equations are in docs/snn.md; in short, with ``reset_delay=True`` (snnTorch's
default) the reset of step t comes from the membrane of step t-1, and with ``reset_delay=False``
(SpikingJelly's convention) a spike resets the membrane within the same step.

    spk, mem = lif_step(x, mem, beta=0.9)                      # snnTorch Leaky
    spk, syn, mem = synaptic_step(x, syn, mem, alpha=0.8, beta=0.9)
"""
from __future__ import annotations

import math
from typing import Callable

from ...array import api as gp
from ...array.defaults import get_default_dtype

from ...array.array import Array
from ...autograd.function import Function
from . import containers as _c
from .checks import _check_input
from .containers import chunk_multi_step_forward, multi_step_forward, seq_to_ann_forward
from .sj_misc import kaiming_normal_conv_linear_weight, set_threshold_margin
from .sj_loss import (kernel_dot_product, spike_similar_loss,
                      temporal_efficient_training_cross_entropy)
from .surrogate import (Surrogate, atan, check_surrogate, fast_sigmoid, heaviside, sigmoid,
                        straight_through, triangle)

__all__ = ["lif_step", "if_step", "synaptic_step", "adaptive_lif_step", "beta_from_tau",
           "Surrogate", "atan", "fast_sigmoid", "heaviside", "sigmoid", "straight_through",
           "triangle", "RESETS", "reset_net", "set_step_mode", "state_quant", "detach_net",
           "set_backend", "first_spike_index", "delay", "redundant_one_hot",
           "multi_step_forward", "seq_to_ann_forward", "chunk_multi_step_forward",
           "kernel_dot_product", "spike_similar_loss", "temporal_efficient_training_cross_entropy",
           "kaiming_normal_conv_linear_weight", "set_threshold_margin"]

RESETS = ("subtract", "zero", "none")
_DEFAULT_SURROGATE = atan(2.0)


def _sj_style(m) -> bool:
    # SpikingJelly-style modules: their reset()/detach() covers grilly's reset_state()
    from .base import MemoryModule, _NodeHooks
    return isinstance(m, (MemoryModule, _NodeHooks))


def reset_net(model):
    """Reset the state of every layer of ``model`` that keeps one: SpikingJelly-style modules
    (``base.MemoryModule``, the SpikingJelly neurons and their subclasses) by ``reset()``, the
    others by ``reset_state()`` (or a ``reset()`` method where there is none): a new sequence
    starts. ``grilly.nn.snn.reset``, and SpikingJelly's ``functional.reset_net``."""
    for m in model.modules():
        if _sj_style(m):
            m.reset()
        elif callable(getattr(m, "reset_state", None)):
            m.reset_state()
        elif callable(getattr(m, "reset", None)):
            m.reset()
    return model


def set_step_mode(model, step_mode: str):
    """Set ``step_mode`` ('s' or 'm') on every module of ``model`` that has one (the spiking
    layers, ``snn.layer.*``, PoissonEncoder), except modules inside a ``SeqToANNContainer``,
    ``MultiStepContainer``, ``StepModeContainer``, ``ElementWiseRecurrentContainer`` or
    ``LinearRecurrentContainer``, which run them their own way (the container's own step_mode
    is set): SpikingJelly's ``functional.set_step_mode``. Returns ``model``."""
    if step_mode not in ("s", "m"):
        raise ValueError(f"set_step_mode: step_mode must be 's' (one step per call) or 'm' (a "
                         f"(T, ...) sequence per call), got {step_mode!r}")
    keep = (_c.MultiStepContainer, _c.SeqToANNContainer, _c.StepModeContainer,
            _c.ElementWiseRecurrentContainer, _c.LinearRecurrentContainer)
    # a container calls its modules one step at a time (or on T * B at once): they stay 's'
    inside = {id(m) for c in model.modules() if isinstance(c, keep)
              for m in c.modules() if m is not c}
    for m in model.modules():
        if id(m) not in inside and ("step_mode" in vars(m) or "_step_mode" in vars(m)):
            m.step_mode = step_mode
    return model


def detach_net(model):
    """SpikingJelly's ``functional.detach_net``: every kept state of ``model`` (neurons,
    SynapseFilter, recurrent containers, ``base.MemoryModule`` memories) detached from the
    graph, by ``detach()`` on SpikingJelly-style modules, else ``detach_state()``;
    ``snn.detach``."""
    for m in model.modules():
        if _sj_style(m):
            m.detach()
        elif callable(getattr(m, "detach_state", None)):
            m.detach_state()
        elif callable(getattr(m, "detach", None)):
            m.detach()
    return model


def set_backend(model, backend: str, instance=None):
    """SpikingJelly's ``functional.set_backend(net, backend)``: accepted for ported code and
    checked ('torch', 'cupy' or 'triton') and recorded as ``.backend`` on the modules that have
    one (of type ``instance``, if given); grilly picks its kernels by the Array's device, so
    nothing else changes."""
    if backend not in ("torch", "cupy", "triton"):
        raise ValueError(f"set_backend: backend must be 'torch', 'cupy' or 'triton' "
                         f"(SpikingJelly's), got {backend!r}")
    for m in model.modules():
        if "backend" in m.__dict__ and (instance is None or isinstance(m, instance)):
            m.backend = backend
    return model


def first_spike_index(spikes: Array) -> Array:
    """SpikingJelly's ``functional.first_spike_index``: a bool Array, True where a neuron fires
    for the first time along the last axis (the time axis last, (..., T))."""
    spikes = _check_input(spikes, "first_spike_index", "spikes")
    return gp.logical_and(spikes != 0, gp.cumulative_sum(spikes, axis=-1) == 1)


def delay(x_seq: Array, delay_steps: int) -> Array:
    """SpikingJelly's ``functional.delay``: x_seq (T, ...) delayed by ``delay_steps`` along time,
    zeros in front."""
    x_seq = _check_input(x_seq, "delay", "x_seq")
    if isinstance(delay_steps, bool) or not isinstance(delay_steps, int) or delay_steps < 0:
        raise ValueError(f"delay: delay_steps must be an int >= 0, got {delay_steps!r}")
    if delay_steps == 0:
        return x_seq
    if delay_steps >= x_seq.shape[0]:
        return gp.zeros_like(x_seq)
    return gp.concat([gp.zeros_like(x_seq[:delay_steps]), x_seq[:-delay_steps]], axis=0)


def redundant_one_hot(labels: Array, num_classes: int, n: int) -> Array:
    """SpikingJelly's ``functional.redundant_one_hot``: each label one-hot over ``num_classes``
    with every entry repeated ``n`` times, (..., num_classes * n) of the default dtype (for
    VotingLayer)."""
    if not isinstance(labels, gp.Array) or not gp.isdtype(labels.dtype, "integral"):
        raise TypeError(f"redundant_one_hot: labels must be an integer Array, got "
                        f"{getattr(labels, 'dtype', type(labels).__name__)}")
    for name, v in (("num_classes", num_classes), ("n", n)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"redundant_one_hot: {name} must be an int >= 1, got {v!r}")
    cls = gp.arange(num_classes * n, device=labels.device) // n
    return gp.astype(gp.expand_dims(labels, axis=-1) == cls, get_default_dtype())


def beta_from_tau(tau: float, dt: float = 1.0) -> float:
    """The per-step decay exp(-dt / tau) of a membrane time constant ``tau``."""
    tau, dt = float(tau), float(dt)
    if not (tau > 0 and dt > 0):
        raise ValueError(f"beta_from_tau: tau and dt must be > 0, got tau={tau}, dt={dt}")
    return math.exp(-dt / tau)


def _decay(v, op: str, arg: str):
    """A decay factor in [0, 1]: a float is checked, an Array clipped (as snnTorch clamps)."""
    if isinstance(v, gp.Array):
        return gp.clip(v, 0.0, 1.0)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{op}: {arg} must be a float or an Array, got {type(v).__name__}")
    if not 0.0 <= float(v) <= 1.0:
        raise ValueError(f"{op}: {arg} must be in [0, 1], got {v}")
    return float(v)


def _scalar_or_array(v, op: str, arg: str):
    if isinstance(v, gp.Array):
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{op}: {arg} must be a float or an Array, got {type(v).__name__}")
    return float(v)


def _check_options(reset: str, surrogate, refractory: int, op: str) -> Callable:
    if reset not in RESETS:
        raise ValueError(f"{op}: reset must be one of {RESETS}, got {reset!r}")
    if isinstance(refractory, bool) or not isinstance(refractory, int) or refractory < 0:
        raise ValueError(f"{op}: refractory must be an int >= 0 (steps), got {refractory!r}")
    if surrogate is None:
        return _DEFAULT_SURROGATE
    return check_surrogate(surrogate, op)


def _state(s, like: Array, op: str, arg: str) -> Array:
    """The state ``s``, or zeros shaped like the input when it is None."""
    if s is None:
        return gp.zeros_like(like)
    return _check_input(s, op, arg)


def _fire(cur, mem, beta, thr_reset, thr_spike, reset, spike_fn, detach_reset, reset_delay,
          zero_after, active):
    """One integrate-fire-reset; returns (spk, mem, r) where r is the reset signal used.

    zero_after: the zero reset multiplies the new membrane (snnTorch Synaptic/RLeaky) instead of
    the old one (snnTorch Leaky); active: None or the float mask of non-refractory neurons."""
    if active is not None:
        cur = cur * active
    if reset_delay:
        if detach_reset:
            r = gp.astype(mem > thr_reset, mem.dtype)
        else:
            r = spike_fn(mem - thr_reset)
        if reset == "subtract":
            mem = beta * mem + cur - r * thr_reset
        elif reset == "zero":
            mem = (1.0 - r) * (beta * mem + cur) if zero_after else beta * ((1.0 - r) * mem) + cur
        else:
            mem = beta * mem + cur
        spk = spike_fn(mem - thr_spike)
        if active is not None:
            spk = spk * active
        return spk, mem, r
    h = beta * mem + cur
    spk = spike_fn(h - thr_spike)
    if active is not None:
        spk = spk * active
    r = gp.astype(spk > 0, h.dtype) if detach_reset else spk
    if reset == "subtract":
        h = h - r * thr_spike
    elif reset == "zero":
        h = h * (1.0 - r)
    return spk, h, r


def _refractory(ref, refractory: int, like: Array, op: str):
    if refractory == 0:
        if ref is not None:
            raise ValueError(f"{op}: ref (the refractory counter) is given but refractory=0")
        return None, None
    ref = _state(ref, like, op, "ref")
    return ref, gp.astype(ref <= 0, like.dtype)


def _count_down(ref, spk, refractory: int):
    return gp.where(spk > 0, float(refractory), gp.maximum(ref - 1.0, 0.0))


def lif_step(input: Array, mem: Array | None = None, *, beta: float | Array,
             threshold: float | Array = 1.0, reset: str = "subtract",
             surrogate: Surrogate | None = None, detach_reset: bool = True,
             reset_delay: bool = True, refractory: int = 0, ref: Array | None = None) -> tuple:
    """One leaky integrate-and-fire step: (spk, mem), or (spk, mem, ref) when refractory > 0."""
    op = "lif_step"
    x = _check_input(input, op)
    mem = _state(mem, x, op, "mem")
    sg = _check_options(reset, surrogate, refractory, op)
    b = _decay(beta, op, "beta")
    thr = _scalar_or_array(threshold, op, "threshold")
    ref, active = _refractory(ref, refractory, x, op)
    spk, mem, _ = _fire(x, mem, b, thr, thr, reset, sg, detach_reset, reset_delay, False, active)
    if refractory:
        return spk, mem, _count_down(ref, spk, refractory)
    return spk, mem


def if_step(input: Array, mem: Array | None = None, *, threshold: float | Array = 1.0,
            reset: str = "subtract", surrogate: Surrogate | None = None,
            detach_reset: bool = True, reset_delay: bool = True, refractory: int = 0,
            ref: Array | None = None) -> tuple:
    """One integrate-and-fire step (no leak, beta = 1): (spk, mem) or (spk, mem, ref)."""
    return lif_step(input, mem, beta=1.0, threshold=threshold, reset=reset, surrogate=surrogate,
                    detach_reset=detach_reset, reset_delay=reset_delay, refractory=refractory,
                    ref=ref)


def synaptic_step(input: Array, syn: Array | None = None, mem: Array | None = None, *,
                  alpha: float | Array, beta: float | Array, threshold: float | Array = 1.0,
                  reset: str = "subtract", surrogate: Surrogate | None = None,
                  detach_reset: bool = True, reset_delay: bool = True, refractory: int = 0,
                  ref: Array | None = None) -> tuple:
    """One second-order LIF step (snnTorch Synaptic): (spk, syn, mem), or with ref appended."""
    op = "synaptic_step"
    x = _check_input(input, op)
    syn = _state(syn, x, op, "syn")
    mem = _state(mem, x, op, "mem")
    sg = _check_options(reset, surrogate, refractory, op)
    a = _decay(alpha, op, "alpha")
    b = _decay(beta, op, "beta")
    thr = _scalar_or_array(threshold, op, "threshold")
    ref, active = _refractory(ref, refractory, x, op)
    syn = a * syn + x
    spk, mem, _ = _fire(syn, mem, b, thr, thr, reset, sg, detach_reset, reset_delay, True, active)
    if refractory:
        return spk, syn, mem, _count_down(ref, spk, refractory)
    return spk, syn, mem


def adaptive_lif_step(input: Array, mem: Array | None = None, adapt: Array | None = None, *,
                      beta: float | Array, rho: float | Array = 0.95, gamma: float | Array = 0.1,
                      threshold: float | Array = 1.0, reset: str = "subtract",
                      surrogate: Surrogate | None = None, detach_reset: bool = True,
                      reset_delay: bool = True) -> tuple:
    """One adaptive-threshold LIF step (threshold + gamma * adapt, adapt decays by rho and
    grows by 1 per spike): (spk, mem, adapt)."""
    op = "adaptive_lif_step"
    x = _check_input(input, op)
    mem = _state(mem, x, op, "mem")
    adapt = _state(adapt, x, op, "adapt")
    sg = _check_options(reset, surrogate, 0, op)
    b = _decay(beta, op, "beta")
    p = _decay(rho, op, "rho")
    g = _scalar_or_array(gamma, op, "gamma")
    thr = _scalar_or_array(threshold, op, "threshold")
    if reset_delay:
        # the previous step's spike (the reset signal) is what raises the threshold now
        thr_old = thr + g * adapt
        r = gp.astype(mem > thr_old, mem.dtype) if detach_reset else sg(mem - thr_old)
        adapt = p * adapt + r
        spk, mem, _ = _fire(x, mem, b, thr_old, thr + g * adapt, reset, sg, detach_reset, True,
                            False, None)
        return spk, mem, adapt
    spk, mem, r = _fire(x, mem, b, thr, thr + g * adapt, reset, sg, detach_reset, False, False,
                        None)
    return spk, mem, p * adapt + r


class _StateQuant(Function):
    """Each value to its nearest level (the first on a tie); the gradient passes straight
    through (snnTorch's StateQuant)."""

    @staticmethod
    def forward(ctx, x, *, levels):
        lv = gp.asarray(levels, dtype=x.dtype, device=x.device)
        idx = gp.argmin(gp.abs(gp.expand_dims(x, axis=-1) - lv), axis=-1)
        return gp.take(lv, gp.reshape(idx, (-1,)), axis=0).reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        return g


def _quant_levels(num_bits: int, uniform: bool, thr_centered: bool, threshold: float,
                  lower_limit: float, upper_limit: float, multiplier) -> list:
    # snnTorch's levels: 2^num_bits of them from -(thr (1 + lower_limit)) to
    # thr (1 + upper_limit), evenly spaced, or denser near the threshold (or near zero) with
    # gaps shrinking by ``multiplier`` (snnTorch's table by num_bits when None)
    n = 2 << (num_bits - 1)
    lo, hi = -(threshold + threshold * lower_limit), threshold + threshold * upper_limit
    if uniform:
        return [lo + (hi - lo) * i / (n - 1) for i in range(n)] if n > 1 else [lo]
    if multiplier is None:
        table = {1: 0.05, 2: 0.1, 3: 0.3, 4: 0.5, 5: 0.7, 6: 0.9, 7: 0.925}
        multiplier = table.get(num_bits, 0.95)
    centre = threshold if thr_centered else 0.0
    lower_range, upper_range = centre - lo, hi - centre
    lower_bits = math.floor(n * lower_range / (hi - lo))
    upper_bits = n - lower_bits
    levels = []
    if lower_bits:
        room = sum(multiplier ** j for j in range(lower_bits)) / lower_range
        v = lo
        for j in range(lower_bits):
            levels.append(v)
            v += multiplier ** j / room
    if upper_bits:
        room = sum(multiplier ** j for j in range(upper_bits)) / upper_range
        v = centre
        for j in reversed(range(upper_bits)):
            v += multiplier ** j / room
            levels.append(v)
    return levels


def state_quant(num_bits: int = 8, uniform: bool = True, thr_centered: bool = True,
                threshold: float = 1.0, lower_limit: float = 0.0, upper_limit: float = 0.2,
                multiplier: float | None = None) -> Callable:
    """snnTorch's ``snntorch.functional.quant.state_quant``: a function rounding a state to
    the nearest of 2^num_bits levels (gradient passed straight through), for a neuron's
    ``state_quant=``."""
    op = "state_quant"
    if isinstance(num_bits, bool) or not isinstance(num_bits, int) or num_bits < 1:
        raise ValueError(f"{op}: num_bits must be an int >= 1, got {num_bits!r}")
    for name, v in (("threshold", threshold), ("lower_limit", lower_limit),
                    ("upper_limit", upper_limit)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{op}: {name} must be a float, got {type(v).__name__}")
    if not threshold > 0:
        raise ValueError(f"{op}: threshold must be > 0, got {threshold}")
    if multiplier is not None and not (isinstance(multiplier, (int, float)) and multiplier > 0):
        raise ValueError(f"{op}: multiplier must be a float > 0 or None, got {multiplier!r}")
    levels = tuple(_quant_levels(num_bits, uniform, thr_centered, float(threshold),
                                 float(lower_limit), float(upper_limit), multiplier))

    def quantize(x: Array) -> Array:
        """``x`` with each value replaced by its nearest level."""
        x = _check_input(x, op, "x")
        return _StateQuant.apply(x, levels=levels)

    quantize.levels = levels
    return quantize


# snnTorch's snntorch.functional spellings (SF.ce_rate_loss(), SF.accuracy_rate, ...)
from .snntorch_functional import *  # noqa: E402,F401,F403
