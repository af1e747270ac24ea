"""Fused multi-step leaky integrate-and-fire: all T steps of a layer of N neurons in one kernel
call, forward (``lif_forward``) and backward through time (``lif_backward``); the kernels of the
contract's "snn" family. grilly.nn.snn's LIF/IF use them for their multi-step path (docs/snn.md,
"The fused path"); they are not differentiable themselves (the layer wraps them in a Function).

A device whose backend lacks a kernel runs the default composition below: the same equations one
step at a time with namespace ops (the per-step code of grilly.nn.snn.functional._fire).
"""
from __future__ import annotations

import math

from . import core
from . import dispatch as _dispatch
from .array import Array

__all__ = ["lif_forward", "lif_backward", "leaky_integrate"]

RESETS = ("subtract", "zero", "none")
SURROGATES = ("atan", "fast_sigmoid", "sigmoid", "triangle", "straight_through")


# ---- the default compositions (composites.py registers them) ---------------------------------
def _h(v, th):
    return _dispatch.ns.astype(v > th, v.dtype)


def _post_reset(h, th, reset: str):
    """The membrane after the within-step reset of pre-reset membrane h (reset_delay=False)."""
    s = _h(h, th)
    if reset == "subtract":
        return h - s * th
    if reset == "zero":
        return h * (1.0 - s)
    return h


def composed_forward(x: Array, mem0: Array, beta: Array, thr: Array, reset: str, delay: bool,
                     store: bool):
    """lif_forward one step at a time: (spikes, final membrane, trace or None)."""
    gp = _dispatch.ns
    u, spikes, trace = mem0, [], []
    for xt in gp.unstack(x, axis=0):
        if delay:
            r = _h(u, thr)
            if reset == "subtract":
                u = beta * u + xt - r * thr
            elif reset == "zero":
                u = beta * ((1.0 - r) * u) + xt
            else:
                u = beta * u + xt
            trace.append(u)
            spikes.append(_h(u, thr))
        else:
            h = beta * u + xt
            trace.append(h)
            spikes.append(_h(h, thr))
            u = _post_reset(h, thr, reset)
    return gp.stack(spikes, axis=0), u, (gp.stack(trace, axis=0) if store else None)


def _surrogate_grad(kind: str, a: float, v: Array) -> Array:
    """The surrogate derivative at v, written as grilly.nn.snn.surrogate writes it."""
    gp = _dispatch.ns
    if kind == "atan":
        return (a / 2) / (1.0 + gp.square((math.pi / 2 * a) * v))
    if kind == "fast_sigmoid":
        return 1.0 / gp.square(a * gp.abs(v) + 1.0)
    if kind == "sigmoid":
        h = (a / 2) * v
        return a / gp.square(gp.exp(h) + gp.exp(-h))
    if kind == "triangle":
        return gp.maximum(1.0 - gp.abs(v) / a, 0.0) / a
    return gp.ones_like(v)


def composed_backward(gs: Array, gm: Array, x: Array, mem0: Array, beta: Array, thr: Array,
                      trace, reset: str, delay: bool, surrogate: str, slope: float,
                      detach: bool = True):
    """lif_backward one step at a time (reverse): (grad x, grad mem0, grad beta, grad thr).
    ``detach`` False: the reset signal is differentiated through the surrogate as well."""
    gp = _dispatch.ns
    if trace is None:
        trace = composed_forward(x, mem0, beta, thr, reset, delay, True)[2]
    tr, g_s = gp.unstack(trace, axis=0), gp.unstack(gs, axis=0)
    g, gb, gt, gx = gm, gp.zeros_like(mem0), gp.zeros_like(mem0), [None] * len(tr)
    for t in range(len(tr) - 1, -1, -1):
        v = tr[t]
        d = g_s[t] * _surrogate_grad(surrogate, slope, v - thr)
        gt = gt - d
        if delay:
            up = tr[t - 1] if t > 0 else mem0
            r = _h(up, thr)
            dr = None if detach else _surrogate_grad(surrogate, slope, up - thr)
            g = g + d
            gx[t] = g
            if reset == "subtract":
                gt, gb = gt - g * r, gb + g * up
                if dr is None:
                    g = g * beta
                else:
                    gt, g = gt + g * (thr * dr), g * (beta - thr * dr)
            elif reset == "zero":
                gb = gb + g * ((1.0 - r) * up)
                if dr is None:
                    g = g * (beta * (1.0 - r))
                else:
                    k = beta * up * dr
                    gt, g = gt + g * k, g * (beta * (1.0 - r) - k)
            else:
                gb, g = gb + g * up, g * beta
        else:
            s = _h(v, thr)
            dr = None if detach else _surrogate_grad(surrogate, slope, v - thr)
            gh = g * (1.0 - s) if reset == "zero" else g
            if reset == "subtract":
                gt = gt - g * s
                if dr is not None:
                    gt, gh = gt + g * (thr * dr), gh - g * (thr * dr)
            elif reset == "zero" and dr is not None:
                gt, gh = gt + g * (v * dr), gh - g * (v * dr)
            gh = gh + d
            gx[t] = gh
            up = _post_reset(tr[t - 1], thr, reset) if t > 0 else mem0
            gb, g = gb + gh * up, gh * beta
    return gp.stack(gx, axis=0), g, gb, gt


def composed_leaky(x: Array, s0: Array, alpha: Array, reverse: bool) -> Array:
    """leaky_integrate one step at a time."""
    gp = _dispatch.ns
    steps = gp.unstack(x, axis=0)
    out, s = [None] * len(steps), s0
    for t in (range(len(steps) - 1, -1, -1) if reverse else range(len(steps))):
        s = alpha * s + steps[t]
        out[t] = s
    return gp.stack(out, axis=0)


# ---- the public calls ---------------------------------------------------------------------------
def _check(op: str, x, like: tuple, arg: str) -> None:
    core.check_array(x, op, arg)
    if x.shape != like:
        raise ValueError(f"{op}: {arg} must have shape {like}, got {x.shape}")


def _check_common(op: str, x, mem0, beta, thr, reset: str) -> tuple:
    core.check_array(x, op, "x")
    if x.ndim != 2 or x._dtype.kind != "f":
        raise TypeError(f"{op}: x must be a real floating (T, N) array, got {x._dtype.name} of "
                        f"shape {x.shape}")
    for a, name in ((mem0, "mem0"), (beta, "beta"), (thr, "thr")):
        _check(op, a, (x.shape[1],), name)
        if a._dtype is not x._dtype:
            raise TypeError(f"{op}: {name} must have x's dtype {x._dtype.name}, got "
                            f"{a._dtype.name}")
    if reset not in RESETS:
        raise ValueError(f"{op}: reset must be one of {RESETS}, got {reset!r}")
    return core.common_device(op, x, mem0, beta, thr)


def lif_forward(x: Array, mem0: Array, beta: Array, thr: Array, *, reset: str = "subtract",
                reset_delay: bool = True, store: bool = True) -> tuple:
    """All T steps of LIF on currents x (T, N): (spikes (T, N), final membrane (N,), the
    pre-reset membrane trace (T, N) when ``store``, else None)."""
    op = "lif_forward"
    dev = _check_common(op, x, mem0, beta, thr, reset)
    spk, mem, tr = core.call(dev, op, x, mem0, beta, thr, reset, bool(reset_delay), bool(store))
    d = x._dtype
    return (core.wrap(spk, d, dev), core.wrap(mem, d, dev),
            core.wrap(tr, d, dev) if tr is not None else None)


def lif_backward(grad_spikes: Array, grad_mem: Array, x: Array, mem0: Array, beta: Array,
                 thr: Array, trace: Array | None, *, reset: str = "subtract",
                 reset_delay: bool = True, surrogate: str = "atan", slope: float = 2.0,
                 detach_reset: bool = True) -> tuple:
    """Backward through all T steps of lif_forward (trace None: recomputed): the gradients of
    x (T, N), mem0, beta and thr (each (N,), per neuron); ``detach_reset=False`` also
    differentiates the reset signal through the surrogate."""
    op = "lif_backward"
    dev = _check_common(op, x, mem0, beta, thr, reset)
    _check(op, grad_spikes, x.shape, "grad_spikes")
    _check(op, grad_mem, (x.shape[1],), "grad_mem")
    if trace is not None:
        _check(op, trace, x.shape, "trace")
    if surrogate not in SURROGATES:
        raise ValueError(f"{op}: surrogate must be one of {SURROGATES}, got {surrogate!r}")
    if not float(slope) > 0:
        raise ValueError(f"{op}: slope must be > 0, got {slope}")
    for a, name in ((grad_spikes, "grad_spikes"), (grad_mem, "grad_mem"), (trace, "trace")):
        if a is not None and (a._dtype is not x._dtype or a._device is not dev):
            raise TypeError(f"{op}: {name} must have x's dtype and device")
    extra = () if detach_reset else (False,)   # the contract's optional last argument
    res = core.call(dev, op, grad_spikes, grad_mem, x, mem0, beta, thr, trace, reset,
                    bool(reset_delay), surrogate, float(slope), *extra)
    return tuple(core.wrap(r, x._dtype, dev) for r in res)


def leaky_integrate(x: Array, s0: Array, alpha: Array, *, reverse: bool = False) -> Array:
    """All T steps of a leaky integrator on x (T, N): out[t] = alpha out[t-1] + x[t] from
    out[-1] = s0; ``reverse``: out[t] = alpha out[t+1] + x[t] from out[T] = s0 (the backward
    of the forward scan). A Synaptic layer's current; not differentiable itself."""
    op = "leaky_integrate"
    core.check_array(x, op, "x")
    if x.ndim != 2 or x._dtype.kind != "f":
        raise TypeError(f"{op}: x must be a real floating (T, N) array, got {x._dtype.name} of "
                        f"shape {x.shape}")
    for a, name in ((s0, "s0"), (alpha, "alpha")):
        _check(op, a, (x.shape[1],), name)
        if a._dtype is not x._dtype:
            raise TypeError(f"{op}: {name} must have x's dtype {x._dtype.name}, got "
                            f"{a._dtype.name}")
    dev = core.common_device(op, x, s0, alpha)
    return core.wrap(core.call(dev, op, x, s0, alpha, bool(reverse)), x._dtype, dev)


_dispatch.export(globals(), "spiking.")
