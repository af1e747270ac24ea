"""More of SpikingJelly's ``activation_based.layer``: weight-standardized ``WSLinear`` and
``WSConv2d``, ``MaxUnpool1d/2d/3d`` with a step_mode, and the SNN BatchNorms that take a whole
(T, B, ...) sequence: threshold-dependent (tdBN) and temporal-effective (TEBN)."""
from __future__ import annotations

import math
import numbers

from ...array import api as gp
from ...array.defaults import get_default_dtype
from ...array.array import Array
from .. import functional as NF, layers as _L, norm_pool as _N
from ..parameter import Parameter
from .checks import _check_mode

__all__ = ["WSLinear", "WSConv2d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
           "ThresholdDependentBatchNorm1d", "ThresholdDependentBatchNorm2d",
           "ThresholdDependentBatchNorm3d", "TemporalEffectiveBatchNorm1d",
           "TemporalEffectiveBatchNorm2d", "TemporalEffectiveBatchNorm3d"]


def _merge(x, op: str, ndims: tuple, want: str) -> Array:
    """A (T, B, ...) sequence as one (T * B, ...) batch (its rank checked)."""
    if not isinstance(x, Array) or x.ndim not in ndims:
        raise ValueError(f"{op}: expected a sequence {want}, got shape "
                         f"{getattr(x, 'shape', type(x).__name__)}")
    return gp.reshape(x, (x.shape[0] * x.shape[1],) + tuple(x.shape[2:]))


def _split(y: Array, t: int, b: int) -> Array:
    return gp.reshape(y, (t, b) + tuple(y.shape[1:]))


def _standardize(w: Array, gain, eps: float) -> Array:
    """SpikingJelly's weight standardization: (w - mean) / sqrt(var fan_in + eps) per output,
    var unbiased (torch.var's default), times gain."""
    axes = tuple(range(1, w.ndim))
    fan_in = math.prod(w.shape[1:])
    mean = gp.mean(w, axis=axes, keepdims=True)
    var = gp.var(w, axis=axes, keepdims=True, correction=1)
    w = (w - mean) / (var * fan_in + eps) ** 0.5
    return w if gain is None else w * gain


def _ws_opts(self, gain, eps, op: str, shape: tuple) -> None:
    if not isinstance(gain, bool):
        raise TypeError(f"{op}: gain must be a bool, got {type(gain).__name__}")
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps >= 0:
        raise ValueError(f"{op}: eps must be a number >= 0, got {eps!r}")
    self.eps = float(eps)
    if gain:
        self.gain = Parameter(gp.ones(shape, dtype=self.weight.dtype, device=self.weight.device))
    else:
        self.gain = None


class WSLinear(_L.Linear):
    """SpikingJelly's ``layer.WSLinear(in_features, out_features, bias=True, step_mode='s',
    gain=True, eps=1e-4)``: Linear with its weight standardized per output (``get_weight()``),
    times a learnable ``gain`` (out_features, 1); the last axis in either step mode."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 step_mode: str = "s", gain: bool = True, eps: float = 1e-4, **kw) -> None:
        super().__init__(in_features, out_features, bias, **kw)
        self.step_mode = _check_mode(step_mode, "WSLinear")
        _ws_opts(self, gain, eps, "WSLinear", (out_features, 1))

    def get_weight(self) -> Array:
        """The standardized weight (times gain)."""
        return _standardize(self.weight, self.gain, self.eps)

    def forward(self, x: Array) -> Array:
        """x @ get_weight().T + bias on the last axis."""
        return NF.linear(x, self.get_weight(), self.bias)


class WSConv2d(_L.Conv2d):
    """SpikingJelly's ``layer.WSConv2d(in_channels, out_channels, kernel_size, stride=1,
    padding=0, dilation=1, groups=1, bias=True, padding_mode='zeros', step_mode='s',
    gain=True, eps=1e-4)``: Conv2d with its weight standardized per output channel, times a
    learnable ``gain`` (out_channels, 1, 1, 1); 'm' runs a (T, B, C, H, W) sequence as T * B."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 step_mode: str = "s", gain: bool = True, eps: float = 1e-4, **kw) -> None:
        if padding_mode != "zeros":
            raise NotImplementedError(f"WSConv2d: padding_mode={padding_mode!r}; 'zeros' only "
                                      "(as SpikingJelly's, which pads with zeros whatever the "
                                      "mode)")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, **kw)
        self.step_mode = _check_mode(step_mode, "WSConv2d")
        _ws_opts(self, gain, eps, "WSConv2d", (out_channels, 1, 1, 1))

    def get_weight(self) -> Array:
        """The standardized weight (times gain)."""
        return _standardize(self.weight, self.gain, self.eps)

    def _conv(self, x: Array) -> Array:
        return NF.conv2d(x, self.get_weight(), self.bias, self.stride, self.padding,
                         self.dilation, self.groups)

    def forward(self, x: Array) -> Array:
        """One step (N, C, H, W) or, in 'm', a (T, B, C, H, W) sequence."""
        if self.step_mode == "s":
            return self._conv(x)
        t, b = x.shape[:2] if isinstance(x, Array) and x.ndim == 5 else (0, 0)
        return _split(self._conv(_merge(x, "WSConv2d", (5,), "(T, B, C, H, W)")), t, b)


class _Unpool:
    """SpikingJelly's ``layer.MaxUnpoolNd(kernel_size, stride=None, padding=0, step_mode)``:
    ``forward(x, indices, output_size=None)``; 'm' takes (T, B, C, ...) values and indices
    (MaxPoolNd's in 'm') and runs them as T * B."""

    _want = ""

    def __init__(self, kernel_size, stride=None, padding=0, step_mode: str = "s") -> None:
        super().__init__(kernel_size, stride, padding)
        self.step_mode = _check_mode(step_mode, type(self).__name__)

    def forward(self, x: Array, indices: Array, output_size=None) -> Array:
        """The values put back at their indices (zeros elsewhere), per step or per sequence."""
        if self.step_mode == "s":
            return super().forward(x, indices, output_size)
        op = type(self).__name__
        nd = self._n + 3
        xs = _merge(x, op, (nd,), self._want)
        if not isinstance(indices, Array) or tuple(indices.shape) != tuple(x.shape):
            raise ValueError(f"{op}: indices must have the shape of x {tuple(x.shape)}, got "
                             f"{getattr(indices, 'shape', type(indices).__name__)}")
        y = super().forward(xs, _merge(indices, op, (nd,), self._want), output_size)
        return _split(y, x.shape[0], x.shape[1])

    def extra_repr(self) -> str:
        return super().extra_repr() + f", step_mode={self.step_mode}"


class MaxUnpool1d(_Unpool, _N.MaxUnpool1d):
    __doc__ = _Unpool.__doc__
    _want = "(T, B, C, L)"


class MaxUnpool2d(_Unpool, _N.MaxUnpool2d):
    __doc__ = _Unpool.__doc__
    _want = "(T, B, C, H, W)"


class MaxUnpool3d(_Unpool, _N.MaxUnpool3d):
    __doc__ = _Unpool.__doc__
    _want = "(T, B, C, D, H, W)"


class _SeqBN:
    """A BatchNorm over a whole (T, B, C, ...) sequence (statistics over T * B); step_mode
    'm' only (SpikingJelly's MultiStepModule)."""

    _seq_ndims: tuple = ()
    _want = ""

    @property
    def step_mode(self) -> str:
        """Always 'm': the statistics are taken across the time steps."""
        return "m"

    @step_mode.setter
    def step_mode(self, value: str) -> None:
        if value != "m":
            raise ValueError(f"{type(self).__name__}: step_mode must be 'm' (the statistics span "
                             f"the time steps), got {value!r}")

    def _bn(self, x_seq: Array) -> Array:
        op = type(self).__name__
        y = super().forward(_merge(x_seq, op, self._seq_ndims, self._want))
        return _split(y, x_seq.shape[0], x_seq.shape[1])


class _TDBN(_SeqBN):
    """SpikingJelly's ``layer.ThresholdDependentBatchNormNd(alpha, v_th, num_features, eps,
    momentum, affine, track_running_stats)`` (tdBN, Zheng et al. 2021): BatchNorm over T * B
    with its weight starting at alpha * v_th; 'm' only."""

    def __init__(self, alpha: float, v_th: float, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        op = type(self).__name__
        if not self.affine:
            raise ValueError(f"{op}: needs affine=True (its weight starts at alpha * v_th)")
        self.alpha, self.v_th = float(alpha), float(v_th)
        self.weight = Parameter(gp.full(self.weight.shape, self.alpha * self.v_th,
                                        dtype=self.weight.dtype, device=self.weight.device))

    def forward(self, x_seq: Array) -> Array:
        """The normalized sequence (T, B, C, ...)."""
        return self._bn(x_seq)


class _TEBN(_SeqBN):
    """SpikingJelly's ``layer.TemporalEffectiveBatchNormNd(T, num_features, eps, momentum,
    affine, track_running_stats)`` (TEBN, Duan et al. 2022): BatchNorm over T * B, each step
    then scaled by its own learnable ``scale[t]`` (ones at first); 'm' only."""

    def __init__(self, T: int, *args, **kwargs) -> None:  # noqa: N803
        super().__init__(*args, **kwargs)
        if isinstance(T, bool) or not isinstance(T, int) or T < 1:
            raise ValueError(f"{type(self).__name__}: T must be an int >= 1, got {T!r}")
        self.scale = Parameter(gp.ones((T,), dtype=self.weight.dtype if self.weight is not None
                                       else get_default_dtype()))

    def forward(self, x_seq: Array) -> Array:
        """The normalized sequence (T, B, C, ...), step t times scale[t]."""
        y = self._bn(x_seq)
        if y.shape[0] != self.scale.shape[0]:
            raise ValueError(f"{type(self).__name__}: the sequence has T={y.shape[0]} steps, the "
                             f"layer was made for T={self.scale.shape[0]}")
        return y * gp.reshape(self.scale, (-1,) + (1,) * (y.ndim - 1))


_B1 = ((3, 4), "(T, B, C) or (T, B, C, L)")
_B2 = ((5,), "(T, B, C, H, W)")
_B3 = ((6,), "(T, B, C, D, H, W)")


def _seq_bn(kind: type, bn: type, shapes: tuple, name: str) -> type:
    return type(name, (kind, bn), {"_seq_ndims": shapes[0], "_want": shapes[1],
                                   "__module__": __name__, "__doc__": kind.__doc__})


ThresholdDependentBatchNorm1d = _seq_bn(_TDBN, _L.BatchNorm1d, _B1, "ThresholdDependentBatchNorm1d")
ThresholdDependentBatchNorm2d = _seq_bn(_TDBN, _L.BatchNorm2d, _B2, "ThresholdDependentBatchNorm2d")
ThresholdDependentBatchNorm3d = _seq_bn(_TDBN, _N.BatchNorm3d, _B3, "ThresholdDependentBatchNorm3d")
TemporalEffectiveBatchNorm1d = _seq_bn(_TEBN, _L.BatchNorm1d, _B1, "TemporalEffectiveBatchNorm1d")
TemporalEffectiveBatchNorm2d = _seq_bn(_TEBN, _L.BatchNorm2d, _B2, "TemporalEffectiveBatchNorm2d")
TemporalEffectiveBatchNorm3d = _seq_bn(_TEBN, _N.BatchNorm3d, _B3, "TemporalEffectiveBatchNorm3d")
