#version 450
// softmax / log_softmax along the middle axis of an (outer, n, inner) strided view, one row per
// workgroup (or, SUB=1, per subgroup: short rows), grid-stride over rows. pc.n = rows =
// outer * inner; pc.shape = (outer, n, inner); pc.st[MAXD..MAXD+2] = the input's strides; the
// output is contiguous (outer, n, inner) from pc.off[0].
// VEC=4 (float32, inner == 1, contiguous rows, n and offsets multiples of 4) loads vec4s through
// bindings 2 and 3, which alias bindings 0 and 1: a row of at most K vec4s per lane is read
// once into registers (max, then sum of exp, then write). Otherwise each lane keeps an online
// (max, sum of exp(x - max)) over its elements, the pairs merge, and a second read of the row
// (still in cache) writes the output. Reductions: subgroup arithmetic, then shared memory.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "../common.glsl"
#if IN_BITS == 64
#include "../math_f64.glsl"
#define EXP exp_d
#define LN log_d
#else
// the float32 library (float16 computes in float32); no double, so no shaderFloat64 needed
#include "../math_f32.glsl"
#define EXP exp_f
#define LN log_f
vec4 exp4_f(vec4 v) { return vec4(exp_f(v.x), exp_f(v.y), exp_f(v.z), exp_f(v.w)); }
#endif

layout(constant_id = 0) const int LOG = 0;
layout(constant_id = 2) const int VEC = 1;
layout(constant_id = 3) const int SUB = 0;
#define K 4

#define TC IN_TC
layout(set = 0, binding = 0) writeonly buffer O { IN_TS y[]; };
layout(set = 0, binding = 1) readonly buffer A { IN_TS x[]; };
#if IN_BITS == 32
layout(set = 0, binding = 2) writeonly buffer O4 { vec4 y4[]; };
layout(set = 0, binding = 3) readonly buffer A4 { vec4 x4[]; };
#endif

shared TC part[WG];

#define NEG_INF TC(uintBitsToFloat(0xff800000u))  // -inf in float and double

// fold v into the running (m, s); -inf adds nothing, NaN poisons s
void upd(TC v, inout TC m, inout TC s) {
    if (v > m) {
        s = s * EXP(m - v) + TC(1);
        m = v;
    } else if (v != NEG_INF) {
        s += EXP(v - m);
    }
}

TC red_max(TC v) {
    v = subgroupMax(v);
    if (SUB != 0) return v;
    if (subgroupElect()) part[gl_SubgroupID] = v;
    barrier();
    TC r = NEG_INF;
    for (uint k = 0; k < gl_NumSubgroups; ++k) r = max(r, part[k]);
    barrier();
    return r;
}

TC red_sum(TC v) {
    v = subgroupAdd(v);
    if (SUB != 0) return v;
    if (subgroupElect()) part[gl_SubgroupID] = v;
    barrier();
    TC r = TC(0);
    for (uint k = 0; k < gl_NumSubgroups; ++k) r += part[k];
    barrier();
    return r;
}

TC outv(TC v, TC mx, TC a) {
    // a = log(sum) for log_softmax, 1 / sum for softmax
    return LOG != 0 ? (v - mx) - a : EXP(v - mx) * a;
}

void main() {
    int n = pc.shape[1], inner = pc.shape[2];
    int so = pc.st[MAXD], sl = pc.st[MAXD + 1], si = pc.st[MAXD + 2];
    uint rows = pc.n;
    int lane = SUB != 0 ? int(gl_SubgroupInvocationID) : int(gl_LocalInvocationID.x);
    int lanes = SUB != 0 ? int(gl_SubgroupSize) : WG;
    uint per = SUB != 0 ? gl_NumSubgroups : 1u;
    uint g0 = gl_WorkGroupID.x * per + (SUB != 0 ? gl_SubgroupID : 0u);
    for (uint g = g0; g < rows; g += gl_NumWorkGroups.x * per) {
        int o = int(g) / inner, j = int(g) - o * inner;
        int ib = pc.off[1] + o * so + j * si;
        int ob = pc.off[0] + o * n * inner + j;
#if IN_BITS == 32
        int b4 = ib >> 2, c4 = ob >> 2, n4 = n >> 2;
        if (VEC == 4 && n4 <= lanes * K) {
            vec4 r[K];
            vec4 mv = vec4(NEG_INF);
            for (int k = 0; k < K; ++k) {
                int q = lane + k * lanes;
                r[k] = q < n4 ? x4[b4 + q] : vec4(NEG_INF);
                mv = max(mv, r[k]);
            }
            TC mx = red_max(max(max(mv.x, mv.y), max(mv.z, mv.w)));
            vec4 sv = vec4(0);
            for (int k = 0; k < K; ++k) {
                // padding is -inf: exp gives 0 (a row of -inf is NaN everywhere anyway)
                vec4 e = exp4_f(r[k] - mx);
                sv += e;
                if (LOG == 0) r[k] = e;
            }
            TC tot = red_sum((sv.x + sv.y) + (sv.z + sv.w));
            TC a = LOG != 0 ? LN(tot) : TC(1) / tot;
            for (int k = 0; k < K; ++k) {
                int q = lane + k * lanes;
                if (q < n4) y4[c4 + q] = LOG != 0 ? (r[k] - mx) - a : r[k] * a;
            }
            continue;
        }
#endif
        TC m = NEG_INF, s = TC(0);
#if IN_BITS == 32
        if (VEC == 4) {
            for (int q = lane; q < n4; q += lanes) {
                vec4 v = x4[b4 + q];
                upd(v.x, m, s); upd(v.y, m, s); upd(v.z, m, s); upd(v.w, m, s);
            }
        } else
#endif
        for (int i = lane; i < n; i += lanes) upd(TC(x[ib + i * sl]), m, s);
        TC mx = red_max(m);
        // a lane that saw only -inf has s = 0 (and exp(-inf - -inf) would be NaN); NaN stays
        TC tot = red_sum(s == TC(0) ? TC(0) : s * EXP(m - mx));
        TC a = LOG != 0 ? LN(tot) : TC(1) / tot;
#if IN_BITS == 32
        if (VEC == 4) {
            for (int q = lane; q < n4; q += lanes) {
                vec4 v = x4[b4 + q];
                y4[c4 + q] = vec4(outv(v.x, mx, a), outv(v.y, mx, a), outv(v.z, mx, a),
                                  outv(v.w, mx, a));
            }
            continue;
        }
#endif
        for (int i = lane; i < n; i += lanes)
            y[ob + i * inner] = IN_TS(outv(TC(x[ib + i * sl]), mx, a));
    }
}
