"""Norse 1.1's adaptive-threshold LIF (``LSNN*``, Bellec et al.'s long short-term memory SNN)
and its LIF / AdEx neurons with an absolute refractory period (``LIFRefrac*``,
``LIFAdExRefrac*``) on grilly Arrays; the names are re-exported by ``grilly.nn.snn.norse``.

LSNN, one explicit Euler step of ``dt`` in Norse's order (v, i, b: the state's; the input
enters the current *after* the step, so it reaches v one step later):

    v* = v + dt tau_mem_inv ((v_leak - v) + i);  i* = i - dt tau_syn_inv i
    b* = b + dt tau_adapt_inv (v_th - b);  z = H(v* - b*)
    v_next = (1 - z) v* + z v_reset;  b_next = b* + z beta;  i_next = i* + x

(x = input W_in^T + z_rec W_rec^T in the recurrent neuron, whose reset and threshold jump are
detached as Norse's; the feed-forward neuron keeps their gradient). The threshold b starts at
v_th.

Refractory neurons: the LIF (or AdEx) step, then with m = H(rho) (its surrogate gradient too)
a neuron in its refractory period keeps its old membrane and cannot spike:

    v_next = (1 - m) v_step + m v;  z = (1 - m) z_step
    rho_next = (1 - z) relu(rho - m) + z rho_reset

Step by step (no fused kernel).
"""
from __future__ import annotations

from typing import NamedTuple

from ...array.array import Array
from .. import functional as NF
from . import functional as F
from .norse_adex import (LIFAdExFeedForwardState, LIFAdExParameters, LIFAdExState,
                         _adex_update)
from .norse_compat import (LIFFeedForwardState, LIFParameters, LIFState, _check_state,
                           _check_weights, _dt, _ff_call, _full, _lif_update, _Norse, _params,
                           _rec_call, _Recurrent, _Sequence, _spike_fn, _value, _zeros)

__all__ = ["LSNNParameters", "LSNNState", "LSNNFeedForwardState", "lsnn_step",
           "lsnn_feed_forward_step", "LSNNCell", "LSNN", "LSNNRecurrentCell", "LSNNRecurrent",
           "LIFRefracParameters", "LIFRefracState", "LIFRefracFeedForwardState",
           "lif_refrac_step", "lif_refrac_feed_forward_step", "compute_refractory_update",
           "LIFRefracCell", "LIFRefracRecurrentCell", "LIFRefracRecurrent",
           "LIFAdExRefracParameters", "LIFAdExRefracState", "LIFAdExRefracFeedForwardState",
           "lif_adex_refrac_step", "lif_adex_refrac_feed_forward_step", "LIFAdExRefracCell",
           "LIFAdExRefracRecurrentCell", "LIFAdExRefracRecurrent"]


def _no_adjoint(adjoint: bool, op: str) -> None:
    if adjoint:
        raise NotImplementedError(f"{op}: adjoint=True (Norse's adjoint equations) is not "
                                  "supported; grilly differentiates the Euler steps (BPTT)")


# ---- LSNN ------------------------------------------------------------------------------------

class LSNNParameters(NamedTuple):
    """Norse's LSNN parameters (its defaults): inverse time constants (1/s), potentials, the
    threshold jump ``beta``, the threshold method and its ``alpha``."""

    tau_syn_inv: float | Array = 1.0 / 5e-3
    tau_mem_inv: float | Array = 1.0 / 1e-2
    tau_adapt_inv: float | Array = 1.0 / 800
    v_leak: float | Array = 0.0
    v_th: float | Array = 1.0
    v_reset: float | Array = 0.0
    beta: float | Array = 1.8
    method: str = "super"
    alpha: float = 100.0


class LSNNState(NamedTuple):
    """A recurrent LSNN layer's state: spikes z, membrane v, current i, threshold b."""

    z: Array
    v: Array
    i: Array
    b: Array


class LSNNFeedForwardState(NamedTuple):
    """A feed-forward LSNN layer's state: membrane v, current i, threshold b."""

    v: Array
    i: Array
    b: Array


def _lsnn_update(x_in, v, i, b, q, dt, spike, detach_reset) -> tuple:
    """One Euler step: (z, v, i, b); x_in joins the current after the decay."""
    v_decayed = v + (dt * q["tau_mem_inv"]) * ((q["v_leak"] - v) + i)
    i_decayed = i + (-dt * q["tau_syn_inv"]) * i
    b_decayed = b + (dt * q["tau_adapt_inv"]) * (q["v_th"] - b)
    z = spike(v_decayed - b_decayed)
    zr = z.detach() if detach_reset else z
    v_new = (1.0 - zr) * v_decayed + zr * q["v_reset"]
    return z, v_new, i_decayed + x_in, b_decayed + zr * q["beta"]


def _lsnn_rest(q: dict, shape: tuple, x: Array) -> tuple:
    """(v, i, b) at rest: v = v_leak, i = 0, b = v_th (detached copies, as Norse's)."""
    def full(v):
        return _full(v.detach() if isinstance(v, Array) else v, shape, x)
    return full(q["v_leak"]), _zeros(shape, x), full(q["v_th"])


def lsnn_feed_forward_step(input_tensor: Array, state: LSNNFeedForwardState | None,
                           p: LSNNParameters = LSNNParameters(), dt: float = 0.001) -> tuple:
    """One Euler step of Norse's feed-forward LSNN: (spikes, LSNNFeedForwardState); state
    None is the rest state (v = v_leak, i = 0, b = v_th)."""
    return _ff_call(_lsnn_ff_update, input_tensor, state, p, dt, "lsnn_feed_forward_step",
                    "input_tensor", LSNNParameters, LSNNFeedForwardState, _lsnn_rest)


def _lsnn_ff_update(x, st, q, dt, spike) -> tuple:
    z, v, i, b = _lsnn_update(x, *st, q, dt, spike, False)
    return z, LSNNFeedForwardState(v, i, b)


def _lsnn_rec(x_in, state, w_rec, q, dt, spike) -> tuple:
    z0, v, i, b = state
    z, v, i, b = _lsnn_update(x_in + NF.linear(z0, w_rec), v, i, b, q, dt, spike, True)
    return z, LSNNState(z, v, i, b)


def lsnn_step(input_tensor: Array, state: LSNNState, input_weights: Array,
              recurrent_weights: Array, p: LSNNParameters = LSNNParameters(),
              dt: float = 0.001) -> tuple:
    """One Euler step of Norse's recurrent LSNN: (spikes, LSNNState); the current gains
    input_tensor input_weights^T + z recurrent_weights^T after the step."""
    return _rec_call(_lsnn_rec, input_tensor, state, input_weights, recurrent_weights, p, dt,
                     "lsnn_step", "input_tensor", LSNNParameters, LSNNState)


class _LSNNFeedForward:
    """The feed-forward LSNN's state and step (for ``_Norse``'s ``_one`` and ``_all``)."""

    _kind = LSNNParameters
    _state_kind = LSNNFeedForwardState
    _step = staticmethod(_lsnn_ff_update)

    def _state0(self, q: dict, shape: tuple, x: Array):
        return LSNNFeedForwardState(*_lsnn_rest(q, shape, x))


class LSNNCell(_LSNNFeedForward, _Norse):
    """Norse's ``LSNNCell``: one step of the feed-forward LSNN, ``z, state = cell(x, state)``;
    state None starts at rest (v = v_leak, i = 0, b = v_th)."""

    def __init__(self, p: LSNNParameters = LSNNParameters(), adjoint: bool = False,
                 dt: float = 0.001) -> None:
        _no_adjoint(adjoint, type(self).__name__)
        super().__init__(p, dt)

    def forward(self, input_tensor: Array, state: LSNNFeedForwardState | None = None) -> tuple:
        """(spikes, LSNNFeedForwardState) after one step."""
        return self._one(input_tensor, state)


class LSNN(_LSNNFeedForward, _Sequence):
    """Norse's ``LSNN``: the feed-forward LSNN over the first axis of (T, ...): (spikes
    (T, ...), the last LSNNFeedForwardState, or every step's with ``record_states``)."""

    def __init__(self, p: LSNNParameters = LSNNParameters(), adjoint: bool = False,
                 dt: float = 0.001, record_states: bool = False) -> None:
        _no_adjoint(adjoint, type(self).__name__)
        super().__init__(p, dt, record_states, False)

    def forward(self, input_tensor: Array, state: LSNNFeedForwardState | None = None) -> tuple:
        """(spikes (T, ...), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)


class _LSNNRecurrent(_Recurrent):
    _kind = LSNNParameters
    _state_kind = LSNNState
    _step = staticmethod(_lsnn_rec)

    def __init__(self, input_size, hidden_size, p, adjoint, input_weights, recurrent_weights,
                 autapses, dt) -> None:
        _no_adjoint(adjoint, type(self).__name__)
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt)

    def _state0(self, q: dict, shape: tuple, x: Array):
        return LSNNState(self._zeros(shape, x), *_lsnn_rest(q, shape, x))


class LSNNRecurrentCell(_LSNNRecurrent):
    """Norse's ``LSNNRecurrentCell``: one step of the recurrent LSNN, ``z, state = cell(x,
    state)`` with state a ``LSNNState`` (z, v, i, b) or None (rest, no spikes)."""

    def __init__(self, input_size: int, hidden_size: int, p: LSNNParameters = LSNNParameters(),
                 adjoint: bool = False, input_weights: Array | None = None,
                 recurrent_weights: Array | None = None, autapses: bool = False,
                 dt: float = 0.001) -> None:
        super().__init__(input_size, hidden_size, p, adjoint, input_weights, recurrent_weights,
                         autapses, dt)

    def forward(self, input_tensor: Array, state: LSNNState | None = None) -> tuple:
        """(spikes (..., hidden), LSNNState) after one step."""
        return self._one(input_tensor, state)


class LSNNRecurrent(_LSNNRecurrent):
    """Norse's ``LSNNRecurrent``: the recurrent LSNN over the first axis of (T, ...,
    input_size): (spikes (T, ..., hidden), the last LSNNState, or every step's with
    ``record_states``)."""

    def __init__(self, input_size: int, hidden_size: int, p: LSNNParameters = LSNNParameters(),
                 adjoint: bool = False, input_weights: Array | None = None,
                 recurrent_weights: Array | None = None, autapses: bool = False,
                 dt: float = 0.001, record_states: bool = False) -> None:
        super().__init__(input_size, hidden_size, p, adjoint, input_weights, recurrent_weights,
                         autapses, dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: LSNNState | None = None) -> tuple:
        """(spikes (T, ..., hidden), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)


# ---- refractory LIF and AdEx -----------------------------------------------------------------

class LIFRefracParameters(NamedTuple):
    """Norse's refractory LIF parameters: the LIF's (``lif``) and the refractory period's
    length in steps, ``rho_reset``."""

    lif: LIFParameters = LIFParameters()
    rho_reset: float | Array = 5.0


class LIFRefracState(NamedTuple):
    """A recurrent refractory LIF layer's state: the LIFState and the refractory count rho."""

    lif: LIFState
    rho: Array


class LIFRefracFeedForwardState(NamedTuple):
    """A feed-forward refractory LIF layer's state: the LIFFeedForwardState and rho."""

    lif: LIFFeedForwardState
    rho: Array


class LIFAdExRefracParameters(NamedTuple):
    """Norse's refractory AdEx parameters: the AdEx's (``lif_adex``) and ``rho_reset``."""

    lif_adex: LIFAdExParameters = LIFAdExParameters()
    rho_reset: float | Array = 5.0


class LIFAdExRefracState(NamedTuple):
    """A recurrent refractory AdEx layer's state: the LIFAdExState and rho."""

    lif_adex: LIFAdExState
    rho: Array


class LIFAdExRefracFeedForwardState(NamedTuple):
    """A feed-forward refractory AdEx layer's state: the LIFAdExFeedForwardState and rho."""

    lif_adex: LIFAdExFeedForwardState
    rho: Array


def _refrac(rho, v_old, z, v_step, rho_reset, spike) -> tuple:
    """The refractory update: (v, z, rho)."""
    m = spike(rho)
    v = (1.0 - m) * v_step + m * v_old
    z = (1.0 - m) * z
    return v, z, (1.0 - z) * NF.relu(rho - m) + z * rho_reset


def compute_refractory_update(state, z_new: Array, v_new: Array,
                              p: LIFRefracParameters = LIFRefracParameters()) -> tuple:
    """Norse's ``compute_refractory_update``: (v, z, rho) after a LIF (or AdEx) step's z_new,
    v_new, from the refractory ``state`` (its inner state's v and its rho)."""
    op = "compute_refractory_update"
    inner, rho = state
    x = F._check_input(v_new, op, "v_new")
    lp = p[0]
    return _refrac(rho, inner.v, z_new, x, _value(p.rho_reset, "rho_reset", op, x),
                   _spike_fn(lp.method, lp.alpha, op))


# (kind of the whole parameters, of the inner ones, the inner states, whether AdEx)
_LIF = (LIFRefracParameters, LIFParameters, LIFState, LIFFeedForwardState, False)
_ADEX = (LIFAdExRefracParameters, LIFAdExParameters, LIFAdExState, LIFAdExFeedForwardState,
         True)


def _refrac_params(p, kind, op: str, x: Array, shape: tuple) -> tuple:
    """(inner parameters dict, rho_reset, spike function)."""
    outer, inner = kind[0], kind[1]
    if not isinstance(p, tuple) or not all(hasattr(p, f) for f in outer._fields):
        raise TypeError(f"{op}: p must be a {outer.__name__} {outer._fields}, got "
                        f"{type(p).__name__}")
    q = _params(p[0], inner, op, x, shape)
    rho_reset = _value(p.rho_reset, "rho_reset", op, x)
    return q, rho_reset, _spike_fn(q["method"], q["alpha"], op)


def _refrac_state(state, outer_kind, kind, rec: bool, op: str, shape: tuple, x: Array) -> tuple:
    """(inner state tuple, rho) checked; the inner state is the recurrent or feed-forward one."""
    if not isinstance(state, tuple) or len(state) != 2 or not isinstance(state[0], tuple):
        raise TypeError(f"{op}: state must be a {outer_kind.__name__} (inner state, rho) or "
                        f"None, got {type(state).__name__}")
    inner_kind = kind[2] if rec else kind[3]
    inner = inner_kind(*_check_state(state[0], inner_kind, op, shape, x))
    (rho,) = _check_state(_RhoState(state[1]), _RhoState, op, shape, x)
    return inner, rho


class _RhoState(NamedTuple):
    rho: Array


def _refrac_step(x_in, inner, rho, q, rho_reset, dt, spike, kind, w_rec) -> tuple:
    """One refractory step from the input current x_in: (z, inner state, rho); w_rec None for
    the feed-forward neuron (the reset keeps its gradient), else the recurrent one's."""
    adex = kind[4]
    rec = w_rec is not None
    if rec:
        x_in = x_in + NF.linear(inner.z, w_rec)
        _, v0, i0, *a0 = inner
    else:
        v0, i0, *a0 = inner
    if adex:
        z, v, i, a = _adex_update(i0 + x_in, v0, a0[0], q, dt, spike)
    else:
        # (Norse's recurrent LIF detaches its reset; its recurrent AdEx does not)
        z, v, i = _lif_update(i0 + x_in, v0, q, dt, spike, rec)
    v, z, rho = _refrac(rho, v0, z, v, rho_reset, spike)
    tail = (a,) if adex else ()
    return z, ((kind[2](z, v, i, *tail)) if rec else kind[3](v, i, *tail)), rho


def _refrac_rest(q: dict, shape: tuple, x: Array, rec: bool, adex: bool) -> tuple:
    v = q["v_leak"]
    inner = [_full(v.detach() if isinstance(v, Array) else v, shape, x), _zeros(shape, x)]
    if adex:
        inner.append(_zeros(shape, x))
    if rec:
        inner.insert(0, _zeros(shape, x))
    return tuple(inner), _zeros(shape, x)


def _ff_refrac(x, state, p, dt, op: str, kind, fallback_rest: bool) -> tuple:
    x = F._check_input(x, op, "input_tensor")
    q, rho_reset, spike = _refrac_params(p, kind, op, x, x.shape)
    outer_state = LIFAdExRefracFeedForwardState if kind[4] else LIFRefracFeedForwardState
    if state is None:
        if not fallback_rest:
            raise TypeError(f"{op}: state must be a {outer_state.__name__}, got None")
        inner, rho = _refrac_rest(q, x.shape, x, False, kind[4])
        inner = kind[3](*inner)
    else:
        inner, rho = _refrac_state(state, outer_state, kind, False, op, x.shape, x)
    z, inner, rho = _refrac_step(x, inner, rho, q, rho_reset, _dt(dt, op), spike, kind, None)
    return z, outer_state(inner, rho)


def _rec_refrac_fn(x, state, w_in, w_rec, p, dt, op: str, kind) -> tuple:
    x = F._check_input(x, op, "input_tensor")
    hidden = _check_weights(x, w_in, w_rec, op)
    shape = (*x.shape[:-1], hidden)
    q, rho_reset, spike = _refrac_params(p, kind, op, x, shape)
    outer_state = LIFAdExRefracState if kind[4] else LIFRefracState
    inner, rho = _refrac_state(state, outer_state, kind, True, op, shape, x)
    z, inner, rho = _refrac_step(NF.linear(x, w_in), inner, rho, q, rho_reset, _dt(dt, op),
                                 spike, kind, w_rec)
    return z, outer_state(inner, rho)


def lif_refrac_feed_forward_step(input_tensor: Array, state: LIFRefracFeedForwardState,
                                 p: LIFRefracParameters = LIFRefracParameters(),
                                 dt: float = 0.001) -> tuple:
    """One Euler step of Norse's feed-forward LIF with a refractory period: (spikes,
    LIFRefracFeedForwardState)."""
    return _ff_refrac(input_tensor, state, p, dt, "lif_refrac_feed_forward_step", _LIF, False)


def lif_refrac_step(input_tensor: Array, state: LIFRefracState, input_weights: Array,
                    recurrent_weights: Array, p: LIFRefracParameters = LIFRefracParameters(),
                    dt: float = 0.001) -> tuple:
    """One Euler step of Norse's recurrent LIF with a refractory period: (spikes,
    LIFRefracState)."""
    return _rec_refrac_fn(input_tensor, state, input_weights, recurrent_weights, p, dt,
                          "lif_refrac_step", _LIF)


def lif_adex_refrac_feed_forward_step(input_tensor: Array, state: LIFAdExRefracFeedForwardState,
                                      p: LIFAdExRefracParameters = LIFAdExRefracParameters(),
                                      dt: float = 0.001) -> tuple:
    """One Euler step of Norse's feed-forward AdEx with a refractory period: (spikes,
    LIFAdExRefracFeedForwardState)."""
    return _ff_refrac(input_tensor, state, p, dt, "lif_adex_refrac_feed_forward_step", _ADEX,
                      False)


def lif_adex_refrac_step(input_tensor: Array, state: LIFAdExRefracState, input_weights: Array,
                         recurrent_weights: Array,
                         p: LIFAdExRefracParameters = LIFAdExRefracParameters(),
                         dt: float = 0.001) -> tuple:
    """One Euler step of Norse's recurrent AdEx with a refractory period: (spikes,
    LIFAdExRefracState)."""
    return _rec_refrac_fn(input_tensor, state, input_weights, recurrent_weights, p, dt,
                          "lif_adex_refrac_step", _ADEX)


class _RefracMixin:
    """The parameters check of the refractory modules (their threshold method is p's inner
    one's)."""

    _refrac_kind = _LIF

    def _check_p(self, p) -> None:
        op = type(self).__name__
        outer = self._refrac_kind[0]
        if not isinstance(p, tuple) or not all(hasattr(p, f) for f in outer._fields):
            raise TypeError(f"{op}: p must be a {outer.__name__} {outer._fields}, got "
                            f"{type(p).__name__}")
        _spike_fn(p[0].method, p[0].alpha, op)


class LIFRefracCell(_RefracMixin, _Norse):
    """Norse's ``LIFRefracCell``: one step of the feed-forward LIF with a refractory period,
    ``z, state = cell(x, state)``; state None starts at rest (v = v_leak, i = rho = 0)."""

    _kind = LIFRefracParameters

    def __init__(self, p: LIFRefracParameters = LIFRefracParameters(), dt: float = 0.001) -> None:
        self._check_p(p)
        super().__init__(p, dt)

    def forward(self, input_tensor: Array, state: LIFRefracFeedForwardState | None = None
                ) -> tuple:
        """(spikes, LIFRefracFeedForwardState) after one step."""
        return _ff_refrac(input_tensor, state, self.p, self.dt, type(self).__name__,
                          self._refrac_kind, True)


class LIFAdExRefracCell(LIFRefracCell):
    """Norse's ``LIFAdExRefracCell``: one step of the feed-forward AdEx with a refractory
    period; state None starts at rest (v = v_leak, i = a = rho = 0)."""

    _kind = LIFAdExRefracParameters
    _refrac_kind = _ADEX

    def __init__(self, p: LIFAdExRefracParameters = LIFAdExRefracParameters(),
                 dt: float = 0.001) -> None:
        super().__init__(p, dt)


class _RefracRecurrent(_RefracMixin, _Recurrent):
    _kind = LIFRefracParameters

    def __init__(self, input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                 dt) -> None:
        self._check_p(p)
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt)

    @property
    def _state_kind(self):
        return LIFAdExRefracState if self._refrac_kind[4] else LIFRefracState

    def _q(self, x: Array, shape: tuple) -> dict:
        """The inner parameters with rho_reset (the threshold method is the inner one's)."""
        q, rho_reset, _ = _refrac_params(self.p, self._refrac_kind, type(self).__name__, x,
                                         shape)
        return {**q, "rho_reset": rho_reset}

    def _first(self, state, q: dict, shape: tuple, x: Array, op: str, seq: bool):
        kind = self._refrac_kind
        if state is None:
            inner, rho = _refrac_rest(q, shape, x, True, kind[4])
            inner = kind[2](*inner)
        else:
            inner, rho = _refrac_state(state, self._state_kind, kind, True, op, shape, x)
        return self._state_kind(inner, rho)

    def _step(self, x_in, st, w_rec, q: dict, dt: float, spike) -> tuple:
        z, inner, rho = _refrac_step(x_in, *st, q, q["rho_reset"], dt, spike, self._refrac_kind,
                                     w_rec)
        return z, self._state_kind(inner, rho)


class LIFRefracRecurrentCell(_RefracRecurrent):
    """Norse's ``LIFRefracRecurrentCell``: one step of the recurrent LIF with a refractory
    period; state a ``LIFRefracState`` or None (rest, no spikes, rho = 0)."""

    def __init__(self, input_size: int, hidden_size: int,
                 p: LIFRefracParameters = LIFRefracParameters(),
                 input_weights: Array | None = None, recurrent_weights: Array | None = None,
                 autapses: bool = False, dt: float = 0.001) -> None:
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt)

    def forward(self, input_tensor: Array, state=None) -> tuple:
        """(spikes (..., hidden), the refractory state) after one step."""
        return self._one(input_tensor, state)


class LIFRefracRecurrent(_RefracRecurrent):
    """Norse's ``LIFRefracRecurrent``: the recurrent refractory LIF over the first axis of
    (T, ..., input_size): (spikes (T, ..., hidden), the last state, or every step's with
    ``record_states``)."""

    def __init__(self, input_size: int, hidden_size: int,
                 p: LIFRefracParameters = LIFRefracParameters(),
                 input_weights: Array | None = None, recurrent_weights: Array | None = None,
                 autapses: bool = False, dt: float = 0.001, record_states: bool = False) -> None:
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state=None) -> tuple:
        """(spikes (T, ..., hidden), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)


class LIFAdExRefracRecurrentCell(LIFRefracRecurrentCell):
    """Norse's ``LIFAdExRefracRecurrentCell``: one step of the recurrent AdEx with a
    refractory period; state a ``LIFAdExRefracState`` or None."""

    _kind = LIFAdExRefracParameters
    _refrac_kind = _ADEX

    def __init__(self, input_size: int, hidden_size: int,
                 p: LIFAdExRefracParameters = LIFAdExRefracParameters(),
                 input_weights: Array | None = None, recurrent_weights: Array | None = None,
                 autapses: bool = False, dt: float = 0.001) -> None:
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt)


class LIFAdExRefracRecurrent(LIFRefracRecurrent):
    """Norse's ``LIFAdExRefracRecurrent``: the recurrent refractory AdEx over the first axis
    of (T, ..., input_size)."""

    _kind = LIFAdExRefracParameters
    _refrac_kind = _ADEX

    def __init__(self, input_size: int, hidden_size: int,
                 p: LIFAdExRefracParameters = LIFAdExRefracParameters(),
                 input_weights: Array | None = None, recurrent_weights: Array | None = None,
                 autapses: bool = False, dt: float = 0.001, record_states: bool = False) -> None:
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt, record_states)

