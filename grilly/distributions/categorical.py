"""Bernoulli, Categorical, OneHotCategorical(StraightThrough), Geometric, Binomial and
Multinomial (each from probs or logits)."""
from __future__ import annotations

import math

import numpy as np

from .. import random as _random
from ..array import api as gp
from ..nn import functional as F
from . import constraints
from ._special import lgamma
from .distribution import Distribution
from .utils import broadcast_all, logits_to_probs, probs_to_logits, uniform_noise

__all__ = ["Bernoulli", "Binomial", "Categorical", "Geometric", "Multinomial",
           "OneHotCategorical", "OneHotCategoricalStraightThrough"]


def _one_of(name: str, probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: either `probs` or `logits` must be specified, but not both.")


class _ProbsLogits:
    """``probs`` and ``logits`` computed from whichever was given, on first use."""

    @property
    def probs(self):
        p = self.__dict__.get("probs")
        if p is None:
            p = self.__dict__["probs"] = logits_to_probs(self.logits, self._binary)
        return p

    @property
    def logits(self):
        lg = self.__dict__.get("logits")
        if lg is None:
            lg = self.__dict__["logits"] = probs_to_logits(self.probs, self._binary)
        return lg

    @property
    def param_shape(self) -> tuple:
        """The shape of probs/logits."""
        p = self.__dict__.get("probs")
        return tuple((p if p is not None else self.__dict__["logits"]).shape)


class Bernoulli(_ProbsLogits, Distribution):
    """1 with probability ``probs`` (or sigmoid(``logits``)), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _binary = True
    _batch_params = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        _one_of("Bernoulli", probs, logits)
        self._note_host(probs=probs, logits=logits)
        if probs is not None:
            self.__dict__["probs"] = broadcast_all(probs)
        else:
            self.__dict__["logits"] = broadcast_all(logits)
        super().__init__(self.param_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        p = self.probs
        # NaN at p = 1/2, where both values are modes (as torch)
        return gp.where(p == 0.5, math.nan, gp.astype(p > 0.5, p.dtype))

    @property
    def variance(self):
        return self.probs * (1.0 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        p = gp.broadcast_to(_detach(self.probs), shape)
        return gp.astype(uniform_noise(shape, p) < p, p.dtype)

    def log_prob(self, value):
        value = self._validate_sample(value)
        logits, value = gp.broadcast_arrays(self.logits, gp.astype(value, self.logits.dtype))
        return -_bce_logits(logits, value)

    def entropy(self):
        return _bce_logits(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True):
        p = self.__dict__.get("probs", self.__dict__.get("logits"))
        values = gp.reshape(gp.asarray([0.0, 1.0], dtype=p.dtype, device=p.device),
                            (2,) + (1,) * len(self._batch_shape))
        return gp.broadcast_to(values, (2,) + self._batch_shape) if expand else values


def _detach(x):
    return x.detach() if x.requires_grad else x


def _bce_logits(logits, target):
    """binary_cross_entropy_with_logits without reduction."""
    return gp.maximum(logits, 0.0) - logits * target + gp.log1p(gp.exp(-gp.abs(logits)))


class Categorical(_ProbsLogits, Distribution):
    """One of K categories (the last axis of ``probs``/``logits``), as an integer index."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(
        constraints.real, 1)}
    has_enumerate_support = True
    _binary = False
    _batch_params = ("probs", "logits")
    _integer_values = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        name = type(self).__name__
        _one_of(name, probs, logits)
        self._note_host(probs=probs, logits=logits)
        param = broadcast_all(probs if probs is not None else logits)
        if param.ndim < 1:
            raise ValueError(f"{name}: `{'probs' if probs is not None else 'logits'}` parameter "
                             "must be at least one-dimensional.")
        if probs is not None:
            self.__dict__["probs"] = param / gp.sum(param, axis=-1, keepdims=True)
        else:
            self.__dict__["logits"] = F.log_softmax(param, dim=-1)
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)

    def _check_host_params(self) -> None:
        host = self.__dict__.get("_host_params", {})
        if "probs" in host:   # torch normalizes probs: non-negative and finite is what counts
            p = np.asarray(host["probs"], dtype=np.float64)
            if not (np.all(p >= 0) and np.all(np.isfinite(p))):
                raise ValueError(f"{type(self).__name__}: expected parameter probs to be "
                                 f"non-negative and finite, but found invalid values:\n{p}")

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return gp.full(self._batch_shape, math.nan, dtype=self.probs.dtype,
                       device=self.probs.device)

    @property
    def mode(self):
        return gp.argmax(self.probs, axis=-1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        p = _detach(self.probs)
        cdf = gp.cumulative_sum(p, axis=-1)
        # the index is the number of categories whose cdf lies at or below u (u scaled by the
        # total, so rounding in the cumulative sum never yields an index past the last)
        u = uniform_noise(shape + (1,), p) * cdf[..., -1:]
        idx = gp.sum(gp.astype(cdf[..., :-1] <= u, gp.int64), axis=-1)
        return idx

    def log_prob(self, value):
        value = self._validate_sample(value)
        v = gp.astype(value, gp.int64)[..., None]
        logits = self.logits
        shape = gp.broadcast_shapes(tuple(v.shape), tuple(logits.shape[:-1]) + (1,))
        v = gp.broadcast_to(v, shape)
        logits = gp.broadcast_to(logits, shape[:-1] + (self._num_events,))
        return gp.take_along_axis(logits, v, axis=-1)[..., 0]

    def entropy(self):
        lg = gp.maximum(self.logits, float(gp.finfo(self.logits.dtype).min))
        return -gp.sum(lg * self.probs, axis=-1)

    def enumerate_support(self, expand: bool = True):
        dev = self.__dict__.get("probs", self.__dict__.get("logits")).device
        values = gp.reshape(gp.arange(self._num_events, dtype=gp.int64, device=dev),
                            (-1,) + (1,) * len(self._batch_shape))
        return gp.broadcast_to(values, (self._num_events,) + self._batch_shape) if expand \
            else values


class _OverCategories(Distribution):
    """A distribution over the K categories of a Categorical it holds (OneHotCategorical,
    Multinomial, relaxed.ExpRelaxedCategorical): its parameters, event shape (K,)."""

    def _hold(self, name: str, probs, logits, validate_args) -> None:
        """Hold Categorical(probs, logits) and take its batch shape (``name``: for errors)."""
        _one_of(name, probs, logits)
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        Distribution.__init__(self, self._categorical.batch_shape,
                              self._categorical.param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "_OverCategories":
        new = object.__new__(type(self))   # a subclass (StraightThrough) stays one
        new.__dict__.update(self.__dict__)
        new._categorical = self._categorical.expand(batch_shape)
        new._batch_shape = tuple(batch_shape)
        return new

    def _like(self):
        return self._categorical.probs

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple:
        return self._categorical.param_shape


class OneHotCategorical(_OverCategories):
    """Categorical draws as one-hot vectors (event shape (K,))."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        self._hold("OneHotCategorical", probs, logits, validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        p = self.probs
        return gp.astype(F._one_hot(gp.argmax(p, axis=-1), p.shape[-1]), p.dtype)   # in range

    @property
    def variance(self):
        return self.probs * (1.0 - self.probs)

    def sample(self, sample_shape=()):
        idx = self._categorical.sample(sample_shape)
        return gp.astype(F._one_hot(idx, self._categorical._num_events), self.probs.dtype)

    def log_prob(self, value):
        value = self._validate_sample(value)
        return self._categorical.log_prob(gp.argmax(value, axis=-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True):
        n = self._event_shape[0]
        p = self.probs
        values = gp.reshape(gp.eye(n, dtype=p.dtype, device=p.device),
                            (n,) + (1,) * len(self._batch_shape) + (n,))
        return gp.broadcast_to(values, (n,) + self._batch_shape + (n,)) if expand else values

    def __repr__(self) -> str:
        return repr(self._categorical).replace("Categorical", "OneHotCategorical", 1)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` is the one-hot draw with the straight-through
    gradient of ``probs`` (Bengio et al., 2013): forward the draw, backward d probs."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        s = self.sample(sample_shape)
        p = self.probs
        return s + (p - _detach(p))


class Geometric(_ProbsLogits, Distribution):
    """The number of failures before the first success of Bernoulli(``probs``) trials."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer
    _binary = True
    _batch_params = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        _one_of("Geometric", probs, logits)
        self._note_host(probs=probs, logits=logits)
        if probs is not None:
            self.__dict__["probs"] = broadcast_all(probs)
        else:
            self.__dict__["logits"] = broadcast_all(logits)
        super().__init__(self.param_shape, validate_args=validate_args)

    def _check_host_params(self) -> None:
        super()._check_host_params()
        host = self.__dict__.get("_host_params", {})
        if "probs" in host and not np.all(np.asarray(host["probs"], dtype=np.float64) > 0):
            raise ValueError("Geometric: expected parameter probs to be positive, but found "
                             f"invalid values:\n{np.asarray(host['probs'])}")

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return gp.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        p = gp.broadcast_to(_detach(self.probs), shape)
        # u in [tiny, 1): log(u) finite; floor(log u / log(1 - p)) counts the failures
        u = gp.maximum(uniform_noise(shape, p), float(gp.finfo(p.dtype).smallest_normal))
        return gp.floor(gp.log(u) / gp.log1p(-p))

    def log_prob(self, value):
        value = self._validate_sample(value)
        value, p = gp.broadcast_arrays(value, self.probs)
        # p = 1 and no failure: probability 1 (log1p(-1) = -inf times 0 would be nan)
        certain = (p == 1.0) & (value == 0)
        return value * gp.log1p(-gp.where(certain, 0.0, p)) + gp.log(p)

    def entropy(self):
        return _bce_logits(self.logits, self.probs) / self.probs


class Binomial(_ProbsLogits, Distribution):
    """The number of successes in ``total_count`` Bernoulli(``probs``) trials."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True
    _binary = True
    _batch_params = ("total_count", "probs", "logits")

    def __init__(self, total_count=1, probs=None, logits=None,
                 validate_args: bool | None = None) -> None:
        _one_of("Binomial", probs, logits)
        self._note_host(total_count=total_count, probs=probs, logits=logits)
        param = probs if probs is not None else logits
        n, param = broadcast_all(total_count, param)
        self.total_count = n
        self.__dict__["probs" if probs is not None else "logits"] = param
        super().__init__(self.param_shape, validate_args=validate_args)

    def _count(self):
        """total_count as one host number where it was given as host data with one value,
        else None (an Array's value is not read back)."""
        n = self.__dict__.get("_host_params", {}).get("total_count")
        if n is None:
            return None
        n = np.asarray(n, dtype=np.float64)
        # one count for the whole batch (a list of equal counts too), as torch's entropy needs
        return int(n.flat[0]) if n.size and np.all(n == n.flat[0]) else None

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        n = self._count()
        return constraints.integer_interval(0, n if n is not None else self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        n = self.total_count
        return gp.minimum(gp.floor((n + 1.0) * self.probs), n)

    @property
    def variance(self):
        return self.total_count * self.probs * (1.0 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        p = _detach(self.probs)
        # grilly.random's binomial (inversion / BTRS in float64), counts in probs' dtype
        k = _random.binomial(gp.broadcast_to(_detach(self.total_count), shape),
                             gp.broadcast_to(p, shape))
        return gp.astype(k, p.dtype)

    def log_prob(self, value):
        value = self._validate_sample(value)
        n, lg = self.total_count, self.logits
        # k logit - n log(1 + e^logit), written without overflow for either sign of logit
        norm = n * (gp.maximum(lg, 0.0) + gp.log1p(gp.exp(-gp.abs(lg))))
        return (value * lg - norm + lgamma(n + 1.0) - lgamma(value + 1.0)
                - lgamma(n - value + 1.0))

    def enumerate_support(self, expand: bool = True):
        n = self._count()
        if n is None:
            raise NotImplementedError("Binomial.enumerate_support: total_count must be one "
                                      "number (an Array total_count would have to be read "
                                      "back from the device)")
        p = self.__dict__.get("probs", self.__dict__.get("logits"))
        values = gp.reshape(gp.arange(n + 1, dtype=p.dtype, device=p.device),
                            (-1,) + (1,) * len(self._batch_shape))
        return gp.broadcast_to(values, (n + 1,) + self._batch_shape) if expand else values

    def entropy(self):
        if self._count() is None:
            raise NotImplementedError("Binomial.entropy: total_count must be one number (an "
                                      "Array total_count would have to be read back)")
        support = self.enumerate_support(expand=False)
        lp = self.log_prob(support)
        return -gp.sum(gp.exp(lp) * lp, axis=0)


class Multinomial(_OverCategories):
    """Counts of ``total_count`` draws over the categories of ``probs``/``logits``' last axis
    (event shape (K,))."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs=None, logits=None,
                 validate_args: bool | None = None) -> None:
        if isinstance(total_count, bool) or not isinstance(total_count, int):
            raise NotImplementedError("Multinomial: total_count must be an int (an "
                                      "inhomogeneous total_count is not supported, as torch)")
        if total_count < 0:
            raise ValueError(f"Multinomial: total_count must be >= 0, got {total_count}")
        self.total_count = total_count
        self._hold("Multinomial", probs, logits, validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * float(self.total_count)

    @property
    def variance(self):
        return float(self.total_count) * self.probs * (1.0 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        p = gp.broadcast_to(_detach(self.probs), shape)
        # grilly.random's multinomial: one binomial per category over the trials left
        return gp.astype(_random.multinomial(self.total_count, p), p.dtype)

    def log_prob(self, value):
        value = self._validate_sample(value)
        value, logits = gp.broadcast_arrays(value, self.logits)
        # a zero count of an impossible category adds 0, not 0 * -inf
        powers = gp.where(value == 0, 0.0, logits * value)
        return (lgamma(gp.sum(value, axis=-1) + 1.0) - gp.sum(lgamma(value + 1.0), axis=-1)
                + gp.sum(powers, axis=-1))

    def entropy(self):
        n = float(self.total_count)
        p = self.probs
        # n H(categorical) - log n! + sum_i E[log X_i!], X_i ~ Binomial(n, p_i)
        term1 = n * self._categorical.entropy() - math.lgamma(n + 1.0)
        if self.total_count == 0:
            return term1
        k = gp.reshape(gp.arange(1, self.total_count + 1, dtype=p.dtype, device=p.device),
                       (-1,) + (1,) * p.ndim)
        pmf = gp.exp(Binomial(n, probs=p, validate_args=False).log_prob(k))
        weights = lgamma(k + 1.0)
        return term1 + gp.sum(pmf * weights, axis=(0, -1))

    def __repr__(self) -> str:
        return repr(self._categorical).replace("Categorical", "Multinomial", 1)
