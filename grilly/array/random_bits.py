"""Philox4x32-10 (Salmon et al., SC'11): the counter-based random words grilly.random draws
from. ``philox_blocks`` is the contract kernel (family "random"): the four words of each of m
consecutive 64-bit block counters under a 64-bit key, one dispatch on a device that has the
kernel. The default composition computes them with namespace integer ops (``philox4x32``), so
every backend produces the same words for the same key and counter.
"""
from __future__ import annotations

from . import core
from . import dispatch as _dispatch
from . import dtypes as dt

__all__ = ["philox_blocks"]

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK16 = 0xFFFF
MASK32 = 0xFFFFFFFF


def _mulhilo_u64(ns, m: int, x):
    p = ns.astype(x, ns.uint64) * m
    return ns.astype(p >> 32, ns.uint32), ns.astype(p & MASK32, ns.uint32)


def _mulhilo_u32(ns, m: int, x):
    """High and low words of m*x from 16-bit limbs (for devices without 64-bit integers)."""
    mh, ml = m >> 16, m & MASK16
    xh, xl = x >> 16, x & MASK16
    p0, p1, p2 = xl * ml, xl * mh, xh * ml
    mid = (p0 >> 16) + (p1 & MASK16) + (p2 & MASK16)
    hi = xh * mh + (p1 >> 16) + (p2 >> 16) + (mid >> 16)
    return hi, x * m


def philox4x32(c0, c1, c2, c3, k0: int, k1: int, *, use_u64: bool | None = None,
               rounds: int = 10):
    """Ten Philox rounds over uint32 counter arrays ``c0..c3`` with key ``(k0, k1)``; returns
    the four uint32 output arrays."""
    ns = _dispatch.ns
    if use_u64 is None:
        dev = c0.device
        use_u64 = dev.backend.supports_dtype(dev, ns.uint64)
    mulhilo = _mulhilo_u64 if use_u64 else _mulhilo_u32
    k0 &= MASK32
    k1 &= MASK32
    for _ in range(rounds):
        hi0, lo0 = mulhilo(ns, M0, c0)
        hi1, lo1 = mulhilo(ns, M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + W0) & MASK32
        k1 = (k1 + W1) & MASK32
    return c0, c1, c2, c3


def composed_blocks(device, m: int, counter: int, key: int):
    """philox_blocks from namespace ops: counters as uint32 word arrays, ten rounds."""
    ns = _dispatch.ns
    lo, hi = counter & MASK32, counter >> 32
    i = ns.arange(m, dtype=ns.uint32, device=device)
    c0 = i + lo
    # the block counter is 64-bit: carry into the high word when the low one wraps
    c1 = ns.astype(c0 < lo, ns.uint32) + (hi & MASK32) if lo else ns.full(
        (m,), hi & MASK32, dtype=ns.uint32, device=device)
    z = ns.zeros((m,), dtype=ns.uint32, device=device)
    return ns.stack(philox4x32(c0, c1, z, z, key & MASK32, key >> 32), axis=0)


def philox_blocks(m: int, counter: int, key: int, device):
    """The (4, m) uint32 Philox4x32-10 words of block counters counter .. counter + m - 1
    (mod 2^64; the counter's low and high words are words 0 and 1 of the input block, words 2
    and 3 are zero) under the 64-bit ``key``."""
    op = "philox_blocks"
    for name, v, top in (("m", m, 2 ** 62), ("counter", counter, 2 ** 64), ("key", key, 2 ** 64)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < top:
            raise ValueError(f"{op}: {name} must be an int in [0, {top}), got {v!r}")
    dev = core.resolve_device(device, op)
    if m == 0:
        return core.wrap(core.full_buf(dev, (4, 0), 0, dt.uint32), dt.uint32, dev)
    return core.wrap(core.call(dev, op, m, counter, key), dt.uint32, dev)


_dispatch.export(globals(), "random_bits.")
