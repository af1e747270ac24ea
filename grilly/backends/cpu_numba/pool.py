"""A caching host allocator for large buffers.

Fresh large allocations cost page faults on every first touch (numpy's add of 16M float32
spends two thirds of its time there). Large buffers are carved from recycled raw blocks; a block
is free again when nothing but the pool references it (every numpy view keeps its base alive).
"""
from __future__ import annotations

import os
import sys
import threading

import numpy as np

MIN_BYTES = 1 << 20


def _bucket(n: int) -> int:
    """Round up to a quarter of the enclosing power of two (at most 25% slack)."""
    step = 1 << max(n.bit_length() - 3, 0)
    return -(-n // step) * step


class HostPool:
    """Keeps raw uint8 blocks by size; hands out views of free ones."""

    def __init__(self, limit: int):
        self.limit = limit
        self.blocks: dict[int, list] = {}
        self.held = 0
        # a block is free when only the pool references it; two threads seeing it free at once
        # would share it, so the check and the handing out happen under one lock
        self._lock = threading.Lock()

    def empty(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """An uninitialized array; large ones are carved from a recycled block."""
        n = 1
        for s in shape:
            n *= s
        nbytes = n * dtype.itemsize
        if nbytes < MIN_BYTES:
            return np.empty(shape, dtype)
        with self._lock:
            return self._take(shape, dtype, nbytes)

    def _take(self, shape: tuple, dtype: np.dtype, nbytes: int) -> np.ndarray:
        size = _bucket(nbytes)
        lst = self.blocks.setdefault(size, [])
        for raw in lst:
            if sys.getrefcount(raw) <= 3:  # the list, the loop variable, getrefcount's argument
                return raw[:nbytes].view(dtype).reshape(shape)
        if self.held + size > self.limit:
            self._trim()
        raw = np.empty(size, np.uint8)
        if self.held + size <= self.limit:
            lst.append(raw)
            self.held += size
        return raw[:nbytes].view(dtype).reshape(shape)

    def holds(self, raw: np.ndarray) -> bool:
        """Whether ``raw`` is one of the pool's blocks."""
        lst = self.blocks.get(raw.nbytes)
        return lst is not None and any(b is raw for b in lst)

    def trim(self) -> None:
        """Release every block nobody uses."""
        with self._lock:
            self._trim()

    def _trim(self) -> None:
        for size, lst in self.blocks.items():
            keep = [r for r in lst if sys.getrefcount(r) > 3]
            self.held -= size * (len(lst) - len(keep))
            lst[:] = keep

    def live_bytes(self) -> int:
        """Bytes of pooled blocks in use."""
        with self._lock:
            return sum(size for size, lst in self.blocks.items()
                       for r in lst if sys.getrefcount(r) > 3)


pool = HostPool(int(os.environ.get("GRILLY_CPU_POOL_BYTES", 2 << 30)))
