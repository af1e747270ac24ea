"""Module hooks (forward pre/post, full backward pre/post, handles) and Module.get_parameter /
get_buffer / set_submodule / half / cpu, against torch (a test-only oracle) on every device."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.testing import assert_close

torch = pytest.importorskip("torch")


def _np(x):
    return np.asarray(x) if isinstance(x, gp.Array) else x.detach().numpy()


def _pair(device, seed=0):
    torch.manual_seed(seed)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    gm = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3)).to(device)
    gm.load_state_dict({k: _np(v) for k, v in tm.state_dict().items()})
    return tm, gm


def _x(device, grad=True, shape=(2, 4)):
    a = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    g, t = gp.asarray(a, device=device), torch.from_numpy(a)
    if grad:
        g.requires_grad_()
        t.requires_grad_()
    return g, t


def test_forward_hooks_capture_and_replace(device):
    tm, gm = _pair(device)
    got, want = {}, {}
    hs = [gm[i].register_forward_hook(lambda m, a, o, i=i: got.__setitem__(i, o)) for i in range(3)]
    for i in range(3):
        tm[i].register_forward_hook(lambda m, a, o, i=i: want.__setitem__(i, o))
    gx, tx = _x(device)
    assert_close(gm(gx), _np(tm(tx)), rtol=1e-5, atol=1e-6)
    for i in range(3):
        assert_close(got[i], _np(want[i]), rtol=1e-5, atol=1e-6)
    for h in hs:
        h.remove()
    got.clear()
    gm(gx)
    assert not got
    # a pre-hook replacing the input, a hook replacing the output; prepend runs first
    order = []
    gm[0].register_forward_pre_hook(lambda m, a: (a[0] * 2,))
    tm[0].register_forward_pre_hook(lambda m, a: (a[0] * 2,))
    gm[2].register_forward_hook(lambda m, a, o: order.append("b") or o + 1)
    gm[2].register_forward_hook(lambda m, a, o: order.append("a"), prepend=True)
    tm[2].register_forward_hook(lambda m, a, o: o + 1)
    assert_close(gm(gx), _np(tm(tx)), rtol=1e-5, atol=1e-6)
    assert order == ["a", "b"]


def test_forward_hooks_with_kwargs_and_handles(device):
    class Scale(nn.Module):
        def forward(self, x, *, k=1.0):
            return x * k

    m = Scale()
    seen = []
    h1 = m.register_forward_pre_hook(lambda mod, a, kw: (a, {"k": 3.0}), with_kwargs=True)
    h2 = m.register_forward_hook(lambda mod, a, kw, o: seen.append(kw["k"]), with_kwargs=True)
    x = gp.asarray([1.0, 2.0], device=device)
    assert_close(m(x, k=5.0), np.array([3.0, 6.0]))
    assert seen == [3.0]
    with h1, h2:
        pass
    assert_close(m(x, k=5.0), np.array([5.0, 10.0]))
    assert seen == [3.0]
    h1.remove()   # twice: nothing
    m.register_forward_pre_hook(lambda mod, a, kw: 7, with_kwargs=True)
    with pytest.raises(RuntimeError, match="pre-hook"):
        m(x)


def test_always_call_runs_when_forward_raises(device):
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m, calls = Boom(), []
    m.register_forward_hook(lambda mod, a, o: calls.append("plain"))
    m.register_forward_hook(lambda mod, a, o: calls.append(o), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(gp.asarray([1.0], device=device))
    assert calls == [None]


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
@pytest.mark.parametrize("input_grad", [True, False])
def test_full_backward_hooks_as_torch(device, input_grad):
    tm, gm = _pair(device)
    got, want = [], []
    gm[2].register_full_backward_hook(lambda m, gi, go: got.append((gi, go)))
    tm[2].register_full_backward_hook(lambda m, gi, go: want.append((gi, go)))
    gm.register_full_backward_hook(lambda m, gi, go: got.append((gi, go)))
    tm.register_full_backward_hook(lambda m, gi, go: want.append((gi, go)))
    gx, tx = _x(device, grad=input_grad)
    w = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    gp.sum(gm(gx) * gp.asarray(w, device=device)).backward()
    (tm(tx) * torch.from_numpy(w)).sum().backward()
    assert len(got) == len(want) == 2
    for (gi, go), (ti, to) in zip(got, want):
        assert len(gi) == len(ti) and len(go) == len(to)
        for a, b in zip(gi + go, ti + to):
            assert (a is None) == (b is None)
            if b is not None:
                assert_close(a, _np(b), rtol=1e-5, atol=1e-6)


def test_backward_hooks_replace_gradients_as_torch(device):
    tm, gm = _pair(device)
    gm[2].register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
    tm[2].register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
    gm[0].register_full_backward_hook(lambda m, gi, go: (gi[0] * -2,))
    tm[0].register_full_backward_hook(lambda m, gi, go: (gi[0] * -2,))
    gx, tx = _x(device)
    gp.sum(gm(gx)).backward()
    tm(tx).sum().backward()
    assert_close(gx.grad, _np(tx.grad), rtol=1e-5, atol=1e-6)
    tp = dict(tm.named_parameters())
    for name, p in gm.named_parameters():
        assert_close(p.grad, _np(tp[name].grad), rtol=1e-5, atol=1e-6)


def test_backward_hook_on_two_input_module(device):
    class Mix(nn.Module):
        def forward(self, a, b):
            return a * b + a

    class TMix(torch.nn.Module):
        def forward(self, a, b):
            return a * b + a

    got, want = [], []
    g, t = Mix(), TMix()
    g.register_full_backward_hook(lambda m, gi, go: got.append(gi))
    t.register_full_backward_hook(lambda m, gi, go: want.append(gi))
    ga, ta = _x(device)
    gb, tb = _x(device, grad=False)
    gp.sum(g(ga, gb * 0.5)).backward()
    t(ta, tb * 0.5).sum().backward()
    for a, b in zip(got[0], want[0]):   # torch: zeros for the input that needs no grad
        assert_close(a, _np(b), rtol=1e-5, atol=1e-6)
    assert_close(ga.grad, _np(ta.grad), rtol=1e-5, atol=1e-6)


def test_get_set_submodule_parameter_buffer_half_cpu(device):
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)).to(device)
    assert m.get_parameter("0.weight") is m[0].weight
    assert m.get_buffer("1.running_mean") is m[1].running_mean
    with pytest.raises(AttributeError):
        m.get_parameter("0.running_mean")
    with pytest.raises(AttributeError):
        m.get_buffer("1.weight")
    new = nn.Linear(2, 3)
    m.set_submodule("0", new)
    assert m[0] is new
    with pytest.raises(AttributeError):
        m.set_submodule("5", nn.ReLU(), strict=True)
    m.half()
    assert m[1].weight.dtype == gp.float16 and m[1].num_batches_tracked.dtype == gp.int64
    assert str(m.cpu()[1].weight.device) == "cpu"
