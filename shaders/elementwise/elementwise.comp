#version 450
// Every elementwise op of grilly for one input dtype (IN_*); the op is the specialization
// constant OP, so each (op, dtype, ndim) pipeline keeps only its own branch.
// OUT_BOOL=1 builds the predicate variant (comparisons, isnan, ...) whose output is bool.
#extension GL_EXT_control_flow_attributes : enable
#include "../common.glsl"
#include "ops.glsl"

#ifdef OP_FIXED
// one op's variant (variants.PER_OP): the other ops' code is gone, so a driver parses a small
// module instead of pruning every op's (the float variants' 230-520 KB) on each pipeline
const int OP = OP_FIXED;
#else
layout(constant_id = 0) const int OP = 0;
#endif

#define TC IN_TC
#if OUT_BOOL
#define OUT_TS uint8_t
#else
#define OUT_TS IN_TS
#endif
// bfloat16 (IN_BF16=1): its 16 bits stored, float32 computed: a load widens exactly (the bits
// are float32's top half), a store rounds as astype does (bf16.glsl), so an op equals astype to
// float32, the float32 op, and astype back, bit for bit, in one pass
#ifndef IN_BF16
#define IN_BF16 0
#endif
#if IN_BF16
#include "../bf16.glsl"
#define LD(v) uintBitsToFloat(uint(v) << 16)
#define ST(r) bf16_bits(r)
#else
#define LD(v) TC(v)
#define ST(r) OUT_TS(r)
#endif

layout(set = 0, binding = 0) writeonly buffer O { OUT_TS o[]; };
layout(set = 0, binding = 1) readonly buffer A { IN_TS a[]; };
layout(set = 0, binding = 2) readonly buffer B { IN_TS b[]; };
layout(set = 0, binding = 3) readonly buffer C { uint8_t c[]; };

// VEC4=1 (specialization): contiguous 32-bit operands, 4 elements per step through 128-bit
// aliases of bindings 0-2. pc.n counts quads; an operand with pc.st[k * MAXD] == 0 is one
// broadcast element at pc.off[k], any other is contiguous from pc.off[k] (a multiple of 4).
layout(constant_id = 2) const int VEC4 = 0;
#if IN_BITS == 32 && !OUT_BOOL
#define HAS_VEC4 1
#if IN_KIND == K_F
#define VT vec4
#elif IN_KIND == K_I
#define VT ivec4
#else
#define VT uvec4
#endif
layout(set = 0, binding = 0) writeonly buffer O4 { VT o4[]; };
layout(set = 0, binding = 1) readonly buffer A4 { VT a4[]; };
layout(set = 0, binding = 2) readonly buffer B4 { VT b4[]; };
#else
#define HAS_VEC4 0
#endif
// 16-bit dtypes (float16, bfloat16's bits, int16, uint16) with VEC4=1: four elements of a row
// per step, any NDIM (tensor cores leave float16 activations everywhere: one element a step
// made these kernels instruction-bound, slower than float32's). A row's four elements load as
// one 64-bit word (binding 1 and 2 aliases) and widen exactly; the stores stay 16-bit ones
// (storage-only 16-bit types: no 16-bit arithmetic needed). The host sees to it that the
// innermost axis has a multiple of 4 elements, that every operand with a unit innermost stride
// starts its rows at multiples of 4, and that every other operand has innermost stride 0 (one
// element of a row, broadcast).
#if IN_BITS == 16 && !OUT_BOOL
#define HAS_VEC16 1
#if IN_KIND == K_F
#define V16 vec4
#elif IN_KIND == K_I
#define V16 ivec4
#else
#define V16 uvec4
#endif
layout(set = 0, binding = 1) readonly buffer A16 { uvec2 a16[]; };
layout(set = 0, binding = 2) readonly buffer B16 { uvec2 b16[]; };

// the four 16-bit values of w, widened as LD widens one
V16 widen16(uvec2 w) {
#if IN_BF16
    return uintBitsToFloat(uvec4(w.x << 16, w.x & 0xffff0000u, w.y << 16, w.y & 0xffff0000u));
#elif IN_KIND == K_F
    return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
#elif IN_KIND == K_I
    ivec2 v = ivec2(w);
    return ivec4(bitfieldExtract(v.x, 0, 16), bitfieldExtract(v.x, 16, 16),
                 bitfieldExtract(v.y, 0, 16), bitfieldExtract(v.y, 16, 16));
#else
    return uvec4(w.x & 0xffffu, w.x >> 16, w.y & 0xffffu, w.y >> 16);
#endif
}
#else
#define HAS_VEC16 0
#endif

#include "ew_math.glsl"

#if HAS_VEC4
VT load4(int k, uint q) {
    int off = pc.off[k];
    if (pc.st[k * MAXD] == 0) return VT(k == 1 ? a[off] : b[off]);
    return k == 1 ? a4[(off >> 2) + int(q)] : b4[(off >> 2) + int(q)];
}
#endif

#if HAS_VEC16
// operand k's four elements from element index e (a row of 4, or one broadcast element)
V16 load16(int k, int e) {
    if (pc.st[k * MAXD + NDIM - 1] == 0) return V16(LD(k == 1 ? a[e] : b[e]));
    return widen16(k == 1 ? a16[e >> 2] : b16[e >> 2]);
}
#endif

void main() {
    const int nops = OP < OP_ADD ? 2 : (OP == OP_WHERE ? 4 : 3);
    uint step = gl_NumWorkGroups.x * WG;
#if HAS_VEC4
    if (VEC4 != 0 && OP != OP_WHERE) {
        for (uint q = gl_GlobalInvocationID.x; q < pc.n; q += step) {
            VT x = load4(1, q), r;
            if (nops == 2) {
                for (int j = 0; j < 4; ++j) r[j] = un(OP, x[j]);
            } else {
                VT y = load4(2, q);
                for (int j = 0; j < 4; ++j) r[j] = bin(OP, x[j], y[j]);
            }
            o4[(pc.off[0] >> 2) + int(q)] = r;
        }
        return;
    }
#endif
#if HAS_VEC16
    if (VEC4 != 0 && OP != OP_WHERE) {
        for (uint q = gl_GlobalInvocationID.x; q < pc.n; q += step) {
            int ix[4];
            locate(q * 4u, nops, ix);
            V16 x = load16(1, ix[1]), y = nops == 2 ? x : load16(2, ix[2]);
            [[unroll]] for (int j = 0; j < 4; ++j)
                o[ix[0] + j] = ST(nops == 2 ? un(OP, x[j]) : bin(OP, x[j], y[j]));
        }
        return;
    }
#endif
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += step) {
        int ix[4];
        locate(i, nops, ix);
        TC x = LD(a[ix[1]]);
#if OUT_BOOL
        bool r = nops == 2 ? pred1(OP, x) : pred2(OP, x, LD(b[ix[2]]));
        o[ix[0]] = uint8_t(r ? 1u : 0u);
#else
        TC r;
        if (OP == OP_WHERE) r = uint(c[ix[3]]) != 0u ? x : LD(b[ix[2]]);
        else r = nops == 2 ? un(OP, x) : bin(OP, x, LD(b[ix[2]]));
        o[ix[0]] = ST(r);
#endif
    }
}
