"""torch.nn's group, instance and local response normalization, BatchNorm3d, and the pooling
layers beyond the 2-D ones in layers.py: 3-D max and average pooling, max unpooling, adaptive
max pooling, adaptive average pooling in 1-D and 3-D, and power-average (LP) pooling."""
from __future__ import annotations

import warnings

from ..array import api as gp
from ..array.defaults import float_or_default
from ..autograd.function import Function

from . import functional as F
from . import init
from .layers import AvgPool2d, MaxPool2d, _BatchNorm, _empty
from .module import Module
from .parameter import Parameter

__all__ = ["GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "LocalResponseNorm", "CrossMapLRN2d", "BatchNorm3d",
           "MaxPool3d", "AvgPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool3d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d"]


# ---- normalization ------------------------------------------------------------------------
class GroupNorm(Module):
    """Group normalization of (N, C, *) over groups of C / num_groups channels, with a
    per-channel weight (ones) and bias (zeros) when ``affine``."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_groups < 1 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                             f"num_groups ({num_groups})")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        if affine:
            self.weight = Parameter(gp.ones((num_channels,), dtype=float_or_default(dtype),
                                            device=device))
            if bias:
                self.bias = _empty((num_channels,), dtype, device)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        """Weight ones, bias zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(_BatchNorm):
    """torch's _InstanceNorm: per-sample, per-channel statistics; running statistics (and a
    num_batches_tracked buffer that, as torch's, is never incremented) with
    ``track_running_stats``, used in eval mode."""

    _dim = 2   # the spatial axes; an input of 1 + _dim axes has no batch axis

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input):
        name, nb = type(self).__name__, self._dim + 1
        F._check_float(input, name)
        if input.ndim not in (nb, nb + 1):
            raise ValueError(f"{name}: expected a {nb}-D or {nb + 1}-D input, got shape "
                             f"{input.shape}")
        cax = input.ndim - nb
        if input.shape[cax] != self.num_features:
            if self.affine or self.track_running_stats:
                raise ValueError(f"{name}: expected input's size at dim={cax} to match "
                                 f"num_features ({self.num_features}), got shape {input.shape}")
            warnings.warn(f"{name}: input's size at dim={cax} does not match num_features "
                          f"({self.num_features}); it is not used because affine=False",
                          stacklevel=2)
        x = input if cax else gp.expand_dims(input, axis=0)
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats,
                            0.0 if self.momentum is None else self.momentum, self.eps)
        return y if cax else gp.squeeze(y, axis=0)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L) or (C, L)."""

    _dim = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W) or (C, H, W)."""

    _dim = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W) or (C, D, H, W)."""

    _dim = 3


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W)."""

    _ndims = (5,)


class LocalResponseNorm(Module):
    """F.local_response_norm as a layer: each value divided by (k + alpha * the mean square
    over ``size`` neighbouring channels)^beta."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _channel_window(a, before: int, width: int):
    """sum over i < width of ``a`` (N, C, ...) shifted ``before - i`` channels (zeros shifted
    in): each channel c gets a[c - before] + ... + a[c - before + width - 1]."""
    n, c = a.shape[:2]
    after = max(0, width - 1 - before)
    parts = [a]
    if before:
        parts.insert(0, gp.zeros((n, before) + a.shape[2:], dtype=a.dtype, device=a.device))
    if after:
        parts.append(gp.zeros((n, after) + a.shape[2:], dtype=a.dtype, device=a.device))
    padded = gp.concat(parts, axis=1) if len(parts) > 1 else a
    total = padded[:, 0:c]
    for i in range(1, width):
        total = total + padded[:, i:i + c]
    return total


class _CrossMapLRN2dFn(Function):
    """torch's legacy cross-map LRN (a Lua Torch port): its forward sums the squares over
    channels [c - p + 1, c + p - 1] (p = (size - 1) // 2 + 1) plus, once c >= p, channel 0
    (the running sum never drops it); its backward is its own formula (the LRN gradient over
    the window [c - q, c + size - 1 - q], q = (size + 1) // 2, without the channel-0
    term). Both reproduced as they are, so that a ported model trains as it did in torch."""

    once_differentiable = True

    @staticmethod
    def forward(ctx, x, *, size, alpha, beta, k):
        c = x.shape[1]
        p = (size - 1) // 2 + 1
        sq = x * x
        s = _channel_window(sq, p - 1, 2 * p - 1)
        if c > p:
            late = gp.reshape(gp.arange(c, device=x.device) >= p, (1, c, 1, 1))
            s = s + gp.where(late, sq[:, 0:1], gp.zeros((), dtype=x.dtype, device=x.device))
        scale = s * (alpha / size) + k
        y = x * gp.pow(scale, -beta)
        ctx.save_for_backward(x, y, scale)
        ctx.args = (size, alpha, beta)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y, scale = ctx.saved_tensors
        size, alpha, beta = ctx.args
        q = (size + 1) // 2
        acc = _channel_window(g * y / scale, q, size)
        return (gp.pow(scale, -beta) * g - (2.0 * alpha * beta / size) * x * acc,)


class CrossMapLRN2d(Module):
    """torch.nn.CrossMapLRN2d: torch's legacy local response normalization of a 4-D
    (N, C, H, W) input across channels, forward and backward as torch computes them (which
    differ slightly from LocalResponseNorm; see _CrossMapLRN2dFn)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"CrossMapLRN2d: size must be a positive int, got {size!r}")
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if not isinstance(input, gp.Array):
            raise TypeError(f"CrossMapLRN2d: expected a grilly Array, got "
                            f"{type(input).__name__}")
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D "
                             "instead.")
        if input.dtype.kind != "f":
            raise TypeError(f"CrossMapLRN2d: input must have a real floating dtype, got "
                            f"{input.dtype}")
        return _CrossMapLRN2dFn.apply(input, size=self.size, alpha=float(self.alpha),
                                      beta=float(self.beta), k=float(self.k))

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


# ---- pooling ------------------------------------------------------------------------------
class MaxPool3d(MaxPool2d):
    """Max pooling over (N, C, D, H, W); ``return_indices`` also returns the flat positions."""

    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool3d(AvgPool2d):
    """Average pooling over (N, C, D, H, W) (ceil_mode, count_include_pad, divisor_override)."""

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _MaxUnpool(Module):
    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        n, name = self._n, type(self).__name__
        self.kernel_size = F._ntuple(kernel_size, n, "kernel_size", name)
        self.stride = self.kernel_size if stride is None else F._ntuple(stride, n, "stride", name)
        self.padding = F._ntuple(padding, n, "padding", name)

    def forward(self, input, indices, output_size=None):
        fn = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[self._n]
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    """The inverse of MaxPool1d: values put back at their indices, zeros elsewhere."""

    _n = 1


class MaxUnpool2d(_MaxUnpool):
    """The inverse of MaxPool2d: values put back at their flat indices, zeros elsewhere;
    ``forward(input, indices, output_size=None)``."""

    _n = 2


class MaxUnpool3d(_MaxUnpool):
    """The inverse of MaxPool3d."""

    _n = 3


class _Adaptive(Module):
    _fn = None

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return type(self)._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Average pooling of (N, C, L) to a fixed length."""

    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool3d(_Adaptive):
    """Average pooling of (N, C, D, H, W) to a fixed size."""

    _fn = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMax(_Adaptive):
    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return type(self)._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMax):
    """Max pooling of (N, C, L) to a fixed length (``return_indices``: also the positions)."""

    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMax):
    """Max pooling of (N, C, H, W) to a fixed size (``return_indices``: also the flat
    positions)."""

    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMax):
    """Max pooling of (N, C, D, H, W) to a fixed size."""

    _fn = staticmethod(F.adaptive_max_pool3d)


class _LPPool(Module):
    _fn = None

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, self.norm_type, self.kernel_size, self.stride,
                              self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    """Power-average pooling over (N, C, L): the norm_type-norm of each window."""

    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPool):
    """Power-average pooling over (N, C, H, W)."""

    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPool):
    """Power-average pooling over (N, C, D, H, W)."""

    _fn = staticmethod(F.lp_pool3d)
