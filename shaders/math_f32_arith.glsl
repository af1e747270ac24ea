// Part of math_f32.glsl: correctly rounded float32 division div_f(a, b) and recip_f(x) = div_f(1, x).
// Why not `a / b`: the Vulkan spec allows division 2.5 ulp of error, and NVIDIA's driver (H100,
// driver 580) measures 2 ulp on ordinary operands; it also FLUSHES float32 subnormals in arithmetic
// (shaderDenormPreserveFloat32 = false): a subnormal operand reads as 0 (x / 3e-39 = inf) and a
// subnormal quotient becomes 0 (1 / 2^127 = 0).
// Method: the operands' significands (24-bit integers, subnormals normalised with findMSB) and
// exponents are read from the bits, so no float operation ever sees a subnormal; the driver's
// division of the significands as floats in [1, 2) gives a first quotient Q (24 bits, a few ulp
// off), the exact integer residual R = A 2^23 - Q mb (its low 32 bits suffice: |R| < 2^31) corrects
// Q to the truncated quotient with remainder 0 <= R < mb, and the result's bits are assembled with
// integer operations, rounded to nearest-even (at the subnormal position below 2^-126, with the
// remainder as sticky bit). The correction holds for a first quotient up to ~100 ulp off (checked
// on lavapipe by perturbing it), so the driver's division accuracy does not matter. Result: correctly rounded for every float32 a, b (0 ulp, subnormal
// quotients included), IEEE special values (x/0 = +-inf, 0/0 = inf/inf = nan, signed zeros, nan
// propagation), on devices that flush subnormals and on those that keep them.
// Cost: ~35 ALU instructions on the common path (one float division); operands or quotients that
// are zero, inf, nan or subnormal take a branch that is uniform in practice.

float div_f(float a, float b) {
    uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
    uint sgn = (ua ^ ub) & 0x80000000u;
    uint xa = ua & 0x7fffffffu, xb = ub & 0x7fffffffu;
    uint ma = xa & 0x7fffffu, mb = xb & 0x7fffffu;
    int ea = int(xa >> 23), eb = int(xb >> 23);
    if (uint(ea - 1) >= 254u || uint(eb - 1) >= 254u) {   // an operand is 0, subnormal, inf or nan
        if (xa > 0x7f800000u || xb > 0x7f800000u) return a + b;   // nan in, nan out
        if (xa == 0x7f800000u) return uintBitsToFloat(xb == 0x7f800000u ? 0x7fc00000u : sgn | 0x7f800000u);
        if (xb == 0x7f800000u) return uintBitsToFloat(sgn);
        if (xb == 0u) return uintBitsToFloat(xa == 0u ? 0x7fc00000u : sgn | 0x7f800000u);
        if (xa == 0u) return uintBitsToFloat(sgn);
        if (ea == 0) { int s = 23 - findMSB(ma); ma <<= uint(s); ea = 1 - s; }
        if (eb == 0) { int s = 23 - findMSB(mb); mb <<= uint(s); eb = 1 - s; }
        ma &= 0x7fffffu;
        mb &= 0x7fffffu;
    }
    float fa = uintBitsToFloat(ma | 0x3f800000u), fb = uintBitsToFloat(mb | 0x3f800000u);
    ma |= 0x800000u;
    mb |= 0x800000u;
    // A / mb in [1, 2): A = ma, or 2 ma when ma < mb (then the exponent drops by one)
    bool low = ma < mb;
    uint A = low ? ma << 1 : ma;
    int be = ea - eb + (low ? 126 : 127);     // biased exponent of the quotient
    float rb = 1.0 / fb;
    float q0 = fa * rb * (low ? 16777216.0 : 8388608.0);   // ~ A 2^23 / mb, a few ulp off
    uint Q = clamp(uint(q0), 0x800000u, 0xffffffu);   // the truncated quotient lies there
    int R = int((A << 23) - Q * mb);          // exact: the true R is small, wraparound cancels
    int k = int(floor(float(R) * rb * 1.1920928955078125e-07));   // R / mb, maybe one off
    Q += uint(k);
    R -= k * int(mb);
    if (R < 0) { Q -= 1u; R += int(mb); }
    if (R >= int(mb)) { Q += 1u; R -= int(mb); }
    // now A 2^23 / mb = Q + R / mb, Q in [2^23, 2^24), 0 <= R < mb
    if (be >= 1) {
        if (be >= 255) return uintBitsToFloat(sgn | 0x7f800000u);
        // a division of two 24-bit significands never lands on a midpoint: no tie here
        uint up = uint(2 * R) > mb ? 1u : 0u;
        return uintBitsToFloat(sgn | ((uint(be - 1) << 23) + Q + up));   // a carry may reach inf
    }
    // subnormal quotient: value = Q 2^(be - 1) in units of 2^-149; shift right by sh = 1 - be
    int sh = 1 - be;
    if (sh > 24) return uintBitsToFloat(sgn);   // below half of 2^-149
    uint q = Q >> uint(sh), rem = Q & ((1u << uint(sh)) - 1u), hf = 1u << uint(sh - 1);
    if (rem > hf || (rem == hf && (R != 0 || (q & 1u) != 0u))) q += 1u;
    return uintBitsToFloat(sgn | q);
}

float recip_f(float x) { return div_f(1.0, x); }
