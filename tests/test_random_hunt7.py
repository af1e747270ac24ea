"""NumPy's Generator laws grilly lacked after hunt 7's first round: power, wald, vonmises, zipf,
logseries, permuted and bytes (and the legacy module functions), against scipy.stats (KS or
chi-square at fixed seeds, with moments) and NumPy itself for the errors; the same draws on
every device. Their argument errors against NumPy's are in test_randsnn_hunt7's ERRS."""
import math

import numpy as np
import pytest

import grilly as gp

stats = pytest.importorskip("scipy.stats")
N = 6000


def _np(x):
    return np.asarray(x.to_device("cpu") if isinstance(x, gp.Array) else x, dtype=np.float64)


def _ks(x, dist):
    assert stats.kstest(_np(x).ravel(), dist.cdf).pvalue > 1e-6


def _chi2(x, pmf, hi):
    """Chi-square of integer draws' counts on 1..hi (the rest one cell) against ``pmf``."""
    x = _np(x).ravel().astype(np.int64)
    assert x.min() >= 1
    ks = np.arange(1, hi + 1)
    obs = np.append(np.bincount(np.minimum(x, hi + 1), minlength=hi + 2)[1:hi + 1],
                    np.sum(x > hi)).astype(float)
    p = pmf(ks)
    exp = np.append(p, max(0.0, 1.0 - p.sum())) * x.size
    keep = exp >= 5
    obs, exp = np.append(obs[keep], obs[~keep].sum()), np.append(exp[keep], exp[~keep].sum())
    if exp[-1] < 5:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-6


def test_continuous_laws_follow_scipy(device):
    r = gp.random.default_rng(21)
    f64 = gp.float64
    _ks(r.power(2.5, N, dtype=f64, device=device), stats.powerlaw(2.5))
    _ks(r.wald(1.5, 2.0, N, dtype=f64, device=device), stats.invgauss(1.5 / 2.0, scale=2.0))
    for mu, kappa in ((0.5, 3.0), (-2.0, 0.2), (1.0, 2e6)):
        x = r.vonmises(mu, kappa, N, dtype=f64, device=device)
        assert np.all(np.abs(_np(x)) <= math.pi)
        if kappa < 1e6:   # (scipy's loc shifts the support: compare x - mu, wrapped)
            d = np.angle(np.exp(1j * (_np(x) - mu)))
            _ks(d, stats.vonmises(kappa))
        else:   # the normal approximation NumPy uses there
            _ks(x, stats.norm(mu, 1 / math.sqrt(kappa)))
    y = _np(r.vonmises(0.0, 0.0, N, dtype=f64, device=device))   # uniform on (-pi, pi)
    assert stats.kstest(y, stats.uniform(-math.pi, 2 * math.pi).cdf).pvalue > 1e-6
    # array parameters per element
    k = _np(r.power([0.5, 4.0], size=(N, 2), dtype=f64, device=device))
    np.testing.assert_allclose(k.mean(0), [0.5 / 1.5, 4.0 / 5.0], atol=0.02)


def test_integer_laws_follow_scipy(device):
    r = gp.random.default_rng(22)
    for a in (1.6, 3.0):
        x = r.zipf(a, N, device=device)
        assert x.dtype == gp.int64
        _chi2(x, stats.zipf(a).pmf, 30)
    for p in (0.3, 0.95):
        x = r.logseries(p, N, device=device)
        _chi2(x, stats.logser(p).pmf, 40)
    assert np.all(_np(r.logseries(0.0, 10, device=device)) == 1)


def test_same_draws_on_every_device(device):
    cpu = gp.backends.registry.device("cpu")
    out = {}
    for dev in (cpu, device):
        r = gp.random.default_rng(7)
        out[dev] = [_np(r.zipf(2.0, 64, device=dev)), _np(r.logseries(0.6, 64, device=dev)),
                    _np(r.vonmises(0.3, 1.5, 64, dtype=gp.float64, device=dev)),
                    _np(r.wald(1.0, 3.0, 64, dtype=gp.float64, device=dev))]
    for a, b in zip(out[cpu], out[device]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_permuted_and_bytes(device):
    r = gp.random.default_rng(23)
    x = gp.reshape(gp.arange(24, device=device), (4, 6))
    y = _np(r.permuted(x, axis=1))
    assert np.array_equal(np.sort(y, axis=1), _np(x))   # each row its own permutation
    assert not np.array_equal(y, _np(x))
    z = _np(r.permuted(x))   # the flattened array
    assert z.shape == (4, 6) and np.array_equal(np.sort(z.ravel()), np.arange(24))
    out = gp.zeros((4, 6), dtype=x.dtype, device=device)
    assert r.permuted(x, axis=0, out=out) is out
    assert np.array_equal(np.sort(_np(out), axis=0), _np(x))
    b = r.bytes(10)
    assert isinstance(b, bytes) and len(b) == 10 and gp.random.default_rng(23).bytes(10) != b
    with pytest.raises(ValueError, match="out"):
        r.permuted(x, out=gp.zeros((3,), device=device))


def test_module_functions_draw_from_the_default_generator():
    for name, args in (("power", (2.0,)), ("wald", (1.0, 1.0)), ("vonmises", (0.0, 1.0)),
                       ("zipf", (2.0,)), ("logseries", (0.5,))):
        gp.random.seed(4)
        a = _np(getattr(gp.random, name)(*args, size=5))
        b = _np(getattr(gp.random.default_rng(4), name)(*args, size=5))
        np.testing.assert_array_equal(a, b)
    assert len(gp.random.bytes(3)) == 3
