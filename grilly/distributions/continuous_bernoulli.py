"""The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, 2019)."""
from __future__ import annotations

import math

from ..array import api as gp
from ..autograd import no_grad
from ..nn import functional as F
from . import constraints
from .categorical import _ProbsLogits, _one_of
from .distribution import Distribution
from .utils import broadcast_all, clamp_probs, logits_to_probs, uniform_noise

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(_ProbsLogits, Distribution):
    """The continuous Bernoulli distribution, density C(p) p^x (1 - p)^(1 - x) on [0, 1]; near
    p = 1/2 (inside ``lims``) the closed forms are replaced by their Taylor expansions, as
    torch."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _binary = True
    _batch_params = ("probs", "logits")

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501),
                 validate_args: bool | None = None) -> None:
        _one_of("ContinuousBernoulli", probs, logits)
        self._note_host(probs=probs, logits=logits)
        if probs is not None:
            # checked before the clamp below (the clamped probs would always pass)
            self._check_host_params_early(validate_args)
            self.__dict__["probs"] = clamp_probs(broadcast_all(probs))
        else:
            self.__dict__["logits"] = broadcast_all(logits)
        lo, hi = (float(v) for v in lims)
        self._lims = (lo, hi)
        super().__init__(self.param_shape, validate_args=validate_args)

    @property
    def probs(self):
        p = self.__dict__.get("probs")
        if p is None:
            p = self.__dict__["probs"] = clamp_probs(logits_to_probs(self.logits, True))
        return p

    def _stable(self):
        p = self.probs
        return (p <= self._lims[0]) | (p > self._lims[1])

    def _cut_probs(self):
        """probs where the closed forms are used, a harmless stand-in (lims[0]) elsewhere."""
        return gp.where(self._stable(), self.probs, self._lims[0])

    def _log_norm(self):
        """log C(p), C(p) = 2 atanh(1 - 2p) / (1 - 2p)."""
        p = self._cut_probs()
        below = p <= 0.5
        lo = gp.where(below, p, 0.0)
        hi = gp.where(p >= 0.5, p, 1.0)
        closed = gp.log(gp.abs(gp.log1p(-p) - gp.log(p))) - gp.where(
            below, gp.log1p(-2.0 * lo), gp.log(2.0 * hi - 1.0))
        x = self.probs - 0.5
        x = x * x
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return gp.where(self._stable(), closed, taylor)

    @property
    def mean(self):
        p = self._cut_probs()
        closed = p / (2.0 * p - 1.0) + 1.0 / (gp.log1p(-p) - gp.log(p))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x * x) * x
        return gp.where(self._stable(), closed, taylor)

    @property
    def variance(self):
        p = self._cut_probs()
        t = 1.0 - 2.0 * p
        lr = gp.log1p(-p) - gp.log(p)
        closed = p * (p - 1.0) / (t * t) + 1.0 / (lr * lr)
        x = self.probs - 0.5
        x = x * x
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return gp.where(self._stable(), closed, taylor)

    def rsample(self, sample_shape=()):
        u = uniform_noise(self._extended_shape(sample_shape), self.probs)
        return self._icdf(u)

    def sample(self, sample_shape=()):
        with no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value):
        value = self._validate_sample(value)
        lg = self.logits
        # -BCE-with-logits(logits, value) = value * logits - softplus(logits)
        return value * lg - F.softplus(lg) + self._log_norm()

    def cdf(self, value):
        value = self._validate_sample(value, "cdf")
        p = self._cut_probs()
        closed = (p ** value * (1.0 - p) ** (1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inner = gp.where(self._stable(), closed, value)
        return gp.where(value <= 0.0, 0.0, gp.where(value >= 1.0, 1.0, inner))

    def _icdf(self, value):
        p = self._cut_probs()
        closed = ((gp.log1p(-p + value * (2.0 * p - 1.0)) - gp.log1p(-p))
                  / (gp.log(p) - gp.log1p(-p)))
        return gp.where(self._stable(), closed, value)

    def icdf(self, value):
        value = self._validate_sample(value, "icdf")
        return self._icdf(value)

    def entropy(self):
        lp0, lp1 = gp.log1p(-self.probs), gp.log(self.probs)
        return self.mean * (lp0 - lp1) - self._log_norm() - lp0
