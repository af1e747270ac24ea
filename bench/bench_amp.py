"""Mixed precision, side by side with torch in one run: GEMM TFLOP/s by dtype, shape and operand
layout, then training steps in float32 and under autocast.

Run: python bench/bench_amp.py [--device vulkan] [--sizes 1024,4096] [--models wide,transformer]
[--steps 5] [--dtype float16|bfloat16] [--json out.json]. torch runs on CUDA when it has it
(float32 with TF32 off, float16, bfloat16), else on the CPU. GEMM layouts: nn (A, B as
stored), nt (B a transposed view), tn (A a transposed view); ratio = grilly TFLOP/s / torch
TFLOP/s in the same dtype. Training steps are bench_train.py's models (Adam, cross entropy),
best of --steps after a warm-up step: float32, and autocast(--dtype: float16 with a
GradScaler, or bfloat16) for grilly, eager and through grilly.jit (unscaled there); float32
and autocast(bfloat16) for torch.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grilly as gp  # noqa: E402
from bench_train import WIDE_BATCH, best, grilly_cnn32, grilly_transformer, grilly_wide, torch_model  # noqa: E402
from grilly import amp, nn, optim  # noqa: E402


def _timed(f, sync, reps: int) -> float:
    """Mean seconds per call of ``reps`` calls back to back, after as many warm-up calls (the
    first calls of a shape also grow grilly's memory pool, which waits on queued work)."""
    for _ in range(reps):
        f()
    sync()
    t = time.perf_counter()
    for _ in range(reps):
        f()
    sync()
    return (time.perf_counter() - t) / reps


def gemm_rows(device: str, sizes: list[int], tdev: str, reps: int) -> list[dict]:
    """TFLOP/s of n^3 products per dtype and layout, grilly and torch."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    tsync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
    rows = []
    rng = np.random.default_rng(0)
    for n in sizes:
        a = (rng.random((n, n), np.float32) - 0.5)
        b = (rng.random((n, n), np.float32) - 0.5)
        flops = 2 * n**3 / 1e12
        for dt in ("float32", "float16", "bfloat16"):
            host = ml_dtypes.bfloat16 if dt == "bfloat16" else dt
            ga = gp.asarray(a.astype(host), device=device)
            gb = gp.asarray(b.astype(host), device=device)
            ta = torch.from_numpy(a).to(tdev).to(getattr(torch, dt))
            tb = torch.from_numpy(b).to(tdev).to(getattr(torch, dt))
            for lay in ("nn", "nt", "tn"):
                x = gp.matrix_transpose(ga) if lay[0] == "t" else ga
                y = gp.matrix_transpose(gb) if lay[1] == "t" else gb
                tx = ta.T if lay[0] == "t" else ta
                ty = tb.T if lay[1] == "t" else tb
                g = _timed(lambda: x @ y, lambda: gp.synchronize(device), reps)
                t = _timed(lambda: tx @ ty, tsync, reps)
                rows.append({"n": n, "dtype": dt, "layout": lay, "grilly_tflops": flops / g,
                             "torch_tflops": flops / t, "ratio": t / g})
            del ga, gb, ta, tb
    return rows


def grilly_steps(kind: str, x: np.ndarray, y: np.ndarray, device: str,
                 dtype: str = "float16") -> dict:
    """float32 and autocast(dtype) training steps of one model (float16 with a GradScaler)."""
    nn.manual_seed(0)
    model = {"wide": grilly_wide, "transformer": grilly_transformer,
             "cnn32": grilly_cnn32}[kind]().to(device)
    opt = optim.Adam(model.parameters(), lr=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    scaler = amp.GradScaler(device=device)
    xb, yb = gp.asarray(x, device=device), gp.asarray(y, device=device)

    def fp32() -> float:
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return float(loss)

    def mixed() -> float:
        opt.zero_grad()
        with amp.autocast(dtype=getattr(gp, dtype)):
            loss = loss_fn(model(xb), yb)
        if dtype == "bfloat16":   # float32's range: no loss scaling
            loss.backward()
            opt.step()
            return float(loss)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return float(loss)

    def step(x, t, low: bool):
        opt.zero_grad()
        with amp.autocast(dtype=getattr(gp, dtype), enabled=low):
            loss = loss_fn(model(x), t)
        loss.backward()
        opt.step()
        return loss

    # through grilly.jit, one submission a step; unscaled (a GradScaler's step reads its
    # inf/NaN flag on the host, which a traced step cannot), so float16 only times the work
    jit32, jitlow = gp.jit(lambda x, t: step(x, t, False)), gp.jit(lambda x, t: step(x, t, True))
    return {"float32": fp32, "autocast": mixed, "float32_jit": lambda: float(jit32(xb, yb)),
            "autocast_jit": lambda: float(jitlow(xb, yb))}


def torch_steps(kind: str, x: np.ndarray, y: np.ndarray, tdev: str) -> dict:
    import torch

    model = torch_model(kind).to(tdev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    xb, yb = torch.from_numpy(x).to(tdev), torch.from_numpy(y).to(tdev)

    def fp32() -> float:
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss.item()

    def mixed() -> float:
        opt.zero_grad()
        with torch.autocast(device_type=tdev, dtype=torch.bfloat16):
            loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss.item()
    return {"float32": fp32, "autocast": mixed}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="vulkan")
    ap.add_argument("--sizes", default="1024,4096")
    ap.add_argument("--reps", type=int, default=10, help="products timed per GEMM row")
    ap.add_argument("--models", default="wide,transformer,cnn32")
    ap.add_argument("--steps", type=int, default=5, help="training steps timed (best of)")
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"),
                    help="grilly's autocast dtype (torch's is bfloat16)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    import torch

    # torch's float32 steps in float32: cuDNN's convolutions default to TF32 tensor cores
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    tdev = "cuda" if torch.cuda.is_available() else "cpu"
    sizes = [int(s) for s in a.sizes.split(",") if s]
    gemm = gemm_rows(a.device, sizes, tdev, a.reps) if sizes else []
    print(f"GEMM n^3, TFLOP/s: grilly {a.device} vs torch {tdev} (TF32 off)")
    for r in gemm:
        g = "-" if r["grilly_tflops"] is None else f"{r['grilly_tflops']:7.1f}"
        ratio = "" if r["ratio"] is None else f" {r['ratio']:.2f}x"
        print(f"  {r['n']:5d} {r['dtype']:8s} {r['layout']}  grilly {g:>7s}  torch "
              f"{r['torch_tflops']:7.1f}{ratio}")
    rng = np.random.default_rng(0)
    data = {"wide": rng.uniform(0, 1, (WIDE_BATCH, 1024)).astype(np.float32),
            "transformer": rng.standard_normal((32, 256, 512)).astype(np.float32),
            "cnn32": rng.uniform(0, 1, (256, 3, 32, 32)).astype(np.float32)}
    train = []
    for kind in [m for m in a.models.split(",") if m]:
        x = data[kind]
        y = rng.integers(0, 10, len(x)).astype(np.int64)
        row = {"model": kind}
        for name, f in grilly_steps(kind, x, y, a.device, a.dtype).items():
            row[f"grilly_{name}_ms"] = best(f, a.steps, 1) * 1e3
        for name, f in torch_steps(kind, x, y, tdev).items():
            row[f"torch_{name}_ms"] = best(f, a.steps, 1) * 1e3
        row["grilly_speedup"] = row["grilly_float32_ms"] / row["grilly_autocast_ms"]
        row["grilly_jit_speedup"] = row["grilly_float32_jit_ms"] / row["grilly_autocast_jit_ms"]
        row["torch_speedup"] = row["torch_float32_ms"] / row["torch_autocast_ms"]
        row["autocast_ratio"] = row["torch_autocast_ms"] / row["grilly_autocast_ms"]
        train.append(row)
    if train:
        print(f"training step ms: grilly {a.device} float32 / autocast({a.dtype}), torch {tdev} "
              f"float32 / autocast(bfloat16)")
    for r in train:
        print(f"  {r['model']:11s} grilly {r['grilly_float32_ms']:8.2f} / "
              f"{r['grilly_autocast_ms']:8.2f} ({r['grilly_speedup']:.2f}x)   torch "
              f"{r['torch_float32_ms']:8.2f} / {r['torch_autocast_ms']:8.2f} "
              f"({r['torch_speedup']:.2f}x)   autocast grilly/torch {r['autocast_ratio']:.2f}x")
        print(f"  {'':11s} jit    {r['grilly_float32_jit_ms']:8.2f} / "
              f"{r['grilly_autocast_jit_ms']:8.2f} ({r['grilly_jit_speedup']:.2f}x)   autocast jit "
              f"grilly/torch {r['torch_autocast_ms'] / r['grilly_autocast_jit_ms']:.2f}x")
    out = {"gemm": gemm, "train": train, "torch": torch.__version__, "torch_device": tdev}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)
    return out


if __name__ == "__main__":
    main()
