"""torch.func for grilly: ``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``,
``jacfwd``, ``hessian``, ``vmap``, ``functional_call``, ``stack_module_state`` and
``linearize``, with torch.func's signatures, over
pytrees (tuples, lists and dicts) of Arrays; written with grilly.autograd and namespace ops, so
they run on every device.

grilly has no forward mode and no batching rules: ``jvp`` and ``jacfwd`` are computed in reverse
mode (grilly/func/transforms.py) and ``vmap`` calls the function once per batch element
(grilly/func/vmap.py). docs/autograd.md lists the differences from torch.func.
"""
from __future__ import annotations

from ..nn.utils.stateless import functional_call
from .ensemble import linearize, stack_module_state
from .transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from .vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "stack_module_state", "vjp", "vmap"]
