"""Start-up cost: a fresh process importing grilly and running its first op, twice.

The first run may compile (or find the kernel already cached); the second finds the kernel in
the on-disk cache. Prints the wall time of each from process start to the op's result.
"""
from __future__ import annotations

import subprocess
import sys
import time

CHILD = ("import time; t = time.perf_counter(); import grilly as gp; "
         "x = gp.asarray([1.0, 2.0, 3.0]); y = float(gp.sum(gp.exp(x) + x)); "
         "print(time.perf_counter() - t)")


def run_once() -> tuple[float, float]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    return time.perf_counter() - t, float(out.stdout.strip())


def main() -> None:
    for label in ("first process", "second process (cached kernels)"):
        wall, inner = run_once()
        print(f"{label:34s} import+first op {inner * 1e3:7.1f} ms   (whole process {wall * 1e3:7.1f} ms)")


if __name__ == "__main__":
    main()
