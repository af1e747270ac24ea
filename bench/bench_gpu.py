"""grilly on a Vulkan device against torch CUDA, side by side in one run (the GPU machine).

Run: python bench/bench_gpu.py [--device vulkan] [--json out.json]. Each kernel is timed two ways,
both against torch measured the same way in the same run:

- ``stream``: ``--batch`` calls back to back, then one synchronize; time per call. This is the
  throughput a training loop sees (work is queued while the GPU runs) and what torch's own
  benchmark utilities measure.
- ``call``: one call, then synchronize; the latency of a lone call, fixed host costs included.

The ratio is torch's time over grilly's (1.0 = as fast as torch; above 1 = faster).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import grilly as gp
from grilly.backends.vulkan import fusion


def timed(fn, sync, reps: int, batch: int = 1) -> float:
    """Best over ``reps`` of (``batch`` calls of fn, then sync), per call, in seconds."""
    fn()
    sync()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t) / batch)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="vulkan")
    ap.add_argument("--json", default=None)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=10)
    args = ap.parse_args()
    import torch

    dev = gp.backends.registry.device(args.device)
    tdev = "cuda" if torch.cuda.is_available() else "cpu"
    reps, batch = args.reps, args.batch
    rows = []

    def row(name, g, t, work, unit):
        rows.append({"work": name, "grilly_s": g, "torch_s": t, "ratio": t / g,
                     "grilly_rate": work / g, "torch_rate": work / t, "unit": unit})
        print(f"{name:40s} grilly {g * 1e3:9.3f} ms ({work / g:9.1f} {unit})  torch {t * 1e3:9.3f} ms"
              f" ({work / t:9.1f} {unit})  ratio {t / g:5.2f}")

    gsync = dev.synchronize  # like torch.cuda.synchronize: submit what is queued, wait for it
    tsync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    n = 64 * 1024 * 1024
    h = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    ga, gb = gp.asarray(h, device=dev), gp.asarray(h[::-1].copy(), device=dev)
    ta, tb = torch.from_numpy(h).to(tdev), torch.from_numpy(h[::-1].copy()).to(tdev)
    hs = np.random.default_rng(1).standard_normal((4096, 4096)).astype(np.float32)
    gs, ts = gp.asarray(hs, device=dev), torch.from_numpy(hs).to(tdev)
    hm = np.random.default_rng(2).standard_normal((4096, 4096)).astype(np.float32)
    gm, tm = gp.asarray(hm, device=dev), torch.from_numpy(hm).to(tdev)
    softmax = gp.nn.functional.softmax
    kernels = [
        ("add 64M f32", lambda: ga + gb, lambda: ta + tb, 3 * 4 * n / 1e9, "GB/s"),
        ("sum 64M f32", lambda: gp.sum(ga), lambda: ta.sum(), 4 * n / 1e9, "GB/s"),
        ("softmax rows 4096x4096 f32", lambda: softmax(gs, dim=1),
         lambda: torch.softmax(ts, dim=1), 2 * 4 * 4096 * 4096 / 1e9, "GB/s"),
        ("matmul 4096^3 f32 (TF32 off)", lambda: gm @ gm, lambda: tm @ tm,
         2 * 4096**3 / 1e12, "TFLOP/s"),
    ]
    for name, g, t, work, unit in kernels:
        row(f"{name} stream", timed(g, gsync, reps, batch), timed(t, tsync, reps, batch), work, unit)
    for name, g, t, work, unit in kernels:
        row(f"{name} call", timed(g, gsync, reps), timed(t, tsync, reps), work, unit)
    holder = {}

    def upload():
        holder["g"] = gp.asarray(h, device=dev)
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
        return (y * y).sum() if xp is torch else xp.sum(y * y)
    hy = np.random.default_rng(4).standard_normal(1 << 20).astype(np.float32)
    gy, ty = gp.asarray(hy, device=dev), torch.from_numpy(hy).to(tdev)
    fuses = getattr(dev, "ctx", None) is not None and dev.ctx.fuser is not None
    for fused in ((True, False) if fuses else (None,)):
        if fused is not None:
            fusion.enable(dev.ctx, fused)
        tag = "" if fused is None else " (fusion on)" if fused else " (fusion off)"
        row(f"10-op chain on 1024 + read back{tag}",
            timed(lambda: float(chain(gp, gx)), lambda: None, reps * 10),
            timed(lambda: float(chain(torch, tx)), lambda: None, reps * 10), 1e-6, "Mchains/s")
        row(f"10-op chain on 1M stream{tag}", timed(lambda: chain(gp, gy), gsync, reps, batch),
            timed(lambda: chain(torch, ty), tsync, reps, batch), 1e-6, "Mchains/s")
    if fuses:
        fusion.enable(dev.ctx, True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(dev), "torch_device": tdev, "batch": batch, "rows": rows}, f,
                      indent=2)


if __name__ == "__main__":
    main()
