"""The fused softmax / log_softmax kernels (grilly.array.fused, nn.functional) on every device,
against numpy (float64 reference) and torch (a test-only oracle) for values and gradients."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grilly as gp
from grilly.array import fused
from grilly.autograd import gradcheck
from grilly.nn import functional as F
from grilly.testing import assert_close

OPS = {"softmax": fused.softmax, "log_softmax": fused.log_softmax}
TOL = {"float32": (2e-5, 1e-5), "float64": (1e-12, 1e-14), "float16": (3e-3, 1e-3)}


def _ref(h: np.ndarray, axis, log: bool) -> np.ndarray:
    x = h.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = x - x.max(axis=axis, keepdims=True)
        s = np.exp(z).sum(axis=axis, keepdims=True)
        out = z - np.log(s) if log else np.exp(z) / s
    return out.astype(h.dtype)


def _check(h, axis, op, device, dtype=None):
    x = gp.asarray(h, device=device)
    y = OPS[op](x, axis=axis)
    rtol, atol = TOL[str(h.dtype)]
    assert_close(y, _ref(h, axis, op == "log_softmax"), rtol=rtol, atol=atol)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,axis", [
    ((7,), 0), ((3, 5), -1), ((3, 5), 0), ((2, 3, 700), 1), ((4, 1), 1), ((4097,), 0),
    ((3, 4100), 1), ((2, 8192), -1), ((5, 1030), 1), ((300, 600), 1), ((600, 300), 0),
    ((70000, 4), 1), ((2, 3, 4, 5), 2)])
def test_values(op, dtype, shape, axis, device):
    h = (np.random.default_rng(0).standard_normal(shape) * 5).astype(dtype)
    _check(h, axis, op, device)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cpu_parallel_narrow_column_blocks(op, dtype, monkeypatch):
    # a reduced axis that is not last with few outer rows runs narrower column blocks over
    # the threads: force the parallel path on a small array, with NaN and -inf in columns
    from grilly.backends.cpu_numba import jit, reductions

    monkeypatch.setattr(jit, "PARALLEL_MIN", 1)
    monkeypatch.setattr(reductions, "_serial_until", [0.0])
    h = (np.random.default_rng(1).standard_normal((2, 300, 70)) * 5).astype(dtype)
    h[0, 5, 3] = np.nan
    h[1, :, 17] = -np.inf
    h[1, 7, 40] = -np.inf
    _check(h, 1, op, "cpu")


@pytest.mark.parametrize("op", OPS)
def test_float16(op, device):
    h = (np.random.default_rng(1).standard_normal((6, 515)) * 3).astype(np.float16)
    _check(h, -1, op, device)
    _check(h, 0, op, device)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("view", ["transpose", "step", "flip", "offset"])
def test_non_contiguous(op, view, device):
    h = np.random.default_rng(2).standard_normal((9, 264)).astype(np.float32)
    x = gp.asarray(h, device=device)
    xv, hv = {
        "transpose": (gp.permute_dims(x, (1, 0)), h.T),
        "step": (x[:, ::2], h[:, ::2]),
        "flip": (gp.flip(x, axis=1), h[:, ::-1]),
        "offset": (x[1:, 3:263], h[1:, 3:263]),
    }[view]
    for axis in (0, 1):
        assert_close(OPS[op](xv, axis=axis), _ref(np.ascontiguousarray(hv), axis, op != "softmax"),
                     rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape,axis", [((0, 5), 1), ((3, 0), 1), ((3, 0), 0), ((2, 0, 4), 2)])
def test_empty(op, shape, axis, device):
    y = OPS[op](gp.zeros(shape, dtype=gp.float32, device=device), axis=axis)
    assert y.shape == shape and y.dtype == gp.float32


@pytest.mark.parametrize("op", OPS)
def test_zero_dim(op, device):
    y = OPS[op](gp.asarray(3.0, dtype=gp.float32, device=device), axis=-1)
    assert y.shape == ()
    assert float(y) == (0.0 if op == "log_softmax" else 1.0)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("n", [8, 9, 4096, 4099])
def test_special_values(op, n, device):
    inf, nan = np.inf, np.nan
    h = np.full((5, n), -inf, np.float32)
    h[1, : n // 2] = np.arange(n // 2) % 7       # -inf tail: exactly 0 / -inf there
    h[2, 0], h[2, 1:] = nan, 0.0                 # NaN poisons its row
    h[3] = np.linspace(-3e4, 3e4, n)             # large magnitudes: exp would overflow unshifted
    h[4, -1] = 88.0                              # one finite element among -inf
    # row 0 is all -inf: NaN, as in torch
    _check(h, 1, op, device)
    y = np.asarray(OPS[op](gp.asarray(h, device=device), axis=1))
    assert np.isnan(y[0]).all() and np.isnan(y[2]).all() and not np.isnan(y[[1, 3, 4]]).any()


@given(st.integers(1, 40), st.integers(1, 600), st.floats(-50, 50))
def test_properties(rows, n, shift):
    """Rows of softmax sum to 1; log_softmax is log of softmax; both are shift-invariant."""
    for dev in gp.devices():
        h = np.random.default_rng(rows * 1000 + n).standard_normal((rows, n)).astype(np.float32)
        x = gp.asarray(h, device=dev)
        s = fused.softmax(x, axis=1)
        assert_close(gp.sum(s, axis=1), np.ones(rows, np.float32), rtol=1e-5, atol=1e-6)
        assert_close(fused.log_softmax(x, axis=1), np.log(np.asarray(s)), rtol=1e-4, atol=1e-5)
        assert_close(fused.softmax(x + shift, axis=1), np.asarray(s), rtol=1e-4, atol=1e-6)


def test_errors(device):
    x = gp.ones((2, 3), dtype=gp.float32, device=device)
    with pytest.raises(TypeError, match="softmax: x must have a real floating dtype"):
        fused.softmax(gp.ones((2, 3), dtype=gp.int32, device=device))
    with pytest.raises(TypeError, match="log_softmax: expected a grilly Array"):
        fused.log_softmax(np.ones(3))
    with pytest.raises(gp.AxisError, match="softmax: axis=2 is out of range"):
        fused.softmax(x, axis=2)
    with pytest.raises(TypeError, match="axis must be an int"):
        F.log_softmax(x, dim=1.5)


@pytest.mark.parametrize("op", OPS)
def test_composed_without_kernel(op, device, monkeypatch):
    """A backend without the "softmax" family gets the same values composed from namespace ops."""
    h = np.random.default_rng(3).standard_normal((4, 33)).astype(np.float32)
    monkeypatch.delitem(device.kernels, op)
    x = gp.asarray(h, device=device, dtype=gp.float32)
    assert_close(OPS[op](x, axis=0), _ref(h, 0, op == "log_softmax"), rtol=2e-5, atol=1e-6)


def test_gradcheck_cpu():
    h = np.random.default_rng(4).standard_normal((3, 5))
    for op in OPS.values():
        for axis in (0, 1):
            assert gradcheck(lambda x, f=op, a=axis: f(x, axis=a), [gp.asarray(h, device="cpu")])


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
def test_grad_matches_cpu(fn, device):
    h = np.random.default_rng(5).standard_normal((6, 300)).astype(np.float32)
    gv = np.random.default_rng(6).standard_normal((6, 300)).astype(np.float32)

    def grad(dev, dim):
        x = gp.asarray(h, device=dev).requires_grad_()
        gp.sum(fn(x, dim=dim) * gp.asarray(gv, device=dev)).backward()
        return np.asarray(x.grad)
    for dim in (0, 1):
        assert_close(gp.asarray(grad(device, dim)), grad("cpu", dim), rtol=1e-4, atol=1e-6)


torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((4, 7), None), ((2, 3, 5), None), ((3, 5), 0),
                                       ((2, 3, 260), -1), ((6,), None)])
def test_torch(name, shape, dim, device):
    h = np.random.default_rng(7).standard_normal(shape).astype(np.float32) * 3
    gv = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    t = torch.from_numpy(h).requires_grad_()
    kw = {} if dim is None else {"dim": dim}
    tdim = dim if dim is not None else (0 if len(shape) in (0, 1, 3) else 1)
    ty = getattr(torch.nn.functional, name)(t, dim=tdim)
    (ty * torch.from_numpy(gv)).sum().backward()
    x = gp.asarray(h, device=device).requires_grad_()
    y = getattr(F, name)(x, **kw)
    gp.sum(y * gp.asarray(gv, device=device)).backward()
    assert_close(y, ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert_close(x.grad, t.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_torch_special(name, device):
    h = np.array([[-np.inf] * 5, [0.0, -np.inf, 1.0, 1e4, -1e4], [1.0] * 5], np.float32)
    ty = getattr(torch, name)(torch.from_numpy(h), dim=1).numpy()
    assert_close(getattr(F, name)(gp.asarray(h, device=device), dim=1), ty, rtol=1e-6, atol=0)


# ---- cross entropy against class indices (the fused kernel pair and its composition) ----------
def np_cross_entropy(x, t, mean):
    """float64 reference: (loss, gradient for an output gradient of 1) with out-of-range rows
    dropped."""
    x = x.astype(np.float64)
    n, c = x.shape
    ok = (t >= 0) & (t < c)
    m = x.max(axis=1, keepdims=True)
    logp = (x - m) - np.log(np.exp(x - m).sum(axis=1, keepdims=True))
    rows = np.where(ok, -logp[np.arange(n), np.clip(t, 0, c - 1)], 0.0)
    count = ok.sum()
    loss = rows.sum() / count if mean else rows.sum()
    g = np.exp(logp) * ok[:, None]
    g[np.arange(n)[ok], t[ok]] -= 1
    return loss, g / count if mean else g


def _ce_paths(device):
    from grilly.array import composites
    out = [("composed", lambda *a, **k: composites.COMPOSITES["cross_entropy"](device, *a, k["mean"]),
            lambda *a, **k: composites.COMPOSITES["cross_entropy_backward"](device, *a, k["mean"]))]
    if "cross_entropy" in device.kernels:
        out.append(("kernel", fused.cross_entropy, fused.cross_entropy_backward))
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mean", [True, False])
def test_cross_entropy_kernels(device, dtype, mean):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((37, 11)) * 8).astype(dtype)
    x[3, 2] = -np.inf                       # a -inf logit away from the target
    t = rng.integers(0, 11, 37)
    t[[5, 9]] = -100                         # ignore_index rows drop out
    t[3] = 4
    want, wg = np_cross_entropy(x, t, mean)
    xd, td = gp.asarray(x, device=device), gp.asarray(t, device=device)
    g = gp.asarray(np.array(0.5, dtype), device=device)
    tol = 4 * np.finfo(dtype).eps * 40
    for how, fwd, bwd in _ce_paths(device):
        loss = fwd(xd, td, mean=mean)
        assert loss.shape == () and loss.dtype == xd.dtype, how
        np.testing.assert_allclose(float(loss), want, rtol=tol, err_msg=how)
        gx = bwd(xd, td, g, mean=mean)
        np.testing.assert_allclose(np.asarray(gx), 0.5 * wg, rtol=tol, atol=tol * 0.5 / 37,
                                   err_msg=how)


def test_cross_entropy_all_ignored_is_nan(device):
    x = gp.asarray(np.ones((3, 4), np.float32), device=device)
    t = gp.asarray(np.full(3, -100), device=device)
    assert np.isnan(float(fused.cross_entropy(x, t, mean=True)))
    assert float(fused.cross_entropy(x, t, mean=False)) == 0.0


def test_cross_entropy_bad_arguments(device):
    x = gp.asarray(np.ones((3, 4), np.float32), device=device)
    with pytest.raises(TypeError, match="cross_entropy: target must hold integer"):
        fused.cross_entropy(x, gp.asarray(np.ones(3, np.float32), device=device))
    with pytest.raises(ValueError, match=r"cross_entropy: target shape \(4,\)"):
        fused.cross_entropy(x, gp.asarray(np.zeros(4, np.int64), device=device))
    with pytest.raises(TypeError, match="cross_entropy: x must be real floating"):
        fused.cross_entropy(gp.asarray(np.ones(3, np.float32), device=device),
                            gp.asarray(np.zeros(3, np.int64), device=device))


def test_cross_entropy_loss_matches_torch(device):
    """nn.functional.cross_entropy (the fused node) and its gradient against torch."""
    torch = pytest.importorskip("torch")
    from grilly.nn import functional as F
    rng = np.random.default_rng(6)
    x, t = rng.standard_normal((16, 7)).astype(np.float32), rng.integers(0, 7, 16)
    t[2] = -100
    for reduction in ("mean", "sum"):
        tx = torch.tensor(x, requires_grad=True)
        tl = torch.nn.functional.cross_entropy(tx, torch.tensor(t), reduction=reduction)
        tl.backward()
        gx = gp.asarray(x, device=device)
        gx.requires_grad = True
        loss = F.cross_entropy(gx, gp.asarray(t, device=device), reduction=reduction)
        loss.backward()
        np.testing.assert_allclose(float(loss), tl.item(), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(gx.grad), tx.grad.numpy(), rtol=1e-5, atol=1e-7)
