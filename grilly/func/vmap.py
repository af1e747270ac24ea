"""torch.func.vmap without batching rules: ``func`` runs once per batch element, on the mapped
inputs sliced along their ``in_dims``, and its outputs are stacked along ``out_dims``.

The slicing and stacking are namespace ops, so gradients flow through vmap and vmap composes
with the differentiating transforms (per-sample gradients: ``vmap(grad(loss), in_dims=(None, 0,
0))``) and with itself. It gives vmap's results, not its speed: B calls of ``func`` for a batch
of B.
"""
from __future__ import annotations

import functools
from typing import Callable

from .. import random as _random
from ..array import api as gp
from ..array.array import Array
from ._pytree import broadcast_prefix, flatten, unflatten

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def _is_dim(d) -> bool:
    return d is None or (isinstance(d, int) and not isinstance(d, bool))


def _batch_size(leaves: list, dims: list, where: str) -> int:
    """The common size of the mapped dimensions (``dims`` made non-negative in place)."""
    sizes = []
    for i, (x, d) in enumerate(zip(leaves, dims)):
        if d is None:
            continue
        if not _is_dim(d):
            raise ValueError(f"{where}: in_dims must hold ints or None, got {d!r}")
        if not isinstance(x, Array):
            raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type "
                             f"{type(x).__name__}. We cannot vmap over non-Array arguments, "
                             "please use None as the respective in_dim")
        if x.ndim == 0 or not -x.ndim <= d < x.ndim:
            raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is an "
                             f"Array of dimensionality {x.ndim} so expected in_dim to satisfy "
                             f"{-x.ndim} <= in_dim < {x.ndim}.")
        dims[i] = d % x.ndim
        sizes.append(x.shape[dims[i]])
    if not sizes:
        raise ValueError(f"{where}: at least one input must be an Array with an in_dim that is "
                         "not None")
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all Arrays to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    if sizes[0] == 0:
        raise ValueError(f"{where}: the mapped dimension has size 0; vmap runs the function "
                         "once per batch element, so it needs at least one")
    return sizes[0]


def _same(a, b) -> bool:
    """Whether two elements' values of an output with out_dim None agree (NaNs in the same
    places count as equal; one host read per Array)."""
    if isinstance(a, Array) or isinstance(b, Array):
        if not (isinstance(a, Array) and isinstance(b, Array)) or a.shape != b.shape \
                or a.dtype != b.dtype:
            return False
        eq = gp.equal(a, b)
        if gp.isdtype(a.dtype, ("real floating", "complex floating")):
            eq = gp.logical_or(eq, gp.logical_and(gp.isnan(a), gp.isnan(b)))
        return bool(gp.all(eq))
    try:
        return bool(a == b)
    except Exception:   # (an object without a truth value of ==: not checked)
        return True


def _stack(results: list, out_dims, fname: str):
    """The per-element outputs ``results`` (flattened: [(leaves, spec)]) stacked along
    ``out_dims``."""
    leaves, spec = results[0]
    where = f"vmap({fname}, ..., out_dims={out_dims!r})(<inputs>)"
    if any(s != spec for _, s in results[1:]):
        raise ValueError(f"{where}: the function returned outputs of different structures for "
                         "different batch elements")
    tree = unflatten(leaves, spec)
    if isinstance(tree, Array) and isinstance(out_dims, tuple) and len(out_dims) == 1:
        out_dims = out_dims[0]   # (torch takes a 1-tuple for a single Array output)
    dims = broadcast_prefix(out_dims, tree,
                            f"{where}: out_dims is not compatible with the structure of the "
                            "outputs")
    out = []
    for k, (x, d) in enumerate(zip(leaves, dims)):
        if d is None:   # not mapped: every element must have given the same value
            for i, r in enumerate(results[1:], 1):
                if not _same(x, r[0][k]):
                    raise ValueError(f"vmap({fname}, ...): `{fname}` can not return an output "
                                     f"that depends on the mapped inputs when its out_dim is "
                                     f"None (output {k} differs between batch elements 0 and "
                                     f"{i}); give it an int out_dim")
            out.append(x)
            continue
        if not _is_dim(d):
            raise ValueError(f"{where}: out_dims must hold ints or None, got {d!r}")
        if not isinstance(x, Array):
            raise ValueError(f"vmap({fname}, ...): `{fname}` must only return Arrays, got type "
                             f"{type(x).__name__}. Did you mean to set out_dims= to None for "
                             "output?")
        if not -(x.ndim + 1) <= d <= x.ndim:
            raise IndexError(f"{where}: out_dim {d} is out of range for an output of "
                             f"dimensionality {x.ndim} (expected {-(x.ndim + 1)} <= out_dim <= "
                             f"{x.ndim})")
        out.append(gp.stack([r[0][k] for r in results], axis=d))
    return unflatten(out, spec)


def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``func`` mapped over a dimension of its inputs (``in_dims``: an int, or a tuple matching
    the positional arguments, None for one not mapped), its outputs stacked along
    ``out_dims``. It calls ``func`` once per batch element; ``chunk_size`` is checked and
    ignored. ``randomness``: 'error' raises where ``func`` draws from grilly's default random
    generator, 'different' gives each element its own numbers, 'same' the same ones."""
    if randomness not in _RANDOMNESS:
        raise ValueError(f"vmap: randomness must be 'error', 'different' or 'same', got "
                         f"{randomness!r}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or a positive int, got {chunk_size!r}")
    fname = getattr(func, "__name__", type(func).__name__)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        where = f"vmap({fname}, in_dims={in_dims!r}, ...)(<inputs>)"
        if not (isinstance(in_dims, tuple) or (_is_dim(in_dims) and in_dims is not None)):
            raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) "
                             f"tuple matching the structure of inputs, got: "
                             f"{type(in_dims).__name__}.")
        leaves, spec = flatten(args)
        dims = broadcast_prefix(in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args),
                                args, f"{where}: in_dims is not compatible with the structure "
                                "of `inputs`")
        n = _batch_size(leaves, dims, where)
        state = _random.get_state()
        results = []
        for i in range(n):
            if randomness == "same":   # every element draws from where the first one did
                _random.set_state(state)
            sliced = [x if d is None else x[(slice(None),) * d + (i,)]
                      for x, d in zip(leaves, dims)]
            before = _random.get_state()
            out = func(*unflatten(sliced, spec), **kwargs)
            if randomness == "error" and _random.get_state() != before:
                raise RuntimeError("vmap: called random operation while in randomness error "
                                   "mode. Please either use the 'same' or 'different' "
                                   "randomness flags on vmap or perform the randomness "
                                   "operation out of vmap")
            results.append(flatten(out))
        return _stack(results, out_dims, fname)
    return wrapper
