"""snnTorch's ``spikegen`` under its names and positional order (``from grilly.nn.snn import
spikegen``): rate, latency and delta are grilly's encoders (``snn.rate``, ``snn.latency``,
``snn.delta``), rate_conv one Bernoulli draw, to_one_hot the label matrix, from_one_hot its
inverse."""
from __future__ import annotations

from ...array import api as gp
from ...array.array import Array
from .. import functional as NF
from . import encoding as _enc

__all__ = ["rate", "latency", "delta", "rate_conv", "to_one_hot", "from_one_hot"]


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
