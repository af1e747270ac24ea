"""What a NumPy data scientist types, against numpy on every device: linalg with integer input,
NumPy's linalg keywords (svd's compute_uv, eigh's UPLO, pinv's rcond/hermitian, matrix_rank's
tol), cond, multi_dot, tensorinv, tensorsolve, LinAlgError; sort/argsort's kind and
axis=None; einsum's optimize; where with two scalars; index Arrays of the cpu device (ix_,
tril_indices) indexing another device's array; meshgrid's sparse/copy and mixed dtypes;
mgrid/ogrid/r_/c_/s_; unravel_index's bounds and order; lists where NumPy takes array_like."""
import numpy as np
import pytest

import grilly as gp

RNG = np.random.default_rng(7)


def _np(a):
    return np.asarray(a)


def _close(got, want, rtol=1e-10, atol=1e-12):
    want = np.asarray(want)
    got = _np(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert str(got.dtype) == str(want.dtype), (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---- linalg ------------------------------------------------------------------------------------
def test_linalg_integer_input_computes_in_float64(device):
    a = np.array([[2, 1], [1, 3]])
    b = np.array([1, 2])
    g, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    _close(gp.linalg.inv(g), np.linalg.inv(a))
    _close(gp.linalg.det(g), np.linalg.det(a))
    _close(gp.linalg.solve(g, gb), np.linalg.solve(a, b))
    _close(gp.linalg.eigvalsh(g), np.linalg.eigvalsh(a))
    _close(gp.linalg.pinv(g), np.linalg.pinv(a))
    _close(gp.linalg.cholesky(g), np.linalg.cholesky(a))


def test_linalg_shape_errors_are_numpys_linalgerror(device):
    assert gp.linalg.LinAlgError is np.linalg.LinAlgError
    r = gp.asarray(RNG.standard_normal((4, 3)), device=device)
    for f in (gp.linalg.inv, gp.linalg.det, gp.linalg.cholesky):
        with pytest.raises(np.linalg.LinAlgError, match=f.__name__):
            f(r)
    with pytest.raises(ValueError, match="inv"):   # (LinAlgError is a ValueError)
        gp.linalg.inv(gp.asarray(np.ones(3), device=device))


def test_svd_compute_uv_and_hermitian(device):
    a = RNG.standard_normal((4, 3))
    g = gp.asarray(a, device=device)
    _close(gp.linalg.svd(g, compute_uv=False), np.linalg.svd(a, compute_uv=False))
    _close(gp.linalg.svd(g, False, False), np.linalg.svd(a, False, False))   # positional
    s = a @ a.T
    u, sv, vh = gp.linalg.svd(gp.asarray(s, device=device), hermitian=True)
    _close(sv, np.linalg.svd(s, hermitian=True)[1])
    _close(gp.matmul(u * sv, vh), s)
    # gradient of the singular values alone: d sum(s) / dA = U @ Vh
    x = gp.asarray(a, device=device).requires_grad_()
    gp.sum(gp.linalg.svd(x, compute_uv=False)).backward()
    uu, _, vv = np.linalg.svd(a, full_matrices=False)
    _close(x.grad, uu @ vv, atol=1e-10)


def test_eigh_and_eigvalsh_uplo(device):
    a = RNG.standard_normal((3, 3))          # not symmetric: UPLO picks the triangle read
    c = a + 1j * RNG.standard_normal((3, 3))
    for m in (a, c):
        g = gp.asarray(m, device=device)
        for uplo in ("L", "U"):
            _close(gp.linalg.eigvalsh(g, UPLO=uplo), np.linalg.eigvalsh(m, UPLO=uplo))
            w, v = gp.linalg.eigh(g, uplo)   # NumPy's positional UPLO
            ww, vv = np.linalg.eigh(m, uplo)
            _close(w, ww)
            herm = np.tril(m) + np.tril(m, -1).conj().T if uplo == "L" else \
                np.triu(m) + np.triu(m, 1).conj().T
            herm[np.diag_indices(3)] = np.diag(herm).real   # LAPACK reads the diagonal's real part
            _close(gp.matmul(gp.asarray(herm, device=device), v), _np(v) * ww, atol=1e-10)
    with pytest.raises(ValueError, match="UPLO"):
        gp.linalg.eigh(gp.asarray(a, device=device), UPLO="X")


def test_eigvalsh_uplo_gradient(device):
    a = RNG.standard_normal((3, 3))
    x = gp.asarray(a, device=device).requires_grad_()
    w = gp.linalg.eigvalsh(x, UPLO="U")
    gp.sum(w * w).backward()
    # sum(w^2) = ||H||_F^2 for H built from the upper triangle: its derivative in a's entries
    want = 2 * np.triu(a) + 2 * np.triu(a, 1)
    want = np.triu(want)
    got = _np(x.grad)
    np.testing.assert_allclose(got + got.T - np.diag(np.diag(got)),
                               want + want.T - np.diag(np.diag(want)), atol=1e-10)


def test_pinv_rcond_and_hermitian(device):
    a = RNG.standard_normal((4, 3))
    g = gp.asarray(a, device=device)
    _close(gp.linalg.pinv(g, rcond=0.5), np.linalg.pinv(a, rcond=0.5))
    s = a @ a.T
    _close(gp.linalg.pinv(gp.asarray(s, device=device), 1e-10, True),
           np.linalg.pinv(s, 1e-10, True), atol=1e-9)
    with pytest.raises(ValueError, match="pinv"):
        gp.linalg.pinv(g, rtol=0.1, rcond=0.1)


def test_matrix_rank_tol_and_vectors(device):
    a = RNG.standard_normal((3, 5)) * np.array([[1.0], [1e-3], [1.0]])
    g = gp.asarray(a, device=device)
    for tol in (None, 0.5, 1e-2):
        assert int(gp.linalg.matrix_rank(g, tol)) == np.linalg.matrix_rank(a, tol)
    assert int(gp.linalg.matrix_rank(g, tol=0.5, hermitian=False)) == \
        np.linalg.matrix_rank(a, tol=0.5)
    for v in (np.zeros(3), np.array([0.0, 2.0])):
        assert int(gp.linalg.matrix_rank(gp.asarray(v, device=device))) == \
            np.linalg.matrix_rank(v)
    with pytest.raises(ValueError, match="matrix_rank"):
        gp.linalg.matrix_rank(g, rtol=0.1, tol=0.1)


@pytest.mark.parametrize("p", [None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc"])
def test_cond(device, p):
    a = RNG.standard_normal((2, 3, 3))
    _close(gp.linalg.cond(gp.asarray(a, device=device), p), np.linalg.cond(a, p), rtol=1e-9)


def test_multi_dot(device):
    a, b, c = RNG.standard_normal((2, 5)), RNG.standard_normal((5, 3)), RNG.standard_normal((3, 4))
    v, w = RNG.standard_normal(2), RNG.standard_normal(4)
    G = [gp.asarray(t, device=device) for t in (a, b, c, v, w)]
    _close(gp.linalg.multi_dot(G[:3]), np.linalg.multi_dot([a, b, c]))
    _close(gp.linalg.multi_dot([G[3], G[0], G[1], G[2], G[4]]),
           np.linalg.multi_dot([v, a, b, c, w]))
    _close(gp.linalg.multi_dot([G[3], G[0]]), np.linalg.multi_dot([v, a]))
    with pytest.raises(ValueError, match="multi_dot"):
        gp.linalg.multi_dot([G[0]])


def test_tensorinv_and_tensorsolve(device):
    a = (np.eye(6) + 0.1 * RNG.standard_normal((6, 6))).reshape(6, 2, 3)
    _close(gp.linalg.tensorinv(gp.asarray(a, device=device), ind=1), np.linalg.tensorinv(a, ind=1))
    a2 = a.reshape(2, 3, 6)
    b = RNG.standard_normal((2, 3))
    _close(gp.linalg.tensorsolve(gp.asarray(a2, device=device), gp.asarray(b, device=device)),
           np.linalg.tensorsolve(a2, b))
    a3 = np.moveaxis(a.reshape(2, 3, 2, 3), 1, 3)
    _close(gp.linalg.tensorsolve(gp.asarray(a3, device=device), gp.asarray(b, device=device),
                                 axes=(1,)), np.linalg.tensorsolve(a3, b, axes=(1,)))


# ---- sorting and einsum ----------------------------------------------------------------------
@pytest.mark.parametrize("kind", [None, "quicksort", "mergesort", "heapsort", "stable"])
def test_sort_kind_and_flattened(device, kind):
    x = RNG.integers(0, 4, (3, 5))
    g = gp.asarray(x, device=device)
    _close(gp.sort(g, kind=kind), np.sort(x, kind=kind))
    _close(gp.sort(g, axis=None, kind=kind), np.sort(x, axis=None, kind=kind))
    _close(gp.argsort(g, axis=None, kind="stable"), np.argsort(x, axis=None, kind="stable"))
    _close(gp.argsort(g, 0, kind), np.argsort(x, 0, kind="stable"))   # NumPy's positional kind
    with pytest.raises(ValueError, match="kind"):
        gp.sort(g, kind="bogo")


def test_sort_flattened_gradient(device):
    x = RNG.standard_normal((2, 3))
    a = gp.asarray(x, device=device).requires_grad_()
    w = RNG.standard_normal(6)
    gp.sum(gp.sort(a, axis=None) * gp.asarray(w, device=device)).backward()
    want = np.zeros(6)
    want[np.argsort(x, axis=None)] = w
    _close(a.grad, want.reshape(2, 3))


def test_einsum_optimize_is_accepted(device):
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    for opt in (True, False, "greedy", "optimal"):
        _close(gp.einsum("ij,jk->ik", ga, gb, optimize=opt),
               np.einsum("ij,jk->ik", a, b, optimize=opt))
    with pytest.raises(TypeError, match="optimize"):
        gp.einsum("ij,jk->ik", ga, gb, optimize="fastest")


# ---- indexing idioms ---------------------------------------------------------------------------
@pytest.mark.parametrize("x1,x2", [(1, -1), (1.5, 0), (1, 0.5), (True, False), (2, 1j)])
def test_where_with_two_scalars(device, x1, x2):
    c = RNG.standard_normal((2, 3)) > 0
    _close(gp.where(gp.asarray(c, device=device), x1, x2), np.where(c, x1, x2))


def test_cpu_index_arrays_index_any_device(device):
    x = RNG.standard_normal((4, 5))
    g = gp.asarray(x, device=device)
    _close(g[gp.ix_([0, 2], [1, 3, 4])], x[np.ix_([0, 2], [1, 3, 4])])
    _close(g[gp.tril_indices(4)], x[np.tril_indices(4)])
    m = gp.asarray(x[:, 0] > 0)   # a cpu mask
    _close(g[m], x[x[:, 0] > 0])
    y, yn = gp.asarray(x[:4, :4], device=device), x[:4, :4].copy()
    y[gp.diag_indices(4)] = 0.0
    yn[np.diag_indices(4)] = 0.0
    _close(y, yn)


def test_meshgrid_sparse_copy_and_dtypes(device):
    a, b = np.arange(3), np.linspace(0.0, 1.0, 4)
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    for ind in ("xy", "ij"):
        for sparse in (False, True):
            got = gp.meshgrid(ga, gb, indexing=ind, sparse=sparse)
            want = np.meshgrid(a, b, indexing=ind, sparse=sparse)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                _close(g, w)
    for g, w in zip(gp.meshgrid(gb, gb, copy=False), np.meshgrid(b, b, copy=False)):
        _close(g, w)


def test_meshgrid_sparse_gradient(device):
    b = np.linspace(0.0, 1.0, 4)
    x = gp.asarray(b[:3], device=device).requires_grad_()
    y = gp.asarray(b, device=device).requires_grad_()
    xx, yy = gp.meshgrid(x, y, sparse=True)
    gp.sum(xx * yy).backward()
    _close(x.grad, np.full(3, b.sum()))
    _close(y.grad, np.full(4, b[:3].sum()))


def test_mgrid_ogrid_r_c_s():
    for key in ((slice(0, 3), slice(0, 4)), slice(0, 1, 5j), (slice(0, 1, 0.25), slice(0, 2))):
        _close(gp.mgrid[key], np.mgrid[key])
    for g, w in zip(gp.ogrid[0:3, 0:4], np.ogrid[0:3, 0:4]):
        _close(g, w)
    _close(gp.r_[1:4, 7, 8], np.r_[1:4, 7, 8])
    _close(gp.r_[0:1:5j], np.r_[0:1:5j])
    assert gp.s_[1:3, ::2] == np.s_[1:3, ::2]
    assert gp.index_exp[1:3] == np.index_exp[1:3]
    with pytest.raises(NotImplementedError, match="r_"):
        gp.r_["0,2", [1, 2]]


def test_r_and_c_of_arrays(device):
    a, b = np.arange(3.0), np.arange(4.0, 7.0)
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    got = gp.r_[ga, 2, 0:2]
    assert got.device == device
    _close(got, np.r_[a, 2, 0:2])
    _close(gp.c_[ga, gb], np.c_[a, b])
    m = RNG.standard_normal((1, 2))
    _close(gp.c_[gp.asarray(m, device=device), 3.0, 4.0], np.c_[m, 3.0, 4.0])


def test_unravel_index_bounds_and_order(device):
    idx = np.array([0, 7, 19])
    g = gp.asarray(idx, device=device)
    for order in ("C", "F"):
        for got, want in zip(gp.unravel_index(g, (4, 5), order=order),
                             np.unravel_index(idx, (4, 5), order=order)):
            _close(got, want)
        got = gp.ravel_multi_index(tuple(gp.asarray(w, device=device) for w in
                                         np.unravel_index(idx, (4, 5), order=order)),
                                   (4, 5), order=order)
        _close(got, idx)
    for bad in ([0, 20], [-1, 3]):
        with pytest.raises(ValueError, match="unravel_index"):
            gp.unravel_index(gp.asarray(bad, device=device), (4, 5))
    with pytest.raises(ValueError, match="order"):
        gp.unravel_index(g, (4, 5), order="K")


# ---- array_like arguments ----------------------------------------------------------------------
def test_lists_and_scalars_where_numpy_takes_array_like(device):
    x = RNG.standard_normal(6)
    g = gp.asarray(x, device=device)
    bins = np.array([-1.0, 0.0, 0.5, 1.0])
    gb = gp.asarray(bins, device=device)
    _close(gp.searchsorted(gb, [0.1, 0.6]), np.searchsorted(bins, [0.1, 0.6]))
    _close(gp.digitize(0.2, gb), np.asarray(np.digitize(0.2, bins)))
    _close(gp.digitize([0.2, -3.0], gb), np.digitize([0.2, -3.0], bins))
    xp, fp = gp.asarray([0.0, 1.0, 2.0], device=device), gp.asarray([0.0, 10.0, 5.0], device=device)
    _close(gp.interp(1.5, xp, fp), np.asarray(np.interp(1.5, [0, 1, 2], [0, 10, 5.0])))
    _close(gp.interp([0.5, 1.5], xp, fp), np.interp([0.5, 1.5], [0, 1, 2], [0, 10, 5.0]))
    _close(gp.average(g, weights=[1, 2, 3, 4, 5, 6]), np.average(x, weights=[1, 2, 3, 4, 5, 6]))
    xi = RNG.integers(0, 5, 8)
    _close(gp.isin(gp.asarray(xi, device=device), [1, 2]), np.isin(xi, [1, 2]))
    _close(gp.isin([1, 7], gp.asarray(xi, device=device)), np.isin([1, 7], xi))


def test_clip_numpy_keyword_names(device):
    x = RNG.standard_normal((2, 3))
    g = gp.asarray(x, device=device)
    _close(gp.clip(g, a_min=-0.5, a_max=0.5), np.clip(x, a_min=-0.5, a_max=0.5))
    _close(gp.clip(g, a_max=0.1), np.clip(x, a_max=0.1, a_min=None))
    with pytest.raises(TypeError, match="clip"):
        gp.clip(g, min=0.0, a_min=0.0)
