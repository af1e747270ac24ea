"""A PyTorch user's torch.fft, torch.distributions and torch.func code ported to grilly, each
against torch 2.13 on every device; each test failed before its fix: torch.fft's spellings
(``dim=``, ``norm=None``, fft2/ifft2/rfft2/irfft2/hfft2/ihfft2/hfftn/ihfftn) with their
gradients, distributions built from Python numbers (a ``Normal(0., 1.)`` prior) meeting Arrays
on another device in log_prob/cdf/kl_divergence, log_prob of integer values keeping the
parameters' dtype, kl_divergence of two TransformedDistributions, and torch.func's
``stack_module_state`` (model ensembling with vmap) and ``linearize``.
"""
import numpy as np
import pytest

import grilly as gp
from grilly import distributions as gd
from grilly import func as gfn
from grilly import nn
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
D = torch.distributions

_RS = np.random.RandomState(0)
X3 = _RS.randn(2, 4, 6).astype(np.float32)
Z3 = (_RS.randn(2, 4, 6) + 1j * _RS.randn(2, 4, 6)).astype(np.complex64)


def _g(a, device, grad=False):
    x = gp.asarray(np.asarray(a), device=device)
    return x.requires_grad_() if grad else x


def _t(a, grad=False):
    return torch.tensor(np.asarray(a), requires_grad=grad)


def _close(g, t, tol=1e-4):
    assert_close(g, t.detach().resolve_conj().numpy(), rtol=tol, atol=tol)


def _check_fft(device, name, inp, kw):
    """grilly.fft.<name>(x, **kw) and its gradient equal torch.fft's."""
    gx, tx = _g(inp, device, True), _t(inp, True)
    gy, ty = getattr(gp.fft, name)(gx, **kw), getattr(torch.fft, name)(tx, **kw)
    assert gy.device == gx.device
    _close(gy, ty)
    w = _RS.randn(*ty.shape).astype(np.float32)
    if ty.is_complex():   # a real loss of the complex result: |y| weighted
        (gp.sum(gp.abs(gy) * _g(w, device))).backward()
        (ty.abs() * _t(w)).sum().backward()
    else:
        (gp.sum(gy * _g(w, device))).backward()
        (ty * _t(w)).sum().backward()
    _close(gx.grad, tx.grad, 1e-3)


# ---- torch.fft's spellings ---------------------------------------------------------------------
@pytest.mark.parametrize("name,inp,kw", [
    ("fft", Z3, {"n": 5, "dim": 1, "norm": "ortho"}),
    ("irfft", Z3, {"n": 7, "dim": 1, "norm": "forward"}),
    ("ihfft", X3, {"n": 5, "dim": 1, "norm": None}),
    ("fftn", Z3, {"s": (3, 5), "dim": (0, -1), "norm": None}),
    ("irfftn", Z3, {"dim": (0, 2), "norm": "ortho"}),
])
def test_fft_dim_and_norm_none_as_torch(device, name, inp, kw):
    _check_fft(device, name, inp, kw)


@pytest.mark.parametrize("name,inp,kw", [
    ("fft2", Z3, {}),
    ("ifft2", Z3, {"s": (3, 5), "norm": "ortho"}),
    ("rfft2", X3, {"dim": (0, 2)}),
    ("irfft2", Z3, {"s": (3, 5), "dim": (0, -1), "norm": "forward"}),
    ("hfft2", Z3, {"dim": (0, 2), "norm": None}),
    ("ihfftn", X3, {"s": (3, 5), "dim": (0, -1), "norm": "forward"}),
])
def test_fft_two_axis_and_hermitian_n_forms_as_torch(device, name, inp, kw):
    _check_fft(device, name, inp, kw)


def test_fft_positional_shift_dim_and_errors(device):
    gz, tz = _g(Z3, device), _t(Z3)
    _close(gp.fft.fft(gz, 5, 1, "ortho"), torch.fft.fft(tz, 5, 1, "ortho"))
    _close(gp.fft.fft2(gz, (3, 3), (0, 1)), torch.fft.fft2(tz, (3, 3), (0, 1)))
    _close(gp.fft.fftshift(gz, dim=1), torch.fft.fftshift(tz, dim=1))
    _close(gp.fft.ifftshift(gz, dim=(0, 2)), torch.fft.ifftshift(tz, dim=(0, 2)))
    with pytest.raises(TypeError, match="fft: got both axis and dim"):
        gp.fft.fft(gz, axis=0, dim=1)
    with pytest.raises(TypeError, match="fft2: got both axes and dim"):
        gp.fft.fft2(gz, axes=(0, 1), dim=(0, 1))
    with pytest.raises(TypeError, match="keepdim"):
        gp.fft.fft(gz, keepdim=True)
    with pytest.raises(ValueError, match="norm"):
        gp.fft.fft2(gz, norm="bad")


# ---- distributions built from numbers meet Arrays on another device ---------------------------
LOC = _RS.randn(2, 3).astype(np.float32)
SCALE = _RS.uniform(0.5, 2.0, (2, 3)).astype(np.float32)


def test_number_prior_follows_the_value_device(device):
    """A VAE's prior: Normal(0., 1.).log_prob(z) and kl_divergence(q, Normal(0., 1.)) for z and
    q's parameters on the device, their gradients as torch's."""
    gl, gs, tl, ts = (_g(LOC, device, True), _g(SCALE, device, True), _t(LOC, True),
                      _t(SCALE, True))
    q, tq = gd.Normal(gl, gs), D.Normal(tl, ts)
    z = _g(LOC * 0.5, device)
    lp = gd.Normal(0.0, 1.0).log_prob(z)
    assert lp.device == z.device
    _close(lp, D.Normal(0.0, 1.0).log_prob(_t(LOC * 0.5)))
    _close(gd.Normal(0.0, 2.0).cdf(z), D.Normal(0.0, 2.0).cdf(_t(LOC * 0.5)))
    _close(gd.Uniform(-3.0, 3.0).log_prob(z), D.Uniform(-3.0, 3.0).log_prob(_t(LOC * 0.5)))
    _close(gd.Laplace(0.0, 1.0).icdf(_g(np.full((2, 3), 0.3, np.float32), device)),
           D.Laplace(0.0, 1.0).icdf(_t(np.full((2, 3), 0.3, np.float32))))
    kl = gd.kl_divergence(q, gd.Normal(0.0, 1.0))
    tkl = D.kl_divergence(tq, D.Normal(0.0, 1.0))
    _close(kl, tkl)
    # the other order, and through Independent and an expanded prior
    _close(gd.kl_divergence(gd.Normal(0.0, 1.0), q), D.kl_divergence(D.Normal(0.0, 1.0), tq))
    ikl = gd.kl_divergence(gd.Independent(q, 1),
                           gd.Independent(gd.Normal(0.0, 1.0).expand((2, 3)), 1))
    tikl = D.kl_divergence(D.Independent(tq, 1),
                           D.Independent(D.Normal(0.0, 1.0).expand((2, 3)), 1))
    _close(ikl, tikl)
    (gp.sum(kl) + gp.sum(ikl)).backward()
    (tkl.sum() + tikl.sum()).backward()
    _close(gl.grad, tl.grad)
    _close(gs.grad, ts.grad)
    # a transformed number prior (host AffineTransform) too
    td = gd.TransformedDistribution(gd.Normal(0.0, 1.0), [gd.AffineTransform(1.0, 2.0),
                                                          gd.ExpTransform()])
    ttd = D.TransformedDistribution(D.Normal(0.0, 1.0), [D.AffineTransform(1.0, 2.0),
                                                         D.ExpTransform()])
    _close(td.log_prob(_g(SCALE, device)), ttd.log_prob(_t(SCALE)))
    # a distribution given Arrays keeps them where they are: a value elsewhere is an error
    other = "cpu" if str(device) != "cpu" else None
    if other is not None:
        with pytest.raises(ValueError, match="different devices"):
            q.log_prob(gp.asarray(LOC, device=other))


def test_log_prob_of_integer_values_keeps_the_dtype(device):
    """An integer (or bool) value takes the parameters' float32, as torch's log_prob."""
    v = np.array([[0, 1, 2], [1, 0, 3]])
    for g, t, val in [(gd.Normal(_g(LOC, device), 1.0), D.Normal(_t(LOC), 1.0), v),
                      (gd.Poisson(_g(SCALE, device)), D.Poisson(_t(SCALE)), v),
                      (gd.Gamma(_g(SCALE, device), 2.0), D.Gamma(_t(SCALE), 2.0), v + 1)]:
        lp, tlp = g.log_prob(_g(val, device)), t.log_prob(_t(val))
        assert lp.dtype == gp.float32 and tlp.dtype == torch.float32
        _close(lp, tlp)
    # category indices stay indices
    idx = np.array([2, 0])
    _close(gd.Categorical(logits=_g(LOC, device)).log_prob(_g(idx, device)),
           D.Categorical(logits=_t(LOC)).log_prob(_t(idx)))


def test_kl_of_transformed_distributions_as_torch(device):
    gl, tl = _g(LOC, device, True), _t(LOC, True)

    def pair(M, loc, scale, **kw):
        return M.TransformedDistribution(M.Normal(loc, scale),
                                         [M.AffineTransform(0.5, 2.0), M.SigmoidTransform()])
    kl = gd.kl_divergence(pair(gd, gl, 1.5), pair(gd, _g(SCALE, device), 0.7))
    tkl = D.kl_divergence(pair(D, tl, 1.5), D.TransformedDistribution(
        D.Normal(_t(SCALE), 0.7), [D.AffineTransform(0.5, 2.0), D.SigmoidTransform()]))
    _close(kl, tkl)
    gp.sum(kl).backward()
    tkl.sum().backward()
    _close(gl.grad, tl.grad)
    with pytest.raises(NotImplementedError, match="transforms differ"):
        gd.kl_divergence(gd.TransformedDistribution(gd.Normal(gl, 1.0), [gd.ExpTransform()]),
                         gd.TransformedDistribution(gd.Normal(gl, 1.0), [gd.TanhTransform()]))


# ---- torch.func: model ensembling and linearize ----------------------------------------------
def test_stack_module_state_ensemble_as_torch(device):
    torch.manual_seed(0)
    tms = [torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Tanh(),
                               torch.nn.Linear(4, 2)) for _ in range(3)]
    gms = []
    for tm in tms:
        gm = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Tanh(), nn.Linear(4, 2))
        gm.load_state_dict({k: gp.asarray(v.numpy()) for k, v in tm.state_dict().items()})
        gms.append(gm.to(device).eval())
        tm.eval()
    gp_, gb = gfn.stack_module_state(gms)
    tp, tb = torch.func.stack_module_state(tms)
    assert list(gp_) == list(tp) and list(gb) == list(tb)
    for k in tp:
        assert gp_[k].requires_grad and gp_[k].grad_fn is None   # new leaves, as torch's
        _close(gp_[k], tp[k])
    for k in tb:
        _close(gb[k], tb[k])
    x = _RS.randn(5, 3).astype(np.float32)
    gout = gfn.vmap(lambda p, b, x: gfn.functional_call(gms[0], (p, b), (x,)),
                    in_dims=(0, 0, None))(gp_, gb, _g(x, device))
    tout = torch.func.vmap(lambda p, b, x: torch.func.functional_call(tms[0], (p, b), (x,)),
                           in_dims=(0, 0, None))(tp, tb, _t(x))
    _close(gout, tout)
    gp.sum(gout * gout).backward()
    (tout * tout).sum().backward()
    for k in tp:
        _close(gp_[k].grad, tp[k].grad)
    with pytest.raises(RuntimeError, match="at least one model"):
        gfn.stack_module_state([])
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        gfn.stack_module_state([gms[0], gms[1].train()])
    with pytest.raises(RuntimeError, match="same class"):
        gfn.stack_module_state([nn.Linear(3, 4), nn.Sequential(nn.Linear(3, 4))])


def test_linearize_as_torch(device):
    w = _RS.randn(4, 3).astype(np.float32)
    x, v1, v2 = (_RS.randn(3).astype(np.float32) for _ in range(3))
    gw, tw = _g(w, device), _t(w)
    out, jvp_fn = gfn.linearize(lambda x: gp.sin(gw @ x), _g(x, device))
    tout, tjvp_fn = torch.func.linearize(lambda x: torch.sin(tw @ x), _t(x))
    _close(out, tout)
    for v in (v1, v2):   # the linear map, applied more than once
        _close(jvp_fn(_g(v, device)), tjvp_fn(_t(v)))
    with pytest.raises(ValueError, match="expected 1 tangents"):
        jvp_fn(_g(v1, device), _g(v2, device))


def test_fft_of_integers_and_bools_as_numpy(device):
    """An integer or bool signal transforms as its float64 values (NumPy's fft, and torch's,
    take them; it was a TypeError): results and dtypes as NumPy's."""
    h = np.arange(-3, 5)
    for name in ("fft", "ifft", "rfft", "ihfft", "fftn", "rfftn", "hfft"):
        got = getattr(gp.fft, name)(gp.asarray(h, device=device))
        want = getattr(np.fft, name)(h)
        assert got.dtype.name == want.dtype.name, name
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    b = np.array([True, False, True])
    np.testing.assert_allclose(np.asarray(gp.fft.fft(gp.asarray(b, device=device))),
                               np.fft.fft(b), rtol=1e-12, atol=1e-12)


def test_host_values_outside_the_support_raise_as_torch(device):
    """Uniform(0., 1.).log_prob(2.0) and .cdf(2.0) are ValueErrors (torch validates the
    support; grilly returned -inf and 1.0), values on the closed interval's ends are accepted
    as torch's interval, and an error from cdf names cdf (it said log_prob)."""
    from grilly.distributions import Exponential, Uniform
    tdist = torch.distributions
    u, tu = Uniform(0., 1.), tdist.Uniform(0., 1.)
    for op in ("log_prob", "cdf"):
        with pytest.raises(ValueError):
            getattr(tu, op)(torch.tensor(2.0))
        with pytest.raises(ValueError, match=f"Uniform.{op}: expected value to be within"):
            getattr(u, op)(2.0)
        for v in (0.0, 0.25, 1.0):
            np.testing.assert_allclose(np.asarray(getattr(u, op)(v)),
                                       getattr(tu, op)(torch.tensor(v)).numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="Exponential.cdf: expected value to be within"):
        Exponential(1.).cdf(-1.0)
    # Array values are not read back for the check (as documented): torch's result there
    z = gp.asarray(np.array([0.5], np.float32), device=device)
    np.testing.assert_allclose(np.asarray(Uniform(0., 1.).cdf(z)), [0.5])
