"""Gamma draws by Marsaglia and Tsang's method ("A simple method for generating gamma variables",
2000) as a fixed number of array rounds (no loop that depends on the data, no read back): every
element draws a normal and a uniform each round and keeps its first accepted proposal. For
shape >= 1 a proposal is accepted with probability >= 0.95, so an element is left without one
after ROUNDS rounds with probability < 0.05**ROUNDS ~ 1e-13 (its normal is then 0: the draw is
d = a - 1/3). Shapes below 1 draw Gamma(a + 1) and multiply by U**(1/a).

The one implementation of the method: grilly.random.Generator's gamma family and
grilly.distributions' Gamma/Beta/Dirichlet (which differentiates through the transform) use it.
"""
from __future__ import annotations

from ..array import dispatch as _dispatch

__all__ = ["ROUNDS", "accepted_normal", "log_standard_gamma"]

ROUNDS = 10


def _ns():
    return _dispatch.ns


def accepted_normal(d, c, normal, uniform, rounds: int = ROUNDS):
    """The accepted normal z of Marsaglia-Tsang for d = a - 1/3, c = 1/sqrt(9 d) (a >= 1,
    arrays of the draws' shape), 0 where all ``rounds`` proposals were rejected; ``normal()`` and
    ``uniform()`` give one round's draws (normal first)."""
    ns = _ns()
    z_acc = ns.zeros_like(d)
    done = ns.zeros(d.shape, dtype=ns.bool, device=d.device)
    for _ in range(rounds):
        z = normal()
        u = uniform()
        v = 1.0 + c * z
        v3 = v * v * v
        # (v3 floored so its log stays finite where v <= 0, which is rejected anyway)
        ok = (v > 0) & (ns.log(u) < 0.5 * z * z + d - d * v3
                        + d * ns.log(ns.maximum(v3, 1e-30)))
        z_acc = ns.where(ok & ~done, z, z_acc)
        done = done | ok
    return ns.where(done, z_acc, 0.0)


def log_standard_gamma(a, normal, uniform, open_uniform):
    """log of Gamma(a, 1) draws, a an array of the draws' shape and floating dtype (its
    precision is the computation's); -inf where a == 0, nan where a is negative or nan.
    ``normal()``, ``uniform()`` give draws of a's shape; ``open_uniform()`` uniforms in (0, 1)
    (the boost's U**(1/a), taken as log(U) / a so a tiny a underflows only at the end)."""
    ns = _ns()
    valid = a > 0.0
    a1 = ns.where(valid, a, 1.0)
    boost = a1 < 1.0
    ab = ns.where(boost, a1 + 1.0, a1)
    d = ab - 1.0 / 3.0
    c = 1.0 / ns.sqrt(9.0 * d)
    z = accepted_normal(d, c, normal, uniform)
    log_x = ns.log(d) + 3.0 * ns.log1p(c * z)   # v = 1 + c z > 0 for an accepted z
    log_x = ns.where(boost, log_x + ns.log(open_uniform()) / a1, log_x)
    return ns.where(valid, log_x, ns.where(a == 0.0, -float("inf"), float("nan")))
