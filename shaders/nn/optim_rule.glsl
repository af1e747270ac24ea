// The optimizer update rules of shaders/nn/optim.comp (one parameter a dispatch) and
// shaders/nn/optim_multi.comp (many a dispatch) for element i: RULE 0 SGD, 1 Adam/AdamW,
// 2 RMSprop, 3 Adagrad; 4 is GradScaler's unscale (p is a gradient, multiplied by S_(0), and the
// found flag or-ed with 1 where it held an inf or NaN). The operations of the unfused
// composition (grilly/array/composites.py), in the same order; `precise` keeps the compiler from
// contracting a * b + c into an fma, so a float32 result is the composition's (float32 sqrt and
// division from the correctly rounded library). The includer defines the accessors P_(i),
// S1_(i), S2_(i), S3_(i) (parameter and state slots, read and written), G_(i) (the gradient),
// S_(k) (the rule's scalars, read once into registers) and FOUND_OR() (RULE 4's flag).
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
// flags, per rule. SGD: has momentum buffer, nesterov, maximize.
// Adam: decoupled decay, amsgrad, maximize. RMSprop: centered, has momentum buffer, maximize.
// Adagrad: -, -, maximize. (What changes from step to step, SGD's first step included, is a
// scalar: a captured step (grilly.jit) reads new ones from its buffer on every replay.)
layout(constant_id = 2) const int F0 = 0;
layout(constant_id = 3) const int F1 = 0;
layout(constant_id = 4) const int MAXIMIZE = 0;

void update(uint i) {
    if (RULE == 4) {          // GradScaler's unscale: p is the gradient; s: 1 / scale
        TC v = TC(P_(i));
        if (isnan(v) || isinf(v)) FOUND_OR();
        P_(i) = IN_TS(v * S_(0));
        return;
    }
    precise TC gi = TC(G_(i));
    if (MAXIMIZE != 0) gi = -gi;
    precise TC pi = TC(P_(i));
    if (RULE == 0) {          // s: lr, momentum, 1 - dampening, weight_decay, first step (1/0)
        if (S_(3) != TC(0)) gi = S_(3) * pi + gi;
        if (F0 != 0) {
            precise TC bi = S_(4) != TC(0) ? gi : S_(2) * gi + TC(S1_(i)) * S_(1);
            S1_(i) = IN_TS(bi);
            gi = F1 != 0 ? S_(1) * bi + gi : bi;
        }
        P_(i) = IN_TS(pi - S_(0) * gi);
    } else if (RULE == 1) {   // s: 1 - lr wd, 1 - b1, b2, 1 - b2, eps, wd, step_size, bc2_sqrt
        if (S_(5) != TC(0)) {
            if (F0 != 0) pi = pi * S_(0);
            else gi = S_(5) * pi + gi;
        }
        precise TC mi = TC(S1_(i));
        mi = S_(1) * (gi - mi) + mi;
        precise TC vi = S_(3) * (gi * gi) + TC(S2_(i)) * S_(2);
        S1_(i) = IN_TS(mi);
        S2_(i) = IN_TS(vi);
        if (F1 != 0) {
            TC vx = TC(S3_(i));
            if (vi > vx || isnan(vi)) vx = vi;   // maximum: NaN wins
            S3_(i) = IN_TS(vx);
            vi = vx;
        }
        precise TC den = DIV(SQRT(vi), S_(7)) + S_(4);
        P_(i) = IN_TS(pi - S_(6) * DIV(mi, den));
    } else if (RULE == 2) {   // s: lr, alpha, 1 - alpha, eps, weight_decay, momentum
        if (S_(4) != TC(0)) gi = S_(4) * pi + gi;
        precise TC si = S_(2) * (gi * gi) + TC(S1_(i)) * S_(1);
        S1_(i) = IN_TS(si);
        precise TC avg;
        if (F0 != 0) {
            precise TC ga = TC(S2_(i));
            ga = S_(2) * (gi - ga) + ga;
            S2_(i) = IN_TS(ga);
            avg = SQRT(si - ga * ga) + S_(3);
        } else {
            avg = SQRT(si) + S_(3);
        }
        if (F1 != 0) {
            precise TC bi = TC(S3_(i)) * S_(5) + DIV(gi, avg);
            S3_(i) = IN_TS(bi);
            P_(i) = IN_TS(pi - S_(0) * bi);
        } else {
            P_(i) = IN_TS(pi - S_(0) * DIV(gi, avg));
        }
    } else {                  // s: clr, eps, weight_decay
        if (S_(2) != TC(0)) gi = S_(2) * pi + gi;
        precise TC si = TC(S1_(i)) + gi * gi;
        S1_(i) = IN_TS(si);
        P_(i) = IN_TS(pi - S_(0) * DIV(gi, SQRT(si) + S_(1)));
    }
}
