"""Bessel functions of the first and second kind, orders 0 and 1 (torch.special.bessel_j0,
bessel_j1, bessel_y0, bessel_y1; scipy.special j0, j1, y0, y1) and spherical_bessel_j0, with
their derivatives (torch has none): J0' = -J1, J1' = J0 - J1/x, Y0' = -Y1, Y1' = Y0 - Y1/x.

Method (float32 and float64; tools/fit_bessel_jy.py fits every table at 40 digits):
- |x| <= 8: J0 = (x^2 - j1^2)(x^2 - j2^2) R0(x^2), J1 = x (x^2 - k1^2)(x^2 - k2^2) R1(x^2), with
  R0, R1 Chebyshev series in x^2/32 - 1 and each x^2 - z^2 = (x - z)(x + z) formed with z as a
  float pair (x - z is exact next to the zero), so J keeps its relative accuracy next to its
  zeros below 8; Y0 = T0(x^2) + 2/pi log(x) J0(x), Y1 = x T1(x^2) + 2/pi log(x) J1(x) -
  2/(pi x), whose terms cancel next to Y's zeros (an absolute error there, as torch's Cephes).
- |x| > 8: Hankel's form sqrt(2/(pi x)) (P cos chi -+ Q sin chi), chi = x - (2n+1) pi/4, with
  P, Q Chebyshev series in 16/x - 1 and cos chi, sin chi from the correctly rounded sin x and
  cos x (no reduction of x - pi/4 is rounded); next to a zero the error is absolute (the
  amplitude's ulp).
spherical_bessel_j0 is sin(x)/x (its series 1 - x^2/6 + x^4/120 near 0).
J0 is even, J1 odd; Y is -inf at 0 and NaN below, as torch's; all are 0 at +-inf.
"""
from __future__ import annotations

import math

import numpy as np

from ..array import api as gp
from ..array.array import Array
from ..autograd import Function
from .bessel_k import _clenshaw
from .gamma import _compute, _floating

__all__ = ["j0", "j1", "spherical_j0", "y0", "y1"]

J0_SMALL = (
    0.007037047817985741, -0.0025247766263205465, -0.0031888162220919127, 0.0008474990289384992,
    7.686664371657265e-05, -5.9558640817147286e-05, 1.138440756736742e-05,
    -1.2705991095991462e-06, 9.794593296978336e-08, -5.632236589497864e-09, 2.530478425735527e-10,
    -9.170137395845953e-12, 2.744534301717891e-13, -6.9103167865779005e-15,
    1.4857416749889703e-16, -2.7617005382965375e-18,
)
J1_SMALL = (
    0.0012846541315367098, 0.00010773378142810707, -0.0004539147679489309, 5.533938401133615e-05,
    1.7227800735804668e-05, -6.040404856126747e-06, 8.980330017817015e-07, -8.442418813765406e-08,
    5.6732696779611404e-09, -2.9027152795937455e-10, 1.1769440087164354e-11,
    -3.890283727049944e-13, 1.0709713272950926e-14, -2.497432667205101e-16, 5.001749760739352e-18,
)
Y0_SMALL = (
    -0.03314611320328494, -0.2744743055297453, 0.17903431407718265, 0.26156734625504663,
    -0.17730201278114358, 0.04719668959576339, -0.007287962479552079, 0.0007531135932577742,
    -5.632079141056987e-05, 3.206532537654801e-06, -1.44072332740187e-07, 5.248794787330516e-09,
    -1.5837552541812015e-10, 4.02633081830612e-12, -8.747341203310769e-14, 1.6434898714919468e-15,
    -2.6977881152566837e-17, 3.9032584173475982e-19,
)
Y1_SMALL = (
    0.0025380132357417816, -0.01608717304766875, -0.09591204536083074, 0.08445197259652346,
    -0.028328123944594365, 0.005289897544167113, -0.0006414551451326356, 5.505982873338744e-05,
    -3.53808001868935e-06, 1.7707804556154404e-07, -7.11055004989928e-09, 2.344337905911516e-10,
    -6.4651518414115946e-12, 1.51429151205002e-13, -3.0511859694473254e-15, 5.34668038572867e-17,
    -8.224911372021585e-19,
)
P0 = (
    0.9995950647686729, -0.0005380795613960692, -0.0001317967712336157, 1.5142249704864447e-06,
    1.5846861792063246e-07, -8.560695539457116e-09, -2.95723433548997e-10, 6.573556253702646e-11,
    -2.237497028307757e-12, -4.482114036266459e-13, 6.95482663742999e-14, -1.5133981172201887e-15,
    -9.242215542780063e-16, 1.5557716430252464e-16, -4.757606017491085e-18,
    -2.7384730066249238e-18, 6.05056665401149e-19,
)
Q0 = (
    -0.007769355694205321, -0.007748032309654477, 2.536541165430796e-05, 3.942735983997114e-06,
    -1.072349829912882e-07, -7.213897993277536e-09, 7.376460289335452e-10, 1.506878108917761e-12,
    -5.7458953731779006e-12, 4.599657420218946e-13, 2.2703231805908186e-14,
    -8.878901561608626e-15, 7.449651700780086e-16, 5.847234758993427e-17, -2.4098822024574667e-17,
    2.6519552755788034e-18, 1.2793339310309698e-19,
)
P1 = (
    1.0006775358659135, 0.0009010072519590819, 0.00022172434918599454, -1.965759463191044e-06,
    -2.0889531143270216e-07, 1.0281443508939733e-08, 3.759705478930489e-10, -7.63889135778614e-11,
    2.3873466989069313e-12, 5.182548873305728e-13, -7.693968937262689e-14, 1.440081073097258e-15,
    1.0329419963766428e-15, -1.6820578397317565e-16, 4.5867767459822516e-18,
    3.017526437349789e-18, -6.476472759153595e-19,
)
Q1 = (
    0.023376829986285805, 0.023346801223545575, -3.576010590901382e-05, -5.608631494926272e-06,
    1.327389408433978e-07, 9.169758450664271e-09, -8.683888037072729e-10, -3.7807300514678015e-12,
    6.631455860763736e-12, -5.058439043054705e-13, -2.7207815692154984e-14, 9.853807087854517e-15,
    -7.939764735896268e-16, -6.757329811619097e-17, 2.6249905608278096e-17,
    -2.7996230871815643e-18, -1.5113573335980428e-19, 1.0389103229113852e-19,
)
# the zeros below 8 as float64 pairs (hi, lo): x - hi is exact next to them
J0_ZEROS = ((2.404825557695773, -1.176691651530894e-16), (5.520078110286311, 8.088597146146722e-17))
J1_ZEROS = ((3.8317059702075125, -1.5269184090088067e-16), (7.015586669815619, -9.414165653410389e-17))
_TWO_OVER_PI = 2.0 / math.pi
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)


def _pair32(z: tuple) -> tuple:
    """A float64 pair (hi, lo) as a float32 pair (x - hi exact in float32 arithmetic)."""
    hi = float(np.float32(z[0]))
    return hi, float(np.float32((z[0] - hi) + z[1]))


_ZEROS = {"float64": (J0_ZEROS, J1_ZEROS),
          "float32": (tuple(map(_pair32, J0_ZEROS)), tuple(map(_pair32, J1_ZEROS)))}
# Chebyshev terms per dtype: all in float64; those above 1e-9 of the first in float32
_TABLES = {"J0": J0_SMALL, "J1": J1_SMALL, "Y0": Y0_SMALL, "Y1": Y1_SMALL, "P0": P0, "Q0": Q0,
           "P1": P1, "Q1": Q1}
def _head(v: tuple, rel: float) -> tuple:
    """The series cut after its last coefficient above ``rel`` of its largest."""
    top = max(map(abs, v))
    return v[:max(k for k, c in enumerate(v) if abs(c) > rel * top) + 1]


_CUT = {"float64": _TABLES, "float32": {k: _head(v, 1e-9) for k, v in _TABLES.items()}}


def _key(x) -> str:
    return "float64" if x.dtype == gp.float64 else "float32"


def _coef(x, name: str) -> list:
    return list(_CUT[_key(x)][name])


def _factor(a, zeros) -> Array:
    """prod (a^2 - z^2) over the float-pair zeros, each (a - z_hi - z_lo)(a + z_hi)."""
    out = None
    for hi, lo in zeros:
        f = ((a - hi) - lo) * (a + hi)
        out = f if out is None else out * f
    return out


def _parts(x, order: int):
    """(small, (P, Q, sin a, cos a, sqrt(1 / (pi a))), a = |x|, a <= 8) for order 0 or 1;
    each part finite garbage on the other side."""
    a = gp.abs(x)
    low = a <= 8.0
    am = gp.where(low, a, 0.0)
    s = am * am * (1.0 / 32.0) - 1.0
    z0, z1 = _ZEROS[_key(x)]
    w = (am * am + 16.0) * (1.0 / 16.0)   # (the fits are flattened by w^2: fit_bessel_jy.py)
    if order == 0:
        small = _factor(am, z0) * (_clenshaw(_coef(x, "J0"), s) / (w * w))
    else:
        small = am * _factor(am, z1) * (_clenshaw(_coef(x, "J1"), s) / (w * w))
    ab = gp.where(low, 16.0, a)
    t = 16.0 / ab - 1.0
    p = _clenshaw(_coef(x, "P0" if order == 0 else "P1"), t)
    q = _clenshaw(_coef(x, "Q0" if order == 0 else "Q1"), t)
    big = (p, q, gp.sin(ab), gp.cos(ab), _INV_SQRT_PI / gp.sqrt(ab))
    return small, big, a, am, low


def _j(x, order: int):
    small, (p, q, sn, c, amp), a, _, low = _parts(x, order)
    if order == 0:
        big = amp * (p * (c + sn) - q * (sn - c))
    else:
        big = amp * (p * (sn - c) + q * (sn + c))
    v = gp.where(low, small, big)
    v = gp.where(gp.isinf(a), 0.0, v)
    return gp.where(x < 0, -v, v) if order == 1 else v


def _y(x, order: int):
    j_small, (p, q, sn, c, amp), a, am, low = _parts(x, order)
    s = am * am * (1.0 / 32.0) - 1.0
    lg = gp.log(gp.where(low & (am > 0), am, 1.0))
    if order == 0:
        small = _clenshaw(_coef(x, "Y0"), s) + _TWO_OVER_PI * lg * j_small
        big = amp * (p * (sn - c) + q * (c + sn))
    else:
        ai = gp.where(am > 0, am, 1.0)
        small = am * _clenshaw(_coef(x, "Y1"), s) + _TWO_OVER_PI * lg * j_small \
            - _TWO_OVER_PI / ai
        big = amp * (q * (sn - c) - p * (sn + c))
    v = gp.where(low, small, big)
    v = gp.where(x == 0.0, -math.inf, gp.where(gp.isinf(x) & (x > 0), 0.0, v))
    return gp.where((x < 0.0) | gp.isnan(x), math.nan, v)


def _sj0(x):
    """sin(x) / x; 1 - x^2/6 + x^4/120 where x^2 is below the dtype's eps (and 1 at 0)."""
    small = gp.abs(x) < (1e-4 if x.dtype == gp.float64 else 1e-2)
    xs = gp.where(small, 1.0, x)
    x2 = x * x
    series = 1.0 - x2 * (1.0 / 6.0) * (1.0 - x2 * (1.0 / 20.0))
    v = gp.where(small, series, gp.sin(xs) / xs)
    return gp.where(gp.isinf(x), 0.0, v)


_KERNELS = {"j0": lambda x: _j(x, 0), "j1": lambda x: _j(x, 1), "y0": lambda x: _y(x, 0),
            "y1": lambda x: _y(x, 1), "sj0": _sj0}


class _BesselJY(Function):
    """One of j0, j1, y0, y1, spherical j0 with its derivative."""

    @staticmethod
    def forward(ctx, x, kind: str):
        out = _compute(_KERNELS[kind], x)
        ctx.save_for_backward(x, out)
        ctx.kind = kind
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        kind = ctx.kind
        if kind == "j0":
            d = -j1(x)
        elif kind == "y0":
            d = -y1(x)
        elif kind == "j1":
            # J1'(0) = 1/2 (J1(x) / x -> 1/2)
            xs = gp.where(x == 0, 1.0, x)
            d = gp.where(x == 0, 0.5, j0(x) - out / xs)
        elif kind == "y1":
            d = y0(x) - out / x
        else:   # (cos x - sin(x)/x) / x, 0 at 0
            xs = gp.where(x == 0, 1.0, x)
            d = gp.where(x == 0, 0.0, (gp.cos(xs) - out) / xs)
        return g * d, None


def j0(x: Array) -> Array:
    """The Bessel function J0 (torch.special.bessel_j0, scipy.special.j0)."""
    return _BesselJY.apply(_floating(x, "j0"), "j0")


def j1(x: Array) -> Array:
    """The Bessel function J1 (torch.special.bessel_j1, scipy.special.j1)."""
    return _BesselJY.apply(_floating(x, "j1"), "j1")


def y0(x: Array) -> Array:
    """The Bessel function of the second kind Y0 (torch.special.bessel_y0, scipy.special.y0)."""
    return _BesselJY.apply(_floating(x, "y0"), "y0")


def y1(x: Array) -> Array:
    """The Bessel function of the second kind Y1 (torch.special.bessel_y1, scipy.special.y1)."""
    return _BesselJY.apply(_floating(x, "y1"), "y1")


def spherical_j0(x: Array) -> Array:
    """sin(x) / x, 1 at 0 (torch.special.spherical_bessel_j0)."""
    return _BesselJY.apply(_floating(x, "spherical_bessel_j0"), "sj0")
