"""grilly on the CPU backend against numpy (and array-api-strict for tiny ops), side by side.

Run: python bench/bench_cpu.py [--quick]. Prints a table of times and grilly-vs-numpy throughput
ratios (> 1 means grilly is faster). For the matmul rows, numpy here reads OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE; run this command with both unset for a fair BLAS comparison.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import grilly as gp


def best(f, reps: int) -> float:
    """Best-of-reps wall time in seconds (after one warm-up call)."""
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def per_call(f, n: int) -> float:
    f()
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    reps = 5 if ap.parse_args().quick else 15
    n = 16 * 1024 * 1024
    rng = np.random.default_rng(0)
    a32 = rng.standard_normal(n).astype(np.float32)
    b32 = rng.standard_normal(n).astype(np.float32)
    ga, gb = gp.asarray(a32), gp.asarray(b32)
    m32 = rng.standard_normal((1024, 1024)).astype(np.float32)
    m64 = m32.astype(np.float64)
    gm32, gm64 = gp.asarray(m32), gp.asarray(m64)
    sync = np.asarray  # a host read keeps the comparison honest on any backend

    rows = [
        ("add 16M f32", lambda: sync(ga + gb), lambda: a32 + b32),
        ("multiply 16M f32", lambda: sync(ga * gb), lambda: a32 * b32),
        ("exp 16M f32", lambda: sync(gp.exp(ga)), lambda: np.exp(a32)),
        ("sum 16M f32", lambda: float(gp.sum(ga)), lambda: float(a32.sum())),
        ("mean 16M f32", lambda: float(gp.mean(ga)), lambda: float(a32.mean())),
        ("max 16M f32", lambda: float(gp.max(ga)), lambda: float(a32.max())),
        ("matmul 1024^2 f32", lambda: sync(gm32 @ gm32), lambda: m32 @ m32),
        ("matmul 1024^2 f64", lambda: sync(gm64 @ gm64), lambda: m64 @ m64),
        ("chain (a*b+a)*0.5-b, exp", lambda: sync(gp.exp((ga * gb + ga) * 0.5 - gb)),
         lambda: np.exp((a32 * b32 + a32) * np.float32(0.5) - b32)),
    ]
    print(f"{'work':28s} {'grilly ms':>10s} {'numpy ms':>10s} {'ratio':>7s}")
    for name, g, ref in rows:
        tg, tn = best(g, reps), best(ref, reps)
        print(f"{name:28s} {tg * 1e3:10.2f} {tn * 1e3:10.2f} {tn / tg:6.2f}x")

    import array_api_strict as xs

    t4 = np.ones(4, np.float32)
    gx, sx = gp.asarray(t4), xs.asarray(t4)
    tg = per_call(lambda: gx + gx, 20000)
    ts = per_call(lambda: sx + sx, 20000)
    tn = per_call(lambda: t4 + t4, 20000)
    print(f"{'tiny add (4 elements)':28s} grilly {tg * 1e6:.2f} us, array-api-strict {ts * 1e6:.2f} us"
          f" ({tg / ts:.2f}x of strict), numpy {tn * 1e6:.2f} us")


if __name__ == "__main__":
    main()
