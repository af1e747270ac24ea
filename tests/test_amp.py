"""grilly.amp: the autocast policy and GradScaler, on every device; torch.amp as the oracle for
the scale's sequence."""
import threading

import numpy as np
import pytest
import torch

import grilly as gp
from grilly import amp, autograd, nn, optim
from grilly.nn import functional as F

R = np.random.default_rng(11)


def _x(device, shape=(4, 8), dtype=np.float32):
    return gp.asarray(R.standard_normal(shape).astype(dtype), device=device)


def test_policy_result_dtypes(device):
    x = _x(device)
    lin = nn.Linear(8, 5).to(device)
    with amp.autocast(dtype=gp.float16):
        assert amp.is_autocast_enabled() and amp.get_autocast_dtype() is gp.float16
        assert gp.matmul(x, gp.matrix_transpose(x)).dtype == gp.float16     # LOWER
        y = lin(x)
        assert y.dtype == gp.float16                                        # linear
        assert gp.sum(y).dtype == gp.float32 and gp.exp(y).dtype == gp.float32   # FLOAT32
        assert F.softmax(y, dim=-1).dtype == gp.float32
        assert F.cross_entropy(y, gp.asarray([0, 1, 2, 3], device=device)).dtype == gp.float32
        assert (y + x[:, :5]).dtype == gp.float32                           # promotion
        assert (y * 2.0).dtype == gp.float16                                # not listed
        q = gp.reshape(x, (1, 4, 8))
        assert F.scaled_dot_product_attention(q, q, q).dtype == gp.float16   # attention
        assert F.flash_attention2(q, q, q).dtype == gp.float16
        x64 = gp.astype(x, gp.float64)
        assert gp.matmul(x64, gp.matrix_transpose(x64)).dtype == gp.float64  # double stays
        with amp.autocast(enabled=False):
            assert not amp.is_autocast_enabled()
            assert lin(x).dtype == gp.float32
        assert lin(x).dtype == gp.float16                                    # back on
    assert not amp.is_autocast_enabled() and amp.get_autocast_dtype() is None
    assert lin(x).dtype == gp.float32


def test_device_type_filter_and_decorator(device):
    x = _x(device)
    other = "vulkan" if str(device).startswith("cpu") else "cpu"
    with gp.autocast(device_type=other):
        assert gp.matmul(x, gp.matrix_transpose(x)).dtype == gp.float32
    with gp.autocast(device_type=str(device)):   # cpu's default is bfloat16, as torch's
        want = gp.bfloat16 if str(device) == "cpu" else gp.float16
        assert gp.matmul(x, gp.matrix_transpose(x)).dtype == want

    @amp.autocast()
    def f(a):
        return gp.matmul(a, gp.matrix_transpose(a))
    assert f(x).dtype == gp.float16 and not amp.is_autocast_enabled()
    with pytest.raises(ValueError, match="autocast: dtype"):
        amp.autocast(dtype=gp.float32)


def test_regions_are_per_thread(device):
    x = _x(device)
    seen = {}
    inside, done = threading.Event(), threading.Event()

    def other():
        inside.wait()
        seen["dtype"] = gp.matmul(x, gp.matrix_transpose(x)).dtype
        done.set()
    t = threading.Thread(target=other)
    t.start()
    with amp.autocast():
        inside.set()
        done.wait()
    t.join()
    assert seen["dtype"] == gp.float32


def test_gradients_under_autocast(device):
    w0 = R.standard_normal((6, 8)).astype(np.float32) * 0.3
    x = _x(device, (16, 8))
    y = gp.asarray(R.integers(0, 6, 16), device=device)

    def grads(use_amp):
        lin = nn.Linear(8, 6).to(device)
        lin.requires_grad_(False)
        lin.weight[...] = gp.asarray(w0, device=device)
        lin.bias[...] = 0.0
        lin.requires_grad_(True)
        with amp.autocast(enabled=use_amp):
            loss = F.cross_entropy(lin(x), y)
        loss.backward()
        return loss, lin.weight.grad, lin.bias.grad
    l16, gw16, gb16 = grads(True)
    l32, gw32, gb32 = grads(False)
    assert gw16.dtype == gp.float32 and gb16.dtype == gp.float32   # master weights' dtype
    np.testing.assert_allclose(float(l16), float(l32), rtol=2e-3)
    np.testing.assert_allclose(np.asarray(gw16), np.asarray(gw32), rtol=2e-2, atol=2e-3)
    np.testing.assert_allclose(np.asarray(gb16), np.asarray(gb32), rtol=2e-2, atol=2e-3)


def _setup(device):
    lin = nn.Linear(3, 2).to(device)
    return lin, optim.SGD(lin.parameters(), lr=0.1)


def _backward(lin, scaler, device, bad=False):
    x = gp.asarray(np.ones((1, 3), np.float32), device=device)
    loss = gp.sum(lin(x))
    scaler.scale(loss).backward()
    if bad:   # a synthetic overflow in one gradient
        lin.weight.grad[0, 0] = float("inf")


def test_grad_scaler_matches_torch(device):
    pattern = [False, False, True, False, False, False, True, True, False, False, False]
    lin, opt = _setup(device)
    s = amp.GradScaler(init_scale=1024.0, growth_interval=3)
    tlin = torch.nn.Linear(3, 2)
    topt = torch.optim.SGD(tlin.parameters(), lr=0.1)
    ts = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=3)
    for bad in pattern:
        w_before = np.asarray(lin.weight).copy()
        _backward(lin, s, device, bad)
        s.step(opt)
        s.update()
        opt.zero_grad()
        tl = tlin(torch.ones(1, 3)).sum()
        ts.scale(tl).backward()
        if bad:
            tlin.weight.grad[0, 0] = float("inf")
        ts.step(topt)
        ts.update()
        topt.zero_grad()
        assert s.get_scale() == ts.get_scale()
        if bad:   # skipped: parameters untouched
            np.testing.assert_array_equal(np.asarray(lin.weight), w_before)
        else:
            assert not np.array_equal(np.asarray(lin.weight), w_before)


def test_unscale_then_clip_and_state_dict(device):
    lin, opt = _setup(device)
    s = amp.GradScaler(init_scale=256.0, growth_interval=2)
    _backward(lin, s, device)
    assert float(gp.max(gp.abs(lin.weight.grad))) == 256.0
    s.unscale_(opt)
    np.testing.assert_allclose(np.asarray(lin.weight.grad), np.ones((2, 3)))   # true grads
    nn.utils.clip_grad_norm_(lin.parameters(), 0.5)
    with pytest.raises(RuntimeError, match="already"):
        s.unscale_(opt)
    s.step(opt)
    s.update()
    st = s.state_dict()
    s2 = amp.GradScaler()
    s2.load_state_dict(st)
    assert s2.state_dict() == st and st["_growth_tracker"] == 1 and st["scale"] == 256.0
    off = amp.GradScaler(enabled=False)
    loss = gp.sum(lin.weight)
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}


def test_unscale_bfloat16_gradients(device):
    """GradScaler.unscale_ on a bfloat16 model's gradients divides them in place (exactly, for
    powers of two) and notes an inf anywhere: step is skipped and the scale halves (torch)."""
    lin = nn.Linear(4, 2, bias=False).to(device).to(gp.bfloat16)
    opt = optim.SGD(lin.parameters(), lr=0.5)
    g = np.array([[8.0, -4.0, 2.0, 1.0], [0.5, 96.0, -3.0, 0.0]], np.float32)
    for bad in (False, True):
        s = amp.GradScaler(init_scale=4.0)
        h = g.copy()
        h[1, 2] = np.inf if bad else h[1, 2]
        lin.weight.grad = gp.astype(gp.asarray(h, device=device), gp.bfloat16)
        before = np.asarray(gp.astype(lin.weight, gp.float32))
        s.unscale_(opt)
        assert lin.weight.grad.dtype == gp.bfloat16
        np.testing.assert_array_equal(np.asarray(gp.astype(lin.weight.grad, gp.float32)), h / 4)
        if bad:
            assert s.step(opt) is None   # skipped: the parameters untouched
            np.testing.assert_array_equal(np.asarray(gp.astype(lin.weight, gp.float32)), before)
        s.update()
        assert s.get_scale() == (2.0 if bad else 4.0)


def test_grad_scaler_reads_the_host_once_per_step(device, monkeypatch):
    lin = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
    opt = optim.Adam(lin.parameters(), lr=1e-3)
    s = amp.GradScaler()
    x = gp.asarray(np.ones((2, 3), np.float32), device=device)
    s.scale(gp.sum(lin(x))).backward()
    reads = []
    for name in ("__bool__", "__float__", "__int__", "__array__", "tolist", "item"):
        real = getattr(gp.Array, name, None)
        if real is None:
            continue

        def spy(self, *a, _real=real, _n=name, **k):
            reads.append(_n)
            return _real(self, *a, **k)
        monkeypatch.setattr(gp.Array, name, spy)
    s.step(opt)
    s.update()
    assert len(reads) == 1, reads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [7, 300_001])
def test_amp_unscale_kernel(device, dtype, n, monkeypatch):
    """The one-pass unscale on each device (the kernel where the device has it; on the CPU its
    serial and threaded loops): the gradient scaled in place, contiguous or a strided view, the
    flag set by an inf or NaN anywhere and never cleared, one dispatch on Vulkan."""
    from grilly.array import optim_steps
    from grilly.backends.cpu_numba import jit

    monkeypatch.setattr(jit, "PARALLEL_MIN", 1000)
    rng = np.random.default_rng(n)
    h = rng.standard_normal(2 * n).astype(dtype)
    flag = gp.zeros((), dtype=gp.uint32, device=device)
    whole = gp.asarray(h, device=device)
    g = whole[::2]                           # a strided view: written through to ``whole``
    before = gp.device_stats(device).get("dispatches", 0)
    optim_steps.amp_unscale(g, flag, 0.125)
    if str(device).startswith("vulkan"):
        assert gp.device_stats(device)["dispatches"] - before <= 3   # copy in, kernel, back
    want = h.copy()
    want[::2] *= dtype(0.125)
    np.testing.assert_array_equal(np.asarray(whole), want)
    assert int(flag) == 0
    for bad in (np.inf, -np.inf, np.nan):
        hb = h.copy()
        hb[n - 1] = bad
        gb = gp.asarray(hb, device=device)
        optim_steps.amp_unscale(gb, flag, 2.0)
        assert int(flag) == 1
        got = np.asarray(gb)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(hb * dtype(2.0)))
        ok = ~np.isnan(got)
        np.testing.assert_array_equal(got[ok], (hb * dtype(2.0))[ok])
    optim_steps.amp_unscale(gp.asarray(h[:n], device=device), flag, 1.0)
    assert int(flag) == 1                     # a clean gradient never clears it
    with pytest.raises(TypeError, match="amp_unscale: found"):
        optim_steps.amp_unscale(g, gp.zeros((), dtype=gp.int32, device=device), 1.0)


def test_every_optimizer_steps_under_the_scaler(device):
    for make in (lambda p: optim.SGD(p, lr=0.1, momentum=0.9), lambda p: optim.Adam(p),
                 lambda p: optim.AdamW(p), lambda p: optim.RMSprop(p), lambda p: optim.Adagrad(p)):
        lin = nn.Linear(3, 2).to(device)
        opt = make(lin.parameters())
        s = amp.GradScaler()
        before = np.asarray(lin.weight).copy()
        _backward(lin, s, device)
        s.step(opt)
        s.update()
        assert not np.array_equal(np.asarray(lin.weight), before)
        assert np.all(np.isfinite(np.asarray(lin.weight)))


def test_train_digits_amp_example(device, capsys):
    # the digits MLP under autocast (bfloat16 on cpu, float16 + GradScaler on Vulkan) trains as
    # well as float32
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "train_digits_amp.py"
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location("train_digits_amp", path)
        ex = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ex)
        res = ex.main(["--device", str(device), "--epochs", "8"])
    finally:
        sys.path.remove(str(path.parent))
    assert res["amp"] >= 0.93 and res["float32"] >= 0.93, res
    assert abs(res["amp"] - res["float32"]) < 0.03, res


@pytest.mark.parametrize("lead, bias", [((12,), True), ((3, 5), True), ((7,), False)])
def test_linear_master_gradients(device, lead, bias):
    # under autocast a float32 Linear's gradients are made in float32 by its backward (no
    # float16 gradient cast up afterwards): against float64 from the float16-rounded operands
    # autocast uses, for 2-D and 3-D inputs, with and without a bias; then a gradient penalty
    # (create_graph) through the same layer
    lin = nn.Linear(8, 6, bias=bias).to(device)
    x = _x(device, lead + (8,))
    with amp.autocast(dtype=gp.float16):
        y = lin(x)
    assert y.dtype == gp.float16
    gp.sum(y * y).backward()
    x16, w16 = (np.asarray(a).astype(np.float16).astype(np.float64) for a in (x, lin.weight))
    y64 = x16 @ w16.T
    if bias:
        y64 = y64 + np.asarray(lin.bias).astype(np.float16).astype(np.float64)
    g64 = 2 * np.asarray(y).astype(np.float64)   # d sum(y^2) / dy, from the float16 output
    g2 = g64.reshape(-1, 6)
    assert lin.weight.grad.dtype == gp.float32
    np.testing.assert_allclose(np.asarray(y).astype(np.float64), y64, rtol=2e-3, atol=2e-3)
    want = g2.T @ x16.reshape(-1, 8)
    np.testing.assert_allclose(np.asarray(lin.weight.grad), want, rtol=3e-3,
                               atol=3e-3 * np.abs(want).max())
    if bias:
        assert lin.bias.grad.dtype == gp.float32
        np.testing.assert_allclose(np.asarray(lin.bias.grad), g2.sum(axis=0), rtol=1e-3,
                                   atol=1e-3 * np.abs(g2.sum(axis=0)).max())
    xr = _x(device, lead + (8,))
    xr.requires_grad_(True)

    def penalty(use_amp):
        lin.zero_grad()
        with amp.autocast(dtype=gp.float16, enabled=use_amp):
            out = lin(xr)
        (gx,) = autograd.grad(gp.sum(out * out), [xr], create_graph=True)
        gp.sum(gx * gx).backward()
        return np.asarray(lin.weight.grad)
    p32 = penalty(False)
    p16 = penalty(True)
    assert lin.weight.grad.dtype == gp.float32
    np.testing.assert_allclose(p16, p32, rtol=2e-2, atol=2e-2 * np.abs(p32).max())


@pytest.mark.parametrize("bias, groups", [(True, 1), (False, 2)])
def test_conv2d_master_gradients(device, bias, groups):
    # as test_linear_master_gradients for Conv2d: float32 gradients of the float32 weight and
    # bias, against torch's float64 weight gradient from the float16-rounded operands
    conv = nn.Conv2d(4, 6, 3, padding=1, bias=bias, groups=groups).to(device)
    x = _x(device, (2, 4, 5, 6))
    with amp.autocast(dtype=gp.float16):
        y = conv(x)
    assert y.dtype == gp.float16
    gp.sum(y * y).backward()
    x16, w16 = (torch.from_numpy(np.asarray(a).astype(np.float16).astype(np.float64))
                for a in (x, conv.weight))
    g = torch.from_numpy(2 * np.asarray(y).astype(np.float64))
    want = torch.nn.grad.conv2d_weight(x16, w16.shape, g, padding=1, groups=groups).numpy()
    assert conv.weight.grad.dtype == gp.float32
    np.testing.assert_allclose(np.asarray(conv.weight.grad), want, rtol=3e-3,
                               atol=3e-3 * np.abs(want).max())
    if bias:
        assert conv.bias.grad.dtype == gp.float32
        gb = g.sum(dim=(0, 2, 3)).numpy()
        np.testing.assert_allclose(np.asarray(conv.bias.grad), gb, rtol=1e-3,
                                   atol=1e-3 * np.abs(gb).max())
    xr = _x(device, (2, 4, 5, 6))
    xr.requires_grad_(True)

    def penalty(use_amp):
        conv.zero_grad()
        with amp.autocast(dtype=gp.float16, enabled=use_amp):
            out = conv(xr)
        (gx,) = autograd.grad(gp.sum(out * out), [xr], create_graph=True)
        gp.sum(gx * gx).backward()
        return np.asarray(conv.weight.grad)
    p32 = penalty(False)
    p16 = penalty(True)
    assert conv.weight.grad.dtype == gp.float32
    np.testing.assert_allclose(p16, p32, rtol=2e-2, atol=2e-2 * np.abs(p32).max())
