"""Layers: Linear, Embedding, Dropout, normalization, convolution, pooling, activations."""
from __future__ import annotations

import math

from ..array import api as gp
from ..array.defaults import float_or_default

from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["Identity", "Linear", "Embedding", "Dropout", "Flatten", "Unflatten", "Upsample",
           "LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d",
           "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool2d",
           "ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "ELU", "Tanh", "Sigmoid", "Softplus",
           "Softmax", "LogSoftmax"]


def _empty(shape, dtype, device):
    return Parameter(gp.zeros(tuple(shape), dtype=float_or_default(dtype), device=device))


class Identity(Module):
    """Returns its input."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b; W is (out_features, in_features), both initialized U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = _empty((out_features, in_features), dtype, device)
        self.bias = _empty((out_features,), dtype, device) if bias else None
        if not bias:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform(a=sqrt(5)) weight, U(-1/sqrt(fan_in), ..) bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            b = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -b, b)

    def forward(self, input):
        if isinstance(input, gp.Array):   # array-likes: F.linear converts them
            F._check_input(input, "Linear", 1)
            w, b = self.weight, self.bias
            if isinstance(w, gp.Array) and (b is None or isinstance(b, gp.Array)):
                # checked: F.linear's own check (and its array-like wrapper) would repeat it
                return F._linear(input, w, b)
            return F.linear(input, w, b)
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors, initialized N(0, 1) (``vocab_size`` is
    accepted for ``num_embeddings``, the seed's name). An index outside [0, num_embeddings)
    raises IndexError; ``max_norm`` renormalizes the looked-up rows in place (F.embedding)."""

    def __init__(self, num_embeddings: int | None = None, embedding_dim: int | None = None,
                 padding_idx: int | None = None, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight=None, _freeze: bool = False, device=None, dtype=None, *,
                 vocab_size: int | None = None) -> None:
        super().__init__()
        if sparse:
            raise NotImplementedError("Embedding: sparse=True is not supported (grilly has no "
                                      "sparse gradients)")
        self.scale_grad_by_freq, self.sparse = bool(scale_grad_by_freq), False
        if vocab_size is not None:   # the seed's keyword
            if num_embeddings is not None:
                raise TypeError("Embedding: give num_embeddings or vocab_size, not both")
            num_embeddings = vocab_size
        if num_embeddings is None or embedding_dim is None:
            raise TypeError("Embedding: num_embeddings (or vocab_size) and embedding_dim are "
                            "required")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        if _weight is None:
            self.weight = _empty((num_embeddings, embedding_dim), dtype, device)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"Embedding: _weight has shape {tuple(_weight.shape)}, expected "
                                 f"{(num_embeddings, embedding_dim)}")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, sparse: bool = False) -> "Embedding":
        """An Embedding whose weight is (a copy of) the 2-D ``embeddings``; ``freeze`` (the
        default) turns its gradient off, as torch's."""
        if not isinstance(embeddings, gp.Array):
            embeddings = gp.asarray(embeddings)
        if embeddings.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: embeddings must be 2-D, got shape "
                             f"{embeddings.shape}")
        rows, cols = embeddings.shape
        w = gp.asarray(embeddings, copy=True)
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=w, _freeze=freeze)

    def reset_parameters(self) -> None:
        """N(0, 1), with the padding row zeroed."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            from .module import _no_grad

            with _no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        s += f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        s += f", max_norm={self.max_norm}" if self.max_norm is not None else ""
        return s + (f", norm_type={self.norm_type}" if self.norm_type != 2 else "")


class Dropout(Module):
    """Zeroes elements with probability p while training (inverted dropout)."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Flatten(Module):
    """Merge axes start_dim..end_dim."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return F.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Upsample(Module):
    """F.interpolate as a layer (torch's nn.Upsample)."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self) -> str:
        sf = self.scale_factor
        sf = float(sf) if isinstance(sf, (int, float)) else sf   # (torch prints 2.0)
        what = f"size={self.size}" if self.size is not None else f"scale_factor={sf}"
        return f"{what}, mode={self.mode!r}"


class Unflatten(Module):
    """Split axis ``dim`` into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size: tuple) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        d = self.dim % input.ndim
        sizes, n = self.unflattened_size, input.shape[d]
        known = math.prod(v for v in sizes if v != -1)
        if sizes.count(-1) > 1 or (n % known if -1 in sizes and known else n != known):
            raise ValueError(f"Unflatten: unflattened_size {sizes} does not multiply up to the "
                             f"size {n} of dim {self.dim} of the input of shape {input.shape}")
        return gp.reshape(input, input.shape[:d] + sizes + input.shape[d + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class LayerNorm(Module):
    """Layer normalization over the trailing ``normalized_shape`` axes."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = ns, eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(gp.ones(ns, dtype=float_or_default(dtype), device=device))
            self.bias = _empty(ns, dtype, device) if bias else None
            if not bias:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class RMSNorm(Module):
    """Root-mean-square normalization over the trailing axes (eps None: finfo(dtype).eps)."""

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = ns, eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(gp.ones(ns, dtype=float_or_default(dtype), device=device))
        else:
            self.register_parameter("weight", None)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _BatchNorm(Module):
    _ndims: tuple = ()
    # load_state_dict keeps the count when a checkpoint lacks it (torch's old BatchNorm had none)
    _optional_state = ("num_batches_tracked",)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None, dtype=None,
                 *, bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dt = float_or_default(dtype)
        if affine:
            self.weight = Parameter(gp.ones((num_features,), dtype=dt, device=device))
            if bias:
                self.bias = _empty((num_features,), dt, device)
            else:   # torch's bias=False: a scale without a shift
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", gp.zeros((num_features,), dtype=dt, device=device))
            self.register_buffer("running_var", gp.ones((num_features,), dtype=dt, device=device))
            self.register_buffer("num_batches_tracked", gp.zeros((), dtype=gp.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        """Running mean 0, variance 1, batch count 0."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def forward(self, input):
        F._check_float(input, type(self).__name__)
        if input.ndim not in self._ndims:
            raise ValueError(f"{type(self).__name__}: expected a {' or '.join(map(str, self._ndims))}-D "
                             f"input, got shape {input.shape}")
        if input.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expected {self.num_features} channels on axis 1, "
                             f"got shape {input.shape}")
        use_batch = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            from .module import _no_grad

            with _no_grad():
                # in place (torch's add_(1)); an augmented assignment skips the indexing path
                # a whole-array setitem takes: half the host time
                self.num_batches_tracked += 1
        return F.batch_norm(input, self.running_mean if self.track_running_stats else None,
                            self.running_var if self.track_running_stats else None,
                            self.weight, self.bias, use_batch, self.momentum, self.eps,
                            self.num_batches_tracked)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L)."""

    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W)."""

    _ndims = (4,)


class _ConvNd(Module):
    _n = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__()
        n, name = self._n, type(self).__name__
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"{name}: padding_mode must be 'zeros', 'reflect', 'replicate' or "
                             f"'circular', got {padding_mode!r}")
        if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups!r}")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"{name}: invalid padding string {padding!r}, should be 'valid' or "
                             "'same'")
        if padding == "same" and any(s != 1 for s in F._pair(stride, n, "stride", name)):
            raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels and out_channels must be divisible by groups={groups}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = F._pair(kernel_size, n, "kernel_size", name)
        self.stride = F._pair(stride, n, "stride", name)
        self.padding = padding if isinstance(padding, str) else F._pair(padding, n, "padding", name)
        self.dilation = F._pair(dilation, n, "dilation", name)
        self.padding_mode = padding_mode
        self.weight = _empty((out_channels, in_channels // groups, *self.kernel_size), dtype, device)
        if bias:
            self.bias = _empty((out_channels,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform(a=sqrt(5)) weight, U(-1/sqrt(fan_in), ..) bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.size // self.weight.shape[0]
            b = 1 / math.sqrt(fan_in) if fan_in else 0
            init.uniform_(self.bias, -b, b)

    def _mode_pads(self) -> tuple:
        """F.pad's (before, after) pairs, last axis first, for a padding_mode other than zeros."""
        pads = []
        for i in reversed(range(self._n)):
            if self.padding == "same":
                total = self.dilation[i] * (self.kernel_size[i] - 1)
                pads += [total // 2, total - total // 2]
            elif self.padding == "valid":
                pads += [0, 0]
            else:
                pads += [self.padding[i]] * 2
        return tuple(pads)

    def forward(self, input):
        fn = F.conv2d if self._n == 2 else F.conv1d
        if self.padding_mode != "zeros":
            # torch's order: the input padded in that mode, then an unpadded convolution
            x = F.pad(input, self._mode_pads(), mode=self.padding_mode)
            return fn(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L)."""

    _n = 1


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W)."""

    _n = 2


class _Pool(Module):
    def __init__(self, kernel_size, stride=None, padding=0, **kw) -> None:
        super().__init__()
        # stride None (or torch's []) is the kernel size; 0 is kept, for the functional to refuse
        self.stride = kernel_size if stride is None or stride == [] else stride
        self.kernel_size, self.padding = kernel_size, padding
        self._kw = kw
        for k, v in kw.items():
            object.__setattr__(self, k, v)

    def extra_repr(self) -> str:
        s = f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
        return s + "".join(f", {k}={v}" for k, v in self._kw.items())


class MaxPool2d(_Pool):
    """Max pooling over (N, C, H, W); ``return_indices`` also returns torch's int64 flat
    positions of the maxima (for MaxUnpool2d)."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__(kernel_size, stride, padding, dilation=dilation, ceil_mode=ceil_mode)
        self.return_indices = return_indices   # (not in the repr, as torch's)

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class MaxPool1d(MaxPool2d):
    """Max pooling over (N, C, L)."""

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool2d(_Pool):
    """Average pooling over (N, C, H, W)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode=ceil_mode,
                         count_include_pad=count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        # torch's AvgPool repr shows these three only
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(AvgPool2d):
    """Average pooling over (N, C, L). As torch's AvgPool1d it has no ``divisor_override``
    (it was taken and ignored); kernel_size, stride and padding are kept as 1-tuples."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        one = lambda v: v if v is None or v == [] else F._pair(v, 1, "argument", "AvgPool1d")  # noqa: E731
        super().__init__(one(kernel_size), one(stride), one(padding), ceil_mode, count_include_pad)

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed output size."""

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


def _activation(name: str, fn, params: tuple = (), doc: str = "", inplace: bool = False):
    """A Module class whose forward is ``fn(input, **params)``; params are constructor args.
    With ``inplace`` the class takes torch's ``inplace`` flag (last), passed on to ``fn``; the
    others refuse it, as torch's do."""
    names = tuple(k for k, _ in params) + (("inplace",) if inplace else ())

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        if len(args) > len(names):
            raise TypeError(f"{name}: takes at most {len(names)} argument"
                            f"{'s' if len(names) != 1 else ''} ({', '.join(names) or 'none'}), "
                            f"got {len(args)}")
        vals = dict(params)
        if inplace:
            vals["inplace"] = False
        for k, v in zip(names, args):
            vals[k] = v
        for k, v in kwargs.items():
            if k not in vals:
                raise TypeError(f"{name}: unexpected argument {k!r}")
            vals[k] = v
        for k, v in vals.items():
            object.__setattr__(self, k, v)

    def forward(self, input):
        kw = {k: getattr(self, k) for k, _ in params}
        if inplace and self.inplace:
            kw["inplace"] = True
        return fn(input, **kw)

    def extra_repr(self):
        s = ", ".join(f"{k}={getattr(self, k)!r}" if isinstance(getattr(self, k), str)
                      else f"{k}={getattr(self, k)}" for k, _ in params)
        if inplace and self.inplace:   # as torch: shown only when set
            s += ", inplace=True" if s else "inplace=True"
        return s

    return type(name, (Module,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                  "__doc__": doc, "__module__": __name__})


ReLU = _activation("ReLU", F.relu, doc="max(x, 0).", inplace=True)
ReLU6 = _activation("ReLU6", F.relu6, doc="min(max(x, 0), 6).", inplace=True)
LeakyReLU = _activation("LeakyReLU", F.leaky_relu, (("negative_slope", 0.01),), "Leaky ReLU.",
                        inplace=True)
GELU = _activation("GELU", F.gelu, (("approximate", "none"),), "Gaussian error linear unit.")
SiLU = _activation("SiLU", F.silu, doc="x * sigmoid(x).", inplace=True)
ELU = _activation("ELU", F.elu, (("alpha", 1.0),), "Exponential linear unit.", inplace=True)
Tanh = _activation("Tanh", F.tanh, doc="Hyperbolic tangent.")
Sigmoid = _activation("Sigmoid", F.sigmoid, doc="Logistic sigmoid.")
Softplus = _activation("Softplus", F.softplus, (("beta", 1.0), ("threshold", 20.0)), "Softplus.")
Softmax = _activation("Softmax", F.softmax, (("dim", None),), "Softmax along dim.")
LogSoftmax = _activation("LogSoftmax", F.log_softmax, (("dim", None),), "Log-softmax along dim.")
