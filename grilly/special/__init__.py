"""grilly.special: the special functions of torch.special and scipy.special, written once
against the array namespace (every device), differentiable (torch's gradients), float32 and
float64 within a few ulp of a high-precision reference (docs/special.md; tests/test_special.py).

    import grilly as gp
    gp.special.gammaln(x); gp.special.ndtri(p); gp.lgamma(x); x.digamma()
"""
from __future__ import annotations

from ..array import api as _gp
from ..array.array import Array
from ..nn import functional as _F
from .airy import airy_ai, airy_ai_prime
from .bessel import i0, i0e, i1, i1e
from .bessel_jy import j0, j1, spherical_j0, y0, y1
from .bessel_k import k0, k0e, k1, k1e
from .elementary import entr, logit, xlog1py, xlogy
from .gamma import _floating, digamma, gammaln, multigammaln, polygamma
from .incomplete_gamma import gammainc, gammaincc
from .normal import erfcx, erfinv, log_ndtr, ndtr, ndtri
from .orthopoly import (chebyshev_polynomial_t, chebyshev_polynomial_u, chebyshev_polynomial_v,
                        chebyshev_polynomial_w, eval_chebyt, eval_chebyu, eval_hermite,
                        eval_hermitenorm, eval_laguerre, eval_legendre, hermite_polynomial_h,
                        hermite_polynomial_he, laguerre_polynomial_l, legendre_polynomial_p,
                        shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u,
                        shifted_chebyshev_polynomial_v, shifted_chebyshev_polynomial_w)
from .zeta import zeta

__all__ = ["airy_ai", "airy_ai_prime", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
           "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w",
           "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "eval_chebyt", "eval_chebyu",
           "eval_hermite", "eval_hermitenorm", "eval_laguerre", "eval_legendre", "exp2", "expit",
           "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h",
           "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "j0", "j1", "k0", "k0e", "k1", "k1e",
           "laguerre_polynomial_l", "legendre_polynomial_p", "lgamma", "log1p", "log_ndtr",
           "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "mvlgamma", "ndtr", "ndtri",
           "polygamma", "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
           "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
           "spherical_bessel_j0", "spherical_j0", "xlog1py", "xlogy", "y0", "y1", "zeta"]

lgamma = gammaln      # torch's name
psi = digamma         # scipy's name
# torch.special's names of the modified Bessel functions
modified_bessel_i0, modified_bessel_i1 = i0, i1
modified_bessel_k0, modified_bessel_k1 = k0, k1
scaled_modified_bessel_k0, scaled_modified_bessel_k1 = k0e, k1e
bessel_j0, bessel_j1, bessel_y0, bessel_y1 = j0, j1, y0, y1
spherical_bessel_j0 = spherical_j0
exp2 = _gp.exp2
expm1 = _gp.expm1
log1p = _gp.log1p
sinc = _gp.sinc
round = _gp.round     # noqa: A001 (torch.special.round)


def erf(x: Array) -> Array:
    """The error function (torch.special.erf), within 2 ulp in float32."""
    x = _floating(x, "erf")
    return _F.erf(x)


def erfc(x: Array) -> Array:
    """1 - erf(x), relatively accurate for large x (torch.special.erfc)."""
    x = _floating(x, "erfc")
    return _F.erfc(x)


def expit(x: Array) -> Array:
    """The logistic sigmoid 1 / (1 + exp(-x)) (torch.special.expit, scipy.special.expit)."""
    return _F.sigmoid(_floating(x, "expit"))


def mvlgamma(x: Array, p: int) -> Array:
    """torch.mvlgamma / torch.special.multigammaln: the log multivariate gamma of dimension p."""
    return multigammaln(x, p)


def softmax(input: Array, dim: int, *, dtype=None) -> Array:
    """torch.special.softmax: exp(x) / sum(exp(x)) along ``dim``."""
    return _F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Array, dim: int, *, dtype=None) -> Array:
    """torch.special.log_softmax along ``dim``."""
    return _F.log_softmax(input, dim, dtype=dtype)


def logsumexp(input: Array, dim, keepdim: bool = False) -> Array:
    """torch.special.logsumexp: log(sum(exp(x))) along ``dim``, without overflow."""
    if not isinstance(input, Array):
        raise TypeError(f"logsumexp: expected a grilly Array, got {type(input).__name__}")
    return input.logsumexp(dim, keepdim)
