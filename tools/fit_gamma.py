"""Print the series grilly/special/gamma.py holds, computed with mpmath.

    python tools/fit_gamma.py

- LGAMMA2: S(u) = lgamma(2 + u) = u * (c_1 + c_2 u + ...), c_1 = 1 - euler_gamma,
  c_k = (-1)^k (zeta(k) - 1) / k (Taylor at u = 0; radius 2, used on |u| <= 1/2).
  psi(2 + u) = S'(u) uses the same coefficients (times k).
- PSI_ROOT: psi's positive root x0 as a float64 pair (hi, lo) and psi(x0 + t) / t =
  sum_k psi^(k)(x0) / k! t^(k-1) (radius x0 = 1.46, used on |t| <= 0.3).
"""
from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50


def main() -> None:
    print("LGAMMA2 = (")
    print(f"    {mp.nstr(1 - mp.euler, 20)},")
    for k in range(2, 33):
        print(f"    {mp.nstr((-1) ** k * (mp.zeta(k) - 1) / k, 20)},")
    print(")")
    x0 = mp.findroot(mp.digamma, 1.46)
    hi = float(x0)
    lo = float(x0 - hi)
    print(f"PSI_ROOT = ({hi!r}, {lo!r})")
    print("PSI_ROOT_SERIES = (")
    for k in range(1, 28):
        print(f"    {mp.nstr(mp.polygamma(k, x0) / mp.factorial(k), 20)},")
    print(")")


if __name__ == "__main__":
    main()
