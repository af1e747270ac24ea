#version 450
// Strided copy with conversion from dtype IN to dtype OUT: astype, copy, assign (into a
// strided view, with broadcasting), and making a view contiguous.
// Complex operands (X_CPLX=1) are one vec2/dvec2 (real, imag): real -> complex puts imag 0,
// complex -> real takes the real part, complex -> bool is "either part nonzero" (numpy's rules).
#include "../common.glsl"

#ifndef IN_CPLX
#define IN_CPLX 0
#endif
#ifndef OUT_CPLX
#define OUT_CPLX 0
#endif
// bfloat16 (X_BF16=1) is stored as its 16 bits (X_TS uint16_t) and converted through float32:
// widening is exact (the bits are float32's top half); narrowing rounds to nearest even, keeps
// inf, and makes NaN ml_dtypes' quiet NaN (sign kept). float64 and integers narrow through
// float32 first, as ml_dtypes does. Subnormals are handled on the bits or in float32 normals,
// never by float arithmetic on a subnormal: a driver may flush those (NVIDIA's float16
// conversions and float32 -> float64 did), so bfloat16 -> bool, -> float64 and float16 ->
// bfloat16 (IN_F16BITS: the float16 read as its bits) decode the bits themselves.
#ifndef IN_BF16
#define IN_BF16 0
#endif
#ifndef OUT_BF16
#define OUT_BF16 0
#endif
#ifndef IN_F16BITS
#define IN_F16BITS 0
#endif

// the float16 with bits h as a float32 (subnormals scaled as integers: exact, normal results)
float f16_value(uint h) {
    float s = (h & 0x8000u) != 0u ? -1.0 : 1.0;
    uint e = (h >> 10) & 31u, m = h & 1023u;
    if (e == 0u)
        return s * float(m) * uintBitsToFloat(0x33800000u);   // m * 2^-24
    if (e == 31u)
        return uintBitsToFloat(((h & 0x8000u) << 16) | 0x7f800000u | (m << 13));
    return uintBitsToFloat(((h & 0x8000u) << 16) | ((e + 112u) << 23) | (m << 13));
}

// the bfloat16 with bits b as a float64 (subnormals: m * 2^-133, normal in float64)
double bf16_double(uint b) {
    if ((b & 0x7f80u) == 0u) {
        double v = double(b & 0x7fu) * 9.183549615799121e-41LF;   // 2^-133
        return (b & 0x8000u) != 0u ? -v : v;
    }
    return double(uintBitsToFloat(b << 16));
}

#include "../bf16.glsl"

// float64 -> float32 -> bfloat16 as ml_dtypes rounds it; a result in float32's subnormal range
// is rounded in float64 arithmetic (a driver may flush a subnormal float32 conversion)
uint16_t bf16_from_double(double d) {
    double a = abs(d);
    if (a != 0.0LF && a < 1.1754943508222875e-38LF) {
        uint u = uint(roundEven(a * 7.136238463529799e+44LF));   // 2^149: float32 subnormal units
        return bf16_round(u | (d < 0.0LF ? 0x80000000u : 0u));
    }
    return bf16_bits(float(d));
}

layout(set = 0, binding = 0) writeonly buffer O { OUT_TS o[]; };
layout(set = 0, binding = 1) readonly buffer A { IN_TS a[]; };

// RAW16 (a 16-bit dtype copied to itself) with VEC4=1: four elements of a row per step, one
// 64-bit load and store (a copy of float16 activations was instruction-bound one element a
// step). The host sees to it that rows have a multiple of 4 elements, unit-strided in both
// operands and starting at multiples of 4.
layout(constant_id = 2) const int VEC4 = 0;
#ifndef RAW16
#define RAW16 0
#endif
#if RAW16
layout(set = 0, binding = 0) writeonly buffer O64 { uvec2 o64[]; };
layout(set = 0, binding = 1) readonly buffer A64 { uvec2 a64[]; };
#endif

void main() {
    uint step = gl_NumWorkGroups.x * WG;
#if RAW16
    if (VEC4 != 0) {
        for (uint q = gl_GlobalInvocationID.x; q < pc.n; q += step) {
            int ix[4];
            locate(q * 4u, 2, ix);
            o64[ix[0] >> 2] = a64[ix[1] >> 2];
        }
        return;
    }
#endif
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += step) {
        int ix[4];
        locate(i, 2, ix);
#if IN_CPLX && OUT_CPLX
        o[ix[0]] = OUT_TS(a[ix[1]]);
#elif IN_CPLX && OUT_KIND == K_B
        IN_TS z = a[ix[1]];
        o[ix[0]] = uint8_t(z.x != IN_RC(0) || z.y != IN_RC(0) ? 1u : 0u);
#else
#if IN_CPLX
        IN_RC x = a[ix[1]].x;
#elif IN_BF16
        uint bits = uint(a[ix[1]]);
        float x = uintBitsToFloat(bits << 16);
#elif IN_F16BITS
        float x = f16_value(uint(a[ix[1]]));
#else
        IN_TC x = IN_TC(a[ix[1]]);
#endif
#if OUT_CPLX
        o[ix[0]] = OUT_TS(OUT_RC(x), OUT_RC(0));
#elif OUT_BF16 && IN_BF16
        o[ix[0]] = a[ix[1]];
#elif OUT_BF16 && IN_KIND == K_F && IN_BITS == 64
        o[ix[0]] = bf16_from_double(x);
#elif OUT_BF16
        o[ix[0]] = bf16_bits(float(x));
#elif IN_BF16 && OUT_KIND == K_B
        o[ix[0]] = uint8_t((bits & 0x7fffu) != 0u ? 1u : 0u);
#elif IN_BF16 && OUT_BITS == 64 && OUT_KIND == K_F
        o[ix[0]] = bf16_double(bits);
#elif OUT_KIND == K_B
        o[ix[0]] = uint8_t(x != IN_TC(0) ? 1u : 0u);
#elif OUT_BITS < 32 && OUT_KIND == K_I
        o[ix[0]] = OUT_TS(int(x));
#elif OUT_BITS < 32 && OUT_KIND == K_U
        o[ix[0]] = OUT_TS(uint(int64_t(x)));
#elif OUT_KIND == K_U && IN_KIND == K_F
        // negative floats wrap like C (through a signed integer), as NumPy does on x86
        o[ix[0]] = OUT_TS(OUT_TC(int64_t(x)));
#else
        o[ix[0]] = OUT_TS(OUT_TC(x));
#endif
#endif
    }
}
