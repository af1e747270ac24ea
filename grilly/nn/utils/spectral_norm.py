"""``torch.nn.utils.spectral_norm`` (legacy): ``weight`` recomputed before each forward as
``weight_orig / sigma``, sigma estimated by power iteration on the buffers ``weight_u`` and
``weight_v`` (updated in training mode only). The parametrization version is
grilly.nn.utils.parametrizations.spectral_norm."""
from __future__ import annotations

from typing import Any, TypeVar

from ...autograd.mode import no_grad
from .. import _random
from ..module import Module
from ..parameter import Parameter
from . import _norms
from .weight_norm import _pre_hooks

__all__ = ["SpectralNorm", "remove_spectral_norm", "spectral_norm"]

T_module = TypeVar("T_module", bound=Module)


class SpectralNorm:
    """The forward pre-hook of ``spectral_norm``."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError("spectral_norm: expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.eps = name, dim, eps
        self.n_power_iterations = n_power_iterations

    def reshape_weight_to_matrix(self, weight):
        """The weight as a matrix with axis ``dim`` as its rows."""
        return _norms.as_matrix(weight, self.dim)

    def compute_weight(self, module: Module, do_power_iteration: bool):
        """``<name>_orig / sigma``, after ``n_power_iterations`` steps on u and v (in place,
        without a graph) when ``do_power_iteration``."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                m = mat.detach()
                for _ in range(self.n_power_iterations):
                    v[...] = _norms.normalize(_norms.mv(m.mT, u), self.eps)
                    u[...] = _norms.normalize(_norms.mv(m, v), self.eps)
        # copies: a later forward's update must not change what this one's graph holds
        u, v = u.copy(), v.copy()
        sigma = (u * _norms.mv(mat, v)).sum()
        return weight / sigma

    def remove(self, module: Module) -> None:
        """Put back ``name`` as one parameter holding the current normalized weight."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> "SpectralNorm":
        """Replace parameter ``name`` by ``name_orig`` and the buffers ``name_u``, ``name_v``
        and register the hook."""
        for hook in _pre_hooks(module).values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"spectral_norm: cannot register two spectral_norm hooks on "
                                   f"the same parameter {name}")
        if module._parameters.get(name) is None:
            raise ValueError(f"spectral_norm: {type(module).__name__} has no parameter {name!r}")
        weight = module._parameters[name]
        fn = SpectralNorm(name, n_power_iterations, dim % weight.ndim, eps)
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = _norms.normalize(_random.normal((h,), dtype=weight.dtype,
                                                device=weight.device), eps)
            v = _norms.normalize(_random.normal((w,), dtype=weight.dtype,
                                                device=weight.device), eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: T_module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> T_module:
    """Reparametrize ``module.<name>`` as itself divided by its largest singular value, as
    estimated by power iteration (dim: 1 for transposed convolutions, else 0)."""
    if dim is None:
        dim = 1 if _norms.is_conv_transpose(module) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo ``spectral_norm``: ``<name>`` becomes one parameter again."""
    for k, hook in _pre_hooks(module).items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module.__dict__["_forward_pre_hooks"][k]
            return module
    raise ValueError(f"remove_spectral_norm: spectral_norm of {name!r} not found in "
                     f"{type(module).__name__}")
