"""Writes in place and autograd, against torch on every device: an array a node saved for
backward and written in place since is torch's RuntimeError at backward (a version counter
shared by an array and its views), never a wrong gradient; a write into a non-leaf (or a view
of one) rebases its history, as torch's; a leaf that requires grad (or a view of one) written
in place in grad mode is an error."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import grilly as gp
import grilly.nn.functional as F
from grilly import nn, optim
from grilly.testing import assert_close

X = np.random.RandomState(0).randn(3, 4).astype(np.float32)


def _ones(m, device):
    return torch.ones((3, 4)) if m is torch else gp.ones((3, 4), device=device)


def _no_grad(m):
    return torch.no_grad() if m is torch else gp.no_grad()


# each case runs on torch (m=torch, F=torch.nn.functional) and grilly (m=gp, F=grilly's)
def sigmoid_out_mul(x, m, F, d):
    a = F.sigmoid(x)
    a *= 2
    a.sum().backward()


def exp_out_add(x, m, F, d):
    a = m.exp(x)
    a += 1
    a.sum().backward()


def tanh_out_mul(x, m, F, d):
    a = m.tanh(x)
    a *= 2
    a.sum().backward()


def softmax_out(x, m, F, d):
    a = F.softmax(x, dim=1)
    a *= 2
    a.sum().backward()


def mul_saved_nonleaf(x, m, F, d):
    w = x * 3
    y = x * w
    w += 1
    y.sum().backward()


def mul_by_scalar_not_saved(x, m, F, d):
    w = x * 3
    y = w * 2
    w += 1
    y.sum().backward()


def matmul_saved(x, m, F, d):
    w = x * 1
    y = w @ w.T
    w += 1
    y.sum().backward()


def pow_saved(x, m, F, d):
    w = x * 1
    y = w ** 2
    w += 1
    y.sum().backward()


def pow_out_not_saved(x, m, F, d):
    y = x ** 2
    y += 1
    (y * 1).sum().backward()


def log_out_not_saved(x, m, F, d):
    y = m.log(x * 1 + 5)
    y *= 2
    y.sum().backward()


def clip_out_not_saved(x, m, F, d):
    y = x.clip(-0.5, 0.5) if m is gp else x.clamp(-0.5, 0.5)
    y *= 2
    y.sum().backward()


def reciprocal_divisor_not_saved(x, m, F, d):
    w = x * 1 + 5
    y = 1.0 / w
    w += 1
    y.sum().backward()


def divide_out_not_saved(x, m, F, d):
    y = (x * 1 + 5) / 3.0
    y += 1
    y.sum().backward()


def sum_not_saved(x, m, F, d):
    w = x * 1
    y = w.sum()
    w += 1
    y.backward()


def add_then_iadd(x, m, F, d):
    y = x + 1
    y += 1
    (y * y).sum().backward()


def rebase_mul(x, m, F, d):
    y = x * 2
    y *= 3
    (y * y).sum().backward()


def setitem_nonleaf(x, m, F, d):
    y = x * 2
    y[0] = 0
    y[1:, 2] = x[0, :2] * 5
    (y * y).sum().backward()


def setitem_saved_input(x, m, F, d):
    y = x * 2 + 10
    z = m.log(y)
    y[0] = 1.0
    z.sum().backward()


def setitem_saved_output(x, m, F, d):
    y = m.exp(x)
    y[0] = 0
    (y * 1).sum().backward()


def setitem_exp_input_not_saved(x, m, F, d):
    y = x * 2
    z = m.exp(y)
    y[0] = 0
    z.sum().backward()


def view_iadd(x, m, F, d):
    y = x * 2
    y[0] += 1
    y[1] *= 3
    (y * y).sum().backward()


def view_imul_base_grad(x, m, F, d):
    y = x * 2
    v = y[0]
    v *= 3
    (y * y).sum().backward()


def view_imul_view_grad(x, m, F, d):
    y = x * 2
    v = y[0]
    v *= 3
    (v * v).sum().backward()


def view_of_view(x, m, F, d):
    y = x * 2
    v = y[1:]
    w = v[0]
    w *= 5
    (y * y).sum().backward()


def column_view(x, m, F, d):
    y = x * 2
    v = y[:, 1]
    v *= 3
    (y * 1).sum().backward()


def reshape_view(x, m, F, d):
    y = x * 2
    v = y.reshape(12)
    v *= 3
    (y * y).sum().backward()


def transpose_view(x, m, F, d):
    y = x * 2
    t = y.T
    t[1] *= 4
    (y * y).sum().backward()


def older_view_remade(x, m, F, d):
    y = x * 2
    a = y[0]
    b = y[0]
    b *= 3
    (a * a).sum().backward()


def view_after_base_write(x, m, F, d):
    y = x * 2
    a = y[0]
    y *= 3
    (a * a).sum().backward()


def view_used_before_write(x, m, F, d):
    y = x * 2
    z = y[0] * 5
    b = y[1]
    b *= 3
    (z.sum() + y.sum()).backward()


def view_saved_then_base_written(x, m, F, d):
    c = _ones(m, d) * 2
    y = x * c[1]
    c[1] += 1
    y.sum().backward()


def constant_view_takes_grad(x, m, F, d):
    c = _ones(m, d)
    v = c[0]
    v *= x[1]
    (c * 2).sum().backward()


def constant_saved(x, m, F, d):
    c = _ones(m, d) * 2
    y = x * c
    c += 1
    y.sum().backward()


def leaf_saved_written_no_grad(x, m, F, d):
    y = x * x
    with _no_grad(m):
        x += 1
    y.sum().backward()


def leaf_written_no_grad_then_used(x, m, F, d):
    with _no_grad(m):
        x += 1
    (x * x).sum().backward()


def leaf_iadd(x, m, F, d):
    x += 1


def leaf_setitem(x, m, F, d):
    x[0] = 1.0


def view_of_leaf(x, m, F, d):
    v = x[0]
    v *= 2


def view_made_in_no_grad(x, m, F, d):
    y = x * 2
    with _no_grad(m):
        v = y[0]
    v *= 2
    y.sum().backward()


def relu_inplace_after_relu(x, m, F, d):
    a = F.relu(x * 1)
    F.relu(a, inplace=True)
    a.sum().backward()


def relu_inplace_after_sigmoid(x, m, F, d):
    a = F.sigmoid(x)
    F.relu(a, inplace=True)
    a.sum().backward()


def relu_inplace_after_product(x, m, F, d):
    a = x * 2 + 1
    F.relu(a, inplace=True)
    (a * a).sum().backward()


def relu_inplace_of_unsaved(x, m, F, d):
    a = F.sigmoid(x)
    b = a - 0.5
    F.relu(b, inplace=True)
    (a * b).sum().backward()


def second_backward_after_write(x, m, F, d):
    y = m.exp(x)
    s = y.sum()
    s.backward(retain_graph=True)
    y += 1
    s.backward()


def optimizer_step_then_backward(x, m, F, d):
    opt = (torch.optim if m is torch else optim).SGD([x], lr=0.1)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    opt.step()
    y.backward()


CASES = [sigmoid_out_mul, exp_out_add, tanh_out_mul, softmax_out, mul_saved_nonleaf,
         mul_by_scalar_not_saved, matmul_saved, pow_saved, pow_out_not_saved, log_out_not_saved,
         clip_out_not_saved, reciprocal_divisor_not_saved, divide_out_not_saved, sum_not_saved,
         add_then_iadd, rebase_mul, setitem_nonleaf, setitem_saved_input, setitem_saved_output,
         setitem_exp_input_not_saved, view_iadd, view_imul_base_grad, view_imul_view_grad,
         view_of_view, column_view, reshape_view, transpose_view, older_view_remade,
         view_after_base_write, view_used_before_write, view_saved_then_base_written,
         constant_view_takes_grad, constant_saved, leaf_saved_written_no_grad,
         leaf_written_no_grad_then_used, leaf_iadd, leaf_setitem, view_of_leaf,
         view_made_in_no_grad, relu_inplace_after_relu, relu_inplace_after_sigmoid,
         relu_inplace_after_product, relu_inplace_of_unsaved, second_backward_after_write,
         optimizer_step_then_backward]


def _torch(case):
    x = torch.tensor(X, requires_grad=True)
    try:
        case(x, torch, TF, None)
    except RuntimeError as e:
        return e
    return x.grad


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_inplace_like_torch(device, case):
    want = _torch(case)
    x = gp.asarray(X, device=device, copy=True)
    x.requires_grad_()
    if isinstance(want, RuntimeError):
        with pytest.raises(RuntimeError, match="in-place|inplace") as e:
            case(x, gp, F, device)
        if "modified by an inplace" in str(want):   # the same kind of error as torch's
            assert "modified by an inplace operation" in str(e.value)
            assert "expected version" in str(e.value)
        return
    case(x, gp, F, device)
    if want is None:
        assert x.grad is None
    else:
        assert_close(x.grad, want.numpy(), rtol=1e-5, atol=1e-5)


def test_error_names_shape_and_versions(device):
    x = gp.asarray(X, device=device, copy=True)
    x.requires_grad_()
    a = F.sigmoid(x)
    a *= 2
    with pytest.raises(RuntimeError, match=r"\[float32 \[3, 4\]\].*is at version 1; expected "
                                           r"version 0 instead"):
        a.sum().backward()


def test_views_share_the_version():
    x = gp.zeros((3, 4))
    views = [x[0], x[:, 1], x.reshape(12), x.T, gp.flip(x, axis=0), x[None], x.detach()]
    x[0, 0] = 1.0
    v0 = x._version[0]
    assert all(v._version is x._version for v in views)
    views[2] += 1.0
    assert x._version[0] == v0 + 1
    # a copy has its own counter
    c = x.T.reshape(12)   # (a copy: x.T is not contiguous)
    c += 1.0
    assert x._version[0] == v0 + 1


def test_inplace_relu_network_like_torch(device):
    torch.manual_seed(0)
    tnet = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(inplace=True),
                               torch.nn.Linear(5, 2))
    net = nn.Sequential(nn.Linear(4, 5), nn.ReLU(inplace=True), nn.Linear(5, 2)).to(str(device))
    net.load_state_dict({k: gp.asarray(v.detach().numpy(), device=device)
                         for k, v in tnet.state_dict().items()})
    tx = torch.tensor(X, requires_grad=True)
    tnet(tx).sum().backward()
    x = gp.asarray(X, device=device, copy=True)
    x.requires_grad_()
    net(x).sum().backward()
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    for (k, p), (_, tp) in zip(net.named_parameters(), tnet.named_parameters()):
        assert_close(p.grad, tp.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_custom_function_saved_tensor_checked(device):
    class Square(gp.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * 2 * a

    x = gp.asarray(X, device=device, copy=True)
    x.requires_grad_()
    w = x * 1
    y = Square.apply(w)
    w += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*Square"):
        y.sum().backward()
