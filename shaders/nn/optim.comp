#version 450
// Fused optimizer updates (docs/kernels/optim.md), one dispatch per parameter: each invocation
// takes element i of the parameter p, its state s1..s3 and the gradient g through the rule
// RULE (optim_rule.glsl) and writes p and the state back. Every operand is contiguous from its
// element offset pc.off[k]; an unused state slot is bound to p and never touched. Rule 4's
// found flag is the uint32 at s1's offset. Hyperparameters: eight values of the dtype at
// element pc.voff of binding 5 (a host upload, or a row of a step's scalar buffer under
// grilly.jit); flags: specialization constants.
#define OWN_PUSH_CONSTANTS 1
#include "../common.glsl"

layout(push_constant) uniform OPC {
    uint n;
    int off[5];   // p, s1, s2, s3, g
    uint voff;    // the rule's scalars (grilly/backends/contract.py, optim_scalars)
} pc;

layout(set = 0, binding = 0) buffer P { IN_TS p[]; };
layout(set = 0, binding = 1) buffer S1 { IN_TS s1[]; };
layout(set = 0, binding = 2) buffer S2 { IN_TS s2[]; };
layout(set = 0, binding = 3) buffer S3 { IN_TS s3[]; };
layout(set = 0, binding = 4) readonly buffer G { IN_TS g[]; };
layout(set = 0, binding = 5) readonly buffer V { IN_TS vals[]; };
layout(set = 0, binding = 1) buffer S1u { uint s1u[]; };   // RULE 4's flag (uint32)

IN_TC sv[8];

#define P_(i) p[pc.off[0] + int(i)]
#define S1_(i) s1[pc.off[1] + int(i)]
#define S2_(i) s2[pc.off[2] + int(i)]
#define S3_(i) s3[pc.off[3] + int(i)]
#define G_(i) g[pc.off[4] + int(i)]
#define S_(k) sv[k]
#define FOUND_OR() atomicOr(s1u[pc.off[1]], 1u)
#include "optim_rule.glsl"

void main() {
    for (int k = 0; k < 8; k++) sv[k] = IN_TC(vals[pc.voff + k]);
    uint stride = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) update(i);
}
