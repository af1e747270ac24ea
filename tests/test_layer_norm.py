"""The layer-norm kernels (layer_norm, layer_norm_backward) and F.layer_norm on every device:
kernel and composition against float64 numpy (with and without weight and bias, every subset
of the gradients, one row, one column, rows long enough for the parallel path), the layer
against torch, and autocast running it in float32."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import grilly as gp
from grilly.array import composites, normalization as N
from grilly.nn import functional as F


def _paths(device, name):
    out = [("composed", lambda *a: composites.COMPOSITES[name](device, *a))]
    if name in device.kernels:
        out.append(("kernel", getattr(N, name)))
    return out


def np_layer_norm(x, w, b, eps):
    m = x.mean(axis=1, keepdims=True)
    r = 1 / np.sqrt(((x - m) ** 2).mean(axis=1, keepdims=True) + eps)
    y = (x - m) * r
    y = y * w if w is not None else y
    return (y + b if b is not None else y), m[:, 0], r[:, 0]


def np_layer_norm_backward(g, x, w, eps):
    m = x.mean(axis=1, keepdims=True)
    r = 1 / np.sqrt(((x - m) ** 2).mean(axis=1, keepdims=True) + eps)
    xh = (x - m) * r
    gh = g * w if w is not None else g
    gx = r * (gh - gh.mean(axis=1, keepdims=True) - xh * (gh * xh).mean(axis=1, keepdims=True))
    return gx, (g * xh).sum(axis=0), g.sum(axis=0)


# (2500, 40): more rows than the Vulkan kernel's 1024 workgroups, so rows go in blocks of 3,
# the last one short, and g_w, g_b sum per-block partials
SHAPES = [(1, 7), (9, 1), (6, 33), (300, 512), (2500, 40)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_kernels(device, dtype, shape, affine):
    rng = np.random.default_rng(shape[0] * 7 + shape[1])
    x = rng.standard_normal(shape) * 3 + 1
    w = rng.standard_normal(shape[1]) if affine else None
    b = rng.standard_normal(shape[1]) if affine else None
    g = rng.standard_normal(shape)
    eps = 1e-5
    want_y, want_m, want_r = np_layer_norm(x, w, b, eps)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-5)
    on = lambda a: None if a is None else gp.asarray(a.astype(dtype), device=device)  # noqa: E731
    for (how, fwd), (_, bwd) in zip(_paths(device, "layer_norm"),
                                    _paths(device, "layer_norm_backward")):
        y, m, r = fwd(on(x), on(w), on(b), eps)
        np.testing.assert_allclose(np.asarray(y), want_y, **tol, err_msg=how)
        np.testing.assert_allclose(np.asarray(m), want_m, **tol, err_msg=how)
        np.testing.assert_allclose(np.asarray(r), want_r, **tol, err_msg=how)
        want = np_layer_norm_backward(g, x, w, eps)
        for need in itertools.product((True, False), repeat=3):
            # mean and rstd as the forward gave them, and as arrays of their own (Vulkan copies
            # its forward's adjacent [mean | rstd] in one piece, others one by one)
            stats = (m, r) if need[0] else (gp.asarray(m, copy=True), gp.asarray(r, copy=True))
            got = bwd(on(g), on(x), *stats, on(w), need)
            for k, (a, wv) in enumerate(zip(got, want)):
                if not need[k]:
                    assert a is None, (how, need)
                else:
                    s = max(1.0, np.abs(wv).max()) if k else 1.0
                    np.testing.assert_allclose(np.asarray(a), wv, rtol=tol["rtol"],
                                               atol=tol["atol"] * s * shape[0] ** 0.5,
                                               err_msg=f"{how} {need} {k}")


def test_layer_norm_layer_matches_torch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 6, 5)).astype(np.float32)
    w = rng.standard_normal((6, 5)).astype(np.float32)
    b = rng.standard_normal((6, 5)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    torch.nn.functional.layer_norm(tx, (6, 5), tw, tb, 1e-5).backward(torch.tensor(g))
    gx, gw, gb = (gp.asarray(a, device=device) for a in (x, w, b))
    for a in (gx, gw, gb):
        a.requires_grad = True
    y = F.layer_norm(gx, (6, 5), gw, gb, 1e-5)
    assert y.shape == x.shape
    y.backward(gp.asarray(g, device=device))
    for a, t in ((gx, tx), (gw, tw), (gb, tb)):
        np.testing.assert_allclose(np.asarray(a.grad), t.grad.numpy(), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="layer_norm"):
        F.layer_norm(gx, (6, 5), gp.asarray(w[:, :4], device=device))


def test_layer_norm_float16_and_autocast(device):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((8, 16)).astype(np.float16)
    y = F.layer_norm(gp.asarray(x, device=device), 16)
    assert y.dtype == gp.float16
    want = np_layer_norm(x.astype(np.float64), None, None, 1e-5)[0]
    np.testing.assert_allclose(np.asarray(y).astype(np.float64), want, atol=4e-3)
    with gp.autocast(device_type=str(device).split(":")[0], dtype=gp.float16):
        z = F.layer_norm(gp.asarray(x, device=device), 16)
    assert z.dtype == gp.float32        # the float32 list, as torch's autocast
    np.testing.assert_allclose(np.asarray(z), want, atol=1e-5)


@pytest.mark.parametrize("norm", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("affine", [False, True])
def test_float16_statistics_in_float32(device, norm, affine):
    """float16 input (no autocast) whose variance or squares pass 65504 (std 400): the
    statistics in float32, as torch computes them, the output rounded once, not zeros; and
    the input gradient, against float64 numpy."""
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((4, 16)) * 400).astype(np.float16)
    w = rng.standard_normal(16).astype(np.float16) if affine else None
    b = rng.standard_normal(16).astype(np.float16) if affine and norm == "layer_norm" else None
    g = rng.standard_normal((4, 16))
    on = lambda a: None if a is None else gp.asarray(a, device=device)  # noqa: E731
    f64 = lambda a: None if a is None else a.astype(np.float64)  # noqa: E731
    x64, w64 = f64(x), (np.ones(16) if w is None else f64(w))
    gx = on(x)
    gx.requires_grad = True
    if norm == "layer_norm":
        y = F.layer_norm(gx, 16, on(w), on(b), 1e-5)
        want = np_layer_norm(x64, f64(w), f64(b), 1e-5)[0]
        want_g = np_layer_norm_backward(g, x64, f64(w), 1e-5)[0]
    else:
        y = F.rms_norm(gx, 16, on(w), 1e-5)
        r = 1 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + 1e-5)
        want = x64 * r * w64
        gh = g * w64
        want_g = r * (gh - x64 * r * r * (gh * x64).mean(axis=1, keepdims=True))
    assert y.dtype == gp.float16
    np.testing.assert_allclose(np.asarray(y).astype(np.float64), want, rtol=2e-3, atol=2e-3)
    y.backward(gp.asarray(g.astype(np.float16), device=device))
    assert gx.grad.dtype == gp.float16
    np.testing.assert_allclose(np.asarray(gx.grad).astype(np.float64), want_g, rtol=1e-2,
                               atol=2e-5)
