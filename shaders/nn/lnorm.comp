#version 450
// Layer normalization over the rows of a contiguous x (M, D) (grilly.array.normalization),
// a workgroup per block of R consecutive rows (pc.shape[2]), a row at a time:
//   OP 0: mean = sum(x) / D, var = sum((x - mean)^2) / D (two passes, the second centred),
//         rstd = 1 / sqrt(var + eps), y = (x - mean) rstd w + b.
//         Bindings: o = [y (M D) | mean (M) | rstd (M)], x, w, b.
//   OP 1: xhat = (x - mean) rstd, gh = g w; (flag 4) gx = rstd (gh - sum(gh) / D - xhat
//         sum(gh xhat) / D); and per workgroup the column partials of g xhat and of g over its
//         rows, written to its own slice of o (the caller sums the slices: g_w and g_b).
//         Bindings: o = [gx (M D, when wanted) | partials (groups, 2, D)], x, g, w, mean, rstd
//         (read where the forward left them: no copy).
// pc.shape = (M, D, R, flags: 1 has w, 2 has b, 4 wants gx); pc.off = (o, x, g or w, w or b);
// pc.st = (mean, rstd, partials) offsets (OP 0: in o; OP 1: mean and rstd at bindings 4 and 5,
// unit-strided), then eps (float bits; two words for float64).
#include "../common.glsl"
#if IN_BITS == 64
#define SQRT(x) sqrt(x)
#define DIV(a, b) ((a) / (b))
#else
#include "../math_f32.glsl"
#define SQRT(x) sqrt_f(x)
#define DIV(a, b) div_f(a, b)
#endif

layout(constant_id = 0) const int OP = 0;

#define TC IN_TC
layout(set = 0, binding = 0) buffer O { IN_TS o[]; };
layout(set = 0, binding = 1) readonly buffer X { IN_TS x[]; };
layout(set = 0, binding = 2) readonly buffer P { IN_TS p[]; };
layout(set = 0, binding = 3) readonly buffer Q { IN_TS q[]; };
layout(set = 0, binding = 4) readonly buffer MB { IN_TS mb[]; };
layout(set = 0, binding = 5) readonly buffer RB { IN_TS rb[]; };

shared TC r1[WG];
shared TC r2[WG];

TC eps() {
#if IN_BITS == 64
    return packDouble2x32(uvec2(uint(pc.st[3]), uint(pc.st[4])));
#else
    return uintBitsToFloat(uint(pc.st[3]));
#endif
}

// tree sums of a and b over the workgroup; every lane gets the totals
void reduce2(uint lane, inout TC a, inout TC b) {
    r1[lane] = a;
    r2[lane] = b;
    barrier();
    for (uint h = WG / 2; h > 0; h >>= 1) {
        if (lane < h) {
            r1[lane] += r1[lane + h];
            r2[lane] += r2[lane + h];
        }
        barrier();
    }
    a = r1[0];
    b = r2[0];
    barrier();
}

void main() {
    int M = pc.shape[0], D = pc.shape[1], R = pc.shape[2], flags = pc.shape[3];
    uint lane = gl_LocalInvocationID.x;
    TC cnt = TC(D);
    bool hw = (flags & 1) != 0, hb = (flags & 2) != 0;
    int mo = pc.off[0] + pc.st[0], ro = pc.off[0] + pc.st[1];
    for (uint wg = gl_WorkGroupID.x; wg * uint(R) < uint(M); wg += gl_NumWorkGroups.x) {
        int r0 = int(wg) * R, r1_ = min(M, r0 + R);
        // this workgroup's column partials (OP 1): lane j owns columns j, j + WG, ...
        int pb = pc.off[0] + pc.st[2] + int(wg) * 2 * D;
        if (OP == 1) {
            for (int j = int(lane); j < D; j += WG) {
                o[pb + j] = IN_TS(0);
                o[pb + D + j] = IN_TS(0);
            }
        }
        for (int row = r0; row < r1_; ++row) {
            int xb = pc.off[1] + row * D;
            if (OP == 0) {
                TC s = TC(0), z = TC(0);
                for (int j = int(lane); j < D; j += WG) s += TC(x[xb + j]);
                reduce2(lane, s, z);
                TC m = DIV(s, cnt);
                TC v = TC(0);
                for (int j = int(lane); j < D; j += WG) {
                    TC d = TC(x[xb + j]) - m;
                    v += d * d;
                }
                reduce2(lane, v, z);
                TC rs = DIV(TC(1), SQRT(DIV(v, cnt) + eps()));
                int yb = pc.off[0] + row * D;
                for (int j = int(lane); j < D; j += WG) {
                    TC y = (TC(x[xb + j]) - m) * rs;
                    if (hw) y *= TC(p[pc.off[2] + j]);
                    if (hb) y += TC(q[pc.off[3] + j]);
                    o[yb + j] = IN_TS(y);
                }
                if (lane == 0) {
                    o[mo + row] = IN_TS(m);
                    o[ro + row] = IN_TS(rs);
                }
            } else {
                TC m = TC(mb[pc.st[0] + row]), rs = TC(rb[pc.st[1] + row]);
                int gb = pc.off[2] + row * D;
                TC sg = TC(0), sgx = TC(0);
                for (int j = int(lane); j < D; j += WG) {
                    TC gv = TC(p[gb + j]);
                    TC xh = (TC(x[xb + j]) - m) * rs;
                    // the column partials: owned by this lane, so no other lane touches them
                    o[pb + j] = IN_TS(TC(o[pb + j]) + gv * xh);
                    o[pb + D + j] = IN_TS(TC(o[pb + D + j]) + gv);
                    TC gh = hw ? gv * TC(q[pc.off[3] + j]) : gv;
                    sg += gh;
                    sgx += gh * xh;
                }
                if ((flags & 4) != 0) {
                    reduce2(lane, sg, sgx);
                    TC a = DIV(sg, cnt), b = DIV(sgx, cnt);
                    int ob = pc.off[0] + row * D;
                    for (int j = int(lane); j < D; j += WG) {
                        TC gv = TC(p[gb + j]);
                        TC gh = hw ? gv * TC(q[pc.off[3] + j]) : gv;
                        TC xh = (TC(x[xb + j]) - m) * rs;
                        o[ob + j] = IN_TS(rs * (gh - a - xh * b));
                    }
                }
            }
        }
    }
}
