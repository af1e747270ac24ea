"""grilly.special.airy_ai (torch.special.airy_ai) and airy_ai_prime against mpmath (in ulp,
float32 and float64) and torch (special values, where its Cephes form is accurate), on every
device; the gradients Ai' and Ai'' = x Ai; half, integer and bad inputs."""
import functools
import math

import numpy as np
import pytest

import grilly as gp
from grilly import special as S

mp = pytest.importorskip("mpmath")
torch = pytest.importorskip("torch")

_REF = {"airy_ai": lambda v: mp.airyai(v), "airy_ai_prime": lambda v: mp.airyai(v, 1)}
# measured worst cases are 3 (Ai) and 5 (Ai') ulp on both devices
_BOUND = {"airy_ai": 4, "airy_ai_prime": 6}


@functools.lru_cache(maxsize=None)
def _points(name: str, dt):
    """(x, reference, scale): the ulp is taken of |f| for x >= -3 (relative, also next to the
    first zeros) and of max(|f|, the amplitude |x|^(-+1/4)/sqrt(pi)) below (absolute there)."""
    rng = np.random.default_rng(7 if name == "airy_ai" else 8)
    far = -1e5 if dt == np.float32 else -1e9   # (the double-word phase's reach: docs/special.md)
    top = 25.0 if dt == np.float32 else 104.0
    parts = [rng.uniform(lo, hi, 12) for lo, hi in
             ((far, -1e3), (-1e3, -3), (-3, -1), (-1, 1), (1, 6), (6, top))]
    zeros = [float(mp.airyaizero(1)), float(mp.airyaizero(1, derivative=1))]
    x = np.concatenate(parts + [np.array(zeros + [-3.0, -1.0, 1.0, 0.0])]).astype(dt)
    with mp.workdps(40):
        ref = np.array([float(_REF[name](mp.mpf(float(v)))) for v in x])
    xd = np.abs(x.astype(np.float64))
    amp = np.maximum(xd, 1.0) ** (-0.25 if name == "airy_ai" else 0.25) / math.sqrt(math.pi)
    scale = np.where(x < -3, np.maximum(np.abs(ref), amp), np.abs(ref))
    return x, ref, scale


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(_REF))
def test_airy_within_ulp_of_mpmath(device, name, dt):
    x, ref, scale = _points(name, dt)
    got = getattr(S, name)(gp.asarray(x, device=device))
    assert got.dtype == gp.asarray(x).dtype
    err = np.abs(np.asarray(got, np.float64) - ref) / np.spacing(scale.astype(dt))
    assert np.max(err) <= _BOUND[name], x[np.argmax(err)]


def test_airy_special_values_and_torch(device):
    """NaN stays NaN; Ai(+-inf) and Ai'(+inf) are 0 (the limits; torch gives NaN), Ai'(-inf)
    NaN; underflow to 0 past x = 104; torch's values agree where its Cephes form is accurate
    (above -2.09: below it torch's asymptotic form is up to 2.8e-6 off, near -2.34)."""
    x = np.array([math.nan, math.inf, -math.inf, 110.0, 1e300])
    ai = np.asarray(S.airy_ai(gp.asarray(x, device=device)))
    aip = np.asarray(S.airy_ai_prime(gp.asarray(x, device=device)))
    np.testing.assert_array_equal(ai, [math.nan, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(aip, [math.nan, 0.0, math.nan, 0.0, 0.0])
    t = np.array([-2.0, -1.0, -1e-300, 0.0, 0.5, 1.0, 3.0, 10.0, 30.0, 100.0])
    got = np.asarray(S.airy_ai(gp.asarray(t, device=device)))
    np.testing.assert_allclose(got, torch.special.airy_ai(torch.tensor(t)).numpy(),
                               rtol=1e-13, atol=0)
    t32 = t.astype(np.float32)[:-2]
    got = np.asarray(S.airy_ai(gp.asarray(t32, device=device)))
    np.testing.assert_allclose(got, torch.special.airy_ai(torch.tensor(t32)).numpy(),
                               rtol=1e-5)


def test_airy_gradients(device):
    """d/dx Ai = Ai', d/dx Ai' = x Ai (torch's airy_ai has no gradient), and second
    derivatives through the graph."""
    p = np.array([-40.0, -2.5, -0.3, 0.0, 0.8, 3.0, 12.0])
    xg = gp.asarray(p, device=device, requires_grad=True)
    (d,) = gp.autograd.grad(S.airy_ai(xg).sum(), xg, create_graph=True)
    (d2,) = gp.autograd.grad(d.sum(), xg)
    with mp.workdps(30):
        want1 = [float(mp.airyai(v, 1)) for v in p]
        want2 = [float(v * mp.airyai(v)) for v in p]
    np.testing.assert_allclose(np.asarray(d), want1, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(np.asarray(d2), want2, rtol=1e-14, atol=1e-300)
    yg = gp.asarray(p, device=device, requires_grad=True)
    S.airy_ai_prime(yg).sum().backward()
    np.testing.assert_allclose(np.asarray(yg.grad), want2, rtol=1e-14, atol=1e-300)


def test_airy_half_integer_and_bad_inputs(device):
    x = np.array([-5.0, -1.0, 0.0, 2.0])
    for dt in (gp.float16, gp.bfloat16):
        h = gp.astype(gp.asarray(x, device=device), dt)
        got = S.airy_ai(h)
        assert got.dtype == dt
        with mp.workdps(30):
            ref = [float(mp.airyai(float(v))) for v in np.asarray(gp.astype(h, gp.float64))]
        np.testing.assert_allclose(np.asarray(gp.astype(got, gp.float64)), ref, rtol=1e-2)
    got = S.airy_ai(gp.asarray([0, 1, -2], device=device))
    assert got.dtype == gp.float64     # integers compute in float64, as NumPy
    with mp.workdps(30):
        np.testing.assert_allclose(np.asarray(got), [float(mp.airyai(v)) for v in (0, 1, -2)],
                                   rtol=1e-15)
    with pytest.raises(TypeError, match="airy_ai"):
        S.airy_ai([1.0, 2.0])
    with pytest.raises(TypeError, match="airy_ai_prime"):
        S.airy_ai_prime(gp.asarray(np.array([1 + 1j]), device=device))
