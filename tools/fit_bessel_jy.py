"""Chebyshev coefficients for grilly/special/bessel_jy.py (J0, J1, Y0, Y1), at 40 digits.

On 0 <= x <= 8, as series in s = x^2 / 32 - 1 (functions of u = x^2, smooth):
  J0(x) / ((x^2 - j01^2)(x^2 - j02^2)) w,  J1(x) / (x (x^2 - j11^2)(x^2 - j12^2)) w,
  w = ((x^2 + 16) / 16)^2
(the zeros below 8 divided out, so the product keeps J's relative accuracy next to them), and
  Y0(x) - 2/pi log(x) J0(x),  (Y1(x) - 2/pi log(x) J1(x) + 2 / (pi x)) / x.
On x >= 8, Hankel's modulus-free form J_n = sqrt(2 / (pi x)) (P_n cos chi - Q_n sin chi),
Y_n = sqrt(2 / (pi x)) (P_n sin chi + Q_n cos chi), chi = x - (2n + 1) pi / 4, with P_n, Q_n as
series in s = 16 / x - 1. Prints the tables and the zeros.

Run: python tools/fit_bessel_jy.py
"""
from __future__ import annotations

import mpmath as mp
from fit_bessel_k import cheb   # (tools/ is the script's directory)

mp.mp.dps = 40
N = 70


def trim(c, tol=mp.mpf("1e-19")) -> list:
    keep = max(k for k in range(len(c)) if abs(c[k]) > tol) + 1
    return [float(v) for v in c[:keep]]


def main() -> None:
    j0z = [mp.besseljzero(0, k) for k in (1, 2)]
    j1z = [mp.besseljzero(1, k) for k in (1, 2)]

    def x_of(s):
        return mp.sqrt(32 * (s + 1))

    def flat(s):
        # R falls 60-fold (J0) and 17-fold (J1) over [0, 8]: times ((x^2 + 16) / 16)^2 it
        # varies 2.5-fold, so the series' rounding (relative to its largest terms) stays a
        # few ulp of the value at x = 8 too
        return ((32 * (s + 1) + 16) / 16) ** 2

    def r_j0(s):
        x = x_of(s)
        return mp.besselj(0, x) / ((x * x - j0z[0] ** 2) * (x * x - j0z[1] ** 2)) * flat(s)

    def r_j1(s):
        x = x_of(s)
        if x == 0:
            return mp.mpf(1) / 2 / (j1z[0] ** 2 * j1z[1] ** 2) * flat(s)
        return mp.besselj(1, x) / (x * (x * x - j1z[0] ** 2) * (x * x - j1z[1] ** 2)) * flat(s)

    def t_y0(s):
        x = x_of(s)
        if x == 0:
            return 2 / mp.pi * (mp.euler - mp.log(2))
        return mp.bessely(0, x) - 2 / mp.pi * mp.log(x) * mp.besselj(0, x)

    def t_y1(s):
        x = x_of(s)
        if x == 0:   # the limit, from the series
            return (2 * mp.euler - 1 - 2 * mp.log(2)) / (2 * mp.pi)
        return (mp.bessely(1, x) - 2 / mp.pi * mp.log(x) * mp.besselj(1, x)
                + 2 / (mp.pi * x)) / x

    def hankel(n, which):
        def f(s):
            y = (s + 1) / 16          # 1 / x
            if y == 0:
                return mp.mpf(1) if which == "P" else mp.mpf(0)
            x = 1 / y
            chi = x - (2 * n + 1) * mp.pi / 4
            j, yv = mp.besselj(n, x), mp.bessely(n, x)
            amp = mp.sqrt(mp.pi * x / 2)
            if which == "P":
                return amp * (j * mp.cos(chi) + yv * mp.sin(chi))
            return amp * (yv * mp.cos(chi) - j * mp.sin(chi))
        return f

    tables = {"J0_SMALL": r_j0, "J1_SMALL": r_j1, "Y0_SMALL": t_y0, "Y1_SMALL": t_y1,
              "P0": hankel(0, "P"), "Q0": hankel(0, "Q"), "P1": hankel(1, "P"),
              "Q1": hankel(1, "Q")}
    for name, f in tables.items():
        print(f"{name} = ({', '.join(repr(v) for v in trim(cheb(f, N)))},)")
    print(f"J0_ZEROS = {[float(z) for z in j0z]!r}")
    print(f"J0_ZEROS_LO = {[float(z - mp.mpf(float(z))) for z in j0z]!r}")
    print(f"J1_ZEROS = {[float(z) for z in j1z]!r}")
    print(f"J1_ZEROS_LO = {[float(z - mp.mpf(float(z))) for z in j1z]!r}")


if __name__ == "__main__":
    main()
