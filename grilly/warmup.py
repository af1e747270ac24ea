"""Compile the CPU device's Numba kernels ahead of use (``grilly warmup``).

A kernel compiles on its first call (about 0.15 s for an elementwise one), then loads from the
on-disk cache in milliseconds in every later process. Running each op once per dtype on tiny arrays fills that
cache, so a fresh process's first calls are cheap (Hypothesis' 800 ms deadline in the Array API
suite trips on first-call compiles otherwise). Groups run in separate processes, in parallel.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor

_KINDS = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}


def _arrays(gp, name: str):
    """A 1-D and a 2-D sample of dtype ``name`` on the CPU device, and a matching scalar."""
    d = getattr(gp, name)
    x = gp.asarray([1, 0, 1] if d.kind == "b" else [1, 2, 3], dtype=d, device="cpu")
    scalar = {"b": True, "i": 1, "u": 1, "f": 1.5, "c": 1.5 + 0.5j}[d.kind]
    return d, x, gp.reshape(gp.concat([x, x]), (2, 3)), scalar


def _elementwise(gp, name: str) -> None:
    from grilly.array.elementwise import BINARY, UNARY
    d, x, _, s = _arrays(gp, name)
    for op, (allowed, _c, _r) in sorted(UNARY.items()):
        if d in allowed:
            getattr(gp, op)(x)
    for op, (allowed, _c, _r) in sorted(BINARY.items()):
        if d in allowed:
            f = getattr(gp, op)
            f(x, x), f(x, s), f(s, x)


def _reductions(gp, name: str) -> None:
    d, x, m, _ = _arrays(gp, name)
    ops = ["all", "any", "count_nonzero"]
    if d.kind in "iufc":
        ops += ["sum", "prod", "cumulative_sum", "cumulative_prod", "diff"]
    if d.kind in "iuf":
        ops += ["max", "min", "argmax", "argmin"]
    if d.kind in "fc":
        ops += ["mean"]
    if d.kind == "f":
        ops += ["std", "var"]
    for op in ops:
        f = getattr(gp, op)
        f(x), f(m, axis=0), f(m, axis=1)


def _searching(gp, name: str) -> None:
    d, x, m, _ = _arrays(gp, name)
    if d.kind in "iuf":
        gp.sort(x), gp.sort(m, axis=0, descending=True), gp.argsort(x)
        gp.argsort(m, axis=0, descending=True), gp.searchsorted(x, x)
        gp.clip(x, min=x, max=x)
    gp.unique_all(x), gp.unique_counts(x), gp.unique_inverse(x), gp.unique_values(x)
    gp.nonzero(x), gp.isin(x, x), gp.where(x == x, x, x)
    gp.take(x, gp.asarray([0, 2], device="cpu")), x[x == x]


def _linalg(gp, name: str) -> None:
    d = getattr(gp, name)
    a = gp.asarray([[4.0, 1.0], [1.0, 3.0]], dtype=d, device="cpu")
    b = gp.asarray([1.0, 2.0], dtype=d, device="cpu")
    la = gp.linalg
    gp.matmul(a, a), gp.matmul(a, b), gp.tensordot(a, a), gp.vecdot(b, b)
    for f in (la.cholesky, la.det, la.eigh, la.eigvalsh, la.inv, la.pinv, la.qr, la.slogdet,
              la.svd, la.svdvals, la.matrix_rank, la.matrix_norm, la.vector_norm, la.trace,
              la.diagonal):
        f(a)
    la.solve(a, a), la.solve(a, b), la.outer(b, b), la.matrix_power(a, 3), la.cross(
        gp.asarray([1.0, 0.0, 0.0], dtype=d, device="cpu"),
        gp.asarray([0.0, 1.0, 0.0], dtype=d, device="cpu"))
    if hasattr(la, "eig"):
        la.eig(a), la.eigvals(a)


def _nn(gp, name: str) -> None:
    """The layer, optimizer, random, spiking and search kernels a training step runs (conv,
    pooling, norms, attention, cross entropy, Adam/AdamW/SGD/RMSprop/Adagrad, dropout, LIF/ALIF/
    synaptic, STDP/Hebbian, top-k), forward and backward: without these an example's first
    epoch spent minutes compiling. In the parallel pass (``_run``) the shapes are a digits
    example's (batch 64, 128 features, a 64x512 by 512x128 product), large enough for the
    threaded variants whose choice depends on more than the element count."""
    import numpy as np

    from grilly import nn, optim
    from grilly.backends.cpu_numba import jit
    from grilly.nn import functional as F
    from grilly.nn import snn
    from grilly.search import knn

    d = getattr(gp, name)
    rng = np.random.default_rng(0)
    big = jit.PARALLEL_MIN == 0
    b, h = (64, 128) if big else (2, 16)

    def arr(*shape):
        return gp.asarray(rng.standard_normal(shape), dtype=d, device="cpu")

    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.LayerNorm(64), nn.Dropout(0.1),
                          nn.Linear(64, h), nn.ReLU(), nn.Linear(h, 10)).to("cpu", d)
    target = gp.asarray(rng.integers(0, 10, b), device="cpu")
    for opt in (optim.Adam(model.parameters()), optim.AdamW(model.parameters()),
                optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                optim.RMSprop(model.parameters()), optim.Adagrad(model.parameters())):
        loss = F.cross_entropy(model(arr(b, 1, 8, 8)), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    model(arr(b, 1, 8, 8))
    wide = nn.Linear(512, h).to("cpu", d)
    gp.sum(wide(arr(b, 512))).backward()
    q = arr(2, 2, 16 if big else 4, 8)
    q.requires_grad = True
    gp.sum(F.scaled_dot_product_attention(q, q, q, is_causal=True)).backward()
    F.softmax(q, dim=-1), F.log_softmax(q, dim=-1)
    spiking = nn.Sequential(nn.Linear(64, h), snn.LIF(0.9, step_mode="m"),
                            snn.AdaptiveLIF(0.9, step_mode="m"),
                            snn.Synaptic(0.8, 0.9, step_mode="m"),
                            snn.LIF(0.9, refractory=1, step_mode="m")).to("cpu", d)
    x = snn.rate(gp.asarray(rng.random((b, 64)), dtype=d, device="cpu"), 3)
    out = spiking(x)
    snn.ce_rate_loss(out[..., :10], target).backward()
    fc = nn.Linear(64, h, bias=False).to("cpu", d)
    snn.STDP(fc).step(x[0], out[0])
    snn.Hebbian(fc).step(x[0])
    knn(arr(3, 4), arr(5, 4), 2)
    gp.topk(arr(5), 2)


_GROUPS = {"elementwise": _elementwise, "reductions": _reductions, "searching": _searching,
           "linalg": _linalg, "nn": _nn}


def _run(group: str, name: str) -> tuple[str, str, float]:
    """Run the group twice: on its small inputs (the serial variants), then with the threading
    threshold at 0 so that the same calls reach the parallel (prange) variants large arrays run."""
    import grilly as gp
    from grilly.backends.cpu_numba import jit
    t = time.perf_counter()
    _GROUPS[group](gp, name)
    saved, jit.PARALLEL_MIN = jit.PARALLEL_MIN, 0
    try:
        _GROUPS[group](gp, name)
    finally:
        jit.PARALLEL_MIN = saved
    return group, name, time.perf_counter() - t


def tasks() -> list[tuple[str, str]]:
    """(group, dtype name) pairs, the slowest groups first so parallel workers finish together."""
    from grilly.array import dtypes as dt
    names = [d.name for d in dt.STANDARD]
    out = [("elementwise", n) for n in names] + [("reductions", n) for n in names]
    out += [("searching", n) for n in names]
    out += [("linalg", n) for n in ("float64", "float32", "complex128", "complex64")]
    out += [("nn", n) for n in ("float32", "float64")]
    return out


def warmup(jobs: int | None = None, verbose: bool = False) -> float:
    """Compile the CPU kernels of every op and dtype into the on-disk cache; returns seconds."""
    jobs = jobs or os.cpu_count() or 1
    t = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as ex:
        for group, name, secs in ex.map(_run, *zip(*tasks())):
            if verbose:
                print(f"{group:12s} {name:11s} {secs:7.1f} s", flush=True)
    return time.perf_counter() - t
