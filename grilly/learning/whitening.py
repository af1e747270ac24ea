"""Whitening: a linear map W (and centring by the mean mu) with ``cov(W (x - mu)) = I``.

From the covariance C = U diag(s) U^T (eigh):
    PCA: W = diag(1 / sqrt(s + eps)) U^T     (rotated onto the principal axes)
    ZCA: W = U diag(1 / sqrt(s + eps)) U^T   (symmetric; the closest to the identity)
``Whitening.partial_fit`` keeps a running mean and covariance over batches (the exact pooled
estimate: streaming data converge to the batch fit), so streams can be whitened too.
"""
from __future__ import annotations

from ..array import api as gp
from ..array.array import Array
from ..compute import _real

__all__ = ["Whitening", "whiten"]


def _check(x, op: str, d: int | None = None) -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"{op}: data must be a grilly Array, got {type(x).__name__}")
    if x.ndim != 2 or x.dtype not in (gp.float32, gp.float64):
        raise ValueError(f"{op}: data must be a float32 or float64 (n, d) array, got {x.dtype} "
                         f"of shape {x.shape}")
    if d is not None and x.shape[1] != d:
        raise ValueError(f"{op}: expected {d} features (the fitted data's), got {x.shape[1]}")
    return x


class Whitening:
    """PCA or ZCA whitening with ``fit``/``partial_fit``, ``transform``, ``inverse_transform``."""

    def __init__(self, method: str = "zca", eps: float = 1e-5) -> None:
        if method not in ("zca", "pca"):
            raise ValueError(f"Whitening: method must be 'zca' or 'pca', got {method!r}")
        if not _real("Whitening", "eps", eps) >= 0:
            raise ValueError(f"Whitening: eps must be >= 0, got {eps}")
        self.method, self.eps = method, float(eps)
        self.n = 0
        self.mean = self._m2 = self.matrix = self.inverse = None

    def fit(self, x: Array) -> "Whitening":
        """Estimate mean and covariance from ``x`` (n, d), forgetting earlier data."""
        self.n = 0
        self.mean = self._m2 = None
        return self.partial_fit(x)

    def partial_fit(self, x: Array) -> "Whitening":
        """Merge the batch ``x`` (n, d) into the running mean and covariance (Chan et al.'s
        pooled update), then refresh the maps."""
        x = _check(x, "Whitening.partial_fit")
        nb = x.shape[0]
        if nb == 0:
            return self
        mb = gp.mean(x, axis=0)
        xc = x - mb
        m2b = gp.matmul(gp.matrix_transpose(xc), xc)
        if self.n == 0:
            self.mean, self._m2, self.n = mb, m2b, nb
        else:
            if x.shape[1] != self.mean.shape[0]:
                raise ValueError(f"Whitening.partial_fit: expected {self.mean.shape[0]} features, "
                                 f"got {x.shape[1]}")
            n = self.n + nb
            delta = gp.reshape(mb - self.mean, (-1, 1))
            self._m2 = self._m2 + m2b + (self.n * nb / n) * gp.matmul(
                delta, gp.matrix_transpose(delta))
            self.mean = self.mean + delta[:, 0] * (nb / n)
            self.n = n
        self._refresh()
        return self

    @property
    def covariance(self) -> Array:
        """The running covariance (divided by n - 1; by 1 for a single sample)."""
        if self._m2 is None:
            raise RuntimeError("Whitening: call fit or partial_fit first")
        return self._m2 / float(max(self.n - 1, 1))

    def _refresh(self) -> None:
        s, u = gp.linalg.eigh(self.covariance)
        s = gp.maximum(s, 0.0)
        scale = 1.0 / gp.sqrt(s + self.eps)
        ut = gp.matrix_transpose(u)
        w = gp.expand_dims(scale, axis=1) * ut                       # PCA: diag(scale) U^T
        winv = u * gp.expand_dims(gp.sqrt(s + self.eps), axis=0)     # U diag(1 / scale)
        if self.method == "zca":
            w, winv = gp.matmul(u, w), gp.matmul(winv, ut)
        self.matrix, self.inverse = w, winv

    def transform(self, x: Array) -> Array:
        """The whitened rows of ``x`` (n, d): ``(x - mean) W^T``."""
        if self.matrix is None:
            raise RuntimeError("Whitening: call fit or partial_fit first")
        x = _check(x, "Whitening.transform", self.matrix.shape[0])
        return gp.matmul(x - self.mean, gp.matrix_transpose(self.matrix))

    def inverse_transform(self, z: Array) -> Array:
        """Back from whitened rows: ``z W^-T + mean``."""
        if self.inverse is None:
            raise RuntimeError("Whitening: call fit or partial_fit first")
        z = _check(z, "Whitening.inverse_transform", self.inverse.shape[0])
        return gp.matmul(z, gp.matrix_transpose(self.inverse)) + self.mean


def whiten(x: Array, eps: float = 1e-5, method: str = "zca") -> Array:
    """``x`` (n, d) whitened with its own mean and covariance."""
    return Whitening(method, eps).fit(x).transform(x)
