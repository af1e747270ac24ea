// The elementwise ops of one input dtype as functions of a run-time op code: un, bin, pred1,
// pred2. elementwise.comp passes its specialization constant (the driver folds the switch);
// fused.comp passes codes from push constants. Needs TC, IN_KIND, IN_BITS, IS_F64, IS_F16.
#define IS_FLOAT (IN_KIND == K_F)
#define IS_F32 (IN_KIND == K_F && !IS_F64)

#if IS_F64
#include "../math_f64.glsl"
#endif

#if IS_F32
#include "../math_f32.glsl"
float copysign_(float x, float y) { return copysign_f(x, y); }
bool signbit_(float x) { return signbit_f(x); }
float nextafter_(float x, float y) {
    if (isnan(x) || isnan(y)) return x + y;
    if (x == y) return y;
    if (x == 0.0) return copysign_(uintBitsToFloat(1u), y);
    uint u = floatBitsToUint(x);
    u = ((y > x) == (x > 0.0)) ? u + 1u : u - 1u;
    return uintBitsToFloat(u);
}
// v 2^(e - 150) with sign bit s, as float32 bits (v < 2^24; below the normal range the result
// is built subnormal, exact where the shift drops no bits): no float arithmetic, which a device
// without DenormPreserve (NVIDIA) would flush
float pack_f(uint v, int e, uint s) {
    if (v == 0u) return uintBitsToFloat(s);
    int p = findMSB(v);
    int be = e + p - 23;                     // biased exponent if normal
    uint bits = be >= 1 ? (uint(be) << 23) | ((v << uint(23 - p)) & 0x7fffffu)
                        : (e >= 1 ? v << uint(e - 1) : v >> uint(1 - e));
    return uintBitsToFloat(s | bits);
}
// x 2^k from the bits (subnormal inputs and results included)
float scale_bits_f(float x, int k) {
    uint u = floatBitsToUint(x), a = u & 0x7fffffffu;
    int e = int(a >> 23);
    uint m = e == 0 ? a : (a & 0x7fffffu) | 0x800000u;
    return pack_f(m, max(e, 1) + k, u & 0x80000000u);
}
// fmod(x, y) exactly (its magnitude |x| mod |y|, x's sign), as C and NumPy compute it, for
// finite x and finite nonzero y: integer long division of the significands, read from the bits
// (subnormals included, also on a device whose float arithmetic flushes them). A float quotient
// cannot do it: floor(x / y) rounds once |x / y| passes 2^24 (2^53 in double), and y * q is
// not exact, so x - y * floor(x / y) was off by up to |y| (remainder(7.8e37, 4e21) came out
// -9.4e21, negative and larger than the divisor).
float fmod_f(float x, float y) {
    uint ux = floatBitsToUint(x), ax = ux & 0x7fffffffu, ay = floatBitsToUint(y) & 0x7fffffffu;
    if (ax < ay) return x;
    int ex = int(ax >> 23), ey = int(ay >> 23);
    // x = mx 2^(ex - 150), y = my 2^(ey - 150) (a subnormal's exponent field read as 1)
    uint mx = ex == 0 ? ax : (ax & 0x7fffffu) | 0x800000u;
    uint my = ey == 0 ? ay : (ay & 0x7fffffu) | 0x800000u;
    ex = max(ex, 1);
    ey = max(ey, 1);
    uint r = mx % my;
    for (int d = ex - ey; d > 0; d -= 8) {   // r < my < 2^24: eight bits a step fit in 32
        int s = min(d, 8);
        r = (r << uint(s)) % my;
    }
    return pack_f(r, ey, ux & 0x80000000u);   // r 2^(ey - 150) < |y|: exact in float32
}
// The float arithmetic after the fmod, NumPy's (x - m) / y and m + y, with a divisor below
// 2^-62 first scaled by 2^64 with its operands (from the bits): there a subnormal m, x or y
// would read as 0 on a flushing device. Scaled, every nonzero operand is normal, and the
// differences and sums, multiples of 2^-149 that NumPy either gets exactly (as subnormals)
// or rounds to 24 bits, come out the same; a huge x (past 2^63) is not scaled: there
// x - m rounds to x either way (|m| < |y| is below half its ulp).
bool tiny_divisor_f(float x, float y) {
    return (floatBitsToUint(y) & 0x7fffffffu) < (65u << 23)
        && (floatBitsToUint(x) & 0x7fffffffu) < (190u << 23);
}
float divmod_q_(float x, float m, float y) {
    if (!tiny_divisor_f(x, y)) return div_f(x - m, y);
    return div_f(scale_bits_f(x, 64) - scale_bits_f(m, 64), scale_bits_f(y, 64));
}
float divmod_r_(float m, float y) {
    if (!tiny_divisor_f(m, y)) return m + y;
    return scale_bits_f(scale_bits_f(m, 64) + scale_bits_f(y, 64), -64);
}
float fdiv_(float x, float y) { return div_f(x, y); }
bool zero_(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0u; }
#endif

#if IS_F16
// float16 computes in float32, where a float16 step is not one float32 ulp: step the float16 bit
// pattern, built from the float32 bits by hand (x is a float16 value, so every step is exact;
// no packHalf2x16, whose handling of float16 subnormals is the driver's choice)
uint h16_bits(float x) {
    uint u = floatBitsToUint(x);
    uint s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a == 0u) return s;
    if (a >= 0x7f800000u) return s | 0x7c00u;
    int e = int(a >> 23) - 127;
    if (e >= -14) return s | (uint(e + 15) << 10) | ((a & 0x7fffffu) >> 13);
    return s | (((a & 0x7fffffu) | 0x800000u) >> uint(-1 - e));   // subnormal: k * 2^-24
}
float h16_value(uint h) {
    uint s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 31u) return uintBitsToFloat(s | 0x7f800000u);
    if (e == 0u) {   // k * 2^-24: a normal float32, built from bits (no rounding, no flush)
        if (m == 0u) return uintBitsToFloat(s);
        int p = findMSB(m);                    // m = 2^p * 1.f
        return uintBitsToFloat(s | (uint(p - 24 + 127) << 23) | ((m << (23 - p)) & 0x7fffffu));
    }
    return uintBitsToFloat(s | ((e - 15u + 127u) << 23) | (m << 13));
}
float nextafter_h(float x, float y) {
    if (isnan(x) || isnan(y)) return x + y;
    if (x == y) return y;   // C99's (and NumPy's for float32/64): y, so (-0, +0) is +0
    if (x == 0.0) return copysign_(h16_value(1u), y);
    uint h = h16_bits(x);
    h = ((y > x) == (x > 0.0)) ? h + 1u : h - 1u;
    return h16_value(h);
}
#endif

#if IS_F64
double copysign_(double x, double y) {
    uvec2 a = unpackDouble2x32(x), b = unpackDouble2x32(y);
    a.y = (a.y & 0x7fffffffu) | (b.y & 0x80000000u);
    return packDouble2x32(a);
}
bool signbit_(double x) { return (unpackDouble2x32(x).y >> 31) != 0u; }
double nextafter_(double x, double y) {
    if (isnan(x) || isnan(y)) return x + y;
    if (x == y) return y;
    if (x == 0.0) return copysign_(packDouble2x32(uvec2(1u, 0u)), y);
    uint64_t u = doubleBitsToUint64(x);
    u = ((y > x) == (x > 0.0)) ? u + 1ul : u - 1ul;
    return uint64BitsToDouble(u);
}
// fmod(x, y) exactly, for finite x and finite nonzero y (see fmod_f): r < my < 2^53, eleven
// bits a step fit in 64
double fmod_d(double x, double y) {
    uint64_t ux = doubleBitsToUint64(x), ax = ux & 0x7fffffffffffffffUL;
    uint64_t ay = doubleBitsToUint64(y) & 0x7fffffffffffffffUL;
    if (ax < ay) return x;
    int ex = int(ax >> 52), ey = int(ay >> 52);
    uint64_t mx = ex == 0 ? ax : (ax & 0xfffffffffffffUL) | 0x10000000000000UL;
    uint64_t my = ey == 0 ? ay : (ay & 0xfffffffffffffUL) | 0x10000000000000UL;
    ex = max(ex, 1);
    ey = max(ey, 1);
    uint64_t r = mx % my;
    for (int d = ex - ey; d > 0; d -= 11) {
        int s = min(d, 11);
        r = (r << uint64_t(s)) % my;
    }
    uint64_t sg = ux & 0x8000000000000000UL;
    if (r == 0UL) return uint64BitsToDouble(sg);
    uvec2 w = unpackUint2x32(r);
    int p = w.y != 0u ? 32 + findMSB(w.y) : findMSB(w.x);
    int be = ey + p - 52;
    uint64_t bits = be >= 1 ? (uint64_t(be) << 52) | ((r << uint64_t(52 - p)) & 0xfffffffffffffUL)
                            : r << uint64_t(ey - 1);
    return uint64BitsToDouble(sg | bits);
}
double fmod_f(double x, double y) { return fmod_d(x, y); }
double fdiv_(double x, double y) { return x / y; }
double divmod_q_(double x, double m, double y) { return (x - m) / y; }
double divmod_r_(double m, double y) { return m + y; }
bool zero_(double x) { return (doubleBitsToUint64(x) & 0x7fffffffffffffffUL) == 0UL; }
#endif

#if IS_F64
double hypot_(double a, double b) { return hypot_d(a, b); }
#elif IS_FLOAT
float hypot_(float a, float b) { return hypot_f(a, b); }
#endif

TC un(int op, TC x) {
    switch (op) {
#if IN_KIND == K_I
    case OP_ABS: return x < 0 ? -x : x;
    case OP_SIGN: return TC(x > 0) - TC(x < 0);
#elif IN_KIND == K_U
    case OP_ABS: return x;
    case OP_SIGN: return TC(x > 0u);
#elif IS_F32
    case OP_ABS: return abs_f(x);   // from the bits: subnormals survive where arithmetic flushes
#endif
#if IS_FLOAT
#if IS_F64
    case OP_ABS: return abs(x);
#endif
    case OP_SIGN: return x > TC(0) ? TC(1) : (x < TC(0) ? TC(-1) : (isnan(x) ? x : TC(0)));
    case OP_CEIL: return ceil(x);
    case OP_FLOOR: return floor(x);
    case OP_TRUNC: return trunc(x);
    case OP_ROUND: return roundEven(x);
#if IS_F32
    case OP_SQRT: return sqrt_f(x);  // Vulkan's sqrt is not correctly rounded
#else
    case OP_SQRT: return sqrt(x);
#endif
#if IS_F32
    case OP_RECIPROCAL: return recip_f(x);  // Vulkan's division is 2.5 ulp; NVIDIA flushes subnormals
#else
    case OP_RECIPROCAL: return TC(1) / x;
#endif
#endif
#if IS_F32
    // shaders/math_f32.glsl
    case OP_ACOS: return acos_f(x);
    case OP_ACOSH: return acosh_f(x);
    case OP_ASIN: return asin_f(x);
    case OP_ASINH: return asinh_f(x);
    case OP_ATAN: return atan_f(x);
    case OP_ATANH: return atanh_f(x);
    case OP_COS: return cos_f(x);
    case OP_COSH: return cosh_f(x);
    case OP_SIN: return sin_f(x);
    case OP_SINH: return sinh_f(x);
    case OP_TAN: return tan_f(x);
    case OP_TANH: return tanh_f(x);
    case OP_EXP: return exp_f(x);
    case OP_EXPM1: return expm1_f(x);
    case OP_LOG: return log_f(x);
    case OP_LOG1P: return log1p_f(x);
    case OP_LOG2: return log2_f(x);
    case OP_LOG10: return log10_f(x);
#endif
#if IS_F64
    case OP_ACOS: return acos_d(x);
    case OP_ACOSH: return acosh_d(x);
    case OP_ASIN: return asin_d(x);
    case OP_ASINH: return asinh_d(x);
    case OP_ATAN: return atan_d(x);
    case OP_ATANH: return atanh_d(x);
    case OP_COS: return cos_d(x);
    case OP_COSH: return cosh_d(x);
    case OP_SIN: return sin_d(x);
    case OP_SINH: return sinh_d(x);
    case OP_TAN: return tan_d(x);
    case OP_TANH: return tanh_d(x);
    case OP_EXP: return exp_d(x);
    case OP_EXPM1: return expm1_d(x);
    case OP_LOG: return log_d(x);
    case OP_LOG1P: return log1p_d(x);
    case OP_LOG2: return log2_d(x);
    case OP_LOG10: return log10_d(x);
#endif
#if IN_KIND == K_B
    case OP_BITWISE_INVERT: return TC(x == 0u);
    case OP_LOGICAL_NOT: return TC(x == 0u);
#elif !IS_FLOAT
    case OP_BITWISE_INVERT: return ~x;
#endif
#if IS_F32
    case OP_NEGATIVE: return neg_f(x);
#elif IN_KIND != K_B
    case OP_NEGATIVE: return -x;
#endif
#if IN_KIND != K_B
    case OP_SQUARE: return x * x;
    case OP_IMAG: return TC(0);
#endif
    default: return x;  // positive, conj, real, and integer ceil/floor/trunc/round
    }
}

bool pred1(int op, TC x) {
    switch (op) {
#if IS_FLOAT
    case OP_ISFINITE: return !isinf(x) && !isnan(x);
    case OP_ISINF: return isinf(x);
    case OP_ISNAN: return isnan(x);
    case OP_SIGNBIT: return signbit_(x);
#else
    case OP_ISFINITE: return true;
#endif
    default: return false;
    }
}

TC bin(int op, TC x, TC y) {
    switch (op) {
#if IN_KIND != K_B
    case OP_ADD: return x + y;
    case OP_SUBTRACT: return x - y;
    case OP_MULTIPLY: return x * y;
    case OP_MAXIMUM:
#if IS_FLOAT
        if (isnan(x) || isnan(y)) return x + y;
#endif
        return x >= y ? x : y;
    case OP_MINIMUM:
#if IS_FLOAT
        if (isnan(x) || isnan(y)) return x + y;
#endif
        return x <= y ? x : y;
#endif
#if IS_FLOAT
#if IS_F32
    case OP_DIVIDE: return div_f(x, y);  // correctly rounded, subnormals read from the bits
#else
    case OP_DIVIDE: return x / y;
#endif
    // floor_divide and remainder as NumPy's divmod computes them (npy_divmod), from the
    // exact fmod: the remainder is fmod, moved by y when its sign differs from y's (a zero
    // takes y's sign); the quotient (x - fmod) / y, less one then, rounded to an integer.
    // Non-finite operands and a zero divisor: x / y for floor_divide (the standard's
    // special cases, as the CPU backend), NaN for remainder unless x is finite and y infinite.
    case OP_FLOOR_DIVIDE: {
        if (zero_(y) || isinf(x) || isnan(x) || isinf(y) || isnan(y)) return fdiv_(x, y);
        TC m = fmod_f(x, y);
        TC q = divmod_q_(x, m, y);
        if (!zero_(m) && signbit_(m) != signbit_(y)) q -= TC(1);
        if (zero_(q)) return copysign_(TC(0), fdiv_(x, y));
        TC f = floor(q);
        return q - f > TC(0.5) ? f + TC(1) : f;
    }
    case OP_REMAINDER: {
        if (zero_(y) || isinf(x) || isnan(x) || isnan(y)) return TC(0) / TC(0) + x + y;
        TC m = isinf(y) ? x : fmod_f(x, y);
        if (zero_(m)) return copysign_(TC(0), y);
        return signbit_(m) != signbit_(y) ? divmod_r_(m, y) : m;
    }
    case OP_COPYSIGN: return copysign_(x, y);
    case OP_HYPOT: return hypot_(x, y);
    // x where y > 0, else 0 (ReLU's gradient g from its output y; a NaN y gives 0, a NaN g
    // passes where y > 0): relu_backward in one pass, not a comparison and a choice
    case OP_RELU_GRAD: return y > TC(0) ? x : TC(0);
#if IS_F16
    case OP_NEXTAFTER: return nextafter_h(x, y);
#else
    case OP_NEXTAFTER: return nextafter_(x, y);
#endif
#endif
#if IS_F32
    case OP_POW: return pow_f(x, y);
    case OP_ATAN2: return atan2_f(x, y);
    case OP_LOGADDEXP: return logaddexp_f(x, y);
#endif
#if IS_F64
    case OP_POW: return pow_d(x, y);
    case OP_ATAN2: return atan2_d(x, y);
    case OP_LOGADDEXP: return logaddexp_d(x, y);
#endif
#if IN_KIND == K_I || IN_KIND == K_U
    case OP_FLOOR_DIVIDE: {
        if (y == TC(0)) return TC(0);
        TC q = x / y;
#if IN_KIND == K_I
        if (x - q * y != TC(0) && ((x < TC(0)) != (y < TC(0)))) q -= TC(1);
#endif
        return q;
    }
    case OP_REMAINDER: {
        if (y == TC(0)) return TC(0);
        TC r = x - (x / y) * y;
#if IN_KIND == K_I
        if (r != TC(0) && ((r < TC(0)) != (y < TC(0)))) r += y;
#endif
        return r;
    }
    case OP_POW: {
#if IN_KIND == K_I
        if (y < TC(0)) {
            if (x == TC(1)) return TC(1);
            if (x == TC(-1)) return (y & TC(1)) == TC(0) ? TC(1) : TC(-1);
            return TC(0);
        }
#endif
        TC r = TC(1), base = x, e = y;
        while (e > TC(0)) {
            if ((e & TC(1)) != TC(0)) r *= base;
            base *= base;
            e >>= TC(1);
        }
        return r;
    }
    case OP_BITWISE_LEFT_SHIFT:
        return (y < TC(0) || y >= TC(IN_BITS)) ? TC(0) : x << y;
    case OP_BITWISE_RIGHT_SHIFT:
#if IN_KIND == K_I
        if (y < TC(0) || y >= TC(IN_BITS)) return x < TC(0) ? TC(-1) : TC(0);
#else
        if (y >= TC(IN_BITS)) return TC(0);
#endif
        return x >> y;
#endif
#if !IS_FLOAT
    case OP_BITWISE_AND: return x & y;
    case OP_BITWISE_OR: return x | y;
    case OP_BITWISE_XOR: return x ^ y;
#endif
#if IN_KIND == K_B
    case OP_LOGICAL_AND: return TC(x != 0u && y != 0u);
    case OP_LOGICAL_OR: return TC(x != 0u || y != 0u);
    case OP_LOGICAL_XOR: return TC((x != 0u) != (y != 0u));
#endif
    default: return x;
    }
}

bool pred2(int op, TC x, TC y) {
    switch (op) {
    case OP_EQUAL: return x == y;
    case OP_NOT_EQUAL: return !(x == y);
    case OP_LESS: return x < y;
    case OP_LESS_EQUAL: return x <= y;
    case OP_GREATER: return x > y;
    case OP_GREATER_EQUAL: return x >= y;
    default: return false;
    }
}

