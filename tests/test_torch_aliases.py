"""torch.Tensor's methods under their torch names (grilly/array/torch_aliases.py) against torch
2.13 on every device: the alias table, the in-place twins and in-place comparisons, frac, rot90,
nan_to_num, msort, the dtype predicates; torch's dim= forms of nansum, nanmean, nanmedian,
quantile, nanquantile, count_nonzero; NumPy's isposinf, isneginf, isreal, iscomplex,
isrealobj, iscomplexobj."""
import numpy as np
import pytest

import grilly as gp
from grilly.array.torch_aliases import ALIASES, COMPARE_INPLACE, INPLACE

torch = pytest.importorskip("torch")

_R = np.random.RandomState(3)
A = _R.uniform(-2, 2, (3, 3))
B = _R.uniform(0.5, 2, (3, 3))
INT = _R.randint(0, 16, (3, 3))
J = _R.randint(0, 4, (3, 3))
_INT = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
        "bitwise_right_shift"}
_UNARY = {"absolute", "arccos", "arccosh", "acosh", "arcsin", "arcsinh", "asinh", "arctan",
          "arctanh", "atanh", "bitwise_not", "signbit", "sgn", "deg2rad", "rad2deg", "exp2",
          "fix", "positive", "fliplr", "flipud", "sinc", "cov", "corrcoef", "inverse", "det",
          "slogdet", "matrix_exp", "trace", "isposinf", "isneginf", "isreal", "frac"}
_EXTRA = {"moveaxis": (0, 1), "swapdims": (0, 1), "matrix_power": (3,)}


def _inputs(name):
    if name in _INT:
        return INT, J
    if name in ("arccos", "arcsin", "arctanh", "atanh"):
        return A / 2, None
    if name in ("arccosh", "acosh"):
        return B + 1, None
    return A, B


def _args(name, other, dev):
    if name in _EXTRA:
        return _EXTRA[name], _EXTRA[name]
    if name in _UNARY:
        return (), ()
    if name in ("mv",):
        return (gp.asarray(other[0], device=dev),), (torch.tensor(other[0]),)
    if name in ("ger", "vdot", "inner"):
        x = other[0]
        return (gp.asarray(x, device=dev),), (torch.tensor(x),)
    return (gp.asarray(other, device=dev),), (torch.tensor(other),)


def _cmp(got, ref):
    if isinstance(ref, tuple):
        for g, r in zip(got, ref):
            _cmp(g, r)
        return
    np.testing.assert_allclose(np.asarray(got), ref.numpy(), rtol=1e-12, atol=1e-13)


def test_aliases_as_torch(device):
    for name in list(ALIASES) + ["logical_xor"]:
        x, other = _inputs(name)
        if name in ("ger", "vdot"):
            x = x[0]
        ga, ta = _args(name, other, device)
        got = getattr(gp.asarray(x, device=device), name)(*ga)
        _cmp(got, getattr(torch.tensor(x), name)(*ta))


def test_in_place_twins_and_comparisons(device):
    for name in INPLACE:
        x, other = _inputs(name)
        ga, ta = _args(name, other, device)
        g = gp.asarray(x, device=device)
        t = torch.tensor(x)
        assert getattr(g, name + "_")(*ga) is g, name
        getattr(t, name + "_")(*ta)
        _cmp(g, t)
    for name in COMPARE_INPLACE:
        g, t = gp.asarray(A, device=device), torch.tensor(A)
        other = gp.asarray(J, device=device) if name.startswith("logical") else 0.5
        ta = torch.tensor(J) if name.startswith("logical") else 0.5
        getattr(g, name)(*(() if name == "logical_not_" else (other,)))
        getattr(t, name)(*(() if name == "logical_not_" else (ta,)))
        assert g.dtype == gp.float64
        _cmp(g, t)


def test_more_methods(device):
    x = np.array([[1.5, -2.25, np.nan], [np.inf, 3.0, -np.inf]])
    g, t = gp.asarray(x, device=device), torch.tensor(x)
    _cmp(g.frac(), t.frac())
    _cmp(g.nan_to_num(0.5, 9.0, -9.0), t.nan_to_num(0.5, 9.0, -9.0))
    _cmp(g.rot90(1, [0, 1]), t.rot90(1, [0, 1]))
    _cmp(gp.asarray(A, device=device).msort(), torch.tensor(A).msort())
    _cmp(gp.asarray(A, device=device).logical_xor(gp.asarray(J, device=device)),
         torch.tensor(A).logical_xor(torch.tensor(J)))
    assert not g.is_complex() and g.is_signed() and g.is_same_size(gp.zeros((2, 3)))
    assert gp.asarray([1 + 2j]).is_complex() and not gp.asarray([1], dtype=gp.uint8).is_signed()
    assert gp.asarray([2.0]).is_nonzero() and not gp.asarray([0.0]).is_nonzero()
    with pytest.raises(RuntimeError, match="is_nonzero"):
        g.is_nonzero()


def test_dim_forms_as_torch(device):
    x = np.array([[1.0, np.nan, 3.0, 0.5], [np.nan] * 4, [2.0, 1.0, 4.0, 3.0]])
    g, t = gp.asarray(x, device=device), torch.tensor(x)
    for d in (0, 1):
        for k in (False, True):
            np.testing.assert_allclose(np.asarray(gp.nanmean(g, dim=d, keepdim=k)),
                                       torch.nanmean(t, dim=d, keepdim=k).numpy(), equal_nan=True)
            np.testing.assert_allclose(np.asarray(g.nansum(d)), t.nansum(d).numpy())
            got, ref = gp.nanmedian(g, dim=d, keepdim=k), torch.nanmedian(t, dim=d, keepdim=k)
            np.testing.assert_allclose(np.asarray(got.values), ref.values.numpy(), equal_nan=True)
            np.testing.assert_array_equal(np.asarray(got.indices)[~np.isnan(ref.values.numpy())],
                                          ref.indices.numpy()[~np.isnan(ref.values.numpy())])
            np.testing.assert_array_equal(np.asarray(g.count_nonzero(d)),
                                          t.count_nonzero(d).numpy())
    np.testing.assert_allclose(np.asarray(g.nanmedian()), t.nanmedian().numpy())
    y = x[2]
    for how in ("linear", "lower", "higher", "midpoint", "nearest"):
        for q in (0.3, [0.1, 0.9]):
            ref = torch.quantile(torch.tensor(y), torch.tensor(q, dtype=torch.float64), dim=0,
                                 interpolation=how)
            got = gp.quantile(gp.asarray(y, device=device), q if isinstance(q, float)
                              else gp.asarray(q, device=device), dim=0, interpolation=how)
            np.testing.assert_allclose(np.asarray(got), ref.numpy(), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(g.nanquantile(0.5, 1, True)),
                               t.nanquantile(0.5, 1, True).numpy(), equal_nan=True)
    np.testing.assert_allclose(np.asarray(g.nanmean(1)), t.nanmean(1).numpy(), equal_nan=True)


def test_numpy_classification(device):
    x = np.array([1.0, np.inf, -np.inf, np.nan, -0.0])
    g = gp.asarray(x, device=device)
    np.testing.assert_array_equal(np.asarray(gp.isposinf(g)), np.isposinf(x))
    np.testing.assert_array_equal(np.asarray(gp.isneginf(g)), np.isneginf(x))
    c = np.array([1 + 0j, 2j, -1 + 1e-300j])
    gc = gp.asarray(c, device=device)
    np.testing.assert_array_equal(np.asarray(gp.isreal(gc)), np.isreal(c))
    np.testing.assert_array_equal(np.asarray(gp.iscomplex(gc)), np.iscomplex(c))
    np.testing.assert_array_equal(np.asarray(gp.isreal(g)), np.isreal(x))
    assert gp.iscomplexobj(gc) and not gp.iscomplexobj(g) and gp.isrealobj(g)
    with pytest.raises(TypeError, match="isposinf: complex"):
        gp.isposinf(gc)


def test_alias_gradients():
    x = torch.tensor(A, requires_grad=True)
    y = torch.tensor(B, requires_grad=True)
    gx = gp.asarray(A, requires_grad=True)
    gy = gp.asarray(B, requires_grad=True)
    for name in ("arctan2", "hypot", "logaddexp", "fmax", "copysign"):
        (getattr(x, name)(y) ** 2).sum().backward()
        (getattr(gx, name)(gy) ** 2).sum().backward()
    (x.frac().sum() + x.inverse().sum() + x.det()).backward()
    (gx.frac().sum() + gx.inverse().sum() + gx.det()).backward()
    np.testing.assert_allclose(np.asarray(gx.grad), x.grad.numpy(), rtol=1e-11)
    np.testing.assert_allclose(np.asarray(gy.grad), y.grad.numpy(), rtol=1e-11)
