#version 450
// philox_blocks (grilly/backends/vulkan/philox.py): invocation i computes Philox4x32-10 of the
// block counter (counter + i) as a 64-bit number in words 0-1, words 2-3 zero, under the key
// (k0, k1), and writes its four words to out[w * m + i] (a (4, m) uint32 array).
// pc.n = m; pc.off[0] = out (uint32 elements); pc.shape = (counter lo, counter hi, k0, k1), bit
// patterns of uint32.
#include "../common.glsl"

layout(set = 0, binding = 0) writeonly buffer O { uint res[]; };

void main() {
    uint step = gl_NumWorkGroups.x * WG;
    uint clo = uint(pc.shape[0]), chi = uint(pc.shape[1]);
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += step) {
        uint c0 = clo + i;
        uint c1 = chi + (c0 < clo ? 1u : 0u);
        uint c2 = 0u, c3 = 0u;
        uint k0 = uint(pc.shape[2]), k1 = uint(pc.shape[3]);
        for (int r = 0; r < 10; ++r) {
            uint hi0, lo0, hi1, lo1;
            umulExtended(0xD2511F53u, c0, hi0, lo0);
            umulExtended(0xCD9E8D57u, c2, hi1, lo1);
            uint n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
            c0 = n0;
            c1 = lo1;
            c2 = n2;
            c3 = lo0;
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        int o = pc.off[0] + int(i);
        res[o] = c0;
        res[o + int(pc.n)] = c1;
        res[o + 2 * int(pc.n)] = c2;
        res[o + 3 * int(pc.n)] = c3;
    }
}
