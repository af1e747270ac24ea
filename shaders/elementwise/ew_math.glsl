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
    if (x == y) return y;
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
    case OP_FLOOR_DIVIDE: {
        if (y == TC(0)) return x / y;
        // a finite x over an infinite y is a signed zero (the standard), not Python's -1
        if (isinf(y) && !isinf(x) && !isnan(x)) return x / y;
        TC q = floor(x / y);
        // floor(x / y) may round across an integer; the remainder tells
        TC r = x - q * y;
        if (r != TC(0) && ((r < TC(0)) != (y < TC(0)))) q -= TC(1);
        return q;
    }
    case OP_REMAINDER: {
        if (y == TC(0) || isinf(x) || isnan(y)) return TC(0) / TC(0) + x;
        if (isinf(y)) return (x == TC(0) || (x < TC(0)) == (y < TC(0))) ? x : y;
#if IS_F64
        TC r = x - y * floor(x / y);
#else
        // in double: q*y of two floats is exact there (the float32 variant needs shaderFloat64)
        TC r = TC(double(x) - double(y) * floor(double(x) / double(y)));
#endif
        if (r != TC(0) && ((r < TC(0)) != (y < TC(0)))) r += y;
        if (abs(r) >= abs(y)) r -= y;
        return r == TC(0) ? copysign_(TC(0), y) : r;
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

