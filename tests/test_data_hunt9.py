"""Hunt 9: a torch user's data pipeline and nn.Module corners against torch 2.x (a test-only
oracle): DistributedSampler, ModuleDict.pop/clear, Sequential * n, registration-name checks,
Module.to(array / non_blocking) and load_state_dict(assign=True), on every device."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.utils import data as gd

torch = pytest.importorskip("torch")
td = torch.utils.data
tnn = torch.nn


def _np(x) -> np.ndarray:
    return x.detach().numpy() if hasattr(x, "detach") and not isinstance(x, gp.Array) \
        else np.asarray(x)


# ---- DistributedSampler ------------------------------------------------------------------------
@pytest.mark.parametrize("n,replicas", [(7, 3), (8, 4), (2, 3)])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_shares_as_torch(n, replicas, drop_last):
    for rank in range(replicas):
        g = gd.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        t = td.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(g) == list(t) and len(g) == len(t)
        # shuffled: torch's randperm cannot be reproduced, but the share sizes and the layout
        # (one permutation, padded by wrapping round, dealt out rank by rank) are torch's
        gs = gd.DistributedSampler(range(n), replicas, rank, seed=5, drop_last=drop_last)
        ts = td.DistributedSampler(range(n), replicas, rank, seed=5, drop_last=drop_last)
        assert len(list(gs)) == len(gs) == len(ts) == len(list(ts))
    shares = [list(gd.DistributedSampler(range(n), replicas, r, seed=5, drop_last=drop_last))
              for r in range(replicas)]
    dealt = [s[i] for i in range(len(shares[0])) for s in shares]
    perm = dealt[:n] if len(dealt) >= n else dealt
    assert len(set(perm)) == len(perm) and set(perm) <= set(range(n))
    if not drop_last:
        assert sorted(perm) == list(range(n))
        assert dealt == (perm * -(-len(dealt) // n))[:len(dealt)]


def test_distributed_sampler_epochs_and_loader(device):
    ds = gd.TensorDataset(gp.arange(10.0, device=device))
    a = [gd.DistributedSampler(ds, 2, r, seed=1) for r in range(2)]
    b = gd.DistributedSampler(ds, 2, 0, seed=1)
    e0 = [list(s) for s in a]
    assert e0[0] == list(b) and not set(e0[0]) & set(e0[1])   # same order on every replica
    for s in a:
        s.set_epoch(1)
    assert [list(s) for s in a] != e0 and sorted(sum(([*s] for s in a), [])) == list(range(10))
    sampler = gd.DistributedSampler(ds, 3, 1, shuffle=False)
    got = [_np(x[0]).tolist() for x in gd.DataLoader(ds, batch_size=2, sampler=sampler)]
    tds = td.TensorDataset(torch.arange(10.0))
    want = [x[0].tolist() for x in td.DataLoader(
        tds, batch_size=2, sampler=td.DistributedSampler(tds, 3, 1, shuffle=False))]
    assert got == want


def test_distributed_sampler_errors():
    with pytest.raises(ValueError, match="DistributedSampler: invalid rank 2"):
        gd.DistributedSampler(range(4), 2, 2)
    with pytest.raises(ValueError, match="DistributedSampler: rank must be >= 0"):
        gd.DistributedSampler(range(4), 2, -1)
    with pytest.raises(TypeError, match="DistributedSampler: num_replicas must be an int"):
        gd.DistributedSampler(range(4), 2.0, 0)
    with pytest.raises(NotImplementedError, match="DistributedSampler: num_replicas and rank"):
        gd.DistributedSampler(range(4))
    with pytest.raises(TypeError, match="set_epoch: epoch must be an int"):
        gd.DistributedSampler(range(4), 2, 0).set_epoch(None)


# ---- containers --------------------------------------------------------------------------------
def test_module_dict_pop_clear_and_sequential_times_n():
    g = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
    t = tnn.ModuleDict({"b": tnn.ReLU(), "a": tnn.Tanh()})
    assert type(g.pop("b")).__name__ == type(t.pop("b")).__name__
    assert list(g) == list(t)
    with pytest.raises(KeyError):
        g.pop("zz")
    g.clear()
    t.clear()
    assert len(g) == len(t) == 0 and list(g.children()) == []
    gs, ts = nn.Sequential(nn.Linear(2, 2), nn.Tanh()), tnn.Sequential(tnn.Linear(2, 2), tnn.Tanh())
    for op in (lambda s: s * 2, lambda s: 3 * s):
        a, b = op(gs), op(ts)
        assert list(a._modules) == list(b._modules) and a[0] is a[2] is gs[0]
        assert len(list(a.parameters())) == len(list(b.parameters())) == 2   # shared, as torch
    gs *= 2
    ts *= 2
    assert list(gs._modules) == list(ts._modules) and gs[0] is gs[2]
    with pytest.raises(ValueError, match="Sequential: a non-positive multiplier"):
        gs * 0
    with pytest.raises(TypeError, match="Sequential: can only be multiplied by an int"):
        gs * 1.5


def test_registration_names_as_torch():
    def both(fn_g, fn_t, exc):
        with pytest.raises(exc):
            fn_t()
        with pytest.raises(exc):
            fn_g()

    p, tp = nn.Parameter(gp.ones(1)), tnn.Parameter(torch.ones(1))
    both(lambda: nn.Module().add_module("a.b", nn.ReLU()),
         lambda: tnn.Module().add_module("a.b", tnn.ReLU()), KeyError)
    both(lambda: nn.Module().register_module("", nn.ReLU()),
         lambda: tnn.Module().register_module("", tnn.ReLU()), KeyError)
    both(lambda: nn.Module().register_parameter("w.x", p),
         lambda: tnn.Module().register_parameter("w.x", tp), KeyError)
    both(lambda: nn.Module().register_buffer(3, gp.ones(1)),
         lambda: tnn.Module().register_buffer(3, torch.ones(1)), TypeError)
    # a name another kind already has: torch's KeyError (grilly silently dropped the Linear's
    # weight parameter for the buffer)
    both(lambda: nn.Linear(2, 2).register_buffer("weight", gp.ones(1)),
         lambda: tnn.Linear(2, 2).register_buffer("weight", torch.ones(1)), KeyError)
    both(lambda: nn.Linear(2, 2).add_module("bias", nn.ReLU()),
         lambda: tnn.Linear(2, 2).add_module("bias", tnn.ReLU()), KeyError)
    both(lambda: nn.Module().register_buffer("training", gp.ones(1)),
         lambda: tnn.Module().register_buffer("training", torch.ones(1)), KeyError)
    both(lambda: nn.ParameterDict().__setitem__("a.b", gp.ones(1)),
         lambda: tnn.ParameterDict().__setitem__("a.b", torch.ones(1)), KeyError)
    m = nn.Linear(2, 2, bias=False)
    m.register_parameter("bias", nn.Parameter(gp.zeros(2)))   # the same kind: replaced
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    with pytest.raises(TypeError, match="get_submodule: target must be a dotted name"):
        nn.Sequential(nn.ReLU()).get_submodule(0)


# ---- Module.to and load_state_dict(assign=True) -------------------------------------------------
def test_module_to_array_and_non_blocking(device):
    m = nn.Linear(3, 2)
    w = m.weight
    assert m.to(device, non_blocking=True) is m and m.weight is w and m.weight.device == device
    other = gp.zeros(1, dtype=gp.float64, device=device)
    t = tnn.Linear(3, 2).to(torch.zeros(1, dtype=torch.float64))
    m.to(other)
    assert m.weight is w and str(m.weight.dtype.name) == str(t.weight.dtype).split(".")[1]
    m.to(gp.zeros(1, dtype=gp.int64, device=device))     # an int array: its device only
    assert m.weight.dtype == gp.float64
    m.load_state_dict(t.state_dict())
    x = np.random.default_rng(0).random((4, 3))
    np.testing.assert_allclose(_np(m(gp.asarray(x, device=device))),
                               _np(t(torch.from_numpy(x))), rtol=1e-12)


def test_load_state_dict_assign_keeps_the_values_properties(device):
    rng = np.random.default_rng(1)
    w, b = rng.random((2, 3)), rng.random(2)
    t = tnn.Linear(3, 2)
    tw = torch.from_numpy(w.copy())
    t.load_state_dict({"weight": tw, "bias": torch.from_numpy(b.copy())}, assign=True)
    g = nn.Linear(3, 2, device=device)
    gw = gp.asarray(w, device=device)
    g.load_state_dict({"weight": gw, "bias": gp.asarray(b, device=device)}, assign=True)
    # the state dict's dtype, as torch's (grilly cast it to the module's float32)
    assert g.weight.dtype.name == str(t.weight.dtype).split(".")[1] == "float64"
    assert isinstance(g.weight, nn.Parameter) and g.weight.requires_grad
    assert not gw.requires_grad and not isinstance(gw, nn.Parameter)   # the caller's array
    gw[0, 0] = 5.0       # the parameter shares the value's memory, as torch's
    tw[0, 0] = 5.0
    np.testing.assert_array_equal(_np(g.weight), _np(t.weight))
    x = rng.random((4, 3))
    out = g(gp.asarray(x, device=device))
    out.sum().backward()
    tout = t(torch.from_numpy(x))
    tout.sum().backward()
    np.testing.assert_allclose(_np(out), _np(tout), rtol=1e-12)
    np.testing.assert_allclose(_np(g.weight.grad), _np(t.weight.grad), rtol=1e-12)
    # NumPy / torch values keep their dtype too, on the module's device
    g2 = nn.Linear(3, 2, device=device)
    g2.load_state_dict({"weight": w.astype(np.float16), "bias": torch.zeros(2)}, assign=True)
    assert g2.weight.dtype == gp.float16 and g2.bias.dtype == gp.float32
    assert g2.weight.device == device
    # without assign: copied in place into the module's dtype, as before
    g3 = nn.Linear(3, 2, device=device)
    w3 = g3.weight
    g3.load_state_dict({"weight": gw, "bias": gp.asarray(b, device=device)})
    assert g3.weight is w3 and g3.weight.dtype == gp.float32


# ---- the batched-fetch protocol ----------------------------------------------------------------
def _batched(mod):
    class Batched(mod.Dataset):
        """A dataset that fetches a whole batch at once (torch's ``__getitems__``)."""

        def __init__(self) -> None:
            self.calls = []

        def __len__(self) -> int:
            return 5

        def __getitem__(self, i):
            raise RuntimeError("the per-sample path was taken")

        def __getitems__(self, idx: list) -> list:
            self.calls.append(list(idx))
            return [{"x": np.full(2, i, np.float32), "i": i} for i in idx]

    return Batched()


@pytest.mark.parametrize("workers", [0, 2])
def test_dataset_getitems_is_used_as_torch(device, workers):
    g, t = _batched(gd), _batched(td)
    gl = gd.DataLoader(g, batch_size=2, num_workers=workers, device=device)
    tl = td.DataLoader(t, batch_size=2)
    for a, b in zip(gl, tl, strict=True):
        assert a.keys() == b.keys()
        for k in b:
            assert a[k].device == device
            np.testing.assert_array_equal(_np(a[k]), _np(b[k]))
    assert sorted(g.calls) == sorted(t.calls)
    # a Subset passes the mapped indices to its dataset's __getitems__, as torch's
    gs = [_np(b["i"]).tolist() for b in gd.DataLoader(gd.Subset(g, [4, 0, 2]), batch_size=2)]
    ts = [b["i"].tolist() for b in td.DataLoader(td.Subset(t, [4, 0, 2]), batch_size=2)]
    assert gs == ts and g.calls[-2:] == t.calls[-2:]


def test_train_calls_the_childrens_train_as_torch():
    def build(lib):
        class Frozen(lib.Module):
            """Keeps its BatchNorm in eval whatever the parent asks (a common fine-tuning
            pattern: the override must be called by the parent's train())."""

            def __init__(self) -> None:
                super().__init__()
                self.bn = lib.BatchNorm1d(2)

            def train(self, mode: bool = True):
                return super().train(False)

        return lib.Sequential(lib.Linear(2, 2), Frozen(), lib.Dropout(0.5))

    g, t = build(nn), build(tnn)
    for step in ("train", "eval", "train"):
        getattr(g, step)()
        getattr(t, step)()
        assert [m.training for m in g.modules()] == [m.training for m in t.modules()]
