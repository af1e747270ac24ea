"""The normal distribution's functions and the inverse error function, with their derivatives:
ndtr (the standard normal CDF), log_ndtr, ndtri (its inverse) and erfinv.

- ndtr(x) = erfc(-x / sqrt 2) / 2 (erfc relatively accurate: grilly.nn's composite), with
  the rounding error of x / sqrt 2 (which erfc magnifies by 2 z^2) put back to first order.
- log_ndtr(x): log1p(-erfc(x / sqrt 2) / 2) above 0, log(erfc(-x / sqrt 2) / 2) down to a
  bound (-20 in float64, -10 in float32), then the asymptotic series -x^2/2 - log(-x) -
  log(2 pi)/2 + log1p(sum_k (-1)^k (2k-1)!! / x^2k).
- erfinv(y) and ndtri(p) share one solver: a start from Giles' single-precision approximation
  ("Approximating the erfinv function", 2010; the asymptotic series beyond its range), then
  Newton steps: on erf(x) = |y| where |y| <= 1/2; in the tail on log erfc(x) = log q with
  q = 1 - |y| (computed exactly, or given exactly: ndtri's q is 2p), whose step
  (log(erfc(x) / q) times erfc(x) e^(x^2) sqrt(pi) / 2) stays bounded where the plain step
  would overflow, so tiny q (ndtri(1e-300)) converges too.
"""
from __future__ import annotations

import math

import numpy as np

from ..array import api as gp
from ..array import dispatch as _dispatch
from ..array.array import Array
from ..autograd import Function
from ..nn import functional as F
from .gamma import _compute, _floating

__all__ = ["erfcx", "erfinv", "log_ndtr", "ndtr", "ndtri"]

_SQRT1_2 = math.sqrt(0.5)
_HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
         -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _poly(coeffs, w):
    p = coeffs[0]
    for c in coeffs[1:]:
        p = c + p * w
    return p


def _f64(x) -> bool:
    return x.dtype == gp.float64


def _erfc(x):
    return F.erfc(x)


def _solve(a, q):
    """x >= 0 with erf(x) = a, given q = 1 - a exactly (a, q in [0, 1])."""
    w = -gp.log(q * (2.0 - q))
    central = _poly(_CENTRAL, w - 2.5)
    tail = _poly(_TAIL, gp.sqrt(gp.clip(w, 5.0, 16.0)) - 3.0)
    # beyond Giles' range (w > 16: q under 1e-7, only ndtri's exact q gets there), the
    # asymptotic erfc(x) ~ exp(-x^2) / (x sqrt(pi)): x^2 ~ L - log(L) / 2, L = -log(q sqrt(pi))
    lq = gp.maximum(-gp.log(q) - 0.5 * math.log(math.pi), 2.0)
    far = gp.sqrt(lq - 0.5 * gp.log(lq))
    x = gp.where(w < 5.0, central * a, gp.where(w < 16.0, tail * a, far))
    big = 27.2 if _f64(a) else 10.2         # erfc underflows beyond
    intail = a > 0.5
    qs = gp.where(intail, q, 0.5)
    for _ in range(4 if _f64(a) else 2):
        xt = gp.clip(x, 0.4, big)
        e = _erfc(xt)
        # e exp(x^2) as exp(x^2 + log e): each factor alone overflows near the bound
        step_t = gp.log(e / qs) * gp.exp(xt * xt + gp.log(e)) * _HALF_SQRT_PI
        xc = gp.clip(x, 0.0, 0.6)
        step_c = (F.erf(xc) - a) * gp.exp(xc * xc) * _HALF_SQRT_PI
        x = gp.where(intail, xt + step_t, x - step_c)
    x = gp.where(q == 0, math.inf, x)
    return gp.where(a == 0, 0.0, x)


def _erfinv(y):
    a = gp.abs(y)
    x = _solve(a, 1.0 - a)
    x = gp.where(a > 1, math.nan, x)
    return gp.where(y < 0, -x, x)


def _ndtri(p):
    # p < 1/2: -sqrt 2 erfcinv(2p), as erf(t) = 1 - 2p with q = 2p exact; p > 1/2 by symmetry
    # (1 - p is exact there)
    lo = gp.minimum(p, 1.0 - p)
    t = _solve(1.0 - 2.0 * lo, 2.0 * lo) * math.sqrt(2.0)
    x = gp.where(p < 0.5, -t, t)
    return gp.where((p < 0) | (p > 1), math.nan, x)


# 1/sqrt 2 as (hi, lo) per precision, hi split in two halves of its significand (Dekker)
_C = {"float64": (0.7071067811865476, -4.833646656726457e-17, 27),
      "float32": (0.7071067690849304, 1.2101617485882343e-08, 12)}


def _split(a, s: int):
    """(hi, lo), a = hi + lo exactly, each with at most half the significand (Veltkamp)."""
    t = a * float(2 ** s + 1)
    hi = t - (t - a)
    return hi, a - hi


def _const_split(c: float, dtype, s: int) -> tuple[float, float]:
    """Veltkamp's split of the constant ``c`` in the arithmetic of ``dtype``."""
    c = dtype(c)
    t = c * dtype(2 ** s + 1)
    hi = t - (t - c)
    return float(hi), float(c - hi)


_CSPLIT = {k: _const_split(v[0], np.float64 if k == "float64" else np.float32, v[2])
           for k, v in _C.items()}


def _erfc_scaled_arg(x, sign: float):
    """erfc(sign * x / sqrt 2) for the exact quotient: z = fl(x c_hi) carries a rounding error
    d (Dekker's product) that erfc would magnify by 2 z^2 (900 ulp at z = 21); the first-order
    term -d 2/sqrt(pi) exp(-z^2) puts it back."""
    key = "float64" if _f64(x) else "float32"
    chi, clo, s = _C[key]
    chh, chl = _CSPLIT[key]
    z = x * (sign * chi)
    xh, xl = _split(x, s)
    # x c exactly = z + d (the product's error by Dekker, and the constant's low part)
    d = sign * ((((xh * chh - sign * z) + xh * chl) + xl * chh) + xl * chl + x * clo)
    return _erfc(z) - d * (2.0 / math.sqrt(math.pi)) * gp.exp(-(z * z))


def _ndtr(x):
    # (the split of an infinity, or of |x| near the dtype's top, is NaN; erfc is saturated
    # long before 40)
    xf = gp.clip(gp.where(gp.isinf(x), 0.0, x), -40.0, 40.0)
    out = 0.5 * _erfc_scaled_arg(xf, -1.0)
    return gp.where(gp.isinf(x), gp.where(x > 0, gp.ones_like(x), 0.0), out)


def _log_ndtr(x):
    bound = -20.0 if _f64(x) else -10.0
    xm = gp.clip(x, bound, 0.0)
    mid = gp.log(0.5 * _erfc_scaled_arg(xm, -1.0))
    xp = gp.clip(x, 0.0, 40.0)   # (erfc underflows long before 40; the split would overflow)
    upper = gp.log1p(-0.5 * _erfc_scaled_arg(xp, 1.0))
    # the asymptotic series below the bound: sum_k (-1)^k (2k-1)!! / x^2k
    xa = gp.minimum(x, bound)
    r2 = 1.0 / (xa * xa)
    terms = 12 if _f64(x) else 6
    coeffs = [(-1) ** k * math.prod(range(1, 2 * k, 2)) for k in range(1, terms + 1)]
    s = r2 * _poly(coeffs[::-1], r2)
    low = -0.5 * xa * xa - gp.log(-xa) - _LOG_SQRT_2PI + gp.log1p(s)
    out = gp.where(x > 0, upper, gp.where(x >= bound, mid, low))
    return gp.where(gp.isinf(x), gp.where(x > 0, gp.zeros_like(x), -math.inf), out)


def _erfcx(x):
    """exp(x^2) erfc(x): the product where it is finite (x^2 = hi + lo exactly, so exp(x^2) =
    exp(hi) (1 + lo)) up to T (26 in float64, 9 in float32: erfc is still normal there), the
    asymptotic series 1 / (x sqrt pi) sum_k (-1)^k (2k-1)!! / (2 x^2)^k above it (8 and 6
    terms: the next is below half an ulp at T)."""
    f64 = _f64(x)
    top, bits, terms = (26.0, 27, 8) if f64 else (9.0, 12, 6)
    a = gp.abs(x)
    # negative x: the product until exp(x^2) overflows (T + 1 is past that in both dtypes);
    # positive x past T take the series below
    m = gp.minimum(a, top + 1.0)
    mh, ml = _split(m, bits)
    hi = m * m
    lo = ((mh * mh - hi) + 2.0 * mh * ml) + ml * ml
    low = gp.exp(hi) * (1.0 + lo) * _erfc(gp.where(x < 0, -m, m))
    b = gp.maximum(a, top)
    r = 1.0 / (2.0 * b * b)
    coeffs = [(-1) ** k * math.prod(range(1, 2 * k, 2)) for k in range(terms)]
    high = _poly(coeffs[::-1], r) / (b * math.sqrt(math.pi))
    return gp.where(x > top, high, low)


class _Erfcx(Function):
    """erfcx with its derivative 2 x erfcx(x) - 2 / sqrt(pi)."""

    @staticmethod
    def forward(ctx, x):
        out = _compute(_erfcx, x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return (g * (2.0 * x * out - 2.0 / math.sqrt(math.pi)),)


class _Erfinv(Function):
    """erfinv with its derivative sqrt(pi)/2 exp(erfinv(y)^2)."""

    @staticmethod
    def forward(ctx, y):
        x = _compute(_erfinv, y)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, g):
        x = ctx.saved_tensors[0]
        return (g * _HALF_SQRT_PI * gp.exp(x * x),)


class _Ndtri(Function):
    """ndtri with its derivative sqrt(2 pi) exp(ndtri(p)^2 / 2)."""

    @staticmethod
    def forward(ctx, p):
        x = _compute(_ndtri, p)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, g):
        x = ctx.saved_tensors[0]
        return (g * math.sqrt(2.0 * math.pi) * gp.exp(0.5 * x * x),)


class _Ndtr(Function):
    """ndtr with its derivative, the standard normal density."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _compute(_ndtr, x)

    @staticmethod
    def backward(ctx, g):
        x = ctx.saved_tensors[0]
        return (g * gp.exp(-0.5 * x * x - _LOG_SQRT_2PI),)


class _LogNdtr(Function):
    """log_ndtr with its derivative phi(x) / ndtr(x), taken as exp(log phi - log_ndtr)."""

    @staticmethod
    def forward(ctx, x):
        out = _compute(_log_ndtr, x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return (g * gp.exp(-0.5 * x * x - _LOG_SQRT_2PI - out),)


def erfcx(x: Array) -> Array:
    """The scaled complementary error function exp(x^2) erfc(x) (torch.special.erfcx)."""
    return _Erfcx.apply(_floating(x, "erfcx"))


@_dispatch.policy("erfinv")   # in torch's autocast float32 list (amp.policy)
def erfinv(y: Array) -> Array:
    """The inverse error function on [-1, 1] (+-inf at +-1, NaN outside; torch.erfinv)."""
    return _Erfinv.apply(_floating(y, "erfinv"))


def ndtr(x: Array) -> Array:
    """The standard normal CDF (torch.special.ndtr, scipy.special.ndtr)."""
    return _Ndtr.apply(_floating(x, "ndtr"))


def log_ndtr(x: Array) -> Array:
    """log of the standard normal CDF, accurate far into the lower tail (torch.special.log_ndtr)."""
    return _LogNdtr.apply(_floating(x, "log_ndtr"))


def ndtri(p: Array) -> Array:
    """The standard normal quantile: ndtr(ndtri(p)) = p (torch.special.ndtri); +-inf at 0 and 1."""
    return _Ndtri.apply(_floating(p, "ndtri"))
