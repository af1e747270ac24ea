"""Second-order gradients (create_graph=True, then a backward through the gradient) through the
layers whose first-order backward is a fused kernel: norms, conv2d, pooling, cross entropy and
attention, against PyTorch (a test-only oracle) in float64.

Each case is a gradient penalty: g = grad(sum(r * f(x)**2), x, create_graph=True) for a fixed
random positive r (a plain sum of squares is constant in x for a batch norm, so its penalty
would test nothing), then sum(g**2).backward(); g, x.grad and every parameter's .grad must
match torch's."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RTOL = 1e-7


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _g(t, device):
    return gp.asarray(t.detach().numpy(), device=device)


def _close(a, e):
    e = e.detach().numpy()
    assert_close(a, e, rtol=RTOL, atol=RTOL * max(1.0, float(np.abs(e).max())))


def _module(tmod, gmod, device):
    """``gmod`` in float64 on ``device`` with ``tmod``'s (float64) parameters and buffers."""
    gmod.to(device).double()
    res = gmod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})
    assert res.missing_keys == [] and res.unexpected_keys == []
    return gmod


def _penalty(tf, gf, inputs, device, tparams=(), gparams=()):
    """The gradient penalty of ``tf`` (torch) and ``gf`` (grilly) on the float64 tensors
    ``inputs``, compared: the gradients of every input, then the second-order gradients of the
    inputs and of the parameters."""
    txs = [x.clone().requires_grad_(True) for x in inputs]
    tout = tf(*txs)
    r = torch.rand(tout.shape, dtype=torch.float64) + 0.5
    tgs = torch.autograd.grad((r * tout ** 2).sum(), txs, create_graph=True)
    sum((g ** 2).sum() for g in tgs).backward()
    gxs = [_g(x, device) for x in inputs]
    for x in gxs:
        x.requires_grad_()
    ggs = gp.autograd.grad(gp.sum(_g(r, device) * gf(*gxs) ** 2), gxs, create_graph=True)
    sum(gp.sum(g ** 2) for g in ggs).backward()
    for gg, tg in zip(ggs, tgs):
        _close(gg, tg)
    for gx, tx in zip(gxs, txs):
        _close(gx.grad, tx.grad)
    tparams, gparams = list(tparams), list(gparams)
    assert len(tparams) == len(gparams)
    for gpar, tpar in zip(gparams, tparams):
        assert gpar.grad is not None
        _close(gpar.grad, tpar.grad)


def _randomize(tmod):
    """Affine parameters away from (1, 0), so that each term of the penalty shows."""
    with torch.no_grad():
        for name, p in tmod.named_parameters():
            p.copy_(torch.rand(p.shape, dtype=p.dtype) + 0.5 if "weight" in name
                    else torch.randn(p.shape, dtype=p.dtype))


def _check_module(tmod, gmod, x, device):
    tmod.double()
    gmod = _module(tmod, gmod, device)
    _penalty(tmod, gmod, [x], device, tmod.parameters(), gmod.parameters())


def _x(*shape):
    return torch.randn(*shape, dtype=torch.float64)


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,norm", [((5, 6), 6), ((2, 3, 4, 5), (4, 5))])
def test_layer_norm(device, shape, norm, affine):
    tmod = torch.nn.LayerNorm(norm, elementwise_affine=affine).double()
    _randomize(tmod)
    _check_module(tmod, nn.LayerNorm(norm, elementwise_affine=affine), _x(*shape), device)


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("cls,shape", [("BatchNorm2d", (3, 4, 5, 3)), ("BatchNorm1d", (6, 4)),
                                       ("BatchNorm1d", (3, 4, 5))])
def test_batch_norm_train(device, cls, shape, affine):
    tmod = getattr(torch.nn, cls)(4, affine=affine).double()
    _randomize(tmod)
    gmod = getattr(nn, cls)(4, affine=affine)
    _check_module(tmod, gmod, _x(*shape) * 2 + 1, device)
    for name in ("running_mean", "running_var"):   # the running stats see one update each
        _close(getattr(gmod, name), getattr(tmod, name))


@pytest.mark.parametrize("kw", [
    {},
    {"stride": 2, "padding": 1},
    {"padding": 2, "dilation": 2},
    {"groups": 2, "stride": (2, 1), "padding": (1, 0)},
    {"groups": 2, "dilation": (1, 2), "padding": "same", "bias": False},
    {"bias": False},
])
def test_conv2d(device, kw):
    _check_module(torch.nn.Conv2d(4, 6, 3, **kw), nn.Conv2d(4, 6, 3, **kw), _x(2, 4, 7, 8),
                  device)


def test_conv2d_rectangular_kernel(device):
    kw = {"stride": (1, 2), "padding": (2, 0)}
    _check_module(torch.nn.Conv2d(3, 2, (2, 3), **kw), nn.Conv2d(3, 2, (2, 3), **kw),
                  _x(2, 3, 5, 7), device)


def test_conv1d(device):
    kw = {"stride": 2, "padding": 1, "groups": 2}
    _check_module(torch.nn.Conv1d(4, 6, 3, **kw), nn.Conv1d(4, 6, 3, **kw), _x(3, 4, 11), device)


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": 3, "dilation": 2},
                                {"kernel_size": 3, "stride": 2, "ceil_mode": True}])
def test_max_pool2d(device, kw):
    _penalty(lambda x: TF.max_pool2d(x, **kw), lambda x: F.max_pool2d(x, **kw), [_x(2, 3, 7, 6)],
             device)


def test_avg_pool2d(device):
    kw = {"kernel_size": 3, "stride": 2, "padding": 1}
    _penalty(lambda x: TF.avg_pool2d(x, **kw), lambda x: F.avg_pool2d(x, **kw), [_x(2, 3, 7, 6)],
             device)


CLASS_W = torch.tensor([0.2, 1.0, 2.0, 0.5, 1.5], dtype=torch.float64)


@pytest.mark.parametrize("kw", [
    {},                                     # the fused _CrossEntropy node
    {"reduction": "sum"},
    {"ignore_index": -1},                   # fused, with a row dropped
    {"weight": CLASS_W},
    {"ignore_index": 2},
    {"label_smoothing": 0.15},
    {"weight": CLASS_W, "ignore_index": 1, "label_smoothing": 0.1, "reduction": "sum"},
    {"reduction": "none"},
])
def test_cross_entropy(device, kw):
    t = torch.tensor([0, 3, 2, 1, 4, 2])
    if kw.get("ignore_index") == -1:
        t[1] = -1
    gkw = {k: (_g(v, device) if k == "weight" else v) for k, v in kw.items()}
    gt = _g(t, device)
    _penalty(lambda x: TF.cross_entropy(x, t, **kw), lambda x: F.cross_entropy(x, gt, **gkw),
             [_x(6, 5)], device)


def test_cross_entropy_spatial_and_probabilities(device):
    t = torch.randint(0, 5, (2, 3, 2))
    p = torch.softmax(_x(4, 5), 1)
    gt, gpr, gw = _g(t, device), _g(p, device), _g(CLASS_W, device)
    _penalty(lambda x: TF.cross_entropy(x, t, weight=CLASS_W),
             lambda x: F.cross_entropy(x, gt, weight=gw), [_x(2, 5, 3, 2)], device)
    _penalty(lambda x: TF.cross_entropy(x, p, label_smoothing=0.1),
             lambda x: F.cross_entropy(x, gpr, label_smoothing=0.1), [_x(4, 5)], device)


@pytest.mark.parametrize("case", ["plain", "causal", "causal_l_gt_s", "causal_l_lt_s",
                                  "additive_mask", "bool_mask"])
def test_scaled_dot_product_attention(device, case):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    # (a causal mask with L != S keeps key j <= query i: the top-left corner, as torch's)
    lq, sk = {"causal_l_gt_s": (6, 4), "causal_l_lt_s": (4, 6)}.get(case, (5, 5))
    q, k, v = _x(2, 3, lq, 4), _x(2, 3, sk, 4), _x(2, 3, sk, 3)
    kw = {"is_causal": case.startswith("causal")}
    gkw = dict(kw)
    if case == "additive_mask":
        kw["attn_mask"] = _x(3, 1, sk)             # broadcast over the batch and the queries
        gkw["attn_mask"] = _g(kw["attn_mask"], device)
    elif case == "bool_mask":
        m = torch.rand(2, 1, lq, sk) > 0.4
        m[..., 0] = True                            # every query sees a key
        kw["attn_mask"], gkw["attn_mask"] = m, _g(m, device)
    with sdpa_kernel(SDPBackend.MATH):   # torch's fused CPU kernel has no double backward
        _penalty(lambda *a: TF.scaled_dot_product_attention(*a, **kw),
                 lambda *a: F.scaled_dot_product_attention(*a, **gkw), [q, k, v], device)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_node_with_dropout_multiplier(device, causal):
    """The _Attention node itself with a dropout multiplier (0 or 1/(1-p)) on the
    probabilities, as scaled_dot_product_attention(dropout_p=...) draws it."""
    q, k, v = _x(2, 2, 5, 3), _x(2, 2, 6, 3), _x(2, 2, 6, 4)
    drop = (torch.rand(2, 2, 5, 6) >= 0.3).double() / 0.7
    bias = _x(1, 2, 1, 6)
    scale = 0.6

    def ref(q, k, v):
        s = q @ k.transpose(-1, -2) * scale + bias
        if causal:
            s = s.masked_fill(torch.ones(5, 6, dtype=torch.bool).triu(1), -float("inf"))
        return (torch.softmax(s, -1) * drop) @ v

    gd, gb = _g(drop, device), _g(bias, device)
    _penalty(ref, lambda q, k, v: F._Attention.apply(q, k, v, gb, gd, causal=causal,
                                                      scale=scale, block=4),
             [q, k, v], device)


def test_multihead_attention(device):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        tmod = torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
        gmod = _module(tmod, nn.MultiheadAttention(8, 2, batch_first=True), device)
        _penalty(lambda x: tmod(x, x, x, need_weights=False)[0],
                 lambda x: gmod(x, x, x, need_weights=False)[0], [_x(2, 5, 8)], device,
                 tmod.parameters(), gmod.parameters())


def test_small_cnn(device):
    """conv - batch norm - ReLU - max pool - Linear, end to end in training mode."""
    def net(m):
        return m.Sequential(m.Conv2d(3, 4, 3, padding=1), m.BatchNorm2d(4), m.ReLU(),
                            m.MaxPool2d(2), m.Flatten(), m.Linear(4 * 3 * 3, 5))
    tmod = net(torch.nn)
    _randomize(tmod[1])
    _check_module(tmod, net(nn), _x(4, 3, 6, 6), device)


BACKWARD_KERNELS = ("conv2d_backward", "batch_norm_backward", "max_pool2d_backward",
                    "layer_norm_backward", "attention_backward", "cross_entropy_backward")


def test_first_order_runs_the_fused_kernels(device, monkeypatch):
    """Without create_graph each layer's backward is its fused kernel, once, as before; with
    it no such kernel runs (the differentiable compositions do), and the values agree."""
    calls = []
    for name in BACKWARD_KERNELS:
        k = device.kernels[name]
        monkeypatch.setitem(device.kernels, name,
                            lambda *a, _k=k, _n=name: calls.append(_n) or _k(*a))
    tmod = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                               torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                               torch.nn.LayerNorm(36)).double()
    gmod = _module(tmod, nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4),
                                       nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                       nn.LayerNorm(36)), device)
    x = _g(_x(4, 3, 6, 6), device)
    x.requires_grad_()
    t = gp.asarray(np.array([0, 3, 5, 1]), device=device)

    def loss(x):
        h = gp.reshape(gmod(x), (4, 4, 3, 3))
        a = F.scaled_dot_product_attention(h, h, h)
        return F.cross_entropy(gp.reshape(a, (4, 36)), t)
    (g0,) = gp.autograd.grad(loss(x), [x])
    assert sorted(calls) == sorted(BACKWARD_KERNELS)
    (g1,) = gp.autograd.grad(loss(x), [x], create_graph=True)
    assert sorted(calls) == sorted(BACKWARD_KERNELS)
    assert not g0.requires_grad and g1.requires_grad
    assert_close(g0, np.asarray(g1), rtol=1e-9, atol=1e-12)


def test_conv2d_composed(device, monkeypatch):
    """A device without the conv family's kernels: the compositions, twice differentiable."""
    for name in ("im2col", "col2im", "conv2d", "conv2d_backward", "max_pool2d",
                 "max_pool2d_backward"):
        monkeypatch.delitem(device.kernels, name, raising=False)
    kw = {"stride": 2, "padding": 1, "groups": 2}
    tmod = torch.nn.Sequential(torch.nn.Conv2d(4, 6, 3, **kw), torch.nn.MaxPool2d(2, 1))
    _check_module(tmod, nn.Sequential(nn.Conv2d(4, 6, 3, **kw), nn.MaxPool2d(2, 1)),
                  _x(2, 4, 7, 8), device)
