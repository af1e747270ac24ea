"""The kit's fixtures and hooks: the ``device`` fixture, checked mode, the ``--grilly-xfails``
list, and the classification of a missing kernel or refused dtype (docs/conformance.md). The
options themselves come from grilly.testing.plugin (pytest11 entry point or ``-p``)."""
from __future__ import annotations

import os
import re

import pytest

from grilly.testing import report

_MISSING = re.compile(r"provides no '(\w+)' kernel")


@pytest.fixture(scope="session")
def device(request):
    """The device under test, with the registry's checked mode on while the kit runs."""
    import grilly as gp
    from grilly.backends import registry

    spec = request.config.getoption("--grilly-device", None)
    dev = registry.device(spec) if spec else gp.default_device()
    # the checked mode validates every kernel result (array type, shape, dtype, device)
    before = registry.checked
    registry.set_checked(True)
    yield dev
    registry.set_checked(before)


def _read_xfails(path: str) -> dict[str, str]:
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            tid, _, why = line.partition("#")
            if tid.strip():
                out[tid.strip()] = why.strip() or "listed in " + os.path.basename(path)
    return out


def _in_kit(item) -> bool:
    return str(item.path).startswith(report.SUITE + os.sep)


@pytest.hookimpl(tryfirst=True)   # before -k/-m deselect: the xfail ids are checked against all
def pytest_collection_modifyitems(config, items) -> None:
    path = config.getoption("--grilly-xfails", None)
    xfails = _read_xfails(path) if path else {}
    for item in filter(_in_kit, items):
        if item.get_closest_marker("kernels") is None:
            raise pytest.UsageError(f"kit test {report.kit_id(item)} has no kernels() tag")
        why = xfails.pop(report.kit_id(item), None)
        if why is not None:
            # strict: a listed test that passes fails, so the list only shrinks
            item.add_marker(pytest.mark.xfail(reason=why, strict=True))
    if xfails:
        raise pytest.UsageError(f"--grilly-xfails lists ids that are not kit tests: {sorted(xfails)}")


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """A kernel the device lacks, or a dtype it refuses, is a skip with a reason the report
    classifies; any other error is a failure."""
    if not _in_kit(pyfuncitem):
        return (yield)
    try:
        return (yield)
    except NotImplementedError as e:
        m = _MISSING.search(str(e))
        if m is None:
            raise
        pytest.skip(f"{report.MISSING}{m.group(1)}: {e}")
    except TypeError as e:
        if "does not support dtype" not in str(e):
            raise
        pytest.skip(f"{report.DTYPE}{e}")
