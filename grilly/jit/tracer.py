"""Trace once, replay without the array layer: ``Tracer`` records every kernel call a function
makes (on every device), ``TracedGraph`` runs that list again on new inputs.

A record is a kernel of a device's table (``device.kernels``: the backend's own or a default
composition's kernels) with its arguments: a buffer produced by an earlier record or given as a
registered input is a *slot*, filled anew on each replay; any other argument is a constant,
kept by reference (a parameter's buffer, updated in place by the optimizer kernels, is one).
Python code that must run again on every replay (an optimizer's step: it counts steps and reads
the learning rate; a random draw: it advances the generator) registers itself as a *host op*
through ``grilly.array.dispatch.host_op`` and is replayed as a call; the arrays it returns
are slots like a kernel's results, so the kernels after it (an optimizer's updates reading the
step's scalars, a draw reading its counter) are recorded and captured.

Arrays created during the trace that are still alive when the graph is built (a parameter's
``.grad``, a module attribute set in forward) are rebound to each replay's buffers as they are
made, so they read as they would after an eager call. Reading an array on the host inside a
trace (``float(x)``, ``.tolist()``, ``numpy.asarray``) or an op whose result shape depends on the
data (boolean masks, ``nonzero``) raises JitError naming the op: a replay could not honour it.
"""
from __future__ import annotations

import functools
import operator
import sys
import threading
import warnings
import weakref
from itertools import chain
from typing import Any, Callable

from ..array import array as _array_mod
from ..array import dispatch as _dispatch
from ..array.array import Array
from ..backends.registry import registry as _registry

__all__ = ["JitError", "Tracer", "TracedGraph"]

# kernels whose results go to the host or whose result shape depends on the data
HOST_KERNELS = frozenset({"to_host", "host_view", "mask_indices"})

# Array's .grad slot: while a trace records, Array.grad is a property over it that tells the
# tracer which leaves' gradients the traced Python reads or assigns (Tracer._grad_access)
_GRAD = Array.__dict__["grad"]
_TAPE = "grilly.autograd.tape"   # backward's own reads of .grad are not the function's


_MISSING = object()   # a module attribute that did not exist


def _state_like(v) -> bool:
    """Whether a module attribute's value is state a trace follows: None, an Array, or a tuple
    or list of Arrays (and Nones), as a spiking neuron's ``state``."""
    if v is None or isinstance(v, Array):
        return True
    return isinstance(v, (tuple, list)) and all(e is None or isinstance(e, Array) for e in v)


def _elements(v) -> list:
    """A state-like value's Arrays (and Nones) in order; none for None or a missing one."""
    if isinstance(v, Array):
        return [v]
    return list(v) if isinstance(v, (tuple, list)) else []


def _structure(v):
    """What a replay compares a module attribute's value with: its kind and length."""
    if v is None or isinstance(v, Array):
        return type(v)
    return type(v), len(v)


def _attr(m, name: str):
    """A module's attribute as Module.__setattr__ keeps it (a buffer or a plain attribute)."""
    bufs = m.__dict__.get("_buffers", {})
    return bufs[name] if name in bufs else m.__dict__.get(name, _MISSING)


class JitError(RuntimeError):
    """What a trace cannot record (a host read, a data-dependent shape, a nested trace)."""


def tracing() -> bool:
    """Whether this thread is recording a trace now (its Python will not run on a replay)."""
    active = _active
    return active is not None and active._mine()


class _Slot:
    """A placeholder for the buffer in slot ``i`` of a replay."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __repr__(self) -> str:
        return f"%{self.i}"


class _ArraySlot(_Slot):
    """A host op's Array argument whose buffer is slot ``i``: a replay passes a new Array of
    that slot's buffer (its inputs' and results' buffers change), never the traced one."""

    __slots__ = ("dtype", "device")

    def __init__(self, i: int, dtype, device) -> None:
        super().__init__(i)
        self.dtype, self.device = dtype, device


class _Record:
    """One step of a graph: a kernel call (``host`` False) or a host op."""

    __slots__ = ("name", "fn", "args", "kwargs", "fill", "outs", "shapes", "host", "rebind",
                 "nested", "device", "grad_sets")

    def __init__(self, name, fn, args, kwargs, outs, shapes, host=False, device=None):
        self.name, self.fn, self.host, self.device = name, fn, host, device
        self.args, self.kwargs = args, kwargs
        self.outs, self.shapes = outs, shapes   # slot per flattened result (None: not a slot)
        self.rebind: list = []                 # (slot, weakref to an Array) rebound after it
        self.grad_sets: list = []              # (slot, weakref to a leaf, dtype, device)
        # top-level slot arguments: (position, slot), filled into a copy of args on replay
        self.fill = [(p, a.i) for p, a in enumerate(args) if isinstance(a, _Slot)]
        self.nested = any(isinstance(a, (tuple, list)) and _has_slot(a) for a in args)

    def bind(self, buf, slot: int) -> None:
        """Read slot ``slot`` wherever the trace passed ``buf`` as a constant."""
        if _holds(self.args, buf) or _holds(tuple(self.kwargs.values()), buf):
            self.args = _bind(self.args, buf, _Slot(slot))
            self.kwargs = {k: _bind(v, buf, _Slot(slot)) for k, v in self.kwargs.items()}
            self.fill = [(p, a.i) for p, a in enumerate(self.args) if isinstance(a, _Slot)]
            self.nested = any(isinstance(a, (tuple, list)) and _has_slot(a) for a in self.args)

    def inputs(self) -> list[int]:
        """The slots this step reads."""
        out: list[int] = []
        _collect(self.args, out)
        _collect(tuple(self.kwargs.values()), out)
        return out


def _has_slot(x) -> bool:
    if isinstance(x, _Slot):
        return True
    return isinstance(x, (tuple, list)) and any(_has_slot(v) for v in x)


def _holds(x, buf) -> bool:
    if x is buf:
        return True
    return isinstance(x, (tuple, list)) and any(_holds(v, buf) for v in x)


def _bind(x, buf, slot: "_Slot"):
    if x is buf:
        return slot
    if isinstance(x, tuple):
        return tuple(_bind(v, buf, slot) for v in x)
    if isinstance(x, list):
        return [_bind(v, buf, slot) for v in x]
    return x


def _collect(x, out: list) -> None:
    if isinstance(x, _Slot):
        out.append(x.i)
    elif isinstance(x, (tuple, list)):
        for v in x:
            _collect(v, out)


def _resolve(x, vals: list):
    if isinstance(x, _Slot):
        return vals[x.i]
    if isinstance(x, tuple):
        return tuple(_resolve(v, vals) for v in x)
    if isinstance(x, list):
        return [_resolve(v, vals) for v in x]
    return x


def _flat(r) -> list:
    """A kernel's result as a flat list (a tuple result's elements, one level)."""
    return list(r) if isinstance(r, tuple) else [r]


# one trace at a time (it wraps every device's kernel table): a trace begun in another thread
# waits for the active one to end; one begun inside it, in its thread, is an error
_lock = threading.Condition()
_active: "Tracer | None" = None


class Tracer:
    """Records the kernels run between ``__enter__`` and ``__exit__`` (one trace at a time).

    ``register_input(x)`` marks an Array as an input (its buffer becomes a slot); ``build(outputs)``
    returns the TracedGraph that maps new inputs to new outputs."""

    def __init__(self) -> None:
        self.records: list[_Record] = []
        self.nslots = 0
        self._ids: dict[int, int] = {}      # id(buffer) -> slot
        self._keep: list = []               # every buffer seen, so that no id is reused
        self._inputs: list[tuple[int, Array]] = []
        self._made: list = []               # weakrefs to Arrays created during the trace
        self._saved: list = []
        self._thread = None
        self._paused = 0
        self._modules: dict = {}            # id -> (weakref to a Module called, its training)
        self._grads: list = []              # (weakref to a leaf, slot, dtype, device) backward
                                            # set its .grad to, in order
        # id(leaf) -> [weakref, its .grad when the trace first touched it, read before
        # assigned, assignments]: the .grad reads and writes of the traced Python (not backward's
        # reads), from the first of each leaf on
        self._touched: dict = {}
        self._set_by_backward: set = set()  # ids of the leaves backward set
        self._entry: list = []              # (weakref to a leaf, its .grad at the call) where
                                            # backward read it first: the gradient accumulates
        # (id(module), name) -> [weakref, the attribute's value when the trace first met it,
        # whether that was the traced Python assigning it]: module state (None, Arrays, tuples
        # of them) from each module's first call or assignment on
        self._attrs: dict = {}

    # ---- the context ---------------------------------------------------------------------------
    def __enter__(self) -> "Tracer":
        global _active
        me = threading.get_ident()
        with _lock:
            if _active is not None and _active._thread == me:
                raise JitError("grilly.jit: a trace is already active (traces do not nest)")
            while _active is not None:
                _lock.wait()
            _active = self
            self._thread = me
        for d in _registry.devices():
            table = d.kernels
            self._saved.append((table, dict(table)))
            for op, fn in list(table.items()):
                table[op] = self._wrap(op, fn, d)
        _array_mod._new_hook = self._on_new
        _dispatch.hooks.host_op = self._host_op
        _dispatch.hooks.module_call = self._on_module
        _dispatch.hooks.module_setattr = self._on_setattr
        _dispatch.hooks.grad_set = self._on_grad_set
        Array.grad = self._grad_access()
        return self

    def __exit__(self, *exc) -> None:
        global _active
        _array_mod._new_hook = None
        _dispatch.hooks.host_op = None
        _dispatch.hooks.module_call = None
        _dispatch.hooks.module_setattr = None
        _dispatch.hooks.grad_set = None
        Array.grad = _GRAD
        for table, saved in self._saved:
            for op, fn in saved.items():   # item by item: a table's update() may wrap again
                table[op] = fn
        self._saved.clear()
        with _lock:
            _active = None
            _lock.notify_all()

    def _mine(self) -> bool:
        return not self._paused and threading.get_ident() == self._thread

    # ---- recording -----------------------------------------------------------------------------
    def register_input(self, x: Array) -> None:
        """Mark ``x`` as an input: a replay takes a new Array of its shape, dtype and device."""
        if not isinstance(x, Array):
            raise TypeError(f"Tracer.register_input: expected a grilly Array, got "
                            f"{type(x).__name__}")
        self._inputs.append((self._new_slot(x._buf), x))

    def _new_slot(self, buf) -> int:
        i = self.nslots
        self.nslots += 1
        self._ids[id(buf)] = i
        self._keep.append(buf)
        return i

    def _encode(self, x):
        if isinstance(x, (tuple, list)):
            enc = [self._encode(v) for v in x]
            return tuple(enc) if isinstance(x, tuple) else enc
        i = self._ids.get(id(x))
        return _Slot(i) if i is not None else x

    def _outs(self, r) -> tuple[list, list]:
        outs, shapes = [], []
        for v in _flat(r):
            if v is None or isinstance(v, (bool, int, float, str)):
                outs.append(None)
                shapes.append(None)
            else:
                outs.append(self._new_slot(v))
                shapes.append(tuple(getattr(v, "shape", ())))
        return outs, shapes

    def _wrap(self, op: str, fn: Callable, device) -> Callable:
        tracer = self

        def traced(*args, **kwargs):
            if not tracer._mine():
                return fn(*args, **kwargs)
            if op in HOST_KERNELS:
                raise JitError(
                    f"grilly.jit: {op} inside a trace "
                    + ("reads an array on the host (float(), bool(), .tolist(), numpy): "
                       if op != "mask_indices" else
                       "gives a result whose shape depends on the data (a boolean mask, "
                       "nonzero): ")
                    + "a replay could not repeat it; return the array from the traced function "
                      "and read it outside")
            enc = tuple(tracer._encode(a) for a in args)
            kw = {k: tracer._encode(v) for k, v in kwargs.items()}
            r = fn(*args, **kwargs)
            outs, shapes = tracer._outs(r)
            tracer.records.append(_Record(op, fn, enc, kw, outs, shapes, device=device))
            return r

        traced.__dict__.update(getattr(fn, "__dict__", {}))   # what a kernel declares
        traced.__name__ = getattr(fn, "__name__", op)
        return traced

    def _on_module(self, m) -> None:
        if self._mine() and id(m) not in self._modules:
            self._modules[id(m)] = (weakref.ref(m), bool(getattr(m, "training", False)))
            # its state as the call finds it (a neuron's membrane from the previous call)
            d = m.__dict__
            for name, v in (*d.items(), *d.get("_buffers", {}).items()):
                if (_state_like(v) or _scalar(v)) and (id(m), name) not in self._attrs:
                    self._attrs[(id(m), name)] = [weakref.ref(m), name, v, False]

    def _on_setattr(self, m, name: str) -> None:
        if not self._mine() or (id(m), name) in self._attrs:
            return
        d = m.__dict__
        if name in d.get("_parameters", {}) or name in d.get("_modules", {}):
            return
        v = _attr(m, name)
        if v is _MISSING or _state_like(v) or _scalar(v):
            self._attrs[(id(m), name)] = [weakref.ref(m), name, v, True]

    def _on_grad_set(self, leaf) -> None:
        if self._mine():
            g = _GRAD.__get__(leaf, Array)
            ref = weakref.ref(leaf)
            self._grads.append((ref, self._ids.get(id(g._buf)), g._dtype, g._device))
            if id(leaf) not in self._set_by_backward:
                self._set_by_backward.add(id(leaf))
                t = self._touched.get(id(leaf))
                # backward's assignment is the first touch of this leaf's .grad: what it held at
                # the call flowed into the gradient (set where None, added to where an Array)
                if t is not None and t[0]() is leaf and t[3] == 1 and not t[2]:
                    self._entry.append((ref, t[1]))

    def _touch_grad(self, a: Array, assign: bool) -> None:
        t = self._touched.get(id(a))
        if t is None or t[0]() is not a:
            t = self._touched[id(a)] = [weakref.ref(a), _GRAD.__get__(a, Array), False, 0]
        if assign:
            t[3] += 1
        elif not t[3]:
            t[2] = True

    def _grad_access(self) -> property:
        """Array.grad while tracing: the slot, with each read or assignment of a leaf's .grad by
        the traced Python reported (reads by autograd's backward are not: backward reads it to
        add to it; a read by the function, as zero_grad()'s ``if p.grad is None``, means that
        the function decides what happens to it)."""
        tracer = self
        get, put, delete = _GRAD.__get__, _GRAD.__set__, _GRAD.__delete__

        def fget(a):
            if a.requires_grad and tracer._mine() \
                    and sys._getframe(1).f_globals.get("__name__") != _TAPE:
                tracer._touch_grad(a, False)
            return get(a, Array)

        def fset(a, v):
            if a.requires_grad and tracer._mine():
                tracer._touch_grad(a, True)
            put(a, v)

        def fdel(a):
            if a.requires_grad and tracer._mine():
                tracer._touch_grad(a, True)
            delete(a)

        return property(fget, fset, fdel, doc="The gradient (the tracer sees its reads)")

    def _on_new(self, a: Array) -> None:
        if self._mine():
            self._made.append(weakref.ref(a))

    def _host_op(self, fn: Callable, args: tuple):
        """Run ``fn(*args)`` now and on every replay (its own kernels are not recorded)."""
        if not self._mine():
            return fn(*args)
        self._paused += 1
        try:
            r = fn(*args)
        finally:
            self._paused -= 1
        flat = [v._buf if isinstance(v, Array) else None for v in _flat(r)]
        outs = [self._new_slot(b) if b is not None else None for b in flat]
        shapes = [tuple(b.shape) if b is not None else None for b in flat]
        # an Array argument made in the trace (or an input) is read from its slot on a replay
        # (a host round trip of linalg or the cpu backend's FFTs on the replay's arrays)
        ids = self._ids
        args = tuple(_ArraySlot(ids[id(a._buf)], a._dtype, a._device)
                     if isinstance(a, Array) and id(a._buf) in ids else a for a in args)
        self.records.append(_Record(getattr(fn, "__name__", "host_op"), fn, args, {}, outs,
                                    shapes, host=True))
        for v in _flat(r):   # Arrays a host op returns are rebound like any made in the trace
            if isinstance(v, Array):
                self._made.append(weakref.ref(v))
        return r

    # ---- the graph -----------------------------------------------------------------------------
    def _made_params(self) -> str | None:
        """The first module whose parameters the trace made or replaced (a lazy module's first
        call), or None: such a graph would initialize them again on every replay."""
        inputs = {s for s, _ in self._inputs}
        for ref, _ in self._modules.values():
            m = ref()
            if m is None:
                continue
            for p, _ in _params_of(m):
                s = self._ids.get(id(p._buf))
                if s is not None and s not in inputs:   # its buffer is a kernel's result
                    return type(m).__name__
        return None

    def _check_scalars(self) -> None:
        """A module's Python number or string that its call changed (a counter, ``self.n += 1``)
        would not change on a replay: JitError names it."""
        for ref, name, v0, assigned in self._attrs.values():
            m = ref()
            if m is None or assigned or not _scalar(v0) or name == "training":
                continue
            v1 = _attr(m, name)
            if v1 is not v0 and v1 != v0:
                raise JitError(f"grilly.jit: {type(m).__name__}.{name} changed from {v0!r} to "
                               f"{v1!r} in the traced call; a replay runs kernels, not Python, and "
                               "would not change it (keep such state in an Array, updated in "
                               "place, or outside the traced function)")

    def _struct_guards(self, modules: list) -> list:
        """What a replay needs of each module the trace called besides its mode and parameters:
        its submodules and buffers the same objects (the kernels hold a buffer, and a submodule
        swapped in, ``model.head = nn.Linear(...)``, is not in the graph), its hooks and its
        parameters' gradient hooks the same (a hook added or removed changes what runs), and
        its Python numbers and strings equal to what the trace's call found (``dropout.p = 0``,
        ``bn.momentum = 0.5``: the kernels were traced with the old value). As
        (weakref, submodules, buffer names, buffers, [(name, value)], hooks)."""
        out = []
        for ref, _ in modules:
            m = ref()
            if m is None:
                continue
            d = m.__dict__
            bufs = [(n, b) for n, b in d.get("_buffers", {}).items()
                    for a in (self._attrs.get((id(m), n)),)
                    if a is None or a[2] is b]   # (one the trace replaced: _module_state)
            scalars = [(name, v0) for r, name, v0, assigned in self._attrs.values()
                       if r() is m and not assigned and _scalar(v0) and name != "training"
                       and name in d]
            out.append((ref, tuple(d.get("_modules", {}).values()), tuple(n for n, _ in bufs),
                        tuple(b for _, b in bufs), scalars, _hooks_of(m)))
        return out

    def _module_state(self, outs: list, out_slots: list) -> tuple[list, list, list]:
        """Module state the trace replaced (an attribute holding None, an Array or a tuple of
        them, as a spiking neuron's membrane): each such Array the kernels read becomes an input,
        read from the attribute on every replay (not the trace's buffer); the attribute's new
        value becomes a hidden output, assigned again after every replay; and the graph holds
        only while the attribute's value is like the one the trace found (None, or Arrays of
        the same shapes), else the function traces again (a reset_state() between calls)."""
        guards, inputs, assign = [], [], []
        kernels = [rec for rec in self.records if not rec.host]
        for ref, name, v0, assigned in self._attrs.values():
            m = ref()
            if m is None:
                continue
            v1 = _attr(m, name)
            if v1 is v0 or not (v1 is _MISSING or _state_like(v1)):
                continue
            read = []
            for k, a in enumerate(_elements(v0)):
                if a is None or id(a._buf) in self._ids \
                        or not any(_holds(r.args, a._buf)
                                   or _holds(tuple(r.kwargs.values()), a._buf) for r in kernels):
                    continue
                s = self._new_slot(a._buf)
                for r in kernels:
                    r.bind(a._buf, s)
                spec = (a.shape, a._dtype, a._device)
                read.append((k, spec))
                inputs.append((s, ref, name, k, spec))
            if read:
                guards.append((ref, name, _structure(v0), read))
            elif not assigned and v0 is not _MISSING:
                guards.append((ref, name, _structure(v0), []))
            if v1 is not _MISSING:
                els = _elements(v1)
                start = len(outs)
                for e in els:
                    if e is not None:
                        outs.append(e)
                        out_slots.append(self._ids.get(id(e._buf)))
                kind = (None if v1 is None else Array if isinstance(v1, Array)
                        else (type(v1), [e is None for e in els]))
                assign.append((ref, name, kind, start, len(outs) - start))
        return guards, inputs, assign

    def build(self, outputs) -> "TracedGraph":
        """The graph from the registered inputs to ``outputs`` (an Array, or a list/tuple)."""
        single = isinstance(outputs, Array)
        outs = [outputs] if single else list(outputs)
        out_slots = []
        for k, y in enumerate(outs):
            if not isinstance(y, Array):
                raise TypeError(f"Tracer.build: output {k} is a {type(y).__name__}, not a "
                                "grilly Array")
            s = self._ids.get(id(y._buf))
            out_slots.append(s)   # None: an array from outside the trace (returned as is)
        n_visible = len(outs)
        made_params = self._made_params()
        if made_params is None:
            self._check_scalars()
        attr_guards, attr_inputs, attr_outs = self._module_state(outs, out_slots)
        producer = {}
        for n, rec in enumerate(self.records):
            for s in rec.outs:
                if s is not None:
                    producer[s] = n
        returned = {id(y) for y in outs}
        for ref in self._made:
            a = ref()
            if a is None or id(a) in returned:   # the caller's results stay the caller's
                continue
            s = self._ids.get(id(a._buf))
            n = producer.get(s)
            if n is not None:
                self.records[n].rebind.append((s, ref))
        # a leaf's .grad is set again on every replay where backward set it, also where the
        # caller dropped the Array the trace made (opt.zero_grad() outside the traced function),
        # so that the steps after it (an optimizer's host op) find it; and at the end of the
        # replay to what the leaf holds now where that differs (a zero_grad() or a new .grad
        # after backward in the trace). Not an input's: a replay's inputs are other Arrays
        inputs = {id(x) for _, x in self._inputs}
        last: dict = {}   # id(leaf) -> its last grad set
        for ref, s, dtype, device in self._grads:
            leaf = ref()
            if leaf is None or id(leaf) in inputs:
                continue
            n = producer.get(s)
            if n is not None:
                self.records[n].grad_sets.append((s, ref, dtype, device))
            last[id(leaf)] = (ref, s)
        final = []
        for ref, s in last.values():
            leaf = ref()
            g = None if leaf is None else leaf.grad
            f = None if g is None else self._ids.get(id(g._buf))
            if leaf is None or f == s:
                continue
            if g is None:
                final.append((None, ref, None, None))
            elif f in producer:
                final.append((f, ref, g._dtype, g._device))
        # a leaf whose .grad backward found as the call left it: the graph holds for that .grad
        # being None (backward set it) or an Array (backward added to it), and an Array is an
        # input, read from the leaf's .grad on each replay (the trace's buffer is a constant in
        # the add's record until here)
        grad_guards, grad_inputs = [], []
        for ref, e in self._entry:
            leaf = ref()
            if leaf is None or id(leaf) in inputs:
                continue
            if e is None:
                grad_guards.append((ref, None))
                continue
            grad_guards.append((ref, (e.shape, e._dtype, e._device)))
            if id(e._buf) in self._ids:   # an input's buffer: read as that input
                continue
            s = self._new_slot(e._buf)
            for rec in self.records:
                if not rec.host:
                    rec.bind(e._buf, s)
            grad_inputs.append((s, ref, e.shape, e._dtype, e._device))
        graph = TracedGraph(self.records, self.nslots, self._inputs, outs, out_slots, single)
        graph.n_visible = n_visible
        graph.made_params = made_params
        # host ops whose later kernels hold objects as constants (an optimizer's state): the
        # graph holds while they are the same objects
        graph.host_guards = [(g, rec.args, g(*rec.args)) for rec in self.records if rec.host
                             for g in (getattr(rec.fn, "jit_guard", None),) if g is not None]
        graph.attr_guards, graph.attr_inputs, graph.attr_outs = attr_guards, attr_inputs, attr_outs
        graph.guards = list(self._modules.values())
        # the kernels hold each parameter's buffer and the backward the trace ran: a parameter
        # replaced (model.weight = Parameter(...)) or frozen (requires_grad_(False)) since is
        # another graph
        graph.param_guards = [(ref, *pg) for ref, _ in graph.guards for m in (ref(),)
                              if m is not None for pg in (_param_guard(m),) if pg is not None]
        graph.struct_guards = self._struct_guards(graph.guards)
        graph.final_grads = final
        graph.grad_guards = grad_guards
        graph.grad_inputs = grad_inputs
        return graph


def _run_record(rec: _Record, vals: list) -> None:
    """Call one recorded kernel (or host op) on the slots' current values; store its results
    and rebind the Arrays made from them."""
    if rec.host:
        if rec.fill:   # (Array arguments read from slots: _ArraySlot)
            r = rec.fn(*[Array._new(vals[a.i], a.dtype, a.device) if isinstance(a, _ArraySlot)
                         else a for a in rec.args])
        else:
            r = rec.fn(*rec.args)
        if rec.name == "index_check" and r is not None:   # normalize_indices' composition
            raise IndexError(f"grilly.jit (replay): index {r} is out of bounds for an axis "
                             f"of size {rec.args[-1]}")
        res = [v._buf if isinstance(v, Array) else None for v in _flat(r)]
        for s, v, shape in zip(rec.outs, res, rec.shapes):
            if s is not None and (v is None or tuple(v.shape) != shape):
                raise JitError(f"grilly.jit: the host op {rec.name} made "
                               f"{'no array' if v is None else tuple(v.shape)} where the trace "
                               f"had {shape} (an optimizer whose parameters with a gradient "
                               "changed?): trace again")
    else:
        if rec.nested:
            args = _resolve(rec.args, vals)
        else:
            args = list(rec.args)
            for p, s in rec.fill:
                args[p] = vals[s]
        kw = rec.kwargs
        if kw:
            r = rec.fn(*args, **{k: _resolve(v, vals) for k, v in kw.items()})
        else:
            r = rec.fn(*args)
        res = _flat(r)
        if rec.name == "normalize_indices" and res[1] is not None:
            # the array layer raised on this flag eagerly; a replay skips the array layer, and
            # gathering with the index would read (or write) out of bounds
            raise IndexError(f"grilly.jit (replay): index {res[1]} is out of bounds for an axis "
                             f"of size {args[1]}")
    for s, v in zip(rec.outs, res):
        if s is not None:
            vals[s] = v
    _rebind(rec, vals)


def _rebind(rec: _Record, vals: list) -> None:
    """Point the live Arrays made from ``rec``'s results at this replay's buffers."""
    _rebind_pairs(rec.rebind, vals)
    _set_grads(rec.grad_sets, vals)


def _rebind_pairs(pairs: list, vals) -> None:
    """Point each live Array of (slot, weakref) ``pairs`` at its slot's buffer in ``vals``."""
    for s, ref in pairs:
        a = ref()
        if a is not None:
            a._buf = vals[s]


def _set_grads(sets: list, vals: list) -> None:
    """Set each live leaf's .grad to its slot's buffer (slot None: to None)."""
    for s, ref, dtype, device in sets:
        leaf = ref()
        if leaf is None:
            continue
        if s is None:
            leaf.grad = None
        elif leaf.grad is None or leaf.grad._buf is not vals[s]:
            leaf.grad = Array._new(vals[s], dtype, device)


_MODULE_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def _hooks_of(m) -> tuple:
    """A module's forward and backward hooks and its parameters' gradient hooks, each with the
    index of its table, in order: what its call runs besides its kernels (every replay asks:
    a module without hooks, the usual one, builds nothing)."""
    d = m.__dict__
    out = None
    for k, name in enumerate(_MODULE_HOOKS):
        t = d.get(name)
        if t:
            out = out or []
            out.extend((k, h) for h in t.values())
    for k, p in enumerate(d.get("_parameters", {}).values(), len(_MODULE_HOOKS)):
        h = None if p is None else p._hooks
        if h:
            out = out or []
            out.extend((k, f) for f in h.values())
    return () if out is None else tuple(out)


def _scalar(v) -> bool:
    return isinstance(v, (bool, int, float, str))


def _params_of(m) -> list:
    """A module's own parameters as a graph depends on them: each one and whether it requires
    grad."""
    return [(p, p.requires_grad) for p in m.__dict__.get("_parameters", {}).values()
            if p is not None]


def _param_guard(m) -> tuple | None:
    """(the module's parameter entries, None included, and each parameter's requires_grad),
    as TracedGraph.guards_hold compares them; None for a module without parameters. The graph
    holds the parameters (its kernels hold their buffers already): a replaced one is not
    mistaken for a new one at the same address."""
    ps = tuple(m.__dict__.get("_parameters", {}).values())
    flags = tuple(map(_REQUIRES_GRAD, filter(_NOT_NONE, ps)))
    return (ps, flags) if flags else None


_REQUIRES_GRAD = operator.attrgetter("requires_grad")
_TRAINING = operator.attrgetter("training")
_DEREF = weakref.ref.__call__
_EPOCH = _dispatch.structure_epoch
_NOT_NONE = functools.partial(operator.is_not, None)   # (a filter predicate, all in C)
_PARAMETERS = operator.attrgetter("_parameters")


def _attr_mismatch(v, structure, read: list) -> bool:
    """Whether a module attribute's value ``v`` differs from what a trace found: its structure
    (None, an Array, a tuple or list's length) or the spec of an element the graph reads."""
    if v is _MISSING or _structure(v) != structure:
        return True
    els = _elements(v)
    for k, (shape, dtype, device) in read:
        a = els[k]
        if a is None or a.shape != shape or a._dtype is not dtype or a._device is not device:
            return True
    return False


def _memory(buf):
    """What identifies the memory a buffer views (a Vulkan buffer's allocation; else itself)."""
    return id(getattr(buf, "alloc", buf))


def _written(seg, vals: list, first_only: bool = True) -> set:
    """The memory that kernels of ``seg`` returning None (an in-place write into their first
    argument: assign, scatter, ...) write, directly or through a view; with ``first_only``
    False, every array such a kernel takes (some write more: an optimizer's state, GradScaler's
    flag), as a superset."""
    written: set = set()
    for rec in seg.records:
        if rec.args and all(o is None for o in rec.outs):
            out: list = []
            _collect(rec.args[0] if first_only else rec.args, out)
            written.update(_memory(vals[s]) for s in out)
    return written


def _written_in_place(seg, vals: list, owned: list) -> list:
    """The (slot, captured buffer) pairs of ``owned`` that a kernel of ``seg`` returning None
    (an in-place write into its first argument: assign, scatter, ...) wrote, directly or
    through a view: the slot's own buffer (a graph input, a host op's result) gets the write."""
    written = _written(seg, vals)
    return [(s, b) for s, b in owned if _memory(b) in written]


class _Segment:
    """A run of kernel records on one device between host ops: captured once where the backend
    can (Backend.capture), then replayed as one submission with its buffers fixed."""

    def __init__(self, device) -> None:
        self.device = device
        self.records: list[_Record] = []
        self.capturer = None
        self.handle = None
        self.failed = False
        self.copy_in: list = []     # (slot, the captured buffer its new value is copied into)
        self.copy_back: list = []   # (slot, captured buffer) written in place: copied back out
        self.fixed_out: list = []   # (slot, the captured buffer that holds it on every run)
        # (captured buffer, its first contents): made by this segment with no GPU work (a host
        # fill: zeros, arange, constants) and written in place by a segment, so restored first
        self.refill: list = []
        self.rebinds = None   # (its records' rebind lists, their grad_sets), joined on replay

    def produced(self) -> list[int]:
        return [s for r in self.records for s in r.outs if s is not None]

    def reads_outside(self) -> list[int]:
        made: set = set()
        out: list = []
        for r in self.records:
            for s in r.inputs():
                if s not in made and s not in out:
                    out.append(s)
            made.update(x for x in r.outs if x is not None)
        return out


# capture segments on backends that can (set False to replay kernel by kernel everywhere)
CAPTURE = True


class TracedGraph:
    """A recorded sequence of kernel calls; calling it replays them on new inputs.

    On a device whose backend can capture (Vulkan: one command buffer, recorded on the first
    replay and resubmitted after), each run of kernels between host ops is one submission; its
    buffers are fixed, so new inputs are copied into the captured ones and the outputs are
    copied out. Elsewhere a replay calls the kernels again, without the array layer."""

    def __init__(self, records, nslots, inputs, outputs, out_slots, single) -> None:
        self.records = records
        self.nslots = nslots
        self.input_slots = [s for s, _ in inputs]
        self.input_specs = [(x.shape, x._dtype, x._device) for _, x in inputs]
        self.out_slots = out_slots
        self.out_specs = [(y._dtype, y._device) for y in outputs]
        self._fixed = [None if s is not None else y for s, y in zip(out_slots, outputs)]
        self.single = single
        self._plan = None
        # a graph of one captured segment, after its first replay: its work as flat lists
        # (_make_fast), or False where the general replay is needed
        self._fast = None
        self._fixed_slots: set = set()   # slots held by captured buffers
        # captured buffers made with no GPU work (a host fill): memory -> (segment, buffer);
        # those some segment writes in place are restored by their segment before each run
        self._quiet: dict = {}
        self._refilled: set = set()
        self._final_at: dict = {}        # plan step -> outputs no step from it on references
        self.guards: list = []           # (weakref to a Module, its training flag) at the trace
        self._modes = None               # the guards as (weakrefs, flags): guards_hold
        # dispatch.structure_epoch when the modules' modes, parameters and structure last held
        # (none of them can have changed while it stays: guards_hold skips their check)
        self._held_at = None
        self._pflat = None               # param_guards as three flat tuples: _params_hold
        self.final_grads: list = []      # (slot or None, weakref to a leaf, dtype, device)
        # (weakref to a leaf, None or the (shape, dtype, device) of its .grad): what the leaf's
        # .grad was at the trace where backward added to it (an Array) or set it (None)
        self.grad_guards: list = []
        # (slot, weakref to a leaf, shape, dtype, device): the leaf's .grad, read by the replay
        self.grad_inputs: list = []
        # module state the trace replaced (Tracer._module_state): (weakref to a module, name,
        # the value's structure, [(element, (shape, dtype, device))] read) the replay needs;
        # (slot, weakref, name, element, spec) read from the attribute; (weakref, name, kind,
        # first hidden output, count) assigned after the replay
        self.attr_guards: list = []
        self.attr_inputs: list = []
        self.attr_outs: list = []
        self.n_visible = len(outputs)   # the outputs after them are the attributes' values
        self.host_guards: list = []     # (guard, its args, what it returned at the trace)
        # (weakref to a Module, its parameter entries, their requires_grad) at the trace
        self.param_guards: list = []
        # (weakref to a Module, its submodules, buffer names, buffers, [(name, Python value)],
        # its hooks) at the trace (Tracer._struct_guards)
        self.struct_guards: list = []
        self.made_params: str | None = None   # a module whose parameters the trace made
        # captured segments' buffers are fixed: replays from several threads take turns
        self._lock = threading.RLock()

    def guards_hold(self) -> bool:
        """Whether every module the trace called is in the train/eval mode it was then, and
        every leaf whose gradient the trace accumulated into holds a gradient (of the same
        shape, dtype and device) or None as it did then."""
        epoch = _EPOCH[0]
        if epoch == self._held_at:
            # no module's attribute, parameter, buffer, submodule, mode or hook changed since
            # they last held (dispatch.structure_epoch): only what the epoch does not follow
            # (requires_grad, a plain Array attribute) is compared
            flat = self._pflat
            if flat is not None and flat[2] and \
                    tuple(map(_REQUIRES_GRAD, filter(_NOT_NONE, flat[1]))) != flat[2]:
                return False
            return self._value_guards_hold()
        if not self._modules_hold():
            return False
        self._held_at = epoch   # (read before the check: a change during it is seen next call)
        return self._value_guards_hold()

    def _modules_hold(self) -> bool:
        """Whether every module the trace called is in its traced mode, with the same
        parameters (requires_grad as then), submodules, buffers, Python values and hooks."""
        modes = self._modes
        if modes is None:
            modes = self._modes = (tuple(r for r, _ in self.guards),
                                   tuple(t for _, t in self.guards))
        mods = tuple(map(_DEREF, modes[0]))   # (map with C functions: this runs every call)
        try:
            now = tuple(map(_TRAINING, mods))
        except AttributeError:   # a module gone (None), or one without the flag
            now = tuple(t if m is None else bool(getattr(m, "training", False))
                        for m, t in zip(mods, modes[1]))
        if now != modes[1]:
            return False
        if self.param_guards and not self._params_hold():
            return False
        return not self.struct_guards or self._structure_holds()

    def _value_guards_hold(self) -> bool:
        """The guards compared on every call: the gradients the trace accumulated into, module
        state read from attributes, and the host ops' objects (an optimizer's)."""
        for ref, spec in self.grad_guards:
            leaf = ref()
            if leaf is None:
                continue
            g = leaf.grad
            if g is None:
                if spec is not None:
                    return False
            elif spec is None or (g.shape, g._dtype, g._device) != spec:
                return False
        for ref, name, structure, read in self.attr_guards:
            m = ref()
            if m is not None and _attr_mismatch(_attr(m, name), structure, read):
                return False
        return self._host_guards_hold() if self.host_guards else True

    def _structure_holds(self) -> bool:
        """Whether each module of struct_guards holds the same submodules, buffers and hooks, and
        its Python numbers and strings equal the trace's (a module gone holds nothing)."""
        for ref, kids, names, bufs, scalars, hooks in self.struct_guards:
            m = ref()
            if m is None:
                continue
            d = m.__dict__
            now = tuple(d.get("_modules", {}).values())
            if len(now) != len(kids) or not all(map(operator.is_, now, kids)):
                return False
            b = d.get("_buffers", {})
            if not all(map(operator.is_, map(b.get, names), bufs)):
                return False
            for name, v in scalars:
                x = d.get(name, _MISSING)
                if x is not v and (type(x) is not type(v) or x != v):
                    return False
            if _hooks_of(m) != hooks:   # ((table, hook) pairs; a hook compares by identity)
                return False
        return True

    def _params_hold(self) -> bool:
        """Whether each module of param_guards holds the same parameters, each as it did then
        requiring grad or not (a module gone holds nothing)."""
        flat = self._pflat
        if flat is None:
            flat = self._pflat = (tuple(g[0] for g in self.param_guards),
                                  tuple(p for g in self.param_guards for p in g[1]),
                                  tuple(f for g in self.param_guards for f in g[2]))
        refs, params, flags = flat
        # every module's parameters in one tuple, made and compared by C functions (map,
        # chain, operator): this runs on every call of a jitted function
        try:
            now = tuple(chain.from_iterable(map(dict.values, map(_PARAMETERS,
                                                                  map(_DEREF, refs)))))
        except (AttributeError, TypeError):   # a module gone (None)
            for ref, ps, fs in self.param_guards:
                m = ref()
                if m is None:
                    continue
                now = tuple(m.__dict__.get("_parameters", {}).values())
                if len(now) != len(ps) or not all(map(operator.is_, now, ps)) \
                        or tuple(map(_REQUIRES_GRAD, filter(_NOT_NONE, now))) != fs:
                    return False
            return True
        return len(now) == len(params) and all(map(operator.is_, now, params)) \
            and tuple(map(_REQUIRES_GRAD, filter(_NOT_NONE, now))) == flags

    def _host_guards_hold(self) -> bool:
        for guard, args, then in self.host_guards:
            now = guard(*args)
            if now is then:   # (an optimizer's unchanged options: Optimizer._jit_options)
                continue
            if len(now) != len(then) or not all(map(operator.is_, now, then)):
                return False
        return True

    @property
    def n_ops(self) -> int:
        """How many steps a replay runs."""
        return len(self.records)

    @property
    def captured(self) -> int:
        """How many segments run as captured submissions."""
        return sum(1 for st in self._plan or () if isinstance(st, _Segment) and st.handle)

    def _make_plan(self) -> list:
        plan: list = []
        seg = None
        for rec in self.records:
            if rec.host:
                plan.append(rec)
                seg = None
                continue
            if seg is None or seg.device is not rec.device:
                seg = _Segment(rec.device)
                if CAPTURE:
                    seg.capturer = rec.device.backend.capture(rec.device)
                plan.append(seg)
            seg.records.append(rec)
        # an output is final after the last step that references its slot (host ops write no
        # slot's buffer: dispatch.host_op); its copy out can be recorded there and ride with
        # the next submission, not wait for one of its own at the caller's read
        last: dict = {}
        for i, st in enumerate(plan):
            for rec in (st.records if isinstance(st, _Segment) else (st,)):
                for x in (*rec.inputs(), *rec.outs):
                    if x is not None:
                        last[x] = i
        for k, s in enumerate(self.out_slots):
            if s is not None and last.get(s, len(plan) - 1) < len(plan) - 1:
                self._final_at.setdefault(last[s] + 1, []).append(k)
        return plan

    def _capture(self, seg: _Segment, vals: list) -> None:
        """Run ``seg`` once while its backend records it; keep the capture (or, where a kernel
        cannot be captured, warn once and run the segment kernel by kernel from then on)."""
        kernels = seg.device.kernels
        owned = []
        orig = {s: vals[s] for s in seg.reads_outside()}
        for s in seg.reads_outside():
            if s in self._fixed_slots:
                continue
            v = vals[s]
            if not hasattr(v, "shape"):
                seg.failed = True
                break
            b = kernels["copy"](v)
            owned.append((s, b))
            vals[s] = b
        if not seg.failed:
            seg.capturer.begin()
            stats = seg.device.backend.stats
            quiet: list = []   # slots of records with no inputs that recorded no GPU work
            try:
                for rec in seg.records:
                    before = None if rec.inputs() else stats(seg.device).get("dispatches")
                    _run_record(rec, vals)
                    if before is not None and stats(seg.device).get("dispatches") == before:
                        quiet.extend(x for x in rec.outs if x is not None)
            except Exception as e:   # noqa: BLE001 (any kernel: the capture is dropped)
                seg.capturer.abort()
                seg.failed = True
                warnings.warn(f"grilly.jit: a segment of {len(seg.records)} kernels on "
                              f"{seg.device} could not be captured ({type(e).__name__}: {e}); "
                              "it replays kernel by kernel", RuntimeWarning, stacklevel=3)
            else:
                seg.handle = seg.capturer.end()
                # their first contents, copied before the capture first runs (it is recorded,
                # not run: a copy recorded now runs before it)
                # (of this segment or an earlier one: its capture does not remake them; the
                # segment that made one restores it before each run)
                for x in quiet:
                    self._quiet.setdefault(_memory(vals[x]), (seg, vals[x]))
                written = _written(seg, vals, first_only=False)
                for mem, (made_by, b) in self._quiet.items():
                    if mem in written and mem not in self._refilled:
                        made_by.refill.append((b, kernels["copy"](b)))
                        self._refilled.add(mem)
                seg.capturer.run(seg.handle)   # recorded, not yet run
                seg.copy_in = owned
                seg.copy_back = _written_in_place(seg, vals, owned)
                seg.fixed_out = [(s, vals[s]) for s in seg.produced()]
                self._fixed_slots.update(seg.produced())
                # the slots read from outside hold the caller's buffers again (an input
                # returned as an output must not be the captured copy the next replay rewrites)
                for s, b in owned:
                    vals[s] = orig[s]
                for s, b in seg.copy_back:   # an in-place write reaches the slot's buffer
                    kernels["assign"](vals[s], b)
                return
        for s, b in owned:
            vals[s] = orig[s]
        for rec in seg.records:
            _run_record(rec, vals)

    def __call__(self, *inputs: Array):
        """Replay on ``inputs`` (Arrays of the traced shapes, dtypes and devices)."""
        if self.made_params is not None:
            raise JitError(f"grilly.jit: the trace made {self.made_params}'s parameters (a lazy "
                           "module's first call); a replay would make them again: trace again")
        if not self._host_guards_hold():
            raise JitError("grilly.jit: an object the graph's kernels hold was replaced since the "
                           "trace (an optimizer's state: load_state_dict?): trace again")
        return self.run(inputs)

    def run(self, inputs: tuple):
        """Replay on ``inputs`` without checking the host guards (TracedFunction did)."""
        with self._lock:
            return self._replay(inputs)

    def _make_fast(self):
        """The work of a graph that is one captured segment (a forward, or a training step
        without host ops), as flat lists a replay walks without the general loop's slot
        bookkeeping: its buffers are fixed, so each value is known here; False for others."""
        plan = self._plan
        if len(plan) != 1 or not isinstance(plan[0], _Segment) or plan[0].handle is None \
                or self.grad_inputs or self.attr_inputs or self.attr_outs or self._final_at \
                or any(read for *_, read in self.attr_guards):
            return False
        seg = plan[0]
        pos = {s: k for k, s in enumerate(self.input_slots)}
        fixed = dict(seg.fixed_out)
        if len(pos) != len(self.input_slots) or any(s not in pos for s, _ in seg.copy_in) \
                or any(s not in pos for s, _ in seg.copy_back):
            return False
        outs = []   # per output: (None, the Array) or (input index, None) or (None, buffer)
        for s, (d, dev), y in zip(self.out_slots, self.out_specs, self._fixed):
            if s is None:
                outs.append((None, y, None, None))
            elif s in fixed:
                outs.append((None, fixed[s], d, dev))
            elif s in pos:
                outs.append((pos[s], None, d, dev))
            else:
                return False
        rebind = [r for rec in seg.records for r in rec.rebind]
        sets = [g for rec in seg.records for g in rec.grad_sets] + list(self.final_grads)
        if any(s not in fixed for s, _ in rebind) \
                or any(g[0] is not None and g[0] not in fixed for g in sets):
            return False
        # (the slots' buffers are fixed: ``fixed`` serves as the replay's vals)
        return (seg, [(pos[s], b) for s, b in seg.copy_in],
                [(pos[s], b) for s, b in seg.copy_back], outs, rebind, sets, fixed)

    def _replay_fast(self, inputs: tuple, fast):
        seg, copy_in, copy_back, outs, rebind, sets, fixed = fast
        specs = self.input_specs
        bufs = []
        if len(inputs) == len(specs):
            for x, spec in zip(inputs, specs):
                if not isinstance(x, Array) or (x.shape, x._dtype, x._device) != spec:
                    break
                bufs.append(x._buf)
        if len(bufs) != len(specs):
            self._fast = None   # (the general replay names what is wrong)
            try:
                return self._replay(inputs)
            finally:
                self._fast = fast
        run_io = getattr(seg.capturer, "run_io", None)
        if run_io is not None:
            got = iter(run_io(seg.handle,
                              [(b, bufs[k]) for k, b in copy_in if bufs[k] is not b]
                              + seg.refill,
                              [(bufs[k], b) for k, b in copy_back],
                              [y for k, y, d, _ in outs if k is None and d is not None]))
            res = [Array._new(bufs[k], d, dev) if k is not None else
                   y if d is None else Array._new(next(got), d, dev) for k, y, d, dev in outs]
        else:
            res = self._run_fast_general(seg, bufs, copy_in, copy_back, outs)
        _rebind_pairs(rebind, fixed)
        _set_grads(sets, fixed)
        if len(res) > self.n_visible:
            res = res[:self.n_visible]
        return res[0] if self.single else tuple(res)

    def _run_fast_general(self, seg, bufs, copy_in, copy_back, outs) -> list:
        """_replay_fast's run through the kernel table (a backend without run_io)."""
        kernels = seg.device.kernels
        assign, copy = kernels["assign"], kernels["copy"]
        for k, b in copy_in:
            if bufs[k] is not b:
                assign(b, bufs[k])
        for b, first in seg.refill:
            assign(b, first)
        res: list = []

        def after():
            for k, b in copy_back:
                assign(bufs[k], b)
            for k, y, d, dev in outs:
                if k is not None:
                    res.append(Array._new(bufs[k], d, dev))
                elif d is None:
                    res.append(y)
                else:   # a captured buffer is rewritten by the next run: the caller gets a copy
                    res.append(Array._new(copy(y), d, dev))

        if getattr(seg.capturer, "takes_after", False):
            seg.capturer.run(seg.handle, after)   # (one submission, where it can)
        else:
            seg.capturer.run(seg.handle)
            after()
        return res

    def _replay(self, inputs: tuple):
        fast = self._fast
        if fast:
            return self._replay_fast(inputs, fast)
        if len(inputs) != len(self.input_slots):
            raise TypeError(f"TracedGraph: expected {len(self.input_slots)} inputs, got "
                            f"{len(inputs)}")
        vals: list[Any] = [None] * self.nslots
        for k, (x, s, (shape, dtype, device)) in enumerate(zip(inputs, self.input_slots,
                                                                self.input_specs)):
            if not isinstance(x, Array) or x.shape != shape or x._dtype is not dtype \
                    or x._device is not device:
                got = (f"{type(x).__name__}" if not isinstance(x, Array)
                       else f"{x.shape} {x._dtype.name} on {x._device}")
                raise ValueError(f"TracedGraph: input {k} must be {shape} {dtype.name} on "
                                 f"{device}, got {got}")
            vals[s] = x._buf
        for s, ref, shape, dtype, device in self.grad_inputs:
            leaf = ref()
            g = None if leaf is None else leaf.grad
            if g is not None and g.shape == shape and g._dtype is dtype and g._device is device:
                vals[s] = g._buf
            else:   # no gradient to add to (a replay outside the guards): add to zeros
                vals[s] = _dispatch.ns.zeros(shape, dtype=dtype, device=device)._buf
        for ref, name, structure, read in self.attr_guards:
            m = ref()
            if m is not None and read and _attr_mismatch(_attr(m, name), structure, read):
                raise JitError(f"grilly.jit: {type(m).__name__}.{name} is not what the trace "
                               "read (None, or Arrays of other shapes, dtypes or devices): trace "
                               "again")
        for s, ref, name, k, spec in self.attr_inputs:
            m = ref()
            if m is None:
                raise JitError(f"grilly.jit: the module whose {name} the trace read is gone")
            vals[s] = _elements(_attr(m, name))[k]._buf
        if self._plan is None:
            self._plan = self._make_plan()
        early: dict = {}
        for i, step in enumerate(self._plan):
            if i in self._final_at:
                self._copy_out(self._final_at[i], vals, early)
            if isinstance(step, _Record):
                _run_record(step, vals)
                continue
            if step.handle is not None and getattr(step.capturer, "run_io", None) is not None:
                for s, b in step.fixed_out:   # (fixed: known before the run)
                    vals[s] = b
                # at the last step the outputs not copied before an earlier step
                ks = [k for k, s in enumerate(self.out_slots) if k not in early
                      and s in self._fixed_slots] if i == len(self._plan) - 1 else []
                early.update(zip(ks, step.capturer.run_io(
                    step.handle,
                    [(b, vals[s]) for s, b in step.copy_in if vals[s] is not b] + step.refill,
                    [(vals[s], b) for s, b in step.copy_back],
                    [vals[self.out_slots[k]] for k in ks])))
                self._rebind_segment(step, vals)
            elif step.handle is not None:
                assign = step.device.kernels["assign"]
                for s, b in step.copy_in:
                    if vals[s] is not b:
                        assign(b, vals[s])
                for b, first in step.refill:
                    assign(b, first)
                final = i == len(self._plan) - 1

                def after(step=step, assign=assign, final=final):
                    # what follows the run on the device: in-place writes copied back, and at
                    # the last step the outputs copied out of the captured buffers
                    for s, b in step.copy_back:
                        assign(vals[s], b)
                    for s, b in step.fixed_out:
                        vals[s] = b
                    if final:   # (the outputs not copied before an earlier step)
                        self._copy_out([k for k in range(len(self.out_slots)) if k not in early],
                                       vals, early)

                if getattr(step.capturer, "takes_after", False):
                    step.capturer.run(step.handle, after)   # (one submission, where it can)
                else:
                    step.capturer.run(step.handle)
                    after()
                self._rebind_segment(step, vals)
            elif step.capturer is not None and not step.failed:
                self._capture(step, vals)
            else:
                for rec in step.records:
                    _run_record(rec, vals)
        _set_grads(self.final_grads, vals)
        outs = []
        for k, (s, (d, dev), y) in enumerate(zip(self.out_slots, self.out_specs, self._fixed)):
            if s is None:
                outs.append(y)
            elif k in early:
                outs.append(Array._new(early[k], d, dev))
            else:   # a captured buffer is rewritten by the next run: the caller gets a copy
                b = vals[s]
                outs.append(Array._new(dev.kernels["copy"](b) if s in self._fixed_slots else b,
                                       d, dev))
        held = self._held_at == _EPOCH[0]
        for ref, name, kind, start, n in self.attr_outs:
            m = ref()
            if m is None:
                continue
            new = outs[start:start + n]
            if kind is not None and kind is not Array:
                typ, nones = kind
                it = iter(new)
                new = [typ([None if z else next(it) for z in nones])]
            setattr(m, name, None if kind is None else new[0])
        if held and self.attr_outs:   # (its own state assignments change no guard's value)
            self._held_at = _EPOCH[0]
        outs = outs[:self.n_visible]
        if fast is None and all(isinstance(st, _Segment) and st.handle is not None
                                for st in self._plan):
            self._fast = self._make_fast()
        return outs[0] if self.single else tuple(outs)

    @staticmethod
    def _rebind_segment(step: "_Segment", vals: list) -> None:
        """_rebind for each record of a captured segment after its run."""
        rebinds = step.rebinds
        if rebinds is None:   # (its records' lists, flat: most records have none)
            rebinds = step.rebinds = ([r for rec in step.records for r in rec.rebind],
                                      [g for rec in step.records for g in rec.grad_sets])
        _rebind_pairs(rebinds[0], vals)
        if rebinds[1]:
            _set_grads(rebinds[1], vals)

    def _copy_out(self, ks: list, vals: list, early: dict) -> None:
        """Copy the outputs ``ks``, final before the plan step about to run, out of their
        captured buffers now (recorded before that step's submission, they go with it)."""
        for k in ks:
            s = self.out_slots[k]
            if s in self._fixed_slots:
                early[k] = self.out_specs[k][1].kernels["copy"](vals[s])

    def summary(self) -> str:
        """One line per step, as ``[0] matmul: [0, 1] -> 2 (32, 256)``."""
        lines = [f"TracedGraph: {len(self.records)} ops, inputs {self.input_slots}, outputs "
                 f"{self.out_slots}"]
        for n, rec in enumerate(self.records):
            outs = [s for s in rec.outs if s is not None]
            shapes = [sh for s, sh in zip(rec.outs, rec.shapes) if s is not None]
            out = (str(outs[0]) if len(outs) == 1 else str(outs)) if outs else "-"
            shape = (f" {shapes[0]}" if len(shapes) == 1 else f" {shapes}") if shapes else ""
            tag = " (host)" if rec.host else ""
            lines.append(f"[{n}] {rec.name}{tag}: {rec.inputs()} -> {out}{shape}")
        return "\n".join(lines)
