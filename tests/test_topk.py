"""gp.topk against torch.topk (the test-only oracle) on every device: values exactly, indices
where the values are distinct; NaN is the largest value, as in torch."""
import numpy as np
import pytest
import torch

import grilly as gp

R = np.random.default_rng(13)


def _once(rows: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """Whether each of ``vals[..., j]`` occurs exactly once in ``rows[...]`` (NaN equal to NaN)."""
    out = np.empty(vals.shape, bool)
    if out.size == 0:
        return out
    for r, vr, o in zip(rows.reshape(-1, rows.shape[-1]), vals.reshape(-1, vals.shape[-1]),
                        out.reshape(-1, vals.shape[-1])):
        s = np.sort(r)
        n = np.searchsorted(s, vr, "right") - np.searchsorted(s, vr, "left")
        o[:] = np.where(np.isnan(vr), np.isnan(r).sum(), n) == 1 if r.dtype.kind == "f" else n == 1
    return out


def _check(x: np.ndarray, k: int, axis: int, largest: bool, dev) -> None:
    v, i = gp.topk(gp.asarray(x, device=dev), k, axis=axis, largest=largest)
    tv, ti = torch.topk(torch.from_numpy(x), k, dim=axis, largest=largest)
    v, i = np.asarray(v), np.asarray(i)
    assert v.dtype == x.dtype and i.dtype == np.int64
    np.testing.assert_array_equal(v, tv.numpy())
    # an index is checked where its value occurs once along the axis
    uniq = np.moveaxis(_once(np.moveaxis(x, axis, -1), np.moveaxis(v, axis, -1)), -1, axis)
    np.testing.assert_array_equal(i[uniq], ti.numpy()[uniq])
    np.testing.assert_array_equal(np.take_along_axis(x, i, axis=axis), v)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "float32", "float64"])
def test_topk_matches_torch(device, dtype):
    if np.dtype(dtype).kind == "f":
        x = R.normal(size=(4, 37)).astype(dtype)
        x[1, 3] = x[2, 30] = np.nan
        x[0, 5] = x[0, 6]   # a tie
    else:
        x = R.integers(0, 100, size=(4, 37)).astype(dtype)
    for axis, k in ((-1, 5), (1, 37), (0, 2), (0, 0)):
        for largest in (True, False):
            _check(x, k, axis, largest, device)


def test_topk_float16_and_bool(device):
    x = R.normal(size=(3, 20)).astype(np.float16)
    _check(x, 4, -1, True, device)
    b = np.array([False, True, False, True, True])
    v, i = gp.topk(gp.asarray(b, device=device), 2)
    np.testing.assert_array_equal(np.asarray(v), [True, True])
    np.testing.assert_array_equal(np.asarray(i), [1, 3])   # ties by index


def test_topk_long_rows(device):
    # long rows: the CPU heap kernel in parallel; on Vulkan several register-list passes
    # (k <= 64) or the full sort (k = 300); against torch
    x = R.standard_normal((8, 40000)).astype(np.float32)
    x[3, 1000:1100] = 0.5   # a run of ties across pass boundaries
    x[5, ::7] = -0.0
    x[5, 3::7] = 0.0
    for k in (1, 10, 64, 65, 300):
        for largest in (True, False):
            _check(x, k, -1, largest, device)


def test_topk_kernel_equals_composition(device):
    from grilly.array import composites, core

    if "topk" not in device.kernels:
        pytest.skip(f"{device} composes topk")
    for dtype in ("int32", "float32"):
        x = R.integers(0, 5, size=(6, 3000)).astype(dtype)   # many ties
        if dtype == "float32":
            x[:, ::5] = -0.0
            x[2, ::11] = np.nan
        a = gp.asarray(x, device=device)
        for k, largest in ((7, True), (7, False), (40, True), (100, False)):
            kv, ki = device.kernels["topk"](a._buf, k, 1, largest, True)
            cv, ci = composites.topk(device, a, k, 1, largest, True)
            wv = np.asarray(core.wrap(kv, a.dtype, device))
            np.testing.assert_array_equal(wv, np.asarray(cv))
            np.testing.assert_array_equal(np.signbit(wv), np.signbit(np.asarray(cv)))
            np.testing.assert_array_equal(np.asarray(core.wrap(ki, gp.int64, device)),
                                          np.asarray(ci))
    assert "topk" in core.COMPOSITES


def test_topk_3d_and_0d(device):
    x = R.normal(size=(2, 6, 3))
    _check(x, 3, 1, True, device)
    v, i = gp.topk(gp.asarray(np.float64(2.5), device=device), 1)
    assert v.shape == () and i.shape == () and float(v) == 2.5 and int(i) == 0


def test_topk_errors():
    x = gp.asarray(np.arange(5.0))
    with pytest.raises(ValueError, match=r"topk: k=6 is out of range"):
        gp.topk(x, 6)
    with pytest.raises(ValueError, match=r"topk: k=-1"):
        gp.topk(x, -1)
    with pytest.raises(TypeError, match=r"topk: k must be an int"):
        gp.topk(x, 2.0)
    with pytest.raises(TypeError, match=r"topk: dtype complex128"):
        gp.topk(gp.asarray(np.ones(3, complex)), 1)
    with pytest.raises(IndexError, match=r"topk: axis=2"):
        gp.topk(x, 1, axis=2)
    with pytest.raises(TypeError, match="topk"):
        gp.topk(np.arange(3.0), 1)


def test_topk_gradient_scatters_to_indices():
    x = gp.asarray(np.array([[0.3, 2.0, -1.0, 5.0]]))
    x.requires_grad_()
    v, _ = gp.topk(x, 2)
    gp.sum(v * gp.asarray(np.array([[10.0, 1.0]]))).backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [[0.0, 1.0, 0.0, 10.0]])
