"""The second pass of less Python per op (issue 14): caches that skip re-deciding what a repeated
call dispatches (a matmul's plan, a reduction's and a strided elementwise launch's push
constants, the optimizer kernel's specialization) and the recorder's bindings written in one
slice. Each is keyed on what the decision reads: a changed shape, dtype, stride, offset, bias or
buffer gives the right result (numpy float64 / torch 2.13 CPU), the same bits as a fresh
decision, and the caches stay bounded."""
import numpy as np
import pytest
import torch

import grilly as gp
from grilly import nn, optim

VK = [d for d in gp.devices() if str(d).startswith("vulkan")]
needs_vulkan = pytest.mark.skipif(not VK, reason="no Vulkan device")


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _close(got, want, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), want, rtol=rtol, atol=atol)


def test_repeated_products_follow_layout_changes(device):
    """The same product repeated, then with each of its keys changed (shape, a transposed view,
    an offset view, a bias, a split-K shape, another dtype): each against float64."""
    rng = np.random.default_rng(0)
    a, b = _rand(rng, 20, 24), _rand(rng, 24, 12)
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    first = np.asarray(ga @ gb)
    for _ in range(3):   # (the plan's repeats: the same bits)
        np.testing.assert_array_equal(np.asarray(ga @ gb), first)
    _close(first, a.astype(np.float64) @ b)
    # a transposed view of the same shape (other strides)
    bt = _rand(rng, 12, 24)
    _close(ga @ gp.asarray(bt, device=device).T, a.astype(np.float64) @ bt.T.astype(np.float64))
    # views at another element offset
    big = _rand(rng, 21, 24)
    _close(gp.asarray(big, device=device)[1:] @ gb, big[1:].astype(np.float64) @ b)
    # another shape; a batch
    _close(ga[:7] @ gb, a[:7].astype(np.float64) @ b)
    a3 = _rand(rng, 3, 20, 24)
    _close(gp.asarray(a3, device=device) @ gb, a3.astype(np.float64) @ b)
    # float64 operands of the same shapes
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(np.asarray(gp.asarray(a64, device=device)
                                          @ gp.asarray(b64, device=device)), a64 @ b64,
                               rtol=1e-12)
    # a long K (split into slices on Vulkan), twice
    ak, bk = _rand(rng, 8, 4096), _rand(rng, 4096, 8)
    gk = [gp.asarray(ak, device=device), gp.asarray(bk, device=device)]
    r1, r2 = np.asarray(gk[0] @ gk[1]), np.asarray(gk[0] @ gk[1])
    np.testing.assert_array_equal(r1, r2)
    _close(r1, ak.astype(np.float64) @ bk, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("offset", [0, 1])
def test_repeated_linear_with_and_without_bias(device, offset):
    """A linear layer's product (bias in the epilogue or added after) repeated, without the
    bias, and with another bias at another offset: as torch."""
    rng = np.random.default_rng(1)
    x, w = _rand(rng, 16, 32), _rand(rng, 8, 32)
    b = _rand(rng, 8 + offset)
    gx, gw = gp.asarray(x, device=device), gp.asarray(w, device=device)
    gb = gp.asarray(b, device=device)[offset:]
    tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b[offset:])
    from grilly.array import dense
    for _ in range(2):
        _close(dense.linear(gx, gw, gb), torch.nn.functional.linear(tx, tw, tb).numpy())
        _close(dense.linear(gx, gw, None), torch.nn.functional.linear(tx, tw).numpy())
    b2 = _rand(rng, 9)
    _close(dense.linear(gx, gw, gp.asarray(b2, device=device)[1:]),
           torch.nn.functional.linear(tx, tw, torch.from_numpy(b2[1:])).numpy())


def test_repeated_product_sees_in_place_writes(device):
    """A repeated product (a plan hit on Vulkan) still orders itself after a write into its
    operand and keeps its operands alive: the result of the new values."""
    rng = np.random.default_rng(2)
    a, b = _rand(rng, 12, 16), _rand(rng, 16, 8)
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    y1 = ga @ gb
    ga *= 2.0   # in place, recorded after the first product
    y2 = ga @ gb
    del ga   # the second product's operand dropped before its work is read
    _close(y1, a.astype(np.float64) @ b)
    _close(y2, (2.0 * a.astype(np.float64)) @ b)


def test_matmul_dtype_error_unchanged_after_a_plan(device):
    """A refused dtype mix is refused the same way after the product ran (no plan for it)."""
    from grilly.array import dense
    rng = np.random.default_rng(3)
    gx = gp.asarray(_rand(rng, 4, 6), device=device)
    gw = gp.asarray(_rand(rng, 3, 6), device=device)
    dense.linear(gx, gw, None)
    with pytest.raises(TypeError):
        dense.linear(gx, gp.asarray(_rand(rng, 3, 6), device=device, dtype=gp.int32), None)


@needs_vulkan
def test_matmul_plan_skips_the_choice_and_stays_bounded(monkeypatch):
    """On Vulkan the second identical product takes its plan (no second variant choice); a
    changed stride or offset makes a new one; the cache is cleared when full."""
    from grilly.backends.vulkan import linalg

    monkeypatch.setattr(linalg, "_PLANS", {})
    monkeypatch.setattr(linalg, "PLANS_MAX", 3)
    chosen = []
    real = linalg._matmul_planned
    monkeypatch.setattr(linalg, "_matmul_planned", lambda *a: chosen.append(1) or real(*a))
    rng = np.random.default_rng(4)
    a, b = _rand(rng, 9, 12), _rand(rng, 12, 5)
    ga, gb = gp.asarray(a, device=VK[0]), gp.asarray(b, device=VK[0])
    y1, y2 = np.asarray(ga @ gb), np.asarray(ga @ gb)
    assert len(chosen) == 1
    np.testing.assert_array_equal(y1, y2)
    gbt = gp.asarray(np.ascontiguousarray(b.T), device=VK[0]).T   # same shape, other strides
    _close(ga @ gbt, a.astype(np.float64) @ b)
    assert len(chosen) == 2
    for rows in (3, 4, 5, 6):   # more layouts than PLANS_MAX
        _close(ga[:rows] @ gb, a[:rows].astype(np.float64) @ b)
        assert len(linalg._PLANS) <= 3


def test_repeated_reductions_follow_layout_changes(device):
    """Sums repeated and over views of other strides and offsets, and other shapes: as numpy."""
    rng = np.random.default_rng(5)
    x = _rand(rng, 6, 7, 8)
    gx = gp.asarray(x, device=device)
    for axis in (0, 1, 2, (0, 2), None):
        want = np.sum(x.astype(np.float64), axis=axis)
        for _ in range(2):
            _close(gp.sum(gx, axis=axis), want)
        _close(gp.sum(gp.permute_dims(gx, (2, 0, 1)), axis=axis),
               np.sum(np.transpose(x, (2, 0, 1)).astype(np.float64), axis=axis))
        _close(gp.sum(gx[1:, :, 2:], axis=axis), np.sum(x[1:, :, 2:].astype(np.float64),
                                                        axis=axis))


@needs_vulkan
def test_reduction_push_constants_bounded(monkeypatch):
    """The push-constant cache of reductions.dispatch is cleared when full; results hold."""
    from grilly.backends.vulkan import reductions

    monkeypatch.setattr(reductions, "_PCS", {})
    monkeypatch.setattr(reductions, "PCS_MAX", 2)
    rng = np.random.default_rng(6)
    for n in range(3, 9):
        x = _rand(rng, n, 5)
        _close(gp.sum(gp.asarray(x, device=VK[0]), axis=0), x.astype(np.float64).sum(0))
        assert len(reductions._PCS) <= 2


def test_repeated_strided_elementwise_follow_layout_changes(device):
    """Strided and broadcast elementwise ops repeated, then with other strides, offsets and
    dtypes of the same shape: as numpy."""
    rng = np.random.default_rng(7)
    a, b = _rand(rng, 5, 6), _rand(rng, 6, 5)
    ga, gb = gp.asarray(a, device=device), gp.asarray(b, device=device)
    for _ in range(2):
        _close(ga + gb.T, a + b.T, rtol=0, atol=0)
        _close(ga * gb[:1].T, a * b[:1].T, rtol=0, atol=0)
    big = _rand(rng, 7, 6)
    _close(gp.asarray(big, device=device)[2:] + gb.T, big[2:] + b.T, rtol=0, atol=0)
    _close(ga + gp.asarray(np.ascontiguousarray(b.T), device=device), a + b.T, rtol=0, atol=0)
    i = rng.integers(-9, 9, (6, 5)).astype(np.int32)
    got = gp.asarray(i, device=device).T + gp.asarray(i.T.copy(), device=device)
    np.testing.assert_array_equal(np.asarray(got), i.T + i.T)


@needs_vulkan
def test_strided_launch_cache_bounded(monkeypatch):
    """The strided launch cache is cleared when full; results hold."""
    from grilly.backends.vulkan import kernels

    monkeypatch.setattr(kernels, "_STRIDED", {})
    monkeypatch.setattr(kernels, "FLAT_CALLS_MAX", 2)
    rng = np.random.default_rng(8)
    for n in range(3, 8):
        a = _rand(rng, n, 4)
        _close(gp.asarray(a, device=VK[0]).T + 1.0, a.T + 1.0, rtol=0, atol=0)
        assert len(kernels._STRIDED) <= 2


@needs_vulkan
def test_bindings_rewritten_when_a_slot_changes():
    """Consecutive dispatches binding the same allocations in other slots, one buffer twice,
    and a recycled block: each reads what it binds."""
    rng = np.random.default_rng(9)
    x, y = _rand(rng, 300), _rand(rng, 300)
    gx, gy = gp.asarray(x, device=VK[0]), gp.asarray(y, device=VK[0])
    outs = [gx - gy, gy - gx, gx - gx, gy - gy, gx - gy]
    for got, want in zip(outs, (x - y, y - x, x - x, y - y, x - y)):
        np.testing.assert_array_equal(np.asarray(got), want)
    del outs
    z = _rand(rng, 300)
    gz = gp.asarray(z, device=VK[0])   # (likely a block one of the dropped results held)
    np.testing.assert_array_equal(np.asarray(gz - gx), z - x)


def _torch_adam_run(params, grads_per_step, **kw):
    tp = [torch.tensor(p, requires_grad=True) for p in params]
    opt = torch.optim.Adam(tp, **kw)
    for grads in grads_per_step:
        for t, g in zip(tp, grads):
            t.grad = torch.from_numpy(g)
        opt.step()
    return [t.detach().numpy() for t in tp]


def test_adam_steps_follow_option_and_parameter_changes(device):
    """Adam steps whose flags change between steps (maximize switched on, weight decay) and a
    parameter of another shape after them: as torch.optim.Adam with the same changes."""
    rng = np.random.default_rng(10)
    p0, p1 = _rand(rng, 4, 3), _rand(rng, 5)
    steps = [[_rand(rng, 4, 3), _rand(rng, 5)] for _ in range(4)]
    ps = [nn.Parameter(gp.asarray(p, device=device)) for p in (p0, p1)]
    opt = optim.Adam(ps, lr=0.01)
    tp = [torch.tensor(p, requires_grad=True) for p in (p0, p1)]
    topt = torch.optim.Adam(tp, lr=0.01)
    for k, grads in enumerate(steps):
        if k == 2:
            for g in (opt.param_groups[0], topt.param_groups[0]):
                g["maximize"] = True   # (another specialization of the kernel)
                g["weight_decay"] = 0.1
        for p, t, g in zip(ps, tp, grads):
            p.grad = gp.asarray(g, device=device)
            t.grad = torch.from_numpy(g)
        opt.step()
        topt.step()
        for p, t in zip(ps, tp):
            np.testing.assert_allclose(np.asarray(p), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    # a new parameter of another shape at the same place: a fresh optimizer's kernels take it
    q0 = _rand(rng, 2, 7)
    qgrads = [[_rand(rng, 2, 7)] for _ in range(2)]
    want = _torch_adam_run([q0], qgrads, lr=0.02)
    q = [nn.Parameter(gp.asarray(q0, device=device))]
    opt2 = optim.Adam(q, lr=0.02)
    for (g,) in qgrads:
        q[0].grad = gp.asarray(g, device=device)
        opt2.step()
    np.testing.assert_allclose(np.asarray(q[0]), want[0], rtol=1e-5, atol=1e-6)


def test_adam_step_errors_unchanged_after_steps(device):
    """After steps ran (the specialization cached), a bad gradient is refused as before."""
    from grilly.array import optim_steps
    rng = np.random.default_rng(11)
    p = gp.asarray(_rand(rng, 3), device=device)
    m, v = gp.zeros_like(p), gp.zeros_like(p)
    for step in (1, 2):
        optim_steps.adam_step(p, gp.asarray(_rand(rng, 3), device=device), m, v, lr=0.1,
                              beta1=0.9, beta2=0.999, eps=1e-8, step=step)
    with pytest.raises(ValueError, match="adam_step"):
        optim_steps.adam_step(p, gp.asarray(_rand(rng, 4), device=device), m, v, lr=0.1,
                              beta1=0.9, beta2=0.999, eps=1e-8, step=3)
    with pytest.raises(TypeError, match="adam_step"):
        optim_steps.adam_step(p, gp.asarray(_rand(rng, 3), device=device, dtype=gp.float64), m,
                              v, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, step=3)
