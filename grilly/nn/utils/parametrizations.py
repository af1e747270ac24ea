"""``torch.nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` as
parametrizations (grilly.nn.utils.parametrize), with torch's state_dict keys
(``parametrizations.weight.original0/1``; ``parametrizations.weight.original`` and
``parametrizations.weight.0._u/_v``)."""
from __future__ import annotations

from ...array.array import Array
from ...autograd.mode import no_grad
from .. import _random
from ..module import Module
from . import _norms, parametrize

__all__ = ["spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    """``(g, v) -> v * g / ||v||``; right_inverse splits a weight into (its norm, itself)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Array, weight_v: Array) -> Array:
        return _norms.weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Array) -> tuple[Array, Array]:
        """(magnitude g, direction v) of ``weight``."""
        return _norms.norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Parametrize ``module.<name>`` as ``g * v / ||v||`` (originals ``original0`` = g and
    ``original1`` = v; the norm over every axis but ``dim``, the whole tensor for None)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """``weight / sigma``, sigma the largest singular value estimated by power iteration on the
    buffers ``_u``, ``_v`` (a step per forward in training mode)."""

    def __init__(self, weight: Array, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"spectral_norm: dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("spectral_norm: expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim % ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                mat = _norms.as_matrix(weight.detach(), self.dim)
                h, w = mat.shape
                self.register_buffer("_u", _norms.normalize(
                    _random.normal((h,), dtype=weight.dtype, device=weight.device), eps))
                self.register_buffer("_v", _norms.normalize(
                    _random.normal((w,), dtype=weight.dtype, device=weight.device), eps))
            # start from reasonable u and v, as torch's
            self._power_method(mat, 15)

    def _power_method(self, mat: Array, n: int) -> None:
        with no_grad():
            m = mat.detach()
            for _ in range(n):
                self._u[...] = _norms.normalize(_norms.mv(m, self._v), self.eps)
                self._v[...] = _norms.normalize(_norms.mv(m.mT, self._u), self.eps)

    def forward(self, weight: Array) -> Array:
        if weight.ndim == 1:
            return _norms.normalize(weight, self.eps)
        mat = _norms.as_matrix(weight, self.dim)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        # copies: a later forward's update must not change what this one's graph holds
        u, v = self._u.copy(), self._v.copy()
        return weight / (u * _norms.mv(mat, v)).sum()

    def right_inverse(self, value: Array) -> Array:
        """``value`` itself (taken to satisfy the constraint already), as torch's."""
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Parametrize ``module.<name>`` as itself divided by its spectral norm (dim: 1 for
    transposed convolutions, else 0)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Array):
        raise ValueError(f"spectral_norm: module '{type(module).__name__}' has no parameter or "
                         f"buffer with name '{name}'")
    if dim is None:
        dim = 1 if _norms.is_conv_transpose(module) else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
