"""torch.Tensor's methods on grilly's Array (grilly/array/torch_methods.py): each call is run on a
grilly array and on a torch tensor with the same arguments, values and input gradients compared,
on every device; the NumPy/torch conflicts raise TypeError naming the difference."""
import numpy as np
import pytest

import grilly as gp

torch = pytest.importorskip("torch")

R = np.random.default_rng(5)
A = R.standard_normal((2, 3, 4)).astype(np.float32)            # the array the method is called on
B = R.standard_normal((2, 3, 4)).astype(np.float32)            # a second operand
P = (np.abs(A) + 0.5).astype(np.float32)                        # positive (log, sqrt, pow)
M2 = R.standard_normal((3, 4)).astype(np.float32)
N2 = R.standard_normal((4, 5)).astype(np.float32)
C2 = R.standard_normal((3, 5)).astype(np.float32)
V3 = R.standard_normal(3).astype(np.float32)
V4 = R.standard_normal(4).astype(np.float32)
COL = R.standard_normal((3, 1)).astype(np.float32)
MASK = A > 0.3
IDX = R.integers(0, 3, (2, 2, 4)).astype(np.int64)                # gather/scatter_add (repeats)
PERM = np.stack([np.stack([R.permutation(3) for _ in range(4)], 1) for _ in range(2)])
PERM = PERM.astype(np.int64)                                     # scatter: distinct per column
SEL = np.array([2, 0, 2], np.int64)


def _to(h, device, grad):
    x = gp.asarray(h, device=device)
    return x.requires_grad_() if grad and x.dtype.kind == "f" else x


def _tt(h, grad):
    t = torch.tensor(h)
    return t.requires_grad_() if grad and t.is_floating_point() else t


def _flat(o):
    return list(o) if isinstance(o, (tuple, list)) else [o]


def _same(g, t, rtol):
    if isinstance(t, torch.Tensor):
        assert isinstance(g, gp.Array), type(g)
        h, w = np.asarray(g), t.detach().numpy()
        assert h.shape == w.shape, (h.shape, w.shape)
        assert h.dtype == w.dtype, (h.dtype, w.dtype)
        np.testing.assert_allclose(h, w, rtol=rtol, atol=1e-5)
    else:
        assert g == t, (g, t)


def check(device, fn, *inputs, grad=True, rtol=2e-5):
    """fn on grilly arrays and on torch tensors made from ``inputs``: outputs, then the
    gradients of every float input through a weighted sum of the float outputs."""
    gs = [_to(h, device, grad) for h in inputs]
    ts = [_tt(h, grad) for h in inputs]
    go, to = _flat(fn(*gs)), _flat(fn(*ts))
    assert len(go) == len(to)
    for g, t in zip(go, to):
        _same(g, t, rtol)
    if not grad:
        return
    lg, lt = 0.0, 0.0
    for g, t in zip(go, to):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            w = R.standard_normal(t.shape).astype(np.asarray(g).dtype)
            lg = lg + (g * gp.asarray(w, device=device)).sum()
            lt = lt + (t * torch.tensor(w)).sum()
    if not isinstance(lt, torch.Tensor):
        return
    lg.backward()
    lt.backward()
    for g, t in zip(gs, ts):
        if t.requires_grad:
            want = t.grad if t.grad is not None else torch.zeros_like(t)
            got = g.grad if g.grad is not None else gp.zeros_like(g)
            _same(got, want, max(rtol, 1e-4))


SHAPE = {
    "view": (lambda x: x.view(6, -1), A),
    "view_tuple": (lambda x: x.view((4, 6)), A),
    "view_as": (lambda x, y: x.view_as(y), A, np.zeros((6, 4), np.float32)),
    "reshape_as": (lambda x, y: x.permute(2, 0, 1).reshape_as(y), A, np.zeros((4, 6), np.float32)),
    "expand": (lambda x: x.expand(2, -1, 4), COL),
    "expand_as": (lambda x, y: x.expand_as(y), COL, A),
    "unsqueeze": (lambda x: x.unsqueeze(1) * x.unsqueeze(-1)[:, None, :, :, 0], A),
    "permute": (lambda x: x.permute(2, 0, 1) + x.permute((2, 0, 1)), A),
    "t": (lambda x: x.t(), M2),
    "t_1d": (lambda x: x.t(), V4),
    "movedim": (lambda x: x.movedim(0, 2), A),
    "narrow": (lambda x: x.narrow(1, 1, 2) + x.narrow(-2, -2, 2), A),
    "flip": (lambda x: x.flip(0, 2) + x.flip((1,)), A),
    "roll": (lambda x: x.roll(1, 2) + x.roll((1, -1), (0, 2)), A),
    "chunk": (lambda x: x.chunk(3, 2), A),
    "chunk_even": (lambda x: x.chunk(2), A),
    "split": (lambda x: x.split(3, 2), A),
    "split_sections": (lambda x: x.split([1, 2], dim=1), A),
    "unbind": (lambda x: x.unbind(1), A),
    "tile": (lambda x: x.tile(2, 1), M2),
    "clone": (lambda x: x.clone() * 2, A),
    "contiguous": (lambda x: x.permute(2, 0, 1).contiguous(), A),
    "type_as": (lambda x, y: x.type_as(y), A, A.astype(np.float64)),
    "double": (lambda x: x.double(), A),
    "float": (lambda x: x.double().float(), A),
    "long": (lambda x: (x * 3).long(), A),
    "int": (lambda x: (x * 3).int(), A),
    "short": (lambda x: (x * 3).short(), A),
    "bool": (lambda x: x.bool(), A),
    "to_dtype": (lambda x: x.to(dtype=x.double().dtype), A),
}

UNARY = ["abs", "neg", "exp", "expm1", "log1p", "sin", "cos", "tan", "tanh", "sigmoid", "relu",
         "square", "floor", "ceil", "round", "trunc", "sign"]
POSITIVE = ["log", "log2", "log10", "sqrt", "rsqrt", "reciprocal"]

MATH = {
    "round_decimals": (lambda x: x.round(decimals=1), A),
    "pow": (lambda x: x.pow(2.0) + x.pow(x), P),
    "float_power": (lambda x: x.float_power(2), A),
    "fmod": (lambda x, y: x.fmod(y) + x.fmod(-0.7), A * 3, B),
    "remainder": (lambda x, y: x.remainder(y), A * 3, B),
    "floor_divide": (lambda x, y: x.floor_divide(y), A * 3, B),
    "true_divide": (lambda x, y: x.true_divide(y), A, P),
    "add": (lambda x, y: x.add(y, alpha=2) + x.sub(y, alpha=0.5) + x.mul(y), A, B),
    "div": (lambda x, y: x.div(y), A, P),
    "div_trunc": (lambda x, y: x.div(y, rounding_mode="trunc") + x.div(y, rounding_mode="floor"),
                  A * 3, B),
    "div_trunc_int": (lambda x, y: x.div(y, rounding_mode="trunc"),
                      np.array([7, -7, 7, -7, 0]), np.array([2, 2, -2, -2, 3])),
    "lerp": (lambda x, y: x.lerp(y, 0.3) + x.lerp(y, y.abs()), A, B),
    "addmm": (lambda c, a, b: c.addmm(a, b) + c.addmm(a, b, beta=0.5, alpha=2), C2, M2, N2),
    "addcmul": (lambda x, y, z: x.addcmul(y, z, value=0.5) + x.addcdiv(y, z, value=2),
                A, B, P),
    "mm": (lambda a, b: a.mm(b), M2, N2),
    "bmm": (lambda a, b: a.bmm(b), A, np.ascontiguousarray(B.transpose(0, 2, 1))),
    "matmul": (lambda a, b: a.matmul(b), A, V4),
    "dot": (lambda a, b: a.dot(b), V4, V4[::-1].copy()),
    "outer": (lambda a, b: a.outer(b), V3, V4),
    "clamp": (lambda x: x.clamp(min=-0.5) + x.clamp(max=0.2) + x.clamp(-0.5, 0.5)
              + x.clip(-0.1, 0.1), A),
    "clamp_arrays": (lambda x, lo, hi: x.clamp(min=lo, max=hi), A, -np.abs(B), np.abs(B)),
    "where": (lambda x, m, y: x.where(m, y), A, MASK, B),
    "masked_fill": (lambda x, m: x.masked_fill(m, 0.5) + x.masked_fill(m[0], -1.0), A, MASK),
    "masked_select": (lambda x, m: x.masked_select(m), A, MASK),
    "compare": (lambda x, y: (x.eq(y), x.ne(y), x.lt(y), x.le(y), x.gt(y), x.ge(0.1)),
                np.round(A), np.round(B)),
    "isnan": (lambda x: (x.isnan(), x.isinf(), x.isfinite(), x.isnan().logical_not()),
              np.array([1.0, np.nan, np.inf, -np.inf], np.float32)),
    "softmax": (lambda x: x.softmax(1) + x.log_softmax(-1), A),
    "softmax_dtype": (lambda x: x.softmax(0, dtype=x.double().dtype), A),
    "logsumexp": (lambda x: x.logsumexp(1) + x.logsumexp((0, 2), keepdim=True).sum(), A),
    "logsumexp_inf": (lambda x: x.logsumexp(0),
                      np.array([[-np.inf, 1.0], [-np.inf, np.inf]], np.float32)),
    "amax": (lambda x: x.amax(1) + x.amin(dim=(0, 2), keepdim=True).sum(), A),
    "norm": (lambda x: (x.norm(), x.norm(p=1, dim=1), x.norm(dim=(0, 2), keepdim=True),
                        x.norm(p=float("inf"), dim=-1)), A),
    "norm_nuc": (lambda x: x.norm(p="nuc"), M2),
    "topk": (lambda x: x.topk(2, dim=1), A),
    "topk_smallest": (lambda x: x.topk(3, largest=False), A),
    "gather": (lambda x, i: x.gather(1, i), A, IDX),
    "scatter": (lambda x, i, s: x.scatter(1, i, s), A, PERM[:, :2], B[:, :2]),
    "scatter_value": (lambda x, i: x.scatter(1, i, value=2.0), A, PERM[:, :2]),
    "scatter_add": (lambda x, i, s: x.scatter_add(1, i, s), A, IDX, B[:, :2]),
    "index_select": (lambda x, i: x.index_select(1, i), A, SEL),
    "tril": (lambda x: x.tril() + x.triu(1) + x.tril(-1), M2),
    "diag": (lambda x: x.diag(), M2),
    "diag_1d": (lambda x: x.diag() + x.diag(1)[1:, :-1] + x.diag(-1)[:-1, 1:], V4),
    "nansum": (lambda x: x.nansum() + x.nansum(dim=0).sum(),
               np.array([[1.0, np.nan], [2.0, 3.0]], np.float32)),
    "unique": (lambda x: x.unique(return_inverse=True, return_counts=True),
               np.array([3, 1, 3, 2, 1], np.int64)),
    "unique_values": (lambda x: x.unique(), np.array([3.0, 1.0, 3.0], np.float32)),
    "nonzero": (lambda x: x.nonzero(as_tuple=False), MASK),
    "allclose": (lambda x, y: (x.allclose(x + 1e-7), x.allclose(y), x.equal(x), x.equal(y),
                               x.allclose(y, atol=10.0)), A, B),
}


@pytest.mark.parametrize("name", sorted(SHAPE))
def test_shape_and_type_methods(device, name):
    fn, *inputs = SHAPE[name]
    check(device, fn, *inputs)


@pytest.mark.parametrize("name", UNARY + POSITIVE)
def test_unary_math(device, name):
    check(device, lambda x: getattr(x, name)(), P if name in POSITIVE else A)


NO_GRAD = {"floor_divide", "div_trunc", "unique_values"}   # torch: no derivative, or none defined


@pytest.mark.parametrize("name", sorted(MATH))
def test_math_methods(device, name):
    fn, *inputs = MATH[name]
    check(device, fn, *inputs, grad=name not in NO_GRAD)


def test_attributes_against_torch(device):
    x, t = gp.asarray(A, device=device), torch.tensor(A)
    assert x.size() == tuple(t.size()) and x.size(1) == t.size(1) and x.size(-1) == t.size(-1)
    assert x.size == t.numel() == x.numel() == 24 and type(x.size + 1) is int
    assert x.dim() == t.dim() and x.element_size() == t.element_size()
    assert x.is_floating_point() and not x.long().is_floating_point()
    assert x.stride() == t.stride() and x.stride(1) == t.stride(1)
    p, tp = x.permute(2, 0, 1), t.permute(2, 0, 1)
    assert p.stride() == tp.stride()
    assert x.is_contiguous() and not p.is_contiguous() and not tp.is_contiguous()
    assert p.contiguous().is_contiguous() and x.contiguous() is x
    assert x.float() is x and x.to(x.dtype) is x and x.to(x.device) is x
    assert x.to(x, copy=True) is not x
    assert x.to(gp.float64).dtype == gp.float64
    assert x.to("cpu", gp.float64).device == gp.asarray(1.0, device="cpu").device
    assert x.cpu().device.name == "cpu" and x.half().dtype == gp.float16
    with pytest.raises(IndexError):
        x.size(3)


def test_view_shares_memory(device):
    x = gp.asarray(A.copy(), device=device)
    v = x.view(-1)
    v[0] = 7.0
    assert float(x[0, 0, 0]) == 7.0
    with pytest.raises(RuntimeError, match="reshape"):
        x.permute(2, 0, 1).view(-1)   # torch: not viewable without a copy
    with pytest.raises(RuntimeError):
        torch.tensor(A).permute(2, 0, 1).view(-1)
    with pytest.raises(NotImplementedError, match="astype"):
        x.view(gp.int32)


def test_new_factories(device):
    x = gp.asarray(A, device=device)
    z = x.new_zeros(2, 3)
    assert z.shape == (2, 3) and z.dtype == x.dtype and z.device == x.device
    assert float(z.sum()) == 0.0
    o = x.new_ones((4,), dtype=gp.int32)
    assert o.dtype == gp.int32 and o.tolist() == [1] * 4
    f = x.new_full((2, 2), 3.5)
    assert f.tolist() == [[3.5, 3.5], [3.5, 3.5]] and f.device == x.device
    assert x.new_empty(3).shape == (3,)
    n = x.new_tensor([1, 2])
    assert n.dtype == x.dtype and n.tolist() == [1.0, 2.0] and n.device == x.device
    assert x.new_zeros(2, requires_grad=True).requires_grad


def _inplace_ops():
    return {
        "zero_": lambda x, y: x.zero_(),
        "fill_": lambda x, y: x.fill_(0.25),
        "add_": lambda x, y: x.add_(y, alpha=2),
        "sub_": lambda x, y: x.sub_(y),
        "mul_": lambda x, y: x.mul_(y),
        "div_": lambda x, y: x.div_(y.abs() + 1),
        "clamp_": lambda x, y: x.clamp_(-0.3, 0.4),
        "copy_": lambda x, y: x.copy_(y),
        "masked_fill_": lambda x, y: x.masked_fill_(y > 0, 1.5),
    }


@pytest.mark.parametrize("name", sorted(_inplace_ops()))
def test_inplace_methods(device, name):
    op = _inplace_ops()[name]

    def fn(a, b):   # on a non-leaf (as torch requires in grad mode), returning self
        x = a * 1.0
        y = op(x, b)
        assert y is x
        return x * a
    check(device, fn, A, B)
    x = gp.asarray(A, device=device).requires_grad_()
    t = torch.tensor(A).requires_grad_()
    with pytest.raises(RuntimeError):
        op(t, torch.tensor(B))
    with pytest.raises(RuntimeError, match="leaf"):
        op(x, gp.asarray(B, device=device))


def test_random_fills(device):
    x = gp.zeros((2000,), dtype=gp.float32, device=device)
    gp.random.seed(3)
    assert x.uniform_(-2.0, 3.0) is x
    h = np.asarray(x)
    assert h.min() >= -2.0 and h.max() < 3.0 and abs(h.mean() - 0.5) < 0.15
    gp.random.seed(3)
    np.testing.assert_array_equal(np.asarray(gp.random.uniform(
        -2.0, 3.0, (2000,), dtype=gp.float32, device=device)), h)
    g = gp.random.Generator(1)
    x.normal_(1.0, 2.0, generator=g)
    h = np.asarray(x)
    assert abs(h.mean() - 1.0) < 0.2 and abs(h.std() - 2.0) < 0.2
    np.testing.assert_array_equal(np.asarray(gp.random.Generator(1).normal(
        1.0, 2.0, (2000,), dtype=gp.float32, device=device)), h)


def test_numpy_conflicts(device):
    x2 = gp.asarray(M2, device=device)
    x3 = gp.asarray(A, device=device)
    # repeat is NumPy's (elements repeated); torch's repeat(*sizes) is tile
    np.testing.assert_array_equal(np.asarray(x2.repeat(2, axis=1)), M2.repeat(2, axis=1))
    np.testing.assert_array_equal(np.asarray(x2.repeat(2)), M2.repeat(2))
    with pytest.raises(TypeError, match="tile"):
        x2.repeat(2, 3)
    np.testing.assert_array_equal(np.asarray(x2.tile((2, 3))), torch.tensor(M2).repeat(2, 3))
    # transpose: two axes are torch's swap unless NumPy's permutation means the same
    np.testing.assert_array_equal(np.asarray(x2.transpose(1, 0)), M2.T)
    np.testing.assert_array_equal(np.asarray(x2.transpose((0, 1))), M2)
    for bad in ((x2, (0, 1)), (x2, (-2, -1))):   # 2-D: NumPy's identity, torch's swap
        with pytest.raises(TypeError, match="swapaxes"):
            bad[0].transpose(*bad[1])
    # two axes of a 3-D array can only be torch's swap (NumPy's permutation names all three)
    for dims in ((1, 2), (0, 1), (-2, -1), (2, 0)):
        np.testing.assert_array_equal(np.asarray(x3.transpose(*dims)),
                                      torch.tensor(A).transpose(*dims).numpy())
    # flatten: NumPy's with no argument or order, torch's with integer dims
    assert x3.flatten().shape == (24,) and x3.flatten("C").shape == (24,)
    np.testing.assert_array_equal(np.asarray(x3.flatten(1)), torch.tensor(A).flatten(1))
    np.testing.assert_array_equal(np.asarray(x3.flatten(0, 1)), torch.tensor(A).flatten(0, 1))
    # sort is NumPy's (in place, None); torch's keywords give torch's (values, indices)
    s = gp.asarray(M2, device=device)
    assert s.sort(axis=0) is None
    np.testing.assert_array_equal(np.asarray(s), np.sort(M2, axis=0))
    for kw in ({"dim": 1}, {"descending": True}):
        r, tr = gp.asarray(M2, device=device).sort(**kw), torch.tensor(M2).sort(**kw)
        np.testing.assert_array_equal(np.asarray(r.values), tr.values)
        np.testing.assert_array_equal(np.asarray(r.indices), tr.indices)
    np.testing.assert_array_equal(np.asarray(x2.argsort(dim=1, descending=True)),
                                  torch.tensor(M2).argsort(dim=1, descending=True))
    # nonzero is NumPy's tuple by default
    nz = x2.__gt__(0).nonzero()
    assert isinstance(nz, tuple) and len(nz) == 2
    # dot: NumPy's on 2-D (torch refuses), both on 1-D
    np.testing.assert_allclose(np.asarray(x2.dot(gp.asarray(N2, device=device))), M2 @ N2,
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(x3.take(gp.asarray(SEL, device=device))),
                               torch.tensor(A).take(torch.tensor(SEL)))
    # NumPy's functions that call these methods still compute on the device
    for got, want in ((np.round(x3, 1), np.round(A, 1)), (np.repeat(x2, 2, axis=0),
                      np.repeat(M2, 2, axis=0)), (np.take(x3, gp.asarray(SEL, device=device)),
                                                  np.take(A, SEL))):
        assert isinstance(got, gp.Array)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_errors(device):
    x = gp.asarray(A, device=device)
    m = gp.asarray(M2, device=device)
    cases = [
        (RuntimeError, "at most 2", lambda: x.t()),
        (ValueError, "at least one", lambda: x.clamp()),
        (TypeError, "bool array", lambda: x.masked_fill(x, 1.0)),
        (IndexError, "narrow", lambda: x.narrow(1, 2, 2)),
        (IndexError, "", lambda: x.unsqueeze(4)),
        (IndexError, "", lambda: x.unbind(3)),
        (ValueError, "add up", lambda: x.split([1, 1], 1)),
        (ValueError, "positive", lambda: x.chunk(0)),
        (ValueError, "2-D", lambda: x.mm(m)),
        (ValueError, "3-D", lambda: m.bmm(m)),
        (ValueError, "1-D or 2-D", lambda: x.dot(x)),
        (ValueError, "expand", lambda: x.expand(3, 4)),
        (ValueError, "leading", lambda: x.expand(-1, 2, 3, 4)),
        (NotImplementedError, "reduce", lambda: x.scatter(1, gp.asarray(IDX, device=device),
                                                          x, reduce="multiply")),
        (TypeError, "exactly one", lambda: x.scatter(1, gp.asarray(IDX, device=device))),
        (ValueError, "dimensions", lambda: x.gather(1, gp.asarray(SEL, device=device))),
        (IndexError, "dim", lambda: x.unique(dim=5)),   # (dim= is supported: test_torch_hunt9)
        (ValueError, "nuc", lambda: x.norm(p="nuc")),
        (ValueError, "rounding_mode", lambda: x.div(x, rounding_mode="ceil")),
        (ValueError, "device", lambda: x.to("cuda")),
        (TypeError, "integer", lambda: x.view(2.0, 12)),
        (TypeError, "memory_format", lambda: x.clone(memory_format="channels_last")),
    ]
    for exc, match, call in cases:
        with pytest.raises(exc, match=match or None):
            call()
