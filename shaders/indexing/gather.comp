#version 450
// Raw-word gather/scatter for one element size (W_TS storage, W_TC compute):
// element i = (s, r) of the (S, R) iteration space addresses the destination/source element
// pc.off[1 or 0] + offs[s] + rest(r), rest(r) walking NDIM axes pc.shape with strides pc.st[MAXD..].
// OP 0 gather:   res[i] = src[...]                       (bindings: res, src, offs)
// OP 1 claim:    atomicMax(claim[elem], i)               (last writer in row-major order wins)
// OP 2 scatter:  dst[elem] = vals[i] where claim == i    (bindings: dst, vals, offs, claim)
// pc.shape[MAXD - 1] holds R (the product of the rest shape).
#include "../common.glsl"

layout(constant_id = 0) const int OP = 0;

layout(set = 0, binding = 0) buffer O { W_TS res[]; };
layout(set = 0, binding = 1) readonly buffer A { W_TS src[]; };
layout(set = 0, binding = 2) readonly buffer I { int64_t offs[]; };
layout(set = 0, binding = 3) buffer C { int claim[]; };

void main() {
    uint step = gl_NumWorkGroups.x * WG;
    int R = pc.shape[MAXD - 1];
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += step) {
        int s = int(i) / R, r = int(i) - s * R;
        int rest = 0;
        for (int d = NDIM - 1; d >= 0; --d) {
            int sz = pc.shape[d];
            int q = r / sz;
            rest += (r - q * sz) * pc.st[MAXD + d];
            r = q;
        }
        int e = int(offs[s]) + rest;
        if (OP == 0) {
            res[int(i)] = W_TS(W_TC(src[pc.off[1] + e]));
        } else if (OP == 1) {
            atomicMax(claim[pc.off[0] + e], int(i));
        } else if (claim[pc.off[0] + e] == int(i)) {
            res[pc.off[0] + e] = W_TS(W_TC(src[pc.off[1] + int(i)]));
        }
    }
}
