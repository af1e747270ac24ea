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
// float32 first, as ml_dtypes does.
#ifndef IN_BF16
#define IN_BF16 0
#endif
#ifndef OUT_BF16
#define OUT_BF16 0
#endif

uint16_t bf16_bits(float f) {
    uint u = floatBitsToUint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return uint16_t(((u >> 16) & 0x8000u) | 0x7fc0u);
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

layout(set = 0, binding = 0) writeonly buffer O { OUT_TS o[]; };
layout(set = 0, binding = 1) readonly buffer A { IN_TS a[]; };

void main() {
    uint step = gl_NumWorkGroups.x * WG;
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
        float x = uintBitsToFloat(uint(a[ix[1]]) << 16);
#else
        IN_TC x = IN_TC(a[ix[1]]);
#endif
#if OUT_CPLX
        o[ix[0]] = OUT_TS(OUT_RC(x), OUT_RC(0));
#elif OUT_BF16 && IN_BF16
        o[ix[0]] = a[ix[1]];
#elif OUT_BF16
        o[ix[0]] = bf16_bits(float(x));
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
