"""Hebbian subspace learning on centred inputs x (d,) or batches (n, d), y = W x:

    Oja (one component, w (d,)):          w <- w + lr <y (x - y w)>
    Sanger / GHA (k components, W (k, d)): W <- W + lr <y x^T - LT(y y^T) W>

LT keeps the lower triangle (with the diagonal); <.> is the batch mean. Oja's w converges to the
unit-norm first principal component, Sanger's rows to the first k in order (up to sign)."""
from __future__ import annotations

from ..array import api as gp
from ..array.array import Array
from ..compute import _real

__all__ = ["oja_step", "sanger_step"]


def _batch(x, d: int, op: str) -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"{op}: x must be a grilly Array, got {type(x).__name__}")
    if x.ndim == 1:
        x = gp.reshape(x, (1, -1))
    if x.ndim != 2 or x.shape[1] != d:
        raise ValueError(f"{op}: x must be ({d},) or (n, {d}), got shape {x.shape}")
    if x.shape[0] == 0:
        raise ValueError(f"{op}: x has no rows (the step is a mean over the batch)")
    return x


def oja_step(w: Array, x: Array, lr: float = 0.01) -> Array:
    """One step of Oja's rule for the weight vector ``w`` (d,); returns the new w."""
    if not isinstance(w, Array) or w.ndim != 1:
        raise ValueError("oja_step: w must be a 1-D grilly Array (d,)")
    x = _batch(x, w.shape[0], "oja_step")
    lr = _real("oja_step", "lr", lr)
    y = gp.matmul(x, w)                                   # (n,)
    dw = gp.matmul(y, x) - gp.sum(y * y) * w              # sum_n y x - y^2 w
    return w + (lr / x.shape[0]) * dw


def sanger_step(w: Array, x: Array, lr: float = 0.01) -> Array:
    """One step of Sanger's generalised Hebbian rule for ``w`` (k, d); returns the new W."""
    if not isinstance(w, Array) or w.ndim != 2:
        raise ValueError("sanger_step: w must be a 2-D grilly Array (k, d)")
    x = _batch(x, w.shape[1], "sanger_step")
    lr = _real("sanger_step", "lr", lr)
    y = gp.matmul(x, gp.matrix_transpose(w))              # (n, k)
    yt = gp.matrix_transpose(y)
    dw = gp.matmul(yt, x) - gp.matmul(gp.tril(gp.matmul(yt, y)), w)
    return w + (lr / x.shape[0]) * dw
