"""Module hooks, as torch's: forward pre-hooks and hooks (``with_kwargs``, ``prepend``,
``always_call``), full backward pre-hooks and hooks, and the handles that remove them.

Backward hooks wrap a call's Array inputs and outputs in identity autograd nodes (as torch's
BackwardHook): the outputs' node sees the gradients of the outputs (``grad_output``, which a
backward pre-hook may replace), the inputs' node the gradients of the inputs (``grad_input``,
which a backward hook may replace). Where no input requires grad, the backward hooks run at the
outputs' node with ``grad_input`` all None, as torch's do.
"""
from __future__ import annotations

import itertools
import warnings
import weakref
from collections import OrderedDict

from ..array import api as gp
from ..array.array import Array
from ..array.dispatch import bumping as _bumping
from ..autograd.function import Function
from ..autograd.mode import is_grad_enabled

__all__ = ["RemovableHandle"]

_ids = itertools.count()


class RemovableHandle:
    """Removes the hook it was returned for (``handle.remove()``, or leaving a ``with`` block)."""

    def __init__(self, hooks_dict: dict, extra_dicts: tuple = ()) -> None:
        self.id = next(_ids)
        self._refs = [weakref.ref(hooks_dict)] + [weakref.ref(d) for d in extra_dicts]

    def remove(self) -> None:
        """Remove the hook (again: nothing)."""
        for ref in self._refs:
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class _Tracked(OrderedDict):
    """An OrderedDict whose every change bumps grilly.jit's structure epoch
    (dispatch.structure_epoch): a module's parameters, buffers, submodules and hook tables,
    so that a jitted call re-checks the modules of its graph only after one changed."""

    __setitem__, __delitem__, __ior__, pop, popitem, setdefault, update, clear, move_to_end = (
        _bumping(OrderedDict, n) for n in ("__setitem__", "__delitem__", "__ior__", "pop",
                                           "popitem", "setdefault", "update", "clear",
                                           "move_to_end"))


class _HookDict(_Tracked):
    """An OrderedDict with weak references allowed (a handle refers to it weakly)."""


def add(module, attr: str, value, prepend: bool) -> RemovableHandle:
    """Register ``value`` in ``module``'s hook table ``attr`` (made on first use)."""
    d = module.__dict__.get(attr)
    if d is None:
        d = _HookDict()
        object.__setattr__(module, attr, d)
    object.__setattr__(module, "_hooked", True)
    handle = RemovableHandle(d)
    d[handle.id] = value
    if prepend:
        d.move_to_end(handle.id, last=False)
    return handle


def _table(module, attr: str) -> list:
    d = module.__dict__.get(attr)
    return list(d.values()) if d else []


class _State:
    """One call's backward hooks: the module, its grad_output, whether grad_input will come."""

    def __init__(self, module, n_inputs: int) -> None:
        self.module, self.n_inputs = module, n_inputs
        self.inputs_tracked = False
        self.tracked: list = []   # places (among the Array inputs) of those that require grad
        self.shapes: list = []    # (shape, dtype, device) of each Array input
        self.grad_output = None

    def outputs_done(self, gs: tuple) -> tuple:
        """The outputs' gradients arrived: backward pre-hooks (which may replace them), and the
        backward hooks now where no input will get a gradient."""
        for hook in _table(self.module, "_backward_pre_hooks"):
            r = hook(self.module, gs)
            if r is not None:
                gs = _as_tuple(r, len(gs), "backward pre-hook", "grad_output")
        self.grad_output = gs
        if not self.inputs_tracked:
            self._fire((None,) * self.n_inputs)
        return gs

    def inputs_done(self, gs: tuple) -> tuple:
        """The gradients of the inputs that require grad arrived (``self.tracked``: their
        places among the Array inputs): the backward hooks, with None for the others (a hook
        may replace the gradients)."""
        # the inputs that do not require grad get zeros, as torch's hooks see them
        full = [gp.zeros(shape, dtype=dtype, device=dev) for shape, dtype, dev in self.shapes]
        for k, g in zip(self.tracked, gs):
            full[k] = g
        full = self._fire(tuple(full))
        return tuple(full[k] for k in self.tracked)

    def _fire(self, gi: tuple) -> tuple:
        for hook in _table(self.module, "_backward_hooks"):
            r = hook(self.module, gi, self.grad_output)
            if r is not None:
                gi = _as_tuple(r, len(gi), "backward hook", "grad_input")
        return gi


def _as_tuple(r, n: int, what: str, name: str) -> tuple:
    r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
    if len(r) != n:
        raise RuntimeError(f"{what} returned {len(r)} values for {name}, expected {n}")
    return r


class _HookInputs(Function):
    """Identity over a call's Array inputs; its backward hands their gradients to the hooks."""

    @staticmethod
    def forward(ctx, state, *xs):
        ctx.state = state
        return xs

    @staticmethod
    def backward(ctx, *gs):
        return (None, *ctx.state.inputs_done(gs))


class _HookOutputs(Function):
    """Identity over a call's Array outputs; its backward reports grad_output."""

    @staticmethod
    def forward(ctx, state, *ys):
        ctx.state = state
        return ys

    @staticmethod
    def backward(ctx, *gs):
        return (None, *ctx.state.outputs_done(gs))


def _wrap_inputs(state: _State, args: tuple) -> tuple:
    arrays = [i for i, a in enumerate(args) if isinstance(a, Array)]
    state.tracked = [k for k, i in enumerate(arrays) if args[i].requires_grad]
    if not state.tracked:
        return args
    state.inputs_tracked = True
    state.shapes = [(args[i].shape, args[i].dtype, args[i].device) for i in arrays]
    pos = [arrays[k] for k in state.tracked]
    wrapped = _HookInputs.apply(state, *(args[i] for i in pos))
    out = list(args)
    for i, w in zip(pos, wrapped):
        out[i] = w
    return tuple(out)


def _wrap_outputs(state: _State, out):
    if isinstance(out, Array):
        return _HookOutputs.apply(state, out)[0] if out.requires_grad else out
    if isinstance(out, (tuple, list)):
        pos = [i for i, o in enumerate(out) if isinstance(o, Array) and o.requires_grad]
        if not pos:
            return out
        wrapped = _HookOutputs.apply(state, *(out[i] for i in pos))
        res = list(out)
        for i, w in zip(pos, wrapped):
            res[i] = w
        return type(out)(res) if not hasattr(out, "_fields") else type(out)(*res)
    return out


def call(module, args: tuple, kwargs: dict):
    """``module.forward(*args, **kwargs)`` with its hooks run around it."""
    for hook, with_kwargs in _table(module, "_forward_pre_hooks"):
        if with_kwargs:
            r = hook(module, args, kwargs)
            if r is not None:
                if not (isinstance(r, tuple) and len(r) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {r!r:.80}")
                args, kwargs = r
        else:
            r = hook(module, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
    state = None
    if (module.__dict__.get("_backward_hooks") or module.__dict__.get("_backward_pre_hooks")) \
            and is_grad_enabled():
        state = _State(module, sum(isinstance(a, Array) for a in args))
        args = _wrap_inputs(state, args)
    fwd = _table(module, "_forward_hooks")
    try:
        out = module.forward(*args, **kwargs)
    except BaseException:
        for hook, with_kwargs, always in fwd:
            if always:   # torch's always_call: the hook runs even when forward raised
                try:
                    hook(module, args, kwargs, None) if with_kwargs else hook(module, args, None)
                except Exception as e:   # the forward's own error is the one raised
                    warnings.warn(f"forward hook with always_call=True raised while the forward "
                                  f"was failing: {e!r}", stacklevel=2)
        raise
    for hook, with_kwargs, _always in fwd:
        r = hook(module, args, kwargs, out) if with_kwargs else hook(module, args, out)
        if r is not None:
            out = r
    if state is not None:
        out = _wrap_outputs(state, out)
    return out
