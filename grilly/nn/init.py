"""In-place parameter initializers with PyTorch's names, defaults and fan conventions."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..array import api as gp

from . import _random
from .module import _no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_", "trunc_normal_", "dirac_", "sparse_", "uniform", "normal", "constant",
           "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
           "kaiming_normal", "orthogonal", "sparse"]

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


def _calculate_fan_in_and_fan_out(tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight: its input and output sizes times the receptive field."""
    if tensor.ndim < 2:
        raise ValueError(f"init: fan in and fan out can not be computed for an array with fewer "
                         f"than 2 dimensions, got shape {tensor.shape}")
    rf = 1
    for s in tensor.shape[2:]:
        rf *= s
    return tensor.shape[1] * rf, tensor.shape[0] * rf


def _calculate_correct_fan(tensor, mode: str) -> int:
    """fan_in or fan_out of ``tensor``, as ``mode`` names."""
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"init: mode {mode} not supported, please use one of "
                         "['fan_in', 'fan_out']")
    fi, fo = _calculate_fan_in_and_fan_out(tensor)
    return fi if mode == "fan_in" else fo


def _fill(t, values):
    with _no_grad():
        t[...] = gp.astype(values, t.dtype) if values.dtype != t.dtype else values
    return t


def _empty_noop(tensor) -> bool:
    """Whether ``tensor`` has no elements (torch's warning: initializing it is a no-op)."""
    if tensor.size == 0:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fill with values uniform in [a, b) (drawn from ``generator``, a grilly.random.Generator,
    if given)."""
    return _fill(tensor, _random.uniform(tensor.shape, a, b, dtype=tensor.dtype,
                                         device=tensor.device, generator=generator,
                                         op="uniform_"))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill with normal values (drawn from ``generator`` if given)."""
    return _fill(tensor, _random.normal(tensor.shape, mean, std, dtype=tensor.dtype,
                                        device=tensor.device, generator=generator, op="normal_"))


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None):
    """Fill with normal values truncated to [a, b], exactly (rejection sampling: clipping would
    pile the outside mass up on a and b). Robert's proposals keep the acceptance high however
    narrow or far out in a tail [a, b] is: normal draws, uniform ones on [a, b], or shifted
    exponential ones (where torch's inverse CDF loses precision)."""
    if not a < b:
        raise ValueError(f"trunc_normal_: needs a < b, got a={a}, b={b}")
    if not std > 0:
        raise ValueError(f"trunc_normal_: std must be positive, got {std}")
    _random.check_generator(generator, "trunc_normal_")
    lo, hi = (a - mean) / std, (b - mean) / std
    # reflected to lie on the positive side (or straddle 0): the draws' sign is flipped back
    sign = -1.0 if hi <= 0 else 1.0
    if sign < 0:
        lo, hi = -hi, -lo
    m = max(lo, 0.0)                    # the point of [lo, hi] nearest the mode
    lam = (lo + math.sqrt(lo * lo + 4.0)) / 2.0
    # log acceptance rates relative to normal draws' (the interval's mass cancels)
    width = hi - lo
    log_u = 0.5 * math.log(2 * math.pi) + m * m / 2 - math.log(width) if math.isfinite(width) \
        else -math.inf
    log_e = (math.log(lam) + 0.5 * math.log(2 * math.pi) + lam * lo - lam * lam / 2
             if lo >= 0 else -math.inf)
    how = max((0.0, "normal"), (log_u, "uniform"), (log_e, "exponential"))[1]
    # float16 / bfloat16 draw (and test) in float32: grilly.random refuses bfloat16 uniforms
    dtype = gp.float32 if tensor.dtype in (gp.float16, gp.bfloat16) else tensor.dtype
    kw = dict(dtype=dtype, device=tensor.device, generator=generator, op="trunc_normal_")

    def draw():
        if how == "normal":
            z = _random.normal(tensor.shape, **kw)
            return z, gp.logical_and(z >= lo, z <= hi)
        u = _random.uniform(tensor.shape, **kw)
        if how == "uniform":
            z = lo + width * u
            log_p = (m * m - z * z) / 2
        else:
            # lo + Exp(lam): 1 - u is in (0, 1]
            z = lo - gp.log1p(-u) / lam
            log_p = -(z - lam) * (z - lam) / 2
        v = _random.uniform(tensor.shape, **kw)
        return z, gp.logical_and(z <= hi, gp.log(v) <= log_p)

    z, ok = draw()
    for _ in range(1000):
        if bool(gp.all(ok)):
            # mapped back (clipped as torch's against the last rounding)
            return _fill(tensor, gp.clip(mean + std * sign * z, a, b))
        z2, ok2 = draw()
        keep = gp.logical_and(gp.logical_not(ok), ok2)
        z, ok = gp.where(keep, z2, z), gp.logical_or(ok, ok2)
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


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """Glorot uniform: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    _random.check_generator(generator, "xavier_uniform_")
    fi, fo = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / (fi + fo))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """Glorot normal: N(0, gain^2 * 2 / (fan_in + fan_out))."""
    _random.check_generator(generator, "xavier_normal_")
    fi, fo = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fi + fo)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    # (mode is case-insensitive, as torch's _calculate_correct_fan)
    fan = _calculate_correct_fan(tensor, mode)
    if fan == 0:
        raise ValueError(f"kaiming init: fan is 0 for shape {tensor.shape}")
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None):
    """He uniform: U(-b, b), b = gain * sqrt(3 / fan)."""
    _random.check_generator(generator, "kaiming_uniform_")
    if _empty_noop(tensor):
        return tensor
    b = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -b, b, generator)


def kaiming_normal_(tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None):
    """He normal: N(0, (gain / sqrt(fan))^2)."""
    _random.check_generator(generator, "kaiming_normal_")
    if _empty_noop(tensor):
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor, gain: float = 1.0, generator=None):
    """Fill with a (semi-)orthogonal matrix from the QR of a normal matrix, times ``gain``."""
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: needs at least 2 dimensions, got shape {tensor.shape}")
    if tensor.size == 0:
        return tensor   # (torch's: nothing to fill, no warning)
    rows = tensor.shape[0]
    cols = tensor.size // rows
    flat = _random.normal((rows, cols), dtype=tensor.dtype, device=tensor.device,
                          generator=generator, op="orthogonal_")
    if rows < cols:
        flat = gp.permute_dims(flat, (1, 0))
    q, r = gp.linalg.qr(flat)
    q = q * gp.sign(gp.linalg.diagonal(r))
    if rows < cols:
        q = gp.permute_dims(q, (1, 0))
    return _fill(tensor, gp.reshape(q * gain, tensor.shape))


def dirac_(tensor, groups: int = 1):
    """Fill a 3-, 4- or 5-D convolution weight with the Dirac delta (each of the ``groups``
    keeps as many input channels as it can), zeros elsewhere."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: only arrays with 3, 4, or 5 dimensions are supported, got "
                         f"shape {tensor.shape}")
    if groups < 1 or tensor.shape[0] % groups:
        raise ValueError(f"dirac_: dim 0 (size {tensor.shape[0]}) must be divisible by "
                         f"groups={groups}")
    per = tensor.shape[0] // groups
    k = min(per, tensor.shape[1])
    # a constant built on the host (from the shape alone), copied to the device once
    d = np.zeros(tensor.shape, dtype=np.float32)
    centre = tuple(s // 2 for s in tensor.shape[2:])
    for g in range(groups):
        for c in range(k):
            d[(g * per + c, c, *centre)] = 1
    return _fill(tensor, gp.asarray(d, dtype=tensor.dtype, device=tensor.device))


def sparse_(tensor, sparsity: float, std: float = 0.01, generator=None):
    """Fill a 2-D array with N(0, std^2) values, ``ceil(sparsity * rows)`` of each column's
    (at random rows) set to zero."""
    if tensor.ndim != 2:
        raise ValueError(f"sparse_: only arrays with 2 dimensions are supported, got shape "
                         f"{tensor.shape}")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    v = _random.normal(tensor.shape, 0.0, std, dtype=tensor.dtype, device=tensor.device,
                       generator=generator, op="sparse_")
    if num_zeros > 0:
        # each column's num_zeros smallest uniform draws pick its zero rows (a random subset;
        # float32 whatever the default dtype: float16 draws would tie far more often)
        u = _random.uniform((rows, cols), dtype=gp.float32, device=tensor.device,
                            generator=generator, op="sparse_")
        thr = gp.sort(u, axis=0)[min(num_zeros, rows) - 1:min(num_zeros, rows)]
        v = gp.where(u <= thr, gp.zeros((), dtype=v.dtype, device=v.device), v)
    return _fill(tensor, v)


def _deprecated(new):
    old = new.__name__[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old
    deprecated_init.__doc__ = f"Deprecated spelling of ``{new.__name__}`` (warns, as torch's)."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
