"""Flat (exact) k-NN search: grilly.search.IndexFlat against faiss-cpu's IndexFlatL2/IP, side by
side in one run, and torch (cdist + topk) where a CUDA device is present.

Run: python bench/bench_search.py [--n 1000000 --nq 10000 --d 128 --k 10] [--device vulkan:0]
[--metric l2|ip] [--json out.json]. Defaults are the issue's sizes: a 1M x 128 float32 database
and 10k queries. Prints seconds per full search and ratios (> 1 means grilly is faster), plus how
many result ids agree with faiss. numpy/faiss read OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE: run
this command with both unset for a fair BLAS comparison. faiss and torch are imported here only.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import grilly as gp
from grilly.search import IndexFlat


def timed(f, reps: int) -> tuple[float, object]:
    """Best-of-reps wall time in seconds (after one warm-up call) and the last result."""
    out = f()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="database vectors")
    ap.add_argument("--nq", type=int, default=10_000, help="queries")
    ap.add_argument("--d", type=int, default=128, help="dimension")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--metric", choices=("l2", "ip"), default="l2")
    ap.add_argument("--device", default="cpu", help="grilly device (cpu, vulkan:0, ...)")
    ap.add_argument("--chunk", type=int, default=None, help="query rows per block")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--json", default=None, help="also write the results to this file")
    a = ap.parse_args()

    rng = np.random.default_rng(0)
    xb = rng.standard_normal((a.n, a.d)).astype(np.float32)
    xq = rng.standard_normal((a.nq, a.d)).astype(np.float32)
    res = {"n": a.n, "nq": a.nq, "d": a.d, "k": a.k, "metric": a.metric, "device": a.device}

    ix = IndexFlat(a.d, a.metric, device=a.device)
    t = time.perf_counter()
    ix.add(xb)
    gp.synchronize(ix.device)
    res["grilly_add_s"] = time.perf_counter() - t
    q = gp.asarray(xq, device=a.device)

    def run_grilly():
        dist, ids = ix.search(q, a.k, chunk=a.chunk)
        return np.asarray(dist), np.asarray(ids)   # a host read: the work is done

    res["grilly_s"], (g_d, g_i) = timed(run_grilly, a.reps)

    import faiss

    f = (faiss.IndexFlatL2 if a.metric == "l2" else faiss.IndexFlatIP)(a.d)
    f.add(xb)
    res["faiss_threads"] = faiss.omp_get_max_threads()
    res["faiss_s"], (f_d, f_i) = timed(lambda: f.search(xq, a.k), a.reps)
    res["ratio_vs_faiss"] = res["faiss_s"] / res["grilly_s"]
    res["ids_equal_faiss"] = float((g_i == f_i).mean())
    res["max_abs_d_diff"] = float(np.abs(g_d - f_d).max())

    import torch

    if torch.cuda.is_available():
        tb, tq = torch.from_numpy(xb).cuda(), torch.from_numpy(xq).cuda()

        def run_torch():
            out = []
            for i in range(0, a.nq, 1024):   # cdist of all 10k x 1M would need 40 GB
                dd = torch.cdist(tq[i:i + 1024], tb) if a.metric == "l2" else tq[i:i + 1024] @ tb.T
                out.append(torch.topk(dd, a.k, largest=a.metric != "l2").indices)
            torch.cuda.synchronize()
            return out

        res["torch_cuda_s"], _ = timed(run_torch, a.reps)
        res["ratio_vs_torch_cuda"] = res["torch_cuda_s"] / res["grilly_s"]

    w = max(len(k) for k in res)
    for k, v in res.items():
        print(f"{k:<{w}}  {v:.4g}" if isinstance(v, float) else f"{k:<{w}}  {v}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
