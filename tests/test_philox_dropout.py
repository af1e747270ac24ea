"""philox_dropout: dropout's multiplier (scale where a Philox uniform is >= p, else 0) in one
kernel, bit for bit the composition (philox_uniform, a comparison and a where, which
grilly.nn.functional ran before) and the equations on numpy, on every device; the generator's
counter advances as uniform's does, so F.dropout and attention's dropout keep their values."""
import hashlib
import math

import numpy as np
import pytest

import grilly as gp
import grilly.nn.functional as F
from grilly.array import attention as _att
from grilly.array import random_bits
from grilly.random import Generator
from test_philox_uniform import _bits
from test_philox_uniform import _reference as uniform_reference

DTYPES = ["float16", "bfloat16", "float32", "float64"]
PS = (0.1, 0.5, 0.9)
# (n, counter, key): n not a multiple of 4 (nor of 2), the low word's carry, the counter's wrap
CASES = [(1, 0, 0), (3, 5, 2 ** 64 - 1), (7, 2 ** 32 - 1, 77), (1001, 2 ** 32 - 100, 2 ** 63 + 5),
         (13, 2 ** 64 - 2, 123456789), (4099, 2 ** 64 - 300, 2 ** 40 + 3)]


def _reference(n: int, counter: int, key: int, p: float, scale: float, dtype: str) -> np.ndarray:
    """The equations on numpy: u as philox_uniform makes it (test_philox_uniform's reference),
    compared with p in the dtype (float16: u and p rounded to float16), scale in the dtype where
    kept; bfloat16 is the float32 multiplier rounded."""
    u = uniform_reference(n, counter, key, dtype if dtype in ("float16", "float64") else "float32")
    f = u.dtype.type
    m = np.where(u >= f(p), f(scale), f(0.0))
    return m.astype(getattr(gp, dtype).np)


def _same(a, b) -> bool:
    return np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(_bits(a), _bits(b))


def _composed(device, n, counter, key, p, scale, d):
    """What the array layer's philox_dropout must equal: the composition (float16 compares in
    float16; bfloat16 rounds the float32 multiplier, as grilly computes bfloat16 ops)."""
    if d is gp.bfloat16:
        return gp.astype(random_bits.composed_dropout(device, n, counter, key, p, scale,
                                                      gp.float32), d)
    return random_bits.composed_dropout(device, n, counter, key, p, scale, d)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, counter, key", CASES)
def test_equals_composition_and_reference(device, dtype, n, counter, key):
    d = getattr(gp, dtype)
    for p in PS:
        scale = 1.0 / (1.0 - p)
        got = random_bits.philox_dropout(n, counter, key, p, scale, d, device)
        assert got.shape == (n,) and got.dtype == d and got.device == device
        assert _same(got, _reference(n, counter, key, p, scale, dtype))
        assert _same(got, _composed(device, n, counter, key, p, scale, d))
        # what dropout ran before: philox_uniform's values, >= p, where
        u = random_bits.philox_uniform(n, counter, key, d, device)
        old = gp.where(u >= p, gp.asarray(scale, dtype=d, device=device),
                       gp.asarray(0.0, dtype=d, device=device))
        if d is not gp.bfloat16:   # (bfloat16 compares the rounded u: see _composed)
            assert _same(got, old)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")   # float16's 1e6: inf
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_edge_p_and_scale(device, dtype):
    """p outside [0, 1], infinite or NaN, scale 0, negative or past float16's range, p between
    two float16 values: the composition's answers."""
    d = getattr(gp, dtype)
    n, counter, key = 23, 2 ** 64 - 3, 99
    for p, scale in ((0.0, 1.0), (1.0, 0.0), (-1.0, 2.5), (2.0, 3.0), (math.inf, 1.0),
                     (-math.inf, -0.5), (math.nan, 4.0), (1 / 3, 1.5), (0.5, -2.0),
                     (1.0 - 2.0 ** -12, 1e6), (2.0 ** -20, 1.0), (0.75 + 2.0 ** -13, 2.0)):
        got = random_bits.philox_dropout(n, counter, key, p, scale, d, device)
        assert _same(got, random_bits.composed_dropout(device, n, counter, key, p, scale, d))
        assert _same(got, _reference(n, counter, key, p, scale, dtype))
    # p equal to some u: kept (>=, not >)
    u = np.asarray(random_bits.philox_uniform(n, counter, key, d, device))
    for j in (0, 5, 22):
        got = random_bits.philox_dropout(n, counter, key, float(u[j]), 2.0, d, device)
        assert np.asarray(got)[j] == 2.0
        assert _same(got, random_bits.composed_dropout(device, n, counter, key, float(u[j]), 2.0,
                                                       d))


def test_builtin_backends_have_the_kernel(device):
    if device.backend.name in ("cpu", "vulkan"):
        assert "philox_dropout" in device.kernels


def test_empty(device):
    for dtype in DTYPES:
        m = random_bits.philox_dropout(0, 2 ** 64 - 1, 3, 0.5, 2.0, getattr(gp, dtype), device)
        assert m.shape == (0,) and m.dtype == getattr(gp, dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_generator_keep_scale_and_counter(device, dtype):
    """Generator.keep_scale is uniform(...) >= p then where, from the same blocks, and leaves
    the counter where uniform leaves it (also across the 64-bit wrap)."""
    d = getattr(gp, dtype)
    key, start = 2024, 2 ** 64 - 3
    for shape in ((), (0,), (5,), (3, 3), (2, 0, 4), (7, 9)):
        for p in PS:
            a, b = Generator(key), Generator(key)
            a.set_state((key, start))
            b.set_state((key, start))
            m = a.keep_scale(shape, p, 1.0 / (1.0 - p), dtype=d, device=device)
            u = b.uniform(shape=shape, dtype=d, device=device)
            want = gp.where(u >= p, gp.asarray(1.0 / (1.0 - p), dtype=d, device=device),
                            gp.asarray(0.0, dtype=d, device=device))
            assert m.shape == shape and m.dtype == d and m.device == device
            assert _same(m, want)
            assert a.get_state() == b.get_state()
            assert np.array_equal(np.asarray(a.random_raw(5, device=device)),
                                  np.asarray(b.random_raw(5, device=device)))


def test_module_keep_scale_uses_the_default_generator(device):
    gp.random.seed(31)
    m = gp.random.keep_scale((4, 5), 0.25, 4.0 / 3.0, device=device)
    state = gp.random.get_state()
    gp.random.seed(31)
    u = gp.random.uniform(shape=(4, 5), device=device)
    assert m.dtype == gp.float32 and gp.random.get_state() == state
    f32 = gp.float32
    assert _same(m, gp.where(u >= 0.25, gp.asarray(4.0 / 3.0, dtype=f32, device=device),
                             gp.asarray(0.0, dtype=f32, device=device)))


# F.dropout(ones(1003), p) after gp.random.seed(1234): sha256 (first 16 hex digits) of the
# output's bytes, made by the code before philox_dropout (identical on cpu and vulkan)
DROPOUT_SUMS = {
    ("float16", 0.1): "c1fd486e9caf4b4e", ("float16", 0.5): "32b9415e1c12b3c1",
    ("float16", 0.9): "199377660f62dd7e", ("float32", 0.1): "6555b3b607d907b2",
    ("float32", 0.5): "22ac9f0f89e1ab8c", ("float32", 0.9): "79474f726d026088",
    ("float64", 0.1): "8a8009f72a674099", ("float64", 0.5): "ffdf00096104eba6",
    ("float64", 0.9): "6220e545bc0e6386",
}


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_dropout_keeps_its_values(device, dtype):
    d = getattr(gp, dtype)
    for p in PS:
        gp.random.seed(1234)
        y = F.dropout(gp.ones((1003,), dtype=d, device=device), p, True)
        assert hashlib.sha256(np.asarray(y).tobytes()).hexdigest()[:16] == \
            DROPOUT_SUMS[(dtype, p)]
        assert gp.random.get_state() == (1234, 502 if dtype == "float64" else 251)
    # and on values, twice from one seed, against the old ops from the same seed
    x = gp.asarray(np.random.default_rng(5).standard_normal((6, 37)).astype(d.np), device=device)
    for p in PS:
        gp.random.seed(77)
        got = [F.dropout(x, p, True) for _ in range(2)]
        state = gp.random.get_state()
        gp.random.seed(77)
        for y in got:
            keep = gp.random.uniform(shape=x.shape, dtype=d, device=device) >= p
            want = x * gp.where(keep, gp.asarray(1.0 / (1.0 - p), dtype=d, device=device),
                                gp.asarray(0.0, dtype=d, device=device))
            assert _same(y, want)
        assert gp.random.get_state() == state
    # an Array p (promoted with the uniforms, so compared in float64 when it is float64)
    pa = gp.asarray(0.3, dtype=gp.float64, device=device)
    gp.random.seed(3)
    y = F.dropout(x, pa, True)
    gp.random.seed(3)
    keep = gp.random.uniform(shape=x.shape, dtype=d, device=device) >= pa
    want = x * gp.where(keep, gp.asarray(1.0 / (1.0 - pa), dtype=d, device=device),
                        gp.asarray(0.0, dtype=d, device=device))
    assert _same(y, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sdpa_dropout_keeps_its_values(device, dtype):
    """scaled_dot_product_attention's dropout: the attention kernel with the multiplier the old
    ops made from the same seed (p = 1 included: a zero multiplier)."""
    d = getattr(gp, dtype)
    r = np.random.default_rng(9)
    q, k, v = (gp.asarray(r.standard_normal(s).astype(d.np), device=device)
               for s in ((2, 3, 9, 8), (2, 3, 11, 8), (2, 3, 11, 5)))
    for p in (0.2, 0.5, 1.0):
        for causal in (False, True):
            gp.random.seed(4321)
            got = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=causal)
            state = gp.random.get_state()
            gp.random.seed(4321)
            u = gp.random.uniform(shape=(2, 3, 9, 11), dtype=d, device=device)
            mult = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
            drop = gp.where(u >= p, gp.asarray(mult, dtype=d, device=device),
                            gp.asarray(0.0, dtype=d, device=device))
            want, _ = _att.attention(q, k, v, None, drop,
                                     causal=causal, scale=1.0 / math.sqrt(8))
            assert gp.random.get_state() == state
            assert _same(got, want)


def test_jit_replays_draw_fresh_masks(device):
    def f(x):
        return F.dropout(x, 0.5, True)

    x = gp.ones((64,), dtype=gp.float32, device=device)
    gp.random.seed(11)
    eager = [np.asarray(f(x)) for _ in range(3)]
    gp.random.seed(11)
    jf = gp.jit(f)
    jitted = [np.asarray(jf(x)) for _ in range(3)]
    for e, j in zip(eager, jitted):
        np.testing.assert_array_equal(j, e)
    assert not np.array_equal(jitted[1], jitted[2])


def test_bad_arguments(device):
    f32 = gp.float32
    for args in ((-1, 0, 0), (1.5, 0, 0), (True, 0, 0), (2 ** 62, 0, 0), (1, -1, 0),
                 (1, 2 ** 64, 0), (1, 0, 2 ** 64), (1, 0, -1), (1, 0.0, 0)):
        with pytest.raises(ValueError, match=r"philox_dropout: (n|counter|key) must be an int"):
            random_bits.philox_dropout(*args, 0.5, 2.0, f32, device)
    for p, scale, name in ((None, 2.0, "p"), ("0.5", 2.0, "p"), (True, 2.0, "p"),
                           (gp.asarray(0.5), 2.0, "p"), (0.5, None, "scale"),
                           (0.5, False, "scale"), (0.5, 2j, "scale")):
        with pytest.raises(TypeError, match=f"philox_dropout: {name} must be a real number"):
            random_bits.philox_dropout(4, 0, 0, p, scale, f32, device)
    for d in (gp.int32, gp.complex64, np.float32, "float32"):
        with pytest.raises(TypeError, match="philox_dropout: dtype must be a real floating"):
            random_bits.philox_dropout(4, 0, 0, 0.5, 2.0, d, device)
    g = Generator(0)
    # (bfloat16 masks are the float32 draw rounded: tests/test_bfloat16.py)
    with pytest.raises(TypeError, match="keep_scale: dtype must be a real floating"):
        g.keep_scale((3,), 0.5, 2.0, dtype=gp.int32, device=device)
    with pytest.raises(TypeError, match="keep_scale: p must be a real number"):
        g.keep_scale((3,), "0.5", 2.0, device=device)
    assert g.get_state() == (0, 0)   # nothing drawn


def test_one_dispatch_on_vulkan(device):
    """The reason for the kernel: a float16, float32 or float64 mask is one dispatch (uniform,
    compare and where were three; float16 four, with a cast), and dropout that and its
    multiply."""
    if device.backend.name != "vulkan":
        pytest.skip("counts Vulkan dispatches")
    dev = device
    g = Generator(1)
    np.asarray(g.keep_scale((64, 64), 0.5, 2.0, device=dev))
    for d in (gp.float16, gp.float32, gp.float64):
        if not dev.backend.supports_dtype(dev, d):
            continue
        before = gp.device_stats(dev)["dispatches"]
        m = g.keep_scale((64, 64), 0.3, 1.0 / 0.7, dtype=d, device=dev)
        assert gp.device_stats(dev)["dispatches"] - before == 1
        x = gp.ones((64, 64), dtype=d, device=dev)
        np.asarray(m)
        np.asarray(x)
        before = gp.device_stats(dev)["dispatches"]
        np.asarray(F.dropout(x, 0.3, True))
        assert gp.device_stats(dev)["dispatches"] - before == 2
