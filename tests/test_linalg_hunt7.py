"""gp.linalg as a scientific NumPy/torch.linalg user meets it (a hunt): the derivative of det at a
singular matrix (its cofactors), torch.linalg's keywords (dim/keepdim/dtype of the norms, vecdot's
and cross's dim, diagonal's dim1/dim2, solve's left, pinv's and matrix_rank's atol, svd's driver),
NumPy's qr(mode='r') and lower-case UPLO, solve_triangular and matrix_exp, NumPy's error types.
References: numpy float64 and torch 2.13 CPU."""
import numpy as np
import pytest

import grilly as gp
from grilly.testing import assert_close

torch = pytest.importorskip("torch")

R = np.random.default_rng(7)
LA = gp.linalg


def _t(a, grad=False):
    t = torch.tensor(a)
    return t.requires_grad_() if grad else t


def _g(a, device, grad=False):
    x = gp.asarray(a, device=device)
    return x.requires_grad_() if grad else x


def _cofactors(a):
    """The cofactor matrix from the minors' determinants (numpy): d det(A) / dA."""
    n = a.shape[-1]
    c = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            m = np.delete(np.delete(a, i, axis=0), j, axis=1)
            c[i, j] = (-1) ** (i + j) * np.linalg.det(m)
    return c


def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix(device):
    # backward raised LinAlgError (inv of the singular matrix) before
    for a in (np.array([[1.0, 2.0], [2.0, 4.0]]), np.arange(1.0, 10.0).reshape(3, 3)):
        x = _g(a, device, grad=True)
        gp.linalg.det(x).backward()
        assert_close(np.asarray(x.grad), _cofactors(a), rtol=1e-9, atol=1e-9)
        t = _t(a, grad=True)   # torch's own SVD path (taken with create_graph)
        (tg,) = torch.autograd.grad(torch.linalg.det(t), [t], create_graph=True)
        assert_close(np.asarray(x.grad), tg.detach().numpy(), rtol=1e-9, atol=1e-9)


def test_det_gradient_of_a_batch_with_one_singular_complex_matrix():
    a = R.standard_normal((2, 3, 3)) + 1j * R.standard_normal((2, 3, 3))
    a[1, 2] = a[1, 0] + 2 * a[1, 1]
    w = R.standard_normal(2) + 1j * R.standard_normal(2)
    x = _g(a, "cpu", grad=True)
    gp.sum(gp.real(gp.linalg.det(x) * gp.asarray(w, device="cpu"))).backward()
    t = _t(a, grad=True)
    (tg,) = torch.autograd.grad((torch.linalg.det(t) * torch.tensor(w)).real.sum(), [t],
                                create_graph=True)
    assert_close(np.asarray(x.grad), tg.detach().resolve_conj().numpy(), rtol=1e-9, atol=1e-9)


def test_torch_norm_keywords(device):
    a = R.standard_normal((2, 3, 4))
    x, t = _g(a, device), _t(a)
    assert_close(LA.vector_norm(x, dim=1, keepdim=True),
                 torch.linalg.vector_norm(t, dim=1, keepdim=True).numpy())
    assert_close(LA.vector_norm(x, 3, (0, 2), True),   # torch's positional order
                 torch.linalg.vector_norm(t, 3, (0, 2), True).numpy())
    assert_close(LA.matrix_norm(x, "nuc"), torch.linalg.matrix_norm(t, "nuc").numpy())
    assert_close(LA.matrix_norm(x, ord=1, dim=(2, 0), keepdim=True),
                 torch.linalg.matrix_norm(t, ord=1, dim=(2, 0), keepdim=True).numpy())
    with pytest.raises(TypeError, match="vector_norm: give axis or dim"):
        LA.vector_norm(x, axis=0, dim=0)
    with pytest.raises(ValueError, match="matrix_norm: dim must be a pair"):
        LA.matrix_norm(x, dim=0)


def test_norm_dtype_keeps_the_gradient():
    # norm(x, dtype=) and vector_norm(x, dtype=) cast without recording before: no graph
    a = R.standard_normal((2, 3)).astype(np.float32)
    for f, tf in ((lambda x: LA.norm(x, dtype=gp.float64),
                   lambda t: torch.linalg.norm(t, dtype=torch.float64)),
                  (lambda x: LA.vector_norm(x, dim=1, dtype=gp.float64),
                   lambda t: torch.linalg.vector_norm(t, dim=1, dtype=torch.float64))):
        x, t = _g(a, "cpu", grad=True), _t(a, grad=True)
        y, ty = f(x), tf(t)
        assert y.dtype == gp.float64
        gp.sum(y).backward()
        ty.sum().backward()
        assert_close(np.asarray(x.grad), t.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_torch_vecdot_cross_diagonal_solve_keywords(device):
    a, b, s = R.standard_normal((3, 2, 3)), R.standard_normal((3, 2, 3)), R.standard_normal((2, 3, 3))
    ta, tb, ts = _t(a), _t(b), _t(s)
    ga, gb, gs = _g(a, device), _g(b, device), _g(s, device)
    assert_close(LA.vecdot(ga, gb, dim=0), torch.linalg.vecdot(ta, tb, dim=0).numpy())
    assert_close(gp.vecdot(ga, gb, dim=1), torch.linalg.vecdot(ta, tb, dim=1).numpy())
    assert_close(LA.cross(ga, gb, dim=0), torch.linalg.cross(ta, tb, dim=0).numpy())
    assert_close(LA.diagonal(ga, offset=1, dim1=0, dim2=2),
                 torch.linalg.diagonal(ta, offset=1, dim1=0, dim2=2).numpy())
    rhs = R.standard_normal((2, 4, 3))
    assert_close(LA.solve(gs, _g(rhs, device), left=False),
                 torch.linalg.solve(ts, _t(rhs), left=False).numpy(), rtol=1e-9, atol=1e-9)
    # a 1-D x2 is one row x of x @ x1 = x2 (torch refuses it with left=False)
    assert_close(LA.solve(gs, _g(rhs[0, 0], device), left=False),
                 np.linalg.solve(np.swapaxes(s, -1, -2), rhs[0, 0]), rtol=1e-9, atol=1e-9)
    with pytest.raises(TypeError, match="vecdot: give axis or dim"):
        LA.vecdot(ga, gb, axis=0, dim=0)


def test_torch_atol_of_pinv_and_matrix_rank(device):
    a = R.standard_normal((2, 4, 3))
    a[1, :, 2] = a[1, :, 0]   # rank 2
    x, t = _g(a, device), _t(a)
    for kw in ({"atol": 0.5}, {"atol": 0.5, "rtol": 0.3}, {"atol": 0.0}):
        assert_close(LA.pinv(x, **kw), torch.linalg.pinv(t, **kw).numpy(), rtol=1e-9, atol=1e-9)
        assert_close(LA.matrix_rank(x, **kw), torch.linalg.matrix_rank(t, **kw).numpy())
    at = np.array([0.1, 10.0])
    assert_close(LA.matrix_rank(x, atol=_g(at, device)),
                 torch.linalg.matrix_rank(t, atol=_t(at)).numpy())
    with pytest.raises(TypeError, match="matrix_rank: give tol or atol"):
        LA.matrix_rank(x, tol=0.1, atol=0.1)
    assert_close(LA.svdvals(x, driver=None), torch.linalg.svdvals(t).numpy(), rtol=1e-9,
                 atol=1e-9)
    with pytest.raises(NotImplementedError, match="svd: driver='gesvdj'"):
        LA.svd(x, driver="gesvdj")


def test_pinv_atol_gradient_matches_torch():
    a = R.standard_normal((4, 3))
    x, t = _g(a, "cpu", grad=True), _t(a, grad=True)
    w = R.standard_normal((3, 4))
    gp.sum(LA.pinv(x, atol=0.1) * gp.asarray(w, device="cpu")).backward()
    (torch.linalg.pinv(t, atol=0.1) * torch.tensor(w)).sum().backward()
    assert_close(np.asarray(x.grad), t.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_numpy_qr_mode_r_and_lower_case_uplo(device):
    a = R.standard_normal((2, 4, 3))
    r = LA.qr(_g(a, device), mode="r")
    assert isinstance(r, gp.Array)
    assert_close(gp.abs(r), np.abs(np.linalg.qr(a, mode="r")), rtol=1e-9, atol=1e-9)
    assert_close(gp.abs(LA.qr(_g(a[0].T, device), "r")), np.abs(np.linalg.qr(a[0].T, "r")),
                 rtol=1e-9, atol=1e-9)
    # mode='raw' is supported since hunt 8 (tests/test_linalg_hunt8.py)
    s = R.standard_normal((3, 3))
    for uplo in ("l", "u"):
        assert_close(LA.eigvalsh(_g(s, device), UPLO=uplo), np.linalg.eigvalsh(s, UPLO=uplo),
                     rtol=1e-9, atol=1e-9)


def test_solve_triangular_matches_torch(device):
    a, b = R.standard_normal((2, 3, 3)) + 2 * np.eye(3), R.standard_normal((2, 3, 2))
    for upper, left, unit in ((True, True, False), (False, False, True)):
        rhs = b if left else np.swapaxes(b, -1, -2)
        got = LA.solve_triangular(_g(a, device), _g(rhs, device), upper=upper, left=left,
                                  unitriangular=unit)
        ref = torch.linalg.solve_triangular(_t(a), _t(rhs), upper=upper, left=left,
                                            unitriangular=unit)
        assert_close(got, ref.numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("upper,unit", [(True, False), (False, True)])
def test_solve_triangular_gradient_matches_torch(upper, unit):
    a, b = R.standard_normal((3, 3)) + 2 * np.eye(3), R.standard_normal((3, 2))
    xa, xb, ta, tb = _g(a, "cpu", True), _g(b, "cpu", True), _t(a, True), _t(b, True)
    w = R.standard_normal((3, 2))
    y = LA.solve_triangular(xa, xb, upper=upper, unitriangular=unit)
    gp.sum(y * gp.asarray(w, device="cpu")).backward()
    (torch.linalg.solve_triangular(ta, tb, upper=upper, unitriangular=unit)
     * torch.tensor(w)).sum().backward()
    assert_close(np.asarray(xa.grad), ta.grad.numpy(), rtol=1e-9, atol=1e-9)
    assert_close(np.asarray(xb.grad), tb.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_matrix_exp_matches_torch(device):
    a = R.standard_normal((2, 3, 3)) * np.array([0.3, 8.0])[:, None, None]   # unscaled, scaled
    got = LA.matrix_exp(_g(a, device))
    ref = torch.linalg.matrix_exp(_t(a)).numpy()
    assert_close(got, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    c = R.standard_normal((2, 2)) + 1j * R.standard_normal((2, 2))   # complex: on the CPU
    assert_close(LA.matrix_exp(_g(c, "cpu")), torch.linalg.matrix_exp(_t(c)).numpy(),
                 rtol=1e-12, atol=1e-12)


def test_matrix_exp_gradient_matches_torch():
    a = R.standard_normal((2, 3, 3)) * np.array([0.5, 6.0])[:, None, None]
    x, t = _g(a, "cpu", True), _t(a, True)
    w = R.standard_normal((2, 3, 3))
    assert_close(LA.matrix_exp(x), torch.linalg.matrix_exp(t).detach().numpy(), rtol=1e-12,
                 atol=1e-12 * float(np.abs(a).max()) ** 2)
    gp.sum(LA.matrix_exp(x) * gp.asarray(w, device="cpu")).backward()
    (torch.linalg.matrix_exp(t) * torch.tensor(w)).sum().backward()
    assert_close(np.asarray(x.grad), t.grad.numpy(), rtol=1e-9, atol=1e-9 * float(t.grad.abs().max()))


def test_numpy_error_types(device):
    wide = _g(R.standard_normal((2, 3)), device)
    # NumPy raises LinAlgError (a ValueError) for these; grilly's solve and matrix_power raised
    # a plain ValueError
    for f in (lambda: LA.solve(wide, _g(np.ones(2), device)), lambda: LA.matrix_power(wide, 2),
              lambda: LA.solve_triangular(wide, wide, upper=True), lambda: LA.matrix_exp(wide)):
        with pytest.raises(np.linalg.LinAlgError, match="square"):
            f()
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.lstsq(np.ones((2, 3)), 1.0)
    with pytest.raises(np.linalg.LinAlgError, match="lstsq: b must have"):   # an IndexError
        LA.lstsq(wide, _g(np.float64(1.0), device))
    with pytest.raises(TypeError, match="lstsq: rcond must be"):   # a comparison's TypeError
        LA.lstsq(wide, _g(np.ones(2), device), rcond="warn")
    with pytest.raises(TypeError, match="norm: axis must be"):   # "float has no len()"
        LA.norm(wide, axis=1.0)


def test_spectral_and_nuclear_norm_of_an_empty_matrix(device):
    e = np.ones((0, 3))
    # ord=2 raised "max: zero-size reduction"; NumPy's is 0
    for o in (2, "nuc"):
        assert_close(LA.norm(_g(e, device), o), np.asarray(np.linalg.norm(e, o)))
    assert_close(LA.matrix_norm(_g(e, device), ord=2), np.asarray(np.linalg.norm(e, 2)))
