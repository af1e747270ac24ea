"""The HuggingFace bridge: a small randomly initialised BertModel (built locally, no download)
converted to grilly matches transformers' outputs on every device."""
import numpy as np
import pytest

import grilly as gp
from grilly.utils import get_huggingface_bridge

torch = pytest.importorskip("torch")


def _hide_unloadable_torch_extras() -> None:
    """CI installs torch's CPU wheel, while spikingjelly pulls torchvision/torchaudio from PyPI,
    builds that cannot load against it. transformers imports them whenever they are installed,
    BertModel included; BERT needs neither, so hide the ones that fail to load (checked in a
    subprocess: a failed import can leave torch half-registered)."""
    import subprocess
    import sys

    code = ("import importlib, sys\n"
            "for m in ('torchvision', 'torchaudio'):\n"
            "    try:\n"
            "        importlib.import_module(m)\n"
            "    except Exception:\n"
            "        print(m)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    broken = set(r.stdout.split())
    if not broken:
        return
    from transformers.utils import import_utils

    real = import_utils._is_package_available

    def available(pkg_name, return_version=False):
        if pkg_name in broken:
            return False, ("N/A" if return_version else None)
        return real(pkg_name, return_version)
    import_utils._is_package_available = available
    for check in ("is_torchvision_available", "is_torchaudio_available"):
        getattr(import_utils, check).cache_clear()   # computed (and cached) at import


transformers = pytest.importorskip("transformers")
_hide_unloadable_torch_extras()


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
