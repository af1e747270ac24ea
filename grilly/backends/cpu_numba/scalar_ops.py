"""Scalar bodies of the elementwise kernels, compiled by Numba into the loops elementwise.py
generates. ``name__float32`` (a dtype) or ``name__k`` (a kind: b, i, u, f, c) overrides ``name``.
Shifts and pow also get the dtype's bit width and a typed one (elementwise._EXTRA): a bare
literal would turn uint64 arithmetic into float64 in Numba."""
# ruff: noqa: E731
import math

import numpy as np


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
def expm1__c(a): return np.exp(a) - 1
def log(a): return np.log(a)
def log1p(a): return np.log1p(a)
def log1p__c(a): return np.log(1 + a)
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
    return a  # zeros (keeping their sign) and NaN


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


def add(a, b): return a + b
def subtract(a, b): return a - b
def multiply(a, b): return a * b
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


def floor_divide(a, b):
    if b == 0:
        return a - a
    q = a // b
    return q


def floor_divide__f(a, b):
    if b == 0:
        return a / b
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
