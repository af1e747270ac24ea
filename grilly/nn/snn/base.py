"""SpikingJelly's ``activation_based.base``: ``StepModule`` (``step_mode`` 's' or 'm') and
``MemoryModule``, the base of stateful modules written the SpikingJelly way.

    class Counter(base.MemoryModule):
        def __init__(self):
            super().__init__()
            self.register_memory("n", 0.0)   # self.n; reset() restores 0.0

        def single_step_forward(self, x):
            self.n = self.n + x
            return self.n

A memory is read and assigned as an attribute, restored to (a copy of) its registered value by
``reset()`` (``snn.functional.reset_net``), cut from the graph by ``detach()``
(``detach_net``) and kept out of ``state_dict``. ``forward`` runs ``single_step_forward`` ('s')
or ``multi_step_forward`` ('m': ``single_step_forward`` on every step, stacked, unless
overridden); ``single_step_forward`` defaults to SpikingJelly 2's
``single_step_functional_forward(inputs, states)``."""
from __future__ import annotations

import copy

from ...array import api as gp
from ...array.array import Array
from ...array.dispatch import structure_changed
from ..module import Module

__all__ = ["StepModule", "SingleStepModule", "MultiStepModule", "MemoryModule"]


class StepModule:
    """SpikingJelly's ``base.StepModule``: a ``step_mode`` checked against
    ``supported_step_mode()``."""

    def supported_step_mode(self) -> tuple:
        """The step modes this module runs: 's' one step per call, 'm' a (T, ...) sequence."""
        return ("s", "m")

    @property
    def step_mode(self) -> str:
        """'s' (one step per call) or 'm' (a (T, ...) sequence per call)."""
        return self.__dict__.get("_step_mode", "s")

    @step_mode.setter
    def step_mode(self, value: str) -> None:
        if value not in self.supported_step_mode():
            raise ValueError(f"{type(self).__name__}: step_mode must be one of "
                             f"{self.supported_step_mode()}, got {value!r}")
        self.__dict__["_step_mode"] = value
        structure_changed()   # (grilly.jit: a graph traced in the other mode must not replay)


class SingleStepModule(StepModule):
    """SpikingJelly's ``base.SingleStepModule``: step_mode 's' only."""

    def supported_step_mode(self) -> tuple:
        """('s',)."""
        return ("s",)


class MultiStepModule(StepModule):
    """SpikingJelly's ``base.MultiStepModule``: step_mode 'm' only."""

    def supported_step_mode(self) -> tuple:
        """('m',)."""
        return ("m",)


def _fresh(value):
    """A copy of a memory's reset value (an Array copied, not shared, and off the graph)."""
    if isinstance(value, Array):
        return gp.asarray(value.detach(), copy=True)
    return copy.deepcopy(value)


def _moved(value, conv, skip: set):
    """``value`` with every Array in it converted by ``conv`` (lists and dicts in place, tuples
    and named tuples rebuilt); the Arrays whose ids are in ``skip`` stay."""
    if isinstance(value, Array):
        return value if id(value) in skip else conv(value)
    if isinstance(value, list):
        value[:] = [_moved(v, conv, skip) for v in value]
    elif isinstance(value, dict):
        for k, v in value.items():
            value[k] = _moved(v, conv, skip)
    elif isinstance(value, tuple):
        items = [_moved(v, conv, skip) for v in value]
        if any(a is not b for a, b in zip(items, value)):
            return type(value)._make(items) if hasattr(type(value), "_make") else tuple(items)
    return value


class KeptState:
    """Mixin for a module that keeps Arrays between calls in its attributes (a membrane, a
    mask, a queue, memories): ``Module.to(device, dtype)`` moves and casts them with its
    parameters (torch leaves plain tensor attributes behind; SpikingJelly moves its memories),
    so the next call continues the sequence on the new device."""

    def _to_state(self, conv) -> None:
        d = self.__dict__
        skip = {id(a) for k in ("_parameters", "_buffers") for a in d.get(k, {}).values()}
        for k, v in d.items():
            if k not in ("_parameters", "_buffers", "_modules"):
                d[k] = _moved(v, conv, skip)


class _Memories(KeptState):
    """The memory dictionary of a MemoryModule, shared with grilly's SpikingJelly neurons (their
    subclasses may register memories too). Created on the first ``register_memory``."""

    def register_memory(self, name: str, value) -> None:
        """A state variable ``self.<name>`` starting at ``value``; ``reset()`` restores it."""
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"{type(self).__name__}.register_memory: name must be an identifier "
                            f"str, got {name!r}")
        if hasattr(self, name):
            raise KeyError(f"{type(self).__name__}.register_memory: attribute {name!r} already "
                           "exists")
        d = self.__dict__
        d.setdefault("_memories", {})[name] = value
        d.setdefault("_memories_rv", {})
        self.set_reset_value(name, value)

    def set_reset_value(self, name: str, value) -> None:
        """The value ``reset()`` gives memory ``name`` from now on (copied)."""
        if name not in self.__dict__.get("_memories", {}):
            raise KeyError(f"{type(self).__name__}.set_reset_value: {name!r} is not a registered "
                           "memory")
        self.__dict__["_memories_rv"][name] = _fresh(value)

    def get_reset_value(self, name: str):
        """The value ``reset()`` gives memory ``name``."""
        if name not in self.__dict__.get("_memories", {}):
            raise KeyError(f"{type(self).__name__}.get_reset_value: {name!r} is not a registered "
                           "memory")
        return self.__dict__["_memories_rv"][name]

    def memories(self):
        """Every memory's current value."""
        yield from self.__dict__.get("_memories", {}).values()

    def named_memories(self):
        """(name, value) of every memory."""
        yield from self.__dict__.get("_memories", {}).items()

    def _reset_memories(self) -> None:
        mem, rv = self.__dict__.get("_memories", {}), self.__dict__.get("_memories_rv", {})
        for k in mem:
            mem[k] = _fresh(rv[k])

    def _detach_memories(self) -> None:
        mem = self.__dict__.get("_memories", {})
        for k, v in mem.items():
            if isinstance(v, Array):
                mem[k] = v.detach()

    def __getattr__(self, name: str):
        mem = self.__dict__.get("_memories")
        if mem is not None and name in mem:
            return mem[name]
        return super().__getattr__(name)

    def __setattr__(self, name: str, value) -> None:
        mem = self.__dict__.get("_memories")
        if mem is not None and name in mem:
            mem[name] = value
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        mem = self.__dict__.get("_memories")
        if mem is not None and name in mem:
            del mem[name]
            del self.__dict__["_memories_rv"][name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.__dict__.get("_memories", {})))


def _stack(outs: list):
    """The per-step outputs stacked along a new time axis (each member of tuple outputs)."""
    if isinstance(outs[0], tuple):
        return tuple(gp.stack(list(o), axis=0) for o in zip(*outs))
    return gp.stack(outs, axis=0)


class MemoryModule(_Memories, StepModule, Module):
    """SpikingJelly's ``base.MemoryModule``: a grilly.nn Module with registered memories and a
    step_mode ('s' by default)."""

    def __init__(self) -> None:
        super().__init__()
        self.__dict__["_memories"], self.__dict__["_memories_rv"] = {}, {}
        self.__dict__["_step_mode"] = "s"

    def forward(self, *args, **kwargs):
        """``single_step_forward`` (step_mode 's') or ``multi_step_forward`` ('m')."""
        if self.step_mode == "s":
            return self.single_step_forward(*args, **kwargs)
        if self.step_mode == "m":
            return self.multi_step_forward(*args, **kwargs)
        raise ValueError(f"{type(self).__name__}: step_mode must be 's' or 'm', got "
                         f"{self.step_mode!r}")

    def single_step_forward(self, x: Array, *args, **kwargs):
        """One step: by default SpikingJelly 2's ``single_step_functional_forward((x, *args),
        states)`` with the memories as states (its new states written back)."""
        names = list(self.__dict__["_memories"])
        outs, states = self.single_step_functional_forward(
            (x, *args), tuple(self._memories[n] for n in names), **kwargs)
        if len(states) != len(names):
            raise ValueError(f"{type(self).__name__}.single_step_functional_forward: returned "
                             f"{len(states)} states for {len(names)} memories {names}")
        for n, v in zip(names, states):
            self._memories[n] = v
        return outs[0] if len(outs) == 1 else outs

    def single_step_functional_forward(self, inputs: tuple, states: tuple, **kwargs) -> tuple:
        """SpikingJelly 2's explicit step: ((outputs...), (new states...)); define it, or
        ``single_step_forward``."""
        raise NotImplementedError(f"{type(self).__name__}: a MemoryModule defines "
                                  "single_step_forward(x) (or single_step_functional_forward)")

    def multi_step_forward(self, x_seq: Array, *args, **kwargs):
        """A (T, ...) sequence: ``single_step_forward`` on every step, the outputs stacked."""
        if not isinstance(x_seq, Array) or x_seq.ndim < 1 or x_seq.shape[0] == 0:
            raise ValueError(f"{type(self).__name__}: step_mode 'm' expects an Array (T, ...) "
                             f"with T >= 1, got {getattr(x_seq, 'shape', type(x_seq).__name__)}")
        return _stack([self.single_step_forward(x, *args, **kwargs)
                       for x in gp.unstack(x_seq, axis=0)])

    def reset(self) -> None:
        """Every memory back to (a copy of) its registered value."""
        self._reset_memories()

    def detach(self) -> None:
        """Every Array memory cut from the graph (truncated BPTT)."""
        self._detach_memories()

    def reset_state(self) -> None:
        """grilly's name for ``reset()`` (``snn.reset(net)``)."""
        self.reset()

    def detach_state(self) -> None:
        """grilly's name for ``detach()`` (``snn.detach(net)``)."""
        self.detach()

    def extra_repr(self) -> str:
        return f"step_mode={self.step_mode}"


_HOOKS = ("neuronal_charge", "neuronal_fire", "neuronal_reset")


class _NodeHooks(_Memories):
    """SpikingJelly's BaseNode hooks on grilly's own SpikingJelly neurons (LIFNode, IFNode,
    ParametricLIFNode, QIFNode, ...). A subclass overriding ``neuronal_charge(x)``,
    ``neuronal_fire()`` or ``neuronal_reset(spike)`` runs them on every step (in 's' and 'm');
    the built-in classes (``_builtin_hooks = True``) keep their own step and fused kernels."""

    _custom_hooks = False

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        if not cls.__dict__.get("_builtin_hooks") and any(n in cls.__dict__ for n in _HOOKS):
            cls._custom_hooks = True

    @property
    def v(self):
        """The membrane potential (SpikingJelly's ``.v``): v_reset (0.0 for a soft reset) before
        the first call."""
        st = self.__dict__.get("state")
        if st is None:
            return 0.0 if self.v_reset is None else float(self.v_reset)
        return st[0]

    @v.setter
    def v(self, value) -> None:
        st = self.__dict__.get("state")
        if st is None:
            if len(self._state_names) != 1:
                raise ValueError(f"{type(self).__name__}: set .v after the first call")
            self.__dict__["state"] = (value,)
        else:
            self.__dict__["state"] = (value, *st[1:])

    @property
    def surrogate_function(self):
        """SpikingJelly's name for the surrogate spike function."""
        return self.surrogate

    @surrogate_function.setter
    def surrogate_function(self, value) -> None:
        self.surrogate = value

    @property
    def v_threshold(self):
        """The firing threshold (SpikingJelly's name): a float, or per-neuron values."""
        return self._threshold

    @v_threshold.setter
    def v_threshold(self, value) -> None:
        # SpikingJelly reads v_threshold at every step, so assigning it (a float, or per-neuron
        # values as functional.set_threshold_margin does) takes effect from the next step
        d = self.__dict__
        d.get("_buffers", {}).pop("_threshold", None)
        d.pop("_threshold", None)
        self._set_param("threshold", value, False)
        if "_threshold" in d.get("_buffers", {}):   # per neuron: out of state_dict (as in SJ)
            self.register_buffer("_threshold", d["_buffers"]["_threshold"], persistent=False)

    def neuronal_fire(self) -> Array:
        """SpikingJelly's fire: surrogate(v - v_threshold)."""
        return self.surrogate(self.v - self.v_threshold)

    def neuronal_reset(self, spike: Array) -> None:
        """SpikingJelly's reset: hard v = S v_reset + (1 - S) v, soft (v_reset None) v - S
        v_threshold; S detached with ``detach_reset``."""
        s = spike.detach() if self.detach_reset else spike
        if self.v_reset is None:
            self.v = self.v - s * self.v_threshold
        else:
            self.v = s * self.v_reset + (1.0 - s) * self.v

    def _after_fire(self, spike: Array) -> None:
        """A step's update between fire and reset (IzhikevichNode's recovery)."""

    def _per_step_only(self) -> bool:
        return self._custom_hooks or super()._per_step_only()

    def _advance(self, x: Array, st: tuple, p: dict) -> tuple:
        if not self._custom_hooks:
            return super()._advance(x, st, p)
        self.__dict__["state"] = st
        self.neuronal_charge(x)
        spike = self.neuronal_fire()
        self._after_fire(spike)
        self.neuronal_reset(spike)
        return spike, self.__dict__["state"]

    def reset_state(self) -> None:
        """Forget the state; registered memories back to their reset values."""
        super().reset_state()
        self._reset_memories()

    def detach_state(self) -> None:
        """Cut the state and the registered memories from the graph."""
        super().detach_state()
        self._detach_memories()

    def detach(self) -> None:
        """SpikingJelly's ``node.detach()``: ``detach_state()``."""
        self.detach_state()
