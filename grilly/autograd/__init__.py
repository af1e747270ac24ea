"""Reverse-mode automatic differentiation written against the grilly namespace.

``install(namespace)`` wraps every namespace function that has a VJP rule (rules.py) so that, in
grad mode, a call on an Array with ``requires_grad`` records a node on its output, and adds
``backward``, ``detach``, ``requires_grad_``, ``is_leaf`` and ``grad_fn`` to Array.
"""
from __future__ import annotations

import sys
import types

from ..array.array import Array
from . import mode
from .function import Function, _edges, differentiable, record
from .gradcheck import gradcheck
from .mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .rules import RULES, SEQ, rule_names
from .tape import Node, backward, detach, grad

__all__ = ["Function", "backward", "detach", "enable_grad", "grad", "gradcheck", "install",
           "is_grad_enabled", "no_grad", "record", "rule_names", "set_grad_enabled", "tensor"]

_MODE_EXPORTS = {"no_grad": no_grad, "enable_grad": enable_grad,
                 "is_grad_enabled": is_grad_enabled, "set_grad_enabled": set_grad_enabled}


def tensor(obj, /, *, dtype=None, device=None, requires_grad: bool = False) -> Array:
    """A new Array from ``obj`` (as ``asarray`` with a copy) that may require grad."""
    ns = sys.modules["grilly"]
    x = ns.asarray(obj, dtype=dtype, device=device, copy=True)
    if requires_grad:
        x.requires_grad_()
    return x


def _unwrapped(f):
    return f.__wrapped__ if hasattr(f, "__grilly_vjp__") else f


def _wrap_namespace(namespace: dict) -> None:
    for name, (rule, save_out) in RULES.items():
        if name.startswith("__") or name == "to_device":
            continue
        if "." in name:
            mod, attr = name.split(".", 1)
            owner = namespace.get(mod)
            if not isinstance(owner, types.ModuleType):
                continue
            f = getattr(owner, attr, None)
        else:
            owner, attr, f = None, name, namespace.get(name)
        if f is None or not callable(f) or isinstance(f, (type, types.ModuleType)):
            continue
        w = differentiable(name, _unwrapped(f), rule, save_out,
                           seq=name in SEQ or name.endswith("broadcast_arrays"))
        if owner is None:
            namespace[attr] = w
        else:
            setattr(owner, attr, w)


# ---- Array methods --------------------------------------------------------------------------
def _backward(self, gradient=None, retain_graph: bool | None = None,
              create_graph: bool = False) -> None:
    """Accumulate the gradient of this array into the ``.grad`` of the graph's leaves."""
    backward([self], None if gradient is None else [gradient], retain_graph, create_graph)


def _requires_grad_(self, requires_grad: bool = True) -> Array:
    """Set ``requires_grad`` in place (only floating-point arrays can require grad); returns self."""
    if requires_grad and self._dtype.kind not in "fc":
        raise RuntimeError(f"requires_grad_: only floating-point arrays can require grad, got "
                           f"{self._dtype.name}")
    if not requires_grad and self._node is not None:
        raise RuntimeError("requires_grad_: cannot turn grad off on a non-leaf array; use detach()")
    self.requires_grad = bool(requires_grad)
    return self


def _is_leaf(self) -> bool:
    return self._node is None


def _grad_fn(self):
    return None if self._node is None else self._node[0]


_ORIG: dict = {}


def _getitem(self, key):
    f = _ORIG["__getitem__"]
    if self.requires_grad and mode.state.enabled:
        return mode_run("__getitem__", f, (self, key))
    return f(self, key)


def mode_run(name, f, args):
    mode.state.enabled = False
    try:
        out = f(*args)
    finally:
        mode.state.enabled = True
    return record(name, RULES[name][0], args, {}, out, RULES[name][1])


def _leaf_inplace_check(self, op: str) -> None:
    if self.requires_grad and self._node is None:
        raise RuntimeError(f"{op}: a leaf Array that requires grad is used in an in-place "
                           "operation; wrap it in no_grad() (as optimizers do) or work on a copy")


def _setitem(self, key, value):
    f = _ORIG["__setitem__"]
    tracked = mode.state.enabled and (self.requires_grad or (
        isinstance(value, Array) and value.requires_grad))
    if not tracked:
        return f(self, key, value)
    _leaf_inplace_check(self, "__setitem__")
    args = (self, key, value)
    edges = _edges(args)
    with no_grad():
        f(self, key, value)
    if self._dtype.kind in "fc" and edges:
        self._node = (Node("__setitem__", RULES["__setitem__"][0], args, {}, None, edges, 1), 0)
        self.requires_grad = True


def _make_iop(dunder, orig):
    def iop(self, other):
        if not (mode.state.enabled and (self.requires_grad or (
                isinstance(other, Array) and other.requires_grad))):
            return orig(self, other)
        _leaf_inplace_check(self, dunder)
        ns = sys.modules["grilly"]
        fname = _INPLACE[dunder]
        # the node must see the old values, not the ones the assignment writes
        old = detach(self)
        old = ns.asarray(old, copy=True)
        old._node, old.requires_grad = self._node, self.requires_grad
        res = getattr(ns, fname)(old, other)
        with no_grad():
            _assign(self, res)
        self._node, self.requires_grad = res._node, res.requires_grad
        return self
    iop.__name__ = dunder
    return iop


def _assign(self, res) -> None:
    if res._dtype is not self._dtype or res.shape != self.shape:
        raise TypeError(f"in-place op: result ({res._dtype.name}, {res.shape}) cannot be stored "
                        f"in an array of ({self._dtype.name}, {self.shape})")
    self._device.kernels["assign"](self._buf, res._buf)


_INPLACE = {"__iadd__": "add", "__isub__": "subtract", "__imul__": "multiply",
            "__itruediv__": "divide", "__ipow__": "pow", "__imatmul__": "matmul",
            "__ifloordiv__": "floor_divide", "__imod__": "remainder"}


def _to_device(self, device, /, *, stream=None):
    f = _ORIG["to_device"]
    if self.requires_grad and mode.state.enabled:
        mode.state.enabled = False
        try:
            out = f(self, device, stream=stream)
        finally:
            mode.state.enabled = True
        return record("to_device", RULES["to_device"][0], (self, device), {}, out, False)
    return f(self, device, stream=stream)


def _T(self):
    if self.ndim != 2:
        raise ValueError(f"Array.T: needs a 2-D array, got {self.ndim}-D; use .mT or permute_dims")
    return sys.modules["grilly"].permute_dims(self, (1, 0))


def _mT(self):
    return sys.modules["grilly"].matrix_transpose(self)


def _patch_array() -> None:
    for name in ("__getitem__", "__setitem__", "to_device", *_INPLACE):
        cur = Array.__dict__[name]
        _ORIG.setdefault(name, cur)
    Array.__getitem__ = _getitem
    Array.__setitem__ = _setitem
    Array.to_device = _to_device
    for d in _INPLACE:
        setattr(Array, d, _make_iop(d, _ORIG[d]))
    Array.backward = _backward
    Array.detach = detach
    Array.requires_grad_ = _requires_grad_
    Array.is_leaf = property(_is_leaf)
    Array.grad_fn = property(_grad_fn)
    Array.T = property(_T)
    Array.mT = property(_mT)


def install(namespace: dict) -> None:
    """Wrap the namespace's differentiable functions so they record a tape, add the autograd
    methods to Array and export the grad-mode helpers; calling it again is harmless."""
    _wrap_namespace(namespace)
    _patch_array()
    namespace.update(_MODE_EXPORTS)


def _early_install() -> None:
    # modules imported after this one (nn, optim) may bind namespace functions at import time,
    # so wrap now; grilly/__init__.py calls install() again once everything is imported
    g = sys.modules.get("grilly")
    if g is not None and hasattr(g, "asarray"):
        install(g.__dict__)


_early_install()
