"""Norse 1.1's adaptive exponential LIF (``norse.torch`` LIFAdEx*) and population encoding on
grilly Arrays; the names are re-exported by ``grilly.nn.snn.norse`` (norse_compat).

AdEx, one explicit Euler step of ``dt`` in Norse's order of operations (v, a: the state's):

    i' = i + x (+ z_rec W_rec^T with x = input W_in^T in the recurrent neuron)
    v* = v + dt tau_mem_inv ((v_leak - v) + delta_T exp((v - v_th) / delta_T) + i' - a)
    i_next = i' - dt tau_syn_inv i';  a* = a + dt tau_ada_inv (adaptation_current (v - v_leak) - a)
    z = H(v* - v_th);  v_next = (1 - z) v* + z v_reset;  a_next = a* + z adaptation_spike

(the reset keeps its surrogate gradient, in the recurrent neuron too, as Norse's). Step by step
(no fused kernel).
"""
from __future__ import annotations

import numbers
from typing import Callable, NamedTuple

import numpy as np

from ...array import api as gp

from ...array.array import Array
from .. import functional as NF
from ..module import Module
from . import functional as F
from .norse_compat import (_Recurrent, _Sequence, _check_state, _dt, _Norse, _params, _rec_call,
                           _rest, _spike_fn, _zeros)

__all__ = ["LIFAdExParameters", "LIFAdExState", "LIFAdExFeedForwardState",
           "lif_adex_feed_forward_step", "lif_adex_step", "lif_adex_current_encoder",
           "LIFAdExCell", "LIFAdEx", "LIFAdExRecurrentCell", "LIFAdExRecurrent",
           "gaussian_rbf", "euclidean_distance", "population_encode", "PopulationEncoder"]


class LIFAdExParameters(NamedTuple):
    """Norse's AdEx parameters (its defaults; numbers or per-neuron/learnable Arrays)."""

    adaptation_current: float = 4.0
    adaptation_spike: float = 0.02
    delta_T: float = 0.5   # noqa: N815  (Norse's name)
    tau_ada_inv: float = 2.0
    tau_syn_inv: float = 1.0 / 5e-3
    tau_mem_inv: float = 1.0 / 1e-2
    v_leak: float = 0.0
    v_th: float = 1.0
    v_reset: float = 0.0
    method: str = "super"
    alpha: float = 100.0


class LIFAdExState(NamedTuple):
    """The recurrent AdEx state: spikes z, membrane v, current i, adaptation a."""

    z: Array
    v: Array
    i: Array
    a: Array


class LIFAdExFeedForwardState(NamedTuple):
    """The feed-forward AdEx state: membrane v, current i, adaptation a."""

    v: Array
    i: Array
    a: Array


def _adex_update(i_jump, v, a, q, dt, spike) -> tuple:
    """One Euler step from the jumped current: (z, v, i, a)."""
    dv_exp = q["delta_T"] * gp.exp((v - q["v_th"]) / q["delta_T"])
    v_decayed = v + (dt * q["tau_mem_inv"]) * ((q["v_leak"] - v) + dv_exp + i_jump - a)
    i_decayed = i_jump + (-dt * q["tau_syn_inv"]) * i_jump
    a_decayed = a + (dt * q["tau_ada_inv"]) * (q["adaptation_current"] * (v - q["v_leak"]) - a)
    z = spike(v_decayed - q["v_th"])
    v_new = (1.0 - z) * v_decayed + z * q["v_reset"]
    return z, v_new, i_decayed, a_decayed + z * q["adaptation_spike"]


def _ff_state0(x: Array) -> LIFAdExFeedForwardState:
    # Norse's functional default LIFAdExFeedForwardState(0, 0, 0)
    z = _zeros(x.shape, x)
    return LIFAdExFeedForwardState(z, z, z)


def _adex_ff(x, state, q, dt, spike, op: str) -> tuple:
    return _adex_ff_update(x, _check_state(state, LIFAdExFeedForwardState, op, x.shape, x), q,
                           dt, spike)


def _adex_ff_update(x, st, q, dt, spike) -> tuple:
    v, i, a = st
    z, v, i, a = _adex_update(i + x, v, a, q, dt, spike)
    return z, LIFAdExFeedForwardState(v, i, a)


def lif_adex_feed_forward_step(input_spikes: Array, state: LIFAdExFeedForwardState | None = None,
                               p: LIFAdExParameters = LIFAdExParameters(),
                               dt: float = 0.001) -> tuple:
    """One Euler step of Norse's feed-forward AdEx: (spikes, LIFAdExFeedForwardState); state
    None is Norse's default (v = i = a = 0)."""
    op = "lif_adex_feed_forward_step"
    x = F._check_input(input_spikes, op, "input_spikes")
    q = _params(p, LIFAdExParameters, op, x, x.shape)
    return _adex_ff(x, _ff_state0(x) if state is None else state, q, _dt(dt, op),
                    _spike_fn(q["method"], q["alpha"], op), op)


def _adex_rec(x_in, state, w_rec, q, dt, spike) -> tuple:
    z0, v, i, a = state
    z, v, i, a = _adex_update(i + x_in + NF.linear(z0, w_rec), v, a, q, dt, spike)
    return z, LIFAdExState(z, v, i, a)


def lif_adex_step(input_spikes: Array, state: LIFAdExState, input_weights: Array,
                  recurrent_weights: Array, p: LIFAdExParameters = LIFAdExParameters(),
                  dt: float = 0.001) -> tuple:
    """One Euler step of Norse's recurrent AdEx: the current jumps by input_spikes
    input_weights^T + z recurrent_weights^T; (spikes, LIFAdExState)."""
    return _rec_call(_adex_rec, input_spikes, state, input_weights, recurrent_weights, p, dt,
                     "lif_adex_step", "input_spikes", LIFAdExParameters, LIFAdExState)


def lif_adex_current_encoder(input_current: Array, voltage: Array, adaptation: Array,
                             p: LIFAdExParameters = LIFAdExParameters(),
                             dt: float = 0.001) -> tuple:
    """Norse's ``lif_adex_current_encoder``: (spikes, voltage, adaptation) after one step
    driven by ``input_current``, as Norse 1.1 computes it (the new adaptation is
    tau_ada_inv (adaptation_current (v - v_leak) - a) + z adaptation_spike, from the reset v)."""
    op = "lif_adex_current_encoder"
    x = F._check_input(input_current, op, "input_current")
    st = LIFAdExFeedForwardState(voltage, _zeros(x.shape, x), adaptation)
    v, _, a = _check_state(st, LIFAdExFeedForwardState, op, x.shape, x)
    q = _params(p, LIFAdExParameters, op, x, x.shape)
    d = _dt(dt, op)
    dv_exp = q["delta_T"] * gp.exp((v - q["v_th"]) / q["delta_T"])
    v = v + (d * q["tau_mem_inv"]) * ((q["v_leak"] - v) + dv_exp + x - a)
    z = _spike_fn(q["method"], q["alpha"], op)(v - q["v_th"])
    v = v - z * (v - q["v_reset"])
    a = (q["tau_ada_inv"] * (q["adaptation_current"] * (v - q["v_leak"]) - a)
         + z * q["adaptation_spike"])
    return z, v, a


class _AdExFeedForward:
    """The feed-forward AdEx's state and step (for ``_Norse``'s ``_one`` and ``_all``)."""

    _kind = LIFAdExParameters
    _state_kind = LIFAdExFeedForwardState
    _step = staticmethod(_adex_ff_update)

    def _state0(self, q: dict, shape: tuple, x: Array):
        return LIFAdExFeedForwardState(_rest(q, shape, x), _zeros(shape, x), _zeros(shape, x))


class LIFAdExCell(_AdExFeedForward, _Norse):
    """Norse's ``LIFAdExCell``: one step of the feed-forward AdEx, ``z, state = cell(x,
    state)``; state None starts from v = v_leak, i = a = 0."""

    def __init__(self, p: LIFAdExParameters = LIFAdExParameters(), dt: float = 0.001) -> None:
        super().__init__(p, dt)

    def forward(self, input_tensor: Array, state: LIFAdExFeedForwardState | None = None
                ) -> tuple:
        """(spikes, LIFAdExFeedForwardState) after one step."""
        return self._one(input_tensor, state)


class LIFAdEx(_AdExFeedForward, _Sequence):
    """Norse's ``LIFAdEx``: the feed-forward AdEx over the first axis of (T, ...): (spikes
    (T, ...), the last LIFAdExFeedForwardState, or every step's with ``record_states``)."""

    def __init__(self, p: LIFAdExParameters = LIFAdExParameters(), dt: float = 0.001,
                 record_states: bool = False) -> None:
        super().__init__(p, dt, record_states, False)

    def forward(self, input_tensor: Array, state: LIFAdExFeedForwardState | None = None
                ) -> tuple:
        """(spikes (T, ...), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)


class _AdExRecurrent(_Recurrent):
    _kind = LIFAdExParameters
    _state_kind = LIFAdExState
    _step = staticmethod(_adex_rec)

    def _state0(self, q: dict, shape: tuple, x: Array):
        return LIFAdExState(self._zeros(shape, x), self._v0(q, shape, x), self._zeros(shape, x),
                            self._zeros(shape, x))


class LIFAdExRecurrentCell(_AdExRecurrent):
    """Norse's ``LIFAdExRecurrentCell``: one step of the recurrent AdEx, ``z, state = cell(x,
    state)`` with state a ``LIFAdExState`` (z, v, i, a) or None (zeros, v = v_leak)."""

    def __init__(self, input_size: int, hidden_size: int,
                 p: LIFAdExParameters = LIFAdExParameters(), input_weights: Array | None = None,
                 recurrent_weights: Array | None = None, autapses: bool = False,
                 dt: float = 0.001) -> None:
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt)

    def forward(self, input_tensor: Array, state: LIFAdExState | None = None) -> tuple:
        """(spikes (..., hidden), LIFAdExState) after one step."""
        return self._one(input_tensor, state)


class LIFAdExRecurrent(_AdExRecurrent):
    """Norse's ``LIFAdExRecurrent``: the recurrent AdEx over the first axis of (T, ...,
    input_size): (spikes (T, ..., hidden), the last LIFAdExState, or every step's with
    ``record_states``)."""

    def __init__(self, input_size: int, hidden_size: int,
                 p: LIFAdExParameters = LIFAdExParameters(), input_weights: Array | None = None,
                 recurrent_weights: Array | None = None, autapses: bool = False,
                 dt: float = 0.001, record_states: bool = False) -> None:
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: LIFAdExState | None = None) -> tuple:
        """(spikes (T, ..., hidden), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)


# ---- population encoding ---------------------------------------------------------------------

def gaussian_rbf(tensor: Array, sigma: float = 1.0) -> Array:
    """Norse's ``gaussian_rbf``: exp(-tensor / (2 sigma^2)) (tensor: squared distances)."""
    return gp.exp(tensor * (-0.5 / sigma ** 2))


def euclidean_distance(x: Array, y: Array) -> Array:
    """Norse's ``euclidean_distance``: (x - y)^2, elementwise."""
    return gp.square(x - y)


def population_encode(input_values: Array, out_features: int, scale=None,
                      kernel: Callable = gaussian_rbf,
                      distance_function: Callable = euclidean_distance) -> Array:
    """Norse's ``population_encode``: input_values (...) to (..., out_features), each value
    ``kernel(distance_function(x, c) * scale)`` for the centres c = linspace(0, scale,
    out_features); ``scale`` None (or 0) is the input's max, as Norse's (its gradient flows
    through the distance's factor, not through the centres)."""
    op = "population_encode"
    x = F._check_input(input_values, op, "input_values")
    if isinstance(out_features, bool) or not isinstance(out_features, numbers.Integral) \
            or out_features < 1:
        raise ValueError(f"{op}: out_features must be an int >= 1, got {out_features!r}")
    for name, fn in (("kernel", kernel), ("distance_function", distance_function)):
        if not callable(fn):
            raise TypeError(f"{op}: {name} must be callable, got {type(fn).__name__}")
    n = int(out_features)
    if isinstance(scale, Array):
        if scale.size != 1:
            raise ValueError(f"{op}: scale must be a number or a one-element Array, got shape "
                             f"{tuple(scale.shape)}")
        s = gp.reshape(gp.astype(scale, x.dtype), ())
    elif scale is None or (isinstance(scale, numbers.Real) and not isinstance(scale, bool)):
        s = None if not scale else float(scale)
    else:
        raise TypeError(f"{op}: scale must be a number, an Array or None, got "
                        f"{type(scale).__name__}")
    if s is None:
        if x.size == 0:
            raise ValueError(f"{op}: scale=None takes the input's max, but the input is empty")
        s = gp.max(x)
    # the centres: linspace(0, scale, n) (the unit grid from the host, scaled), not
    # differentiated (torch's linspace is not)
    unit = gp.asarray(np.linspace(0.0, 1.0, n), dtype=x.dtype, device=x.device)
    centres = unit * (s.detach() if isinstance(s, Array) else s)
    return kernel(distance_function(gp.expand_dims(x, axis=-1), centres) * s)


class PopulationEncoder(Module):
    """Norse's ``PopulationEncoder(out_features, scale, kernel, distance_function)``: a module
    calling ``population_encode``."""

    def __init__(self, out_features: int, scale=None, kernel: Callable = gaussian_rbf,
                 distance_function: Callable = euclidean_distance) -> None:
        super().__init__()
        self.out_features, self.scale = out_features, scale
        self.kernel, self.distance_function = kernel, distance_function

    def forward(self, input_tensor: Array) -> Array:
        """(..., out_features) population codes of ``input_tensor``."""
        return population_encode(input_tensor, self.out_features, self.scale, self.kernel,
                                 self.distance_function)

    def extra_repr(self) -> str:
        return f"out_features={self.out_features}, scale={self.scale}"
