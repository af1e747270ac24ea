"""The plugin registry: entry-point discovery, run-time registration, dispatch tables."""
import numpy as np
import pytest

import grilly as gp
from grilly.backends import Backend, Device, hookimpl, registry
from grilly.backends.cpu_numba import storage


class ToyBackend(Backend):
    """A second backend written in the test: numpy buffers, a handful of kernels, call counts."""

    name = "toy"
    priority = -1

    def __init__(self):
        self._devices = [Device(self, 0, "toy device")]
        self.calls = []

    def devices(self):
        return self._devices

    def kernels(self):
        def add(shape, out_dtype, a, b):
            self.calls.append("add")
            return np.add(a, b).astype(out_dtype.np)

        return {**storage.KERNELS, "add": add}


class ToyPlugin:
    def __init__(self):
        self.backend = ToyBackend()

    @hookimpl
    def grilly_backends(self):
        return [self.backend]


class Doubler:
    """Overrides one kernel of an existing backend."""

    @hookimpl
    def grilly_kernels(self, backend):
        if backend == "toy":
            return {"multiply": lambda shape, dt, a, b: (a * b * 2).astype(dt.np)}
        return {}


def test_builtin_cpu_comes_from_the_entry_point():
    from importlib.metadata import PackageNotFoundError, distribution, entry_points

    try:
        distribution("grilly")
    except PackageNotFoundError:
        pytest.skip("grilly runs from a source tree without package metadata (no entry points)")
    eps = entry_points(group="grilly.backends")
    assert "cpu" in {e.name for e in eps}
    assert any(str(d) == "cpu" for d in gp.devices())


def test_runtime_plugin_dispatches_and_unregisters():
    plugin = ToyPlugin()
    gp.backends.register(plugin, name="toy-plugin")
    try:
        dev = registry.device("toy")
        assert dev in gp.devices()
        x = gp.asarray([1.0, 2.0], device=dev)
        y = x + x
        assert plugin.backend.calls == ["add"]
        assert y.device is dev
        np.testing.assert_array_equal(np.asarray(y), [2.0, 4.0])
        with pytest.raises(NotImplementedError, match="exp"):
            gp.exp(x)
        with pytest.raises(ValueError, match="different devices"):
            x + gp.asarray([1.0, 2.0], device="cpu")
        gp.backends.register(Doubler(), name="doubler")
        np.testing.assert_array_equal(np.asarray(x * x), [2.0, 8.0])
        gp.backends.unregister(name="doubler")
        with pytest.raises(NotImplementedError, match="multiply"):
            x * x
    finally:
        gp.backends.unregister(name="toy-plugin")
    assert "toy" not in [str(d) for d in gp.devices()]
    with pytest.raises(ValueError, match="unknown device"):
        registry.device("toy")


def test_default_device_env(monkeypatch):
    monkeypatch.setenv("GRILLY_DEVICE", "cpu")
    old = registry._default
    registry._default = None
    try:
        assert str(gp.default_device()) == "cpu"
    finally:
        registry._default = old


def test_unknown_device_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown device"):
        gp.asarray([1], device="tpu")
