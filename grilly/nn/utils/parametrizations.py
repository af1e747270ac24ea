"""``torch.nn.utils.parametrizations``: ``weight_norm``, ``spectral_norm`` and ``orthogonal``
as parametrizations (grilly.nn.utils.parametrize), with torch's state_dict keys
(``parametrizations.weight.original0/1``; ``parametrizations.weight.original`` and
``parametrizations.weight.0._u/_v``, ``parametrizations.weight.0.base``)."""
from __future__ import annotations


from ...array import api as gp
from ...array.array import Array
from ...autograd.mode import no_grad
from .. import _random
from ..module import Module
from . import _norms, parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


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


# ---- orthogonal ---------------------------------------------------------------------------
_ORTH_MAPS = ("matrix_exp", "cayley", "householder")


def _eye_like(a: Array, n: int) -> Array:
    return gp.eye(n, dtype=a.dtype, device=a.device)


def _make_orthogonal(a: Array) -> Array:
    """The Q of a = QR with R's diagonal made non-negative (the columns' signs flipped)."""
    q, r = gp.linalg.qr(a)
    return q * gp.sign(gp.linalg.diagonal(r))[..., None, :]


def _is_orthogonal(q: Array) -> bool:
    n, k = q.shape[-2:]
    eps = 10.0 * n * float(gp.finfo(q.dtype).eps)
    return bool(gp.all(gp.abs(q.mT @ q - _eye_like(q, k)) <= eps))


class _Orthogonal(Module):
    """The map of torch's orthogonal parametrization: the original X (..., n, k) to an
    orthogonal Q by 'matrix_exp' / 'cayley' of the skew-symmetric part of X's lower triangle,
    or 'householder' reflectors; times the buffer ``base`` where ``use_trivialization``."""

    def __init__(self, weight: Array, orthogonal_map: str, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Array) -> Array:
        n, k = x.shape[-2:]
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = gp.tril(x)
            if n != k:   # embedded into a square matrix
                x = gp.concat([x, gp.zeros(x.shape[:-2] + (n, n - k), dtype=x.dtype,
                                           device=x.device)], axis=-1)
            a = x - x.mT
            if self.orthogonal_map == "matrix_exp":
                q = gp.linalg.matrix_exp(a)
            else:   # (I - A/2)^-1 (I + A/2)
                eye = _eye_like(a, n)
                q = gp.linalg.solve(eye - a * 0.5, eye + a * 0.5)
            if n != k:
                q = q[..., :k]
        else:
            a = gp.tril(x, k=-1)
            tau = 2.0 / (1.0 + gp.sum(a * a, axis=-2))
            q = gp.linalg.householder_product(a, tau)
            # X's diagonal holds the signs (+-1), taken without a gradient, as torch's
            q = q * gp.trunc(gp.linalg.diagonal(x.detach()))[..., None, :]
        if "base" in self._buffers:
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Array) -> Array:
        """An original X whose image is ``q`` (made orthogonal first): with a base, the base
        becomes (the completion of) q and X is -I; else the Householder reflectors of q."""
        if tuple(q.shape) != self.shape:
            raise ValueError(f"orthogonal: expected a matrix or batch of matrices of shape "
                             f"{self.shape}. Got a tensor of shape {tuple(q.shape)}.")
        with no_grad():
            q_init = q.detach()
            q = q_init
            n, k = q.shape[-2:]
            transpose = n < k
            if transpose:
                q = q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map != "householder":
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                a, tau = gp.linalg.geqrf(q)
                d = gp.sign(gp.linalg.diagonal(a))
                # a reflector LAPACK skipped (tau 0) flips the sign the forward's tau 2 adds
                d = gp.where(tau == 0, -d, d)
                # the diagonal (R's) replaced by those signs, exactly (the forward truncates it)
                on = gp.eye(n, k, dtype=gp.bool, device=a.device)
                a = gp.where(on, gp.broadcast_to(d[..., None, :], a.shape), a)
                return a.mT if transpose else a
            if n == k:
                q = gp.asarray(q, copy=True) if _is_orthogonal(q) else _make_orthogonal(q)
            else:   # completed to an n x n orthogonal matrix by random columns
                extra = _random.normal(q.shape[:-2] + (n, n - k), dtype=q.dtype,
                                       device=q.device)
                q = _make_orthogonal(gp.concat([q, extra], axis=-1))
            self.base = q
            # -I: the image of every map at -I is the identity (householder: its diagonal
            # gives the signs)
            neg = gp.zeros(q_init.shape, dtype=q_init.dtype, device=q_init.device)
            return neg - gp.eye(*q_init.shape[-2:], dtype=q_init.dtype, device=q_init.device)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Parametrize ``module.<name>`` (a matrix or a batch of them) as orthogonal, as torch's
    (map 'matrix_exp' for square, else 'householder', by default; ``base`` buffer with
    ``use_trivialization``); the initial value is the weight made orthogonal by QR."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Array):
        raise ValueError(f"orthogonal: module '{type(module).__name__}' has no parameter or "
                         f"buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"orthogonal: expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if weight.dtype.kind == "c":
        raise NotImplementedError("orthogonal: complex (unitary) weights are not supported")
    if weight.dtype.kind != "f":
        raise TypeError(f"orthogonal: the weight must be floating point, got {weight.dtype}")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _ORTH_MAPS:
        raise ValueError('orthogonal: orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
