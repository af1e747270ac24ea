"""CPU kernels: gather/scatter for advanced indexing, index normalization, mask positions and
repeat indices. Data moves as raw words (uint8..uint64), so one compiled loop serves every
dtype of a given itemsize (float16 and complex included)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import jit
from .pool import pool

_opts = dict(cache=True, nogil=True)
_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.uint64}


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _words(a: np.ndarray, n_rows: int, row: int) -> np.ndarray:
    """C-contiguous ``a`` as (n_rows, words of ``row`` elements) raw machine words."""
    w = _WORDS[a.dtype.itemsize]
    width = a.dtype.itemsize // np.dtype(w).itemsize
    return a.reshape(n_rows, row).view(w).reshape(n_rows, row * width)


@njit(**_opts)
def _gather_s(src, ix, dims, out):
    k, m_n = ix.shape
    for m in range(m_n):
        lin = 0
        for j in range(k):
            lin = lin * dims[j] + ix[j, m]
        for r in range(out.shape[1]):
            out[m, r] = src[lin, r]


@njit(parallel=True, **_opts)
def _gather_p(src, ix, dims, out):
    k, m_n = ix.shape
    for m in prange(m_n):
        lin = 0
        for j in range(k):
            lin = lin * dims[j] + ix[j, m]
        for r in range(out.shape[1]):
            out[m, r] = src[lin, r]


@njit(**_opts)
def _scatter_s(dst, ix, dims, val):
    # serial on purpose: with duplicate indices the last write wins, as in NumPy
    k, m_n = ix.shape
    for m in range(m_n):
        lin = 0
        for j in range(k):
            lin = lin * dims[j] + ix[j, m]
        for r in range(val.shape[1]):
            dst[lin, r] = val[m, r]


@njit(**_opts)
def _normalize(idx, n, out):
    bad = 0
    found = False
    for i in range(idx.shape[0]):
        v = idx[i]
        if v < 0:
            v += n
        if (v < 0 or v >= n) and not found:
            found = True
            bad = idx[i]
        out[i] = v
    return found, bad


@njit(**_opts)
def _mask_positions(mask, shape):
    count = 0
    for i in range(mask.shape[0]):
        if mask[i]:
            count += 1
    nd = shape.shape[0]
    out = np.empty((nd, count), np.int64)
    c = 0
    for i in range(mask.shape[0]):
        if mask[i]:
            rem = i
            for d in range(nd - 1, -1, -1):
                out[d, c] = rem % shape[d]
                rem //= shape[d]
            c += 1
    return out


@njit(**_opts)
def _repeat(counts):
    total = 0
    for i in range(counts.shape[0]):
        if counts[i] < 0:
            return np.empty(0, np.int64), False
        total += counts[i]
    out = np.empty(total, np.int64)
    c = 0
    for i in range(counts.shape[0]):
        for _ in range(counts[i]):
            out[c] = i
            c += 1
    return out, True


def _index_matrix(indices) -> np.ndarray:
    m = _prod(indices[0].shape)
    ix = np.empty((len(indices), m), np.int64)
    for j, a in enumerate(indices):
        ix[j] = a.reshape(-1)
    return ix


def gather(buf: np.ndarray, indices: tuple) -> np.ndarray:
    """``buf[i0, i1, ..., ik-1]``: k int64 index buffers of one shape S over buf's first k axes."""
    k = len(indices)
    s = tuple(indices[0].shape)
    lead, rest = buf.shape[:k], buf.shape[k:]
    p, row, m = _prod(lead), _prod(rest), _prod(s)
    out = pool.empty(s + rest, buf.dtype)
    if m == 0 or row == 0:
        return out
    src = _words(np.ascontiguousarray(buf), p, row)
    dst = _words(out, m, row)
    fn = _gather_p if m * row >= jit.PARALLEL_MIN else _gather_s
    fn(src, _index_matrix(indices), np.asarray(lead, np.int64), dst)
    return out


def scatter(buf: np.ndarray, indices: tuple, values: np.ndarray) -> None:
    """``buf[i0, ..., ik-1] = values`` in place; values has shape S + buf.shape[k:]."""
    k = len(indices)
    s = tuple(indices[0].shape)
    lead, rest = buf.shape[:k], buf.shape[k:]
    p, row, m = _prod(lead), _prod(rest), _prod(s)
    if m == 0 or row == 0:
        return
    direct = buf.flags.c_contiguous
    target = buf if direct else np.ascontiguousarray(buf)
    vals = np.array(values, dtype=buf.dtype, order="C", copy=True)  # may alias buf
    _scatter_s(_words(target, p, row), _index_matrix(indices), np.asarray(lead, np.int64),
               _words(vals, m, row))
    if not direct:
        np.copyto(buf, target)


def normalize_indices(idx: np.ndarray, n: int):
    """(int64 copy of ``idx`` with negatives wrapped by ``n``, first out-of-range value or None)."""
    flat = np.ascontiguousarray(idx, dtype=np.int64).reshape(-1)
    out = pool.empty(idx.shape, np.dtype(np.int64))
    found, bad = _normalize(flat, np.int64(n), out.reshape(-1))
    return out, (int(bad) if found else None)


def mask_indices(mask: np.ndarray) -> tuple:
    """The coordinates of the True elements of ``mask`` in row-major order: ndim int64 buffers."""
    flat = np.ascontiguousarray(mask).reshape(-1).view(np.uint8)
    out = _mask_positions(flat, np.asarray(mask.shape, np.int64))
    return tuple(out[d] for d in range(mask.ndim))


def repeat_indices(counts: np.ndarray):
    """int64 buffer holding i counts[i] times for each i, or None when a count is negative."""
    out, ok = _repeat(np.ascontiguousarray(counts, dtype=np.int64).reshape(-1))
    return out if ok else None


KERNELS: dict = {
    "gather": gather, "scatter": scatter, "normalize_indices": normalize_indices,
    "mask_indices": mask_indices, "repeat_indices": repeat_indices,
}
