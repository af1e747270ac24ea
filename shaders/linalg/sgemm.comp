#version 450
// float32 matmul for large operands: 128x128 output tiles per workgroup (S64: 64x64 and WIDE:
// 128x256, below), 16-deep k slabs double-buffered in shared memory, 8x8 outputs per invocation
// held as two 4x4 blocks (rows 4ty.. and 64+4ty.., columns 4tx.. and 64+4tx..). Invocations
// 0-127 load A, 128-255 load B; every global and shared access is a vec4.
//
// An operand is read in the layout it has, without a copy (backward's x^T @ g and g @ W^T):
// - "row" loading (A as (M, K), or B transposed: B^T stored as (N, K)): k is contiguous; a
//   loader takes 4 rows x one k quad and stores the slab transposed, as whole vec4s of 4 rows;
// - "column" loading (B as (K, N), or A transposed: A^T stored as (K, M)): the row index is
//   contiguous; a loader takes 4 k rows x one quad of 4 columns.
// Variants: TA (A transposed), TB (B transposed), EDGE (M, N, K need not be multiples of 128,
// 128 and 16: loads past the edge read zero, stores past it are skipped).
// The caller guarantees: the contiguous axis of each operand has unit stride and a length that is
// a multiple of 4, the other strides and the offsets are multiples of 4, N is a multiple of 4 and
// the output's columns are unit-strided (linalg.py: _sgemm_variant, matmul4_into).
// pc.shape = (batch, M, N, K, H2); a strides (batch, row, col, inner batch) at pc.st[0..3], b at
// pc.st[MAXD..]; pc.off = (out, a, b, bias) in floats. With H2 > 1 the batch index splits into
// (outer, inner) = (bi / H2, bi % H2), each with its own stride (attention's (n, h) heads, read
// from a packed projection in place). The output is contiguous (batch, M, N), or, where its row
// stride pc.st[2 MAXD + 2] is set, strided: (outer, inner) batch strides at pc.st[2 MAXD ..],
// rows at that stride (multiples of 4), unit columns.
// CLAMP_M (specialization constant 3, aligned variants) = 1: M need not be a multiple of the
// tile's rows: loads of A past row M - 1 read its last row (column loading: its last quad) and
// stores past it are skipped, so a product whose only ragged edge is M runs in one dispatch,
// its last row of tiles in the grid's last wave (an SNN layer's (8000, 4096) x (4096, 4096)).
// BIAS (specialization constant 2) = 1: out[m, n] = sum + bias[n], the bias (N,) a contiguous
// vector at binding 3 (offset a multiple of 4), added in float32 before the one rounding (a
// linear layer's forward: no separate pass over the output); = 2: out[m, n] = sum + bias[m],
// the bias (M,) unit-strided at any offset (a convolution's, per output channel).
#extension GL_EXT_control_flow_attributes : enable
#include "../common.glsl"
// unrolled in SPIR-V for the aligned variants (about 1.15x on the H100); the edge variants,
// with their bounds checks, ran slower unrolled
#ifdef EDGE
#define UNR
#else
#define UNR [[unroll]]
#endif

// F16: float16 operands and output (16-bit storage), float32 arithmetic, one rounding per output
// BF16: bfloat16's bits (16-bit storage, no extension): widened exactly on load, each output
// rounded to nearest even once (bf16.glsl, astype's rounding)
#ifdef F16
#define V4 f16vec4
#define TO_F32(x) vec4(x)
#define OUT4(x) f16vec4(x)
#elif defined(BF16)
#include "../bf16.glsl"
// bf16_bits of four floats (a 16-bit vector is built from a vector only)
u16vec4 bf16_bits4(vec4 f) {
    uvec4 u = floatBitsToUint(f);
    uvec4 r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    bvec4 nan = greaterThan(u & 0x7fffffffu, uvec4(0x7f800000u));
    return u16vec4(mix(r, ((u >> 16) & 0x8000u) | 0x7fc0u, nan));
}
#define V4 u16vec4
#define TO_F32(x) uintBitsToFloat(uvec4(x) << 16)
#define OUT4(x) bf16_bits4(x)
#else
#define V4 vec4
#define TO_F32(x) x
#define OUT4(x) x
#endif
layout(set = 0, binding = 0) writeonly buffer O { V4 res[]; };
layout(set = 0, binding = 1) readonly buffer A { V4 a[]; };
layout(set = 0, binding = 2) readonly buffer B { V4 b[]; };
layout(set = 0, binding = 3) readonly buffer C { V4 cb[]; };
// element i of the bias (BIAS = 2: any offset) through its vec4s
#define BIAS_AT(i) TO_F32(cb[(pc.off[3] + (i)) >> 2])[(pc.off[3] + (i)) & 3]
layout(constant_id = 2) const int BIAS = 0;

#ifdef TA
const bool TRANS_A = true;
#else
const bool TRANS_A = false;
#endif
#ifdef TB
const bool TRANS_B = true;
#else
const bool TRANS_B = false;
#endif
#ifdef EDGE
const bool GUARD = true;
#else
const bool GUARD = false;
#endif
layout(constant_id = 3) const int CLAMP_M = 0;
const bool GM = GUARD || CLAMP_M != 0;   // rows past M are possible: stores check them

// S64: 64x64 output tiles, 32-deep slabs, 4x4 outputs per invocation (rows 4ty.., columns
// 4tx..): a quarter of the registers, so more workgroups share an SM, for products whose
// 128x128 tiles would be half empty or too few to hide a short K (attention's batched
// (256, 256) x (256, 64) products). The slabs hold as many floats, so each loader's share is
// the same four vec4s.
//
// WIDE: 128x256 output tiles, 8-deep slabs, 16x8 outputs per invocation as four 4x4 blocks down
// (rows 4ty.., 32+4ty.., 64+4ty.., 96+4ty.., ty < 8) by two across (columns 4tx.. and
// 128+4tx.., tx < 32): about 1.1x the 128x128 tiles' speed on the H200 for the products
// linalg.py gives it (N a multiple of 256; 4096^3 nn 44.8 -> 47.3 TFLOP/s, tn 42.7 -> 47.6),
// not run with EDGE. Its loads: invocations 0-63 take A's slab, 64-191 B's, four vec4s each.
#ifdef S64
#define BM 64
#define BN 64
#define BK 32
#elif defined(WIDE)
#define BM 128
#define BN 256
#define BK 8
#else
#define BM 128
#define BN 128
#define BK 16
#endif
const int KQ = BK / 4;    // k quads of a slab: row loaders per row group
#ifdef WIDE
const int GA = BM / 4 * KQ;   // A's loaders (one 4x4 group each); B's follow
#define ELSE_B else if (loads_b)
#else
#define ELSE_B else
const int CQ = BM / 4;    // column quads of a slab: column loaders per k row
#endif
shared vec4 As[2][BK][BM / 4];   // As[k][q] = rows 4q..4q+3 at depth k
shared vec4 Bs[2][BK][BN / 4];   // Bs[k][q] = columns 4q..4q+3 at depth k

// load this invocation's four vec4s of the slab at depth k0 of operand BUF (ROWS: "row" loading,
// a compile-time constant, so each branch below is straight code)
#define FETCH(BUF, ROWS, R, r0, k0)                                                       \
    UNR for (int i = 0; i < 4; ++i) {                                                    \
        int row = ROWS ? r0 + 4 * g + i : r0 + 4 * cq;                                   \
        if (CLAMP_M != 0) row = min(row, R - (ROWS ? 1 : 4));                            \
        int k = k0 + (ROWS ? 4 * kq : kr + KQ * i);                                      \
        bool ok = !GUARD || (row < R && k < K);                                          \
        r[i] = ok ? TO_F32(BUF[ROWS ? base + row * ld + (k >> 2) : base + k * ld + (row >> 2)]) \
                  : vec4(0.0);                                                           \
    }
#define STORE(S, ROWS)                                                                   \
    if (ROWS) {                                                                          \
        for (int j = 0; j < 4; ++j)                                                      \
            S[cur][4 * kq + j][g] = vec4(r[0][j], r[1][j], r[2][j], r[3][j]);            \
    } else {                                                                             \
        for (int i = 0; i < 4; ++i) S[cur][kr + KQ * i][cq] = r[i];                      \
    }

void main() {
    int nb = pc.shape[0], M = pc.shape[1], N = pc.shape[2], K = pc.shape[3];
    int h2 = max(pc.shape[4], 1);         // inner batch count (0: one level)
    int orow = pc.st[2 * MAXD + 2];       // output row stride (0: contiguous (batch, M, N))
    int tm = (M + BM - 1) / BM, tn = (N + BN - 1) / BN;
    int ntiles = nb * tm * tn;
    int tid = int(gl_LocalInvocationID.x);
#ifdef WIDE
    int tx = tid % 32, ty = tid / 32;
    bool loads_a = tid < GA, loads_b = !loads_a && tid < 3 * GA;
    int e = loads_a ? tid : tid - GA;
    int CQ = loads_a ? BM / 4 : BN / 4;   // column quads of a slab: column loaders per k row
#else
    int tx = tid & 15, ty = tid >> 4;
    bool loads_a = tid < 128;
#endif
    // the stride (in vec4s) of the non-contiguous axis of this invocation's operand
    int ld = (loads_a ? (TRANS_A ? pc.st[2] : pc.st[1])
                      : (TRANS_B ? pc.st[MAXD + 2] : pc.st[MAXD + 1])) >> 2;
#ifndef WIDE
    int e = tid & 127;
#endif
    // row loaders: row group g (rows 4g..4g+3), k quad kq; column loaders: k rows kr + KQ i,
    // column quad cq
    int g = e / KQ, kq = e % KQ, kr = e / CQ, cq = e % CQ;
    for (int t = int(gl_WorkGroupID.x); t < ntiles; t += int(gl_NumWorkGroups.x)) {
        int bi = t / (tm * tn);
        int rem = t - bi * tm * tn;
        int m0 = (rem / tn) * BM, n0 = (rem - (rem / tn) * tn) * BN;
        // two batch levels (bi = bo * H2 + bj): a (n, h) grid of heads read in place
        int bo = bi / h2, bj = bi - bo * h2;
        int sa = loads_a ? 0 : MAXD;
        int base = (pc.off[loads_a ? 1 : 2] + bo * pc.st[sa] + bj * pc.st[sa + 3]) >> 2;
        vec4 r[4];
        if (loads_a) { FETCH(a, !TRANS_A, M, m0, 0) } ELSE_B { FETCH(b, TRANS_B, N, n0, 0) }
#ifdef S64
        vec4 acc[4][1];
        for (int i = 0; i < 4; ++i) acc[i][0] = vec4(0.0);
#elif defined(WIDE)
        vec4 acc[16][2];
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 2; ++j) acc[i][j] = vec4(0.0);
#else
        vec4 acc[8][2];
        for (int i = 0; i < 8; ++i) { acc[i][0] = vec4(0.0); acc[i][1] = vec4(0.0); }
#endif
        int cur = 0;
        for (int k0 = 0; k0 < K; k0 += BK) {
            if (loads_a) { STORE(As, !TRANS_A) } ELSE_B { STORE(Bs, TRANS_B) }
            barrier();
            int kn = k0 + BK;
            if (kn < K) {
                // prefetch the next slab into registers while this one is multiplied
                if (loads_a) { FETCH(a, !TRANS_A, M, m0, kn) } ELSE_B { FETCH(b, TRANS_B, N, n0, kn) }
            }
#ifdef S64
            UNR for (int kk = 0; kk < BK; ++kk) {
                vec4 a0 = As[cur][kk][ty], b0 = Bs[cur][kk][tx];
                UNR for (int i = 0; i < 4; ++i) acc[i][0] = fma(vec4(a0[i]), b0, acc[i][0]);
            }
#elif defined(WIDE)
            UNR for (int kk = 0; kk < BK; ++kk) {
                vec4 av[4], bv[2];
                UNR for (int j = 0; j < 4; ++j) av[j] = As[cur][kk][ty + 8 * j];
                UNR for (int j = 0; j < 2; ++j) bv[j] = Bs[cur][kk][tx + 32 * j];
                UNR for (int jm = 0; jm < 4; ++jm)
                    UNR for (int i = 0; i < 4; ++i)
                        UNR for (int jn = 0; jn < 2; ++jn)
                            acc[4 * jm + i][jn] = fma(vec4(av[jm][i]), bv[jn], acc[4 * jm + i][jn]);
            }
#else
            UNR for (int kk = 0; kk < BK; ++kk) {
                vec4 a0 = As[cur][kk][ty], a1 = As[cur][kk][16 + ty];
                vec4 b0 = Bs[cur][kk][tx], b1 = Bs[cur][kk][16 + tx];
                UNR for (int i = 0; i < 4; ++i) {
                    acc[i][0] = fma(vec4(a0[i]), b0, acc[i][0]);
                    acc[i][1] = fma(vec4(a0[i]), b1, acc[i][1]);
                    acc[4 + i][0] = fma(vec4(a1[i]), b0, acc[4 + i][0]);
                    acc[4 + i][1] = fma(vec4(a1[i]), b1, acc[4 + i][1]);
                }
            }
#endif
            cur ^= 1;
        }
        int ob = (pc.off[0] + (orow == 0 ? bi * M * N
                                         : bo * pc.st[2 * MAXD] + bj * pc.st[2 * MAXD + 1])) >> 2;
        int nq = (orow == 0 ? N : orow) >> 2;
        int c0 = n0 + 4 * tx, c1 = n0 + 64 + 4 * tx;
#ifdef S64
        if (BIAS == 2) {
            for (int i = 0; i < 4; ++i) {
                int ra = m0 + 4 * ty + i;
                acc[i][0] += vec4((!GM || ra < M) ? BIAS_AT(ra) : 0.0);
            }
        } else if (BIAS != 0) {
            vec4 b0 = (!GUARD || c0 < N) ? TO_F32(cb[(pc.off[3] >> 2) + (c0 >> 2)]) : vec4(0.0);
            for (int i = 0; i < 4; ++i) acc[i][0] += b0;
        }
        for (int i = 0; i < 4; ++i) {
            int ra = m0 + 4 * ty + i;
            if ((!GM || ra < M) && (!GUARD || c0 < N)) res[ob + ra * nq + (c0 >> 2)] = OUT4(acc[i][0]);
        }
#elif defined(WIDE)
        for (int jn = 0; jn < 2; ++jn) {
            int c = c0 + 128 * jn;
            bool cok = !GUARD || c < N;
            vec4 bc = vec4(0.0);
            if (BIAS == 1) bc = cok ? TO_F32(cb[(pc.off[3] >> 2) + (c >> 2)]) : vec4(0.0);
            for (int jm = 0; jm < 4; ++jm) {
                for (int i = 0; i < 4; ++i) {
                    int ra = m0 + 4 * (ty + 8 * jm) + i;
                    vec4 v = acc[4 * jm + i][jn];
                    if (BIAS == 2) v += vec4((!GM || ra < M) ? BIAS_AT(ra) : 0.0);
                    else if (BIAS != 0) v += bc;
                    if ((!GM || ra < M) && cok) res[ob + ra * nq + (c >> 2)] = OUT4(v);
                }
            }
        }
#else
        if (BIAS == 2) {
            for (int i = 0; i < 4; ++i) {
                int ra = m0 + 4 * ty + i, rb = m0 + 64 + 4 * ty + i;
                vec4 va = vec4((!GM || ra < M) ? BIAS_AT(ra) : 0.0);
                vec4 vb = vec4((!GM || rb < M) ? BIAS_AT(rb) : 0.0);
                acc[i][0] += va;
                acc[i][1] += va;
                acc[4 + i][0] += vb;
                acc[4 + i][1] += vb;
            }
        } else if (BIAS != 0) {
            vec4 b0 = (!GUARD || c0 < N) ? TO_F32(cb[(pc.off[3] >> 2) + (c0 >> 2)]) : vec4(0.0);
            vec4 b1 = (!GUARD || c1 < N) ? TO_F32(cb[(pc.off[3] >> 2) + (c1 >> 2)]) : vec4(0.0);
            for (int i = 0; i < 8; ++i) {
                acc[i][0] += b0;
                acc[i][1] += b1;
            }
        }
        for (int i = 0; i < 4; ++i) {
            int ra = m0 + 4 * ty + i, rb = m0 + 64 + 4 * ty + i;
            if (!GM || ra < M) {
                if (!GUARD || c0 < N) res[ob + ra * nq + (c0 >> 2)] = OUT4(acc[i][0]);
                if (!GUARD || c1 < N) res[ob + ra * nq + (c1 >> 2)] = OUT4(acc[i][1]);
            }
            if (!GM || rb < M) {
                if (!GUARD || c0 < N) res[ob + rb * nq + (c0 >> 2)] = OUT4(acc[4 + i][0]);
                if (!GUARD || c1 < N) res[ob + rb * nq + (c1 >> 2)] = OUT4(acc[4 + i][1]);
            }
        }
#endif
        barrier();
    }
}
