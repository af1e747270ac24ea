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
from .function import Function, _edges, once_differentiable, record
from .gradcheck import gradcheck
from .mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                   no_grad, set_grad_enabled)
from .rules import RULES, rule_names
from .tape import (Node, RemovableHandle, backward, detach, grad, refresh, register_hook,
                   register_post_accumulate_grad_hook, retain_grad)

__all__ = ["Function", "RemovableHandle", "backward", "detach", "enable_grad", "grad",
           "gradcheck", "inference_mode", "install", "is_grad_enabled",
           "is_inference_mode_enabled", "no_grad", "once_differentiable", "record", "rule_names",
           "set_grad_enabled", "tensor"]

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
    if kw:
        _check_keywords(name, kw)
    st.enabled = False
    try:
        out = fn(*args, **kw)
    finally:
        st.enabled = True
    return record(name, r[0], args, kw, out, r[1], r[2])


# keywords whose Array values a rule may be given without differentiating them, as torch's
# (tolerances enter only through comparisons; a fill value of empty segments)
_NO_GRAD_KEYWORDS = frozenset({"rtol", "rcond", "atol", "tol", "fill"})


def _check_keywords(name: str, kw: dict) -> None:
    """NotImplementedError where a keyword Array that requires grad reaches ``name``'s rule,
    which differentiates positional arguments only (its gradient would be dropped)."""
    for k, v in kw.items():
        if (isinstance(v, Array) and v.requires_grad and v._dtype.kind in "fc"
                and k not in _NO_GRAD_KEYWORDS):
            raise NotImplementedError(
                f"{name}: the gradient with respect to the keyword argument {k}= is not "
                f"supported (the rule differentiates positional arguments only); pass it "
                "positionally, or detach() it if it needs no gradient")


_state = mode.state   # this thread's grad mode (a threading.local: one lookup less per op)


def _leaf_inplace_check(x: Array, op: str) -> None:
    """RuntimeError where ``x`` (or the array it is a view of) is a leaf that requires grad;
    a view written since its base was brings its history up to date first (tape.refresh)."""
    if x.requires_grad and x._node is None:
        raise RuntimeError(f"{op}: a leaf Array that requires grad is used in an in-place "
                           "operation; wrap it in no_grad() (as optimizers do) or work on a copy")
    v = x._view
    if v is None:
        return
    if v[4] != x._version[0]:
        refresh(x)
    if x._node is None and v[0].requires_grad:
        raise RuntimeError(f"{op}: a view of an array that requires grad, made in no_grad "
                           "mode (or by an op that returns views without a gradient), is being "
                           "modified inplace with grad mode enabled; make the view in grad "
                           "mode, or write into a copy (x.copy())")
    while v is not None:
        b = v[0]
        if b.requires_grad and b._node is None:
            raise RuntimeError(f"{op}: a view of a leaf Array that requires grad is used in an "
                               "in-place operation; wrap it in no_grad() or work on a copy")
        v = b._view


def _unview(op: str, args: tuple, kw: dict):
    """The rule of a base overwritten whole through its view ``op(base, *args, **kw)``."""
    f = dispatch.OPS[op]

    def rule(g, out, view):
        return (f(g, *args, **kw),)
    return rule


def _rebase(x: Array) -> None:
    """After a recorded write into view ``x``: the array it views (and so on up) takes a node
    whose value is its old one with x's part replaced by x's new one, as torch's CopySlices
    (``y = a * 2; y[0] *= 3`` changes y's gradient, not only the view's)."""
    chain = []
    v = x._view
    while v is not None:
        chain.append(v)
        v = v[0]._view
    if not chain:
        return
    n = x._version[0]
    for v in chain:   # each view up to date first (so _edges does not remake them)
        v[4] = n
    child = x
    for base, op, args, kw, _ in chain:
        if op in ("__getitem__", "linalg.diagonal"):
            # (a diagonal is the advanced index (..., rows, cols) of its base)
            key = args[0] if op == "__getitem__" else _diagonal_key(base, kw["offset"])
            nargs = (base, key, child)
            node = Node("__setitem__", RULES["__setitem__"][0], nargs, {}, None, _edges(nargs), 1)
        else:   # a reshape, permutation or flip of the whole base
            node = Node(f"{op} (in place)", _unview(op, args, kw), (child,), {}, None,
                        _edges((child,)), 1)
        if node.edges and base._dtype.kind in "fc":
            base._node, base.requires_grad = (node, 0), True
        child = base


def _diagonal_key(base: Array, offset: int) -> tuple:
    """The index (..., rows, cols) of ``base``'s ``offset`` diagonal (its last two axes)."""
    r, c = base.shape[-2:]
    k = max(0, min(r - max(-offset, 0), c - max(offset, 0)))
    ns = dispatch.OPS
    i = ns["arange"](k, dtype=dispatch.ns.int64, device=base.device)
    return (Ellipsis, i + max(-offset, 0), i + max(offset, 0))


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
        if x._view is not None:
            _rebase(x)


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
    if x._view is not None and res._node is not None:
        _rebase(x)
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
dispatch.OPS["autograd.register_post_accumulate_grad_hook"] = register_post_accumulate_grad_hook


def install(namespace: dict) -> None:
    """Export the grad-mode helpers into ``namespace`` (the recording itself is the dispatch
    hook installed when this module is imported)."""
    namespace.update(_MODE_EXPORTS)


# torch.autograd.functional and anomaly detection (their own modules, exported here)
from . import functional  # noqa: E402
from .anomaly_mode import (detect_anomaly, is_anomaly_check_nan_enabled,  # noqa: E402
                           is_anomaly_enabled, set_detect_anomaly)

__all__ += ["detect_anomaly", "functional", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
            "set_detect_anomaly"]
