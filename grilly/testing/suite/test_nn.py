"""softmax, conv and pooling through grilly.nn.functional, and smoke tests of autograd (a
gradient against a central finite difference) and of nn (a training step lowers the loss)."""
from __future__ import annotations

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close, on, rtol_for

K = pytest.mark.kernels
_RNG = np.random.default_rng(7)


@K("softmax", "log_softmax")
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_softmax(device, dtype, axis):
    a = (_RNG.standard_normal((3, 5)) * 4).astype(dtype)
    w = a.astype(np.float64)
    e = np.exp(w - w.max(axis=axis, keepdims=True))
    sm = e / e.sum(axis=axis, keepdims=True)
    r = max(rtol_for(dtype, "math"), 1e-11)
    assert_close(F.softmax(on(device, a), dim=axis), sm.astype(dtype), rtol=r, atol=r)
    assert_close(F.log_softmax(on(device, a), dim=axis), np.log(sm).astype(dtype), rtol=r, atol=r)


def _conv_ref(x, w, stride, pad, dilation):
    """Direct 2-D cross-correlation in float64 (N, C, H, W) * (O, C, kh, kw)."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            di, dj = i * dilation, j * dilation
            patch = x[:, :, di:di + stride * oh:stride, dj:dj + stride * ow:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out


@K("im2col", "matmul", family="nn")
@pytest.mark.parametrize("stride, pad, dilation", [(1, 0, 1), (2, 1, 1), (1, 2, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv2d(device, dtype, stride, pad, dilation):
    x = _RNG.standard_normal((2, 3, 7, 6)).astype(dtype)
    w = _RNG.standard_normal((4, 3, 3, 2)).astype(dtype)
    b = _RNG.standard_normal(4).astype(dtype)
    want = _conv_ref(x, w, stride, pad, dilation) + b[None, :, None, None]
    got = F.conv2d(on(device, x), on(device, w), on(device, b), stride=stride, padding=pad, dilation=dilation)
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert_close(got, want.astype(dtype), rtol=tol, atol=tol)


@K("im2col", "max", family="nn")
def test_pooling(device):
    x = _RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
    want = x.reshape(1, 2, 3, 2, 3, 2).max(axis=(3, 5))
    assert_close(F.max_pool2d(on(device, x), 2), want)
    assert_close(F.avg_pool2d(on(device, x), 2), x.reshape(1, 2, 3, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-6)


@K("col2im", "im2col", family="autograd")
def test_conv2d_gradient(device):
    x = _RNG.standard_normal((1, 2, 5, 5))
    w = _RNG.standard_normal((3, 2, 3, 3))
    xa, wa = on(device, x), on(device, w)
    xa.requires_grad = True
    gp.sum(F.conv2d(xa, wa, padding=1) ** 2).backward()
    eps = 1e-6

    def f(xx):
        return float(np.sum(_conv_ref(xx, w, 1, 1, 1) ** 2))

    for idx in [(0, 0, 0, 0), (0, 1, 2, 3), (0, 0, 4, 2)]:
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        np.testing.assert_allclose(np.asarray(xa.grad)[idx], (f(xp) - f(xm)) / (2 * eps), rtol=1e-5)


@K("exp", "multiply", "sum", "matmul", family="autograd")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_vs_finite_difference(device, dtype):
    """d/dx sum(tanh(x @ w) * exp(x[:, :1])) against a central difference in float64."""
    x0, w0 = _RNG.standard_normal((3, 4)) * 0.5, _RNG.standard_normal((4, 2)) * 0.5

    def f(x):
        return float(np.sum(np.tanh(x @ w0) * np.exp(x[:, :1])))

    x = on(device, x0.astype(dtype))
    x.requires_grad = True
    y = gp.sum(gp.tanh(x @ on(device, w0.astype(dtype))) * gp.exp(x[:, :1]))
    y.backward()
    assert x.grad.device == device and x.grad.dtype == x.dtype
    num = np.zeros_like(x0)
    eps = 1e-6
    for i in np.ndindex(x0.shape):
        xp, xm = x0.copy(), x0.copy()
        xp[i] += eps
        xm[i] -= eps
        num[i] = (f(xp) - f(xm)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(x.grad), num, rtol=1e-4 if dtype == "float32" else 1e-7, atol=1e-6)


@K("matmul", "log_softmax", "gather", "scatter", family="nn")
def test_training_step_lowers_the_loss(device):
    x = on(device, _RNG.standard_normal((16, 4)).astype(np.float32))
    y = on(device, _RNG.integers(0, 3, 16))
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = gp.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert all(p.device == device for p in model.parameters())
    assert losses[-1] < losses[0], losses
