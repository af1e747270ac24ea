"""Fused ops beyond the Array API standard, used by grilly.nn.functional: softmax and log_softmax
along one axis, the cross entropy of logits against class indices with its gradient, and
ReLU's gradient, one kernel per call (docs/kernels/softmax.md).

Not star-imported into the grilly namespace. A device whose backend lacks one of these kernels
gets the same result composed from namespace ops on that device.
"""
from __future__ import annotations

import math

from . import core
from . import dispatch as _dispatch
from .array import Array

__all__ = ["softmax", "log_softmax", "cross_entropy", "cross_entropy_backward", "relu_backward"]

_DTYPES = frozenset({"float32", "float64"})   # what the cross_entropy and relu kernels take


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


def _ce_check(op: str, x: Array, target: Array) -> None:
    core.check_array(x, op, "x")
    core.check_array(target, op, "target")
    if x._dtype.kind != "f" or x.ndim != 2:
        raise TypeError(f"{op}: x must be real floating (N, C) logits, got {x._dtype.name} of "
                        f"shape {x.shape}")
    if target._dtype.kind not in "iu":
        raise TypeError(f"{op}: target must hold integer class indices, got {target._dtype.name}")
    if target.shape != x.shape[:1]:
        raise ValueError(f"{op}: target shape {target.shape} does not match x's {x.shape} "
                         f"(expected {x.shape[:1]})")
    core.common_device(op, x, target)


def _ignore(ignore_index) -> int | None:
    """ignore_index for the kernels: None, or an int clipped to int32's range (the Vulkan
    kernel compares 32-bit words; a target that far out is out of range either way)."""
    if ignore_index is None:
        return None
    return max(-2**31, min(2**31 - 1, int(ignore_index)))


def cross_entropy(x: Array, target: Array, *, mean: bool = True, ignore_index=None) -> Array:
    """0-d: the cross entropy of logits x (N, C) against class indices target (N,), summed over
    the rows whose target lies in [0, C), divided by their count when ``mean`` (NaN when there
    is none). A row whose target is ``ignore_index`` takes no part; with an ``ignore_index``,
    any other target outside [0, C) makes the loss NaN (torch raises; finding it on the host
    would read the targets back each step), with None every such row takes no part."""
    _ce_check("cross_entropy", x, target)
    dev = x._device
    ig = _ignore(ignore_index)
    k = dev.kernels.get("cross_entropy")
    if k is not None and x._dtype.name in _DTYPES:
        return core.wrap(k(x._buf, target._buf, bool(mean), ig), x._dtype, dev)
    return core.composite(dev, "cross_entropy")(dev, x, target, bool(mean), ig)


def cross_entropy_backward(x: Array, target: Array, g: Array, *, mean: bool = True,
                           ignore_index=None) -> Array:
    """The gradient (N, C) of ``cross_entropy`` for its 0-d output gradient g:
    g * (softmax(x) - onehot(target)) on the counted rows (divided by their count when
    ``mean``), zero on the ignored ones, NaN on rows out of range (``cross_entropy``)."""
    _ce_check("cross_entropy_backward", x, target)
    dev = x._device
    ig = _ignore(ignore_index)
    k = dev.kernels.get("cross_entropy_backward")
    if k is not None and x._dtype.name in _DTYPES:
        return core.wrap(k(x._buf, target._buf, g._buf, bool(mean), ig), x._dtype, dev)
    return core.composite(dev, "cross_entropy_backward")(dev, x, target, g, bool(mean), ig)


def _bad_rows(x: Array, target: Array, ignore_index):
    """(N, 1) NaN where a row's target is out of [0, C) and not ignore_index, else 0 (None:
    no row is bad)."""
    gp = _dispatch.ns
    bad = (target < 0) | (target >= x.shape[1])
    bad = gp.expand_dims(bad & (target != ignore_index), axis=1)
    return gp.where(bad, gp.full((), math.nan, dtype=x.dtype, device=x.device),
                    gp.zeros((), dtype=x.dtype, device=x.device))


def _onehot(x: Array, target: Array) -> Array:
    gp = _dispatch.ns
    cls = gp.arange(x.shape[1], dtype=target.dtype, device=x.device)
    return gp.expand_dims(target, axis=1) == cls


def composed_cross_entropy(x: Array, target: Array, mean: bool, ignore_index=None) -> Array:
    """-sum(log_softmax(x) at the targets) (/ the number of counted rows); NaN where a target
    is out of range and not ignore_index (when that is given)."""
    gp = _dispatch.ns
    hot = _onehot(x, target)
    zero = gp.zeros((), dtype=x.dtype, device=x.device)
    total = -gp.sum(gp.where(hot, log_softmax(x, axis=1), zero))
    if ignore_index is not None:
        total = total + gp.sum(_bad_rows(x, target, ignore_index))
    return total / gp.sum(gp.astype(hot, x.dtype)) if mean else total


def composed_cross_entropy_backward(x: Array, target: Array, g: Array, mean: bool,
                                    ignore_index=None) -> Array:
    """(softmax(x) * counted - onehot) * g (/ the count); NaN rows where out of range."""
    gp = _dispatch.ns
    oh = gp.astype(_onehot(x, target), x.dtype)
    scale = g / gp.sum(oh) if mean else g
    out = (softmax(x, axis=1) * gp.sum(oh, axis=1, keepdims=True) - oh) * scale
    return out if ignore_index is None else out + _bad_rows(x, target, ignore_index)


def relu_backward(g: Array, y: Array) -> Array:
    """g where y > 0, else 0: ReLU's input gradient from its output y, in one kernel (one read
    of each, one write) where the device has it."""
    op = "relu_backward"
    core.check_array(g, op, "g")
    core.check_array(y, op, "y")
    if g.shape != y.shape or g._dtype is not y._dtype or g._dtype.kind != "f":
        raise ValueError(f"{op}: g and y must be real floating arrays of one shape and dtype, "
                         f"got {g._dtype.name} {g.shape} and {y._dtype.name} {y.shape}")
    core.common_device(op, g, y)
    dev = g._device
    k = dev.kernels.get(op)
    if k is not None and core.kernel_takes(k, g._dtype, _DTYPES):
        return core.wrap(k(g._buf, y._buf), g._dtype, dev)
    return core.composite(dev, op)(dev, g, y)


def composed_relu_backward(g: Array, y: Array) -> Array:
    """A comparison and a choice."""
    gp = _dispatch.ns
    return gp.where(y > 0, g, gp.zeros((), dtype=g.dtype, device=g.device))


# dispatched (and differentiated: autograd/rules.py) as "fused.softmax" and "fused.log_softmax"
_dispatch.export(globals(), "fused.")
