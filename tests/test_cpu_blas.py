"""The cpu backend's products on its own threads (grilly/backends/cpu_numba/blas.py): rows split
over tasks, K split for a transposed left operand, batches one task per product, and the small
single call, each against a float64 numpy reference; BLAS's thread count is restored after."""
import numpy as np
import pytest
import threadpoolctl

import grilly as gp
from grilly.backends.cpu_numba import blas

R = np.random.default_rng(17)


def _blas_threads() -> dict:
    return {i["filepath"]: i["num_threads"] for i in threadpoolctl.threadpool_info()
            if i["user_api"] == "blas"}


@pytest.fixture
def split_small(monkeypatch):
    monkeypatch.setattr(blas, "MIN_SPLIT", 1)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_on_the_backend_threads(split_small, ta, dtype):
    before = _blas_threads()
    m, k, n = 37, 53, 29
    a = R.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = R.standard_normal((k, n)).astype(dtype)
    A = gp.matrix_transpose(gp.asarray(a)) if ta else gp.asarray(a)
    got = np.asarray(gp.matmul(A, gp.asarray(b)))
    ref = (a.T if ta else a).astype(np.float64) @ b.astype(np.float64)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())
    after = _blas_threads()
    assert all(after[f] == n for f, n in before.items())


def test_batched_products(split_small):
    a = R.standard_normal((5, 7, 9)).astype(np.float32)
    b = R.standard_normal((5, 9, 4)).astype(np.float32)
    got = np.asarray(gp.matmul(gp.asarray(a), gp.asarray(b)))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5,
                               atol=1e-5)


def test_one_blas_thread_restores_on_error():
    before = _blas_threads()
    with pytest.raises(RuntimeError):
        with blas.one_blas_thread():
            assert all(t == 1 for t in _blas_threads().values())
            raise RuntimeError("inside")
    assert _blas_threads() == before
