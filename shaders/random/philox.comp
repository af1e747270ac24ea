#version 450
// philox_blocks, philox_uniform and philox_dropout (grilly/backends/vulkan/philox.py):
// invocation i computes Philox4x32-10 of the block counter (counter + i) as a 64-bit number in
// words 0-1, words 2-3 zero, under the key (k0, k1). pc.off[0] = out (elements); pc.shape =
// (counter lo, counter hi, k0, k1), bit patterns of uint32; with CTR_BUF, those four words are
// read from binding 1 at pc.off[1] instead (a draw's counter made on the host as an array, so
// that a captured graph (grilly.jit) reads a fresh one on every replay).
//   UNIFORM 0 (philox_blocks): out[w * m + i] = word w (a (4, m) uint32 array); pc.n = m.
//   UNIFORM 32: out is pc.n floats; block i gives out[4 i + j] = (word j >> 8) * 2^-24.
//   UNIFORM 64: out is pc.n doubles; block i gives out[2 i + j] = ((word 2 j >> 5) * 2^26 +
//   (word 2 j + 1 >> 6)) * 2^-53.
//   DROP (with UNIFORM 32 or 64; philox_dropout): each uniform u is stored as u >= p ? scale
//   : 0, p and scale in the output's type, given as bit patterns: float: pc.st[0] = p,
//   pc.st[1] = scale; double: pc.st[0..1] = p (low word first), pc.st[2..3] = scale.
//   UNIFORM 16 (DROP only; float16 philox_dropout): the float32 uniform k * 2^-24 (k = word >>
//   8) rounded to float16 is k rounded to 11 significant bits (nearest, ties to even) times
//   2^-24, so u16 >= p16 is that integer >= P = p16 * 2^24 (contract.float16_dropout_args):
//   integer work, no float16 conversion of the driver's. pc.st[0] = P, pc.st[1] = scale's
//   float16 bits.
// The uniforms are exact (at most 24 or 53 significant bits, scaled by a power of two), so
// they equal the array layer's composition bit for bit, contracted into an fma or not; so do
// the comparisons with p made in the same type.
#include "../common.glsl"

#ifndef UNIFORM
#define UNIFORM 0
#endif

#if UNIFORM == 64
layout(set = 0, binding = 0) writeonly buffer O { double res[]; };
#elif UNIFORM == 16 || defined(BF16OUT)
layout(set = 0, binding = 0) writeonly buffer O { uint16_t res[]; };
#elif UNIFORM == 32
layout(set = 0, binding = 0) writeonly buffer O { float res[]; };
#else
layout(set = 0, binding = 0) writeonly buffer O { uint res[]; };
#endif

// BF16OUT (UNIFORM 32 with DROP; bfloat16 philox_dropout): the float32 multiplier stored as
// bfloat16's bits, rounded as astype rounds (the float32 kernel's result, rounded once)
#ifdef BF16OUT
#include "../bf16.glsl"
#define PUT(x) bf16_bits(x)
#else
#define PUT(x) (x)
#endif

layout(constant_id = 2) const int CTR_BUF = 0;
layout(set = 0, binding = 1) readonly buffer C { uint ctr[]; };

uvec4 philox(uint c0, uint c1, uint k0, uint k1) {
    uint c2 = 0u, c3 = 0u;
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
    return uvec4(c0, c1, c2, c3);
}

// k (< 2^24) rounded to 11 significant bits, to nearest, ties to even (float16's precision)
uint rne11(uint k) {
    int sh = max(findMSB(k) - 10, 0);
    if (sh == 0)
        return k;
    uint q = k >> uint(sh), rem = k & ((1u << uint(sh)) - 1u), hf = 1u << uint(sh - 1);
    q += uint(rem > hf || (rem == hf && (q & 1u) == 1u));
    return q << uint(sh);
}

#ifdef DROP
#if UNIFORM == 16
#define KEEP16(w) uint16_t(rne11((w) >> 8u) >= pk ? sk : 0u)
#elif UNIFORM == 64
#define DTYPE double
#define DROP_P packDouble2x32(uvec2(pc.st[0], pc.st[1]))
#define DROP_S packDouble2x32(uvec2(pc.st[2], pc.st[3]))
#else
#define DTYPE float
#define DROP_P intBitsToFloat(pc.st[0])
#define DROP_S intBitsToFloat(pc.st[1])
#endif
#define KEEP(u) ((u) >= p ? s : DTYPE(0))
#else
#define KEEP(u) (u)
#endif

void main() {
    uint step = gl_NumWorkGroups.x * WG;
    uint clo = uint(pc.shape[0]), chi = uint(pc.shape[1]);
    uint k0 = uint(pc.shape[2]), k1 = uint(pc.shape[3]);
    if (CTR_BUF != 0) {
        int c = pc.off[1];
        clo = ctr[c];
        chi = ctr[c + 1];
        k0 = ctr[c + 2];
        k1 = ctr[c + 3];
    }
#if UNIFORM == 64
    uint blocks = pc.n / 2u + pc.n % 2u;   // (no pc.n + 1: it may wrap)
#elif UNIFORM == 32 || UNIFORM == 16
    uint blocks = pc.n / 4u + uint(pc.n % 4u != 0u);
#else
    uint blocks = pc.n;
#endif
#if UNIFORM == 16
    uint pk = uint(pc.st[0]);
    uint sk = uint(pc.st[1]);
#elif defined(DROP)
    DTYPE p = DROP_P, s = DROP_S;
#endif
    for (uint i = gl_GlobalInvocationID.x; i < blocks; i += step) {
        uint c0 = clo + i;
        uvec4 w = philox(c0, chi + (c0 < clo ? 1u : 0u), k0, k1);
        int o = pc.off[0];
#if UNIFORM == 64
        uint e = 2u * i;
        res[o + int(e)] = KEEP((double(w.x >> 5u) * 67108864.0LF + double(w.y >> 6u))
                               * (1.0LF / 9007199254740992.0LF));
        if (e + 1u < pc.n)
            res[o + int(e) + 1] = KEEP((double(w.z >> 5u) * 67108864.0LF + double(w.w >> 6u))
                                       * (1.0LF / 9007199254740992.0LF));
#elif UNIFORM == 16
        uint e = 4u * i;
        res[o + int(e)] = KEEP16(w.x);
        if (e + 1u < pc.n) res[o + int(e) + 1] = KEEP16(w.y);
        if (e + 2u < pc.n) res[o + int(e) + 2] = KEEP16(w.z);
        if (e + 3u < pc.n) res[o + int(e) + 3] = KEEP16(w.w);
#elif UNIFORM == 32
        uint e = 4u * i;
        vec4 u = vec4(w >> 8u) * (1.0 / 16777216.0);
        res[o + int(e)] = PUT(KEEP(u.x));
        if (e + 1u < pc.n) res[o + int(e) + 1] = PUT(KEEP(u.y));
        if (e + 2u < pc.n) res[o + int(e) + 2] = PUT(KEEP(u.z));
        if (e + 3u < pc.n) res[o + int(e) + 3] = PUT(KEEP(u.w));
#else
        o += int(i);
        res[o] = w.x;
        res[o + int(pc.n)] = w.y;
        res[o + 2 * int(pc.n)] = w.z;
        res[o + 3 * int(pc.n)] = w.w;
#endif
    }
}
