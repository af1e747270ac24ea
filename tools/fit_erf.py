"""Fit the polynomials of grilly/nn/_special.py (erf, erfc, gelu) with mpmath and print them as
the Python literals that file holds.

    python tools/fit_erf.py > /tmp/pieces.txt     # ~1 minute

Each piece is a Chebyshev interpolant (degree per dtype below) written in powers of (v - m).
For the B and C pieces m is a float of the target precision near the middle of the interval
where the function is within 2^-12 ulp of a float, and the polynomial is f(m) rounded plus
(v - m) times an interpolant of (f(v) - f(m)) / (v - m): its constant term carries no rounding.
"""
from __future__ import annotations

import mpmath as mp
import numpy as np

mp.mp.dps = 50

# per dtype: where small meets B (c1) and B meets C (zb), in z = |x| for erf (|x|/sqrt 2 for
# gelu); the cap beyond which the results underflow; polynomial degrees
SPECS = {
    "f32": dict(c1=0.5, zb=2.0, cap=10.3, deg=dict(small=5, B=10, C=8)),
    "f64": dict(c1=0.5, zb=3.0, cap=27.5, deg=dict(small=9, B=23, C=17)),
}


def _cheb(f, lo, hi, deg):
    """Monomial coefficients, in (v - mid), of f's interpolant at deg + 1 Chebyshev nodes."""
    mid, h, n = (lo + hi) / 2, (hi - lo) / 2, deg + 1
    th = [mp.pi * (k + mp.mpf(1) / 2) / n for k in range(n)]
    ys = [f(mid + h * mp.cos(t)) for t in th]
    cc = [2 * mp.fsum(y * mp.cos(j * t) for y, t in zip(ys, th)) / n for j in range(n)]
    cc[0] /= 2
    T = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for j in range(2, n):
        a = [mp.mpf(0)] + [2 * c for c in T[j - 1]]
        T.append([x - y for x, y in zip(a, T[j - 2] + [mp.mpf(0)] * 2)])
    mono = [mp.fsum(cc[j] * T[j][i] for j in range(i, n) if i < len(T[j])) for i in range(n)]
    return [c / h ** i for i, c in enumerate(mono)], mid


def _shift(c, mid, m):
    """Coefficients in (v - mid) -> in (v - m)."""
    d = m - mid
    return [mp.fsum(c[i] * mp.binomial(i, k) * d ** (i - k) for i in range(k, len(c)))
            for k in range(len(c))]


def _pick_m(f, mid, dt):
    """A float of dtype dt near mid where f is within 2^-12 ulp of a float of dt."""
    eps = float(np.finfo(dt).eps)
    best = None
    for k in range(40000):
        x = float(dt(mid * (1 + 97 * eps * (k // 2 + 1) * (1 if k % 2 else -1))))
        fx = f(mp.mpf(x))
        q = abs(fx - float(dt(float(fx)))) / abs(fx) / eps
        if best is None or q < best[0]:
            best = (q, x)
        if q < 2 ** -12:
            break
    return best[1]


def _piece(f, lo, hi, deg, dt, exact_c0):
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    if not exact_c0:
        c, mid = _cheb(f, lo, hi, deg)
        m = float(dt(float(mid)))
        return m, [float(x) for x in _shift(c, mid, mp.mpf(m))]
    m = _pick_m(f, float((lo + hi) / 2), dt)
    fm = f(mp.mpf(m))
    c, mid = _cheb(lambda v: (f(v) - fm) / (v - m), lo, hi, deg - 1)
    return m, [float(dt(float(fm)))] + [float(x) for x in _shift(c, mid, mp.mpf(m))]


def pieces(tag: str, kind: str) -> tuple:
    """(c1, zb, cap) in the variable a = |x| and the (m, coefficients) of small, B and C."""
    sp, dt = SPECS[tag], (np.float32 if tag == "f32" else np.float64)
    gelu = kind == "gelu"
    k = mp.sqrt(2) if gelu else mp.mpf(1)
    R = lambda z: mp.erfc(z) * mp.exp(z * z)  # noqa: E731

    def small(s):   # erf: erf(a)/a - 1; gelu: erf(a/sqrt2)/(2a); s = a^2
        if s == 0:
            return 1 / mp.sqrt(2 * mp.pi) if gelu else 2 / mp.sqrt(mp.pi) - 1
        a = mp.sqrt(s)
        return mp.erf(a / k) / (2 * a) if gelu else mp.erf(a) / a - 1

    # B: erfc = e R(a); gelu's a erfc(a/sqrt2)/2 = e (a R(a/sqrt2)/2). C, w = 1/a^2: erfc = e K/a
    # with K = a R(a); gelu's = e K~, K~ = a R(a/sqrt2)/2
    fB = (lambda a: a * R(a / k) / 2) if gelu else R

    def fC(w):
        return R(1 / (k * mp.sqrt(w))) / mp.sqrt(w) / (2 if gelu else 1)

    c1, zb, cap = (float(v * k) for v in (sp["c1"], sp["zb"], sp["cap"]))
    out = [_piece(small, 0, c1 * c1, sp["deg"]["small"], dt, False),
           _piece(fB, c1, zb, sp["deg"]["B"], dt, True),
           _piece(fC, 1 / mp.mpf(cap) ** 2, 1 / mp.mpf(zb) ** 2, sp["deg"]["C"], dt, True)]
    return (c1, zb, cap), out


def main() -> None:
    """Print the four tables."""
    for tag in ("f32", "f64"):
        for kind in ("erf", "gelu"):
            (c1, zb, cap), out = pieces(tag, kind)
            print(f"_{kind.upper()}_{tag.upper()} = _Pieces({c1!r}, {zb!r}, {cap!r},")
            for m, c in out:
                print(f"    ({m!r}, ({', '.join(repr(v) for v in c)})),")
            print(")")


if __name__ == "__main__":
    main()
