"""The fused multi-step LIF path: all T steps forward in one kernel call and all T steps backward
in another (grilly.array.spiking, the contract's lif_forward/lif_backward), wrapped as one
autograd Function. LIF/IF's multi_step use it when ``supported`` says the options allow.

Memory: the forward keeps one float per neuron per step (the pre-reset membrane, what the
surrogate is evaluated at), or nothing with ``recompute=True`` (backward then runs the forward
again, holding its trace only while it runs).
"""
from __future__ import annotations

import math

from ...array import api as gp
from ...array import spiking

from ...array.array import Array
from ...autograd.function import Function
from .surrogate import _ATan, _FastSigmoid, _Sigmoid, _StraightThrough, _Triangle

__all__ = ["lif_sequence", "synaptic_current", "supported"]

_KINDS = {_ATan: ("atan", "alpha"), _FastSigmoid: ("fast_sigmoid", "slope"),
          _Sigmoid: ("sigmoid", "slope"), _Triangle: ("triangle", "width"),
          _StraightThrough: ("straight_through", None)}


def surrogate_kind(sg) -> tuple | None:
    """(kernel surrogate name, slope) of a built-in Surrogate, None for any other callable."""
    k = _KINDS.get(type(sg))
    if k is None:
        return None
    return k[0], float(getattr(sg, k[1])) if k[1] else 1.0


def supported(x: Array, surrogate, *, detach_reset: bool, refractory: int,
              return_mem: bool, reset: str = "subtract", reset_delay: bool = True) -> bool:
    """Whether the fused kernels cover these options (else the per-step composition runs).
    The membrane trace (``return_mem``) is the kernel's stored trace where it equals the
    per-step membrane and its gradient is a leaky scan: snnTorch's reset_delay with a subtract
    or no reset, the reset detached."""
    if return_mem and not (reset_delay and reset in ("subtract", "none") and detach_reset):
        return False
    return (refractory == 0 and surrogate_kind(surrogate) is not None
            and x.dtype in (gp.float32, gp.float64) and x.ndim >= 2 and x.size > 0)


def _per_neuron(v, shape: tuple, n: int, like: Array) -> Array:
    """A float or an Array broadcastable to the neuron shape, as a contiguous (N,) array."""
    if isinstance(v, Array):
        return gp.reshape(gp.astype(gp.broadcast_to(v, shape), like.dtype), (n,), copy=True)
    return gp.full((n,), float(v), dtype=like.dtype, device=like.device)


class _LIFSequence(Function):
    @staticmethod
    def forward(ctx, x, mem0, beta, thr, *, reset, reset_delay, kind, slope, recompute,
                trace_out=False, detach_reset=True):
        T, shape = x.shape[0], x.shape[1:]
        n = math.prod(shape)
        x2 = gp.reshape(x, (T, n))
        m0 = gp.reshape(mem0, (n,))
        b, th = _per_neuron(beta, shape, n, x), _per_neuron(thr, shape, n, x)
        store = trace_out or (not recompute and any(ctx.needs_input_grad))
        spk, mem, tr = spiking.lif_forward(x2, m0, b, th, reset=reset, reset_delay=reset_delay,
                                           store=store)
        ctx.saved = (x2, m0, b, th, tr)
        ctx.opts = dict(reset=reset, reset_delay=reset_delay, surrogate=kind, slope=slope,
                        detach_reset=detach_reset)
        ctx.shape = x.shape
        out = (gp.reshape(spk, x.shape), gp.reshape(mem, shape))
        # the trace is the membrane U[t] of every step (reset_delay: the reset of S[t] only
        # acts at t + 1), what the per-step path returns with return_mem
        return out + (gp.reshape(tr, x.shape),) if trace_out else out

    @staticmethod
    def backward(ctx, g_spk, g_mem, g_trace=None):
        x2, m0, b, th, tr = ctx.saved
        shape = ctx.shape[1:]
        gx, gm0, gb, gth = spiking.lif_backward(
            gp.reshape(g_spk, x2.shape), gp.reshape(g_mem, m0.shape), x2, m0, b, th, tr,
            **ctx.opts)
        need = ctx.needs_input_grad
        if g_trace is not None:
            # dL/dU[t] gains g_trace[t]; with R[t] detached, U[t] = beta U[t-1] + x[t] - R[t]
            # thr passes it back as G[t] = g_trace[t] + beta G[t+1] (one reverse leaky scan),
            # which reaches x[t] as G[t], mem0 as beta G[0], beta as G[t] U[t-1] and thr as
            # -G[t] R[t] (subtract reset)
            G = spiking.leaky_integrate(gp.reshape(g_trace, x2.shape), gp.zeros_like(m0), b,
                                        reverse=True)
            gx, gm0 = gx + G, gm0 + b * G[0]
            prev = gp.concat([gp.reshape(m0, (1, -1)), tr[:-1]], axis=0)
            if need[2]:
                gb = gb + gp.sum(G * prev, axis=0)
            if need[3] and ctx.opts["reset"] == "subtract":
                gth = gth - gp.sum(G * gp.astype(prev > th, G.dtype), axis=0)
        return (gp.reshape(gx, ctx.shape), gp.reshape(gm0, shape),
                gp.reshape(gb, shape) if need[2] else None,
                gp.reshape(gth, shape) if need[3] else None)


def lif_sequence(x: Array, mem0: Array, beta, threshold, *, reset: str, reset_delay: bool,
                 surrogate, recompute: bool = False, return_mem: bool = False,
                 detach_reset: bool = True) -> tuple:
    """All T steps of LIF on x (T, ...) from membrane mem0 (...): (spikes (T, ...), final mem),
    and the membrane of every step (T, ...) too with ``return_mem`` (see ``supported``)."""
    kind, slope = surrogate_kind(surrogate)
    return _LIFSequence.apply(x, mem0, beta, threshold, reset=reset, reset_delay=reset_delay,
                              kind=kind, slope=slope, recompute=recompute,
                              trace_out=bool(return_mem), detach_reset=bool(detach_reset))


class _Leaky(Function):
    """The synaptic current of all T steps: syn[t] = alpha syn[t-1] + x[t] (one kernel call);
    backward is the same scan in reverse (a second call)."""

    @staticmethod
    def forward(ctx, x, syn0, alpha):
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
    return _Leaky.apply(x, syn0, alpha)
