"""The negative binomial distribution (torch's: successes before ``total_count`` failures)."""
from __future__ import annotations

from .. import random as _random
from ..array import api as gp
from ..autograd import no_grad
from ..nn import functional as F
from . import constraints
from ._special import lgamma
from .categorical import _ProbsLogits, _one_of
from .distribution import Distribution
from .gamma import standard_gamma
from .utils import broadcast_all

__all__ = ["NegativeBinomial"]


class NegativeBinomial(_ProbsLogits, Distribution):
    """The number of successes of Bernoulli(``probs``) trials before ``total_count``
    failures (``total_count`` a positive real: a gamma-Poisson mixture)."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0.0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer
    _binary = True
    _batch_params = ("total_count", "probs", "logits")

    def __init__(self, total_count, probs=None, logits=None,
                 validate_args: bool | None = None) -> None:
        _one_of("NegativeBinomial", probs, logits)
        self._note_host(total_count=total_count, probs=probs, logits=logits)
        name, p = ("probs", probs) if probs is not None else ("logits", logits)
        self.total_count, param = broadcast_all(total_count, p)
        self.__dict__[name] = param
        super().__init__(self.param_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.total_count * gp.exp(self.logits)

    @property
    def mode(self):
        return gp.maximum(gp.floor((self.total_count - 1.0) * gp.exp(self.logits)), 0.0)

    @property
    def variance(self):
        return self.mean / F.sigmoid(-self.logits)

    def sample(self, sample_shape=()):
        """Draws (in the parameters' dtype): Poisson counts of a Gamma(total_count) rate."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            r = gp.broadcast_to(self.total_count.detach(), shape)
            lg = gp.broadcast_to(self.logits.detach(), shape)
            # Gamma(total_count, rate exp(-logits)); a zero total_count draws 0
            rate = gp.where(r > 0, standard_gamma(gp.where(r > 0, r, 1.0), shape), 0.0) \
                * gp.exp(lg)
            return _random.poisson(rate, shape, dtype=r.dtype)

    def log_prob(self, value):
        value = self._validate_sample(value)
        r, lg = self.total_count, self.logits
        unnorm = r * F.logsigmoid(-lg) + value * F.logsigmoid(lg)
        # lgamma(r + k) - lgamma(1 + k) - lgamma(r), 0 where r + k == 0 (the zero count of a
        # zero total_count); the stand-in 1 keeps lgamma(0) = inf out
        empty = (r + value) == 0
        rs = gp.where(empty, 1.0, r)
        norm = lgamma(rs + value) - lgamma(1.0 + value) - lgamma(rs)
        return unnorm + gp.where(empty, 0.0, norm)

