"""Counter-based random numbers (Philox4x32-10), identical on every backend.

A ``Generator`` holds a 64-bit key (the seed) and a 64-bit block counter. Each call draws the
blocks ``counter .. counter + m - 1`` (four uint32 words each), computed with namespace
integer ops on the target device, and advances the counter by ``m``: the same seed and the
same sequence of calls give the same words, and so the same uniform, integer, bernoulli and
permutation results, on every device. ``normal`` and ``poisson`` go through log/sqrt/cos/exp,
so they match across devices up to each device's rounding of those functions.

NumPy's names are here too: ``default_rng(seed)`` (a ``Generator``) with ``random``,
``standard_normal``, ``exponential``, ``choice`` and ``shuffle``, ``size=`` for ``shape=``, and
the legacy module functions ``rand``, ``randn``, ``randint``, ``random_sample``, ... The numbers
are grilly's Philox streams, not NumPy's bit streams.
"""
from __future__ import annotations

import math
import os
import threading

from ..array.array import Array
from . import _poisson
from .philox import philox4x32
from ..array.core import normalize_axis, normalize_shape
from ..array import dispatch as _dispatch
from ..array import dtypes as _dtypes
from ..array import random_bits

__all__ = ["Generator", "bernoulli", "choice", "default_generator", "default_rng", "exponential",
           "get_state", "integers", "keep_scale", "normal", "permutation", "philox4x32",
           "poisson", "rand", "randint", "randn", "random", "random_raw", "random_sample",
           "seed", "set_state", "shuffle", "standard_normal", "uniform"]


def _ns():
    return _dispatch.ns


def _size(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _float_dtype(dtype, op: str):
    ns = _ns()
    d = ns.float32 if dtype is None else _dtypes.as_dtype(dtype, op)   # (NumPy's too)
    if d not in (ns.float16, ns.float32, ns.float64, ns.bfloat16):
        raise TypeError(f"{op}: dtype must be a real floating dtype, got {getattr(d, 'name', d)}")
    return d


# a draw reads and advances a generator's counter as one step (threads sharing a generator, as
# the module functions' default_generator, get disjoint blocks), and a seed or state is set
# whole; the block count is computed before, so nothing runs while it is held
_COUNTER = threading.Lock()


def _alias(value, default, alt, op: str, name: str, alt_name: str):
    """``value``, or NumPy's spelling ``alt`` of the same argument (``size`` for ``shape``,
    ``loc``/``scale`` for ``mean``/``std``) where that is given; TypeError for both."""
    if alt is None:
        return value
    if value != default:
        raise TypeError(f"{op}: give {name} or {alt_name}, not both")
    return alt


def _no_out(op: str, out) -> None:
    if out is not None:
        raise TypeError(f"{op}: out= is not supported (grilly returns a new array)")


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
        # (bfloat16: random_bits.philox_dropout rounds the float32 multiplier once)
        d = _float_dtype(dtype, "keep_scale")
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
    def uniform(self, low: float = 0.0, high: float = 1.0, shape=(), *, size=None, dtype=None,
                device=None):
        """Uniform floats in [low, high) (``size`` is NumPy's name for ``shape``)."""
        shape = _alias(shape, (), size, "uniform", "shape", "size")
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

    def normal(self, mean: float = 0.0, std: float = 1.0, shape=(), *, loc=None, scale=None,
               size=None, dtype=None, device=None):
        """Normal floats (Box-Muller over pairs of uniforms, computed in float64 for float64
        and in float32 otherwise); ``loc``, ``scale``, ``size`` are NumPy's names."""
        ns = _ns()
        mean = _alias(mean, 0.0, loc, "normal", "mean", "loc")
        std = _alias(std, 1.0, scale, "normal", "std", "scale")
        shape = _alias(shape, (), size, "normal", "shape", "size")
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

    def integers(self, low: int, high: int | None = None, shape=(), *, size=None, dtype=None,
                 endpoint: bool = False, device=None):
        """Integers in [low, high) (or [0, low) with one bound; ``endpoint=True`` includes
        high): the high word of a 32x32 multiply, so the bias is below range/2**32; ranges must
        fit in 32 bits."""
        ns = _ns()
        shape = _alias(shape, (), size, "integers", "shape", "size")
        if high is None:
            low, high = 0, low
        if endpoint:
            if high < low:
                raise ValueError(f"integers: high ({high}) must be >= low ({low})")
            high += 1
        if high <= low:
            raise ValueError(f"integers: high ({high}) must be > low ({low})")
        r = high - low
        if r > 2 ** 32:
            raise ValueError(f"integers: the range high - low must be at most 2**32, got {r}")
        d = ns.int64 if dtype is None else _dtypes.as_dtype(dtype, "integers")
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

    def poisson(self, lam=1.0, shape=None, *, size=None, dtype=None, device=None):
        """Poisson draws of mean ``lam`` (a number in [0, 2**52] or an Array of rates: its shape,
        broadcast to ``shape`` (``size``) if given, and its device); int64 unless ``dtype`` says
        otherwise. An Array's invalid rates (negative, nan, above 2**52) give nan, or -1 in an
        integer dtype (the values are not read back to raise)."""
        ns = _ns()
        shape = _alias(shape, None, size, "poisson", "shape", "size")
        d = ns.int64 if dtype is None else _dtypes.as_dtype(dtype, "poisson")
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

    def permutation(self, x, axis: int = 0, *, device=None):
        """A random permutation of ``range(x)`` (an int) or of ``x`` along ``axis`` (an Array)."""
        ns = _ns()
        if isinstance(x, Array):
            if x.ndim == 0:
                raise ValueError("permutation: needs an array of at least one dimension")
            axis = normalize_axis(axis, x.ndim, "permutation")
            perm = self.permutation(x.shape[axis], device=x.device)
            return ns.take(x, perm, axis=axis)
        n = int(x)
        if n < 0:
            raise ValueError(f"permutation: n must be >= 0, got {n}")
        keys = self.random_raw(2 * n, device=device)
        # 64-bit keys, so ties (which a stable sort would break by position) are rarer than 2**-40
        k = (ns.astype(keys[0::2], ns.uint64) << 32) | ns.astype(keys[1::2], ns.uint64)
        return ns.astype(ns.argsort(k), ns.int64)

    # ---- NumPy's Generator methods -------------------------------------------------------------
    def random(self, size=None, dtype=None, out=None, *, device=None):
        """Uniform floats in [0, 1) of shape ``size`` (NumPy's Generator.random; float32 unless
        ``dtype`` says otherwise)."""
        _no_out("random", out)
        return self.uniform(0.0, 1.0, () if size is None else size,
                            dtype=_float_dtype(dtype, "random"), device=device)

    def standard_normal(self, size=None, dtype=None, out=None, *, device=None):
        """Normal floats of mean 0 and standard deviation 1 of shape ``size``."""
        _no_out("standard_normal", out)
        return self.normal(0.0, 1.0, () if size is None else size,
                           dtype=_float_dtype(dtype, "standard_normal"), device=device)

    def exponential(self, scale: float = 1.0, size=None, *, dtype=None, device=None):
        """Exponential floats of mean ``scale``: -log(1 - u) scale, computed in the output's
        precision (float64 for float64, float32 otherwise)."""
        ns = _ns()
        d = _float_dtype(dtype, "exponential")
        if not scale >= 0:
            raise ValueError(f"exponential: scale must be >= 0, got {scale}")
        cd = ns.float64 if d is ns.float64 else ns.float32
        u = self._unit(() if size is None else size, cd, device, "exponential")
        e = -ns.log1p(-u) * scale   # 1 - u in (0, 1]: the log is finite
        return e if cd is d else ns.astype(e, d)

    def choice(self, a, size=None, replace: bool = True, p=None, axis: int = 0,
               shuffle: bool = True, *, device=None):
        """``size`` draws from ``range(a)`` (an int) or from ``a``'s entries along ``axis``,
        with probabilities ``p`` (uniform when None), with or without replacement (NumPy's
        Generator.choice; ``shuffle`` is accepted: the order is always random)."""
        ns = _ns()
        pop = None
        if isinstance(a, Array) or isinstance(a, (list, tuple)):
            pop = a if isinstance(a, Array) else ns.asarray(a, device=device)
            if pop.ndim == 0:
                raise ValueError("choice: a must be an int or an array of at least one dimension")
            axis = normalize_axis(axis, pop.ndim, "choice")
            n, dev = pop.shape[axis], pop.device
        elif isinstance(a, bool) or not hasattr(a, "__index__"):
            raise TypeError(f"choice: a must be an int or an array, got {type(a).__name__}")
        else:
            n, dev = int(a.__index__()), _device(device)
            if n < 0:
                raise ValueError(f"choice: a must be a positive integer, got {n}")
        shape = normalize_shape(() if size is None else size, "choice")
        k = _size(shape)
        if n == 0 and k:
            raise ValueError("choice: a must be a positive integer (or a non-empty array) "
                             "unless no samples are taken")
        if not replace and k > n:
            raise ValueError(f"choice: cannot take a larger sample ({k}) than the population "
                             f"({n}) when replace=False")
        if k == 0:
            idx = ns.zeros((0,), dtype=ns.int64, device=dev)
        elif p is None:
            idx = (self.integers(0, n, (k,), device=dev) if replace
                   else self.permutation(n, device=dev)[:k])
        else:
            idx = self._choice_p(p, n, k, replace, dev)
        if pop is None:
            return ns.reshape(idx, shape)
        out = ns.take(pop, idx, axis=axis)
        return ns.reshape(out, pop.shape[:axis] + shape + pop.shape[axis + 1:])

    def _choice_p(self, p, n: int, k: int, replace: bool, dev):
        """``k`` indices drawn with probabilities ``p`` (checked as NumPy checks them, from one
        host read): with replacement by inverse CDF (a float64 uniform scaled by the total,
        searched in the cumulative sum); without, by the exponential race (the k smallest of
        E_i / p_i, E_i ~ Exp(1) independent), whose order has the law of NumPy's successive
        draws."""
        ns = _ns()
        p = ns.asarray(p, dtype=ns.float64 if not isinstance(p, Array) or p.dtype.kind != "f"
                       else p.dtype, device=dev)
        if p.ndim != 1:
            raise ValueError(f"choice: p must be 1-dimensional, got shape {p.shape}")
        if p.shape[0] != n:
            raise ValueError(f"choice: a and p must have the same size, got {n} and {p.shape[0]}")
        eps = _dtypes.finfo(p.dtype).eps
        p64 = ns.astype(p, ns.float64)
        pos = p64 > 0
        stats = ns.stack([ns.astype(ns.any(ns.isnan(p64)), ns.float64),
                          ns.astype(ns.any(p64 < 0), ns.float64), ns.sum(p64),
                          ns.astype(ns.count_nonzero(pos), ns.float64),
                          ns.astype(ns.max(ns.where(pos, ns.arange(n, device=dev), -1)),
                                    ns.float64)]).tolist()   # one read for every check
        nan, neg, total, nonzero, last = stats
        if nan:
            raise ValueError("choice: probabilities p contain NaN")
        if neg:
            raise ValueError("choice: probabilities p are not non-negative")
        if abs(total - 1.0) > max(math.sqrt(eps), math.sqrt(2.0 ** -52)):
            raise ValueError(f"choice: probabilities p do not sum to 1 (sum {total})")
        if not replace and k > nonzero:
            raise ValueError(f"choice: fewer non-zero entries in p ({int(nonzero)}) than size "
                             f"({k}) with replace=False")
        if replace:
            cdf = ns.cumulative_sum(p64)
            u = self._unit((k,), ns.float64, dev, "choice") * cdf[-1]
            # side right: an entry of probability 0 (a flat step) is never found; a u that
            # rounds up to the total would find n, so the last positive entry bounds it
            return ns.minimum(ns.searchsorted(cdf, u, side="right"), int(last))
        e = self.exponential(1.0, (n,), dtype=ns.float64, device=dev)
        keys = ns.where(pos, e / ns.where(pos, p64, 1.0), math.inf)   # p = 0: never drawn
        return ns.argsort(keys)[:k]

    def shuffle(self, x, axis: int = 0) -> None:
        """Permute ``x`` along ``axis`` in place (NumPy's shuffle)."""
        ns = _ns()
        if not isinstance(x, Array):
            raise TypeError(f"shuffle: x must be a grilly Array (it is shuffled in place), got "
                            f"{type(x).__name__}")
        if x.ndim == 0:
            raise TypeError("shuffle: x must have at least one dimension")
        axis = normalize_axis(axis, x.ndim, "shuffle")
        perm = self.permutation(x.shape[axis], device=x.device)
        x[...] = ns.take(x, perm, axis=axis)   # take makes a new array: no overlapping read


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


def uniform(low: float = 0.0, high: float = 1.0, shape=(), *, size=None, dtype=None,
            device=None):
    """Uniform floats in [low, high) from the default generator."""
    return default_generator.uniform(low, high, shape, size=size, dtype=dtype, device=device)


def keep_scale(shape, p: float, scale: float, *, dtype=None, device=None):
    """Dropout's multiplier (``scale`` where a uniform draw is >= p, else 0) from the default
    generator."""
    return default_generator.keep_scale(shape, p, scale, dtype=dtype, device=device)


def normal(mean: float = 0.0, std: float = 1.0, shape=(), *, loc=None, scale=None, size=None,
           dtype=None, device=None):
    """Normal floats from the default generator."""
    return default_generator.normal(mean, std, shape, loc=loc, scale=scale, size=size,
                                    dtype=dtype, device=device)


def integers(low: int, high: int | None = None, shape=(), *, size=None, dtype=None,
             endpoint: bool = False, device=None):
    """Integers in [low, high) from the default generator."""
    return default_generator.integers(low, high, shape, size=size, dtype=dtype,
                                      endpoint=endpoint, device=device)


def bernoulli(p=0.5, shape=None, *, dtype=None, device=None):
    """Bernoulli draws from the default generator."""
    return default_generator.bernoulli(p, shape, dtype=dtype, device=device)


def poisson(lam=1.0, shape=None, *, size=None, dtype=None, device=None):
    """Poisson draws from the default generator."""
    return default_generator.poisson(lam, shape, size=size, dtype=dtype, device=device)


def permutation(x, *, device=None):
    """A random permutation from the default generator."""
    return default_generator.permutation(x, device=device)


# ---- NumPy's names: numpy.random's module functions and default_rng ------------------------------
def default_rng(seed=None) -> Generator:
    """A new Generator keyed by ``seed`` (an int in [0, 2**64)); fresh OS entropy when None;
    a Generator is returned as it is (NumPy's default_rng)."""
    if isinstance(seed, Generator):
        return seed
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little")
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise TypeError(f"default_rng: seed must be an int or None, got {type(seed).__name__}")
    seed = int(seed.__index__())
    if not 0 <= seed < 2 ** 64:
        raise ValueError(f"default_rng: seed must be in [0, 2**64), got {seed}")
    return Generator(seed)


def random(size=None, *, dtype=None, device=None):
    """Uniform floats in [0, 1) from the default generator (numpy.random.random)."""
    return default_generator.random(size, dtype, device=device)


random_sample = random


def rand(*dims, dtype=None, device=None):
    """Uniform floats in [0, 1) of shape ``dims`` (numpy.random.rand(2, 3))."""
    return default_generator.random(normalize_shape(dims, "rand"), dtype, device=device)


def randn(*dims, dtype=None, device=None):
    """Standard normal floats of shape ``dims`` (numpy.random.randn(2, 3))."""
    return default_generator.standard_normal(normalize_shape(dims, "randn"), dtype,
                                             device=device)


def randint(low: int, high: int | None = None, size=None, dtype=None, *, device=None):
    """Integers in [low, high) (or [0, low)) from the default generator (numpy.random.randint)."""
    return default_generator.integers(low, high, () if size is None else size, dtype=dtype,
                                      device=device)


def standard_normal(size=None, *, dtype=None, device=None):
    """Standard normal floats from the default generator."""
    return default_generator.standard_normal(size, dtype, device=device)


def exponential(scale: float = 1.0, size=None, *, dtype=None, device=None):
    """Exponential floats of mean ``scale`` from the default generator."""
    return default_generator.exponential(scale, size, dtype=dtype, device=device)


def choice(a, size=None, replace: bool = True, p=None, *, device=None):
    """Draws from ``range(a)`` or ``a`` from the default generator (numpy.random.choice)."""
    return default_generator.choice(a, size, replace, p, device=device)


def shuffle(x) -> None:
    """Permute ``x`` along its first axis in place, from the default generator."""
    default_generator.shuffle(x)
