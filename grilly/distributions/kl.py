"""kl_divergence(p, q) and register_kl, as torch.distributions.kl."""
from __future__ import annotations

import math

from ..array import api as gp
from ..nn import functional as F
from ._special import digamma, lgamma, xlogy
from .continuous_bernoulli import ContinuousBernoulli
from .categorical import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical
from .distribution import _arrays
from .gamma import Beta, Dirichlet, Gamma, Poisson
from .independent import Independent
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal, batch_mahalanobis
from .normal import Cauchy, Exponential, Gumbel, HalfNormal, Laplace, Normal
from .pareto import Pareto
from .transformed_distribution import LogNormal, TransformedDistribution
from .uniform import Uniform
from .utils import sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_EULER = 0.57721566490153286061
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as the KL divergence of two distribution types."""
    if not isinstance(type_p, type) or not isinstance(type_q, type):
        raise TypeError("register_kl: expected two Distribution subclasses, got "
                        f"{type_p!r} and {type_q!r}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn

    return decorator


def _dispatch_kl(type_p, type_q):
    """The registered function of the most specific pair of base classes (as torch)."""
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return None

    def rank(pair):
        return (type_p.__mro__.index(pair[0]), type_q.__mro__.index(pair[1]))

    return _KL_REGISTRY[min(matches, key=rank)]


def kl_divergence(p, q):
    """KL(p || q), per batch element."""
    key = (type(p), type(q))
    fn = _KL_MEMOIZE.get(key)
    if fn is None:
        fn = _KL_MEMOIZE[key] = _dispatch_kl(*key)
    if fn is None:
        raise NotImplementedError(f"kl_divergence: no KL(p || q) is implemented for p of type "
                                  f"{type(p).__name__} and q of type {type(q).__name__}")
    # one built from numbers alone (a Normal(0., 1.) prior) joins the other's device
    pa, qa = next(_arrays(p), None), next(_arrays(q), None)
    if pa is not None and qa is not None and pa.device != qa.device:
        q, p = q._placed_like(pa), p._placed_like(qa)
    return fn(p, q)


def _inf_where(cond, x):
    return gp.where(cond, math.inf, x)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    r = p.scale / q.scale
    var_ratio = r * r
    t = (p.loc - q.loc) / q.scale
    return 0.5 * (var_ratio + t * t - 1.0 - gp.log(var_ratio))


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    # both are |N(0, scale^2)|: the folding changes neither density ratio nor mass
    r = p.scale / q.scale
    var_ratio = r * r
    return 0.5 * (var_ratio - 1.0 - gp.log(var_ratio))


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    # closed form of Chyzak and Nielsen (2019)
    s, d = p.scale + q.scale, p.loc - q.loc
    return gp.log(s * s + d * d) - gp.log(4.0 * p.scale * q.scale)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t3 = gp.exp(ct2 + lgamma(1.0 + ct1) - ct3)
    return -gp.log(ct1) - ct2 + ct3 + ct1 * _EULER + t3 - (1.0 + _EULER)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - gp.log1p(-q.probs) / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    np_, nq = p._count(), q._count()
    if np_ is not None and nq is not None and np_ < nq:
        raise NotImplementedError("kl_divergence(Binomial, Binomial): q.total_count > "
                                  "p.total_count is not implemented (as torch)")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + gp.log1p(-p.probs)
                          - gp.log1p(-q.probs))
    # p has mass on counts q cannot reach where its total_count is larger: inf
    return _inf_where(p.total_count > q.total_count, kl)


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    pp, qp = p.probs, q.probs
    t1 = pp * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = gp.where(pp == 0, 0.0, _inf_where(qp == 0, t1))
    t2 = (1.0 - pp) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = gp.where(pp == 1, 0.0, _inf_where(qp == 1, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    pp, qp = gp.broadcast_arrays(p.probs, q.probs)
    t = pp * (p.logits - q.logits)
    t = gp.where(pp == 0, 0.0, _inf_where(qp == 0, t))
    return gp.sum(t, axis=-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = gp.log((q.high - q.low) / (p.high - p.low))
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    r = q.rate / p.rate
    return r - 1.0 - gp.log(r)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    r = p.scale / q.scale
    d = gp.abs(p.loc - q.loc)
    return -gp.log(r) + d / q.scale + r * gp.exp(-d / p.scale) - 1.0


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    pa, pb, qa, qb = p.concentration, p.rate, q.concentration, q.rate
    return (qa * gp.log(pb / qb) + lgamma(qa) - lgamma(pa) + (pa - qa) * digamma(pa)
            + (qb - pb) * (pa / pb))


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    p1, p0, q1, q0 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    sp, sq = p1 + p0, q1 + q0
    t1 = lgamma(q1) + lgamma(q0) + lgamma(sp)
    t2 = lgamma(p1) + lgamma(p0) + lgamma(sq)
    return t1 - t2 + (p1 - q1) * digamma(p1) + (p0 - q0) * digamma(p0) + (sq - sp) * digamma(sp)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    pc, qc = p.concentration, q.concentration
    sp, sq = gp.sum(pc, axis=-1), gp.sum(qc, axis=-1)
    t1 = lgamma(sp) - lgamma(sq)
    t2 = gp.sum(lgamma(pc) - lgamma(qc), axis=-1)
    t4 = digamma(pc) - digamma(sp)[..., None]
    return t1 - t2 + gp.sum((pc - qc) * t4, axis=-1)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (gp.log(p.rate) - gp.log(q.rate)) - (p.rate - q.rate)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("kl_divergence(MultivariateNormal, MultivariateNormal): the two "
                         f"distributions have different event shapes, {p.event_shape} and "
                         f"{q.event_shape}")
    n = p.event_shape[0]
    lq, lp = q._unbroadcasted_scale_tril, p._unbroadcasted_scale_tril
    batch = gp.broadcast_shapes(tuple(lq.shape[:-2]), tuple(lp.shape[:-2]))
    x = gp.linalg.solve(gp.broadcast_to(lq, batch + (n, n)), gp.broadcast_to(lp, batch + (n, n)))
    term2 = gp.sum(x * x, axis=(-2, -1))
    term3 = batch_mahalanobis(lq, q.loc - p.loc)
    return q._half_log_det() - p._half_log_det() + 0.5 * (term2 + term3 - n)


# the low-rank ones through their full covariance's Cholesky factor (the same values as torch's
# capacitance forms)
for _p, _q in ((LowRankMultivariateNormal, LowRankMultivariateNormal),
               (LowRankMultivariateNormal, MultivariateNormal),
               (MultivariateNormal, LowRankMultivariateNormal)):
    register_kl(_p, _q)(_kl_mvn_mvn)
del _p, _q


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    kl = q.alpha * gp.log(scale_ratio) - gp.log(alpha_ratio) + alpha_ratio - 1.0
    # p puts mass below q's minimum: inf
    return _inf_where(p.scale < q.scale, kl)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    return (p.mean * (p.logits - q.logits) + p._log_norm() + gp.log1p(-p.probs)
            - q._log_norm() - gp.log1p(-q.probs))


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence(Independent, Independent): the two "
                                  "distributions reinterpret different numbers of batch axes")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    # KL is invariant under one bijection applied to both
    if p.transforms != q.transforms:
        raise NotImplementedError("kl_divergence(TransformedDistribution, "
                                  "TransformedDistribution): the transforms differ (Array "
                                  "parameters of AffineTransform are compared by identity)")
    if p.event_shape != q.event_shape:
        raise NotImplementedError("kl_divergence(TransformedDistribution, "
                                  "TransformedDistribution): the event shapes differ")
    return kl_divergence(p.base_dist, q.base_dist)


# ---- pairs of different families ------------------------------------------------------------
# KL(p || q) = -H(p) - E_p[log q(x)]: each pair below writes the cross-entropy term from p's
# moments (mean, variance, E[log x], E[log(1 - x)]). Where p has mass outside q's support the
# divergence is inf, elementwise where the support depends on the parameters (as torch).

def _infinite(p, q):
    """inf for every batch element of the pair (p's support is never inside q's)."""
    x, y = next(_arrays(p)), next(_arrays(q))
    shape = gp.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    return gp.full(shape, math.inf, dtype=gp.result_type(x, y), device=x.device)


for _p, _q in ((Beta, Pareto), (ContinuousBernoulli, Pareto), (Exponential, Pareto),
               (Exponential, ContinuousBernoulli), (Gamma, Pareto), (Gamma, ContinuousBernoulli),
               (Gumbel, Pareto), (Gumbel, ContinuousBernoulli), (Laplace, Pareto),
               (Laplace, ContinuousBernoulli), (Normal, Pareto), (Normal, ContinuousBernoulli),
               (Pareto, Uniform), (Pareto, ContinuousBernoulli), (Pareto, Beta)):
    register_kl(_p, _q)(_infinite)
del _p, _q

for _p, _q in ((Poisson, Bernoulli), (Exponential, Beta), (Exponential, Uniform),
               (Gamma, Beta), (Gamma, Uniform), (Laplace, Beta), (Laplace, Exponential),
               (Laplace, Gamma), (Laplace, Uniform), (Normal, Beta), (Normal, Exponential),
               (Normal, Gamma), (Normal, Uniform)):
    register_kl(_p, _q)(_infinite)
del _p, _q


def _to_normal(p, q):
    """KL(p || Normal) from p's entropy, mean and variance."""
    d = p.mean - q.loc
    return (gp.log(q.scale) + _HALF_LOG_2PI - p.entropy()
            + (p.variance + d * d) / (2.0 * q.scale * q.scale))


def _to_exponential(p, q):
    """KL(p || Exponential) for p on [0, inf)."""
    return q.rate * p.mean - gp.log(q.rate) - p.entropy()


def _to_gamma(q, mean, mean_log, entropy):
    """KL(p || Gamma) for p on [0, inf) of this mean, E_p[log x] and entropy."""
    a, b = q.concentration, q.rate
    return lgamma(a) - a * gp.log(b) - (a - 1.0) * mean_log + b * mean - entropy


# p on [0, inf) against Exponential, any p against Normal: from p's moments and entropy alone
for _p in (Beta, ContinuousBernoulli, Gamma):
    register_kl(_p, Exponential)(_to_exponential)
for _p in (Beta, ContinuousBernoulli, Exponential, Gamma, Laplace, Uniform):
    register_kl(_p, Normal)(_to_normal)
del _p


def _beta_mean_log(p):
    return digamma(p.concentration1) - digamma(p.concentration1 + p.concentration0)


def _uniform_mean_log(low, high):
    """E[log x] under Uniform(low, high) with 0 <= low: (h log h - l log l) / (h - l) - 1."""
    return (xlogy(high, high) - xlogy(low, low)) / (high - low) - 1.0


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    # q(0) = exp(-rate), q(1) = rate exp(-rate); xlogy: p never 1 puts no mass on log q(1)
    return q.rate - xlogy(p.probs, q.rate) - p.entropy()


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    return _to_gamma(q, p.mean, _beta_mean_log(p), p.entropy())


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    outside = (q.low > 0.0) | (q.high < 1.0)   # [0, 1] not inside [q.low, q.high]
    return _inf_where(outside, gp.log(q.high - q.low) - p.entropy())


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    return _to_gamma(q, p.mean, -_EULER - gp.log(p.rate), p.entropy())


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    # E|x - q.loc| under N(loc, scale^2): the folded normal's mean
    d = p.loc - q.loc
    z = d / p.scale
    mean_abs = (p.scale * math.sqrt(2.0 / math.pi) * gp.exp(-0.5 * z * z)
                + d * F.erf(z * math.sqrt(0.5)))
    return gp.log(2.0 * q.scale) + mean_abs / q.scale - p.entropy()


def _inside(p, outside, low, high):
    """p's bounds, replaced by (low, high) where ``outside``: the masked elements' KL is inf
    anyway, and in-range stand-ins keep log's NaN out of the gradient."""
    return gp.where(outside, low, p.low), gp.where(outside, high, p.high)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    return _inf_where(p.low < 0.0, _to_exponential(p, q))


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    outside = p.low < 0.0
    low, high = _inside(p, outside, 0.0, 1.0)
    kl = _to_gamma(q, 0.5 * (low + high), _uniform_mean_log(low, high), gp.log(high - low))
    return _inf_where(outside, kl)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    outside = (p.low < 0.0) | (p.high > 1.0)
    low, high = _inside(p, outside, 0.0, 1.0)
    a, b = q.concentration1, q.concentration0
    # E[log(1 - x)]: 1 - x is uniform on (1 - high, 1 - low)
    kl = (lgamma(a) + lgamma(b) - lgamma(a + b) - gp.log(high - low)
          - (a - 1.0) * _uniform_mean_log(low, high)
          - (b - 1.0) * _uniform_mean_log(1.0 - high, 1.0 - low))
    return _inf_where(outside, kl)


# ---- ContinuousBernoulli and Pareto against the other families -----------------------------
def _to_continuous_bernoulli(p, q):
    """KL(p || ContinuousBernoulli) for p on [0, 1]: log q(x) = x logits + log(1 - probs) +
    log C, linear in x."""
    return -p.entropy() - p.mean * q.logits - gp.log1p(-q.probs) - q._log_norm()


register_kl(Beta, ContinuousBernoulli)(_to_continuous_bernoulli)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p, q):
    # inf where p leaves [0, 1] (torch: also where p.low is 0 or p.high is 1, a finite KL)
    outside = (p.low < 0.0) | (p.high > 1.0)
    low, high = _inside(p, outside, 0.0, 1.0)
    kl = (-gp.log(high - low) - 0.5 * (low + high) * q.logits - gp.log1p(-q.probs)
          - q._log_norm())
    return _inf_where(outside, kl)


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):
    # inf where [0, 1] is not inside [q.low, q.high] (torch: also where q.low is 0 or q.high
    # is 1, a finite KL)
    outside = (q.low > 0.0) | (q.high < 1.0)
    return _inf_where(outside, gp.log(q.high - q.low) - p.entropy())


def _pareto_finite(p, alpha_min: float):
    """alpha where it exceeds alpha_min (where p's moment exists), a stand-in elsewhere (the KL
    is inf there; the stand-in keeps the gradient finite)."""
    ok = p.alpha > alpha_min
    return ok, gp.where(ok, p.alpha, alpha_min + 1.0)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    ok, a = _pareto_finite(p, 1.0)
    sr = p.scale * q.rate
    return _inf_where(~ok, gp.log(a / sr) - 1.0 / a + a * sr / (a - 1.0) - 1.0)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    ok, a = _pareto_finite(p, 1.0)
    mean_log = gp.log(p.scale) + 1.0 / a              # E[log x]
    c, r = q.concentration, q.rate
    kl = (gp.log(a) - mean_log + lgamma(c) - c * gp.log(r) + (1.0 - c) * mean_log
          + r * a * p.scale / (a - 1.0) - 1.0)
    return _inf_where(~ok, kl)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    ok, a = _pareto_finite(p, 2.0)
    s = p.scale / (a - 1.0)
    mean = a * s
    var = a * s * s / (a - 2.0)
    d = mean - q.loc
    kl = (gp.log(math.sqrt(2.0 * math.pi) * q.scale * a / p.scale) - 1.0 / a
          + (var + d * d) / (2.0 * q.scale * q.scale) - 1.0)
    return _inf_where(~ok, kl)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    outside = p.low < q.scale
    low, high = _inside(p, outside, q.scale, q.scale + 1.0)
    width = high - low
    mean_log = _uniform_mean_log(low, high)
    kl = (q.alpha + 1.0) * mean_log - gp.log(q.alpha) - q.alpha * gp.log(q.scale) \
        - gp.log(width)
    return _inf_where(outside, kl)
