"""Convert a HuggingFace BERT encoder to grilly and compare its outputs with transformers'.

    python examples/hf_bridge.py [PATH_TO_LOCAL_CHECKPOINT] [--device cpu]

With a path (a local directory transformers can load, e.g. a downloaded bert-base-uncased), that
model is converted; without one, a small randomly initialised BertConfig built here (no
download). Prints the largest difference from the torch model's outputs."""
from __future__ import annotations

import argparse

import numpy as np


def hide_unloadable_torch_extras() -> list[str]:
    """transformers imports torchvision/torchaudio whenever they are installed, BertModel
    included. With the dev extra, torch is the CPU wheel while spikingjelly pulls torchvision
    from PyPI, a build that cannot load against it ("operator torchvision::nms does not exist"),
    and BertModel then fails to import. BERT needs neither: hide the ones that fail to load
    (checked in a subprocess, since a failed import can leave torch half-registered), as
    tests/test_hf_bridge.py does. Returns the names hidden."""
    import subprocess
    import sys

    code = ("import importlib\n"
            "for m in ('torchvision', 'torchaudio'):\n"
            "    try:\n"
            "        importlib.import_module(m)\n"
            "    except Exception:\n"
            "        print(m)\n")
    broken = set(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                text=True).stdout.split())
    if not broken:
        return []
    from transformers.utils import import_utils

    real = import_utils._is_package_available

    def available(pkg_name, return_version=False):
        if pkg_name in broken:
            return False, ("N/A" if return_version else None)
        return real(pkg_name, return_version)
    import_utils._is_package_available = available
    for check in ("is_torchvision_available", "is_torchaudio_available"):
        getattr(import_utils, check).cache_clear()   # computed (and cached) at import
    return sorted(broken)


def main(argv=None) -> float:
    import torch
    import transformers

    hidden = hide_unloadable_torch_extras()
    if hidden:
        print(f"(hiding {', '.join(hidden)} from transformers: installed but cannot load "
              f"against torch {torch.__version__})")

    from grilly.utils import get_huggingface_bridge

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=None)
    ap.add_argument("--device", default=None)
    a = ap.parse_args(argv)
    if a.path:
        hf = transformers.AutoModel.from_pretrained(a.path, local_files_only=True).eval()
    else:
        torch.manual_seed(0)
        cfg = transformers.BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, intermediate_size=512)
        hf = transformers.BertModel(cfg).eval()
    model = get_huggingface_bridge().convert_transformer(hf, device=a.device)
    ids = torch.randint(0, hf.config.vocab_size, (2, 16), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, 10:] = 0
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=mask)
    out = model(ids.numpy(), attention_mask=mask.numpy())
    diff = float(np.abs(np.asarray(out.last_hidden_state) - ref.last_hidden_state.numpy()).max())
    print(f"converted {type(hf).__name__} ({hf.config.num_hidden_layers} layers, hidden "
          f"{hf.config.hidden_size}); max |grilly - torch| of last_hidden_state: {diff:.2e}")
    return diff


if __name__ == "__main__":
    main()
