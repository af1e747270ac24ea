"""linalg and linear_algebra functions against numpy."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grilly as gp
from grilly import linalg as la
from grilly.testing import assert_close

FLOATS = [np.float32, np.float64]
TOL = {np.float32: 2e-4, np.float64: 1e-10, np.complex64: 2e-4, np.complex128: 1e-10}
needs_sum = pytest.mark.skipif(not hasattr(gp, "sum"), reason="statistical functions not present")


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5, 6, shape).astype(dtype)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def spd(shape, dtype):
    a = rand(shape, dtype)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def close(actual, expected, dtype, atol=None):
    t = TOL.get(np.dtype(dtype).type, 0)
    assert_close(actual, expected, rtol=t, atol=t if atol is None else atol)


def G(x, device):
    return gp.asarray(x, device=device)


# ---- matmul family -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.int64, np.complex64])
@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                   ((4,), (4, 5)), ((2, 3, 4), (4,)), ((4,), (4,)), ((40, 50), (50, 30))])
def test_matmul(device, dtype, sa, sb):
    a = (rand(sa, dtype, 1) * 4).astype(dtype)
    b = (rand(sb, dtype, 2) * 4).astype(dtype)
    r = gp.matmul(G(a, device), G(b, device))
    close(r, np.matmul(a, b), dtype)
    close(G(a, device) @ G(b, device), a @ b, dtype)


def test_matmul_promotion_and_errors(device):
    a = G(np.ones((2, 3), np.float32), device)
    b = G(np.ones((3, 2), np.float64), device)
    assert gp.matmul(a, b).dtype == gp.float64
    with pytest.raises(ValueError, match="matmul"):
        gp.matmul(a, G(np.ones((2, 2), np.float32), device))
    with pytest.raises(ValueError):
        gp.matmul(G(np.float32(1), device), a)
    with pytest.raises(TypeError):
        gp.matmul(G(np.ones((2, 2), bool), device), G(np.ones((2, 2), bool), device))
    with pytest.raises(ValueError):
        gp.matmul(G(np.ones((2, 2, 3)), device), G(np.ones((3, 3, 2)), device))


def test_matmul_transposed_and_large(device):
    a = rand((300, 200), np.float64)
    b = rand((300, 100), np.float64)
    ga = G(a, device)
    close(gp.matmul(ga.mT, G(b, device)), a.T @ b, np.float64)
    close(ga.mT, a.T, np.float64)
    with pytest.raises(ValueError):
        gp.matrix_transpose(G(np.ones(3), device))


@given(m=st.integers(1, 6), k=st.integers(0, 6), n=st.integers(1, 6), batch=st.integers(1, 3))
def test_matmul_property(m, k, n, batch):
    a = rand((batch, m, k), np.float64, m)
    b = rand((k, n), np.float64, n)
    close(gp.matmul(gp.asarray(a), gp.asarray(b)), a @ b, np.float64)


@pytest.mark.parametrize("dtype", FLOATS)
def test_tensordot(device, dtype):
    a, b = rand((2, 3, 4), dtype), rand((4, 3, 5), dtype, 1)
    close(gp.tensordot(G(a, device), G(b, device), axes=([1, 2], [1, 0])),
          np.tensordot(a, b, axes=([1, 2], [1, 0])), dtype)
    close(gp.tensordot(G(a, device), G(b, device), axes=1), np.tensordot(a, b, axes=1), dtype)
    close(gp.tensordot(G(a, device), G(b, device), axes=0), np.tensordot(a, b, axes=0), dtype)
    with pytest.raises(ValueError):
        gp.tensordot(G(a, device), G(b, device), axes=([0], [0]))


@pytest.mark.parametrize("dtype", FLOATS + [np.complex128, np.int64])
def test_vecdot(device, dtype):
    a, b = rand((4, 1, 3), dtype), rand((5, 3), dtype, 1)
    close(gp.vecdot(G(a, device), G(b, device)), np.vecdot(a, b), dtype)
    close(la.vecdot(G(a, device), G(b, device), axis=-1), np.vecdot(a, b), dtype)
    with pytest.raises(ValueError):
        gp.vecdot(G(a, device), G(np.ones((3, 2), dtype), device), axis=-1)


# ---- decompositions ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_inv_det_slogdet(device, dtype):
    a = rand((2, 3, 4, 4), dtype)
    g = G(a, device)
    close(la.inv(g), np.linalg.inv(a), dtype)
    close(la.det(g), np.linalg.det(a), dtype)
    s, logabs = la.slogdet(g)
    ns, nl = np.linalg.slogdet(a)
    close(s, ns, dtype)
    close(logabs, nl, dtype)
    assert la.slogdet(g).logabsdet.dtype == g.dtype


def test_inv_errors(device):
    with pytest.raises(ValueError, match="inv.*square"):
        la.inv(G(np.ones((3, 4)), device))
    with pytest.raises(ValueError, match="inv.*singular"):
        la.inv(G(np.ones((3, 3)), device))
    # integers are inverted in float64, as NumPy's (tests/test_numpy_hunt3.py)
    np.testing.assert_array_equal(np.asarray(la.inv(G(np.eye(3, dtype=np.int64), device))),
                                  np.eye(3))
    with pytest.raises(ValueError, match="det"):
        la.det(G(np.ones(3), device))


@pytest.mark.parametrize("dtype", FLOATS + [np.complex128])
def test_cholesky(device, dtype):
    a = spd((3, 4, 4), dtype)
    close(la.cholesky(G(a, device)), np.linalg.cholesky(a), dtype)
    close(la.cholesky(G(a, device), upper=True), np.linalg.cholesky(a, upper=True), dtype)
    with pytest.raises(ValueError, match="cholesky"):
        la.cholesky(G(-np.eye(3, dtype=dtype), device))


@pytest.mark.parametrize("op", ["inv", "cholesky", "det"])
def test_empty_matrices(device, op):
    # 0x0 matrices (alone and in a batch) are valid input: empty results, det 1
    for shape in [(0, 0), (2, 0, 0)]:
        a = np.zeros(shape)
        close(getattr(la, op)(G(a, device)), getattr(np.linalg, op)(a), np.float64)


@pytest.mark.parametrize("dtype", FLOATS)
def test_eigh(device, dtype):
    a = spd((2, 5, 5), dtype)
    w, v = la.eigh(G(a, device))
    close(w, np.linalg.eigvalsh(a), dtype)
    close(la.eigvalsh(G(a, device)), np.linalg.eigvalsh(a), dtype)
    vv = np.asarray(v)
    close(gp.asarray(vv @ (np.asarray(w)[..., None] * np.swapaxes(vv, -1, -2))), a, dtype, atol=1e-3)


@pytest.mark.parametrize("dtype", FLOATS)
def test_eig(device, dtype):
    a = rand((2, 4, 4), dtype)
    w, v = la.eig(G(a, device))
    cd = np.complex64 if dtype == np.float32 else np.complex128
    assert w.dtype == gp.asarray(np.ones(1, cd)).dtype and v.dtype == w.dtype
    wn, vn = np.asarray(w), np.asarray(v)
    np.testing.assert_allclose(a @ vn, vn * wn[..., None, :], atol=1e-3)
    got, ref = np.asarray(la.eigvals(G(a, device))), np.linalg.eigvals(a)
    assert got.dtype == ref.astype(got.dtype).dtype and got.shape == ref.shape
    # order is unspecified: every eigenvalue must have a reference one nearby, and vice versa
    dist = np.abs(got[..., :, None] - ref[..., None, :])
    assert dist.min(-1).max() < 1e-3 and dist.min(-2).max() < 1e-3


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 5), (2, 3, 6)])
def test_svd_qr(device, dtype, shape):
    a = rand(shape, dtype)
    g = G(a, device)
    for fm in (True, False):
        u, s, vh = la.svd(g, full_matrices=fm)
        un, sn, vhn = np.linalg.svd(a, full_matrices=fm)
        assert u.shape == un.shape and vh.shape == vhn.shape
        close(s, sn, dtype)
        k = sn.shape[-1]
        rec = np.asarray(u)[..., :, :k] * np.asarray(s)[..., None, :] @ np.asarray(vh)[..., :k, :]
        np.testing.assert_allclose(rec, a, atol=1e-3)
    close(la.svdvals(g), np.linalg.svd(a, compute_uv=False), dtype)
    for mode in ("reduced", "complete"):
        q, r = la.qr(g, mode=mode)
        qn, rn = np.linalg.qr(a, mode=mode)
        assert q.shape == qn.shape and r.shape == rn.shape
        np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-4)
        close(gp.abs(r), np.abs(rn), dtype, atol=1e-4)
    with pytest.raises(ValueError, match="mode"):
        la.qr(g, mode="x")   # NumPy's 'r' returns R alone (tests/test_linalg_hunt7.py)


@pytest.mark.parametrize("dtype", FLOATS)
def test_pinv_rank(device, dtype):
    a = rand((2, 5, 3), dtype)
    a[1, :, 2] = a[1, :, 0]  # rank 2
    g = G(a, device)
    close(la.pinv(g), np.linalg.pinv(a), dtype, atol=1e-3)
    assert la.matrix_rank(g).tolist() == [3, 2]
    assert la.matrix_rank(g).dtype == gp.int64
    assert la.matrix_rank(g, rtol=0.99).tolist() == [1, 1]
    close(la.pinv(g, rtol=G(np.array([1e-6, 0.5]), device)), np.linalg.pinv(a, rtol=np.array([1e-6, 0.5])),
          dtype, atol=1e-3)


@pytest.mark.parametrize("dtype", FLOATS)
def test_solve(device, dtype):
    a = spd((3, 4, 4), dtype)
    b = rand((2, 1, 4, 2), dtype)
    close(la.solve(G(a, device), G(b, device)), np.linalg.solve(a, b), dtype, atol=1e-4)
    v = rand((4,), dtype)
    close(la.solve(G(a, device), G(v, device)), np.linalg.solve(a, v[:, None])[..., 0], dtype, atol=1e-4)
    with pytest.raises(ValueError, match="solve"):
        la.solve(G(a, device), G(rand((3,), dtype), device))


@pytest.mark.parametrize("dtype", FLOATS + [np.int64])
def test_matrix_power_outer_cross_diagonal(device, dtype):
    a = (rand((2, 3, 3), dtype) * 3).astype(dtype)
    g = G(a, device)
    for n in (0, 1, 2, 5):
        close(la.matrix_power(g, n), np.linalg.matrix_power(a, n), dtype)
    if dtype != np.int64:
        close(la.matrix_power(g, -2), np.linalg.matrix_power(a, -2), dtype, atol=1e-3)
    x, y = a[0, 0], a[1, 1]
    close(la.outer(G(x, device), G(y, device)), np.outer(x, y), dtype)
    close(la.cross(G(a, device), G(a[:1, ::-1], device)), np.cross(a, a[:1, ::-1]), dtype)
    close(la.cross(G(a, device), G(a[1], device), axis=-2), np.cross(a, a[1], axis=-2), dtype)
    with pytest.raises(ValueError, match="cross"):
        la.cross(G(np.ones(4, dtype), device), G(np.ones(4, dtype), device))
    for k in (-1, 0, 2):
        close(la.diagonal(g, offset=k), np.diagonal(a, k, -2, -1), dtype)


@needs_sum
@pytest.mark.parametrize("dtype", FLOATS + [np.complex128])
def test_norms_trace(device, dtype):
    a = rand((2, 3, 4), dtype)
    g = G(a, device)
    for ord in (2, 1, 0, np.inf, -np.inf, 3):
        close(la.vector_norm(g, ord=ord), np.linalg.vector_norm(a, ord=ord), dtype)
        close(la.vector_norm(g, axis=(0, 2), keepdims=True, ord=ord),
              np.linalg.vector_norm(a, axis=(0, 2), keepdims=True, ord=ord), dtype)
    for ord in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        close(la.matrix_norm(g, ord=ord), np.linalg.matrix_norm(a, ord=ord), dtype)
    close(la.matrix_norm(g, keepdims=True), np.linalg.matrix_norm(a, keepdims=True), dtype)
    close(la.trace(g, offset=1), np.trace(a, 1, -2, -1), dtype)
    with pytest.raises(ValueError):
        la.matrix_norm(g, ord=3)


def test_vector_norm_float16_does_not_overflow(device):
    """float16 whose powers or their sum pass 65504 though the norm does not: computed in
    float32, as torch computes it, and rounded once (float64 numpy as the reference)."""
    a = (rand((3, 4), np.float64, seed=2) * 300).astype(np.float16)
    g = G(a, device)
    for ord in (2, 3, 1, np.inf):
        for axis in (None, 1):
            got = la.vector_norm(g, axis=axis, ord=ord)
            want = np.linalg.vector_norm(a.astype(np.float64), axis=axis, ord=ord)
            assert got.dtype == gp.float16
            np.testing.assert_allclose(np.asarray(got).astype(np.float64),
                                       want.astype(np.float16).astype(np.float64), rtol=2e-3,
                                       err_msg=f"ord={ord} axis={axis}")
