"""The seed's ``Learning`` snippets (numpy in, numpy out), then the same rules on grilly arrays:
EWC on a small model, whitening, Oja's rule. Run: python examples/learning_quickstart.py
[--device cpu]."""
from __future__ import annotations

import argparse

import numpy as np

import grilly
import grilly as gp
from grilly import nn
from grilly.learning import EWC, Whitening, oja_step


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)

    # ---- the seed API -------------------------------------------------------------------
    learning = grilly.Learning(device=a.device)
    params = rng.standard_normal(10).astype(np.float32)
    old = params + 0.1
    fisher_info = rng.random(10).astype(np.float32)
    print("ewc_penalty:", learning.ewc_penalty((params, old), fisher_info, 100.0))
    weights = np.zeros(4, np.float32)
    x = rng.standard_normal(4).astype(np.float32)
    print("nlms_update:", learning.nlms_update(weights, x, 0.5, 0.1))
    data = rng.standard_normal((256, 8)).astype(np.float32) @ rng.standard_normal((8, 8))
    white = learning.whitening(data, 1e-5)
    print("whitening: covariance diagonal", np.round(np.diag(np.cov(white, rowvar=False)), 3))
    g = rng.standard_normal(10).astype(np.float32)
    print("natural_gradient:", learning.natural_gradient(g, fisher_info + 0.1)[:3], "...")

    # ---- the same rules on grilly arrays --------------------------------------------------
    dev = a.device
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(dev)
    xs = gp.asarray(data[:64].astype(np.float32), device=dev)
    ys = gp.asarray(rng.integers(0, 3, 64), device=dev)
    ewc = EWC(model, lam=50.0)
    ewc.consolidate([(xs, ys)], max_samples=32)
    print("EWC penalty right after consolidating:", float(ewc.penalty()))
    w = Whitening("pca").fit(gp.asarray(data, device=dev))
    print("PCA-whitened variances:", np.round(np.var(np.asarray(w.transform(
        gp.asarray(data, device=dev))), axis=0, ddof=1), 3))
    v = gp.asarray(rng.standard_normal(8).astype(np.float32) * 0.1, device=dev)
    xc = gp.asarray((data - data.mean(axis=0)).astype(np.float32), device=dev)
    for _ in range(60):
        for i in range(0, 256, 32):
            v = oja_step(v, xc[i:i + 32], lr=0.002)
    top = np.linalg.eigh(np.cov(data, rowvar=False))[1][:, -1]
    vn = np.asarray(v)
    print(f"Oja: |cos(w, first principal component)| = {abs(vn @ top) / np.linalg.norm(vn):.4f}")


if __name__ == "__main__":
    main()
