"""torch's top-level functions that NumPy's namespace lacks, as ``gp.<name>``: what a PyTorch
tutorial types outside a module (``torch.tensor``, ``torch.cat``, ``torch.manual_seed``,
``torch.save(model.state_dict(), PATH)``, ``torch.randn_like``, ``torch.flatten(x, 1)``).

Each is a namespace function or a thin composition of them, so autograd, grilly.jit and every
device see it. Names NumPy also has keep NumPy's meaning in the namespace (``gp.max(x, 1)`` is
not torch's (values, indices); ``gp.zeros`` is float64 by default).
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from . import random as _random
from .array import api as gp
from .array.array import Array
from .nn import functional as _F
from .nn import serialization as _ser
from .nn._random import manual_seed
from .utils.helpers import randn, tensor

__all__ = ["cat", "flatten", "from_numpy", "load", "manual_seed", "poisson", "rand", "rand_like",
           "randn", "randn_like", "save", "sigmoid", "tensor"]


def cat(tensors: Sequence[Array], dim: int = 0, *, axis: int | None = None) -> Array:
    """Join arrays along an existing axis (torch.cat; ``gp.concat`` with ``dim``)."""
    if axis is not None:
        if dim != 0:
            raise TypeError("cat: give dim or axis, not both")
        dim = axis
    return gp.concat(list(tensors), axis=dim)


def flatten(input: Array, start_dim: int = 0, end_dim: int = -1) -> Array:
    """``input`` with axes start_dim..end_dim merged into one (torch.flatten)."""
    return input.flatten(start_dim, end_dim)


def from_numpy(ndarray: np.ndarray) -> Array:
    """An Array holding ``ndarray``'s values and dtype (torch.from_numpy) on the default device
    (a copy: grilly's memory is the device's)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    return gp.asarray(ndarray, copy=True)


def sigmoid(input: Array) -> Array:
    """1 / (1 + exp(-x)) (torch.sigmoid): grilly.nn.functional.sigmoid."""
    return _F.sigmoid(input)


def _like(x: Array, dtype, op: str):
    """The dtype of a ``*_like`` draw: ``dtype`` or x's, which must be real floating."""
    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected a grilly Array, got {type(x).__name__}")
    d = x.dtype if dtype is None else dtype
    if not gp.isdtype(d, "real floating"):
        raise TypeError(f"{op}: needs a real floating dtype, got {d}")
    return d


def randn_like(input: Array, *, dtype=None, device=None, requires_grad: bool = False) -> Array:
    """Standard normal draws shaped like ``input`` (its dtype and device unless given)."""
    d = _like(input, dtype, "randn_like")
    x = _random.default_generator.normal(0.0, 1.0, input.shape, dtype=d,
                                         device=input.device if device is None else device)
    return x.requires_grad_() if requires_grad else x


def rand(*size, dtype=None, device=None, requires_grad: bool = False, generator=None) -> Array:
    """Uniform draws in [0, 1) of ``size`` (``rand(2, 3)`` or ``rand((2, 3))``), float32."""
    z = randn(*size, dtype=dtype, device=device)   # checks the sizes as torch does
    gen = generator if generator is not None else _random.default_generator
    x = gen.uniform(0.0, 1.0, z.shape, dtype=z.dtype, device=z.device)
    return x.requires_grad_() if requires_grad else x


def rand_like(input: Array, *, dtype=None, device=None, requires_grad: bool = False) -> Array:
    """Uniform draws in [0, 1) shaped like ``input`` (its dtype and device unless given)."""
    d = _like(input, dtype, "rand_like")
    x = _random.default_generator.uniform(0.0, 1.0, input.shape, dtype=d,
                                          device=input.device if device is None else device)
    return x.requires_grad_() if requires_grad else x


def poisson(input: Array, generator=None) -> Array:
    """Poisson draws with rates ``input`` (torch.poisson): its shape, dtype and device; a
    negative or nan rate gives nan."""
    _like(input, None, "poisson")
    gen = generator if generator is not None else _random.default_generator
    return gen.poisson(input, dtype=input.dtype)


def save(obj, f: str | os.PathLike) -> None:
    """Write a state dict (a mapping of names to Arrays, or a Module's) to ``f`` as safetensors
    (torch.save of ``model.state_dict()``; other Python objects are not pickled)."""
    if isinstance(obj, (str, os.PathLike)):
        raise TypeError("save: the object comes first, then the path (torch.save(obj, f)); "
                        "for one array use numpy.save(path, x.numpy())")
    if not (isinstance(obj, Mapping) or hasattr(obj, "state_dict")):
        raise TypeError(f"save: only a state dict (a mapping of names to Arrays) or a Module is "
                        f"saved (safetensors), got {type(obj).__name__}")
    _ser.save(obj, f)


def load(f: str | os.PathLike, map_location=None, *, device=None, weights_only: bool = True):
    """Read a state dict written by ``save`` (torch.load; ``map_location`` or ``device`` picks
    the device, the default device otherwise)."""
    if map_location is not None and device is not None:
        raise TypeError("load: give map_location or device, not both")
    return _ser.load(f, device=device if device is not None else map_location)
