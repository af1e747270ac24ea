"""SpikingJelly's ``activation_based.layer``: grilly.nn's stateless layers with a ``step_mode``
("s": one step (B, ...); "m": a sequence (T, B, ...) run as one (T * B, ...) batch, as
SpikingJelly's), its containers, and its stateful layers (Dropout and Dropout2d keeping their
mask over a sequence, SynapseFilter, Delay) and VotingLayer, PrintShapeModule (layer_extra.py and
layer_sj_extra.py: the weight-standardized, unpooling and SNN BatchNorm layers, DropConnectLinear,
NeuNorm, BNTT, the time-last containers and the attention layers). The constructors
take SpikingJelly's positional order (``step_mode`` after torch's arguments; grilly's
``device``/``dtype`` by keyword); parameters and state_dict keys are torch's / SpikingJelly's.

    from grilly.nn.snn import layer
    net = nn.Sequential(layer.Conv2d(1, 8, 3, step_mode="m"), layer.BatchNorm2d(8, step_mode="m"),
                        snn.LIFNode(step_mode="m"), layer.MaxPool2d(2, step_mode="m"),
                        layer.Flatten(step_mode="m"), layer.Linear(8 * 13 * 13, 10, step_mode="m"))
"""
from __future__ import annotations

from ...array import api as gp
from ...array.array import Array
from .. import conv_rnn_extra as _C, layers as _L, norm_pool as _N
from .checks import _check_mode
from .containers import (ElementWiseRecurrentContainer, LinearRecurrentContainer,
                         MultiStepContainer, SeqToANNContainer, StepModeContainer)
from .layer_extra import *  # noqa: F401,F403
from .layer_extra import __all__ as _extra
from .layer_online import GradwithTrace, OTTTSequential, ReplaceforGrad, SpikeTraceOp
from .layer_misc import Delay, Dropout, Dropout2d, PrintShapeModule, SynapseFilter, VotingLayer
from .layer_sj_extra import *  # noqa: F401,F403
from .layer_sj_extra import __all__ as _sj_extra

__all__ = ["Linear", "Flatten", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
           "ConvTranspose2d", "ConvTranspose3d", "Upsample", "GroupNorm", "BatchNorm1d",
           "BatchNorm2d", "BatchNorm3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d",
           "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           "AdaptiveAvgPool3d", "Dropout", "Dropout2d", "VotingLayer", "SynapseFilter", "Delay",
           "PrintShapeModule", "SeqToANNContainer", "MultiStepContainer", "StepModeContainer",
           "ElementWiseRecurrentContainer", "LinearRecurrentContainer", "OTTTSequential",
           "ReplaceforGrad", "GradwithTrace", "SpikeTraceOp", *_extra, *_sj_extra]


class _StepMode:
    """A grilly.nn layer with SpikingJelly's ``step_mode``: 's' the layer's forward, 'm' on the
    sequence's (T * B, ...) merge. ``_npos``: SpikingJelly's positional arguments before
    ``step_mode``; ``_shapes``: the sequence shapes it takes in 'm' (None: any (T, B, ...))."""

    _npos = 0
    _shapes = None

    def __init__(self, *args, step_mode: str = "s", **kw) -> None:
        op = type(self).__name__
        if len(args) == self._npos + 1:   # step_mode given positionally, as SpikingJelly allows
            args, step_mode = args[:-1], args[-1]
        elif len(args) > self._npos + 1:
            raise TypeError(f"{op}: takes at most {self._npos + 1} positional arguments "
                            f"(the last step_mode), got {len(args)}; give device/dtype by keyword")
        super().__init__(*args, **kw)
        self.step_mode = _check_mode(step_mode, op)

    def forward(self, x: Array) -> Array:
        """One step (step_mode 's') or a (T, B, ...) sequence ('m')."""
        op = type(self).__name__
        if _check_mode(self.step_mode, op) == "s":
            return super().forward(x)
        nd = getattr(x, "ndim", -1)
        if not isinstance(x, gp.Array) or nd < 2 or (self._shapes and nd not in self._shapes):
            want = " or ".join(self._shapes.values()) if self._shapes else "(T, B, ...)"
            raise ValueError(f"{op}: step_mode 'm' expects {want}, got shape "
                             f"{getattr(x, 'shape', type(x).__name__)}")
        t, b = x.shape[:2]
        y = super().forward(gp.reshape(x, (t * b,) + tuple(x.shape[2:])))
        if isinstance(y, tuple):   # MaxPool's (values, indices), each split again
            return tuple(gp.reshape(v, (t, b) + tuple(v.shape[1:])) for v in y)
        return gp.reshape(y, (t, b) + tuple(y.shape[1:]))

    def extra_repr(self) -> str:
        return super().extra_repr() + f", step_mode={self.step_mode}"


_S1 = {4: "(T, B, C, L)"}
_S2 = {5: "(T, B, C, H, W)"}
_S3 = {6: "(T, B, C, D, H, W)"}


def _wrap(base: type, npos: int, shapes: dict | None, sig: str) -> type:
    """SpikingJelly's ``layer.<base>``: ``base`` with a step_mode."""
    cls = type(base.__name__, (_StepMode, base), {
        "_npos": npos, "_shapes": shapes, "__module__": __name__,
        "__doc__": f"SpikingJelly's ``layer.{base.__name__}({sig}, step_mode='s')``: grilly.nn's "
                   f"{base.__name__}; in step_mode 'm' a sequence "
                   f"{' or '.join(shapes.values()) if shapes else '(T, B, ...)'} at once."})
    return cls


_CONV = "in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, " \
        "padding_mode"
_CONVT = "in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, " \
         "bias, dilation, padding_mode"
_MAXP = "kernel_size, stride, padding, dilation, return_indices, ceil_mode"
_AVGP = "kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override"
_BN = "num_features, eps, momentum, affine, track_running_stats"

Conv1d = _wrap(_L.Conv1d, 9, _S1, _CONV)
Conv2d = _wrap(_L.Conv2d, 9, _S2, _CONV)
Conv3d = _wrap(_C.Conv3d, 9, _S3, _CONV)
ConvTranspose1d = _wrap(_C.ConvTranspose1d, 10, _S1, _CONVT)
ConvTranspose2d = _wrap(_C.ConvTranspose2d, 10, _S2, _CONVT)
ConvTranspose3d = _wrap(_C.ConvTranspose3d, 10, _S3, _CONVT)
Upsample = _wrap(_L.Upsample, 5, None,
                 "size, scale_factor, mode, align_corners, recompute_scale_factor")
GroupNorm = _wrap(_N.GroupNorm, 4, None, "num_groups, num_channels, eps, affine")
BatchNorm1d = _wrap(_L.BatchNorm1d, 5, {3: "(T, B, C)", 4: "(T, B, C, L)"}, _BN)
BatchNorm2d = _wrap(_L.BatchNorm2d, 5, _S2, _BN)
BatchNorm3d = _wrap(_N.BatchNorm3d, 5, _S3, _BN)
MaxPool1d = _wrap(_L.MaxPool1d, 6, _S1, _MAXP)
MaxPool2d = _wrap(_L.MaxPool2d, 6, _S2, _MAXP)
MaxPool3d = _wrap(_N.MaxPool3d, 6, _S3, _MAXP)
AvgPool1d = _wrap(_L.AvgPool1d, 5, _S1, _AVGP.rsplit(",", 1)[0])
AvgPool2d = _wrap(_L.AvgPool2d, 6, _S2, _AVGP)
AvgPool3d = _wrap(_N.AvgPool3d, 6, _S3, _AVGP)
AdaptiveAvgPool1d = _wrap(_N.AdaptiveAvgPool1d, 1, _S1, "output_size")
AdaptiveAvgPool2d = _wrap(_L.AdaptiveAvgPool2d, 1, _S2, "output_size")
AdaptiveAvgPool3d = _wrap(_N.AdaptiveAvgPool3d, 1, _S3, "output_size")
Flatten = _wrap(_L.Flatten, 2, None, "start_dim=1, end_dim=-1")
Flatten.__doc__ += " (the dims of one step: start_dim counts from the batch axis)"


class Linear(_StepMode, _L.Linear):
    """SpikingJelly's ``layer.Linear(in_features, out_features, bias=True, step_mode='s')``:
    grilly.nn's Linear on the last axis of one step or of a whole (T, B, ..., F) sequence."""

    _npos = 3

    def forward(self, x: Array) -> Array:
        """x @ W.T + b on the last axis, whatever the step mode."""
        _check_mode(self.step_mode, "Linear")
        return _L.Linear.forward(self, x)
