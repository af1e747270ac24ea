"""MixtureSameFamily: a Categorical mixture over the last batch axis of one distribution."""
from __future__ import annotations

from ..array import api as gp
from ..autograd import no_grad
from ..nn import functional as F
from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """Draw a component k from ``mixture_distribution`` (a Categorical over K), then a value
    from ``component_distribution``'s k-th element along its last batch axis (of size K)."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Categorical, component_distribution: Distribution,
                 validate_args: bool | None = None) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("MixtureSameFamily: mixture_distribution must be a Categorical, "
                             f"got {type(mixture_distribution).__name__}")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("MixtureSameFamily: component_distribution must be a "
                             f"Distribution, got {type(component_distribution).__name__}")
        cbs = component_distribution.batch_shape
        if len(cbs) < 1:
            raise ValueError("MixtureSameFamily: component_distribution needs a batch axis "
                             "for the components, got batch_shape ()")
        mbs = mixture_distribution.batch_shape
        for a, b in zip(reversed(mbs), reversed(cbs[:-1])):
            if a != 1 and b != 1 and a != b:
                raise ValueError(f"MixtureSameFamily: mixture_distribution.batch_shape {mbs} "
                                 "is not compatible with component_distribution.batch_shape"
                                 f"[:-1] {cbs[:-1]}")
        km, kc = mixture_distribution._num_events, cbs[-1]
        if km != kc:
            raise ValueError(f"MixtureSameFamily: the mixture has {km} components but "
                             f"component_distribution.batch_shape[-1] is {kc}")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cbs[:-1], component_distribution.event_shape,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "MixtureSameFamily":
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        batch_shape = tuple(batch_shape)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._batch_shape = batch_shape
        return new

    @property
    def mixture_distribution(self) -> Categorical:
        """The Categorical over the components."""
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        """The components, along the last batch axis."""
        return self._component_distribution

    def _like(self):
        return self._component_distribution._like()

    @constraints.dependent_property
    def support(self):
        return self._component_distribution.support

    def _pad(self, x):
        """``x`` with an axis for the components before the event axes."""
        return gp.expand_dims(x, axis=-1 - self._event_ndims)

    def _weights(self):
        """The mixture probabilities, with one axis per event axis appended."""
        p = self._mixture_distribution.probs
        return gp.reshape(p, tuple(p.shape) + (1,) * self._event_ndims)

    @property
    def mean(self):
        axis = -1 - self._event_ndims
        return gp.sum(self._weights() * self._component_distribution.mean, axis=axis)

    @property
    def variance(self):
        # the law of total variance: E[Var(X | k)] + Var(E[X | k])
        axis = -1 - self._event_ndims
        w, comp = self._weights(), self._component_distribution
        d = comp.mean - self._pad(self.mean)
        return gp.sum(w * comp.variance, axis=axis) + gp.sum(w * d * d, axis=axis)

    def cdf(self, value):
        value = self._validate_sample(value, "cdf")
        cdf_x = self._component_distribution.cdf(self._pad(value))
        return gp.sum(cdf_x * self._mixture_distribution.probs, axis=-1)

    def log_prob(self, value):
        value = self._validate_sample(value)
        lp = self._component_distribution.log_prob(self._pad(value))   # (..., K)
        log_w = F.log_softmax(self._mixture_distribution.logits, dim=-1)
        return (lp + log_w).logsumexp(dim=-1)

    def sample(self, sample_shape=()):
        with no_grad():
            comp = self._component_distribution.sample(sample_shape)  # S + B + (K,) + E
            ev = self._event_shape
            lead = tuple(comp.shape[:comp.ndim - 1 - len(ev)])          # S + B
            # the component index of each draw (the mixture's batch broadcast to B, from the
            # right)
            k = self._mixture_distribution.sample(sample_shape)        # S + mixture batch
            ns = len(lead) - len(self._batch_shape)
            mbs = tuple(k.shape[ns:])
            k = gp.reshape(k, lead[:ns] + (1,) * (len(self._batch_shape) - len(mbs)) + mbs)
            k = gp.broadcast_to(k, lead)
            idx = gp.broadcast_to(gp.reshape(k, lead + (1,) * (1 + len(ev))),
                                  lead + (1,) + ev)
            return gp.squeeze(gp.take_along_axis(comp, idx, axis=-1 - len(ev)),
                              axis=-1 - len(ev))

    def __repr__(self) -> str:
        return (f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n  "
                f"{self._component_distribution!r})")
