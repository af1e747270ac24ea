"""Poisson draws as a fixed sequence of array operations (no loop that depends on the data, no
read back to the host), computed in float64.

- rate < 10: inversion by sequential search over k = 0 .. STEPS - 1 with one uniform: the draw
  is the first k whose cumulative probability exceeds the uniform. P(X >= 40) < 7.4e-13 for
  rate < 10; such draws come out as 40.
- rate >= 10: Hoermann's transformed rejection with squeeze (PTRS; W. Hoermann, "The
  transformed rejection method for generating Poisson random variables", Insurance: Mathematics
  and Economics 12, 1993) for ROUNDS rounds, each a candidate for every element from two
  uniforms; the first accepted one is kept. A candidate is accepted with probability ~0.753 at
  rate 10, rising with the rate (0.89 at 1e5), so all 20 reject with probability
  < 0.248^20 < 1e-12; the element then takes floor(rate).

Otherwise the draws follow the Poisson law exactly, up to float64 rounding.
"""
from __future__ import annotations

import math

from ..array import dispatch as _dispatch

__all__ = ["LAM_MAX", "ROUNDS", "SMALL", "STEPS", "sample"]

SMALL = 10.0      # PTRS's hat is fitted for rates >= 10; below, inversion
STEPS = 40        # inversion's search length: P(X >= 40) < 7.4e-13 for rate < 10
ROUNDS = 20       # PTRS candidates per element: all reject with probability < 1e-12
LAM_MAX = 2.0 ** 52   # above it float64 cannot tell neighbouring integers near the rate apart

_TABLE = 16       # log k! of k < 16 from a table; above, Stirling's series to 1/k^7 (< 2e-14)
_LOG_FACT = [math.lgamma(k + 1.0) for k in range(_TABLE)]
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _ns():
    return _dispatch.ns


def _log_pmf(k, lam, loglam):
    """log P(X = k) of Poisson(lam), float64, for integer-valued k >= 0 (k < 0: anything)."""
    ns = _ns()
    k = ns.maximum(k, 0.0)
    idx = ns.astype(ns.minimum(k, float(_TABLE - 1)), ns.int64)
    table = ns.asarray(_LOG_FACT, dtype=ns.float64, device=k.device)
    log_fact = ns.reshape(ns.take(table, ns.reshape(idx, (-1,))), k.shape)
    direct = k * loglam - lam - log_fact
    # large k: log k! by Stirling's series and k log(k/lam) - (k - lam) through log1p, so no
    # terms of size k log k cancel (their rounding would be ~1e-10 at rate 1e5)
    kb = ns.maximum(k, float(_TABLE))
    d = kb - lam
    r = 1.0 / kb
    r2 = r * r
    series = r * (1.0 / 12 - r2 * (1.0 / 360 - r2 * (1.0 / 1260 - r2 * (1.0 / 1680))))
    stirling = -(kb * ns.log1p(d / lam) - d) - 0.5 * ns.log(kb) - _HALF_LOG_2PI - series
    return ns.where(k < float(_TABLE), direct, stirling)


def _inversion(lam, u):
    """Sequential search: the number of k < STEPS whose cumulative probability is <= u."""
    ns = _ns()
    p = ns.exp(-lam)
    cdf = p
    x = ns.zeros_like(lam)
    for k in range(STEPS):
        if k:
            p = p * lam * (1.0 / k)
            cdf = cdf + p
        # cdf grows with k, so the last k with u >= cdf(k) sets the draw
        x = ns.where(u >= cdf, float(k + 1), x)
    return x


def _ptrs(lam, draw):
    """Hoermann's PTRS: the first accepted of ROUNDS candidates, each from a (2,) + lam.shape
    draw of uniforms (one round at a time, so the temporaries are lam-sized)."""
    ns = _ns()
    slam, loglam = ns.sqrt(lam), ns.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_inv_alpha = ns.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2.0)
    x = ns.floor(lam)   # all rounds rejected (probability < 1e-12)
    done = ns.zeros(lam.shape, dtype=ns.bool, device=lam.device)
    for _ in range(ROUNDS):
        uv = draw((2,) + tuple(lam.shape))
        uu, vv = uv[0] - 0.5, uv[1]
        # us is 0 only for u = 0 exactly; a floor keeps it finite (that candidate's k is
        # negative either way, and rejected)
        us = ns.maximum(0.5 - ns.abs(uu), 2.0 ** -54)
        k = ns.floor((2.0 * a / us + b) * uu + lam + 0.43)
        quick = (us >= 0.07) & (vv <= vr)
        hat = ns.log(vv) + log_inv_alpha - ns.log(a / (us * us) + b)
        full = (k >= 0.0) & ((us >= 0.013) | (vv <= us)) & (hat <= _log_pmf(k, lam, loglam))
        ok = quick | full
        x = ns.where(ok & ~done, k, x)
        done = done | ok
    return x


def sample(lam, draw, small: bool = True, large: bool = True):
    """Poisson draws (float64) of rates ``lam`` (float64, the draws' shape), nan where lam is not
    in [0, LAM_MAX]; ``draw(shape)`` gives float64 uniforms: first lam.shape of them for the
    inversion, then ROUNDS of (2,) + lam.shape for PTRS. ``small`` / ``large`` False: no rate
    is below / at least 10 (known on the host), so that method is neither drawn nor run."""
    ns = _ns()
    bad = ~((lam >= 0.0) & (lam <= LAM_MAX))   # nan too
    is_small = lam < SMALL
    # each method sees harmless rates where the other one's (or nan) is used
    if small:
        x = _inversion(ns.where(is_small & ~bad, lam, 0.0), draw(lam.shape))
    if large:
        x_large = _ptrs(ns.where(is_small | bad, SMALL, lam), draw)
        x = ns.where(is_small, x, x_large) if small else x_large
    return ns.where(bad, math.nan, x)
