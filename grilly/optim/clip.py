"""Gradient clipping (re-exported by grilly.nn.utils)."""
from __future__ import annotations

from ..array import api as gp

from collections.abc import Iterable

from ..array.defaults import get_default_dtype
from ..array.array import Array
from ..autograd.mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _params(parameters) -> list:
    ps = [parameters] if isinstance(parameters, Array) else list(parameters)
    return [p for p in ps if p.grad is not None]


def _arrays(tensors, op: str) -> list:
    ts = [tensors] if isinstance(tensors, Array) else list(tensors)
    for t in ts:
        if t is not None and not isinstance(t, Array):
            raise TypeError(f"{op}: expected grilly Arrays, got {type(t).__name__}")
    return [t for t in ts if t is not None]


def get_total_norm(tensors: Array | Iterable[Array], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None,
                   _op: str = "get_total_norm") -> Array:
    """The ``norm_type`` norm of the norms of ``tensors`` (as if they were one vector); a 0-d
    Array, 0.0 for no tensors."""
    ts = _arrays(tensors, _op)
    if not ts:
        return gp.asarray(0.0, dtype=get_default_dtype())   # torch.tensor(0.0): the default
    norm_type = float(norm_type)
    dev = ts[0].device
    with no_grad():
        # float16 powers overflow long before the norm does (300**2 is past float16's 65504):
        # partial norms in float32, as torch's
        norms = [gp.linalg.vector_norm(t if t.dtype != gp.float16 else gp.astype(t, gp.float32),
                                       ord=norm_type) for t in ts]
        norms = [n if n.device == dev else n.to_device(dev) for n in norms]
        dtypes = {n.dtype for n in norms}
        if len(dtypes) > 1:
            dt = gp.result_type(*dtypes)
            norms = [gp.astype(n, dt) for n in norms]
        total = gp.linalg.vector_norm(gp.stack(norms), ord=norm_type)
    if error_if_nonfinite and not bool(gp.isfinite(total)):
        raise RuntimeError(f"{_op}: the total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped; pass "
                           "error_if_nonfinite=False to scale the gradients by it anyway")
    return total


def clip_grads_with_norm_(parameters: Array | Iterable[Array], max_norm: float,
                          total_norm: Array, foreach: bool | None = None) -> None:
    """Scale every gradient in place by ``min(1, max_norm / (total_norm + 1e-6))``."""
    ps = _arrays(parameters, "clip_grads_with_norm_")
    grads = [p.grad for p in ps if p.grad is not None]
    if not grads:
        return
    if not isinstance(total_norm, Array):
        total_norm = gp.asarray(float(total_norm), device=grads[0].device)
    with no_grad():
        # no `if coef < 1`: reading it would be a device -> host sync
        coef = gp.clip(float(max_norm) / (total_norm + 1e-6), max=1.0)
        for g in grads:
            c = coef if coef.device == g.device else coef.to_device(g.device)
            g *= gp.astype(c, g.dtype) if c.dtype != g.dtype else c


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None):
    """Scale the gradients in place so that their joint ``norm_type`` norm is at most
    ``max_norm``; returns the norm before clipping (a 0-d Array): ``get_total_norm`` then
    ``clip_grads_with_norm_``, as torch's. ``foreach`` is accepted for torch's signature
    (grilly has no separate multi-tensor path)."""
    ps = _params(parameters)
    if not ps:
        return gp.asarray(0.0, dtype=get_default_dtype())   # torch.tensor(0.0): the default
    total = get_total_norm([p.grad for p in ps], norm_type, error_if_nonfinite,
                           _op="clip_grad_norm_")
    clip_grads_with_norm_(ps, max_norm, total)
    return total


def clip_grad_value_(parameters, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value] in place (``foreach`` as in
    clip_grad_norm_)."""
    with no_grad():
        for p in _params(parameters):
            p.grad[...] = gp.clip(p.grad, min=-float(clip_value), max=float(clip_value))
