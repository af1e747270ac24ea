"""Independent: batch axes of a distribution reinterpreted as event axes."""
from __future__ import annotations

from . import constraints
from .distribution import Distribution
from .utils import sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    """``base_distribution`` with its last ``reinterpreted_batch_ndims`` batch axes made event
    axes (log_prob and entropy summed over them)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None) -> None:
        if not isinstance(base_distribution, Distribution):
            raise TypeError("Independent: base_distribution must be a Distribution, got "
                            f"{type(base_distribution).__name__}")
        n = reinterpreted_batch_ndims
        bs = base_distribution.batch_shape
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= len(bs):
            raise ValueError("Independent: expected 0 <= reinterpreted_batch_ndims <= "
                             f"len(base_distribution.batch_shape) = {len(bs)}, actual {n!r}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        split = len(bs) - n
        super().__init__(bs[:split], bs[split:] + base_distribution.event_shape,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "Independent":
        new = object.__new__(Independent)
        new.__dict__.update(self.__dict__)
        batch_shape = tuple(batch_shape)
        n = self.reinterpreted_batch_ndims
        ev = self.base_dist.batch_shape[len(self.base_dist.batch_shape) - n:]
        new.base_dist = self.base_dist.expand(batch_shape + ev)
        new._batch_shape = batch_shape
        return new

    def _like(self):
        return self.base_dist._like()

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        s = self.base_dist.support
        return constraints.independent(s, self.reinterpreted_batch_ndims) \
            if self.reinterpreted_batch_ndims else s

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    @property
    def stddev(self):
        return self.base_dist.stddev

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
