#version 450
// float32 matmul for large, aligned operands: 128x128 output tiles per workgroup, BK-deep k
// slabs double-buffered in shared memory, 8x8 outputs per invocation held as two 4x4 blocks
// (rows 4ty.. and 64+4ty.., columns 4tx.. and 64+4tx..), so every shared read is a vec4 and
// every global load and store is a vec4. The caller guarantees: M, N multiples of 128, K a
// multiple of BK, unit column strides, row strides and offsets multiples of 4, contiguous output.
// pc.shape = (batch, M, N, K); a strides (batch, row, col) at pc.st[0..2], b at pc.st[MAXD..];
// pc.off = (out, a, b) in floats.
#include "../common.glsl"

layout(set = 0, binding = 0) writeonly buffer O { vec4 res[]; };
layout(set = 0, binding = 1) readonly buffer A { vec4 a[]; };
layout(set = 0, binding = 2) readonly buffer B { vec4 b[]; };

#ifndef BK
#define BK 8
#endif
#define BM 128
// A slab stored k-major (transposed): a thread's 4 rows are 4 neighbouring floats
shared float As[2][BK][BM];
shared vec4 Bs[2][BK][BM / 4];

// each invocation loads LA vec4s of A and of B per slab; a row of the A slab is QA vec4s
#define LA (BK / 8)
#define QA (BK / 4)

void main() {
    int nb = pc.shape[0], M = pc.shape[1], N = pc.shape[2], K = pc.shape[3];
    int tm = M / BM, tn = N / BM;
    int ntiles = nb * tm * tn;
    int tid = int(gl_LocalInvocationID.x);
    int tx = tid & 15, ty = tid >> 4;
    int lda = pc.st[1] >> 2, ldb = pc.st[MAXD + 1] >> 2;
    for (int t = int(gl_WorkGroupID.x); t < ntiles; t += int(gl_NumWorkGroups.x)) {
        int bi = t / (tm * tn);
        int rem = t - bi * tm * tn;
        int m0 = (rem / tn) * BM, n0 = (rem - (rem / tn) * tn) * BM;
        int abase = (pc.off[1] + bi * pc.st[0]) >> 2, bbase = (pc.off[2] + bi * pc.st[MAXD]) >> 2;
        // A: row e / QA, k quad e % QA; B: k row e / 32, column quad e % 32
        vec4 ra[LA], rb[LA];
        for (int l = 0; l < LA; ++l) {
            int e = tid + l * WG;
            ra[l] = a[abase + (m0 + e / QA) * lda + e % QA];
            rb[l] = b[bbase + (e >> 5) * ldb + (n0 >> 2) + (e & 31)];
        }
        vec4 acc[8][2];
        for (int i = 0; i < 8; ++i) { acc[i][0] = vec4(0.0); acc[i][1] = vec4(0.0); }
        int cur = 0;
        for (int k0 = 0; k0 < K; k0 += BK) {
            for (int l = 0; l < LA; ++l) {
                int e = tid + l * WG;
                int r = e / QA, kq = (e % QA) * 4;
                for (int q = 0; q < 4; ++q) As[cur][kq + q][r] = ra[l][q];
                Bs[cur][e >> 5][e & 31] = rb[l];
            }
            barrier();
            int kn = k0 + BK;
            if (kn < K) {
                // prefetch the next slab into registers while this one is multiplied
                for (int l = 0; l < LA; ++l) {
                    int e = tid + l * WG;
                    ra[l] = a[abase + (m0 + e / QA) * lda + (kn >> 2) + e % QA];
                    rb[l] = b[bbase + (kn + (e >> 5)) * ldb + (n0 >> 2) + (e & 31)];
                }
            }
            for (int kk = 0; kk < BK; ++kk) {
                int r = 4 * ty;
                vec4 a0 = vec4(As[cur][kk][r], As[cur][kk][r + 1], As[cur][kk][r + 2],
                               As[cur][kk][r + 3]);
                vec4 a1 = vec4(As[cur][kk][r + 64], As[cur][kk][r + 65], As[cur][kk][r + 66],
                               As[cur][kk][r + 67]);
                vec4 b0 = Bs[cur][kk][tx], b1 = Bs[cur][kk][16 + tx];
                for (int i = 0; i < 4; ++i) {
                    acc[i][0] = fma(vec4(a0[i]), b0, acc[i][0]);
                    acc[i][1] = fma(vec4(a0[i]), b1, acc[i][1]);
                    acc[4 + i][0] = fma(vec4(a1[i]), b0, acc[4 + i][0]);
                    acc[4 + i][1] = fma(vec4(a1[i]), b1, acc[4 + i][1]);
                }
            }
            cur ^= 1;
        }
        int ob = (pc.off[0] >> 2) + bi * (M * N >> 2);
        int nq = N >> 2;
        for (int i = 0; i < 4; ++i) {
            int r0 = m0 + 4 * ty + i, r1 = m0 + 64 + 4 * ty + i;
            res[ob + r0 * nq + (n0 >> 2) + tx] = acc[i][0];
            res[ob + r0 * nq + (n0 >> 2) + 16 + tx] = acc[i][1];
            res[ob + r1 * nq + (n0 >> 2) + tx] = acc[4 + i][0];
            res[ob + r1 * nq + (n0 >> 2) + 16 + tx] = acc[4 + i][1];
        }
        barrier();
    }
}
