"""grilly.distributions against torch.distributions (a test-only oracle) on every device: values
of log_prob, entropy, moments, cdf/icdf and kl_divergence, their gradients with respect to the
parameters, rsample's pathwise gradients, sample shapes and seeded sample moments (5 sigma), and
validation errors."""
import math

import numpy as np
import pytest

import grilly as gp
from grilly import distributions as gd
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
D = torch.distributions
RTOL, ATOL = 2e-4, 2e-5

_RS = np.random.RandomState(0)
PV = _RS.uniform(0.2, 0.8, (3,)).astype(np.float32)              # probabilities
POS = _RS.uniform(0.5, 2.5, (3,)).astype(np.float32)             # positive parameters
POS2 = _RS.uniform(0.6, 3.0, (3,)).astype(np.float32)
REAL = _RS.randn(3).astype(np.float32)
SIMPLEX = (lambda a: a / a.sum(-1, keepdims=True))(_RS.uniform(0.2, 1.0, (2, 4))).astype(np.float32)
LOGITS = _RS.randn(2, 4).astype(np.float32)
U01 = np.array([0.1, 0.5, 0.83], np.float32)


def _np(t):
    return t.detach().numpy()


def _close(a, e, rtol=RTOL, atol=ATOL):
    assert_close(a, _np(e) if hasattr(e, "detach") else np.asarray(e), rtol=rtol, atol=atol)


def _pair(params, device):
    """torch and grilly leaves of the same float32 values (requiring grad)."""
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    gpar = {}
    for k, v in params.items():
        a = gp.asarray(v, device=device)
        a.requires_grad_()
        gpar[k] = a
    return tp, gpar


# name -> (params, a value in the support, which of cdf/icdf, tolerance scale)
CASES = {
    "Normal": ({"loc": REAL, "scale": POS}, REAL * 1.5 + 0.3, ("cdf", "icdf"), 1),
    "Laplace": ({"loc": REAL, "scale": POS}, REAL * 1.5 + 0.3, ("cdf", "icdf"), 1),
    "Exponential": ({"rate": POS}, POS2, ("cdf", "icdf"), 1),
    "Uniform": ({"low": REAL - 1.0, "high": REAL + POS}, REAL - 0.2, ("cdf", "icdf"), 1),
    "Bernoulli": ({"probs": PV}, np.array([0.0, 1.0, 1.0], np.float32), (), 1),
    "BernoulliLogits": ({"logits": REAL}, np.array([1.0, 0.0, 1.0], np.float32), (), 1),
    "Categorical": ({"probs": SIMPLEX}, np.array([3, 0], np.int64), (), 1),
    "CategoricalLogits": ({"logits": LOGITS}, np.array([[1, 2], [0, 3]], np.int64), (), 1),
    "OneHotCategorical": ({"probs": SIMPLEX}, np.eye(4, dtype=np.float32)[[2, 1]], (), 1),
    "Gamma": ({"concentration": POS, "rate": POS2}, POS2 * 0.7, (), 10),
    "Beta": ({"concentration1": POS, "concentration0": POS2}, PV, (), 10),
    "Dirichlet": ({"concentration": POS2[None, :] + SIMPLEX[:, :3]},
                  (lambda a: a / a.sum(-1, keepdims=True))(POS[None, :] + SIMPLEX[:, 1:]), (), 10),
    "Poisson": ({"rate": POS}, np.array([0.0, 2.0, 5.0], np.float32), (), 10),
    "LogNormal": ({"loc": REAL, "scale": POS}, POS2, ("cdf", "icdf"), 1),
}


def _ctor(name):
    base = name.replace("Logits", "")
    return getattr(D, base), getattr(gd, base)


def _build(name, device):
    params, value, extra, tol = CASES[name]
    tp, gpar = _pair(params, device)
    tc, gc = _ctor(name)
    return tc(**tp), gc(**gpar), tp, gpar, value, extra, tol


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_parameter_gradients_match_torch(device, name):
    td, g, tp, gpar, value, extra, tol = _build(name, device)
    assert g.batch_shape == tuple(td.batch_shape) and g.event_shape == tuple(td.event_shape)
    rtol, atol = RTOL * tol, ATOL * tol
    tv = torch.tensor(value)
    gv = gp.asarray(value, device=device)
    t_lp, g_lp = td.log_prob(tv), g.log_prob(gv)
    _close(g_lp, t_lp, rtol, atol)
    t_total, g_total = t_lp.sum(), gp.sum(g_lp)
    if name != "Poisson":   # torch's Poisson has no entropy
        t_h, g_h = td.entropy(), g.entropy()
        _close(g_h, t_h, rtol, atol)
        t_total, g_total = t_total + 0.7 * t_h.sum(), g_total + 0.7 * gp.sum(g_h)
    for prop in ("mean", "variance", "stddev", "mode"):
        _close(getattr(g, prop), getattr(td, prop).to(getattr(td, prop).dtype), rtol, atol)
    for fn in extra:
        arg = U01 if fn == "icdf" else value
        t_c, g_c = getattr(td, fn)(torch.tensor(arg)), getattr(g, fn)(gp.asarray(arg, device=device))
        _close(g_c, t_c, rtol, atol)
        t_total, g_total = t_total + t_c.sum(), g_total + gp.sum(g_c)
    t_total.backward()
    g_total.backward()
    for k in tp:
        _close(gpar[k].grad, tp[k].grad, rtol * 5, atol * 5)


def test_repr_and_expand(device):
    assert repr(gd.Normal(0.0, 1.0)) == repr(D.Normal(0.0, 1.0))
    loc = gp.zeros((2,), device=device)
    assert repr(gd.Normal(loc, 1.0)) == "Normal(loc: (2,), scale: (2,))"
    assert repr(gd.Independent(gd.Normal(loc, 1.0), 1)) == \
        "Independent(Normal(loc: (2,), scale: (2,)), 1)"
    e = gd.Normal(loc, 1.0).expand((3, 2))
    assert e.batch_shape == (3, 2) and e.sample((4,)).shape == (4, 3, 2)
    c = gd.Categorical(logits=gp.zeros((4,), device=device)).expand((2, 3))
    assert c.batch_shape == (2, 3) and c.sample((5,)).shape == (5, 2, 3)
    m = gd.MultivariateNormal(gp.zeros((2,), device=device), scale_tril=gp.eye(2, device=device))
    assert m.expand((3,)).rsample((4,)).shape == (4, 3, 2)
    assert gd.Normal(0.0, 1.0).mean.dtype == gp.float32


# ---- MultivariateNormal -------------------------------------------------------------------
def _spd(n, batch=()):
    a = _RS.randn(*batch, n, n)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(np.float32)


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal_matches_torch(device, kind):
    cov = _spd(3, (2,))
    m = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov).astype(np.float32),
         "scale_tril": np.linalg.cholesky(cov).astype(np.float32)}[kind]
    params = {"loc": REAL, kind: m}
    tp, gpar = _pair(params, device)
    td, g = D.MultivariateNormal(**tp), gd.MultivariateNormal(**gpar)
    assert g.batch_shape == (2,) and g.event_shape == (3,)
    value = _RS.randn(4, 2, 3).astype(np.float32)
    t_lp, g_lp = td.log_prob(torch.tensor(value)), g.log_prob(gp.asarray(value, device=device))
    _close(g_lp, t_lp, 1e-4, 1e-4)
    _close(g.entropy(), td.entropy(), 1e-4, 1e-4)
    for prop in ("mean", "variance", "covariance_matrix", "scale_tril", "precision_matrix"):
        _close(getattr(g, prop), getattr(td, prop), 1e-4, 1e-4)
    (t_lp.sum() + td.entropy().sum()).backward()
    (gp.sum(g_lp) + gp.sum(g.entropy())).backward()
    for k in tp:
        _close(gpar[k].grad, tp[k].grad, 1e-3, 1e-3)


# ---- kl_divergence ------------------------------------------------------------------------
KL_CASES = {
    "Normal": ({"loc": REAL, "scale": POS}, {"loc": REAL[::-1].copy(), "scale": POS2}),
    "Bernoulli": ({"probs": PV}, {"probs": PV[::-1].copy()}),
    "Categorical": ({"probs": SIMPLEX}, {"logits": LOGITS}),
    "OneHotCategorical": ({"logits": LOGITS}, {"probs": SIMPLEX}),
    "Uniform": ({"low": REAL - 0.5, "high": REAL + 0.5}, {"low": REAL - 1.0, "high": REAL + POS}),
    "Exponential": ({"rate": POS}, {"rate": POS2}),
    "Laplace": ({"loc": REAL, "scale": POS}, {"loc": REAL * 0.5, "scale": POS2}),
    "Gamma": ({"concentration": POS, "rate": POS2}, {"concentration": POS2, "rate": POS}),
    "Beta": ({"concentration1": POS, "concentration0": POS2},
             {"concentration1": POS2, "concentration0": POS}),
    "Dirichlet": ({"concentration": SIMPLEX + 0.5}, {"concentration": SIMPLEX[::-1] + 1.0}),
    "Poisson": ({"rate": POS}, {"rate": POS2}),
    "LogNormal": ({"loc": REAL, "scale": POS}, {"loc": REAL[::-1].copy(), "scale": POS2}),
}


@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_and_gradients_match_torch(device, name):
    pa, qa = KL_CASES[name]
    tp, gpp = _pair(pa, device)
    tq, gq = _pair(qa, device)
    tc, gc = _ctor(name)
    t_kl = D.kl_divergence(tc(**tp), tc(**tq))
    g_kl = gd.kl_divergence(gc(**gpp), gc(**gq))
    tol = 10 if name in ("Gamma", "Beta", "Dirichlet") else 1
    _close(g_kl, t_kl, RTOL * tol, ATOL * tol)
    t_kl.sum().backward()
    gp.sum(g_kl).backward()
    for t, g in ((tp, gpp), (tq, gq)):
        for k in t:
            if name == "Uniform":   # torch's Uniform KL has no gradient for the bounds' order
                continue
            _close(g[k].grad, t[k].grad, RTOL * tol * 5, ATOL * tol * 5)


def test_kl_independent_and_mvn_and_inf(device):
    tp, gpp = _pair({"loc": REAL, "scale": POS}, device)
    tq, gq = _pair({"loc": REAL * 2, "scale": POS2}, device)
    t = D.kl_divergence(D.Independent(D.Normal(**tp), 1), D.Independent(D.Normal(**tq), 1))
    g = gd.kl_divergence(gd.Independent(gd.Normal(**gpp), 1), gd.Independent(gd.Normal(**gq), 1))
    _close(g, t)
    t.backward()
    g.backward()
    _close(gpp["scale"].grad, tp["scale"].grad)
    c1, c2 = _spd(3, (2,)), _spd(3)
    tp, gpp = _pair({"loc": REAL, "covariance_matrix": c1}, device)
    tq, gq = _pair({"loc": REAL * 0.3, "scale_tril": np.linalg.cholesky(c2)}, device)
    t = D.kl_divergence(D.MultivariateNormal(**tp), D.MultivariateNormal(**tq))
    g = gd.kl_divergence(gd.MultivariateNormal(**gpp), gd.MultivariateNormal(**gq))
    _close(g, t, 1e-4, 1e-4)
    t.sum().backward()
    gp.sum(g).backward()
    _close(gpp["covariance_matrix"].grad, tp["covariance_matrix"].grad, 1e-3, 1e-4)
    _close(gq["scale_tril"].grad, tq["scale_tril"].grad, 1e-3, 1e-4)
    # a zero probability where p has mass: inf, as torch
    p = np.array([0.5, 0.5, 0.0], np.float32)
    q = np.array([0.0, 0.5, 0.5], np.float32)
    _close(gd.kl_divergence(gd.Categorical(gp.asarray(p, device=device)),
                            gd.Categorical(gp.asarray(q, device=device))),
           D.kl_divergence(D.Categorical(torch.tensor(p)), D.Categorical(torch.tensor(q))))
    with pytest.raises(NotImplementedError, match="kl_divergence: no KL.*Normal.*Poisson"):
        gd.kl_divergence(gd.Normal(0.0, 1.0), gd.Poisson(1.0))   # none in torch either


def test_register_kl_most_specific_wins():
    class MyNormal(gd.Normal):
        pass

    @gd.register_kl(MyNormal, gd.Normal)
    def _kl(p, q):
        return "mine"

    assert gd.kl_divergence(MyNormal(0.0, 1.0), gd.Normal(0.0, 1.0)) == "mine"
    assert gd.kl_divergence(gd.Normal(0.0, 1.0), MyNormal(0.0, 1.0)) is not None
    with pytest.raises(TypeError, match="register_kl"):
        gd.register_kl(1, gd.Normal)


# ---- sampling -----------------------------------------------------------------------------
SAMPLE_CASES = {   # name -> (params, event shape); moments against the distribution's own
    "Normal": ({"loc": [0.5, -1.0], "scale": [1.0, 2.0]}, ()),
    "Uniform": ({"low": [0.0, -2.0], "high": [1.0, 3.0]}, ()),
    "Laplace": ({"loc": [0.5, -1.0], "scale": [1.0, 0.5]}, ()),
    "Exponential": ({"rate": [0.5, 2.0]}, ()),
    "Bernoulli": ({"probs": [0.2, 0.7]}, ()),
    "Categorical": ({"probs": [[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]}, ()),
    "OneHotCategorical": ({"probs": [[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]}, (3,)),
    "Gamma": ({"concentration": [0.3, 1.0, 4.5], "rate": [1.0, 2.0, 0.5]}, ()),
    "Poisson": ({"rate": [0.5, 4.0, 30.0]}, ()),
    "Beta": ({"concentration1": [0.5, 2.0], "concentration0": [0.7, 3.0]}, ()),
    "Dirichlet": ({"concentration": [[0.4, 1.0, 2.5]]}, (3,)),
    "LogNormal": ({"loc": [0.0, 0.3], "scale": [0.5, 0.25]}, ()),
    "MultivariateNormal": ({"loc": [1.0, -1.0], "covariance_matrix": [[2.0, 0.6], [0.6, 1.0]]},
                           (2,)),
}
N = 4000


@pytest.mark.parametrize("name", list(SAMPLE_CASES))
def test_sample_shapes_and_moments(device, name):
    params, ev = SAMPLE_CASES[name]
    gpar = {k: gp.asarray(np.asarray(v, np.float32), device=device) for k, v in params.items()}
    g = getattr(gd, name)(**gpar)
    t = getattr(D, name)(**{k: torch.tensor(v) for k, v in params.items()})
    gp.random.seed(1234)
    s = g.sample((N,))
    assert s.shape == (N,) + g.batch_shape + ev == (N,) + tuple(t.batch_shape + t.event_shape)
    assert g.sample().shape == g.batch_shape + ev
    assert g.sample((2, 3)).shape == (2, 3) + g.batch_shape + ev
    x = np.asarray(s, np.float64)
    if name == "Categorical":   # one-hot, so the mean is each category's probability
        x = np.eye(3)[x.astype(int)]
        mean = np.asarray(params["probs"])
        var = mean * (1 - mean)
    else:
        mean, var = _np(t.mean).astype(np.float64), _np(t.variance).astype(np.float64)
    # the sample mean within 5 standard errors; the sample variance within 5 of its standard
    # errors, estimated from the fourth central moment
    assert np.all(np.abs(x.mean(0) - mean) <= 5 * np.sqrt(var / N)), (x.mean(0), mean)
    m4 = ((x - x.mean(0)) ** 4).mean(0)
    assert np.all(np.abs(x.var(0) - var) <= 5 * np.sqrt(np.maximum(m4 - var ** 2, 1e-12) / N)
                  + 1e-6), (x.var(0), var)
    # the same seed, the same draws
    gp.random.seed(1234)
    np.testing.assert_array_equal(np.asarray(g.sample((N,))), np.asarray(s))


def _ks(x, cdf):
    x = np.sort(x)
    n = len(x)
    c = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n))


@pytest.mark.parametrize("conc", [0.25, 1.0, 3.7])
def test_gamma_samples_pass_a_kolmogorov_smirnov_test(device, conc):
    stats = pytest.importorskip("scipy.stats")

    gp.random.seed(7)
    g = gd.Gamma(gp.asarray(np.float32(conc), device=device), 2.0)
    x = np.asarray(g.sample((N,)), np.float64)
    # 1.95 / sqrt(n): the 0.001 critical value of the KS statistic
    assert _ks(x, lambda v: stats.gamma.cdf(v, conc, scale=0.5)) < 1.95 / math.sqrt(N)


def test_rsample_pathwise_gradients(device):
    loc = gp.asarray(np.array([0.5, -1.0], np.float32), device=device)
    scale = gp.asarray(np.array([1.0, 2.0], np.float32), device=device)
    loc.requires_grad_()
    scale.requires_grad_()
    gp.random.seed(3)
    x = gd.Normal(loc, scale).rsample((5,))
    gp.sum(x).backward()
    _close(loc.grad, np.full(2, 5.0, np.float32))   # d/dloc of rsample is 1
    eps = (np.asarray(x.detach()) - np.array([0.5, -1.0])) / np.array([1.0, 2.0])
    _close(scale.grad, eps.sum(0).astype(np.float32), 1e-4, 1e-4)   # d/dscale is eps
    # MultivariateNormal: d/dloc is 1; d E[x x^T] / d scale_tril is close to 2 L
    L = gp.asarray(np.array([[1.0, 0.0], [0.5, 0.8]], np.float32), device=device)
    L.requires_grad_()
    gp.random.seed(4)
    y = gd.MultivariateNormal(gp.zeros((2,), device=device), scale_tril=L).rsample((N,))
    (gp.sum(y * y) / N).backward()
    assert np.allclose(np.tril(np.asarray(L.grad)), 2 * np.asarray(L.detach()), atol=0.15)
    # Gamma: d E[x] / d concentration = 1 / rate (the documented pathwise gradient, loosely)
    for c in (0.5, 2.0):
        a = gp.asarray(np.float32(c), device=device)
        a.requires_grad_()
        gp.random.seed(5)
        (gp.sum(gd.Gamma(a, 2.0).rsample((N,))) / N).backward()
        assert abs(float(np.asarray(a.grad)) - 0.5) < 0.05, (c, np.asarray(a.grad))
    # sample() has no gradient
    assert not gd.Normal(loc, scale).sample((2,)).requires_grad


def test_independent_and_transformed(device):
    tp, gpar = _pair({"loc": np.stack([REAL, REAL * 0.5]), "scale": np.stack([POS, POS2])}, device)
    t = D.Independent(D.Normal(**tp), 1)
    g = gd.Independent(gd.Normal(**gpar), 1)
    assert g.batch_shape == (2,) and g.event_shape == (3,)
    v = _RS.randn(4, 2, 3).astype(np.float32)
    _close(g.log_prob(gp.asarray(v, device=device)), t.log_prob(torch.tensor(v)))
    _close(g.entropy(), t.entropy())
    assert g.sample((5,)).shape == (5, 2, 3) and g.has_rsample
    # TransformedDistribution: sigmoid, affine and tanh, element-wise
    for tt, gt in (([D.SigmoidTransform()], [gd.SigmoidTransform()]),
                   ([D.AffineTransform(1.0, -2.0), D.TanhTransform()],
                    [gd.AffineTransform(1.0, -2.0), gd.TanhTransform()]),
                   ([D.ExpTransform(), D.AffineTransform(0.5, 3.0)],
                    [gd.ExpTransform(), gd.AffineTransform(0.5, 3.0)])):
        tp, gpar = _pair({"loc": REAL * 0.3, "scale": POS * 0.5}, device)
        td = D.TransformedDistribution(D.Normal(**tp), tt)
        gdd = gd.TransformedDistribution(gd.Normal(**gpar), gt)
        with torch.no_grad():
            y = td.sample((4,))
        lp_t, lp_g = td.log_prob(y), gdd.log_prob(gp.asarray(_np(y), device=device))
        _close(lp_g, lp_t, 1e-4, 1e-4)
        lp_t.sum().backward()
        gp.sum(lp_g).backward()
        _close(gpar["scale"].grad, tp["scale"].grad, 1e-3, 1e-3)
        if all(not isinstance(x, D.TanhTransform) for x in tt):
            _close(gdd.cdf(gp.asarray(_np(y), device=device)), td.cdf(y), 1e-4, 1e-5)
        assert gdd.rsample((6,)).shape == (6, 3)


def test_enumerate_support_matches_torch(device):
    p = gp.asarray(SIMPLEX, device=device)
    for t, g in ((D.Categorical(torch.tensor(SIMPLEX)), gd.Categorical(p)),
                 (D.OneHotCategorical(torch.tensor(SIMPLEX)), gd.OneHotCategorical(p)),
                 (D.Bernoulli(torch.tensor(PV)), gd.Bernoulli(gp.asarray(PV, device=device)))):
        for expand in (True, False):
            e = t.enumerate_support(expand)
            _close(g.enumerate_support(expand), e if e.dtype != torch.int64 else _np(e))


def test_special_functions_in_float64_against_scipy(device):
    special = pytest.importorskip("scipy.special")
    from grilly.distributions._special import digamma, lgamma
    from grilly.special import erfinv

    x = np.concatenate([np.geomspace(1e-4, 1e4, 25), [0.5, 1.0, 2.0, 3.3]])
    y = np.linspace(-0.999, 0.999, 25)
    a, b = gp.asarray(x, device=device), gp.asarray(y, device=device)
    assert_close(lgamma(a), special.gammaln(x), rtol=1e-10, atol=1e-10)
    assert_close(digamma(a), special.digamma(x), rtol=1e-10, atol=1e-10)
    assert_close(erfinv(b), special.erfinv(y), rtol=1e-13, atol=1e-14)
    # a float64 distribution stays float64
    tp, gpar = _pair({"concentration": POS.astype(np.float64), "rate": POS2.astype(np.float64)},
                     device)
    t, g = D.Gamma(**tp), gd.Gamma(**gpar)
    v = POS2.astype(np.float64)
    _close(g.log_prob(gp.asarray(v, device=device)), t.log_prob(torch.tensor(v)), 1e-9, 1e-9)
    _close(g.entropy(), t.entropy(), 1e-9, 1e-9)


# ---- validation ---------------------------------------------------------------------------
def test_validation_errors():
    with pytest.raises(ValueError, match=r"Normal: expected parameter scale .*GreaterThan"):
        gd.Normal(0.0, -1.0)
    gd.Normal(0.0, -1.0, validate_args=False)   # validation off: no error
    with pytest.raises(ValueError, match="Bernoulli: expected parameter probs .*Interval"):
        gd.Bernoulli(probs=[0.5, 1.5])
    with pytest.raises(ValueError, match="Bernoulli: either `probs` or `logits`"):
        gd.Bernoulli(probs=0.5, logits=0.0)
    with pytest.raises(ValueError, match="Categorical: either `probs` or `logits`"):
        gd.Categorical()
    with pytest.raises(ValueError, match="Categorical: `probs` parameter must be at least one"):
        gd.Categorical(probs=0.5)
    with pytest.raises(ValueError, match="Categorical: expected parameter probs"):
        gd.Categorical(probs=[0.5, -0.1])
    with pytest.raises(ValueError, match="Uniform: low must be < high"):
        gd.Uniform(1.0, 0.0)
    with pytest.raises(ValueError, match="Gamma: expected parameter concentration"):
        gd.Gamma(0.0, 1.0)
    with pytest.raises(ValueError, match="MultivariateNormal: exactly one of"):
        gd.MultivariateNormal(gp.zeros((2,)))
    with pytest.raises(ValueError, match="MultivariateNormal: covariance_matrix must be square"):
        gd.MultivariateNormal(gp.zeros((2,)), gp.zeros((2, 3)))
    with pytest.raises(ValueError, match="MultivariateNormal: loc must be at least one"):
        gd.MultivariateNormal(gp.zeros(()), gp.eye(2))
    with pytest.raises(ValueError, match="MultivariateNormal: covariance_matrix of shape .* does not"):
        gd.MultivariateNormal(gp.zeros((3,)), gp.eye(2))
    with pytest.raises(ValueError, match="MultivariateNormal: expected parameter covariance_matrix"):
        gd.MultivariateNormal([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match="Independent: expected 0 <= reinterpreted_batch_ndims"):
        gd.Independent(gd.Normal(gp.zeros((2,)), 1.0), 2)
    n = gd.Normal(gp.zeros((2,)), 1.0)
    with pytest.raises(ValueError, match="Normal.log_prob: value is not broadcastable"):
        n.log_prob(gp.zeros((3,)))
    with pytest.raises(ValueError, match="MultivariateNormal.log_prob: the right-most size"):
        gd.MultivariateNormal(gp.zeros((2,)), gp.eye(2)).log_prob(gp.zeros((3,)))
    with pytest.raises(ValueError, match="Exponential.log_prob: expected value to be within"):
        gd.Exponential(1.0).log_prob(-1.0)
    with pytest.raises(NotImplementedError, match="Bernoulli.rsample"):
        gd.Bernoulli(0.5).rsample()
    # constraints check on device values without a read (a boolean Array)
    c = gd.constraints.positive.check(gp.asarray([1.0, -1.0]))
    assert isinstance(c, gp.Array) and np.asarray(c).tolist() == [True, False]
    assert repr(gd.constraints.interval(0, 1)) == repr(D.constraints.interval(0, 1))
    assert repr(gd.constraints.independent(gd.constraints.real, 1)) == \
        repr(D.constraints.independent(D.constraints.real, 1))
