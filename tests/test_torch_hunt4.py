"""A PyTorch user's data pipeline, checkpoint hooks and losses ported to grilly, each against
torch 2.13 on every device; each test failed before its fix: default_collate's structure (a
tuple sample collates to a list, its strings to a tuple, mappings keep their type, Python
numbers typed as torch.tensor types them) and torch tensors in samples, torch.Generator for
shuffling, worker threads as torch's workers (get_worker_info, the batch each worker makes,
iterable datasets, persistent workers), Module and Optimizer state-dict hooks, the global
optimizer step hooks, and regression losses keeping a float input's dtype with integer targets.
"""
import collections
import threading
import time
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import grilly as gp
from grilly import nn, optim
from grilly.nn import functional as F
from grilly.optim import optimizer as goptimizer
from grilly.utils import data as gd

torch = pytest.importorskip("torch")
from torch.optim import optimizer as toptimizer  # noqa: E402

td = torch.utils.data
TF = torch.nn.functional

Pt = namedtuple("Pt", "x y")


def _dev(device):
    return gp.asarray(0, device=device).device


def _same(g, t, device=None):
    """A grilly batch equals torch's exactly: the same container types (list or tuple, dict
    type, named tuple) all the way down, Arrays where torch has tensors (dtype, values, device)."""
    if isinstance(t, torch.Tensor):
        assert isinstance(g, gp.Array), (type(g), t)
        assert g.dtype.name == str(t.dtype).replace("torch.", ""), (g.dtype, t.dtype)
        if device is not None:
            assert g.device == _dev(device)
        np.testing.assert_array_equal(np.asarray(g.to_device("cpu"), dtype=np.float64),
                                      t.detach().double().numpy())
        return
    assert type(g) is type(t), (type(g), type(t), g, t)
    if isinstance(t, collections.abc.Mapping):
        assert list(g) == list(t)
        for k in t:
            _same(g[k], t[k], device)
    elif isinstance(t, (list, tuple)):
        assert len(g) == len(t)
        for a, b in zip(g, t):
            _same(a, b, device)
    else:
        assert g == t


# ---- default_collate ---------------------------------------------------------------------------
_CASES = {
    "tuple with a string": [(1, "a"), (2, "b")],
    "list with a string": [[1.5, "a"], [2.5, "b"]],
    "strings": ["a", "b"],
    "bytes": [b"a", b"b"],
    "named tuple": [Pt(1, 2.0), Pt(3, 4.0)],
    "dict": [{"x": 1, "s": "q"}, {"x": 2, "s": "r"}],
    "OrderedDict": [OrderedDict(x=1, y=[True]), OrderedDict(x=2, y=[False])],
    "defaultdict": [collections.defaultdict(int, x=1), collections.defaultdict(int, x=2)],
    "nested": [[(1, [2.0, "z", b"q"])], [(3, [4.0, "w", b"r"])]],
    "numpy scalars": [np.float32(1), np.float32(2)],
    "numpy ints": [(np.int32(1), np.int16(3)), (np.int32(2), np.int16(4))],
    "numpy arrays": [np.ones(2, np.float16), np.zeros(2, np.float16)],
    "ints and a float": [1, 2.5],
    "a bool and an int": [True, 2],
    "bools": [True, False],
    "floats and an int": [1.5, 2],
    "torch tensors": [torch.ones(2), torch.zeros(2)],
    "torch ints in tuples": [(torch.tensor(1), "a"), (torch.tensor(2), "b")],
}


@pytest.mark.parametrize("name", list(_CASES))
def test_default_collate_structure_as_torch(device, name):
    # torch: a tuple sample collates to a list, string fields to the tuple zip makes, mappings
    # keep their type, [1, 2.5] is float32 and [True, 2] int64; grilly gave a tuple with
    # string lists, plain dicts, int64 [1, 2] and bool [True, True], and refused torch tensors
    batch = _CASES[name]
    _same(gd.default_collate(batch, device), td.default_collate(batch), device)


def test_default_collate_errors_as_torch():
    for batch in ([None, None], [np.array(["a"]), np.array(["b"])], [1 + 2j, 3j]):
        with pytest.raises(TypeError, match="default_collate"):
            td.default_collate(batch)
        with pytest.raises(TypeError, match="default_collate"):
            gd.default_collate(batch)
    with pytest.raises(RuntimeError, match="equal size"):
        gd.default_collate([[1, 2], [3]])
    with pytest.raises(ValueError, match="default_collate.*meta.*CPU tensors"):
        gd.default_collate([torch.ones(2, device="meta")] * 2)


def test_default_convert_as_torch(device):
    # batch_size=None: torch keeps a tensor as a tensor and makes a tuple a list
    sample = (torch.arange(3), np.arange(2.0), {"k": (np.int32(4), "s")}, Pt(np.ones(1), 2), "t")
    _same(gd.default_convert(sample, device), td.default_convert(sample), device)


class _TorchSamples(td.Dataset):
    """A torch user's dataset: torch tensors (one requiring grad), a label and a name."""

    def __init__(self, n=5):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 3, generator=g)
        self.w = torch.randn(n, 2, generator=g, requires_grad=True)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.w[i], i % 3, f"s{i}", {"half": self.x[i].to(torch.bfloat16)}


def test_loader_of_a_torch_dataset_as_torch(device):
    ds = _TorchSamples()
    got = list(gd.DataLoader(ds, batch_size=2, device=device))
    want = list(td.DataLoader(ds, batch_size=2))
    assert len(got) == len(want) == 3
    for g, t in zip(got, want):
        _same(g, t, device)
    # a TensorDataset of torch tensors batches as torch's: a list per batch
    tds = (torch.arange(6.0).reshape(3, 2).requires_grad_(), torch.arange(3))
    for g, t in zip(gd.DataLoader(gd.TensorDataset(*tds), batch_size=2, device=device),
                    td.DataLoader(td.TensorDataset(*tds), batch_size=2)):
        _same(g, t, device)


# ---- generators --------------------------------------------------------------------------------
def _order(loader):
    return [v for b in loader for v in np.asarray(b[0].to_device("cpu")).ravel().tolist()]


def test_torch_generator_seeds_the_shuffle(device):
    # grilly refused a torch.Generator (TypeError); torch's order cannot be reproduced, so the
    # generator seeds grilly's: re-seeding repeats an epoch, each epoch draws from it
    x = np.arange(12, dtype=np.float32)
    ds = gd.TensorDataset(gp.asarray(x, device=device))
    g = torch.Generator().manual_seed(3)
    loader = gd.DataLoader(ds, batch_size=5, shuffle=True, generator=g)
    e1, e2 = _order(loader), _order(loader)
    assert sorted(e1) == sorted(e2) == x.tolist() and e1 != e2
    g.manual_seed(3)
    assert _order(loader) == e1
    torch.manual_seed(5)
    before = torch.random.get_rng_state()
    gd.DataLoader(ds, batch_size=5, shuffle=True, generator=g)
    assert torch.equal(torch.random.get_rng_state(), before)   # only the given one draws
    # the samplers and random_split take one too
    for make in (lambda gen: list(gd.RandomSampler(range(7), generator=gen)),
                 lambda gen: list(gd.SubsetRandomSampler([3, 5, 7, 9], generator=gen)),
                 lambda gen: list(gd.WeightedRandomSampler([0.2, 0.5, 0.3], 6, generator=gen)),
                 lambda gen: [s.indices for s in gd.random_split(range(6), [2, 4], generator=gen)]):
        assert make(torch.Generator().manual_seed(1)) == make(torch.Generator().manual_seed(1))


def test_grilly_generator_and_workers_give_one_order(device):
    # as torch's: the same seed gives the same order with or without worker threads
    x = np.arange(16, dtype=np.float32)
    ds = gd.TensorDataset(gp.asarray(x, device=device))
    orders = [_order(gd.DataLoader(ds, batch_size=3, shuffle=True, num_workers=nw,
                                   generator=gp.random.Generator(7)))
              for nw in (0, 2, 3)]
    assert orders[0] == orders[1] == orders[2] and sorted(orders[0]) == x.tolist()


# ---- workers -----------------------------------------------------------------------------------
class _WhoMadeIt(td.Dataset):
    """Each sample says which worker made it (None outside workers)."""

    def __init__(self, info_fn, n=11):
        self.info_fn, self.n = info_fn, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = self.info_fn()
        if info is None:
            return np.array([i, -1, 0, 0])
        return np.array([i, info.id, info.num_workers, info.seed - info.id])


def _rows(loader):
    return [np.asarray(b.to_device("cpu") if isinstance(b, gp.Array) else b).tolist()
            for b in loader]


@pytest.mark.parametrize("in_order", [True, False])
def test_map_style_workers_as_torch(device, in_order):
    # grilly's threads had no get_worker_info; the i-th batch is made by worker i % n, as torch
    got = _rows(gd.DataLoader(_WhoMadeIt(gd.get_worker_info), batch_size=3, num_workers=2,
                              in_order=in_order, device=device))
    want = _rows(td.DataLoader(_WhoMadeIt(td.get_worker_info), batch_size=3, num_workers=2))
    if not in_order:
        got, want = sorted(got), sorted(want)
    assert [[r[:3] for r in b] for b in got] == [[r[:3] for r in b] for b in want]
    assert len({r[3] for b in got for r in b}) == 1     # seed = base seed + id, as torch's
    assert gd.get_worker_info() is None
    assert _rows(gd.DataLoader(_WhoMadeIt(gd.get_worker_info), batch_size=4)) == \
        _rows(td.DataLoader(_WhoMadeIt(td.get_worker_info), batch_size=4))


class _Stream(td.IterableDataset):
    def __init__(self, info_fn, n=7, shard=True):
        self.info_fn, self.n, self.shard = info_fn, n, shard

    def __iter__(self):
        info = self.info_fn()
        lo, hi = 0, self.n
        if info is not None and self.shard:
            per = -(-self.n // info.num_workers)
            lo, hi = info.id * per, min(self.n, info.id * per + per)
        return iter(range(lo, hi))


class _GStream(_Stream, gd.IterableDataset):
    pass


@pytest.mark.parametrize("shard", [True, False])
@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (None, False)])
def test_iterable_dataset_workers_as_torch(device, shard, batch_size, drop_last):
    # grilly iterated an IterableDataset once in the main thread whatever num_workers was;
    # torch's workers each iterate it (sharded through get_worker_info, or duplicated), batch
    # their own samples and hand batches over round-robin
    kw = dict(batch_size=batch_size, drop_last=drop_last, num_workers=2)
    got = _rows(gd.DataLoader(_GStream(gd.get_worker_info, shard=shard), device=device, **kw))
    want = _rows(td.DataLoader(_Stream(td.get_worker_info, shard=shard), **kw))
    assert got == want


def test_worker_init_fn_and_persistent_workers():
    # torch calls worker_init_fn in each worker once per epoch, or once with persistent_workers
    for persistent, calls in ((False, 6), (True, 2)):
        seen = []
        loader = gd.DataLoader(_WhoMadeIt(gd.get_worker_info, n=6), batch_size=2, num_workers=2,
                               persistent_workers=persistent,
                               worker_init_fn=lambda i: seen.append((i, gd.get_worker_info().id)))
        epochs = [_rows(loader) for _ in range(3)]
        assert len(seen) == calls and all(a == b for a, b in seen)
        ids = [[[row[:3] for row in b] for b in e] for e in epochs]
        assert ids[0] == ids[1] == ids[2]
        del loader
    info = gd.WorkerInfo(id=0, num_workers=1, seed=3, dataset=None)
    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo"):
        info.id = 1
    assert repr(info) == "WorkerInfo(id=0, num_workers=1, seed=3, dataset=None)"


class _Broken(gd.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 4:
            raise KeyError(f"sample {i}")
        if i == 5:
            time.sleep(0.5)
        return np.float32(i)


def test_worker_errors_and_timeout_as_torch():
    # torch re-raises a worker's exception in the main process with its type; a batch slower
    # than timeout raises RuntimeError "DataLoader timed out after ..."
    with pytest.raises(KeyError, match="sample 4"):
        list(gd.DataLoader(_Broken(), batch_size=2, num_workers=2))
    with pytest.raises(RuntimeError, match="timed out after 0.1 seconds"):
        list(gd.DataLoader(gd.Subset(_Broken(), [5]), num_workers=1, timeout=0.1))
    for lib in (td, gd):
        with pytest.raises(ValueError, match="multiprocessing_context"):
            lib.DataLoader(range(3), multiprocessing_context="spawn")
    before = threading.active_count()
    loader = gd.DataLoader(range(20), batch_size=2, num_workers=3)
    for _ in loader:
        break                         # an abandoned epoch stops its threads
    deadline = time.time() + 5
    while threading.active_count() > before and time.time() < deadline:
        time.sleep(0.01)
    assert threading.active_count() <= before


# ---- Module state-dict hooks -------------------------------------------------------------------
def _nets(device):
    tm = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(),
                             torch.nn.Sequential(torch.nn.Linear(2, 2)))
    gm = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Sequential(nn.Linear(2, 2))).to(device)
    gm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return tm, gm


def test_module_state_dict_hooks_as_torch(device):
    # grilly's Module had no register_state_dict_pre_hook / post_hook (AttributeError)
    logs = {}
    out = {}
    for lib, m in zip("tg", _nets(device)):
        log = logs[lib] = []
        m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars, log=log:
                                       log.append(("pre", type(mod).__name__, prefix, keep_vars)))
        m[2].register_state_dict_pre_hook(lambda mod, prefix, keep_vars, log=log:
                                          log.append(("pre", type(mod).__name__, prefix, keep_vars)))

        def post(mod, sd, prefix, meta, log=log):
            log.append(("post", type(mod).__name__, prefix, sorted(meta), list(sd)))
            sd[prefix + "note"] = sd[prefix + "0.weight"] * 0

        m[2].register_state_dict_post_hook(post)
        h = m.register_state_dict_post_hook(lambda *a: {})
        with pytest.raises(RuntimeError, match="must return None"):
            m.state_dict()
        h.remove()
        log.clear()
        out[lib] = m.state_dict(keep_vars=True)
        # torch's older hook may return a new state dict for the root
        h = m._register_state_dict_hook(lambda mod, sd, prefix, meta: {"only": 1})
        assert m.state_dict() == {"only": 1}
        h.remove()
    assert logs["g"] == logs["t"]
    assert list(out["g"]) == list(out["t"]) and "2.note" in out["g"]
    assert dict(out["g"]._metadata) == {k: dict(v) for k, v in out["t"]._metadata.items()}


def test_module_load_state_dict_hooks_as_torch(device):
    # a checkpoint with renamed keys, fixed by a load pre-hook; a post-hook that sees the
    # loaded values and clears the keys it accepts, so a strict load passes (torch's use)
    rng = np.random.default_rng(0)
    ckpt = {"first.weight": rng.standard_normal((2, 3)).astype(np.float32),
            "first.bias": rng.standard_normal(2).astype(np.float32),
            "2.0.weight": rng.standard_normal((2, 2)).astype(np.float32),
            "2.0.bias": rng.standard_normal(2).astype(np.float32), "2.junk": np.zeros(1)}
    logs, res = {}, {}
    for lib, m in zip("tg", _nets(device)):
        log = logs[lib] = []
        conv = (lambda a: torch.from_numpy(a)) if lib == "t" else (lambda a: a)
        sd = {k: conv(v) for k, v in ckpt.items()}

        def pre(mod, state, prefix, meta, strict, missing, unexpected, errors, log=log):
            log.append(("pre", type(mod).__name__, prefix, strict, sorted(state)))
            for k in [k for k in state if k.startswith(prefix + "first.")]:
                state[prefix + "0." + k[len(prefix) + 6:]] = state.pop(k)

        def post(mod, keys, log=log, m=m):
            w = m[0].weight
            log.append(("post", type(mod).__name__, list(keys.missing_keys),
                        list(keys.unexpected_keys),
                        np.asarray(w.detach().numpy() if lib == "t" else w.to_device("cpu"))
                        .tolist()))
            keys.unexpected_keys.remove("2.junk")

        m.register_load_state_dict_pre_hook(pre)
        m[2].register_load_state_dict_pre_hook(pre)
        m[2].register_load_state_dict_post_hook(lambda mod, keys, log=log:
                                                log.append(("post", type(mod).__name__)))
        m.register_load_state_dict_post_hook(post)
        res[lib] = m.load_state_dict(sd)
        assert "first.weight" in sd                      # the caller's dict is not changed
    assert logs["g"] == logs["t"]
    assert res["g"].missing_keys == res["t"].missing_keys == []
    assert res["g"].unexpected_keys == res["t"].unexpected_keys == []


def test_module_load_hooks_errors_as_torch(device):
    for lib, m in zip("tg", _nets(device)):
        old = np.array(m[0].weight.detach().numpy() if lib == "t" else m[0].weight.to_device("cpu"))
        sd = m.state_dict()
        h = m.register_load_state_dict_pre_hook(
            lambda mod, state, prefix, meta, strict, missing, unexpected, errors:
            errors.append("checkpoint from another model"))
        with pytest.raises(RuntimeError, match="checkpoint from another model"):
            m.load_state_dict({k: v * 2 for k, v in sd.items()})
        h.remove()
        if lib == "g":   # nothing was written (grilly checks everything first)
            np.testing.assert_array_equal(np.asarray(m[0].weight.to_device("cpu")), old)
        h = m.register_load_state_dict_post_hook(lambda mod, keys: keys)
        with pytest.raises(AssertionError, match="return"):
            m.load_state_dict(sd)
        h.remove()
        # a post-hook adding a missing key fails a strict load, not a non-strict one
        m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.append("x"))
        with pytest.raises(RuntimeError, match="x"):
            m.load_state_dict(sd)
        assert m.load_state_dict(sd, strict=False).missing_keys == ["x"]


# ---- Optimizer state-dict hooks and global step hooks ------------------------------------------
def _opts(device):
    tp = [torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.full((3,), 0.5))]
    gps = [gp.asarray(np.ones(2, np.float32), device=device),
           gp.asarray(np.full(3, 0.5, np.float32), device=device)]
    for p in gps:
        p.requires_grad = True
    return (torch.optim.SGD(tp, lr=0.1, momentum=0.9), tp), (optim.SGD(gps, lr=0.1, momentum=0.9), gps)


def test_optimizer_state_dict_hooks_as_torch(device):
    # grilly's optimizers had no register_(load_)state_dict_pre/post_hook (AttributeError)
    logs, lrs = {}, {}
    for lib, (o, _) in zip("tg", _opts(device)):
        log = logs[lib] = []
        o.register_state_dict_pre_hook(lambda opt, log=log: log.append("pre"))
        o.register_state_dict_pre_hook(lambda opt, log=log: log.append("pre first"), prepend=True)

        def post(opt, sd, log=log):
            log.append(("post", sorted(sd)))
            sd["saved_by"] = "hook"

        o.register_state_dict_post_hook(post)
        o.register_state_dict_post_hook(lambda opt, sd: {**sd, "copy": True})
        sd = o.state_dict()
        log.append(sorted(sd))

        def load_pre(opt, state, log=log):
            log.append(("load pre", state.pop("saved_by"), state.pop("copy")))
            groups = [dict(g, lr=g["lr"] * 3) for g in state["param_groups"]]
            return {"state": state["state"], "param_groups": groups}

        o.register_load_state_dict_pre_hook(load_pre)
        o.register_load_state_dict_post_hook(lambda opt, log=log:
                                             log.append(("load post", opt.param_groups[0]["lr"])))
        o.load_state_dict(sd)
        assert "saved_by" in sd          # the hook saw a shallow copy
        lrs[lib] = o.param_groups[0]["lr"]
    assert logs["g"] == logs["t"]
    assert lrs["g"] == pytest.approx(lrs["t"])


def test_global_optimizer_step_hooks_as_torch(device):
    # torch.optim.optimizer.register_optimizer_step_pre_hook / _post_hook: every optimizer's
    # step runs them (global pre-hooks first, global post-hooks last); grilly had none
    logs, vals = {}, {}
    mods = {"t": toptimizer, "g": goptimizer}
    for lib, (o, ps) in zip("tg", _opts(device)):
        log = logs[lib] = []
        hs = [mods[lib].register_optimizer_step_pre_hook(
                  lambda opt, args, kw, log=log: log.append(("global pre", len(args), kw))),
              mods[lib].register_optimizer_step_post_hook(
                  lambda opt, args, kw, log=log: log.append("global post")),
              o.register_step_pre_hook(lambda opt, args, kw, log=log: log.append("pre")),
              o.register_step_post_hook(lambda opt, args, kw, log=log: log.append("post"))]
        try:
            for p in ps:
                p.grad = p * 0 + 1 if lib == "g" else torch.ones_like(p)
            o.step()
            o.step(closure=None)
        finally:
            for h in hs:
                h.remove()
        o.step()                     # removed: nothing more is logged
        vals[lib] = [np.asarray(p.to_device("cpu")) if lib == "g" else p.detach().numpy()
                     for p in ps]
    assert logs["g"] == logs["t"]
    for a, b in zip(vals["g"], vals["t"]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


# ---- losses ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
@pytest.mark.parametrize("tdtype", ["int64", "int32", "bool", "float64"])
@pytest.mark.parametrize("xdtype", ["float32", "float16", "float64"])
def test_regression_losses_keep_the_input_dtype_as_torch(device, fn, tdtype, xdtype):
    # a float32 input with int64 labels: torch's loss is float32, grilly's was float64 (NumPy
    # promotion); huber_loss also casts a float64 target to the input's dtype, as torch's
    if tdtype == "bool" and fn == "l1_loss":
        pytest.skip("torch refuses a bool target in l1_loss (bool subtraction)")
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(6) * 2).astype(xdtype)
    y = rng.integers(-2, 3, 6).astype(tdtype)
    want = getattr(TF, fn)(torch.tensor(x), torch.tensor(y))
    # (torch's huber_loss backward refuses the targets its forward takes, and torch 2.11's
    # mse_loss backward a float64 target for a float32 input: the reference gradient comes
    # from input and target in the result's dtype, the same values)
    xt = torch.tensor(x).to(want.dtype).requires_grad_()
    getattr(TF, fn)(xt, torch.tensor(y).to(want.dtype)).backward()
    xg = gp.asarray(x, device=device)
    xg.requires_grad = True
    got = getattr(F, fn)(xg, gp.asarray(y, device=device))
    got.backward()
    tol = 2e-3 if "float16" in (xdtype, str(want.dtype)) else 1e-6
    _close = dict(rtol=tol, atol=tol)
    assert got.dtype.name == str(want.dtype).replace("torch.", "")
    np.testing.assert_allclose(float(got), float(want), **_close)
    assert xg.grad.dtype.name == xdtype
    np.testing.assert_allclose(np.asarray(xg.grad.to_device("cpu"), np.float64),
                               xt.grad.double().numpy(), **_close)
    mod = {"mse_loss": nn.MSELoss, "l1_loss": nn.L1Loss, "smooth_l1_loss": nn.SmoothL1Loss,
           "huber_loss": nn.HuberLoss}[fn]()
    assert mod(xg, gp.asarray(y, device=device)).dtype == got.dtype


def test_bce_outside_unit_interval_is_nan_as_documented(device):
    # torch raises "all elements of input should be between 0 and 1" (reading every value);
    # grilly does not read device data back, so such probabilities give nan, on every device
    p = np.array([1.5, -0.5, 0.3], np.float32)
    y = np.array([1.0, 0.0, 1.0], np.float32)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        TF.binary_cross_entropy(torch.tensor(p), torch.tensor(y))
    got = np.asarray(F.binary_cross_entropy(gp.asarray(p, device=device), gp.asarray(y, device=device),
                                            reduction="none").to_device("cpu"))
    want = TF.binary_cross_entropy(torch.tensor(p[2:]), torch.tensor(y[2:]), reduction="none")
    assert np.isnan(got[:2]).all()
    np.testing.assert_allclose(got[2:], want.numpy(), rtol=1e-6)
