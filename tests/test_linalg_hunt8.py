"""gp.linalg as a torch.linalg / scipy.linalg user porting code meets it (a hunt): the LU family
(lu, lu_factor, lu_factor_ex with torch's 1-based int32 pivots, lu_solve with left/adjoint,
torch.lu_unpack), the _ex variants (inv_ex, solve_ex, cholesky_ex: info, check_errors),
householder_product and geqrf (and NumPy's qr(mode='raw') made of it), batched and complex
inputs, their gradients, and the error kinds. References: torch 2.13 CPU and numpy float64."""
import numpy as np
import pytest

import grilly as gp
from grilly.testing import assert_close

torch = pytest.importorskip("torch")

R = np.random.default_rng(8)
LA = gp.linalg
TOL = {"rtol": 1e-9, "atol": 1e-9}
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


def _t(a, grad=False):
    t = torch.tensor(a)
    return t.requires_grad_() if grad else t


def _g(a, device, grad=False):
    x = gp.asarray(a, device=device)
    return x.requires_grad_() if grad else x


def _n(x):
    return np.asarray(x.to_device("cpu"))


def _weights(shape, cplx=False):
    w = R.standard_normal(shape)
    return w + 1j * R.standard_normal(shape) if cplx else w


def _grads(f, tf, arrays, cplx_out=False):
    """x.grad of sum(real(f(*xs) * w)) from grilly and torch (CPU, float64/complex128)."""
    xs = [_g(a, "cpu", True) for a in arrays]
    ts = [_t(a, True) for a in arrays]
    out, tout = f(*xs), tf(*ts)
    out, tout = (out, tout) if isinstance(out, tuple) else ((out,), (tout,))
    loss, tloss = None, 0
    for o, t in zip(out, tout):
        w = _weights(tuple(t.shape), t.dtype.is_complex)
        li = gp.sum(gp.real(o * gp.asarray(w, device="cpu")))
        loss = li if loss is None else loss + li
        tloss = tloss + (t * torch.tensor(w)).real.sum()
    loss.backward()
    tloss.backward()
    for x, t in zip(xs, ts):
        assert_close(np.asarray(x.grad), t.grad.resolve_conj().numpy(), **TOL)


# ---- forward, every device --------------------------------------------------------------------
def test_lu_factor_and_lu_match_torch(device):
    # none of lu, lu_factor, lu_factor_ex, lu_unpack existed
    for shape, cplx in (((2, 3, 3), False), ((3, 4), False), ((2, 4, 3), False), ((3, 3), True)):
        a = _weights(shape, cplx)
        lu, piv = LA.lu_factor(_g(a, device))
        tlu, tpiv = torch.linalg.lu_factor(_t(a))
        assert piv.dtype == gp.int32
        np.testing.assert_array_equal(_n(piv), tpiv.numpy())
        assert_close(lu, tlu.numpy(), **TOL)
        for got, ref in zip(LA.lu(_g(a, device)), torch.linalg.lu(_t(a))):
            assert_close(got, ref.numpy(), **TOL)
    a = R.standard_normal((2, 3, 3))
    tlu, tpiv = torch.linalg.lu_factor(_t(a))
    for got, ref in zip(LA.lu_unpack(_g(tlu.numpy(), device), _g(tpiv.numpy(), device)),
                        torch.lu_unpack(tlu, tpiv)):
        assert_close(got, ref.numpy(), **TOL)
    p, low, up = LA.lu_unpack(_g(tlu.numpy(), device), _g(tpiv.numpy(), device),
                              unpack_data=False)
    assert low.shape == up.shape == (0,) and p.shape == (2, 3, 3)


def test_lu_factor_ex_info_and_singular_errors(device):
    a = np.stack([np.eye(2) + 0.5, SINGULAR])
    lu, piv, info = LA.lu_factor_ex(_g(a, device))
    tlu, tpiv, tinfo = torch.linalg.lu_factor_ex(_t(a))
    assert info.dtype == gp.int32
    np.testing.assert_array_equal(_n(info), tinfo.numpy())
    np.testing.assert_array_equal(_n(piv), tpiv.numpy())
    assert_close(lu, tlu.numpy(), **TOL)
    # torch's lu_factor and check_errors=True raise where U has a zero on its diagonal
    with pytest.raises(np.linalg.LinAlgError, match=r"lu_factor: U\[2,2\]"):
        LA.lu_factor(_g(SINGULAR, device))
    with pytest.raises(np.linalg.LinAlgError, match=r"lu_factor_ex \(batch element \(1,\)\)"):
        LA.lu_factor_ex(_g(a, device), check_errors=True)


def test_lu_without_pivoting_matches_doolittle(device):
    # torch's CPU refuses pivot=False (CUDA only); grilly eliminates without row interchanges
    a = R.standard_normal((2, 3, 3)) + 4 * np.eye(3)
    up, low = a.copy(), np.broadcast_to(np.eye(3), a.shape).copy()
    for j in range(3):   # numpy reference: Doolittle
        f = up[:, j + 1:, j] / up[:, j:j + 1, j]
        low[:, j + 1:, j] = f
        up[:, j + 1:] -= f[..., None] * up[:, j:j + 1]
    p, gl, gu = LA.lu(_g(a, device), pivot=False)
    assert p.shape == (0,)
    assert_close(gl, low, **TOL)
    assert_close(gu, np.triu(up), **TOL)
    _, piv = LA.lu_factor(_g(a, device), pivot=False)
    np.testing.assert_array_equal(_n(piv), np.broadcast_to([1, 2, 3], (2, 3)))


def test_lu_solve_matches_torch(device):
    a, b = R.standard_normal((2, 3, 3)), R.standard_normal((2, 3, 2))
    tlu, tpiv = torch.linalg.lu_factor(_t(a))
    lu, piv = LA.lu_factor(_g(a, device))
    for left, adjoint in ((True, False), (True, True), (False, False), (False, True)):
        rhs = b if left else np.swapaxes(b, -1, -2)
        got = LA.lu_solve(lu, piv, _g(rhs, device), left=left, adjoint=adjoint)
        ref = torch.linalg.lu_solve(tlu, tpiv, _t(rhs), left=left, adjoint=adjoint)
        assert_close(got, ref.numpy(), **TOL)
    # one LU, a batch of right-hand sides (lu_solve's take_along_axis raised before the fix)
    got = LA.lu_solve(lu[0], piv[0], _g(b, device))
    assert_close(got, torch.linalg.lu_solve(tlu[0], tpiv[0], _t(b)).numpy(), **TOL)
    c, cb = _weights((3, 3), True), _weights((3, 1), True)
    tlu, tpiv = torch.linalg.lu_factor(_t(c))
    assert_close(LA.lu_solve(*LA.lu_factor(_g(c, device)), _g(cb, device), adjoint=True),
                 torch.linalg.lu_solve(tlu, tpiv, _t(cb), adjoint=True).numpy(), **TOL)


def test_ex_variants_match_torch(device):
    a = np.stack([R.standard_normal((2, 2)) + 3 * np.eye(2), SINGULAR])
    inv, info = LA.inv_ex(_g(a, device))
    tinv, tinfo = torch.linalg.inv_ex(_t(a))
    np.testing.assert_array_equal(_n(info), tinfo.numpy())
    assert_close(inv[0], tinv[0].numpy(), **TOL)
    assert np.isnan(_n(inv[1])).all()   # torch's holds infs: not a number either way
    b = R.standard_normal((2, 2))   # torch's batch of vectors: B.shape == A.shape[:-1]
    x, info = LA.solve_ex(_g(a, device), _g(b, device))
    tx, tinfo = torch.linalg.solve_ex(_t(a), _t(b))
    np.testing.assert_array_equal(_n(info), tinfo.numpy())
    assert x.shape == (2, 2)
    assert_close(x[0], tx[0].numpy(), **TOL)
    bl = R.standard_normal((2, 3, 2))
    assert_close(LA.solve_ex(_g(a[0], device), _g(bl, device), left=False).result,
                 torch.linalg.solve_ex(_t(a[0]), _t(bl), left=False).result.numpy(), **TOL)
    s = np.stack([a[0] @ a[0].T + np.eye(2), np.array([[1.0, 2.0], [2.0, 1.0]])])
    for upper in (False, True):
        low, info = LA.cholesky_ex(_g(s, device), upper=upper)
        tlow, tinfo = torch.linalg.cholesky_ex(_t(s), upper=upper)
        np.testing.assert_array_equal(_n(info), tinfo.numpy())
        assert_close(low[0], tlow[0].numpy(), **TOL)
    for f in (lambda: LA.inv_ex(_g(a, device), check_errors=True),
              lambda: LA.solve_ex(_g(a, device), _g(b, device), check_errors=True)):
        with pytest.raises(np.linalg.LinAlgError, match=r"\(batch element \(1,\)\): U\[2,2\]"):
            f()
    with pytest.raises(np.linalg.LinAlgError, match="leading minor of order 2"):
        LA.cholesky_ex(_g(s, device), check_errors=True)


def test_householder_product_geqrf_and_numpy_qr_raw(device):
    for a in (R.standard_normal((2, 4, 3)), _weights((3, 2), True)):
        g, tau = LA.geqrf(_g(a, device))
        tg, ttau = torch.geqrf(_t(a))
        assert_close(g, tg.numpy(), **TOL)
        assert_close(tau, ttau.numpy(), **TOL)
        q = LA.householder_product(_g(tg.numpy(), device), _g(ttau.numpy()[..., :1], device))
        assert_close(q, torch.linalg.householder_product(tg, ttau[..., :1]).numpy(), **TOL)
    # float32 stays float32 (the unit entries of the reflectors were float64 scalars' arrays)
    f = R.standard_normal((4, 3)).astype(np.float32)
    g, tau = LA.geqrf(_g(f, device))
    q = LA.householder_product(g, tau)
    assert g.dtype == tau.dtype == q.dtype == gp.float32
    assert_close(q, torch.linalg.householder_product(*torch.geqrf(_t(f))).numpy(), rtol=1e-5,
                 atol=1e-5)
    # NumPy's qr(mode='raw') raised NotImplementedError: geqrf's (h, tau), h transposed
    a = R.standard_normal((2, 4, 3))
    h, tau = LA.qr(_g(a, device), mode="raw")
    nh, ntau = np.linalg.qr(a, mode="raw")
    assert_close(h, nh, **TOL)
    assert_close(tau, ntau, **TOL)


def test_cholesky_solve_inverse_and_vander_match_torch(device):
    # torch's cholesky_solve / cholesky_inverse (top-level) and linalg.vander were missing
    a = R.standard_normal((2, 3, 3))
    low = np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + np.eye(3))
    b = R.standard_normal((2, 3, 2))
    for upper in (False, True):
        f = np.swapaxes(low, -1, -2) if upper else low
        assert_close(LA.cholesky_solve(_g(b, device), _g(f, device), upper=upper),
                     torch.cholesky_solve(_t(b), _t(f), upper=upper).numpy(), **TOL)
        assert_close(LA.cholesky_inverse(_g(f[0], device), upper=upper),
                     torch.cholesky_inverse(_t(f[0]), upper=upper).numpy(), **TOL)
    x = R.standard_normal((2, 3))
    assert_close(LA.vander(_g(x, device), N=4), torch.linalg.vander(_t(x), N=4).numpy(), **TOL)
    iv = LA.vander(gp.asarray(np.array([1, 2, 3]), device=device))
    assert iv.dtype == gp.int64
    np.testing.assert_array_equal(_n(iv), torch.linalg.vander(torch.tensor([1, 2, 3])).numpy())
    with pytest.raises(ValueError, match="vander: N must be an int greater than 1"):
        LA.vander(_g(x, device), N=1)


def test_torch_solve_reads_a_batch_of_vectors(device):
    # torch.linalg.solve(A, b) with b.shape == A.shape[:-1] raised (NumPy 2's matrix reading);
    # torch's form (left=) now reads a batch of vectors, and the NumPy form's error says how
    a, b = R.standard_normal((2, 3, 3)), R.standard_normal((2, 3))
    assert_close(LA.solve(_g(a, device), _g(b, device), left=True),
                 torch.linalg.solve(_t(a), _t(b)).numpy(), **TOL)
    with pytest.raises(ValueError, match=r"a batch of vectors .* solve\(x1, x2, left=True\)"):
        LA.solve(_g(a, device), _g(b, device))
    # torch's top-level names
    assert gp.lu_unpack is LA.lu_unpack and gp.geqrf is LA.geqrf
    assert gp.cholesky_solve is LA.cholesky_solve and gp.cholesky_inverse is LA.cholesky_inverse


def test_bad_input_errors(device):
    x = _g(R.standard_normal((3, 3)), device)
    lu, piv = LA.lu_factor(x)
    ones = gp.ones((3, 1), dtype=gp.float64, device=device)
    cases = [
        (np.linalg.LinAlgError, "lu_factor: x must have at least 2", lambda: LA.lu_factor(x[0])),
        (TypeError, "lu_factor: pivot must be a bool", lambda: LA.lu_factor(x, pivot=1)),
        (TypeError, "linalg.lu: dtype float16", lambda: LA.lu(gp.astype(x, gp.float16))),
        (np.linalg.LinAlgError, "lu_solve: x must be a stack of square",
         lambda: LA.lu_solve(lu[:2], piv[:2], ones)),
        (np.linalg.LinAlgError, "lu_solve: B must have at least 2", lambda: LA.lu_solve(lu, piv, ones[:, 0])),
        (np.linalg.LinAlgError, "lu_solve: B of shape", lambda: LA.lu_solve(lu, piv, ones[:2])),
        (TypeError, "lu_solve: pivots must be an integer",
         lambda: LA.lu_solve(lu, gp.astype(piv, gp.float64), ones)),
        (ValueError, r"lu_solve: pivots of shape \(2,\)", lambda: LA.lu_solve(lu, piv[:2], ones)),
        (ValueError, "lu_unpack: pivots must be 1-based", lambda: LA.lu_unpack(lu, piv * 0)),
        (TypeError, "lu_solve: adjoint must be a bool", lambda: LA.lu_solve(lu, piv, ones, adjoint=None)),
        # SciPy's form: Python's "missing 1 required positional argument: 'B'" before
        (TypeError, r"SciPy's lu_solve\(\(lu, piv\), b\)", lambda: LA.lu_solve((lu, piv), ones)),
        (np.linalg.LinAlgError, "inv_ex: x must be a stack of square", lambda: LA.inv_ex(lu[:2])),
        (ValueError, "solve_ex: a vector B with left=False",
         lambda: LA.solve_ex(x, ones[:, 0], left=False)),
        (np.linalg.LinAlgError, "householder_product: A of shape",
         lambda: LA.householder_product(lu[:2], piv[:2])),
        (ValueError, "householder_product: tau of shape",
         lambda: LA.householder_product(x, gp.ones(4, device=device))),
    ]
    for kind, msg, f in cases:
        with pytest.raises(kind, match=msg):
            f()
    # integers factor in float64, as numpy.linalg and scipy.linalg compute them
    ilu, ipiv = LA.lu_factor(gp.asarray(np.array([[1, 2], [3, 4]]), device=device))
    tlu, tpiv = torch.linalg.lu_factor(torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64))
    assert ilu.dtype == gp.float64
    assert_close(ilu, tlu.numpy(), **TOL)


# ---- gradients against torch.autograd (CPU, float64 and complex128) -------------------------
def test_lu_gradients_match_torch():
    _grads(lambda x: LA.lu_factor(x).LU, lambda t: torch.linalg.lu_factor(t).LU,
           [R.standard_normal((2, 3, 3))])
    for a in (R.standard_normal((4, 3)), _weights((3, 3), True)):
        _grads(lambda x: tuple(LA.lu(x)), lambda t: tuple(torch.linalg.lu(t)), [a])


@pytest.mark.parametrize("left,adjoint", [(True, False), (False, True)])
def test_lu_solve_gradients_match_torch(left, adjoint):
    a, b = R.standard_normal((2, 3, 3)), R.standard_normal((2, 3, 2))
    tlu, tpiv = torch.linalg.lu_factor(_t(a))
    lu, piv = tlu.numpy(), gp.asarray(tpiv.numpy(), device="cpu")
    rhs = b if left else np.swapaxes(b, -1, -2)
    # LU itself a leaf: its strict lower triangle is L's, the rest U's, as torch's
    _grads(lambda x, y: LA.lu_solve(x, piv, y, left=left, adjoint=adjoint),
           lambda x, y: torch.linalg.lu_solve(x, tpiv, y, left=left, adjoint=adjoint), [lu, rhs])


def test_ex_and_householder_gradients_match_torch():
    a, b = R.standard_normal((2, 3, 3)), R.standard_normal((2, 3))
    _grads(lambda x: LA.inv_ex(x).inverse, lambda t: torch.linalg.inv_ex(t).inverse, [a])
    _grads(lambda x, y: LA.solve_ex(x, y).result,
           lambda x, y: torch.linalg.solve_ex(x, y).result, [a, b])
    s = a @ np.swapaxes(a, -1, -2) + np.eye(3)
    _grads(lambda x: LA.cholesky_ex(x).L, lambda t: torch.linalg.cholesky_ex(t).L, [s])
    for m in (R.standard_normal((4, 3)), _weights((3, 2), True)):
        g, tau = torch.geqrf(_t(m))
        _grads(LA.householder_product, torch.linalg.householder_product,
               [g.numpy(), tau.numpy()])


def test_cholesky_solve_and_vander_gradients_match_torch():
    a = R.standard_normal((2, 3, 3))
    s, b = a @ np.swapaxes(a, -1, -2) + np.eye(3), R.standard_normal((2, 3, 2))
    # through the factorization (torch's gradient of a leaf L also fills the triangle the
    # solve never reads; through cholesky the two agree)
    _grads(lambda x, y: LA.cholesky_solve(y, LA.cholesky(x, upper=True), upper=True),
           lambda x, y: torch.cholesky_solve(y, torch.linalg.cholesky(x, upper=True), upper=True),
           [s, b])
    _grads(lambda x: LA.cholesky_inverse(LA.cholesky(x)),
           lambda t: torch.cholesky_inverse(torch.linalg.cholesky(t)), [s])
    _grads(LA.vander, torch.linalg.vander, [np.array([0.0, 1.5, -2.0])])   # finite at 0
