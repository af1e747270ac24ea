"""Fit the polynomial coefficients and the pow table of shaders/math_f32_explog.glsl.

Weighted least squares on Chebyshev points, reweighted (Lawson) toward the minimax error in
the relative error of the whole function, rounded to float32 and re-checked; run it to see
each fit's worst relative error (log2) and its coefficients, lowest degree first.
"""
from __future__ import annotations

import mpmath as mp
import numpy as np

mp.mp.dps = 40


def fit(fun, a: float, b: float, deg: int, weight, n: int = 600) -> tuple[np.ndarray, float]:
    """float32 coefficients of a near-minimax fit of fun on [a, b] and its worst weighted error."""
    t = np.cos(np.pi * (np.arange(n) + 0.5) / n) * (b - a) / 2 + (a + b) / 2
    y = np.array([float(fun(mp.mpf(float(v)))) for v in t])
    w = np.array([float(weight(mp.mpf(float(v)))) for v in t])
    vand = np.vander(t, deg + 1, increasing=True)
    ww = np.ones(n)
    for _ in range(60):
        c = np.linalg.lstsq(vand * (w * np.sqrt(ww))[:, None], y * w * np.sqrt(ww), rcond=None)[0]
        ww = ww * np.abs((vand @ c - y) * w)
        ww /= ww.sum()
    c32 = c.astype(np.float32)
    tt = np.linspace(a, b, 2001)
    ref = np.array([float(fun(mp.mpf(float(v)))) for v in tt])
    wt = np.array([float(weight(mp.mpf(float(v)))) for v in tt])
    return c32, float(np.max(np.abs((np.polyval(c32.astype(np.float64)[::-1], tt) - ref) * wt)))


def _ratio(num, den, at0):
    return lambda v: at0 if abs(v) < 1e-30 else num(v) / den(v)


FITS = {
    # e^r - 1 = r + r^2 P(r)
    "expm1 P": (_ratio(lambda r: mp.expm1(r) - r, lambda r: r * r, mp.mpf(1) / 2), -0.353532, 0.353532, 5,
                lambda r: r * r / mp.expm1(r) if r else 0),
    # 2^f = 1 + f Q(f)
    "exp2 Q": (_ratio(lambda f: mp.power(2, f) - 1, lambda f: f, mp.log(2)), -0.5025, 0.5025, 6,
               lambda f: f / mp.power(2, f)),
    # log1p(f) = 2s + s R(z), z = s^2, R(z) = z (c0 + c1 z + ...)
    "log R": (_ratio(lambda z: 2 * mp.atanh(mp.sqrt(z)) - 2 * mp.sqrt(z), lambda z: mp.sqrt(z) * z,
                     mp.mpf(2) / 3), 0, 0.0297404, 3,
              lambda z: mp.sqrt(z) * z / (2 * mp.atanh(mp.sqrt(z))) if z else 0),
    # sinh(x) = x + x^3 S(x^2), |x| < 1
    "sinh S": (_ratio(lambda z: mp.sinh(mp.sqrt(z)) - mp.sqrt(z), lambda z: mp.sqrt(z) * z,
                      mp.mpf(1) / 6), 0, 1.0, 4,
               lambda z: mp.sqrt(z) * z / mp.sinh(mp.sqrt(z)) if z else 0),
    # cosh(x) = 1 + x^2 C(x^2), |x| < 1
    "cosh C": (_ratio(lambda z: mp.cosh(mp.sqrt(z)) - 1, lambda z: z, mp.mpf(1) / 2), 0, 1.0, 5,
               lambda z: z / mp.cosh(mp.sqrt(z))),
    # tanh(x) = x + x^3 T(x^2), |x| < 0.55
    "tanh T": (_ratio(lambda z: mp.tanh(mp.sqrt(z)) - mp.sqrt(z), lambda z: mp.sqrt(z) * z,
                      -mp.mpf(1) / 3), 0, 0.3025, 7,
               lambda z: mp.sqrt(z) * z / mp.tanh(mp.sqrt(z)) if z else 0),
}


def pow_table() -> list[tuple[float, float, float]]:
    """(c, head, tail) for j = 45..91: c ~ 64/j in multiples of 2^-7, -log2(c) = head + tail."""
    out = []
    for j in range(45, 92):
        c = round(128 * 64 / j) / 128
        t = -mp.log(c, 2)
        h = np.float32(float(t))
        out.append((c, float(h), float(np.float32(float(t - mp.mpf(float(h)))))))
    return out


def main() -> None:
    """Print every fit and the pow table."""
    for name, (fun, a, b, deg, weight) in FITS.items():
        c, err = fit(fun, a, b, deg, weight)
        print(f"{name}: relative error 2^{np.log2(err):.1f}:", ", ".join(f"{v:.9e}" for v in c))
    for c, h, lo in pow_table():
        print(f"{c!r}, {h:.9e}, {lo:.9e}")


if __name__ == "__main__":
    main()
