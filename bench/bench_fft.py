"""FFTs on the device against torch.fft (cuFFT on a CUDA machine, else torch's CPU) and scipy.fft
(the cpu backend's), in one run: batched 1-D complex64 transforms through each path of the Vulkan
kernel (one shared-memory pass, the four-step split, Bluestein's convolution), a 2-D transform
and a real one. "host trip" is what the Vulkan device did before it had the kernels: the
array layer's host round trip (download, scipy.fft, upload), which the cpu backend still uses.

Run: python bench/bench_fft.py [--device vulkan] [--reps 5] [--batch 10] [--json out.json]

Each case is ``--batch`` calls back to back, then one synchronize (per call, best of
``--reps``). Columns: grilly, host trip, torch and scipy times, and torch / grilly (> 1: grilly faster).
"""
from __future__ import annotations

import argparse
import json

import numpy as np

import grilly as gp
from grilly.array import host, host_kernels

from bench_gpu import timed   # (bench/ is on sys.path when run as a script)

# (name, shape, transform): complex64 input unless the transform is rfft
CASES = [
    ("fft 4096 x 1024", (4096, 1024), "fft"),          # one pass
    ("fft 1024 x 4096", (1024, 4096), "fft"),          # one pass, the longest
    ("fft 64 x 65536", (64, 65536), "fft"),            # the four-step split
    ("fft 4096 x 1000", (4096, 1000), "fft"),          # Bluestein, m = 2048
    ("fft2 2048 x 2048", (2048, 2048), "fft2"),        # both axes
    ("rfft 1024 x 8192", (1024, 8192), "rfft"),
]


def main() -> None:
    """Print (and optionally write as JSON) the table described in the module docstring."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="vulkan")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--small", action="store_true", help="shapes / 16 (a CPU Vulkan driver)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    dev = gp.backends.registry.device(args.device)
    try:
        import torch
        tdev = "cuda" if torch.cuda.is_available() else "cpu"
        tsync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
    except ImportError:
        torch = None
    import scipy.fft

    rng = np.random.default_rng(0)
    rows = []
    print(f"{'case':22s} {'grilly ms':>10s} {'host trip':>10s} {'torch ms':>10s} {'scipy ms':>10s} "
          f"{'torch/grilly':>13s}")
    for name, shape, kind in CASES:
        if args.small:
            shape = (max(shape[0] // 16, 1), shape[1])
        h = rng.standard_normal(shape)
        h = (h if kind == "rfft" else h + 1j * rng.standard_normal(shape)).astype(
            np.float32 if kind == "rfft" else np.complex64)
        x = gp.asarray(h, device=dev)
        f = {"fft": gp.fft.fft, "fft2": gp.fft.fft2, "rfft": gp.fft.rfft}[kind]
        g = timed(lambda: f(x), dev.synchronize, args.reps, args.batch)
        op = {"fft": "fft_c2c", "fft2": "fft_c2c", "rfft": "fft_r2c"}[kind]
        axes = (0, 1) if kind == "fft2" else (1,)
        extra = (False,) if op == "fft_c2c" else ()
        hk = host_kernels.FUNCTIONS[op]
        trip = timed(lambda: host.host_call(op, hk, dev, x, tuple(shape[a] for a in axes), axes,
                                            "backward", *extra), dev.synchronize, 2, 1)
        t = None
        if torch is not None:
            tx = torch.from_numpy(h).to(tdev)
            tf = {"fft": torch.fft.fft, "fft2": torch.fft.fft2, "rfft": torch.fft.rfft}[kind]
            t = timed(lambda: tf(tx), tsync, args.reps, args.batch)
        sf = {"fft": scipy.fft.fft, "fft2": scipy.fft.fft2, "rfft": scipy.fft.rfft}[kind]
        s = timed(lambda: sf(h, workers=-1), lambda: None, 2, 1)
        ratio = t / g if t else float("nan")
        print(f"{name:22s} {g * 1e3:10.3f} {trip * 1e3:10.3f} {(t or float('nan')) * 1e3:10.3f} "
              f"{s * 1e3:10.3f} {ratio:13.2f}")
        rows.append({"case": name, "shape": shape, "grilly_ms": g * 1e3, "host_trip_ms": trip * 1e3,
                     "torch_ms": None if t is None else t * 1e3, "scipy_ms": s * 1e3,
                     "torch_over_grilly": ratio})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": str(dev), "torch_device": torch and tdev, "rows": rows}, fh,
                      indent=1)


if __name__ == "__main__":
    main()
