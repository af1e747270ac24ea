"""More of torch.nn: the remaining activations (CELU ... Softmax2d), padding layers, pixel and
channel shuffles, Unfold/Fold, distances, Bilinear, channel and alpha dropout, and the
ParameterList / ParameterDict containers."""
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Iterator

from ..array import api as gp
from ..array.defaults import float_or_default

from . import functional as F
from . import init
from .layers import Dropout
from .module import Module
from .parameter import Parameter, is_parameter

__all__ = [
    "CELU", "SELU", "Hardswish", "Hardsigmoid", "Hardtanh", "Hardshrink", "Softshrink",
    "Tanhshrink", "Softsign", "LogSigmoid", "Mish", "GLU", "PReLU", "RReLU", "Threshold",
    "Softmin", "Softmax2d",
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
    "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
    "CircularPad1d", "CircularPad2d", "CircularPad3d",
    "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "Unfold", "Fold",
    "CosineSimilarity", "PairwiseDistance", "Bilinear", "ParameterList", "ParameterDict",
    "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
]


def _inplace_str(inplace: bool, first: bool = False) -> str:
    """torch's repr suffix: the flag is shown only when set."""
    return ("inplace=True" if first else ", inplace=True") if inplace else ""


# ---- activations ------------------------------------------------------------------------------
class CELU(Module):
    """x for x > 0, alpha * (exp(x / alpha) - 1) otherwise."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class SELU(Module):
    """Scaled exponential linear unit (torch's alpha and scale)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.selu(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, first=True)


class Hardswish(Module):
    """x * relu6(x + 3) / 6."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input, self.inplace)


class Hardsigmoid(Module):
    """relu6(x + 3) / 6."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)


class Mish(Module):
    """x * tanh(softplus(x))."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.mish(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, first=True)


class Hardtanh(Module):
    """x clipped to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) cannot be greater than max_val "
                             f"({max_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class Hardshrink(Module):
    """0 where |x| <= lambd, x elsewhere."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, input):
        return F.tanhshrink(input)


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, input):
        return F.softsign(input)


class LogSigmoid(Module):
    """log(sigmoid(x))."""

    def forward(self, input):
        return F.logsigmoid(input)


class GLU(Module):
    """Gated linear unit: a * sigmoid(b), the halves of the input along ``dim``."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x for x > 0, weight * x otherwise; ``weight`` holds ``num_parameters`` learned slopes
    (1, or one per channel of axis 1), initialized to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None,
                 dtype=None) -> None:
        super().__init__()
        if not isinstance(num_parameters, int) or num_parameters < 1:
            raise ValueError(f"PReLU: num_parameters must be a positive int, got "
                             f"{num_parameters!r}")
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(gp.full((num_parameters,), float(init),
                                        dtype=float_or_default(dtype), device=device))

    def reset_parameters(self) -> None:
        """Every slope back to ``init``."""
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) while training, their mean in
    evaluation."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        if lower > upper:
            raise ValueError(f"RReLU: lower ({lower}) must be at most upper ({upper})")
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Threshold(Module):
    """``value`` where x <= threshold, x elsewhere."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class Softmin(Module):
    """softmax(-x) along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) at each position."""

    def forward(self, input):
        if not isinstance(input, gp.Array) or input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected a 3-D or 4-D input, got "
                             f"{getattr(input, 'shape', type(input).__name__)}")
        return F.softmax(input, -3)


# ---- padding ----------------------------------------------------------------------------------
class _PadNd(Module):
    """F.pad of the last ``_n`` axes in ``_mode``; ``padding`` an int (every side) or 2 * _n
    ints (left, right, top, bottom, front, back)."""

    _n = 1
    _mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        name, k = type(self).__name__, 2 * self._n
        if isinstance(padding, int) and not isinstance(padding, bool):
            padding = (padding,) * k
        else:
            padding = tuple(padding)
            if len(padding) != k or not all(isinstance(p, int) for p in padding):
                raise ValueError(f"{name}: padding must be an int or a tuple of {k} ints, got "
                                 f"{padding!r}")
        self.padding = padding

    def _check(self, input) -> None:
        if self._mode != "constant" and isinstance(input, gp.Array) and \
                input.ndim not in (self._n + 1, self._n + 2):
            raise ValueError(f"{type(self).__name__}: expected a {self._n + 1}-D or "
                             f"{self._n + 2}-D input, got shape {input.shape}")

    def forward(self, input):
        self._check(input)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last axis with ``value``."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 axes with ``value``."""

    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 axes with ``value``."""

    _n = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last axis with zeros."""

    _n = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last 2 axes with zeros."""

    _n = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last 3 axes with zeros."""

    _n = 3


def _pad_class(name: str, n: int, mode: str, what: str) -> type:
    return type(name, (_PadNd,), {"_n": n, "_mode": mode, "__module__": __name__,
                                  "__doc__": f"Pad the last {n} ax{'is' if n == 1 else 'es'} "
                                             f"{what}."})


ReflectionPad1d = _pad_class("ReflectionPad1d", 1, "reflect", "by reflection (edge not repeated)")
ReflectionPad2d = _pad_class("ReflectionPad2d", 2, "reflect", "by reflection (edge not repeated)")
ReflectionPad3d = _pad_class("ReflectionPad3d", 3, "reflect", "by reflection (edge not repeated)")
ReplicationPad1d = _pad_class("ReplicationPad1d", 1, "replicate", "by repeating the edge")
ReplicationPad2d = _pad_class("ReplicationPad2d", 2, "replicate", "by repeating the edge")
ReplicationPad3d = _pad_class("ReplicationPad3d", 3, "replicate", "by repeating the edge")
CircularPad1d = _pad_class("CircularPad1d", 1, "circular", "by wrapping around")
CircularPad2d = _pad_class("CircularPad2d", 2, "circular", "by wrapping around")
CircularPad3d = _pad_class("CircularPad3d", 3, "circular", "by wrapping around")


# ---- reshuffles and windows -------------------------------------------------------------------
class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """The channels of (N, C, *) seen as (groups, C / groups) and transposed."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Unfold(Module):
    """Sliding windows of (N, C, H, W) as columns (N, C * kh * kw, L) (im2col)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """Columns (N, C * kh * kw, L) summed back onto (N, C, *output_size) (col2im)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


# ---- distances and Bilinear -------------------------------------------------------------------
class CosineSimilarity(Module):
    """Cosine similarity of x1 and x2 along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """||x1 - x2 + eps||_p along the last axis."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Bilinear(Module):
    """y = x1^T W x2 + b per output feature; W is (out, in1, in2), W and b initialized
    U(-1/sqrt(in1), 1/sqrt(in1)) as torch's."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        dt = float_or_default(dtype)
        self.weight = Parameter(gp.zeros((out_features, in1_features, in2_features), dtype=dt,
                                         device=device))
        if bias:
            self.bias = Parameter(gp.zeros((out_features,), dtype=dt, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """U(-1/sqrt(in1_features), 1/sqrt(in1_features)) for the weight and the bias."""
        b = 1.0 / math.sqrt(self.in1_features) if self.in1_features > 0 else 0.0
        init.uniform_(self.weight, -b, b)
        if self.bias is not None:
            init.uniform_(self.bias, -b, b)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


# ---- channel and alpha dropout ----------------------------------------------------------------
class Dropout1d(Dropout):
    """Zeroes whole channels of (N, C, L) or (C, L) with probability p while training."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """Zeroes whole channels of (N, C, H, W) with probability p while training."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p while
    training."""

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(Dropout):
    """Dropout that keeps SELU's zero mean and unit variance, while training."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(Dropout):
    """AlphaDropout of whole channels (N, C, ...), while training."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training, self.inplace)


# ---- parameter containers ---------------------------------------------------------------------
def _as_parameter(value):
    """An Array becomes a Parameter (as torch wraps a plain tensor); other objects are kept."""
    return Parameter(value) if isinstance(value, gp.Array) and not is_parameter(value) else value


def _describe(value) -> str:
    """torch's line for one entry of a parameter container."""
    if not isinstance(value, gp.Array):
        return f"Object of type: {type(value).__name__}"
    size = "x".join(map(str, value.shape))
    dev = "" if value.device.backend.name == "cpu" else f" ({value.device})"
    kind = "Parameter containing" if is_parameter(value) else "Array containing"
    return f"{kind}: [grilly.{value.dtype.name} of size {size}{dev}]"


class ParameterList(Module):
    """A list of parameters registered as '0', '1', ... (torch's state_dict keys); an Array put
    in is made a Parameter."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self.extend(values)

    def _index(self, idx: int) -> str:
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise TypeError(f"ParameterList: indices must be integers or slices, got "
                            f"{type(idx).__name__}")
        if not -self._size <= idx < self._size:
            raise IndexError(f"ParameterList: index {idx} is out of range for "
                             f"{self._size} entries")
        return str(idx % self._size)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(self._size)[idx]])
        return getattr(self, self._index(idx))

    def __setitem__(self, idx: int, param) -> None:
        setattr(self, self._index(idx), _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(self._size))

    def __iadd__(self, parameters: Iterable[Any]) -> "ParameterList":
        return self.extend(parameters)

    def append(self, value) -> "ParameterList":
        """Add ``value`` at the end."""
        object.__setattr__(self, "_size", self._size + 1)
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        """Append every value of ``values``."""
        if isinstance(values, gp.Array) or not isinstance(values, Iterable):
            raise TypeError(f"ParameterList.extend: expected an iterable, got "
                            f"{type(values).__name__}")
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): {_describe(v)}" for i, v in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """A dict of parameters registered under their (string) keys, torch's state_dict keys; an
    Array put in is made a Parameter. A plain dict given to the constructor or ``update`` is
    added in sorted key order, an OrderedDict or ParameterDict in its own (as torch)."""

    def __init__(self, parameters=None) -> None:
        super().__init__()
        object.__setattr__(self, "_keys", {})
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key(key) -> str:
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict: keys must be strings, got {type(key).__name__}")
        if not key or "." in key:
            # a dotted key would be read back by load_state_dict as a submodule's parameter
            raise KeyError(f"ParameterDict: a key must be non-empty and without '.', got {key!r}")
        return key

    def __getitem__(self, key: str):
        if self._key(key) not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self._keys[self._key(key)] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key) -> bool:
        return key in self._keys

    def keys(self):
        """The keys, in insertion order."""
        return self._keys.keys()

    def values(self):
        """The parameters."""
        return [self[k] for k in self._keys]

    def items(self):
        """(key, parameter) pairs."""
        return [(k, self[k]) for k in self._keys]

    def get(self, key: str, default=None):
        """``self[key]`` if present, else ``default``."""
        return self[key] if key in self else default

    def setdefault(self, key: str, default=None):
        """``self[key]``, set to ``default`` first if absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str):
        """Remove ``key`` and return its parameter."""
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple:
        """Remove and return the last (key, parameter) pair."""
        k = next(reversed(self))
        return k, self.pop(k)

    def clear(self) -> None:
        """Remove every entry."""
        for k in list(self._keys):
            del self[k]

    def copy(self) -> "ParameterDict":
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict(self.items()))

    def fromkeys(self, keys: Iterable[str], default=None) -> "ParameterDict":
        """A new ParameterDict with ``keys``, each holding ``default``."""
        return ParameterDict(((k, default) for k in keys))

    def update(self, parameters) -> None:
        """Add every (key, parameter) of a mapping or an iterable of pairs."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            items = list(parameters.items())
        elif isinstance(parameters, Mapping):
            items = sorted(parameters.items())
        elif isinstance(parameters, Iterable) and not isinstance(parameters, (str, gp.Array)):
            items = []
            for j, pair in enumerate(parameters):
                if not isinstance(pair, Iterable) or isinstance(pair, (str, gp.Array)):
                    raise TypeError(f"ParameterDict.update: element #{j} of the sequence is a "
                                    f"{type(pair).__name__}, not a (key, value) pair")
                pair = tuple(pair)
                if len(pair) != 2:
                    raise ValueError(f"ParameterDict.update: sequence element #{j} has length "
                                     f"{len(pair)}; 2 is required")
                items.append(pair)
        else:
            raise TypeError(f"ParameterDict.update: expected a mapping or an iterable of "
                            f"(key, value) pairs, got {type(parameters).__name__}")
        for k, v in items:
            self[k] = v

    def __or__(self, other: "ParameterDict") -> "ParameterDict":
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: "ParameterDict") -> "ParameterDict":
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other: "ParameterDict") -> "ParameterDict":
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): {_describe(v)}" for k, v in self.items())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")
