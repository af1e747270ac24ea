"""PyTorch's "60-minute blitz" classifier, ported by changing only the imports.

The blitz's CNN (conv-pool-conv, then three Linear layers) trained with CrossEntropyLoss and SGD
with momentum, on scikit-learn's 8x8 digits (no download) padded to 12x12, with a shuffling
DataLoader, an accuracy loop under ``gp.no_grad()`` / ``net.eval()``, per-class accuracy, and the
state dict saved and loaded back (``gp.save`` / ``gp.load``, safetensors).

Run: python examples/blitz_cnn_digits.py [--device cpu|vulkan] [--epochs 10] [--limit N]
[--out blitz_cnn_curve.png]. On cpu it reaches a test accuracy of at least 0.95 (0.97 with the
defaults). Writes the training curve: a PNG with matplotlib, else a .npy of
(epoch, loss, test accuracy) rows.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import tempfile
import time

import numpy as np

import grilly as gp
import grilly.nn.functional as F
from grilly import nn, optim
from grilly.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    """The blitz's network, sized for a 1x12x12 input: 12 -> conv 10 -> pool 5 -> conv 3."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 3 * 3, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = F.relu(self.conv2(x))
        x = gp.flatten(x, 1)   # flatten all dimensions except batch
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def load_digits_split(limit: int | None, seed: int = 0):
    """(x_train, y_train, x_test, y_test) as numpy: standardized 1x12x12 images, an 80/20 split."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = d.images.astype(np.float32) / 16.0
    x = (x - x.mean()) / x.std()
    x = np.pad(x, ((0, 0), (2, 2), (2, 2)))[:, None]
    idx = np.random.default_rng(seed).permutation(len(x))[:limit]
    cut = len(idx) * 4 // 5
    return x[idx[:cut]], d.target[idx[:cut]], x[idx[cut:]], d.target[idx[cut:]]


def accuracy(net: nn.Module, loader) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Correct and total predictions, and per-class hit and sample counts."""
    net.eval()
    correct = total = 0
    hits, counts = np.zeros(10, int), np.zeros(10, int)
    with gp.no_grad():
        for images, labels in loader:
            predicted = net(images).argmax(1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
            lab, ok = labels.numpy(), (predicted == labels).numpy()
            np.add.at(counts, lab, 1)
            np.add.at(hits, lab, ok)
    return correct, total, hits, counts


def write_curve(path: str, curve: np.ndarray) -> str:
    """The (epoch, loss, accuracy) curve as a PNG with matplotlib, else as ``.npy``."""
    if importlib.util.find_spec("matplotlib") is None:
        path = os.path.splitext(path)[0] + ".npy"
        np.save(path, curve)
        return path
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(curve[:, 0], curve[:, 1], "o-", label="train loss")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    ax2 = ax.twinx()
    ax2.plot(curve[:, 0], curve[:, 2], "s-", color="tab:orange", label="test accuracy")
    ax2.set_ylabel("test accuracy")
    ax.set_title("blitz CNN on digits (grilly)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--limit", type=int, default=None, help="use only N digits (small runs)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="blitz_cnn_curve.png")
    a = p.parse_args(argv)

    gp.set_default_device(a.device)
    gp.manual_seed(a.seed)
    xtr, ytr, xte, yte = load_digits_split(a.limit, a.seed)
    trainset = TensorDataset(gp.tensor(xtr), gp.tensor(ytr))
    testset = TensorDataset(gp.tensor(xte), gp.tensor(yte))
    trainloader = DataLoader(trainset, batch_size=a.batch, shuffle=True)
    testloader = DataLoader(testset, batch_size=128, shuffle=False)

    net = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=a.lr, momentum=0.9)
    print(f"{len(trainset)} training and {len(testset)} test digits on {a.device}")

    curve = []
    for epoch in range(a.epochs):
        t0 = time.perf_counter()
        net.train()
        running_loss = 0.0
        for i, (inputs, labels) in enumerate(trainloader):
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
        correct, total, _, _ = accuracy(net, testloader)
        curve.append((epoch + 1, running_loss / (i + 1), correct / total))
        print(f"epoch {epoch + 1:2d}/{a.epochs}  loss {running_loss / (i + 1):.4f}  "
              f"test accuracy {correct / total:.4f}  ({time.perf_counter() - t0:.1f} s)",
              flush=True)
    print("Finished Training")

    path = os.path.join(tempfile.mkdtemp(), "digits_net.pth")
    gp.save(net.state_dict(), path)
    net = Net()
    net.load_state_dict(gp.load(path))
    correct, total, hits, counts = accuracy(net, testloader)
    print(f"Accuracy of the reloaded network on the {total} test images: {correct / total:.4f}")
    for c in range(10):
        if counts[c]:
            print(f"  class {c}: {hits[c] / counts[c]:.3f}")
    print(f"training curve -> {write_curve(a.out, np.array(curve))}")
    return correct / total


if __name__ == "__main__":
    main()
