"""Hypergeometric draws as a fixed sequence of array operations in float64 (no loop that depends
on the data, no read back), after grilly.random's binomial sampler (_binomial.py). The draw
counts the good items in a sample of ``n`` taken without replacement from ``good + bad``. It is
computed for the smaller colour and the smaller of the sample and its complement (m = min(n,
good + bad - n)), then mapped back:

- mean < 10: inversion by sequential search over k = 0 .. STEPS - 1 with one uniform (the pmf
  by its recurrence); a hypergeometric's tail is below the binomial's of the same mean, which is
  below the Poisson's, so P(X >= 40) < 7.4e-13; such draws come out as 40.
- mean >= 10: Stadlober's ratio of uniforms with the table-mountain hat (HRUA; E. Stadlober,
  "The ratio of uniforms approach for generating discrete random variates", J. Comput. Appl.
  Math. 31, 1990) for ROUNDS rounds, each a candidate for every element from two uniforms; the
  variance is then >= 2.5 and a candidate is accepted with probability >= 0.5, so all reject
  with probability < 1e-12 (the element then takes the mode). As in NumPy, candidates beyond
  16 standard deviations above the mean are not proposed.
"""
from __future__ import annotations

import math

from ..array import dispatch as _dispatch
from ._binomial import _HALF_LOG_2PI, _stirling_tail

__all__ = ["MAX", "BLOCK", "ROUNDS", "SMALL", "STEPS", "sample"]

SMALL = 10.0
STEPS = 40
ROUNDS = 40
BLOCK = 8          # HRUA rounds computed together
MAX = 1e9          # NumPy's bound on good and bad

# the hat's constants: 2 sqrt(2/e) and 3 - 2 sqrt(3/e) (Stadlober's)
_D1 = 2.0 * math.sqrt(2.0 / math.e)
_D2 = 3.0 - 2.0 * math.sqrt(3.0 / math.e)


def _ns():
    return _dispatch.ns


def _log_factorial(k):
    """log k! for integer-valued float64 k >= 0 (Stirling around k + 1 plus its tail)."""
    ns = _ns()
    return (k + 0.5) * ns.log(k + 1.0) - (k + 1.0) + _HALF_LOG_2PI + _stirling_tail(k)


def _log_weight(k, lo, hi, m):
    """log of the pmf at k up to a constant: -(log k! + log (lo-k)! + log (m-k)! +
    log (hi-m+k)!)."""
    return -(_log_factorial(k) + _log_factorial(lo - k) + _log_factorial(m - k)
             + _log_factorial(hi - m + k))


def _inversion(lo, hi, m, u):
    """The number of k < STEPS whose cumulative probability is <= u (at most min(m, lo))."""
    ns = _ns()
    total = lo + hi
    # P(0) = C(hi, m) / C(total, m)
    pmf = ns.exp(_log_factorial(hi) + _log_factorial(total - m) - _log_factorial(hi - m)
                 - _log_factorial(total))
    cdf = pmf
    x = ns.zeros_like(u)
    for k in range(STEPS):
        if k:
            j = float(k - 1)
            pmf = (pmf * ns.maximum(lo - j, 0.0) * ns.maximum(m - j, 0.0)
                   / (float(k) * (hi - m + float(k))))
            cdf = cdf + pmf
        x = ns.where(u >= cdf, float(k + 1), x)
    return ns.minimum(x, ns.minimum(m, lo))


def _hrua(lo, hi, m, draw):
    """Stadlober's HRUA for mean >= 10: the first accepted of ROUNDS candidates."""
    ns = _ns()
    total = lo + hi
    p = lo / total
    a = m * p + 0.5
    var = (total - m) * m * p * (1.0 - p) / (total - 1.0)
    c = ns.sqrt(var + 0.5)
    h = _D1 * c + _D2
    mode = ns.floor((m + 1.0) * (lo + 1.0) / (total + 2.0))
    top = _log_weight(mode, lo, hi, m)
    b = ns.minimum(ns.minimum(m, lo) + 1.0, ns.floor(a + 16.0 * c))
    x = mode   # all rounds rejected (probability < 1e-12)
    done = ns.zeros(m.shape, dtype=ns.bool, device=m.device)
    # the rounds in blocks of BLOCK along a leading axis (few, larger array operations)
    for _ in range(ROUNDS // BLOCK):
        uv = draw((2, BLOCK) + tuple(m.shape))
        u, v = 1.0 - uv[0], uv[1]   # u in (0, 1]
        y = a + h * (v - 0.5) / u
        inside = (y >= 0.0) & (y < b)
        k = ns.floor(ns.clip(y, 0.0, b - 1.0))   # the test below sees a count in range
        t = _log_weight(k, lo, hi, m) - top
        ok = inside & ((u * (4.0 - u) - 3.0 <= t)
                       | ((u * (u - t) < 1.0) & (2.0 * ns.log(u) <= t)))
        first, got = x, ns.zeros(m.shape, dtype=ns.bool, device=m.device)
        for j in reversed(range(BLOCK)):   # the block's first accepted candidate
            first = ns.where(ok[j], k[j], first)
            got = got | ok[j]
        x = ns.where(got & ~done, first, x)
        done = done | got
    return x


def sample(good, bad, n, draw, small: bool = True, large: bool = True):
    """Hypergeometric draws (float64) of good's, bad's and n's values (integer-valued float64
    arrays of the draws' shape), nan where one is negative, good or bad is >= MAX or n exceeds
    good + bad; ``draw(shape)`` gives float64 uniforms: first the draws' shape of them for the
    inversion, then ROUNDS / BLOCK of (2, BLOCK) + shape for HRUA. ``small`` / ``large`` False: no element's
    mean is below / at least 10 (known on the host), so that method is neither drawn nor run."""
    ns = _ns()
    bad_ = ~((good >= 0.0) & (bad >= 0.0) & (n >= 0.0) & (good < MAX) & (bad < MAX)
             & (n <= good + bad))
    g = ns.where(bad_, 1.0, good)
    b = ns.where(bad_, 1.0, bad)
    nn = ns.where(bad_, 0.0, n)
    total = g + b
    m = ns.minimum(nn, total - nn)
    lo, hi = ns.minimum(g, b), ns.maximum(g, b)
    is_small = m * lo < SMALL * ns.maximum(total, 1.0)
    if small:
        x = _inversion(ns.where(is_small, lo, 0.0), ns.where(is_small, hi, 1.0),
                       ns.where(is_small, m, 0.0), draw(m.shape))
    if large:
        # HRUA sees harmless parameters (20 of 40, a sample of 20) where inversion's is used
        x_large = _hrua(ns.where(is_small, 20.0, lo), ns.where(is_small, 20.0, hi),
                        ns.where(is_small, 20.0, m), draw)
        x = ns.where(is_small, x, x_large) if small else x_large
    x = ns.where(g > b, m - x, x)          # the smaller colour was bad's
    x = ns.where(m < nn, g - x, x)         # the complement was drawn
    return ns.where(bad_, math.nan, x)
