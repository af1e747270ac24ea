#version 450
// Fused optimizer updates (docs/kernels/optim.md), one dispatch per parameter: each invocation
// takes element i of the parameter p, its state s1..s3 and the gradient g through the rule RULE
// (0 SGD, 1 Adam/AdamW, 2 RMSprop, 3 Adagrad; 4 is GradScaler's unscale: p is a gradient,
// multiplied by pc.s[0], and the uint32 flag at s1's offset is or-ed with 1 where it held an
// inf or NaN) and writes p and the state back, with the
// operations of the unfused composition (grilly/array/composites.py) in the same order. Every
// operand is contiguous from its element offset pc.off[k]; an unused state slot is bound to p
// and never touched. Hyperparameters: pc.s (the dtype's type); flags: specialization constants.
// `precise` keeps the compiler from contracting a * b + c into an fma, so a float32 result is
// the composition's (float32 sqrt and division from the correctly rounded library).
#define OWN_PUSH_CONSTANTS 1
#include "../common.glsl"
#if IN_BITS == 64
#define SQRT(x) sqrt(x)
#define DIV(a, b) ((a) / (b))
#else
#include "../math_f32.glsl"
#define SQRT(x) sqrt_f(x)
#define DIV(a, b) div_f(a, b)
#endif
#define TC IN_TC

layout(constant_id = 0) const int RULE = 0;
// flags, per rule. SGD: has momentum buffer, nesterov, maximize, first step.
// Adam: decoupled decay, amsgrad, maximize. RMSprop: centered, has momentum buffer, maximize.
// Adagrad: -, -, maximize.
layout(constant_id = 2) const int F0 = 0;
layout(constant_id = 3) const int F1 = 0;
layout(constant_id = 4) const int MAXIMIZE = 0;
layout(constant_id = 5) const int F3 = 0;

layout(push_constant) uniform OPC {
    uint n;
    int off[5];   // p, s1, s2, s3, g
    TC s[8];      // the rule's scalars (grilly/backends/vulkan/optim.py)
} pc;

layout(set = 0, binding = 0) buffer P { IN_TS p[]; };
layout(set = 0, binding = 1) buffer S1 { IN_TS s1[]; };
layout(set = 0, binding = 2) buffer S2 { IN_TS s2[]; };
layout(set = 0, binding = 3) buffer S3 { IN_TS s3[]; };
layout(set = 0, binding = 4) readonly buffer G { IN_TS g[]; };
layout(set = 0, binding = 1) buffer S1u { uint s1u[]; };   // RULE 4's flag (uint32)

void main() {
    uint stride = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        int ip = pc.off[0] + int(i), i1 = pc.off[1] + int(i), i2 = pc.off[2] + int(i),
            i3 = pc.off[3] + int(i);
        if (RULE == 4) {          // GradScaler's unscale: p is the gradient; s: 1 / scale
            TC v = TC(p[ip]);
            if (isnan(v) || isinf(v)) atomicOr(s1u[pc.off[1]], 1u);
            p[ip] = IN_TS(v * pc.s[0]);
            continue;
        }
        precise TC gi = TC(g[pc.off[4] + int(i)]);
        if (MAXIMIZE != 0) gi = -gi;
        precise TC pi = TC(p[ip]);
        if (RULE == 0) {          // s: lr, momentum, 1 - dampening, weight_decay
            if (pc.s[3] != TC(0)) gi = pc.s[3] * pi + gi;
            if (F0 != 0) {
                precise TC bi = F3 != 0 ? gi : pc.s[2] * gi + TC(s1[i1]) * pc.s[1];
                s1[i1] = IN_TS(bi);
                gi = F1 != 0 ? pc.s[1] * bi + gi : bi;
            }
            p[ip] = IN_TS(pi - pc.s[0] * gi);
        } else if (RULE == 1) {   // s: 1 - lr wd, 1 - b1, b2, 1 - b2, eps, wd, step_size, bc2_sqrt
            if (pc.s[5] != TC(0)) {
                if (F0 != 0) pi = pi * pc.s[0];
                else gi = pc.s[5] * pi + gi;
            }
            precise TC mi = TC(s1[i1]);
            mi = pc.s[1] * (gi - mi) + mi;
            precise TC vi = pc.s[3] * (gi * gi) + TC(s2[i2]) * pc.s[2];
            s1[i1] = IN_TS(mi);
            s2[i2] = IN_TS(vi);
            if (F1 != 0) {
                TC vx = TC(s3[i3]);
                if (vi > vx || isnan(vi)) vx = vi;   // maximum: NaN wins
                s3[i3] = IN_TS(vx);
                vi = vx;
            }
            precise TC den = DIV(SQRT(vi), pc.s[7]) + pc.s[4];
            p[ip] = IN_TS(pi - pc.s[6] * DIV(mi, den));
        } else if (RULE == 2) {   // s: lr, alpha, 1 - alpha, eps, weight_decay, momentum
            if (pc.s[4] != TC(0)) gi = pc.s[4] * pi + gi;
            precise TC si = pc.s[2] * (gi * gi) + TC(s1[i1]) * pc.s[1];
            s1[i1] = IN_TS(si);
            precise TC avg;
            if (F0 != 0) {
                precise TC ga = TC(s2[i2]);
                ga = pc.s[2] * (gi - ga) + ga;
                s2[i2] = IN_TS(ga);
                avg = SQRT(si - ga * ga) + pc.s[3];
            } else {
                avg = SQRT(si) + pc.s[3];
            }
            if (F1 != 0) {
                precise TC bi = TC(s3[i3]) * pc.s[5] + DIV(gi, avg);
                s3[i3] = IN_TS(bi);
                p[ip] = IN_TS(pi - pc.s[0] * bi);
            } else {
                p[ip] = IN_TS(pi - pc.s[0] * DIV(gi, avg));
            }
        } else {                  // s: clr, eps, weight_decay
            if (pc.s[2] != TC(0)) gi = pc.s[2] * pi + gi;
            precise TC si = TC(s1[i1]) + gi * gi;
            s1[i1] = IN_TS(si);
            p[ip] = IN_TS(pi - pc.s[0] * DIV(gi, SQRT(si) + pc.s[1]));
        }
    }
}
