"""The Fisher-Snedecor (F) distribution: (X1 / df1) / (X2 / df2) for chi-square X1, X2."""
from __future__ import annotations

import math

from ..array import api as gp
from . import constraints
from ._special import lgamma
from .distribution import Distribution
from .gamma import standard_gamma
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """The F distribution with ``df1`` and ``df2`` degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True
    _batch_params = ("df1", "df2")

    def __init__(self, df1, df2, validate_args: bool | None = None) -> None:
        self._note_host(df1=df1, df2=df2)
        self.df1, self.df2 = broadcast_all(df1, df2)
        super().__init__(self.df1.shape, validate_args=validate_args)

    @property
    def mean(self):
        d2 = self.df2
        ok = d2 > 2.0
        return gp.where(ok, d2 / gp.where(ok, d2 - 2.0, 1.0), math.nan)

    @property
    def mode(self):
        d1, d2 = self.df1, self.df2
        ok = d1 > 2.0
        return gp.where(ok, (d1 - 2.0) / d1 * d2 / (d2 + 2.0), math.nan)

    @property
    def variance(self):
        d1, d2 = self.df1, self.df2
        ok = d2 > 4.0
        d2m2 = gp.where(ok, d2 - 2.0, 1.0)
        v = 2.0 * d2 * d2 * (d1 + d2 - 2.0) / (d1 * d2m2 * d2m2 * gp.where(ok, d2 - 4.0, 1.0))
        return gp.where(ok, v, math.nan)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        # chi2(df) / df = Gamma(df / 2, rate df / 2), pathwise through both draws
        x1 = standard_gamma(0.5 * self.df1, shape) / (0.5 * self.df1)
        x2 = standard_gamma(0.5 * self.df2, shape) / (0.5 * self.df2)
        tiny = float(gp.finfo(x1.dtype).smallest_normal)
        return gp.maximum(x1 / x2, tiny)

    def log_prob(self, value):
        value = self._validate_sample(value)
        h1, h2 = 0.5 * self.df1, 0.5 * self.df2
        ratio = self.df1 / self.df2
        norm = lgamma(h1 + h2) - lgamma(h1) - lgamma(h2)
        return (norm + h1 * gp.log(ratio) + (h1 - 1.0) * gp.log(value)
                - (h1 + h2) * gp.log1p(ratio * value))
