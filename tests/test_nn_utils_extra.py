"""grilly.nn.utils (clip_grad norms, functional_call, skip_init, conv/linear + BatchNorm fusion,
legacy weight_norm / spectral_norm, parametrize and parametrizations) and nn.init (dirac_,
sparse_, fans) against torch (a test-only oracle), values and gradients on every device."""
import copy
import math
import pickle
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly import nn, optim
from grilly.nn.utils import parametrizations as PZ
from grilly.nn.utils import parametrize as P
from grilly.nn.utils.stateless import functional_call
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
RTOL, ATOL = 1e-4, 1e-5


def _np(t):
    return t.detach().numpy()


def _g(x, device, requires_grad=False):
    a = gp.asarray(_np(x) if hasattr(x, "detach") else x, device=device)
    if requires_grad:
        a.requires_grad_()
    return a


def _close(a, e, rtol=RTOL, atol=ATOL):
    assert_close(a, _np(e) if hasattr(e, "detach") else e, rtol=rtol, atol=atol)


def _copy(tmod, gmod, device):
    gmod.to(device)
    res = gmod.load_state_dict({k: _np(v) for k, v in tmod.state_dict().items()})
    assert res.missing_keys == [] and res.unexpected_keys == []


def _backward_both(t, g, device, seed=1):
    torch.manual_seed(seed)
    cot = torch.randn(t.shape)
    (t * cot).sum().backward()
    gp.sum(g * _g(cot, device)).backward()


def _grads_match(tmod, gmod):
    tp, gpn = dict(tmod.named_parameters()), dict(gmod.named_parameters())
    assert list(gpn) == list(tp)
    for name, p in gpn.items():
        _close(p.grad, tp[name].grad)


# ---- clip_grad: get_total_norm, clip_grads_with_norm_, clip_grad_norm -----------------------
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
def test_get_total_norm_and_clip_grads_with_norm(device, norm_type):
    torch.manual_seed(0)
    ts = [torch.randn(3, 4), torch.randn(5), torch.randn(2, 2, 2)]
    gs = [_g(t, device) for t in ts]
    tn = torch.nn.utils.get_total_norm(ts, norm_type)
    gn = nn.utils.get_total_norm(gs, norm_type, foreach=None)
    assert gn.shape == ()
    _close(gn, tn)
    tps = [torch.nn.Parameter(torch.randn(t.shape)) for t in ts]
    gps = [nn.Parameter(_g(p, device)) for p in tps]
    for tp, gpar, t, g in zip(tps, gps, ts, gs):
        tp.grad, gpar.grad = t.clone() * 3, g * 3
    torch.nn.utils.clip_grads_with_norm_(tps, 1.5, tn * 3)
    assert nn.utils.clip_grads_with_norm_(gps, 1.5, gn * 3) is None
    for tp, gpar in zip(tps, gps):
        _close(gpar.grad, tp.grad)


def test_get_total_norm_edge_cases(device):
    assert float(nn.utils.get_total_norm([])) == 0.0
    x = _g(np.array([3.0, 4.0], np.float32), device)
    assert float(nn.utils.get_total_norm(x)) == pytest.approx(5.0)   # one array
    bad = _g(np.array([1.0, np.inf], np.float32), device)
    assert math.isinf(float(nn.utils.get_total_norm([bad])))
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.get_total_norm([bad], error_if_nonfinite=True)
    with pytest.raises(TypeError, match="get_total_norm"):
        nn.utils.get_total_norm([np.ones(3)])
    p = nn.Parameter(_g(np.ones(2, np.float32), device))
    nn.utils.clip_grads_with_norm_([p], 1.0, gp.asarray(2.0, device=device))   # no grads: no-op
    assert p.grad is None


def test_clip_grad_norm_deprecated_alias_and_foreach(device):
    torch.manual_seed(0)
    tp = torch.nn.Parameter(torch.randn(4, 3))
    tp.grad = torch.randn(4, 3) * 5
    gpar = nn.Parameter(_g(tp, device))
    gpar.grad = _g(tp.grad, device)
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        gn = nn.utils.clip_grad_norm(gpar, 1.0, foreach=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tn = torch.nn.utils.clip_grad_norm(tp, 1.0)
    _close(gn, tn)
    _close(gpar.grad, tp.grad)
    nn.utils.clip_grad_value_(gpar, 0.01, foreach=False)
    assert float(gp.max(gp.abs(gpar.grad))) <= 0.01 + 1e-7
    assert nn.utils.convert_parameters.parameters_to_vector is nn.utils.parameters_to_vector
    assert nn.utils.clip_grad.clip_grad_norm_ is nn.utils.clip_grad_norm_


# ---- stateless.functional_call ---------------------------------------------------------------
class _TNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.bn = torch.nn.BatchNorm1d(3)

    def forward(self, x, scale=1.0):
        return self.bn(self.fc(x)) * scale


class _GNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x, scale=1.0):
        return self.bn(self.fc(x)) * scale


def test_functional_call_values_gradients_and_restores(device):
    torch.manual_seed(0)
    tm, gm = _TNet(), _GNet()
    _copy(tm, gm, device)
    before = {k: np.asarray(v).copy() for k, v in gm.state_dict().items()}
    tw, tb = torch.randn(3, 4, requires_grad=True), torch.randn(3, requires_grad=True)
    trm = torch.randn(3)
    gw, gb = _g(tw, device, True), _g(tb, device, True)
    x = torch.randn(5, 4)
    tm.eval(), gm.eval()
    t = torch.func.functional_call(tm, {"fc.weight": tw, "fc.bias": tb, "bn.running_mean": trm},
                                   (x,), {"scale": 2.0})
    g = functional_call(gm, {"fc.weight": gw, "fc.bias": gb,
                             "bn.running_mean": _g(trm, device)}, (_g(x, device),),
                        {"scale": 2.0})
    _close(g, t)
    _backward_both(t, g, device)
    _close(gw.grad, tw.grad)
    _close(gb.grad, tb.grad)
    assert gm.fc.weight.grad is None   # the module's own parameters took no part
    for k, v in gm.state_dict().items():
        np.testing.assert_array_equal(np.asarray(v), before[k])
    assert gm.fc._parameters["weight"] is not gw
    # a single non-tuple argument; a list of dicts
    g1 = functional_call(gm, [{"fc.weight": gw}, {"fc.bias": gb}], _g(x, device))
    t1 = torch.func.functional_call(tm, ({"fc.weight": tw}, {"fc.bias": tb}), x)
    _close(g1, t1)


def test_functional_call_tied_weights_strict_and_errors(device):
    lin, lin2 = nn.Linear(3, 3, bias=False).to(device), nn.Linear(3, 3, bias=False)
    lin2.weight = lin.weight
    seq = nn.Sequential(lin, lin2)   # the same weight under '0.weight' and '1.weight'
    w = _g(np.eye(3, dtype=np.float32) * 2, device)
    x = _g(np.ones((1, 3), np.float32), device)
    _close(functional_call(seq, {"0.weight": w}, (x,)), np.full((1, 3), 4.0, np.float32))
    assert not np.allclose(np.asarray(functional_call(seq, {"0.weight": w}, (x,),
                                                      tie_weights=False)), 4.0)
    with pytest.raises(ValueError, match="tied"):
        functional_call(seq, {"0.weight": w, "1.weight": w * 1}, (x,))
    with pytest.raises(RuntimeError, match="Missing key"):
        functional_call(nn.Linear(3, 2).to(device), {"weight": w[:2]}, (x,), strict=True)
    with pytest.raises(RuntimeError, match="Unexpected key"):
        functional_call(lin, {"weight": w, "foo": w}, (x,), strict=True)
    with pytest.raises(TypeError, match="functional_call"):
        functional_call(lin, 3, (x,))
    assert not hasattr(lin, "foo")
    functional_call(lin, {"foo": w}, (x,))   # an attribute set for the call, then removed
    assert not hasattr(lin, "foo")


def test_skip_init(device):
    m = nn.utils.skip_init(nn.Linear, 6, out_features=2, device=device)
    assert isinstance(m, nn.Linear) and m.weight.shape == (2, 6) and m.weight.device == device
    with pytest.raises(TypeError, match="skip_init"):
        nn.utils.skip_init(lambda: None)

    class NoDevice(nn.Module):
        pass
    with pytest.raises(RuntimeError, match="device"):
        nn.utils.skip_init(NoDevice)


# ---- fusion ----------------------------------------------------------------------------------
def _bn_stats(bn):
    torch.manual_seed(3)
    with torch.no_grad():
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2.0)
        if bn.weight is not None:
            bn.weight.normal_()
            bn.bias.normal_()


@pytest.mark.parametrize("kind", ["conv2d", "conv2d_nobias", "conv_transpose2d", "conv1d",
                                  "linear", "linear_bn1"])
def test_fuse_bn_eval_matches_module_then_bn(device, kind):
    torch.manual_seed(0)
    if kind.startswith("conv2d"):
        tc, tb = torch.nn.Conv2d(3, 4, 3, bias=kind == "conv2d"), torch.nn.BatchNorm2d(4)
        gc, gb = nn.Conv2d(3, 4, 3, bias=kind == "conv2d"), nn.BatchNorm2d(4)
        x = torch.randn(2, 3, 5, 5)
    elif kind == "conv_transpose2d":
        tc, tb = torch.nn.ConvTranspose2d(3, 4, 3), torch.nn.BatchNorm2d(4)
        gc, gb = nn.ConvTranspose2d(3, 4, 3), nn.BatchNorm2d(4)
        x = torch.randn(2, 3, 4, 4)
    elif kind == "conv1d":
        tc, tb = torch.nn.Conv1d(3, 4, 2), torch.nn.BatchNorm1d(4, affine=False)
        gc, gb = nn.Conv1d(3, 4, 2), nn.BatchNorm1d(4, affine=False)
        x = torch.randn(2, 3, 6)
    else:
        nf = 5 if kind == "linear" else 1
        tc, tb = torch.nn.Linear(3, 5), torch.nn.BatchNorm1d(nf)
        gc, gb = nn.Linear(3, 5), nn.BatchNorm1d(nf)
        x = torch.randn(4, 3)
    _bn_stats(tb)
    _copy(tc, gc, device)
    _copy(tb, gb, device)
    for m in (tc, tb, gc, gb):
        m.eval()
    if kind.startswith("linear"):
        tf, gf = torch.nn.utils.fuse_linear_bn_eval(tc, tb), nn.utils.fuse_linear_bn_eval(gc, gb)
        want = tb(tc(x)) if kind == "linear" else tc(x) * (tb.weight / torch.sqrt(
            tb.running_var + tb.eps)) + (tb.bias - tb.running_mean * tb.weight / torch.sqrt(
                tb.running_var + tb.eps))
    else:
        tr = kind == "conv_transpose2d"
        tf = torch.nn.utils.fuse_conv_bn_eval(tc, tb, transpose=tr)
        gf = nn.utils.fuse_conv_bn_eval(gc, gb, transpose=tr)
        want = tb(tc(x))
    assert type(gf) is type(gc) and gf is not gc
    _close(gf(_g(x, device)), want, 1e-4, 1e-4)
    for name, p in gf.named_parameters():
        assert isinstance(p, nn.Parameter)
        _close(p, dict(tf.named_parameters())[name], 1e-5, 1e-5)
        assert p.requires_grad == dict(tf.named_parameters())[name].requires_grad
    # the inputs are unchanged
    _close(gc.weight, tc.weight)


def test_fuse_weights_functions_and_errors(device):
    torch.manual_seed(0)
    cw, rm, rv = torch.randn(4, 2, 3), torch.randn(4), torch.rand(4) + 0.5
    tw, tb = torch.nn.utils.fuse_conv_bn_weights(cw, None, rm, rv, 1e-5, None, None)
    gw, gb = nn.utils.fuse_conv_bn_weights(_g(cw, device), None, _g(rm, device), _g(rv, device),
                                           1e-5, None, None)
    _close(gw, tw)
    _close(gb, tb)
    lw, bw, bb = torch.randn(4, 3), torch.randn(4), torch.randn(4)
    tw, tb = torch.nn.utils.fuse_linear_bn_weights(lw, None, rm, rv, 1e-3, bw, bb)
    gw, gb = nn.utils.fuse_linear_bn_weights(*[_g(t, device) for t in (lw,)], None,
                                             *[_g(t, device) for t in (rm, rv)], 1e-3,
                                             _g(bw, device), _g(bb, device))
    _close(gw, tw)
    _close(gb, tb)
    conv, bn = nn.Conv2d(2, 4, 1), nn.BatchNorm2d(4)
    with pytest.raises(AssertionError, match="eval"):
        nn.utils.fuse_conv_bn_eval(conv, bn)
    with pytest.raises(ValueError, match="eval"):
        nn.utils.fuse_conv_bn_eval(conv.eval(), bn.train())
    with pytest.raises(ValueError, match="out_features"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(4).eval())
    with pytest.raises(ValueError, match="running statistics"):
        nn.utils.fuse_conv_bn_eval(conv.eval(), nn.BatchNorm2d(4, track_running_stats=False).eval())


# ---- nn.init: dirac_, sparse_, fans, deprecated spellings ------------------------------------
@pytest.mark.parametrize("shape,groups", [((4, 4, 3), 1), ((6, 2, 3, 3), 2), ((4, 6, 2, 3), 1),
                                          ((2, 3, 3, 3, 3), 1), ((6, 4, 3, 3), 3)])
def test_dirac_matches_torch(device, shape, groups):
    t = torch.nn.init.dirac_(torch.empty(shape), groups)
    g = gp.full(shape, 7.0, dtype=gp.float32, device=device)
    assert nn.init.dirac_(g, groups) is g
    _close(g, t, 0, 0)


def test_dirac_conv_is_identity_and_errors(device):
    x = gp.asarray(np.random.default_rng(0).normal(size=(1, 3, 5, 5)).astype(np.float32),
                   device=device)
    conv = nn.Conv2d(3, 3, 3, padding=1, bias=False).to(device)
    nn.init.dirac_(conv.weight)
    _close(conv(x), np.asarray(x))
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        nn.init.dirac_(gp.zeros((3, 3)))
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.init.dirac_(gp.zeros((3, 3, 3)), groups=2)


@pytest.mark.parametrize("sparsity", [0.1, 0.5, 0.0])
def test_sparse_statistics_and_seed(device, sparsity):
    rows, cols = 40, 30
    gp.random.seed(5)
    w = nn.init.sparse_(gp.empty((rows, cols), dtype=gp.float32, device=device), sparsity, std=0.5)
    a = np.asarray(w)
    nz = math.ceil(sparsity * rows)
    np.testing.assert_array_equal((a == 0).sum(axis=0), np.full(cols, nz))
    vals = a[a != 0]
    assert abs(vals.std() - 0.5) < 0.06 and abs(vals.mean()) < 0.06
    if nz:   # the zero rows differ between columns (not one fixed set)
        assert len({tuple(np.flatnonzero(a[:, c] == 0)) for c in range(cols)}) > cols // 2
    gp.random.seed(5)
    b = np.asarray(nn.init.sparse_(gp.empty((rows, cols), dtype=gp.float32, device=device),
                                   sparsity, std=0.5))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="2 dimensions"):
        nn.init.sparse_(gp.empty((3, 3, 3)), 0.1)


def test_init_fans_gain_and_deprecated_spellings(device):
    for shape in [(3, 4), (5, 2, 3), (4, 3, 2, 2)]:
        assert nn.init._calculate_fan_in_and_fan_out(gp.empty(shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert nn.init._calculate_correct_fan(gp.empty((4, 3, 2)), "fan_out") == 8
    with pytest.raises(ValueError, match="fewer than 2"):
        nn.init._calculate_fan_in_and_fan_out(gp.empty((3,)))
    with pytest.raises(ValueError, match="not supported"):
        nn.init._calculate_correct_fan(gp.empty((3, 3)), "fan")
    for nl in ["linear", "conv2d", "sigmoid", "tanh", "relu", "selu", "leaky_relu"]:
        assert nn.init.calculate_gain(nl) == pytest.approx(torch.nn.init.calculate_gain(nl))
    x = gp.empty((3, 4), dtype=gp.float32, device=device)
    with pytest.warns(FutureWarning, match="nn.init.constant_"):
        nn.init.constant(x, 2.0)
    assert float(gp.min(x)) == 2.0
    with pytest.warns(FutureWarning, match="xavier_uniform_"):
        nn.init.xavier_uniform(x)


# ---- weight_norm / spectral_norm: legacy hooks and parametrizations --------------------------
def _layer(kind):
    if kind == "linear":
        return torch.nn.Linear(4, 3), nn.Linear(4, 3), torch.randn(5, 4)
    return torch.nn.Conv2d(2, 3, 2), nn.Conv2d(2, 3, 2), torch.randn(2, 2, 4, 4)


def _train_steps(tm, gm, x, device, steps=3):
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    gopt = optim.SGD(list(gm.parameters()), lr=0.1)
    gx = _g(x, device)
    for _ in range(steps):
        topt.zero_grad()
        gopt.zero_grad()
        (tm(x) ** 2).sum().backward()
        gp.sum(gm(gx) ** 2).backward()
        topt.step()
        gopt.step()
    for k, v in gm.state_dict().items():
        _close(v, tm.state_dict()[k], 1e-4, 1e-5)


@pytest.mark.parametrize("kind", ["linear", "conv2d"])
@pytest.mark.parametrize("param", [False, True])
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_values_gradients_training(device, kind, param, dim):
    torch.manual_seed(0)
    tm, gm, x = _layer(kind)
    if param:
        tm = torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
        gm = PZ.weight_norm(gm, dim=dim)
        keys = ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
        assert type(gm).__name__ == "Parametrized" + ("Linear" if kind == "linear" else "Conv2d")
        assert P.is_parametrized(gm, "weight") and not P.is_parametrized(gm, "bias")
    else:
        with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
            tm = torch.nn.utils.weight_norm(tm, dim=dim)
        with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
            gm = nn.utils.weight_norm(gm, dim=dim)
        keys = ["bias", "weight_g", "weight_v"]
    assert list(tm.state_dict()) == keys and list(gm.state_dict()) == keys
    for k in keys:
        assert gm.state_dict()[k].shape == tuple(tm.state_dict()[k].shape)
    _copy(tm, gm, device)
    gx = _g(x, device, True)
    tx = x.clone().requires_grad_()
    t, g = tm(tx), gm(gx)
    _close(g, t)
    _close(gm.weight, tm.weight)
    _backward_both(t, g, device)
    _close(gx.grad, tx.grad)
    _grads_match(tm, gm)
    _train_steps(tm, gm, x, device)
    # removing keeps the current weight as one parameter
    if param:
        torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
        P.remove_parametrizations(gm, "weight")
        assert type(gm) is (nn.Linear if kind == "linear" else nn.Conv2d)
    else:
        torch.nn.utils.remove_weight_norm(tm)
        nn.utils.remove_weight_norm(gm)
    assert list(gm.state_dict()) == list(tm.state_dict())
    assert isinstance(gm.weight, nn.Parameter)
    _close(gm(_g(x, device)), tm(x))


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_legacy_weight_norm_errors(device):
    m = nn.utils.weight_norm(nn.Linear(3, 2).to(device))
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        nn.utils.weight_norm(m)
    with pytest.raises(ValueError, match="weight_norm of 'bias' not found"):
        nn.utils.remove_weight_norm(m, "bias")
    with pytest.raises(ValueError, match="no parameter 'foo'"):
        nn.utils.weight_norm(nn.Linear(3, 2), "foo")
    m2 = copy.deepcopy(m)   # a copy keeps working, hook included
    _close(m2(gp.ones((1, 3), device=device)), np.asarray(m(gp.ones((1, 3), device=device))))


@pytest.mark.parametrize("kind", ["linear", "conv2d", "conv_transpose2d"])
@pytest.mark.parametrize("param", [False, True])
def test_spectral_norm_values_gradients_power_iteration(device, kind, param):
    torch.manual_seed(0)
    if kind == "conv_transpose2d":
        tm, gm, x = torch.nn.ConvTranspose2d(3, 2, 2), nn.ConvTranspose2d(3, 2, 2), \
            torch.randn(2, 3, 3, 3)
    else:
        tm, gm, x = _layer(kind)
    if param:
        tm = torch.nn.utils.parametrizations.spectral_norm(tm, n_power_iterations=2)
        gm = PZ.spectral_norm(gm, n_power_iterations=2)
        keys = ["bias", "parametrizations.weight.original", "parametrizations.weight.0._u",
                "parametrizations.weight.0._v"]
        u_key = "parametrizations.weight.0._u"
    else:
        tm = torch.nn.utils.spectral_norm(tm, n_power_iterations=2)
        gm = nn.utils.spectral_norm(gm, n_power_iterations=2)
        keys = ["bias", "weight_orig", "weight_u", "weight_v"]
        u_key = "weight_u"
    assert list(tm.state_dict()) == keys and list(gm.state_dict()) == keys
    for k in keys:
        assert gm.state_dict()[k].shape == tuple(tm.state_dict()[k].shape)
    _copy(tm, gm, device)
    # training mode: the power iteration updates u and v, as torch's
    gx = _g(x, device, True)
    tx = x.clone().requires_grad_()
    t, g = tm(tx), gm(gx)
    _close(g, t)
    _close(gm.state_dict()[u_key], tm.state_dict()[u_key])
    _backward_both(t, g, device)
    _close(gx.grad, tx.grad)
    _grads_match(tm, gm)
    # eval mode: u and v stay
    tm.eval(), gm.eval()
    u0 = np.asarray(gm.state_dict()[u_key]).copy()
    _close(gm(_g(x, device)), tm(x))
    np.testing.assert_array_equal(np.asarray(gm.state_dict()[u_key]), u0)
    tm.train(), gm.train()
    _train_steps(tm, gm, x, device, steps=2)
    if param:
        torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
        P.remove_parametrizations(gm, "weight")
    else:
        torch.nn.utils.remove_spectral_norm(tm)
        nn.utils.remove_spectral_norm(gm)
    assert sorted(gm.state_dict()) == sorted(tm.state_dict())
    _close(gm.weight, tm.weight)


def test_spectral_norm_normalizes_and_errors(device):
    gp.random.seed(0)
    m = PZ.spectral_norm(nn.Linear(6, 5).to(device))
    for _ in range(30):
        m.weight   # each access in training mode does one power step
    s = np.linalg.svd(np.asarray(m.weight), compute_uv=False)
    assert s[0] == pytest.approx(1.0, rel=1e-3)
    with pytest.raises(ValueError, match="n_power_iterations"):
        nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(RuntimeError, match="two spectral_norm hooks"):
        nn.utils.spectral_norm(nn.utils.spectral_norm(nn.Linear(2, 2)))
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="no parameter or buffer"):
        PZ.spectral_norm(nn.Linear(2, 2), "foo")
    with pytest.raises(IndexError, match="out of range"):
        PZ.spectral_norm(nn.Linear(2, 2), dim=3)


# ---- parametrize -----------------------------------------------------------------------------
class _TSym(torch.nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class _GSym(nn.Module):
    def forward(self, X):
        return gp.triu(X) + gp.matrix_transpose(gp.triu(X, k=1))

    def right_inverse(self, A):
        return gp.triu(A)


class _TScale(torch.nn.Module):
    def forward(self, X):
        return X * 2


class _GScale(nn.Module):
    def forward(self, X):
        return X * 2


def test_register_parametrization_values_gradients_setter(device):
    torch.manual_seed(0)
    tm, gm = torch.nn.Linear(3, 3), nn.Linear(3, 3)
    _copy(tm, gm, device)
    w_obj = gm.weight
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", _TSym())
    assert P.register_parametrization(gm, "weight", _GSym()) is gm
    # the original keeps its identity (an optimizer holding it keeps working)
    assert gm.parametrizations.weight.original is w_obj
    assert isinstance(gm.parametrizations.weight, P.ParametrizationList)
    assert isinstance(gm.parametrizations.weight[0], _GSym)
    assert list(gm.state_dict()) == list(tm.state_dict()) == [
        "bias", "parametrizations.weight.original"]
    _close(gm.parametrizations.weight.original, tm.parametrizations.weight.original)
    _close(gm.weight, tm.weight)
    x = torch.randn(2, 3)
    t, g = tm(x), gm(_g(x, device))
    _close(g, t)
    _backward_both(t, g, device)
    _grads_match(tm, gm)
    # assigning runs right_inverse
    a = torch.randn(3, 3)
    tm.weight = a
    gm.weight = _g(a, device)
    _close(gm.parametrizations.weight.original, tm.parametrizations.weight.original)
    _close(gm.weight, tm.weight)
    # a second parametrization is appended
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", _TScale())
    P.register_parametrization(gm, "weight", _GScale())
    assert len(gm.parametrizations.weight) == 2
    _close(gm.weight, tm.weight)
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        gm.weight = _g(a, device)
    # cached(): computed once within the block
    with P.cached():
        assert gm.weight is gm.weight
    assert gm.weight is not gm.weight
    # a buffer can be parametrized too
    bm = nn.BatchNorm1d(3).to(device)
    P.register_parametrization(bm, "running_var", _GScale())
    assert "parametrizations.running_var.original" in bm.state_dict()
    _close(bm.running_var, np.full(3, 2.0, np.float32))


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(device, leave):
    torch.manual_seed(0)
    tm, gm = torch.nn.Linear(3, 3), nn.Linear(3, 3)
    _copy(tm, gm, device)
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", _TSym())
    P.register_parametrization(gm, "weight", _GSym())
    orig = gm.parametrizations.weight.original
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight", leave_parametrized=leave)
    P.remove_parametrizations(gm, "weight", leave_parametrized=leave)
    assert type(gm) is nn.Linear and not P.is_parametrized(gm)
    assert gm.weight is orig and isinstance(gm.weight, nn.Parameter)
    assert list(gm.state_dict()) == list(tm.state_dict())
    _close(gm.weight, tm.weight)
    assert "parametrizations" not in gm._modules
    with pytest.raises(ValueError, match="does not have a parametrization"):
        P.remove_parametrizations(gm, "weight")
    # a sequence of originals cannot be left unparametrized
    PZ.weight_norm(gm)
    with pytest.raises(ValueError, match="leave_parametrized"):
        P.remove_parametrizations(gm, "weight", leave_parametrized=False)


def test_parametrization_checks_copy_and_pickle(device):
    m = nn.Linear(3, 2).to(device)

    class Shape(nn.Module):
        def forward(self, X):
            return X[:1]
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(m, "weight", Shape())
    assert not P.is_parametrized(m) and type(m) is nn.Linear
    P.register_parametrization(m, "weight", Shape(), unsafe=True)
    assert m.weight.shape == (1, 3)
    with pytest.raises(ValueError, match="does not have a parameter"):
        P.register_parametrization(m, "foo", Shape())
    with pytest.raises(TypeError, match="must be a Module"):
        P.register_parametrization(m, "bias", lambda x: x)
    m2 = copy.deepcopy(m)
    assert type(m2).__name__ == "ParametrizedLinear" and m2.weight.shape == (1, 3)
    assert m2.parametrizations.weight.original is not m.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="state_dict"):
        pickle.dumps(m)
    # a parametrization follows the module's train/eval mode
    s = PZ.spectral_norm(nn.Linear(2, 2))
    s.eval()
    assert not s.parametrizations.weight[0].training
    assert P.type_before_parametrizations(s) is nn.Linear


def test_transfer_parametrizations_and_params(device):
    torch.manual_seed(0)
    t1, t2 = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
    g1, g2 = nn.Linear(3, 3), nn.Linear(3, 3)
    _copy(t1, g1, device)
    _copy(t2, g2, device)
    torch.nn.utils.parametrize.register_parametrization(t1, "weight", _TSym())
    P.register_parametrization(g1, "weight", _GSym())
    torch.nn.utils.parametrize.transfer_parametrizations_and_params(t1, t2)
    assert P.transfer_parametrizations_and_params(g1, g2) is g2
    assert P.is_parametrized(g2, "weight")
    assert g2.parametrizations.weight.original is not g1.parametrizations.weight.original
    _close(g2.weight, t2.weight)
    _close(g2.parametrizations.weight.original, t2.parametrizations.weight.original)
