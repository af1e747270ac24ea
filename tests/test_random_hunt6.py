"""A NumPy / PyTorch random-numbers user's hunt: numpy.random.Generator's laws (gamma,
standard_gamma, beta, binomial, multinomial, dirichlet, geometric, laplace, logistic, lognormal,
standard_t, chisquare, gumbel, weibull, pareto, rayleigh, triangular, standard_cauchy,
standard_exponential, multivariate_normal) against scipy.stats (KS / chi-square at fixed seeds,
means and variances within a few standard errors), NumPy's errors, shapes and dtypes; array
parameters (numpy's normal(loc=array) drew one number for every element); torch's
multinomial, randperm, bernoulli, normal, randint_like, Generator, rng state and the in-place
fills (bernoulli_, exponential_, geometric_, random_, cauchy_, log_normal_) against torch's
semantics; gp.rand(generator=g) no longer draws from the default generator; the same seed
gives the same numbers on every device (up to each device's log/exp rounding)."""
import math
import warnings

import numpy as np
import pytest

import grilly as gp

stats = pytest.importorskip("scipy.stats")
torch = pytest.importorskip("torch")

N = 20_000
F64 = gp.float64


def _cpu():
    return gp.backends.registry.device("cpu")


def _np(x):
    return np.asarray(x, dtype=np.float64)


def _moments_ok(x, dist, k=5.0):
    """Sample mean and variance within k standard errors of the law's (where finite)."""
    x = _np(x).ravel()
    n = x.size
    m, v, kurt = (float(t) for t in dist.stats(moments="mvk"))
    if math.isfinite(m) and math.isfinite(v):
        assert abs(x.mean() - m) < k * math.sqrt(v / n), (x.mean(), m)
    if math.isfinite(kurt):
        assert abs(x.var() - v) < k * v * math.sqrt((kurt + 2.0) / n), (x.var(), v)


def _law_ok(x, dist, k=5.0):
    """A continuous law: KS against scipy's CDF (p > 1e-6 at a fixed seed) and its moments."""
    assert stats.kstest(_np(x).ravel(), dist.cdf).pvalue > 1e-6
    _moments_ok(x, dist, k)


def _counts_ok(x, dist, lo=None):
    """A discrete law: chi-square of the counts against scipy's pmf (cells with fewer than 5
    expected merged into the tails), and its moments."""
    x = _np(x).ravel().astype(np.int64)
    lo = int(x.min()) if lo is None else lo
    ks = np.arange(lo, int(x.max()) + 1)
    exp = dist.pmf(ks) * x.size
    exp[0] += dist.cdf(lo - 1) * x.size
    exp[-1] += dist.sf(ks[-1]) * x.size
    obs = np.bincount(x - lo, minlength=ks.size).astype(float)
    # merge cells from both ends until each holds >= 5 expected
    cells_o, cells_e, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(obs, exp):
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5:
            cells_o.append(acc_o)
            cells_e.append(acc_e)
            acc_o = acc_e = 0.0
    cells_o[-1] += acc_o
    cells_e[-1] += acc_e
    cells_e = np.asarray(cells_e) * (sum(cells_o) / sum(cells_e))
    assert stats.chisquare(cells_o, cells_e).pvalue > 1e-6
    _moments_ok(x, dist)


# ---- numpy's continuous laws against scipy ---------------------------------------------------
LAWS = {
    "gamma": (lambda r, d: r.gamma(2.5, 2.0, N, dtype=F64, device=d), stats.gamma(2.5, scale=2)),
    "gamma_f32": (lambda r, d: r.gamma(7.0, size=N, device=d), stats.gamma(7.0)),
    "standard_gamma_small": (lambda r, d: r.standard_gamma(0.3, N, dtype=F64, device=d),
                             stats.gamma(0.3)),
    "beta": (lambda r, d: r.beta(0.7, 2.0, N, dtype=F64, device=d), stats.beta(0.7, 2.0)),
    "beta_small": (lambda r, d: r.beta(0.3, 0.4, N, dtype=F64, device=d), stats.beta(0.3, 0.4)),
    "chisquare": (lambda r, d: r.chisquare(3.5, N, dtype=F64, device=d), stats.chi2(3.5)),
    "standard_t": (lambda r, d: r.standard_t(5.0, N, dtype=F64, device=d), stats.t(5.0)),
    "laplace": (lambda r, d: r.laplace(1.0, 2.0, N, dtype=F64, device=d), stats.laplace(1, 2)),
    "logistic": (lambda r, d: r.logistic(-1.0, 0.5, N, dtype=F64, device=d),
                 stats.logistic(-1, 0.5)),
    "lognormal": (lambda r, d: r.lognormal(0.3, 0.5, N, dtype=F64, device=d),
                  stats.lognorm(0.5, scale=math.exp(0.3))),
    "gumbel": (lambda r, d: r.gumbel(1.0, 2.0, N, dtype=F64, device=d), stats.gumbel_r(1, 2)),
    "weibull": (lambda r, d: r.weibull(1.7, N, dtype=F64, device=d), stats.weibull_min(1.7)),
    "pareto": (lambda r, d: r.pareto(4.5, N, dtype=F64, device=d), stats.lomax(4.5)),
    "rayleigh": (lambda r, d: r.rayleigh(2.0, N, dtype=F64, device=d), stats.rayleigh(scale=2)),
    "triangular": (lambda r, d: r.triangular(-1.0, 0.5, 3.0, N, dtype=F64, device=d),
                   stats.triang(1.5 / 4.0, loc=-1.0, scale=4.0)),
    "standard_cauchy": (lambda r, d: r.standard_cauchy(N, dtype=F64, device=d), stats.cauchy()),
    "standard_exponential": (lambda r, d: r.standard_exponential(N, F64, device=d),
                             stats.expon()),
}


@pytest.mark.parametrize("name", list(LAWS))
def test_continuous_laws_follow_scipy(device, name):
    draw, dist = LAWS[name]
    x = draw(gp.random.default_rng(61), device)
    assert x.shape == (N,) and x.device == device
    _law_ok(x, dist)


def test_beta_of_tiny_parameters_stays_finite(device):
    # X / (X + Y) of two gammas that both underflow to 0 would be nan: drawn from their logs
    x = _np(gp.random.default_rng(60).beta(0.02, 0.03, 4000, device=device))
    assert np.isfinite(x).all() and x.min() >= 0 and x.max() <= 1
    want = stats.beta(0.02, 0.03).cdf(0.5)
    assert abs((x < 0.5).mean() - want) < 5 * math.sqrt(want * (1 - want) / 4000)


def test_array_parameters_draw_per_element(device):
    # numpy's rng.normal(loc=array) draws one number per element: grilly drew one number and
    # broadcast it (normal(Array([0, 10])) gave [z, 10 + z]), and lists were a TypeError
    r = gp.random.default_rng(62)
    x = _np(r.normal(gp.asarray([0.0, 10.0], device=device), 1.0, device=device))
    assert x.shape == (2,) and x[1] - x[0] != 10.0
    y = _np(r.normal([0.0, 10.0], [1.0, 2.0], size=(N // 2, 2), device=device))
    _law_ok(y[:, 0], stats.norm(0, 1))
    _law_ok(y[:, 1], stats.norm(10, 2))
    u = _np(r.uniform([0.0, -1.0], [1.0, 3.0], size=(N // 2, 2), device=device))
    _law_ok(u[:, 1], stats.uniform(-1, 4))
    e = _np(r.exponential(gp.asarray([1.0, 3.0], device=device), (N // 2, 2), device=device))
    _law_ok(e[:, 1], stats.expon(scale=3))
    g = _np(r.gamma(gp.asarray([[0.5], [4.0]], dtype=F64, device=device), 2.0, (2, N // 2),
                    device=device))
    assert g.dtype == np.float64   # a float64 Array parameter: float64 draws
    _law_ok(g[0], stats.gamma(0.5, scale=2))
    _law_ok(g[1], stats.gamma(4.0, scale=2))


# ---- numpy's discrete laws -------------------------------------------------------------------
@pytest.mark.parametrize("n, p", [(20, 0.2), (500, 0.7)])   # inversion; BTRS of 1 - p
def test_binomial_follows_scipy(device, n, p):
    x = gp.random.default_rng(63).binomial(n, p, 5000, device=device)
    assert x.dtype == gp.int64 and x.shape == (5000,)
    assert 0 <= int(gp.min(x)) and int(gp.max(x)) <= n
    _counts_ok(x, stats.binom(n, p))


def test_binomial_array_parameters_and_edges(device):
    r = gp.random.default_rng(64)
    n = gp.asarray([0.0, 7.9, 40.0, 1000.0], device=device)   # 7.9: rounded down, as numpy
    x = _np(r.binomial(n, gp.asarray([0.5, 1.0, 0.0, 0.02], device=device), (3000, 4),
                       device=device))
    assert (x[:, 0] == 0).all() and (x[:, 1] == 7).all() and (x[:, 2] == 0).all()
    _counts_ok(x[:, 3], stats.binom(1000, 0.02))   # a mixed array runs both methods
    # an Array's invalid parameters are not read back: -1 (numpy raises for numbers)
    bad = _np(r.binomial(gp.asarray([-1.0, 3.0], device=device),
                         gp.asarray([0.5, 1.5], device=device)))
    assert (bad == -1).all()


def test_geometric_follows_scipy(device):
    x = gp.random.default_rng(65).geometric(0.3, N, device=device)
    assert x.dtype == gp.int64
    _counts_ok(x, stats.geom(0.3), lo=1)
    assert (_np(gp.random.default_rng(1).geometric(1.0, 50, device=device)) == 1).all()


def test_multinomial_counts(device):
    p = np.array([0.2, 0.3, 0.1, 0.4])
    x = _np(gp.random.default_rng(66).multinomial(30, p, 4000, device=device))
    assert x.shape == (4000, 4) and (x.sum(axis=1) == 30).all()
    for i in range(4):
        _moments_ok(x[:, i], stats.binom(30, p[i]))
    # the covariance of two categories is -n p_i p_j
    c = np.cov(x[:, 0], x[:, 3])[0, 1]
    assert abs(c - (-30 * p[0] * p[3])) < 0.25
    # batches: n and pvals broadcast (numpy's shapes), the last pval is what the others leave
    y = gp.random.default_rng(67).multinomial([5, 9], [[0.5, 0.5], [0.0, 0.9]], device=device)
    want = np.random.default_rng(0).multinomial([5, 9], [[0.5, 0.5], [0.0, 0.9]])
    assert y.shape == want.shape and y.dtype == gp.int64
    assert _np(y)[1].tolist() == [0, 9]
    z = gp.random.default_rng(68).multinomial(7, [0.5, 0.5], size=(3, 2), device=device)
    assert z.shape == np.random.default_rng(0).multinomial(7, [0.5, 0.5], size=(3, 2)).shape


def test_dirichlet_marginals(device):
    a = np.array([0.5, 1.0, 2.0])
    x = _np(gp.random.default_rng(69).dirichlet(a, 5000, dtype=F64, device=device))
    assert x.shape == (5000, 3)
    np.testing.assert_allclose(x.sum(axis=1), 1.0, rtol=1e-12)
    for i in range(3):
        _law_ok(x[:, i], stats.beta(a[i], a.sum() - a[i]))
    # tiny concentrations stay on the simplex (no 0/0), a zero concentration gives 0
    t = _np(gp.random.default_rng(70).dirichlet([0.001, 0.002, 0.0], 200, device=device))
    assert np.isfinite(t).all() and (t[:, 2] == 0).all()
    np.testing.assert_allclose(t.sum(axis=1), 1.0, rtol=1e-5)


def test_multivariate_normal(device):
    mean = np.array([1.0, -2.0, 0.5])
    a = np.array([[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.2, -0.3, 0.7]])
    cov = a @ a.T
    r = gp.random.default_rng(71)
    for method, dev in (("svd", device), ("cholesky", _cpu())):
        x = _np(r.multivariate_normal(mean, cov, 8000, method=method, dtype=F64, device=dev))
        assert x.shape == (8000, 3)
        assert np.abs(x.mean(axis=0) - mean).max() < 5 * math.sqrt(cov.diagonal().max() / 8000)
        assert np.abs(np.cov(x.T) - cov).max() < 0.1
        # a projection is normal with the projected variance
        w = np.array([0.3, -1.0, 2.0])
        _law_ok(x @ w, stats.norm(w @ mean, math.sqrt(w @ cov @ w)))
    # a singular (positive semi-definite) covariance is fine with svd: numpy's default
    s = _np(r.multivariate_normal([0, 0], [[1, 1], [1, 1]], 100, device=device))
    np.testing.assert_allclose(s[:, 0], s[:, 1], atol=1e-5)
    assert r.multivariate_normal([0, 0], np.eye(2), device=device).shape == (2,)


# ---- shapes, dtypes and numpy's errors ---------------------------------------------------------
def test_default_dtypes_and_shapes():
    # grilly.random's rule: floats float32 unless dtype= (numpy's are float64), integers int64
    # (the rule is the same on every device: run on the default one)
    r, device = gp.random.default_rng(72), None
    for name in ("gamma", "standard_gamma", "chisquare", "standard_t", "pareto", "weibull"):
        x = getattr(r, name)(2.0, size=(2, 3), device=device)
        assert (x.shape, x.dtype) == ((2, 3), gp.float32), name
        assert getattr(r, name)(2.0, size=4, dtype=F64, device=device).dtype == F64
    for name in ("laplace", "logistic", "lognormal", "gumbel"):
        assert getattr(r, name)(size=(3,), device=device).dtype == gp.float32
        assert getattr(r, name)(device=device).shape == ()   # size None: 0-d, as numpy's scalar
    assert r.beta(1.0, 2.0, 5, device=device).dtype == gp.float32
    assert r.binomial(5, 0.5, 3, dtype=gp.int32, device=device).dtype == gp.int32
    assert r.geometric(0.5, (2, 2), device=device).dtype == gp.int64
    assert r.dirichlet([1, 1], (4, 2), device=device).shape == (4, 2, 2)
    assert r.standard_cauchy((2, 5), device=device).shape == (2, 5)
    # parameters broadcast against size as numpy's
    assert r.gamma([1.0, 2.0], size=(3, 2), device=device).shape == (3, 2)
    with pytest.raises(ValueError):
        np.random.default_rng(0).gamma([1.0, 2.0], size=3)
    with pytest.raises(ValueError, match="gamma"):
        r.gamma([1.0, 2.0], size=3, device=device)
    with pytest.raises(TypeError, match="out"):
        r.standard_gamma(1.0, 3, out=gp.zeros(3))


BAD = [  # (method, args): numpy raises ValueError for every one
    ("gamma", (-1.0,)), ("gamma", (1.0, -1.0)), ("standard_gamma", (-0.5,)),
    ("beta", (0.0, 1.0)), ("beta", (1.0, -2.0)), ("binomial", (-1, 0.5)),
    ("binomial", (5, 1.5)), ("geometric", (0.0,)), ("geometric", (1.5,)),
    ("laplace", (0.0, -1.0)), ("logistic", (0.0, -1.0)), ("lognormal", (0.0, -1.0)),
    ("standard_t", (0.0,)), ("chisquare", (0.0,)), ("gumbel", (0.0, -1.0)),
    ("weibull", (-1.0,)), ("pareto", (0.0,)), ("rayleigh", (-1.0,)),
    ("triangular", (1.0, 0.0, 2.0)), ("triangular", (0.0, 3.0, 2.0)),
    ("triangular", (1.0, 1.0, 1.0)), ("dirichlet", ([1.0, -1.0],)),
    ("dirichlet", ([[1.0, 2.0]],)), ("multinomial", (-1, [0.5, 0.5])),
    ("multinomial", (5, [-0.1, 1.1])), ("multinomial", (5, [0.8, 0.7, 0.1])),
    ("multivariate_normal", ([0.0, 0.0, 0.0], np.eye(2))),
    ("normal", (0.0, [1.0, -1.0])), ("exponential", (-1.0,)), ("uniform", (2.0, 1.0)),
]


@pytest.mark.parametrize("name, args", BAD)
def test_numpys_errors(name, args):
    with pytest.raises(ValueError):
        getattr(np.random.default_rng(0), name)(*args)
    with pytest.raises(ValueError, match=name):
        getattr(gp.random.default_rng(0), name)(*args)


def test_check_valid_and_other_argument_errors():
    r, nr = gp.random.default_rng(0), np.random.default_rng(0)
    bad_cov = [[1.0, 2.0], [2.0, 1.0]]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nr.multivariate_normal([0, 0], bad_cov)
        r.multivariate_normal([0, 0], bad_cov)
    assert [type(x.message) for x in w] == [RuntimeWarning, RuntimeWarning]
    with pytest.raises(ValueError, match="positive-semidefinite"):
        r.multivariate_normal([0, 0], bad_cov, check_valid="raise")
    for call in (lambda g: g.multivariate_normal([0, 0], np.eye(2), check_valid="bad"),):
        with pytest.raises(ValueError):
            call(nr)
        with pytest.raises(ValueError, match="check_valid"):
            call(r)
    with pytest.raises(TypeError, match="gamma"):
        r.gamma("a")
    with pytest.raises(TypeError, match="beta"):
        r.beta(True, 1.0)
    with pytest.raises(ValueError, match="method"):
        r.standard_exponential(3, method="x")
    # an Array's invalid parameters are not read back: nan, as poisson's rates
    g = _np(r.gamma(gp.asarray([1.0, -1.0, 0.0, float("nan")])))
    assert np.isfinite(g[0]) and np.isnan(g[1]) and g[2] == 0 and np.isnan(g[3])
    assert np.isnan(_np(r.bernoulli(gp.asarray([0.5, 1.5])))[1])


def test_module_functions_use_the_default_generator():
    gp.random.seed(5)
    a = _np(gp.random.gamma(2.0, size=10))
    b = _np(gp.random.default_rng(5).gamma(2.0, size=10))
    np.testing.assert_array_equal(a, b)
    assert gp.random.binomial(10, 0.5, 3).dtype == gp.int64


# ---- the same seed, the same numbers, on every device ----------------------------------------
SAME = {
    "gamma": lambda r, d: r.gamma(0.7, 2.0, 500, dtype=F64, device=d),
    "beta": lambda r, d: r.beta(2.0, 3.0, 500, device=d),
    "binomial": lambda r, d: r.binomial(gp.asarray([3.0, 200.0], device=d), 0.4, (250, 2),
                                        device=d),
    "multinomial": lambda r, d: r.multinomial(12, [0.2, 0.5, 0.3], 100, device=d),
    "geometric": lambda r, d: r.geometric(0.2, 300, device=d),
    "dirichlet": lambda r, d: r.dirichlet([0.3, 1.0, 4.0], 100, dtype=F64, device=d),
    "standard_t": lambda r, d: r.standard_t(3.0, 300, dtype=F64, device=d),
    "logistic": lambda r, d: r.logistic(0.0, 1.0, 300, dtype=F64, device=d),
    "mvn": lambda r, d: r.multivariate_normal([0, 1], [[2, 0.5], [0.5, 1]], 100, dtype=F64,
                                              device=d),
    "torch_multinomial": lambda r, d: gp.multinomial(
        gp.asarray([[1.0, 0.0, 3.0, 2.0]] * 20, device=d), 8, True, generator=r),
    "torch_multinomial_no_replacement": lambda r, d: gp.multinomial(
        gp.asarray([[1.0, 0.0, 3.0, 2.0]] * 20, device=d), 3, generator=r),
    "randperm": lambda r, d: gp.randperm(50, generator=r, device=d),
}


def test_same_seed_same_numbers_on_every_device(device):
    # integer draws equal exactly; floats up to each device's log/exp/cos rounding
    for name, draw in SAME.items():
        x = draw(gp.random.default_rng(73), device)
        a, b = _np(x), _np(draw(gp.random.default_rng(73), device))
        np.testing.assert_array_equal(a, b, err_msg=name)
        c = _np(draw(gp.random.default_rng(73), _cpu()))
        tol = 1e-12 if x.dtype == F64 else 1e-6
        np.testing.assert_allclose(a, c, rtol=tol, atol=tol, err_msg=name)


# ---- torch's top level -------------------------------------------------------------------------
def test_torch_multinomial_with_replacement(device):
    w = np.array([[1.0, 0.0, 3.0, 6.0], [5.0, 5.0, 0.0, 0.0]], dtype=np.float32)
    x = gp.multinomial(gp.asarray(w, device=device), 4000, replacement=True,
                       generator=gp.Generator().manual_seed(74))
    t = torch.multinomial(torch.tensor(w), 4000, replacement=True)
    assert x.shape == tuple(t.shape) and x.dtype == gp.int64 and x.device == device
    x = _np(x).astype(int)
    for row, wr in zip(x, w):
        counts = np.bincount(row, minlength=4)
        assert (counts[wr == 0] == 0).all()   # a zero weight is never drawn
        keep = wr > 0
        assert stats.chisquare(counts[keep], 4000 * wr[keep] / wr.sum()).pvalue > 1e-6
    one = gp.multinomial(gp.asarray([0.2, 0.8], device=device), 3, True)
    assert one.shape == tuple(torch.multinomial(torch.tensor([0.2, 0.8]), 3, True).shape)


def test_torch_multinomial_without_replacement(device):
    w = np.array([0.5, 0.0, 0.3, 0.2])
    rows = gp.asarray(np.tile(w, (3000, 1)), device=device)
    x = _np(gp.multinomial(rows, 3, generator=gp.Generator(75))).astype(int)
    assert x.shape == (3000, 3)
    # every row draws its three non-zero categories, each once; the first draw follows w
    assert (np.sort(x, axis=1) == [0, 2, 3]).all()
    first = np.bincount(x[:, 0], minlength=4)
    assert stats.chisquare(first[[0, 2, 3]], 3000 * w[[0, 2, 3]]).pvalue > 1e-6
    # the second draw, given the first, has torch's (numpy's) sequential law
    pairs = np.bincount(x[:, 0] * 4 + x[:, 1], minlength=16)
    cells = [(i, j) for i in (0, 2, 3) for j in (0, 2, 3) if i != j]
    want = np.array([w[i] * w[j] / (1 - w[i]) for i, j in cells])
    assert stats.chisquare([pairs[i * 4 + j] for i, j in cells], 3000 * want).pvalue > 1e-6


@pytest.mark.parametrize("probs, n, repl", [
    ([1.0, -1.0, 2.0], 1, True), ([0.0, 0.0], 1, True), ([0.0, 0.0], 1, False),
    ([1.0, 2.0], 3, False), ([1.0, 2.0], 0, True), ([[[1.0]]], 1, True),
    ([1.0, float("nan")], 1, True), ([1.0, float("inf")], 1, True)])
def test_torch_multinomial_errors_as_torch(probs, n, repl):
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.tensor(probs), n, repl)
    with pytest.raises(ValueError, match="multinomial"):
        gp.multinomial(gp.asarray(probs), n, repl)


def test_torch_multinomial_past_the_nonzero_weights_as_torch(device):
    # torch 2.13 does not raise (its docs say it does): the zero-weight categories come last
    w = [[0.0, 1.0, 0.0, 2.0]] * 3
    t = torch.multinomial(torch.tensor(w), 4)
    x = _np(gp.multinomial(gp.asarray(w, device=device), 4, generator=gp.Generator(1)))
    assert x.shape == tuple(t.shape)
    assert (np.sort(x[:, :2], axis=1) == [1, 3]).all()
    assert (np.sort(x[:, 2:], axis=1) == np.sort(t[:, 2:].numpy(), axis=1)).all()


def test_torch_multinomial_type_errors():
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.tensor([1, 2]), 1)
    with pytest.raises(TypeError, match="floating"):
        gp.multinomial(gp.asarray([1, 2]), 1)
    with pytest.raises(TypeError, match="Array"):
        gp.multinomial([0.5, 0.5], 1)
    with pytest.raises(TypeError, match="generator"):
        gp.multinomial(gp.asarray([0.5, 0.5]), 1, generator=0)


def test_randperm_bernoulli_normal_randint_like(device):
    g = gp.Generator(76)
    p = gp.randperm(40, generator=g, device=device)
    tp = torch.randperm(40)
    assert p.dtype == gp.int64 and p.device == device and p.shape == tuple(tp.shape)
    assert sorted(_np(p).astype(int).tolist()) == list(range(40))
    np.testing.assert_array_equal(_np(p), _np(gp.randperm(40, generator=gp.Generator(76),
                                                          device=device)))
    assert gp.randperm(5, dtype=gp.float32).dtype == gp.float32
    assert gp.randperm(0).shape == (0,)
    with pytest.raises(RuntimeError):
        torch.randperm(-1)
    with pytest.raises(ValueError, match="randperm"):
        gp.randperm(-1)

    probs = gp.asarray(np.linspace(0.0, 1.0, 5, dtype=np.float32), device=device)
    big = gp.broadcast_to(probs, (4000, 5))
    b = gp.bernoulli(big, generator=g)
    tb = torch.bernoulli(torch.linspace(0, 1, 5).expand(4000, 5))
    assert b.dtype == gp.float32 and b.shape == tuple(tb.shape)
    m = _np(b).mean(axis=0)
    assert m[0] == 0 and m[-1] == 1
    assert np.all(np.abs(m - np.linspace(0, 1, 5)) < 5 * np.sqrt(0.25 / 4000))
    q = gp.bernoulli(gp.zeros((4000,), dtype=F64, device=device), 0.3, generator=g)
    assert q.dtype == F64 and abs(_np(q).mean() - 0.3) < 5 * math.sqrt(0.21 / 4000)

    # normal's overloads: the broadcast shape and the Arrays' dtype, as torch's
    for mean, std in ((np.zeros((3, 1)), np.ones((1, 4))), (np.zeros(5), 2.0),
                      (1.0, np.ones((2, 2)))):
        tm = torch.tensor(mean, dtype=torch.float32) if isinstance(mean, np.ndarray) else mean
        ts = torch.tensor(std, dtype=torch.float32) if isinstance(std, np.ndarray) else std
        gm = gp.asarray(mean, dtype=gp.float32, device=device) if isinstance(
            mean, np.ndarray) else mean
        gs = gp.asarray(std, dtype=gp.float32, device=device) if isinstance(
            std, np.ndarray) else std
        x = gp.normal(gm, gs, generator=g)
        assert x.shape == tuple(torch.normal(tm, ts).shape) and x.dtype == gp.float32
    x = gp.normal(2.0, 3.0, (N,), generator=g, device=device)
    assert x.shape == tuple(torch.normal(2.0, 3.0, (N,)).shape) and x.dtype == gp.float32
    _law_ok(x, stats.norm(2, 3))
    with pytest.raises(TypeError):
        torch.normal(2.0, 3.0)
    with pytest.raises(TypeError, match="size"):
        gp.normal(2.0, 3.0)
    with pytest.raises(ValueError, match="std"):
        gp.normal(gp.zeros(2), -1.0)

    for args in ((10,), (3, 10)):
        tr = torch.randint_like(torch.zeros(4, 5, dtype=torch.int32), *args)
        r = gp.randint_like(gp.zeros((4, 5), dtype=gp.int32, device=device), *args,
                            generator=g)
        assert r.dtype == gp.int32 and r.shape == tuple(tr.shape) and r.device == device
        lo = 0 if len(args) == 1 else args[0]
        assert lo <= int(gp.min(r)) and int(gp.max(r)) < args[-1]
    assert gp.randint_like(gp.zeros(3, dtype=gp.float32), 5).dtype == gp.float32


def test_generator_and_rng_state_like_torch():
    assert gp.Generator is gp.random.Generator
    assert gp.default_generator is gp.random.default_generator
    g = gp.Generator(device="cpu").manual_seed(11)
    assert g.initial_seed() == 11 == torch.Generator().manual_seed(11).initial_seed()
    assert str(g.device) == "cpu"
    gp.manual_seed(12)
    assert gp.initial_seed() == 12
    state = gp.get_rng_state()
    a = _np(gp.rand(5))
    gp.set_rng_state(state)
    np.testing.assert_array_equal(a, _np(gp.rand(5)))
    s = gp.seed()
    assert isinstance(s, int) and gp.initial_seed() == s


def test_rand_with_a_generator_leaves_the_default_one():
    # gp.rand(..., generator=g) drew normals from the default generator to check its sizes
    before = gp.random.default_generator.get_state()
    g = gp.Generator(3)
    a = _np(gp.rand(4, generator=g))
    assert gp.random.default_generator.get_state() == before
    np.testing.assert_array_equal(a, _np(gp.Generator(3).uniform(0.0, 1.0, (4,))))
    gp.rand_like(gp.zeros(3, dtype=gp.float32), generator=g)
    gp.randn_like(gp.zeros(3, dtype=gp.float32), generator=g)
    assert gp.random.default_generator.get_state() == before
    with pytest.raises(TypeError, match="generator"):
        gp.rand(2, generator=torch.Generator())


# ---- torch's in-place fills -------------------------------------------------------------------
def test_inplace_fills_follow_their_laws(device):
    g = gp.Generator(77)

    def fresh(dtype=gp.float32):
        return gp.zeros((N,), dtype=dtype, device=device)

    for fill, dist in ((lambda x: x.exponential_(2.0, generator=g), stats.expon(scale=0.5)),
                       (lambda x: x.cauchy_(1.0, 2.0, generator=g), stats.cauchy(1, 2)),
                       (lambda x: x.log_normal_(0.5, 0.25, generator=g),
                        stats.lognorm(0.25, scale=math.exp(0.5))),
                       (lambda x: x.uniform_(-1.0, 2.0, generator=g), stats.uniform(-1, 3))):
        x = fresh()
        assert fill(x) is x and x.dtype == gp.float32 and x.shape == (N,)
        _law_ok(x, dist)
    x = fresh()
    assert x.bernoulli_(0.25, generator=g) is x
    _moments_ok(x, stats.bernoulli(0.25))
    x = fresh(gp.int64)
    assert x.geometric_(0.4, generator=g) is x and x.dtype == gp.int64
    _counts_ok(x, stats.geom(0.4), lo=1)
    x = fresh(gp.int32)
    assert x.random_(3, 9, generator=g) is x and x.dtype == gp.int32
    _counts_ok(x, stats.randint(3, 9), lo=3)
    y = fresh()
    y.random_(5, generator=g)
    assert set(_np(y).astype(int).tolist()) == set(range(5))
    z = gp.zeros((2000,), dtype=gp.uint8, device=device).random_(generator=g)
    assert int(gp.max(z)) > 240   # the dtype's range, as torch's random_()
    with pytest.raises(NotImplementedError, match="to="):
        gp.zeros(3, dtype=gp.int64).random_()
    with pytest.raises(RuntimeError):
        torch.zeros(3).exponential_(-1.0)
    with pytest.raises(ValueError, match="lambd"):
        gp.zeros(3, dtype=gp.float32).exponential_(-1.0)
    # Array.bernoulli / Array.multinomial call the top-level functions
    pb = gp.full((3,), 1.0, dtype=gp.float32, device=device)
    assert _np(pb.bernoulli()).tolist() == [1.0, 1.0, 1.0]
    assert gp.ones((2, 3), device=device).multinomial(2).shape == (2, 2)


def test_inplace_fill_of_a_leaf_that_requires_grad_raises_as_torch():
    with pytest.raises(RuntimeError):
        torch.zeros(3, requires_grad=True).bernoulli_(0.5)
    with pytest.raises(RuntimeError):
        gp.zeros(3, dtype=gp.float32).requires_grad_().bernoulli_(0.5)
