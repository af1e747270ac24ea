"""Normal, Laplace and Exponential distributions."""
from __future__ import annotations

import math

from ..array import api as gp
from ..nn import functional as F
from . import constraints
from ._special import erfinv
from .distribution import Distribution
from .utils import broadcast_all, normal_noise, uniform_noise

__all__ = ["Exponential", "Laplace", "Normal"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


class Normal(Distribution):
    """The normal distribution N(loc, scale^2)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _batch_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        self._note_host(loc=loc, scale=scale)
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale * self.scale

    def rsample(self, sample_shape=()):
        eps = normal_noise(self._extended_shape(sample_shape), self.loc)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        value = self._validate_sample(value)
        var = self.scale * self.scale
        d = value - self.loc
        return -(d * d) / (2.0 * var) - gp.log(self.scale) - _LOG_SQRT_2PI

    def cdf(self, value):
        value = self._validate_sample(value, "cdf")
        return 0.5 * (1.0 + F.erf((value - self.loc) / (self.scale * math.sqrt(2.0))))

    def icdf(self, value):
        value = self._validate_sample(value, "icdf")
        return self.loc + self.scale * erfinv(2.0 * value - 1.0) * math.sqrt(2.0)

    def entropy(self):
        return 0.5 + _LOG_SQRT_2PI + gp.log(self.scale)


class Laplace(Distribution):
    """The Laplace distribution with density exp(-|x - loc| / scale) / (2 scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _batch_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        self._note_host(loc=loc, scale=scale)
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2.0 * self.scale * self.scale

    @property
    def stddev(self):
        return math.sqrt(2.0) * self.scale

    def rsample(self, sample_shape=()):
        # u in (-1, 1): the draw's [0, 1) moved off -1 by eps, as torch
        eps = float(gp.finfo(self.loc.dtype).eps)
        u = uniform_noise(self._extended_shape(sample_shape), self.loc) * (2.0 - eps) + (eps - 1.0)
        return self.loc - self.scale * gp.sign(u) * gp.log1p(-gp.abs(u))

    def log_prob(self, value):
        value = self._validate_sample(value)
        return -gp.log(2.0 * self.scale) - gp.abs(value - self.loc) / self.scale

    def cdf(self, value):
        value = self._validate_sample(value, "cdf")
        d = value - self.loc
        return 0.5 - 0.5 * gp.sign(d) * gp.expm1(-gp.abs(d) / self.scale)

    def icdf(self, value):
        value = self._validate_sample(value, "icdf")
        term = value - 0.5
        return self.loc - self.scale * gp.sign(term) * gp.log1p(-2.0 * gp.abs(term))

    def entropy(self):
        return 1.0 + gp.log(2.0 * self.scale)


class Exponential(Distribution):
    """The exponential distribution with density rate * exp(-rate x) on x >= 0."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _batch_params = ("rate",)

    def __init__(self, rate, validate_args: bool | None = None) -> None:
        self._note_host(rate=rate)
        self.rate = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return 1.0 / self.rate

    @property
    def mode(self):
        return gp.zeros_like(self.rate)

    @property
    def stddev(self):
        return 1.0 / self.rate

    @property
    def variance(self):
        return 1.0 / (self.rate * self.rate)

    def rsample(self, sample_shape=()):
        u = uniform_noise(self._extended_shape(sample_shape), self.rate)
        return -gp.log1p(-u) / self.rate

    def log_prob(self, value):
        value = self._validate_sample(value)
        return gp.log(self.rate) - self.rate * value

    def cdf(self, value):
        value = self._validate_sample(value, "cdf")
        return 1.0 - gp.exp(-self.rate * value)

    def icdf(self, value):
        value = self._validate_sample(value, "icdf")
        return -gp.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - gp.log(self.rate)
