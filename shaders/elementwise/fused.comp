#version 450
// A run of elementwise ops of one dtype (IN_*: float32/64, int32, uint32) in one dispatch: a
// small interpreter.
// Each thread takes element i through every instruction in order, so a run behaves exactly as
// its ops one by one would (every operand is element i of a contiguous array, or one broadcast
// element). Results stay in registers; only results some array still holds are stored.
// grilly/backends/vulkan/fusion.py builds the program.
#define OWN_PUSH_CONSTANTS 1
#include "../common.glsl"
#include "ops.glsl"
#extension GL_EXT_control_flow_attributes : require

#define TC IN_TC
#define NB 8    // bindings (buffers): inputs and stored results
#define NI 16   // instructions
#define NM 6    // immediates

// instruction: op (bits 0-7), operand a (8-13), operand b (14-19), store binding (20-22),
// store flag (23). operand: 0-15 the result of that instruction, 16+k element i of binding k,
// 24+k the one element of binding k (broadcast), 32+m the immediate at word m (two words for
// float64)
layout(push_constant) uniform FPC {
    uint n;          // items: elements, or quads when VEC4
    uint nins;
    int off[NB];     // element offset of each binding (a multiple of 4 for VEC4's contiguous)
    uint code[NI];
    uint imm[NM];    // constants' bits (32-bit words)
} fp;

#if IN_BITS == 64
#define VT dvec4
#define IMM(m) packDouble2x32(uvec2(fp.imm[m], fp.imm[m + 1u]))
#elif IN_KIND == K_F
#define VT vec4
#define IMM(m) uintBitsToFloat(fp.imm[m])
#elif IN_KIND == K_I
#define VT ivec4
#define IMM(m) int(fp.imm[m])
#else
#define VT uvec4
#define IMM(m) fp.imm[m]
#endif

#define BIND(k) \
    layout(set = 0, binding = k) buffer S##k { IN_TS s##k[]; }; \
    layout(set = 0, binding = k) buffer V##k { VT v##k[]; };
BIND(0) BIND(1) BIND(2) BIND(3) BIND(4) BIND(5) BIND(6) BIND(7)

layout(constant_id = 2) const int VEC4 = 0;

#include "ew_math.glsl"

TC load1(uint k, int i) {
    switch (k) {
    case 0u: return TC(s0[i]); case 1u: return TC(s1[i]); case 2u: return TC(s2[i]);
    case 3u: return TC(s3[i]); case 4u: return TC(s4[i]); case 5u: return TC(s5[i]);
    case 6u: return TC(s6[i]); default: return TC(s7[i]);
    }
}

VT load4(uint k, int q) {
    switch (k) {
    case 0u: return v0[q]; case 1u: return v1[q]; case 2u: return v2[q];
    case 3u: return v3[q]; case 4u: return v4[q]; case 5u: return v5[q];
    case 6u: return v6[q]; default: return v7[q];
    }
}

void store1(uint k, int i, TC x) {
    switch (k) {
    case 0u: s0[i] = x; break; case 1u: s1[i] = x; break; case 2u: s2[i] = x; break;
    case 3u: s3[i] = x; break; case 4u: s4[i] = x; break; case 5u: s5[i] = x; break;
    case 6u: s6[i] = x; break; default: s7[i] = x; break;
    }
}

void store4(uint k, int q, VT x) {
    switch (k) {
    case 0u: v0[q] = x; break; case 1u: v1[q] = x; break; case 2u: v2[q] = x; break;
    case 3u: v3[q] = x; break; case 4u: v4[q] = x; break; case 5u: v5[q] = x; break;
    case 6u: v6[q] = x; break; default: v7[q] = x; break;
    }
}

VT reg[NI];   // results; the scalar path uses component x

VT operand(uint src, uint i) {
    if (src < 16u) return reg[src];
    if (src >= 32u) return VT(IMM(src - 32u));
    uint k = src & 7u;
    if (src >= 24u) return VT(load1(k, fp.off[k]));
    if (VEC4 != 0) return load4(k, (fp.off[k] >> 2) + int(i));
    return VT(load1(k, fp.off[k] + int(i)));
}

void main() {
    uint step = gl_NumWorkGroups.x * WG;
    int lanes = VEC4 != 0 ? 4 : 1;
    for (uint i = gl_GlobalInvocationID.x; i < fp.n; i += step) {
        for (uint j = 0u; j < fp.nins; ++j) {
            uint c = fp.code[j];
            int op = int(c & 0xffu);
            bool unary = op < OP_ADD;
            VT x = operand((c >> 8) & 63u, i);
            VT y = unary ? x : operand((c >> 14) & 63u, i);
            VT r = x;
            // one call site per op family: the op switches are large (float64 library)
            [[dont_unroll]] for (int e = 0; e < lanes; ++e)
                r[e] = unary ? un(op, x[e]) : bin(op, x[e], y[e]);
            reg[j] = r;
            if ((c & (1u << 23)) != 0u) {
                uint k = (c >> 20) & 7u;
                if (VEC4 != 0) store4(k, (fp.off[k] >> 2) + int(i), r);
                else store1(k, fp.off[k] + int(i), r.x);
            }
        }
    }
}
