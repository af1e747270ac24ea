// Single-precision math library for GLSL: every float32 (and float16, which computes in
// float32) transcendental of grilly's shaders comes from here, never from a GLSL built-in
// (the Vulkan spec leaves their precision loose: exp 3 + 2|x| ulp, log an absolute 2^-21 near
// 1, and drivers differ). Functions are suffixed _f. Accuracy per function is measured by
// tests/test_vulkan_f32_accuracy.py (bar: 4 ulp against a float64 reference, on every device).
// Needs common.glsl (isnan/isinf from bit patterns) included first.
#ifndef GRILLY_MATH_F32
#define GRILLY_MATH_F32

#define F_INF uintBitsToFloat(0x7f800000u)
#define F_NAN uintBitsToFloat(0x7fc00000u)

float copysign_f(float x, float y) {
    return uintBitsToFloat((floatBitsToUint(x) & 0x7fffffffu) | (floatBitsToUint(y) & 0x80000000u));
}
bool signbit_f(float x) { return (floatBitsToUint(x) >> 31) != 0u; }
// -x and |x| from the bits: exact for subnormals also where float arithmetic flushes them (NVIDIA)
float neg_f(float x) { return uintBitsToFloat(floatBitsToUint(x) ^ 0x80000000u); }
float abs_f(float x) { return uintBitsToFloat(floatBitsToUint(x) & 0x7fffffffu); }

#include "math_f32_arith.glsl"
#include "math_f32_explog.glsl"
#include "math_f32_trig.glsl"

#endif
