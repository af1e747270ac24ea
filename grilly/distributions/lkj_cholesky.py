"""The LKJ distribution over Cholesky factors of correlation matrices (Lewandowski, Kurowicka
and Joe, 2009), drawn by the onion method."""
from __future__ import annotations

import math
import operator

import numpy as np

from ..array import api as gp
from ..autograd import no_grad
from . import constraints
from ._special import lgamma
from .distribution import Distribution
from .gamma import Beta
from .utils import broadcast_all, normal_noise

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The Cholesky factor L of a ``dim`` x ``dim`` correlation matrix L L^T of density
    proportional to det(L L^T)^(concentration - 1)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky
    _batch_params = ("concentration",)

    def __init__(self, dim: int, concentration=1.0, validate_args: bool | None = None) -> None:
        try:
            dim = operator.index(dim)
        except TypeError:
            raise TypeError(f"LKJCholesky: dim must be an int, got {dim!r}") from None
        if dim < 2:
            raise ValueError("LKJCholesky: expected dim to be an integer greater than or equal "
                             f"to 2. Found dim={dim}.")
        self.dim = dim
        self._note_host(concentration=concentration)
        self.concentration = broadcast_all(concentration)
        super().__init__(self.concentration.shape, (dim, dim), validate_args=validate_args)

    def _beta(self) -> Beta:
        """Row i's squared off-diagonal norm ~ Beta(i / 2, c + (dim - 1 - i) / 2), the onion
        method's (row 0's is unused: its off-diagonal part is empty). torch 2.13 draws
        Beta(i - 1/2, ...), whose correlations are not the LKJ law's beyond the second row."""
        c = self.concentration
        i = np.arange(self.dim, dtype=np.float64)
        conc1 = gp.asarray(np.maximum(i, 1.0) / 2.0, dtype=c.dtype, device=c.device)
        shift = gp.asarray(0.5 * np.maximum(i - 1.0, 0.0), dtype=c.dtype, device=c.device)
        marginal = c + 0.5 * (self.dim - 2)
        return Beta(gp.broadcast_to(conc1, tuple(c.shape) + (self.dim,)),
                    marginal[..., None] - shift, validate_args=False)

    def sample(self, sample_shape=()):
        """Draws of shape sample_shape + batch_shape + (dim, dim) (the onion method)."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            y = self._beta().sample(tuple(sample_shape) if not isinstance(sample_shape, int)
                                    else (sample_shape,))[..., None]
            # a direction uniform on each row's sphere of its first i entries
            u = gp.tril(normal_noise(shape, self.concentration), k=-1)
            norm = gp.sqrt(gp.sum(u * u, axis=-1, keepdims=True))
            u = u / gp.where(norm > 0, norm, 1.0)
            w = gp.sqrt(y) * u
            tiny = float(gp.finfo(w.dtype).smallest_normal)
            diag = gp.sqrt(gp.maximum(1.0 - gp.sum(w * w, axis=-1), tiny))
            eye = gp.eye(self.dim, dtype=w.dtype, device=w.device)
            return w + eye * diag[..., None, :]

    def log_prob(self, value):
        value = self._validate_sample(value)
        d, c = self.dim, self.concentration
        diag = gp.linalg.diagonal(value)[..., 1:]
        order = gp.asarray(np.arange(2, d + 1, dtype=np.float64), dtype=c.dtype,
                           device=c.device)
        power = 2.0 * (c - 1.0)[..., None] + float(d) - order
        unnormalized = gp.sum(power * gp.log(diag), axis=-1)
        dm1 = d - 1
        alpha = c + 0.5 * dm1
        # the normalizer: log of pi^(dm1/2) Gamma_dm1(alpha - 1/2) / Gamma(alpha)^dm1, with the
        # multivariate gamma Gamma_p(x) = pi^(p(p-1)/4) prod_j Gamma(x - (j - 1) / 2)
        mvlgamma = 0.25 * dm1 * (dm1 - 1) * math.log(math.pi)
        for j in range(dm1):
            mvlgamma = mvlgamma + lgamma(alpha - 0.5 - 0.5 * j)
        norm = 0.5 * dm1 * math.log(math.pi) + mvlgamma - dm1 * lgamma(alpha)
        return unnormalized - norm
