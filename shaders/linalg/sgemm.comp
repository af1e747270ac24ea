#version 450
// float32 matmul for large, aligned operands: 128x128 output tiles per workgroup, 16-deep k
// slabs double-buffered in shared memory, 8x8 outputs per invocation held as two 4x4 blocks
// (rows 4ty.. and 64+4ty.., columns 4tx.. and 64+4tx..). Invocations 0-127 load A (4 rows x one
// k quad each, so they can store the slab transposed as whole vec4s of 4 rows), 128-255 load B;
// every global and shared access is a vec4. The caller guarantees: M, N multiples of 128, K a
// multiple of 16, unit column strides, row strides and offsets multiples of 4, contiguous output.
// pc.shape = (batch, M, N, K); a strides (batch, row, col) at pc.st[0..2], b at pc.st[MAXD..];
// pc.off = (out, a, b) in floats.
#include "../common.glsl"

layout(set = 0, binding = 0) writeonly buffer O { vec4 res[]; };
layout(set = 0, binding = 1) readonly buffer A { vec4 a[]; };
layout(set = 0, binding = 2) readonly buffer B { vec4 b[]; };

#define BM 128
#define BK 16
shared vec4 As[2][BK][BM / 4];   // As[k][q] = rows 4q..4q+3 at depth k
shared vec4 Bs[2][BK][BM / 4];   // Bs[k][q] = columns 4q..4q+3 at depth k

void main() {
    int nb = pc.shape[0], M = pc.shape[1], N = pc.shape[2], K = pc.shape[3];
    int tm = M / BM, tn = N / BM;
    int ntiles = nb * tm * tn;
    int tid = int(gl_LocalInvocationID.x);
    int tx = tid & 15, ty = tid >> 4;
    int lda = pc.st[1] >> 2, ldb = pc.st[MAXD + 1] >> 2;
    bool loads_a = tid < 128;
    int e = tid & 127;
    // A loaders: row group e >> 2 (rows 4g..4g+3), k quad e & 3; B loaders: k rows (e >> 5) + 4i,
    // column quad e & 31
    int g = e >> 2, kq = e & 3, brow = e >> 5, bq = e & 31;
    for (int t = int(gl_WorkGroupID.x); t < ntiles; t += int(gl_NumWorkGroups.x)) {
        int bi = t / (tm * tn);
        int rem = t - bi * tm * tn;
        int m0 = (rem / tn) * BM, n0 = (rem - (rem / tn) * tn) * BM;
        int abase = (pc.off[1] + bi * pc.st[0]) >> 2, bbase = (pc.off[2] + bi * pc.st[MAXD]) >> 2;
        int aoff = abase + (m0 + 4 * g) * lda + kq, boff = bbase + brow * ldb + (n0 >> 2) + bq;
        vec4 r[4];
        for (int i = 0; i < 4; ++i)
            r[i] = loads_a ? a[aoff + i * lda] : b[boff + 4 * i * ldb];
        vec4 acc[8][2];
        for (int i = 0; i < 8; ++i) { acc[i][0] = vec4(0.0); acc[i][1] = vec4(0.0); }
        int cur = 0;
        for (int k0 = 0; k0 < K; k0 += BK) {
            if (loads_a) {
                As[cur][4 * kq][g] = vec4(r[0].x, r[1].x, r[2].x, r[3].x);
                As[cur][4 * kq + 1][g] = vec4(r[0].y, r[1].y, r[2].y, r[3].y);
                As[cur][4 * kq + 2][g] = vec4(r[0].z, r[1].z, r[2].z, r[3].z);
                As[cur][4 * kq + 3][g] = vec4(r[0].w, r[1].w, r[2].w, r[3].w);
            } else {
                for (int i = 0; i < 4; ++i) Bs[cur][brow + 4 * i][bq] = r[i];
            }
            barrier();
            int kn = k0 + BK;
            if (kn < K) {
                // prefetch the next slab into registers while this one is multiplied
                for (int i = 0; i < 4; ++i)
                    r[i] = loads_a ? a[aoff + i * lda + (kn >> 2)] : b[boff + (kn + 4 * i) * ldb];
            }
            for (int kk = 0; kk < BK; ++kk) {
                vec4 a0 = As[cur][kk][ty], a1 = As[cur][kk][16 + ty];
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
