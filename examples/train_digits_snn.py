"""Train a spiking MLP on scikit-learn's 8x8 digits: rate-coded input spikes over T steps, two LIF
layers, surrogate-gradient BPTT (atan) and Adam; the prediction is the output neuron that
spikes most. Writes a training curve (train loss, test accuracy) PNG (--plot; needs
matplotlib, not a grilly dependency: without it, a line says so and no file is written).

    python examples/train_digits_snn.py [--device cpu] [--epochs 15] [--steps 25]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import grilly as gp
from grilly import nn, optim
from grilly.nn import snn


class SpikingMLP(nn.Module):
    """64 -> hidden LIF -> 10 LIF, every layer run over the whole (T, batch, ...) sequence."""

    def __init__(self, hidden: int = 128, beta: float = 0.9) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(64, hidden), snn.LIF(beta, step_mode="m"),
            nn.Linear(hidden, 10), snn.LIF(beta, step_mode="m"),
        )

    def forward(self, spikes_in):
        snn.reset(self)  # every sample is a new sequence
        return self.net(spikes_in)


def load_data(seed: int = 0):
    """Digits scaled to [0, 1] (the spike probability per step), int64 labels."""
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    return train_test_split(x, d.target.astype(np.int64), test_size=0.2, random_state=seed,
                            stratify=d.target)


def accuracy(model, x, y, device, steps: int, batch: int = 256) -> float:
    """Fraction of samples whose most-spiking output neuron is the label."""
    correct = 0
    with gp.no_grad():
        for i in range(0, len(x), batch):
            spk = model(snn.rate(gp.asarray(x[i:i + batch], device=device), steps))
            pred = np.argmax(np.asarray(snn.spike_count(spk).to_device("cpu")), axis=1)
            correct += int(np.sum(pred == y[i:i + batch]))
    return correct / len(x)


def plot(history, path: str) -> None:
    """The training curve as a PNG, skipped quietly without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: no training curve written to {path}")
        return
    ep = [h[0] for h in history]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(ep, [h[1] for h in history], "o-", label="train loss (ce_rate)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    ax2 = ax.twinx()
    ax2.plot(ep, [h[2] for h in history], "s-", color="tab:green", label="test accuracy")
    ax2.set_ylabel("test accuracy")
    fig.legend(loc="center right", bbox_to_anchor=(0.86, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"wrote {path}")


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--steps", type=int, default=25, help="time steps per sample")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", default="train_digits_snn.png")
    a = p.parse_args(argv)
    nn.manual_seed(a.seed)  # also seeds the rate encoder (gp.random)
    x_tr, x_te, y_tr, y_te = load_data(a.seed)
    model = SpikingMLP().to(a.device)
    print(model)
    opt = optim.Adam(model.parameters(), lr=a.lr)
    order = np.random.default_rng(a.seed)
    history = []
    t0 = time.perf_counter()
    for epoch in range(1, a.epochs + 1):
        perm, total, n = order.permutation(len(x_tr)), 0.0, 0
        for i in range(0, len(x_tr), a.batch):
            idx = perm[i:i + a.batch]
            spk_in = snn.rate(gp.asarray(x_tr[idx], device=a.device), a.steps)
            loss = snn.ce_rate_loss(model(spk_in), gp.asarray(y_tr[idx], device=a.device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, n = total + float(loss) * len(idx), n + len(idx)
            if (i // a.batch) % 5 == 0:
                sys.stdout.write(f"\repoch {epoch:3d}/{a.epochs}  {n}/{len(x_tr)} samples  "
                                 f"loss {total / n:.4f}  ({time.perf_counter() - t0:.1f} s)")
                sys.stdout.flush()
        acc = accuracy(model, x_te, y_te, a.device, a.steps)
        history.append((epoch, total / n, acc))
        line = (f"epoch {epoch:3d}/{a.epochs}  loss {total / n:.4f}  test acc {acc:.4f}  "
                f"({time.perf_counter() - t0:.1f} s)")
        print("\r" + line.ljust(64), flush=True)
    print(f"final test accuracy: {acc:.4f}  ({time.perf_counter() - t0:.1f} s on {a.device}, "
          f"T={a.steps})")
    if a.plot:
        plot(history, os.path.abspath(a.plot))
    return acc


if __name__ == "__main__":
    main()
