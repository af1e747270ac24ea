"""The conv family (grilly.array.conv im2col/col2im: a kernel on cpu, composed elsewhere) and
the hand-written VJPs of grilly.nn.functional (conv2d/pool windows, relu, batch_norm)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grilly as gp
from grilly.array import conv as C
from grilly.nn import functional as F
from grilly.testing import assert_close

# (kernel, stride, dilation, pads (top, bottom, left, right), input H, W)
GEOMS = [
    ((3, 3), (1, 1), (1, 1), (1, 1, 1, 1), (8, 8)),
    ((2, 2), (2, 2), (1, 1), (0, 0, 0, 0), (8, 8)),
    ((3, 2), (2, 1), (1, 2), (0, 1, 2, 0), (7, 6)),
    ((1, 3), (1, 3), (1, 1), (0, 0, 1, 1), (4, 9)),
    ((3, 3), (3, 2), (2, 1), (2, 2, 1, 1), (9, 5)),
    ((1, 1), (1, 1), (1, 1), (0, 0, 0, 0), (3, 4)),
]


def _out(kernel, stride, dilation, pads, size):
    return tuple((size[a] + pads[2 * a] + pads[2 * a + 1] - dilation[a] * (kernel[a] - 1) - 1)
                 // stride[a] + 1 for a in (0, 1))


def _ref_im2col(x, kernel, stride, dilation, pads, fill, out):
    """numpy reference: (N, C, KW*KH, Ho, Wo), kw-major."""
    pt, pb, pl, pr = pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, stride, dilation, out
    cols = [xp[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh, j * dw:j * dw + sw * (wo - 1) + 1:sw]
            for j in range(kw) for i in range(kh)]
    return np.stack(cols, axis=2)


def _ref_col2im(g, kernel, stride, dilation, pads, size):
    n, c = g.shape[:2]
    pt, pb, pl, pr = pads
    out = np.zeros((n, c, size[0] + pt + pb, size[1] + pl + pr), g.dtype)
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    ho, wo = g.shape[3:]
    for j in range(kw):
        for i in range(kh):
            out[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh,
                j * dw:j * dw + sw * (wo - 1) + 1:sw] += g[:, :, j * kh + i]
    return out[:, :, pt:pt + size[0], pl:pl + size[1]]


@pytest.fixture(params=["kernel", "composed"])
def path(request, device, monkeypatch):
    """Run once with the device's im2col/col2im kernels (where it has them), once composed."""
    if request.param == "composed":
        for name in ("im2col", "col2im"):
            if name in device.kernels:
                monkeypatch.delitem(device.kernels, name)
    elif "im2col" not in device.kernels:
        pytest.skip(f"{device} has no im2col kernel")
    return request.param


@pytest.mark.parametrize("geom", GEOMS)
@pytest.mark.parametrize("cm", [False, True])
def test_im2col_col2im_match_numpy(device, path, geom, cm):
    kernel, stride, dilation, pads, size = geom
    out = _out(kernel, stride, dilation, pads, size)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3) + size).astype(np.float32)
    ref = _ref_im2col(x, kernel, stride, dilation, pads, -2.5, out)
    got = C.im2col(gp.asarray(x, device=device), kernel, stride, dilation, pads, -2.5, out, cm)
    assert_close(got, ref.transpose(1, 2, 0, 3, 4) if cm else ref, rtol=0, atol=0)
    g = rng.standard_normal(ref.shape).astype(np.float32)
    gg = gp.asarray(g.transpose(1, 2, 0, 3, 4) if cm else g, device=device)
    assert_close(C.col2im(gg, kernel, stride, dilation, pads, size, cm),
                 _ref_col2im(g, kernel, stride, dilation, pads, size), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_im2col_dtypes(device, dtype):
    kernel, stride, dilation, pads, size = GEOMS[0]
    out = _out(kernel, stride, dilation, pads, size)
    x = np.random.default_rng(1).standard_normal((1, 2) + size).astype(dtype)
    got = C.im2col(gp.asarray(x, device=device), kernel, stride, dilation, pads, 0.0, out)
    assert got.dtype == getattr(gp, dtype)
    assert_close(got, _ref_im2col(x, kernel, stride, dilation, pads, 0.0, out), rtol=0, atol=0)
    back = C.col2im(got, kernel, stride, dilation, pads, size)
    assert back.dtype == getattr(gp, dtype)
    ref = _ref_col2im(_ref_im2col(x, kernel, stride, dilation, pads, 0.0, out).astype(np.float64),
                      kernel, stride, dilation, pads, size)
    assert_close(back, ref.astype(dtype), rtol=2e-3 if dtype == "float16" else 1e-12,
                 atol=1e-2 if dtype == "float16" else 0.0)


@given(kh=st.integers(1, 3), kw=st.integers(1, 3), sh=st.integers(1, 3), sw=st.integers(1, 2),
       dh=st.integers(1, 2), p=st.integers(0, 1), h=st.integers(3, 7), w=st.integers(3, 7))
def test_col2im_is_the_adjoint(kh, kw, sh, sw, dh, p, h, w):
    """<im2col(x), g> == <x, col2im(g)> for any geometry (cpu kernel)."""
    kernel, stride, dilation, pads = (kh, kw), (sh, sw), (dh, 1), (p, p, p, p)
    if h + 2 * p < dh * (kh - 1) + 1 or w + 2 * p < kw:
        return
    out = _out(kernel, stride, dilation, pads, (h, w))
    rng = np.random.default_rng(h * 7 + w)
    x = rng.standard_normal((2, 2, h, w))
    cols = C.im2col(gp.asarray(x), kernel, stride, dilation, pads, 0.0, out)
    g = rng.standard_normal(cols.shape)
    back = C.col2im(gp.asarray(g), kernel, stride, dilation, pads, (h, w))
    assert abs(float(np.sum(np.asarray(cols) * g)) - float(np.sum(x * np.asarray(back)))) < 1e-9


# ---- the VJPs against torch ---------------------------------------------------------------
torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _grads(device, fn_g, fn_t, shapes, dtype="float64", **kw):
    """Forward both on random inputs, backprop one random cotangent, return pairs to compare."""
    rng = np.random.default_rng(sum(sum(s) for s in shapes))
    arrs = [rng.standard_normal(s).astype(dtype) for s in shapes]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    gs = [gp.asarray(a, device=device).requires_grad_() for a in arrs]
    t, g = fn_t(*ts, **kw), fn_g(*gs, **kw)
    cot = rng.standard_normal(tuple(t.shape)).astype(dtype)
    (t * torch.tensor(cot)).sum().backward()
    gp.sum(g * gp.asarray(cot, device=device)).backward()
    return [(g, t.detach().numpy())] + [(a.grad, b.grad.numpy()) for a, b in zip(gs, ts)]


def _tol(device, dtype):
    if dtype == "float32":
        return 1e-5, 1e-5
    return (1e-10, 1e-12) if device.backend.name == "cpu" else (1e-5, 1e-6)


CONV = [dict(padding=1), dict(stride=2, padding=1), dict(padding=2, dilation=2),
        dict(groups=2, stride=(2, 1), padding=(1, 0)), dict(padding="same"),
        dict(stride=(3, 2), dilation=(1, 2), padding=(2, 1))]


@pytest.mark.parametrize("kw", CONV)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv2d_grads_match_torch(device, path, kw, dtype):
    wshape = (6, 4 // kw.get("groups", 1), 3, 3)
    pairs = _grads(device, F.conv2d, TF.conv2d, [(2, 4, 9, 8), wshape, (6,)], dtype, **kw)
    rtol, atol = _tol(device, dtype)
    for a, b in pairs:
        assert_close(a, b, rtol=rtol, atol=atol * max(1.0, float(np.abs(b).max())))


def test_conv2d_rectangular_kernel(device):
    for a, b in _grads(device, F.conv2d, TF.conv2d, [(2, 3, 7, 9), (4, 3, 2, 3)], "float32",
                       stride=(2, 1), padding=(1, 0)):
        assert_close(a, b, rtol=1e-5, atol=1e-5)


POOL = [dict(kernel_size=2), dict(kernel_size=3), dict(kernel_size=3, stride=1, padding=1),
        dict(kernel_size=3, ceil_mode=True), dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1))]


@pytest.mark.parametrize("kw", POOL + [dict(kernel_size=3, dilation=2)])
def test_max_pool2d_grads_match_torch(device, path, kw):
    for a, b in _grads(device, F.max_pool2d, TF.max_pool2d, [(2, 3, 8, 7)], "float32", **kw):
        assert_close(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kw", POOL + [dict(kernel_size=3, padding=1, count_include_pad=False),
                                       dict(kernel_size=3, ceil_mode=True, padding=1, stride=2)])
def test_avg_pool2d_grads_match_torch(device, path, kw):
    for a, b in _grads(device, F.avg_pool2d, TF.avg_pool2d, [(2, 3, 8, 7)], "float32", **kw):
        assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_relu_grad(device):
    x = gp.asarray(np.array([-1.0, 0.0, 2.0], np.float32), device=device).requires_grad_()
    y = F.relu(x)
    gp.sum(y * 3.0).backward()
    assert_close(y, np.array([0.0, 0.0, 2.0], np.float32))
    assert_close(x.grad, np.array([0.0, 0.0, 3.0], np.float32))  # torch: no gradient at 0
    with gp.autograd.no_grad():
        assert not F.relu(x).requires_grad


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5, 2)])
def test_batch_norm_training_grads_match_torch(device, affine, shape):
    c = shape[1]
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32) * 2 + 1
    w, b = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    gx, gw, gb = (gp.asarray(a, device=device).requires_grad_() for a in (x, w, b))
    trm, trv = torch.zeros(c), torch.ones(c)
    grm = gp.zeros(c, dtype=gp.float32, device=device)
    grv = gp.ones(c, dtype=gp.float32, device=device)
    t = TF.batch_norm(tx, trm, trv, tw if affine else None, tb if affine else None, training=True)
    g = F.batch_norm(gx, grm, grv, gw if affine else None, gb if affine else None, training=True)
    cot = rng.standard_normal(shape).astype(np.float32)
    (t * torch.tensor(cot)).sum().backward()
    gp.sum(g * gp.asarray(cot, device=device)).backward()
    assert_close(g, t.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert_close(gx.grad, tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert_close(grm, trm.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(grv, trv.numpy(), rtol=1e-5, atol=1e-6)
    if affine:
        assert_close(gw.grad, tw.grad.numpy(), rtol=1e-5, atol=1e-5)
        assert_close(gb.grad, tb.grad.numpy(), rtol=1e-5, atol=1e-5)
    else:
        assert gw.grad is None and gb.grad is None


# ---- Adam's whole-group update -------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(lr=0.05), dict(lr=0.05, weight_decay=0.1, maximize=True),
                                dict(lr=0.05, betas=(0.8, 0.9))])
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_group_update_matches_torch(device, name, kw):
    """Several parameters (the flat path), a step with one gradient missing (the per-parameter
    path), then a state_dict round trip into a fresh optimizer: all as torch."""
    from grilly import optim

    rng = np.random.default_rng(5)
    shapes = [(4, 3), (3,), (2, 2, 2)]
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    gw = [gp.asarray(a, device=device).requires_grad_() for a in init]
    tw = [torch.tensor(a, requires_grad=True) for a in init]
    gopt, topt = getattr(optim, name)(gw, **kw), getattr(torch.optim, name)(tw, **kw)
    for step in range(6):
        grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        for i, (a, b, g) in enumerate(zip(gw, tw, grads)):
            skip = step == 4 and i == 1
            a.grad = None if skip else gp.asarray(g, device=device)
            b.grad = None if skip else torch.tensor(g)
        gopt.step()
        topt.step()
        if step == 2:
            sd = gopt.state_dict()
            gopt = getattr(optim, name)(gw, **kw)
            gopt.load_state_dict(sd)
    for a, b in zip(gw, tw):
        assert_close(a, b.detach().numpy(), rtol=1e-5, atol=1e-6)
