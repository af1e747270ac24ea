#version 450
// float32 batched matmul: 64x64 output tiles, 16-deep k slabs in shared memory, 4x4 outputs
// per invocation (rows ty + 16 i, columns tx + 16 j, so neighbours write neighbouring words).
// pc.shape = (batch, M, N, K); a strides (batch, row, col) at pc.st[0..2], b at pc.st[MAXD..];
// pc.off = (out, a, b, bias); out is a fresh contiguous (batch, M, N) buffer.
// BIAS (specialization constant 2) = 1: out[m, n] = sum + bias[n], the bias (N,) unit-strided
// at pc.off[3] (a linear layer's forward); = 2: sum + bias[m], the bias (M,) (a convolution's,
// per output channel). Added to the rounded sum, as a separate add would: the same result in
// one dispatch.
#include "../common.glsl"

layout(set = 0, binding = 0) writeonly buffer O { float res[]; };
layout(set = 0, binding = 1) readonly buffer A { float a[]; };
layout(set = 0, binding = 2) readonly buffer B { float b[]; };
layout(set = 0, binding = 3) readonly buffer C { float bias[]; };
layout(constant_id = 2) const int BIAS = 0;

#define TM 64
#define TK 16
shared float As[TK][TM + 1];
shared float Bs[TK][TM + 1];

void main() {
    int nb = pc.shape[0], M = pc.shape[1], N = pc.shape[2], K = pc.shape[3];
    int tm = (M + TM - 1) / TM, tn = (N + TM - 1) / TM;
    int ntiles = nb * tm * tn;
    int tid = int(gl_LocalInvocationID.x);
    int tx = tid & 15, ty = tid >> 4;
    for (int t = int(gl_WorkGroupID.x); t < ntiles; t += int(gl_NumWorkGroups.x)) {
        int bi = t / (tm * tn);
        int rem = t - bi * tm * tn;
        int m0 = (rem / tn) * TM, n0 = (rem - (rem / tn) * tn) * TM;
        int abase = pc.off[1] + bi * pc.st[0], bbase = pc.off[2] + bi * pc.st[MAXD];
        float acc[4][4];
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
        for (int k0 = 0; k0 < K; k0 += TK) {
            for (int l = 0; l < 4; ++l) {
                int e = tid + l * WG;
                int r = e >> 4, kk = e & 15;
                int gm = m0 + r, gk = k0 + kk;
                As[kk][r] = (gm < M && gk < K) ? a[abase + gm * pc.st[1] + gk * pc.st[2]] : 0.0;
                int kb = e >> 6, c = e & 63;
                int gk2 = k0 + kb, gn = n0 + c;
                Bs[kb][c] = (gk2 < K && gn < N)
                    ? b[bbase + gk2 * pc.st[MAXD + 1] + gn * pc.st[MAXD + 2]] : 0.0;
            }
            barrier();
            for (int kk = 0; kk < TK; ++kk) {
                float av[4], bv[4];
                for (int i = 0; i < 4; ++i) av[i] = As[kk][ty + 16 * i];
                for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx + 16 * j];
                for (int i = 0; i < 4; ++i)
                    for (int j = 0; j < 4; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
            }
            barrier();
        }
        int obase = pc.off[0] + bi * M * N;
        for (int i = 0; i < 4; ++i) {
            int gm = m0 + ty + 16 * i;
            if (gm >= M) continue;
            for (int j = 0; j < 4; ++j) {
                int gn = n0 + tx + 16 * j;
                if (gn >= N) continue;
                float v = acc[i][j];
                if (BIAS == 1) v += bias[pc.off[3] + gn];
                else if (BIAS == 2) v += bias[pc.off[3] + gm];
                res[obase + gm * N + gn] = v;
            }
        }
    }
}
