"""Unsupervised STDP learns digit receptive fields (Diehl & Cook 2015, simplified).

The scikit-learn 8x8 digits (no download) are rate-coded as Poisson spike trains. A layer of
excitatory LIF neurons sees them through a Linear layer whose weights only STDP changes
(grilly.nn.snn.STDP, in place): no labels, no gradients. Winner-take-all inhibition lets one
neuron fire per step, an adaptive threshold (homeostasis) keeps any one neuron from winning
everything, and each neuron's incoming weights are normalised after every digit. Each neuron
comes to prefer one kind of digit: its weights (its receptive field) look like one.

Labels are used afterwards only, to read the result out: each neuron is labelled with the class
it fires most for on the training digits, and a test digit gets the class whose neurons fire most.

Run: python examples/stdp_unsupervised.py [--device cpu] [--neurons 100] [--epochs 1]
[--steps 40] [--eval-steps 100] [--out stdp_receptive_fields.png]. Writes the learned receptive
fields as a PNG grid (no matplotlib needed) and prints progress and the test accuracy of the
neuron vote.
"""
from __future__ import annotations

import argparse
import struct
import sys
import time
import zlib

import numpy as np

import grilly as gp
from grilly import nn
from grilly.nn import snn
from grilly.nn.snn import encoding


def load_digits_split(seed: int = 0):
    """(x_train, y_train, x_test, y_test): pixel intensities in [0, 1], a 75/25 split."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images.reshape(len(d.images), -1) / 16.0).astype(np.float32)
    idx = np.random.default_rng(seed).permutation(len(x))
    cut = len(x) * 3 // 4
    return x[idx[:cut]], d.target[idx[:cut]], x[idx[cut:]], d.target[idx[cut:]]


class Network:
    """Input spikes -> Linear (STDP-plastic, no bias) -> LIF layer with WTA and adaptive
    thresholds. ``present`` runs one digit for ``steps`` steps and returns the spike counts."""

    def __init__(self, n_in: int, n: int, device, *, seed: int = 0, beta: float = 0.9,
                 threshold: float = 1.0, theta_plus: float = 0.05, theta_decay: float = 0.999,
                 total_weight: float = 8.0) -> None:
        rng = np.random.default_rng(seed)
        self.fc = nn.Linear(n_in, n, bias=False).to(device)
        self.fc.requires_grad_(False)   # plasticity only: no gradients
        w = rng.uniform(0.0, 0.3, size=(n, n_in)).astype(np.float32)
        self.fc.weight[...] = gp.asarray(w, device=device)
        self.rule = snn.STDP(self.fc, a_plus=0.02, a_minus=0.006, tau_plus=4.0, tau_minus=4.0,
                             w_min=0.0, w_max=1.0, bounds="hard")
        self.n, self.device = n, device
        self.beta, self.threshold = beta, threshold
        self.theta = gp.zeros((n,), device=device)
        self.theta_plus, self.theta_decay = theta_plus, theta_decay
        self.total = total_weight
        self.ids = gp.arange(n, device=device)
        self.normalise()

    def normalise(self) -> None:
        """Scale each neuron's incoming weights to sum to ``total_weight`` (Diehl & Cook)."""
        w = self.fc.weight
        s = gp.sum(w, axis=1, keepdims=True)
        w[...] = w * (self.total / gp.maximum(s, 1e-6))

    def present(self, spikes_in: gp.Array, learn: bool) -> gp.Array:
        """Run one digit's (T, n_in) input spikes; spike counts per neuron (n,)."""
        v = gp.zeros((self.n,), device=self.device)
        counts = gp.zeros((self.n,), device=self.device)
        self.rule.reset()
        for s in gp.unstack(spikes_in, axis=0):
            v = self.beta * v + self.fc(s)
            drive = v - (self.threshold + self.theta)
            # winner-take-all: the neuron furthest above its threshold fires, and the
            # inhibition it triggers resets every membrane
            win = gp.astype(self.ids == gp.argmax(drive), gp.float32)
            fired = gp.astype(gp.max(drive) > 0.0, gp.float32)
            post = win * fired
            v = v * (1.0 - fired)
            counts = counts + post
            if learn:
                self.rule.step(s, post)
                self.theta = self.theta * self.theta_decay + self.theta_plus * post
        if learn:
            self.normalise()
        return counts


def write_png(path: str, img: np.ndarray) -> None:
    """Write a 2-D uint8 grayscale image as a PNG (zlib only)."""
    h, w = img.shape
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(png)


def field_grid(w: np.ndarray, side: int = 8, scale: int = 4) -> np.ndarray:
    """The rows of w (n, side*side) as a grid of scaled tiles with 1-pixel borders, uint8."""
    n = w.shape[0]
    cols = int(np.ceil(np.sqrt(n)))
    rows = -(-n // cols)
    t = side * scale
    img = np.full((rows * (t + 1) + 1, cols * (t + 1) + 1), 40, np.uint8)
    for i in range(n):
        f = w[i].reshape(side, side)
        f = (f - f.min()) / max(f.max() - f.min(), 1e-12)
        tile = np.kron(f, np.ones((scale, scale)))
        r, c = divmod(i, cols)
        img[1 + r * (t + 1):1 + r * (t + 1) + t, 1 + c * (t + 1):1 + c * (t + 1) + t] = \
            (tile * 255).astype(np.uint8)
    return img


def responses(net: Network, x: np.ndarray, steps: int, gain: float, what: str = "") -> np.ndarray:
    """Spike counts (len(x), n) of the frozen network for each digit (progress on stderr when
    ``what`` names the set)."""
    out = np.empty((len(x), net.n), np.float32)
    t0 = time.perf_counter()
    for i in range(len(x)):
        s = encoding.rate(gp.asarray(x[i], device=net.device), steps, gain=gain)
        out[i] = np.asarray(net.present(s, learn=False))
        if what and ((i + 1) % 200 == 0 or i + 1 == len(x)):
            print(f"\rreading out {what}: {i + 1}/{len(x)} digits ({time.perf_counter() - t0:.0f} s)",
                  end="", file=sys.stderr, flush=True)
    if what:
        print(file=sys.stderr)
    return out


def evaluate(r_train, y_train, r_test, y_test, classes: int = 10) -> tuple[float, np.ndarray]:
    """Label each neuron by the class it fires most for; a test digit gets the class whose
    neurons fire most on average. (accuracy, neuron labels)."""
    mean = np.stack([r_train[y_train == c].mean(axis=0) for c in range(classes)])   # (10, n)
    labels = mean.argmax(axis=0)
    scores = np.stack([r_test[:, labels == c].mean(axis=1) if np.any(labels == c)
                       else np.zeros(len(r_test)) for c in range(classes)], axis=1)
    return float((scores.argmax(axis=1) == y_test).mean()), labels


def class_alignment(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """Mean, over neurons, of the best correlation of its receptive field with a class-mean
    image: how digit-like the fields are (random weights score low)."""
    means = np.stack([x[y == c].mean(axis=0) for c in range(10)])
    wc = w - w.mean(axis=1, keepdims=True)
    mc = means - means.mean(axis=1, keepdims=True)
    corr = (wc @ mc.T) / (np.linalg.norm(wc, axis=1, keepdims=True)
                          * np.linalg.norm(mc, axis=1) + 1e-12)
    return float(corr.max(axis=1).mean())


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--neurons", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=40, help="time steps per digit")
    ap.add_argument("--eval-steps", type=int, default=100,
                    help="time steps per digit when reading out (more: steadier votes)")
    ap.add_argument("--label-digits", type=int, default=None,
                    help="training digits used to label the neurons (default: all)")
    ap.add_argument("--test-digits", type=int, default=None, help="test digits (default: all)")
    ap.add_argument("--gain", type=float, default=0.35, help="spike probability of a full pixel")
    ap.add_argument("--train", type=int, default=None, help="use only this many training digits")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="stdp_receptive_fields.png")
    a = ap.parse_args(argv)
    gp.random.seed(a.seed)
    x_tr, y_tr, x_te, y_te = load_digits_split(a.seed)
    if a.train:
        x_tr, y_tr = x_tr[:a.train], y_tr[:a.train]
    net = Network(64, a.neurons, a.device, seed=a.seed)
    w0 = np.asarray(net.fc.weight).copy()
    t0 = time.perf_counter()
    for epoch in range(a.epochs):
        order = np.random.default_rng(a.seed + epoch).permutation(len(x_tr))
        for j, i in enumerate(order):
            s = encoding.rate(gp.asarray(x_tr[i], device=a.device), a.steps, gain=a.gain)
            net.present(s, learn=True)
            if (j + 1) % 200 == 0 or j + 1 == len(order):
                print(f"\repoch {epoch + 1}/{a.epochs}: {j + 1}/{len(order)} digits "
                      f"({time.perf_counter() - t0:.0f} s)", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    w = np.asarray(net.fc.weight)
    write_png(a.out, field_grid(w))
    lab = slice(0, a.label_digits)
    tst = slice(0, a.test_digits)
    print(f"receptive fields -> {a.out}", flush=True)
    acc, labels = evaluate(responses(net, x_tr[lab], a.eval_steps, a.gain, "training digits"),
                           y_tr[lab],
                           responses(net, x_te[tst], a.eval_steps, a.gain, "test digits"),
                           y_te[tst])
    res = {"accuracy": acc, "alignment": class_alignment(w, x_tr, y_tr),
           "alignment_initial": class_alignment(w0, x_tr, y_tr),
           "classes_covered": int(len(set(labels.tolist()))), "seconds": time.perf_counter() - t0}
    print(f"test accuracy of the neuron vote: {acc:.3f} (chance 0.1); fields' best class-mean "
          f"correlation {res['alignment']:.2f} (initial weights {res['alignment_initial']:.2f}); "
          f"{res['classes_covered']} classes have neurons; {res['seconds']:.0f} s")
    return res


if __name__ == "__main__":
    main()
