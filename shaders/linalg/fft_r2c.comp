#version 450
// The real-input DFT of even length n = 2N from the complex DFT Z of its N pairs
// z[k] = x[2k] + i x[2k+1] (grilly/backends/vulkan/fft.py, fft_r2c): for k = 0..N,
//   A = Z[k], B = conj(Z[(N - k) mod N]),
//   X[k] = ((A + B) + W_n^k (-i) (A - B)) / 2 * scale,
// W_n^k = tables[tw + k] (computed on the host in float64, rounded once). One invocation per
// output element of the rows (pc.rows of N + 1 outputs; Z's rows contiguous, N apart).
#define OWN_PUSH_CONSTANTS
#include "../common.glsl"

#if IS_F64
#define R double
#define CX dvec2
#else
#define R float
#define CX vec2
#endif

layout(push_constant) uniform PC {
    uint rows, N, in_off, out_off, tw;
    uint pad0;
    uvec2 scale;   // float bits in .x (complex64), double bits (complex128)
} pc;

layout(set = 0, binding = 0) writeonly buffer O { CX o[]; };
layout(set = 0, binding = 1) readonly buffer Z { CX z[]; };
layout(set = 0, binding = 2) readonly buffer T { CX tables[]; };

CX cmul(CX a, CX b) { return CX(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

void main() {
#if IS_F64
    R scale = packDouble2x32(pc.scale) * R(0.5);
#else
    R scale = uintBitsToFloat(pc.scale.x) * R(0.5);
#endif
    uint M = pc.N + 1u, total = pc.rows * M;
    for (uint t = gl_GlobalInvocationID.x; t < total; t += gl_NumWorkGroups.x * WG) {
        uint r = t / M, k = t - r * M;
        uint base = pc.in_off + r * pc.N;
        CX a = z[base + (k == pc.N ? 0u : k)];
        CX b = z[base + (k == 0u ? 0u : pc.N - k)];
        b.y = -b.y;
        CX d = a - b;
        CX odd = cmul(tables[pc.tw + k], CX(d.y, -d.x));   // W^k (-i)(A - B)
        o[pc.out_off + t] = (a + b + odd) * scale;
    }
}
