"""Where an eager training step's host time goes (cProfile of bench_train's step on a device).

Run: python tools/host_profile.py MODEL [DEVICE] [STEPS]. A diagnostic, not a benchmark."""
from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import numpy as np  # noqa: E402

import grilly as gp  # noqa: E402
from bench_train import BATCH, WIDE_BATCH, grilly_step  # noqa: E402


def main() -> None:
    kind = sys.argv[1]
    device = sys.argv[2] if len(sys.argv) > 2 else "vulkan"
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    rng = np.random.default_rng(0)
    shape = {"mlp": (BATCH, 64), "cnn": (BATCH, 1, 8, 8), "wide": (WIDE_BATCH, 1024),
             "transformer": (32, 256, 512), "cnn32": (256, 3, 32, 32)}[kind]
    x = rng.uniform(0, 1, shape).astype(np.float32)
    y = rng.integers(0, 10, shape[0]).astype(np.int64)
    steps, _ = grilly_step(kind, x, y, device)
    f = steps["grilly"]
    for _ in range(3):
        f()
    st0 = gp.device_stats(device)
    t = time.perf_counter()
    for _ in range(n):
        f()
    dt = (time.perf_counter() - t) / n
    st1 = gp.device_stats(device)
    per = {k: (st1[k] - st0[k]) / n for k in st1 if isinstance(st1[k], (int, float))}
    print(f"{kind} on {device}: {dt * 1e3:.2f} ms a step; per step {per}")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(n):
        f()
    pr.disable()
    s = pstats.Stats(pr)
    s.sort_stats("tottime").print_stats(30)
    s.sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
