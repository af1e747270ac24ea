"""Normalizations beyond the Array API standard, used by grilly.nn.functional: training-mode
``batch_norm`` (output and batch statistics) and ``batch_norm_backward`` (the three gradients),
and ``layer_norm``/``layer_norm_backward`` (per row), one kernel each (docs/kernels/norm.md).

Not star-imported into the grilly namespace. A device whose backend lacks these kernels gets
the same result composed from namespace ops on that device.
"""
from __future__ import annotations

from . import core
from . import dispatch as _dispatch
from .array import Array

__all__ = ["batch_norm", "batch_norm_backward", "batch_norm_update", "layer_norm",
           "layer_norm_backward"]

_DTYPES = frozenset({"float32", "float64"})   # what the kernels take (the contract)


def _check(op: str, x: Array, *others, ndim: int = 3) -> None:
    core.check_array(x, op, "x")
    if x._dtype.kind != "f" or x.ndim != ndim:
        raise TypeError(f"{op}: x must be real floating {'(N, C, S)' if ndim == 3 else '(M, D)'}"
                        f", got {x._dtype.name} of shape {x.shape}")
    for a, name, shape in others:
        if a is None:
            continue
        core.check_array(a, op, name)
        if a._dtype is not x._dtype or a.shape != shape:
            raise ValueError(f"{op}: {name} must be {x._dtype.name} of shape {shape}, got "
                             f"{a._dtype.name} {a.shape}")
        core.common_device(op, x, a)


def _call(op: str, x: Array, arrays: tuple, rest: tuple) -> tuple:
    """``op`` on the device's kernel where it takes x's dtype (Arrays as buffers, None kept),
    else its composition; the results as Arrays, None kept."""
    dev = x._device
    k = dev.kernels.get(op)
    if k is not None and x._dtype.name in _DTYPES:
        bufs = k(*(None if a is None else a._buf for a in arrays), *rest)
        return tuple(None if b is None else core.wrap(b, x._dtype, dev) for b in bufs)
    return core.composite(dev, op)(dev, *arrays, *rest)


def batch_norm(x: Array, weight: Array | None, bias: Array | None, eps: float) -> tuple:
    """(y, mean, invstd): x (N, C, S) normalized per channel by its batch mean and biased
    variance, y = (x - mean) * invstd * weight + bias; mean and invstd are (C,)."""
    c = (x.shape[1],) if x.ndim == 3 else None
    _check("batch_norm", x, (weight, "weight", c), (bias, "bias", c))
    return _call("batch_norm", x, (x, weight, bias), (float(eps),))


def batch_norm_backward(g: Array, x: Array, mean: Array, invstd: Array, weight: Array | None,
                        need: tuple = (True, True, True)) -> tuple:
    """The gradients (x, weight, bias) of ``batch_norm`` for the output gradient g, None where
    ``need`` (three bools) does not ask."""
    c = (x.shape[1],) if x.ndim == 3 else None
    _check("batch_norm_backward", x, (g, "g", x.shape), (mean, "mean", c),
           (invstd, "invstd", c), (weight, "weight", c))
    return _call("batch_norm_backward", x, (g, x, mean, invstd, weight),
                 (tuple(bool(v) for v in need),))


def composed_batch_norm(x: Array, weight, bias, eps: float) -> tuple:
    """Means over (N, S), then elementwise ops."""
    gp = _dispatch.ns
    c = x.shape[1]
    mean = gp.mean(x, axis=(0, 2), keepdims=True)
    d = x - mean
    inv = 1.0 / gp.sqrt(gp.mean(d * d, axis=(0, 2), keepdims=True) + eps)
    scale = inv if weight is None else inv * gp.reshape(weight, (1, c, 1))
    y = d * scale
    if bias is not None:
        y = y + gp.reshape(bias, (1, c, 1))
    return y, gp.reshape(mean, (c,)), gp.reshape(inv, (c,))


def composed_batch_norm_backward(g: Array, x: Array, mean: Array, invstd: Array, weight,
                                 need: tuple) -> tuple:
    """scale * (g - mean(g) - xhat * mean(g * xhat)), and the two channel sums."""
    gp = _dispatch.ns
    c = x.shape[1]
    n = x.shape[0] * x.shape[2]
    inv = gp.reshape(invstd, (1, c, 1))
    xhat = (x - gp.reshape(mean, (1, c, 1))) * inv
    sg = gp.sum(g, axis=(0, 2), keepdims=True)
    sgx = gp.sum(g * xhat, axis=(0, 2), keepdims=True)
    gx = None
    if need[0]:
        scale = inv if weight is None else inv * gp.reshape(weight, (1, c, 1))
        gx = scale * (g - sg / n - xhat * (sgx / n))
    return (gx, gp.reshape(sgx, (c,)) if need[1] else None,
            gp.reshape(sg, (c,)) if need[2] else None)


def batch_norm_update(running_mean: Array, running_var: Array, mean: Array, invstd: Array,
                      momentum: float, eps: float, n: int) -> None:
    """Update training-mode batch norm's running statistics in place from one batch's mean and
    invstd (``batch_norm``'s) over ``n`` values a channel: running_mean = running_mean (1 - m)
    + mean m, running_var likewise with the unbiased variance (1 / invstd^2 - eps) n/(n - 1)."""
    op = "batch_norm_update"
    core.check_array(running_mean, op, "running_mean")
    c = running_mean.shape
    for a, name in ((running_var, "running_var"), (mean, "mean"), (invstd, "invstd")):
        core.check_array(a, op, name)
        if a.shape != c:
            raise ValueError(f"{op}: {name} must have running_mean's shape {c}, got {a.shape}")
        core.common_device(op, running_mean, a)
    if n <= 1:
        raise ValueError(f"{op}: n must be > 1 values a channel, got {n}")
    dev = running_mean._device
    k = dev.kernels.get(op)
    if (k is not None and running_mean._dtype.name in _DTYPES
            and all(a._dtype is running_mean._dtype for a in (running_var, mean, invstd))):
        k(running_mean._buf, running_var._buf, mean._buf, invstd._buf, float(momentum),
          float(eps), int(n))
    else:
        core.composite(dev, op)(dev, running_mean, running_var, mean, invstd, float(momentum),
                                float(eps), int(n))


def composed_batch_norm_update(running_mean: Array, running_var: Array, mean: Array,
                               invstd: Array, momentum: float | Array, eps: float,
                               n: int) -> None:
    """Elementwise ops assigned back (the kernel computes these, in this order); ``momentum``
    may be a 0-d Array (batch norm's cumulative average: 1 / the batch count)."""
    bv = (1.0 / (invstd * invstd) - eps) * (n / (n - 1))
    running_mean[...] = running_mean * (1 - momentum) + mean * momentum
    running_var[...] = running_var * (1 - momentum) + bv * momentum


def layer_norm(x: Array, weight: Array | None, bias: Array | None, eps: float) -> tuple:
    """(y, mean, rstd): each row of x (M, D) normalized by its mean and biased variance,
    y = (x - mean) * rstd * weight + bias; mean and rstd = 1/sqrt(var + eps) are (M,)."""
    d = (x.shape[1],) if x.ndim == 2 else None
    _check("layer_norm", x, (weight, "weight", d), (bias, "bias", d), ndim=2)
    return _call("layer_norm", x, (x, weight, bias), (float(eps),))


def layer_norm_backward(g: Array, x: Array, mean: Array, rstd: Array, weight: Array | None,
                        need: tuple = (True, True, True)) -> tuple:
    """The gradients (x, weight, bias) of ``layer_norm`` for the output gradient g, None where
    ``need`` (three bools) does not ask."""
    d = (x.shape[1],) if x.ndim == 2 else None
    m = (x.shape[0],) if x.ndim == 2 else None
    _check("layer_norm_backward", x, (g, "g", x.shape), (mean, "mean", m), (rstd, "rstd", m),
           (weight, "weight", d), ndim=2)
    return _call("layer_norm_backward", x, (g, x, mean, rstd, weight),
                 (tuple(bool(v) for v in need),))


def composed_layer_norm(x: Array, weight, bias, eps: float) -> tuple:
    """Row means, then elementwise ops."""
    gp = _dispatch.ns
    mean = gp.mean(x, axis=1, keepdims=True)
    d = x - mean
    rstd = 1.0 / gp.sqrt(gp.mean(d * d, axis=1, keepdims=True) + eps)
    y = d * rstd
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y, gp.reshape(mean, (x.shape[0],)), gp.reshape(rstd, (x.shape[0],))


def composed_layer_norm_backward(g: Array, x: Array, mean: Array, rstd: Array, weight,
                                 need: tuple) -> tuple:
    """rstd * (gh - mean(gh) - xhat * mean(gh * xhat)) per row (gh = g * weight), and the two
    column sums."""
    gp = _dispatch.ns
    m = x.shape[0]
    r = gp.reshape(rstd, (m, 1))
    xhat = (x - gp.reshape(mean, (m, 1))) * r
    gx = None
    if need[0]:
        gh = g if weight is None else g * weight
        gx = r * (gh - gp.mean(gh, axis=1, keepdims=True)
                  - xhat * gp.mean(gh * xhat, axis=1, keepdims=True))
    return (gx, gp.sum(g * xhat, axis=0) if need[1] else None,
            gp.sum(g, axis=0) if need[2] else None)


# through the dispatcher (as "norm.<name>"): bfloat16 arrays compute in float32 there
_dispatch.export(globals(), "norm.")
