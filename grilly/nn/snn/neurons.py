"""Spiking neuron layers (grilly.nn Modules) over the steps of grilly.nn.snn.functional.

A layer keeps its state (membrane, ...) between calls, as snnTorch's and SpikingJelly's do:
``reset_state()`` (or ``grilly.nn.snn.reset(model)``) starts a new sequence. Called with the
state, a single step is the snnTorch idiom ``spk, mem = lif(x, mem)``. With ``step_mode="m"``
(or ``lif.multi_step(x)``) an input of shape (T, batch, ...) runs all T steps in one call and
returns the spike train (T, batch, ...), with the membrane trace too when ``return_mem=True``.
"""
from __future__ import annotations

import numbers

from ...array import api as gp
from ...array.defaults import float_or_default

from ...array.array import Array
from ...array.dispatch import structure_changed
from ..layers import Conv2d, Linear
from ..module import Module
from ..parameter import Parameter
from . import functional as F
from . import fused as _fused
from .base import KeptState, _NodeHooks
from .checks import _check_kernel
from .surrogate import Surrogate

__all__ = ["LIF", "IF", "Synaptic", "AdaptiveLIF", "RLeaky", "LIFNode", "IFNode", "reset",
           "reset_net", "detach"]


# every layer's reset_state() (a new sequence starts): snn.reset, and SpikingJelly's
# functional.reset_net, one function
reset = reset_net = F.reset_net


def detach(model: Module) -> Module:
    """Detach the kept state of every stateful layer in ``model`` from the graph (``.detach()``
    of SpikingJelly-style modules, else ``detach_state()``): the next call continues from the
    same values, but a backward stops there (truncated BPTT, or a new minibatch carrying the
    state over; snnTorch's ``detach_hidden``). ``snn.functional.detach_net``."""
    return F.detach_net(model)


# snnTorch's options beyond the equations (its SpikingNeuron's): their defaults
_SNNTORCH_OPTS = {"inhibition": False, "state_quant": False, "graded_spikes_factor": 1.0,
                  "learn_graded_spikes_factor": False, "surrogate_disable": False}


def _port_kw(op: str, kw: dict, reset, surrogate, return_mem):
    """snnTorch's names for the options (reset_mechanism, spike_grad, output), and its options
    ``inhibition``, ``state_quant``, ``graded_spikes_factor``, ``learn_graded_spikes_factor``,
    ``surrogate_disable`` (returned as a dict of those given); anything else is a TypeError
    naming op."""
    for name, val in (("reset_mechanism", "reset"), ("spike_grad", "surrogate"),
                      ("output", "return_mem")):
        if name not in kw:
            continue
        v = kw.pop(name)
        given = {"reset": reset, "surrogate": surrogate, "return_mem": return_mem}[val]
        default = {"reset": "subtract", "surrogate": None, "return_mem": False}[val]
        if given is not default and given != default and given != v:
            raise TypeError(f"{op}: got both {val}={given!r} and snnTorch's {name}={v!r}")
        if val == "reset":
            reset = v
        elif val == "surrogate":
            surrogate = v
        else:
            return_mem = v
    opts = {name: kw.pop(name) for name in _SNNTORCH_OPTS if name in kw}
    if kw:
        raise TypeError(f"{op}: unexpected keyword argument {next(iter(kw))!r}")
    return reset, surrogate, return_mem, opts


def _check_snntorch_opts(op: str, opts: dict) -> dict:
    """snnTorch's options with their types checked, every one present (defaults filled in)."""
    out = dict(_SNNTORCH_OPTS)
    out.update(opts)
    for name in ("inhibition", "learn_graded_spikes_factor", "surrogate_disable"):
        if not isinstance(out[name], (bool, int)) or isinstance(out[name], float):
            raise TypeError(f"{op}: {name} must be a bool, got {type(out[name]).__name__}")
        out[name] = bool(out[name])
    sq = out["state_quant"]
    if sq is None or sq is False:
        out["state_quant"] = None
    elif not callable(sq):
        raise TypeError(f"{op}: state_quant must be a function of the membrane (e.g. "
                        f"snn.functional.state_quant(num_bits=4)) or False, got "
                        f"{type(sq).__name__}")
    return out


class _Neuron(KeptState, Module):
    """Shared options, parameters and the step loops; subclasses define ``_step``."""

    _state_names: tuple = ("mem",)
    init_hidden = False   # single-step calls return the spikes only (snnTorch's init_hidden)
    _snntorch = False     # True on the snnTorch classes (snntorch_compat): snnTorch's step
    _snntorch_opts = False   # an snnTorch option is on: its step, per step
    inhibition, state_quant, surrogate_disable = False, None, False

    def __init__(self, *, threshold, reset: str, surrogate: Surrogate | None, detach_reset: bool,
                 reset_delay: bool, learn_threshold: bool, step_mode: str, return_mem: bool,
                 dtype, init_hidden: bool = False, snntorch_opts: dict | None = None) -> None:
        super().__init__()
        op = type(self).__name__
        self.init_hidden = bool(init_hidden)
        F._check_options(reset, surrogate, 0, op)
        if step_mode not in ("s", "m"):
            raise ValueError(f"{op}: step_mode must be 's' (one step per call) or 'm' (a (T, ...) "
                             f"sequence per call), got {step_mode!r}")
        self.reset_mechanism, self.step_mode, self.return_mem = reset, step_mode, bool(return_mem)
        self.surrogate = surrogate if surrogate is not None else F.atan(2.0)
        self.detach_reset, self.reset_delay = bool(detach_reset), bool(reset_delay)
        self._dtype = float_or_default(dtype)
        self._set_param("threshold", threshold, learn_threshold)
        self.state = None
        o = _check_snntorch_opts(op, snntorch_opts or {})
        self.inhibition, self.state_quant = o["inhibition"], o["state_quant"]
        self.surrogate_disable = o["surrogate_disable"]
        if self.surrogate_disable:   # snnTorch's _surrogate_bypass: the step, no gradient
            self.surrogate = F.heaviside
        g, learn_g = o["graded_spikes_factor"], o["learn_graded_spikes_factor"]
        self._set_param("graded_spikes_factor", g, learn_g)
        graded = learn_g or not (isinstance(g, numbers.Real) and float(g) == 1.0)
        self._snntorch_opts = (self.inhibition or self.state_quant is not None
                               or self.surrogate_disable or graded)
        if self._snntorch_opts and not self._snntorch and not (reset_delay and detach_reset):
            raise NotImplementedError(
                f"{op}: snnTorch's inhibition, state_quant, graded_spikes_factor and "
                "surrogate_disable need reset_delay=True and detach_reset=True here (snnTorch's "
                "step); snnTorch's reset_delay=False is grilly.nn.snn.snntorch_compat's "
                "(snn.Leaky; docs/snn.md)")

    def _set_param(self, name: str, value, learn: bool) -> None:
        """A float stays a float; learnable values and per-neuron arrays become Arrays."""
        op = type(self).__name__
        value = _param_value(value, name, op)
        if isinstance(value, float) and value != value:
            raise ValueError(f"{op}: {name} must not be NaN")
        if not learn and isinstance(value, float):
            object.__setattr__(self, "_" + name, value)
            structure_changed()   # (grilly.jit's replay guards compare it)
            return
        arr = gp.asarray(value, dtype=self._dtype, copy=True)
        if learn:
            self.register_parameter("_" + name, Parameter(arr))
        else:
            self.register_buffer("_" + name, arr)

    def _decay(self, name: str):
        v = getattr(self, "_" + name)
        return gp.clip(v, 0.0, 1.0) if isinstance(v, gp.Array) else v

    @property
    def threshold(self):
        """The firing threshold (a float, or an Array when learnable or per neuron)."""
        return self._threshold

    def __getattr__(self, name: str):
        # snnTorch's lif.mem, syn.syn, rlif.spk: a kept state variable by name (None before
        # the first call or after a reset)
        d = self.__dict__
        names = d.get("_state_names") or type(self)._state_names
        if name in names and "state" in d:
            return None if d["state"] is None else d["state"][names.index(name)]
        return super().__getattr__(name)

    # ---- state ---------------------------------------------------------------------------
    def init_state(self, like: Array) -> tuple:
        """A zero state for inputs shaped like ``like`` (one Array per state variable)."""
        return tuple(gp.zeros_like(like) for _ in self._state_names)

    def reset_state(self) -> None:
        """Forget the state: the next call starts from zeros."""
        self.state = None

    def detach_state(self) -> None:
        """Keep the state's values but cut them from the graph (a backward stops here)."""
        if self.state is not None:
            self.state = tuple(s.detach() for s in self.state)

    detach_hidden = detach_state   # snnTorch's name

    def _init_none(self):
        # snnTorch's init_leaky()/init_synaptic()/...: a new sequence; the layer starts its
        # next call from zeros, so the returned placeholders are None
        self.reset_state()
        n = len(self._visible(self._state_names))
        return None if n == 1 else (None,) * n

    def _check_params(self, shape: tuple) -> None:
        """Per-neuron parameters must broadcast to one step's input shape."""
        op = type(self).__name__
        for key in ("_threshold", "_beta", "_alpha", "_rho", "_gamma", "_V",
                    "_graded_spikes_factor"):
            v = getattr(self, key, None)
            if isinstance(v, gp.Array) and not _broadcasts_to(v.shape, shape):
                raise ValueError(f"{op}: {key[1:]} has shape {v.shape}, which does not broadcast "
                                 f"to the input's shape {shape} (one step)")

    def _current_state(self, x: Array, given: tuple) -> tuple:
        op = type(self).__name__
        if len(given) > len(self._state_names):
            raise TypeError(f"{op}: takes the input and at most {len(self._state_names)} state "
                            f"arrays {self._state_names}, got {len(given)}")
        if any(s is not None for s in given):
            given = (*given, *(None,) * (len(self._state_names) - len(given)))
            base = self.state if self.state is not None else self.init_state(x)
            out = []
            for s, b, n in zip(given, base, self._state_names):
                if s is not None:
                    s = F._check_input(s, op, n)
                    if not _broadcasts_to(s.shape, x.shape):
                        raise ValueError(f"{op}: {n} has shape {s.shape}, which does not match "
                                         f"the input's shape {x.shape}")
                out.append(b if s is None else s)
            if (self.state is not None and base[0].shape != x.shape
                    and any(s is None for s in given)):
                raise ValueError(f"{op}: input shape {x.shape} does not match the kept state "
                                 f"{base[0].shape}; call reset_state() (or snn.reset(model)) "
                                 "before a new sequence")
            return tuple(out)
        if self.state is None:
            return self.init_state(x)
        if self.state[0].device != x.device:   # the layer was moved with .to(device)
            self.state = tuple(s.to_device(x.device) for s in self.state)
        if self.state[0].shape != x.shape:
            raise ValueError(f"{op}: input shape {x.shape} does not match the kept state "
                             f"{self.state[0].shape}; call reset_state() (or snn.reset(model)) "
                             "before a new sequence")
        return self.state

    # ---- calls ---------------------------------------------------------------------------
    def forward(self, x: Array, *state):
        """One step (step_mode 's', returns spikes and state) or a (T, ...) sequence ('m')."""
        if self.step_mode == "m":
            if state:
                raise TypeError(f"{type(self).__name__}: step_mode 'm' takes the input sequence "
                                "only; pass a starting state by calling the layer in 's' mode")
            return self.multi_step(x, return_mem=self.return_mem)
        if self.init_hidden and state:
            raise TypeError(f"{type(self).__name__}: init_hidden=True keeps the state in the "
                            "layer; call it with the input only")
        x = F._check_input(x, type(self).__name__)
        self._check_params(x.shape)
        st = self._current_state(x, state)
        spk, st = self._advance(x, st, self._params())
        self.state = st
        if self.init_hidden and not self.return_mem:
            return spk
        return (spk, *self._visible(st))

    def multi_step(self, x_seq: Array, return_mem: bool = False):
        """Run every step of ``x_seq`` (T, batch, ...): the spike train, and the membrane trace
        too when ``return_mem``; the final state is kept."""
        op = type(self).__name__
        x_seq = F._check_input(x_seq, op)
        if x_seq.ndim < 1 or x_seq.shape[0] == 0:
            raise ValueError(f"{op}.multi_step: input must be (T, ...) with T >= 1, got shape "
                             f"{x_seq.shape}")
        self._check_params(x_seq.shape[1:])
        st = self._current_state(x_seq[0], ())
        p = self._params()
        # inhibition, state_quant and surrogate_disable run per step; a graded spike scales
        # the output only (its reset reads the membrane), so the fused kernels keep it
        out = None if self._per_step_only() else self._fused_multi_step(x_seq, st, p, return_mem)
        if out is not None:
            if self._ungraded():
                return out
            g = self._graded_spikes_factor
            return (out[0] * g, out[1]) if return_mem else out * g
        spikes, mems = [], []
        for x in gp.unstack(x_seq, axis=0):
            spk, st = self._advance(x, st, p)
            spikes.append(spk)
            if return_mem:
                mems.append(st[self._mem_index])
        self.state = st
        spk_seq = gp.stack(spikes, axis=0)
        return (spk_seq, gp.stack(mems, axis=0)) if return_mem else spk_seq

    _mem_index = 0

    def _per_step_only(self) -> bool:
        return bool(self.inhibition or self.state_quant is not None or self.surrogate_disable)

    def _ungraded(self) -> bool:
        g = self._graded_spikes_factor
        return isinstance(g, float) and g == 1.0

    def _advance(self, x: Array, st: tuple, p: dict) -> tuple:
        """One step: snnTorch's (``_snntorch_step``) on its classes and with its options, else
        the layer's own ``_step``."""
        if self._snntorch or self._snntorch_opts:
            return self._snntorch_step(x, st, p)
        return self._step(x, st, p)

    def _charge(self, x: Array, st: tuple, p: dict, r: Array) -> tuple:
        """snnTorch's state function: the new state from the input and the detached reset ``r``
        of the old membrane (the spike state, if any, still the old one)."""
        raise NotImplementedError(f"{type(self).__name__}: snnTorch's options are not supported")

    def _snntorch_step(self, x: Array, st: tuple, p: dict) -> tuple:
        """One step as snnTorch 1.0 computes it: the reset from the old membrane (detached),
        the state function, ``state_quant`` on the state, the spike (``inhibition``: only the
        largest membrane of each sample; times ``graded_spikes_factor``), and with
        ``reset_delay=False`` the spike's reset less the delayed one (its gradient kept)."""
        names, mi, thr = self._state_names, self._mem_index, p["thr"]
        r = F.heaviside(st[mi] - thr)
        new = list(self._charge(x, st, p, r))
        if self.state_quant is not None:
            new = [s if n == "spk" else self.state_quant(s) for s, n in zip(new, names)]
        spk = self._emit(new[mi], thr)
        if not self.reset_delay:   # snnTorch: "avoid double reset"
            mem = new[mi]
            d = spk - r if self._ungraded() else spk / self._graded_spikes_factor - r
            if self.reset_mechanism == "subtract":
                new[mi] = mem - d * thr
            elif self.reset_mechanism == "zero":
                new[mi] = mem - d * mem
        if "spk" in names:
            new[names.index("spk")] = spk
        return spk, tuple(new)

    def _emit(self, mem: Array, thr) -> Array:
        """snnTorch's ``fire`` (state_quant again, the surrogate, times graded_spikes_factor)
        or ``fire_inhibition`` (neither: the spike of each sample's largest membrane only)."""
        if self.inhibition:
            shift = mem - thr
            if shift.ndim != 2:
                raise ValueError(f"{type(self).__name__}: inhibition needs an input (batch, "
                                 f"features), got shape {shift.shape}")
            idx = gp.argmax(shift, axis=1)
            cols = gp.arange(shift.shape[1], device=shift.device)
            mask = gp.astype(gp.expand_dims(idx, axis=1) == cols, shift.dtype)
            return self.surrogate(shift) * mask
        if self.state_quant is not None:
            mem = self.state_quant(mem)
        spk = self.surrogate(mem - thr)
        return spk if self._ungraded() else spk * self._graded_spikes_factor

    def _fused_multi_step(self, x_seq: Array, st: tuple, p: dict, return_mem: bool):
        """The spike train from one fused kernel call, or None where it does not apply."""
        return None

    def _visible(self, st: tuple) -> tuple:
        """The state variables a single-step call returns."""
        return st

    def _params(self) -> dict:
        return {"thr": self._threshold}

    def extra_repr(self) -> str:
        return (f"threshold={self._threshold if isinstance(self._threshold, float) else 'array'}, "
                f"reset={self.reset_mechanism!r}, surrogate={self.surrogate!r}, "
                f"step_mode={self.step_mode!r}")


class LIF(_Neuron):
    """Leaky integrate-and-fire (snnTorch ``Leaky``): mem = beta mem + x - reset thr.

    ``beta`` (or ``tau`` with ``dt``: beta = exp(-dt/tau)) is a float or per-neuron values;
    ``learn_beta``/``learn_threshold`` make them Parameters; ``refractory`` steps block input
    and spikes after each spike (the counter is part of the state and carries no gradient).
    Multi-step calls run all T steps in one fused kernel forward and one backward
    (``fused=False``: step by step) where the options allow (docs/snn.md); ``recompute=True``
    keeps no membrane trace for backward and recomputes it there. ``init_hidden=True`` (snnTorch's
    name): a single-step call returns the spikes only, ``(spk, mem)`` with ``return_mem``, so
    the layer fits an ``nn.Sequential`` run one step per call."""

    def __init__(self, beta: float | Array | None = None, threshold: float | Array = 1.0, *,
                 tau: float | None = None, dt: float = 1.0, reset: str = "subtract",
                 surrogate: Surrogate | None = None, detach_reset: bool = True,
                 reset_delay: bool = True, refractory: int = 0, learn_beta: bool = False,
                 learn_threshold: bool = False, step_mode: str = "s", return_mem: bool = False,
                 fused: bool = True, recompute: bool = False, init_hidden: bool = False,
                 dtype=None, **snntorch_kw) -> None:
        reset, surrogate, return_mem, opts = _port_kw(type(self).__name__, snntorch_kw, reset,
                                                      surrogate, return_mem)
        super().__init__(threshold=threshold, reset=reset, surrogate=surrogate,
                         detach_reset=detach_reset, reset_delay=reset_delay,
                         learn_threshold=learn_threshold, step_mode=step_mode,
                         return_mem=return_mem, dtype=dtype, init_hidden=init_hidden,
                         snntorch_opts=opts)
        self._set_param("beta", _beta_arg(beta, tau, dt, type(self).__name__), learn_beta)
        self.fused, self.recompute = bool(fused), bool(recompute)
        F._check_options(reset, surrogate, refractory, type(self).__name__)
        if refractory and (self._snntorch or self._snntorch_opts):
            raise NotImplementedError(f"{type(self).__name__}: refractory is grilly's LIF option; "
                                      "it does not combine with snnTorch's step or options")
        self.refractory = refractory
        if refractory:
            self._state_names = ("mem", "ref")

    @property
    def beta(self):
        """The membrane decay per step (a float, or an Array when learnable or per neuron)."""
        return self._beta

    def init_leaky(self):
        """snnTorch's ``mem = lif.init_leaky()``: a new sequence (the state is reset); returns
        None, which as ``lif(x, mem)``'s state means zeros."""
        return self._init_none()

    def _params(self) -> dict:
        return {"thr": self._threshold, "beta": self._decay("beta")}

    def _charge(self, x, st, p, r):
        b, thr, mem = p["beta"], p["thr"], st[0]
        if self.reset_mechanism == "subtract":
            return (b * mem + x - r * thr,)
        if self.reset_mechanism == "zero":   # snnTorch's Leaky zeroes the old membrane
            return (b * ((1.0 - r) * mem) + x,)
        return (b * mem + x,)

    def _fused_multi_step(self, x_seq, st, p, return_mem):
        # one kernel call for all T steps (grilly.nn.snn.fused); other options run per step
        if not (self.fused and _fused.supported(
                x_seq, self.surrogate, detach_reset=self.detach_reset, return_mem=return_mem,
                reset=self.reset_mechanism, reset_delay=self.reset_delay)):
            return None
        k = self.refractory
        out = _fused.lif_sequence(x_seq, st[0], p["beta"], p["thr"],
                                  reset=self.reset_mechanism, reset_delay=self.reset_delay,
                                  surrogate=self.surrogate, recompute=self.recompute,
                                  return_mem=return_mem, detach_reset=self.detach_reset,
                                  refractory=k, ref0=st[1] if k else None)
        self.state = (out[1], out[-1]) if k else (out[1],)
        return (out[0], out[2]) if return_mem else out[0]

    def _step(self, x, st, p):
        active = gp.astype(st[1] <= 0, x.dtype) if self.refractory else None
        spk, mem, _ = F._fire(x, st[0], p["beta"], p["thr"], p["thr"], self.reset_mechanism,
                              self.surrogate, self.detach_reset, self.reset_delay, False, active)
        if self.refractory:
            return spk, (mem, F._count_down(st[1], spk, self.refractory))
        return spk, (mem,)

    def _visible(self, st):
        return st[:1]


class IF(LIF):
    """Integrate-and-fire: LIF without leak (beta = 1)."""

    def __init__(self, threshold: float | Array = 1.0, **kw) -> None:
        for k in ("beta", "tau", "learn_beta"):
            if k in kw:
                raise TypeError(f"IF: got {k!r}; IF has no leak (use LIF)")
        super().__init__(1.0, threshold, **kw)


class LIFNode(_NodeHooks, LIF):
    """SpikingJelly's ``neuron.LIFNode`` with its defaults and semantics: the spike resets the
    membrane within its step (``reset_delay=False``), beta = 1 - 1/tau, the input scaled by
    1/tau when ``decay_input``, a hard reset to ``v_reset=0.0`` or a soft (subtract) reset with
    ``v_reset=None``, the reset not detached and a ``Sigmoid(alpha=4)`` surrogate by default.
    Single-step calls return the spikes only (the membrane is ``.v``); ``step_mode="m"`` takes
    (T, ...) sequences. grilly spikes where v > v_threshold (SpikingJelly: v >= v_threshold;
    the two differ only at exact equality). A v_reset other than 0 or None (the membrane leaks
    towards it, starts at it and resets to it) runs per step, not in the fused kernels.
    As SpikingJelly's BaseNode, a subclass may override ``neuronal_charge(x)`` (updating
    ``self.v``), ``neuronal_fire()``, ``neuronal_reset(spike)`` and ``register_memory``; it then
    runs per step (docs/snn.md)."""

    _builtin_hooks = True

    def __init__(self, tau: float = 2.0, decay_input: bool = True, v_threshold: float = 1.0,
                 v_reset: float | None = 0.0, surrogate_function: Surrogate | None = None,
                 detach_reset: bool = False, step_mode: str = "s", store_v_seq: bool = False,
                 backend: str | bool = "torch", **kw) -> None:
        op = type(self).__name__
        store_v_seq, backend = _sj_backend(store_v_seq, backend, op)
        tau = _sj_tau(tau, op)
        super().__init__(_sj_beta(tau), v_threshold, reset=_sj_reset(v_reset, op),
                         surrogate=_sj_surrogate(surrogate_function), detach_reset=detach_reset,
                         reset_delay=False, step_mode=step_mode, return_mem=False,
                         init_hidden=True, **kw)
        self.tau, self.decay_input, self.v_reset = tau, bool(decay_input), v_reset
        self.store_v_seq, self.v_seq, self.backend = bool(store_v_seq), None, backend
        # a hard reset to v_reset != 0 (the membrane also leaks towards it) runs per step
        # through the hooks; the fused kernels reset to zero
        self._v_rest = 0.0 if v_reset is None else float(v_reset)
        if self._v_rest != 0.0:
            self._custom_hooks = True

    def init_state(self, like: Array) -> tuple:
        """The membrane at v_reset (0 for a soft reset), as SpikingJelly's."""
        st = super().init_state(like)
        if self._v_rest == 0.0:
            return st
        return (gp.full_like(like, self._v_rest), *st[1:])

    def _scale(self, x):
        return x * (1.0 / self.tau) if self.decay_input else x

    def _step(self, x, st, p):
        return super()._step(self._scale(x), st, p)

    def _fused_multi_step(self, x_seq, st, p, return_mem):
        return super()._fused_multi_step(self._scale(x_seq), st, p, return_mem)

    def multi_step(self, x_seq, return_mem: bool = False):
        """The spike train of a (T, ...) sequence; with ``store_v_seq`` the membrane of every
        step is kept as ``.v_seq`` (SpikingJelly's attribute)."""
        out = super().multi_step(x_seq, return_mem=return_mem or self.store_v_seq)
        if self.store_v_seq:
            self.v_seq = out[1]
            return out if return_mem else out[0]
        return out

    def neuronal_charge(self, x: Array) -> None:
        """SpikingJelly's charge: v = v + (x - (v - v_reset)) / tau (``decay_input``) or
        v - (v - v_reset) / tau + x (v_reset 0 for a soft reset)."""
        beta = self._params()["beta"]
        v = beta * self.v + self._scale(x)
        self.v = v + (1.0 - beta) * self._v_rest if self._v_rest != 0.0 else v

    def reset(self) -> None:
        """SpikingJelly's ``node.reset()``: forget the state and ``v_seq``."""
        self.reset_state()
        self.v_seq = None


class IFNode(LIFNode):
    """SpikingJelly's ``neuron.IFNode``: no leak (v = v + x), a hard reset to ``v_reset=0.0``
    or a soft one with ``v_reset=None``, the reset not detached, ``Sigmoid(alpha=4)``."""

    def __init__(self, v_threshold: float = 1.0, v_reset: float | None = 0.0,
                 surrogate_function: Surrogate | None = None, detach_reset: bool = False,
                 step_mode: str = "s", store_v_seq: bool = False, backend: str | bool = "torch",
                 **kw) -> None:
        super().__init__(float("inf"), False, v_threshold, v_reset, surrogate_function,
                         detach_reset, step_mode, store_v_seq, backend, **kw)


def _sj_backend(store_v_seq, backend, op: str) -> tuple:
    """(store_v_seq, backend) from SpikingJelly 2's order (..., step_mode, store_v_seq) or
    0.0.0.0.14's (..., step_mode, backend, store_v_seq), by keyword or position; the backend
    ('torch', 'cupy', 'triton') changes nothing (grilly picks its kernels by device)."""
    if isinstance(store_v_seq, str):   # 0.0.0.0.14's positional backend
        store_v_seq, backend = (backend if isinstance(backend, bool) else False), store_v_seq
    if backend not in ("torch", "cupy", "triton"):
        raise ValueError(f"{op}: backend must be 'torch', 'cupy' or 'triton', got {backend!r}")
    if not isinstance(store_v_seq, bool):
        raise TypeError(f"{op}: store_v_seq must be a bool, got {type(store_v_seq).__name__}")
    return store_v_seq, backend


def _sj_tau(tau, op: str) -> float:
    if isinstance(tau, bool) or not isinstance(tau, numbers.Real) or not tau > 1.0:
        raise ValueError(f"{op}: tau must be a number > 1 (beta = 1 - 1/tau), got {tau!r}")
    return float(tau)


def _sj_beta(tau: float) -> float:
    return 1.0 - 1.0 / tau


def _sj_reset(v_reset, op: str) -> str:
    if v_reset is None:
        return "subtract"
    if isinstance(v_reset, numbers.Real) and not isinstance(v_reset, bool):
        return "zero"   # a hard reset (to v_reset; LIFNode handles v_reset != 0)
    raise TypeError(f"{op}: v_reset must be a float (a hard reset) or None (a soft reset), got "
                    f"{type(v_reset).__name__}")


def _sj_surrogate(sg):
    from .surrogate import Sigmoid
    return Sigmoid(4.0) if sg is None else sg


class Synaptic(_Neuron):
    """Second-order LIF (snnTorch ``Synaptic``): syn = alpha syn + x, mem = beta mem + syn - reset.
    Multi-step calls run two fused kernels per direction (the current's leaky scan, then LIF's)
    where the options allow (``fused=False``: step by step; ``recompute`` as LIF's)."""

    _state_names = ("syn", "mem")
    _mem_index = 1

    def __init__(self, alpha: float | Array, beta: float | Array, threshold: float | Array = 1.0,
                 *, reset: str = "subtract", surrogate: Surrogate | None = None,
                 detach_reset: bool = True, reset_delay: bool = True, learn_alpha: bool = False,
                 learn_beta: bool = False, learn_threshold: bool = False, step_mode: str = "s",
                 return_mem: bool = False, fused: bool = True, recompute: bool = False,
                 init_hidden: bool = False, dtype=None, **snntorch_kw) -> None:
        reset, surrogate, return_mem, opts = _port_kw(type(self).__name__, snntorch_kw, reset,
                                                      surrogate, return_mem)
        super().__init__(threshold=threshold, reset=reset, surrogate=surrogate,
                         detach_reset=detach_reset, reset_delay=reset_delay,
                         learn_threshold=learn_threshold, step_mode=step_mode,
                         return_mem=return_mem, dtype=dtype, init_hidden=init_hidden,
                         snntorch_opts=opts)
        self.fused, self.recompute = bool(fused), bool(recompute)
        _check_decay(alpha, "alpha", "Synaptic")
        _check_decay(beta, "beta", "Synaptic")
        self._set_param("alpha", alpha, learn_alpha)
        self._set_param("beta", beta, learn_beta)

    def _params(self) -> dict:
        return {"thr": self._threshold, "alpha": self._decay("alpha"), "beta": self._decay("beta")}

    def init_synaptic(self):
        """snnTorch's ``syn, mem = lif.init_synaptic()``: a new sequence; (None, None)."""
        return self._init_none()

    def _fused_multi_step(self, x_seq, st, p, return_mem):
        # two fused kernels per direction: the synaptic current's leaky scan, then LIF on it.
        # snnTorch's Synaptic zeroes the new membrane ((1 - r)(beta mem + syn)) where Leaky,
        # and the LIF kernel, zero the old one: that option runs per step
        if self.reset_mechanism == "zero" and self.reset_delay:
            return None
        if not (self.fused and _fused.supported(
                x_seq, self.surrogate, detach_reset=self.detach_reset, return_mem=return_mem,
                reset=self.reset_mechanism, reset_delay=self.reset_delay)):
            return None
        syn = _fused.synaptic_current(x_seq, st[0], p["alpha"])
        out = _fused.lif_sequence(syn, st[1], p["beta"], p["thr"],
                                  reset=self.reset_mechanism, reset_delay=self.reset_delay,
                                  surrogate=self.surrogate, recompute=self.recompute,
                                  return_mem=return_mem, detach_reset=self.detach_reset)
        self.state = (syn[-1], out[1])
        return (out[0], out[2]) if return_mem else out[0]

    def _charge(self, x, st, p, r):
        syn = p["alpha"] * st[0] + x
        mem = p["beta"] * st[1] + syn
        if self.reset_mechanism == "subtract":
            return syn, mem - r * p["thr"]
        if self.reset_mechanism == "zero":   # the new membrane zeroed (the current is not)
            return syn, mem - mem * r
        return syn, mem

    def _step(self, x, st, p):
        syn = p["alpha"] * st[0] + x
        spk, mem, _ = F._fire(syn, st[1], p["beta"], p["thr"], p["thr"], self.reset_mechanism,
                              self.surrogate, self.detach_reset, self.reset_delay, True, None)
        return spk, (syn, mem)


class AdaptiveLIF(_Neuron):
    """LIF with an adaptive threshold thr + gamma * a; a = rho a + spike (Bellec et al. 2018).
    Multi-step calls run all T steps in one fused kernel forward and one backward (``fused``,
    ``recompute`` as LIF's); the gradient reaches the input, the carried membrane and
    adaptation, and a learnable beta/threshold (rho and gamma are constants)."""

    _state_names = ("mem", "adapt")

    def __init__(self, beta: float | Array | None = None, threshold: float | Array = 1.0, *,
                 rho: float | Array = 0.95, gamma: float | Array = 0.1, tau: float | None = None,
                 dt: float = 1.0, reset: str = "subtract", surrogate: Surrogate | None = None,
                 detach_reset: bool = True, reset_delay: bool = True, learn_beta: bool = False,
                 learn_threshold: bool = False, step_mode: str = "s", return_mem: bool = False,
                 fused: bool = True, recompute: bool = False, init_hidden: bool = False,
                 dtype=None) -> None:
        super().__init__(threshold=threshold, reset=reset, surrogate=surrogate,
                         detach_reset=detach_reset, reset_delay=reset_delay,
                         learn_threshold=learn_threshold, step_mode=step_mode,
                         return_mem=return_mem, dtype=dtype, init_hidden=init_hidden)
        self._set_param("beta", _beta_arg(beta, tau, dt, "AdaptiveLIF"), learn_beta)
        _check_decay(rho, "rho", "AdaptiveLIF")
        self._set_param("rho", rho, False)
        self._set_param("gamma", gamma, False)
        self.fused, self.recompute = bool(fused), bool(recompute)

    def _params(self) -> dict:
        return {"thr": self._threshold, "beta": self._decay("beta"), "rho": self._decay("rho"),
                "gamma": self._gamma}

    def _fused_multi_step(self, x_seq, st, p, return_mem):
        # one kernel call per direction (alif_forward/alif_backward), the adaptation a second
        # state; rho and gamma are constants of the kernels, so a gradient asked of them (a
        # buffer set to require one) runs per step
        if any(isinstance(p[k], Array) and p[k].requires_grad for k in ("rho", "gamma")):
            return None
        if not (self.fused and _fused.supported(
                x_seq, self.surrogate, detach_reset=self.detach_reset, return_mem=return_mem,
                reset=self.reset_mechanism, reset_delay=self.reset_delay)):
            return None
        out = _fused.alif_sequence(x_seq, st[0], st[1], p["beta"], p["thr"], rho=p["rho"],
                                   gamma=p["gamma"], reset=self.reset_mechanism,
                                   reset_delay=self.reset_delay, surrogate=self.surrogate,
                                   recompute=self.recompute, return_mem=return_mem,
                                   detach_reset=self.detach_reset)
        self.state = (out[1], out[2])
        return (out[0], out[3]) if return_mem else out[0]

    def _step(self, x, st, p):
        spk, mem, adapt = F.adaptive_lif_step(
            x, st[0], st[1], beta=p["beta"], rho=p["rho"], gamma=p["gamma"], threshold=p["thr"],
            reset=self.reset_mechanism, surrogate=self.surrogate, detach_reset=self.detach_reset,
            reset_delay=self.reset_delay)
        return spk, (mem, adapt)


class RLeaky(_Neuron):
    """Recurrent LIF (snnTorch ``RLeaky``): mem = beta mem + x + V(spk_prev) - reset thr, V a
    Linear(n, n) over the previous spikes (``n_features``), a Conv2d(C, C, k) over spikes
    (B, C, H, W) (snnTorch's ``conv2d_channels=C``, ``kernel_size=k``), or one-to-one weights
    ``V``."""

    _state_names = ("spk", "mem")
    _mem_index = 1

    def __init__(self, beta: float | Array, n_features: int | None = None, *,
                 V: float | Array | None = None, threshold: float | Array = 1.0,
                 reset: str = "subtract", surrogate: Surrogate | None = None,
                 detach_reset: bool = True, reset_delay: bool = True, learn_beta: bool = False,
                 learn_threshold: bool = False, learn_recurrent: bool = True,
                 step_mode: str = "s", return_mem: bool = False, init_hidden: bool = False,
                 all_to_all: bool | None = None, linear_features: int | None = None,
                 dtype=None, **snntorch_kw) -> None:
        op = type(self).__name__
        channels = snntorch_kw.pop("conv2d_channels", None)
        kernel = snntorch_kw.pop("kernel_size", None)
        reset, surrogate, return_mem, opts = _port_kw(type(self).__name__, snntorch_kw, reset,
                                                      surrogate, return_mem)
        super().__init__(threshold=threshold, reset=reset, surrogate=surrogate,
                         detach_reset=detach_reset, reset_delay=reset_delay,
                         learn_threshold=learn_threshold, step_mode=step_mode,
                         return_mem=return_mem, dtype=dtype, init_hidden=init_hidden,
                         snntorch_opts=opts)
        _check_decay(beta, "beta", "RLeaky")
        self._set_param("beta", beta, learn_beta)
        if channels is not None or kernel is not None:
            self._init_conv_recurrence(channels, kernel, n_features, linear_features, all_to_all,
                                       V, learn_recurrent, op)
            return
        # snnTorch's spelling: all_to_all=True with linear_features=n, or all_to_all=False
        # with V (its default V=1.0 is the one-to-one weight then)
        if linear_features is not None:
            if n_features is not None and n_features != linear_features:
                raise TypeError(f"RLeaky: got both n_features={n_features} and "
                                f"linear_features={linear_features}")
            if all_to_all is False:
                raise ValueError("RLeaky: linear_features is the all-to-all recurrence; "
                                 "all_to_all=False takes V (one-to-one weights) instead")
            n_features = linear_features
        if all_to_all is True and n_features is None:
            raise ValueError("RLeaky: all_to_all=True needs linear_features (or n_features), "
                             "the number of neurons, or conv2d_channels and kernel_size")
        if all_to_all is False:
            if n_features is not None:
                raise ValueError("RLeaky: all_to_all=False is the one-to-one recurrence V; "
                                 "drop n_features")
            V = 1.0 if V is None else V
        if (n_features is None) == (V is None):
            raise ValueError("RLeaky: give exactly one of n_features (a Linear(n, n) recurrence) "
                             "or V (one-to-one recurrent weights)")
        if V is None:
            self.recurrent = Linear(n_features, n_features, dtype=self._dtype)
            if not learn_recurrent:
                self.recurrent.requires_grad_(False)
        else:
            self._set_param("V", V, learn_recurrent)

    def _init_conv_recurrence(self, channels, kernel, n_features, linear_features, all_to_all,
                              V, learn_recurrent: bool, op: str) -> None:
        """snnTorch's convolutional recurrence: V a Conv2d(C, C, kernel_size) over the previous
        spikes (B, C, H, W), padded to keep H and W ('same'; snnTorch's k // 2 for odd k)."""
        if channels is None or kernel is None:
            raise TypeError(f"{op}: conv2d_channels and kernel_size must both be given (the "
                            "convolutional recurrence)")
        if n_features is not None or linear_features is not None:
            raise TypeError(f"{op}: linear_features (or n_features) cannot be given with "
                            "conv2d_channels and kernel_size (one recurrence, linear or conv)")
        if all_to_all is False or V is not None:
            raise TypeError(f"{op}: the convolutional recurrence is all-to-all; all_to_all=False "
                            "(one-to-one weights V) takes no conv2d_channels or kernel_size")
        if isinstance(channels, bool) or not isinstance(channels, numbers.Integral):
            raise TypeError(f"{op}: conv2d_channels must be an int, got "
                            f"{type(channels).__name__}")
        if channels < 1:
            raise ValueError(f"{op}: conv2d_channels must be positive, got {channels}")
        kernel = _check_kernel(kernel, op)
        self.recurrent = Conv2d(int(channels), int(channels), kernel, padding="same",
                                dtype=self._dtype)
        if not learn_recurrent:
            self.recurrent.requires_grad_(False)

    def _check_params(self, shape: tuple) -> None:
        rec = self._modules.get("recurrent")
        if isinstance(rec, Conv2d) and (len(shape) != 4 or shape[1] != rec.in_channels):
            raise ValueError(f"{type(self).__name__}: the convolutional recurrence takes inputs "
                             f"(batch, {rec.in_channels}, H, W) (conv2d_channels), got shape "
                             f"{tuple(shape)}")
        super()._check_params(shape)

    def _params(self) -> dict:
        return {"thr": self._threshold, "beta": self._decay("beta")}

    def init_rleaky(self):
        """snnTorch's ``spk, mem = lif.init_rleaky()``: a new sequence; (None, None)."""
        self.reset_state()
        return None, None

    def _recur(self, spk):
        return self.recurrent(spk) if "recurrent" in self._modules else self._V * spk

    def _charge(self, x, st, p, r):
        mem = p["beta"] * st[1] + x + self._recur(st[0])
        if self.reset_mechanism == "subtract":
            return st[0], mem - r * p["thr"]
        if self.reset_mechanism == "zero":
            return st[0], mem - r * mem
        return st[0], mem

    def _step(self, x, st, p):
        rec = self._recur(st[0])
        spk, mem, _ = F._fire(x + rec, st[1], p["beta"], p["thr"], p["thr"], self.reset_mechanism,
                              self.surrogate, self.detach_reset, self.reset_delay, True, None)
        return spk, (spk, mem)

    def _visible(self, st):
        return st[1:]


def _check_decay(v, name: str, op: str) -> None:
    if isinstance(v, numbers.Real) and not isinstance(v, bool) and not 0.0 <= v <= 1.0:
        raise ValueError(f"{op}: {name} must be in [0, 1], got {v}")


def _param_value(value, name: str, op: str):
    """A parameter as given: a real number (Python or NumPy) as a float, or per-neuron values
    (an Array, a list/tuple, a NumPy array, a torch tensor) for gp.asarray."""
    if isinstance(value, gp.Array):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    if (isinstance(value, (list, tuple)) or hasattr(value, "__array__")
            or hasattr(value, "__dlpack__")):
        return value.detach() if hasattr(value, "detach") else value
    raise TypeError(f"{op}: {name} must be a float or an array of per-neuron values, got "
                    f"{type(value).__name__}")


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    try:
        return tuple(gp.broadcast_shapes(tuple(shape), tuple(target))) == tuple(target)
    except (ValueError, TypeError):
        return False


def _beta_arg(beta, tau, dt, op: str):
    if (beta is None) == (tau is None):
        raise ValueError(f"{op}: give exactly one of beta (decay per step) or tau (with dt)")
    if tau is not None:
        return F.beta_from_tau(tau, dt)
    _check_decay(beta, "beta", op)
    return beta


