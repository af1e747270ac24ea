"""Norse 1.1's Izhikevich neuron (``norse.torch`` Izhikevich*) on grilly Arrays, with its
parameter presets (``tonic_spiking``, ``phasic_bursting``, ... as ``IzhikevichSpikingBehavior``
(p, initial state)); re-exported by ``grilly.nn.snn.norse``.

One explicit Euler step of ``dt`` (v, u: the state's; x = input W_in^T + z W_rec^T in the
recurrent neuron):

    v* = v + tau_inv dt (sq v^2 + mn v + bias - u + x);  u* = u + tau_inv dt a (b v - u)
    z = H(v* - v_th);  v_next = (1 - z) v* + z c;  u_next = (1 - z) u* + z (u* + d)

(the reset keeps its surrogate gradient, in the recurrent neuron too, as Norse's). A preset's
state holds numbers (Norse's 0-d tensors), broadcast to the layer's shape. Step by step.
"""
from __future__ import annotations

import numbers
from typing import NamedTuple

from ...array import api as gp

from ...array.array import Array
from .. import functional as NF
from . import functional as F
from .norse_compat import (_check_weights, _dt, _float, _full, _Norse, _params, _Recurrent,
                           _spike_fn, _zeros, _broadcasts_to)

__all__ = ["IzhikevichParameters", "IzhikevichState", "IzhikevichRecurrentState",
           "IzhikevichSpikingBehavior", "create_izhikevich_spiking_behavior",
           "izhikevich_feed_forward_step", "izhikevich_recurrent_step", "IzhikevichCell",
           "Izhikevich", "IzhikevichRecurrentCell", "IzhikevichRecurrent", "tonic_spiking",
           "phasic_spiking", "tonic_bursting", "phasic_bursting", "mixed_mode",
           "spike_frequency_adaptation", "class_1_exc", "class_2_exc", "spike_latency",
           "subthreshold_oscillation", "resonator", "integrator", "rebound_spike",
           "rebound_burst", "threshold_variability", "bistability", "dap", "accomodation",
           "inhibition_induced_spiking", "inhibition_induced_bursting"]


class IzhikevichParameters(NamedTuple):
    """Norse's Izhikevich parameters: a, b, c, d (no defaults), the quadratic's sq, mn, bias,
    the spike cut-off v_th (mV), tau_inv, the threshold method and its alpha."""

    a: float | Array
    b: float | Array
    c: float | Array
    d: float | Array
    sq: float | Array = 0.04
    mn: float | Array = 5
    bias: float | Array = 140
    v_th: float | Array = 30
    tau_inv: float | Array = 250
    method: str = "super"
    alpha: float = 100.0


class IzhikevichState(NamedTuple):
    """A feed-forward Izhikevich layer's state: membrane v and recovery u (Arrays or
    numbers)."""

    v: Array | float
    u: Array | float


class IzhikevichRecurrentState(NamedTuple):
    """A recurrent Izhikevich layer's state: spikes z, membrane v, recovery u."""

    z: Array
    v: Array
    u: Array


class IzhikevichSpikingBehavior(NamedTuple):
    """A preset: the parameters ``p`` and the initial state ``s`` (an IzhikevichState)."""

    p: IzhikevichParameters
    s: IzhikevichState


def create_izhikevich_spiking_behavior(a: float, b: float, c: float, d: float, v_rest: float,
                                       u_rest: float, tau_inv: float = 250
                                       ) -> IzhikevichSpikingBehavior:
    """Norse's ``create_izhikevich_spiking_behavior``: parameters (a, b, c, d, tau_inv) and the
    initial state v = v_rest, u = u_rest b."""
    p = IzhikevichParameters(a=a, b=b, c=c, d=d, tau_inv=tau_inv)
    return IzhikevichSpikingBehavior(p, IzhikevichState(float(v_rest), float(u_rest) * b))


def _preset(v_rest: float, u=None, **kw) -> IzhikevichSpikingBehavior:
    p = IzhikevichParameters(**kw)
    return IzhikevichSpikingBehavior(p, IzhikevichState(float(v_rest),
                                                        v_rest * p.b if u is None else u))


# Norse's presets (Izhikevich 2004's behaviours), their parameters and initial states
tonic_spiking = _preset(-70.0, a=0.02, b=0.2, c=-65, d=6)
phasic_spiking = _preset(-64.0, a=0.02, b=0.25, c=-65, d=6)
tonic_bursting = _preset(-70.0, a=0.02, b=0.2, c=-50, d=2)
phasic_bursting = _preset(-64.0, a=0.02, b=0.25, c=-55, d=0.05, tau_inv=200)
mixed_mode = _preset(-70.0, a=0.02, b=0.2, c=-55, d=4, tau_inv=250)
spike_frequency_adaptation = _preset(-70.0, a=0.01, b=0.2, c=-65, d=8, tau_inv=250)
class_1_exc = _preset(-60.0, a=0.02, b=-0.1, c=-55, d=6, mn=4.1, bias=108, tau_inv=250)
class_2_exc = _preset(-64.0, a=0.2, b=0.26, c=-65, d=0, tau_inv=250)
spike_latency = _preset(-70.0, a=0.02, b=0.2, c=-65, d=6, tau_inv=250)
subthreshold_oscillation = _preset(-62.0, a=0.05, b=0.26, c=-60, d=0, tau_inv=250)
resonator = _preset(-62.0, a=0.1, b=0.26, c=-60, d=-1, tau_inv=250)
integrator = _preset(-60.0, a=0.02, b=-0.1, c=-55, d=6, mn=4.1, bias=108, tau_inv=250)
rebound_spike = _preset(-64.0, a=0.03, b=0.25, c=-60, d=4, tau_inv=200)
rebound_burst = _preset(-64.0, a=0.03, b=0.25, c=-52, d=0, tau_inv=200)
threshold_variability = _preset(-64.0, a=0.03, b=0.25, c=-60, d=4, tau_inv=250)
bistability = _preset(-61.0, a=0.1, b=0.26, c=-60, d=0, tau_inv=250)
dap = _preset(-70.0, a=1.0, b=0.2, c=-60, d=-21, tau_inv=100)
accomodation = _preset(-65.0, -16.0, a=0.02, b=1.0, c=-55, d=4, tau_inv=500)
inhibition_induced_spiking = _preset(-63.8, a=-0.02, b=-1.0, c=-60, d=8, tau_inv=250)
inhibition_induced_bursting = _preset(-63.8, a=-0.026, b=-1.0, c=-45, d=-2, tau_inv=250)


def _izh_update(x_in, v, u, q, dt, spike) -> tuple:
    k = q["tau_inv"] * dt
    v_new = v + k * (q["sq"] * gp.square(v) + q["mn"] * v + q["bias"] - u + x_in)
    u_new = u + k * q["a"] * (q["b"] * v - u)
    z = spike(v_new - q["v_th"])
    v_new = (1.0 - z) * v_new + z * q["c"]
    return z, v_new, (1.0 - z) * u_new + z * (u_new + q["d"])


def _field(s, name: str, op: str, shape: tuple, x: Array) -> Array:
    """A state field as an Array of ``shape``: a number (a preset's) is broadcast."""
    if isinstance(s, numbers.Real) and not isinstance(s, bool):
        return _full(float(s), shape, x)
    if not isinstance(s, Array):
        if hasattr(s, "detach"):   # a torch tensor from a Norse preset
            return _full(_float(s, f"state.{name}", op), shape, x)
        raise TypeError(f"{op}: state.{name} must be a grilly Array or a number, got "
                        f"{type(s).__name__}")
    if s.device != x.device:
        raise ValueError(f"{op}: state.{name} is on {s.device}, the input on {x.device}; move "
                         "the state with to_device() (or start a new one: None)")
    if not _broadcasts_to(s.shape, shape):
        raise ValueError(f"{op}: state.{name} has shape {tuple(s.shape)}, which does not "
                         f"broadcast to the layer's shape {tuple(shape)}")
    return s if s.dtype == x.dtype else gp.astype(s, x.dtype)


def _state(state, kind, op: str, shape: tuple, x: Array) -> tuple:
    if not isinstance(state, tuple) or not all(hasattr(state, f) for f in kind._fields):
        raise TypeError(f"{op}: state must be a {kind.__name__} {kind._fields}, got "
                        f"{type(state).__name__}")
    return tuple(_field(getattr(state, f), f, op, shape, x) for f in kind._fields)


def _izh_params(p, op: str, x: Array, shape: tuple) -> tuple:
    q = _params(p, IzhikevichParameters, op, x, shape)
    return q, _spike_fn(q["method"], q["alpha"], op)


def izhikevich_feed_forward_step(input_current: Array, s: IzhikevichState,
                                 p: IzhikevichParameters, dt: float = 0.001) -> tuple:
    """One Euler step of Norse's Izhikevich neuron: (spikes, IzhikevichState)."""
    op = "izhikevich_feed_forward_step"
    x = F._check_input(input_current, op, "input_current")
    q, spike = _izh_params(p, op, x, x.shape)
    st = _state(s, IzhikevichState, op, x.shape, x)
    return _izh_ff_update(x, st, q, _dt(dt, op), spike)


def _izh_ff_update(x, st, q, dt, spike) -> tuple:
    v, u = st
    z, v, u = _izh_update(x, v, u, q, dt, spike)
    return z, IzhikevichState(v, u)


def _izh_rec(x_in, st, w_rec, q, dt, spike) -> tuple:
    z0, v, u = st
    z, v, u = _izh_update(x_in + NF.linear(z0, w_rec), v, u, q, dt, spike)
    return z, IzhikevichRecurrentState(z, v, u)


def izhikevich_recurrent_step(input_current: Array, s: IzhikevichRecurrentState,
                              input_weights: Array, recurrent_weights: Array,
                              p: IzhikevichParameters, dt: float = 0.001) -> tuple:
    """One Euler step of Norse's recurrent Izhikevich neuron on input_current input_weights^T
    + z recurrent_weights^T: (spikes, IzhikevichRecurrentState)."""
    op = "izhikevich_recurrent_step"
    x = F._check_input(input_current, op, "input_current")
    hidden = _check_weights(x, input_weights, recurrent_weights, op)
    shape = (*x.shape[:-1], hidden)
    q, spike = _izh_params(p, op, x, shape)
    st = _state(s, IzhikevichRecurrentState, op, shape, x)
    return _izh_rec(NF.linear(x, input_weights), st, recurrent_weights, q, _dt(dt, op), spike)


def _behavior(spiking_method, op: str) -> IzhikevichSpikingBehavior:
    if not (isinstance(spiking_method, tuple) and hasattr(spiking_method, "p")
            and hasattr(spiking_method, "s")):
        raise TypeError(f"{op}: spiking_method must be an IzhikevichSpikingBehavior (p, s), e.g. "
                        f"tonic_spiking, got {type(spiking_method).__name__}")
    return spiking_method


class _IzhMixin:
    """The Izhikevich modules' first state: the preset's for None."""

    _kind = IzhikevichParameters

    def _first(self, state, q: dict, shape: tuple, x: Array, op: str, seq: bool):
        kind = self._state_kind
        if state is not None:
            return kind(*_state(state, kind, op, shape, x))
        s = self.spiking_method.s
        st = (_field(s.v, "v", op, shape, x), _field(s.u, "u", op, shape, x))
        # (the initial membrane is a detached copy, as Norse's)
        st = tuple(_full(t.detach(), shape, x) for t in st)
        if kind is IzhikevichRecurrentState:
            st = (_zeros(shape, x), *st)
        return kind(*st)


class _IzhFeedForward(_IzhMixin, _Norse):
    """The feed-forward neuron's state and step; the preset kept as ``spiking_method``."""

    _state_kind = IzhikevichState
    _step = staticmethod(_izh_ff_update)

    def __init__(self, spiking_method: IzhikevichSpikingBehavior, dt: float) -> None:
        _behavior(spiking_method, type(self).__name__)
        super().__init__(spiking_method.p, dt)
        self.spiking_method = spiking_method


class IzhikevichCell(_IzhFeedForward):
    """Norse's ``IzhikevichCell(spiking_method)``: one step, ``z, state = cell(x, state)``;
    state None starts from the preset's state."""

    def __init__(self, spiking_method: IzhikevichSpikingBehavior, dt: float = 0.001) -> None:
        super().__init__(spiking_method, dt)

    def forward(self, input_tensor: Array, state: IzhikevichState | None = None) -> tuple:
        """(spikes, IzhikevichState) after one step."""
        return self._one(input_tensor, state)


class Izhikevich(_IzhFeedForward):
    """Norse's ``Izhikevich(spiking_method)``: the neuron over the first axis of (T, ...):
    (spikes (T, ...), the last IzhikevichState, or every step's with ``record_states``)."""

    def __init__(self, spiking_method: IzhikevichSpikingBehavior, dt: float = 0.001,
                 record_states: bool = False) -> None:
        super().__init__(spiking_method, dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: IzhikevichState | None = None) -> tuple:
        """(spikes (T, ...), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)


class _IzhRecurrent(_IzhMixin, _Recurrent):
    _state_kind = IzhikevichRecurrentState
    _step = staticmethod(_izh_rec)

    def __init__(self, input_size, hidden_size, spiking_method, input_weights,
                 recurrent_weights, autapses, dt) -> None:
        _behavior(spiking_method, type(self).__name__)
        super().__init__(input_size, hidden_size, spiking_method.p, input_weights,
                         recurrent_weights, autapses, dt)
        self.spiking_method = spiking_method


class IzhikevichRecurrentCell(_IzhRecurrent):
    """Norse's ``IzhikevichRecurrentCell(input_size, hidden_size, spiking_method)``: one step
    of the recurrent neuron; state an IzhikevichRecurrentState or None (the preset's, no
    spikes)."""

    def __init__(self, input_size: int, hidden_size: int,
                 spiking_method: IzhikevichSpikingBehavior, input_weights: Array | None = None,
                 recurrent_weights: Array | None = None, autapses: bool = False,
                 dt: float = 0.001) -> None:
        super().__init__(input_size, hidden_size, spiking_method, input_weights,
                         recurrent_weights, autapses, dt)

    def forward(self, input_tensor: Array, state: IzhikevichRecurrentState | None = None
                ) -> tuple:
        """(spikes (..., hidden), IzhikevichRecurrentState) after one step."""
        return self._one(input_tensor, state)


class IzhikevichRecurrent(_IzhRecurrent):
    """Norse's ``IzhikevichRecurrent(input_size, hidden_size, spiking_method)``: the recurrent
    neuron over the first axis of (T, ..., input_size)."""

    def __init__(self, input_size: int, hidden_size: int,
                 spiking_method: IzhikevichSpikingBehavior, input_weights: Array | None = None,
                 recurrent_weights: Array | None = None, autapses: bool = False,
                 dt: float = 0.001, record_states: bool = False) -> None:
        super().__init__(input_size, hidden_size, spiking_method, input_weights,
                         recurrent_weights, autapses, dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: IzhikevichRecurrentState | None = None
                ) -> tuple:
        """(spikes (T, ..., hidden), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)
