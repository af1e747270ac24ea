"""The Wishart distribution over positive definite matrices, drawn by the Bartlett
decomposition."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..array import api as gp
from . import constraints
from ._special import digamma, lgamma
from .distribution import Distribution
from .gamma import standard_gamma
from .multivariate_normal import MultivariateNormal, _check_matrix
from .utils import normal_noise, promote_all

__all__ = ["Wishart"]

_LOG_2 = math.log(2.0)


def _mvlgamma(x, p: int):
    """log of the multivariate gamma function Gamma_p(x)."""
    out = 0.25 * p * (p - 1) * math.log(math.pi)
    for i in range(p):
        out = out + lgamma(x - 0.5 * i)
    return out


def _mvdigamma(x, p: int):
    """d/dx log Gamma_p(x)."""
    out = 0.0
    for i in range(p):
        out = out + digamma(x - 0.5 * i)
    return out


class Wishart(Distribution):
    """The Wishart distribution with ``df`` degrees of freedom and scale matrix given as
    covariance_matrix, precision_matrix or scale_tril (its lower Cholesky factor)."""

    arg_constraints = {"covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky,
                       "df": constraints.greater_than(0.0)}
    support = constraints.positive_definite
    has_rsample = True
    _batch_params = ("df",)

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None) -> None:
        given = [(k, v) for k, v in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if v is not None]
        if len(given) != 1:
            raise ValueError("Wishart: exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        self._note_host(df=df, **dict(given))
        name, m = given[0]
        df, m = promote_all(df, m)
        _check_matrix(name, m)
        p = m.shape[-1]
        host_df = self.__dict__.get("_host_params", {}).get("df")
        if host_df is not None and (self._validate_args if validate_args is None
                                    else validate_args):
            if not np.all(np.asarray(host_df, dtype=np.float64) > p - 1):
                raise ValueError(f"Wishart: value of df={host_df} expected to be greater than "
                                 f"ndim - 1 = {p - 1}.")
        batch = gp.broadcast_shapes(tuple(df.shape), tuple(m.shape[:-2]))
        self.df = gp.broadcast_to(df, batch)
        self.__dict__[name] = gp.broadcast_to(m, batch + (p, p))
        # the scale matrix's Cholesky factor, as MultivariateNormal finds it
        self._mvn = MultivariateNormal(gp.zeros((p,), dtype=m.dtype, device=m.device),
                                       validate_args=False, **{name: m})
        super().__init__(batch, (p, p), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "Wishart":
        new = super().expand(batch_shape, _instance)
        p = self._event_shape[-1]
        for k in ("covariance_matrix", "precision_matrix", "scale_tril"):
            if k in self.__dict__:
                new.__dict__[k] = gp.broadcast_to(self.__dict__[k], tuple(batch_shape) + (p, p))
        return new

    @property
    def _unbroadcasted_scale_tril(self):
        return self._mvn._unbroadcasted_scale_tril

    def _full(self, m):
        return gp.broadcast_to(m, self._batch_shape + self._event_shape)

    @property
    def scale_tril(self):
        m = self.__dict__.get("scale_tril")
        return m if m is not None else self._full(self._mvn.scale_tril)

    @property
    def covariance_matrix(self):
        m = self.__dict__.get("covariance_matrix")
        return m if m is not None else self._full(self._mvn.covariance_matrix)

    @property
    def precision_matrix(self):
        m = self.__dict__.get("precision_matrix")
        return m if m is not None else self._full(self._mvn.precision_matrix)

    def _df(self):
        return self.df[..., None, None]

    @property
    def mean(self):
        return self._df() * self.covariance_matrix

    @property
    def mode(self):
        # (df - p - 1) V, nan where df <= p + 1 (as torch)
        factor = self._df() - float(self._event_shape[-1] + 1)
        return gp.where(factor > 0, factor * self.covariance_matrix, math.nan)

    @property
    def variance(self):
        v = self.covariance_matrix
        d = gp.linalg.diagonal(v)
        return self._df() * (v * v + d[..., :, None] * d[..., None, :])

    def _bartlett(self, shape: tuple):
        """Bartlett: L A (L A)^T, A lower triangular with sqrt(chi2(df - i)) on the diagonal
        and standard normals below (pathwise through the gamma draws)."""
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        i = gp.asarray(np.arange(p, dtype=np.float64), dtype=L.dtype, device=L.device)
        half_df = 0.5 * (self.df[..., None] - i)
        chi2 = 2.0 * standard_gamma(half_df, tuple(shape[:-1]))
        tiny = float(gp.finfo(L.dtype).eps)
        eye = gp.eye(p, dtype=L.dtype, device=L.device)
        a = gp.tril(normal_noise(shape, L), k=-1) + eye * gp.sqrt(gp.maximum(chi2, tiny))[
            ..., None, :]
        chol = gp.matmul(L, a)
        return gp.matmul(chol, gp.matrix_transpose(chol))

    def rsample(self, sample_shape=(), max_try_correction: int | None = None):
        """Bartlett draws; a draw outside the support or of a determinant that rounds to 0
        (numerically singular: likely for df near p - 1) is redrawn, up to
        ``max_try_correction`` times (10 by default, as torch's), with a warning."""
        if max_try_correction is None:
            max_try_correction = 10
        if isinstance(max_try_correction, bool) or not isinstance(max_try_correction, int) \
                or max_try_correction < 0:
            raise ValueError(f"Wishart.rsample: max_try_correction must be a non-negative int, "
                             f"got {max_try_correction!r}")
        shape = self._extended_shape(sample_shape)
        sample = self._bartlett(shape)

        def singular(s):
            # outside the support, or a determinant that log_prob cannot take the log of
            s = s.detach()
            sign, logdet = gp.linalg.slogdet(s)
            ok = gp.logical_and(sign > 0, gp.isfinite(logdet))
            return gp.logical_not(gp.logical_and(ok, self.support.check(s)))

        bad = singular(sample)
        if bool(gp.any(bad)):
            warnings.warn("Wishart.rsample: singular sample detected; redrawing it",
                          stacklevel=2)
            for _ in range(max_try_correction):
                new = self._bartlett(shape)
                sample = gp.where(bad[..., None, None], new, sample)
                bad = gp.logical_and(bad, singular(new))
                if not bool(gp.any(bad)):
                    break
        return sample

    def _half_log_det(self):
        return gp.sum(gp.log(gp.linalg.diagonal(self._unbroadcasted_scale_tril)), axis=-1)

    def log_prob(self, value):
        value = self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        # slogdet and cholesky_solve, as torch's: a numerically singular value (a draw for df
        # near p - 1 can be) gives -inf or a finite density, where cholesky(value) would raise
        log_det_x = gp.linalg.slogdet(value)[1]
        shape = gp.broadcast_shapes(tuple(L.shape), tuple(value.shape))
        # tr(V^-1 X), V = L L^T
        trace = gp.sum(gp.linalg.diagonal(gp.linalg.cholesky_solve(
            gp.broadcast_to(value, shape), gp.broadcast_to(L, shape))), axis=-1)
        return (-nu * (0.5 * p * _LOG_2 + self._half_log_det()) - _mvlgamma(0.5 * nu, p)
                + 0.5 * (nu - p - 1.0) * log_det_x - 0.5 * trace)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * (0.5 * p * _LOG_2 + self._half_log_det()) + _mvlgamma(0.5 * nu, p)
                - 0.5 * (nu - p - 1.0) * _mvdigamma(0.5 * nu, p) + 0.5 * nu * p)

    def __repr__(self) -> str:
        name = next(k for k in ("covariance_matrix", "precision_matrix", "scale_tril")
                    if k in self.__dict__)
        return (f"Wishart(df: {tuple(self.df.shape)}, "
                f"{name}: {tuple(self.__dict__[name].shape)})")
