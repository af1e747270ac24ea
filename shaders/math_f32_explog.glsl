// Part of math_f32.glsl: exp, exp2, expm1, log, log2, log10, log1p, pow, logaddexp, and the
// hyperbolic functions and their inverses, from add/mul/fma, roundEven and bit manipulation
// only (no GLSL exp/log/pow built-ins). Private helpers are prefixed el_.
// Methods (coefficients: weighted least-squares/Lawson fits to the minimax error, made by
// tools/fit_f32_explog.py, rounded to float32 and re-checked):
//   exp, expm1: k = round(x/ln2), r = x - k*ln2 with ln2 in two parts (Cody-Waite, k*LN2_HI
//     exact); e^r - 1 = r + r^2*P5(r) on |r| <= 0.354; expm1 = 2^k*em1 + (2^k - 1) (both
//     terms exact for |k| <= 24, so it rounds once). Scaling by 2^k (el_scale): two
//     multiplies by normal powers of two, or for a subnormal result the bits built as an
//     integer, round(p * 2^(k+149)), so no arithmetic step has a subnormal operand or result.
//   exp2: k = round(x), f = x - k exact, 2^f = 1 + f*Q6(f).
//   log, log1p: exponent and mantissa from the bits (subnormals normalised with findMSB),
//     m in [sqrt(1/2), sqrt(2)), f = m - 1 exact, s = f/(2+f), log1p(f) = f - f^2/2 +
//     s*(f^2/2 + R3(s^2)) (the quotient only feeds a term <= 5% of the result); log1p(x)
//     takes f = x exactly for 1+x in that interval, else u = 1+x plus the correction
//     (x - (u-1))/u. log2/log10: f - f^2/2 cut to 12 bits so that its product with the
//     12-bit head of 1/ln2 (1/ln10) is exact, the rest carried separately.
//   pow: log2|x| in double-float (~2^-44 relative): m as above, a 47-entry table of 8-bit
//     c ~ 1/m and -log2(c) (head + tail), r = m*c - 1 exact (Veltkamp split of m),
//     log(1+r) with r^2/2 exact (Dekker), times 1/ln2 (head + tail); y*log2|x| as a Dekker
//     product, then exp2 of head + tail as above (|y| clamped to 2^31: beyond that the
//     result already over/underflows for every x != 1). Special cases as C99/numpy.
//   sinh, cosh: |x| < 1: odd/even polynomials; else h = e^|x|/2 scaled by 2^(k-1) (no
//     premature overflow up to 89.4), cosh = h + 0.25/h; sinh = (t - 0.25/h) + t*em1 with
//     t = 2^(k-1) (t*em1 exact: one rounding less) for |x| <= 16, h beyond.
//   tanh: |x| < 0.55: x + x^3*T7(x^2); else 1 - 2/(e^{2|x|} + 1) with e^{2|x|} + 1 kept in
//     two parts and the quotient corrected by one Newton step (its error is damped: q <= 0.5
//     and the result >= 0.5); both evaluated, one selected (no divergent branches).
//   asinh/acosh: log1p forms (fdlibm), log(x) + ln2 for huge x; on |x| <= 2 the sums
//     |x| + sqrt(x^2 + 1), t + sqrt(2t + t^2) (t = x - 1) in two parts, the sqrt corrected by
//     an exact residual step, then log(hi) + lo/hi; atanh: (log1p(|x|) -
//     log1p(-|x|))/2, no quotient at all.
//   logaddexp: m + log1p(e^d), m = max, d = -|a - b| in two parts (TwoSum); e^d = vh + vl
//     (the rounding of 1 + em1 carried); log1p(v) = [ln2 +] log1p(w), w = v or (v - 1)/2
//     in two parts, m + [ln2_hi] + w summed exactly and the small terms added last (the
//     result may cancel to ~0). |m| < 2^-60 with e^d < 2^-59: m + e^d summed at 2^64 scale
//     (m read from its bits, the result built as bits if subnormal), so a device that
//     flushes subnormals still gets e.g. logaddexp(1e-40, -1e38) = 1e-40.
//   Subnormal operands: every test that could see one reads the bits (pow classifies x
//     and y by their bits; small-|x| paths return x itself), because a flushing device
//     (NVIDIA) reads a subnormal as 0 in compares and arithmetic.
// Division and sqrt are only 2.5 ulp in Vulkan: every quotient here either feeds a small
// correction term or is corrected by a residual step; `precise` keeps the error-free transforms
// (Veltkamp split, Dekker product, TwoSum) from being contracted or reassociated.
// Measured on lavapipe (tests/test_float_accuracy.py, 10^6 points per range, whole float32
// domain): see the table in the commit message / docs; all <= 2 ulp except as noted there.

#ifndef GRILLY_BUILTIN_MATH
#define GRILLY_BUILTIN_MATH 0
#endif
#if GRILLY_BUILTIN_MATH
// benchmark only (variant ew_float32_builtin): the driver's built-ins, to price the library
float exp_f(float x) { return exp(x); }
float log_f(float x) { return log(x); }
float tanh_f(float x) { return tanh(x); }
#endif

#define EL_LN2_HI 6.931457520e-01   // 16 bits: k * EL_LN2_HI is exact for |k| < 256
#define EL_LN2_LO 1.428606765e-06
#define EL_LN2 6.931471825e-01
#define EL_INV_LN2 1.442695022e+00
#define EL_INV_LN2_LO 1.925963034e-08
#define EL_IVLN2_HI 1.442382812e+00   // 12 bits
#define EL_IVLN2_LO 3.122283961e-04
#define EL_IVLN10_HI 4.342041016e-01  // 12 bits
#define EL_IVLN10_LO 9.038033750e-05
#define EL_LOG10_2_HI 3.010253906e-01 // 12 bits
#define EL_LOG10_2_LO 4.605039067e-06

// ---- error-free transforms ----
// a + b = s + e exactly (Knuth's TwoSum)
void el_two_sum(float a, float b, out float s, out float e) {
    precise float ss = a + b;
    precise float bb = ss - a;
    precise float ee = (a - (ss - bb)) + (b - bb);
    s = ss;
    e = ee;
}

// a = hi + lo, hi with 12 significant bits (Veltkamp); |a| < 2^115
void el_split(float a, out float hi, out float lo) {
    precise float t = 4097.0 * a;
    precise float h = t - (t - a);
    precise float l = a - h;
    hi = h;
    lo = l;
}

// a * b = p + e exactly (Dekker: no fused fma needed)
void el_two_prod(float a, float b, out float p, out float e) {
    float ah, al, bh, bl;
    el_split(a, ah, al);
    el_split(b, bh, bl);
    precise float pp = a * b;
    precise float ee = ((ah * bh - pp) + ah * bl + al * bh) + al * bl;
    p = pp;
    e = ee;
}

// ---- exp family ----
// 2^n for n in [-126, 127], from its bits
float el_pow2i(int n) { return uintBitsToFloat(uint(n + 127) << 23); }

// p * 2^k for p in [0.5, 2) and any k, rounding once; a subnormal result is built
// as an integer (devices that flush subnormal arithmetic still get it right)
float el_scale(float p, int k) {
    if (k >= -125) {
        k = min(k, 254);   // p * 2^254 overflows already
        int k1 = k >> 1;
        return p * el_pow2i(k1) * el_pow2i(k - k1);
    }
    int t = k + 149;
    if (t < -1) return 0.0;
    return uintBitsToFloat(uint(roundEven(p * el_pow2i(t))));
}

// x = k*ln2 + r, |r| <= 0.354, for |x| <= 105
float el_exp_reduce(float x, out int k) {
    float kf = roundEven(x * EL_INV_LN2);
    precise float r = (x - kf * EL_LN2_HI) - kf * EL_LN2_LO;
    k = int(kf);
    return r;
}

// e^r - 1 for |r| <= 0.354 (relative error of the fit 2^-28.6)
float el_expm1_r(float r) {
    float p = 1.984603878e-04;
    p = p * r + 1.394270686e-03;
    p = p * r + 8.333394304e-03;
    p = p * r + 4.166633636e-02;
    p = p * r + 1.666666567e-01;
    p = p * r + 5.000000000e-01;
    return r + (r * r) * p;
}

// 2^f for |f| <= 0.5025 (relative error of the fit 2^-28.7)
float el_exp2_r(float f) {
    float q = 1.519559100e-05;
    q = q * f + 1.546738786e-04;
    q = q * f + 1.333394321e-03;
    q = q * f + 9.618036449e-03;
    q = q * f + 5.550410226e-02;
    q = q * f + 2.402265072e-01;
    q = q * f + 6.931471825e-01;
    return 1.0 + f * q;
}

// e^x * 2^d for x in [-105, 90] (d = -1: e^x / 2 for sinh and cosh)
float el_exp_scaled(float x, int d) {
    int k;
    float r = el_exp_reduce(x, k);
    return el_scale(1.0 + el_expm1_r(r), k + d);
}

// 2^(zh + zl), |zl| <= ulp(zh)
float el_exp2_dd(float zh, float zl) {
    if (abs(zh) > 300.0) return zh > 0.0 ? F_INF : 0.0;
    float kf = roundEven(zh);
    float f = (zh - kf) + zl;
    return el_scale(el_exp2_r(f), int(kf));
}

float el_exp_f(float x) {
    if (isnan(x)) return x;
    return el_exp_scaled(clamp(x, -105.0, 90.0), 0);
}

float exp2_f(float x) {
    if (isnan(x)) return x;
    return el_exp2_dd(x, 0.0);
}

// expm1 without the special cases, x in [-105, 90]
float el_expm1(float x) {
    int k;
    float r = el_exp_reduce(x, k);
    float em1 = el_expm1_r(r);
    if (k == 0) return em1;
    if (k < -24 || k > 24) return el_scale(1.0 + em1, k) - 1.0;
    float t = el_pow2i(k);
    return t * em1 + (t - 1.0);   // t*em1 and t-1 are exact: one rounding
}

float expm1_f(float x) {
    if (isnan(x)) return x;
    if (abs(x) < 2.98023224e-08) return x;   // 2^-25: keeps -0 and subnormals
    return el_expm1(clamp(x, -105.0, 90.0));
}

// ---- log family ----
// |x| = m * 2^e with m in [sqrt(1/2), sqrt(2)), from the bits of a positive finite x
float el_frexp(uint u, out int e) {
    uint mb = u & 0x7fffffu;
    int be = int((u >> 23) & 0xffu);
    if (be == 0) {   // subnormal: normalise the integer mantissa
        int p = findMSB(mb);
        mb = (mb << uint(23 - p)) & 0x7fffffu;
        be = p - 22;
    }
    if (mb > 0x3504f3u) {
        e = be - 126;
        return uintBitsToFloat(mb | 0x3f000000u);
    }
    e = be - 127;
    return uintBitsToFloat(mb | 0x3f800000u);
}

// log1p(f) = f - hfsq + sr for f in [sqrt(1/2) - 1, sqrt(2) - 1]: s = f/(2+f),
// log1p(f) = 2s + s*R(s^2) and 2s = f - hfsq + s*hfsq
void el_log_kernel(float f, out float hfsq, out float sr) {
    float s = f / (2.0 + f);
    float z = s * s;
    float rz = 2.359606326e-01;
    rz = rz * z + 2.853662074e-01;
    rz = rz * z + 4.000034630e-01;
    rz = rz * z + 6.666666269e-01;
    hfsq = 0.5 * f * f;
    sr = s * (hfsq + z * rz);
}

// log of a positive finite x as dk*ln2 + (f - hfsq + sr)
void el_log_parts(float x, out float dk, out float f, out float hfsq, out float sr) {
    int e;
    float m = el_frexp(floatBitsToUint(x), e);
    dk = float(e);
    f = m - 1.0;
    el_log_kernel(f, hfsq, sr);
}

// nan, zero, negative and inf arguments of log, log2, log10 (u: the bits of x); else 1
float el_log_special(uint u) {
    if ((u & 0x7fffffffu) > 0x7f800000u) return uintBitsToFloat(u);
    if ((u & 0x7fffffffu) == 0u) return -F_INF;   // read from the bits: +-0 and no flush
    if ((u >> 31) != 0u) return F_NAN;
    if (u == 0x7f800000u) return F_INF;
    return 1.0;
}

float el_log(float x) {
    float dk, f, hfsq, sr;
    el_log_parts(x, dk, f, hfsq, sr);
    return dk * EL_LN2_HI - ((hfsq - (sr + dk * EL_LN2_LO)) - f);
}

float el_log_f(float x) {
    float sp = el_log_special(floatBitsToUint(x));
    return sp != 1.0 ? sp : el_log(x);
}

// f - hfsq + sr = hi + lo with hi of 12 bits (its products with the 12-bit constants exact)
void el_log_hilo(float f, float hfsq, float sr, out float hi, out float lo) {
    hi = uintBitsToFloat(floatBitsToUint(f - hfsq) & 0xfffff000u);
    lo = ((f - hi) - hfsq) + sr;   // f - hi is exact (Sterbenz)
}

float log2_f(float x) {
    float sp = el_log_special(floatBitsToUint(x));
    if (sp != 1.0) return sp;
    float dk, f, hfsq, sr, hi, lo;
    el_log_parts(x, dk, f, hfsq, sr);
    el_log_hilo(f, hfsq, sr, hi, lo);
    return (((lo + hi) * EL_IVLN2_LO + lo * EL_IVLN2_HI) + hi * EL_IVLN2_HI) + dk;
}

float log10_f(float x) {
    float sp = el_log_special(floatBitsToUint(x));
    if (sp != 1.0) return sp;
    float dk, f, hfsq, sr, hi, lo;
    el_log_parts(x, dk, f, hfsq, sr);
    el_log_hilo(f, hfsq, sr, hi, lo);
    return ((((lo + hi) * EL_IVLN10_LO + lo * EL_IVLN10_HI) + dk * EL_LOG10_2_LO)
            + hi * EL_IVLN10_HI) + dk * EL_LOG10_2_HI;
}

float log1p_f(float x) {
    if (isnan(x)) return x;
    if (x < -1.0) return F_NAN;
    if (x == -1.0) return -F_INF;
    if (x == F_INF) return x;
    if (abs(x) < 5.96046448e-08) return x;   // 2^-24: keeps -0 and subnormals
    float hfsq, sr;
    if (x > -0.2928932 && x < 0.4142135) {   // 1 + x in [sqrt(1/2), sqrt(2)): f = x exactly
        el_log_kernel(x, hfsq, sr);
        return x - (hfsq - sr);
    }
    float u = 1.0 + x;
    int e;
    float m = el_frexp(floatBitsToUint(u), e);
    float dk = float(e), f = m - 1.0;
    // 1 + x = u + c exactly (Fast2Sum, larger operand first); log1p(x) = log(u) + c/u
    float c = x > 1.0 ? 1.0 - (u - x) : x - (u - 1.0);
    c /= u;
    el_log_kernel(f, hfsq, sr);
    return dk * EL_LN2_HI - ((hfsq - (sr + (dk * EL_LN2_LO + c))) - f);
}

// ---- pow ----
// c_j ~ 1/(j/64) in multiples of 2^-7 (8 bits), j = round(64 m) in [45, 91];
// -log2(c_j) = head + tail
const float EL_PC[47] = float[](
    1.421875, 1.390625, 1.359375, 1.3359375, 1.3046875, 1.28125, 1.2578125, 1.234375,
    1.2109375, 1.1875, 1.1640625, 1.140625, 1.125, 1.1015625, 1.0859375, 1.0703125, 1.046875,
    1.03125, 1.015625, 1.0, 0.984375, 0.96875, 0.953125, 0.9375, 0.9296875, 0.9140625,
    0.8984375, 0.890625, 0.875, 0.8671875, 0.8515625, 0.84375, 0.828125, 0.8203125, 0.8125,
    0.796875, 0.7890625, 0.78125, 0.7734375, 0.765625, 0.75, 0.7421875, 0.734375, 0.7265625,
    0.71875, 0.7109375, 0.703125);
const float EL_PTH[47] = float[](
    -5.077946186e-01, -4.757334292e-01, -4.429434836e-01, -4.178525209e-01, -3.837043047e-01,
    -3.575519919e-01, -3.309168816e-01, -3.037807345e-01, -2.761244178e-01, -2.479275167e-01,
    -2.191685140e-01, -1.898245662e-01, -1.699250042e-01, -1.395513564e-01, -1.189410761e-01,
    -9.803207964e-02, -6.608919054e-02, -4.439412057e-02, -2.236781269e-02, 0.000000000e+00,
    2.272007614e-02, 4.580368847e-02, 6.926266104e-02, 9.310940653e-02, 1.051822379e-01,
    1.296352744e-01, 1.545099467e-01, 1.671099812e-01, 1.926450729e-01, 2.055841386e-01,
    2.318156809e-01, 2.451124936e-01, 2.720795572e-01, 2.857544720e-01, 2.995602787e-01,
    3.275746703e-01, 3.417885303e-01, 3.561438024e-01, 3.706433773e-01, 3.852901459e-01,
    4.150375128e-01, 4.301443994e-01, 4.454111457e-01, 4.608411789e-01, 4.764380455e-01,
    4.922053516e-01, 5.081468821e-01);
const float EL_PTL[47] = float[](
    -2.159212897e-08, -1.772901048e-09, -1.225764823e-08, 6.056790181e-09, 1.222107748e-08,
    -1.267853911e-08, 3.446662289e-09, -1.363807112e-08, 1.250759230e-08, 3.255251846e-09,
    -6.448871215e-09, 7.365061894e-09, 2.801538335e-09, 4.036028400e-09, 3.376365187e-09,
    -3.323476161e-09, 8.492547637e-11, 1.215544110e-09, -3.353354538e-10, 0.000000000e+00,
    3.563419282e-10, 1.146575834e-09, 1.397284510e-09, -2.139375566e-09, -1.231088786e-09,
    6.006347864e-09, 2.351713935e-09, 4.656020902e-09, 5.005384107e-09, -4.981926427e-09,
    -5.638399525e-09, 4.202307391e-09, -1.174360342e-08, 1.031658936e-08, 3.204809307e-09,
    -1.228628399e-08, -1.310152609e-08, 7.820871950e-09, 2.616313166e-09, 1.001076821e-08,
    -1.350039192e-08, -7.735473595e-09, 2.635259344e-09, 9.997926043e-09, -1.558721818e-09,
    8.210193414e-09, 2.161313617e-08);

// log2(x) = lh + ll for a positive finite x, ~2^-44 relative
void el_log2_dd(float x, out float lh, out float ll) {
    int e;
    float m = el_frexp(floatBitsToUint(x), e);
    int j = int(roundEven(m * 64.0)) - 45;
    float c = EL_PC[j];
    // r = m*c - 1 = rh + rl exactly: mh*c and ml*c are exact (12 + 8 bits), mh*c - 1 by Sterbenz
    float mh, ml, rh, rl;
    el_split(m, mh, ml);
    precise float a = mh * c - 1.0;
    precise float b = ml * c;
    el_two_sum(a, b, rh, rl);
    // ln(1 + r) = r - r^2/2 + r^3 (1/3 - r/4 + r^2/5 - r^3/6 + r^4/7), |r| < 0.0126
    float sh, sl, hh, hl;
    el_two_prod(rh, rh, sh, sl);
    el_two_sum(rh, -0.5 * sh, hh, hl);
    float p = 1.428571492e-01;
    p = p * rh - 1.666666716e-01;
    p = p * rh + 2.000000030e-01;
    p = p * rh - 0.25;
    p = p * rh + 3.333333433e-01;
    precise float lo = hl + (rl - (0.5 * sl + rh * rl)) + (rh * sh) * p;
    // times 1/ln2, plus -log2(c) and e
    float ph, pl, uh, ul, vh, vl;
    el_two_prod(hh, EL_INV_LN2, ph, pl);
    el_two_sum(EL_PTH[j], ph, uh, ul);
    el_two_sum(float(e), uh, vh, vl);
    precise float rest = vl + ul + (pl + hh * EL_INV_LN2_LO + lo * EL_INV_LN2 + EL_PTL[j]);
    precise float s = vh + rest;
    lh = s;
    ll = rest - (s - vh);
}

// |x|^y for a positive finite x != 1 and a finite y != 0
float el_pow_pos(float x, float y) {
    float lh, ll, zh, ze;
    el_log2_dd(x, lh, ll);
    // beyond 2^31, |y * log2 x| > 180 for every x != 1: the result over/underflows anyway
    float yc = clamp(y, -2147483648.0, 2147483648.0);
    el_two_prod(yc, lh, zh, ze);
    return el_exp2_dd(zh, ze + yc * ll);
}

// Every test on x and y reads their bits: a device that flushes float32 subnormals (NVIDIA)
// sees a subnormal as 0 in a compare, and abs() may flush too.
float pow_f(float x, float y) {
    uint ux = floatBitsToUint(x), uy = floatBitsToUint(y);
    uint bx = ux & 0x7fffffffu, by = uy & 0x7fffffffu;
    if (by == 0u || ux == 0x3f800000u) return 1.0;
    if (bx > 0x7f800000u || by > 0x7f800000u) return F_NAN;
    bool ypos = (uy >> 31) == 0u, xneg = (ux >> 31) != 0u;
    if (by == 0x7f800000u) {
        if (bx == 0x3f800000u) return 1.0;
        return (bx > 0x3f800000u) == ypos ? F_INF : 0.0;
    }
    float ay = uintBitsToFloat(by);   // |y| >= 2^-149; read as a float only when normal
    bool yint = by >= 0x3f800000u && floor(ay) == ay;
    bool yodd = yint && by < 0x4b800000u && fract(ay * 0.5) != 0.0;   // |y| < 2^24
    bool neg = xneg && yodd;
    if (bx == 0u || bx == 0x7f800000u) {
        float r = ypos == (bx == 0u) ? 0.0 : F_INF;
        return neg ? neg_f(r) : r;
    }
    if (xneg && !yint) return F_NAN;
    // a subnormal y: |y log2 x| < 2^-118 for every finite x, so x^y rounds to 1
    if (by < 0x00800000u) return 1.0;
    float r = el_pow_pos(uintBitsToFloat(bx), y);
    return neg ? neg_f(r) : r;   // a subnormal r keeps its bits (NVIDIA's -r flushes it)
}

// x * 2^64 for |x| < 2^-60, read from the bits (a subnormal x is exact, no float operation sees it)
float el_up64(float x) {
    uint u = floatBitsToUint(x);
    if ((u & 0x7f800000u) != 0u) return x * 1.8446744e19;
    float t = float(u & 0x7fffffu) * 2.5849394e-26;   // mantissa * 2^-149 * 2^64 = * 2^-85
    return (u >> 31) != 0u ? -t : t;
}

// s * 2^-64 rounded once; a subnormal result is built from the bits
float el_down64(float s) {
    uint u = floatBitsToUint(s);
    if ((u & 0x7fffffffu) >= 0x20800000u) return s * 2.3283064e-10 * 2.3283064e-10;  // >= 2^-62
    uint mag = uint(roundEven(uintBitsToFloat(u & 0x7fffffffu) * 3.8685626e25));   // * 2^85
    return uintBitsToFloat((u & 0x80000000u) | mag);
}

float logaddexp_f(float a, float b) {
    if (isnan(a) || isnan(b)) return a + b;
    if (a == b) return a + EL_LN2;   // also both +inf or both -inf
    // a select, not max(): a min/max instruction may flush a subnormal operand
    bool ab = a > b;
    float m = ab ? a : b, o = ab ? b : a;
    uint bm = floatBitsToUint(m) & 0x7fffffffu;
    if (bm == 0x7f800000u) return m;
    // d = o - m <= 0 in two parts: the rounding of a - b alone would be ~8 ulp of e^d
    float dh, dl;
    el_two_sum(o, -m, dh, dl);
    if (isinf(dh)) dl = 0.0;
    // |m| < 2^-60 and e^d < 2^-59: the result m + e^d (+ e^2d/2, below 2^-118 of it) may be
    // subnormal or have a subnormal term: summed at 2^64 scale, so nothing is flushed
    bool tiny = bm < 0x21800000u && dh < -41.0;
    int k, sk;
    float r = el_exp_reduce(max(dh, -150.0), k);   // exact reduction for |k| < 256
    sk = k + (tiny ? 64 : 0);
    // v = e^d (* 2^64 if tiny) = vh + vl, the rounding of 1 + em1 carried in vl
    float em1 = el_expm1_r(r);
    precise float eh = 1.0 + em1;
    precise float el = em1 - (eh - 1.0);
    float vh = el_scale(eh, sk);
    int k1 = sk >> 1;
    float vl = sk >= -125 ? el * el_pow2i(k1) * el_pow2i(sk - k1) : 0.0;
    vl += vh * dl;
    if (tiny) {
        float sh, sl;
        el_two_sum(el_up64(m), vh, sh, sl);
        return el_down64(sh + (sl + vl));
    }
    // log1p(v): for v >= sqrt(2) - 1, 1 + v = 2 (1 + w) with w = (v - 1)/2 in [-0.293, 0]
    bool hiv = vh >= 0.4142135;
    float th, tl;
    el_two_sum(vh, -1.0, th, tl);
    float wh = hiv ? 0.5 * th : vh;
    float wl = hiv ? 0.5 * (tl + vl) : vl;
    float hfsq, sr, s1, e1, s2, e2;
    el_log_kernel(wh, hfsq, sr);
    // m + [ln2] + w formed exactly (the result may cancel to ~0), the small terms added last
    el_two_sum(m, hiv ? EL_LN2_HI : 0.0, s1, e1);
    el_two_sum(s1, wh, s2, e2);
    precise float rest = (e1 + e2) + (((hiv ? EL_LN2_LO : 0.0) + wl / (1.0 + wh)) - (hfsq - sr));
    return s2 + rest;
}

// ---- hyperbolic ----
float sinh_f(float x) {
    if (isnan(x)) return x;
    float ax = abs(x);
    if (ax < 1.0) {
        if (ax < 2.44140625e-04) return x;   // 2^-12
        float z = x * x;
        float p = 2.552664036e-08;
        p = p * z + 2.755214155e-06;
        p = p * z + 1.984129485e-04;
        p = p * z + 8.333332837e-03;
        p = p * z + 1.666666716e-01;
        return x + (x * z) * p;
    }
    int k;
    float em1 = el_expm1_r(el_exp_reduce(min(ax, 90.0), k));
    if (ax > 16.0) return copysign_f(el_scale(1.0 + em1, k - 1), x);   // e^-|x| is below 2^-46
    // e^|x|/2 = t + t*em1 (t = 2^(k-1), t*em1 exact): one rounding less than h - 0.25/h
    float t = el_pow2i(k - 1), h = t + t * em1;
    return copysign_f((t - 0.25 / h) + t * em1, x);
}

float cosh_f(float x) {
    if (isnan(x)) return x;
    float ax = abs(x);
    if (ax < 1.0) {
        float z = x * x;
        float p = 2.127063414e-09;
        p = p * z + 2.755207618e-07;
        p = p * z + 2.480162220e-05;
        p = p * z + 1.388888923e-03;
        p = p * z + 4.166666791e-02;
        p = p * z + 5.000000000e-01;
        return 1.0 + z * p;
    }
    float h = el_exp_scaled(min(ax, 90.0), -1);   // e^|x| / 2
    return h + 0.25 / h;
}

// Straight-line (both parts evaluated, one selected): the vec4 path runs 4 elements per
// thread and most warps hold both kinds anyway, so branches would only add their overhead.
float el_tanh_f(float x) {
    float ax = abs(x), z = x * x;
    float p = 3.495490819e-04;
    p = p * z - 1.334382687e-03;
    p = p * z + 3.557340940e-03;
    p = p * z - 8.857327513e-03;
    p = p * z + 2.186889760e-02;
    p = p * z - 5.396822095e-02;
    p = p * z + 1.333333254e-01;
    p = p * z - 3.333333433e-01;
    float small = x + (x * z) * p;
    // |x| >= 0.55: 1 - 2/(e^{2|x|} + 1), the denominator exact in two parts (d + dl)
    int k;
    float r = el_exp_reduce(2.0 * min(ax, 9.01), k);   // k in [1, 26]
    float em1 = el_expm1_r(r), t = el_pow2i(k);
    precise float eh = 1.0 + em1;
    precise float el = em1 - (eh - 1.0);   // Fast2Sum tail: 1 + em1 = eh + el exactly
    precise float eth = t * eh;
    precise float d = eth + 1.0;
    precise float dl = (1.0 - (d - eth)) + t * el;
    float q = 2.0 / d;
    // one Newton step on the quotient (division is only 2.5 ulp in Vulkan): with or without
    // a fused fma the residual 2 - q*(d + dl) is good to a fraction of itself
    float res = fma(-q, d, 2.0) - q * dl;
    q = fma(0.5 * q, res, q);
    float big = ax > 9.01 ? 1.0 : 1.0 - q;   // beyond 9.01, 1 - tanh < 2^-25
    // |x| < 2^-12 returns x itself: x + x^3 p would flush a subnormal x on some devices
    float rt = ax < 0.55 ? (ax < 2.44140625e-04 ? x : small) : copysign_f(big, x);
    return isnan(x) ? x : rt;
}

float asinh_f(float x) {
    if (isnan(x)) return x;
    float ax = abs(x), r;
    if (ax < 2.44140625e-04) return x;
    if (ax > 268435456.0) {   // 2^28: sqrt(x^2 + 1) = x
        r = el_log_f(ax) + EL_LN2;
    } else if (ax > 2.0) {
        r = el_log(2.0 * ax + 1.0 / (sqrt(ax * ax + 1.0) + ax));
    } else {
        // log(u), u = ax + sqrt(ax^2 + 1) in two parts (sqrt corrected by an exact residual)
        float zh, zl, wh, wl, s, p, pe, uh, ul;
        el_two_prod(ax, ax, zh, zl);
        el_two_sum(1.0, zh, wh, wl);
        s = sqrt(wh);
        el_two_prod(s, s, p, pe);
        precise float sc = (((wh - p) - pe) + (wl + zl)) / (2.0 * s);
        el_two_sum(ax, s, uh, ul);
        r = el_log(uh) + (ul + sc) / uh;
    }
    return copysign_f(r, x);
}

float acosh_f(float x) {
    if (isnan(x)) return x;
    if (x < 1.0) return F_NAN;
    if (x > 268435456.0) return el_log_f(x) + EL_LN2;
    if (x > 2.0) return el_log(2.0 * x - 1.0 / (x + sqrt(x * x - 1.0)));
    float t = x - 1.0;   // exact
    if (t == 0.0) return 0.0;
    // acosh(1 + t) ~ sqrt(2t) passes the sqrt's error straight through: a = 2t + t^2 in two
    // parts, sqrt(a) with one exact residual step, t + sqrt(a) in two parts
    float qh, ql, ah, al, s, p, pe, uh, ul;
    el_two_prod(t, t, qh, ql);
    el_two_sum(2.0 * t, qh, ah, al);
    s = sqrt(ah);
    el_two_prod(s, s, p, pe);
    precise float sc = (((ah - p) - pe) + (al + ql)) / (2.0 * s);
    el_two_sum(t, s, uh, ul);
    return log1p_f(uh) + (ul + sc) / (1.0 + uh);
}

float atanh_f(float x) {
    if (isnan(x)) return x;
    float ax = abs(x);
    if (ax > 1.0) return F_NAN;
    if (ax < 2.44140625e-04) return x;
    // log1p(ax) and -log1p(-ax) have the same sign: no cancellation, no quotient
    return copysign_f(0.5 * (log1p_f(ax) - log1p_f(-ax)), x);
}

#if !GRILLY_BUILTIN_MATH
float exp_f(float x) { return el_exp_f(x); }
float log_f(float x) { return el_log_f(x); }
float tanh_f(float x) { return el_tanh_f(x); }
#endif
