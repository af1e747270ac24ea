// Loads and stores of IN_* elements for shaders with a bfloat16 variant. bfloat16 (IN_BF16=1)
// keeps its 16 bits in IN_TS (uint16_t) and computes in float32: LD_IN widens a stored value
// exactly (the bits are float32's top half), ST_IN rounds a result as astype does (bf16.glsl);
// every other dtype converts as IN_TC(v) and IN_TS(r) do.
#if defined(IN_BF16) && IN_BF16
#include "bf16.glsl"
#define LD_IN(v) uintBitsToFloat(uint(v) << 16)
#define ST_IN(r) bf16_bits(r)
#else
#define LD_IN(v) IN_TC(v)
#define ST_IN(r) IN_TS(r)
#endif
