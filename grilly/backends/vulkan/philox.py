"""Vulkan kernel: philox_blocks, Philox4x32-10 words of m consecutive 64-bit block counters in
one dispatch (shaders/random/philox.comp; the composition takes some fifty)."""
from __future__ import annotations

from .. import dtypes as _dt
from .kernels import new_buffer
from .reductions import dispatch


def _i32(v: int) -> int:
    """A uint32 bit pattern as the int32 a push constant holds."""
    return v - (1 << 32) if v >= 1 << 31 else v


def philox_blocks(ctx, m: int, counter: int, key: int):
    """(4, m) uint32 words of block counters counter .. counter + m - 1 under ``key``."""
    out = new_buffer(ctx, (4, m), _dt.uint32)
    mask = 0xFFFFFFFF
    words = (counter & mask, counter >> 32, key & mask, key >> 32)
    dispatch(ctx, "philox", (0, 1), [out], m, m, (out.offset,), tuple(_i32(w) for w in words))
    return out


philox_blocks.takes_ctx = True   # no buffer argument: the device table passes its context
KERNELS: dict = {"philox_blocks": philox_blocks}
