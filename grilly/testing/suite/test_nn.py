"""softmax, conv and pooling through grilly.nn.functional, and smoke tests of autograd (a
gradient against a central finite difference) and of nn (a training step lowers the loss)."""
from __future__ import annotations

import contextlib

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


# ---- the layer kernels of the contract (conv2d, max_pool2d, batch_norm, cross_entropy, linear):
# a backend's own kernel where it has one, else the array layer's composition; forward and
# backward against float64 references
def _conv_grads(x, w, g, stride, pad):
    """float64 gradients (x, w, bias) of _conv_ref for output gradient g (square pads)."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    gxp, gw = np.zeros_like(xp), np.zeros_like(w)
    oh, ow = g.shape[2:]
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            sl = (slice(None), slice(None), slice(i, i + stride * oh, stride),
                  slice(j, j + stride * ow, stride))
            gxp[sl] += np.einsum("nohw,oc->nchw", g, w[:, :, i, j])
            gw[:, :, i, j] = np.einsum("nohw,nchw->oc", g, xp[sl])
    h, wd = x.shape[2:]
    return gxp[:, :, pad:pad + h, pad:pad + wd], gw, g.sum(axis=(0, 2, 3))


def _rounded(dtype: str, *arrays):
    """float64 copies of ``arrays`` holding exactly their ``dtype`` values (the reference's inputs)."""
    return [a.astype(dtype).astype(np.float64) for a in arrays]


@K("conv2d", "conv2d_backward", family="nn")
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_conv2d_forward_and_backward(device, dtype):
    """float16 (autocast's convolutions, a kernel's where it declares takes_float16): float32
    accumulation, each result rounded once (within a few float16 ulps of the magnitude)."""
    rng = np.random.default_rng(21)
    x, w, b = _rounded(dtype, rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((4, 3, 3, 2)),
                       rng.standard_normal(4))
    xa, wa, ba = (on(device, a.astype(dtype)) for a in (x, w, b))
    for a in (xa, wa, ba):
        a.requires_grad = True
    y = F.conv2d(xa, wa, ba, stride=2, padding=1)
    want = _conv_ref(x, w, 2, 1, 1) + b[None, :, None, None]
    tol = {"float16": 4e-3, "float32": 2e-5}.get(dtype, 1e-12)
    assert_close(y, want.astype(dtype), rtol=tol, atol=tol * np.abs(want).max())
    (g,) = _rounded(dtype, rng.standard_normal(want.shape))
    y.backward(on(device, g.astype(dtype)))
    for got, ref in zip((xa.grad, wa.grad, ba.grad), _conv_grads(x, w, g, 2, 1)):
        assert_close(got, ref.astype(dtype), rtol=tol * 10, atol=tol * 10 * np.abs(ref).max())


@K("max_pool2d", "max_pool2d_backward", family="nn")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool2d_ties_nan_and_gradient(device, dtype):
    """Window maxima with ties (the first in row-major order takes the gradient, as torch's),
    -inf, NaN, padding that never wins, and the gradient routed to each maximum."""
    rng = np.random.default_rng(22)
    x = rng.integers(-2, 2, (2, 2, 5, 6)).astype(np.float64)
    x[0, 0, 1, 1], x[1, 1, 0, 0] = np.nan, -np.inf
    xa = on(device, x.astype(dtype))
    xa.requires_grad = True
    y = F.max_pool2d(xa, 3, stride=2, padding=1)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=np.nan)
    pad = np.pad(np.zeros(x.shape, bool), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=True)
    wins, where = [], []
    for i in range(3):            # row-major window order (torch's scan)
        for j in range(3):
            sl = (slice(None), slice(None), slice(i, i + 2 * 3, 2), slice(j, j + 2 * 3, 2))
            wins.append(np.where(pad[sl], -np.inf, xp[sl]))
            where.append((i, j))
    st = np.stack(wins, axis=2)
    nan = np.isnan(st)
    k = np.where(nan.any(axis=2), nan.argmax(axis=2), np.argmax(np.where(nan, -np.inf, st), axis=2))
    want = np.take_along_axis(st, k[:, :, None], axis=2)[:, :, 0]
    assert_close(y, want.astype(dtype))
    g = rng.standard_normal(want.shape)
    y.backward(on(device, g.astype(dtype)))
    gx = np.zeros(x.shape)
    for n, c, a, bb in np.ndindex(*want.shape):
        i, j = where[k[n, c, a, bb]]
        gx[n, c, 2 * a + i - 1, 2 * bb + j - 1] += g[n, c, a, bb]
    assert_close(xa.grad, gx.astype(dtype), rtol=1e-6 if dtype == "float32" else 1e-12)


@K("batch_norm", "batch_norm_backward", "batch_norm_update", family="nn")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_training_forward_and_backward(device, dtype):
    rng = np.random.default_rng(23)
    x = rng.standard_normal((6, 3, 4, 2)) * 2 + 5
    w, b, g = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(x.shape)
    xa, wa, ba = (on(device, a.astype(dtype)) for a in (x, w, b))
    for a in (xa, wa, ba):
        a.requires_grad = True
    rm, rv = on(device, np.zeros(3, dtype)), on(device, np.ones(3, dtype))
    y = F.batch_norm(xa, rm, rv, wa, ba, training=True, momentum=0.1, eps=1e-5)
    ax = (0, 2, 3)
    mean, var = x.mean(axis=ax), x.var(axis=ax)
    inv = 1 / np.sqrt(var + 1e-5)
    xh = (x - mean[None, :, None, None]) * inv[None, :, None, None]
    tol = 2e-4 if dtype == "float32" else 1e-11
    assert_close(y, (xh * w[None, :, None, None] + b[None, :, None, None]).astype(dtype), rtol=tol,
                 atol=tol)
    n = x.size // 3
    assert_close(rm, (0.1 * mean).astype(dtype), rtol=tol, atol=tol)
    assert_close(rv, (0.9 + 0.1 * var * n / (n - 1)).astype(dtype), rtol=tol, atol=tol)
    y.backward(on(device, g.astype(dtype)))
    sg, sgx = g.sum(axis=ax), (g * xh).sum(axis=ax)
    gx = (w * inv)[None, :, None, None] * (g - sg[None, :, None, None] / n
                                           - xh * (sgx / n)[None, :, None, None])
    for got, ref in ((xa.grad, gx), (wa.grad, sgx), (ba.grad, sg)):
        assert_close(got, ref.astype(dtype), rtol=tol * 10, atol=tol * 10)


@K("layer_norm", "layer_norm_backward", family="nn")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_forward_and_backward(device, dtype):
    """F.layer_norm over the last two axes: output and the three gradients against float64."""
    rng = np.random.default_rng(27)
    x = rng.standard_normal((4, 3, 5, 2)) * 2 + 1
    w, b, g = rng.standard_normal((5, 2)), rng.standard_normal((5, 2)), rng.standard_normal(x.shape)
    xa, wa, ba = (on(device, a.astype(dtype)) for a in (x, w, b))
    for a in (xa, wa, ba):
        a.requires_grad = True
    y = F.layer_norm(xa, (5, 2), wa, ba, 1e-5)
    x2, g2 = x.reshape(12, 10), g.reshape(12, 10)
    m = x2.mean(axis=1, keepdims=True)
    r = 1 / np.sqrt(((x2 - m) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    xh = (x2 - m) * r
    tol = 2e-4 if dtype == "float32" else 1e-11
    assert_close(y, (xh * w.reshape(-1) + b.reshape(-1)).reshape(x.shape).astype(dtype),
                 rtol=tol, atol=tol)
    y.backward(on(device, g.astype(dtype)))
    gh = g2 * w.reshape(-1)
    gx = r * (gh - gh.mean(axis=1, keepdims=True) - xh * (gh * xh).mean(axis=1, keepdims=True))
    for got, ref in ((xa.grad, gx.reshape(x.shape)), (wa.grad, (g2 * xh).sum(0).reshape(5, 2)),
                     (ba.grad, g2.sum(0).reshape(5, 2))):
        assert_close(got, ref.astype(dtype), rtol=tol * 10, atol=tol * 10)


@K("cross_entropy", "cross_entropy_backward", family="nn")
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_forward_and_backward(device, dtype, reduction):
    """Class-index cross entropy with an ignored row (ignore_index=-100) and a -inf logit."""
    rng = np.random.default_rng(24)
    x = rng.standard_normal((7, 5)) * 3
    x[2, 4] = -np.inf
    t = rng.integers(0, 4, 7)
    t[5] = -100
    xa = on(device, x.astype(dtype))
    xa.requires_grad = True
    loss = F.cross_entropy(xa, on(device, t), reduction=reduction)
    m = x.max(axis=1, keepdims=True)
    logp = (x - m) - np.log(np.exp(x - m).sum(axis=1, keepdims=True))
    ok = t >= 0
    rows = -logp[np.arange(7)[ok], t[ok]]
    cnt = ok.sum() if reduction == "mean" else 1
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(float(loss), rows.sum() / cnt, rtol=tol)
    loss.backward()
    gx = np.exp(logp) * ok[:, None]
    gx[np.arange(7)[ok], t[ok]] -= 1
    assert_close(xa.grad, (gx / cnt).astype(dtype), rtol=tol * 10, atol=tol)


@K("attention", "attention_backward", family="nn")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_attention_forward_and_backward(device, dtype, causal):
    """F.scaled_dot_product_attention (a key padding mask or a causal mask, L != S): output and
    the three gradients against float64."""
    rng = np.random.default_rng(31)
    q, k, v, g = (rng.standard_normal(s) for s in ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 3),
                                                    (2, 3, 5, 3)))
    keep = np.ones((2, 1, 1, 7), bool)
    keep[1, ..., 4:] = False
    qa, ka, va = (on(device, a.astype(dtype)) for a in (q, k, v))
    for a in (qa, ka, va):
        a.requires_grad = True
    mask = None if causal else on(device, keep)
    y = F.scaled_dot_product_attention(qa, ka, va, attn_mask=mask, is_causal=causal)
    s = q @ np.swapaxes(k, -1, -2) / 2.0
    s = np.where(np.tril(np.ones((5, 7), bool)) if causal else keep, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    tol = 2e-5 if dtype == "float32" else 1e-11
    assert_close(y, (p @ v).astype(dtype), rtol=tol, atol=tol)
    y.backward(on(device, g.astype(dtype)))
    ds = p * (g @ np.swapaxes(v, -1, -2) - (g * (p @ v)).sum(-1, keepdims=True))
    for got, ref in ((qa.grad, ds @ k / 2.0), (ka.grad, np.swapaxes(ds, -1, -2) @ q / 2.0),
                     (va.grad, np.swapaxes(p, -1, -2) @ g)):
        assert_close(got, ref.astype(dtype), rtol=tol * 10, atol=tol * 10)


@K("attention", "attention_backward", family="nn")
def test_attention_float16(device):
    """float16 q, k, v (autocast's attention): out and the gradients float16 within a float16
    ulp or two of float64 from the same inputs (float32 arithmetic, each result rounded once),
    lse float32 to float32's accuracy, whether the kernel declares takes_float16 (it takes the
    float16 arrays and returns lse float32) or runs float32 copies."""
    from grilly.array import attention as att
    rng = np.random.default_rng(32)
    q, k, v, g = (rng.standard_normal(s).astype(np.float16) for s in
                  ((2, 3, 5, 6), (2, 3, 7, 6), (2, 3, 7, 3), (2, 3, 5, 3)))
    qa, ka, va, ga = (on(device, a) for a in (q, k, v, g))
    out, lse = att.attention(qa, ka, va, causal=True, scale=0.5)
    assert out.dtype == gp.float16 and lse.dtype == gp.float32
    s = q.astype(np.float64) @ np.swapaxes(k, -1, -2) * 0.5
    s = np.where(np.tril(np.ones((5, 7), bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    den = p.sum(-1, keepdims=True)
    p /= den
    y = p @ v
    assert_close(out, y.astype(np.float16), rtol=2e-3, atol=2e-3 * np.abs(y).max())
    assert_close(lse, (m + np.log(den))[..., 0].astype(np.float32), rtol=2e-6, atol=2e-6)
    grads = att.attention_backward(ga, qa, ka, va, None, None, out, lse, causal=True, scale=0.5)
    o = np.asarray(out).astype(np.float64)   # (D = rowsum(g out) from the float16 out)
    ds = p * (g @ np.swapaxes(v, -1, -2) - (g * o).sum(-1, keepdims=True))
    for got, ref in zip(grads, (ds @ k * 0.5, np.swapaxes(ds, -1, -2) @ q * 0.5,
                                np.swapaxes(p, -1, -2) @ g)):
        assert_close(got, ref.astype(np.float16), rtol=2e-3, atol=2e-3 * np.abs(ref).max())


@K("relu_backward", family="nn")
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_relu_backward(device, dtype):
    """g where y > 0, else 0: zero at y == 0 and -0.0, and where y is NaN (NaN > 0 is false)."""
    from grilly.array import fused
    rng = np.random.default_rng(26)
    y = np.maximum(rng.standard_normal((5, 7)), 0)
    y[0, :3] = (0.0, -0.0, np.nan)
    g = rng.standard_normal((5, 7))
    g[1, 1] = np.inf
    got = fused.relu_backward(on(device, g.astype(dtype)), on(device, y.astype(dtype)))
    assert_close(got, np.where(y > 0, g, 0).astype(dtype), rtol=0, atol=0)


@K("linear", "linear_backward", family="nn")
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_linear_forward_and_backward(device, dtype):
    rng = np.random.default_rng(25)
    x, w, b, g = _rounded(dtype, *(rng.standard_normal(s) for s in ((9, 6), (4, 6), (4,), (9, 4))))
    xa, wa, ba = (on(device, a.astype(dtype)) for a in (x, w, b))
    for a in (xa, wa, ba):
        a.requires_grad = True
    y = F.linear(xa, wa, ba)
    tol = {"float16": 4e-3, "float32": 1e-5}.get(dtype, 1e-12)
    assert_close(y, (x @ w.T + b).astype(dtype), rtol=tol, atol=tol)
    y.backward(on(device, g.astype(dtype)))
    for got, ref in ((xa.grad, g @ w), (wa.grad, g.T @ x), (ba.grad, g.sum(axis=0))):
        assert_close(got, ref.astype(dtype), rtol=tol, atol=tol)


def _adam_ref(p, g, m, v, vmax, t, lr=0.01, b1=0.9, b2=0.99, eps=1e-8, wd=0.1):
    """One AdamW step with amsgrad in float64 (torch.optim's formulas)."""
    p = p * (1 - lr * wd)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    vmax = np.maximum(vmax, v)
    step = lr / (1 - b1 ** t)
    return p - step * m / (np.sqrt(vmax) / np.sqrt(1 - b2 ** t) + eps), m, v, vmax


@K("adam_step", "sgd_step", "optim_multi", family="nn")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_optimizer_steps_one_by_one_and_batched(device, dtype):
    """Three AdamW (amsgrad) and SGD (Nesterov momentum) steps over parameters of several
    shapes against float64 numpy; collected by optim_steps.batched (how Optimizer.step runs:
    the optim_multi kernel where the backend has one) they give the one-by-one results."""
    from grilly.array import optim_steps

    shapes = [(), (5,), (3, 7), (300,)]
    rng = np.random.default_rng(31)
    p0 = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(3)]
    runs = []
    for batched in (False, True):
        ps = [on(device, a.astype(dtype)) for a in p0]
        qs = [on(device, a.astype(dtype)) for a in p0]
        st = [[on(device, np.zeros(s, dtype)) for _ in range(3)] for s in shapes]
        bufs = [on(device, np.zeros(s, dtype)) for s in shapes]
        for t in (1, 2, 3):
            gs = [on(device, g.astype(dtype)) for g in grads[t - 1]]
            with optim_steps.batched() if batched else contextlib.nullcontext():
                for p, g, (m, v, vx) in zip(ps, gs, st):
                    optim_steps.adam_step(p, g, m, v, vx, lr=0.01, beta1=0.9, beta2=0.99,
                                          eps=1e-8, step=t, weight_decay=0.1, decoupled=True)
                for q, g, b in zip(qs, gs, bufs):
                    optim_steps.sgd_step(q, g, b, lr=0.1, momentum=0.9, nesterov=True,
                                         first=t == 1)
        runs.append([gp.asarray(a, device="cpu") for a in ps + qs])
    tol = 1e-5 if dtype == "float32" else 1e-12
    for k, p in enumerate(p0):
        want, m, v, vx = p.copy(), 0 * p, 0 * p, 0 * p
        q, buf = p.copy(), None
        for t in (1, 2, 3):
            g = grads[t - 1][k]
            want, m, v, vx = _adam_ref(want, g, m, v, vx, t)
            buf = g.copy() if buf is None else 0.9 * buf + g
            q = q - 0.1 * (g + 0.9 * buf)
        assert_close(runs[0][k], want.astype(dtype), rtol=tol, atol=tol)
        assert_close(runs[0][len(p0) + k], q.astype(dtype), rtol=tol, atol=tol)
    for a, b in zip(*runs):
        assert np.array_equal(np.asarray(a), np.asarray(b)), "batched != one by one"


@K("optim_multi", family="nn")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_optim_multi_scalars_from_a_buffer(device, dtype):
    """A backend whose optim_multi declares takes_vals reads each update's scalars from row k
    of ``vals`` (contract.optim_scalars) instead of the calls: Adam updates of parameters at
    different step counts and learning rates, and SGD's first momentum step, give the results
    of the calls' own scalars, bit for bit."""
    from grilly.backends.contract import optim_scalars

    k = device.kernels.get("optim_multi")
    if not getattr(k, "takes_vals", False):
        pytest.skip("this backend's optim_multi takes its scalars from the calls only")
    rng = np.random.default_rng(5)
    shapes = [(3, 7), (300,), (), (5,)]
    init = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grad = [rng.standard_normal(s).astype(dtype) for s in shapes]
    results = []
    for with_vals in (False, True):
        ps = [on(device, a) for a in init]
        gs = [on(device, a) for a in grad]
        st = [[on(device, np.full(s, 0.5, dtype)) for _ in range(3)] for s in shapes]
        bad = (-1.0, 7.0, 9.0, 2.0, 3.0, 5.0, 4.0, 6.0)   # what the calls say, where vals rule
        calls, rows = [], []
        for i, (p, g, (m, v, vx)) in enumerate(zip(ps, gs, st)):
            t, lr = i + 1, 0.01 * (i + 1)
            real = (lr, 0.9, 0.99, 1e-8, 0.1, True, False, lr / (1 - 0.9 ** t),
                    float(np.sqrt(1 - 0.99 ** t)))
            args = (p._buf, g._buf, m._buf, v._buf, vx._buf if i % 2 else None)
            calls.append(args + (bad[:5] + (True, False) + bad[5:7] if with_vals else real))
            rows.append(optim_scalars("adam_step", args + real)[3])
        if with_vals:
            k("adam_step", calls, on(device, np.array(rows, dtype))._buf)
        else:
            k("adam_step", calls)
        sgd_calls, sgd_rows = [], []
        for i, (p, g, (m, _, _)) in enumerate(zip(ps, gs, st)):
            real = (0.1, 0.9, 0.0, 0.0, True, False, i % 2 == 0)
            args = (p._buf, g._buf, m._buf)
            sgd_calls.append(args + ((0.5, 0.5, 0.5, 0.5, True, False, i % 2 == 1)
                                     if with_vals else real))
            sgd_rows.append(optim_scalars("sgd_step", args + real)[3])
        if with_vals:
            k("sgd_step", sgd_calls, on(device, np.array(sgd_rows, dtype))._buf)
        else:
            k("sgd_step", sgd_calls)
        results.append([np.asarray(a) for a in ps + [b for s3 in st for b in s3]])
    for a, b in zip(*results):
        assert np.array_equal(a, b), "scalars from vals != scalars from the calls"
