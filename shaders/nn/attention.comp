#version 450
// Fused attention (docs/kernels/attention.md), FlashAttention-2 style, for q (N, H, L, E),
// k (N, H, S, E), v (N, H, S, Ev): s = q k^T scale + bias (key j > query i masked when CAUSAL),
// p = softmax(s) per row, out = (p drop) v, lse = the row logsumexp. grilly/backends/vulkan/
// attention.py makes the dispatches:
//   OP 0 forward: one workgroup per (n, h, block of R query rows); out and lse.
//   OP 1 backward prep: one invocation per query row: aux = [lse' | D], D_i = g_i . out_i and
//        lse' = lse, or +inf on a fully masked row (then exp(s - lse') = 0: the row takes no
//        part in any gradient) with D = 0.
//   OP 2 dQ: one workgroup per (n, h, block of R query rows), keys in shared tiles.
//   OP 3 dK, dV: one workgroup per (n, h, block of R key rows), queries in shared tiles.
//   OP 4, 5, 6: the row passes of attention.py's composition (scores and their gradients
//        materialized, the products batched GEMMs): see probs, dscores and live_g below.
// Lanes: RB adjacent rows (queries; keys for OP 3) belong to a cluster of T adjacent lanes
// (T = 1, 2, 4 or 8, within one subgroup); lane t of the cluster holds the feature quads t,
// t + T, t + 2T, ... of its rows' q / k (NQ quads a row) and v-sized vectors (acc, g, v, dv:
// NV quads) in registers, so registers stay bounded for head dims up to 256. A dot product is
// each lane's part summed over the cluster by subgroupShuffleXor (every lane gets the same bits,
// so a cluster stays uniform). R = RB * WG / T rows per workgroup. The other side's rows come
// through shared memory, BT rows a tile, stored as quads zero-padded to T * NQ (T * NV) a row;
// every cluster reads the same tile row at once (a broadcast) and the T lanes of a cluster T
// adjacent quads (no bank conflict). Each quad read from shared memory serves the RB rows of
// the cluster (RB = 2 for float32 at T >= 4, where it measured faster).
// Tile rows are taken four at a time: four dot products per row, one shuffle reduction of the
// four, four independent exps (in the backward one per lane of the cluster: cexp4).
// Operands: bindings 2..7 are q, k, v, g, bias, drop (an unused one is bound to another
// buffer and never read); q, k, v, g are read through (n, h, row) strides with unit feature
// stride, bias through four strides (0 on a broadcast axis), drop, out, lse, aux, dq, dk|dv
// are contiguous. Binding 0 is written (out, aux, dq, or dk then dv in one buffer), binding 1 is
// lse (OP 0 writes it, OP 1 reads it) or aux (OP 2, 3).
// exp/log: the project's float32 / float64 libraries (no driver built-ins; see expn); masked
// scores are -inf, and exp is never asked for exp(-inf - -inf).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : enable
#define OWN_PUSH_CONSTANTS 1
#include "../common.glsl"
#include "../io16.glsl"
#if IN_BITS == 64
#include "../math_f64.glsl"
#define LN log_d
#define DIV(a, b) ((a) / (b))
#define TC4 dvec4
#define POS_INF D_INF
#define NAN_V D_NAN
#else
#include "../math_f32.glsl"
#define LN log_f
#define DIV(a, b) div_f(a, b)
#define TC4 vec4
#define POS_INF F_INF
#define NAN_V F_NAN
#endif
#define TC IN_TC
#define TS IN_TS
#define NEG_INF (-POS_INF)
#define UNR [[unroll]]   // loops over a lane's quads and rows: registers, never indexed memory

layout(constant_id = 0) const int OP = 0;
// constant_id 1 is common.glsl's NDIM (unused here)
layout(constant_id = 2) const int T = 1;        // lanes per cluster
layout(constant_id = 3) const int NQ = 1;       // quads of q / k per lane and row
layout(constant_id = 4) const int NV = 1;       // quads of v / g / out per lane and row
layout(constant_id = 5) const int BT = 32;      // rows per shared tile
layout(constant_id = 6) const int CAUSAL = 0;
layout(constant_id = 7) const int HAS_BIAS = 0;
layout(constant_id = 8) const int HAS_DROP = 0;
layout(constant_id = 9) const int TILE = 1;     // quads of the shared tile: BT * T * (NQ + NV)
layout(constant_id = 10) const int RB = 1;      // rows per cluster

const int RQ = T * NQ;        // quads per shared row of q / k
const int RV = T * NV;        // quads per shared row of v / g
const int R = RB * (WG / T);  // rows per workgroup

layout(push_constant) uniform APC {
    int sc[2];      // scale: float32 bits, or a double's two words
    int H, L, S, E, EV, NH;   // NH = N * H
    int off[8];     // element offsets of bindings 0..7
    int st[16];     // q (n, h, l) 0..2 (OP 1: out), k 3..5 (OP 1: lse), v 6..8, bias 9..12, g 13..15
} pc;

// float16 and bfloat16 (IN_BITS 16; bfloat16 as its bits: io16.glsl) are storage only: q, k, v,
// g, bias, drop, out, dq, dk and dv are 16-bit, registers and arithmetic float32 as in the
// float32 variant, and lse and aux stay float32
// (binding 1, and binding 0 in OP 1: a second block on that binding), so the backward's
// exp(s - lse) sees the forward's lse unrounded. The composition's passes (OP 4-6) are float32
// and float64 only.
#if IN_BITS == 16
#define TA float
layout(set = 0, binding = 0) buffer B0A { float a0[]; };
#define AUX0 a0
#else
#define TA TS
#define AUX0 o0
#endif
layout(set = 0, binding = 0) buffer B0 { TS o0[]; };
layout(set = 0, binding = 1) buffer B1 { TA o1[]; };
layout(set = 0, binding = 2) readonly buffer B2 { TS qb[]; };
layout(set = 0, binding = 3) readonly buffer B3 { TS kb[]; };
layout(set = 0, binding = 4) readonly buffer B4 { TS vb[]; };
layout(set = 0, binding = 5) readonly buffer B5 { TS gb[]; };
layout(set = 0, binding = 6) readonly buffer B6 { TS bb[]; };
layout(set = 0, binding = 7) readonly buffer B7 { TS db[]; };

shared TC4 tile[TILE];   // OP 0, 2: K rows then V rows; OP 3: Q rows (scaled) then g rows
shared TC rowv[64];      // OP 3: lse' of the tile's queries, then their D (BT <= 32)

TC scale() {
#if IN_BITS == 64
    return packDouble2x32(uvec2(uint(pc.sc[0]), uint(pc.sc[1])));
#else
    return uintBitsToFloat(uint(pc.sc[0]));
#endif
}

// element offset of row (n, h, i) of the operand whose strides start at pc.st[k]
int row3(int k, int n, int h, int i) { return n * pc.st[k] + h * pc.st[k + 1] + i * pc.st[k + 2]; }

TC bias_at(int n, int h, int i, int j) {
    return LD_IN(bb[pc.off[6] + n * pc.st[9] + h * pc.st[10] + i * pc.st[11] + j * pc.st[12]]);
}
TC drop_at(int nh, int i, int j) { return LD_IN(db[pc.off[7] + (nh * pc.L + i) * pc.S + j]); }

// features e0..e0+3 of a row starting at element `base`, zero from `lim` on
#define LOAD4(B, base, e0, lim) TC4( \
    (e0) < (lim) ? LD_IN(B[(base) + (e0)]) : TC(0), \
    (e0) + 1 < (lim) ? LD_IN(B[(base) + (e0) + 1]) : TC(0), \
    (e0) + 2 < (lim) ? LD_IN(B[(base) + (e0) + 2]) : TC(0), \
    (e0) + 3 < (lim) ? LD_IN(B[(base) + (e0) + 3]) : TC(0))

// a lane's quads of row `row` (its c-th at feature (t + T c) * 4) of buffer B into X[at..]
#define LOAD_ROW(X, at, N, B, base, ok, lim, mul) \
    UNR for (int c = 0; c < (N); ++c) \
        X[(at) + c] = (ok) ? LOAD4(B, base, (t + T * c) * 4, lim) * (mul) : TC4(0);

// rows r0.. (BT of them, row stride rs, `nrows` valid, `feats` features) of buffer B from
// element `base` into tile[at..], W quads a row, times `mul`; cooperative over the workgroup
#define FILL(B, base, rs, r0, nrows, feats, W, at, mul) \
    for (int x = int(gl_LocalInvocationID.x); x < BT * (W); x += WG) { \
        int rr = x / (W), e0 = (x - rr * (W)) * 4, row = (r0) + rr; \
        tile[(at) + x] = row < (nrows) ? LOAD4(B, (base) + row * (rs), e0, feats) * (mul) \
                                       : TC4(0); \
    }

// a lane's quads of a row (t + T c for c < N) to the contiguous row at element `base`
#define STORE_ROW(X, at, N, base, lim, mul) \
    UNR for (int c = 0; c < (N); ++c) \
        UNR for (int u = 0; u < 4; ++u) { \
            int e = (t + T * c) * 4 + u; \
            if (e < (lim)) o0[(base) + e] = ST_IN(X[(at) + c][u] * (mul)); \
        }

// four tile rows from `first`: those at or past `end` read row `first` instead (in range) and
// get weight 0
#define ROWS4(rr, first, end) \
    int rr[4]; \
    UNR for (int u = 0; u < 4; ++u) rr[u] = (first) + u < (end) ? (first) + u : (first);

// S[b][u] = X_b . tile row rr[u] (quads from tile[at]) for the cluster's RB rows b, summed over
// its lanes: every tile quad read serves the RB rows
#define DOTS4(S, X, N, at, W, rr) \
    UNR for (int b = 0; b < RB; ++b) S[b] = TC4(0); \
    UNR for (int u = 0; u < 4; ++u) { \
        TC4 d_[RB]; \
        UNR for (int b = 0; b < RB; ++b) d_[b] = TC4(0); \
        UNR for (int c = 0; c < (N); ++c) { \
            TC4 y_ = tile[(at) + rr[u] * (W) + t + T * c]; \
            UNR for (int b = 0; b < RB; ++b) d_[b] += X[b * (N) + c] * y_; \
        } \
        UNR for (int b = 0; b < RB; ++b) S[b][u] = hsum(d_[b]); \
    } \
    UNR for (int b = 0; b < RB; ++b) S[b] = csum4(S[b]);

// X_b += sum_u W_b[u] * tile row rr[u] (quads from tile[at]) for the cluster's RB rows b
#define AXPY4(X, N, Wt, at, W, rr) \
    UNR for (int c = 0; c < (N); ++c) { \
        int a_ = (at) + t + T * c; \
        TC4 y0 = tile[a_ + rr[0] * (W)], y1 = tile[a_ + rr[1] * (W)], \
            y2 = tile[a_ + rr[2] * (W)], y3 = tile[a_ + rr[3] * (W)]; \
        UNR for (int b = 0; b < RB; ++b) \
            X[b * (N) + c] += Wt[b].x * y0 + Wt[b].y * y1 + Wt[b].z * y2 + Wt[b].w * y3; \
    }

// the sums over a cluster's lanes (XOR butterfly: every lane adds the same values in the same
// pairs, so every lane gets the same result)
TC4 csum4(TC4 v) {
    for (int o = 1; o < T; o <<= 1) v += subgroupShuffleXor(v, uint(o));
    return v;
}
TC hsum(TC4 v) { return (v.x + v.y) + (v.z + v.w); }

// e^x for x = a score minus its row's maximum or logsumexp (<= 0 up to rounding, or -inf).
// float32: exp_f's reduction and polynomial (the same value down to 2^-126) without its
// overflow and subnormal cases: below 2^-126 (x < -87.3) it is 0, which next to the row's
// largest term (1) changes nothing. float64: exp_d.
#if IN_BITS == 64
TC expn(TC x) { return exp_d(x); }
#else
float expn(float x) {
    if (isnan(x)) return x;
    int k;
    float p = 1.0 + el_expm1_r(el_exp_reduce(clamp(x, -104.0, 88.0), k));
    return k < -126 ? 0.0 : p * el_pow2i(k);
}
#endif
TC4 expn4(TC4 x) { return TC4(expn(x.x), expn(x.y), expn(x.z), expn(x.w)); }

// e^x of four scores held alike by every lane of a cluster: each lane computes a share (T >= 4:
// one, T = 2: two) and the others come by shuffle, so a (row, key) costs one exp, not T. Used
// by the backward (5% faster on an H200); the forward, whose exps sit inside its online
// softmax's branches, ran up to 1.8x slower with it and computes them in every lane (expn4).
TC4 cexp4(TC4 x, int t) {
    if (T == 1) return expn4(x);
    uint base = gl_SubgroupInvocationID - uint(t);   // the cluster's first lane
    if (T == 2) {
        TC e0 = expn(t == 0 ? x.x : x.y), e1 = expn(t == 0 ? x.z : x.w);
        return TC4(subgroupShuffle(e0, base), subgroupShuffle(e0, base + 1u),
                   subgroupShuffle(e1, base), subgroupShuffle(e1, base + 1u));
    }
    int u = t & 3;
    TC e = expn(u == 0 ? x.x : (u == 1 ? x.y : (u == 2 ? x.z : x.w)));
    return TC4(subgroupShuffle(e, base), subgroupShuffle(e, base + 1u),
               subgroupShuffle(e, base + 2u), subgroupShuffle(e, base + 3u));
}

// ---- OP 0: forward, RB query rows per cluster -------------------------------------------------
void forward(int n, int h, int nh, int i0, int cl, int t) {
    TC sc = scale();
    TC4 q[RB * NQ], acc[RB * NV];
    TC m[RB], den[RB];   // running row maxima and denominators
    int mine[RB];        // the keys row b sees: [0, mine[b])
    int most = 0;        // the cluster's most (uniform over it: the shuffles)
    UNR for (int b = 0; b < RB; ++b) {
        int i = i0 + cl * RB + b;
        bool live = i < pc.L;
        LOAD_ROW(q, b * NQ, NQ, qb, pc.off[2] + row3(0, n, h, live ? i : 0), live, pc.E, sc)
        UNR for (int c = 0; c < NV; ++c) acc[b * NV + c] = TC4(0);
        m[b] = NEG_INF;
        den[b] = TC(0);
        mine[b] = live ? (CAUSAL != 0 ? min(pc.S, i + 1) : pc.S) : 0;
        most = max(most, mine[b]);
    }
    // keys some row of the block sees (uniform over the workgroup: the barriers)
    int send = CAUSAL != 0 ? min(pc.S, i0 + R) : pc.S;
    int kbase = pc.off[3] + n * pc.st[3] + h * pc.st[4];
    int vbase = pc.off[4] + n * pc.st[6] + h * pc.st[7];
    for (int j0 = 0; j0 < send; j0 += BT) {
        barrier();   // the previous tile has been read
        FILL(kb, kbase, pc.st[5], j0, pc.S, pc.E, RQ, 0, TC(1));
        FILL(vb, vbase, pc.st[8], j0, pc.S, pc.EV, RV, BT * RQ, TC(1));
        barrier();
        int jn = min(BT, most - j0);
        for (int jj = 0; jj < jn; jj += 4) {
            ROWS4(kr, jj, jn)
            TC4 s[RB];
            DOTS4(s, q, NQ, 0, RQ, kr)
            UNR for (int b = 0; b < RB; ++b) {
                int i = i0 + cl * RB + b;
                UNR for (int u = 0; u < 4; ++u) {
                    int j = j0 + jj + u;
                    if (j >= mine[b]) s[b][u] = NEG_INF;
                    else if (HAS_BIAS != 0) s[b][u] += bias_at(n, h, i, j);
                }
                // online softmax: a new maximum rescales what came before (rare after the first
                // keys); while every score so far is -inf there is nothing to add
                TC mx = max(max(s[b].x, s[b].y), max(s[b].z, s[b].w));
                if (mx > m[b]) {
                    TC a = expn(m[b] - mx);   // 0 while m is -inf
                    den[b] *= a;
                    UNR for (int c = 0; c < NV; ++c) acc[b * NV + c] *= a;
                    m[b] = mx;
                }
                if (m[b] == NEG_INF) {
                    s[b] = TC4(0);
                } else {
                    s[b] = expn4(s[b] - m[b]);   // masked: exp(-inf) = 0
                    den[b] += hsum(s[b]);
                    if (HAS_DROP != 0)
                        UNR for (int u = 0; u < 4; ++u)
                            if (j0 + jj + u < mine[b]) s[b][u] *= drop_at(nh, i, j0 + jj + u);
                }
            }
            AXPY4(acc, NV, s, BT * RQ, RV, kr)
        }
    }
    UNR for (int b = 0; b < RB; ++b) {
        int i = i0 + cl * RB + b;
        if (i < pc.L) {
            // a fully masked row: den = 0, lse = -inf and a NaN output row
            bool seen = den[b] > TC(0);
            TC inv = seen ? DIV(TC(1), den[b]) : NAN_V;
            STORE_ROW(acc, b * NV, NV, pc.off[0] + (nh * pc.L + i) * pc.EV, pc.EV, inv)
            if (t == 0) o1[pc.off[1] + nh * pc.L + i] = TA(seen ? m[b] + LN(den[b]) : NEG_INF);
        }
    }
}

// ---- OP 1: aux = [lse' | D] per query row ------------------------------------------------------
void prep() {
    uint rows = uint(pc.NH * pc.L);
    for (uint x = gl_GlobalInvocationID.x; x < rows; x += gl_NumWorkGroups.x * WG) {
        int nh = int(x) / pc.L, i = int(x) - nh * pc.L, n = nh / pc.H, h = nh - n * pc.H;
        TC ls = TC(o1[pc.off[1] + row3(3, n, h, i)]);
        bool dead = ls == NEG_INF;
        TC d = TC(0);
        if (!dead) {
            int orow = pc.off[2] + row3(0, n, h, i), grow = pc.off[5] + row3(13, n, h, i);
            for (int e = 0; e < pc.EV; ++e) d += LD_IN(gb[grow + e]) * LD_IN(qb[orow + e]);
        }
        AUX0[pc.off[0] + int(x)] = TA(dead ? POS_INF : ls);
        AUX0[pc.off[0] + int(rows) + int(x)] = TA(d);
    }
}

// ---- OP 2: dQ_i = scale sum_j dS_ij k_j, RB query rows per cluster ----------------------------
void grad_q(int n, int h, int nh, int i0, int cl, int t) {
    TC sc = scale();
    TC4 q[RB * NQ], g[RB * NV], dq[RB * NQ];
    TC ls[RB], dd[RB];   // lse' (+inf: no part in any gradient) and D of each row
    int mine[RB];
    int most = 0;
    UNR for (int b = 0; b < RB; ++b) {
        int i = i0 + cl * RB + b;
        bool live = i < pc.L;
        int arow = pc.off[1] + nh * pc.L + (live ? i : 0);
        ls[b] = live ? TC(o1[arow]) : POS_INF;
        bool act = ls[b] != POS_INF;
        dd[b] = act ? TC(o1[arow + pc.NH * pc.L]) : TC(0);
        LOAD_ROW(q, b * NQ, NQ, qb, pc.off[2] + row3(0, n, h, act ? i : 0), act, pc.E, sc)
        LOAD_ROW(g, b * NV, NV, gb, pc.off[5] + row3(13, n, h, act ? i : 0), act, pc.EV, TC(1))
        UNR for (int c = 0; c < NQ; ++c) dq[b * NQ + c] = TC4(0);
        mine[b] = act ? (CAUSAL != 0 ? min(pc.S, i + 1) : pc.S) : 0;
        most = max(most, mine[b]);
    }
    int send = CAUSAL != 0 ? min(pc.S, i0 + R) : pc.S;
    int kbase = pc.off[3] + n * pc.st[3] + h * pc.st[4];
    int vbase = pc.off[4] + n * pc.st[6] + h * pc.st[7];
    for (int j0 = 0; j0 < send; j0 += BT) {
        barrier();
        FILL(kb, kbase, pc.st[5], j0, pc.S, pc.E, RQ, 0, TC(1));
        FILL(vb, vbase, pc.st[8], j0, pc.S, pc.EV, RV, BT * RQ, TC(1));
        barrier();
        int jn = min(BT, most - j0);
        for (int jj = 0; jj < jn; jj += 4) {
            ROWS4(kr, jj, jn)
            TC4 s[RB], dp[RB];   // q_i scale . k_j and g_i . v_j of four keys
            DOTS4(s, q, NQ, 0, RQ, kr)
            DOTS4(dp, g, NV, BT * RQ, RV, kr)
            UNR for (int b = 0; b < RB; ++b) {
                int i = i0 + cl * RB + b;
                TC4 x = s[b] - ls[b], dr = TC4(1);
                UNR for (int u = 0; u < 4; ++u) {
                    int j = j0 + jj + u;
                    if (j >= mine[b]) {
                        x[u] = NEG_INF;
                    } else {
                        if (HAS_BIAS != 0) x[u] += bias_at(n, h, i, j);
                        if (HAS_DROP != 0) dr[u] = drop_at(nh, i, j);
                    }
                }
                s[b] = cexp4(x, t) * (dp[b] * dr - dd[b]);   // dS; masked: p = 0
            }
            AXPY4(dq, NQ, s, 0, RQ, kr)
        }
    }
    UNR for (int b = 0; b < RB; ++b) {
        int i = i0 + cl * RB + b;
        if (i < pc.L) STORE_ROW(dq, b * NQ, NQ, pc.off[0] + (nh * pc.L + i) * pc.E, pc.E, sc)
    }
}

// ---- OP 3: dK_j = scale sum_i dS_ij q_i, dV_j = sum_i p_ij drop_ij g_i, RB keys per cluster ---
void grad_kv(int n, int h, int nh, int j0, int cl, int t) {
    TC sc = scale();
    TC4 k[RB * NQ], v[RB * NV], dk[RB * NQ], dv[RB * NV];
    int first[RB];   // the queries that see key b start at j (causal) or 0
    int least = pc.L;
    UNR for (int b = 0; b < RB; ++b) {
        int j = j0 + cl * RB + b;
        bool live = j < pc.S;
        LOAD_ROW(k, b * NQ, NQ, kb, pc.off[3] + row3(3, n, h, live ? j : 0), live, pc.E, TC(1))
        LOAD_ROW(v, b * NV, NV, vb, pc.off[4] + row3(6, n, h, live ? j : 0), live, pc.EV, TC(1))
        UNR for (int c = 0; c < NQ; ++c) dk[b * NQ + c] = TC4(0);
        UNR for (int c = 0; c < NV; ++c) dv[b * NV + c] = TC4(0);
        first[b] = live ? (CAUSAL != 0 ? j : 0) : pc.L;
        least = min(least, first[b]);
    }
    int abase = pc.off[1] + nh * pc.L;
    int qbase = pc.off[2] + n * pc.st[0] + h * pc.st[1];
    int gbase = pc.off[5] + n * pc.st[13] + h * pc.st[14];
    // causal: queries before the block's first key see none of its keys
    for (int i0 = CAUSAL != 0 ? j0 : 0; i0 < pc.L; i0 += BT) {
        barrier();
        FILL(qb, qbase, pc.st[2], i0, pc.L, pc.E, RQ, 0, sc);
        // g rows of fully masked queries are zero: their (maybe NaN) gradient takes no part
        for (int x = int(gl_LocalInvocationID.x); x < BT * RV; x += WG) {
            int rr = x / RV, e0 = (x - rr * RV) * 4, row = i0 + rr;
            bool use = row < pc.L && TC(o1[abase + row]) != POS_INF;
            tile[BT * RQ + x] = use ? LOAD4(gb, gbase + row * pc.st[15], e0, pc.EV) : TC4(0);
        }
        for (int x = int(gl_LocalInvocationID.x); x < BT; x += WG) {
            bool in_l = i0 + x < pc.L;
            rowv[x] = in_l ? TC(o1[abase + i0 + x]) : POS_INF;
            rowv[BT + x] = in_l ? TC(o1[abase + pc.NH * pc.L + i0 + x]) : TC(0);
        }
        barrier();
        int iend = min(BT, pc.L - i0);
        for (int ii = max(least - i0, 0); ii < iend; ii += 4) {
            ROWS4(qr, ii, iend)
            TC4 s[RB], dp[RB];   // q_i scale . k_j and g_i . v_j of four queries
            DOTS4(s, k, NQ, 0, RQ, qr)
            DOTS4(dp, v, NV, BT * RQ, RV, qr)
            TC4 lq = TC4(rowv[qr[0]], rowv[qr[1]], rowv[qr[2]], rowv[qr[3]]);
            TC4 dq = TC4(rowv[BT + qr[0]], rowv[BT + qr[1]], rowv[BT + qr[2]], rowv[BT + qr[3]]);
            UNR for (int b = 0; b < RB; ++b) {
                int j = j0 + cl * RB + b;
                // lse' = +inf (a fully masked row) or a -inf score: p = 0
                TC4 x = s[b] - lq, dr = TC4(1);
                UNR for (int u = 0; u < 4; ++u) {
                    int i = i0 + ii + u;
                    if (ii + u >= iend || i < first[b]) {
                        x[u] = NEG_INF;
                    } else {
                        if (HAS_BIAS != 0) x[u] += bias_at(n, h, i, j);
                        if (HAS_DROP != 0) dr[u] = drop_at(nh, i, j);
                    }
                }
                TC4 p = cexp4(x, t);
                s[b] = p * (dp[b] * dr - dq);   // dS
                dp[b] = p * dr;
            }
            AXPY4(dv, NV, dp, BT * RQ, RV, qr)
            AXPY4(dk, NQ, s, 0, RQ, qr)
        }
    }
    UNR for (int b = 0; b < RB; ++b) {
        int j = j0 + cl * RB + b;
        if (j < pc.S) {
            STORE_ROW(dk, b * NQ, NQ, pc.off[0] + (nh * pc.S + j) * pc.E, pc.E, TC(1))
            STORE_ROW(dv, b * NV, NV, pc.off[0] + pc.NH * pc.S * pc.E + (nh * pc.S + j) * pc.EV,
                      pc.EV, TC(1))
        }
    }
}

// ---- the composition's row passes (attention.py: _composed), around batched GEMMs -------------
#if IN_BITS != 16
// the sum and maximum of a value over a cluster's T lanes (every lane gets the same bits)
TC csum(TC v) {
    for (int o = 1; o < T; o <<= 1) v += subgroupShuffleXor(v, uint(o));
    return v;
}
TC cmax(TC v) {
    for (int o = 1; o < T; o <<= 1) v = max(v, subgroupShuffleXor(v, uint(o)));
    return v;
}

// OP 4: scores q k^T (NH, L, S) at binding 0 -> the (dropped) probabilities in place, the row
// logsumexp to binding 1; one row per cluster of T lanes, lane t taking keys t + T c. Rows of up
// to T * HELD keys stay in registers (one read, one exp a score); longer ones are read three
// times. A fully masked row: lse -inf and NaN probabilities (a NaN output row, as the fused
// forward's).
const int HELD = 8;
void probs(int cl, int t) {
    TC sc = scale();
    int rows = pc.NH * pc.L, per = WG / T;
    bool held = pc.S <= T * HELD;
    for (int x = int(gl_WorkGroupID.x) * per + cl; x < rows; x += int(gl_NumWorkGroups.x) * per) {
        int nh = x / pc.L, i = x - nh * pc.L, n = nh / pc.H, h = nh - n * pc.H;
        int base = pc.off[0] + x * pc.S;
        int lim = CAUSAL != 0 ? min(pc.S, i + 1) : pc.S;   // the keys row i sees
#define SCORE(j) (sc * TC(o0[base + (j)]) + (HAS_BIAS != 0 ? bias_at(n, h, i, j) : TC(0)))
        TC v[HELD];
        TC mx = NEG_INF;
        if (held) {
            UNR for (int c = 0; c < HELD; ++c) {
                int j = t + T * c;
                v[c] = j < lim ? SCORE(j) : NEG_INF;
                if (v[c] > mx) mx = v[c];
            }
        } else {
            for (int j = t; j < lim; j += T) {
                TC s = SCORE(j);
                if (s > mx) mx = s;
            }
        }
        mx = cmax(mx);
        TC den = TC(0);
        if (held) {
            UNR for (int c = 0; c < HELD; ++c) {
                v[c] = t + T * c < lim && mx != NEG_INF ? expn(v[c] - mx) : TC(0);
                den += v[c];
            }
        } else if (mx != NEG_INF) {
            for (int j = t; j < lim; j += T) den += expn(SCORE(j) - mx);
        }
        den = csum(den);
        bool seen = den > TC(0);
        TC inv = seen ? DIV(TC(1), den) : NAN_V;
        for (int c = 0, j = t; j < pc.S; ++c, j += T) {
            TC e = TC(0);
            if (held) {
                UNR for (int u = 0; u < HELD; ++u) if (u == c) e = v[u];
            } else if (j < lim) {
                e = expn(SCORE(j) - mx);
            }
            TC p = e * inv;
            if (!seen) p = NAN_V;
            else if (HAS_DROP != 0 && j < lim) p *= drop_at(nh, i, j);
            o0[base + j] = TS(p);
        }
#undef SCORE
        if (t == 0) o1[pc.off[1] + x] = TS(seen ? mx + LN(den) : NEG_INF);
    }
}

// OP 5: with s = q k^T at binding 0, dP' = g v^T at binding 1 (both (NH, L, S)) and aux = [lse'
// | D] at binding 2 (OP 1's): p = exp(s scale + bias - lse') (0 where masked, or on a fully
// masked row), binding 0 <- p drop (dV = that^T g), binding 1 <- dS scale = p (dP' drop - D)
// scale (dQ = that k, dK = that^T q). One row per cluster of T lanes.
void dscores(int cl, int t) {
    TC sc = scale();
    int rows = pc.NH * pc.L, per = WG / T;
    for (int x = int(gl_WorkGroupID.x) * per + cl; x < rows; x += int(gl_NumWorkGroups.x) * per) {
        int nh = x / pc.L, i = x - nh * pc.L, n = nh / pc.H, h = nh - n * pc.H;
        TC ls = TC(qb[pc.off[2] + x]), d = TC(qb[pc.off[2] + rows + x]);
        int lim = ls == POS_INF ? 0 : (CAUSAL != 0 ? min(pc.S, i + 1) : pc.S);
        int b0 = pc.off[0] + x * pc.S, b1 = pc.off[1] + x * pc.S;
        for (int j = t; j < pc.S; j += T) {
            TC p = TC(0), ds = TC(0);
            if (j < lim) {
                TC s = sc * TC(o0[b0 + j]);
                if (HAS_BIAS != 0) s += bias_at(n, h, i, j);
                TC dr = HAS_DROP != 0 ? drop_at(nh, i, j) : TC(1);
                p = expn(s - ls);
                ds = p * (TC(o1[b1 + j]) * dr - d) * sc;
                p *= dr;
            }
            o0[b0 + j] = TS(p);
            o1[b1 + j] = TS(ds);
        }
    }
}

// OP 6: g with the rows of fully masked queries (lse' = +inf in aux at binding 1) zeroed, to
// binding 0 (contiguous (NH, L, Ev)): their (maybe NaN) gradient takes no part in dV
void live_g() {
    uint total = uint(pc.NH * pc.L * pc.EV);
    for (uint x = gl_GlobalInvocationID.x; x < total; x += gl_NumWorkGroups.x * WG) {
        int row = int(x / uint(pc.EV)), e = int(x) - row * pc.EV;
        int nh = row / pc.L, i = row - nh * pc.L, n = nh / pc.H, h = nh - n * pc.H;
        bool dead = TC(o1[pc.off[1] + row]) == POS_INF;
        o0[pc.off[0] + int(x)] = dead ? TS(0) : gb[pc.off[5] + row3(13, n, h, i) + e];
    }
}
#endif

void main() {
    if (OP == 1) {
        prep();
        return;
    }
    if (OP == 4 || OP == 5 || OP == 6) {
#if IN_BITS != 16
        if (OP == 4) probs(int(gl_LocalInvocationID.x) / T, int(gl_LocalInvocationID.x) % T);
        else if (OP == 5) dscores(int(gl_LocalInvocationID.x) / T, int(gl_LocalInvocationID.x) % T);
        else live_g();
#endif
        return;
    }
    int lane = int(gl_LocalInvocationID.x), t = lane % T, cl = lane / T;
    int rows = OP == 3 ? pc.S : pc.L;
    int nblk = (rows + R - 1) / R;
    uint units = uint(pc.NH * nblk);
    // one (n, h, row block) per workgroup, grid-stride (uniform over the workgroup)
    for (uint u = gl_WorkGroupID.x; u < units; u += gl_NumWorkGroups.x) {
        int nh = int(u) / nblk, b0 = (int(u) - nh * nblk) * R;
        int n = nh / pc.H, h = nh - n * pc.H;
        if (OP == 0) forward(n, h, nh, b0, cl, t);
        else if (OP == 2) grad_q(n, h, nh, b0, cl, t);
        else grad_kv(n, h, nh, b0, cl, t);
    }
}
