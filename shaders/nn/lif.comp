#version 450
// Fused multi-step leaky integrate-and-fire (grilly.array.spiking; docs/snn.md): one invocation
// per neuron walks all T steps, so a layer's forward (MODE 0) or backward through time (MODE 1)
// is one dispatch. Neighbouring invocations read neighbouring neurons: loads are coalesced.
// The arithmetic is written in the order of the per-step composition (and of the CPU kernel),
// marked precise (no contraction into fma: spikes match bit for bit); float math uses the
// float32/float64 libraries, never the driver's built-ins.
//   pc.n = N neurons, pc.shape[0] = T, pc.shape[1] = refractory steps (NEURON 1);
//   pc.off[k] = element offset of binding k. NEURON 0: LIF; 1: LIF with a refractory counter;
//   2: an adaptive threshold thr + gamma a. NEURON > 0 carries a second state s per neuron (the
//   counter, or a) and its trace follows the membrane's: trace = [membrane (T, N)][s (T, N)].
//   MODE 0: b0 = out [spikes (T, N)][mem (N)][s (N) if NEURON][trace if STORE], b1 = x (T, N),
//           b2 = params [mem0 (N)][beta (N)][thr (N)][s0 (N) if NEURON][rho][gamma if NEURON 2]
//   MODE 1: b0 = out [g_x (T, N)][g_mem0][g_beta][g_thr][g_a0 if NEURON 2], b1 = g_spikes (T, N),
//           b2 = trace, b3 = params [mem0][beta][thr][g_mem][s0 if NEURON][rho][gamma][g_a if
//           NEURON 2]; pc.st[0..5] = slope, c1, c2 as float bits (float32: one word each;
//           float64: two words each, low first). DETACH = 0: the reset signal is differentiated
//           through the surrogate (detach_reset=False).
// SEP (devices with 8 bindings): each parameter row k is its own binding (2 + k in MODE 0,
// 3 + k in MODE 1) read at element offset pc.st[8 + 2k] with stride pc.st[9 + 2k], so a
// broadcast beta or threshold (stride 0) is read in place, where the packed layout costs a
// copy per row (a dispatch each) before every call.
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
layout(constant_id = 7) const int NEURON = 0;  // 0 LIF, 1 refractory counter, 2 adaptive threshold
// MODE 1: the layout of g_spikes (a loss's gradient is often a broadcast: a sum over the
// steps, or over everything): 0 (T, N), 1 one (N) row for every step, 2 one value
layout(constant_id = 8) const int GS = 0;

#define TC IN_TC
layout(set = 0, binding = 0) buffer O { IN_TS o[]; };
layout(set = 0, binding = 1) readonly buffer A { IN_TS a[]; };
layout(set = 0, binding = 2) readonly buffer B { IN_TS b[]; };
layout(set = 0, binding = 3) readonly buffer P { IN_TS p[]; };
#ifdef SEP
layout(set = 0, binding = 4) readonly buffer P4 { IN_TS p4[]; };
layout(set = 0, binding = 5) readonly buffer P5 { IN_TS p5[]; };
layout(set = 0, binding = 6) readonly buffer P6 { IN_TS p6[]; };
layout(set = 0, binding = 7) readonly buffer P7 { IN_TS p7[]; };

// parameter row k of neuron i (k a constant at every call: the switch folds away)
TC prm(int k, uint i) {
    int j = (MODE == 0 ? 2 : 3) + k;
    int e = pc.st[8 + 2 * k] + int(i) * pc.st[9 + 2 * k];
    switch (j) {
        case 2: return TC(b[e]);
        case 3: return TC(p[e]);
        case 4: return TC(p4[e]);
        case 5: return TC(p5[e]);
        case 6: return TC(p6[e]);
        default: return TC(p7[e]);
    }
}
#else
TC prm(int k, uint i) {
    int N = int(pc.n);
    return MODE == 0 ? TC(b[pc.off[2] + k * N + int(i)]) : TC(p[pc.off[3] + k * N + int(i)]);
}
#endif

TC konst(int k) {
#if IN_BITS == 64
    return packDouble2x32(uvec2(uint(pc.st[2 * k]), uint(pc.st[2 * k + 1])));
#else
    return uintBitsToFloat(uint(pc.st[k]));
#endif
}

TC H(TC v, TC th) { return v > th ? TC(1) : TC(0); }

// v times the step's active mask (refractory neurons only: no multiply by 1 elsewhere)
#define MASKED(v) (NEURON == 1 ? (v) * act : (v))

TC sg(TC v, TC slope, TC c1, TC c2) {
    if (KIND == 0) { TC z = c1 * v; return c2 / (TC(1) + z * z); }
    if (KIND == 1) { TC d = slope * abs(v) + TC(1); return TC(1) / (d * d); }
    if (KIND == 2) { TC h = c2 * v; TC e = EXP(h) + EXP(-h); return slope / (e * e); }
    if (KIND == 3) return max(TC(1) - abs(v) / slope, TC(0)) / slope;
    return TC(1);
}

void forward(uint i, int T, int N) {
    int ox = pc.off[1], oo = pc.off[0];
    precise TC u = prm(0, i);
    TC be = prm(1, i), th = prm(2, i);
    precise TC s = NEURON != 0 ? prm(3, i) : TC(0);
    TC rho = NEURON == 2 ? prm(4, i) : TC(0);
    TC ga = NEURON == 2 ? prm(5, i) : TC(0);
    TC kk = TC(pc.shape[1]);
    int tr0 = oo + (NEURON != 0 ? T + 2 : T + 1) * N;   // the membrane trace; s's follows
    for (int t = 0; t < T; ++t) {
        TC xt = TC(a[ox + t * N + i]);
        TC act = TC(1);
        precise TC tho = th;                       // the threshold of the old state
        if (NEURON == 1) { act = s <= TC(0) ? TC(1) : TC(0); xt = xt * act; }
        if (NEURON == 2) tho = th + ga * s;
        TC sp;
        if (DELAY != 0) {
            TC r = H(u, tho);
            precise TC thn = th;
            if (NEURON == 2) { s = rho * s + r; thn = th + ga * s; }
            if (RESET == 0) u = (be * u + xt) - r * tho;
            else if (RESET == 1) u = be * ((TC(1) - r) * u) + xt;
            else u = be * u + xt;
            if (STORE != 0) o[tr0 + t * N + i] = IN_TS(u);
            sp = MASKED(H(u, thn));
        } else {
            precise TC h = be * u + xt;
            if (STORE != 0) o[tr0 + t * N + i] = IN_TS(h);
            sp = MASKED(H(h, tho));
            if (RESET == 0) h = h - sp * tho;
            else if (RESET == 1) h = h * (TC(1) - sp);
            u = h;
            if (NEURON == 2) s = rho * s + sp;
        }
        o[oo + t * N + i] = IN_TS(sp);
        if (NEURON == 1) s = sp > TC(0) ? kk : max(s - TC(1), TC(0));
        if (NEURON != 0 && STORE != 0) o[tr0 + (T + t) * N + i] = IN_TS(s);
    }
    o[oo + T * N + i] = IN_TS(u);
    if (NEURON != 0) o[oo + (T + 1) * N + i] = IN_TS(s);
}

// The state before step t (t >= 0; s0 before step 0): the active mask and the old threshold.
void before(int t, uint i, int N, int oa, TC s0, TC th, TC ga, out TC act, out TC tho) {
    act = TC(1);
    tho = th;
    if (NEURON == 0) return;
    TC sp = t > 0 ? TC(b[oa + (t - 1) * N + i]) : s0;
    if (NEURON == 1) act = sp <= TC(0) ? TC(1) : TC(0);
    else { precise TC v = th + ga * sp; tho = v; }
}

void backward(uint i, int T, int N) {
    int og = pc.off[1], ot = pc.off[2], oo = pc.off[0];
    int oa = ot + T * N;   // the second state's trace
    TC m0 = prm(0, i), be = prm(1, i), th = prm(2, i);
    TC g = prm(3, i);                                              // dL/dU[t]
    TC s0 = NEURON != 0 ? prm(4, i) : TC(0);
    TC rho = NEURON == 2 ? prm(5, i) : TC(0);
    TC ga = NEURON == 2 ? prm(6, i) : TC(0);
    TC gA = NEURON == 2 ? prm(7, i) : TC(0);                       // dL/dA[t]
    TC slope = konst(0), c1 = konst(1), c2 = konst(2);
    TC acc_b = TC(0), acc_t = TC(0);
    for (int t = T - 1; t >= 0; --t) {
        TC v = TC(b[ot + t * N + i]);
        TC gs = TC(a[og + (GS == 0 ? t * N + i : GS == 1 ? i : 0)]);
        TC act, tho;
        before(t, i, N, oa, s0, th, ga, act, tho);
        TC gtho = TC(0);   // dL/d(the old threshold)
        if (DELAY != 0) {
            // U[t] = beta U[t-1] + act x[t] - R tho (subtract), R = H(U[t-1] - tho),
            // A[t] = rho A[t-1] + R, S[t] = act H(U[t] - (thr + gamma A[t]))
            precise TC thn = th;
            if (NEURON == 2) thn = th + ga * TC(b[oa + t * N + i]);
            TC d = MASKED(gs) * sg(v - thn, slope, c1, c2);
            TC gu = g + d;
            acc_t -= d;
            if (NEURON == 2) gA = gA - ga * d;
            o[oo + t * N + i] = IN_TS(MASKED(gu));
            TC up = t > 0 ? TC(b[ot + (t - 1) * N + i]) : m0;
            TC r = H(up, tho);
            TC gr = TC(0);   // dL/dR
            if (RESET == 0) {
                acc_b += gu * up;
                gr = -(gu * tho);
                gtho = -(gu * r);
                g = gu * be;
            } else if (RESET == 1) {
                acc_b += gu * ((TC(1) - r) * up);
                gr = -(gu * (be * up));
                g = gu * (be * (TC(1) - r));
            } else {
                acc_b += gu * up;
                g = gu * be;
            }
            if (NEURON == 2) gr = gr + gA;
            if (DETACH == 0) {
                TC dr = gr * sg(up - tho, slope, c1, c2);
                g = g + dr;
                gtho = gtho - dr;
            }
        } else {
            // h = beta U[t-1] + act x[t]; R = S[t] = act H(h - tho); U[t] = h - R tho
            // (subtract) or h (1 - R) (zero); A[t] = rho A[t-1] + R
            TC s = MASKED(H(v, tho));
            TC gh = RESET == 1 ? g * (TC(1) - s) : g;
            if (RESET == 0) gtho = -(g * s);
            TC gss = gs;
            if (DETACH == 0) {
                TC gr = RESET == 0 ? -(g * tho) : RESET == 1 ? -(g * v) : TC(0);
                if (NEURON == 2) gr = gr + gA;
                gss = gss + gr;
            }
            TC e = MASKED(gss) * sg(v - tho, slope, c1, c2);
            gh = gh + e;
            gtho = gtho - e;
            o[oo + t * N + i] = IN_TS(MASKED(gh));
            TC up = m0;
            if (t > 0) {   // U[t-1]: the previous step's membrane after its reset
                TC hp = TC(b[ot + (t - 1) * N + i]);
                TC act1, th1;
                before(t - 1, i, N, oa, s0, th, ga, act1, th1);
                TC s1 = NEURON == 1 ? H(hp, th1) * act1 : H(hp, th1);
                precise TC u1 = RESET == 0 ? hp - s1 * th1 : RESET == 1 ? hp * (TC(1) - s1) : hp;
                up = u1;
            }
            acc_b += gh * up;
            g = gh * be;
        }
        acc_t += gtho;
        // tho = thr + gamma A[t-1]; A[t] = rho A[t-1] + R
        if (NEURON == 2) gA = rho * gA + ga * gtho;
    }
    o[oo + T * N + i] = IN_TS(g);
    o[oo + (T + 1) * N + i] = IN_TS(acc_b);
    o[oo + (T + 2) * N + i] = IN_TS(acc_t);
    if (NEURON == 2) o[oo + (T + 3) * N + i] = IN_TS(gA);
}

void main() {
    int N = int(pc.n), T = pc.shape[0];
    for (uint i = gl_GlobalInvocationID.x; i < uint(N); i += gl_NumWorkGroups.x * WG) {
        if (MODE == 0) forward(i, T, N);
        else backward(i, T, N);
    }
}
