#version 450
// Sorting for one key dtype (IN_*): a bitonic network over rows padded to P = 2^m, carrying the
// original int64 index, which also breaks ties (so the sort is stable) and marks padding
// (index >= L sorts after everything). Floats put NaN last; descending is the exact reverse
// order with ties still in index order (numpy's stable descending sort).
// OP 0 init:   key[r, p] = src[r, p] (p < L), idx[r, p] = p          (rows, L, P)
// OP 1 step:   one compare-exchange stage (k, j) over every row       (rows, L, P, k, j)
// OP 2 search: idx[i] = insertion point of src[i] in the sorted key[0..L) (pc.off[3]: right)
// pc.off = (key, idx, src, descending or right).
#include "../common.glsl"

layout(constant_id = 0) const int OP = 0;

#define TC IN_TC
layout(set = 0, binding = 0) buffer K { IN_TS key[]; };
layout(set = 0, binding = 1) buffer X { int64_t idx[]; };
layout(set = 0, binding = 2) readonly buffer S { IN_TS src[]; };

bool isnan_(TC x) {
#if IN_KIND == K_F
    return isnan(x);
#else
    return false;
#endif
}

bool lt(TC a, TC b) { return a < b || (isnan_(b) && !isnan_(a)); }

bool before(TC a, int64_t ia, TC b, int64_t ib) {
    int64_t L = int64_t(pc.shape[1]);
    if (ia >= L || ib >= L) return ia < ib;
    bool desc = pc.off[3] != 0;
    if (desc ? lt(b, a) : lt(a, b)) return true;
    if (desc ? lt(a, b) : lt(b, a)) return false;
    return ia < ib;
}

void main() {
    uint step = gl_NumWorkGroups.x * WG;
    int L = pc.shape[1], P = pc.shape[2];
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += step) {
        if (OP == 2) {
            TC x = TC(src[pc.off[2] + int(i)]);
            bool right = pc.off[3] != 0;
            int lo = 0, hi = L;
            while (lo < hi) {
                int mid = (lo + hi) >> 1;
                TC m = TC(key[pc.off[0] + mid]);
                if (right ? !lt(x, m) : lt(m, x)) lo = mid + 1; else hi = mid;
            }
            idx[pc.off[1] + int(i)] = int64_t(lo);
            continue;
        }
        int r = int(i) / P, p = int(i) - r * P;
        if (OP == 0) {
            key[i] = p < L ? src[pc.off[2] + r * L + p] : IN_TS(TC(0));
            idx[i] = int64_t(p);
            continue;
        }
        int k = pc.shape[3], j = pc.shape[4];
        int l = p ^ j;
        if (l <= p) continue;
        int a = int(i), b = r * P + l;
        TC ka = TC(key[a]), kb = TC(key[b]);
        int64_t ia = idx[a], ib = idx[b];
        bool up = (p & k) == 0;
        if (up ? before(kb, ib, ka, ia) : before(ka, ia, kb, ib)) {
            key[a] = IN_TS(kb); key[b] = IN_TS(ka);
            idx[a] = ib; idx[b] = ia;
        }
    }
}
