"""Fused ops beyond the Array API standard, used by grilly.nn.functional: softmax and log_softmax
along one axis, one kernel per call (the "softmax" family, docs/kernels/softmax.md).

Not star-imported into the grilly namespace. A device whose backend has no "softmax" kernel
gets the same result composed from namespace ops on that device.
"""
from __future__ import annotations


from . import core
from . import dispatch as _dispatch
from .array import Array

__all__ = ["softmax", "log_softmax"]


def _composed(x: Array, axis: int, log: bool) -> Array:
    gp = _dispatch.ns
    z = x - gp.max(x, axis=axis, keepdims=True)
    if log:
        return z - gp.log(gp.sum(gp.exp(z), axis=axis, keepdims=True))
    e = gp.exp(z)
    return e / gp.sum(e, axis=axis, keepdims=True)


def _run(op: str, x, axis) -> Array:
    core.check_array(x, op)
    if x._dtype.kind != "f":
        raise TypeError(f"{op}: x must have a real floating dtype, got {x._dtype.name}")
    nd = max(x.ndim, 1)  # a 0-d array is one row of one element (axis 0 or -1), as in torch
    ax = core.normalize_axis(axis, nd, op)
    dev = x._device
    k = dev.kernels.get(op)
    if k is None:
        return _composed(x, ax if x.ndim else None, op == "log_softmax")
    buf = x._buf
    if x.ndim == 0:
        buf = core.kernel(dev, "reshape")(buf, (1,))
    out = k(buf, ax)
    if x.ndim == 0:
        out = core.kernel(dev, "reshape")(out, ())
    return core.wrap(out, x._dtype, dev)


def softmax(x: Array, /, *, axis: int = -1) -> Array:
    """exp(x - max) / sum(exp(x - max)) along ``axis``, in one fused kernel."""
    return _run("softmax", x, axis)


def log_softmax(x: Array, /, *, axis: int = -1) -> Array:
    """(x - max) - log(sum(exp(x - max))) along ``axis``, in one fused kernel."""
    return _run("log_softmax", x, axis)


# dispatched (and differentiated: autograd/rules.py) as "fused.softmax" and "fused.log_softmax"
_dispatch.export(globals(), "fused.")
