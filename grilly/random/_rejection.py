"""von Mises and Zipf draws as a fixed sequence of array operations (no loop that depends on
the data, no read back): each element's candidates come ROUNDS at a time from uniforms, and the
first candidate accepted is kept (grilly.random._hypergeometric does the same for HRUA).

- vonmises: Best and Fisher's wrapped-Cauchy envelope (D. J. Best, N. I. Fisher, "Efficient
  simulation of the von Mises distribution", Appl. Statist. 28, 1979), accepted with
  probability >= 0.65 for every kappa: all of BLOCKS * ROUNDS candidates rejected has
  probability < 1e-14. Tiny kappa (< 1e-8) is uniform on (-pi, pi) and large kappa (> 1e6)
  the normal approximation mu + N / sqrt(kappa), wrapped, as NumPy's.
- zipf: Devroye's rejection from a continuous Pareto envelope (L. Devroye, "Non-Uniform Random
  Variate Generation", 1986, X.6), NumPy's method; candidates above 2**63 are rejected as
  NumPy rejects them. An element with no candidate accepted (for a close to 1, where most
  candidates pass 2**63; none in 10**5 draws at a = 1.01) is reported as invalid (-1).
"""
from __future__ import annotations

import math

from ..array import dispatch as _dispatch

__all__ = ["BLOCKS", "ROUNDS", "vonmises", "zipf"]

ROUNDS = 8    # candidates drawn together per element
BLOCKS = 4    # vonmises: blocks of ROUNDS; zipf: twice as many
_INT64_MAX = 9.223372036854775807e18


def _ns():
    return _dispatch.ns


def _first(accept, values, found, result):
    """(found, result) after a block: each element not found yet takes its first accepted
    candidate along axis 0 of ``values``."""
    ns = _ns()
    k = ns.argmax(ns.astype(accept, ns.int8), axis=0, keepdims=True)
    pick = ns.take_along_axis(values, k, axis=0)[0]
    hit = ns.any(accept, axis=0)
    result = ns.where(found, result, pick)
    return found | hit, result


def _wrap(x):
    """x mapped to [-pi, pi] keeping its sign, as NumPy's fmod(|x| + pi, 2 pi) - pi."""
    ns = _ns()
    m = ns.abs(x) + math.pi
    m = m - 2.0 * math.pi * ns.floor(m / (2.0 * math.pi)) - math.pi
    return ns.where(x < 0.0, -m, m)


def vonmises(mu, kappa, unit, normal):
    """von Mises draws (mu, kappa: Arrays of the draws' shape); ``unit(shape)`` gives
    uniforms in [0, 1), ``normal()`` N(0, 1) draws of the draws' shape."""
    ns = _ns()
    shape = kappa.shape
    k = ns.where(kappa < 1e-8, 1.0, kappa)
    r = 1.0 + ns.sqrt(1.0 + 4.0 * k * k)
    rho = (r - ns.sqrt(2.0 * r)) / (2.0 * k)
    # below 1e-5 the exact s cancels: its expansion 1/kappa + kappa (NumPy's)
    s = ns.where(k < 1e-5, 1.0 / k + k, (1.0 + rho * rho) / (2.0 * rho))
    found = ns.zeros(shape, dtype=ns.bool, device=kappa.device)
    w = ns.zeros(shape, dtype=kappa.dtype, device=kappa.device)
    for _ in range(BLOCKS):
        u, v = unit((ROUNDS,) + shape), unit((ROUNDS,) + shape)
        z = ns.cos(math.pi * u)
        wc = (1.0 + s * z) / (s + z)
        y = k * (s - wc)
        v = ns.where(v == 0.0, 1e-300, v)
        accept = (y * (2.0 - y) - v >= 0.0) | (ns.log(y / v) + 1.0 - y >= 0.0)
        found, w = _first(accept, wc, found, w)
    side = unit(shape)
    angle = ns.acos(ns.clip(w, -1.0, 1.0))
    x = _wrap(ns.where(side < 0.5, -angle, angle) + mu)
    x = ns.where(kappa > 1e6, _wrap(mu + normal() / ns.sqrt(k)), x)
    return ns.where(kappa < 1e-8, math.pi * (2.0 * side - 1.0), x)


def zipf(a, unit):
    """(Zipf draws as float64, whether each was accepted); ``a`` > 1 (float64, the draws'
    shape), ``unit(shape)`` float64 uniforms in [0, 1)."""
    ns = _ns()
    shape = a.shape
    am1 = a - 1.0
    b = ns.exp(am1 * math.log(2.0))   # 2 ** (a - 1)
    found = ns.zeros(shape, dtype=ns.bool, device=a.device)
    x = ns.ones(shape, dtype=a.dtype, device=a.device)
    for _ in range(2 * BLOCKS):
        u = 1.0 - unit((ROUNDS,) + shape)   # (0, 1]
        v = unit((ROUNDS,) + shape)
        c = ns.floor(ns.exp(-ns.log(u) / am1))
        ok = (c >= 1.0) & (c <= _INT64_MAX)
        cs = ns.where(ok, c, 1.0)
        t = ns.exp(am1 * ns.log1p(1.0 / cs))
        accept = ok & (v * cs * (t - 1.0) / (b - 1.0) <= t / b)
        found, x = _first(accept, cs, found, x)
    return x, found
