"""Train the digits MLP under mixed precision: grilly.amp.autocast (low-precision matmuls,
float32 softmax/loss/reductions, float32 master weights), and compare with float32.

    python examples/train_digits_amp.py [--device cpu] [--dtype bfloat16|float16] [--epochs 30]

The default dtype is bfloat16 on the CPU and float16 elsewhere. float16 runs with a GradScaler
(its range is small); bfloat16 has float32's range and needs none, as in torch. On the CPU
neither is faster (both compute in float32 and round); on Vulkan GPUs with cooperative
matrices float16 matmuls run on tensor cores (docs/amp.md).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import grilly as gp
from grilly import amp, nn, optim

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from train_digits_mlp import accuracy, load_data, progress  # noqa: E402


def train(model, data, device, epochs: int, lr: float, batch: int, seed: int, use_amp: bool,
          dtype=gp.float16):
    """forward under autocast, scaled backward, unscale + clip, step; returns test accuracy."""
    x_tr, x_te, y_tr, y_te = data
    opt = optim.Adam(model.parameters(), lr=lr)
    scaler = amp.GradScaler(init_scale=2.0 ** 12, enabled=use_amp and dtype is gp.float16)
    loss_fn = nn.CrossEntropyLoss()
    order = np.random.default_rng(seed)
    steps = -(-len(x_tr) // batch)
    t0 = time.perf_counter()
    for epoch in range(1, epochs + 1):
        perm = order.permutation(len(x_tr))
        for s in range(steps):
            idx = perm[s * batch:(s + 1) * batch]
            xb, yb = gp.asarray(x_tr[idx], device=device), gp.asarray(y_tr[idx], device=device)
            with amp.autocast(dtype=dtype, enabled=use_amp):
                loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            scaler.step(opt)
            scaler.update()
            if s % 5 == 0 or s == steps - 1:
                progress(epoch, epochs, s + 1, steps, float(loss))
        sys.stdout.write(f"  test acc {accuracy(model, x_te, y_te, device):.4f}"
                         f"  scale {scaler.get_scale():g}\n")
    acc = accuracy(model, x_te, y_te, device)
    print(f"{'autocast ' + dtype.name if use_amp else 'float32'}: test accuracy {acc:.4f} "
          f"({time.perf_counter() - t0:.1f} s on {device})")
    return acc


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=("float16", "bfloat16"), default=None,
                   help="autocast dtype (default: bfloat16 on cpu, float16 elsewhere)")
    a = p.parse_args(argv)
    low = getattr(gp, a.dtype or ("bfloat16" if a.device.startswith("cpu") else "float16"))
    data = load_data(False, a.seed)
    out = {}
    for use_amp in (True, False):
        nn.manual_seed(a.seed)
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(a.device)
        out["amp" if use_amp else "float32"] = train(model, data, a.device, a.epochs, a.lr,
                                                      a.batch, a.seed, use_amp, low)
    return out


if __name__ == "__main__":
    main()
