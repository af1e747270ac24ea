"""Activation checkpointing, as torch.utils.checkpoint: trade compute for memory.

``checkpoint(function, *args)`` runs ``function`` under ``no_grad``: none of its intermediate
results is recorded, so none is kept; the one autograd node it leaves keeps only the arguments
(and the random generator's state). Its backward runs ``function`` again on detached copies of
the arguments (aliases under create_graph) with grad on, with the same random numbers, and
backpropagates the incoming gradients through that recomputed graph, which is freed before the
next node runs. Peak memory in backward is then one checkpointed segment's intermediates at a
time, for one extra forward of each segment.

Both variants run the same way here (grilly has no saved-tensor hooks); they differ as
torch's do where a user sees it: ``use_reentrant=True`` (the default, with a warning when not
passed, as torch 2.x) takes no keyword arguments and gives nothing a gradient when no argument
requires grad (with torch's warning); ``use_reentrant=False`` passes keyword arguments through
(their arrays get gradients too) and gives the parameters of the modules called inside their
gradients even when no argument requires grad. In both, arrays the function reads that are
not arguments (a module's parameters) get their gradients handed to the sweep that runs the
node (``tape.deliver``), as if it had edges to them: ``backward`` accumulates them, ``grad``
returns them where asked (torch's non-reentrant variant). With ``create_graph=True`` the
recomputation runs on aliases of the arguments (not detached copies), so that the gradients
are on the outer graph and a second order through them is right.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from .. import random as _grandom
from ..array.array import Array
from ..array.api import positive as _positive
from ..autograd import Function, enable_grad, is_grad_enabled, no_grad, tensor
from ..autograd.tape import deliver, grad_and_leaves, reachable_leaves

__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential"]

_DETERMINISM = ("default", "none")


class CheckpointError(RuntimeError):
    """The recomputed forward differs from the original (shapes, dtypes or devices)."""


def _meta(outs: tuple) -> list:
    return [(o.shape, o.dtype, o.device) for o in outs]


def _array_outputs(out) -> tuple:
    """The Arrays among ``out`` (an Array, a tuple or a list): the node's outputs (a node's
    outputs are Arrays; the rest of a tuple or list result is put back around them)."""
    if isinstance(out, Array):
        return (out,)
    if isinstance(out, (tuple, list)):
        return tuple(o for o in out if isinstance(o, Array))
    return ()


class _Checkpoint(Function):
    """The node that stands for the whole checkpointed call: forward without a graph, backward
    by recomputing it. Its arguments are flat (Arrays and other values); ``run`` takes them
    and calls the user's function; its outputs are the Arrays of the function's result, which
    ``box["out"]`` keeps whole."""

    _delivers_to_leaves = True   # (the parameters read inside: tape.deliver)

    @staticmethod
    def forward(ctx, run, opts, box, *args):
        ctx.run, ctx.opts = run, opts
        if opts["preserve_rng_state"]:
            ctx.rng_state = _grandom.get_state()
        ctx.inputs = args   # the only arrays kept for backward
        box["out"] = out = run(*args)   # (Function.apply runs forward with grad off)
        arrays = _array_outputs(out)
        ctx.meta = _meta(arrays)
        return arrays[0] if isinstance(out, Array) else arrays

    @staticmethod
    def backward(ctx, *grads):
        # with create_graph (the sweep sets grad mode to it) the recomputation runs on aliases
        # of the arguments, so that its gradients are functions of the outer graph's arrays and
        # a second order through them is right; otherwise on detached copies
        create_graph = is_grad_enabled()
        inputs = tuple((_alias if create_graph else _detached)(a) for a in ctx.inputs)
        if ctx.opts["preserve_rng_state"]:
            now = _grandom.get_state()
            _grandom.set_state(ctx.rng_state)
        try:
            with enable_grad():
                outs = _array_outputs(ctx.run(*inputs))
        finally:
            if ctx.opts["preserve_rng_state"]:
                _grandom.set_state(now)
        if ctx.opts["determinism_check"] == "default" and _meta(outs) != ctx.meta:
            raise CheckpointError("checkpoint: the recomputed forward returned outputs of other "
                                  f"shapes, dtypes or devices ({_meta(outs)}) than the original "
                                  f"({ctx.meta}); the function must be deterministic in them")
        pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("checkpoint: none of the outputs requires grad, this "
                               "checkpoint() is not necessary")
        outs = [o for o, _ in pairs]
        wanted = [a for a in inputs if isinstance(a, Array) and a.requires_grad]
        # the leaves the function reads besides its arguments (a module's parameters): their
        # gradients go to the sweep that runs this node, as if it had edges to them (backward
        # accumulates them with their others, grad() returns them where asked, as torch's
        # non-reentrant variant does)
        mine = {id(a) for a in wanted}
        params = [p for p in reachable_leaves(outs, stop=wanted) if id(p) not in mine]
        gs, others = grad_and_leaves(outs, wanted + params, [g for _, g in pairs],
                                     create_graph)
        for leaf, g in [*zip(params, gs[len(wanted):]), *others]:
            if g is not None:
                deliver(leaf, g)
        it = iter(gs[:len(wanted)])
        return (None, None, None) + tuple(
            next(it) if isinstance(a, Array) and a.requires_grad else None for a in inputs)


def _alias(a):
    """An argument for a recomputation under create_graph: a new array on the graph of the
    original (its gradient flows back to it), anything else as it is."""
    return _positive(a) if isinstance(a, Array) and a.requires_grad else a


def _detached(a):
    """An argument for the recomputation: an Array cut from the outer graph (a new leaf that
    requires grad where the original did), anything else as it is."""
    if isinstance(a, Array):
        d = a.detach()
        if a.requires_grad:
            d.requires_grad_()
        return d
    return a


def _has_arrays(a) -> bool:
    return isinstance(a, (list, tuple)) and any(isinstance(b, Array) for b in a)


def _flatten(args: tuple, kwargs: dict):
    """(flat arguments, their rebuilder): a list or tuple of Arrays is spread into its items
    and keyword values follow the positional ones, so that every Array among them is an
    argument of the node (and gets its gradient)."""
    flat, spec = [], []
    for a in args:
        if _has_arrays(a):
            spec.append((type(a), len(a)))
            flat.extend(a)
        else:
            spec.append(None)
            flat.append(a)
    keys = tuple(kwargs)
    flat.extend(kwargs.values())

    def rebuild(items: tuple):
        pos, i = [], 0
        for s in spec:
            if s is None:
                pos.append(items[i])
                i += 1
            else:
                pos.append(s[0](items[i:i + s[1]]))
                i += s[1]
        return pos, dict(zip(keys, items[i:i + len(keys)]))
    return flat, rebuild


def _check_use_reentrant(use_reentrant, op: str) -> bool:
    if use_reentrant is None:
        warnings.warn(f"{op}: the use_reentrant parameter should be passed explicitly (as torch "
                      "asks); use_reentrant=True is assumed", stacklevel=3)
        return True
    return bool(use_reentrant)


def checkpoint(function: Callable, *args, use_reentrant: bool | None = None,
               preserve_rng_state: bool = True, determinism_check: str = "default",
               context_fn=None, debug: bool = False, **kwargs) -> Any:
    """``function(*args, **kwargs)``, recomputed in backward instead of keeping its
    intermediate results (torch.utils.checkpoint.checkpoint)."""
    use_reentrant = _check_use_reentrant(use_reentrant, "checkpoint")
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, got {type(function).__name__}")
    if determinism_check not in _DETERMINISM:
        raise ValueError(f"checkpoint: determinism_check should be one of {list(_DETERMINISM)}, "
                         f"but got {determinism_check!r}")
    if context_fn is not None or debug:
        if use_reentrant:
            raise ValueError("checkpoint: passing `context_fn` or `debug` is only supported "
                             "when use_reentrant=False")
        raise NotImplementedError("checkpoint: context_fn and debug are not supported")
    if kwargs and use_reentrant:
        raise ValueError("checkpoint: unexpected keyword arguments: " + ",".join(kwargs))
    if not is_grad_enabled():
        with no_grad():
            return function(*args, **kwargs)
    opts = {"preserve_rng_state": bool(preserve_rng_state),
            "determinism_check": determinism_check}
    flat, rebuild = _flatten(args, kwargs)
    if use_reentrant:
        if not any(isinstance(a, Array) and a.requires_grad for a in flat):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          stacklevel=2)
    else:
        # one extra leaf that requires grad records the node (so that the parameters of the
        # modules called inside get their gradients) when no argument requires grad
        dev = next((a.device for a in flat if isinstance(a, Array)), None)
        flat.append(tensor(0.0, device=dev, requires_grad=True))
    n = len(flat) - (0 if use_reentrant else 1)

    def run(*items):
        pos, kw = rebuild(items[:n])
        return function(*pos, **kw)

    box: dict = {}
    res = _Checkpoint.apply(run, opts, box, *flat)
    out = box.pop("out")   # (the node, which holds the box, keeps nothing of the forward)
    if isinstance(out, Array):
        return res
    if not isinstance(out, (tuple, list)):
        return out   # (no Array in it: nothing to differentiate)
    # the node's outputs back in the places of the function's Arrays
    it = iter(res if isinstance(res, tuple) else (res,))
    return type(out)(next(it) if isinstance(o, Array) else o for o in out)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs) -> Any:
    """Run the sequence ``functions`` (an ``nn.Sequential`` or a list of callables) on
    ``input`` in ``segments`` chunks, each but the last checkpointed (torch's)."""
    use_reentrant = _check_use_reentrant(use_reentrant, "checkpoint_sequential")
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("checkpoint_sequential: unexpected keyword arguments: "
                         + ",".join(kwargs))
    functions = list(functions)
    if (isinstance(segments, bool) or not isinstance(segments, int)
            or not 1 <= segments <= max(len(functions), 1)):
        raise ValueError(f"checkpoint_sequential: segments must be an int in [1, "
                         f"{len(functions)}] (the number of functions), got {segments!r}")

    def run_function(start: int, end: int):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    segment_size = len(functions) // segments
    end = -1   # the last chunk runs plainly: its output is needed with its graph anyway
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1)(input)
