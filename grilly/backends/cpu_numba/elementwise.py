"""Elementwise kernels: one generated Numba module per (op, dtype), holding serial and parallel
1-D loops over contiguous data, with scalar variants so that ``x + 1`` never broadcasts."""
from __future__ import annotations

import functools

import numpy as np

from . import jit, scalar_ops
from .pool import pool

# extra constant arguments of some scalar bodies: the dtype's bit width, a one of the dtype
_EXTRA = {"bitwise_left_shift": ", BITS, ONE", "bitwise_right_shift": ", BITS, ONE", "pow": ", ONE"}

_TEMPLATE = '''
import numpy as np
from numba import njit, prange
from grilly.backends.cpu_numba.scalar_ops import {fn} as _f

f = njit(_f)

BITS = {bits}
ONE = np.{dtype}(1)
_opts = dict(cache=True, error_model="numpy", nogil=True)

{loops}
'''

_UNARY_LOOPS = '''
@njit(**_opts)
def s_v(a, out):
    for i in range(out.shape[0]):
        out[i] = f(a[i]{x})

@njit(parallel=True, **_opts)
def p_v(a, out):
    for i in prange(out.shape[0]):
        out[i] = f(a[i]{x})
'''

_BINARY_LOOPS = '''
@njit(**_opts)
def s_vv(a, b, out):
    for i in range(out.shape[0]):
        out[i] = f(a[i], b[i]{x})

@njit(**_opts)
def s_vs(a, b, out):
    s = b[0]
    for i in range(out.shape[0]):
        out[i] = f(a[i], s{x})

@njit(**_opts)
def s_sv(a, b, out):
    s = a[0]
    for i in range(out.shape[0]):
        out[i] = f(s, b[i]{x})

@njit(parallel=True, **_opts)
def p_vv(a, b, out):
    for i in prange(out.shape[0]):
        out[i] = f(a[i], b[i]{x})

@njit(parallel=True, **_opts)
def p_vs(a, b, out):
    s = b[0]
    for i in prange(out.shape[0]):
        out[i] = f(a[i], s{x})

@njit(parallel=True, **_opts)
def p_sv(a, b, out):
    s = a[0]
    for i in prange(out.shape[0]):
        out[i] = f(s, b[i]{x})
'''

_TERNARY_LOOPS = '''
@njit(**_opts)
def s_vvv(c, a, b, out):
    for i in range(out.shape[0]):
        out[i] = f(c[i], a[i], b[i])

@njit(parallel=True, **_opts)
def p_vvv(c, a, b, out):
    for i in prange(out.shape[0]):
        out[i] = f(c[i], a[i], b[i])

@njit(**_opts)
def s_vvs(c, a, b, out):
    s = b[0]
    for i in range(out.shape[0]):
        out[i] = f(c[i], a[i], s)

@njit(parallel=True, **_opts)
def p_vvs(c, a, b, out):
    s = b[0]
    for i in prange(out.shape[0]):
        out[i] = f(c[i], a[i], s)

@njit(**_opts)
def s_vsv(c, a, b, out):
    s = a[0]
    for i in range(out.shape[0]):
        out[i] = f(c[i], s, b[i])

@njit(parallel=True, **_opts)
def p_vsv(c, a, b, out):
    s = a[0]
    for i in prange(out.shape[0]):
        out[i] = f(c[i], s, b[i])
'''

_LOOPS = {1: _UNARY_LOOPS, 2: _BINARY_LOOPS, 3: _TERNARY_LOOPS}


def _scalar_name(op: str, npdtype: np.dtype) -> str:
    """The most specific scalar body: per dtype (``exp__float32``), per kind, or generic."""
    for name in (f"{op}__{npdtype.name}", f"{op}__{npdtype.kind}"):
        if hasattr(scalar_ops, name):
            return name
    return op


_loaded: dict = {}
# op -> {input dtype: (s_vv, s_vs) loops}: the small calls' fast path (no float16, which
# computes through float32, so never has loops of its own)
_SMALL2: dict = {}


def loops(op: str, npdtype: np.dtype, arity: int):
    """The generated module of loops for ``op`` on inputs of ``npdtype``."""
    m = _loaded.get((op, npdtype))
    if m is None:
        m = _loaded[(op, npdtype)] = _generate(op, npdtype, arity)
        if arity == 2:   # the small-call path's loops (see _binary_kernel)
            _SMALL2.setdefault(op, {})[npdtype] = (m.s_vv, m.s_vs)
    return m


def _generate(op: str, npdtype: np.dtype, arity: int):
    name = f"ew_{op}_{npdtype.name}"
    x = _EXTRA.get(op, "")
    src = _TEMPLATE.format(fn=_scalar_name(op, npdtype), bits=npdtype.itemsize * 8,
                           dtype=npdtype.name, loops=_LOOPS[arity].format(x=x))
    return jit.module(name, src, deps=("scalar_ops.py",))


def _flat(a: np.ndarray, shape: tuple) -> np.ndarray:
    """``a`` broadcast to ``shape`` as a contiguous 1-D array (a view when it already is)."""
    if a.shape != shape:
        a = np.broadcast_to(a, shape)
    return np.ascontiguousarray(a).reshape(-1)


_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)


def _pick(m, lead: str, n: int, a, b, shape: tuple):
    """(loop, a, b): the module's serial or parallel loop (``s_``/``p_`` + ``lead`` + vv, vs
    or sv) for operands a and b of ``shape``, a one-element one read as a scalar."""
    if b.size == 1 and a.shape == shape:
        kind, a, b = "vs", _flat(a, shape), b.reshape(1)
    elif a.size == 1 and b.shape == shape:
        kind, a, b = "sv", a.reshape(1), _flat(b, shape)
    else:
        kind, a, b = "vv", _flat(a, shape), _flat(b, shape)
    return getattr(m, ("p_" if n >= jit.PARALLEL_MIN else "s_") + lead + kind), a, b


def _half(run, shape: tuple, od: np.dtype, *bufs):
    """float16 has no Numba arithmetic: compute in float32 (exact conversions) and round once
    to float16. float32 carries 2 * 11 + 2 bits, so + - * / sqrt stay correctly rounded."""
    res = run(shape, _F32 if od == _F16 else od, *(b.astype(_F32) for b in bufs))
    with np.errstate(over="ignore"):   # inf is the answer, as from the other dtypes' kernels
        return res.astype(_F16) if od == _F16 else res


def _unary(op: str, shape: tuple, od: np.dtype, a):
    if a.dtype == _F16:
        return _half(functools.partial(_unary, op), shape, od, a)
    out = pool.empty(shape, od)
    n = out.size
    if n == 0:
        return out
    m = loops(op, a.dtype, 1)
    (m.p_v if n >= jit.PARALLEL_MIN else m.s_v)(_flat(a, shape), out.reshape(-1))
    return out


def _binary(op: str, shape: tuple, od: np.dtype, a, b):
    if a.dtype == _F16:
        if op == "nextafter":   # a float16 step, which float32 cannot take: NumPy's C loop,
            # with x == y giving y as C99 and every other dtype (NumPy's float16 loop gives y
            # before 2.4 and x from it: nextafter(-0, +0) would depend on NumPy's version)
            a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
            return np.where(a == b, b, np.nextafter(a, b))
        return _half(functools.partial(_binary, op), shape, od, a, b)
    out = pool.empty(shape, od)
    n = out.size
    if n == 0:
        return out
    fn, a, b = _pick(loops(op, a.dtype, 2), "", n, a, b, shape)
    fn(a, b, out.reshape(-1))
    return out


def _unary_kernel(op: str):
    def k(shape, out_dtype, a):
        return _unary(op, tuple(shape), out_dtype.np, a)
    k.__name__ = op
    return k


def _binary_kernel(op: str):
    small, limit, empty = _SMALL2.setdefault(op, {}), jit.PARALLEL_MIN, np.empty

    def k(shape, out_dtype, a, b):
        # the common small call (tiny ops are all overhead): an array of the output's shape with
        # another one or with a single element, serial loops, no broadcast views (ravel copies
        # only an operand that is not contiguous, as the general path would)
        if a.shape == shape and a.size < limit:
            loops2 = small.get(a.dtype)
            if loops2 is not None:
                # 1-D operands go as they are (a strided one gets its own compiled loop),
                # without the ravel views
                one_d = len(shape) == 1
                if b.shape == shape:
                    out = empty(shape, out_dtype.np)
                    if one_d:
                        loops2[0](a, b, out)
                    else:
                        loops2[0](a.ravel(), b.ravel(), out.ravel())
                    return out
                if b.size == 1 and a.size:
                    out = empty(shape, out_dtype.np)
                    if one_d:
                        loops2[1](a, b.reshape(1), out)
                    else:
                        loops2[1](a.ravel(), b.reshape(1), out.ravel())
                    return out
        return _binary(op, tuple(shape), out_dtype.np, a, b)
    k.__name__ = op
    return k


def _where(shape: tuple, od: np.dtype, c, a, b):
    if a.dtype == _F16:   # a choice moves bits: the int16 loops do it exactly
        i16 = np.dtype(np.int16)
        return _where(shape, i16, c, a.view(i16), b.view(i16)).view(_F16)
    out = pool.empty(shape, od)
    n = out.size
    if n:
        # a one-element branch (``where(mask, g, 0.0)``) is read as a scalar rather than
        # broadcast into a full array
        fn, a, b = _pick(loops("where", a.dtype, 3), "v", n, a, b, shape)
        fn(_flat(c, shape), a, b, out.reshape(-1))
    return out


def where(shape, out_dtype, c, a, b):
    """Choose from ``a`` where ``c`` is true, else from ``b`` (broadcast to ``shape``)."""
    return _where(tuple(shape), out_dtype.np, c, a, b)


def kernels(unary_ops, binary_ops) -> dict:
    """The elementwise kernel table for the named ops."""
    table = {op: _unary_kernel(op) for op in unary_ops}
    table.update({op: _binary_kernel(op) for op in binary_ops})
    table["where"] = where
    return table
