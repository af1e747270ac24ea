"""Recording: the wrapper put around each differentiable namespace function, and ``Function``
for ops defined by a forward and a backward written by hand."""
from __future__ import annotations

import functools

from ..array.array import Array
from . import mode
from .tape import Node, edge_of

__all__ = ["Function", "differentiable", "record"]

_state = mode.state
_SEQ = (list, tuple)


def _edges(args) -> list:
    edges = []
    for i, a in enumerate(args):
        if isinstance(a, Array):
            if a.requires_grad and a._dtype.kind in "fc":
                # (edge_of, inlined: this runs for every argument of every recorded op)
                edges.append((i, a._node if a._node is not None else a, a.shape, a._dtype))
        elif isinstance(a, _SEQ):
            for j, b in enumerate(a):
                if isinstance(b, Array) and b.requires_grad and b._dtype.kind in "fc":
                    edges.append(((i, j), edge_of(b), b.shape, b._dtype))
    return edges


def record(name: str, rule, args: tuple, kw: dict, out, save_out: bool = True):
    """Attach a node with VJP ``rule`` to ``out`` (an Array or a sequence of Arrays), computed
    from ``args``; returns ``out``. Does nothing when no argument requires grad."""
    edges = _edges(args)
    if not edges:
        return out
    if isinstance(out, Array):
        if out._dtype.kind not in "fc":
            return out
        for a in args:   # (a loop, not any() over a generator: this runs on every op)
            if out is a:
                return out
        out._node = (Node(name, rule, args, kw, out if save_out else None, edges, 1), 0)
        out.requires_grad = True
        return out
    outs = tuple(out)
    node = Node(name, rule, args, kw, outs, edges, len(outs))
    for k, o in enumerate(outs):
        if isinstance(o, Array) and o._dtype.kind in "fc" and not any(o is a for a in args):
            o._node = (node, k)
            o.requires_grad = True
    return out


def _run(name, fn, rule, save_out, args, kw):
    _state.enabled = False
    try:
        out = fn(*args, **kw)
    finally:
        _state.enabled = True
    return record(name, rule, args, kw, out, save_out)


def differentiable(name: str, fn, rule, save_out: bool = True, seq: bool = False):
    """``fn`` wrapped so that, in grad mode, a call on an array that requires grad records a node
    whose VJP is ``rule(g, out, *args, **kw)`` (one gradient, or None, per positional arg)."""
    st = _state

    if seq:
        @functools.wraps(fn)
        def wrapper(*args, **kw):
            if st.enabled:
                for a in args:
                    if isinstance(a, Array):
                        if a.requires_grad:
                            return _run(name, fn, rule, save_out, args, kw)
                    elif isinstance(a, _SEQ):
                        for b in a:
                            if isinstance(b, Array) and b.requires_grad:
                                return _run(name, fn, rule, save_out, args, kw)
            return fn(*args, **kw)
    else:
        @functools.wraps(fn)
        def wrapper(*args, **kw):
            if st.enabled:
                for a in args:
                    if isinstance(a, Array) and a.requires_grad:
                        return _run(name, fn, rule, save_out, args, kw)
            return fn(*args, **kw)
    wrapper.__grilly_vjp__ = rule
    return wrapper


class _Ctx:
    """What ``Function.forward`` and ``backward`` share: saved arrays and flags."""

    def __init__(self, args):
        self.saved_tensors = ()
        self.needs_input_grad = tuple([isinstance(a, Array) and a.requires_grad for a in args])

    def save_for_backward(self, *arrays) -> None:
        """Keep ``arrays`` for backward (read them back as ``ctx.saved_tensors``)."""
        self.saved_tensors = arrays


def _not_twice(name: str):
    def rule(*_a, **_k):
        raise NotImplementedError(
            f"{name}: its backward runs fused kernels that have no gradient of their own; a "
            "second backward through it (create_graph=True, then differentiating the "
            "gradient) is not supported yet")
    return rule


def _once(name: str, res: tuple, inputs: tuple) -> tuple:
    """``res`` (a backward's gradients, computed under create_graph) each marked with a node
    that raises when differentiated, where ``inputs`` (the forward's arguments and the incoming
    gradient) require grad: an error instead of a second-order result missing their terms."""
    rule = _not_twice(name)
    for r in res:
        if isinstance(r, Array):
            record(f"{name}.backward", rule, inputs, {}, r, save_out=False)
    return res


def _alias(x: Array, args) -> Array:
    """``x``, or a new Array sharing its buffer where ``x`` is one of ``args``."""
    for a in args:
        if x is a:
            return Array._new(x._buf, x._dtype, x._device)
    return x


class Function:
    """A differentiable op from a hand-written ``forward(ctx, *args)`` and
    ``backward(ctx, *grad_outputs)``; call it with ``MyFunction.apply(*args)``."""

    # True where backward runs kernels with no gradient rule (torch's once_differentiable):
    # under create_graph its results then raise when differentiated, rather than be constants
    once_differentiable: bool = False

    @staticmethod
    def forward(ctx, *args, **kw):
        raise NotImplementedError("Function.forward: subclasses define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("Function.backward: subclasses define backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args, **kw):
        """Run forward without recording, then record one node whose VJP is ``backward``."""
        ctx = _Ctx(args)
        # grad mode off around forward, set directly (a no_grad() block costs a microsecond,
        # and this runs for every layer call)
        st = _state
        was = st.enabled
        st.enabled = False
        try:
            out = cls.forward(ctx, *args, **kw)
        finally:
            st.enabled = was
        if not (was and any(ctx.needs_input_grad)):
            return out
        # an input returned as it is becomes a new Array on its buffer (as torch's view), so
        # that the node, and this backward, are recorded on it (record skips its own inputs)
        if isinstance(out, Array):
            out = _alias(out, args)
        elif isinstance(out, tuple):
            out = tuple(_alias(o, args) if isinstance(o, Array) else o for o in out)

        def rule(g, _out, *_a, **_k):
            gs = g if isinstance(g, tuple) else (g,)
            res = cls.backward(ctx, *gs)
            res = res if isinstance(res, tuple) else (res,)
            if cls.once_differentiable and _state.enabled:   # (create_graph)
                res = _once(cls.__name__.lstrip("_"), res, (*args, *gs))
            return res
        return record(cls.__name__, rule, args, {}, out, save_out=False)
