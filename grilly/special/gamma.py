"""log Gamma, digamma and polygamma on the whole real line, as namespace compositions with
their derivatives (gammaln' = digamma, digamma' = polygamma(1), polygamma(n)' = polygamma(n+1)).

Method (float32 and float64; float16/bfloat16 computed in float32, integers in float64):
- S(u) = lgamma(2 + u) on |u| <= 1/2 is its Taylor series at 0 (tools/fit_gamma.py:
  c_1 = 1 - euler_gamma, c_k = (-1)^k (zeta(k) - 1) / k; 14 terms in float32, 28 in float64),
  so lgamma's roots at 1 and 2 keep their relative accuracy (u = x - 1 or x - 2 is exact).
- lgamma, x > 0: x in [1.5, 2.5) is S(x - 2); below, shifted up (S(x - 1) - log x, and
  S(x) - log x - log1p x); in [2.5, 10), shifted down by n = floor(x - 1.5) with
  log((x - 1)...(x - n)) added (positive terms); from 10, Stirling's series.
- digamma, x > 0: around its root x0 = 1.4616 (|x - x0| < 0.29) the Taylor series at x0
  (x0 as a float64 pair, so x - x0 keeps its digits); [1.75, 2.5) is S'(x - 2); other x are
  shifted into those (down: + sum of 1/(x - j), positive; up: - 1/x, - 1/(x + 1)); from 10,
  the asymptotic series.
- polygamma(n >= 1), x > 0: n! sum_{j < m} 1/(x + j)^(n+1) plus the asymptotic series at
  x + m (every term of one sign: no cancellation).
- x <= 0 by reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x), digamma(x) =
  digamma(1 - x) - pi cot(pi x), polygamma(n, x) = (-1)^n polygamma(n, 1 - x) - pi d^n/dx^n
  cot(pi x), with sin and cos of pi r, r = x - round(x) (exact). Poles: lgamma +inf,
  digamma -inf at 0 (torch's) and NaN at the negative integers, polygamma NaN... as torch.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..array import api as gp
from ..array import dispatch as _dispatch
from ..array.array import Array
from ..autograd import Function

__all__ = ["digamma", "gammaln", "multigammaln", "polygamma"]

LGAMMA2 = (
    0.42278433509846713939, 0.32246703342411321824, -0.067352301053198095133,
    0.020580808427784547879, -0.0073855510286739852663, 0.0028905103307415232858,
    -0.0011927539117032609771, 0.00050966952474304242234, -0.00022315475845357937976,
    0.000099457512781808533715, -0.0000449262367381331417, 0.000020507212775670691553,
    -9.439488275268395904e-6, 4.3748667899074878042e-6, -2.0392157538013662368e-6,
    9.5514121304074198329e-7, -4.4924691987645660433e-7, 2.1207184805554665869e-7,
    -1.0043224823968099609e-7, 4.7698101693639805658e-8, -2.271109460894316491e-8,
    1.0838659214896954091e-8, -5.1834750419700466551e-9, 2.4836745438024783172e-9,
    -1.1921401405860912074e-9, 5.7313672416788620133e-10, -2.7595228851242331452e-10,
    1.3304764374244489481e-10, -6.4229645638381000221e-11, 3.1044247747322272762e-11,
)
PSI_ROOT = (1.4616321449683622, 9.549995429965697e-17)
# the root as a float32 pair, for float32 arguments (x - hi must be exact in their precision)
_ROOT32_HI = float(np.float32(PSI_ROOT[0]))
PSI_ROOT32 = (_ROOT32_HI, float(np.float32((PSI_ROOT[0] - _ROOT32_HI) + PSI_ROOT[1])))
PSI_ROOT_SERIES = (
    0.96767224544762117043, -0.44276316898359210609, 0.25849976095565101062,
    -0.1639427054424065275, 0.10782405069126236576, -0.072199561256454710926,
    0.048804288164143107225, -0.033161126474847359292, 0.02259764823221810466,
    -0.015424765904948959139, 0.010538791616612175388, -0.007204534386356868241,
    0.0049267813957298534464, -0.0033698016554393280828, 0.0023051263267349278369,
    -0.0015769367714301972593, 0.0010788252019162965807, -0.00073807093899600512957,
    0.00050495326583460203518, -0.00034546802510630769956, 0.00023635601564027052792,
    -0.00016170622091974803449, 0.00011063372768747410904, -0.000075691795821950659192,
)
# terms used per dtype (the first omitted one is below half an ulp on the interval)
_TERMS = {"float32": {"s": 14, "root": 11, "stirling": 4, "psi": 5},
          "float64": {"s": 28, "root": 24, "stirling": 9, "psi": 9}}
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_BIG = 10.0   # from here the asymptotic series


def _bernoulli(m: int) -> list[Fraction]:
    """B_0 .. B_m (B_1 = -1/2), exact."""
    b = [Fraction(0)] * (m + 1)
    for k in range(m + 1):
        b[k] = Fraction(1) if k == 0 else -sum(math.comb(k + 1, j) * b[j]
                                               for j in range(k)) / (k + 1)
    return b


_B = _bernoulli(40)


def _horner(coeffs, u):
    p = coeffs[-1]
    for c in reversed(coeffs[:-1]):
        p = c + u * p
    return p


def _floating(x, op: str) -> Array:
    """``x`` as an Array of real floating dtype (integers and bools in float64, as NumPy)."""
    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected a grilly Array, got {type(x).__name__}")
    k = x.dtype.kind
    if k == "c":
        raise TypeError(f"{op}: complex input is not supported (got {x.dtype})")
    if k in "iub":
        return gp.astype(x, gp.float64)
    return x


def _compute(fn, x, *args):
    """fn(x, *args) with float16/bfloat16 computed in float32 and rounded once (Array
    arguments among ``args``, of x's dtype, too)."""
    if x.dtype == gp.float16 or x.dtype == gp.bfloat16:
        args = [gp.astype(a, gp.float32) if isinstance(a, Array) else a for a in args]
        return gp.astype(fn(gp.astype(x, gp.float32), *args), x.dtype)
    return fn(x, *args)


def _terms(x, key: str) -> int:
    return _TERMS["float64" if x.dtype == gp.float64 else "float32"][key]


def _pi_trig(x):
    """(sin(pi x), cos(pi x)) with the argument reduced exactly (r = x - round(x))."""
    r = x - gp.round(x)
    a = r * math.pi
    odd = gp.remainder(gp.round(x), 2.0) != 0
    s, c = gp.sin(a), gp.cos(a)
    return gp.where(odd, -s, s), gp.where(odd, -c, c)


def _s(u):
    """lgamma(2 + u), |u| <= 1/2."""
    return u * _horner(LGAMMA2[:_terms(u, "s")], u)


def _s_prime(u):
    """digamma(2 + u) = S'(u), |u| <= 1/2."""
    c = LGAMMA2[:_terms(u, "s")]
    return _horner([(k + 1) * ck for k, ck in enumerate(c)], u)


def _lgamma_pos(x):
    """lgamma(x) for x > 0 (other x give finite garbage the callers discard)."""
    n = gp.clip(gp.floor(x - 1.5), -2.0, 8.0)
    u = x - (n + 2.0)   # exact: x and n + 2 are within a factor 2 (Sterbenz)
    u = gp.clip(u, -0.5, 0.5)
    prod = gp.ones_like(x)
    for j in range(1, 9):   # (x - 1) ... (x - n) for n >= 1
        prod = gp.where(n >= j, prod * (x - float(j)), prod)
    su = _s(u)
    base = su + gp.log(prod)
    xs = gp.where(x > 0, x, 1.0)
    low = su - gp.log(xs) - gp.where(n < -1.5, gp.log1p(xs), 0.0)
    mid = gp.where(n < 0, low, base)
    # Stirling: (z - 1/2) log z - z + log(2 pi)/2 + sum B_2k / (2k (2k-1) z^(2k-1))
    z = gp.maximum(x, _BIG)
    r = 1.0 / z
    r2 = r * r
    coeffs = [float(_B[2 * k] / (2 * k * (2 * k - 1))) for k in range(1, _terms(x, "stirling") + 1)]
    series = r * _horner(coeffs, r2)
    big = (z - 0.5) * (gp.log(z) - 1.0) + (_HALF_LOG_2PI - 0.5) + series
    return gp.where(x >= _BIG, big, mid)


def _gammaln(x):
    pos = _lgamma_pos(gp.where(x > 0, x, 1.0 - x))
    s, _ = _pi_trig(x)
    refl = math.log(math.pi) - gp.log(gp.abs(s)) - pos
    out = gp.where(x > 0, pos, refl)
    # +inf at the poles (the reflection gives it where sin(pi x) == 0), and at -inf
    return gp.where(gp.isinf(x), math.inf, out)


def _digamma_pos(x):
    """digamma(x) for x > 0."""
    x0h, x0l = PSI_ROOT if x.dtype == gp.float64 else PSI_ROOT32
    # shifted into [1.25, 2.5): up by 1 or 2 (below 1.25), down by n (2.5 <= x < 10); x in
    # [1.25, 2.5) is y itself, with no correction
    up = gp.where(x < 0.25, 2.0, gp.where(x < 1.25, gp.ones_like(x), 0.0))
    n = gp.clip(gp.floor(x - 1.5), 0.0, 8.0)
    y = x + up - n
    xs = gp.where(x > 0, x, 1.0)
    corr = gp.where(up > 0, -1.0 / xs, 0.0) + gp.where(up > 1, -1.0 / (xs + 1.0), 0.0)
    for j in range(1, 9):
        corr = corr + gp.where(n >= j, 1.0 / (x - float(j)), 0.0)
    yt = (y - x0h) - x0l
    y_root = yt * _horner(PSI_ROOT_SERIES[:_terms(x, "root")], yt)
    base = gp.where(y < 1.75, y_root, _s_prime(gp.clip(y - 2.0, -0.5, 0.5)))
    mid = base + corr
    z = gp.maximum(x, _BIG)
    r2 = 1.0 / (z * z)
    coeffs = [float(-_B[2 * k] / (2 * k)) for k in range(1, _terms(x, "psi") + 1)]
    big = gp.log(z) - 0.5 / z + r2 * _horner(coeffs, r2)
    return gp.where(x >= _BIG, big, mid)


def _digamma(x):
    pos = _digamma_pos(gp.where(x > 0, x, 1.0 - x))
    s, c = _pi_trig(x)
    refl = pos - math.pi * c / s
    out = gp.where(x > 0, pos, refl)
    out = gp.where((x < 0) & (s == 0), math.nan, out)   # the poles at the negative integers
    # torch's digamma(+0) = -inf, digamma(-0) = +inf (the limits from each side)
    out = gp.where(x == 0, gp.where(gp.signbit(x), math.inf, gp.full_like(x, -math.inf)), out)
    return gp.where(x == -math.inf, math.nan, gp.where(x == math.inf, math.inf, out))


def _cot_derivative(n: int) -> list[int]:
    """Coefficients (in powers of c) of P_n with d^n/dy^n cot(y) = P_n(cot y):
    P_0 = c, P_{k+1} = -(1 + c^2) P_k'."""
    p = [0, 1]
    for _ in range(n):
        d = [k * p[k] for k in range(1, len(p))] + [0]       # P'
        q = [0] * (len(d) + 2)
        for k, a in enumerate(d):                             # -(1 + c^2) P'
            q[k] -= a
            q[k + 2] -= a
        while len(q) > 1 and q[-1] == 0:
            q.pop()
        p = q
    return p


def _polygamma_pos(x, n: int):
    """polygamma(n, x), n >= 1, x > 0: shifted m steps, then the asymptotic series."""
    m = 10 + 2 * n if x.dtype == gp.float64 else 6 + n
    acc = gp.zeros_like(x)
    for j in range(m):
        acc = acc + 1.0 / (x + float(j)) ** (n + 1)
    z = x + float(m)
    # (n-1)!/z^n + n!/(2 z^(n+1)) + sum_k B_2k (2k+n-1)!/(2k)! / z^(2k+n)
    r = 1.0 / z
    kmax = _terms(x, "psi") + 2
    coeffs = [float(_B[2 * k] * math.factorial(2 * k + n - 1) / math.factorial(2 * k))
              for k in range(1, kmax + 1)]
    tail = (r ** n) * (math.factorial(n - 1) + r * (0.5 * math.factorial(n)
                                                     + r * _horner(coeffs, r * r)))
    sign = 1.0 if n % 2 == 1 else -1.0
    return sign * (math.factorial(n) * acc + tail)


def _polygamma(x, n: int):
    if n == 0:
        return _digamma(x)
    pos = _polygamma_pos(gp.where(x > 0, x, 1.0 - x), n)
    s, c = _pi_trig(x)
    cot = c / s
    poly = _cot_derivative(n)
    refl = (1.0 if n % 2 == 0 else -1.0) * pos - (math.pi ** (n + 1)) * _horner(
        [float(a) for a in poly], cot)
    out = gp.where(x > 0, pos, refl)
    return gp.where(gp.isinf(x), gp.where(x > 0, gp.zeros_like(x), math.nan), out)


class _Gammaln(Function):
    """lgamma with its derivative digamma."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _compute(_gammaln, x)

    @staticmethod
    def backward(ctx, g):
        return (g * digamma(ctx.saved_tensors[0]),)


class _Polygamma(Function):
    """polygamma(n, .) (n = 0: digamma) with its derivative polygamma(n + 1, .)."""

    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(x)
        ctx.n = n
        return _compute(_polygamma, x, n)

    @staticmethod
    def backward(ctx, g):
        return (g * polygamma(ctx.n + 1, ctx.saved_tensors[0]), None)


def gammaln(x: Array) -> Array:
    """log |Gamma(x)| on the real line (torch.lgamma, scipy.special.gammaln); +inf at the poles."""
    return _Gammaln.apply(_floating(x, "gammaln"))


def digamma(x: Array) -> Array:
    """d/dx log Gamma(x) (torch.digamma, scipy.special.psi): -inf at 0, NaN at the negative
    integers."""
    return _Polygamma.apply(_floating(x, "digamma"), 0)


def polygamma(n: int, x: Array) -> Array:
    """The n-th derivative of digamma (torch.polygamma(n, x)); n = 0 is digamma."""
    if isinstance(n, bool) or not isinstance(n, int) and not hasattr(n, "__index__"):
        raise TypeError(f"polygamma: n must be an integer, got {type(n).__name__}")
    n = n.__index__()
    if n < 0:
        raise ValueError(f"polygamma: n must be >= 0, got {n}")
    if n > 30:
        raise NotImplementedError(f"polygamma: n up to 30 is supported, got {n}")
    return _Polygamma.apply(_floating(x, "polygamma"), n)


@_dispatch.policy("multigammaln")   # torch composes it of its sum: float32 (amp.policy)
def multigammaln(a: Array, d: int) -> Array:
    """log of the multivariate gamma function of dimension ``d`` (scipy.special.multigammaln;
    torch.special.multigammaln / torch.mvlgamma(a, p=d)): sum_j lgamma(a - j/2) + d(d-1)/4 log pi.
    Unlike torch, elements <= (d - 1)/2 are not checked (that would read the array on the host)."""
    if isinstance(d, bool) or not hasattr(d, "__index__"):
        raise TypeError(f"multigammaln: d must be an integer, got {type(d).__name__}")
    d = d.__index__()
    if d < 1:
        raise ValueError(f"multigammaln: d must be >= 1, got {d}")
    a = _floating(a, "multigammaln")
    out = gammaln(a)
    for j in range(1, d):
        out = out + gammaln(a - 0.5 * j)
    return out + d * (d - 1) / 4.0 * math.log(math.pi)
