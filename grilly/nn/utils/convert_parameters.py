"""``torch.nn.utils.convert_parameters``: all parameters as one vector and back."""
from __future__ import annotations

from collections.abc import Iterable

from ...array import api as gp
from ...array.array import Array
from ...autograd.mode import no_grad

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Array]) -> Array:
    """All parameters flattened and concatenated into one 1-D array (differentiable)."""
    ps = list(parameters)
    if not ps:
        raise ValueError("parameters_to_vector: expected at least one parameter")
    return gp.concat([gp.reshape(p, (-1,)) for p in ps])


def vector_to_parameters(vec: Array, parameters: Iterable[Array]) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into ``parameters`` in place."""
    ps = list(parameters)
    if not isinstance(vec, Array) or vec.ndim != 1:
        raise TypeError(f"vector_to_parameters: vec must be a 1-D grilly Array, got {vec!r:.80}")
    total = sum(p.size for p in ps)
    if vec.size != total:
        raise ValueError(f"vector_to_parameters: vec has {vec.size} elements, the parameters "
                         f"{total}")
    start = 0
    with no_grad():
        for p in ps:
            p[...] = gp.reshape(vec[start:start + p.size], p.shape)
            start += p.size
