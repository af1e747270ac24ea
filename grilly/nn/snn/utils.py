"""snnTorch's ``utils`` (``from grilly.nn.snn import utils``): ``utils.reset(net)``,
``utils.data_subset(dataset, subset, idx)``."""
from __future__ import annotations

from .functional import reset_net as _reset_net

__all__ = ["reset", "data_subset"]


def reset(net):
    """snnTorch's ``utils.reset(net)``: every neuron's hidden state forgotten (a new sequence),
    as ``snn.reset(net)``; returns net."""
    return _reset_net(net)


def data_subset(dataset, subset: int, idx: int = 0):
    """snnTorch's ``utils.data_subset``: keep the ``idx``-th of ``subset`` equal slices of
    ``dataset.data`` and ``dataset.targets`` (len // subset items, in order; in place, and
    returned); subset <= 1 keeps everything."""
    for name, v in (("subset", subset), ("idx", idx)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"data_subset: {name} must be an int, got {type(v).__name__}")
    if not (hasattr(dataset, "data") and hasattr(dataset, "targets")):
        raise TypeError(f"data_subset: dataset must have .data and .targets, got "
                        f"{type(dataset).__name__}")
    if subset > 1:
        step = len(dataset.data) // subset
        sl = slice(step * idx, step * (idx + 1))
        dataset.data, dataset.targets = dataset.data[sl], dataset.targets[sl]
    return dataset
