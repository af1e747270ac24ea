"""CPU kernels: reductions (sum, prod, max, min, any, all, count_nonzero), cumulative sums and
products, argmax/argmin. Conventions: docs/kernels/reductions.md.

Each (op, input dtype, output dtype) gets one generated Numba module. A full reduction runs over
fixed blocks whose inner loop may be reassociated (so LLVM vectorizes it into many partial sums);
block results combine in a wide accumulator (float64 for float32 sums), which keeps accuracy close
to numpy's pairwise summation. Axis reductions see the input as (outer, reduced, inner).
"""
from __future__ import annotations

import math
import time

import numba
import numpy as np

from . import jit
from .pool import pool

# Threads stop paying when another process holds a core: a parallel region whose second thread
# waits for a time slice is several times slower than one thread streaming the data. A parallel
# kernel call three times slower (per byte) than that kernel's best call so far, and slower than
# one thread would stream its bytes, switches the threaded kernels to serial for a while. Each
# kernel is judged against its own best: a fixed bytes-per-second bound alone took compute-heavy
# kernels (the SNN loops, about 13 GB/s on two threads) for contended and kept them serial.
SERIAL_BYTES_PER_S = 20e9
_serial_until = [0.0]
# parallel kernel -> its fastest seconds per byte; inf after its first call (which may compile
# or load it, so is not judged), absent before
_best: dict = {}


def use_threads(n: int) -> bool:
    """Whether a kernel over ``n`` elements should run its parallel variant."""
    return n >= jit.PARALLEL_MIN and time.monotonic() >= _serial_until[0]


def par(fn, tasks: int, nbytes: int, *args):
    """Call the parallel kernel ``fn`` (``tasks`` prange iterations, handed out in about 32
    dynamic chunks) and back off to serial kernels for 2 s when it ran contended (see above).
    A kernel's first call is not judged: it may include compiling or loading it from the cache."""
    old = numba.set_parallel_chunksize(max(1, tasks // 32))
    t0 = time.perf_counter()
    try:
        return fn(*args)
    finally:
        numba.set_parallel_chunksize(old)
        dt = time.perf_counter() - t0
        per = dt / max(nbytes, 1)
        best = _best.get(fn)
        if best is None:
            _best[fn] = math.inf
        elif per > 3 * best and dt > nbytes / SERIAL_BYTES_PER_S + 2e-4:
            _serial_until[0] = time.monotonic() + 2.0
        else:
            _best[fn] = min(best, per)


CHUNK, COLS = 1 << 16, 512  # elements per parallel task of a full reduction; columns per task

_TEMPLATE = '''
import numpy as np
from numba import njit, prange
from grilly.backends.cpu_numba.reduce_ops import (  # noqa: F401
    fmaximum, fmaxnum_nn, fminimum, fminnum_nn, magbits)

OUT = np.{out}
WIDE = np.{wide}
B = 4096
CHUNK = {chunk}
COLS = {cols}
_o = dict(cache=True, nogil=True, error_model="numpy")
_fm = dict(_o, fastmath={fm})


@njit(**_o)
def comb(x, y):
    return {comb}


# loops run over range(a.shape[0]) of a slice: an index Numba cannot prove non-negative gets a
# wraparound check that stops the loop from vectorizing
{flat}

@njit(parallel=True, **_o)
def p_flat(a):
    n = a.shape[0]
    nc = (n + CHUNK - 1) // CHUNK
    parts = np.empty(nc, WIDE)
    for c in prange(nc):
        lo = c * CHUNK
        parts[c] = s_flat(a[lo:min(lo + CHUNK, n)])
    acc = WIDE({ident})
    for c in range(nc):
        acc = comb(acc, parts[c])
    return acc


@njit(**_o)
def s_rows(x, out):
    for o in range(x.shape[0]):
        out[o] = OUT(s_flat(x[o]))


@njit(parallel=True, **_o)
def p_rows(x, out):
    for o in prange(x.shape[0]):
        out[o] = OUT(s_flat(x[o]))


# (the column loops index slices from 0 for the same reason: over range(j0, j1) they did not
# vectorize, and a column reduction ran 3-4x slower)
@njit(**_o)
def _cols(x, out, t):
    inner = x.shape[2]
    nj = (inner + COLS - 1) // COLS
    o = t // nj
    j0 = (t % nj) * COLS
    j1 = min(j0 + COLS, inner)
    acc = out[o, j0:j1]
    for j in range(acc.shape[0]):
        acc[j] = OUT({ident})
    for r in range(x.shape[1]):
        row = x[o, r, j0:j1]
        for j in range(acc.shape[0]):
            acc[j] = comb(acc[j], {load_cols})


@njit(**_o)
def s_cols(x, out):
    nj = (x.shape[2] + COLS - 1) // COLS
    for t in range(x.shape[0] * nj):
        _cols(x, out, t)


@njit(parallel=True, **_o)
def p_cols(x, out):
    nt = x.shape[0] * ((x.shape[2] + COLS - 1) // COLS)
    for t in prange(nt):
        _cols(x, out, t)
'''

# The flat reduction of most ops: ``_fast`` reduces a block in one accumulator, which LLVM splits
# into vector partial results (several, so their dependency chains overlap) where the op is exact
# or fastmath lets it reassociate; ``s_flat`` combines the blocks in the wide type.
_FLAT = """
@njit(**_fm)
def _fast(a):
    acc = OUT({ident})
    for i in range(a.shape[0]):
        acc = {fast}
    return acc


@njit(**_o)
def s_flat(a):
    n = a.shape[0]
    acc = WIDE({ident})
    for lo in range(0, n, B):
        acc = comb(acc, WIDE(_fast(a[lo:min(lo + B, n)])))
    return acc
"""

# Float max/min. llvm.maximum (exact and NaN-propagating; ``comb`` uses it) lowers on x86 to
# several instructions per vector: a block loop over it ran at a third of a sum's speed. maxNum
# flagged nnan is one vmaxps, but a NaN makes its result poison; so the same pass keeps the largest
# |x| bit pattern as an integer (an and plus an integer max per vector: exact, untouched by float
# flags), which lies above +inf's exactly when the block held a NaN, and the block then gives NaN.
# In cache that runs as fast as a sum. From memory its extra vector work per cache line made one
# core stream a quarter slower than a sum; reading two far-apart blocks in each step (one from
# each half of the input) won most of that back: 16M float32 on one core 1.7 -> 1.5 ms (sum
# 1.4), on two 0.96 -> 0.76 ms (sum 0.72); rows of a few thousand elements gained alike.
_FLAT_NAN = """
@njit(**_o)
def _fast(a):
    acc = OUT({ident})
    mag = magbits(OUT(0))
    for i in range(a.shape[0]):
        x = OUT(a[i])
        acc = {step}(acc, x)
        mag = max(mag, magbits(x))
    return acc if mag <= magbits(OUT(np.inf)) else OUT(np.nan)


@njit(**_o)
def _fast2(a, b):
    acc = OUT({ident})
    acc2 = OUT({ident})
    mag = magbits(OUT(0))
    for i in range(a.shape[0]):
        x = OUT(a[i])
        y = OUT(b[i])
        acc = {step}(acc, x)
        acc2 = {step}(acc2, y)
        mag = max(mag, max(magbits(x), magbits(y)))
    acc = {step}(acc, acc2)
    return acc if mag <= magbits(OUT(np.inf)) else OUT(np.nan)


# blocks lo of the first half pair with blocks h + lo of the second (halves of whole blocks, or
# of a short input); what is left after 2h goes block by block
@njit(**_o)
def s_flat(a):
    n = a.shape[0]
    h = n // 2 if n < 2 * B else n // (2 * B) * B
    acc = WIDE({ident})
    for lo in range(0, h, B):
        hi = min(lo + B, h)
        acc = comb(acc, WIDE(_fast2(a[lo:hi], a[h + lo:h + hi])))
    for lo in range(2 * h, n, B):
        acc = comb(acc, WIDE(_fast(a[lo:min(lo + B, n)])))
    return acc
"""

# op: (identity by input kind, fast block step, combine, element load, fastmath for floats)
_OPS = {
    "sum": ("0", "acc + OUT(a[i])", "x + y", "OUT({e})", {"reassoc"}),
    "prod": ("1", "acc * OUT(a[i])", "x * y", "OUT({e})", {"reassoc"}),
    "max": (None, "{max}(acc, OUT(a[i]))", "{max}(x, y)", "OUT({e})", False),
    "min": (None, "{min}(acc, OUT(a[i]))", "{min}(x, y)", "OUT({e})", False),
    "any": ("False", "acc | (a[i] != 0)", "x | y", "({e} != 0)", False),
    "all": ("True", "acc & (a[i] != 0)", "x & y", "({e} != 0)", False),
    "count_nonzero": ("0", "acc + OUT(a[i] != 0)", "x + y", "OUT({e} != 0)", False),
}


def _npname(d: np.dtype) -> str:
    return "bool_" if d.kind == "b" else d.name


def _ident(op: str, ind: np.dtype) -> str:
    ident = _OPS[op][0]
    if ident is not None:
        return ident
    if ind.kind == "f":
        return "-np.inf" if op == "max" else "np.inf"
    info = np.iinfo(ind)
    return repr(int(info.min if op == "max" else info.max))


def _wide(op: str, out: np.dtype) -> np.dtype:
    if op in ("sum", "prod") and out.kind in "fc":
        return np.dtype(np.complex128 if out.kind == "c" else np.float64)
    return out


_mods: dict = {}


def _module(op: str, ind: np.dtype, out: np.dtype):
    m = _mods.get((op, ind, out))
    if m is None:
        m = _mods[op, ind, out] = _build(op, ind, out)
    return m


def _build(op: str, ind: np.dtype, out: np.dtype):
    ident, fast, comb, load, fm = _OPS[op]
    floaty = ind.kind in "fc"
    mm = {"max": "fmaximum", "min": "fminimum"} if floaty else {"max": "max", "min": "min"}
    if ind.kind == "f" and op in mm:
        flat = _FLAT_NAN.format(ident=_ident(op, ind),
                                step={"max": "fmaxnum_nn", "min": "fminnum_nn"}[op])
    else:
        flat = _FLAT.format(ident=_ident(op, ind), fast=fast.format(**mm))
    src = _TEMPLATE.format(chunk=CHUNK, cols=COLS, out=_npname(out), wide=_npname(_wide(op, out)),
                           ident=_ident(op, ind), flat=flat, comb=comb.format(**mm),
                           load_cols=load.format(e="row[j]"),
                           fm=repr(fm) if floaty else "False")
    return jit.module(f"red_{op}_{ind.name}_{out.name}", src, deps=("reduce_ops.py",))


def _view3(buf: np.ndarray, axes: tuple):
    """``buf`` as a C-contiguous (outer, reduced, inner) array, copying only when the reduced
    axes are not one run of a contiguous buffer."""
    nd = buf.ndim
    run = axes == tuple(range(axes[0], axes[-1] + 1))
    if not run or not buf.flags.c_contiguous:
        if not run:
            kept = tuple(a for a in range(nd) if a not in axes)
            buf = buf.transpose(kept + axes)
            axes = tuple(range(nd - len(axes), nd))
        buf = np.ascontiguousarray(buf)
    shp = buf.shape
    outer = math.prod(shp[:axes[0]])
    red = math.prod(shp[axes[0]:axes[-1] + 1])
    inner = math.prod(shp[axes[-1] + 1:])
    return buf.reshape(outer, red, inner)


def _reduce_kernel(op: str):
    def k(buf: np.ndarray, axes: tuple, keepdims: bool, out_dtype) -> np.ndarray:
        outd = out_dtype.np
        shape = tuple(1 if i in axes else s for i, s in enumerate(buf.shape)) if keepdims else \
            tuple(s for i, s in enumerate(buf.shape) if i not in axes)
        # float16 has no Numba arithmetic: compute in float32, as numpy's own loops do
        cin = np.dtype(np.float32) if buf.dtype == np.float16 else buf.dtype
        cout = np.dtype(np.float32) if outd == np.float16 else outd
        if cin.kind == "b" and op in ("max", "min"):
            cin = np.dtype(np.uint8)
            cout = np.dtype(np.uint8) if cout.kind == "b" else cout
        if cin != buf.dtype:
            buf = buf.astype(cin)
        if not axes:
            out = pool.empty(shape, outd)
            m = _module(op, cin, cout)
            if buf.size:
                flat = np.ascontiguousarray(buf).reshape(-1, 1, 1)
                res = np.empty((flat.shape[0], 1), cout)
                m.s_cols(flat, res)
                out.reshape(-1)[...] = res.reshape(-1)
            return out
        m = _module(op, cin, cout)
        x = _view3(buf, axes)
        outer, red, inner = x.shape
        parallel = use_threads(x.size)
        nb = x.nbytes
        if inner == 1:
            x2 = x.reshape(outer, red)
            if outer == 1:
                v = par(m.p_flat, red // CHUNK, nb, x2[0]) if parallel else m.s_flat(x2[0])
                res = np.array([v]).astype(cout)
            else:
                res = np.empty(outer, cout)
                if parallel and outer < 8:
                    for o in range(outer):
                        res[o] = par(m.p_flat, red // CHUNK, nb // outer, x2[o])
                elif parallel:
                    par(m.p_rows, outer, nb, x2, res)
                else:
                    m.s_rows(x2, res)
        else:
            res = np.empty((outer, inner), cout)
            if parallel:
                par(m.p_cols, outer * -(-inner // COLS), nb, x, res)
            else:
                m.s_cols(x, res)
        out = pool.empty(shape, outd)
        np.copyto(out.reshape(-1), res.reshape(-1), casting="unsafe")
        return out
    k.__name__ = op
    return k


# ---- cumulative sum / product -------------------------------------------------------------

_CUM = '''
import numpy as np
from numba import njit, prange

OUT = np.{out}
_o = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_o)
def _one(x, out, o, init):
    n, inner = x.shape[1], x.shape[2]
    if init:
        for j in range(inner):
            out[o, 0, j] = OUT({ident})
    for r in range(n):
        if r == 0:
            for j in range(inner):
                out[o, init, j] = OUT(x[o, 0, j])
        else:
            for j in range(inner):
                out[o, r + init, j] = out[o, r + init - 1, j] {sym} OUT(x[o, r, j])


@njit(**_o)
def s_cum(x, out, init):
    for o in range(x.shape[0]):
        _one(x, out, o, init)


@njit(parallel=True, **_o)
def p_cum(x, out, init):
    for o in prange(x.shape[0]):
        _one(x, out, o, init)
'''


def _cumulative_kernel(op: str, sym: str, ident: str):
    def k(buf: np.ndarray, axis: int, include_initial: bool, out_dtype) -> np.ndarray:
        outd = out_dtype.np
        shape = list(buf.shape)
        shape[axis] += int(include_initial)
        out = pool.empty(tuple(shape), outd)
        if out.size == 0:
            return out
        cin = np.dtype(np.float32) if buf.dtype == np.float16 else buf.dtype
        cout = np.dtype(np.float32) if outd == np.float16 else outd
        if cin != buf.dtype:
            buf = buf.astype(cin)
        x = _view3(buf, (axis,))
        res = np.empty((x.shape[0], shape[axis], x.shape[2]), cout)
        if res.size and x.shape[1]:
            m = jit.module(f"cum_{op}_{cin.name}_{cout.name}",
                           _CUM.format(out=_npname(cout), sym=sym, ident=ident))
            if use_threads(x.size) and x.shape[0] >= 2:
                par(m.p_cum, x.shape[0], 4 * x.nbytes, x, res, int(include_initial))
            else:
                m.s_cum(x, res, int(include_initial))
        elif res.size:
            res[...] = np.asarray(int(ident), cout)
        np.copyto(out, res.reshape(out.shape), casting="unsafe")
        return out
    k.__name__ = op
    return k


# ---- argmax / argmin ----------------------------------------------------------------------

_ARG = '''
import numpy as np
from numba import njit, prange

_o = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_o)
def _one(x, out, best, o):
    for j in range(x.shape[2]):
        best[j] = x[o, 0, j]
        out[o, j] = 0
    for r in range(1, x.shape[1]):
        for j in range(x.shape[2]):
            v = x[o, r, j]
            b = best[j]
            if v {cmp} b or (v != v and b == b):
                best[j] = v
                out[o, j] = r


@njit(**_o)
def s_arg(x, out):
    best = np.empty(x.shape[2], x.dtype)
    for o in range(x.shape[0]):
        _one(x, out, best, o)


@njit(parallel=True, **_o)
def p_arg(x, out):
    for o in prange(x.shape[0]):
        best = np.empty(x.shape[2], x.dtype)
        _one(x, out, best, o)
'''


def _arg_kernel(op: str, cmp: str):
    def k(buf: np.ndarray, axis, keepdims: bool) -> np.ndarray:
        if buf.dtype.kind == "b":
            buf = buf.view(np.uint8)
        elif buf.dtype == np.float16:
            buf = buf.astype(np.float32)
        if axis is None:
            x = np.ascontiguousarray(buf).reshape(1, -1, 1)
            shape = (1,) * buf.ndim if keepdims else ()
        else:
            x = _view3(buf, (axis,))
            shape = tuple(1 if i == axis else s for i, s in enumerate(buf.shape)) if keepdims \
                else tuple(s for i, s in enumerate(buf.shape) if i != axis)
        res = np.empty((x.shape[0], x.shape[2]), np.int64)
        m = jit.module(f"{op}_{x.dtype.name}", _ARG.format(cmp=cmp))
        if use_threads(x.size) and x.shape[0] >= 2:
            par(m.p_arg, x.shape[0], 2 * x.nbytes, x, res)
        else:
            m.s_arg(x, res)
        out = pool.empty(shape, np.dtype(np.int64))
        out.reshape(-1)[...] = res.reshape(-1)
        return out
    k.__name__ = op
    return k


KERNELS: dict = {op: _reduce_kernel(op) for op in _OPS}
KERNELS.update({
    "cumulative_sum": _cumulative_kernel("cumulative_sum", "+", "0"),
    "cumulative_prod": _cumulative_kernel("cumulative_prod", "*", "1"),
    "argmax": _arg_kernel("argmax", ">"),
    "argmin": _arg_kernel("argmin", "<"),
})
