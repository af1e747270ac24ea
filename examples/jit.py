"""grilly.jit: the seed's snippets as written (``grilly.jit`` is the seed's
``grilly.backend.jit``), then a traced training step, on the default device.

Run: python examples/jit.py [--device cpu|vulkan] [--steps 200]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import grilly
import grilly as gp
import grilly.functional as F
import grilly.nn as nn
from grilly.jit import Tracer, trace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--steps", type=int, default=200)
    a = ap.parse_args()
    dev = gp.asarray(0.0, device=a.device).device
    rng = np.random.default_rng(0)
    w = gp.asarray(rng.standard_normal((256, 64)).astype(np.float32) * 0.1, device=dev)
    w2 = gp.asarray(rng.standard_normal((10, 256)).astype(np.float32) * 0.1, device=dev)
    x = gp.asarray(rng.standard_normal((32, 64)).astype(np.float32), device=dev)

    # ---- the decorator (seed: @grilly.jit) --------------------------------------------------
    @grilly.jit
    def forward(x):
        h = F.linear(x, w)
        h = F.relu(h)
        return F.linear(h, w2)

    y = forward(x)   # first call: traces ops, builds TracedGraph
    y = forward(x)   # later calls: replays
    print(f"@grilly.jit: output {y.shape}, traced {forward.traces} time(s)")

    # ---- explicit tracing (seed: from grilly.backend.jit import trace, Tracer) ----------------
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
    example_input = x
    traced = trace(model, example_input)
    new_input = gp.asarray(rng.standard_normal((32, 64)).astype(np.float32), device=dev)
    y = traced(new_input)
    err = float(gp.max(gp.abs(y - model(new_input))))
    print(f"trace(model, example_input): max |traced - eager| = {err:.2e}")

    tracer = Tracer()
    with tracer:
        tracer.register_input(x)
        y = model(x)
    graph = tracer.build([y])
    print(graph.summary())

    # ---- a whole training step ----------------------------------------------------------------
    opt = gp.optim.Adam(model.parameters(), lr=1e-3)
    labels = gp.asarray(rng.integers(0, 10, 32), device=dev)

    def train_step(x, t):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), t)
        loss.backward()
        opt.step()
        return loss

    jitted = grilly.jit(train_step)
    for name, step in (("eager", train_step), ("jit", jitted)):
        step(x, labels)
        gp.synchronize(dev)
        t0 = time.perf_counter()
        for _ in range(a.steps):
            loss = step(x, labels)
        gp.synchronize(dev)
        us = (time.perf_counter() - t0) / a.steps * 1e6
        print(f"training step ({name}): {us:8.1f} us, loss {float(loss):.4f}")


if __name__ == "__main__":
    main()
