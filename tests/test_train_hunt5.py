"""A PyTorch user porting a whole training script (schedulers resumed from a checkpoint, the
optimizer and scheduler saved with the model through gp.save, a DataLoader, gradient clipping),
checked against torch 2.13 on every device. Each test failed before its fix."""
import copy
import math
from collections import Counter, OrderedDict

import numpy as np
import pytest

import grilly as gp
from grilly import nn, optim
from grilly.nn import serialization as ser
from grilly.nn import utils as nn_utils
from grilly.optim import lr_scheduler as GS
from grilly.utils import data as D

torch = pytest.importorskip("torch")
TS = torch.optim.lr_scheduler


def _opt(lib: str, device, name: str = "SGD", lrs=(0.1, 0.05), **kw):
    """An optimizer of ``lib`` ('t' torch, 'g' grilly) with one tiny parameter per lr group."""
    if lib == "t":
        ps, cls = [torch.nn.Parameter(torch.zeros(2)) for _ in lrs], getattr(torch.optim, name)
    else:
        ps, cls = [gp.zeros(2, device=device) for _ in lrs], getattr(optim, name)
        for p in ps:
            p.requires_grad = True
    return cls([{"params": [p], "lr": lr} for p, lr in zip(ps, lrs)], lr=0.1, **kw)


def _close(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=1e-12, atol=0)


def test_cosine_annealing_resumed_with_last_epoch(device):
    """CosineAnnealingLR(opt, T, last_epoch=k) (resuming after k epochs, the optimizer's lr
    left as the first scheduler set it) jumped to epoch k + 1's lr in its constructor; torch
    keeps the optimizer's lr there and continues from it."""
    seqs = {}
    for lib, S in (("t", TS), ("g", GS)):
        o = _opt(lib, device)
        s = S.CosineAnnealingLR(o, 7, 0.001)
        for _ in range(5):
            o.step()
            s.step()
        s = S.CosineAnnealingLR(o, 7, 0.001, last_epoch=5)
        seq = [list(s.get_last_lr())]
        for _ in range(6):
            o.step()
            s.step()
            seq.append(list(s.get_last_lr()))
        seqs[lib] = seq
    _close(seqs["g"], seqs["t"])


def _after_group_added(lib: str, device, make, steps: int = 8):
    """lrs of every group for ``steps`` steps after a group is added to the optimizer of
    ``make``'s scheduler, and the step at which a ValueError came (or None)."""
    S = TS if lib == "t" else GS
    o = _opt(lib, device, lrs=(0.1,), momentum=0.9)
    s = make(S, o)
    for _ in range(2):
        o.step()
        s.step()
    o.add_param_group({"params": [torch.nn.Parameter(torch.zeros(1)) if lib == "t"
                                  else gp.zeros(1, device=device)], "lr": 0.3})
    seq = []
    for i in range(steps):
        o.step()
        try:
            s.step()
        except ValueError as e:
            if lib == "g":
                assert "param groups but the scheduler computed 1 learning rates" in str(e)
            return seq, i
        seq.append([g["lr"] for g in o.param_groups])
    return seq, None


@pytest.mark.parametrize("make", [
    lambda S, o: S.LambdaLR(o, lambda e: 0.9 ** e),
    lambda S, o: S.CosineAnnealingLR(o, 4, 0.001),
    lambda S, o: S.SequentialLR(o, [S.LinearLR(o, 0.5, 1.0, 2), S.ExponentialLR(o, 0.9)], [3]),
    lambda S, o: S.StepLR(o, 2, 0.5)], ids=["LambdaLR", "Cosine", "SequentialLR", "StepLR"])
def test_group_added_after_the_scheduler(device, make):
    """A param group added (add_param_group, e.g. unfreezing a backbone) after the scheduler
    was made: schedulers whose lrs come from base_lrs (LambdaLR, CosineAnnealingLR's restart
    step, ...) left the new group's lr unscheduled, silently; torch raises (its strict zip) at
    that step, and so does grilly now, naming the cause. Schedulers working from each group's
    lr (StepLR) schedule it, as torch's."""
    seq_g, at_g = _after_group_added("g", device, make)
    seq_t, at_t = _after_group_added("t", device, make)
    assert at_g == at_t
    if seq_t:
        _close(seq_g, seq_t)


_SCHEDULERS = {
    # OneCycleLR's state_dict held its anneal function (no checkpoint could hold it)
    "OneCycleLR": ("Adam", {}, lambda S, o: S.OneCycleLR(o, [0.5, 0.3], total_steps=14,
                                                         three_phase=True)),
    # MultiStepLR's milestones are a Counter (a dict would lose .elements())
    "MultiStepLR": ("SGD", {"momentum": 0.9}, lambda S, o: S.MultiStepLR(o, [2, 6, 6], 0.5)),
    "CyclicLR": ("SGD", {"momentum": 0.9}, lambda S, o: S.CyclicLR(
        o, 0.01, [0.1, 0.2], step_size_up=3, step_size_down=2, mode="triangular2")),
    "SequentialLR": ("SGD", {}, lambda S, o: S.SequentialLR(
        o, [S.LinearLR(o, 0.2, 1.0, 3), S.CosineAnnealingLR(o, 6, 0.001)], [4])),
    "ChainedScheduler": ("SGD", {}, lambda S, o: S.ChainedScheduler(
        [S.ConstantLR(o, 0.5, 3), S.ExponentialLR(o, 0.9)])),
}


@pytest.mark.parametrize("name", list(_SCHEDULERS))
def test_scheduler_state_saved_with_gp_save(device, tmp_path, name):
    """torch.save({'optimizer': ..., 'scheduler': ...}) then resume: gp.save refused anything
    but a flat state dict of Arrays; now the checkpoint round-trips and the resumed lr (and
    momentum or beta1) sequence is torch's uninterrupted one."""
    opt_name, kw, make = _SCHEDULERS[name]

    def hyper(o):
        return [[g["lr"], g.get("momentum", 0.0), tuple(g.get("betas", ()))]
                for g in o.param_groups]

    ref = {}
    for lib, S in (("t", TS), ("g", GS)):
        o = _opt(lib, device, opt_name, **kw)
        s = make(S, o)
        seq = []
        for i in range(12):
            if lib == "g" and i == 5:
                path = tmp_path / "ck.safetensors"
                gp.save({"optimizer": o.state_dict(), "scheduler": s.state_dict(), "epoch": i},
                        path)
                ck = gp.load(path, map_location=device)
                o = _opt(lib, device, opt_name, **kw)
                s = make(S, o)
                o.load_state_dict(ck["optimizer"])
                s.load_state_dict(ck["scheduler"])
                assert ck["epoch"] == i
            o.step()
            s.step()
            seq.append(hyper(o) + [list(s.get_last_lr())])
        ref[lib] = seq
    for a, b in zip(ref["g"], ref["t"]):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close([v for part in x for v in (part if isinstance(part, tuple) else [part])],
                   [v for part in y for v in (part if isinstance(part, tuple) else [part])])


def test_plateau_state_with_inf_in_a_checkpoint(device, tmp_path):
    """ReduceLROnPlateau's state holds best=inf (JSON has no inf): it round-trips through
    gp.save, and the resumed reductions are torch's."""
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.89, 0.9, 0.9, 0.9, 0.5, 0.6, 0.7, 0.8]
    seqs = {}
    for lib, S in (("t", TS), ("g", GS)):
        o = _opt(lib, device, momentum=0.9)
        s = S.ReduceLROnPlateau(o, patience=1, cooldown=1, factor=0.5)
        seq = []
        for i, m in enumerate(metrics):
            if lib == "g" and i in (0, 7):   # best is inf at i == 0
                gp.save({"s": s.state_dict(), "o": o.state_dict()}, tmp_path / "p.pt")
                ck = gp.load(tmp_path / "p.pt", device=device)
                o = _opt(lib, device, momentum=0.9)
                s = S.ReduceLROnPlateau(o, patience=1, cooldown=1, factor=0.5)
                s.load_state_dict(ck["s"])
                o.load_state_dict(ck["o"])
            s.step(m)
            seq.append(list(s.get_last_lr()))
        seqs[lib] = seq
    _close(seqs["g"], seqs["t"])


def _train(lib: str, device, X, Y, W, batches, epochs, ck_path=None, resume=None):
    """A torch-style training loop: a DataLoader with a fixed batch_sampler, AdamW whose
    second layer is added later (add_param_group), StepLR, clip_grad_norm_ (inf norm), a
    checkpoint after epoch 1 (``ck_path``) or a start from one (``resume``)."""
    if lib == "t":
        tnn, tu = torch.nn, torch.utils.data
        model = tnn.Sequential(tnn.Linear(3, 4), tnn.Tanh(), tnn.Linear(4, 2))
        model.load_state_dict({k: torch.tensor(v) for k, v in W.items()})
        loader = tu.DataLoader(tu.TensorDataset(torch.tensor(X), torch.tensor(Y)),
                               batch_sampler=batches)
        opt = torch.optim.AdamW(model[0].parameters(), lr=0.05, weight_decay=0.1)
        sched_mod, clip = TS, torch.nn.utils.clip_grad_norm_
    else:
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to(device)
        model.load_state_dict(W)
        loader = D.DataLoader(D.TensorDataset(gp.asarray(X, device=device),
                                              gp.asarray(Y, device=device)),
                              batch_sampler=batches, device=device)
        opt = optim.AdamW(model[0].parameters(), lr=0.05, weight_decay=0.1)
        sched_mod, clip = GS, nn_utils.clip_grad_norm_
    opt.add_param_group({"params": list(model[2].parameters()), "lr": 0.02})
    sched = sched_mod.StepLR(opt, 1, 0.7)
    start = 0
    if resume is not None:
        ck = gp.load(resume, map_location=device)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
        start = ck["epoch"] + 1
    norms = []
    for epoch in range(start, epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss = ((model(xb) - yb) ** 2).mean()
            loss.backward()
            norms.append(float(clip(model.parameters(), 0.5, norm_type=float("inf"))))
            opt.step()
        sched.step()
        if ck_path is not None and epoch == 1:
            gp.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                     "scheduler": sched.state_dict(), "epoch": epoch}, ck_path)
    params = {k: (v.detach().numpy() if lib == "t" else np.asarray(v))
              for k, v in model.state_dict().items()}
    return params, norms


def test_training_resumed_from_a_gp_save_checkpoint(device, tmp_path):
    """The canonical checkpoint ({'model', 'optimizer', 'scheduler', 'epoch'}) written with
    gp.save was a TypeError; now a run resumed from it ends on the uninterrupted run's
    parameters (bit for bit), which are torch's."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 3)).astype(np.float32)
    Y = rng.standard_normal((10, 2)).astype(np.float32)
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    W = {k: v.detach().numpy().copy() for k, v in t.state_dict().items()}
    batches = [[3, 1, 4, 0], [9, 2, 6], [5, 8, 7]]
    ref_t, norms_t = _train("t", device, X, Y, W, batches, 4)
    ck = tmp_path / "ck.pt"
    full, norms = _train("g", device, X, Y, W, batches, 4, ck_path=ck)
    resumed, norms_r = _train("g", device, X, Y, W, batches, 4, resume=ck)
    for k in ref_t:
        np.testing.assert_array_equal(resumed[k], full[k])
        np.testing.assert_allclose(full[k], ref_t[k], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(norms, norms_t, rtol=1e-5)
    np.testing.assert_array_equal(norms_r, norms[len(norms) - len(norms_r):])


def test_checkpoint_structure_round_trip(device, tmp_path):
    """Everything torch.load(weights_only=True) gives back for a checkpoint of tensors, dicts
    (int and tuple keys, OrderedDict, Counter), lists, tuples and scalars (inf, nan) comes
    back from gp.load with the same types and values, Arrays on the device asked for; the
    file is still safetensors (nn.load reads its arrays)."""
    a = gp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3), device=device)
    b = gp.asarray(np.array([1, 2], np.int64), device=device)

    def build(x, y):
        return {"model": OrderedDict([("w", x), ("b", y)]), "hist": [1.5, float("inf"),
                float("nan"), None, True, "s", (1, (2, "t"))], 7: {(1, 2): [x]},
                "c": Counter({4: 2, 2: 1}), "e": 3}

    ref = torch.load(_tsave(build(torch.tensor(np.asarray(a)), torch.tensor(np.asarray(b))),
                            tmp_path), weights_only=True)
    gp.save(build(a, b), tmp_path / "g.pt")
    got = gp.load(tmp_path / "g.pt", map_location=device)

    def same(g, t):
        if isinstance(t, torch.Tensor):
            assert isinstance(g, gp.Array) and g.device == device
            np.testing.assert_array_equal(np.asarray(g), t.numpy())
            assert str(g.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
            return
        assert type(g) is type(t), (g, t)
        if isinstance(t, dict):
            assert list(g) == list(t)
            for k in t:
                same(g[k], t[k])
        elif isinstance(t, (list, tuple)):
            assert len(g) == len(t)
            for u, v in zip(g, t):
                same(u, v)
        elif isinstance(t, float) and math.isnan(t):
            assert math.isnan(g)
        else:
            assert g == t

    same(got, ref)
    flat = ser.load(tmp_path / "g.pt")
    assert list(flat) == ["model.w", "model.b", "7.(1, 2).0"]
    np.testing.assert_array_equal(np.asarray(flat["model.w"]), np.asarray(a))


def _tsave(obj, tmp_path):
    path = tmp_path / "t.pt"
    torch.save(obj, path)
    return path


def test_checkpoint_refusals(device, tmp_path):
    """What a safetensors checkpoint cannot hold is a TypeError naming where it is (torch
    would pickle it; nothing is pickled here), and a structure that does not match the file's
    tensors is a SafetensorsError, not a crash."""
    x = gp.ones(2, device=device)
    with pytest.raises(TypeError, match=r"save: the value at 'fn' is a function"):
        gp.save({"w": x, "fn": lambda e: e}, tmp_path / "a.pt")
    with pytest.raises(TypeError, match=r"save: the value at 'opt.s' is a set"):
        gp.save({"opt": {"s": {1, 2}}}, tmp_path / "a.pt")
    with pytest.raises(TypeError, match=r"save: a state dict, a Module or a checkpoint"):
        gp.save(3, tmp_path / "a.pt")
    for bad in ('{"$a": "missing"}', '{"$d": [[1]], "$k": "dict"}', '{"$x": 1}', "[1,"):
        ser.save({"w": x}, tmp_path / "b.pt", metadata={"grilly.checkpoint": bad})
        with pytest.raises(ser.SafetensorsError, match="checkpoint structure"):
            gp.load(tmp_path / "b.pt")
    # (torch's own: a function cannot be loaded with weights_only)
    with pytest.raises(Exception):
        torch.load(_tsave({"fn": copy.copy}, tmp_path), weights_only=True)


def test_clip_grad_norm_of_no_gradients(device):
    """clip_grad_norm_ / get_total_norm of no gradients returned a float64 zero; torch's is
    float32."""
    p = gp.zeros(3, device=device)
    p.requires_grad = True
    for g, t in ((nn_utils.clip_grad_norm_([p], 1.0), torch.nn.utils.clip_grad_norm_([], 1.0)),
                 (nn_utils.get_total_norm([]), torch.nn.utils.get_total_norm([]))):
        assert g.dtype == gp.float32 and t.dtype == torch.float32
        assert float(g) == float(t)


def test_save_and_load_through_file_objects(device, tmp_path):
    """torch.save(obj, f) / torch.load(f) take binary file objects (io.BytesIO, open(..., 'wb'))
    as well as paths: a state dict, a checkpoint and a .npy stream round-trip through them, and
    a text-mode file is a TypeError naming the call (not a decoding error)."""
    import io
    m = nn.Linear(3, 2).to(device)
    opt = optim.Adam(m.parameters(), lr=0.01)
    m(gp.ones((1, 3), device=device)).sum().backward()
    opt.step()
    buf = io.BytesIO()
    gp.save({"model": m.state_dict(), "opt": opt.state_dict(), "epoch": 3}, buf)
    buf.seek(0)
    ck = gp.load(buf, map_location=device)
    assert ck["epoch"] == 3 and list(ck["model"]) == ["weight", "bias"]
    _close(np.asarray(ck["opt"]["state"][0]["exp_avg"]), np.asarray(opt.state_dict()["state"][0]["exp_avg"]))
    # torch reads the same bytes as a safetensors state dict (its own loader of the format)
    st = pytest.importorskip("safetensors.torch")
    buf2 = io.BytesIO()
    gp.save(m, buf2)
    t = st.load(buf2.getvalue())
    _close(t["weight"].numpy(), np.asarray(m.weight))
    path = tmp_path / "m.pt"
    with open(path, "wb") as f:
        f.write(b"head")   # written from the file's position: torch.save's behaviour
        gp.save(m, f)
    with open(path, "rb") as f:
        assert f.read(4) == b"head"
        back = gp.load(f, map_location=device)
    _close(np.asarray(back["bias"]), np.asarray(m.bias))
    npy = io.BytesIO()
    np.save(npy, np.arange(3))
    npy.seek(0)
    np.testing.assert_array_equal(np.asarray(gp.load(npy)), np.arange(3))
    with open(path, encoding="latin-1") as f, pytest.raises(TypeError, match="binary mode"):
        gp.load(f)
    with open(tmp_path / "t.pt", "w") as f, pytest.raises(TypeError, match="binary mode"):
        gp.save(m, f)
    with pytest.raises(TypeError, match="load: expected a path"):
        gp.load(3)


@pytest.mark.parametrize("pattern", ["normal", "sched_first", "sequential_bad", "chained",
                                     "steps_before", "two_scheds"])
def test_scheduler_stepped_before_the_optimizer_warns_as_torch(pattern):
    """torch warns once when an lr scheduler's first step() comes before any optimizer.step()
    (the schedule's first value is skipped); grilly warned never. The same call orders warn
    (or not) as torch's."""
    import warnings

    def run(lib):
        o = _opt(lib, "cpu", lrs=(0.1,))
        S = TS if lib == "t" else GS
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            if pattern == "normal":
                s = S.StepLR(o, 2)
                for _ in range(3):
                    o.step()
                    s.step()
            elif pattern == "sched_first":
                s = S.StepLR(o, 2)
                for _ in range(3):
                    s.step()
                    o.step()
            elif pattern == "sequential_bad":
                s = S.SequentialLR(o, [S.ConstantLR(o, 0.5, 2), S.ExponentialLR(o, 0.9)], [2])
                for _ in range(4):
                    s.step()
                    o.step()
            elif pattern == "chained":
                s = S.ChainedScheduler([S.ConstantLR(o, 0.5, 2), S.ExponentialLR(o, 0.9)])
                for _ in range(3):
                    o.step()
                    s.step()
            elif pattern == "steps_before":
                o.step()
                S.StepLR(o, 2).step()
            else:   # two schedulers, the second made after an optimizer step
                s1 = S.StepLR(o, 2)
                o.step()
                s1.step()
                S.ExponentialLR(o, 0.9).step()
        return sum("before `optimizer.step()`" in str(x.message) for x in w)
    assert run("g") == run("t")
