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


def _args(out, counter, key) -> tuple:
    """(spec, buffers, offsets, push-constant words) of a draw into ``out``: the counter's and
    the key's 32-bit halves as push constants, or (``counter`` a (4,) uint32 buffer of them,
    the array layer's counter_array; ``key`` None) read from binding 1."""
    if isinstance(counter, int):
        words = (counter & _MASK, counter >> 32, key & _MASK, key >> 32)
        return (0, 1, 0), [out], (out.offset,), tuple(_i32(w) for w in words)
    return (0, 1, 1), [out, counter], (out.offset, counter.offset), (0, 0, 0, 0)


def philox_blocks(ctx, m: int, counter, key):
    """(4, m) uint32 words of block counters counter .. counter + m - 1 under ``key``."""
    out = new_buffer(ctx, (4, m), _dt.uint32)
    spec, bufs, offs, words = _args(out, counter, key)
    dispatch(ctx, "philox", spec, bufs, m, m, offs, words)
    return out


def philox_uniform(ctx, n: int, counter, key, dtype):
    """(n,) float32 or float64 uniforms in [0, 1) from the words of blocks counter, ... (the
    array layer passes float64 only where the device holds it)."""
    out = new_buffer(ctx, (n,), dtype)
    blocks = -(-n // 2) if dtype.name == "float64" else -(-n // 4)
    spec, bufs, offs, words = _args(out, counter, key)
    dispatch(ctx, f"philox_uniform_{dtype.name}", spec, bufs, n, blocks, offs, words)
    return out


def philox_dropout(ctx, n: int, counter, key, p: float, scale: float, dtype):
    """(n,) float16, bfloat16, float32 or float64: ``scale`` where philox_uniform's u >= p,
    else 0, in ``dtype`` (float16: u and p rounded to float16, compared as integers in the
    shader; bfloat16: float32's multiplier rounded once)."""
    out = new_buffer(ctx, (n,), dtype)
    f64 = dtype.name == "float64"
    blocks = -(-n // 2) if f64 else -(-n // 4)
    if dtype.name == "float16":
        words = float16_dropout_args(p, scale)
    else:
        # p and scale rounded to dtype as the full kernel rounds a Python scalar, then passed
        # as their bits (a double as two words, low first)
        host = np.float32 if dtype.name == "bfloat16" else dtype.np
        words = np.array([p, scale], np.float64).astype(host).view(np.uint32)
    spec, bufs, offs, cw = _args(out, counter, key)
    dispatch(ctx, f"philox_dropout_{dtype.name}", spec, bufs, n, blocks, offs, cw,
             (tuple(_i32(int(b)) for b in words),))
    return out


# no buffer argument: the device table passes their context
philox_blocks.takes_ctx = philox_uniform.takes_ctx = philox_dropout.takes_ctx = True
philox_dropout.takes_float16 = True   # (the contract's float16 comparison, UNIFORM 16)
philox_dropout.takes_bfloat16 = True   # (float32's multiplier rounded once, BF16OUT)
# the counter and key may come as a (4,) uint32 buffer (random_bits.counter_array)
philox_blocks.takes_counter_array = philox_uniform.takes_counter_array = True
philox_dropout.takes_counter_array = True
KERNELS: dict = {"philox_blocks": philox_blocks, "philox_dropout": philox_dropout,
                 "philox_uniform": philox_uniform}
