"""What a PyTorch user types, against torch on every device: torch's top-level names
(grilly/torch_functions.py), torch's dim=/keepdim=/unbiased= forms of the namespace functions and
methods NumPy also has (grilly/array/torch_dims.py: (values, indices) results, unbiased std/var),
and the torch.Tensor methods added in grilly/array/torch_methods.py (in-place twins, index_add,
median, mode, kthvalue, bincount, type, is_cuda); values, dtypes, shapes, gradients, errors."""
import numpy as np
import pytest

import grilly as gp

torch = pytest.importorskip("torch")

R = np.random.default_rng(11)
A = R.standard_normal((3, 5)).astype(np.float32)
T3 = R.standard_normal((2, 3, 4)).astype(np.float32)
TIES = np.array([[3, 1, 3, 1, 2], [2, 2, 5, 5, 0], [4, 4, 4, 1, 1]], np.float32)   # ties
NANS = np.array([[1, np.nan, 3, np.nan], [2, 5, 5, 1]], np.float32)


def _same(got, want, rtol=2e-5):
    """got (a grilly Array) equals the torch tensor ``want``: values, shape and dtype."""
    assert isinstance(got, gp.Array), type(got)
    w = want.detach().numpy()
    assert got.shape == w.shape, (got.shape, w.shape)
    assert np.dtype(got.dtype.name) == w.dtype, (got.dtype, w.dtype)
    np.testing.assert_allclose(np.asarray(got), w, rtol=rtol, atol=1e-5)


def _pair(got, want, name):
    """A (values, indices) result: torch's field names, a tuple, equal values and indices."""
    assert type(got).__name__ == name and isinstance(got, tuple) and got._fields == (
        "values", "indices")
    v, i = got
    assert v is got.values and i is got.indices
    _same(got.values, want.values)
    _same(got.indices, want.indices)


def _grads(device, fn, h, rtol=1e-4):
    """fn's output and input gradient (through a weighted sum) against torch's."""
    x = gp.asarray(h, device=device).requires_grad_()
    t = torch.tensor(h, requires_grad=True)
    g, tt = fn(x), fn(t)
    _same(g, tt, rtol)
    w = R.standard_normal(tuple(tt.shape)).astype(h.dtype)
    (g * gp.asarray(w, device=device)).sum().backward()
    (tt * torch.tensor(w)).sum().backward()
    _same(x.grad, t.grad, rtol)


# ---- torch's dim= forms of the namespace functions and methods ---------------------------------
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "argmax", "argmin", "all", "any"])
def test_dim_keywords_reduce(device, name):
    x, t = gp.asarray(TIES, device=device), torch.tensor(TIES)
    for kw in ({"dim": 1}, {"dim": 0, "keepdim": True}, {"dim": -1, "keepdim": False}):
        _same(getattr(gp, name)(x, **kw), getattr(torch, name)(t, **kw))
        _same(getattr(x, name)(**kw), getattr(t, name)(**kw))
    if name in ("sum", "prod"):   # torch's integer promotion: int32 -> int64
        i = TIES.astype(np.int32)
        _same(getattr(gp, name)(gp.asarray(i, device=device), dim=1),
              getattr(torch, name)(torch.tensor(i), dim=1))


def test_dim_keywords_scan_and_argsort(device):
    x, t = gp.asarray(TIES, device=device), torch.tensor(TIES)
    _same(gp.cumsum(x, dim=1), torch.cumsum(t, dim=1))
    _same(gp.cumulative_sum(x, dim=0), torch.cumsum(t, dim=0))
    i = TIES.astype(np.int32)
    _same(gp.cumsum(gp.asarray(i, device=device), dim=0), torch.cumsum(torch.tensor(i), dim=0))
    _same(gp.argsort(x, dim=1, descending=True, stable=True),
          torch.argsort(t, dim=1, descending=True, stable=True))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_dim(device, name):
    for h in (TIES, NANS, T3):   # first index among ties; a NaN wins (torch's rule)
        x, t = gp.asarray(h, device=device), torch.tensor(h)
        _pair(getattr(gp, name)(x, dim=1), getattr(torch, name)(t, dim=1), name)
        _pair(getattr(gp, name)(x, 1, keepdim=True), getattr(torch, name)(t, 1, keepdim=True),
              name)
        _pair(getattr(x, name)(dim=-1), getattr(t, name)(dim=-1), name)
        # without torch's keywords: NumPy's (the values only)
        np.testing.assert_array_equal(np.asarray(getattr(gp, name)(x, 1)),
                                      getattr(np, name)(h, 1))
        np.testing.assert_array_equal(np.asarray(getattr(x, name)(1)), getattr(np, name)(h, 1))
    _grads(device, lambda a: getattr(a, name)(dim=1).values, TIES)   # to the chosen element


def test_sort_dim(device):
    for h in (TIES, NANS):
        x, t = gp.asarray(h, device=device), torch.tensor(h)
        for kw in ({"dim": 1}, {"dim": 0, "descending": True}, {"dim": -1, "stable": True}):
            _pair(gp.sort(x, **kw), torch.sort(t, **kw, **({} if "stable" in kw else
                                                          {"stable": True})), "sort")
        _pair(x.sort(descending=True), torch.sort(t, descending=True, stable=True), "sort")
    x = gp.asarray(TIES, device=device)   # the Array API's gp.sort: values only
    np.testing.assert_array_equal(np.asarray(gp.sort(x, axis=1, descending=True)),
                                  -np.sort(-TIES, axis=1))
    _grads(device, lambda a: a.sort(dim=0).values, A)


@pytest.mark.parametrize("name", ["std", "var"])
def test_std_var_torch(device, name):
    x, t = gp.asarray(T3, device=device), torch.tensor(T3)
    f, tf = getattr(gp, name), getattr(torch, name)
    _same(f(x, dim=1), tf(t, dim=1))                                   # unbiased by default
    _same(f(x, dim=(0, 2), keepdim=True), tf(t, dim=(0, 2), keepdim=True))
    _same(f(x, unbiased=False), tf(t, unbiased=False))
    _same(f(x, dim=0, correction=0), tf(t, dim=0, correction=0))
    _same(getattr(x, name)(dim=2), getattr(t, name)(dim=2))
    _same(getattr(x, name)(correction=2), getattr(t, name)(correction=2))
    np.testing.assert_allclose(np.asarray(f(x, 1)), getattr(np, name)(T3, 1), rtol=1e-5)  # NumPy
    _grads(device, lambda a: getattr(a, name)(dim=1), T3)


def test_median(device):
    for h in (TIES, NANS, A):   # the lower middle value; a NaN where the slice has one
        x, t = gp.asarray(h, device=device), torch.tensor(h)
        _pair(gp.median(x, dim=1), torch.median(t, dim=1), "median")
        _pair(x.median(0, keepdim=True), t.median(0, keepdim=True), "median")
        _same(x.median(), t.median())
    x = gp.asarray(TIES, device=device)   # without dim: NumPy's gp.median (the average)
    np.testing.assert_array_equal(np.asarray(gp.median(x, 1)), np.median(TIES, 1))
    _grads(device, lambda a: a.median(dim=1).values, A)


def test_mode_kthvalue(device):
    for h in (TIES, TIES.T.copy(), TIES.astype(np.int64)):
        x, t = gp.asarray(h, device=device), torch.tensor(h)
        _pair(x.mode(), t.mode(), "mode")
        _pair(x.mode(0, keepdim=True), t.mode(0, keepdim=True), "mode")
        for k in (1, 2, 3):   # values agree with ties; indices are checked on A (no ties)
            r, tr = x.kthvalue(k, 0), t.kthvalue(k, 0)
            _same(r.values, tr.values)
    x, t = gp.asarray(A, device=device), torch.tensor(A)
    _pair(x.kthvalue(2, 1), t.kthvalue(2, 1), "kthvalue")
    _pair(x.kthvalue(3, 0, keepdim=True), t.kthvalue(3, 0, keepdim=True), "kthvalue")
    _grads(device, lambda a: a.kthvalue(2, 1).values, A)
    _grads(device, lambda a: a.mode(1).values, TIES)


def test_dim_errors(device):
    x = gp.asarray(A, device=device)
    with pytest.raises(TypeError, match="max: dim must be one integer"):
        gp.max(x, dim=(0, 1))
    with pytest.raises(TypeError, match="keepdim= needs dim="):
        gp.min(x, keepdim=True)
    with pytest.raises(IndexError, match="median: dim 2 is out of range"):
        gp.median(x, dim=2)
    with pytest.raises(TypeError, match="std: give unbiased or correction"):
        gp.std(x, dim=0, unbiased=True, correction=1)
    with pytest.raises(TypeError, match="sum: keepdim= needs dim="):
        gp.sum(x, keepdim=True)   # torch's TypeError too; all/any/argmax take it alone
    for name in ("all", "any", "argmax", "argmin"):
        _same(getattr(gp, name)(x, keepdim=True), getattr(torch, name)(torch.tensor(A),
                                                                       keepdim=True))
    with pytest.raises(TypeError, match="got both axis and dim"):
        gp.sum(x, axis=0, dim=1)
    with pytest.raises(IndexError, match="kthvalue: k must be"):
        x.kthvalue(6, 1)


# ---- torch's top-level names -------------------------------------------------------------------
def test_top_level_functions(device):
    x, t = gp.asarray(T3, device=device), torch.tensor(T3)
    b2 = R.standard_normal((2, 4, 3)).astype(np.float32)
    _same(gp.bmm(x, gp.asarray(b2, device=device)), torch.bmm(t, torch.tensor(b2)))
    _same(gp.baddbmm(gp.asarray(A[:3, :3], device=device), x, gp.asarray(b2, device=device),
                     beta=0.5, alpha=2.0),
          torch.baddbmm(torch.tensor(A[:3, :3]), t, torch.tensor(b2), beta=0.5, alpha=2.0))
    m1, m2 = A[:, :4].copy(), T3[0].T.copy()
    _same(gp.addmm(gp.ones((3, 3), dtype=gp.float32, device=device), gp.asarray(m1, device=device),
                   gp.asarray(m2, device=device), alpha=3),
          torch.addmm(torch.ones(3, 3), torch.tensor(m1), torch.tensor(m2), alpha=3))
    _same(gp.clamp(x, min=-0.5, max=0.2), torch.clamp(t, min=-0.5, max=0.2))
    _same(gp.logsumexp(x, 1), torch.logsumexp(t, 1))
    _same(gp.logsumexp(x, dim=(0, 2), keepdim=True), torch.logsumexp(t, dim=(0, 2), keepdim=True))
    _same(gp.norm(x), torch.norm(t))
    _same(gp.norm(x, p=1, dim=2), torch.norm(t, p=1, dim=2))
    idx = R.integers(0, 3, (2, 3, 4))
    gi, ti = gp.asarray(idx, device=device), torch.tensor(idx)
    _same(gp.gather(x, 1, gi), torch.gather(t, 1, ti))
    _same(gp.scatter_add(x, 1, gi, x), torch.scatter_add(t, 1, ti, t))
    perm = np.argsort(R.standard_normal((2, 3, 4)), axis=1)   # distinct targets per column
    _same(gp.scatter(x, 1, gp.asarray(perm, device=device), x * 2),
          torch.scatter(t, 1, torch.tensor(perm), t * 2))
    assert gp.numel(x) == torch.numel(t) == 24
    assert gp.is_tensor(x) and not gp.is_tensor(T3) and isinstance(x, gp.Tensor)
    assert gp.Tensor is gp.Array
    with pytest.raises(TypeError, match="clamp: input must be a grilly Array"):
        gp.clamp([1.0], min=0)


def test_top_level_gradients(device):
    _grads(device, lambda a: (gp if isinstance(a, gp.Array) else torch).logsumexp(a, 1), A)
    _grads(device, lambda a: (gp if isinstance(a, gp.Array) else torch).clamp(a, -0.3, 0.3), A)
    b = R.standard_normal((2, 4, 3)).astype(np.float32)

    def bad(a):
        ns = gp if isinstance(a, gp.Array) else torch
        other = gp.asarray(b, device=device) if ns is gp else torch.tensor(b)
        return ns.baddbmm(ns.ones((2, 3, 3)) if ns is torch else gp.ones(
            (2, 3, 3), dtype=gp.float32, device=device), a, other, beta=2.0, alpha=0.5)
    _grads(device, bad, T3)


def test_randint(device):
    gp.random.seed(1)
    x = gp.randint(3, 9, (200,), device=device)
    h = np.asarray(x)
    assert x.dtype == gp.int64 and x.shape == (200,) and h.min() >= 3 and h.max() < 9
    assert set(h.tolist()) == set(range(3, 9))   # 200 draws cover 6 values
    y = gp.randint(4, (2, 3), dtype=gp.int32, device=device)
    assert y.dtype == gp.int32 and y.shape == (2, 3) and 0 <= int(y.min()) and int(y.max()) < 4
    assert torch.randint(4, (2, 3)).dtype == torch.int64   # the default dtype is torch's
    with pytest.raises(TypeError, match="randint: needs high and size"):
        gp.randint(5)
    with pytest.raises(ValueError, match="randint: the shape"):
        gp.randint(0, 5, (-1,))


# ---- torch.Tensor methods ------------------------------------------------------------------------
UNARY_INPLACE = ["abs", "neg", "exp", "expm1", "log1p", "sin", "cos", "tan", "tanh", "sinh",
                 "cosh", "atan", "floor", "ceil", "trunc", "round", "sign", "square", "sigmoid",
                 "relu"]
POSITIVE_INPLACE = ["log", "log2", "log10", "sqrt", "rsqrt", "reciprocal", "asin", "acos"]


@pytest.mark.parametrize("name", UNARY_INPLACE + POSITIVE_INPLACE)
def test_unary_inplace(device, name):
    h = (np.abs(A) % 1 * 0.9 + 0.05).astype(np.float32) if name in POSITIVE_INPLACE else A

    def fn(a):   # on a non-leaf (torch requires it in grad mode), returning self
        y = a * 1.0
        assert getattr(y, name + "_")() is y
        return y * a
    _grads(device, fn, h)
    x = gp.asarray(h, device=device).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(x, name + "_")()


def test_inplace_dtype_and_versions(device):
    i = gp.asarray([1, 2, 3], device=device)
    with pytest.raises(TypeError, match="Array.exp_: the result's dtype float64"):
        i.exp_()
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2, 3]).exp_()   # torch refuses too
    for mod in (gp, torch):   # sin saves y: writing y in place is caught at backward, as torch
        a = (gp.asarray(A, device=device).requires_grad_() if mod is gp
             else torch.tensor(A, requires_grad=True))
        y = a * 2.0
        e = y.sin()
        y.abs_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            e.sum().backward()


def test_scatter_index_methods(device):
    x, t = gp.asarray(A, device=device), torch.tensor(A)
    idx = np.array([4, 0, 4], np.int64)
    src = R.standard_normal((3, 3)).astype(np.float32)
    gi, ti, gs, ts = (gp.asarray(idx, device=device), torch.tensor(idx),
                      gp.asarray(src, device=device), torch.tensor(src))
    _same(x.index_add(1, gi, gs, alpha=2), t.index_add(1, ti, ts, alpha=2))
    _same(x.index_fill(1, gi, -1.5), t.index_fill(1, ti, -1.5))
    _same(x.index_fill(0, gp.asarray([-1], device=device), 2.0),
          t.index_fill(0, torch.tensor([-1]), 2.0))
    g2 = R.integers(0, 3, (3, 5))
    for name, args in (("index_add_", (1, gi, gs)), ("index_fill_", (1, gi, 0.5)),
                       ("scatter_add_", (0, gp.asarray(g2, device=device), x)),
                       ("scatter_", (0, gp.asarray(np.argsort(A, 0), device=device), x * 3)),
                       ("clamp_", (-0.2, 0.3)), ("masked_fill_", (x > 0, 1.5))):
        targs = tuple(torch.tensor(np.asarray(a)) if isinstance(a, gp.Array) else a for a in args)
        y, ty = x.copy(), t.clone()
        assert getattr(y, name)(*args) is y
        getattr(ty, name)(*targs)
        _same(y, ty)

    def fn(a):   # gradients through index_add_ and index_fill_ (in place on a non-leaf)
        ga = isinstance(a, gp.Array)
        i = gi if ga else ti
        y = a * 1.0
        y.index_add_(1, i, (gs if ga else ts) * 2).index_fill_(0, i[:1] * 0 + 1, 0.0)
        return y * a
    _grads(device, fn, A)
    with pytest.raises(IndexError, match="Array.index_add: index out of range"):
        x.index_add(1, gp.asarray([5], device=device), gs[:, :1])
    with pytest.raises(TypeError, match="Array.index_fill: index must be a 0-D or 1-D integer"):
        x.index_fill(1, gp.asarray([0.0], device=device), 1.0)
    with pytest.raises(ValueError, match="Array.index_add: source must have shape"):
        x.index_add(1, gi, gs[:2])


def test_bincount_type_is_cuda(device):
    v = np.array([0, 3, 3, 1, 0, 3], np.int64)
    w = R.standard_normal(6).astype(np.float32)
    x, t = gp.asarray(v, device=device), torch.tensor(v)
    _same(x.bincount(), t.bincount())
    _same(x.bincount(minlength=7), t.bincount(minlength=7))
    _same(x.bincount(gp.asarray(w, device=device)), t.bincount(torch.tensor(w)))
    a, ta = gp.asarray(A, device=device), torch.tensor(A)
    assert a.type() == ta.type() == "torch.FloatTensor"
    assert x.type() == t.type() == "torch.LongTensor"
    _same(a.type(gp.float64), ta.type(torch.float64))
    _same(a.type("torch.IntTensor"), ta.type("torch.IntTensor"))
    assert a.type(gp.float32) is a
    with pytest.raises(ValueError, match="Array.type: unknown type name"):
        a.type("torch.cuda.FloatTensor")
    assert a.is_cuda is False
