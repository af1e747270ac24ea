"""Philox4x32-10 (Salmon et al., SC'11): the counter-based random words grilly.random draws
from. ``philox_blocks`` is the contract kernel (family "random"): the four words of each of m
consecutive 64-bit block counters under a 64-bit key, one dispatch on a device that has the
kernel. The default composition computes them with namespace integer ops (``philox4x32``), so
every backend produces the same words for the same key and counter. ``philox_uniform`` (also a
contract kernel) turns the words into uniform floats in [0, 1); its composition is
``philox_blocks`` followed by namespace shifts, casts and multiplies. ``philox_dropout`` (a
contract kernel too) turns those uniforms into a dropout multiplier, ``scale`` where u >= p and
0 elsewhere; its composition is ``philox_uniform``, a comparison and a where.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import core
from . import dispatch as _dispatch
from . import dtypes as dt
from .array import Array

__all__ = ["counter_array", "philox_blocks", "philox_dropout", "philox_uniform"]

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


def _check_ints(op: str, n_name: str, n: int, counter, key) -> None:
    ints = ((n_name, n, 2 ** 62),) if isinstance(counter, Array) else (
        (n_name, n, 2 ** 62), ("counter", counter, 2 ** 64), ("key", key, 2 ** 64))
    for name, v, top in ints:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < top:
            raise ValueError(f"{op}: {name} must be an int in [0, {top}), got {v!r}")


def takes_counter_array(device, op: str, dtype=None) -> bool:
    """Whether ``device``'s kernel for ``op`` (philox_blocks, philox_uniform, philox_dropout of
    ``dtype``) takes its counter and key as a counter_array."""
    k = device.kernels.get(op)
    if not getattr(k, "takes_counter_array", False):
        return False
    return dtype is not dt.float16 or op != "philox_dropout" or getattr(k, "takes_float16",
                                                                        False)


def counter_array(counter: int, key: int, device) -> Array:
    """The (4,) uint32 array a draw's kernel may read in place of its counter and key (their
    32-bit halves, low first; pass it as ``counter`` with key None, where takes_counter_array):
    made on the host, so that grilly.jit can make it anew for every replay."""
    _check_ints("counter_array", "n", 0, counter, key)
    dev = core.resolve_device(device, "counter_array")
    h = np.array([counter & MASK32, counter >> 32, key & MASK32, key >> 32], np.uint32)
    return core.wrap(dev.kernels["from_host"](h, dt.uint32), dt.uint32, dev)


def _check_counter(op: str, counter, key, dev, dtype=None) -> None:
    """A counter_array ``counter`` (key None) only for a kernel that takes one."""
    if not isinstance(counter, Array):
        return
    if not takes_counter_array(dev, op, dtype):
        raise TypeError(f"{op}: {dev}'s kernel does not take the counter as an array; pass ints")
    if counter.shape != (4,) or counter._dtype is not dt.uint32 or counter._device is not dev \
            or key is not None:
        raise ValueError(f"{op}: counter must be a counter_array ((4,) uint32 on {dev}) with "
                         f"key None, got {counter._dtype.name} {counter.shape} on "
                         f"{counter._device} and key {key!r}")


def philox_blocks(m: int, counter: int, key: int, device):
    """The (4, m) uint32 Philox4x32-10 words of block counters counter .. counter + m - 1
    (mod 2^64; the counter's low and high words are words 0 and 1 of the input block, words 2
    and 3 are zero) under the 64-bit ``key``."""
    op = "philox_blocks"
    _check_ints(op, "m", m, counter, key)
    dev = core.resolve_device(device, op)
    _check_counter(op, counter, key, dev)
    if m == 0:
        return core.wrap(core.full_buf(dev, (4, 0), 0, dt.uint32), dt.uint32, dev)
    return core.wrap(core.call(dev, op, m, counter, key), dt.uint32, dev)


def uniform_blocks(n: int, dtype: dt.DType) -> int:
    """The Philox blocks ``n`` uniforms of ``dtype`` use: one word each (two for float64), four
    words a block."""
    return -(-(2 * n if dtype is dt.float64 else n) // 4)


def composed_uniform(device, n: int, counter: int, key: int, dtype: dt.DType):
    """philox_uniform from philox_blocks and namespace ops: the words in stream order, then
    24 bits (float32) or 53 bits from a pair of words (float64) scaled into [0, 1)."""
    ns = _dispatch.ns
    words = 2 * n if dtype is dt.float64 else n
    w = philox_blocks(uniform_blocks(n, dtype), counter, key, device)   # block i in column i
    w = ns.reshape(ns.matrix_transpose(w), (-1,))[:words]
    if dtype is dt.float64:
        a = ns.astype(w[0::2] >> 5, ns.float64)
        b = ns.astype(w[1::2] >> 6, ns.float64)
        return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)
    return ns.astype(ns.astype(w >> 8, ns.float32) * (1.0 / 16777216.0), dtype)


_UNIFORM_DTYPES = (dt.float16, dt.bfloat16, dt.float32, dt.float64)


def _check_draw(op: str, n: int, counter: int, key: int, dtype, device):
    """The arguments every float draw takes, checked; the device resolved."""
    _check_ints(op, "n", n, counter, key)
    if not any(dtype is d for d in _UNIFORM_DTYPES):
        raise TypeError(f"{op}: dtype must be a real floating dtype, got "
                        f"{getattr(dtype, 'name', dtype)!r}")
    dev = core.resolve_device(device, op)
    core.check_device_dtype(dev, dtype, op)
    _check_counter(op, counter, key, dev, dtype)
    return dev


def philox_uniform(n: int, counter: int, key: int, dtype: dt.DType, device):
    """``n`` uniform floats in [0, 1) of ``dtype`` from the Philox words of blocks counter,
    counter + 1, ... under ``key``: float32 and narrower from one word each, ``(w >> 8) *
    2^-24`` (rounded to float16/bfloat16), float64 from two, ``((w0 >> 5) * 2^26 + (w1 >> 6))
    * 2^-53``; they use ``uniform_blocks(n, dtype)`` blocks."""
    op = "philox_uniform"
    dev = _check_draw(op, n, counter, key, dtype, device)
    if n == 0:
        return core.wrap(core.full_buf(dev, (0,), 0, dtype), dtype, dev)
    # the kernel computes float32 and float64; a narrower float is the float32 values rounded
    # once, which is what the composition does too
    wide = dt.float64 if dtype is dt.float64 else dt.float32
    u = core.wrap(core.call(dev, op, n, counter, key, wide), wide, dev)
    return u if wide is dtype else _dispatch.ns.astype(u, dtype)


def composed_dropout(device, n: int, counter: int, key: int, p: float, scale: float,
                     dtype: dt.DType):
    """philox_dropout from philox_uniform and namespace ops: the ops grilly.nn.functional's
    dropout ran before the kernel, ``where(u >= p, scale, 0)``, p and scale taken as ``dtype``
    by the array API's scalar rules."""
    ns = _dispatch.ns
    keep = philox_uniform(n, counter, key, dtype, device) >= p
    return ns.where(keep, ns.asarray(scale, dtype=dtype, device=device),
                    ns.asarray(0.0, dtype=dtype, device=device))


def _check_real(op: str, name: str, v) -> None:
    # numbers.Real takes Python and NumPy ints and floats; a bool is no probability or scale
    if type(v) is float or type(v) is int:
        return   # the common case, without the ABC's isinstance (microseconds, Python-level)
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}: {name} must be a real number, got {type(v).__name__}")


def philox_dropout(n: int, counter: int, key: int, p: float, scale: float, dtype: dt.DType,
                   device):
    """A dropout multiplier of ``n`` elements of ``dtype``: ``scale`` where ``philox_uniform(n,
    counter, key, dtype)``'s u_k >= p, else 0, with p and scale converted to ``dtype`` as the
    array API converts Python scalars (bfloat16: the float32 multiplier rounded); the same
    blocks as philox_uniform."""
    op = "philox_dropout"
    _check_real(op, "p", p)
    _check_real(op, "scale", scale)
    dev = _check_draw(op, n, counter, key, dtype, device)
    if n == 0:
        return core.wrap(core.full_buf(dev, (0,), 0, dtype), dtype, dev)
    p, scale = float(p), float(scale)
    if dtype is dt.float16:
        # u and p rounded to float16 and compared there: a kernel that declares it does so
        # (contract.float16_dropout_args); the float32 comparison would not, so others compose
        kern = dev.kernels.get(op)
        if kern is None or not getattr(kern, "takes_float16", False):
            return composed_dropout(dev, n, counter, key, p, scale, dtype)
        c = counter._buf if isinstance(counter, Array) else counter
        return core.wrap(kern(n, c, key, p, scale, dtype), dtype, dev)
    # bfloat16 is the float32 result rounded once, as every bfloat16 op computes (the
    # dispatcher does the same once it has seen a bfloat16 dtype, so the result never
    # depends on that): in one pass where the kernel declares takes_bfloat16
    if dtype is dt.bfloat16 and getattr(dev.kernels.get(op), "takes_bfloat16", False):
        return core.wrap(core.call(dev, op, n, counter, key, p, scale, dtype), dtype, dev)
    wide = dt.float64 if dtype is dt.float64 else dt.float32
    m = core.wrap(core.call(dev, op, n, counter, key, p, scale, wide), wide, dev)
    return m if wide is dtype else _dispatch.ns.astype(m, dtype)


_dispatch.export(globals(), "random_bits.")
