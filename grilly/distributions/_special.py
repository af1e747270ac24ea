"""lgamma, digamma, xlogy, gammainc and lbeta for positive or bounded
arguments, as namespace compositions with fewer ops than grilly.special's (log_prob runs them
every step); autograd differentiates them: d lgamma = digamma, d digamma = trigamma, up to the
series' truncation error.

lgamma and digamma move the argument up by 6 with the recurrence Gamma(x + 1) = x Gamma(x),
then use the asymptotic (Stirling / de Moivre) series at z = x + 6 >= 6, whose first omitted
term is below 1e-10: absolute error ~1e-10 in float64, a few float32 ulp of the shifted values
(so an absolute error ~1e-6 where lgamma(x) is near 0, at x near 1 and 2). Defined for x > 0
(the distributions' parameters and values); lgamma(0) = inf.
gammainc (the regularized lower incomplete gamma P(a, x)): its power series below x = a + 1
and Lentz's continued fraction for 1 - P above, each a fixed number of terms (_SERIES_TERMS,
_CF_TERMS) up to a = 100 (~1e-8), Temme's uniform asymptotic expansion above (~1e-8 at
a = 100, better above).
(erfinv is grilly.special's.)
"""
from __future__ import annotations

import math

from ..array import api as gp
from ..nn import functional as F

__all__ = ["digamma", "gammainc", "lbeta", "lgamma", "xlogy"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_SHIFT = 6


def lgamma(x):
    """log Gamma(x) for x > 0."""
    # log(x (x+1) ... (x+5)) as three logs of pairs: fewer ops than six, no overflow below 1e19
    shift = gp.log(x * (x + 1.0)) + gp.log((x + 2.0) * (x + 3.0)) + gp.log((x + 4.0) * (x + 5.0))
    z = x + float(_SHIFT)
    r = 1.0 / z
    r2 = r * r
    series = r * (1.0 / 12 + r2 * (-1.0 / 360 + r2 * (1.0 / 1260 + r2 * (-1.0 / 1680))))
    return (z - 0.5) * gp.log(z) - z + _HALF_LOG_2PI + series - shift


def digamma(x):
    """d/dx log Gamma(x) for x > 0."""
    shift = 1.0 / x
    for k in range(1, _SHIFT):
        shift = shift + 1.0 / (x + float(k))
    z = x + float(_SHIFT)
    r2 = 1.0 / (z * z)
    series = r2 * (-1.0 / 12 + r2 * (1.0 / 120 + r2 * (-1.0 / 252 + r2 * (1.0 / 240
                                                                          + r2 * (-1.0 / 132)))))
    return gp.log(z) - 0.5 / z + series - shift


def xlogy(x, y):
    """x * log(y), 0 where x == 0 (also where y == 0)."""
    safe_y = gp.where(x == 0, 1.0, y)
    return gp.where(x == 0, 0.0, x * gp.log(safe_y))


def lbeta(a, b):
    """log B(a, b) for a, b > 0."""
    return lgamma(a) + lgamma(b) - lgamma(a + b)


_SERIES_TERMS = 64
_CF_TERMS = 48


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) for a > 0, x >= 0."""
    positive = x > 0.0
    xs = gp.where(positive, x, 1.0)        # log(0) kept out of the (discarded) branches
    series_side = xs < a + 1.0
    # series: P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)); x capped at
    # a + 1 where the other branch is used, so its terms stay bounded (and their gradient finite);
    # where, not minimum: the whole gradient goes to the branch used, x = a + 1 included
    x1 = gp.where(series_side, xs, a + 1.0)
    term = gp.ones_like(x1 * a)
    total = term
    for n in range(1, _SERIES_TERMS):
        term = term * x1 / (a + float(n))
        total = total + term
    lower = gp.exp(a * gp.log(x1) - x1 - lgamma(a + 1.0)) * total
    # continued fraction for Q = 1 - P (modified Lentz), x raised to a + 1 on the series side
    x2 = gp.where(series_side, a + 1.0, xs)
    tiny = 1e-30
    b = x2 + 1.0 - a
    c = gp.full_like(b, 1.0 / tiny)
    d = 1.0 / b
    h = d
    for i in range(1, _CF_TERMS):
        an = -float(i) * (float(i) - a)
        b = b + 2.0
        d = an * d + b
        d = gp.where(gp.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = gp.where(gp.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        h = h * (d * c)
    upper = gp.exp(a * gp.log(x2) - x2 - lgamma(a)) * h
    p = gp.where(series_side, lower, 1.0 - upper)
    # large a: the terms above would need ~9 sqrt(a) of them; Temme's uniform expansion instead
    big = a > _TEMME_FROM
    p = gp.where(big, 1.0 - _temme_upper(gp.where(big, a, 2.0 * _TEMME_FROM),
                                         gp.where(big, xs, 2.0 * _TEMME_FROM)), p)
    return gp.where(positive, p, 0.0)


_TEMME_FROM = 100.0


def _d_minus_log1p(d):
    """d - log(1 + d) for d > -1, without the cancellation of the difference at small |d|:
    with u = d / (2 + d), it is 2u^2 / (1 - u) - 2 (u^3/3 + u^5/5 + ...)."""
    small = gp.abs(d) < 0.3
    ds = gp.where(small, d, 0.0)
    u = ds / (2.0 + ds)
    u2 = u * u
    tail = 0.0
    for k in range(12, 0, -1):          # |u| < 0.18: u^25 is below float64's precision
        tail = u2 * (1.0 / (2 * k + 1) + tail)
    series = 2.0 * u2 / (1.0 - u) - 2.0 * u * tail
    dl = gp.where(small, 1.0, d)
    return gp.where(small, series, dl - gp.log1p(dl))


def _temme_upper(a, x):
    """Q(a, x) = 1 - P(a, x) by Temme's uniform asymptotic expansion (DLMF 8.12.3-8.12.11) to
    the a^-1 term: ~1e-8 at a = 100, better above."""
    d = x / a - 1.0
    near = gp.abs(d) < 0.01
    # near lambda = x / a = 1 the closed forms cancel (and divide by 0 at x = a): series in eta
    dn = gp.where(near, d, 0.0)
    eta_n = dn * gp.sqrt(1.0 + dn * (-2.0 / 3 + dn * (0.5 + dn * (-0.4 + dn / 3.0))))
    c0_n = -1.0 / 3 + eta_n * (1.0 / 12 + eta_n * (-2.0 / 135 + eta_n * (1.0 / 864
                                                                       + eta_n / 2835.0)))
    c1_n = -1.0 / 540 + eta_n * (-1.0 / 288 + eta_n * (1.0 / 378 - eta_n * 7.0 / 103680))
    df = gp.where(near, 1.0, d)
    eta_f = gp.sign(df) * gp.sqrt(2.0 * _d_minus_log1p(df))
    c0_f = 1.0 / df - 1.0 / eta_f
    c1_f = 1.0 / (eta_f * eta_f * eta_f) - 1.0 / (df * df * df) - 1.0 / (df * df) - 1.0 / (12.0 * df)
    eta = gp.where(near, eta_n, eta_f)
    c = gp.where(near, c0_n + c1_n / a, c0_f + c1_f / a)
    erfc = F.erfc(eta * gp.sqrt(0.5 * a))   # (not 1 - erf: Q is tiny where erf is near 1)
    return 0.5 * erfc + gp.exp(-0.5 * a * eta * eta) / gp.sqrt(2.0 * math.pi * a) * c
