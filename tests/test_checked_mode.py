"""Checked mode catches a kernel that breaks its contract at the call, naming the backend and the
kernel; replacing another plugin's kernel needs ``grilly.backends.overrides`` and is logged."""
import logging

import numpy as np
import pytest

import grilly as gp
from grilly.backends import Backend, Device, KernelResultError, hookimpl, overrides, registry
from grilly.backends.cpu_numba import storage


class _Bad(Backend):
    """numpy buffers; ``add`` returns whatever the test asks for."""

    name = "badadd"
    priority = -5
    buffer_type = np.ndarray

    def __init__(self, result):
        self._devices, self.result = [Device(self, 0, "test")], result

    def devices(self):
        return self._devices

    def kernels(self):
        def add(shape, out_dtype, a, b):
            return self.result(shape, out_dtype, a, b)

        return {**storage.KERNELS, "add": add}


class _Plugin:
    def __init__(self, backend):
        self.backend = backend

    @hookimpl
    def grilly_backends(self):
        return [self.backend]


@pytest.fixture
def checked():
    was = registry.checked
    registry.set_checked(True)
    yield
    registry.set_checked(was)


def _run(result):
    gp.backends.register(_Plugin(_Bad(result)), name="bad-plugin")
    try:
        x = gp.asarray([1.0, 2.0, 3.0], device="badadd")
        return np.asarray(x + x)
    finally:
        gp.backends.unregister(name="bad-plugin")


@pytest.mark.parametrize("result, message", [
    (lambda s, d, a, b: (a + b)[:2], r"'badadd' kernel 'add'.*shape \(2,\), expected \(3,\)"),
    (lambda s, d, a, b: (a + b).astype(np.float32), r"kernel 'add'.*dtype float32, expected float64"),
    (lambda s, d, a, b: list(a + b), r"kernel 'add'.*returned a list"),
    (lambda s, d, a, b: None, r"kernel 'add'.*returned a NoneType"),
])
def test_checked_mode_names_backend_kernel_and_fault(checked, result, message):
    with pytest.raises(KernelResultError, match=message):
        _run(result)


def test_a_correct_kernel_passes_checked_mode(checked):
    np.testing.assert_array_equal(_run(lambda s, d, a, b: np.add(a, b)), [2.0, 4.0, 6.0])


def test_unchecked_mode_lets_a_wrong_shape_through():
    was = registry.checked
    registry.set_checked(False)
    try:
        assert _run(lambda s, d, a, b: (a + b)[:2]).shape == (2,)
    finally:
        registry.set_checked(was)


def test_builtin_kernels_pass_checked_mode(checked, device):
    x = gp.reshape(gp.arange(12, dtype=gp.float32, device=device), (3, 4))
    y = gp.sum(gp.exp(x) * 2 + x.T.T, axis=1, keepdims=True)
    assert y.shape == (3, 1)
    np.testing.assert_allclose(np.asarray(gp.sort(gp.flip(x, axis=1), axis=1)), np.asarray(x))


class _Replacer:
    def __init__(self, flag):
        self.flag = flag

    @hookimpl
    def grilly_kernels(self, backend):
        if backend != "cpu":
            return {}
        table = {"add": lambda shape, dt, a, b: np.subtract(a, b).astype(dt.np)}
        return overrides(table) if self.flag else table


def test_replacing_a_kernel_without_the_flag_is_refused():
    a = gp.asarray([5.0], device="cpu")
    with pytest.warns(RuntimeWarning, match="would replace the 'cpu' kernel"):
        gp.backends.register(_Replacer(False), name="sneaky")
    try:
        assert float(a + a) == 10.0
        assert any("sneaky" in k for k in registry.problems)
    finally:
        gp.backends.unregister(name="sneaky")
        for k in [k for k in registry.problems if "sneaky" in k]:
            del registry.problems[k]


def test_replacing_a_kernel_with_the_flag_is_logged(caplog):
    a = gp.asarray([5.0], device="cpu")
    with caplog.at_level(logging.INFO, logger="grilly.backends"):
        gp.backends.register(_Replacer(True), name="deliberate")
    try:
        assert float(a + a) == 0.0
        assert registry.overridden[("cpu", "add")][0] == "deliberate"
        assert "overrides kernel 'add' of backend 'cpu'" in caplog.text
    finally:
        gp.backends.unregister(name="deliberate")
    assert float(a + a) == 10.0
    assert ("cpu", "add") not in registry.overridden
