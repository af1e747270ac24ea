"""A PyTorch NLP user's attention, transformer, recurrent and embedding code ported to
grilly.nn, against torch 2.13 on every device (torch's weights copied in with load_state_dict);
each test failed before its fix: a query row with no visible key (a fully padded sequence, or
left padding under a causal mask) gave NaN where torch's attention gives 0, and the NaN spread
through the next layer to the whole batch and every gradient; ``Embedding(scale_grad_by_freq=
True)`` and ``F.embedding``'s torch keywords; ``gp.triu(x, diagonal=1)`` / ``gp.tril``
(torch's spelling of a causal mask); an LSTM given a bare h_0 or a GRU given an (h_0, c_0)
tuple (confusing errors); ``PackedSequence.to(dtype)``, ``.cpu()``, ``.double()``.
"""
import math

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.nn.utils import rnn as grnn
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TF = torch.nn.functional
E, H = 8, 2


def _np(t):
    return t.detach().numpy()


def _g(t, device, grad=False):
    x = gp.asarray(_np(t), device=device)
    return x.requires_grad_() if grad else x


def _copy(tm, gm, device):
    gm.to(device)
    res = gm.load_state_dict({k: _np(v) for k, v in tm.state_dict().items()})
    assert res.missing_keys == [] and res.unexpected_keys == []


def _close(a, t, tol=1e-5):
    e = _np(t)
    assert_close(a, e, rtol=tol, atol=tol * max(1.0, float(np.abs(e).max())))


def _param_grads(tm, gm, tol=1e-4):
    tp = dict(tm.named_parameters())
    for name, p in gm.named_parameters():
        assert p.grad is not None, name
        assert np.isfinite(np.asarray(p.grad)).all(), name
        _close(p.grad, tp[name].grad, tol)


# ---- a query that sees no key: 0, as torch's attention ------------------------------------------
def test_sdpa_fully_masked_row_is_zero_with_torch_gradients(device):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 2, 3, 4), torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 6)
    keep = torch.rand(2, 1, 3, 5) > 0.4
    keep[..., 0] = True
    keep[0, :, 1] = False          # batch 0's query 1 sees no key
    tq, tk, tv = (t.clone().requires_grad_() for t in (q, k, v))
    gq, gk, gv = (_g(t, device, True) for t in (q, k, v))
    to = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=keep)
    go = F.scaled_dot_product_attention(gq, gk, gv, attn_mask=_g(keep, device))
    assert (np.asarray(go)[0, :, 1] == 0).all()
    _close(go, to)
    cot = torch.randn(to.shape)
    (to * cot).sum().backward()
    gp.sum(go * _g(cot, device)).backward()
    for a, b in ((gq, tq), (gk, tk), (gv, tv)):
        _close(a.grad, b.grad)


def test_sdpa_fully_masked_row_with_a_mask_needing_its_gradient(device):
    # the composed path (an additive mask that needs a gradient): 0 and torch's mask gradient
    torch.manual_seed(1)
    q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 4, 4), torch.randn(1, 2, 4, 4)
    m = torch.randn(3, 4)
    m[2] = -math.inf
    tm, gm = m.clone().requires_grad_(), _g(m, device, True)
    to = TF.scaled_dot_product_attention(q, k, v, attn_mask=tm)
    go = F.scaled_dot_product_attention(*(_g(t, device) for t in (q, k, v)), attn_mask=gm)
    _close(go, to)
    (to * to).sum().backward()
    gp.sum(go * go).backward()
    assert np.isfinite(np.asarray(gm.grad)).all()
    _close(gm.grad, tm.grad)


def test_multihead_attention_fully_padded_sequence(device):
    # need_weights=False (what the transformer layers use) gives torch's 0 rows and finite
    # gradients; need_weights=True keeps torch's NaN (its explicit softmax)
    torch.manual_seed(2)
    tm = torch.nn.MultiheadAttention(E, H, batch_first=True)
    gm = nn.MultiheadAttention(E, H, batch_first=True)
    _copy(tm, gm, device)
    x = torch.randn(2, 3, E)
    kpm = torch.tensor([[False, True, False], [True, True, True]])
    tx, gx = x.clone().requires_grad_(), _g(x, device, True)
    to = tm(tx, tx, tx, key_padding_mask=kpm, need_weights=False)[0]
    go = gm(gx, gx, gx, key_padding_mask=_g(kpm, device), need_weights=False)[0]
    _close(go, to)
    cot = torch.randn(to.shape)
    (to * cot).sum().backward()
    gp.sum(go * _g(cot, device)).backward()
    _close(gx.grad, tx.grad)
    _param_grads(tm, gm)
    with torch.no_grad():
        tw = tm(x, x, x, key_padding_mask=kpm)
    gw = gm(*(_g(x, device),) * 3, key_padding_mask=_g(kpm, device))
    assert np.isnan(np.asarray(gw[0])).any() and torch.isnan(tw[0]).any()
    np.testing.assert_array_equal(np.isnan(np.asarray(gw[1])), torch.isnan(tw[1]).numpy())


def test_decoder_only_left_padding_under_a_causal_mask(device):
    # a batch of left-padded prompts through a causal TransformerEncoder: a pad position sees
    # only pad keys; torch gives finite outputs and gradients, grilly gave NaN everywhere
    torch.manual_seed(3)
    tl = torch.nn.TransformerEncoderLayer(E, H, 16, 0.0)
    tm = torch.nn.TransformerEncoder(tl, 2, enable_nested_tensor=False)
    gm = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, 16, 0.0), 2,
                               enable_nested_tensor=False)
    _copy(tm, gm, device)
    x = torch.randn(4, 2, E)
    kpm = torch.tensor([[True, True, False, False], [False] * 4])
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4) != 0   # bool, as kpm
    tx, gx = x.clone().requires_grad_(), _g(x, device, True)
    to = tm(tx, mask=mask, src_key_padding_mask=kpm, is_causal=True)
    go = gm(gx, mask=_g(mask, device), src_key_padding_mask=_g(kpm, device), is_causal=True)
    _close(go, to, 1e-4)
    w = (~kpm).T.float()[..., None]      # the loss over the real tokens
    (to * w).sum().backward()
    gp.sum(go * _g(w, device)).backward()
    _close(gx.grad, tx.grad, 1e-4)
    _param_grads(tm, gm)


# ---- Embedding(scale_grad_by_freq=True), F.embedding's keywords -------------------------------
def test_embedding_scale_grad_by_freq(device):
    torch.manual_seed(4)
    tm = torch.nn.Embedding(7, 3, padding_idx=2, scale_grad_by_freq=True)
    gm = nn.Embedding(7, 3, padding_idx=2, scale_grad_by_freq=True)
    _copy(tm, gm, device)
    idx = torch.tensor([[1, 1, 2, 5], [2, 5, 5, 0]])
    to, go = tm(idx), gm(_g(idx, device))
    _close(go, to)
    cot = torch.randn(to.shape)
    (to * cot).sum().backward()
    gp.sum(go * _g(cot, device)).backward()
    _close(gm.weight.grad, tm.weight.grad)
    # the functional form, torch's keywords, tied to an output layer (both gradients add)
    w = torch.randn(7, 3, requires_grad=True)
    gw = _g(w, device, True)
    t = TF.linear(TF.embedding(idx, w, scale_grad_by_freq=True, sparse=False), w)
    r = F.linear(F.embedding(_g(idx, device), gw, scale_grad_by_freq=True, sparse=False), gw)
    _close(r, t)
    (t * t).sum().backward()
    gp.sum(r * r).backward()
    _close(gw.grad, w.grad)
    with pytest.raises(NotImplementedError, match="embedding: sparse=True"):
        F.embedding(_g(idx, device), gw, sparse=True)


# ---- torch's causal masks: triu/tril(diagonal=) -------------------------------------------------
def test_triu_tril_diagonal_and_a_mask_built_from_it(device):
    x = torch.randn(4, 5)
    gx = _g(x, device)
    for d in (-1, 0, 2):
        _close(gp.triu(gx, diagonal=d), torch.triu(x, diagonal=d))
        _close(gp.tril(gx, diagonal=d), torch.tril(x, diagonal=d))
    _close(gp.triu(gx, 1), torch.triu(x, 1))
    with pytest.raises(TypeError, match="triu: give k or diagonal"):
        gp.triu(gx, k=1, diagonal=1)
    # the common spellings of a causal mask, into MultiheadAttention
    torch.manual_seed(5)
    tm, gm = torch.nn.MultiheadAttention(E, H), nn.MultiheadAttention(E, H)
    _copy(tm, gm, device)
    q = torch.randn(4, 2, E)
    tmask = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
    gmask = gp.triu(gp.ones((4, 4), dtype=gp.bool, device=device), diagonal=1)
    fmask = gp.triu(gp.full((4, 4), -math.inf, device=device), diagonal=1)
    t = tm(q, q, q, attn_mask=tmask)[0]
    for m in (gmask, fmask):
        _close(gm(*(_g(q, device),) * 3, attn_mask=m)[0], t)
    gy = _g(x, device, True)
    gp.sum(gp.triu(gy, diagonal=1) * 3.0).backward()
    ty = x.clone().requires_grad_()
    (torch.triu(ty, diagonal=1) * 3.0).sum().backward()
    _close(gy.grad, ty.grad)


# ---- recurrent layers: clear errors for the other layer's state --------------------------------
def test_rnn_state_of_the_wrong_kind_is_a_clear_type_error(device):
    x = gp.zeros((3, 2, 4), device=device)
    h = gp.zeros((1, 2, 5), device=device)
    with pytest.raises(TypeError, match=r"LSTM: hx must be a tuple \(h_0, c_0\)"):
        nn.LSTM(4, 5).to(device)(x, h)
    with pytest.raises(TypeError, match="GRU: hx's h_0 must be an Array, got tuple"):
        nn.GRU(4, 5).to(device)(x, (h, h))
    with pytest.raises(TypeError, match="RNN: hx's h_0 must be an Array"):
        nn.RNN(4, 5).to(device)(x, [h])
    c = gp.zeros((2, 5), device=device)
    with pytest.raises(TypeError, match=r"LSTMCell: hx must be a tuple \(h_0, c_0\), got Array"):
        nn.LSTMCell(4, 5).to(device)(x[0], c)
    with pytest.raises(TypeError, match="GRUCell: the hidden state must be an Array, got tuple"):
        nn.GRUCell(4, 5).to(device)(x[0], (c, c))
    # a list (h_0, c_0) is taken, as torch's
    torch.manual_seed(6)
    tm, gm = torch.nn.LSTM(4, 5), nn.LSTM(4, 5)
    _copy(tm, gm, device)
    tx, th, tc = torch.randn(3, 2, 4), torch.randn(1, 2, 5), torch.randn(1, 2, 5)
    _close(gm(_g(tx, device), [_g(th, device), _g(tc, device)])[0], tm(tx, [th, tc])[0])


# ---- PackedSequence's torch conversions --------------------------------------------------------
def test_packed_sequence_to_dtype_cpu_double(device):
    torch.manual_seed(7)
    x = torch.randn(3, 4, 2)
    lengths = [3, 1, 4]
    tp = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                 enforce_sorted=False)
    gpk = grnn.pack_padded_sequence(_g(x, device), lengths, batch_first=True,
                                    enforce_sorted=False)
    for got, want in ((gpk.double(), tp.double()), (gpk.to(gp.float64), tp.to(torch.float64)),
                      (gpk.cpu(), tp.cpu()), (gpk.to("cpu", gp.float64), tp.double()),
                      (gpk.double().float(), tp.double().float())):
        assert got.data.dtype == {torch.float32: gp.float32,
                                  torch.float64: gp.float64}[want.data.dtype]
        assert got.sorted_indices.dtype == gp.int64
        assert got.sorted_indices.device == got.data.device
        _close(got.data, want.data)
    assert str(gpk.cpu().data.device) == "cpu"   # (the default device may be a GPU)
    tm, gm = torch.nn.GRU(2, 3, dtype=torch.float64), nn.GRU(2, 3, dtype=gp.float64)
    _copy(tm, gm, device)
    tout, gout = tm(tp.double())[0], gm(gpk.double())[0]
    _close(grnn.pad_packed_sequence(gout)[0], torch.nn.utils.rnn.pad_packed_sequence(tout)[0])
