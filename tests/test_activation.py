"""ReLU's gradient kernel (relu_backward) and the ReLU layer that uses it, on every device:
kernel and composition against numpy (zeros, -0.0, NaN, inf, strided operands, float16
through the composition), the layer's gradient against torch, and the double-backward path
(create_graph), which records the differentiable composition instead."""
from __future__ import annotations

import numpy as np
import pytest

import grilly as gp
from grilly.array import composites, fused
from grilly.nn import functional as F


def _paths(device):
    out = [("composed", lambda g, y: composites.COMPOSITES["relu_backward"](device, g, y))]
    if "relu_backward" in device.kernels:
        out.append(("kernel", fused.relu_backward))
    return out


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(0,), (7,), (3, 5, 4), (300, 257)])
def test_relu_backward_matches_numpy(device, dtype, shape):
    rng = np.random.default_rng(len(shape))
    y = np.maximum(rng.standard_normal(shape), 0).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    if y.size > 4:
        y.flat[:3] = (0.0, -0.0, np.nan)
        g.flat[3] = np.inf
    want = np.where(y > 0, g, 0).astype(dtype)
    for how, fn in _paths(device):
        got = fn(gp.asarray(g, device=device), gp.asarray(y, device=device))
        assert got.dtype == gp.asarray(g).dtype and got.shape == shape, how
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=how)


def test_relu_backward_strided_and_checks(device):
    rng = np.random.default_rng(1)
    y = np.maximum(rng.standard_normal((8, 10)), 0).astype(np.float32)
    g = rng.standard_normal((10, 8)).astype(np.float32)
    gv = gp.permute_dims(gp.asarray(g, device=device), (1, 0))       # a transposed view
    got = fused.relu_backward(gv, gp.asarray(y, device=device))
    np.testing.assert_array_equal(np.asarray(got), np.where(y > 0, g.T, 0))
    with pytest.raises(ValueError, match="relu_backward"):
        fused.relu_backward(gp.asarray(g, device=device), gp.asarray(y, device=device))
    with pytest.raises(ValueError, match="relu_backward"):
        fused.relu_backward(gp.asarray(y.astype(np.float64), device=device),
                            gp.asarray(y, device=device))


def test_relu_layer_gradient_matches_torch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 33)).astype(np.float32)
    x[0, :4] = 0.0
    gy = rng.standard_normal((16, 33)).astype(np.float32)
    tx = torch.tensor(x, requires_grad=True)
    torch.relu(tx).backward(torch.tensor(gy))
    gx = gp.asarray(x, device=device)
    gx.requires_grad = True
    F.relu(gx).backward(gp.asarray(gy, device=device))
    np.testing.assert_array_equal(np.asarray(gx.grad), tx.grad.numpy())


def test_relu_double_backward(device):
    """d/dx of sum(relu(x)^2)'s gradient (2 relu(x) where x > 0): the recorded backward."""
    rng = np.random.default_rng(3)
    xn = rng.standard_normal(20)
    x = gp.asarray(xn, device=device)
    x.requires_grad = True
    (g,) = gp.autograd.grad(gp.sum(F.relu(x) ** 2), [x], create_graph=True)
    np.testing.assert_allclose(np.asarray(g), 2 * np.maximum(xn, 0), rtol=1e-12)
    (h,) = gp.autograd.grad(gp.sum(g), [x])
    np.testing.assert_allclose(np.asarray(h), 2.0 * (xn > 0), rtol=1e-12)


def test_relu_layer_backward_runs_the_kernel(device):
    """A plain backward through F.relu calls the device's relu_backward kernel once (not the
    composition); a recorded one (create_graph) does not."""
    if "relu_backward" not in device.kernels:
        pytest.skip(f"{device} has no relu_backward kernel")
    calls = []
    k = device.kernels["relu_backward"]
    device.kernels["relu_backward"] = lambda *a: calls.append(1) or k(*a)
    try:
        x = gp.asarray(np.linspace(-1, 1, 12).astype(np.float32), device=device)
        x.requires_grad = True
        gp.sum(F.relu(x) * 3.0).backward()
        assert len(calls) == 1
        np.testing.assert_array_equal(np.asarray(x.grad), 3.0 * (np.linspace(-1, 1, 12) > 0))
        gp.autograd.grad(gp.sum(F.relu(x) ** 2), [x], create_graph=True)
        assert len(calls) == 1
    finally:
        device.kernels["relu_backward"] = k
