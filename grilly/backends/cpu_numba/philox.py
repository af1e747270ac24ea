"""CPU kernel: philox_blocks, the Philox4x32-10 words of m consecutive 64-bit block counters in
one parallel Numba loop (the array layer's composition takes some fifty namespace passes)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .pool import pool

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF


@njit(parallel=True, cache=True, nogil=True)
def _blocks(out, clo, chi, k0, k1):
    m = out.shape[1]
    for i in prange(m):
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
        out[0, i] = np.uint32(c0)
        out[1, i] = np.uint32(c1)
        out[2, i] = np.uint32(c2)
        out[3, i] = np.uint32(c3)


def philox_blocks(m: int, counter: int, key: int) -> np.ndarray:
    """(4, m) uint32 words of block counters counter .. counter + m - 1 under ``key``."""
    out = pool.empty((4, m), np.dtype(np.uint32))
    _blocks(out, counter & _MASK, counter >> 32, key & _MASK, key >> 32)
    return out


KERNELS: dict = {"philox_blocks": philox_blocks}
