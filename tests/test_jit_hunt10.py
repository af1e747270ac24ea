"""grilly.jit in a training loop that changes things between jitted steps, against the same
eager loop (each failed before 2026-11-29): an optimizer option that selects the update's code
changed in param_groups (Vulkan replayed the traced kernels' flags), a parameter group added
(the CPU replay kept the old groups' zero_grad), a module's Python number changed
(Dropout.p, BatchNorm.momentum/eps: every device replayed the traced value), a submodule or
buffer replaced, and nested results (tuples of dicts: a TypeError)."""
import collections
import gc

import numpy as np
import pytest

import grilly as gp
import grilly.nn as nn
import grilly.nn.functional as F

R = np.random.default_rng(10)
XS = [R.standard_normal((4, 3)).astype(np.float32) for _ in range(3)]
TS = [R.standard_normal((4, 2)).astype(np.float32) for _ in range(3)]


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.bn, self.d, self.b = (nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Dropout(0.3),
                                           nn.Linear(4, 2))

    def forward(self, x):
        return self.b(self.d(F.relu(self.bn(self.a(x)))))


def _loop(device, make_opt, between, jitted, n=4, net=False):
    """Losses, parameters (and running stats), optimizer state and traces of n steps."""
    gp.random.seed(0)
    m = (_Net() if net else nn.Linear(3, 2)).to(device)
    o = make_opt(m)

    def step(x, t):
        o.zero_grad()
        loss = F.mse_loss(m(x), t)
        loss.backward()
        o.step()
        return loss

    f = gp.jit(step) if jitted else step
    losses = []
    for i in range(n):
        losses.append(float(f(gp.asarray(XS[i % 3], device=device),
                              gp.asarray(TS[i % 3], device=device))))
        between(m, o, i)
    arrays = [np.asarray(p) for p in m.parameters()]
    arrays += [np.asarray(b) for b in m.buffers() if b.dtype.kind == "f"]
    state = [np.asarray(v) for s in o.state.values() for v in s.values()
             if isinstance(v, gp.Array)]
    return losses, arrays, state, getattr(f, "traces", 0)


def _same(device, make_opt, between, n=4, net=False):
    e = _loop(device, make_opt, between, False, n, net)
    j = _loop(device, make_opt, between, True, n, net)
    np.testing.assert_allclose(j[0], e[0], rtol=1e-5, atol=1e-6)
    for part in (1, 2):
        assert len(j[part]) == len(e[part])
        for a, b in zip(e[part], j[part]):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    return j[3]


@pytest.mark.parametrize("opt,option,value", [
    ("SGD", "nesterov", True), ("SGD", "maximize", True), ("SGD", "momentum", 0.9),
    ("RMSprop", "centered", True), ("Adam", "maximize", True)])
def test_optimizer_option_changed_between_replays(device, opt, option, value):
    """An option that selects the update's code, set in param_groups after the trace, is
    followed by the next replay (Vulkan's captured update kept the traced flags)."""
    kw = {"lr": 0.1}
    if opt == "SGD" and option != "momentum":
        kw["momentum"] = 0.9

    def between(m, o, i):
        if i == 1:
            o.param_groups[0][option] = value

    _same(device, lambda m: getattr(gp.optim, opt)(m.parameters(), **kw), between)


def test_scheduler_outside_the_step_does_not_retrace(device):
    """OneCycleLR changes lr and momentum every step: read on replay, one trace."""
    def make(m):
        o = gp.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        o.sched = gp.optim.lr_scheduler.OneCycleLR(o, 0.5, total_steps=10)
        return o

    assert _same(device, make, lambda m, o, i: o.sched.step()) == 1


def test_param_group_added_after_trace(device):
    """opt.add_param_group with a layer trained from then on: the next call traces again (the
    CPU replay ran the new group's update with the gradient it never zeroed)."""
    def make(m):
        return gp.optim.Adam(m.a.parameters(), lr=0.1)

    def between(m, o, i):
        if i == 1:
            o.add_param_group({"params": list(m.b.parameters()), "lr": 0.05})

    _same(device, make, between, net=True)


@pytest.mark.parametrize("change", ["dropout_p", "bn_momentum", "bn_eps", "swap_layer",
                                    "swap_buffer", "forward_hook", "grad_hook"])
def test_module_changed_between_replays(device, change):
    """A module's Python number changed, a submodule swapped or a buffer replaced after the
    trace is seen by the next call, as eagerly (the replay used the traced value or object); so
    is a forward hook or a parameter's gradient hook added after it and removed again."""
    handles = []

    def between(m, o, i):
        if i == 2:
            for h in handles:
                h.remove()
        if i != 1:
            return
        if change == "dropout_p":
            m.d.p = 0.0
        elif change == "bn_momentum":
            m.bn.momentum = 0.5
        elif change == "bn_eps":
            m.bn.eps = 0.1
        elif change == "swap_layer":
            gp.random.seed(5)
            m.b = nn.Linear(4, 2).to(device)
            gc.collect()   # (the old layer gone: its weakref is no guard)
        elif change == "swap_buffer":
            m.bn.running_mean = gp.ones((4,), dtype=gp.float32, device=device)
        elif change == "forward_hook":
            handles.append(m.b.register_forward_hook(lambda mod, args, out: out * 2.0))
        else:
            handles.append(m.a.weight.register_hook(lambda g: g * 0.5))

    _same(device, lambda m: gp.optim.SGD(m.a.parameters(), lr=0.1), between, n=5, net=True)


Pair = collections.namedtuple("Pair", "first second")


def test_nested_results(device):
    """Results nested in tuples, lists, named tuples and dicts come back in that structure on
    every call; a Python number in them is a TypeError naming where it is."""
    w = gp.asarray(R.standard_normal((3, 2)).astype(np.float32), device=device)

    def fn(x, d):
        h = x @ w
        return h.sum(), {"out": [h, None], "pair": Pair(h * d["s"], x)}

    f = gp.jit(fn)
    for i in range(3):
        x = gp.asarray(XS[i % 3], device=device)
        d = {"s": gp.asarray(np.float32(i + 1), device=device)}
        got, want = f(x, d), fn(x, d)
        assert isinstance(got, tuple) and isinstance(got[1]["pair"], Pair)
        assert got[1]["out"][1] is None and isinstance(got[1]["out"], list)
        for a, b in [(got[0], want[0]), (got[1]["out"][0], want[1]["out"][0]),
                     (got[1]["pair"].first, want[1]["pair"].first),
                     (got[1]["pair"].second, want[1]["pair"].second)]:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    assert f.traces == 1

    g = gp.jit(lambda x: {"loss": x.sum(), "n": 4})
    with pytest.raises(TypeError, match=r"result\['n'\] is of type int"):
        g(gp.asarray(XS[0], device=device))
