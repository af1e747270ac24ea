"""The CPU backend's register-blocked GEMM (cpu_numba/microgemm.py) against float64 numpy:
every transpose pair, beta 0/1/other (beta 0 never reads C: NaN there does not leak), C
contiguous, Fortran-ordered and strided, ragged edges in M, N and K, K blocks, and empty
shapes; and the products that reach it (matmul, linear) through the namespace."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("numba")
from grilly.backends.cpu_numba.microgemm import KC, mgemm  # noqa: E402

SHAPES = [(1, 1, 1), (5, 7, 3), (32, 64, 144), (37, 130, 40), (6, 64, 1), (13, 65, KC + 17),
          (64, 1, 9), (1, 200, 33), (0, 3, 4), (3, 4, 0),
          # A packed where its K axis is not unit-stride (n >= two panels), B packed where large
          # (M >= 48, K x N >= 2**20): ragged M and K blocks, a ragged last panel
          (100, 1040, 1030), (50, 300, 2 * KC + 5)]


def _c_view(c0: np.ndarray, kind: str) -> np.ndarray:
    if kind == "c":
        return c0.copy()
    if kind == "f":
        return np.asfortranarray(c0)
    big = np.zeros((c0.shape[0], 2 * c0.shape[1] + 1), c0.dtype)
    big[:, 1::2][:, :c0.shape[1]] = c0
    return big[:, 1::2][:, :c0.shape[1]]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_mgemm_matches_float64(dt, m, n, k):
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    for ta, tb in itertools.product((False, True), repeat=2):
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(dt)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(dt)
        for beta, kind in itertools.product((0.0, 1.0, -0.5), ("c", "f", "strided")):
            c0 = rng.standard_normal((m, n)).astype(dt)
            if beta == 0:
                c0[...] = np.nan
            c = _c_view(c0, kind)
            ref = 1.5 * ((a.T if ta else a).astype(np.float64) @ (b.T if tb else b))
            if beta:
                ref += beta * c0.astype(np.float64)
            mgemm(ta, tb, 1.5, a, b, beta, c)
            eps = np.finfo(dt).eps
            cmax = np.abs(c0).max(initial=0) * abs(beta) if beta else 0.0
            bound = 4 * eps * (k + 2) * (1.5 * np.abs(a).max(initial=0) * np.abs(b).max(
                initial=0) * max(k, 1) + 1 + cmax)
            assert c.shape == ref.shape
            np.testing.assert_allclose(c, ref, rtol=0, atol=bound,
                                       err_msg=f"ta={ta} tb={tb} beta={beta} c={kind}")


def test_mgemm_strided_operands():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((40, 90)).astype(np.float32)[::2, ::3]     # (20, 30), no unit stride
    b = rng.standard_normal((60, 70)).astype(np.float32)[::2, 1::2]    # (30, 35)
    c = np.empty((20, 35), np.float32)
    mgemm(False, False, 1.0, a, b, 0.0, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, atol=1e-4)
    wide = rng.standard_normal((30, 401)).astype(np.float32)[:, ::2]     # (30, 201)
    cw = np.empty((20, 201), np.float32)
    mgemm(False, False, 1.0, a, wide, 0.0, cw)   # A packed: its K axis has stride 3
    np.testing.assert_allclose(cw, a.astype(np.float64) @ wide, atol=1e-4)
    cneg = np.empty((35, 20), np.float32)[::-1]                          # negative row stride
    mgemm(True, True, 1.0, b, a, 0.0, cneg)
    np.testing.assert_allclose(cneg, (a.astype(np.float64) @ b).T, atol=1e-4)


@pytest.mark.parametrize("shape", [((128, 64), (64, 128)), ((3, 70, 33), (33, 65)),
                                   ((4, 50, 20), (4, 20, 90)), ((300, 500), (500, 700))])
def test_matmul_and_linear_through_the_namespace(shape):
    import grilly as gp
    from grilly.nn import functional as F
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape[0]).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    got = np.asarray(gp.matmul(gp.asarray(a, device="cpu"), gp.asarray(b, device="cpu")))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, atol=2e-5 * np.sqrt(a.shape[-1]) * 4)
    if a.ndim == 2 and b.ndim == 2:
        w = np.ascontiguousarray(b.T)
        bias = rng.standard_normal(w.shape[0]).astype(np.float32)
        y = F.linear(gp.asarray(a, device="cpu"), gp.asarray(w, device="cpu"),
                     gp.asarray(bias, device="cpu"))
        np.testing.assert_allclose(np.asarray(y), a.astype(np.float64) @ b + bias,
                                   atol=2e-5 * np.sqrt(a.shape[-1]) * 4)
