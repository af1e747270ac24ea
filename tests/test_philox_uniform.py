"""philox_uniform: uniform floats straight from the Philox words, bit for bit the composition
(philox_blocks and namespace casts, which grilly.random used before) and the documented
equations on numpy, on every device; the generator's counter advances as before."""
import numpy as np
import pytest

import grilly as gp
from grilly.array import random_bits
from grilly.random import Generator, philox4x32

DTYPES = ["float16", "bfloat16", "float32", "float64"]
# (n, counter, key): odd sizes, the low word's carry, the 64-bit counter's wrap
CASES = [(1, 0, 0), (3, 5, 2 ** 64 - 1), (7, 2 ** 32 - 1, 77), (1001, 2 ** 32 - 100, 2 ** 63 + 5),
         (13, 2 ** 64 - 2, 123456789), (4096, 2 ** 64 - 300, 2 ** 40 + 3)]


def _words(count: int, counter: int, key: int) -> np.ndarray:
    """Stream words 0 .. count - 1 of blocks counter, counter + 1, ... (mod 2^64): block
    counters made with Python ints, rounds by philox4x32 on the cpu (test_random checks it
    against Random123's known answers)."""
    m = -(-count // 4)
    blk = [(counter + i) % 2 ** 64 for i in range(m)]
    cs = [gp.asarray(np.array(v, np.uint32), device="cpu") for v in
          ([b & 0xFFFFFFFF for b in blk], [b >> 32 for b in blk], [0] * m, [0] * m)]
    out = philox4x32(*cs, key & 0xFFFFFFFF, key >> 32, use_u64=True)
    return np.stack([np.asarray(w) for w in out], axis=1).reshape(-1)[:count]


def _reference(n: int, counter: int, key: int, dtype: str) -> np.ndarray:
    """The contract's equations on numpy."""
    if dtype == "float64":
        w = _words(2 * n, counter, key).astype(np.uint64)
        return ((w[0::2] >> 5) * 2.0 ** 26 + (w[1::2] >> 6)) * 2.0 ** -53
    u = (_words(n, counter, key) >> 8).astype(np.float32) * np.float32(2.0 ** -24)
    return u.astype(getattr(gp, dtype).np)


def _bits(a) -> np.ndarray:
    """An Array's or ndarray's values as unsigned integers of the same width."""
    h = np.asarray(a)
    return h.view(f"u{h.dtype.itemsize}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, counter, key", CASES)
def test_equals_composition_and_reference(device, dtype, n, counter, key):
    d = getattr(gp, dtype)
    got = random_bits.philox_uniform(n, counter, key, d, device)
    assert got.shape == (n,) and got.dtype == d and got.device == device
    want = _reference(n, counter, key, dtype)
    assert np.array_equal(_bits(got), _bits(want))
    # the composition is called for float32/float64 (the narrower ones cast its float32)
    wide = gp.float64 if dtype == "float64" else gp.float32
    comp = random_bits.composed_uniform(device, n, counter, key, wide)
    assert np.array_equal(_bits(gp.astype(comp, d)), _bits(got))
    h = np.asarray(gp.astype(got, gp.float64))
    # rounding to float16/bfloat16 may reach 1 (as the composition always did)
    assert h.min() >= 0.0 and (h.max() < 1.0 if dtype in ("float32", "float64") else
                               h.max() <= 1.0)


def test_builtin_backends_have_the_kernel(device):
    if device.backend.name in ("cpu", "vulkan"):
        assert "philox_uniform" in device.kernels


@pytest.mark.parametrize("dtype", DTYPES)
def test_generator_draws_and_counter(device, dtype):
    """Generator.uniform is philox_uniform from the generator's counter, which then stands
    ceil(n/4) blocks (float64: ceil(2n/4)) further on: the next words continue the stream."""
    d = getattr(gp, dtype)
    key, start = 2024, 2 ** 64 - 3
    for shape in ((), (0,), (5,), (3, 3), (2, 0, 4), (4, 4)):
        g = Generator(key)
        g.set_state((key, start))
        u = g._unit(shape, d, device, "uniform")
        n = int(np.prod(shape))
        words = 2 * n if dtype == "float64" else n
        assert g.get_state() == (key, (start + -(-words // 4)) % 2 ** 64)
        assert u.shape == shape and u.dtype == d
        assert np.array_equal(_bits(u).reshape(-1), _bits(_reference(n, start, key, dtype)))
        after = np.asarray(g.random_raw(3, device=device))
        assert np.array_equal(after, _words(4 * (-(-words // 4)) + 3, start, key)[-3:])


def test_public_draws_match_the_cpu(device):
    """(normal is left out: its log and cos round per device.)"""
    cpu = gp.backends.registry.device("cpu")
    for draw in (lambda g, d: g.uniform(-1.0, 3.0, (7, 9), dtype=gp.float16, device=d),
                 lambda g, d: g.uniform(shape=(33,), dtype=gp.float64, device=d),
                 lambda g, d: g.bernoulli(0.4, (41,), device=d)):
        a, b = Generator(6), Generator(6)
        x, y = draw(a, device), draw(b, cpu)
        assert np.array_equal(_bits(x), _bits(y)) and a.get_state() == b.get_state()


def test_empty(device):
    for dtype in DTYPES:
        u = random_bits.philox_uniform(0, 2 ** 64 - 1, 3, getattr(gp, dtype), device)
        assert u.shape == (0,) and u.dtype == getattr(gp, dtype)


def test_bad_arguments(device):
    f32 = gp.float32
    for args in ((-1, 0, 0), (1.5, 0, 0), (True, 0, 0), (2 ** 62, 0, 0), (1, -1, 0),
                 (1, 2 ** 64, 0), (1, 0, 2 ** 64), (1, 0, -1), (1, 0.0, 0)):
        with pytest.raises(ValueError, match=r"philox_uniform: (n|counter|key) must be an int"):
            random_bits.philox_uniform(*args, f32, device)
    for d in (gp.int32, gp.complex64, np.float32, "float32"):
        with pytest.raises(TypeError, match="philox_uniform: dtype must be a real floating"):
            random_bits.philox_uniform(4, 0, 0, d, device)


def test_one_dispatch_on_vulkan(device):
    """The reason for the kernel: a float32 or float64 draw is one dispatch (it was six and
    nine), float16 the float32 one and a cast."""
    if device.backend.name != "vulkan":
        pytest.skip("counts Vulkan dispatches")
    dev = device
    g = Generator(1)
    np.asarray(g.uniform(shape=(64, 64), device=dev))
    for d, dispatches in ((gp.float32, 1), (gp.float64, 1), (gp.float16, 2)):
        if not dev.backend.supports_dtype(dev, d):
            continue
        before = gp.device_stats(dev)["dispatches"]
        np.asarray(g.uniform(shape=(64, 64), dtype=d, device=dev))
        assert gp.device_stats(dev)["dispatches"] - before == dispatches
