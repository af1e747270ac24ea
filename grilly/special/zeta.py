"""The Hurwitz zeta function zeta(s, q) = sum_{k >= 0} (k + q)^(-s) (torch.special.zeta,
scipy.special.zeta with q), with its derivative in q.

Method (float32 and float64; float16/bfloat16 computed in float32, integers in float64): the
Euler-Maclaurin formula at w = q + N,

    zeta(s, q) = sum_{k < N} (q + k)^-s + w^(1-s) / (s - 1) + w^-s / 2
                 + sum_{j=1..M} B_2j / (2j)! s (s + 1) ... (s + 2j - 2) w^(-s-2j+1),

N = 12, M = 10 in float64 and N = 8, M = 4 in float32 (the first omitted correction is below
half an ulp for q > 0); the powers are grilly's correctly rounded pow, the sum taken smallest
first. Within 4 ulp of a 60-digit reference for s in (1, 200], q in (0, 1e4] (tests/
test_special.py; mpmath's own zeta loses digits at large q, so the test sums by itself).
Special values as torch: s = 1 is +inf (the pole), s < 1 NaN; q a non-positive integer +inf,
q < 0 with a non-integer s NaN (q < 0 with an integer s is summed, less accurately below
q = -3); s = +inf gives q^-inf. q = +inf gives 0 (torch: NaN).
"""
from __future__ import annotations

import math

from ..array import api as gp
from ..array.array import Array
from ..autograd import Function
from .elementary import _pair
from .gamma import _B, _compute

__all__ = ["zeta"]

_NM = {"float64": (12, 10), "float32": (8, 4)}
# B_2j / (2j)!
_EM = [float(_B[2 * j] / math.factorial(2 * j)) for j in range(1, 13)]


def _shifted_pow(q, k: float, s):
    """((q + k)^-s, q + k rounded): q + k's rounding error lo (TwoSum) would be magnified by s
    in the power (23 ulp at s = 46), so the power is taken at the rounded sum and moved by
    its first-order factor 1 - s lo / (q + k)."""
    hi = q + k
    kk = hi - q
    lo = (q - (hi - kk)) + (k - kk)
    return gp.pow(hi, -s) * (1.0 - s * lo / hi), hi


def _zeta(s, q):
    n_direct, m_corr = _NM["float64" if s.dtype == gp.float64 else "float32"]
    inf_s = gp.isinf(s) & (s > 0)
    sf = gp.where(inf_s, 2.0, s)     # (s = inf is q^-inf below; keep the formula finite)
    wn, w = _shifted_pow(q, float(n_direct), sf)
    ww = w * w
    acc = w * wn / (sf - 1.0) + 0.5 * wn
    # the corrections, smallest last: t_j = s (s+1) ... (s+2j-2) w^(-s-2j+1)
    t = wn * sf / w
    corr = None
    for j in range(1, m_corr + 1):
        term = _EM[j - 1] * t
        corr = term if corr is None else corr + term
        if j < m_corr:
            t = t * ((sf + float(2 * j - 1)) * (sf + float(2 * j))) / ww
    # (a huge s makes the corrections' products overflow; they are 0 then, as w^-s is)
    acc = acc + gp.where(wn == 0.0, 0.0, corr)
    for k in reversed(range(1, n_direct)):
        acc = acc + _shifted_pow(q, float(k), sf)[0]
    acc = acc + gp.pow(q, -sf)
    out = gp.where(inf_s, gp.pow(q, s * -1.0), acc)
    # the domain, as torch's (Cephes): a pole at s = 1, NaN below; q <= 0
    q_int = q == gp.floor(q)
    out = gp.where(q <= 0.0, gp.where(q_int, math.inf,
                                      gp.where(s == gp.floor(s), out, math.nan)), out)
    out = gp.where(gp.isinf(q) & (q > 0), 0.0, out)
    out = gp.where(s == 1.0, math.inf, gp.where(s < 1.0, math.nan, out))
    return gp.where(gp.isnan(s) | gp.isnan(q), math.nan, out)


class _Zeta(Function):
    """zeta(s, q) with d/dq = -s zeta(s + 1, q); d/ds is not implemented (as torch)."""

    @staticmethod
    def forward(ctx, s, q):
        ctx.save_for_backward(s, q)
        return _compute(_zeta, s, q)

    @staticmethod
    def backward(ctx, g):
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("zeta: the derivative with respect to the first argument "
                                      "(s) is not implemented (as torch.special.zeta)")
        s, q = ctx.saved_tensors
        return None, g * (-s * zeta(s + 1.0, q))


def zeta(x, q) -> Array:
    """The Hurwitz zeta function sum_k (k + q)^-x (torch.special.zeta; scipy.special.zeta(x, q))."""
    s, q = _pair(x, q, "zeta")
    return _Zeta.apply(s, q)
