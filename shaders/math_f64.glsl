// Double-precision math library for GLSL (GLSL.std.450 has no float64 exp/log/sin/...).
// The includer must enable GL_ARB_gpu_shader_int64 first (common.glsl does).
// Method: range reduction + truncated Taylor series (coefficients are exact rationals
// 1/n!, 2/(2n+1), ... rounded to double; constants from tools-free 400-digit decimal
// arithmetic), with error-free transforms (Dekker products, TwoSum) where a step must be exact.
// `precise` keeps the compiler from contracting or reassociating those steps.
// Accuracy measured against NumPy: tests/test_vulkan_f64_math.py states the bound per function.
#ifndef GRILLY_MATH_F64
#define GRILLY_MATH_F64

#define D_INF uint64BitsToDouble(0x7ff0000000000000ul)
#define D_NAN uint64BitsToDouble(0x7ff8000000000000ul)
// inf or NaN, from the exponent bits: NVIDIA's compiler lost isinf/isnan tests on the path to
// sin/cos/tan (x - x came out 0), an integer test it cannot
bool nonfinite_d(double x) {
    return (doubleBitsToUint64(x) & 0x7ff0000000000000ul) == 0x7ff0000000000000ul;
}
// ln2 split so that k * LN2_HI is exact for |k| < 2^11
#define LN2_HI 0.6931471805598903LF
#define LN2_LO 5.497923018708371e-14LF
#define LN2_0 0.6931471805599453LF
#define LN2_1 2.3190468138462996e-17LF
#define INV_LN2_0 1.4426950408889634LF
#define INV_LN2_1 2.0355273740931033e-17LF
#define INV_LN10_0 0.4342944819032518LF
#define INV_LN10_1 1.098319650216765e-17LF
#define LOG10_2_HI 0.30102999566395283LF
#define LOG10_2_LO 2.8363394551044964e-14LF
// pi/2 as an unevaluated sum of four doubles
#define PIO2_0 1.5707963267948966LF
#define PIO2_1 6.123233995736766e-17LF
#define PIO2_2 -1.4973849048591698e-33LF
#define PIO2_3 5.562271104316826e-50LF
#define PI_0 3.141592653589793LF
#define PI_1 1.2246467991473532e-16LF
#define PIO4_0 0.7853981633974483LF
#define TWO_OVER_PI 0.6366197723675814LF

bool signbit_d(double x) { return (doubleBitsToUint64(x) >> 63) != 0ul; }

double copysign_d(double x, double y) {
    return uint64BitsToDouble((doubleBitsToUint64(x) & 0x7ffffffffffffffful)
                              | (doubleBitsToUint64(y) & 0x8000000000000000ul));
}

// 2^n for n in [-1022, 1023], built from its bits
double pow2i_d(int n) { return uint64BitsToDouble(uint64_t(n + 1023) << 52); }

// x * 2^n for any n, rounding once (steps keep x normal until the last multiply)
double scalbn_d(double x, int n) {
    if (n > 1023) {
        x *= pow2i_d(1023); n -= 1023;
        if (n > 1023) { x *= pow2i_d(1023); n = min(n - 1023, 1023); }
    } else if (n < -1022) {
        x *= pow2i_d(-969); n += 969;
        if (n < -1022) { x *= pow2i_d(-969); n = max(n + 969, -1022); }
    }
    return x * pow2i_d(n);
}

// a * b = p + e exactly (Dekker; not fma: lavapipe lowers double fma to a multiply and an add).
// Needs |a|, |b| < 2^996.
void dd_split_d(double a, out double hi, out double lo) {
    precise double t = 134217729.0LF * a;   // 2^27 + 1
    precise double h = t - (t - a);
    hi = h;
    lo = a - h;
}

void two_prod_d(double a, double b, out double p, out double e) {
    double ah, al, bh, bl;
    dd_split_d(a, ah, al);
    dd_split_d(b, bh, bl);
    precise double q = a * b;
    precise double r = ((ah * bh - q) + ah * bl + al * bh) + al * bl;
    p = q;
    e = r;
}

// hi + lo += b, exactly up to the rounding of lo (Knuth's TwoSum)
void dd_add_d(inout double hi, inout double lo, double b) {
    precise double s = hi + b;
    precise double bb = s - hi;
    precise double err = (hi - (s - bb)) + (b - bb);
    hi = s;
    lo += err;
}

void dd_norm_d(inout double hi, inout double lo) {
    precise double s = hi + lo;
    precise double l = (hi - s) + lo;
    hi = s;
    lo = l;
}

// ---- exp ----------------------------------------------------------------------------------
// expm1(r) for |r| <= ln2/2: Taylor to r^14 (truncation < 2^-57 relative)
double expm1_poly_d(double r) {
    double p = 1.1470745597729725e-11LF;
    p = p * r + 1.6059043836821613e-10LF;
    p = p * r + 2.08767569878681e-09LF;
    p = p * r + 2.505210838544172e-08LF;
    p = p * r + 2.755731922398589e-07LF;
    p = p * r + 2.7557319223985893e-06LF;
    p = p * r + 2.48015873015873e-05LF;
    p = p * r + 0.0001984126984126984LF;
    p = p * r + 0.001388888888888889LF;
    p = p * r + 0.008333333333333333LF;
    p = p * r + 0.041666666666666664LF;
    p = p * r + 0.16666666666666666LF;
    p = p * r + 0.5LF;
    return r + r * r * p;
}

// exp(hi + lo), |lo| <= ulp(hi): k = round(x / ln2), x = k ln2 + r, exp = 2^k exp(r)
double exp_dd_d(double hi, double lo) {
    if (isnan(hi)) return hi;
    if (hi > 710.0LF) return D_INF;
    if (hi < -746.0LF) return 0.0LF;
    double k = roundEven(hi * INV_LN2_0);
    precise double t = hi - k * LN2_HI;   // exact: k * LN2_HI has <= 53 bits, Sterbenz
    precise double c = lo - k * LN2_LO;
    precise double r = t + c;
    precise double rl = (t - r) + c;
    double p = expm1_poly_d(r);
    return scalbn_d(1.0LF + (p + rl * (1.0LF + p)), int(k));
}

double exp_d(double x) { return exp_dd_d(x, 0.0LF); }

double expm1_d(double x) {
    if (isnan(x) || x == 0.0LF) return x;
    if (x > 36.0LF) return exp_d(x) - 1.0LF;   // exp(x) > 2^51: one rounding of the sum
    if (x < -37.5LF) return -1.0LF;             // exp(x) < ulp(1)/2
    if (abs(x) <= 0.34657359027997264LF) return expm1_poly_d(x);
    double k = roundEven(x * INV_LN2_0);
    precise double t = x - k * LN2_HI;
    precise double c = -k * LN2_LO;
    precise double r = t + c;
    precise double rl = (t - r) + c;
    double p = expm1_poly_d(r);
    double u = p + rl * (1.0LF + p);
    double s = pow2i_d(int(k));
    // 2^k expm1(r) + (2^k - 1): s * u and s - 1 are exact for |k| <= 53
    return s * u + (s - 1.0LF);
}

// ---- log ----------------------------------------------------------------------------------
// x = 2^e (1 + f) with 1 + f in [sqrt(2)/2, sqrt(2)); x finite, > 0
void logsplit_d(double x, out int e, out double f) {
    uint64_t b = doubleBitsToUint64(x);
    int k = 0;
    if (b < 0x0010000000000000ul) {   // subnormal
        b = doubleBitsToUint64(x * 18014398509481984.0LF);
        k = -54;
    }
    uint64_t m = b & 0x000ffffffffffffful;
    e = int(b >> 52) - 1023 + k;
    if (m >= 0x6a09e667f3bcdul) { m |= 0x3fe0000000000000ul; e += 1; }
    else m |= 0x3ff0000000000000ul;
    f = uint64BitsToDouble(m) - 1.0LF;   // exact (Sterbenz)
}

// log(1 + f) = 2 atanh(s), s = f / (2 + f), |s| <= 0.172, z = s^2:
// log(1 + f) = 2s + s R(z), R = sum_n>=1 2 z^n / (2n+1) = z (2/3 + z Q(z))
double log_Q_d(double z) {
    double p = 0.08LF;
    p = p * z + 0.08695652173913043LF;
    p = p * z + 0.09523809523809523LF;
    p = p * z + 0.10526315789473684LF;
    p = p * z + 0.11764705882352941LF;
    p = p * z + 0.13333333333333333LF;
    p = p * z + 0.15384615384615385LF;
    p = p * z + 0.18181818181818182LF;
    p = p * z + 0.2222222222222222LF;
    p = p * z + 0.2857142857142857LF;
    return p * z + 0.4LF;
}

double log_R_d(double z) { return z * (0.6666666666666666LF + z * log_Q_d(z)); }

// log(1 + f) as hi + lo (hi = f - f^2/2 carries the bulk; 2s = f - s f makes it exact)
void log1p_hl_d(double f, out double hi, out double lo) {
    double s = f / (2.0LF + f);
    double hfsq = 0.5LF * f * f;
    precise double h = f - hfsq;
    precise double l = ((f - h) - hfsq) + s * (hfsq + log_R_d(s * s));
    hi = h;
    lo = l;
}

// k ln2 + log(1 + f) + c
double log_kf_d(double k, double f, double c) {
    double s = f / (2.0LF + f);
    double hfsq = 0.5LF * f * f;
    double t = s * (hfsq + log_R_d(s * s)) + (k * LN2_LO + c);
    return k * LN2_HI + (f - (hfsq - t));
}

// NaN/domain handling shared by the logs; returns true (with r set) when x is special
bool log_special_d(double x, out double r) {
    r = x;
    if (isnan(x) || (isinf(x) && x > 0.0LF)) return true;
    if (x == 0.0LF) { r = -D_INF; return true; }
    if (x < 0.0LF) { r = D_NAN; return true; }
    return false;
}

double log_d(double x) {
    double r;
    if (log_special_d(x, r)) return r;
    int e; double f;
    logsplit_d(x, e, f);
    return log_kf_d(double(e), f, 0.0LF);
}

double log1p_d(double x) {
    if (isnan(x) || (isinf(x) && x > 0.0LF)) return x;
    if (x == -1.0LF) return -D_INF;
    if (x < -1.0LF) return D_NAN;
    if (abs(x) < 5.551115123125783e-17LF) return x;   // |x| < 2^-54 (keeps -0 and subnormals)
    if (x > -0.2928932188134524LF && x < 0.41421356237309503LF) return log_kf_d(0.0LF, x, 0.0LF);
    double u = 1.0LF + x;
    int e; double f;
    logsplit_d(u, e, f);
    // log(1 + x) = log(u) + log(1 + c), c = ((1 + x) - u) / u: what the rounding of u lost
    precise double c = e > 0 ? 1.0LF - (u - x) : x - (u - 1.0LF);
    if (e > 53) c = 0.0LF;
    return log_kf_d(double(e), f, c / u);
}

// log2 / log10: e * log_b(2) + log(1 + f) / ln(b), the product carried to ~2^-100
double logb_d(double x, double inv0, double inv1, double ehi, double elo) {
    double r;
    if (log_special_d(x, r)) return r;
    int e; double f;
    logsplit_d(x, e, f);
    double hi, lo;
    log1p_hl_d(f, hi, lo);
    double ed = double(e);
    precise double a = ed * ehi;   // exact: ehi has <= 42 bits
    double p, pe0;
    two_prod_d(hi, inv0, p, pe0);
    precise double pe = pe0 + (hi * inv1 + lo * inv0 + ed * elo);
    precise double t = a + p;      // |a| >= |p| unless a == 0
    return t + (((a - t) + p) + pe);
}

double log2_d(double x) { return logb_d(x, INV_LN2_0, INV_LN2_1, 1.0LF, 0.0LF); }
double log10_d(double x) { return logb_d(x, INV_LN10_0, INV_LN10_1, LOG10_2_HI, LOG10_2_LO); }

// log(x) as hi + lo to ~2^-66 relative (for pow); x finite, > 0
void log_dd_d(double x, out double hi, out double lo) {
    int e; double f;
    logsplit_d(x, e, f);
    precise double d = 2.0LF + f;
    precise double dl = f - (d - 2.0LF);                 // exact: 2 + f = d + dl
    double s = f / d;
    double sd, sde;
    two_prod_d(s, d, sd, sde);
    precise double sl = (((f - sd) - sde) - s * dl) / d;   // s + sl = f / (2 + f)
    double z = s * s;
    // log(1 + f) = 2s + (2/3)s^3 + s^5 Q(s^2); the first two terms in double-double
    double q = z * z * s * log_Q_d(z);
    double s2, s2l, s3, s3e, t, te, h, l;
    two_prod_d(s, s, s2, s2l);
    two_prod_d(s2, s, s3, s3e);
    precise double s3l = s3e + (s2l * s + 3.0LF * s2 * sl);
    two_prod_d(s3, 0.6666666666666666LF, t, te);
    precise double tl = te + (s3 * 3.700743415417188e-17LF + s3l * 0.6666666666666666LF);
    double ed = double(e);
    two_prod_d(ed, LN2_0, h, l);
    l += ed * LN2_1;
    dd_add_d(h, l, 2.0LF * s);
    dd_add_d(h, l, t);
    l += (2.0LF * sl + tl) + q;
    dd_norm_d(h, l);
    hi = h;
    lo = l;
}

// ---- trigonometric --------------------------------------------------------------------------
// 2/pi in 24-bit chunks: 2/pi = sum_i TWO_OVER_PI_24[i] * 2^(-24 (i + 1))
const uint TWO_OVER_PI_24[52] = uint[](
    10680707u, 7228996u, 1387004u, 2578385u, 16069853u, 12639074u, 9804092u, 4427841u,
    16666979u, 11263675u, 12935607u, 2387514u, 4345298u, 14681673u, 3074569u, 13734428u,
    16653803u, 1880361u, 10960616u, 8533493u, 3062596u, 8710556u, 7349940u, 6258241u,
    3772886u, 3769171u, 3798172u, 8675211u, 12450088u, 3874808u, 9961438u, 366607u,
    15675153u, 9132554u, 7151469u, 3571407u, 2607881u, 12013382u, 4155038u, 6285869u,
    7677882u, 13102053u, 15825725u, 473591u, 9065106u, 15363067u, 6271263u, 9264392u,
    5636912u, 4652155u, 7056368u, 13614112u);

// Payne-Hanek for ax >= 2^40: ax * 2/pi mod 4 from the 2/pi bits that matter, in
// double-double (absolute error ~2^-100 of the fraction)
int rem_pio2_large_d(double ax, out double r, out double rl) {
    int ex = int(doubleBitsToUint64(ax) >> 52) - 1075;   // ax = M 2^ex, M < 2^53
    int i0 = max(0, (ex - 2) / 24);   // earlier chunks give multiples of 4
    double xs = scalbn_d(ax, -24 * (i0 + 1));
    double hi = 0.0LF, lo = 0.0LF;
    for (int m = 0; m < 9; ++m) {
        double g = double(TWO_OVER_PI_24[i0 + m]);
        double p, e;
        two_prod_d(xs, g, p, e);
        // exact reductions mod 4 into [-2, 2] (a floor would turn tiny negatives into 4)
        p -= 4.0LF * roundEven(p * 0.25LF);
        e -= 4.0LF * roundEven(e * 0.25LF);
        dd_add_d(hi, lo, p);
        dd_add_d(hi, lo, e);
        hi -= 4.0LF * roundEven(hi * 0.25LF);
        xs *= 5.9604644775390625e-08LF;   // 2^-24
    }
    dd_norm_d(hi, lo);
    double k = roundEven(hi);
    precise double fh = hi - k;
    dd_norm_d(fh, lo);
    double rh, rlo;
    two_prod_d(fh, PIO2_0, rh, rlo);
    rlo += fh * PIO2_1 + lo * PIO2_0;
    dd_norm_d(rh, rlo);
    r = rh;
    rl = rlo;
    return int(k) & 3;
}

// x = q pi/2 + r + rl with |r| <~ pi/4; returns q mod 4. Cody-Waite with pi/2 in four
// parts and exact (Dekker) products below 2^40.
int rem_pio2_d(double x, out double r, out double rl) {
    double ax = abs(x);
    if (ax <= PIO4_0) { r = x; rl = 0.0LF; return 0; }
    if (ax >= 1099511627776.0LF) {
        int q = rem_pio2_large_d(ax, r, rl);
        if (x < 0.0LF) { r = -r; rl = -rl; q = (4 - q) & 3; }
        return q;
    }
    double k = roundEven(x * TWO_OVER_PI);
    double p1, e1, p2, e2;
    two_prod_d(k, PIO2_0, p1, e1);
    two_prod_d(k, PIO2_1, p2, e2);
    precise double hi = x - p1;   // exact (Sterbenz)
    precise double lo = 0.0LF;
    dd_add_d(hi, lo, -e1);
    dd_add_d(hi, lo, -p2);
    lo -= e2 + k * PIO2_2 + k * PIO2_3;
    dd_norm_d(hi, lo);
    r = hi;
    rl = lo;
    return int(int64_t(k) & 3l);
}

// sin(r + rl), |r| <= pi/4: Taylor to r^19
double sin_k_d(double r, double rl) {
    double z = r * r;
    double p = -8.22063524662433e-18LF;
    p = p * z + 2.8114572543455206e-15LF;
    p = p * z - 7.647163731819816e-13LF;
    p = p * z + 1.6059043836821613e-10LF;
    p = p * z - 2.505210838544172e-08LF;
    p = p * z + 2.7557319223985893e-06LF;
    p = p * z - 0.0001984126984126984LF;
    p = p * z + 0.008333333333333333LF;
    p = p * z - 0.16666666666666666LF;
    return r + (z * r * p + rl * (1.0LF - 0.5LF * z));
}

// cos(r + rl), |r| <= pi/4: Taylor to r^20, 1 - r^2/2 kept exact-ish
double cos_k_d(double r, double rl) {
    double z = r * r;
    double p = 4.110317623312165e-19LF;
    p = p * z - 1.5619206968586225e-16LF;
    p = p * z + 4.779477332387385e-14LF;
    p = p * z - 1.1470745597729725e-11LF;
    p = p * z + 2.08767569878681e-09LF;
    p = p * z - 2.755731922398589e-07LF;
    p = p * z + 2.48015873015873e-05LF;
    p = p * z - 0.001388888888888889LF;
    p = p * z + 0.041666666666666664LF;
    double hz = 0.5LF * z;
    precise double w = 1.0LF - hz;
    precise double corr = ((1.0LF - w) - hz) + (z * z * p - r * rl);
    return w + corr;
}

double sin_d(double x) {
    if (nonfinite_d(x)) return D_NAN;
    if (abs(x) < 7.450580596923828e-09LF) return x;   // 2^-27: x^3/6 < ulp(x)/4
    double r, rl;
    int q = rem_pio2_d(x, r, rl);
    double v = (q & 1) == 0 ? sin_k_d(r, rl) : cos_k_d(r, rl);
    return q >= 2 ? -v : v;
}

double cos_d(double x) {
    if (nonfinite_d(x)) return D_NAN;
    double r, rl;
    int q = rem_pio2_d(x, r, rl);
    double v = (q & 1) == 0 ? cos_k_d(r, rl) : sin_k_d(r, rl);
    return (q == 1 || q == 2) ? -v : v;
}

double tan_d(double x) {
    if (nonfinite_d(x)) return D_NAN;
    if (abs(x) < 7.450580596923828e-09LF) return x;
    double r, rl;
    int q = rem_pio2_d(x, r, rl);
    double s = sin_k_d(r, rl), c = cos_k_d(r, rl);
    return (q & 1) == 0 ? s / c : -c / s;
}

// ---- inverse trigonometric ------------------------------------------------------------------
// atan(j/8), j = 0..8, as hi + lo
const double ATAN_HI[9] = double[](0.0LF, 0.12435499454676144LF, 0.24497866312686414LF,
    0.35877067027057225LF, 0.4636476090008061LF, 0.5585993153435624LF, 0.6435011087932844LF,
    0.7188299996216245LF, 0.7853981633974483LF);
const double ATAN_LO[9] = double[](0.0LF, -3.1253241424539383e-18LF, 1.0698755618734451e-17LF,
    -2.4623815582638635e-17LF, 2.2698777452961687e-17LF, -5.4556305485916264e-18LF,
    1.5834785051444286e-17LF, -2.1478388444456983e-17LF, 3.061616997868383e-17LF);

// atan(u) = atan(c) + atan((u - c) / (1 + u c)), c = j/8 nearest u, so |t| <= 1/16:
// Taylor to t^17
double atan_d(double x) {
    if (isnan(x)) return x;
    double a = abs(x);
    bool inv = a > 1.0LF;
    double u = inv ? 1.0LF / a : a;
    int j = int(roundEven(u * 8.0LF));
    double c = double(j) * 0.125LF;
    double t = (u - c) / (1.0LF + u * c);   // u - c exact (Sterbenz)
    double z = t * t;
    double p = 0.058823529411764705LF;
    p = p * z - 0.06666666666666667LF;
    p = p * z + 0.07692307692307693LF;
    p = p * z - 0.09090909090909091LF;
    p = p * z + 0.1111111111111111LF;
    p = p * z - 0.14285714285714285LF;
    p = p * z + 0.2LF;
    p = p * z - 0.3333333333333333LF;
    double lo = ATAN_LO[j] + (t + t * z * p);
    double hi = ATAN_HI[j];
    double res = inv ? (PIO2_0 - hi) + (PIO2_1 - lo) : hi + lo;
    return copysign_d(res, x);
}

double atan2_d(double y, double x) {
    if (isnan(x) || isnan(y)) return x + y;
    if (x == 0.0LF && y == 0.0LF) return signbit_d(x) ? copysign_d(PI_0, y) : y;
    if (isinf(x) && isinf(y))
        return copysign_d(x > 0.0LF ? PIO4_0 : 2.356194490192345LF, y);
    if (x == 0.0LF || isinf(y)) return copysign_d(PIO2_0, y);
    double r = atan_d(y / x);
    if (x < 0.0LF) r = signbit_d(y) ? (r - PI_0) - PI_1 : (r + PI_0) + PI_1;
    return r;
}

double asin_d(double x) {
    if (isnan(x)) return x;
    double a = abs(x);
    if (a > 1.0LF) return D_NAN;
    if (a < 7.450580596923828e-09LF) return x;
    double w = a <= 0.5LF ? 1.0LF - a * a : (1.0LF - a) * (1.0LF + a);
    return copysign_d(atan_d(a / sqrt(w)), x);
}

double acos_d(double x) {
    if (isnan(x)) return x;
    if (abs(x) > 1.0LF) return D_NAN;
    return 2.0LF * atan_d(sqrt((1.0LF - x) / (1.0LF + x)));
}

// ---- hyperbolic -----------------------------------------------------------------------------
// exp(a) / 2 = exp(a - ln2) with a - ln2 carried as double-double (no overflow below 710.47)
double half_exp_d(double a) {
    precise double s = a - LN2_0;
    precise double l = ((a - s) - LN2_0) - LN2_1;
    return exp_dd_d(s, l);
}

double sinh_d(double x) {
    if (isnan(x) || isinf(x)) return x;
    double a = abs(x);
    if (a < 7.450580596923828e-09LF) return x;
    double r;
    if (a < 22.0LF) {
        double t = expm1_d(a);
        r = 0.5LF * (t + t / (t + 1.0LF));
    } else {
        r = half_exp_d(a);
    }
    return copysign_d(r, x);
}

double cosh_d(double x) {
    if (isnan(x)) return x;
    double a = abs(x);
    if (a < 0.34657359027997264LF) {
        double t = expm1_d(a);
        return 1.0LF + (t * t) / (2.0LF * (1.0LF + t));
    }
    if (a < 22.0LF) {
        double e = exp_d(a);
        return 0.5LF * e + 0.5LF / e;
    }
    return half_exp_d(a);
}

double tanh_d(double x) {
    if (isnan(x)) return x;
    double a = abs(x);
    if (a < 7.450580596923828e-09LF) return x;
    double r;
    if (a >= 22.0LF) r = 1.0LF;
    else if (a >= 1.0LF) r = 1.0LF - 2.0LF / (expm1_d(2.0LF * a) + 2.0LF);
    else {
        double t = expm1_d(-2.0LF * a);
        r = -t / (t + 2.0LF);
    }
    return copysign_d(r, x);
}

double asinh_d(double x) {
    if (isnan(x) || isinf(x)) return x;
    double a = abs(x);
    if (a < 7.450580596923828e-09LF) return x;
    double r;
    if (a > 268435456.0LF) r = log_d(a) + LN2_0;   // 2^28: sqrt(a^2 + 1) = a
    else if (a > 2.0LF) r = log_d(2.0LF * a + 1.0LF / (sqrt(a * a + 1.0LF) + a));
    else {
        double a2 = a * a;
        r = log1p_d(a + a2 / (1.0LF + sqrt(1.0LF + a2)));
    }
    return copysign_d(r, x);
}

double acosh_d(double x) {
    if (isnan(x)) return x;
    if (x < 1.0LF) return D_NAN;
    if (isinf(x)) return x;
    if (x > 268435456.0LF) return log_d(x) + LN2_0;
    if (x > 2.0LF) return log_d(2.0LF * x - 1.0LF / (x + sqrt(x * x - 1.0LF)));
    double t = x - 1.0LF;
    return log1p_d(t + sqrt(2.0LF * t + t * t));
}

double atanh_d(double x) {
    if (isnan(x)) return x;
    double a = abs(x);
    if (a > 1.0LF) return D_NAN;
    if (a == 1.0LF) return copysign_d(D_INF, x);
    if (a < 7.450580596923828e-09LF) return x;
    double r;
    if (a < 0.5LF) {
        double t = a + a;
        r = 0.5LF * log1p_d(t + t * a / (1.0LF - a));
    } else {
        r = 0.5LF * log1p_d((a + a) / (1.0LF - a));
    }
    return copysign_d(r, x);
}

// ---- two-argument ---------------------------------------------------------------------------
// x^y = exp(y log x) for x > 0 finite, y finite: log in double-double, so the product's
// error stays ~2^-60 even where |y log x| is near 709
double pow_pos_d(double x, double y) {
    if (x == 1.0LF) return 1.0LF;   // log 0 would leave y unsplit (|y| may exceed 2^996)
    double lh, ll;
    log_dd_d(x, lh, ll);
    double zh = y * lh;
    if (abs(zh) > 746.0LF) return zh > 0.0LF ? D_INF : 0.0LF;   // also keeps y < 2^996 below
    double zl;
    two_prod_d(y, lh, zh, zl);
    zl += y * ll;
    return exp_dd_d(zh, zl);
}

// C99 Annex F special cases, as NumPy (and the float32 pow_ of elementwise.comp)
double pow_d(double x, double y) {
    if (y == 0.0LF || x == 1.0LF) return 1.0LF;
    if (isnan(x) || isnan(y)) return x + y;
    double ay = abs(y);
    bool yint = trunc(y) == y;
    bool yodd = yint && ay < 9007199254740992.0LF && mod(ay, 2.0LF) == 1.0LF;
    if (isinf(y)) {
        double ax = abs(x);
        if (ax == 1.0LF) return 1.0LF;
        return (ax > 1.0LF) == (y > 0.0LF) ? D_INF : 0.0LF;
    }
    if (x == 0.0LF || isinf(x)) {
        double r = (y > 0.0LF) == (x == 0.0LF) ? 0.0LF : D_INF;
        return (yodd && x < 0.0LF) || (yodd && signbit_d(x)) ? -r : r;
    }
    if (x < 0.0LF) {
        if (!yint) return D_NAN;
        double r = pow_pos_d(-x, y);
        return yodd ? -r : r;
    }
    return pow_pos_d(x, y);
}

double hypot_d(double a, double b) {
    a = abs(a);
    b = abs(b);
    if (isinf(a) || isinf(b)) return D_INF;
    if (isnan(a) || isnan(b)) return a + b;
    double m = max(a, b), n = min(a, b);
    if (m == 0.0LF) return m;
    int sc = 0;
    // keep m^2 + n^2 away from overflow and underflow
    if (m > 3.273390607896142e+150LF) { m *= pow2i_d(-600); n *= pow2i_d(-600); sc = 600; }
    else if (m < 3.054936363499605e-151LF) { m *= pow2i_d(600); n *= pow2i_d(600); sc = -600; }
    return scalbn_d(sqrt(m * m + n * n), sc);
}

double logaddexp_d(double a, double b) {
    if (a == b) return a + LN2_0;   // also inf + inf and -inf + -inf
    if (isnan(a) || isnan(b)) return a + b;
    return max(a, b) + log1p_d(exp_d(-abs(a - b)));
}

#endif
