"""A PyTorch / transformers NLP user's code ported to grilly, against torch 2.13 and
transformers 5 (tiny local configs, no download) on every device; each test failed before its
fix: ``F.multi_head_attention_forward`` (torch's functional form: packed or separate
projections, bias_k/bias_v, add_zero_attn, static_k/static_v, masks) did not exist;
``EmbeddingBag(scale_grad_by_freq=True)`` raised NotImplementedError; ``cross_entropy`` /
``nll_loss`` with class weights or label smoothing gave NaN gradients for a batch whose every
target is ignored (torch: a NaN loss but zero gradients), and a NaN loss where another class's
logit is -inf (a masked vocabulary); the HF bridge's GPT-2 had no KV cache
(``past_key_values`` / ``use_cache``) and no ``generate``.
"""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TF = torch.nn.functional
E, H = 8, 2


def _np(t):
    return t.detach().numpy()


def _g(t, device, grad=False):
    x = gp.asarray(_np(t), device=device)
    return x.requires_grad_() if grad else x


def _close(a, t, tol=1e-5):
    e = _np(t)
    assert_close(a, e, rtol=tol, atol=tol * max(1.0, float(np.abs(e).max())))


# ---- F.multi_head_attention_forward ------------------------------------------------------------
def _mha_params(sep: bool, kdim: int, vdim: int, bias_kv: bool, static: bool, n: int, s: int):
    p = {"in_proj_bias": torch.randn(3 * E), "out_proj_weight": torch.randn(E, E),
         "out_proj_bias": torch.randn(E), "bias_k": None, "bias_v": None,
         "in_proj_weight": None if sep else torch.randn(3 * E, E) / 3}
    if sep:
        p.update(q_proj_weight=torch.randn(E, E) / 3, k_proj_weight=torch.randn(E, kdim) / 3,
                 v_proj_weight=torch.randn(E, vdim) / 3)
    if bias_kv:
        p.update(bias_k=torch.randn(1, 1, E), bias_v=torch.randn(1, 1, E))
    if static:
        p.update(static_k=torch.randn(n * H, s, E // H), static_v=torch.randn(n * H, s, E // H))
    return p


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")
@pytest.mark.parametrize("case", ["packed", "separate", "unbatched"])
def test_multi_head_attention_forward_matches_torch(device, case):
    # torch's functional form (sequence first), forward, weights and every gradient
    torch.manual_seed(0)
    sep, unb = case == "separate", case == "unbatched"
    kdim, vdim = (5, 6) if sep else (E, E)
    n, lq, s = 2, 3, 4
    p = _mha_params(sep, kdim, vdim, bias_kv=not sep, static=sep, n=n, s=s)
    shape = (lambda l_, c: (l_, c)) if unb else (lambda l_, c: (l_, n, c))
    q, k, v = torch.randn(shape(lq, E)), torch.randn(shape(s, kdim)), torch.randn(shape(s, vdim))
    if unb:
        kpm, am = torch.tensor([False, True, False, False]), torch.randn(H, lq, s)
    else:
        kpm = torch.tensor([[False, False, True, True], [False] * 4])
        am = torch.rand(n * H, lq, s) > 0.7 if sep else torch.randn(lq, s)
    tp = {a: None if t is None else t.clone().requires_grad_() for a, t in p.items()}
    gpp = {a: None if t is None else _g(t, device, True) for a, t in p.items()}
    tq, tk, tv = (t.clone().requires_grad_() for t in (q, k, v))
    gq, gk, gv = (_g(t, device, True) for t in (q, k, v))
    kw = dict(training=False, use_separate_proj_weight=sep, average_attn_weights=not sep)
    to, tw = TF.multi_head_attention_forward(tq, tk, tv, E, H, add_zero_attn=True, dropout_p=0.0,
                                             key_padding_mask=kpm, attn_mask=am, **tp, **kw)
    go, gw = F.multi_head_attention_forward(gq, gk, gv, E, H, add_zero_attn=True, dropout_p=0.0,
                                            key_padding_mask=_g(kpm, device),
                                            attn_mask=_g(am, device), **gpp, **kw)
    _close(go, to, 1e-4)
    _close(gw, tw, 1e-4)
    cot = torch.randn(to.shape)
    (to * cot).sum().backward()
    gp.sum(go * _g(cot, device)).backward()
    for a, b in [(gq, tq), (gk, tk), (gv, tv)] + [(gpp[x], tp[x]) for x in p if p[x] is not None]:
        if b.grad is not None:
            _close(a.grad, b.grad, 1e-4)


def test_multi_head_attention_forward_self_attention_and_errors(device):
    # one array as query, key and value (the packed GEMM), need_weights=False, a causal mask
    torch.manual_seed(1)
    p = _mha_params(False, E, E, False, False, 2, 3)
    x = torch.randn(3, 2, E)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(3)
    tx, gx = x.clone().requires_grad_(), _g(x, device, True)
    gpp = {a: None if t is None else _g(t, device) for a, t in p.items()}
    to, tw = TF.multi_head_attention_forward(tx, tx, tx, E, H, add_zero_attn=False, dropout_p=0.5,
                                             training=False, need_weights=False, attn_mask=mask,
                                             is_causal=True, **p)
    go, gw = F.multi_head_attention_forward(gx, gx, gx, E, H, add_zero_attn=False, dropout_p=0.5,
                                            training=False, need_weights=False,
                                            attn_mask=_g(mask, device), is_causal=True, **gpp)
    assert tw is None and gw is None
    _close(go, to, 1e-4)
    (to * to).sum().backward()
    gp.sum(go * go).backward()
    _close(gx.grad, tx.grad, 1e-4)
    args = (gpp["in_proj_weight"], None, None, None, False, 0.0, gpp["out_proj_weight"], None)
    gx = _g(x, device)
    with pytest.raises(ValueError, match="multi_head_attention_forward: query has embedding "
                                         "size 8, expected 6"):
        F.multi_head_attention_forward(gx, gx, gx, 6, H, *args)
    with pytest.raises(ValueError, match=r"static_k must have shape \(4, S, 4\)"):
        F.multi_head_attention_forward(gx, gx, gx, E, H, *args,
                                       static_k=_g(torch.randn(3, 3, 4), device))
    with pytest.raises(ValueError, match="use_separate_proj_weight=True needs q_proj_weight"):
        F.multi_head_attention_forward(gx, gx, gx, E, H, *args, use_separate_proj_weight=True)


def test_multihead_attention_module_on_the_functional_form(device):
    # nn.MultiheadAttention (now built on it): kdim/vdim, bias=False, add_bias_kv,
    # add_zero_attn, batch_first, a 3-D bool mask and per-head weights
    torch.manual_seed(2)
    kw = dict(bias=False, add_bias_kv=True, add_zero_attn=True, kdim=5, vdim=6, batch_first=True)
    tm, gm = torch.nn.MultiheadAttention(E, H, **kw), nn.MultiheadAttention(E, H, **kw)
    gm.to(device)
    gm.load_state_dict({a: _np(t) for a, t in tm.state_dict().items()})
    q, k, v = torch.randn(2, 3, E), torch.randn(2, 4, 5), torch.randn(2, 4, 6)
    am = torch.rand(2 * H, 3, 4) > 0.7
    tq, gq = q.clone().requires_grad_(), _g(q, device, True)
    to, tw = tm(tq, k, v, attn_mask=am, average_attn_weights=False)
    go, gw = gm(gq, _g(k, device), _g(v, device), attn_mask=_g(am, device),
                average_attn_weights=False)
    _close(go, to, 1e-4)
    _close(gw, tw, 1e-4)
    (to * to).sum().backward()
    gp.sum(go * go).backward()
    _close(gq.grad, tq.grad, 1e-4)
    tp = dict(tm.named_parameters())
    for name, prm in gm.named_parameters():
        _close(prm.grad, tp[name].grad, 1e-4)


# ---- EmbeddingBag(scale_grad_by_freq=True) ------------------------------------------------------
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scale_grad_by_freq(device, mode):
    # the reference is torch's Embedding(scale_grad_by_freq) reduced per bag: torch 2.13's CPU
    # embedding_bag divides by the wrong count (pytorch/pytorch#190063)
    torch.manual_seed(3)
    w = torch.randn(10, 3)
    idx, offsets = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0, 0]), [0, 2, 2, 5, 8]
    tw, gw = w.clone().requires_grad_(), _g(w, device, True)
    rows = TF.embedding(idx, tw, scale_grad_by_freq=True)
    ends = offsets[1:] + [len(idx)]
    to = torch.stack([getattr(rows[a:b], mode)(0) if b > a else torch.zeros(3)
                      for a, b in zip(offsets, ends)])
    go = F.embedding_bag(_g(idx, device), gw, _g(torch.tensor(offsets), device), mode=mode,
                         scale_grad_by_freq=True)
    _close(go, to)
    cot = torch.randn(to.shape)
    (to * cot).sum().backward()
    gp.sum(go * _g(cot, device)).backward()
    _close(gw.grad, tw.grad)
    # the module, a 2-D input with a padding index
    bags = torch.tensor([[1, 2, 2], [2, 0, 1]])
    tw = w.clone().requires_grad_()
    keep = (bags != 0).float().unsqueeze(-1)
    rows = TF.embedding(bags, tw, padding_idx=0, scale_grad_by_freq=True) * keep
    to = rows.sum(1) if mode == "sum" else rows.sum(1) / keep.sum(1)
    gm = nn.EmbeddingBag(10, 3, mode=mode, scale_grad_by_freq=True, padding_idx=0).to(device)
    gm.load_state_dict({"weight": _np(w)})
    go = gm(_g(bags, device))
    _close(go, to)
    (to * to).sum().backward()
    gp.sum(go * go).backward()
    _close(gm.weight.grad, tw.grad)
    assert "scale_grad_by_freq=True" in repr(gm)


def test_embedding_bag_scale_grad_by_freq_max_mode_is_a_value_error(device):
    with pytest.raises(ValueError, match="mode='max' does not support scale_grad_by_freq"):
        nn.EmbeddingBag(4, 2, mode="max", scale_grad_by_freq=True)
    with pytest.raises(ValueError, match="embedding_bag: mode='max'"):
        F.embedding_bag(gp.asarray([[0, 1]], device=device), gp.ones((4, 2), device=device),
                        mode="max", scale_grad_by_freq=True)


# ---- a batch whose every target is ignored --------------------------------------------------
@pytest.mark.parametrize("kind", ["nll_weight", "ce_smoothing", "ce_weight_smoothing_3d"])
def test_all_targets_ignored_gives_nan_loss_and_zero_gradient(device, kind):
    # e.g. an SFT batch of prompt tokens only (labels all -100): torch's loss is NaN, its
    # gradient 0; grilly's gradient was NaN (0 * inf) and poisoned the optimizer step
    torch.manual_seed(4)
    x = torch.randn(2, 5, 3) if kind.endswith("3d") else torch.randn(6, 5)
    y = torch.full(x.shape[:1] + x.shape[2:], -100)
    w = torch.rand(5)
    kw = {"nll_weight": dict(weight=w), "ce_smoothing": dict(label_smoothing=0.2),
          "ce_weight_smoothing_3d": dict(weight=w, label_smoothing=0.1)}[kind]
    tf, gf = (TF.nll_loss, F.nll_loss) if kind.startswith("nll") else (TF.cross_entropy,
                                                                        F.cross_entropy)
    tx, gx = x.clone().requires_grad_(), _g(x, device, True)
    to = tf(tx, y, **kw)
    go = gf(gx, _g(y, device), **{a: _g(b, device) if torch.is_tensor(b) else b
                                  for a, b in kw.items()})
    assert np.isnan(float(go)) and torch.isnan(to)
    to.backward()
    go.backward()
    _close(gx.grad, tx.grad)
    # and with one counted target, torch's values and gradients as before
    y.view(-1)[1] = 3
    tx.grad = None
    to = tf(tx, y, **kw)
    go = gf(_g(x, device, True), _g(y, device), **{a: _g(b, device) if torch.is_tensor(b) else b
                                                   for a, b in kw.items()})
    _close(go, to)


@pytest.mark.parametrize("kw", [dict(weight=True), dict(ignore_index=1, reduction="none")])
def test_masked_vocabulary_minus_inf_logits(device, kw):
    # logits of disallowed tokens set to -inf: torch's loss is finite; grilly's nll_loss (and
    # cross_entropy off its fused path: weights, ignore_index, reduction='none') gave NaN
    torch.manual_seed(5)
    x = torch.randn(4, 5)
    x[:, 4] = -float("inf")
    y = torch.tensor([0, 1, 2, 3])
    kw = dict(kw, weight=torch.rand(5)) if kw.get("weight") else kw
    gkw = {a: _g(b, device) if torch.is_tensor(b) else b for a, b in kw.items()}
    for tf, gf, t in ((TF.cross_entropy, F.cross_entropy, x),
                      (TF.nll_loss, F.nll_loss, x.log_softmax(1))):
        tx, gx = t.detach().clone().requires_grad_(), _g(t, device, True)
        to, go = tf(tx, y, **kw), gf(gx, _g(y, device), **gkw)
        _close(go, to)
        to.sum().backward()
        gp.sum(go).backward()
        _close(gx.grad, tx.grad)


# ---- the HF bridge's GPT-2: KV cache and greedy generate ----------------------------------------
@pytest.fixture(scope="module")
def gpt2():
    transformers = pytest.importorskip("transformers")
    from test_hf_bridge import _hide_unloadable_torch_extras
    _hide_unloadable_torch_extras()
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=32,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg).eval()


def _prompts():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(2, 100, (3, 6), generator=g)
    left = torch.ones(3, 6, dtype=torch.long)
    left[1, :2] = 0
    left[2, :4] = 0
    return ids, left


def _tf_cache(out):
    """A transformers output's cache: transformers 5 names it ``cache``, 4 ``past_key_values``."""
    c = getattr(out, "cache", None)
    return out.past_key_values if c is None else c


def _tf_layers(cache) -> list:
    """(keys, values) per layer of a transformers cache (5's layers, 4's DynamicCache lists or
    legacy tuples)."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache))
    return [tuple(kv[:2]) for kv in cache]


def test_gpt2_kv_cache_matches_transformers(device, gpt2):
    from grilly.utils import get_huggingface_bridge
    g = get_huggingface_bridge().convert_transformer(gpt2, device=device)
    ids, left = _prompts()
    with torch.no_grad():
        r1 = gpt2(ids[:, :4], attention_mask=left[:, :4], use_cache=True)
        r2 = gpt2(ids[:, 4:], attention_mask=left, past_key_values=_tf_cache(r1),
                  use_cache=True)
        r3 = gpt2(ids[:, :5])
    # a left-padded prefix, then the rest attending to the cache (the mask covers both)
    o1 = g(ids[:, :4], attention_mask=left[:, :4], use_cache=True)
    o2 = g(ids[:, 4:], attention_mask=left, past_key_values=o1.past_key_values)
    _close(o1.logits, r1.logits, 1e-4)
    _close(o2.logits, r2.logits, 1e-4)
    for (k, v), (tk, tv) in zip(o2.past_key_values, _tf_layers(_tf_cache(r2)), strict=True):
        _close(k, tk, 1e-4)
        _close(v, tv, 1e-4)
    # no mask: one token at a time, transformers 5's `cache` name; use_cache=False returns none
    o3 = g(ids[:, :4])
    o3 = g(ids[:, 4:5], cache=o3.cache)
    _close(o3.logits[:, -1], r3.logits[:, -1], 1e-4)
    assert g(ids).keys() == ["logits", "past_key_values"]
    assert g(ids, use_cache=False).past_key_values is None
    with pytest.raises(TypeError, match="past_key_values must be a previous output's"):
        g(ids, past_key_values=_tf_cache(r1))
    with pytest.raises(ValueError, match="after 4 cached positions"):
        g(ids[:, 4:], attention_mask=left[:, 4:], past_key_values=o1.past_key_values)


def test_gpt2_greedy_generate_matches_transformers(device, gpt2):
    from grilly.utils import get_huggingface_bridge
    g = get_huggingface_bridge().convert_transformer(gpt2, device=device)
    ids, left = _prompts()
    with torch.no_grad():
        plain = gpt2.generate(ids, attention_mask=left, max_new_tokens=5, do_sample=False)
    # an eos that row 0 emits first: it continues with the pad; stops once every row has
    eos = int(plain[0, 7])
    cases = [dict(attention_mask=left, max_new_tokens=5),
             dict(attention_mask=left, max_new_tokens=5, use_cache=False),
             dict(attention_mask=left, max_new_tokens=8, eos_token_id=eos, pad_token_id=1),
             dict(max_length=9)]
    for kw in cases:
        with torch.no_grad():
            ref = gpt2.generate(ids, do_sample=False, **kw)
        out = g.generate(ids, **kw)
        np.testing.assert_array_equal(np.asarray(out), ref.numpy())
    with pytest.raises(NotImplementedError, match="only greedy decoding"):
        g.generate(ids, do_sample=True)
    with pytest.raises(NotImplementedError, match="top_k not supported"):
        g.generate(ids, top_k=5)
