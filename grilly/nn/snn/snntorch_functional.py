"""snnTorch's ``snntorch.functional`` spellings, in ``grilly.nn.snn.functional`` (``import
grilly.nn.snn.functional as SF``): the loss factories (``SF.ce_rate_loss()`` returns the loss
object, called as ``loss_fn(spk_rec, targets)``), ``SF.accuracy_rate`` and
``SF.accuracy_temporal``. grilly.nn.snn's own ``snn.ce_rate_loss(spk, y)`` ... are the losses
as functions."""
from __future__ import annotations

from . import loss as _L

__all__ = ["ce_rate_loss", "ce_count_loss", "mse_count_loss", "ce_max_membrane_loss",
           "mse_membrane_loss", "mse_temporal_loss", "ce_temporal_loss", "l1_rate_sparsity",
           "accuracy_rate", "accuracy_temporal"]


def _unsupported(op: str, population_code=False, num_classes=False) -> None:
    if population_code or num_classes:
        raise NotImplementedError(f"{op}: population_code / num_classes are not supported")


class _BoundLoss:
    """A grilly loss function as snnTorch's loss object: ``loss_fn(out, targets)``."""

    def __init__(self, fn) -> None:
        self._fn = fn

    def __call__(self, out, targets):
        return self._fn(out, targets)


def ce_rate_loss(population_code: bool = False, num_classes=False, reduction: str = "mean",
                 weight=None) -> _L.CERateLoss:
    """snnTorch's ``SF.ce_rate_loss()``: cross-entropy of every step's spikes, as a callable."""
    # (snnTorch 1.0's own population code here needs a weight, and then weighs the outputs)
    _unsupported("ce_rate_loss", population_code, num_classes)
    return _L.CERateLoss(reduction, weight)


def ce_count_loss(population_code: bool = False, num_classes=False, reduction: str = "mean",
                  weight=None) -> _L.CECountLoss:
    """snnTorch's ``SF.ce_count_loss()``: cross-entropy of the spike counts, as a callable."""
    return _L.CECountLoss(population_code, num_classes, reduction, weight)


def mse_count_loss(correct_rate: float = 1, incorrect_rate: float = 0,
                   population_code: bool = False, num_classes=False, reduction: str = "mean",
                   weight=None) -> _L.MSECountLoss:
    """snnTorch's ``SF.mse_count_loss(correct_rate, incorrect_rate)``, as a callable."""
    return _L.MSECountLoss(correct_rate, incorrect_rate, population_code, num_classes, reduction,
                           weight)


def ce_max_membrane_loss(reduction: str = "mean", weight=None) -> _BoundLoss:
    """snnTorch's ``SF.ce_max_membrane_loss()``: cross-entropy of each output's largest
    membrane over time, called as ``loss_fn(mem_rec, targets)``."""
    _L._reduction(reduction, "ce_max_membrane_loss")
    return _BoundLoss(lambda mem, y: _L.ce_max_membrane_loss(mem, y, reduction, weight))


def mse_membrane_loss(time_var_targets: bool = False, on_target: float = 1,
                      off_target: float = 0, reduction: str = "mean",
                      weight=None) -> _L.MSEMembraneLoss:
    """snnTorch's ``SF.mse_membrane_loss(...)``, as a callable."""
    return _L.MSEMembraneLoss(time_var_targets, on_target, off_target, reduction, weight)


def mse_temporal_loss(target_is_time: bool = False, on_target: float = 0,
                      off_target: float = -1, tolerance: float = 0, multi_spike: bool = False,
                      reduction: str = "mean", weight=None) -> _L.MSETemporalLoss:
    """snnTorch's ``SF.mse_temporal_loss(...)``, as a callable."""
    return _L.MSETemporalLoss(target_is_time, on_target, off_target, tolerance, multi_spike,
                              reduction, weight)


def ce_temporal_loss(inverse: str = "negate", reduction: str = "mean",
                     weight=None) -> _L.CETemporalLoss:
    """snnTorch's ``SF.ce_temporal_loss(...)``, as a callable."""
    return _L.CETemporalLoss(inverse, reduction, weight)


def l1_rate_sparsity(Lambda: float = 1e-5) -> _L.L1RateSparsity:  # noqa: N803
    """snnTorch's ``SF.l1_rate_sparsity(Lambda)``: the regularizer, called as ``reg(spk)``."""
    return _L.L1RateSparsity(Lambda)


def accuracy_rate(spk_out, targets, population_code: bool = False, num_classes=False) -> float:
    """snnTorch's ``SF.accuracy_rate(spk_out, targets)``: the most-spiking output's accuracy."""
    return _L.accuracy_rate(spk_out, targets, population_code, num_classes)


accuracy_temporal = _L.accuracy_temporal
