#version 450
// One step of a weight-update rule without gradients (grilly.array.plasticity: STDP with
// traces, Hebbian, Oja), one invocation per weight element W[i, j] (P x Q), walking the batch:
// the batch means of the outer products, then the rule's update of W in place. The invocations
// of row 0 also write the new pre traces, those of column 0 the new post traces.
//   pc.n = P Q; pc.shape = (B, P, Q, has pre trace, has post trace);
//   pc.off = (W, outputs, inputs); inputs = [x (B, Q)][y (B, P)][u_old (B, Q)][v_old (B, P)],
//   outputs = [u (B, Q)][v (B, P)]; pc.st[0..] = a_plus, a_minus, dp, dm, w_min, w_max (float
//   bits; two words each for float64). MODE (spec constant 2): 0 stdp, 1 stdp_hard,
//   2 stdp_soft, 3 hebbian (a_plus = lr, a_minus = weight_decay), 4 oja (a_plus = lr).
#include "../common.glsl"
#if IN_BITS == 64
#extension GL_ARB_gpu_shader_fp64 : enable
#endif

layout(constant_id = 2) const int MODE = 0;

#define TC IN_TC
layout(set = 0, binding = 0) buffer W { IN_TS w[]; };
layout(set = 0, binding = 1) writeonly buffer O { IN_TS o[]; };
layout(set = 0, binding = 2) readonly buffer A { IN_TS a[]; };

TC konst(int k) {
#if IN_BITS == 64
    return packDouble2x32(uvec2(uint(pc.st[2 * k]), uint(pc.st[2 * k + 1])));
#else
    return uintBitsToFloat(uint(pc.st[k]));
#endif
}

void main() {
    uint step = gl_NumWorkGroups.x * WG;
    int B = pc.shape[0], P = pc.shape[1], Q = pc.shape[2];
    bool hp = pc.shape[3] != 0, hq = pc.shape[4] != 0;
    int xo = pc.off[2], yo = xo + B * Q, po = yo + B * P, qo = po + B * Q;
    int uo = pc.off[1], vo = uo + B * Q;
    TC ap = konst(0), am = konst(1), dp = konst(2), dm = konst(3), lo = konst(4), hi = konst(5);
    TC inv = TC(1) / TC(B);
    for (uint idx = gl_GlobalInvocationID.x; idx < pc.n; idx += step) {
        int i = int(idx) / Q, j = int(idx) - (int(idx) / Q) * Q;
        TC s1 = TC(0), s2 = TC(0), y2 = TC(0);
        for (int b = 0; b < B; ++b) {
            TC xb = TC(a[xo + b * Q + j]), yb = TC(a[yo + b * P + i]);
            if (MODE <= 2) {
                TC ub = (hp ? TC(a[po + b * Q + j]) * dp : TC(0)) + xb;
                TC vb = (hq ? TC(a[qo + b * P + i]) * dm : TC(0)) + yb;
                s1 += yb * ub;
                s2 += vb * xb;
                if (i == 0) o[uo + b * Q + j] = IN_TS(ub);
                if (j == 0) o[vo + b * P + i] = IN_TS(vb);
            } else {
                s1 += yb * xb;
                y2 += yb * yb;
            }
        }
        s1 *= inv;
        s2 *= inv;
        y2 *= inv;
        int k = pc.off[0] + int(idx);
        TC wij = TC(w[k]);
        if (MODE == 2) {
            wij = wij + ap * (hi - wij) * s1 - am * (wij - lo) * s2;
        } else if (MODE <= 1) {
            wij = wij + ap * s1 - am * s2;
            if (MODE == 1) wij = min(max(wij, lo), hi);
        } else if (MODE == 3) {
            wij = wij + ap * s1 - am * wij;
        } else {
            wij = wij + ap * (s1 - y2 * wij);
        }
        w[k] = IN_TS(wij);
    }
}
