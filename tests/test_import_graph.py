"""The import graph points one way: nn/optim -> autograd -> array -> backends, without cycles
(function-local imports and sys.modules lookups count), and no backend needs the array layer."""
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import import_graph  # noqa: E402

BACKEND_MODULES = sorted(
    m for m in import_graph.graph() if m.startswith("grilly.backends"))


def test_no_import_cycles():
    assert import_graph.cycles() == []


def test_no_backend_imports_another_backend_or_a_layer_above():
    g = import_graph.graph()
    for m in BACKEND_MODULES:
        for d in g[m]:
            assert d.startswith("grilly.backends"), f"{m} imports {d}"
            for a, b in (("cpu_numba", "vulkan"), ("vulkan", "cpu_numba")):
                assert not (f".{a}" in m and f".{b}" in d), f"{m} imports {d}"


_BLOCKED = """
import sys, types
pkg = types.ModuleType("grilly"); pkg.__path__ = [{path!r}]
sys.modules["grilly"] = pkg            # the package, without running its __init__
for layer in ("array", "autograd", "nn", "optim", "random", "linalg", "fft"):
    sys.modules["grilly." + layer] = None   # importing any of these raises ImportError
import importlib
for name in {mods!r}:
    importlib.import_module(name)
print("ok", len({mods!r}))
"""


def test_every_backend_module_imports_with_the_array_layer_blocked():
    code = _BLOCKED.format(path=str(ROOT / "grilly"), mods=BACKEND_MODULES)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("ok")


@pytest.mark.parametrize("g, want", [
    ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_the_cycle_finder_finds_cycles(g, want):
    assert import_graph.cycles(g) == want
