"""grilly on a Vulkan device against torch CUDA, side by side in one run (the GPU machine).

Run: python bench/bench_gpu.py [--device vulkan] [--json out.json]. Each row gives grilly's and
torch's time and the ratio of throughput (grilly / torch; 1.0 = as fast as torch).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import grilly as gp


def timed(fn, sync, reps: int) -> float:
    """Best time of ``reps`` runs of fn followed by sync (seconds)."""
    fn()
    sync()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="vulkan")
    ap.add_argument("--json", default=None)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    import torch

    dev = gp.backends.registry.device(args.device)
    tdev = "cuda" if torch.cuda.is_available() else "cpu"
    reps = args.reps
    rows = []

    def row(name, g, t, work, unit):
        rows.append({"work": name, "grilly_s": g, "torch_s": t, "ratio": t / g,
                     "grilly_rate": work / g, "torch_rate": work / t, "unit": unit})
        print(f"{name:34s} grilly {g * 1e3:9.3f} ms ({work / g:10.1f} {unit})  torch {t * 1e3:9.3f} ms"
              f" ({work / t:10.1f} {unit})  ratio {t / g:5.2f}")

    def gsync():
        # like torch.cuda.synchronize: submit everything recorded and wait for it
        dev.synchronize()
    tsync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
    n = 64 * 1024 * 1024
    h = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    ga, gb = gp.asarray(h, device=dev), gp.asarray(h[::-1].copy(), device=dev)
    ta, tb = torch.from_numpy(h).to(tdev), torch.from_numpy(h[::-1].copy()).to(tdev)
    holder = {}
    row("add 64M f32", timed(lambda: holder.__setitem__("g", ga + gb), gsync, reps),
        timed(lambda: holder.__setitem__("t", ta + tb), tsync, reps), 3 * 4 * n / 1e9, "GB/s")
    row("sum 64M f32", timed(lambda: holder.__setitem__("g", gp.sum(ga)), gsync, reps),
        timed(lambda: holder.__setitem__("t", ta.sum()), tsync, reps), 4 * n / 1e9, "GB/s")
    hs = np.random.default_rng(1).standard_normal((4096, 4096)).astype(np.float32)
    gs, ts = gp.asarray(hs, device=dev), torch.from_numpy(hs).to(tdev)

    def gsoft():
        m = gp.max(gs, axis=1, keepdims=True)
        e = gp.exp(gs - m)
        holder["g"] = e / gp.sum(e, axis=1, keepdims=True)
    softmax = getattr(gp.nn.functional, "softmax", None) if hasattr(gp, "nn") else None
    gfn = (lambda: holder.__setitem__("g", softmax(gs, dim=1))) if softmax else gsoft
    row("softmax rows 4096x4096 f32", timed(gfn, gsync, reps),
        timed(lambda: holder.__setitem__("t", torch.softmax(ts, dim=1)), tsync, reps),
        2 * 4 * 4096 * 4096 / 1e9, "GB/s")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    hm = np.random.default_rng(2).standard_normal((4096, 4096)).astype(np.float32)
    gm, tm = gp.asarray(hm, device=dev), torch.from_numpy(hm).to(tdev)
    row("matmul 4096^3 f32 (TF32 off)", timed(lambda: holder.__setitem__("g", gm @ gm), gsync, reps),
        timed(lambda: holder.__setitem__("t", tm @ tm), tsync, reps), 2 * 4096**3 / 1e12, "TFLOP/s")
    upload = lambda: holder.__setitem__("g", gp.asarray(h, device=dev))  # noqa: E731
    row("host->device 256 MiB", timed(upload, gsync, reps),
        timed(lambda: torch.from_numpy(h).to(tdev), tsync, reps), 4 * n / 1e9, "GB/s")
    row("device->host 256 MiB", timed(lambda: np.asarray(ga), lambda: None, reps),
        timed(lambda: ta.cpu().numpy(), lambda: None, reps), 4 * n / 1e9, "GB/s")
    hx = np.random.default_rng(3).standard_normal(1024).astype(np.float32)
    gx, tx = gp.asarray(hx, device=dev), torch.from_numpy(hx).to(tdev)

    def chain(xp, x):
        y = x * 1.5 + 0.5
        y = xp.exp(-y * y) - 0.25
        y = xp.tanh(y) * 2.0 + x
        y = xp.sin(y) + xp.cos(y)
        return float((y * y).sum() if xp is torch else xp.sum(y * y))
    row("10-op chain on 1024 + read back", timed(lambda: chain(gp, gx), lambda: None, reps * 10),
        timed(lambda: chain(torch, tx), lambda: None, reps * 10), 1e-6, "Mchains/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(dev), "torch_device": tdev, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
