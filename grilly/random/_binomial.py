"""Binomial draws as a fixed sequence of array operations in float64 (no loop that depends on
the data, no read back), after grilly.random's Poisson sampler (_poisson.py). With
q = min(p, 1 - p) (a draw for 1 - p is n minus one for p):

- n q < 10: inversion by sequential search over k = 0 .. STEPS - 1 with one uniform (the pmf by
  its recurrence p(k+1) = p(k) (n - k) / (k + 1) q / (1 - q)); a binomial's upper tail is
  below a Poisson's of the same mean, so P(X >= 40) < 7.4e-13; such draws come out as
  min(n, 40).
- n q >= 10: Hoermann's transformed rejection with squeeze (BTRS; W. Hoermann, "The generation
  of binomial random variates", J. Statist. Comput. Simul. 46, 1993) for ROUNDS rounds, each a
  candidate for every element from two uniforms; the first accepted one is kept (all reject with
  probability < 1e-12; the element then takes floor((n + 1) q)). The acceptance test uses
  Stirling's series for the log factorials' tails, so no terms of size n log n cancel.
"""
from __future__ import annotations

import math

from ..array import dispatch as _dispatch

__all__ = ["ROUNDS", "SMALL", "STEPS", "sample"]

SMALL = 10.0
STEPS = 40
ROUNDS = 20
N_MAX = 2.0 ** 52    # float64 tells the counts apart up to here

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
# log k! - ((k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2) for k < 10; above, its series
_TAIL = [math.lgamma(k + 1.0) - ((k + 0.5) * math.log(k + 1.0) - (k + 1.0) + _HALF_LOG_2PI)
         for k in range(10)]


def _ns():
    return _dispatch.ns


def _stirling_tail(k):
    """log k! minus Stirling's approximation around k + 1, for integer-valued k >= 0."""
    ns = _ns()
    idx = ns.astype(ns.clip(k, 0.0, 9.0), ns.int64)
    table = ns.asarray(_TAIL, dtype=ns.float64, device=k.device)
    small = ns.reshape(ns.take(table, ns.reshape(idx, (-1,))), k.shape)
    r = 1.0 / (ns.maximum(k, 9.0) + 1.0)
    r2 = r * r
    series = (1.0 / 12 - (1.0 / 360 - (1.0 / 1260) * r2) * r2) * r
    return ns.where(k < 10.0, small, series)


def _inversion(n, q, u):
    """The number of k < STEPS whose cumulative probability is <= u (at most n)."""
    ns = _ns()
    pmf = ns.exp(n * ns.log1p(-q))
    ratio = q / (1.0 - q)
    cdf = pmf
    x = ns.zeros_like(q)
    for k in range(STEPS):
        if k:
            pmf = pmf * ns.maximum(n - float(k - 1), 0.0) * (1.0 / k) * ratio
            cdf = cdf + pmf
        x = ns.where(u >= cdf, float(k + 1), x)
    return ns.minimum(x, n)


def _btrs(n, q, draw):
    """Hoermann's BTRS for n q >= 10 (q <= 1/2): the first accepted of ROUNDS candidates."""
    ns = _ns()
    spq = ns.sqrt(n * q * (1.0 - q))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * q
    c = n * q + 0.5
    vr = 0.92 - 4.2 / b
    r = q / (1.0 - q)
    log_alpha = ns.log((2.83 + 5.1 / b) * spq)
    m = ns.floor((n + 1.0) * q)
    # the parts of the log pmf ratio at the mode m that do not depend on the candidate
    head = ((m + 0.5) * ns.log((m + 1.0) / (r * (n - m + 1.0)))
            + _stirling_tail(m) + _stirling_tail(n - m))
    x = m   # all rounds rejected (probability < 1e-12)
    done = ns.zeros(q.shape, dtype=ns.bool, device=q.device)
    for _ in range(ROUNDS):
        uv = draw((2,) + tuple(q.shape))
        uu, vv = uv[0] - 0.5, uv[1]
        us = ns.maximum(0.5 - ns.abs(uu), 2.0 ** -54)
        k = ns.floor((2.0 * a / us + b) * uu + c)
        inside = (k >= 0.0) & (k <= n)
        ks = ns.clip(k, 0.0, n)   # the test below sees a count in range (outside is rejected)
        quick = (us >= 0.07) & (vv <= vr)
        hat = ns.log(vv) + log_alpha - ns.log(a / (us * us) + b)
        bound = (head + (n + 1.0) * ns.log((n - m + 1.0) / (n - ks + 1.0))
                 + (ks + 0.5) * ns.log(r * (n - ks + 1.0) / (ks + 1.0))
                 - _stirling_tail(ks) - _stirling_tail(n - ks))
        ok = inside & (quick | (hat <= bound))
        x = ns.where(ok & ~done, k, x)
        done = done | ok
    return x


def sample(n, p, draw, small: bool = True, large: bool = True):
    """Binomial(n, p) draws (float64) of n's and p's (float64, the draws' shape) values, nan
    where n is not an integer in [0, N_MAX] or p is not in [0, 1]; ``draw(shape)`` gives float64
    uniforms: first n.shape of them for the inversion, then ROUNDS of (2,) + n.shape for BTRS.
    ``small`` / ``large`` False: no element has n min(p, 1 - p) below / at least 10 (known on
    the host), so that method is neither drawn nor run."""
    ns = _ns()
    bad = ~((n >= 0.0) & (n <= N_MAX) & (ns.floor(n) == n) & (p >= 0.0) & (p <= 1.0))
    flip = p > 0.5
    q = ns.where(flip, 1.0 - p, p)
    n0 = ns.where(bad, 0.0, n)
    q0 = ns.where(bad, 0.0, q)
    is_small = n0 * q0 < SMALL
    if small:
        x = _inversion(ns.where(is_small, n0, 0.0), ns.where(is_small, q0, 0.0), draw(n.shape))
    if large:
        # BTRS sees harmless parameters (n 40, q 1/2) where the inversion's result is used
        x_large = _btrs(ns.where(is_small, 40.0, n0), ns.where(is_small, 0.5, q0), draw)
        x = ns.where(is_small, x, x_large) if small else x_large
    x = ns.where(flip, n0 - x, x)
    return ns.where(bad, math.nan, x)
