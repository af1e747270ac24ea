"""complex64/complex128 elementwise ops (shaders/elementwise/complex.comp) against numpy:
finite values over several magnitudes, the C99 Annex G special-value grid, strided and
broadcast operands. References are computed in complex128 (numpy's complex64 loops lose
accuracy the shader keeps, e.g. log1p near 0)."""
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grilly as gp
from grilly.array.elementwise import BINARY, UNARY
from grilly.testing import assert_close

NP_NAME = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
           "atan": "arctan", "atanh": "arctanh", "pow": "power", "conj": "conjugate"}
CDTYPES = ["complex64", "complex128"]
RTOL = {"complex64": 1e-5, "complex128": 1e-13}
U_OPS = [op for op, (allowed, _, _) in UNARY.items() if gp.complex64 in allowed]
B_OPS = [op for op, (allowed, _, _) in BINARY.items() if gp.complex64 in allowed]
# ops through sin/cos: the float32 argument reduction is exact only to |arg| ~ 1e15
TRIG = {"exp", "expm1", "sin", "cos", "tan", "sinh", "cosh", "tanh", "pow"}
PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, np.inf, -np.inf, np.nan]


def _ref(op: str, *hs) -> np.ndarray:
    """numpy's result in complex128, with the standard's special cases where numpy departs."""
    zs = [h.astype(np.complex128) for h in hs]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if op == "reciprocal":
            return np.divide(1, zs[0])
        if op == "log1p":  # numpy's complex log1p is log(1 + z): inaccurate near 0
            import mpmath
            r = np.log1p(zs[0])
            for i, v in enumerate(zs[0]):
                m = complex(mpmath.log1p(complex(v))) if np.isfinite(v) else r[i]
                if v.imag == 0 and np.signbit(v.imag) and np.isfinite(v):
                    m = m.conjugate()  # log1p(conj z) = conj log1p(z) on the branch cut
                r[i] = complex(m.real, m.imag or r[i].imag)  # mpmath has no signed zeros
            return r
        r = getattr(np, NP_NAME.get(op, op))(*zs)
        z = zs[0]
        bad = ~np.isfinite(z)
        bad |= np.abs(z.real) > 700
        if op == "expm1" and bad.any():  # numpy's expm1(inf + 0j) is inf + nan j
            r[bad] = np.exp(z[bad]) - 1
        if op == "sign":  # the standard: a NaN part gives NaN + NaN j
            r[np.isnan(z)] = complex(np.nan, np.nan)
    return r


def _run(device, op: str, *hs) -> np.ndarray:
    xs = [gp.asarray(h, device=device) for h in hs]
    return np.asarray(getattr(gp, op)(*xs))


def _same(a: np.ndarray, e: np.ndarray, rtol: float) -> np.ndarray:
    """Per element: NaN where numpy has NaN, equal infinities, signed zeros, else close
    relative to the magnitude of the expected value."""
    if a.dtype.kind == "b":
        return a == e
    mag = np.abs(e)
    parts = [(a.real, e.real), (a.imag, e.imag)] if a.dtype.kind == "c" else [(a, e)]
    ok = np.ones(a.shape, bool)
    for p, q in parts:
        with np.errstate(all="ignore"):
            close = np.abs(p - q) <= rtol * np.where(np.isfinite(mag), mag, 0) + 1e-300
        zero = (p == 0) & (q == 0)
        ok &= np.where(np.isnan(q), np.isnan(p),
                       np.where(np.isinf(q), p == q,
                                np.where(zero, np.signbit(p) == np.signbit(q), close)))
    return ok


def _check(a, e, hs, rtol):
    e = e.astype(a.dtype) if a.dtype.kind != "b" else e
    bad = ~_same(a, e, rtol)
    if bad.any():
        i = np.nonzero(bad.ravel())[0][:5]
        ins = [h.ravel()[i].tolist() for h in hs]
        raise AssertionError(f"{bad.sum()} mismatches: inputs {ins}, got {a.ravel()[i].tolist()}, "
                             f"expected {e.ravel()[i].tolist()}")


def _vulkan_only(device):
    if device.backend.name != "vulkan":
        pytest.skip("special-value conventions checked on the Vulkan shaders")


def _finite(cd: str, n: int, rng, huge: bool) -> np.ndarray:
    mags = [1e-6, 1e-3, 0.3, 0.9, 1.0, 1.1, 3.0, 30.0] + ([1e15, 1e30] if huge else [])
    r = np.array(mags)[rng.integers(0, len(mags), n)] * rng.uniform(0.5, 2.0, n)
    z = r * np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    z[:4] = [1.0, -1.0, 1j, -1j]
    return z.astype(cd)


@pytest.mark.parametrize("cd", CDTYPES)
@pytest.mark.parametrize("op", U_OPS)
def test_unary_finite(device, op, cd):
    rng = np.random.default_rng(1)
    h = _finite(cd, 400, rng, op not in TRIG)
    _check(_run(device, op, h), _ref(op, h), [h], RTOL[cd])


@pytest.mark.parametrize("cd", CDTYPES)
@pytest.mark.parametrize("op", B_OPS)
def test_binary_finite(device, op, cd):
    rng = np.random.default_rng(2)
    huge = op not in TRIG
    h1, h2 = _finite(cd, 400, rng, huge), _finite(cd, 400, rng, huge)
    if op == "pow":  # keep |result| in range; integer exponents take numpy's exact path
        h2 = (h2 / np.maximum(np.abs(h2), 1)).astype(cd)
        h2[::7] = rng.integers(-5, 6, len(h2[::7]))
    _check(_run(device, op, h1, h2), _ref(op, h1, h2), [h1, h2], 4 * RTOL[cd])


@pytest.mark.parametrize("cd", CDTYPES)
@pytest.mark.parametrize("op", U_OPS)
def test_unary_special_values(device, op, cd):
    _vulkan_only(device)
    # square: lavapipe's double fma is not fused, so numpy's fma(x, x, -y*y) overflows to NaN
    large = 1e9 if op in TRIG or op == "square" else (1e30 if cd == "complex64" else 1e300)
    parts = PARTS + [large, -large]
    h = np.array([complex(x, y) for x in parts for y in parts], dtype=cd)
    _check(_run(device, op, h), _ref(op, h), [h], RTOL[cd])


@pytest.mark.parametrize("cd", CDTYPES)
@pytest.mark.parametrize("op", B_OPS)
def test_binary_special_values(device, op, cd):
    _vulkan_only(device)
    parts = PARTS if op != "pow" else [0.0, 1.0, -1.0, 0.5, -2.0]  # pow: finite grid only
    g = np.array([complex(x, y) for x in parts for y in parts], dtype=cd)
    h1, h2 = np.repeat(g, len(g)), np.tile(g, len(g))
    _check(_run(device, op, h1, h2), _ref(op, h1, h2), [h1, h2], 4 * RTOL[cd])


@pytest.mark.parametrize("cd", CDTYPES)
def test_strided_broadcast_and_where(device, cd):
    rng = np.random.default_rng(3)
    h = (rng.normal(size=(6, 8)) + 1j * rng.normal(size=(6, 8))).astype(cd)
    row = (rng.normal(size=(8,)) + 1j * rng.normal(size=(8,))).astype(cd)
    x = gp.asarray(h, device=device)
    xs = x[::2, 1::3]
    assert_close(gp.exp(xs), np.exp(h.astype(np.complex128)[::2, 1::3]).astype(cd), rtol=RTOL[cd])
    assert_close(gp.multiply(gp.permute_dims(x, (1, 0)), gp.asarray(h[:, :1].T.copy(), device=device)),
                 (h.T * h[:, :1].T).astype(cd), rtol=RTOL[cd])
    assert_close(gp.divide(x, gp.asarray(row, device=device)), (h / row).astype(cd), rtol=RTOL[cd])
    assert_close(gp.abs(xs), np.abs(h[::2, 1::3]), rtol=RTOL[cd])
    assert_close(gp.equal(x, x[0]), h == h[0])
    c = rng.integers(0, 2, (6, 8)).astype(bool)
    r = gp.where(gp.asarray(c, device=device), x, gp.asarray(row, device=device))
    assert_close(r, np.where(c, h, row))
    assert_close(x + 1.5j, h + np.array(1.5j, dtype=cd))


_PART = st.floats(-1e6, 1e6, width=32) | st.sampled_from([np.inf, -np.inf, np.nan])


@given(st.lists(st.builds(complex, _PART, _PART), min_size=1, max_size=30),
       st.sampled_from(["sqrt", "log", "exp", "tanh", "asinh", "acos", "atanh", "sign", "abs"]))
def test_hypothesis_complex64(zs, op):
    vk = [d for d in gp.devices() if str(d).startswith("vulkan")]
    if not vk:
        pytest.skip("no Vulkan device")
    h = np.array(zs, dtype=np.complex64)
    _check(_run(vk[0], op, h), _ref(op, h), [h], 1e-5 if op not in ("exp", "tanh") else 2e-5)
