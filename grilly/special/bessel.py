"""The modified Bessel functions of the first kind, orders 0 and 1, and their exponentially
scaled forms (torch.special.i0, i0e, i1, i1e; numpy.i0), with their derivatives.

Method (float32 and float64): below a bound B (10 in float32, 18 in float64) the power series
I0(x) = sum_k t^k / (k!)^2 and I1(x) = x/2 sum_k t^k / (k! (k+1)!), t = x^2 / 4, every term
positive (no cancellation; 22 and 38 terms reach half an ulp at B); above it the asymptotic
series I_v(x) ~ e^x / sqrt(2 pi x) sum_k (-1)^k a_k(v) / x^k, whose smallest term (near k = 2x)
is far below an ulp there. The scaled forms multiply by exp(-|x|) below B and never form e^x
above, so i0e and i1e do not overflow; I0 and I1 overflow to inf from |x| ~ 709 (a little
before their true limit, 713.9).
"""
from __future__ import annotations

import math

from ..array import api as gp
from ..array.array import Array
from ..autograd import Function
from .gamma import _compute, _floating
from .normal import _split

__all__ = ["i0", "i0e", "i1", "i1e"]

# per dtype: the bound B, power-series terms, asymptotic terms
_SPEC = {"float32": (10.0, 22, 14), "float64": (18.0, 38, 36)}


def _spec(x):
    return _SPEC["float64" if x.dtype == gp.float64 else "float32"]


def _series(t, order: int, terms: int):
    """sum_k t^k / (k! (k + order)!) by Horner (positive coefficients)."""
    coeffs = [1.0 / (math.factorial(k) * math.factorial(k + order)) for k in range(terms)]
    p = coeffs[-1]
    for c in reversed(coeffs[:-1]):
        p = c + t * p
    return p


def _asymptotic(a, order: int, terms: int):
    """sqrt(2 pi a) e^(-a) I_order(a) for a >= B: sum_k (-1)^k a_k / a^k."""
    mu = 4.0 * order * order
    coeffs = [1.0]
    for k in range(1, terms):
        coeffs.append(coeffs[-1] * -(mu - (2 * k - 1) ** 2) / (k * 8.0))
    r = 1.0 / a
    p = coeffs[-1]
    for c in reversed(coeffs[:-1]):
        p = c + r * p
    return p


def _parts(x, order: int):
    """(I_order(|x|) by the series where |x| <= B, e^(-|x|) I_order(|x|) by the asymptotic
    series where |x| > B, |x|, whether |x| <= B); each part is garbage on the other side."""
    bound, n_series, n_asym = _spec(x)
    a = gp.abs(x)
    small = gp.minimum(a, bound)
    # t = x^2 / 4 rounded would cost k/2 ulp in the dominant t^k (4 at x = 16): x^2 = hi + lo
    # exactly (Dekker), the series taken at hi / 4 and moved by lo / 4 times its logarithmic
    # slope, approximated (a few percent is plenty for a correction of a few ulp)
    xh, xl = _split(small, 27 if x.dtype == gp.float64 else 12)
    hi = small * small
    lo = ((xh * xh - hi) + 2.0 * xh * xl) + xl * xl
    t = hi * 0.25
    slope = 1.0 / (gp.sqrt(t + (0.25 if order == 0 else 1.0)) + (0.5 if order == 0 else 1.0))
    s = _series(t, order, n_series) * (1.0 + (lo * 0.25) * slope)
    if order == 1:
        s = s * (small * 0.5)
    big = gp.maximum(a, bound)
    high = _asymptotic(big, order, n_asym) / gp.sqrt(big * (2.0 * math.pi))
    return s, high, a, a <= bound


def _odd(x, v):
    return gp.where(x < 0, -v, v)


def _scaled(x, order: int):
    s, high, a, low = _parts(x, order)
    v = gp.where(low, s * gp.exp(-gp.where(low, a, 0.0)), high)
    return _odd(x, v) if order == 1 else v


def _unscaled(x, order: int):
    s, high, a, low = _parts(x, order)
    v = gp.where(low, s, high * gp.exp(a))
    return _odd(x, v) if order == 1 else v


def _i1_over_x(x):
    """I1(x) / x (1/2 at 0): the series below B, I1(x) / x above."""
    bound, n_series, _ = _spec(x)
    a = gp.abs(x)
    small = gp.minimum(a, bound)
    s = _series(small * small * 0.25, 1, n_series) * 0.5
    big = gp.where(a > bound, a, 1.0)
    return gp.where(a <= bound, s, _unscaled(big, 1) / big)


class _Bessel(Function):
    """One of i0, i0e, i1, i1e with its derivative (torch's: i0' = i1, i1' = i0 - i1/x,
    i0e' = i1e - sign(x) i0e, i1e' = i0e - i1e (sign(x) + 1/x); 1/2 at 0 for the order-1 ones)."""

    @staticmethod
    def forward(ctx, x, kind: str):
        ctx.save_for_backward(x)
        ctx.kind = kind
        return _compute(_KERNELS[kind], x)

    @staticmethod
    def backward(ctx, g):
        x = ctx.saved_tensors[0]
        kind = ctx.kind
        if kind == "i0":
            d = i1(x)
        elif kind == "i1":
            d = i0(x) - _compute(_i1_over_x, x)
        elif kind == "i0e":
            d = i1e(x) - gp.sign(x) * i0e(x)
        else:
            # i1e / x = e^(-|x|) I1(x) / x
            d = i0e(x) - gp.sign(x) * i1e(x) - _compute(_i1_over_x, x) * gp.exp(-gp.abs(x))
        return g * d, None


_KERNELS = {"i0": lambda x: _unscaled(x, 0), "i1": lambda x: _unscaled(x, 1),
            "i0e": lambda x: _scaled(x, 0), "i1e": lambda x: _scaled(x, 1)}


def i0(x: Array) -> Array:
    """The modified Bessel function I0 (torch.i0, numpy.i0, scipy.special.i0)."""
    return _Bessel.apply(_floating(x, "i0"), "i0")


def i0e(x: Array) -> Array:
    """exp(-|x|) I0(x), without overflow (torch.special.i0e)."""
    return _Bessel.apply(_floating(x, "i0e"), "i0e")


def i1(x: Array) -> Array:
    """The modified Bessel function I1 (torch.special.i1)."""
    return _Bessel.apply(_floating(x, "i1"), "i1")


def i1e(x: Array) -> Array:
    """exp(-|x|) I1(x), without overflow (torch.special.i1e)."""
    return _Bessel.apply(_floating(x, "i1e"), "i1e")
