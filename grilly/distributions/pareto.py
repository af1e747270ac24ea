"""The Pareto (type I) distribution: scale * exp(E) for E ~ Exponential(alpha)."""
from __future__ import annotations

import math

import numpy as np

from ..array import api as gp
from . import constraints
from ._families import HostBuilt, expand_params
from .distribution import Distribution
from .normal import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all

__all__ = ["Pareto"]


class Pareto(HostBuilt, TransformedDistribution):
    """The Pareto distribution with minimum ``scale`` and tail index ``alpha``."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    has_rsample = True

    def __init__(self, scale, alpha, validate_args: bool | None = None) -> None:
        self._note_host(scale=scale, alpha=alpha)
        self._check_host_params_early(validate_args)
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=False)
        super().__init__(base, [ExpTransform(), AffineTransform(0.0, self.scale)],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "Pareto":
        new = super().expand(batch_shape, _instance)
        expand_params(self, new, ("scale", "alpha"), batch_shape)
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def _host_support(self):
        # a scale given as host data bounds host values without a device read
        scale = self.__dict__.get("_host_params", {}).get("scale")
        return None if scale is None else constraints.greater_than_eq(
            np.asarray(scale, dtype=np.float64))

    @property
    def mean(self):
        # inf for alpha <= 1 (as torch), a finite stand-in keeps the gradient there finite
        a = self.alpha
        finite = a > 1.0
        sa = gp.where(finite, a, 2.0)
        return gp.where(finite, sa * self.scale / (sa - 1.0), math.inf)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha
        finite = a > 2.0
        sa = gp.where(finite, a, 3.0)
        v = self.scale * self.scale * sa / ((sa - 1.0) * (sa - 1.0) * (sa - 2.0))
        return gp.where(finite, v, math.inf)

    def entropy(self):
        return gp.log(self.scale / self.alpha) + 1.0 / self.alpha + 1.0

    __repr__ = Distribution.__repr__
