"""The Kumaraswamy distribution on (0, 1): (1 - (1 - U)^(1 / b))^(1 / a), U uniform."""
from __future__ import annotations

import math

from ..array import api as gp
from . import constraints
from ._families import HostBuilt, expand_params
from ._special import digamma, lgamma
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Kumaraswamy"]

_EULER = 0.57721566490153286061


def _moment(a, b, n: float):
    """E[X^n] = b B(1 + n / a, b)."""
    t = 1.0 + n / a
    return b * gp.exp(lgamma(t) + lgamma(b) - lgamma(t + b))


class Kumaraswamy(HostBuilt, TransformedDistribution):
    """The Kumaraswamy distribution with density a b x^(a-1) (1 - x^a)^(b-1) (a =
    concentration1, b = concentration0)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0,
                 validate_args: bool | None = None) -> None:
        self._note_host(concentration1=concentration1, concentration0=concentration0)
        self._check_host_params_early(validate_args)
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        c0 = self.concentration0
        base = Uniform(gp.zeros_like(c0), gp.ones_like(c0), validate_args=False)
        super().__init__(base, [PowerTransform(1.0 / c0), AffineTransform(1.0, -1.0),
                                PowerTransform(1.0 / self.concentration1)],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "Kumaraswamy":
        new = super().expand(batch_shape, _instance)
        expand_params(self, new, ("concentration1", "concentration0"), batch_shape)
        return new

    @property
    def mean(self):
        return _moment(self.concentration1, self.concentration0, 1.0)

    @property
    def mode(self):
        # ((a - 1) / (a b - 1))^(1 / a) where a, b >= 1 (not both 1), nan elsewhere as torch
        # (torch 2.13's formula gives nan everywhere)
        a, b = self.concentration1, self.concentration0
        ok = (a >= 1.0) & (b >= 1.0) & ((a > 1.0) | (b > 1.0))
        ab1 = gp.where(ok, a * b - 1.0, 1.0)
        return gp.where(ok, ((a - 1.0) / ab1) ** (1.0 / a), math.nan)

    @property
    def variance(self):
        m = self.mean
        return _moment(self.concentration1, self.concentration0, 2.0) - m * m

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        h_b = digamma(b + 1.0) + _EULER     # the harmonic number H_b
        return (1.0 - 1.0 / b) + (1.0 - 1.0 / a) * h_b - gp.log(a) - gp.log(b)

    __repr__ = Distribution.__repr__
