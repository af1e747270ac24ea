"""Losses on spike trains and membrane traces (time first: (T, batch, classes)), as
snnTorch.functional defines them: mse_count_loss, ce_rate_loss, ce_count_loss,
ce_max_membrane_loss."""
from __future__ import annotations

from ...array import api as gp

from ...array.array import Array
from ...array.dispatch import hooks as _hooks
from .. import functional as NF
from .functional import _check_input

__all__ = ["mse_count_loss", "ce_rate_loss", "ce_count_loss", "ce_max_membrane_loss",
           "MSECountLoss", "CERateLoss", "CECountLoss", "accuracy_rate"]


def _check(spk, targets, op: str):
    spk = _check_input(spk, op, "spk_out")
    if spk.ndim != 3:
        raise ValueError(f"{op}: spk_out must be (T, batch, classes), got shape {spk.shape}")
    if not isinstance(targets, gp.Array) or not gp.isdtype(targets.dtype, "integral"):
        raise TypeError(f"{op}: targets must be an integer Array of class indices, got "
                        f"{getattr(targets, 'dtype', type(targets).__name__)}")
    if targets.shape != spk.shape[1:2]:
        raise ValueError(f"{op}: targets shape {targets.shape} does not match the batch "
                         f"{spk.shape[1]}")
    if targets.size and _hooks.host_op is None:   # (a grilly.jit trace cannot read them)
        # one host read where the labels are good (a sync: snnTorch raises on a bad label too)
        c = spk.shape[2]
        if bool(gp.any(gp.logical_or(targets < 0, targets >= c))):
            lo, hi = int(gp.min(targets)), int(gp.max(targets))
            raise ValueError(f"{op}: targets must be class indices in [0, {c}), got values in "
                             f"[{lo}, {hi}]")
    return spk


def mse_count_loss(spk_out: Array, targets: Array, correct_rate: float = 1.0,
                   incorrect_rate: float = 0.0, reduction: str = "mean") -> Array:
    """MSE between spike counts and int(T * rate) targets, divided by T (as snnTorch does)."""
    op = "mse_count_loss"
    spk = _check(spk_out, targets, op)
    if not (0.0 <= incorrect_rate <= 1.0 and 0.0 <= correct_rate <= 1.0):
        raise ValueError(f"{op}: correct_rate and incorrect_rate must be in [0, 1]")
    steps, classes = spk.shape[0], spk.shape[2]
    on, off = int(steps * correct_rate), int(steps * incorrect_rate)
    hot = NF.one_hot(targets, classes, dtype=spk.dtype)
    want = hot * float(on - off) + float(off)
    return NF.mse_loss(gp.sum(spk, axis=0), want, reduction=reduction) / float(steps)


def ce_rate_loss(spk_out: Array, targets: Array) -> Array:
    """Cross-entropy of every step's output (spikes as logits), averaged over steps."""
    spk = _check(spk_out, targets, "ce_rate_loss")
    steps = spk.shape[0]
    flat = gp.reshape(spk, (steps * spk.shape[1], spk.shape[2]))
    tgt = gp.reshape(gp.broadcast_to(gp.expand_dims(targets, axis=0), (steps, spk.shape[1])), (-1,))
    return NF.cross_entropy(flat, tgt)


def ce_count_loss(spk_out: Array, targets: Array) -> Array:
    """Cross-entropy with the spike counts over time as logits."""
    spk = _check(spk_out, targets, "ce_count_loss")
    return NF.cross_entropy(gp.sum(spk, axis=0), targets)


def ce_max_membrane_loss(mem_out: Array, targets: Array) -> Array:
    """Cross-entropy with each output's largest membrane potential over time as logits."""
    mem = _check(mem_out, targets, "ce_max_membrane_loss")
    return NF.cross_entropy(gp.max(mem, axis=0), targets)


def accuracy_rate(spk_out: Array, targets: Array) -> float:
    """The fraction of samples whose most-spiking output (spike count over time, the first
    class on a tie) is the target: snnTorch's ``SF.accuracy_rate``, a Python float."""
    spk = _check(spk_out, targets, "accuracy_rate")
    if spk.shape[1] == 0:
        raise ValueError("accuracy_rate: the batch is empty")
    pred = gp.argmax(gp.sum(spk, axis=0), axis=1)
    return float(gp.mean(gp.astype(pred == targets, gp.float64)))


class _Loss:
    fn = staticmethod(ce_rate_loss)

    def __call__(self, spk_out: Array, targets: Array) -> Array:
        return type(self).fn(spk_out, targets, **self.kw)

    def __init__(self, **kw):
        self.kw = kw


class MSECountLoss(_Loss):
    """``mse_count_loss`` as a callable object (snnTorch's ``SF.mse_count_loss(...)``)."""
    fn = staticmethod(mse_count_loss)

    def __init__(self, correct_rate: float = 1.0, incorrect_rate: float = 0.0):
        super().__init__(correct_rate=correct_rate, incorrect_rate=incorrect_rate)


class CERateLoss(_Loss):
    """``ce_rate_loss`` as a callable object."""
    fn = staticmethod(ce_rate_loss)


class CECountLoss(_Loss):
    """``ce_count_loss`` as a callable object."""
    fn = staticmethod(ce_count_loss)
