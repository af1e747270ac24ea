"""``torch.nn.utils.clip_grad``: the total norm of gradients, scaling gradients by a norm, and
the clipping functions built from the two (all in grilly.optim.clip; this module is torch's
spelling)."""
from __future__ import annotations

import warnings
from collections.abc import Iterable

from ...array.array import Array
from ...optim.clip import (clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,
                           get_total_norm)

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm"]


def clip_grad_norm(parameters: Array | Iterable[Array], max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Array:
    """Deprecated spelling of ``clip_grad_norm_`` (warns, as torch's)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


