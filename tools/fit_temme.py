"""The coefficients of Temme's uniform expansion of the incomplete gamma function, exactly.

Q(a, x) = erfc(eta sqrt(a/2)) / 2 + exp(-a eta^2 / 2) / sqrt(2 pi a) sum_k c_k(eta) a^-k
(DLMF 8.12.3-8.12.11), lambda = x / a, eta^2 / 2 = lambda - 1 - log(lambda), eta of the sign
of lambda - 1. The c_k are analytic at eta = 0, but their closed forms cancel there
(c_0 = 1 / (lambda - 1) - 1 / eta), so they are used as power series in eta:
c_0 = 1/mu - 1/eta and c_k = (1/eta) c_{k-1}'(eta) + (-1)^k g_k / mu, mu = lambda - 1 as a
series in eta (the reversion of eta(mu)), g_k Stirling's coefficients of Gamma*(a). Exact
rational arithmetic; prints the table grilly/special/incomplete_gamma.py holds.

Run: python tools/fit_temme.py [K sets] [degree]
"""
from __future__ import annotations

import math
import sys
from fractions import Fraction


def mul(p, q, n):
    """Product of two power series, truncated to n terms."""
    out = [Fraction(0)] * n
    for i, a in enumerate(p[:n]):
        if a:
            for j, b in enumerate(q[:n - i]):
                out[i + j] += a * b
    return out


def inv(p, n):
    """1 / p for p[0] != 0, n terms."""
    out = [Fraction(0)] * n
    out[0] = 1 / p[0]
    for k in range(1, n):
        out[k] = -sum(p[j] * out[k - j] for j in range(1, min(k, len(p) - 1) + 1)) / p[0]
    return out


def sqrt1(p, n):
    """sqrt(p) for p[0] == 1, n terms."""
    out = [Fraction(0)] * n
    out[0] = Fraction(1)
    for k in range(1, n):
        s = sum(out[j] * out[k - j] for j in range(1, k))
        out[k] = (p[k] - s) / 2
    return out


def exp0(p, n):
    """exp(p) for p[0] == 0, n terms (y' = p' y)."""
    dp = [k * p[k] for k in range(n)]
    out = [Fraction(0)] * n
    out[0] = Fraction(1)
    for k in range(1, n):
        out[k] = sum(dp[j] * out[k - j] for j in range(1, k + 1)) / k
    return out


def bernoulli(m):
    b = [Fraction(0)] * (m + 1)
    for k in range(m + 1):
        b[k] = Fraction(1) if k == 0 else -sum(math.comb(k + 1, j) * b[j]
                                               for j in range(k)) / (k + 1)
    return b


def stirling_g(k_max):
    """g_0..g_k_max: Gamma*(a) = sum_k g_k a^-k (g_1 = 1/12, g_2 = 1/288, ...)."""
    n = k_max + 1
    b = bernoulli(2 * n + 2)
    logs = [Fraction(0)] * n
    for j in range(1, n):
        if 2 * j - 1 < n:
            logs[2 * j - 1] = b[2 * j] / (2 * j * (2 * j - 1))
    return exp0(logs, n)


def temme(k_sets: int, degree: int):
    """d[k][m], c_k(eta) = sum_m d[k][m] eta^m, k < k_sets, m < degree."""
    n = degree + 2 * k_sets + 4
    # eta = mu sqrt(f(mu)), f = sum_n 2 (-1)^n mu^n / (n + 2)
    f = [Fraction(2 * (-1) ** i, i + 2) for i in range(n)]
    g = sqrt1(f, n)                      # eta / mu
    # reversion: mu = eta h(eta); mu = eta / g(mu) -> fixed point on the coefficients
    h = [Fraction(1)] + [Fraction(0)] * (n - 1)
    for _ in range(n):
        mu = [Fraction(0)] + h[:n - 1]       # mu(eta) as a series
        # g(mu(eta)) by Horner
        comp = [Fraction(0)] * n
        for c in reversed(g):
            comp = mul(comp, mu, n)
            comp[0] += c
        h = inv(comp, n)
    # 1/mu = (1/eta) / h: r[m] is the coefficient of eta^(m-1)
    r = inv(h, n)
    gk = stirling_g(k_sets)
    d = [[r[m + 1] for m in range(n - 1)]]      # c_0 = 1/mu - 1/eta
    for k in range(1, k_sets):
        prev = d[-1]
        assert prev[1] + (-1) ** k * gk[k] * r[0] == 0, "the 1/eta terms must cancel"
        d.append([(m + 2) * prev[m + 2] + (-1) ** k * gk[k] * r[m + 1]
                  for m in range(len(prev) - 2)])
    return [row[:degree] for row in d]


def main() -> None:
    k_sets = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    degree = int(sys.argv[2]) if len(sys.argv) > 2 else 26
    d = temme(k_sets, degree)
    assert d[0][:3] == [Fraction(-1, 3), Fraction(1, 12), Fraction(-2, 135)]
    assert d[1][:2] == [Fraction(-1, 540), Fraction(-1, 288)]
    print("TEMME = (")
    for row in d:
        print("    (" + ", ".join(repr(float(v)) for v in row) + "),")
    print(")")


if __name__ == "__main__":
    main()
