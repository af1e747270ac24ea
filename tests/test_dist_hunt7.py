"""A PyTorch user's torch.distributions code ported to grilly.distributions, against torch 2.13
(a test-only oracle) on every device; each test failed before its fix: the distributions a
torch user types that were missing (Cauchy, Gumbel, HalfNormal, StudentT, Chi2, Geometric,
Binomial, Multinomial, OneHotCategoricalStraightThrough, MixtureSameFamily, RelaxedBernoulli,
RelaxedOneHotCategorical) with their values, gradients, draws and KL pairs; Beta.mode for a
concentration below 1; transforms with ``cache_size=1`` (SAC's ``TanhTransform(cache_size=1)``:
log_prob of a saturated draw), ComposeTransform, PowerTransform, SoftplusTransform and
forward_shape; a TransformedDistribution whose transform parameters broadcast the base's batch
(and move a number-built base to their device); host values outside a dependent support (a
Categorical index, a transform's codomain) as ValueError; a float sample size as TypeError; and
rsample's pathwise gradients of Laplace, Exponential, Uniform and LogNormal at fixed noise.
"""
import numpy as np
import pytest

import grilly as gp
from grilly import distributions as gd
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
D = torch.distributions

_RS = np.random.RandomState(7)
LOC = _RS.randn(2, 1).astype(np.float32)
SCALE = _RS.uniform(0.5, 2.0, (3,)).astype(np.float32)
VAL = _RS.randn(2, 3).astype(np.float32)
POS = _RS.uniform(0.1, 3.0, (2, 3)).astype(np.float32)
U = np.array([0.1, 0.5, 0.9], np.float32)
N = 2000


def _np(t):
    return t.detach().numpy()


def _close(g, t, tol=1e-4):
    assert_close(g, _np(t) if hasattr(t, "detach") else np.asarray(t), rtol=tol, atol=tol)


def _leaves(params, device):
    """torch and grilly versions of ``params``: float arrays become leaves requiring grad,
    anything else (an int total_count) is passed as it is."""
    tp, gpar = {}, {}
    for k, v in params.items():
        if isinstance(v, np.ndarray):
            tp[k] = torch.tensor(v, requires_grad=True)
            gpar[k] = gp.asarray(v, device=device).requires_grad_()
        else:
            tp[k] = gpar[k] = v
    return tp, gpar


# name -> (parameters, a value in the support, whether cdf/icdf exist)
NEW = {
    "Cauchy": ({"loc": LOC, "scale": SCALE}, VAL, True),
    "Gumbel": ({"loc": LOC, "scale": SCALE}, VAL, True),
    "HalfNormal": ({"scale": SCALE}, POS, True),
    "StudentT": ({"df": np.array([0.8, 1.5, 4.0], np.float32), "loc": LOC, "scale": SCALE},
                 VAL, False),
    "Chi2": ({"df": SCALE * 2.0}, POS, False),
    "Geometric": ({"probs": np.array([0.2, 0.5, 1.0], np.float32)},
                  np.array([[0.0, 3.0, 0.0], [2.0, 0.0, 0.0]], np.float32), False),
    "Binomial": ({"total_count": 6, "logits": np.array([-1.0, 0.3, 2.0], np.float32)},
                 np.array([[0.0, 3.0, 6.0], [5.0, 1.0, 2.0]], np.float32), False),
    "Multinomial": ({"total_count": 6, "probs": np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]],
                                                         np.float32)},
                    np.array([[1.0, 2.0, 3.0], [0.0, 6.0, 0.0]], np.float32), False),
    "OneHotCategoricalStraightThrough": ({"logits": _RS.randn(2, 3).astype(np.float32)},
                                         np.eye(3, dtype=np.float32)[[0, 2]], False),
}


# the draws written here (not grilly.random's own law moved by an affine map)
SAMPLED = ("StudentT", "Geometric", "Binomial", "Multinomial")


@pytest.mark.parametrize("name", list(NEW))
def test_new_distributions_match_torch(device, name):
    params, value, has_cdf = NEW[name]
    tp, gpar = _leaves(params, device)
    td, g = getattr(D, name)(**tp), getattr(gd, name)(**gpar)
    assert g.batch_shape == tuple(td.batch_shape) and g.event_shape == tuple(td.event_shape)
    assert g.has_rsample == td.has_rsample
    t_lp, g_lp = td.log_prob(torch.tensor(value)), g.log_prob(gp.asarray(value, device=device))
    _close(g_lp, t_lp)
    t_tot, g_tot = t_lp.sum(), gp.sum(g_lp)
    t_h, g_h = td.entropy(), g.entropy()
    _close(g_h, t_h)
    t_tot, g_tot = t_tot + 0.5 * t_h.sum(), g_tot + 0.5 * gp.sum(g_h)
    for prop in ("mean", "variance", "stddev", "mode"):
        if name == "Multinomial" and prop == "mode":   # neither has one
            continue
        _close(getattr(g, prop), getattr(td, prop))
    if has_cdf:
        t_c, g_c = td.cdf(torch.tensor(value)), g.cdf(gp.asarray(value, device=device))
        t_i, g_i = td.icdf(torch.tensor(U)), g.icdf(gp.asarray(U, device=device))
        _close(g_c, t_c)
        _close(g_i, t_i)
        t_tot, g_tot = t_tot + t_c.sum() + t_i.sum(), g_tot + gp.sum(g_c) + gp.sum(g_i)
    t_tot.backward()
    g_tot.backward()
    for k, v in tp.items():
        if isinstance(v, torch.Tensor):
            _close(gpar[k].grad, v.grad, 1e-3)
    if name not in SAMPLED:   # draws of grilly.random's laws moved by loc and scale: below
        return
    # draws: torch's shapes, the law's moments (5 standard errors where the variance is finite)
    gp.random.seed(11)
    s = g.sample((N,))
    assert s.shape == tuple(td.sample((N,)).shape) and g.sample().shape == tuple(td.sample().shape)
    x = np.asarray(s, np.float64)
    mean, var = _np(td.mean).astype(np.float64), _np(td.variance).astype(np.float64)
    ok = np.isfinite(mean) & np.isfinite(var)
    assert np.all(np.abs(x.mean(0) - mean)[ok] <= 5 * np.sqrt(var / N)[ok] + 1e-6)
    if name == "StudentT":   # heavy tails (df 0.8 and 1.5): the median is loc instead
        med = np.broadcast_to(np.asarray(params["loc"]), x.shape[1:])
        assert np.all(np.abs(np.median(x, 0) - med) < 0.25 * np.asarray(SCALE) + 0.1)


def test_new_distributions_expand_and_repr(device):
    for name in ("StudentT", "Chi2", "Multinomial"):   # three parameters, a property, a wrapper
        params = NEW[name][0]
        tp, gpar = _leaves(params, device)
        td, g = getattr(D, name)(**tp), getattr(gd, name)(**gpar)
        shape = (4,) + tuple(td.batch_shape)
        te, ge = td.expand(shape), g.expand(shape)
        assert ge.batch_shape == tuple(te.batch_shape)
        assert ge.sample((2,)).shape == tuple(te.sample((2,)).shape)
        v = te.sample()
        _close(ge.log_prob(gp.asarray(_np(v), device=device)), te.log_prob(v))
        assert type(ge) is type(g)
    assert repr(gd.Cauchy(0.0, 1.0)) == repr(D.Cauchy(0.0, 1.0))
    st = gd.OneHotCategoricalStraightThrough(logits=gp.zeros((3,), device=device)).expand((2,))
    assert type(st) is gd.OneHotCategoricalStraightThrough and st.rsample().shape == (2, 3)


def test_binomial_and_multinomial_details(device):
    p = np.array([0.2, 0.7], np.float32)
    for expand in (True, False):
        _close(gd.Binomial(3, gp.asarray(p, device=device)).enumerate_support(expand),
               D.Binomial(3, torch.tensor(p)).enumerate_support(expand))
    # an Array total_count: entropy would need its value on the host
    n = gp.asarray(np.array([3.0, 3.0], np.float32), device=device)
    with pytest.raises(NotImplementedError, match="Binomial.entropy: total_count"):
        gd.Binomial(n, gp.asarray(p, device=device)).entropy()
    k = np.array([1.0, 3.0], np.float32)
    _close(gd.Binomial(n, gp.asarray(p, device=device)).log_prob(gp.asarray(k, device=device)),
           D.Binomial(torch.tensor([3.0, 3.0]), torch.tensor(p)).log_prob(torch.tensor([1., 3.])))
    # a zero probability category with a zero count adds nothing (torch's -inf * 0 rule)
    q = np.array([0.0, 0.4, 0.6], np.float32)
    v = np.array([0.0, 2.0, 1.0], np.float32)
    _close(gd.Multinomial(3, gp.asarray(q, device=device)).log_prob(gp.asarray(v, device=device)),
           D.Multinomial(3, torch.tensor(q)).log_prob(torch.tensor(v)))
    # straight-through: the gradient of rsample is the gradient of probs, whatever was drawn
    lg = NEW["OneHotCategoricalStraightThrough"][0]["logits"]
    w = _RS.randn(5, 2, 3).astype(np.float32)
    tl, gl = torch.tensor(lg, requires_grad=True), gp.asarray(lg, device=device).requires_grad_()
    (D.OneHotCategoricalStraightThrough(logits=tl).rsample((5,)) * torch.tensor(w)).sum().backward()
    gp.sum(gd.OneHotCategoricalStraightThrough(logits=gl).rsample((5,))
           * gp.asarray(w, device=device)).backward()
    _close(gl.grad, tl.grad)


def test_pathwise_rsample_gradients_at_fixed_noise(device):
    """d rsample / d parameter equals the analytic derivative at the noise that was drawn."""
    loc = gp.asarray(np.array([0.3, -1.0], np.float32), device=device)
    sc = gp.asarray(np.array([0.7, 2.0], np.float32), device=device)

    def grads(make, *params):
        leaves = [p.detach().requires_grad_() for p in params]
        gp.random.seed(5)
        x = make(*leaves).rsample((64,))
        gp.sum(x).backward()
        return np.asarray(x.detach(), np.float64), [np.asarray(p.grad, np.float64) for p in leaves]

    l0, s0 = np.asarray(loc, np.float64), np.asarray(sc, np.float64)
    for cls in (gd.Laplace, gd.Cauchy, gd.Gumbel, gd.Normal):
        x, (gl, gs) = grads(cls, loc, sc)          # x = loc + scale * eps
        np.testing.assert_allclose(gl, 64.0, rtol=1e-5)
        np.testing.assert_allclose(gs, ((x - l0) / s0).sum(0), rtol=1e-3, atol=1e-3)
    x, (gs,) = grads(gd.HalfNormal, sc)
    np.testing.assert_allclose(gs, (x / s0).sum(0), rtol=1e-3, atol=1e-3)
    x, (gr,) = grads(gd.Exponential, sc)           # x = E / rate
    np.testing.assert_allclose(gr, (-x / s0).sum(0), rtol=1e-3, atol=1e-3)
    hi = loc + 3.0
    x, (glo, ghi) = grads(gd.Uniform, loc, hi)     # x = low + u (high - low)
    u = (x - l0) / 3.0
    np.testing.assert_allclose(glo, (1.0 - u).sum(0), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(ghi, u.sum(0), rtol=1e-3, atol=1e-3)
    x, (gl, gs) = grads(gd.LogNormal, loc, sc)     # x = exp(loc + scale * eps)
    np.testing.assert_allclose(gl, x.sum(0), rtol=1e-3)
    np.testing.assert_allclose(gs, (x * (np.log(x) - l0) / s0).sum(0), rtol=1e-3, atol=1e-3)
    x, (gd_, gl, gs) = grads(lambda d, a, b: gd.StudentT(d, a, b), sc * 3.0, loc, sc)
    np.testing.assert_allclose(gl, 64.0, rtol=1e-5)
    np.testing.assert_allclose(gs, ((x - l0) / s0).sum(0), rtol=1e-3, atol=1e-3)


def test_beta_mode_below_one_as_torch(device):
    a = np.array([0.5, 2.0, 0.5, 3.0, 0.7], np.float32)
    b = np.array([2.0, 0.5, 0.5, 3.0, 0.9], np.float32)
    _close(gd.Beta(gp.asarray(a, device=device), gp.asarray(b, device=device)).mode,
           D.Beta(torch.tensor(a), torch.tensor(b)).mode)


def test_tanh_transform_cache_as_in_sac(device):
    """SAC's squashed Gaussian: log_prob of its own saturated rsample uses the cached pre-tanh
    value (finite), with torch's value and gradients at the same draw."""
    mu = np.array([0.1, 9.5, -12.0], np.float32)
    sd = np.array([0.5, 0.2, 0.3], np.float32)
    gm, gs = gp.asarray(mu, device=device).requires_grad_(), gp.asarray(sd, device=device)
    gs.requires_grad_()
    pi = gd.TransformedDistribution(gd.Normal(gm, gs), [gd.TanhTransform(cache_size=1)])
    gp.random.seed(3)   # the pre-tanh draw, to give torch the same noise
    eps = (np.asarray(gd.Normal(mu, sd).rsample()) - mu) / sd
    gp.random.seed(3)
    a = pi.rsample()
    lp = pi.log_prob(a)
    tm, ts = torch.tensor(mu, requires_grad=True), torch.tensor(sd, requires_grad=True)
    tpi = D.TransformedDistribution(D.Normal(tm, ts), [D.TanhTransform(cache_size=1)])
    ta = tpi.transforms[0](tm + ts * torch.tensor(eps.astype(np.float32)))
    tlp = tpi.log_prob(ta)
    assert np.all(np.isfinite(np.asarray(lp.detach())))
    _close(a, ta)
    _close(lp, tlp, 1e-3)
    tlp.sum().backward()
    gp.sum(lp).backward()
    _close(gm.grad, tm.grad, 1e-3)
    _close(gs.grad, ts.grad, 1e-3)
    with pytest.raises(ValueError, match="TanhTransform: cache_size must be 0 or 1"):
        gd.TanhTransform(cache_size=2)
    t = gd.ExpTransform()
    assert t.with_cache(1)._cache_size == 1 and t._cache_size == 0 and t.with_cache(0) is t


def test_new_transforms_match_torch(device):
    x = np.array([[0.3, 1.2, 2.5]], np.float32)
    xs = gp.asarray(x, device=device)
    pairs = [(gd.transforms.SoftplusTransform(), D.transforms.SoftplusTransform()),
             (gd.PowerTransform(2.5), D.PowerTransform(2.5)),
             (gd.PowerTransform(gp.asarray(np.array([-1.0, 0.5, 3.0], np.float32), device=device)),
              D.PowerTransform(torch.tensor([-1.0, 0.5, 3.0]))),
             (gd.ComposeTransform([gd.AffineTransform(0.5, 2.0), gd.ExpTransform(),
                                   gd.PowerTransform(0.5)]),
              D.ComposeTransform([D.AffineTransform(0.5, 2.0), D.ExpTransform(),
                                  D.PowerTransform(0.5)])),
             (gd.ComposeTransform([gd.SigmoidTransform(), gd.AffineTransform(1.0, -3.0)]).inv,
              D.ComposeTransform([D.SigmoidTransform(), D.AffineTransform(1.0, -3.0)]).inv)]
    for g, t in pairs:
        tx = torch.tensor(x)
        if isinstance(t, D.ComposeTransform) and isinstance(t.parts[0], D.transforms._InverseTransform):
            tx = torch.tensor(x) * 0.3 - 0.5   # inside (-2, 1), the inverse's domain
            xs_ = gp.asarray(_np(tx), device=device)
        else:
            xs_ = xs
        ty, gy = t(tx), g(xs_)
        _close(gy, ty)
        _close(g.inv(gy), t.inv(ty))
        _close(g.log_abs_det_jacobian(xs_, gy), t.log_abs_det_jacobian(tx, ty), 1e-3)
        assert g.forward_shape((2, 3)) == tuple(t.forward_shape((2, 3)))
        assert g.sign == t.sign if not isinstance(g.sign, gp.Array) else True
    # a TransformedDistribution of a composition, its log_prob and gradients as torch's
    loc = np.array([0.2, -0.3, 0.1], np.float32)
    tl, gl = torch.tensor(loc, requires_grad=True), gp.asarray(loc, device=device)
    gl.requires_grad_()
    td = D.TransformedDistribution(D.Normal(tl, 0.5), D.ComposeTransform(
        [D.ExpTransform(), D.transforms.SoftplusTransform()]))
    gdd = gd.TransformedDistribution(gd.Normal(gl, 0.5), gd.ComposeTransform(
        [gd.ExpTransform(), gd.transforms.SoftplusTransform()]))
    y = np.array([0.9, 1.5, 2.0], np.float32)
    t_lp, g_lp = td.log_prob(torch.tensor(y)), gdd.log_prob(gp.asarray(y, device=device))
    _close(g_lp, t_lp, 1e-3)
    t_lp.sum().backward()
    gp.sum(g_lp).backward()
    _close(gl.grad, tl.grad, 1e-3)


def test_transform_parameters_broadcast_the_batch(device):
    """AffineTransform(1, scale of shape (2,)) on Normal(0., 1.): a batch of 2, as torch."""
    sc = np.array([-2.0, 3.0], np.float32)
    td = D.TransformedDistribution(D.Normal(0.0, 1.0), [D.AffineTransform(1.0, torch.tensor(sc))])
    g = gd.TransformedDistribution(gd.Normal(0.0, 1.0),
                                   [gd.AffineTransform(1.0, gp.asarray(sc, device=device))])
    assert g.batch_shape == tuple(td.batch_shape) == (2,)
    assert g.sample((4,)).shape == tuple(td.sample((4,)).shape)
    v = np.array([[0.5, 2.0], [-1.0, 4.0]], np.float32)
    _close(g.log_prob(gp.asarray(v, device=device)), td.log_prob(torch.tensor(v)))
    _close(g.cdf(gp.asarray(v, device=device)), td.cdf(torch.tensor(v)))
    assert g.expand((3, 2)).sample().shape == (3, 2)


def test_validation_as_torch():
    """Host values outside a dependent support, bad parameters and sizes: torch's errors."""
    for call in (lambda m: m.Categorical(m_probs(m, [0.5, 0.5])).log_prob(m_val(m, 5)),
                 lambda m: m.TransformedDistribution(m.Normal(0.0, 1.0), [m.SigmoidTransform()])
                 .log_prob(m_val(m, 1.5)),
                 lambda m: m.Binomial(3, m_probs(m, 0.5)).log_prob(m_val(m, 4.0)),
                 lambda m: m.Multinomial(3, m_probs(m, [0.5, 0.5])).log_prob(m_val(m, [2.0, 2.0])),
                 lambda m: m.Geometric(0.0),
                 lambda m: m.Binomial(-1, m_probs(m, 0.5)),
                 lambda m: m.StudentT(0.0),
                 lambda m: m.HalfNormal(-1.0),
                 lambda m: m.Cauchy(0.0, 0.0),
                 lambda m: m.Chi2(-2.0)):
        with pytest.raises(ValueError):
            call(D)
        with pytest.raises(ValueError):
            call(gd)
    with pytest.raises(ValueError, match="Categorical.log_prob: expected value to be within"):
        gd.Categorical(gp.asarray([0.5, 0.5])).log_prob(5)
    with pytest.raises(TypeError, match="sample_shape"):
        gd.Normal(0.0, 1.0).sample((2.5,))
    with pytest.raises(TypeError):
        D.Normal(0.0, 1.0).sample((2.5,))
    with pytest.raises(NotImplementedError, match="Multinomial: total_count must be an int"):
        gd.Multinomial(gp.asarray([3.0]), gp.asarray([0.5, 0.5]))


def m_probs(m, v):
    return torch.tensor(v) if m is D else gp.asarray(np.asarray(v, np.float32))


def m_val(m, v):
    return torch.tensor(v) if m is D else v   # grilly: host data (checked without a read)


KL_NEW = {
    "Cauchy": ({"loc": LOC, "scale": SCALE}, {"loc": LOC * 0.5, "scale": SCALE[::-1].copy()}),
    "Gumbel": ({"loc": LOC, "scale": SCALE}, {"loc": LOC * 0.5, "scale": SCALE[::-1].copy()}),
    "HalfNormal": ({"scale": SCALE}, {"scale": SCALE[::-1].copy()}),
    "Geometric": ({"probs": np.array([0.2, 0.5, 0.9], np.float32)},
                  {"logits": np.array([0.3, -1.0, 0.5], np.float32)}),
    "Binomial": ({"total_count": 5, "probs": np.array([0.2, 0.5, 0.9], np.float32)},
                 {"total_count": 5, "probs": np.array([0.4, 0.1, 0.7], np.float32)}),
    "Chi2": ({"df": SCALE * 2.0}, {"df": SCALE[::-1] + 1.0}),
}


@pytest.mark.parametrize("name", list(KL_NEW))
def test_kl_of_new_pairs_matches_torch(device, name):
    pa, qa = KL_NEW[name]
    tp, gpp = _leaves(pa, device)
    tq, gq = _leaves(qa, device)
    cls_t, cls_g = getattr(D, name), getattr(gd, name)
    t = D.kl_divergence(cls_t(**tp), cls_t(**tq))
    g = gd.kl_divergence(cls_g(**gpp), cls_g(**gq))
    _close(g, t, 1e-3)
    t.sum().backward()
    gp.sum(g).backward()
    for tt, gg in ((tp, gpp), (tq, gq)):
        for k, v in tt.items():
            if isinstance(v, torch.Tensor):
                _close(gg[k].grad, v.grad, 2e-3)
    if name == "Binomial":   # more trials in p than in q: inf; fewer: not implemented (torch)
        pr = gp.asarray([0.3], device=device)
        kl = gd.kl_divergence(gd.Binomial(6, pr), gd.Binomial(5, pr))
        assert np.isinf(np.asarray(kl)).all()
        with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
            gd.kl_divergence(gd.Binomial(4, pr), gd.Binomial(5, pr))
    with pytest.raises(NotImplementedError, match="kl_divergence: no KL"):
        gd.kl_divergence(gd.StudentT(gp.asarray([3.0], device=device)), cls_g(**gq))


def test_mixture_same_family_as_torch(device):
    """A Gaussian mixture (an MDN's head): log_prob, moments, cdf and gradients as torch's."""
    lg = _RS.randn(2, 3).astype(np.float32)
    mu = _RS.randn(2, 3, 2).astype(np.float32)
    sd = _RS.uniform(0.5, 1.5, (2, 3, 2)).astype(np.float32)
    tp, gpar = _leaves({"lg": lg, "mu": mu, "sd": sd}, device)
    tm = D.MixtureSameFamily(D.Categorical(logits=tp["lg"]),
                             D.Independent(D.Normal(tp["mu"], tp["sd"]), 1))
    gm = gd.MixtureSameFamily(gd.Categorical(logits=gpar["lg"]),
                              gd.Independent(gd.Normal(gpar["mu"], gpar["sd"]), 1))
    assert gm.batch_shape == tuple(tm.batch_shape) and gm.event_shape == tuple(tm.event_shape)
    x = _RS.randn(4, 2, 2).astype(np.float32)
    t_lp, g_lp = tm.log_prob(torch.tensor(x)), gm.log_prob(gp.asarray(x, device=device))
    _close(g_lp, t_lp)
    _close(gm.mean, tm.mean)
    _close(gm.variance, tm.variance)
    t_lp.sum().backward()
    gp.sum(g_lp).backward()
    for k in tp:
        _close(gpar[k].grad, tp[k].grad, 1e-3)
    gp.random.seed(2)
    s = np.asarray(gm.sample((N,)), np.float64)
    assert s.shape == tuple(tm.sample((N,)).shape)
    mean, var = _np(tm.mean).astype(np.float64), _np(tm.variance).astype(np.float64)
    assert np.all(np.abs(s.mean(0) - mean) <= 5 * np.sqrt(var / N))
    # univariate components, one mixture for a batch of them: cdf too
    w = np.array([0.3, 0.7], np.float32)
    locs = np.array([[0.0, 3.0], [1.0, -1.0]], np.float32)
    t2 = D.MixtureSameFamily(D.Categorical(torch.tensor(w)), D.Normal(torch.tensor(locs), 1.0))
    g2 = gd.MixtureSameFamily(gd.Categorical(gp.asarray(w, device=device)),
                              gd.Normal(gp.asarray(locs, device=device), 1.0))
    v = np.array([0.5, 2.0], np.float32)
    _close(g2.cdf(gp.asarray(v, device=device)), t2.cdf(torch.tensor(v)))
    assert g2.sample((3,)).shape == (3, 2) and g2.expand((4, 2)).sample().shape == (4, 2)
    with pytest.raises(ValueError, match="MixtureSameFamily: the mixture has 3 components"):
        gd.MixtureSameFamily(gd.Categorical(logits=gp.zeros((3,), device=device)),
                             gd.Normal(gp.zeros((2,), device=device), 1.0))


@pytest.mark.parametrize("name", ["RelaxedBernoulli", "RelaxedOneHotCategorical"])
def test_relaxed_distributions_as_torch(device, name):
    lg = _RS.randn(2, 3).astype(np.float32)
    tl, gl = torch.tensor(lg, requires_grad=True), gp.asarray(lg, device=device)
    gl.requires_grad_()
    # a temperature per batch row (torch's relaxed categorical takes one number only)
    temp = np.array([[0.4], [1.5]] if name == "RelaxedBernoulli" else 0.6, np.float32)
    td = getattr(D, name)(torch.tensor(temp), logits=tl)
    g = getattr(gd, name)(gp.asarray(temp, device=device), logits=gl)
    assert g.batch_shape == tuple(td.batch_shape) and g.event_shape == tuple(td.event_shape)
    with torch.no_grad():
        v = td.sample((3,))
    t_lp, g_lp = td.log_prob(v), g.log_prob(gp.asarray(_np(v), device=device))
    _close(g_lp, t_lp, 1e-3)
    t_lp.sum().backward()
    gp.sum(g_lp).backward()
    _close(gl.grad, tl.grad, 1e-3)
    # reparameterized draws in the support, with gradients to the logits
    x = g.rsample((5,))
    assert x.shape == tuple(td.rsample((5,)).shape) and x.requires_grad
    xs = np.asarray(x.detach())
    assert np.all((xs > 0) & (xs < 1))
    if name == "RelaxedOneHotCategorical":
        np.testing.assert_allclose(xs.sum(-1), 1.0, rtol=1e-5)
