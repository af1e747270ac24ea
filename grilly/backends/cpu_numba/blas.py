"""Matrix products on the backend's own threads: float32/float64 through the register-blocked
micro-kernel GEMM (microgemm.py), complex ones through BLAS.

BLAS (complex products) on the backend's own threads. OpenBLAS's worker threads spin after each call, and the
backend's Numba kernels run on Numba's threads: alternating the two (a matmul, then an
elementwise kernel, as every training step does) makes each wait for cores the other is
spinning on, 10-25x slower on a 2-core machine. So a large product runs as Numba tasks, each
calling single-threaded BLAS on its slice, while threadpoolctl holds BLAS to one thread."""
from __future__ import annotations

import numba
import numpy as np
import scipy.linalg.cython_blas  # noqa: F401  (the BLAS Numba's np.dot calls: loaded before
import threadpoolctl             # the library list below is read, so that it is in it)
from numba import njit, prange

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
    if (numba.get_num_threads() < 2 or out.shape[0] < 2
            or out.shape[0] * out.shape[1] * out.shape[2] * a3.shape[2] < MIN_SPLIT):
        dot3(a3, b3, out, ia, ib)   # the same products in order, no parallel region
        return
    with one_blas_thread():
        _batched(a3, b3, out, ia, ib)


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
    """c = op(a) op(b) + beta c for float32/float64 views of any strides: the micro-kernel
    GEMM, split over Numba's threads from MIN_SPLIT multiply-adds."""
    m, n = c.shape
    k = a.shape[0] if ta else a.shape[1]
    threads = numba.get_num_threads() if m * n * k >= MIN_SPLIT else 1
    if threads >= 2:
        _msplit(ta, tb, a, b, beta, c, threads)
    else:
        mgemm(ta, tb, 1.0, a, b, beta, c)
