"""What a backend author gets wrong, and what grilly says about it: each mistake is named (the
backend, the kernel, what was expected) instead of surfacing as a raw KeyError, pluggy assertion
or numpy traceback, and no mistake leaves the registry half-built (docs/backends.md)."""
from __future__ import annotations

import gc
import importlib
import json
import os
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly.backends import Backend, Device, contract, hookimpl, registry
from grilly.backends.cpu_numba import storage
from grilly.testing import report

reg_mod = importlib.import_module("grilly.backends.registry")


def _table(changes=None, remove=()):
    """The cpu backend's numpy storage kernels plus the cpu device's others, with changes."""
    cpu = registry.device("cpu").kernels
    t = {**{k: getattr(v, "__wrapped__", v) for k, v in cpu.items()}, **storage.KERNELS,
         **(changes or {})}
    return {k: v for k, v in t.items() if k not in remove}


class _B(Backend):
    priority = -5
    buffer_type = np.ndarray

    def __init__(self, name, table=None, **hooks):
        self.name, self._table = name, table if table is not None else _table()
        self._devs = [Device(self, 0, f"author test {name}")]
        for k, v in hooks.items():
            setattr(self, k, v.__get__(self))

    def devices(self):
        return self._devs

    def kernels(self):
        return self._table


class _P:
    def __init__(self, *backends):
        self.b = backends

    @hookimpl
    def grilly_backends(self):
        return list(self.b)


@pytest.fixture
def fresh(monkeypatch):
    """A registry of its own (the built-ins loaded), so nothing here leaks into other tests."""
    real = reg_mod.entry_points(group=reg_mod.ENTRY_POINT_GROUP)
    monkeypatch.setattr(reg_mod, "entry_points", lambda group: list(real))
    r = reg_mod.Registry()
    r.load()
    return r


@pytest.fixture
def plugin():
    made = []

    def make(backend, name=None):
        p = _P(backend)
        registry.register(p, name=name or f"author.{backend.name}")
        made.append(p)
        return p
    yield make
    for p in made:
        if registry.pm.is_registered(p):
            registry.unregister(p)


def _cpu_ok(r):
    a = np.arange(3.0)
    out = r.device("cpu").kernels["add"]((3,), gp.float64, a, a)
    assert np.array_equal(out, 2 * a)


# --- the registry ----------------------------------------------------------------------------

def test_kernels_hook_raising_leaves_the_registry_working(fresh):
    """Before: the exception escaped register(), the plugin stayed registered, and every later
    rebuild (register, set_checked) raised it again."""
    with pytest.warns(RuntimeWarning, match="kernels\\(\\) raised RuntimeError: boom"):
        fresh.register(_P(_B("kboom", kernels=lambda self: (_ for _ in ()).throw(
            RuntimeError("boom")))), name="kboom-plugin")
    assert "kboom" not in fresh.backends
    with pytest.raises(ValueError, match="'kboom'.*left out: kernels\\(\\) raised"):
        fresh.device("kboom")
    fresh.register(_P(_B("after")), name="after-plugin")   # the registry still works
    fresh.set_checked(True)
    assert "after" in fresh.backends
    _cpu_ok(fresh)


def test_a_failed_rebuild_unregisters_the_plugin(fresh, monkeypatch):
    p = _P(_B("halfway"))
    real = fresh._rebuild
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("rebuild failed")
        real()
    monkeypatch.setattr(fresh, "_rebuild", flaky)
    with pytest.raises(RuntimeError, match="rebuild failed"):
        fresh.register(p, name="halfway-plugin")
    assert not fresh.pm.is_registered(p) and "halfway" not in fresh.backends
    fresh.register(p, name="halfway-plugin")   # and can be registered again
    assert "halfway" in fresh.backends


def test_registering_twice_is_a_clear_error(fresh):
    """Before: pluggy's 'Plugin name already registered: 1403...=<...>' with its whole table,
    and unregistering twice an AssertionError."""
    p = _P(_B("twice"))
    fresh.register(p)
    with pytest.raises(ValueError, match="register: plugin '.*_P at 0x.*' is already registered"):
        fresh.register(p)
    with pytest.raises(ValueError, match="already registered"):
        fresh.register(p, name="another-name")
    with pytest.raises(ValueError, match="'twice' of plugin .* already provided by"):
        fresh.register(_P(_B("twice")))
    fresh.unregister(p)
    with pytest.raises(ValueError, match="unregister: .* is not a registered plugin"):
        fresh.unregister(p)
    with pytest.raises(ValueError, match="not a registered plugin"):
        fresh.unregister(name="no-such-plugin")
    fresh.register(p)   # unregistered cleanly: it registers again
    assert "twice" in fresh.backends


def test_default_plugin_name_is_readable(fresh):
    fresh.register(_P(_B("named")))
    assert fresh._origin["named"].startswith(f"{__name__}._P at 0x")


def test_invalid_backend_names_are_refused(fresh):
    """Before: a backend named 'bad:name' registered fine and no device name could reach it."""
    for bad in ("bad:name", "", "has space"):
        with pytest.raises(ValueError, match="register: plugin .*backend name"):
            fresh.register(_P(_B(bad)))
    with pytest.raises(ValueError, match="two backends named 'dup'"):
        fresh.register(_P(_B("dup"), _B("dup")))
    assert not {"bad:name", "", "has space", "dup"} & set(fresh.backends)
    _cpu_ok(fresh)


def test_devices_must_be_the_same_objects(fresh):
    """Before: fresh Device objects per devices() call got registered, the user's device had an
    empty kernel table, and every op said 'provides no from_host kernel'."""
    b = _B("fresh", devices=lambda self: [Device(self, 0, "new every call")])
    with pytest.warns(RuntimeWarning, match="same ones every time"):
        fresh.register(_P(b))
    with pytest.raises(ValueError, match="unknown device 'fresh' \\(backend 'fresh' was left out: "
                                         "devices\\(\\) returned new Device objects"):
        fresh.device("fresh")


def test_backends_hook_returning_the_wrong_thing(fresh):
    class One:
        @hookimpl
        def grilly_backends(self):
            return _B("single")

    class Cls:
        @hookimpl
        def grilly_backends(self):
            return [_B]

    with pytest.warns(RuntimeWarning, match="must return a list of Backend objects, got _B"):
        fresh.register(One())
    with pytest.warns(RuntimeWarning, match="the class _B \\(an instance is needed\\)"):
        fresh.register(Cls())
    _cpu_ok(fresh)


def test_a_kernel_that_is_not_callable_is_left_out(fresh):
    """Before: the table took the string and the first add raised "'str' object is not
    callable"."""
    with pytest.warns(RuntimeWarning, match="kernel 'add'.*is a str, not a callable"):
        fresh.register(_P(_B("notcall", _table({"add": "np.add"}))))
    dev = fresh.device("notcall")
    assert "add" not in dev.kernels and "multiply" in dev.kernels


# --- the array layer and checked mode --------------------------------------------------------

def test_missing_storage_kernel_is_named_not_a_key_error(plugin):
    """Before: a backend without to_host gave a bare KeyError: 'to_host' on the first read."""
    plugin(_B("noth", _table(remove=("to_host",))))
    x = gp.asarray([1.0, 2.0], device="noth")
    with pytest.raises(NotImplementedError, match="to_host: not available on device noth; "
                                                  "backend 'noth' provides no 'to_host' kernel"):
        np.asarray(x)
    assert "to_host" not in x.device.kernels and x.device.kernels.get("to_host") is None


@pytest.mark.usefixtures("checked")
def test_wrong_signature_names_kernel_and_contract(plugin):
    """Before: TypeError: <lambda>() takes 3 positional arguments but 4 were given."""
    plugin(_B("sig", _table({"sum": lambda buf, axes, out_dtype: np.sum(buf, axis=axes)})))
    x = gp.asarray([1.0, 2.0], device="sig")
    with pytest.raises(TypeError) as e:
        gp.sum(x)
    note = " ".join(e.value.__notes__)
    assert "backend 'sig' kernel 'sum' on sig" in note
    assert "the contract's call: sum(buf, axes, keepdims, out_dtype)" in note
    assert "signature (buf, axes, out_dtype) does not take this call" in note


@pytest.mark.usefixtures("checked")
def test_numpy_error_in_a_kernel_keeps_its_type_and_names_the_kernel(plugin):
    def sort(buf, axis, descending, stable):
        return np.sort(buf, axis=axis, kind="bogus")
    plugin(_B("nperr", _table({"sort": sort})))
    with pytest.raises(ValueError, match="sort kind") as e:
        gp.sort(gp.asarray([3.0, 1.0], device="nperr"))
    assert e.value.__notes__ == [
        "raised by backend 'nperr' kernel 'sort' on nperr, called as sort(float64 buffer (2,), "
        "0, False, True); the contract's call: sort(buf, axis, descending, stable) -> buf"]


@pytest.fixture
def checked():
    was = registry.checked
    registry.set_checked(True)
    yield
    registry.set_checked(was)


def test_signature_check_of_the_contract():
    assert contract.arity("add") == (4, 4) and contract.arity("exp") == (3, 3)
    assert contract.arity("reshape") == (2, 3) and contract.arity("lif_forward") == (7, 9)
    assert contract.arity("lif_backward") == (11, 14) and contract.arity("svd") is None
    assert contract.signature_problem("sum", lambda b, a, k, d: 0) is None
    assert "cannot take the 4 positional" in contract.signature_problem("sum", lambda b, a, d: 0)
    assert "cannot take the 3 positional" in contract.signature_problem(
        "reshape", lambda buf, shape: 0)
    for dev in ("cpu", "vulkan"):   # the built-ins' kernels all take the contract's calls
        if any(str(d).startswith(dev) for d in gp.devices()):
            d = registry.device(dev)
            assert not [op for op, fn in d.kernels.items()
                        if contract.signature_problem(op, getattr(fn, "__wrapped__", fn))]


def test_info_raising_does_not_break_grilly_info(plugin):
    """Before: one backend's info() raising made `grilly info` fail for every backend."""
    from grilly.cli import info
    plugin(_B("badinfo", info=lambda self, d: 1 / 0))
    out = info()
    assert out["backends"]["badinfo"]["devices"]["badinfo"]["info_error"] == \
        "info() raised ZeroDivisionError: division by zero"
    assert "cpu" in out["backends"]


def test_snn_composition_needs_no_optional_kernel(plugin):
    """lif_backward is composed; its composition used the optional abs (fast_sigmoid and
    triangle surrogates), so a backend of required kernels only could not run it."""
    from grilly.array import spiking
    plugin(_B("noabs", _table(remove=("abs", "lif_forward", "lif_backward"))))
    v = np.array([-1.5, -0.0, 0.0, 0.25, 2.0])
    for kind in ("fast_sigmoid", "triangle"):
        got = spiking._surrogate_grad(kind, 2.0, gp.asarray(v, device="noabs"))
        want = spiking._surrogate_grad(kind, 2.0, gp.asarray(v, device="cpu"))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# --- the conformance kit ---------------------------------------------------------------------

def _kit(device, tmp_path, files, *select):
    """Run the kit's tests of ``files`` (the other files of its suite are not even collected)
    that ``select`` names, in this process."""
    out = tmp_path / "kit.json"
    ignore = [a for f in sorted(os.listdir(report.SUITE))
              if f.startswith("test_") and f.endswith(".py") and f not in files
              for a in ("--ignore", os.path.join(report.SUITE, f))]
    # the nested pytest run collects garbage in full several times (at its end: 5 gc.collect()):
    # in a worker that has run a thousand tests each one walks its whole heap (10 s a kit run
    # under CI's load); frozen, that heap is left out and the run sees only its own objects
    gc.freeze()
    try:
        rc = report.run(device, str(out), extra_args=("-k", " or ".join(select), *ignore))
    finally:
        gc.unfreeze()
    return rc, json.loads(out.read_text())


def test_kit_checks_kernel_signatures(plugin, tmp_path):
    plugin(_B("kitsig", _table({"exp": lambda out_shape, x: np.exp(x)})))
    rc, rep = _kit("kitsig", tmp_path, ("test_hooks.py",), "test_kernel_signatures")
    t = rep["tests"]["test_hooks.py::test_kernel_signatures"]
    assert rc == 1 and t["outcome"] == "failed" and t["family"] == "contract"
    assert "kernel 'exp' has the signature (out_shape, x)" in t["reason"]
    assert "exp(out_shape, out_dtype, *bufs)" in t["reason"]


def test_kit_failure_line_names_the_kernel(plugin, tmp_path, capsys):
    """Before: `FAILED test_sorting.py::test_sort[...]` and nothing else; the json held the last
    2000 characters of a numpy traceback."""
    def sort(buf, axis, descending, stable):
        return np.sort(buf, axis=axis, kind="bogus")
    plugin(_B("kitsort", _table({"sort": sort})))
    rc, rep = _kit("kitsort", tmp_path, ("test_sorting.py",), "test_sort and float32-0-False")
    assert rc == 1
    out = capsys.readouterr().out
    assert ("FAILED test_sorting.py::test_sort[float32-0-False] - ValueError: sort kind must be"
            in out)
    assert "(raised by backend 'kitsort' kernel 'sort' on kitsort, called as sort(float32 " in out


class _StaleCapture:
    """A capture whose run() does nothing: the first replay's results come back forever."""

    def begin(self):
        pass

    def end(self):
        return 1

    def abort(self):
        pass

    def run(self, handle):
        pass


def test_kit_catches_a_capture_that_does_not_replay(plugin, tmp_path):
    """Before: the kit never traced anything; grilly.jit through this capture silently returned
    the first replay's values for every later input."""
    plugin(_B("kitcap", capture=lambda self, d: _StaleCapture()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc, rep = _kit("kitcap", tmp_path, ("test_hooks.py",), "test_jit_replays_new_inputs")
    t = rep["tests"]["test_hooks.py::test_jit_replays_new_inputs"]
    assert rc == 1 and t["outcome"] == "failed" and t["family"] == "jit"
    assert "run(handle) must run the recorded kernels again" in t["message"]


def test_kit_checks_optional_hooks(plugin, tmp_path):
    plugin(_B("kithooks", capture=lambda self, d: object(),
              stats=lambda self, d: {"submits": 1.5},
              native_bfloat16=lambda self, d: frozenset({"add", "sin"})))
    rc, rep = _kit("kithooks", tmp_path, ("test_hooks.py",), "test_optional_hooks")
    t = rep["tests"]["test_hooks.py::test_optional_hooks"]
    assert rc == 1 and t["outcome"] == "failed" and t["family"] == "hooks"
    assert "stats(device) must map names to ints" in t["reason"]


def test_kit_hooks_pass_on_a_good_backend(plugin, tmp_path):
    plugin(_B("kitgood"))
    rc, rep = _kit("kitgood", tmp_path, ("test_hooks.py",), "test_hooks.py")
    assert rc == 0 and {r["outcome"] for r in rep["tests"].values()} == {"passed"}


def test_kit_runs_the_rules_on_a_float32_only_device(plugin, tmp_path):
    """Before: the rules tests (errors, cross-device, host round trips) built float64 arrays, so
    a device without float64 skipped them all as 'dtype not supported'."""
    plugin(_B("kitf32", supports_dtype=lambda self, d, dt: dt.name not in ("float64", "complex128")))
    rc, rep = _kit("kitf32", tmp_path, ("test_rules.py", "test_indexing.py"), "test_value_errors",
                   "test_index_errors", "test_host_interop", "test_out_of_bounds", "test_cross_device")
    out = {t.split("::")[1]: r["outcome"] for t, r in rep["tests"].items()}
    assert rc == 0 and out == dict.fromkeys(
        ("test_value_errors", "test_index_errors", "test_host_interop", "test_out_of_bounds",
         "test_cross_device_is_a_value_error"), "passed"), out
