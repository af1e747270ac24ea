"""The HuggingFace bridge: a small randomly initialised BertModel (built locally, no download)
converted to grilly matches transformers' outputs on every device."""
import numpy as np
import pytest

import grilly as gp
from grilly.utils import get_huggingface_bridge

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def bert():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=128,
                                  max_position_embeddings=64)
    return transformers.BertModel(cfg).eval()


def _inputs():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 100, (3, 12), generator=g)
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[1, 8:] = 0
    mask[2, 3:] = 0
    tt = torch.zeros(3, 12, dtype=torch.long)
    tt[:, 6:] = 1
    return ids, mask, tt


def test_bert_matches_transformers(bert, device):
    ids, mask, tt = _inputs()
    with torch.no_grad():
        ref = bert(input_ids=ids, attention_mask=mask, token_type_ids=tt)
    g = get_huggingface_bridge().convert_transformer(bert, device=device)
    out = g(ids.numpy(), attention_mask=mask.numpy(), token_type_ids=tt.numpy())
    np.testing.assert_allclose(np.asarray(out.last_hidden_state), ref.last_hidden_state.numpy(),
                               atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(out.pooler_output), ref.pooler_output.numpy(),
                               atol=1e-4, rtol=1e-4)
    no_mask = g(gp.asarray(ids.numpy(), device=device))
    with torch.no_grad():
        ref2 = bert(input_ids=ids)
    np.testing.assert_allclose(np.asarray(no_mask.last_hidden_state),
                               ref2.last_hidden_state.numpy(), atol=1e-4, rtol=1e-4)


def test_bert_from_safetensors(bert, tmp_path, device):
    from safetensors.torch import save_file

    path = tmp_path / "model.safetensors"
    save_file({k: v.contiguous() for k, v in bert.state_dict().items()}, str(path))
    g = get_huggingface_bridge().load_safetensors(str(path), bert.config, device=device)
    ids, mask, tt = _inputs()
    with torch.no_grad():
        ref = bert(input_ids=ids, attention_mask=mask, token_type_ids=tt)
    out = g(ids.numpy(), attention_mask=mask.numpy(), token_type_ids=tt.numpy())
    np.testing.assert_allclose(np.asarray(out.last_hidden_state), ref.last_hidden_state.numpy(),
                               atol=1e-4, rtol=1e-4)


def test_bridge_errors():
    with pytest.raises(ValueError, match="convert_transformer"):
        get_huggingface_bridge().convert_transformer(torch.nn.Linear(2, 2))
