"""GRILLY_PROFILE=1: per-kernel device time (Vulkan timestamps), in a fresh process because the
switch is read when a device starts; and gp.profile_report's empty answer where nothing is timed."""
import os
import subprocess
import sys

import pytest

import grilly as gp

SCRIPT = r"""
import numpy as np, grilly as gp
x = gp.asarray(np.arange(4096, dtype=np.float32), device="{dev}")
for _ in range(5):
    y = gp.exp(x) + 1.0
    s = gp.sum(y * y)
float(s)
print("REPORT")
print(gp.profile_report("{dev}"))
"""


def test_profile_report_lists_kernels_with_time(device):
    if device.backend.name != "vulkan":
        assert gp.profile_report(device) == ""   # nothing timed (and no GRILLY_PROFILE here)
        return
    env = dict(os.environ, GRILLY_PROFILE="1")
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(dev=device)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    report = out.stdout.split("REPORT", 1)[1]
    lines = report.strip().splitlines()
    assert lines[0].startswith(f"grilly profile: {device} (")
    first = lines[2:]
    first = first[:next((i for i, ln in enumerate(first) if ln.startswith("grilly profile")),
                        len(first))]
    rows = [ln.split() for ln in first]
    assert rows and all(int(r[-4]) > 0 and float(r[-3]) >= 0 for r in rows)
    assert sum(int(r[-4]) for r in rows) >= 10   # at least two dispatches per iteration
    assert float(rows[0][-3]) >= float(rows[-1][-3])   # sorted by time
    # at exit it prints the table again (the atexit hook)
    assert report.count(f"grilly profile: {device}") == 2


@pytest.mark.parametrize("bad", [None])
def test_profile_report_default_device(bad):
    assert isinstance(gp.profile_report(bad), str)
