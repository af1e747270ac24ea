"""BLAS on the backend's own threads. OpenBLAS's worker threads spin after each call, and the
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

_opts = dict(cache=True, nogil=True)
MIN_SPLIT = 1 << 22   # multiply-adds from which a product is split over the threads

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


def mm2(a: np.ndarray, b: np.ndarray, out: np.ndarray, dot2) -> None:
    """out (C-contiguous) = a @ b for BLAS-ready a and b; ``dot2`` is the one-call product."""
    m, k = a.shape
    n = b.shape[1]
    threads = numba.get_num_threads()
    if threads < 2 or m * n * k < MIN_SPLIT:
        with one_blas_thread():
            dot2(a, b, out)
        return
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
    """A batch of products, one task per product, each single-threaded BLAS."""
    if numba.get_num_threads() < 2 or out.shape[0] < 2:
        dot3(a3, b3, out, ia, ib)
        return
    with one_blas_thread():
        _batched(a3, b3, out, ia, ib)
