"""grilly.jit's replay guards, now compared through one structure epoch (a replay re-checks the
modules only after something moved it), against the same eager loop: changes that reach a
module or an optimizer other than through ``setattr`` (a container's item, a module's private
registry, a gradient hook and its removal, a group's ``update()``, a pickled model) still
retrace; a jitted step that sets the learning rate from its own float argument uses it on
every replay (it kept the value of the last trace before 2026-11-30); and a GradScaler inside
a trace raises JitError naming it (it failed on the host read's kernel name)."""
import copy
import pickle

import numpy as np
import pytest

import grilly as gp
import grilly.nn as nn
import grilly.nn.functional as F
from grilly import optim
from grilly.jit import JitError

R = np.random.default_rng(11)
XS = [R.standard_normal((4, 3)).astype(np.float32) for _ in range(3)]
TS = [R.standard_normal((4, 2)).astype(np.float32) for _ in range(3)]


def _loop(device, between, jitted, n=5, make=None, make_opt=None, lrs=None):
    """Losses and parameters of n training steps (SGD with momentum), ``between(m, o, i)``
    after each; ``lrs``: each step sets the learning rate from its float argument."""
    nn.manual_seed(0)
    m = (make or (lambda: nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))))()
    m = m.to(device)
    o = (make_opt or (lambda m: optim.SGD(m.parameters(), lr=0.1, momentum=0.5)))(m)

    def step(x, t, lr=None):
        if lr is not None:
            o.param_groups[0]["lr"] = lr
        o.zero_grad()
        loss = F.mse_loss(m(x), t)
        loss.backward()
        o.step()
        return loss

    f = gp.jit(step) if jitted else step
    losses = []
    for i in range(n):
        args = (gp.asarray(XS[i % 3], device=device), gp.asarray(TS[i % 3], device=device))
        if lrs is not None:
            args += (lrs[i],)
        losses.append(float(f(*args)))
        m, o = between(m, o, i) or (m, o)
    return losses, [np.asarray(p) for p in m.parameters()], getattr(f, "traces", 0)


def _same(device, between, **kw):
    e = _loop(device, between, False, **kw)
    j = _loop(device, between, True, **kw)
    np.testing.assert_allclose(j[0], e[0], rtol=1e-5, atol=1e-6)
    assert len(j[1]) == len(e[1])
    for a, b in zip(e[1], j[1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    return j[2]


def test_container_item_and_private_registry_replaced(device):
    """A Sequential's item assigned (seq[2] = ...) and a module's _modules entry written
    directly, after replays: the next call traces again (the old graph holds the old layer)."""
    def between(m, o, i):
        if i == 1:
            m[2] = nn.Linear(4, 2).to(device)
        if i == 3:
            m._modules["2"] = nn.Linear(4, 2).to(device)
        if i in (1, 3):
            return m, optim.SGD(m.parameters(), lr=0.1, momentum=0.5)

    assert _same(device, between) == 3


def test_gradient_hook_added_and_removed_after_replays(device):
    """A parameter's gradient hook registered after the graph held, then removed: the first
    change traces again (the replay would run the backward without it), the second finds the
    first graph again."""
    handles = []

    def between(m, o, i):
        if i == 1:
            handles.append(m[0].weight.register_hook(lambda g: g * 0.5))
        if i == 3:
            handles.pop().remove()

    assert _same(device, between) == 2


def test_group_update_and_requires_grad_after_replays(device):
    """param_groups[0].update(nesterov=True) and a parameter frozen, each after replays: the
    replay follows them as the eager step does."""
    def between(m, o, i):
        if i == 1:
            o.param_groups[0].update(nesterov=True)
        if i == 3:
            m[2].bias.requires_grad_(False)

    assert _same(device, between) == 3


def test_pickled_and_copied_model_still_followed(device):
    """A model deep-copied (and one pickled) keeps its changes followed: a layer swapped in
    after replays retraces."""
    def make():
        m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        return pickle.loads(pickle.dumps(copy.deepcopy(m)))

    def between(m, o, i):
        if i == 2:
            m.add_module("2", nn.Linear(4, 2).to(device))
            return m, optim.SGD(m.parameters(), lr=0.1, momentum=0.5)

    assert _same(device, between, make=make) == 2


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_learning_rate_from_the_steps_argument(device, opt):
    """A jitted step that sets param_groups[0]["lr"] from its float argument: each replay
    uses its call's value (a float argument is part of the key: a graph per value, and the
    assignment is replayed), where a replay kept the lr of the latest trace."""
    make_opt = (lambda m: optim.SGD(m.parameters(), lr=0.1, momentum=0.5)) if opt == "SGD" \
        else (lambda m: optim.Adam(m.parameters(), lr=0.01))
    lrs = [0.1, 0.05, 0.1, 0.05, 0.1]
    assert _same(device, lambda m, o, i: None, make_opt=make_opt, lrs=lrs) == 2


def test_grad_scaler_inside_a_trace_names_itself(device):
    """GradScaler in a jitted step raises JitError naming GradScaler (it named the host read's
    kernel); a disabled scaler is a pass-through and traces."""
    m = nn.Linear(3, 2).to(device)
    o = optim.SGD(m.parameters(), lr=0.1)

    def make(scaler):
        @gp.jit
        def step(x, t):
            o.zero_grad()
            loss = F.mse_loss(m(x), t)
            scaler.scale(loss).backward()
            scaler.step(o)
            scaler.update()
            return loss
        return step

    x, t = gp.asarray(XS[0], device=device), gp.asarray(TS[0], device=device)
    with pytest.raises(JitError, match="GradScaler.scale"):
        make(gp.amp.GradScaler())(x, t)
    off = make(gp.amp.GradScaler(enabled=False))
    for _ in range(2):
        off(x, t)
    assert off.traces == 1


def test_host_round_trips_replay_on_new_inputs(device):
    """A host round trip (linalg's decompositions, on every device; the cpu backend's FFTs) is
    a host op: each replay runs it on that call's arrays (it raised JitError on the download
    before), and counts one round trip per call, as eager."""
    @gp.jit
    def f(a, b):
        return gp.linalg.solve(a + 0.0, b) * 2.0

    rng = np.random.default_rng(5)
    for k in range(3):   # the trace, then two replays
        a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
        b = rng.standard_normal((3, 2))
        before = gp.device_stats(device)["host_round_trips"]
        got = f(gp.asarray(a, device=device), gp.asarray(b, device=device))
        np.testing.assert_allclose(np.asarray(got), 2 * np.linalg.solve(a, b), rtol=1e-12)
        assert gp.device_stats(device)["host_round_trips"] == before + 1
