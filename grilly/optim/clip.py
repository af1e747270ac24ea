"""Gradient clipping (re-exported by grilly.nn.utils)."""
from __future__ import annotations

from ..array import api as gp

import math

from ..array.array import Array
from ..autograd.mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _params(parameters) -> list:
    ps = [parameters] if isinstance(parameters, Array) else list(parameters)
    return [p for p in ps if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None):
    """Scale the gradients in place so that their joint ``norm_type`` norm is at most
    ``max_norm``; returns the norm before clipping (a 0-d Array). ``foreach`` is accepted for
    torch's signature (grilly has no separate multi-tensor path)."""
    ps = _params(parameters)
    if not ps:
        return gp.asarray(0.0)
    norm_type = float(norm_type)
    with no_grad():
        # float16 gradients' powers and sums overflow long before their norm does (300**2 is
        # past float16's 65504): their partial norms are taken in float32, as torch's are
        gs = [gp.reshape(p.grad if p.grad.dtype != gp.float16 else gp.astype(p.grad, gp.float32),
                         (-1,)) for p in ps]
        if norm_type == math.inf:
            total = gp.max(gp.stack([gp.max(gp.abs(g)) for g in gs]))
        else:
            parts = gp.stack([gp.sum(gp.abs(g) ** norm_type) for g in gs])
            total = gp.sum(parts) ** (1.0 / norm_type)
        if error_if_nonfinite and not bool(gp.isfinite(total)):
            raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} is "
                               "non-finite; pass error_if_nonfinite=False to skip this check")
        coef = gp.clip(float(max_norm) / (total + 1e-6), max=1.0)
        for p in ps:
            p.grad *= gp.astype(coef, p.grad.dtype) if coef.dtype != p.grad.dtype else coef
    return total


def clip_grad_value_(parameters, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value] in place (``foreach`` as in
    clip_grad_norm_)."""
    with no_grad():
        for p in _params(parameters):
            p.grad[...] = gp.clip(p.grad, min=-float(clip_value), max=float(clip_value))
