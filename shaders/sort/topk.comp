#version 450
// One pass of top-k per row (grilly/backends/vulkan/sorting.py: topk): invocation (r, p) of P per
// row scans elements p, p + P, ... of row r (so a warp reads consecutive elements) and keeps its
// k best in registers, sorted by insertion; it writes them (best first) as candidates p*k..p*k+k-1
// of its row. Passes repeat on the candidates until P = 1, whose output is the answer.
// Order (sort.comp's): floats put NaN after everything ascending, descending is the exact reverse
// (so NaN is the largest), ties go to the smaller index; slots a scan could not fill get index -1
// and sort after everything.
// pc.shape = (rows, L, P, k, has_idx); pc.off = (vals, idx, src, src_idx); pc.st[0] = largest.
// Without has_idx the index of an element is its position in the row (the first pass).
//
// SCAN (the first pass of matmul_topk over one block of scores, grilly/backends/vulkan/
// neighbors.py): no has_idx; element j of row r scores src[j] + add[j] (pc.st[2] bit 0; add at
// pc.off[3]) and has index pc.st[1] + j; with pc.st[2] bit 1 it must also come before the row's
// k-th best of the earlier blocks (column k-1 of the (rows, k) lists lv/li) to be kept, so
// that most elements cost one compare and the lists stay short.
#include "../common.glsl"

#define TC IN_TC
layout(set = 0, binding = 0) writeonly buffer V { IN_TS vals[]; };
layout(set = 0, binding = 1) writeonly buffer I { int64_t oidx[]; };
layout(set = 0, binding = 2) readonly buffer S { IN_TS src[]; };
#ifdef SCAN
layout(set = 0, binding = 3) readonly buffer AD { IN_TS addv[]; };
layout(set = 0, binding = 4) readonly buffer LV { IN_TS lv[]; };
layout(set = 0, binding = 5) readonly buffer LI { int64_t li[]; };
#else
layout(set = 0, binding = 3) readonly buffer J { int64_t sidx[]; };
#endif

bool isnan_(TC x) {
#if IN_KIND == K_F
    return isnan(x);
#else
    return false;
#endif
}

bool lt(TC a, TC b) { return a < b || (isnan_(b) && !isnan_(a)); }

// (a, ia) comes before (b, ib) in topk's output
bool better(TC a, int64_t ia, TC b, int64_t ib, bool largest) {
    if (largest ? lt(b, a) : lt(a, b)) return true;
    if (largest ? lt(a, b) : lt(b, a)) return false;
    return ia < ib;
}

void main() {
    uint step = gl_NumWorkGroups.x * WG;
    int L = pc.shape[1], P = pc.shape[2], k = pc.shape[3];
    bool largest = pc.st[0] != 0;
#ifdef SCAN
    const bool has_idx = false;
    bool has_add = (pc.st[2] & 1) != 0, gate = (pc.st[2] & 2) != 0;
    int64_t id0 = int64_t(pc.st[1]);
#else
    bool has_idx = pc.shape[4] != 0;
    const bool gate = false;
#endif
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += step) {
        int r = int(i) / P, p = int(i) - r * P;
        TC v[KMAX];
        int64_t ix[KMAX];
        int c = 0;
        // the k-th best so far, in registers: most elements fail this one compare and never
        // touch the (dynamically indexed, so local-memory) lists
        TC worst = TC(0);
        int64_t wix = -1;
        int base = pc.off[2] + r * L;
#ifdef SCAN
        if (gate) {
            worst = TC(lv[r * k + k - 1]);
            wix = li[r * k + k - 1];
        }
        for (int j = p; j < L; j += P) {
            int64_t jx = id0 + int64_t(j);
            TC x = TC(src[base + j]);
            if (has_add) x += TC(addv[pc.off[3] + j]);
#else
        int ibase = pc.off[3] + r * L;
        for (int j = p; j < L; j += P) {
            int64_t jx = has_idx ? sidx[ibase + j] : int64_t(j);
            if (jx < 0) continue;   // an unfilled slot of the previous pass
            TC x = TC(src[base + j]);
#endif
            if ((gate || c == k) && !better(x, jx, worst, wix, largest)) continue;
            int pos = c < k ? c : k - 1;
            while (pos > 0 && better(x, jx, v[pos - 1], ix[pos - 1], largest)) {
                v[pos] = v[pos - 1];
                ix[pos] = ix[pos - 1];
                --pos;
            }
            v[pos] = x;
            ix[pos] = jx;
            if (c < k) ++c;
            if (c == k) {
                worst = v[k - 1];
                wix = ix[k - 1];
            }
        }
        int o = r * P * k + p * k;
        for (int q = 0; q < k; ++q) {
            vals[pc.off[0] + o + q] = IN_TS(q < c ? v[q] : TC(0));
            oidx[pc.off[1] + o + q] = q < c ? ix[q] : int64_t(-1);
        }
    }
}
