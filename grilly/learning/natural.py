"""Natural gradient: the gradient preconditioned by the inverse Fisher information,
``(F + damping I)^-1 g``. Diagonal Fisher: elementwise ``g / (F + damping)``; block-diagonal
(one full matrix per parameter, e.g. per layer): a linear solve per block on the flattened
gradient. ``grilly.optim.NaturalGradient`` keeps a running diagonal estimate instead."""
from __future__ import annotations

from ..array import api as gp
from ..array.array import Array
from ..compute import _real

__all__ = ["natural_gradient"]


def _one(g: Array, f: Array, damping: float, op: str) -> Array:
    if f.shape == g.shape:
        return g / (f + damping)
    n = g.size
    if f.shape != (n, n):
        raise ValueError(f"{op}: a Fisher block must have the gradient's shape {g.shape} "
                         f"(diagonal) or be ({n}, {n}) (full block), got {f.shape}")
    eye = gp.eye(n, dtype=f.dtype, device=f.device)
    x = gp.linalg.solve(f + damping * eye, gp.reshape(g, (n, 1)))
    return gp.reshape(x, g.shape)


def natural_gradient(gradient, fisher, damping: float = 1e-8):
    """``(F + damping I)^-1 g`` for one gradient Array (F diagonal, shaped like it, or a full
    (n, n) block) or for a list/dict of gradients with matching Fisher blocks."""
    op = "natural_gradient"
    if not _real(op, "damping", damping) >= 0:
        raise ValueError(f"{op}: damping must be >= 0, got {damping}")
    if isinstance(gradient, dict):
        if not isinstance(fisher, dict):
            raise TypeError(f"{op}: a dict of gradients needs a dict of Fisher blocks, got "
                            f"{type(fisher).__name__}")
        missing = [k for k in gradient if k not in fisher]
        if missing:
            raise ValueError(f"{op}: no Fisher block for the gradient(s) {missing}")
        return {k: _one(g, fisher[k], float(damping), op) for k, g in gradient.items()}
    if isinstance(gradient, (list, tuple)):
        if not isinstance(fisher, (list, tuple)):
            raise TypeError(f"{op}: a list of gradients needs a list of Fisher blocks, got "
                            f"{type(fisher).__name__}")
        if len(gradient) != len(fisher):
            raise ValueError(f"{op}: {len(gradient)} gradients but {len(fisher)} Fisher blocks")
        return [_one(g, f, float(damping), op) for g, f in zip(gradient, fisher)]
    if not isinstance(gradient, Array) or not isinstance(fisher, Array):
        raise TypeError(f"{op}: gradient and fisher must be grilly Arrays (or lists/dicts of "
                        f"them), got {type(gradient).__name__} and {type(fisher).__name__}")
    return _one(gradient, fisher, float(damping), op)
