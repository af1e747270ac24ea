"""Train a small MLP on scikit-learn's 8x8 digits with grilly.nn and grilly.optim.

    python examples/train_digits_mlp.py [--device cpu] [--epochs 30]
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import grilly as gp
from grilly import nn, optim


def progress(epoch: int, epochs: int, step: int, steps: int, loss: float, width: int = 30) -> None:
    """One line of text progress bar, rewritten in place."""
    done = int(width * step / steps)
    sys.stdout.write(f"\repoch {epoch:3d}/{epochs} [{'#' * done}{'.' * (width - done)}] loss {loss:.4f}")
    sys.stdout.flush()


def load_data(image: bool, seed: int = 0):
    """Digits scaled to [0, 1] as float32 (flat 64-vectors or 1x8x8 images), int64 labels."""
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    if image:
        x = x.reshape(-1, 1, 8, 8)
    return train_test_split(x, d.target.astype(np.int64), test_size=0.2, random_state=seed,
                            stratify=d.target)


def accuracy(model, x, y, device, batch: int = 256) -> float:
    """Fraction of correct argmax predictions."""
    model.eval()
    correct = 0
    with gp.no_grad():
        for i in range(0, len(x), batch):
            logits = model(gp.asarray(x[i:i + batch], device=device))
            pred = gp.argmax(logits, axis=1)
            correct += int(gp.sum(gp.astype(pred == gp.asarray(y[i:i + batch], device=device), gp.int64)))
    model.train()
    return correct / len(x)


def train(model, data, device, epochs: int, lr: float, batch: int, seed: int) -> float:
    """The usual loop: forward, loss, backward, step; returns the test accuracy."""
    x_tr, x_te, y_tr, y_te = data
    opt = optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    order = np.random.default_rng(seed)
    steps = -(-len(x_tr) // batch)
    t0 = time.perf_counter()
    for epoch in range(1, epochs + 1):
        perm = order.permutation(len(x_tr))
        for s in range(steps):
            idx = perm[s * batch:(s + 1) * batch]
            xb, yb = gp.asarray(x_tr[idx], device=device), gp.asarray(y_tr[idx], device=device)
            loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if s % 5 == 0 or s == steps - 1:
                progress(epoch, epochs, s + 1, steps, float(loss))
        sys.stdout.write(f"  test acc {accuracy(model, x_te, y_te, device):.4f}\n")
    acc = accuracy(model, x_te, y_te, device)
    print(f"final test accuracy: {acc:.4f}  ({time.perf_counter() - t0:.1f} s on {device})")
    return acc


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    nn.manual_seed(a.seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(a.device)
    print(model)
    return train(model, load_data(image=False, seed=a.seed), a.device, a.epochs, a.lr, a.batch, a.seed)


if __name__ == "__main__":
    main()
