"""One training step (forward, loss, backward, Adam step) of the digits MLP and CNN: grilly on a
chosen device against torch on the CPU (and on CUDA when torch has it), same run, same shapes.

Run: python bench/bench_train.py [--device cpu|vulkan] [--reps 20] [--models mlp,cnn,wide]
[--json out.json] (the big models, timed over --wide-reps steps after --warmup ones: "wide",
the 1024-4096-4096-10 MLP at batch 512; "transformer", an encoder layer d 512 at batch 32 x
256; "cnn32", conv 64-128-256 on 3x32x32 at batch 256). Times are
best-of-reps wall times after warm-up steps; ratio = torch time / grilly time (> 1: grilly
faster). "jit" is the same step through grilly.jit (traced on its first call); "fwd" and
"fwd jit" time the model's forward alone (no_grad), eager and traced. grilly syncs by reading
the loss (``float(loss)``, after the step, so the whole step is flushed), torch by
``loss.item()`` (plus ``cuda.synchronize()``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import grilly as gp  # noqa: E402
from grilly import nn, optim  # noqa: E402
from train_digits_cnn import make_model as grilly_cnn  # noqa: E402

BATCH = 128
WIDE_BATCH = 512


def grilly_mlp() -> nn.Module:
    """The digits MLP, 64-128-10."""
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def grilly_wide() -> nn.Module:
    """The wide MLP of issue 16, 1024-4096-4096-10 (21 M parameters: the optimizer step counts)."""
    return nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                         nn.Linear(4096, 10))


class _SeqMean(nn.Module):
    """The mean over the sequence axis (batch, seq, d) -> (batch, d): a classifier's pooling."""

    def forward(self, x):
        return gp.mean(x, axis=1)


def grilly_transformer() -> nn.Module:
    """Issue 14's encoder layer (d 512, 8 heads, ff 2048; batch-first, post-norm, dropout 0.1),
    mean-pooled into a 10-way linear classifier."""
    return nn.Sequential(nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True), _SeqMean(),
                         nn.Linear(512, 10))


def grilly_cnn32() -> nn.Module:
    """Issue 14's CNN on 3x32x32 images: conv 64-128-256 (3x3, ReLU, 2x2 max pools)."""
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(128, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256 * 4 * 4, 10))


def torch_model(kind: str):
    """The same architecture in torch (parameter names match grilly's where they can)."""
    import torch
    import torch.nn as tnn

    if kind == "transformer":
        class SeqMean(tnn.Module):
            def forward(self, x):
                return torch.mean(x, dim=1)
        return tnn.Sequential(tnn.TransformerEncoderLayer(512, 8, 2048, batch_first=True),
                              SeqMean(), tnn.Linear(512, 10))
    if kind == "cnn32":
        return tnn.Sequential(
            tnn.Conv2d(3, 64, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2),
            tnn.Conv2d(64, 128, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2),
            tnn.Conv2d(128, 256, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2),
            tnn.Flatten(), tnn.Linear(256 * 4 * 4, 10))
    if kind == "mlp":
        return tnn.Sequential(tnn.Linear(64, 128), tnn.ReLU(), tnn.Linear(128, 10))
    if kind == "wide":
        return tnn.Sequential(tnn.Linear(1024, 4096), tnn.ReLU(), tnn.Linear(4096, 4096),
                              tnn.ReLU(), tnn.Linear(4096, 10))
    return tnn.Sequential(
        tnn.Conv2d(1, 16, 3, padding=1), tnn.ReLU(),
        tnn.Conv2d(16, 32, 3, padding=1), tnn.BatchNorm2d(32), tnn.ReLU(),
        tnn.MaxPool2d(2), tnn.Flatten(),
        tnn.Linear(32 * 4 * 4, 64), tnn.ReLU(), tnn.Dropout(0.1), tnn.Linear(64, 10))


def best(step, reps: int, warmup: int) -> float:
    """Best-of-reps wall time of ``step()`` in seconds, after ``warmup`` calls."""
    for _ in range(warmup):
        step()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t)
    return min(ts)


def grilly_step(kind: str, x: np.ndarray, y: np.ndarray, device: str):
    nn.manual_seed(0)
    model = {"mlp": grilly_mlp, "wide": grilly_wide, "cnn": grilly_cnn,
             "transformer": grilly_transformer, "cnn32": grilly_cnn32}[kind]().to(device)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    xb, yb = gp.asarray(x, device=device), gp.asarray(y, device=device)

    def train(x, t):
        opt.zero_grad()
        loss = loss_fn(model(x), t)
        loss.backward()
        opt.step()
        return loss

    def forward(x):
        with gp.no_grad():
            return model(x)

    jit_train, jit_forward = gp.jit(train), gp.jit(forward)

    def synced(f):
        def run() -> None:
            f(xb)
            gp.synchronize(device)
        return run

    steps = {"grilly": lambda: float(train(xb, yb)),
             "jit": lambda: float(jit_train(xb, yb)),   # the host read outside the trace
             "fwd": synced(forward), "fwd_jit": synced(jit_forward)}
    return steps, model


def torch_step(kind: str, x: np.ndarray, y: np.ndarray, device: str, state: dict):
    import torch

    model = torch_model(kind)
    if set(state) == set(model.state_dict()):   # same start where the names match (timing only)
        model.load_state_dict({k: torch.from_numpy(np.asarray(v).copy()) for k, v in state.items()})
    model = model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    xb, yb = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
    cuda = device.startswith("cuda")

    def step() -> float:
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        v = loss.item()
        if cuda:
            torch.cuda.synchronize()
        return v
    return step


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="grilly device (cpu, vulkan, vulkan:1, ...)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--models", default="mlp,cnn",
                    help="comma-separated: mlp, cnn, wide, transformer, cnn32")
    ap.add_argument("--wide-reps", type=int, default=5, help="steps timed for the big models")
    ap.add_argument("--json", default=None, help="write the results to this file")
    a = ap.parse_args(argv)
    import torch

    # float32 against float32: torch's matmuls default to full float32, but cuDNN's convolutions
    # to TF32 tensor cores (10-bit significands), which would time the CNNs against TF32
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    rng = np.random.default_rng(0)
    data = {"mlp": rng.uniform(0, 1, (BATCH, 64)).astype(np.float32),
            "cnn": rng.uniform(0, 1, (BATCH, 1, 8, 8)).astype(np.float32),
            "wide": rng.uniform(0, 1, (WIDE_BATCH, 1024)).astype(np.float32),
            "transformer": rng.standard_normal((32, 256, 512)).astype(np.float32),
            "cnn32": rng.uniform(0, 1, (256, 3, 32, 32)).astype(np.float32)}
    labels = {k: rng.integers(0, 10, len(v)).astype(np.int64) for k, v in data.items()}
    torch_devs = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows = []
    for kind in a.models.split(","):
        y = labels[kind]
        big = kind in ("wide", "transformer", "cnn32")
        # the same warm-up for every model: a step taken while the memory pools still grow (grilly's,
        # or torch's caching allocator) is not the steady state a training loop runs in
        reps, warm = (a.wide_reps, a.warmup) if big else (a.reps, a.warmup)
        steps, model = grilly_step(kind, data[kind], y, a.device)
        row = {"model": kind, "batch": len(y), "grilly_device": a.device}
        for name, f in steps.items():
            row[f"{name}_ms"] = best(f, reps, warm) * 1e3
        row["jit_speedup"] = row["grilly_ms"] / row["jit_ms"]
        row["fwd_jit_speedup"] = row["fwd_ms"] / row["fwd_jit_ms"]
        state = model.state_dict()
        del steps, model   # the wide model's buffers
        for td in torch_devs:
            t = best(torch_step(kind, data[kind], y, td, state), reps, warm) * 1e3
            row[f"torch_{td}_ms"] = t
            row[f"ratio_{td}"] = t / row["grilly_ms"]
            row[f"jit_ratio_{td}"] = t / row["jit_ms"]
        rows.append(row)

    head = f"{'model':6s} {'grilly ' + a.device + ' ms':>18s} {'jit ms':>8s}"
    for td in torch_devs:
        head += f" {'torch ' + td + ' ms':>15s} {'ratio':>7s} {'jit':>7s}"
    head += f" {'fwd ms':>8s} {'fwd jit':>8s}"
    print(head)
    for r in rows:
        line = f"{r['model']:6s} {r['grilly_ms']:18.2f} {r['jit_ms']:8.2f}"
        for td in torch_devs:
            line += (f" {r[f'torch_{td}_ms']:15.2f} {r[f'ratio_{td}']:6.2f}x"
                     f" {r[f'jit_ratio_{td}']:6.2f}x")
        line += f" {r['fwd_ms']:8.3f} {r['fwd_jit_ms']:8.3f}"
        print(line)
    result = {"rows": rows, "reps": a.reps, "warmup": a.warmup, "torch": torch.__version__,
              "torch_threads": torch.get_num_threads(), "cpus": os.cpu_count(),
              "machine": platform.machine(), "python": platform.python_version()}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == "__main__":
    main()
