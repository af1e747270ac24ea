"""TransformedDistribution and LogNormal."""
from __future__ import annotations

from ..array import api as gp
from ..autograd import no_grad
from . import constraints
from .distribution import Distribution, _arrays
from .normal import Normal
from .transforms import ComposeTransform, ExpTransform, Transform
from .utils import sum_rightmost

__all__ = ["LogNormal", "TransformedDistribution"]


class TransformedDistribution(Distribution):
    """The law of ``transforms[-1](...transforms[0](x))`` for x from ``base_distribution``
    (element-wise transforms: event_dim 0, or an AffineTransform's event_dim)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms,
                 validate_args: bool | None = None) -> None:
        if isinstance(transforms, Transform):
            transforms = [transforms]
        transforms = list(transforms)
        for t in transforms:
            if not isinstance(t, Transform):
                raise ValueError("TransformedDistribution: transforms must be a Transform or a "
                                 f"list of Transforms, got {type(t).__name__}")
        base_ndim = len(base_distribution.batch_shape + base_distribution.event_shape)
        domain, codomain = ComposeTransform._end_constraints(transforms) if transforms else \
            (base_distribution.support, base_distribution.support)
        if transforms and domain.event_dim > base_ndim:
            raise ValueError(f"TransformedDistribution: the transforms act on events of "
                             f"{domain.event_dim} axes, more than the base distribution's "
                             f"{base_ndim}")
        # a base built from numbers alone joins the device of the transforms' Arrays (as
        # torch's CPU scalars join a CUDA tensor)
        arr = next((a for t in transforms for a in _arrays(t)), None)
        if arr is not None:
            base_distribution = base_distribution._placed_like(arr)
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        # the transforms' parameters broadcast with the base's shape (an AffineTransform with a
        # (2,) scale on Normal(0., 1.) makes a batch of 2): the base is expanded to it, as torch
        shape = base_shape
        for t in transforms:
            shape = t.forward_shape(shape)
        expanded = shape
        for t in reversed(transforms):
            expanded = t.inverse_shape(expanded)
        if expanded != base_shape:
            ev = len(base_distribution.event_shape)
            base_distribution = base_distribution.expand(expanded[:len(expanded) - ev])
        self.base_dist = base_distribution
        self.transforms = transforms
        base_ev = len(base_distribution.event_shape)
        # the event axes: the transforms' (a coupling or reshaping transform's), or the base's
        # moved by the change the transforms make in event axes (as torch)
        event_dim = max(codomain.event_dim, base_ev + codomain.event_dim - domain.event_dim) \
            if transforms else base_ev
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "TransformedDistribution":
        new = object.__new__(type(self)) if _instance is None else _instance
        new.__dict__.update(self.__dict__)
        batch_shape = tuple(batch_shape)
        # the base's shape is the expanded one pulled back through the transforms (a
        # StickBreakingTransform's base has one entry fewer on the last axis)
        shape = batch_shape + self._event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        base_batch = tuple(shape)[:len(shape) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(base_batch)
        new._batch_shape = batch_shape
        return new

    def _like(self):
        return self.base_dist._like()

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        return self.transforms[-1].codomain if self.transforms else self.base_dist.support

    def sample(self, sample_shape=()):
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        y = self._validate_sample(value)
        event_dim = len(self._event_shape)
        lp = 0.0
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            lp = lp - sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
            y = x
        base = self.base_dist.log_prob(y)
        return lp + sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def _monotone_cdf(self, value):
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        value = self._validate_sample(value, "cdf")
        for t in reversed(self.transforms):
            value = t.inv(value)
        return self._monotone_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        value = self.base_dist.icdf(self._monotone_cdf(value))
        for t in self.transforms:
            value = t(value)
        return value

    def __repr__(self) -> str:
        return "TransformedDistribution()"


class LogNormal(TransformedDistribution):
    """exp(X) for X ~ Normal(loc, scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return gp.exp(self.loc + self.scale * self.scale / 2.0)

    @property
    def mode(self):
        return gp.exp(self.loc - self.scale * self.scale)

    @property
    def variance(self):
        s2 = self.scale * self.scale
        return gp.expm1(s2) * gp.exp(2.0 * self.loc + s2)

    def entropy(self):
        return self.base_dist.entropy() + self.loc

    def __repr__(self) -> str:
        return repr(self.base_dist).replace("Normal", "LogNormal", 1)
