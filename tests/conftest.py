"""Every test that takes ``device`` runs on every registered device (cpu, each Vulkan device)."""
import os

import pytest
from hypothesis import settings

import grilly as gp

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=10, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _device_names():
    names = [str(d) for d in gp.devices()]
    if os.environ.get("GRILLY_REQUIRE_VULKAN") == "1" and not any(n.startswith("vulkan") for n in names):
        raise RuntimeError("GRILLY_REQUIRE_VULKAN=1 but no Vulkan device was found")
    only = os.environ.get("GRILLY_TEST_DEVICES")
    if only:
        # "vulkan" picks every vulkan:N device; "vulkan:1" only that one
        want = only.split(",")
        names = [n for n in names if n in want or n.partition(":")[0] in want]
    return names


@pytest.fixture(params=_device_names())
def device(request):
    """A grilly device; tests using it run once per device."""
    return gp.backends.registry.device(request.param)


def _only(exc, kind) -> bool:
    """Whether ``exc`` is ``kind`` (or a group of nothing but ``kind``)."""
    group = getattr(exc, "exceptions", None)  # an ExceptionGroup (hypothesis raises them)
    if isinstance(group, (list, tuple)):
        return all(_only(e, kind) for e in group)
    return isinstance(exc, kind)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """On a device other than cpu, a missing kernel is a counted xfail and a dtype the device
    cannot hold a skip; both carry the backend's own error message. Anything else fails."""
    dev = pyfuncitem.funcargs.get("device")
    try:
        return (yield)
    except BaseException as e:
        if dev is None or dev.backend.name == "cpu":
            raise
        if _only(e, NotImplementedError):
            pytest.xfail(f"kernel not yet on {dev}: {str(e)[:200]}")
        if _only(e, TypeError) and "does not support dtype" in str(e):
            pytest.skip(f"{dev} cannot hold this dtype: {str(e)[:200]}")
        raise
