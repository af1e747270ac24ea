"""Reverse-mode automatic differentiation written against the grilly namespace.

Importing it installs the array layer's dispatch hooks (grilly/array/dispatch.py): in grad mode, a
namespace call (or operator, indexing, in-place update) on an Array with ``requires_grad`` records a
node whose VJP is the function's rule (rules.py); Array's ``backward`` and ``detach`` call here.
"""
from __future__ import annotations

from ..array import dispatch
from ..array.array import Array
from ..array.creation import asarray
from . import mode
from .function import Function, _edges, record
from .gradcheck import gradcheck
from .mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                   no_grad, set_grad_enabled)
from .rules import RULES, rule_names
from .tape import Node, RemovableHandle, backward, detach, grad, register_hook, retain_grad

__all__ = ["Function", "RemovableHandle", "backward", "detach", "enable_grad", "grad",
           "gradcheck", "inference_mode", "install", "is_grad_enabled",
           "is_inference_mode_enabled", "no_grad", "record", "rule_names", "set_grad_enabled",
           "tensor"]

_MODE_EXPORTS = {"no_grad": no_grad, "enable_grad": enable_grad,
                 "is_grad_enabled": is_grad_enabled, "set_grad_enabled": set_grad_enabled,
                 "inference_mode": inference_mode,
                 "is_inference_mode_enabled": is_inference_mode_enabled}


def tensor(obj, /, *, dtype=None, device=None, requires_grad: bool = False) -> Array:
    """A new Array from ``obj`` (as ``asarray`` with a copy) that may require grad."""
    x = asarray(obj, dtype=dtype, device=device, copy=True)
    if requires_grad:
        x.requires_grad_()
    return x


# ---- the dispatch hooks (grilly/array/dispatch.py) -------------------------------------------
def _record(name: str, fn, args: tuple, kw: dict):
    """Run namespace function ``name`` whose inputs require grad: plainly when grad mode is off or
    it has no rule (a composite then records through the functions it calls), else with grad
    off inside and one node recorded on its output."""
    r = RULES.get(name)
    st = _state
    if r is None or not st.enabled:
        return fn(*args, **kw)
    st.enabled = False
    try:
        out = fn(*args, **kw)
    finally:
        st.enabled = True
    return record(name, r[0], args, kw, out, r[1])


_state = mode.state   # this thread's grad mode (a threading.local: one lookup less per op)


def _leaf_inplace_check(x: Array, op: str) -> None:
    if x.requires_grad and x._node is None:
        raise RuntimeError(f"{op}: a leaf Array that requires grad is used in an in-place "
                           "operation; wrap it in no_grad() (as optimizers do) or work on a copy")


def _setitem(x: Array, key, value) -> None:
    """``x[key] = value`` recorded as a node on ``x`` (its old values are cut out of the graph)."""
    f = dispatch.OPS["__setitem__"]
    if not mode.state.enabled:
        return f(x, key, value)
    _leaf_inplace_check(x, "__setitem__")
    args = (x, key, value)
    edges = _edges(args)
    with no_grad():
        f(x, key, value)
    if x._dtype.kind in "fc" and edges:
        x._node = (Node("__setitem__", RULES["__setitem__"][0], args, {}, None, edges, 1), 0)
        x.requires_grad = True


def _inplace(x: Array, name: str, other) -> Array:
    """``x op= other`` in grad mode: the node sees x's old values, then x takes the result's node."""
    if not mode.state.enabled:
        dispatch.store(x, dispatch.OPS[name](x, other), name)
        return x
    _leaf_inplace_check(x, f"{name} (in place)")
    ns = dispatch.OPS
    old = ns["asarray"](detach(x), copy=True)
    old._node, old.requires_grad = x._node, x.requires_grad
    res = ns[name](old, other)
    with no_grad():
        dispatch.store(x, res, name)
    x._node, x.requires_grad = res._node, res.requires_grad
    return x


dispatch.hooks.record = _record
dispatch.mode_keys.append(is_grad_enabled)
dispatch.mode_keys.append(is_inference_mode_enabled)
dispatch.hooks.setitem = _setitem
dispatch.hooks.inplace = _inplace
dispatch.OPS["autograd.backward"] = backward
dispatch.OPS["autograd.detach"] = detach
dispatch.OPS["autograd.register_hook"] = register_hook
dispatch.OPS["autograd.retain_grad"] = retain_grad


def install(namespace: dict) -> None:
    """Export the grad-mode helpers into ``namespace`` (the recording itself is the dispatch
    hook installed when this module is imported)."""
    namespace.update(_MODE_EXPORTS)
