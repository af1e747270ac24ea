"""Norse 1.1's exponential LIF (``LIFEx*``) and integrate-and-fire neuron (``IAF*``) on grilly
Arrays; the names are re-exported by ``grilly.nn.snn.norse``.

LIFEx, one explicit Euler step of ``dt`` in Norse's order (x = input W_in^T + z W_rec^T in the
recurrent neuron):

    i' = i + x;  v* = v + dt tau_mem_inv ((v_leak - v) + delta_T exp((v - v_th) / delta_T) + i')
    i_next = i' - dt tau_syn_inv i';  z = H(v* - v_th);  v_next = (1 - z) v* + z v_reset

IAF: v* = v + x, z = H(v* - v_th), v_next = (1 - z) v* + z v_reset (no leak, no dt). The reset
keeps its surrogate gradient in every neuron, the recurrent ones too, as Norse's. Step by step.
"""
from __future__ import annotations

from typing import NamedTuple

from ...array import api as gp

from ...array.array import Array
from .. import functional as NF
from . import functional as F
from .norse_compat import (_check_state, _check_weights, _dt, _ff_call, _full, _Norse, _params,
                           _rec_call, _Recurrent, _rest, _spike_fn, _zeros)

__all__ = ["LIFExParameters", "LIFExState", "LIFExFeedForwardState", "lif_ex_step",
           "lif_ex_feed_forward_step", "lif_ex_current_encoder", "LIFExCell", "LIFEx",
           "LIFExRecurrentCell", "LIFExRecurrent", "IAFParameters", "IAFState",
           "IAFFeedForwardState", "iaf_step", "iaf_feed_forward_step", "IAFCell", "IAF"]


class LIFExParameters(NamedTuple):
    """Norse's exponential LIF parameters (its defaults): the exponential's sharpness delta_T,
    inverse time constants (1/s), potentials, the threshold method and its alpha."""

    delta_T: float | Array = 0.5   # noqa: N815  (Norse's name)
    tau_syn_inv: float | Array = 1.0 / 5e-3
    tau_mem_inv: float | Array = 1.0 / 1e-2
    v_leak: float | Array = 0.0
    v_th: float | Array = 1.0
    v_reset: float | Array = 0.0
    method: str = "super"
    alpha: float = 100.0


class LIFExState(NamedTuple):
    """A recurrent LIFEx layer's state: spikes z, membrane v, current i."""

    z: Array
    v: Array
    i: Array


class LIFExFeedForwardState(NamedTuple):
    """A feed-forward LIFEx layer's state: membrane v, current i."""

    v: Array
    i: Array


def _ex_dv(v, drive, q, dt):
    """dt tau_mem_inv ((v_leak - v) + delta_T exp((v - v_th) / delta_T) + drive)."""
    dv_exp = q["delta_T"] * gp.exp((v - q["v_th"]) / q["delta_T"])
    return (dt * q["tau_mem_inv"]) * ((q["v_leak"] - v) + dv_exp + drive)


def _ex_update(i_jump, v, q, dt, spike) -> tuple:
    v_decayed = v + _ex_dv(v, i_jump, q, dt)
    i_decayed = i_jump + (-dt * q["tau_syn_inv"]) * i_jump
    z = spike(v_decayed - q["v_th"])
    return z, (1.0 - z) * v_decayed + z * q["v_reset"], i_decayed


def lif_ex_feed_forward_step(input_spikes: Array, state: LIFExFeedForwardState | None = None,
                             p: LIFExParameters = LIFExParameters(), dt: float = 0.001) -> tuple:
    """One Euler step of Norse's feed-forward exponential LIF: (spikes,
    LIFExFeedForwardState); state None is Norse's default (v = i = 0)."""
    return _ff_call(_ex_ff_update, input_spikes, state, p, dt, "lif_ex_feed_forward_step",
                    "input_spikes", LIFExParameters, LIFExFeedForwardState,
                    lambda q, shape, x: (_zeros(shape, x), _zeros(shape, x)))


def _ex_ff_update(x, st, q, dt, spike) -> tuple:
    v, i = st
    z, v, i = _ex_update(i + x, v, q, dt, spike)
    return z, LIFExFeedForwardState(v, i)


def _ex_rec(x_in, st, w_rec, q, dt, spike) -> tuple:
    z0, v, i = st
    z, v, i = _ex_update(i + x_in + NF.linear(z0, w_rec), v, q, dt, spike)
    return z, LIFExState(z, v, i)


def lif_ex_step(input_tensor: Array, state: LIFExState, input_weights: Array,
                recurrent_weights: Array, p: LIFExParameters = LIFExParameters(),
                dt: float = 0.001) -> tuple:
    """One Euler step of Norse's recurrent exponential LIF: the current jumps by input_tensor
    input_weights^T + z recurrent_weights^T; (spikes, LIFExState)."""
    return _rec_call(_ex_rec, input_tensor, state, input_weights, recurrent_weights, p, dt,
                     "lif_ex_step", "input_tensor", LIFExParameters, LIFExState)


def lif_ex_current_encoder(input_current: Array, voltage: Array,
                           p: LIFExParameters = LIFExParameters(), dt: float = 0.001) -> tuple:
    """Norse's ``lif_ex_current_encoder``: one step of the current-free exponential LIF driven
    by ``input_current``: (spikes, voltage), the reset v - z (v - v_reset) keeping its
    gradient."""
    op = "lif_ex_current_encoder"
    x = F._check_input(input_current, op, "input_current")
    (v,) = _check_state(_Voltage(voltage), _Voltage, op, x.shape, x)
    q = _params(p, LIFExParameters, op, x, x.shape)
    v = v + _ex_dv(v, x, q, _dt(dt, op))
    z = _spike_fn(q["method"], q["alpha"], op)(v - q["v_th"])
    return z, v - z * (v - q["v_reset"])


class _Voltage(NamedTuple):
    voltage: Array


class _ExFeedForward(_Norse):
    """The feed-forward exponential LIF's state and step (``_Norse``'s ``_one``, ``_all``)."""

    _kind = LIFExParameters
    _state_kind = LIFExFeedForwardState
    _step = staticmethod(_ex_ff_update)

    def _state0(self, q: dict, shape: tuple, x: Array):
        return LIFExFeedForwardState(_rest(q, shape, x), _zeros(shape, x))


class LIFExCell(_ExFeedForward):
    """Norse's ``LIFExCell``: one step of the feed-forward exponential LIF, ``z, state =
    cell(x, state)``; state None starts from v = v_leak, i = 0."""

    def __init__(self, p: LIFExParameters = LIFExParameters(), dt: float = 0.001) -> None:
        super().__init__(p, dt)

    def forward(self, input_tensor: Array, state: LIFExFeedForwardState | None = None) -> tuple:
        """(spikes, LIFExFeedForwardState) after one step."""
        return self._one(input_tensor, state)


class LIFEx(_ExFeedForward):
    """Norse's ``LIFEx``: the feed-forward exponential LIF over the first axis of (T, ...):
    (spikes (T, ...), the last LIFExFeedForwardState, or every step's with
    ``record_states``)."""

    def __init__(self, p: LIFExParameters = LIFExParameters(), dt: float = 0.001,
                 record_states: bool = False) -> None:
        super().__init__(p, dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: LIFExFeedForwardState | None = None) -> tuple:
        """(spikes (T, ...), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)


class _ExRecurrent(_Recurrent):
    _kind = LIFExParameters
    _state_kind = LIFExState
    _step = staticmethod(_ex_rec)

    def _state0(self, q: dict, shape: tuple, x: Array):
        return LIFExState(self._zeros(shape, x), self._v0(q, shape, x), self._zeros(shape, x))


class LIFExRecurrentCell(_ExRecurrent):
    """Norse's ``LIFExRecurrentCell``: one step of the recurrent exponential LIF; state a
    ``LIFExState`` (z, v, i) or None (zeros, v = v_leak)."""

    def __init__(self, input_size: int, hidden_size: int, p: LIFExParameters = LIFExParameters(),
                 input_weights: Array | None = None, recurrent_weights: Array | None = None,
                 autapses: bool = False, dt: float = 0.001) -> None:
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt)

    def forward(self, input_tensor: Array, state: LIFExState | None = None) -> tuple:
        """(spikes (..., hidden), LIFExState) after one step."""
        return self._one(input_tensor, state)


class LIFExRecurrent(_ExRecurrent):
    """Norse's ``LIFExRecurrent``: the recurrent exponential LIF over the first axis of (T, ...,
    input_size)."""

    def __init__(self, input_size: int, hidden_size: int, p: LIFExParameters = LIFExParameters(),
                 input_weights: Array | None = None, recurrent_weights: Array | None = None,
                 autapses: bool = False, dt: float = 0.001, record_states: bool = False) -> None:
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: LIFExState | None = None) -> tuple:
        """(spikes (T, ..., hidden), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)


# ---- integrate-and-fire ----------------------------------------------------------------------

class IAFParameters(NamedTuple):
    """Norse's integrate-and-fire parameters: v_th, v_reset, the threshold method and alpha."""

    v_th: float | Array = 1.0
    v_reset: float | Array = 0.0
    method: str = "super"
    alpha: float = 100.0


class IAFState(NamedTuple):
    """A recurrent IAF layer's state: spikes z and membrane v."""

    z: Array
    v: Array


class IAFFeedForwardState(NamedTuple):
    """A feed-forward IAF layer's state: the membrane v."""

    v: Array


def _iaf_update(v_in, q, spike) -> tuple:
    z = spike(v_in - q["v_th"])
    return z, (1.0 - z) * v_in + z * q["v_reset"]


def _iaf_rest(q: dict, shape: tuple, x: Array) -> Array:
    # (Norse's IAF modules start from v = v_reset)
    v = q["v_reset"]
    return _full(v.detach() if isinstance(v, Array) else v, shape, x)


def iaf_feed_forward_step(input_spikes: Array, state: IAFFeedForwardState | None,
                          p: IAFParameters = IAFParameters(), dt: float = 0.001) -> tuple:
    """One step of Norse's feed-forward integrate-and-fire neuron, v + x (``dt`` unused, as
    Norse's): (spikes, IAFFeedForwardState); state None starts from v = v_reset."""
    op = "iaf_feed_forward_step"
    return _iaf_ff(input_spikes, state, p, dt, op)


def _iaf_ff(x, state, p, dt, op: str) -> tuple:
    x = F._check_input(x, op, "input_spikes")
    _dt(dt, op)
    q = _params(p, IAFParameters, op, x, x.shape)
    (v,) = ((_iaf_rest(q, x.shape, x),) if state is None
            else _check_state(state, IAFFeedForwardState, op, x.shape, x))
    return _iaf_ff_update(x, (v,), q, None, _spike_fn(q["method"], q["alpha"], op))


def _iaf_ff_update(x, st, q, dt, spike) -> tuple:
    # (no dt: Norse's IAF adds the input as it is)
    z, v = _iaf_update(st[0] + x, q, spike)
    return z, IAFFeedForwardState(v)


def iaf_step(input_spikes: Array, state: IAFState, input_weights: Array,
             recurrent_weights: Array, p: IAFParameters = IAFParameters(),
             dt: float = 0.001) -> tuple:
    """One step of Norse's recurrent integrate-and-fire neuron, v + input_spikes
    input_weights^T + z recurrent_weights^T: (spikes, IAFState)."""
    op = "iaf_step"
    x = F._check_input(input_spikes, op, "input_spikes")
    hidden = _check_weights(x, input_weights, recurrent_weights, op)
    shape = (*x.shape[:-1], hidden)
    _dt(dt, op)
    q = _params(p, IAFParameters, op, x, shape)
    z0, v = _check_state(state, IAFState, op, shape, x)
    z, v = _iaf_update(v + NF.linear(x, input_weights) + NF.linear(z0, recurrent_weights), q,
                       _spike_fn(q["method"], q["alpha"], op))
    return z, IAFState(z, v)


class _IAFFeedForward(_Norse):
    """The feed-forward IAF's state and step (``_Norse``'s ``_one``, ``_all``)."""

    _kind = IAFParameters
    _state_kind = IAFFeedForwardState
    _step = staticmethod(_iaf_ff_update)

    def _state0(self, q: dict, shape: tuple, x: Array):
        return IAFFeedForwardState(_iaf_rest(q, shape, x))


class IAFCell(_IAFFeedForward):
    """Norse's ``IAFCell``: one step, ``z, state = cell(x, state)``; state None starts from
    v = v_reset."""

    _arg = "input_spikes"

    def __init__(self, p: IAFParameters = IAFParameters(), dt: float = 0.001) -> None:
        super().__init__(p, dt)

    def forward(self, input_tensor: Array, state: IAFFeedForwardState | None = None) -> tuple:
        """(spikes, IAFFeedForwardState) after one step."""
        return self._one(input_tensor, state)


class IAF(_IAFFeedForward):
    """Norse's ``IAF``: the integrate-and-fire neuron over the first axis of (T, ...): (spikes
    (T, ...), the last IAFFeedForwardState, or every step's with ``record_states``)."""

    def __init__(self, p: IAFParameters = IAFParameters(), dt: float = 0.001,
                 record_states: bool = False) -> None:
        super().__init__(p, dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: IAFFeedForwardState | None = None) -> tuple:
        """(spikes (T, ...), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)
