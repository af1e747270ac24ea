"""snnTorch's ``utils`` (``from grilly.nn.snn import utils``): ``utils.reset(net)``."""
from __future__ import annotations

from .functional import reset_net as _reset_net

__all__ = ["reset"]


def reset(net):
    """snnTorch's ``utils.reset(net)``: every neuron's hidden state forgotten (a new sequence),
    as ``snn.reset(net)``; returns net."""
    return _reset_net(net)
