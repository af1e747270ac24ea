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
        names = [n for n in names if n in only.split(",")]
    return names


@pytest.fixture(params=_device_names())
def device(request):
    """A grilly device; tests using it run once per device."""
    return gp.backends.registry.device(request.param)
