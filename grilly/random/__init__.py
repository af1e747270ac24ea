"""Counter-based random numbers (Philox4x32-10), identical on every backend.

A ``Generator`` holds a 64-bit key (the seed) and a 64-bit block counter. Each call draws the
blocks ``counter .. counter + m - 1`` (four uint32 words each), computed with namespace
integer ops on the target device, and advances the counter by ``m``: the same seed and the
same sequence of calls give the same words, and so the same uniform, integer, bernoulli and
permutation results, on every device. ``normal`` and ``poisson`` go through log/sqrt/cos/exp,
so they match across devices up to each device's rounding of those functions.
"""
from __future__ import annotations

import math
import threading

from ..array.array import Array
from . import _poisson
from .philox import philox4x32
from ..array.core import normalize_shape
from ..array import dispatch as _dispatch
from ..array import random_bits

__all__ = ["Generator", "bernoulli", "default_generator", "get_state", "integers", "keep_scale",
           "normal", "permutation", "philox4x32", "poisson", "random_raw", "seed", "set_state",
           "uniform"]


def _ns():
    return _dispatch.ns


def _size(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _float_dtype(dtype, op: str):
    ns = _ns()
    d = ns.float32 if dtype is None else dtype
    if d not in (ns.float16, ns.float32, ns.float64, ns.bfloat16):
        raise TypeError(f"{op}: dtype must be a real floating dtype, got {getattr(d, 'name', d)}")
    return d


# a draw reads and advances a generator's counter as one step (threads sharing a generator, as
# the module functions' default_generator, get disjoint blocks), and a seed or state is set
# whole; the block count is computed before, so nothing runs while it is held
_COUNTER = threading.Lock()


def _device(device):
    from ..array.core import resolve_device

    return resolve_device(device)


def _check_seed(seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"Generator.manual_seed: seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed < 2 ** 64:
        raise ValueError(f"Generator.manual_seed: seed must be in [0, 2**64), got {seed}")


class Generator:
    """A Philox4x32-10 stream: ``seed`` is the key, the counter advances with every draw."""

    def __init__(self, seed: int = 0) -> None:
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> "Generator":
        """Restart the stream with key ``seed`` (an int in [0, 2**64))."""
        _check_seed(seed)
        with _COUNTER:
            self._key = seed
            self._counter = 0
        return self

    @property
    def seed(self) -> int:
        return self._key

    def get_state(self) -> tuple:
        """(seed, counter): everything that determines the next numbers."""
        with _COUNTER:
            return (self._key, self._counter)

    def set_state(self, state) -> None:
        """Restore a state from ``get_state``."""
        key, counter = state
        key, counter = int(key), int(counter)
        _check_seed(key)
        with _COUNTER:
            self._key, self._counter = key, counter

    def _take(self, blocks: int) -> tuple:
        """(key, first block) of a draw of ``blocks`` blocks; the counter moves past them."""
        with _COUNTER:
            start = self._counter
            self._counter = (start + blocks) % 2 ** 64
            return self._key, start

    # ---- raw words ----------------------------------------------------------------------------
    def _blocks(self, m: int, device):
        dev = _device(device)
        if m and random_bits.takes_counter_array(dev, "philox_blocks"):
            # the counter as a host op, the kernel traced: a replay (grilly.jit) draws fresh
            # numbers with the kernel captured
            return random_bits.philox_blocks(m, self._counter_array(m, dev), None, dev)
        # a host op: a traced graph (grilly.jit) draws fresh numbers on every replay
        return _dispatch.host_op(self._draw, m, device)

    def _counter_array(self, blocks: int, dev):
        """The counter of a draw of ``blocks`` blocks (advanced past it) as a counter_array,
        made by a host op (a replay of a traced graph makes it anew; the kernel that reads it
        is captured)."""
        return _dispatch.host_op(self._advance, blocks, dev)

    def _advance(self, blocks: int, dev):
        key, start = self._take(blocks)
        return random_bits.counter_array(start, key, dev)

    def _draw(self, m: int, device):
        key, start = self._take(m)
        return random_bits.philox_blocks(m, start, key, _device(device))

    def random_raw(self, n: int, *, device=None):
        """``n`` uint32 words of the stream (1-D)."""
        ns = _ns()
        words = self._blocks(-(-n // 4), device)   # (4, m): block i's words in column i
        return ns.reshape(ns.matrix_transpose(words), (-1,))[:n]

    def _unit(self, shape, dtype, device, op):
        """Uniform floats in [0, 1) of ``dtype``: 24 random bits for float32 and below, 53 for
        float64 (exact, so identical on every device)."""
        shape = normalize_shape(shape, op)
        n, dev, ns = _size(shape), _device(device), _ns()
        wide = ns.float64 if dtype is ns.float64 else ns.float32
        if n and random_bits.takes_counter_array(dev, "philox_uniform", wide):
            ctr = self._counter_array(random_bits.uniform_blocks(n, dtype), dev)
            return ns.reshape(random_bits.philox_uniform(n, ctr, None, dtype, dev), shape)
        # a host op, like _blocks: a traced graph draws fresh numbers on every replay
        u = _dispatch.host_op(self._draw_unit, n, dtype, device)
        return ns.reshape(u, shape)

    def _draw_unit(self, n: int, dtype, device):
        # the words of random_raw(n) (float64: random_raw(2 n)), so the same counter advance
        key, start = self._take(random_bits.uniform_blocks(n, dtype))
        return random_bits.philox_uniform(n, start, key, dtype, _device(device))

    def keep_scale(self, shape, p: float, scale: float, *, dtype=None, device=None):
        """Dropout's multiplier: ``scale`` where ``uniform(shape=shape, dtype=dtype)`` would give
        u >= p, else 0, from the same draw (the same counter advance), in one kernel."""
        d = _float_dtype(dtype, "keep_scale")
        if d is _ns().bfloat16:   # the float32 mask (same draw), its scale rounded once
            return _ns().astype(self.keep_scale(shape, p, scale, device=device), d)
        random_bits._check_real("keep_scale", "p", p)
        random_bits._check_real("keep_scale", "scale", scale)
        shape = normalize_shape(shape, "keep_scale")
        n, dev = _size(shape), _device(device)
        if n and random_bits.takes_counter_array(dev, "philox_dropout", d):
            ctr = self._counter_array(random_bits.uniform_blocks(n, d), dev)
            m = random_bits.philox_dropout(n, ctr, None, float(p), float(scale), d, dev)
            return _ns().reshape(m, shape)
        # a host op, like _unit: a traced graph draws a fresh mask on every replay
        m = _dispatch.host_op(self._draw_keep_scale, n, float(p), float(scale), d, device)
        return _ns().reshape(m, shape)

    def _draw_keep_scale(self, n: int, p: float, scale: float, dtype, device):
        # _draw_unit's blocks and advance, so every mask is the one uniform() >= p gave
        key, start = self._take(random_bits.uniform_blocks(n, dtype))
        return random_bits.philox_dropout(n, start, key, p, scale, dtype, _device(device))

    # ---- distributions -----------------------------------------------------------------------
    def uniform(self, low: float = 0.0, high: float = 1.0, shape=(), *, dtype=None,
                device=None):
        """Uniform floats in [low, high)."""
        d = _float_dtype(dtype, "uniform")
        if d is _ns().bfloat16:
            raise TypeError("uniform: bfloat16 would round values up to high; draw float32 "
                            "and astype")
        if not high >= low:
            raise ValueError(f"uniform: high ({high}) must be >= low ({low})")
        u = self._unit(shape, d, device, "uniform")
        if low == 0.0 and high == 1.0:
            return u
        return u * (high - low) + low

    def normal(self, mean: float = 0.0, std: float = 1.0, shape=(), *, dtype=None,
               device=None):
        """Normal floats (Box-Muller over pairs of uniforms, computed in float64 for float64
        and in float32 otherwise)."""
        ns = _ns()
        d = _float_dtype(dtype, "normal")
        if std < 0:
            raise ValueError(f"normal: std must be >= 0, got {std}")
        shape = normalize_shape(shape, "normal")
        n = _size(shape)
        dev = _device(device)
        cd = ns.float64 if d is ns.float64 else ns.float32
        m = -(-n // 2)
        u = self._unit((2, m), cd, dev, "normal")
        r = ns.sqrt(-2.0 * ns.log1p(-u[0]))  # 1 - u in (0, 1]: log never sees 0
        t = (2.0 * math.pi) * u[1]
        z = ns.reshape(ns.stack([r * ns.cos(t), r * ns.sin(t)], axis=1), (-1,))[:n]
        z = ns.reshape(z, shape) * std + mean
        return z if cd is d else ns.astype(z, d)

    def integers(self, low: int, high: int | None = None, shape=(), *, dtype=None,
                 device=None):
        """Integers in [low, high) (or [0, low) with one bound): the high word of a 32x32
        multiply, so the bias is below range/2**32; ranges must fit in 32 bits."""
        ns = _ns()
        if high is None:
            low, high = 0, low
        if high <= low:
            raise ValueError(f"integers: high ({high}) must be > low ({low})")
        r = high - low
        if r > 2 ** 32:
            raise ValueError(f"integers: the range high - low must be at most 2**32, got {r}")
        d = ns.int64 if dtype is None else dtype
        if d.kind not in "iu":
            raise TypeError(f"integers: dtype must be an integer dtype, got {d.name}")
        shape = normalize_shape(shape, "integers")
        w = self.random_raw(_size(shape), device=device)
        v = (ns.astype(w, ns.uint64) * r) >> 32
        out = ns.astype(v, ns.int64) + low
        return ns.reshape(out if d is ns.int64 else ns.astype(out, d), shape)

    def bernoulli(self, p=0.5, shape=None, *, dtype=None, device=None):
        """1 with probability ``p`` (a float or an Array of probabilities), else 0."""
        ns = _ns()
        d = _float_dtype(dtype, "bernoulli")
        if isinstance(p, Array):
            shape = p.shape if shape is None else shape
            device = p.device if device is None else device
        elif not 0.0 <= p <= 1.0:
            raise ValueError(f"bernoulli: p must be in [0, 1], got {p}")
        u = self._unit(() if shape is None else shape, ns.float64 if d is ns.float64
                       else ns.float32, device, "bernoulli")
        return ns.astype(u < p, d)

    def poisson(self, lam=1.0, shape=None, *, dtype=None, device=None):
        """Poisson draws of mean ``lam`` (a number in [0, 2**52] or an Array of rates: its shape,
        broadcast to ``shape`` if given, and its device); int64 unless ``dtype`` says otherwise.
        An Array's invalid rates (negative, nan, above 2**52) give nan, or -1 in an integer
        dtype (the values are not read back to raise)."""
        ns = _ns()
        d = ns.int64 if dtype is None else dtype
        if d.kind not in "iuf":
            raise TypeError(f"poisson: dtype must be an integer or real floating dtype, got "
                            f"{d.name}")
        if isinstance(lam, Array):
            if lam.dtype.kind not in "iuf":
                raise TypeError(f"poisson: lam must have a real dtype, got {lam.dtype.name}")
            shape = lam.shape if shape is None else shape
            device = lam.device if device is None else device
            lam = lam.detach() if lam.requires_grad else lam
        elif isinstance(lam, bool) or not isinstance(lam, (int, float)):
            raise TypeError(f"poisson: lam must be a real number or an Array, got "
                            f"{type(lam).__name__}")
        elif not 0.0 <= lam <= _poisson.LAM_MAX:
            raise ValueError(f"poisson: lam must be in [0, 2**52], got {lam}")
        shape = normalize_shape(() if shape is None else shape, "poisson")
        dev = _device(device)
        rates = ns.broadcast_to(ns.astype(ns.asarray(lam, device=dev), ns.float64), shape)
        # a number's method is known here: the other one is not drawn or run
        known = not isinstance(lam, Array)
        x = _poisson.sample(rates, lambda s: self._unit(s, ns.float64, dev, "poisson"),
                            small=not known or lam < _poisson.SMALL,
                            large=not known or lam >= _poisson.SMALL)
        if d.kind == "f":
            return x if d is ns.float64 else ns.astype(x, d)
        return ns.astype(ns.where(ns.isnan(x), -1.0, x), d)

    def permutation(self, x, *, device=None):
        """A random permutation of ``range(x)`` (an int) or of ``x``'s first axis (an Array)."""
        ns = _ns()
        if isinstance(x, Array):
            if x.ndim == 0:
                raise ValueError("permutation: needs an array of at least one dimension")
            perm = self.permutation(x.shape[0], device=x.device)
            return ns.take(x, perm, axis=0)
        n = int(x)
        if n < 0:
            raise ValueError(f"permutation: n must be >= 0, got {n}")
        keys = self.random_raw(2 * n, device=device)
        # 64-bit keys, so ties (which a stable sort would break by position) are rarer than 2**-40
        k = (ns.astype(keys[0::2], ns.uint64) << 32) | ns.astype(keys[1::2], ns.uint64)
        return ns.astype(ns.argsort(k), ns.int64)


default_generator = Generator(0)


def seed(n: int) -> None:
    """Reseed the default generator."""
    default_generator.manual_seed(n)


def get_state() -> tuple:
    """The default generator's state."""
    return default_generator.get_state()


def set_state(state) -> None:
    """Restore the default generator's state."""
    default_generator.set_state(state)


def random_raw(n: int, *, device=None):
    """Raw uint32 words from the default generator."""
    return default_generator.random_raw(n, device=device)


def uniform(low: float = 0.0, high: float = 1.0, shape=(), *, dtype=None, device=None):
    """Uniform floats in [low, high) from the default generator."""
    return default_generator.uniform(low, high, shape, dtype=dtype, device=device)


def keep_scale(shape, p: float, scale: float, *, dtype=None, device=None):
    """Dropout's multiplier (``scale`` where a uniform draw is >= p, else 0) from the default
    generator."""
    return default_generator.keep_scale(shape, p, scale, dtype=dtype, device=device)


def normal(mean: float = 0.0, std: float = 1.0, shape=(), *, dtype=None, device=None):
    """Normal floats from the default generator."""
    return default_generator.normal(mean, std, shape, dtype=dtype, device=device)


def integers(low: int, high: int | None = None, shape=(), *, dtype=None, device=None):
    """Integers in [low, high) from the default generator."""
    return default_generator.integers(low, high, shape, dtype=dtype, device=device)


def bernoulli(p=0.5, shape=None, *, dtype=None, device=None):
    """Bernoulli draws from the default generator."""
    return default_generator.bernoulli(p, shape, dtype=dtype, device=device)


def poisson(lam=1.0, shape=None, *, dtype=None, device=None):
    """Poisson draws from the default generator."""
    return default_generator.poisson(lam, shape, dtype=dtype, device=device)


def permutation(x, *, device=None):
    """A random permutation from the default generator."""
    return default_generator.permutation(x, device=device)
