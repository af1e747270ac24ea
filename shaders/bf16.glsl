// float32 -> bfloat16 bits, shared by the cast shader and the bfloat16 elementwise variants (so
// an op on bfloat16 rounds exactly as the float32 op followed by astype would).

// the bfloat16 nearest (ties to even) to the float32 with bits u; NaN becomes ml_dtypes' quiet
// NaN with its sign
uint16_t bf16_round(uint u) {
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return uint16_t(((u >> 16) & 0x8000u) | 0x7fc0u);
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

uint16_t bf16_bits(float f) {
    return bf16_round(floatBitsToUint(f));
}
