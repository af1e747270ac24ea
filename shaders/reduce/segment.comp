#version 450
// Segment reductions (grilly.array.segments; the contract's segment_sum and segment_max): one
// invocation per (segment s, column d) walks the run values[starts[s]:ends[s], d] row by row in
// index order, so a sum is the sequential one of the CPU kernel and NumPy, bit for bit (marked
// precise: no reassociation).
//   MAX 0: binding 0 out (S, D), 1 values (K, D), 2 bounds = [starts (S)][ends (S)] (int64)
//   MAX 1: binding 0 out (S, D), 1 arg (S, D) int64, 2 values, 3 bounds; the first maximal
//          row (a NaN beats every number), an empty run gives the fill and -1
//   pc.n = S * D; pc.off = (out, arg, values, bounds); pc.shape = (K, D, S);
//   pc.st[0] (float64: st[0..1]) = the fill's bits.
#include "../common.glsl"
#if IN_BITS == 64
#extension GL_ARB_gpu_shader_fp64 : enable
#endif

#define TC IN_TC
layout(set = 0, binding = 0) writeonly buffer O { IN_TS o[]; };
#ifdef MAX
layout(set = 0, binding = 1) writeonly buffer G { int64_t arg[]; };
layout(set = 0, binding = 2) readonly buffer V { IN_TS v[]; };
layout(set = 0, binding = 3) readonly buffer B { int64_t bnd[]; };
#else
layout(set = 0, binding = 1) readonly buffer V { IN_TS v[]; };
layout(set = 0, binding = 2) readonly buffer B { int64_t bnd[]; };
#endif

TC fill_value() {
#if IN_BITS == 64
    return packDouble2x32(uvec2(uint(pc.st[0]), uint(pc.st[1])));
#else
    return uintBitsToFloat(uint(pc.st[0]));
#endif
}

void main() {
    uint step = gl_NumWorkGroups.x * WG;
    int K = pc.shape[0], D = pc.shape[1], S = pc.shape[2];
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += step) {
        int s = int(i) / D, d = int(i) - s * D;
        // the run clipped to the K rows (an inverted one is empty), as the CPU kernel does
        int64_t a64 = min(max(bnd[pc.off[3] + s], int64_t(0)), int64_t(K));
        int64_t b64 = min(max(bnd[pc.off[3] + S + s], a64), int64_t(K));
        int a = int(a64), b = int(b64);
        int at = pc.off[2] + a * D + d;
#ifdef MAX
        TC best = fill_value();
        int first = -1;
        for (int k = a; k < b; ++k, at += D) {
            TC x = TC(v[at]);
            if (first < 0 || x > best || (isnan(x) && !isnan(best))) {
                best = x;
                first = k;
            }
        }
        o[pc.off[0] + i] = IN_TS(best);
        arg[pc.off[1] + i] = int64_t(first);
#else
        precise TC acc = TC(0);
        for (int k = a; k < b; ++k, at += D) acc = acc + TC(v[at]);
        o[pc.off[0] + i] = IN_TS(acc);
#endif
    }
}
