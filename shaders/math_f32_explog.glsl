// Part of math_f32.glsl: exp, exp2, expm1, log, log2, log10, log1p, pow, logaddexp, and the
// hyperbolic functions and their inverses.

float exp_f(float x) { return exp(x); }
float exp2_f(float x) { return exp2(x); }
float expm1_f(float x) {
    // Kahan's trick: exact near zero without a series
    float u = exp(x);
    if (u == 1.0) return x;
    float um1 = u - 1.0;
    if (um1 == -1.0) return -1.0;
    if (isinf(u)) return u;
    return um1 * x / log(u);
}
float log_f(float x) { return log(x); }
float log1p_f(float x) {
    float u = 1.0 + x;
    if (u == 1.0) return x;
    if (isinf(u)) return log(u);
    return log(u) * x / (u - 1.0);
}
float log2_f(float x) { return log2(x); }
float log10_f(float x) { return log(x) * 0.43429448190325176; }
float pow_f(float x, float y) {
    if (y == 0.0 || x == 1.0) return 1.0;
    if (isnan(x) || isnan(y)) return x + y;
    float ay = abs(y);
    bool yint = trunc(y) == y;
    bool yodd = yint && ay < 16777216.0 && mod(ay, 2.0) == 1.0;
    if (isinf(y)) {
        float ax = abs(x);
        if (ax == 1.0) return 1.0;
        return (ax > 1.0) == (y > 0.0) ? y * y : 0.0;
    }
    if (x == 0.0) {
        float r = y > 0.0 ? 0.0 : F_INF;
        return yodd ? copysign_f(r, x) : r;
    }
    if (x < 0.0) {
        if (!yint) return F_NAN;
        float r = pow(-x, y);
        return yodd ? -r : r;
    }
    return pow(x, y);
}
float logaddexp_f(float a, float b) {
    if (a == b) return a + 0.69314718055994531;
    float m = max(a, b);
    if (isnan(a) || isnan(b)) return a + b;
    return m + log1p_f(exp_f(-abs(a - b)));
}
float sinh_f(float x) { return abs(x) < 1e-4 ? x : sinh(x); }
float cosh_f(float x) { return cosh(x); }
float tanh_f(float x) { return abs(x) > 20.0 ? sign(x) : (abs(x) < 1e-4 ? x : tanh(x)); }
float asinh_f(float x) { return x < 0.0 ? -asinh(-x) : asinh(x); }
float acosh_f(float x) { return acosh(x); }
float atanh_f(float x) { return atanh(x); }
