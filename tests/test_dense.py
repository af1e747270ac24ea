"""The dense-layer kernels (grilly.array.dense: linear, linear_backward) against float64 numpy on
every device: the backend's kernel and the composition, on strided views, empty dimensions and
products big enough to be split over threads; and nn.functional.linear's node against torch."""
import numpy as np
import pytest

import grilly as gp
from grilly.array import composites, dense
from grilly.nn import functional as F


def _paths(device):
    out = [("composed", lambda *a: composites.COMPOSITES["linear"](device, *a),
            lambda *a: composites.COMPOSITES["linear_backward"](device, *a))]
    if "linear" in device.kernels:
        out.append(("kernel", dense.linear, dense.linear_backward))
    return out


def _tol(dtype, k):
    return dict(rtol=1e-12, atol=1e-12 * k) if dtype == np.float64 else dict(rtol=3e-5, atol=3e-5 * k ** 0.5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(5, 3, 4), (128, 64, 10), (300, 70, 129), (0, 3, 4), (4, 0, 3),
                                   (3, 4, 0)])
def test_linear_kernels(device, dtype, m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    x, w, b, g = (rng.standard_normal(s) for s in ((m, k), (n, k), (n,), (m, n)))
    on = [gp.asarray(a.astype(dtype), device=device) for a in (x, w, b, g)]
    for how, fwd, bwd in _paths(device):
        for bias, want in ((on[2], x @ w.T + b), (None, x @ w.T)):
            y = fwd(on[0], on[1], bias)
            assert y.shape == (m, n) and y.dtype == on[0].dtype, how
            np.testing.assert_allclose(np.asarray(y), want, **_tol(dtype, k), err_msg=how)
        got = bwd(on[3], on[0], on[1], (True, True, True))
        for a, want, kk in zip(got, (g @ w, g.T @ x, g.sum(axis=0)), (n, m, m)):
            np.testing.assert_allclose(np.asarray(a), want, **_tol(dtype, max(kk, 1)), err_msg=how)


def test_linear_on_views(device):
    """A transposed weight, a sliced input and a column-sliced gradient: no layout is assumed."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((12, 20))[::2, 3:15]           # (6, 12), strided rows and columns
    wt = rng.standard_normal((12, 7))                       # w = wt.T, a transposed view
    g = rng.standard_normal((6, 10))[:, 2:9]                # (6, 7), rows 10 apart
    xd = gp.asarray(rng.standard_normal((12, 20)), device=device)[::2, 3:15]
    xd[...] = gp.asarray(x, device=device)
    wd = gp.matrix_transpose(gp.asarray(wt, device=device))
    gd = gp.asarray(rng.standard_normal((6, 10)), device=device)[:, 2:9]
    gd[...] = gp.asarray(g, device=device)
    for how, fwd, bwd in _paths(device):
        np.testing.assert_allclose(np.asarray(fwd(xd, wd, None)), x @ wt, rtol=1e-12, err_msg=how)
        gx, gw, gb = bwd(gd, xd, wd, (True, True, True))
        np.testing.assert_allclose(np.asarray(gx), g @ wt.T, rtol=1e-12, err_msg=how)
        np.testing.assert_allclose(np.asarray(gw), g.T @ x, rtol=1e-12, err_msg=how)
        np.testing.assert_allclose(np.asarray(gb), g.sum(axis=0), rtol=1e-12, err_msg=how)


def test_vulkan_linear_backward_is_the_composition_bit_for_bit():
    """Vulkan's linear_backward runs the composition's kernels on buffers: the same bits as the
    composition, float32, aligned and ragged (an sgemm product, the generic shader), and only
    what ``need`` asks for."""
    vk = [d for d in gp.devices() if str(d).startswith("vulkan")]
    if not vk or "linear_backward" not in vk[0].kernels:
        pytest.skip("no Vulkan linear_backward kernel")
    rng = np.random.default_rng(3)
    for m, k, n in ((512, 256, 384), (1000, 96, 130), (7, 5, 3)):
        x, w, g = (gp.asarray(rng.standard_normal(s).astype(np.float32), device=vk[0])
                   for s in ((m, k), (n, k), (m, n)))
        want = composites.COMPOSITES["linear_backward"](vk[0], g, x, w, (True, True, True))
        got = dense.linear_backward(g, x, w, (True, True, True))
        for a, b in zip(got, want):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert dense.linear_backward(g, x, w, (False, True, False))[::2] == (None, None)


def test_linear_split_over_threads(device):
    """A product big enough for the CPU backend's row split (and its transposed operand)."""
    rng = np.random.default_rng(2)
    x, w, g = (rng.standard_normal(s).astype(np.float32) for s in ((256, 192), (160, 192), (256, 160)))
    xd, wd, gd = (gp.asarray(a, device=device) for a in (x, w, g))
    y = dense.linear(xd, wd)
    np.testing.assert_allclose(np.asarray(y), x.astype(np.float64) @ w.T, rtol=1e-4, atol=1e-3)
    gx, gw, _ = dense.linear_backward(gd, xd, wd, (True, True, False))
    np.testing.assert_allclose(np.asarray(gw), g.astype(np.float64).T @ x, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.asarray(gx), g.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)


def test_linear_bad_arguments(device):
    x = gp.asarray(np.ones((3, 4), np.float32), device=device)
    with pytest.raises(ValueError, match=r"linear: x \(M, K\) and w \(N, K\) must share K"):
        dense.linear(x, gp.asarray(np.ones((2, 5), np.float32), device=device))
    with pytest.raises(TypeError, match="linear: w has dtype float64, expected x's float32"):
        dense.linear(x, gp.asarray(np.ones((2, 4)), device=device))
    with pytest.raises(ValueError, match=r"linear: bias must have shape \(2,\)"):
        dense.linear(x, gp.asarray(np.ones((2, 4), np.float32), device=device),
                     gp.asarray(np.ones(3, np.float32), device=device))


def test_functional_linear_matches_torch(device):
    """nn.functional.linear (one node) with float32 and mixed float32/float64 arguments,
    folded leading axes, and gradients."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, w, b = rng.standard_normal((2, 5, 6)), rng.standard_normal((4, 6)), rng.standard_normal(4)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.linear(tx, tw, tb)
    ty.sum().backward()
    gx, gw, gb = (gp.asarray(a, device=device) for a in (x, w, b))
    for a in (gx, gw, gb):
        a.requires_grad = True
    y = F.linear(gx, gw, gb)
    gp.sum(y).backward()
    np.testing.assert_allclose(np.asarray(y), ty.detach().numpy(), rtol=1e-12)
    for a, t in ((gx, tx), (gw, tw), (gb, tb)):
        np.testing.assert_allclose(np.asarray(a.grad), t.grad.numpy(), rtol=1e-12)
    y32 = F.linear(gp.asarray(x[0].astype(np.float32), device=device), gp.asarray(w, device=device))
    assert y32.dtype == gp.float64
    np.testing.assert_allclose(np.asarray(y32), x[0].astype(np.float32) @ w.T, rtol=1e-12)


@pytest.mark.parametrize("m,k,n", [(16, 8, 6), (300, 70, 129), (256, 128, 128)])
def test_linear_backward_float32_gradients_of_float16(device, m, k, n):
    # autocast's float32 master weights: grad_dtype=float32 gives the weight and bias gradients
    # of float16 operands in float32 (a kernel's own, or the composition cast), x's in float16
    rng = np.random.default_rng(m + k + n)
    x, w, g = (rng.standard_normal(s).astype(np.float16) for s in ((m, k), (n, k), (m, n)))
    on = [gp.asarray(a, device=device) for a in (g, x, w)]
    gx, gw, gb = dense.linear_backward(*on, (True, True, True), grad_dtype=gp.float32)
    assert (gx.dtype, gw.dtype, gb.dtype) == (gp.float16, gp.float32, gp.float32)
    x64, w64, g64 = (a.astype(np.float64) for a in (x, w, g))
    for a, want, tol in ((gx, g64 @ w64, 2e-3), (gw, g64.T @ x64, 2e-3),
                         (gb, g64.sum(axis=0), 1e-5)):
        np.testing.assert_allclose(np.asarray(a).astype(np.float64), want, rtol=tol,
                                   atol=tol * np.abs(want).max())
    _, gw2, gb2 = dense.linear_backward(*on, (False, True, True), grad_dtype=gp.float32)
    np.testing.assert_array_equal(np.asarray(gw2), np.asarray(gw))
    np.testing.assert_array_equal(np.asarray(gb2), np.asarray(gb))
    with pytest.raises(TypeError, match="linear_backward: grad_dtype"):
        dense.linear_backward(*on, (True, True, True), grad_dtype=gp.float64)
