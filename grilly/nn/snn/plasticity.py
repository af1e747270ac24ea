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
from ...array.plasticity import plasticity_step
from ..layers import Linear
from .checks import _check_input

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


def _rows(a: Array | None, d) -> Array | None:
    """``a`` as (batch, n) of dtype ``d`` (a (n,) array is a batch of one)."""
    if a is None:
        return None
    a = a if a.dtype == d else gp.astype(a, d)
    return gp.reshape(a, (1, -1)) if a.ndim == 1 else a


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
        w = gp.asarray(weight, copy=True)
        traces = _stdp_into(w, pre, post, pre_trace, post_trace, bounds,
                            (a_plus, a_minus, dp, dm, w_min, w_max))
    return (w, *traces)


def _stdp_into(w: Array, pre: Array, post: Array, pre_trace, post_trace, bounds,
               params: tuple) -> tuple:
    """The STDP step on ``w`` in place (one plasticity_step kernel): the new traces, shaped
    like ``pre`` and ``post``."""
    d = w.dtype
    rule = {"hard": "stdp_hard", "soft": "stdp_soft", None: "stdp"}[bounds]
    u, v = plasticity_step(w, _rows(pre, d), _rows(post, d), _rows(pre_trace, d),
                                   _rows(post_trace, d), rule=rule, params=params)
    if pre.ndim == 1:
        u, v = gp.reshape(u, (-1,)), gp.reshape(v, (-1,))
    return u, v


def hebbian(weight: Array, pre: Array, post: Array, *, lr: float = 0.01, rule: str = "plain",
            weight_decay: float = 0.0) -> Array:
    """One Hebbian step ('plain' or 'oja'); returns the new weight (see the module doc)."""
    op = "hebbian"
    weight, pre, post = _pair(weight, pre, post, op)
    if rule not in ("plain", "oja"):
        raise ValueError(f"{op}: rule must be 'plain' or 'oja', got {rule!r}")
    with no_grad():
        w = gp.asarray(weight, copy=True)
        _hebbian_into(w, pre, post, rule, lr, weight_decay)
    return w


def _hebbian_into(w: Array, pre: Array, post: Array, rule: str, lr: float,
                  weight_decay: float) -> None:
    """The Hebbian/Oja step on ``w`` in place (one plasticity_step kernel)."""
    d = w.dtype
    params = (lr, weight_decay) if rule == "plain" else (lr,)
    plasticity_step(w, _rows(pre, d), _rows(post, d),
                            rule="hebbian" if rule == "plain" else "oja", params=params)


class _Rule:
    """A learning rule bound to a Linear whose weight it updates in place."""

    def __init__(self, layer: Linear, op: str) -> None:
        if not isinstance(layer, Linear):
            raise TypeError(f"{op}: expected an nn.Linear to attach to, got {type(layer).__name__}")
        self.layer = layer



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
        """Update the traces with this step's spikes and the weight in place (one kernel)."""
        p = self.params
        op = "STDP.step"
        weight, pre, post = _pair(self.layer.weight, pre, post, op)
        dp = _decay(p["tau_plus"], p["dt"], op, "tau_plus")
        dm = _decay(p["tau_minus"], p["dt"], op, "tau_minus")
        with no_grad():
            self.pre_trace, self.post_trace = _stdp_into(
                weight, pre, post, self.pre_trace, self.post_trace, p["bounds"],
                (p["a_plus"], p["a_minus"], dp, dm, p["w_min"], p["w_max"]))

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
        weight, pre, post = _pair(self.layer.weight, pre, post, "Hebbian.step")
        with no_grad():
            _hebbian_into(weight, pre, post, **self.params)
