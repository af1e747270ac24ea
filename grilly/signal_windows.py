"""torch's window functions (``torch.hann_window`` and the rest, periodic by default, of the
default dtype (gp.get_default_dtype()) unless ``dtype=``) and NumPy's ``kaiser`` (NumPy's other
windows are the namespace's ``hanning``, ``hamming``, ``blackman``, ``bartlett``)."""
from __future__ import annotations

import math

from .array import api as gp
from .array.defaults import float_or_default
from .array.array import Array
from .special import i0

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser",
           "kaiser_window"]


def _length(n, op: str, arg: str) -> int:
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"{op}: {arg} must be an integer, got {type(n).__name__}")
    n = n.__index__()
    if n < 0:
        raise ValueError(f"{op}: {arg} must be >= 0, got {n}")
    return n


def _window(op: str, length, periodic: bool, dtype, device, requires_grad: bool, f) -> Array:
    """f(n, N) over n = 0..N-1 of the symmetric window of N points, N = length (+1 when
    periodic, the last point dropped), in float64 and cast once to ``dtype``."""
    L = _length(length, op, "window_length")
    dtype = float_or_default(dtype)
    if dtype not in (gp.float16, gp.bfloat16, gp.float32, gp.float64):
        raise TypeError(f"{op}: dtype must be a real floating dtype, got {dtype}")
    if L <= 1:
        w = gp.ones((L,), dtype=gp.float64, device=device)
    else:
        N = L + 1 if periodic else L
        w = f(gp.arange(L, dtype=gp.float64, device=device), N)
    w = gp.astype(w, dtype)
    return w.requires_grad_() if requires_grad else w


def _cos(n, N, k: int):
    return gp.cos(n * (2.0 * math.pi * k / (N - 1)))


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, device=None,
                requires_grad: bool = False) -> Array:
    """The Hann window, 0.5 - 0.5 cos(2 pi n / (N - 1)) (torch.hann_window)."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 0.5 - 0.5 * _cos(n, N, 1))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, device=None,
                   requires_grad: bool = False) -> Array:
    """The Hamming window, alpha - beta cos(2 pi n / (N - 1)) (torch.hamming_window)."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: alpha - beta * _cos(n, N, 1))


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, device=None,
                    requires_grad: bool = False) -> Array:
    """The Blackman window (torch.blackman_window)."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 0.42 - 0.5 * _cos(n, N, 1) + 0.08 * _cos(n, N, 2))


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, device=None,
                    requires_grad: bool = False) -> Array:
    """The triangular window 1 - |2n / (N - 1) - 1| (torch.bartlett_window)."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 1.0 - gp.abs(n * (2.0 / (N - 1)) - 1.0))


def _kaiser(n, N, beta: float):
    r = n * (2.0 / (N - 1)) - 1.0
    arg = gp.sqrt(gp.maximum(1.0 - r * r, 0.0)) * float(beta)
    return i0(arg) / i0(gp.full_like(arg, float(beta)))


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None,
                  device=None, requires_grad: bool = False) -> Array:
    """The Kaiser window I0(beta sqrt(1 - (2n/(N-1) - 1)^2)) / I0(beta) (torch.kaiser_window)."""
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: _kaiser(n, N, beta))


def kaiser(M: int, beta: float, *, device=None) -> Array:
    """NumPy's Kaiser window of M points (symmetric, float64)."""
    M = _length(M, "kaiser", "M")
    return _window("kaiser", M, False, gp.float64, device, False, lambda n, N: _kaiser(n, N, beta))
