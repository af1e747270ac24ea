"""grilly.func (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap, functional_call)
against torch.func (a test-only oracle) in float64 on every device: argnums, has_aux, pytree
arguments and results, nested transforms, vmap's in_dims/out_dims/None and nesting, gradients
through vmap, per-sample gradients of an nn.Linear model, randomness, and the errors."""
import numpy as np
import pytest

import grilly as gp
import grilly.func as GF
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TF = torch.func
RTOL = 1e-9


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _g(t, device, requires_grad=False):
    a = gp.asarray(t.detach().numpy(), device=device)
    return a.requires_grad_() if requires_grad else a


def _rand(*shape):
    return torch.rand(*shape, dtype=torch.float64) + 0.5


def _args(device, *shapes):
    ts = tuple(_rand(*s) for s in shapes)
    return ts, tuple(_g(t, device) for t in ts)


def _close(a, e):
    """``a`` (an Array or a pytree of them) against torch's ``e``: the same containers, the
    same values."""
    if isinstance(e, dict):
        assert type(a) is dict and list(a) == list(e), (type(a), a)
        for k in e:
            _close(a[k], e[k])
        return
    if isinstance(e, (tuple, list)):
        assert type(a) is type(e) and len(a) == len(e), (type(a), type(e))
        for x, y in zip(a, e):
            _close(x, y)
        return
    assert isinstance(a, gp.Array), type(a)
    assert a.shape == tuple(e.shape)
    e = e.detach().numpy()
    assert_close(a, e, rtol=RTOL, atol=RTOL * max(1.0, float(np.abs(e).max(initial=0))))


def _tree_g(tree, device):
    """A pytree of torch tensors as the same pytree of grilly Arrays (other leaves as they are)."""
    if isinstance(tree, dict):
        return {k: _tree_g(v, device) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_tree_g(v, device) for v in tree)
    return _g(tree, device) if isinstance(tree, torch.Tensor) else tree


def _requires_grad(tree) -> bool:
    if isinstance(tree, dict):
        tree = tuple(tree.values())
    if isinstance(tree, (tuple, list)):
        return any(_requires_grad(t) for t in tree)
    return tree.requires_grad


# the same functions written for each library
def _scalar(m):
    return lambda a, b: m.sum(m.sin(a) * b[:3] * a) + m.sum(b ** 3)


GS, TS = _scalar(gp), _scalar(torch)


def _multi(m):
    return lambda a, b: {"p": m.exp(a) * b[:3], "q": (m.sum(a * a) * b, m.tanh(b))}


GM, TM = _multi(gp), _multi(torch)


# ---- grad and grad_and_value ---------------------------------------------------------------
@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1,)])
def test_grad_argnums(device, argnums):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))
    g = GF.grad(GS, argnums=argnums)(ga, gb)
    _close(g, TF.grad(TS, argnums=argnums)(ta, tb))
    assert not _requires_grad(g)


def test_grad_and_value_has_aux_and_kwargs(device):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))

    def make(m):
        def f(a, b, *, scale):
            y = m.sum(m.exp(a) * scale)
            return y, {"y2": y * 2.0, "b": b}
        return f

    (g, (v, aux)) = GF.grad_and_value(make(gp), has_aux=True)(ga, gb, scale=3.0)
    (tg, (tv, taux)) = TF.grad_and_value(make(torch), has_aux=True)(ta, tb, scale=3.0)
    _close((g, v, aux), (tg, tv, taux))
    assert not _requires_grad((g, v, aux))
    g, aux = GF.grad(make(gp), argnums=(0, 1), has_aux=True)(ga, gb, scale=3.0)
    tg, taux = TF.grad(make(torch), argnums=(0, 1), has_aux=True)(ta, tb, scale=3.0)
    _close((g, aux), (tg, taux))


def test_grad_of_a_pytree_argument(device):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))

    def make(m):
        return lambda p, c: m.sum(p["w"][0] * p["w"][1][:3] * c) + m.sum(m.log(p["s"][0]))

    tp = {"w": (ta, tb), "s": [tb]}
    _close(GF.grad(make(gp))(_tree_g(tp, device), 2.0), TF.grad(make(torch))(tp, 2.0))


def test_nested_grad(device):
    (ta,), (ga,) = _args(device, (3,))

    def make(m):
        return lambda x: m.sum(m.sin(x) * x ** 3)

    gf, tf = make(gp), make(torch)
    _close(GF.grad(lambda x: gp.sum(GF.grad(gf)(x) ** 2))(ga),
           TF.grad(lambda x: torch.sum(TF.grad(tf)(x) ** 2))(ta))
    # third order, of a scalar function of a 0-d Array
    t0, g0 = ta[1], ga[1]
    _close(GF.grad(GF.grad(GF.grad(lambda x: gp.sin(x) * gp.exp(x))))(g0),
           TF.grad(TF.grad(TF.grad(lambda x: torch.sin(x) * torch.exp(x))))(t0))


def test_inner_grad_differentiated_through_its_closure(device):
    """The inner grad's result depends on the outer argument only through a closure."""
    (ta, tb), (ga, gb) = _args(device, (3,), (3,))

    def make(m, d):
        def outer(x):
            inner = d.grad(lambda y: m.sum(m.sin(x * y) * y))
            return m.sum(inner(tb if m is torch else gb) * x)
        return outer

    _close(GF.grad(make(gp, GF))(ga), TF.grad(make(torch, TF))(ta))


def test_grad_keeps_the_callers_graph(device):
    """An argument that requires grad: the gradient is differentiable by plain autograd."""
    (ta,), (ga,) = _args(device, (3,))
    ta.requires_grad_()
    ga.requires_grad_()
    g = GF.grad(lambda x: gp.sum(gp.exp(x) * x))(ga)
    tg = TF.grad(lambda x: torch.sum(torch.exp(x) * x))(ta)
    _close(g, tg)
    gp.sum(g * g).backward()
    torch.sum(tg * tg).backward()
    _close(ga.grad, ta.grad)


# ---- vjp and jvp -------------------------------------------------------------------------------
def test_vjp(device):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))
    out, fn = GF.vjp(GM, ga, gb)
    tout, tfn = TF.vjp(TM, ta, tb)
    _close(out, tout)
    assert not _requires_grad(out)
    tc = {"p": _rand(3), "q": (_rand(4), _rand(4))}
    gc = {"p": _g(tc["p"], device), "q": (_g(tc["q"][0], device), _g(tc["q"][1], device))}
    _close(fn(gc), tfn(tc))
    _close(fn(gc), tfn(tc))   # the graph is kept for another call
    # has_aux, a single primal
    out, fn, aux = GF.vjp(lambda x: (gp.exp(x), gp.sum(x)), ga, has_aux=True)
    tout, tfn, taux = TF.vjp(lambda x: (torch.exp(x), torch.sum(x)), ta, has_aux=True)
    _close((out, aux, fn(gc["p"])), (tout, taux, tfn(tc["p"])))


def test_jvp(device):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))
    (tu, tv), (gu, gv) = _args(device, (3,), (4,))
    out, jv = GF.jvp(GM, (ga, gb), (gu, gv))
    tout, tjv = TF.jvp(TM, (ta, tb), (tu, tv))
    _close((out, jv), (tout, tjv))
    assert not _requires_grad((out, jv))
    # has_aux, and an output that does not depend on the primal (a zero product)
    res = GF.jvp(lambda x: (gp.exp(x), gp.ones(2, dtype=x.dtype, device=x.device)), (ga,), (gu,))
    tres = TF.jvp(lambda x: (torch.exp(x), torch.ones(2, dtype=x.dtype)), (ta,), (tu,))
    _close(res, tres)
    res = GF.jvp(lambda x: (gp.sin(x), gp.sum(x)), (ga,), (gu,), has_aux=True)
    tres = TF.jvp(lambda x: (torch.sin(x), torch.sum(x)), (ta,), (tu,), has_aux=True)
    _close(res, tres)


def test_grad_of_jvp(device):
    """jvp inside grad: the double-backward trick one level down."""
    (ta, tu), (ga, gu) = _args(device, (3,), (3,))
    _close(GF.grad(lambda x: gp.sum(GF.jvp(gp.sin, (x,), (gu,))[1] * x))(ga),
           TF.grad(lambda x: torch.sum(TF.jvp(torch.sin, (x,), (tu,))[1] * x))(ta))


# ---- Jacobians and Hessians --------------------------------------------------------------------
@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_jacobians(device, jac, argnums):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))
    j = getattr(GF, jac)(GM, argnums=argnums)(ga, gb)
    _close(j, getattr(TF, jac)(TM, argnums=argnums)(ta, tb))
    assert not _requires_grad(j)
    j, aux = getattr(GF, jac)(lambda x: (gp.exp(x) * x[0], x * 2.0), has_aux=True)(ga)
    tj, taux = getattr(TF, jac)(lambda x: (torch.exp(x) * x[0], x * 2.0), has_aux=True)(ta)
    _close((j, aux), (tj, taux))


def test_jacobian_of_a_matrix_function(device):
    (ta,), (ga,) = _args(device, (2, 3))
    _close(GF.jacrev(lambda x: gp.matmul(x, x.T))(ga), TF.jacrev(lambda x: x @ x.T)(ta))


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_hessian(device, argnums):
    (ta, tb), (ga, gb) = _args(device, (3,), (4,))
    _close(GF.hessian(GS, argnums=argnums)(ga, gb), TF.hessian(TS, argnums=argnums)(ta, tb))


def test_hessian_of_an_mlp_loss(device):
    tmod = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                               torch.nn.Linear(4, 2)).double()
    gmod = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to(device).double()
    gmod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})
    tx = _rand(2, 3)
    _close(GF.hessian(lambda x: gp.sum(gmod(x) ** 2))(_g(tx, device)),
           TF.hessian(lambda x: torch.sum(tmod(x) ** 2))(tx))
    assert all(p.grad is None for p in gmod.parameters())


# ---- vmap ----------------------------------------------------------------------------------
def _vm(device, fn, tin, in_dims=0, out_dims=0, **kw):
    """vmap of ``fn(m)`` (written for either library) on torch inputs ``tin``, compared."""
    res = GF.vmap(fn(gp), in_dims, out_dims, **kw)(*_tree_g(tin, device))
    _close(res, TF.vmap(fn(torch), in_dims, out_dims, **kw)(*tin))
    return res


def test_vmap_in_dims_and_out_dims(device):
    tx, ty = _rand(2, 3), _rand(3)
    _vm(device, lambda m: lambda x: m.sum(x * x), (tx,))
    _vm(device, lambda m: lambda x, y: x * y, (tx, ty), in_dims=(0, None))
    _vm(device, lambda m: lambda x, y: x * y, (tx, _rand(3, 2)), in_dims=(-1, 0))
    _vm(device, lambda m: lambda x: m.exp(x)[:, None] * x, (tx,), out_dims=1)
    _vm(device, lambda m: lambda x: (x * 2.0, m.sum(x)), (tx,), out_dims=(-1, 0))
    _vm(device, lambda m: lambda x, y: (x + y, y), (tx, ty), in_dims=(0, None),
        out_dims=(0, None))
    # a non-Array argument, not mapped
    _vm(device, lambda m: lambda x, s: x * s, (tx, 3.0), in_dims=(0, None))


def test_vmap_pytrees(device):
    tx, ty = _rand(2, 3), _rand(3, 2)

    def fn(m):
        return lambda d: {"s": d["a"] * d["b"][0], "t": [m.sum(d["b"][1])]}

    _vm(device, fn, ({"a": tx, "b": (ty.T, ty)},), in_dims=({"a": 0, "b": (0, 1)},))
    _vm(device, fn, ({"a": tx, "b": (ty.T, ty.T)},))


def test_vmap_kwargs_are_not_mapped(device):
    tx, tw = _rand(2, 3), _rand(3)
    gx, gw = _g(tx, device), _g(tw, device)
    _close(GF.vmap(lambda x, *, w: x * w)(gx, w=gw), TF.vmap(lambda x, *, w: x * w)(tx, w=tw))


def test_nested_vmap(device):
    tx, ty = _rand(2, 3), _rand(4, 3)

    def fn(m):
        def dot(a, b):
            return m.sum(a * b)
        d = TF if m is torch else GF
        return d.vmap(d.vmap(dot, in_dims=(None, 0)), in_dims=(0, None))

    _close(fn(gp)(_g(tx, device), _g(ty, device)), fn(torch)(tx, ty))


def test_gradient_through_vmap(device):
    tx, tw = _rand(2, 3), _rand(3)
    gx, gw = _g(tx, device, True), _g(tw, device, True)
    tx.requires_grad_()
    tw.requires_grad_()
    gp.sum(GF.vmap(lambda x, w: gp.sin(x * w) * x[0], in_dims=(0, None))(gx, gw) ** 2).backward()
    torch.sum(TF.vmap(lambda x, w: torch.sin(x * w) * x[0], in_dims=(0, None))(tx, tw) ** 2
              ).backward()
    _close((gx.grad, gw.grad), (tx.grad, tw.grad))
    # and through grad
    (ta,), (ga,) = _args(device, (3,))
    _close(GF.grad(lambda w: gp.sum(GF.vmap(lambda x: gp.sum(gp.exp(x * w)))(gx.detach())))(ga),
           TF.grad(lambda w: torch.sum(TF.vmap(lambda x: torch.sum(torch.exp(x * w)))(
               tx.detach())))(ta))
    # and through per-sample gradients (second order)

    def make(m, d):
        inner = d.grad(lambda w, x: m.sum(m.sin(x * w) * w))
        return d.grad(lambda w, xs: m.sum(d.vmap(inner, in_dims=(None, 0))(w, xs) ** 2))

    _close(make(gp, GF)(ga, gx.detach()), make(torch, TF)(ta, tx.detach()))


def test_per_sample_gradients_of_a_linear_model(device):
    """torch.func's recipe: vmap(grad(loss), in_dims=(None, 0, 0)) with functional_call."""
    tmodel = torch.nn.Linear(3, 2).double()
    gmodel = nn.Linear(3, 2).to(device).double()
    gmodel.load_state_dict({k: v.detach().numpy() for k, v in tmodel.state_dict().items()})
    tx, ty = _rand(5, 3), torch.tensor([0, 1, 1, 0, 1])
    gx, gy = _g(tx, device), gp.asarray(ty.numpy(), device=device)

    def make(model, m, d, fn):
        def loss(params, x, y):
            return fn.cross_entropy(d.functional_call(model, params, (x[None],)), y[None])
        return d.vmap(d.grad(loss), in_dims=(None, 0, 0))

    tparams = {k: v.detach() for k, v in tmodel.named_parameters()}
    gparams = {k: v.detach() for k, v in gmodel.named_parameters()}
    g = make(gmodel, gp, GF, F)(gparams, gx, gy)
    _close(g, make(tmodel, torch, TF, torch.nn.functional)(tparams, tx, ty))
    assert not _requires_grad(g)
    assert all(p.grad is None for p in gmodel.parameters())


def test_functional_call_is_nn_utils_stateless():
    assert GF.functional_call is nn.utils.stateless.functional_call


# ---- randomness ----------------------------------------------------------------------------
def test_vmap_randomness(device):
    x = gp.zeros((3, 4), device=device)

    def noisy(a):
        return a + gp.random.uniform(shape=(4,), device=device)

    with pytest.raises(RuntimeError, match="randomness error mode"):
        GF.vmap(noisy)(x)
    state = gp.random.get_state()
    diff = np.asarray(GF.vmap(noisy, randomness="different")(x))
    assert len({tuple(r) for r in diff}) == 3
    gp.random.set_state(state)
    same = np.asarray(GF.vmap(noisy, randomness="same")(x))
    gp.random.set_state(state)
    once = np.asarray(gp.random.uniform(shape=(4,), device=device))
    # 'same' gives every element the draw a single call makes, 'different' starts there too
    np.testing.assert_array_equal(same, np.broadcast_to(once, (3, 4)))
    np.testing.assert_array_equal(diff[0], once)
    # the generator ends where one call leaves it
    assert gp.random.get_state() != state


# ---- errors --------------------------------------------------------------------------------
def test_vmap_errors(device):
    x, y = gp.ones((2, 3), device=device), gp.ones((3, 3), device=device)
    with pytest.raises(ValueError, match=r"vmap: Expected all Arrays to have the same size in "
                                         r"the mapped dimension, got sizes \[2, 3\]"):
        GF.vmap(lambda a, b: a + b)(x, y)
    with pytest.raises(ValueError, match=r"vmap\(<lambda>, in_dims=\[0\].*expected `in_dims` "
                                         "to be int or a"):
        GF.vmap(lambda a: a, in_dims=[0])(x)
    with pytest.raises(ValueError, match="expected `in_dims` to be int"):
        GF.vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure"):
        GF.vmap(lambda a: a, in_dims=(0, 0))(x)
    with pytest.raises(ValueError, match=r"Got in_dim=2 for some input, but that input is an "
                                         r"Array of dimensionality 2 so expected in_dim to "
                                         r"satisfy -2 <= in_dim < 2"):
        GF.vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="Got in_dim=0 for an input but the input is of type "
                                         "float"):
        GF.vmap(lambda a, s: a * s)(x, 2.0)
    with pytest.raises(ValueError, match="at least one input must be an Array with an in_dim"):
        GF.vmap(lambda a: a, in_dims=(None,))(x)
    with pytest.raises(ValueError, match="`<lambda>` must only return Arrays, got type float"):
        GF.vmap(lambda a: 3.0)(x)
    with pytest.raises(ValueError, match="out_dims is not compatible with the structure"):
        GF.vmap(lambda a: a, out_dims=(0, 1))(x)
    with pytest.raises(IndexError, match="out_dim 3 is out of range"):
        GF.vmap(lambda a: a, out_dims=3)(x)
    with pytest.raises(ValueError, match="mapped dimension has size 0"):
        GF.vmap(lambda a: a)(gp.ones((0, 3), device=device))
    with pytest.raises(ValueError, match="vmap: randomness must be 'error', 'different' or "
                                         "'same', got 'foo'"):
        GF.vmap(lambda a: a, randomness="foo")
    with pytest.raises(ValueError, match="vmap: chunk_size should be None or a positive int"):
        GF.vmap(lambda a: a, chunk_size=0)
    with pytest.raises(ValueError, match="jacrev: chunk_size"):
        GF.jacrev(lambda a: a, chunk_size=-1)
    with pytest.raises(ValueError, match="jacfwd: randomness must be"):
        GF.jacfwd(lambda a: a, randomness="none")


def test_transform_errors(device):
    (_, _), (ga, gb) = _args(device, (3,), (4,))
    with pytest.raises(ValueError, match=r"grad\(f\)\(\*args\): expected f\(\*args\) "
                                         r"to return a 0-d Array, got shape \(3,\)"):
        GF.grad(gp.sin)(ga)
    with pytest.raises(ValueError, match="to return a 0-d Array, got a tuple"):
        GF.grad(lambda a: (gp.sum(a), gp.sum(a)))(ga)
    with pytest.raises(TypeError, match="argnums must be an int or a non-empty tuple of ints, "
                                        r"got \[0\]"):
        GF.grad(GS, argnums=[0])(ga, gb)
    with pytest.raises(TypeError, match=r"non-empty tuple of ints, got \(\)"):
        GF.grad(GS, argnums=())(ga, gb)
    with pytest.raises(ValueError, match="got argnums=2, but only 2 positional inputs"):
        GF.grad(GS, argnums=2)(ga, gb)
    with pytest.raises(ValueError, match=r"argnums must be unique, got \(0, -2\)"):
        GF.grad(GS, argnums=(0, -2))(ga, gb)
    with pytest.raises(TypeError, match=r"output of function f should be a tuple: \(output, "
                                        r"aux\) if has_aux is True"):
        GF.grad(lambda a: gp.sum(a), has_aux=True)(ga)
    with pytest.raises(TypeError, match="grad: only floating-point Arrays can be "
                                        "differentiated, got int64"):
        GF.grad(lambda a: gp.sum(a))(gp.ones(3, dtype=gp.int64, device=device))
    with pytest.raises(TypeError, match="the differentiated arguments must be Arrays .* got "
                                        "float"):
        GF.grad(lambda a: a * 2.0)(2.0)
    with pytest.raises(TypeError, match="vjp: func must return Arrays .* got float"):
        GF.vjp(lambda a: 1.0, ga)
    _, fn = GF.vjp(gp.sin, ga)
    with pytest.raises(ValueError, match=r"vjp_fn: cotangents leaf 0 has shape \(4,\), "
                                         r"expected \(3,\)"):
        fn(gb)
    with pytest.raises(ValueError, match="vjp_fn: expected the cotangents to have the structure"):
        fn((ga,))
    with pytest.raises(TypeError, match="jvp.*expected primals to be a tuple"):
        GF.jvp(gp.sin, ga, ga)
    with pytest.raises(ValueError, match="expected primals and tangents to have the same "
                                         "structure"):
        GF.jvp(gp.sin, (ga,), ga)
    with pytest.raises(ValueError, match=r"jvp: tangents leaf 0 has shape \(4,\)"):
        GF.jvp(gp.sin, (ga,), (gb,))
