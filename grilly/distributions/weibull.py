"""The Weibull distribution: scale * E^(1 / concentration) for E ~ Exponential(1)."""
from __future__ import annotations

from ..array import api as gp
from . import constraints
from ._families import HostBuilt, expand_params
from ._special import lgamma
from .distribution import Distribution
from .normal import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all

__all__ = ["Weibull"]

_EULER = 0.57721566490153286061


class Weibull(HostBuilt, TransformedDistribution):
    """The Weibull distribution with ``scale`` and shape ``concentration``."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, scale, concentration, validate_args: bool | None = None) -> None:
        self._note_host(scale=scale, concentration=concentration)
        self._check_host_params_early(validate_args)
        self.scale, self.concentration = broadcast_all(scale, concentration)
        base = Exponential(gp.ones_like(self.scale), validate_args=False)
        super().__init__(base, [PowerTransform(1.0 / self.concentration),
                                AffineTransform(0.0, self.scale)], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "Weibull":
        new = super().expand(batch_shape, _instance)
        expand_params(self, new, ("scale", "concentration"), batch_shape)
        return new

    @property
    def mean(self):
        return self.scale * gp.exp(lgamma(1.0 + 1.0 / self.concentration))

    @property
    def mode(self):
        # 0 below concentration 1 would be the density's sup; torch gives nan there
        k = self.concentration
        return self.scale * ((k - 1.0) / k) ** (1.0 / k)

    @property
    def variance(self):
        k = self.concentration
        g1 = gp.exp(2.0 * lgamma(1.0 + 1.0 / k))
        return self.scale * self.scale * (gp.exp(lgamma(1.0 + 2.0 / k)) - g1)

    def entropy(self):
        k = self.concentration
        return _EULER * (1.0 - 1.0 / k) + gp.log(self.scale / k) + 1.0

    __repr__ = Distribution.__repr__
