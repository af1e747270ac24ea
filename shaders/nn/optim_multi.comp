#version 450
// The optimizer updates of optim.comp for many parameters in one dispatch (grilly.optim's
// step, GradScaler's unscale; docs/kernels/optim.md): their buffers are reached through device
// addresses (VK_KHR_buffer_device_address, grilly/backends/vulkan/addresses.py) read from a
// table, binding 1: per tensor 16 words, the addresses of p, s1, s2, s3 and g (two words each,
// low first; an unused state slot holds p's and is never touched), its element count, its
// first workgroup and the row of its eight scalars in binding 2 (from element pc.voff: the
// table's own upload, or a step's scalar buffer that a captured step (grilly.jit) refills). Workgroups are laid out tensor after tensor, CHUNK elements each, so every
// tensor gets workgroups in proportion to its size. Binding 0: rule 4's found flag (uint32, at
// pc.flag; the table again for the other rules, which leave it alone). Scalars and flags are
// those of optim.comp; the flags are the same for every tensor, the scalars each tensor's own.
#define OWN_PUSH_CONSTANTS 1
#include "../common.glsl"
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require

#define CHUNK (4 * WG)

layout(push_constant) uniform MPC {
    uint ntens;
    uint flag;     // the found flag's element offset (rule 4)
    uint voff;     // binding 2's first scalar row
    uint pad1;
} pc;

layout(set = 0, binding = 0) buffer Found { uint found[]; };
layout(set = 0, binding = 1) readonly buffer Tab { uint tab[]; };
layout(set = 0, binding = 2) readonly buffer V { IN_TS vals[]; };

layout(buffer_reference, std430, buffer_reference_align = IN_BITS / 8) buffer Ref { IN_TS v[]; };

Ref rp, r1, r2, r3, rg;
#define P_(i) rp.v[i]
#define S1_(i) r1.v[i]
#define S2_(i) r2.v[i]
#define S3_(i) r3.v[i]
#define G_(i) rg.v[i]
IN_TC sv[8];
#define S_(k) sv[k]
#define FOUND_OR() atomicOr(found[pc.flag], 1u)
#include "optim_rule.glsl"

void main() {
    uint wg = gl_WorkGroupID.x;
    // the tensor this workgroup works on: the last whose first workgroup is <= wg
    uint lo = 0, hi = pc.ntens - 1;
    while (lo < hi) {
        uint mid = (lo + hi + 1) / 2;
        if (tab[16 * mid + 11] <= wg) lo = mid; else hi = mid - 1;
    }
    uint b = 16 * lo;
    rp = Ref(uvec2(tab[b], tab[b + 1]));
    r1 = Ref(uvec2(tab[b + 2], tab[b + 3]));
    r2 = Ref(uvec2(tab[b + 4], tab[b + 5]));
    r3 = Ref(uvec2(tab[b + 6], tab[b + 7]));
    rg = Ref(uvec2(tab[b + 8], tab[b + 9]));
    uint n = tab[b + 10];
    uint row = pc.voff + 8 * tab[b + 12];
    for (int k = 0; k < 8; k++) sv[k] = IN_TC(vals[row + k]);
    uint start = (wg - tab[b + 11]) * CHUNK;
    uint stop = min(start + CHUNK, n);
    for (uint i = start + gl_LocalInvocationID.x; i < stop; i += WG) update(i);
}
