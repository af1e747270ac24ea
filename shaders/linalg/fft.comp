#version 450
// Batched one-dimensional DFTs of length L = 2^logL <= SMAX (grilly/backends/vulkan/fft.py):
// one workgroup transforms SMAX / L rows in shared memory (bit-reversed load, then logL
// in-place radix-2 passes), so any power of two up to SMAX is one dispatch and larger ones
// are two (the four-step split, fft.py), and other lengths are Bluestein's convolution.
//
// Row r of pc.rows is (b, m, i) = (r / (mid * inner), (r / inner) % mid, r % inner). Element j
// of the row is the input's global index g = ge * j + gm * m: read from
// in_off + b * in_b + i * in_i + g * in_g when g < nvalid (zero beyond: padding, and cropping
// of longer inputs); with herm_n > 0 the input is a Hermitian half spectrum of length
// herm_n (fft_c2r): index g >= herm_n / 2 + 1 reads conj(x[herm_n - g]). The read value is
// multiplied by tables[pre_off + g] when pre_off >= 0 (Bluestein's chirp).
// Output element k has global index h = oe * k + om * m and goes to
// out_off + b * out_b + i * out_i + h * out_g when h < nout, multiplied by the twiddle
// W_N^(m * k) (N = 2^tw_log, the four-step split; from two tables, W_N^(t_hi * SMAX) at tw_hi
// and W_N^t_lo at tw_lo) when tw_log > 0, by tables[post_off + h] when post_off >= 0, and by
// scale. W_n = exp(-2 pi i / n), conjugated when inv (the inverse transform).
// The stage twiddles W_SMAX^k (k < SMAX / 2) are tables[stage_off + k]. Every table is
// computed on the host in float64 (exact arguments) and rounded once.
#define OWN_PUSH_CONSTANTS
#include "../common.glsl"

#if IS_F64
#define R double
#define CX dvec2
#define LOGS 11
#else
#define R float
#define CX vec2
#define LOGS 12
#endif
#define SMAX (1 << LOGS)

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

shared CX s[SMAX];

CX cmul(CX a, CX b) { return CX(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
CX conj_if(CX a, bool c) { return c ? CX(a.x, -a.y) : a; }

void main() {
    uint L = 1u << pc.logL;
    uint per = SMAX >> pc.logL;           // rows per workgroup
    uint lane = gl_LocalInvocationID.x;
    uint total = per * L;
    bool inv = pc.inv != 0u;
    uint hstart = pc.herm_n / 2u + 1u;
    uint groups = (pc.rows + per - 1u) / per;
#if IS_F64
    R scale = packDouble2x32(pc.scale);
#else
    R scale = uintBitsToFloat(pc.scale.x);
#endif
    uint mask = (1u << pc.tw_log) - 1u;
    // (more row groups than workgroups: the dispatch's size is capped at 65535)
    for (uint wg = gl_WorkGroupID.x; wg < groups; wg += gl_NumWorkGroups.x) {
    uint row0 = wg * per;

    // load, bit-reversed within each row
    for (uint t = lane; t < total; t += WG) {
        uint p = t >> pc.logL, j = t & (L - 1u), r = row0 + p;
        CX v = CX(0);
        if (r < pc.rows) {
            uint b = r / (pc.mid * pc.inner), m = (r / pc.inner) % pc.mid, i = r % pc.inner;
            uint g = pc.ge * j + pc.gm * m;
            uint src = g;
            bool cj = false;
            if (pc.herm_n > 0u && g >= hstart) {
                src = g < pc.herm_n ? pc.herm_n - g : 0xffffffffu;   // (g >= n: padding)
                cj = true;
            }
            if (src < pc.nvalid) {
                v = conj_if(x[pc.in_off + b * pc.in_b + i * pc.in_i + src * pc.in_g], cj);
                if (pc.pre_off >= 0) v = cmul(v, tables[uint(pc.pre_off) + g]);
            }
        }
        uint rj = pc.logL == 0u ? 0u : bitfieldReverse(j) >> (32u - pc.logL);
        s[(p << pc.logL) + rj] = v;
    }
    barrier();

    // radix-2 passes: butterflies of span h = 2^(st - 1)
    uint halfTotal = total >> 1;
    for (uint st = 1u; st <= pc.logL; ++st) {
        uint h = 1u << (st - 1u);
        for (uint t = lane; t < halfTotal; t += WG) {
            uint p = t >> (pc.logL - 1u), q = t & ((L >> 1) - 1u);
            uint j = q & (h - 1u);
            uint i0 = (p << pc.logL) + ((q >> (st - 1u)) << st) + j;
            CX w = conj_if(tables[pc.stage_off + (j << (LOGS - st))], inv);
            CX a = s[i0], c = cmul(s[i0 + h], w);
            s[i0] = a + c;
            s[i0 + h] = a - c;
        }
        barrier();
    }

    // store
    for (uint t = lane; t < total; t += WG) {
        uint p = t >> pc.logL, k = t & (L - 1u), r = row0 + p;
        if (r >= pc.rows) continue;
        uint b = r / (pc.mid * pc.inner), m = (r / pc.inner) % pc.mid, i = r % pc.inner;
        uint hh = pc.oe * k + pc.om * m;
        if (hh >= pc.nout) continue;
        CX v = s[t];
        if (pc.tw_log > 0u) {
            uint e = (m * k) & mask;   // (m * k < 2^32: m, k < N <= 2^(2 LOGS))
            CX w = cmul(tables[pc.tw_hi + (e >> LOGS)], tables[pc.tw_lo + (e & (SMAX - 1u))]);
            v = cmul(v, conj_if(w, inv));
        }
        if (pc.post_off >= 0) v = cmul(v, tables[uint(pc.post_off) + hh]);
        o[pc.out_off + b * pc.out_b + i * pc.out_i + hh * pc.out_g] = v * scale;
    }
    barrier();   // (the next group's load reuses s)
    }
}
