"""Whole-buffer copies in a training step, counted by wrapping the device's storage kernels.

A copy is a call of ``copy``, of ``astype`` to the buffer's own dtype (what ``asarray(copy=True)``
runs), or of ``assign`` from a source as large as the destination (``x op= y`` computes a new
buffer and assigns it back). Fills (``assign`` from a broadcast element) and dtype casts are not
copies.

The documented counts for one step of a small MLP (zero_grad, forward, cross entropy, backward,
Adam/SGD step): one copy per parameter, all in ``backward`` (each leaf's first ``.grad`` is a
fresh copy, so that leaves never share a gradient buffer); none in the optimizer step (the fused
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
        assert c.take() == n_params, c.where   # each leaf's fresh .grad
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
