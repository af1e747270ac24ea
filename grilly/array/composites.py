"""Default compositions: one per kernel of the contract's ``composed`` tier, built from other
kernels on the same device (mostly the ``required`` primitives), or on the host for the
documented short list (``host.HOST_OPS``).

The array layer runs a composite only where the device's kernel table lacks the kernel
(``core.call`` and the elementwise/reduction dispatch), so a backend's own kernel overrides it.
A composite takes the device, then the kernel's arguments with Arrays in place of buffers, and
returns what the kernel returns with Arrays in place of buffers (docs/architecture.md, "The
backend contract"). Composites call the array layer's own functions, never the namespace's
autograd-recording ones. tests/test_contract.py checks that ``COMPOSITES`` names exactly the
contract's composed tier and that each result equals numpy's.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import (attention, conv, core, dense, dispatch, fused, host, host_kernels, indexing,
               manipulation, neighbors, normalization, optim_steps, plasticity, random_bits,
               searching, segments, spiking, statistical)
from . import dtypes as dt
from .array import Array
from .core import as_compute_array, wrap
from .elementwise import binary, unary


def _zero(d: dt.DType):
    """The zero of ``d`` as a Python scalar of the matching kind."""
    return {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}[d.kind]


def _full(device, shape, value, d: dt.DType) -> Array:
    return wrap(core.full_buf(device, tuple(shape), value, d), d, device)


def _copy(x: Array) -> Array:
    return wrap(core.kernel(x._device, "copy")(x._buf), x._dtype, x._device)


def _reshape(x: Array, shape) -> Array:
    return wrap(core.kernel(x._device, "reshape")(x._buf, tuple(shape)), x._dtype, x._device)


def _slice(x: Array, key: tuple) -> Array:
    return wrap(core.kernel(x._device, "slice")(x._buf, key), x._dtype, x._device)


def _along(x: Array, axis: int, i) -> Array:
    """``x[..., i, ...]`` (an int or a slice) along ``axis``, as a view."""
    return _slice(x, (slice(0, None, 1),) * axis + (i,))


def _assign(dst: Array, src: Array) -> None:
    core.kernel(dst._device, "assign")(dst._buf, src._buf)


def _empty(device, shape, d: dt.DType) -> Array:
    return wrap(core.kernel(device, "empty")(tuple(shape), d), d, device)


def _gather(x: Array, idx: Array) -> Array:
    """``x[idx]`` along the first axis, idx int64."""
    return wrap(core.kernel(x._device, "gather")(x._buf, (idx._buf,)), x._dtype, x._device)


def _iota(device, n: int) -> Array:
    return arange(device, 0, 1, n, dt.int64)


def _real_only(op: str, device, x: Array) -> None:
    if x._dtype.kind == "c":
        raise NotImplementedError(f"{op}: not available for {x._dtype.name} on device {device}; "
                                  f"backend {device.backend.name!r} provides no {op!r} kernel "
                                  "(the composition covers real dtypes only)")


# ---- creation: the numbers are made on the host from the Python arguments, then uploaded ------
def _upload(device, h: np.ndarray, d: dt.DType) -> Array:
    return wrap(core.kernel(device, "from_host")(h, d), d, device)


def arange(device, start, step, n: int, d: dt.DType) -> Array:
    """start + i * step for i < n (float dtypes computed in float64, then rounded once)."""
    h = start + step * np.arange(n, dtype=np.float64 if d.kind == "f" else None)
    return _upload(device, np.asarray(h).astype(d.np), d)


def linspace(device, start, stop, num: int, endpoint: bool, d: dt.DType) -> Array:
    """NumPy's linspace, rounded once to ``d``."""
    return _upload(device, np.linspace(start, stop, num, endpoint=endpoint).astype(d.np), d)


def eye(device, n_rows: int, n_cols: int, k: int, d: dt.DType) -> Array:
    """Ones on the k-th diagonal of an (n_rows, n_cols) matrix."""
    return _upload(device, np.eye(n_rows, n_cols, k, dtype=d.np), d)


# ---- elementwise: (out_shape, out_dtype, *arrays of the compute dtype) -------------------------
def negative(device, shape, d, x: Array) -> Array:
    """-x: floats as -0.0 - x (exact: keeps -0.0, inf and NaN), integers as 0 - x (wraps)."""
    k = x._dtype.kind
    zero = complex(-0.0, -0.0) if k == "c" else -0.0 if k == "f" else 0
    return binary("subtract", zero, x)


def positive(device, shape, d, x: Array) -> Array:
    """+x: a copy."""
    return _copy(x)


def conj(device, shape, d, x: Array) -> Array:
    """The conjugate of a real array is a copy of it (complex needs the kernel)."""
    _real_only("conj", device, x)
    return _copy(x)


def real(device, shape, d, x: Array) -> Array:
    """The real part of a real array is a copy of it (complex needs the kernel)."""
    _real_only("real", device, x)
    return _copy(x)


def imag(device, shape, d, x: Array) -> Array:
    """The imaginary part of a real array is zeros (complex needs the kernel)."""
    _real_only("imag", device, x)
    return _full(device, x.shape, _zero(x._dtype), x._dtype)


def square(device, shape, d, x: Array) -> Array:
    """x * x."""
    return binary("multiply", x, x)


def greater(device, shape, d, a: Array, b: Array) -> Array:
    """b < a."""
    return binary("less", b, a)


def greater_equal(device, shape, d, a: Array, b: Array) -> Array:
    """b <= a."""
    return binary("less_equal", b, a)


def less_equal(device, shape, d, a: Array, b: Array) -> Array:
    """a < b or a == b (False where either is NaN)."""
    return binary("logical_or", binary("less", a, b), binary("equal", a, b))


def not_equal(device, shape, d, a: Array, b: Array) -> Array:
    """not (a == b) (True where either is NaN)."""
    return unary("logical_not", binary("equal", a, b))


def logical_xor(device, shape, d, a: Array, b: Array) -> Array:
    """a != b on bools."""
    return binary("not_equal", a, b)


def isnan(device, shape, d, x: Array) -> Array:
    """x != x for floats (either part, for complex); False for integers and bool."""
    if x._dtype.kind in "fc":
        return binary("not_equal", x, x)
    return _full(device, x.shape, False, dt.bool)


def isfinite(device, shape, d, x: Array) -> Array:
    """x * 0 == 0: NaN exactly where x (either part) is infinite or NaN; True for integers."""
    k = x._dtype.kind
    if k in "fc":
        z = _zero(x._dtype)
        return binary("equal", binary("multiply", x, z), z)
    return _full(device, x.shape, True, dt.bool)


def isinf(device, shape, d, x: Array) -> Array:
    """x == inf or x == -inf (either part, for complex: needs real/imag); False for integers."""
    k = x._dtype.kind
    if k == "f":
        return binary("logical_or", binary("equal", x, math.inf), binary("equal", x, -math.inf))
    if k == "c":
        if device.kernels.get("real") is None or device.kernels.get("imag") is None:
            _real_only("isinf", device, x)
        return binary("logical_or", unary("isinf", unary("real", x)),
                      unary("isinf", unary("imag", x)))
    return _full(device, x.shape, False, dt.bool)


# ---- reductions: (x, axes, keepdims, out_dtype) ---------------------------------------------
def count_nonzero(device, x: Array, axes, keepdims: bool, out_dtype) -> Array:
    """sum(x != 0) as int64."""
    nz = x if x._dtype is dt.bool else binary("not_equal", x, _zero(x._dtype))
    ones = as_compute_array(nz, dt.int64, device, "count_nonzero")
    return statistical._reduce("sum", ones, axes, keepdims, out_dtype)


def any_(device, x: Array, axes, keepdims: bool, out_dtype) -> Array:
    """count_nonzero(x) > 0."""
    return binary("less", 0, count_nonzero(device, x, axes, keepdims, dt.int64))


def all_(device, x: Array, axes, keepdims: bool, out_dtype) -> Array:
    """count_nonzero(x) == the number of elements reduced (True when there are none)."""
    n = math.prod(x.shape[a] for a in axes)
    return binary("equal", count_nonzero(device, x, axes, keepdims, dt.int64), n)


def _arg(device, x: Array, axis, keepdims: bool, op: str) -> Array:
    """The first index of the max (min) along ``axis`` (flattened when None); NaN wins."""
    if x._dtype is dt.bool:
        x = as_compute_array(x, dt.uint8, device, op)
    nd = x.ndim
    if axis is None:
        x, ax = _reshape(x, (x.size,)), 0
    else:
        ax = axis
    n = x.shape[ax]
    m = (statistical.max if op == "argmax" else statistical.min)(x, axis=ax, keepdims=True)
    hit = binary("equal", x, m)
    if x._dtype.kind == "f":   # a NaN is the max and the min, and m is NaN then
        hit = binary("logical_or", hit, unary("isnan", x))
    idx = _reshape(_iota(device, n), tuple(n if i == ax else 1 for i in range(x.ndim)))
    first = statistical.min(searching.where(hit, idx, n), axis=ax, keepdims=keepdims)
    if axis is None and keepdims:
        first = _reshape(first, (1,) * nd)
    return first


def argmax(device, x: Array, axis, keepdims: bool) -> Array:
    """First index of the largest element (NaN counts as largest)."""
    return _arg(device, x, axis, keepdims, "argmax")


def argmin(device, x: Array, axis, keepdims: bool) -> Array:
    """First index of the smallest element (NaN counts as smallest)."""
    return _arg(device, x, axis, keepdims, "argmin")


def cumulative_prod(device, x: Array, axis: int, include_initial: bool, out_dtype) -> Array:
    """Running product along ``axis`` in NumPy's order (one multiply per step: O(n) kernel
    calls, exact where a tree-shaped scan would round differently)."""
    x = as_compute_array(x, out_dtype, device, "cumulative_prod")
    n = x.shape[axis]
    shape = list(x.shape)
    shape[axis] = n + int(include_initial)
    out = _empty(device, shape, out_dtype)
    at = 0
    if include_initial:
        _assign(_along(out, axis, 0), _full(device, (), 1, out_dtype))
        at = 1
    acc = None
    for i in range(n):
        xi = _along(x, axis, i)
        acc = xi if acc is None else binary("multiply", acc, xi)
        _assign(_along(out, axis, at + i), acc)
    return out


# ---- indexing ------------------------------------------------------------------------------
def normalize_indices(device, idx: Array, n: int):
    """(int64 idx with negatives wrapped by n, the first out-of-range value or None)."""
    i = as_compute_array(idx, dt.int64, device, "normalize_indices")
    w = searching.where(binary("less", i, 0), binary("add", i, n), i)
    bad = binary("logical_or", binary("less", w, 0), unary("logical_not", binary("less", w, n)))
    # the flag is read by a host op: grilly.jit replays the read (the graph splits there, so
    # nothing after a bad index runs on the device) instead of refusing the trace
    return w, dispatch.host_op(index_check, any_(device, bad, tuple(range(bad.ndim)), False,
                                                 dt.bool), w, n)


def index_check(flag: Array, w: Array, n: int):
    """The first out-of-range index of ``w`` (normalize_indices' wrapped indices, row-major) as
    the caller gave it, or None when ``flag`` (any out of range) is False."""
    if not bool(flag):
        return None
    bad = w.__array__().reshape(-1)
    first = int(bad[(bad < 0) | (bad >= n)][0])
    return first - n if first < 0 else first   # w = i + n moved a negative i below zero


def repeat_indices(device, counts: Array):
    """i repeated counts[i] times for each i (int64), or None when a count is negative: the
    index of output j is the number of running totals <= j."""
    c = as_compute_array(counts, dt.int64, device, "repeat_indices")
    if bool(any_(device, binary("less", c, 0), (0,), False, dt.bool)):
        return None
    ends = statistical.cumulative_sum(c, axis=0)
    total = int(_slice(ends, (c.size - 1,))) if c.size else 0
    return searching.searchsorted(ends, _iota(device, total), side="right")


def nonzero(device, x: Array) -> tuple:
    """The coordinates of the nonzero elements: mask_indices of x cast to bool (NaN is nonzero)."""
    mask = as_compute_array(x, dt.bool, device, "nonzero")
    return tuple(wrap(b, dt.int64, device) for b in core.kernel(device, "mask_indices")(mask._buf))


def diagonal(device, x: Array, offset: int) -> Array:
    """The offset diagonal of the last two axes: a strided slice of the matrices flattened (a
    view where the reshape is one)."""
    r, c = x.shape[-2:]
    sr, sc = max(-offset, 0), max(offset, 0)
    k = max(0, min(r - sr, c - sc))
    flat = _reshape(x, x.shape[:-2] + (r * c,))
    start = sr * c + sc
    key = slice(start, start + (k - 1) * (c + 1) + 1, c + 1) if k else slice(0, 0, 1)
    return _slice(flat, (slice(0, None, 1),) * (x.ndim - 2) + (key,))


# ---- sorting and sets ----------------------------------------------------------------------
def _order(device, flat: Array) -> Array:
    """A stable sorting order of 1-D ``flat`` (complex: by real part, then imaginary part)."""
    if flat._dtype.kind != "c":
        return wrap(core.kernel(device, "argsort")(flat._buf, 0, False, True), dt.int64, device)
    o1 = _order(device, unary("imag", flat))
    o2 = _order(device, _gather(unary("real", flat), o1))
    return _gather(o1, o2)


def unique(device, x: Array) -> tuple:
    """(sorted values, first indices, flat inverse indices, counts); every NaN is distinct."""
    n = x.size
    flat = _reshape(x, (n,))
    if n == 0:
        return (_copy(flat), *(_empty(device, (0,), dt.int64) for _ in range(3)))
    order = _order(device, flat)
    s = _gather(flat, order)
    new = _empty(device, (n,), dt.bool)
    _assign(_slice(new, (slice(0, 1, 1),)), _full(device, (), True, dt.bool))
    if n > 1:
        _assign(_slice(new, (slice(1, n, 1),)),
                binary("not_equal", _slice(s, (slice(1, n, 1),)), _slice(s, (slice(0, n - 1, 1),))))
    (starts,) = nonzero(device, new)
    m = starts.shape[0]
    group = binary("subtract", statistical.cumulative_sum(new, axis=0), 1)
    inverse = _empty(device, (n,), dt.int64)
    core.kernel(device, "scatter")(inverse._buf, (order._buf,), group._buf)
    rest = _slice(starts, (slice(1, m, 1) if m > 1 else slice(0, 0, 1),))
    ends = manipulation.concat([rest, _full(device, (1,), n, dt.int64)])
    return _gather(s, starts), _gather(order, starts), inverse, binary("subtract", ends, starts)


def isin(device, a: Array, b: Array, invert: bool) -> Array:
    """Whether each element of a equals some element of b (binary search in sorted b)."""
    m = b.size
    if m == 0 or a.size == 0:
        return _full(device, a.shape, bool(invert), dt.bool)
    flat = _reshape(b, (m,))
    if a._dtype.kind == "c" and _orders_complex(device):
        hit = _isin_by_unique(device, a, flat)
    elif a._dtype.kind == "c":   # no order to search in: compare with every element of b
        eq = binary("equal", _reshape(a, a.shape + (1,)), flat)
        hit = any_(device, eq, (a.ndim,), False, dt.bool)
    else:
        if a._dtype is dt.bool:
            a, flat = (as_compute_array(v, dt.uint8, device, "isin") for v in (a, flat))
        sb = wrap(core.kernel(device, "sort")(flat._buf, 0, False, True), flat._dtype, device)
        i = binary("minimum", searching.searchsorted(sb, a), m - 1)
        hit = binary("equal", _reshape(_gather(sb, _reshape(i, (i.size,))), a.shape), a)
    return unary("logical_not", hit) if invert else hit


def _orders_complex(device) -> bool:
    """Whether ``unique`` of a complex array runs on ``device`` (a kernel, or real and imag)."""
    k = device.kernels
    return k.get("unique") is not None or (k.get("real") is not None and k.get("imag") is not None)


def _isin_by_unique(device, a: Array, flat_b: Array) -> Array:
    """isin through unique of b ++ a: an element of a is in b when the first index of its group
    (the smallest: the sort is stable) points into b."""
    m, n = flat_b.size, a.size
    both = manipulation.concat([flat_b, _reshape(a, (n,))])
    _, first, inverse, _ = (wrap(r, dt.int64, device) for r in core.call(device, "unique", both))
    g = _gather(first, _slice(inverse, (slice(m, m + n, 1),)))
    return _reshape(binary("less", g, m), a.shape)


def topk(device, x: Array, k: int, axis: int, largest: bool, sorted_: bool) -> tuple:
    """The first k of a stable argsort (descending when ``largest``) and the elements they name:
    ties keep their original order, NaN counts as the largest value."""
    key = (slice(0, None, 1),) * axis + (slice(0, k, 1),)
    i = wrap(core.kernel(device, "argsort")(x._buf, axis, largest, True), dt.int64, device)
    i = _copy(_slice(i, key))
    # gathered, not sorted separately: a second sort may order 0.0 and -0.0 differently
    return indexing.take_along_axis(x, i, axis=axis), i


# ---- linalg, fft, nn -----------------------------------------------------------------------
def cross(device, shape, d, a: Array, b: Array) -> Array:
    """3-vector cross product along the last axis (a and b broadcast to ``shape``)."""
    bt = core.kernel(device, "broadcast_to")
    a, b = (wrap(bt(v._buf, tuple(shape)), d, device) for v in (a, b))
    out = _empty(device, shape, d)
    last = len(shape) - 1
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        t = binary("subtract", binary("multiply", _along(a, last, j), _along(b, last, k)),
                   binary("multiply", _along(a, last, k), _along(b, last, j)))
        _assign(_along(out, last, i), t)
    return out


def fft_roll(device, x: Array, shifts: tuple, axes: tuple) -> Array:
    """A copy of x rolled by ``shifts`` along ``axes`` (grilly.roll)."""
    return manipulation.roll(x, shifts, axis=axes) if axes else _copy(x)


def softmax(device, x: Array, axis: int) -> Array:
    """exp(x - max) / sum(exp(x - max)) along ``axis``."""
    return fused._composed(x, axis, False)


def log_softmax(device, x: Array, axis: int) -> Array:
    """(x - max) - log(sum(exp(x - max))) along ``axis``."""
    return fused._composed(x, axis, True)


def linear(device, x: Array, w: Array, bias) -> Array:
    """matmul and add (grilly.array.dense)."""
    return dense.composed_linear(x, w, bias)


def linear_backward(device, g: Array, x: Array, w: Array, need: tuple) -> tuple:
    """Two matmuls and a sum (grilly.array.dense)."""
    return dense.composed_linear_backward(g, x, w, need)


def batch_norm(device, x: Array, weight, bias, eps: float) -> tuple:
    """Means and elementwise ops (grilly.array.normalization)."""
    return normalization.composed_batch_norm(x, weight, bias, eps)


def batch_norm_backward(device, g: Array, x: Array, mean: Array, invstd: Array, weight,
                        need: tuple) -> tuple:
    """Two channel sums and elementwise ops (grilly.array.normalization)."""
    return normalization.composed_batch_norm_backward(g, x, mean, invstd, weight, need)


def batch_norm_update(device, running_mean: Array, running_var: Array, mean: Array,
                      invstd: Array, momentum: float, eps: float, n: int) -> None:
    """Elementwise ops assigned back (grilly.array.normalization)."""
    normalization.composed_batch_norm_update(running_mean, running_var, mean, invstd, momentum,
                                             eps, n)


def layer_norm(device, x: Array, weight, bias, eps: float) -> tuple:
    """Row means and elementwise ops (grilly.array.normalization)."""
    return normalization.composed_layer_norm(x, weight, bias, eps)


def layer_norm_backward(device, g: Array, x: Array, mean: Array, rstd: Array, weight,
                        need: tuple) -> tuple:
    """Row means, two column sums and elementwise ops (grilly.array.normalization)."""
    return normalization.composed_layer_norm_backward(g, x, mean, rstd, weight, need)


def cross_entropy(device, x: Array, target: Array, mean: bool, ignore_index=None) -> Array:
    """log_softmax, where and sums (grilly.array.fused)."""
    return fused.composed_cross_entropy(x, target, mean, ignore_index)


def attention_(device, q: Array, k: Array, v: Array, bias, drop, causal: bool, scale: float,
               block: int) -> tuple:
    """FlashAttention-2 over key blocks (grilly.array.attention)."""
    return attention.composed_attention(q, k, v, bias, drop, causal, scale, block)


def attention_backward(device, g: Array, q: Array, k: Array, v: Array, bias, drop, out: Array,
                       lse: Array, causal: bool, scale: float, block: int, need: tuple) -> tuple:
    """Recomputed probabilities per key block (grilly.array.attention)."""
    return attention.composed_attention_backward(g, q, k, v, bias, drop, out, lse, causal,
                                                 scale, block, need)


def relu_backward(device, g: Array, y: Array) -> Array:
    """A comparison and where (grilly.array.fused)."""
    return fused.composed_relu_backward(g, y)


def cross_entropy_backward(device, x: Array, target: Array, g: Array, mean: bool,
                           ignore_index=None) -> Array:
    """softmax and elementwise ops (grilly.array.fused)."""
    return fused.composed_cross_entropy_backward(x, target, g, mean, ignore_index)


def im2col(device, x: Array, *args) -> Array:
    """Kernel windows from strided slices (grilly.array.conv)."""
    return conv.im2col(x, *args)   # composes where the device has no im2col kernel


def col2im(device, g: Array, *args) -> Array:
    """The adjoint of im2col from slices and sums (grilly.array.conv)."""
    return conv.col2im(g, *args)


def conv2d(device, x: Array, w: Array, bias, *args) -> Array:
    """im2col and one batched matmul (grilly.array.conv)."""
    return conv.composed_conv2d(x, w, bias, *args)


def conv2d_backward(device, g: Array, x: Array, w: Array, *args) -> tuple:
    """A sum, a batched matmul over recomputed windows, a matmul and col2im (grilly.array.conv)."""
    return conv.composed_conv2d_backward(g, x, w, *args)


def max_pool2d(device, x: Array, *args) -> tuple:
    """im2col, argmax and take_along_axis (grilly.array.conv)."""
    return conv.composed_max_pool2d(x, *args)


def max_pool2d_backward(device, g: Array, idx: Array, *args) -> Array:
    """A one-hot of the window indices, where and col2im (grilly.array.conv)."""
    return conv.composed_max_pool2d_backward(g, idx, *args)


def amp_unscale(device, g: Array, found: Array, inv_scale: float) -> None:
    """isfinite, an any-reduction into the flag, and a multiply assigned back (a bfloat16
    gradient through a float32 copy, ``_in_float32``, as every other bfloat16 op computes)."""
    if g._dtype is dt.bfloat16:
        _in_float32(device, "amp_unscale", [(g, found, inv_scale)])
        return
    bad = unary("logical_not", unary("isfinite", g))
    bad = statistical.max(wrap(core.astype_buf(bad, dt.uint32), dt.uint32, device))
    _assign(found, binary("maximum", found, bad))
    _assign(g, binary("multiply", g, inv_scale))


def optim_multi(device, op: str, calls: list) -> None:
    """Each update through the rule's own kernel or its composition, in order; those of
    bfloat16 arrays together in float32 (``_in_float32``)."""
    n = optim_steps.ARRAYS[op]
    wide = []
    for args in calls:
        if args[0]._dtype is dt.bfloat16:
            wide.append(args)
        else:
            optim_steps._now(op, device, args[:n], args[n:])
    if wide:
        _in_float32(device, op, wide)


# ---- optimizer updates: the unfused rules, in torch.optim's order (grilly/array/optim_steps.py)
def _in_float32(device, op: str, calls: list) -> None:
    """The updates ``calls`` (each the rule's arrays then its scalars) of bfloat16 arrays,
    computed in float32 and rounded once, as every other bfloat16 op is (and as torch.optim
    computes them, in float32 with the state kept in the parameter's dtype): the bfloat16
    arrays widened, the float32 updates together (the device's optim_multi kernel where it has
    one, else each through the rule's float32 kernel or composition), and the arrays the rule
    writes (the parameter and the state; amp_unscale: the gradient) rounded back."""
    n = optim_steps.ARRAYS[op]
    written = (0,) if op == "amp_unscale" else tuple(i for i in range(n) if i != 1)
    rows, back = [], []
    for args in calls:
        arrays = tuple(a if a is None or a._dtype is not dt.bfloat16
                       else as_compute_array(a, dt.float32, device, op) for a in args[:n])
        rows.append(arrays + tuple(args[n:]))
        back.extend((args[i], arrays[i]) for i in written
                    if args[i] is not None and args[i] is not arrays[i])
    k = device.kernels.get("optim_multi")
    if k is not None:
        k(op, [optim_steps._bufs(r[:n]) + r[n:] for r in rows])
    else:
        for r in rows:
            optim_steps._now(op, device, r[:n], r[n:])
    for a, w in back:
        _assign(a, as_compute_array(w, dt.bfloat16, device, op))


def _bfloat16_in_float32(fn):
    """The composition ``fn`` of an update rule, taking bfloat16 arrays through
    ``_in_float32`` (the rule's float32 kernel, one rounding)."""
    op = fn.__name__

    @functools.wraps(fn)
    def f(device, *args) -> None:
        if args[0]._dtype is dt.bfloat16:
            _in_float32(device, op, [args])
        else:
            fn(device, *args)
    return f


def _neg(x: Array) -> Array:
    return binary("subtract", -0.0, x)


def _axpy(a, x: Array, y: Array) -> Array:
    """a * x + y."""
    return binary("add", binary("multiply", a, x), y)


@_bfloat16_in_float32
def sgd_step(device, p: Array, g: Array, buf, lr, momentum, dampening, weight_decay,
             nesterov, maximize, first) -> None:
    """SGD with momentum/dampening/Nesterov and L2 decay: several elementwise passes."""
    d = _neg(g) if maximize else g
    if weight_decay:
        d = _axpy(weight_decay, p, d)
    if buf is not None:
        if first:
            _assign(buf, d)
        else:
            _assign(buf, _axpy(1.0 - dampening, d, binary("multiply", buf, momentum)))
        d = _axpy(momentum, buf, d) if nesterov else buf
    _assign(p, binary("subtract", p, binary("multiply", lr, d)))


@_bfloat16_in_float32
def adam_step(device, p: Array, g: Array, m: Array, v: Array, vmax, lr, beta1, beta2, eps,
              weight_decay, decoupled, maximize, step_size, bc2_sqrt) -> None:
    """Adam/AdamW (L2 or decoupled decay, amsgrad when ``vmax`` is given)."""
    if maximize:
        g = _neg(g)
    if weight_decay:
        if decoupled:
            _assign(p, binary("multiply", p, 1.0 - lr * weight_decay))
        else:
            g = _axpy(weight_decay, p, g)
    _assign(m, _axpy(1.0 - beta1, binary("subtract", g, m), m))
    _assign(v, _axpy(1.0 - beta2, binary("multiply", g, g), binary("multiply", v, beta2)))
    if vmax is not None:
        _assign(vmax, binary("maximum", vmax, v))
        v = vmax
    denom = binary("add", binary("divide", unary("sqrt", v), bc2_sqrt), eps)
    _assign(p, binary("subtract", p, binary("multiply", step_size, binary("divide", m, denom))))


@_bfloat16_in_float32
def rmsprop_step(device, p: Array, g: Array, square_avg: Array, grad_avg, buf, lr, alpha, eps,
                 weight_decay, momentum, maximize) -> None:
    """RMSprop, centered when ``grad_avg`` is given, with momentum when ``buf`` is."""
    if maximize:
        g = _neg(g)
    if weight_decay:
        g = _axpy(weight_decay, p, g)
    sq = square_avg
    _assign(sq, _axpy(1.0 - alpha, binary("multiply", g, g), binary("multiply", sq, alpha)))
    if grad_avg is not None:
        _assign(grad_avg, _axpy(1.0 - alpha, binary("subtract", g, grad_avg), grad_avg))
        var = binary("subtract", sq, binary("multiply", grad_avg, grad_avg))
        avg = binary("add", unary("sqrt", var), eps)
    else:
        avg = binary("add", unary("sqrt", sq), eps)
    if buf is not None:
        _assign(buf, binary("add", binary("multiply", buf, momentum), binary("divide", g, avg)))
        _assign(p, binary("subtract", p, binary("multiply", lr, buf)))
    else:
        _assign(p, binary("subtract", p, binary("multiply", lr, binary("divide", g, avg))))


@_bfloat16_in_float32
def adagrad_step(device, p: Array, g: Array, state_sum: Array, clr, eps, weight_decay,
                 maximize) -> None:
    """Adagrad with L2 decay (``clr``: the decayed learning rate of this step)."""
    if maximize:
        g = _neg(g)
    if weight_decay:
        g = _axpy(weight_decay, p, g)
    _assign(state_sum, binary("add", state_sum, binary("multiply", g, g)))
    std = binary("add", unary("sqrt", state_sum), eps)
    _assign(p, binary("subtract", p, binary("multiply", clr, binary("divide", g, std))))
def lif_forward(device, x: Array, mem0: Array, beta: Array, thr: Array, reset: str,
                delay: bool, store: bool, refractory: int = 0, ref0=None) -> tuple:
    """All T steps of LIF, one step at a time (grilly.array.spiking); with ``refractory``
    steps from counter ``ref0``, the final counter too."""
    ext = ("refractory", refractory, ref0) if refractory else None
    res = spiking.composed_forward(x, mem0, beta, thr, reset, delay, store, ext)
    return res if ext else res[:3]


def lif_backward(device, gs: Array, gm: Array, x: Array, mem0: Array, beta: Array, thr: Array,
                 trace, reset: str, delay: bool, surrogate: str, slope: float,
                 detach: bool = True, refractory: int = 0, ref0=None) -> tuple:
    """BPTT of lif_forward, one step at a time in reverse (grilly.array.spiking)."""
    ext = ("refractory", refractory, ref0) if refractory else None
    return spiking.composed_backward(gs, gm, x, mem0, beta, thr, trace, reset, delay, surrogate,
                                     slope, detach, ext)[:4]


def alif_forward(device, x: Array, mem0: Array, a0: Array, beta: Array, rho: Array,
                 gamma: Array, thr: Array, reset: str, delay: bool, store: bool) -> tuple:
    """All T steps of the adaptive-threshold LIF, one step at a time (grilly.array.spiking)."""
    spk, mem, tr, a = spiking.composed_forward(x, mem0, beta, thr, reset, delay, store,
                                               ("adaptive", a0, rho, gamma))
    return spk, mem, a, tr


def alif_backward(device, gs: Array, gm: Array, ga: Array, x: Array, mem0: Array, a0: Array,
                  beta: Array, rho: Array, gamma: Array, thr: Array, trace, reset: str,
                  delay: bool, surrogate: str, slope: float, detach: bool) -> tuple:
    """BPTT of alif_forward, one step at a time in reverse: (g_x, g_mem0, g_a0, g_beta,
    g_thr)."""
    gx, gm0, gb, gt, ga0 = spiking.composed_backward(
        gs, gm, x, mem0, beta, thr, trace, reset, delay, surrogate, slope, detach,
        ("adaptive", a0, rho, gamma), ga)
    return gx, gm0, ga0, gb, gt


def leaky_integrate(device, x: Array, s0: Array, alpha: Array, reverse: bool) -> Array:
    """out[t] = alpha out[t-1] + x[t] from out[-1] = s0 (reverse: out[t] = alpha out[t+1] +
    x[t] from out[T] = s0), one step at a time (grilly.array.spiking)."""
    return spiking.composed_leaky(x, s0, alpha, reverse)


def plasticity_step(device, w: Array, pre: Array, post: Array, ptr, qtr, pout, qout, rule: str,
                    params: tuple) -> None:
    """STDP/Hebbian/Oja from matmul and elementwise ops (grilly.array.plasticity)."""
    plasticity.composed(w, pre, post, ptr, qtr, pout, qout, rule, params)


def matmul_topk(device, x: Array, mat: Array, add, k: int, largest: bool) -> tuple:
    """The k best of each row of x @ mat.T + add, in blocks (grilly.array.neighbors)."""
    return neighbors.composed_matmul_topk(x, mat, add, k, largest)


def segment_sum(device, values: Array, starts: Array, ends: Array) -> Array:
    """Run sums as one-hot matmuls in bounded blocks (grilly.array.segments)."""
    return segments.composed_segment_sum(values, starts, ends)


def segment_max(device, values: Array, starts: Array, ends: Array, fill: float) -> tuple:
    """Run maxima and their first rows from masked blocks (grilly.array.segments)."""
    return segments.composed_segment_max(values, starts, ends, fill)


def philox_blocks(device, m: int, counter: int, key: int) -> Array:
    """Philox4x32-10 words from namespace integer ops (grilly.array.random_bits)."""
    return random_bits.composed_blocks(device, m, counter, key)


def philox_uniform(device, n: int, counter: int, key: int, d: dt.DType) -> Array:
    """Uniform floats from philox_blocks' words and namespace shifts, casts and multiplies
    (grilly.array.random_bits)."""
    return random_bits.composed_uniform(device, n, counter, key, d)


def philox_dropout(device, n: int, counter: int, key: int, p: float, scale: float,
                   d: dt.DType) -> Array:
    """A dropout multiplier from philox_uniform, a comparison and a where
    (grilly.array.random_bits)."""
    return random_bits.composed_dropout(device, n, counter, key, p, scale, d)


def host_view(device, x: Array):
    """No zero-copy view of device memory: None (callers copy through to_host)."""
    return None


def scalar(device, value, d: dt.DType) -> Array:
    """A 0-d array of ``value`` (the full kernel)."""
    return _full(device, (), value, d)


def _host_path(op: str):
    fn = host_kernels.FUNCTIONS[op]

    def f(device, *args):
        return host.host_call(op, fn, device, *args)
    f.__name__ = f.__qualname__ = op
    f.__doc__ = f"{op} on the host (grilly.array.host_kernels), one counted round trip."
    return f


COMPOSITES = {
    "host_view": host_view, "scalar": scalar,
    "arange": arange, "linspace": linspace, "eye": eye,
    "negative": negative, "positive": positive, "conj": conj, "real": real, "imag": imag,
    "square": square, "greater": greater, "greater_equal": greater_equal,
    "less_equal": less_equal, "not_equal": not_equal, "logical_xor": logical_xor,
    "isnan": isnan, "isfinite": isfinite, "isinf": isinf,
    "count_nonzero": count_nonzero, "any": any_, "all": all_, "argmax": argmax, "argmin": argmin,
    "cumulative_prod": cumulative_prod,
    "normalize_indices": normalize_indices, "repeat_indices": repeat_indices,
    "nonzero": nonzero, "diagonal": diagonal, "unique": unique, "isin": isin, "topk": topk,
    "cross": cross, "fft_roll": fft_roll,
    "linear": linear, "linear_backward": linear_backward, "batch_norm": batch_norm,
    "batch_norm_backward": batch_norm_backward, "batch_norm_update": batch_norm_update,
    "layer_norm": layer_norm,
    "layer_norm_backward": layer_norm_backward,
    "softmax": softmax, "log_softmax": log_softmax, "cross_entropy": cross_entropy,
    "cross_entropy_backward": cross_entropy_backward, "relu_backward": relu_backward,
    "attention": attention_, "attention_backward": attention_backward,
    "im2col": im2col, "col2im": col2im,
    "conv2d": conv2d, "conv2d_backward": conv2d_backward, "max_pool2d": max_pool2d,
    "max_pool2d_backward": max_pool2d_backward,
    "sgd_step": sgd_step, "adam_step": adam_step, "rmsprop_step": rmsprop_step,
    "adagrad_step": adagrad_step, "amp_unscale": amp_unscale, "optim_multi": optim_multi,
    "lif_forward": lif_forward, "lif_backward": lif_backward, "alif_forward": alif_forward,
    "alif_backward": alif_backward, "leaky_integrate": leaky_integrate,
    "matmul_topk": matmul_topk, "segment_sum": segment_sum, "segment_max": segment_max,
    "philox_blocks": philox_blocks,
    "philox_uniform": philox_uniform, "philox_dropout": philox_dropout,
    "plasticity_step": plasticity_step,
    **{op: _host_path(op) for op in host.HOST_OPS},
}
core.COMPOSITES.update(COMPOSITES)
