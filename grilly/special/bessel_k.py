"""The modified Bessel functions of the second kind, orders 0 and 1, and their exponentially
scaled forms (torch.special.modified_bessel_k0/k1, scaled_modified_bessel_k0/k1; scipy.special
k0, k1, k0e, k1e), with their derivatives (torch has none): K0' = -K1, K1' = -K0 - K1 / x.

Method (float32 and float64): for 0 < x <= 1 the power series (DLMF 10.31.1), with t = x^2/4,
    K0(x) = (log 2 - euler_gamma - log x) I0(x) + sum_{k>=1} H_k t^k / (k!)^2
    K1(x) = 1/x + (log x - log 2) I1(x) - x/4 sum_k (psi(k+1) + psi(k+2)) t^k / (k! (k+1)!)
(K0's terms are all positive below x = 2 exp(-euler_gamma) = 1.12: no cancellation); above 1,
sqrt(x) e^x K_v(x) as a Chebyshev series in s = 2/x - 1 (tools/fit_bessel_k.py: 35 terms in
float64, those above 1e-9 in float32), evaluated by Clenshaw's recurrence, times e^-x /
sqrt(x) (the scaled forms leave out e^-x, so they do not underflow). K is +inf at 0 and NaN
below, as torch's.
"""
from __future__ import annotations

import math

from ..array import api as gp
from ..array.array import Array
from ..autograd import Function
from .bessel import _series
from .gamma import _compute, _floating, _horner

__all__ = ["k0", "k0e", "k1", "k1e"]

K0_CHEB = (
    1.1944330762167386, -0.053855323307629495, 0.004362000068251702, -0.0005521270349863234,
    8.959565555755952e-05, -1.7138726856421186e-05, 3.695146089045472e-06, -8.737284518980525e-07,
    2.225046272255236e-07, -6.025216756376064e-08, 1.7186668629418083e-08,
    -5.1272057810909205e-09, 1.5907351467912106e-09, -5.10958325791419e-10,
    1.6929517419961088e-10, -5.7683063818637606e-11, 2.0159542597761383e-11,
    -7.210940065346495e-12, 2.6349075982806445e-12, -9.819576891759296e-13, 3.72695818784577e-13,
    -1.4388149744180521e-13, 5.6436532735816866e-14, -2.2469288334596896e-14,
    9.072046991627365e-15, -3.711589997838162e-15, 1.537582290719742e-15, -6.445464362724762e-16,
    2.7324144482527955e-16, -1.1707837700385628e-16, 5.067869397943657e-17,
    -2.215087912714289e-17, 9.772081357930309e-18, -4.3495197635403266e-18, 1.952511837703155e-18,
)
K1_CHEB = (
    1.4532756675938414, 0.19051350202061165, -0.008406706460495654, 0.0008815363164514389,
    -0.000129995769583983, 2.3441638979785087e-05, -4.853489413610226e-06, 1.1139969511197356e-06,
    -2.772707643805077e-07, 7.37247184977708e-08, -2.0717892129028323e-08, 6.103966549420336e-09,
    -1.873778917957349e-09, 5.963886884453419e-10, -1.96028004074301e-10, 6.632273899864202e-11,
    -2.3034250700407756e-11, 8.193082518369976e-12, -2.9786645069974164e-12,
    1.1049772078983365e-12, -4.1763277431648047e-13, 1.6061141914625803e-13,
    -6.277632672531289e-14, 2.4911830875182032e-14, -1.002779686252293e-14, 4.091059996919741e-15,
    -1.690331071434488e-15, 7.068360792264328e-16, -2.9895680121763374e-16,
    1.2781913900252084e-16, -5.521491188037584e-17, 2.4087033253210474e-17,
    -1.0606842599776098e-17, 4.712904181351422e-18, -2.112162909518144e-18,
)
# sum_k H_k t^k / (k!)^2 and sum_k (psi(k + 1) + psi(k + 2)) t^k / (k! (k + 1)!)
K0_SERIES = (
    1.0, 0.375, 0.05092592592592592, 0.003616898148148148, 0.0001585648148148148,
    4.72608024691358e-06, 1.0207455998272325e-07, 1.6718048413148328e-09, 2.1483350211950277e-11,
    2.224275605476294e-13, 1.895299587006153e-15, 1.3525001839484812e-17, 8.201338813682637e-20,
)
K1_SERIES = (
    -0.15443132980306573, 0.6727843350984671, 0.18157516696085563, 0.019182189839330562,
    0.001115359491966528, 4.142247689271143e-05, 1.071545914091181e-06, 2.045286003593878e-08,
    3.002048746589188e-10, 3.495928729692882e-12, 3.309914735250272e-14, 2.5986411321011286e-16,
    1.7195232826992565e-18, 9.721207518823618e-21,
)
_LOG2_MINUS_GAMMA = math.log(2.0) - 0.57721566490153286061
_TERMS = {"float64": (len(K0_CHEB), len(K1_CHEB), 12),
          "float32": (sum(abs(c) > 1e-9 for c in K0_CHEB), sum(abs(c) > 1e-9 for c in K1_CHEB),
                      7)}


def _clenshaw(coeffs, s):
    """sum_k coeffs[k] T_k(s)."""
    b1 = b2 = None
    for c in reversed(coeffs[1:]):
        b0 = c if b1 is None else (c + 2.0 * s * b1 if b2 is None else c + 2.0 * s * b1 - b2)
        b1, b2 = b0, b1
    return coeffs[0] + s * b1 - b2


def _parts(x, order: int):
    """(K_order(x) by the series where 0 < x <= 1, sqrt(x) e^x K_order(x) by the Chebyshev
    series where x > 1, whether x <= 1); each part finite garbage on the other side."""
    n_k0, n_k1, n_series = _TERMS["float64" if x.dtype == gp.float64 else "float32"]
    low = x <= 1.0
    xs = gp.where(low & (x > 0.0), x, 1.0)
    t = xs * xs * 0.25
    if order == 0:
        small = (_LOG2_MINUS_GAMMA - gp.log(xs)) * _series(t, 0, n_series) \
            + t * _horner(list(K0_SERIES[:n_series]), t)
    else:
        small = 1.0 / xs + (gp.log(xs) - math.log(2.0)) * (_series(t, 1, n_series) * xs * 0.5) \
            - xs * 0.25 * _horner(list(K1_SERIES[:n_series]), t)
    xb = gp.where(low, 2.0, x)
    s = 2.0 / xb - 1.0
    big = _clenshaw(list((K0_CHEB[:n_k0] if order == 0 else K1_CHEB[:n_k1])), s)
    return small, big, xb, low


def _finish(x, v):
    """torch's special values: +inf at 0, NaN below; 0 at +inf."""
    v = gp.where(x == 0.0, math.inf, v)
    v = gp.where(gp.isinf(x) & (x > 0), 0.0, v)
    return gp.where((x < 0.0) | gp.isnan(x), math.nan, v)


def _unscaled(x, order: int):
    small, big, xb, low = _parts(x, order)
    return _finish(x, gp.where(low, small, big * gp.exp(-xb) / gp.sqrt(xb)))


def _scaled(x, order: int):
    small, big, xb, low = _parts(x, order)
    xs = gp.where(low, x, 0.0)
    return _finish(x, gp.where(low, small * gp.exp(xs), big / gp.sqrt(xb)))


_KERNELS = {"k0": lambda x: _unscaled(x, 0), "k1": lambda x: _unscaled(x, 1),
            "k0e": lambda x: _scaled(x, 0), "k1e": lambda x: _scaled(x, 1)}


class _BesselK(Function):
    """One of k0, k1, k0e, k1e with its derivative: K0' = -K1, K1' = -K0 - K1/x,
    K0e' = K0e - K1e, K1e' = K1e - K0e - K1e / x."""

    @staticmethod
    def forward(ctx, x, kind: str):
        out = _compute(_KERNELS[kind], x)
        ctx.save_for_backward(x, out)
        ctx.kind = kind
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        kind = ctx.kind
        if kind == "k0":
            d = -k1(x)
        elif kind == "k1":
            d = -k0(x) - out / x
        elif kind == "k0e":
            d = out - k1e(x)
        else:
            d = out - k0e(x) - out / x
        return g * d, None


def k0(x: Array) -> Array:
    """The modified Bessel function K0 (torch.special.modified_bessel_k0, scipy.special.k0)."""
    return _BesselK.apply(_floating(x, "k0"), "k0")


def k1(x: Array) -> Array:
    """The modified Bessel function K1 (torch.special.modified_bessel_k1, scipy.special.k1)."""
    return _BesselK.apply(_floating(x, "k1"), "k1")


def k0e(x: Array) -> Array:
    """exp(x) K0(x), without underflow (torch.special.scaled_modified_bessel_k0)."""
    return _BesselK.apply(_floating(x, "k0e"), "k0e")


def k1e(x: Array) -> Array:
    """exp(x) K1(x), without underflow (torch.special.scaled_modified_bessel_k1)."""
    return _BesselK.apply(_floating(x, "k1e"), "k1e")
