// Shared by every grilly compute shader: extensions, dtype macros and strided N-d indexing.
// The build (tools/build_shaders.py) defines per variant, for each operand dtype X (IN, OUT):
//   X_TS  storage type   X_TC  compute type   X_KIND 0 bool, 1 signed, 2 unsigned, 3 float
//   X_BITS bit width of the dtype
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_ARB_gpu_shader_int64 : enable
#extension GL_EXT_spirv_intrinsics : require

// IEEE inf, NaN and signed zeros (SPV_KHR_float_controls): without this execution mode a driver
// may assume they never occur, and NVIDIA's does (INF * x and isinf tests were folded away).
// glslang keeps one such mode per shader, so tools/build_shaders.py adds the 32-bit twin.
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 64);

// isnan/isinf read the bit patterns: NVIDIA's compiler drops the builtins' tests on some double
// paths (sin(inf) and cosh(inf + 1j) came out finite); integer compares cannot be folded away
bool isnan_b(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
bool isinf_b(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0x7f800000u; }
bvec4 isnan_b(vec4 x) { return greaterThan(floatBitsToUint(x) & uvec4(0x7fffffffu), uvec4(0x7f800000u)); }
bool isnan_b(double x) {
    return (doubleBitsToUint64(x) & 0x7fffffffffffffffUL) > 0x7ff0000000000000UL;
}
bool isinf_b(double x) {
    return (doubleBitsToUint64(x) & 0x7fffffffffffffffUL) == 0x7ff0000000000000UL;
}
#define isnan(x) isnan_b(x)
#define isinf(x) isinf_b(x)

#define K_B 0
#define K_I 1
#define K_U 2
#define K_F 3
#define MAXD 5
#define WG 256

layout(local_size_x = WG) in;
layout(constant_id = 1) const int NDIM = 1;

#ifndef OWN_PUSH_CONSTANTS   // fused.comp has a layout of its own
// Operand 0 is the output; 1..3 the inputs. Offsets and strides are in elements.
layout(push_constant) uniform PC {
    uint n;
    int off[4];
    int shape[MAXD];
    int st[4 * MAXD];
} pc;

// Element offsets of operands 0..NOPS-1 for flat (row-major) output index i.
void locate(uint i, int nops, out int o[4]) {
    for (int k = 0; k < 4; ++k) o[k] = pc.off[k];
    if (NDIM == 1) {
        for (int k = 0; k < nops; ++k) o[k] += int(i) * pc.st[k * MAXD];
        return;
    }
    uint r = i;
    for (int d = NDIM - 1; d >= 0; --d) {
        uint s = uint(pc.shape[d]);
        uint q = r / s;
        int c = int(r - q * s);
        r = q;
        for (int k = 0; k < nops; ++k) o[k] += c * pc.st[k * MAXD + d];
    }
}
#endif

// Storage <-> compute conversions go through 32 bits: 8/16-bit types are storage-only.
#define LOAD(X, v) X##_TC(v)
