"""Differential tests of the Vulkan elementwise and storage kernels against numpy."""
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grilly as gp
from grilly.array.elementwise import BINARY, UNARY
from grilly.backends.vulkan import kernels as vk
from grilly.testing import assert_close

VK = [d for d in gp.devices() if str(d).startswith("vulkan")]
pytestmark = pytest.mark.skipif(not VK, reason="no Vulkan device")

NP_NAME = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
           "atan": "arctan", "atanh": "arctanh", "atan2": "arctan2", "bitwise_invert": "invert",
           "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
           "pow": "power", "conj": "conjugate"}
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]


@pytest.fixture(params=[str(d) for d in VK] or ["none"])
def vdev(request):
    return gp.backends.registry.device(request.param)


def _values(dtype: str, n: int, rng, op: str = "", second: bool = False) -> np.ndarray:
    npd = np.dtype(dtype)
    if npd.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if npd.kind in "iu":
        info = np.iinfo(npd)
        if op in ("bitwise_left_shift", "bitwise_right_shift") and second:
            lo = -2 if npd.kind == "i" else 0
            return rng.integers(lo, npd.itemsize * 8 + 3, n).astype(npd)
        if op == "pow" and second:
            return rng.integers(0, 5, n).astype(npd)
        if op == "pow":
            return rng.integers(max(info.min, -5), 6, n).astype(npd)
        lo, hi = max(info.min, -100), min(info.max, 100)
        v = rng.integers(lo, hi + 1, n).astype(npd)
        v[:3] = [info.min, info.max, 0] if n > 3 else v[:3]
        return v
    v = rng.uniform(-3, 3, n).astype(npd)
    if n >= 6:
        v[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0]
    return v


def _ref(op: str, *hs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if op == "reciprocal":
            return np.divide(1, hs[0]).astype(hs[0].dtype)
        if op == "imag":
            return np.zeros_like(hs[0])
        if op == "real":
            return hs[0].copy()
        return getattr(np, NP_NAME.get(op, op))(*hs)


def _tol(dtype: str, op: str) -> dict:
    if dtype == "float16":
        return {"rtol": 2e-3, "atol": 1e-3}
    if dtype == "float32":
        return {"rtol": 2e-5, "atol": 2e-6} if op in vk.TRANSCENDENTAL or op == "reciprocal" else {}
    return {}


def _check(op, table, dtype, vdev, hs):
    allowed, compute, _ = table[op]
    d = gp.array.dtypes.from_name(dtype)
    if d not in allowed:
        pytest.skip("dtype not in the op's domain")
    if compute(d) is not d:
        pytest.skip("computes in another dtype (covered by that dtype's case)")
    xs = [gp.asarray(h, device=vdev) for h in hs]
    if dtype in vk.UNSUPPORTED.get(op, ()):
        with pytest.raises(NotImplementedError, match=op):
            getattr(gp, op)(*xs)
        return
    got = getattr(gp, op)(*xs)
    exp = _ref(op, *hs)
    assert_close(got, exp, **_tol(dtype, op))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op, dtype, vdev):
    rng = np.random.default_rng(0)
    h = _values(dtype, 300, rng, op)
    if op in ("acosh",) and h.dtype.kind == "f":
        h = np.abs(h) + 1
    _check(op, UNARY, dtype, vdev, [h])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary(op, dtype, vdev):
    rng = np.random.default_rng(1)
    a = _values(dtype, 300, rng, op)
    b = _values(dtype, 300, rng, op, second=True)
    if op == "pow" and a.dtype.kind == "f":
        a, b = np.abs(a), rng.uniform(-3, 3, 300).astype(a.dtype)
    _check(op, BINARY, dtype, vdev, [a, b])


@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8", "bool"])
def test_where_and_broadcast(dtype, vdev):
    rng = np.random.default_rng(2)
    c = rng.integers(0, 2, (4, 1, 5)).astype(bool)
    a = _values(dtype, 15, rng).reshape(3, 5)
    b = _values(dtype, 4, rng).reshape(4, 1, 1)
    got = gp.where(gp.asarray(c, device=vdev), gp.asarray(a, device=vdev), gp.asarray(b, device=vdev))
    assert_close(got, np.where(c, a, b))


def test_strided_views(vdev):
    h = np.arange(2 * 3 * 4 * 5 * 6 * 7, dtype=np.float32).reshape(2, 3, 4, 5, 6, 7)
    x = gp.asarray(h, device=vdev)
    v = gp.permute_dims(x, (5, 3, 1, 4, 0, 2))[::-1, 1:, :, ::2]
    hv = h.transpose(5, 3, 1, 4, 0, 2)[::-1, 1:, :, ::2]
    assert_close(v + 1, hv + 1)
    assert_close(x[1, :, 2] * x[0, :, 3], h[1, :, 2] * h[0, :, 3])
    assert_close(gp.reshape(v, (-1,)), hv.reshape(-1))
    y = gp.asarray(np.zeros((4, 6), np.float32), device=vdev)
    y[1:3, ::2] = gp.asarray(np.float32(7), device=vdev)
    z = np.zeros((4, 6), np.float32)
    z[1:3, ::2] = 7
    assert_close(y, z)


@given(st.lists(st.integers(1, 4), min_size=0, max_size=4), st.sampled_from(["float32", "int64"]))
def test_broadcast_property(shape, dtype):
    dev = VK[0]
    rng = np.random.default_rng(len(shape))
    a = _values(dtype, int(np.prod(shape)), rng).reshape(shape)
    b = _values(dtype, shape[-1] if shape else 1, rng).reshape(shape[-1:] or ())
    with np.errstate(all="ignore"):
        exp = a - b
    assert_close(gp.asarray(a, device=dev) - gp.asarray(b, device=dev), exp)


@pytest.mark.parametrize("src", ["bool", "int8", "uint16", "int64", "uint64", "float16", "float32",
                                 "float64"])
@pytest.mark.parametrize("dst", ["bool", "int8", "uint8", "int32", "uint32", "int64", "float16",
                                 "float32", "float64"])
def test_astype(src, dst, vdev):
    rng = np.random.default_rng(3)
    h = _values(src, 64, rng)
    if np.dtype(src).kind == "f" and np.dtype(dst).kind in "iu":
        h = np.abs(np.nan_to_num(h, posinf=1, neginf=1)) * 10  # in range: C casts are UB outside
    got = gp.astype(gp.asarray(h, device=vdev), gp.array.dtypes.from_name(dst))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(got, h.astype(dst))


def test_grid_stride_loop(vdev):
    """More items than workgroups x 256: the shader's grid-stride loop covers the rest."""
    rec = vdev.ctx.recorder
    old, rec.max_groups = rec.max_groups, 3
    try:
        h = np.arange(10_000, dtype=np.int32)
        assert_close(gp.asarray(h, device=vdev) * 3, h * 3)
    finally:
        rec.max_groups = old
