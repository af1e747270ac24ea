"""kl_divergence between distributions of different families, against torch.distributions (a
test-only oracle) on every device: every cross-family pair torch registers among grilly's
classes, in float32 and float64, with p and q batches broadcast against each other (so finite
and inf elements meet), and parameter gradients for a few pairs."""
import numpy as np
import pytest

import grilly as gp
from grilly import distributions as gd
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
D = torch.distributions

BETA = {"concentration1": [0.5, 2.0, 3.3], "concentration0": [1.2, 0.7, 2.0]}
EXPONENTIAL = {"rate": [0.5, 1.5, 3.0]}
GAMMA = {"concentration": [0.6, 2.0, 3.0], "rate": [1.0, 0.5, 2.0]}
NORMAL = {"loc": [-0.5, 0.3, 1.2], "scale": [0.5, 1.0, 2.0]}
LAPLACE = {"loc": [0.4, -1.0, 0.1], "scale": [0.3, 1.5, 0.8]}
# [0, 1] exactly, inside [0, 1] twice, crossing 0, crossing 1
UNIT_UNIFORM = {"low": [0.0, 0.2, 0.05, -0.1, 0.3], "high": [1.0, 0.5, 0.95, 0.5, 1.2]}
# around [0, 1] twice, ending at 1, starting above 0, ending below 1
COVER_UNIFORM = {"low": [-0.5, 0.0, 0.1, -1.0, 0.0], "high": [1.5, 1.0, 2.0, 0.9, 1.0]}
# pair -> (p's family, p's parameters, q's family, q's parameters)
PAIRS = {
    "Bernoulli-Poisson": ("Bernoulli", {"probs": [0.0, 0.3, 1.0]},
                          "Poisson", {"rate": [0.0, 0.7, 2.0]}),
    "Poisson-Bernoulli": ("Poisson", {"rate": [0.0, 0.5, 2.0]},
                          "Bernoulli", {"probs": [0.3, 0.9, 1.0]}),
    "Beta-Exponential": ("Beta", BETA, "Exponential", EXPONENTIAL),
    "Beta-Gamma": ("Beta", BETA, "Gamma", GAMMA),
    "Beta-Normal": ("Beta", BETA, "Normal", NORMAL),
    "Beta-Uniform": ("Beta", BETA, "Uniform", COVER_UNIFORM),
    "Exponential-Beta": ("Exponential", EXPONENTIAL, "Beta", BETA),
    "Exponential-Gamma": ("Exponential", EXPONENTIAL, "Gamma", GAMMA),
    "Exponential-Normal": ("Exponential", EXPONENTIAL, "Normal", NORMAL),
    "Exponential-Uniform": ("Exponential", EXPONENTIAL, "Uniform", COVER_UNIFORM),
    "Gamma-Beta": ("Gamma", GAMMA, "Beta", BETA),
    "Gamma-Exponential": ("Gamma", GAMMA, "Exponential", EXPONENTIAL),
    "Gamma-Normal": ("Gamma", GAMMA, "Normal", NORMAL),
    "Gamma-Uniform": ("Gamma", GAMMA, "Uniform", COVER_UNIFORM),
    "Laplace-Beta": ("Laplace", LAPLACE, "Beta", BETA),
    "Laplace-Exponential": ("Laplace", LAPLACE, "Exponential", EXPONENTIAL),
    "Laplace-Gamma": ("Laplace", LAPLACE, "Gamma", GAMMA),
    "Laplace-Normal": ("Laplace", LAPLACE, "Normal", NORMAL),
    "Laplace-Uniform": ("Laplace", LAPLACE, "Uniform", COVER_UNIFORM),
    "Normal-Beta": ("Normal", NORMAL, "Beta", BETA),
    "Normal-Exponential": ("Normal", NORMAL, "Exponential", EXPONENTIAL),
    "Normal-Gamma": ("Normal", NORMAL, "Gamma", GAMMA),
    "Normal-Laplace": ("Normal", NORMAL, "Laplace", LAPLACE),
    "Normal-Uniform": ("Normal", NORMAL, "Uniform", COVER_UNIFORM),
    "Uniform-Beta": ("Uniform", UNIT_UNIFORM, "Beta", BETA),
    "Uniform-Exponential": ("Uniform", UNIT_UNIFORM, "Exponential", EXPONENTIAL),
    "Uniform-Gamma": ("Uniform", UNIT_UNIFORM, "Gamma", GAMMA),
    "Uniform-Normal": ("Uniform", {"low": [-1.0, 0.2, 2.0], "high": [0.5, 0.3, 4.0]},
                       "Normal", NORMAL),
}
# sizes: odd element counts (p's, q's and the m x n result) keep the Vulkan kernels to one
# specialization each (a multiple of 4 takes a second, vectorized one): lavapipe compiles each
# pipeline for a third of a second
TOL = {np.float32: (2e-5, 1e-5), np.float64: (1e-9, 1e-9)}


def _build(family, params, dtype, device, shape, grad=False):
    """(torch, grilly) distributions of ``params`` reshaped to ``shape``, and their leaves."""
    t, g = {}, {}
    for k, v in params.items():
        a = np.asarray(v, dtype).reshape(shape)
        t[k] = torch.tensor(a, requires_grad=grad)
        g[k] = gp.asarray(a, device=device)
        if grad:
            g[k].requires_grad_()
    return getattr(D, family)(**t), getattr(gd, family)(**g), t, g


@pytest.mark.parametrize("pair", list(PAIRS))
def test_cross_family_kl_matches_torch(device, pair):
    pf, pp, qf, qp = PAIRS[pair]
    n, m = len(next(iter(pp.values()))), len(next(iter(qp.values())))
    for dtype in (np.float32, np.float64):
        # p along the last axis, q along the first: every p element meets every q element
        tp, gp_, _, _ = _build(pf, pp, dtype, device, (n,))
        tq, gq, _, _ = _build(qf, qp, dtype, device, (m, 1))
        g = gd.kl_divergence(gp_, gq)
        # torch's masked-assignment pairs do not broadcast p against q: expand both first
        t = D.kl_divergence(tp.expand((m, n)), tq.expand((m, n))).numpy()
        if pair == "Bernoulli-Poisson":
            # torch's NaN where both put all mass on 0 (0 * log 0): the KL is 0 there
            t = np.where(np.isnan(t), 0.0, t).astype(dtype)
        rtol, atol = TOL[dtype]
        assert_close(g, t, rtol=rtol, atol=atol)


GRAD_PAIRS = {   # all elements finite
    "Bernoulli-Poisson": ("Bernoulli", {"probs": [0.2, 0.7, 0.5]},
                          "Poisson", {"rate": [0.7, 2.0]}),
    "Beta-Gamma": ("Beta", BETA, "Gamma", {k: v[:2] for k, v in GAMMA.items()}),
    "Exponential-Gamma": ("Exponential", EXPONENTIAL, "Gamma", {k: v[1:] for k, v in GAMMA.items()}),
    "Normal-Laplace": ("Normal", NORMAL, "Laplace", {k: v[:2] for k, v in LAPLACE.items()}),
    "Uniform-Beta": ("Uniform", {"low": [0.1, 0.2, 0.4], "high": [0.3, 0.9, 0.6]},
                     "Beta", {k: v[:2] for k, v in BETA.items()}),
    "Uniform-Gamma": ("Uniform", {"low": [0.1, 0.2, 0.4], "high": [0.3, 0.9, 2.6]},
                      "Gamma", {k: v[:2] for k, v in GAMMA.items()}),
    "Gamma-Normal": ("Gamma", GAMMA, "Normal", {k: v[:2] for k, v in NORMAL.items()}),
}


@pytest.mark.parametrize("pair", list(GRAD_PAIRS))
def test_cross_family_kl_gradients_match_torch(device, pair):
    pf, pp, qf, qp = GRAD_PAIRS[pair]
    n, m = len(next(iter(pp.values()))), len(next(iter(qp.values())))
    tp, gp_, tpar, gpar = _build(pf, pp, np.float32, device, (n,), grad=True)
    tq, gq, tqar, gqar = _build(qf, qp, np.float32, device, (m, 1), grad=True)
    g = gd.kl_divergence(gp_, gq)
    t = D.kl_divergence(tp.expand((m, n)), tq.expand((m, n)))
    assert_close(g, t.detach().numpy(), rtol=2e-5, atol=1e-5)
    gp.sum(g).backward()
    t.sum().backward()
    for tpars, gpars in ((tpar, gpar), (tqar, gqar)):
        for k in tpars:
            assert_close(gpars[k].grad, tpars[k].grad.numpy(), rtol=1e-4, atol=1e-4)
