"""Plasticity without gradients: pair-based STDP with exponential traces, and Hebbian learning
(plain and Oja's rule), as functional updates returning new arrays and as rule objects that
update a Linear's weight in place. Weights are (n_post, n_pre), as in ``nn.Linear``; spikes and
activities are (n,) or (batch, n), and the pair terms are averaged over the batch.

STDP, one step (dt) with pre spikes s_pre and post spikes s_post:
    x_pre  <- x_pre  exp(-dt / tau_plus)  + s_pre          (pre-synaptic trace)
    x_post <- x_post exp(-dt / tau_minus) + s_post         (post-synaptic trace)
    LTP = s_post (x) x_pre,  LTD = x_post (x) s_pre          (outer products, batch mean)
    hard bounds: W <- clip(W + A_plus LTP - A_minus LTD, w_min, w_max)
    soft bounds: W <- W + A_plus (w_max - W) LTP - A_minus (W - w_min) LTD
    bounds=None: W <- W + A_plus LTP - A_minus LTD
A pre and a post spike in the same step count as both LTP and LTD (the traces include them).

Hebbian: plain  W <- W + lr <y (x) x> - weight_decay W
         Oja    W <- W + lr (<y (x) x> - <y^2> W)          (y = post, x = pre)
"""
from __future__ import annotations

import math

from ...array import api as gp
from ...autograd import no_grad

from ...array.array import Array
from ..layers import Linear
from .functional import _check_input

__all__ = ["stdp", "hebbian", "STDP", "Hebbian"]

_BOUNDS = ("hard", "soft", None)


def _pair(weight, pre, post, op: str):
    weight = _check_input(weight, op, "weight")
    pre = _check_input(pre, op, "pre")
    post = _check_input(post, op, "post")
    if weight.ndim != 2:
        raise ValueError(f"{op}: weight must be 2-D (n_post, n_pre), got shape {weight.shape}")
    if pre.ndim not in (1, 2) or post.ndim != pre.ndim:
        raise ValueError(f"{op}: pre and post must both be (n,) or (batch, n), got shapes "
                         f"{pre.shape} and {post.shape}")
    if (post.shape[-1], pre.shape[-1]) != weight.shape or post.shape[:-1] != pre.shape[:-1]:
        raise ValueError(f"{op}: weight {weight.shape} must be (n_post, n_pre) for post "
                         f"{post.shape} and pre {pre.shape}")
    return weight, pre, post


def _outer_mean(a: Array, b: Array) -> Array:
    """The batch mean of a (x) b: (n_a, n_b) from (n,) or (batch, n) arrays."""
    if a.ndim == 1:
        return gp.reshape(a, (-1, 1)) * gp.reshape(b, (1, -1))
    return gp.matmul(gp.permute_dims(a, (1, 0)), b) / float(a.shape[0])


def _decay(tau: float, dt: float, op: str, name: str) -> float:
    if not (float(tau) > 0 and float(dt) > 0):
        raise ValueError(f"{op}: {name} and dt must be > 0, got {name}={tau}, dt={dt}")
    return math.exp(-float(dt) / float(tau))


def stdp(weight: Array, pre: Array, post: Array, pre_trace: Array | None = None,
         post_trace: Array | None = None, *, a_plus: float = 0.01, a_minus: float = 0.012,
         tau_plus: float = 20.0, tau_minus: float = 20.0, dt: float = 1.0, w_min: float = 0.0,
         w_max: float = 1.0, bounds: str | None = "hard") -> tuple:
    """One pair-based STDP step: (new weight, pre_trace, post_trace); see the module doc."""
    op = "stdp"
    weight, pre, post = _pair(weight, pre, post, op)
    if bounds not in _BOUNDS:
        raise ValueError(f"{op}: bounds must be 'hard', 'soft' or None, got {bounds!r}")
    if not w_min <= w_max:
        raise ValueError(f"{op}: w_min ({w_min}) must be <= w_max ({w_max})")
    dp, dm = _decay(tau_plus, dt, op, "tau_plus"), _decay(tau_minus, dt, op, "tau_minus")
    with no_grad():
        pre_trace = pre if pre_trace is None else pre_trace * dp + pre
        post_trace = post if post_trace is None else post_trace * dm + post
        ltp = _outer_mean(post, pre_trace)
        ltd = _outer_mean(post_trace, pre)
        if bounds == "soft":
            w = weight + a_plus * (w_max - weight) * ltp - a_minus * (weight - w_min) * ltd
        else:
            w = weight + a_plus * ltp - a_minus * ltd
            if bounds == "hard":
                w = gp.clip(w, float(w_min), float(w_max))
    return w, pre_trace, post_trace


def hebbian(weight: Array, pre: Array, post: Array, *, lr: float = 0.01, rule: str = "plain",
            weight_decay: float = 0.0) -> Array:
    """One Hebbian step ('plain' or 'oja'); returns the new weight (see the module doc)."""
    op = "hebbian"
    weight, pre, post = _pair(weight, pre, post, op)
    if rule not in ("plain", "oja"):
        raise ValueError(f"{op}: rule must be 'plain' or 'oja', got {rule!r}")
    with no_grad():
        corr = _outer_mean(post, pre)
        if rule == "oja":
            y2 = post * post if post.ndim == 1 else gp.mean(post * post, axis=0)
            return weight + lr * (corr - gp.reshape(y2, (-1, 1)) * weight)
        return weight + lr * corr - weight_decay * weight


class _Rule:
    """A learning rule bound to a Linear whose weight it updates in place."""

    def __init__(self, layer: Linear, op: str) -> None:
        if not isinstance(layer, Linear):
            raise TypeError(f"{op}: expected an nn.Linear to attach to, got {type(layer).__name__}")
        self.layer = layer

    def _write(self, new: Array) -> None:
        with no_grad():
            self.layer.weight[...] = gp.astype(new, self.layer.weight.dtype)


class STDP(_Rule):
    """Pair-based STDP on ``layer.weight``: ``rule.step(pre_spikes, post_spikes)`` each step;
    ``reset()`` clears the traces (parameters as in ``stdp``)."""

    def __init__(self, layer: Linear, *, a_plus: float = 0.01, a_minus: float = 0.012,
                 tau_plus: float = 20.0, tau_minus: float = 20.0, dt: float = 1.0,
                 w_min: float = 0.0, w_max: float = 1.0, bounds: str | None = "hard") -> None:
        super().__init__(layer, "STDP")
        self.params = dict(a_plus=a_plus, a_minus=a_minus, tau_plus=tau_plus,
                           tau_minus=tau_minus, dt=dt, w_min=w_min, w_max=w_max, bounds=bounds)
        self.pre_trace = self.post_trace = None

    def step(self, pre: Array, post: Array) -> None:
        """Update the traces with this step's spikes and the weight in place."""
        w, self.pre_trace, self.post_trace = stdp(self.layer.weight, pre, post, self.pre_trace,
                                                  self.post_trace, **self.params)
        self._write(w)

    def reset(self) -> None:
        """Forget the traces (a new spike train starts)."""
        self.pre_trace = self.post_trace = None


class Hebbian(_Rule):
    """Hebbian learning ('plain' or 'oja') on ``layer.weight``: ``rule.step(pre, post)``."""

    def __init__(self, layer: Linear, *, lr: float = 0.01, rule: str = "plain",
                 weight_decay: float = 0.0) -> None:
        super().__init__(layer, "Hebbian")
        self.params = dict(lr=lr, rule=rule, weight_decay=weight_decay)

    def step(self, pre: Array, post: Array | None = None) -> None:
        """Update the weight in place; ``post`` defaults to the layer's output for ``pre``."""
        if post is None:
            with no_grad():
                post = self.layer(pre)
        self._write(hebbian(self.layer.weight, pre, post, **self.params))
