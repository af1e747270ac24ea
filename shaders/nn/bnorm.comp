#version 450
// Training-mode batch normalization over a contiguous x (N, C, S) (grilly.array.normalization),
// one workgroup per channel c (grid-stride over channels), n = N S values each:
//   OP 0: mean = sum(x) / n, var = sum((x - mean)^2) / n, invstd = 1 / sqrt(var + eps)
//         (two passes, the second centred), then y = (x - mean) invstd w + b;
//         aux = [mean (C) | invstd (C) | w (C) | b (C)], the first two written here.
//   OP 1: sg = sum(g), sgx = sum(g (x - mean) invstd); aux = [mean | invstd | w | gw | gb] with
//         gw = sgx and gb = sg written here, and (flag 4) gx = w invstd (g - sg/n - xhat sgx/n).
// pc.shape = (N, C, S, flags: 1 has w, 2 has b, 4 wants gx); pc.off = (y or gx, aux, x, g);
// pc.st[0..] = eps (float bits; two words for float64). Sums: a lane's run, then a tree.
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

shared TC r1[WG];
shared TC r2[WG];

TC eps() {
#if IN_BITS == 64
    return packDouble2x32(uvec2(uint(pc.st[0]), uint(pc.st[1])));
#else
    return uintBitsToFloat(uint(pc.st[0]));
#endif
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
    int N = pc.shape[0], C = pc.shape[1], S = pc.shape[2], flags = pc.shape[3];
    int n = N * S;
    uint lane = gl_LocalInvocationID.x;
    TC cnt = TC(n);
    for (uint cu = gl_WorkGroupID.x; cu < uint(C); cu += gl_NumWorkGroups.x) {
        int c = int(cu);
        int xb = pc.off[2] + c * S, ab = pc.off[1];
        TC w = (flags & 1) != 0 ? TC(aux[ab + 2 * C + c]) : TC(1);
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
            TC b = (flags & 2) != 0 ? TC(aux[ab + 3 * C + c]) : TC(0);
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
            TC m = TC(aux[ab + c]), inv = TC(aux[ab + C + c]);
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
                aux[ab + 3 * C + c] = IN_TS(sgx);
                aux[ab + 4 * C + c] = IN_TS(sg);
            }
        }
    }
}
