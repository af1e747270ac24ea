"""Autograd semantics: accumulation, broadcasting, retain_graph, grad(), grad mode, in-place."""
import threading


import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grilly as gp
from grilly.autograd import Function, grad


def leaf(x, device=None, dtype=None):
    a = gp.asarray(np.asarray(x, dtype=float), device=device, dtype=dtype)
    a.requires_grad = True
    return a


@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-6), ("float64", 1e-12)])
def test_chain_and_accumulation(device, dtype, rtol):
    x = leaf([1.0, 2.0, 3.0], device, getattr(gp, dtype))
    y = gp.sum(x * x) + gp.sum(gp.exp(x))
    y.backward()
    want = 2 * np.array([1, 2, 3.]) + np.exp([1, 2, 3.])
    np.testing.assert_allclose(np.asarray(x.grad), want, rtol=rtol)
    (gp.sum(x) * 2.0).backward()  # accumulates
    np.testing.assert_allclose(np.asarray(x.grad), want + 2, rtol=rtol)
    assert x.is_leaf and not y.is_leaf and y.grad_fn is not None and x.grad.dtype == x.dtype


def test_elementwise_graph_float32(device):
    # no reductions: runs wherever the elementwise kernels do
    x = leaf([0.5, 1.0, 2.0], device, gp.float32)
    w = leaf([2.0, -1.0, 0.5], device, gp.float32)
    y = gp.tanh(x * w) + x / w
    y.backward(gp.ones_like(y))
    xn, wn = np.array([0.5, 1.0, 2.0]), np.array([2.0, -1.0, 0.5])
    t = np.tanh(xn * wn)
    np.testing.assert_allclose(np.asarray(x.grad), (1 - t * t) * wn + 1 / wn, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(w.grad), (1 - t * t) * xn - xn / wn ** 2, rtol=1e-5)
    assert x.grad.device == device


def test_broadcast_reduces_back(device):
    a = leaf(np.ones((3, 1)), device)
    b = leaf(np.arange(4.0), device)
    c = leaf(2.0, device)
    out = a * b + c
    out.backward(gp.ones_like(out))
    np.testing.assert_allclose(np.asarray(a.grad), np.full((3, 1), 6.0))
    np.testing.assert_allclose(np.asarray(b.grad), np.full(4, 3.0))
    assert a.grad.shape == (3, 1) and c.grad.shape == () and float(c.grad) == 12.0


def test_mixed_dtypes_grad_keeps_input_dtype(device):
    x = leaf([1.0, 2.0], device, gp.float32)
    y = leaf([3.0, 4.0], device, gp.float64)
    gp.sum(x * y).backward()
    assert x.grad.dtype == gp.float32 and y.grad.dtype == gp.float64
    np.testing.assert_allclose(np.asarray(x.grad), [3.0, 4.0])


def test_scalar_only_implicit_and_shape_check(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2.0
    with pytest.raises(RuntimeError, match="only for outputs of one element"):
        y.backward()
    with pytest.raises(ValueError, match="does not match"):
        y.backward(gp.ones(3, dtype=gp.float64, device=device))
    with pytest.raises(RuntimeError, match="does not require grad"):
        gp.asarray([1.0], device=device).backward()


def test_seed_of_another_dtype_is_cast_to_the_output_dtype(device):
    """As torch: a float64 ones() seeds a float32 output (through a fused rule, relu's)."""
    x = leaf([[-1.0, 2.0], [3.0, -4.0]], device, gp.float32)
    from grilly.nn import functional as F
    y = F.relu(x * 3.0)
    y.backward(gp.ones((2, 2), dtype=gp.float64, device=device))
    assert x.grad.dtype == gp.float32
    np.testing.assert_array_equal(np.asarray(x.grad), [[0.0, 3.0], [3.0, 0.0]])
    other = "vulkan" if str(device).startswith("cpu") else "cpu"
    if other in [str(d).split(":")[0] for d in gp.devices()]:
        z = F.relu(x * 3.0)
        with pytest.raises(ValueError, match="grad_output is on"):
            z.backward(gp.ones((2, 2), dtype=gp.float32, device=other))


def test_retain_graph(device):
    x = leaf([1.0, 2.0], device)
    y = gp.sum(gp.sin(x))
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(np.asarray(x.grad), 2 * np.cos([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_shared_subgraph_and_diamond(device):
    x = leaf([0.5, -1.0], device)
    h = gp.tanh(x)
    y = gp.sum(h * h + h)
    y.backward()
    t = np.tanh([0.5, -1.0])
    np.testing.assert_allclose(np.asarray(x.grad), (2 * t + 1) * (1 - t * t))


def test_grad_function_and_higher_order(device):
    x = leaf([0.3, 0.7], device)
    y = gp.sum(x * x * x)
    (g,) = grad(y, [x], create_graph=True)
    np.testing.assert_allclose(np.asarray(g), 3 * np.array([0.3, 0.7]) ** 2)
    assert x.grad is None and g.requires_grad
    (g2,) = grad(gp.sum(g), [x])
    np.testing.assert_allclose(np.asarray(g2), 6 * np.array([0.3, 0.7]))
    assert not g2.requires_grad


def test_grad_wrt_intermediate_and_unused(device):
    x = leaf([1.0, 2.0], device)
    z = leaf([5.0], device)
    h = x * 3.0
    y = gp.sum(h * h)
    gh, gx = grad(y, [h, x], retain_graph=True)
    np.testing.assert_allclose(np.asarray(gh), 2 * np.array([3.0, 6.0]))
    np.testing.assert_allclose(np.asarray(gx), 18 * np.array([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="allow_unused"):
        grad(y, [z], retain_graph=True)
    assert grad(y, [z], allow_unused=True) == (None,)


def test_grad_runs_only_the_rules_toward_its_inputs(device):
    """grad() leaves the graph upstream of its inputs alone (the SNN sequences' second order
    calls it from a backward, on a graph recomputed from their inputs)."""
    calls = []

    class Spy(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            return g * 2.0
    x = leaf([1.0, 2.0], device)
    h = Spy.apply(x)
    w = h * 3.0
    y = gp.sum(w * h)
    gw, gh = grad(y, [w, h], retain_graph=True)
    assert calls == []
    np.testing.assert_allclose(np.asarray(gw), [2.0, 4.0])
    np.testing.assert_allclose(np.asarray(gh), 6 * np.array([2.0, 4.0]))
    gh, gx = grad(y, [h, x])
    assert calls == [1]
    np.testing.assert_allclose(np.asarray(gx), 24 * np.array([1.0, 2.0]))


def test_no_grad_modes(device):
    x = leaf([1.0], device)
    with gp.no_grad():
        assert not gp.is_grad_enabled()
        y = x * 2.0
        with gp.enable_grad():
            z = x * 2.0
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad

    @gp.no_grad()
    def f(a):
        return a * 2.0

    @gp.no_grad
    def f2(a):
        return a * 2.0
    assert not f(x).requires_grad and not f2(x).requires_grad and gp.is_grad_enabled()
    with gp.set_grad_enabled(False):
        assert not (x + 1.0).requires_grad
    seen = []
    with gp.no_grad():
        t = threading.Thread(target=lambda: seen.append(gp.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_detach_and_requires_grad_(device):
    x = leaf([1.0, 2.0], device)
    d = (x * 2.0).detach()
    assert not d.requires_grad and d.is_leaf
    y = gp.asarray([1.0], device=device).requires_grad_()
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="floating-point"):
        gp.asarray([1, 2], device=device).requires_grad_()
    assert not gp.equal(x, 1.0).requires_grad  # bool outputs never require grad
    assert gp.argmax(x).dtype.kind == "i"


def test_inplace_rules(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="leaf"):
        x += 1.0
    with pytest.raises(RuntimeError, match="leaf"):
        x[0] = 3.0
    with gp.no_grad():
        x += 1.0  # allowed: how optimizers update
    np.testing.assert_allclose(np.asarray(x), [2.0, 3.0])
    y = x * 1.0
    y *= x  # y = x*x, the node must see the old y
    gp.sum(y).backward()
    np.testing.assert_allclose(np.asarray(x.grad), 2 * np.array([2.0, 3.0]))


def test_setitem_gradients(device):
    x = leaf([1.0, 2.0, 3.0], device)
    v = leaf([10.0], device)
    y = x * 2.0
    y[1:2] = v * v
    gp.sum(y * gp.asarray([1.0, 2.0, 3.0], device=device)).backward()
    np.testing.assert_allclose(np.asarray(x.grad), [2.0, 0.0, 6.0])
    np.testing.assert_allclose(np.asarray(v.grad), [2 * 10.0 * 2.0])


def test_integer_index_duplicates_accumulate(device):
    x = leaf(np.arange(4.0), device)
    y = x[gp.asarray([0, 2, 2, 3, 2], device=device)]
    gp.sum(y).backward()
    np.testing.assert_allclose(np.asarray(x.grad), [1.0, 0.0, 3.0, 1.0])


def test_multi_output_and_T(device):
    x = leaf(np.arange(6.0).reshape(2, 3), device)
    a, b = gp.unstack(x, axis=0)
    gp.sum(b * 2.0).backward()  # a unused: zeros flow for it
    np.testing.assert_allclose(np.asarray(x.grad), [[0, 0, 0], [2, 2, 2.0]])
    x.grad = None
    gp.sum(x.T * gp.asarray([[1.0, 2.0]] * 3, device=device)).backward()
    np.testing.assert_allclose(np.asarray(x.grad), [[1, 1, 1], [2, 2, 2.0]])


def test_custom_function(device):
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3.0 * x * x
    x = leaf([1.0, 2.0], device)
    y = Cube.apply(x)
    assert y.requires_grad
    gp.sum(y).backward()
    np.testing.assert_allclose(np.asarray(x.grad), [3.0, 12.0])
    with gp.no_grad():
        assert not Cube.apply(x).requires_grad


def test_tensor_helper(device):
    t = gp.autograd.tensor([1.0, 2.0], device=device, requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.device == device


@given(st.lists(st.floats(-3, 3), min_size=1, max_size=6),
       st.lists(st.floats(-3, 3), min_size=1, max_size=6))
def test_property_product_rule(a, b):
    n = min(len(a), len(b))
    x, y = leaf(a[:n]), leaf(b[:n])
    gp.sum(x * y + gp.sin(x)).backward()
    np.testing.assert_allclose(np.asarray(x.grad), np.array(b[:n]) + np.cos(a[:n]), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(y.grad), a[:n], rtol=1e-12)




def test_pow_with_a_zero_exponent_has_zero_derivative(device):
    """d/dx x ** 0 is 0 (as torch gives), not 0 * x ** -1 (NaN at x = 0): the third derivative of
    x ** 2 at 0, and an array exponent with zeros, against torch."""
    torch = pytest.importorskip("torch")
    x = leaf([0.0, 1.0, 2.0], device)
    (g,) = grad(gp.sum(x ** 2), [x], create_graph=True)
    (h,) = grad(gp.sum(g), [x], create_graph=True)
    (k,) = grad(gp.sum(h * x), [x])
    t = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad((t ** 2).sum(), [t], create_graph=True)
    (th,) = torch.autograd.grad(tg.sum(), [t], create_graph=True)
    (tk,) = torch.autograd.grad((th * t).sum(), [t])
    np.testing.assert_allclose(np.asarray(k), tk.numpy())
    e = [2.0, 0.0, 0.0]
    y = leaf([0.0, 0.0, 2.0], device)
    (ky,) = grad(gp.sum(y ** gp.asarray(e, device=device)), [y])
    ty = torch.tensor([0.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
    (tky,) = torch.autograd.grad((ty ** torch.tensor(e, dtype=torch.float64)).sum(), [ty])
    np.testing.assert_allclose(np.asarray(ky), tky.numpy())


def test_custom_function_returning_its_input(device):
    """forward returning an input as it is still runs backward (torch: the output is a view
    that carries the node); it was the input itself, so the gradient skipped backward."""
    class Scale5Grad(Function):
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 5.0

    x = leaf([1.0, 2.0], device)
    y = Scale5Grad.apply(x)
    assert y is not x and not y.is_leaf and x.is_leaf
    gp.sum(y * 1.0).backward()
    np.testing.assert_allclose(np.asarray(x.grad), [5.0, 5.0])


def _t(x):
    torch = pytest.importorskip("torch")
    return torch.tensor(np.asarray(x, dtype=float), dtype=torch.float64, requires_grad=True)


def test_hooks_on_leaves_and_non_leaves_against_torch(device):
    """register_hook: the gradients hooks see and the ones they replace, several hooks in order
    (a None result keeps the gradient), a leaf's hook on its whole gradient before .grad takes
    it, a removed hook, and grad() with hooks on its inputs: as torch."""
    def run(x, y_of, total, pack):
        seen = []
        y = y_of(x)
        y.register_hook(lambda g: seen.append(("y1", pack(g))))
        y.register_hook(lambda g: g * 10.0)
        y.register_hook(lambda g: seen.append(("y3", pack(g))))
        x.register_hook(lambda g: seen.append(("x1", pack(g))))
        gone = x.register_hook(lambda g: g * 1000.0)
        x.register_hook(lambda g: g + 1.0)
        gone.remove()
        gone.remove()   # twice: nothing
        total(y * y + x).backward()
        return seen, pack(x.grad)

    g_seen, g_grad = run(leaf([1.0, -2.0, 0.5], device), lambda a: a * 3.0, gp.sum, np.asarray)
    t_seen, t_grad = run(_t([1.0, -2.0, 0.5]), lambda a: a * 3.0, lambda a: a.sum(),
                         lambda a: a.detach().numpy().copy())
    assert [k for k, _ in g_seen] == [k for k, _ in t_seen] == ["y1", "y3", "x1"]
    for (_, a), (_, b) in zip(g_seen, t_seen):
        np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(g_grad, t_grad)
    # grad(): the captured gradient is the hooked one
    torch = pytest.importorskip("torch")
    for wrt in (0, 1):
        x, tx = leaf([1.0, 2.0], device), _t([1.0, 2.0])
        got = []
        for a, g_of, total in ((x, grad, gp.sum), (tx, torch.autograd.grad, lambda a: a.sum())):
            b = a * 3.0
            a.register_hook(lambda g: g * 2.0)
            b.register_hook(lambda g: g * 10.0)
            (r,) = g_of(total(b * b), [(a, b)[wrt]])
            got.append(np.asarray(r.detach()))
        np.testing.assert_allclose(got[0], got[1])
    with pytest.raises(RuntimeError, match="does not require grad"):
        gp.asarray([1.0], device=device).register_hook(lambda g: g)
    z = leaf([1.0, 2.0], device)
    z.register_hook(lambda g: gp.sum(g))
    with pytest.raises(RuntimeError, match="gradient's shape"):
        gp.sum(z * 2.0).backward()


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_hooks_with_create_graph_against_torch(device):
    """Under create_graph the hook's ops are recorded: the leaf's .grad (the hooked gradient)
    differentiates again to torch's second derivative."""
    torch = pytest.importorskip("torch")
    x = leaf([0.5, 1.5], device)
    seen = []
    x.register_hook(lambda g: seen.append(g.requires_grad) or g * g)
    y = x * x
    y.register_hook(lambda g: g * y)
    gp.sum(y * x).backward(create_graph=True)
    (gg,) = grad(gp.sum(x.grad), [x])
    tx = _t([0.5, 1.5])
    tx.register_hook(lambda g: g * g)
    ty = tx * tx
    ty.register_hook(lambda g: g * ty)
    (ty * tx).sum().backward(create_graph=True)
    (tgg,) = torch.autograd.grad(tx.grad.sum(), [tx])
    assert seen[0] and x.grad.requires_grad   # (the second: grad()'s, without create_graph)
    np.testing.assert_allclose(np.asarray(x.grad), tx.grad.detach().numpy())
    np.testing.assert_allclose(np.asarray(gg), tgg.numpy())


@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
def test_retain_grad_against_torch(device):
    """retain_grad: a non-leaf keeps its gradient (after its hooks, whatever their order),
    accumulated over backward calls; a leaf's retains_grad stays False."""
    def run(x, total, pack):
        y = x * 3.0
        z = y * y
        z.retain_grad()
        y.retain_grad()
        y.register_hook(lambda g: g * 10.0)   # registered after retain_grad: still seen
        w = x * 2.0                           # not retained: no .grad
        total(z + w).backward(retain_graph=True)
        first = pack(y.grad)
        total(z * 2.0).backward()
        return first, pack(y.grad), pack(z.grad), pack(x.grad), w.grad, \
            (x.retains_grad, y.retains_grad)

    g = run(leaf([1.0, -2.0], device), gp.sum, np.asarray)
    t = run(_t([1.0, -2.0]), lambda a: a.sum(), lambda a: a.detach().numpy().copy())
    for a, b in zip(g[:4], t[:4]):
        np.testing.assert_allclose(a, b)
    assert g[4] is None and t[4] is None and g[5] == t[5] == (False, True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        gp.asarray([1.0], device=device).retain_grad()


def test_inference_mode(device):
    """inference_mode as a context manager and as a decorator (bare or called): no graph, and
    enable_grad() inside does not record (as torch); inference_mode(False) turns grad on."""
    torch = pytest.importorskip("torch")
    x = leaf([1.0], device)
    tx = _t([1.0])
    for mod, a in ((gp, x), (torch, tx)):
        with mod.inference_mode():
            assert not mod.is_grad_enabled() and mod.is_inference_mode_enabled()
            y = a * 2.0
            with mod.enable_grad():
                assert mod.is_grad_enabled()
                z = a * 2.0
            with mod.inference_mode(False):
                assert not mod.is_inference_mode_enabled()
                u = a * 2.0
        with mod.no_grad():
            with mod.inference_mode(False):
                v = a * 2.0
        assert (y.requires_grad, z.requires_grad, u.requires_grad, v.requires_grad) == \
            (False, False, True, True), mod
        assert mod.is_grad_enabled() and not mod.is_inference_mode_enabled()

    @gp.inference_mode()
    def f(a):
        return a * 2.0

    @gp.autograd.inference_mode
    def f2(a):
        return a * 2.0
    assert not f(x).requires_grad and not f2(x).requires_grad and gp.is_grad_enabled()
    assert f2.__name__ == "f2"


def test_function_returning_non_arrays(device):
    """A Function may return an int and an integer array beside its floating output (as
    torch's): backward gets None for them; it raised TypeError (zeros_like of an int)."""
    seen = []

    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, 7, gp.astype(x > 0, gp.int64)

        @staticmethod
        def backward(ctx, g, g_count, g_mask):
            seen.append((g_count, g_mask))
            return g * 2

    x = gp.asarray([1.0, -2.0, 3.0], device=device)
    x.requires_grad_()
    y, n, mask = Double.apply(x)
    assert n == 7 and np.asarray(mask).tolist() == [1, 0, 1]
    gp.sum(y * y).backward()
    np.testing.assert_allclose(np.asarray(x.grad), [8.0, -16.0, 24.0])
    assert seen == [(None, None)]
