"""A PyTorch user porting a model to grilly (a helper's hunt): orthogonal parametrization,
CrossMapLRN2d, conv1d's error messages, nearest grid_sample's grid gradient, Tensor.diagonal
as a view, gp.diff's prepend/append gradients and scatter_reduce("prod"), each against torch
2.13 CPU on every device; each failed before its fix."""
import numpy as np
import pytest

import grilly as gp
import grilly.nn as nn
import grilly.nn.functional as F
from grilly.nn.utils import parametrizations as gpar
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
from torch.nn.utils import parametrizations as tpar  # noqa: E402

_RS = np.random.RandomState(7)


def _a(x, device, grad=False):
    a = gp.asarray(np.asarray(x), device=device)
    return a.requires_grad_() if grad else a


@pytest.mark.parametrize("shape,omap,triv", [((3, 3), None, True), ((2, 4), "cayley", True),
                                             ((4, 3), "householder", False)])
def test_orthogonal_linear(device, shape, omap, triv):
    o, i = shape
    w, b = _RS.randn(o, i).astype(np.float32), _RS.randn(o).astype(np.float32)
    tl = torch.nn.Linear(i, o)
    tl.weight.data, tl.bias.data = torch.tensor(w), torch.tensor(b)
    gl = nn.Linear(i, o).to(device)
    with gp.no_grad():
        gl.weight[...], gl.bias[...] = _a(w, device), _a(b, device)
    tpar.orthogonal(tl, orthogonal_map=omap, use_trivialization=triv)
    gpar.orthogonal(gl, orthogonal_map=omap, use_trivialization=triv)
    if triv:   # the base's completion columns are random: torch's copied in
        with gp.no_grad():
            gl.parametrizations.weight[0].base[...] = _a(
                tl.parametrizations.weight[0].base.numpy(), device)
    q = gl.weight
    assert q.device == gl.bias.device
    assert_close(q, tl.weight.detach().numpy(), rtol=1e-5, atol=2e-6)
    qq = q @ q.mT if o < i else q.mT @ q
    assert_close(qq, np.eye(min(o, i), dtype=np.float32), atol=2e-6, rtol=0)
    x, g = _RS.randn(2, i).astype(np.float32), _RS.randn(2, o).astype(np.float32)
    (tl(torch.tensor(x)) * torch.tensor(g)).sum().backward()
    (gl(_a(x, device)) * _a(g, device)).sum().backward()
    to, go = tl.parametrizations.weight.original, gl.parametrizations.weight.original
    assert_close(go, to.detach().numpy(), atol=2e-6, rtol=1e-5)
    assert_close(go.grad, to.grad.numpy(), atol=1e-5, rtol=1e-4)
    # assignment runs right_inverse: the weight becomes the (orthogonalized) value
    r = np.linalg.qr(_RS.randn(max(o, i), min(o, i)))[0].astype(np.float32)
    r = r.T if o < i else r
    with torch.no_grad():
        tl.weight = torch.tensor(r)
    gl.weight = _a(r, device)
    assert_close(gl.weight, tl.weight.detach().numpy(), atol=2e-6, rtol=1e-5)


def test_orthogonal_errors(device):
    lin = nn.Linear(3, 3).to(device)
    with pytest.raises(ValueError, match="orthogonal_map"):
        gpar.orthogonal(lin, orthogonal_map="qr")
    with pytest.raises(ValueError, match="matrix"):
        gpar.orthogonal(lin, "bias")
    gpar.orthogonal(lin, orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="Cayley"):
        lin.weight = _a(np.eye(3, dtype=np.float32), device)


@pytest.mark.parametrize("size,c", [(5, 6), (4, 3)])
def test_cross_map_lrn2d(device, size, c):
    x = _RS.randn(2, c, 2, 3).astype(np.float32)
    g = _RS.randn(2, c, 2, 3).astype(np.float32)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)(tx)
    (ty * torch.tensor(g)).sum().backward()
    gx = _a(x, device, grad=True)
    gy = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)(gx)
    (gy * _a(g, device)).sum().backward()
    assert gy.device == gx.device
    assert_close(gy, ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert_close(gx.grad, tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="CrossMapLRN2d.*4D"):
        nn.CrossMapLRN2d(size)(gx[0])


def test_conv1d_errors_name_conv1d(device):
    x = _a(_RS.randn(2, 3, 8).astype(np.float32), device)
    w = _a(_RS.randn(4, 3, 3).astype(np.float32), device)
    wt = _a(_RS.randn(3, 4, 3).astype(np.float32), device)
    for call, what in [(lambda: nn.Conv1d(5, 4, 3).to(device)(x), "channels"),
                       (lambda: nn.Conv1d(3, 4, 9).to(device)(x), "larger"),
                       (lambda: F.conv1d(x, w, stride=0), r"stride.*\(0,\)"),
                       (lambda: F.conv1d(x, w, padding=-1), "padding"),
                       (lambda: F.conv1d(x, w, padding="full"), "padding"),
                       (lambda: F.conv1d(x, w, bias=gp.zeros(3, device=device)), "bias"),
                       (lambda: F.conv1d(x, w, groups=0), "groups")]:
        with pytest.raises(ValueError, match=what) as e:
            call()
        assert "conv1d" in str(e.value) and "conv2d" not in str(e.value)
    for call, what in [(lambda: F.conv_transpose1d(x, w), "channels"),
                       (lambda: F.conv_transpose1d(x, wt, stride=0), "stride"),
                       (lambda: F.conv_transpose1d(x, wt, output_padding=2), "output_padding"),
                       (lambda: F.conv_transpose1d(x, wt, bias=gp.zeros(3, device=device)),
                        "bias")]:
        with pytest.raises(ValueError, match=what) as e:
            call()
        assert "conv_transpose1d" in str(e.value) and "2d" not in str(e.value)
    # a conv2d bias of the wrong length was read past its end
    with pytest.raises(ValueError, match="conv2d: bias"):
        F.conv2d(_a(np.ones((1, 3, 4, 4), np.float32), device),
                 _a(np.ones((4, 3, 3, 3), np.float32), device), gp.zeros(3, device=device))
    # the valid calls still agree with torch
    assert_close(F.conv1d(x, w, padding="same"), torch.nn.functional.conv1d(
        torch.tensor(x.numpy()), torch.tensor(w.numpy()), padding="same").numpy(),
        rtol=1e-5, atol=1e-5)


def test_grid_sample_nearest_grid_grad(device):
    x = _RS.randn(1, 2, 4, 5).astype(np.float32)
    grid = _RS.uniform(-1.1, 1.1, (1, 3, 3, 2)).astype(np.float32)
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(grid, requires_grad=True)
    ty = torch.nn.functional.grid_sample(tx, tg, mode="nearest", align_corners=False)
    (ty * ty).sum().backward()
    gx, gg = _a(x, device, True), _a(grid, device, True)
    gy = F.grid_sample(gx, gg, mode="nearest", align_corners=False)
    (gy * gy).sum().backward()
    assert_close(gy, ty.detach().numpy())
    assert_close(gx.grad, tx.grad.numpy(), rtol=1e-6, atol=1e-6)
    assert gg.grad is not None and gg.grad.device == gg.device
    assert_close(gg.grad, tg.grad.numpy())


def test_diagonal_is_a_view(device):
    x = _RS.randn(3, 4).astype(np.float32)
    w = _RS.randn(3, 4).astype(np.float32)
    a, t = _a(x, device), torch.tensor(x)
    for lib in (a, t):
        lib.diagonal(1).fill_(7.0)
        lib.diagonal()[0] = 100.0
        lib.diagonal(dim1=1, dim2=0).mul_(2.0)
    assert_close(a, t.numpy())
    # written through in grad mode, the base's gradient follows (torch's CopySlices)
    leaf, tleaf = _a(x, device, True), torch.tensor(x, requires_grad=True)
    y, ty = leaf * 2.0, tleaf * 2.0
    for v in (y, ty):
        v.diagonal().mul_(3.0)
        v.diagonal(-1).fill_(0.5)
    (y * _a(w, device)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    assert_close(y, ty.detach().numpy())
    assert_close(leaf.grad, tleaf.grad.numpy())


def test_diff_prepend_append_grad(device):
    x, p, q = (_RS.randn(3, 4).astype(np.float32), _RS.randn(3, 2).astype(np.float32),
               _RS.randn(3, 1).astype(np.float32))
    w = _RS.randn(3, 5).astype(np.float32)
    gs = [_a(v, device, True) for v in (x, p, q)]
    ts = [torch.tensor(v, requires_grad=True) for v in (x, p, q)]
    gy = gp.diff(gs[0], n=2, axis=1, prepend=gs[1], append=gs[2])
    ty = torch.diff(ts[0], n=2, dim=1, prepend=ts[1], append=ts[2])
    (gy * _a(w, device)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    assert_close(gy, ty.detach().numpy())
    for g, t in zip(gs, ts):
        assert_close(g.grad, t.grad.numpy())


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod(device, include_self):
    s = _RS.randn(4, 3).astype(np.float32)
    src = _RS.randn(2, 3).astype(np.float32)
    s[2, 0] = src[0, 1] = src[1, 2] = 0.0   # zeros: the product of the others
    idx = np.array([[0, 1, 2], [2, 0, 0]])
    w = _RS.randn(4, 3).astype(np.float32)
    gs, gsrc = _a(s, device, True), _a(src, device, True)
    ts, tsrc = torch.tensor(s, requires_grad=True), torch.tensor(src, requires_grad=True)
    gy = gs.scatter_reduce(0, _a(idx, device), gsrc, "prod", include_self=include_self)
    ty = ts.scatter_reduce(0, torch.tensor(idx), tsrc, "prod", include_self=include_self)
    (gy * _a(w, device)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    assert_close(gy, ty.detach().numpy())
    assert_close(gs.grad, ts.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(gsrc.grad, tsrc.grad.numpy(), rtol=1e-5, atol=1e-6)
    # integers too
    gi = _a(np.arange(1, 7).reshape(2, 3), device).scatter_reduce(
        1, _a([[0, 0], [1, 1]], device), _a([[2, 3], [4, 5]], device), "prod")
    ti = torch.arange(1, 7).reshape(2, 3).scatter_reduce(
        1, torch.tensor([[0, 0], [1, 1]]), torch.tensor([[2, 3], [4, 5]]), "prod")
    np.testing.assert_array_equal(np.asarray(gi), ti.numpy())


def test_clip_bounds_given_by_keyword_get_gradients(device):
    # gp.clip(x, min=t): the recorder differentiated positional Arrays only, so a bound given
    # by keyword (torch's clamp(x, min=t)) got no gradient
    torch = pytest.importorskip("torch")
    x, m, mx = np.array([-2.0, 0.5, 3.0, 1.0]), np.array([0.0, 1.0, 0.0, 1.0]), np.array(
        [2.0, 2.0, 2.0, 0.5])
    w = np.array([1.0, 2.0, 3.0, 4.0])
    gx, gm, gmx = (gp.asarray(v, device=device) for v in (x, m, mx))
    gx.requires_grad = gm.requires_grad = gmx.requires_grad = True
    (gx.clip(min=gm, max=gmx) * gp.asarray(w, device=device)).sum().backward()
    tx, tm, tmx = (torch.tensor(v, requires_grad=True) for v in (x, m, mx))
    (torch.clamp(tx, min=tm, max=tmx) * torch.tensor(w)).sum().backward()
    for g, t in ((gx, tx), (gm, tm), (gmx, tmx)):
        np.testing.assert_array_equal(np.asarray(g.grad), t.grad.numpy())


def test_factories_take_torchs_requires_grad(device):
    # torch.zeros(3, requires_grad=True) and friends: grilly's factories refused the keyword
    torch = pytest.importorskip("torch")
    cases = [("zeros", (3,)), ("ones", ((2, 2),)), ("full", ((3,), 1.5)), ("arange", (0.0, 3.0)),
             ("linspace", (0.0, 1.0, 4)), ("eye", (2,))]
    for name, args in cases:
        targs = ((3,), 1.5) if name == "full" else args
        t = getattr(torch, name)(*targs, requires_grad=True, dtype=torch.float64)
        g = getattr(gp, name)(*args, requires_grad=True, dtype=gp.float64, device=device)
        assert g.requires_grad and t.requires_grad
        (g * g).sum().backward()
        (t * t).sum().backward()
        # (linspace: NumPy's values, which may differ from torch's in the last bit)
        np.testing.assert_allclose(np.asarray(g.grad), t.grad.numpy(), rtol=1e-15)
    base = gp.ones((2,), device=device)
    for name in ("zeros_like", "ones_like", "empty_like"):
        assert getattr(gp, name)(base, requires_grad=True).requires_grad
    assert gp.full_like(base, 2.0, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating"):   # torch's error for an integer one
        gp.arange(3, requires_grad=True, device=device)


def test_torch_top_level_spellings(device):
    # torch.zeros(2, 3), torch.squeeze(x, dim=), torch.topk(x, k, dim=), torch.softmax,
    # torch.relu, torch.mm, torch.as_tensor: TypeErrors or AttributeErrors before
    torch = pytest.importorskip("torch")
    a = np.array([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]])
    x, t = gp.asarray(a, device=device), torch.tensor(a)
    for name in ("zeros", "ones"):
        assert getattr(gp, name)(2, 3, device=device).shape == getattr(torch, name)(2, 3).shape
        np.testing.assert_array_equal(np.asarray(getattr(gp, name)(2, 3, dtype=gp.float32)),
                                      getattr(torch, name)(2, 3).numpy())
    assert gp.empty(4, 1, 2).shape == (4, 1, 2)
    assert gp.zeros(2, gp.float32).dtype == gp.float32   # NumPy's positional dtype still
    np.testing.assert_array_equal(np.asarray(gp.squeeze(gp.reshape(x, (2, 1, 3)), dim=1)),
                                  torch.squeeze(t.reshape(2, 1, 3), dim=1).numpy())
    assert gp.squeeze(x, dim=0).shape == (2, 3)   # torch's: a dim not of length one stays
    v, i = gp.topk(x, 2, dim=0, largest=False)
    tv, ti = torch.topk(t, 2, dim=0, largest=False)
    np.testing.assert_array_equal(np.asarray(v), tv.numpy())
    np.testing.assert_array_equal(np.asarray(i), ti.numpy())
    for name in ("softmax", "log_softmax"):
        np.testing.assert_allclose(np.asarray(getattr(gp, name)(x, 1)),
                                   getattr(torch, name)(t, 1).numpy(), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(gp.relu(x)), torch.relu(t).numpy())
    np.testing.assert_allclose(np.asarray(gp.mm(x, gp.matrix_transpose(x))),
                               torch.mm(t, t.T).numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="mm"):
        gp.mm(x, gp.ones(3, device=device))
    assert gp.as_tensor(x) is x and gp.as_tensor([1.0, 2.0], device=device).shape == (2,)


def test_dtype_names_numpy_and_torch_share():
    # dtype=torch.long / np.double: grilly had only the Array API's names
    torch = pytest.importorskip("torch")
    for name in ("long", "double", "half", "short", "cdouble"):
        want = np.dtype(str(getattr(torch, name)).split(".")[1])
        assert np.dtype(getattr(gp, name).name) == want == np.dtype(getattr(np, name))
    for name in ("longlong", "int_", "single", "intc", "ubyte", "ushort", "bool_"):
        assert np.dtype(getattr(gp, name).name) == np.dtype(getattr(np, name))
    assert not hasattr(gp, "byte")   # NumPy's int8, torch's uint8: neither meaning is taken
