"""Claims of README.md and docs/*.md that a new user relies on, held against the code; and the
examples run as the docs say to run them. Each failed before its fix, except the jit test
(docs/jit.md was corrected to the code's behaviour)."""
import importlib.util
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import grilly as gp
from grilly import cli
from grilly.backends import contract

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
        ROOT / "examples" / "plugins" / "numpy_backend" / "README.md"]
_PATH = re.compile(r"(?<![\w/.~-])((?:grilly|tests|bench|tools|shaders|examples|docs|conformance|\.ci)"
                   r"/[\w./*-]*\w)")


def test_paths_named_in_docs_exist():
    """Every repository path a doc names exists (docs/conformance.md named
    conformance/kit-xfails-vulkan.txt, removed when the list became empty)."""
    missing = []
    for doc in DOCS:
        text = doc.read_text()
        for m in _PATH.finditer(text):
            p = m.group(1)
            cands = [ROOT / p, ROOT / "grilly" / p, ROOT / "grilly" / "backends" / p]
            ok = any(list(c.parent.glob(c.name)) if "*" in p else c.exists() for c in cands)
            if not ok:
                missing.append(f"{doc.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}: {p}")
    assert not missing, missing


def test_contract_tier_counts_in_docs():
    """docs/architecture.md and docs/backends.md give the contract's tier sizes (architecture.md
    said 54 composed and 38 optional, from before the search, nn and snn kernels)."""
    n = Counter(k.tier for k in contract.KERNELS.values())
    arch = (ROOT / "docs" / "architecture.md").read_text()
    assert f"**required** ({n['required']})" in arch
    assert f"**composed** ({n['composed']})" in arch
    assert f"**optional** ({n['optional']})" in arch
    backends = (ROOT / "docs" / "backends.md").read_text()
    assert (f"{len(contract.KERNELS)} kernels: {n['required']} required, {n['composed']} composed, "
            f"{n['optional']} optional.") in backends
    readme = (ROOT / "README.md").read_text()
    assert f"**The contract is small.** {n['required']} required primitives" in readme


def test_bfloat16_with_integer_array_names_bfloat16():
    """docs/amp.md: bfloat16 with an integer or bool array is a TypeError (the other floats
    promote with integers as NumPy's; ml_dtypes' bfloat16 has no such promotion). Its message
    said "float32" (the dtype bfloat16 ops compute in), not the caller's."""
    b = gp.ones(2, dtype=gp.bfloat16)
    for other in (gp.ones(2, dtype=gp.int32), gp.ones(2, dtype=gp.bool)):
        with pytest.raises(TypeError, match=r"no type promotion between bfloat16 and (int32|bool)"):
            b + other
    with pytest.raises(TypeError, match="between int32 and bfloat16"):
        gp.ones(2, dtype=gp.int32) * b
    assert (b + gp.ones(2, dtype=gp.float32)).dtype == gp.float32   # a wider float: unchanged
    assert (b * 2).dtype == gp.bfloat16


@pytest.mark.parametrize("cmd, words", [
    ("info", "JSON"), ("warmup", "cache"), ("conformance", "Exit status 0"),
    ("kernels", "Exit status 1"),
])
def test_cli_subcommand_help_says_what_it_does(cmd, words, capsys):
    """`grilly SUBCOMMAND --help` describes the command (it printed only the usage line)."""
    with pytest.raises(SystemExit) as e:
        cli.main([cmd, "--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert words in out, out


def test_jit_function_inside_a_trace_runs_eagerly():
    """docs/jit.md: traces do not nest (a second Tracer raises JitError), but a jitted function
    called inside a trace runs eagerly and the outer trace records its kernels."""
    import grilly
    from grilly.jit import JitError, Tracer

    x = gp.ones(3)
    inner = grilly.jit(lambda y: y * 2)
    outer = grilly.jit(lambda y: inner(y) + 1)
    assert outer(x).tolist() == [3.0, 3.0, 3.0]
    assert outer(x + 1).tolist() == [5.0, 5.0, 5.0]    # the replay runs inner's kernels too
    assert inner.traces == 0 and outer.traces == 1
    with Tracer():
        with pytest.raises(JitError, match="do not nest"):
            with Tracer():
                pass


def _load_example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_hf_bridge_example_runs():
    """README/docs/utils.md: `python examples/hf_bridge.py` converts a small random BERT. With
    the dev extra, torchvision (pulled by spikingjelly) cannot load against torch's CPU wheel
    and transformers' BertModel import failed ("operator torchvision::nms does not exist"); the
    example now hides such packages from transformers, as tests/test_hf_bridge.py does. Run in a
    fresh process: the failed import is what a user sees."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "hf_bridge.py"), "--device", "cpu"],
                         capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr[-3000:]
    diff = float(out.stdout.split("last_hidden_state:")[1].split()[0])
    assert diff < 1e-4


def test_capsule_example_prints_progress(capsys):
    """examples/train_capsule.py said nothing until its first epoch ended (two minutes on a
    cold kernel cache here); it now prints the untrained accuracy and progress within epochs."""
    ex = _load_example("train_capsule")
    ex.main(["--device", "cpu", "--epochs", "1", "--steps", "6", "--batch", "8"])
    out = capsys.readouterr().out
    assert out.startswith("untrained copy accuracy")
    assert "batch 1/6" in out and "epoch  1/1  loss" in out


def test_stdp_example_prints_readout_progress(tmp_path, capsys):
    """examples/stdp_unsupervised.py read out every digit (minutes) without a word after
    training; it now reports the readout's progress on stderr and writes the PNG it names."""
    ex = _load_example("stdp_unsupervised")
    png = tmp_path / "fields.png"
    ex.main(["--device", "cpu", "--neurons", "4", "--train", "60", "--steps", "5",
             "--eval-steps", "5", "--label-digits", "40", "--test-digits", "10", "--out", str(png)])
    cap = capsys.readouterr()
    assert "reading out training digits: 40/40" in cap.err
    assert "reading out test digits: 10/10" in cap.err
    assert f"receptive fields -> {png}" in cap.out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_warmup_covers_training_kernels_and_threaded_variants(monkeypatch):
    """README: `grilly warmup` compiles every op ahead of use, for no first-call cost. It ran
    each namespace op once on 3-element arrays: the threaded (prange) variants that large arrays
    take, and the layer, optimizer and spiking kernels, still compiled on first use (the digits
    SNN example's first epoch: 66 s from a cold cache here, 1.2 s after the nn group)."""
    from grilly import warmup
    from grilly.backends.cpu_numba import jit

    assert ("nn", "float32") in warmup.tasks() and ("nn", "float64") in warmup.tasks()
    seen = []
    monkeypatch.setitem(warmup._GROUPS, "probe", lambda gp_, name: seen.append(jit.PARALLEL_MIN))
    before = jit.PARALLEL_MIN
    assert warmup._run("probe", "float32")[:2] == ("probe", "float32")
    assert seen == [before, 0] and jit.PARALLEL_MIN == before
    warmup._nn(gp, "float32")          # the small (serial) pass runs
