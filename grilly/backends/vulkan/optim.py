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
from ..contract import optim_scalars, optim_scalars_fn
from .addresses import address
from .kernels import _host_fill, assign, copy
from .memory import _CONTIGUOUS

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


def _check_dtype(op: str, dtype) -> None:
    """The shaders' variants: float32 and float64 (grilly.array.optim_steps sends no other)."""
    if dtype.name not in ("float32", "float64"):
        raise TypeError(f"{op}: the Vulkan kernel takes float32 or float64 buffers, got "
                        f"{dtype.name}")


def _spec(op: str, flags: tuple) -> tuple:
    """The specialization constants of ``op`` with ``flags``."""
    spec = _SPECS.get((op, flags))
    if spec is None:
        spec = _SPECS[op, flags] = (_RULES[op], 1, *map(int, flags))
    return spec


# The buffers' dtypes, shapes and devices are checked once, by the array layer every backend's
# updates go through (grilly.array.optim_steps: its errors name the argument); here only what
# this backend adds (its dtypes, the binding count, the 32-bit index) is.
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
    ctx, n = p.ctx, p.size
    _check_dtype(op, p.dtype)
    _check_limits(op, ctx, n)
    spec = _spec(op, flags)
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
    """One optim_multi dispatch over ``rows``: (p, state, g, v, p's size) of contiguous buffers
    (state: up to three slots, None where unused), ``v`` the row of ``vbuf`` that holds the
    update's scalars, or (``vbuf`` None) the scalars, uploaded after the table."""
    # per tensor eight 64-bit words: five addresses (p, three state slots, g; an unused slot
    # is p's), size | first workgroup << 32, the scalar row, 0; as uint32 (little-endian) they
    # are the shader's sixteen words
    table, written, read, first, host_vals = [], [], [], 0, []
    for p, state, g, v, n in rows:
        if vbuf is None:
            host_vals.append(v)
            v = len(host_vals) - 1
        ap = address(p)
        row = [ap, ap, ap, ap, ap, n | first << 32, v, 0]
        written.append(p.alloc)
        for i, b in enumerate(state, 1):
            if b is not None:
                row[i] = address(b)
                written.append(b.alloc)
        if g is not p:
            row[4] = address(g)
        read.append(g.alloc)
        table.append(row)
        first += -(-n // _CHUNK)
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
    checked = None   # the context whose binding count was checked (the calls share one)
    scalars = optim_scalars_fn(op)
    if vals is not None and calls:   # (every rule's first argument is p)
        _check_dtype(op, calls[0][0].dtype)
        vals = _vals_rows(op, vals, calls, calls[0][0].dtype)
    for k, args in enumerate(calls):
        p, g, state, sc, flags = scalars(*args)
        ctx, n = p.ctx, p.size
        if ctx is not checked or n >= 2**31:
            _check_limits(op, ctx, n)
            checked = ctx
        spec = _SPECS.get((op, flags)) or _spec(op, flags)
        if n == 0:
            continue
        # (Buffer.is_contiguous's common case inline, from p's shape, which every buffer has:
        # this runs for every parameter)
        cs = _CONTIGUOUS.get(p.shape)
        strided = p.strides != cs and not p.is_contiguous()
        for b in state:
            if b is not None and b.strides != cs and not b.is_contiguous():
                strided = True
        if strided or not ctx.get_buffer_address:
            _run(op, p, g, state, sc, flags, None if vals is None else (vals, 8 * k))
            continue
        key = (p.dtype.name, spec)
        rows = groups.get(key)
        if rows is None:
            _check_dtype(op, p.dtype)
            rows = groups[key] = []
        if g.strides != cs and not g.is_contiguous():
            g = copy(g)
        rows.append((p, state, g, sc if vals is None else k, n))
    for (_, spec), rows in groups.items():
        _multi(rows[0][0].ctx, rows[0][0].dtype, spec, rows, vals)


optim_multi.takes_vals = True


def _unscale_multi(calls: list) -> None:
    """GradScaler's unscale of many gradients (``calls``: (g, found, inv_scale) each)."""
    groups: dict = {}
    spec = _spec("amp_unscale", (False, False, False))
    for g, found, inv_scale in calls:
        _check_dtype("amp_unscale", g.dtype)
        _check_limits("amp_unscale", g.ctx, g.size)
        if g.size == 0:
            continue
        if not g.ctx.get_buffer_address or not g.is_contiguous():
            amp_unscale(g, found, inv_scale)
            continue
        key = (g.dtype.name, id(found.alloc), found.offset)
        groups.setdefault(key, (found, []))[1].append(
            (g, (), g, (float(inv_scale), *(0.0,) * 7), g.size))
    for found, rows in groups.values():
        _multi(found.ctx, rows[0][0].dtype, spec, rows, None, found)


KERNELS = {"sgd_step": sgd_step, "adam_step": adam_step, "rmsprop_step": rmsprop_step,
           "adagrad_step": adagrad_step, "amp_unscale": amp_unscale, "optim_multi": optim_multi}
