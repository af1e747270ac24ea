"""Matrix products on the backend's own threads: float32/float64 through the register-blocked
micro-kernel GEMM (microgemm.py), complex ones through BLAS.

BLAS on the backend's own threads. OpenBLAS's worker threads spin after each call, and the
backend's Numba kernels run on Numba's threads: alternating the two (a matmul, then an
elementwise kernel, as every training step does) makes each wait for cores the other is
spinning on, 10-25x slower on a 2-core machine. So a large product runs as Numba tasks, each
calling single-threaded BLAS on its slice, while threadpoolctl holds BLAS to one thread."""
from __future__ import annotations

import numba
import numpy as np
import scipy.linalg.cython_blas  # noqa: F401  (the BLAS Numba's np.dot calls: loaded before
import threadpoolctl             # the library list below is read, so that it is in it)
from numba import njit, prange, types
from numba.extending import overload

from .microgemm import MR, mgemm

_opts = dict(cache=True, nogil=True)
MIN_SPLIT = 1 << 22   # multiply-adds from which a product is split over the threads
FREE_OUT = 1 << 15    # outputs below which a product under MIN_SPLIT runs as BLAS likes

_libs = None


class _OneThread:
    """Every loaded BLAS set to one thread, then back (ctypes calls, about a microsecond each;
    threadpoolctl's own ``limit`` re-reads every library's state, some 25 us)."""

    def __enter__(self):
        global _libs
        if _libs is None:
            ctl = threadpoolctl.ThreadpoolController()
            _libs = [lc for lc in ctl.lib_controllers if lc.user_api == "blas"]
        self.saved = [(lc, lc.get_num_threads()) for lc in _libs]
        for lc, n in self.saved:
            if n != 1:
                lc.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        for lc, n in self.saved:
            if n != 1:
                lc.set_num_threads(n)


def one_blas_thread() -> _OneThread:
    """A context in which BLAS runs on the calling thread only."""
    return _OneThread()


@njit(parallel=True, **_opts)
def _rows(a, b, out, parts):
    """out = a @ b, rows split into ``parts`` tasks (a and out C-contiguous)."""
    m = out.shape[0]
    step = (m + parts - 1) // parts
    for t in prange(parts):
        i = t * step
        j = min(i + step, m)
        if i < j:
            np.dot(a[i:j], b, out[i:j])


@njit(parallel=True, **_opts)
def _ksplit(at, b, part, parts):
    """part[t] = a[:, K_t] @ b[K_t, :] for ``parts`` slices K_t of K, from at = a^T
    (C-contiguous, so its row slices are, and their transposes are Fortran-ordered)."""
    k = at.shape[0]
    step = (k + parts - 1) // parts
    for t in prange(parts):
        i = t * step
        j = min(i + step, k)
        if i < j:
            np.dot(at[i:j].T, b[i:j], part[t])
        else:
            part[t][...] = 0


@njit(parallel=True, **_opts)
def _batched(a3, b3, out, ia, ib):
    for i in prange(out.shape[0]):
        np.dot(a3[ia[i]], b3[ib[i]], out[i])


def _plan(m: int, n: int, k: int) -> str:
    """How an (m, k) x (k, n) product runs: "free" (as BLAS likes: a small product's next ops
    are small too, serial Numba kernels, so BLAS may use its own threads, which it does from
    ~2**18 multiply-adds, with no worker of ours to fight and no threadpool toggling, 3 us a
    call), "one" (on one BLAS thread) or "split" (over Numba's threads, one BLAS thread each)."""
    if m * n * k < MIN_SPLIT and m * n < FREE_OUT:
        return "free"
    if numba.get_num_threads() < 2 or m * n * k < MIN_SPLIT:
        return "one"
    return "split"


def mm2(a: np.ndarray, b: np.ndarray, out: np.ndarray, dot2) -> None:
    """out (C-contiguous) = a @ b for BLAS-ready a and b; ``dot2`` is the one-call product."""
    if out.dtype.kind == "f":
        gemm_into(False, False, a, b, 0.0, out)
        return
    m, k = a.shape
    n = b.shape[1]
    plan = _plan(m, n, k)
    if plan == "free":
        dot2(a, b, out)
        return
    if plan == "one":
        with one_blas_thread():
            dot2(a, b, out)
        return
    threads = numba.get_num_threads()
    if a.flags.c_contiguous and m >= 2 * threads:
        with one_blas_thread():
            _rows(a, b, out, threads)
        return
    if a.flags.f_contiguous and b.flags.c_contiguous and k >= 2 * threads:
        part = np.empty((threads, m, n), out.dtype)
        with one_blas_thread():
            _ksplit(a.T, b, part, threads)
        np.sum(part, axis=0, out=out)
        return
    dot2(a, b, out)   # a layout neither split takes: BLAS's own threads


def mm3(a3, b3, out, ia, ib, dot3) -> None:
    """A batch of products, one task per product, each single-threaded (the micro-kernel GEMM
    for real floats, else BLAS)."""
    if out.dtype.kind == "f":
        m, n = out.shape[1:]
        threads = numba.get_num_threads()
        if threads < 2 or out.shape[0] * m * n * a3.shape[2] < MIN_SPLIT:
            _mbatched_serial(a3, b3, out, ia, ib)
        elif out.shape[0] >= threads:
            _mbatched(a3, b3, out, ia, ib)
        else:
            for i in range(out.shape[0]):
                gemm_into(False, False, a3[ia[i]], b3[ib[i]], 0.0, out[i])
        return
    if numba.get_num_threads() < 2 or out.shape[0] < 2:
        dot3(a3, b3, out, ia, ib)
        return
    with one_blas_thread():
        _batched(a3, b3, out, ia, ib)


# ---- gemm with alpha, beta and transposes (numba's np.dot has neither) ----------------------
# numba's own BLAS entry point, resolved by symbol name at link time (so callers cache like
# np.dot's): numba_xxgemm(kind, transa, transb, m, n, k, alpha*, a*, lda, b*, ldb, beta*, c*,
# ldc), column-major, as numba/np/linalg.py declares it.
def _xx_sig(dt):
    p = types.CPointer(dt)
    return types.intc(types.char, types.char, types.char, types.intp, types.intp, types.intp,
                      p, p, types.intp, p, types.intp, p, p, types.intp)


_XX = {types.float32: (types.ExternalFunction("numba_xxgemm", _xx_sig(types.float32)), ord("s")),
       types.float64: (types.ExternalFunction("numba_xxgemm", _xx_sig(types.float64)), ord("d"))}


def _xxgemm(c, tb, ta, n, m, k, al, b, ldb, a, lda, be, ldc):
    """Typed in njit code only (the overload below)."""


@overload(_xxgemm)
def _xxgemm_impl(c, tb, ta, n, m, k, al, b, ldb, a, lda, be, ldc):
    fn, kind = _XX[c.dtype]

    def impl(c, tb, ta, n, m, k, al, b, ldb, a, lda, be, ldc):
        fn(np.int8(kind), tb, ta, n, m, k, al.ctypes, b.ctypes, ldb, a.ctypes, lda, be.ctypes,
           c.ctypes, ldc)
    return impl


@njit(**_opts)
def _ld(x):
    """Leading dimension of a row-major matrix with unit column stride."""
    return x.strides[0] // x.itemsize if x.shape[0] > 1 else max(x.shape[1], 1)


@njit(**_opts)
def gemm(ta, tb, alpha, a, b, beta, c):
    """c = alpha op(a) op(b) + beta c for row-major float32/float64 matrices whose rows are
    unit-stride (any row stride; op(x) = x.T where ``t``); one single-threaded-or-not BLAS call."""
    m, n = c.shape
    k = a.shape[0] if ta else a.shape[1]
    al = np.empty(1, c.dtype)
    al[0] = alpha
    be = np.empty(1, c.dtype)
    be[0] = beta
    # row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: operands swap, flags stay
    _xxgemm(c, np.int8(116 if tb else 110), np.int8(116 if ta else 110), n, m, k, al, b, _ld(b),
            a, _ld(a), be, _ld(c))


@njit(parallel=True, **_opts)
def _gemm_rows(ta, tb, a, b, beta, c, parts):
    """gemm with the rows of c split into ``parts`` tasks (single-threaded BLAS in each)."""
    m = c.shape[0]
    step = (m + parts - 1) // parts
    for t in prange(parts):
        i = t * step
        j = min(i + step, m)
        if i < j:
            if ta:
                gemm(True, tb, 1.0, a[:, i:j], b, beta, c[i:j])
            else:
                gemm(False, tb, 1.0, a[i:j], b, beta, c[i:j])


@njit(parallel=True, **_opts)
def _msplit(ta, tb, a, b, beta, c, parts):
    """mgemm with c's rows (or, for a c wider than tall, its columns) split into ``parts``
    tasks, row blocks whole micro-tiles."""
    m, n = c.shape
    if m >= n:
        step = ((m + parts - 1) // parts + MR - 1) // MR * MR
        for t in prange(parts):
            i, j = t * step, min(m, (t + 1) * step)
            if i < j:
                mgemm(ta, tb, 1.0, a[:, i:j] if ta else a[i:j], b, beta, c[i:j])
    else:
        step = ((n + parts - 1) // parts + 15) // 16 * 16
        for t in prange(parts):
            i, j = t * step, min(n, (t + 1) * step)
            if i < j:
                mgemm(ta, tb, 1.0, a, b[i:j] if tb else b[:, i:j], beta, c[:, i:j])


@njit(parallel=True, **_opts)
def _mbatched(a3, b3, out, ia, ib):
    for i in prange(out.shape[0]):
        mgemm(False, False, 1.0, a3[ia[i]], b3[ib[i]], 0.0, out[i])


@njit(**_opts)
def _mbatched_serial(a3, b3, out, ia, ib):
    for i in range(out.shape[0]):
        mgemm(False, False, 1.0, a3[ia[i]], b3[ib[i]], 0.0, out[i])


def gemm_into(ta: bool, tb: bool, a: np.ndarray, b: np.ndarray, beta: float,
              c: np.ndarray) -> None:
    """c = op(a) op(b) + beta c: real floats through the micro-kernel GEMM (split over the
    threads from MIN_SPLIT multiply-adds), complex ones through BLAS (rows unit-stride),
    threaded as ``mm2`` was: small products as BLAS likes, larger ones on one BLAS thread, big
    ones split over Numba tasks."""
    m, n = c.shape
    k = a.shape[0] if ta else a.shape[1]
    if c.dtype.kind == "f":
        threads = numba.get_num_threads() if m * n * k >= MIN_SPLIT else 1
        if threads >= 2:
            _msplit(ta, tb, a, b, beta, c, threads)
        else:
            mgemm(ta, tb, 1.0, a, b, beta, c)
        return
    plan = _plan(m, n, k)
    if plan == "free":
        gemm(ta, tb, 1.0, a, b, beta, c)
        return
    threads = numba.get_num_threads()
    with one_blas_thread():
        if plan == "one" or m < 2 * threads:
            gemm(ta, tb, 1.0, a, b, beta, c)
        else:
            _gemm_rows(ta, tb, a, b, beta, c, threads)
