"""In-place parameter initializers with PyTorch's names, defaults and fan conventions."""
from __future__ import annotations

import math

from ..array import api as gp

from . import _random
from .module import _no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_", "trunc_normal_"]

_LINEAR_GAINS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for ``nonlinearity`` (as torch.nn.init.calculate_gain)."""
    if nonlinearity in _LINEAR_GAINS:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(t) -> tuple[int, int]:
    if t.ndim < 2:
        raise ValueError(f"init: fan in/out needs an array of at least 2 dimensions, got shape {t.shape}")
    rf = 1
    for s in t.shape[2:]:
        rf *= s
    return t.shape[1] * rf, t.shape[0] * rf


def _fill(t, values):
    with _no_grad():
        t[...] = gp.astype(values, t.dtype) if values.dtype != t.dtype else values
    return t


def uniform_(tensor, a: float = 0.0, b: float = 1.0):
    """Fill with values uniform in [a, b)."""
    return _fill(tensor, _random.uniform(tensor.shape, a, b, dtype=tensor.dtype, device=tensor.device))


def normal_(tensor, mean: float = 0.0, std: float = 1.0):
    """Fill with normal values."""
    return _fill(tensor, _random.normal(tensor.shape, mean, std, dtype=tensor.dtype, device=tensor.device))


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0):
    """Fill with normal values truncated to [a, b]: values outside are drawn again (as torch's
    distribution; clipping them would pile their mass up on a and b)."""
    if not a < b:
        raise ValueError(f"trunc_normal_: needs a < b, got a={a}, b={b}")
    v = _random.normal(tensor.shape, mean, std, dtype=tensor.dtype, device=tensor.device)
    for _ in range(1000):
        out = gp.logical_or(v < a, v > b)
        if not bool(gp.any(out)):
            return _fill(tensor, v)
        v = gp.where(out, _random.normal(tensor.shape, mean, std, dtype=tensor.dtype,
                                         device=tensor.device), v)
    raise ValueError(f"trunc_normal_: [a, b] = [{a}, {b}] holds too little of N({mean}, {std}^2)")


def constant_(tensor, val: float):
    """Fill with ``val``."""
    return _fill(tensor, gp.full(tensor.shape, val, dtype=tensor.dtype, device=tensor.device))


def zeros_(tensor):
    """Fill with zeros."""
    return constant_(tensor, 0)


def ones_(tensor):
    """Fill with ones."""
    return constant_(tensor, 1)


def eye_(tensor):
    """Fill a 2-D array with the identity."""
    if tensor.ndim != 2:
        raise ValueError(f"eye_: needs a 2-D array, got shape {tensor.shape}")
    return _fill(tensor, gp.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def xavier_uniform_(tensor, gain: float = 1.0):
    """Glorot uniform: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    fi, fo = _fans(tensor)
    a = gain * math.sqrt(6.0 / (fi + fo))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain: float = 1.0):
    """Glorot normal: N(0, gain^2 * 2 / (fan_in + fan_out))."""
    fi, fo = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fi + fo)))


def _kaiming_std(tensor, a, mode, nonlinearity):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fi, fo = _fans(tensor)
    fan = fi if mode == "fan_in" else fo
    if fan == 0:
        raise ValueError(f"kaiming init: fan is 0 for shape {tensor.shape}")
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    """He uniform: U(-b, b), b = gain * sqrt(3 / fan)."""
    b = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -b, b)


def kaiming_normal_(tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    """He normal: N(0, (gain / sqrt(fan))^2)."""
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity))


def orthogonal_(tensor, gain: float = 1.0):
    """Fill with a (semi-)orthogonal matrix from the QR of a normal matrix, times ``gain``."""
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: needs at least 2 dimensions, got shape {tensor.shape}")
    rows = tensor.shape[0]
    cols = tensor.size // rows
    flat = _random.normal((rows, cols), dtype=tensor.dtype, device=tensor.device)
    if rows < cols:
        flat = gp.permute_dims(flat, (1, 0))
    q, r = gp.linalg.qr(flat)
    q = q * gp.sign(gp.linalg.diagonal(r))
    if rows < cols:
        q = gp.permute_dims(q, (1, 0))
    return _fill(tensor, gp.reshape(q * gain, tensor.shape))
