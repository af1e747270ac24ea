"""SpikingJelly's neurons (``activation_based.neuron``) under their names and conventions:
``ParametricLIFNode`` (grilly's LIFNode with a learnable decay, so its multi-step calls run the
fused LIF kernels), the nonlinear ``QIFNode``, ``EIFNode`` and ``IzhikevichNode`` (per step,
namespace ops), and ``NonSpikingLIFNode``/``NonSpikingIFNode``.

As SpikingJelly's: charge, fire (spike = surrogate(v - v_threshold)), then reset within the step
(hard: v = spike v_reset + (1 - spike) v; soft, ``v_reset=None``: v = v - spike v_threshold;
``detach_reset`` detaches the spike there); the membrane starts at ``v_reset`` (0 for a soft
reset); single-step calls return the spikes only, ``.v`` is the membrane, ``store_v_seq`` keeps
``.v_seq``; ``functional.reset_net`` resets them. grilly spikes where v > v_threshold
(SpikingJelly: v >= v_threshold)."""
from __future__ import annotations

import math
import numbers

from ...array import api as gp

from ...array.array import Array
from ...array.dispatch import structure_changed
from ..functional import relu as _relu, sigmoid as _sigmoid
from ..module import Module
from ..parameter import Parameter
from .base import KeptState, _NodeHooks
from .neurons import LIFNode, _Neuron, _sj_backend, _sj_surrogate
from .surrogate import Surrogate

__all__ = ["BaseNode", "SimpleBaseNode", "ParametricLIFNode", "QIFNode", "EIFNode",
           "IzhikevichNode", "NonSpikingLIFNode", "NonSpikingIFNode", "KLIFNode", "LIAFNode",
           "SimpleIFNode", "SimpleLIFNode"]


class ParametricLIFNode(LIFNode):
    """SpikingJelly's ``neuron.ParametricLIFNode`` (PLIF): LIFNode whose 1/tau = sigmoid(w) is
    learned, w a Parameter starting at -log(init_tau - 1) (state_dict key ``w``, as
    SpikingJelly's): h = v + (x - v) sigmoid(w) (``decay_input``) or v - v sigmoid(w) + x.
    ``v_reset`` a float (hard) or None (soft), as LIFNode."""

    def __init__(self, init_tau: float = 2.0, decay_input: bool = True,
                 v_threshold: float = 1.0, v_reset: float | None = 0.0,
                 surrogate_function: Surrogate | None = None, detach_reset: bool = False,
                 step_mode: str = "s", store_v_seq: bool = False, backend: str | bool = "torch",
                 **kw) -> None:
        super().__init__(init_tau, decay_input, v_threshold, v_reset, surrogate_function,
                         detach_reset, step_mode, store_v_seq, backend, **kw)
        self.init_tau = self.__dict__["_init_tau"]
        self.w = Parameter(gp.asarray(-math.log(self.init_tau - 1.0), dtype=self._dtype))

    @property
    def tau(self):
        """The time constant 1 / sigmoid(w) (an Array; init_tau until w exists)."""
        if "w" not in self._parameters:
            return self.__dict__["_init_tau"]
        return 1.0 / _sigmoid(self.w.detach())

    @tau.setter
    def tau(self, value) -> None:
        # LIFNode's constructor sets the initial tau; w carries it from then on
        self.__dict__["_init_tau"] = value
        structure_changed()   # (grilly.jit's replay guards compare it)

    def _scale(self, x):
        return x * _sigmoid(self.w) if self.decay_input else x

    def _params(self) -> dict:
        return {"thr": self._threshold, "beta": 1.0 - _sigmoid(self.w)}


class _SJNode(_NodeHooks, _Neuron):
    """SpikingJelly's BaseNode over grilly's state handling: subclasses define ``_charged(v,
    x)`` (the charged membrane), which both the step and ``neuronal_charge`` use, or ``_step``
    where their state is more than the membrane."""

    _builtin_hooks = True

    def __init__(self, v_threshold: float, v_reset: float | None, surrogate_function,
                 detach_reset: bool, step_mode: str, store_v_seq: bool, dtype=None,
                 backend: str | bool = "torch") -> None:
        op = type(self).__name__
        store_v_seq, backend = _sj_backend(store_v_seq, backend, op)
        for name, v in (("v_threshold", v_threshold), ("v_reset", v_reset)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
                raise TypeError(f"{op}: {name} must be a float{' or None' * (name == 'v_reset')}"
                                f", got {type(v).__name__}")
        super().__init__(threshold=float(v_threshold),
                         reset="subtract" if v_reset is None else "zero",
                         surrogate=_sj_surrogate(surrogate_function), detach_reset=detach_reset,
                         reset_delay=False, learn_threshold=False, step_mode=step_mode,
                         return_mem=False, dtype=dtype, init_hidden=True)
        self.v_threshold, self.v_reset = float(v_threshold), v_reset
        self.store_v_seq, self.v_seq, self.backend = bool(store_v_seq), None, backend

    _starts = {}   # a state variable's starting value other than v's (attribute name)

    def init_state(self, like: Array) -> tuple:
        v0 = 0.0 if self.v_reset is None else float(self.v_reset)
        return tuple(gp.full_like(like, float(getattr(self, self._starts[n])) if n in self._starts
                                  else v0) for n in self._state_names)

    def _fire_reset(self, h, thr):
        spk = self.surrogate(h - thr)
        s = spk.detach() if self.detach_reset else spk
        if self.v_reset is None:
            return spk, h - s * thr
        return spk, s * self.v_reset + (1.0 - s) * h

    def multi_step(self, x_seq, return_mem: bool = False):
        """The spike train of a (T, ...) sequence; with ``store_v_seq`` the membrane of every
        step is kept as ``.v_seq``."""
        out = super().multi_step(x_seq, return_mem=return_mem or self.store_v_seq)
        if self.store_v_seq:
            self.v_seq = out[1]
            return out if return_mem else out[0]
        return out

    def reset_state(self) -> None:
        """Forget the state (and ``v_seq``): the next call starts from v_reset."""
        super().reset_state()
        self.v_seq = None

    def reset(self) -> None:
        """SpikingJelly's ``node.reset()``: ``reset_state()``."""
        self.reset_state()

    def neuronal_charge(self, x: Array) -> None:
        """SpikingJelly's charge of one step: ``self.v`` charged by the input (``_charged``)."""
        self.v = self._charged(self.v, x)

    def _step(self, x, st, p):
        # (the nodes whose state is the membrane alone: charge, fire, reset)
        spk, v = self._fire_reset(self._charged(st[0], x), p["thr"])
        return spk, (v,)

    def v_float_to_tensor(self, x: Array) -> None:
        """SpikingJelly 0.0.0.0.14's: the state (``.v``, ...) made Arrays shaped like ``x``."""
        if self.state is None:
            self.state = self.init_state(x)

    def extra_repr(self) -> str:
        return (f"v_threshold={self.v_threshold}, v_reset={self.v_reset}, "
                f"detach_reset={self.detach_reset}, step_mode={self.step_mode!r}")


class BaseNode(_SJNode):
    """SpikingJelly's ``neuron.BaseNode(v_threshold, v_reset, surrogate_function, detach_reset,
    step_mode, backend, store_v_seq)`` to subclass: define ``neuronal_charge(x)`` (update
    ``self.v`` from the input); ``neuronal_fire()`` (surrogate(v - v_threshold)) and
    ``neuronal_reset(spike)`` (hard to v_reset, soft with v_reset None) may be overridden, and
    ``register_memory(name, value)`` adds state that ``reset()`` restores. Every step charges,
    fires and resets (in 's' and 'm'); ``.v`` starts at v_reset (0 for a soft reset).
    ``backend`` is accepted ('torch', 'cupy', 'triton'; grilly picks kernels by device); as
    SpikingJelly 2's signature, a bool there is ``store_v_seq``."""

    def __init__(self, v_threshold: float = 1.0, v_reset: float | None = 0.0,
                 surrogate_function: Surrogate | None = None, detach_reset: bool = False,
                 step_mode: str = "s", backend: str | bool = "torch", store_v_seq: bool = False,
                 dtype=None) -> None:
        op = type(self).__name__
        if isinstance(backend, bool):   # SpikingJelly 2: (..., step_mode, store_v_seq)
            backend, store_v_seq = "torch", backend
        if backend not in ("torch", "cupy", "triton"):
            raise ValueError(f"{op}: backend must be 'torch', 'cupy' or 'triton', got "
                             f"{backend!r}")
        if not isinstance(detach_reset, bool):
            raise TypeError(f"{op}: detach_reset must be a bool, got "
                            f"{type(detach_reset).__name__}")
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         store_v_seq, dtype)
        self.backend = backend

    def neuronal_charge(self, x: Array) -> None:
        """The charge of one step (updates ``self.v``): a subclass defines it."""
        raise NotImplementedError(f"{type(self).__name__}: a BaseNode subclass defines "
                                  "neuronal_charge(x), updating self.v")


class SimpleBaseNode(BaseNode):
    """SpikingJelly 2's ``neuron.SimpleBaseNode(v_threshold, v_reset, surrogate_function,
    detach_reset, step_mode)``: BaseNode without ``store_v_seq``, its membrane starting at 0
    (not v_reset), as SpikingJelly's."""

    def __init__(self, v_threshold: float = 1.0, v_reset: float | None = 0.0,
                 surrogate_function: Surrogate | None = None, detach_reset: bool = False,
                 step_mode: str = "s", dtype=None) -> None:
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         dtype=dtype)

    # SpikingJelly's SimpleBaseNode registers v = 0.0 whatever v_reset is (BaseNode: v_reset)
    @property
    def v(self):
        """The membrane potential: 0.0 before the first call (SpikingJelly's SimpleBaseNode)."""
        st = self.__dict__.get("state")
        return 0.0 if st is None else st[0]

    @v.setter
    def v(self, value) -> None:
        _NodeHooks.v.fset(self, value)

    def init_state(self, like: Array) -> tuple:
        """The membrane at 0 (not v_reset), as SpikingJelly's SimpleBaseNode."""
        return (gp.zeros_like(like), *super().init_state(like)[1:])


class SimpleIFNode(SimpleBaseNode):
    """SpikingJelly 2's ``neuron.SimpleIFNode(v_threshold, v_reset, surrogate_function,
    detach_reset, step_mode)``: v = v + x, per step through the BaseNode hooks."""

    def neuronal_charge(self, x: Array) -> None:
        """v = v + x."""
        self.v = self.v + x


class SimpleLIFNode(SimpleBaseNode):
    """SpikingJelly 2's ``neuron.SimpleLIFNode(tau, decay_input, v_threshold, v_reset,
    surrogate_function, detach_reset, step_mode)``: v = v + (v_reset - v + x) / tau
    (``decay_input``) or v + (v_reset - v) / tau + x, per step (v_reset a float: SpikingJelly's
    charge reads it)."""

    def __init__(self, tau: float, decay_input: bool, v_threshold: float = 1.0,
                 v_reset: float = 0.0, surrogate_function: Surrogate | None = None,
                 detach_reset: bool = False, step_mode: str = "s", dtype=None) -> None:
        if v_reset is None:
            raise ValueError("SimpleLIFNode: v_reset must be a float (its charge leaks towards "
                             "it); SpikingJelly's fails on None too")
        tau_ = _tau(tau, "SimpleLIFNode")
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         dtype=dtype)
        self.tau, self.decay_input = tau_, bool(decay_input)

    def neuronal_charge(self, x: Array) -> None:
        """SpikingJelly's LIF charge towards v_reset."""
        if self.decay_input:
            self.v = self.v + (self.v_reset - self.v + x) / self.tau
        else:
            self.v = self.v + (self.v_reset - self.v) / self.tau + x


def _tau(tau, op: str) -> float:
    if isinstance(tau, bool) or not isinstance(tau, numbers.Real) or not tau > 1.0:
        raise ValueError(f"{op}: tau must be a number > 1, got {tau!r}")
    return float(tau)


def _check_rest(v_threshold, v_reset, v_rest, op: str) -> None:
    if v_reset is not None and not (v_threshold > v_reset and v_rest >= v_reset):
        raise ValueError(f"{op}: needs v_threshold > v_reset and v_rest >= v_reset, got "
                         f"v_threshold={v_threshold}, v_reset={v_reset}, v_rest={v_rest}")


class QIFNode(_SJNode):
    """SpikingJelly's ``neuron.QIFNode``: h = v + (x + a0 (v - v_rest) (v - v_c)) / tau."""

    _builtin_hooks = True

    def __init__(self, tau: float = 2.0, v_c: float = 0.8, a0: float = 1.0,
                 v_threshold: float = 1.0, v_rest: float = 0.0, v_reset: float | None = -0.1,
                 surrogate_function: Surrogate | None = None, detach_reset: bool = False,
                 step_mode: str = "s", store_v_seq: bool = False, backend: str | bool = "torch",
                 dtype=None) -> None:
        op = "QIFNode"
        self_tau = _tau(tau, op)
        _check_rest(v_threshold, v_reset, v_rest, op)
        if not a0 > 0:
            raise ValueError(f"{op}: a0 must be > 0, got {a0}")
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         store_v_seq, dtype, backend)
        self.tau, self.v_c, self.a0, self.v_rest = self_tau, float(v_c), float(a0), float(v_rest)

    def _charged(self, v, x):
        """SpikingJelly's charge: v + (x + a0 (v - v_rest) (v - v_c)) / tau."""
        return v + (x + self.a0 * (v - self.v_rest) * (v - self.v_c)) / self.tau


class EIFNode(_SJNode):
    """SpikingJelly's ``neuron.EIFNode``: h = v + (x + v_rest - v + delta_T exp((v - theta_rh)
    / delta_T)) / tau."""

    _builtin_hooks = True

    def __init__(self, tau: float = 2.0, delta_T: float = 1.0, theta_rh: float = 0.8,  # noqa: N803
                 v_threshold: float = 1.0, v_rest: float = 0.0, v_reset: float | None = -0.1,
                 surrogate_function: Surrogate | None = None, detach_reset: bool = False,
                 step_mode: str = "s", store_v_seq: bool = False, backend: str | bool = "torch",
                 dtype=None) -> None:
        op = "EIFNode"
        self_tau = _tau(tau, op)
        _check_rest(v_threshold, v_reset, v_rest, op)
        if not delta_T > 0:
            raise ValueError(f"{op}: delta_T must be > 0, got {delta_T}")
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         store_v_seq, dtype, backend)
        self.tau, self.delta_T = self_tau, float(delta_T)
        self.theta_rh, self.v_rest = float(theta_rh), float(v_rest)

    def _charged(self, v, x):
        """SpikingJelly's charge: v + (x + v_rest - v + delta_T exp((v - theta_rh) / delta_T))
        / tau."""
        return v + (x + self.v_rest - v
                    + self.delta_T * gp.exp((v - self.theta_rh) / self.delta_T)) / self.tau


class IzhikevichNode(_SJNode):
    """SpikingJelly's ``neuron.IzhikevichNode``: h = v + (x + a0 (v - v_rest) (v - v_c) - w) /
    tau, the recovery w = w + (a (h - v_rest) - w) / tau_w + b spike (starting at ``w_rest``);
    the state is (v, w), ``.w`` the recovery."""

    _builtin_hooks = True

    _state_names = ("v", "w")
    _starts = {"w": "w_rest"}

    def __init__(self, tau: float = 2.0, v_c: float = 0.8, a0: float = 1.0,
                 v_threshold: float = 1.0, v_reset: float | None = 0.0, v_rest: float = -0.1,
                 w_rest: float = 0.0, tau_w: float = 2.0, a: float = 0.0, b: float = 0.0,
                 surrogate_function: Surrogate | None = None, detach_reset: bool = False,
                 step_mode: str = "s", store_v_seq: bool = False, backend: str | bool = "torch",
                 dtype=None) -> None:
        op = "IzhikevichNode"
        self_tau = _tau(tau, op)
        if not a0 > 0:
            raise ValueError(f"{op}: a0 must be > 0, got {a0}")
        if not tau_w > 0:
            raise ValueError(f"{op}: tau_w must be > 0, got {tau_w}")
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         store_v_seq, dtype, backend)
        self.tau, self.v_c, self.a0, self.v_rest = self_tau, float(v_c), float(a0), float(v_rest)
        self.w_rest, self.tau_w, self.a, self.b = float(w_rest), float(tau_w), float(a), float(b)

    @property
    def w(self):
        """The recovery variable (SpikingJelly's ``.w``): w_rest before the first call."""
        return self.w_rest if self.state is None else self.state[1]

    @w.setter
    def w(self, value) -> None:
        if self.state is None:
            raise ValueError("IzhikevichNode: set .w after the first call")
        self.__dict__["state"] = (self.state[0], value)

    def _charged(self, v, x, w=None):
        """SpikingJelly's charge: v + (x + a0 (v - v_rest) (v - v_c) - w) / tau (w: ``.w``)."""
        w = self.w if w is None else w
        return v + (x + self.a0 * (v - self.v_rest) * (v - self.v_c) - w) / self.tau

    def _recovered(self, w, h, spike):
        """The recovery after a step: w + (a (h - v_rest) - w) / tau_w + b spike, h the charged
        membrane (before the reset)."""
        return w + (self.a * (h - self.v_rest) - w) / self.tau_w + self.b * spike

    def _after_fire(self, spike: Array) -> None:
        self.w = self._recovered(self.w, self.v, spike)

    def _step(self, x, st, p):
        v, w = st
        h = self._charged(v, x, w)
        spk, v = self._fire_reset(h, p["thr"])
        return spk, (v, self._recovered(w, h, spk))

    def _visible(self, st):
        return st[:1]


class _NonSpiking(KeptState, Module):
    """SpikingJelly's NonSpikingBaseNode: integrate a whole (T, ...) sequence from v = 0 and
    return every step's membrane (a list, ``decode=None``) or a decoding of them."""

    _DECODES = (None, "max-mem", "max-abs-mem", "mean-mem", "last_mem")

    def __init__(self, decode: str | None = None) -> None:
        super().__init__()
        if decode not in self._DECODES:
            raise ValueError(f"{type(self).__name__}: decode must be one of {self._DECODES}, got "
                             f"{decode!r}")
        self.decode, self.v = decode, None

    def forward(self, x_seq: Array):
        """Every step's membrane (a list of T arrays), or its decoding (one array)."""
        op = type(self).__name__
        if not isinstance(x_seq, gp.Array) or x_seq.ndim < 1 or x_seq.shape[0] == 0:
            raise ValueError(f"{op}: expected an input (T, ...) with T >= 1, got "
                             f"{getattr(x_seq, 'shape', type(x_seq).__name__)}")
        v = gp.zeros_like(x_seq[0])
        v_seq = []
        for x in gp.unstack(x_seq, axis=0):
            v = self._charge(v, x)
            v_seq.append(v)
        self.v = v
        if self.decode is None:
            return v_seq
        if self.decode == "last_mem":
            return v_seq[-1]
        stack = gp.stack(v_seq, axis=0)
        if self.decode == "mean-mem":
            return gp.mean(stack, axis=0)
        hi = gp.max(stack, axis=0)
        if self.decode == "max-mem":
            return hi
        lo = gp.min(stack, axis=0)
        keep = gp.abs(hi) > gp.abs(lo)
        return hi * gp.astype(keep, hi.dtype) + lo * gp.astype(gp.logical_not(keep), lo.dtype)

    def reset_state(self) -> None:
        """Forget the last membrane (each call starts from zero anyway)."""
        self.v = None

    reset = reset_state


class NonSpikingLIFNode(_NonSpiking):
    """SpikingJelly's ``neuron.NonSpikingLIFNode``: v = v + (x - v) / tau, no spikes."""

    def __init__(self, tau: float = 2.0, decode: str | None = None) -> None:
        super().__init__(decode)
        if isinstance(tau, bool) or not isinstance(tau, numbers.Real) or tau == 0:
            raise ValueError(f"NonSpikingLIFNode: tau must be a non-zero number, got {tau!r}")
        self.tau = float(tau)

    def _charge(self, v, x):
        return v + (x - v) / self.tau


class NonSpikingIFNode(_NonSpiking):
    """SpikingJelly's ``neuron.NonSpikingIFNode``: v = v + x, no spikes."""

    def _charge(self, v, x):
        return v + x


def _lif_charge(v, x, tau: float, decay_input: bool, v_reset):
    """SpikingJelly's LIF charge, leaking towards v_reset (0 for a soft reset)."""
    vr = 0.0 if v_reset is None else float(v_reset)
    if decay_input:
        return v + (x - (v - vr)) / tau
    return v - (v - vr) / tau + x


class KLIFNode(_SJNode):
    """SpikingJelly's ``neuron.KLIFNode(scale_reset, tau, decay_input, v_threshold, v_reset,
    ...)``: the LIF charge h, then h = relu(k h) with k a learnable scalar (state_dict key ``k``,
    starting at 1); spike = surrogate(h - v_threshold); the reset acts on h, or on h / k with the
    threshold v_threshold / k (``scale_reset``). Per step."""

    _builtin_hooks = True

    def __init__(self, scale_reset: bool = False, tau: float = 2.0, decay_input: bool = True,
                 v_threshold: float = 1.0, v_reset: float | None = 0.0,
                 surrogate_function: Surrogate | None = None, detach_reset: bool = False,
                 step_mode: str = "s", store_v_seq: bool = False, backend: str | bool = "torch",
                 dtype=None) -> None:
        self_tau = _tau(tau, "KLIFNode")
        super().__init__(v_threshold, v_reset, surrogate_function, detach_reset, step_mode,
                         store_v_seq, dtype, backend)
        self.scale_reset, self.tau, self.decay_input = bool(scale_reset), self_tau, bool(decay_input)
        self.k = Parameter(gp.asarray(1.0, dtype=self._dtype))

    def _charged(self, v, x):
        """relu(k h), h SpikingJelly's LIF charge of v by x."""
        return _relu(self.k * _lif_charge(v, x, self.tau, self.decay_input, self.v_reset))

    def _step(self, x, st, p):
        h = self._charged(st[0], x)
        if not self.scale_reset:
            spk, v = self._fire_reset(h, p["thr"])
            return spk, (v,)
        spk = self.surrogate(h - p["thr"])
        s = spk.detach() if self.detach_reset else spk
        hk = h / self.k
        if self.v_reset is None:
            return spk, (hk - s * (p["thr"] / self.k),)
        return spk, (s * self.v_reset + (1.0 - s) * hk,)


def _check_act(act, op: str):
    mod = (getattr(type(act), "__module__", "") or "").split(".")[0]
    fmod = (getattr(act, "__module__", "") or "").split(".")[0]
    if {mod, fmod} & {"torch", "spikingjelly"}:
        raise TypeError(f"{op}: act is a torch function (it runs on torch tensors); use a grilly "
                        "one, e.g. grilly.nn.ReLU()")
    if not callable(act):
        raise TypeError(f"{op}: act must be callable, got {type(act).__name__}")
    return act


class LIAFNode(LIFNode):
    """SpikingJelly's ``neuron.LIAFNode(act, threshold_related, *LIFNode's arguments)``: a
    LIFNode whose output is the analog ``act(h - v_threshold)`` (``threshold_related``) or
    ``act(h)`` of the charged membrane h, while the spike (surrogate(h - v_threshold)) still
    resets it. ``act`` a grilly callable (``grilly.nn.ReLU()``, ...). Per step."""

    def __init__(self, act, threshold_related: bool, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.act = _check_act(act, "LIAFNode")
        self.threshold_related = bool(threshold_related)
        self._custom_hooks = False   # its own step (any v_reset), returning the analog output

    def _per_step_only(self) -> bool:
        return True

    def _step(self, x, st, p):
        h = p["beta"] * st[0] + self._scale(x)
        if self._v_rest != 0.0:
            h = h + (1.0 - p["beta"]) * self._v_rest
        spk = self.surrogate(h - p["thr"])
        y = self.act(h - p["thr"] if self.threshold_related else h)
        s = spk.detach() if self.detach_reset else spk
        if self.reset_mechanism == "subtract":
            return y, (h - s * p["thr"],)
        return y, (s * self._v_rest + (1.0 - s) * h,)
