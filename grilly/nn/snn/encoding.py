"""Spike encoders (data -> a (T, ...) spike train, time first) and readouts (a spike train or a
membrane trace -> per-class scores), written with namespace ops.

- rate: Bernoulli spikes with probability clip(gain * data, 0, 1) per step, drawn from gp.random
  (so ``gp.random.seed`` makes them reproducible); snnTorch's ``spikegen.rate``.
- latency: one spike per feature at the time a charging RC neuron reaches ``threshold`` (or a
  linear ramp), large values first; snnTorch's ``spikegen.latency`` conventions.
- delta: a spike where the change from the previous step is >= threshold (and -1 where it is
  <= -threshold with ``off_spike``); snnTorch's ``spikegen.delta``.
"""
from __future__ import annotations


from ... import random as _random
from ...array import api as gp

from ...array.array import Array
from ..module import Module
from .checks import _check_input

__all__ = ["rate", "PoissonEncoder", "latency", "delta", "spike_count", "spike_rate", "membrane_max",
           "membrane_last", "membrane_mean", "StatefulEncoder", "PeriodicEncoder", "LatencyEncoder",
           "WeightedPhaseEncoder"]


def _steps(num_steps, op: str) -> int:
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 1:
        raise ValueError(f"{op}: num_steps must be an int >= 1, got {num_steps!r}")
    return num_steps


def rate(data: Array, num_steps: int | None = None, *, gain: float = 1.0, offset: float = 0.0,
         first_spike_time: int = 0, time_var_input: bool = False, generator=None) -> Array:
    """Bernoulli spikes (T, *data.shape) with P(spike) = clip(gain * data + offset, 0, 1) each
    step (snnTorch's ``spikegen.rate``): the first ``first_spike_time`` steps are silent.
    ``num_steps=None`` draws once, shaped like ``data``; ``time_var_input=True`` takes data
    that is already (T, ...), draws each step from its own values (no gain or offset, as
    snnTorch) and puts ``first_spike_time`` silent steps in front."""
    op = "rate"
    data = _check_input(data, op, "data")
    if (isinstance(first_spike_time, bool) or not isinstance(first_spike_time, int)
            or first_spike_time < 0):
        raise ValueError(f"{op}: first_spike_time must be an int >= 0, got {first_spike_time!r}")
    gen = generator if generator is not None else _random.default_generator
    if time_var_input:
        if num_steps is not None:
            raise ValueError(f"{op}: num_steps must not be given with time_var_input=True (the "
                             "data's first axis is time)")
        spk = gen.bernoulli(gp.clip(data, 0.0, 1.0), dtype=data.dtype)
        if first_spike_time:
            pad = gp.zeros((first_spike_time, *data.shape[1:]), dtype=data.dtype,
                           device=data.device)
            spk = gp.concat([pad, spk], axis=0)
        return spk
    p = gp.clip(data * float(gain) + float(offset), 0.0, 1.0)
    if num_steps is None:
        if first_spike_time:
            raise ValueError(f"{op}: first_spike_time needs num_steps (or time_var_input=True)")
        return gen.bernoulli(p, dtype=data.dtype)
    num_steps = _steps(num_steps, op)
    if first_spike_time > num_steps - 1:
        raise ValueError(f"{op}: first_spike_time ({first_spike_time}) must be <= num_steps - 1 "
                         f"({num_steps - 1})")
    p = gp.broadcast_to(gp.expand_dims(p, axis=0), (num_steps, *data.shape))
    spk = gen.bernoulli(p, dtype=data.dtype)
    if first_spike_time:
        t = gp.reshape(gp.arange(num_steps, dtype=data.dtype, device=data.device),
                       (num_steps,) + (1,) * data.ndim)
        spk = spk * gp.astype(t >= first_spike_time, data.dtype)
    return spk


class PoissonEncoder(Module):
    """SpikingJelly's ``encoding.PoissonEncoder``: each call draws one step of Bernoulli spikes
    with P = clip(x, 0, 1), shaped like x (loop over the steps, or ``step_mode="m"`` to draw
    every step of a (T, ...) input)."""

    def __init__(self, step_mode: str = "s") -> None:
        super().__init__()
        if step_mode not in ("s", "m"):
            raise ValueError(f"PoissonEncoder: step_mode must be 's' or 'm', got {step_mode!r}")
        self.step_mode = step_mode

    def forward(self, x: Array) -> Array:
        """Spikes shaped like x: 1 with probability x."""
        return rate(_check_input(x, "PoissonEncoder", "x"))


def latency(data: Array, num_steps: int, *, tau: float = 1.0, threshold: float = 0.01,
            first_spike_time: int = 0, linear: bool = False, normalize: bool = False,
            clip: bool = False, on_target: float = 1.0, off_target: float = 0.0,
            epsilon: float = 1e-7, bypass: bool = False, interpolate: bool = False) -> Array:
    """One spike per feature (T, *data.shape): larger values fire earlier (see module doc).
    A spike is ``on_target`` and no spike ``off_target`` (snnTorch's max(spike * on_target,
    off_target)); spikes later than T - 1 are dropped whether or not ``bypass`` is set (snnTorch
    raises without it); ``interpolate`` is not supported."""
    op = "latency"
    if interpolate:
        raise NotImplementedError(f"{op}: interpolate=True (snnTorch's interpolated targets) is "
                                  "not supported")
    data = _check_input(data, op, "data")
    num_steps = _steps(num_steps, op)
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"{op}: threshold must be in (0, 1), got {threshold}")
    if not tau > 0:
        raise ValueError(f"{op}: tau must be > 0, got {tau}")
    if not 0 <= first_spike_time <= num_steps - 1:
        raise ValueError(f"{op}: first_spike_time must be in [0, num_steps - 1], got "
                         f"{first_spike_time}")
    if linear:
        if normalize:
            tau = num_steps - 1 - first_spike_time
        # t = tau (1 - x), x >= threshold; the ramp meets 0 at x = 1
        t = gp.minimum(-tau * (data - 1.0), -tau * (threshold - 1.0)) + first_spike_time
    else:
        # RC charging to threshold: t = tau ln(x / (x - threshold)), x saturated just above it
        x = gp.maximum(data, threshold + float(epsilon))
        t = tau * gp.log(x / (x - threshold)) + first_spike_time
        if normalize:
            t = ((t - first_spike_time) * ((num_steps - first_spike_time - 1) /
                 gp.max(t - first_spike_time)) + first_spike_time)
    step = gp.round(gp.minimum(t, float(num_steps - 1)))
    keep = gp.round(t) <= num_steps - 1
    if clip:
        keep = gp.logical_and(keep, data >= threshold)
    times = gp.reshape(gp.arange(num_steps, dtype=data.dtype, device=data.device),
                       (num_steps,) + (1,) * data.ndim)
    spk = gp.astype(gp.logical_and(times == step, keep), data.dtype)
    if on_target != 1.0 or off_target != 0.0:
        spk = gp.maximum(spk * float(on_target), float(off_target))
    return spk


def delta(data: Array, *, threshold: float = 0.1, padding: bool = False,
          off_spike: bool = False) -> Array:
    """Spikes (same shape as the (T, ...) ``data``) where data[t] - data[t-1] >= threshold."""
    data = _check_input(data, "delta", "data")
    if data.ndim < 1 or data.shape[0] == 0:
        raise ValueError(f"delta: data must be (T, ...) with T >= 1, got shape {data.shape}")
    first = data[:1] if padding else gp.zeros_like(data[:1])
    prev = gp.concat([first, data[:-1]], axis=0)
    d = data - prev
    on = gp.astype(d >= threshold, data.dtype)
    return on - gp.astype(d <= -threshold, data.dtype) if off_spike else on


def _seq(x, op: str) -> Array:
    x = _check_input(x, op)
    if x.ndim < 1:
        raise ValueError(f"{op}: expected a (T, ...) sequence, got a 0-D array")
    return x


def spike_count(spk: Array) -> Array:
    """Spikes summed over time (axis 0)."""
    return gp.sum(_seq(spk, "spike_count"), axis=0)


def spike_rate(spk: Array) -> Array:
    """Spikes averaged over time (axis 0): the firing rate per step."""
    return gp.mean(_seq(spk, "spike_rate"), axis=0)


def membrane_max(mem: Array) -> Array:
    """The largest membrane potential over time (axis 0)."""
    return gp.max(_seq(mem, "membrane_max"), axis=0)


def membrane_last(mem: Array) -> Array:
    """The membrane potential at the last step."""
    return _seq(mem, "membrane_last")[-1]


def membrane_mean(mem: Array) -> Array:
    """The membrane potential averaged over time (axis 0)."""
    return gp.mean(_seq(mem, "membrane_mean"), axis=0)


# SpikingJelly's stateful encoders, under snn.encoding as in SpikingJelly's module
from .sj_encoding import (LatencyEncoder, PeriodicEncoder, StatefulEncoder,  # noqa: E402
                          WeightedPhaseEncoder)
