"""Vulkan kernels: philox_blocks, Philox4x32-10 words of m consecutive 64-bit block counters in
one dispatch, philox_uniform, uniform floats made from those words in the same dispatch, and
philox_dropout, those uniforms as a dropout multiplier in the same dispatch
(shaders/random/philox.comp; the compositions take some fifty, some six and some eight)."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..contract import float16_dropout_args
from .kernels import new_buffer
from .reductions import dispatch

_MASK = 0xFFFFFFFF


def _i32(v: int) -> int:
    """A uint32 bit pattern as the int32 a push constant holds."""
    return v - (1 << 32) if v >= 1 << 31 else v


def _words(counter: int, key: int) -> tuple:
    """The counter's and the key's 32-bit halves as push constants."""
    return tuple(_i32(w) for w in (counter & _MASK, counter >> 32, key & _MASK, key >> 32))


def philox_blocks(ctx, m: int, counter: int, key: int):
    """(4, m) uint32 words of block counters counter .. counter + m - 1 under ``key``."""
    out = new_buffer(ctx, (4, m), _dt.uint32)
    dispatch(ctx, "philox", (0, 1), [out], m, m, (out.offset,), _words(counter, key))
    return out


def philox_uniform(ctx, n: int, counter: int, key: int, dtype):
    """(n,) float32 or float64 uniforms in [0, 1) from the words of blocks counter, ... (the
    array layer passes float64 only where the device holds it)."""
    out = new_buffer(ctx, (n,), dtype)
    blocks = -(-n // 2) if dtype.name == "float64" else -(-n // 4)
    dispatch(ctx, f"philox_uniform_{dtype.name}", (0, 1), [out], n, blocks, (out.offset,),
             _words(counter, key))
    return out


def philox_dropout(ctx, n: int, counter: int, key: int, p: float, scale: float, dtype):
    """(n,) float16, float32 or float64: ``scale`` where philox_uniform's u >= p, else 0, in
    ``dtype`` (float16: u and p rounded to float16, compared as integers in the shader)."""
    out = new_buffer(ctx, (n,), dtype)
    f64 = dtype.name == "float64"
    blocks = -(-n // 2) if f64 else -(-n // 4)
    if dtype.name == "float16":
        words = float16_dropout_args(p, scale)
    else:
        # p and scale rounded to dtype as the full kernel rounds a Python scalar, then passed
        # as their bits (a double as two words, low first)
        words = np.array([p, scale], np.float64).astype(dtype.np).view(np.uint32)
    dispatch(ctx, f"philox_dropout_{dtype.name}", (0, 1), [out], n, blocks, (out.offset,),
             _words(counter, key), (tuple(_i32(int(b)) for b in words),))
    return out


# no buffer argument: the device table passes their context
philox_blocks.takes_ctx = philox_uniform.takes_ctx = philox_dropout.takes_ctx = True
philox_dropout.takes_float16 = True   # (the contract's float16 comparison, UNIFORM 16)
KERNELS: dict = {"philox_blocks": philox_blocks, "philox_dropout": philox_dropout,
                 "philox_uniform": philox_uniform}
