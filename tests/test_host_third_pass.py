"""The third pass of less Python per op (issue 14): the optimizer's arrays checked once, by
grilly.array.optim_steps (every backend's updates go through it; the Vulkan kernel no longer
repeats the dtype and shape checks), and caches keyed on immutable values: reshape's resolved
shape (per x's shape and the exact tuple of Python ints asked for), the Vulkan reshape's view
strides and the elementwise launch's flat pattern (per shapes and strides). Each bad input the
removed checks caught still raises the same error; a changed key gives the right result (numpy,
float64 or torch 2.13 CPU); the caches stay bounded, also under threads."""
import threading

import numpy as np
import pytest
import torch

import grilly as gp
from grilly import nn, optim
from grilly.array import optim_steps

VK = [d for d in gp.devices() if str(d).startswith("vulkan")]
needs_vulkan = pytest.mark.skipif(not VK, reason="no Vulkan device")


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- the optimizer's checks, in one layer ------------------------------------------------------
_KW = {
    "sgd_step": dict(lr=0.1, momentum=0.9),
    "adam_step": dict(lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, step=1),
    "rmsprop_step": dict(lr=0.1, alpha=0.99, eps=1e-8, momentum=0.5),
    "adagrad_step": dict(lr=0.1, eps=1e-10, step=1),
}
# each rule's state arrays by name, as its function takes them (all given: every check runs)
_STATE = {
    "sgd_step": ("momentum_buffer",),
    "adam_step": ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"),
    "rmsprop_step": ("square_avg", "grad_avg", "momentum_buffer"),
    "adagrad_step": ("state_sum",),
}


def _call(op, p, g, state: dict):
    getattr(optim_steps, op)(p, g, **state, **_KW[op])


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("op", sorted(_KW))
def test_each_bad_update_array_refused_once_by_the_array_layer(device, op, batched):
    """Every bad array of every rule (a state or gradient of another shape or dtype, one that is
    not an Array, an integer parameter), after good steps ran (the fast path taken), raises the
    array layer's error naming the argument, also inside ``batched`` (the device's optim_multi
    kernel), where nothing is updated; then a good step gives torch's result."""
    rng = np.random.default_rng(1)
    h = _rand(rng, 3, 4)
    p = gp.asarray(h, device=device)
    names = _STATE[op]
    state = {n: gp.zeros((3, 4), device=device, dtype=gp.float32) for n in names}
    g = gp.asarray(_rand(rng, 3, 4), device=device)
    ctx = optim_steps.batched if batched else None
    for _ in range(2):
        if ctx is None:
            _call(op, p, g, state)
        else:
            with ctx():
                _call(op, p, g, state)
    before = np.asarray(p).copy()
    bad_shape = gp.zeros((4, 3), device=device, dtype=gp.float32)
    bad_dtype = gp.zeros((3, 4), device=device, dtype=gp.float64)
    cases = [("g", bad_shape, ValueError, rf"{op}: g has shape \(4, 3\), expected p's shape "
              r"\(3, 4\)"),
             ("g", bad_dtype, TypeError, f"{op}: g has dtype float64, expected p's dtype float32"),
             ("g", np.zeros((3, 4), np.float32), TypeError,
              f"{op}: expected a grilly Array for 'g'")]
    for n in names:
        cases += [(n, bad_shape, ValueError,
                   rf"{op}: {n} has shape \(4, 3\), expected p's shape \(3, 4\)"),
                  (n, bad_dtype, TypeError,
                   f"{op}: {n} has dtype float64, expected p's dtype float32"),
                  (n, np.zeros((3, 4), np.float32), TypeError,
                   f"{op}: expected a grilly Array for '{n}'")]
    for name, bad, exc, msg in cases:
        gg = bad if name == "g" else g
        st = dict(state, **({name: bad} if name != "g" else {}))
        with pytest.raises(exc, match=msg):
            if ctx is None:
                _call(op, p, gg, st)
            else:
                with ctx():
                    _call(op, p, gg, st)
        np.testing.assert_array_equal(np.asarray(p), before)
    with pytest.raises(TypeError, match=f"{op}: p must have a real floating dtype, got int32"):
        ip = gp.zeros((3, 4), device=device, dtype=gp.int32)
        _call(op, ip, ip, {n: ip for n in names})
    others = [d for d in gp.devices() if str(d) != str(device)]
    if others:
        with pytest.raises(ValueError, match=f"{op}: arrays are on different devices"):
            _call(op, p, gp.asarray(np.asarray(g), device=others[0]), state)


def test_optimizer_steps_as_torch_after_the_checks_moved(device):
    """Adam (amsgrad, weight decay), SGD (Nesterov) and RMSprop (centered, momentum) steps with
    gradients set by hand and a parameter of another dtype: as torch.optim. (A gradient of
    another shape, once broadcast by the optimizer, is refused when assigned, as torch's.)"""
    rng = np.random.default_rng(2)
    for make, tmake, kw in (
            (optim.Adam, torch.optim.Adam, dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
            (optim.SGD, torch.optim.SGD, dict(lr=0.01, momentum=0.9, nesterov=True)),
            (optim.RMSprop, torch.optim.RMSprop, dict(lr=0.01, centered=True, momentum=0.5))):
        init = [_rand(rng, 4, 3), _rand(rng, 5), _rand(rng, 2, 2).astype(np.float64)]
        ps = [nn.Parameter(gp.asarray(a, device=device)) for a in init]
        tp = [torch.tensor(a, requires_grad=True) for a in init]
        opt, topt = make(ps, **kw), tmake(tp, **kw)
        for _ in range(3):
            grads = [_rand(rng, 1, 3), _rand(rng, 5), _rand(rng, 2, 2).astype(np.float64)]
            for p, t, gh in zip(ps, tp, grads):
                full = np.broadcast_to(gh, t.shape).copy()
                if full.shape != gh.shape:
                    with pytest.raises(RuntimeError, match="shape"):
                        p.grad = gp.asarray(gh, device=device)
                p.grad = gp.asarray(full, device=device)
                t.grad = torch.from_numpy(full)
            opt.step()
            topt.step()
        for p, t in zip(ps, tp):
            np.testing.assert_allclose(np.asarray(p), t.detach().numpy(), rtol=1e-5, atol=1e-6)


@needs_vulkan
def test_vulkan_optim_kernel_refuses_other_dtypes():
    """Called directly (not through the array layer, which sends it float32 and float64 only),
    the Vulkan optim_multi kernel still refuses a float16 buffer, naming the rule."""
    from grilly.backends.vulkan import optim as vk_optim

    p = gp.zeros((4,), device=VK[0], dtype=gp.float16)
    args = (p._buf, p._buf, p._buf, p._buf, None, 0.1, 0.9, 0.999, 1e-8, 0.0, False, False,
            1.0, 1.0)
    with pytest.raises(TypeError, match="adam_step: the Vulkan kernel takes float32 or float64"):
        vk_optim.optim_multi("adam_step", [args])
    with pytest.raises(TypeError, match="adam_step: the Vulkan kernel takes float32 or float64"):
        vk_optim.adam_step(*args)


@needs_vulkan
def test_vulkan_multi_update_strided_state_and_gradient():
    """One batched Adam step over a contiguous parameter, one whose state is a strided view
    (the one-parameter path) and one with a transposed gradient (copied first): as torch."""
    rng = np.random.default_rng(3)
    dev = VK[0]
    init = [_rand(rng, 3, 4), _rand(rng, 4, 3), _rand(rng, 2, 5)]
    grads = [_rand(rng, 3, 4), _rand(rng, 4, 3), _rand(rng, 5, 2).T]
    ps = [gp.asarray(a, device=dev) for a in init]
    gs = [gp.asarray(grads[0], device=dev), gp.asarray(grads[1], device=dev),
          gp.asarray(np.ascontiguousarray(grads[2].T), device=dev).T]
    wide = gp.zeros((4, 6), device=dev, dtype=gp.float32)
    states = [(gp.zeros_like(ps[0]), gp.zeros_like(ps[0])), (wide[:, ::2], gp.zeros_like(ps[1])),
              (gp.zeros_like(ps[2]), gp.zeros_like(ps[2]))]
    with optim_steps.batched():
        for p, g, (m, v) in zip(ps, gs, states):
            optim_steps.adam_step(p, g, m, v, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8, step=1)
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    topt = torch.optim.Adam(tp, lr=0.01)
    for t, gh in zip(tp, grads):
        t.grad = torch.from_numpy(np.ascontiguousarray(gh))
    topt.step()
    for p, t in zip(ps, tp):
        np.testing.assert_allclose(np.asarray(p), t.detach().numpy(), rtol=1e-6, atol=1e-7)


# ---- reshape's resolved shapes -----------------------------------------------------------------
def test_reshape_cache_keys_on_exact_ints(device, monkeypatch):
    """A shape asked for again takes its resolved form; a tuple holding a bool or a float (equal,
    and of equal hash, to a cached int tuple) is still refused, numpy ints still taken; -1 is
    resolved per x's shape; errors of a bad size or copy come after a hit as before."""
    from grilly.array import manipulation

    monkeypatch.setattr(manipulation, "_RESHAPED", {})
    h = np.arange(6, dtype=np.float32)
    x = gp.asarray(h, device=device)
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(gp.reshape(x, (2, 3))), h.reshape(2, 3))
        np.testing.assert_array_equal(np.asarray(gp.reshape(x, (-1, 3))), h.reshape(-1, 3))
    with pytest.raises(TypeError, match="reshape: shape must hold integers, got True"):
        gp.reshape(x, (True, 6))
    gp.reshape(x, (1, 6))   # (cached, equal to (True, 6))
    with pytest.raises(TypeError, match="reshape: shape must hold integers, got True"):
        gp.reshape(x, (True, 6))
    with pytest.raises(TypeError, match="reshape: shape must hold integers, got 2.0"):
        gp.reshape(x, (2.0, 3))
    got = gp.reshape(x, (np.int64(3), np.int32(2)))
    assert got.shape == (3, 2) and all(type(s) is int for s in got.shape)
    h9 = np.arange(9, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(gp.reshape(gp.asarray(h9, device=device), (-1, 3))),
                                  h9.reshape(-1, 3))
    with pytest.raises(ValueError, match=r"reshape: cannot reshape an array of size 6 into "
                                         r"\(4, 2\)"):
        gp.reshape(x, (4, 2))
    with pytest.raises(TypeError, match="reshape: copy must be True, False or None, got 'yes'"):
        gp.reshape(x, (2, 3), copy="yes")
    with pytest.raises(TypeError, match="reshape: shape must be a tuple of ints, got int"):
        gp.reshape(x, 6)
    np.testing.assert_array_equal(np.asarray(gp.reshape(x, [3, 2])), h.reshape(3, 2))
    assert manipulation._RESHAPED[(6,), (-1, 3)] == (2, 3)


def test_reshape_cache_bounded_under_threads(device, monkeypatch):
    """Four threads reshaping arrays of many shapes with a tiny bound (the cache cleared again
    and again while others read it): every result as numpy's, the cache within its bound."""
    from grilly.array import manipulation

    monkeypatch.setattr(manipulation, "_RESHAPED", {})
    monkeypatch.setattr(manipulation, "RESHAPED_MAX", 3)
    errors = []

    def work(seed):
        try:
            for n in range(1, 13):
                h = np.arange(n * (seed + 1), dtype=np.float32)
                x = gp.asarray(h, device=device)
                for shape in ((n, -1), (-1, n), (seed + 1, n)):
                    np.testing.assert_array_equal(np.asarray(gp.reshape(x, shape)),
                                                  h.reshape(shape))
        except Exception as e:   # (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(manipulation._RESHAPED) <= 3


# ---- Vulkan: reshape's view strides and the elementwise flat pattern ---------------------------
@needs_vulkan
def test_vulkan_reshape_strides_follow_the_layout(monkeypatch):
    """Reshapes of one shape from a contiguous array, a transposed view (a copy) and a strided
    row view (a view where numpy's rule allows): as numpy, copy=False refused where a copy is
    needed, before and after the answers are kept; bounded."""
    from grilly.backends.vulkan import kernels

    monkeypatch.setattr(kernels, "_NOCOPY", {})
    monkeypatch.setattr(kernels, "FLAT_CALLS_MAX", 4)
    rng = np.random.default_rng(4)
    h = _rand(rng, 4, 6)
    x = gp.asarray(h, device=VK[0])
    for _ in range(2):
        for src, ref in ((x, h), (x.T, h.T), (x[::2], h[::2]), (x[:, 1:4], h[:, 1:4])):
            for shape in ((-1,), (2, -1), (-1, 1, 2)):
                if ref.size % 2 and len(shape) > 1:
                    continue
                np.testing.assert_array_equal(np.asarray(gp.reshape(src, shape)),
                                              ref.reshape(shape))
        with pytest.raises(ValueError, match="copy=False"):
            gp.reshape(x.T, (-1,), copy=False)
        v = gp.reshape(x[::2], (2, 2, 3), copy=False)   # (a view: rows are whole)
        np.testing.assert_array_equal(np.asarray(v), h[::2].reshape(2, 2, 3))
        assert len(kernels._NOCOPY) <= 4


@needs_vulkan
def test_vulkan_elementwise_pattern_follows_strides(monkeypatch):
    """One elementwise op over operands of one shape: contiguous, a broadcast scalar-like row,
    a transposed view, an offset view: as numpy, before and after the patterns are kept;
    bounded."""
    from grilly.backends.vulkan import kernels

    monkeypatch.setattr(kernels, "_PATTERNS", {})
    monkeypatch.setattr(kernels, "FLAT_CALLS_MAX", 3)
    rng = np.random.default_rng(5)
    a, b = _rand(rng, 5, 5), _rand(rng, 5, 5)
    ga, gb = gp.asarray(a, device=VK[0]), gp.asarray(b, device=VK[0])
    one = gp.asarray(np.float32(2.5).reshape(1, 1), device=VK[0])
    big = _rand(rng, 6, 5)
    gbig = gp.asarray(big, device=VK[0])
    for _ in range(2):
        for got, want in ((ga + gb, a + b), (ga * one, a * np.float32(2.5)),
                          (ga - gb.T, a - b.T), (gbig[1:] + ga, big[1:] + a),
                          (gp.sin(ga.T), np.sin(a.T))):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)
        assert len(kernels._PATTERNS) <= 3


# ---- the sweep ----------------------------------------------------------------------------------
def test_sweep_sums_many_contributions_as_torch(device):
    """A leaf and an intermediate each read by several ops (gradients summed in the sweep's
    buffers), a view and a broadcast (fit): as torch's gradients, in float64."""
    rng = np.random.default_rng(6)
    h, w = rng.standard_normal((3, 4)), rng.standard_normal((4,))

    def f(ns, x, v):
        y = x * v
        z = y + y * y - ns.sin(y)
        return (z * x).sum() + (y[:, 1:] * 2.0).sum() + (x.T @ z).sum()

    x = gp.asarray(h, device=device)
    v = gp.asarray(w, device=device)
    x.requires_grad = v.requires_grad = True
    f(gp, x, v).backward()
    tx = torch.tensor(h, requires_grad=True)
    tv = torch.tensor(w, requires_grad=True)
    f(torch, tx, tv).backward()
    np.testing.assert_allclose(np.asarray(x.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(v.grad), tv.grad.numpy(), rtol=1e-10, atol=1e-12)
