"""tests/conftest.py's rule for missing kernels: on a device other than cpu a NotImplementedError
fails the test unless tests/known_gaps.txt lists it (then an xfail), and a listed test that passes
fails too. Checked by running pytest on a small copy of the rule with a stand-in device."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent

TESTS = '''
import pytest

class _Backend:
    name = "fake"

class _Device:
    backend = _Backend()
    def __str__(self):
        return "fake:0"

@pytest.fixture
def device():
    return _Device()

def test_missing_unlisted(device):
    raise NotImplementedError("no kernel")

def test_missing_listed(device):
    raise NotImplementedError("no kernel")

def test_listed_but_passes(device):
    pass

def test_fine(device):
    pass
'''


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict:
    """One pytest process over two folders, each with its own copy of the rule and its own
    known_gaps.txt (a conftest applies to its folder's tests only): one listing two of the
    tests, one listing none. {listed: {test name: summary line}} (a process costs seconds)."""
    root = tmp_path_factory.mktemp("gaps")
    for listed in (False, True):
        d = root / f"listed_{listed}"
        d.mkdir()
        shutil.copy(HERE / "conftest.py", d / "conftest.py")
        gaps = [f"listed_True/test_gaps_{listed}.py::test_missing_listed  # a reason",
                f"listed_True/test_gaps_{listed}.py::test_listed_but_passes  # fixed since"] \
            if listed else []
        (d / "known_gaps.txt").write_text("\n".join(gaps) + "\n")
        (d / f"test_gaps_{listed}.py").write_text(TESTS)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                        "-p", "no:xdist", "listed_False", "listed_True"], cwd=root,
                       capture_output=True, text=True, timeout=300,
                       # summary lines whole; no installed plugins (seconds to import, unused)
                       env=dict(os.environ, COLUMNS="10000", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"))
    out = {False: {}, True: {}}
    for m in re.finditer(r"^(PASSED|FAILED|XFAIL|ERROR|SKIPPED|XPASS) listed_(False|True)/"
                         r"test_gaps_\w+\.py::(\w+)(.*)$", r.stdout, re.M):
        out[m[2] == "True"][m[3]] = m[1] + m[4]
    assert sum(map(len, out.values())) == 8, r.stdout + r.stderr
    return out


@pytest.mark.parametrize("listed", [False, True])
def test_known_gaps_rule(outcomes, listed):
    got = outcomes[listed]
    assert got["test_missing_unlisted"].startswith("FAILED"), got
    assert "does not list" in got["test_missing_unlisted"], got
    assert got["test_fine"] == "PASSED", got
    if listed:
        assert got["test_missing_listed"].startswith("XFAIL"), got
        assert got["test_listed_but_passes"].startswith("FAILED"), got
        assert "remove it from tests/known_gaps.txt" in got["test_listed_but_passes"], got
    else:
        assert got["test_missing_listed"].startswith("FAILED"), got
        assert got["test_listed_but_passes"] == "PASSED", got
