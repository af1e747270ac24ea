"""grilly.autograd.functional (vjp, jvp, jacobian, hessian, hvp, vhp) against
torch.autograd.functional (a test-only oracle) in float64 on every device: tuple and single
inputs and outputs, create_graph=True results differentiated again, strict-mode errors, and
functions of grilly.nn layers (an MLP, layer norm, cross entropy: ops with double backward)."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.autograd import functional as AF
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TAF = torch.autograd.functional
TF = torch.nn.functional
RTOL = 1e-9


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _g(t, device, requires_grad=False):
    a = gp.asarray(t.detach().numpy(), device=device)
    return a.requires_grad_() if requires_grad else a


def _close(a, e):
    """``a`` (an Array or nested tuples of them) against torch's ``e``, same nesting (torch's
    forward-mode jacobian nests lists where its docs say tuples: grilly gives tuples)."""
    if isinstance(e, (tuple, list)):
        assert isinstance(a, tuple) and len(a) == len(e)
        for x, y in zip(a, e):
            _close(x, y)
        return
    assert isinstance(a, gp.Array), type(a)
    assert a.shape == tuple(e.shape)
    e = e.detach().numpy()
    assert_close(a, e, rtol=RTOL, atol=RTOL * max(1.0, float(np.abs(e).max(initial=0))))


def _rand(*shape):
    return torch.rand(*shape, dtype=torch.float64) + 0.5


# the same functions written for each library: (grilly, torch)
def _two_in_two_out(m):
    return lambda a, b: (m.exp(a) * b[:3], m.sum(a * a) * b)


G2, T2 = _two_in_two_out(gp), _two_in_two_out(torch)


def _scalar(m):
    return lambda a, b: m.sum(m.sin(a) * b[:3] * a) + m.sum(b ** 3)


GS, TS = _scalar(gp), _scalar(torch)


def _args(device, *shapes):
    ts = tuple(_rand(*s) for s in shapes)
    return ts, tuple(_g(t, device) for t in ts)


# ---- values ------------------------------------------------------------------------------------
def test_vjp(device):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))
    tv, gv = _args(device, (3,), (4,))
    out, res = AF.vjp(G2, (ga, gb), gv)
    tout, tres = TAF.vjp(T2, (ta, tb), tv)
    _close(out, tout)
    _close(res, tres)
    assert not any(r.requires_grad for r in (*out, *res))
    # a single input and a scalar output: v may be None, results are not tuples
    out, res = AF.vjp(lambda x: gp.sum(x ** 2), ga)
    tout, tres = TAF.vjp(lambda x: torch.sum(x ** 2), ta)
    _close(out, tout)
    _close(res, tres)


def test_jvp(device):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))
    tv, gv = _args(device, (3,), (4,))
    out, res = AF.jvp(G2, (ga, gb), gv)
    tout, tres = TAF.jvp(T2, (ta, tb), tv)
    _close(out, tout)
    _close(res, tres)
    out, res = AF.jvp(lambda x: gp.exp(x) * 2.0, ga, gv[0])
    tout, tres = TAF.jvp(lambda x: torch.exp(x) * 2.0, ta, tv[0])
    _close(res, tres)


@pytest.mark.parametrize("case", ["tuple_tuple", "tuple_single", "single_tuple", "single_single"])
def test_jacobian_nesting(device, case):
    (ta, tb), (ga, gb) = _args(device, (3,), (2, 2))

    def make(m):
        def f(a, b=None):
            b = (a[:2] + 1.0).reshape(2, 1) * a[1:] if b is None else b
            y1 = m.tanh(a)[:, None] * b.reshape(1, 4)
            y2 = m.sum(a) * b
            return (y1, y2) if case.endswith("tuple") else y1
        return f

    tin = (ta, tb) if case.startswith("tuple") else ta
    gin = (ga, gb) if case.startswith("tuple") else ga
    _close(AF.jacobian(make(gp), gin), TAF.jacobian(make(torch), tin))


@pytest.mark.parametrize("kw", [{"vectorize": True},
                                {"vectorize": True, "strategy": "forward-mode"}])
def test_jacobian_vectorize_and_forward_mode(device, kw):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))
    _close(AF.jacobian(G2, (ga, gb), **kw), TAF.jacobian(T2, (ta, tb), **kw))


def test_jacobian_of_an_mlp(device):
    tmod = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                               torch.nn.Linear(4, 2)).double()
    gmod = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to(device).double()
    gmod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})
    tx = _rand(2, 3)
    _close(AF.jacobian(gmod, _g(tx, device)), TAF.jacobian(tmod, tx))
    # the parameters keep no gradient from it (as torch's)
    assert all(p.grad is None for p in gmod.parameters())
    # the Hessian of a scalar of it (the layers' double backward)
    _close(AF.hessian(lambda x: gp.sum(gmod(x) ** 2), _g(tx, device)),
           TAF.hessian(lambda x: torch.sum(tmod(x) ** 2), tx))


def test_hessian(device):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))
    _close(AF.hessian(GS, (ga, gb)), TAF.hessian(TS, (ta, tb)))
    _close(AF.hessian(lambda x: gp.sum(x ** 3 * gp.exp(x)), ga),
           TAF.hessian(lambda x: torch.sum(x ** 3 * torch.exp(x)), ta))


def test_hessian_outer_forward_mode(device):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))
    kw = {"vectorize": True, "outer_jacobian_strategy": "forward-mode"}
    _close(AF.hessian(GS, (ga, gb), **kw), TAF.hessian(TS, (ta, tb), **kw))


@pytest.mark.parametrize("fn", ["hvp", "vhp"])
def test_hvp_vhp(device, fn):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))
    tv, gv = _args(device, (3,), (4,))
    out, res = getattr(AF, fn)(GS, (ga, gb), gv)
    tout, tres = getattr(TAF, fn)(TS, (ta, tb), tv)
    _close(out, tout)
    _close(res, tres)
    out, res = getattr(AF, fn)(lambda x: gp.sum(gp.exp(x) * x), ga, gv[0])
    tout, tres = getattr(TAF, fn)(lambda x: torch.sum(torch.exp(x) * x), ta, tv[0])
    _close(res, tres)


def test_hessian_of_layers_with_double_backward(device):
    """layer_norm and cross_entropy run fused kernels whose backward is differentiable."""
    tw, tx = _rand(4), _rand(2, 4)
    target = torch.tensor([1, 3])
    gw, gt = _g(tw, device), gp.asarray(target.numpy(), device=device)

    def g(x):
        return F.cross_entropy(F.layer_norm(x, (4,), weight=gw), gt)

    def t(x):
        return TF.cross_entropy(TF.layer_norm(x, (4,), weight=tw), target)

    _close(AF.hessian(g, _g(tx, device)), TAF.hessian(t, tx))
    tv = _rand(2, 4)
    _close(AF.hvp(g, _g(tx, device), _g(tv, device))[1], TAF.hvp(t, tx, tv)[1])


# ---- create_graph=True: the results are differentiable ---------------------------------------
@pytest.mark.parametrize("fn", ["vjp", "jvp", "hvp", "vhp"])
def test_products_with_create_graph(device, fn):
    (ta, tb), _ = _args(device, (3,), (4,))
    tv, _ = _args(device, (3,), (4,))
    f, tf = (GS, TS) if fn in ("hvp", "vhp") else (G2, T2)
    v = tv if fn in ("jvp", "hvp", "vhp") else (_rand(3), _rand(4))
    txs = (ta.clone().requires_grad_(), tb.clone().requires_grad_())
    gxs = (_g(ta, device, True), _g(tb, device, True))
    _, tres = getattr(TAF, fn)(tf, txs, v, create_graph=True)
    _, res = getattr(AF, fn)(f, gxs, tuple(_g(x, device) for x in v), create_graph=True)
    _close(res, tres)
    sum((r ** 2).sum() for r in tres).backward()
    sum(gp.sum(r ** 2) for r in res).backward()
    for gx, tx in zip(gxs, txs):
        _close(gx.grad, tx.grad)


def test_jacobian_and_hessian_with_create_graph(device):
    ta = _rand(3)
    tx, gx = ta.clone().requires_grad_(), _g(ta, device, True)
    tj = TAF.jacobian(lambda x: torch.exp(x) * x.sum(), tx, create_graph=True)
    gj = AF.jacobian(lambda x: gp.exp(x) * gp.sum(x), gx, create_graph=True)
    _close(gj, tj)
    assert gj.requires_grad
    (tj ** 2).sum().backward()
    gp.sum(gj ** 2).backward()
    _close(gx.grad, tx.grad)
    tx.grad, gx.grad = None, None
    th = TAF.hessian(lambda x: torch.sum(torch.sin(x) * x ** 2), tx, create_graph=True)
    gh = AF.hessian(lambda x: gp.sum(gp.sin(x) * x ** 2), gx, create_graph=True)
    _close(gh, th)
    (th ** 2).sum().backward()
    gp.sum(gh ** 2).backward()
    _close(gx.grad, tx.grad)


def test_inputs_are_left_alone(device):
    ga = _g(_rand(3), device)
    AF.jacobian(lambda x: x * 2.0, ga)
    assert not ga.requires_grad and ga.grad is None
    gb = _g(_rand(3), device, True)
    out, res = AF.vjp(lambda x: gp.sum(x * x), gb)
    assert gb.grad is None and not res.requires_grad and not out.requires_grad


# ---- unused inputs, strict mode and bad arguments ---------------------------------------------
def _unused(m):
    return lambda a, b: m.exp(a) * 2.0


def test_unused_input_gives_zeros(device):
    (ta, tb), (ga, gb) = _args(device, (3,), (2,))
    _close(AF.jacobian(_unused(gp), (ga, gb)), TAF.jacobian(_unused(torch), (ta, tb)))
    tv = _rand(3)
    gv = _g(tv, device)
    _close(AF.vjp(_unused(gp), (ga, gb), gv)[1], TAF.vjp(_unused(torch), (ta, tb), tv)[1])
    _close(AF.hessian(lambda a, b: gp.sum(a ** 3), (ga, gb)),
           TAF.hessian(lambda a, b: torch.sum(a ** 3), (ta, tb)))


STRICT = [
    ("jacobian", lambda a, b: a * 2.0, (), "Output 0 of the user-provided function is "
                                           "independent of input 1"),
    ("vjp", lambda a, b: a * 2.0, ("v3",), "independent of input 1"),
    ("vjp", lambda a, b: a.detach(), ("v3",), "Output 0 of the user-provided function does not "
                                              "require gradients"),
    ("jvp", lambda a, b: a * 2.0, ("v32",), "independent of input 1"),
    ("hessian", lambda a, b: gp.sum(a * 2.0) + gp.sum(b), (), "is independent of the input"),
    ("vhp", lambda a, b: gp.sum(a * a), ("v32",), "independent of input 1"),
]


@pytest.mark.parametrize("fn,f,extra,msg", STRICT)
def test_strict_errors(device, fn, f, extra, msg):
    ga, gb = _g(_rand(3), device), _g(_rand(2), device)
    args = []
    for e in extra:
        args.append(_g(_rand(3), device) if e == "v3"
                    else (_g(_rand(3), device), _g(_rand(2), device)))
    with pytest.raises(RuntimeError, match=msg):
        getattr(AF, fn)(f, (ga, gb), *args, strict=True)


def test_strict_errors_match_torch():
    """The strict-mode messages above are torch's (same cases in torch)."""
    ta, tb = _rand(3), _rand(2)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is "
                                           "independent of input 1"):
        TAF.jacobian(lambda a, b: a * 2.0, (ta, tb), strict=True)
    with pytest.raises(RuntimeError, match="is independent of the input"):
        TAF.hessian(lambda a, b: torch.sum(a * 2.0) + torch.sum(b), (ta, tb), strict=True)


def test_bad_arguments(device):
    ga = _g(_rand(3), device)
    with pytest.raises(TypeError, match="inputs given to jacobian must be either an Array"):
        AF.jacobian(lambda x: x, [ga])
    with pytest.raises(TypeError, match="value at index 1 has type"):
        AF.vjp(lambda a, b: a, (ga, 3.0))
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(lambda x: x * 2.0, ga)
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.jvp(lambda x: x * 2.0, ga)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be \(3,\)"):
        AF.vjp(lambda x: x * 2.0, ga, _g(_rand(2), device))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2"):
        AF.vjp(lambda x: (x, x * 2.0), ga, (ga,))
    with pytest.raises(RuntimeError, match="should return a single Array"):
        AF.hessian(lambda x: (gp.sum(x), gp.sum(x)), ga)
    with pytest.raises(RuntimeError, match="should contain a single element"):
        AF.hvp(lambda x: x * x, ga, ga)
    with pytest.raises(ValueError, match="strategy must be 'forward-mode' or 'reverse-mode'"):
        AF.jacobian(lambda x: x, ga, strategy="central")
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        AF.jacobian(lambda x: x, ga, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        AF.jacobian(lambda x: x, ga, strategy="forward-mode", vectorize=True, create_graph=True)
    with pytest.raises(RuntimeError, match="strict=True.*vectorized=True"):
        AF.jacobian(lambda x: x, ga, strict=True, vectorize=True)


def test_exported():
    assert gp.autograd.functional is AF
    assert set(AF.__all__) == {"hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"}
