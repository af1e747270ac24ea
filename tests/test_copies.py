"""Whole-buffer copies in a training step, counted by wrapping the device's storage kernels.

A copy is a call of ``copy``, of ``astype`` to the buffer's own dtype (what ``asarray(copy=True)``
runs), or of ``assign`` from a source as large as the destination (``x op= y`` computes a new
buffer and assigns it back). Fills (``assign`` from a broadcast element) and dtype casts are not
copies.

The documented counts for one step of a small MLP (zero_grad, forward, cross entropy, backward,
Adam/SGD step): none on a device whose backend has the ``sole_owner`` kernel (the CPU's and
Vulkan's: a leaf's first ``.grad`` takes the computed gradient when nothing else references it
or its memory), one per parameter in ``backward`` on one without (each leaf's first ``.grad`` is
then a fresh copy, so that leaves never share a gradient buffer); none in the optimizer step (the fused
kernels update parameters and state in place; the unfused Adam made 11 here), none in
``zero_grad``, none in accumulating a second backward into ``.grad``.
"""
import math

import numpy as np
import pytest

import grilly as gp
from grilly import nn, optim


class _Counter:
    """Counts whole-buffer copies on ``device`` while active (a context manager)."""

    def __init__(self, device):
        self.device, self.n, self.where = device, 0, []

    def _wrap(self, name, fn):
        def counted(*args, **kw):
            a = args[0]
            if name == "copy" or (name == "astype" and args[1].name == a.dtype.name) or (
                    name == "assign" and math.prod(args[1].shape) == math.prod(a.shape) > 1
                    and 0 not in tuple(args[1].strides)):   # (a broadcast source is a fill)
                self.n += 1
                self.where.append((name, tuple(a.shape)))
            return fn(*args, **kw)
        return counted

    def __enter__(self):
        k = self.device.kernels
        self.saved = {n: k[n] for n in ("copy", "astype", "assign")}
        for n, fn in self.saved.items():
            k[n] = self._wrap(n, fn)
        return self

    def __exit__(self, *exc):
        self.device.kernels.update(self.saved)

    def take(self) -> int:
        n, self.n = self.n, 0
        return n


def _mlp(device, opt_name):
    nn.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(str(device))
    kw = dict(lr=0.05, momentum=0.9) if opt_name == "SGD" else dict(lr=1e-3)
    opt = getattr(optim, opt_name)(model.parameters(), **kw)
    rng = np.random.default_rng(0)
    x = gp.asarray(rng.standard_normal((8, 16)).astype(np.float32), device=device)
    y = gp.asarray(rng.integers(0, 4, 8), device=device)
    return model, opt, x, y


@pytest.mark.parametrize("opt_name", ["Adam", "AdamW", "SGD", "RMSprop", "Adagrad"])
def test_copies_per_training_step(device, opt_name):
    model, opt, x, y = _mlp(device, opt_name)
    loss_fn = nn.CrossEntropyLoss()
    n_params = len(list(model.parameters()))
    assert n_params == 4

    def fwd():
        return loss_fn(model(x), y)

    for _ in range(2):   # warm: state allocated, momentum buffers started
        opt.zero_grad()
        fwd().backward()
        opt.step()
    with _Counter(device) as c:
        opt.zero_grad()
        assert c.take() == 0
        loss = fwd()
        assert c.take() == 0
        loss.backward()
        taken = "sole_owner" in device.kernels   # else each leaf's first .grad is a copy
        assert c.take() == (0 if taken else n_params), c.where
        opt.step()
        assert c.take() == 0, c.where
        fwd().backward()                        # accumulates into the existing .grad
        assert c.take() == 0, c.where
        opt.zero_grad(set_to_none=False)        # zeroed in place
        assert c.take() == 0, c.where
    for p in model.parameters():
        np.testing.assert_array_equal(np.asarray(p.grad), 0)


def test_counter_counts(device):
    a = gp.ones((5,), device=device)
    with _Counter(device) as c:
        a += 1                              # new buffer assigned back: one copy
        gp.asarray(a, copy=True)            # one copy
        a[...] = 0                          # a fill: not a copy
        gp.astype(a, gp.int32)              # a cast: not a copy
    assert c.n == 2


def _same_memory(a, b) -> bool:
    return np.shares_memory(np.asarray(a), np.asarray(b))


def test_leaves_never_share_a_gradient(device):
    """Taking a gradient instead of copying it never lets two leaves (or a leaf and the caller)
    share memory: one gradient sent to two leaves, a view of one leaf's gradient sent to
    another, the caller's own seed."""
    def leaf(shape, v=1.0):
        x = gp.full(shape, v, dtype=gp.float32, device=device)
        x.requires_grad = True
        return x

    x1, x2 = leaf((3, 4)), leaf((3, 4))
    gp.sum((x1 + x2) * 2.0).backward()          # add's rule sends one g to both
    x1.grad[...] = 7.0
    np.testing.assert_array_equal(np.asarray(x2.grad), 2.0)

    a, b = leaf((12,)), leaf((3, 4))
    gp.sum(gp.reshape(a, (3, 4)) + b).backward()   # a's gradient is a view of b's
    b.grad[...] = 5.0
    np.testing.assert_array_equal(np.asarray(a.grad), 1.0)

    s = leaf((5,))
    seed = gp.full((5,), 3.0, dtype=gp.float32, device=device)
    s.backward(seed)                              # a leaf's gradient is the caller's seed
    seed[...] = 0.0
    np.testing.assert_array_equal(np.asarray(s.grad), 3.0)
    assert not _same_memory(s.grad, seed)


def test_taken_gradient_is_the_computed_one(device):
    """Where the gradient is taken, ``.grad`` holds the right values and later accumulation
    adds into it (against numpy)."""
    rng = np.random.default_rng(3)
    xn = rng.standard_normal((8, 5)).astype(np.float32)
    wn = rng.standard_normal((4, 5)).astype(np.float32)
    w = gp.asarray(wn, device=device)
    w.requires_grad = True
    x = gp.asarray(xn, device=device)
    for k in (1, 2):
        gp.sum(gp.matmul(x, gp.permute_dims(w, (1, 0)))).backward()
        np.testing.assert_allclose(np.asarray(w.grad), k * np.tile(xn.sum(0), (4, 1)),
                                   rtol=1e-5, atol=1e-5)
