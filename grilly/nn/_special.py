"""The error function family as array-level composites (forward values only; grilly.nn.functional
wraps them with their derivatives): erf, erfc and the exact GELU, x * Phi(x).

Method (per float32 and float64 input; float16 is computed in float32 by the callers). With
a = |x| and z = a (erf, erfc) or z = a / sqrt(2) (gelu):
- small |x| (z < 1/2): erf(x) = x + x * P(x^2), gelu(x) = x * (1/2 + x * Q(x^2)); no cancellation.
- larger z: erfc(z) = exp(-z^2) * R(z), R smooth: a polynomial in z for z < zb ("B"), and
  R(z) = K(1/z^2) / z beyond ("C"), up to the cap where erfc underflows. exp(-z^2) is taken with
  z^2 carried in two parts (a Veltkamp split of a makes hi = ah*ah exact, lo = a^2 - hi), as
  exp(-s) * (1 - r), s = fl(hi + lo), r = hi + lo - s exactly (Fast2Sum), the factor (1 - r)
  folded into the polynomial's last addition: a rounded z^2 would cost 2 z^2 ulp (200 at z = 10).
  erf = +-(1 - erfc); gelu = -a erfc(z) / 2 for x < 0 (relative accuracy down to underflow) and
  x - a erfc(z) / 2 for x > 0; the polynomials absorb the constants (1/2, 1/sqrt(2)), so gelu
  needs no division and erfc one (by a, region C).
Coefficients: Chebyshev interpolants fitted with mpmath by tools/fit_erf.py (which prints the
tables below), in powers of (v - m); for B and C, m is a float of the target precision where
the function is within 2^-12 ulp of a float, so that the constant term carries no rounding.
Fit error is below 2^-26.6 (float32) and 2^-54.6 (float64) relative. Measured on cpu (exp within
1 ulp), worst over 10^6 points per range (tests/test_float_accuracy.py), float32: erf 2 ulp,
erfc 3, gelu 3; float64 (4000 points against mpmath): erf 1.5, erfc 2.7, gelu 1.9 ulp.
gelu's tanh form (bottom of the file) carries v = x (A + B x^2) in two parts: 3 ulp.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from ..array import api as gp


class _Pieces(NamedTuple):
    """Where the pieces meet (c1, zb, cap in the variable a = |x|) and the (m, coefficients)
    of the small-|x|, B and C polynomials."""
    c1: float
    zb: float
    cap: float
    small: tuple
    B: tuple
    C: tuple


_ERF_F32 = _Pieces(0.5, 2.0, 10.3,
    (0.125, (
        0.08307523768907236, -0.34913647109517737, 0.10323657189409437, -0.024383163268193238,
        0.004719505331889098, -0.0007694534279142308,
    )),
    (1.2500433921813965, (
        0.3678138554096222, -0.20881261024305559, 0.10678903519402787, -0.050214260475677806,
        0.0220093337207212, -0.00908344098820705, 0.0035535567706986714, -0.0013121525112571877,
        0.00046973423533509215, -0.0001895603234353425, 6.229673869117625e-05,
    )),
    (0.13041043281555176, (
        0.5329455733299255, -0.206200111741537, 0.20444577875434194, -0.2964933540965425,
        0.5382022106091001, -1.1176951879912211, 2.6212474491610585, -9.040371475574695, 26.34007178722634,
    )),
)
_GELU_F32 = _Pieces(0.7071067811865476, 2.8284271247461903, 14.56639969244288,
    (0.25, (
        0.3829249225525874, -0.06171919156773524, 0.009124910006595833, -0.0010775937558573862,
        0.00010428731950077653, -8.50133963570917e-06,
    )),
    (1.7663360834121704, (
        0.3250361382961273, 0.05347407004346366, -0.02667955441401819, 0.011028589192814908,
        -0.004023078168533859, 0.001336591106910722, -0.0004114668215582058, 0.00011727019064362081,
        -3.217010309410659e-05, 1.004873622602089e-05, -2.4694229953758485e-06,
    )),
    (0.0649779811501503, (
        0.37691572308540344, -0.2918740568207091, 0.5794051680271811, -1.6827673237450949,
        6.11799740977148, -25.4532137246402, 119.88488590335974, -826.9023925765673, 4774.650354936879,
    )),
)
_ERF_F64 = _Pieces(0.5, 3.0, 27.5,
    (0.125, (
        0.08307523767617131, -0.34913647109358337, 0.10323658675594927, -0.024383165104478667,
        0.004716969080927518, -0.0007691400523053416, 0.0001081874881429891, -1.3368122563503264e-05,
        1.472638166720668e-06, -1.462091340945175e-07,
    )),
    (1.7500000000235199, (
        0.28497223473435584, -0.1309763455118621, 0.05576363008551666, -0.022259995240597664,
        0.008404319206971003, -0.003020974651277927, 0.0010392045224312417, -0.0003435333534590992,
        0.00010950528813277564, -3.375535518245492e-05, 1.008668474604225e-05, -2.9279383718344193e-06,
        8.271283496881545e-07, -2.2776185678430127e-07, 6.122702417008468e-08, -1.6084736066233616e-08,
        4.127915796785671e-09, -1.0395722602194069e-09, 2.614848219702534e-10, -6.322189607918265e-11,
        1.2849066222511116e-11, -3.035586536069986e-12, 1.2586318801674025e-12, -2.807223007514878e-13,
    )),
    (0.05621671258457226, (
        0.5495102293314345, -0.24253094413523005, 0.2945209883926689, -0.5517460378646629,
        1.3492572194051509, -3.9792145023292744, 13.521301603586755, -51.40365331768746,
        214.24199751458818, -964.5388534409035, 4634.772583653907, -23596.539615664282, 128775.63212820442,
        -724386.8860057404, 3370487.7656322606, -19670483.272194818, 283829210.0210363,
        -1890421250.0763326,
    )),
)
_GELU_F64 = _Pieces(0.7071067811865476, 4.242640687119285, 38.890872965260115,
    (0.25000000000000006, (
        0.3829249225480262, -0.06171919156745346, 0.009124911320210632, -0.0010775938370105036,
        0.00010423127574284765, -8.497877291676294e-06, 5.976570820738031e-07, -3.6924570767133014e-08,
        2.0338133475045113e-09, -1.0096237323207671e-10,
    )),
    (2.4748737340992384, (
        0.35263514935577367, 0.027881815044810986, -0.01180514518895121, 0.004202159603951092,
        -0.0013350947887379283, 0.0003897016959508847, -0.00010627520918456725, 2.7376322121527704e-05,
        -6.713055129719059e-06, 1.5760442678932962e-06, -3.558440472479772e-07, 7.754363431805153e-08,
        -1.6356783687574607e-08, 3.3480085969851035e-09, -6.664620428255405e-10, 1.2921381274412133e-10,
        -2.439025673810643e-11, 4.5091100430389124e-12, -8.340406474598315e-13, 1.473110389384225e-13,
        -2.1326465329705206e-14, 3.680073138434459e-15, -1.1584035862153919e-15, 1.8734566748246477e-16,
    )),
    (0.028108356291646826, (
        0.38856240949185145, -0.3429905504922589, 0.8330311523828686, -3.1211469189743384,
        15.265102870788414, -90.0393458709194, 611.9042595001637, -4652.527595551842, 38781.944131933495,
        -349200.36558226816, 3355933.8223552983, -34171439.46479237, 372974070.73464996,
        -4196097059.5591583, 39047901270.042725, -455774441142.4057, 13152915235389.521,
        -175207833303753.34,
    )),
)


# Veltkamp splitting constants 2^s + 1: a * SPLIT - (a * SPLIT - a) keeps the high half of a's bits
_SPLIT = {"float32": 4097.0, "float64": 134217729.0}
_TABLES = {("erf", "float32"): _ERF_F32, ("erf", "float64"): _ERF_F64,
           ("gelu", "float32"): _GELU_F32, ("gelu", "float64"): _GELU_F64}


_TWO_OVER_SQRT_PI = 1.1283791670955126


def _poly(v, piece, r=None):
    """Horner's rule for sum c_k (v - m)^k, ``piece`` = (m, coefficients); times (1 - r) if
    ``r`` is given, folded in before the last addition so that it costs no rounding of its own."""
    m, c = piece
    u = v - m
    p = u * c[-1] + c[-2]
    for a in c[-3:0:-1]:
        p = p * u + a
    up = u * p
    if r is None:
        return up + c[0]
    return (up - (up + c[0]) * r) + c[0]


def _exp_neg_square(a, split: float, half: bool):
    """(e, r) with exp(-a^2) = e (1 - r) (exp(-a^2/2) if ``half``) for 0 <= a <= cap: a^2 is
    taken exactly in two parts, r is below 2^-17 (so exp(-r) = 1 - r to far below an ulp)."""
    c = a * split
    ah = c - (c - a)                  # the high half of a's bits: ah * ah is exact
    if half:
        hi = ah * (ah * 0.5)
        lo = (a - ah) * ((a + ah) * 0.5)
    else:
        hi = ah * ah
        lo = (a - ah) * (a + ah)      # a^2 - hi to a relative 2^-24 of itself; up to 2^-11 a^2
    s = hi + lo
    r = (hi - s) + lo                 # exactly what rounding hi + lo dropped: |r| <= ulp(s)/2
    return gp.exp(-s), r


def _tail(x, kind: str):
    """(|x|, T, table): T = erfc(|x|) for kind "erf", |x| erfc(|x| / sqrt(2)) / 2 for "gelu"
    (whose B and C polynomials include the factor |x| / 2);
    accurate for |x| >= table.c1 (values below are computed, not used)."""
    d = x.dtype.name
    t = _TABLES[kind, d]
    a = gp.abs(x)
    ac = gp.minimum(a, t.cap)         # beyond the cap the result underflows (nan stays nan)
    e, r = _exp_neg_square(ac, _SPLIT[d], kind == "gelu")
    tb = e * _poly(ac, t.B, r)
    tc = e * _poly(1.0 / (ac * ac), t.C, r)
    if kind == "erf":
        tc = tc / ac
    return a, gp.where(ac < t.zb, tb, tc), t


def erf(x):
    """erf(x) for a float32 or float64 array."""
    a, tail, t = _tail(x, "erf")
    small = x + x * _poly(x * x, t.small)
    # below 2^-60 erf(x) = x * 2/sqrt(pi) to far under an ulp: one product, so that a device
    # flushing float32 subnormals (NVIDIA) does not lose x * P(x^2) of x + x * P(x^2) (<= 1 ulp)
    small = gp.where(a < 2.0**-60, x * _TWO_OVER_SQRT_PI, small)
    big = 1.0 - tail
    return gp.where(a < t.c1, small, gp.where(x < 0, -big, big))


def erfc(x):
    """erfc(x) = 1 - erf(x), accurate in relative terms for large x, for float32/float64 arrays."""
    a, tail, t = _tail(x, "erf")
    small = 1.0 - (x + x * _poly(x * x, t.small))
    return gp.where(a < t.c1, small, gp.where(x < 0, 2.0 - tail, tail))


def gelu(x):
    """x * Phi(x) (Phi the standard normal CDF) for float32 or float64 arrays."""
    a, tail, t = _tail(x, "gelu")
    small = x * (x * _poly(x * x, t.small) + 0.5)
    return gp.where(a < t.c1, small, gp.where(x < 0, -tail, x - tail))


# gelu's tanh form is x * sigmoid(v), v = x (A + B x^2), A = 2 sqrt(2/pi), B = 0.044715 A (as
# torch, the double 0.044715). For x < 0 the result's relative error is the absolute error of v
# (up to 104 in float32), so v is carried in two parts: (A_hi, A_lo) = A rounded and the rest,
# (B_hi, B_lo) = B's high half (so that B_hi times a split part is exact) and the rest, per dtype;
# derived with mpmath from the definitions.
_TANH_CONST = {
    "float32": (1.5957691669464111, -4.534068042105272e-08, 0.07135009765625, 4.718616350245272e-06),
    "float64": (1.5957691216057308, -9.96930880911092e-17, 0.071354815736413, 5.361872432578358e-10),
}
# |x| beyond which gelu_tanh(x) is x (x > 0) or -0 (x < 0) per dtype; v stays finite
_TANH_CLIP = {"float32": 16.0, "float64": 30.0}


def _split(a, split: float):
    c = a * split
    h = c - (c - a)
    return h, a - h


def _tanh_arg(x):
    """v = x (A + B x^2) as v_hi + v_lo (|x| <= clip), to about 2^-36 |v| in float32."""
    d = x.dtype.name
    sp = _SPLIT[d]
    a_hi, a_lo, b_hi, b_lo = _TANH_CONST[d]
    xh, xl = _split(x, sp)
    q1 = xh * xh                              # x^2 = q1 + q2, q1 exact
    q2 = xl * (x + xh)
    q1h, q1l = _split(q1, sp)
    p1 = q1h * b_hi                           # exact
    small = q1l * b_hi + (q1 * b_lo + q2 * (b_hi + b_lo))
    s = p1 + a_hi                             # TwoSum: s + e = p1 + a_hi exactly
    bb = s - p1
    e = (p1 - (s - bb)) + (a_hi - bb)
    t_lo = e + (small + a_lo)                 # T = A + B x^2 = s + t_lo
    sh, sl = _split(s, sp)
    v = x * s                                 # Dekker: v + err = x * s exactly
    err = ((xh * sh - v) + xh * sl + xl * sh) + xl * sl
    lo = err + x * t_lo                       # up to 2^-11 |v|: renormalize (Fast2Sum)
    hi = v + lo
    return hi, (v - hi) + lo


# below this v, exp(-v) overflows: x exp(v + S) exp(-S) instead of x / (1 + exp(-v)); v + S is
# exact there (S a multiple of v's ulp)
_TANH_LOW = {"float32": (-64.0, 32.0), "float64": (-512.0, 512.0)}


def gelu_tanh(x):
    """x * sigmoid(v) = x (1 + tanh(v / 2)) / 2, v = sqrt(8/pi) (x + 0.044715 x^3)."""
    low, shift = _TANH_LOW[x.dtype.name]
    c = _TANH_CLIP[x.dtype.name]
    xc = gp.clip(x, -c, c)
    vh, vl = _tanh_arg(xc)
    big = gp.exp(-vh)
    main = x / (1.0 + (big - big * vl))       # exp(-v) = exp(-vh) (1 - vl): |vl| < 2^-20
    small = gp.exp(vh + shift)
    tail = xc * (small + small * vl) * math.exp(-shift)
    return gp.where(vh < low, tail, main)
