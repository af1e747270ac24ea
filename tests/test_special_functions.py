"""erf, erfc, gelu (both forms), sigmoid, silu, softplus of grilly.nn.functional: float64 values
against mpmath, special values, float16, gradients (gradcheck, torch float64) and bad input.
The float32 sweeps are in tests/test_float_accuracy.py."""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import torch

import grilly as gp
from grilly.autograd import grad, gradcheck
from grilly.nn import functional as F

mp.mp.dps = 40
_A = 2 * mp.sqrt(2 / mp.pi)
_K = mp.mpf(0.044715)


def _gelu_tanh(x, **kw):
    return F.gelu(x, approximate="tanh", **kw)


# name -> (function, mpmath reference, float64 test range)
CASES = {
    "erf": (F.erf, mp.erf, (-6, 6)),
    "erfc": (F.erfc, mp.erfc, (-6, 27)),
    "gelu": (F.gelu, lambda x: x * mp.erfc(-x / mp.sqrt(2)) / 2, (-38, 10)),
    "gelu_tanh": (_gelu_tanh, lambda x: x / (1 + mp.exp(-_A * (x + _K * x ** 3))), (-27, 10)),
    "sigmoid": (F.sigmoid, lambda x: 1 / (1 + mp.exp(-x)), (-740, 40)),
    "silu": (F.silu, lambda x: x / (1 + mp.exp(-x)), (-740, 40)),
    "softplus": (F.softplus, lambda x: mp.log1p(mp.exp(x)), (-740, 20)),
}


def _ulps64(got: np.ndarray, ref: list) -> np.ndarray:
    """|got - ref| in float64 ulps of the reference (of the smallest subnormal at 0)."""
    out = []
    for g, r in zip(got, ref):
        u = np.spacing(abs(float(r))) if r != 0 else np.spacing(0.0)
        out.append(float(abs(mp.mpf(float(g)) - r) / u))
    return np.array(out)


@pytest.mark.parametrize("name", list(CASES))
def test_float64_against_mpmath(name):
    """float64 results are within 3 float64 ulp of a 40-digit mpmath reference."""
    fn, ref_fn, (lo, hi) = CASES[name]
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(lo, hi, 1500), rng.uniform(-3, 3, 500)])
    got = np.asarray(fn(gp.asarray(x)))
    err = _ulps64(got, [ref_fn(mp.mpf(float(v))) for v in x])
    k = int(np.argmax(err))
    assert err[k] <= 3, f"{name}: {err[k]:.2f} float64 ulp at x = {x[k]!r}"


INF, NAN = math.inf, math.nan
# name -> inputs, expected (sign of zero checked)
SPECIAL = {
    "erf": ([NAN, INF, -INF, 0.0, -0.0], [NAN, 1.0, -1.0, 0.0, -0.0]),
    "erfc": ([NAN, INF, -INF, 0.0, -0.0, 30.0], [NAN, 0.0, 2.0, 1.0, 1.0, 0.0]),
    "gelu": ([NAN, INF, -INF, 0.0, -0.0, -40.0], [NAN, INF, -0.0, 0.0, -0.0, -0.0]),
    "gelu_tanh": ([NAN, INF, -INF, 0.0, -0.0, -40.0], [NAN, INF, -0.0, 0.0, -0.0, -0.0]),
    "sigmoid": ([NAN, INF, -INF, 0.0, -0.0, -800.0], [NAN, 1.0, 0.0, 0.5, 0.5, 0.0]),
    "silu": ([NAN, INF, -INF, 0.0, -0.0, -800.0], [NAN, INF, -0.0, 0.0, -0.0, -0.0]),
    "softplus": ([NAN, INF, -INF, 0.0, -800.0], [NAN, INF, 0.0, math.log(2.0), 0.0]),
}


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", list(SPECIAL))
def test_special_values(device, name, dtype):
    """nan propagates, the limits at +-inf and the sign of zero are right, dtype is kept."""
    fn = CASES[name][0]
    xs, want = SPECIAL[name]
    try:
        x = gp.asarray(np.array(xs, dtype=dtype), device=device)
    except TypeError as e:
        pytest.skip(str(e))
    y = fn(x)
    assert y.dtype == x.dtype
    got = np.asarray(y).astype(np.float64)
    want = np.array(want, np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-3 if dtype == "float16" else 1e-6)
    zero = want == 0
    assert list(np.signbit(got[zero])) == list(np.signbit(want[zero])), f"{name}({xs}) = {got}"


def test_float16_matches_float32(device):
    """float16 inputs are computed in float32 and rounded once."""
    x = np.linspace(-8, 8, 301).astype(np.float16)
    for name in CASES:
        fn = CASES[name][0]
        y16 = np.asarray(fn(gp.asarray(x, device=device)))
        y32 = np.asarray(fn(gp.asarray(x.astype(np.float32), device=device))).astype(np.float16)
        np.testing.assert_array_equal(y16, y32, err_msg=name)


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck(name):
    """Reverse-mode gradients match central differences (float64), across every piece."""
    fn = CASES[name][0]
    x = np.concatenate([np.linspace(-9, 9, 37), [-0.3, 0.2, 0.49, 0.51, 0.7, 0.72, 1.99, 2.01, 2.9, 3.1]])
    assert gradcheck(fn, [gp.asarray(x)])


def test_softplus_beta_threshold_matches_torch():
    """torch's semantics: log1p(exp(beta x)) / beta, x itself where beta x > threshold."""
    x = torch.linspace(-30, 30, 241, dtype=torch.float64)
    for beta, threshold in ((1.0, 20.0), (2.0, 20.0), (0.5, 5.0), (3.0, 1.0)):
        want = torch.nn.functional.softplus(x, beta=beta, threshold=threshold).numpy()
        got = np.asarray(F.softplus(gp.asarray(x.numpy()), beta=beta, threshold=threshold))
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch_float64(approximate):
    """Both gelu forms agree with torch's float64 ones where their 1 + erf (1 + tanh) loses
    little to cancellation (x > -3)."""
    x = torch.linspace(-3, 8, 521, dtype=torch.float64)
    want = torch.nn.functional.gelu(x, approximate=approximate).numpy()
    got = np.asarray(F.gelu(gp.asarray(x.numpy()), approximate=approximate))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name", ["erf", "erfc", "gelu", "gelu_tanh"])
def test_second_derivative(name):
    """The hand-written backward is itself differentiable (double backward)."""
    fn = CASES[name][0]
    x = gp.asarray(np.array([-2.5, -0.7, 0.1, 0.6, 1.5, 4.0]))
    x.requires_grad = True
    (g,) = grad(gp.sum(fn(x)), [x], create_graph=True)
    (h,) = grad(gp.sum(g), [x])
    t = torch.tensor(np.asarray(x), requires_grad=True)
    tf = {"erf": torch.erf, "erfc": torch.erfc, "gelu": torch.nn.functional.gelu,
          "gelu_tanh": lambda v: torch.nn.functional.gelu(v, approximate="tanh")}[name]
    (tg,) = torch.autograd.grad(tf(t).sum(), [t], create_graph=True)
    (th,) = torch.autograd.grad(tg.sum(), [t])
    np.testing.assert_allclose(np.asarray(g), tg.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(h), th.numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("name", list(CASES))
def test_rejects_integer_input(name):
    """An integer array is a TypeError naming the op (as for the other float-only functions)."""
    fn = CASES[name][0]
    with pytest.raises(TypeError, match=name.split("_")[0]):
        fn(gp.asarray([1, 2, 3]))
