"""More of NumPy's functions, composed of namespace functions: the float and integer helpers
(fmod, divmod, modf, frexp, ldexp, gcd, lcm, float_power, spacing, angle, unwrap,
bitwise_count, packbits, unpackbits), NumPy's polynomial functions (polyadd ... polydiv, poly,
roots), piecewise, matvec/vecmat, the dtype questions (issubdtype, promote_types, common_type,
min_scalar_type), the constructors and memory questions (asanyarray, ascontiguousarray,
require, copyto, fromfunction, fromiter, frombuffer, may_share_memory, shares_memory) and the
printing functions (NumPy formats grilly's repr, so its print options are grilly's).

Results are NumPy 2's (docs/numpy.md); the data stays on its device except where NumPy's
answer is a host value or its size or dtype depends on the data (listed in docs/numpy.md)."""
from __future__ import annotations

import builtins
import contextlib
import math

import numpy as np

from . import dispatch
from . import dtypes as dt
from .array import Array, same_memory
from .core import check_array, common_device
from .manipulation import normalize_axis
from .numpy_compat import _float_of, _operand

__all__ = [
    # elementwise
    "angle", "bitwise_count", "divmod", "float_power", "fmod", "frexp", "gcd", "lcm", "ldexp",
    "modf", "packbits", "real_if_close", "sort_complex", "spacing", "unpackbits", "unwrap",
    # polynomials, piecewise, products
    "matvec", "piecewise", "poly", "polyadd", "polyder", "polydiv", "polyint", "polymul",
    "polysub", "roots", "vecmat",
    # dtypes
    "common_type", "issubdtype", "min_scalar_type", "promote_types", "typename",
    # construction and memory
    "asanyarray", "asarray_chkfinite", "ascontiguousarray", "asfortranarray", "copyto",
    "einsum_path", "frombuffer", "fromfunction", "fromiter", "iterable", "may_share_memory",
    "require", "shares_memory",
    # printing
    "array2string", "array_repr", "array_str", "get_printoptions", "printoptions",
    "set_printoptions",
]

_ns = dispatch.ns

# NumPy's abstract scalar types, for issubdtype(x.dtype, gp.floating)
generic, number, integer, signedinteger = np.generic, np.number, np.integer, np.signedinteger
unsignedinteger, inexact, floating = np.unsignedinteger, np.inexact, np.floating
complexfloating = np.complexfloating
__all__ += ["complexfloating", "floating", "generic", "inexact", "integer", "number",
            "signedinteger", "unsignedinteger"]


def _arr(x, op: str, arg: str = "x") -> Array:
    return check_array(x, op, arg)


def _two(x1, x2, op: str) -> tuple[Array, Array]:
    """Both operands as Arrays on one device: a Python or NumPy value beside an Array takes it
    as a scalar operand does; two non-Arrays are converted as NumPy converts them."""
    if isinstance(x1, Array):
        return x1, _operand(x2, x1, op, "x2")
    if isinstance(x2, Array):
        return _operand(x1, x2, op, "x1"), x2
    return _ns.asarray(np.asarray(x1)), _ns.asarray(np.asarray(x2))


def _one(x, op: str) -> Array:
    """``x`` as an Array (a number or a list converted as NumPy converts it)."""
    if isinstance(x, Array):
        return x
    h = np.asarray(x)
    if h.dtype.kind not in "biufc":
        raise TypeError(f"{op}: expected an array of numbers, got {type(x).__name__}")
    return _ns.asarray(h)


def _real_float(x: Array, op: str) -> Array:
    if x.dtype.kind == "c":
        raise TypeError(f"{op}: complex arrays are not supported (as NumPy's)")
    return _float_of(x, op)


def _np_dtype(d, op: str = "dtype"):
    """A dtype spec (grilly DType, NumPy dtype or type, name, Python type) as a NumPy dtype."""
    if isinstance(d, dt.DType):
        return d.np
    if isinstance(d, Array):
        return d.dtype.np
    try:
        return np.dtype(d)
    except TypeError:
        raise TypeError(f"{op}: data type {d!r} not understood") from None


# ---- elementwise ----------------------------------------------------------------------------
def fmod(x1, x2, /) -> Array:
    """C's fmod: the remainder of x1 / x2 with x1's sign (NumPy's; mod's has x2's sign)."""
    x1, x2 = _two(x1, x2, "fmod")
    r = _ns.remainder(x1, x2)
    if x1.dtype.kind == "c" or x2.dtype.kind == "c":
        raise TypeError("fmod: complex arrays are not supported (as NumPy's)")
    # remainder has x2's sign; where that differs from x1's (and r is not 0), step back by x2
    off = _ns.logical_and(_ns.not_equal(r, 0), _ns.not_equal(_ns.less(r, 0), _ns.less(x1, 0)))
    r = _ns.where(off, _ns.subtract(r, x2), r)
    if r.dtype.kind == "f":    # C's fmod(-0.0, y) and fmod(-4, 2) are -0.0
        r = _ns.copysign(r, _ns.astype(x1, r.dtype) if x1.dtype != r.dtype else x1)
    return r


def divmod(x1, x2, /) -> tuple:  # noqa: A001 (NumPy's name)
    """``(x1 // x2, x1 % x2)``, NumPy's divmod (floor division and Python's remainder)."""
    x1, x2 = _two(x1, x2, "divmod")
    return _ns.floor_divide(x1, x2), _ns.remainder(x1, x2)


def modf(x, /) -> tuple:
    """``(fractional, integral)`` parts of x, both with x's sign (integers in float64)."""
    x = _real_float(_one(x, "modf"), "modf")
    whole = _ns.trunc(x)
    frac = _ns.where(_ns.isinf(x), 0.0, _ns.subtract(x, whole))
    return _ns.copysign(frac, x), whole


def _pow2(k: Array, dtype) -> Array:
    """2 ** k, exactly, for integers k within float64's exponent range (float64 powers of two
    are exact; a later cast to a narrower float is exact where it is in range)."""
    return _ns.astype(_ns.exp2(_ns.astype(k, dt.float64)), dtype)


def ldexp(x1, x2, /) -> Array:
    """x1 * 2 ** x2 for integer x2, rounded once (integers x1 in float64)."""
    x1, x2 = _two(x1, x2, "ldexp")
    if x2.dtype.kind not in "iu":
        raise TypeError(f"ldexp: x2 must be an integer array, got {x2.dtype}")
    x1 = _real_float(x1, "ldexp")
    if x1.dtype == dt.float64:
        # three factors each a representable power of two: only the last product rounds
        k = _ns.clip(_ns.astype(x2, dt.int64), -2400, 2400)
        a = _ns.floor_divide(k, 3)
        b = _ns.floor_divide(_ns.subtract(k, a), 2)
        y = _ns.multiply(_ns.multiply(x1, _pow2(a, dt.float64)), _pow2(b, dt.float64))
        return _ns.multiply(y, _pow2(_ns.subtract(_ns.subtract(k, a), b), dt.float64))
    # narrower floats: exact in float64, then one rounding to x1's dtype
    k = _ns.clip(_ns.astype(x2, dt.int64), -1000, 1000)
    y = _ns.multiply(_ns.astype(x1, dt.float64), _pow2(k, dt.float64))
    # x1's mantissa fits its dtype, so a product past its largest value is an overflow: inf
    # explicitly (a cast of the too-large value would warn on the host backend)
    big = _ns.greater(_ns.abs(y), float(np.finfo(x1.dtype.np).max))
    y = _ns.where(big, _ns.copysign(_ns.full_like(y, math.inf), y), y)
    return _ns.astype(y, x1.dtype)


def frexp(x, /) -> tuple:
    """``(mantissa, exponent)`` with x == mantissa * 2 ** exponent, 0.5 <= |mantissa| < 1
    (mantissa x's float dtype, exponent int32; 0, inf and NaN give exponent 0, as NumPy's)."""
    x = _real_float(_one(x, "frexp"), "frexp")
    ax = _ns.abs(_ns.astype(x, dt.float64))
    ok = _ns.logical_and(_ns.isfinite(ax), _ns.not_equal(ax, 0))
    safe = _ns.where(ok, ax, 1.0)
    e = _ns.astype(_ns.add(_ns.floor(_ns.log2(safe)), 1), dt.int64)
    # log2 may round across a power of two: correct the exponent by one either way
    m = ldexp(safe, _ns.negative(e))
    e = _ns.where(_ns.greater_equal(m, 1.0), _ns.add(e, 1),
                  _ns.where(_ns.less(m, 0.5), _ns.subtract(e, 1), e))
    e = _ns.where(ok, e, 0)
    return ldexp(x, _ns.negative(e)), _ns.astype(e, dt.int32)


def _euclid_steps(d) -> int:
    # the Euclidean algorithm takes at most log_phi(2 ** bits) + 2 steps (Lamé)
    return int(math.ceil(d.itemsize * 8 / math.log2((1 + 5 ** 0.5) / 2))) + 2


def gcd(x1, x2, /) -> Array:
    """Greatest common divisor of |x1| and |x2| (integers; gcd(0, 0) is 0)."""
    x1, x2 = _two(x1, x2, "gcd")
    if x1.dtype.kind not in "iu" or x2.dtype.kind not in "iu":
        raise TypeError(f"gcd: integer arrays are required, got {x1.dtype} and {x2.dtype}")
    a, b = _ns.broadcast_arrays(_ns.abs(x1), _ns.abs(x2))
    d = dt.result_type(a.dtype, b.dtype)
    a, b = _ns.astype(a, d), _ns.astype(b, d)
    # a fixed number of steps (Lamé's bound for the dtype) keeps the loop off the host
    for _ in range(_euclid_steps(d)):
        nz = _ns.not_equal(b, 0)
        a, b = _ns.where(nz, b, a), _ns.where(nz, _ns.remainder(a, _ns.where(nz, b, 1)), 0)
    return a


def lcm(x1, x2, /) -> Array:
    """Least common multiple of |x1| and |x2| (integers; 0 where either is 0)."""
    x1, x2 = _two(x1, x2, "lcm")
    if x1.dtype.kind not in "iu" or x2.dtype.kind not in "iu":
        raise TypeError(f"lcm: integer arrays are required, got {x1.dtype} and {x2.dtype}")
    g = gcd(x1, x2)
    q = _ns.floor_divide(_ns.abs(x1), _ns.where(_ns.equal(g, 0), 1, g))
    return _ns.abs(_ns.multiply(q, _ns.abs(x2)))


def float_power(x1, x2, /) -> Array:
    """x1 ** x2 computed in float64 (complex128 for complex input), as NumPy's."""
    x1, x2 = _two(x1, x2, "float_power")
    d = dt.complex128 if "c" in (x1.dtype.kind, x2.dtype.kind) else dt.float64
    return _ns.pow(_ns.astype(x1, d), _ns.astype(x2, d))


def angle(z, deg: bool = False) -> Array:
    """The counterclockwise angle of each complex value (pi for negative reals), in radians or
    degrees (real float dtype; integers in float64)."""
    z = _one(z, "angle")
    if z.dtype.kind == "c":
        a = _ns.atan2(_ns.imag(z), _ns.real(z))
    else:
        z = _float_of(z, "angle")
        a = _ns.atan2(_ns.zeros_like(z), z)
    return _ns.multiply(a, 180.0 / math.pi) if deg else a


def spacing(x, /) -> Array:
    """The distance from x to the next float away from zero (negative for negative x)."""
    x = _real_float(_one(x, "spacing"), "spacing")
    inf = _ns.full_like(x, math.inf)
    away = _ns.where(_ns.less(x, 0), _ns.negative(inf), inf)   # +0 and -0 both step up
    return _ns.subtract(_ns.nextafter(x, away), x)


def unwrap(p, discont=None, axis: int = -1, *, period=2 * math.pi) -> Array:
    """Phases with jumps larger than max(discont, period / 2) along ``axis`` replaced by their
    period complement (NumPy's unwrap; integers in float64)."""
    op = "unwrap"
    p = _one(p, op)
    if p.dtype.kind == "c":
        raise TypeError(f"{op}: complex arrays are not supported (as NumPy's)")
    ax = normalize_axis(axis, p.ndim, op, "axis")
    n = p.shape[ax]
    half = period / 2
    disc = half if discont is None else builtins.max(float(discont), half)
    p = _float_of(p, op)
    if n < 2:
        return _ns.asarray(p, copy=True)
    dd = _ns.diff(p, axis=ax)
    ddmod = _ns.subtract(_ns.remainder(_ns.add(dd, half), period), half)
    # a jump of exactly +period/2 stays +period/2 (mod maps it to -period/2)
    ddmod = _ns.where(_ns.logical_and(_ns.equal(ddmod, -half), _ns.greater(dd, 0)), half, ddmod)
    corr = _ns.where(_ns.less(_ns.abs(dd), disc), 0.0, _ns.subtract(ddmod, dd))
    first = p[(slice(None),) * ax + (slice(0, 1),)]
    rest = p[(slice(None),) * ax + (slice(1, None),)]
    return _ns.concat([first, _ns.add(rest, _ns.cumulative_sum(corr, axis=ax))], axis=ax)


def sort_complex(a) -> Array:
    """``a`` flattened along its last axis sorted by real part, then imaginary part, as complex
    (int8/int16/uint8/uint16 as complex64, other reals as complex128, as NumPy's)."""
    a = _one(a, "sort_complex")
    if a.dtype.kind != "c":
        small = a.dtype.name in ("int8", "int16", "uint8", "uint16", "bool")
        a = _ns.astype(a, dt.complex64 if small else dt.complex128)
    if a.ndim == 0:
        return a
    # two stable sorts: by the imaginary part, then by the real part
    i1 = _ns.argsort(_ns.imag(a), axis=-1, stable=True)
    b = _ns.take_along_axis(a, i1, axis=-1)
    i2 = _ns.argsort(_ns.real(b), axis=-1, stable=True)
    return _ns.take_along_axis(b, i2, axis=-1)


def real_if_close(a, tol: float = 100) -> Array:
    """The real part of a complex ``a`` whose imaginary parts are all within tol machine
    epsilons of zero (tol < 1: absolute), else ``a``; reads one bool on the host (the result's
    dtype depends on the data)."""
    a = _one(a, "real_if_close")
    if a.dtype.kind != "c":
        return a
    if tol > 1:
        tol = np.finfo(a.dtype.np).eps * tol
    if bool(_ns.all(_ns.less(_ns.abs(_ns.imag(a)), tol))):
        return _ns.real(a)
    return a


def bitwise_count(x, /) -> Array:
    """The number of 1 bits in |x| (uint8), NumPy's bitwise_count."""
    x = _one(x, "bitwise_count")
    if x.dtype.kind not in "iu":
        raise TypeError(f"bitwise_count: integer arrays are required, got {x.dtype}")
    v = _ns.abs(x) if x.dtype.kind == "i" else x
    count = _ns.zeros(x.shape, dtype=dt.uint8, device=x.device)
    for k in range(x.dtype.itemsize * 8):
        count = _ns.add(count, _ns.astype(_ns.bitwise_and(_ns.bitwise_right_shift(v, k), 1),
                                          dt.uint8))
    return count


def _bitorder(bitorder: str, op: str) -> bool:
    if bitorder not in ("big", "little"):
        raise ValueError(f"{op}: bitorder must be 'big' or 'little', got {bitorder!r}")
    return bitorder == "big"


def packbits(a, /, axis: int | None = None, bitorder: str = "big") -> Array:
    """The truth of each element packed eight to a uint8 along ``axis`` (the flattened array
    when None), the last byte padded with zero bits."""
    op = "packbits"
    a = _one(a, op)
    if a.dtype.kind not in "biu":
        raise TypeError(f"{op}: expected an integer or boolean array, got {a.dtype}")
    big = _bitorder(bitorder, op)
    if axis is None:
        a, ax = _ns.reshape(a, (-1,)), 0
    else:
        ax = normalize_axis(axis, a.ndim, op, "axis")
    bits = _ns.moveaxis(_ns.astype(_ns.not_equal(a, 0), dt.uint8), ax, -1)
    n = bits.shape[-1]
    pad = (-n) % 8
    if pad:
        bits = _ns.concat([bits, _ns.zeros(bits.shape[:-1] + (pad,), dtype=dt.uint8,
                                           device=a.device)], axis=-1)
    bits = _ns.reshape(bits, bits.shape[:-1] + ((n + pad) // 8, 8))
    w = [1 << (7 - i if big else i) for i in range(8)]
    packed = _ns.sum(_ns.multiply(bits, _ns.asarray(w, dtype=dt.uint8, device=a.device)),
                     axis=-1, dtype=dt.uint8)
    return _ns.moveaxis(packed, -1, ax)


def unpackbits(a, /, axis: int | None = None, count: int | None = None,
               bitorder: str = "big") -> Array:
    """The bits of a uint8 array as 0/1 uint8 along ``axis`` (the flattened array when None),
    eight per byte; ``count`` keeps the first count bits (negative: drops -count, more: pads)."""
    op = "unpackbits"
    a = _one(a, op)
    if a.dtype != dt.uint8:
        raise TypeError(f"{op}: expected an input array of unsigned byte data type, got "
                        f"{a.dtype}")
    big = _bitorder(bitorder, op)
    if axis is None:
        a, ax = _ns.reshape(a, (-1,)), 0
    else:
        ax = normalize_axis(axis, a.ndim, op, "axis")
    v = _ns.moveaxis(a, ax, -1)
    shifts = _ns.asarray([7 - i if big else i for i in range(8)], dtype=dt.uint8,
                         device=a.device)
    bits = _ns.bitwise_and(_ns.bitwise_right_shift(_ns.expand_dims(v, axis=-1), shifts), 1)
    bits = _ns.reshape(bits, v.shape[:-1] + (v.shape[-1] * 8,))
    if count is not None:
        if isinstance(count, bool) or not hasattr(count, "__index__"):
            raise TypeError(f"{op}: count must be an integer or None, got {count!r}")
        n, total = int(count), bits.shape[-1]
        if n < 0:
            n = builtins.max(total + n, 0)
            if total + int(count) < 0:
                raise ValueError(f"{op}: -count ({-int(count)}) larger than the number of "
                                 f"bits ({total})")
        if n <= total:
            bits = bits[..., :n]
        else:
            bits = _ns.concat([bits, _ns.zeros(bits.shape[:-1] + (n - total,), dtype=dt.uint8,
                                               device=a.device)], axis=-1)
    return _ns.moveaxis(bits, -1, ax)


# ---- polynomials (coefficients highest power first, as NumPy's poly* functions) -------------
def _coef(p, op: str, arg: str) -> Array:
    p = _one(p, op)
    if p.ndim == 0:
        p = _ns.reshape(p, (1,))
    if p.ndim != 1:
        raise ValueError(f"{op}: {arg} must be a 1-D array of coefficients, got shape {p.shape}")
    return p


def _front_pad(p: Array, n: int) -> Array:
    if p.shape[0] >= n:
        return p
    return _ns.concat([_ns.zeros((n - p.shape[0],), dtype=p.dtype, device=p.device), p])


def _coefs(a1, a2, op: str) -> tuple[Array, Array]:
    """Two coefficient vectors on one device (a list beside an Array goes to its device)."""
    if isinstance(a1, Array) or isinstance(a2, Array):
        a1, a2 = _two(a1, a2, op)
    a1, a2 = _coef(a1, op, "a1"), _coef(a2, op, "a2")
    common_device(op, a1, a2)
    return a1, a2


def _polypair(a1, a2, op: str) -> tuple[Array, Array]:
    a1, a2 = _coefs(a1, a2, op)
    n = builtins.max(a1.shape[0], a2.shape[0])
    return _front_pad(a1, n), _front_pad(a2, n)


def polyadd(a1, a2) -> Array:
    """The sum of two polynomials (the shorter padded with leading zeros)."""
    a1, a2 = _polypair(a1, a2, "polyadd")
    return _ns.add(a1, a2)


def polysub(a1, a2) -> Array:
    """The difference of two polynomials (the shorter padded with leading zeros)."""
    a1, a2 = _polypair(a1, a2, "polysub")
    return _ns.subtract(a1, a2)


def polymul(a1, a2) -> Array:
    """The product of two polynomials (their coefficients' full convolution)."""
    a1, a2 = _coefs(a1, a2, "polymul")
    return dispatch.OPS["convolve"](a1, a2)


def _order(m, op: str) -> int:
    if isinstance(m, bool) or not hasattr(m, "__index__"):
        raise TypeError(f"{op}: m must be an integer, got {m!r}")
    if int(m) < 0:
        raise ValueError(f"{op}: order of derivative must be positive (see polyint)"
                         if op == "polyder" else f"{op}: Order of integral must be positive "
                         "(see polyder)")
    return int(m)


def polyder(p, m: int = 1) -> Array:
    """The m-th derivative of polynomial ``p``."""
    m = _order(m, "polyder")
    p = _coef(p, "polyder", "p")
    for _ in range(m):
        n = p.shape[0] - 1
        p = _ns.multiply(p[:-1], _ns.arange(n, 0, -1, dtype=p.dtype, device=p.device))
    return p


def polyint(p, m: int = 1, k=None) -> Array:
    """The m-th antiderivative of polynomial ``p``, its integration constants ``k`` (a number
    or m of them, the first for the first integration; zeros when None)."""
    op = "polyint"
    m = _order(m, op)
    p = _coef(p, op, "p")
    ks = np.zeros(m) if k is None else np.atleast_1d(np.asarray(k, dtype=np.float64))
    if ks.size == 1 and m > 1:
        ks = np.full(m, ks[0])
    if ks.size < m:
        raise ValueError(f"{op}: k must be a scalar or a rank-1 array of length 1 or > m")
    p = _ns.astype(p, dt.float64) if p.dtype.kind in "biu" else p
    for i in range(m):
        n = p.shape[0]
        q = _ns.divide(p, _ns.arange(n, 0, -1, dtype=p.dtype, device=p.device))
        p = _ns.concat([q, _ns.asarray([ks[i]], dtype=p.dtype, device=p.device)])
    return p


def polydiv(u, v) -> tuple:
    """``(quotient, remainder)`` of polynomial division u / v (floats); the remainder's leading
    near-zeros are dropped as NumPy's (np.allclose to 0, read on the host)."""
    op = "polydiv"
    u, v = _coefs(u, v, op)
    d = dt.result_type(_float_of(u, op).dtype, _float_of(v, op).dtype)
    u, v = _ns.astype(u, d), _ns.astype(v, d)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = _ns.divide(1.0, v[0])
    r, qs = u, []
    for k in range(0, m - n + 1):
        q = _ns.multiply(scale, r[k])
        qs.append(q)
        # r[k:k + n + 1] -= q * v, as one subtraction of v shifted to position k
        shifted = _ns.concat([_ns.zeros((k,), dtype=d, device=u.device), v,
                              _ns.zeros((m - n - k,), dtype=d, device=u.device)])
        r = _ns.subtract(r, _ns.multiply(q, shifted))
    quot = _ns.stack(qs) if qs else _ns.zeros((1,), dtype=d, device=u.device)
    near0 = np.isclose(np.asarray(r), 0, rtol=1e-14)   # NumPy's allclose(r[0], 0, rtol=1e-14)
    lead = 0
    while lead < r.shape[0] - 1 and near0[lead]:
        lead += 1
    return quot, r[lead:]


def poly(seq_of_zeros) -> Array:
    """The coefficients of the monic polynomial with the given roots (or of a square matrix's
    characteristic polynomial); complex roots in conjugate pairs give real coefficients (read
    on the host, as NumPy decides)."""
    op = "poly"
    z = _one(seq_of_zeros, op)
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] != 0:
        z = dispatch.OPS["linalg.eigvals"](z)
    elif z.ndim != 1:
        raise ValueError(f"{op}: input must be 1d or non-empty square 2d array, got shape "
                         f"{z.shape}")
    z = _float_of(z, op)
    a = _ns.ones((1,), dtype=z.dtype, device=z.device)
    for i in range(z.shape[0]):
        a = dispatch.OPS["convolve"](a, _ns.stack([_ns.ones((), dtype=z.dtype, device=z.device),
                                                   _ns.negative(z[i])]))
    if a.dtype.kind == "c":
        h = np.asarray(z)
        if np.array_equal(np.sort_complex(h), np.sort_complex(h.conj())):
            a = _ns.real(a)
    return a


def roots(p) -> Array:
    """The roots of polynomial ``p`` (highest power first): the eigenvalues of its companion
    matrix, with a zero root per trailing zero; leading and trailing zeros are found on the host
    and a result with no imaginary part is real, as NumPy's."""
    op = "roots"
    p = _coef(p, op, "p")
    nz = np.flatnonzero(np.asarray(p))
    if nz.size == 0:
        return _ns.zeros((0,), dtype=_float_of(p, op).dtype, device=p.device)
    trailing = p.shape[0] - int(nz[-1]) - 1
    p = _float_of(p[int(nz[0]): int(nz[-1]) + 1], op)
    n = p.shape[0]
    if n > 1:
        # companion matrix: -p[1:] / p[0] on the first row, ones below the diagonal
        top = _ns.reshape(_ns.divide(_ns.negative(p[1:]), p[0]), (1, n - 1))
        below = _ns.eye(n - 2, n - 1, dtype=p.dtype, device=p.device)
        r = dispatch.OPS["linalg.eigvals"](_ns.concat([top, below], axis=0))
        if p.dtype.kind != "c":
            # LAPACK's real eigensolver gives real roots an imaginary part of exactly 0 and
            # NumPy then returns real roots; the complex solver leaves rounding there instead
            tol = 64 * np.finfo(p.dtype.np).eps * n
            big = _ns.maximum(_ns.abs(r), 1.0)
            if bool(_ns.all(_ns.less_equal(_ns.abs(_ns.imag(r)), _ns.multiply(big, tol)))):
                r = _ns.real(r)
    else:
        r = _ns.zeros((0,), dtype=p.dtype, device=p.device)
    if trailing:
        r = _ns.concat([r, _ns.zeros((trailing,), dtype=r.dtype, device=p.device)])
    return r


def piecewise(x, condlist, funclist, *args, **kw) -> Array:
    """x's shape and dtype filled piece by piece: where condlist[i], funclist[i] (a value, or a
    function called on x[condlist[i]] with ``*args, **kw``); one extra function or value is the
    otherwise case. A function's pieces read their element count on the host (boolean indexing);
    values stay on the device."""
    op = "piecewise"
    x = _arr(x, op, "x")
    if isinstance(condlist, (Array, np.ndarray, bool)) and np.ndim(condlist) == x.ndim:
        condlist = [condlist]
    conds = []
    for c in condlist:
        c = _operand(c, x, op, "condlist") if not isinstance(c, Array) else c
        if c.dtype != dt.bool:
            raise TypeError(f"{op}: condlist must hold boolean arrays, got {c.dtype}")
        common_device(op, x, c)
        conds.append(_ns.broadcast_to(c, x.shape))
    funcs = list(funclist)
    if len(funcs) == len(conds) + 1:
        other = _ns.logical_not(conds[0]) if len(conds) == 1 else _ns.logical_not(
            _ns.any(_ns.stack(conds), axis=0))
        conds.append(other)
    elif len(funcs) != len(conds):
        raise ValueError(f"{op}: with {len(conds)} condition(s), either {len(conds)} or "
                         f"{len(conds) + 1} functions are expected")
    y = _ns.zeros_like(x)
    for c, f in zip(conds, funcs):
        if callable(f):
            vals = f(x[c], *args, **kw)
            vals = vals if isinstance(vals, Array) else _operand(vals, x, op, "funclist")
            piece = _ns.zeros_like(x)   # a fresh array written once: autograd's setitem path
            piece[c] = _ns.astype(vals, x.dtype) if vals.dtype != x.dtype else vals
            y = _ns.where(c, piece, y)
        else:
            y = _ns.where(c, _ns.astype(_operand(f, x, op, "funclist"), x.dtype), y)
    return y


def matvec(x1, x2, /) -> Array:
    """Matrix-vector products over the last axes: (..., m, n) and (..., n) give (..., m)."""
    x1, x2 = _two(x1, x2, "matvec")
    if x1.ndim < 2 or x2.ndim < 1:
        raise ValueError(f"matvec: x1 needs at least 2 dimensions and x2 at least 1, got shapes "
                         f"{x1.shape} and {x2.shape}")
    return _ns.matmul(x1, _ns.expand_dims(x2, axis=-1))[..., 0]


def vecmat(x1, x2, /) -> Array:
    """Vector-matrix products over the last axes, the vector conjugated: (..., n) and
    (..., n, m) give (..., m)."""
    x1, x2 = _two(x1, x2, "vecmat")
    if x1.ndim < 1 or x2.ndim < 2:
        raise ValueError(f"vecmat: x1 needs at least 1 dimension and x2 at least 2, got shapes "
                         f"{x1.shape} and {x2.shape}")
    if x1.dtype.kind == "c":
        x1 = _ns.conj(x1)
    return _ns.matmul(_ns.expand_dims(x1, axis=-2), x2)[..., 0, :]


# ---- dtypes ---------------------------------------------------------------------------------
def _as_dtype(d) -> dt.DType:
    return dispatch.OPS["dtype"](d) if "dtype" in dispatch.OPS else dt.dtype(d)


def issubdtype(arg1, arg2) -> bool:
    """Whether dtype ``arg1`` is ``arg2`` or below it in NumPy's hierarchy (``gp.floating``,
    ``np.integer``, a grilly dtype, a name)."""
    def host(d):
        if isinstance(d, type) and issubclass(d, np.generic):
            return d
        return _np_dtype(d, "issubdtype")
    a1, a2 = arg1, arg2
    bf = [isinstance(d, dt.DType) and d.name == "bfloat16" for d in (a1, a2)]
    if any(bf):   # bfloat16 has no NumPy twin: a floating type, equal only to itself
        if all(bf):
            return True
        if bf[1]:
            return False
        return isinstance(a2, type) and a2 in (np.generic, np.number, np.inexact, np.floating)
    return bool(np.issubdtype(host(a1), host(a2)))


def promote_types(type1, type2) -> dt.DType:
    """The smallest dtype both cast to safely (NumPy's promote_types, as a grilly dtype)."""
    return dt.dtype(np.promote_types(_np_dtype(type1, "promote_types"),
                                     _np_dtype(type2, "promote_types")).name)


def common_type(*arrays) -> dt.DType:
    """The float dtype the arrays are computed in (integers as float64; complex wins)."""
    if not arrays:
        raise TypeError("common_type: at least one array is required")
    best, cplx = 2, False   # float16 at least, as NumPy's
    order = {2: dt.float16, 4: dt.float32, 8: dt.float64}
    for a in arrays:
        d = _arr(a, "common_type", "arrays").dtype
        if d.kind == "b":
            raise TypeError("common_type: can't get common type for non-numeric array")
        if d.kind == "c":
            cplx, size = True, d.itemsize // 2
        elif d.kind == "f":
            size = 4 if d.name == "bfloat16" else d.itemsize
        else:
            size = 8
        best = builtins.max(best, size)
    if cplx:
        return dt.complex128 if best == 8 else dt.complex64
    return order[best]


def min_scalar_type(a) -> dt.DType:
    """The smallest dtype holding scalar ``a`` (an array's own dtype; a 0-d Array is read)."""
    if isinstance(a, Array):
        if a.ndim:
            return a.dtype
        a = a.item()
    return dt.dtype(np.min_scalar_type(a).name)


def typename(char: str) -> str:
    """NumPy's description of a dtype character code."""
    return np.typename(char)


# ---- construction and memory ----------------------------------------------------------------
def asanyarray(a, dtype=None, order=None, *, device=None, copy=None) -> Array:
    """asarray (grilly has no Array subclasses)."""
    if order not in (None, "C", "K", "A"):
        raise NotImplementedError(f"asanyarray: order={order!r} is not supported (only 'C')")
    return _ns.asarray(a, dtype=dtype, device=device, copy=copy)


def _contiguous(x: Array) -> Array:
    is_c = getattr(x, "is_contiguous", None)
    return x if is_c is None or is_c() else _ns.asarray(x, copy=True)


def ascontiguousarray(a, dtype=None, *, device=None) -> Array:
    """``a`` as a row-major Array with at least one dimension (a strided view is copied)."""
    x = _ns.asarray(a, dtype=dtype, device=device)
    return _ns.reshape(x, (1,)) if x.ndim == 0 else _contiguous(x)


def asfortranarray(a, dtype=None, *, device=None) -> Array:
    """asarray for at most one dimension; column-major layout of more is NotImplementedError
    (grilly arrays are row-major)."""
    x = _ns.asarray(a, dtype=dtype, device=device)
    if x.ndim >= 2:
        raise NotImplementedError("asfortranarray: column-major arrays are not supported "
                                  "(grilly arrays are row-major)")
    return _ns.reshape(x, (1,)) if x.ndim == 0 else x


_REQUIRE = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F",
            "FORTRAN": "F", "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W", "O": "O",
            "OWNDATA": "O", "E": "E", "ENSUREARRAY": "E"}


def require(a, dtype=None, requirements=None, *, device=None) -> Array:
    """``a`` as an Array of ``dtype`` meeting ``requirements`` ('C', 'A', 'W', 'O', 'E';
    'F' on two or more dimensions is NotImplementedError: grilly arrays are row-major)."""
    reqs = set()
    for r in ([requirements] if isinstance(requirements, str) else requirements or ()):
        key = _REQUIRE.get(str(r).upper())
        if key is None:
            raise KeyError(f"require: unknown requirement {r!r}")
        reqs.add(key)
    x = _ns.asarray(a, dtype=dtype, device=device)
    if "F" in reqs and "C" in reqs:
        raise ValueError("require: cannot specify both 'C' and 'F' order")
    if "F" in reqs and x.ndim >= 2:
        raise NotImplementedError("require: 'F' (column-major) is not supported for arrays of "
                                  "two or more dimensions (grilly arrays are row-major)")
    if "O" in reqs and isinstance(a, Array) and x is a:
        return _ns.asarray(x, copy=True)
    if "C" in reqs:
        x = _contiguous(x)
    if "W" in reqs:
        try:
            dispatch.check_writable(x._buf, "require")
        except ValueError:
            x = _ns.asarray(x, copy=True)
    return x


def asarray_chkfinite(a, dtype=None, order=None, *, device=None) -> Array:
    """asarray, raising ValueError where the result holds an inf or NaN (one bool read on the
    host)."""
    if order not in (None, "C", "K", "A"):
        raise NotImplementedError(f"asarray_chkfinite: order={order!r} is not supported")
    x = _ns.asarray(a, dtype=dtype, device=device)
    if x.dtype.kind in "fc" and not bool(_ns.all(_ns.isfinite(x))):
        raise ValueError("asarray_chkfinite: array must not contain infs or NaNs")
    return x


_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def copyto(dst: Array, src, casting: str = "same_kind", where=True) -> None:
    """Write ``src`` (broadcast) into ``dst`` in place where ``where`` is true, if its dtype
    casts to dst's under ``casting`` (NumPy's rules; a Python scalar by its kind)."""
    op = "copyto"
    if not isinstance(dst, Array):
        raise TypeError(f"{op}: dst must be a grilly Array, got {type(dst).__name__}")
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise ValueError(f"{op}: casting must be one of 'no', 'equiv', 'safe', 'same_kind' or "
                         f"'unsafe', got {casting!r}")
    if isinstance(src, (bool, int, float, complex)) and not isinstance(src, Array):
        kind = {bool: "b", int: "i", float: "f", complex: "c"}[type(src)]
        ok = casting == "unsafe" or (_KIND_RANK[kind] <= _KIND_RANK[dst.dtype.kind]
                                     if casting in ("safe", "same_kind") else kind == dst.dtype.kind)
        if not ok:
            raise TypeError(f"{op}: cannot cast a Python {type(src).__name__} to {dst.dtype} "
                            f"according to the rule {casting!r}")
        s = src
    else:
        s = src if isinstance(src, Array) else _operand(src, dst, op, "src")
        common_device(op, dst, s)
        if not np.can_cast(_np_dtype(s.dtype), _np_dtype(dst.dtype), casting=casting):
            raise TypeError(f"{op}: cannot cast array data from {s.dtype} to {dst.dtype} "
                            f"according to the rule {casting!r}")
        if s.dtype != dst.dtype:
            s = _ns.astype(s, dst.dtype)
    if where is True:
        dst[...] = s
        return
    w = where if isinstance(where, Array) else _operand(where, dst, op, "where")
    if w.dtype != dt.bool:
        raise TypeError(f"{op}: where must be a boolean array, got {w.dtype}")
    # the old values as a copy where autograd records the write (where must not see them change)
    old = dst.copy() if dst.requires_grad or getattr(s, "requires_grad", False) else dst
    dst[...] = _ns.where(w, s, old)


def fromfunction(function, shape, *, dtype=dt.float64, device=None, **kwargs):
    """``function(*indices)`` called once with index arrays of ``shape`` (in ``dtype``,
    float64 by default, as NumPy's); its result is returned as it is."""
    shp = []
    for s in (shape if isinstance(shape, (tuple, list)) else (shape,)):
        if isinstance(s, bool) or not hasattr(s, "__index__"):
            raise TypeError(f"fromfunction: shape must be a tuple of ints, got {shape!r}")
        shp.append(int(s))
    shp = tuple(shp)
    grids = dispatch.OPS["indices"](shp, dtype=dtype, device=device)
    return function(*(grids[i] for i in range(len(shp))), **kwargs)


def fromiter(iter, dtype, count: int = -1, *, device=None) -> Array:  # noqa: A002
    """A 1-D Array of the values an iterable yields (read on the host, then one upload)."""
    return _ns.asarray(np.fromiter(iter, _np_dtype(dtype), count=count), device=device)


def frombuffer(buffer, dtype=dt.float64, count: int = -1, offset: int = 0, *,
               device=None) -> Array:
    """A 1-D Array of a bytes-like object's contents as ``dtype`` (a copy: NumPy's shares
    the buffer)."""
    return _ns.asarray(np.frombuffer(buffer, _np_dtype(dtype), count=count, offset=offset),
                       device=device)


def einsum_path(subscripts: str, *operands, optimize="greedy", einsum_call: bool = False):
    """NumPy's contraction order and its report for these operands' shapes (no data is read;
    grilly's einsum orders its contraction itself)."""
    if einsum_call:
        raise NotImplementedError("einsum_path: einsum_call=True is NumPy's internal form")
    shells = []
    for x in operands:
        if isinstance(x, Array):
            # a zero-strided NumPy stand-in with the operand's shape and dtype: only shapes count
            shells.append(np.broadcast_to(np.zeros((), x.dtype.np), x.shape))
        else:
            shells.append(np.asarray(x))
    return np.einsum_path(subscripts, *shells, optimize=optimize)


def iterable(y) -> bool:
    """Whether ``y`` can be iterated (an Array unless 0-d)."""
    if isinstance(y, Array):
        return y.ndim > 0
    return bool(np.iterable(y))


def may_share_memory(a, b, /, max_work=None) -> bool:
    """Whether Arrays ``a`` and ``b`` lie in one allocation (a cheap bound, as NumPy's)."""
    if not isinstance(a, Array) or not isinstance(b, Array):
        return bool(np.may_share_memory(np.asarray(a) if isinstance(a, Array) else a,
                                        np.asarray(b) if isinstance(b, Array) else b))
    if a.device != b.device or not same_memory(a._buf, b._buf) or a.size == 0 or b.size == 0:
        return False
    return bool(np.may_share_memory(_span(a), _span(b)))


def _span(x: Array) -> np.ndarray:
    """x's memory as NumPy sees it: a host buffer itself, a device buffer's stand-in."""
    buf = x._buf
    return buf if isinstance(buf, np.ndarray) else np.asarray(_Span(buf, x.dtype.itemsize))


class _Span:
    """A stand-in NumPy array for a device buffer's element span (no data: only addresses)."""

    def __init__(self, buf, itemsize: int) -> None:
        # a fake, never dereferenced base address: np.shares_memory only does arithmetic
        self.__array_interface__ = {
            "shape": tuple(buf.shape), "typestr": f"|V{itemsize}", "version": 3,
            "data": (4096 + int(getattr(buf, "offset", 0)) * itemsize, False),
            "strides": tuple(int(s) * itemsize for s in buf.strides)}


def shares_memory(a, b, /, max_work=None) -> bool:
    """Whether Arrays ``a`` and ``b`` have an element in common (exact, as NumPy's)."""
    if not isinstance(a, Array) or not isinstance(b, Array):
        return bool(np.shares_memory(np.asarray(a) if isinstance(a, Array) else a,
                                     np.asarray(b) if isinstance(b, Array) else b))
    if not may_share_memory(a, b):
        return False
    return bool(np.shares_memory(_span(a), _span(b), max_work=max_work))


# ---- printing: NumPy formats grilly's repr, so its print options are grilly's -----------------
def _host(a) -> np.ndarray:
    return np.asarray(a) if isinstance(a, Array) else np.asarray(a)


def array2string(a, max_line_width=None, precision=None, suppress_small=None,
                 separator: str = " ", prefix: str = "", **kwargs) -> str:
    """NumPy's array2string of ``a``'s values (read on the host)."""
    return np.array2string(_host(a), max_line_width, precision, suppress_small, separator,
                           prefix, **kwargs)


def array_str(a, max_line_width=None, precision=None, suppress_small=None) -> str:
    """The values of ``a`` as str(np.asarray(a)) prints them."""
    return np.array_str(_host(a), max_line_width, precision, suppress_small)


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None) -> str:
    """``repr(arr)`` (``Array([...], dtype=...)``) under these print options."""
    if not isinstance(arr, Array):
        return np.array_repr(np.asarray(arr), max_line_width, precision, suppress_small)
    opts = {k: v for k, v in (("linewidth", max_line_width), ("precision", precision),
                              ("suppress", suppress_small)) if v is not None}
    with np.printoptions(**opts):
        return repr(arr)


def set_printoptions(*args, **kwargs) -> None:
    """NumPy's set_printoptions (grilly's repr is NumPy's formatting)."""
    np.set_printoptions(*args, **kwargs)


def get_printoptions() -> dict:
    """NumPy's current print options (those grilly's repr uses)."""
    return np.get_printoptions()


@contextlib.contextmanager
def printoptions(*args, **kwargs):
    """Print options set for a ``with`` block (NumPy's printoptions)."""
    with np.printoptions(*args, **kwargs) as opts:
        yield opts



# ---- NumPy's ndarray methods that grilly's Array lacked (each a namespace function) ----------
_OPS = dispatch.OPS


def _method(name: str, fn) -> None:
    fn.__name__ = fn.__qualname__ = name
    setattr(Array, name, fn)


def _conj(self: Array) -> Array:
    """The complex conjugate (the array itself for real dtypes): gp.conj."""
    return _OPS["conj"](self)


def _searchsorted(self: Array, v, side: str = "left", sorter=None) -> Array:
    """Where ``v`` would be inserted into this sorted 1-D array: gp.searchsorted."""
    return _OPS["searchsorted"](self, v, side=side, sorter=sorter)


def _partition(self: Array, kth, axis: int = -1, kind: str = "introselect",
               order=None) -> None:
    """Partition in place around ``kth`` along ``axis`` (here a full sort); returns None."""
    dispatch.check_writable(self._buf, "partition (in place)")
    new = _OPS["partition"](self.copy() if self.requires_grad else self, kth, axis=axis,
                            kind=kind, order=order)
    self[...] = new


def _argpartition(self: Array, kth, axis: int = -1, kind: str = "introselect",
                  order=None) -> Array:
    """Indices that partition this array around ``kth``: gp.argpartition."""
    return _OPS["argpartition"](self, kth, axis=axis, kind=kind, order=order)


def _put(self: Array, indices, values, mode: str = "raise") -> None:
    """Write ``values`` at the flat positions ``indices`` in place: gp.put."""
    _OPS["put"](self, indices, values, mode=mode)


def _compress(self: Array, condition, axis: int | None = None, out=None) -> Array:
    """The slices along ``axis`` where ``condition`` is true: gp.compress."""
    return _OPS["compress"](condition, self, axis=axis, out=out)


def _choose(self: Array, choices, out=None, mode: str = "raise") -> Array:
    """Elementwise ``choices[self]``: gp.choose."""
    return _OPS["choose"](self, choices, out=out, mode=mode)


def _resize(self: Array, *new_shape, refcheck: bool = True) -> None:
    """Change this array's shape in place, keeping its first elements in C order and filling
    the rest with zeros (NumPy's ndarray.resize; np.resize/gp.resize repeat instead). Views
    made earlier keep the old data (``refcheck`` is accepted and not needed)."""
    op = "Array.resize"
    shape = new_shape[0] if len(new_shape) == 1 and isinstance(
        new_shape[0], (tuple, list)) else new_shape
    if len(new_shape) == 1 and new_shape[0] is None:
        return
    shp = []
    for s in shape:
        if isinstance(s, bool) or not hasattr(s, "__index__"):
            raise TypeError(f"{op}: new_shape must be integers, got {shape!r}")
        if int(s) < 0:
            raise ValueError(f"{op}: negative dimensions not allowed")
        shp.append(int(s))
    if self._view is not None:
        raise ValueError(f"{op}: cannot resize this array: it does not own its data")
    if self.requires_grad or self._node is not None:
        raise RuntimeError(f"{op}: cannot resize an array that is part of an autograd graph")
    n, old = math.prod(shp), self.size
    flat = _ns.reshape(self, (-1,), copy=True)
    if n <= old:
        new = _ns.asarray(flat[:n], copy=True)
    else:
        new = _ns.concat([flat, _ns.zeros((n - old,), dtype=self.dtype, device=self.device)])
    self._buf = _ns.reshape(new, tuple(shp), copy=True)._buf
    # views made earlier keep the old memory (NumPy's refcheck would refuse them): no longer
    # views of this array
    self._version = None


class FlatIter:
    """NumPy's ``x.flat``: the array's elements in C order, indexed and assigned by flat
    position (ints, slices, int arrays or lists, bool masks) and iterated."""

    def __init__(self, base: Array) -> None:
        self.base = base

    def _key(self, key):
        n = self.base.size
        if isinstance(key, Array):
            key = np.asarray(key)
        flat = np.arange(n)[key]    # positions only: computed on the host from ints
        idx = np.unravel_index(flat, self.base.shape) if self.base.ndim else ()
        return flat, idx

    def __getitem__(self, key):
        flat, idx = self._key(key)
        b = self.base
        if b.ndim == 0:
            return b[()] if np.ndim(flat) == 0 else _ns.reshape(b, (1,))[flat.tolist()]
        if np.ndim(flat) == 0:
            return b[tuple(int(i) for i in idx)]
        return b[tuple(_ns.asarray(np.asarray(i, dtype=np.int64), device=b.device)
                       for i in idx)]

    def __setitem__(self, key, value) -> None:
        b = self.base
        flat, idx = self._key(key)
        if b.ndim == 0:
            b[...] = value
            return
        count = int(np.size(flat))
        if not isinstance(value, Array) and np.ndim(value) > 0:
            value = _operand(value, b, "Array.flat", "value")
        if isinstance(value, Array) and value.size != count and count:
            value = _ns.reshape(value, (-1,))
            if value.size == 0:
                return
            value = _ns.take(value, _ns.asarray(np.arange(count) % value.size,
                                                device=b.device))   # NumPy repeats values
        b[tuple(_ns.asarray(np.asarray(i, dtype=np.int64).reshape(-1), device=b.device)
                for i in idx)] = value

    def __iter__(self):
        return iter(_ns.reshape(self.base, (-1,)))

    def __len__(self) -> int:
        return self.base.size

    def __array__(self, dtype=None, copy=None):
        h = np.asarray(self.base).reshape(-1)
        return h if dtype is None else h.astype(dtype)

    def copy(self) -> Array:
        """The elements as a new 1-D Array."""
        return _ns.asarray(_ns.reshape(self.base, (-1,)), copy=True)


for _name, _fn in (("conj", _conj), ("conjugate", _conj), ("searchsorted", _searchsorted),
                   ("partition", _partition), ("argpartition", _argpartition), ("put", _put),
                   ("compress", _compress), ("choose", _choose), ("resize", _resize)):
    if not hasattr(Array, _name):
        _method(_name, _fn)
def _set_flat(self: Array, value) -> None:
    FlatIter(self)[:] = value


Array.flat = property(FlatIter, _set_flat, doc="The elements in C order (NumPy's flatiter; "
                      "``x.flat = v`` assigns every element, v repeated as needed).")


dispatch.export(globals())
