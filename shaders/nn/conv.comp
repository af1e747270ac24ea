#version 450
// im2col (OP=0) and its adjoint col2im (OP=1), docs/kernels/conv.md; grid-stride, one
// invocation per output element. Geometry is packed into the push constants
// (grilly/backends/vulkan/conv.py):
//   pc.n = output elements; pc.off = (output, input) element offsets
//   pc.shape = (N, C, H, W, KH): the image (the im2col input, the col2im output)
//   pc.st[0..4] = input strides: im2col (n, c, h, w), col2im (n, c, k, a, b) whatever the layout
//   pc.st[5..13] = KW, SH, SW, DH, DW, top, left, Ho, Wo; pc.st[14..15] = fill bits (im2col)
// Window k = j*KH + i for kernel offset (i, j) (kw-major: the im2col contract's), or k = i*KW + j
// with KHM=1 (kh-major: a weight's own (KH, KW) order, which Vulkan's conv2d and conv2d_backward
// use so that the weight is one GEMM operand as it is stored, no copy). CM=1: im2col writes
// (C, KW*KH, N, Ho, Wo) instead of (N, C, KW*KH, Ho, Wo). col2im is a gather (one invocation
// per image pixel summing the window entries that read it, in the CPU kernel's k order), so
// no float atomics and a deterministic result. VEC = 4 or 8 (Wo a multiple of it): an im2col
// invocation writes VEC adjacent outputs of a row, so its index arithmetic (five integer
// divisions, most of the kernel's time) serves them all; 16- and 32-bit elements move as raw
// bits and leave in one vector store (8 or 16 bytes: a warp writes one contiguous run, where
// four scalar stores each touched every other sector; the output offset is a multiple of
// VEC). col2im with VEC = 2 (W even; bfloat16, float32): two adjacent pixels per invocation,
// one 32- or 64-bit store. Stride 1 (SH = SW = 1) skips col2im's divisions by the stride.
#extension GL_EXT_control_flow_attributes : enable
#include "../common.glsl"
#include "../io16.glsl"

layout(constant_id = 0) const int OP = 0;
layout(constant_id = 2) const int CM = 0;
layout(constant_id = 3) const int VEC = 1;   // im2col outputs per invocation (1 or 4)
layout(constant_id = 4) const int KHM = 0;   // window order: 0 kw-major, 1 kh-major

#define TC IN_TC
layout(set = 0, binding = 0) writeonly buffer O { IN_TS y[]; };
layout(set = 0, binding = 1) readonly buffer A { IN_TS x[]; };
#if IN_BITS == 16 || IN_BITS == 32
// the same buffers as raw words (aliased bindings): im2col moves bits, VEC per store
#define RAW 1
#if IN_BITS == 16
#define RAW_T uint16_t
layout(set = 0, binding = 0) writeonly buffer OV8 { uvec4 y8[]; };
layout(set = 0, binding = 0) writeonly buffer OV4 { uvec2 y4[]; };
#else
#define RAW_T uint
layout(set = 0, binding = 0) writeonly buffer OV4 { uvec4 y4[]; };
#endif
layout(set = 0, binding = 0) writeonly buffer OV2 { uint y2[]; };   // (col2im pairs: 16 bits)
layout(set = 0, binding = 0) writeonly buffer OVP { uvec2 y2w[]; }; // (col2im pairs: 32 bits)
layout(set = 0, binding = 0) writeonly buffer OR { RAW_T yr[]; };
layout(set = 0, binding = 1) readonly buffer AR { RAW_T xr[]; };
#endif

TC fill_value() {
#if IN_BITS == 64
    return packDouble2x32(uvec2(uint(pc.st[14]), uint(pc.st[15])));
#else
    // float16 and bfloat16 fills arrive as float32 bits: the variant computes in float32
    return uintBitsToFloat(uint(pc.st[14]));
#endif
}

void im2col(int g, int N, int C, int H, int W, int KH) {
    int KW = pc.st[5], SH = pc.st[6], SW = pc.st[7], DH = pc.st[8], DW = pc.st[9];
    int HO = pc.st[12], WO = pc.st[13], K = KH * KW;
    g *= VEC;
    int t = g / WO;
    int b0 = g - t * WO;
    int q = t / HO;
    int a = t - q * HO;
    int n, c, k;
    if (CM != 0) {
        int p = q / N;
        n = q - p * N;
        c = p / K;
        k = p - c * K;
    } else {
        int p = q / K;
        k = q - p * K;
        n = p / C;
        c = p - n * C;
    }
    int i, j;
    if (KHM != 0) {
        i = k / KW;
        j = k - i * KW;
    } else {
        j = k / KH;
        i = k - j * KH;
    }
    int r = a * SH + i * DH - pc.st[10];
    bool rin = r >= 0 && r < H;
    int src = pc.off[1] + n * pc.st[0] + c * pc.st[1] + r * pc.st[2];
#ifdef RAW
    // raw bits (a 16-bit fill arrives as its own bits in pc.st[15], float32's in pc.st[14])
    uint fill = uint(pc.st[IN_BITS == 16 ? 15 : 14]);
    uint w[8];
    [[unroll]] for (int u = 0; u < VEC; ++u) {
        int col = (b0 + u) * SW + j * DW - pc.st[11];
        uint v = fill;
        if (rin && col >= 0 && col < W) v = uint(xr[src + col * pc.st[3]]);
        w[u] = v;
    }
    int o = pc.off[0] + g;
#if IN_BITS == 16
    if (VEC == 8)
        y8[o >> 3] = uvec4(w[0] | (w[1] << 16), w[2] | (w[3] << 16), w[4] | (w[5] << 16),
                           w[6] | (w[7] << 16));
    else if (VEC == 4)
        y4[o >> 2] = uvec2(w[0] | (w[1] << 16), w[2] | (w[3] << 16));
    else
        yr[o] = RAW_T(w[0]);
#else
    if (VEC == 4)
        y4[o >> 2] = uvec4(w[0], w[1], w[2], w[3]);
    else
        yr[o] = w[0];
#endif
#else
    TC fill = fill_value();
    [[unroll]] for (int u = 0; u < VEC; ++u) {
        int col = (b0 + u) * SW + j * DW - pc.st[11];
        TC v = fill;
        if (rin && col >= 0 && col < W) v = LD_IN(x[src + col * pc.st[3]]);
        y[pc.off[0] + g + u] = ST_IN(v);
    }
#endif
}

// the sum of the window entries that read pixel (r, col) of image plane ``base``
TC col2im_sum(int r, int col, int base, int KH) {
    int KW = pc.st[5], SH = pc.st[6], SW = pc.st[7], DH = pc.st[8], DW = pc.st[9];
    int HO = pc.st[12], WO = pc.st[13];
    bool unit = SH == 1 && SW == 1;   // (uniform: stride 1 needs no division)
    TC s = TC(0);
    // window (i, j) at output (a, b) read pixel (a*SH + i*DH - top, b*SW + j*DW - left): the
    // pixel's windows are the offsets whose remainder is a multiple of the stride, in range;
    // summed in k order either way (the outer loop is the major axis)
    if (KHM != 0) {
        for (int i = 0; i < KH; ++i) {
            int v = r + pc.st[10] - i * DH;
            if (v < 0) break;  // v only decreases with i
            int a = unit ? v : v / SH;
            if (a * SH != v || a >= HO) continue;
            for (int j = 0; j < KW; ++j) {
                int u = col + pc.st[11] - j * DW;
                if (u < 0) break;
                int b = unit ? u : u / SW;
                if (b * SW != u || b >= WO) continue;
                s += LD_IN(x[base + (i * KW + j) * pc.st[2] + a * pc.st[3] + b * pc.st[4]]);
            }
        }
    } else {
        for (int j = 0; j < KW; ++j) {
            int u = col + pc.st[11] - j * DW;
            if (u < 0) break;  // u only decreases with j
            int b = unit ? u : u / SW;
            if (b * SW != u || b >= WO) continue;
            for (int i = 0; i < KH; ++i) {
                int v = r + pc.st[10] - i * DH;
                if (v < 0) break;
                int a = unit ? v : v / SH;
                if (a * SH != v || a >= HO) continue;
                s += LD_IN(x[base + (j * KH + i) * pc.st[2] + a * pc.st[3] + b * pc.st[4]]);
            }
        }
    }
    return s;
}

// col2im's pixel pairs: bfloat16 and float32 (float16's bits would need its arithmetic
// extension to read; it keeps one pixel per invocation)
#if IN_BITS == 32 || (defined(IN_BF16) && IN_BF16)
#define PAIRS 1
const int CVEC = VEC;
#else
const int CVEC = 1;
#endif

void col2im(int g, int N, int C, int H, int W, int KH) {
    g *= CVEC;   // (1 or 2: adjacent pixels of a row, W even)
    int t = g / W;
    int col = g - t * W;
    int q = t / H;
    int r = t - q * H;
    int n = q / C, c = q - n * C;
    int base = pc.off[1] + n * pc.st[0] + c * pc.st[1];
    TC s = col2im_sum(r, col, base, KH);
#ifdef PAIRS
    if (VEC == 2) {
        TC s1 = col2im_sum(r, col + 1, base, KH);
        int o = pc.off[0] + g;
#if IN_BITS == 16
        y2[o >> 1] = uint(ST_IN(s)) | (uint(ST_IN(s1)) << 16);
#else
        y2w[o >> 1] = uvec2(floatBitsToUint(s), floatBitsToUint(s1));
#endif
        return;
    }
#endif
    y[pc.off[0] + g] = ST_IN(s);
}

void main() {
    int N = pc.shape[0], C = pc.shape[1], H = pc.shape[2], W = pc.shape[3], KH = pc.shape[4];
    uint step = gl_NumWorkGroups.x * WG;
    for (uint g = gl_GlobalInvocationID.x; g < pc.n; g += step) {
        if (OP == 0)
            im2col(int(g), N, C, H, W, KH);
        else
            col2im(int(g), N, C, H, W, KH);
    }
}
