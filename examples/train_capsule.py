"""Train grilly.CapsuleTransformer on a small sequence task: copy a random sequence after a
separator ([x1..xk SEP x1..xk], predict the second half), remembering each batch's episodes in
the capsule memory as it goes. Prints a line per epoch and the copy accuracy.

    python examples/train_capsule.py [--device cpu] [--epochs 6]
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import grilly as gp
from grilly import nn, optim
from grilly.nn import functional as F

K = 6          # tokens to copy
SEP = 0        # the separator token; symbols are 1..vocab-1


def batch(rng, n: int, vocab: int) -> np.ndarray:
    x = rng.integers(1, vocab, (n, K))
    return np.concatenate([x, np.full((n, 1), SEP), x], axis=1)


def copy_accuracy(model, seqs: np.ndarray, device) -> float:
    with gp.no_grad():
        logits = model(gp.asarray(seqs[:, :-1], device=device))
    pred = np.asarray(gp.argmax(logits, axis=-1))[:, K:]
    return float((pred == seqs[:, K + 1:]).mean())


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--steps", type=int, default=40, help="batches per epoch")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=12)
    ap.add_argument("--test", type=int, default=256, help="test sequences")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    nn.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    cfg = gp.CapsuleConfig(vocab_size=a.vocab, d_model=64, num_heads=4, num_layers=2,
                           dim_feedforward=128, max_len=2 * K + 1, capsule_dim=32,
                           memory_capacity=128)
    model = gp.CapsuleTransformer(cfg).to(a.device)
    opt = optim.Adam(model.parameters(), lr=2e-3)
    test = batch(np.random.default_rng(a.seed + 1), a.test, a.vocab)
    t0 = time.perf_counter()
    acc = acc0 = copy_accuracy(model, test, a.device)
    print(f"untrained copy accuracy {acc0:.3f}; {a.epochs} epochs of {a.steps} batches on "
          f"{a.device} (the first batches compile kernels: slower, once)", flush=True)
    for epoch in range(1, a.epochs + 1):
        total = 0.0
        for step in range(a.steps):
            seqs = batch(rng, a.batch, a.vocab)
            x = gp.asarray(seqs[:, :-1], device=a.device)
            y = gp.asarray(seqs[:, 1:], device=a.device)
            logits = model(x)
            # the loss on the copied half: the first half is random, nothing to learn there
            loss = F.cross_entropy(gp.reshape(logits[:, K:], (-1, a.vocab)),
                                   gp.reshape(y[:, K:], (-1,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            model.remember(x)   # episodic encoding of what was just seen
            total += float(loss)
            if step % 5 == 0:
                sys.stdout.write(f"\repoch {epoch:2d}/{a.epochs}  batch {step + 1}/{a.steps}  "
                                 f"loss {float(loss):.3f}  ({time.perf_counter() - t0:.0f} s)")
                sys.stdout.flush()
        acc = copy_accuracy(model, test, a.device)
        print(f"\repoch {epoch:2d}/{a.epochs}  loss {total / a.steps:.3f}  copy accuracy "
              f"{acc:.3f}  memory {len(model.memory)} capsules "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"copy accuracy: {acc:.3f} (untrained {acc0:.3f}, chance {1 / (a.vocab - 1):.3f})")
    return {"accuracy": acc, "initial": acc0}


if __name__ == "__main__":
    main()
