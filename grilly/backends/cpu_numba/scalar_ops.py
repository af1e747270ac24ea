"""Scalar bodies of the elementwise kernels, compiled by Numba into the loops elementwise.py
generates. ``name__float32`` (a dtype) or ``name__k`` (a kind: b, i, u, f, c) overrides ``name``.
Shifts and pow also get the dtype's bit width and a typed one (elementwise._EXTRA): a bare
literal would turn uint64 arithmetic into float64 in Numba."""
# ruff: noqa: E731
import math

import numpy as np
from numba import njit


def abs(a):
    return np.abs(a)


def abs__u(a):
    return a


def acos(a): return np.arccos(a)
def acosh(a): return np.arccosh(a)
def asin(a): return np.arcsin(a)
def asinh(a): return np.arcsinh(a)
def atan(a): return np.arctan(a)
def atanh(a): return np.arctanh(a)
def cos(a): return np.cos(a)
def cosh(a): return np.cosh(a)
def sin(a): return np.sin(a)
def sinh(a): return np.sinh(a)
def tan(a): return np.tan(a)
def tanh(a): return np.tanh(a)
def tanh__c(z):
    # Kahan's formula as in FreeBSD's ctanh: the naive sinh/cosh quotient turns inf/inf into
    # NaN once |real| passes ~44 (complex64) and misses the standard's special cases.
    x = float(z.real)
    y = float(z.imag)
    if not math.isfinite(x):
        if x != x:
            return complex(x, y if y == 0 else x * y)
        im = y if math.isinf(y) else math.sin(y) * math.cos(y)
        return complex(math.copysign(1.0, x), math.copysign(0.0, im))
    if not math.isfinite(y):
        return complex(x if x == 0 else y - y, y - y)
    if math.fabs(x) >= 22.0:
        e = math.exp(-math.fabs(x))
        return complex(math.copysign(1.0, x), 4.0 * math.sin(y) * math.cos(y) * e * e)
    t = math.tan(y)
    beta = 1.0 + t * t
    s = math.sinh(x)
    rho = math.sqrt(1.0 + s * s)
    den = 1.0 + beta * s * s
    return complex(beta * rho * s / den, t / den)
def exp(a): return np.exp(a)
def exp__float32(x):
    # Branch-free so LLVM vectorizes it (libm's expf is scalar): Cody-Waite reduction to
    # r in [-ln2/2, ln2/2], a degree-7 polynomial, 2^n built from exponent bits in two halves
    # so subnormal results stay right. Max error about 1.4 ulp (numpy's SIMD exp: about 3).
    xc = min(max(x, np.float32(-104.0)), np.float32(89.0))
    n = np.rint(xc * np.float32(1.4426950408889634))
    r = xc - n * np.float32(0.693359375) - n * np.float32(-2.12194440e-4)
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = p * r * r + r + np.float32(1.0)
    ni = np.int32(n)
    h = ni >> 1
    res = p * np.int32((h + 127) << 23).view(np.float32) * np.int32((ni - h + 127) << 23).view(np.float32)
    # conditional expressions, not if-blocks: the if-blocks stop LLVM vectorizing the loop
    res = np.float32(np.inf) if x > np.float32(88.72283935546875) else res
    return x if x != x else res


def expm1(a): return np.expm1(a)


def expm1__c(a):
    # exp(z) - 1 cancels near 0; e^x cos y - 1 = expm1(x) - 2 e^x sin^2(y/2) does not, and
    # stays exactly -1 once e^x underflows. Non-finite parts and overflowing exp keep
    # exp(z) - 1: that path has the Annex G cases.
    x, y = np.float64(a.real), np.float64(a.imag)
    if not (np.isfinite(x) and np.isfinite(y)):
        return np.exp(a) - 1
    if y == 0:
        return complex(np.expm1(x) + 0.0, y)  # + 0.0: expm1(-0 + 0j) is +0 + 0j
    if x > 700.0:  # the - 1 is lost; e^x in halves so e^x cos y may stay finite past e^709
        h = np.exp(x / 2)
        return complex(h * np.cos(y) * h, h * np.sin(y) * h)
    s = np.sin(y / 2)
    e = np.exp(x)
    return complex(np.expm1(x) - 2 * s * s * e + 0.0, e * np.sin(y))


def log(a): return np.log(a)
def log1p(a): return np.log1p(a)


@njit(inline="always")
def _two_sum(a, b):
    """a + b as a rounded sum and its exact error (Knuth)."""
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


@njit(inline="always")
def _two_sq(a):
    """a * a as a rounded product and its exact error (Dekker's split; |a| < 2^996)."""
    c = 134217729.0 * a
    h = c - (c - a)
    lo = a - h
    p = a * a
    return p, ((h * h - p) + 2 * h * lo) + lo * lo


def log1p__c(a):
    # log|1 + z| = log1p(2x + x^2 + y^2) / 2, the sum in double-double where |1 + z| is near 1
    # (the only place it cancels); the imaginary part is atan2(y, 1 + x), keeping y's signed zero
    # on the cut (log(1 + z) would add +0j to it). Non-finite parts keep log(1 + z): Annex G.
    x, y = np.float64(a.real), np.float64(a.imag)
    if not (np.isfinite(x) and np.isfinite(y)):
        return np.log(1 + a)
    u = 1.0 + x
    im = np.arctan2(y, u)
    m = np.hypot(u, y)
    if 0.7 < m < 1.4:
        p, pe = _two_sq(x)
        q, qe = _two_sq(y)
        s1, e1 = _two_sum(2 * x, p)
        s2, e2 = _two_sum(s1, q)
        return complex(np.log1p(s2 + (e1 + e2 + pe + qe)) / 2, im)
    if np.isinf(m):  # |1 + z| overflows, its half does not
        return complex(np.log(np.hypot(u / 2, y / 2)) + np.log(2.0), im)
    return complex(np.log(m), im)
def log2(a): return np.log2(a)
def log2__c(a):
    z = np.log(a)  # scale parts separately: complex division would turn inf into nan
    return complex(z.real / np.log(2.0), z.imag / np.log(2.0))
def log10(a): return np.log10(a)
def log10__c(a):
    z = np.log(a)
    return complex(z.real / np.log(10.0), z.imag / np.log(10.0))
def sqrt(a): return np.sqrt(a)
def reciprocal(a): return 1.0 / a


# Complex elementary functions: special values follow C99 Annex G (as numpy's npymath and
# CPython's cmath do), finite inputs use CPython cmathmodule's formulas. Both complex dtypes are
# evaluated in float64 so complex64 neither overflows early nor loses the tiny parts.
_c_LARGE = 1.7976931348623157e308 / 4  # beyond this |x|, |y|: hypot-style sums would overflow
_c_SQRT_LARGE = math.sqrt(_c_LARGE)
_c_LOG_LARGE = math.log(_c_LARGE)  # beyond this |x|, cosh/sinh overflow before the product
_c_SQRT_MIN = math.sqrt(2.2250738585072014e-308)
_c_LN4 = 2 * math.log(2.0)
_c_PI = math.pi


def acos__c(a):
    x, y = np.float64(a.real), np.float64(a.imag)
    if np.isnan(x) or np.isnan(y):
        if np.isinf(x):  # imaginary sign unspecified: numpy's -inf
            return complex(np.nan, -np.inf)
        if np.isinf(y):
            return complex(np.nan, -y)
        if x == 0:
            return complex(_c_PI / 2, np.nan)
        return complex(np.nan, np.nan)
    if np.isinf(x) or np.isinf(y):
        if np.isinf(x) and np.isinf(y):
            re = _c_PI / 4 if x > 0 else 3 * _c_PI / 4
        elif np.isinf(x):
            re = 0.0 if x > 0 else _c_PI
        else:
            re = _c_PI / 2
        return complex(re, -np.copysign(np.inf, y))
    if np.fabs(x) > _c_LARGE or np.fabs(y) > _c_LARGE:
        m = np.log(np.hypot(x / 2, y / 2)) + _c_LN4
        return complex(np.arctan2(np.fabs(y), x), -np.copysign(m, y) if x < 0 else np.copysign(m, -y))
    s1 = np.sqrt(complex(1.0 - x, -y))
    s2 = np.sqrt(complex(1.0 + x, y))
    return complex(2 * np.arctan2(s1.real, s2.real), np.arcsinh(s2.real * s1.imag - s2.imag * s1.real))


def acosh__c(a):
    x, y = np.float64(a.real), np.float64(a.imag)
    if np.isnan(x) or np.isnan(y):
        if np.isinf(x) or np.isinf(y):
            return complex(np.inf, np.nan)
        if x == 0:
            return complex(np.nan, _c_PI / 2)
        return complex(np.nan, np.nan)
    if np.isinf(x) or np.isinf(y):
        if np.isinf(x) and np.isinf(y):
            im = _c_PI / 4 if x > 0 else 3 * _c_PI / 4
        elif np.isinf(x):
            im = 0.0 if x > 0 else _c_PI
        else:
            im = _c_PI / 2
        return complex(np.inf, np.copysign(im, y))
    if np.fabs(x) > _c_LARGE or np.fabs(y) > _c_LARGE:
        return complex(np.log(np.hypot(x / 2, y / 2)) + _c_LN4, np.arctan2(y, x))
    s1 = np.sqrt(complex(x - 1.0, y))
    s2 = np.sqrt(complex(x + 1.0, y))
    return complex(np.arcsinh(s1.real * s2.real + s1.imag * s2.imag), 2 * np.arctan2(s1.imag, s2.real))


def asinh__c(a):
    x, y = np.float64(a.real), np.float64(a.imag)
    if np.isnan(x) or np.isnan(y):
        if np.isinf(x) or np.isinf(y):
            return complex(np.inf if np.isnan(x) else x, np.nan)
        if y == 0:
            return complex(np.nan, y)
        return complex(np.nan, np.nan)
    if np.isinf(x) or np.isinf(y):
        if np.isinf(x) and np.isinf(y):
            im = _c_PI / 4
        else:
            im = 0.0 if np.isinf(x) else _c_PI / 2
        return complex(np.copysign(np.inf, x), np.copysign(im, y))
    if np.fabs(x) > _c_LARGE or np.fabs(y) > _c_LARGE:
        m = np.log(np.hypot(x / 2, y / 2)) + _c_LN4
        return complex(np.copysign(m, x) if y >= 0 else -np.copysign(m, -x), np.arctan2(y, np.fabs(x)))
    s1 = np.sqrt(complex(1.0 + y, -x))
    s2 = np.sqrt(complex(1.0 - y, x))
    return complex(np.arcsinh(s1.real * s2.imag - s2.real * s1.imag),
                   np.arctan2(y, s1.real * s2.real - s1.imag * s2.imag))


def atanh__c(a):
    x, y = np.float64(a.real), np.float64(a.imag)
    if np.isnan(x) or np.isnan(y):
        if np.isinf(x) or x == 0:
            return complex(np.copysign(0.0, x), np.nan)
        if np.isinf(y):
            return complex(0.0, np.copysign(_c_PI / 2, y))
        return complex(np.nan, np.nan)
    if np.isinf(x) or np.isinf(y):
        return complex(np.copysign(0.0, x), np.copysign(_c_PI / 2, y))
    s = 1.0
    if x < 0:  # atanh is odd: work with x >= 0
        x, y, s = -x, -y, -1.0
    ay = np.fabs(y)
    if x > _c_SQRT_LARGE or ay > _c_SQRT_LARGE:
        h = np.hypot(x / 2, y / 2)
        re = x / 4 / h / h
        im = -np.copysign(_c_PI / 2, -y)
    elif x == 1.0 and ay < _c_SQRT_MIN:
        if ay == 0:
            re = np.inf
            im = y
        else:
            re = -np.log(np.sqrt(ay) / np.sqrt(np.hypot(ay, 2.0)))
            im = np.copysign(np.arctan2(2.0, -ay) / 2, y)
    else:
        re = np.log1p(4 * x / ((1 - x) * (1 - x) + ay * ay)) / 4
        im = -np.arctan2(-2 * y, (1 - x) * (1 + x) - ay * ay) / 2
    return complex(s * re, s * im)


def cosh__c(a):
    x, y = np.float64(a.real), np.float64(a.imag)
    if np.isnan(x):
        return complex(np.nan, y if y == 0 else np.nan)
    if np.isinf(x):
        if y == 0:
            return complex(np.inf, y * np.copysign(1.0, x))
        if np.isfinite(y):
            return complex(np.inf * np.cos(y), np.copysign(np.inf, x) * np.sin(y))
        return complex(np.inf, np.nan)
    if not np.isfinite(y):
        return complex(np.nan, 0.0 if x == 0 else np.nan)
    if y == 0:  # sin(0) * sinh(x) would be 0 * inf = NaN once sinh overflows
        return complex(np.cosh(x), y * np.copysign(1.0, x))
    if np.fabs(x) > _c_LOG_LARGE:  # cosh(x) overflows, cos(y) * cosh(x) may not
        xm = x - np.copysign(1.0, x)
        return complex(np.cos(y) * np.cosh(xm) * math.e, np.sin(y) * np.sinh(xm) * math.e)
    return complex(np.cos(y) * np.cosh(x), np.sin(y) * np.sinh(x))


def sinh__c(a):
    x, y = np.float64(a.real), np.float64(a.imag)
    if np.isnan(x):
        return complex(np.nan, y if y == 0 else np.nan)
    if np.isinf(x):
        if y == 0:
            return complex(x, y)
        if np.isfinite(y):
            return complex(x * np.cos(y), np.inf * np.sin(y))
        return complex(np.inf, np.nan)  # real sign unspecified: numpy's +inf
    if not np.isfinite(y):
        return complex(x if x == 0 else np.nan, np.nan)
    if y == 0:
        return complex(np.sinh(x), y)
    if np.fabs(x) > _c_LOG_LARGE:
        xm = x - np.copysign(1.0, x)
        return complex(np.cos(y) * np.sinh(xm) * math.e, np.sin(y) * np.cosh(xm) * math.e)
    return complex(np.cos(y) * np.sinh(x), np.sin(y) * np.cosh(x))



def bitwise_invert(a): return ~a
def bitwise_invert__b(a): return not a


def ceil(a): return a
def ceil__f(a): return np.ceil(a)
def floor(a): return a
def floor__f(a): return np.floor(a)
def trunc(a): return a
def trunc__f(a): return np.trunc(a)
def round(a): return a
def round__f(a): return np.rint(a)
def round__c(a): return complex(np.rint(a.real), np.rint(a.imag))
def conj(a): return a
def conj__c(a): return np.conj(a)
def real(a): return a
def real__c(a): return a.real
def imag(a): return 0
def imag__c(a): return a.imag


def isfinite(a): return True
def isfinite__f(a): return np.isfinite(a)
def isfinite__c(a): return np.isfinite(a.real) and np.isfinite(a.imag)
def isinf(a): return False
def isinf__f(a): return np.isinf(a)
def isinf__c(a): return np.isinf(a.real) or np.isinf(a.imag)
def isnan(a): return False
def isnan__f(a): return np.isnan(a)
def isnan__c(a): return np.isnan(a.real) or np.isnan(a.imag)
def logical_not(a): return not a
def negative(a): return -a
def positive(a): return a


def sign(a):
    return (a > 0) - (a < 0)


def sign__u(a):
    return 1 if a > 0 else 0


def sign__f(a):
    if a > 0:
        return 1.0
    if a < 0:
        return -1.0
    return a - a  # +0 for both zeros, NaN for NaN


def sign__c(a):
    if a.real != a.real or a.imag != a.imag:
        return complex(np.nan, np.nan)
    m = np.abs(a)
    if m == 0:
        return 0j
    if np.isinf(m):
        # direction of an infinite value: only the infinite parts count
        re = (1.0 if a.real > 0 else -1.0) if np.isinf(a.real) else 0.0
        im = (1.0 if a.imag > 0 else -1.0) if np.isinf(a.imag) else 0.0
        n = math.sqrt(re * re + im * im)
        return complex(re / n, im / n)
    return a / m


def signbit(a): return np.signbit(a)
def square(a): return a * a


def square__complex64(a): return _cmul64(a, a)


def add(a, b): return a + b
def subtract(a, b): return a - b
def multiply(a, b): return a * b


@njit(inline="always")
def _cmul64(a, b):
    """A complex64 product computed in float64."""
    # in float64, as numpy does: float32 products overflow (inf - inf = NaN) for parts ~1e19
    # whose complex product is finite; the float32 parts multiply exactly in float64
    ar, ai = np.float64(a.real), np.float64(a.imag)
    br, bi = np.float64(b.real), np.float64(b.imag)
    return complex(ar * br - ai * bi, ar * bi + ai * br)


def multiply__complex64(a, b): return _cmul64(a, b)
def divide(a, b): return a / b


def divide__c(a, b):
    # Smith's algorithm: numba's complex division raises on a zero divisor
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    if br == 0 and bi == 0:
        return complex(ar / br if ar != 0 or ai != ai else (np.nan if ar == 0 else ar / br),
                       ai / br if ai != 0 or ar != ar else (np.nan if ai == 0 else ai / br))
    if np.abs(br) >= np.abs(bi):
        if br == 0:
            return complex(np.nan, np.nan)
        r = bi / br
        d = br + bi * r
        return complex((ar + ai * r) / d, (ai - ar * r) / d)
    r = br / bi
    d = br * r + bi
    return complex((ar * r + ai) / d, (ai * r - ar) / d)


_c_div = njit(inline="always")(divide__c)


def reciprocal__c(a):
    # 1 / a by divide's rule (the standard asks for it): numba's own complex division raises
    # ZeroDivisionError on 0j; this gives inf + nan j there, as numpy's 1 / 0j does
    return _c_div(complex(1.0, 0.0), a)


def floor_divide(a, b):
    if b == 0:
        return a - a
    q = a // b
    return q


def floor_divide__f(a, b):
    if b == 0 or not (np.isfinite(a) and np.isfinite(b)):
        return a / b  # IEEE division gives the standard's special cases (signed 0, inf, NaN)
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        div -= 1.0
    if div != 0:
        fd = np.floor(div)
        if div - fd > 0.5:
            fd += 1.0
        return fd
    return np.copysign(0.0, a / b)


def remainder(a, b):
    if b == 0:
        return a - a
    return a % b


def remainder__f(a, b):
    if b == 0:
        return np.fmod(a, b)
    mod = np.fmod(a, b)
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod += b
    else:
        mod = np.copysign(0.0, b)
    return mod


def pow(a, b, one):
    # integer power by squaring; negative exponents give 0 except for bases 1 and -1
    if b < 0:
        if a == one:
            return one
        if a == -one:
            return one if b % 2 == 0 else -one
        return a - a
    r = one
    base = a
    e = b
    while e > 0:
        if e & 1:
            r = r * base
        base = base * base
        e >>= 1
    return r


def pow__f(a, b, one): return a ** b
def pow__c(a, b, one): return a ** b
def atan2(a, b): return np.arctan2(a, b)
def copysign(a, b): return np.copysign(a, b)
def hypot(a, b): return np.hypot(a, b)
def logaddexp(a, b): return np.logaddexp(a, b)


def logaddexp__float32(a, b):
    # in float64: float32's max + log1p(exp(-|a - b|)) cancels to ~10 ulp where the sum is near 0
    return np.float32(np.logaddexp(np.float64(a), np.float64(b)))
def nextafter(a, b): return np.nextafter(a, b)


def maximum(a, b):
    return a if a >= b else b


def maximum__f(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


def minimum(a, b):
    return a if a <= b else b


def minimum__f(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


def bitwise_and(a, b): return a & b
def bitwise_or(a, b): return a | b
def bitwise_xor(a, b): return a ^ b


def bitwise_left_shift(a, b, bits, one):
    if b < 0 or b >= bits:
        return a - a
    return a << b


def bitwise_right_shift(a, b, bits, one):
    if b < 0 or b >= bits:
        return a - a if a >= 0 else a - a - one
    return a >> b


def logical_and(a, b): return a and b
def logical_or(a, b): return a or b
def logical_xor(a, b): return a != b
def equal(a, b): return a == b
def not_equal(a, b): return a != b
def less(a, b): return a < b
def less_equal(a, b): return a <= b
def greater(a, b): return a > b
def greater_equal(a, b): return a >= b


def where(c, a, b):
    return a if c else b
