"""The multivariate normal with a low-rank plus diagonal covariance W W^T + diag(D)."""
from __future__ import annotations

from ..array import api as gp
from . import constraints
from .distribution import Distribution
from .multivariate_normal import MultivariateNormal
from .utils import normal_noise, promote_all

__all__ = ["LowRankMultivariateNormal"]


class LowRankMultivariateNormal(Distribution):
    """N(loc, cov_factor cov_factor^T + diag(cov_diag)); cov_factor is (..., n, rank)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args: bool | None = None) -> None:
        self._note_host(loc=loc, cov_factor=cov_factor, cov_diag=cov_diag)
        loc, w, d = promote_all(loc, cov_factor, cov_diag)
        name = "LowRankMultivariateNormal"
        if loc.ndim < 1:
            raise ValueError(f"{name}: loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if w.ndim < 2:
            raise ValueError(f"{name}: cov_factor must be at least two-dimensional, with "
                             "optional leading batch dimensions")
        if w.shape[-2] != n:
            raise ValueError(f"{name}: cov_factor must be a batch of matrices with shape "
                             f"{n} x m, got shape {tuple(w.shape)}")
        if d.ndim < 1 or d.shape[-1] != n:
            raise ValueError(f"{name}: cov_diag must be a batch of vectors with shape {n}, "
                             f"got shape {tuple(d.shape)}")
        batch = gp.broadcast_shapes(tuple(loc.shape[:-1]), tuple(w.shape[:-2]),
                                    tuple(d.shape[:-1]))
        self.loc = gp.broadcast_to(loc, batch + (n,))
        self.cov_factor = gp.broadcast_to(w, batch + tuple(w.shape[-2:]))
        self.cov_diag = gp.broadcast_to(d, batch + (n,))
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = w, d
        super().__init__(batch, (n,), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "LowRankMultivariateNormal":
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.pop("_mvn_cache", None)
        batch_shape = tuple(batch_shape)
        n = self._event_shape[0]
        new.loc = gp.broadcast_to(self.loc, batch_shape + (n,))
        new.cov_factor = gp.broadcast_to(self.cov_factor,
                                         batch_shape + tuple(self.cov_factor.shape[-2:]))
        new.cov_diag = gp.broadcast_to(self.cov_diag, batch_shape + (n,))
        new._batch_shape = batch_shape
        return new

    @property
    def _mvn(self) -> MultivariateNormal:
        """The same law as a MultivariateNormal of the full covariance (its Cholesky factor:
        the n x n matrix, not torch's rank x rank capacitance; the same values)."""
        m = self.__dict__.get("_mvn_cache")
        if m is None:
            m = self.__dict__["_mvn_cache"] = MultivariateNormal(
                self.loc, covariance_matrix=self.covariance_matrix, validate_args=False)
        return m

    @property
    def _unbroadcasted_scale_tril(self):
        return self._mvn._unbroadcasted_scale_tril

    def _half_log_det(self):
        return self._mvn._half_log_det()

    @property
    def covariance_matrix(self):
        w = self.cov_factor
        n = self._event_shape[0]
        eye = gp.eye(n, dtype=w.dtype, device=w.device)
        return gp.matmul(w, gp.matrix_transpose(w)) + eye * self.cov_diag[..., None, :]

    @property
    def precision_matrix(self):
        return gp.linalg.inv(self.covariance_matrix)

    @property
    def scale_tril(self):
        return self._mvn.scale_tril

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        w = self.cov_factor
        return gp.sum(w * w, axis=-1) + self.cov_diag

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        rank = self.cov_factor.shape[-1]
        eps_w = normal_noise(shape[:-1] + (rank,), self.loc)
        eps_d = normal_noise(shape, self.loc)
        return (self.loc + gp.matmul(self.cov_factor, eps_w[..., None])[..., 0]
                + gp.sqrt(self.cov_diag) * eps_d)

    def log_prob(self, value):
        value = self._validate_sample(value)
        return self._mvn.log_prob(value)

    def entropy(self):
        return self._mvn.entropy()

    def __repr__(self) -> str:
        return (f"LowRankMultivariateNormal(loc: {tuple(self.loc.shape)}, cov_factor: "
                f"{tuple(self.cov_factor.shape)}, cov_diag: {tuple(self.cov_diag.shape)})")
