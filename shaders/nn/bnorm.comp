#version 450
// Training-mode batch normalization over a contiguous x (N, C, S) (grilly.array.normalization),
// one workgroup per channel c (grid-stride over channels), n = N S values each:
//   OP 0: mean = sum(x) / n, var = sum((x - mean)^2) / n, invstd = 1 / sqrt(var + eps)
//         (two passes, the second centred), then y = (x - mean) invstd w + b.
//         Bindings: y, [mean (C) | invstd (C)] (written), x, w, b.
//   OP 1: sg = sum(g), sgx = sum(g (x - mean) invstd); gw = sgx and gb = sg, and (flag 4)
//         gx = w invstd (g - sg/n - xhat sgx/n).
//         Bindings: gx, gw, x, g, gb, mean, invstd, w (gw and gb their own buffers, mean,
//         invstd and w read where they are: no copies).
// The vectors are unit-strided. pc.shape = (N, C, S, flags: 1 has w, 2 has b, 4 wants gx);
// pc.off = (y or gx, [mean | invstd] or gw, x, w or g); pc.st = eps (float bits; two words for
// float64), then the offsets of b or gb (st[2]), mean (st[3]), invstd (st[4]), w (st[5], OP 1).
//   OP 2: the running statistics, one invocation per channel, in place (eval-mode stats):
//         rm = rm (1 - m) + mean m, rv = rv (1 - m) + ((1 / invstd^2 - eps) n/(n-1)) m, the
//         composition's operations in its order (grilly.array.normalization). Bindings: rm, rv
//         (written), mean, invstd; pc.off their offsets, pc.shape[1] = C, pc.st the scalars
//         1 - m, m, eps, n/(n-1) (float bits; two words each for float64).
// Sums: a lane's run, then a tree.
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
layout(set = 0, binding = 1) buffer S { IN_TS aux[]; };
layout(set = 0, binding = 2) readonly buffer X { IN_TS x[]; };
layout(set = 0, binding = 3) readonly buffer G { IN_TS g[]; };
layout(set = 0, binding = 4) buffer B4 { IN_TS b4[]; };
layout(set = 0, binding = 5) readonly buffer B5 { IN_TS mb[]; };
layout(set = 0, binding = 6) readonly buffer B6 { IN_TS ib[]; };
layout(set = 0, binding = 7) readonly buffer B7 { IN_TS wb[]; };

shared TC r1[WG];
shared TC r2[WG];

TC eps() {
#if IN_BITS == 64
    return packDouble2x32(uvec2(uint(pc.st[0]), uint(pc.st[1])));
#else
    return uintBitsToFloat(uint(pc.st[0]));
#endif
}

TC scalar(int k) {   // OP 2's k-th scalar
#if IN_BITS == 64
    return packDouble2x32(uvec2(uint(pc.st[2 * k]), uint(pc.st[2 * k + 1])));
#else
    return uintBitsToFloat(uint(pc.st[k]));
#endif
}

void running_stats() {
    TC keep = scalar(0), m = scalar(1), e = scalar(2), f = scalar(3);
    for (uint c = gl_GlobalInvocationID.x; c < uint(pc.shape[1]); c += gl_NumWorkGroups.x * WG) {
        precise TC inv = TC(g[pc.off[3] + c]);
        precise TC bv = (DIV(TC(1), inv * inv) - e) * f;
        precise TC rm = TC(o[pc.off[0] + c]) * keep + TC(x[pc.off[2] + c]) * m;
        precise TC rv = TC(aux[pc.off[1] + c]) * keep + bv * m;
        o[pc.off[0] + c] = IN_TS(rm);
        aux[pc.off[1] + c] = IN_TS(rv);
    }
}

// tree sums of r1 (and r2) over the workgroup; every lane gets the totals
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
    if (OP == 2) {
        running_stats();
        return;
    }
    int N = pc.shape[0], C = pc.shape[1], S = pc.shape[2], flags = pc.shape[3];
    int n = N * S;
    uint lane = gl_LocalInvocationID.x;
    TC cnt = TC(n);
    for (uint cu = gl_WorkGroupID.x; cu < uint(C); cu += gl_NumWorkGroups.x) {
        int c = int(cu);
        int xb = pc.off[2] + c * S, ab = pc.off[1];
        TC w = (flags & 1) == 0 ? TC(1)
             : OP == 0 ? TC(g[pc.off[3] + c]) : TC(wb[pc.st[5] + c]);
        if (OP == 0) {
            TC s = TC(0), z = TC(0);
            for (int e = int(lane); e < n; e += WG) {
                int q = e / S;
                s += TC(x[xb + q * C * S + (e - q * S)]);
            }
            reduce2(lane, s, z);
            TC m = DIV(s, cnt);
            TC v = TC(0);
            for (int e = int(lane); e < n; e += WG) {
                int q = e / S;
                TC d = TC(x[xb + q * C * S + (e - q * S)]) - m;
                v += d * d;
            }
            reduce2(lane, v, z);
            TC inv = DIV(TC(1), SQRT(DIV(v, cnt) + eps()));
            TC b = (flags & 2) != 0 ? TC(b4[pc.st[2] + c]) : TC(0);
            TC k = inv * w;
            for (int e = int(lane); e < n; e += WG) {
                int q = e / S, at = q * C * S + c * S + (e - q * S);
                o[pc.off[0] + at] = IN_TS((TC(x[pc.off[2] + at]) - m) * k + b);
            }
            if (lane == 0) {
                aux[ab + c] = IN_TS(m);
                aux[ab + C + c] = IN_TS(inv);
            }
        } else {
            TC m = TC(mb[pc.st[3] + c]), inv = TC(ib[pc.st[4] + c]);
            TC sg = TC(0), sgx = TC(0);
            for (int e = int(lane); e < n; e += WG) {
                int q = e / S, at = q * C * S + c * S + (e - q * S);
                TC gv = TC(g[pc.off[3] + at]);
                sg += gv;
                sgx += gv * (TC(x[pc.off[2] + at]) - m);
            }
            reduce2(lane, sg, sgx);
            sgx *= inv;
            if ((flags & 4) != 0) {
                TC k = w * inv, a = DIV(sg, cnt), bb = DIV(sgx, cnt);
                for (int e = int(lane); e < n; e += WG) {
                    int q = e / S, at = q * C * S + c * S + (e - q * S);
                    TC xh = (TC(x[pc.off[2] + at]) - m) * inv;
                    o[pc.off[0] + at] = IN_TS(k * (TC(g[pc.off[3] + at]) - a - xh * bb));
                }
            }
            if (lane == 0) {
                aux[ab + c] = IN_TS(sgx);
                b4[pc.st[2] + c] = IN_TS(sg);
            }
        }
    }
}
