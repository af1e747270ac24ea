#version 450
// Max pooling with the window index of each maximum (grilly.array.conv.max_pool2d), contiguous
// (N*C, H, W) images and (N*C, Ho, Wo) outputs:
//   OP 0, one invocation per output (p, a, b): the maximum of the window's image positions
//        (padding takes no part) scanned row by row, the first maximum winning (torch's choice
//        among ties: the gradient goes where torch's does) and a NaN winning over all;
//        idx = j*KH + i of that offset (im2col's kw-major window index).
//   OP 1, one invocation per image position (p, r, q): the sum of g over the outputs whose
//        window covers it and whose idx names it (a gather: no atomics, a fixed order).
// pc.n = invocations; pc.shape = (N*C, H, W, Ho, Wo); pc.st[0..7] = KH, KW, SH, SW, DH, DW,
// top, left; pc.off = (out, idx, in): the written buffers bind first.
// OP 1 with VEC = 2 (the 2x2/2 pool without padding or dilation, W even, 16- or 32-bit
// elements, out offset even): one invocation per pair of adjacent positions, which share their
// window: one index and one gradient read, the pair's raw bits in one 32- or 64-bit store.
#include "../common.glsl"
#include "../io16.glsl"

layout(constant_id = 0) const int OP = 0;
layout(constant_id = 3) const int VEC = 1;

#define TC IN_TC
layout(set = 0, binding = 0) buffer O { IN_TS o[]; };
layout(set = 0, binding = 1) buffer I { int idx[]; };
layout(set = 0, binding = 2) readonly buffer A { IN_TS a[]; };
#if IN_BITS == 16 || IN_BITS == 32
// raw views of the same buffers (aliased bindings): the pairs move bits
#define PAIRS 1
#if IN_BITS == 16
layout(set = 0, binding = 0) writeonly buffer OP2 { uint o2[]; };
layout(set = 0, binding = 2) readonly buffer AR { uint16_t ar[]; };
#else
layout(set = 0, binding = 0) writeonly buffer OP2 { uvec2 o2[]; };
layout(set = 0, binding = 2) readonly buffer AR { uint ar[]; };
#endif
#endif

void main() {
    int H = pc.shape[1], W = pc.shape[2], Ho = pc.shape[3], Wo = pc.shape[4];
    int KH = pc.st[0], KW = pc.st[1], SH = pc.st[2], SW = pc.st[3], DH = pc.st[4], DW = pc.st[5];
    int PT = pc.st[6], PL = pc.st[7];
    for (uint e = gl_GlobalInvocationID.x; e < pc.n; e += gl_NumWorkGroups.x * WG) {
#ifdef PAIRS
        if (OP == 1 && VEC == 2) {
            int e2 = int(e) * 2;
            int p = e2 / (H * W), rem = e2 - p * (H * W);
            int r = rem / W, q = rem - r * W;   // (q even: q and q + 1 share window ob)
            int oa = r >> 1, ob = q >> 1;
            uint s0 = 0u, s1 = 0u;
            if (oa < Ho) {
                int k = p * Ho * Wo + oa * Wo + ob;
                int id = idx[pc.off[1] + k];
                uint v = uint(ar[pc.off[2] + k]);
                if (id == (r & 1)) s0 = v;
                else if (id == 2 + (r & 1)) s1 = v;
            }
#if IN_BITS == 16
            o2[(pc.off[0] + e2) >> 1] = s0 | (s1 << 16);
#else
            o2[(pc.off[0] + e2) >> 1] = uvec2(s0, s1);
#endif
            continue;
        }
#endif
        if (OP == 0) {
            int p = int(e) / (Ho * Wo), rem = int(e) - p * (Ho * Wo);
            int oa = rem / Wo, ob = rem - oa * Wo;
            int base = pc.off[2] + p * H * W;
            TC best = TC(0);
            int bk = -1;
            for (int i = 0; i < KH; ++i) {
                int r = oa * SH + i * DH - PT;
                if (r < 0 || r >= H) continue;
                for (int j = 0; j < KW; ++j) {
                    int c = ob * SW + j * DW - PL;
                    if (c < 0 || c >= W) continue;
                    TC v = LD_IN(a[base + r * W + c]);
                    if (bk < 0 || v > best || (isnan(v) && !isnan(best))) {
                        best = v;
                        bk = j * KH + i;
                    }
                }
            }
            o[pc.off[0] + int(e)] = ST_IN(best);
            idx[pc.off[1] + int(e)] = bk;
        } else {
            int p = int(e) / (H * W), rem = int(e) - p * (H * W);
            int r = rem / W, q = rem - r * W;
            int base = p * Ho * Wo;
            TC s = TC(0);
            if (KH == 2 && KW == 2 && SH == 2 && SW == 2 && DH == 1 && DW == 1 && PT == 0
                    && PL == 0) {
                // the common 2x2/2 pool: one window holds each position, offset (r & 1, q & 1)
                int oa = r >> 1, ob = q >> 1;
                if (oa < Ho && ob < Wo) {
                    int k = base + oa * Wo + ob;
                    if (idx[pc.off[1] + k] == (q & 1) * 2 + (r & 1)) s = LD_IN(a[pc.off[2] + k]);
                }
                o[pc.off[0] + int(e)] = ST_IN(s);
                continue;
            }
            for (int j = 0; j < KW; ++j) {
                int bq = q + PL - j * DW;            // = ob * SW
                if (bq < 0 || bq % SW != 0) continue;
                int ob = bq / SW;
                if (ob >= Wo) continue;
                for (int i = 0; i < KH; ++i) {
                    int ar = r + PT - i * DH;        // = oa * SH
                    if (ar < 0 || ar % SH != 0) continue;
                    int oa = ar / SH;
                    if (oa >= Ho) continue;
                    int k = base + oa * Wo + ob;
                    if (idx[pc.off[1] + k] == j * KH + i) s += LD_IN(a[pc.off[2] + k]);
                }
            }
            o[pc.off[0] + int(e)] = ST_IN(s);
        }
    }
}
