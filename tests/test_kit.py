"""The conformance kit can fail: a plugin with a wrong kernel, a missing required kernel or a
refused dtype is caught and classified, and ``grilly conformance`` exits non-zero."""
from __future__ import annotations

import gc
import importlib.util
import json
import os
import sys

import numpy as np
import pytest

import grilly as gp
from grilly.backends import Backend, Device, hookimpl, registry
from grilly.cli import main
from grilly.testing import report


class _Plugin:
    """A backend built from the cpu device's kernels, with ``changes`` applied (None removes)."""

    def __init__(self, name: str, changes: dict, refuse=()):
        cpu = registry.device("cpu")
        table = {k: v for k, v in {**cpu.kernels, **changes}.items() if v is not None}
        refused = {d.name for d in refuse}

        class _B(Backend):
            def devices(self):
                return self._devs

            def kernels(self):
                return table

            def supports_dtype(self, device, dtype):
                return dtype.name not in refused

        _B.name = name
        self.backend = _B()
        self.backend._devs = [Device(self.backend, 0, "test backend for test_kit")]

    @hookimpl
    def grilly_backends(self):
        return [self.backend]


@pytest.fixture
def plugin():
    made = []

    def make(name, changes, refuse=()):
        p = _Plugin(name, changes, refuse)
        registry.register(p, name=f"test_kit.{name}")
        made.append(p)
        return p
    yield make
    for p in made:
        registry.unregister(p)


def _run(device: str, tmp_path, files: tuple, *select: str,
         xfails: str | None = None) -> tuple[int, dict]:
    """Run the kit's tests of ``files`` (its suite's other files are not even collected) that
    ``select`` names, in this process."""
    out = tmp_path / "kit.json"
    ignore = [a for f in sorted(os.listdir(report.SUITE))
              if f.startswith("test_") and f.endswith(".py") and f not in files
              for a in ("--ignore", os.path.join(report.SUITE, f))]
    # the nested pytest run collects garbage in full several times (at its end: 5 gc.collect()):
    # in a worker that has run a thousand tests each one walks its whole heap (5-10 s a kit
    # run under CI's load); frozen, that heap is left out and the run sees only its own objects
    gc.freeze()
    try:
        rc = report.run(device, str(out), xfails, extra_args=("-k", " or ".join(select), *ignore))
    finally:
        gc.unfreeze()
    return rc, json.loads(out.read_text())


def test_wrong_result_fails_and_is_classified(plugin, tmp_path, capsys):
    cpu_sin = registry.device("cpu").kernels["sin"]
    plugin("kitwrong", {"sin": lambda shape, dtype, x: cpu_sin(shape, dtype, x + 1e-3)})
    # sin's neighbours by name (asin, sinh, asinh) and exp's pass: only sin's tests are blamed
    rc, rep = _run("kitwrong", tmp_path, ("test_elementwise.py",), "test_unary and (sin- or exp-)")
    assert rc == 1
    sins = {t: r for t, r in rep["tests"].items() if "[sin-" in t}
    assert sins and all(r["outcome"] == "failed" and r["family"] == "elementwise"
                        and r["kernels"] == ["sin"] for r in sins.values())
    others = [r for t, r in rep["tests"].items() if t not in sins]
    assert others and all(r["outcome"] == "passed" for r in others)
    assert rep["counts"]["elementwise"]["failed"] == len(sins) == rep["counts"]["total"]["failed"]
    assert "FAILED test_elementwise.py::test_unary[sin-float32]" in capsys.readouterr().out


def test_wrong_dtype_or_shape_fails(plugin, tmp_path):
    cpu = registry.device("cpu").kernels
    plugin("kitshape", {"add": lambda shape, dtype, a, b: cpu["add"](shape, dtype, a, b)[..., :1],
                        "argmax": lambda b, axis, kd: cpu["argmax"](b, axis, kd).astype(np.int32)})
    rc, rep = _run("kitshape", tmp_path, ("test_elementwise.py", "test_reductions.py"),
                   "test_binary and add-", "test_arg_extremes")
    assert rc == 1
    out = {t: r["outcome"] for t, r in rep["tests"].items()}
    broken = [t for t in out if "[add-" in t or "argmax" in t or "ties" in t]
    assert len(broken) > 20 and all(out[t] == "failed" for t in broken)
    assert all(v == "passed" for t, v in out.items() if t not in broken)


def test_missing_required_kernel_exits_nonzero(plugin, tmp_path, capsys):
    plugin("kitlacks", {"cumulative_sum": None, "hypot": None})
    rc, rep = _run("kitlacks", tmp_path, ("test_reductions.py", "test_rules.py", "test_elementwise.py"),
                   "test_scans", "test_required", "test_binary and hypot")
    assert rc == 1
    assert rep["missing_required"] == ["cumulative_sum"] and "hypot" in rep["missing_optional"]
    t = rep["tests"]
    assert t["test_rules.py::test_required_kernels_provided"]["outcome"] == "failed"
    scans = [r for k, r in t.items() if "cumulative_sum" in k]
    assert scans and all(r["outcome"] == "missing kernel" for r in scans)
    hyp = [r for k, r in t.items() if "hypot" in k]
    assert hyp and all(r["outcome"] == "missing kernel" for r in hyp)
    assert rep["counts"]["elementwise"]["missing kernel"] == len(hyp)
    out = capsys.readouterr().out
    assert "missing required kernels (1): cumulative_sum" in out and "FAIL" in out
    assert main(["kernels", "kitlacks"]) == 1
    assert "MISSING (required): cumulative_sum" in capsys.readouterr().out


def test_missing_optional_kernel_is_not_fatal(plugin, tmp_path):
    plugin("kitopt", {"hypot": None})
    rc, rep = _run("kitopt", tmp_path, ("test_elementwise.py",), "test_binary and (hypot or add-)")
    assert rc == 0
    assert {r["outcome"] for r in rep["tests"].values()} == {"passed", "missing kernel"}


def test_refused_dtype_is_classified(plugin, tmp_path):
    plugin("kitnof16", {}, refuse=(gp.float16,))
    rc, rep = _run("kitnof16", tmp_path, ("test_elementwise.py",),
                   "test_unary and (float16 or float32) and exp")
    assert rc == 0
    out = {t: r["outcome"] for t, r in rep["tests"].items()}
    assert out["test_elementwise.py::test_unary[exp-float16]"] == "dtype not supported"
    assert out["test_elementwise.py::test_unary[exp-float32]"] == "passed"


def test_xfails_file(plugin, tmp_path):
    cpu_exp = registry.device("cpu").kernels["exp"]
    plugin("kitxf", {"exp": lambda shape, dtype, x: cpu_exp(shape, dtype, x) * 1.01})
    xf = tmp_path / "xfails.txt"
    ids = [f"test_elementwise.py::test_unary[exp-{d}]" for d in
           ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
            "float32", "float64", "complex64", "complex128")]
    xf.write_text("# known\n" + "\n".join(f"{i}  # wrong on purpose" for i in ids) + "\n")
    rc, rep = _run("kitxf", tmp_path, ("test_elementwise.py",), "test_unary and exp-", xfails=str(xf))
    assert rc == 0 and {r["outcome"] for r in rep["tests"].values()} == {"xfailed"}
    # on a correct device the same list fails: an xfail that passes is reported (strict)
    rc, rep = _run("cpu", tmp_path, ("test_elementwise.py",), "test_unary and exp-", xfails=str(xf))
    assert rc == 1 and {r["outcome"] for r in rep["tests"].values()} == {"failed"}


def test_pytest_pyargs_entry(tmp_path, monkeypatch, capsys):
    """``pytest --pyargs grilly.testing`` with the kit's plugin runs the kit on a device (the
    command line's arguments, given to pytest in this process: a subprocess spent 3 s importing
    grilly and pytest's plugins again)."""
    monkeypatch.chdir(tmp_path)
    gc.freeze()   # as in _run: the nested run's full collections skip this process's heap
    try:
        rc = pytest.main(["-q", "-p", "grilly.testing.plugin", "-p", "no:cacheprovider",
                          "--pyargs", "grilly.testing.suite.test_rules", "--grilly-device", "cpu"])
    finally:
        gc.unfreeze()
    out = capsys.readouterr().out
    assert rc == 0, out[-3000:]
    assert " passed" in out and " failed" not in out


def test_kernels_command(capsys):
    assert main(["kernels", "cpu", "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert table["device"] == "cpu" and "sin" in table["families"]["elementwise"]["provided"]
    assert not any(f["missing_required"] for f in table["families"].values())


def test_docs_contract_table_is_current(monkeypatch):
    """docs/backends.md's kernel table is generated from grilly.backends.contract."""
    tool = os.path.join(os.path.dirname(__file__), "..", "tools", "contract_table.py")
    monkeypatch.setattr(sys, "path", list(sys.path))   # the tool prepends the checkout
    monkeypatch.setattr(sys, "argv", [tool, "--check"])
    spec = importlib.util.spec_from_file_location("contract_table", tool)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main() == 0, "docs/backends.md is stale: run python3 tools/contract_table.py"
