"""torch.func's differentiating transforms (grad, grad_and_value, vjp, jvp, jacrev, jacfwd,
hessian), composed of ``grilly.autograd.grad``.

Each runs ``func`` on aliases of the differentiated arguments that require grad, then sweeps
backward from its outputs. A transform running inside another one (``grad(grad(f))``,
``hessian``, the inner half of ``jvp``) sweeps with ``create_graph=True``, so that the outer one
can differentiate its result; at the top level it does so only where an argument (or cotangent)
already requires grad, and otherwise returns results cut from the graph, as torch.func's are.
grilly has no forward mode: ``jvp`` is the double-backward trick (the vjp of the vjp) and
``jacfwd`` computes what ``jacrev`` does.
"""
from __future__ import annotations

import contextlib
import functools
import math
import threading
from typing import Any, Callable

from ..array import api as gp
from ..array.array import Array
from ..autograd import grad as _autograd_grad, inference_mode, is_grad_enabled, set_grad_enabled
from ..autograd.functional import _one_hot, _stack_rows
from ._pytree import flatten, unflatten

__all__ = ["grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp"]

_state = threading.local()   # depth: how many differentiating transforms are running func


def _depth() -> int:
    return getattr(_state, "depth", 0)


@contextlib.contextmanager
def _inside():
    """Context of a transform running ``func``: grad mode on (out of inference mode too, as
    torch.func's transforms differentiate inside it), one level deeper."""
    _state.depth = _depth() + 1
    try:
        with inference_mode(False):
            yield
    finally:
        _state.depth -= 1


def _keeps_graph(arrays) -> bool:
    """Whether a result must stay differentiable: an enclosing transform (or the caller, through
    an argument that requires grad) may differentiate it."""
    return is_grad_enabled() and (_depth() > 0 or any(
        isinstance(a, Array) and a.requires_grad for a in arrays))


def _cut(tree, keep: bool):
    """``tree`` with its Arrays detached unless ``keep``."""
    if keep:
        return tree
    leaves, spec = flatten(tree)
    return unflatten([a.detach() if isinstance(a, Array) else a for a in leaves], spec)


def _floating(x: Array) -> bool:
    return gp.isdtype(x.dtype, ("real floating", "complex floating"))


def _alias(x, name: str) -> Array:
    """A new Array of ``x``'s values that requires grad, attached to x's graph where x has one."""
    if not isinstance(x, Array):
        raise TypeError(f"{name}: the differentiated arguments must be Arrays (or tuples, lists "
                        f"and dicts of them), got {type(x).__name__}")
    if not _floating(x):
        raise TypeError(f"{name}: only floating-point Arrays can be differentiated, got "
                        f"{x.dtype.name}")
    with inference_mode(False):
        return x.view_as(x) if x.requires_grad else x.detach().requires_grad_()


def _split_aux(out, name: str) -> tuple:
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"{name}(f)(*args): output of function f should be a tuple: "
                        "(output, aux) if has_aux is True")
    return out


class _Pullback:
    """``func(*primals)`` run on aliases of the primals, and its vector-Jacobian products."""

    def __init__(self, name: str, func: Callable, primals: tuple, has_aux: bool):
        flat, self.in_spec = flatten(primals)
        self.primals = flat
        self.inputs = [_alias(x, name) for x in flat]
        keep = _keeps_graph(flat)
        with _inside():
            out = func(*unflatten(self.inputs, self.in_spec))
        self.aux = None
        if has_aux:
            out, aux = _split_aux(out, name)
            self.aux = _cut(aux, keep)
        self.outputs, self.out_spec = flatten(out)
        for o in self.outputs:
            if not isinstance(o, Array):
                raise TypeError(f"{name}: func must return Arrays (or tuples, lists and dicts "
                                f"of them), got {type(o).__name__}")
            if name in ("vjp", "jacrev", "jacfwd") and not _floating(o):
                # an integer or bool output has no cotangent: zeros would hide the mistake
                raise TypeError(f"{name}: all outputs of func must be floating-point or complex "
                                f"Arrays, got one of dtype {o.dtype.name}")
            if name in ("jacrev", "jacfwd") and o.dtype.kind == "c":
                # one real sweep per output element gives only the real part's row
                raise TypeError(f"{name}: expected all outputs of func to be real, got one of "
                                f"dtype {o.dtype.name}; use vjp, or return the real and "
                                "imaginary parts as separate outputs")
        self.output = _cut(out, keep)

    def pull(self, cotangents: list, retain_graph: bool = True,
             create_graph: bool | None = None) -> list:
        """The gradients of the inputs for flat ``cotangents`` (None: that output left out),
        zeros for an input the outputs do not reach."""
        if create_graph is None:
            create_graph = _keeps_graph([*self.primals, *cotangents])
        pairs = [(o, c) for o, c in zip(self.outputs, cotangents)
                 if c is not None and o.requires_grad]
        grads = [None] * len(self.inputs)
        if pairs:
            with set_grad_enabled(create_graph):
                grads = _autograd_grad([o for o, _ in pairs], self.inputs, [c for _, c in pairs],
                                       retain_graph=retain_graph, create_graph=create_graph,
                                       allow_unused=True)
        return [gp.zeros_like(x) if g is None else g for g, x in zip(grads, self.inputs)]


def _positions(argnums, nargs: int, name: str) -> tuple[int, ...]:
    """``argnums`` (an int or a tuple of ints) as non-negative positions among ``nargs``."""
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if (isinstance(argnums, bool) or not isinstance(nums, tuple) or not nums
            or not all(isinstance(a, int) and not isinstance(a, bool) for a in nums)):
        raise TypeError(f"{name}: argnums must be an int or a non-empty tuple of ints, got "
                        f"{argnums!r}")
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise ValueError(f"{name}: got argnums={a}, but only {nargs} positional inputs")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: argnums must be unique, got {argnums!r}")
    return tuple(out)


def _pullback(name: str, func: Callable, argnums, has_aux: bool, args: tuple,
              kwargs: dict) -> _Pullback:
    """The pullback of ``func(*args, **kwargs)`` as a function of the arguments at ``argnums``."""
    pos = _positions(argnums, len(args), name)

    def of_diff_args(*diff):
        full = list(args)
        for p, d in zip(pos, diff):
            full[p] = d
        return func(*full, **kwargs)
    return _Pullback(name, of_diff_args, tuple(args[p] for p in pos), has_aux)


def _per_argnums(grads: tuple, argnums):
    """Gradients for a tuple ``argnums`` as a tuple, for an int one as that argument's alone."""
    return grads[0] if isinstance(argnums, int) else grads


def _grad_and_value(name: str, func: Callable, argnums, has_aux: bool) -> Callable:
    """grad_and_value, its errors naming ``name``."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        pb = _pullback(name, func, argnums, has_aux, args, kwargs)
        out = pb.outputs[0]
        if pb.out_spec is not None or out.ndim != 0:
            shape = "a tuple, list or dict" if pb.out_spec is not None else f"shape {out.shape}"
            raise ValueError(f"{name}(f)(*args): expected f(*args) to return a 0-d Array, got "
                             f"{shape}; vjp or jacrev handle other outputs")
        if out.dtype.kind == "c":
            # a complex "loss" has no gradient of its own (torch's and JAX's grad refuse it)
            raise TypeError(f"{name}(f)(*args): expected f(*args) to return a real 0-d Array, "
                            f"got {out.dtype.name}; differentiate its real part or abs, or use "
                            "vjp")
        g = _per_argnums(unflatten(pb.pull([gp.ones_like(out)]), pb.in_spec), argnums)
        return g, ((pb.output, pb.aux) if has_aux else pb.output)
    return wrapper


def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning (the gradient of ``func``'s 0-d output with respect to the
    arguments at ``argnums``, that output); with ``has_aux``, (gradient, (output, aux))."""
    return _grad_and_value("grad_and_value", func, argnums, has_aux)


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning the gradient of ``func``'s 0-d output with respect to the arguments
    at ``argnums``; with ``has_aux``, (gradient, aux)."""
    gv = _grad_and_value("grad", func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def _check_like(given: list, refs: list, name: str, what: str) -> None:
    for i, (a, r) in enumerate(zip(given, refs)):
        if not isinstance(a, Array):
            raise TypeError(f"{name}: {what} must be Arrays, got {type(a).__name__} at leaf {i}")
        if a.shape != r.shape:
            raise ValueError(f"{name}: {what} leaf {i} has shape {a.shape}, expected {r.shape}")


def vjp(func: Callable, *primals, has_aux: bool = False):
    """(``func(*primals)``, vjp_fn) where ``vjp_fn(cotangents)`` is the tuple of the primals'
    vector-Jacobian products; with ``has_aux``, (output, vjp_fn, aux)."""
    pb = _Pullback("vjp", func, primals, has_aux)

    def vjp_fn(cotangents, retain_graph: bool = True, create_graph: bool | None = None):
        """The primals' gradients for ``cotangents`` (shaped as the output)."""
        flat, spec = flatten(cotangents)
        if spec != pb.out_spec:
            raise ValueError("vjp_fn: expected the cotangents to have the structure of the "
                             "function's output (the same tuples, lists and dicts)")
        _check_like(flat, pb.outputs, "vjp_fn", "cotangents")
        for i, (c, o) in enumerate(zip(flat, pb.outputs)):
            if c.dtype.kind == "c" and o.dtype.kind != "c":
                raise TypeError(f"vjp_fn: cotangents leaf {i} is {c.dtype.name} but the output "
                                f"is real ({o.dtype.name})")
        return unflatten(pb.pull(flat, retain_graph, create_graph), pb.in_spec)
    return (pb.output, vjp_fn, pb.aux) if has_aux else (pb.output, vjp_fn)


def jvp(func: Callable, primals: tuple, tangents, *, strict: bool = False,
        has_aux: bool = False):
    """(``func(*primals)``, the Jacobian-vector product with ``tangents``); with ``has_aux``,
    (output, jvp_out, aux). ``strict`` is accepted and ignored, as torch's."""
    if not isinstance(primals, tuple):
        raise TypeError("jvp(f, primals, tangents): expected primals to be a tuple (f(*primals) "
                        f"is called), got {type(primals).__name__}")
    flat_p, pspec = flatten(primals)
    flat_t, tspec = flatten(tangents)
    if pspec != tspec:
        raise ValueError("jvp(f, primals, tangents): expected primals and tangents to have the "
                         "same structure (the same tuples, lists and dicts)")
    _check_like(flat_t, flat_p, "jvp", "tangents")
    keep = _keeps_graph([*flat_p, *flat_t])
    pb = _Pullback("jvp", func, primals, has_aux)
    # an integer or bool output has a zero tangent of its dtype, as torch's
    diff = [k for k, o in enumerate(pb.outputs) if _floating(o)]

    def pullback(*us):
        """J^T u for the floating outputs' cotangents ``us``: linear in them."""
        cot: list[Any] = [None] * len(pb.outputs)
        for k, u in zip(diff, us):
            cot[k] = u
        return unflatten(pb.pull(cot), pb.in_spec)

    jv = [gp.zeros_like(o) for o in pb.outputs]
    if diff:
        # the vjp of that linear map with the tangents is J v
        us = [gp.zeros_like(pb.outputs[k]) for k in diff]
        for k, t in zip(diff, vjp(pullback, *us)[1](tangents, create_graph=keep)):
            jv[k] = t
    jv = unflatten(jv, pb.out_spec)
    return (pb.output, jv, pb.aux) if has_aux else (pb.output, jv)


def _jacobian(name: str, func: Callable, argnums, has_aux: bool) -> Callable:
    """The Jacobian transform: one reverse sweep per output element."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        pb = _pullback(name, func, argnums, has_aux, args, kwargs)
        jacs = []
        for k, out in enumerate(pb.outputs):
            n = math.prod(out.shape)
            rows: list[list] = [[] for _ in pb.inputs]
            for j in range(n):
                cot: list[Any] = [None] * len(pb.outputs)
                cot[k] = _one_hot(n, j, out.shape, out)
                for r, g in zip(rows, pb.pull(cot)):
                    r.append(g)
            per_input = [_stack_rows(r, out.shape + x.shape, out) for r, x in zip(rows, pb.inputs)]
            jacs.append(_per_argnums(unflatten(per_input, pb.in_spec), argnums))
        jac = unflatten(jacs, pb.out_spec)
        return (jac, pb.aux) if has_aux else jac
    return wrapper


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """A function returning the Jacobian of ``func`` with respect to the arguments at
    ``argnums`` (each block ``out.shape + arg.shape``); ``chunk_size`` is checked and ignored
    (the rows are computed one at a time)."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"jacrev: chunk_size should be None or a positive int, got "
                         f"{chunk_size!r}")
    return _jacobian("jacrev", func, argnums, has_aux)


def jacfwd(func: Callable, argnums=0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """jacrev's Jacobian (grilly has no forward mode: the same reverse sweeps give it)."""
    if randomness not in ("error", "different", "same"):
        raise ValueError(f"jacfwd: randomness must be 'error', 'different' or 'same', got "
                         f"{randomness!r}")
    return _jacobian("jacfwd", func, argnums, has_aux)


def hessian(func: Callable, argnums=0) -> Callable:
    """A function returning the Hessian of ``func`` with respect to the arguments at
    ``argnums``: ``jacfwd(jacrev(func, argnums), argnums)``, as torch's."""
    return jacfwd(jacrev(func, argnums), argnums)
