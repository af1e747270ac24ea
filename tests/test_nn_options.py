"""Constructor and forward options of grilly.nn against torch.nn (a test-only oracle): options
that were silently ignored or missing (inplace, padding modes, proj_size, from_pretrained,
remove_duplicate, ...), each with outputs and input/parameter gradients against torch."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
RTOL, ATOL = 1e-4, 1e-5


def _np(t):
    return t.detach().numpy()


def _g(x, device, requires_grad=False):
    a = gp.asarray(_np(x), device=device)
    if requires_grad:
        a.requires_grad_()
    return a


def _close(a, e, rtol=RTOL, atol=ATOL):
    assert_close(a, _np(e) if hasattr(e, "detach") else e, rtol=rtol, atol=atol)


def _copy(tmod, gmod, device):
    gmod.to(device)
    res = gmod.load_state_dict({k: _np(v) for k, v in tmod.state_dict().items()})
    assert res.missing_keys == [] and res.unexpected_keys == []


def _check(tmod, gmod, x, device, pick=lambda o: o):
    """Forward both on x; outputs, the input's gradient and every parameter's against torch."""
    _copy(tmod, gmod, device)
    tx = x.clone().requires_grad_()
    gx = _g(x, device, True)
    t, g = pick(tmod(tx)), pick(gmod(gx))
    _close(g, t)
    cot = torch.randn(t.shape)
    (t * cot).sum().backward()
    gp.sum(g * _g(cot, device)).backward()
    _close(gx.grad, tx.grad)
    tp = dict(tmod.named_parameters())
    gpn = dict(gmod.named_parameters())
    assert list(gpn) == list(tp)
    for name, p in gpn.items():
        _close(p.grad, tp[name].grad)


# ---- inplace=True: the input is overwritten and returned (it was silently ignored) -----------
INPLACE = [("ReLU", {}), ("ReLU6", {}), ("LeakyReLU", {"negative_slope": 0.2}),
           ("ELU", {"alpha": 0.7}), ("SiLU", {})]


@pytest.mark.parametrize("name,kw", INPLACE)
def test_inplace_activation_overwrites_input_and_matches_gradients(device, name, kw):
    torch.manual_seed(0)
    x = torch.randn(3, 5) * 4
    # a non-leaf input (a leaf that requires grad raises, as in torch)
    tx = x.clone().requires_grad_()
    gx = _g(x, device, True)
    th, gh = tx * 1.5, gx * 1.5
    t = getattr(torch.nn, name)(**kw, inplace=True)(th)
    g = getattr(nn, name)(**kw, inplace=True)(gh)
    assert g is gh
    _close(gh, th)
    cot = torch.randn(t.shape)
    (t * cot).sum().backward()
    gp.sum(g * _g(cot, device)).backward()
    _close(gx.grad, tx.grad)
    assert repr(getattr(nn, name)(**kw, inplace=True)) == repr(getattr(torch.nn, name)(**kw, inplace=True))
    # without grad: overwritten too
    y = _g(x, device)
    assert getattr(nn, name)(**kw, inplace=True)(y) is y
    _close(y, getattr(torch.nn, name)(**kw)(x))
    # a leaf that requires grad
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(nn, name)(**kw, inplace=True)(_g(x, device, True))


def test_inplace_functional_and_dropout(device):
    x = torch.randn(4, 6)
    y = _g(x, device)
    assert F.relu(y, inplace=True) is y
    _close(y, torch.relu(x))
    y = gp.ones((200,), device=device)
    d = nn.Dropout(0.5, inplace=True)
    assert d(y) is y
    v = np.asarray(y)
    assert set(np.unique(v)) <= {0.0, 2.0} and 0 < np.count_nonzero(v) < 200
    d.eval()
    z = _g(x, device)
    assert d(z) is z


@pytest.mark.parametrize("name", ["Tanh", "Sigmoid", "Softplus", "GELU", "Softmax"])
def test_inplace_refused_where_torch_has_none(name):
    # torch's Tanh, Sigmoid, Softplus, GELU and Softmax take no inplace: it was dropped silently
    with pytest.raises(TypeError, match=f"{name}: unexpected argument 'inplace'"):
        getattr(nn, name)(inplace=True)


# ---- pooling --------------------------------------------------------------------------------
def test_avg_pool1d_has_no_divisor_override_and_reprs_match(device):
    # AvgPool1d took divisor_override (from AvgPool2d) and ignored it; torch's has none
    with pytest.raises(TypeError):
        nn.AvgPool1d(3, divisor_override=2)
    assert repr(nn.AvgPool1d(3)) == repr(torch.nn.AvgPool1d(3))
    assert repr(nn.AvgPool2d(2, padding=1, count_include_pad=False)) == \
        repr(torch.nn.AvgPool2d(2, padding=1, count_include_pad=False))
    x = torch.randn(2, 3, 9)
    kw = {"stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False}
    _check(torch.nn.AvgPool1d(3, **kw), nn.AvgPool1d(3, **kw), x, device)


# ---- padding modes --------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes(device, mode):
    torch.manual_seed(1)
    x = torch.randn(2, 3, 4, 5)
    tx = x.clone().requires_grad_()
    gx = _g(x, device, True)
    pads = (2, 1, 3, 0)
    t = torch.nn.functional.pad(tx, pads, mode=mode)
    g = F.pad(gx, pads, mode=mode)
    _close(g, t)
    cot = torch.randn(t.shape)
    (t * cot).sum().backward()
    gp.sum(g * _g(cot, device)).backward()
    _close(gx.grad, tx.grad)


def test_pad_constant_crops_with_negative_amounts_and_refuses_bad_modes(device):
    x = torch.randn(3, 4, 5)
    _close(F.pad(_g(x, device), (-1, 2, 1, -2), value=0.5),
           torch.nn.functional.pad(x, (-1, 2, 1, -2), value=0.5))
    with pytest.raises(ValueError, match="pad: mode must be one of"):
        F.pad(_g(x, device), (1, 1), mode="mirror")
    with pytest.raises(ValueError, match="reflect"):
        F.pad(_g(x, device), (5, 0), mode="reflect")


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("cls,kw,shape", [
    ("Conv2d", {"padding": (1, 2), "stride": 2}, (2, 4, 6, 7)),
    ("Conv2d", {"padding": "same", "dilation": 2, "groups": 2}, (1, 4, 6, 7)),
    ("Conv1d", {"padding": 2, "bias": False}, (2, 4, 9)),
])
def test_conv_padding_mode(device, mode, cls, kw, shape):
    # padding_mode other than 'zeros' raised NotImplementedError
    torch.manual_seed(2)
    tm = getattr(torch.nn, cls)(4, 6, 3, padding_mode=mode, **kw)
    gm = getattr(nn, cls)(4, 6, 3, padding_mode=mode, **kw)
    assert repr(gm) == repr(tm)
    _check(tm, gm, torch.randn(*shape), device)


def test_conv_bad_padding_options_raise_at_construction():
    with pytest.raises(ValueError, match="Conv2d: padding_mode"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="Conv1d: padding='same' is not supported for strided"):
        nn.Conv1d(2, 2, 3, padding="same", stride=2)


# ---- embedding ------------------------------------------------------------------------------
def test_embedding_from_pretrained_and_flags(device):
    w = torch.randn(6, 3)
    tm = torch.nn.Embedding.from_pretrained(w, padding_idx=1)
    gm = nn.Embedding.from_pretrained(_g(w, device), padding_idx=1)
    assert not gm.weight.requires_grad and gm.padding_idx == 1
    idx = torch.tensor([[0, 1, 5], [2, 2, 4]])
    _close(gm(_g(idx, device)), tm(idx))
    gm2 = nn.Embedding.from_pretrained(_g(w, device), freeze=False)
    assert gm2.weight.requires_grad
    nn.Embedding(4, 2, scale_grad_by_freq=False, sparse=False)   # torch's defaults, accepted
    with pytest.raises(NotImplementedError, match="Embedding: sparse=True"):
        nn.Embedding(4, 2, sparse=True)
    assert nn.Embedding(4, 2, scale_grad_by_freq=True).scale_grad_by_freq   # (test_nlp_hunt5)


# ---- LSTM proj_size, BatchNorm bias ---------------------------------------------------------
@pytest.mark.parametrize("kw", [{"proj_size": 2}, {"proj_size": 3, "num_layers": 2,
                                                   "bidirectional": True, "batch_first": True}])
def test_lstm_proj_size(device, kw):
    torch.manual_seed(3)
    tm, gm = torch.nn.LSTM(5, 4, **kw), nn.LSTM(5, 4, **kw)
    assert repr(gm) == repr(tm)
    x = torch.randn(3, 2, 5)
    _check(tm, gm, x, device, pick=lambda o: o[0])
    dirs = 2 if kw.get("bidirectional") else 1
    nl = kw.get("num_layers", 1) * dirs
    n = 3 if kw.get("batch_first") else 2   # h0/c0 are (layers * dirs, N, size) either way
    h0, c0 = torch.randn(nl, n, kw["proj_size"]), torch.randn(nl, n, 4)
    t_out, (th, tc) = tm(x, (h0, c0))
    g_out, (gh, gc) = gm(_g(x, device), (_g(h0, device), _g(c0, device)))
    _close(g_out, t_out)
    _close(gh, th)
    _close(gc, tc)
    with pytest.raises(ValueError, match="LSTM: proj_size"):
        nn.LSTM(5, 4, proj_size=4)


def test_batch_norm_bias_false(device):
    try:
        tm = torch.nn.BatchNorm1d(3, bias=False)
    except TypeError:   # (torch before 2.13 has no bias= there: no oracle)
        pytest.skip("this torch's BatchNorm1d takes no bias=")
    gm = nn.BatchNorm1d(3, bias=False)
    assert gm.bias is None
    _check(tm, gm, torch.randn(5, 3, 2), device)


# ---- module API -----------------------------------------------------------------------------
def test_named_members_remove_duplicate_and_prefix_match_torch():
    def build(M):
        class Net(M.Module):
            def __init__(self):
                super().__init__()
                self.a = M.Linear(2, 3)
                self.seq = M.Sequential(M.Conv1d(1, 2, 1), M.BatchNorm1d(2))
                self.b = self.a
        return Net()

    t, g = build(torch.nn), build(nn)
    for fn in ("named_parameters", "named_buffers", "named_modules"):
        for kw in ({}, {"prefix": "m"}, {"remove_duplicate": False},
                   {"prefix": "m", "remove_duplicate": False}):
            assert [n for n, _ in getattr(g, fn)(**kw)] == [n for n, _ in getattr(t, fn)(**kw)]


def test_to_keeps_parameter_objects(device):
    # torch's Module.to() converts param.data in place: an optimizer made before .to() still
    # holds the model's parameters (grilly made new Parameter objects, so the optimizer
    # updated stale copies and the model never trained)
    np.random.seed(0)
    m = nn.Linear(3, 2)
    o = gp.optim.SGD(m.parameters(), lr=0.1)
    w, b = m.weight, m.bias
    x = np.random.standard_normal((4, 3)).astype(np.float32)
    m(gp.asarray(x)).sum().backward()   # a gradient before the move moves along
    m.to(device)
    assert m.weight is w and m.bias is b and w.device == gp.asarray(x, device=device).device
    assert w.grad.device == w.device
    o.zero_grad()
    before = np.asarray(w).copy()
    y = m(gp.asarray(x, device=device))
    (y * y).sum().backward()
    g = np.asarray(w.grad).copy()
    o.step()
    np.testing.assert_allclose(np.asarray(m.weight), before - 0.1 * g, rtol=1e-6, atol=1e-7)
    m.to(gp.float64)
    assert m.weight is w and w.dtype == gp.float64


_INTERP = [((2, 3, 5, 7), "nearest", dict(size=(9, 4))), ((2, 3, 5, 7), "nearest", dict(scale_factor=1.7)),
           ((2, 3, 5, 7), "nearest-exact", dict(size=(3, 11))),
           ((2, 3, 5, 7), "bilinear", dict(size=(9, 4))),
           ((2, 3, 5, 7), "bilinear", dict(size=(9, 4), align_corners=True)),
           ((2, 3, 5, 7), "bilinear", dict(scale_factor=2.5)),
           ((2, 3, 5, 7), "bilinear", dict(scale_factor=0.5, align_corners=True)),
           ((2, 3, 5, 7), "bilinear", dict(scale_factor=1.3, recompute_scale_factor=True)),
           ((2, 3, 6), "linear", dict(size=13)), ((2, 3, 6), "nearest", dict(scale_factor=2)),
           ((1, 1, 1, 1), "bilinear", dict(size=(3, 3)))]


@pytest.mark.parametrize("shape,mode,kw", _INTERP, ids=[f"{m}-{k}" for _, m, k in _INTERP])
def test_interpolate_as_torch(device, shape, mode, kw):
    # F.interpolate and nn.Upsample did not exist; values and input gradients against torch's
    r = np.random.default_rng(7)
    h = r.standard_normal(shape).astype(np.float32)
    t = torch.tensor(h, requires_grad=True)
    ty = torch.nn.functional.interpolate(t, mode=mode, **kw)
    w = r.standard_normal(tuple(ty.shape)).astype(np.float32)
    (ty * torch.tensor(w)).sum().backward()
    x = gp.asarray(h, device=device)
    x.requires_grad_()
    y = F.interpolate(x, mode=mode, **kw)
    assert y.shape == tuple(ty.shape)
    np.testing.assert_allclose(np.asarray(y), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    gp.sum(y * gp.asarray(w, device=device)).backward()
    np.testing.assert_allclose(np.asarray(x.grad), t.grad.numpy(), rtol=1e-5, atol=1e-5)
    up = nn.Upsample(mode=mode, **kw)
    np.testing.assert_array_equal(np.asarray(up(gp.asarray(h, device=device))), np.asarray(y))


def test_interpolate_errors():
    x = gp.ones((1, 1, 4, 4))
    for kw, err, match in [(dict(size=2, mode="lanczos"), NotImplementedError, "lanczos"),
                           (dict(size=2, mode="linear"), ValueError, "3-D"),
                           (dict(mode="nearest"), ValueError, "exactly one"),
                           (dict(size=2, mode="nearest", align_corners=True), ValueError,
                            "align_corners"),
                           (dict(size=(2, 0)), ValueError, "positive")]:
        with pytest.raises(err, match=match):
            F.interpolate(x, **kw)
    assert repr(nn.Upsample(scale_factor=2, mode="bilinear")) == \
        repr(torch.nn.Upsample(scale_factor=2, mode="bilinear"))


@pytest.mark.parametrize("kdim,vdim,batch_first,bias", [(5, 3, True, True), (5, 8, False, True),
                                                        (8, 6, True, False)])
def test_multihead_attention_kdim_vdim(device, kdim, vdim, batch_first, bias):
    # kdim/vdim other than embed_dim (cross attention from other feature sizes) raised
    # NotImplementedError; now torch's separate q/k/v projection weights, state_dict keys and
    # results (values, need_weights, input and parameter gradients)
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, bias=bias, kdim=kdim, vdim=vdim,
                                     batch_first=batch_first)
    gm = nn.MultiheadAttention(8, 2, bias=bias, kdim=kdim, vdim=vdim, batch_first=batch_first)
    sd = {k: v.detach().numpy() for k, v in tm.state_dict().items()}
    assert sorted(k for k, _ in gm.named_parameters()) == sorted(sd)
    gm.load_state_dict(sd)
    gm.to(device)
    r = np.random.default_rng(3)
    lead = (lambda b, s: (b, s)) if batch_first else (lambda b, s: (s, b))
    hq = r.standard_normal(lead(2, 4) + (8,)).astype(np.float32)
    hk = r.standard_normal(lead(2, 6) + (kdim,)).astype(np.float32)
    hv = r.standard_normal(lead(2, 6) + (vdim,)).astype(np.float32)
    tq, tk, tv = (torch.tensor(h, requires_grad=True) for h in (hq, hk, hv))
    to, tw = tm(tq, tk, tv)
    (to.sum() + tw.sum()).backward()
    gq, gk, gv = (gp.asarray(h, device=device) for h in (hq, hk, hv))
    for a in (gq, gk, gv):
        a.requires_grad_()
    go, gw = gm(gq, gk, gv)
    (go.sum() + gw.sum()).backward()
    np.testing.assert_allclose(np.asarray(go), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gw), tw.detach().numpy(), rtol=1e-4, atol=1e-5)
    for a, t in ((gq, tq), (gk, tk), (gv, tv)):
        np.testing.assert_allclose(np.asarray(a.grad), t.grad.numpy(), rtol=1e-4, atol=1e-5)
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(np.asarray(dict(gm.named_parameters())[name].grad),
                                   p.grad.numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="key has feature size"):
        gm(gq, gv, gv)
    with pytest.raises(ValueError, match="key and value"):
        gm(gq, gk, gv[:, :5] if batch_first else gv[:5])
