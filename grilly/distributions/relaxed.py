"""Relaxed (Concrete / Gumbel-softmax) Bernoulli and one-hot categorical distributions
(Maddison et al., 2017; Jang et al., 2017), as torch.distributions."""
from __future__ import annotations

import math

from ..array import api as gp
from ..nn import functional as F
from . import constraints
from ._special import lgamma
from .categorical import _detach, _one_of, _OverCategories, _ProbsLogits
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform
from .utils import broadcast_all, clamp_probs, uniform_noise

__all__ = ["ExpRelaxedCategorical", "LogitRelaxedBernoulli", "RelaxedBernoulli",
           "RelaxedOneHotCategorical"]


def _log(t):
    return gp.log(t) if isinstance(t, gp.Array) else math.log(t)


class LogitRelaxedBernoulli(_ProbsLogits, Distribution):
    """The logit of a RelaxedBernoulli draw: (logits + Logistic noise) / temperature."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True
    _binary = True
    _batch_params = ("probs", "logits")

    def __init__(self, temperature, probs=None, logits=None,
                 validate_args: bool | None = None) -> None:
        _one_of(type(self).__name__, probs, logits)
        self._note_host(probs=probs, logits=logits)
        self.temperature = temperature
        if probs is not None:
            self.__dict__["probs"] = broadcast_all(probs)
        else:
            self.__dict__["logits"] = broadcast_all(logits)
        super().__init__(self.param_shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        lg = self.logits
        u = clamp_probs(uniform_noise(shape, lg))
        return (gp.log(u) - gp.log1p(-u) + lg) / self.temperature

    def log_prob(self, value):
        value = self._validate_sample(value)
        diff = self.logits - value * self.temperature
        return _log(self.temperature) + diff - 2.0 * F.softplus(diff)


class _Relaxed(TransformedDistribution):
    """A relaxed distribution as a transform of its base (LogitRelaxedBernoulli,
    ExpRelaxedCategorical), whose temperature and parameters it shows."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def probs(self):
        return self.base_dist.probs

    @property
    def logits(self):
        return self.base_dist.logits


class RelaxedBernoulli(_Relaxed):
    """A draw in (0, 1) that approaches Bernoulli(probs) as ``temperature`` goes to 0:
    sigmoid of a LogitRelaxedBernoulli."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None,
                 validate_args: bool | None = None) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def __repr__(self) -> str:
        return repr(self.base_dist).replace("LogitRelaxedBernoulli", "RelaxedBernoulli", 1)


class ExpRelaxedCategorical(_OverCategories):
    """The log of a RelaxedOneHotCategorical draw: log_softmax((logits + Gumbel noise) /
    temperature) over the last axis."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None,
                 validate_args: bool | None = None) -> None:
        self.temperature = temperature
        self._hold(type(self).__name__, probs, logits, validate_args)

    def _like(self):
        return self._categorical.logits

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        lg = self.logits
        u = clamp_probs(uniform_noise(shape, _detach(lg)))
        scores = (lg - gp.log(-gp.log(u))) / self.temperature
        return F.log_softmax(scores, dim=-1)

    def log_prob(self, value):
        value = self._validate_sample(value)
        k = self._categorical._num_events
        t = self.temperature
        log_scale = math.lgamma(k) + (k - 1) * _log(t) if not isinstance(t, gp.Array) else \
            lgamma(gp.full_like(t, float(k))) + (k - 1) * gp.log(t)
        score = self.logits - value * t
        score = gp.sum(F.log_softmax(score, dim=-1), axis=-1)
        return score + log_scale


class RelaxedOneHotCategorical(_Relaxed):
    """A point of the simplex that approaches a one-hot Categorical(probs) draw as
    ``temperature`` goes to 0 (the Gumbel-softmax): exp of an ExpRelaxedCategorical."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None,
                 validate_args: bool | None = None) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def __repr__(self) -> str:
        return "RelaxedOneHotCategorical()"
