"""torch's top-level functions that NumPy's namespace lacks, as ``gp.<name>``: what a PyTorch
tutorial types outside a module (``torch.tensor``, ``torch.cat``, ``torch.manual_seed``,
``torch.save(model.state_dict(), PATH)``, ``torch.randn_like``, ``torch.flatten(x, 1)``).

Each is a namespace function or a thin composition of them, so autograd, grilly.jit and every
device see it; most call the torch.Tensor method of the same name (grilly/array/torch_methods.py).
Names NumPy also has keep NumPy's meaning in the namespace (``gp.max(x, 1)`` is not torch's
(values, indices); ``gp.zeros`` is float64 by default) unless torch's ``dim=`` is passed.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from . import random as _random
from .array import api as gp
from .array.defaults import float_or_default
from .array import npyio as _npyio
from .array.array import Array
from .linalg import cholesky_inverse, cholesky_solve, geqrf, lu_unpack
from .nn import functional as _F
from .nn import serialization as _ser
from .nn._random import manual_seed
from .special import digamma, erf, erfc, erfinv, i0, logit, mvlgamma, polygamma, xlogy
from .special import gammainc as igamma
from .special import gammaincc as igammac
from .special import gammaln as lgamma
from .utils.helpers import _shape, randn, tensor

__all__ = ["Generator", "Tensor", "addmm", "baddbmm", "bernoulli", "bmm", "cat", "clamp",
           "default_generator", "flatten", "from_numpy", "gather", "get_rng_state", "initial_seed",
           "is_tensor", "load", "logsumexp", "manual_seed", "multinomial", "norm", "normal",
           "numel", "poisson", "rand", "rand_like", "randint", "randint_like", "randn",
           "randn_like", "randperm", "save", "scatter", "scatter_add", "seed", "set_rng_state",
           "sigmoid", "tensor", "relu", "softmax", "log_softmax", "mm", "as_tensor",
           "erf", "erfc", "erfinv", "lgamma", "digamma", "polygamma", "mvlgamma", "logit",
           "xlogy", "i0", "igamma", "igammac",
           # torch's top-level linalg helpers (grilly.linalg's functions)
           "cholesky_inverse", "cholesky_solve", "geqrf", "lu_unpack"]

Tensor = Array   # torch.Tensor for isinstance and type hints (make arrays with gp.tensor)
Generator = _random.Generator   # torch.Generator: gp.Generator().manual_seed(0), generator=g
default_generator = _random.default_generator   # torch.default_generator


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


def is_tensor(obj) -> bool:
    """Whether ``obj`` is a grilly Array (torch.is_tensor)."""
    return isinstance(obj, Array)


def _array(op: str, x) -> Array:
    """``x``, which must be an Array (torch's functions take tensors, not lists)."""
    if not isinstance(x, Array):
        raise TypeError(f"{op}: input must be a grilly Array, got {type(x).__name__}")
    return x


def numel(input: Array) -> int:
    """The number of elements (torch.numel)."""
    return _array("numel", input).numel()


def clamp(input: Array, min=None, max=None) -> Array:   # noqa: A002 (torch's names)
    """Each element limited to [min, max] (torch.clamp): Array.clamp."""
    return _array("clamp", input).clamp(min, max)


def bmm(input: Array, mat2: Array) -> Array:
    """The batched matrix product of two 3-D arrays (torch.bmm)."""
    return _array("bmm", input).bmm(mat2)


def addmm(input: Array, mat1: Array, mat2: Array, *, beta=1, alpha=1) -> Array:
    """beta * input + alpha * (mat1 @ mat2) (torch.addmm)."""
    return _array("addmm", input).addmm(mat1, mat2, beta=beta, alpha=alpha)


def baddbmm(input: Array, batch1: Array, batch2: Array, *, beta=1, alpha=1) -> Array:
    """beta * input + alpha * (batch1 @ batch2), batched (torch.baddbmm)."""
    return _array("baddbmm", input).baddbmm(batch1, batch2, beta=beta, alpha=alpha)


def gather(input: Array, dim: int, index: Array) -> Array:
    """input's elements at ``index`` along ``dim`` (torch.gather)."""
    return _array("gather", input).gather(dim, index)


def scatter(input: Array, dim: int, index: Array, src=None, *, value=None,
            reduce=None) -> Array:
    """A copy of input with ``src`` (or ``value``) written at ``index`` along ``dim``."""
    return _array("scatter", input).scatter(dim, index, src, value=value, reduce=reduce)


def scatter_add(input: Array, dim: int, index: Array, src: Array) -> Array:
    """input plus ``src`` added at ``index`` along ``dim`` (torch.scatter_add)."""
    return _array("scatter_add", input).scatter_add(dim, index, src)


def norm(input: Array, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Array:
    """The p-norm over ``dim`` (all elements when None; torch.norm): Array.norm."""
    return _array("norm", input).norm(p, dim, keepdim, dtype)


def logsumexp(input: Array, dim=None, keepdim: bool = False, *, axis=None,
              keepdims: bool | None = None) -> Array:
    """log(sum(exp(input))) along ``dim`` (all axes when None), without overflow:
    torch.logsumexp, and scipy.special.logsumexp's ``axis=``/``keepdims=`` spelling."""
    if axis is not None:
        if dim is not None:
            raise TypeError("logsumexp: got both dim and axis")
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    return _array("logsumexp", input).logsumexp(dim, keepdim)


def randint(low: int, high=None, size=None, *, generator=None, dtype=None,
            device=None) -> Array:
    """Integers in [low, high) of ``size``, int64 by default (torch.randint: also
    ``randint(high, size)``); high - low must be at most 2**32."""
    if size is None and isinstance(high, (tuple, list)):   # randint(high, size)
        low, high, size = 0, low, high
    if high is None or size is None:
        raise TypeError("randint: needs high and size (randint(high, size) or "
                        "randint(low, high, size))")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint: size must be a tuple of ints, got {type(size).__name__}")
    shape = _shape((size,), "randint")   # non-negative ints, as torch checks them
    gen = generator if generator is not None else _random.default_generator
    return gen.integers(low, high, shape, dtype=gp.int64 if dtype is None else dtype,
                        device=device)


def from_numpy(ndarray: np.ndarray) -> Array:
    """An Array holding ``ndarray``'s values and dtype (torch.from_numpy) on the default device
    (a copy: grilly's memory is the device's)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    return gp.asarray(ndarray, copy=True)


def sigmoid(input: Array) -> Array:
    """1 / (1 + exp(-x)) (torch.sigmoid): grilly.nn.functional.sigmoid."""
    return _F.sigmoid(input)


def relu(input: Array) -> Array:
    """max(x, 0) (torch.relu): grilly.nn.functional.relu."""
    return _F.relu(input)


def softmax(input: Array, dim: int, dtype=None) -> Array:
    """Softmax along ``dim`` (torch.softmax): grilly.nn.functional.softmax."""
    return _F.softmax(input, dim=dim, dtype=dtype)


def log_softmax(input: Array, dim: int, dtype=None) -> Array:
    """Log-softmax along ``dim`` (torch.log_softmax): grilly.nn.functional.log_softmax."""
    return _F.log_softmax(input, dim=dim, dtype=dtype)


def mm(input: Array, mat2: Array) -> Array:
    """The matrix product of two 2-D arrays (torch.mm)."""
    return _array("mm", input).mm(mat2)


def as_tensor(data, dtype=None, device=None) -> Array:
    """``data`` as an Array, without a copy where it already is one of that dtype and device
    (torch.as_tensor: gp.asarray)."""
    return gp.asarray(data, dtype=dtype, device=device)


def _like(x: Array, dtype, op: str):
    """The dtype of a ``*_like`` draw: ``dtype`` or x's, which must be real floating."""
    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected a grilly Array, got {type(x).__name__}")
    d = x.dtype if dtype is None else dtype
    if not gp.isdtype(d, "real floating"):
        raise TypeError(f"{op}: needs a real floating dtype, got {d}")
    return d


def _gen(generator, op: str):
    """``generator`` (a grilly.random.Generator), or the default one for None."""
    if generator is None:
        return _random.default_generator
    if not isinstance(generator, _random.Generator):
        raise TypeError(f"{op}: generator must be a grilly.random.Generator (gp.Generator), got "
                        f"{type(generator).__name__}")
    return generator


def randn_like(input: Array, *, generator=None, dtype=None, device=None,
               requires_grad: bool = False) -> Array:
    """Standard normal draws shaped like ``input`` (its dtype and device unless given)."""
    d = _like(input, dtype, "randn_like")
    x = _gen(generator, "randn_like").normal(0.0, 1.0, input.shape, dtype=d,
                                              device=input.device if device is None else device)
    return x.requires_grad_() if requires_grad else x


def _unit(gen, shape, dtype, device) -> Array:
    """Uniforms in [0, 1) of ``dtype``; bfloat16 (which grilly.random's uniform refuses: the
    rounding could reach 1) as torch draws it: k / 256 for k uniform in 0..255, here the float32
    draw floored to that grid (exact in bfloat16's 8 significant bits, so never 1)."""
    if dtype != gp.bfloat16:
        return gen.uniform(0.0, 1.0, shape, dtype=dtype, device=device)
    u = gen.uniform(0.0, 1.0, shape, dtype=gp.float32, device=device)
    return gp.astype(gp.floor(u * 256.0) / 256.0, gp.bfloat16)


def rand(*size, dtype=None, device=None, requires_grad: bool = False, generator=None) -> Array:
    """Uniform draws in [0, 1) of ``size`` (``rand(2, 3)`` or ``rand((2, 3))``), of the default
    dtype (gp.get_default_dtype()) unless ``dtype`` says otherwise."""
    d = float_or_default(dtype)
    if not gp.isdtype(d, "real floating"):
        raise TypeError(f"rand: needs a real floating dtype, got {d}")
    x = _unit(_gen(generator, "rand"), _shape(size, "rand"), d, device)
    return x.requires_grad_() if requires_grad else x


def rand_like(input: Array, *, generator=None, dtype=None, device=None,
              requires_grad: bool = False) -> Array:
    """Uniform draws in [0, 1) shaped like ``input`` (its dtype and device unless given)."""
    d = _like(input, dtype, "rand_like")
    x = _unit(_gen(generator, "rand_like"), input.shape, d,
              input.device if device is None else device)
    return x.requires_grad_() if requires_grad else x


def randint_like(input: Array, low: int = 0, high: int | None = None, *, generator=None,
                 dtype=None, device=None, requires_grad: bool = False) -> Array:
    """Integers in [low, high) shaped like ``input`` (``randint_like(x, high)`` or
    ``randint_like(x, low, high)``), in input's dtype and device unless given (torch's)."""
    _array("randint_like", input)
    if high is None:
        low, high = 0, low
    d = input.dtype if dtype is None else dtype
    x = _gen(generator, "randint_like").integers(
        low, high, input.shape, device=input.device if device is None else device)
    x = x if x.dtype == d else gp.astype(x, d)
    return x.requires_grad_() if requires_grad else x


def randperm(n: int, *, generator=None, dtype=None, device=None,
             requires_grad: bool = False) -> Array:
    """A random permutation of 0 .. n - 1, int64 unless ``dtype`` says otherwise
    (torch.randperm; grilly.random.Generator.permutation)."""
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"randperm: n must be an int, got {type(n).__name__}")
    if int(n) < 0:
        raise ValueError(f"randperm: n must be non-negative, got {int(n)}")
    x = _gen(generator, "randperm").permutation(int(n), device=device)
    x = x if dtype is None or x.dtype == dtype else gp.astype(x, dtype)
    return x.requires_grad_() if requires_grad else x


def bernoulli(input: Array, p: float | None = None, *, generator=None) -> Array:
    """1 with probability ``input`` (per element), else 0, in input's dtype (torch.bernoulli;
    ``bernoulli(input, p)``: probability p for every element); a probability outside [0, 1]
    or nan gives nan (not read back), where torch raises."""
    d = _like(input, None, "bernoulli")
    gen = _gen(generator, "bernoulli")
    if p is not None:
        return gen.bernoulli(p, input.shape, dtype=d, device=input.device)
    return gen.bernoulli(input, dtype=d)


def multinomial(input: Array, num_samples: int, replacement: bool = False, *,
                generator=None) -> Array:
    """``num_samples`` category indices (int64) drawn per row of ``input`` (1-D or 2-D
    non-negative weights; torch.multinomial), checked as torch checks them (ValueError where
    torch raises RuntimeError)."""
    return _gen(generator, "multinomial").categorical(input, num_samples, replacement)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad: bool = False) -> Array:
    """Normal draws (torch.normal): ``normal(mean, std)`` with an Array mean and/or std (their
    broadcast shape, dtype and device; an Array's negative std gives nan), or
    ``normal(mean, std, size)`` with numbers (the default dtype unless ``dtype``)."""
    gen = _gen(generator, "normal")
    arrays = [v for v in (mean, std) if isinstance(v, Array)]
    if not arrays:
        if size is None:
            raise TypeError("normal: with a number mean and std, give size "
                            "(normal(mean, std, size))")
        x = gen.normal(mean, std, _shape((size,), "normal"), dtype=float_or_default(dtype),
                       device=device)
        return x.requires_grad_() if requires_grad else x
    if size is not None:
        raise TypeError("normal: size is for a number mean and std; an Array's shape is the "
                        "draws' shape")
    for v in arrays:
        _like(v, None, "normal")
    d = gp.result_type(*arrays) if dtype is None else dtype
    x = gen.normal(mean, std, dtype=d, device=device)
    return x.requires_grad_() if requires_grad else x


def initial_seed() -> int:
    """The default generator's seed (torch.initial_seed)."""
    return _random.default_generator.initial_seed()


def seed() -> int:
    """Reseed the default generator from OS entropy and return the seed (torch.seed)."""
    s = int.from_bytes(os.urandom(8), "little") >> 1   # below 2**63, as torch's
    _random.seed(s)
    return s


def get_rng_state() -> tuple:
    """The default generator's state (torch.get_rng_state; a (seed, counter) tuple)."""
    return _random.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state from ``get_rng_state`` (torch.set_rng_state)."""
    _random.set_state(new_state)


def poisson(input: Array, generator=None) -> Array:
    """Poisson draws with rates ``input`` (torch.poisson): its shape, dtype and device; a
    negative or nan rate gives nan."""
    _like(input, None, "poisson")
    gen = generator if generator is not None else _random.default_generator
    return gen.poisson(input, dtype=input.dtype)


def save(obj, f: str | os.PathLike) -> None:
    """Write a state dict (a mapping of names to Arrays, or a Module's, an optimizer's) to ``f``
    as safetensors (torch.save of ``model.state_dict()``), or a checkpoint: dicts, lists and
    tuples of Arrays and Python values (``{"model": ..., "optimizer": ..., "epoch": e}``), its
    structure in the file's metadata (nothing is pickled); a path then an Array is numpy.save's
    order: a .npy file."""
    if isinstance(obj, (str, os.PathLike)) and isinstance(f, (Array, np.ndarray)):
        return _npyio.save(obj, f)   # numpy.save(file, arr): a .npy file
    if isinstance(obj, (str, os.PathLike)):
        raise TypeError("save: the object comes first, then the path (torch.save(obj, f)); "
                        "one array goes first with its path: save(path, x) writes a .npy file")
    if hasattr(obj, "state_dict") and callable(obj.state_dict) and not isinstance(obj, Mapping):
        obj = obj.state_dict()
    if isinstance(obj, Mapping) and all(isinstance(k, str) and isinstance(v, Array)
                                        for k, v in obj.items()):
        return _ser.save(obj, f)   # a state dict: a plain safetensors file
    if not isinstance(obj, (Mapping, list, tuple)):
        raise TypeError(f"save: a state dict, a Module or a checkpoint (dicts, lists and tuples "
                        f"of Arrays and Python values) is saved (safetensors), got "
                        f"{type(obj).__name__}")
    _ser.save_checkpoint(obj, f)


def load(f: str | os.PathLike, map_location=None, *, device=None, weights_only: bool = True):
    """Read a state dict or checkpoint written by ``save`` (torch.load; ``map_location`` or
    ``device`` picks the device of its Arrays, the default device otherwise); a .npy file gives
    an Array and a .npz archive a mapping of Arrays (numpy.load)."""
    if map_location is not None and device is not None:
        raise TypeError("load: give map_location or device, not both")
    if _npyio.numpy_format(f):   # numpy.load of a .npy or .npz file
        return _npyio.load(f, device=device if device is not None else map_location)
    return _ser.load_checkpoint(f, device=device if device is not None else map_location)
