#version 450
// A leaky integrator over T steps (grilly.array.spiking.leaky_integrate; a Synaptic layer's
// current and its backward): one invocation per neuron walks all T steps,
//   out[t] = alpha out[t-1] + x[t] from out[-1] = s0       (REVERSE 0)
//   out[t] = alpha out[t+1] + x[t] from out[T] = s0        (REVERSE 1)
// in the order of the per-step composition, marked precise (no fma contraction).
//   pc.n = N, pc.shape[0] = T; pc.off = (out, x, params); params = [s0 (N)][alpha (N)].
#include "../common.glsl"
#if IN_BITS == 64
#extension GL_ARB_gpu_shader_fp64 : enable
#endif

layout(constant_id = 2) const int REVERSE = 0;

#define TC IN_TC
layout(set = 0, binding = 0) writeonly buffer O { IN_TS o[]; };
layout(set = 0, binding = 1) readonly buffer A { IN_TS a[]; };
layout(set = 0, binding = 2) readonly buffer P { IN_TS p[]; };

void main() {
    uint step = gl_NumWorkGroups.x * WG;
    int T = pc.shape[0], N = int(pc.n);
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += step) {
        precise TC s = TC(p[pc.off[2] + i]);
        TC al = TC(p[pc.off[2] + N + i]);
        for (int k = 0; k < T; ++k) {
            int t = REVERSE != 0 ? T - 1 - k : k;
            precise TC m = al * s;
            s = m + TC(a[pc.off[1] + t * N + i]);
            o[pc.off[0] + t * N + i] = IN_TS(s);
        }
    }
}
