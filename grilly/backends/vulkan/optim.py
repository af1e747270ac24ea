"""Fused optimizer updates of the Vulkan backend (docs/kernels/optim.md; shader
shaders/nn/optim.comp): one dispatch per parameter and step, reading and writing the parameter
and its state once, in place.

The shader walks contiguous operands from their element offsets. A strided gradient (e.g. a
broadcast) is made contiguous first; a strided parameter or state buffer (rare) is updated
through a contiguous copy assigned back. Six bindings: p, three state slots (an unused one is
bound to p and never touched), g, and the rule's eight scalars (contract.optim_scalars), read
from a buffer so that a captured step (grilly.jit) can be given new ones.
"""
from __future__ import annotations

import struct

import numpy as np

from .. import dtypes as _dt
from ..contract import optim_scalars
from .addresses import address
from .kernels import _host_fill, assign, copy

_PC = struct.Struct("<I5iI")   # n, the element offsets of p, s1, s2, s3, g, and of the scalars
_RULES = {"sgd_step": 0, "adam_step": 1, "rmsprop_step": 2, "adagrad_step": 3,
          "amp_unscale": 4}
_NBUF = 6


def _check_limits(op: str, ctx, n: int) -> None:
    """optim.comp binds six buffers and indexes elements with 32-bit ints."""
    if ctx.bindings < _NBUF:
        raise NotImplementedError(f"{op}: the Vulkan device {ctx.phys.name!r} binds "
                                  f"{ctx.bindings} buffers per kernel; this kernel needs {_NBUF}")
    if n >= 2**31:
        raise ValueError(f"{op}: {n} elements exceed the Vulkan backend's 2**31 limit")


def _rule(op: str, p, g, state: list, flags: tuple) -> tuple:
    """Check one update's buffers; its specialization constants."""
    d, shape = p.dtype, p.shape
    name = d.name
    if name not in ("float32", "float64"):
        raise TypeError(f"{op}: the Vulkan kernel takes float32 or float64 buffers, got {name}")
    if op != "amp_unscale":
        for b in (g, *state):
            if b is not None and (b.dtype is not d or b.shape != shape):
                raise ValueError(f"{op}: every buffer must have the parameter's shape {shape} "
                                 f"and dtype {name}, got {b.shape} {b.dtype.name}")
    _check_limits(op, p.ctx, p.size)
    spec = _SPECS.get((op, flags))   # (every parameter of every step comes here)
    if spec is None:
        spec = _SPECS[op, flags] = (_RULES[op], 1, *map(int, flags))
    return spec


_SPECS: dict = {}   # (rule, flags) -> specialization constants; at most 5 rules x 8 flags


def _vals_rows(op: str, vals, calls: list, dtype):
    """``vals`` (optim_multi's scalar rows) checked against ``calls`` and made contiguous."""
    if vals.dtype is not dtype or vals.shape != (len(calls), 8):
        raise ValueError(f"{op}: vals must be a ({len(calls)}, 8) {dtype.name} buffer, got "
                         f"{vals.shape} {vals.dtype.name}")
    return vals if vals.is_contiguous() else copy(vals)


def _run(op: str, p, g, state: list, vals: tuple, flags: tuple, vsrc=None) -> None:
    """One update in one dispatch; its scalars ``vals`` uploaded, or read from ``vsrc`` (a
    buffer and the element offset of the row)."""
    spec = _rule(op, p, g, state, flags)
    ctx, n = p.ctx, p.size
    if n == 0:
        return
    if vsrc is None:
        vsrc = (_host_fill(ctx, np.array(vals, p.dtype.np), p.dtype), 0)
    out = [p, *state] if op != "amp_unscale" else [p]
    work = [b if b is None or b.is_contiguous() else copy(b) for b in out]
    if op == "amp_unscale":   # s1: the found flag (uint32); g is p
        bufs = [work[0], state[0], work[0], work[0], work[0], vsrc[0]]
    else:
        slots = [w if w is not None else work[0] for w in work]
        slots += [work[0]] * (4 - len(slots))
        bufs = [*slots, g if g.is_contiguous() else copy(g), vsrc[0]]
    pc = _PC.pack(n, *[b.offset for b in bufs[:5]], vsrc[0].offset + vsrc[1])
    variant = f"optim_{p.dtype.name}"
    pipe = ctx.pipelines.get((variant, spec)) or ctx.pipeline(variant, spec)
    ctx.recorder.dispatch(pipe, bufs, pc, n, writes=2 if op == "amp_unscale" else 4)
    for b, w in zip(out, work):
        if b is not None and w is not b:
            assign(b, w)


def _one(op: str):
    def kernel(*args) -> None:
        _run(op, *optim_scalars(op, args))
    kernel.__name__ = op
    kernel.__doc__ = f"{op}: one dispatch, in place (shaders/nn/optim.comp)."
    return kernel


sgd_step = _one("sgd_step")
adam_step = _one("adam_step")
rmsprop_step = _one("rmsprop_step")
adagrad_step = _one("adagrad_step")


def amp_unscale(g, found, inv_scale) -> None:
    """GradScaler's unscale of one gradient, one dispatch: g *= inv_scale in place, and the
    uint32 flag ``found`` or-ed with 1 (an atomic) where g held an inf or NaN."""
    _run("amp_unscale", *optim_scalars("amp_unscale", (g, found, inv_scale)))


# ---- many parameters in one dispatch (shaders/nn/optim_multi.comp) ----------------------------
_CHUNK = 4 * 256          # elements a workgroup of optim_multi.comp takes
_MULTI_MAX = 256          # tensors a dispatch takes (its table: 64 bytes a tensor)
_MPC = struct.Struct("<4I")   # tensors, the found flag's offset, the first scalar row's, -


def _multi_dispatch(ctx, dtype, spec: tuple, rows: list, vbuf, found=None) -> None:
    """One optim_multi dispatch over ``rows``: (p, [s1, s2, s3], g, v) of contiguous buffers,
    ``v`` the row of ``vbuf`` that holds the update's scalars, or (``vbuf`` None) the scalars,
    uploaded after the table."""
    # per tensor eight 64-bit words: five addresses, size | first workgroup << 32, the scalar
    # row, 0; as uint32 (little-endian) they are the shader's sixteen words
    table, written, read, first, host_vals = [], [], [], 0, []
    for p, slots, g, v in rows:
        s1, s2, s3 = slots
        n = p.size
        if vbuf is None:
            host_vals.append(v)
            v = len(host_vals) - 1
        table.append((address(p), address(s1), address(s2), address(s3), address(g),
                      n | first << 32, v, 0))
        first += -(-n // _CHUNK)
        written.append(p.alloc)
        for b in slots:
            if b is not p:
                written.append(b.alloc)
        read.append(g.alloc)
    words = np.array(table, np.uint64).view(np.uint32).reshape(-1)
    if vbuf is None:   # the scalars after the table, in one upload (the table's 64-byte rows
        # keep them aligned for float64)
        vw = np.array(host_vals, dtype.np).reshape(-1).view(np.uint32)
        tab = _host_fill(ctx, np.concatenate([words, vw]), _dt.uint32)
        valloc, voff = tab.alloc, (tab.offset * 4 + words.nbytes) // dtype.itemsize
    else:
        tab = _host_fill(ctx, words, _dt.uint32)
        valloc, voff = vbuf.alloc, vbuf.offset
    rule4 = found is not None
    pc = _MPC.pack(len(rows), found.offset if rule4 else 0, voff, 0)
    variant = f"optim_multi_{dtype.name}"
    pipe = ctx.pipelines.get((variant, spec)) or ctx.pipeline(variant, spec)
    allocs = [found.alloc if rule4 else tab.alloc, tab.alloc, valloc]
    ctx.recorder.dispatch_reaching(pipe, allocs, pc, first * 256, int(rule4), written, read)


def _multi(ctx, dtype, spec: tuple, rows: list, vbuf, found=None) -> None:
    for i in range(0, len(rows), _MULTI_MAX):
        _multi_dispatch(ctx, dtype, spec, rows[i:i + _MULTI_MAX], vbuf, found)


def optim_multi(op: str, calls: list, vals=None) -> None:
    """Many updates of one rule (``calls``: each the arguments of the rule's one-parameter
    kernel), in as few dispatches as their flags allow: each update's scalars are its own (a
    row of the table, or of ``vals``, a (len(calls), 8) buffer that replaces them: a captured
    step's, refilled on each replay). Where the device reaches buffers by address; a strided
    parameter or state (rare) takes the one-parameter path, a strided gradient is copied."""
    if op == "amp_unscale":
        if vals is not None:
            raise ValueError("optim_multi: amp_unscale takes its scale from the calls, not vals")
        _unscale_multi(calls)
        return
    if op not in ("sgd_step", "adam_step", "rmsprop_step", "adagrad_step"):
        raise ValueError(f"optim_multi: no rule {op!r}")
    groups: dict = {}
    for k, args in enumerate(calls):
        p, g, state, sc, flags = optim_scalars(op, args)
        spec = _rule(op, p, g, state, flags)
        if vals is not None and k == 0:
            vals = _vals_rows(op, vals, calls, p.dtype)
        if p.size == 0:
            continue
        slots = [p, p, p]
        strided = not p.is_contiguous()
        for i, b in enumerate(state):
            if b is not None:
                slots[i] = b
                strided = strided or not b.is_contiguous()
        if strided or not p.ctx.get_buffer_address:
            _run(op, p, g, state, sc, flags, None if vals is None else (vals, 8 * k))
            continue
        groups.setdefault((p.dtype.name, spec), []).append(
            (p, slots, g if g.is_contiguous() else copy(g), sc if vals is None else k))
    for (_, spec), rows in groups.items():
        _multi(rows[0][0].ctx, rows[0][0].dtype, spec, rows, vals)


optim_multi.takes_vals = True


def _unscale_multi(calls: list) -> None:
    """GradScaler's unscale of many gradients (``calls``: (g, found, inv_scale) each)."""
    groups: dict = {}
    for g, found, inv_scale in calls:
        spec = _rule("amp_unscale", g, g, [found], (False, False, False))
        if g.size == 0:
            continue
        if not g.ctx.get_buffer_address or not g.is_contiguous():
            amp_unscale(g, found, inv_scale)
            continue
        key = (g.dtype.name, id(found.alloc), found.offset)
        groups.setdefault(key, (found, []))[1].append(
            (g, [g, g, g], g, (float(inv_scale), *(0.0,) * 7)))
    for found, rows in groups.values():
        _multi(found.ctx, rows[0][0].dtype, spec, rows, None, found)


KERNELS = {"sgd_step": sgd_step, "adam_step": adam_step, "rmsprop_step": rmsprop_step,
           "adagrad_step": adagrad_step, "amp_unscale": amp_unscale, "optim_multi": optim_multi}
