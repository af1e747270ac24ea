"""Normal, Laplace, Exponential, Cauchy, Gumbel and HalfNormal distributions."""
from __future__ import annotations

import math

from .. import random as _random
from ..array import api as gp
from ..nn import functional as F
from . import constraints
from ..special import erfinv, ndtri
from .distribution import Distribution
from .utils import broadcast_all, noise, normal_noise, uniform_noise

__all__ = ["Cauchy", "Exponential", "Gumbel", "HalfNormal", "Laplace", "Normal"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_EULER = 0.57721566490153286061


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
        # ndtri, not erfinv(2p - 1): 2p - 1 rounds away the tail's digits below p ~ 1e-8
        return self.loc + self.scale * ndtri(value)

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


class Cauchy(Distribution):
    """The Cauchy distribution with median ``loc`` and half width at half maximum ``scale``."""

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
        return gp.full_like(self.loc, math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return gp.full_like(self.loc, math.inf)

    def rsample(self, sample_shape=()):
        # tan(pi (u - 1/2)) with u in the open interval (0, 1): grilly.random's draw
        eps = noise(_random.standard_cauchy, self._extended_shape(sample_shape), self.loc)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        value = self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - gp.log(self.scale) - gp.log1p(z * z)

    def cdf(self, value):
        value = self._validate_sample(value, "cdf")
        return gp.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        value = self._validate_sample(value, "icdf")
        return gp.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4.0 * math.pi) + gp.log(self.scale)


class Gumbel(Distribution):
    """The Gumbel (type I extreme value) distribution: cdf exp(-exp(-(x - loc) / scale))."""

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
        return self.loc + self.scale * _EULER

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6.0)) * self.scale

    @property
    def variance(self):
        return (math.pi * math.pi / 6.0) * self.scale * self.scale

    def rsample(self, sample_shape=()):
        # -log(Exp(1)) from grilly.random (its uniform kept off 0, so the draw is finite)
        g = noise(lambda s, **kw: _random.gumbel(0.0, 1.0, s, **kw),
                  self._extended_shape(sample_shape), self.loc)
        return self.loc + self.scale * g

    def log_prob(self, value):
        value = self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - gp.exp(y)) - gp.log(self.scale)

    def cdf(self, value):
        value = self._validate_sample(value, "cdf")
        return gp.exp(-gp.exp((self.loc - value) / self.scale))

    def icdf(self, value):
        value = self._validate_sample(value, "icdf")
        return self.loc - self.scale * gp.log(-gp.log(value))

    def entropy(self):
        return gp.log(self.scale) + (1.0 + _EULER)


class HalfNormal(Distribution):
    """|X| for X ~ Normal(0, scale^2)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _batch_params = ("scale",)

    def __init__(self, scale, validate_args: bool | None = None) -> None:
        self._note_host(scale=scale)
        self.scale = broadcast_all(scale)
        super().__init__(self.scale.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * math.sqrt(2.0 / math.pi)

    @property
    def mode(self):
        return gp.zeros_like(self.scale)

    @property
    def variance(self):
        return self.scale * self.scale * (1.0 - 2.0 / math.pi)

    def rsample(self, sample_shape=()):
        return gp.abs(normal_noise(self._extended_shape(sample_shape), self.scale)) * self.scale

    def log_prob(self, value):
        value = self._validate_sample(value)
        lp = (-(value * value) / (2.0 * self.scale * self.scale) - gp.log(self.scale)
              - _LOG_SQRT_2PI + math.log(2.0))
        return gp.where(value >= 0, lp, -math.inf)

    def cdf(self, value):
        value = self._validate_sample(value, "cdf")
        return F.erf(value / (self.scale * math.sqrt(2.0)))

    def icdf(self, value):
        value = self._validate_sample(value, "icdf")
        return self.scale * erfinv(value) * math.sqrt(2.0)

    def entropy(self):
        return 0.5 * math.log(0.5 * math.pi) + 0.5 + gp.log(self.scale)
