"""gp.bfloat16 on every device: storage, conversions bit for bit against ml_dtypes (the JAX
project's numpy bfloat16), arithmetic computed in float32 and rounded once, promotion, views and
indexing, autograd, autocast and DLPack with torch as the oracle."""
import math

import ml_dtypes
import numpy as np
import pytest
import torch

import grilly as gp
from grilly import amp, nn

BF = ml_dtypes.bfloat16
# the references cast inf and NaN, and overflow on purpose
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
R = np.random.default_rng(3)
SPECIAL = np.array([0.0, -0.0, 1.0, -2.5, 1.00390625, 1.01171875, 1.0 + 2**-8 + 2**-20, 3e38,
                    3.4e38, -3.4e38, np.inf, -np.inf, np.nan, 1e-40, -1e-41, 1.17e-38, 65504.0,
                    2.0**-133], np.float32)


def _bits(a) -> np.ndarray:
    return np.asarray(a).view(np.uint16)


def _bf(x, device) -> gp.Array:
    return gp.asarray(np.asarray(x, np.float32).astype(BF), device=device)


def test_dtype_facts():
    assert repr(gp.bfloat16) == "grilly.bfloat16" and gp.bfloat16.itemsize == 2
    assert gp.isdtype(gp.bfloat16, "real floating")
    f, ref = gp.finfo(gp.bfloat16), ml_dtypes.finfo(BF)
    assert (f.bits, f.eps, f.max, f.smallest_normal) == (16, float(ref.eps), float(ref.max),
                                                         float(ref.smallest_normal))
    P = gp.result_type
    assert P(gp.bfloat16, gp.bfloat16) == gp.bfloat16
    assert P(gp.bfloat16, gp.float16) == gp.float32   # neither holds the other (JAX, torch)
    assert P(gp.float16, gp.bfloat16) == gp.float32
    assert P(gp.bfloat16, gp.float32) == gp.float32 and P(gp.bfloat16, gp.float64) == gp.float64
    assert P(gp.bfloat16, gp.complex64) == gp.complex64
    assert P(gp.bfloat16, gp.complex128) == gp.complex128
    assert P(gp.bfloat16, 1.5) == gp.bfloat16 and P(gp.bfloat16, 2) == gp.bfloat16
    with pytest.raises(TypeError):
        P(gp.bfloat16, gp.int32)   # mixed integer and float, as for every float dtype
    assert gp.can_cast(gp.bfloat16, gp.float32) and not gp.can_cast(gp.float32, gp.bfloat16)
    assert not gp.can_cast(gp.float16, gp.bfloat16) and not gp.can_cast(gp.bfloat16, gp.float16)
    info = gp.__array_namespace_info__()
    assert info.dtypes(kind="bfloat16") == {"bfloat16": gp.bfloat16}
    assert "bfloat16" not in info.dtypes()   # not an Array API dtype: its own kind only
    assert gp.asarray(np.ones(2, BF)).dtype == gp.bfloat16


@pytest.mark.parametrize("src", ["float32", "float64", "float16", "int32", "int64", "uint8",
                                 "bool"])
def test_astype_to_bfloat16_bit_exact(device, src):
    """Round to nearest even, inf kept, NaN quiet, subnormals kept; float64 and integers through
    float32, as ml_dtypes converts."""
    rnd = R.standard_normal(4000) * np.exp2(R.integers(-140, 130, 4000))
    ties = (R.integers(0, 2**16, 2000).astype(np.uint32) << 16 | 0x8000).view(np.float32)
    vals = np.concatenate([SPECIAL, rnd.astype(np.float32), ties])
    if src in ("int32", "int64", "uint8", "bool"):
        vals = np.concatenate([R.integers(-2**31, 2**31, 3000), [2**24 + 1, 2**25 + 3, 255, 0]])
        vals = vals.astype(src) if src != "uint8" else (vals % 256).astype(np.uint8)
        if src == "bool":
            vals = vals % 2 == 1
    h = vals.astype(src)
    if src == "float16":
        h = h[np.isfinite(h) | np.isnan(h) | np.isinf(h)]
    got = gp.astype(gp.asarray(h, device=device), gp.bfloat16)
    assert got.dtype == gp.bfloat16
    ref = h.astype(BF) if src != "float64" else h.astype(np.float32).astype(BF)
    assert np.array_equal(_bits(got), _bits(ref))


@pytest.mark.parametrize("dst", ["float32", "float64", "float16", "int32", "bool", "bfloat16"])
def test_astype_from_bfloat16(device, dst):
    bits = np.concatenate([R.integers(0, 2**16, 5000), [0x7f80, 0xff80, 0x7fc0, 0x8000, 1]])
    h = bits.astype(np.uint16).view(BF)
    if dst in ("int32",):
        h = h[np.isfinite(h.astype(np.float32)) & (np.abs(h.astype(np.float32)) < 2**31)]
    got = np.asarray(gp.astype(gp.asarray(h, device=device), getattr(gp, dst)))
    ref = h.astype(getattr(ml_dtypes, dst) if dst == "bfloat16" else dst)
    if dst == "bfloat16":
        assert np.array_equal(_bits(got), _bits(ref))
    else:
        np.testing.assert_array_equal(got, ref)


def test_host_round_trip_and_creation(device):
    h = (R.standard_normal((5, 7)) * 100).astype(BF)
    x = gp.asarray(h, device=device)
    assert x.dtype == gp.bfloat16 and np.array_equal(_bits(x), _bits(h))
    assert np.array_equal(_bits(gp.asarray([1.1, -2.2, 3e38], dtype=gp.bfloat16, device=device)),
                          _bits(np.array([1.1, -2.2, 3e38], np.float32).astype(BF)))
    for z, ref in [(gp.zeros((2, 3), dtype=gp.bfloat16, device=device), np.zeros((2, 3))),
                   (gp.ones(4, dtype=gp.bfloat16, device=device), np.ones(4)),
                   (gp.full((3,), 3.3, dtype=gp.bfloat16, device=device), np.full(3, 3.3)),
                   (gp.arange(5, dtype=gp.bfloat16, device=device), np.arange(5.0)),
                   (gp.linspace(0, 1, 5, dtype=gp.bfloat16, device=device), np.linspace(0, 1, 5)),
                   (gp.eye(3, dtype=gp.bfloat16, device=device), np.eye(3))]:
        assert z.dtype == gp.bfloat16
        assert np.array_equal(_bits(z), _bits(ref.astype(np.float32).astype(BF)))
    assert gp.zeros_like(x).dtype == gp.bfloat16 and gp.empty_like(x).dtype == gp.bfloat16


def test_elementwise_is_float32_rounded_once(device):
    """Each op computes in float32 and rounds its result once: ml_dtypes' own ufuncs do the
    same, so the bits agree."""
    a = (R.standard_normal(3000) * 10).astype(BF)
    b = (R.standard_normal(3000) * 10 + 0.5).astype(BF)
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    for got, ref in [(ga + gb, fa + fb), (ga * gb, fa * fb), (ga - gb, fa - fb),
                     (ga / gb, fa / fb), (ga * 2.5, fa * np.float32(2.5)), (-ga, -fa),
                     (gp.abs(ga), np.abs(fa)), (gp.maximum(ga, gb), np.maximum(fa, fb)),
                     (gp.sqrt(gp.abs(ga)), np.sqrt(np.abs(fa)))]:
        assert got.dtype == gp.bfloat16
        assert np.array_equal(_bits(got), _bits(ref.astype(BF)))
    # transcendental: float32 within grilly's few-ulp bound, then one rounding: at most 1 ulp
    e = np.asarray(gp.exp(ga / 8.0)).astype(np.float64)
    ref = np.exp((fa / np.float32(8)).astype(np.float64))
    assert np.all(np.abs(e - ref) <= np.spacing(ref.astype(BF)).astype(np.float64) + 1e-300)
    assert (ga > gb).dtype == gp.bool and np.array_equal(np.asarray(ga > gb), fa > fb)
    assert int(gp.argmax(ga)) == int(np.argmax(fa))


NATIVE_BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "equal", "not_equal",
                 "less", "less_equal", "greater", "greater_equal"]
NATIVE_UNARY = ["negative", "positive", "isnan", "isinf", "isfinite", "signbit"]


def _composed(name, *args):
    """What the op computed before a backend ran it on bfloat16: float32 copies of bfloat16
    arrays (Python floats rounded to bfloat16 first, as torch and JAX take them), the float32
    op, a float result rounded to bfloat16."""
    f32 = [gp.astype(a, gp.float32) if isinstance(a, gp.Array) else
           float(BF(a)) if type(a) is float else a for a in args]
    r = getattr(gp, name)(*f32)
    return gp.astype(r, gp.bfloat16) if r.dtype == gp.float32 else r


@pytest.mark.parametrize("name", NATIVE_BINARY + NATIVE_UNARY)
def test_native_elementwise_equals_the_float32_composition(device, name):
    """The elementwise ops a backend may run on bfloat16 itself (Vulkan: ew_bfloat16, one
    dispatch) give the composition's bits: specials, subnormals, ties, broadcasting, and
    Python scalars (0.1 taken as bfloat16(0.1), as torch and JAX take it)."""
    a = np.concatenate([SPECIAL, (R.standard_normal(500) * 4).astype(np.float32)])
    b = np.concatenate([SPECIAL[::-1], (R.standard_normal(500) * 4).astype(np.float32)])
    ga, gb = _bf(a, device), _bf(b, device)
    fn = getattr(gp, name)
    cases = [(ga,)] if name in NATIVE_UNARY else [
        (ga, gb), (ga, gb[3:4]), (gp.reshape(ga[:512], (32, 16)), gp.reshape(gb[:16], (16,))),
        (ga, 0.0), (ga, -1.5), (2, ga), (ga, 0.1)]
    for args in cases:
        got = fn(*args)
        want = _composed(name, *args)
        assert got.dtype == want.dtype and got.shape == want.shape, (name, args)
        if got.dtype == gp.bool:
            assert np.array_equal(np.asarray(got), np.asarray(want)), name
        else:
            assert np.array_equal(_bits(got), _bits(want)), name
    if device.backend.name == "vulkan":   # one dispatch, where the three casts and op were
        np.asarray(ga)
        before = gp.device_stats(device)["dispatches"]
        fn(*cases[0])
        assert gp.device_stats(device)["dispatches"] - before == 1


def test_native_elementwise_gradients_equal_cpu(device):
    """Gradients through the native ops (add, multiply, maximum) are the float32
    composition's, as the cpu device (which composes) computes them, bit for bit."""
    x, w, b = ((R.standard_normal(s) * 2).astype(np.float32) for s in ((8, 5), (8, 5), (5,)))
    grads = []
    for dev in (device, gp.backends.registry.device("cpu")):
        gx, gw, gb = (_bf(v, dev) for v in (x, w, b))
        for t in (gx, gw, gb):
            t.requires_grad = True
        y = gp.maximum(gx * gw + gb, 0.0) - gx
        gp.sum(y * y).backward()
        grads.append([np.asarray(t.grad) for t in (gx, gw, gb)] + [np.asarray(y)])
    for a, c in zip(*grads):
        assert np.array_equal(a.view(np.uint16), c.view(np.uint16))


def test_python_floats_take_the_bfloat16_dtype(device):
    """A Python float with a bfloat16 array is a bfloat16 value (the Array API's rule, JAX's
    weak types, grilly's float16): x == 0.1 holds where x is bfloat16(0.1), as in torch, and
    x * 0.1 is x * bfloat16(0.1) computed in float32 and rounded once (ml_dtypes' ufunc)."""
    v = np.array([0.1, 1.0, 0.3, -2.7, 1e-3], np.float32)
    x, t, h = _bf(v, device), torch.tensor(v).to(torch.bfloat16), v.astype(BF)
    for s in (0.1, 0.3, -2.7, 1e-3):
        for op in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
            got = getattr(x, op)(s)
            assert np.array_equal(np.asarray(got), getattr(t, op)(s).numpy()), (op, s)
        for op in ("__add__", "__sub__", "__mul__", "__truediv__", "__rsub__", "__rtruediv__"):
            got = getattr(x, op)(s)
            want = getattr(h, op)(BF(s))
            assert got.dtype == gp.bfloat16 and want.dtype == BF
            assert np.array_equal(_bits(got), _bits(want)), (op, s)


ACTIVATIONS = {
    "gelu": (lambda x: nn.functional.gelu(x),
             lambda v: 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))),
    "gelu_tanh": (lambda x: nn.functional.gelu(x, approximate="tanh"),
                  lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))),
    "erf": (lambda x: nn.functional.erf(x), np.vectorize(math.erf)),
    "erfc": (lambda x: nn.functional.erfc(x), np.vectorize(math.erfc)),
    "silu": (lambda x: nn.functional.silu(x), lambda v: v / (1 + np.exp(-v))),
    "sigmoid": (lambda x: nn.functional.sigmoid(x), lambda v: 1 / (1 + np.exp(-v))),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activations_in_float32_rounded_once(device, name):
    """bfloat16 activations compute in float32 and round once, as torch's do: within half a
    bfloat16 ulp of the float64 value (plus float32's error), and differentiable."""
    fn, ref = ACTIVATIONS[name]
    v = np.linspace(-4, 4, 161).astype(BF).astype(np.float64)
    x = _bf(v, device)
    x.requires_grad = True
    y = fn(x)
    assert y.dtype == gp.bfloat16
    got, want = np.asarray(y).astype(np.float64), ref(v)
    ulp = np.exp2(np.floor(np.log2(np.maximum(np.abs(want), 1e-30))) - 7)
    assert np.all(np.abs(got - want) <= 0.5 * ulp + 2**-18 * np.abs(want)), name
    gp.sum(y).backward()
    assert x.grad.dtype == gp.bfloat16 and np.all(np.isfinite(np.asarray(x.grad)))


def test_reductions_matmul_and_promotion(device):
    a = R.standard_normal((64, 48)).astype(BF)
    b = R.standard_normal((48, 32)).astype(BF)
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)

    def close(got, ref):
        assert got.dtype == gp.bfloat16
        g = np.asarray(got).astype(np.float64)
        # float32 work (error far below bfloat16's), then one rounding: within one bf16 ulp
        assert np.all(np.abs(g - ref) <= np.spacing(np.abs(ref).astype(BF)).astype(np.float64))

    close(gp.sum(ga), a64.sum())
    close(gp.mean(ga, axis=0), a64.mean(axis=0))
    close(gp.matmul(ga, gb), a64 @ b64)
    close(gp.cumulative_sum(ga[0]), np.cumsum(a64[0]))
    f32 = gp.asarray(np.ones((64, 48), np.float32), device=device)
    assert (ga + f32).dtype == gp.float32 and (ga + gp.astype(f32, gp.float16)).dtype == gp.float32
    assert (ga + gp.astype(f32, gp.float64)).dtype == gp.float64
    assert (ga * 1j).dtype == gp.complex64
    assert gp.sort(ga[0]).dtype == gp.bfloat16
    assert np.array_equal(np.asarray(gp.sort(ga[0])), np.sort(a[0]))


def test_an_asked_dtype_is_the_result_dtype(device):
    # sum(x_bfloat16, dtype=float32) accumulates and returns float32 (NumPy with ml_dtypes too),
    # not a float32 sum rounded to bfloat16
    a = (R.standard_normal((3, 400)) * 100).astype(BF)
    ga = gp.asarray(a, device=device)
    a32 = a.astype(np.float32)
    for got, ref in [(gp.sum(ga, dtype=gp.float32), np.sum(a, dtype=np.float32)),
                     (gp.sum(ga, axis=1, dtype=gp.float32), np.sum(a, axis=1, dtype=np.float32)),
                     (gp.prod(ga[:, :4], axis=1, dtype=gp.float32),
                      np.prod(a32[:, :4], axis=1)),
                     (gp.cumulative_sum(ga, axis=1, dtype=gp.float32),
                      np.cumsum(a, axis=1, dtype=np.float32)),
                     (gp.zeros_like(ga, dtype=gp.float32), np.zeros_like(a32)),
                     (gp.full_like(ga, 0.1, dtype=gp.float32), np.full_like(a32, 0.1))]:
        assert got.dtype == gp.float32 and ref.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), ref, rtol=2e-6, atol=1e-3)
    assert gp.sum(ga, dtype=gp.float64).dtype == gp.float64
    assert gp.sum(ga, dtype=gp.bfloat16).dtype == gp.bfloat16
    assert gp.sum(ga).dtype == gp.bfloat16


def test_views_indexing_and_setitem(device):
    h = np.arange(24, dtype=np.float32).reshape(4, 6).astype(BF)
    x = gp.asarray(h, device=device)
    assert np.array_equal(_bits(x[1:, ::2]), _bits(h[1:, ::2]))
    assert np.array_equal(_bits(x.T), _bits(h.T))
    assert np.array_equal(_bits(x[gp.asarray([3, 0], device=device)]), _bits(h[[3, 0]]))
    assert np.array_equal(_bits(x[x > 10]), _bits(h[h.astype(np.float32) > 10]))
    assert np.array_equal(_bits(gp.reshape(x.T, (24,))), _bits(h.T.reshape(24)))
    assert np.array_equal(_bits(gp.concat([x, x], axis=1)), _bits(np.concatenate([h, h], 1)))
    assert np.array_equal(_bits(gp.stack([x[0], x[1]])), _bits(np.stack([h[0], h[1]])))
    v = x[1:3]
    v[0, 0] = 7.5                    # a view writes through to its base
    x[:, 1] = gp.asarray(np.full(4, 1.5, BF), device=device)
    h[1, 0] = 7.5
    h[:, 1] = 1.5
    assert np.array_equal(_bits(x), _bits(h))
    with pytest.raises(TypeError, match="float64"):
        x[0] = gp.asarray(np.ones(6), device=device)   # float64 into bfloat16 is not a safe cast
    other = "cpu" if str(device).startswith("vulkan") else None
    if other:
        y = x.to_device(other)
        assert y.dtype == gp.bfloat16 and np.array_equal(_bits(y), _bits(h))


def test_autograd_and_autocast(device):
    w = gp.asarray(np.array([1.0, -2.0, 0.5], np.float32).astype(BF), device=device)
    w.requires_grad = True
    loss = gp.sum(w * w * 3.0)
    loss.backward()
    assert w.grad.dtype == gp.bfloat16
    assert np.array_equal(np.asarray(w.grad).astype(np.float32), np.array([6.0, -12.0, 3.0]))
    lin = nn.Linear(8, 4).to(device)
    x = gp.asarray(R.standard_normal((5, 8)).astype(np.float32), device=device)
    with amp.autocast(dtype=gp.bfloat16):
        y = lin(x)
        assert y.dtype == gp.bfloat16 and gp.sum(y).dtype == gp.float32
        loss = gp.sum(y)
    loss.backward()
    assert lin.weight.grad.dtype == gp.float32   # float32 master weights
    ref = np.asarray(lin(x)).astype(np.float64)
    got = np.asarray(y).astype(np.float64)
    assert np.all(np.abs(got - ref) <= 2**-7 * (np.abs(ref) + 1))


def test_dropout_and_random_draws(device):
    """Dropout under autocast(bfloat16) trains (its mask is the float32 draw, the scale rounded
    once); normal and bernoulli give bfloat16 (computed in float32); uniform refuses bfloat16
    (rounding would reach ``high``)."""
    a = gp.random.Generator(3).keep_scale((1000,), 0.3, 1 / 0.7, dtype=gp.bfloat16,
                                          device=device)
    b = gp.random.Generator(3).keep_scale((1000,), 0.3, 1 / 0.7, device=device)
    assert a.dtype == gp.bfloat16
    assert np.array_equal(np.asarray(a).astype(np.float32),
                          np.asarray(b).astype(BF).astype(np.float32))
    g = gp.random.Generator(1)
    assert g.normal(shape=(3,), dtype=gp.bfloat16, device=device).dtype == gp.bfloat16
    assert g.bernoulli(0.5, (3,), dtype=gp.bfloat16, device=device).dtype == gp.bfloat16
    with pytest.raises(TypeError, match="uniform"):
        g.uniform(shape=(3,), dtype=gp.bfloat16, device=device)
    m = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5)).to(device)
    x = gp.asarray(R.standard_normal((64, 8)).astype(np.float32), device=device)
    with amp.autocast(dtype=gp.bfloat16):
        y = m(x)
        assert y.dtype == gp.bfloat16
        loss = gp.sum(y)
    loss.backward()
    assert m[0].weight.grad.dtype == gp.float32
    kept = np.asarray(y).astype(np.float32) != 0
    assert 0.3 < kept.mean() < 0.7


def test_dlpack_with_torch(device):
    h = (R.standard_normal(50) * 1e3).astype(BF)
    x = gp.asarray(h, device=device)
    t = torch.from_dlpack(x)
    assert t.dtype == torch.bfloat16
    assert np.array_equal(t.view(torch.int16).numpy().view(np.uint16), _bits(h))
    t2 = torch.randn(40).to(torch.bfloat16)
    g = gp.from_dlpack(t2, device=device)
    assert g.dtype == gp.bfloat16
    assert np.array_equal(_bits(g), t2.view(torch.int16).numpy().view(np.uint16))


@pytest.mark.parametrize("dtype,n", [(gp.bfloat16, 6), (gp.bfloat16, 12), (gp.float16, 8)])
def test_repr_names_the_dtype_once(device, dtype, n):
    """repr names the dtype once where numpy wraps it onto a line of its own (it was named
    twice)."""
    x = gp.asarray(np.linspace(0.1, 1.0, n, dtype=np.float32), dtype=dtype, device=device)
    r = repr(x)
    dev = "" if str(device) == "cpu" else f", device={str(device)!r}"
    assert r.count("dtype=") == 1, r
    assert r.startswith("Array([") and r.endswith(f", dtype={dtype.name}{dev})"), r
    assert "\n      dtype" not in r, r
