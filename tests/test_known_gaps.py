"""tests/conftest.py's rule for missing kernels: on a device other than cpu a NotImplementedError
fails the test unless tests/known_gaps.txt lists it (then an xfail), and a listed test that passes
fails too. Checked by running pytest on a small copy of the rule with a stand-in device."""
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


@pytest.mark.parametrize("listed", [False, True])
def test_known_gaps_rule(tmp_path, listed):
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    gaps = ["test_gaps_case.py::test_missing_listed  # a reason",
            "test_gaps_case.py::test_listed_but_passes  # fixed since"] if listed else []
    (tmp_path / "known_gaps.txt").write_text("\n".join(gaps) + "\n")
    (tmp_path / "test_gaps_case.py").write_text(TESTS)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rxf", "-p", "no:cacheprovider",
                        "-p", "no:xdist", "test_gaps_case.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    out = r.stdout
    assert "FAILED test_gaps_case.py::test_missing_unlisted" in out, out
    assert "does not list" in out
    if listed:
        assert "XFAIL test_gaps_case.py::test_missing_listed" in out, out
        assert "FAILED test_gaps_case.py::test_listed_but_passes" in out, out
        assert "3 failed" not in out and "2 failed, 1 passed, 1 xfailed" in out, out
    else:
        assert "2 failed, 2 passed" in out, out
