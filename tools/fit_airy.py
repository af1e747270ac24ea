"""Chebyshev coefficients for grilly/special/airy.py (Ai and Ai'), at 40 digits.

- x >= 1 (zeta = 2/3 x^(3/2) >= 2/3): F = 2 sqrt(pi) x^(1/4) e^zeta Ai(x) and
  G = -2 sqrt(pi) x^(-1/4) e^zeta Ai'(x) (both -> 1 as zeta -> inf), series in
  t = 2 zeta0 / zeta - 1, zeta0 = 2/3 (45 terms to 1e-19).
- -3 <= x <= -1 and -1 <= x <= 1: f(x) / prod (x - z) over the zeros listed in ZEROS (Ai's
  a1 = -2.338, Ai''s a1' = -1.019), divided out so the products keep the relative accuracy
  next to the zeros; series in s = x + 2 and s = x. (One interval [-3, 1] for Ai / (x - a1),
  which falls 17-fold, cost 9 ulp at x = 0.8.)
- x <= -3, z = -x, zeta = 2/3 z^(3/2) >= 2 sqrt 3: with A = sqrt(pi) z^(1/4) Ai(-z),
  B = sqrt(pi) z^(1/4) Bi(-z), chi = zeta - pi/4, c = cos chi, s = sin chi:
  A = c P + s Q (P = c A - s B, Q = s A + c B), and with A' = sqrt(pi) z^(-1/4) Ai'(-z),
  B' likewise: A' = s R - c S (R = s A' + c B', S = s B' - c A'); P, Q, R, S (smooth in
  1 / zeta, DLMF 9.7.9-9.7.11) as series in t = 2 zeta1 / zeta - 1, zeta1 = 2 sqrt 3.
Prints the tables and the zeros as float pairs.

Run: python tools/fit_airy.py
"""
from __future__ import annotations

import mpmath as mp
from fit_bessel_k import cheb   # (tools/ is the script's directory)

mp.mp.dps = 40
N = 80
# the zeros divided out of each middle table (names as in grilly/special/airy.py)
ZEROS = {"AI_LEFT": ["AI_ZERO"], "AI_MID": [], "AIP_LEFT": ["AIP_ZERO"],
         "AIP_MID": ["AIP_ZERO"]}


def trim(c, tol=mp.mpf("1e-19")) -> list:
    top = max(abs(v) for v in c)
    keep = max(k for k in range(len(c)) if abs(c[k]) > tol * top) + 1
    return [float(v) for v in c[:keep]]


def _fn(name: str):
    deriv = 1 if "P_" in name else 0
    return lambda x: mp.airyai(x, deriv)


def main() -> None:
    zeros = {"AI_ZERO": mp.airyaizero(1), "AIP_ZERO": mp.airyaizero(1, derivative=1)}
    z0 = mp.mpf(2) / 3
    z1 = 2 * mp.sqrt(3)

    def x_of(zeta):
        return (3 * zeta / 2) ** (mp.mpf(2) / 3)

    def pos(which):
        def g(t):
            if t == -1:
                return mp.mpf(1)
            zeta = 2 * z0 / (t + 1)
            x = x_of(zeta)
            if which == "F":
                return 2 * mp.sqrt(mp.pi) * x ** mp.mpf(0.25) * mp.exp(zeta) * mp.airyai(x)
            return -2 * mp.sqrt(mp.pi) * x ** mp.mpf(-0.25) * mp.exp(zeta) * mp.airyai(x, 1)
        return g

    def mid(name):
        f, shift = _fn(name), (2 if name.endswith("LEFT") else 0)

        def g(s):
            x = s - shift
            v = f(x)
            for z in ZEROS[name]:
                v /= x - zeros[z]
            return v
        return g

    def neg(which):
        def f(t):
            if t == -1:
                return mp.mpf(1) if which in "PR" else mp.mpf(0)
            zeta = 2 * z1 / (t + 1)
            z = x_of(zeta)
            chi = zeta - mp.pi / 4
            c, s = mp.cos(chi), mp.sin(chi)
            q4 = z ** mp.mpf(0.25)
            if which in "PQ":
                a = mp.sqrt(mp.pi) * q4 * mp.airyai(-z)
                b = mp.sqrt(mp.pi) * q4 * mp.airybi(-z)
                return c * a - s * b if which == "P" else s * a + c * b
            a = mp.sqrt(mp.pi) / q4 * mp.airyai(-z, 1)
            b = mp.sqrt(mp.pi) / q4 * mp.airybi(-z, 1)
            return s * a + c * b if which == "R" else s * b - c * a
        return f

    tables = {"AI_POS": pos("F"), "AIP_POS": pos("G")}
    tables.update({name: mid(name) for name in ZEROS})
    tables.update({k: neg(k) for k in "PQRS"})
    for name, f in tables.items():
        print(f"{name} = ({', '.join(repr(v) for v in trim(cheb(f, N)))},)")
    for name, z in zeros.items():
        print(f"{name} = ({float(z)!r}, {float(z - mp.mpf(float(z)))!r})")


if __name__ == "__main__":
    main()
