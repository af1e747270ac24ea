"""``torch.nn.utils.weight_norm`` (legacy): ``weight`` recomputed before each forward from the
parameters ``weight_g`` (magnitude) and ``weight_v`` (direction). The parametrization version is
grilly.nn.utils.parametrizations.weight_norm."""
from __future__ import annotations

import warnings
from typing import Any, TypeVar

from ...autograd.mode import no_grad
from ..module import Module
from ..parameter import Parameter
from . import _norms

__all__ = ["WeightNorm", "remove_weight_norm", "weight_norm"]

T_module = TypeVar("T_module", bound=Module)


class WeightNorm:
    """The forward pre-hook of ``weight_norm``: sets ``module.<name>`` from ``<name>_g`` and
    ``<name>_v``."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module):
        """``v * g / ||v||`` from the module's ``<name>_g`` and ``<name>_v``."""
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _norms.weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int) -> "WeightNorm":
        """Replace parameter ``name`` of ``module`` by ``name_g`` and ``name_v`` and register
        the hook."""
        for hook in _pre_hooks(module).values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"weight_norm: cannot register two weight_norm hooks on the "
                                   f"same parameter {name}")
        if name not in module._parameters or module._parameters[name] is None:
            raise ValueError(f"weight_norm: {type(module).__name__} has no parameter {name!r}")
        fn = WeightNorm(name, dim)
        weight = module._parameters[name]
        del module._parameters[name]
        with no_grad():
            g = _norms.norm_except_dim(weight, fn.dim)
        module.register_parameter(name + "_g", Parameter(g))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        """Put back ``name`` as one parameter holding the current weight."""
        with no_grad():
            weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def _pre_hooks(module: Module) -> dict:
    """hook id -> hook of the module's forward pre-hooks."""
    d = module.__dict__.get("_forward_pre_hooks") or {}
    return {k: v[0] for k, v in d.items()}


def weight_norm(module: T_module, name: str = "weight", dim: int | None = 0) -> T_module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` with parameters ``<name>_g`` and
    ``<name>_v`` (norm over every axis but ``dim``; the whole tensor for dim None). Deprecated
    in favor of parametrizations.weight_norm (warns, as torch's)."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo ``weight_norm``: ``<name>`` becomes one parameter again."""
    for k, hook in _pre_hooks(module).items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module.__dict__["_forward_pre_hooks"][k]
            return module
    raise ValueError(f"remove_weight_norm: weight_norm of {name!r} not found in "
                     f"{type(module).__name__}")
