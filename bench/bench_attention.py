"""Fused attention against torch, side by side in one run: grilly's
``nn.functional.scaled_dot_product_attention`` (the attention kernels, docs/kernels/attention.md)
and torch's, forward alone and forward + backward, float32, on the encoder layer's shapes
(batch 32, 8 heads, 256 positions, head dim 64) plain and causal, and a longer sequence.

Run: python bench/bench_attention.py [--device cpu|vulkan] [--reps 5] [--json out.json].
torch runs on its CPU build for ``--device cpu`` and on CUDA (TF32 off) for ``--device vulkan``
where a CUDA GPU is present. grilly syncs by reading one element back, torch by
``cuda.synchronize()``. ratio = torch time / grilly time (> 1: grilly faster).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import grilly as gp
from grilly.nn import functional as F

SHAPES = [  # (name, N, H, L, E, causal)
    ("encoder 32x8x256x64", 32, 8, 256, 64, False),
    ("encoder causal", 32, 8, 256, 64, True),
    ("long 4x8x1024x64", 4, 8, 1024, 64, False),
]


def best(fn, reps: int) -> float:
    """Best wall time of ``reps`` calls after one warm-up call, in ms."""
    fn()
    t = float("inf")
    for _ in range(reps):
        s = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - s)
    return t * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    tdev = "cpu"
    if args.device != "cpu" and torch is not None and torch.cuda.is_available():
        tdev = "cuda"
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    tsync = (lambda: torch.cuda.synchronize()) if tdev == "cuda" else (lambda: None)
    rows = []
    print(f"grilly on {args.device}, torch on {tdev if torch else '-'}; ms, best of {args.reps}")
    print(f"{'shape':24s} {'fwd':>8s} {'torch':>8s} {'ratio':>6s} {'fwd+bwd':>9s} {'torch':>8s} "
          f"{'ratio':>6s}")
    rng = np.random.default_rng(0)
    for name, n, h, length, e, causal in SHAPES:
        q, k, v, g = (rng.standard_normal((n, h, length, e)).astype(np.float32) for _ in range(4))
        gq, gk, gv = (gp.asarray(a, device=args.device) for a in (q, k, v))
        gg = gp.asarray(g, device=args.device)

        def g_fwd():
            out = F.scaled_dot_product_attention(gq, gk, gv, is_causal=causal)
            float(out[0, 0, 0, 0])

        def g_both():
            for a in (gq, gk, gv):
                a.requires_grad = True
                a.grad = None
            out = F.scaled_dot_product_attention(gq, gk, gv, is_causal=causal)
            out.backward(gg)
            float(gq.grad[0, 0, 0, 0])
            for a in (gq, gk, gv):
                a.requires_grad = False

        row = {"shape": name, "grilly_fwd_ms": best(g_fwd, args.reps),
               "grilly_fwd_bwd_ms": best(g_both, args.reps)}
        if torch is not None:
            tq, tk, tv, tg = (torch.tensor(a, device=tdev) for a in (q, k, v, g))
            tsdpa = torch.nn.functional.scaled_dot_product_attention

            def t_fwd():
                with torch.no_grad():
                    tsdpa(tq, tk, tv, is_causal=causal)
                tsync()

            def t_both():
                a = [t.detach().requires_grad_() for t in (tq, tk, tv)]
                tsdpa(*a, is_causal=causal).backward(tg)
                tsync()

            row["torch_fwd_ms"] = best(t_fwd, args.reps)
            row["torch_fwd_bwd_ms"] = best(t_both, args.reps)
        rows.append(row)
        tf, tb = row.get("torch_fwd_ms", float("nan")), row.get("torch_fwd_bwd_ms", float("nan"))
        print(f"{name:24s} {row['grilly_fwd_ms']:8.2f} {tf:8.2f} {tf / row['grilly_fwd_ms']:5.2f}x "
              f"{row['grilly_fwd_bwd_ms']:9.2f} {tb:8.2f} {tb / row['grilly_fwd_bwd_ms']:5.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": args.device, "torch_device": tdev, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
