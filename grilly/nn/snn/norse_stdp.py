"""Norse 1.1's plasticity sensors on grilly Arrays: the BrainScaleS-2 style correlation sensor
(``correlation_sensor_step``, ``correlation_based_update``), the LIF layer that carries two of
them (``LIFCorrelation``, ``lif_correlation_step``), the event-driven STDP sensor
(``stdp_sensor_step``) and Norse's trace STDP (``STDPState``, ``STDPParameters``,
``stdp_step_linear``, ``stdp_step_conv2d``); the names are re-exported by
``grilly.nn.snn.norse``.

Correlation sensor, synapse array (batch, n_pre, n_post), pre spikes z_pre (batch, n_pre), post
spikes z_post (batch, n_post), pre / post masks P[b, i, j] = z_pre[b, i], Q[b, i, j] =
z_post[b, j] (each sample its own synapses; Norse 1.1's masks broadcast the batch against the
neuron axes, so it agrees for a batch of one, or unbatched spikes), one Euler step of dt:

    c  <- c  + (1 - pp) dt tau_c_inv (-c)  + eta_p P       (correlation trace)
    ac <- ac + pp dt tau_ac_inv (-ac)      + eta_m Q       (anti-correlation trace)
    pp <- H(pp + Q - P)                                    (post after pre, no gradient)

STDP (Norse's ``stdp_step_linear``, weight (n_post, n_pre), sums over the batch):

    t_pre  <- t_pre  + dt tau_pre_inv  (a_pre z_pre   - t_pre)
    t_post <- t_post + dt tau_post_inv (a_post z_post - t_post)
    W <- bound(W + A_plus(W) sum_b z_post (x) t_pre - A_minus(W) sum_b t_post (x) z_pre)

The additive rule with number parameters is grilly's ``plasticity_step`` kernel (``snn.stdp``'s:
one pass over the weight) with its spikes, decays and rates rescaled to Norse's conventions;
the other rules, and Array parameters, are the composition of array ops.
"""
from __future__ import annotations

import math
import numbers
from typing import Callable, NamedTuple

from ...array import api as gp

from ...array.array import Array
from ...autograd import no_grad
from .. import functional as NF
from ..module import Module
from . import functional as F
from .norse_compat import (LIFParameters, LIFState, _dt, _float, _full, _value, _zeros,
                           heaviside, lif_step)
from .plasticity import _stdp_into

__all__ = ["CorrelationSensorParameters", "CorrelationSensorState", "correlation_sensor_step",
           "correlation_based_update", "LIFCorrelationParameters", "LIFCorrelationState",
           "lif_correlation_step", "LIFCorrelation", "STDPSensorParameters", "STDPSensorState",
           "stdp_sensor_step", "STDPState", "STDPParameters", "stdp_step_linear",
           "stdp_step_conv2d"]


# ---- correlation sensor ----------------------------------------------------------------------

class CorrelationSensorParameters(NamedTuple):
    """Norse's correlation sensor parameters: the traces' jumps and inverse time constants
    (1/s). Floats or Arrays."""

    eta_p: float | Array = 1.0
    eta_m: float | Array = 1.0
    tau_ac_inv: float | Array = 1.0 / 100e-3
    tau_c_inv: float | Array = 1.0 / 100e-3


class CorrelationSensorState(NamedTuple):
    """A correlation sensor's state, each (batch, n_pre, n_post): which synapses saw a post
    spike after the last pre spike, the correlation and the anti-correlation traces."""

    post_pre: Array
    correlation_trace: Array
    anti_correlation_trace: Array


def _sensor_fields(state, op: str, like: Array) -> tuple:
    if not isinstance(state, CorrelationSensorState) and not (
            isinstance(state, tuple) and len(state) == 3):
        raise TypeError(f"{op}: state must be a CorrelationSensorState (post_pre, "
                        f"correlation_trace, anti_correlation_trace), got "
                        f"{type(state).__name__}")
    out = []
    for name, s in zip(CorrelationSensorState._fields, state):
        if not isinstance(s, Array) or s.ndim != 3:
            raise ValueError(f"{op}: state.{name} must be a (batch, n_pre, n_post) grilly Array, "
                             f"got {getattr(s, 'shape', type(s).__name__)}")
        if s.device != like.device:
            raise ValueError(f"{op}: state.{name} is on {s.device}, the spikes on {like.device}")
        out.append(s if s.dtype == like.dtype else gp.astype(s, like.dtype))
    return tuple(out)


def _sensor_params(p, op: str, like: Array) -> tuple:
    if not isinstance(p, tuple) or not all(hasattr(p, f) for f in
                                           CorrelationSensorParameters._fields):
        raise TypeError(f"{op}: p must be a CorrelationSensorParameters "
                        f"{CorrelationSensorParameters._fields}, got {type(p).__name__}")
    return tuple(_value(getattr(p, f), f, op, like) for f in CorrelationSensorParameters._fields)


def correlation_sensor_step(z_pre: Array, z_post: Array, state: CorrelationSensorState,
                            p: CorrelationSensorParameters = CorrelationSensorParameters(),
                            dt: float = 0.001) -> CorrelationSensorState:
    """One Euler step of Norse's correlation sensor (see the module doc); the new state."""
    op = "correlation_sensor_step"
    z_pre = F._check_input(z_pre, op, "z_pre")
    z_post = F._check_input(z_post, op, "z_post")
    pp, c, ac = _sensor_fields(state, op, z_pre)
    B, n_pre, n_post = pp.shape
    for z, n, name in ((z_pre, n_pre, "z_pre"), (z_post, n_post, "z_post")):
        if z.ndim not in (1, 2) or z.shape[-1] != n or (z.ndim == 2 and z.shape[0] not in (1, B)):
            raise ValueError(f"{op}: {name} has shape {tuple(z.shape)}; for a state of shape "
                             f"{tuple(pp.shape)} it must be ({B}, {n}) or ({n},)")
    eta_p, eta_m, tau_ac_inv, tau_c_inv = _sensor_params(p, op, z_pre)
    dt = _dt(dt, op)
    # the masks: a pre spike marks its synapse row, a post spike its column
    pre_mask = gp.zeros_like(pp) + gp.expand_dims(z_pre, axis=-1)
    post_mask = gp.zeros_like(pp) + gp.expand_dims(z_post, axis=-2)
    # each trace decays only on its side of the post-after-pre flag (Norse's order)
    c_decayed = c + (1.0 - pp) * ((dt * tau_c_inv) * (-c))
    ac_decayed = ac + pp * ((dt * tau_ac_inv) * (-ac))
    return CorrelationSensorState(
        post_pre=heaviside(pp + post_mask - pre_mask),
        correlation_trace=c_decayed + eta_p * pre_mask,
        anti_correlation_trace=ac_decayed + eta_m * post_mask)


def correlation_based_update(ts: int, linear_update: Callable, weights: Array,
                             correlation_state: CorrelationSensorState, learning_rate: float,
                             ts_frequency: int) -> Array:
    """Norse's ``correlation_based_update``: every ``ts_frequency`` steps, weights plus
    learning_rate times ``linear_update`` of the flattened traces (detached; reshaped to
    (n_post, n_pre) as Norse does), and the traces zeroed in place; else the weights."""
    op = "correlation_based_update"
    if not callable(linear_update):
        raise TypeError(f"{op}: linear_update must be callable (e.g. an nn.Linear), got "
                        f"{type(linear_update).__name__}")
    if isinstance(ts_frequency, bool) or not isinstance(ts_frequency, int) or ts_frequency < 1:
        raise ValueError(f"{op}: ts_frequency must be a positive int, got {ts_frequency!r}")
    weights = F._check_input(weights, op, "weights")
    if int(ts) % ts_frequency != 0:
        return weights
    c, ac = correlation_state.correlation_trace, correlation_state.anti_correlation_trace
    _, n_pre, n_post = c.shape
    dw = linear_update(gp.concat([gp.reshape(c, (-1,)), gp.reshape(ac, (-1,))], axis=0))
    weights = weights + _float(learning_rate, "learning_rate", op) * gp.reshape(
        dw.detach(), (n_post, n_pre))
    with no_grad():
        c[...] = 0.0
        ac[...] = 0.0
    return weights


# ---- LIF with correlation sensors ------------------------------------------------------------

class LIFCorrelationParameters(NamedTuple):
    """Norse's LIFCorrelation parameters: the LIF neuron's and its two sensors'."""

    lif_parameters: LIFParameters = LIFParameters()
    input_correlation_parameters: CorrelationSensorParameters = CorrelationSensorParameters()
    recurrent_correlation_parameters: CorrelationSensorParameters = \
        CorrelationSensorParameters()


class LIFCorrelationState(NamedTuple):
    """A LIFCorrelation layer's state: the recurrent LIF state and its input-to-hidden and
    hidden-to-hidden correlation sensors."""

    lif_state: LIFState
    input_correlation_state: CorrelationSensorState
    recurrent_correlation_state: CorrelationSensorState


def _lif_correlation_rest(x: Array, n_in: int, hidden: int, p: LIFCorrelationParameters,
                          op: str) -> LIFCorrelationState:
    """The initial state of Norse's ``LIFCorrelation``: v = v_leak (detached), the rest zero."""
    B = x.shape[0]
    v_leak = _value(p.lif_parameters.v_leak, "v_leak", op, x)
    v0 = _full(v_leak.detach() if isinstance(v_leak, Array) else v_leak, (B, hidden), x)

    def sensor(n):
        return CorrelationSensorState(*(_zeros((B, n, hidden), x) for _ in range(3)))
    return LIFCorrelationState(LIFState(_zeros((B, hidden), x), v0, _zeros((B, hidden), x)),
                               sensor(n_in), sensor(hidden))


def lif_correlation_step(input_tensor: Array, state: LIFCorrelationState | None,
                         input_weights: Array, recurrent_weights: Array,
                         p: LIFCorrelationParameters = LIFCorrelationParameters(),
                         dt: float = 0.001) -> tuple:
    """Norse's ``lif_correlation_step``: ``lif_step``, then the input sensor on (input, new
    spikes) and the recurrent one on (previous spikes, new spikes); (spikes,
    LIFCorrelationState). A state of None is the initial state."""
    op = "lif_correlation_step"
    x = F._check_input(input_tensor, op, "input_tensor")
    if not isinstance(p, LIFCorrelationParameters):
        raise TypeError(f"{op}: p must be a LIFCorrelationParameters, got {type(p).__name__}")
    if x.ndim != 2:
        raise ValueError(f"{op}: input_tensor must be (batch, input_size), got shape "
                         f"{tuple(x.shape)}")
    if not isinstance(input_weights, Array) or input_weights.ndim != 2:
        raise ValueError(f"{op}: input_weights must be a 2-d grilly Array (hidden, input)")
    if state is None:
        state = _lif_correlation_rest(x, x.shape[1], input_weights.shape[0], p, op)
    elif not isinstance(state, LIFCorrelationState):
        raise TypeError(f"{op}: state must be a LIFCorrelationState or None, got "
                        f"{type(state).__name__}")
    z, lif_state = lif_step(x, state.lif_state, input_weights, recurrent_weights,
                            p.lif_parameters, dt)
    z_prev = state.lif_state.z
    return z, LIFCorrelationState(
        lif_state=lif_state,
        input_correlation_state=correlation_sensor_step(
            x, z, state.input_correlation_state, p.input_correlation_parameters, dt),
        recurrent_correlation_state=correlation_sensor_step(
            z_prev if z_prev.dtype == z.dtype else gp.astype(z_prev, z.dtype), z,
            state.recurrent_correlation_state, p.recurrent_correlation_parameters, dt))


class LIFCorrelation(Module):
    """Norse's ``LIFCorrelation(input_size, hidden_size, p, dt)``: ``z, s = layer(x,
    input_weights, recurrent_weights, state)``, one ``lif_correlation_step`` on (batch,
    input_size) input (the weights are the caller's, as in Norse)."""

    def __init__(self, input_size: int, hidden_size: int,
                 p: LIFCorrelationParameters = LIFCorrelationParameters(),
                 dt: float = 0.001) -> None:
        super().__init__()
        for name, n in (("input_size", input_size), ("hidden_size", hidden_size)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError(f"LIFCorrelation: {name} must be a positive int, got {n!r}")
        if not isinstance(p, LIFCorrelationParameters):
            raise TypeError(f"LIFCorrelation: p must be a LIFCorrelationParameters, got "
                            f"{type(p).__name__}")
        self.input_size, self.hidden_size, self.p = input_size, hidden_size, p
        self.dt = _dt(dt, "LIFCorrelation")

    def forward(self, input_tensor: Array, input_weights: Array, recurrent_weights: Array,
                state: LIFCorrelationState | None = None) -> tuple:
        """(spikes, LIFCorrelationState); None starts from Norse's initial state."""
        op = "LIFCorrelation"
        x = F._check_input(input_tensor, op, "input_tensor")
        if x.ndim != 2 or x.shape[1] != self.input_size:
            raise ValueError(f"{op}: input_tensor must be (batch, {self.input_size}), got "
                             f"shape {tuple(x.shape)}")
        if not isinstance(input_weights, Array) or tuple(input_weights.shape) != (
                self.hidden_size, self.input_size):
            raise ValueError(f"{op}: input_weights must be a ({self.hidden_size}, "
                             f"{self.input_size}) grilly Array, got "
                             f"{getattr(input_weights, 'shape', type(input_weights).__name__)}")
        if state is None:
            state = _lif_correlation_rest(x, self.input_size, self.hidden_size, self.p, op)
        return lif_correlation_step(x, state, input_weights, recurrent_weights, self.p,
                                    self.dt)

    def extra_repr(self) -> str:
        return f"input_size={self.input_size}, hidden_size={self.hidden_size}, dt={self.dt}"


# ---- STDP sensor -----------------------------------------------------------------------------

class STDPSensorParameters(NamedTuple):
    """Norse's STDP sensor parameters (floats or Arrays); Norse 1.1's step decays both traces
    with ``tau_c_inv`` (``tau_ac_inv`` is unused), and so does grilly's."""

    eta_p: float | Array = 1.0
    eta_m: float | Array = 1.0
    tau_ac_inv: float | Array = 1.0 / 100e-3
    tau_c_inv: float | Array = 1.0 / 100e-3


class STDPSensorState(NamedTuple):
    """An STDP sensor's pre- and postsynaptic traces."""

    a_pre: Array
    a_post: Array


def stdp_sensor_step(z_pre: Array, z_post: Array, state: STDPSensorState,
                     p: STDPSensorParameters = STDPSensorParameters(),
                     dt: float = 0.001) -> STDPSensorState:
    """Norse's ``stdp_sensor_step``: each trace decays by dt tau_c_inv and jumps by its spikes
    times eta_p (pre) / eta_m (post)."""
    op = "stdp_sensor_step"
    z_pre = F._check_input(z_pre, op, "z_pre")
    z_post = F._check_input(z_post, op, "z_post")
    if not isinstance(state, tuple) or len(state) != 2:
        raise TypeError(f"{op}: state must be an STDPSensorState (a_pre, a_post), got "
                        f"{type(state).__name__}")
    a_pre, a_post = (F._check_input(s, op, f"state.{n}") for s, n in
                     zip(state, STDPSensorState._fields))
    if not isinstance(p, tuple) or not all(hasattr(p, f) for f in STDPSensorParameters._fields):
        raise TypeError(f"{op}: p must be an STDPSensorParameters, got {type(p).__name__}")
    eta_p, eta_m, tau_c_inv = (_value(getattr(p, f), f, op, z_pre)
                               for f in ("eta_p", "eta_m", "tau_c_inv"))
    dt = _dt(dt, op)
    a_pre = a_pre + dt * (tau_c_inv * (-a_pre))
    a_post = a_post + dt * (tau_c_inv * (-a_post))
    return STDPSensorState(a_pre + z_pre * eta_p, a_post + z_post * eta_m)


# ---- STDP (Norse's functional.stdp) ----------------------------------------------------------

_ALGORITHMS = ("additive", "additive_step", "multiplicative_pow", "multiplicative_relu")


class STDPState:
    """Norse's ``STDPState(t_pre, t_post)``: the pre- and postsynaptic traces; the steps update
    it in place (its attributes) and return it, as Norse's."""

    def __init__(self, t_pre: Array, t_post: Array) -> None:
        for name, t in (("t_pre", t_pre), ("t_post", t_post)):
            F._check_input(t, "STDPState", name)
        self.t_pre, self.t_post = t_pre, t_post

    def decay(self, z_pre: Array, z_post: Array, tau_pre_inv, tau_post_inv, a_pre, a_post,
              dt: float = 0.001) -> None:
        """One Euler step of the traces toward a z (t += dt tau_inv (a z - t)), in place."""
        self.t_pre = self.t_pre + (dt * tau_pre_inv) * (-self.t_pre + a_pre * z_pre)
        self.t_post = self.t_post + (dt * tau_post_inv) * (-self.t_post + a_post * z_post)

    def __repr__(self) -> str:
        return f"STDPState(t_pre={self.t_pre!r}, t_post={self.t_post!r})"


class STDPParameters:
    """Norse's ``STDPParameters``: trace jumps and inverse time constants, weight bounds,
    learning rates, the rule (``stdp_algorithm``: "additive", "additive_step",
    "multiplicative_pow" (exponent ``mu``), "multiplicative_relu"), hard bounds (a clip after
    the step) and, with ``convolutional``, the conv's stride, padding and dilation."""

    def __init__(self, a_pre=1.0, a_post=1.0, tau_pre_inv=1.0 / 50e-3, tau_post_inv=1.0 / 50e-3,
                 w_min=0.0, w_max=1.0, eta_plus=1e-3, eta_minus=1e-3,
                 stdp_algorithm: str = "additive", mu=0.0, hardbound: bool = True,
                 convolutional: bool = False, stride: int = 1, padding: int = 0,
                 dilation: int = 1) -> None:
        if stdp_algorithm not in _ALGORITHMS:
            raise ValueError(f"STDPParameters: stdp_algorithm must be one of {_ALGORITHMS}, got "
                             f"{stdp_algorithm!r}")
        self.a_pre, self.a_post = a_pre, a_post
        self.tau_pre_inv, self.tau_post_inv = tau_pre_inv, tau_post_inv
        self.w_min, self.w_max = w_min, w_max
        self.eta_plus, self.eta_minus = eta_plus, eta_minus
        self.stdp_algorithm = stdp_algorithm
        # Norse fixes mu for every rule but multiplicative_pow
        self.mu = {"additive": 0.0, "additive_step": 0.0, "multiplicative_relu": 1.0}.get(
            stdp_algorithm, mu)
        self.hardbound = bool(hardbound)
        self.convolutional = bool(convolutional)
        self.stride, self.padding, self.dilation = stride, padding, dilation

    def A_plus(self, w: Array):
        """The potentiation rate at weight w (by the rule)."""
        a = self.stdp_algorithm
        if a == "additive":
            return self.eta_plus
        if a == "additive_step":
            return self.eta_plus * heaviside(self.w_max - w)
        if a == "multiplicative_pow":
            return self.eta_plus * gp.pow(self.w_max - w, self.mu)
        return self.eta_plus * NF.relu(self.w_max - w)

    def A_minus(self, w: Array):
        """The depression rate at weight w (by the rule)."""
        a = self.stdp_algorithm
        if a == "additive":
            return self.eta_minus
        if a == "additive_step":
            return self.eta_minus * heaviside(w - self.w_min)
        if a == "multiplicative_pow":
            return self.eta_minus * gp.pow(w - self.w_min, self.mu)
        return self.eta_minus * NF.relu(w - self.w_min)

    def bounding_func(self, w: Array) -> Array:
        """w clipped to [w_min, w_max] with ``hardbound``, else w."""
        return gp.clip(w, self.w_min, self.w_max) if self.hardbound else w


def _stdp_args(z_pre, z_post, w, state, p, dt, op: str, wdim: int) -> tuple:
    z_pre = F._check_input(z_pre, op, "z_pre")
    z_post = F._check_input(z_post, op, "z_post")
    w = F._check_input(w, op, "w")
    if w.ndim != wdim:
        raise ValueError(f"{op}: w must be {wdim}-d, got shape {tuple(w.shape)}")
    if not isinstance(state, STDPState):
        raise TypeError(f"{op}: state_stdp must be an STDPState, got {type(state).__name__}")
    if not isinstance(p, STDPParameters):
        raise TypeError(f"{op}: p_stdp must be an STDPParameters, got {type(p).__name__}")
    return z_pre, z_post, w, _dt(dt, op)


def _scalars(p: STDPParameters, dt: float):
    """(pre spike scale, post spike scale, pre decay, post decay, a_plus, a_minus per sample)
    for grilly's kernel, or None where the parameters are not all numbers."""
    vals = (p.a_pre, p.a_post, p.tau_pre_inv, p.tau_post_inv, p.eta_plus, p.eta_minus,
            p.w_min, p.w_max)
    if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in vals):
        return None   # an Array among them: the composed path broadcasts it
    a_pre, a_post, ti_pre, ti_post, ep, em, lo, hi = (float(v) for v in vals)
    s_pre, s_post = dt * ti_pre * a_pre, dt * ti_post * a_post
    if s_pre == 0 or s_post == 0 or not math.isfinite(s_pre * s_post):
        return None
    return s_pre, s_post, 1.0 - dt * ti_pre, 1.0 - dt * ti_post, ep / s_post, em / s_pre, lo, hi


def stdp_step_linear(z_pre: Array, z_post: Array, w: Array, state_stdp: STDPState,
                     p_stdp: STDPParameters = STDPParameters(), dt: float = 0.001) -> tuple:
    """Norse's ``stdp_step_linear``: the traces' step (in ``state_stdp``), then the weight's
    (see the module doc); (new weight, state_stdp). A learning rule: no gradient."""
    op = "stdp_step_linear"
    z_pre, z_post, w, dt = _stdp_args(z_pre, z_post, w, state_stdp, p_stdp, dt, op, 2)
    if z_pre.ndim != 2 or z_post.ndim != 2 or z_pre.shape[0] != z_post.shape[0] or \
            tuple(w.shape) != (z_post.shape[1], z_pre.shape[1]):
        raise ValueError(f"{op}: w {tuple(w.shape)} must be (n_post, n_pre) for z_post "
                         f"{tuple(z_post.shape)} and z_pre {tuple(z_pre.shape)}, both (batch, n)")
    p, B = p_stdp, z_pre.shape[0]
    k = _scalars(p, dt) if p.stdp_algorithm == "additive" else None
    t_pre, t_post = state_stdp.t_pre, state_stdp.t_post
    with no_grad():
        if (k is not None and w.dtype in (gp.float32, gp.float64)
                and tuple(t_pre.shape) == tuple(z_pre.shape)
                and tuple(t_post.shape) == tuple(z_post.shape)):
            # grilly's STDP kernel: spikes scaled to the trace's jump, the pair rates
            # rescaled by the batch (Norse sums, the kernel averages) and by the spike scale
            s_pre, s_post, d_pre, d_post, ap, am, lo, hi = k
            d = w.dtype
            cast = (lambda a: a if a.dtype == d else gp.astype(a, d))  # noqa: E731
            w_new = gp.asarray(w, copy=True)
            state_stdp.t_pre, state_stdp.t_post = _stdp_into(
                w_new, cast(z_pre) * s_pre, cast(z_post) * s_post, cast(t_pre), cast(t_post),
                "hard" if p.hardbound else None, (ap * B, am * B, d_pre, d_post, lo, hi))
            return w_new, state_stdp
        state_stdp.decay(z_pre, z_post, p.tau_pre_inv, p.tau_post_inv, p.a_pre, p.a_post, dt)
        ltp = gp.matmul(gp.matrix_transpose(z_post), state_stdp.t_pre)
        ltd = gp.matmul(gp.matrix_transpose(state_stdp.t_post), z_pre)
        w = w + (p.A_plus(w) * ltp - p.A_minus(w) * ltd)
        return p.bounding_func(w).detach(), state_stdp


def stdp_step_conv2d(z_pre: Array, z_post: Array, w: Array, state_stdp: STDPState,
                     p_stdp: STDPParameters = STDPParameters(convolutional=True),
                     dt: float = 0.001) -> tuple:
    """Norse's ``stdp_step_conv2d``: the traces' step, then the weight (C_out, C_in, kh, kw)'s,
    the pairs taken over the conv's receptive fields (``p_stdp``'s stride, padding, dilation);
    (new weight, state_stdp). A learning rule: no gradient."""
    op = "stdp_step_conv2d"
    z_pre, z_post, w, dt = _stdp_args(z_pre, z_post, w, state_stdp, p_stdp, dt, op, 4)
    p = p_stdp
    if not p.convolutional:
        raise ValueError(f"{op}: p_stdp must be built with convolutional=True (it holds the "
                         "conv's stride, padding and dilation)")
    if z_pre.ndim != 4 or z_post.ndim != 4 or z_pre.shape[0] != z_post.shape[0] or \
            z_pre.shape[1] != w.shape[1] or z_post.shape[1] != w.shape[0]:
        raise ValueError(f"{op}: z_pre {tuple(z_pre.shape)} and z_post {tuple(z_post.shape)} "
                         f"must be (batch, C, H, W) with w {tuple(w.shape)}'s channels")
    B, c_out = z_pre.shape[0], w.shape[0]
    kernel = tuple(w.shape[2:])
    with no_grad():
        state_stdp.decay(z_pre, z_post, p.tau_pre_inv, p.tau_post_inv, p.a_pre, p.a_post, dt)

        def fields(a):   # (B, C_in kh kw, L): every output position's receptive field
            return NF.unfold(a, kernel, dilation=p.dilation, padding=p.padding, stride=p.stride)
        t_pre_uf, z_pre_uf = fields(state_stdp.t_pre), fields(z_pre)
        post = gp.reshape(z_post, (B, c_out, -1))
        t_post = gp.reshape(state_stdp.t_post, (B, c_out, -1))
        if post.shape[2] != t_pre_uf.shape[2]:
            raise ValueError(f"{op}: z_post has {post.shape[2]} positions per channel, the "
                             f"conv of z_pre {t_pre_uf.shape[2]}")
        ltp = gp.sum(gp.matmul(post, gp.matrix_transpose(t_pre_uf)), axis=0)
        ltd = gp.sum(gp.matmul(t_post, gp.matrix_transpose(z_pre_uf)), axis=0)
        w = w + (p.A_plus(w) * gp.reshape(ltp, w.shape) - p.A_minus(w) * gp.reshape(ltd, w.shape))
        return p.bounding_func(w).detach(), state_stdp
