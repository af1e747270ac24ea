"""torch's transformer stack in grilly.nn (TransformerEncoder, TransformerDecoderLayer,
TransformerDecoder, Transformer; the encoder layer's options; MultiheadAttention's add_bias_kv
and add_zero_attn) against torch: state_dict keys, values, and the gradients of inputs and
parameters on every device. dropout=0.0 wherever values are compared."""
import inspect
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
RTOL, ATOL = 1e-4, 2e-5


def _g(t, device):
    return gp.asarray(t.detach().numpy(), device=device)


def _load(tmod, gmod, device):
    """torch's state_dict into ``gmod``: the same keys in the same order, every one used."""
    sd = {k: v.detach().numpy() for k, v in tmod.state_dict().items()}
    assert list(gmod.state_dict()) == list(sd)
    res = gmod.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    gmod.to(device)


def _compare(tmod, gmod, inputs, device, masks=None, rtol=RTOL, atol=ATOL, load=True):
    """Both modules on ``inputs`` (positional, each wanting a gradient) and ``masks`` (keyword
    tensors, or other keyword values): outputs, then the gradients of the inputs and of every
    parameter for one random cotangent."""
    if load:
        _load(tmod, gmod, device)
    masks = masks or {}
    tin = [t.clone().requires_grad_() for t in inputs]
    gin = [_g(t, device).requires_grad_() for t in inputs]
    gkw = {k: _g(v, device) if isinstance(v, torch.Tensor) else v for k, v in masks.items()}
    tout, gout = tmod(*tin, **masks), gmod(*gin, **gkw)
    assert tuple(gout.shape) == tuple(tout.shape)
    assert_close(gout, tout.detach().numpy(), rtol=rtol, atol=atol)
    cot = torch.randn(tout.shape)
    (tout * cot).sum().backward()
    gp.sum(gout * _g(cot, device)).backward()
    for t, g in zip(tin, gin):
        assert_close(g.grad, t.grad.numpy(), rtol=rtol, atol=atol)
    tparams = dict(tmod.named_parameters())
    assert sorted(tparams) == sorted(k for k, _ in gmod.named_parameters())
    for name, p in gmod.named_parameters():
        tg = tparams[name].grad
        assert p.grad is not None, f"no gradient for {name}"
        assert_close(p.grad, tg.numpy(), rtol=rtol, atol=max(atol, 1e-5 * float(tg.abs().max())))


def _x(*shape):
    return torch.randn(*shape)


def _kpm(b, s):
    """A key padding mask: the last row pads its final two positions."""
    m = torch.zeros(b, s, dtype=torch.bool)
    m[-1, -2:] = True
    return m


def _float(m):
    """A bool mask as torch's additive float mask (-inf where True)."""
    return torch.zeros(m.shape).masked_fill(m, -torch.inf)


def _causal_bool(s):
    return torch.triu(torch.ones(s, s, dtype=torch.bool), 1)


# ---- MultiheadAttention: add_bias_kv, add_zero_attn -----------------------------------------

@pytest.mark.parametrize("bias_kv,zero_attn,batch_first,masked", [
    (True, False, True, False), (False, True, False, True), (True, True, True, True)])
def test_multihead_attention_bias_kv_zero_attn(device, bias_kv, zero_attn, batch_first, masked):
    # add_bias_kv and add_zero_attn raised NotImplementedError: now torch's bias_k/bias_v
    # parameters and keys, one more key/value row each (unmasked), values, attention weights
    # and gradients of query, key, value and every parameter
    torch.manual_seed(1)
    kw = {"add_bias_kv": bias_kv, "add_zero_attn": zero_attn, "batch_first": batch_first}
    tm, gm = torch.nn.MultiheadAttention(16, 2, **kw), nn.MultiheadAttention(16, 2, **kw)
    assert [k for k, _ in gm.named_parameters()] == [k for k, _ in tm.named_parameters()]
    assert (gm.bias_k is None) == (not bias_kv) and gm.add_zero_attn == zero_attn
    lead = (lambda b, s: (b, s)) if batch_first else (lambda b, s: (s, b))
    q, k, v = _x(*lead(2, 5), 16), _x(*lead(2, 6), 16), _x(*lead(2, 6), 16)
    masks = {"key_padding_mask": _kpm(2, 6), "attn_mask": _causal_bool(6)[:5]} if masked else {}
    _load(tm, gm, device)
    for need_weights in (True, False):
        tm.zero_grad()
        gm.zero_grad()
        _compare(_Pick(tm, need_weights), _Pick(gm, need_weights), [q, k, v], device, masks,
                 load=False)
    tw = tm(q, k, v, **masks)[1]
    gw = gm(*(_g(t, device) for t in (q, k, v)),
            **{n: _g(m, device) for n, m in masks.items()})[1]
    assert tuple(gw.shape) == (2, 5, 6 + bias_kv + zero_attn)
    assert_close(gw, tw.detach().numpy(), rtol=RTOL, atol=1e-6)
    # is_causal alone (grilly's; torch wants the mask): causal over the source, the extra
    # rows open to every query, as torch given the causal mask
    t = tm(q, k, v, attn_mask=_causal_bool(6)[:5], need_weights=False)[0]
    g = gm(*(_g(x, device) for x in (q, k, v)), is_causal=True, need_weights=False)[0]
    assert_close(g, t.detach().numpy(), rtol=RTOL, atol=ATOL)


class _Pick:
    """A MultiheadAttention's output alone (``need_weights`` fixed), as a module for _compare."""

    def __init__(self, mod, need_weights):
        self.mod, self.need_weights = mod, need_weights

    def __call__(self, *a, **m):
        return self.mod(*a, need_weights=self.need_weights, **m)[0]

    def named_parameters(self):
        return self.mod.named_parameters()


def test_multihead_attention_bias_kv_with_kdim_vdim(device):
    torch.manual_seed(2)
    kw = {"add_bias_kv": True, "add_zero_attn": True, "kdim": 6, "vdim": 10, "batch_first": True}
    tm, gm = torch.nn.MultiheadAttention(16, 4, **kw), nn.MultiheadAttention(16, 4, **kw)
    _load(tm, gm, device)
    _compare(_Pick(tm, True), _Pick(gm, True), [_x(3, 5, 16), _x(3, 7, 6), _x(3, 7, 10)], device,
             {"key_padding_mask": _kpm(3, 7)}, load=False)


def test_multihead_attention_bias_kv_init_and_mask_types():
    gm = nn.MultiheadAttention(16, 2, add_bias_kv=True)
    # torch's xavier_normal_ on (1, 1, E): std 1/sqrt(E)
    assert gm.bias_k.shape == (1, 1, 16) and gm.bias_v.shape == (1, 1, 16)
    assert 0 < float(gp.std(gm.bias_k)) < 1.0
    x = gp.asarray(np.random.default_rng(0).standard_normal((5, 2, 16)).astype(np.float32))
    with pytest.raises(TypeError, match="key_padding_mask must be a bool or floating"):
        gm(x, x, x, key_padding_mask=gp.zeros((2, 5), dtype=gp.int32))
    with pytest.raises(TypeError, match="attn_mask must be a bool or floating"):
        gm(x, x, x, attn_mask=gp.zeros((5, 5), dtype=gp.int32))


# ---- TransformerEncoderLayer options ----------------------------------------------------------

def _act(name):
    """An activation for torch and grilly: a name, a function, or a module."""
    return {"relu": ("relu", "relu"), "gelu": ("gelu", "gelu"),
            "fn": (torch.nn.functional.silu, F.silu),
            "module": (torch.nn.GELU(approximate="tanh"), nn.GELU(approximate="tanh"))}[name]


@pytest.mark.parametrize("act,norm_first,bias,batch_first", [
    ("gelu", False, True, False), ("fn", True, False, False), ("module", True, True, True),
    ("relu", False, False, True)])
def test_transformer_encoder_layer_options(device, act, norm_first, bias, batch_first):
    torch.manual_seed(3)
    ta, ga = _act(act)
    kw = {"dim_feedforward": 24, "dropout": 0.0, "norm_first": norm_first, "bias": bias,
          "batch_first": batch_first}
    tm = torch.nn.TransformerEncoderLayer(16, 2, activation=ta, **kw)
    gm = nn.TransformerEncoderLayer(16, 2, activation=ga, **kw)
    src = _x(2, 5, 16) if batch_first else _x(5, 2, 16)
    _compare(tm, gm, [src], device)


@pytest.mark.parametrize("masks", ["float", "bool+kpm", "causal", "causal+kpm", "float_kpm"])
def test_transformer_encoder_layer_masks(device, masks):
    # seq-first (torch's default); float and bool attention masks, key padding masks, and the
    # is_causal hint given with the causal mask (torch needs the mask with the hint)
    torch.manual_seed(4)
    kw = {"dim_feedforward": 24, "dropout": 0.0}
    tm, gm = torch.nn.TransformerEncoderLayer(16, 4, **kw), nn.TransformerEncoderLayer(16, 4, **kw)
    assert not gm.self_attn.batch_first
    causal = torch.nn.Transformer.generate_square_subsequent_mask(6)
    kpm = _kpm(3, 6)
    m = {"float": {"src_mask": torch.randn(6, 6)},
         "bool+kpm": {"src_mask": _causal_bool(6), "src_key_padding_mask": kpm},
         "causal": {"src_mask": causal, "is_causal": True},
         "causal+kpm": {"src_mask": causal, "is_causal": True,
                        "src_key_padding_mask": kpm.float() * -1e9},
         "float_kpm": {"src_key_padding_mask": _float(kpm)}}[masks]
    _compare(tm, gm, [_x(6, 3, 16)], device, m)


def test_transformer_encoder_layer_is_causal_alone_applies_the_mask(device):
    # grilly takes is_causal without a mask (torch requires the mask too): the causal mask
    torch.manual_seed(5)
    kw = {"dim_feedforward": 24, "dropout": 0.0}
    tm, gm = torch.nn.TransformerEncoderLayer(16, 2, **kw), nn.TransformerEncoderLayer(16, 2, **kw)
    _load(tm, gm, device)
    src = _x(5, 2, 16)
    t = tm(src, src_mask=torch.nn.Transformer.generate_square_subsequent_mask(5), is_causal=True)
    assert_close(gm(_g(src, device), is_causal=True), t.detach().numpy(), rtol=RTOL, atol=ATOL)


def test_transformer_encoder_layer_unbatched(device):
    torch.manual_seed(6)
    kw = {"dim_feedforward": 24, "dropout": 0.0}
    tm, gm = torch.nn.TransformerEncoderLayer(16, 2, **kw), nn.TransformerEncoderLayer(16, 2, **kw)
    m = {"src_key_padding_mask": torch.tensor([False] * 4 + [True]), "src_mask": _causal_bool(5)}
    _compare(tm, gm, [_x(5, 16)], device, m)


# ---- TransformerEncoder ----------------------------------------------------------------------

@pytest.mark.parametrize("norm,batch_first", [(True, False), (False, True)])
def test_transformer_encoder(device, norm, batch_first):
    torch.manual_seed(7)
    kw = {"dim_feedforward": 24, "dropout": 0.0, "batch_first": batch_first}
    tl, gl = torch.nn.TransformerEncoderLayer(16, 2, **kw), nn.TransformerEncoderLayer(16, 2, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch: nested tensors unused when batch_first=False
        tm = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(16) if norm else None)
    gm = nn.TransformerEncoder(gl, 2, norm=nn.LayerNorm(16) if norm else None)
    assert gm.num_layers == 2 and len(gm.layers) == 2
    # the layers are deep copies: their own parameters, none shared with the template
    p0, p1 = gm.layers[0].linear1.weight, gm.layers[1].linear1.weight
    assert p0 is not p1 and p0 is not gl.linear1.weight and nn.is_parameter(p1)
    # torch's copies start equal; give them different values so a mix-up would show
    with torch.no_grad():
        for p in tm.layers[1].parameters():
            p.add_(0.1 * torch.randn(p.shape))
    src = _x(2, 6, 16) if batch_first else _x(6, 2, 16)
    _compare(tm, gm, [src], device,
             {"mask": torch.randn(6, 6), "src_key_padding_mask": _float(_kpm(2, 6))})
    _compare(tm, gm, [src], device, {"mask": _causal_bool(6), "is_causal": True})


@pytest.mark.parametrize("kpm", [[[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]],     # left-aligned
                                 [[0, 0, 0, 0, 0], [1, 0, 0, 0, 1]],     # not left-aligned
                                 [[0, 0, 0, 0, 1], [1, 1, 1, 1, 1]]])    # a row all padding
def test_transformer_encoder_inference_padding_matches_torch(device, kpm):
    # torch's inference path (eval, no gradient, batch_first, even heads, a key padding mask
    # alone) runs left-aligned padded batches as nested tensors and pads back with zeros
    # before the final norm: grilly gives the same values, padding rows included
    torch.manual_seed(8)
    kw = {"dim_feedforward": 24, "batch_first": True}
    tm = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(16, 2, **kw), 2,
                                     norm=torch.nn.LayerNorm(16))
    gm = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, **kw), 2, norm=nn.LayerNorm(16))
    assert gm.use_nested_tensor
    _load(tm, gm, device)
    tm.eval()
    gm.eval()
    src, m = _x(2, 5, 16), torch.tensor(kpm, dtype=torch.bool)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = tm(src, src_key_padding_mask=m).numpy()
    with gp.no_grad():
        g = gm(_g(src, device), src_key_padding_mask=_g(m, device))
    # a row of nothing but padding is NaN on the general path; compare where torch is finite
    ok = np.isfinite(t)
    assert_close(np.where(ok, np.asarray(g), 0), np.where(ok, t, 0), rtol=RTOL, atol=ATOL)
    assert np.array_equal(np.isfinite(np.asarray(g)), ok)


# ---- TransformerDecoderLayer / TransformerDecoder --------------------------------------------

@pytest.mark.parametrize("act,norm_first,bias,batch_first", [
    ("relu", False, True, False), ("gelu", True, True, True), ("module", False, False, True),
    ("fn", True, False, False)])
def test_transformer_decoder_layer(device, act, norm_first, bias, batch_first):
    torch.manual_seed(9)
    ta, ga = _act(act)
    kw = {"dim_feedforward": 24, "dropout": 0.0, "norm_first": norm_first, "bias": bias,
          "batch_first": batch_first}
    tm = torch.nn.TransformerDecoderLayer(16, 2, activation=ta, **kw)
    gm = nn.TransformerDecoderLayer(16, 2, activation=ga, **kw)
    tgt, mem = (_x(2, 5, 16), _x(2, 7, 16)) if batch_first else (_x(5, 2, 16), _x(7, 2, 16))
    _compare(tm, gm, [tgt, mem], device)
    _compare(tm, gm, [tgt, mem], device,
             {"tgt_mask": torch.nn.Transformer.generate_square_subsequent_mask(5),
              "tgt_is_causal": True, "memory_mask": torch.rand(5, 7) < 0.3,
              "tgt_key_padding_mask": _float(_kpm(2, 5)), "memory_key_padding_mask": _kpm(2, 7)})


def test_transformer_decoder(device):
    torch.manual_seed(10)
    kw = {"dim_feedforward": 24, "dropout": 0.0}
    tm = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(16, 2, **kw), 2,
                                     norm=torch.nn.LayerNorm(16))
    gm = nn.TransformerDecoder(nn.TransformerDecoderLayer(16, 2, **kw), 2, norm=nn.LayerNorm(16))
    with torch.no_grad():
        for p in tm.layers[0].parameters():
            p.mul_(1.0 + 0.1 * torch.randn(p.shape))
    _compare(tm, gm, [_x(5, 3, 16), _x(6, 3, 16)], device,
             {"tgt_mask": _causal_bool(5), "memory_key_padding_mask": _float(_kpm(3, 6)),
              "memory_mask": torch.randn(5, 6)})


# ---- Transformer -------------------------------------------------------------------------------

def _pair(batch_first, **kw):
    base = {"d_model": 16, "nhead": 2, "num_encoder_layers": 2, "num_decoder_layers": 1,
            "dim_feedforward": 24, "dropout": 0.0, "batch_first": batch_first, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.nn.Transformer(**base), nn.Transformer(**base)


@pytest.mark.parametrize("batch_first,norm_first", [(False, False), (True, True)])
def test_transformer(device, batch_first, norm_first):
    torch.manual_seed(11)
    tm, gm = _pair(batch_first, norm_first=norm_first)
    lead = (lambda b, s: (b, s)) if batch_first else (lambda b, s: (s, b))
    src, tgt = _x(*lead(2, 6), 16), _x(*lead(2, 5), 16)
    _compare(tm, gm, [src, tgt], device,
             {"src_mask": _causal_bool(6),
              "tgt_mask": torch.nn.Transformer.generate_square_subsequent_mask(5),
              "src_key_padding_mask": _kpm(2, 6), "memory_key_padding_mask": _kpm(2, 6),
              "tgt_key_padding_mask": _float(_kpm(2, 5))})


def test_transformer_loads_torch_state_dict_eval(device):
    # a trained torch model's weights (dropout 0.1, eval mode), loaded into grilly's: the
    # outputs torch gives, with and without masks
    torch.manual_seed(12)
    kw = {"d_model": 16, "nhead": 2, "num_encoder_layers": 2, "num_decoder_layers": 2,
          "dim_feedforward": 32, "batch_first": True}
    tm, gm = torch.nn.Transformer(**kw), nn.Transformer(**kw)
    _load(tm, gm, device)
    tm.eval()
    gm.eval()
    src, tgt = _x(3, 7, 16), _x(3, 5, 16)
    masks = {"tgt_mask": torch.nn.Transformer.generate_square_subsequent_mask(5),
             "src_key_padding_mask": _kpm(3, 7), "memory_key_padding_mask": _kpm(3, 7)}
    for m in ({}, masks):
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = tm(src, tgt, **m).numpy()
        g = gm(_g(src, device), _g(tgt, device), **{k: _g(v, device) for k, v in m.items()})
        assert_close(g, t, rtol=RTOL, atol=ATOL)


def test_transformer_custom_encoder_decoder_and_reset(device):
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 24, dropout=0.0), 1)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(16, 2, 24, dropout=0.0), 1)
    w = enc.layers[0].linear1.weight
    before = np.asarray(w).copy()
    tr = nn.Transformer(d_model=16, nhead=2, custom_encoder=enc, custom_decoder=dec)
    assert tr.encoder is enc and tr.decoder is dec
    # torch re-initialises every matrix, the custom stacks' included (xavier_uniform_)
    assert not np.array_equal(np.asarray(w), before)
    assert sorted(tr.state_dict()) == sorted(
        ["encoder." + k for k in enc.state_dict()] + ["decoder." + k for k in dec.state_dict()])
    tr.to(device)
    out = tr(gp.ones((5, 2, 16), device=device), gp.ones((4, 2, 16), device=device))
    assert out.shape == (4, 2, 16)


def test_transformer_dropout_train_and_eval(device):
    tr = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                        dim_feedforward=24, dropout=0.5).to(device)
    r = np.random.default_rng(0)
    src = gp.asarray(r.standard_normal((6, 2, 16)).astype(np.float32), device=device)
    tgt = gp.asarray(r.standard_normal((5, 2, 16)).astype(np.float32), device=device)
    a, b = np.asarray(tr(src, tgt)), np.asarray(tr(src, tgt))
    assert not np.allclose(a, b)
    tr.eval()
    c, d = np.asarray(tr(src, tgt)), np.asarray(tr(src, tgt))
    assert np.array_equal(c, d) and not np.allclose(a, c)


def test_generate_square_subsequent_mask(device):
    t = torch.nn.Transformer.generate_square_subsequent_mask(5).numpy()
    g = nn.Transformer.generate_square_subsequent_mask(5, device=device)
    assert g.dtype == gp.float32 and g.device == device
    assert np.array_equal(np.asarray(g), t)


def test_signatures_match_torch():
    # torch's argument names, order and defaults (torch's activation default is F.relu)
    for name in ("Transformer", "TransformerEncoder", "TransformerDecoder",
                 "TransformerEncoderLayer", "TransformerDecoderLayer"):
        for meth in ("__init__", "forward"):
            tp = inspect.signature(getattr(getattr(torch.nn, name), meth)).parameters
            gp_ = inspect.signature(getattr(getattr(nn, name), meth)).parameters
            assert list(gp_) == list(tp), (name, meth)
            for k, p in tp.items():
                if k != "activation" and p.default is not inspect.Parameter.empty:
                    assert gp_[k].default == p.default, (name, meth, k)
    assert inspect.signature(nn.Transformer.__init__).parameters["d_model"].default == 512


def test_errors():
    with pytest.raises(ValueError, match="TransformerDecoderLayer: activation must be"):
        nn.TransformerDecoderLayer(16, 2, activation="tanh")
    with pytest.raises(TypeError, match="TransformerEncoderLayer: activation must be"):
        nn.TransformerEncoderLayer(16, 2, activation=3)
    with pytest.raises(ValueError, match="TransformerEncoder: num_layers"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 24), 0)
    with pytest.raises(TypeError, match="TransformerDecoder: expected a layer"):
        nn.TransformerDecoder("layer", 2)
    tr = nn.Transformer(16, 2, 1, 1, 24)
    with pytest.raises(ValueError, match="Transformer: the batch sizes"):
        tr(gp.ones((5, 2, 16)), gp.ones((4, 3, 16)))
    with pytest.raises(ValueError, match="Transformer: src and tgt must have d_model=16"):
        tr(gp.ones((5, 2, 16)), gp.ones((4, 2, 8)))
