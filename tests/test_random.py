"""grilly.random: Philox known answers, reproducibility, cross-device identity, distributions."""
import math

import numpy as np
import pytest

import grilly as gp
from grilly.random import Generator, philox4x32

KAT = [  # Random123's philox4x32_10 known-answer vectors: counter, key, result
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("use_u64", [True, False])
def test_philox_known_answers(device, use_u64):
    for ctr, key, want in KAT:
        cs = [gp.asarray([c], dtype=gp.uint32, device=device) for c in ctr]
        got = philox4x32(*cs, *key, use_u64=use_u64)
        assert [int(x[0]) for x in got] == list(want)


def test_reproducible_and_stateful():
    a = Generator(123)
    b = Generator(123)
    np.testing.assert_array_equal(np.asarray(a.uniform(shape=50)), np.asarray(b.uniform(shape=50)))
    x1, x2 = np.asarray(a.normal(shape=10)), np.asarray(a.normal(shape=10))
    assert not np.array_equal(x1, x2)
    assert not np.array_equal(np.asarray(Generator(1).random_raw(8)),
                              np.asarray(Generator(2).random_raw(8)))
    # the counter is the whole state: two draws of 8 words equal one of 16
    c, d = Generator(5), Generator(5)
    both = np.concatenate([np.asarray(c.random_raw(8)), np.asarray(c.random_raw(8))])
    np.testing.assert_array_equal(both, np.asarray(d.random_raw(16)))
    s = c.get_state()
    u = np.asarray(c.uniform(shape=7, dtype=gp.float64))
    c.set_state(s)
    np.testing.assert_array_equal(u, np.asarray(c.uniform(shape=7, dtype=gp.float64)))
    gp.random.seed(9)
    r1 = np.asarray(gp.random.integers(0, 100, shape=20))
    gp.random.seed(9)
    np.testing.assert_array_equal(r1, np.asarray(gp.random.integers(0, 100, shape=20)))


def test_counter_carries_into_high_word():
    g = Generator(77)
    g.set_state((77, 2 ** 32 - 1))
    words = np.asarray(g.random_raw(8)).reshape(2, 4)
    for i, blk in enumerate((2 ** 32 - 1, 2 ** 32)):
        cs = [gp.asarray([v], dtype=gp.uint32) for v in (blk & 0xFFFFFFFF, blk >> 32, 0, 0)]
        ref = [int(x[0]) for x in philox4x32(*cs, 77, 0)]
        assert list(words[i]) == ref


def test_identical_on_every_device(device):
    cpu = gp.backends.registry.device("cpu")
    for dev_draw in (
        lambda g, d: g.random_raw(37, device=d),
        lambda g, d: g.uniform(-2.0, 3.0, (5, 7), device=d),
        lambda g, d: g.integers(-5, 1000, (41,), device=d),
        lambda g, d: g.bernoulli(0.3, (33,), device=d),
        lambda g, d: g.uniform(shape=(9,), dtype=gp.float64, device=d),
    ):
        a = dev_draw(Generator(2024), device)
        b = dev_draw(Generator(2024), cpu)
        assert a.device == device
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _ks(sample, cdf) -> float:
    x = np.sort(sample)
    n = len(x)
    f = np.array([cdf(v) for v in x])
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_distribution(dtype):
    u = np.asarray(Generator(11).uniform(2.0, 5.0, 20000, dtype=getattr(gp, dtype)))
    assert u.dtype == dtype and u.min() >= 2.0 and u.max() < 5.0
    assert abs(u.mean() - 3.5) < 0.03 and abs(u.var() - 0.75) < 0.03
    assert _ks(u[:4000], lambda v: (v - 2.0) / 3.0) < 1.63 / math.sqrt(4000)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_distribution(dtype):
    z = np.asarray(Generator(12).normal(1.0, 2.0, (100, 201), dtype=getattr(gp, dtype)))
    assert z.shape == (100, 201) and z.dtype == dtype and np.all(np.isfinite(z))
    assert abs(z.mean() - 1.0) < 0.05 and abs(z.std() - 2.0) < 0.05
    cdf = lambda v: 0.5 * (1 + math.erf((v - 1.0) / (2.0 * math.sqrt(2))))  # noqa: E731
    assert _ks(z.ravel()[:4000], cdf) < 1.63 / math.sqrt(4000)


def test_integers_bernoulli_permutation():
    g = Generator(13)
    i = np.asarray(g.integers(-3, 4, shape=14000))
    assert i.dtype == np.int64 and i.min() == -3 and i.max() == 3
    counts = np.bincount(i + 3)
    chi2 = np.sum((counts - 2000) ** 2 / 2000)
    assert chi2 < 22.5  # 6 degrees of freedom, p < 0.001
    assert np.asarray(g.integers(10, shape=(3, 2), dtype=gp.int32)).dtype == np.int32
    b = np.asarray(g.bernoulli(0.25, 10000))
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.25) < 0.02
    p = gp.asarray([0.0, 1.0, 0.0, 1.0], dtype=gp.float32)
    np.testing.assert_array_equal(np.asarray(g.bernoulli(p)), [0, 1, 0, 1])
    perm = np.asarray(g.permutation(50))
    assert sorted(perm.tolist()) == list(range(50)) and perm.tolist() != list(range(50))
    x = gp.asarray(np.arange(12.0).reshape(6, 2))
    px = np.asarray(g.permutation(x))
    assert sorted(px[:, 0].tolist()) == list(range(0, 12, 2)) and np.all(px[:, 1] == px[:, 0] + 1)


def test_errors():
    with pytest.raises(TypeError, match="seed"):
        Generator(1.5)
    with pytest.raises(ValueError, match="seed"):
        Generator(-1)
    g = Generator(0)
    with pytest.raises(ValueError, match="high"):
        g.integers(5, 5)
    with pytest.raises(ValueError, match="2\\*\\*32"):
        g.integers(0, 2 ** 33)
    with pytest.raises(TypeError, match="floating"):
        g.uniform(shape=3, dtype=gp.int32)
    with pytest.raises(ValueError, match="negative"):
        g.uniform(shape=(-1,))
    with pytest.raises(ValueError, match="std"):
        g.normal(0.0, -1.0, 3)
    with pytest.raises(ValueError, match="p must"):
        g.bernoulli(1.5, 3)


@pytest.mark.parametrize("m, counter, key", [(1, 0, 0), (9, 2**32 - 4, 2**63 + 5),
                                             (3000, 2**64 - 1000, 123456789)])
def test_philox_blocks_kernel_equals_the_composition(device, m, counter, key):
    """The one-dispatch kernel against the namespace rounds (which the known answers above
    check), across the low word's carry and the 64-bit counter's wrap."""
    from grilly.array import random_bits

    got = random_bits.philox_blocks(m, counter, key, device)
    assert got.shape == (4, m) and got.dtype == gp.uint32
    want = random_bits.composed_blocks(got.device, m, counter, key)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(ValueError, match=r"philox_blocks: counter must be an int in \[0, "):
        random_bits.philox_blocks(1, -1, 0, device)


@pytest.mark.parametrize("counter, key", [(2**32 - 3, 2**63 + 5), (2**64 - 2, 77)])
def test_counter_array_draws_equal_the_int_draws(device, counter, key):
    """Where a device's philox kernels take the counter as a (4,) uint32 array (how a traced
    graph gets a fresh counter on every replay), blocks, uniforms and dropout masks of every
    dtype are the draws of the same counter and key given as ints, bit for bit, across the low
    word's carry and the counter's wrap; elsewhere such a counter is a TypeError."""
    from grilly.array import random_bits as rb

    dev = gp.asarray(0, device=device).device
    ctr = rb.counter_array(counter, key, dev)
    np.testing.assert_array_equal(np.asarray(ctr), [counter & 0xFFFFFFFF, counter >> 32,
                                                    key & 0xFFFFFFFF, key >> 32])
    if not rb.takes_counter_array(dev, "philox_blocks"):
        with pytest.raises(TypeError, match="philox_blocks: .* does not take the counter"):
            rb.philox_blocks(3, ctr, None, dev)
        return
    np.testing.assert_array_equal(np.asarray(rb.philox_blocks(9, ctr, None, dev)),
                                  np.asarray(rb.philox_blocks(9, counter, key, dev)))
    for dtype in (gp.float16, gp.bfloat16, gp.float32, gp.float64):
        if dtype is gp.float64 and not dev.backend.supports_dtype(dev, gp.float64):
            continue
        np.testing.assert_array_equal(
            np.asarray(rb.philox_uniform(11, ctr, None, dtype, dev)),
            np.asarray(rb.philox_uniform(11, counter, key, dtype, dev)))
        if rb.takes_counter_array(dev, "philox_dropout", dtype):
            np.testing.assert_array_equal(
                np.asarray(rb.philox_dropout(13, ctr, None, 0.3, 2.0, dtype, dev)),
                np.asarray(rb.philox_dropout(13, counter, key, 0.3, 2.0, dtype, dev)))
    with pytest.raises(ValueError, match="counter must be a counter_array"):
        rb.philox_blocks(3, ctr, 5, dev)
