"""Checked mode: every kernel result validated against the contract (``GRILLY_CHECK=1``).

A kernel that returns the wrong kind of object, shape or dtype otherwise fails far away (or not
at all); in checked mode the registry wraps each kernel so that the call itself raises
``KernelResultError`` naming the backend, the kernel and what was wrong. The expected shape and
dtype come from the kernel's own arguments (its call in the contract); kernels whose result
shape depends on the data get the type checks only. It costs a Python call per kernel: on in
the conformance kit and in tests, off by default.
"""
from __future__ import annotations

import functools
import inspect
import math

import numpy as np

from .contract import ELEMENTWISE_OPS


class KernelResultError(RuntimeError):
    """A kernel returned something its contract does not allow."""


def _dtype_name(d) -> str | None:
    d = getattr(d, "dtype", d)
    return getattr(d, "name", None)


def _is_shape(s) -> bool:
    return isinstance(s, tuple) and all(isinstance(n, (int, np.integer)) and n >= 0 for n in s)


def _reduced(shape, axes, keepdims) -> tuple:
    axes = set(range(len(shape))) if axes is None else {a % max(len(shape), 1) for a in (
        axes if isinstance(axes, (tuple, list)) else (axes,))}
    return tuple(1 if i in axes else n for i, n in enumerate(shape)
                 if keepdims or i not in axes)


def _sliced(shape, key) -> tuple:
    out = []
    for i, k in enumerate(key):
        if isinstance(k, slice):
            out.append(len(range(*k.indices(shape[i]))))
    return tuple(out) + tuple(shape[len(key):])


def _reshaped(shape, new) -> tuple | None:
    new = tuple(new)
    if -1 in new:   # the kernel may receive an unresolved -1
        known = math.prod(n for n in new if n != -1)
        return None if known == 0 else tuple(math.prod(shape) // known if n == -1 else n
                                              for n in new)
    return new


def _cumulative(buf, axis, include_initial, out_dtype):
    shape = list(buf.shape)
    if shape and include_initial:
        shape[axis] += 1
    return tuple(shape), out_dtype


# kernel -> f(*args) -> (expected shape or None, expected dtype or None)
_EXPECT = {
    "from_host": lambda h, dtype: (tuple(np.shape(h)), dtype),
    "conv2d": lambda x, w, b, stride, dilation, pads, groups, out: (
        (x.shape[0], w.shape[0], *out), x.dtype),
    "cross_entropy": lambda x, t, mean, ignore_index: ((), x.dtype),
    "linear": lambda x, w, b: ((x.shape[0], w.shape[0]), x.dtype),
    "cross_entropy_backward": lambda x, t, g, mean, ignore_index: (tuple(x.shape), x.dtype),
    "max_pool2d_backward": lambda g, idx, kernel, stride, dilation, pads, size: (
        (*g.shape[:2], *size), g.dtype),
    "empty": lambda shape, dtype: (tuple(shape), dtype),
    "full": lambda shape, value, dtype: (tuple(shape), dtype),
    "arange": lambda start, step, n, dtype: ((n,), dtype),
    "linspace": lambda start, stop, num, endpoint, dtype: ((num,), dtype),
    "eye": lambda rows, cols, k, dtype: ((rows, cols), dtype),
    "astype": lambda buf, dtype: (tuple(buf.shape), dtype),
    "copy": lambda buf: (tuple(buf.shape), buf.dtype),
    "reshape": lambda buf, shape, copy=None: (_reshaped(buf.shape, shape), buf.dtype),
    "permute": lambda buf, axes: (tuple(buf.shape[a] for a in axes), buf.dtype),
    "broadcast_to": lambda buf, shape: (tuple(shape), buf.dtype),
    "slice": lambda buf, key: (_sliced(buf.shape, key), buf.dtype),
    "sort": lambda buf, *a, **k: (tuple(buf.shape), buf.dtype),
    "argsort": lambda buf, *a, **k: (tuple(buf.shape), "int64"),
    "argmax": lambda buf, axis, keepdims: (_reduced(buf.shape, axis, keepdims), "int64"),
    "argmin": lambda buf, axis, keepdims: (_reduced(buf.shape, axis, keepdims), "int64"),
    "cumulative_sum": _cumulative,
    "cumulative_prod": _cumulative,
    "softmax": lambda buf, *a, **k: (tuple(buf.shape), buf.dtype),
    "log_softmax": lambda buf, *a, **k: (tuple(buf.shape), buf.dtype),
    **{op: (lambda buf, axes, keepdims, out_dtype: (_reduced(buf.shape, axes, keepdims),
                                                    out_dtype))
       for op in ("sum", "prod", "max", "min", "all", "any", "count_nonzero")},
    # (out_shape, out_dtype, *bufs)
    **{op: (lambda out_shape, out_dtype, *bufs: (tuple(out_shape), out_dtype))
       for op in (*ELEMENTWISE_OPS, "where", "matmul", "cross", "solve")},
    "leaky_integrate": lambda x, s0, alpha, reverse: (tuple(x.shape), x.dtype),
    "segment_sum": lambda v, starts, ends: ((starts.shape[0], v.shape[1]), v.dtype),
    "philox_blocks": lambda m, counter, key: ((4, m), "uint32"),
    "philox_uniform": lambda n, counter, key, dtype: ((n,), dtype.name),
    "philox_dropout": lambda n, counter, key, p, scale, dtype: ((n,), dtype.name),
}
# kernels returning a tuple: f(*args) -> [(shape, dtype) or None where None is returned]
_EXPECT_TUPLE = {
    "lif_forward": lambda x, m0, b, th, reset, delay, store, refractory=0, ref0=None: [
        (x.shape, x.dtype), (m0.shape, x.dtype),
        ((2, *x.shape) if refractory else x.shape, x.dtype) if store else None,
    ] + ([(m0.shape, x.dtype)] if refractory else []),
    "lif_backward": lambda gs, gm, x, m0, *a: [
        (x.shape, x.dtype), (m0.shape, x.dtype), (m0.shape, x.dtype), (m0.shape, x.dtype)],
    "alif_forward": lambda x, m0, *a: [
        (x.shape, x.dtype), (m0.shape, x.dtype), (m0.shape, x.dtype),
        ((2, *x.shape), x.dtype) if a[-1] else None],
    "alif_backward": lambda gs, gm, ga, x, m0, *a: [(x.shape, x.dtype)] + [(m0.shape, x.dtype)] * 4,
    "segment_max": lambda v, starts, ends, fill: [((starts.shape[0], v.shape[1]), v.dtype),
                                                  ((starts.shape[0], v.shape[1]),
                                                   np.dtype(np.int64))],
    "matmul_topk": lambda x, mat, add, k, largest: [((x.shape[0], k), x.dtype),
                                                    ((x.shape[0], k), np.dtype(np.int64))],
    "batch_norm": lambda x, w, b, eps: [(x.shape, x.dtype), (x.shape[1:2], x.dtype),
                                        (x.shape[1:2], x.dtype)],
    "batch_norm_backward": lambda g, x, m, inv, w, need: [
        (x.shape, x.dtype) if need[0] else None, (x.shape[1:2], x.dtype) if need[1] else None,
        (x.shape[1:2], x.dtype) if need[2] else None],
    "layer_norm": lambda x, w, b, eps: [(x.shape, x.dtype), (x.shape[:1], x.dtype),
                                        (x.shape[:1], x.dtype)],
    "layer_norm_backward": lambda g, x, m, r, w, need: [
        (x.shape, x.dtype) if need[0] else None, (x.shape[1:2], x.dtype) if need[1] else None,
        (x.shape[1:2], x.dtype) if need[2] else None],
    # grad_dtype (kernels declaring takes_grad_dtype): the w and bias gradients' dtype
    "linear_backward": lambda g, x, w, need, grad_dtype=None: [
        (x.shape, x.dtype) if need[0] else None,
        (w.shape, grad_dtype or x.dtype) if need[1] else None,
        ((w.shape[0],), grad_dtype or x.dtype) if need[2] else None],
    "conv2d_backward": lambda g, x, w, stride, dilation, pads, groups, need, grad_dtype=None: [
        (x.shape, x.dtype) if need[0] else None,
        (w.shape, grad_dtype or x.dtype) if need[1] else None,
        ((w.shape[0],), grad_dtype or x.dtype) if need[2] else None],
    # lse: float32 for float16 and bfloat16 operands (a kernel declaring takes_float16 or
    # takes_bfloat16)
    "attention": lambda q, k, v, bias, drop, causal, scale, block: [
        ((*q.shape[:3], v.shape[3]), q.dtype),
        (q.shape[:3], np.dtype(np.float32) if _dtype_name(q) in ("float16", "bfloat16")
         else q.dtype)],
    "attention_backward": lambda g, q, k, v, bias, drop, out, lse, causal, scale, block, need: [
        (q.shape, q.dtype) if need[0] else None, (k.shape, q.dtype) if need[1] else None,
        (v.shape, q.dtype) if need[2] else None],
    "max_pool2d": lambda x, kernel, stride, dilation, pads, out: [
        ((*x.shape[:2], *out), x.dtype), ((*x.shape[:2], *out), np.dtype(np.int32))],
}


def _check_tuple(where: str, results: tuple, want: list) -> None:
    if len(results) != len(want):
        raise KernelResultError(f"{where} returned {len(results)} results, expected {len(want)}")
    for k, (r, w) in enumerate(zip(results, want)):
        if w is None or r is None:
            if (w is None) != (r is None):
                raise KernelResultError(f"{where} result {k}: expected "
                                        f"{'None' if w is None else 'a buffer'}, got "
                                        f"{type(r).__name__}")
            continue
        if tuple(getattr(r, "shape", ())) != tuple(w[0]) or _dtype_name(r) != _dtype_name(w[1]):
            raise KernelResultError(f"{where} result {k} has shape {getattr(r, 'shape', None)} "
                                    f"dtype {_dtype_name(r)}, expected {tuple(w[0])} "
                                    f"{_dtype_name(w[1])}")



_RETURNS_NONE = frozenset({"assign", "scatter", "sgd_step", "adam_step", "rmsprop_step",
                           "adagrad_step", "amp_unscale", "optim_multi", "plasticity_step",
                           "batch_norm_update"})
_RETURNS_HOST = frozenset({"to_host", "host_view"})


def _check_buffer(r, where: str, buffer_type) -> None:
    if buffer_type is not None and not isinstance(r, buffer_type):
        names = getattr(buffer_type, "__name__", None) or "/".join(t.__name__ for t in buffer_type)
        raise KernelResultError(f"{where} returned a {type(r).__name__}, expected a buffer of "
                                f"type {names}")
    if not _is_shape(getattr(r, "shape", None)):
        raise KernelResultError(f"{where} returned a {type(r).__name__} without a valid shape "
                                f"tuple, expected a buffer")
    if _dtype_name(r) is None:
        raise KernelResultError(f"{where} returned a buffer without a dtype")


def check(backend, device, op: str, args: tuple, kwargs: dict, r) -> None:
    """Raise KernelResultError when ``r`` is not a result ``op`` may return for ``args``."""
    where = f"checked mode: backend {backend.name!r} kernel {op!r} on {device}"
    if op in _RETURNS_NONE:
        if r is not None:
            raise KernelResultError(f"{where} returned a {type(r).__name__}, expected None "
                                    "(it writes in place)")
        return
    if op in _RETURNS_HOST:
        if r is None and op == "host_view":
            return
        if not isinstance(r, np.ndarray):
            raise KernelResultError(f"{where} returned a {type(r).__name__}, expected a "
                                    "numpy.ndarray")
        src = args[0]
        if tuple(r.shape) != tuple(src.shape) or _dtype_name(r) != _dtype_name(src):
            raise KernelResultError(f"{where} returned shape {r.shape} dtype {r.dtype}, expected "
                                    f"{tuple(src.shape)} {_dtype_name(src)}")
        return
    buffer_type = getattr(backend, "buffer_type", None)
    results = r if isinstance(r, tuple) else (r,)
    if isinstance(r, list):
        raise KernelResultError(f"{where} returned a list, expected a buffer or a tuple of them")
    if op == "normalize_indices":   # (buf, the first bad index or None)
        results = results[:1]
    if op in _EXPECT_TUPLE:
        _check_tuple(where, results, _EXPECT_TUPLE[op](*args, **kwargs))
    for x in results:
        if x is None and op in ("repeat_indices", "lif_forward", "alif_forward",
                                "conv2d_backward", "linear_backward", "batch_norm_backward",
                                "layer_norm_backward", "attention_backward"):
            continue
        _check_buffer(x, where, buffer_type)
        owner = backend.buffer_device(x)
        if owner is not None and owner is not device:
            raise KernelResultError(f"{where} returned a buffer on {owner}, expected {device}")
    expect = _EXPECT.get(op)
    if expect is None or isinstance(r, tuple):
        return
    shape, dtype = expect(*args, **kwargs)
    if shape is not None and tuple(r.shape) != tuple(shape):
        raise KernelResultError(f"{where} returned shape {tuple(r.shape)}, expected {tuple(shape)}")
    want = _dtype_name(dtype) if not isinstance(dtype, str) else dtype
    if want is not None and _dtype_name(r) != want:
        raise KernelResultError(f"{where} returned dtype {_dtype_name(r)}, expected {want}")


def _describe(a) -> str:
    """One argument of a kernel call, short: a buffer as its dtype and shape."""
    if hasattr(a, "shape") and hasattr(a, "dtype"):
        return f"{_dtype_name(a) or a.dtype} buffer {tuple(a.shape)}"
    if isinstance(a, tuple) and a and all(hasattr(x, "shape") for x in a):
        return "(" + ", ".join(map(_describe, a)) + ")"
    r = repr(a)
    return r if len(r) <= 40 else r[:37] + "..."


def _signature_problem(fn, args, kwargs) -> str | None:
    """Why ``fn``'s signature cannot take this call (None when it can, or cannot tell)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        sig.bind(*args, **kwargs)
    except TypeError as e:
        return f"the kernel's signature {sig} does not take this call ({e})"
    return None


def note_failure(backend, device, op: str, fn, args, kwargs, e: BaseException) -> None:
    """Add a note to ``e`` (raised by the kernel ``fn``) naming the backend, the kernel, the
    call and the contract's call, so a traceback that ends in numpy still says whose kernel it
    was and what it was asked."""
    if not hasattr(e, "add_note") or getattr(e, "_grilly_noted", False):
        return
    from .contract import KERNELS

    call = ", ".join(_describe(a) for a in args)
    call += "".join(f", {k}={_describe(v)}" for k, v in kwargs.items())
    note = f"raised by backend {backend.name!r} kernel {op!r} on {device}, called as {op}({call})"
    k = KERNELS.get(op)
    if k is not None:
        note += f"; the contract's call: {op}{k.call}"
    if isinstance(e, TypeError):
        why = _signature_problem(fn, args, kwargs)
        if why:
            note += f"; {why}"
    e.add_note(note)
    try:
        e._grilly_noted = True
    except AttributeError:
        pass


def wrap(backend, device, op: str, fn):
    """``fn`` with its every result checked (``sole_owner`` as it is: it answers from reference
    counts, which a wrapper's own references would change); an exception it raises keeps its
    type and gets a note naming the backend, the kernel and the call."""
    if op == "sole_owner":
        return fn
    @functools.wraps(fn)
    def checked(*args, **kwargs):
        try:
            r = fn(*args, **kwargs)
        except Exception as e:
            note_failure(backend, device, op, fn, args, kwargs, e)
            raise
        check(backend, device, op, args, kwargs, r)
        return r

    checked.__grilly_checked__ = True
    return checked
