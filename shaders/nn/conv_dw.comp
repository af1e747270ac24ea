#version 450
// A convolution's weight and bias gradients where the output is small (O x CK within a few
// 64 x 32 tiles) and K = N*Ho*Wo is long (a first layer: 64 x 27 x 262144), from the output
// gradient g read in its (N, O, P = Ho*Wo) layout (no (O, N*P) copy of it) and the
// channel-major windows cols (CK, N*P), both contiguous (grilly/backends/vulkan/conv.py).
//   OP 0: workgroup (tile, slice s) sums slice s's share of K for a 64 x 32 tile of (o, c)
//         into part[s, o, c] (float32); column c == CK is the bias's (a column of ones).
//   OP 1: one invocation per (o, c <= CK): the slices' sum, in slice order (deterministic),
//         into gw[o, c] (c < CK) or gb[o] (c == CK), rounded once to the output dtype.
// pc.shape = (O, CK, N, P, S); pc.st[0] = KS (K per slice, a multiple of 32), pc.st[1] =
// tiles across c; pc.off = OP 0 (part, g, cols), OP 1 (gw, gb, part).
#extension GL_EXT_control_flow_attributes : enable
#include "../common.glsl"
#include "../io16.glsl"

layout(constant_id = 0) const int OP = 0;

// bindings alias by OP (see above); no access qualifiers, since each is read in one OP and
// written in the other
layout(set = 0, binding = 0) buffer B0 { float part_w[]; };
layout(set = 0, binding = 0) buffer B0o { OUT_TS gw[]; };
layout(set = 0, binding = 1) buffer B1 { IN_TS g[]; };
layout(set = 0, binding = 1) buffer B1o { OUT_TS gb[]; };
layout(set = 0, binding = 2) buffer B2 { IN_TS cols[]; };
layout(set = 0, binding = 2) buffer B2p { float part_r[]; };

#if defined(OUT_BF16) && OUT_BF16
#define ST_OUT(r) bf16_bits(r)
#else
#define ST_OUT(r) OUT_TS(r)
#endif

// one 32-deep step of K in shared memory, k-major, rows padded (68, 36 floats) so that the
// transposing stores meet at most 4-way bank conflicts; scalar elements (a store of one
// component of a shared vec4 may be a read-modify-write of all four)
shared float gs[32 * 68];        // [k][o]
shared float cs[32 * 36];        // [k][c]
shared float red[3 * 64 * 32];   // quarters 1-3's 8 x 4 blocks, summed by quarter 0

void partials() {
    int O = pc.shape[0], CK = pc.shape[1], N = pc.shape[2], P = pc.shape[3], S = pc.shape[4];
    int KS = pc.st[0], tilesC = pc.st[1];
    int M = N * P, OP_ = O * P;
    int tilesO = (O + 63) / 64;
    int ntiles = tilesO * tilesC;
    int tid = int(gl_LocalInvocationID.x);
    // compute: quarter kq of each step's 32 k, an 8 (o) x 4 (c) block of the 64 x 32 tile
    int kq = tid >> 6, t = tid & 63, ty = t >> 3, tx = t & 7;
    // load: the k this thread loads, every load of a step, and its first row (o or c)
    int kk = tid & 31, lrow = tid >> 5;
    for (int wg = int(gl_WorkGroupID.x); wg < ntiles * S; wg += int(gl_NumWorkGroups.x)) {
        int tile = wg % ntiles, s = wg / ntiles;
        int o0 = (tile / tilesC) * 64, c0 = (tile % tilesC) * 32;
        int kbeg = s * KS, kend = min(kbeg + KS, M);
        float acc[8][4];
        [[unroll]] for (int i = 0; i < 8; ++i)
            [[unroll]] for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
        // the next step's loads are issued into registers before this step's products, so
        // their latency overlaps the arithmetic (one or two workgroups an SM: nothing else
        // hides it)
        float pg[8], pcv[4];
#define LOAD_STEP(K0)                                                                   \
        {                                                                               \
            int k = (K0) + kk;                                                          \
            bool kin = k < kend;                                                        \
            int n = k / P;          /* (one division a step: kk is fixed per thread) */ \
            int gbase = pc.off[1] + n * OP_ + (k - n * P);                              \
            [[unroll]] for (int i = 0; i < 8; ++i) {                                    \
                int o = o0 + lrow + 8 * i;                                              \
                pg[i] = (kin && o < O) ? LD_IN(g[gbase + o * P]) : 0.0;                 \
            }                                                                           \
            [[unroll]] for (int i = 0; i < 4; ++i) {                                    \
                int c = c0 + lrow + 8 * i;                                              \
                float v = 0.0;                                                          \
                if (kin && c < CK) v = LD_IN(cols[pc.off[2] + c * M + k]);              \
                else if (kin && c == CK) v = 1.0;                                       \
                pcv[i] = v;                                                             \
            }                                                                           \
        }
        LOAD_STEP(kbeg)
        for (int k0 = kbeg; k0 < kend; k0 += 32) {
            [[unroll]] for (int i = 0; i < 8; ++i) gs[kk * 68 + lrow + 8 * i] = pg[i];
            [[unroll]] for (int i = 0; i < 4; ++i) cs[kk * 36 + lrow + 8 * i] = pcv[i];
            barrier();
            if (k0 + 32 < kend) LOAD_STEP(k0 + 32)
            [[unroll]] for (int q = 0; q < 8; ++q) {
                int r = kq * 8 + q;
                float b[4], a[8];
                [[unroll]] for (int j = 0; j < 4; ++j) b[j] = cs[r * 36 + tx * 4 + j];
                [[unroll]] for (int i = 0; i < 8; ++i) a[i] = gs[r * 68 + ty * 8 + i];
                [[unroll]] for (int i = 0; i < 8; ++i)
                    [[unroll]] for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
            }
            barrier();
        }
        // the four quarters' sums, in quarter order
        if (kq > 0) {
            [[unroll]] for (int i = 0; i < 8; ++i)
                [[unroll]] for (int j = 0; j < 4; ++j)
                    red[((kq - 1) * 64 + t) * 32 + i * 4 + j] = acc[i][j];
        }
        barrier();
        if (kq == 0) {
            int W1 = CK + 1;
            [[unroll]] for (int i = 0; i < 8; ++i) {
                int o = o0 + ty * 8 + i;
                [[unroll]] for (int j = 0; j < 4; ++j) {
                    int e = t * 32 + i * 4 + j;
                    float v = acc[i][j] + red[e] + red[64 * 32 + e] + red[128 * 32 + e];
                    int c = c0 + tx * 4 + j;
                    if (o < O && c <= CK) part_w[pc.off[0] + (s * O + o) * W1 + c] = v;
                }
            }
        }
        barrier();   // (red is rewritten by the next tile)
    }
}

void reduce_slices() {
    int O = pc.shape[0], CK = pc.shape[1], S = pc.shape[4];
    int W1 = CK + 1;
    for (uint e = gl_GlobalInvocationID.x; e < pc.n; e += gl_NumWorkGroups.x * WG) {
        int o = int(e) / W1, c = int(e) - o * W1;
        float sum = 0.0;
        for (int s = 0; s < S; ++s) sum += part_r[pc.off[2] + (s * O + o) * W1 + c];
        if (c < CK) gw[pc.off[0] + o * CK + c] = ST_OUT(sum);
        else gb[pc.off[1] + o] = ST_OUT(sum);
    }
}

void main() {
    if (OP == 0) partials();
    else reduce_slices();
}
