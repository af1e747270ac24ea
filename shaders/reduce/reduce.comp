#version 450
// Reductions over the middle axis of an (outer, red, inner) strided view, for one dtype (IN_*).
// pc.shape = (outer, red, inner, include_initial); pc.st[MAXD..MAXD+2] = the input's strides;
// pc.n = outer * inner outputs, written contiguously from pc.off[0].
// OP (specialization): 0 sum, 1 prod, 2 max, 3 min (ARG=0); 2 argmax, 3 argmin (ARG=1);
// 4 cumulative sum, 5 cumulative prod (ARG=0). PER_THREAD=1 runs one output per invocation
// (short rows, or columns: chunked, see below); otherwise one workgroup per output reduces a
// tree in shared memory.
// Complex (IN_CPLX=1, TC a vec2/dvec2): sum and prod only (no order, no arg variant).
// bfloat16 (IN_BF16=1): its bits widened, float32 arithmetic, results rounded once (io16.glsl).
// OUT_F32 (float16 or bfloat16 input): the float32 accumulator is stored as it is, in a float32 output
// (autocast's bias gradients: float16 rows summed into a float32 master's gradient, one pass).
#include "../common.glsl"
#include "../io16.glsl"

#ifndef IN_CPLX
#define IN_CPLX 0
#endif

layout(constant_id = 0) const int OP = 0;
layout(constant_id = 2) const int PER_THREAD = 0;

#define TC IN_TC
#if ARG
layout(set = 0, binding = 0) writeonly buffer O { int64_t res[]; };
#elif defined(OUT_F32)
layout(set = 0, binding = 0) writeonly buffer O { float res[]; };
#else
layout(set = 0, binding = 0) writeonly buffer O { IN_TS res[]; };
#endif
#ifdef OUT_F32
#define OUT_T(x) float(x)
#else
#define OUT_T(x) ST_IN(x)
#endif
layout(set = 0, binding = 1) readonly buffer A { IN_TS a[]; };

shared TC sv[WG];
#if ARG
shared int si[WG];
#endif

int cop() { return OP >= 4 ? OP - 4 : OP; }

TC ident() {
    int op = cop();
    if (op == 0) return TC(0);
#if IN_CPLX
    return TC(1, 0);
#else
    if (op == 1) return TC(1);
#if IN_KIND == K_F
    TC inf = TC(uintBitsToFloat(0x7f800000u));
    return op == 2 ? -inf : inf;
#elif IN_KIND == K_I
    TC lo = TC(-1) << (IN_BITS - 1);
    return op == 2 ? lo : ~lo;
#elif IN_KIND == K_B
    return op == 2 ? TC(0) : TC(1);
#else
    TC hi = IN_BITS >= 32 ? ~TC(0) : TC((1u << IN_BITS) - 1u);
    return op == 2 ? TC(0) : hi;
#endif
#endif
}

bool isnan_(TC x) {
#if IN_CPLX
    return false;
#elif IN_KIND == K_F
    return isnan(x);
#else
    return false;
#endif
}

TC comb(TC x, TC y) {
    int op = cop();
    if (op == 0) return x + y;
#if IN_CPLX
    // the textbook product, as numpy's (no fma contraction: precise)
    precise TC r = TC(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x);
    return r;
#else
    if (op == 1) return x * y;
    // NaN wins, as in numpy's maximum/minimum
    if (op == 2) return (x > y || isnan_(x)) ? x : y;
    return (x < y || isnan_(x)) ? x : y;
#endif
}

#if ARG
// whether (w, k) replaces the running best (v, i) of argmax/argmin: first NaN, else first extreme
bool better(TC w, int k, TC v, int i) {
    if (isnan_(v)) return isnan_(w) && k < i;
    if (isnan_(w)) return true;
    if (w == v) return k < i;
    return OP == 2 ? w > v : w < v;
}
#endif

TC load(int o, int r, int j) {
    return LD_IN(a[pc.off[1] + o * pc.st[MAXD] + r * pc.st[MAXD + 1] + j * pc.st[MAXD + 2]]);
}

void main() {
    int red = pc.shape[1], inner = pc.shape[2];
    uint nout = pc.n;
#if !ARG
    if (OP >= 4) {
        int init = pc.shape[3];
        uint step = gl_NumWorkGroups.x * WG;
        for (uint g = gl_GlobalInvocationID.x; g < nout; g += step) {
            int o = int(g) / inner, j = int(g) - o * inner;
            int ob = pc.off[0] + o * (red + init) * inner + j;
            TC acc = ident();
            if (init != 0) res[ob] = OUT_T(acc);
            for (int r = 0; r < red; ++r) {
                acc = r == 0 ? load(o, 0, j) : comb(acc, load(o, r, j));
                res[ob + (r + init) * inner] = OUT_T(acc);
            }
        }
        return;
    }
#endif
    if (PER_THREAD != 0) {
        // pc.shape[3] > 1 (not ARG) splits the rows into that many chunks: invocation g2 reduces
        // chunk g2 / nout of output g2 % nout, so neighbouring invocations read neighbouring
        // columns (coalesced), and writes its partial at g2: a (chunks, nout) array that the
        // caller reduces once more
        uint step = gl_NumWorkGroups.x * WG;
        int nch = ARG != 0 ? 1 : max(pc.shape[3], 1);
        int clen = (red + nch - 1) / nch;
        uint ntot = nout * uint(nch);
        for (uint g2 = gl_GlobalInvocationID.x; g2 < ntot; g2 += step) {
            uint g = g2 % nout;
            int c = int(g2 / nout);
            int o = int(g) / inner, j = int(g) - o * inner;
            int r0 = c * clen, r1 = min(red, r0 + clen);
            TC acc = ident();
#if ARG
            int bi = 0x7fffffff;
            for (int r = r0; r < r1; ++r) {
                TC v = load(o, r, j);
                if (better(v, r, acc, bi)) { acc = v; bi = r; }
            }
            res[pc.off[0] + g2] = int64_t(bi);
#else
            for (int r = r0; r < r1; ++r) acc = comb(acc, load(o, r, j));
            res[pc.off[0] + g2] = OUT_T(acc);
#endif
        }
        return;
    }
    // pc.shape[3] > 1 splits each row into that many chunks, one partial result each
    // (written at g * chunks + c), so a long single row still spreads over many workgroups
    uint tid = gl_LocalInvocationID.x;
    int nch = max(pc.shape[3], 1);
    int clen = (red + nch - 1) / nch;
    uint ntot = nout * uint(nch);
    for (uint g2 = gl_WorkGroupID.x; g2 < ntot; g2 += gl_NumWorkGroups.x) {
        int g = int(g2) / nch, c = int(g2) - g * nch;
        int o = g / inner, j = g - o * inner;
        int r0 = c * clen, r1 = min(red, r0 + clen);
        TC acc = ident();
#if ARG
        int bi = 0x7fffffff;
        for (int r = r0 + int(tid); r < r1; r += WG) {
            TC v = load(o, r, j);
            if (better(v, r, acc, bi)) { acc = v; bi = r; }
        }
        si[tid] = bi;
#else
        for (int r = r0 + int(tid); r < r1; r += WG) acc = comb(acc, load(o, r, j));
#endif
        sv[tid] = acc;
        barrier();
        for (uint s = WG / 2; s > 0; s >>= 1) {
            if (tid < s) {
#if ARG
                if (better(sv[tid + s], si[tid + s], sv[tid], si[tid])) {
                    sv[tid] = sv[tid + s];
                    si[tid] = si[tid + s];
                }
#else
                sv[tid] = comb(sv[tid], sv[tid + s]);
#endif
            }
            barrier();
        }
        if (tid == 0) {
#if ARG
            res[pc.off[0] + int(g2)] = int64_t(si[0]);
#else
            res[pc.off[0] + int(g2)] = OUT_T(sv[0]);
#endif
        }
        barrier();
    }
}
