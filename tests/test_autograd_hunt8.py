"""An autograd power user's hunt (a helper's), against torch in float64: ``set_grad_enabled(False)``
called as a function (torch's documented form) changed nothing, and no_grad/enable_grad/
inference_mode as decorators of a generator function left its body recording; custom Functions
lacked ``ctx.mark_non_differentiable``, ``ctx.set_materialize_grads``, ``ctx.mark_dirty``, the
``setup_context`` style (so also under vmap/grad) and the ``once_differentiable`` decorator, and a
backward returning too few gradients or a wrong shape failed obscurely; ``autograd.grad`` had no
``materialize_grads`` / ``is_grads_batched``, ``backward`` no ``inputs=``, Arrays no
``register_post_accumulate_grad_hook``; vmap with ``out_dims=None`` returned the first element's
value of an output that depends on the batch (torch raises)."""
import numpy as np
import pytest

import grilly as gp
import grilly.func as GF
from grilly.autograd.function import once_differentiable
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
_RS = np.random.default_rng(8)
A = gp.autograd


def _close(a, e, tol=1e-10):
    if isinstance(e, (tuple, list)):
        assert len(a) == len(e)
        for x, y in zip(a, e):
            _close(x, y, tol)
        return
    if e is None:
        assert a is None
        return
    e = e.detach().numpy()
    assert a.shape == e.shape, (a.shape, e.shape)
    assert_close(a, e, rtol=tol, atol=tol)


def _pair(shape, device):
    a = _RS.standard_normal(shape)
    g = gp.asarray(a, device=device)
    g.requires_grad_()
    return g, torch.tensor(a, requires_grad=True)


def test_set_grad_enabled_as_a_function_and_decorated_generators(device):
    g, t = _pair((3,), device)
    try:
        assert gp.set_grad_enabled(False) is not None and not gp.is_grad_enabled()
        torch.set_grad_enabled(False)
        assert (g * 2).requires_grad == (t * 2).requires_grad == False  # noqa: E712
    finally:
        gp.set_grad_enabled(True)
        torch.set_grad_enabled(True)
    assert gp.is_grad_enabled() and (g * 2).requires_grad
    with gp.set_grad_enabled(False):
        assert not (g * 2).requires_grad
    assert gp.is_grad_enabled()

    @gp.set_grad_enabled(False)   # decorating does not change the mode outside
    def double(x):
        return x * 2
    assert gp.is_grad_enabled() and not double(g).requires_grad

    def steps(m, deco):
        @deco
        def gen(x):
            yield (x * 2).requires_grad
            yield (x * 3).requires_grad
        return list(gen(g if m is gp else t))
    for m in (gp, torch):
        assert steps(m, m.no_grad()) == [False, False]
        assert steps(m, m.inference_mode()) == [False, False]
        with m.no_grad():
            assert steps(m, m.enable_grad()) == [True, True]
            assert steps(m, m.enable_grad) == [True, True]   # bare, as torch's

    def outer():
        with gp.no_grad():
            it = steps(gp, gp.enable_grad())
        return it, (g * 2).requires_grad   # the caller's mode between the generator's steps
    assert outer() == ([True, True], True)


class _SortG(gp.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        idx = gp.argsort(x)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return gp.take(x, idx), idx

    @staticmethod
    def backward(ctx, g, g_idx):
        (idx,) = ctx.saved_tensors
        out = gp.zeros_like(g)
        out[idx] = g
        return out


class _SortT(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        idx = torch.argsort(x)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return x[idx], idx

    @staticmethod
    def backward(ctx, g, g_idx):
        (idx,) = ctx.saved_tensors
        out = torch.zeros_like(g)
        out[idx] = g
        return out


def _two(m, materialize, seen):
    class Two(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x * 2.0, x * 3.0

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(g2 if g2 is None else float((g2 * g2).sum()))
            return g1 * 2.0 if g2 is None else g1 * 2.0 + g2 * 3.0
    return Two


def _add_one_(m):
    class AddOne(m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a += 1.0
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g
    return AddOne


def test_custom_function_ctx_options_as_torch(device):
    g, t = _pair((4,), device)
    vg, ig = _SortG.apply(g)
    vt, it = _SortT.apply(t)
    assert not ig.requires_grad and not it.requires_grad and vg.requires_grad
    assert np.array_equal(np.asarray(ig), it.numpy())
    w = _RS.standard_normal(4)
    _close(A.grad(gp.sum(vg * gp.asarray(w, device=device)), [g]),
           torch.autograd.grad((vt * torch.tensor(w)).sum(), [t]))
    for materialize in (True, False):   # the unused output's gradient: zeros, or None
        sg, st = [], []
        (a, _), (b, _) = _two(gp, materialize, sg).apply(g), _two(torch, materialize, st).apply(t)
        _close(A.grad(gp.sum(a * a), [g]), torch.autograd.grad((b * b).sum(), [t]))
        assert sg == st == ([0.0] if materialize else [None])
    # mark_dirty: the input itself is returned, with the op's history
    yg, yt = g * 1.5, t * 1.5
    zg, zt = _add_one_(gp).apply(yg), _add_one_(torch).apply(yt)
    assert zg is yg and zt is yt
    _close(zg, zt)
    _close(A.grad(gp.sum(zg * zg * g), [g]), torch.autograd.grad((zt * zt * t).sum(), [t]))
    with pytest.raises(RuntimeError, match="leaf Array that requires grad .* in-place"):
        _add_one_(gp).apply(g)


def _cube(m):
    class Cube(m.autograd.Function):
        @staticmethod
        def forward(x, k=2.0):
            return x ** 3 * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.save_for_backward(x)
            ctx.k = k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3.0 * x ** 2 * ctx.k, None
    return Cube


def test_setup_context_style_under_vmap_and_grad(device):
    g, t = _pair((2, 3), device)
    _close(_cube(gp).apply(g), _cube(torch).apply(t))
    _close(A.grad(gp.sum(_cube(gp).apply(g, 0.5)), [g]),
           torch.autograd.grad(_cube(torch).apply(t, 0.5).sum(), [t]))
    # torch's setup_context Functions run under vmap and grad (grilly's vmap loops)
    cg, ct = _cube(gp), _cube(torch)
    ct.generate_vmap_rule = True
    _close(GF.vmap(GF.grad(lambda v: gp.sum(cg.apply(v))))(g.detach()),
           torch.func.vmap(torch.func.grad(lambda v: ct.apply(v).sum()))(t.detach()))
    # hessian: the backward is namespace ops, so it differentiates again (torch's reference
    # reverse over reverse: its Function has no jvp)
    _close(GF.hessian(lambda v: gp.sum(cg.apply(v)))(g.detach()[0]),
           torch.func.jacrev(torch.func.jacrev(lambda v: ct.apply(v).sum()))(t.detach()[0]))


def test_once_differentiable_decorator_and_backward_checks(device):
    class Exp(gp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = gp.exp(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            assert not gp.is_grad_enabled()   # runs in no_grad, as torch's
            (y,) = ctx.saved_tensors
            return g * y

    g, t = _pair((3,), device)
    (dg,) = A.grad(gp.sum(Exp.apply(g)), [g], create_graph=True)
    _close(dg, torch.exp(t))
    with pytest.raises(NotImplementedError, match="Exp: its backward runs fused kernels"):
        A.grad(gp.sum(dg), [g])
    assert gp.autograd.once_differentiable is once_differentiable

    def op(result):
        class Bad(gp.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                return x * w

            @staticmethod
            def backward(ctx, gr):
                return result(gr)
        return Bad
    w, _ = _pair((3,), device)
    with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number "
                                           r"of gradients \(expected 2, got 1\)"):
        gp.sum(op(lambda gr: (gr,)).apply(g, w)).backward()
    with pytest.raises(RuntimeError, match=r"BadBackward returned an invalid gradient at index "
                                           r"1 - got \[1\] but expected shape compatible with "
                                           r"\[3\]"):
        gp.sum(op(lambda gr: (gr, gp.sum(gr)[None])).apply(g, w)).backward()
    # extra trailing Nones are fine, as torch's
    gp.sum(op(lambda gr: (gr, gr, None)).apply(g, w)).backward()
    _close(w.grad, torch.ones(3, dtype=torch.float64))


def test_grad_materialize_and_batched_as_torch(device):
    (g, t), (u, s) = _pair((3,), device), _pair((2,), device)

    def f(m):
        return lambda x: m.sin(x) * x
    _close(A.grad(gp.sum(f(gp)(g)), [g, u], materialize_grads=True),
           torch.autograd.grad(f(torch)(t).sum(), [t, s], materialize_grads=True))
    with pytest.raises(ValueError, match="allow_unused to be True or not passed"):
        A.grad(gp.sum(g), [g, u], allow_unused=False, materialize_grads=True)
    # is_grads_batched: a Jacobian from the rows of eye, and a vjp batch through two outputs
    eye = np.eye(3)
    _close(A.grad(f(gp)(g), [g], gp.asarray(eye, device=device), is_grads_batched=True,
                  retain_graph=True),
           torch.autograd.grad(f(torch)(t), [t], torch.tensor(eye), is_grads_batched=True,
                               retain_graph=True))
    v1, v2 = _RS.standard_normal((2, 3)), _RS.standard_normal((2, 2))
    og, ot = (f(gp)(g), gp.exp(u)), (f(torch)(t), torch.exp(s))
    _close(A.grad(og, [g, u], [gp.asarray(v1, device=device), gp.asarray(v2, device=device)],
                  is_grads_batched=True, create_graph=True),
           torch.autograd.grad(ot, [t, s], [torch.tensor(v1), torch.tensor(v2)],
                               is_grads_batched=True, create_graph=True))
    # an unused input's materialized gradient keeps the batch axis (torch 2.13 drops it there,
    # returning zeros_like(input) beside the batched gradients)
    got = A.grad(og[0], [g, u], gp.asarray(v1, device=device), is_grads_batched=True,
                 materialize_grads=True)
    ref = torch.autograd.grad(ot[0], [t, s], torch.tensor(v1), is_grads_batched=True,
                              materialize_grads=True)
    _close(got, (ref[0], torch.zeros(2, 2, dtype=torch.float64)))


def test_backward_inputs_and_post_accumulate_hooks_as_torch(device):
    (g, t), (u, s) = _pair((3,), device), _pair((3,), device)
    for m, x, w in ((gp, g, u), (torch, t, s)):
        y = m.sin(x) * w
        y.retain_grad() if m is torch else None
        (y * y).sum().backward(inputs=[w, y], retain_graph=True)
        assert x.grad is None
        m.autograd.backward([(y * x).sum()], inputs=[x])
    _close([g.grad, u.grad], [t.grad, s.grad])
    with pytest.raises(RuntimeError, match="inputs' argument cannot be empty"):
        gp.sum(g * 2).backward(inputs=[])

    # an optimizer step run from the hook, after each accumulation (torch's recipe)
    def hooked(m, x):
        seen = []

        def step(p):
            seen.append(float(p.grad.sum()))
            with m.no_grad():
                p -= 0.1 * p.grad
            p.grad = None
        h = x.register_post_accumulate_grad_hook(step)
        (m.sin(x) * 2).sum().backward()
        (x * x).sum().backward()
        h.remove()
        (x * 3).sum().backward()
        return seen
    assert hooked(gp, g) == pytest.approx(hooked(torch, t), abs=1e-12)
    _close([g, g.grad], [t, t.grad])
    with pytest.raises(RuntimeError, match="cannot be registered on non-leaf"):
        (g * 2).register_post_accumulate_grad_hook(lambda p: None)


def test_vmap_out_dims_none_checks_the_batch(device):
    x = _RS.standard_normal((3, 2))
    gx, tx = gp.asarray(x, device=device), torch.tensor(x)
    with pytest.raises(ValueError, match="can not return an output that depends on the mapped "
                                         "inputs when its out_dim is None"):
        GF.vmap(lambda v: (v * 2.0, v), out_dims=(0, None))(gx)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        torch.func.vmap(lambda v: (v * 2.0, v), out_dims=(0, None))(tx)
    # a 1-tuple out_dims for a single output, as torch's
    _close(GF.vmap(lambda v: v * 2.0, out_dims=(1,))(gx),
           torch.func.vmap(lambda v: v * 2.0, out_dims=(1,))(tx))
    # an unmapped input (and a constant) come back as they are
    w = _RS.standard_normal(2)
    _close(GF.vmap(lambda v, c: (v * c, c, 3.0), in_dims=(0, None), out_dims=(0, None, None))(
        gx, gp.asarray(w, device=device))[:2],
        torch.func.vmap(lambda v, c: (v * c, c), in_dims=(0, None), out_dims=(0, None))(
            tx, torch.tensor(w)))


def test_array_keywords_are_differentiated_as_torch(device):
    (a, ta), (b, tb), (c, tc) = (_pair((3,), device) for _ in range(3))
    idx, tidx = gp.asarray([0, 2], device=device), torch.tensor([0, 2])
    F = gp.nn.functional
    TFn = torch.nn.functional
    cases = [
        (lambda: a.lerp(b, weight=c), lambda: ta.lerp(tb, weight=tc)),
        (lambda: a.addcmul(b, tensor2=c, value=0.5), lambda: ta.addcmul(tb, tensor2=tc, value=0.5)),
        (lambda: a.where(a > 0, other=b), lambda: ta.where(ta > 0, other=tb)),
        (lambda: a.clamp(min=b, max=c + 1.0), lambda: ta.clamp(min=tb, max=tc + 1.0)),
        (lambda: gp.clip(a, min=b), lambda: torch.clamp(ta, min=tb)),
        (lambda: a.masked_fill(a > 0, value=b[1]), lambda: ta.masked_fill(ta > 0, value=tb[1])),
        (lambda: a.index_add(0, idx, source=b[:2], alpha=2.0),
         lambda: ta.index_add(0, tidx, source=tb[:2], alpha=2.0)),
        (lambda: a.diff(prepend=b, append=c), lambda: ta.diff(prepend=tb, append=tc)),
        (lambda: F.linear(a[None], weight=b[None], bias=c[:1]),
         lambda: TFn.linear(ta[None], weight=tb[None], bias=tc[:1])),
        (lambda: F.layer_norm(a[None], (3,), weight=b, bias=c),
         lambda: TFn.layer_norm(ta[None], (3,), weight=tb, bias=tc)),
        (lambda: F.mse_loss(a, target=b), lambda: TFn.mse_loss(ta, target=tb)),
    ]
    for fg, ft in cases:
        yg, yt = fg(), ft()
        _close(yg, yt)
        _close(A.grad(gp.sum(yg * yg), [a, b, c], materialize_grads=True),
               torch.autograd.grad((yt * yt).sum(), [ta, tb, tc], materialize_grads=True))
    # an Array keyword that requires grad reaching a rule that cannot differentiate it is
    # refused (the recorder sees keywords too), rather than its gradient dropped
    with pytest.raises(NotImplementedError, match="sort: the gradient with respect to the "
                                                  "keyword argument descending= "):
        gp.sort(a, descending=b)


def test_func_transforms_differentiate_inside_inference_mode(device):
    """torch.func's transforms compute inside ``inference_mode`` (grilly's gave zeros: their
    enable_grad() does not leave inference mode); torch.autograd.functional's do give zeros
    there, and grilly's keep that. The references are the derivatives themselves (torch 2.11's
    torch.func gave zeros inside inference_mode; 2.13's computes)."""
    x = _RS.standard_normal(3)
    gx = gp.asarray(x, device=device)
    with gp.inference_mode():
        got = (gp.func.grad(lambda v: (gp.sin(v) * v).sum())(gx),
               gp.func.jvp(gp.sin, (gx,), (gx * 0.5,))[1],
               gp.func.vmap(gp.func.jacrev(gp.tanh))(gx[None]),
               gp.autograd.functional.vjp(lambda v: gp.sin(v).sum(), gx)[1])
    ref = (np.sin(x) + x * np.cos(x), np.cos(x) * x * 0.5,
           np.diag(1.0 - np.tanh(x) ** 2)[None], np.zeros(3))
    for a, e in zip(got, ref):
        assert_close(a, e, rtol=1e-10, atol=1e-10)
    assert not any(r.requires_grad for r in got) and not gp.is_inference_mode_enabled()
