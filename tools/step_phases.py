"""Host time by phase of an eager training step on the Vulkan device (the GPU waits taken out).

Run: python tools/step_phases.py MODEL [STEPS] [--vk] [--amp]. MODEL is one of bench_train's
(mlp, cnn, wide, transformer, cnn32); the step is bench_train's (zero_grad, forward, cross
entropy, backward, Adam, the loss read); ``--amp`` runs it as bench_amp.py does (float16
autocast, a GradScaler: its step's inf/NaN read is in the optimizer phase). Prints the host
time of forward, backward, optimizer and read, the time spent waiting for the GPU, the wall
time and the dispatches and submits, per step, after five warm-up steps. ``--vk`` also times
each Vulkan entry point the recorder calls (a wrapper per call: it adds its own overhead to
the phases). A diagnostic, not a benchmark.
"""
from __future__ import annotations

import collections
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import numpy as np  # noqa: E402

import grilly as gp  # noqa: E402
from bench_train import (BATCH, WIDE_BATCH, grilly_cnn, grilly_cnn32, grilly_mlp,  # noqa: E402
                         grilly_transformer, grilly_wide)
from grilly import amp, nn, optim  # noqa: E402
from grilly.backends.vulkan import memory, recorder, runtime  # noqa: E402

MODELS = {"mlp": (grilly_mlp, (BATCH, 64)), "cnn": (grilly_cnn, (BATCH, 1, 8, 8)),
          "wide": (grilly_wide, (WIDE_BATCH, 1024)),
          "transformer": (grilly_transformer, (32, 256, 512)),
          "cnn32": (grilly_cnn32, (256, 3, 32, 32))}


class _TimedLib:
    """A cffi ``lib`` whose vk* functions add their time to ``spent`` (name -> seconds)."""

    def __init__(self, lib, spent: collections.Counter, calls: collections.Counter):
        self._lib, self._spent, self._calls = lib, spent, calls

    def __getattr__(self, name: str):
        f = getattr(self._lib, name)
        if not name.startswith("vk"):
            return f

        def timed(*args):
            t = time.perf_counter()
            try:
                return f(*args)
            finally:
                self._spent[name] += time.perf_counter() - t
                self._calls[name] += 1
        return timed


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    kind, n = args[0], int(args[1]) if len(args) > 1 else 30
    vk, vkn = collections.Counter(), collections.Counter()
    if "--vk" in sys.argv:
        for mod in (recorder, memory, runtime):
            mod.lib = _TimedLib(mod.lib, vk, vkn)
    waited = [0.0]
    wait = recorder.Recorder._wait

    def timed_wait(self, *a, **k):
        t = time.perf_counter()
        try:
            return wait(self, *a, **k)
        finally:
            waited[0] += time.perf_counter() - t
    recorder.Recorder._wait = timed_wait

    make, shape = MODELS[kind]
    nn.manual_seed(0)
    rng = np.random.default_rng(0)
    model = make().to("vulkan")
    x = gp.asarray(rng.uniform(0, 1, shape).astype(np.float32), device="vulkan")
    y = gp.asarray(rng.integers(0, 10, shape[0]), device="vulkan")
    opt = optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    phases = collections.Counter()
    low = "--amp" in sys.argv
    scaler = amp.GradScaler(enabled=low)

    def step() -> None:
        marks = [(time.perf_counter(), waited[0])]
        opt.zero_grad()
        with amp.autocast(dtype=gp.float16, enabled=low):
            loss = loss_fn(model(x), y)
        marks.append((time.perf_counter(), waited[0]))
        scaler.scale(loss).backward()
        marks.append((time.perf_counter(), waited[0]))
        scaler.step(opt)
        scaler.update()
        marks.append((time.perf_counter(), waited[0]))
        float(loss)
        marks.append((time.perf_counter(), waited[0]))
        for name, (t0, w0), (t1, w1) in zip(("forward", "backward", "optimizer", "read"),
                                            marks, marks[1:]):
            phases[name] += (t1 - t0) - (w1 - w0)
        phases["GPU wait"] += marks[-1][1] - marks[0][1]
        phases["wall"] += marks[-1][0] - marks[0][0]

    for _ in range(5):
        step()
    phases.clear()
    vk.clear()
    vkn.clear()
    s0 = dict(recorder.stats)
    for _ in range(n):
        step()
    print(f"{kind}, ms a step over {n} steps: "
          + ", ".join(f"{k} {v / n * 1e3:.3f}" for k, v in phases.items()))
    print("per step: " + ", ".join(f"{k} {(recorder.stats[k] - s0[k]) / n:.1f}"
                                   for k in recorder.stats))
    if vk:
        print(f"Vulkan calls {sum(vk.values()) / n * 1e3:.3f} ms a step (inside the GPU wait "
              "too): " + ", ".join(f"{k} {v / n * 1e3:.3f} ms / {vkn[k] / n:.0f}"
                                   for k, v in vk.most_common(10)))


if __name__ == "__main__":
    main()
