"""Chebyshev coefficients of sqrt(x) e^x K_v(x) on x >= 1, v = 0, 1, for grilly/special/bessel_k.py.

With y = 1 / x in (0, 1] and s = 2y - 1 in (-1, 1], g_v(s) = sqrt(x) e^x K_v(x) is smooth (its
limit at x = inf is sqrt(pi / 2)); interpolation at 60 Chebyshev nodes with mpmath at 40 digits
gives coefficients that fall below 1e-17 after 32-33 terms. Also the K1 series' coefficients
(psi(k + 1) + psi(k + 2)) / (k! (k + 1)!) (DLMF 10.31.1). Prints the tables.

Run: python tools/fit_bessel_k.py
"""
from __future__ import annotations

import mpmath as mp

mp.mp.dps = 40
N = 60


def cheb(f, n: int = N) -> list:
    """Chebyshev interpolation coefficients of f on [-1, 1] (c_0 halved: f = sum c_k T_k)."""
    nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n) for k in range(n)]
    vals = [f(s) for s in nodes]
    c = [2 * mp.fsum(vals[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / n) for k in range(n)) / n
         for j in range(n)]
    c[0] /= 2
    return c


def scaled(v: int):
    def g(s):
        y = (s + 1) / 2
        if y == 0:
            return mp.sqrt(mp.pi / 2)
        x = 1 / y
        return mp.sqrt(x) * mp.exp(x) * mp.besselk(v, x)
    return g


def main() -> None:
    for v in (0, 1):
        c = cheb(scaled(v))
        keep = max(k for k in range(N) if abs(c[k]) > 1e-18) + 1
        print(f"K{v}_CHEB = (" + ", ".join(repr(float(x)) for x in c[:keep]) + ")")
    d = [(mp.digamma(k + 1) + mp.digamma(k + 2)) / (mp.factorial(k) * mp.factorial(k + 1))
         for k in range(14)]
    print("K1_SERIES = (" + ", ".join(repr(float(x)) for x in d) + ")")
    h = [mp.fsum(mp.mpf(1) / j for j in range(1, k + 1)) / mp.factorial(k) ** 2 for k in range(14)]
    print("K0_SERIES = (" + ", ".join(repr(float(x)) for x in h) + ")")


if __name__ == "__main__":
    main()
