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

import numpy as np

from .. import dtypes as _dt
from .addresses import address
from .kernels import _host_fill, assign, copy

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


def _rule(op: str, p, g, state: list, scalars: tuple, flags: tuple) -> tuple:
    """Check one update's buffers; its specialization constants and push-constant scalars."""
    name = p.dtype.name
    if name not in _PC:
        raise TypeError(f"{op}: the Vulkan kernel takes float32 or float64 buffers, got {name}")
    for b in (g, *state):
        if b is not None and (b.dtype is not p.dtype or b.shape != p.shape):
            raise ValueError(f"{op}: every buffer must have the parameter's shape {p.shape} and "
                             f"dtype {name}, got {b.shape} {b.dtype.name}")
    _check_limits(op, p.ctx, p.size)
    spec = (_RULES[op], 1, *[int(f) for f in flags], *(0,) * (4 - len(flags)))
    return spec, (*scalars, *(0.0,) * (8 - len(scalars)))


def _run(op: str, p, g, state: list, scalars: tuple, flags: tuple) -> None:
    spec, vals = _rule(op, p, g, state, scalars, flags)
    ctx, n = p.ctx, p.size
    if n == 0:
        return
    out = [p, *state]
    work = [b if b is None or b.is_contiguous() else copy(b) for b in out]
    slots = [w if w is not None else work[0] for w in work]
    slots += [work[0]] * (4 - len(slots))
    bufs = [*slots, g if g.is_contiguous() else copy(g)]
    pc = _PC[p.dtype.name].pack(n, *[b.offset for b in bufs], *vals)
    variant = f"optim_{p.dtype.name}"
    pipe = ctx.pipelines.get((variant, spec)) or ctx.pipeline(variant, spec)
    ctx.recorder.dispatch(pipe, bufs, pc, n, writes=4)
    for b, w in zip(out, work):
        if b is not None and w is not b:
            assign(b, w)


# what each rule's kernel arguments mean: (p, g, state slots, scalars, flags)
def _sgd(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, maximize, first) -> tuple:
    return (p, g, [buf], (lr, momentum, 1.0 - dampening, weight_decay),
            (buf is not None, nesterov, maximize, first))


def _adam(p, g, m, v, vmax, lr, beta1, beta2, eps, weight_decay, decoupled, maximize, step_size,
          bc2_sqrt) -> tuple:
    return (p, g, [m, v, vmax],
            (1.0 - lr * weight_decay, 1.0 - beta1, beta2, 1.0 - beta2, eps, weight_decay,
             step_size, bc2_sqrt), (decoupled, vmax is not None, maximize))


def _rmsprop(p, g, square_avg, grad_avg, buf, lr, alpha, eps, weight_decay, momentum,
             maximize) -> tuple:
    return (p, g, [square_avg, grad_avg, buf], (lr, alpha, 1.0 - alpha, eps, weight_decay, momentum),
            (grad_avg is not None, buf is not None, maximize))


def _adagrad(p, g, state_sum, clr, eps, weight_decay, maximize) -> tuple:
    return p, g, [state_sum], (clr, eps, weight_decay), (False, False, maximize)


_ARGS = {"sgd_step": _sgd, "adam_step": _adam, "rmsprop_step": _rmsprop, "adagrad_step": _adagrad}


def sgd_step(*args) -> None:
    """SGD (momentum, dampening, Nesterov, L2 decay): one dispatch, in place."""
    _run("sgd_step", *_sgd(*args))


def adam_step(*args) -> None:
    """Adam/AdamW (amsgrad when ``vmax`` is given): one dispatch, in place."""
    _run("adam_step", *_adam(*args))


def rmsprop_step(*args) -> None:
    """RMSprop (centered when ``grad_avg`` is given, momentum when ``buf`` is): one dispatch."""
    _run("rmsprop_step", *_rmsprop(*args))


def adagrad_step(*args) -> None:
    """Adagrad (L2 decay; ``clr`` the decayed learning rate): one dispatch, in place."""
    _run("adagrad_step", *_adagrad(*args))


def _unscale_check(g) -> None:
    if g.dtype.name not in _PC:
        raise TypeError(f"amp_unscale: the Vulkan kernel takes float32 or float64, got "
                        f"{g.dtype.name}")
    _check_limits("amp_unscale", g.ctx, g.size)


def amp_unscale(g, found, inv_scale) -> None:
    """GradScaler's unscale of one gradient, one dispatch: g *= inv_scale in place, and the
    uint32 flag ``found`` or-ed with 1 (an atomic) where g held an inf or NaN."""
    _unscale_check(g)
    name, ctx, n = g.dtype.name, g.ctx, g.size
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


# ---- many parameters in one dispatch (shaders/nn/optim_multi.comp) ----------------------------
_CHUNK = 4 * 256          # elements a workgroup of optim_multi.comp takes
_MULTI_MAX = 256          # tensors a dispatch takes (its table: 64 bytes a tensor)
_MPC = {"float32": struct.Struct("<4I8f"), "float64": struct.Struct("<4I8d")}


def _multi_dispatch(ctx, dtype, spec: tuple, vals: tuple, rows: list, found=None) -> None:
    """One optim_multi dispatch over ``rows``: (p, [s1, s2, s3], g) of contiguous buffers."""
    words, written, read, first = [], [], [], 0
    for p, slots, g in rows:
        for b in (p, *slots, g):
            a = address(b)
            words += (a & 0xFFFFFFFF, a >> 32)
        words += (p.size, first, 0, 0, 0, 0)
        first += -(-p.size // _CHUNK)
        written.append(p.alloc)
        written += [b.alloc for b in slots if b is not p]
        read.append(g.alloc)
    tab = _host_fill(ctx, np.array(words, np.uint32), _dt.uint32)
    rule4 = found is not None
    pc = _MPC[dtype.name].pack(len(rows), found.offset if rule4 else 0, 0, 0, *vals)
    variant = f"optim_multi_{dtype.name}"
    pipe = ctx.pipelines.get((variant, spec)) or ctx.pipeline(variant, spec)
    allocs = [found.alloc, tab.alloc] if rule4 else [tab.alloc, tab.alloc]
    ctx.recorder.dispatch_reaching(pipe, allocs, pc, first * 256, int(rule4), written, read)


def _multi(ctx, dtype, spec: tuple, vals: tuple, rows: list, found=None) -> None:
    for i in range(0, len(rows), _MULTI_MAX):
        _multi_dispatch(ctx, dtype, spec, vals, rows[i:i + _MULTI_MAX], found)


def optim_multi(op: str, calls: list) -> None:
    """Many updates of one rule (``calls``: each the arguments of the rule's one-parameter
    kernel), in as few dispatches as their scalars allow: updates with the same scalars and
    flags share one where the device reaches buffers by address. A strided parameter or state
    (rare) takes the one-parameter path; a strided gradient is copied first."""
    if op == "amp_unscale":
        _unscale_multi(calls)
        return
    if op not in _ARGS:
        raise ValueError(f"optim_multi: no rule {op!r}")
    groups: dict = {}
    for args in calls:
        p, g, state, scalars, flags = _ARGS[op](*args)
        spec, vals = _rule(op, p, g, state, scalars, flags)
        if p.size == 0:
            continue
        if not p.ctx.get_buffer_address or not all(
                b.is_contiguous() for b in (p, *state) if b is not None):
            _run(op, p, g, state, scalars, flags)
            continue
        slots = [b if b is not None else p for b in state] + [p] * (3 - len(state))
        key = (p.dtype.name, spec, vals)
        groups.setdefault(key, []).append((p, slots, g if g.is_contiguous() else copy(g)))
    for (_, spec, vals), rows in groups.items():
        _multi(rows[0][0].ctx, rows[0][0].dtype, spec, vals, rows)


def _unscale_multi(calls: list) -> None:
    """GradScaler's unscale of many gradients (``calls``: (g, found, inv_scale) each)."""
    groups: dict = {}
    for g, found, inv_scale in calls:
        _unscale_check(g)
        if g.size == 0:
            continue
        if not g.ctx.get_buffer_address or not g.is_contiguous():
            amp_unscale(g, found, inv_scale)
            continue
        key = (g.dtype.name, id(found.alloc), found.offset, float(inv_scale))
        groups.setdefault(key, (found, []))[1].append((g, [g, g, g], g))
    for (name, _, _, inv), (found, rows) in groups.items():
        vals = (inv, *(0.0,) * 7)
        _multi(found.ctx, rows[0][0].dtype, (4, 1, 0, 0, 0, 0), vals, rows, found)


KERNELS = {"sgd_step": sgd_step, "adam_step": adam_step, "rmsprop_step": rmsprop_step,
           "adagrad_step": adagrad_step, "amp_unscale": amp_unscale, "optim_multi": optim_multi}
