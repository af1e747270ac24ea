"""Moving models and data in and out of grilly as a user does: load_state_dict of checkpoints
that do not fit, torch checkpoints (old BatchNorm, tensors that require grad), pickle and
copy.deepcopy of models with their optimizers, big-endian numpy data, and the HuggingFace
bridge on RoBERTa. Each test failed before its fix."""
import copy
import pickle

import numpy as np
import pytest

import grilly as gp
from grilly import nn, optim


def _mlp(device):
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2)).to(device)


def _host(m) -> dict:
    return {k: np.array(v) for k, v in m.state_dict().items()}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_failed_load_leaves_the_module_unchanged(device):
    """A shape mismatch in a later key raised after the earlier keys were written (half a
    checkpoint loaded); now every key is checked first, every problem is listed, and the
    error is a RuntimeError, as torch's (still a ValueError, as grilly's was)."""
    m = _mlp(device)
    before = _host(m)
    sd = {k: np.full(v.shape, 7, v.dtype) for k, v in before.items()}
    sd["3.weight"] = np.zeros((5, 5), np.float32)
    sd["1.running_var"] = np.zeros((3,), np.float32)
    with pytest.raises(RuntimeError, match=r"'1\.running_var' has shape \(3,\).*'3\.weight' has "
                       r"shape \(5, 5\) in the state dict but \(2, 4\)") as info:
        m.load_state_dict(sd, strict=False)   # a size mismatch is an error whatever strict is
    assert isinstance(info.value, ValueError)
    assert _same(_host(m), before)
    # a value that is not numeric data: named, nothing written
    for bad in ("abc", None, np.zeros(3, dtype=[("a", "f4")])):
        sd = {k: np.ones(v.shape, v.dtype) for k, v in before.items()}
        sd["3.bias"] = bad
        with pytest.raises(RuntimeError, match=r"'3\.bias' is not"):
            m.load_state_dict(sd)
        assert _same(_host(m), before)
    with pytest.raises(TypeError, match="load_state_dict: expected a mapping"):
        m.load_state_dict([("0.weight", before["0.weight"])])
    assert repr(m.load_state_dict(before)) == "<All keys matched successfully>"


def test_load_torch_tensors_that_require_grad(device):
    """torch loads ``dict(model.named_parameters())`` (tensors that require grad); grilly
    refused them (DLPack export of such a tensor fails). A meta tensor (no data) is named."""
    torch = pytest.importorskip("torch")
    t = torch.nn.Linear(3, 2)
    m = nn.Linear(3, 2).to(device)
    m.load_state_dict(dict(t.named_parameters()))
    np.testing.assert_array_equal(np.asarray(m.weight), t.weight.detach().numpy())
    assert m.weight.device == device and m.weight.requires_grad
    before = _host(m)
    with pytest.raises(RuntimeError, match=r"'bias' is a tensor on the 'meta' device"):
        m.load_state_dict({"weight": torch.zeros(2, 3), "bias": torch.empty(2, device="meta")})
    assert _same(_host(m), before)


def test_batchnorm_checkpoint_without_num_batches_tracked(device):
    """Old torch BatchNorm checkpoints lack num_batches_tracked; torch loads them with
    strict=True (the count kept), grilly reported the key missing."""
    torch = pytest.importorskip("torch")
    tbn = torch.nn.BatchNorm2d(3)
    tbn(torch.randn(4, 3, 2, 2))
    old = {k: v for k, v in tbn.state_dict().items() if k != "num_batches_tracked"}
    bn = nn.BatchNorm2d(3).to(device)
    bn.num_batches_tracked[...] = 5
    res = bn.load_state_dict(old)
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert int(bn.num_batches_tracked) == 5
    np.testing.assert_allclose(np.asarray(bn.running_mean), tbn.running_mean.numpy(), rtol=1e-6)
    assert bn.load_state_dict(tbn.state_dict()).missing_keys == []
    assert int(bn.num_batches_tracked) == 1
    # other keys are still reported missing
    with pytest.raises(RuntimeError, match=r"missing keys \['running_var'\]"):
        bn.load_state_dict({k: v for k, v in old.items() if k != "running_var"})


def test_pickled_model_keeps_its_parameters(device):
    """pickle rebuilt the arrays plainly, so a loaded model's parameters were no longer
    nn.Parameter (isinstance false; tying a weight to one raised TypeError)."""
    m = _mlp(device)
    m2 = pickle.loads(pickle.dumps(m))
    assert all(isinstance(p, nn.Parameter) and p.device == device for p in m2.parameters())
    assert _same(_host(m2), _host(m))
    assert [n for n, _ in m2.named_parameters()] == [n for n, _ in m.named_parameters()]
    m2[3].weight = m2[3].weight   # reassigning a parameter needs an nn.Parameter
    head = nn.Linear(4, 2).to(device)
    head.weight = m2[3].weight   # weight tying
    assert head.weight is m2[3].weight


X = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
Y = np.random.default_rng(1).standard_normal((8, 2)).astype(np.float32)


def _train(m, opt, steps, device):
    for _ in range(steps):
        opt.zero_grad()
        loss = gp.mean((m(gp.asarray(X, device=device)) - gp.asarray(Y, device=device)) ** 2)
        loss.backward()
        opt.step()


@pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.01)),
                                     ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
                                     ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True))])
def test_copied_optimizer_keeps_its_state(device, name, kw):
    """The optimizer's state is keyed by id(param): a deepcopy or pickle of (model, optimizer)
    kept the old ids, so the copy lost every moment and step count and training diverged."""
    m = _mlp(device)
    opt = getattr(optim, name)(m.parameters(), **kw)
    _train(m, opt, 2, device)
    m3 = pickle.loads(pickle.dumps(m))   # the state-dict route worked already: the reference
    o3 = getattr(optim, name)(m3.parameters(), **kw)
    o3.load_state_dict(pickle.loads(pickle.dumps(opt.state_dict())))
    copies = [copy.deepcopy((m, opt)), pickle.loads(pickle.dumps((m, opt))), (m3, o3)]
    for _, o in copies:
        assert len(o.state_dict()["state"]) == len(list(m.parameters()))
    _train(m, opt, 3, device)
    want = _host(m)
    for mc, oc in copies:
        assert oc.param_groups[0]["params"][0] is mc[0].weight
        _train(mc, oc, 3, device)
        assert _same(_host(mc), want)


@pytest.mark.parametrize("dtype", [">f4", ">f8", ">i2", ">u8", ">c8", ">f2"])
def test_asarray_of_big_endian_data(device, dtype):
    """numpy arrays read from big-endian files ('>f4') raised TypeError ('no dtype for numpy
    dtype'); numpy and torch.tensor take them: the values, in the native dtype."""
    h = (np.arange(6).reshape(2, 3) - 2).astype(dtype)
    g = gp.asarray(h, device=device)
    native = h.dtype.newbyteorder("=")
    assert g.dtype == gp.asarray(np.zeros(1, native)).dtype
    got = np.asarray(g)
    assert got.dtype == native and np.array_equal(got, h)
    assert np.array_equal(np.asarray(gp.asarray(h[:, ::-2], device=device)), h[:, ::-2])
    assert gp.asarray(np.array(2.5, ">f8"), device=device).item() == 2.5
    with pytest.raises(TypeError, match="no dtype"):
        gp.asarray(np.zeros(2, dtype=[("a", ">f4")]), device=device)


@pytest.fixture(scope="module")
def roberta():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import test_hf_bridge  # noqa: F401  (hides torchvision builds that cannot load)
    import transformers

    torch.manual_seed(0)
    cfg = transformers.RobertaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=40, pad_token_id=1)
    return transformers.RobertaForMaskedLM(cfg).eval()


def test_roberta_bridge_matches_transformers(roberta, device, tmp_path):
    """The bridge accepted RoBERTa but numbered positions 0, 1, ... as BERT does; RoBERTa counts
    from pad_token_id + 1 over the non-padding tokens: hidden states were off by ~2. Its
    safetensors files (a 'roberta.' prefix) did not load at all."""
    import torch
    from safetensors.torch import save_file

    from grilly.utils import get_huggingface_bridge

    ids = torch.randint(3, 100, (2, 7), generator=torch.Generator().manual_seed(2))
    ids[1, 5:] = 1   # padding at the end, as a tokenizer pads
    mask = (ids != 1).long()
    with torch.no_grad():
        ref = roberta.roberta(input_ids=ids, attention_mask=mask).last_hidden_state.numpy()
    br = get_huggingface_bridge()
    g = br.convert_transformer(roberta, device=device)
    out = g(ids.numpy(), attention_mask=mask.numpy()).last_hidden_state
    np.testing.assert_allclose(np.asarray(out), ref, atol=1e-4, rtol=1e-4)
    path = tmp_path / "roberta.safetensors"
    save_file({k: v.contiguous() for k, v in roberta.state_dict().items()
               if not k.startswith("lm_head.")}, str(path))
    g2 = br.load_safetensors(str(path), roberta.config, device=device)
    out2 = g2(ids.numpy(), attention_mask=mask.numpy()).last_hidden_state
    np.testing.assert_allclose(np.asarray(out2), ref, atol=1e-4, rtol=1e-4)
