"""torch.autograd.functional: ``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp`` and ``vhp``
of a Python function of Arrays, composed of ``grilly.autograd.grad``.

As torch's, forward-mode products (``jvp``, ``hvp``, ``jacobian(strategy="forward-mode")``) use
the double-backward trick: the gradient of ``out`` seeded with a zero ``u`` that requires grad is
linear in ``u``, and its own gradient with respect to ``u``, seeded with ``v``, is ``J v``. They
therefore need every op of the function to support double backward (see docs/autograd.md).
``vectorize=True`` is accepted and gives the same result as the loop (one reverse sweep per
output element, or per input element in forward mode): grilly has no vmap to batch them.
"""
from __future__ import annotations

import math

from ..array import dispatch as _dispatch
from ..array.array import Array
from . import mode
from .tape import grad as _grad

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


def _ns():
    return _dispatch.ns


def _numel(x: Array) -> int:
    return math.prod(x.shape)


def _as_tuple(inp, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether ``inp`` was a tuple, ``inp`` as a tuple), each element checked to be an Array."""
    is_tuple = isinstance(inp, tuple)
    items = inp if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Array):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either an Array or a "
                            f"tuple of Arrays but {where} has type {type(el).__name__}.")
    return is_tuple, items


def _tuple_postprocess(res, to_unpack):
    """Undo ``_as_tuple`` on ``res`` (``to_unpack`` one flag, or (outputs, inputs) flags for a
    nested result)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """New Arrays for ``inputs``: a differentiable alias where the caller's graph is to be kept
    (create_graph), else a detached one that requires grad when ``need_graph``; always new
    objects, so that the function's use of the same arrays captured otherwise stays apart."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            d = inp.detach()
            if need_graph:
                d.requires_grad_()
            res.append(d)
    return tuple(res)


def _grad_postprocess(inputs: tuple, create_graph: bool) -> tuple:
    if inputs and isinstance(inputs[0], Array):
        return inputs if create_graph else tuple(x.detach() for x in inputs)
    return tuple(_grad_postprocess(x, create_graph) for x in inputs)


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Array.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.shape} but got "
                               f"{el_v.shape}.")


def _check_requires_grad(inputs: tuple, input_type: str, strict: bool) -> None:
    """In strict mode, an error for an output (or gradient, jacobian, hessian) that is not
    connected to the inputs."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(
                f"The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs.")
        if input_type == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).")
        if input_type == "grad_inputs":
            raise RuntimeError(f"The gradient with respect to input {i} is independent of the "
                               "inputs of the user-provided function. This is not allowed in "
                               "strict mode.")
        raise RuntimeError(f"Output {i} of the user-provided function does not require "
                           "gradients. The outputs must be computed in a differentiable manner "
                           "from the input when running in strict mode.")


def _autograd_grad(outputs: tuple, inputs: tuple, grad_outputs=None, create_graph=False,
                   retain_graph=None) -> tuple:
    """``grad`` over the outputs that require grad (None per input when none does, or for an
    input they do not reach)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    outs, gos = [], []
    for out, g in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            outs.append(out)
            gos.append(g)
    if not outs:
        return (None,) * len(inputs)
    return _grad(outs, inputs, gos, retain_graph=retain_graph, create_graph=create_graph,
                 allow_unused=True)


_FILL_MSG = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool,
                   stage: str) -> tuple:
    """``grads`` with zeros (of ``refs``' shapes) for the missing ones; strict errors."""
    ns = _ns()
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_FILL_MSG[stage].format(i=i))
            g = ns.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        res.append(g)
    return tuple(res)


def _v_none_for_inputs(inputs: tuple) -> None:
    if len(inputs) != 1 or _numel(inputs[0]) != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Array with a single element.")


def _prep_v(v, other: tuple, is_other_tuple: bool, create_graph: bool, fn: str) -> tuple:
    _, v = _as_tuple(v, "v", fn)
    v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
    _validate_v(v, other, is_other_tuple)
    return v


def _zeros_requiring_grad(arrays: tuple) -> tuple:
    ns = _ns()
    return tuple(ns.zeros_like(a).requires_grad_() for a in arrays)


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), v^T J): the vector-Jacobian product of ``func`` at ``inputs``, as torch's."""
    with mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            v = _prep_v(v, outputs, is_outputs_tuple, create_graph, "vjp")
        elif len(outputs) != 1 or _numel(outputs[0]) != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Array with a single element.")
    with mode.set_grad_enabled(True if create_graph else mode.is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(res, is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), J v): the Jacobian-vector product of ``func`` at ``inputs`` (by the
    double-backward trick, as torch's)."""
    with mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            v = _prep_v(v, inputs, is_inputs_tuple, create_graph, "jvp")
        else:
            _v_none_for_inputs(inputs)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # the backward is linear in its seed, so the seed's value (zeros) does not matter
        grad_outputs = _zeros_requiring_grad(outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
        with mode.set_grad_enabled(create_graph):
            grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
            res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(res, is_outputs_tuple))


def _one_hot(n: int, j: int, shape: tuple, like: Array) -> Array:
    """The ``j``-th unit vector of length ``n`` (``like``'s dtype and device), as ``shape``."""
    ns = _ns()
    e = ns.astype(ns.arange(n, device=like.device) == j, like.dtype)
    return ns.reshape(e, shape)


def _stack_rows(rows: list, shape: tuple, like: Array) -> Array:
    ns = _ns()
    if not rows:
        return ns.zeros(shape, dtype=like.dtype, device=like.device)
    return ns.reshape(ns.stack(rows, axis=0), shape)


def _jac_reverse(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """One row of the Jacobian per output element: a reverse sweep seeded with a unit vector."""
    ns = _ns()
    jacobian = []
    for i, out in enumerate(outputs):
        rows = [[] for _ in inputs]
        n = _numel(out)
        for j in range(n):
            seed = _one_hot(n, j, out.shape, out)
            vj = _autograd_grad((out,), inputs, (seed,), retain_graph=True,
                                create_graph=create_graph)
            for k, (g, inp) in enumerate(zip(vj, inputs)):
                if g is not None:
                    if strict and create_graph and not g.requires_grad:
                        raise RuntimeError(f"The jacobian of the user-provided function is "
                                           f"independent of input {i}. This is not allowed in "
                                           "strict mode when create_graph=True.")
                else:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {k}. This is not allowed in "
                                           "strict mode.")
                    g = ns.zeros_like(inp)
                rows[k].append(g)
        jacobian.append(tuple(_stack_rows(r, out.shape + inp.shape, out)
                              for r, inp in zip(rows, inputs)))
    return tuple(jacobian)


def _jac_forward(func, inputs, strict: bool):
    """One column of the Jacobian per input element: a Jacobian-vector product (the
    double-backward trick) with a unit vector."""
    ns = _ns()
    with mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=False, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        grad_outputs = _zeros_requiring_grad(outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        cols = [[[] for _ in inputs] for _ in outputs]   # [output][input] -> columns
        for k, inp in enumerate(inputs):
            n = _numel(inp)
            for j in range(n):
                v = [ns.zeros_like(x) for x in inputs]
                v[k] = _one_hot(n, j, inp.shape, inp)
                g = grad_inputs
                if any(gi is not None for gi in g):
                    res = _autograd_grad(tuple(gi for gi in g if gi is not None), grad_outputs,
                                         tuple(vi for vi, gi in zip(v, g) if gi is not None),
                                         retain_graph=True)
                else:
                    res = (None,) * len(outputs)
                for i, (c, out) in enumerate(zip(res, outputs)):
                    cols[i][k].append(ns.zeros_like(out) if c is None else c.detach())
    jac = []
    for i, out in enumerate(outputs):
        row = []
        for k, inp in enumerate(inputs):
            c = cols[i][k]
            if not c:
                row.append(ns.zeros(out.shape + inp.shape, dtype=out.dtype, device=out.device))
                continue
            # columns stacked last: (out..., n) -> (out..., inp...)
            m = ns.stack([ns.reshape(x, (-1,)) for x in c], axis=1)
            row.append(ns.reshape(m, out.shape + inp.shape))
        jac.append(tuple(row))
    return _tuple_postprocess(tuple(jac), (is_outputs_tuple, is_inputs_tuple))


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: an Array of shape ``out.shape + inp.shape``,
    nested in tuples over the outputs, then the inputs, where those were tuples (torch's)."""
    if strategy not in _STRATEGIES:
        raise ValueError(f"jacobian: strategy must be 'forward-mode' or 'reverse-mode', got "
                         f"{strategy!r}")
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("jacobian: create_graph=True and strategy='forward-mode' "
                                      "are not supported together; use strategy="
                                      "'reverse-mode'")
        if not vectorize:
            raise NotImplementedError("jacobian: strategy='forward-mode' is only implemented "
                                      "for vectorize=True (as torch's)")
    if vectorize and strict:
        raise RuntimeError("jacobian: `strict=True` and `vectorized=True` are not supported "
                           "together. Please either set `strict=False` or `vectorize=False`.")
    if strategy == "forward-mode":
        return _jac_forward(func, inputs, strict)
    with mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        jac = _jac_reverse(outputs, inputs, create_graph, strict)
        jac = _grad_postprocess(jac, create_graph)
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _single_output(outputs: tuple, is_outputs_tuple: bool, fn: str) -> None:
    if is_outputs_tuple or not isinstance(outputs[0], Array):
        raise RuntimeError(f"The function given to {fn} should return a single Array")
    if _numel(outputs[0]) != 1:
        raise RuntimeError(f"The Array returned by the function given to {fn} should contain a "
                           "single element")


def hessian(func, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs`` (the Jacobian of its
    gradient), nested in tuples over the inputs twice where they were a tuple (torch's)."""
    ns = _ns()
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise ValueError(f"hessian: outer_jacobian_strategy must be 'forward-mode' or "
                         f"'reverse-mode', got {outer_jacobian_strategy!r}")

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        _single_output(t_out, is_out_tuple, "hessian")
        return ns.reshape(out, ())

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_() for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _first_gradient(func, inputs, v, create_graph: bool, strict: bool, fn: str):
    """The shared start of vhp and hvp: inputs, v, outputs, and the gradient (with its graph)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        v = _prep_v(v, inputs, is_inputs_tuple, create_graph, fn)
    else:
        _v_none_for_inputs(inputs)
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn)
    _check_requires_grad(outputs, "outputs", strict=strict)
    _single_output(outputs, is_outputs_tuple, fn)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), v^T H): the vector-Hessian product of the scalar ``func``."""
    with mode.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _first_gradient(
            func, inputs, v, create_graph, strict, "vhp")
        _check_requires_grad(jac, "jacobian", strict=strict)
    with mode.set_grad_enabled(True if create_graph else mode.is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(res, is_inputs_tuple))


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), H v): the Hessian-vector product of the scalar ``func`` (by the
    double-backward trick, as torch's)."""
    with mode.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _first_gradient(
            func, inputs, v, create_graph, strict, "hvp")
        grad_jac = _zeros_requiring_grad(inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with mode.set_grad_enabled(True if create_graph else mode.is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    res = _grad_postprocess(res, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(res, is_inputs_tuple))
