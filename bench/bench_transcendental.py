"""What accurate float32 math costs: exp, log and tanh on 64M floats through grilly's own library
(shaders/math_f32.glsl), through the GLSL built-ins it replaced, and through torch, in one run.

Run: python bench/bench_transcendental.py [--device vulkan] [--n 67108864] [--json out.json]

Each op is timed as ``--batch`` calls back to back, then one synchronize (per call, best of
``--reps``). ``negative`` moves the same bytes with no arithmetic: the memory-bound floor.
Columns: library and built-in times, library cost over the floor (1.00 = free), torch's time over
the library's (1.0 = as fast as torch). Last, divide against add (the same bytes moved). The
built-in variant (``ew_float32_builtin``) is built for this benchmark only; nothing else
dispatches it.
"""
from __future__ import annotations

import argparse
import json

import numpy as np

import grilly as gp
from grilly.backends.vulkan import kernels
from grilly.backends.vulkan.variants import op_codes

from bench_gpu import timed   # (bench/ is on sys.path when run as a script)


def main() -> None:
    """Print (and optionally write as JSON) the table described in the module docstring."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="vulkan")
    ap.add_argument("--n", type=int, default=64 * 2**20)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    dev = gp.backends.registry.device(args.device)
    rng = np.random.default_rng(0)
    h = rng.uniform(0.01, 10.0, args.n).astype(np.float32)
    x = gp.asarray(h, device=dev)
    buf = x._buf
    # the built-in variant takes the same vec4 path as the library's
    kernels.VEC4_VARIANTS = kernels.VEC4_VARIANTS | {"ew_float32_builtin"}
    codes = op_codes()

    def builtin(op):
        def run():
            out = kernels.new_buffer(buf.ctx, buf.shape, buf.dtype)
            kernels.launch(buf.ctx, "ew_float32_builtin", codes[op], [out, buf], tuple(buf.shape), op)
        return run

    try:
        import torch
        tdev = "cuda" if torch.cuda.is_available() else "cpu"
        tx = torch.from_numpy(h).to(tdev)
        tsync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
    except ImportError:
        torch = None
    sync = dev.synchronize
    floor = timed(lambda: gp.negative(x), sync, args.reps, args.batch)
    gbytes = 8 * args.n / 1e9
    print(f"{args.n} float32 on {dev}; memory-bound floor (negative): {floor * 1e3:.3f} ms, "
          f"{gbytes / floor:.0f} GB/s")
    rows = []
    print(f"{'op':6s} {'library ms':>11s} {'built-in ms':>12s} {'lib/floor':>10s} {'built-in/floor':>15s}"
          f" {'torch ms':>9s} {'torch/lib':>10s}")
    for op in ("exp", "log", "tanh"):
        lib = timed(lambda: getattr(gp, op)(x), sync, args.reps, args.batch)
        bi = timed(builtin(op), sync, args.reps, args.batch)
        tt = timed(lambda: getattr(torch, op)(tx), tsync, args.reps, args.batch) if torch else float("nan")
        rows.append({"op": op, "library_s": lib, "builtin_s": bi, "floor_s": floor, "torch_s": tt,
                     "torch_device": tdev if torch else None})
        print(f"{op:6s} {lib * 1e3:11.3f} {bi * 1e3:12.3f} {lib / floor:10.2f} {bi / floor:15.2f}"
              f" {tt * 1e3:9.3f} {tt / lib:10.2f}")
    # division (correctly rounded, shaders/math_f32_arith.glsl) against add: same bytes moved
    hy = rng.uniform(0.5, 2.0, args.n).astype(np.float32)
    y = gp.asarray(hy, device=dev)
    add = timed(lambda: gp.add(x, y), sync, args.reps, args.batch)
    div = timed(lambda: gp.divide(x, y), sync, args.reps, args.batch)
    ty = torch.from_numpy(hy).to(tdev) if torch else None
    tdiv = (timed(lambda: torch.div(tx, ty), tsync, args.reps, args.batch) if torch else float("nan"))
    rows.append({"op": "divide", "library_s": div, "floor_s": add, "torch_s": tdiv})
    print(f"divide {div * 1e3:11.3f} {'':>12s} {div / add:10.2f} {'(floor: add)':>15s} {tdiv * 1e3:9.3f}"
          f" {tdiv / div:10.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(dev), "n": args.n, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
