"""The Airy function Ai (torch.special.airy_ai) and its derivative Ai' (scipy.special.airy's
first two values), each differentiable (torch's airy_ai has no gradient): d/dx Ai = Ai',
d/dx Ai' = Ai'' = x Ai.

Method (float32 and float64; tools/fit_airy.py fits every table at 40 digits):
- x >= 1: Ai = F e^-zeta / (2 sqrt(pi) x^(1/4)), Ai' = -G x^(1/4) e^-zeta / (2 sqrt(pi)),
  zeta = 2/3 x^(3/2), F and G Chebyshev series in 2 (2/3) / zeta - 1. zeta is carried as a
  float pair (Dekker's products; 2/3 as a pair) and e^-zeta = exp(-hi) (1 - lo): a rounded
  zeta would cost zeta ulp (700 at x = 100).
- -3 <= x <= 1: on [-3, -1] and [-1, 1], each function is prod (x - z) R(x) over its first
  zero where near (Ai's a1 = -2.338 on [-3, -1], Ai''s a1' = -1.019 on both), the zero as a
  float pair (x - z is exact next to it, so the product keeps its relative accuracy there)
  and R a Chebyshev series in x + 2 or x.
- x <= -3, z = -x: Ai = (P cos chi + Q sin chi) / (sqrt(pi) z^(1/4)), Ai' = z^(1/4) (R sin chi
  - S cos chi) / sqrt(pi), chi = zeta - pi/4, P, Q, R, S series in 2 (2 sqrt 3) / zeta - 1;
  cos chi and sin chi are expanded over the correctly rounded cos and sin of zeta's high part
  and the small angle lo - pi/4, so zeta is never rounded; the error is absolute there (in
  the amplitude's ulp), as for the Bessel functions. The pair carries zeta to about 1e-14
  (float32) / 1e-31 (float64) of itself, so the phase's error grows as |x|^1.5 past -1e5 /
  -1e10 (1e3 ulp at -5e6 in float32, 2e3 at -5e12 in float64) and the value keeps only the
  amplitude's size past -1e9 / -1e20 (where one ulp of x moves chi by radians anyway).
Ai is 0 at +-inf, Ai' 0 at +inf (the limits; torch's airy_ai gives NaN) and NaN at -inf.
"""
from __future__ import annotations

import math

import numpy as np

from ..array import api as gp
from ..array.array import Array
from ..autograd import Function
from .bessel_jy import _head, _pair32
from .bessel_k import _clenshaw
from .gamma import _compute, _floating
from .normal import _split

__all__ = ["airy_ai", "airy_ai_prime"]

AI_POS = (
    0.9637683609849689, -0.03241600019448593, 0.0031941239613695834, -0.0004942254050330157,
    9.706517942546595e-05, -2.224444511200298e-05, 5.694838987920343e-06, -1.5868397039029868e-06,
    4.7311609911660025e-07, -1.4914679268537125e-07, 4.928201239454347e-08,
    -1.6955948660827914e-08, 6.043322459186302e-09, -2.2220862485979766e-09, 8.400808330101413e-10,
    -3.256498049790017e-10, 1.2913338128187496e-10, -5.227872191419496e-11, 2.1571120180559685e-11,
    -9.058221909804504e-12, 3.8661427181794894e-12, -1.6752774093903056e-12, 7.362663634133786e-13,
    -3.278955307898836e-13, 1.4785693873897687e-13, -6.7459272277099e-14, 3.112098467985573e-14,
    -1.4508441986007412e-14, 6.831416567315612e-15, -3.247207556858449e-15, 1.557481834155047e-15,
    -7.53476283451668e-16, 3.675223402283836e-16, -1.8068071063373415e-16, 8.94975618550186e-17,
    -4.46528818390057e-17, 2.2433819359991275e-17, -1.1346375254410153e-17, 5.775684648491708e-18,
    -2.9582930657326856e-18, 1.524317677272058e-18, -7.899819751781e-19, 4.117013724160993e-19,
    -2.1572063377590968e-19, 1.136241115794962e-19,
)
AIP_POS = (
    1.0535581142131956, 0.048808501061268966, -0.004020451347692983, 0.0005843781690726051,
    -0.00011106581221570818, 2.4934616244281484e-05, -6.293119924034666e-06,
    1.7351298290275136e-06, -5.131157628730579e-07, 1.60700582011727e-07, -5.281468820006849e-08,
    1.8089559861055277e-08, -6.422585278018496e-09, 2.3536918526678144e-09, -8.872490371296856e-10,
    3.430509002091543e-10, -1.3572236172478047e-10, 5.483337177520353e-11, -2.2583229829847356e-11,
    9.46723972104844e-12, -4.034492167886901e-12, 1.745755710650481e-12, -7.662415522247663e-13,
    3.408338469473316e-13, -1.5351931373561585e-13, 6.996978355184882e-14, -3.224777236153608e-14,
    1.5020056938944392e-14, -7.066270356168913e-15, 3.3561408968021815e-15,
    -1.6085099503331616e-15, 7.776052490167434e-16, -3.7903457536920656e-16, 1.862205639511862e-16,
    -9.21853401894603e-17, 4.596718569921241e-17, -2.3081359011536013e-17, 1.1667723397250135e-17,
    -5.936269014263901e-18, 3.039079004463916e-18, -1.565221835937482e-18, 8.108220343527396e-19,
    -4.223829842840768e-19, 2.212273541098029e-19, -1.164789705798726e-19,
)
AI_LEFT = (
    0.5779729779734079, -0.10330614126072933, -0.09319493613458846, 0.01794966830142388,
    0.0014625468791015324, -0.0006939287058943372, 3.963592459096818e-05, 9.24517174329704e-06,
    -1.502805505038732e-06, 7.54189258681843e-09, 1.7254631822268393e-08, -1.476737639377114e-09,
    -4.693106738422416e-11, 1.5920212167935857e-11, -7.824744765995054e-13,
    -5.6726542027484046e-14, 8.781480642526176e-15, -2.329216872738645e-16,
    -3.3350841411952655e-17, 3.208669611013417e-18,
)
AI_MID = (
    0.34755495827009675, -0.2147082659657119, -0.009861849705448919, 0.01463331087399956,
    -0.0023275017621754894, -5.232130812562442e-05, 6.11575937708272e-05, -7.0633114349598835e-06,
    -1.0476349572929057e-07, 1.0633926398516946e-07, -9.930851520416831e-09,
    -1.0975981893237878e-10, 1.0079565820602945e-10, -8.02658714567297e-12, -7.064801290737754e-14,
    6.003672903342808e-14, -4.2080892370436896e-15, -3.0759206990998484e-17,
    2.4536684263764748e-17, -1.5461121968500008e-18,
)
AIP_LEFT = (
    -0.4836009402028986, -0.18945284217001332, 0.14010729314849518, -0.0022415068680396704,
    -0.006310644402025925, 0.0007818841439279911, 8.255439755537662e-05, -2.4782957483793397e-05,
    9.14353103406683e-07, 2.8479573571202653e-07, -3.619964332772306e-08, -2.1874953806610297e-10,
    3.76816883964099e-10, -2.649990765336902e-11, -1.1000977416241735e-12, 2.703842247679804e-13,
    -1.0933011682621637e-14, -9.457447999897876e-16, 1.219954395250016e-16, -2.513796790222675e-18,
    -4.49270255783363e-19,
)
AIP_MID = (
    -0.2837233850660246, 0.23587392655096223, -0.027837415417830743, -0.00479344562233615,
    0.001828482061587179, -0.00017261963632331066, -1.2717298534664024e-05, 4.582475164247429e-06,
    -3.6472040190540275e-07, -1.635571119537267e-08, 5.646476066299625e-09, -3.926836358455951e-10,
    -1.2381656451638554e-11, 4.129788635997449e-12, -2.569834242110494e-13, -6.167598334267276e-15,
    1.998556331975754e-15, -1.1314912938841146e-16, -2.1736345077209683e-18, 6.869971563104808e-19,
    -3.5826301977530564e-20,
)
P = (
    0.9989252223765029, -0.0014123335144014663, -0.0003232038176151208, 1.5396167351134327e-05,
    7.980992698131056e-07, -2.302455893095058e-07, 1.8152180441953645e-08, 1.5640205434790012e-09,
    -7.31717741817943e-10, 1.1078838322158783e-10, -1.6252750344974199e-12, -3.855909092111863e-12,
    1.1671838399812943e-12, -1.7209556925557874e-13, -4.994964618800058e-15,
    1.1447104028956228e-14, -3.837795290598855e-15, 7.11462690110716e-16, -1.6921492481095684e-17,
    -4.474247595613145e-17, 2.029834461461959e-17, -5.323570461922883e-18, 7.091186924644957e-19,
    1.3422344979541975e-19, -1.283356903004477e-19,
)
Q = (
    0.009778094293418171, 0.009661115533324126, -0.00013555258469378375, -1.6692534938025454e-05,
    1.88944155682659e-06, -2.0932582046332535e-08, -2.4664855337457482e-08, 4.319522939522811e-09,
    -2.1061389148304612e-10, -8.065408448570078e-11, 2.638983010887189e-11, -3.802916709663302e-12,
    -6.064065744683525e-14, 2.003649109356678e-13, -6.199535843263234e-14, 9.997553606357287e-15,
    1.4770677420003176e-16, -7.037695629019284e-16, 2.676600199891985e-16, -5.864600739525335e-17,
    4.458399739256412e-18, 2.740565999046695e-18, -1.6124724573811362e-18, 5.111408170247291e-19,
    -9.802518099167294e-20, -2.633019553187388e-23, 9.539305364196012e-21, -4.8819297007681296e-21,
    1.5648719728466962e-21,
)
R = (
    1.001277744217987, 0.0016809587507108025, 0.0003874448339248139, -1.6946231007666646e-05,
    -9.119014298768265e-07, 2.483346203811303e-07, -1.8903163187202043e-08,
    -1.7242978391361002e-09, 7.721237122535997e-10, -1.146805352288024e-10, 1.3212871635171154e-12,
    4.057013812598566e-12, -1.2086307025490936e-12, 1.7543947335481938e-13, 5.8975598380003894e-15,
    -1.1908986071792656e-14, 3.9464314057878435e-15, -7.233259423586262e-16,
    1.4549199929309444e-17, 4.646589626996672e-17, -2.0832764898271523e-17, 5.420831750123629e-18,
    -7.098125474744089e-19, -1.4184140288203497e-19, 1.3191183714647906e-19,
)
S = (
    -0.013756898965217527, -0.013625080597698862, 0.00015297482206592632, 1.9117560644233272e-05,
    -2.051900917459743e-06, 1.8217001943644414e-08, 2.6591538483287363e-08, -4.539642789524795e-09,
    2.0989226266814024e-10, 8.599656027288744e-11, -2.7522016789720216e-11, 3.898640896722719e-12,
    7.793490327657243e-14, -2.093001048235961e-13, 6.391641008714854e-14, -1.0167459795883281e-14,
    -1.949030916897324e-16, 7.307666258855947e-16, -2.74851251141199e-16, 5.966209155608073e-17,
    -4.364256730202487e-18, -2.855831239659581e-18, 1.6553452255296707e-18,
    -5.2099050104376715e-19, 9.892914454046885e-20, 4.682567790713926e-22, -9.836858165647813e-21,
    4.987931014235005e-21, -1.5895619617279817e-21,
)
AI_ZERO = (-2.338107410459767, -3.912260409818305e-17)
AIP_ZERO = (-1.018792971647471, -2.0609116444448518e-17)
_TABLES = {"AI_POS": AI_POS, "AIP_POS": AIP_POS, "AI_LEFT": AI_LEFT, "AI_MID": AI_MID,
           "AIP_LEFT": AIP_LEFT, "AIP_MID": AIP_MID, "P": P, "Q": Q, "R": R, "S": S}
# Chebyshev terms per dtype: all in float64; those above 1e-9 of the largest in float32
_CUT = {"float64": _TABLES, "float32": {k: _head(v, 1e-9) for k, v in _TABLES.items()}}
_TWO_THIRDS = (0.6666666666666666, 3.700743415417188e-17)
_PI_4 = (0.7853981633974483, 3.061616997868383e-17)
_CONST = {"AI_ZERO": AI_ZERO, "AIP_ZERO": AIP_ZERO, "2/3": _TWO_THIRDS, "pi/4": _PI_4}
_PAIRS = {"float64": _CONST, "float32": {k: _pair32(v) for k, v in _CONST.items()}}
# the zeros divided out of each middle table (as tools/fit_airy.py)
_MID_ZEROS = {"AI_LEFT": ("AI_ZERO",), "AI_MID": (), "AIP_LEFT": ("AIP_ZERO",),
              "AIP_MID": ("AIP_ZERO",)}
_BITS = {"float64": 27, "float32": 12}
_ZETA0, _ZETA1 = 2.0 / 3.0, 2.0 * math.sqrt(3.0)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)
_POS_MAX = {"float64": 110.0, "float32": 30.0}   # Ai, Ai' are 0 (underflow) beyond


def _key(x) -> str:
    return "float64" if x.dtype == gp.float64 else "float32"


def _series(key: str, name: str, s):
    return _clenshaw(list(_CUT[key][name]), s)


def _const_split(c: float, key: str) -> tuple[float, float]:
    """Veltkamp's split of the constant ``c`` in the arithmetic of ``key``'s dtype."""
    dt = np.float64 if key == "float64" else np.float32
    c = dt(c)
    t = c * dt(2 ** _BITS[key] + 1)
    hi = t - (t - c)
    return float(hi), float(c - hi)


def _two_prod_err(a, b, ah, al, bh, bl, p):
    """a b - p exactly (Dekker), p = fl(a b), a = ah + al and b = bh + bl split."""
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _zeta(a, key: str):
    """(zeta_hi, zeta_lo, a^(1/4)): zeta = 2/3 a^(3/2) as an unevaluated float pair."""
    bits = _BITS[key]
    ch, cl = _PAIRS[key]["2/3"]
    chh, chl = _const_split(ch, key)
    r = gp.sqrt(a)
    rh, rl = _split(r, bits)
    rr = r * r
    # sqrt(a) = r + rlo to second order: a - r^2 is exact by Dekker and Sterbenz
    rlo = ((a - rr) - _two_prod_err(r, r, rh, rl, rh, rl, rr)) / (2.0 * r)
    q = r * ch          # r 2/3 = q + qlo (the small factors first: a^(3/2) may overflow the
    qlo = _two_prod_err(r, ch, rh, rl, chh, chl, q) + (r * cl + rlo * ch)   # split)
    ah, al = _split(a, bits)
    qh, ql = _split(q, bits)
    zh = a * q
    zl = _two_prod_err(a, q, ah, al, qh, ql, zh) + a * qlo
    s = zh + zl                      # renormalized (Fast2Sum: |zl| <= ulp(zh))
    zl = zl - (s - zh)
    q4 = gp.sqrt(r) * (1.0 + rlo / (2.0 * r))    # a^(1/4) = sqrt(r + rlo) to first order
    return s, zl, q4


def _positive(x, key: str, kind: str):
    """The function on x >= 1 (garbage elsewhere)."""
    a = gp.clip(x, 1.0, _POS_MAX[key])
    zh, zl, q4 = _zeta(a, key)
    t = (2.0 * _ZETA0) / zh - 1.0
    e = (_series(key, kind.upper() + "_POS", t) * gp.exp(-zh)) * (1.0 - zl) \
        * (0.5 * _INV_SQRT_PI)
    return e / q4 if kind == "ai" else -(e * q4)


def _middle(x, key: str, kind: str):
    """The function on -3 <= x <= 1 (garbage elsewhere)."""
    a = gp.clip(x, -3.0, 1.0)
    left = a < -1.0
    s = gp.where(left, a + 2.0, a)      # (exact)
    out = []
    for side in ("_LEFT", "_MID"):
        name = kind.upper() + side
        v = _series(key, name, s)
        for z in _MID_ZEROS[name]:
            hi, lo = _PAIRS[key][z]
            v = ((a - hi) - lo) * v
        out.append(v)
    return gp.where(left, out[0], out[1])


def _negative(x, key: str, kind: str):
    """The function on x <= -3 (garbage elsewhere; NaN where zeta overflows)."""
    z = gp.maximum(-x, 3.0)
    z = gp.where(gp.isinf(z), 3.0, z)
    zh, zl, q4 = _zeta(z, key)
    t = (2.0 * _ZETA1) / zh - 1.0
    ph, pl = _PAIRS[key]["pi/4"]
    d = (zl - ph) - pl               # chi = zh + d
    sh, chh = gp.sin(zh), gp.cos(zh)
    sd, cd = gp.sin(d), gp.cos(d)
    c = chh * cd - sh * sd
    s = sh * cd + chh * sd
    if kind == "aip":
        return (_series(key, "R", t) * s - _series(key, "S", t) * c) * q4 * _INV_SQRT_PI
    return (_series(key, "P", t) * c + _series(key, "Q", t) * s) / q4 * _INV_SQRT_PI


def _airy(x, kind: str):
    key = _key(x)
    v = gp.where(x >= 1.0, _positive(x, key, kind),
                 gp.where(x >= -3.0, _middle(x, key, kind), _negative(x, key, kind)))
    v = gp.where(x > _POS_MAX[key], 0.0, v)
    v = gp.where(gp.isnan(x), math.nan, v)
    return gp.where(gp.isinf(x) & (x < 0), math.nan if kind == "aip" else 0.0, v)


class _Airy(Function):
    """Ai or Ai' with its derivative: Ai' and Ai'' = x Ai."""

    @staticmethod
    def forward(ctx, x, kind: str):
        out = _compute(lambda v: _airy(v, kind), x)
        ctx.save_for_backward(x)
        ctx.kind = kind
        return out

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        d = _Airy.apply(x, "aip") if ctx.kind == "ai" else x * _Airy.apply(x, "ai")
        return g * d, None


def airy_ai(x: Array) -> Array:
    """The Airy function Ai (torch.special.airy_ai, scipy.special.airy's first value)."""
    return _Airy.apply(_floating(x, "airy_ai"), "ai")


def airy_ai_prime(x: Array) -> Array:
    """The derivative Ai' of the Airy function (scipy.special.airy's second value)."""
    return _Airy.apply(_floating(x, "airy_ai_prime"), "aip")

