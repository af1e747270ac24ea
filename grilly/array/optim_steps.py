"""Fused optimizer updates: one kernel per rule (docs/kernels/optim.md), called by grilly.optim.

Each function updates the parameter ``p`` and its state arrays in place from the gradient
``g``: the device's kernel (one pass reading and writing every buffer once) for float32 and
float64, the composition (grilly/array/composites.py: the unfused rule, several elementwise
passes) for other dtypes or where the backend has no kernel. Both compute the same operations
in the same order, the order torch.optim uses.

These write into arrays (often leaves that require grad) behind autograd's back, so they are
not exported through the dispatch hook and never recorded: the optimizers call them under
no_grad.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import math
import operator
import threading
from typing import Callable

import numpy as np

from ..backends.contract import optim_scalars_fn
from . import core
from . import dispatch as _dispatch
from .array import Array

__all__ = ["sgd_step", "adam_step", "rmsprop_step", "adagrad_step", "amp_unscale", "batched",
           "takes_vals", "step_in_kernels"]

_KERNEL_DTYPES = frozenset({"float32", "float64"})   # what the kernels take (the contract)
# how many of each rule's kernel arguments are arrays (the rest are scalars)
ARRAYS = {"sgd_step": 3, "adam_step": 5, "rmsprop_step": 5, "adagrad_step": 3, "amp_unscale": 2}


def _fits(p, arrays: tuple) -> bool:
    """Whether ``p`` is a real floating Array and every one of ``arrays`` (those given: the
    callers leave out a state array passed as None) an Array of its dtype, device and shape:
    the common case, in one pass without building the shape tuples (every parameter of every
    step comes here; same device: same backend, so the buffers' shapes compare as the arrays'
    do; where they do not, or on False, ``_check`` decides)."""
    if type(p) is not Array or p._dtype.kind != "f":
        return False
    d, dev, shape = p._dtype, p._device, p._buf.shape
    for a in arrays:
        if not (type(a) is Array and a._dtype is d and a._device is dev
                and a._buf.shape == shape):
            return False
    return True


_GIVEN = functools.partial(operator.is_not, None)   # (filter's test, in C)


def _check(op: str, p, g, **state) -> None:
    """TypeError/ValueError unless ``p`` is a real floating Array and ``g`` and every given
    state array match its shape, dtype and device: the one check of an update's arrays (the
    backends' kernels take them as checked; ``_fits`` first, where they usually pass)."""
    core.check_array(p, op, "p")
    if p._dtype.kind != "f":
        raise TypeError(f"{op}: p must have a real floating dtype, got {p._dtype.name}")
    shape = p.shape
    for name, a in (("g", g), *state.items()):
        if a is None:
            continue
        core.check_array(a, op, name)
        if a._dtype is not p._dtype:
            raise TypeError(f"{op}: {name} has dtype {a._dtype.name}, expected p's dtype "
                            f"{p._dtype.name}")
        if a.shape != shape:
            raise ValueError(f"{op}: {name} has shape {a.shape}, expected p's shape {shape}")
        if a._device is not p._device:
            core.common_device(op, p, a)   # (raises)


_batch = threading.local()   # .calls: the updates collected by ``batched`` on this thread


@contextlib.contextmanager
def batched():
    """Collect the updates made inside (each an optimizer step of one parameter, or an
    amp_unscale) and run them when the block ends: those of one rule on one device through the
    device's ``optim_multi`` kernel (one dispatch for many parameters where it has one),
    the rest one by one, in their order. An error inside drops what was collected, so no
    parameter is updated; inside another ``batched`` block, the outer one runs them."""
    if getattr(_batch, "calls", None) is not None:
        yield
        return
    calls: list = []
    with _gathering(calls):
        yield
    _run_batch(calls)


@contextlib.contextmanager
def _gathering(calls: list):
    """The updates made inside go to ``calls`` (as (rule, device, arrays, scalars))."""
    outer = getattr(_batch, "calls", None)
    _batch.calls = calls
    try:
        yield
    finally:
        _batch.calls = outer


def _bufs(arrays: tuple) -> tuple:
    """The arrays' (checked Arrays, or None) buffers (None kept), as the kernels take them."""
    # (getattr mapped in C: None has no _buf and stays None; once per parameter of a step)
    return tuple(map(getattr, arrays, _BUF, _NONE))


_BUF, _NONE = itertools.repeat("_buf"), itertools.repeat(None)
_FOURTH = operator.itemgetter(3)   # optim_scalars' scalars


def _run_batch(calls: list) -> None:
    # by device, rule and whether the kernels take the dtype (the updates are independent)
    groups: dict = {}
    for op, dev, arrays, scalars in calls:
        key = (dev, op, arrays[0]._dtype.name in _KERNEL_DTYPES)
        rows = groups.get(key)
        if rows is None:
            rows = groups[key] = []
        rows.append(arrays + scalars)
    for (dev, op, kernel_dtype), rows in groups.items():
        k = dev.kernels.get("optim_multi") if kernel_dtype else None
        if k is not None:
            n = ARRAYS[op]
            k(op, [_bufs(r[:n]) + r[n:] for r in rows])
        else:
            core.composite(dev, "optim_multi")(dev, op, rows)


def takes_vals(p: Array, g: Array) -> bool:
    """Whether the update of ``p`` by ``g`` runs on its device's optim_multi kernel with its
    scalars read from a buffer (the kernel's ``takes_vals``): a kernel dtype, and ``g`` of
    ``p``'s dtype, shape and device as the optimizers pass it without a conversion."""
    dev = p._device
    if not getattr(dev.kernels.get("optim_multi"), "takes_vals", False):
        return False
    d = p._dtype
    # (the buffers' shapes first: the arrays' shapes are tuples made of them)
    return (d.name in _KERNEL_DTYPES and g._dtype is d
            and (g._buf.shape == p._buf.shape or g.shape == p.shape) and g._device is dev)


def step_in_kernels(collect: Callable[[], None]) -> None:
    """An optimizer step whose updates all pass ``takes_vals``: ``collect()`` (the optimizer's
    loop, calling the rule functions above once per parameter) and the scalars of every update
    are one host op (grilly.array.dispatch.host_op), and the optim_multi kernels that read them
    follow as kernels. grilly.jit replays the host op (new step counts, learning rates) and
    captures the kernels: a replayed training step submits its forward and backward, runs
    this Python while the device works on them, then submits the captured update. (Run ahead
    of the forward, to make the step one submission, it measured slower: the device waited for
    the Python; docs/jit.md.)"""
    res = _dispatch.host_op(_collect_vals, collect)
    for (dev, op, rows), vals in zip(res[-1], res[:-1]):
        dev.kernels["optim_multi"](op, rows, vals._buf)


def _collect_vals(collect: Callable[[], None]) -> tuple:
    """Run ``collect`` gathering its updates; per device, rule and dtype the (n, 8) scalars
    of its updates (contract.optim_scalars) as an Array, then the plan: (device, rule, the
    kernel's calls) for each."""
    calls: list = []
    with _gathering(calls):
        collect()
    groups: dict = {}
    for op, dev, arrays, scalars in calls:
        # (by the device's id: its hash is Python code, and every device named here is alive
        # in ``calls`` until the end of this call)
        key = (id(dev), op, arrays[0]._dtype)
        rows = groups.get(key)
        if rows is None:
            rows = groups[key] = (dev, [])
        rows[1].append(_bufs(arrays) + scalars)
    out, plan = [], []
    for (_, op, dtype), (dev, rows) in groups.items():
        # (each row's eight scalars, mapped in C)
        h = np.array(list(map(_FOURTH, itertools.starmap(optim_scalars_fn(op), rows))),
                     dtype.np)
        out.append(core.wrap(dev.kernels["from_host"](h, dtype), dtype, dev))
        plan.append((dev, op, rows))
    return (*out, plan)


def _jit_guard(collect: Callable[[], None]) -> tuple:
    """What the update kernels after ``_collect_vals`` hold as constants (grilly.jit keeps a
    graph only while these are the same objects): the optimizer's (``collect``'s owner's)
    ``jit_guard()``, its state dict, parameters and state arrays; a load_state_dict replaces
    them, and the graph's kernels would update the old ones."""
    owner = getattr(collect, "__self__", None)
    guard = getattr(owner, "jit_guard", None)
    return () if guard is None else guard()


_collect_vals.jit_guard = _jit_guard


def _now(op: str, dev, arrays: tuple, scalars: tuple) -> None:
    k = dev.kernels.get(op)
    if k is not None and arrays[0]._dtype.name in _KERNEL_DTYPES:
        k(*_bufs(arrays), *scalars)
    else:
        core.composite(dev, op)(dev, *arrays, *scalars)


def _run(op: str, p: Array, arrays: tuple, scalars: tuple) -> None:
    # written in place: a graph that saved p cannot backward through it after (array.bump,
    # inlined: every parameter of every step comes here)
    c = p._version
    if c is None:
        p._version = [1]
    else:
        c[0] += 1
    calls = getattr(_batch, "calls", None)
    if calls is not None:
        calls.append((op, p._device, arrays, scalars))
    else:
        _now(op, p._device, arrays, scalars)


def sgd_step(p: Array, g: Array, momentum_buffer: Array | None = None, *, lr: float,
             momentum: float = 0.0, dampening: float = 0.0, weight_decay: float = 0.0,
             nesterov: bool = False, maximize: bool = False, first: bool = False) -> None:
    """One SGD update of ``p`` in place; ``first``: the momentum buffer starts as the gradient."""
    if not _fits(p, (g,) if momentum_buffer is None else (g, momentum_buffer)):
        _check("sgd_step", p, g, momentum_buffer=momentum_buffer)
    if momentum and momentum_buffer is None:
        raise ValueError("sgd_step: momentum > 0 needs a momentum_buffer")
    _run("sgd_step", p, (p, g, momentum_buffer if momentum else None),
         (lr, momentum, dampening, weight_decay, nesterov, maximize, first))


def adam_step(p: Array, g: Array, exp_avg: Array, exp_avg_sq: Array,
              max_exp_avg_sq: Array | None = None, *, lr: float, beta1: float, beta2: float,
              eps: float, step: int, weight_decay: float = 0.0, decoupled: bool = False,
              maximize: bool = False) -> None:
    """One Adam (``decoupled``: AdamW) update of ``p`` at ``step`` (from 1), in place; amsgrad
    when ``max_exp_avg_sq`` is given."""
    if not _fits(p, (g, exp_avg, exp_avg_sq) if max_exp_avg_sq is None
                 else (g, exp_avg, exp_avg_sq, max_exp_avg_sq)):
        _check("adam_step", p, g, exp_avg=exp_avg, exp_avg_sq=exp_avg_sq,
               max_exp_avg_sq=max_exp_avg_sq)
    if step < 1:
        raise ValueError(f"adam_step: step counts from 1, got {step}")
    # bias corrections in float64 on the host, as torch.optim computes them
    step_size = lr / (1.0 - beta1 ** step)
    bc2_sqrt = math.sqrt(1.0 - beta2 ** step)
    _run("adam_step", p, (p, g, exp_avg, exp_avg_sq, max_exp_avg_sq),
         (lr, beta1, beta2, eps, weight_decay, decoupled, maximize, step_size, bc2_sqrt))


def rmsprop_step(p: Array, g: Array, square_avg: Array, grad_avg: Array | None = None,
                 momentum_buffer: Array | None = None, *, lr: float, alpha: float, eps: float,
                 weight_decay: float = 0.0, momentum: float = 0.0,
                 maximize: bool = False) -> None:
    """One RMSprop update of ``p`` in place; centered when ``grad_avg`` is given."""
    if not _fits(p, (g, square_avg, *filter(_GIVEN, (grad_avg, momentum_buffer)))):
        _check("rmsprop_step", p, g, square_avg=square_avg, grad_avg=grad_avg,
               momentum_buffer=momentum_buffer)
    if momentum > 0 and momentum_buffer is None:
        raise ValueError("rmsprop_step: momentum > 0 needs a momentum_buffer")
    _run("rmsprop_step", p, (p, g, square_avg, grad_avg, momentum_buffer if momentum > 0 else None),
         (lr, alpha, eps, weight_decay, momentum, maximize))


def adagrad_step(p: Array, g: Array, state_sum: Array, *, lr: float, eps: float, step: int,
                 lr_decay: float = 0.0, weight_decay: float = 0.0,
                 maximize: bool = False) -> None:
    """One Adagrad update of ``p`` at ``step`` (from 1) in place."""
    if not _fits(p, (g, state_sum)):
        _check("adagrad_step", p, g, state_sum=state_sum)
    if step < 1:
        raise ValueError(f"adagrad_step: step counts from 1, got {step}")
    clr = lr / (1.0 + (step - 1) * lr_decay)
    _run("adagrad_step", p, (p, g, state_sum), (clr, eps, weight_decay, maximize))


def amp_unscale(g: Array, found: Array, inv_scale: float) -> None:
    """GradScaler's unscale of one gradient, in place: ``found`` (a 0-d uint32 flag) becomes 1
    when ``g`` holds an inf or NaN, and ``g`` is multiplied by ``inv_scale``."""
    op = "amp_unscale"
    core.check_array(g, op, "g")
    core.check_array(found, op, "found")
    if g._dtype.kind != "f":
        raise TypeError(f"{op}: g must have a real floating dtype, got {g._dtype.name}")
    if found.shape != () or found._dtype.name != "uint32":
        raise TypeError(f"{op}: found must be a 0-d uint32 array, got {found._dtype.name} "
                        f"{found.shape}")
    core.common_device(op, g, found)
    if g.size == 0:
        return
    _run(op, g, (g, found), (float(inv_scale),))

