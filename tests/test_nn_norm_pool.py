"""GroupNorm, InstanceNorm1d/2d/3d, LocalResponseNorm, BatchNorm3d and the pooling layers
beyond 2-D (max pooling with indices, unpooling, 3-D and adaptive pools, LP pools) against
torch (a test-only oracle): outputs, indices, running statistics, state_dict keys and the
gradients of inputs and parameters, on every device."""
import inspect

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RTOL, ATOL = 1e-4, 1e-5


def _np(t):
    return t.detach().numpy()


def _g(x, device, requires_grad=False):
    a = gp.asarray(_np(x), device=device)
    if requires_grad:
        a.requires_grad_()
    return a


def _close(a, e, rtol=RTOL, atol=ATOL):
    assert_close(a, _np(e) if hasattr(e, "detach") else e, rtol=rtol, atol=atol)


def _same_indices(gi, ti):
    assert gi.dtype == gp.int64
    np.testing.assert_array_equal(np.asarray(gi.to_device("cpu")), ti.numpy())


def _distinct(*shape):
    """Distinct values in random order: no ties, so every window has one maximum."""
    return torch.randperm(int(np.prod(shape))).float().reshape(shape) / 10.0 - 3.0


def _copy(tmod, gmod, device):
    gmod.to(device)
    assert list(gmod.state_dict()) == list(tmod.state_dict())
    res = gmod.load_state_dict({k: _np(v) for k, v in tmod.state_dict().items()})
    assert res.missing_keys == [] and res.unexpected_keys == []


def _grads(t_out, g_out, tins, gins, device, tmod=None, gmod=None):
    """Backprop one random cotangent through both; compare input and parameter gradients."""
    cot = torch.randn(t_out.shape)
    (t_out * cot).sum().backward()
    gp.sum(g_out * _g(cot, device)).backward()
    for gx, tx in zip(gins, tins):
        _close(gx.grad, tx.grad)
    if tmod is not None:
        tp = dict(tmod.named_parameters())
        gpn = dict(gmod.named_parameters())
        assert list(gpn) == list(tp)
        for name, p in gpn.items():
            _close(p.grad, tp[name].grad)


def _check(tmod, gmod, x, device, pick=lambda o: o):
    """Forward both on x (after copying torch's state); outputs, input and parameter grads."""
    _copy(tmod, gmod, device)
    tx, gx = x.clone().requires_grad_(), _g(x, device, True)
    t, g = pick(tmod(tx)), pick(gmod(gx))
    _close(g, t)
    _grads(t, g, [tx], [gx], device, tmod, gmod)


def _check_fn(tfn, gfn, x, device, indices=False):
    tx, gx = x.clone().requires_grad_(), _g(x, device, True)
    t, g = tfn(tx), gfn(gx)
    if indices:
        (t, ti), (g, gi) = t, g
        _same_indices(gi, ti)
    _close(g, t)
    _grads(t, g, [tx], [gx], device)


def _randomize(tmod):
    """Non-trivial affine parameters (torch initializes ones and zeros)."""
    with torch.no_grad():
        for p in tmod.parameters():
            p.copy_(torch.randn(p.shape))


def _takes_bias(cls) -> bool:
    return "bias" in inspect.signature(cls.__init__).parameters


# ---- GroupNorm ------------------------------------------------------------------------------
@pytest.mark.parametrize("groups,shape", [(2, (3, 4, 5)), (3, (2, 6, 3, 4)), (1, (2, 4, 2, 2, 3)),
                                          (3, (5, 12))])
def test_group_norm(device, groups, shape):
    c = shape[1]
    tm, gm = torch.nn.GroupNorm(groups, c), nn.GroupNorm(groups, c)
    _randomize(tm)
    _check(tm, gm, torch.randn(*shape) * 2 + 1, device)


@pytest.mark.parametrize("kw", [{"affine": False}, {"eps": 1e-2}, {"bias": False}])
def test_group_norm_options(device, kw):
    if "bias" in kw and not _takes_bias(torch.nn.GroupNorm):
        pytest.skip("this torch's GroupNorm has no bias argument")
    tm, gm = torch.nn.GroupNorm(2, 6, **kw), nn.GroupNorm(2, 6, **kw)
    _randomize(tm)
    if _takes_bias(torch.nn.GroupNorm):   # (torch 2.13's repr shows bias; older ones do not)
        assert repr(gm) == repr(tm)
    _check(tm, gm, torch.randn(2, 6, 5), device)


def test_group_norm_functional(device):
    x, w, b = torch.randn(2, 6, 3, 3), torch.randn(6), torch.randn(6)
    tins = [t.clone().requires_grad_() for t in (x, w, b)]
    gins = [_g(t, device, True) for t in (x, w, b)]
    t = TF.group_norm(tins[0], 3, tins[1], tins[2], 1e-3)
    g = F.group_norm(gins[0], 3, gins[1], gins[2], 1e-3)
    _close(g, t)
    _grads(t, g, tins, gins, device)


def test_group_norm_errors(device):
    with pytest.raises(ValueError, match="divisible by num_groups"):
        nn.GroupNorm(4, 6)
    x = _g(torch.randn(2, 6, 3), device)
    with pytest.raises(ValueError, match="group_norm.*divisible"):
        F.group_norm(x, 4)
    with pytest.raises(ValueError, match="group_norm: weight must have shape"):
        F.group_norm(x, 2, gp.ones((3,), device=device))
    with pytest.raises(ValueError, match="group_norm: input needs at least 2"):
        F.group_norm(_g(torch.randn(6), device), 2)
    with pytest.raises(TypeError, match="group_norm"):
        F.group_norm(gp.ones((2, 4, 3), dtype=gp.int32, device=device), 2)


# ---- InstanceNorm ---------------------------------------------------------------------------
INSTANCE = [("InstanceNorm1d", (3, 4, 6)), ("InstanceNorm2d", (2, 4, 3, 5)),
            ("InstanceNorm3d", (2, 4, 2, 3, 3))]


@pytest.mark.parametrize("cls,shape", INSTANCE)
@pytest.mark.parametrize("kw", [{}, {"affine": True}, {"track_running_stats": True, "momentum": 0.3},
                                {"affine": True, "track_running_stats": True}])
def test_instance_norm_train_then_eval(device, cls, shape, kw):
    tm, gm = getattr(torch.nn, cls)(4, **kw), getattr(nn, cls)(4, **kw)
    _randomize(tm)
    if _takes_bias(getattr(torch.nn, cls)):   # (torch 2.13's repr shows bias; older ones do not)
        assert repr(gm) == repr(tm)
    x = torch.randn(*shape) * 2 + 1
    _check(tm, gm, x, device)
    for name, buf in tm.named_buffers():
        _close(dict(gm.named_buffers())[name], buf)   # running stats; the count stays 0
    tm.eval()
    gm.eval()
    x2 = torch.randn(*shape)
    _check(tm, gm, x2, device)


@pytest.mark.parametrize("cls,shape", INSTANCE)
def test_instance_norm_unbatched(device, cls, shape):
    tm = getattr(torch.nn, cls)(4, affine=True, track_running_stats=True)
    gm = getattr(nn, cls)(4, affine=True, track_running_stats=True)
    _randomize(tm)
    _check(tm, gm, torch.randn(*shape[1:]), device)
    _close(gm.running_mean, tm.running_mean)
    _close(gm.running_var, tm.running_var)


def test_instance_norm_momentum_none_keeps_running_stats(device):
    tm = torch.nn.InstanceNorm1d(3, track_running_stats=True, momentum=None)
    gm = nn.InstanceNorm1d(3, track_running_stats=True, momentum=None)
    _copy(tm, gm, device)
    x = torch.randn(4, 3, 5)
    _close(gm(_g(x, device)), tm(x))
    _close(gm.running_mean, tm.running_mean)
    _close(gm.running_var, tm.running_var)


def test_instance_norm_functional(device):
    x, w, b = torch.randn(3, 4, 7), torch.randn(4), torch.randn(4)
    rm, rv = torch.randn(4), torch.rand(4) + 0.5
    grm, grv = _g(rm, device), _g(rv, device)
    tins = [t.clone().requires_grad_() for t in (x, w, b)]
    gins = [_g(t, device, True) for t in (x, w, b)]
    t = TF.instance_norm(tins[0], rm, rv, tins[1], tins[2], True, 0.2, 1e-3)
    g = F.instance_norm(gins[0], grm, grv, gins[1], gins[2], True, 0.2, 1e-3)
    _close(g, t)
    _close(grm, rm)
    _close(grv, rv)
    _grads(t, g, tins, gins, device)
    # running statistics instead of the input's
    _close(F.instance_norm(_g(x, device), grm, grv, use_input_stats=False),
           TF.instance_norm(x, rm, rv, use_input_stats=False))


def test_instance_norm_errors(device):
    with pytest.raises(ValueError, match="InstanceNorm2d: expected a 3-D or 4-D"):
        nn.InstanceNorm2d(3)(_g(torch.randn(2, 3, 4, 4, 4), device))
    with pytest.raises(ValueError, match="InstanceNorm1d: expected input's size at dim=1"):
        nn.InstanceNorm1d(3, affine=True)(_g(torch.randn(2, 4, 5), device))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(3)(_g(torch.randn(2, 4, 5), device))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(_g(torch.randn(2, 3, 1), device))
    with pytest.raises(ValueError, match="use_input_stats"):
        F.instance_norm(_g(torch.randn(2, 3, 4), device), use_input_stats=False)


# ---- BatchNorm3d, LocalResponseNorm ---------------------------------------------------------
def test_batch_norm3d_train_then_eval(device):
    tm, gm = torch.nn.BatchNorm3d(3, momentum=0.2), nn.BatchNorm3d(3, momentum=0.2)
    _randomize(tm)
    x = torch.randn(2, 3, 3, 2, 4) * 2 + 1
    _check(tm, gm, x, device)
    for name, buf in tm.named_buffers():
        _close(dict(gm.named_buffers())[name], buf)
    tm.eval()
    gm.eval()
    _check(tm, gm, torch.randn(2, 3, 2, 2, 3), device)
    with pytest.raises(ValueError, match="BatchNorm3d: expected a 5-D input"):
        gm(_g(torch.randn(2, 3, 4, 4), device))


@pytest.mark.parametrize("shape,args", [((2, 5, 7), (3,)), ((2, 6, 3, 4), (2, 1e-2, 0.5, 2.0)),
                                        ((1, 4, 2, 3, 2), (5, 0.1))])
def test_local_response_norm(device, shape, args):
    tm, gm = torch.nn.LocalResponseNorm(*args), nn.LocalResponseNorm(*args)
    assert repr(gm) == repr(tm)
    _check(tm, gm, torch.randn(*shape) * 3, device)
    with pytest.raises(ValueError, match="local_response_norm: expected a 3-D or higher"):
        gm(_g(torch.randn(3, 4), device))


# ---- max pooling with indices, max unpooling --------------------------------------------------
MAXPOOL2D = [{"kernel_size": 3}, {"kernel_size": (2, 3), "stride": (1, 2), "padding": 1},
             {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True},
             {"kernel_size": 2, "ceil_mode": True}]


@pytest.mark.parametrize("kw", MAXPOOL2D)
def test_max_pool2d_return_indices(device, kw):
    x = _distinct(2, 3, 7, 9)
    _check_fn(lambda a: TF.max_pool2d(a, return_indices=True, **kw),
              lambda a: F.max_pool2d(a, return_indices=True, **kw), x, device, indices=True)
    _check_fn(lambda a: TF.max_pool2d_with_indices(a, **kw),
              lambda a: F.max_pool2d_with_indices(a, **kw), x[0], device, indices=True)
    tm = torch.nn.MaxPool2d(return_indices=True, **kw)
    gm = nn.MaxPool2d(return_indices=True, **kw)
    assert repr(gm) == repr(tm)
    (t, ti), (g, gi) = tm(x), gm(_g(x, device))
    _close(g, t)
    _same_indices(gi, ti)


@pytest.mark.parametrize("kw", [{"kernel_size": 3}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": 2, "dilation": 3, "ceil_mode": True, "stride": 2}])
def test_max_pool1d_return_indices(device, kw):
    x = _distinct(2, 3, 11)
    _check_fn(lambda a: TF.max_pool1d(a, return_indices=True, **kw),
              lambda a: F.max_pool1d(a, return_indices=True, **kw), x, device, indices=True)
    _check_fn(lambda a: torch.nn.MaxPool1d(return_indices=True, **kw)(a),
              lambda a: nn.MaxPool1d(return_indices=True, **kw)(a), x[1], device, indices=True)


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": (2, 3, 2), "stride": (1, 2, 2),
                                                     "padding": (1, 1, 0)},
                                {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
                                {"kernel_size": 2, "dilation": (1, 2, 2)}])
def test_max_pool3d(device, kw):
    x = _distinct(2, 2, 5, 6, 7)
    _check_fn(lambda a: TF.max_pool3d(a, **kw), lambda a: F.max_pool3d(a, **kw), x, device)
    _check_fn(lambda a: TF.max_pool3d(a, return_indices=True, **kw),
              lambda a: F.max_pool3d_with_indices(a, **kw), x, device, indices=True)
    tm, gm = torch.nn.MaxPool3d(return_indices=True, **kw), nn.MaxPool3d(return_indices=True, **kw)
    assert repr(gm) == repr(tm)
    _check_fn(tm, gm, x[0], device, indices=True)   # unbatched (C, D, H, W)


def test_max_pool_ties_follow_torch(device):
    """With indices, ties pick the first maximum in torch's row-major scan of the window, so
    indices and gradients match torch's even on ties (see docs/nn.md)."""
    x = torch.randint(0, 3, (2, 2, 6, 7)).float()
    _check_fn(lambda a: TF.max_pool2d(a, 3, 2, 1, return_indices=True),
              lambda a: F.max_pool2d(a, 3, 2, 1, return_indices=True), x, device, indices=True)
    x3 = torch.randint(0, 2, (1, 2, 4, 4, 5)).float()
    _check_fn(lambda a: TF.max_pool3d(a, 2, 1, return_indices=True),
              lambda a: F.max_pool3d(a, 2, 1, return_indices=True), x3, device, indices=True)
    _check_fn(lambda a: TF.adaptive_max_pool2d(a, (4, 3), True),
              lambda a: F.adaptive_max_pool2d(a, (4, 3), True), x, device, indices=True)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3), stride=1, dilation=(2, 1)),
                                dict(kernel_size=3, stride=1, padding=1, ceil_mode=True)])
def test_max_pool_ties_without_indices_follow_torch(device, kw, dtype):
    """MaxPool2d without indices (the fused kernels: 2x2 and general windows, and the
    composition) sends each gradient to the first maximum in torch's row-major scan: binary
    spike maps after an IF/LIF layer tie everywhere, and the gradients of every layer before
    the pool followed (a SpikingJelly CSNN's differed by 15-57%)."""
    x = torch.randint(0, 2, (2, 3, 8, 9)).float()
    g = torch.randn(TF.max_pool2d(x, **kw).shape)
    xt = x.clone().requires_grad_()
    TF.max_pool2d(xt, **kw).backward(g)
    for composed in (False, True):
        a = _g(x, device).astype(getattr(gp, dtype))
        a.requires_grad_()
        if composed:   # the array layer's composition (devices without the kernel)
            from grilly.array import composites
            dev = a._device
            y, idx = composites.COMPOSITES["max_pool2d"](dev, a, *_geom(kw), tuple(g.shape[2:]))
            want = TF.max_pool2d(x, **kw, return_indices=True)[1]
            got = _torch_flat(np.asarray(idx), kw, x.shape[2:])
            np.testing.assert_array_equal(got, want.numpy())
            continue
        y = F.max_pool2d(a, **kw)
        y.backward(_g(g, device).astype(getattr(gp, dtype)))
        np.testing.assert_array_equal(np.asarray(y).astype(np.float32), _np(TF.max_pool2d(x, **kw)))
        tol = 4e-3 if dtype == "float16" else 1e-6   # (overlapping windows' sums round)
        np.testing.assert_allclose(np.asarray(a.grad).astype(np.float32), _np(xt.grad),
                                   rtol=tol, atol=tol)


def _geom(kw) -> tuple:
    """(kernel, stride, dilation, pads) of grilly.array.conv.max_pool2d for torch's keywords
    (no ceil_mode overhang: the tests' sizes leave none)."""
    pair = lambda v: v if isinstance(v, tuple) else (v, v)   # noqa: E731
    k = pair(kw["kernel_size"])
    s, d, p = pair(kw.get("stride", k)), pair(kw.get("dilation", 1)), pair(kw.get("padding", 0))
    return k, s, d, (p[0], p[0], p[1], p[1])


def _torch_flat(idx, kw, size) -> np.ndarray:
    """im2col window indices j*KH + i as torch's flat positions in the (H, W) plane."""
    (kh, kw_), (sh, sw), (dh, dw), (pt, _, pl, _) = _geom(kw)
    a = np.arange(idx.shape[2])[:, None]
    b = np.arange(idx.shape[3])[None, :]
    i, j = idx % kh, idx // kh
    return (a * sh + i * dh - pt) * size[1] + (b * sw + j * dw - pl)


@pytest.mark.parametrize("n,shape,kw,out", [
    (1, (2, 3, 11), {"kernel_size": 3, "stride": 2}, None),
    (1, (2, 3, 10), {"kernel_size": 2}, (10,)),
    (2, (2, 3, 7, 9), {"kernel_size": 2}, (7, 9)),
    (2, (2, 3, 8, 8), {"kernel_size": 3, "stride": 2, "padding": 1}, (8, 8)),
    (2, (3, 6, 6), {"kernel_size": 2}, None),
    (3, (1, 2, 5, 6, 7), {"kernel_size": 2}, (1, 2, 5, 6, 7)),
])
def test_max_unpool(device, n, shape, kw, out):
    x = _distinct(*shape)
    y, idx = getattr(TF, f"max_pool{n}d")(x, return_indices=True, **kw)
    tm = getattr(torch.nn, f"MaxUnpool{n}d")(**{k: v for k, v in kw.items() if k != "dilation"})
    gm = getattr(nn, f"MaxUnpool{n}d")(**{k: v for k, v in kw.items() if k != "dilation"})
    assert repr(gm) == repr(tm)
    gidx = _g(idx, device)
    ty, gy = y.clone().requires_grad_(), _g(y, device, True)
    t, g = tm(ty, idx, output_size=out), gm(gy, gidx, output_size=out)
    _close(g, t)
    _grads(t, g, [ty], [gy], device)
    # the pooling's own indices round-trip: unpool(pool(x)) keeps each maximum in place
    gp_, gi = getattr(F, f"max_pool{n}d")(_g(x, device), return_indices=True, **kw)
    _close(getattr(F, f"max_unpool{n}d")(gp_, gi, output_size=out,
                                         **{k: v for k, v in kw.items() if k != "dilation"}), t)


def test_max_unpool_errors(device):
    x = _g(torch.randn(1, 1, 2, 2), device)
    idx = gp.asarray(np.array([[[[0, 1], [2, 3]]]]), device=device)
    with pytest.raises(ValueError, match="max_unpool2d: invalid output_size"):
        F.max_unpool2d(x, idx, 2, output_size=(9, 4))
    with pytest.raises(ValueError, match="max_unpool2d: output_size must hold 2 or 4"):
        F.max_unpool2d(x, idx, 2, output_size=(4,))
    for bad in (16, -1):
        i = gp.asarray(np.array([[[[0, 1], [2, bad]]]]), device=device)
        with pytest.raises(IndexError, match=f"max_unpool2d: found an invalid max index {bad}"):
            F.max_unpool2d(x, i, 2)
    with pytest.raises(TypeError, match="max_unpool2d: indices must be an integer"):
        F.max_unpool2d(x, x, 2)
    with pytest.raises(ValueError, match="max_unpool2d: indices shape"):
        F.max_unpool2d(x, gp.reshape(idx, (1, 1, 4)), 2)


# ---- average, adaptive and LP pooling ---------------------------------------------------------
@pytest.mark.parametrize("kw", [
    {"kernel_size": 2}, {"kernel_size": (2, 3, 3), "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": 3, "padding": 1, "divisor_override": 5}, {"kernel_size": (1, 2, 3), "stride": 1}])
def test_avg_pool3d(device, kw):
    x = torch.randn(2, 2, 5, 6, 7)
    _check_fn(lambda a: TF.avg_pool3d(a, **kw), lambda a: F.avg_pool3d(a, **kw), x, device)
    tm, gm = torch.nn.AvgPool3d(**kw), nn.AvgPool3d(**kw)
    assert repr(gm) == repr(tm)
    _check_fn(tm, gm, x[1], device)


@pytest.mark.parametrize("size", [4, 1, 11, 15, (3,)])
def test_adaptive_pool1d(device, size):
    x = _distinct(2, 3, 11)
    _check_fn(torch.nn.AdaptiveAvgPool1d(size), nn.AdaptiveAvgPool1d(size), x, device)
    _check_fn(torch.nn.AdaptiveMaxPool1d(size), nn.AdaptiveMaxPool1d(size), x, device)
    _check_fn(torch.nn.AdaptiveMaxPool1d(size, return_indices=True),
              nn.AdaptiveMaxPool1d(size, return_indices=True), x[0], device, indices=True)


@pytest.mark.parametrize("size", [(3, 4), (2, None), 5, 1, (7, 10)])
def test_adaptive_max_pool2d(device, size):
    x = _distinct(2, 3, 7, 9)
    tm, gm = torch.nn.AdaptiveMaxPool2d(size), nn.AdaptiveMaxPool2d(size)
    assert repr(gm) == repr(tm)
    _check_fn(tm, gm, x, device)
    _check_fn(lambda a: TF.adaptive_max_pool2d(a, size, True),
              lambda a: F.adaptive_max_pool2d(a, size, True), x, device, indices=True)
    _check_fn(lambda a: TF.adaptive_max_pool2d_with_indices(a, size),
              lambda a: F.adaptive_max_pool2d_with_indices(a, size), x[1], device, indices=True)


@pytest.mark.parametrize("size", [(3, 2, 4), (None, 3, 7), 2])
def test_adaptive_pool3d(device, size):
    x = _distinct(2, 2, 5, 6, 7)
    _check_fn(torch.nn.AdaptiveAvgPool3d(size), nn.AdaptiveAvgPool3d(size), x, device)
    _check_fn(torch.nn.AdaptiveMaxPool3d(size, True), nn.AdaptiveMaxPool3d(size, True), x, device,
              indices=True)
    _check_fn(lambda a: TF.adaptive_max_pool3d(a, size), lambda a: F.adaptive_max_pool3d(a, size),
              x[0], device)


def test_adaptive_pool_errors(device):
    x = _g(torch.randn(2, 3, 5), device)
    with pytest.raises(ValueError, match="adaptive_max_pool2d: expected a 3-D or 4-D"):
        F.adaptive_max_pool2d(_g(torch.randn(5, 5), device), 2)
    with pytest.raises(ValueError, match="adaptive_avg_pool1d: output_size must hold positive"):
        F.adaptive_avg_pool1d(x, 0)
    with pytest.raises(ValueError, match="adaptive_max_pool3d: output_size must be"):
        F.adaptive_max_pool3d(_g(torch.randn(1, 2, 3, 3, 3), device), (2, 2))


@pytest.mark.parametrize("n,p,kw", [(1, 2, {"kernel_size": 3}), (1, 3.0, {"kernel_size": 2, "stride": 3}),
                                    (2, 2, {"kernel_size": 3, "stride": 2, "ceil_mode": True}),
                                    (2, 1.5, {"kernel_size": (2, 3)}), (3, 2, {"kernel_size": 2})])
def test_lp_pool(device, n, p, kw):
    if not hasattr(torch.nn, f"LPPool{n}d"):
        pytest.skip(f"this torch has no LPPool{n}d")
    shape = {1: (2, 3, 10), 2: (2, 3, 7, 8), 3: (1, 2, 4, 5, 6)}[n]
    x = torch.rand(*shape) + 0.1   # positive: x^p is real for a fractional p
    tm, gm = getattr(torch.nn, f"LPPool{n}d")(p, **kw), getattr(nn, f"LPPool{n}d")(p, **kw)
    assert repr(gm) == repr(tm)
    _check_fn(tm, gm, x, device)
    _check_fn(lambda a: getattr(TF, f"lp_pool{n}d")(a, p, **kw),
              lambda a: getattr(F, f"lp_pool{n}d")(a, p, **kw), x, device)


def test_pool_errors(device):
    x = _g(torch.randn(2, 3, 4, 4), device)
    with pytest.raises(ValueError, match="max_pool3d: expected a 4-D or 5-D"):
        F.max_pool3d(x[0, 0], 2)
    with pytest.raises(ValueError, match="max_pool3d: padding"):
        F.max_pool3d(gp.expand_dims(x, axis=0), 2, padding=2)
    with pytest.raises(ValueError, match="avg_pool3d: stride must be positive"):
        F.avg_pool3d(gp.expand_dims(x, axis=0), 2, stride=0)
    with pytest.raises(ValueError, match="avg_pool3d: divisor_override"):
        F.avg_pool3d(gp.expand_dims(x, axis=0), 2, divisor_override=0)
    with pytest.raises(ValueError, match="lp_pool2d: norm_type"):
        F.lp_pool2d(x, 0, 2)
    with pytest.raises(TypeError, match="max_pool2d"):
        F.max_pool2d(gp.ones((1, 1, 4, 4), dtype=gp.int32, device=device), 2,
                     return_indices=True)


def test_state_dict_keys_match_torch():
    pairs = [(torch.nn.GroupNorm(2, 4), nn.GroupNorm(2, 4)),
             (torch.nn.InstanceNorm2d(3), nn.InstanceNorm2d(3)),
             (torch.nn.InstanceNorm1d(3, affine=True, track_running_stats=True),
              nn.InstanceNorm1d(3, affine=True, track_running_stats=True)),
             (torch.nn.BatchNorm3d(3), nn.BatchNorm3d(3)),
             (torch.nn.LocalResponseNorm(3), nn.LocalResponseNorm(3))]
    for tm, gm in pairs:
        assert list(gm.state_dict()) == list(tm.state_dict())
        for k, v in tm.state_dict().items():
            assert tuple(gm.state_dict()[k].shape) == tuple(v.shape)
            _close(gm.state_dict()[k], v)


def test_traced_replays_match_torch(device):
    """grilly.jit replays (new inputs each call) of the indices, unpooling and norm paths: no
    host reads inside, and nothing written in place that a replay would keep."""
    import grilly

    @grilly.jit
    def f(x):
        y, i = F.max_pool2d(x, 3, 2, 1, return_indices=True)
        z = F.max_unpool2d(y, i, 3, 2, 1, output_size=(7, 9))
        return F.group_norm(z, 2) + F.instance_norm(x) + F.adaptive_max_pool2d(x, (7, 9)), i

    for _ in range(4):
        x = torch.randn(2, 4, 7, 9)
        y, i = TF.max_pool2d(x, 3, 2, 1, return_indices=True)
        want = (TF.group_norm(TF.max_unpool2d(y, i, 3, 2, 1, output_size=(7, 9)), 2)
                + TF.instance_norm(x) + TF.adaptive_max_pool2d(x, (7, 9)))
        got, gi = f(_g(x, device))
        _close(got, want)
        _same_indices(gi, i)
