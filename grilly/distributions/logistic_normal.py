"""The logistic-normal distribution: StickBreakingTransform of a normal, on the simplex."""
from __future__ import annotations

from . import constraints
from .distribution import Distribution
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """The stick-breaking image of Normal(loc, scale) over the last axis: a point of the
    simplex with one entry more than ``loc``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        self._note_host(loc=loc, scale=scale)
        self._check_host_params_early(validate_args)
        base = Normal(loc, scale, validate_args=False)
        if not base.batch_shape:   # a scalar: one stick break, a 2-entry simplex (as torch)
            base = base.expand((1,))
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    __repr__ = Distribution.__repr__
