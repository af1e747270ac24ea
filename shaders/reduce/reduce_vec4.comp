#version 450
// float32 sum/prod/max/min of contiguous rows whose length is a multiple of 4: vec4 loads, UNROLL
// independent accumulators per invocation, one shared-memory tree per (row, chunk) work item
// (on the H100 this matches torch's sum; subgroup butterflies or 8 accumulators were no faster).
// pc.shape = (rows, quads per row, chunks per row); pc.st[0] = row stride in elements;
// pc.off = (out, a) in elements (a's a multiple of 4); result of (row r, chunk c) at out + r*chunks + c.
// OP (specialization): 0 sum, 1 prod, 2 max, 3 min; max/min propagate NaN like numpy.
#include "../common.glsl"

#define UNROLL 4

layout(constant_id = 0) const int OP = 0;

layout(set = 0, binding = 0) writeonly buffer O { float res[]; };
// IN16: float16 rows (red4_float16), four halves a 64-bit load, widened exactly; the results
// (and a chunked reduction's partials) are float32 all the same
#ifdef IN16
layout(set = 0, binding = 1) readonly buffer A { uvec2 a16[]; };
#ifdef BF16   // bfloat16's bits (red4_bfloat16): each the top half of its float32
vec4 load4(int i) {
    uvec2 w = a16[i];
    return uintBitsToFloat(uvec4(w.x << 16, w.x & 0xffff0000u, w.y << 16, w.y & 0xffff0000u));
}
#else
vec4 load4(int i) { uvec2 w = a16[i]; return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)); }
#endif
#else
layout(set = 0, binding = 1) readonly buffer A { vec4 a[]; };
vec4 load4(int i) { return a[i]; }
#endif

shared float sv[WG];

float ident() {
    if (OP == 0) return 0.0;
    if (OP == 1) return 1.0;
    float inf = uintBitsToFloat(0x7f800000u);
    return OP == 2 ? -inf : inf;
}

vec4 comb4(vec4 x, vec4 y) {
    if (OP == 0) return x + y;
    if (OP == 1) return x * y;
    bvec4 nan = isnan(x);
    bvec4 win = OP == 2 ? greaterThan(x, y) : lessThan(x, y);
    return mix(y, x, bvec4(uvec4(win) | uvec4(nan)));
}

float comb(float x, float y) {
    if (OP == 0) return x + y;
    if (OP == 1) return x * y;
    if (OP == 2) return (x > y || isnan(x)) ? x : y;
    return (x < y || isnan(x)) ? x : y;
}

void main() {
    int rows = pc.shape[0], quads = pc.shape[1], nch = pc.shape[2];
    int clen = (quads + nch - 1) / nch;
    int tid = int(gl_LocalInvocationID.x);
    for (int w = int(gl_WorkGroupID.x); w < rows * nch; w += int(gl_NumWorkGroups.x)) {
        int r = w / nch, c = w - r * nch;
        int base = (pc.off[1] + r * pc.st[0]) >> 2;
        int q0 = c * clen, q1 = min(quads, q0 + clen);
        vec4 acc[UNROLL];
        for (int u = 0; u < UNROLL; ++u) acc[u] = vec4(ident());
        int q = q0 + tid;
        for (; q + (UNROLL - 1) * WG < q1; q += UNROLL * WG) {
            // UNROLL independent loads in flight per invocation
            for (int u = 0; u < UNROLL; ++u) acc[u] = comb4(acc[u], load4(base + q + u * WG));
        }
        for (; q < q1; q += WG) acc[0] = comb4(acc[0], load4(base + q));
        for (int u = 1; u < UNROLL; ++u) acc[0] = comb4(acc[0], acc[u]);
        float v = comb(comb(acc[0].x, acc[0].y), comb(acc[0].z, acc[0].w));
        sv[tid] = v;
        barrier();
        for (int s = WG / 2; s > 0; s >>= 1) {
            if (tid < s) sv[tid] = comb(sv[tid], sv[tid + s]);
            barrier();
        }
        if (tid == 0) res[pc.off[0] + w] = sv[0];
        barrier();
    }
}
