// Part of math_f32.glsl: sin, cos, tan, asin, acos, atan, atan2, hypot, sqrt, in float32 only
// (no double, no GLSL built-in transcendental; the one built-in used is sqrt, and every result
// taken from it gets a Newton step with an exact residual, since Vulkan's sqrt may be a few ulp
// off). Error-free transforms (TwoSum, Veltkamp/Dekker TwoProd) are written with `precise`, so
// they hold whether or not the device fuses a*b+c; nothing relies on a fused fma.
// Special values follow the Array API standard (NumPy): sin(-0) = -0, sin(inf) = nan,
// asin(|x| > 1) = nan, atan2's signed zeros and infinities, hypot(inf, nan) = inf.
//
// Method per function (measured worst error over 10^6 points per range: see tests/test_float_accuracy.py):
// - sin, cos, tan: |x| reduced to r = rh + rl (|r| <= pi/4, a float pair with ~2^-40 relative
//   error) and the quadrant q. |x| < 4096: Cody-Waite with pi/2 in five float parts (four of 12
//   bits, so k*part is exact, and one of 24), TwoSum accumulation. |x| >= 4096: Payne-Hanek
//   with the bits of 2/pi in a const uint table, a 24 x 96-bit integer product (umulExtended)
//   and 64 bits of fraction. The smallest |r| of a float32 in [pi/4, 4096] is 2^-27.8.
//   sin(r) = r + r^3 S(r^2) (S degree 3), cos(r) = 1 - r^2/2 + r^4 C(r^2) (C degree 2), both as
//   float pairs including rl's first-order term; tan = sin/cos (q even) or -cos/sin (q odd) of
//   the pairs, the quotient corrected by one exact residual (Vulkan's division is 2.5 ulp).
//   |x| < 2^-12: sin = tan = x, cos = 1.
// - atan: |x| > 1 -> pi/2 - atan(1/|x|) (corrected quotient as a pair); t > tan(pi/8) ->
//   pi/4 + atan((t - 1)/(t + 1)) (numerator and denominator TwoSum pairs, corrected quotient);
//   then u + u^3 A(u^2) (A degree 5 on [0, tan(pi/8)]), constants added as hi + lo pairs.
// - atan2: operands' significands and exponents read from their bits (subnormals included);
//   exponent gap > 30 -> 0, pi/2 or pi (or the tiny quotient y/x, built from bits when
//   subnormal); else atan of the smaller/larger ratio as above, then pi/2 - . and pi - . as pairs.
// - asin, acos: |x| <= 1/2: x + x^3 B(x^2) (B degree 5 on [0, 1/4]); |x| > 1/2: via
//   asin(x) = pi/2 - 2 asin(sqrt((1 - |x|)/2)), the square root as a corrected pair.
// - hypot: both operands scaled by the larger's power of two (from bits), m^2 + n^2 as a pair
//   of exact products, sqrt with one Newton step on the exact residual, scaled back (rounded
//   once from bits when the result is subnormal). Gap of more than 26 binades -> the larger.
// - sqrt_f: sqrt of the significand in [1, 4), one Newton step on the exact residual, then an
//   exact midpoint test (Tuckerman) picks the correctly rounded neighbour.
// Coefficients: relative least-squares fits (Lawson-reweighted, near minimax) with mpmath.

#define TRIG_PIO2_HI 1.5707963705062866
#define TRIG_PIO2_LO -4.371138828673793e-08
#define TRIG_PIO4_HI 0.7853981852531433
#define TRIG_PIO4_LO -2.1855694143368964e-08
#define TRIG_PI_HI 3.1415927410125732
#define TRIG_PI_LO -8.742277657347586e-08

// bits of 2/pi after the binary point, 32 per word, behind one word of zeros
const uint TRIG_2OPI[8] = uint[8](0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u,
                                  0xdb629599u, 0x3c439041u, 0xfe5163abu);

// s + e == a + b exactly
vec2 trig_two_sum(float a, float b) {
    precise float s = a + b;
    precise float bb = s - a;
    precise float e = (a - (s - bb)) + (b - bb);
    return vec2(s, e);
}
// s + e == a + b exactly, for |a| >= |b| (or a == 0)
vec2 trig_fast_two_sum(float a, float b) {
    precise float s = a + b;
    precise float e = b - (s - a);
    return vec2(s, e);
}
// Veltkamp split: a == h + l, each with at most 12 significant bits
vec2 trig_split(float a) {
    precise float c = 4097.0 * a;
    precise float h = c - (c - a);
    precise float l = a - h;
    return vec2(h, l);
}
// p + e == a * b exactly (Dekker), for normal products without overflow
vec2 trig_two_prod(float a, float b) {
    vec2 x = trig_split(a), y = trig_split(b);
    precise float p = a * b;
    precise float e = ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y;
    return vec2(p, e);
}
// (n.x + n.y) / (d.x + d.y) as a pair: the division's first guess corrected by its exact residual
vec2 trig_div_dd(vec2 n, vec2 d) {
    float q0 = n.x / d.x;
    vec2 p = trig_two_prod(q0, d.x);
    precise float e = (((n.x - p.x) - p.y) + n.y) - q0 * d.y;   // n.x - p.x is exact (Sterbenz)
    return trig_fast_two_sum(q0, e / d.x);
}
// 2^k for -126 <= k <= 127
float trig_pow2(int k) { return uintBitsToFloat(uint(k + 127) << 23); }
// a == m * 2^e with m in [1, 2), for finite a != 0, read from the bits (a device that flushes
// subnormal operands still sees a subnormal's significand)
float trig_frexp(float a, out int e) {
    uint u = floatBitsToUint(a) & 0x7fffffffu;
    int be = int(u >> 23);
    if (be == 0) {
        int m = findMSB(u);
        u <<= uint(23 - m);
        be = m - 22;
    }
    e = be - 127;
    return uintBitsToFloat((u & 0x7fffffu) | 0x3f800000u);
}
// v * 2^k for a normal v, rounded once (to nearest even) where the result is subnormal, built
// from bits so that a device flushing subnormal arithmetic still returns it
float trig_ldexp(float v, int k) {
    uint u = floatBitsToUint(v), sgn = u & 0x80000000u;
    int be = int((u >> 23) & 0xffu) + k;
    if (be >= 255) return uintBitsToFloat(sgn | 0x7f800000u);
    if (be > 0) return uintBitsToFloat((u & 0x807fffffu) | (uint(be) << 23));
    int sh = 1 - be;
    if (sh > 24) return uintBitsToFloat(sgn);
    uint m = (u & 0x7fffffu) | 0x800000u;
    uint q = m >> uint(sh), rem = m & ((1u << uint(sh)) - 1u), hf = 1u << uint(sh - 1);
    if (rem > hf || (rem == hf && (q & 1u) != 0u)) q += 1u;
    return uintBitsToFloat(sgn | q);
}

// ---- sin, cos, tan ----
// |x| >= 4096: r = frac(|x| 2/pi) pi/2 from the integer product of |x|'s significand with a
// 96-bit window of 2/pi (earlier bits only add multiples of 4 quadrants)
vec2 trig_payne_hanek(float a, out uint q) {
    uint u = floatBitsToUint(a);
    int e = int(u >> 23) - 150;              // a == m * 2^e, m a 24-bit integer
    uint m = (u & 0x7fffffu) | 0x800000u;
    int p0 = e + 30;                         // first bit of the window in the padded table
    int w = p0 >> 5;
    uint b = uint(p0 & 31), nb = 31u - b;
    uint t0 = TRIG_2OPI[w], t1 = TRIG_2OPI[w + 1], t2 = TRIG_2OPI[w + 2], t3 = TRIG_2OPI[w + 3];
    uint a0 = (t0 << b) | ((t1 >> 1u) >> nb);
    uint a1 = (t1 << b) | ((t2 >> 1u) >> nb);
    uint a2 = (t2 << b) | ((t3 >> 1u) >> nb);
    // P = m * (a0:a1:a2) = |x| 2/pi * 2^94 (mod 2^96): bits 95..94 the quadrant, 93..0 the fraction
    uint h0, l0, h1, l1, h2, l2, c;
    umulExtended(m, a2, h2, l2);
    umulExtended(m, a1, h1, l1);
    umulExtended(m, a0, h0, l0);
    uint p1 = uaddCarry(h2, l1, c);
    uint p2 = h1 + l0 + c;
    q = p2 >> 30;
    uint fh = (p2 << 2) | (p1 >> 30), fl = (p1 << 2) | (l2 >> 30);
    bool neg = (fh >> 31) != 0u;
    if (neg) {                               // fraction >= 1/2: round to the next quadrant
        q += 1u;
        fl = ~fl + 1u;
        fh = ~fh + (fl == 0u ? 1u : 0u);
    }
    int sh = 0;
    if (fh == 0u) { fh = fl; fl = 0u; sh = 32; }
    int lz = 31 - findMSB(fh);
    fh = (fh << uint(lz)) | ((fl >> 1u) >> uint(31 - lz));
    fl <<= uint(lz);
    sh += lz;
    // fraction = (fh:fl) 2^-(64 + sh) = (hi + lo) 2^-sh, hi exact
    float hi = float(fh & 0xffffff00u) * 2.3283064365386963e-10;
    float lo = (float(fh & 0xffu) + float(fl) * 2.3283064365386963e-10) * 2.3283064365386963e-10;
    vec2 p = trig_two_prod(hi, TRIG_PIO2_HI);
    vec2 r = trig_fast_two_sum(p.x, p.y + (hi * TRIG_PIO2_LO + lo * TRIG_PIO2_HI));
    r *= trig_pow2(-sh);
    return neg ? -r : r;
}
// |x| == k pi/2 + r, r = rh + rl, q = k mod 4, for finite a = |x| >= 2^-12
vec2 trig_reduce(float a, out uint q) {
    q = 0u;
    if (a <= 0.785398) return vec2(a, 0.0);
    if (a >= 4096.0) return trig_payne_hanek(a, q);
    // Cody-Waite: k < 2^12 and the first four parts of pi/2 have 12 bits, so k*part is exact;
    // a - k*part1 is exact too (Sterbenz for k = 1, common ulp for a >= 2)
    float k = roundEven(a * 0.6366197466850281);
    q = uint(k) & 3u;
    precise float t = a - k * 1.5703125;
    vec2 s1 = trig_two_sum(t, -(k * 4.837512969970703e-4));
    vec2 s2 = trig_two_sum(s1.x, -(k * 7.549533620476723e-08));
    vec2 s3 = trig_two_sum(s2.x, -(k * 2.5632829192545614e-12));
    precise float e = ((s1.y + s2.y) + s3.y) - k * 6.123234262925839e-17;
    return trig_fast_two_sum(s3.x, e);
}
// sin(rh + rl) as a normalized pair: sin(rh) + rl cos(rh)
vec2 trig_sin_dd(vec2 r) {
    float z = r.x * r.x;
    float p = ((2.7243277145316824e-06 * z - 1.9840034656226635e-04) * z
               + 8.333331905305386e-03) * z - 0.1666666716337204;
    return trig_fast_two_sum(r.x, r.x * z * p + r.y * (1.0 - 0.5 * z));
}
// cos(rh + rl) as a normalized pair: 1 - z/2 with z = rh^2 exact, + z^2 C(z) - rl rh
vec2 trig_cos_dd(vec2 r) {
    vec2 z = trig_two_prod(r.x, r.x);
    float p = (2.4542548999306746e-05 * z.x - 1.388827688060701e-03) * z.x + 4.16666641831398e-02;
    vec2 c = trig_fast_two_sum(1.0, -0.5 * z.x);
    return trig_fast_two_sum(c.x, c.y + ((z.x * z.x * p - 0.5 * z.y) - r.x * r.y));
}

float sin_f(float x) {
    if (isnan(x)) return x;
    if (isinf(x)) return F_NAN;
    float a = abs(x);
    if (a < 2.44140625e-4) return x;        // sin(x) rounds to x below 2^-12 (and keeps -0)
    uint q;
    vec2 r = trig_reduce(a, q);
    float v = (q & 1u) == 0u ? trig_sin_dd(r).x : trig_cos_dd(r).x;
    if ((q & 2u) != 0u) v = -v;
    return signbit_f(x) ? -v : v;
}
float cos_f(float x) {
    if (isnan(x)) return x;
    if (isinf(x)) return F_NAN;
    float a = abs(x);
    if (a < 2.44140625e-4) return 1.0;
    uint q;
    vec2 r = trig_reduce(a, q);
    float v = (q & 1u) == 0u ? trig_cos_dd(r).x : trig_sin_dd(r).x;
    return (((q + 1u) & 2u) != 0u) ? -v : v;
}
float tan_f(float x) {
    if (isnan(x)) return x;
    if (isinf(x)) return F_NAN;
    float a = abs(x);
    if (a < 2.44140625e-4) return x;
    uint q;
    vec2 r = trig_reduce(a, q);
    vec2 s = trig_sin_dd(r), c = trig_cos_dd(r);
    float v = (q & 1u) == 0u ? trig_div_dd(s, c).x : -trig_div_dd(c, s).x;
    return signbit_f(x) ? -v : v;
}

// ---- atan, atan2 ----
// atan(th + tl) for 0 <= th <= 1, as an unevaluated pair
vec2 trig_atan_dd(float th, float tl) {
    float ch = 0.0, cl = 0.0;
    if (th > 0.41421356) {
        // atan(t) = pi/4 + atan((t - 1)/(t + 1)), the quotient in [-tan(pi/8), 0]
        vec2 n = trig_two_sum(th, -1.0), d = trig_two_sum(th, 1.0);
        vec2 u = trig_div_dd(vec2(n.x, n.y + tl), vec2(d.x, d.y + tl));
        th = u.x; tl = u.y; ch = TRIG_PIO4_HI; cl = TRIG_PIO4_LO;
    }
    float z = th * th;
    float p = ((((0.050318531692028046 * z - 0.08618509024381638) * z + 0.11070563644170761) * z
                - 0.14284110069274902) * z + 0.19999976456165314) * z - 0.3333333432674408;
    vec2 s = trig_two_sum(ch, th);
    return vec2(s.x, (s.y + (th * z * p + tl * (1.0 - z))) + cl);
}
// c - (g.x + g.y) for the constant c = ch + cl, as a pair
vec2 trig_sub_dd(float ch, float cl, vec2 g) {
    vec2 s = trig_two_sum(ch, -g.x);
    return vec2(s.x, (s.y - g.y) + cl);
}

float atan_f(float x) {
    if (isnan(x)) return x;
    float a = abs(x);
    if (a < 2.44140625e-4) return x;
    if (a > 134217728.0) return copysign_f(TRIG_PIO2_HI, x);   // 2^27, inf included
    float v;
    if (a > 1.0) {
        vec2 t = trig_div_dd(vec2(1.0, 0.0), vec2(a, 0.0));
        vec2 g = trig_sub_dd(TRIG_PIO2_HI, TRIG_PIO2_LO, trig_atan_dd(t.x, t.y));
        v = g.x + g.y;
    } else {
        vec2 g = trig_atan_dd(a, 0.0);
        v = g.x + g.y;
    }
    return copysign_f(v, x);
}
float atan2_f(float y, float x) {
    if (isnan(x) || isnan(y)) return x + y;
    bool xneg = signbit_f(x);
    bool x0 = (floatBitsToUint(x) & 0x7fffffffu) == 0u, y0 = (floatBitsToUint(y) & 0x7fffffffu) == 0u;
    float v;
    if (y0) v = xneg ? TRIG_PI_HI : 0.0;
    else if (x0) v = TRIG_PIO2_HI;
    else if (isinf(y)) v = isinf(x) ? (xneg ? 2.356194490192345 : TRIG_PIO4_HI) : TRIG_PIO2_HI;
    else if (isinf(x)) v = xneg ? TRIG_PI_HI : 0.0;
    else {
        int ex, ey;
        float mx = trig_frexp(x, ex), my = trig_frexp(y, ey);
        int k = ey - ex;
        if (k < -30) {
            // |y/x| < 2^-29: atan rounds to the quotient itself, pi - it to pi
            v = xneg ? TRIG_PI_HI : trig_ldexp(trig_div_dd(vec2(my, 0.0), vec2(mx, 0.0)).x, k);
        } else if (k > 30) {
            v = TRIG_PIO2_HI;
        } else {
            float yy = my * trig_pow2(k);
            vec2 g;
            if (yy <= mx) {
                vec2 t = trig_div_dd(vec2(yy, 0.0), vec2(mx, 0.0));
                g = trig_atan_dd(t.x, t.y);
            } else {
                vec2 t = trig_div_dd(vec2(mx, 0.0), vec2(yy, 0.0));
                g = trig_sub_dd(TRIG_PIO2_HI, TRIG_PIO2_LO, trig_atan_dd(t.x, t.y));
            }
            if (xneg) g = trig_sub_dd(TRIG_PI_HI, TRIG_PI_LO, g);
            v = g.x + g.y;
        }
    }
    return copysign_f(v, y);
}

// ---- asin, acos ----
// asin(vh + vl) for |vh| <= 1/2, as a normalized pair
vec2 trig_asin_dd(float vh, float vl) {
    float z = vh * vh;
    float p = ((((0.033799655735492706 * z + 0.017081690952181816) * z + 0.03111531212925911) * z
                + 0.044598110020160675) * z + 0.07500098645687103) * z + 0.1666666567325592;
    return trig_fast_two_sum(vh, vh * z * p + vl * (1.0 + 0.5 * z));
}
// sqrt(w) as a pair for w = 0 or 2^-26 <= w <= 1: Vulkan's sqrt plus the exact residual's step
vec2 trig_sqrt_dd(float w) {
    float s = sqrt(w);
    if (s == 0.0) return vec2(0.0);
    vec2 p = trig_two_prod(s, s);
    precise float e = (w - p.x) - p.y;       // w - p.x is exact (Sterbenz)
    return vec2(s, e * 0.5 / s);
}
// asin(sqrt((1 - a)/2)) as a pair, for 1/2 < a <= 1 ((1 - a)/2 is exact)
vec2 trig_asin_half(float a) {
    vec2 s = trig_sqrt_dd((1.0 - a) * 0.5);
    return trig_asin_dd(s.x, s.y);
}

float asin_f(float x) {
    if (isnan(x)) return x;
    float a = abs(x);
    if (a > 1.0) return F_NAN;
    if (a < 2.44140625e-4) return x;
    float v;
    if (a <= 0.5) {
        v = trig_asin_dd(a, 0.0).x;
    } else {
        vec2 g = trig_asin_half(a);
        g = trig_sub_dd(TRIG_PIO2_HI, TRIG_PIO2_LO, 2.0 * g);
        v = g.x + g.y;
    }
    return copysign_f(v, x);
}
float acos_f(float x) {
    if (isnan(x)) return x;
    float a = abs(x);
    if (a > 1.0) return F_NAN;
    if (a <= 0.5) {
        vec2 g = trig_sub_dd(TRIG_PIO2_HI, TRIG_PIO2_LO, trig_asin_dd(x, 0.0));
        return g.x + g.y;
    }
    vec2 g = trig_asin_half(a);
    if (x > 0.0) return 2.0 * g.x;
    g = trig_sub_dd(TRIG_PI_HI, TRIG_PI_LO, 2.0 * g);
    return g.x + g.y;
}

// ---- hypot, sqrt ----
float hypot_f(float x, float y) {
    if (isinf(x) || isinf(y)) return F_INF;
    if (isnan(x) || isnan(y)) return F_NAN;
    // compare magnitudes as bits: subnormal operands count even where the device flushes them
    uint ux = floatBitsToUint(x) & 0x7fffffffu, uy = floatBitsToUint(y) & 0x7fffffffu;
    uint um = max(ux, uy), un = min(ux, uy);
    if (un == 0u) return uintBitsToFloat(um);
    int em, en;
    float m = trig_frexp(uintBitsToFloat(um), em), n = trig_frexp(uintBitsToFloat(un), en);
    if (em - en > 26) return uintBitsToFloat(um);   // n^2/(2m) is below a quarter ulp of m
    n *= trig_pow2(en - em);
    vec2 pm = trig_two_prod(m, m), pn = trig_two_prod(n, n);
    vec2 s = trig_fast_two_sum(pm.x, pn.x);
    float sl = s.y + (pm.y + pn.y);
    float r = sqrt(s.x);
    vec2 rr = trig_two_prod(r, r);
    precise float e = ((s.x - rr.x) - rr.y) + sl;
    return trig_ldexp(r + e * 0.5 / r, em);
}
// sqrt with one Newton step on the exact residual: Vulkan's sqrt is only "inherited from
// 1/inversesqrt"; the significand is taken from the bits so subnormal x work on every device
float sqrt_f(float x) {
    uint u = floatBitsToUint(x);
    if ((u & 0x7fffffffu) == 0u || isnan(x)) return x;
    if ((u >> 31) != 0u) return F_NAN;
    if (isinf(x)) return x;
    int e;
    float m = trig_frexp(x, e);
    if ((e & 1) != 0) { m *= 2.0; e -= 1; }   // x == m 2^e, m in [1, 4), e even
    float r = sqrt(m);
    vec2 rr = trig_two_prod(r, r);
    precise float d = (m - rr.x) - rr.y;
    r += d * 0.5 / r;
    // the step's own rounding can miss near a midpoint: compare m with the squared midpoints
    // (r +- up/2)^2 exactly; m - r^2 is a multiple of up^2 that fits a float, up = ulp(r)
    rr = trig_two_prod(r, r);
    precise float d1 = (m - rr.x) - rr.y;
    float up = uintBitsToFloat((floatBitsToUint(r) & 0x7f800000u) - (23u << 23));
    float ud = (floatBitsToUint(r) & 0x7fffffu) == 0u ? 0.5 * up : up;   // step below a power of 2
    if (d1 > r * up) r += up;
    else if (d1 <= -r * ud) r -= ud;
    return r * trig_pow2(e / 2);
}
