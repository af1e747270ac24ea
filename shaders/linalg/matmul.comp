#version 450
// Batched matmul for any numeric dtype (IN_*): one output element per invocation, accumulated
// in the compute type (float16 in float32; integers wrap like numpy's). Layout as matmul_tiled.
// bfloat16 (IN_BF16=1): its bits widened, float32 sums, each output rounded once.
// Complex (IN_CPLX=1, vec2/dvec2): the textbook product per term, as numpy's.
#include "../common.glsl"
#include "../io16.glsl"

#ifndef IN_CPLX
#define IN_CPLX 0
#endif

layout(set = 0, binding = 0) writeonly buffer O { IN_TS res[]; };
layout(set = 0, binding = 1) readonly buffer A { IN_TS a[]; };
layout(set = 0, binding = 2) readonly buffer B { IN_TS b[]; };

void main() {
    int M = pc.shape[1], N = pc.shape[2], K = pc.shape[3];
    uint step = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += step) {
        int mn = M * N;
        int bi = int(i) / mn, r = int(i) - bi * mn;
        int m = r / N, n = r - m * N;
        int ai = pc.off[1] + bi * pc.st[0] + m * pc.st[1];
        int bj = pc.off[2] + bi * pc.st[MAXD] + n * pc.st[MAXD + 2];
        IN_TC acc = IN_TC(0);
        for (int k = 0; k < K; ++k) {
            IN_TC x = LD_IN(a[ai + k * pc.st[2]]), y = LD_IN(b[bj + k * pc.st[MAXD + 1]]);
#if IN_CPLX
            acc += IN_TC(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x);
#else
            acc += x * y;
#endif
        }
        res[pc.off[0] + int(i)] = ST_IN(acc);
    }
}
