"""SpikingJelly 2.0's remaining ``activation_based.layer`` classes: ``DropConnectLinear``,
``NeuNorm``, ``BatchNormThroughTime1d/2d/3d`` (BNTT), the time-last containers
``TLastSeqToANNContainer`` / ``TLastMultiStepContainer``, ``SpikeCountToBinary``,
``TemporalBinSum``, and the attention layers (``TemporalWiseAttention``,
``MultiDimensionalAttention``, Spikformer's ``SpikingSelfAttention``, QKFormer's
``QKAttention`` / ``TokenQKAttention`` / ``ChannelQKAttention`` and the Spike-driven
Transformer's ``SpikeDrivenSelfAttention``). Constructors, step modes and state_dict keys are
SpikingJelly's, so its weights load as they are; exported from ``grilly.nn.snn.layer``."""
from __future__ import annotations

import math
import numbers
from typing import Callable

from ...array import api as gp
from ...array.array import Array
from .. import _random, conv_rnn_extra as _C, functional as NF, layers as _L, norm_pool as _N
from ..module import Module, ModuleList, Sequential
from ..parameter import Parameter
from . import base
from .checks import _check_mode
from .containers import MultiStepContainer, SeqToANNContainer, _modules
from .neurons import LIFNode

__all__ = ["DropConnectLinear", "NeuNorm", "BatchNormThroughTime1d", "BatchNormThroughTime2d",
           "BatchNormThroughTime3d", "TLastSeqToANNContainer", "TLastMultiStepContainer",
           "SpikeCountToBinary", "TemporalBinSum", "TemporalWiseAttention",
           "MultiDimensionalAttention", "SpikingSelfAttention", "QKAttention",
           "TokenQKAttention", "ChannelQKAttention", "SpikeDrivenSelfAttention"]


def _int(v, name: str, op: str, low: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low:
        raise ValueError(f"{op}: {name} must be an int >= {low}, got {v!r}")
    return int(v)


def _shape_of(x) -> str:
    return str(getattr(x, "shape", type(x).__name__))


def _uniform(shape: tuple, bound: float, device, dtype) -> Parameter:
    """U(-bound, bound): torch's kaiming_uniform_(a=sqrt(5)) and bias init (bound 1/sqrt(fan_in))."""
    return Parameter(_random.uniform(shape, -bound, bound, dtype=dtype, device=device))


class DropConnectLinear(base.MemoryModule):
    """SpikingJelly's ``layer.DropConnectLinear(in_features, out_features, bias=True, p=0.5,
    samples_num=1024, invariant=False, activation=ReLU(), step_mode='s')`` (Wan et al. 2013).
    Training: each sample of the batch gets its own weight (and bias) with every connection
    kept where U[0, 1) >= p (no 1 / (1 - p) rescaling), y = act(W_b x + b_b); ``invariant`` keeps
    the dropped weights (memories ``dropped_w``, ``dropped_b``) until ``reset()``. Eval: the mean
    of ``act`` over ``samples_num`` draws of N(mu, sigma^2), mu = (1 - p)(x W^T + b), sigma^2 =
    p (1 - p)(x^2 (W^2)^T + b^2), drawn without a gradient (as SpikingJelly's ``sample()``)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, p: float = 0.5,
                 samples_num: int = 1024, invariant: bool = False,
                 activation: Callable | None = _L.ReLU(), step_mode: str = "s", *,
                 device=None, dtype=None) -> None:
        super().__init__()
        op = "DropConnectLinear"
        self.in_features = _int(in_features, "in_features", op)
        self.out_features = _int(out_features, "out_features", op)
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
            raise ValueError(f"{op}: p must be in [0, 1], got {p!r}")
        if activation is not None and (not callable(activation)
                                       or type(activation).__module__.startswith("torch")):
            raise TypeError(f"{op}: activation must be a grilly module or callable (or None), "
                            f"got {type(activation).__name__}")
        self.step_mode = _check_mode(step_mode, op)
        bound = 1.0 / math.sqrt(self.in_features)
        self.weight = _uniform((self.out_features, self.in_features), bound, device, dtype)
        if bias:
            self.bias = _uniform((self.out_features,), bound, device, dtype)
        else:
            self.register_parameter("bias", None)
        self.p = float(p)
        self.register_memory("dropped_w", None)
        if self.bias is not None:
            self.register_memory("dropped_b", None)
        self.samples_num = _int(samples_num, "samples_num", op)
        self.invariant = bool(invariant)
        self.activation = activation

    def reset(self) -> None:
        """Forget the dropped weights (and reset a stateful activation)."""
        super().reset()
        if callable(getattr(self.activation, "reset", None)):
            self.activation.reset()

    def _keep(self, shape: tuple) -> Array:
        u = _random.uniform(shape, dtype=self.weight.dtype, device=self.weight.device)
        return gp.astype(u >= self.p, self.weight.dtype)

    def drop(self, batch_size: int) -> tuple:
        """Per-sample dropped weights (B, out, in) and bias (B, out) (None without a bias)."""
        w = self.weight * self._keep((batch_size,) + tuple(self.weight.shape))
        if self.bias is None:
            return w, None
        return w, self.bias * self._keep((batch_size,) + tuple(self.bias.shape))

    def _act(self, y: Array) -> Array:
        return y if self.activation is None else self.activation(y)

    def single_step_forward(self, x: Array) -> Array:
        """One step (B, in_features) -> (B, out_features)."""
        op = "DropConnectLinear"
        if not isinstance(x, Array) or x.ndim != 2 or x.shape[1] != self.in_features:
            raise ValueError(f"{op}: expected one step (B, {self.in_features}), got "
                             f"{_shape_of(x)}")
        if not self.training:
            return self._sampled(x)
        w = self.dropped_w
        if not self.invariant or w is None:
            w, b = self.drop(x.shape[0])
            self.dropped_w = w
            if self.bias is not None:
                self.dropped_b = b
        elif w.shape[0] != x.shape[0]:
            raise ValueError(f"{op}: invariant weights were dropped for a batch of {w.shape[0]}, "
                             f"got {x.shape[0]}; call reset() first")
        y = gp.matmul(w, gp.expand_dims(x, axis=-1))[..., 0]
        if self.bias is not None:
            y = y + self.dropped_b
        return self._act(y)

    def _sampled(self, x: Array) -> Array:
        b = self.bias
        mu = (1.0 - self.p) * NF.linear(x, self.weight, b)
        var = self.p * (1.0 - self.p) * NF.linear(gp.square(x), gp.square(self.weight),
                                                  None if b is None else gp.square(b))
        mu, sd = mu.detach(), gp.sqrt(var.detach())
        z = _random.normal((self.samples_num,) + tuple(mu.shape), dtype=mu.dtype,
                           device=mu.device)
        return gp.mean(self._act(mu + sd * z), axis=0)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, p={self.p}, invariant={self.invariant}")


class NeuNorm(base.MemoryModule):
    """SpikingJelly's ``layer.NeuNorm(in_channels, height, width, k=0.9,
    shared_across_channels=False, step_mode='s')`` (Wu et al. 2019): per step (N, C, H, W),
    s = k s + (1 - k) / C^2 sum_c x (memory ``x``, starting at 0), y = x - w s; ``w`` (C or 1,
    H, W) learnable."""

    def __init__(self, in_channels: int, height: int, width: int, k: float = 0.9,
                 shared_across_channels: bool = False, step_mode: str = "s", *, device=None,
                 dtype=None) -> None:
        super().__init__()
        op = "NeuNorm"
        c, h, w = (_int(in_channels, "in_channels", op), _int(height, "height", op),
                   _int(width, "width", op))
        if isinstance(k, bool) or not isinstance(k, numbers.Real):
            raise TypeError(f"{op}: k must be a number, got {type(k).__name__}")
        self.step_mode = _check_mode(step_mode, op)
        self.register_memory("x", 0.0)
        self.in_channels, self.k0 = c, float(k)
        self.k1 = (1.0 - self.k0) / c ** 2
        # kaiming_uniform_(a=sqrt(5)) on (C, H, W): fan_in H * W, bound 1 / sqrt(fan_in)
        self.w = _uniform((1 if shared_across_channels else c, h, w), 1.0 / math.sqrt(h * w),
                          device, dtype)

    def single_step_functional_forward(self, inputs: tuple, states: tuple, **kw) -> tuple:
        """((x - w s',), (s',)), s' = k0 s + k1 sum_c x."""
        x = inputs[0]
        if not isinstance(x, Array) or x.ndim != 4 or x.shape[1] != self.in_channels \
                or tuple(x.shape[2:]) != tuple(self.w.shape[1:]):
            raise ValueError(f"NeuNorm: expected one step (N, {self.in_channels}, "
                             f"{self.w.shape[1]}, {self.w.shape[2]}), got {_shape_of(x)}")
        s = self.k0 * states[0] + self.k1 * gp.sum(x, axis=1, keepdims=True)
        return (x - self.w * s,), (s,)

    def extra_repr(self) -> str:
        return f"shape={tuple(self.w.shape)}"


class _BNTT(base.MemoryModule):
    """SpikingJelly's ``layer.BatchNormThroughTimeNd(T, num_features, eps=1e-5, momentum=0.1,
    affine=True, track_running_stats=True, step_mode='s')`` (BNTT, Kim & Panda 2021): one
    BatchNorm per time step (``bn_list[t]``, a scale without a shift: no bias), step t of a
    sequence through ``bn_list[t]`` (the step counter ``t`` is a memory: ``reset()`` between
    sequences)."""

    _bn: type = None

    def __init__(self, T: int, num_features: int, eps: float = 1e-5,  # noqa: N803
                 momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, step_mode: str = "s", *, device=None,
                 dtype=None) -> None:
        super().__init__()
        op = type(self).__name__
        self.T = _int(T, "T", op)
        self.bn_list = ModuleList([self._bn(num_features, eps, momentum, affine,
                                            track_running_stats, device=device, dtype=dtype,
                                            bias=False) for _ in range(self.T)])
        self.step_mode = _check_mode(step_mode, op)
        self.register_memory("t", -1)

    def single_step_functional_forward(self, inputs: tuple, states: tuple, **kw) -> tuple:
        """The next step's BatchNorm on one step."""
        t = states[0] + 1
        if t >= self.T:
            raise ValueError(f"{type(self).__name__}: step {t} of a layer made for T={self.T} "
                             "steps; call reset() (snn.reset(net)) between sequences")
        return (self.bn_list[t](inputs[0]),), (t,)

    def extra_repr(self) -> str:
        return f"T={self.T}, step_mode={self.step_mode}"


class BatchNormThroughTime1d(_BNTT):
    __doc__ = _BNTT.__doc__
    _bn = _L.BatchNorm1d


class BatchNormThroughTime2d(_BNTT):
    __doc__ = _BNTT.__doc__
    _bn = _L.BatchNorm2d


class BatchNormThroughTime3d(_BNTT):
    __doc__ = _BNTT.__doc__
    _bn = _N.BatchNorm3d


def _t_last(x, op: str) -> Array:
    if not isinstance(x, Array) or x.ndim < 2 or x.shape[-1] == 0:
        raise ValueError(f"{op}: expected a sequence (B, ..., T) with T >= 1, got "
                         f"{_shape_of(x)}")
    return x


class TLastSeqToANNContainer(SeqToANNContainer):
    """SpikingJelly's ``layer.TLastSeqToANNContainer(*modules)``: stateless modules on a
    time-last sequence (B, ..., T), each step x[..., t] as a batch (B, ...); run here as one
    (T * B, ...) batch (SpikingJelly vmaps the steps: the same for per-sample modules; a
    BatchNorm inside would see statistics over T * B, SpikingJelly's vmap refuses it)."""

    def __init__(self, *modules: Module) -> None:
        Sequential.__init__(self, *_modules("TLastSeqToANNContainer", modules))

    def forward(self, x: Array) -> Array:
        """The modules on every step of x (B, ..., T), the result (B, ..., T)."""
        x = gp.moveaxis(_t_last(x, "TLastSeqToANNContainer"), -1, 0)
        t, b = x.shape[:2]
        y = Sequential.forward(self, gp.reshape(x, (t * b,) + tuple(x.shape[2:])))
        return gp.moveaxis(gp.reshape(y, (t, b) + tuple(y.shape[1:])), 0, -1)


class TLastMultiStepContainer(MultiStepContainer):
    """SpikingJelly's ``layer.TLastMultiStepContainer(*modules)``: single-step modules looped
    over the last axis of (B, ..., T), the outputs stacked on the last axis."""

    def __init__(self, *modules: Module) -> None:
        Sequential.__init__(self, *_modules("TLastMultiStepContainer", modules))

    def forward(self, x: Array) -> Array:
        """The modules on each x[..., t], stacked to (B, ..., T)."""
        steps = gp.unstack(_t_last(x, "TLastMultiStepContainer"), axis=-1)
        return gp.stack([self._one_step(s) for s in steps], axis=-1)


class _MultiStep(base.MultiStepModule, Module):
    """A module of step_mode 'm' only (SpikingJelly's ``nn.Module, base.MultiStepModule``)."""

    def __init__(self) -> None:
        super().__init__()
        self.step_mode = "m"


def _seq(x, op: str) -> Array:
    if not isinstance(x, Array) or x.ndim < 2 or x.shape[0] == 0:
        raise ValueError(f"{op}: x_seq must have shape (T, N, ...) with T > 0, got "
                         f"{_shape_of(x)}")
    return x


class _Slots(_MultiStep):
    def __init__(self, num_slots: int, always_convert: bool = False) -> None:
        super().__init__()
        self.num_slots = _int(num_slots, "num_slots", type(self).__name__)
        self.always_convert = bool(always_convert)

    def extra_repr(self) -> str:
        return f"num_slots={self.num_slots}, always_convert={self.always_convert}"


class SpikeCountToBinary(_Slots):
    """SpikingJelly's ``layer.SpikeCountToBinary(num_slots, always_convert=False)``: each step's
    spike counts c (T, N, ...) as ``num_slots`` binary steps (T * num_slots, N, ...), slot s
    firing where s < c, with a straight-through gradient 1 / num_slots; the identity while
    training unless ``always_convert``."""

    def forward(self, x_seq: Array) -> Array:
        """(T, N, ...) counts -> (T * num_slots, N, ...) spikes (eval or always_convert)."""
        if not self.always_convert and self.training:
            return x_seq
        x = _seq(x_seq, "SpikeCountToBinary")
        counts = gp.expand_dims(x, axis=1)
        slots = gp.reshape(gp.arange(self.num_slots, dtype=x.dtype, device=x.device),
                           (1, self.num_slots) + (1,) * (x.ndim - 1))
        hard = gp.astype(slots < counts, x.dtype)
        proxy = counts / self.num_slots
        y = hard + (proxy - proxy.detach())   # the spikes' values, the proxy's gradient
        return gp.reshape(y, (x.shape[0] * self.num_slots,) + tuple(x.shape[1:]))


class TemporalBinSum(_Slots):
    """SpikingJelly's ``layer.TemporalBinSum(num_slots, always_convert=False)``: the sums of
    consecutive bins of ``num_slots`` steps, (T, N, ...) -> (ceil(T / num_slots), N, ...), the
    last bin zero-padded; the identity while training unless ``always_convert``."""

    def forward(self, x_seq: Array) -> Array:
        """The per-bin sums (eval or always_convert)."""
        if not self.always_convert and self.training:
            return x_seq
        x = _seq(x_seq, "TemporalBinSum")
        s, rest = self.num_slots, x.shape[0] % self.num_slots
        if rest:
            pad = gp.zeros((s - rest,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
            x = gp.concat([x, pad], axis=0)
        return gp.sum(gp.reshape(x, (-1, s) + tuple(x.shape[1:])), axis=1)


class TemporalWiseAttention(_MultiStep):
    """SpikingJelly's ``layer.TemporalWiseAttention(T, reduction=16, dimension=4)`` (TA-SNN,
    Yao et al. 2021), step_mode 'm': each step of (T, N, C, H, W) (``dimension=4``) or (T, N, L)
    (``dimension=2``) times sigmoid(MLP(avg) + MLP(max)), the per-sample average and maximum
    of each step through the shared ``sharedMLP`` (Linear(T, T // reduction), ReLU,
    Linear(T // reduction, T), no biases)."""

    def __init__(self, T: int, reduction: int = 16, dimension: int = 4) -> None:  # noqa: N803
        super().__init__()
        op = "TemporalWiseAttention"
        if dimension not in (2, 4):
            raise ValueError(f"{op}: dimension must be 4 or 2, got {dimension!r}")
        T, reduction = _int(T, "T", op), _int(reduction, "reduction", op)  # noqa: N806
        if T < reduction:
            raise ValueError(f"{op}: reduction ({reduction}) cannot be greater than T ({T})")
        self.dimension = dimension
        if dimension == 2:
            self.avg_pool, self.max_pool = _N.AdaptiveAvgPool1d(1), _N.AdaptiveMaxPool1d(1)
        else:
            self.avg_pool, self.max_pool = _N.AdaptiveAvgPool3d(1), _N.AdaptiveMaxPool3d(1)
        self.sharedMLP = Sequential(_L.Linear(T, T // reduction, bias=False), _L.ReLU(),
                                    _L.Linear(T // reduction, T, bias=False))

    def forward(self, x_seq: Array) -> Array:
        """x_seq (T, N, ...) with each step weighted by its attention score."""
        nd = 3 if self.dimension == 2 else 5
        if not isinstance(x_seq, Array) or x_seq.ndim != nd:
            want = "(T, N, L)" if nd == 3 else "(T, N, C, H, W)"
            raise ValueError(f"TemporalWiseAttention: dimension={self.dimension} expects "
                             f"{want}, got {_shape_of(x_seq)}")
        x = gp.swapaxes(x_seq, 0, 1)
        n, t = x.shape[:2]
        avg = self.sharedMLP(gp.reshape(self.avg_pool(x), (n, t)))
        mx = self.sharedMLP(gp.reshape(self.max_pool(x), (n, t)))
        score = gp.reshape(NF.sigmoid(avg + mx), (n, t) + (1,) * (x.ndim - 2))
        return gp.swapaxes(x * score, 0, 1)


class _AxisAttention(Module):
    """MA-SNN's temporal (or, ``channel_axis``, channel) attention of (N, T, C, H, W): a score
    per step (channel) from a shared 1x1x1-Conv3d MLP of the average and the maximum."""

    def __init__(self, in_planes: int, ratio: int, channel_axis: bool = False) -> None:
        super().__init__()
        self.channel_axis = channel_axis
        self.avg_pool, self.max_pool = _N.AdaptiveAvgPool3d(1), _N.AdaptiveMaxPool3d(1)
        self.sharedMLP = Sequential(_C.Conv3d(in_planes, in_planes // ratio, 1, bias=False),
                                    _L.ReLU(),
                                    _C.Conv3d(in_planes // ratio, in_planes, 1, bias=False))

    def forward(self, x: Array) -> Array:
        """The score, broadcastable to x."""
        if self.channel_axis:
            x = gp.swapaxes(x, 1, 2)
        s = NF.sigmoid(self.sharedMLP(self.avg_pool(x)) + self.sharedMLP(self.max_pool(x)))
        return gp.swapaxes(s, 1, 2) if self.channel_axis else s


class _SpatialAttention(Module):
    """MA-SNN's spatial attention of (N, T, C, H, W): sigmoid of a Conv2d(2, 1) over the mean
    and the maximum across T * C, a score (N, 1, 1, H, W)."""

    def __init__(self, kernel_size: int) -> None:
        super().__init__()
        self.conv = _L.Conv2d(2, 1, kernel_size, padding=3 if kernel_size == 7 else 1,
                              bias=False)

    def forward(self, x: Array) -> Array:
        """The score, broadcastable to x."""
        x = gp.reshape(x, (x.shape[0], x.shape[1] * x.shape[2]) + tuple(x.shape[3:]))
        pooled = gp.concat([gp.mean(x, axis=1, keepdims=True),
                            gp.max(x, axis=1, keepdims=True)], axis=1)
        return gp.expand_dims(NF.sigmoid(self.conv(pooled)), axis=1)


class MultiDimensionalAttention(_MultiStep):
    """SpikingJelly's ``layer.MultiDimensionalAttention(T, C, reduction_t=16, reduction_c=16,
    kernel_size=3, use_temporal=True, use_channel=True, use_spatial=True)`` (MA-SNN, Yao et al.
    2023), step_mode 'm': on (T, N, C, H, W), temporal then channel then spatial attention
    (each x = score(x) x; a disabled one is None), then ReLU. Submodules ``ta``, ``ca``, ``sa``
    with SpikingJelly's keys (``ta.sharedMLP.0.weight``, ``sa.conv.weight``, ...)."""

    def __init__(self, T: int, C: int, reduction_t: int = 16, reduction_c: int = 16,  # noqa: N803
                 kernel_size: int = 3, use_temporal: bool = True, use_channel: bool = True,
                 use_spatial: bool = True) -> None:
        super().__init__()
        op = "MultiDimensionalAttention"
        if not (use_temporal or use_channel or use_spatial):
            raise ValueError(f"{op}: at least one of use_temporal, use_channel and use_spatial "
                             "must be True")
        if use_temporal and _int(T, "T", op) < _int(reduction_t, "reduction_t", op):
            raise ValueError(f"{op}: reduction_t ({reduction_t}) cannot be greater than T ({T})")
        if use_channel and _int(C, "C", op) < _int(reduction_c, "reduction_c", op):
            raise ValueError(f"{op}: reduction_c ({reduction_c}) cannot be greater than C ({C})")
        if kernel_size not in (3, 7):
            raise ValueError(f"{op}: kernel_size must be 3 or 7, got {kernel_size!r}")
        self.ta = _AxisAttention(T, reduction_t) if use_temporal else None
        self.ca = _AxisAttention(C, reduction_c, channel_axis=True) if use_channel else None
        self.sa = _SpatialAttention(kernel_size) if use_spatial else None
        self.relu = _L.ReLU()

    def forward(self, x: Array) -> Array:
        """(T, N, C, H, W) -> (T, N, C, H, W)."""
        if not isinstance(x, Array) or x.ndim != 5:
            raise ValueError(f"MultiDimensionalAttention: expected (T, N, C, H, W), got "
                             f"{_shape_of(x)}")
        out = gp.swapaxes(x, 0, 1)
        for att in (self.ta, self.ca, self.sa):
            if att is not None:
                out = att(out) * out
        return gp.swapaxes(self.relu(out), 0, 1)


class _FiringAtThreshold(LIFNode):
    """The attention layers' default neuron, SpikingJelly's LIFNode exactly: it fires where v >=
    v_threshold (grilly's LIFNode: v > v_threshold). Their inputs are spike counts times 1/2
    (tau = 2) against thresholds of 0.5 or 1, so the membrane often equals the threshold."""

    def neuronal_fire(self) -> Array:
        """surrogate(v - v_threshold), plus a spike (no gradient) where they are equal."""
        d = self.v - self.v_threshold
        return self.surrogate(d) + gp.astype(d == 0, d.dtype)


def _neuron(spiking_neuron, kwargs: dict, defaults: dict, op: str):
    """SpikingJelly's ``_make_multi_step_neuron``: the defaults (LIF, tau=2, detach_reset)
    only for the default neuron, the user's kwargs on top, step_mode 'm'."""
    if kwargs.get("step_mode", "m") != "m":
        raise ValueError(f"{op}: the spiking neurons need step_mode='m', got "
                         f"{kwargs['step_mode']!r}")
    if spiking_neuron is not None and not callable(spiking_neuron):
        raise TypeError(f"{op}: spiking_neuron must be a neuron class (or None), got "
                        f"{type(spiking_neuron).__name__}")
    params = dict(defaults) if spiking_neuron is None else {}
    params.update(kwargs)
    params["step_mode"] = "m"
    return (_FiringAtThreshold if spiking_neuron is None else spiking_neuron)(**params)


_LIF = {"tau": 2.0, "detach_reset": True}
_ATTN_LIF = {"tau": 2.0, "v_threshold": 0.5, "detach_reset": True}


def _heads(dim: int, num_heads: int, op: str) -> int:
    if _int(dim, "dim", op) % _int(num_heads, "num_heads", op):
        raise ValueError(f"{op}: dim {dim} should be divided by num_heads {num_heads}")
    return dim // num_heads


def _conv_bn(c_in: int, c_out: int) -> SeqToANNContainer:
    return SeqToANNContainer(_L.Conv1d(c_in, c_out, 1, bias=False), _L.BatchNorm1d(c_out))


def _tokens(x, dim: int, op: str) -> Array:
    if not isinstance(x, Array) or x.ndim != 4 or x.shape[2] != dim:
        raise ValueError(f"{op}: expected x_seq (T, N, {dim}, L), got {_shape_of(x)}")
    return x


class SpikingSelfAttention(Module):
    """SpikingJelly's ``layer.SpikingSelfAttention(dim, num_heads=8, spiking_neuron=None,
    **kwargs)`` (Spikformer's SSA, Zhou et al. 2023) on spikes (T, N, C, L): Q, K, V spikes
    from a 1x1 Conv1d + BatchNorm1d (``qkv_conv_bn``) and ``qkv_lif``; per head
    (V K^T) Q * 0.125 through ``attn_lif`` (threshold 0.5), then ``proj_conv_bn`` and
    ``proj_lif``. The neurons: SpikingJelly's LIFNode (tau=2, detach_reset) or
    ``spiking_neuron(**kwargs)``, in step_mode 'm'."""

    def __init__(self, dim: int, num_heads: int = 8, spiking_neuron: Callable | None = None,
                 **kwargs) -> None:
        super().__init__()
        op = "SpikingSelfAttention"
        self.head_dim = _heads(dim, num_heads, op)
        self.dim, self.num_heads, self.scale = dim, num_heads, 0.125
        self.qkv_conv_bn = _conv_bn(dim, 3 * dim)
        self.qkv_lif = _neuron(spiking_neuron, kwargs, _LIF, op)
        self.attn_lif = _neuron(spiking_neuron, kwargs, _ATTN_LIF, op)
        self.proj_conv_bn = _conv_bn(dim, dim)
        self.proj_lif = _neuron(spiking_neuron, kwargs, _LIF, op)

    def forward(self, x_seq: Array) -> Array:
        """(T, N, C, L) spikes -> (T, N, C, L) spikes."""
        t, n, c, length = _tokens(x_seq, self.dim, "SpikingSelfAttention").shape
        qkv = self.qkv_lif(self.qkv_conv_bn(x_seq))
        qkv = gp.reshape(qkv, (t, n, 3, self.num_heads, self.head_dim, length))
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        y = gp.matmul(gp.matmul(v, gp.swapaxes(k, -1, -2)), q) * self.scale
        y = gp.reshape(self.attn_lif(y), (t, n, c, length))
        return self.proj_lif(self.proj_conv_bn(y))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, num_heads={self.num_heads}"


class QKAttention(Module):
    """SpikingJelly's ``layer.QKAttention(dim, num_heads=8, qka_type='token',
    spiking_neuron=None, **kwargs)`` (QKFormer's Q-K attention, Zhou et al. 2024) on spikes
    (T, N, C, L): Q, K spikes (``qk_conv_bn``, ``qk_lif``); per head, Q summed over the head's
    channels ('token': a mask per token) or over the tokens ('channel': a mask per channel),
    through ``attn_lif`` (threshold 0.5), times K; then ``proj_conv_bn``, ``proj_lif``."""

    def __init__(self, dim: int, num_heads: int = 8, qka_type: str = "token",
                 spiking_neuron: Callable | None = None, **kwargs) -> None:
        super().__init__()
        op = type(self).__name__
        self.head_dim = _heads(dim, num_heads, op)
        if qka_type not in ("token", "channel"):
            raise ValueError(f"{op}: qka_type should be either 'token' or 'channel', got "
                             f"{qka_type!r}")
        self.dim, self.num_heads, self._qka_type = dim, num_heads, qka_type
        self.qk_conv_bn = _conv_bn(dim, 2 * dim)
        self.qk_lif = _neuron(spiking_neuron, kwargs, _LIF, op)
        self.sum_dim = 3 if qka_type == "token" else 4
        self.attn_lif = _neuron(spiking_neuron, kwargs, _ATTN_LIF, op)
        self.proj_conv_bn = _conv_bn(dim, dim)
        self.proj_lif = _neuron(spiking_neuron, kwargs, _LIF, op)

    @property
    def qka_type(self) -> str:
        """'token' or 'channel' (read-only, set by the constructor)."""
        return self._qka_type

    def forward(self, x_seq: Array) -> Array:
        """(T, N, C, L) spikes -> (T, N, C, L) spikes."""
        t, n, c, length = _tokens(x_seq, self.dim, type(self).__name__).shape
        qk = self.qk_lif(self.qk_conv_bn(x_seq))
        qk = gp.reshape(qk, (t, n, 2, self.num_heads, self.head_dim, length))
        q, k = qk[:, :, 0], qk[:, :, 1]
        attn = self.attn_lif(gp.sum(q, axis=self.sum_dim, keepdims=True))
        y = gp.reshape(attn * k, (t, n, c, length))
        return self.proj_lif(self.proj_conv_bn(y))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, num_heads={self.num_heads}, qka_type={self.qka_type}"


class TokenQKAttention(QKAttention):
    """SpikingJelly's ``layer.TokenQKAttention(dim, num_heads=8, spiking_neuron=None,
    **kwargs)``: QKAttention with qka_type='token'."""

    def __init__(self, dim: int, num_heads: int = 8, spiking_neuron: Callable | None = None,
                 **kwargs) -> None:
        super().__init__(dim, num_heads, "token", spiking_neuron, **kwargs)


class ChannelQKAttention(QKAttention):
    """SpikingJelly's ``layer.ChannelQKAttention(dim, num_heads=8, spiking_neuron=None,
    **kwargs)``: QKAttention with qka_type='channel'."""

    def __init__(self, dim: int, num_heads: int = 8, spiking_neuron: Callable | None = None,
                 **kwargs) -> None:
        super().__init__(dim, num_heads, "channel", spiking_neuron, **kwargs)


class SpikeDrivenSelfAttention(Module):
    """SpikingJelly's ``layer.SpikeDrivenSelfAttention(dim, num_heads=8, spiking_neuron=None,
    **kwargs)`` (Spike-driven Transformer v1, Yao et al. 2023) on (T, N, C, H, W): x through
    ``shortcut_lif``; Q, K, V spikes from 1x1 ``layer.Conv2d`` + ``layer.BatchNorm2d`` (step_mode
    'm') and their LIFs; per head, the token sum of K * V through ``attn_lif`` (threshold 0.5)
    masks Q; ``proj_bn(proj_conv(.))`` plus the input (a residual)."""

    def __init__(self, dim: int, num_heads: int = 8, spiking_neuron: Callable | None = None,
                 **kwargs) -> None:
        super().__init__()
        op = "SpikeDrivenSelfAttention"
        self.head_dim = _heads(dim, num_heads, op)
        self.dim, self.num_heads = dim, num_heads
        self.shortcut_lif = _neuron(spiking_neuron, kwargs, _LIF, op)
        # grilly.nn's Conv2d and BatchNorm2d over the T * N images (SpikingJelly's layer.* in
        # 'm': the same keys; layer.py imports this module, so not its wrappers)
        for name in "qkv":
            setattr(self, f"{name}_conv", _L.Conv2d(dim, dim, 1, bias=False))
            setattr(self, f"{name}_bn", _L.BatchNorm2d(dim))
            setattr(self, f"{name}_lif", _neuron(spiking_neuron, kwargs, _LIF, op))
        self.attn_lif = _neuron(spiking_neuron, kwargs, _ATTN_LIF, op)
        self.proj_conv = _L.Conv2d(dim, dim, 1)
        self.proj_bn = _L.BatchNorm2d(dim)

    def forward(self, x: Array) -> Array:
        """(T, N, C, H, W) -> (T, N, C, H, W)."""
        if not isinstance(x, Array) or x.ndim != 5 or x.shape[2] != self.dim:
            raise ValueError(f"SpikeDrivenSelfAttention: expected (T, N, {self.dim}, H, W), got "
                             f"{_shape_of(x)}")
        t, n, c, h, w = x.shape
        s = self.shortcut_lif(x)

        def images(f, z: Array) -> Array:   # f on the T * N images of a (T, N, C, H, W) z
            y = f(gp.reshape(z, (t * n, *z.shape[2:])))
            return gp.reshape(y, (t, n, *y.shape[1:]))

        def heads(name: str) -> Array:
            # (T, N, C, H, W) -> (T, N, heads, H * W, head_dim)
            conv, bn = getattr(self, f"{name}_conv"), getattr(self, f"{name}_bn")
            y = getattr(self, f"{name}_lif")(images(lambda z: bn(conv(z)), s))
            y = gp.reshape(y, (t, n, self.num_heads, self.head_dim, h * w))
            return gp.swapaxes(y, 3, 4)

        q, k, v = heads("q"), heads("k"), heads("v")
        kv = self.attn_lif(gp.sum(k * v, axis=-2, keepdims=True))
        y = gp.reshape(gp.swapaxes(q * kv, 3, 4), (t, n, c, h, w))
        return images(lambda z: self.proj_bn(self.proj_conv(z)), y) + x

    def extra_repr(self) -> str:
        return f"dim={self.dim}, num_heads={self.num_heads}"
