"""SpikingJelly's ``functional`` helpers for training set-ups: ``kaiming_normal_conv_linear_weight``
(re-initialize every convolution and linear weight) and ``set_threshold_margin`` (per-class
output thresholds while training)."""
from __future__ import annotations

import math

from ...array import api as gp

from ...array.array import Array
from .. import init as _init
from ..conv_rnn_extra import Conv3d
from ..layers import Conv1d, Conv2d, Linear
from ..module import Module

__all__ = ["kaiming_normal_conv_linear_weight", "set_threshold_margin"]


def kaiming_normal_conv_linear_weight(net: Module) -> None:
    """SpikingJelly's ``functional.kaiming_normal_conv_linear_weight(net)``: every Conv1d/2d/3d
    and Linear weight of ``net`` (``snn.layer``'s too) redrawn by kaiming_normal_(a=sqrt(5))
    from gp.random; biases and other modules untouched."""
    if not isinstance(net, Module):
        raise TypeError(f"kaiming_normal_conv_linear_weight: net must be a grilly Module, got "
                        f"{type(net).__name__}")
    for m in net.modules():
        if isinstance(m, (Conv1d, Conv2d, Conv3d, Linear)):
            _init.kaiming_normal_(m.weight, a=math.sqrt(5))


def set_threshold_margin(output_layer: Module, label_one_hot: Array, eval_threshold: float = 1.0,
                         threshold0: float = 0.9, threshold1: float = 1.1) -> None:
    """SpikingJelly's ``functional.set_threshold_margin``: while training, the output neurons'
    ``v_threshold`` becomes ``threshold1`` at the labels of ``label_one_hot`` and ``threshold0``
    elsewhere (per neuron, shaped like the labels); in eval mode ``eval_threshold``."""
    if not hasattr(type(output_layer), "v_threshold"):
        raise TypeError(f"set_threshold_margin: output_layer must be a SpikingJelly-style node "
                        f"with a v_threshold, got {type(output_layer).__name__}")
    if not output_layer.training:
        output_layer.v_threshold = float(eval_threshold)
        return
    if not isinstance(label_one_hot, Array):
        raise TypeError(f"set_threshold_margin: label_one_hot must be a grilly Array, got "
                        f"{type(label_one_hot).__name__}")
    dt = getattr(output_layer, "_dtype", gp.float32)   # the node's, so float64 stays exact
    thr = gp.where(label_one_hot == 1, gp.full_like(label_one_hot, threshold1, dtype=dt),
                   gp.full_like(label_one_hot, threshold0, dtype=dt))
    output_layer.v_threshold = thr
