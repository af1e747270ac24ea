"""torch.func's ``stack_module_state`` (the model-ensembling recipe: the stacked state of M
copies of a module, fed to ``vmap(functional_call)``) and ``linearize``."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Callable

from ..array import api as gp
from ..array.array import Array
from ..nn.module import Module
from .transforms import jvp

__all__ = ["linearize", "stack_module_state"]


def _stacked_leaf(arrays: list, name: str) -> Array:
    """The arrays stacked along a new first axis; a new leaf requiring grad where they all do."""
    grads = {a.requires_grad for a in arrays}
    if len(grads) > 1:
        raise RuntimeError(f"stack_module_state: Expected {name} from each model to have the "
                           "same .requires_grad")
    out = gp.stack([a.detach() for a in arrays])
    return out.requires_grad_() if grads == {True} else out


def stack_module_state(models: Sequence[Module]) -> tuple[dict, dict]:
    """(parameters, buffers) of M modules of one class, each name's M arrays stacked along a
    new first axis; the stacked parameters are new leaves (an optimizer can train them)."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not all(isinstance(m, Module) for m in models):
        raise TypeError("stack_module_state: expected grilly.nn Modules, got "
                        f"{sorted({type(m).__name__ for m in models})}")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if len({type(m) for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    out = []
    for named in ("named_parameters", "named_buffers"):
        tables = [dict(getattr(m, named)()) for m in models]
        for t in tables[1:]:
            if list(t) != list(tables[0]):
                raise RuntimeError(f"stack_module_state: the models' {named[6:]} differ in "
                                   f"names: {list(tables[0])} and {list(t)}")
        out.append({k: _stacked_leaf([t[k] for t in tables], k) for k in tables[0]})
    return out[0], out[1]


def linearize(func: Callable, *primals) -> tuple:
    """(``func(*primals)``, jvp_fn) where ``jvp_fn(*tangents)`` is the Jacobian-vector product
    of func at primals (each call runs ``jvp``: func is evaluated again, as torch's does once
    more)."""
    output = func(*primals)

    def jvp_fn(*tangents):
        """The Jacobian of func at the primals applied to ``tangents`` (one per primal)."""
        if len(tangents) != len(primals):
            raise ValueError(f"linearize's jvp_fn: expected {len(primals)} tangents (one per "
                             f"primal), got {len(tangents)}")
        return jvp(func, primals, tangents)[1]
    return output, jvp_fn
