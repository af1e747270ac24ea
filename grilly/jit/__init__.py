"""grilly.jit: trace a function once, replay its kernels on later calls (docs/jit.md).

``@grilly.jit`` (or ``grilly.jit.jit``) on a function: the first call with a given signature
(each Array argument's shape, dtype and device, and every other argument's value) runs the
function eagerly while a Tracer records its kernels; later calls with the same signature replay
them, skipping the array layer (argument checks, promotion, broadcasting, autograd bookkeeping)
and Python's per-op work. A new signature traces again (a bounded cache keeps the most recent
``cache_size`` graphs). ``grilly.jit.trace(fn_or_module, example_inputs)`` traces at once and
returns the traced callable. A whole training step (forward, ``loss.backward()``,
``opt.step()``) traces: the replay writes the parameters and optimizer state in place, and
``p.grad`` holds the replay's gradient.
"""
from __future__ import annotations

import functools
import sys
import threading
import types
from collections import OrderedDict
from typing import Any, Callable

from ..array import dispatch as _dispatch
from ..array.array import Array
from . import tracer as _tracer_mod
from .tracer import JitError, TracedGraph, Tracer

__all__ = ["jit", "trace", "Tracer", "TracedGraph", "TracedFunction", "JitError"]

CACHE_SIZE = 8


def _split(args: tuple, kwargs: dict) -> tuple[list, tuple]:
    """The Array arguments (in order) and a hashable key of everything else."""
    arrays, key = [], []
    first: dict = {}   # id(buffer) -> index of the first Array argument holding it

    def walk(x):
        if isinstance(x, Array):
            # the same buffer passed twice is one slot of the trace: the aliasing is part of
            # the key (f(x, x) and f(x, y) trace apart)
            alias = first.setdefault(id(x._buf), len(arrays))
            arrays.append(x)
            return ("A", x.shape, x._dtype.name, str(x._device), alias)
        if isinstance(x, (tuple, list)):
            return (type(x).__name__,) + tuple(walk(v) for v in x)
        if isinstance(x, dict):
            return ("dict",) + tuple((k, walk(v)) for k, v in sorted(x.items()))
        try:
            hash(x)
        except TypeError:
            raise TypeError(f"grilly.jit: argument of type {type(x).__name__} is neither an "
                            "Array nor hashable; pass arrays as grilly Arrays") from None
        return ("V", type(x).__name__, x)

    for a in args:
        key.append(walk(a))
    for k in sorted(kwargs):
        key.append((k, walk(kwargs[k])))
    return arrays, tuple(key)


def _outputs(r) -> tuple[list, Callable]:
    """The Arrays of a result (an Array or None, or tuples, lists, named tuples and dicts of
    them, nested) and a function that rebuilds the result's structure from new Arrays."""
    arrays: list = []

    def spec(x, path: str):
        if x is None or isinstance(x, Array):
            if x is not None:
                arrays.append(x)
            return x is not None
        if isinstance(x, (tuple, list)):
            return (type(x), [spec(v, f"{path}[{i}]") for i, v in enumerate(x)])
        if isinstance(x, dict):
            return (type(x), [(k, spec(v, f"{path}[{k!r}]")) for k, v in x.items()])
        why = (" (a Python number is the value it had when traced: a replay would return it "
               "unchanged; return it as an Array)" if isinstance(x, (bool, int, float, complex))
               else "")
        raise TypeError(f"grilly.jit: a traced function must return an Array, None, or a tuple, "
                        f"list or dict of them (nested); {'result' + path if path else 'the result'}"
                        f" is of type {type(x).__name__}{why}")

    def build(sp, it):
        if sp is True:
            return next(it)
        if sp is False:
            return None
        kind, items = sp
        if issubclass(kind, dict):
            return kind((k, build(v, it)) for k, v in items)
        vals = [build(v, it) for v in items]
        return kind(*vals) if hasattr(kind, "_fields") else kind(vals)

    top = spec(r, "")
    return arrays, lambda outs: build(top, iter(outs))


class TracedFunction:
    """``fn`` with a cache of TracedGraphs, one per call signature."""

    def __init__(self, fn: Callable, cache_size: int = CACHE_SIZE) -> None:
        if isinstance(fn, types.FunctionType):
            functools.update_wrapper(self, fn)
        self.fn = fn
        self.cache_size = cache_size
        # signature -> [(TracedGraph, rebuild)], one per train/eval state of its modules
        self.graphs: OrderedDict = OrderedDict()
        self.traces = 0                             # how many times fn was traced
        self._last = None                           # the graph used by the latest call
        self._cache_lock = threading.Lock()         # calls from several threads share graphs
        # one trace of this function at a time: threads making the same first call at once
        # trace it once (the others replay that graph), not each its own copy
        self._trace_lock = threading.Lock()

    def __get__(self, obj, objtype=None):
        """A method decorated with ``@grilly.jit`` binds like a function (``self`` is an argument
        that is part of the key: each instance traces its own graph)."""
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, *args, **kwargs):
        active = _tracer_mod._active
        if active is not None and active._thread == threading.get_ident():
            # called inside another trace (a jitted function calling a jitted function): run
            # eagerly so that the enclosing trace records its kernels (a replay here would
            # run kernels the outer tracer cannot see and bake their results in as constants)
            return self.fn(*args, **kwargs)
        if len(args) == 1 and not kwargs and type(args[0]) is Array:   # (the common call)
            x = args[0]
            arrays, key = [x], (("A", x.shape, x._dtype.name, str(x._device), 0),)
        else:
            arrays, key = _split(args, kwargs)
        # grad mode and autocast change which kernels run, and so do the train/eval modes of
        # the modules the trace called (a replay must not apply Dropout after model.eval())
        key += (tuple([f() for f in _dispatch.mode_keys]),)
        hit = self._lookup(key)
        if hit is not None:
            return self._replay(hit, arrays)
        with self._trace_lock:
            hit = self._lookup(key)   # traced by another thread while this one waited
            if hit is not None:
                return self._replay(hit, arrays)
            return self._trace(key, arrays, args, kwargs)

    def _lookup(self, key):
        """The cached (graph, rebuild) for ``key`` whose guards hold, or None."""
        with self._cache_lock:
            hits = self.graphs.get(key)
            if hits is None:
                return None
            self.graphs.move_to_end(key)
            hits = list(hits)
        for graph, rebuild in hits:
            if graph.guards_hold():
                return graph, rebuild
        return None

    def _replay(self, hit, arrays):
        graph, rebuild = hit
        self._last = graph
        outs = graph.run(arrays)   # its guards held (_lookup)
        return rebuild(list(outs) if isinstance(outs, tuple) else [outs])

    def _trace(self, key, arrays, args, kwargs):
        tracer = Tracer()
        with tracer:
            for a in arrays:
                tracer.register_input(a)
            r = self.fn(*args, **kwargs)
        outs, rebuild = _outputs(r)
        graph = tracer.build(outs)
        with self._cache_lock:
            self.traces += 1
            if graph.made_params is not None:
                # the trace initialized a lazy module: not a graph to replay; the next call
                # traces the initialized module
                return rebuild([Array._new(o._buf, o._dtype, o._device) for o in outs]) \
                    if outs else r
            hits = self.graphs.setdefault(key, [])
            self.graphs.move_to_end(key)
            hits.append((graph, rebuild))
            del hits[:-self.cache_size]
            if len(self.graphs) > self.cache_size:
                self.graphs.popitem(last=False)
        self._last = graph
        # the caller gets what a replay would give: arrays without an autograd graph
        return rebuild([Array._new(o._buf, o._dtype, o._device) for o in outs]) if outs else r

    @property
    def graph(self) -> TracedGraph | None:
        """The most recently used graph (None before the first call)."""
        return self._last

    def summary(self) -> str:
        """The latest graph's summary."""
        g = self.graph
        return "TracedGraph: not traced yet" if g is None else g.summary()


def jit(fn: Callable | None = None, *, cache_size: int = CACHE_SIZE):
    """``fn`` traced on its first call per signature and replayed after (a decorator)."""
    if fn is None:
        return lambda f: TracedFunction(f, cache_size)
    return TracedFunction(fn, cache_size)


def trace(fn: Callable, example_inputs: Any) -> TracedFunction:
    """``fn`` (a function or a Module) traced now on ``example_inputs`` (an Array or a tuple of
    arguments); later calls with the same signature replay."""
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    traced = TracedFunction(fn)
    traced(*args)
    return traced


class _CallableModule(types.ModuleType):
    """``grilly.jit`` is a module and, as in the seed API, the decorator itself."""

    def __call__(self, fn: Callable | None = None, **kwargs):
        return jit(fn, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
