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
from .norse_compat import (_check_seq, _check_state, _check_weights, _dt, _full, _Norse, _params,
                           _Recurrent, _rest, _spike_fn, _zeros)
from .norse_lsnn import _stack

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
    op = "lif_ex_feed_forward_step"
    x = F._check_input(input_spikes, op, "input_spikes")
    q = _params(p, LIFExParameters, op, x, x.shape)
    v, i = ((_zeros(x.shape, x), _zeros(x.shape, x)) if state is None
            else _check_state(state, LIFExFeedForwardState, op, x.shape, x))
    z, v, i = _ex_update(i + x, v, q, _dt(dt, op), _spike_fn(q["method"], q["alpha"], op))
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
    op = "lif_ex_step"
    x = F._check_input(input_tensor, op, "input_tensor")
    hidden = _check_weights(x, input_weights, recurrent_weights, op)
    shape = (*x.shape[:-1], hidden)
    q = _params(p, LIFExParameters, op, x, shape)
    st = _check_state(state, LIFExState, op, shape, x)
    return _ex_rec(NF.linear(x, input_weights), st, recurrent_weights, q, _dt(dt, op),
                   _spike_fn(q["method"], q["alpha"], op))


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


class LIFExCell(_Norse):
    """Norse's ``LIFExCell``: one step of the feed-forward exponential LIF, ``z, state =
    cell(x, state)``; state None starts from v = v_leak, i = 0."""

    _kind = LIFExParameters

    def __init__(self, p: LIFExParameters = LIFExParameters(), dt: float = 0.001) -> None:
        super().__init__(p, dt)

    def forward(self, input_tensor: Array, state: LIFExFeedForwardState | None = None) -> tuple:
        """(spikes, LIFExFeedForwardState) after one step."""
        op = type(self).__name__
        x = F._check_input(input_tensor, op, "input_tensor")
        q = self._q(x, x.shape)
        if state is None:
            state = LIFExFeedForwardState(_rest(q, x.shape, x), _zeros(x.shape, x))
        v, i = _check_state(state, LIFExFeedForwardState, op, x.shape, x)
        z, v, i = _ex_update(i + x, v, q, self.dt, _spike_fn(q["method"], q["alpha"], op))
        return z, LIFExFeedForwardState(v, i)


class LIFEx(_Norse):
    """Norse's ``LIFEx``: the feed-forward exponential LIF over the first axis of (T, ...):
    (spikes (T, ...), the last LIFExFeedForwardState, or every step's with
    ``record_states``)."""

    _kind = LIFExParameters

    def __init__(self, p: LIFExParameters = LIFExParameters(), dt: float = 0.001,
                 record_states: bool = False) -> None:
        super().__init__(p, dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: LIFExFeedForwardState | None = None) -> tuple:
        """(spikes (T, ...), state) over every step of ``input_tensor``."""
        op = type(self).__name__
        x = _check_seq(input_tensor, op)
        shape = tuple(x.shape[1:])
        q = self._q(x, shape)
        v, i = ((_rest(q, shape, x), _zeros(shape, x)) if state is None
                else _check_state(state, LIFExFeedForwardState, op, shape, x,
                                  shapes_from=" (one step of the input)"))
        spike = _spike_fn(q["method"], q["alpha"], op)
        spikes, states = [], []
        for xt in gp.unstack(x, axis=0):
            z, v, i = _ex_update(i + xt, v, q, self.dt, spike)
            spikes.append(z)
            states.append(LIFExFeedForwardState(v, i))
        out = gp.stack(spikes, axis=0)
        return out, _stack(LIFExFeedForwardState, states) if self.record_states else states[-1]


class _ExRecurrent(_Recurrent):
    _kind = LIFExParameters

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
        op = type(self).__name__
        x = F._check_input(input_tensor, op, "input_tensor")
        _check_weights(x, self.input_weights, None, op)
        shape = (*x.shape[:-1], self.hidden_size)
        q = self._q(x, shape)
        st = (self._state0(q, shape, x) if state is None
              else _check_state(state, LIFExState, op, shape, x))
        return _ex_rec(NF.linear(x, self.input_weights), st, self._w_rec(), q, self.dt,
                       _spike_fn(q["method"], q["alpha"], op))


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
        op = type(self).__name__
        x = _check_seq(input_tensor, op)
        _check_weights(x, self.input_weights, None, op)
        shape = (*x.shape[1:-1], self.hidden_size)
        q = self._q(x, shape)
        st = (self._state0(q, shape, x) if state is None
              else LIFExState(*_check_state(state, LIFExState, op, shape, x,
                                            shapes_from=" (one step of the input)")))
        spike, w_rec = _spike_fn(q["method"], q["alpha"], op), self._w_rec()
        spikes, states = [], []
        for xt in gp.unstack(NF.linear(x, self.input_weights), axis=0):
            z, st = _ex_rec(xt, st, w_rec, q, self.dt, spike)
            spikes.append(z)
            states.append(st)
        out = gp.stack(spikes, axis=0)
        return out, _stack(LIFExState, states) if self.record_states else st


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
    z, v = _iaf_update(v + x, q, _spike_fn(q["method"], q["alpha"], op))
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


class IAFCell(_Norse):
    """Norse's ``IAFCell``: one step, ``z, state = cell(x, state)``; state None starts from
    v = v_reset."""

    _kind = IAFParameters

    def __init__(self, p: IAFParameters = IAFParameters(), dt: float = 0.001) -> None:
        super().__init__(p, dt)

    def forward(self, input_tensor: Array, state: IAFFeedForwardState | None = None) -> tuple:
        """(spikes, IAFFeedForwardState) after one step."""
        return _iaf_ff(input_tensor, state, self.p, self.dt, type(self).__name__)


class IAF(_Norse):
    """Norse's ``IAF``: the integrate-and-fire neuron over the first axis of (T, ...): (spikes
    (T, ...), the last IAFFeedForwardState, or every step's with ``record_states``)."""

    _kind = IAFParameters

    def __init__(self, p: IAFParameters = IAFParameters(), dt: float = 0.001,
                 record_states: bool = False) -> None:
        super().__init__(p, dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: IAFFeedForwardState | None = None) -> tuple:
        """(spikes (T, ...), state) over every step of ``input_tensor``."""
        op = type(self).__name__
        x = _check_seq(input_tensor, op)
        shape = tuple(x.shape[1:])
        q = self._q(x, shape)
        (v,) = ((_iaf_rest(q, shape, x),) if state is None
                else _check_state(state, IAFFeedForwardState, op, shape, x,
                                  shapes_from=" (one step of the input)"))
        spike = _spike_fn(q["method"], q["alpha"], op)
        spikes, states = [], []
        for xt in gp.unstack(x, axis=0):
            z, v = _iaf_update(v + xt, q, spike)
            spikes.append(z)
            states.append(IAFFeedForwardState(v))
        out = gp.stack(spikes, axis=0)
        return out, _stack(IAFFeedForwardState, states) if self.record_states else states[-1]
