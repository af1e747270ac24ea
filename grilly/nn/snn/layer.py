"""SpikingJelly's ``activation_based.layer`` stateless wrappers with ``step_mode``: grilly.nn's
Linear, Conv2d, MaxPool2d, BatchNorm2d, Flatten with step_mode "s" (one step (B, ...)) or "m"
(a sequence (T, B, ...), run as one (T * B, ...) batch, as SpikingJelly's), and its Dropout,
whose mask is drawn once per sequence and kept until ``reset()`` (``snn.reset(net)``).
Parameters and state_dict keys are grilly.nn's (and torch's / SpikingJelly's).

    from grilly.nn.snn import layer
    net = nn.Sequential(layer.Conv2d(1, 8, 3, step_mode="m"), layer.BatchNorm2d(8, step_mode="m"),
                        snn.LIFNode(step_mode="m"), layer.MaxPool2d(2, step_mode="m"),
                        layer.Flatten(step_mode="m"), layer.Linear(8 * 13 * 13, 10, step_mode="m"))
"""
from __future__ import annotations

from ...array import api as gp
from ...array.array import Array
from .. import functional as NF
from .. import layers as _L
from ..module import Module

__all__ = ["Linear", "Conv2d", "MaxPool2d", "BatchNorm2d", "Flatten", "Dropout"]


def _check_mode(step_mode, op: str) -> str:
    if step_mode not in ("s", "m"):
        raise ValueError(f"{op}: step_mode must be 's' (one step per call) or 'm' (a (T, B, ...) "
                         f"sequence per call), got {step_mode!r}")
    return step_mode


class _StepMode:
    """forward in step_mode 's' as the grilly.nn layer's; in 'm' on (T * B, ...) at once."""

    _min_ndim = 3

    def forward(self, x: Array) -> Array:
        """One step (step_mode 's') or a (T, B, ...) sequence ('m')."""
        op = type(self).__name__
        if _check_mode(self.step_mode, op) == "s":
            return super().forward(x)
        if not isinstance(x, gp.Array) or x.ndim < self._min_ndim:
            raise ValueError(f"{op}: step_mode 'm' expects a sequence (T, B, ...) of at least "
                             f"{self._min_ndim} dims, got {getattr(x, 'shape', type(x).__name__)}")
        t, b = x.shape[:2]
        y = super().forward(gp.reshape(x, (t * b,) + tuple(x.shape[2:])))
        return gp.reshape(y, (t, b) + tuple(y.shape[1:]))

    def extra_repr(self) -> str:
        return super().extra_repr() + f", step_mode={self.step_mode}"


class Linear(_StepMode, _L.Linear):
    """SpikingJelly's ``layer.Linear(in_features, out_features, bias, step_mode)``."""

    _min_ndim = 2

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 step_mode: str = "s", **kw) -> None:
        super().__init__(in_features, out_features, bias, **kw)
        self.step_mode = _check_mode(step_mode, "Linear")


class Conv2d(_StepMode, _L.Conv2d):
    """SpikingJelly's ``layer.Conv2d(..., step_mode)``: (T, B, C, H, W) sequences in 'm'."""

    _min_ndim = 5

    def __init__(self, *args, step_mode: str = "s", **kw) -> None:
        super().__init__(*args, **kw)
        self.step_mode = _check_mode(step_mode, "Conv2d")


class MaxPool2d(_StepMode, _L.MaxPool2d):
    """SpikingJelly's ``layer.MaxPool2d(..., step_mode)``."""

    _min_ndim = 5

    def __init__(self, *args, step_mode: str = "s", **kw) -> None:
        super().__init__(*args, **kw)
        self.step_mode = _check_mode(step_mode, "MaxPool2d")


class BatchNorm2d(_StepMode, _L.BatchNorm2d):
    """SpikingJelly's ``layer.BatchNorm2d(..., step_mode)``: statistics over T * B in 'm'."""

    _min_ndim = 5

    def __init__(self, *args, step_mode: str = "s", **kw) -> None:
        super().__init__(*args, **kw)
        self.step_mode = _check_mode(step_mode, "BatchNorm2d")

    def forward(self, x: Array) -> Array:
        """One step (B, C, H, W) or, in step_mode 'm', a sequence (T, B, C, H, W)."""
        if self.step_mode == "m" and getattr(x, "ndim", 5) != 5:
            raise ValueError(f"BatchNorm2d: step_mode 'm' expects (T, B, C, H, W), got shape "
                             f"{x.shape}")
        return super().forward(x)


class Flatten(_StepMode, _L.Flatten):
    """SpikingJelly's ``layer.Flatten(start_dim=1, end_dim=-1, step_mode)``: the dims of one
    step (of T * B merged, in 'm')."""

    _min_ndim = 2

    def __init__(self, start_dim: int = 1, end_dim: int = -1, step_mode: str = "s") -> None:
        super().__init__(start_dim, end_dim)
        self.step_mode = _check_mode(step_mode, "Flatten")


class Dropout(Module):
    """SpikingJelly's ``layer.Dropout(p=0.5, step_mode)``: while training, one mask (0 or
    1 / (1 - p)) drawn at the first step of a sequence multiplies every step until ``reset()``
    (or ``snn.reset(net)``); identity in eval mode."""

    def __init__(self, p: float = 0.5, step_mode: str = "s") -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1:
            raise ValueError(f"Dropout: p must be in [0, 1), got {p!r}")
        self.p, self.step_mode = float(p), _check_mode(step_mode, "Dropout")
        self.mask = None

    def forward(self, x: Array) -> Array:
        """x times the sequence's mask (training), or x (eval)."""
        _check_mode(self.step_mode, "Dropout")
        if not self.training:
            return x
        one = x if self.step_mode == "s" else x[0]
        if self.mask is None or self.mask.shape != one.shape:
            self.mask = NF.dropout(gp.ones_like(one), self.p, training=True)
        return x * self.mask

    def reset(self) -> None:
        """A new sequence: the next training call draws a new mask."""
        self.mask = None

    reset_state = reset

    def extra_repr(self) -> str:
        return f"p={self.p}, step_mode={self.step_mode}"
