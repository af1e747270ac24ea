"""numpy.random's API in grilly.random: default_rng's Generator methods (random, standard_normal,
exponential, integers(endpoint), choice, permutation(axis), shuffle, size=/loc=/scale=) and the
legacy module functions (rand, randn, randint, random, random_sample, choice, shuffle, ...):
the laws against scipy (means and variances within a few standard errors, chi-square),
permutations, cpu == vulkan for the same seed, dtypes, shapes and NumPy's errors."""
import itertools
import math

import numpy as np
import pytest

import grilly as gp
from grilly.random import Generator

stats = pytest.importorskip("scipy.stats")

N = 20_000


def _cpu():
    return gp.backends.registry.device("cpu")


def _within(x, mean, var, n, k=5.0):
    """The sample mean within k standard errors of ``mean``, and the sample variance within k of
    its own standard error (normal approximation, with the law's fourth moment bounded by
    ``3 var**2`` + the excess kurtosis of the distributions tested here)."""
    x = np.asarray(x, dtype=np.float64)
    assert abs(x.mean() - mean) < k * math.sqrt(var / n)
    assert abs(x.var() - var) < k * var * math.sqrt(8.0 / n)


def _chi2_ok(counts, probs):
    counts, probs = np.asarray(counts, float), np.asarray(probs, float)
    assert stats.chisquare(counts, counts.sum() * probs).pvalue > 1e-4


# ---- the laws ----------------------------------------------------------------------------------
def test_continuous_draws_follow_their_laws(device):
    rng = gp.random.default_rng(12)
    _within(rng.random(N, device=device), 0.5, 1 / 12, N)
    _within(rng.uniform(-2.0, 3.0, size=N, device=device), 0.5, 25 / 12, N)
    _within(rng.standard_normal(N, device=device), 0.0, 1.0, N)
    _within(rng.normal(loc=3.0, scale=2.0, size=N, device=device), 3.0, 4.0, N)
    _within(rng.exponential(2.5, N, device=device), 2.5, 6.25, N, k=6.0)
    x = np.asarray(rng.exponential(1.0, N, dtype=gp.float64, device=device))
    assert x.min() >= 0 and stats.kstest(x, "expon").pvalue > 1e-4
    u = np.asarray(rng.random(N, gp.float64, device=device))
    assert u.min() >= 0 and u.max() < 1 and stats.kstest(u, "uniform").pvalue > 1e-4


def test_integers_endpoint_and_randint_are_uniform(device):
    rng = gp.random.default_rng(3)
    x = np.asarray(rng.integers(-2, 3, size=N, endpoint=True, device=device))
    assert x.min() == -2 and x.max() == 3
    _chi2_ok(np.bincount(x + 2, minlength=6), np.full(6, 1 / 6))
    gp.random.seed(4)
    y = np.asarray(gp.random.randint(5, size=(N,), device=device))
    assert y.min() == 0 and y.max() == 4
    _chi2_ok(np.bincount(y, minlength=5), np.full(5, 0.2))


def test_choice_with_p_follows_p(device):
    p = np.array([0.1, 0.0, 0.25, 0.4, 0.25])
    x = np.asarray(gp.random.default_rng(5).choice(5, N, p=p, device=device))
    counts = np.bincount(x, minlength=5)
    assert counts[1] == 0   # probability 0: never drawn
    keep = p > 0
    _chi2_ok(counts[keep], p[keep])


def test_choice_without_replacement_with_p_has_numpys_sequential_law(device):
    # NumPy draws without replacement one at a time, renormalizing: (i, j) has probability
    # p_i p_j / (1 - p_i); the exponential race must give that law over ordered pairs
    p = np.array([0.5, 0.3, 0.2])
    cells = list(itertools.permutations(range(3), 2))
    want = np.array([p[i] * p[j] / (1 - p[i]) for i, j in cells])
    counts = dict.fromkeys(cells, 0)
    g = gp.random.default_rng(7)
    pd = gp.asarray(p, device=device)
    for _ in range(600):
        i, j = np.asarray(g.choice(3, 2, replace=False, p=pd)).tolist()
        counts[(i, j)] += 1
    _chi2_ok([counts[c] for c in cells], want)


def test_choice_without_replacement_uniform_is_distinct_and_uniform(device):
    rng = gp.random.default_rng(8)
    first = []
    for _ in range(600):
        s = np.asarray(rng.choice(6, 4, replace=False, device=device))
        assert len(set(s.tolist())) == 4 and s.min() >= 0 and s.max() < 6
        first.append(s[0])
    _chi2_ok(np.bincount(first, minlength=6), np.full(6, 1 / 6))
    full = np.asarray(rng.choice(50, 50, replace=False, device=device))
    assert sorted(full.tolist()) == list(range(50))


def test_permutation_and_shuffle_are_permutations(device):
    rng = gp.random.default_rng(9)
    x = gp.reshape(gp.arange(40, device=device), (8, 5))
    p = np.asarray(rng.permutation(x))
    assert sorted(map(tuple, p.tolist())) == sorted(map(tuple, np.asarray(x).tolist()))
    q = np.asarray(rng.permutation(x, axis=1))
    assert sorted(q.T.tolist()) == sorted(np.asarray(x).T.tolist())
    assert not np.array_equal(q, np.asarray(x))
    y = gp.arange(100.0, device=device)
    before = y
    rng.shuffle(y)   # in place: the same Array object, its values a permutation
    assert y is before and y.device == device
    v = np.asarray(y)
    assert sorted(v.tolist()) == list(range(100)) and not np.array_equal(v, np.arange(100))
    z = gp.reshape(gp.arange(12, device=device), (3, 4))
    rng.shuffle(z, axis=1)
    assert (np.diff(np.asarray(z), axis=0) == 4).all()   # whole columns moved
    gp.random.seed(1)
    w = gp.arange(10, device=device)
    gp.random.shuffle(w)
    assert sorted(np.asarray(w).tolist()) == list(range(10))


def test_choice_of_arrays_and_shapes(device):
    rng = gp.random.default_rng(10)
    a = gp.reshape(gp.arange(12.0, device=device), (3, 4))
    assert rng.choice(a, 5).shape == (5, 4)
    assert rng.choice(a, (2, 2), axis=1).shape == (3, 2, 2)
    s = np.asarray(rng.choice(a, 2, replace=False, axis=1))
    assert s.shape == (3, 2) and len(set(s[0].tolist())) == 2
    assert (np.diff(s, axis=0) == 4).all()   # whole columns drawn
    assert rng.choice(7, device=device).shape == () and rng.choice(7).dtype == gp.int64
    assert rng.choice([10, 20, 30], (2, 3)).shape == (2, 3)
    assert set(np.asarray(rng.choice([10, 20, 30], 50)).tolist()) <= {10, 20, 30}
    assert rng.choice(0, 0).shape == (0,)


# ---- seeds, devices, dtypes and shapes ---------------------------------------------------------
DRAWS = [
    lambda g, d: g.random((5, 3), device=d),
    lambda g, d: g.random(7, gp.float64, device=d),
    lambda g, d: g.integers(0, 10, size=(4, 4), endpoint=True, device=d),
    lambda g, d: g.choice(9, 6, device=d),
    lambda g, d: g.choice(9, 6, replace=False, device=d),
    lambda g, d: g.choice(4, 11, p=[0.125, 0.25, 0.5, 0.125], device=d),
    lambda g, d: g.choice(4, 3, replace=False, p=[0.125, 0.25, 0.5, 0.125], device=d),
    lambda g, d: g.permutation(gp.reshape(gp.arange(12, device=d), (3, 4)), axis=1),
    lambda g, d: g.standard_normal(9, device=d),
    lambda g, d: g.exponential(2.0, (3, 3), dtype=gp.float64, device=d),
]


@pytest.mark.parametrize("k", range(len(DRAWS)))
def test_same_seed_same_numbers_on_every_device(device, k):
    a = DRAWS[k](gp.random.default_rng(2024), device)
    b = DRAWS[k](gp.random.default_rng(2024), _cpu())
    assert a.device == device and a.dtype == b.dtype
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_shuffle_same_on_every_device(device):
    x, y = gp.arange(30, device=device), gp.arange(30, device=_cpu())
    gp.random.default_rng(5).shuffle(x)
    gp.random.default_rng(5).shuffle(y)
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_default_rng_seeds():
    a, b = gp.random.default_rng(42), gp.random.default_rng(42)
    np.testing.assert_array_equal(np.asarray(a.random(8)), np.asarray(b.random(8)))
    assert gp.random.default_rng(a) is a   # a Generator passes through, as NumPy's
    assert isinstance(a, Generator) and a.seed == 42
    c, d = gp.random.default_rng(), gp.random.default_rng()   # fresh entropy
    assert c.seed != d.seed
    gp.random.seed(3)
    r = [np.asarray(f()) for f in (lambda: gp.random.rand(3, 2), lambda: gp.random.randn(4),
                                   lambda: gp.random.randint(2, 9, 5),
                                   lambda: gp.random.choice([1, 2, 3], 4))]
    gp.random.seed(3)
    s = [np.asarray(f()) for f in (lambda: gp.random.rand(3, 2), lambda: gp.random.randn(4),
                                   lambda: gp.random.randint(2, 9, 5),
                                   lambda: gp.random.choice([1, 2, 3], 4))]
    for u, v in zip(r, s):
        np.testing.assert_array_equal(u, v)


def test_dtypes_and_shapes_follow_numpy_except_the_float_default(device):
    rng = gp.random.default_rng(0)
    # NumPy's shapes; floats are float32 (grilly's draws) unless dtype says float64
    assert rng.random(device=device).shape == () and rng.random().dtype == gp.float32
    assert rng.random(3, dtype=np.float64).dtype == gp.float64
    assert rng.random((2, 3), "float64").shape == (2, 3)
    assert rng.standard_normal((2, 1), gp.float64).dtype == gp.float64
    assert rng.exponential(size=4).shape == (4,)
    assert rng.integers(5).shape == () and rng.integers(5, size=3).dtype == gp.int64
    assert rng.integers(0, 5, size=3, dtype=np.int32).dtype == gp.int32
    assert rng.normal(size=(2, 2)).shape == (2, 2) and rng.uniform(size=3).shape == (3,)
    assert rng.poisson(3.0, size=(2, 5)).shape == (2, 5)
    assert gp.random.rand(2, 3, device=device).shape == (2, 3)
    assert gp.random.rand().shape == () and gp.random.randn(4, 1).shape == (4, 1)
    assert gp.random.random((2, 2)).shape == (2, 2)
    assert gp.random.random_sample(3).dtype == gp.float32
    assert gp.random.randint(3, 9, (2, 2)).dtype == gp.int64
    assert gp.random.randint(3, dtype=gp.int16).dtype == gp.int16
    assert gp.random.standard_normal(2).shape == (2,) and gp.random.exponential(size=2).shape == (2,)
    assert gp.random.uniform(0, 2, size=5).shape == (5,)
    assert gp.random.normal(1.0, 2.0, size=5).shape == (5,)
    assert gp.random.integers(0, 3, size=2, endpoint=True).shape == (2,)
    assert gp.random.poisson(2.0, size=3).shape == (3,)
    assert gp.random.rand(2, device=device).device == device


def test_errors_name_the_function():
    rng = gp.random.default_rng(0)
    cases = [
        (ValueError, "integers", lambda: rng.integers(5, 5)),
        (ValueError, "integers", lambda: rng.integers(5, 4, endpoint=True)),
        (ValueError, "randint|integers", lambda: gp.random.randint(3, 3)),
        (ValueError, "negative", lambda: rng.random(-1)),
        (ValueError, "negative", lambda: gp.random.rand(2, -1)),
        (TypeError, "rand", lambda: gp.random.rand((2, 3))),
        (ValueError, "exponential", lambda: rng.exponential(-1.0)),
        (ValueError, "normal", lambda: rng.normal(0.0, -1.0)),
        (ValueError, "uniform", lambda: rng.uniform(1.0, 0.0)),
        (ValueError, "choice.*positive", lambda: rng.choice(0, 3)),
        (ValueError, "choice.*positive", lambda: rng.choice(-2, 0)),
        (ValueError, "choice.*larger sample", lambda: rng.choice(3, 4, replace=False)),
        (ValueError, "choice.*sum to 1", lambda: rng.choice(3, 2, p=[0.5, 0.5, 0.1])),
        (ValueError, "choice.*non-negative", lambda: rng.choice(3, 2, p=[0.5, -0.5, 1.0])),
        (ValueError, "choice.*NaN", lambda: rng.choice(2, 2, p=[float("nan"), 1.0])),
        (ValueError, "choice.*1-dimensional", lambda: rng.choice(3, 2, p=[[0.5, 0.5, 0.0]])),
        (ValueError, "choice.*same size", lambda: rng.choice(3, 2, p=[0.5, 0.5])),
        (ValueError, "choice.*non-zero", lambda: rng.choice(3, 3, replace=False,
                                                            p=[0.5, 0.5, 0.0])),
        (ValueError, "choice", lambda: rng.choice(gp.asarray(1.0))),
        (TypeError, "choice", lambda: rng.choice(2.5)),
        (TypeError, "shuffle", lambda: rng.shuffle([1, 2, 3])),
        (TypeError, "shuffle", lambda: rng.shuffle(gp.asarray(1.0))),
        (TypeError, "random.*out", lambda: rng.random(3, out=gp.zeros(3))),
        (TypeError, "uniform.*shape or size", lambda: rng.uniform(0, 1, 3, size=3)),
        (TypeError, "normal.*mean or loc", lambda: rng.normal(1.0, loc=2.0)),
        (TypeError, "random.*dtype", lambda: rng.random(3, gp.int32)),
        (ValueError, "default_rng", lambda: gp.random.default_rng(-1)),
        (TypeError, "default_rng", lambda: gp.random.default_rng("seed")),
    ]
    for exc, match, f in cases:
        with pytest.raises(exc, match=match):
            f()
    # the numpy reference raises the same error types for the same calls
    nrng = np.random.default_rng(0)
    for f in (lambda: nrng.integers(5, 5), lambda: nrng.choice(3, 4, replace=False),
              lambda: nrng.choice(3, 2, p=[0.5, 0.5, 0.1]),
              lambda: nrng.choice(3, 3, replace=False, p=[0.5, 0.5, 0.0])):
        with pytest.raises(ValueError):
            f()
