"""A broken plugin is left out with a warning (and listed in ``registry.problems``) while every
other backend keeps working; a second backend with a taken name is refused, naming both."""
import importlib

import numpy as np
import pytest

from grilly.backends import Backend, Device, hookimpl

reg_mod = importlib.import_module("grilly.backends.registry")   # (the package exports an instance)
Registry = reg_mod.Registry


class _BrokenEntryPoint:
    name, value, dist = "broken", "no_such_module_for_grilly:plugin", None

    def load(self):
        raise ImportError("No module named 'no_such_module_for_grilly'")


class _Named(Backend):
    def __init__(self, name, fail_devices=False):
        self.name, self._fail = name, fail_devices

    def devices(self):
        if self._fail:
            raise RuntimeError("driver exploded")
        return [Device(self)]

    def kernels(self):
        return {}


class _Plugin:
    def __init__(self, *backends, fail=False):
        self._b, self._fail = backends, fail

    @hookimpl
    def grilly_backends(self):
        if self._fail:
            raise RuntimeError("plugin bug")
        return list(self._b)


def _fresh(monkeypatch, extra_entry_points=()):
    real = reg_mod.entry_points(group=reg_mod.ENTRY_POINT_GROUP)
    monkeypatch.setattr(reg_mod, "entry_points", lambda group: [*real, *extra_entry_points])
    return Registry()


class _F64:   # the out_dtype a kernel reads (.np)
    np = np.dtype(np.float64)


def _cpu_works(r):
    """The cpu device of registry ``r`` still runs a kernel."""
    cpu = r.device("cpu")
    a = np.arange(4.0)
    assert np.array_equal(cpu.kernels["add"]((4,), _F64, a, a), 2 * a)


def test_plugin_that_fails_to_import(monkeypatch):
    r = _fresh(monkeypatch, [_BrokenEntryPoint()])
    with pytest.warns(RuntimeWarning, match="import failed"):
        r.load()
    assert any("import failed" in v for v in r.problems.values())
    _cpu_works(r)


def test_plugin_whose_hooks_raise(monkeypatch):
    r = _fresh(monkeypatch)
    r.load()
    with pytest.warns(RuntimeWarning, match="plugin bug"):
        r.register(_Plugin(fail=True), name="raiser")
    with pytest.warns(RuntimeWarning, match="driver exploded"):
        r.register(_Plugin(_Named("shaky", fail_devices=True)), name="shaky-plugin")
    assert "raiser" in r.problems and "backend shaky" in r.problems
    names = [str(d) for d in r.devices()]   # (an installed third-party plugin may list first)
    assert "cpu" in names and "shaky" not in names
    with pytest.raises(ValueError, match="driver exploded"):
        r.device("shaky")
    _cpu_works(r)


def test_duplicate_backend_name(monkeypatch):
    r = _fresh(monkeypatch)
    r.load()
    with pytest.raises(ValueError, match="'cpu'.*dup-plugin.*already provided by"):
        r.register(_Plugin(_Named("cpu")), name="dup-plugin")
    assert not r.pm.has_plugin("dup-plugin")
    _cpu_works(r)
