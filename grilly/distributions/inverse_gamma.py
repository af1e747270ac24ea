"""The inverse gamma distribution: 1 / X for X ~ Gamma(concentration, rate)."""
from __future__ import annotations

import math

from ..array import api as gp
from . import constraints
from ._special import digamma, lgamma
from .distribution import Distribution
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """1 / X for X ~ Gamma(concentration, rate) (``rate`` is the scale of 1 / X)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args: bool | None = None) -> None:
        self._note_host(concentration=concentration, rate=rate)
        self._check_host_params_early(validate_args)
        base = Gamma(concentration, rate, validate_args=False)
        super().__init__(base, PowerTransform(-1.0), validate_args=validate_args)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        a = self.concentration
        finite = a > 1.0
        return gp.where(finite, self.rate / gp.where(finite, a - 1.0, 1.0), math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1.0)

    @property
    def variance(self):
        a = self.concentration
        finite = a > 2.0
        am1 = gp.where(finite, a - 1.0, 1.0)
        v = self.rate * self.rate / (am1 * am1 * gp.where(finite, a - 2.0, 1.0))
        return gp.where(finite, v, math.inf)

    def entropy(self):
        a = self.concentration
        return a + gp.log(self.rate) + lgamma(a) - (1.0 + a) * digamma(a)

    __repr__ = Distribution.__repr__
