"""A data-science user's statistics, against torch and NumPy on every device: torch's cov and
corrcoef (the method, and gp.cov's correction=) in the input's dtype with gradients, NumPy's
cov dtype=np.float32, torch.histogram (the method and weight=), histc of NaN/inf (no cast
warning), torch.mode with NaNs, NumPy's weighted quantiles (weights=, method='inverted_cdf'),
repeated axes, torch's interpolation names, torch.searchsorted with an N-D sorter, and
logcumsumexp's dtype check."""
import warnings

import numpy as np
import pytest

import grilly as gp

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)
X = RNG.standard_normal((3, 6)).astype(np.float32)
AW = RNG.random(6).astype(np.float32)
FW = np.array([1, 2, 0, 3, 1, 2])


def _g(h, device):
    return gp.asarray(h, device=device)


def _close(got, want, rtol=1e-5, atol=1e-6):
    want = want.detach().numpy() if torch.is_tensor(want) else np.asarray(want)
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert str(got.dtype) == str(want.dtype), (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def _t(h):
    return torch.tensor(h)


# ---- torch's cov / corrcoef ------------------------------------------------------------------
def test_torch_cov_corrcoef_keep_dtype(device):
    x = _g(X, device)
    _close(x.cov(), torch.cov(_t(X)))
    _close(x.cov(correction=0, fweights=_g(FW, device), aweights=_g(AW, device)),
           torch.cov(_t(X), correction=0, fweights=_t(FW), aweights=_t(AW)))
    _close(gp.cov(x, correction=2, aweights=_g(AW, device)),
           torch.cov(_t(X), correction=2, aweights=_t(AW)))
    _close(_g(X[0], device).cov(), torch.cov(_t(X[0])))   # one variable: 0-d
    ints = FW.reshape(2, 3)
    _close(_g(ints, device).cov(), torch.cov(_t(ints)))   # integers: the default float
    _close(x.corrcoef(), torch.corrcoef(_t(X)))
    const = np.array([[1.0, 1, 1], [1, 2, 4]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _close(_g(const, device).corrcoef(), torch.corrcoef(_t(const)))   # NaN row
    # NumPy's calls keep NumPy's meaning (float64)
    _close(gp.cov(x), np.cov(X))
    _close(x.cov(rowvar=False), np.cov(X, rowvar=False))
    _close(gp.corrcoef(x), np.corrcoef(X))
    with pytest.raises(TypeError, match="cov: torch's correction="):
        gp.cov(x, ddof=1, correction=1)
    with pytest.raises(TypeError, match="correction"):
        x.cov(correction=True)
    with pytest.raises(ValueError, match="fweights cannot be negative"):
        x.cov(fweights=_g(-FW, device))
    with pytest.raises(ValueError, match="aweights cannot be negative"):
        gp.cov(x, aweights=_g(-AW, device))


def test_torch_cov_corrcoef_grad(device):
    tx, ta = _t(X).requires_grad_(), _t(AW)
    gx = _g(X, device).requires_grad_()
    seed = RNG.standard_normal((3, 3)).astype(np.float32)
    (torch.cov(tx, aweights=ta) * _t(seed)).sum().backward()
    gp.sum(gx.cov(aweights=_g(AW, device)) * _g(seed, device)).backward()
    _close(gx.grad, tx.grad, rtol=1e-4, atol=1e-5)
    tx.grad, gx.grad = None, None
    (torch.corrcoef(tx) * _t(seed)).sum().backward()
    gp.sum(gx.corrcoef() * _g(seed, device)).backward()
    _close(gx.grad, tx.grad, rtol=1e-4, atol=1e-5)


def test_numpy_cov_dtype_types(device):
    a = X.astype(np.float64)
    for d in (np.float32, "float32", np.complex64):
        _close(gp.cov(_g(a, device), dtype=d), np.cov(a, dtype=d))
        _close(gp.corrcoef(_g(a, device), dtype=d), np.corrcoef(a, dtype=d))
    with pytest.raises(TypeError, match="cov: dtype"):
        gp.cov(_g(a, device), dtype=np.int32)


# ---- torch.histogram ---------------------------------------------------------------------------
def test_torch_histogram(device):
    x, w = X.ravel(), RNG.random(X.size).astype(np.float32)
    got = _g(x, device).histogram(5)
    want = torch.histogram(_t(x), 5)
    _close(got.hist, want.hist)
    _close(got.bin_edges, want.bin_edges)
    got = gp.histogram(_g(x, device), 4, range=(-1.0, 1.0), weight=_g(w, device), density=True)
    want = torch.histogram(_t(x), 4, range=(-1.0, 1.0), weight=_t(w), density=True)
    _close(got[0], want[0])
    _close(got[1], want[1])
    edges = np.array([-2.0, 0.0, 0.5, 3.0], np.float32)
    _close(_g(x, device).histogram(_g(edges, device)).hist, torch.histogram(_t(x), _t(edges)).hist)
    _close(gp.histogram(_g(x, device), 4)[0], np.histogram(x, 4)[0])   # NumPy's: int64
    h = np.array([1.0, np.nan, 2, 3, np.inf, -np.inf, 4, 0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)   # NaN/inf were cast to int (a warning)
        _close(gp.histc(_g(h, device), 4, 0, 4), torch.histc(_t(h), 4, 0, 4))
    with pytest.raises(TypeError, match="histogram"):
        _g(FW, device).histogram(3)
    with pytest.raises(TypeError, match="histogram"):
        gp.histogram(_g(x, device), 3, weight=_g(w, device), weights=_g(w, device))


# ---- torch.mode with NaNs ----------------------------------------------------------------------
def test_mode_nan(device):
    n = np.nan
    for v in ([1, n, n, 2], [n, 1, 1], [n, n, 1, 1], [3, 1, 3, 1, 2]):
        h = np.array(v, np.float32)
        got, want = gp.mode(_g(h, device)), torch.mode(_t(h))
        _close(got.values, want.values)
        _close(got.indices, want.indices)
    got = _g(np.array([[n, n], [2, 2]], np.float32), device).mode(1)
    assert np.isnan(got.values.numpy()[0]) and got.values.numpy()[1] == 2
    assert got.indices.numpy()[0] in (0, 1)
    with pytest.raises(IndexError, match="mode"):
        gp.mode(_g(np.zeros((2, 0), np.float32), device))
    with pytest.raises(NotImplementedError, match="mode"):
        gp.mode(_g(np.array([1 + 1j, 2]), device))


# ---- NumPy's weighted quantiles ----------------------------------------------------------------
def test_quantile_weights(device):
    a = RNG.standard_normal((3, 4, 5))
    a[0, 1, 2] = np.nan
    w = RNG.random((3, 4, 5))
    w[0, 0, :2] = 0
    q = np.array([0.0, 0.3, 0.5, 1.0])
    m = "inverted_cdf"
    b = np.nan_to_num(a)
    _close(gp.quantile(_g(b, device), _g(q, device), axis=2, weights=_g(w[0, 0], device),
                       method=m), np.quantile(b, q, axis=2, weights=w[0, 0], method=m))
    _close(gp.quantile(_g(a, device), 0.4, axis=(0, 2), weights=_g(w, device), method=m,
                       keepdims=True),
           np.quantile(a, 0.4, axis=(0, 2), weights=w, method=m, keepdims=True))
    _close(gp.nanpercentile(_g(a, device), [25, 90], axis=1, weights=_g(w, device), method=m),
           np.nanpercentile(a, [25, 90], axis=1, weights=w, method=m))
    ai = RNG.integers(0, 9, (4, 5))
    _close(gp.quantile(_g(ai, device), 1.0, axis=1, weights=_g(w[0], device), method=m),
           np.quantile(ai, 1.0, axis=1, weights=w[0], method=m))
    with pytest.raises(ValueError, match="inverted_cdf"):
        gp.quantile(_g(b, device), 0.5, weights=_g(w, device))
    with pytest.raises(ValueError, match="non-negative"):
        gp.quantile(_g(b, device), 0.5, axis=2, weights=_g(-w[0, 0], device), method=m)
    with pytest.raises(TypeError, match="axis"):
        gp.quantile(_g(b, device), 0.5, weights=_g(w[0, 0], device), method=m)


def test_quantile_axis_and_interpolation_checks(device):
    x = _g(X, device)
    with pytest.raises(ValueError, match="repeated axis"):
        gp.quantile(x, 0.5, axis=(0, 0))
    with pytest.raises(ValueError, match="interpolation"):
        gp.quantile(x, 0.5, dim=0, interpolation="hazen")   # NumPy's method, not torch's
    _close(x.quantile(0.3, dim=1, interpolation="midpoint"),
           _t(X).quantile(0.3, dim=1, interpolation="midpoint"))


# ---- searchsorted / logcumsumexp ---------------------------------------------------------------
def test_searchsorted_nd_sorter_and_logcumsumexp_dtype(device):
    s = np.array([[3.0, 1, 2], [0, 5, 4]])
    srt = np.argsort(s, axis=1)
    v = np.array([[2.5, 0.5], [4.5, 6.0]])
    for side in ("left", "right"):
        _close(gp.searchsorted(_g(s, device), _g(v, device), side=side, sorter=_g(srt, device)),
               torch.searchsorted(_t(s), _t(v), side=side, sorter=_t(srt)))
    with pytest.raises(ValueError, match="sorter"):
        gp.searchsorted(_g(s, device), _g(v, device), sorter=_g(srt[:, :2], device))
    with pytest.raises(TypeError, match="logcumsumexp"):
        gp.logcumsumexp(_g(FW, device), 0)
