"""A torch.distributions user's families that grilly.distributions lacked, against torch 2.13
(a test-only oracle) on every device: NegativeBinomial, Weibull, Pareto, HalfCauchy,
LowRankMultivariateNormal, Kumaraswamy, VonMises, ContinuousBernoulli, FisherSnedecor,
InverseGamma, LogisticNormal, Wishart, LKJCholesky and Gamma.cdf (each failed before with an
AttributeError or NotImplementedError), with their values, float64 gradients, draws,
validation, expand and the KL pairs torch registers for them; the transforms AbsTransform,
SoftmaxTransform, StickBreakingTransform, LowerCholeskyTransform, ReshapeTransform,
IndependentTransform, CatTransform and StackTransform; and TransformedDistribution with
transforms that change the event shape (its event axes, log_prob and expand).
"""
import math

import numpy as np
import pytest

import grilly as gp
from grilly import distributions as gd
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
D = torch.distributions

_RS = np.random.RandomState(8)
POS = np.array([[0.4, 1.3, 2.5], [3.1, 0.7, 1.9]])
UNIT = np.array([[0.1, 0.45, 0.8], [0.3, 0.502, 0.97]])
ANG = np.array([[-2.5, 0.3, 1.0], [3.0, -0.2, 0.6]])
Q = np.array([0.1, 0.5, 0.9])
N = 2000


def _np(t):
    return t.detach().numpy()


def _close(g, t, tol=1e-6):
    assert_close(g, _np(t) if hasattr(t, "detach") else np.asarray(t), rtol=tol, atol=tol)


def _leaves(params, device):
    """torch and grilly float64 leaves requiring grad for the array parameters."""
    tp, gpar = {}, {}
    for k, v in params.items():
        if isinstance(v, np.ndarray):
            tp[k] = torch.tensor(v, requires_grad=True)
            gpar[k] = gp.asarray(v, device=device).requires_grad_()
        else:
            tp[k] = gpar[k] = v
    return tp, gpar


# name -> (parameters, a value in the support, whether torch has cdf/icdf)
FAMILIES = {
    "Weibull": ({"scale": np.array([0.5, 1.5, 2.0]), "concentration": np.array([[0.8], [2.5]])},
                POS, True),
    "Pareto": ({"scale": np.array([0.3, 0.5, 0.2]), "alpha": np.array([[0.8], [3.5]])},
               POS, True),
    "HalfCauchy": ({"scale": np.array([0.5, 1.0, 2.0])}, POS, True),
    "InverseGamma": ({"concentration": np.array([[1.5], [3.5]]), "rate": np.array([0.5, 1.0, 2.0])},
                     POS, False),
    "Kumaraswamy": ({"concentration1": np.array([0.7, 2.0, 3.0]),
                     "concentration0": np.array([[1.5], [4.0]])}, UNIT, False),
    "FisherSnedecor": ({"df1": np.array([1.5, 3.0, 6.0]), "df2": np.array([[3.0], [9.0]])},
                       POS, False),
    "VonMises": ({"loc": np.array([0.3, -1.0, 2.0]), "concentration": np.array([[0.5], [4.0]])},
                 ANG, False),
    "ContinuousBernoulli": ({"probs": np.array([[0.2, 0.4995, 0.9], [0.03, 0.6, 0.5005]])},
                            UNIT, True),
    "NegativeBinomial": ({"total_count": np.array([0.7, 3.0, 5.5]),
                          "logits": np.array([[-1.0], [0.8]])},
                         np.array([[0.0, 2.0, 7.0], [3.0, 0.0, 1.0]]), False),
    "LowRankMultivariateNormal": ({"loc": _RS.randn(2, 3), "cov_factor": _RS.randn(3, 2),
                                   "cov_diag": np.array([0.5, 1.0, 2.0])},
                                  _RS.randn(4, 2, 3), False),
    "LogisticNormal": ({"loc": _RS.randn(2, 2), "scale": np.array([0.5, 1.5])},
                       np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]), False),
}
PROPS = ("mean", "mode", "variance", "stddev")


@pytest.mark.parametrize("name", list(FAMILIES))
def test_new_families_match_torch(device, name):
    """log_prob, entropy, moments, cdf/icdf and their float64 gradients as torch's."""
    params, value, has_cdf = FAMILIES[name]
    tp, gpar = _leaves(params, device)
    td, g = getattr(D, name)(**tp), getattr(gd, name)(**gpar)
    assert g.batch_shape == tuple(td.batch_shape) and g.event_shape == tuple(td.event_shape)
    assert g.has_rsample == td.has_rsample
    assert type(g.support).__name__ == type(td.support).__name__
    t_lp, g_lp = td.log_prob(torch.tensor(value)), g.log_prob(gp.asarray(value, device=device))
    _close(g_lp, t_lp)
    t_tot, g_tot = t_lp.sum(), gp.sum(g_lp)
    if "entropy" in type(td).__dict__ or name == "LowRankMultivariateNormal":
        _close(g.entropy(), td.entropy())
        t_tot, g_tot = t_tot + td.entropy().sum(), g_tot + gp.sum(g.entropy())
    for prop in PROPS:
        try:
            t_v = getattr(td, prop)
        except NotImplementedError:
            continue
        if name == "Kumaraswamy" and prop == "mode":   # torch 2.13's is nan everywhere: below
            continue
        g_v = getattr(g, prop)
        _close(g_v, t_v)
        # gradients where torch's are defined (its inf/nan moments have nan gradients)
        if bool(torch.isfinite(t_v).all()):
            t_tot, g_tot = t_tot + t_v.sum(), g_tot + gp.sum(g_v)
    if has_cdf:
        t_c, g_c = td.cdf(torch.tensor(value)), g.cdf(gp.asarray(value, device=device))
        t_i, g_i = td.icdf(torch.tensor(Q)), g.icdf(gp.asarray(Q, device=device))
        _close(g_c, t_c)
        _close(g_i, t_i)
        t_tot, g_tot = t_tot + t_c.sum() + t_i.sum(), g_tot + gp.sum(g_c) + gp.sum(g_i)
    t_tot.backward()
    g_tot.backward()
    for k, v in tp.items():
        _close(gpar[k].grad, v.grad, 1e-5)


def test_kumaraswamy_mode_maximizes_the_density(device):
    """torch 2.13's Kumaraswamy.mode is nan everywhere; grilly's is the density's argmax
    (a float64 grid search), nan where a concentration is below 1 (as torch means to)."""
    a, b = np.array([2.0, 3.0, 1.0, 0.5]), np.array([3.0, 1.5, 2.0, 2.0])
    mode = np.asarray(gd.Kumaraswamy(gp.asarray(a, device=device), gp.asarray(b, device=device))
                      .mode)
    grid = np.linspace(1e-6, 1 - 1e-6, 200001)
    dens = np.log(a[:3, None] * b[:3, None]) + (a[:3, None] - 1) * np.log(grid) \
        + (b[:3, None] - 1) * np.log1p(-grid ** a[:3, None])
    np.testing.assert_allclose(mode[:3], grid[np.argmax(dens, axis=1)], atol=1e-4)
    assert np.isnan(mode[3])


# the laws' draws: (sample size N) means within 5 standard errors of torch's mean, where the
# variance is finite; the median against torch's icdf(0.5) for the heavy-tailed ones
DRAWS = {
    "Weibull": {"scale": np.array([0.5, 2.0]), "concentration": np.array([0.8, 2.5])},
    "Pareto": {"scale": np.array([0.3, 1.5]), "alpha": np.array([0.8, 3.5])},
    "HalfCauchy": {"scale": np.array([0.5, 2.0])},
    "InverseGamma": {"concentration": np.array([2.5, 4.0]), "rate": np.array([0.5, 2.0])},
    "Kumaraswamy": {"concentration1": np.array([0.7, 3.0]), "concentration0": np.array([1.5, 4.0])},
    "FisherSnedecor": {"df1": np.array([3.0, 6.0]), "df2": np.array([5.0, 9.0])},
    "VonMises": {"loc": np.array([3.0, -1.0]), "concentration": np.array([0.5, 4.0])},
    "ContinuousBernoulli": {"probs": np.array([0.2, 0.5])},
    "NegativeBinomial": {"total_count": np.array([0.7, 5.5]), "logits": np.array([-1.0, 0.8])},
    "LowRankMultivariateNormal": {"loc": np.array([0.5, -1.0, 2.0]),
                                  "cov_factor": np.array([[1.0], [0.5], [-1.0]]),
                                  "cov_diag": np.array([0.5, 1.0, 2.0])},
    "LogisticNormal": {"loc": np.array([0.3, -0.5]), "scale": np.array([0.5, 1.0])},
}
# reparameterized through a differentiable map of noise that does not depend on the parameters
# (the gamma-based ones are pathwise through the accepted proposal: tested by moments only)
PATHWISE = ("Weibull", "Pareto", "HalfCauchy", "Kumaraswamy", "ContinuousBernoulli",
            "LowRankMultivariateNormal", "LogisticNormal")


@pytest.mark.parametrize("name", list(DRAWS))
def test_new_families_draws(device, name):
    params = DRAWS[name]
    td = getattr(D, name)(**{k: torch.tensor(v) for k, v in params.items()})
    gpar = {k: gp.asarray(v, device=device) for k, v in params.items()}
    g = getattr(gd, name)(**gpar)
    gp.random.seed(12)
    x = np.asarray(g.sample((N,)), np.float64)
    assert x.shape == tuple(td.sample((N,)).shape) and g.sample().shape == tuple(td.sample().shape)
    if name == "VonMises":   # circular: E[cos(x - loc)] = I1(k) / I0(k), E[sin(x - loc)] = 0
        assert np.all((x >= -math.pi) & (x < math.pi))
        d = x - params["loc"]
        r = 1.0 - _np(td.variance)
        assert np.all(np.abs(np.cos(d).mean(0) - r) < 5 * np.sqrt(0.5 / N))
        assert np.all(np.abs(np.sin(d).mean(0)) < 5 * np.sqrt(0.5 / N))
        return
    if name == "LogisticNormal":   # torch has no moments: those of 20000 of its draws
        torch.manual_seed(0)
        t = _np(td.sample((20000,)))
        mean, var = t.mean(0), t.var(0) * (1 + N / 20000)
    else:
        mean, var = _np(td.mean), _np(td.variance)
    ok = np.isfinite(mean) & np.isfinite(var)
    assert np.all(np.abs(x.mean(0) - mean)[ok] <= 5 * np.sqrt(var / N)[ok] + 1e-9)
    if name in ("Pareto", "HalfCauchy"):
        med = _np(td.icdf(torch.tensor(0.5, dtype=torch.float64)))
        q = (np.mean(x <= med, axis=0))
        assert np.all(np.abs(q - 0.5) < 5 * 0.5 / np.sqrt(N))
    if name == "NegativeBinomial":
        assert np.all(x == np.floor(x)) and np.all(x >= 0)
    if name not in PATHWISE:
        return
    # d sum(rsample) / d parameter against central differences at the same noise (float64)
    leaves = {k: v.detach().requires_grad_() for k, v in gpar.items()}
    gp.random.seed(3)
    gp.sum(getattr(gd, name)(**leaves).rsample((64,))).backward()
    for k, v in params.items():
        num = np.zeros_like(v)
        for i in np.ndindex(v.shape):
            tot = []
            for sgn in (1.0, -1.0):
                w = dict(gpar)
                vv = v.copy()
                vv[i] += sgn * 1e-6
                w[k] = gp.asarray(vv, device=device)
                gp.random.seed(3)
                tot.append(float(np.asarray(gp.sum(getattr(gd, name)(**w).rsample((64,))))))
            num[i] = (tot[0] - tot[1]) / 2e-6
        np.testing.assert_allclose(np.asarray(leaves[k].grad), num, rtol=1e-4, atol=1e-4)


def test_gamma_cdf_as_torch(device):
    """Gamma.cdf (and Chi2's) is torch's gammainc(concentration, rate x); its value and rate
    gradients are torch's, its concentration gradient (torch has none) mpmath's derivative."""
    # both sides of x = a + 1 and (from a = 100 on) of x = a, x = a exactly included
    a = np.array([0.3, 1.0, 2.5, 8.0, 40.0, 90.0, 150.0, 500.0, 500.0])
    r = np.array([2.0, 0.5, 1.0, 1.5, 1.0, 0.8, 1.0, 2.0, 1.0])
    x = np.array([0.05, 3.0, 0.7, 6.0, 52.0, 100.0, 141.0, 250.0, 530.0])
    ta, tr, tx = (torch.tensor(v, requires_grad=True) for v in (a, r, x))
    ga, gr, gx = (gp.asarray(v, device=device).requires_grad_() for v in (a, r, x))
    t, g = D.Gamma(ta.detach(), tr).cdf(tx), gd.Gamma(ga, gr).cdf(gx)
    _close(g, t, 1e-7)
    t.sum().backward()
    gp.sum(g).backward()
    _close(gx.grad, tx.grad, 1e-6)
    _close(gr.grad, tr.grad, 1e-6)
    mp = pytest.importorskip("mpmath")
    num = [float(mp.diff(lambda s: mp.gammainc(s, 0, float(y), regularized=True), float(c)))
           for c, y in zip(a, r * x)]
    _close(ga.grad, np.array(num), 1e-7)
    df = np.array([1.0, 4.0, 7.0])
    v = np.array([0.5, 3.0, 9.0])
    _close(gd.Chi2(gp.asarray(df, device=device)).cdf(gp.asarray(v, device=device)),
           D.Chi2(torch.tensor(df)).cdf(torch.tensor(v)), 1e-7)
    with pytest.raises(NotImplementedError):
        gd.Gamma(1.0, 1.0).icdf(0.5)   # as torch


def test_new_families_validate():
    """Bad parameters and values: ValueErrors as torch's (naming the family)."""
    bad = (lambda m: m.Weibull(-1.0, 1.0), lambda m: m.Pareto(1.0, 0.0),
           lambda m: m.HalfCauchy(-2.0), lambda m: m.InverseGamma(1.0, -1.0),
           lambda m: m.Kumaraswamy(0.0, 1.0), lambda m: m.FisherSnedecor(1.0, -3.0),
           lambda m: m.VonMises(0.0, -1.0), lambda m: m.NegativeBinomial(3.0, 1.0),
           lambda m: m.LogisticNormal(0.0, -1.0),
           lambda m: m.Kumaraswamy(2.0, 2.0).log_prob(_v(m, 1.5)),
           lambda m: m.NegativeBinomial(3.0, 0.5).log_prob(_v(m, 1.5)),
           lambda m: m.FisherSnedecor(2.0, 2.0).log_prob(_v(m, -1.0)),
           lambda m: m.Pareto(1.0, 2.0).log_prob(_v(m, 0.5)),
           lambda m: m.LowRankMultivariateNormal(_v(m, [0.0, 0.0]), _v(m, [[1.0], [1.0]]),
                                                 _v(m, [1.0, -1.0])),
           lambda m: m.LowRankMultivariateNormal(_v(m, [0.0, 0.0]), _v(m, [1.0, 1.0]),
                                                 _v(m, [1.0, 1.0])),
           lambda m: m.LowRankMultivariateNormal(_v(m, [0.0, 0.0]), _v(m, [[1.0], [1.0]]),
                                                 _v(m, [1.0, 1.0, 1.0])))
    for call in bad:
        with pytest.raises(ValueError):
            call(D)
        with pytest.raises(ValueError):
            call(gd)
    with pytest.raises(ValueError, match="Weibull: expected parameter scale"):
        gd.Weibull(-1.0, 1.0)
    with pytest.raises(ValueError, match="NegativeBinomial: expected parameter total_count"):
        gd.NegativeBinomial(-1.0, 0.5)   # torch 2.13 lets a number total_count through
    with pytest.raises(ValueError, match="ContinuousBernoulli: expected parameter probs"):
        gd.ContinuousBernoulli(1.5)   # torch checks only with an explicit validate_args
    with pytest.raises(ValueError, match="NegativeBinomial: either `probs` or `logits`"):
        gd.NegativeBinomial(3.0)


def test_new_families_expand(device):
    """expand as torch's (the ones with their own expand, or a transform changing shapes)."""
    for name in ("Weibull", "Pareto", "Kumaraswamy", "NegativeBinomial",
                 "LowRankMultivariateNormal", "LogisticNormal"):
        tp, gpar = _leaves(FAMILIES[name][0], device)
        td, g = getattr(D, name)(**tp), getattr(gd, name)(**gpar)
        shape = (2,) + tuple(td.batch_shape)
        te, ge = td.expand(shape), g.expand(shape)
        assert type(ge) is type(g) and ge.batch_shape == tuple(te.batch_shape), name
        assert ge.sample((3,)).shape == tuple(te.sample((3,)).shape), name
        if name not in ("VonMises", "NegativeBinomial", "LogisticNormal"):
            _close(ge.mean, te.mean)
        v = te.sample()
        _close(ge.log_prob(gp.asarray(_np(v), device=device)), te.log_prob(v))


def _v(m, v):
    return torch.tensor(v) if m is D else v   # grilly: host data (checked without a read)


def test_new_transforms_match_torch(device):
    """Forward, inverse, log-det (where torch has one), shapes and gradients as torch's."""
    x = _RS.randn(2, 3, 3)
    cases = [(gd.AbsTransform(), D.AbsTransform(), x - 0.5, False),
             (gd.SoftmaxTransform(), D.SoftmaxTransform(), x, False),
             (gd.StickBreakingTransform(), D.StickBreakingTransform(), x, True),
             (gd.LowerCholeskyTransform(), D.LowerCholeskyTransform(), x, False),
             (gd.ReshapeTransform((3, 3), (9,)), D.ReshapeTransform((3, 3), (9,)), x, True),
             (gd.IndependentTransform(gd.ExpTransform(), 2),
              D.IndependentTransform(D.ExpTransform(), 2), x, True),
             (gd.IndependentTransform(gd.StickBreakingTransform(), 1).inv,
              D.IndependentTransform(D.StickBreakingTransform(), 1).inv,
              np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]), True)]
    for g, t, v, has_ladj in cases:
        assert g.bijective == t.bijective, t
        assert g.domain.event_dim == t.domain.event_dim and \
            g.codomain.event_dim == t.codomain.event_dim, t
        assert g.forward_shape(v.shape) == tuple(t.forward_shape(v.shape))
        tx = torch.tensor(v, requires_grad=True)
        gx = gp.asarray(v, device=device).requires_grad_()
        ty, gy = t(tx), g(gx)
        _close(gy, ty)
        _close(g.inv(gy), t.inv(ty))
        assert g.inverse_shape(tuple(gy.shape)) == tuple(v.shape)
        t_tot, g_tot = (ty * torch.tensor(np.cos(np.arange(ty.numel())).reshape(ty.shape))).sum(), \
            gp.sum(gy * gp.asarray(np.cos(np.arange(ty.numel())).reshape(ty.shape), device=device))
        if has_ladj:
            t_l, g_l = t.log_abs_det_jacobian(tx, ty), g.log_abs_det_jacobian(gx, gy)
            _close(g_l, t_l)
            t_tot, g_tot = t_tot + t_l.sum(), g_tot + gp.sum(g_l)
        t_tot.backward()
        g_tot.backward()
        _close(gx.grad, tx.grad)
    # a matrix-valued and a reshaped normal: log_prob and gradients as torch's
    loc = _RS.randn(2, 3)
    tl, gl = torch.tensor(loc, requires_grad=True), gp.asarray(loc, device=device)
    gl.requires_grad_()
    td = D.TransformedDistribution(D.Normal(tl, 0.7), [D.ReshapeTransform((2, 3), (3, 2)),
                                                        D.IndependentTransform(D.ExpTransform(), 2)])
    g = gd.TransformedDistribution(gd.Normal(gl, 0.7), [gd.ReshapeTransform((2, 3), (3, 2)),
                                                        gd.IndependentTransform(gd.ExpTransform(), 2)])
    assert g.event_shape == tuple(td.event_shape) and g.batch_shape == tuple(td.batch_shape)
    y = np.exp(_RS.randn(4, 3, 2))
    t_lp, g_lp = td.log_prob(torch.tensor(y)), g.log_prob(gp.asarray(y, device=device))
    _close(g_lp, t_lp)
    t_lp.sum().backward()
    gp.sum(g_lp).backward()
    _close(gl.grad, tl.grad)
    with pytest.raises(ValueError, match="ReshapeTransform"):
        gd.ReshapeTransform((2, 3), (4,))


KL_PAIRS = {
    "Pareto": ({"scale": np.array([0.5, 1.0, 2.0]), "alpha": np.array([1.5, 3.0, 0.7])},
               {"scale": np.array([0.4, 1.0, 3.0]), "alpha": np.array([2.0, 0.9, 1.1])}),
    "ContinuousBernoulli": ({"probs": np.array([0.2, 0.4999, 0.9])},
                            {"logits": np.array([0.3, -1.0, 0.001])}),
    "LowRankMultivariateNormal": ({"loc": _RS.randn(2, 3), "cov_factor": _RS.randn(3, 2),
                                   "cov_diag": np.array([0.5, 1.0, 2.0])},
                                  {"loc": _RS.randn(3), "cov_factor": _RS.randn(2, 3, 1),
                                   "cov_diag": np.array([1.5, 0.3, 1.0])}),
}


@pytest.mark.parametrize("name", list(KL_PAIRS) + ["LowRank-MVN", "MVN-LowRank"])
def test_kl_of_new_pairs_matches_torch(device, name):
    low = "LowRankMultivariateNormal"
    pa, qa = KL_PAIRS[low if "-" in name else name]
    tp, gpp = _leaves(pa, device)
    tq, gq = _leaves(qa, device)
    cp = cq = name
    if name == "LowRank-MVN":
        cp = low
        mats = [np.diag(qa["cov_diag"]) + w @ w.T for w in qa["cov_factor"]]
        tq, gq = _leaves({"loc": qa["loc"], "covariance_matrix": np.stack(mats)}, device)
        cq = "MultivariateNormal"
    if name == "MVN-LowRank":
        cq = low
        m = _RS.randn(3, 3)
        tp, gpp = _leaves({"loc": pa["loc"], "covariance_matrix": m @ m.T + np.eye(3)}, device)
        cp = "MultivariateNormal"
    t = D.kl_divergence(getattr(D, cp)(**tp), getattr(D, cq)(**tq))
    g = gd.kl_divergence(getattr(gd, cp)(**gpp), getattr(gd, cq)(**gq))
    _close(g, t)
    ok = torch.isfinite(t)
    t[ok].sum().backward()
    gp.sum(gp.where(gp.asarray(_np(ok), device=device), g, 0.0)).backward()
    for tt, gg in ((tp, gpp), (tq, gq)):
        for k, v in tt.items():
            _close(gg[k].grad, v.grad, 1e-5)


def test_number_built_families_follow_the_value_device(device):
    """Weibull(1., 2.) and the like (whose transforms hold Arrays made from the numbers) score
    a value on any device, as Normal(0., 1.) does (torch's CPU scalars join a CUDA tensor)."""
    v = np.array([0.3, 0.7])
    for name, args in (("Weibull", (1.0, 2.0)), ("Pareto", (0.2, 2.0)),
                       ("Kumaraswamy", (2.0, 3.0)), ("HalfCauchy", (1.5,)),
                       ("InverseGamma", (2.0, 1.0)), ("LogisticNormal", (0.0, 1.0))):
        x = v if name != "LogisticNormal" else np.array([0.3, 0.7])
        td, g = getattr(D, name)(*args), getattr(gd, name)(*args)
        out = g.log_prob(gp.asarray(x, device=device))
        assert out.device == device
        _close(out, td.log_prob(torch.tensor(x)).double(), 1e-5)   # (torch: float32 for some)


PA = {"scale": np.array([0.5, 1.0, 2.0]), "alpha": np.array([2.5, 3.0, 0.9])}
CB = {"probs": np.array([0.2, 0.4999, 0.9])}
CROSS = [("Beta", {"concentration1": np.array([0.5, 2.0, 3.0]),
                   "concentration0": np.array([1.5, 0.7, 2.0])}, "ContinuousBernoulli", CB),
         ("Uniform", {"low": np.array([0.1, 0.2, -0.1]), "high": np.array([0.5, 0.9, 0.6])},
          "ContinuousBernoulli", CB),
         ("ContinuousBernoulli", CB, "Uniform", {"low": np.array([-0.5, 0.2, -1.0]),
                                                 "high": np.array([1.5, 2.0, 3.0])}),
         ("ContinuousBernoulli", CB, "Exponential", {"rate": np.array([0.5, 1.0, 2.0])}),
         ("ContinuousBernoulli", CB, "Normal", {"loc": np.array([0.1, 0.5, 2.0]),
                                                "scale": np.array([0.5, 1.0, 2.0])}),
         ("Pareto", PA, "Exponential", {"rate": np.array([0.5, 1.0, 2.0])}),
         ("Pareto", PA, "Gamma", {"concentration": np.array([0.5, 1.0, 2.0]),
                                  "rate": np.array([1.5, 1.0, 0.3])}),
         ("Pareto", PA, "Normal", {"loc": np.array([0.1, 0.5, 2.0]),
                                   "scale": np.array([0.5, 1.0, 2.0])}),
         ("Uniform", {"low": np.array([0.6, 1.0, 1.0]), "high": np.array([1.5, 2.0, 3.0])},
          "Pareto", PA),
         ("Normal", {"loc": np.zeros(3), "scale": np.ones(3)}, "Pareto", PA),
         ("Pareto", PA, "ContinuousBernoulli", CB)]


@pytest.mark.parametrize("case", CROSS, ids=lambda c: f"{c[0]}-{c[2]}")
def test_kl_across_families_as_torch(device, case):
    """The pairs torch registers for Pareto and ContinuousBernoulli: values (inf where p has
    mass outside q's support) and gradients where finite."""
    np_, pa, nq, qa = case
    tp, gpp = _leaves(pa, device)
    tq, gq = _leaves(qa, device)
    t = D.kl_divergence(getattr(D, np_)(**tp), getattr(D, nq)(**tq))
    g = gd.kl_divergence(getattr(gd, np_)(**gpp), getattr(gd, nq)(**gq))
    _close(g, t)
    ok = torch.isfinite(t)
    if not bool(ok.any()):
        return
    torch.where(ok, t, 0.0).sum().backward()
    gp.sum(gp.where(gp.asarray(_np(ok), device=device), g, 0.0)).backward()
    for tt, gg in ((tp, gpp), (tq, gq)):
        for k, v in tt.items():
            if v.grad is not None:
                _close(gg[k].grad, v.grad, 1e-5)


def test_lkj_cholesky(device):
    """log_prob and its concentration gradient as torch's; draws are Cholesky factors of
    correlation matrices whose every off-diagonal entry has the LKJ marginal's variance
    1 / (2 c + d - 1) (torch 2.13's draws miss it beyond the second row)."""
    c = np.array([0.5, 2.0])
    tc, gc = torch.tensor(c, requires_grad=True), gp.asarray(c, device=device).requires_grad_()
    td, g = D.LKJCholesky(4, tc), gd.LKJCholesky(4, gc)
    assert g.batch_shape == tuple(td.batch_shape) and g.event_shape == tuple(td.event_shape)
    torch.manual_seed(0)
    v = td.sample((3,))
    t_lp, g_lp = td.log_prob(v), g.log_prob(gp.asarray(_np(v), device=device))
    _close(g_lp, t_lp)
    t_lp.sum().backward()
    gp.sum(g_lp).backward()
    _close(gc.grad, tc.grad)
    gp.random.seed(4)
    s = g.sample((N,))
    assert s.shape == tuple(td.sample((N,)).shape)
    assert bool(np.all(np.asarray(gd.constraints.corr_cholesky.check(s))))
    x = np.asarray(s)
    r = (x @ np.swapaxes(x, -1, -2))[..., np.tril_indices(4, -1)[0], np.tril_indices(4, -1)[1]]
    var = (1.0 / (2.0 * c + 3.0))[:, None]
    assert np.all(np.abs((r * r).mean(0) - var) < 5 * (r * r).std(0) / np.sqrt(N))
    assert g.expand((3, 2)).sample().shape == (3, 2, 4, 4)
    for call in (lambda m: m.LKJCholesky(1, 1.0), lambda m: m.LKJCholesky(3, -1.0)):
        with pytest.raises(ValueError):
            call(D)
        with pytest.raises(ValueError, match="LKJCholesky"):
            call(gd)


@pytest.mark.filterwarnings("ignore:Singular sample")   # torch's draws
@pytest.mark.parametrize("kind", ["covariance_matrix", "scale_tril"])
def test_wishart_as_torch(device, kind):
    """log_prob, entropy, moments and their float64 gradients as torch's (a scale_tril's
    lower triangle: grilly reads only that one, as MultivariateNormal); draws' mean; rsample's
    pathwise gradient in the scale against central differences at the same noise."""
    a = _RS.randn(2, 3, 3)
    cov = a @ np.swapaxes(a, -1, -2) + np.eye(3)
    m = cov if kind == "covariance_matrix" else np.linalg.cholesky(cov)
    tp, gpar = _leaves({"df": np.array([4.5, 7.0]), kind: m}, device)
    td, g = D.Wishart(**tp), gd.Wishart(**gpar)
    assert g.batch_shape == tuple(td.batch_shape) and g.event_shape == tuple(td.event_shape)
    torch.manual_seed(1)
    with torch.no_grad():
        v = D.Wishart(torch.tensor([4.5, 7.0]), covariance_matrix=torch.tensor(cov)).sample((2,))
    t_tot = td.log_prob(v).sum() + td.entropy().sum()
    g_lp = g.log_prob(gp.asarray(_np(v), device=device))
    _close(g_lp, td.log_prob(v))
    _close(g.entropy(), td.entropy())
    g_tot = gp.sum(g_lp) + gp.sum(g.entropy())
    for prop in ("mean", "mode", "variance"):
        _close(getattr(g, prop), getattr(td, prop))
        if prop != "mode":
            t_tot, g_tot = t_tot + getattr(td, prop).sum(), g_tot + gp.sum(getattr(g, prop))
    t_tot.backward()
    g_tot.backward()
    _close(gpar["df"].grad, tp["df"].grad)
    tri = np.tril(np.ones((3, 3))) if kind == "scale_tril" else np.ones((3, 3))
    _close(gp.asarray(np.asarray(gpar[kind].grad) * tri), _np(tp[kind].grad) * tri)
    gp.random.seed(6)
    s = np.asarray(g.sample((N,)))
    assert s.shape == (N, 2, 3, 3)
    mean, var = _np(td.mean), _np(td.variance)
    assert np.all(np.abs(s.mean(0) - mean) <= 5 * np.sqrt(var / N))
    if kind != "scale_tril":
        return
    leaf = gpar[kind].detach().requires_grad_()
    gp.random.seed(3)
    gp.sum(gd.Wishart(gpar["df"].detach(), scale_tril=leaf).rsample((8,))).backward()
    for i in ((0, 0, 0), (1, 2, 1)):
        tot = []
        for sgn in (1.0, -1.0):
            mm = m.copy()
            mm[i] += sgn * 1e-6
            gp.random.seed(3)
            w = gd.Wishart(gpar["df"].detach(), scale_tril=gp.asarray(mm, device=device))
            tot.append(float(np.asarray(gp.sum(w.rsample((8,))))))
        np.testing.assert_allclose(np.asarray(leaf.grad)[i], (tot[0] - tot[1]) / 2e-6,
                                   rtol=1e-4)
    with pytest.raises(ValueError):   # df <= p - 1
        D.Wishart(torch.tensor(1.5), covariance_matrix=torch.tensor(cov[0]))
    with pytest.raises(ValueError, match="Wishart: value of df=1.5"):
        gd.Wishart(1.5, covariance_matrix=cov[0].tolist())
    with pytest.raises(ValueError, match="Wishart: exactly one of"):   # torch: AssertionError
        gd.Wishart(5.0)


def test_cat_and_stack_transforms_as_torch(device):
    """Per-piece transforms along an axis: values, inverses, log-dets and gradients; a
    TransformedDistribution of a normal through them."""
    x = _RS.randn(2, 4)
    pairs = [(gd.CatTransform([gd.ExpTransform(), gd.AffineTransform(1.0, 3.0)], dim=1,
                              lengths=[1, 3]),
              D.CatTransform([D.ExpTransform(), D.AffineTransform(1.0, 3.0)], dim=1,
                             lengths=[1, 3])),
             (gd.StackTransform([gd.ExpTransform(), gd.SigmoidTransform()], dim=0),
              D.StackTransform([D.ExpTransform(), D.SigmoidTransform()], dim=0)),
             (gd.StackTransform([gd.ExpTransform()] * 4, dim=-1),
              D.StackTransform([D.ExpTransform()] * 4, dim=-1))]
    for g, t in pairs:
        tx = torch.tensor(x, requires_grad=True)
        gx = gp.asarray(x, device=device).requires_grad_()
        ty, gy = t(tx), g(gx)
        _close(gy, ty)
        _close(g.inv(gy), t.inv(ty))
        t_l, g_l = t.log_abs_det_jacobian(tx, ty), g.log_abs_det_jacobian(gx, gy)
        _close(g_l, t_l)
        (ty.sum() + t_l.sum()).backward()
        (gp.sum(gy) + gp.sum(g_l)).backward()
        _close(gx.grad, tx.grad)
    loc = _RS.randn(2, 4)
    tl, gl = torch.tensor(loc, requires_grad=True), gp.asarray(loc, device=device)
    gl.requires_grad_()
    # dim=-1 (torch's check of a positive dim fails with sample axes in front)
    td = D.TransformedDistribution(D.Normal(tl, 1.0), D.CatTransform(
        [D.ExpTransform(), D.AffineTransform(1.0, 3.0)], dim=-1, lengths=[1, 3]))
    g = gd.TransformedDistribution(gd.Normal(gl, 1.0), gd.CatTransform(
        [gd.ExpTransform(), gd.AffineTransform(1.0, 3.0)], dim=-1, lengths=[1, 3]))
    y = np.abs(_RS.randn(3, 2, 4)) + 0.1
    t_lp, g_lp = td.log_prob(torch.tensor(y)), g.log_prob(gp.asarray(y, device=device))
    _close(g_lp, t_lp)
    t_lp.sum().backward()
    gp.sum(g_lp).backward()
    _close(gl.grad, tl.grad)
    with pytest.raises(ValueError, match="CatTransform: the input's size along dim 1"):
        pairs[0][0](gp.asarray(np.zeros((2, 5)), device=device))
    with pytest.raises(NotImplementedError, match="StackTransform: transforms with event_dim"):
        gd.StackTransform([gd.StickBreakingTransform()])


def test_von_mises_float64_against_scipy(device):
    """VonMises's log_prob and circular variance through grilly.special's i0e/i1e: float64
    accuracy (torch's, and grilly's before, used Abramowitz and Stegun's 1e-7 polynomials)."""
    stats = pytest.importorskip("scipy.stats")
    special = pytest.importorskip("scipy.special")
    k = np.array([0.05, 0.7, 3.0, 40.0, 900.0])
    x = np.array([0.1, -2.0, 3.0, 0.01, -0.02])
    d = gd.VonMises(gp.asarray(np.zeros(5), device=device), gp.asarray(k, device=device))
    assert_close(d.log_prob(gp.asarray(x, device=device)), stats.vonmises.logpdf(x, k),
                 rtol=1e-13, atol=1e-13)
    assert_close(d.variance, 1.0 - special.i1e(k) / special.i0e(k), rtol=1e-13, atol=1e-15)
