"""Counter-based random numbers (Philox4x32-10), identical on every backend.

A ``Generator`` holds a 64-bit key (the seed) and a 64-bit block counter. Each call draws the
blocks ``counter .. counter + m - 1`` (four uint32 words each), computed with namespace
integer ops on the target device, and advances the counter by ``m``: the same seed and the
same sequence of calls give the same words, and so the same uniform, integer, bernoulli and
permutation results, on every device. ``normal`` and ``poisson`` go through log/sqrt/cos/exp,
so they match across devices up to each device's rounding of those functions.

NumPy's names are here too: ``default_rng(seed)`` (a ``Generator``) with ``random``,
``standard_normal``, ``exponential``, ``choice`` and ``shuffle``, ``size=`` for ``shape=``, and
the legacy module functions ``rand``, ``randn``, ``randint``, ``random_sample``, ..., and its
laws (``gamma``, ``beta``, ``binomial``, ``multinomial``, ``dirichlet``, ``multivariate_normal``,
...) with parameters that may be arrays, broadcast as NumPy's. The numbers are grilly's Philox
streams, not NumPy's bit streams.
"""
from __future__ import annotations

import math
import os
import threading
import warnings

import numpy as np

from ..array.array import Array
from . import _binomial, _gamma, _hypergeometric, _poisson, _rejection
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


_NONNEG = (lambda v: v >= 0.0, ">= 0")
_POS = (lambda v: v > 0.0, "> 0")
_PROB = (lambda v: (v >= 0.0) & (v <= 1.0), "in [0, 1]")


def _numbers(*values) -> bool:
    """Whether every value is a Python (or NumPy scalar) real number."""
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
               for v in values)


class _Law:
    """A draw's parameters (Python floats or Arrays of the computation's dtype on the draw's
    device), its shape, output dtype, computation dtype and device, and ``bad``: where an
    Array parameter is invalid (those draws become nan, or -1 in an integer dtype)."""

    def __init__(self, values, shape, dtype, cd, device, bad, arrays) -> None:
        self.values, self.shape, self.dtype, self.cd = values, shape, dtype, cd
        self.device, self.bad, self.arrays = device, bad, arrays

    def flag(self, mask) -> None:
        """Mark more invalid elements (an Array of booleans)."""
        self.bad = mask if self.bad is None else self.bad | mask

    def full(self, v):
        """``v`` (a float or an Array) as an Array of the draw's shape and computation dtype."""
        ns = _ns()
        if isinstance(v, Array):
            return ns.broadcast_to(v, self.shape)
        return ns.full(self.shape, v, dtype=self.cd, device=self.device)

    def finish(self, x):
        """``x`` in the output dtype (integer dtypes: rounded down from float64), nan (-1) where
        a parameter is invalid."""
        ns = _ns()
        if self.bad is not None:
            x = ns.where(ns.broadcast_to(self.bad, self.shape), math.nan, x)
        if self.dtype.kind != "f":
            return ns.astype(ns.where(ns.isnan(x), -1.0, x), self.dtype)
        return x if x.dtype is self.dtype else ns.astype(x, self.dtype)


def _law(op: str, shape, dtype, device, /, *, kind: str = "f", follow: bool = True,
         **params) -> _Law:
    """A draw's parameters, NumPy's way: each ``name=(value, check)`` is a number, a sequence
    or NumPy array, or an Array, broadcast together; ``check`` = (predicate, text) or None. A
    number or a host array that fails its check is a ValueError naming ``op`` and the parameter
    (NumPy's); an Array is not read back: its invalid elements give nan. The draws' shape is
    ``shape`` (NumPy's size; the parameters must broadcast to it) or the parameters' broadcast
    shape. ``kind`` "f": a real floating output, float32 unless ``dtype`` says otherwise or
    (``follow``) an Array parameter is float64, computed in float32 or float64; "i": an integer
    output, int64 unless ``dtype`` says otherwise, computed in float64."""
    ns = _ns()
    if kind == "f":
        d = None if dtype is None else _float_dtype(dtype, op)
    else:
        d = ns.int64 if dtype is None else _dtypes.as_dtype(dtype, op)
        if d.kind not in "iu":
            raise TypeError(f"{op}: dtype must be an integer dtype, got {d.name}")
    arrays = [v for v, _ in params.values() if isinstance(v, Array)]
    if d is None:
        d = ns.float64 if follow and any(a.dtype is ns.float64 for a in arrays) else ns.float32
    cd = ns.float64 if (kind != "f" or d is ns.float64) else ns.float32
    dev = _device(device if device is not None or not arrays else arrays[0].device)
    values, shapes, bad, any_array = [], [], None, False
    for name, (v, check) in params.items():
        if isinstance(v, Array):
            if v.dtype.kind not in "iuf":
                raise TypeError(f"{op}: {name} must have a real dtype, got {v.dtype.name}")
            v = v.detach() if v.requires_grad else v
            v = v if v.device is dev else v.to_device(dev)
            v = v if v.dtype is cd else ns.astype(v, cd)
            if check is not None:
                b = ~check[0](v)
                bad = b if bad is None else bad | b
            values.append(v)
            shapes.append(v.shape)
            any_array = True
        elif _numbers(v):
            v = float(v)
            if check is not None and not check[0](v):
                raise ValueError(f"{op}: {name} must be {check[1]}, got {v}")
            values.append(v)
            shapes.append(())
        elif isinstance(v, (list, tuple, np.ndarray)):
            try:
                h = np.asarray(v, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError(f"{op}: {name} must be real numbers, got {v!r}") from None
            if check is not None and not np.all(check[0](h)):
                raise ValueError(f"{op}: {name} must be {check[1]} (every element)")
            values.append(ns.asarray(h, dtype=cd, device=dev))
            shapes.append(h.shape)
            any_array = True
        else:
            raise TypeError(f"{op}: {name} must be a real number or an array, got "
                            f"{type(v).__name__}")
    try:
        pshape = ns.broadcast_shapes(*shapes) if shapes else ()
    except ValueError:
        raise ValueError(f"{op}: the parameters' shapes {tuple(shapes)} do not broadcast "
                         f"together") from None
    if shape is None:
        shape = tuple(pshape)
    else:
        shape = normalize_shape(shape, op)
        try:
            ok = tuple(ns.broadcast_shapes(tuple(pshape), shape)) == shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{op}: the parameters' shape {tuple(pshape)} does not broadcast "
                             f"to size {shape}")
    return _Law(values, shape, d, cd, dev, bad, any_array)


class Generator:
    """A Philox4x32-10 stream: ``seed`` is the key, the counter advances with every draw."""

    def __init__(self, seed: int = 0, *, device=None) -> None:
        # device: torch.Generator(device=...)'s; a grilly stream serves every device (the same
        # numbers on each), so it only names where torch's would live
        self._device_arg = device
        self.manual_seed(seed)

    @property
    def device(self):
        """The device given at construction (the default device if none): torch's g.device."""
        return _device(self._device_arg)

    def initial_seed(self) -> int:
        """The seed (key) of the stream (torch's Generator.initial_seed)."""
        return self._key

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
    def uniform(self, low=0.0, high=1.0, shape=None, *, size=None, dtype=None, device=None):
        """Uniform floats in [low, high) (``size`` is NumPy's name for ``shape``); ``low`` and
        ``high`` may be arrays: the draws take their broadcast shape (see ``_law``)."""
        shape = _alias(shape, None, size, "uniform", "shape", "size")
        if dtype is not None and _float_dtype(dtype, "uniform") is _ns().bfloat16:
            raise TypeError("uniform: bfloat16 would round values up to high; draw float32 "
                            "and astype")
        if _numbers(low, high) and not high >= low:
            raise ValueError(f"uniform: high ({high}) must be >= low ({low})")
        law = _law("uniform", shape, dtype, device, low=(low, None), high=(high, None))
        low, high = law.values
        if law.arrays and not _numbers(low, high):
            law.flag(~(high >= low))   # an array's bounds in the wrong order give nan
        u = self._unit(law.shape, law.dtype, law.device, "uniform")
        if _numbers(low, high) and low == 0.0 and high == 1.0:
            return u
        return law.finish(u * (high - low) + low)

    def normal(self, mean=0.0, std=1.0, shape=None, *, loc=None, scale=None, size=None,
               dtype=None, device=None):
        """Normal floats (Box-Muller over pairs of uniforms, computed in float64 for float64
        and in float32 otherwise); ``loc``, ``scale``, ``size`` are NumPy's names; ``mean`` and
        ``std`` may be arrays: the draws take their broadcast shape (see ``_law``)."""
        ns = _ns()
        mean = _alias(mean, 0.0, loc, "normal", "mean", "loc")
        std = _alias(std, 1.0, scale, "normal", "std", "scale")
        shape = _alias(shape, None, size, "normal", "shape", "size")
        law = _law("normal", shape, dtype, device, mean=(mean, None), std=(std, _NONNEG))
        mean, std = law.values
        n = _size(law.shape)
        cd = ns.float64 if law.dtype is ns.float64 else ns.float32
        m = -(-n // 2)
        u = self._unit((2, m), cd, law.device, "normal")
        r = ns.sqrt(-2.0 * ns.log1p(-u[0]))  # 1 - u in (0, 1]: log never sees 0
        t = (2.0 * math.pi) * u[1]
        z = ns.reshape(ns.stack([r * ns.cos(t), r * ns.sin(t)], axis=1), (-1,))[:n]
        z = ns.reshape(z, law.shape)
        if not (_numbers(mean, std) and mean == 0.0 and std == 1.0):
            z = z * std + mean
        return law.finish(z)

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
        """1 with probability ``p`` (a number in [0, 1], or an array of probabilities: its
        shape, broadcast to ``shape`` if given, and its device; an Array's probabilities
        outside [0, 1] or nan give nan), else 0; float32 unless ``dtype`` says otherwise."""
        ns = _ns()
        law = _law("bernoulli", shape, dtype, device, follow=False, p=(p, _PROB))
        u = self._unit(law.shape, law.cd, law.device, "bernoulli")
        return law.finish(ns.astype(u < law.values[0], law.cd))

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
        x = self._poisson_of(rates, dev, None if isinstance(lam, Array) else lam)
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

    def exponential(self, scale=1.0, size=None, *, dtype=None, device=None):
        """Exponential floats of mean ``scale`` (a number or an array): -log(1 - u) scale,
        computed in the output's precision (float64 for float64, float32 otherwise)."""
        law = _law("exponential", size, dtype, device, scale=(scale, _NONNEG))
        return law.finish(self._exp1(law) * law.values[0])

    # ---- the laws NumPy's Generator adds (parameters as _law takes them) --------------------
    def _open_unit(self, law: _Law, shape=None):
        """Uniforms in (0, 1): the draw's 0 (one value of the grid's 2**24 or 2**53) taken as
        half a step, so logs and logits stay finite."""
        ns = _ns()
        u = self._unit(law.shape if shape is None else shape, law.cd, law.device, "random")
        return ns.where(u == 0.0, 2.0 ** -25 if law.cd is ns.float32 else 2.0 ** -54, u)

    def _exp1(self, law: _Law):
        """Exp(1) draws of the law's shape in its computation dtype."""
        u = self._unit(law.shape, law.cd, law.device, "exponential")
        return -_ns().log1p(-u)   # 1 - u in (0, 1]: the log is finite

    def _normal1(self, law: _Law):
        """N(0, 1) draws of the law's shape in its computation dtype."""
        return self.normal(0.0, 1.0, law.shape, dtype=law.cd, device=law.device)

    def _log_gamma(self, law: _Law, a):
        """log Gamma(a, 1) draws of the law's shape (grilly.random._gamma: Marsaglia-Tsang)."""
        a = law.full(a)
        return _gamma.log_standard_gamma(
            a, lambda: self._normal1(law),
            lambda: self._unit(law.shape, law.cd, law.device, "gamma"),
            lambda: self._open_unit(law))

    def standard_exponential(self, size=None, dtype=None, method: str = "zig", out=None, *,
                             device=None):
        """Exp(1) floats (NumPy's; ``method`` 'zig' or 'inv' both draw by inversion)."""
        _no_out("standard_exponential", out)
        if method not in ("zig", "inv"):
            raise ValueError(f"standard_exponential: method must be 'zig' or 'inv', got "
                             f"{method!r}")
        return self.exponential(1.0, size, dtype=dtype, device=device)

    def standard_gamma(self, shape, size=None, dtype=None, out=None, *, device=None):
        """Gamma(shape, 1) floats (``shape`` is the law's shape parameter, as NumPy's; the draws'
        shape is ``size``): Marsaglia and Tsang's method (grilly.random._gamma)."""
        _no_out("standard_gamma", out)
        law = _law("standard_gamma", size, dtype, device, shape=(shape, _NONNEG))
        return law.finish(_ns().exp(self._log_gamma(law, law.values[0])))

    def gamma(self, shape, scale=1.0, size=None, *, dtype=None, device=None):
        """Gamma floats of shape ``shape`` and scale ``scale`` (mean shape * scale)."""
        law = _law("gamma", size, dtype, device, shape=(shape, _NONNEG), scale=(scale, _NONNEG))
        a, scale = law.values
        return law.finish(_ns().exp(self._log_gamma(law, a)) * scale)

    def beta(self, a, b, size=None, *, dtype=None, device=None):
        """Beta(a, b) floats: X / (X + Y) of two gamma draws, from their logs (so tiny a and b
        give 0 or 1, not nan)."""
        law = _law("beta", size, dtype, device, a=(a, _POS), b=(b, _POS))
        lx = self._log_gamma(law, law.values[0])
        ly = self._log_gamma(law, law.values[1])
        return law.finish(1.0 / (1.0 + _ns().exp(ly - lx)))

    def dirichlet(self, alpha, size=None, *, dtype=None, device=None):
        """Dirichlet(alpha) floats of shape ``size + (k,)`` (``alpha`` 1-D of length k, each
        >= 0; an alpha of 0 gives 0): normalized gamma draws, from their logs."""
        ns = _ns()
        if _numbers(alpha) or getattr(alpha, "ndim", np.ndim(alpha)) != 1:
            raise ValueError(f"dirichlet: alpha must be 1-dimensional, got shape "
                             f"{tuple(getattr(alpha, 'shape', np.shape(alpha)))}")
        k = alpha.shape[0] if isinstance(alpha, Array) else len(alpha)
        batch = () if size is None else normalize_shape(size, "dirichlet")
        law = _law("dirichlet", batch + (k,), dtype, device, alpha=(alpha, _NONNEG))
        if k == 0:
            return law.finish(ns.zeros(law.shape, dtype=law.cd, device=law.device))
        lg = self._log_gamma(law, law.values[0])
        top = ns.max(lg, axis=-1, keepdims=True)
        g = ns.exp(lg - ns.where(ns.isfinite(top), top, 0.0))
        return law.finish(g / ns.sum(g, axis=-1, keepdims=True))

    def chisquare(self, df, size=None, *, dtype=None, device=None):
        """Chi-square floats with ``df`` degrees of freedom (2 Gamma(df / 2))."""
        law = _law("chisquare", size, dtype, device, df=(df, _POS))
        return law.finish(2.0 * _ns().exp(self._log_gamma(law, 0.5 * law.values[0])))

    def standard_t(self, df, size=None, *, dtype=None, device=None):
        """Student's t floats with ``df`` degrees of freedom: N / sqrt(chi2(df) / df)."""
        ns = _ns()
        law = _law("standard_t", size, dtype, device, df=(df, _POS))
        df = law.values[0]
        z = self._normal1(law)
        lg = self._log_gamma(law, 0.5 * df)
        return law.finish(z * ns.exp(-0.5 * lg) * ns.sqrt(0.5 * law.full(df)))

    def binomial(self, n, p, size=None, *, dtype=None, device=None):
        """Binomial(n, p) counts, int64 unless ``dtype`` says otherwise (grilly.random.
        _binomial: inversion for n min(p, 1-p) < 10, Hoermann's BTRS above, in float64; n is
        rounded down to an integer, as NumPy's)."""
        ns = _ns()
        law = _law("binomial", size, dtype, device, kind="i", n=(n, _NONNEG), p=(p, _PROB))
        n, p = law.values
        kw = {}
        if _numbers(n, p):   # the method is known: the other one is neither drawn nor run
            small = math.floor(n) * min(p, 1.0 - p) < _binomial.SMALL
            kw = {"small": small, "large": not small}
        x = _binomial.sample(ns.floor(law.full(n)), law.full(p),
                             lambda s: self._unit(s, ns.float64, law.device, "binomial"), **kw)
        return law.finish(x)

    def multinomial(self, n, pvals, size=None, *, dtype=None, device=None):
        """Multinomial counts of ``n`` trials over the categories of ``pvals``' last axis
        (NumPy's: the last probability is what the others leave), shape ``size + (k,)`` (or
        the broadcast of n's and pvals' batch shapes): one binomial per category, each of
        the trials left with its probability among the categories left."""
        ns = _ns()
        if _numbers(pvals) or getattr(pvals, "ndim", np.ndim(pvals)) < 1:
            raise ValueError("multinomial: pvals must have at least one dimension")
        k = (pvals.shape if hasattr(pvals, "shape") else np.shape(pvals))[-1]
        if k == 0:
            raise ValueError("multinomial: pvals must have at least one category")
        if not isinstance(pvals, Array):
            h = np.asarray(pvals, dtype=np.float64)
            if float(np.max(np.sum(h[..., :-1], axis=-1))) > 1.0 + 1e-12:
                raise ValueError("multinomial: sum(pvals[:-1]) must be <= 1")
        shape = None if size is None else normalize_shape(size, "multinomial") + (k,)
        # n's batch axes line up with pvals' (its last axis is the categories')
        nv = (n if _numbers(n) else n[..., None] if isinstance(n, Array)
              else np.asarray(n, dtype=np.float64)[..., None])
        law = _law("multinomial", shape, dtype, device, kind="i", n=(nv, _NONNEG),
                   pvals=(pvals, _PROB))
        left = ns.floor(law.full(law.values[0])[..., :1])
        pv = law.full(law.values[1])
        mass = ns.ones(left.shape, dtype=ns.float64, device=law.device)
        counts = []
        for i in range(k - 1):
            pi = pv[..., i:i + 1]
            # the category's share of the mass left (clipped: rounding may take it past 1)
            q = ns.where(mass > 0.0, ns.clip(pi / ns.where(mass > 0.0, mass, 1.0), 0.0, 1.0),
                         0.0)
            x = _binomial.sample(left, q, lambda s: self._unit(s, ns.float64, law.device,
                                                               "multinomial"))
            counts.append(x)
            left = left - x
            mass = mass - pi
        counts.append(left)
        if law.bad is not None:   # an invalid probability spoils its whole row
            law.bad = ns.any(ns.broadcast_to(law.bad, law.shape), axis=-1, keepdims=True)
        return law.finish(ns.concat(counts, axis=-1))

    def f(self, dfnum, dfden, size=None, *, dtype=None, device=None):
        """F (Fisher-Snedecor) floats: (chi2(dfnum) / dfnum) / (chi2(dfden) / dfden), from the
        two gammas' logs."""
        law = _law("f", size, dtype, device, dfnum=(dfnum, _POS), dfden=(dfden, _POS))
        d1, d2 = law.values
        lx = self._log_gamma(law, 0.5 * d1)
        ly = self._log_gamma(law, 0.5 * d2)
        return law.finish(_ns().exp(lx - ly) * (d2 / d1))

    def _poisson_of(self, rate, device, known=None):
        """Poisson draws (float64) of float64 rates ``rate`` on ``device``; ``known``: the rate
        as a number where it is one (then only its method is drawn and run)."""
        ns = _ns()
        kw = {} if known is None else {"small": known < _poisson.SMALL,
                                       "large": known >= _poisson.SMALL}
        return _poisson.sample(rate, lambda s: self._unit(s, ns.float64, device, "poisson"), **kw)

    def _log_noncentral_half_chi2(self, law: _Law, df, nonc):
        """log of Gamma(df / 2 + K) draws, K ~ Poisson(nonc / 2): half a noncentral chi-square
        (df, nonc), the Poisson mixture of central ones."""
        ns = _ns()
        rate = ns.astype(law.full(nonc), ns.float64) * 0.5
        k = ns.astype(self._poisson_of(rate, law.device, 0.5 * nonc if _numbers(nonc) else None),
                      law.cd)
        return self._log_gamma(law, 0.5 * law.full(df) + k)

    def noncentral_chisquare(self, df, nonc, size=None, *, dtype=None, device=None):
        """Noncentral chi-square floats (``df`` > 0 degrees of freedom, noncentrality ``nonc``
        >= 0): 2 Gamma(df / 2 + K), K ~ Poisson(nonc / 2)."""
        law = _law("noncentral_chisquare", size, dtype, device, df=(df, _POS),
                   nonc=(nonc, _NONNEG))
        df, nonc = law.values
        return law.finish(2.0 * _ns().exp(self._log_noncentral_half_chi2(law, df, nonc)))

    def noncentral_f(self, dfnum, dfden, nonc, size=None, *, dtype=None, device=None):
        """Noncentral F floats: (noncentral_chisquare(dfnum, nonc) / dfnum) /
        (chi2(dfden) / dfden)."""
        law = _law("noncentral_f", size, dtype, device, dfnum=(dfnum, _POS),
                   dfden=(dfden, _POS), nonc=(nonc, _NONNEG))
        d1, d2, nonc = law.values
        lx = self._log_noncentral_half_chi2(law, d1, nonc)
        ly = self._log_gamma(law, 0.5 * d2)
        return law.finish(_ns().exp(lx - ly) * (d2 / d1))

    def negative_binomial(self, n, p, size=None, *, dtype=None, device=None):
        """The number of failures before the ``n``-th success of Bernoulli(p) trials (``n`` > 0,
        real, as NumPy's), int64 unless ``dtype`` says otherwise: Poisson(Gamma(n, (1-p)/p)).
        A Poisson rate above 2**52 (n too large or p too small) gives -1 for an Array's
        parameters; for numbers it is NumPy's ValueError."""
        ns = _ns()
        law = _law("negative_binomial", size, dtype, device, kind="i", n=(n, _POS),
                   p=(p, (lambda v: (v > 0.0) & (v <= 1.0), "in (0, 1]")))
        n, p = law.values
        if _numbers(n, p):
            scale = (1.0 - p) / p
            # NumPy's guard: the gamma's mean plus 10 standard deviations must stay in range
            if (n + 10.0 * math.sqrt(n)) * scale > _poisson.LAM_MAX:
                raise ValueError("negative_binomial: n too large or p too small (the Poisson "
                                 "rate would exceed 2**52)")
        pf = law.full(p)
        rate = ns.exp(self._log_gamma(law, n)) * ((1.0 - pf) / pf)
        return law.finish(self._poisson_of(rate, law.device))

    def hypergeometric(self, ngood, nbad, nsample, size=None, *, dtype=None, device=None):
        """The number of good items in ``nsample`` drawn without replacement from ``ngood``
        good and ``nbad`` bad ones (each rounded down to an integer, as NumPy's; good and bad
        below 1e9), int64 unless ``dtype`` says otherwise (grilly.random._hypergeometric:
        inversion for a mean below 10, Stadlober's HRUA above, in float64)."""
        ns = _ns()
        big = (lambda v: (v >= 0.0) & (v < _hypergeometric.MAX), ">= 0 and < 1e9")
        if _numbers(ngood, nbad, nsample):   # NumPy's order and messages
            if ngood < 0:
                raise ValueError("hypergeometric: ngood < 0")
            if nbad < 0:
                raise ValueError("hypergeometric: nbad < 0")
            if nsample < 0:
                raise ValueError("hypergeometric: nsample < 0")
        law = _law("hypergeometric", size, dtype, device, kind="i", ngood=(ngood, big),
                   nbad=(nbad, big), nsample=(nsample, _NONNEG))
        g, b, n = (ns.floor(law.full(v)) for v in law.values)
        host = [v for v in (ngood, nbad, nsample) if not isinstance(v, Array)]
        if len(host) == 3:   # numbers or host sequences: checked here, as NumPy checks them
            hg, hb, hn = (np.floor(np.asarray(v, dtype=np.float64)) for v in host)
            if np.any(hn > hg + hb):
                raise ValueError("hypergeometric: ngood + nbad < nsample")
        kw = {}
        if _numbers(ngood, nbad, nsample):   # the method is known: the other is neither run
            gv, bv, nv = (math.floor(v) for v in (ngood, nbad, nsample))
            m = min(nv, gv + bv - nv)
            small = m * min(gv, bv) < _hypergeometric.SMALL * max(gv + bv, 1)
            kw = {"small": small, "large": not small}
        x = _hypergeometric.sample(g, b, n, lambda s: self._unit(s, ns.float64, law.device,
                                                                 "hypergeometric"), **kw)
        return law.finish(x)

    def multivariate_hypergeometric(self, colors, nsample, size=None, method: str = "marginals",
                                    *, dtype=None, device=None):
        """Counts of each colour in ``nsample`` items drawn without replacement from ``colors``
        (a 1-D sequence of non-negative integers), shape ``size + (len(colors),)``: one
        hypergeometric per colour against the colours after it (``method`` 'count' and
        'marginals' give the same law)."""
        ns = _ns()
        if method not in ("count", "marginals"):
            raise ValueError(f"multivariate_hypergeometric: method must be 'count' or "
                             f"'marginals', got {method!r}")
        msg = ("multivariate_hypergeometric: colors must be a one-dimensional sequence of "
               "non-negative integers")
        if isinstance(colors, Array):
            colors = colors.tolist()
        try:
            h = np.asarray(colors)
        except (TypeError, ValueError):
            raise ValueError(msg) from None
        if h.ndim != 1 or (h.size and (h.dtype.kind not in "iu" or h.min() < 0)):
            raise ValueError(msg)
        if isinstance(nsample, bool) or not hasattr(nsample, "__index__"):
            raise TypeError(f"multivariate_hypergeometric: nsample must be an int, got "
                            f"{type(nsample).__name__}")
        nsample = int(nsample.__index__())
        if nsample < 0:
            raise ValueError("multivariate_hypergeometric: nsample must be non-negative")
        cs = [int(c) for c in h]
        if nsample > sum(cs):
            raise ValueError(f"multivariate_hypergeometric: nsample ({nsample}) > sum(colors) "
                             f"({sum(cs)})")
        d = ns.int64 if dtype is None else _dtypes.as_dtype(dtype, "multivariate_hypergeometric")
        if d.kind not in "iu":
            raise TypeError(f"multivariate_hypergeometric: dtype must be an integer dtype, got "
                            f"{d.name}")
        batch = () if size is None else normalize_shape(size, "multivariate_hypergeometric")
        dev = _device(device)
        left = ns.full(batch, float(nsample), dtype=ns.float64, device=dev)
        counts, rest = [], sum(cs)
        for c in cs[:-1]:
            rest -= c
            # the colour's count among the items left, against the colours after it
            # the sample left is at most nsample: a mean below 10 there needs no HRUA
            small = (min(nsample, (c + rest) / 2) * min(c, rest)
                     < _hypergeometric.SMALL * max(c + rest, 1))
            x = _hypergeometric.sample(
                ns.full(batch, float(c), dtype=ns.float64, device=dev),
                ns.full(batch, float(rest), dtype=ns.float64, device=dev), left,
                lambda s: self._unit(s, ns.float64, dev, "multivariate_hypergeometric"),
                large=not small)
            counts.append(x)
            left = left - x
        if cs:
            counts.append(left)
        out = (ns.stack(counts, axis=-1) if counts
               else ns.zeros(batch + (0,), dtype=ns.float64, device=dev))
        return ns.astype(out, d)

    def geometric(self, p, size=None, *, dtype=None, device=None):
        """The number of Bernoulli(p) trials up to the first success (>= 1), int64 unless
        ``dtype`` says otherwise: 1 + floor(log(1 - u) / log(1 - p))."""
        ns = _ns()
        law = _law("geometric", size, dtype, device, kind="i",
                   p=(p, (lambda v: (v > 0.0) & (v <= 1.0), "in (0, 1]")))
        u = self._unit(law.shape, ns.float64, law.device, "geometric")
        return law.finish(1.0 + ns.floor(ns.log1p(-u) / ns.log1p(-law.full(law.values[0]))))

    def power(self, a, size=None, *, dtype=None, device=None):
        """Floats in [0, 1] of density a x**(a - 1) (``a`` > 0): u ** (1 / a), u in (0, 1)."""
        law = _law("power", size, dtype, device, a=(a, _POS))
        return law.finish(_ns().exp(_ns().log(self._open_unit(law)) / law.values[0]))

    def wald(self, mean, scale, size=None, *, dtype=None, device=None):
        """Wald (inverse Gaussian) floats of ``mean`` > 0 and ``scale`` > 0 (Michael, Schucany
        and Haas' transformation of a chi-square(1), as NumPy's)."""
        ns = _ns()
        law = _law("wald", size, dtype, device, mean=(mean, _POS), scale=(scale, _POS))
        mu, lam = (law.full(v) for v in law.values)
        y = mu * ns.square(self._normal1(law))
        x = mu + (mu / (2.0 * lam)) * (y - ns.sqrt(4.0 * lam * y + y * y))
        u = self._unit(law.shape, law.cd, law.device, "wald")
        return law.finish(ns.where(u <= mu / (mu + x), x, mu * mu / x))

    def vonmises(self, mu, kappa, size=None, *, dtype=None, device=None):
        """von Mises floats on [-pi, pi] of mode ``mu`` and concentration ``kappa`` >= 0
        (grilly.random._rejection: Best and Fisher's method)."""
        law = _law("vonmises", size, dtype, device, mu=(mu, None), kappa=(kappa, _NONNEG))
        mu, kappa = (law.full(v) for v in law.values)
        x = _rejection.vonmises(
            mu, kappa, lambda s: self._unit(s, law.cd, law.device, "vonmises"),
            lambda: self._normal1(law))
        return law.finish(x)

    def zipf(self, a, size=None, *, dtype=None, device=None):
        """Zipf integers >= 1 of exponent ``a`` > 1, int64 unless ``dtype`` says otherwise
        (grilly.random._rejection: Devroye's rejection, NumPy's method; -1 where no candidate
        was accepted: only for a very close to 1)."""
        law = _law("zipf", size, dtype, device, kind="i", a=(a, (lambda v: v > 1.0, "> 1")))
        x, found = _rejection.zipf(law.full(law.values[0]),
                                   lambda s: self._unit(s, _ns().float64, law.device, "zipf"))
        law.flag(~found)
        return law.finish(x)

    def logseries(self, p, size=None, *, dtype=None, device=None):
        """Logarithmic-series integers >= 1 of ``p`` in [0, 1), int64 unless ``dtype`` says
        otherwise (Kemp's second accelerated generator, LK, as NumPy's)."""
        ns = _ns()
        law = _law("logseries", size, dtype, device, kind="i",
                   p=(p, (lambda v: (v >= 0.0) & (v < 1.0), "in [0, 1)")))
        p = law.full(law.values[0])
        v = self._unit(law.shape, ns.float64, law.device, "logseries")
        u = self._unit(law.shape, ns.float64, law.device, "logseries")
        q = -ns.expm1(ns.log1p(-p) * u)
        # (v = 0: the smallest draw; log(v) stays finite)
        many = ns.floor(1.0 + ns.log(ns.where(v == 0.0, 2.0 ** -54, v))
                        / ns.log(ns.where(q > 0.0, q, 0.5)))
        x = ns.where(v >= p, 1.0, ns.where(v <= q * q, many, ns.where(v >= q, 1.0, 2.0)))
        return law.finish(x)

    def laplace(self, loc=0.0, scale=1.0, size=None, *, dtype=None, device=None):
        """Laplace floats (double exponential): loc +- scale Exp(1), the sign from a second
        uniform."""
        ns = _ns()
        law = _law("laplace", size, dtype, device, loc=(loc, None), scale=(scale, _NONNEG))
        loc, scale = law.values
        e = self._exp1(law)
        s = self._unit(law.shape, law.cd, law.device, "laplace")
        return law.finish(ns.where(s < 0.5, e, -e) * scale + loc)

    def logistic(self, loc=0.0, scale=1.0, size=None, *, dtype=None, device=None):
        """Logistic floats: loc + scale log(u / (1 - u)), u in (0, 1)."""
        ns = _ns()
        law = _law("logistic", size, dtype, device, loc=(loc, None), scale=(scale, _NONNEG))
        loc, scale = law.values
        u = self._open_unit(law)
        return law.finish((ns.log(u) - ns.log1p(-u)) * scale + loc)

    def lognormal(self, mean=0.0, sigma=1.0, size=None, *, dtype=None, device=None):
        """exp of Normal(mean, sigma) floats."""
        law = _law("lognormal", size, dtype, device, mean=(mean, None), sigma=(sigma, _NONNEG))
        mean, sigma = law.values
        return law.finish(_ns().exp(self._normal1(law) * sigma + mean))

    def gumbel(self, loc=0.0, scale=1.0, size=None, *, dtype=None, device=None):
        """Gumbel floats: loc - scale log(Exp(1))."""
        law = _law("gumbel", size, dtype, device, loc=(loc, None), scale=(scale, _NONNEG))
        loc, scale = law.values
        e = -_ns().log(self._open_unit(law))   # Exp(1) > 0, so its log is finite
        return law.finish(loc - scale * _ns().log(e))

    def weibull(self, a, size=None, *, dtype=None, device=None):
        """Weibull floats of shape ``a`` (scale 1): Exp(1) ** (1 / a); a = 0 gives 0."""
        ns = _ns()
        law = _law("weibull", size, dtype, device, a=(a, _NONNEG))
        a = law.full(law.values[0])
        e = -ns.log(self._open_unit(law))
        x = ns.exp(ns.log(e) / ns.where(a == 0.0, 1.0, a))
        return law.finish(ns.where(a == 0.0, 0.0, x))

    def pareto(self, a, size=None, *, dtype=None, device=None):
        """Pareto II (Lomax) floats of shape ``a``, as NumPy's: exp(Exp(1) / a) - 1."""
        law = _law("pareto", size, dtype, device, a=(a, _POS))
        return law.finish(_ns().expm1(self._exp1(law) / law.values[0]))

    def rayleigh(self, scale=1.0, size=None, *, dtype=None, device=None):
        """Rayleigh floats: scale sqrt(2 Exp(1))."""
        law = _law("rayleigh", size, dtype, device, scale=(scale, _NONNEG))
        return law.finish(_ns().sqrt(2.0 * self._exp1(law)) * law.values[0])

    def standard_cauchy(self, size=None, *, dtype=None, device=None):
        """Cauchy floats (median 0, scale 1): tan(pi (u - 1/2)), u in (0, 1)."""
        law = _law("standard_cauchy", size, dtype, device)
        return law.finish(_ns().tan(math.pi * (self._open_unit(law) - 0.5)))

    def triangular(self, left, mode, right, size=None, *, dtype=None, device=None):
        """Triangular floats on [left, right] peaking at ``mode``, by inverting the CDF."""
        ns = _ns()
        if _numbers(left, mode, right):
            if left > mode:
                raise ValueError(f"triangular: left ({left}) must be <= mode ({mode})")
            if mode > right:
                raise ValueError(f"triangular: mode ({mode}) must be <= right ({right})")
            if left == right:
                raise ValueError(f"triangular: left and right must differ, got {left}")
        law = _law("triangular", size, dtype, device, left=(left, None), mode=(mode, None),
                   right=(right, None))
        lo, c, hi = law.values
        if law.arrays:
            law.flag(ns.broadcast_to(~((lo <= c) & (c <= hi) & (lo < hi)), law.shape))
        u = self._unit(law.shape, law.cd, law.device, "triangular")
        width = hi - lo
        cut = (c - lo) / width
        below = lo + ns.sqrt(u * width * (c - lo))
        above = hi - ns.sqrt((1.0 - u) * width * (hi - c))
        return law.finish(ns.where(u <= cut, below, above))

    def multivariate_normal(self, mean, cov, size=None, check_valid: str = "warn",
                            tol: float = 1e-8, *, method: str = "svd", dtype=None, device=None):
        """Multivariate normal floats of shape ``size + (k,)``: mean + z A^T, with A A^T = cov
        from cov's eigendecomposition ('svd' and 'eigh': a positive semi-definite cov,
        singular too) or its Cholesky factor ('cholesky'). ``check_valid`` ('warn', 'raise',
        'ignore') and ``tol`` as NumPy's, with one host read of the eigenvalues."""
        ns = _ns()
        if check_valid not in ("warn", "raise", "ignore"):
            raise ValueError(f"multivariate_normal: check_valid must be 'warn', 'raise' or "
                             f"'ignore', got {check_valid!r}")
        if method not in ("svd", "eigh", "cholesky"):
            raise ValueError(f"multivariate_normal: method must be 'svd', 'eigh' or "
                             f"'cholesky', got {method!r}")
        if getattr(mean, "ndim", np.ndim(mean)) != 1:
            raise ValueError("multivariate_normal: mean must be 1-dimensional")
        cshape = tuple(getattr(cov, "shape", np.shape(cov)))
        if len(cshape) != 2 or cshape[0] != cshape[1]:
            raise ValueError(f"multivariate_normal: cov must be 2-dimensional and square, got "
                             f"shape {cshape}")
        k = mean.shape[0] if isinstance(mean, Array) else len(mean)
        if cshape[0] != k:
            raise ValueError("multivariate_normal: mean and cov must have the same length")
        batch = () if size is None else normalize_shape(size, "multivariate_normal")
        law = _law("multivariate_normal", batch + (k,), dtype, device, mean=(mean, None))
        mu = law.values[0]
        c = cov if isinstance(cov, Array) else ns.asarray(np.asarray(cov, dtype=np.float64),
                                                          device=law.device)
        c = ns.astype(c.detach() if c.requires_grad else c, law.cd)
        c = c if c.device is law.device else c.to_device(law.device)
        if method == "cholesky":
            a = ns.linalg.cholesky(c)
        else:
            w, v = ns.linalg.eigh(c)
            if check_valid != "ignore":
                wh = np.asarray(ns.astype(w, ns.float64).tolist())
                asym = float(ns.max(ns.abs(c - ns.matrix_transpose(c)))) if k else 0.0
                # NumPy's test: the factor reproduces cov within tol (a negative eigenvalue
                # or an asymmetric cov does not)
                if k and (asym > tol or float(wh.min()) < -tol * max(1.0, float(wh.max()))):
                    msg = ("multivariate_normal: covariance is not symmetric "
                           "positive-semidefinite.")
                    if check_valid == "raise":
                        raise ValueError(msg)
                    warnings.warn(msg, RuntimeWarning, stacklevel=2)
            a = v * ns.sqrt(ns.maximum(w, 0.0))
        z = self.normal(0.0, 1.0, law.shape, dtype=law.cd, device=law.device)
        return law.finish(z @ ns.matrix_transpose(a) + mu)

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

    def categorical(self, probs, num_samples: int, replacement: bool = False, *,
                    op: str = "multinomial"):
        """torch.multinomial: ``num_samples`` category indices (int64) per row of ``probs``
        (1-D, or 2-D: one row per distribution; non-negative weights, not necessarily
        normalized), checked as torch checks them with one host read. With replacement:
        inverse CDF (a float64 uniform per draw found in the row's normalized cumulative sum,
        every row searched at once with the row's index added); without: the exponential race
        (the smallest E_i / p_i, E_i ~ Exp(1)), whose order has the law of successive draws;
        more draws than a row's non-zero weights give its zero-weight categories last, in
        index order (torch 2.13 returns them too, where its docs say it raises)."""
        ns = _ns()
        if not isinstance(probs, Array):
            raise TypeError(f"{op}: input must be a grilly Array, got {type(probs).__name__}")
        if probs.dtype.kind != "f":
            raise TypeError(f"{op}: input must have a real floating dtype, got "
                            f"{probs.dtype.name}")
        if probs.ndim not in (1, 2):
            raise ValueError(f"{op}: input must be 1-D or 2-D, got {probs.ndim}-D")
        if isinstance(num_samples, bool) or not hasattr(num_samples, "__index__"):
            raise TypeError(f"{op}: num_samples must be an int, got {type(num_samples).__name__}")
        m = int(num_samples.__index__())
        if m <= 0:
            raise ValueError(f"{op}: num_samples must be positive, got {m}")
        k, dev = probs.shape[-1], probs.device
        if k == 0:
            raise ValueError(f"{op}: input has no categories (its last dimension is 0)")
        if not replacement and m > k:
            raise ValueError(f"{op}: cannot draw num_samples={m} > {k} categories without "
                             f"replacement")
        p = ns.astype(probs.detach() if probs.requires_grad else probs, ns.float64)
        p = ns.reshape(p, (-1, k))
        rows = p.shape[0]
        if rows == 0:
            return ns.zeros(probs.shape[:-1] + (m,), dtype=ns.int64, device=dev)
        pos = p > 0
        cols = ns.arange(k, dtype=ns.int64, device=dev)
        stats = ns.stack([ns.astype(ns.any(~ns.isfinite(p) | (p < 0)), ns.float64),
                          ns.min(ns.sum(p, axis=1))]).tolist()   # one read for both checks
        bad, least = stats
        if bad:
            raise ValueError(f"{op}: probability tensor contains either inf, nan or element < 0")
        if not least > 0 or not math.isfinite(least):
            raise ValueError(f"{op}: invalid multinomial distribution (sum of probabilities "
                             f"<= 0 or inf in a row)")
        if replacement:
            cdf = ns.cumulative_sum(p, axis=1)
            cdf = cdf / cdf[:, -1:]   # each row's last entry exactly 1
            r = ns.astype(ns.arange(rows, dtype=ns.int64, device=dev), ns.float64)[:, None]
            u = self._unit((rows, m), ns.float64, dev, op)
            # rows laid end to end: row i's cdf lies in [i, i + 1], so one sorted search finds
            # every row's draws; side right: a zero-probability (flat) step is never found
            at = ns.searchsorted(ns.reshape(cdf + r, (-1,)), ns.reshape(u + r, (-1,)),
                                 side="right")
            idx = ns.reshape(at, (rows, m)) - ns.astype(r, ns.int64) * k
            # a u + i that rounds up to i + 1 would find the next row: the last positive
            # entry bounds it
            last = ns.max(ns.where(pos, cols, -1), axis=1, keepdims=True)
            idx = ns.minimum(ns.astype(idx, ns.int64), last)
        else:
            e = self.exponential(1.0, (rows, k), dtype=ns.float64, device=dev)
            # p = 0: after every positive weight (argsort is stable: in index order)
            keys = ns.where(pos, e / ns.where(pos, p, 1.0), math.inf)
            idx = ns.astype(ns.argsort(keys, axis=1)[:, :m], ns.int64)
        return ns.reshape(idx, probs.shape[:-1] + (m,))

    def permuted(self, x, *, axis: int | None = None, out=None):
        """``x`` with each slice along ``axis`` permuted independently (the flattened array
        when axis is None), as NumPy's Generator.permuted; ``out``: an Array written in place
        (it may be x)."""
        ns = _ns()
        if not isinstance(x, Array):
            raise TypeError(f"permuted: x must be a grilly Array, got {type(x).__name__}")
        if out is not None and (not isinstance(out, Array) or out.shape != x.shape):
            raise ValueError(f"permuted: out must be an Array of x's shape {x.shape}")
        flat = axis is None
        y = ns.reshape(x, (-1,)) if flat else x
        ax = 0 if flat else normalize_axis(axis, x.ndim, "permuted")
        if y.ndim == 0:
            raise ValueError("permuted: needs an array of at least one dimension")
        keys = self._unit(y.shape, ns.float64, x.device, "permuted")
        r = ns.take_along_axis(y, ns.argsort(keys, axis=ax), axis=ax)
        r = ns.reshape(r, x.shape) if flat else r
        if out is None:
            return r
        out[...] = r
        return out

    def bytes(self, length: int) -> bytes:
        """``length`` random bytes (NumPy's Generator.bytes), from the stream's words."""
        if isinstance(length, bool) or not hasattr(length, "__index__") or length < 0:
            raise ValueError(f"bytes: length must be a non-negative int, got {length!r}")
        n = int(length)
        words = np.asarray(self.random_raw(-(-n // 4)), dtype=np.uint32)
        return words.astype("<u4").tobytes()[:n]

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


def uniform(low=0.0, high=1.0, shape=None, *, size=None, dtype=None, device=None):
    """Uniform floats in [low, high) from the default generator."""
    return default_generator.uniform(low, high, shape, size=size, dtype=dtype, device=device)


def keep_scale(shape, p: float, scale: float, *, dtype=None, device=None):
    """Dropout's multiplier (``scale`` where a uniform draw is >= p, else 0) from the default
    generator."""
    return default_generator.keep_scale(shape, p, scale, dtype=dtype, device=device)


def normal(mean=0.0, std=1.0, shape=None, *, loc=None, scale=None, size=None, dtype=None,
           device=None):
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


def exponential(scale=1.0, size=None, *, dtype=None, device=None):
    """Exponential floats of mean ``scale`` from the default generator."""
    return default_generator.exponential(scale, size, dtype=dtype, device=device)


def choice(a, size=None, replace: bool = True, p=None, *, device=None):
    """Draws from ``range(a)`` or ``a`` from the default generator (numpy.random.choice)."""
    return default_generator.choice(a, size, replace, p, device=device)


def shuffle(x) -> None:
    """Permute ``x`` along its first axis in place, from the default generator."""
    default_generator.shuffle(x)


def _module_law(name: str):
    """numpy.random's legacy module function ``name``: the default generator's method."""
    method = getattr(Generator, name)

    def f(*args, **kwargs):
        return method(default_generator, *args, **kwargs)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"numpy.random.{name}: Generator.{name} drawing from the default generator."
    return f


# numpy.random.gamma(...), beta(...), ...: the default generator's laws
_LAWS = ("beta", "binomial", "chisquare", "dirichlet", "f", "gamma", "geometric", "gumbel",
         "hypergeometric", "laplace", "logistic", "logseries", "lognormal", "multinomial",
         "multivariate_normal", "negative_binomial", "noncentral_chisquare", "noncentral_f",
         "pareto", "power", "rayleigh", "standard_cauchy", "standard_exponential",
         "standard_gamma", "standard_t", "triangular", "vonmises", "wald", "weibull", "zipf",
         "bytes")
for _name in _LAWS:
    globals()[_name] = _module_law(_name)
__all__ += list(_LAWS)
del _name
