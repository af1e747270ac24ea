"""NumPy's array methods on grilly's Array (sum, mean, astype, reshape, transpose, ...), against
NumPy's own methods on every device; torch's dim/keepdim give torch's meaning (the same where the
two agree; (values, indices) for max/min, unbiased std/var), and clear errors elsewhere."""
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
    for name in ("max", "min"):   # torch's meaning: (values, indices); NumPy's without dim=
        r, tr = getattr(x, name)(dim=1), getattr(t, name)(dim=1)
        _same(r.values, tr.values)
        _same(r.indices, tr.indices)
        _same(getattr(x, name)(1), getattr(t, name)(dim=1).values)
    for name in ("std", "var"):   # torch's meaning: unbiased; NumPy's ddof=0 without dim=
        _same(getattr(x, name)(dim=1), getattr(t, name)(dim=1))
        _same(getattr(x, name)(1), getattr(t, name)(dim=1, unbiased=False))


def test_errors(device):
    x = gp.asarray(H, device=device)
    with pytest.raises(TypeError, match="both axis and dim"):
        x.max(axis=0, dim=1)   # torch's form (values, indices) checks its dim too
    with pytest.raises(TypeError, match="both axis and dim"):
        x.sum(axis=0, dim=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'weights'"):
        x.sum(weights=None)
    with pytest.raises(TypeError, match="out= is not supported"):
        x.sum(out=x)
    with pytest.raises(TypeError, match="swapaxes"):
        x[0].transpose(0, 1)   # 2-D: torch's swap and NumPy's identity permutation differ
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


@pytest.mark.parametrize("call", [
    "np.sum(x)", "np.sum(x, axis=0, keepdims=True)", "np.mean(x, axis=(0, 2))", "np.max(x)",
    "np.min(x, axis=1)", "np.std(x)", "np.var(x, ddof=1)", "np.prod(x, axis=2)",
    "np.argmax(x, axis=1)", "np.argmin(x)", "np.transpose(x)", "np.transpose(x, (1, 2, 0))",
    "np.clip(x, -0.5, 0.5)", "np.cumsum(x, axis=1)", "np.reshape(x, (5, 12))",
    "np.squeeze(x[:1])", "np.swapaxes(x, 0, 1)", "np.mean(x, dtype=np.float64)"])
def test_numpy_functions_call_the_methods(device, call):
    # NumPy's functions call an array-like's method of the same name (with out=None, dtype=None):
    # they computed on the device and returned a grilly Array, not a TypeError (from the methods'
    # keywords) or a silent host round trip
    x = gp.asarray(H, device=device)
    got = eval(call, {"np": np, "x": x})
    want = eval(call, {"np": np, "x": H})
    assert isinstance(got, gp.Array) and got.device == x.device
    _same(got, want)


def test_numpy_scalars_and_arrays_as_operands(device):
    x = gp.asarray(H, device=device)
    # a NumPy scalar combines as the Python scalar it holds (it came back as a numpy.ndarray,
    # computed on the host, or raised)
    for got, want in ((x + np.int64(2), H + 2), (np.int64(2) + x, 2 + H),
                      (x * np.float32(2), H * 2), (x < np.float32(0.1), H < 0.1),
                      (np.float32(0.1) > x, 0.1 > H), (x ** np.int32(2), H ** 2)):
        assert isinstance(got, gp.Array) and got.device == x.device
        assert got.dtype == (gp.bool if want.dtype == bool else gp.float32)
        _same(got, want)
    y = gp.asarray(H, device=device)
    y -= np.float64(1.5)
    _same(y, H - 1.5)
    # a NumPy array is host data: a TypeError naming the op, not a NumPy result
    for f in (lambda: x + H, lambda: H + x, lambda: x @ H[0].T, lambda: x < H):
        with pytest.raises(TypeError, match="cannot combine a grilly Array with a ndarray"):
            f()
