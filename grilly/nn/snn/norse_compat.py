"""Norse's (``norse.torch``) neuron API on grilly Arrays, so that a Norse model ports by changing
imports: parameters and states as named tuples (``LIFParameters``, ``LIFState``,
``LIFFeedForwardState``, ``LIParameters``, ``LIState``, ``LIFBoxParameters``, ...), the cells
(one step, ``(input, state) -> (output, state)``), the multi-step modules over the first axis,
``SequentialState``, and the functional steps with ``dt``. Also importable as
``grilly.nn.snn.norse``.

Norse integrates the current-based LIF neuron with explicit Euler steps of ``dt`` (seconds):

    i' = i + x;  v' = v + dt tau_mem_inv ((v_leak - v) + i');  i_next = i' - dt tau_syn_inv i'
    z = H(v' - v_th);  v_next = (1 - z) v' + z v_reset

(the reset keeps its surrogate gradient in the feed-forward neurons, and is detached in the
recurrent ones, as Norse's ``lif_step``). ``LIF`` runs this as two fused kernels (the current's
leaky scan and grilly's fused LIF with an in-step reset to zero of u = v - v_reset) where the
threshold method's gradient is one the kernels have (``"super"``, Norse's default); otherwise,
and with ``record_states=True``, step by step. docs/snn.md ("Norse") lists what maps to what.
"""
from __future__ import annotations

import inspect
import math
import numbers
from typing import Callable, NamedTuple

from ...array import api as gp

from ...array.array import Array
from ... import random as _random
from .. import functional as NF
from ..module import Module, Sequential
from ..parameter import Parameter
from ..rnn import _RNNBase
from . import functional as F
from . import fused as _fused
from .surrogate import Surrogate, fast_sigmoid
from .surrogate import heaviside as _step

__all__ = ["LIFParameters", "LIFState", "LIFFeedForwardState", "LIParameters", "LIState",
           "LIFBoxParameters", "LIFBoxState", "LIFBoxFeedForwardState", "LIFCell", "LIF",
           "LIFRecurrentCell", "LIFRecurrent", "LICell", "LI", "LILinearCell", "LIFBoxCell",
           "LIFBox", "SequentialState", "lif_feed_forward_step", "lif_feed_forward_integral",
           "lif_step", "li_feed_forward_step", "li_step", "lif_box_feed_forward_step",
           "threshold", "heaviside", "reset_value", "reset_subtract", "default_bio_parameters",
           "METHODS", "lif_current_encoder", "constant_current_lif_encode",
           "spike_latency_lif_encode", "spike_latency_encode", "poisson_encode",
           "poisson_encode_step", "signed_poisson_encode", "signed_poisson_encode_step",
           "ConstantCurrentLIFEncoder", "SpikeLatencyLIFEncoder", "SpikeLatencyEncoder",
           "PoissonEncoder", "PoissonEncoderStep", "SignedPoissonEncoder",
           "SignedPoissonEncoderStep", "LIBoxParameters", "LIBoxState", "LIBoxCell",
           "li_box_step", "li_box_feed_forward_step"]

METHODS = ("super", "heaviside", "triangle", "tanh", "circ", "heavi_erfc")


# ---- parameters and states (Norse's named tuples; floats by default) ---------------------------

def reset_value(z: Array, v: Array, reset, th) -> Array:
    """Norse's ``reset_value``: a spiking neuron is set to ``reset``, (1 - z) v + z reset."""
    return (1.0 - z) * v + z * reset


def reset_subtract(z: Array, v: Array, reset, th) -> Array:
    """Norse's ``reset_subtract``: a spiking neuron loses the threshold, (1 - z) v + z (v - th)."""
    return (1.0 - z) * v + z * (v - th)


class LIFParameters(NamedTuple):
    """Norse's LIF parameters: inverse time constants (1/s), potentials, the threshold method
    (``METHODS``; ``"adjoint"`` is not supported) and its ``alpha``. Floats or Arrays."""

    tau_syn_inv: float | Array = 1.0 / 5e-3
    tau_mem_inv: float | Array = 1.0 / 1e-2
    v_leak: float | Array = 0.0
    v_th: float | Array = 1.0
    v_reset: float | Array = 0.0
    method: str = "super"
    alpha: float = 100.0


default_bio_parameters = LIFParameters(tau_syn_inv=1 / 0.5, tau_mem_inv=1 / 20.0, v_leak=-65.0,
                                       v_th=-50.0, v_reset=-65.0)


class LIFState(NamedTuple):
    """A recurrent LIF layer's state: its spikes ``z``, membrane ``v`` and current ``i``."""

    z: Array
    v: Array
    i: Array


class LIFFeedForwardState(NamedTuple):
    """A feed-forward LIF layer's state: membrane ``v`` and synaptic current ``i``."""

    v: Array
    i: Array


class LIParameters(NamedTuple):
    """Norse's leaky-integrator parameters (inverse time constants in 1/s, the leak potential)."""

    tau_syn_inv: float | Array = 1.0 / 5e-3
    tau_mem_inv: float | Array = 1.0 / 1e-2
    v_leak: float | Array = 0.0


class LIState(NamedTuple):
    """A leaky integrator's state: membrane ``v`` and current ``i``."""

    v: Array
    i: Array


class LIFBoxParameters(NamedTuple):
    """Norse's current-free LIF parameters, with its ``reset_method`` (``reset_value`` or
    ``reset_subtract``; another function of (z, v, v_reset, v_th) runs step by step)."""

    tau_mem_inv: float | Array = 1.0 / 1e-2
    v_leak: float | Array = 0.0
    v_th: float | Array = 1.0
    v_reset: float | Array = 0.0
    method: str = "super"
    alpha: float = 100.0
    reset_method: Callable = reset_value


class LIFBoxState(NamedTuple):
    """A current-free LIF layer's state with its spikes: ``z``, ``v``."""

    z: Array
    v: Array


class LIFBoxFeedForwardState(NamedTuple):
    """A current-free feed-forward LIF layer's state: the membrane ``v``."""

    v: Array


class LIBoxParameters(NamedTuple):
    """Norse's current-free leaky-integrator parameters: tau_mem_inv (1/s) and v_leak."""

    tau_mem_inv: float | Array = 1.0 / 1e-2
    v_leak: float | Array = 0.0


class LIBoxState(NamedTuple):
    """A current-free leaky integrator's state: the membrane ``v``."""

    v: Array


# ---- threshold methods (Norse's surrogate gradients) -------------------------------------------

class _NorseTriangle(Surrogate):
    name = "triangle"

    def __init__(self, alpha: float):
        self.alpha = alpha

    def grad(self, x):
        return self.alpha * gp.maximum(1.0 - gp.abs(x), 0.0)


class _HeaviTanh(Surrogate):
    name = "tanh"

    def __init__(self, k: float):
        self.k = k

    def grad(self, x):
        return 1.0 - gp.square(gp.tanh(self.k * x))


class _HeaviCirc(Surrogate):
    name = "circ"

    def __init__(self, alpha: float):
        self.alpha = alpha

    def grad(self, x):
        # d/dx of x / (2 sqrt(x^2 + a^2)), times 2a as Norse scales it: a^3 / (x^2 + a^2)^1.5
        a2 = self.alpha * self.alpha
        r = gp.square(x) + a2
        return (a2 * self.alpha) / (r * gp.sqrt(r))


class _HeaviErfc(Surrogate):
    name = "heavi_erfc"

    def __init__(self, k: float):
        self.k = k

    def grad(self, x):
        return (2.0 / math.sqrt(math.pi)) * gp.exp(-gp.square(self.k * x))


def _spike_fn(method, alpha, op: str):
    """The spike function of Norse's threshold ``method``: Heaviside forward (x > 0), its
    gradient as Norse computes it ("super": 1 / (|x| + 1)^2; Norse 1.1 ignores alpha there)."""
    if method == "adjoint":
        raise NotImplementedError(f"{op}: method='adjoint' (Norse's adjoint equations) is not "
                                  "supported; use a surrogate method, e.g. 'super'")
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"{op}: method must be one of {METHODS}, got {method!r}")
    if method == "super":
        return _SUPER
    if method == "heaviside":
        return _step
    a = _float(alpha, "alpha", op)
    return {"triangle": _NorseTriangle, "tanh": _HeaviTanh, "circ": _HeaviCirc,
            "heavi_erfc": _HeaviErfc}[method](a)


_SUPER = fast_sigmoid(1.0)   # SuperSpike as Norse 1.1 computes it: the fused kernels have it


def threshold(x: Array, method: str, alpha: float) -> Array:
    """Norse's ``threshold``: spikes where x > 0, with ``method``'s surrogate gradient."""
    return _spike_fn(method, alpha, "threshold")(F._check_input(x, "threshold", "x"))


def heaviside(data: Array) -> Array:
    """Norse's ``heaviside``: 1 where data > 0 else 0, in data's dtype (no gradient)."""
    return _step(F._check_input(data, "heaviside", "data"))


# ---- argument checks -------------------------------------------------------------------------

def _float(v, name: str, op: str) -> float:
    if isinstance(v, bool):
        raise TypeError(f"{op}: {name} must be a number, got bool")
    if isinstance(v, numbers.Real):
        return float(v)
    if hasattr(v, "__array__") or hasattr(v, "__dlpack__") or isinstance(v, Array):
        try:
            return float(v.item() if hasattr(v, "item") else v)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"{op}: {name} must be a number, got {type(v).__name__}")


def _dt(dt, op: str) -> float:
    d = _float(dt, "dt", op)
    if not (d > 0 and math.isfinite(d)):
        raise ValueError(f"{op}: dt must be a finite number > 0 (seconds), got {dt!r}")
    return d


def _value(v, name: str, op: str, like: Array):
    """A parameter as used in the equations: a float, or an Array (per-neuron or learnable) in
    the input's dtype (the layer computes in it, as the fused kernels do)."""
    if isinstance(v, Array):
        return v if v.dtype == like.dtype else gp.astype(v, like.dtype)
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, (list, tuple)) or hasattr(v, "__array__") or hasattr(v, "__dlpack__"):
        if hasattr(v, "detach"):   # a torch tensor, as in a Norse script
            if getattr(v, "requires_grad", False):
                raise TypeError(f"{op}: p.{name} is a torch tensor that requires grad; torch "
                                "cannot learn it through grilly: use a grilly "
                                "nn.Parameter(gp.asarray(...))")
            v = v.detach().cpu().numpy()
        try:
            arr = gp.asarray(v, dtype=like.dtype, device=like.device)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{op}: p.{name} must be a float or an array of numbers, got "
                            f"{type(v).__name__} ({e})") from None
        return float(arr) if arr.ndim == 0 else arr
    raise TypeError(f"{op}: p.{name} must be a float or an Array, got {type(v).__name__}")


def _params(p, kind, op: str, like: Array, shape: tuple) -> dict:
    """p's fields for the equations; a per-neuron Array must broadcast to the layer's
    ``shape`` (a ValueError names the field)."""
    if not isinstance(p, tuple) or not all(hasattr(p, f) for f in kind._fields):
        raise TypeError(f"{op}: p must be a {kind.__name__} {kind._fields}, got "
                        f"{type(p).__name__}")
    out = {}
    for f in kind._fields:
        v = getattr(p, f)
        if f == "alpha" or f == "method":
            out[f] = v
        elif f == "reset_method":
            if not callable(v) or _is_torch_fn(v):
                raise TypeError(f"{op}: p.reset_method must be reset_value, reset_subtract or "
                                f"a function of grilly Arrays (z, v, v_reset, v_th), got {v!r}")
            out[f] = v
        else:
            out[f] = _value(v, f, op, like)
            if isinstance(out[f], Array) and not _broadcasts_to(out[f].shape, shape):
                raise ValueError(f"{op}: p.{f} has shape {tuple(out[f].shape)}, which does not "
                                 f"broadcast to the layer's shape {tuple(shape)}")
    return out


def _is_torch_fn(fn) -> bool:
    mod = (getattr(fn, "__module__", "") or "").split(".")[0]
    return mod in ("torch", "norse")


def _check_state(state, kind, op: str, shape: tuple, like: Array, *,
                 shapes_from=None) -> tuple:
    """The state's fields as Arrays broadcasting to ``shape`` (a ValueError names the field),
    on the input ``like``'s device and in its dtype."""
    if not isinstance(state, tuple) or not all(hasattr(state, f) for f in kind._fields):
        raise TypeError(f"{op}: state must be a {kind.__name__} {kind._fields} or None, got "
                        f"{type(state).__name__}")
    out = []
    for f in kind._fields:
        s = getattr(state, f)
        if not isinstance(s, Array):
            raise TypeError(f"{op}: state.{f} must be a grilly Array, got {type(s).__name__}")
        if s.device != like.device:
            # (a state carried over from before a model.to(device): say which one)
            raise ValueError(f"{op}: state.{f} is on {s.device}, the input on {like.device}; "
                             "move the state with to_device() (or start a new one: None)")
        if not _broadcasts_to(s.shape, shape):
            raise ValueError(f"{op}: state.{f} has shape {tuple(s.shape)}, which does not "
                             f"broadcast to the layer's shape {tuple(shape)}"
                             f"{shapes_from or ''}")
        out.append(s if s.dtype == like.dtype else gp.astype(s, like.dtype))
    return tuple(out)


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    try:
        return tuple(gp.broadcast_shapes(tuple(shape), tuple(target))) == tuple(target)
    except (ValueError, TypeError):
        return False


def _check_weights(x: Array, w_in, w_rec, op: str) -> int:
    for name, w in (("input_weights", w_in), ("recurrent_weights", w_rec)):
        if w is not None and (not isinstance(w, Array) or w.ndim != 2):
            raise ValueError(f"{op}: {name} must be a 2-d grilly Array (out, in), got "
                             f"{getattr(w, 'shape', type(w).__name__)}")
    hidden = w_in.shape[0]
    if x.ndim < 1 or x.shape[-1] != w_in.shape[1]:
        raise ValueError(f"{op}: input has {x.shape[-1] if x.ndim else 0} features (last axis of "
                         f"shape {tuple(x.shape)}), but input_weights {tuple(w_in.shape)} wants "
                         f"{w_in.shape[1]}")
    if w_rec is not None and tuple(w_rec.shape) != (hidden, hidden):
        raise ValueError(f"{op}: recurrent_weights must be ({hidden}, {hidden}) for "
                         f"{hidden} neurons, got {tuple(w_rec.shape)}")
    return hidden


# ---- one step (Norse's Euler step, its order of operations) ---------------------------------

def _lif_update(i_jump, v, q, dt, spike, detach_reset):
    dv = (dt * q["tau_mem_inv"]) * ((q["v_leak"] - v) + i_jump)
    v_decayed = v + dv
    i_decayed = i_jump + (-dt * q["tau_syn_inv"]) * i_jump
    z = spike(v_decayed - q["v_th"])
    zr = z.detach() if detach_reset else z
    return z, (1.0 - zr) * v_decayed + zr * q["v_reset"], i_decayed


def lif_feed_forward_step(input_spikes: Array, state: LIFFeedForwardState,
                          p: LIFParameters = LIFParameters(), dt: float = 0.001) -> tuple:
    """One Euler step of Norse's feed-forward LIF: (spikes, LIFFeedForwardState); the reset
    keeps its gradient (as Norse's)."""
    return _ff_step(input_spikes, state, p, dt, "lif_feed_forward_step")


def _ff_step(x, state, p, dt, op: str, arg: str = "input_spikes") -> tuple:
    return _ff_call(_lif_ff_update, x, state, p, dt, op, arg, LIFParameters,
                    LIFFeedForwardState, _ff_rest)


def _ff_rest(q: dict, shape: tuple, x: Array) -> LIFFeedForwardState:
    return LIFFeedForwardState(_rest(q, shape, x), _zeros(shape, x))


def _ff_call(step, x, state, p, dt, op: str, arg: str, kind, state_kind, state0) -> tuple:
    """A functional feed-forward step: x, p (a ``kind``), the state (``state0(q, shape, x)``
    for None) and dt checked, then ``step(x, state, q, dt, spike)``."""
    x = F._check_input(x, op, arg)
    q = _params(p, kind, op, x, x.shape)
    st = (state0(q, x.shape, x) if state is None
          else _check_state(state, state_kind, op, x.shape, x))
    return step(x, st, q, _dt(dt, op), _spike_fn(q["method"], q["alpha"], op))


def _rec_call(step, x, state, w_in, w_rec, p, dt, op: str, arg: str, kind, state_kind) -> tuple:
    """A functional recurrent step: x, the weights, p (a ``kind``), the state (None: the
    rest state, as the recurrent modules start) and dt checked, then ``step(x w_in^T, state,
    w_rec, q, dt, spike)``."""
    x = F._check_input(x, op, arg)
    hidden = _check_weights(x, w_in, w_rec, op)
    shape = (*x.shape[:-1], hidden)
    q = _params(p, kind, op, x, shape)
    st = (_rec_rest(state_kind, q, shape, x) if state is None
          else _check_state(state, state_kind, op, shape, x))
    return step(NF.linear(x, w_in), st, w_rec, q, _dt(dt, op),
                _spike_fn(q["method"], q["alpha"], op))


def _rec_rest(state_kind, q: dict, shape: tuple, x: Array) -> tuple:
    """The recurrent neurons' rest state: v = v_leak, an adaptive threshold b = v_th (both
    detached copies), every other field (z, i, a) zero."""
    def field(f):
        v = q.get({"v": "v_leak", "b": "v_th"}.get(f, ""))
        if v is None:
            return _zeros(shape, x)
        return _full(v.detach() if isinstance(v, Array) else v, shape, x)
    return state_kind(*(field(f) for f in state_kind._fields))


def _lif_ff_update(x, st, q, dt, spike) -> tuple:
    v, i = st
    z, v, i = _lif_update(i + x, v, q, dt, spike, False)
    return z, LIFFeedForwardState(v, i)


def lif_step(input_spikes: Array, state: LIFState, input_weights: Array,
             recurrent_weights: Array, p: LIFParameters = LIFParameters(),
             dt: float = 0.001) -> tuple:
    """One Euler step of Norse's recurrent LIF: the current jumps by input_spikes
    input_weights^T + z recurrent_weights^T; (spikes, LIFState); the reset detached."""
    return _rec_call(_rec_step, input_spikes, state, input_weights, recurrent_weights, p, dt,
                     "lif_step", "input_spikes", LIFParameters, LIFState)


def _rec_step(x_in, st, w_rec, q, dt, spike):
    z0, v, i = st
    z, v, i = _lif_update(i + x_in + NF.linear(z0, w_rec), v, q, dt, spike, True)
    return z, LIFState(z, v, i)


def lif_feed_forward_integral(input_tensor: Array, state: LIFFeedForwardState,
                              p: LIFParameters = LIFParameters(), dt: float = 0.001) -> tuple:
    """Every step of ``input_tensor`` (T, ...): (spikes (T, ...), final LIFFeedForwardState),
    as fused kernels where the method allows (``LIF``'s path)."""
    op = "lif_feed_forward_integral"
    x = _check_seq(input_tensor, op, "input_tensor")
    q = _params(p, LIFParameters, op, x, x.shape[1:])
    st = _check_state(state, LIFFeedForwardState, op, x.shape[1:], x)
    return _lif_sequence(x, st, q, _dt(dt, op), op, fused=True, record=False)


def li_feed_forward_step(input_tensor: Array, state: LIState, p: LIParameters = LIParameters(),
                         dt: float = 0.001) -> tuple:
    """One Euler step of Norse's leaky integrator: (v, LIState)."""
    return _li_ff_step(input_tensor, state, p, dt, "li_feed_forward_step")


def _li_ff_step(x, state, p, dt, op: str) -> tuple:
    x = F._check_input(x, op, "input_tensor")
    q = _params(p, LIParameters, op, x, x.shape)
    if state is None:
        state = LIState(_rest(q, x.shape, x), _zeros(x.shape, x))
    v, i = _check_state(state, LIState, op, x.shape, x)
    return _li_update(i + x, v, q, _dt(dt, op))


def li_step(input_spikes: Array, state: LIState, input_weights: Array,
            p: LIParameters = LIParameters(), dt: float = 0.001) -> tuple:
    """One Euler step of Norse's leaky integrator on input_spikes input_weights^T: (v, LIState)."""
    return _li_lin_step(input_spikes, state, input_weights, p, dt, "li_step")


def _li_lin_step(x, state, input_weights, p, dt, op: str) -> tuple:
    x = F._check_input(x, op, "input_spikes")
    hidden = _check_weights(x, input_weights, None, op)
    shape = (*x.shape[:-1], hidden)
    q = _params(p, LIParameters, op, x, shape)
    if state is None:
        state = LIState(_rest(q, shape, x), _zeros(shape, x))
    v, i = _check_state(state, LIState, op, shape, x)
    return _li_update(i + NF.linear(x, input_weights), v, q, _dt(dt, op))


def _li_update(i_jump, v, q, dt):
    v_new = v + (dt * q["tau_mem_inv"]) * ((q["v_leak"] - v) + i_jump)
    return v_new, LIState(v_new, i_jump + (-dt * q["tau_syn_inv"]) * i_jump)


def lif_box_feed_forward_step(input_tensor: Array, state: LIFBoxFeedForwardState,
                              p: LIFBoxParameters = LIFBoxParameters(),
                              dt: float = 0.001) -> tuple:
    """One Euler step of Norse's current-free LIF: (spikes, LIFBoxFeedForwardState); the reset
    (``p.reset_method``) keeps its gradient."""
    return _box_step(input_tensor, state, p, dt, "lif_box_feed_forward_step")


def _box_step(x, state, p, dt, op: str) -> tuple:
    x = F._check_input(x, op, "input_tensor")
    q = _params(p, LIFBoxParameters, op, x, x.shape)
    if state is None:
        state = LIFBoxFeedForwardState(_rest(q, x.shape, x))
    (v,) = _check_state(state, LIFBoxFeedForwardState, op, x.shape, x)
    return _box_update(x, v, q, _dt(dt, op), _spike_fn(q["method"], q["alpha"], op))


def _box_update(x, v, q, dt, spike):
    v_decayed = v + (dt * q["tau_mem_inv"]) * (x + q["v_leak"] - v)
    z = spike(v_decayed - q["v_th"])
    return z, LIFBoxFeedForwardState(q["reset_method"](z, v_decayed, q["v_reset"], q["v_th"]))


def li_box_feed_forward_step(input_tensor: Array, state: LIBoxState,
                             p: LIBoxParameters = LIBoxParameters(), dt: float = 0.001) -> tuple:
    """One Euler step of Norse's current-free leaky integrator, v + dt tau_mem_inv ((v_leak -
    v) + x): (v, LIBoxState); state None starts from v = v_leak."""
    return _li_box(input_tensor, state, None, p, dt, "li_box_feed_forward_step")


def li_box_step(input_spikes: Array, state: LIBoxState, input_weights: Array,
                p: LIBoxParameters = LIBoxParameters(), dt: float = 0.001) -> tuple:
    """One Euler step of Norse's current-free leaky integrator on input_spikes
    input_weights^T: (v, LIBoxState)."""
    return _li_box(input_spikes, state, input_weights, p, dt, "li_box_step")


def _li_box(x, state, w_in, p, dt, op: str) -> tuple:
    x = F._check_input(x, op, "input_tensor" if w_in is None else "input_spikes")
    shape = x.shape if w_in is None else (*x.shape[:-1], _check_weights(x, w_in, None, op))
    q = _params(p, LIBoxParameters, op, x, shape)
    if state is None:
        state = LIBoxState(_rest(q, shape, x))
    (v,) = _check_state(state, LIBoxState, op, shape, x)
    i = x if w_in is None else NF.linear(x, w_in)
    v = v + (_dt(dt, op) * q["tau_mem_inv"]) * ((q["v_leak"] - v) + i)
    return v, LIBoxState(v)


# ---- all T steps: fused kernels where they compute Norse's equations -------------------------

def _check_seq(x, op: str, arg: str = "input_tensor") -> Array:
    x = F._check_input(x, op, arg)
    if x.ndim < 1 or x.shape[0] == 0:
        raise ValueError(f"{op}: {arg} must be (T, ...) with T >= 1 steps, got shape "
                         f"{tuple(x.shape)}")
    return x


def _fusable(x: Array, spike, record: bool, fused: bool) -> bool:
    # the kernels have the "super" gradient (fast_sigmoid(1)); the membrane of every step
    # (record_states) is not their trace under an in-step reset
    return (fused and not record and spike is _SUPER and x.ndim >= 2
            and _fused.supported(x, spike, detach_reset=False, return_mem=False, reset="zero",
                                 reset_delay=False))


def _first_plus(x: Array, s: Array | None) -> Array:
    """x (T, ...) with s added to its first step (x itself for s None: a zero current)."""
    if s is None:
        return x
    first = gp.expand_dims(x[0] + s, axis=0)
    return gp.concat([first, x[1:]], axis=0) if x.shape[0] > 1 else first


def _plus(x: Array, v) -> Array:
    """x + v, skipping a float 0 (an elementwise pass over every step saved)."""
    return x if isinstance(v, float) and v == 0.0 else x + v


def _full(v, shape: tuple, like: Array) -> Array:
    """v (a float or an Array broadcasting to ``shape``) as an Array of ``shape``."""
    if isinstance(v, Array):
        if tuple(v.shape) == tuple(shape):
            return v
        return gp.broadcast_to(v, shape) + _zeros(shape, like)
    return gp.full(shape, v, dtype=like.dtype, device=like.device)


def _zeros(shape: tuple, like: Array) -> Array:
    return gp.zeros(shape, dtype=like.dtype, device=like.device)


def _stack(kind, states: list):
    """Every step's state stacked on a new first axis (nested states field by field)."""
    fields = []
    for f in kind._fields:
        vals = [getattr(s, f) for s in states]
        if isinstance(vals[0], tuple):
            fields.append(_stack(type(vals[0]), vals))
        else:
            fields.append(gp.stack(vals, axis=0))
    return kind(*fields)


def _run(x: Array, st, step: Callable, kind, record: bool) -> tuple:
    """``step(x_t, state) -> (out, state)`` over the first axis of x: (the outputs stacked,
    the last state, or every step's stacked as ``kind`` with ``record``)."""
    outs, states = [], []
    for xt in gp.unstack(x, axis=0):
        z, st = step(xt, st)
        outs.append(z)
        states.append(st)
    return gp.stack(outs, axis=0), _stack(kind, states) if record else st


def _rest(q: dict, shape: tuple, like: Array) -> Array:
    """The initial membrane v = v_leak (shape ``shape``), detached from a learnable v_leak:
    Norse starts from a detached copy (``clone_tensor(p.v_leak)``), so v_leak's gradient
    comes only through the equations."""
    v = q["v_leak"]
    return _full(v.detach() if isinstance(v, Array) else v, shape, like)


def _lif_sequence(x, st, q, dt, op, *, fused: bool, record: bool) -> tuple:
    spike = _spike_fn(q["method"], q["alpha"], op)
    v0, i0 = st
    if not _fusable(x, spike, record, fused):
        st = LIFFeedForwardState(v0, i0 if i0 is not None else _zeros(x.shape[1:], x))
        return _run(x, st, lambda xt, s: _lif_ff_update(xt, s, q, dt, spike),
                    LIFFeedForwardState, record)
    shape = tuple(x.shape[1:])
    # the current i'[t] = i'[t-1] (1 - dt/tau_syn) + x[t] is a leaky scan (the kept i enters
    # at the first step); with u = v - v_reset the membrane is grilly's LIF: u' = beta u +
    # c (i' + v_leak - v_reset), beta = 1 - c, c = dt/tau_mem, a spike when u' > v_th - v_reset
    # resetting u to 0 in its step, the reset keeping its gradient
    a = 1.0 - dt * q["tau_syn_inv"]
    c = dt * q["tau_mem_inv"]
    cur = _fused.synaptic_current(_first_plus(x, i0), gp.zeros(shape, dtype=x.dtype,
                                                              device=x.device), a)
    drive = c * _plus(cur, q["v_leak"] - q["v_reset"])
    thr = q["v_th"] - q["v_reset"]
    spk, u = _fused.lif_sequence(drive, _full(v0 - q["v_reset"], shape, x), 1.0 - c, thr,
                                 reset="zero", reset_delay=False, surrogate=spike,
                                 detach_reset=False)
    return spk, LIFFeedForwardState(u + q["v_reset"], a * cur[-1])


def _li_sequence(x, st, q, dt, *, fused: bool, record: bool) -> tuple:
    v0, i0 = st
    if not (fused and x.ndim >= 2 and x.dtype in (gp.float32, gp.float64)):
        st = LIState(v0, i0 if i0 is not None else _zeros(x.shape[1:], x))
        return _run(x, st, lambda xt, s: _li_update(s.i + xt, s.v, q, dt), LIState, record)
    shape = tuple(x.shape[1:])
    # two leaky scans: the current as in LIF, then v[t] = (1 - c) v[t-1] + c (v_leak + i'[t])
    a = 1.0 - dt * q["tau_syn_inv"]
    c = dt * q["tau_mem_inv"]
    cur = _fused.synaptic_current(_first_plus(x, i0), gp.zeros(shape, dtype=x.dtype,
                                                              device=x.device), a)
    v = _fused.synaptic_current(c * _plus(cur, q["v_leak"]), _full(v0, shape, x), 1.0 - c)
    if record:
        return v, LIState(v, a * cur)
    return v, LIState(v[-1], a * cur[-1])


def _box_sequence(x, v0, q, dt, op, *, fused: bool, record: bool) -> tuple:
    spike = _spike_fn(q["method"], q["alpha"], op)
    rm = q["reset_method"]
    if not (_fusable(x, spike, record, fused) and rm in (reset_value, reset_subtract)):
        return _run(x, LIFBoxFeedForwardState(v0),
                    lambda xt, s: _box_update(xt, s.v, q, dt, spike), LIFBoxFeedForwardState,
                    record)
    shape = tuple(x.shape[1:])
    c = dt * q["tau_mem_inv"]
    # reset_value: u = v - v_reset reset to 0 in its step; reset_subtract: v loses v_th
    shift = q["v_reset"] if rm is reset_value else 0.0
    thr = q["v_th"] - shift
    spk, u = _fused.lif_sequence(c * (x + (q["v_leak"] - shift)), _full(v0 - shift, shape, x),
                                 1.0 - c, thr,
                                 reset="zero" if rm is reset_value else "subtract",
                                 reset_delay=False, surrogate=spike, detach_reset=False)
    return spk, LIFBoxFeedForwardState(u + shift)


# ---- modules ---------------------------------------------------------------------------------

class _Norse(Module):
    """Shared: the parameters (kept as given: Norse does not register them as the module's
    parameters), dt, and the initial state."""

    _kind = LIFParameters

    def __init__(self, p, dt: float) -> None:
        super().__init__()
        op = type(self).__name__
        if not isinstance(p, tuple) or not all(hasattr(p, f) for f in self._kind._fields):
            raise TypeError(f"{op}: p must be a {self._kind.__name__} {self._kind._fields}, got "
                            f"{type(p).__name__}")
        if "method" in self._kind._fields:
            _spike_fn(p.method, p.alpha, op)   # an unknown method fails here, not at the call
        self.p, self.dt = p, _dt(dt, op)

    def _q(self, x: Array, shape: tuple) -> dict:
        return _params(self.p, self._kind, type(self).__name__, x, shape)

    def _v0(self, q: dict, shape: tuple, x: Array) -> Array:
        return _rest(q, shape, x)

    def _zeros(self, shape: tuple, x: Array) -> Array:
        return _zeros(shape, x)

    # The step-by-step neurons state only their own part: ``_state_kind`` (the state they
    # carry), ``_state0`` (the state for None) and ``_step(x, state, q, dt, spike) -> (out,
    # state)``; ``_one`` and ``_all`` run them for one step or over the first axis.
    _state_kind = None
    _arg = "input_tensor"                         # the input's name in a cell's errors
    _shapes_from = " (one step of the input)"     # said of a bad state of a sequence

    def _shape(self, x: Array, op: str, seq: bool) -> tuple:
        """The layer's shape: one step of the input."""
        return tuple(x.shape[1:]) if seq else x.shape

    def _first(self, state, q: dict, shape: tuple, x: Array, op: str, seq: bool):
        """The first state: ``_state0`` for None, else ``state`` checked."""
        if state is None:
            return self._state0(q, shape, x)
        kind = self._state_kind
        return kind(*_check_state(state, kind, op, shape, x,
                                  shapes_from=self._shapes_from if seq else None))

    def _begin(self, input_tensor: Array, state, seq: bool) -> tuple:
        """(x, parameters, first state, spike function) of a call; ``seq``: x is (T, ...)."""
        op = type(self).__name__
        x = _check_seq(input_tensor, op) if seq else F._check_input(input_tensor, op, self._arg)
        shape = self._shape(x, op, seq)
        q = self._q(x, shape)
        st = self._first(state, q, shape, x, op, seq)
        return x, q, st, _spike_fn(q["method"], q["alpha"], op)

    def _one(self, input_tensor: Array, state) -> tuple:
        """One step: (out, state)."""
        x, q, st, spike = self._begin(input_tensor, state, False)
        return self._step(x, st, q, self.dt, spike)

    def _all(self, input_tensor: Array, state) -> tuple:
        """Every step of (T, ...): (outs (T, ...), the last state or every step's)."""
        x, q, st, spike = self._begin(input_tensor, state, True)
        return _run(x, st, lambda xt, s: self._step(xt, s, q, self.dt, spike), self._state_kind,
                    self.record_states)

    def extra_repr(self) -> str:
        return f"p={self.p}, dt={self.dt}"


class _Sequence(_Norse):
    """Shared by the multi-step modules: ``record_states``, grilly's ``fused`` option, and the
    start of a run (the input checked as (T, ...), the parameters, the first state)."""

    def __init__(self, p, dt: float, record_states: bool, fused: bool) -> None:
        super().__init__(p, dt)
        self.record_states, self.fused = bool(record_states), bool(fused)

    def _start(self, input_tensor: Array, state, kind) -> tuple:
        """(op, x, parameters, state tuple): a None state is v = v_leak and every other field
        None (a current of 0, which the fused paths need not add)."""
        op = type(self).__name__
        x = _check_seq(input_tensor, op)
        shape = tuple(x.shape[1:])
        q = self._q(x, shape)
        if state is None:
            return op, x, q, (self._v0(q, shape, x),) + (None,) * (len(kind._fields) - 1)
        return op, x, q, _check_state(state, kind, op, shape, x,
                                      shapes_from=" (one step of the input)")


class LIFCell(_Norse):
    """Norse's ``LIFCell``: one step of the feed-forward LIF, ``z, state = cell(x, state)``;
    state None starts from v = v_leak, i = 0."""

    def __init__(self, p: LIFParameters = LIFParameters(), dt: float = 0.001) -> None:
        super().__init__(p, dt)

    def forward(self, input_tensor: Array, state: LIFFeedForwardState | None = None) -> tuple:
        """(spikes, LIFFeedForwardState) after one step."""
        return _ff_step(input_tensor, state, self.p, self.dt, type(self).__name__,
                        "input_tensor")


class LIF(_Sequence):
    """Norse's ``LIF``: the feed-forward LIF over the first axis of ``input_tensor`` (T, ...),
    returning (spikes (T, ...), the last step's LIFFeedForwardState, or every step's stacked
    with ``record_states=True``). Two fused kernel calls for the "super" method (grilly's
    ``fused=False``: step by step)."""

    def __init__(self, p: LIFParameters = LIFParameters(), dt: float = 0.001,
                 record_states: bool = False, fused: bool = True) -> None:
        super().__init__(p, dt, record_states, fused)

    def forward(self, input_tensor: Array, state: LIFFeedForwardState | None = None) -> tuple:
        """(spikes (T, ...), state) over every step of ``input_tensor``."""
        op, x, q, st = self._start(input_tensor, state, LIFFeedForwardState)
        return _lif_sequence(x, st, q, self.dt, op, fused=self.fused, record=self.record_states)


class _Recurrent(_Norse):
    """Norse's recurrent cells' weights: ``input_weights`` (hidden, input) and
    ``recurrent_weights`` (hidden, hidden), N(0, 2/hidden); without autapses the recurrent
    diagonal is zero and gets no gradient."""

    _state_kind = LIFState
    _step = staticmethod(_rec_step)

    def __init__(self, input_size: int, hidden_size: int, p, input_weights, recurrent_weights,
                 autapses: bool, dt: float) -> None:
        super().__init__(p, dt)
        op = type(self).__name__
        for name, n in (("input_size", input_size), ("hidden_size", hidden_size)):
            if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
                raise ValueError(f"{op}: {name} must be an int >= 1, got {n!r}")
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.autapses = bool(autapses)
        scale = math.sqrt(2.0 / self.hidden_size)
        self.input_weights = self._weight(input_weights, (self.hidden_size, self.input_size),
                                          "input_weights", scale)
        self.recurrent_weights = self._weight(recurrent_weights,
                                              (self.hidden_size, self.hidden_size),
                                              "recurrent_weights", scale)
        if not self.autapses:
            w = self.recurrent_weights
            eye = gp.eye(self.hidden_size, dtype=w.dtype, device=w.device)
            # the diagonal zeroed in place (Norse's fill_diagonal_), so that a Parameter the
            # caller passed stays the module's and gets the gradients
            w.detach()[...] = w.detach() * (1.0 - eye)

    def _weight(self, w, shape: tuple, name: str, scale: float) -> Parameter:
        op = type(self).__name__
        if w is None:
            return Parameter(_random.randn(*shape) * scale)
        if not isinstance(w, Array):
            raise TypeError(f"{op}: {name} must be a grilly Array, got {type(w).__name__}")
        if tuple(w.shape) != shape:
            raise ValueError(f"{op}: {name} must have shape {shape}, got {tuple(w.shape)}")
        return w if isinstance(w, Parameter) else Parameter(gp.asarray(w, copy=True))

    def _w_rec(self) -> Array:
        w = self.recurrent_weights
        if self.autapses:
            return w
        # the diagonal masked out: zero in the forward and in the gradient (Norse: a hook)
        return w * (1.0 - gp.eye(self.hidden_size, dtype=w.dtype, device=w.device))

    def _state0(self, q: dict, shape: tuple, x: Array):
        return LIFState(self._zeros(shape, x), self._v0(q, shape, x), self._zeros(shape, x))

    def _shape(self, x: Array, op: str, seq: bool) -> tuple:
        """(..., hidden_size) once the input's features match input_weights."""
        _check_weights(x, self.input_weights, None, op)
        return (*x.shape[1 if seq else 0:-1], self.hidden_size)

    # a recurrent ``_step(x_in, state, w_rec, q, dt, spike)`` gets x input_weights^T

    def _one(self, input_tensor: Array, state) -> tuple:
        x, q, st, spike = self._begin(input_tensor, state, False)
        return self._step(NF.linear(x, self.input_weights), st, self._w_rec(), q, self.dt, spike)

    def _all(self, input_tensor: Array, state) -> tuple:
        x, q, st, spike = self._begin(input_tensor, state, True)
        w_rec = self._w_rec()
        x_in = NF.linear(x, self.input_weights)   # every step's input current in one product
        return _run(x_in, st, lambda xt, s: self._step(xt, s, w_rec, q, self.dt, spike),
                    self._state_kind, self.record_states)

    def extra_repr(self) -> str:
        return (f"input_size={self.input_size}, hidden_size={self.hidden_size}, p={self.p}, "
                f"autapses={self.autapses}, dt={self.dt}")


class LIFRecurrentCell(_Recurrent):
    """Norse's ``LIFRecurrentCell``: one step of the recurrent LIF, ``z, state = cell(x,
    state)`` with state a ``LIFState`` (z, v, i) or None (zeros, v = v_leak)."""

    def __init__(self, input_size: int, hidden_size: int, p: LIFParameters = LIFParameters(),
                 input_weights: Array | None = None, recurrent_weights: Array | None = None,
                 autapses: bool = False, dt: float = 0.001) -> None:
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt)

    def forward(self, input_tensor: Array, state: LIFState | None = None) -> tuple:
        """(spikes (..., hidden), LIFState) after one step."""
        return self._one(input_tensor, state)


class LIFRecurrent(_Recurrent):
    """Norse's ``LIFRecurrent``: the recurrent LIF over the first axis of (T, ..., input_size):
    (spikes (T, ..., hidden), the last LIFState, or every step's with ``record_states``)."""

    _shapes_from = None   # (its bad-state error has always named the layer's shape only)

    def __init__(self, input_size: int, hidden_size: int, p: LIFParameters = LIFParameters(),
                 input_weights: Array | None = None, recurrent_weights: Array | None = None,
                 autapses: bool = False, dt: float = 0.001, record_states: bool = False) -> None:
        super().__init__(input_size, hidden_size, p, input_weights, recurrent_weights, autapses,
                         dt)
        self.record_states = bool(record_states)

    def forward(self, input_tensor: Array, state: LIFState | None = None) -> tuple:
        """(spikes (T, ..., hidden), state) over every step of ``input_tensor``."""
        return self._all(input_tensor, state)


class LICell(_Norse):
    """Norse's ``LICell``: one step of the leaky integrator (no spikes), ``v, state = cell(x,
    state)``; state None starts from v = v_leak, i = 0."""

    _kind = LIParameters

    def __init__(self, p: LIParameters = LIParameters(), dt: float = 0.001) -> None:
        super().__init__(p, dt)

    def forward(self, input_tensor: Array, state: LIState | None = None) -> tuple:
        """(v, LIState) after one step."""
        return _li_ff_step(input_tensor, state, self.p, self.dt, type(self).__name__)


class LI(_Sequence):
    """Norse's ``LI``: the leaky integrator over the first axis: (v (T, ...), the last LIState,
    or every step's with ``record_states``); two fused scans (``fused=False``: per step)."""

    _kind = LIParameters

    def __init__(self, p: LIParameters = LIParameters(), dt: float = 0.001,
                 record_states: bool = False, fused: bool = True) -> None:
        super().__init__(p, dt, record_states, fused)

    def forward(self, input_tensor: Array, state: LIState | None = None) -> tuple:
        """(v (T, ...), state) over every step of ``input_tensor``."""
        _, x, q, st = self._start(input_tensor, state, LIState)
        return _li_sequence(x, st, q, self.dt, fused=self.fused, record=self.record_states)


class LILinearCell(_Norse):
    """Norse's ``LILinearCell``: a leaky integrator on x input_weights^T, input_weights
    (hidden, input) drawn N(0, 1/input_size)."""

    _kind = LIParameters

    def __init__(self, input_size: int, hidden_size: int, p: LIParameters = LIParameters(),
                 dt: float = 0.001) -> None:
        super().__init__(p, dt)
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.input_weights = Parameter(_random.randn(self.hidden_size, self.input_size)
                                       * (1.0 / math.sqrt(self.input_size)))

    def forward(self, input_tensor: Array, state: LIState | None = None) -> tuple:
        """(v (..., hidden), LIState) after one step."""
        return _li_lin_step(input_tensor, state, self.input_weights, self.p, self.dt,
                            type(self).__name__)


class LIFBoxCell(_Norse):
    """Norse's ``LIFBoxCell``: one step of the current-free LIF, ``z, state = cell(x,
    state)`` with state a ``LIFBoxFeedForwardState`` (v) or None (v = v_leak)."""

    _kind = LIFBoxParameters

    def __init__(self, p: LIFBoxParameters = LIFBoxParameters(), dt: float = 0.001) -> None:
        super().__init__(p, dt)

    def forward(self, input_tensor: Array, state: LIFBoxFeedForwardState | None = None) -> tuple:
        """(spikes, LIFBoxFeedForwardState) after one step."""
        return _box_step(input_tensor, state, self.p, self.dt, type(self).__name__)


class LIFBox(_Sequence):
    """``LIFBoxCell`` over the first axis (grilly's; Norse 1.1 has the cell only): (spikes
    (T, ...), the last LIFBoxFeedForwardState, or every step's with ``record_states``); one
    fused kernel call for "super" with ``reset_value`` or ``reset_subtract``."""

    _kind = LIFBoxParameters

    def __init__(self, p: LIFBoxParameters = LIFBoxParameters(), dt: float = 0.001,
                 record_states: bool = False, fused: bool = True) -> None:
        super().__init__(p, dt, record_states, fused)

    def forward(self, input_tensor: Array, state: LIFBoxFeedForwardState | None = None) -> tuple:
        """(spikes (T, ...), state) over every step of ``input_tensor``."""
        op, x, q, (v0,) = self._start(input_tensor, state, LIFBoxFeedForwardState)
        return _box_sequence(x, v0, q, self.dt, op, fused=self.fused, record=self.record_states)


class LIBoxCell(_Norse):
    """Norse's ``LIBoxCell``: one step of the current-free leaky integrator, ``v, state =
    cell(x, state)``; state None starts from v = v_leak."""

    _kind = LIBoxParameters

    def __init__(self, p: LIBoxParameters = LIBoxParameters(), dt: float = 0.001) -> None:
        super().__init__(p, dt)

    def forward(self, input_tensor: Array, state: LIBoxState | None = None) -> tuple:
        """(v, LIBoxState) after one step."""
        return _li_box(input_tensor, state, None, self.p, self.dt, type(self).__name__)


# ---- encoders (norse.torch.functional.encode and its modules) --------------------------------

def _seq_length(n, op: str) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"{op}: seq_length must be an int >= 1, got {n!r}")
    return int(n)


def _generator(generator, op: str):
    if generator is None:
        return _random.default_generator
    if not callable(getattr(generator, "bernoulli", None)):
        raise TypeError(f"{op}: generator must be a grilly.random Generator or None, got "
                        f"{type(generator).__name__}")
    return generator


def lif_current_encoder(input_current: Array, voltage: Array,
                        p: LIFParameters = LIFParameters(), dt: float = 0.001) -> tuple:
    """Norse's ``lif_current_encoder``: one Euler step of a current-free LIF driven by
    ``input_current``: (spikes, voltage), the reset v - z (v - v_reset) keeping its gradient."""
    op = "lif_current_encoder"
    x = F._check_input(input_current, op, "input_current")
    (v,) = _check_state(LIFBoxFeedForwardState(voltage), LIFBoxFeedForwardState, op, x.shape, x)
    q = _params(p, LIFParameters, op, x, x.shape)
    return _current_step(x, v, q, _dt(dt, op), _spike_fn(q["method"], q["alpha"], op))


def _current_step(x, v, q, dt, spike) -> tuple:
    v = v + (dt * q["tau_mem_inv"]) * ((q["v_leak"] - v) + x)
    z = spike(v - q["v_th"])
    return z, v - z * (v - q["v_reset"])


def _current_spikes(x, seq_length, p, dt, op: str, first_only: bool) -> Array:
    """The encoder LIF from v = 0 driven by the constant ``x`` for ``seq_length`` steps; with
    ``first_only`` every spike after a neuron's first is dropped (no gradient there)."""
    x = F._check_input(x, op, "input_current")
    n, d = _seq_length(seq_length, op), _dt(dt, op)
    q = _params(p, LIFParameters, op, x, x.shape)
    spike = _spike_fn(q["method"], q["alpha"], op)
    v, fired, out = _zeros(x.shape, x), None, []
    for _ in range(n):
        z, v = _current_step(x, v, q, d, spike)
        if first_only:
            # the mask of earlier spikes is detached (Norse compares it, never differentiates)
            if fired is not None:
                z = z * gp.astype(fired <= 0, z.dtype)
            fired = z.detach() if fired is None else fired + z.detach()
        out.append(z)
    return gp.stack(out, axis=0)


def constant_current_lif_encode(input_current: Array, seq_length: int,
                                p: LIFParameters = LIFParameters(), dt: float = 0.001) -> Array:
    """Norse's ``constant_current_lif_encode``: the spikes (seq_length, ...) of a LIF neuron
    per value (from v = 0, see ``lif_current_encoder``) driven by it as a constant current."""
    return _current_spikes(input_current, seq_length, p, dt, "constant_current_lif_encode",
                           False)


def spike_latency_lif_encode(input_current: Array, seq_length: int,
                             p: LIFParameters = LIFParameters(), dt: float = 0.001) -> Array:
    """Norse's ``spike_latency_lif_encode``: ``constant_current_lif_encode`` keeping only each
    neuron's first spike (larger currents spike earlier)."""
    return _current_spikes(input_current, seq_length, p, dt, "spike_latency_lif_encode", True)


def spike_latency_encode(input_spikes: Array) -> Array:
    """Norse's ``spike_latency_encode``: input_spikes (T, ...) with every spike after each
    neuron's first set to 0."""
    x = _check_seq(input_spikes, "spike_latency_encode", "input_spikes")
    fired, out = None, []
    for xt in gp.unstack(x, axis=0):
        y = xt if fired is None else xt * gp.astype(fired <= 0, xt.dtype)
        fired = y.detach() if fired is None else fired + y.detach()
        out.append(y)
    return gp.stack(out, axis=0)


def _poisson(x, seq_length, f_max, dt, generator, op: str, signed: bool) -> Array:
    x = F._check_input(x, op, "input_values")
    rate = _dt(dt, op) * _float(f_max, "f_max", op)
    p = gp.clip((gp.abs(x) if signed else x) * rate, 0.0, 1.0)
    if seq_length is not None:
        p = gp.broadcast_to(gp.expand_dims(p, axis=0), (_seq_length(seq_length, op), *x.shape))
    spk = _generator(generator, op).bernoulli(p.detach(), dtype=x.dtype)
    return gp.sign(x).detach() * spk if signed else spk


def poisson_encode(input_values: Array, seq_length: int, f_max: float = 100,
                   dt: float = 0.001, generator=None) -> Array:
    """Norse's ``poisson_encode``: (seq_length, ...) spikes, 1 with probability dt f_max x per
    step (clipped to [0, 1]), drawn from gp.random (or ``generator``); no gradient."""
    return _poisson(input_values, seq_length, f_max, dt, generator, "poisson_encode", False)


def poisson_encode_step(input_values: Array, f_max: float = 1000, dt: float = 0.001,
                        generator=None) -> Array:
    """Norse's ``poisson_encode_step``: one step of ``poisson_encode``, shaped like the input."""
    return _poisson(input_values, None, f_max, dt, generator, "poisson_encode_step", False)


def signed_poisson_encode(input_values: Array, seq_length: int, f_max: float = 100,
                          dt: float = 0.001, generator=None) -> Array:
    """Norse's ``signed_poisson_encode``: sign(x) times spikes drawn with probability
    dt f_max |x| per step."""
    return _poisson(input_values, seq_length, f_max, dt, generator, "signed_poisson_encode",
                    True)


def signed_poisson_encode_step(input_values: Array, f_max: float = 1000, dt: float = 0.001,
                               generator=None) -> Array:
    """Norse's ``signed_poisson_encode_step``: one step of ``signed_poisson_encode``."""
    return _poisson(input_values, None, f_max, dt, generator, "signed_poisson_encode_step",
                    True)


class _Encoder(Module):
    """Norse's encoder modules: the arguments kept, the functional encoder called."""

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in vars(self).items() if not k.startswith("_")
                         and k != "training")


class ConstantCurrentLIFEncoder(_Encoder):
    """Norse's ``ConstantCurrentLIFEncoder(seq_length, p, dt)``: ``constant_current_lif_encode``."""

    def __init__(self, seq_length: int, p: LIFParameters = LIFParameters(),
                 dt: float = 0.001) -> None:
        super().__init__()
        self.seq_length, self.p, self.dt = seq_length, p, dt

    def forward(self, input_currents: Array) -> Array:
        """(seq_length, ...) spikes."""
        return constant_current_lif_encode(input_currents, self.seq_length, self.p, self.dt)


class SpikeLatencyLIFEncoder(_Encoder):
    """Norse's ``SpikeLatencyLIFEncoder(seq_length, p, dt)``: ``spike_latency_lif_encode``."""

    def __init__(self, seq_length: int, p: LIFParameters = LIFParameters(),
                 dt: float = 0.001) -> None:
        super().__init__()
        self.seq_length, self.p, self.dt = seq_length, p, dt

    def forward(self, input_current: Array) -> Array:
        """(seq_length, ...) spikes, at most one per neuron."""
        return spike_latency_lif_encode(input_current, self.seq_length, self.p, self.dt)


class SpikeLatencyEncoder(_Encoder):
    """Norse's ``SpikeLatencyEncoder()``: ``spike_latency_encode``."""

    def forward(self, input_spikes: Array) -> Array:
        """input_spikes (T, ...) with each neuron's first spike only."""
        return spike_latency_encode(input_spikes)


class PoissonEncoder(_Encoder):
    """Norse's ``PoissonEncoder(seq_length, f_max, dt)``: ``poisson_encode`` (SpikingJelly's
    ``PoissonEncoder`` is ``grilly.nn.snn.PoissonEncoder``)."""

    def __init__(self, seq_length: int, f_max: float = 100, dt: float = 0.001) -> None:
        super().__init__()
        self.seq_length, self.f_max, self.dt = seq_length, f_max, dt

    def forward(self, x: Array) -> Array:
        """(seq_length, ...) spikes."""
        return poisson_encode(x, self.seq_length, self.f_max, self.dt)


class PoissonEncoderStep(_Encoder):
    """Norse's ``PoissonEncoderStep(f_max, dt)``: ``poisson_encode_step``."""

    def __init__(self, f_max: float = 1000, dt: float = 0.001) -> None:
        super().__init__()
        self.f_max, self.dt = f_max, dt

    def forward(self, x: Array) -> Array:
        """One step of spikes, shaped like x."""
        return poisson_encode_step(x, self.f_max, self.dt)


class SignedPoissonEncoder(_Encoder):
    """Norse's ``SignedPoissonEncoder(seq_length, f_max, dt)``: ``signed_poisson_encode``."""

    def __init__(self, seq_length: int, f_max: float = 100, dt: float = 0.001) -> None:
        super().__init__()
        self.seq_length, self.f_max, self.dt = seq_length, f_max, dt

    def forward(self, x: Array) -> Array:
        """(seq_length, ...) signed spikes."""
        return signed_poisson_encode(x, self.seq_length, self.f_max, self.dt)


class SignedPoissonEncoderStep(_Encoder):
    """Norse's ``SignedPoissonEncoderStep(f_max, dt)``: ``signed_poisson_encode_step``."""

    def __init__(self, f_max: float = 1000, dt: float = 0.001) -> None:
        super().__init__()
        self.f_max, self.dt = f_max, dt

    def forward(self, x: Array) -> Array:
        """One step of signed spikes, shaped like x."""
        return signed_poisson_encode_step(x, self.f_max, self.dt)


# ---- SequentialState -------------------------------------------------------------------------

def _is_stateful(module: Module) -> bool:
    """Norse's rule: a module whose forward takes a ``state`` argument (not grilly's own
    neurons' ``*state``: they keep their state themselves), or a recurrent layer."""
    if isinstance(module, _RNNBase):
        return True
    try:
        prm = inspect.signature(module.forward).parameters.get("state")
    except (TypeError, ValueError):
        return False
    return prm is not None and prm.kind in (prm.POSITIONAL_OR_KEYWORD, prm.KEYWORD_ONLY)


class SequentialState(Sequential):
    """Norse's ``SequentialState``: modules in order, each stateful one called as
    ``module(x, state[k])`` and its new state kept; ``model(x, state=None) -> (output,
    states)`` (every module's output instead with ``return_hidden=True``)."""

    def __init__(self, *args: Module, return_hidden: bool = False) -> None:
        super().__init__(*args)
        self.return_hidden = bool(return_hidden)
        self.stateful_layers = [_is_stateful(m) for m in self]
        self.forward_state_hooks = []

    def register_forward_state_hooks(self, forward_hook: Callable) -> None:
        """``forward_hook(module, input, output)`` after each stateful module's forward."""
        if self.forward_state_hooks:
            raise ValueError("SequentialState: forward state hooks are already registered; "
                             "call remove_forward_state_hooks() first")
        for m, stateful in zip(self, self.stateful_layers):
            if stateful:
                self.forward_state_hooks.append(m.register_forward_hook(forward_hook))

    def remove_forward_state_hooks(self) -> None:
        """Remove the hooks of ``register_forward_state_hooks``."""
        for h in self.forward_state_hooks:
            h.remove()
        self.forward_state_hooks.clear()

    def forward(self, input_tensor: Array, state: list | None = None) -> tuple:
        """(output, states): each stateful module gets its entry of ``state`` (None: its own
        initial state)."""
        n = len(self)
        if state is None:
            state = [None] * n
        elif not isinstance(state, (list, tuple)) or len(state) != n:
            raise ValueError(f"SequentialState: state must be None or a list of {n} states (one "
                             f"per module), got "
                             f"{len(state) if isinstance(state, (list, tuple)) else type(state).__name__}")
        if not isinstance(state, list):
            state = list(state)
        if len(self.stateful_layers) != n:   # modules appended since construction
            self.stateful_layers = [_is_stateful(m) for m in self]
        hidden = []
        x = input_tensor
        for k, (m, stateful) in enumerate(zip(self, self.stateful_layers)):
            if stateful:
                x, state[k] = m(x, state[k])
            else:
                x = m(x)
            if self.return_hidden:
                hidden.append(x)
        return (hidden if self.return_hidden else x), state
