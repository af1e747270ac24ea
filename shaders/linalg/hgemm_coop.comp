#version 450
// float16 matmul on tensor cores (VK_KHR_cooperative_matrix): float16 operands, float32
// accumulation, one float16 rounding of each output. A workgroup of 8 subgroups of 32 computes a
// BM x BN output tile; each subgroup a WM x WN part of it as 16x16x16 cooperative products.
// K walks in BK-deep slabs, double-buffered in shared memory (one barrier per slab): while one
// slab is multiplied, the next DEPTH are loading into registers, and the next one is then stored
// into the other buffer (a tensor-core slab takes less time than a load's latency).
//
// An operand is read in the layout it has (no transposing copy): A as (M, K) or transposed
// (TA: stored as (K, M)), B as (K, N) or transposed (TB: stored as (N, K)); the slab keeps the
// stored layout and the cooperative load reads it row- or column-major.
// Aligned variants: M, N, K multiples of BM, BN, BK; unit stride on each operand's contiguous
// axis; the other strides and the offsets multiples of 8 (16-byte loads). EDGE variants take any
// shape and strides: element loads with bounds checks, stores through shared memory.
// The device has 32-wide subgroups and 16x16x16 float16 -> float32 cooperative products
// (vulkan/coop.py checks both before this shader is chosen).
// pc.shape = (batch, M, N, K); a strides (batch, row, col) at pc.st[0..2], b at pc.st[MAXD..];
// pc.off = (out, a, b) in elements; the output is contiguous (float16, or float32 with OUT_F32).
// BIAS (a linear layer's forward, one product): out[m, n] = sum + bias[n], the bias (N,) of the
// output's dtype, unit-strided at pc.off[3]: every accumulator starts at its column's bias (16
// rows of it in shared memory), so the sum is rounded once, with the bias in it.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_GOOGLE_include_directive : require
// BF16: bfloat16 operands and output (VK_KHR_shader_bfloat16's cooperative matrices; glslang 15
// or newer), the same float32 accumulation, each output rounded to nearest even as
// elementwise/cast.comp rounds: in float32 first (bf16_round), so that the accumulator's
// conversion is exact (NVIDIA's truncates)
#ifdef BF16
#extension GL_EXT_bfloat16 : require
#define ELT bfloat16_t
#else
#define ELT float16_t
#endif
#include "../common.glsl"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
// slabs loading into registers ahead of the one multiplied. On an H200 at 4096^3, DEPTH 3 took
// nn from 173 to 216 TFLOP/s and tn from 175 to 246, but nt from 160 down to 136 (2, 4, 6 and 8
// were slower for nn): 1 where B is transposed (the plain loop: the unrolled one at depth 1 ran
// the nt product at half speed)
#ifndef DEPTH
#ifdef TB
#define DEPTH 1
#else
#define DEPTH 3
#endif
#endif
#define WGN (BN / WN)          // subgroups along N; BM / WM * WGN == 8
#define FM (WM / 16)
#define FN (WN / 16)

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

// OUT_F32: float32 output (the partial products of a split K, summed afterwards in float32)
layout(set = 0, binding = 0) writeonly buffer O4 { uvec4 res4[]; };
layout(set = 0, binding = 0) writeonly buffer O1 { float16_t res1[]; };
layout(set = 0, binding = 0) writeonly buffer OF { float resf[]; };
#ifdef BF16
layout(set = 0, binding = 0) writeonly buffer OU { uint16_t resu[]; };
#endif
layout(set = 0, binding = 1) readonly buffer A4 { uvec4 a4[]; };
layout(set = 0, binding = 1) readonly buffer A1 { uint16_t a1[]; };
layout(set = 0, binding = 2) readonly buffer B4 { uvec4 b4[]; };
layout(set = 0, binding = 2) readonly buffer B1 { uint16_t b1[]; };

// slabs in their stored layout: rows x (cols + 8) halfs, the 8 halfs of padding (16 bytes)
// keep the cooperative loads' rows on different banks
const int A_ROWS = TRANS_A ? BK : BM, A_COLS = TRANS_A ? BM : BK, A_LD = A_COLS + 8;
const int B_ROWS = TRANS_B ? BN : BK, B_COLS = TRANS_B ? BK : BN, B_LD = B_COLS + 8;
const int A_Q = A_ROWS * A_COLS / 8, B_Q = B_ROWS * B_COLS / 8;   // 16-byte quads per slab
const int LA = (A_Q + WG - 1) / WG, LB = (B_Q + WG - 1) / WG;     // quads per invocation
shared uvec4 As[2][A_ROWS * A_LD / 8];
shared uvec4 Bs[2][B_ROWS * B_LD / 8];
#ifdef EDGE
shared float Cs[8][16 * 16];   // one subgroup's 16x16 block on its way to a guarded store
#endif
#ifdef BIAS
layout(set = 0, binding = 3) readonly buffer BB { uint16_t biasb[]; };
shared float BiasS[16 * BN];   // the tile's BN bias values, in each of 16 rows

// bias element c as a float (exact), 0 past N
float bias_at(int c, int N) {
    if (c >= N)
        return 0.0;
    uint h = uint(biasb[pc.off[3] + c]);
#ifdef BF16
    return uintBitsToFloat(h << 16);
#else
    return unpackHalf2x16(h).x;
#endif
}
#endif

// the bfloat16 nearest (ties to even) to f, as a float32 (exact in bfloat16); NaN stays a
// quiet NaN with its sign
float bf16_round(float f) {
    uint u = floatBitsToUint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return uintBitsToFloat((u & 0x80000000u) | 0x7fc00000u);
    return uintBitsToFloat((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
}

uint pack2(uint16_t lo, uint16_t hi) { return uint(lo) | (uint(hi) << 16); }

// the 8 halfs at (row, col..col+7) of an operand slab: rows/cols are the slab's stored axes,
// (R, C) their extents in the operand, (sr, sc) their strides, base the operand's offset
#ifdef EDGE
// a whole, 16-byte aligned run of 8 along a unit-stride axis is one vector load (a weight
// gradient's long K: only its ragged rows take the element loads); the rest element by element
#define QUAD(BUF, base, row, col, R, C, sr, sc, dst)                                     \
    {                                                                                   \
        int q0 = base + row * sr + col * sc;                                            \
        if (sc == 1 && row < R && col + 8 <= C && (q0 & 7) == 0) {                      \
            dst = BUF##4[q0 >> 3];                                                      \
        } else {                                                                        \
            uint16_t h[8];                                                              \
            [[unroll]] for (int e = 0; e < 8; ++e) {                                    \
                bool ok = row < R && col + e < C;                                       \
                h[e] = ok ? BUF##1[q0 + e * sc] : uint16_t(0);                          \
            }                                                                           \
            dst = uvec4(pack2(h[0], h[1]), pack2(h[2], h[3]), pack2(h[4], h[5]),        \
                        pack2(h[6], h[7]));                                             \
        }                                                                               \
    }
#else
#define QUAD(BUF, base, row, col, R, C, sr, sc, dst) dst = BUF##4[(base + row * sr + col) >> 3];
#endif

void main() {
    int nb = pc.shape[0], M = pc.shape[1], N = pc.shape[2], K = pc.shape[3];
    int tm = (M + BM - 1) / BM, tn = (N + BN - 1) / BN;
    int ntiles = nb * tm * tn;
    int tid = int(gl_LocalInvocationID.x);
    int warp = tid >> 5;
    int wm = warp / WGN, wn = warp - (warp / WGN) * WGN;
    // the slabs' stored axes: (rows, cols) extents and strides in the operands
    int a_sr = TRANS_A ? pc.st[2] : pc.st[1], a_sc = TRANS_A ? pc.st[1] : pc.st[2];
    int b_sr = TRANS_B ? pc.st[MAXD + 2] : pc.st[MAXD + 1];
    int b_sc = TRANS_B ? pc.st[MAXD + 1] : pc.st[MAXD + 2];
    int a_R = TRANS_A ? K : M, a_C = TRANS_A ? M : K;
    int b_R = TRANS_B ? N : K, b_C = TRANS_B ? K : N;
    int nk = (K + BK - 1) / BK;
    for (int t = int(gl_WorkGroupID.x); t < ntiles; t += int(gl_NumWorkGroups.x)) {
        int bi = t / (tm * tn);
        int rem = t - bi * tm * tn;
        int m0 = (rem / tn) * BM, n0 = (rem - (rem / tn) * tn) * BN;
        int abase = pc.off[1] + bi * pc.st[0], bbase = pc.off[2] + bi * pc.st[MAXD];
        // slab origin in stored coordinates at k0 = 0
        int ar0 = TRANS_A ? 0 : m0, ac0 = TRANS_A ? m0 : 0;
        int br0 = TRANS_B ? n0 : 0, bc0 = TRANS_B ? 0 : n0;
        uvec4 ra[DEPTH][LA], rb[DEPTH][LB];
#define FETCH(k0, r)                                                                    \
        [[unroll]] for (int i = 0; i < LA; ++i) {                                       \
            int q = tid + i * WG;                                                       \
            int row = q / (A_COLS / 8), col = (q - row * (A_COLS / 8)) * 8;             \
            int gr = ar0 + row + (TRANS_A ? k0 : 0), gc = ac0 + col + (TRANS_A ? 0 : k0);\
            if (q < A_Q) QUAD(a, abase, gr, gc, a_R, a_C, a_sr, a_sc, ra[r][i])          \
        }                                                                               \
        [[unroll]] for (int i = 0; i < LB; ++i) {                                       \
            int q = tid + i * WG;                                                       \
            int row = q / (B_COLS / 8), col = (q - row * (B_COLS / 8)) * 8;             \
            int gr = br0 + row + (TRANS_B ? 0 : k0), gc = bc0 + col + (TRANS_B ? k0 : 0);\
            if (q < B_Q) QUAD(b, bbase, gr, gc, b_R, b_C, b_sr, b_sc, rb[r][i])          \
        }
#define STASH(s, r)                                                                     \
        [[unroll]] for (int i = 0; i < LA; ++i) {                                       \
            int q = tid + i * WG;                                                       \
            int row = q / (A_COLS / 8), c8 = q - row * (A_COLS / 8);                    \
            if (q < A_Q) As[s][row * (A_LD / 8) + c8] = ra[r][i];                       \
        }                                                                               \
        [[unroll]] for (int i = 0; i < LB; ++i) {                                       \
            int q = tid + i * WG;                                                       \
            int row = q / (B_COLS / 8), c8 = q - row * (B_COLS / 8);                    \
            if (q < B_Q) Bs[s][row * (B_LD / 8) + c8] = rb[r][i];                       \
        }
        // slabs 0 .. DEPTH-1 in flight, slab 0 in shared memory
        [[unroll]] for (int r = 0; r < DEPTH; ++r)
            if (r < nk) { FETCH(r * BK, r) }
#ifdef BIAS
        // (the previous tile's reads of BiasS are behind its K loop's barriers)
        for (int i = tid; i < 16 * BN; i += WG)
            BiasS[i] = bias_at(n0 + i % BN, N);
#endif
        STASH(0, 0)
        barrier();
        coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[FM][FN];
#ifdef BIAS
        [[unroll]] for (int j = 0; j < FN; ++j) {
            coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> bj;
            coopMatLoad(bj, BiasS, wn * WN + j * 16, BN, gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (int i = 0; i < FM; ++i)
                acc[i][j] = bj;
        }
#else
        [[unroll]] for (int i = 0; i < FM; ++i)
            [[unroll]] for (int j = 0; j < FN; ++j)
                acc[i][j] = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
#endif
        // slab kt is multiplied from shared memory while slabs kt+1 .. kt+DEPTH are loading
        // into registers (set kt % DEPTH: its slab went to shared memory a step ago); then
        // slab kt+1 goes to the other shared buffer. The loop is unrolled DEPTH times so that
        // every register set is a fixed one.
#if DEPTH == 1
        for (int kt = 0; kt < nk; ++kt) {
            const int r = 0;
            int cur = kt & 1;
            if (kt + 1 < nk) { FETCH((kt + 1) * BK, 0) }
#else
        for (int k4 = 0; k4 < nk; k4 += DEPTH)
        [[unroll]] for (int r = 0; r < DEPTH; ++r) {
            int kt = k4 + r;
            if (kt >= nk) break;
            int cur = kt & 1;
            if (kt + DEPTH < nk) { FETCH((kt + DEPTH) * BK, r) }
#endif
            [[unroll]] for (int kk = 0; kk < BK; kk += 16) {
                coopmat<ELT, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> fa[FM];
                coopmat<ELT, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> fb[FN];
                [[unroll]] for (int i = 0; i < FM; ++i) {
                    int m = wm * WM + i * 16;
                    if (TRANS_A)
                        coopMatLoad(fa[i], As[cur], (kk * A_LD + m) / 8, A_LD / 8,
                                    gl_CooperativeMatrixLayoutColumnMajor);
                    else
                        coopMatLoad(fa[i], As[cur], (m * A_LD + kk) / 8, A_LD / 8,
                                    gl_CooperativeMatrixLayoutRowMajor);
                }
                [[unroll]] for (int j = 0; j < FN; ++j) {
                    int n = wn * WN + j * 16;
                    if (TRANS_B)
                        coopMatLoad(fb[j], Bs[cur], (n * B_LD + kk) / 8, B_LD / 8,
                                    gl_CooperativeMatrixLayoutColumnMajor);
                    else
                        coopMatLoad(fb[j], Bs[cur], (kk * B_LD + n) / 8, B_LD / 8,
                                    gl_CooperativeMatrixLayoutRowMajor);
                }
                [[unroll]] for (int i = 0; i < FM; ++i)
                    [[unroll]] for (int j = 0; j < FN; ++j)
                        acc[i][j] = coopMatMulAdd(fa[i], fb[j], acc[i][j]);
            }
            if (kt + 1 < nk) { STASH(cur ^ 1, (r + 1) % DEPTH) }
            barrier();
        }
        int ob = pc.off[0] + bi * M * N;
        [[unroll]] for (int i = 0; i < FM; ++i) {
            [[unroll]] for (int j = 0; j < FN; ++j) {
                int r0 = m0 + wm * WM + i * 16, c0 = n0 + wn * WN + j * 16;
#ifdef EDGE
                coopMatStore(acc[i][j], Cs[warp], 0, 16, gl_CooperativeMatrixLayoutRowMajor);
                subgroupBarrier();
                int lane = tid & 31;
                [[unroll]] for (int e = 0; e < 8; ++e) {
                    int idx = lane + 32 * e, r = r0 + (idx >> 4), c = c0 + (idx & 15);
#ifdef OUT_F32
                    if (r < M && c < N) resf[ob + r * N + c] = Cs[warp][idx];
#elif defined(BF16)
                    if (r < M && c < N)
                        resu[ob + r * N + c] = uint16_t(floatBitsToUint(bf16_round(Cs[warp][idx])) >> 16);
#else
                    if (r < M && c < N) res1[ob + r * N + c] = float16_t(Cs[warp][idx]);
#endif
                }
                subgroupBarrier();
#elif defined(OUT_F32)
                coopMatStore(acc[i][j], resf, ob + r0 * N + c0, N,
                             gl_CooperativeMatrixLayoutRowMajor);
#else
#ifdef BF16
                [[unroll]] for (int e = 0; e < acc[i][j].length(); ++e)
                    acc[i][j][e] = bf16_round(acc[i][j][e]);
#endif
                coopmat<ELT, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> h =
                    coopmat<ELT, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(acc[i][j]);
                coopMatStore(h, res4, (ob + r0 * N + c0) / 8, N / 8,
                             gl_CooperativeMatrixLayoutRowMajor);
#endif
            }
        }
    }
}
