#version 450
// Every elementwise op of grilly for complex64 (IS_F64=0, storage vec2) and complex128
// (IS_F64=1, storage dvec2). OUT_KIND: 0 complex result, 1 real (abs, real, imag), 2 bool.
// Both dtypes compute in double arithmetic (exact products of float parts, no intermediate
// overflow for complex64); only the scalar transcendentals t_* differ: float32 builtins for
// complex64, shaders/math_f64.glsl for complex128. Special values follow C99 Annex G as NumPy
// (glibc) and the CPU backend (grilly/backends/cpu_numba/scalar_ops.py) do.
#include "../common.glsl"
#include "ops.glsl"
#include "../math_f64.glsl"
#if IS_F64
#define CS dvec2
#define RS double
#else
#define CS vec2
#define RS float
#endif

#ifdef OP_FIXED
// one op's variant (grilly/backends/vulkan/variants.py): the switches fold and the other ops'
// code is gone, so a driver compiles a small module (the specialized one is 1.5 MB of SPIR-V:
// seconds to compile per op on lavapipe)
const int OP = OP_FIXED;
#else
layout(constant_id = 0) const int OP = 0;
#endif

#if OUT_KIND == 0
#define OUT_TS CS
#elif OUT_KIND == 1
#define OUT_TS RS
#else
#define OUT_TS uint8_t
#endif

layout(set = 0, binding = 0) writeonly buffer O { OUT_TS o[]; };
layout(set = 0, binding = 1) readonly buffer A { CS a[]; };
layout(set = 0, binding = 2) readonly buffer B { CS b[]; };
layout(set = 0, binding = 3) readonly buffer C { uint8_t c[]; };

#define D double
#define Z dvec2
#define INF packDouble2x32(uvec2(0u, 0x7ff00000u))
#define NAN packDouble2x32(uvec2(0u, 0x7ff80000u))
const D PI = 3.14159265358979323846LF;
const D LN2 = 0.69314718055994530942LF;
const D LARGE = 4.49423283715578976e307LF;   // DBL_MAX / 4: beyond, sums of squares overflow
const D SQRT_LARGE = 6.703903964971298e153LF;
const D SQRT_MIN = 1.4916681462400413e-154LF;

D zcopysign(D x, D y) {
    uvec2 u = unpackDouble2x32(x), v = unpackDouble2x32(y);
    u.y = (u.y & 0x7fffffffu) | (v.y & 0x80000000u);
    return packDouble2x32(u);
}
bool zsignbit(D x) { return (unpackDouble2x32(x).y >> 31) != 0u; }
D zhypot(D x, D y) {
    x = abs(x); y = abs(y);
    if (isinf(x) || isinf(y)) return INF;
    if (isnan(x) || isnan(y)) return x + y;
    D m = max(x, y), n = min(x, y);
    if (m == 0.0LF) return m;
    D r = n / m;
    return m * sqrt(1.0LF + r * r);
}

// both dtypes compute in double through shaders/math_f64.glsl: the float32 builtins of some
// drivers are approximations (NVIDIA: absolute, not relative, error near 0; sin(inf) = 0)
D t_exp(D x) { return exp_d(x); }
D t_expm1(D x) { return expm1_d(x); }
D t_log(D x) { return log_d(x); }
D t_log1p(D x) { return log1p_d(x); }
D t_sin(D x) { return sin_d(x); }
D t_cos(D x) { return cos_d(x); }
D t_tan(D x) { return tan_d(x); }
D t_sinh(D x) { return sinh_d(x); }
D t_cosh(D x) { return cosh_d(x); }
D t_atan2(D y, D x) { return atan2_d(y, x); }
D t_asinh(D x) { return asinh_d(x); }


// ---- complex functions ------------------------------------------------------------------
Z cmul(Z p, Z q) { return Z(p.x * q.x - p.y * q.y, p.x * q.y + p.y * q.x); }

Z crecip(Z q) {
    // cdiv(1, q) spelled out: with a constant numerator the compiler folds 0 / x to 0
    D qr = abs(q.x), qi = abs(q.y);
    if (qr >= qi) {
        if (qr == 0.0LF && qi == 0.0LF) return Z(1.0LF / qr, NAN);
        D rat = q.y / q.x, scl = 1.0LF / (q.x + q.y * rat);
        return Z(scl, (rat == 0.0LF ? 0.0LF : -rat) * scl);  // NumPy's 0 - rat: never -0
    }
    D rat = q.x / q.y, scl = 1.0LF / (q.y + q.x * rat);
    return Z((rat == 0.0LF ? 0.0LF : rat) * scl, -scl);   // NumPy's rat + 0
}

Z cdiv(Z p, Z q) {
    // NumPy's Smith division (its zero-divisor rule included): no overflow of |q|^2
    D qr = abs(q.x), qi = abs(q.y);
    if (qr >= qi) {
        if (qr == 0.0LF && qi == 0.0LF) return Z(p.x / qr, p.y / qr);
        D rat = q.y / q.x, scl = 1.0LF / (q.x + q.y * rat);
        return Z((p.x + p.y * rat) * scl, (p.y - p.x * rat) * scl);
    }
    D rat = q.x / q.y, scl = 1.0LF / (q.y + q.x * rat);
    return Z((p.x * rat + p.y) * scl, (p.y * rat - p.x) * scl);
}

Z cexp(Z z) {
    D x = z.x, y = z.y;
    if (isnan(x)) return Z(x, y == 0.0LF ? y : NAN);
    if (isinf(x)) {
        if (isinf(y) || isnan(y)) return x > 0.0LF ? Z(x, NAN) : Z(0.0LF, isinf(y) ? zcopysign(0.0LF, y) : 0.0LF);
        if (y == 0.0LF) return Z(x > 0.0LF ? x : 0.0LF, y);
        D m = x > 0.0LF ? INF : 0.0LF;
        return Z(m * t_cos(y), m * t_sin(y));
    }
    if (isinf(y) || isnan(y)) return Z(NAN, NAN);
    if (y == 0.0LF) return Z(t_exp(x), y);
    if (x > 80.0LF) {  // exp(x) may overflow where exp(x) * cos(y) does not
        D h = t_exp(0.5LF * x);
        return Z(h * t_cos(y) * h, h * t_sin(y) * h);
    }
    D e = t_exp(x);
    return Z(e * t_cos(y), e * t_sin(y));
}

Z cexpm1(Z z) {
    D x = z.x, y = z.y;
    if (!isinf(x) && !isnan(x) && !isinf(y) && !isnan(y) && x < 80.0LF) {
        if (y == 0.0LF) return Z(t_expm1(x), y);
        D s = t_sin(0.5LF * y);  // expm1(x) cos y - 2 sin^2(y/2): no cancellation near 0
        return Z(t_expm1(x) * t_cos(y) - 2.0LF * s * s, t_exp(x) * t_sin(y));
    }
    Z w = cexp(z);
    return Z(w.x - 1.0LF, w.y);
}

Z clog(Z z) {
    D x = z.x, y = z.y;
    D h = zhypot(x, y);
    D re;
    if (h > 0.7LF && h < 1.4LF) {
        // log|z| = log1p(|z|^2 - 1) / 2: |z| - 1 cancels, the fma'd square difference does not
        D p = max(abs(x), abs(y)), q = min(abs(x), abs(y));
        re = 0.5LF * t_log1p(fma(p - 1.0LF, p + 1.0LF, q * q));
    } else {
        re = t_log(h);
    }
    return Z(re, t_atan2(y, x));
}

Z clog1p(Z z) {
    D x = z.x, y = z.y;
    if (isinf(x) || isnan(x) || isinf(y) || isnan(y)) return clog(Z(1.0LF + x, y));
    D s = x * (2.0LF + x) + y * y;  // |1 + z|^2 - 1
    D re = abs(s) < 0.5LF ? 0.5LF * t_log1p(s) : t_log(zhypot(1.0LF + x, y));
    return Z(re, t_atan2(y, 1.0LF + x));
}

Z csqrt(Z z) {
    // Kahan's algorithm, special cases as FreeBSD's csqrt
    D x = z.x, y = z.y;
    if (x == 0.0LF && y == 0.0LF) return Z(0.0LF, y);
    if (isinf(y)) return Z(INF, y);
    if (isnan(x)) return Z(x, NAN);
    if (isinf(x)) {
        if (x < 0.0LF) return Z(isnan(y) ? NAN : 0.0LF, zcopysign(INF, y));
        return Z(x, isnan(y) ? NAN : zcopysign(0.0LF, y));
    }
    if (isnan(y)) return Z(y, y);
    D scale = 1.0LF;
    if (abs(x) >= LARGE || abs(y) >= LARGE) { x *= 0.25LF; y *= 0.25LF; scale = 2.0LF; }
    D t = sqrt(0.5LF * (abs(x) + zhypot(x, y)));
    if (x >= 0.0LF) return Z(t * scale, y / (2.0LF * t) * scale);
    return Z(abs(y) / (2.0LF * t) * scale, zcopysign(t * scale, y));
}

Z csinh(Z z) {
    D x = z.x, y = z.y;
    if (isnan(x)) return Z(NAN, y == 0.0LF ? y : NAN);
    if (isinf(x)) {
        if (y == 0.0LF) return Z(x, y);
        if (!isinf(y) && !isnan(y)) return Z(x * t_cos(y), INF * t_sin(y));
        return Z(INF, NAN);
    }
    if (isinf(y) || isnan(y)) return Z(x == 0.0LF ? x : NAN, NAN);
    if (y == 0.0LF) return Z(t_sinh(x), y);
    if (abs(x) > 700.0LF) {  // sinh(x) overflows before the product with cos(y) does
        D xm = x - zcopysign(1.0LF, x);
        return Z(t_cos(y) * t_sinh(xm) * 2.718281828459045LF, t_sin(y) * t_cosh(xm) * 2.718281828459045LF);
    }
    return Z(t_cos(y) * t_sinh(x), t_sin(y) * t_cosh(x));
}

Z ccosh(Z z) {
    D x = z.x, y = z.y;
    if (isnan(x)) return Z(NAN, y == 0.0LF ? y : NAN);
    if (isinf(x)) {
        if (y == 0.0LF) return Z(INF, y * zcopysign(1.0LF, x));
        if (!isinf(y) && !isnan(y)) return Z(INF * t_cos(y), zcopysign(INF, x) * t_sin(y));
        return Z(INF, NAN);
    }
    if (isinf(y) || isnan(y)) return Z(NAN, x == 0.0LF ? 0.0LF : NAN);
    if (y == 0.0LF) return Z(t_cosh(x), y * zcopysign(1.0LF, x));
    if (abs(x) > 700.0LF) {
        D xm = x - zcopysign(1.0LF, x);
        return Z(t_cos(y) * t_cosh(xm) * 2.718281828459045LF, t_sin(y) * t_sinh(xm) * 2.718281828459045LF);
    }
    return Z(t_cos(y) * t_cosh(x), t_sin(y) * t_sinh(x));
}

Z ctanh(Z z) {
    // Kahan's formula as FreeBSD's ctanh: sinh/cosh would give inf/inf = NaN for large |x|
    D x = z.x, y = z.y;
    if (isinf(x) || isnan(x)) {
        if (isnan(x)) return Z(x, y == 0.0LF ? y : x * y);
        D im = isinf(y) ? y : t_sin(y) * t_cos(y);
        return Z(zcopysign(1.0LF, x), zcopysign(0.0LF, im));
    }
    if (isinf(y) || isnan(y)) return Z(x == 0.0LF ? x : NAN, NAN);
    if (abs(x) >= 22.0LF) {
        D e = t_exp(-abs(x));
        return Z(zcopysign(1.0LF, x), 4.0LF * t_sin(y) * t_cos(y) * e * e);
    }
    D t = t_tan(y), beta = 1.0LF + t * t, s = t_sinh(x), rho = sqrt(1.0LF + s * s);
    D den = 1.0LF + beta * s * s;
    return Z(beta * rho * s / den, t / den);
}

Z casinh(Z z) {
    D x = z.x, y = z.y;
    if (isnan(x) || isnan(y)) {
        if (isinf(x) || isinf(y)) return Z(isnan(x) ? INF : x, NAN);
        if (y == 0.0LF) return Z(NAN, y);
        return Z(NAN, NAN);
    }
    if (isinf(x) || isinf(y)) {
        D im = (isinf(x) && isinf(y)) ? 0.25LF * PI : (isinf(x) ? 0.0LF : 0.5LF * PI);
        return Z(zcopysign(INF, x), zcopysign(im, y));
    }
    if (abs(x) > LARGE || abs(y) > LARGE) {
        D m = t_log(zhypot(0.5LF * x, 0.5LF * y)) + 2.0LF * LN2;
        return Z(y >= 0.0LF ? zcopysign(m, x) : -zcopysign(m, -x), t_atan2(y, abs(x)));
    }
    Z s1 = csqrt(Z(1.0LF + y, -x)), s2 = csqrt(Z(1.0LF - y, x));
    return Z(t_asinh(s1.x * s2.y - s2.x * s1.y), t_atan2(y, s1.x * s2.x - s1.y * s2.y));
}

Z cacos(Z z) {
    D x = z.x, y = z.y;
    if (isnan(x) || isnan(y)) {
        if (isinf(x)) return Z(NAN, -INF);  // imaginary sign unspecified: NumPy's -inf
        if (isinf(y)) return Z(NAN, -y);
        if (x == 0.0LF) return Z(0.5LF * PI, NAN);
        return Z(NAN, NAN);
    }
    if (isinf(x) || isinf(y)) {
        D re = (isinf(x) && isinf(y)) ? (x > 0.0LF ? 0.25LF : 0.75LF) * PI
             : (isinf(x) ? (x > 0.0LF ? 0.0LF : PI) : 0.5LF * PI);
        return Z(re, -zcopysign(INF, y));
    }
    if (abs(x) > LARGE || abs(y) > LARGE) {
        D m = t_log(zhypot(0.5LF * x, 0.5LF * y)) + 2.0LF * LN2;
        return Z(t_atan2(abs(y), x), x < 0.0LF ? -zcopysign(m, y) : zcopysign(m, -y));
    }
    Z s1 = csqrt(Z(1.0LF - x, -y)), s2 = csqrt(Z(1.0LF + x, y));
    return Z(2.0LF * t_atan2(s1.x, s2.x), t_asinh(s2.x * s1.y - s2.y * s1.x));
}

Z cacosh(Z z) {
    // i * cacos(z) with FreeBSD's sign fix-ups
    Z w = cacos(z);
    if (isnan(w.x) && isnan(w.y)) return Z(w.y, w.x);
    if (isnan(w.x)) return Z(abs(w.y), w.x);
    if (isnan(w.y)) return Z(w.y, w.x);  // NumPy's NaN + i pi/2 for cacosh(+-0 + i NaN)
    return Z(abs(w.y), zcopysign(w.x, z.y));
}

Z catanh(Z z) {
    D x = z.x, y = z.y;
    if (isnan(x) || isnan(y)) {
        if (isinf(x) || x == 0.0LF) return Z(zcopysign(0.0LF, x), NAN);
        if (isinf(y)) return Z(0.0LF, zcopysign(0.5LF * PI, y));
        return Z(NAN, NAN);
    }
    if (isinf(x) || isinf(y)) return Z(zcopysign(0.0LF, x), zcopysign(0.5LF * PI, y));
    D s = 1.0LF;
    if (zsignbit(x)) { x = -x; y = -y; s = -1.0LF; }  // odd: work with x >= +0
    D ay = abs(y), re, im;
    if (x > SQRT_LARGE || ay > SQRT_LARGE) {
        D h = zhypot(0.5LF * x, 0.5LF * y);
        re = x / 4.0LF / h / h;
        im = -zcopysign(0.5LF * PI, -y);
    } else if (x == 1.0LF && ay < SQRT_MIN) {
        if (ay == 0.0LF) { re = INF; im = y; }
        else {
            re = -t_log(sqrt(ay) / sqrt(zhypot(ay, 2.0LF)));
            im = zcopysign(0.5LF * t_atan2(2.0LF, -ay), y);
        }
    } else {
        re = 0.25LF * t_log1p(4.0LF * x / ((1.0LF - x) * (1.0LF - x) + ay * ay));
        im = -0.5LF * t_atan2(-2.0LF * y, (1.0LF - x) * (1.0LF + x) - ay * ay);
    }
    return Z(s * re, s * im);
}

// f(z) = -i g(i z) for the circular functions from the hyperbolic ones
Z rot_in(Z z) { return Z(-z.y, z.x); }    // i z
Z rot_out(Z w) { return Z(w.y, -w.x); }   // -i w
// NaN + i inf results whose imaginary sign C99 leaves unspecified: NumPy's +inf
Z inf_up(Z w) { return (isnan(w.x) && isinf(w.y)) ? Z(w.x, INF) : w; }

Z csign(Z z) {
    if (isnan(z.x) || isnan(z.y)) return Z(NAN, NAN);
    D m = zhypot(z.x, z.y);
    if (m == 0.0LF) return Z(0.0LF, 0.0LF);
    if (isinf(z.x) && isinf(z.y)) return Z(NAN, NAN);  // inf / inf, as NumPy
    if (isinf(m)) {  // direction of an infinite value: only the infinite part counts
        D re = isinf(z.x) ? zcopysign(1.0LF, z.x) : 0.0LF, im = isinf(z.y) ? zcopysign(1.0LF, z.y) : 0.0LF;
        D n = sqrt(re * re + im * im);
        return Z(re / n, im / n);
    }
    return Z(z.x / m, z.y / m);
}

Z cpow(Z p, Z q) {
    // NumPy's nc_pow: exact small integer powers by squaring, else exp(q log p)
    if (q.x == 0.0LF && q.y == 0.0LF) return Z(1.0LF, 0.0LF);
    if (p.x == 0.0LF && p.y == 0.0LF)
        return q.x > 0.0LF ? Z(0.0LF, 0.0LF) : Z(NAN, NAN);
    if (q.y == 0.0LF && q.x == trunc(q.x) && abs(q.x) < 100.0LF) {
        int n = int(abs(q.x));
        if (q.x == 1.0LF) return p;
        if (q.x == 2.0LF) return cmul(p, p);
        if (q.x == 3.0LF) return cmul(p, cmul(p, p));
        Z r = Z(1.0LF, 0.0LF), base = p;
        for (int k = 0; k < 7 && (n >> k) != 0; ++k) {  // n < 100: at most 7 bits
            if (((n >> k) & 1) != 0) r = cmul(r, base);
            base = cmul(base, base);
        }
        return q.x < 0.0LF ? crecip(r) : r;
    }
    return cexp(cmul(q, clog(p)));
}

Z un(Z z) {
    switch (OP) {
    case OP_NEGATIVE: return -z;
    case OP_CONJ: return Z(z.x, -z.y);
    case OP_SQUARE: return Z(fma(z.x, z.x, -(z.y * z.y)), fma(z.x, z.y, z.y * z.x));  // NumPy's (fused)
    case OP_ROUND: return roundEven(z);
    case OP_SQRT: return csqrt(z);
    case OP_RECIPROCAL: return crecip(z);
    case OP_SIGN: return csign(z);
    case OP_EXP: return cexp(z);
    case OP_EXPM1: return cexpm1(z);
    case OP_LOG: return clog(z);
    case OP_LOG1P: return clog1p(z);
    case OP_LOG2: return clog(z) * 1.44269504088896340736LF;
    case OP_LOG10: return clog(z) * 0.43429448190325182765LF;
    case OP_SINH: return csinh(z);
    case OP_COSH: return ccosh(z);
    case OP_TANH: return ctanh(z);
    case OP_SIN: return inf_up(rot_out(csinh(rot_in(z))));
    case OP_COS: return ccosh(rot_in(z));
    case OP_TAN: return rot_out(ctanh(rot_in(z)));
    case OP_ASINH: return casinh(z);
    case OP_ACOSH: return cacosh(z);
    case OP_ATANH: return catanh(z);
    case OP_ASIN: {
        Z w = rot_out(casinh(rot_in(z)));
        return isinf(z.x) ? inf_up(w) : w;
    }
    case OP_ACOS: return cacos(z);
    case OP_ATAN: {
        Z w = rot_out(catanh(rot_in(z)));
        return (isinf(z.x) && isnan(z.y)) ? Z(w.x, 0.0LF) : w;  // NumPy's +0
    }
    default: return z;  // positive
    }
}

D unr(Z z) {
    switch (OP) {
    case OP_ABS: return zhypot(z.x, z.y);
    case OP_IMAG: return z.y;
    default: return z.x;  // real
    }
}

bool pred1(Z z) {
    switch (OP) {
    case OP_ISFINITE: return !isinf(z.x) && !isnan(z.x) && !isinf(z.y) && !isnan(z.y);
    case OP_ISINF: return isinf(z.x) || isinf(z.y);
    case OP_ISNAN: return isnan(z.x) || isnan(z.y);
    default: return false;
    }
}

Z bin(Z p, Z q) {
    switch (OP) {
    case OP_ADD: return p + q;
    case OP_SUBTRACT: return p - q;
    case OP_MULTIPLY: return cmul(p, q);
    case OP_DIVIDE: return cdiv(p, q);
    case OP_POW: return cpow(p, q);
    default: return p;
    }
}

bool pred2(Z p, Z q) {
    bool eq = p.x == q.x && p.y == q.y;
    return OP == OP_NOT_EQUAL ? !eq : eq;
}

void main() {
    const int nops = OP < OP_ADD ? 2 : (OP == OP_WHERE ? 4 : 3);
    uint step = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += step) {
        int ix[4];
        locate(i, nops, ix);
        Z x = Z(a[ix[1]]);
#if OUT_KIND == 2
        bool r = nops == 2 ? pred1(x) : pred2(x, Z(b[ix[2]]));
        o[ix[0]] = uint8_t(r ? 1u : 0u);
#elif OUT_KIND == 1
        o[ix[0]] = RS(unr(x));
#else
        Z r;
        if (OP == OP_WHERE) r = uint(c[ix[3]]) != 0u ? x : Z(b[ix[2]]);
        else r = nops == 2 ? un(x) : bin(x, Z(b[ix[2]]));
        o[ix[0]] = CS(r);
#endif
    }
}
