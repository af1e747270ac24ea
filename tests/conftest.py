"""Every test that takes ``device`` runs on every registered device (cpu, each Vulkan device)."""
import os
import sys

import pytest
from hypothesis import settings

# grilly's own tests run in checked mode: every kernel result is validated against the contract
# (grilly/backends/checked.py); GRILLY_CHECK=0 turns it off, e.g. to time something
os.environ.setdefault("GRILLY_CHECK", "1")

import grilly as gp  # noqa: E402

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=10, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _device_names():
    # grilly's own backends; an installed third-party plugin is tested by the kit (grilly
    # conformance), or here when GRILLY_TEST_DEVICES names it
    names = [str(d) for d in gp.devices()]
    if not os.environ.get("GRILLY_TEST_DEVICES"):
        names = [n for n in names if n.partition(":")[0] in ("cpu", "vulkan")]
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


KNOWN_GAPS_FILE = os.path.join(os.path.dirname(__file__), "known_gaps.txt")


def _known_gaps() -> dict[str, str]:
    """tests/known_gaps.txt: test id (its device part as a backend name, e.g. ``vulkan``) -> reason."""
    gaps = {}
    with open(KNOWN_GAPS_FILE, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                tid, _, why = line.partition("#")
                gaps[tid.strip()] = why.strip()
    return gaps


KNOWN_GAPS = _known_gaps()


def _gap_id(item, dev) -> str:
    """The test id with its device named by backend (``vulkan:0`` -> ``vulkan``)."""
    return item.nodeid.replace(str(dev), dev.backend.name)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """A kernel missing on a device fails the test unless tests/known_gaps.txt lists it (then an
    xfail with the listed reason); a listed test that passes fails too, so the list only shrinks.
    A dtype the device cannot hold is a skip carrying the backend's own message."""
    dev = pyfuncitem.funcargs.get("device")
    gap = None if dev is None else KNOWN_GAPS.get(_gap_id(pyfuncitem, dev))
    try:
        res = yield
    except BaseException as e:
        if dev is None or dev.backend.name == "cpu":
            raise
        if _only(e, NotImplementedError):
            if gap is not None:
                pytest.xfail(f"known gap on {dev} ({gap}): {str(e)[:200]}")
            raise AssertionError(
                f"a kernel is missing on {dev} and tests/known_gaps.txt does not list "
                f"{_gap_id(pyfuncitem, dev)!r}: {e}") from e
        if _only(e, TypeError) and "does not support dtype" in str(e):
            pytest.skip(f"{dev} cannot hold this dtype: {str(e)[:200]}")
        raise
    if gap is not None:
        raise AssertionError(
            f"{_gap_id(pyfuncitem, dev)} passes on {dev}: remove it from tests/known_gaps.txt")
    return res


@pytest.fixture(autouse=True)
def _fresh_snntorch_instances():
    """snnTorch keeps every neuron ever made in class-level lists (SpikingNeuron.instances),
    and its reset_hidden/init_hidden paths walk them all: a neuron an earlier test left (another
    shape, another batch) made later snnTorch oracles fail depending on test order under -n 2.
    Each test starts with empty lists, as a fresh process would."""
    sn = sys.modules.get("snntorch")
    if sn is not None and hasattr(sn, "SpikingNeuron"):
        todo = [sn.SpikingNeuron]
        while todo:
            cls = todo.pop()
            if "instances" in cls.__dict__:
                cls.instances = []
            todo.extend(cls.__subclasses__())
    yield


@pytest.fixture(autouse=True)
def _default_dtype_restored():
    """gp.set_default_dtype (and torch's, the oracle's) is process-global: a test that sets it
    and fails before restoring it would change every later test's models; each test ends with
    both back at float32."""
    yield
    if gp.get_default_dtype() != gp.float32:
        gp.set_default_dtype(gp.float32)
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_default_dtype() != torch.float32:
        torch.set_default_dtype(torch.float32)
