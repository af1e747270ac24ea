"""The training-mode batch-norm kernels (grilly.array.normalization) against float64 numpy on
every device, kernel and composition, and nn.BatchNorm's training step against torch."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.array import composites, normalization as N


def np_batch_norm(x, w, b, eps, g):
    """float64 (y, mean, invstd) and the gradients (x, w, b) for the output gradient g."""
    n = x.shape[0] * x.shape[2]
    mean = x.mean(axis=(0, 2))
    d = x - mean[None, :, None]
    inv = 1 / np.sqrt((d * d).mean(axis=(0, 2)) + eps)
    xh = d * inv[None, :, None]
    wv = np.ones(x.shape[1]) if w is None else w
    y = xh * wv[None, :, None] + (0 if b is None else b[None, :, None])
    sg, sgx = g.sum(axis=(0, 2)), (g * xh).sum(axis=(0, 2))
    gx = (wv * inv)[None, :, None] * (g - sg[None, :, None] / n - xh * (sgx / n)[None, :, None])
    return (y, mean, inv), (gx, sgx, sg)


def _paths(device):
    out = [("composed", lambda *a: composites.COMPOSITES["batch_norm"](device, *a),
            lambda *a: composites.COMPOSITES["batch_norm_backward"](device, *a))]
    if "batch_norm" in device.kernels:
        out.append(("kernel", N.batch_norm, N.batch_norm_backward))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(8, 3, 5), (4, 6, 1), (64, 32, 64), (2, 1, 3)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_kernels(device, dtype, shape, affine):
    rng = np.random.default_rng(shape[1])
    # a large offset: the centred form must not cancel
    x = rng.standard_normal(shape) * 3 + 100
    w, b = (rng.standard_normal(shape[1]), rng.standard_normal(shape[1])) if affine else (None, None)
    g = rng.standard_normal(shape)
    want, wgrads = np_batch_norm(x, w, b, 1e-5, g)
    on = lambda a: None if a is None else gp.asarray(a.astype(dtype), device=device)  # noqa: E731
    tol = dict(rtol=1e-11, atol=1e-11) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-4)
    for how, fwd, bwd in _paths(device):
        y, mean, inv = fwd(on(x), on(w), on(b), 1e-5)
        for got, ref in zip((y, mean, inv), want):
            np.testing.assert_allclose(np.asarray(got), ref, **tol, err_msg=how)
        for need in ((True, True, True), (True, False, False), (False, True, True)):
            got = bwd(on(g), on(x), mean, inv, on(w), need)
            for a, ref, nd in zip(got, wgrads, need):
                if not nd:
                    assert a is None, how
                else:
                    np.testing.assert_allclose(np.asarray(a), ref, rtol=tol["rtol"] * 10,
                                               atol=tol["atol"] * 10 * np.abs(ref).max(),
                                               err_msg=how)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_update(device, dtype):
    """The running statistics update: the device's kernel gives the composition's values bit
    for bit (the same operations in the same order), and both the float64 formula's."""
    if dtype == np.float64 and not device.backend.supports_dtype(device, gp.float64):
        pytest.skip("no float64 on this device")
    rng = np.random.default_rng(8)
    rm, rv, mean = (rng.standard_normal(37).astype(dtype) for _ in range(3))
    rv, inv = np.abs(rv) + 0.5, rng.uniform(0.2, 3.0, 37).astype(dtype)
    n, m, eps = 50, 0.1, 1e-5
    want_m = rm.astype(np.float64) * (1 - m) + mean.astype(np.float64) * m
    want_v = rv.astype(np.float64) * (1 - m) + (1 / inv.astype(np.float64) ** 2 - eps) \
        * (n / (n - 1)) * m
    got = []
    for how in ("kernel", "composed"):
        a, b, c, d = (gp.asarray(v, device=device) for v in (rm, rv, mean, inv))
        if how == "kernel":
            N.batch_norm_update(a, b, c, d, m, eps, n)
        else:
            composites.COMPOSITES["batch_norm_update"](device, a, b, c, d, m, eps, n)
        tol = dict(rtol=1e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(np.asarray(a), want_m, **tol, err_msg=how)
        np.testing.assert_allclose(np.asarray(b), want_v, **tol, err_msg=how)
        got.append((np.asarray(a), np.asarray(b)))
    for x, y in zip(*got):
        np.testing.assert_array_equal(x, y)
    # a strided running_mean is written where it lives
    big = gp.asarray(np.zeros(74, dtype), device=device)
    view = big[::2]
    N.batch_norm_update(view, gp.asarray(rv, device=device), gp.asarray(mean, device=device),
                        gp.asarray(inv, device=device), 1.0, eps, n)
    np.testing.assert_array_equal(np.asarray(big)[::2], mean)
    np.testing.assert_array_equal(np.asarray(big)[1::2], 0)
    with pytest.raises(ValueError, match="batch_norm_update: n must be > 1"):
        N.batch_norm_update(a, b, c, d, m, eps, 1)
    with pytest.raises(ValueError, match="batch_norm_update: mean must have"):
        N.batch_norm_update(a, b, gp.asarray(mean[:3], device=device), d, m, eps, n)


def test_batch_norm_bad_arguments(device):
    x = gp.asarray(np.ones((2, 3, 4), np.float32), device=device)
    with pytest.raises(ValueError, match=r"batch_norm: weight must be float32 of shape \(3,\)"):
        N.batch_norm(x, gp.asarray(np.ones(4, np.float32), device=device), None, 1e-5)
    with pytest.raises(TypeError, match=r"batch_norm: x must be real floating \(N, C, S\)"):
        N.batch_norm(gp.asarray(np.ones((2, 3), np.float32), device=device), None, None, 1e-5)


@pytest.mark.parametrize("shape", [(16, 4, 5, 5), (32, 6)])
def test_batchnorm_training_matches_torch(device, shape):
    """Three training steps of nn.BatchNorm: outputs, gradients and the running statistics."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    c = shape[1]
    tm = (torch.nn.BatchNorm2d if len(shape) == 4 else torch.nn.BatchNorm1d)(c).double()
    gm = (nn.BatchNorm2d if len(shape) == 4 else nn.BatchNorm1d)(c).to(device)
    gm = gm.to(dtype=gp.float64) if hasattr(gm, "to") else gm
    for step in range(3):
        x, g = rng.standard_normal(shape) + step, rng.standard_normal(shape)
        tx = torch.tensor(x, requires_grad=True)
        ty = tm(tx)
        ty.backward(torch.tensor(g))
        gx = gp.asarray(x, device=device)
        gx.requires_grad = True
        y = gm(gx)
        y.backward(gp.asarray(g, device=device))
        np.testing.assert_allclose(np.asarray(y), ty.detach().numpy(), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(np.asarray(gx.grad), tx.grad.numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.asarray(gm.weight.grad), tm.weight.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(gm.bias.grad), tm.bias.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(gm.running_mean), tm.running_mean.numpy(), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(gm.running_var), tm.running_var.numpy(), rtol=1e-9)


def test_batchnorm_float16_large_activations_match_torch(device):
    """A float16 nn.BatchNorm1d (``.to(float16)``, no autocast) on activations whose variance
    passes 65504 (std 400): batch statistics and the running update in float32, as torch takes
    them, not zeros and an inf running variance."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((8, 3)) * 400).astype(np.float16)
    g = rng.standard_normal((8, 3)).astype(np.float16)
    tm = torch.nn.BatchNorm1d(3).half()
    tx = torch.tensor(x, requires_grad=True)
    tm(tx).backward(torch.tensor(g))
    gm = nn.BatchNorm1d(3).to(device).to(gp.float16)
    gx = gp.asarray(x, device=device)
    gx.requires_grad = True
    y = gm(gx)
    y.backward(gp.asarray(g, device=device))
    (want, _, _), (want_g, _, _) = np_batch_norm(x.astype(np.float64)[:, :, None], None, None,
                                                 1e-5, g.astype(np.float64)[:, :, None])
    assert y.dtype == gx.grad.dtype == gm.running_var.dtype == gp.float16
    np.testing.assert_allclose(np.asarray(y).astype(np.float64), want[:, :, 0], rtol=2e-3,
                               atol=2e-3)
    np.testing.assert_allclose(np.asarray(gx.grad).astype(np.float64), want_g[:, :, 0],
                               rtol=1e-2, atol=2e-5)
    np.testing.assert_allclose(np.asarray(gx.grad), tx.grad.numpy(), rtol=1e-2, atol=2e-5)
    for a, t in ((gm.running_mean, tm.running_mean), (gm.running_var, tm.running_var)):
        np.testing.assert_allclose(np.asarray(a).astype(np.float64), t.double().numpy(),
                                   rtol=2e-3)
