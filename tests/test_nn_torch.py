"""grilly.nn against PyTorch (a test-only oracle): outputs and parameter gradients of layers
and losses, with torch's initialized weights copied in through load_state_dict."""
import math

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
torch.manual_seed(0)
RTOL, ATOL = 1e-5, 1e-6


def _np(t):
    return t.detach().numpy()


def _copy(tmod, gmod, device):
    gmod.to(device)
    res = gmod.load_state_dict({k: _np(v) for k, v in tmod.state_dict().items()})
    assert res.missing_keys == [] and res.unexpected_keys == []


def _g(x, device):
    return gp.asarray(_np(x), device=device)


def _close(a, e, rtol=RTOL, atol=ATOL):
    assert_close(a, _np(e) if hasattr(e, "detach") else e, rtol=rtol, atol=atol)


def _check(tmod, gmod, inputs, device, pick=lambda o: o, rtol=RTOL, atol=ATOL, grads=True):
    """Forward both; compare outputs; backprop a random cotangent; compare parameter grads."""
    _copy(tmod, gmod, device)
    tin = [t.clone().requires_grad_(t.dtype.is_floating_point) for t in inputs]
    tout = pick(tmod(*tin))
    gout = pick(gmod(*[_g(t, device) for t in inputs]))
    _close(gout, tout, rtol, atol)
    if not grads:
        return
    cot = torch.randn(tout.shape)
    (tout * cot).sum().backward()
    gp.sum(gout * _g(cot, device)).backward()
    tparams = dict(tmod.named_parameters())
    for name, p in gmod.named_parameters():
        assert p.grad is not None, f"no gradient for {name}"
        _close(p.grad, tparams[name].grad, rtol, max(atol, 1e-5 * float(tparams[name].grad.abs().max())))


def test_linear(device):
    _check(torch.nn.Linear(7, 5), nn.Linear(7, 5), [torch.randn(4, 3, 7)], device)


def test_linear_no_bias(device):
    _check(torch.nn.Linear(6, 2, bias=False), nn.Linear(6, 2, bias=False), [torch.randn(5, 6)], device)


@pytest.mark.parametrize("kw", [
    {},
    {"stride": 2, "padding": 1},
    {"padding": 2, "dilation": 2},
    {"groups": 2, "stride": (2, 1), "padding": (1, 0)},
    {"padding": "same"},
])
def test_conv2d(device, kw):
    _check(torch.nn.Conv2d(4, 6, 3, **kw), nn.Conv2d(4, 6, 3, **kw), [torch.randn(2, 4, 9, 8)], device,
           atol=1e-5)


def test_conv1d(device):
    kw = {"stride": 2, "padding": 1, "groups": 2}
    _check(torch.nn.Conv1d(4, 6, 3, **kw), nn.Conv1d(4, 6, 3, **kw), [torch.randn(3, 4, 11)], device,
           atol=1e-5)


def test_layer_norm(device):
    _check(torch.nn.LayerNorm((4, 5)), nn.LayerNorm((4, 5)), [torch.randn(3, 4, 5)], device, atol=1e-5)


def test_rms_norm(device):
    _check(torch.nn.RMSNorm(6), nn.RMSNorm(6), [torch.randn(3, 6)], device, atol=1e-5)


@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (8, 3)), ("BatchNorm1d", (4, 3, 5)),
                                       ("BatchNorm2d", (4, 3, 5, 2))])
def test_batch_norm_train_then_eval(device, cls, shape):
    tm, gm = getattr(torch.nn, cls)(3, momentum=0.3), getattr(nn, cls)(3, momentum=0.3)
    x = torch.randn(*shape) * 2 + 1
    _check(tm, gm, [x], device, atol=1e-5)
    for name in ("running_mean", "running_var"):
        _close(getattr(gm, name), getattr(tm, name))
    assert int(gm.num_batches_tracked) == 1
    tm.eval()
    gm.eval()
    _close(gm(_g(x, device)), tm(x), atol=1e-5)


def test_batch_norm_cumulative_momentum(device):
    tm, gm = torch.nn.BatchNorm1d(3, momentum=None), nn.BatchNorm1d(3, momentum=None)
    _copy(tm, gm, device)
    for _ in range(3):
        x = torch.randn(6, 3)
        tm(x)
        gm(_g(x, device))
    _close(gm.running_mean, tm.running_mean)
    _close(gm.running_var, tm.running_var)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention(device, need_weights, batch_first):
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    gm = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    q, k = torch.randn(3, 4, 8), torch.randn(3, 5, 8)
    if not batch_first:
        q, k = q.transpose(0, 1).contiguous(), k.transpose(0, 1).contiguous()
    _check(tm, gm, [q, k, k], device, pick=lambda o: o[0], atol=1e-5)
    if need_weights:
        _close(gm(_g(q, device), _g(k, device), _g(k, device))[1], tm(q, k, k)[1], atol=1e-6)


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_self_attention_packed_projection(device, need_weights):
    """One array as query, key and value takes one GEMM against the packed in_proj weight, split
    as views: outputs, the input's gradient and every parameter's against torch."""
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    gm = nn.MultiheadAttention(8, 2, batch_first=True)
    _copy(tm, gm, device)
    x = torch.randn(3, 5, 8, requires_grad=True)
    gx = _g(x.detach(), device)
    gx.requires_grad = True
    t, tw = tm(x, x, x, need_weights=need_weights)
    g, gw = gm(gx, gx, gx, need_weights=need_weights)
    _close(g, t, atol=1e-5)
    if need_weights:
        _close(gw, tw, atol=1e-6)
    cot = torch.randn(t.shape)
    (t * cot).sum().backward()
    gp.sum(g * _g(cot, device)).backward()
    _close(gx.grad, x.grad, atol=1e-5)
    tparams = dict(tm.named_parameters())
    for name, prm in gm.named_parameters():
        _close(prm.grad, tparams[name].grad, atol=1e-5)


def test_multihead_attention_masks(device):
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    gm = nn.MultiheadAttention(8, 2, batch_first=True)
    _copy(tm, gm, device)
    x = torch.randn(2, 5, 8)
    kpm = torch.tensor([[False] * 5, [False, False, False, True, True]])
    am = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    for nw in (True, False):
        t = tm(x, x, x, key_padding_mask=kpm, attn_mask=am, need_weights=nw)[0]
        g = gm(_g(x, device), _g(x, device), _g(x, device), key_padding_mask=_g(kpm, device),
               attn_mask=_g(am, device), need_weights=nw)[0]
        _close(g, t, atol=1e-5)


def test_multihead_attention_is_causal(device):
    # is_causal alone reaches the attention kernels as a flag; with a key padding mask, or
    # with need_weights, as a bias: both against torch given the causal mask itself
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    gm = nn.MultiheadAttention(8, 2, batch_first=True)
    _copy(tm, gm, device)
    x = torch.randn(2, 5, 8)
    am = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    kpm = torch.tensor([[False] * 5, [False, False, False, False, True]])
    gx = _g(x, device)
    for nw, pad in ((False, None), (True, None), (False, kpm)):
        t = tm(x, x, x, attn_mask=am, key_padding_mask=pad, need_weights=nw)[0]
        g = gm(gx, gx, gx, is_causal=True, need_weights=nw,
               key_padding_mask=None if pad is None else _g(pad, device))[0]
        _close(g, t, atol=1e-5)


def test_transformer_encoder_layer(device):
    kw = {"dim_feedforward": 16, "dropout": 0.0, "batch_first": True}
    for norm_first, act in ((False, "relu"), (True, "gelu")):
        tm = torch.nn.TransformerEncoderLayer(8, 2, norm_first=norm_first, activation=act, **kw)
        gm = nn.TransformerEncoderLayer(8, 2, norm_first=norm_first, activation=act, **kw)
        _check(tm, gm, [torch.randn(2, 5, 8)], device, atol=1e-5)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "batch_first": True}, {"bidirectional": True}])
def test_rnn(device, cls, kw):
    tm, gm = getattr(torch.nn, cls)(5, 4, **kw), getattr(nn, cls)(5, 4, **kw)
    x = torch.randn(3, 6, 5)
    _check(tm, gm, [x], device, pick=lambda o: o[0], atol=1e-5)
    t_out, t_h = tm(x)
    g_out, g_h = gm(_g(x, device))
    if cls == "LSTM":
        _close(g_h[0], t_h[0], atol=1e-5)
        _close(g_h[1], t_h[1], atol=1e-5)
    else:
        _close(g_h, t_h, atol=1e-5)


def test_rnn_initial_state_unbatched(device):
    tm, gm = torch.nn.LSTM(3, 4), nn.LSTM(3, 4)
    _copy(tm, gm, device)
    x, h, c = torch.randn(5, 3), torch.randn(1, 4), torch.randn(1, 4)
    t_out, (th, tc) = tm(x, (h, c))
    g_out, (gh, gc) = gm(_g(x, device), (_g(h, device), _g(c, device)))
    _close(g_out, t_out, atol=1e-5)
    _close(gc, tc, atol=1e-5)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("h0_shape,x_shape", [((2, 2, 4), (5, 2, 3)), ((1, 3, 4), (5, 2, 3)),
                                              ((2, 4), (5, 3))])
def test_rnn_initial_state_wrong_shape_raises(device, cls, h0_shape, x_shape):
    # torch raises; a (num_layers * dirs, N, H) mismatch was used silently (h0[0]) or failed in
    # an add with no word of the state
    gm = getattr(nn, cls)(3, 4).to(device)
    h0 = gp.zeros(h0_shape, device=device)
    with pytest.raises(ValueError, match=f"{cls}: expected h0 of shape"):
        gm(gp.zeros(x_shape, device=device), (h0, h0) if cls == "LSTM" else h0)


ACTS = [("ReLU", {}), ("LeakyReLU", {"negative_slope": 0.2}), ("GELU", {}), ("GELU", {"approximate": "tanh"}),
        ("SiLU", {}), ("ELU", {"alpha": 0.7}), ("Tanh", {}), ("Sigmoid", {}), ("Softplus", {"beta": 2.0}),
        ("Softmax", {"dim": 1}), ("LogSoftmax", {"dim": -1})]


@pytest.mark.parametrize("name,kw", ACTS)
def test_activations(device, name, kw):
    torch.manual_seed(ACTS.index((name, kw)))   # the same data whatever ran before (xdist)
    x = torch.randn(4, 7) * 4
    x[0, 0] = 30.0
    x[0, 1] = -30.0
    # float64 torch as the oracle: torch's float32 GELU computes 1 + erf(x) and cancels for x << 0
    tx = x.double().requires_grad_()
    gx = _g(x, device)
    gx.requires_grad_()
    t = getattr(torch.nn, name)(**kw)(tx)
    g = getattr(nn, name)(**kw)(gx)
    # Vulkan drivers' float32 tanh/exp are accurate to about 2e-5 relative and 1 ulp of 1.0
    # absolute (lavapipe); 1 + tanh(u) near -1 then cancels to that absolute error
    cpu = str(device) == "cpu"
    rtol, atol = (RTOL, 1e-7) if cpu else (5e-5, 5e-7)
    if name == "LogSoftmax":   # x - logsumexp(x) of inputs up to 30: float32 holds it to about
        atol = max(atol, 4e-6)  # ulp(30) = 1.9e-6 absolute (torch's float32 too)
    _close(g, t.float(), rtol=rtol, atol=atol)
    cot = torch.randn(t.shape)
    (t * cot.double()).sum().backward()
    gp.sum(g * _g(cot, device)).backward()
    _close(gx.grad, tx.grad.float(), rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("name,kw", [("ReLU", {}), ("ReLU6", {}), ("LeakyReLU", {"negative_slope": 0.2}),
                                     ("ELU", {"alpha": 0.7})])
def test_activation_gradient_at_kinks(device, name, kw):
    # exact 0 (and 6) are common inputs (padding, a ReLU before): torch's one-sided choices there,
    # not the half gradient that minimum/maximum give at a tie
    x = torch.tensor([0.0, 6.0, -1.5, 2.0, -0.0, 7.0])
    tx = x.clone().requires_grad_()
    gx = _g(x, device)
    gx.requires_grad_()
    t = getattr(torch.nn, name)(**kw)(tx)
    g = getattr(nn, name)(**kw)(gx)
    _close(g, t)
    t.sum().backward()
    gp.sum(g).backward()
    _close(gx.grad, tx.grad)


def _loss_case(name, kw, device, x, y, yg=None):
    tx = x.clone().requires_grad_()
    gx = _g(x, device)
    gx.requires_grad_()
    tkw = {k: (torch.from_numpy(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    gkw = {k: (gp.asarray(v, device=device) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    t = getattr(torch.nn, name)(**tkw)(tx, y)
    g = getattr(nn, name)(**gkw)(gx, _g(y, device) if yg is None else yg)
    _close(g, t, atol=1e-6)
    cot = torch.randn(t.shape)
    (t * cot).sum().backward()
    gp.sum(g * _g(cot, device)).backward()
    _close(gx.grad, tx.grad, atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,kw", [("MSELoss", {}), ("L1Loss", {}), ("SmoothL1Loss", {"beta": 0.5}),
                                     ("HuberLoss", {"delta": 0.7})])
def test_regression_losses(device, name, kw, reduction):
    _loss_case(name, {**kw, "reduction": reduction}, device, torch.randn(4, 5), torch.randn(4, 5))


W = np.array([0.2, 1.0, 2.0, 0.5], dtype=np.float32)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kw", [{}, {"weight": W}, {"label_smoothing": 0.1}, {"ignore_index": 2},
                                {"weight": W, "label_smoothing": 0.2, "ignore_index": 1}])
def test_cross_entropy_indices(device, kw, reduction):
    y = torch.tensor([0, 2, 1, 3, 2, 1])
    _loss_case("CrossEntropyLoss", {**kw, "reduction": reduction}, device, torch.randn(6, 4), y)


def test_cross_entropy_spatial(device):
    y = torch.randint(0, 4, (2, 3, 2))
    _loss_case("CrossEntropyLoss", {"weight": W}, device, torch.randn(2, 4, 3, 2), y)


@pytest.mark.parametrize("kw", [{}, {"weight": W, "label_smoothing": 0.1, "reduction": "sum"}])
def test_cross_entropy_probabilities(device, kw):
    y = torch.softmax(torch.randn(5, 4), 1)
    _loss_case("CrossEntropyLoss", kw, device, torch.randn(5, 4), y)


@pytest.mark.parametrize("kw", [{}, {"weight": W, "ignore_index": 0}, {"reduction": "none"}])
def test_nll_loss(device, kw):
    y = torch.tensor([0, 2, 1, 3, 0, 1])
    _loss_case("NLLLoss", kw, device, torch.log_softmax(torch.randn(6, 4), 1), y)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce(device, reduction):
    p = torch.rand(4, 3) * 0.98 + 0.01
    _loss_case("BCELoss", {"reduction": reduction}, device, p, torch.randint(0, 2, (4, 3)).float())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_saturated_probabilities(device, reduction):
    # a sigmoid output rounded to exactly 0 or 1: torch's gradient (p - y) / max(p (1 - p), 1e-12)
    # is finite there (the clamped logs' composed gradient was 0 * inf = nan)
    p = torch.tensor([[0.0, 1.0, 0.5], [1.0, 0.0, 0.25]])
    y = torch.tensor([[0.0, 1.0, 1.0], [0.0, 1.0, 0.0]])
    tx = p.clone().requires_grad_()
    gx = _g(p, device)
    gx.requires_grad_()
    t = torch.nn.BCELoss(reduction=reduction)(tx, y)
    g = nn.BCELoss(reduction=reduction)(gx, _g(y, device))
    _close(g, t)
    cot = torch.rand(t.shape) + 0.5
    (t * cot).sum().backward()
    gp.sum(g * _g(cot, device)).backward()
    assert np.all(np.isfinite(np.asarray(gx.grad)))
    _close(gx.grad, tx.grad)


@pytest.mark.parametrize("kw", [{}, {"pos_weight": np.array([1.0, 2.0, 0.5], np.float32)},
                                {"weight": np.array([0.5, 1.0, 3.0], np.float32), "reduction": "sum"}])
def test_bce_with_logits(device, kw):
    x = torch.randn(4, 3) * 5
    _loss_case("BCEWithLogitsLoss", kw, device, x, torch.rand(4, 3))


@pytest.mark.parametrize("kw", [{}, {"stride": 1, "padding": 1}, {"ceil_mode": True}, {"dilation": 2}])
def test_max_pool2d(device, kw):
    x = torch.randn(2, 3, 7, 6)
    _close(F.max_pool2d(_g(x, device), 3, **kw), torch.nn.functional.max_pool2d(x, 3, **kw))


@pytest.mark.parametrize("kw", [{}, {"stride": 1, "padding": 1}, {"padding": 1, "count_include_pad": False},
                                {"ceil_mode": True}, {"ceil_mode": True, "padding": 1, "stride": 2}])
def test_avg_pool2d(device, kw):
    x = torch.randn(2, 3, 7, 6)
    _close(F.avg_pool2d(_g(x, device), 3, **kw), torch.nn.functional.avg_pool2d(x, 3, **kw), atol=1e-6)


@pytest.mark.parametrize("size", [(2, 3), 1, (3, 4), (None, 2)])
def test_adaptive_avg_pool2d(device, size):
    x = torch.randn(2, 3, 7, 6)
    ref = torch.nn.functional.adaptive_avg_pool2d(x, size)
    _close(F.adaptive_avg_pool2d(_g(x, device), size), ref, atol=1e-6)


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_and_flash_attention(device, causal):
    q, k, v = torch.randn(2, 3, 9, 4), torch.randn(2, 3, 9, 4), torch.randn(2, 3, 9, 5)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    gq, gk, gv = (_g(t, device) for t in (q, k, v))
    _close(F.scaled_dot_product_attention(gq, gk, gv, is_causal=causal), ref, atol=1e-6)
    for bs in (1, 4, 128):
        _close(F.flash_attention2(gq, gk, gv, is_causal=causal, block_size=bs), ref, atol=1e-6)


def test_sdpa_gqa_and_dropout_draws(device):
    # enable_gqa repeats key/value heads as torch does; dropout's mask is the one dropout()
    # draws on the probabilities from the same seed
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 2, 7, 8), torch.randn(2, 2, 7, 3)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    gq, gk, gv = (_g(t, device) for t in (q, k, v))
    _close(F.scaled_dot_product_attention(gq, gk, gv, enable_gqa=True), ref, atol=1e-6)
    gk2, gv2 = (_g(t.repeat_interleave(2, dim=1), device) for t in (k, v))
    nn.manual_seed(5)
    got = F.scaled_dot_product_attention(gq, gk2, gv2, dropout_p=0.3)
    nn.manual_seed(5)
    s = gp.matmul(gq, gp.matrix_transpose(gk2)) / math.sqrt(8)
    want = gp.matmul(F.dropout(F.softmax(s, dim=-1), 0.3), gv2)
    _close(got, np.asarray(want), atol=1e-6)


def test_flash_attention_bool_mask(device):
    q, k, v = torch.randn(2, 6, 4), torch.randn(2, 7, 4), torch.randn(2, 7, 4)
    mask = torch.rand(6, 7) > 0.3
    mask[:, 0] = True
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    g = F.flash_attention2(*(_g(t, device) for t in (q, k, v)), attn_mask=_g(mask, device), block_size=3)
    _close(g, ref, atol=1e-6)


def test_embedding(device):
    tm, gm = torch.nn.Embedding(10, 3), nn.Embedding(10, 3)
    _check(tm, gm, [torch.tensor([[1, 2, 2], [9, 0, 1]])], device)


@pytest.mark.parametrize("padding_idx", [2, -1])
def test_embedding_padding_idx_gets_no_gradient(device, padding_idx):
    tm, gm = torch.nn.Embedding(10, 3, padding_idx=padding_idx), nn.Embedding(10, 3, padding_idx=padding_idx)
    with torch.no_grad():
        tm.weight[padding_idx] = torch.tensor([1.0, -2.0, 3.0])   # a non-zero padding row
    _check(tm, gm, [torch.tensor([[1, 2, 2], [9, 0, 1]])], device)
    assert not np.any(np.asarray(gm.weight.grad)[padding_idx])


@pytest.mark.parametrize("shape", [(6, 5), (2, 3, 5)])
def test_linear_gradient_penalty(device, shape):
    """Double backward through Linear layers (a gradient penalty, as WGAN-GP takes): the input
    gradient made with create_graph=True, then the gradient of its squared norm with respect
    to the weights, against torch. Without create_graph the fused backward kernel runs."""
    tmod = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))
    gmod = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))
    _copy(tmod, gmod, device)
    x = torch.randn(shape)
    tx = x.clone().requires_grad_(True)
    (tg,) = torch.autograd.grad(tmod(tx).pow(2).sum(), [tx], create_graph=True)
    tg.pow(2).sum().backward()
    gx = _g(x, device)
    gx.requires_grad_()
    (gg,) = gp.autograd.grad(gp.sum(gmod(gx) ** 2), [gx], create_graph=True)
    gp.sum(gg ** 2).backward()
    _close(gg, tg, rtol=1e-4, atol=1e-5)
    for (name, tp), gpar in zip(tmod.named_parameters(), gmod.parameters()):
        _close(gpar.grad, tp.grad, rtol=1e-4, atol=1e-5)


def test_once_differentiable_function_raises_when_differentiated_again(device):
    """A Function marked once_differentiable (a backward with no gradient of its own): a
    gradient made with create_graph=True has the plain gradient's values, and differentiating
    it again raises NotImplementedError naming it, instead of a second-order result missing its
    terms. (Every fused layer of grilly differentiates twice: tests/test_double_backward.py,
    tests/test_snn_double_backward.py.)"""
    class Cube(gp.autograd.Function):
        once_differentiable = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3.0 * x * x
    x = gp.asarray([0.5, -1.0, 2.0], device=device)
    x.requires_grad_()
    (g,) = gp.autograd.grad(gp.sum(Cube.apply(x)), [x], create_graph=True)
    (g0,) = gp.autograd.grad(gp.sum(Cube.apply(x)), [x])
    np.testing.assert_array_equal(np.asarray(g), np.asarray(g0))
    np.testing.assert_allclose(np.asarray(g0), [0.75, 3.0, 12.0])
    with pytest.raises(NotImplementedError, match="Cube: .*second backward"):
        gp.sum(g * g).backward()


# ---- container editing, Embedding bounds and max_norm, bad-input errors ---------------------
def _pair_of_lists(n=4):
    """n (torch, grilly) Linear pairs of distinct shapes, grilly's weights copied from torch's."""
    pairs = []
    for i in range(n):
        t, g = torch.nn.Linear(i + 1, i + 2), nn.Linear(i + 1, i + 2)
        _copy(t, g, "cpu")
        pairs.append((t, g))
    return pairs


def _same_container(tc, gc):
    """Same children in the same order under the same names; same parameters and state_dict."""
    assert [n for n, _ in gc.named_children()] == [n for n, _ in tc.named_children()]
    assert [tuple(m.weight.shape) for m in gc] == [tuple(m.weight.shape) for m in tc]
    assert [tuple(p.shape) for p in gc.parameters()] == [tuple(p.shape) for p in tc.parameters()]
    assert list(gc.state_dict()) == list(tc.state_dict())
    for k, v in tc.state_dict().items():
        _close(gc.state_dict()[k], v)


@pytest.mark.parametrize("kind", ["ModuleList", "Sequential"])
def test_container_editing_matches_torch(kind):
    pairs = _pair_of_lists(6)
    tl, gl = [p[0] for p in pairs], [p[1] for p in pairs]
    tc, gc = ((torch.nn.ModuleList(tl[:3]), nn.ModuleList(gl[:3])) if kind == "ModuleList"
              else (torch.nn.Sequential(*tl[:3]), nn.Sequential(*gl[:3])))
    tc.insert(1, tl[3])
    gc.insert(1, gl[3])
    _same_container(tc, gc)
    at = -1 if kind == "Sequential" else len(tc) - 1   # torch's ModuleList.insert fails at -1
    tc.insert(at, tl[4])
    gc.insert(-1, gl[4])
    _same_container(tc, gc)
    del tc[0]
    del gc[0]
    _same_container(tc, gc)
    del tc[-1]
    del gc[-1]
    _same_container(tc, gc)
    tp, gpop = tc.pop(1), gc.pop(1)
    assert tuple(gpop.weight.shape) == tuple(tp.weight.shape)
    _same_container(tc, gc)
    tc.extend([tl[5], tl[0]])
    gc.extend([gl[5], gl[0]])
    _same_container(tc, gc)
    del tc[1:3]
    del gc[1:3]
    _same_container(tc, gc)
    tcls, gcls = ((lambda *m: torch.nn.ModuleList(m), lambda *m: nn.ModuleList(m))
                  if kind == "ModuleList" else (torch.nn.Sequential, nn.Sequential))
    tc += tcls(tl[2], tl[4])
    gc += gcls(gl[2], gl[4])
    _same_container(tc, gc)
    tsum, gsum = tc + tcls(tl[1]), gc + gcls(gl[1])
    assert type(gsum) is type(gc)
    _same_container(tsum, gsum)
    _same_container(tc, gc)   # + made a new container
    _same_container(tc[1:], gc[1:])
    with pytest.raises(IndexError):
        gc.insert(len(gc) + 1, gl[0])
    with pytest.raises(IndexError):
        del gc[len(gc)]


def test_sequential_edits_run_in_order_and_renumber_named_children():
    from collections import OrderedDict

    pairs = _pair_of_lists(3)
    tc = torch.nn.Sequential(OrderedDict([("a", pairs[0][0]), ("b", torch.nn.Tanh())]))
    gc = nn.Sequential(OrderedDict([("a", pairs[0][1]), ("b", nn.Tanh())]))
    del tc[1]
    del gc[1]
    _same_container(tc, gc)   # renumbered '0', as torch
    tc.append(torch.nn.Tanh())
    gc.append(nn.Tanh())
    tc.insert(1, pairs[1][0])
    gc.insert(1, pairs[1][1])
    x = torch.randn(4, 1)
    _close(gc(_g(x, "cpu")), tc(x))
    assert isinstance(gc[1:], nn.Sequential)
    assert list(gc[1:].state_dict()) == list(tc[1:].state_dict())


def test_embedding_out_of_range_raises_index_error(device):
    gm, tm = nn.Embedding(5, 3).to(device), torch.nn.Embedding(5, 3)
    for bad in ([0, -1], [[1, 5]], [-6, 2], [2, 100]):
        with pytest.raises(IndexError):
            tm(torch.tensor(bad))
        with pytest.raises(IndexError, match="embedding"):
            gm(gp.asarray(bad, device=device))
        with pytest.raises(IndexError):
            F.embedding(gp.asarray(bad, device=device), gm.weight)
    with pytest.raises(IndexError, match="index -1 "):
        gm(gp.asarray([0, -1], dtype=gp.int8, device=device))
    _close(gm(gp.asarray([0, 4], device=device)), np.asarray(gm.weight)[[0, 4]])


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0])
def test_embedding_max_norm_renormalizes_rows_in_place(device, norm_type):
    tm = torch.nn.Embedding(8, 4, max_norm=1.5, norm_type=norm_type)
    gm = nn.Embedding(8, 4, max_norm=1.5, norm_type=norm_type)
    with torch.no_grad():
        tm.weight[3] *= 0.1   # one row under max_norm: left as it is
    idx = torch.tensor([[1, 3, 1], [6, 0, 3]])
    _check(tm, gm, [idx], device)
    _close(gm.weight, tm.weight)   # the looked-up rows renormalized in place, the rest kept
    assert float(np.abs(np.asarray(gm.weight)[2] - _np(tm.weight)[2]).max()) == 0.0
    # functional form, weight given directly
    w = torch.randn(8, 4) * 3
    gw = _g(w, device)
    out = F.embedding(gp.asarray([2, 5, 2], device=device), gw, max_norm=0.5, norm_type=norm_type)
    ref = torch.nn.functional.embedding(torch.tensor([2, 5, 2]), w, max_norm=0.5, norm_type=norm_type)
    _close(out, ref)
    _close(gw, w)


def test_bad_inputs_raise_errors_naming_the_layer(device):
    lin = nn.Linear(3, 2).to(device)
    with pytest.raises(ValueError, match="Linear: .*at least 1 dimension"):
        lin(gp.asarray(1.0, device=device))
    with pytest.raises(ValueError, match="linear: .*at least 1 dimension"):
        F.linear(gp.asarray(1.0, device=device), lin.weight)
    with pytest.raises(RuntimeError):
        torch.nn.Linear(3, 2)(torch.tensor(1.0))   # torch rejects it too
    with pytest.raises(TypeError, match="Linear: input must have a real floating dtype"):
        lin(gp.ones((2, 3), dtype=gp.int64, device=device))
    with pytest.raises(RuntimeError):
        torch.nn.Linear(3, 2)(torch.ones(2, 3, dtype=torch.int64))
    bn = nn.BatchNorm1d(3).to(device)
    with pytest.raises(TypeError, match="BatchNorm1d: input must have a real floating dtype"):
        bn(gp.ones((2, 3), dtype=gp.int64, device=device))
    with pytest.raises(TypeError, match="batch_norm: input must have a real floating dtype"):
        F.batch_norm(gp.ones((2, 3), dtype=gp.int32, device=device), None, None, training=True)
    x = gp.ones((2, 3), device=device)
    for loss, name in ((nn.BCEWithLogitsLoss(), "BCEWithLogitsLoss"), (nn.BCELoss(), "BCELoss")):
        with pytest.raises(TypeError, match=f"{name}: target must have a real floating dtype"):
            loss(x * 0.5, gp.ones((2, 3), dtype=gp.int64, device=device))
    with pytest.raises(RuntimeError):
        torch.nn.BCEWithLogitsLoss()(torch.ones(2, 3), torch.ones(2, 3, dtype=torch.int64))
    with pytest.raises(TypeError, match="binary_cross_entropy_with_logits: target"):
        F.binary_cross_entropy_with_logits(x, gp.ones((2, 3), dtype=gp.int64, device=device))


def test_reassigned_parameters_and_modules_keep_their_place_as_in_torch():
    """Weight tying (``o.weight = e.weight``) and reassigning a parameter, buffer or child
    keep its position in named_parameters / state_dict / named_children, as torch's do (an
    optimizer's groups, and state dicts matched by order, follow that order)."""
    def build(lib):
        class Net(lib.Module):
            def __init__(self):
                super().__init__()
                self.e = lib.Embedding(5, 3)
                self.a = lib.Linear(3, 4)
                self.b = lib.Linear(4, 3)
                self.register_buffer("buf", None)
                self.register_buffer("run", None)
                self.b.weight = self.e.weight             # tying
                self.a.weight = lib.Parameter(self.a.weight.detach() * 1)   # a new parameter
                self.register_parameter("b_extra", None)
                self.a = lib.Linear(3, 4)                 # a new child in a's place
                self.register_buffer("buf", None, persistent=False)
        return Net()
    import torch.nn as tnn
    t, g = build(tnn), build(nn)
    assert [n for n, _ in g.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert list(g.state_dict()) == list(t.state_dict())
    assert [n for n, _ in g.named_children()] == [n for n, _ in t.named_children()]
    assert [n for n, _ in g.named_buffers()] == [n for n, _ in t.named_buffers()]
