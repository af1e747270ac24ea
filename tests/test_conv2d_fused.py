"""The whole-convolution and max-pool kernels (conv2d, conv2d_backward, max_pool2d,
max_pool2d_backward; docs/kernels/conv.md) against float64 numpy references, per device: the
backend's kernel where it has one, and the array layer's composition on the same device."""
import numpy as np
import pytest

import grilly as gp
from grilly.array import composites
from grilly.array import conv as C
from grilly.nn import functional as F

# (x shape, w shape, stride, dilation, pads (top, bottom, left, right), groups)
CONV_CASES = [
    ((2, 3, 9, 8), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),
    ((3, 4, 10, 7), (6, 2, 3, 2), (2, 1), (1, 2), (1, 0, 0, 2), 2),
    ((2, 4, 5, 5), (8, 4, 1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1),       # 1x1: no windows
    ((2, 6, 5, 4), (4, 3, 1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 2),       # 1x1, grouped
    ((1, 2, 6, 6), (3, 2, 5, 5), (1, 1), (1, 1), (2, 2, 2, 2), 1),
    ((4, 6, 7, 9), (6, 1, 3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 6),       # depthwise
    ((5, 2, 4, 4), (3, 2, 2, 2), (3, 3), (1, 1), (0, 1, 0, 1), 1),       # stride > kernel
]


def _out(xs, ws, stride, dilation, pads):
    return tuple((xs[2 + a] + pads[2 * a] + pads[2 * a + 1] - dilation[a] * (ws[2 + a] - 1) - 1)
                 // stride[a] + 1 for a in (0, 1))


def _patches(xp, kh, kw, stride, dilation, out):
    """((i, j), the (N, C, Ho, Wo) strided slice of the padded image under kernel offset (i, j))."""
    (sh, sw), (dh, dw), (ho, wo) = stride, dilation, out
    for i in range(kh):
        for j in range(kw):
            yield (i, j), (slice(i * dh, i * dh + sh * (ho - 1) + 1, sh),
                           slice(j * dw, j * dw + sw * (wo - 1) + 1, sw))


def np_conv2d(x, w, b, stride, dilation, pads, groups):
    """Reference cross-correlation in float64, and its gradients for an output gradient."""
    xp = np.pad(x, ((0, 0), (0, 0), pads[:2], pads[2:]))
    o, cg, kh, kw = w.shape
    og = o // groups
    out = _out(x.shape, w.shape, stride, dilation, pads)
    y = np.zeros((x.shape[0], o) + out)
    for g in range(groups):
        cs, os_ = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
        for (i, j), (a, c) in _patches(xp, kh, kw, stride, dilation, out):
            y[:, os_] += np.einsum("nchw,oc->nohw", xp[:, cs, a, c], w[os_, :, i, j])
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def np_conv2d_grads(gy, x, w, stride, dilation, pads, groups):
    xp = np.pad(x, ((0, 0), (0, 0), pads[:2], pads[2:]))
    o, cg, kh, kw = w.shape
    og = o // groups
    gxp, gw = np.zeros_like(xp), np.zeros_like(w)
    for g in range(groups):
        cs, os_ = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
        for (i, j), (a, c) in _patches(xp, kh, kw, stride, dilation, gy.shape[2:]):
            gxp[:, cs, a, c] += np.einsum("nohw,oc->nchw", gy[:, os_], w[os_, :, i, j])
            gw[os_, :, i, j] += np.einsum("nohw,nchw->oc", gy[:, os_], xp[:, cs, a, c])
    h, wd = x.shape[2:]
    return gxp[:, :, pads[0]:pads[0] + h, pads[2]:pads[2] + wd], gw, gy.sum(axis=(0, 2, 3))


def _paths(device, name):
    """The kernel (where the device's backend has it) and the composition, as callables."""
    out = [("composed", lambda *a: composites.COMPOSITES[name](device, *a))]
    if name in device.kernels:
        out.append(("kernel", getattr(C, name)))
    return out


def _tol(dtype):
    return dict(rtol=1e-12, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv2d_forward_and_backward(device, case, dtype):
    xs, ws, stride, dilation, pads, groups = CONV_CASES[case]
    rng = np.random.default_rng(case)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    b = rng.standard_normal(ws[0])
    out = _out(xs, ws, stride, dilation, pads)
    gy = rng.standard_normal((xs[0], ws[0]) + out)
    want_y = np_conv2d(x, w, b, stride, dilation, pads, groups)
    want = np_conv2d_grads(gy, x, w, stride, dilation, pads, groups)
    on = [gp.asarray(a.astype(dtype), device=device) for a in (x, w, b, gy)]
    scale = max(1.0, float(np.abs(want_y).max()))
    for (how, fwd), (_, bwd) in zip(_paths(device, "conv2d"), _paths(device, "conv2d_backward")):
        for bias in (on[2], None):
            y = fwd(on[0], on[1], bias, stride, dilation, pads, groups, out)
            ref = want_y if bias is not None else want_y - b.reshape(1, -1, 1, 1)
            np.testing.assert_allclose(np.asarray(y), ref, **_tol(dtype), err_msg=how)
            assert y.dtype == on[0].dtype and y.device == device
        for need in ((True, True, True), (False, True, False), (True, False, True)):
            got = bwd(on[3], on[0], on[1], stride, dilation, pads, groups, need)
            for g, wnt, n in zip(got, want, need):
                if not n:
                    assert g is None, how
                    continue
                tol = _tol(dtype)
                np.testing.assert_allclose(np.asarray(g), wnt, rtol=tol["rtol"],
                                           atol=tol["atol"] * scale * 10, err_msg=how)


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv2d_backward_kernel_is_the_composition(device, case):
    """Vulkan's conv2d_backward is the composition on buffers with the windows in the weight's
    own (kh-major) order, so no weight copies: the composition's gradients up to float32
    summation order, and a contiguous weight gradient (the cpu kernel is a fused loop of its
    own)."""
    if device.backend.name != "vulkan":
        pytest.skip("the Vulkan kernel only")
    xs, ws, stride, dilation, pads, groups = CONV_CASES[case]
    rng = np.random.default_rng(10 + case)
    out = _out(xs, ws, stride, dilation, pads)
    x, w, gy = (gp.asarray(rng.standard_normal(s).astype(np.float32), device=device)
                for s in (xs, ws, (xs[0], ws[0]) + out))
    got = C.conv2d_backward(gy, x, w, stride, dilation, pads, groups, (True, True, True))
    want = composites.COMPOSITES["conv2d_backward"](device, gy, x, w, stride, dilation, pads,
                                                    groups, (True, True, True))
    for a, b in zip(got, want):
        b = np.asarray(b)
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-5,
                                   atol=1e-5 * max(1.0, float(np.abs(b).max())))
    assert np.asarray(got[1]).flags.c_contiguous and got[1].shape == ws


def test_conv2d_autograd_matches_the_reference(device):
    """nn.functional.conv2d's one node, through backward: input, weight and bias gradients."""
    xs, ws, stride, dilation, pads, groups = CONV_CASES[1]
    rng = np.random.default_rng(9)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    gx, gw, gb = (gp.asarray(a, device=device) for a in (x, w, b))
    for a in (gx, gw, gb):
        a.requires_grad = True
    y = F.conv2d(gx, gw, gb, stride=stride, padding=(1, 0), dilation=dilation, groups=groups)
    loss = gp.sum(y * y)
    loss.backward()
    p = (1, 1, 0, 0)
    ref = np_conv2d(x, w, b, stride, dilation, p, groups)
    want = np_conv2d_grads(2 * ref, x, w, stride, dilation, p, groups)
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-12)
    for got, wnt in zip((gx.grad, gw.grad, gb.grad), want):
        np.testing.assert_allclose(np.asarray(got), wnt, rtol=1e-11, atol=1e-11)


def test_conv2d_promotes_and_keeps_low_precision(device):
    """A float32 input with a float64 weight computes in float64; float16 and bfloat16 inputs
    take the composition and keep their dtype."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))
    ref = np_conv2d(x, w, None, (1, 1), (1, 1), (1, 1, 1, 1), 1)
    y = F.conv2d(gp.asarray(x.astype(np.float32), device=device), gp.asarray(w, device=device),
                 padding=1)
    assert y.dtype == gp.float64
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-6, atol=1e-6)
    for dt, tol in ((gp.float16, 3e-2), (gp.bfloat16, 1.5e-1)):
        if dt == gp.float16 and not device.backend.info(device).get("float16", True):
            continue
        y = F.conv2d(gp.astype(gp.asarray(x, device=device), dt),
                     gp.astype(gp.asarray(w, device=device), dt), padding=1)
        assert y.dtype == dt
        got = np.asarray(gp.astype(y, gp.float64).to_device("cpu"))
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())


# ---- max pooling ------------------------------------------------------------------------------
POOL_CASES = [
    ((2, 3, 8, 8), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0)),
    ((2, 3, 9, 7), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),
    ((1, 2, 10, 10), (2, 3), (1, 2), (2, 1), (0, 0, 0, 0)),
    ((2, 2, 7, 7), (2, 2), (2, 2), (1, 1), (0, 1, 0, 1)),                 # ceil_mode's overhang
    ((3, 1, 5, 6), (3, 2), (1, 1), (1, 1), (1, 1, 1, 0)),
    ((2, 3, 7, 9), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0)),   # 2x2/2 fast paths, odd sizes
    ((2, 2, 8, 6), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0)),
]


def np_max_pool(x, kernel, stride, dilation, pads):
    """(y, window index j*KH + i (kw-major) of the first maximum in row-major order, torch's
    scan; NaN before all) and -inf padding that never wins."""
    kh, kw = kernel
    xp = np.pad(x, ((0, 0), (0, 0), pads[:2], pads[2:]), constant_values=np.nan)
    out = _out(x.shape, (0, 0) + tuple(kernel), stride, dilation, pads)
    wins = {}
    for (i, j), (a, c) in _patches(xp, kh, kw, stride, dilation, out):
        wins[j * kh + i] = xp[:, :, a, c]
    stack = np.stack([wins[k] for k in range(kh * kw)], axis=2)
    pad = np.stack([np.pad(np.zeros(x.shape), ((0, 0), (0, 0), pads[:2], pads[2:]),
                           constant_values=1)[:, :, a, c]
                    for _, (a, c) in sorted(_patches(xp, kh, kw, stride, dilation, out),
                                            key=lambda t: t[0][1] * kh + t[0][0])], axis=2)
    order = np.array([j * kh + i for i in range(kh) for j in range(kw)])   # row-major scan
    vals = np.where(pad == 1, -np.inf, stack)[:, :, order]
    nan = np.isnan(vals)
    idx = np.where(nan.any(axis=2), nan.argmax(axis=2), np.argmax(np.where(nan, -np.inf, vals),
                                                                   axis=2))
    return np.take_along_axis(vals, idx[:, :, None], axis=2)[:, :, 0], order[idx]


def np_max_unpool(g, idx, kernel, stride, dilation, pads, size):
    kh = kernel[0]
    n, c, ho, wo = g.shape
    gx = np.zeros((n, c) + tuple(size))
    a, b = np.meshgrid(np.arange(ho), np.arange(wo), indexing="ij")
    for q in range(n):
        for ch in range(c):
            k = idx[q, ch]
            r = a * stride[0] + (k % kh) * dilation[0] - pads[0]
            cc = b * stride[1] + (k // kh) * dilation[1] - pads[2]
            np.add.at(gx[q, ch], (r, cc), g[q, ch])
    return gx


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(POOL_CASES)))
def test_max_pool2d_kernels(device, case, dtype):
    xs, kernel, stride, dilation, pads = POOL_CASES[case]
    rng = np.random.default_rng(case)
    # small integers: ties everywhere, so the first-maximum rule is tested
    x = rng.integers(-3, 3, xs).astype(np.float64)
    x.flat[::7] = -np.inf
    if case == 1:
        x[0, 0, 2, 2] = np.nan
    want_y, want_i = np_max_pool(x, kernel, stride, dilation, pads)
    gy = rng.standard_normal(want_y.shape)
    xd, gd = gp.asarray(x.astype(dtype), device=device), gp.asarray(gy.astype(dtype), device=device)
    for (how, fwd), (_, bwd) in zip(_paths(device, "max_pool2d"),
                                    _paths(device, "max_pool2d_backward")):
        y, idx = fwd(xd, kernel, stride, dilation, pads, want_y.shape[2:])
        assert idx.dtype == gp.int32, how
        np.testing.assert_array_equal(np.asarray(y), want_y.astype(dtype), err_msg=how)
        np.testing.assert_array_equal(np.asarray(idx), want_i, err_msg=how)
        g = bwd(gd, idx, kernel, stride, dilation, pads, xs[2:])
        want = np_max_unpool(gy.astype(dtype).astype(np.float64), want_i, kernel, stride,
                             dilation, pads, xs[2:])
        tol = dict(rtol=2e-3, atol=2e-3) if dtype == np.float16 else _tol(dtype)
        np.testing.assert_allclose(np.asarray(g).astype(np.float64), want, **tol, err_msg=how)


def test_max_pool2d_autograd_matches_torch_order(device):
    """Distinct values (no ties): the values and gradients of torch's max_pool2d, any padding."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.permutation(2 * 3 * 9 * 8).reshape(2, 3, 9, 8).astype(np.float32)
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
               dict(kernel_size=2, ceil_mode=True), dict(kernel_size=(3, 2), dilation=(2, 1))):
        tx = torch.tensor(x, requires_grad=True)
        ty = torch.nn.functional.max_pool2d(tx, **kw)
        gy = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
        ty.backward(torch.tensor(gy))
        gx = gp.asarray(x, device=device)
        gx.requires_grad = True
        y = F.max_pool2d(gx, **kw)
        y.backward(gp.asarray(gy, device=device))
        np.testing.assert_array_equal(np.asarray(y), ty.detach().numpy())
        np.testing.assert_allclose(np.asarray(gx.grad), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


# a small weight gradient over a long K (N * Ho * Wo >= 2048): Vulkan's conv_dw.comp, which reads
# the output gradient as it is laid out and makes the bias's gradient with the weight's
SMALL_DW_CASES = [
    ((4, 3, 32, 32), (16, 3, 3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),    # a first layer
    ((6, 5, 20, 23), (70, 5, 3, 5), (1, 1), (1, 1), (1, 1, 2, 2)),    # 2 x 3 tiles; P = 460
    ((8, 2, 33, 31), (8, 2, 3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),     # strided
]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("case", range(len(SMALL_DW_CASES)))
def test_conv2d_small_weight_gradient_long_k(device, case, dtype, monkeypatch):
    """Weight and bias gradients of small convolutions over a long K against float64, for
    every ``need``, in the operands' dtype and (autocast's master weights) in float32; on
    Vulkan they come from conv_dw.comp (16-bit ones where the device has no tensor cores)."""
    import ml_dtypes

    xs, ws, stride, dilation, pads = SMALL_DW_CASES[case]
    host = ml_dtypes.bfloat16 if dtype == "bfloat16" else getattr(np, dtype)
    rng = np.random.default_rng(20 + case)
    out = _out(xs, ws, stride, dilation, pads)
    x, w, gy = (rng.standard_normal(s).astype(host) for s in (xs, ws, (xs[0], ws[0]) + out))
    want = np_conv2d_grads(gy.astype(np.float64), x.astype(np.float64), w.astype(np.float64),
                           stride, dilation, pads, 1)
    ran = []
    if device.backend.name == "vulkan":
        from grilly.backends.vulkan import conv as vconv
        real = vconv._dw_small
        monkeypatch.setattr(vconv, "_dw_small", lambda *a: ran.append(1) or real(*a))
    on = [gp.asarray(a, device=device) for a in (x, w, gy)]
    for gd in (None, gp.float32):
        if gd is not None and dtype == "float32":
            continue
        for need in ((True, True, True), (False, True, True), (False, True, False),
                     (True, True, False)):
            got = C.conv2d_backward(on[2], on[0], on[1], stride, dilation, pads, 1, need,
                                    grad_dtype=gd)
            for k, (g, wnt, n) in enumerate(zip(got, want, need)):
                if not n:
                    assert g is None
                    continue
                out_dt = dtype if gd is None or k == 0 else "float32"
                assert g.dtype == getattr(gp, out_dt)
                # (float32 master gradients may be the 16-bit ones widened: cpu's composition)
                tol = {"float32": 2e-5, "bfloat16": 1e-2, "float16": 2e-3}[dtype]
                scale = float(np.abs(wnt).max())
                np.testing.assert_allclose(np.asarray(g).astype(np.float64), wnt,
                                           rtol=tol, atol=tol * scale)
            if k == 2 and need[1]:
                assert tuple(got[1].shape) == ws
    if device.backend.name == "vulkan":
        from grilly.backends.vulkan.linalg import _coop
        # (16-bit operands on tensor cores take the product instead)
        assert bool(ran) == (dtype == "float32" or not _coop(on[0]._buf)), ran
