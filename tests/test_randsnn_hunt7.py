"""A NumPy random-numbers user's and a Norse/snnTorch user's hunt (7).

NumPy's Generator laws that grilly lacked: f, noncentral_chisquare, noncentral_f,
negative_binomial, hypergeometric, multivariate_hypergeometric (and the legacy module
functions), against scipy.stats (KS / chi-square at fixed seeds, means and variances within a
few standard errors), NumPy's errors (NumPy itself the oracle for the error type), array
parameters drawing per element, size semantics, the same integers on every device.

snnTorch's surrogate.LSO / SSO (snnTorch 1.0's LSO factory fails when called: its
LeakySpikeOperator is the reference) in a Leaky neuron's BPTT, and Norse 1.1's
population_encode / PopulationEncoder and AdEx neurons (LIFAdExCell, LIFAdEx,
LIFAdExRecurrentCell, lif_adex_feed_forward_step, lif_adex_current_encoder) step by step
against Norse: spikes, states and gradients."""
import math

import numpy as np
import pytest

import grilly as gp

stats = pytest.importorskip("scipy.stats")
torch = pytest.importorskip("torch")

N = 6000
F64 = gp.float64


def _np(x):
    return np.asarray(x.to_device("cpu") if isinstance(x, gp.Array) else x, dtype=np.float64)


def _moments_ok(x, dist, k=5.0):
    """Sample mean and variance within k standard errors of the law's float64 values."""
    x = _np(x).ravel()
    n = x.size
    m, v, kurt = (float(t) for t in dist.stats(moments="mvk"))
    assert abs(x.mean() - m) < k * math.sqrt(v / n), (x.mean(), m)
    if math.isfinite(kurt):
        assert abs(x.var() - v) < k * v * math.sqrt((kurt + 2.0) / n), (x.var(), v)


def _counts_ok(x, dist):
    """A discrete law: chi-square of the counts against scipy's pmf (cells of < 5 expected
    merged), and its moments."""
    x = _np(x).ravel().astype(np.int64)
    lo, hi = int(x.min()), int(x.max())
    ks = np.arange(lo, hi + 1)
    exp = dist.pmf(ks) * x.size
    exp[0] += dist.cdf(lo - 1) * x.size
    exp[-1] += dist.sf(hi) * x.size
    obs = np.bincount(x - lo, minlength=ks.size).astype(float)
    co, ce, ao, ae = [], [], 0.0, 0.0
    for o, e in zip(obs, exp):
        ao, ae = ao + o, ae + e
        if ae >= 5:
            co.append(ao)
            ce.append(ae)
            ao = ae = 0.0
    co[-1] += ao
    ce[-1] += ae
    assert len(co) >= 3
    assert stats.chisquare(co, np.asarray(ce) * (sum(co) / sum(ce))).pvalue > 1e-6
    _moments_ok(x, dist)


# ---- numpy's missing laws ----------------------------------------------------------------------
def test_f_and_noncentral_laws_follow_scipy(device):
    r = gp.random.default_rng(11)
    x = r.f(3.0, 7.0, N, dtype=F64, device=device)
    assert x.dtype == F64 and x.shape == (N,)
    assert stats.kstest(_np(x), stats.f(3, 7).cdf).pvalue > 1e-6
    _moments_ok(x, stats.f(3, 7))
    y = r.noncentral_chisquare(3.0, 2.5, N, dtype=F64, device=device)
    assert stats.kstest(_np(y), stats.ncx2(3, 2.5).cdf).pvalue > 1e-6
    _moments_ok(y, stats.ncx2(3, 2.5))
    z = r.noncentral_f(4.0, 12.0, 3.0, N, dtype=F64, device=device)
    assert stats.kstest(_np(z), stats.ncf(4, 12, 3).cdf).pvalue > 1e-6


def test_negative_binomial_follows_scipy(device):
    r = gp.random.default_rng(12)
    x = r.negative_binomial(3.5, 0.4, N, device=device)
    assert x.dtype == gp.int64
    _counts_ok(x, stats.nbinom(3.5, 0.4))
    # array parameters broadcast per element (n a column, p a row), size with a batch axis
    n, p = np.array([[2.0], [30.0]]), np.array([0.3, 0.8, 1.0])
    y = _np(r.negative_binomial(n, p, size=(2000, 2, 3), device=device))
    want = stats.nbinom(n, p)
    m, v = want.mean(), want.var()
    assert np.all(np.abs(y.mean(0) - m) <= 5 * np.sqrt(v / 2000) + 1e-12)
    assert np.all(y[:, :, 2] == 0)   # p = 1: no failures


def test_hypergeometric_follows_scipy(device):
    r = gp.random.default_rng(13)
    # inversion (mean < 10) and Stadlober's HRUA (mean >= 10)
    for good, bad, n in [(5, 7, 6), (100, 200, 150)]:
        x = r.hypergeometric(good, bad, n, N, device=device)
        assert x.dtype == gp.int64
        _counts_ok(x, stats.hypergeom(good + bad, good, n))
    # array parameters per element: an Array, a list and a number
    g = gp.asarray([5.0, 100.0, 3.0, 40.0], device=device)
    y = _np(r.hypergeometric(g, [7, 200, 1000, 0], [6, 150, 500, 10], size=(3000, 4),
                             device=device))
    want = stats.hypergeom(np.array([12, 300, 1003, 40]), np.array([5, 100, 3, 40]),
                           np.array([6, 150, 500, 10]))
    m, v = want.mean(), want.var()
    assert np.all(np.abs(y.mean(0) - m) <= 5 * np.sqrt(v / 3000) + 1e-12)
    assert np.all(y[:, 3] == 10)   # no bad items: every draw is good


def test_multivariate_hypergeometric(device):
    r = gp.random.default_rng(14)
    colors, n = [3, 4, 5, 30], 20
    x = r.multivariate_hypergeometric(colors, n, size=(N,), device=device)
    assert x.shape == (N, 4) and x.dtype == gp.int64
    x = _np(x)
    assert np.all(x.sum(-1) == n) and np.all(x <= np.array(colors))
    total = sum(colors)
    for i, c in enumerate(colors):   # each colour's count is hypergeometric
        _moments_ok(x[:, i], stats.hypergeom(total, c, n))
    assert r.multivariate_hypergeometric(colors, n, size=(2, 3), device=device).shape == \
        (2, 3, 4)
    assert r.multivariate_hypergeometric(colors, n, method="count", device=device).shape == (4,)


def test_same_integers_on_every_device(device):
    cpu = gp.backends.registry.device("cpu")
    for dev in (cpu, device):
        r = gp.random.default_rng(5)
        out = [_np(r.hypergeometric(100, 200, 150, 64, device=dev)),
               _np(r.negative_binomial(3.5, 0.4, 64, device=dev))]
        if dev is cpu:
            ref = out
    for a, b in zip(out, ref):
        np.testing.assert_array_equal(a, b)


ERRS = [
    ("f", (0, 1)), ("f", (1, -1)), ("f", ([1, 0], 1)),
    ("noncentral_chisquare", (0, 1)), ("noncentral_chisquare", (1, -1)),
    ("noncentral_f", (1, 1, -1)), ("noncentral_f", (0, 1, 1)),
    ("negative_binomial", (0, 0.5)), ("negative_binomial", (1, 0)),
    ("negative_binomial", (1, 1.5)), ("negative_binomial", (1, 1e-300)),
    ("hypergeometric", (-1, 5, 1)), ("hypergeometric", (5, -1, 1)),
    ("hypergeometric", (1, 1, -1)), ("hypergeometric", (1, 1, 3)),
    ("hypergeometric", ([5, 1], 1, [1, 3])), ("hypergeometric", (10 ** 9, 1, 1)),
    ("multivariate_hypergeometric", ([1, 2], 4)), ("multivariate_hypergeometric", ([1, -2], 1)),
    ("multivariate_hypergeometric", ([1, 2], -1)), ("multivariate_hypergeometric", ([[1, 2]], 1)),
    ("multivariate_hypergeometric", ([1.5, 2], 1)),
    # (test_random_hunt7's laws)
    ("power", (0,)), ("power", (-1.0,)), ("wald", (0, 1)), ("wald", (1, 0)),
    ("vonmises", (0, -1)), ("zipf", (1.0,)), ("zipf", (0.5,)), ("logseries", (1.0,)),
    ("logseries", (-0.1,)), ("power", ([1.0, -1.0],)),
]


@pytest.mark.parametrize("name,args", ERRS)
def test_numpys_errors(name, args):
    with pytest.raises(Exception) as ref:
        getattr(np.random.default_rng(0), name)(*args)
    with pytest.raises(ref.type, match=name):
        getattr(gp.random.default_rng(0), name)(*args)


def test_argument_errors_and_module_functions():
    r = gp.random.default_rng(0)
    with pytest.raises(ValueError, match="method"):
        r.multivariate_hypergeometric([1, 2], 1, method="x")
    with pytest.raises(ValueError, match="size"):
        r.f([1.0, 2.0], 3.0, size=(3,))
    with pytest.raises(TypeError, match="dtype"):
        r.hypergeometric(5, 5, 3, dtype=gp.float32)
    # an Array's invalid parameters are not read back: -1 there, as binomial's
    x = _np(r.hypergeometric(gp.asarray([5.0, 5.0]), 5, [3, 11]))
    assert x[1] == -1 and 0 <= x[0] <= 3
    # numpy.random's legacy module functions draw from the default generator
    gp.random.seed(3)
    a = _np(gp.random.negative_binomial(2, 0.5, 8))
    b = _np(gp.random.default_rng(3).negative_binomial(2, 0.5, 8))
    np.testing.assert_array_equal(a, b)
    for name in ("f", "noncentral_chisquare", "noncentral_f", "hypergeometric"):
        assert callable(getattr(gp.random, name)) and name in gp.random.__all__
    assert gp.random.hypergeometric(5, 5, 3).shape == ()
    assert gp.random.f(2, 3, size=4).shape == (4,)
    assert gp.random.f(2, 3, size=4).dtype == gp.float32   # as grilly's other laws


# ---- snnTorch's LSO / SSO surrogates -------------------------------------------------------------
def _g(a, device, grad=False):
    x = gp.asarray(np.asarray(a, dtype=np.float32), device=device)
    return x.requires_grad_() if grad else x


def _t(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float32), requires_grad=grad)


def test_lso_in_a_leaky_neuron_as_snntorch(device):
    snntorch = pytest.importorskip("snntorch")
    from snntorch.surrogate import LeakySpikeOperator
    from grilly.nn import snn
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((6, 2, 5)) * 1.5 + 0.5, rng.standard_normal((6, 2, 5))
    # snnTorch 1.0's LSO() factory calls the stochastic operator with one argument too few
    # (a TypeError), and its LeakySpikeOperator's backward returns one gradient for two inputs
    # (a RuntimeError): the reference is that operator's own backward, given a None for slope

    class Leaky(LeakySpikeOperator):
        @staticmethod
        def backward(ctx, g):
            return LeakySpikeOperator.backward(ctx, g), None

    ref = snntorch.Leaky(beta=0.8, spike_grad=lambda v: Leaky.apply(v, 0.25))
    mine = snn.Leaky(beta=0.8, spike_grad=snn.surrogate.LSO(0.25)).to(device)
    xt, xg = _t(x, True), _g(x, device, True)
    mem_t, mem_g = ref.init_leaky(), mine.init_leaky()
    spk_t, spk_g, memr_t, memr_g = [], [], [], []
    for k in range(6):
        s, mem_t = ref(xt[k], mem_t)
        spk_t.append(s)
        memr_t.append(mem_t)
        s, mem_g = mine(xg[k], mem_g)
        spk_g.append(s)
        memr_g.append(mem_g)
    st, sg = torch.stack(spk_t), gp.stack(spk_g)
    mt, mg = torch.stack(memr_t), gp.stack(memr_g)
    np.testing.assert_array_equal(_np(sg), st.detach().numpy())
    np.testing.assert_allclose(_np(mg), mt.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert 0 < float(st.detach().sum()) < st.numel()
    ((st * _t(w)).sum() + (mt * _t(w)).sum()).backward()
    ((sg * _g(w, device)).sum() + (mg * _g(w, device)).sum()).backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_sso_gradient_is_snntorchs_noise(device):
    pytest.importorskip("snntorch")
    from grilly.nn import snn
    x = np.linspace(-1.0, 1.0, 4000, dtype=np.float32)
    xg = _g(x, device, True)
    gp.random.seed(0)
    spk = snn.surrogate.SSO(mean=0.1, variance=0.5)(xg)
    np.testing.assert_array_equal(_np(spk), (x > 0).astype(np.float32))
    spk.sum().backward()
    g = _np(xg.grad)
    assert np.all(g[x > 0] == 1.0)
    # below threshold: (U - 1/2 + mean) variance, U ~ Uniform[0, 1) (snnTorch's rand_like)
    u = g[x <= 0] / 0.5 + 0.5 - 0.1
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-6


# ---- Norse: population encoding and AdEx ---------------------------------------------------------
nt = pytest.importorskip("norse.torch")
import grilly.nn.snn.norse as gn  # noqa: E402
from norse.torch.functional import encode as _nenc  # noqa: E402
from norse.torch.functional import lif_adex as _nadex  # noqa: E402

STOL = dict(rtol=1e-5, atol=2e-5)
GTOL = dict(rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("scale", [None, 2.0])
def test_population_encode_as_norse(device, scale):
    rng = np.random.default_rng(4)
    x = rng.uniform(0.0, 1.5, (3, 4))
    w = rng.standard_normal((3, 4, 5))
    xt, xg = _t(x, True), _g(x, device, True)
    yt = _nenc.population_encode(xt, 5, scale)
    yg = gn.population_encode(xg, 5, scale)
    assert tuple(yg.shape) == (3, 4, 5)
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    (yt * _t(w)).sum().backward()
    (yg * _g(w, device)).sum().backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **GTOL)
    m = gn.PopulationEncoder(5, scale)
    np.testing.assert_allclose(_np(m(_g(x, device))), yt.detach().numpy(), rtol=1e-5, atol=1e-6)


def _adex_p(lib):
    # a faster adaptation and a stronger exponential than the defaults, so that a few steps of
    # these currents spike and adapt
    kw = dict(adaptation_current=2.0, adaptation_spike=0.5, delta_T=0.4, tau_ada_inv=50.0,
              v_th=1.0, v_reset=-0.1)
    if lib is gn:
        return gn.LIFAdExParameters(**kw)
    return _nadex.LIFAdExParameters(**{k: torch.as_tensor(v) for k, v in kw.items()})


def test_adex_cell_and_sequence_as_norse(device):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((8, 2, 4)) * 30 + 40
    w = rng.standard_normal((8, 2, 4))
    # the cell step by step (state None: v = v_leak), every state field and the input's gradient
    cell_t, cell_g = nt.LIFAdExCell(_adex_p(nt)), gn.LIFAdExCell(_adex_p(gn))
    xt, xg = _t(x, True), _g(x, device, True)
    st_t = st_g = None
    zs_t, zs_g, loss_t, loss_g = [], [], 0.0, 0.0
    for k in range(8):
        z, st_t = cell_t(xt[k], st_t)
        zs_t.append(z)
        loss_t = loss_t + (z * _t(w[k])).sum() + st_t.v.sum() * 0.1 + st_t.a.sum()
        z, st_g = cell_g(xg[k], st_g)
        zs_g.append(z)
        loss_g = loss_g + (z * _g(w[k], device)).sum() + st_g.v.sum() * 0.1 + st_g.a.sum()
        np.testing.assert_array_equal(_np(zs_g[-1]), zs_t[-1].detach().numpy())
        for f in ("v", "i", "a"):
            np.testing.assert_allclose(_np(getattr(st_g, f)),
                                       getattr(st_t, f).detach().numpy(), **STOL)
    spikes = torch.stack(zs_t)
    assert 0 < float(spikes.detach().sum()) < spikes.numel()
    loss_t.backward()
    loss_g.backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **GTOL)
    # the module over the sequence, every state recorded; the functional step's default state
    zt, rec_t = nt.LIFAdEx(_adex_p(nt), record_states=True)(_t(x))
    zg, rec_g = gn.LIFAdEx(_adex_p(gn), record_states=True)(_g(x, device))
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    np.testing.assert_allclose(_np(rec_g.a), rec_t.a.detach().numpy(), **STOL)
    z1t, s1t = _nadex.lif_adex_feed_forward_step(_t(x[0]), p=_adex_p(nt))
    z1g, s1g = gn.lif_adex_feed_forward_step(_g(x[0], device), p=_adex_p(gn))
    np.testing.assert_allclose(_np(s1g.v), s1t.v.detach().numpy(), **STOL)


def test_adex_recurrent_cell_and_encoder_as_norse(device):
    rng = np.random.default_rng(7)
    x = (rng.uniform(size=(6, 2, 3)) < 0.5).astype(np.float32)
    w_in = rng.standard_normal((4, 3)) * 40 + 30
    w_rec = rng.standard_normal((4, 4)) * 5
    np.fill_diagonal(w_rec, 0.0)
    wt_in, wg_in = _t(w_in, True), _g(w_in, device, True)
    wt_rec, wg_rec = _t(w_rec, True), _g(w_rec, device, True)
    ct = nt.LIFAdExRecurrentCell(3, 4, _adex_p(nt), input_weights=wt_in,
                                 recurrent_weights=wt_rec)
    cg = gn.LIFAdExRecurrentCell(3, 4, _adex_p(gn), input_weights=wg_in,
                                 recurrent_weights=wg_rec)
    st_t = st_g = None
    lt = lg = 0.0
    for k in range(6):
        zt, st_t = ct(_t(x[k]), st_t)
        zg, st_g = cg(_g(x[k], device), st_g)
        np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
        np.testing.assert_allclose(_np(st_g.v), st_t.v.detach().numpy(), **STOL)
        lt = lt + (zt * (k + 1)).sum() + st_t.v.sum()
        lg = lg + (zg * (k + 1)).sum() + st_g.v.sum()
    lt.backward()
    lg.backward()
    np.testing.assert_allclose(_np(cg.input_weights.grad), ct.input_weights.grad.numpy(), **GTOL)
    np.testing.assert_allclose(_np(cg.recurrent_weights.grad),
                               ct.recurrent_weights.grad.numpy(), **GTOL)
    # the current encoder as Norse 1.1 computes it
    cur = rng.standard_normal((2, 3)) * 300 + 200
    v0, a0 = rng.standard_normal((2, 3)) * 0.5, rng.standard_normal((2, 3)) * 0.1
    out_t = _nadex.lif_adex_current_encoder(_t(cur), _t(v0), _t(a0), _adex_p(nt))
    out_g = gn.lif_adex_current_encoder(_g(cur, device), _g(v0, device), _g(a0, device),
                                        _adex_p(gn))
    for a, b in zip(out_g, out_t):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), **STOL)
