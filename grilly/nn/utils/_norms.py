"""Pieces shared by the weight and spectral normalizations (legacy hooks and parametrizations)."""
from __future__ import annotations

from ...array import api as gp
from ...array.array import Array

# ConvTranspose weights hold their output channels on axis 1. Named rather than imported:
# grilly.nn.conv_rnn_extra imports grilly.nn.rnn, which imports this package.
_CONV_TRANSPOSE = frozenset({"ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
                             "LazyConvTranspose1d", "LazyConvTranspose2d",
                             "LazyConvTranspose3d"})


def is_conv_transpose(module) -> bool:
    """Whether ``module`` is a transposed convolution (spectral_norm's default dim is then 1)."""
    return any(c.__name__ in _CONV_TRANSPOSE for c in type(module).__mro__)


def norm_except_dim(v: Array, dim: int) -> Array:
    """The 2-norm over every axis but ``dim`` (kept as size-1 axes); the whole norm for dim -1,
    as torch's norm_except_dim."""
    if dim == -1:
        return gp.linalg.vector_norm(v)
    dim = dim % v.ndim
    return gp.linalg.vector_norm(v, axis=tuple(i for i in range(v.ndim) if i != dim),
                                 keepdims=True)


def weight_norm(v: Array, g: Array, dim: int) -> Array:
    """``v * g / ||v||`` (the norm taken over every axis but ``dim``), differentiable."""
    return v * (g / norm_except_dim(v, dim))


def normalize(x: Array, eps: float) -> Array:
    """``x / max(||x||, eps)`` for a vector (F.normalize with dim=0)."""
    return x / gp.maximum(gp.linalg.vector_norm(x), gp.asarray(eps, dtype=x.dtype,
                                                              device=x.device))


def as_matrix(weight: Array, dim: int) -> Array:
    """``weight`` with axis ``dim`` first, flattened to (size of dim, rest)."""
    if dim != 0:
        weight = gp.permute_dims(weight, (dim, *(d for d in range(weight.ndim) if d != dim)))
    return gp.reshape(weight, (weight.shape[0], -1))


def mv(m: Array, x: Array) -> Array:
    """Matrix times vector."""
    return gp.matmul(m, x)
