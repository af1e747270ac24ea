"""Recording: the wrapper put around each differentiable namespace function, and ``Function``
for ops defined by a forward and a backward written by hand."""
from __future__ import annotations

import functools
import inspect

from ..array.array import Array, view_of
from . import mode
from .tape import Node, check_saved, edge_of, refresh

__all__ = ["Function", "differentiable", "once_differentiable", "record"]

_state = mode.state
_SEQ = (list, tuple)


def _edges(args) -> list:
    edges = []
    for i, a in enumerate(args):
        if isinstance(a, Array):
            v = a._view
            if v is not None and v[4] != a._version[0]:
                refresh(a)   # a view whose memory was written since: its history first
            if a.requires_grad and a._dtype.kind in "fc":
                # (edge_of and the shape property, inlined: this runs for every argument of
                # every recorded op)
                edges.append((i, a._node if a._node is not None else a, tuple(a._buf.shape),
                               a._dtype))
        elif isinstance(a, _SEQ):
            for j, b in enumerate(a):
                if isinstance(b, Array) and b.requires_grad and b._dtype.kind in "fc":
                    edges.append(((i, j), edge_of(b), b.shape, b._dtype))
    return edges


def _rg(a) -> bool:
    return isinstance(a, Array) and a.requires_grad


def _saved(saves: str, args: tuple, out) -> tuple | None:
    """(array, its version) for each array a rule reads, by ``saves``: "none"; "args" (the
    array arguments); "out" (the outputs); "all" (both; the outputs where saved); "cross" (an
    argument of two where the other requires grad: a product's rule); "divide" (the divisor,
    but of a nonzero scalar, and the output where the divisor requires grad); "pow" (the
    arguments, and the output where the exponent requires grad)."""
    if saves == "none":
        return None
    arrays = []
    if saves == "cross":
        a, b = args[0], args[1]
        if isinstance(a, Array) and _rg(b):
            arrays.append(a)
        if isinstance(b, Array) and _rg(a):
            arrays.append(b)
    elif saves == "divide":
        if isinstance(args[1], Array) and (isinstance(args[0], Array) or args[0] == 0):
            arrays.append(args[1])
        if _rg(args[1]):
            arrays.append(out)
    else:
        if saves != "out":
            arrays = [a for a in args if isinstance(a, Array)]
        if saves == "out" or (saves == "all" and out is not None) or (
                saves == "pow" and _rg(args[1])):
            arrays.extend(out if isinstance(out, tuple) else (out,))
    # (version(a), inlined: every recorded op saves)
    res = tuple([(a, 0 if a._version is None else a._version[0]) for a in arrays
                 if isinstance(a, Array)])
    return res or None


def record(name: str, rule, args: tuple, kw: dict, out, save_out: bool = True,
           saves: str = "all"):
    """Attach a node with VJP ``rule`` to ``out`` (an Array or a sequence of Arrays), computed
    from ``args``; returns ``out``. Does nothing when no argument requires grad. ``saves``:
    which arrays the rule reads (_saved), checked against writes in place at backward."""
    edges = _edges(args)
    if not edges:
        return out
    if isinstance(out, Array):
        if out._dtype.kind not in "fc":
            return out
        for a in args:   # (a loop, not any() over a generator: this runs on every op)
            if out is a:
                return out
        o = out if save_out else None
        out._node = (Node(name, rule, args, kw, o, edges, 1,
                          None if saves == "none" else _saved(saves, args, o)), 0)
        out.requires_grad = True
        return out
    outs = tuple(out)
    node = Node(name, rule, args, kw, outs, edges, len(outs), _saved(saves, args, outs))
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

    _saved = ()   # (the class's until save_for_backward: every Function call makes a _Ctx)
    # (the class's until forward sets them, as _saved)
    _non_differentiable = ()
    _dirty = ()
    materialize_grads = True

    def __init__(self, args, name: str = "Function"):
        self._name = name
        self.needs_input_grad = tuple([isinstance(a, Array) and a.requires_grad for a in args])

    def mark_non_differentiable(self, *arrays) -> None:
        """Outputs of forward that get no gradient (indices, masks): they do not require grad,
        and backward receives zeros (None without materialized grads) for them."""
        self._non_differentiable = (*self._non_differentiable, *arrays)

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward receives zeros (True, the default) or None for the gradients of
        outputs that did not reach the loss."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *arrays) -> None:
        """Inputs forward modified in place (and returns): they take this op's node, as
        torch's in-place custom functions."""
        self._dirty = (*self._dirty, *arrays)

    def save_for_backward(self, *arrays) -> None:
        """Keep ``arrays`` for backward (read them back as ``ctx.saved_tensors``)."""
        self._saved = arrays
        # (version(a), inlined: every Function saves)
        self._versions = tuple([(0 if a._version is None else a._version[0])
                                if isinstance(a, Array) else 0 for a in arrays])

    @property
    def saved_tensors(self) -> tuple:
        """The arrays ``save_for_backward`` kept; RuntimeError where one was written in place
        since (as torch's)."""
        saved = self._saved
        if saved:
            # the versions compared first: the error's record is built only for a mismatch
            # (every Function's backward reads these)
            for a, v in zip(saved, self._versions):
                if type(a) is Array or isinstance(a, Array):
                    c = a._version
                    if c is not None and c[0] != v:
                        check_saved(_Saved(self._name, [
                            (a, v) for a, v in zip(saved, self._versions)
                            if isinstance(a, Array)]))
        return saved

    @saved_tensors.setter
    def saved_tensors(self, arrays) -> None:
        self.save_for_backward(*arrays)


class _Saved:
    """What check_saved reads of a node (a Function's context stands in for one)."""

    __slots__ = ("name", "saved")

    def __init__(self, name: str, saved: list) -> None:
        self.name, self.saved = name, saved


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
            record(f"{name}.backward", rule, inputs, {}, r, save_out=False, saves="none")
    return res


def _alias(x: Array, args) -> Array:
    """``x``, or a new Array sharing its buffer where ``x`` is one of ``args`` (a view of it)."""
    for a in args:
        if x is a:
            return view_of(x, x._buf, "reshape", (x.shape,))
    return x


def _is_in(x, arrays) -> bool:
    for a in arrays:
        if x is a:
            return True
    return False


def once_differentiable(fn):
    """Decorator for a ``Function.backward`` that runs kernels with no gradient rule (torch's
    ``torch.autograd.function.once_differentiable``): it runs in no_grad mode, and under
    create_graph its results raise when differentiated instead of being constants."""
    @functools.wraps(fn)
    def wrapper(ctx, *grads):
        with mode.no_grad():
            return fn(ctx, *grads)
    wrapper.__grilly_once_differentiable__ = True
    return wrapper


def _inputs(cls, args: tuple, kw: dict) -> tuple:
    """``args`` and ``kw`` bound to ``cls.forward``'s parameters, defaults filled in: the
    ``inputs`` that ``setup_context`` receives (torch's)."""
    try:
        b = inspect.signature(cls.forward).bind(*args, **kw)
    except TypeError as e:
        raise TypeError(f"{cls.__name__}.apply: {e}") from None
    b.apply_defaults()
    return b.args


def _expandable(shape: tuple, to: tuple) -> bool:
    """Whether ``shape`` broadcasts to ``to`` (a gradient of shape ``to`` sums back to it)."""
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(shape[::-1], to[::-1]))


def _check_grads(name: str, res: tuple, args: tuple) -> tuple:
    """``res`` (backward's results) checked against the inputs as torch checks them: one per
    input that requires grad (extra Nones allowed), each None or of a shape that sums back to
    its input's."""
    n = len(args)
    if len(res) == n:   # the common case first, in one pass (this runs for every node)
        for r, a in zip(res, args):
            if r is not None and isinstance(a, Array) and a.requires_grad and not (
                    r.__class__ is Array and r._buf.shape == a._buf.shape):
                break
        else:
            return res
    if any(r is not None for r in res[n:]) or any(
            isinstance(a, Array) and a.requires_grad for a in args[len(res):]):
        raise RuntimeError(f"function {name}Backward returned an incorrect number of gradients "
                           f"(expected {n}, got {len(res)})")
    for i, (r, a) in enumerate(zip(res, args)):
        if r is not None and isinstance(a, Array) and a.requires_grad:
            if isinstance(r, (int, float, complex)):
                continue   # (a number: the tape makes it an array of the input's shape)
            if not isinstance(r, Array):
                raise TypeError(f"function {name}Backward returned a {type(r).__name__} as "
                                f"gradient {i}; expected an Array or None")
            if r.shape != a.shape and not _expandable(a.shape, r.shape):
                raise RuntimeError(f"Function {name}Backward returned an invalid gradient at "
                                   f"index {i} - got {list(r.shape)} but expected shape "
                                   f"compatible with {list(a.shape)}")
    return res[:n]


def _flags(cls) -> tuple:
    """(torch's setup_context style, whether backward's results are checked) of a Function
    class: a user's Function has its results checked as torch checks them; grilly's own are
    tested, and their nodes are every layer's backward (the check would run per node)."""
    return (cls.setup_context is not Function.setup_context,
            not cls.__module__.startswith("grilly."))


_FLAGS: dict = {}   # Function class -> _flags(cls) (dict reads and writes: thread-safe)


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

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        """torch's other style: ``forward(*args)`` without ctx, then ``setup_context(ctx,
        inputs, output)`` saves what backward needs. Overridden by a subclass that uses it."""
        raise NotImplementedError("Function.setup_context: a subclass that defines "
                                  "forward(*args) without ctx defines setup_context too")

    @classmethod
    def apply(cls, *args, **kw):
        """Run forward without recording, then record one node whose VJP is ``backward``."""
        ctx = _Ctx(args, cls.__name__)
        # grad mode off around forward, set directly (a no_grad() block costs a microsecond,
        # and this runs for every layer call)
        st = _state
        was = st.enabled
        st.enabled = False
        flags = _FLAGS.get(cls)
        if flags is None:
            flags = _FLAGS[cls] = _flags(cls)
        try:
            if flags[0]:
                out = cls.forward(*args, **kw)
                cls.setup_context(ctx, _inputs(cls, args, kw), out)
            else:
                out = cls.forward(ctx, *args, **kw)
        finally:
            st.enabled = was
        dirty = ctx._dirty
        if dirty:
            outs = out if isinstance(out, tuple) else (out,)   # (as forward returned them)
            for d in dirty:
                if not _is_in(d, outs):
                    raise RuntimeError(f"{cls.__name__}: an array marked dirty in forward was "
                                       "not returned as an output")
                if was and d.requires_grad and d._node is None:
                    raise RuntimeError(f"{cls.__name__}: a leaf Array that requires grad is "
                                       "being used in an in-place operation (mark_dirty); "
                                       "wrap the call in no_grad() or pass a copy")
        if not (was and any(ctx.needs_input_grad)):
            return out
        # an input returned as it is becomes a new Array on its buffer (as torch's view), so
        # that the node, and this backward, are recorded on it (record skips its own inputs);
        # an input marked dirty then takes that node itself below
        out_f = out   # (forward's own outputs: mark_dirty and mark_non_differentiable name them)
        if isinstance(out, Array):
            out = _alias(out, args)
        elif isinstance(out, tuple):
            out = tuple(_alias(o, args) if isinstance(o, Array) else o for o in out)
        name = cls.__name__
        check = flags[1]

        def rule(g, _out, *_a, **_k):
            gs = g if isinstance(g, tuple) else (g,)
            res = cls.backward(ctx, *gs)
            res = res if isinstance(res, tuple) else (res,)
            if check:
                res = _check_grads(name, res, args)
            if _state.enabled and (cls.once_differentiable or getattr(
                    cls.backward, "__grilly_once_differentiable__", False)):   # (create_graph)
                res = _once(name.lstrip("_"), res, (*args, *gs))
            return res
        if not ctx.materialize_grads:
            rule.__grilly_raw_grads__ = True   # (tape._apply: None for unreached outputs)
        if getattr(cls, "_delivers_to_leaves", False):
            # its backward hands leaves it has no edge to their gradients (tape.deliver): a
            # grad() sweep runs it even when no edge of it leads to what grad() wants
            rule.__grilly_delivers__ = True
        out = record(name, rule, args, {}, out, save_out=False, saves="none")
        nondiff = ctx._non_differentiable
        if nondiff or dirty:
            outs = out_f if isinstance(out_f, tuple) else (out_f,)
            news = out if isinstance(out, tuple) else (out,)
            res = []
            for o, new in zip(outs, news):
                if isinstance(new, Array) and _is_in(o, nondiff):
                    # no gradient flows back through it: it stays off the graph
                    new._node, new.requires_grad = None, False
                if _is_in(o, dirty) and isinstance(new, Array) and new is not o:
                    o._node, o.requires_grad = new._node, new.requires_grad
                    new = o
                res.append(new)
            out = tuple(res) if isinstance(out, tuple) else res[0]
        return out
