"""What a jitted training step's replay guards cost: the digits MLP and CNN steps (Adam, cross
entropy, as bench_train.py) through grilly.jit, timed per replay (median of many), and the
guard check alone (``TracedGraph.guards_hold``).

Run: python bench/bench_jit_guards.py [--device cpu] [--reps 2000] [--rounds 3]
To compare two trees, run it under each one's PYTHONPATH, alternating, in the same session
(timings on a shared machine drift: compare rounds run side by side).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import grilly as gp  # noqa: E402
from grilly import nn, optim  # noqa: E402
from train_digits_cnn import make_model as grilly_cnn  # noqa: E402


def make_step(kind: str, device: str):
    """A jitted training step of the digits MLP or CNN (batch 128) and its arguments."""
    nn.manual_seed(0)
    model = (nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)) if kind == "mlp"
             else grilly_cnn()).to(device)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    shape = (128, 64) if kind == "mlp" else (128, 1, 8, 8)
    x = gp.asarray(rng.uniform(0, 1, shape).astype(np.float32), device=device)
    t = gp.asarray(rng.integers(0, 10, 128).astype(np.int64), device=device)

    @gp.jit
    def step(x, t):
        opt.zero_grad()
        loss = loss_fn(model(x), t)
        loss.backward()
        opt.step()
        return loss

    return step, (x, t)


def median_us(f, reps: int) -> float:
    """The median wall time of ``f()`` over ``reps`` calls, in microseconds."""
    ts = []
    clock = time.perf_counter
    for _ in range(reps):
        t0 = clock()
        f()
        ts.append(clock() - t0)
    return statistics.median(ts) * 1e6


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default="mlp,cnn")
    a = ap.parse_args(argv)
    out: dict = {}
    for kind in a.models.split(","):
        step, args = make_step(kind, a.device)
        for _ in range(5):
            step(*args)
        gp.synchronize(a.device)
        graph = step.graph
        reps = a.reps if kind == "mlp" else max(a.reps // 10, 50)
        steps, guards = [], []
        for _ in range(a.rounds):
            steps.append(median_us(lambda: step(*args), reps))
            guards.append(median_us(graph.guards_hold, a.reps))
        gp.synchronize(a.device)
        assert step.traces == 1, step.traces
        out[kind] = {"step_us": min(steps), "guards_us": min(guards)}
        print(f"{kind} {a.device}: jitted step {min(steps):8.1f} us (median of {reps}, best of "
              f"{a.rounds} rounds), guards_hold {min(guards):6.2f} us")
    return out


if __name__ == "__main__":
    main()
