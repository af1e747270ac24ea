"""SpikingJelly 2.0's ``learning.online_learning``: the training loops of OTTT (Online Training
Through Time: a loss and a backward per step, the states detached between steps) and FPTT
(Forward Propagation Through Time: per-step updates regularized towards a running average of the
weights), written over grilly.nn modules and grilly.optim optimizers.

    loss, y = online_learning.ottt_online_training(net, opt, x_seq, y_seq, f_loss_t,
                                                   online=True)   # x_seq (B, T, ...)
"""
from __future__ import annotations

import numbers
from typing import Callable

from ....array import api as gp
from ....array.array import Array
from ....autograd import no_grad
from ... import functional as F
from ..functional import detach_net

__all__ = ["fptt_online_training_init_w_ra", "fptt_online_training", "ottt_online_training"]


def _params(optimizer, op: str) -> list:
    groups = getattr(optimizer, "param_groups", None)
    if groups is None:
        raise TypeError(f"{op}: optimizer must be a grilly.optim optimizer (with param_groups), "
                        f"got {type(optimizer).__name__}")
    return [p for g in groups for p in g["params"]]


def _check_seq(x, name: str, op: str) -> Array:
    if not isinstance(x, Array) or x.ndim < 1:
        raise TypeError(f"{op}: {name} must be a grilly Array with a time axis, got "
                        f"{type(x).__name__}")
    return x


def ottt_online_training(model, optimizer, x_seq: Array, target_seq: Array,
                         f_loss_t: Callable, online: bool) -> tuple:
    """SpikingJelly's OTTT loop over x_seq (B, T, ...) and target_seq (B, T, ...): at each step
    t the loss f_loss_t(model(x[:, t]), target[:, t]) is backpropagated (an optimizer step after
    each with ``online``, else one at the end), then the net's states are detached. Returns the
    summed loss (a scalar Array without a graph) and the outputs (B, T, ...)."""
    op = "ottt_online_training"
    _params(optimizer, op)
    x_seq = gp.moveaxis(_check_seq(x_seq, "x_seq", op), 1, 0)
    target_seq = gp.moveaxis(_check_seq(target_seq, "target_seq", op), 1, 0)
    batch_loss, y_all = 0.0, []
    if not online:
        optimizer.zero_grad()
    for t in range(x_seq.shape[0]):
        if online:
            optimizer.zero_grad()
        y_t = model(x_seq[t])
        if isinstance(y_t, (list, tuple)):   # an OTTT neuron's [spike, trace]
            y_t = y_t[0]
        loss = f_loss_t(y_t, target_seq[t])
        loss.backward()
        if online:
            optimizer.step()
        detach_net(model)   # each step's graph alone (the states carry no history)
        batch_loss = batch_loss + loss.detach()
        y_all.append(y_t.detach())
    if not online:
        optimizer.step()
    return batch_loss, gp.stack(y_all, axis=1)


def fptt_online_training_init_w_ra(optimizer) -> list:
    """FPTT's running average of the weights, started at (copies of) the optimizer's
    parameters."""
    params = _params(optimizer, "fptt_online_training_init_w_ra")
    return [gp.asarray(p.detach(), copy=True) for p in params]


def _snapshot(model) -> list:
    """Every kept state of ``model``: SpikingJelly-style memories and grilly neurons'
    ``state`` (copied: the replayed step must not see the second forward's)."""
    snap = []
    for m in model.modules():
        d = m.__dict__
        mem = d.get("_memories")
        snap.append((m, dict(mem) if mem is not None else None,
                     d["state"] if "state" in d else _MISSING))
    return snap


_MISSING = object()


def _restore(snap: list) -> None:
    for m, mem, state in snap:
        if mem is not None:
            m.__dict__["_memories"].clear()
            m.__dict__["_memories"].update(mem)
        if state is not _MISSING:
            m.__dict__["state"] = state


def fptt_online_training(model, optimizer, x_seq: Array, target_seq: Array,
                         f_loss_t: Callable, alpha: float, w_ra: list) -> None:
    """SpikingJelly's FPTT loop over x_seq (T, B, ...): at each step the loss plus
    alpha/2 sum mse(W, w_ra + g_prev / (2 alpha)) is minimized by one optimizer step, the
    states detached; then (except at the last step) the step is run again from the same states
    to take this step's plain gradient g, w_ra = (w_ra + W)/2 - g / (2 alpha), and the states
    restored. ``w_ra`` (from ``fptt_online_training_init_w_ra``) is updated in place."""
    op = "fptt_online_training"
    params = _params(optimizer, op)
    _check_seq(x_seq, "x_seq", op)
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not alpha > 0:
        raise ValueError(f"{op}: alpha must be a number > 0, got {alpha!r}")
    if not isinstance(w_ra, list) or len(w_ra) != len(params):
        raise ValueError(f"{op}: w_ra must be a list of {len(params)} arrays (one per "
                         "parameter: fptt_online_training_init_w_ra)")
    alpha = float(alpha)
    prev = [0.0] * len(params)
    n = x_seq.shape[0]
    for t in range(n):
        x_t, target_t = x_seq[t], target_seq[t]
        optimizer.zero_grad()
        loss = f_loss_t(model(x_t), target_t)
        for i, p in enumerate(params):
            loss = loss + (alpha / 2.0) * F.mse_loss(p, w_ra[i] + prev[i] / (2.0 * alpha))
        loss.backward()
        optimizer.step()
        detach_net(model)
        snap = _snapshot(model)
        optimizer.zero_grad()
        if t < n - 1:
            f_loss_t(model(x_t), target_t).backward()
            with no_grad():
                for i, p in enumerate(params):
                    g = p.grad if p.grad is not None else gp.zeros_like(p.detach())
                    prev[i] = gp.asarray(g, copy=True)   # zero_grad may clear it in place
                    w_ra[i] = (w_ra[i] + p.detach()) / 2.0 - g / (2.0 * alpha)
        optimizer.zero_grad()
        _restore(snap)
