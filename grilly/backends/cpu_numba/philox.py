"""CPU kernels: philox_blocks, the Philox4x32-10 words of m consecutive 64-bit block counters in
one parallel Numba loop (the array layer's composition takes some fifty namespace passes), and
philox_uniform, uniform floats made from those words in the same loop (the composition writes
the words, transposes them and converts them in some six passes), and philox_dropout, those
uniforms turned into a dropout multiplier in the same loop (the composition adds a comparison and
a where)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..contract import float16_dropout_args
from . import jit
from .pool import pool

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF
# the uniforms' shifts and scales as typed constants: Numba types a uint64 mixed with an int64
# as float64, which would round the words
_S5, _S6, _S8 = np.uint64(5), np.uint64(6), np.uint64(8)
_F32_SCALE = np.float32(2.0 ** -24)
_F64_HIGH, _F64_SCALE = 2.0 ** 26, 2.0 ** -53
# a value's weight in jit.sized's units: the loops run parallel from 32768 values (below, their
# serial twins), about where the parallel loop starts to win on two cores (docs/benchmarks.md)
_COST = 4


@njit(cache=True, nogil=True, inline="always")
def _block(clo, chi, k0, k1, i):
    """The four words (uint64 holding uint32) of block counter + i (mod 2^64)."""
    lo = (clo + i) & _MASK
    c0 = np.uint64(lo)
    c1 = np.uint64((chi + (1 if lo < clo else 0)) & _MASK)
    c2 = np.uint64(0)
    c3 = np.uint64(0)
    a, b = np.uint64(k0), np.uint64(k1)
    for _ in range(10):
        p0 = c0 * _M0
        p1 = c2 * _M1
        hi0, lo0 = p0 >> np.uint64(32), p0 & np.uint64(_MASK)
        hi1, lo1 = p1 >> np.uint64(32), p1 & np.uint64(_MASK)
        c0, c1, c2, c3 = hi1 ^ c1 ^ a, lo1, hi0 ^ c3 ^ b, lo0
        a = (a + np.uint64(_W0)) & np.uint64(_MASK)
        b = (b + np.uint64(_W1)) & np.uint64(_MASK)
    return c0, c1, c2, c3


@njit(parallel=True, cache=True, nogil=True)
def _blocks(out, clo, chi, k0, k1):
    m = out.shape[1]
    for i in prange(m):
        w = _block(clo, chi, k0, k1, i)
        out[0, i] = np.uint32(w[0])
        out[1, i] = np.uint32(w[1])
        out[2, i] = np.uint32(w[2])
        out[3, i] = np.uint32(w[3])


@njit(cache=True, nogil=True, inline="always")
def _u32(w):
    # (w >> 8) < 2^24 converts exactly, and the scale is a power of two: nothing rounds (the
    # int32 step lets LLVM vectorize the conversion)
    return np.float32(np.int32(w >> _S8)) * _F32_SCALE


@njit(cache=True, nogil=True, inline="always")
def _u64(w0, w1):
    # a 53-bit integer and a power-of-two scale: exact in float64
    return (np.float64(np.int32(w0 >> _S5)) * _F64_HIGH + np.float64(np.int32(w1 >> _S6))) \
        * _F64_SCALE


# blocks per task of the draw loops: a task computes its blocks' values into a small scratch
# array and copies that out. Stored straight into the output the same loop did not vectorize
# (Numba cannot tell LLVM that an argument is unaliased) and ran three to four times slower.
_CHUNK = 1024


@njit(parallel=True, cache=True, nogil=True)
def _draw32(out, clo, chi, k0, k1, drop, p, s):
    # block i gives elements 4 i .. 4 i + 3: the uniforms, or (drop) s where u >= p else 0
    # (p and s float32: the composition's float32 comparison)
    n = out.shape[0]
    m = (n + 3) // 4
    zero = np.float32(0.0)
    for c in prange((m + _CHUNK - 1) // _CHUNK):
        a = c * _CHUNK
        b = min(a + _CHUNK, m)
        tmp = np.empty((_CHUNK, 4), np.float32)
        for i in range(b - a):
            w = _block(clo, chi, k0, k1, a + i)
            for j in range(4):
                u = _u32(w[j])
                tmp[i, j] = (s if u >= p else zero) if drop else u
        flat = tmp.reshape(4 * _CHUNK)
        for e in range(4 * a, min(4 * b, n)):
            out[e] = flat[e - 4 * a]


@njit(parallel=True, cache=True, nogil=True)
def _draw64(out, clo, chi, k0, k1, drop, p, s):
    # block i gives elements 2 i (words 0, 1) and 2 i + 1 (words 2, 3); drop as _draw32
    n = out.shape[0]
    m = (n + 1) // 2
    for c in prange((m + _CHUNK - 1) // _CHUNK):
        a = c * _CHUNK
        b = min(a + _CHUNK, m)
        tmp = np.empty((_CHUNK, 2), np.float64)
        for i in range(b - a):
            w = _block(clo, chi, k0, k1, a + i)
            for j in range(2):
                u = _u64(w[2 * j], w[2 * j + 1])
                tmp[i, j] = (s if u >= p else 0.0) if drop else u
        flat = tmp.reshape(2 * _CHUNK)
        for e in range(2 * a, min(2 * b, n)):
            out[e] = flat[e - 2 * a]


@njit(cache=True, nogil=True, inline="always")
def _rne11(k):
    """k (< 2^24) rounded to 11 significant bits, to nearest, ties to even: float16's
    precision on the uniform k 2^-24 (contract.float16_dropout_args)."""
    sh = 0
    for j in range(11, 24):
        sh += 1 if k >= (1 << j) else 0
    if sh == 0:
        return k
    q = k >> sh
    rem = k & ((1 << sh) - 1)
    hf = 1 << (sh - 1)
    if rem > hf or (rem == hf and (q & 1) == 1):
        q += 1
    return q << sh


@njit(parallel=True, cache=True, nogil=True)
def _drop16(out, clo, chi, k0, k1, big, bits):
    # block i gives elements 4 i .. 4 i + 3: the float16 bits ``bits`` where the word's rounded
    # uniform is >= big, else 0 (the integer form of the float16 comparison)
    n = out.shape[0]
    m = (n + 3) // 4
    zero = np.uint16(0)
    for c in prange((m + _CHUNK - 1) // _CHUNK):
        a = c * _CHUNK
        b = min(a + _CHUNK, m)
        tmp = np.empty((_CHUNK, 4), np.uint16)
        for i in range(b - a):
            w = _block(clo, chi, k0, k1, a + i)
            for j in range(4):
                k = np.int64(w[j] >> _S8)
                tmp[i, j] = bits if _rne11(k) >= big else zero
        flat = tmp.reshape(4 * _CHUNK)
        for e in range(4 * a, min(4 * b, n)):
            out[e] = flat[e - 4 * a]


def philox_blocks(m: int, counter: int, key: int) -> np.ndarray:
    """(4, m) uint32 words of block counters counter .. counter + m - 1 under ``key``."""
    out = pool.empty((4, m), np.dtype(np.uint32))
    run = jit.sized(_blocks, _COST * 4 * m)   # four values a block
    run(out, counter & _MASK, counter >> 32, key & _MASK, key >> 32)
    return out


def philox_uniform(n: int, counter: int, key: int, dtype) -> np.ndarray:
    """(n,) float32 or float64 uniforms in [0, 1) from the words of blocks counter, ... ."""
    f64 = dtype.name == "float64"
    out = pool.empty((n,), np.dtype(np.float64 if f64 else np.float32))
    t = out.dtype.type
    jit.sized(_draw64 if f64 else _draw32, _COST * n)(
        out, counter & _MASK, counter >> 32, key & _MASK, key >> 32, False, t(0), t(0))
    return out


def philox_dropout(n: int, counter: int, key: int, p: float, scale: float, dtype) -> np.ndarray:
    """(n,) float16, float32 or float64: ``scale`` where philox_uniform's u >= p, else 0, in
    ``dtype`` (float16: u and p rounded to float16, compared as integers)."""
    if dtype.name == "float16":
        big, bits = float16_dropout_args(p, scale)
        out = pool.empty((n,), np.dtype(np.uint16))
        jit.sized(_drop16, _COST * n)(out, counter & _MASK, counter >> 32, key & _MASK,
                                      key >> 32, np.int64(big), np.uint16(bits))
        return out.view(np.float16)
    f = np.dtype(np.float64 if dtype.name == "float64" else np.float32)
    out = pool.empty((n,), f)
    # p and scale rounded to dtype as the full kernel rounds a Python scalar
    pd, sd = (np.asarray(v).astype(f)[()] for v in (p, scale))
    jit.sized(_draw64 if f == np.float64 else _draw32, _COST * n)(
        out, counter & _MASK, counter >> 32, key & _MASK, key >> 32, True, pd, sd)
    return out


philox_dropout.takes_float16 = True   # (the contract's float16 comparison: _drop16)


KERNELS: dict = {"philox_blocks": philox_blocks, "philox_dropout": philox_dropout,
                 "philox_uniform": philox_uniform}
