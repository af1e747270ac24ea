"""The fused multi-step LIF path: all T steps forward in one kernel call and all T steps backward
in another (grilly.array.spiking, the contract's lif_forward/lif_backward, and alif_forward/
alif_backward for the adaptive threshold), wrapped as one autograd Function. LIF/IF (with or
without a refractory period), Synaptic and AdaptiveLIF's multi_step use it when ``supported``
says the options allow.

Memory: the forward keeps one float per neuron per step (the pre-reset membrane, what the
surrogate is evaluated at; two with a refractory counter or an adaptation), or nothing with
``recompute=True`` (backward then runs the forward again, holding its trace only while it runs).

Second order: under ``create_graph=True`` the kernels' backward would give gradients with no
graph of their own, so backward runs the forward again one step at a time with namespace ops
(grilly.nn.snn.functional's per-step equations, the spikes from the layer's surrogate) and
differentiates that with ``grilly.autograd.grad``: a recorded graph, differentiable again.
"""
from __future__ import annotations

import math

from ...array import api as gp
from ...array import spiking

from ...array.array import Array
from ...autograd.function import Function
from ...autograd.mode import is_grad_enabled
from ...autograd.tape import grad
from . import functional as F
from .surrogate import _ATan, _FastSigmoid, _Sigmoid, _StraightThrough, _Triangle

__all__ = ["lif_sequence", "alif_sequence", "synaptic_current", "supported"]

_KINDS = {_ATan: ("atan", "alpha"), _FastSigmoid: ("fast_sigmoid", "slope"),
          _Sigmoid: ("sigmoid", "slope"), _Triangle: ("triangle", "width"),
          _StraightThrough: ("straight_through", None)}


def surrogate_kind(sg) -> tuple | None:
    """(kernel surrogate name, slope) of a built-in Surrogate, None for any other callable."""
    k = _KINDS.get(type(sg))
    if k is None:
        return None
    return k[0], float(getattr(sg, k[1])) if k[1] else 1.0


def supported(x: Array, surrogate, *, detach_reset: bool, return_mem: bool,
              reset: str = "subtract", reset_delay: bool = True) -> bool:
    """Whether the fused kernels cover these options (else the per-step composition runs).
    The membrane trace (``return_mem``) is the kernel's stored trace where it equals the
    per-step membrane and its gradient is a leaky scan: snnTorch's reset_delay with a subtract
    or no reset, the reset detached."""
    if return_mem and not (reset_delay and reset in ("subtract", "none") and detach_reset):
        return False
    return (surrogate_kind(surrogate) is not None and x.dtype in (gp.float32, gp.float64)
            and x.ndim >= 2 and x.size > 0)


def _common(*arrays):
    """The arrays (None kept) in their common dtype: a state kept in float32 and a float64 input
    (after ``model.double()``, or a new input dtype mid-sequence) run as the per-step path's
    promotion does, where the kernels take one dtype."""
    given = [a for a in arrays if a is not None]
    if all(a.dtype == given[0].dtype for a in given):   # (the usual case: nothing to promote)
        return arrays
    dt = gp.result_type(*given)
    return tuple(a if a is None or a.dtype == dt else gp.astype(a, dt) for a in arrays)


def _per_neuron(v, shape: tuple, n: int, like: Array) -> Array:
    """A float or an Array broadcastable to the neuron shape, as a contiguous (N,) array."""
    if isinstance(v, Array):
        return gp.reshape(gp.astype(gp.broadcast_to(v, shape), like.dtype), (n,), copy=True)
    return gp.full((n,), float(v), dtype=like.dtype, device=like.device)


def _before(first: Array, trace: Array) -> Array:
    """Every step's previous value: [first, trace[0], ..., trace[T-2]] (T, N)."""
    return gp.concat([gp.reshape(first, (1, -1)), trace[:-1]], axis=0)


def _trace_grads(g_trace, x2, m0, b, th, mem_tr, reset: str, need, act=None, adapt=None):
    """The gradients a loss on the membrane trace adds (reset_delay, a subtract or no reset,
    the reset detached): (x, mem0, beta, thr, a0 or None). dL/dU[t] gains g_trace[t]; with R[t]
    detached, U[t] = beta U[t-1] + act x[t] - R[t] tho[t] passes it back as G[t] = g_trace[t] +
    beta G[t+1] (one reverse leaky scan), which reaches x[t] as act G[t], mem0 as beta G[0],
    beta as G[t] U[t-1] and tho[t] = thr (+ gamma A[t-1]) as -G[t] R[t]; through A[t] = rho
    A[t-1] + R[t] that last term reaches a0 as a second reverse scan, with rho."""
    G = spiking.leaky_integrate(gp.reshape(g_trace, x2.shape), gp.zeros_like(m0), b,
                                reverse=True)
    prev = _before(m0, mem_tr)
    gb = gp.sum(G * prev, axis=0) if need[0] else None
    gth = ga0 = None
    if reset == "subtract":
        tho = th if adapt is None else th + adapt[2] * _before(adapt[0], adapt[1])
        gtho = -(G * gp.astype(prev > tho, G.dtype))
        if need[1]:
            gth = gp.sum(gtho, axis=0)
        if adapt is not None:   # rho, gamma: adapt[3], adapt[2]
            ga0 = spiking.leaky_integrate(adapt[2] * gtho, gp.zeros_like(m0), adapt[3],
                                          reverse=True)[0]
    return (G if act is None else G * act), b * G[0], gb, gth, ga0


def _recorded_grads(ctx, outs: tuple, grads: tuple) -> tuple:
    """The gradients of a Function's array inputs (None where none is needed) from its
    recomputed outputs ``outs`` and their incoming ``grads``, as a recorded graph (the second
    order: backward under create_graph)."""
    pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad]
    need = ctx.needs_input_grad
    wrt = [a for a, n in zip(ctx.inputs, need) if n]
    res = iter(grad([o for o, _ in pairs], wrt, [g for _, g in pairs], create_graph=True,
                    allow_unused=True) if pairs else [None] * len(wrt))
    return tuple(next(res) if n else None for n in need)


def _lif_steps(ctx) -> tuple:
    """_LIFSequence's forward one step at a time (the per-step path's equations): spikes,
    final membrane, and the membrane of every step when the forward returned it."""
    x, u, beta, thr = ctx.inputs
    o, k = ctx.opts, ctx.opts["refractory"]
    ref = ctx.ref0
    spikes, mems = [], []
    for xt in gp.unstack(x, axis=0):
        act = gp.astype(ref <= 0, x.dtype) if k else None
        spk, u, _ = F._fire(xt, u, beta, thr, thr, o["reset"], ctx.sg, o["detach_reset"],
                            o["reset_delay"], False, act)
        if k:
            ref = F._count_down(ref, spk, k)
        spikes.append(spk)
        mems.append(u)
    out = (gp.stack(spikes, axis=0), u)
    return out + (gp.stack(mems, axis=0),) if ctx.trace_out else out


class _LIFSequence(Function):
    @staticmethod
    def forward(ctx, x, mem0, beta, thr, *, reset, reset_delay, kind, slope, recompute,
                trace_out=False, detach_reset=True, refractory=0, ref0=None, sg):
        T, shape = x.shape[0], x.shape[1:]
        n = math.prod(shape)
        x2 = gp.reshape(x, (T, n))
        m0 = gp.reshape(mem0, (n,))
        b, th = _per_neuron(beta, shape, n, x), _per_neuron(thr, shape, n, x)
        r0 = gp.reshape(gp.astype(ref0, x.dtype), (n,)) if refractory else None
        store = trace_out or (not recompute and any(ctx.needs_input_grad))
        res = spiking.lif_forward(x2, m0, b, th, reset=reset, reset_delay=reset_delay,
                                  store=store, refractory=refractory, ref0=r0)
        spk, mem, tr = res[:3]
        ctx.saved = (x2, m0, b, th, tr)
        ctx.opts = dict(reset=reset, reset_delay=reset_delay, surrogate=kind, slope=slope,
                        detach_reset=detach_reset, refractory=refractory, ref0=r0)
        ctx.shape = x.shape
        # for the second order (_lif_steps): the inputs themselves, their graph included
        ctx.inputs, ctx.sg, ctx.ref0, ctx.trace_out = (x, mem0, beta, thr), sg, ref0, trace_out
        out = (gp.reshape(spk, x.shape), gp.reshape(mem, shape))
        if trace_out:
            # the trace is the membrane U[t] of every step (reset_delay: the reset of S[t] only
            # acts at t + 1), what the per-step path returns with return_mem
            out += (gp.reshape(tr[0] if refractory else tr, x.shape),)
        # the refractory counter last (the caller detaches it: it carries no gradient)
        return out + (gp.reshape(res[3], shape),) if refractory else out

    @staticmethod
    def backward(ctx, g_spk, g_mem, *rest):
        if is_grad_enabled():   # create_graph: the fused kernels have no gradient of their own
            return _recorded_grads(ctx, _lif_steps(ctx), (g_spk, g_mem, *rest))
        x2, m0, b, th, tr = ctx.saved
        shape = ctx.shape[1:]
        gx, gm0, gb, gth = spiking.lif_backward(
            gp.reshape(g_spk, x2.shape), gp.reshape(g_mem, m0.shape), x2, m0, b, th, tr,
            **ctx.opts)
        need = ctx.needs_input_grad
        if ctx.opts["refractory"]:
            rest = rest[:-1]   # the counter's gradient: none flows
        if rest:   # return_mem: a loss on the membrane trace
            k = ctx.opts["refractory"]
            act = gp.astype(_before(ctx.opts["ref0"], tr[1]) <= 0, x2.dtype) if k else None
            ex, em, eb, et, _ = _trace_grads(rest[0], x2, m0, b, th, tr[0] if k else tr,
                                             ctx.opts["reset"], need[2:], act)
            gx, gm0 = gx + ex, gm0 + em
            gb = gb + eb if eb is not None else gb
            gth = gth + et if et is not None else gth
        return (gp.reshape(gx, ctx.shape), gp.reshape(gm0, shape),
                gp.reshape(gb, shape) if need[2] else None,
                gp.reshape(gth, shape) if need[3] else None)


def lif_sequence(x: Array, mem0: Array, beta, threshold, *, reset: str, reset_delay: bool,
                 surrogate, recompute: bool = False, return_mem: bool = False,
                 detach_reset: bool = True, refractory: int = 0, ref0: Array | None = None
                 ) -> tuple:
    """All T steps of LIF on x (T, ...) from membrane mem0 (...): (spikes (T, ...), final mem),
    and the membrane of every step (T, ...) too with ``return_mem`` (see ``supported``); with
    ``refractory`` steps from the counter ref0 (...; None: zeros), the final counter (no
    gradient) last."""
    kind, slope = surrogate_kind(surrogate)
    if refractory and ref0 is None:
        ref0 = gp.zeros_like(mem0)
    x, mem0, ref0 = _common(x, mem0, ref0)
    out = _LIFSequence.apply(x, mem0, beta, threshold, reset=reset, reset_delay=reset_delay,
                             kind=kind, slope=slope, recompute=recompute,
                             trace_out=bool(return_mem), detach_reset=bool(detach_reset),
                             refractory=refractory, ref0=ref0, sg=surrogate)
    return out[:-1] + (out[-1].detach(),) if refractory else out


def _alif_steps(ctx) -> tuple:
    """_ALIFSequence's forward one step at a time (adaptive_lif_step's equations, beta taken
    as given): spikes, final membrane and adaptation, and the membrane of every step when the
    forward returned it."""
    x, u, a, beta, thr = ctx.inputs
    o, sg = ctx.opts, ctx.sg
    rho, gamma = ctx.rho_gamma
    spikes, mems = [], []
    for xt in gp.unstack(x, axis=0):
        if o["reset_delay"]:
            # the previous step's spike (the reset signal) is what raises the threshold now
            tho = thr + gamma * a
            r = gp.astype(u > tho, u.dtype) if o["detach_reset"] else sg(u - tho)
            a = rho * a + r
            spk, u, _ = F._fire(xt, u, beta, tho, thr + gamma * a, o["reset"], sg,
                                o["detach_reset"], True, False, None)
        else:
            spk, u, r = F._fire(xt, u, beta, thr, thr + gamma * a, o["reset"], sg,
                                o["detach_reset"], False, False, None)
            a = rho * a + r
        spikes.append(spk)
        mems.append(u)
    out = (gp.stack(spikes, axis=0), u, a)
    return out + (gp.stack(mems, axis=0),) if ctx.trace_out else out


class _ALIFSequence(Function):
    @staticmethod
    def forward(ctx, x, mem0, a0, beta, thr, *, rho, gamma, reset, reset_delay, kind, slope,
                recompute, trace_out=False, detach_reset=True, sg):
        T, shape = x.shape[0], x.shape[1:]
        n = math.prod(shape)
        x2 = gp.reshape(x, (T, n))
        m0, s0 = gp.reshape(mem0, (n,)), gp.reshape(a0, (n,))
        b, th = _per_neuron(beta, shape, n, x), _per_neuron(thr, shape, n, x)
        p, g = _per_neuron(rho, shape, n, x), _per_neuron(gamma, shape, n, x)
        store = trace_out or (not recompute and any(ctx.needs_input_grad))
        spk, mem, a, tr = spiking.alif_forward(x2, m0, s0, b, p, g, th, reset=reset,
                                               reset_delay=reset_delay, store=store)
        ctx.saved = (x2, m0, s0, b, p, g, th, tr)
        ctx.opts = dict(reset=reset, reset_delay=reset_delay, surrogate=kind, slope=slope,
                        detach_reset=detach_reset)
        ctx.shape = x.shape
        # for the second order (_alif_steps): the inputs themselves, their graph included
        ctx.inputs, ctx.sg, ctx.trace_out = (x, mem0, a0, beta, thr), sg, trace_out
        ctx.rho_gamma = rho, gamma
        out = (gp.reshape(spk, x.shape), gp.reshape(mem, shape), gp.reshape(a, shape))
        return out + (gp.reshape(tr[0], x.shape),) if trace_out else out

    @staticmethod
    def backward(ctx, g_spk, g_mem, g_a, g_trace=None):
        if is_grad_enabled():   # create_graph: the fused kernels have no gradient of their own
            return _recorded_grads(ctx, _alif_steps(ctx), (g_spk, g_mem, g_a, g_trace))
        x2, m0, s0, b, p, g, th, tr = ctx.saved
        shape = ctx.shape[1:]
        gx, gm0, ga0, gb, gth = spiking.alif_backward(
            gp.reshape(g_spk, x2.shape), gp.reshape(g_mem, m0.shape), gp.reshape(g_a, m0.shape),
            x2, m0, s0, b, p, g, th, tr, **ctx.opts)
        need = ctx.needs_input_grad
        if g_trace is not None:
            ex, em, eb, et, ea = _trace_grads(g_trace, x2, m0, b, th, tr[0], ctx.opts["reset"],
                                              need[3:], adapt=(s0, tr[1], g, p))
            gx, gm0 = gx + ex, gm0 + em
            gb = gb + eb if eb is not None else gb
            gth = gth + et if et is not None else gth
            ga0 = ga0 + ea if ea is not None else ga0
        return (gp.reshape(gx, ctx.shape), gp.reshape(gm0, shape), gp.reshape(ga0, shape),
                gp.reshape(gb, shape) if need[3] else None,
                gp.reshape(gth, shape) if need[4] else None)


def alif_sequence(x: Array, mem0: Array, a0: Array, beta, threshold, *, rho, gamma, reset: str,
                  reset_delay: bool, surrogate, recompute: bool = False,
                  return_mem: bool = False, detach_reset: bool = True) -> tuple:
    """All T steps of AdaptiveLIF on x (T, ...) from membrane mem0 and adaptation a0 (...):
    (spikes (T, ...), final mem, final adaptation), and the membrane of every step with
    ``return_mem``; differentiable in x, mem0, a0, beta and threshold (rho, gamma constant)."""
    kind, slope = surrogate_kind(surrogate)
    x, mem0, a0 = _common(x, mem0, a0)
    return _ALIFSequence.apply(x, mem0, a0, beta, threshold, rho=rho, gamma=gamma, reset=reset,
                               reset_delay=reset_delay, kind=kind, slope=slope,
                               recompute=recompute, trace_out=bool(return_mem),
                               detach_reset=bool(detach_reset), sg=surrogate)


class _Leaky(Function):
    """The synaptic current of all T steps: syn[t] = alpha syn[t-1] + x[t] (one kernel call);
    backward is the same scan in reverse (a second call)."""

    @staticmethod
    def forward(ctx, x, syn0, alpha):
        ctx.inputs = (x, syn0, alpha)   # for the second order, their graph included
        T, shape = x.shape[0], x.shape[1:]
        n = math.prod(shape)
        x2 = gp.reshape(x, (T, n))
        s0 = gp.reshape(syn0, (n,))
        a = _per_neuron(alpha, shape, n, x)
        out = spiking.leaky_integrate(x2, s0, a)
        ctx.saved = (s0, a, out)
        ctx.shape = x.shape
        return gp.reshape(out, x.shape)

    @staticmethod
    def backward(ctx, g):
        if is_grad_enabled():   # create_graph: the scan kernel has no gradient of its own
            x, s, alpha = ctx.inputs
            steps = []
            for xt in gp.unstack(x, axis=0):
                s = alpha * s + xt
                steps.append(s)
            return _recorded_grads(ctx, (gp.stack(steps, axis=0),), (g,))
        s0, a, out = ctx.saved
        shape = ctx.shape[1:]
        G = spiking.leaky_integrate(gp.reshape(g, out.shape), gp.zeros_like(s0), a, reverse=True)
        need = ctx.needs_input_grad
        ga = None
        if need[2]:
            prev = gp.concat([gp.reshape(s0, (1, -1)), out[:-1]], axis=0)
            ga = gp.reshape(gp.sum(G * prev, axis=0), shape)
        return (gp.reshape(G, ctx.shape), gp.reshape(a * G[0], shape) if need[1] else None, ga)


def synaptic_current(x: Array, syn0: Array, alpha) -> Array:
    """The synaptic currents (T, ...) of a Synaptic layer from its inputs x (T, ...) and
    starting current syn0 (...): syn[t] = alpha syn[t-1] + x[t], as one fused kernel call."""
    x, syn0 = _common(x, syn0)
    return _Leaky.apply(x, syn0, alpha)
