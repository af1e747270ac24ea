"""The HuggingFace bridge as a seed user drives it (``convert_transformer(hf_model)``), against
transformers 5 built from tiny local configs (no download): BERT's position_ids,
output_hidden_states / output_attentions, ModelOutput indexing, transformers' activations, a
BERT decoder's causal mask, save_pretrained directories; GPT-2 (GPT2Model, GPT2LMHeadModel) with
left and right padding, labels and gradients; other architectures a NotImplementedError."""
import numpy as np
import pytest

import grilly as gp
from grilly.utils import get_huggingface_bridge

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from test_hf_bridge import _hide_unloadable_torch_extras  # noqa: E402

_hide_unloadable_torch_extras()
TOL = dict(atol=1e-4, rtol=1e-4)


def _close(a, ref):
    np.testing.assert_allclose(np.asarray(a), ref.detach().numpy(), **TOL)


def _bert(**kw):
    torch.manual_seed(0)
    cfg = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=16)
    cfg.update(kw)
    return transformers.BertModel(transformers.BertConfig(**cfg)).eval()


def _gpt2_config(**kw):
    cfg = dict(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=16,
               bos_token_id=0, eos_token_id=0)
    cfg.update(kw)
    return transformers.GPT2Config(**cfg)


def _ids():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(2, 100, (3, 6), generator=g)
    right = torch.ones(3, 6, dtype=torch.long)
    right[1, 4:] = 0
    left = torch.ones(3, 6, dtype=torch.long)
    left[1, :2] = 0
    left[2, :5] = 0           # 5 pads: their queries see no key under the causal mask
    return ids, right, left


def test_bert_position_ids_hidden_states_attentions(device):
    # output_attentions needs transformers' eager attention (sdpa returns none)
    m = _bert(attn_implementation="eager")
    ids, mask, _ = _ids()
    tt = torch.zeros_like(ids)
    tt[:, 3:] = 1
    pos = torch.tensor([[5, 4, 3, 2, 1, 0]]).repeat(3, 1)
    kw = dict(attention_mask=mask, token_type_ids=tt, position_ids=pos)
    with torch.no_grad():
        ref = m(ids, output_hidden_states=True, output_attentions=True, **kw)
    g = get_huggingface_bridge().convert_transformer(m, device=device)
    out = g(ids, output_hidden_states=True, output_attentions=True, **kw)   # torch tensors in
    _close(out.last_hidden_state, ref.last_hidden_state)
    _close(out["pooler_output"], ref.pooler_output)
    _close(out[0], ref[0])
    assert len(out.hidden_states) == len(ref.hidden_states) == 3
    for a, r in zip(out.hidden_states + out.attentions, ref.hidden_states + ref.attentions):
        _close(a, r)
    plain = g(ids.numpy())
    assert plain.hidden_states is None and len(plain.to_tuple()) == 2


def test_bert_activations_and_gradients(device):
    # transformers' activation names beyond gelu/relu (silu, quick_gelu, ... were a ValueError)
    ids, mask, _ = _ids()
    for act in ("gelu_new", "quick_gelu"):
        m = _bert(hidden_act=act, layer_norm_eps=1e-5)
        ref = m(ids, attention_mask=mask)
        g = get_huggingface_bridge().convert_transformer(m, device=device)
        out = g(ids, attention_mask=mask)
        _close(out.last_hidden_state, ref.last_hidden_state)
    (ref.pooler_output ** 2).sum().backward()
    (out.pooler_output * out.pooler_output).sum().backward()
    grads = dict(m.named_parameters())
    for k, p in g.named_parameters():
        if k in ("embeddings.word_embeddings.weight", "encoder.layer.0.intermediate.dense.weight"):
            np.testing.assert_allclose(np.asarray(p.grad), grads[k].grad.numpy(), atol=1e-5)
    with pytest.raises(NotImplementedError, match="activation 'xielu'"):
        get_huggingface_bridge().from_state_dict({"model_type": "bert", "hidden_act": "xielu"},
                                                 {})


def test_bert_decoder_is_causal(device):
    # BertConfig(is_decoder=True), BertLMHeadModel's encoder, left padded: was bidirectional
    m = _bert(is_decoder=True)
    ids, _, left = _ids()
    with torch.no_grad():
        ref = m(ids, attention_mask=left)
    out = get_huggingface_bridge().convert_transformer(m, device=device)(ids, attention_mask=left)
    _close(out.last_hidden_state, ref.last_hidden_state)


def test_bert_and_roberta_from_save_pretrained(device, tmp_path):
    bridge = get_huggingface_bridge()
    m = _bert()
    m.save_pretrained(tmp_path / "bert")
    ids, mask, _ = _ids()
    with torch.no_grad():
        ref = m(ids, attention_mask=mask)
    # the directory (its config.json read), the file beside it, or the directory's name
    for g in (bridge.load_safetensors(tmp_path / "bert", device=device),
              bridge.load_safetensors(str(tmp_path / "bert" / "model.safetensors"), device=device),
              bridge.convert_transformer(str(tmp_path / "bert"), device=device)):
        out = g(ids.numpy(), attention_mask=mask.numpy())
        _close(out.last_hidden_state, ref.last_hidden_state)
        _close(out.pooler_output, ref.pooler_output)
    torch.manual_seed(0)
    xr = transformers.XLMRobertaModel(transformers.XLMRobertaConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=16)).eval()
    rids = ids.clone()
    rids[mask == 0] = xr.config.pad_token_id
    with torch.no_grad():
        ref = xr(rids, attention_mask=mask)
    out = bridge.convert_transformer(xr, device=device)(rids, attention_mask=mask)
    _close(out.last_hidden_state, ref.last_hidden_state)


@pytest.mark.parametrize("pad", ["none", "right", "left"])
def test_gpt2_model_padding(device, pad):
    torch.manual_seed(0)
    m = transformers.GPT2Model(_gpt2_config()).eval()
    ids, right, left = _ids()
    mask = {"none": None, "right": right, "left": left}[pad]
    with torch.no_grad():
        ref = m(ids, attention_mask=mask, output_hidden_states=True)
    g = get_huggingface_bridge().convert_transformer(m, device=device)
    assert type(g).__name__ == "GrillyGPT2Model"
    assert set(g.state_dict()) == set(m.state_dict())           # transformers' names
    out = g(ids.numpy(), attention_mask=None if mask is None else mask.numpy(),
            output_hidden_states=True)
    _close(out.last_hidden_state, ref.last_hidden_state)
    for a, r in zip(out.hidden_states, ref.hidden_states, strict=True):
        _close(a, r)


def test_gpt2_lm_head_logits_loss_gradients(device):
    torch.manual_seed(0)
    m = transformers.GPT2LMHeadModel(_gpt2_config(scale_attn_by_inverse_layer_idx=True)).eval()
    ids, _, left = _ids()
    labels = ids.clone()
    labels[left == 0] = -100
    ref = m(ids, attention_mask=left, labels=labels)
    ref.loss.backward()
    g = get_huggingface_bridge().convert_transformer(m, device=device)
    assert g.lm_head.weight is g.transformer.wte.weight                 # tied
    out = g(ids, attention_mask=left, labels=labels)
    _close(out.logits, ref.logits)
    _close(out.loss, ref.loss)
    out.loss.backward()
    grads = dict(m.named_parameters())
    for k, p in g.named_parameters():
        if k in ("transformer.wte.weight", "transformer.wpe.weight",
                 "transformer.h.0.attn.c_attn.weight", "transformer.h.1.mlp.c_fc.bias"):
            np.testing.assert_allclose(np.asarray(p.grad), grads[k].grad.numpy(), atol=1e-5)


def test_gpt2_from_save_pretrained_untied_sharded(device, tmp_path):
    torch.manual_seed(0)
    bridge = get_huggingface_bridge()
    ids, right, _ = _ids()
    tied = transformers.GPT2LMHeadModel(_gpt2_config(attn_implementation="eager")).eval()
    tied.save_pretrained(tmp_path / "tied")        # the tied lm_head.weight is left out
    untied = transformers.GPT2LMHeadModel(_gpt2_config(tie_word_embeddings=False,
                                                       activation_function="relu")).eval()
    untied.save_pretrained(tmp_path / "untied", max_shard_size="30KB")      # shards
    for name, m in (("tied", tied), ("untied", untied)):
        with torch.no_grad():
            ref = m(ids, attention_mask=right, output_attentions=name == "tied")
        g = bridge.load_safetensors(tmp_path / name, device=device)
        assert type(g).__name__ == "GrillyGPT2LMHeadModel"
        assert (g.lm_head.weight is g.transformer.wte.weight) == (name == "tied")
        out = g(ids, attention_mask=right, output_attentions=name == "tied")
        _close(out.logits, ref.logits)
        for a, r in zip(out.attentions or (), ref.attentions or (), strict=True):
            _close(a, r)


def test_other_architectures_not_implemented():
    bridge = get_huggingface_bridge()
    t5 = transformers.T5Model(transformers.T5Config(vocab_size=10, d_model=8, d_kv=4, d_ff=8,
                                                    num_layers=1, num_heads=2))
    with pytest.raises(NotImplementedError, match="model_type 't5'"):
        bridge.convert_transformer(t5)
    llama = transformers.LlamaConfig(vocab_size=10, hidden_size=8, intermediate_size=8,
                                     num_hidden_layers=1, num_attention_heads=2)
    with pytest.raises(NotImplementedError, match="model_type 'llama'"):
        bridge.from_state_dict(llama, {})
    with pytest.raises(NotImplementedError, match="add_cross_attention"):
        bridge.from_state_dict(_gpt2_config(add_cross_attention=True), {})
    with pytest.raises(ValueError, match="convert_transformer"):
        bridge.convert_transformer("no-such-directory")
    assert gp.utils.GrillyGPT2Model is not None
