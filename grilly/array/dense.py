"""A dense layer's work beyond the Array API standard, used by grilly.nn.functional.linear:
``linear`` (x @ w.T + bias) and ``linear_backward`` (its three gradients), one kernel each (the
"linalg" family, docs/kernels/linalg.md).

Not star-imported into the grilly namespace. A device whose backend lacks these kernels gets
the same result composed from matmul, add and sum on that device.
"""
from __future__ import annotations

from . import core
from . import dispatch as _dispatch
from .array import Array

__all__ = ["linear", "linear_backward"]

_DTYPES = frozenset({"float32", "float64"})   # what the kernels take (the contract)


def _check(op: str, x: Array, w: Array, bias) -> None:
    # the common case in one test (every linear layer's forward and backward come here); the
    # loop below finds and names what is wrong otherwise
    if not (isinstance(x, Array) and isinstance(w, Array) and w._dtype is x._dtype
            and w._device is x._device and (bias is None or isinstance(bias, Array)
                                            and bias._dtype is x._dtype
                                            and bias._device is x._device)):
        _check_args(op, x, w, bias)
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"{op}: x (M, K) and w (N, K) must share K, got {x.shape} and {w.shape}")
    if bias is not None and bias.shape != (w.shape[0],):
        raise ValueError(f"{op}: bias must have shape ({w.shape[0]},), got {bias.shape}")


def _check_args(op: str, x, w, bias) -> None:
    """TypeError/ValueError naming the first of x, w, bias that is not an Array of x's dtype
    on x's device."""
    for a, name in ((x, "x"), (w, "w"), (bias, "bias")):
        if a is None:
            continue
        core.check_array(a, op, name)
        if a._dtype is not x._dtype:
            raise TypeError(f"{op}: {name} has dtype {a._dtype.name}, expected x's {x._dtype.name}")
        core.common_device(op, x, a)


def linear(x: Array, w: Array, bias: Array | None = None) -> Array:
    """x (M, K) @ w (N, K).T + bias (N,): (M, N), one kernel where the device has it."""
    _check("linear", x, w, bias)
    dev = x._device
    k = dev.kernels.get("linear")
    if k is not None and core.kernel_takes(k, x._dtype, _DTYPES):
        return core.wrap(k(x._buf, w._buf, None if bias is None else bias._buf), x._dtype, dev)
    return core.composite(dev, "linear")(dev, x, w, bias)


def linear_backward(g: Array, x: Array, w: Array, need: tuple = (True, True, True),
                    grad_dtype=None) -> tuple:
    """(g @ w, g.T @ x, sum of g's rows): the gradients of ``linear`` for x, w and the bias,
    each None where ``need`` (three bools) does not ask for it. ``grad_dtype`` float32 with
    float16 operands gives the weight and bias gradients in float32 (autocast's float32 master
    weights): computed there by a kernel that declares ``takes_grad_dtype``, else cast."""
    _check("linear_backward", x, w, None)
    if g.shape != (x.shape[0], w.shape[0]) or g._dtype is not x._dtype:
        raise ValueError(f"linear_backward: g must be {x._dtype.name} of shape "
                         f"{(x.shape[0], w.shape[0])}, got {g._dtype.name} {g.shape}")
    gd, wide = core.grad_dtype("linear_backward", x, grad_dtype)
    need = tuple([bool(v) for v in need])
    dev = x._device
    k = dev.kernels.get("linear_backward")
    if k is not None and core.kernel_takes(k, x._dtype, _DTYPES) and (
            not wide or getattr(k, "takes_grad_dtype", False)):
        bufs = k(g._buf, x._buf, w._buf, need, gd) if wide else k(g._buf, x._buf, w._buf, need)
        return tuple([None if b is None else core.wrap(b, d, dev)
                      for b, d in zip(bufs, (x._dtype, gd, gd))])
    if not wide:
        return core.composite(dev, "linear_backward")(dev, g, x, w, need)
    ns = _dispatch.ns
    gx, gw, _ = core.composite(dev, "linear_backward")(dev, g, x, w, need[:2] + (False,))
    return (gx, None if gw is None else ns.astype(gw, gd),
            ns.sum(g, axis=0, dtype=gd) if need[2] else None)


def composed_linear(x: Array, w: Array, bias) -> Array:
    """matmul with the transposed weight, then the bias added."""
    gp = _dispatch.ns
    y = gp.matmul(x, gp.matrix_transpose(w))
    return y if bias is None else y + bias


def composed_linear_backward(g: Array, x: Array, w: Array, need: tuple) -> tuple:
    """Two matmuls and a column sum."""
    gp = _dispatch.ns
    return (gp.matmul(g, w) if need[0] else None,
            gp.matmul(gp.matrix_transpose(g), x) if need[1] else None,
            gp.sum(g, axis=0) if need[2] else None)


# through the dispatcher (as "dense.<name>"): bfloat16 arrays compute in float32 there
_dispatch.export(globals(), "dense.")
