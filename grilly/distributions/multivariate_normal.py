"""The multivariate normal distribution."""
from __future__ import annotations

import math

from ..array import api as gp
from . import constraints
from .distribution import Distribution
from .utils import normal_noise, promote_all

__all__ = ["MultivariateNormal"]


def batch_mahalanobis(scale_tril, diff):
    """|| L^-1 diff ||^2 over the last axis, L broadcast against diff's batch axes."""
    n = diff.shape[-1]
    lb = gp.broadcast_to(scale_tril, tuple(diff.shape[:-1]) + (n, n))
    x = gp.linalg.solve(lb, diff[..., None])[..., 0]
    return gp.sum(x * x, axis=-1)


def _check_matrix(name: str, m) -> None:
    if m.ndim < 2:
        raise ValueError(f"MultivariateNormal: {name} must be at least two-dimensional, with "
                         f"optional leading batch dimensions, got shape {tuple(m.shape)}")
    if m.shape[-1] != m.shape[-2]:
        raise ValueError(f"MultivariateNormal: {name} must be square, got shape "
                         f"{tuple(m.shape)}")


class MultivariateNormal(Distribution):
    """N(loc, Sigma), Sigma given as covariance_matrix, precision_matrix or scale_tril (its
    lower Cholesky factor)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None) -> None:
        given = [(k, v) for k, v in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if v is not None]
        if len(given) != 1:
            raise ValueError("MultivariateNormal: exactly one of covariance_matrix or "
                             "precision_matrix or scale_tril may be specified.")
        self._note_host(loc=loc, **dict(given))
        name, m = given[0]
        loc, m = promote_all(loc, m)
        if loc.ndim < 1:
            raise ValueError("MultivariateNormal: loc must be at least one-dimensional.")
        _check_matrix(name, m)
        if m.shape[-1] != loc.shape[-1]:
            raise ValueError(f"MultivariateNormal: {name} of shape {tuple(m.shape)} does not "
                             f"match loc of shape {tuple(loc.shape)} (event size "
                             f"{loc.shape[-1]})")
        batch_shape = gp.broadcast_shapes(tuple(m.shape[:-2]), tuple(loc.shape[:-1]))
        n = loc.shape[-1]
        self.__dict__[name] = gp.broadcast_to(m, batch_shape + (n, n))
        self.loc = gp.broadcast_to(loc, batch_shape + (n,))
        super().__init__(batch_shape, (n,), validate_args=validate_args)
        if name == "scale_tril":
            # only the lower triangle is read (the upper one gets no gradient), as torch's
            # triangular solves
            self._unbroadcasted_scale_tril = gp.tril(m)
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = gp.linalg.cholesky(m)
        else:
            self._unbroadcasted_scale_tril = gp.linalg.cholesky(gp.linalg.inv(m))

    def expand(self, batch_shape, _instance=None) -> "MultivariateNormal":
        new = object.__new__(MultivariateNormal)
        new.__dict__.update(self.__dict__)
        batch_shape = tuple(batch_shape)
        n = self._event_shape[0]
        new.loc = gp.broadcast_to(self.loc, batch_shape + (n,))
        for k in ("covariance_matrix", "precision_matrix", "scale_tril"):
            if k in self.__dict__:
                new.__dict__[k] = gp.broadcast_to(self.__dict__[k], batch_shape + (n, n))
        new._batch_shape = batch_shape
        return new

    def _full(self, m):
        n = self._event_shape[0]
        return gp.broadcast_to(m, self._batch_shape + (n, n))

    @property
    def scale_tril(self):
        if "scale_tril" in self.__dict__:
            return self.__dict__["scale_tril"]
        return self._full(self._unbroadcasted_scale_tril)

    @property
    def covariance_matrix(self):
        if "covariance_matrix" in self.__dict__:
            return self.__dict__["covariance_matrix"]
        L = self._unbroadcasted_scale_tril
        return self._full(gp.matmul(L, gp.matrix_transpose(L)))

    @property
    def precision_matrix(self):
        if "precision_matrix" in self.__dict__:
            return self.__dict__["precision_matrix"]
        L = self._unbroadcasted_scale_tril
        return self._full(gp.linalg.inv(gp.matmul(L, gp.matrix_transpose(L))))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        L = self._unbroadcasted_scale_tril
        return gp.broadcast_to(gp.sum(L * L, axis=-1), self._batch_shape + self._event_shape)

    def _half_log_det(self):
        return gp.sum(gp.log(gp.linalg.diagonal(self._unbroadcasted_scale_tril)), axis=-1)

    def rsample(self, sample_shape=()):
        eps = normal_noise(self._extended_shape(sample_shape), self.loc)
        return self.loc + gp.matmul(self._unbroadcasted_scale_tril, eps[..., None])[..., 0]

    def log_prob(self, value):
        value = self._validate_sample(value)
        diff = value - self.loc
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2.0 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2.0 * math.pi)) + self._half_log_det()
        return gp.broadcast_to(h, self._batch_shape)

    def __repr__(self) -> str:
        name = next(k for k in ("covariance_matrix", "precision_matrix", "scale_tril")
                    if k in self.__dict__)
        return (f"MultivariateNormal(loc: {tuple(self.loc.shape)}, "
                f"{name}: {tuple(self.__dict__[name].shape)})")

