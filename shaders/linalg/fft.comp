#version 450
// Batched one-dimensional DFTs of length L = 2^logL <= SMAX = 2^LOGS (a specialization
// constant, chosen per length by grilly/backends/vulkan/fft.py within what the device's shared
// memory holds): one workgroup transforms SMAX / L rows in shared memory, so any power of two
// up to TMAX = 2^LOGT (the largest SMAX) is one dispatch and larger ones are two (the
// four-step split, fft.py); other lengths are Bluestein's convolution. In shared memory: Stockham's autosort passes of radix 8 (4 or 2 for
// what is left), each thread holding E = SMAX / WG elements in registers; a pass with
// sub-transform length Ns reads v[r] = X[j + r L / R], multiplies by W_(Ns R)^(r (j mod Ns)),
// transforms the R values and writes them to Y[(j / Ns) Ns R + j mod Ns + r Ns].
//
// Row r of pc.rows is (b, m, i) = (r / (mid * inner), (r / inner) % mid, r % inner). Element j
// of the row is the input's global index g = ge * j + gm * m: read from
// in_off + b * in_b + i * in_i + g * in_g when g < nvalid (zero beyond: padding, and cropping
// of longer inputs); with herm_n > 0 the input is a Hermitian half spectrum of length
// herm_n (fft_c2r): index g >= herm_n / 2 + 1 reads conj(x[herm_n - g]). The read value is
// multiplied by tables[pre_off + g] when pre_off >= 0 (Bluestein's chirp).
// Output element k has global index h = oe * k + om * m and goes to
// out_off + b * out_b + i * out_i + h * out_g when h < nout, multiplied by the twiddle
// W_N^(m * k) (N = 2^tw_log, the four-step split; from two tables, W_N^(t_hi * TMAX) at tw_hi
// and W_N^t_lo at tw_lo) when tw_log > 0, by tables[post_off + h] when post_off >= 0, and by
// scale. W_n = exp(-2 pi i / n); the inverse transform (inv) is conj(DFT(conj(x))), its
// four-step twiddles conjugated. The pass twiddles W_TMAX^k (k < TMAX) are
// tables[stage_off + k]. Every table is computed on the host in float64 (exact arguments)
// and rounded once.
#define OWN_PUSH_CONSTANTS
#include "../common.glsl"

#if IS_F64
#define R double
#define CX dvec2
#else
#define R float
#define CX vec2
#endif
layout(constant_id = 0) const uint LOGS = 11;
layout(constant_id = 2) const uint LOGT = 11;   // log2 of the pass twiddles' table
const uint SMAX = 1u << LOGS, TMAX = 1u << LOGT;
const uint E = SMAX / WG;   // elements per thread in a pass (4, 8 or 16)

layout(push_constant) uniform PC {
    uint rows, logL, mid, inner;
    uint in_off, in_b, in_i, in_g, ge, gm, nvalid;
    uint out_off, out_b, out_i, out_g, oe, om, nout;
    uint herm_n;
    int pre_off, post_off;
    uint tw_log, tw_lo, tw_hi;
    uint stage_off, inv;
    uvec2 scale;   // float bits in .x (complex64), double bits (complex128)
} pc;

layout(set = 0, binding = 0) writeonly buffer O { CX o[]; };
layout(set = 0, binding = 1) readonly buffer X { CX x[]; };
layout(set = 0, binding = 2) readonly buffer T { CX tables[]; };

// one padding element per 16: a radix-R pass's strided accesses spread over the banks
shared CX s[SMAX + (SMAX >> 4)];
uint P(uint i) { return i + (i >> 4); }

// a / d and a % d for the row sizes: shifts where d is a power of two (a uniform branch: d is
// a push constant), which every last-axis transform and the four-step's rows are
uint divu(uint a, uint d) { return (d & (d - 1u)) == 0u ? a >> findLSB(d) : a / d; }
uint modu(uint a, uint d) { return (d & (d - 1u)) == 0u ? a & (d - 1u) : a % d; }

CX cmul(CX a, CX b) { return CX(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
CX conj_if(CX a, bool c) { return c ? CX(a.x, -a.y) : a; }
CX mul_mi(CX a) { return CX(a.y, -a.x); }   // a * (-i)

// forward DFTs of v[o], v[o + 1], ... in place (v: the calling pass's registers)
#define DFT2(o) {                                                                             \
    CX a_ = v[o], b_ = v[o + 1];                                                              \
    v[o] = a_ + b_;                                                                           \
    v[o + 1] = a_ - b_;                                                                       \
}
#define DFT4(o) {                                                                             \
    CX t0 = v[o] + v[o + 2], t1 = v[o] - v[o + 2];                                            \
    CX t2 = v[o + 1] + v[o + 3], t3 = mul_mi(v[o + 1] - v[o + 3]);                            \
    v[o] = t0 + t2;                                                                           \
    v[o + 1] = t1 + t3;                                                                       \
    v[o + 2] = t0 - t2;                                                                       \
    v[o + 3] = t1 - t3;                                                                       \
}
#define DFT8(o) {                                                                             \
    const R c = R(0.70710678118654752440LF);                                                  \
    CX e0 = v[o], e1 = v[o + 2], e2 = v[o + 4], e3 = v[o + 6];                                \
    CX d0 = v[o + 1], d1 = v[o + 3], d2 = v[o + 5], d3 = v[o + 7];                            \
    /* DFT4 of the even and the odd elements */                                               \
    CX t0 = e0 + e2, t1 = e0 - e2, t2 = e1 + e3, t3 = mul_mi(e1 - e3);                        \
    CX E0 = t0 + t2, E1 = t1 + t3, E2 = t0 - t2, E3 = t1 - t3;                                \
    t0 = d0 + d2; t1 = d0 - d2; t2 = d1 + d3; t3 = mul_mi(d1 - d3);                           \
    CX O0 = t0 + t2, O1 = t1 + t3, O2 = t0 - t2, O3 = t1 - t3;                                \
    O1 = CX(O1.x + O1.y, O1.y - O1.x) * c;     /* * W8 = (1 - i) / sqrt 2 */                  \
    O2 = mul_mi(O2);                           /* * W8^2 = -i */                              \
    O3 = CX(O3.y - O3.x, -(O3.x + O3.y)) * c;  /* * W8^3 = (-1 - i) / sqrt 2 */               \
    v[o] = E0 + O0; v[o + 4] = E0 - O0;                                                       \
    v[o + 1] = E1 + O1; v[o + 5] = E1 - O1;                                                   \
    v[o + 2] = E2 + O2; v[o + 6] = E2 - O2;                                                   \
    v[o + 3] = E3 + O3; v[o + 7] = E3 - O3;                                                   \
}

// one Stockham pass of radix 2^LR over every row of the workgroup (lns: log2 Ns); a function
// per radix, so that each thread's registers are indexed by constants once the driver
// unrolls the loops (E is a specialization constant)
#define PASS(NAME, LR, DFT)                                                                   \
void NAME(uint lns) {                                                                         \
    const uint Rr = 1u << LR, nb = E >> LR;                                                   \
    CX v[E];                                                                                  \
    uint lq = pc.logL - LR;                                                                   \
    uint lane = gl_LocalInvocationID.x;                                                       \
    for (uint q = 0u; q < nb; ++q) {                                                          \
        uint t = lane + q * WG, p = t >> lq, j = t & ((1u << lq) - 1u);                       \
        uint base = (p << pc.logL) + j;                                                       \
        for (uint r = 0u; r < Rr; ++r) v[q * Rr + r] = s[P(base + (r << lq))];                \
    }                                                                                         \
    barrier();                                                                                \
    for (uint q = 0u; q < nb; ++q) {                                                          \
        uint t = lane + q * WG, p = t >> lq, j = t & ((1u << lq) - 1u);                       \
        uint k = j & ((1u << lns) - 1u);                                                      \
        if (lns > 0u) {   /* W_(Ns R)^(r k) = W_TMAX^(r k TMAX / (Ns R)) */                   \
            uint sh = LOGT - lns - LR;                                                        \
            for (uint r = 1u; r < Rr; ++r)                                                    \
                v[q * Rr + r] = cmul(v[q * Rr + r], tables[pc.stage_off + ((r * k) << sh)]);  \
        }                                                                                     \
        DFT(q * Rr);                                                                          \
        uint base = (p << pc.logL) + ((j >> lns) << (lns + LR)) + k;                          \
        for (uint r = 0u; r < Rr; ++r) s[P(base + (r << lns))] = v[q * Rr + r];               \
    }                                                                                         \
    barrier();                                                                                \
}
PASS(pass8, 3u, DFT8)
PASS(pass4, 2u, DFT4)
PASS(pass2, 1u, DFT2)

void main() {
    uint L = 1u << pc.logL;
    uint per = SMAX >> pc.logL;           // rows per workgroup
    uint lane = gl_LocalInvocationID.x;
    bool inv = pc.inv != 0u;
    uint hstart = pc.herm_n / 2u + 1u;
    uint groups = (pc.rows + per - 1u) / per;
    uint rmax = LOGS - 8u < 3u ? LOGS - 8u : 3u;   // log2 E, at most radix 8
#if IS_F64
    R scale = packDouble2x32(pc.scale);
#else
    R scale = uintBitsToFloat(pc.scale.x);
#endif
    uint mask = (1u << pc.tw_log) - 1u;
    // (more row groups than workgroups: the dispatch's size is capped at 65535)
    for (uint wg = gl_WorkGroupID.x; wg < groups; wg += gl_NumWorkGroups.x) {
        uint row0 = wg * per;
        for (uint t = lane; t < SMAX; t += WG) {
            uint p = t >> pc.logL, j = t & (L - 1u), r = row0 + p;
            CX val = CX(0);
            if (r < pc.rows) {
                uint ri = divu(r, pc.inner), b = divu(ri, pc.mid), m = modu(ri, pc.mid);
                uint i = modu(r, pc.inner);
                uint g = pc.ge * j + pc.gm * m;
                uint src = g;
                bool cj = false;
                if (pc.herm_n > 0u && g >= hstart) {
                    src = g < pc.herm_n ? pc.herm_n - g : 0xffffffffu;   // (g >= n: padding)
                    cj = true;
                }
                if (src < pc.nvalid) {
                    val = conj_if(x[pc.in_off + b * pc.in_b + i * pc.in_i + src * pc.in_g], cj);
                    if (pc.pre_off >= 0) val = cmul(val, tables[uint(pc.pre_off) + g]);
                }
            }
            s[P(t)] = conj_if(val, inv);
        }
        barrier();
        for (uint lns = 0u; lns < pc.logL;) {
            uint lr = min(rmax, pc.logL - lns);
            if (lr == 3u) pass8(lns);
            else if (lr == 2u) pass4(lns);
            else pass2(lns);
            lns += lr;
        }
        for (uint t = lane; t < SMAX; t += WG) {
            uint p = t >> pc.logL, k = t & (L - 1u), r = row0 + p;
            if (r >= pc.rows) continue;
            uint ri = divu(r, pc.inner), b = divu(ri, pc.mid), m = modu(ri, pc.mid);
                uint i = modu(r, pc.inner);
            uint hh = pc.oe * k + pc.om * m;
            if (hh >= pc.nout) continue;
            CX val = conj_if(s[P(t)], inv);
            if (pc.tw_log > 0u) {
                uint e = (m * k) & mask;   // (m * k < 2^32: m, k < N <= 2^(2 LOGT))
                CX w = cmul(tables[pc.tw_hi + (e >> LOGT)], tables[pc.tw_lo + (e & (TMAX - 1u))]);
                val = cmul(val, conj_if(w, inv));
            }
            if (pc.post_off >= 0) val = cmul(val, tables[uint(pc.post_off) + hh]);
            o[pc.out_off + b * pc.out_b + i * pc.out_i + hh * pc.out_g] = val * scale;
        }
        barrier();   // (the next group's load reuses s)
    }
}
