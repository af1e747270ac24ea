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
// OP 0 with VEC = 2 (the same pool, W a multiple of 4, (Ho, Wo) = (H/2, W/2), the input offset
// a multiple of 4, the outputs' even): one invocation per pair of adjacent outputs, whose two
// windows are four adjacent elements of two rows: one 64-bit (16-bit elements) or 128-bit load
// a row, the pair's maxima (the winners' raw bits) and indices in one store each.
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
layout(set = 0, binding = 1) writeonly buffer I2 { ivec2 idx2[]; };
#if IN_BITS == 16
layout(set = 0, binding = 0) writeonly buffer OP2 { uint o2[]; };
layout(set = 0, binding = 2) readonly buffer AR { uint16_t ar[]; };
layout(set = 0, binding = 2) readonly buffer AR4 { uvec2 ar4[]; };   // four elements a load
#else
layout(set = 0, binding = 0) writeonly buffer OP2 { uvec2 o2[]; };
layout(set = 0, binding = 2) readonly buffer AR { uint ar[]; };
layout(set = 0, binding = 2) readonly buffer AR4 { uvec4 ar4[]; };
#endif

// an element's raw bits as the float it holds (exact)
float raw_value(uint b) {
#if IN_BITS == 32
    return uintBitsToFloat(b);
#elif defined(IN_BF16) && IN_BF16
    return uintBitsToFloat(b << 16);
#else
    return unpackHalf2x16(b).x;
#endif
}

// the scan position (0 to 3: row 0's two, then row 1's) of a 2x2 window's first maximum, a
// NaN winning over all (the scan of OP 0 below)
int first_max(float v0, float v1, float v2, float v3) {
    float best = v0;
    int s = 0;
    if (v1 > best || (isnan(v1) && !isnan(best))) { best = v1; s = 1; }
    if (v2 > best || (isnan(v2) && !isnan(best))) { best = v2; s = 2; }
    if (v3 > best || (isnan(v3) && !isnan(best))) { s = 3; }
    return s;
}

uint pick(uint a0, uint a1, uint a2, uint a3, int s) {
    return s == 0 ? a0 : s == 1 ? a1 : s == 2 ? a2 : a3;
}
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
        if (OP == 0 && VEC == 2) {
            int e2 = int(e) * 2;
            int p = e2 / (Ho * Wo), rem = e2 - p * (Ho * Wo);
            int oa = rem / Wo, ob = rem - oa * Wo;   // (ob even: outputs ob and ob + 1)
            int i0 = pc.off[2] + p * H * W + 2 * oa * W + 2 * ob;   // (a multiple of 4)
#if IN_BITS == 16
            uvec2 t = ar4[i0 >> 2], u = ar4[(i0 + W) >> 2];
            uint t0 = t.x & 0xffffu, t1 = t.x >> 16, t2 = t.y & 0xffffu, t3 = t.y >> 16;
            uint u0 = u.x & 0xffffu, u1 = u.x >> 16, u2 = u.y & 0xffffu, u3 = u.y >> 16;
#else
            uvec4 t = ar4[i0 >> 2], u = ar4[(i0 + W) >> 2];
            uint t0 = t.x, t1 = t.y, t2 = t.z, t3 = t.w, u0 = u.x, u1 = u.y, u2 = u.z, u3 = u.w;
#endif
            int s0 = first_max(raw_value(t0), raw_value(t1), raw_value(u0), raw_value(u1));
            int s1 = first_max(raw_value(t2), raw_value(t3), raw_value(u2), raw_value(u3));
            uint b0 = pick(t0, t1, u0, u1, s0), b1 = pick(t2, t3, u2, u3, s1);
#if IN_BITS == 16
            o2[(pc.off[0] + e2) >> 1] = b0 | (b1 << 16);
#else
            o2[(pc.off[0] + e2) >> 1] = uvec2(b0, b1);
#endif
            // scan position s is (i, j) = (s >> 1, s & 1): index j * KH + i
            idx2[(pc.off[1] + e2) >> 1] = ivec2(((s0 & 1) << 1) | (s0 >> 1),
                                                ((s1 & 1) << 1) | (s1 >> 1));
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
