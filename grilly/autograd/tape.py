"""The tape: nodes recorded on outputs, and the reverse sweep that runs their VJP rules.

An output of a recorded op holds ``_node = (node, index)``. A node keeps its VJP rule, the
arguments it was called with (rules read them), the outputs when the rule needs them, and one
edge per differentiable input: the input's own ``(node, index)`` for a computed array, or the
input itself for a leaf (``requires_grad`` and no node), whose ``.grad`` accumulates.

Gradient hooks (``Array.register_hook``) of a computed array live on its node, per output
(with ``retain_grad``'s weak reference to the array); a leaf's live in its ``_hooks`` slot.
The sweep runs them on an array's whole gradient, before the node's rule sees it or the leaf's
``.grad`` takes it.
"""
from __future__ import annotations

import itertools
import sys
import threading
import weakref

from ..array import core
from ..array import dispatch as _dispatch
from ..array.array import Array
from . import mode

__all__ = ["RemovableHandle", "backward", "deliver", "grad", "grad_and_leaves",
           "reachable_leaves", "register_hook", "register_post_accumulate_grad_hook",
           "retain_grad"]

# a ``.grad`` is read, added to and written back under this lock: threads that backward
# separate graphs through shared leaves (one model's parameters) each add their whole gradient,
# as torch's AccumulateGrad does (without it, two threads read the same old .grad and one sum
# was lost)
_ACCUMULATE = threading.Lock()


class Node:
    """One recorded op: its VJP rule, saved arguments and input edges."""

    __slots__ = ("name", "rule", "args", "kw", "out", "edges", "n_out", "hooks", "retain",
                 "saved")

    def __init__(self, name, rule, args, kw, out, edges, n_out, saved=None):
        # (one statement each: fewer bytecodes than tuple assignments; every op records one)
        self.name = name
        self.rule = rule
        self.args = args
        self.kw = kw
        self.out = out
        self.edges = edges
        self.n_out = n_out
        # (array, its version) for each array the rule reads: a write in place into one of
        # them since is an error at backward (check_saved), not a wrong gradient
        self.saved = saved
        self.hooks = None    # output index -> {handle id: hook}, where hooks were registered
        self.retain = None   # output index -> weak reference to the array that retains grad

    def __repr__(self) -> str:
        return f"<grilly.autograd.Node {self.name}>"


class RemovableHandle:
    """What ``register_hook`` returns: ``remove()`` takes the hook off (also as a context
    manager, on exit)."""

    __slots__ = ("_hooks", "id")
    _ids = itertools.count()

    def __init__(self, hooks: dict) -> None:
        self._hooks = hooks
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)
        _dispatch.structure_changed()   # (grilly.jit's replay guards compare a leaf's hooks)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def register_hook(x: Array, hook) -> RemovableHandle:
    """Array.register_hook: ``hook(grad)`` runs when the gradient w.r.t. ``x`` is computed."""
    if not callable(hook):
        raise TypeError(f"register_hook: the hook must be callable, got {type(hook).__name__}")
    if not x.requires_grad:
        raise RuntimeError("register_hook: cannot register a hook on an array that does not "
                           "require grad")
    if x._node is None:
        if x._hooks is None:
            x._hooks = {}
        hooks = x._hooks
    else:
        node, idx = x._node
        if node.hooks is None:
            node.hooks = {}
        hooks = node.hooks.setdefault(idx, {})
    h = RemovableHandle(hooks)
    hooks[h.id] = hook
    _dispatch.structure_changed()
    return h


class _PostAccumulate:
    """A leaf's hook that runs after backward adds to its ``.grad`` (kept in the leaf's hook
    dict, which the gradient hooks skip)."""

    __slots__ = ("fn",)

    def __init__(self, fn) -> None:
        self.fn = fn


def register_post_accumulate_grad_hook(x: Array, hook) -> RemovableHandle:
    """Array.register_post_accumulate_grad_hook: ``hook(x)`` runs after backward has
    accumulated into leaf ``x``'s ``.grad`` (torch's; an optimizer step in backward)."""
    if not callable(hook):
        raise TypeError("register_post_accumulate_grad_hook: the hook must be callable, got "
                        f"{type(hook).__name__}")
    if not x.requires_grad:
        raise RuntimeError("register_post_accumulate_grad_hook: cannot register a hook on an "
                           "array that does not require grad")
    if x._node is not None:
        raise RuntimeError("register_post_accumulate_grad_hook: post accumulate grad hooks "
                           "cannot be registered on non-leaf arrays")
    if x._hooks is None:
        x._hooks = {}
    h = RemovableHandle(x._hooks)
    x._hooks[h.id] = _PostAccumulate(hook)
    _dispatch.structure_changed()
    return h


def _post_accumulate(x: Array) -> None:
    """Run leaf ``x``'s post-accumulate hooks, in registration order."""
    for hook in list(x._hooks.values()):
        if type(hook) is _PostAccumulate:
            hook.fn(x)


def retain_grad(x: Array) -> None:
    """Array.retain_grad: a non-leaf ``x`` keeps its gradient in ``.grad`` (a leaf does anyway)."""
    if not x.requires_grad:
        raise RuntimeError("retain_grad: cannot retain the gradient of an array that does not "
                           "require grad")
    if x._node is None or x.retains_grad:
        return
    node, idx = x._node
    if node.retain is None:
        node.retain = {}
    node.retain[idx] = weakref.ref(x)
    x.retains_grad = True


def _call_hooks(hooks: dict, g: Array) -> Array:
    """``g`` through ``hooks`` in the order they were registered (a None result keeps it)."""
    for hook in list(hooks.values()):
        if type(hook) is _PostAccumulate:
            continue
        r = hook(g)
        if r is not None:
            if not isinstance(r, Array) or r.shape != g.shape:
                got = r.shape if isinstance(r, Array) else type(r).__name__
                raise RuntimeError(f"register_hook: a hook must return None or an Array of the "
                                   f"gradient's shape {g.shape}, got {got}")
            g = r
    return g


def _node_hooks(n: Node, gs: list, create_graph: bool, ns) -> None:
    """Run the hooks of node ``n``'s outputs on their gradients ``gs`` (in place), then store
    them in the outputs that retain grad."""
    if n.hooks is not None:
        for idx, hooks in n.hooks.items():
            if hooks and gs[idx] is not None:
                gs[idx] = _call_hooks(hooks, gs[idx])
    if n.retain is not None:
        for idx, ref in n.retain.items():
            x = ref()
            g = gs[idx]
            if x is None or g is None:
                continue
            if not create_graph:   # (torch's clone: the gradient flows on, and may be reused)
                g = ns.asarray(detach(g), copy=True)
            with _ACCUMULATE:
                x.grad = g if x.grad is None else x.grad + g


def _ns():
    return _dispatch.ns


def edge_of(x: Array):
    """Where gradient for ``x`` flows: its node, or ``x`` itself when it is a leaf."""
    v = x._view
    if v is not None and v[4] != x._version[0]:
        refresh(x)
    return x._node if x._node is not None else x


def version(x: Array) -> int:
    c = x._version
    return 0 if c is None else c[0]


def refresh(x: Array) -> None:
    """Remake the history of view ``x`` after a write into its memory not made through it (its
    base, or another view of it, written in place): x is then its view of the base as the base
    is now, as torch regenerates a view's grad_fn. Grad mode on."""
    v = x._view
    base = v[0]
    if base._view is not None and base._view[4] != base._version[0]:
        refresh(base)
    v[4] = x._version[0]
    if base.requires_grad:
        again = _dispatch.OPS[v[1]](base, *v[2], **v[3])
        x._node, x.requires_grad = again._node, again.requires_grad


def check_saved(n: "Node") -> None:
    """RuntimeError, as torch's, where an array node ``n`` saved was written in place since."""
    for a, v in n.saved:
        c = a._version
        if c is not None and c[0] != v:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{a._dtype.name} {list(a.shape)}], saved by {n.name}, is "
                f"at version {c[0]}; expected version {v} instead. Hint: change a copy in "
                "place (x = x.copy()), or make the change out of place (x = x * 2)")


def is_float(x: Array) -> bool:
    return x._dtype.kind in "fc"


def fit(g: Array, like_shape: tuple, like_dtype) -> Array:
    """``g`` summed back over broadcast axes to ``like_shape`` and cast to ``like_dtype``."""
    if type(g) is Array and g._dtype is like_dtype and g.shape == like_shape:
        return g   # the common case (every gradient of the sweep comes through here)
    ns = _ns()
    if not isinstance(g, Array):
        g = ns.asarray(g, dtype=like_dtype)
    gs = g.shape
    if gs != like_shape:
        lead = len(gs) - len(like_shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, d in enumerate(like_shape) if d == 1 and gs[lead + i] != 1)
        if axes:
            g = ns.sum(g, axis=axes, keepdims=True)
        if g.shape != like_shape:
            g = ns.reshape(g, like_shape)
    if g._dtype is not like_dtype:
        if g._dtype.kind == "c" and like_dtype.kind != "c":
            g = ns.real(g)
        if g._dtype is not like_dtype:
            g = ns.astype(g, like_dtype)
    return g


_FREED = ("Trying to backward through the graph a second time (or to read saved values after "
          "they were freed): pass retain_graph=True to the first backward() or grad() call")


def _sweep(outputs, grad_outputs, retain_graph: bool, create_graph: bool, capture=None):
    """Run the reverse sweep from ``outputs``; return the gradients of the leaves reached (by id)
    and of the arrays in ``capture`` (by position)."""
    ns = _ns()
    # discover the graph and count, per node, the edges that point at it
    deps: dict = {}
    stack = []
    for o in outputs:
        if o._node is not None and o._node[0] not in deps:
            deps[o._node[0]] = 0
            stack.append(o._node[0])
    roots = stack[:]   # (the only nodes no edge may point at: the outputs')
    while stack:
        n = stack.pop()
        if n.edges is None:
            raise RuntimeError(_FREED)
        for _, e, _, _ in n.edges:
            if type(e) is tuple:
                t = e[0]
                if t in deps:
                    deps[t] += 1
                else:
                    deps[t] = 1
                    stack.append(t)
    want_nodes = {}
    want_leaves = {}
    if capture is not None:
        for i, x in enumerate(capture):
            if x._node is not None:
                want_nodes.setdefault(x._node, []).append(i)
            else:
                want_leaves.setdefault(id(x), []).append(i)
    captured = [None] * (len(capture) if capture is not None else 0)
    # grad() runs only the rules on a path to its inputs: a Function's backward that calls
    # grad() on a recomputed graph (the SNN sequences' second order) leaves the graph upstream
    # of its inputs alone
    need = None if capture is None else _needed(deps, want_nodes, want_leaves)
    bufs: dict = {}
    leaves: dict = {}

    def send(e, g):
        if type(e) is tuple:
            b = bufs.get(e[0])
            if b is None:
                b = bufs[e[0]] = [None] * e[0].n_out
            i = e[1]
            prev = b[i]   # (the first gradient, or the sum: once per edge of the sweep)
            b[i] = g if prev is None else prev + g
        else:
            k = id(e)
            prev = leaves.get(k)
            leaves[k] = (e, g if prev is None else prev[1] + g)

    for o, g in zip(outputs, grad_outputs):
        send(edge_of(o), g)
    # the nodes no edge points at (only roots can be), in deps' order: its roots come first
    ready = [n for n in roots if deps[n] == 0]
    with _Running(send), mode.set_grad_enabled(create_graph):
        while ready:
            n = ready.pop()
            gs = bufs.pop(n, None)
            if n.edges is None:
                raise RuntimeError(_FREED)
            if (gs is not None and (n.hooks is not None or n.retain is not None)
                    and (need is None or n in need
                         or any((n, i) in want_nodes for i in range(n.n_out)))):
                _node_hooks(n, gs, create_graph, ns)
            if gs is not None and want_nodes:
                for idx, g in enumerate(gs):
                    for pos in want_nodes.get((n, idx), ()):
                        captured[pos] = g
            results = None
            if gs is not None and (need is None or n in need):
                for g in gs:   # (a loop, not any() over a generator: once per node)
                    if g is not None:
                        results = _apply(n, gs, ns)
                        break
            for slot, e, shape, dtype in n.edges:
                gi = None
                if results is not None:
                    gi = results[slot] if type(slot) is int else results[slot[0]][slot[1]]
                    # (fit's common case tested inline, on the buffer's shape: once per edge;
                    # a shape that is not a tuple goes through fit, which decides)
                    if gi is not None and not (type(gi) is Array and gi._dtype is dtype
                                               and gi._buf.shape == shape):
                        gi = fit(gi, shape, dtype)
                if type(e) is tuple:
                    t = e[0]
                    if gi is not None:   # (send, inlined for a node: once per edge)
                        b = bufs.get(t)
                        if b is None:
                            b = bufs[t] = [None] * t.n_out
                        i = e[1]
                        prev = b[i]
                        b[i] = gi if prev is None else prev + gi
                    c = deps[t] - 1
                    if c:
                        deps[t] = c
                    else:   # (every edge into t is done: it runs next)
                        ready.append(t)
                elif gi is not None:
                    send(e, gi)
            if not retain_graph:
                n.rule = n.args = n.kw = n.out = n.edges = n.saved = None
        for k, (x, g) in leaves.items():   # a leaf's hooks, on its whole gradient
            if x._hooks and (capture is None or k in want_leaves):
                leaves[k] = (x, _call_hooks(x._hooks, g))
    for k, (x, g) in leaves.items():
        for pos in want_leaves.get(k, ()):
            captured[pos] = g
    return leaves, captured


# the sweeps running in this thread, innermost last (each as its function that takes a leaf's
# gradient): a node whose backward computes gradients of leaves it has no edge to (checkpoint's
# recomputation reads a module's parameters) hands them to the sweep that runs it (deliver)
_RUNNING = threading.local()


class _Running:
    """The block of a sweep: ``send`` (its leaf gradients' function) is this thread's
    innermost running sweep within it."""

    __slots__ = ("send",)

    def __init__(self, send) -> None:
        self.send = send

    def __enter__(self) -> None:
        sweeps = getattr(_RUNNING, "sweeps", None)
        if sweeps is None:
            sweeps = _RUNNING.sweeps = []
        sweeps.append(self.send)

    def __exit__(self, *exc) -> None:
        _RUNNING.sweeps.pop()


def deliver(x: Array, g: Array) -> None:
    """Give leaf ``x`` the gradient ``g`` in the innermost running sweep, as if an edge of the
    node now running led to it: backward adds it to ``x.grad`` with the leaf's other gradients
    (hooks run on the sum), grad() returns it where ``x`` is one of its inputs."""
    sweeps = getattr(_RUNNING, "sweeps", None)
    if not sweeps:
        raise RuntimeError("deliver: no backward sweep is running in this thread")
    if not isinstance(x, Array) or x._node is not None or not x.requires_grad:
        raise RuntimeError("deliver: x must be a leaf Array that requires grad")
    sweeps[-1](x, g)


def reachable_leaves(outputs, stop=()) -> list:
    """The leaves that require grad on the graph of ``outputs``, each once, not looking past
    the nodes of the arrays in ``stop``."""
    stops = {a._node[0] for a in stop if a._node is not None}
    seen, found, stack = set(), {}, []
    for o in outputs:
        if o._node is not None and o._node[0] not in stops:
            stack.append(o._node[0])
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.edges is None:
            raise RuntimeError(_FREED)
        for _, e, _, _ in n.edges:
            if type(e) is tuple:
                if e[0] not in seen and e[0] not in stops:
                    stack.append(e[0])
            elif e.requires_grad:
                found.setdefault(id(e), e)
    return list(found.values())


def grad_and_leaves(outputs, inputs, grad_outputs, create_graph: bool = False):
    """For a node's backward that recomputes its graph: the gradients of ``outputs`` w.r.t.
    ``inputs`` (None where unused) and [(leaf, gradient)] for every other leaf the sweep
    reached or was delivered (which the caller hands on with ``deliver``)."""
    ins = list(inputs)
    outs, seeds = _seed(outputs, grad_outputs, "grad")
    leaves, captured = _sweep(outs, seeds, create_graph, create_graph, capture=ins)
    mine = {id(x) for x in ins}

    def out(x, g):
        g = fit(g, x.shape, x._dtype)
        return g if create_graph or not g.requires_grad else detach(g)
    gs = tuple(None if g is None else out(x, g) for x, g in zip(ins, captured))
    return gs, [(x, out(x, g)) for k, (x, g) in leaves.items() if k not in mine]


def _needed(deps: dict, want_nodes: dict, want_leaves: dict) -> set:
    """The nodes of the graph (``deps``) from which an edge path leads to a wanted array."""
    count = dict(deps)
    ready = [n for n, c in count.items() if c == 0]
    order = []
    while ready:   # outputs first, every node after all that point at it
        n = ready.pop()
        order.append(n)
        for _, e, _, _ in n.edges:
            if type(e) is tuple:
                count[e[0]] -= 1
                if count[e[0]] == 0:
                    ready.append(e[0])
    need = set()
    for n in reversed(order):
        if getattr(n.rule, "__grilly_delivers__", False):   # (its leaves are not its edges)
            need.add(n)
            continue
        for _, e, _, _ in n.edges:
            if (e in want_nodes or e[0] in need) if type(e) is tuple else id(e) in want_leaves:
                need.add(n)
                break
    return need


def _apply(n: Node, gs: list, ns) -> list:
    """Run node ``n``'s rule on output gradients ``gs`` (missing ones as zeros)."""
    if n.saved is not None:
        check_saved(n)
    # a sequence output of one (unstack of a length-1 axis, broadcast_arrays or meshgrid of
    # one array) still gets its gradients as a tuple: the rules index them
    if n.n_out == 1 and type(n.out) is not tuple:
        g = gs[0]
        out = n.out
    elif getattr(n.rule, "__grilly_raw_grads__", False):
        # (a Function whose ctx.set_materialize_grads(False): None for an unreached output)
        g = tuple(gs)
        out = n.out
    else:
        # (an output that is not a floating Array, e.g. an int a Function returns, gets None)
        g = tuple(gi if gi is not None else ns.zeros_like(o)
                  if isinstance(o, Array) and o._dtype.kind in "fc" else None
                  for gi, o in zip(gs, n.out))
        out = n.out
    return n.rule(g, out, *n.args, **n.kw)


def _seed(outputs, grad_outputs, op: str):
    ns = _ns()
    outs = [outputs] if isinstance(outputs, Array) else list(outputs)
    if grad_outputs is None:
        gos = [None] * len(outs)
    elif isinstance(grad_outputs, Array):
        gos = [grad_outputs]
    else:
        gos = list(grad_outputs)
    if len(gos) != len(outs):
        raise ValueError(f"{op}: got {len(outs)} outputs but {len(gos)} grad_outputs")
    seeds = []
    for o, g in zip(outs, gos):
        if not isinstance(o, Array):
            raise TypeError(f"{op}: outputs must be grilly Arrays, got {type(o).__name__}")
        if not o.requires_grad:
            raise RuntimeError(f"{op}: an output does not require grad and has no graph; set "
                               "requires_grad=True on an input before computing it")
        if g is None:
            if o.size != 1:
                raise RuntimeError(f"{op}: grad can be implicitly created only for outputs of one "
                                   f"element; got shape {o.shape}, pass grad_outputs")
            g = ns.ones_like(o)
        elif not isinstance(g, Array):
            g = ns.full(o.shape, g, dtype=o.dtype, device=o.device)
        elif g.shape != o.shape:
            raise ValueError(f"{op}: grad_output shape {g.shape} does not match output shape "
                             f"{o.shape}")
        elif g.device != o.device:
            raise ValueError(f"{op}: grad_output is on {g.device}, its output on {o.device}")
        elif g.dtype != o.dtype:
            # torch casts a seed to its output's dtype (a float64 ones() for a float32 loss);
            # the rules downstream take one dtype
            g = ns.astype(g, o.dtype)
        seeds.append(g)
    return outs, seeds


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs=None) -> None:
    """Accumulate d(tensors)/d(leaf) into the ``.grad`` of every leaf of the graph (with
    ``inputs``, of those arrays only, leaves or not, as torch's)."""
    outs, seeds = _seed(tensors, grad_tensors, "backward")
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is None:
        leaves, _ = _sweep(outs, seeds, retain_graph, create_graph)
        items = leaves.values()
    else:
        ins = [inputs] if isinstance(inputs, Array) else list(inputs)
        if not ins:
            raise RuntimeError("backward: the 'inputs' argument cannot be empty")
        for x in ins:
            if not isinstance(x, Array) or not x.requires_grad:
                raise RuntimeError("backward: every array of 'inputs' must be a grilly Array "
                                   "that requires grad")
        _, captured = _sweep(outs, seeds, retain_graph, create_graph, capture=ins)
        items = [(x, fit(g, x.shape, x._dtype)) for x, g in zip(ins, captured) if g is not None]
    ns = _ns()
    for x, g in items:
        if not create_graph and g.requires_grad:
            g = detach(g)
        with _ACCUMULATE:
            if x.grad is None:
                # leaves never share one gradient buffer: a gradient nothing else references
                # (not another leaf's, nor a view of one, nor the caller's seed) is taken as it
                # is, any other is copied
                taken = create_graph or (_count(g) <= _LOOP_REFS and core.sole_owner(g))
                x.grad = g if taken else ns.asarray(g, copy=True)
            else:
                x.grad = x.grad + g
            h = _dispatch.hooks.grad_set
            if h is not None:
                h(x)
        if x._hooks:
            _post_accumulate(x)


def _count(g) -> int:
    return sys.getrefcount(g)


def _loop_refs() -> int:
    """References to a gradient held only by backward's loop (the leaves table's entry, the
    loop variable), as _count sees them: measured, since the count is an interpreter detail."""
    leaves = {0: (None, object())}
    for _x, g in leaves.values():
        return _count(g)


_LOOP_REFS = _loop_refs()


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False):
    """The gradients of ``outputs`` with respect to ``inputs`` (a tuple), leaving ``.grad``
    alone; torch's options: ``materialize_grads`` gives zeros for unused inputs,
    ``is_grads_batched`` takes grad_outputs with a leading batch axis (one sweep per row)."""
    if materialize_grads and allow_unused is False:
        raise ValueError("grad: expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got allow_unused=False")
    allow_unused = bool(allow_unused) or materialize_grads
    single = isinstance(inputs, Array)
    ins = [inputs] if single else list(inputs)
    for x in ins:
        if not isinstance(x, Array) or not x.requires_grad:
            raise RuntimeError("grad: every input must be a grilly Array that requires grad")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        return _batched_grad(outputs, ins, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    outs, seeds = _seed(outputs, grad_outputs, "grad")
    _, captured = _sweep(outs, seeds, retain_graph, create_graph, capture=ins)
    res = []
    for x, g in zip(ins, captured):
        if g is None and not allow_unused:
            raise RuntimeError("grad: an input was not used to compute the outputs; pass "
                               "allow_unused=True to get None for it")
        if g is not None:
            g = fit(g, x.shape, x._dtype)
            if not create_graph and g.requires_grad:
                g = detach(g)
        elif materialize_grads:
            g = _ns().zeros_like(x)
        res.append(g)
    return tuple(res)


def _batched_grad(outputs, ins: list, grad_outputs, retain_graph: bool, create_graph: bool,
                  allow_unused: bool, materialize_grads: bool) -> tuple:
    """grad with ``is_grads_batched``: one sweep per row of the grad_outputs, stacked (torch
    vmaps the sweep; the values are the same)."""
    ns = _ns()
    outs = [outputs] if isinstance(outputs, Array) else list(outputs)
    gos = [grad_outputs] if isinstance(grad_outputs, Array) else list(grad_outputs or ())
    if len(gos) != len(outs) or not all(isinstance(g, Array) for g in gos):
        raise ValueError("grad: is_grads_batched=True needs one grad_outputs Array per output, "
                         "with a leading batch axis")
    sizes = {g.shape[0] if g.ndim else None for g in gos}
    if len(sizes) != 1 or None in sizes:
        raise ValueError("grad: is_grads_batched=True expects every grad_outputs Array to have "
                         f"the same leading batch axis, got shapes {[g.shape for g in gos]}")
    n = sizes.pop()
    rows = []
    for b in range(n):
        rows.append(grad(outs, ins, [g[b] for g in gos],
                         retain_graph=retain_graph or b < n - 1, create_graph=create_graph,
                         allow_unused=True))
    res = []
    for i, x in enumerate(ins):
        col = [r[i] for r in rows]
        if all(g is None for g in col):
            if not allow_unused:
                raise RuntimeError("grad: an input was not used to compute the outputs; pass "
                                   "allow_unused=True to get None for it")
            res.append(ns.zeros((n, *x.shape), dtype=x.dtype, device=x.device)
                       if materialize_grads else None)
            continue
        res.append(ns.stack([ns.zeros_like(x) if g is None else g for g in col], axis=0))
    return tuple(res)


def detach(x: Array) -> Array:
    """A new Array sharing ``x``'s buffer (and version counter), cut from the graph
    (requires_grad False)."""
    out = Array._new(x._buf, x._dtype, x._device)
    c = x._version
    if c is None:
        c = x._version = [0]
    out._version = c
    return out
