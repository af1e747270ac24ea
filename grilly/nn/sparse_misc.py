"""The remaining torch.nn modules a PyTorch user reaches for: EmbeddingBag, CTCLoss,
AdaptiveLogSoftmaxWithLoss, FractionalMaxPool2d/3d and the lazy LazyLinear, LazyConv1d/2d/3d,
LazyConvTranspose1d/2d/3d, LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d (their input
size taken from the first call or a loaded state dict), thin wrappers over
grilly.nn.functional written with namespace ops."""
from __future__ import annotations

from collections import namedtuple

from ..array import api as gp
from ..array.defaults import float_or_default
from . import functional as F
from . import init
from .conv_rnn_extra import Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .layers import BatchNorm1d, BatchNorm2d, Conv1d, Conv2d, Linear, _empty
from .loss import _Loss
from .module import Module, ModuleList, Sequential, _no_grad
from .norm_pool import BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .parameter import Parameter

__all__ = ["EmbeddingBag", "CTCLoss", "AdaptiveLogSoftmaxWithLoss", "FractionalMaxPool2d",
           "FractionalMaxPool3d",
           "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings without building the per-index rows'
    array first in user code: torch's ``nn.EmbeddingBag`` (weight N(0, 1), the padding row
    zeroed). ``sparse`` is not supported."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx: int | None = None, device=None, dtype=None) -> None:
        super().__init__()
        if scale_grad_by_freq and mode == "max":
            raise ValueError("EmbeddingBag: mode='max' does not support scale_grad_by_freq=True "
                             "(as torch)")
        if sparse:
            raise NotImplementedError("EmbeddingBag: sparse=True is not supported (grilly has "
                                      "no sparse gradients)")
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, False
        self.mode, self.include_last_offset = mode, include_last_offset
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"EmbeddingBag: padding_idx {padding_idx} must be within "
                                 f"[-{num_embeddings}, {num_embeddings})")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = _empty((num_embeddings, embedding_dim), dtype, device)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"EmbeddingBag: _weight has shape {tuple(_weight.shape)}, "
                                 f"expected {(num_embeddings, embedding_dim)}")
            self.weight = Parameter(_weight)

    def reset_parameters(self) -> None:
        """N(0, 1), with the padding row zeroed."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with _no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False,
                        padding_idx: int | None = None) -> "EmbeddingBag":
        """An EmbeddingBag whose weight is (a copy of) the 2-D ``embeddings``; ``freeze`` (the
        default) turns its gradient off, as torch's."""
        if not isinstance(embeddings, gp.Array):
            embeddings = gp.asarray(embeddings)
        if embeddings.ndim != 2:
            raise ValueError(f"EmbeddingBag.from_pretrained: embeddings must be 2-D, got shape "
                             f"{embeddings.shape}")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  gp.asarray(embeddings, copy=True), include_last_offset, padding_idx)
        bag.weight.requires_grad_(not freeze)
        return bag

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        s += f", mode={self.mode!r}"
        if self.include_last_offset:
            s += ", include_last_offset=True"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class CTCLoss(_Loss):
    """The connectionist temporal classification loss (F.ctc_loss)."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """torch's ``nn.AdaptiveLogSoftmaxWithLoss`` (Grave et al.'s adaptive softmax): a head over
    the shortlist and one entry per cluster, a low-rank projection per tail cluster. Same
    parameters and state_dict keys; the clusters are evaluated for every row (no data-dependent
    row selection, which would read the targets back to the host), so the values and
    gradients are torch's but the cost is that of the full log-probabilities."""

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of "
                             "length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of "
                             "unique, positive integers sorted in an increasing order, where "
                             f"each value is between 1 and n_classes-1, got {cutoffs}")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device,
                           dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(
                Linear(in_features, hsz, bias=False, device=device, dtype=dtype),
                Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        """Each projection's default initialization."""
        self.head.reset_parameters()
        for seq in self.tail:
            for lin in seq:
                lin.reset_parameters()

    def _batched(self, input, op: str):
        F._check_float(input, f"AdaptiveLogSoftmaxWithLoss.{op}")
        if input.ndim not in (1, 2) or input.shape[-1] != self.in_features:
            raise ValueError(f"AdaptiveLogSoftmaxWithLoss.{op}: input should be (N, "
                             f"{self.in_features}) or ({self.in_features},), got shape "
                             f"{input.shape}")
        return input if input.ndim == 2 else gp.expand_dims(input, axis=0)

    def _full_log_prob(self, x):
        head = F.log_softmax(self.head(x), dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](x), dim=1)
            parts.append(cluster + head[:, self.shortlist_size + i:self.shortlist_size + i + 1])
        return gp.concat(parts, axis=1)

    def forward(self, input, target) -> _ASMoutput:
        """(output, loss): each row's log-probability of its target and the mean NLL."""
        if not isinstance(target, gp.Array) or not gp.isdtype(target.dtype, "integral"):
            raise TypeError("AdaptiveLogSoftmaxWithLoss: target must be an integer Array")
        if target.ndim == 1:
            if not isinstance(input, gp.Array) or input.ndim != 2 \
                    or input.shape[0] != target.shape[0]:
                raise ValueError("AdaptiveLogSoftmaxWithLoss: input and target should have the "
                                 f"same size in the batch dimension, got input shape "
                                 f"{getattr(input, 'shape', None)} and target {target.shape}")
        elif target.ndim == 0:
            if not isinstance(input, gp.Array) or input.ndim != 1:
                raise ValueError("AdaptiveLogSoftmaxWithLoss: a 0-D target needs a 1-D input")
        else:
            raise ValueError("AdaptiveLogSoftmaxWithLoss: 0D or 1D target tensor expected, "
                             "multi-target not supported")
        x = self._batched(input, "forward")
        t = gp.reshape(target, (-1, 1))
        if t.dtype != gp.int64:
            t = gp.astype(t, gp.int64)
        n = self.n_classes
        try:
            # take_along_axis checks its bounds (one flag read) but wraps a negative index:
            # moved below -n, a negative target fails that check too, as torch's
            output = gp.take_along_axis(self._full_log_prob(x), gp.where(t < 0, t - n, t),
                                        axis=1)
        except IndexError:
            raise IndexError(f"AdaptiveLogSoftmaxWithLoss: target values should be in [0, "
                             f"{n - 1}]") from None
        output = gp.reshape(output, (-1,))
        loss = gp.mean(-output)
        return _ASMoutput(output if target.ndim else gp.squeeze(output, axis=0), loss)

    def log_prob(self, input):
        """The log-probabilities (N, n_classes) of every class."""
        out = self._full_log_prob(self._batched(input, "log_prob"))
        return out if input.ndim == 2 else gp.squeeze(out, axis=0)

    def predict(self, input):
        """The most likely class of each row (the argmax of log_prob)."""
        out = gp.argmax(self._full_log_prob(self._batched(input, "predict")), axis=1)
        return out if input.ndim == 2 else gp.squeeze(out, axis=0)


class FractionalMaxPool2d(Module):
    """Fractional max pooling over (N, C, H, W) (F.fractional_max_pool2d); give
    ``output_size`` or ``output_ratio``. ``_random_samples`` (N, C, 2) fixes the windows'
    placement (a buffer, as torch's), else each call draws it from grilly.random."""

    _n = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None) -> None:
        super().__init__()
        n, name = self._n, type(self).__name__
        self.kernel_size = F._ntuple(kernel_size, n, "kernel_size", name)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = None if output_size is None else F._ntuple(
            output_size, n, "output_size", name)
        self.output_ratio = None if output_ratio is None else (
            (output_ratio,) * n if isinstance(output_ratio, (int, float))
            else tuple(output_ratio))
        if (self.output_size is None) == (self.output_ratio is None):
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             "ratio (exactly one of them)")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"{name}: output_ratio must be between 0 and 1, got "
                             f"{output_ratio!r}")

    def forward(self, input):
        fn = F.fractional_max_pool2d if self._n == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio,
                  self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool3d(FractionalMaxPool2d):
    """Fractional max pooling over (N, C, D, H, W) (F.fractional_max_pool3d);
    ``_random_samples`` is (N, C, 3)."""

    _n = 3


class _LazyMixin:
    """torch's LazyModuleMixin in short: the parameters are None until the first call (or
    ``initialize_parameters``), which makes them from the input's size and turns the module
    into ``cls_to_become``; loading a state dict that holds them (a materialized module's)
    makes them with the loaded shapes first. torch's UninitializedParameter is not modelled:
    before either the module has no parameters and its state_dict lacks them."""

    cls_to_become: type = Module

    def has_uninitialized_params(self) -> bool:
        """Whether the parameters still wait for the first input."""
        return self.weight is None

    def _lazy_setup(self, device, dtype) -> None:
        self._lazy_device, self._lazy_dtype = device, float_or_default(dtype)   # (torch: at construction)
        self._register_load_state_dict_pre_hook(_lazy_load_hook, with_module=True)

    def _device_for(self, input):
        return self._lazy_device if self._lazy_device is not None else input.device

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        """Make the parameters from the first input's size and initialize them."""
        self._materialize(self._size_of_input(input), self._device_for(input))

    def _materialize(self, n: int, device) -> None:
        self._make(n, device)
        self.__class__ = self.cls_to_become

    def __call__(self, *args, **kwargs):
        if self.has_uninitialized_params():
            self.initialize_parameters(*args, **kwargs)
        # the class has become cls_to_become: super() of the lazy class no longer applies
        return Module.__call__(self, *args, **kwargs)


def _lazy_load_hook(module, state_dict, prefix, *args) -> None:
    """torch's lazy load hook: a state dict holding a lazy module's weight (a materialized
    module's) materializes it with the loaded shape, so that the values then load."""
    if isinstance(module, _LazyMixin) and module.has_uninitialized_params():
        n = module._size_of_state(state_dict, prefix)
        if n is not None:
            module._materialize(n, module._lazy_device)


def _loaded_shape(state_dict, key: str, ndim: int) -> tuple | None:
    """The shape of ``state_dict[key]`` (an Array, numpy array or tensor) if it has ``ndim``
    axes, else None (the load then reports the key as it would any other)."""
    shape = tuple(getattr(state_dict.get(key), "shape", ()) or ())
    return shape if len(shape) == ndim else None


class LazyLinear(_LazyMixin, Linear):
    """A Linear whose ``in_features`` is the last dimension of its first input; it becomes a
    Linear then (parameters made and initialized as Linear's)."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        Module.__init__(self)
        self.in_features, self.out_features = 0, out_features
        self._lazy_bias = bias
        self._lazy_setup(device, dtype)
        self.register_parameter("weight", None)
        self.register_parameter("bias", None)

    def _size_of_input(self, input) -> int:
        if not isinstance(input, gp.Array) or input.ndim < 1:
            raise ValueError("LazyLinear: the first input must be an Array of at least one "
                             "dimension (its last one sets in_features)")
        return input.shape[-1]

    def _size_of_state(self, state_dict, prefix: str) -> int | None:
        shape = _loaded_shape(state_dict, prefix + "weight", 2)
        return None if shape is None else shape[1]

    def _make(self, n: int, device) -> None:
        """Make weight (out_features, n) and bias and initialize them."""
        self.in_features = n
        self.weight = _empty((self.out_features, n), self._lazy_dtype, device)
        if self._lazy_bias:
            self.bias = _empty((self.out_features,), self._lazy_dtype, device)
        self.reset_parameters()

    def extra_repr(self) -> str:
        return f"in_features=0, out_features={self.out_features}, bias={self._lazy_bias}"


class _LazyConvNd(_LazyMixin):
    def _lazy_init(self, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                   padding_mode, device, dtype) -> None:
        # the geometry checked and stored by the convolution's own constructor (on a
        # placeholder in_channels), its parameters dropped until the first input
        self.cls_to_become.__init__(self, groups, out_channels, kernel_size, stride, padding,
                                    dilation, groups, bias, padding_mode, device, dtype)
        self._lazy_drop(bias, device, dtype)

    def _lazy_drop(self, bias, device, dtype) -> None:
        self.in_channels = 0
        self._lazy_bias = bias
        self._lazy_setup(device, dtype)
        self.register_parameter("weight", None)
        self.register_parameter("bias", None)

    def _size_of_input(self, input) -> int:
        n, name = self._n, type(self).__name__
        if not isinstance(input, gp.Array) or input.ndim not in (n + 1, n + 2):
            raise ValueError(f"{name}: the first input must be a {n + 1}-D or {n + 2}-D Array "
                             f"(its channel dimension sets in_channels), got shape "
                             f"{getattr(input, 'shape', None)}")
        c = input.shape[0] if input.ndim == n + 1 else input.shape[1]
        if c % self.groups:
            raise ValueError(f"{name}: in_channels {c} of the input must be divisible by "
                             f"groups={self.groups}")
        return c

    def _size_of_state(self, state_dict, prefix: str) -> int | None:
        # weight (out_channels, in_channels/groups, *kernel)
        shape = _loaded_shape(state_dict, prefix + "weight", self._n + 2)
        return None if shape is None else shape[1] * self.groups

    def _weight_shape(self, c: int) -> tuple:
        return (self.out_channels, c // self.groups, *self.kernel_size)

    def _make(self, c: int, device) -> None:
        """Make weight and bias for ``c`` input channels and initialize them."""
        self.in_channels = c
        self.weight = _empty(self._weight_shape(c), self._lazy_dtype, device)
        if self._lazy_bias:
            self.bias = _empty((self.out_channels,), self._lazy_dtype, device)
        self.reset_parameters()

    def extra_repr(self) -> str:
        # the convolution's, but bias from the constructor (the parameter is still None)
        s = self.cls_to_become.extra_repr(self).replace(", bias=False", "")
        return s if self._lazy_bias else s + ", bias=False"


class LazyConv1d(_LazyConvNd, Conv1d):
    """A Conv1d whose ``in_channels`` comes from its first input; it becomes a Conv1d then."""

    cls_to_become = Conv1d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        self._lazy_init(out_channels, kernel_size, stride, padding, dilation, groups, bias,
                        padding_mode, device, dtype)


class LazyConv2d(_LazyConvNd, Conv2d):
    """A Conv2d whose ``in_channels`` comes from its first input; it becomes a Conv2d then."""

    cls_to_become = Conv2d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        self._lazy_init(out_channels, kernel_size, stride, padding, dilation, groups, bias,
                        padding_mode, device, dtype)


class LazyConv3d(_LazyConvNd, Conv3d):
    """A Conv3d whose ``in_channels`` comes from its first input; it becomes a Conv3d then."""

    cls_to_become = Conv3d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        self._lazy_init(out_channels, kernel_size, stride, padding, dilation, groups, bias,
                        padding_mode, device, dtype)


class _LazyConvTransposeNd(_LazyConvNd):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        self.cls_to_become.__init__(self, groups, out_channels, kernel_size, stride, padding,
                                    output_padding, groups, bias, dilation, padding_mode,
                                    device, dtype)
        self._lazy_drop(bias, device, dtype)

    def _size_of_state(self, state_dict, prefix: str) -> int | None:
        # weight (in_channels, out_channels/groups, *kernel)
        shape = _loaded_shape(state_dict, prefix + "weight", self._n + 2)
        return None if shape is None else shape[0]

    def _weight_shape(self, c: int) -> tuple:
        return (c, self.out_channels // self.groups, *self.kernel_size)


class LazyConvTranspose1d(_LazyConvTransposeNd, ConvTranspose1d):
    """A ConvTranspose1d whose ``in_channels`` comes from its first input; it becomes a
    ConvTranspose1d then."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeNd, ConvTranspose2d):
    """A ConvTranspose2d whose ``in_channels`` comes from its first input; it becomes a
    ConvTranspose2d then."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeNd, ConvTranspose3d):
    """A ConvTranspose3d whose ``in_channels`` comes from its first input; it becomes a
    ConvTranspose3d then."""

    cls_to_become = ConvTranspose3d


class _LazyNormBase(_LazyMixin):
    """torch's _LazyNormBase: ``num_features`` from the first input's channels; weight,
    bias and running statistics (as ``affine`` and ``track_running_stats`` ask) made then.
    The count num_batches_tracked exists from the start, as torch's."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None) -> None:
        self.cls_to_become.__init__(self, 0, eps, momentum, affine, track_running_stats,
                                    device, dtype)
        self._lazy_setup(device, dtype)
        for name in ("weight", "bias"):
            self.register_parameter(name, None)
        for name in ("running_mean", "running_var"):
            self.register_buffer(name, None)

    def has_uninitialized_params(self) -> bool:
        """Whether the statistics' size still waits for the first input."""
        return self.num_features == 0

    def _size_of_input(self, input) -> int:
        name = type(self).__name__
        nb = getattr(self, "_dim", None)
        ok = isinstance(input, gp.Array) and (input.ndim in self._ndims if nb is None
                                              else input.ndim in (nb + 1, nb + 2))
        if not ok:
            want = (" or ".join(map(str, self._ndims)) if nb is None
                    else f"{nb + 1} or {nb + 2}")
            raise ValueError(f"{name}: the first input must be a {want}-D Array (its channel "
                             f"dimension sets num_features), got shape "
                             f"{getattr(input, 'shape', None)}")
        # an instance norm's unbatched (C, *spatial) input has its channels first
        return input.shape[0] if nb is not None and input.ndim == nb + 1 else input.shape[1]

    def _size_of_state(self, state_dict, prefix: str) -> int | None:
        for key in ("weight", "running_mean"):
            shape = _loaded_shape(state_dict, prefix + key, 1)
            if shape is not None:
                return shape[0]
        return None

    def _make(self, n: int, device) -> None:
        """Make weight (ones), bias and running mean (zeros) and running variance (ones)."""
        self.num_features = n
        dt = self._lazy_dtype
        if self.affine:
            self.weight = Parameter(gp.ones((n,), dtype=dt, device=device))
            self.bias = _empty((n,), dt, device)
        if self.track_running_stats:
            self.running_mean = gp.zeros((n,), dtype=dt, device=device)
            self.running_var = gp.ones((n,), dtype=dt, device=device)
            if device is not None:   # the count made at construction joins them
                self.num_batches_tracked = self.num_batches_tracked.to(device)

    def extra_repr(self) -> str:
        # the norm's, but bias from affine (the parameter is still None)
        return self.cls_to_become.extra_repr(self).replace(
            "bias=False", f"bias={self.affine}")


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    """A BatchNorm1d whose ``num_features`` comes from its first input; it becomes a
    BatchNorm1d then."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    """A BatchNorm2d whose ``num_features`` comes from its first input; it becomes a
    BatchNorm2d then."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    """A BatchNorm3d whose ``num_features`` comes from its first input; it becomes a
    BatchNorm3d then."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNormBase, InstanceNorm1d):
    """An InstanceNorm1d whose ``num_features`` comes from its first input (torch's lazy
    defaults: affine and track_running_stats True); it becomes an InstanceNorm1d then."""

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormBase, InstanceNorm2d):
    """An InstanceNorm2d whose ``num_features`` comes from its first input (torch's lazy
    defaults: affine and track_running_stats True); it becomes an InstanceNorm2d then."""

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormBase, InstanceNorm3d):
    """An InstanceNorm3d whose ``num_features`` comes from its first input (torch's lazy
    defaults: affine and track_running_stats True); it becomes an InstanceNorm3d then."""

    cls_to_become = InstanceNorm3d
