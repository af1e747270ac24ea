"""Leftovers of earlier hunts, against torch 2.13 (float64) or a float64 NumPy reference:
assigning a gradient of another shape, dtype or device to ``.grad`` was accepted; ``Module.type``
was missing; ``set_default_dtype`` refused an integer dtype with NotImplementedError (torch:
TypeError); ``linalg.ldl_factor``/``ldl_factor_ex``/``ldl_solve`` were missing;
``linalg.cholesky_ex`` raised LinAlgError for a nearly singular matrix instead of reporting it;
``Wishart.log_prob`` raised for a numerically singular sample (torch's slogdet gives -inf or a
finite value), ``rsample`` had no ``max_try_correction`` and kept singular draws; a
``create_graph=True`` backward through ``utils.checkpoint`` was refused, and ``grad()`` through
a checkpoint accumulated the parameters' gradients into ``.grad`` instead of returning them."""
import warnings

import numpy as np
import pytest

import grilly as gp
import grilly.distributions as D
from grilly.testing import assert_close
from grilly.utils.checkpoint import checkpoint

torch = pytest.importorskip("torch")
tcheckpoint = pytest.importorskip("torch.utils.checkpoint").checkpoint

R = np.random.default_rng(10)
LA = gp.linalg


def _n(x):
    return np.asarray(x.to_device("cpu"))


def _g(a, device, grad=False):
    x = gp.asarray(a, device=device)
    return x.requires_grad_() if grad else x


def _close(a, t, tol=1e-9):
    e = t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)
    assert tuple(a.shape) == e.shape, (a.shape, e.shape)
    assert_close(a, e, rtol=tol, atol=tol)


def _raises_like(f, tf):
    """f raises the exception class tf (torch's) raises."""
    with pytest.raises(Exception) as te:
        tf()
    with pytest.raises(type(te.value)):
        f()


# ---- 1. param.grad assignment --------------------------------------------------------------
def test_grad_assignment_is_checked_as_torch(device):
    p = gp.nn.Parameter(gp.zeros((3,), dtype=gp.float32, device=device))
    tp = torch.nn.Parameter(torch.zeros(3))

    def assign(a, v):
        a.grad = v
    for bad, tbad in ((gp.zeros((2,), dtype=gp.float32, device=device), torch.zeros(2)),
                      (gp.zeros((1, 3), dtype=gp.float32, device=device), torch.zeros(1, 3)),
                      (gp.zeros((3,), dtype=gp.float64, device=device),
                       torch.zeros(3, dtype=torch.float64)),
                      (gp.zeros((3,), dtype=gp.int32, device=device),
                       torch.zeros(3, dtype=torch.int32)),
                      ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0])):
        _raises_like(lambda: assign(p, bad), lambda: assign(tp, tbad))
        assert p.grad is None
    others = [d for d in gp.devices() if str(d) != str(device)]
    if others:   # another device: torch's "different device" check is a RuntimeError too
        with pytest.raises(RuntimeError, match="device"):
            p.grad = gp.zeros((3,), dtype=gp.float32, device=others[0])
    g = gp.ones((3,), dtype=gp.float32, device=device)
    p.grad = g
    assert p.grad is g
    del p.grad
    assert p.grad is None
    # backward's own accumulation still works through the check
    (p * p).sum().backward()
    tp.grad = None
    (tp * tp).sum().backward()
    _close(p.grad, tp.grad)


# ---- 3. default dtype ------------------------------------------------------------------------
def test_default_dtype_as_torch():
    assert str(gp.get_default_dtype()).rsplit(".", 1)[-1] == \
        str(torch.get_default_dtype()).rsplit(".", 1)[-1]
    gp.set_default_dtype(gp.float32)   # the default itself: accepted
    for d, td in ((gp.int32, torch.int32), (gp.complex64, torch.complex64)):
        _raises_like(lambda: gp.set_default_dtype(d), lambda: torch.set_default_dtype(td))
    assert gp.get_default_dtype() == gp.float32   # (tests/test_default_dtype.py: the others)
    assert gp.nn.Linear(2, 2).weight.dtype == gp.float32
    assert gp.get_default_device() is gp.default_device()   # (torch.get_default_device)


# ---- 4. Module.type, double, half... ---------------------------------------------------------
def _pair_model(device):
    m = gp.nn.Sequential(gp.nn.Linear(3, 2), gp.nn.BatchNorm1d(2)).to(device)
    t = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    with torch.no_grad():
        for (_, a), (_, b) in zip(m.named_parameters(), t.named_parameters()):
            b.copy_(torch.tensor(_n(a)))
    return m, t


def _dtypes(m):
    return {k: str(v.dtype).rsplit(".", 1)[-1] for k, v in m.state_dict().items()}


def test_module_type_and_casts_as_torch(device):
    m, t = _pair_model(device)
    opt = gp.optim.SGD(m.parameters(), lr=0.1)
    w = m[0].weight
    for cast in ("double", "half", "bfloat16", "float"):
        assert getattr(m, cast)() is m
        getattr(t, cast)()
        assert _dtypes(m) == _dtypes(t), cast   # integer buffers left as they are
    assert m.type(gp.float64) is m
    t.type(torch.float64)
    assert _dtypes(m) == _dtypes(t)   # num_batches_tracked too, as torch's
    assert m[0].weight is w and opt.param_groups[0]["params"][0].dtype == gp.float64
    x = R.standard_normal((4, 3))
    _close(m(_g(x, device)), t(torch.tensor(x)))
    m.type("torch.FloatTensor")
    t.type("torch.FloatTensor")
    assert _dtypes(m) == _dtypes(t)
    m.to(dtype="float64")   # a dtype's name (it failed in isdtype)
    t.to(dtype=torch.float64)
    assert _dtypes(m) == _dtypes(t)
    _raises_like(lambda: m.type(gp.int32), lambda: t.type(torch.int32))
    assert _dtypes(m) == _dtypes(t)   # (checked before anything is cast)
    with pytest.raises(TypeError, match="Module.type"):
        m.type("no such type")


# ---- 5. LDL^T --------------------------------------------------------------------------------
def _symmetric(batch, n):
    a = R.standard_normal(batch + (n, n))
    a = a + np.swapaxes(a, -1, -2)
    a[0][np.diag_indices(n)] = 0.0   # only 2x2 pivots can start there
    a[1][np.diag_indices(n)] *= 1e-3
    return a


def test_ldl_factor_and_solve_as_torch(device):
    a = _symmetric((3,), 5)
    a[2, :, 0] = a[2, 0, :] = 0.0   # a zero first column: info 1, factored on
    lo = np.tril(a) + 7.0 * np.triu(R.standard_normal(a.shape), 1)   # the upper triangle unread
    ld, piv, info = LA.ldl_factor_ex(_g(lo, device))
    tld, tpiv, tinfo = torch.linalg.ldl_factor_ex(torch.tensor(lo))
    np.testing.assert_array_equal(_n(piv), tpiv.numpy())
    assert piv.dtype == gp.int32 and (_n(piv) < 0).any()
    np.testing.assert_array_equal(_n(info), tinfo.numpy())
    _close(ld, tld)
    b = R.standard_normal((2, 5, 2))
    ld2, piv2 = LA.ldl_factor(_g(a[:2], device))
    tld2, tpiv2 = torch.linalg.ldl_factor(torch.tensor(a[:2]))
    _close(LA.ldl_solve(ld2, piv2, _g(b, device)),
           torch.linalg.ldl_solve(tld2, tpiv2, torch.tensor(b)))
    # one factorization, a batch of right-hand sides (broadcast)
    _close(LA.ldl_solve(ld2[0], piv2[0], _g(b, device)),
           torch.linalg.solve(torch.tensor(a[0]), torch.tensor(b)))
    with pytest.raises(LA.LinAlgError, match="ldl_factor"):
        LA.ldl_factor(_g(a[2], device))
    with pytest.raises(NotImplementedError, match="complex"):
        LA.ldl_factor(gp.zeros((2, 2), dtype=gp.complex64, device=device))
    with pytest.raises(LA.LinAlgError, match="ldl_solve"):
        LA.ldl_solve(ld2, piv2, _g(b[:, :4], device))
    with pytest.raises(TypeError, match="pivots"):
        LA.ldl_solve(ld2, gp.astype(piv2, gp.float32), _g(b, device))
    with pytest.raises(TypeError, match="hermitian"):
        LA.ldl_factor(_g(a[0], device), hermitian=1)


def test_ldl_gradients_against_solve(device):
    # torch has no derivative for ldl_*; the solve they give is linalg.solve's of the matrix
    # whose lower triangle was read
    a, b = _symmetric((2,), 4), R.standard_normal((2, 4, 3))
    ga, gb = _g(a, device, True), _g(b, device, True)
    f = LA.ldl_factor(ga)
    x = LA.ldl_solve(f.LD, f.pivots, gb)
    gp.sum(x * x).backward()
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tx = torch.linalg.solve(torch.tril(ta) + torch.tril(ta, -1).mT, tb)
    (tx * tx).sum().backward()
    _close(x, tx)
    _close(gb.grad, tb.grad, 1e-8)
    _close(ga.grad, ta.grad, 1e-8)


def test_cholesky_ex_reports_a_nearly_singular_matrix(device):
    # rank-deficient Gram matrices: LAPACK's Cholesky fails on some in its order of
    # operations; cholesky_ex raised its LinAlgError instead of reporting it
    b = R.standard_normal((40, 4, 3))
    a = b @ np.swapaxes(b, -1, -2)
    low, info = LA.cholesky_ex(_g(a, device))
    ok = _n(info) == 0
    assert (~ok).any()
    ll = _n(low)[ok]
    np.testing.assert_allclose(ll @ np.swapaxes(ll, -1, -2), a[ok], atol=1e-9)
    assert np.isnan(_n(low)[~ok]).all()
    # a positive definite batch: torch's factors and info
    c = a + np.eye(4)
    ga = _g(c[:3], device, True)
    low, info = LA.cholesky_ex(ga)
    ta = torch.tensor(c[:3], requires_grad=True)
    tlow, tinfo = torch.linalg.cholesky_ex(ta)
    _close(low, tlow)
    np.testing.assert_array_equal(_n(info), tinfo.numpy())
    w = R.standard_normal(low.shape)
    gp.sum(low * _g(w, device)).backward()
    (tlow * torch.tensor(w)).sum().backward()
    _close(ga.grad, ta.grad, 1e-8)


# ---- 6. Wishart --------------------------------------------------------------------------------
def test_wishart_samples_near_singular_df_and_log_prob(device):
    p = 4
    m = R.standard_normal((p, p))
    cov = m @ m.T + p * np.eye(p)
    df = p - 1 + 1e-3   # most Bartlett draws are numerically singular here
    w = D.Wishart(_g(np.array(df), device), covariance_matrix=_g(cov, device),
                  validate_args=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gp.random.seed(10)
        s = w.rsample((16,), max_try_correction=30)
    # redrawn into the support: validated log_prob takes them (it raised LinAlgError)
    assert np.isfinite(_n(w.log_prob(s))).all()
    with pytest.raises(ValueError, match="max_try_correction"):
        w.rsample((2,), max_try_correction=-1)
    # log_prob of torch's own draws: torch's values; near-singular ones: no LinAlgError
    torch.manual_seed(10)
    for d in (p - 1 + 1e-3, p + 0.5):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tw = torch.distributions.Wishart(torch.tensor(d, dtype=torch.float64),
                                             covariance_matrix=torch.tensor(cov),
                                             validate_args=False)
            tsamp = tw.sample((16,))
        wv = D.Wishart(_g(np.array(d), device), covariance_matrix=_g(cov, device),
                       validate_args=False)
        lp = wv.log_prob(_g(tsamp.numpy(), device))
    _close(lp, tw.log_prob(tsamp), 1e-7)
    # gradients of log_prob w.r.t. df and the scale
    x = (m @ m.T + np.eye(p))[None] * np.array([1.0, 2.0])[:, None, None]
    gdf, gcov = _g(np.array(p + 1.5), device, True), _g(cov, device, True)
    gp.sum(D.Wishart(gdf, covariance_matrix=gcov).log_prob(_g(x, device))).backward()
    tdf = torch.tensor(p + 1.5, dtype=torch.float64, requires_grad=True)
    tcov = torch.tensor(cov, requires_grad=True)
    torch.distributions.Wishart(tdf, covariance_matrix=tcov).log_prob(
        torch.tensor(x)).sum().backward()
    _close(gdf.grad, tdf.grad, 1e-8)
    _close(gcov.grad, tcov.grad, 1e-8)


# ---- 2. checkpoint -----------------------------------------------------------------------------
def _pair_linear(device):
    w, b = R.standard_normal((3, 3)), R.standard_normal(3)
    lin = gp.nn.Linear(3, 3, dtype=gp.float64).to(device)
    with gp.no_grad():
        lin.weight[...] = _g(w, device)
        lin.bias[...] = _g(b, device)
    tl = torch.nn.Linear(3, 3).double()
    with torch.no_grad():
        tl.weight.copy_(torch.tensor(w))
        tl.bias.copy_(torch.tensor(b))
    return lin, tl


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_double_backward_as_torch(device, use_reentrant):
    lin, tl = _pair_linear(device)
    xv = R.standard_normal((2, 3))
    x, tx = _g(xv, device, True), torch.tensor(xv, requires_grad=True)

    def f(x, scale=1.0):
        return gp.tanh(lin(x)) ** 2 * scale, "tag"

    def tf(x, scale=1.0):
        return torch.tanh(tl(x)) ** 2 * scale, "tag"
    kw = {} if use_reentrant else {"scale": 3.0}
    # a gradient penalty: grad(create_graph) leaves .grad alone, the second order is right
    y, tag = checkpoint(f, x, use_reentrant=use_reentrant, **kw)
    ty, _ = tcheckpoint(tf, tx, use_reentrant=False, **kw)
    assert tag == "tag"
    (g,) = gp.autograd.grad(gp.sum(y), x, create_graph=True)
    (tg,) = torch.autograd.grad(ty.sum(), tx, create_graph=True)
    _close(g, tg)
    assert lin.weight.grad is None
    (gp.sum(y) + gp.sum(g * g)).backward()
    (ty.sum() + (tg * tg).sum()).backward()
    _close(x.grad, tx.grad)
    _close(lin.weight.grad, tl.weight.grad)
    _close(lin.bias.grad, tl.bias.grad)
    # grad() of a parameter through a checkpoint (torch's non-reentrant variant gives it)
    y, _ = checkpoint(f, x, use_reentrant=use_reentrant, **kw)
    ty, _ = tcheckpoint(tf, tx, use_reentrant=False, **kw)
    (gw,) = gp.autograd.grad(gp.sum(y), [lin.weight])
    _close(gw, torch.autograd.grad(ty.sum(), [tl.weight])[0])


def test_checkpoint_create_graph_backward_with_dropout(device):
    # backward(create_graph=True) through a checkpoint with Dropout inside: the recomputation
    # draws the same masks, and everything equals the plain run's (the reference)
    lin, _ = _pair_linear(device)
    drop = gp.nn.Dropout(0.5)
    xv = R.standard_normal((4, 3))

    def f(x):
        return gp.tanh(drop(lin(x)))

    res = []
    for ckpt in (True, False):
        gp.random.seed(3)
        lin.zero_grad()
        x = _g(xv, device, True)
        y = checkpoint(f, x, use_reentrant=False) if ckpt else f(x)
        gp.sum(y * y).backward(create_graph=True)
        gx, gw = x.grad, lin.weight.grad
        assert gx.requires_grad and gw.requires_grad
        (h,) = gp.autograd.grad(gp.sum(gx * gx) + gp.sum(gw * gw), [x])
        res.append([_n(gx), _n(gw), _n(h)])
    for a, e in zip(*res):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)
