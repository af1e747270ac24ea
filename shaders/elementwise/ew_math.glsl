// The elementwise ops of one input dtype as functions of a run-time op code: un, bin, pred1,
// pred2. elementwise.comp passes its specialization constant (the driver folds the switch);
// fused.comp passes codes from push constants. Needs TC, IN_KIND, IN_BITS, IS_F64, IS_F16.
#define IS_FLOAT (IN_KIND == K_F)
#define IS_F32 (IN_KIND == K_F && !IS_F64)

#if IS_FLOAT
#include "../math_f64.glsl"
#endif

#if IS_F32
float copysign_(float x, float y) {
    return uintBitsToFloat((floatBitsToUint(x) & 0x7fffffffu) | (floatBitsToUint(y) & 0x80000000u));
}
bool signbit_(float x) { return (floatBitsToUint(x) >> 31) != 0u; }
float expm1_(float x) {
    // Kahan's trick: exact near zero without a series
    float u = exp(x);
    if (u == 1.0) return x;
    float um1 = u - 1.0;
    if (um1 == -1.0) return -1.0;
    if (isinf(u)) return u;
    return um1 * x / log(u);
}
float log1p_(float x) {
    float u = 1.0 + x;
    if (u == 1.0) return x;
    if (isinf(u)) return log(u);
    return log(u) * x / (u - 1.0);
}
float pow_(float x, float y) {
    if (y == 0.0 || x == 1.0) return 1.0;
    if (isnan(x) || isnan(y)) return x + y;
    float ay = abs(y);
    bool yint = trunc(y) == y;
    bool yodd = yint && ay < 16777216.0 && mod(ay, 2.0) == 1.0;
    if (isinf(y)) {
        float ax = abs(x);
        if (ax == 1.0) return 1.0;
        return (ax > 1.0) == (y > 0.0) ? y * y : 0.0;
    }
    if (x == 0.0) {
        float r = y > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u);
        return yodd ? copysign_(r, x) : r;
    }
    if (x < 0.0) {
        if (!yint) return uintBitsToFloat(0x7fc00000u);
        float r = pow(-x, y);
        return yodd ? -r : r;
    }
    return pow(x, y);
}
// Cephes atanf: the GLSL atan of some drivers (lavapipe) is only good to 1e-4
float atan_(float x) {
    float a = abs(x), y = 0.0;
    if (a > 2.414213562373095) { y = 1.5707963267948966; a = -1.0 / a; }
    else if (a > 0.4142135623730950) { y = 0.7853981633974483; a = (a - 1.0) / (a + 1.0); }
    float z = a * a;
    y += (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z
          - 3.33329491539e-1) * z * a + a;
    return isnan(x) ? x : copysign_(y, x);
}
float atan2_(float y, float x) {
    if (isnan(x) || isnan(y)) return x + y;
    if (x == 0.0 && y == 0.0) return signbit_(x) ? copysign_(3.14159265358979, y) : y;
    if (isinf(x) && isinf(y)) return copysign_(x > 0.0 ? 0.78539816339745 : 2.35619449019234, y);
    if (x == 0.0 || isinf(y)) return copysign_(1.5707963267948966, y);
    float r = atan_(y / x);
    if (x < 0.0) r += signbit_(y) ? -3.14159265358979 : 3.14159265358979;
    return r;
}
float logaddexp_(float a, float b) {
    if (a == b) return a + 0.69314718055994531;
    float m = max(a, b);
    if (isnan(a) || isnan(b)) return a + b;
    return m + log1p_(exp(-abs(a - b)));
}
float nextafter_(float x, float y) {
    if (isnan(x) || isnan(y)) return x + y;
    if (x == y) return y;
    if (x == 0.0) return copysign_(uintBitsToFloat(1u), y);
    uint u = floatBitsToUint(x);
    u = ((y > x) == (x > 0.0)) ? u + 1u : u - 1u;
    return uintBitsToFloat(u);
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
TC hypot_(TC a, TC b) {
    a = abs(a); b = abs(b);
    if (isinf(a) || isinf(b)) return a + b + TC(1.0 / 0.0);
    TC m = max(a, b), n = min(a, b);
    if (m == TC(0)) return m;
    TC r = n / m;
    return m * sqrt(TC(1) + r * r);
}
#endif

TC un(int op, TC x) {
    switch (op) {
#if IN_KIND == K_I
    case OP_ABS: return x < 0 ? -x : x;
    case OP_SIGN: return TC(x > 0) - TC(x < 0);
#elif IN_KIND == K_U
    case OP_ABS: return x;
    case OP_SIGN: return TC(x > 0u);
#elif IS_FLOAT
    case OP_ABS: return abs(x);
    case OP_SIGN: return x > TC(0) ? TC(1) : (x < TC(0) ? TC(-1) : (isnan(x) ? x : TC(0)));
    case OP_CEIL: return ceil(x);
    case OP_FLOOR: return floor(x);
    case OP_TRUNC: return trunc(x);
    case OP_ROUND: return roundEven(x);
    case OP_SQRT: return sqrt(x);
    case OP_RECIPROCAL: return TC(1) / x;
#endif
#if IS_F32
    // via atan: the GLSL acos/asin of some drivers (lavapipe) are only good to 1e-4
    case OP_ACOS: return abs(x) > 1.0 ? uintBitsToFloat(0x7fc00000u) : 2.0 * atan2_(sqrt(1.0 - x), sqrt(1.0 + x));
    case OP_ACOSH: return acosh(x);
    case OP_ASIN: return abs(x) > 1.0 ? uintBitsToFloat(0x7fc00000u) : atan2_(x, sqrt((1.0 - x) * (1.0 + x)));
    case OP_ASINH: return x < 0.0 ? -asinh(-x) : asinh(x);
    case OP_ATAN: return atan_(x);
    case OP_ATANH: return atanh(x);
    // through the float64 library: drivers' float sin/cos/tan are approximations with an
    // absolute error (NVIDIA: 1e-5 relative for tan near its zeros) and no reduction of large x
    case OP_COS: return float(cos_d(double(x)));
    case OP_COSH: return cosh(x);
    case OP_SIN: return float(sin_d(double(x)));
    case OP_SINH: return abs(x) < 1e-4 ? x : sinh(x);
    case OP_TAN: return float(tan_d(double(x)));
    case OP_TANH: return abs(x) > 20.0 ? sign(x) : (abs(x) < 1e-4 ? x : tanh(x));
    case OP_EXP: return exp(x);
    case OP_EXPM1: return expm1_(x);
    case OP_LOG: return log(x);
    case OP_LOG1P: return log1p_(x);
    case OP_LOG2: return log2(x);
    case OP_LOG10: return log(x) * 0.43429448190325176;
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
#if IN_KIND != K_B
    case OP_NEGATIVE: return -x;
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
    case OP_DIVIDE: return x / y;
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
#if IS_F16
    // float16 computes in float32, where a float16 step is not one ulp
#else
    case OP_NEXTAFTER: return nextafter_(x, y);
#endif
#endif
#if IS_F32
    case OP_POW: return pow_(x, y);
    case OP_ATAN2: return atan2_(x, y);
    case OP_LOGADDEXP: return logaddexp_(x, y);
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

