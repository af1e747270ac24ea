"""Gamma, Beta, Dirichlet (reparameterized through Marsaglia-Tsang) and Poisson (drawn by
grilly.random.poisson: inversion below rate 10, Hoermann's PTRS above).

Gamma draws: Marsaglia and Tsang's method ("A simple method for generating gamma variables",
2000) run as array ops for a fixed number of rounds (_ROUNDS): every element draws a normal and
a uniform each round and keeps its first accepted proposal. A proposal is accepted with
probability >= 0.95 (concentration >= 1; smaller ones draw Gamma(a + 1) and multiply by
U^(1/a)), so an element is left without one with probability < 0.05^_ROUNDS ~ 1e-13; it then
takes the mean of the boosted variable, d = a - 1/3. The draws follow the gamma law exactly
otherwise. Gradients (rsample) are pathwise through the transform with the accepted normal held
fixed (the reparameterization term of Naesseth et al., 2017, without the small correction for
the acceptance step's dependence on a): close to, not exactly, torch's implicit gradient.
"""
from __future__ import annotations

import math

from .. import random as _random
from ..random import _gamma as _random_gamma
from ..array import api as gp
from ..autograd import no_grad
from . import constraints
from ..special import gammainc
from ._special import digamma, lgamma, xlogy
from .distribution import Distribution
from .utils import broadcast_all, normal_noise, uniform_noise

__all__ = ["Beta", "Chi2", "Dirichlet", "Gamma", "Poisson", "StudentT", "standard_gamma"]

_ROUNDS = _random_gamma.ROUNDS


def standard_gamma(concentration, shape):
    """Gamma(concentration, 1) draws of ``shape`` (concentration broadcast to it)."""
    a = gp.broadcast_to(concentration, tuple(shape))
    boost = a < 1.0
    ab = gp.where(boost, a + 1.0, a)
    d = ab - 1.0 / 3.0
    c = 1.0 / gp.sqrt(9.0 * d)
    with no_grad():
        dd, cc = d.detach() if d.requires_grad else d, c.detach() if c.requires_grad else c
        # grilly.random's Marsaglia-Tsang rounds (the one implementation), drawing from the
        # default generator; the transform below is differentiated with z held fixed
        z_acc = _random_gamma.accepted_normal(dd, cc, lambda: normal_noise(shape, a),
                                              lambda: uniform_noise(shape, a), _ROUNDS)
        u_boost = uniform_noise(shape, a)
    v = 1.0 + c * z_acc
    x = d * (v * v * v)
    # U^(1/a) as exp(log(U) / a): a tiny a underflows to 0, as the law does
    x = gp.where(boost, x * gp.exp(gp.log(u_boost) / gp.where(boost, a, 1.0)), x)
    tiny = float(gp.finfo(x.dtype).smallest_normal)
    return gp.maximum(x, tiny)


def _dirichlet_mode(c):
    """The Dirichlet mode over the last axis of ``c`` (torch's rule at the boundary)."""
    cm1 = gp.maximum(c - 1.0, 0.0)
    mode = cm1 / gp.sum(cm1, axis=-1, keepdims=True)
    # every concentration below 1: the mode is the corner of the largest one (as torch)
    corner = gp.astype(gp.argmax(mode, axis=-1)[..., None] == gp.arange(
        c.shape[-1], device=c.device), c.dtype)
    return gp.where(gp.all(c < 1.0, axis=-1)[..., None], corner, mode)


class Gamma(Distribution):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _batch_params = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args: bool | None = None) -> None:
        self._note_host(concentration=concentration, rate=rate)
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return gp.maximum((self.concentration - 1.0) / self.rate, 0.0)

    @property
    def variance(self):
        return self.concentration / (self.rate * self.rate)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = standard_gamma(self.concentration, shape) / self.rate
        return gp.maximum(x, float(gp.finfo(x.dtype).smallest_normal))

    def log_prob(self, value):
        value = self._validate_sample(value)
        a, b = self.concentration, self.rate
        return xlogy(a, b) + xlogy(a - 1.0, value) - b * value - lgamma(a)

    def cdf(self, value):
        value = self._validate_sample(value, "cdf")
        # the regularized lower incomplete gamma P(a, rate x) (grilly.special's: like torch's,
        # differentiable in the value and the rate, not in the concentration)
        return gammainc(self.concentration, self.rate * gp.maximum(value, 0.0))

    def entropy(self):
        a = self.concentration
        return a - gp.log(self.rate) + lgamma(a) + (1.0 - a) * digamma(a)


class Dirichlet(Distribution):
    """The Dirichlet distribution over the simplex of the last axis of ``concentration``."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _batch_params = ("concentration",)

    def __init__(self, concentration, validate_args: bool | None = None) -> None:
        self._note_host(concentration=concentration)
        self.concentration = broadcast_all(concentration)
        if self.concentration.ndim < 1:
            raise ValueError("Dirichlet: `concentration` parameter must be at least "
                             "one-dimensional.")
        super().__init__(self.concentration.shape[:-1], self.concentration.shape[-1:],
                         validate_args=validate_args)

    @property
    def mean(self):
        c = self.concentration
        return c / gp.sum(c, axis=-1, keepdims=True)

    @property
    def mode(self):
        return _dirichlet_mode(self.concentration)

    @property
    def variance(self):
        c = self.concentration
        a0 = gp.sum(c, axis=-1, keepdims=True)
        return c * (a0 - c) / (a0 * a0 * (a0 + 1.0))

    def rsample(self, sample_shape=()):
        g = standard_gamma(self.concentration, self._extended_shape(sample_shape))
        return g / gp.sum(g, axis=-1, keepdims=True)

    def log_prob(self, value):
        value = self._validate_sample(value)
        c = self.concentration
        return (gp.sum(xlogy(c - 1.0, value), axis=-1) + lgamma(gp.sum(c, axis=-1))
                - gp.sum(lgamma(c), axis=-1))

    def entropy(self):
        c = self.concentration
        k = float(c.shape[-1])
        a0 = gp.sum(c, axis=-1)
        return (gp.sum(lgamma(c), axis=-1) - lgamma(a0) - (k - a0) * digamma(a0)
                - gp.sum((c - 1.0) * digamma(c), axis=-1))


class Beta(Distribution):
    """The beta distribution on [0, 1] (a two-category Dirichlet)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True
    _batch_params = ("concentration1", "concentration0")

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None) -> None:
        self._note_host(concentration1=concentration1, concentration0=concentration0)
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        # the two-category Dirichlet's mode: a concentration below 1 puts it at 0 or 1, where
        # (a - 1) / (a + b - 2) would leave [0, 1] (as torch)
        return _dirichlet_mode(gp.stack([self.concentration1, self.concentration0],
                                        axis=-1))[..., 0]

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        t = a + b
        return a * b / (t * t * (t + 1.0))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = standard_gamma(self.concentration1, shape)
        y = standard_gamma(self.concentration0, shape)
        return x / (x + y)

    def log_prob(self, value):
        value = self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return (xlogy(a - 1.0, value) + xlogy(b - 1.0, 1.0 - value)
                + lgamma(a + b) - lgamma(a) - lgamma(b))

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        t = a + b
        return (lgamma(a) + lgamma(b) - lgamma(t) - (a - 1.0) * digamma(a)
                - (b - 1.0) * digamma(b) + (t - 2.0) * digamma(t))


class Poisson(Distribution):
    """The Poisson distribution with mean ``rate``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _batch_params = ("rate",)

    def __init__(self, rate, validate_args: bool | None = None) -> None:
        self._note_host(rate=rate)
        self.rate = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return gp.floor(self.rate)

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        """Draws (as ``rate``'s dtype) of shape sample_shape + batch_shape."""
        with no_grad():
            return _random.poisson(self.rate, self._extended_shape(sample_shape),
                                   dtype=self.rate.dtype)

    def log_prob(self, value):
        value = self._validate_sample(value)
        return xlogy(value, self.rate) - self.rate - lgamma(value + 1.0)




class Chi2(Gamma):
    """The chi-square distribution with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}
    _batch_params = ("concentration", "rate", "df")

    def __init__(self, df, validate_args: bool | None = None) -> None:
        self._note_host(df=df)
        self.df = broadcast_all(df)
        self.concentration = 0.5 * self.df
        self.rate = gp.full_like(self.df, 0.5)
        Distribution.__init__(self, self.df.shape, validate_args=validate_args)


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale
    ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _batch_params = ("df", "loc", "scale")

    def __init__(self, df, loc=0.0, scale=1.0, validate_args: bool | None = None) -> None:
        self._note_host(df=df, loc=loc, scale=scale)
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.shape, validate_args=validate_args)

    @property
    def mean(self):
        # undefined (nan) for df <= 1, as torch
        return gp.where(self.df > 1.0, self.loc, math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        # df > 2: scale^2 df / (df - 2); 1 < df <= 2: inf; df <= 1: nan (as torch)
        finite = self.scale * self.scale * df / gp.where(df > 2.0, df - 2.0, 1.0)
        undefined = gp.where(df > 1.0, gp.full_like(finite, math.inf), math.nan)
        return gp.where(df > 2.0, finite, undefined)

    def rsample(self, sample_shape=()):
        # X / sqrt(V / df), V ~ Chi2(df) = 2 Gamma(df / 2): pathwise through both draws
        shape = self._extended_shape(sample_shape)
        x = normal_noise(shape, self.df)
        v = 2.0 * standard_gamma(0.5 * self.df, shape)
        return self.loc + self.scale * x * gp.sqrt(self.df / v)

    def log_prob(self, value):
        value = self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        z = (gp.log(self.scale) + 0.5 * gp.log(df) + 0.5 * math.log(math.pi)
             + lgamma(0.5 * df) - lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * gp.log1p(y * y / df) - z

    def entropy(self):
        df = self.df
        lbeta = lgamma(0.5 * df) + math.lgamma(0.5) - lgamma(0.5 * (df + 1.0))
        return (gp.log(self.scale) + 0.5 * (df + 1.0) * (digamma(0.5 * (df + 1.0))
                                                         - digamma(0.5 * df))
                + 0.5 * gp.log(df) + lbeta)
