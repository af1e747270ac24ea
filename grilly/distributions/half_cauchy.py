"""The half-Cauchy distribution: |X| for X ~ Cauchy(0, scale)."""
from __future__ import annotations

import math

from ..array import api as gp
from . import constraints
from .distribution import Distribution
from .normal import Cauchy
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfCauchy"]


class HalfCauchy(TransformedDistribution):
    """|X| for X ~ Cauchy(0, scale)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args: bool | None = None) -> None:
        self._note_host(scale=scale)
        self._check_host_params_early(validate_args)
        base = Cauchy(0.0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return gp.full_like(self.scale, math.inf)

    @property
    def mode(self):
        return gp.zeros_like(self.scale)

    @property
    def variance(self):
        return gp.full_like(self.scale, math.inf)

    def log_prob(self, value):
        value = self._validate_sample(value)
        lp = self.base_dist.log_prob(value) + math.log(2.0)
        return gp.where(value >= 0, lp, -math.inf)

    def cdf(self, value):
        value = self._validate_sample(value, "cdf")
        return 2.0 * self.base_dist.cdf(value) - 1.0

    def icdf(self, value):
        return self.base_dist.icdf(0.5 * (value + 1.0))

    def entropy(self):
        return self.base_dist.entropy() - math.log(2.0)

    __repr__ = Distribution.__repr__
