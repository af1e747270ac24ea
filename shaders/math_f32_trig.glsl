// Part of math_f32.glsl: sin, cos, tan, asin, acos, atan, atan2, hypot.

// through the float64 library: drivers' float sin/cos/tan are approximations with an
// absolute error (NVIDIA: 1e-5 relative for tan near its zeros) and no reduction of large x
float sin_f(float x) { return float(sin_d(double(x))); }
float cos_f(float x) { return float(cos_d(double(x))); }
float tan_f(float x) { return float(tan_d(double(x))); }
// Cephes atanf: the GLSL atan of some drivers (lavapipe) is only good to 1e-4
float atan_f(float x) {
    float a = abs(x), y = 0.0;
    if (a > 2.414213562373095) { y = 1.5707963267948966; a = -1.0 / a; }
    else if (a > 0.4142135623730950) { y = 0.7853981633974483; a = (a - 1.0) / (a + 1.0); }
    float z = a * a;
    y += (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z
          - 3.33329491539e-1) * z * a + a;
    return isnan(x) ? x : copysign_f(y, x);
}
float atan2_f(float y, float x) {
    if (isnan(x) || isnan(y)) return x + y;
    if (x == 0.0 && y == 0.0) return signbit_f(x) ? copysign_f(3.14159265358979, y) : y;
    if (isinf(x) && isinf(y)) return copysign_f(x > 0.0 ? 0.78539816339745 : 2.35619449019234, y);
    if (x == 0.0 || isinf(y)) return copysign_f(1.5707963267948966, y);
    float r = atan_f(y / x);
    if (x < 0.0) r += signbit_f(y) ? -3.14159265358979 : 3.14159265358979;
    return r;
}
// via atan: the GLSL acos/asin of some drivers (lavapipe) are only good to 1e-4
float asin_f(float x) { return abs(x) > 1.0 ? F_NAN : atan2_f(x, sqrt((1.0 - x) * (1.0 + x))); }
float acos_f(float x) { return abs(x) > 1.0 ? F_NAN : 2.0 * atan2_f(sqrt(1.0 - x), sqrt(1.0 + x)); }
float hypot_f(float a, float b) {
    a = abs(a); b = abs(b);
    if (isinf(a) || isinf(b)) return F_INF;
    float m = max(a, b), n = min(a, b);
    if (m == 0.0) return m;
    float r = n / m;
    return m * sqrt(1.0 + r * r);
}
