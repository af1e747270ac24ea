#version 450
// Cross entropy of (N, C) logits x (contiguous) against int64 class indices t
// (grilly.array.fused.cross_entropy; with pc.shape[2] = 1 a row whose index is pc.shape[3]
// (ignore_index) takes no part and any other row outside [0, C) makes the result NaN; with
// pc.shape[2] = 0 every row outside [0, C) takes no part):
//   OP 0, one workgroup: each lane sums -log_softmax(x[r])[t[r]] over its rows and counts the
//        counted rows; the workgroup reduces both and lane 0 writes o[off0] = total (/ count
//        when MEAN; 0 / 0 is NaN, as torch gives).
//   OP 1, one workgroup: counts the rows and writes o[off0] = g[off3] (/ count when MEAN): the
//        backward's per-row scale.
//   OP 2, one invocation per row: o[r, :] = (softmax(x[r]) - onehot(t[r])) * s, s = g[off3]
//        (OP 1's result); zero rows where t[r] is ignored, NaN rows where it is out of range.
// pc.n = N; pc.shape = (N, C); pc.off = (o, x, t (in int32 words), g). Each row's max and
// log-sum-exp come from the float32 (float64) library, not the driver's exp/log.
#include "../common.glsl"
#if IN_BITS == 64
#include "../math_f64.glsl"
#define EXP exp_d
#define LN log_d
#else
#include "../math_f32.glsl"
#define EXP exp_f
#define LN log_f
#endif

layout(constant_id = 0) const int OP = 0;
layout(constant_id = 2) const int MEAN = 1;

#define TC IN_TC
layout(set = 0, binding = 0) buffer O { IN_TS o[]; };
layout(set = 0, binding = 1) readonly buffer X { IN_TS x[]; };
layout(set = 0, binding = 2) readonly buffer T { int t[]; };   // int64 as (low, high) words
layout(set = 0, binding = 3) readonly buffer G { IN_TS g[]; };

shared TC ssum[WG];
shared TC scnt[WG];

#define NEG_INF TC(uintBitsToFloat(0xff800000u))

#define NAN_T TC(uintBitsToFloat(0x7fc00000u))

// the row's class index; -1 where the row takes no part (ignored), -2 where its index lies
// outside [0, C) and is not the ignore_index (the result is NaN: torch raises there)
int target(int r, int C) {
    int lo = t[pc.off[2] + 2 * r], hi = t[pc.off[2] + 2 * r + 1];
    if (hi == 0 && lo >= 0 && lo < C) return lo;
    if (pc.shape[2] == 0) return -1;
    int ig = pc.shape[3];
    return (lo == ig && hi == (ig < 0 ? -1 : 0)) ? -1 : -2;
}

// (max, log(sum(exp(x - max)))) of row r
void lse(int r, int C, out TC m, out TC ls) {
    int b = pc.off[1] + r * C;
    m = NEG_INF;
    for (int c = 0; c < C; ++c) m = max(m, TC(x[b + c]));
    TC s = TC(0);
    for (int c = 0; c < C; ++c) s += EXP(TC(x[b + c]) - m);
    ls = LN(s);
}

void reduce_to_lane0(uint lane) {
    barrier();
    for (uint h = WG / 2; h > 0; h >>= 1) {
        if (lane < h) {
            ssum[lane] += ssum[lane + h];
            scnt[lane] += scnt[lane + h];
        }
        barrier();
    }
}

void main() {
    int N = pc.shape[0], C = pc.shape[1];
    if (OP == 2) {
        for (uint r = gl_GlobalInvocationID.x; r < pc.n; r += gl_NumWorkGroups.x * WG) {
            int k = target(int(r), C), b = pc.off[1] + int(r) * C, ob = pc.off[0] + int(r) * C;
            if (k < 0) {
                IN_TS v = k == -1 ? IN_TS(0) : IN_TS(NAN_T);
                for (int c = 0; c < C; ++c) o[ob + c] = v;
                continue;
            }
            TC m, ls;
            lse(int(r), C, m, ls);
            TC s = TC(g[pc.off[3]]);
            for (int c = 0; c < C; ++c) {
                TC p = EXP((TC(x[b + c]) - m) - ls) * s;
                o[ob + c] = IN_TS(c == k ? p - s : p);
            }
        }
        return;
    }
    uint lane = gl_LocalInvocationID.x;
    TC tot = TC(0), cnt = TC(0);
    for (int r = int(lane); r < N; r += WG) {
        int k = target(r, C);
        if (k < 0) {
            if (k == -2 && OP == 0) tot += NAN_T;
            continue;
        }
        cnt += TC(1);
        if (OP == 0) {
            TC m, ls;
            lse(r, C, m, ls);
            tot += ls - (TC(x[pc.off[1] + r * C + k]) - m);
        }
    }
    ssum[lane] = tot;
    scnt[lane] = cnt;
    reduce_to_lane0(lane);
    if (lane == 0) {
        TC v = OP == 0 ? ssum[0] : TC(g[pc.off[3]]);
        o[pc.off[0]] = IN_TS(MEAN != 0 ? v / scnt[0] : v);
    }
}
