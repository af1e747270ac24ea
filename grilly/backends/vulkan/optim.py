"""Fused optimizer updates of the Vulkan backend (docs/kernels/optim.md; shader
shaders/nn/optim.comp): one dispatch per parameter and step, reading and writing the parameter
and its state once, in place.

The shader walks contiguous operands from their element offsets. A strided gradient (e.g. a
broadcast) is made contiguous first; a strided parameter or state buffer (rare) is updated
through a contiguous copy assigned back. Five bindings: p, three state slots (an unused one is
bound to p and never touched), g.
"""
from __future__ import annotations

import struct

from .kernels import assign, copy

_PC = {"float32": struct.Struct("<I5i8f"), "float64": struct.Struct("<I5i8d")}
_RULES = {"sgd_step": 0, "adam_step": 1, "rmsprop_step": 2, "adagrad_step": 3}
_NBUF = 5


def _check_limits(op: str, ctx, n: int) -> None:
    """optim.comp binds five buffers and indexes elements with 32-bit ints."""
    if ctx.bindings < _NBUF:
        raise NotImplementedError(f"{op}: the Vulkan device {ctx.phys.name!r} binds "
                                  f"{ctx.bindings} buffers per kernel; this kernel needs {_NBUF}")
    if n >= 2**31:
        raise ValueError(f"{op}: {n} elements exceed the Vulkan backend's 2**31 limit")


def _run(op: str, p, g, state: list, scalars: tuple, flags: tuple) -> None:
    name = p.dtype.name
    if name not in _PC:
        raise TypeError(f"{op}: the Vulkan kernel takes float32 or float64 buffers, got {name}")
    for b in (g, *state):
        if b is not None and (b.dtype is not p.dtype or b.shape != p.shape):
            raise ValueError(f"{op}: every buffer must have the parameter's shape {p.shape} and "
                             f"dtype {name}, got {b.shape} {b.dtype.name}")
    ctx, n = p.ctx, p.size
    _check_limits(op, ctx, n)
    if n == 0:
        return
    out = [p, *state]
    work = [b if b is None or b.is_contiguous() else copy(b) for b in out]
    slots = [w if w is not None else work[0] for w in work]
    slots += [work[0]] * (4 - len(slots))
    bufs = [*slots, g if g.is_contiguous() else copy(g)]
    pc = _PC[name].pack(n, *[b.offset for b in bufs], *scalars, *(0.0,) * (8 - len(scalars)))
    spec = (_RULES[op], 1, *[int(f) for f in flags], *(0,) * (4 - len(flags)))
    variant = f"optim_{name}"
    pipe = ctx.pipelines.get((variant, spec)) or ctx.pipeline(variant, spec)
    ctx.recorder.dispatch(pipe, bufs, pc, n, writes=4)
    for b, w in zip(out, work):
        if b is not None and w is not b:
            assign(b, w)


def sgd_step(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, maximize,
             first) -> None:
    """SGD (momentum, dampening, Nesterov, L2 decay): one dispatch, in place."""
    _run("sgd_step", p, g, [buf], (lr, momentum, 1.0 - dampening, weight_decay),
         (buf is not None, nesterov, maximize, first))


def adam_step(p, g, m, v, vmax, lr, beta1, beta2, eps, weight_decay, decoupled, maximize,
              step_size, bc2_sqrt) -> None:
    """Adam/AdamW (amsgrad when ``vmax`` is given): one dispatch, in place."""
    _run("adam_step", p, g, [m, v, vmax],
         (1.0 - lr * weight_decay, 1.0 - beta1, beta2, 1.0 - beta2, eps, weight_decay,
          step_size, bc2_sqrt), (decoupled, vmax is not None, maximize))


def rmsprop_step(p, g, square_avg, grad_avg, buf, lr, alpha, eps, weight_decay, momentum,
                 maximize) -> None:
    """RMSprop (centered when ``grad_avg`` is given, momentum when ``buf`` is): one dispatch."""
    _run("rmsprop_step", p, g, [square_avg, grad_avg, buf],
         (lr, alpha, 1.0 - alpha, eps, weight_decay, momentum),
         (grad_avg is not None, buf is not None, maximize))


def adagrad_step(p, g, state_sum, clr, eps, weight_decay, maximize) -> None:
    """Adagrad (L2 decay; ``clr`` the decayed learning rate): one dispatch, in place."""
    _run("adagrad_step", p, g, [state_sum], (clr, eps, weight_decay), (False, False, maximize))


def amp_unscale(g, found, inv_scale) -> None:
    """GradScaler's unscale of one gradient, one dispatch: g *= inv_scale in place, and the
    uint32 flag ``found`` or-ed with 1 (an atomic) where g held an inf or NaN."""
    name = g.dtype.name
    if name not in _PC:
        raise TypeError(f"amp_unscale: the Vulkan kernel takes float32 or float64, got {name}")
    ctx, n = g.ctx, g.size
    _check_limits("amp_unscale", ctx, n)
    work = g if g.is_contiguous() else copy(g)
    bufs = [work, found, work, work, work]
    pc = _PC[name].pack(n, work.offset, found.offset, work.offset, work.offset, work.offset,
                        inv_scale, *(0.0,) * 7)
    spec = (4, 1, 0, 0, 0, 0)
    variant = f"optim_{name}"
    pipe = ctx.pipelines.get((variant, spec)) or ctx.pipeline(variant, spec)
    ctx.recorder.dispatch(pipe, bufs, pc, n, writes=2)
    if work is not g:
        assign(g, work)


KERNELS = {"sgd_step": sgd_step, "adam_step": adam_step, "rmsprop_step": rmsprop_step,
           "adagrad_step": adagrad_step, "amp_unscale": amp_unscale}
