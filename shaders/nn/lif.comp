#version 450
// Fused multi-step leaky integrate-and-fire (grilly.array.spiking; docs/snn.md): one invocation
// per neuron walks all T steps, so a layer's forward (MODE 0) or backward through time (MODE 1)
// is one dispatch. Neighbouring invocations read neighbouring neurons: loads are coalesced.
// The arithmetic is written in the order of the per-step composition (and of the CPU kernel),
// marked precise (no contraction into fma: spikes match bit for bit); float math uses the
// float32/float64 libraries, never the driver's built-ins.
//   pc.n = N neurons, pc.shape[0] = T; pc.off[k] = element offset of binding k.
//   MODE 0: b0 = out [spikes (T, N)][mem (N)][trace (T, N) if STORE], b1 = x (T, N),
//           b2 = params [mem0 (N)][beta (N)][thr (N)]
//   MODE 1: b0 = out [g_x (T, N)][g_mem0][g_beta][g_thr], b1 = g_spikes (T, N), b2 = trace,
//           b3 = params [mem0][beta][thr][g_mem]; pc.st[0..5] = slope, c1, c2 as float bits
//           (float32: one word each; float64: two words each, low first). DETACH = 0: the
//           reset signal is differentiated through the surrogate (detach_reset=False).
#include "../common.glsl"
#if IN_BITS == 64
#extension GL_ARB_gpu_shader_fp64 : enable
#include "../math_f64.glsl"
#define EXP exp_d
#else
#include "../math_f32.glsl"
#define EXP exp_f
#endif

layout(constant_id = 0) const int MODE = 0;
layout(constant_id = 2) const int RESET = 0;   // 0 subtract, 1 zero, 2 none
layout(constant_id = 3) const int DELAY = 1;   // 1: snnTorch (reset from the previous step)
layout(constant_id = 4) const int STORE = 1;
layout(constant_id = 5) const int KIND = 0;    // atan, fast_sigmoid, sigmoid, triangle, ste
layout(constant_id = 6) const int DETACH = 1;  // 0: the reset signal's surrogate slope flows too

#define TC IN_TC
layout(set = 0, binding = 0) buffer O { IN_TS o[]; };
layout(set = 0, binding = 1) readonly buffer A { IN_TS a[]; };
layout(set = 0, binding = 2) readonly buffer B { IN_TS b[]; };
layout(set = 0, binding = 3) readonly buffer P { IN_TS p[]; };

TC konst(int k) {
#if IN_BITS == 64
    return packDouble2x32(uvec2(uint(pc.st[2 * k]), uint(pc.st[2 * k + 1])));
#else
    return uintBitsToFloat(uint(pc.st[k]));
#endif
}

TC H(TC v, TC th) { return v > th ? TC(1) : TC(0); }

TC sg(TC v, TC slope, TC c1, TC c2) {
    if (KIND == 0) { TC z = c1 * v; return c2 / (TC(1) + z * z); }
    if (KIND == 1) { TC d = slope * abs(v) + TC(1); return TC(1) / (d * d); }
    if (KIND == 2) { TC h = c2 * v; TC e = EXP(h) + EXP(-h); return slope / (e * e); }
    if (KIND == 3) return max(TC(1) - abs(v) / slope, TC(0)) / slope;
    return TC(1);
}

void forward(uint i, int T, int N) {
    int ox = pc.off[1], pp = pc.off[2], oo = pc.off[0];
    precise TC u = TC(b[pp + i]);
    TC be = TC(b[pp + N + i]), th = TC(b[pp + 2 * N + i]);
    int tr0 = oo + (T + 1) * N;
    for (int t = 0; t < T; ++t) {
        TC xt = TC(a[ox + t * N + i]);
        if (DELAY != 0) {
            TC r = H(u, th);
            if (RESET == 0) u = (be * u + xt) - r * th;
            else if (RESET == 1) u = be * ((TC(1) - r) * u) + xt;
            else u = be * u + xt;
            if (STORE != 0) o[tr0 + t * N + i] = IN_TS(u);
            o[oo + t * N + i] = IN_TS(H(u, th));
        } else {
            precise TC h = be * u + xt;
            if (STORE != 0) o[tr0 + t * N + i] = IN_TS(h);
            TC s = H(h, th);
            o[oo + t * N + i] = IN_TS(s);
            if (RESET == 0) h = h - s * th;
            else if (RESET == 1) h = h * (TC(1) - s);
            u = h;
        }
    }
    o[oo + T * N + i] = IN_TS(u);
}

void backward(uint i, int T, int N) {
    int og = pc.off[1], ot = pc.off[2], pp = pc.off[3], oo = pc.off[0];
    TC m0 = TC(p[pp + i]), be = TC(p[pp + N + i]), th = TC(p[pp + 2 * N + i]);
    TC g = TC(p[pp + 3 * N + i]);
    TC slope = konst(0), c1 = konst(1), c2 = konst(2);
    TC acc_b = TC(0), acc_t = TC(0);
    for (int t = T - 1; t >= 0; --t) {
        TC v = TC(b[ot + t * N + i]);
        TC gs = TC(a[og + t * N + i]);
        TC d = sg(v - th, slope, c1, c2);
        if (DELAY != 0) {
            TC up = t > 0 ? TC(b[ot + (t - 1) * N + i]) : m0;
            TC r = H(up, th);
            TC dr = DETACH != 0 ? TC(0) : sg(up - th, slope, c1, c2);
            g = g + gs * d;
            acc_t -= gs * d;
            o[oo + t * N + i] = IN_TS(g);
            if (RESET == 0) {
                acc_t -= g * r;
                acc_b += g * up;
                if (DETACH != 0) g = g * be;
                else { acc_t += g * (th * dr); g = g * (be - th * dr); }
            } else if (RESET == 1) {
                acc_b += g * ((TC(1) - r) * up);
                if (DETACH != 0) g = g * (be * (TC(1) - r));
                else { TC k = be * up * dr; acc_t += g * k; g = g * (be * (TC(1) - r) - k); }
            }
            else { acc_b += g * up; g = g * be; }
        } else {
            TC s = H(v, th);
            TC dr = DETACH != 0 ? TC(0) : sg(v - th, slope, c1, c2);
            TC gh = RESET == 1 ? g * (TC(1) - s) : g;
            if (RESET == 0) {
                acc_t -= g * s;
                if (DETACH == 0) { acc_t += g * (th * dr); gh = gh - g * (th * dr); }
            } else if (RESET == 1 && DETACH == 0) {
                acc_t += g * (v * dr);
                gh = gh - g * (v * dr);
            }
            gh = gh + gs * d;
            acc_t -= gs * d;
            o[oo + t * N + i] = IN_TS(gh);
            TC up = m0;
            if (t > 0) {
                TC hp = TC(b[ot + (t - 1) * N + i]);
                TC sp = H(hp, th);
                up = RESET == 0 ? hp - sp * th : RESET == 1 ? hp * (TC(1) - sp) : hp;
            }
            acc_b += gh * up;
            g = gh * be;
        }
    }
    o[oo + T * N + i] = IN_TS(g);
    o[oo + (T + 1) * N + i] = IN_TS(acc_b);
    o[oo + (T + 2) * N + i] = IN_TS(acc_t);
}

void main() {
    int N = int(pc.n), T = pc.shape[0];
    for (uint i = gl_GlobalInvocationID.x; i < uint(N); i += gl_NumWorkGroups.x * WG) {
        if (MODE == 0) forward(i, T, N);
        else backward(i, T, N);
    }
}
