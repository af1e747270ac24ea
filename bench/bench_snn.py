"""The Open Neuromorphic SNN-library benchmark configuration, side by side in one run: one
Linear(n, n) + one LIF layer, batch 16, T=500 steps, float32; forward and backward (of the sum of
the spikes) timed separately, peak memory recorded. grilly (cpu, or ``--device vulkan``) against
snnTorch (``Leaky``, a Python loop over steps, as the benchmark writes it), SpikingJelly
(``LIFNode``, multi-step mode; ``--sj-backend cupy`` for its fused CUDA kernels, SpikingJelly
0.0.0.0.14 where it has a backend argument) and Norse (``norse.torch.LIF``, where installed), on the
CPU or, with ``--peer-device cuda``, on a CUDA GPU (torch synchronised before each clock read).

Run: python bench/bench_snn.py [--n 4096] [--large (n = 16384 too)] [--T 500] [--batch 16]
[--reps 3] [--device cpu] [--peer-device cpu] [--sj-backend torch] [--lif-only] [--json out.json].
Each library runs in its own subprocess, so its peak memory is its own: on the CPU the rise of
peak RSS during one forward + backward over the resident memory before it (inputs and weights
created, a 2-step warm-up run done); on CUDA the rise of torch's peak allocated bytes; on Vulkan
the rise of the bytes grilly's memory pool holds (it keeps freed blocks, so that is its peak).
ratio = the other library's time / grilly's (> 1: grilly faster).
``--lif-only`` also times the neuron layer alone on given input currents (no Linear), where
the fused kernels are the whole cost.
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import subprocess
import sys
import time

BETA = 0.5      # snnTorch Leaky's beta; SpikingJelly's tau = 1 / (1 - beta) = 2 (its default)


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"bench_snn: no {key} in /proc/self/status")


def _reset_peak() -> float:
    """Reset the peak-RSS mark (Linux: clear_refs 5) and return the resident MB now."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_mb("VmRSS")


# ---- one library per subprocess ---------------------------------------------------------------
def _grilly(cfg):
    import numpy as np

    import grilly as gp
    from grilly import nn
    from grilly.nn import snn

    dev = cfg["device"]
    T, B, n = cfg["T"], cfg["batch"], cfg["n"]
    x = gp.asarray(np.random.default_rng(0).random((T, B, n), dtype=np.float32), device=dev)
    lif = snn.LIF(BETA, step_mode="m", fused=not cfg["unfused"])
    model = lif if cfg["lif_only"] else nn.Sequential(nn.Linear(n, n), lif)
    model.to(dev)
    if cfg["lif_only"]:
        x.requires_grad_()
    probe = x if cfg["lif_only"] else model[0].weight

    def fwd():
        snn.reset(model)
        out = model(x)
        np.asarray(out[-1, 0, :1])   # a host read: the device has finished
        return out

    def bwd(out):
        gp.sum(out).backward()
        np.asarray(probe.grad[:1])
        probe.grad = None

    calls = []

    def mem():
        # first call: the resident bytes, and the pool's most-live mark reset to them (the
        # warm-up's model may have held more); then that mark: the peak since
        if "peak_live_bytes" not in gp.device_stats(dev):
            return None
        calls.append(1)
        if len(calls) == 1:
            gp.synchronize(dev)
            gp.reset_peak_memory_stats(dev)
        st = gp.device_stats(dev)
        return (st["live_bytes"] if len(calls) == 1 else st["peak_live_bytes"]) / 2**20

    return fwd, bwd, mem


def _cuda_mem(torch, dev):
    """Peak-memory probe for a torch device: MB of torch's peak allocation on CUDA, None on cpu."""
    if dev.type != "cuda":
        return lambda: None
    calls = []

    def probe():   # first call: the resident MB (and a peak reset); then the peak since
        calls.append(1)
        if len(calls) == 1:
            torch.cuda.synchronize(dev)
            torch.cuda.reset_peak_memory_stats(dev)
            return torch.cuda.memory_allocated(dev) / 2**20
        return torch.cuda.max_memory_allocated(dev) / 2**20
    return probe


def _sync(torch, dev, out=None):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return out


def _snntorch(cfg):
    import snntorch
    import torch

    dev = torch.device(cfg["peer_device"])
    T, B, n = cfg["T"], cfg["batch"], cfg["n"]
    x = torch.rand((T, B, n), generator=torch.Generator().manual_seed(0)).to(dev)
    fc = torch.nn.Linear(n, n).to(dev)
    lif = snntorch.Leaky(beta=BETA).to(dev)
    if cfg["lif_only"]:
        x.requires_grad_()

    def fwd():
        mem = lif.init_leaky()
        out = []
        for xt in x:
            spk, mem = lif(xt if cfg["lif_only"] else fc(xt), mem)
            out.append(spk)
        return _sync(torch, dev, torch.stack(out))

    def bwd(out):
        out.sum().backward()
        _sync(torch, dev)
        fc.zero_grad()
        x.grad = None

    return fwd, bwd, _cuda_mem(torch, dev)


def _spikingjelly(cfg):
    import numpy as np
    import torch

    if not hasattr(np, "int"):
        np.int = int   # SpikingJelly 0.0.0.0.14's cupy backend still names the alias numpy 1.24 removed
    from spikingjelly.activation_based import functional, layer, neuron

    dev = torch.device(cfg["peer_device"])
    T, B, n = cfg["T"], cfg["batch"], cfg["n"]
    x = torch.rand((T, B, n), generator=torch.Generator().manual_seed(0)).to(dev)
    kw = dict(tau=1 / (1 - BETA), step_mode="m")
    if "backend" in inspect.signature(neuron.LIFNode.__init__).parameters:
        kw["backend"] = cfg["sj_backend"]   # SpikingJelly 0.0.0.0.14; 2.0 has no backend argument
    elif cfg["sj_backend"] != "torch":
        raise RuntimeError(f"this SpikingJelly has no {cfg['sj_backend']!r} backend")
    lif = neuron.LIFNode(**kw)
    model = lif if cfg["lif_only"] else torch.nn.Sequential(layer.Linear(n, n, step_mode="m"),
                                                            lif)
    model.to(dev)
    if cfg["lif_only"]:
        x.requires_grad_()

    def fwd():
        functional.reset_net(model)
        return _sync(torch, dev, model(x))

    def bwd(out):
        out.sum().backward()
        _sync(torch, dev)
        model.zero_grad()
        x.grad = None

    return fwd, bwd, _cuda_mem(torch, dev)


def _norse(cfg):
    import norse.torch as norse
    import torch

    dev = torch.device(cfg["peer_device"])
    T, B, n = cfg["T"], cfg["batch"], cfg["n"]
    x = torch.rand((T, B, n), generator=torch.Generator().manual_seed(0)).to(dev)
    fc = torch.nn.Linear(n, n).to(dev)
    lif = norse.LIF().to(dev)   # its multi-step module: a (T, batch, n) input, a loop over T
    if cfg["lif_only"]:
        x.requires_grad_()

    def fwd():
        z, _ = lif(x if cfg["lif_only"] else fc(x))
        return _sync(torch, dev, z)

    def bwd(out):
        out.sum().backward()
        _sync(torch, dev)
        fc.zero_grad()
        x.grad = None

    return fwd, bwd, _cuda_mem(torch, dev)


LIBS = {"grilly": _grilly, "snntorch": _snntorch, "spikingjelly": _spikingjelly, "norse": _norse}


def worker(lib: str, cfg: dict) -> dict:
    """Time ``lib`` in this process: best-of-reps forward and backward, peak RSS rise."""
    if lib != "grilly":
        import torch
        torch.set_num_threads(os.cpu_count() or 1)
        torch.backends.cuda.matmul.allow_tf32 = False   # float32 against float32 (the default,
        torch.backends.cudnn.allow_tf32 = False         # said aloud; cuDNN's is TF32)
    fwd, bwd, _ = LIBS[lib](dict(cfg, T=2))
    bwd(fwd())                          # warm-up on 2 steps: imports, compilation
    del fwd, bwd
    fwd, bwd, mem = LIBS[lib](cfg)
    base = _reset_peak()                # the inputs and weights are resident: not counted
    dbase = mem()
    bwd(fwd())                          # the peak memory of one forward + backward
    peak = _status_mb("VmHWM") - base
    dpeak = mem()
    tf, tb = [], []
    for _ in range(cfg["reps"]):
        t = time.perf_counter()
        out = fwd()
        tf.append(time.perf_counter() - t)
        t = time.perf_counter()
        bwd(out)
        tb.append(time.perf_counter() - t)
        out = None   # the graph goes before the next forward
    return {"forward_s": min(tf), "backward_s": min(tb),
            "peak_mb": peak if dbase is None else dpeak - dbase,
            "memory": "host RSS" if dbase is None else "device"}


def _run_sub(lib: str, cfg: dict) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, "--cfg", json.dumps(cfg)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout).strip().splitlines()[-1:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--large", action="store_true", help="also n = 16384")
    ap.add_argument("--T", type=int, default=500)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--device", default="cpu", help="grilly's device (cpu, vulkan, vulkan:1)")
    ap.add_argument("--peer-device", default="cpu", help="torch device of the peers (cpu, cuda)")
    ap.add_argument("--sj-backend", default="torch", help="SpikingJelly backend (torch, cupy)")
    ap.add_argument("--lif-only", action="store_true", help="also time the LIF layer alone")
    ap.add_argument("--libs", default="grilly,snntorch,spikingjelly")
    ap.add_argument("--unfused", action="store_true", help="grilly's per-step path (fused=False)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--cfg", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker, json.loads(a.cfg))))
        return
    libs = a.libs.split(",")
    results = []
    for n in [a.n] + ([16384] if a.large and a.n != 16384 else []):
        for lif_only in [False] + ([True] if a.lif_only else []):
            cfg = dict(n=n, T=a.T, batch=a.batch, reps=a.reps, device=a.device,
                       lif_only=lif_only, unfused=a.unfused, peer_device=a.peer_device,
                       sj_backend=a.sj_backend)
            row = {"config": cfg, "libs": {lib: _run_sub(lib, cfg) for lib in libs}}
            results.append(row)
            _print(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": platform.platform(), "cpus": os.cpu_count(),
                       "results": results}, f, indent=1)


def _print(row: dict) -> None:
    c = row["config"]
    what = "LIF only" if c["lif_only"] else "Linear + LIF"
    print(f"\n{what}: n={c['n']} batch={c['batch']} T={c['T']} float32, grilly on {c['device']}"
          f"{' (unfused)' if c['unfused'] else ''}, peers on {c['peer_device']}"
          f" (SpikingJelly backend {c['sj_backend']})")
    print(f"{'library':<14}{'forward ms':>12}{'backward ms':>13}{'peak MB':>10}"
          f"{'fwd ratio':>11}{'bwd ratio':>11}")
    g = row["libs"].get("grilly", {})
    for lib, r in row["libs"].items():
        if "error" in r:
            print(f"{lib:<14} failed: {r['error']}")
            continue
        rf = r["forward_s"] / g["forward_s"] if "forward_s" in g else float("nan")
        rb = r["backward_s"] / g["backward_s"] if "backward_s" in g else float("nan")
        print(f"{lib:<14}{r['forward_s'] * 1e3:>12.1f}{r['backward_s'] * 1e3:>13.1f}"
              f"{r['peak_mb']:>10.0f}{rf:>11.2f}{rb:>11.2f}")


if __name__ == "__main__":
    main()
