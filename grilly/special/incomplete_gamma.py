"""The regularized incomplete gamma functions P(a, x) = gammainc and Q(a, x) = 1 - P = gammaincc
(torch.special.gammainc/gammaincc, torch.igamma/igammac, scipy.special.gammainc/gammaincc),
with their derivative in x, x^(a-1) e^-x / Gamma(a), and in a (autograd through the
composite; torch has none).

Method (float64; float32 with fewer terms; float16/bfloat16 in float32, integers in float64),
each region computing the smaller of P and Q directly and the other as its complement:
- a >= 20 and |x - a| < 0.4 a: Temme's uniform expansion Q = erfc(eta sqrt(a/2)) / 2 +
  exp(-a eta^2 / 2) / sqrt(2 pi a) sum_k c_k(eta) a^-k, P = erfc(-eta sqrt(a/2)) / 2 - that
  sum (DLMF 8.12), the c_k as power series in eta (tools/fit_temme.py, exact rationals);
- a < 1 and x <= 1.1: P by its power series, Q = -expm1(L) - e^L a sum_{n>=1} (-x)^n /
  (n! (a + n)), L = a log x - lgamma(1 + a), which keeps Q's relative accuracy as a -> 0;
- x <= max(1, a) otherwise: P by its power series x^a e^-x / Gamma(a + 1) sum_n x^n /
  ((a + 1) ... (a + n)); above: Q by Legendre's continued fraction, evaluated from the bottom
  at a fixed depth (100 in float64: small a next to x = 1.1 needs 80; Lentz's forward
  product drifted by 10-30 ulp over its iterations).
The prefactor x^a e^-x / Gamma(a) for a >= 1 is exp(a (log lambda - (lambda - 1)) +
log(a / 2 pi) / 2 - mu(a)), lambda = x / a, mu(a) = lgamma(a) - Stirling's leading terms:
Stirling's series from a = 10, below it mu(a + 9) plus nine steps mu(b) - mu(b + 1) =
sum_j z^2j / (2j + 1), z = 1 / (2b + 1) (positive terms), so no large logarithms cancel.
The error then follows the function's own sensitivity: within a few ulp times
1 + |a log(x / a) - (x - a)| (docs/special.md; tests/test_special.py).
"""
from __future__ import annotations

import math

from ..array import api as gp
from ..array.array import Array
from ..autograd import Function, enable_grad, grad
from ..nn import functional as F
from .elementary import _pair
from .gamma import _B, LGAMMA2, _compute, _horner, gammaln

__all__ = ["gammainc", "gammaincc"]

# c_k(eta) = sum_m TEMME[k][m] eta^m (tools/fit_temme.py 10 26, set k cut to 26 - 2k terms:
# it is divided by a^k, a >= 20)
TEMME = (
    (-0.3333333333333333, 0.08333333333333333, -0.014814814814814815, 0.0011574074074074073,
     0.0003527336860670194, -0.0001787551440329218, 3.919263178522438e-05, -2.185448510679992e-06,
     -1.85406221071516e-06, 8.296711340953087e-07, -1.7665952736826078e-07, 6.707853543401498e-09,
     1.0261809784240309e-08, -4.382036018453353e-09, 9.14769958223679e-10, -2.5514193994946248e-11,
     -5.830772132550426e-11, 2.4361948020667415e-11, -5.0276692801141755e-12,
     1.1004392031956135e-13, 3.371763262400985e-13, -1.392388722418162e-13, 2.8534893807047445e-14,
     -5.139111834242572e-16, -1.9752288294349442e-15, 8.099521156704561e-16),
    (-0.001851851851851852, -0.003472222222222222, 0.0026455026455026454, -0.0009902263374485596,
     0.00020576131687242798, -4.018775720164609e-07, -1.8098550334489977e-05, 7.64916091608111e-06,
     -1.6120900894563446e-06, 4.647127802807434e-09, 1.378633446915721e-07, -5.752545603517705e-08,
     1.1951628599778148e-08, -1.7543241719747647e-11, -1.0091543710600413e-09,
     4.162792991842583e-10, -8.56390702649298e-11, 6.067215101604758e-14, 7.1624989648114856e-12,
     -2.933186643771437e-12, 5.996696365683689e-13, -2.1671786527323313e-16, -4.978339972369262e-14,
     2.0291628823713425e-14),
    (0.004133597883597883, -0.0026813271604938273, 0.0007716049382716049, 2.0093878600823047e-06,
     -0.0001073665322636516, 5.2923448829120125e-05, -1.2760635188618728e-05, 3.423578734096138e-08,
     1.3721957309062934e-06, -6.298992138380055e-07, 1.4280614206064242e-07,
     -2.0477098421990866e-10, -1.409252991086752e-08, 6.228974084922022e-09,
     -1.3670488396617114e-09, 9.428356159014678e-13, 1.2872252400089318e-10,
     -5.5645956134363323e-11, 1.197593554636698e-11, -4.1689782251838634e-15,
     -1.0940640427884595e-12, 4.662239946390136e-13),
    (0.0006494341563786008, 0.00022947209362139917, -0.0004691894943952557, 0.00026772063206283885,
     -7.561801671883977e-05, -2.396505113867297e-07, 1.1082654115347302e-05,
     -5.6749528269915965e-06, 1.4230900732435883e-06, -2.7861080291528143e-11,
     -1.6958404091930278e-07, 8.099464905388083e-08, -1.9111168485973655e-08,
     2.3928620439808118e-12, 2.0620131815488797e-09, -9.460496661855133e-10, 2.1541049775774907e-10,
     -1.388823336813903e-14, -2.1894761681963938e-11, 9.790998951171684e-12),
    (-0.0008618882909167117, 0.0007840392217200666, -0.0002990724803031902,
     -1.4638452578843418e-06, 6.641498215465122e-05, -3.968365047179435e-05, 1.1375726970678419e-05,
     2.507497226237533e-10, -1.6954149536558305e-06, 8.907507532205309e-07, -2.292934834000805e-07,
     2.956794137544049e-11, 2.8865829742708783e-08, -1.4189739437803219e-08, 3.4463580499464896e-09,
     -2.3024517174528067e-13, -3.9409233028046403e-10, 1.86023389685045e-10),
    (-0.00033679855336635813, -6.972813758365857e-05, 0.0002772753244959392,
     -0.00019932570516188847, 6.797780477937208e-05, 1.419062920643967e-07, -1.3594048189768693e-05,
     8.018470256334202e-06, -2.291481176508095e-06, -3.252473551298454e-10, 3.4652846491085265e-07,
     -1.8447187191171344e-07, 4.8240967037894184e-08, -1.7989466721743514e-14,
     -6.306194500013523e-09, 3.162417628774568e-09),
    (0.0005313079364639922, -0.0005921664373536939, 0.0002708782096718045, 7.902353232660328e-07,
     -8.153969367561969e-05, 5.61168275310625e-05, -1.8329116582843375e-05, -3.0796134506033047e-09,
     3.465155368803609e-06, -2.0291327396058603e-06, 5.788792863149004e-07, 2.338630673826657e-13,
     -8.828600746330484e-08, 4.7435958880408125e-08),
    (0.00034436760689237765, 5.171790908260592e-05, -0.00033493161081142234, 0.0002812695154763237,
     -0.00010976582244684731, -1.2741009095484485e-07, 2.7744451511563645e-05,
     -1.8263488805711332e-05, 5.7876949497350525e-06, 4.93875893393627e-10, -1.0595367014026043e-06,
     6.166714376110408e-07),
    (-0.0006526239185953094, 0.0008394987206720873, -0.000438297098541721, -6.969091458420552e-07,
     0.00016644846642067547, -0.00012783517679769218, 4.629953263691304e-05, 4.557909867922708e-09,
     -1.0595271125805195e-05, 6.783342904865167e-06),
    (-0.0005967612901927463, -7.204895416020011e-05, 0.0006782308837667328, -0.0006401475260262758,
     0.00027750107634328704, 1.819700838046515e-07, -8.479507117068503e-05, 6.105192082501531e-05),
)
# per dtype: Temme sets, power-series terms, continued-fraction iterations, small-a terms,
# Stirling terms for mu, terms of mu's nine steps (the first step's z <= 1/3, later smaller)
_SPEC = {"float64": (10, 80, 100, 24, 7, (18, 12, 9, 8, 7, 6, 6, 5, 5)),
         "float32": (5, 40, 48, 12, 4, (8, 6, 5, 4, 4, 3, 3, 3, 3))}
_TEMME_FROM = 20.0
_SMALL_X = 1.1
_LOG_2PI = math.log(2.0 * math.pi)


def _spec(x):
    return _SPEC["float64" if x.dtype == gp.float64 else "float32"]


def _log1pmx_ratio(t, terms: int):
    """-2 (log(1 + t) - t) / t^2 for |t| <= 0.4: log(1 + t) - t = -t^2 / (2 + t) + 2 (u^3/3 +
    u^5/5 + ...), u = t / (2 + t) (|u| <= 1/4: the first part has no cancellation, the rest
    is smaller), so the ratio is 2 / (2 + t) - 4 t s / (2 + t)^3, smooth through t = 0."""
    w = 1.0 / (2.0 + t)
    u = t * w
    s = _horner([1.0 / (2 * k + 3) for k in range(terms)], u * u)
    return 2.0 * w - 4.0 * t * s * (w * w * w)


def _log1pmx(t, terms: int):
    """log(1 + t) - t for |t| <= 0.4."""
    return -0.5 * t * t * _log1pmx_ratio(t, terms)


def _mu(a, spec):
    """lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2) for a >= 1."""
    _, _, _, _, n_stirling, steps = spec
    b = gp.where(a < 10.0, a + 9.0, a)
    w = 1.0 / (b * b)
    coeffs = [float(_B[2 * j] / (2 * j * (2 * j - 1))) for j in range(1, n_stirling + 1)]
    mu = _horner(coeffs, w) / b
    # below 10: mu(a) = mu(a + 9) + sum_k [mu(a + k) - mu(a + k + 1)], each a positive series
    lowa = gp.where(a <= 10.0, a, 10.0)
    step_sum = None
    for k, terms in enumerate(steps):
        z = 1.0 / (2.0 * (lowa + float(k)) + 1.0)
        z2 = z * z
        d = z2 * _horner([1.0 / (2 * j + 3) for j in range(terms)], z2)
        step_sum = d if step_sum is None else step_sum + d
    return gp.where(a < 10.0, mu + step_sum, mu)


def _log_prefactor(a, x, spec, mu=None):
    """log(x^a e^-x / Gamma(a)) for a > 0, x > 0 (finite garbage elsewhere); ``mu`` is
    _mu(max(a, 1)) where the caller has it."""
    # a < 1: the plain sum (its terms are small there)
    small = a * gp.log(x) - x - gammaln(gp.where(a <= 1.0, a, 1.0))
    # a >= 1: a (log lambda - (lambda - 1)) + log(a / 2 pi) / 2 - mu(a)
    ab = gp.where(a >= 1.0, a, 1.0)
    t = (x - ab) / ab
    near = gp.abs(t) < 0.4
    f_near = ab * _log1pmx(gp.where(near, t, 0.0), 16 if x.dtype == gp.float64 else 8)
    f_far = ab * gp.log(x / ab) - (x - ab)
    mu = _mu(ab, spec) if mu is None else mu
    big = gp.where(near, f_near, f_far) + 0.5 * (gp.log(ab) - _LOG_2PI) - mu
    return gp.where(a < 1.0, small, big)


def _lgamma1p(a):
    """lgamma(1 + a) for 0 <= a < 1 without rounding 1 + a: S(a) - log1p(a) = lgamma(2 + a) -
    log(1 + a) below 1/2, S(a - 1) above (lgamma2's Taylor series takes u exactly)."""
    lo = gp.where(a <= 0.5, a, 0.5)
    hi = gp.where(a > 0.5, a - 1.0, -0.5)
    n = 28 if a.dtype == gp.float64 else 14
    s_lo = lo * _horner(LGAMMA2[:n], lo) - gp.log1p(lo)
    s_hi = hi * _horner(LGAMMA2[:n], hi)
    return gp.where(a <= 0.5, s_lo, s_hi)


def _temme(a, x, spec):
    """(P, Q) by Temme's expansion, for a >= 20, |x - a| < 0.4 a."""
    n_sets = spec[0]
    t = (x - a) / a
    ratio = _log1pmx_ratio(t, 16 if x.dtype == gp.float64 else 8)
    lmx = -0.5 * t * t * ratio
    eta = t * gp.sqrt(ratio)   # (sign(t) sqrt(-2 lmx), differentiable at t = 0)
    s = None
    for k in reversed(range(n_sets)):
        ck = _horner(TEMME[k], eta)
        s = ck if s is None else ck + s / a
    r = gp.exp(a * lmx) / gp.sqrt((2.0 * math.pi) * a) * s
    root = eta * gp.sqrt(0.5 * a)
    return 0.5 * F.erfc(-root) - r, 0.5 * F.erfc(root) + r


def _series_p(a, x, log_pre, terms: int):
    """P = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a + 1) ... (a + n)), x <= max(1, a)."""
    term = gp.ones_like(x)
    total = term
    for n in range(1, terms):
        term = term * x / (a + float(n))
        total = total + term
    # a < 1: log(x^a e^-x / Gamma(a + 1)) without lgamma(a) ~ -log a's rounding
    a_s = gp.where(a < 1.0, a, 0.5)   # (e^small would overflow for the a it is not used for)
    small = a_s * gp.log(x) - x - _lgamma1p(a_s)
    return gp.where(a < 1.0, gp.exp(small), gp.exp(log_pre) / a) * total


def _small_a_q(a, x, terms: int):
    """Q for a < 1, x <= 1.5: -expm1(L) - e^L a sum_{n>=1} (-x)^n / (n! (a + n))."""
    lg = a * gp.log(x) - _lgamma1p(a)
    term = gp.ones_like(x)
    s = None
    for n in range(1, terms):
        term = term * (-x) / float(n)
        v = term / (a + float(n))
        s = v if s is None else s + v
    return -gp.expm1(lg) - gp.exp(lg) * a * s


def _cf_q(a, x, log_pre, depth: int):
    """Q = x^a e^-x / Gamma(a) / (x + 1 - a + 1 (a - 1) / (x + 3 - a + 2 (a - 2) / ...)),
    evaluated from the bottom at a fixed depth (no product of rounded factors drifts, as
    Lentz's forward evaluation does over tens of iterations)."""
    f = x + float(2 * depth + 1) - a
    for i in range(depth, 0, -1):
        f = (x + float(2 * i - 1) - a) + (float(i) * (a - float(i))) / f
    return gp.exp(log_pre) / f


def _pq(a, x):
    """(P(a, x), Q(a, x)) with torch's special values."""
    spec = _spec(a)
    _, n_series, n_cf, n_small, _, _ = spec
    bad = (a < 0.0) | (x < 0.0) | gp.isnan(a) | gp.isnan(x) | ((a == 0.0) & (x == 0.0))
    # the regions (each branch gets inputs that keep it finite where it is not used)
    temme = (a >= _TEMME_FROM) & (gp.abs(x - a) < 0.4 * a)
    small_a = (a < 1.0) & (x <= _SMALL_X)
    lower = x <= gp.maximum(a, 1.0)
    fin_a = gp.where((a > 0.0) & ~gp.isinf(a), a, 1.0)
    fin_x = gp.where((x > 0.0) & ~gp.isinf(x), x, 1.0)
    # series (and the small-a Q): x at most max(1, a) (or 1.5)
    cap = gp.where(fin_a >= _SMALL_X, fin_a, _SMALL_X)
    xs = gp.where(fin_x <= cap, fin_x, cap)
    mu = _mu(gp.where(fin_a >= 1.0, fin_a, 1.0), spec)
    p_series = _series_p(fin_a, xs, _log_prefactor(fin_a, xs, spec, mu), n_series)
    q_small = _small_a_q(gp.where(fin_a < 1.0, fin_a, 0.5), gp.where(xs <= _SMALL_X, xs, _SMALL_X),
                         n_small)
    # continued fraction: x at least max(1, a) (its convergence is fastest there)
    floor = gp.where(fin_a >= 1.0, fin_a, 1.0)
    xc = gp.where(fin_x >= floor, fin_x, floor)
    q_cf = _cf_q(fin_a, xc, _log_prefactor(fin_a, xc, spec, mu), n_cf)
    at = gp.where(fin_a >= _TEMME_FROM, fin_a, _TEMME_FROM)
    xt = gp.where(temme, fin_x, at)
    p_t, q_t = _temme(at, xt, spec)
    p = gp.where(temme, p_t, gp.where(small_a | lower, p_series, 1.0 - q_cf))
    q = gp.where(temme, q_t, gp.where(small_a, q_small,
                                      gp.where(lower, 1.0 - p_series, q_cf)))
    # torch's special values: P(a, 0) = 0, P(0, x > 0) = 1, P(inf, x < inf) = 0, P(a, inf) = 1
    one = (a == 0.0) | (gp.isinf(x) & ~gp.isinf(a))
    zero = (x == 0.0) | (gp.isinf(a) & ~gp.isinf(x))
    p = gp.where(one, 1.0, gp.where(zero, 0.0, p))
    q = gp.where(one, 0.0, gp.where(zero, 1.0, q))
    nan = bad | (gp.isinf(a) & gp.isinf(x))
    return gp.where(nan, math.nan, p), gp.where(nan, math.nan, q)



class _IncGamma(Function):
    """P or Q with the derivative in x, +-x^(a-1) e^-x / Gamma(a), and in a (torch has none)
    the derivative of the composite itself, by autograd through its ops (the converged
    series, fraction or expansion of the region; a Gamma.cdf's concentration gradient)."""

    @staticmethod
    def forward(ctx, a, x, upper: bool):
        ctx.save_for_backward(a, x)
        ctx.upper = upper
        return _compute(_p_or_q, a, x, upper)

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        ga = gx = None
        if ctx.needs_input_grad[0]:
            ad = a.detach().requires_grad_()
            with enable_grad():
                out = _compute(_p_or_q, ad, x.detach(), ctx.upper)
                ga = grad(out, ad, grad_outputs=g.detach())[0]
            # (the regions' inputs are clamped where they are not used: no stray NaN there)
            ga = gp.where(gp.isnan(out.detach()), math.nan, ga)
        if ctx.needs_input_grad[1]:
            xp = gp.where(x > 0, x, 1.0)
            ap = gp.where(a > 0, a, 1.0)
            dens = gp.exp(_log_prefactor(ap, xp, _spec(ap))) / xp
            dens = gp.where(x > 0, dens, gp.where(a < 1.0, math.inf,
                                                  gp.where(a == 1.0, 1.0, 0.0)))
            gx = g * (-dens if ctx.upper else dens)
        return ga, gx, None


def _p_or_q(a, x, upper: bool):
    """Q(a, x) when ``upper``, else P(a, x)."""
    return _pq(a, x)[1 if upper else 0]


def gammainc(input, other) -> Array:
    """The regularized lower incomplete gamma P(a, x) (torch.special.gammainc, torch.igamma)."""
    a, x = _pair(input, other, "gammainc")
    return _IncGamma.apply(a, x, False)


def gammaincc(input, other) -> Array:
    """The regularized upper incomplete gamma Q(a, x) = 1 - P(a, x) (torch.special.gammaincc)."""
    a, x = _pair(input, other, "gammaincc")
    return _IncGamma.apply(a, x, True)
