"""NumPy's array methods on grilly's Array (sum, mean, astype, reshape, transpose, ...), against
NumPy's own methods on every device; torch's dim/keepdim where they mean the same, and clear
errors where torch's method means something else."""
import numpy as np
import pytest

import grilly as gp

R = np.random.default_rng(11)
H = R.standard_normal((3, 4, 5)).astype(np.float32)
HI = R.integers(-5, 9, (3, 4)).astype(np.int32)


def _same(got, want, rtol=1e-5):
    assert isinstance(got, gp.Array)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=1e-5)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "max", "min", "any", "all", "argmax",
                                  "argmin", "std", "var"])
@pytest.mark.parametrize("axis", [None, 0, 2, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_as_numpy(device, name, axis, keepdims):
    if name in ("argmax", "argmin") and isinstance(axis, tuple):
        return   # (NumPy's take one axis)
    h = H if name not in ("any", "all") else H > 0.3
    x = gp.asarray(h, device=device)
    _same(getattr(x, name)(axis=axis, keepdims=keepdims),
          getattr(h, name)(axis=axis, keepdims=keepdims))
    if axis is not None and not keepdims:   # positional axis, as NumPy takes it
        _same(getattr(x, name)(axis), getattr(h, name)(axis))


def test_ddof_dtype_and_integer_arrays(device):
    x, xi = gp.asarray(H, device=device), gp.asarray(HI, device=device)
    _same(x.std(axis=1, ddof=1), H.std(axis=1, ddof=1))
    _same(x.var(ddof=1), H.var(ddof=1))
    _same(xi.sum(axis=0), HI.sum(axis=0))
    assert xi.sum().dtype == gp.int64   # (the Array API's default integer accumulator)
    _same(xi.sum(dtype=gp.float32), HI.sum(dtype=np.float32))
    _same(xi.max(axis=1), HI.max(axis=1))
    _same(xi.cumsum(), HI.cumsum())
    _same(x.cumsum(axis=1), H.cumsum(axis=1))
    _same(xi.astype(gp.float32), HI.astype(np.float32))
    _same(xi.clip(0, 4), HI.clip(0, 4))
    _same(x.clip(min=-0.5), H.clip(min=-0.5))


def test_shape_methods(device):
    x = gp.asarray(H, device=device)
    _same(x.reshape(4, 15), H.reshape(4, 15))
    _same(x.reshape((-1, 5)), H.reshape((-1, 5)))
    _same(x.transpose(), H.transpose())
    _same(x.transpose(1, 0, 2), H.transpose(1, 0, 2))
    _same(x.transpose((2, 0, 1)), H.transpose((2, 0, 1)))
    _same(x.swapaxes(0, 2), H.swapaxes(0, 2))
    _same(x.flatten(), H.flatten())
    _same(x.ravel(), H.ravel())
    y = gp.asarray(H[:, :1, None, :], device=device)
    _same(y.squeeze(), H[:, :1, None, :].squeeze())
    _same(y.squeeze(1), H[:, :1, None, :].squeeze(1))
    c = x.copy()
    c[0, 0, 0] = 100.0
    assert float(x[0, 0, 0]) == H[0, 0, 0]   # a copy, not a view
    f = x.flatten()
    f[0] = 100.0
    assert float(x[0, 0, 0]) == H[0, 0, 0]
    h = x.numpy()
    assert isinstance(h, np.ndarray)
    np.testing.assert_array_equal(h, H)


def test_torch_keywords(device):
    torch = pytest.importorskip("torch")
    x, t = gp.asarray(H, device=device), torch.from_numpy(H)
    for name in ("sum", "mean", "prod", "argmax", "argmin"):
        _same(getattr(x, name)(dim=1, keepdim=True), getattr(t, name)(dim=1, keepdim=True))
    _same(x.sum(dim=(0, 2)), t.sum(dim=(0, 2)))
    _same(x.any(dim=0), t.bool().any(dim=0))
    _same(x.swapaxes(0, 1), t.transpose(0, 1))
    _same(x.cumsum(dim=2), t.cumsum(dim=2))


def test_errors(device):
    x = gp.asarray(H, device=device)
    for name in ("max", "min", "std", "var"):   # torch's meaning differs: no silent mismatch
        with pytest.raises(TypeError, match=f"Array.{name}: dim="):
            getattr(x, name)(dim=1)
    with pytest.raises(TypeError, match="both axis and dim"):
        x.sum(axis=0, dim=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        x.sum(out=None)
    with pytest.raises(ValueError, match="swapaxes"):
        x.transpose(0, 1)   # torch's two-axis swap; NumPy's needs every axis
    with pytest.raises(IndexError, match="swapaxes"):
        x.swapaxes(0, 3)
    with pytest.raises(TypeError, match="order"):
        x.reshape(60, order="F")
    with pytest.raises(TypeError, match="integers"):
        x.reshape(6.0, 10)


def test_methods_differentiate_as_torch(device):
    torch = pytest.importorskip("torch")
    x = gp.asarray(H, device=device)
    x.requires_grad_()
    t = torch.from_numpy(H.copy()).requires_grad_()
    y = (x.copy() * x.reshape(4, 15).transpose().reshape(3, 4, 5)).sum(axis=1).mean() \
        + x.max(axis=2).sum() + x.std(axis=0, ddof=1).sum() + x.swapaxes(0, 2).cumsum(0).sum()
    ty = (t.clone() * t.reshape(4, 15).T.reshape(3, 4, 5)).sum(1).mean() \
        + t.amax(dim=2).sum() + t.std(dim=0).sum() + t.transpose(0, 2).cumsum(0).sum()
    y.backward()
    ty.backward()
    np.testing.assert_allclose(float(y), ty.item(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(x.grad), t.grad.numpy(), rtol=1e-4, atol=1e-5)
