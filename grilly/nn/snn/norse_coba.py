"""Norse 1.1's conductance-based LIF (``CobaLIF*``), its multi-compartment LIF neurons
(``LIFMC*``, ``LIFMCRefrac*``, a coupling matrix ``g_coupling`` between the neurons'
membranes) and Tsodyks-Markram short-term plasticity (``stp_step``) on grilly Arrays; the
names are re-exported by ``grilly.nn.snn.norse``.

CobaLIF, one explicit Euler step of ``dt`` (the input's and the recurrent spikes' positive
weights open excitatory, the negative ones inhibitory conductances):

    g_e' = g_e + x relu(W_in)^T + z relu(W_rec)^T;  g_i' = g_i + x relu(-W_in)^T + z relu(-W_rec)^T
    g_e* = g_e' - dt tau_syn_exc_inv g_e';  g_i* likewise with tau_syn_inh_inv
    v* = v + dt c_m_inv (g_l (v_rest - v) + g_e* (e_rev_E - v) + g_i* (e_rev_I - v))
    z = H(v* - v_thresh);  v_next = (1 - z) v* + z v_reset

(the feed-forward step's jumps are relu(x) and relu(-x)). LIFMC: the LIF step with the
coupling dt v g_coupling^T added to v (after the recurrent step, before the feed-forward one);
LIFMCRefrac: Norse's own step (the coupling v g_coupling^T unscaled by dt, the refractory
neuron's membrane frozen, the input joining the current after the step). Step by step.
"""
from __future__ import annotations

import math
import numbers
from typing import NamedTuple

from ...array import api as gp

from ...array.array import Array
from ... import random as _random
from .. import functional as NF
from ..parameter import Parameter
from . import functional as F
from .norse_compat import (LIFFeedForwardState, LIFParameters, LIFState, _check_state,
                           _broadcasts_to, _check_weights, _dt, _ff_step, _params, _rec_step, _Recurrent,
                           _rest, _run, _spike_fn, _zeros)
from .norse_lsnn import (_LIF, LIFRefracFeedForwardState, LIFRefracParameters, LIFRefracState,
                         _refrac_params, _refrac_rest, _refrac_state, _RefracRecurrent)

__all__ = ["CobaLIFParameters", "CobaLIFState", "CobaLIFFeedForwardState", "coba_lif_step",
           "coba_lif_feed_forward_step", "CobaLIFCell", "CobaLIF", "lif_mc_step",
           "lif_mc_feed_forward_step", "LIFMCRecurrentCell", "LIFMCRecurrent",
           "lif_mc_refrac_step", "lif_mc_refrac_feed_forward_step", "LIFMCRefracRecurrentCell",
           "LIFMCRefracRecurrent", "TsodyksMakramParameters", "TsodyksMakramState", "stp_step"]


# ---- conductance-based LIF -------------------------------------------------------------------

class CobaLIFParameters(NamedTuple):
    """Norse's conductance-based LIF parameters (its defaults; numbers or Arrays)."""

    tau_syn_exc_inv: float | Array = 1.0 / 5
    tau_syn_inh_inv: float | Array = 1.0 / 5
    c_m_inv: float | Array = 1.0 / 0.2
    g_l: float | Array = 1.0 / 20 * 1.0 / 0.2
    e_rev_I: float | Array = -100.0   # noqa: N815  (Norse's name)
    e_rev_E: float | Array = 60.0     # noqa: N815
    v_rest: float | Array = -20.0
    v_reset: float | Array = -70.0
    v_thresh: float | Array = -10.0
    method: str = "super"
    alpha: float = 100.0


class CobaLIFState(NamedTuple):
    """A recurrent conductance-based LIF layer's state: spikes z, membrane v, the excitatory
    and inhibitory conductances g_e, g_i."""

    z: Array
    v: Array
    g_e: Array
    g_i: Array


class CobaLIFFeedForwardState(NamedTuple):
    """A feed-forward conductance-based LIF layer's state: membrane v, conductances g_e, g_i."""

    v: Array
    g_e: Array
    g_i: Array


def _coba_update(j_e, j_i, v, g_e, g_i, q, dt, spike) -> tuple:
    """One Euler step from the conductance jumps: (z, v, g_e, g_i); the reset keeps its
    gradient (as Norse's)."""
    g_e = g_e + j_e
    g_i = g_i + j_i
    g_e = g_e + (-dt * q["tau_syn_exc_inv"]) * g_e
    g_i = g_i + (-dt * q["tau_syn_inh_inv"]) * g_i
    dv = (dt * q["c_m_inv"]) * (q["g_l"] * (q["v_rest"] - v) + g_e * (q["e_rev_E"] - v)
                                + g_i * (q["e_rev_I"] - v))
    v = v + dv
    z = spike(v - q["v_thresh"])
    return z, (1.0 - z) * v + z * q["v_reset"], g_e, g_i


def _coba_ff(x, st, q, dt, spike) -> tuple:
    z, v, g_e, g_i = _coba_update(NF.relu(x), NF.relu(-x), *st, q, dt, spike)
    return z, CobaLIFFeedForwardState(v, g_e, g_i)


def _coba_rec(j, st, w_rec, q, dt, spike) -> tuple:
    """j: the input's jumps (excitatory, inhibitory) stacked on a first axis of 2."""
    z0, v, g_e, g_i = st
    j_e = j[0] + NF.linear(z0, NF.relu(w_rec))
    j_i = j[1] + NF.linear(z0, NF.relu(-w_rec))
    z, v, g_e, g_i = _coba_update(j_e, j_i, v, g_e, g_i, q, dt, spike)
    return z, CobaLIFState(z, v, g_e, g_i)


def _input_jumps(x: Array, w_in: Array) -> Array:
    """(2, ...): x relu(W_in)^T and x relu(-W_in)^T."""
    return gp.stack([NF.linear(x, NF.relu(w_in)), NF.linear(x, NF.relu(-w_in))], axis=0)


def coba_lif_feed_forward_step(input_tensor: Array, state: CobaLIFFeedForwardState | None,
                               p: CobaLIFParameters = CobaLIFParameters(),
                               dt: float = 0.001) -> tuple:
    """One Euler step of Norse's feed-forward conductance-based LIF: relu(x) opens g_e,
    relu(-x) g_i; (spikes, CobaLIFFeedForwardState); state None is all zeros (as
    ``CobaLIFCell``'s)."""
    op = "coba_lif_feed_forward_step"
    x = F._check_input(input_tensor, op, "input_tensor")
    q = _params(p, CobaLIFParameters, op, x, x.shape)
    if state is None:
        st = (_zeros(x.shape, x),) * 3
    else:
        st = _check_state(state, CobaLIFFeedForwardState, op, x.shape, x)
    return _coba_ff(x, st, q, _dt(dt, op), _spike_fn(q["method"], q["alpha"], op))


def coba_lif_step(input_spikes: Array, state: CobaLIFState | None, input_weights: Array,
                  recurrent_weights: Array, p: CobaLIFParameters = CobaLIFParameters(),
                  dt: float = 0.001) -> tuple:
    """One Euler step of Norse's recurrent conductance-based LIF (the weights' signs pick the
    conductance): (spikes, CobaLIFState); state None is all zeros."""
    op = "coba_lif_step"
    x = F._check_input(input_spikes, op, "input_spikes")
    hidden = _check_weights(x, input_weights, recurrent_weights, op)
    shape = (*x.shape[:-1], hidden)
    q = _params(p, CobaLIFParameters, op, x, shape)
    if state is None:
        st = (_zeros(shape, x),) * 4
    else:
        st = _check_state(state, CobaLIFState, op, shape, x)
    return _coba_rec(_input_jumps(x, input_weights), st, recurrent_weights, q, _dt(dt, op),
                     _spike_fn(q["method"], q["alpha"], op))


class _Coba(_Recurrent):
    """Norse's ``CobaLIFCell``'s weights: N(0, 1/input_size) and N(0, 1/hidden_size), the
    recurrent diagonal kept (Norse's CobaLIFCell has autapses)."""

    _kind = CobaLIFParameters
    _state_kind = CobaLIFState
    _step = staticmethod(_coba_rec)

    def __init__(self, input_size, hidden_size, p, dt, input_weights, recurrent_weights) -> None:
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, True, dt)
        if input_weights is None:
            self.input_weights = Parameter(_random.randn(self.hidden_size, self.input_size)
                                           * (1.0 / math.sqrt(self.input_size)))
        if recurrent_weights is None:
            self.recurrent_weights = Parameter(_random.randn(self.hidden_size, self.hidden_size)
                                               * (1.0 / math.sqrt(self.hidden_size)))

    def _state0(self, q: dict, shape: tuple, x: Array):
        # Norse's CobaLIFCell starts from zeros, v too (not v_rest)
        return CobaLIFState(*(self._zeros(shape, x),) * 4)

    def _one(self, input_tensor: Array, state) -> tuple:
        x, q, st, spike = self._begin(input_tensor, state, False)
        return _coba_rec(_input_jumps(x, self.input_weights), st, self.recurrent_weights, q,
                         self.dt, spike)

    def _all(self, input_tensor: Array, state) -> tuple:
        x, q, st, spike = self._begin(input_tensor, state, True)
        # every step's jumps in two products, (T, 2, ..., hidden)
        j = gp.stack([NF.linear(x, NF.relu(self.input_weights)),
                      NF.linear(x, NF.relu(-self.input_weights))], axis=1)
        w_rec = self.recurrent_weights
        return _run(j, st, lambda jt, s: _coba_rec(jt, s, w_rec, q, self.dt, spike),
                    CobaLIFState, self.record_states)

    def extra_repr(self) -> str:
        return (f"input_size={self.input_size}, hidden_size={self.hidden_size}, p={self.p}, "
                f"dt={self.dt}")


class CobaLIFCell(_Coba):
    """Norse's ``CobaLIFCell``: one step of the recurrent conductance-based LIF, ``z, state =
    cell(x, state)`` with state a ``CobaLIFState`` (z, v, g_e, g_i) or None (all zeros);
    ``input_weights`` / ``recurrent_weights`` are grilly's (Norse draws them)."""

    def __init__(self, input_size: int, hidden_size: int,
                 p: CobaLIFParameters = CobaLIFParameters(), dt: float = 0.001, *,
                 input_weights: Array | None = None,
                 recurrent_weights: Array | None = None) -> None:
        super().__init__(input_size, hidden_size, p, dt, input_weights, recurrent_weights)

    def forward(self, input_tensor: Array, state: CobaLIFState | None = None) -> tuple:
        """(spikes (..., hidden), CobaLIFState) after one step."""
        return self._one(input_tensor, state)


class CobaLIF(_Coba):
    """``CobaLIFCell`` over the first axis of (T, ..., input_size) (grilly's; Norse 1.1 has the
    cell only): (spikes (T, ..., hidden), the last CobaLIFState, or every step's with
    ``record_states``)."""

    def __init__(self, input_size: int, hidden_size: int,
                 p: CobaLIFParameters = CobaLIFParameters(), dt: float = 0.001,
                 record_states: bool = False, *, input_weights: Array | None = None,
                 recurrent_weights: Array | None = None) -> None:
        super().__init__(input_size, hidden_size, p, dt, input_weights, recurrent_weights)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: CobaLIFState | None = None) -> tuple:
        """(spikes (T, ..., hidden), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)


# ---- multi-compartment LIF -------------------------------------------------------------------

def _check_coupling(g, hidden: int, op: str, like: Array) -> Array:
    """g_coupling as an (hidden, hidden) Array in the input's dtype."""
    if not isinstance(g, Array) or tuple(g.shape) != (hidden, hidden):
        raise ValueError(f"{op}: g_coupling must be a ({hidden}, {hidden}) grilly Array for "
                         f"{hidden} neurons, got {getattr(g, 'shape', type(g).__name__)}")
    if g.device != like.device:
        raise ValueError(f"{op}: g_coupling is on {g.device}, the input on {like.device}")
    return g if g.dtype == like.dtype else gp.astype(g, like.dtype)


def _couple(v: Array, g: Array, dt: float | None) -> Array:
    """v + dt v g^T (LIFMC), or v + v g^T for dt None (LIFMCRefrac, as Norse's)."""
    c = NF.linear(v, g)
    return v + (c if dt is None else dt * c)


def _mc_rec(x_in, st, w_rec, g, q, dt, spike) -> tuple:
    z, s = _rec_step(x_in, st, w_rec, q, dt, spike)
    return z, LIFState(s.z, _couple(s.v, g, dt), s.i)


def lif_mc_step(input_tensor: Array, state: LIFState, input_weights: Array,
                recurrent_weights: Array, g_coupling: Array, p: LIFParameters = LIFParameters(),
                dt: float = 0.001) -> tuple:
    """One Euler step of Norse's recurrent multi-compartment LIF: ``lif_step``, then v gains
    dt v g_coupling^T; (spikes, LIFState); state None is the rest state (v = v_leak)."""
    op = "lif_mc_step"
    x = F._check_input(input_tensor, op, "input_tensor")
    hidden = _check_weights(x, input_weights, recurrent_weights, op)
    shape = (*x.shape[:-1], hidden)
    g = _check_coupling(g_coupling, hidden, op, x)
    q = _params(p, LIFParameters, op, x, shape)
    if state is None:
        st = LIFState(_zeros(shape, x), _rest(q, shape, x), _zeros(shape, x))
    else:
        st = _check_state(state, LIFState, op, shape, x)
    return _mc_rec(NF.linear(x, input_weights), st, recurrent_weights, g, q, _dt(dt, op),
                   _spike_fn(q["method"], q["alpha"], op))


def lif_mc_feed_forward_step(input_tensor: Array, state: LIFFeedForwardState,
                             g_coupling: Array, p: LIFParameters = LIFParameters(),
                             dt: float = 0.001) -> tuple:
    """One Euler step of Norse's feed-forward multi-compartment LIF: v gains dt v
    g_coupling^T, then ``lif_feed_forward_step``; state None is the rest state."""
    op = "lif_mc_feed_forward_step"
    x = F._check_input(input_tensor, op, "input_tensor")
    g = _check_coupling(g_coupling, x.shape[-1] if x.ndim else 0, op, x)
    d = _dt(dt, op)
    if state is None:
        q = _params(p, LIFParameters, op, x, x.shape)
        state = LIFFeedForwardState(_rest(q, x.shape, x), _zeros(x.shape, x))
    v, i = _check_state(state, LIFFeedForwardState, op, x.shape, x)
    return _ff_step(x, LIFFeedForwardState(_couple(v, g, d), i), p, d, op, "input_tensor")


class _Coupled:
    """``g_coupling`` of the multi-compartment modules: N(0, 1/hidden) in a new Parameter, or
    the caller's Array kept as given (a Parameter is learned, as Norse's); the recurrent base
    after it in the MRO takes the other arguments."""

    def __init__(self, input_size, hidden_size, p, g_coupling, input_weights, recurrent_weights,
                 autapses, dt) -> None:
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt)
        self._init_coupling(g_coupling)

    def _init_coupling(self, g) -> None:
        op = type(self).__name__
        h = self.hidden_size
        if g is None:
            g = Parameter(_random.randn(h, h) * (1.0 / math.sqrt(h)))
        elif not isinstance(g, Array) or tuple(g.shape) != (h, h):
            raise ValueError(f"{op}: g_coupling must be a ({h}, {h}) grilly Array, got "
                             f"{getattr(g, 'shape', type(g).__name__)}")
        self.g_coupling = g

    def _g(self, x: Array) -> Array:
        return _check_coupling(self.g_coupling, self.hidden_size, type(self).__name__, x)


class _MC(_Coupled, _Recurrent):
    def _one(self, input_tensor: Array, state) -> tuple:
        x, q, st, spike = self._begin(input_tensor, state, False)
        return _mc_rec(NF.linear(x, self.input_weights), st, self._w_rec(), self._g(x), q,
                       self.dt, spike)

    def _all(self, input_tensor: Array, state) -> tuple:
        x, q, st, spike = self._begin(input_tensor, state, True)
        w_rec, g = self._w_rec(), self._g(x)
        return _run(NF.linear(x, self.input_weights), st,
                    lambda xt, s: _mc_rec(xt, s, w_rec, g, q, self.dt, spike), LIFState,
                    self.record_states)


class LIFMCRecurrentCell(_MC):
    """Norse's ``LIFMCRecurrentCell``: one step of the recurrent multi-compartment LIF, ``z,
    state = cell(x, state)`` with state a ``LIFState`` or None (zeros, v = v_leak)."""

    record_states = False

    def __init__(self, input_size: int, hidden_size: int, p: LIFParameters = LIFParameters(),
                 g_coupling: Array | None = None, input_weights: Array | None = None,
                 recurrent_weights: Array | None = None, autapses: bool = False,
                 dt: float = 0.001) -> None:
        super().__init__(input_size, hidden_size, p, g_coupling, input_weights,
                         recurrent_weights, autapses, dt)

    def forward(self, input_tensor: Array, state: LIFState | None = None) -> tuple:
        """(spikes (..., hidden), LIFState) after one step."""
        return self._one(input_tensor, state)


class LIFMCRecurrent(_MC):
    """``LIFMCRecurrentCell`` over the first axis of (T, ..., input_size) (grilly's; Norse 1.1
    has the cell only): (spikes (T, ..., hidden), the last LIFState, or every step's with
    ``record_states``)."""

    def __init__(self, input_size: int, hidden_size: int, p: LIFParameters = LIFParameters(),
                 g_coupling: Array | None = None, input_weights: Array | None = None,
                 recurrent_weights: Array | None = None, autapses: bool = False,
                 dt: float = 0.001, record_states: bool = False) -> None:
        super().__init__(input_size, hidden_size, p, g_coupling, input_weights,
                         recurrent_weights, autapses, dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: LIFState | None = None) -> tuple:
        """(spikes (T, ..., hidden), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)


# ---- multi-compartment LIF with a refractory period ----------------------------------------

def _mc_refrac_update(x_in, v, i, rho, g, q, rho_reset, dt, spike) -> tuple:
    """Norse's lif_mc_refrac step from the (already weighted) input: (z, v, i, rho)."""
    m = spike(rho)
    dv = ((1.0 - m) * (dt * q["tau_mem_inv"])) * ((q["v_leak"] - v) + i) + NF.linear(v, g)
    v_decayed = v + dv
    i_decayed = i + (-dt * q["tau_syn_inv"]) * i
    z = spike(v_decayed - q["v_th"])
    v_new = (1.0 - z) * v_decayed + z * q["v_reset"]
    rho_new = (1.0 - z) * NF.relu(rho - m) + z * rho_reset
    return z, v_new, i_decayed + x_in, rho_new


def _mc_refrac_rec(x_in, st, w_rec, g, q, rho_reset, dt, spike) -> tuple:
    (z0, v, i), rho = st
    z, v, i, rho = _mc_refrac_update(x_in + NF.linear(z0, w_rec), v, i, rho, g, q, rho_reset,
                                     dt, spike)
    return z, LIFRefracState(LIFState(z, v, i), rho)


def lif_mc_refrac_step(input_tensor: Array, state: LIFRefracState, input_weights: Array,
                       recurrent_weights: Array, g_coupling: Array,
                       p: LIFRefracParameters = LIFRefracParameters(),
                       dt: float = 0.001) -> tuple:
    """One Euler step of Norse's recurrent multi-compartment LIF with a refractory period:
    (spikes, LIFRefracState); state None is the rest state (rho = 0)."""
    op = "lif_mc_refrac_step"
    x = F._check_input(input_tensor, op, "input_tensor")
    hidden = _check_weights(x, input_weights, recurrent_weights, op)
    shape = (*x.shape[:-1], hidden)
    g = _check_coupling(g_coupling, hidden, op, x)
    q, rho_reset, spike = _refrac_params(p, _LIF, op, x, shape)
    if state is None:
        inner, rho = _refrac_rest(q, shape, x, True, False)
    else:
        inner, rho = _refrac_state(state, LIFRefracState, _LIF, True, op, shape, x)
    return _mc_refrac_rec(NF.linear(x, input_weights), (inner, rho), recurrent_weights, g, q,
                          rho_reset, _dt(dt, op), spike)


def lif_mc_refrac_feed_forward_step(input_tensor: Array, state: LIFRefracFeedForwardState,
                                    g_coupling: Array,
                                    p: LIFRefracParameters = LIFRefracParameters(),
                                    dt: float = 0.001) -> tuple:
    """One Euler step of Norse's feed-forward multi-compartment LIF with a refractory period:
    (spikes, LIFRefracFeedForwardState); state None is the rest state (rho = 0)."""
    op = "lif_mc_refrac_feed_forward_step"
    x = F._check_input(input_tensor, op, "input_tensor")
    g = _check_coupling(g_coupling, x.shape[-1] if x.ndim else 0, op, x)
    q, rho_reset, spike = _refrac_params(p, _LIF, op, x, x.shape)
    if state is None:
        (v, i), rho = _refrac_rest(q, x.shape, x, False, False)
    else:
        (v, i), rho = _refrac_state(state, LIFRefracFeedForwardState, _LIF, False, op, x.shape,
                                    x)
    z, v, i, rho = _mc_refrac_update(x, v, i, rho, g, q, rho_reset, _dt(dt, op), spike)
    return z, LIFRefracFeedForwardState(LIFFeedForwardState(v, i), rho)


class _MCRefrac(_Coupled, _RefracRecurrent):
    def _one(self, input_tensor: Array, state) -> tuple:
        x, q, st, spike = self._begin(input_tensor, state, False)
        return _mc_refrac_rec(NF.linear(x, self.input_weights), st, self._w_rec(), self._g(x),
                              q, q["rho_reset"], self.dt, spike)

    def _all(self, input_tensor: Array, state) -> tuple:
        x, q, st, spike = self._begin(input_tensor, state, True)
        w_rec, g = self._w_rec(), self._g(x)
        return _run(NF.linear(x, self.input_weights), st,
                    lambda xt, s: _mc_refrac_rec(xt, s, w_rec, g, q, q["rho_reset"], self.dt,
                                                 spike), LIFRefracState, self.record_states)


class LIFMCRefracRecurrentCell(_MCRefrac):
    """Norse's ``LIFMCRefracRecurrentCell``: one step of the recurrent multi-compartment LIF
    with a refractory period; state a ``LIFRefracState`` or None (rest, rho = 0)."""

    record_states = False

    def __init__(self, input_size: int, hidden_size: int,
                 p: LIFRefracParameters = LIFRefracParameters(), g_coupling: Array | None = None,
                 input_weights: Array | None = None, recurrent_weights: Array | None = None,
                 autapses: bool = False, dt: float = 0.001) -> None:
        super().__init__(input_size, hidden_size, p, g_coupling, input_weights,
                         recurrent_weights, autapses, dt)

    def forward(self, input_tensor: Array, state: LIFRefracState | None = None) -> tuple:
        """(spikes (..., hidden), LIFRefracState) after one step."""
        return self._one(input_tensor, state)


class LIFMCRefracRecurrent(_MCRefrac):
    """``LIFMCRefracRecurrentCell`` over the first axis of (T, ..., input_size) (grilly's):
    (spikes (T, ..., hidden), the last LIFRefracState, or every step's with
    ``record_states``)."""

    def __init__(self, input_size: int, hidden_size: int,
                 p: LIFRefracParameters = LIFRefracParameters(), g_coupling: Array | None = None,
                 input_weights: Array | None = None, recurrent_weights: Array | None = None,
                 autapses: bool = False, dt: float = 0.001, record_states: bool = False) -> None:
        super().__init__(input_size, hidden_size, p, g_coupling, input_weights,
                         recurrent_weights, autapses, dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: LIFRefracState | None = None) -> tuple:
        """(spikes (T, ..., hidden), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)


# ---- Tsodyks-Markram short-term plasticity -------------------------------------------------

class TsodyksMakramParameters(NamedTuple):
    """Norse's Tsodyks-Markram parameters (inverse time constants in 1/s: facilitation,
    synaptic (unused by the step, as Norse's), depression) and the utilization jump U."""

    tau_f_inv: float | Array = 1.0 / 50.0e-3
    tau_s_inv: float | Array = 1.0 / 20.0e-3
    tau_d_inv: float | Array = 1.0 / 750.0e-3
    U: float | Array = 0.45   # noqa: N815  (Norse's name)


class TsodyksMakramState(NamedTuple):
    """The synapses' state: utilization u and the fraction x of available resources (numbers
    or Arrays broadcasting to the spikes' shape)."""

    u: float | Array
    x: float | Array


def stp_step(z: Array, s: TsodyksMakramState | None, p: TsodyksMakramParameters,
             dt: float = 0.001) -> tuple:
    """Norse's ``stp_step``: one Euler step of the Tsodyks-Markram synapse on spikes z,
    (u' x z, TsodyksMakramState(u', x')); s None is the resting synapse (u = 0, x = 1)."""
    op = "stp_step"
    z = F._check_input(z, op, "z")
    q = _params(p, TsodyksMakramParameters, op, z, z.shape)
    if s is None:
        s = TsodyksMakramState(0.0, 1.0)
    elif not isinstance(s, tuple) or not all(hasattr(s, f) for f in TsodyksMakramState._fields):
        raise TypeError(f"{op}: s must be a TsodyksMakramState (u, x) or None, got "
                        f"{type(s).__name__}")
    u, x = (_stp_field(v, f, op, z) for f, v in zip(TsodyksMakramState._fields, s))
    d = _dt(dt, op)
    u_p = u + d * (-q["tau_f_inv"] * u) + (q["U"] * (1.0 - u)) * z
    x_p = x + d * (q["tau_d_inv"] * (1.0 - x)) - (u_p * x) * z
    return (u_p * x) * z, TsodyksMakramState(u=u_p, x=x_p)


def _stp_field(v, name: str, op: str, like: Array):
    """A state field: a number, or an Array broadcasting to the spikes' shape (on their
    device, in their dtype)."""
    if not isinstance(v, Array):
        if isinstance(v, numbers.Real) and not isinstance(v, bool):
            return float(v)
        raise TypeError(f"{op}: s.{name} must be a number or a grilly Array, got "
                        f"{type(v).__name__}")
    if v.device != like.device:
        raise ValueError(f"{op}: s.{name} is on {v.device}, the spikes z on {like.device}")
    if not _broadcasts_to(v.shape, like.shape):
        raise ValueError(f"{op}: s.{name} has shape {tuple(v.shape)}, which does not broadcast "
                         f"to the spikes' shape {tuple(like.shape)}")
    return v if v.dtype == like.dtype else gp.astype(v, like.dtype)
