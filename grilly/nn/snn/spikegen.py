"""snnTorch's ``spikegen`` under its names and positional order (``from grilly.nn.snn import
spikegen``): rate, latency and delta are grilly's encoders (``snn.rate``, ``snn.latency``,
``snn.delta``), rate_conv one Bernoulli draw, to_one_hot the label matrix, from_one_hot its
inverse, targets_convert the labels as target spike trains or membranes."""
from __future__ import annotations

import math
import numbers

import numpy as np

from ... import random as _random
from ...array import api as gp
from ...array.defaults import get_default_dtype
from ...array.array import Array
from .. import functional as NF
from . import encoding as _enc

__all__ = ["rate", "latency", "delta", "rate_conv", "to_one_hot", "from_one_hot",
           "targets_convert", "targets_rate", "targets_latency", "target_rate_code",
           "rate_interpolate"]


def rate(data: Array, num_steps=False, gain: float = 1, offset: float = 0,
         first_spike_time: int = 0, time_var_input: bool = False) -> Array:
    """snnTorch's ``spikegen.rate``: Bernoulli spikes (T, *data.shape), P = clip(gain data +
    offset, 0, 1); ``num_steps=False`` draws once, shaped like data."""
    return _enc.rate(data, None if num_steps is False else num_steps, gain=gain, offset=offset,
                     first_spike_time=first_spike_time, time_var_input=time_var_input)


def latency(data: Array, num_steps=False, threshold: float = 0.01, tau: float = 1,
            first_spike_time: int = 0, on_target: float = 1, off_target: float = 0,
            clip: bool = False, normalize: bool = False, linear: bool = False,
            interpolate: bool = False, bypass: bool = False, epsilon: float = 1e-7) -> Array:
    """snnTorch's ``spikegen.latency``: one spike per feature, larger values earlier (T,
    *data.shape). Without ``num_steps``, ``bypass=True`` sets it as snnTorch does: the last
    spike time (rounded) + 1 (the log code; ``linear``/``normalize`` need num_steps)."""
    if num_steps is False or num_steps is None:
        if not bypass:
            raise ValueError("latency: num_steps is required (or bypass=True, which sets it "
                             "to the last spike time + 1, as snnTorch)")
        if linear or normalize:
            raise ValueError("latency: linear=True or normalize=True needs num_steps")
        if not isinstance(data, gp.Array):
            raise TypeError(f"latency: data must be an Array, got {type(data).__name__}")
        x = gp.maximum(data, threshold + float(epsilon))
        last = float(gp.max(tau * gp.log(x / (x - threshold)))) + first_spike_time
        num_steps = int(round(last)) + 1
        if num_steps <= 0:
            raise ValueError(f"latency: the spike times give num_steps={num_steps}; normalize the "
                             "data to larger values or lower the threshold")
    return _enc.latency(data, num_steps, tau=tau, threshold=threshold,
                        first_spike_time=first_spike_time, linear=linear, normalize=normalize,
                        clip=clip, on_target=on_target, off_target=off_target, epsilon=epsilon,
                        bypass=bypass, interpolate=interpolate)


def delta(data: Array, threshold: float = 0.1, padding: bool = False,
          off_spike: bool = False) -> Array:
    """snnTorch's ``spikegen.delta``: a spike where data[t] - data[t-1] >= threshold (-1 where
    <= -threshold with ``off_spike``)."""
    return _enc.delta(data, threshold=threshold, padding=padding, off_spike=off_spike)


def rate_conv(data: Array) -> Array:
    """snnTorch's ``spikegen.rate_conv``: one Bernoulli draw of clip(data, 0, 1), shaped like
    data."""
    return _enc.rate(data)


def to_one_hot(targets: Array, num_classes: int) -> Array:
    """snnTorch's ``spikegen.to_one_hot``: (len(targets), num_classes) float32, 1 at each
    label."""
    if not isinstance(targets, gp.Array) or targets.ndim != 1:
        raise ValueError(f"to_one_hot: targets must be a 1-d integer Array, got "
                         f"{getattr(targets, 'shape', type(targets).__name__)}")
    return NF.one_hot(gp.astype(targets, gp.int64), num_classes, dtype=gp.float32)


def from_one_hot(one_hot_label: Array) -> Array:
    """snnTorch's ``spikegen.from_one_hot``: the indices along the first axis where the label
    is 1 (a 1-d one-hot vector: its class; torch.where(x == 1)[0])."""
    if not isinstance(one_hot_label, gp.Array) or one_hot_label.ndim < 1:
        raise ValueError(f"from_one_hot: one_hot_label must be an Array of at least 1 dim, got "
                         f"{getattr(one_hot_label, 'shape', type(one_hot_label).__name__)}")
    return gp.nonzero(one_hot_label == 1)[0]


def targets_convert(targets: Array, num_classes: int, code: str = "rate", num_steps=False,
                    first_spike_time: int = 0, correct_rate: float = 1, incorrect_rate: float = 0,
                    on_target: float = 1, off_target: float = 0, firing_pattern: str = "regular",
                    interpolate: bool = False, epsilon: float = 1e-7, threshold: float = 0.01,
                    tau: float = 1, clip: bool = False, normalize: bool = False,
                    linear: bool = False, bypass: bool = False) -> Array:
    """snnTorch's ``spikegen.targets_convert``: labels (batch,) as targets, float32.
    ``code="rate"``: (batch, classes) ``on_target`` at the label, ``off_target`` elsewhere
    (with on > off: max(on onehot, off)); time-varying (T, batch, classes) when
    ``first_spike_time`` > 0 (off before it) or the label fires at ``correct_rate`` and the
    others at ``incorrect_rate`` of the steps ('regular' every 1/rate steps, 'uniform' as many
    at random steps, 'poisson' a Bernoulli draw per step; one train per rate), spikes on_target
    (at least off_target), or with ``interpolate`` ramps from off_target up to on_target at each
    spike. ``code="latency"``: ``latency`` of the one-hot labels (the label spikes first)."""
    op = "targets_convert"
    if not isinstance(targets, gp.Array) or targets.ndim != 1:
        raise ValueError(f"{op}: targets must be a 1-d Array of class indices, got "
                         f"{getattr(targets, 'shape', type(targets).__name__)}")
    if (isinstance(first_spike_time, bool) or not isinstance(first_spike_time, numbers.Integral)
            or first_spike_time < 0):
        raise ValueError(f"{op}: first_spike_time must be an int >= 0, got {first_spike_time!r}")
    onehot = to_one_hot(targets, num_classes)
    if code == "latency":
        # as snnTorch's targets_latency: on/off targets, interpolate and epsilon stay default
        return latency(onehot, num_steps, threshold=threshold, tau=tau,
                       first_spike_time=first_spike_time, clip=clip, normalize=normalize,
                       linear=linear, bypass=bypass)
    if code != "rate":
        raise ValueError(f"{op}: code must be 'rate' or 'latency', got {code!r}")
    if not (0 <= correct_rate <= 1 and 0 <= incorrect_rate <= 1):
        raise ValueError(f"{op}: correct_rate and incorrect_rate must be in [0, 1], got "
                         f"{correct_rate}, {incorrect_rate}")
    steady = correct_rate == 1 and incorrect_rate == 0
    if not num_steps and not steady:
        raise ValueError(f"{op}: num_steps is required when correct_rate != 1 or "
                         "incorrect_rate != 0")
    if incorrect_rate > correct_rate:
        raise ValueError(f"{op}: incorrect_rate must not exceed correct_rate, got "
                         f"{incorrect_rate} > {correct_rate}")
    pattern = _pattern(firing_pattern, op)
    on, off = float(on_target), float(off_target)
    spikes = gp.maximum(onehot * on, off)
    if steady and first_spike_time == 0:
        return spikes if on > off else onehot * on + (1.0 - onehot) * off
    if not num_steps:
        raise ValueError(f"{op}: first_spike_time needs num_steps")
    steps = _enc._steps(num_steps, op)
    if steady:   # off before first_spike_time, then the steady targets
        t = gp.reshape(gp.arange(steps, device=targets.device), (steps, 1, 1))
        return gp.where(t >= first_spike_time, gp.expand_dims(spikes, axis=0),
                        gp.asarray(off, dtype=spikes.dtype, device=targets.device))
    if first_spike_time > steps:
        raise ValueError(f"{op}: first_spike_time ({first_spike_time}) must be <= num_steps "
                         f"({steps})")
    trains = []
    for r in (correct_rate, incorrect_rate):
        train, times = _rate_code(steps, first_spike_time, float(r), pattern)
        if interpolate:
            if on == off:
                raise ValueError(f"{op}: interpolate needs on_target != off_target")
            train = _rate_interpolate(times, steps, on, off, float(epsilon))
        trains.append(gp.asarray(np.reshape(train, (steps, 1, 1)).astype(np.float32),
                                 device=targets.device))
    hot = gp.expand_dims(onehot, axis=0)
    out = hot * trains[0] + (1.0 - hot) * trains[1]
    # (snnTorch 1.0 combines these with a broadcast that only runs where num_steps equals
    # num_classes, into a 5-d tensor; this is the (T, batch, classes) its docstring describes)
    return out if interpolate else gp.maximum(out * on, off)


def targets_rate(targets: Array, num_classes: int, num_steps=False, first_spike_time: int = 0,
                 correct_rate: float = 1, incorrect_rate: float = 0, on_target: float = 1,
                 off_target: float = 0, firing_pattern: str = "regular",
                 interpolate: bool = False, epsilon: float = 1e-7) -> Array:
    """snnTorch's ``spikegen.targets_rate``: ``targets_convert(..., code="rate")``."""
    return targets_convert(targets, num_classes, "rate", num_steps, first_spike_time,
                           correct_rate, incorrect_rate, on_target, off_target, firing_pattern,
                           interpolate, epsilon)


def targets_latency(targets: Array, num_classes: int, num_steps=False, first_spike_time: int = 0,
                    on_target: float = 1, off_target: float = 0, interpolate: bool = False,
                    threshold: float = 0.01, tau: float = 1, clip: bool = False,
                    normalize: bool = False, linear: bool = False, epsilon: float = 1e-7,
                    bypass: bool = False) -> Array:
    """snnTorch's ``spikegen.targets_latency``: ``targets_convert(..., code="latency")`` (the
    on/off targets and ``interpolate`` take no part there, as in snnTorch's)."""
    return targets_convert(targets, num_classes, "latency", num_steps, first_spike_time,
                           on_target=on_target, off_target=off_target, interpolate=interpolate,
                           epsilon=epsilon, threshold=threshold, tau=tau, clip=clip,
                           normalize=normalize, linear=linear, bypass=bypass)


def target_rate_code(num_steps: int, first_spike_time: int = 0, rate: float = 1,
                     firing_pattern: str = "regular", *, device=None) -> tuple:
    """snnTorch's ``spikegen.target_rate_code``: (a train of ``num_steps`` spikes at
    ``rate`` from ``first_spike_time`` on, its int64 spike steps); 'regular' every 1/rate
    steps, 'uniform' as many at random steps, 'poisson' a draw per step (gp.random's); the
    train in the default dtype, as torch.Tensor makes it)."""
    op = "target_rate_code"
    steps = _enc._steps(num_steps, op)
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 <= rate <= 1:
        raise ValueError(f"{op}: rate must be a number in [0, 1], got {rate!r}")
    if (isinstance(first_spike_time, bool) or not isinstance(first_spike_time, numbers.Integral)
            or not 0 <= first_spike_time <= steps):
        raise ValueError(f"{op}: first_spike_time must be an int in [0, num_steps], got "
                         f"{first_spike_time!r}")
    pattern = _pattern(firing_pattern, op)
    d = get_default_dtype()
    train, times = _rate_code(steps, int(first_spike_time), float(rate), pattern, d.np)
    return (gp.asarray(train, dtype=d, device=device),
            gp.asarray(np.asarray(times, dtype=np.int64), device=device))


def rate_interpolate(spike_time, num_steps: int, on_target: float = 1, off_target: float = 0,
                     epsilon: float = 1e-7) -> Array:
    """snnTorch's ``spikegen.rate_interpolate``: a train of ``num_steps`` (the default dtype)
    ramping from ``off_target`` up to ``on_target`` at each of the (sorted) spike steps
    ``spike_time``, ``off_target`` after the last (the spike steps are read on the host)."""
    op = "rate_interpolate"
    steps = _enc._steps(num_steps, op)
    device = spike_time.device if isinstance(spike_time, gp.Array) else None
    times = np.asarray(spike_time).astype(np.int64).reshape(-1)
    if times.size and (times.min() < 0 or times.max() >= steps):
        raise ValueError(f"{op}: spike_time must lie in [0, num_steps), got {times.min()} .. "
                         f"{times.max()} for num_steps={steps}")
    if float(on_target) == float(off_target) and times.size:
        raise ValueError(f"{op}: on_target must differ from off_target")
    d = get_default_dtype()
    out = _rate_interpolate(np.sort(times), steps, float(on_target), float(off_target),
                            float(epsilon), d.np)
    return gp.asarray(out, dtype=d, device=device)


def _pattern(firing_pattern, op: str) -> str:
    """snnTorch's firing pattern, case-insensitive: 'regular', 'uniform' or 'poisson'."""
    pattern = firing_pattern.lower() if isinstance(firing_pattern, str) else firing_pattern
    if pattern not in ("regular", "uniform", "poisson"):
        raise ValueError(f"{op}: firing_pattern must be 'regular', 'uniform' or 'poisson', got "
                         f"{firing_pattern!r}")
    return pattern


def _rate_code(steps: int, first: int, rate: float, pattern: str, dt=np.float32):
    """One train of ``steps`` (snnTorch's target_rate_code) and its spike steps (host data);
    ``dt``: the NumPy dtype of torch's arange of the regular spike steps."""
    train = np.zeros(steps)
    if rate == 0:
        return train, np.zeros(0, dtype=np.int64)
    if pattern == "poisson":
        p = np.where(np.arange(steps) >= first, rate, 0.0)
        train = np.asarray(_random.bernoulli(gp.asarray(p)), dtype=np.float64)
        return train, np.nonzero(train == 1)[0]
    step = 1.0 / rate
    n = max(math.ceil((steps - first) / step), 0)   # len(torch.arange(first, steps, step))
    if pattern == "regular":   # torch's arange (float32, or the default dtype), truncated
        times = (first + np.arange(n) * step).astype(dt).astype(np.int64)
    else:
        u = np.asarray(_random.uniform(0.0, 1.0, (n,), dtype=gp.float32), dtype=np.float32)
        times = (u * np.float32(steps - first) + np.float32(first)).astype(np.int64)
    train[times] = 1.0
    return train, times


def _rate_interpolate(times, steps: int, on: float, off: float, eps: float, dt=np.float32):
    """snnTorch's rate_interpolate: a ramp from off up to on ending at each spike step, then
    off after the last spike (the ramps rounded to ``dt``, torch's arange dtype)."""
    if len(times) == 0:
        return np.full(steps, off)
    out, last, spiking = [], -1, set(int(t) for t in times)
    for s in range(steps):
        if s not in spiking:
            continue
        if s == last + 1:
            out.append(on)
        else:   # torch.arange(off, on + eps, (on - off) / gap)
            inc = (on - off) / (s - last - 1)
            n = math.ceil((on + eps - off) / inc)
            out.extend((off + np.arange(n) * inc).astype(dt))
        last = s
    top = int(max(times))
    out.extend([off] * max(steps - 1 - top, 0))
    return np.asarray(out, dtype=np.float64)
