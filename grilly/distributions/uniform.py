"""The continuous uniform distribution."""
from __future__ import annotations

import math

import numpy as np

from ..array import api as gp
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, uniform_noise

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform on the half-open interval [low, high)."""

    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True
    _batch_params = ("low", "high")

    def __init__(self, low, high, validate_args: bool | None = None) -> None:
        self._note_host(low=low, high=high)
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)
        host = self._host_params
        if self._validate_args and "low" in host and "high" in host \
                and not np.all(np.asarray(host["low"]) < np.asarray(host["high"])):
            raise ValueError(f"Uniform: low must be < high, got low={host['low']}, "
                             f"high={host['high']}")

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2.0

    @property
    def mode(self):
        return gp.full_like(self.high, math.nan)

    @property
    def stddev(self):
        return (self.high - self.low) / math.sqrt(12.0)

    @property
    def variance(self):
        w = self.high - self.low
        return w * w / 12.0

    def rsample(self, sample_shape=()):
        u = uniform_noise(self._extended_shape(sample_shape), self.low)
        return self.low + u * (self.high - self.low)

    def _check_inside(self, value, op: str) -> None:
        """Host data outside [low, high] is a ValueError where both bounds are host numbers
        (torch validates the support; an Array value is not read back for it)."""
        host = self._host_params
        if self._validate_args and not isinstance(value, gp.Array) and "low" in host \
                and "high" in host:
            v = np.asarray(value, dtype=np.float64)
            if not np.all((np.asarray(host["low"]) <= v) & (v <= np.asarray(host["high"]))):
                raise ValueError(f"Uniform.{op}: expected value to be within the support "
                                 f"(Interval(lower_bound={host['low']}, upper_bound="
                                 f"{host['high']})) of the distribution, but found invalid "
                                 f"values:\n{v}")

    def log_prob(self, value):
        self._check_inside(value, "log_prob")
        value = self._validate_sample(value)
        inside = (self.low <= value) & (self.high > value)
        # log(0) = -inf outside, as torch
        return gp.log(gp.astype(inside, self.low.dtype)) - gp.log(self.high - self.low)

    def cdf(self, value):
        self._check_inside(value, "cdf")
        value = self._validate_sample(value, "cdf")
        return gp.clip((value - self.low) / (self.high - self.low), 0.0, 1.0)

    def icdf(self, value):
        value = self._validate_sample(value, "icdf")
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return gp.log(self.high - self.low)
