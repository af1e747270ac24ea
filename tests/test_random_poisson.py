"""grilly.random.poisson (and gp.poisson, distributions.Poisson.sample) against scipy.stats.poisson
and torch: the law (moments, chi-square over binned pmf), seeds, devices, shapes, dtypes, errors."""
import math

import numpy as np
import pytest

import grilly as gp
from grilly import distributions as gd
from grilly.random import Generator

stats = pytest.importorskip("scipy.stats")
torch = pytest.importorskip("torch")

RATES = [0.0, 0.1, 1.0, 4.5, 9.99, 10.0, 30.0, 1e3, 1e5]
N = 100_000


def _chi2_pvalue(x, lam) -> float:
    """The p-value of a chi-square test of draws ``x`` against Poisson(lam): consecutive values
    merged into bins of expected count >= 50, both tails in the end bins."""
    n = len(x)
    lo, hi = (int(v) for v in stats.poisson.ppf([1e-6, 1 - 1e-6], lam))
    edges, acc = [lo], 0.0
    for k in range(lo, hi + 1):
        acc += n * stats.poisson.pmf(k, lam)
        if acc >= 50:
            edges.append(k + 1)
            acc = 0.0
    edges[-1] = hi + 1   # the last bin takes what is left below hi
    cdf = stats.poisson.cdf(np.asarray(edges[1:-1]) - 1, lam)
    probs = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
    counts = np.bincount(np.searchsorted(np.asarray(edges[1:-1]), x, side="right"),
                         minlength=len(probs))
    chi2 = np.sum((counts - n * probs) ** 2 / (n * probs))
    return float(stats.chi2.sf(chi2, len(probs) - 1))


@pytest.mark.parametrize("lam", RATES)
def test_draws_follow_the_poisson_law(device, lam):
    x = np.asarray(Generator(2024).poisson(lam, N, device=device))
    assert x.shape == (N,) and x.dtype == np.int64 and x.min() >= 0
    if lam == 0.0:
        assert np.all(x == 0)
        return
    mean, var = stats.poisson.stats(lam, moments="mv")
    # the mean within 5 standard errors; the variance within 5 of its standard errors (the
    # Poisson fourth central moment is lam (1 + 3 lam))
    assert abs(x.mean() - mean) <= 5 * math.sqrt(var / N), (x.mean(), mean)
    assert abs(x.var() - var) <= 5 * math.sqrt((lam + 2 * lam * lam) / N), (x.var(), var)
    # a fixed seed: a correct sampler passes, a biased one (a normal approximation, a wrong
    # acceptance test) gives p-values far below 1e-4 at this sample size
    assert _chi2_pvalue(x, lam) > 1e-4


def _reference(lam, g, n, device, array: bool):
    """n Poisson draws of rate ``lam`` from generator ``g``'s float64 uniforms, as documented:
    below rate 10, inversion of scipy's cdf with one (n,) draw; else Hoermann's PTRS (1993) with
    20 rounds of (2, n) draws, the first accepted candidate kept (rates given as an Array draw
    both, the inversion's first)."""
    def draw(shape):
        return np.asarray(g.uniform(0.0, 1.0, shape, dtype=gp.float64, device=device))

    u0 = draw(n) if array or lam < 10 else None
    if lam < 10:
        cdf = stats.poisson.cdf(np.arange(40), lam)
        return np.sum(u0[None, :] >= cdf[:, None], axis=0)
    special = pytest.importorskip("scipy.special")
    slam, loglam = math.sqrt(lam), math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    out = np.full(n, -1.0)
    for _ in range(20):
        uu, v = draw((2, n))
        uu = uu - 0.5
        us = 0.5 - np.abs(uu)
        k = np.floor((2 * a / us + b) * uu + lam + 0.43)
        quick = (us >= 0.07) & (v <= vr)
        with np.errstate(divide="ignore"):
            test = (np.log(v) + math.log(inv_alpha) - np.log(a / (us * us) + b)
                    <= -lam + k * loglam - special.gammaln(k + 1))
        ok = quick | ((k >= 0) & ~((us < 0.013) & (v > us)) & test)
        out = np.where((out < 0) & ok, k, out)
    return out


@pytest.mark.parametrize("lam", [0.1, 4.5, 9.99, 10.0, 30.0, 1e3, 1e5])
def test_draws_are_the_documented_methods_on_the_generators_uniforms(device, lam):
    # a reference of the two methods on the generator's uniforms reproduces every draw
    n = 3000
    for array in (False, True):
        want = _reference(lam, Generator(9), n, device, array)
        rate = gp.full((n,), lam, dtype=gp.float64, device=device) if array else lam
        got = np.asarray(Generator(9).poisson(rate, n, device=device))
        np.testing.assert_array_equal(got, want)


def test_same_seed_same_draws_on_every_device(device):
    cpu = gp.backends.registry.device("cpu")
    rates = np.asarray(RATES, np.float32)
    for draw in (
        lambda g, d: g.poisson(gp.asarray(rates, device=d), (300, len(RATES))),
        lambda g, d: g.poisson(3.5, (7, 5), dtype=gp.float32, device=d),
        lambda g, d: g.poisson(250.0, 64, device=d),
    ):
        a, b = draw(Generator(7), device), draw(Generator(7), cpu)
        assert a.device == device
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_seeds_and_state(device):
    gp.random.seed(5)
    a = np.asarray(gp.random.poisson(12.0, 50, device=device))
    b = np.asarray(gp.random.poisson(12.0, 50, device=device))
    assert not np.array_equal(a, b)   # the counter moved on
    gp.random.seed(5)
    np.testing.assert_array_equal(np.asarray(gp.random.poisson(12.0, 50, device=device)), a)
    assert not np.array_equal(np.asarray(Generator(6).poisson(12.0, 50, device=device)), a)
    g = Generator(8)
    s = g.get_state()
    c = np.asarray(g.poisson(3.0, 20, device=device))
    g.set_state(s)
    np.testing.assert_array_equal(np.asarray(g.poisson(3.0, 20, device=device)), c)


def test_array_rates_broadcast(device):
    lam = np.array([0.5, 20.0, 300.0])
    g = Generator(3)
    assert g.poisson(gp.asarray(lam, device=device)).shape == (3,)
    assert g.poisson(gp.asarray(lam[:, None], device=device), (3, 4)).shape == (3, 4)
    x = np.asarray(g.poisson(gp.asarray(lam, device=device), (20000, 3)), np.float64)
    assert x.shape == (20000, 3)
    # each column follows its own rate (mean and variance within 5 standard errors)
    assert np.all(np.abs(x.mean(0) - lam) <= 5 * np.sqrt(lam / 20000))
    assert np.all(np.abs(x.var(0) - lam) <= 5 * np.sqrt((lam + 2 * lam * lam) / 20000))
    with pytest.raises(ValueError):
        g.poisson(gp.asarray(lam, device=device), (4, 2))


def test_dtypes(device):
    g = Generator(4)
    assert g.poisson(2.0, 3, device=device).dtype == gp.int64   # numpy's Generator.poisson
    for d in (gp.int32, gp.float32, gp.float64):
        x = g.poisson(2.0, 3, dtype=d, device=device)
        assert x.dtype == d and x.device == device
    x = g.poisson(gp.asarray([1.5, 200.0], dtype=gp.float32, device=device), (1000, 2),
                  dtype=gp.float32)
    xs = np.asarray(x)
    assert xs.dtype == np.float32 and np.array_equal(xs, np.floor(xs))
    # torch-style gp.poisson: the rates' shape and dtype, as torch.poisson
    rates = np.array([[0.5, 3.0], [12.0, 40.0]], np.float32)
    want = torch.poisson(torch.tensor(rates))
    got = gp.poisson(gp.asarray(rates, device=device))
    assert got.shape == tuple(want.shape) and got.dtype.name == str(want.dtype).split(".")[1]
    assert got.device == device


def test_invalid_array_rates_give_nan(device):
    lam = np.array([-1.0, np.nan, np.inf, 2.0 ** 53, 0.0, 3.0])
    bad = ~((lam >= 0) & (lam <= 2.0 ** 52))
    x = np.asarray(Generator(1).poisson(gp.asarray(lam, device=device), dtype=gp.float64))
    np.testing.assert_array_equal(np.isnan(x), bad)
    i = np.asarray(Generator(1).poisson(gp.asarray(lam, device=device)))
    np.testing.assert_array_equal(i[bad], -1)
    np.testing.assert_array_equal(i[~bad], x[~bad])
    assert np.isnan(np.asarray(gp.poisson(gp.asarray([-2.0], device=device)))[0])


def test_errors():
    g = Generator(0)
    for lam in (-1.0, math.nan, math.inf, 2.0 ** 53):
        with pytest.raises(ValueError, match="poisson: lam must be in"):
            g.poisson(lam, 3)
    for lam in (True, "2", [1.0, 2.0], 1j):
        with pytest.raises(TypeError, match="poisson: lam must be"):
            g.poisson(lam, 3)
    with pytest.raises(TypeError, match="poisson: lam must have a real dtype"):
        g.poisson(gp.asarray([True]))
    for d in (gp.bool, gp.complex64):
        with pytest.raises(TypeError, match="poisson: dtype must be"):
            g.poisson(1.0, 3, dtype=d)
    with pytest.raises(ValueError, match="negative"):
        g.poisson(1.0, (-1,))
    with pytest.raises(TypeError, match="poisson: expected a grilly Array"):
        gp.poisson([1.0, 2.0])
    with pytest.raises(TypeError, match="poisson: needs a real floating dtype"):
        gp.poisson(gp.asarray([1, 2]))


def test_distribution_sample(device):
    rate = gp.asarray(np.array([[0.3], [7.0], [55.0]], np.float32), device=device)
    p = gd.Poisson(rate)
    t = torch.distributions.Poisson(torch.tensor(np.asarray(rate)))
    gp.random.seed(11)
    s = p.sample((4000, 2))
    assert s.shape == (4000, 2) + tuple(t.batch_shape) and s.dtype == gp.float32
    assert s.device == device
    # Poisson.sample draws gp.random.poisson's numbers
    gp.random.seed(11)
    want = gp.random.poisson(gp.broadcast_to(rate, (4000, 2, 3, 1)), dtype=gp.float32)
    np.testing.assert_array_equal(np.asarray(s), np.asarray(want))
    x = np.asarray(s, np.float64).reshape(-1, 3)
    mean, var = t.mean.numpy().ravel().astype(np.float64), t.variance.numpy().ravel()
    assert np.all(np.abs(x.mean(0) - mean) <= 5 * np.sqrt(var / len(x)))
    # log_prob of the draws is finite (they lie in the support)
    assert np.all(np.isfinite(np.asarray(p.log_prob(s))))
    # gradients do not flow through draws; a rate that requires grad is accepted
    r = gp.asarray(np.float64(2.0), device=device)
    r.requires_grad_()
    assert gd.Poisson(r).sample((5,)).shape == (5,)
    with pytest.raises(ValueError, match="Poisson: expected parameter rate"):
        gd.Poisson(-1.0)


def test_log_pmf_against_mpmath():
    mp = pytest.importorskip("mpmath")
    from grilly.random._poisson import _log_pmf

    mp.mp.dps = 40
    for lam in (10.0, 37.5, 1e3, 1e5, 1e9):
        ks = np.unique(np.maximum(np.round(lam + np.array([-6, -1, 0, 1, 6]) * math.sqrt(lam)), 0))
        ks = np.concatenate([np.arange(20.0), ks])
        want = [float(-lam + k * mp.log(lam) - mp.loggamma(k + 1)) for k in ks]
        lam_a = gp.full(ks.shape, lam, dtype=gp.float64)
        got = np.asarray(_log_pmf(gp.asarray(ks), lam_a, gp.log(lam_a)))
        # a few ulp of the sqrt(lam)-sized terms near the mean, of the value itself far out
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-13 * math.sqrt(lam))
