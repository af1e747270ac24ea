"""Fused multi-step leaky integrate-and-fire: all T steps of a layer of N neurons in one kernel
call, forward (``lif_forward``) and backward through time (``lif_backward``); the kernels of the
contract's "snn" family. grilly.nn.snn's LIF/IF use them for their multi-step path (docs/snn.md,
"The fused path"), with a refractory period as optional arguments; AdaptiveLIF uses
``alif_forward``/``alif_backward`` (an adaptive threshold). They are not differentiable
themselves (the layer wraps them in a Function).

A device whose backend lacks a kernel runs the default composition below: the same equations one
step at a time with namespace ops (the per-step code of grilly.nn.snn.functional).
"""
from __future__ import annotations

import math

from . import core
from . import dispatch as _dispatch
from .array import Array

__all__ = ["lif_forward", "lif_backward", "alif_forward", "alif_backward",
           "leaky_integrate"]

RESETS = ("subtract", "zero", "none")
SURROGATES = ("atan", "fast_sigmoid", "sigmoid", "triangle", "straight_through")


# ---- the default compositions (composites.py registers them) ---------------------------------
# A second per-neuron state variable, ``ext`` (the kernels' optional arguments): None (LIF),
# ("refractory", steps, ref0) or ("adaptive", a0, rho, gamma); its value after every step is
# the trace's second plane, trace[1] (the trace is then (2, T, N)).
def _h(v, th):
    return _dispatch.ns.astype(v > th, v.dtype)


def _reset_after(h, s, th, reset: str):
    """The membrane after the within-step reset of pre-reset membrane h by spikes s
    (reset_delay=False)."""
    if reset == "subtract":
        return h - s * th
    if reset == "zero":
        return h * (1.0 - s)
    return h


def _stack(steps: list, like: Array) -> Array:
    """The steps stacked on a new axis 0: (T, N) like ``like`` (also when T = 0)."""
    return _dispatch.ns.stack(steps, axis=0) if steps else _dispatch.ns.zeros_like(like)


def _ext_step(ext, s_prev):
    """(active mask or None, threshold offset or None) of a step whose second state is s_prev."""
    if ext is None:
        return None, None
    if ext[0] == "refractory":
        return _dispatch.ns.astype(s_prev <= 0, s_prev.dtype), None
    return None, ext[3] * s_prev


def composed_forward(x: Array, mem0: Array, beta: Array, thr: Array, reset: str, delay: bool,
                     store: bool, ext=None):
    """lif_forward (ext None or refractory) or alif_forward (ext adaptive) one step at a time:
    (spikes, final membrane, trace or None, final second state or None), the operations in the
    order of grilly.nn.snn.functional (_fire, _count_down, adaptive_lif_step)."""
    gp = _dispatch.ns
    u, s = mem0, (None if ext is None else ext[2] if ext[0] == "refractory" else ext[1])
    spikes, trace, aux = [], [], []
    for xt in gp.unstack(x, axis=0):
        act, off = _ext_step(ext, s)
        if act is not None:
            xt = xt * act
        tho = thr if off is None else thr + off   # the threshold of the old state
        if delay:
            r = _h(u, tho)
            thn = thr
            if off is not None:
                s = ext[2] * s + r
                thn = thr + ext[3] * s
            if reset == "subtract":
                u = beta * u + xt - r * tho
            elif reset == "zero":
                u = beta * ((1.0 - r) * u) + xt
            else:
                u = beta * u + xt
            trace.append(u)
            spk = _h(u, thn)
        else:
            h = beta * u + xt
            trace.append(h)
            spk = _h(h, tho)
        if act is not None:
            spk = spk * act
        if not delay:
            u = _reset_after(h, spk, tho, reset)
            if off is not None:
                s = ext[2] * s + spk
        if act is not None:
            s = gp.where(spk > 0, float(ext[1]), gp.maximum(s - 1.0, 0.0))
        spikes.append(spk)
        aux.append(s)
    tr = None
    if store:
        tr = _stack(trace, x)
        if ext is not None:
            tr = gp.stack([tr, _stack(aux, x)], axis=0)
    return _stack(spikes, x), u, tr, s


def _abs(v: Array) -> Array:
    """|v| for the surrogates: the device's abs, or maximum(v, -v) where it has none (abs is an
    optional kernel; a composition may use only required and composed ones). The surrogates
    see the same values either way: a signed zero or a NaN gives the same result."""
    gp = _dispatch.ns
    return gp.abs(v) if "abs" in v.device.kernels else gp.maximum(v, -v)


def _surrogate_grad(kind: str, a: float, v: Array) -> Array:
    """The surrogate derivative at v, written as grilly.nn.snn.surrogate writes it."""
    gp = _dispatch.ns
    if kind == "atan":
        return (a / 2) / (1.0 + gp.square((math.pi / 2 * a) * v))
    if kind == "fast_sigmoid":
        return 1.0 / gp.square(a * _abs(v) + 1.0)
    if kind == "sigmoid":
        h = (a / 2) * v
        return a / gp.square(gp.exp(h) + gp.exp(-h))
    if kind == "triangle":
        return gp.maximum(1.0 - _abs(v) / a, 0.0) / a
    return gp.ones_like(v)


def composed_backward(gs: Array, gm: Array, x: Array, mem0: Array, beta: Array, thr: Array,
                      trace, reset: str, delay: bool, surrogate: str, slope: float,
                      detach: bool = True, ext=None, ga=None):
    """lif_backward / alif_backward one step at a time (reverse): (grad x, grad mem0, grad
    beta, grad thr, grad of the initial adaptation (ext adaptive, from its final gradient
    ``ga``) or None). ``detach`` False: the reset signal is differentiated through the
    surrogate as well. The refractory counter and mask carry no gradient."""
    gp = _dispatch.ns
    if trace is None:
        trace = composed_forward(x, mem0, beta, thr, reset, delay, True, ext)[2]
    adaptive = ext is not None and ext[0] == "adaptive"
    if ext is not None:
        aux, trace = gp.unstack(trace[1], axis=0), trace[0]
        s0 = ext[2] if ext[0] == "refractory" else ext[1]
    tr, g_s = gp.unstack(trace, axis=0), gp.unstack(gs, axis=0)
    g, gA = gm, ga
    gb, gt, gx = gp.zeros_like(mem0), gp.zeros_like(mem0), [None] * len(tr)

    def state(t):   # (active mask or None, the threshold of the state before step t)
        if ext is None:
            return None, thr
        act, off = _ext_step(ext, aux[t - 1] if t > 0 else s0)
        return act, thr if off is None else thr + off

    for t in range(len(tr) - 1, -1, -1):
        v = tr[t]
        act, tho = state(t)
        gst = g_s[t] if act is None else g_s[t] * act
        gr = None   # dL/dR, R the reset signal (used when it is not detached)
        if delay:
            # U[t] = beta U[t-1] + act x[t] - R tho (subtract), R = H(U[t-1] - tho), A[t] =
            # rho A[t-1] + R, S[t] = act H(U[t] - (thr + gamma A[t]))
            thn = thr + ext[3] * aux[t] if adaptive else thr
            d = gst * _surrogate_grad(surrogate, slope, v - thn)
            gu = g + d
            gt = gt - d
            if adaptive:
                gA = gA - ext[3] * d
            gx[t] = gu if act is None else gu * act
            up = tr[t - 1] if t > 0 else mem0
            r = _h(up, tho)
            gtho = None
            if reset == "subtract":
                gb, gr, gtho, g = gb + gu * up, -(gu * tho), -(gu * r), gu * beta
            elif reset == "zero":
                gb = gb + gu * ((1.0 - r) * up)
                gr, g = -(gu * (beta * up)), gu * (beta * (1.0 - r))
            else:
                gb, g = gb + gu * up, gu * beta
            if adaptive:
                gr = gA if gr is None else gr + gA
            if not detach and gr is not None:
                dr = gr * _surrogate_grad(surrogate, slope, up - tho)
                g = g + dr
                gtho = -dr if gtho is None else gtho - dr
        else:
            # h = beta U[t-1] + act x[t]; S[t] = act H(h - tho) = R; U[t] = h - R tho
            # (subtract), h (1 - R) (zero); A[t] = rho A[t-1] + R
            s = _h(v, tho) if act is None else _h(v, tho) * act
            gh = g * (1.0 - s) if reset == "zero" else g
            gtho = -(g * s) if reset == "subtract" else None
            if not detach:
                gr = -(g * tho) if reset == "subtract" else -(g * v) if reset == "zero" else None
                if adaptive:
                    gr = gA if gr is None else gr + gA
            gss = g_s[t] if gr is None else g_s[t] + gr
            e = (gss if act is None else gss * act) * _surrogate_grad(surrogate, slope, v - tho)
            gh = gh + e
            gtho = -e if gtho is None else gtho - e
            gx[t] = gh if act is None else gh * act
            up = mem0
            if t > 0:
                act1, tho1 = state(t - 1)
                s1 = _h(tr[t - 1], tho1) if act1 is None else _h(tr[t - 1], tho1) * act1
                up = _reset_after(tr[t - 1], s1, tho1, reset)
            gb, g = gb + gh * up, gh * beta
        if gtho is not None:
            gt = gt + gtho
        if adaptive:   # tho = thr + gamma A[t-1]; A[t] = rho A[t-1] + R
            gA = ext[2] * gA if gtho is None else ext[2] * gA + ext[3] * gtho
    return _stack(gx, x), g, gb, gt, gA


def composed_leaky(x: Array, s0: Array, alpha: Array, reverse: bool) -> Array:
    """leaky_integrate one step at a time."""
    gp = _dispatch.ns
    steps = gp.unstack(x, axis=0)
    out, s = [None] * len(steps), s0
    for t in (range(len(steps) - 1, -1, -1) if reverse else range(len(steps))):
        s = alpha * s + steps[t]
        out[t] = s
    return _stack(out, x)


# ---- the public calls ---------------------------------------------------------------------------
def _check(op: str, x, like: tuple, arg: str) -> None:
    core.check_array(x, op, arg)
    if x.shape != like:
        raise ValueError(f"{op}: {arg} must have shape {like}, got {x.shape}")


def _check_common(op: str, x, reset: str, *per_neuron) -> tuple:
    """x is a real floating (T, N) array; each (array, name) of ``per_neuron`` is (N,) of x's
    dtype; returns the one device."""
    core.check_array(x, op, "x")
    if x.ndim != 2 or x._dtype.kind != "f":
        raise TypeError(f"{op}: x must be a real floating (T, N) array, got {x._dtype.name} of "
                        f"shape {x.shape}")
    for a, name in per_neuron:
        _check(op, a, (x.shape[1],), name)
        if a._dtype is not x._dtype:
            raise TypeError(f"{op}: {name} must have x's dtype {x._dtype.name}, got "
                            f"{a._dtype.name}")
    if reset not in RESETS:
        raise ValueError(f"{op}: reset must be one of {RESETS}, got {reset!r}")
    return core.common_device(op, x, *(a for a, _ in per_neuron))


def _check_refractory(op: str, refractory, ref0) -> int:
    if isinstance(refractory, bool) or not isinstance(refractory, int) or refractory < 0:
        raise ValueError(f"{op}: refractory must be an int >= 0 (steps), got {refractory!r}")
    if (ref0 is None) != (refractory == 0):
        raise ValueError(f"{op}: ref0 (the starting refractory counter) is given exactly when "
                         f"refractory > 0, got refractory={refractory} and ref0 "
                         f"{'None' if ref0 is None else 'given'}")
    return refractory


def _check_backward(op: str, x, dev, grads: tuple, trace, trace_shape: tuple, surrogate: str,
                    slope) -> None:
    for a, like, name in grads:
        _check(op, a, like, name)
    if trace is not None:
        _check(op, trace, trace_shape, "trace")
    if surrogate not in SURROGATES:
        raise ValueError(f"{op}: surrogate must be one of {SURROGATES}, got {surrogate!r}")
    if not float(slope) > 0:
        raise ValueError(f"{op}: slope must be > 0, got {slope}")
    for a, name in [(a, n) for a, _, n in grads] + [(trace, "trace")]:
        if a is not None and (a._dtype is not x._dtype or a._device is not dev):
            raise TypeError(f"{op}: {name} must have x's dtype and device")


def lif_forward(x: Array, mem0: Array, beta: Array, thr: Array, *, reset: str = "subtract",
                reset_delay: bool = True, store: bool = True, refractory: int = 0,
                ref0: Array | None = None) -> tuple:
    """All T steps of LIF on currents x (T, N): (spikes (T, N), final membrane (N,), the
    pre-reset membrane trace (T, N) when ``store``, else None). With ``refractory`` steps and
    the starting counter ``ref0`` (N,), the final counter (N,) is appended and the trace is
    (2, T, N): the membrane and the counter of every step."""
    op = "lif_forward"
    k = _check_refractory(op, refractory, ref0)
    extra = ((ref0, "ref0"),) if k else ()
    dev = _check_common(op, x, reset, (mem0, "mem0"), (beta, "beta"), (thr, "thr"), *extra)
    res = core.call(dev, op, x, mem0, beta, thr, reset, bool(reset_delay), bool(store),
                    *((k, ref0) if k else ()))
    d = x._dtype
    return tuple(core.wrap(r, d, dev) if r is not None else None for r in res)


def lif_backward(grad_spikes: Array, grad_mem: Array, x: Array, mem0: Array, beta: Array,
                 thr: Array, trace: Array | None, *, reset: str = "subtract",
                 reset_delay: bool = True, surrogate: str = "atan", slope: float = 2.0,
                 detach_reset: bool = True, refractory: int = 0,
                 ref0: Array | None = None) -> tuple:
    """Backward through all T steps of lif_forward (trace None: recomputed): the gradients of
    x (T, N), mem0, beta and thr (each (N,), per neuron); ``detach_reset=False`` also
    differentiates the reset signal through the surrogate. With ``refractory`` (and ``ref0``)
    the trace is lif_forward's (2, T, N) one; the counter carries no gradient."""
    op = "lif_backward"
    k = _check_refractory(op, refractory, ref0)
    extra = ((ref0, "ref0"),) if k else ()
    dev = _check_common(op, x, reset, (mem0, "mem0"), (beta, "beta"), (thr, "thr"), *extra)
    _check_backward(op, x, dev, ((grad_spikes, x.shape, "grad_spikes"),
                                 (grad_mem, (x.shape[1],), "grad_mem")),
                    trace, (2, *x.shape) if k else x.shape, surrogate, slope)
    # the contract's optional last arguments, passed only when not the defaults
    extra = (bool(detach_reset), k, ref0) if k else () if detach_reset else (False,)
    res = core.call(dev, op, grad_spikes, grad_mem, x, mem0, beta, thr, trace, reset,
                    bool(reset_delay), surrogate, float(slope), *extra)
    return tuple(core.wrap(r, x._dtype, dev) for r in res)


def alif_forward(x: Array, mem0: Array, a0: Array, beta: Array, rho: Array, gamma: Array,
                 thr: Array, *, reset: str = "subtract", reset_delay: bool = True,
                 store: bool = True) -> tuple:
    """All T steps of the adaptive-threshold LIF (threshold thr + gamma a, a = rho a + spike)
    on currents x (T, N) from membrane mem0 and adaptation a0: (spikes (T, N), final membrane
    (N,), final adaptation (N,), the trace (2, T, N) when ``store`` (the pre-reset membrane and
    the adaptation of every step), else None)."""
    op = "alif_forward"
    dev = _check_common(op, x, reset, (mem0, "mem0"), (a0, "a0"), (beta, "beta"), (rho, "rho"),
                        (gamma, "gamma"), (thr, "thr"))
    res = core.call(dev, op, x, mem0, a0, beta, rho, gamma, thr, reset, bool(reset_delay),
                    bool(store))
    d = x._dtype
    return tuple(core.wrap(r, d, dev) if r is not None else None for r in res)


def alif_backward(grad_spikes: Array, grad_mem: Array, grad_adapt: Array, x: Array,
                  mem0: Array, a0: Array, beta: Array, rho: Array, gamma: Array, thr: Array,
                  trace: Array | None, *, reset: str = "subtract", reset_delay: bool = True,
                  surrogate: str = "atan", slope: float = 2.0,
                  detach_reset: bool = True) -> tuple:
    """Backward through all T steps of alif_forward (trace None: recomputed): the gradients
    of x (T, N), mem0, a0, beta and thr (each (N,), per neuron), given those of the spikes,
    the final membrane and the final adaptation; rho and gamma are constants."""
    op = "alif_backward"
    dev = _check_common(op, x, reset, (mem0, "mem0"), (a0, "a0"), (beta, "beta"), (rho, "rho"),
                        (gamma, "gamma"), (thr, "thr"))
    n = (x.shape[1],)
    _check_backward(op, x, dev, ((grad_spikes, x.shape, "grad_spikes"),
                                 (grad_mem, n, "grad_mem"), (grad_adapt, n, "grad_adapt")),
                    trace, (2, *x.shape), surrogate, slope)
    res = core.call(dev, op, grad_spikes, grad_mem, grad_adapt, x, mem0, a0, beta, rho, gamma,
                    thr, trace, reset, bool(reset_delay), surrogate, float(slope),
                    bool(detach_reset))
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
