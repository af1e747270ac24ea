"""A PyTorch user's tensor-method code (``x.squeeze(dim=...)``, ``x.repeat_interleave(r)``,
``x.scatter_reduce(...)``, ``x.index_put_(..., accumulate=True)``, ``x.cummax(1)``, ...) on
grilly Arrays, each against torch 2.13 CPU, forward and gradient, on every device; each case
failed (AttributeError, TypeError or a wrong value) before its fix."""
import numpy as np
import pytest

import grilly as gp
from grilly.testing import assert_close

torch = pytest.importorskip("torch")

_RS = np.random.RandomState(0)
X = _RS.randn(2, 3, 4).astype(np.float32)
A = _RS.randn(4, 3).astype(np.float32)
Y = _RS.randn(2, 1, 3, 1).astype(np.float32)
TIES = np.array([[1, 2], [1, 1], [3, 2], [3, 0], [0, 2]], np.float32)
SI = np.array([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])
SRC = _RS.randn(2, 5).astype(np.float32)
MASK = _RS.rand(4, 3) > 0.5


def _i(lib, dev, a):
    """An integer/bool index array of this library (on ``dev`` for grilly)."""
    return gp.asarray(np.asarray(a), device=dev) if lib is gp else torch.tensor(np.asarray(a))


def _np(v):
    return v.detach().numpy() if isinstance(v, torch.Tensor) else v


def _check(device, f, *arrs):
    """f(lib, dev, *arrays) for grilly and torch: the values, and the float inputs' gradients
    of a weighted sum of the (first) result."""
    grads = [np.asarray(a).dtype.kind == "f" for a in arrs]
    gs = [gp.asarray(a, device=device) for a in arrs]
    ts = [torch.tensor(a) for a in arrs]
    for g, t, r in zip(gs, ts, grads):
        if r:
            g.requires_grad_()
            t.requires_grad_()
    gy, ty = f(gp, device, *gs), f(torch, None, *ts)
    gy = gy if isinstance(gy, (tuple, list)) else (gy,)
    ty = ty if isinstance(ty, (tuple, list)) else (ty,)
    assert len(gy) == len(ty)
    for a, b in zip(gy, ty):
        assert a.device == gs[0].device
        assert_close(a, _np(b), rtol=1e-5, atol=1e-5)
    if any(grads) and ty[0].dtype.is_floating_point:
        w = _RS.randn(*ty[0].shape).astype(np.float32)
        gp.sum(gy[0] * gp.asarray(w, device=device)).backward()
        (ty[0] * torch.tensor(w)).sum().backward()
        for g, t, r in zip(gs, ts, grads):
            if r:
                want = t.grad if t.grad is not None else torch.zeros_like(t)
                assert g.grad is not None
                assert_close(g.grad, want.numpy(), rtol=1e-4, atol=1e-4)


_CASES = {
    # torch's squeeze(dim): only those of the dims that have length one
    "squeeze_dim": (lambda m, d, a: a.squeeze(dim=0), Y),
    "squeeze_dims": (lambda m, d, a: a.squeeze(dim=(0, 1, -1)), Y),
    "repeat_interleave": (lambda m, d, a: a.repeat_interleave(2), X),
    "repeat_interleave_dim": (lambda m, d, a: a.repeat_interleave(2, dim=1), X),
    "repeat_interleave_array": (lambda m, d, a: a.repeat_interleave(
        _i(m, d, [1, 0, 2]), dim=1, output_size=3), X),
    "tensor_split_n": (lambda m, d, a: a.tensor_split(3, dim=2), X),
    "tensor_split_idx": (lambda m, d, a: a.tensor_split([-1, 1, 9], dim=0), A),
    "tensor_split_array": (lambda m, d, a: a.tensor_split(_i(m, d, [1, 3]), dim=2), X),
    "select_write": (lambda m, d, a: _written(m, d, a), A),
    "index_copy": (lambda m, d, a, s: a.index_copy(0, _i(m, d, [2, 0, 3]), s), A,
                   _RS.randn(3, 3).astype(np.float32)),
    "index_copy_": (lambda m, d, a, s: (a * 1).index_copy_(1, _i(m, d, [2, 0]), s), A,
                    _RS.randn(4, 2).astype(np.float32)),
    "index_put_acc": (lambda m, d, a, v: (a * 1).index_put_(
        (_i(m, d, [0, 2, 0]), _i(m, d, [1, 1, 1])), v, accumulate=True), A,
        _RS.randn(3).astype(np.float32)),
    "index_put_acc_rows": (lambda m, d, a, v: a.index_put(
        (_i(m, d, [-1, 3, 0]),), v, accumulate=True), A, _RS.randn(3, 3).astype(np.float32)),
    "index_put_": (lambda m, d, a, v: (a * 1).index_put_(
        (_i(m, d, [0, 2]), _i(m, d, [1, 0])), v), A, _RS.randn(2).astype(np.float32)),
    "masked_scatter": (lambda m, d, a, s: a.masked_scatter(_i(m, d, MASK), s), A,
                       _RS.randn(12).astype(np.float32)),
    "masked_scatter_bcast": (lambda m, d, a, s: (a * 1).masked_scatter_(_i(m, d, MASK[0]), s),
                             A, _RS.randn(5, 4).astype(np.float32)),
    "cummax_ties": (lambda m, d, a: a.cummax(0), TIES),
    "cummin_ties": (lambda m, d, a: a.cummin(dim=0), TIES),
    "cummax_3d": (lambda m, d, a: a.cummax(-1), X),
    "logcumsumexp": (lambda m, d, a: a.logcumsumexp(0), TIES - 100 * np.eye(5, 2, dtype="f")),
    "cumprod_dim": (lambda m, d, a: a.cumprod(dim=1), X),
    "clamp_min_max": (lambda m, d, a, lo: a.clamp_min(lo).clamp_max(0.5), A, A * 0 - 0.3),
    "addmm_": (lambda m, d, a, b, c: (a * 1).addmm_(b, c, beta=0.5, alpha=2.0), A,
               _RS.randn(4, 5).astype(np.float32), _RS.randn(5, 3).astype(np.float32)),
    "addmv": (lambda m, d, a, b, c: a.addmv(b, c, beta=0.5, alpha=2.0), A[:, 0],
              _RS.randn(4, 5).astype(np.float32), _RS.randn(5).astype(np.float32)),
    "addr": (lambda m, d, a, b, c: a.addr(b, c, alpha=2.0), A, A[:, 0].copy(), A[0].copy()),
    "addbmm": (lambda m, d, a, b, c: a.addbmm(b, c, beta=0.5, alpha=2.0), A,
               _RS.randn(2, 4, 5).astype(np.float32), _RS.randn(2, 5, 3).astype(np.float32)),
    "tril_triu_": (lambda m, d, a: (a * 1).tril_(1).triu_(-1), A),
    "diff_prepend": (lambda m, d, a, p: a.diff(dim=1, prepend=p), A, A[:, :1] * 2),
    "diff_n": (lambda m, d, a: a.diff(n=2, dim=0), A),
    "diag_embed": (lambda m, d, a: a.diag_embed(), A),
    "diag_embed_dims": (lambda m, d, a: a.diag_embed(offset=-1, dim1=0, dim2=2), A),
    "fill_diagonal_": (lambda m, d, a: (a * 1).fill_diagonal_(5.0), A),
    "fill_diagonal_wrap": (lambda m, d, a: (a * 1).fill_diagonal_(5.0, wrap=True),
                           _RS.randn(7, 3).astype(np.float32)),
    "unfold": (lambda m, d, a: a.unfold(-1, 2, 1), X),
    "unfold_step": (lambda m, d, a: a.unfold(0, 2, 2), A),
    "argwhere": (lambda m, d, a: a.argwhere(), np.array([[0, 1.], [2, 0]], np.float32)),
}
for _red in ("sum", "mean", "amax", "amin"):
    for _inc in (True, False):
        _CASES[f"scatter_reduce_{_red}_{_inc}"] = (
            lambda m, d, a, s, r=_red, inc=_inc: a.scatter_reduce(0, _i(m, d, SI), s, r,
                                                                  include_self=inc),
            np.full((3, 5), 0.5, np.float32), SRC)


def _written(lib, dev, a):
    """In-place writes through views (select, narrow, a transposed row, reshape) reach the base."""
    b = a * 1
    b.select(1, 0).mul_(3)
    b.select(0, -1).copy_(_i(lib, dev, np.array([1, 2, 3], np.float32)))
    b.narrow(1, 1, 1).add_(2)
    b.swapaxes(0, 1)[2].clamp_(min=0)
    b.reshape(-1)[0:2].fill_(0.)
    return b


@pytest.mark.parametrize("name", list(_CASES))
def test_method_matches_torch(device, name):
    f, *arrs = _CASES[name]
    _check(device, f, *arrs)


def test_small_methods(device):
    x = gp.asarray(X, device=device)
    t = torch.tensor(X)
    assert (x.ndimension(), x.nelement()) == (t.ndimension(), t.nelement())
    assert x.squeeze(dim=1).shape == tuple(t.squeeze(dim=1).shape)   # not of length one: kept
    # scatter's reduce="add" (torch's older spelling of scatter_add; torch has no gradient)
    z, s = np.ones((3, 5), np.float32), SRC
    want = torch.tensor(z).scatter_add(0, torch.tensor(SI), torch.tensor(s))
    got = gp.asarray(z, device=device).scatter(0, gp.asarray(SI, device=device),
                                               gp.asarray(s, device=device), reduce="add")
    assert_close(got, want.numpy(), rtol=1e-6, atol=1e-6)
    want = torch.tensor(z).scatter(0, torch.tensor(SI), 2.5, reduce="add")
    got = gp.asarray(z, device=device).scatter(0, gp.asarray(SI, device=device), value=2.5,
                                               reduce="add")
    assert_close(got, want.numpy(), rtol=1e-6, atol=1e-6)


def test_clear_errors(device):
    x = gp.asarray(X, device=device)
    with pytest.raises(TypeError, match="tile"):
        x[0].repeat((2, 1, 2))   # torch's repeat(sizes) in one tuple
    # torch's elementwise x.max(other) / x.min(other) (an axis is never an array)
    y = gp.flip(x, axis=0)
    np.testing.assert_array_equal(np.asarray(x.max(y)), np.maximum(np.asarray(x), np.asarray(y)))
    np.testing.assert_array_equal(np.asarray(x.min(y)), np.minimum(np.asarray(x), np.asarray(y)))
    with pytest.raises(ValueError, match="output_size"):
        x.repeat_interleave(2, dim=0, output_size=3)
    with pytest.raises(ValueError, match="reduce"):
        x.scatter_reduce(0, gp.zeros((1, 3, 4), dtype="int64", device=device), x, "add")
    with pytest.raises(IndexError, match="select"):
        x.select(1, 3)
