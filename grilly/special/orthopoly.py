"""The classical orthogonal polynomials of torch.special (chebyshev_polynomial_t/u/v/w, their
shifted forms, hermite_polynomial_h/he, laguerre_polynomial_l, legendre_polynomial_p) and
scipy.special's eval_* names, with their derivatives in x (torch has none).

Semantics as torch's: n is an Array or a number broadcast with x, truncated toward 0 (as
torch's cast to int64); n < 0 (also a NaN or infinite n) gives 0, n = 0 gives 1 (a NaN x too).
Where torch's recurrence makes inf - inf (|x| = inf, or a value past the dtype's range) these
give the limit: +-inf with the sign of the polynomial there. torch's Hermite returns NaN
above n = 128 (float32) / 512 (float64); these evaluate every n.

Method: the three-term recurrence in the array's dtype, run to the largest n with each element
taking its own degree's value (a Python loop of array operations; an Array n is read on the
host for its maximum). Chebyshev and Legendre use Reinsch's form where |t| >= 1/2 (t = x, or
2x - 1 shifted): with e = |t| - 1 formed exactly (Sterbenz; for the shifted ones 2(x - 1) or
-2x, exact with no subtraction of 1), y_{k+1} = y_k + d_{k+1}, d_{k+1} = 2 e y_k + d_k (for
Legendre ((2k+1) e y_k + k d_k) / (k+1)), and P(-a) = +-P(a) (V_n(-a) = (-1)^n W_n(a)): the
plain recurrence's error grows like n^2 next to +-1 (3000 ulp at n = 100), Reinsch's like n/4.
The state is rescaled by a power of two when it grows past 2^500 (float64) or 2^60 (float32),
so an overflow is +-inf with the right sign, never NaN.
Derivatives: T_n' = n U_{n-1}, H_n' = 2n H_{n-1}, He_n' = n He_{n-1}; U, V, W, P and L by the
derivative of their recurrence (its forward mode, run alongside); d/dx of a shifted one is
2 P'(2x - 1).
"""
from __future__ import annotations

import math

from ..array import api as gp
from ..array.array import Array
from ..autograd import Function
from .gamma import _compute, _floating

__all__ = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "eval_chebyt", "eval_chebyu", "eval_hermite",
           "eval_hermitenorm", "eval_laguerre", "eval_legendre", "hermite_polynomial_h",
           "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
           "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w"]

# per dtype: rescale the recurrence's state by 2^-S once it exceeds 2^S
_SCALE = {"float64": 500, "float32": 60}
_CHEB = "TUVW"


def _sbits(x) -> int:
    return _SCALE["float64" if x.dtype == gp.float64 else "float32"]


def _prepare(x, n, op: str):
    """(x, n as x's dtype and shape, truncated with NaN/inf as -1, the largest n as an int)."""
    if isinstance(n, bool) or not isinstance(n, (Array, int, float)):
        raise TypeError(f"{op}: n must be a grilly Array or a real number, got "
                        f"{type(n).__name__}")
    if not isinstance(x, Array):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise TypeError(f"{op}: input must be a grilly Array or a real number, got "
                            f"{type(x).__name__}")
        if not isinstance(n, Array):
            raise TypeError(f"{op}: expected at least one grilly Array (input or n)")
        like = _floating(n, op)
        x = gp.full_like(like, float(x))
    x = _floating(x, op)
    if isinstance(n, Array):
        if n.dtype.kind == "c":
            raise TypeError(f"{op}: n must be real, got {n.dtype}")
        if n.dtype.kind == "f":   # (a float n of a wider dtype widens the result, as torch)
            x = gp.astype(x, gp.result_type(x, n), copy=False)
        nf = gp.astype(n, x.dtype)
        nf = gp.where(gp.isfinite(nf), gp.trunc(nf), -1.0)
        x, nf = gp.broadcast_arrays(x, nf)
        # the loop's length: a host read (under grilly.jit pass n as a Python int)
        nmax = int(float(gp.max(nf))) if nf.size else -1
    else:
        nv = float(n)
        nmax = int(nv) if math.isfinite(nv) else -1
        nf = gp.full_like(x, float(max(nmax, -1)))
    return x, nf, nmax


def _rescale(state, c, bits: int):
    """Divide the state by 2^bits where a member has passed 2^bits (counted in c)."""
    top = gp.abs(state[0])
    for v in state[1:]:
        top = gp.maximum(top, gp.abs(v))
    big = top > float(2.0 ** bits)
    s = gp.where(big, gp.full_like(top, float(2.0 ** -bits)), 1.0)
    return [v * s for v in state], c + gp.astype(big, c.dtype)


def _unscale(v, c, bits: int):
    """v 2^(bits c), in two factors (each finite: 2^(2 bits) is below the dtype's top)."""
    c1 = gp.minimum(c, 2.0)
    out = v * gp.exp2(c1 * float(bits)) * gp.exp2((c - c1) * float(bits))
    return gp.where(v == 0.0, 0.0, out)


class _Runner:
    """Runs a recurrence to nmax; each element keeps its own degree's value."""

    def __init__(self, nf, nmax: int, bits: int):
        self.nf, self.nmax, self.bits = nf, nmax, bits

    def run(self, v0, v1, step, pick=lambda s: s[-1]):
        """v0, v1: the values of degree 0 and 1 (state [p, q] or Reinsch's [y, d]);
        step(k, state) -> the state of degree k + 1; pick(state) -> the value."""
        nf = self.nf
        out = gp.where(nf == 0.0, v0, 0.0)
        if self.nmax < 1:
            return out
        out = gp.where(nf == 1.0, v1[1] if pick is None else pick(v1), out)
        state = list(v1)
        c = gp.zeros_like(nf)
        cc = gp.zeros_like(nf)
        for k in range(1, self.nmax):
            state = step(k, state)
            state, c = _rescale(state, c, self.bits)
            hit = nf == float(k + 1)
            out = gp.where(hit, pick(state), out)
            cc = gp.where(hit, c, cc)
        return _unscale(out, cc, self.bits)


def _odd(nf):
    return gp.remainder(nf, 2.0) == 1.0


def _signed_inf(neg, like):
    """-inf where ``neg``, else +inf, in like's dtype (a where of two numbers is float64)."""
    return gp.where(neg, gp.full_like(like, -math.inf), math.inf)


def _chebyshev_like(kind: str, t, e, nf, nmax: int, bits: int):
    """T, U, V, W (kind) or Legendre P ("P") at t, with e = |t| - 1 exact."""
    run = _Runner(nf, nmax, bits)
    one = gp.ones_like(t)
    # plain: [p, q] -> [q, next]
    first = {"T": t, "U": t + t, "V": t + t - 1.0, "W": t + t + 1.0, "P": t}[kind]
    if kind == "P":
        def plain_step(k, s):
            return [s[1], (float(2 * k + 1) * t * s[1] - float(k) * s[0]) / float(k + 1)]
    else:
        def plain_step(k, s):
            return [s[1], (t + t) * s[1] - s[0]]
    plain = run.run(one, [one, first], plain_step, pick=lambda s: s[1])
    # Reinsch's on a = |t|: [y, d], y_1 and d_1 = y_1 - 1 written with e (exact)
    neg = t < 0.0
    if kind == "T" or kind == "P":
        y1, d1 = 1.0 + e, e
    elif kind == "U":
        y1, d1 = 2.0 + 2.0 * e, 1.0 + 2.0 * e
    else:   # V(-a) = (-1)^n W(a) and W(-a) = (-1)^n V(a)
        v_like = neg if kind == "W" else gp.logical_not(neg)
        y1 = gp.where(v_like, 1.0 + 2.0 * e, 3.0 + 2.0 * e)
        d1 = gp.where(v_like, 2.0 * e, 2.0 + 2.0 * e)
    if kind == "P":
        def r_step(k, s):
            d = (float(2 * k + 1) * e * s[0] + float(k) * s[1]) / float(k + 1)
            return [s[0] + d, d]
    else:
        def r_step(k, s):
            d = (e + e) * s[0] + s[1]
            return [s[0] + d, d]
    y = run.run(one, [gp.zeros_like(t) + y1, gp.zeros_like(t) + d1], r_step,
                pick=lambda s: s[0])
    y = gp.where(neg & _odd(nf), -y, y)
    return gp.where(gp.abs(t) < 0.5, plain, y)


def _args(x, shifted: bool):
    """(t, e = |t| - 1 exact) for t = x, or t = 2x - 1 (e = 2(x - 1) or -2x)."""
    if shifted:
        t = 2.0 * x - 1.0
        e = gp.where(x >= 0.5, 2.0 * (x - 1.0), -2.0 * x)
    else:
        t = x
        e = gp.abs(x) - 1.0
    return t, e


def _eval(x, nf, kind: str, nmax: int):
    bits = _sbits(x)
    if kind[0] == "s" or kind in _CHEB or kind == "P":
        shifted = kind[0] == "s"
        base = kind[1:] if shifted else kind
        t, e = _args(x, shifted)
        out = _chebyshev_like(base, t, e, nf, nmax, bits)
        # the limit at t = +-inf: the leading coefficient is positive
        lim = _signed_inf((t < 0.0) & _odd(nf), t)
        return gp.where(gp.isinf(t) & (nf >= 1.0), lim, out)
    run = _Runner(nf, nmax, bits)
    one = gp.ones_like(x)
    if kind == "H":
        out = run.run(one, [one, x + x], lambda k, s: [s[1], (x + x) * s[1] - float(2 * k) * s[0]],
                      pick=lambda s: s[1])
        lim = _signed_inf((x < 0.0) & _odd(nf), x)
    elif kind == "He":
        out = run.run(one, [one, x], lambda k, s: [s[1], x * s[1] - float(k) * s[0]],
                      pick=lambda s: s[1])
        lim = _signed_inf((x < 0.0) & _odd(nf), x)
    else:   # Laguerre: leading coefficient (-1)^n / n!
        out = run.run(one, [one, 1.0 - x],
                      lambda k, s: [s[1], ((float(2 * k + 1) - x) * s[1] - float(k) * s[0])
                                    / float(k + 1)], pick=lambda s: s[1])
        lim = _signed_inf((x > 0.0) & _odd(nf), x)
    return gp.where(gp.isinf(x) & (nf >= 1.0), lim, out)


def _derivative(x, nf, kind: str, nmax: int):
    """d/dx of U, V, W, P, L (and the shifted U, V, W): the recurrence's forward mode."""
    shifted = kind[0] == "s"
    base = kind[1:] if shifted else kind
    t = 2.0 * x - 1.0 if shifted else x
    run = _Runner(nf, nmax, _sbits(x))
    zero, one = gp.zeros_like(t), gp.ones_like(t)
    # state [p, q, dp, dq]; the value picked is dq
    if base in _CHEB:
        q1 = {"U": t + t, "V": t + t - 1.0, "W": t + t + 1.0}[base]

        def step(k, s):
            return [s[1], (t + t) * s[1] - s[0], s[3], 2.0 * s[1] + (t + t) * s[3] - s[2]]
        v1 = [one, q1, zero, zero + 2.0]
    elif base == "P":
        def step(k, s):
            a, b = float(2 * k + 1), float(k)
            return [s[1], (a * t * s[1] - b * s[0]) / float(k + 1), s[3],
                    (a * (s[1] + t * s[3]) - b * s[2]) / float(k + 1)]
        v1 = [one, t, zero, one]
    else:   # L
        def step(k, s):
            a, b = float(2 * k + 1), float(k)
            return [s[1], ((a - t) * s[1] - b * s[0]) / float(k + 1), s[3],
                    ((a - t) * s[3] - s[1] - b * s[2]) / float(k + 1)]
        v1 = [one, 1.0 - t, zero, -one]
    d = run.run(zero, v1, step, pick=lambda s: s[3])
    return 2.0 * d if shifted else d


_PUBLIC = {}


class _Poly(Function):
    """One orthogonal polynomial of x and the degree n; d/dx written out, none for n."""

    @staticmethod
    def forward(ctx, x, nf, kind: str, nmax: int):
        ctx.save_for_backward(x, nf)
        ctx.kind, ctx.nmax = kind, nmax
        return _compute(_eval, x, nf, kind, nmax)

    @staticmethod
    def backward(ctx, g):
        x, nf = ctx.saved_tensors
        kind, nmax = ctx.kind, ctx.nmax
        if kind in ("T", "sT"):
            d = nf * _Poly.apply(x, nf - 1.0, "U" if kind == "T" else "sU", nmax)
            d = 2.0 * d if kind == "sT" else d
        elif kind == "H":
            d = 2.0 * nf * _Poly.apply(x, nf - 1.0, "H", nmax)
        elif kind == "He":
            d = nf * _Poly.apply(x, nf - 1.0, "He", nmax)
        else:
            d = _compute(_derivative, x, nf, kind, nmax)
        return g * d, None, None, None


def _poly(x, n, kind: str, op: str) -> Array:
    x, nf, nmax = _prepare(x, n, op)
    return _Poly.apply(x, nf, kind, nmax)


def chebyshev_polynomial_t(input, n) -> Array:
    """The Chebyshev polynomial of the first kind T_n(x) (torch.special)."""
    return _poly(input, n, "T", "chebyshev_polynomial_t")


def chebyshev_polynomial_u(input, n) -> Array:
    """The Chebyshev polynomial of the second kind U_n(x) (torch.special)."""
    return _poly(input, n, "U", "chebyshev_polynomial_u")


def chebyshev_polynomial_v(input, n) -> Array:
    """The Chebyshev polynomial of the third kind V_n(x) (torch.special)."""
    return _poly(input, n, "V", "chebyshev_polynomial_v")


def chebyshev_polynomial_w(input, n) -> Array:
    """The Chebyshev polynomial of the fourth kind W_n(x) (torch.special)."""
    return _poly(input, n, "W", "chebyshev_polynomial_w")


def shifted_chebyshev_polynomial_t(input, n) -> Array:
    """T_n(2x - 1), with 2x - 1 never rounded where it matters (torch.special)."""
    return _poly(input, n, "sT", "shifted_chebyshev_polynomial_t")


def shifted_chebyshev_polynomial_u(input, n) -> Array:
    """U_n(2x - 1) (torch.special.shifted_chebyshev_polynomial_u)."""
    return _poly(input, n, "sU", "shifted_chebyshev_polynomial_u")


def shifted_chebyshev_polynomial_v(input, n) -> Array:
    """V_n(2x - 1) (torch.special.shifted_chebyshev_polynomial_v)."""
    return _poly(input, n, "sV", "shifted_chebyshev_polynomial_v")


def shifted_chebyshev_polynomial_w(input, n) -> Array:
    """W_n(2x - 1) (torch.special.shifted_chebyshev_polynomial_w)."""
    return _poly(input, n, "sW", "shifted_chebyshev_polynomial_w")


def hermite_polynomial_h(input, n) -> Array:
    """The physicists' Hermite polynomial H_n(x) (torch.special)."""
    return _poly(input, n, "H", "hermite_polynomial_h")


def hermite_polynomial_he(input, n) -> Array:
    """The probabilists' Hermite polynomial He_n(x) (torch.special)."""
    return _poly(input, n, "He", "hermite_polynomial_he")


def laguerre_polynomial_l(input, n) -> Array:
    """The Laguerre polynomial L_n(x) (torch.special)."""
    return _poly(input, n, "L", "laguerre_polynomial_l")


def legendre_polynomial_p(input, n) -> Array:
    """The Legendre polynomial P_n(x) (torch.special)."""
    return _poly(input, n, "P", "legendre_polynomial_p")


# scipy.special's names take the degree first
def eval_chebyt(n, x) -> Array:
    """scipy.special.eval_chebyt(n, x) = T_n(x) for integer n (n < 0 gives 0, as torch)."""
    return _poly(x, n, "T", "eval_chebyt")


def eval_chebyu(n, x) -> Array:
    """scipy.special.eval_chebyu(n, x) = U_n(x) for integer n (n < 0 gives 0, as torch)."""
    return _poly(x, n, "U", "eval_chebyu")


def eval_hermite(n, x) -> Array:
    """scipy.special.eval_hermite(n, x) = H_n(x)."""
    return _poly(x, n, "H", "eval_hermite")


def eval_hermitenorm(n, x) -> Array:
    """scipy.special.eval_hermitenorm(n, x) = He_n(x)."""
    return _poly(x, n, "He", "eval_hermitenorm")


def eval_laguerre(n, x) -> Array:
    """scipy.special.eval_laguerre(n, x) = L_n(x) for integer n (n < 0 gives 0, as torch)."""
    return _poly(x, n, "L", "eval_laguerre")


def eval_legendre(n, x) -> Array:
    """scipy.special.eval_legendre(n, x) = P_n(x) for integer n (n < 0 gives 0, as torch)."""
    return _poly(x, n, "P", "eval_legendre")
