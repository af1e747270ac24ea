"""Philox4x32-10 (Salmon et al., SC'11) computed with namespace integer ops, so every backend
produces the same words for the same key and counter."""
from __future__ import annotations

from ..array import dispatch as _dispatch

__all__ = ["philox4x32"]

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK16 = 0xFFFF


def _ns():
    return _dispatch.ns


def _mulhilo_u64(ns, m: int, x):
    p = ns.astype(x, ns.uint64) * m
    return ns.astype(p >> 32, ns.uint32), ns.astype(p & 0xFFFFFFFF, ns.uint32)


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
    ns = _ns()
    if use_u64 is None:
        dev = c0.device
        use_u64 = dev.backend.supports_dtype(dev, ns.uint64)
    mulhilo = _mulhilo_u64 if use_u64 else _mulhilo_u32
    k0 &= 0xFFFFFFFF
    k1 &= 0xFFFFFFFF
    for _ in range(rounds):
        hi0, lo0 = mulhilo(ns, M0, c0)
        hi1, lo1 = mulhilo(ns, M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + W0) & 0xFFFFFFFF
        k1 = (k1 + W1) & 0xFFFFFFFF
    return c0, c1, c2, c3
