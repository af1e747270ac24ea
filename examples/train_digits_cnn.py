"""Train a small CNN on scikit-learn's 8x8 digits with grilly.nn and grilly.optim.

    python examples/train_digits_cnn.py [--device cpu] [--epochs 10]
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from train_digits_mlp import load_data, train  # noqa: E402

from grilly import nn  # noqa: E402


def make_model() -> nn.Module:
    """conv-relu-conv-relu-pool, then a two-layer classifier (1x8x8 -> 10)."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Dropout(0.1),
        nn.Linear(64, 10),
    )


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    nn.manual_seed(a.seed)
    model = make_model().to(a.device)
    print(model)
    return train(model, load_data(image=True, seed=a.seed), a.device, a.epochs, a.lr, a.batch, a.seed)


if __name__ == "__main__":
    main()
