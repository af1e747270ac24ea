"""grilly.utils.checkpoint (checkpoint, checkpoint_sequential) on every device: outputs and
gradients (inputs and the parameters of modules called inside) equal to the un-checkpointed
run's exactly, dropout masks reproduced, non-Array and keyword arguments, tuple outputs, and
torch.utils.checkpoint's warnings and errors; values against torch's checkpoint too."""
import gc
import warnings
import weakref

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

torch = pytest.importorskip("torch")
tcheck = pytest.importorskip("torch.utils.checkpoint")


def _mlp(device, p=0.3):
    gp.random.seed(1)
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Dropout(p), nn.Linear(6, 5), nn.ReLU(),
                         nn.Linear(5, 3)).to(device)


def _run(model, xn, device, call):
    """(output, input gradient, parameter gradients) of ``sum(call(model, x) ** 2)`` with the
    default generator seeded the same way, and the generator's state afterwards."""
    model.zero_grad()
    x = gp.asarray(xn, device=device).requires_grad_()
    gp.random.seed(7)
    y = call(model, x)
    gp.sum(y * y).backward()
    return ([y.numpy(), x.grad.numpy()] + [p.grad.numpy() for p in model.parameters()],
            gp.random.get_state())


def _same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


CALLS = {
    "reentrant": lambda m, x: checkpoint(m, x, use_reentrant=True),
    "non_reentrant": lambda m, x: checkpoint(m, x, use_reentrant=False),
    "sequential": lambda m, x: checkpoint_sequential(m, 3, x, use_reentrant=True),
    "sequential_non_reentrant": lambda m, x: checkpoint_sequential(m, 2, x,
                                                                   use_reentrant=False),
    "two_pieces": lambda m, x: checkpoint(lambda h: m[3:](h), checkpoint(
        lambda h: m[:3](h), x, use_reentrant=False), use_reentrant=True),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_gradients_equal_the_plain_run(device, name):
    model = _mlp(device)
    xn = np.random.default_rng(0).random((5, 4), dtype=np.float32)
    plain, state = _run(model, xn, device, lambda m, x: m(x))
    got, state_ck = _run(model, xn, device, CALLS[name])
    _same(got, plain)   # the dropout masks of the recomputation are the forward's
    assert state_ck == state   # and the generator moves on as without checkpointing


def test_intermediates_are_not_kept(device):
    """Only the arguments stay alive between forward and backward (a plain run keeps the
    intermediate that the multiplication's node saves)."""
    refs = []

    def f(x):
        h = gp.exp(x)
        refs.append(weakref.ref(h))
        return h * x

    x = gp.ones((4,), device=device).requires_grad_()
    y_plain = f(x)
    y = checkpoint(f, x, use_reentrant=True)
    gc.collect()
    assert refs[0]() is not None and refs[1]() is None
    gp.sum(y).backward()
    g = x.grad.numpy().copy()
    x.grad = None
    gp.sum(y_plain).backward()
    np.testing.assert_array_equal(g, x.grad.numpy())


def test_without_preserved_rng_state_the_masks_differ(device):
    model = _mlp(device, p=0.5)
    xn = np.random.default_rng(0).random((5, 4), dtype=np.float32)
    plain, _ = _run(model, xn, device, lambda m, x: m(x))
    got, _ = _run(model, xn, device,
                  lambda m, x: checkpoint(m, x, use_reentrant=True, preserve_rng_state=False))
    np.testing.assert_array_equal(got[0], plain[0])   # the forward itself is the same
    assert any(not np.array_equal(a, b) for a, b in zip(got[1:], plain[1:]))


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_values_against_torch_checkpoint(device, use_reentrant):
    torch.manual_seed(0)
    tmod = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.GELU(), torch.nn.Linear(6, 3))
    gmod = nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.Linear(6, 3)).to(device)
    gmod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})
    tx = torch.rand(2, 4, requires_grad=True)
    gx = gp.asarray(tx.detach().numpy(), device=device).requires_grad_()
    ty = tcheck.checkpoint(tmod, tx, use_reentrant=use_reentrant)
    gy = checkpoint(gmod, gx, use_reentrant=use_reentrant)
    (ty ** 2).sum().backward()
    gp.sum(gy ** 2).backward()
    gp.testing.assert_close(gy, ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    gp.testing.assert_close(gx.grad, tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for gpar, tpar in zip(gmod.parameters(), tmod.parameters()):
        gp.testing.assert_close(gpar.grad, tpar.grad.numpy(), rtol=1e-5, atol=1e-6)


def _fn(x, scale, mode, w=None):
    """Non-Array arguments and a tuple output (one of them not a float Array)."""
    y = gp.tanh(x) * scale
    if mode == "square":
        y = y * y
    if w is not None:
        y = y * w
    return y, gp.sum(x * 2.0), 3


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_non_array_arguments_and_tuple_outputs(device, use_reentrant):
    xn = np.random.default_rng(1).random((3, 2), dtype=np.float32)
    res = []
    for ck in (False, True):
        x = gp.asarray(xn, device=device).requires_grad_()
        w = gp.asarray(xn[0] + 1.0, device=device).requires_grad_()
        if ck:
            y, s, k = checkpoint(_fn, x, 1.5, "square", w, use_reentrant=use_reentrant)
        else:
            y, s, k = _fn(x, 1.5, "square", w)
        assert k == 3
        (gp.sum(y) + s * 3.0).backward()
        res.append([y.numpy(), s.numpy(), x.grad.numpy(), w.grad.numpy()])
    _same(res[1], res[0])


def test_keyword_arguments_with_use_reentrant_false(device):
    xn = np.random.default_rng(1).random((3, 2), dtype=np.float32)
    res = []
    for ck in (False, True):
        x = gp.asarray(xn, device=device).requires_grad_()
        w = gp.asarray(xn[0] + 1.0, device=device).requires_grad_()
        if ck:
            y, s, _ = checkpoint(_fn, x, 2.0, mode="plain", w=w, use_reentrant=False)
        else:
            y, s, _ = _fn(x, 2.0, mode="plain", w=w)
        gp.sum(y * s).backward()
        res.append([y.numpy(), x.grad.numpy(), w.grad.numpy()])
    _same(res[1], res[0])


def test_an_unused_output_a_list_argument_and_a_list_result(device):
    xn = np.random.default_rng(2).random((4,), dtype=np.float32)

    def f(xs, k):
        return [xs[0] * xs[1] * k, gp.exp(xs[0]), "tag"]

    res = []
    for ck in (False, True):
        a = gp.asarray(xn, device=device).requires_grad_()
        b = gp.asarray(xn + 1.0, device=device).requires_grad_()
        out = checkpoint(f, [a, b], 3.0, use_reentrant=True) if ck else f([a, b], 3.0)
        assert isinstance(out, list) and out[2] == "tag"
        gp.sum(out[0]).backward()
        res.append([a.grad.numpy(), b.grad.numpy()])
    _same(res[1], res[0])


def test_no_input_requires_grad(device):
    """torch's pitfall, kept: the reentrant variant warns and gives the parameters nothing;
    the non-reentrant one gives them their gradients."""
    lin = nn.Linear(3, 2).to(device)
    x = gp.ones((2, 3), device=device)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(lin, x, use_reentrant=True)
    assert not y.requires_grad
    y = checkpoint(lin, x, use_reentrant=False)
    gp.sum(y).backward()
    plain = nn.Linear(3, 2).to(device)
    plain.load_state_dict(lin.state_dict())
    gp.sum(plain(x)).backward()
    for p, q in zip(lin.parameters(), plain.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    # torch behaves the same way
    tl = torch.nn.Linear(3, 2)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        assert not tcheck.checkpoint(tl, torch.ones(2, 3), use_reentrant=True).requires_grad
    assert tcheck.checkpoint(tl, torch.ones(2, 3), use_reentrant=False).requires_grad


def test_under_no_grad_and_twice_with_retain_graph(device):
    lin = nn.Linear(3, 2).to(device)
    x = gp.ones((2, 3), device=device).requires_grad_()
    with gp.autograd.no_grad():
        y = checkpoint(lin, x, use_reentrant=True)
    assert not y.requires_grad
    y = checkpoint(lin, x, use_reentrant=True)
    loss = gp.sum(y * y)
    loss.backward(retain_graph=True)
    once = x.grad.numpy().copy()
    loss.backward()   # the node recomputes again
    np.testing.assert_array_equal(x.grad.numpy(), 2 * once)


def test_double_backward_through_a_checkpoint(device):
    # (was refused; tests/test_leftovers_hunt10.py compares it with torch's)
    x = gp.ones((3,), device=device).requires_grad_()
    y = checkpoint(gp.exp, x, use_reentrant=True)
    (g,) = gp.autograd.grad(gp.sum(y), x, create_graph=True)
    (h,) = gp.autograd.grad(gp.sum(g), x)
    np.testing.assert_allclose(h.numpy(), np.exp(np.ones(3)), rtol=1e-6)


def test_nondeterministic_function_is_detected(device):
    calls = []

    def f(x):
        calls.append(1)
        return x * 2.0 if len(calls) == 1 else gp.concat([x, x])

    x = gp.ones((3,), device=device).requires_grad_()
    y = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="recomputed forward"):
        gp.sum(y).backward()
    calls.clear()
    y = checkpoint(f, x, use_reentrant=False, determinism_check="none")
    with pytest.raises(ValueError):   # (not caught: the gradients' shapes then disagree)
        gp.sum(y).backward()


def test_argument_errors_and_warnings(device):
    x = gp.ones((3,), device=device).requires_grad_()
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(gp.exp, x)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint_sequential([gp.exp, gp.tanh], 1, x)
    with pytest.raises(ValueError, match="unexpected keyword arguments: scale"):
        checkpoint(_fn, x, use_reentrant=True, scale=2.0)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        checkpoint(gp.exp, x, use_reentrant=False, determinism_check="strict")
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(gp.exp, x, use_reentrant=True, debug=True)
    with pytest.raises(NotImplementedError, match="context_fn"):
        checkpoint(gp.exp, x, use_reentrant=False, context_fn=lambda: (None, None))
    with pytest.raises(TypeError, match="function must be callable"):
        checkpoint(3, x, use_reentrant=True)
    with pytest.raises(ValueError, match="segments must be an int"):
        checkpoint_sequential([gp.exp, gp.tanh], 3, x, use_reentrant=True)
    with pytest.raises(ValueError, match="unexpected keyword arguments: foo"):
        checkpoint_sequential([gp.exp], 1, x, use_reentrant=True, foo=1)
    # torch's own: the same warnings and errors
    tx = torch.ones(3, requires_grad=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        tcheck.checkpoint(torch.exp, tx, use_reentrant=True, scale=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="use_reentrant parameter should be passed"):
            tcheck.checkpoint(torch.exp, tx)
