"""Helpers for the distributions defined as TransformedDistributions of a base (Weibull,
Pareto, Kumaraswamy, InverseGamma, HalfCauchy, LogisticNormal)."""
from __future__ import annotations

from ..array import api as gp

__all__ = ["HostBuilt", "expand_params"]


def expand_params(old, new, names, batch_shape) -> None:
    """Broadcast ``old``'s Array attributes ``names`` to ``batch_shape`` on ``new`` (a
    TransformedDistribution.expand copy, whose base was expanded already)."""
    for name in names:
        v = old.__dict__.get(name)
        if isinstance(v, gp.Array):
            new.__dict__[name] = gp.broadcast_to(v, tuple(batch_shape))


class HostBuilt:
    """A mixin for the families that build Arrays of their own from their parameters (the
    transforms' exponents and scales): built from numbers alone, they still follow the device
    of the values they meet (``Weibull(1.0, 2.0).log_prob(z)`` for z on any device), as
    Distribution._placed_like does for the others."""

    def _placeless(self) -> bool:
        return not self.__dict__.get("_placed", False) and bool(
            self.__dict__.get("_host_params"))
