#version 450
// Strided copy with conversion from dtype IN to dtype OUT: astype, copy, assign (into a
// strided view, with broadcasting), and making a view contiguous.
#include "../common.glsl"

layout(set = 0, binding = 0) writeonly buffer O { OUT_TS o[]; };
layout(set = 0, binding = 1) readonly buffer A { IN_TS a[]; };

void main() {
    uint step = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += step) {
        int ix[4];
        locate(i, 2, ix);
        IN_TC x = IN_TC(a[ix[1]]);
#if OUT_KIND == K_B
        o[ix[0]] = uint8_t(x != IN_TC(0) ? 1u : 0u);
#elif OUT_BITS < 32 && OUT_KIND == K_I
        o[ix[0]] = OUT_TS(int(x));
#elif OUT_BITS < 32 && OUT_KIND == K_U
        o[ix[0]] = OUT_TS(uint(int64_t(x)));
#elif OUT_KIND == K_U && IN_KIND == K_F
        // negative floats wrap like C (through a signed integer), as NumPy does on x86
        o[ix[0]] = OUT_TS(OUT_TC(int64_t(x)));
#else
        o[ix[0]] = OUT_TS(OUT_TC(x));
#endif
    }
}
