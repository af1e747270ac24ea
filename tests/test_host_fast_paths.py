"""The eager step's host fast paths (a common case tested in one go, the full checks after it;
loops instead of generators; one check where a layer made two) keep the results and the errors
of the paths they short-cut: nn.Linear, dense's and optim_steps' checks, the cpu optimizer
kernels' buffer handling, a Function's saved arrays, Module attribute lookup, and the Vulkan
recorder's bindings. References: torch 2.13 CPU and numpy."""
import numpy as np
import pytest
import torch

import grilly as gp
from grilly import nn
from grilly.array import dense, optim_steps
from grilly.autograd import Function


def _torch_linear(lin):
    t = torch.nn.Linear(lin.in_features, lin.out_features)
    with torch.no_grad():
        t.weight.copy_(torch.from_numpy(np.asarray(lin.weight)))
        t.bias.copy_(torch.from_numpy(np.asarray(lin.bias)))
    return t


@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (4,)])
def test_linear_layer_forward_backward_as_torch(device, shape):
    nn.manual_seed(0)
    lin = nn.Linear(4, 3).to(device)
    t = _torch_linear(lin)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    xa = gp.asarray(x, device=device)
    xa.requires_grad_()
    xt = torch.from_numpy(x).requires_grad_()
    y, yt = lin(xa), t(xt)
    np.testing.assert_allclose(np.asarray(y), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    for got, want in ((xa.grad, xt.grad), (lin.weight.grad, t.weight.grad),
                      (lin.bias.grad, t.bias.grad)):
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-4, atol=1e-5)


def test_linear_layer_array_like_input_and_errors(device):
    nn.manual_seed(0)
    lin = nn.Linear(4, 3).to(device)
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    # a numpy input goes through F.linear's conversion: the same values as an Array input
    np.testing.assert_array_equal(np.asarray(lin(x)), np.asarray(lin(gp.asarray(x, device=device))))
    with pytest.raises(TypeError, match="Linear: input must have a real floating dtype"):
        lin(gp.asarray(np.ones((2, 4), np.int32), device=device))
    with pytest.raises(ValueError, match="Linear: input needs at least 1 dimension"):
        lin(gp.asarray(np.float32(1.0), device=device))
    with pytest.raises(ValueError, match="linear: input last dimension"):
        lin(gp.asarray(np.ones((2, 5), np.float32), device=device))
    with pytest.raises(TypeError, match="linear: input must have a real floating dtype"):
        nn.functional.linear(gp.asarray(np.ones((2, 4), np.int32), device=device), lin.weight)


def test_dense_checks_name_the_argument(device):
    x = gp.asarray(np.ones((2, 4), np.float32), device=device)
    w = gp.asarray(np.ones((3, 4), np.float32), device=device)
    with pytest.raises(TypeError, match="linear: expected a grilly Array for 'w'"):
        dense.linear(x, np.ones((3, 4), np.float32))
    with pytest.raises(TypeError, match="linear: expected a grilly Array for 'x'"):
        dense.linear(np.ones((2, 4), np.float32), w)
    with pytest.raises(TypeError, match="linear: bias has dtype float64, expected x's float32"):
        dense.linear(x, w, gp.asarray(np.ones(3), device=device))
    others = [d for d in gp.devices() if str(d) != str(device)]
    if others:
        with pytest.raises(ValueError, match="linear: arrays are on different devices"):
            dense.linear(x, gp.asarray(np.ones((3, 4), np.float32), device=others[0]))
    b = gp.zeros((3,), dtype=gp.float32, device=device)
    np.testing.assert_allclose(np.asarray(dense.linear(x, w, b)), np.ones((2, 4)) @ np.ones((4, 3)))


def test_optim_step_checks_name_the_argument(device):
    p = gp.zeros((3,), device=device)
    kw = dict(lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, step=1)
    with pytest.raises(ValueError, match=r"adam_step: exp_avg_sq has shape \(4,\), expected p's"):
        optim_steps.adam_step(p, p, gp.zeros((3,), device=device), gp.zeros((4,), device=device),
                              **kw)
    with pytest.raises(TypeError, match="adam_step: expected a grilly Array for 'exp_avg'"):
        optim_steps.adam_step(p, p, np.zeros(3, np.float32), p, **kw)
    with pytest.raises(TypeError, match="adam_step: expected a grilly Array for 'p'"):
        optim_steps.adam_step(np.zeros(3, np.float32), p, p, p, **kw)
    others = [d for d in gp.devices() if str(d) != str(device)]
    if others:
        with pytest.raises(ValueError, match="adam_step: arrays are on different devices"):
            optim_steps.adam_step(p, gp.zeros((3,), device=others[0]), p, p, **kw)


def test_cpu_optimizer_kernel_buffers():
    from grilly.backends.cpu_numba import optim as cpu_optim

    rng = np.random.default_rng(3)
    args = dict(vmax=None, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0,
                decoupled=False, maximize=False, step_size=0.1 / (1 - 0.9), bc2_sqrt=np.sqrt(1e-3))
    p, m, v = (np.zeros(3, np.float32) for _ in range(3))
    # g is checked before the state, as before: its shape is the one named
    with pytest.raises(ValueError, match=r"adam_step: .* got \(2,\) float32"):
        cpu_optim.adam_step(p, np.zeros(2, np.float32), np.zeros(4, np.float32), v, **args)
    with pytest.raises(ValueError, match=r"adam_step: .* got \(4,\) float32"):
        cpu_optim.adam_step(p, np.zeros(3, np.float32), np.zeros(4, np.float32), v, **args)
    with pytest.raises(TypeError, match="adam_step: the cpu kernel takes float32 or float64"):
        cpu_optim.adam_step(p.astype(np.int32), p, m, v, **args)
    # a strided parameter and gradient: updated through contiguous copies, as torch's Adam
    base = rng.standard_normal((4, 6)).astype(np.float32)
    g = rng.standard_normal((6, 4)).astype(np.float32).T
    pv = base[:, ::2]
    tp = torch.from_numpy(pv.copy()).requires_grad_()
    opt = torch.optim.Adam([tp], lr=0.1)
    tp.grad = torch.from_numpy(np.ascontiguousarray(g[:, ::2]))
    opt.step()
    cpu_optim.adam_step(pv, g[:, ::2], np.zeros_like(pv), np.zeros_like(pv), **args)
    np.testing.assert_allclose(base[:, ::2], tp.detach().numpy(), rtol=1e-6, atol=1e-7)


class _Square(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x, k)
        return x * x

    @staticmethod
    def backward(ctx, g):
        x, k = ctx.saved_tensors
        return g * 2 * x, None


def test_function_saved_tensors_versions(device):
    x = gp.asarray(np.array([1.0, -2.0, 3.0], np.float32), device=device)
    x.requires_grad_()
    xt = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    _Square.apply(x, 3).sum().backward()
    (xt * xt).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), xt.grad.numpy())
    a = gp.asarray(np.ones(3, np.float32), device=device)
    a.requires_grad_()
    h = a * 1.0
    y = _Square.apply(h, 3)
    with gp.no_grad():
        h += 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*saved by _Square"):
        y.sum().backward()


def test_module_attribute_lookup():
    m = nn.BatchNorm2d(2)
    assert m.weight is m._parameters["weight"]
    assert m.running_mean is m._buffers["running_mean"]
    s = nn.Sequential(m)
    assert getattr(s, "0") is m
    with pytest.raises(AttributeError, match="'BatchNorm2d' object has no attribute 'nope'"):
        m.nope
    assert not hasattr(nn.Module.__new__(nn.Linear), "weight")   # before __init__ ran


def test_recorder_bindings_mixed_arities(device):
    # ops binding 1 to 4 buffers one after another (the recorder rewrites only the bindings
    # that change), against numpy
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((2, 3, 5)).astype(np.float32)
    c = a > 0
    ga, gb, gc = (gp.asarray(v, device=device) for v in (a, b, c))
    r1 = gp.where(gc, ga, gb)
    r2 = -ga
    r3 = ga + gb
    r4 = gp.sum(gp.where(gc, r3, r2), axis=1)
    r5 = gp.matmul(ga, gp.matrix_transpose(gb))
    np.testing.assert_array_equal(np.asarray(r1), np.where(c, a, b))
    np.testing.assert_array_equal(np.asarray(r2), -a)
    np.testing.assert_array_equal(np.asarray(r3), a + b)
    np.testing.assert_allclose(np.asarray(r4), np.where(c, a + b, -a).sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(r5), a @ b.T, rtol=1e-5, atol=1e-6)
    e = gp.zeros((0, 3), device=device)
    assert gp.sum(e, axis=0).shape == (3,) and float(gp.sum(gp.zeros((), device=device))) == 0.0
