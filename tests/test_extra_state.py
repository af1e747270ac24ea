"""Module.get_extra_state / set_extra_state (torch's ``_extra_state`` key, against torch 2.13),
its values through gp.save / gp.load and nn.save / nn.load (no pickle), and grilly.memory's
memories saving and loading what they store, on every device."""
import io
import math

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.memory import (AssociativeMemory, CapsuleConfig, CapsuleTransformer, EpisodicMemory,
                           KeyValueMemory)


# ---- Module: torch's keys, missing and unexpected keys --------------------------------------
def _pair(lib, dev=None):
    """The same module tree in grilly or torch: a child with extra state, one overriding only
    get_extra_state, a plain Linear."""
    kw = {"device": dev} if dev is not None else {}

    class WithExtra(lib.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.Linear(2, 2, **kw)
            self.v = [1]

        def get_extra_state(self):
            return {"v": self.v}

        def set_extra_state(self, state):
            self.v = state["v"]

    class OnlyGet(lib.Module):
        def get_extra_state(self):
            return 5

    class Top(lib.Module):
        def __init__(self):
            super().__init__()
            self.a = WithExtra()
            self.g = OnlyGet()
            self.b = lib.Linear(1, 1, **kw)
    return Top


def _outcome(model, sd, strict):
    try:
        r = model.load_state_dict(sd, strict=strict)
    except RuntimeError:
        return "RuntimeError"
    return sorted(r.missing_keys), sorted(r.unexpected_keys)


def test_extra_state_keys_missing_unexpected_match_torch(device):
    torch = pytest.importorskip("torch")
    G, T = _pair(nn, device), _pair(torch.nn)
    g, t = G(), T()
    sd_g, sd_t = g.state_dict(), t.state_dict()
    assert list(sd_g) == list(sd_t)
    assert sd_g["a._extra_state"] == sd_t["a._extra_state"] and sd_g["g._extra_state"] == 5

    def edits(sd):
        no_a = {k: v for k, v in sd.items() if k != "a._extra_state"}
        no_g = {k: v for k, v in sd.items() if k != "g._extra_state"}
        extra_b = {**no_g, "b._extra_state": 3}
        return [dict(sd), no_a, no_g, extra_b]
    for strict in (False, True):
        for eg, et in zip(edits(sd_g), edits(sd_t)):
            assert _outcome(G(), eg, strict) == _outcome(T(), et, strict), (strict, list(eg))

    # set_extra_state gets the saved value
    g.a.v, t.a.v = [7, "x"], [7, "x"]
    g2, t2 = G(), T()
    g2.load_state_dict(g.state_dict(), strict=False)
    t2.load_state_dict(t.state_dict(), strict=False)
    assert g2.a.v == t2.a.v == [7, "x"]
    for m in (nn.Module(), torch.nn.Module()):
        with pytest.raises(RuntimeError):
            m.get_extra_state()
        with pytest.raises(RuntimeError):
            m.set_extra_state(1)


def test_failed_set_extra_state_leaves_the_model_as_it_was(device):
    class Box(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2, device=device)
            self.v = 0

        def get_extra_state(self):
            return self.v

        def set_extra_state(self, state):
            if state < 0:
                raise ValueError("Box.set_extra_state: state must be >= 0")
            self.v = state

    model = nn.Sequential(Box(), Box())
    sd = model.state_dict()
    sd["0._extra_state"], sd["1._extra_state"] = 4, -1
    sd = {k: (gp.zeros_like(v) if isinstance(v, gp.Array) else v) for k, v in sd.items()}
    before = [np.asarray(p).copy() for p in model.parameters()]
    with pytest.raises(ValueError, match="must be >= 0") as e:
        model.load_state_dict(sd)
    assert any("'1._extra_state'" in n for n in e.value.__notes__)
    assert model[0].v == 0 and model[1].v == 0   # the first module's state put back
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(np.asarray(p), b)


# ---- checkpoints: extra-state values without pickle -----------------------------------------
class _Holder(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.lin = nn.Linear(2, 2, device=device)
        self.state = None

    def get_extra_state(self):
        return self.state

    def set_extra_state(self, state):
        self.state = state


def _same(a, b):
    if isinstance(a, gp.Array):
        return isinstance(b, gp.Array) and a.dtype == b.dtype and a.shape == b.shape and \
            np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, dict):
        return type(b) is type(a) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(b) is type(a) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("api", ["gp", "nn"])
def test_extra_state_values_round_trip_save_load(device, api):
    save, load = (gp.save, gp.load) if api == "gp" else (nn.save, nn.load)
    src = _Holder(device)
    src.state = {"rows": gp.asarray(np.arange(6.0).reshape(2, 3), device=device),
                 "n": 3, "name": "kv", "none": None, "flags": [True, 2.5, float("inf")],
                 "pair": (gp.ones((2,), dtype=gp.int64, device=device), float("nan")),
                 1: "an int key"}
    buf = io.BytesIO()
    save(src, buf)
    buf.seek(0)
    sd = load(buf, device=device)
    assert list(sd) == list(src.state_dict())
    dst = _Holder(device)
    assert dst.load_state_dict(sd) == ([], [])
    assert _same(src.state, dst.state)
    np.testing.assert_array_equal(np.asarray(dst.lin.weight), np.asarray(src.lin.weight))
    # what cannot be stored without pickle: a TypeError naming the key
    for bad in ({"a": {1, 2}}, [np.zeros(2)], object()):
        src.state = bad
        with pytest.raises(TypeError, match=r"_extra_state"):
            save(src, io.BytesIO())


def test_nn_save_keeps_its_metadata_and_plain_files_stay_plain(device):
    src = _Holder(device)
    src.state = {"k": 1}
    buf = io.BytesIO()
    nn.save(src, buf, metadata={"who": "me"})
    buf.seek(0)
    assert nn.serialization.load_metadata(buf)["who"] == "me"
    plain = {"w": gp.ones((2,), device=device)}
    buf = io.BytesIO()
    nn.save(plain, buf)
    buf.seek(0)
    assert "grilly.checkpoint" not in nn.serialization.load_metadata(buf)
    with pytest.raises(TypeError, match="state_dict\\['w'\\]"):   # only _extra_state may be data
        nn.save({"w": [1.0]}, io.BytesIO())


# ---- grilly.memory: the stored rows in state_dict -------------------------------------------
def _filled(kind, device, rng, **kw):
    """(memory, a function of a memory giving its answers to fixed queries as numpy arrays)."""
    if kind == "kv":
        m = KeyValueMemory(4, 3, capacity=5, eviction="lru", device=device, **kw)
        m.write(rng.standard_normal((4, 4)), rng.standard_normal((4, 3)))
        q = rng.standard_normal((2, 4))
        m.read(q)   # LRU stamps: the slots read become the newest
        m.write(rng.standard_normal((2, 4)), rng.standard_normal((2, 3)))   # evicts one
        more = rng.standard_normal((2, 4)), rng.standard_normal((2, 3))

        def ask(mem):
            out = [np.asarray(mem.read(q, top_k=2)[0])]
            mem.write(*more)   # which slots go follows the stamps and the clock
            out += [np.asarray(k) for k in mem.keys] + [np.asarray(v) for v in mem.values]
            return out
    elif kind == "episodic":
        m = EpisodicMemory(3, 2, capacity=4, device=device, **kw)
        for t in (3, 1, 2):
            m.store(rng.standard_normal((t, 3)), rng.standard_normal(2))
        ctx, cue, part = rng.standard_normal(2), rng.standard_normal(3), rng.standard_normal((1, 3))

        def ask(mem):
            r, c = mem.recall(context=ctx), mem.recall(cue=cue)
            return [np.asarray(r["sequence"]), np.asarray(c["sequence"]),
                    np.asarray([r["index"], c["index"], c["step"]]), np.asarray(mem.complete(part))]
    else:
        m = AssociativeMemory(5, device=device, **kw)
        m.store(np.sign(rng.standard_normal((3, 5))))
        cue = rng.standard_normal((2, 5))

        def ask(mem):
            return [np.asarray(mem(cue))]
    return m, ask


def _fresh(kind, device, **kw):
    return {"kv": lambda: KeyValueMemory(4, 3, capacity=5, eviction="lru", device=device, **kw),
            "episodic": lambda: EpisodicMemory(3, 2, capacity=4, device=device, **kw),
            "assoc": lambda: AssociativeMemory(5, device=device, **kw)}[kind]()


@pytest.mark.parametrize("kind", ["kv", "episodic", "assoc"])
def test_memory_round_trips_and_answers_the_same(device, kind):
    m, ask = _filled(kind, device, np.random.default_rng(1))
    sd = m.state_dict()
    assert list(sd) == ["_extra_state"]
    a = _fresh(kind, device)
    assert a.load_state_dict(sd) == ([], [])
    # through a file: loaded on the cpu, the rows go to the memory's device and dtype
    buf = io.BytesIO()
    gp.save(m, buf)
    buf.seek(0)
    b = _fresh(kind, device, dtype=gp.float64)
    assert b.load_state_dict(gp.load(buf, map_location="cpu")) == ([], [])
    row = b._ref()
    assert row.device == device and row.dtype == gp.float64
    want = ask(m)
    for mem in (a, b):
        got = ask(mem)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    # an empty memory round-trips to an empty memory
    e = _fresh(kind, device)
    c = _fresh(kind, device)
    c.load_state_dict(sd)
    c.load_state_dict(e.state_dict())
    assert c._ref() is None


@pytest.mark.parametrize("kind", ["kv", "episodic", "assoc"])
def test_memory_bad_extra_state_is_refused(device, kind):
    m, _ = _filled(kind, device, np.random.default_rng(2))
    good = m.state_dict()["_extra_state"]
    target, _ = _filled(kind, device, np.random.default_rng(3))
    before = [np.asarray(x) for x in target.get_extra_state().values() if isinstance(x, gp.Array)]
    rows = {"kv": "keys", "episodic": "sequences", "assoc": "patterns"}[kind]
    wide = dict(good, **{rows: gp.zeros((good[rows].shape[0], 7), device=device)})
    with pytest.raises(ValueError, match=r"set_extra_state: %s must be \(n, \d\)" % rows):
        target.load_state_dict({"_extra_state": wide})
    with pytest.raises(TypeError, match="set_extra_state: state must be a dict"):
        target.set_extra_state([1, 2])
    with pytest.raises(ValueError, match="set_extra_state: state must have the keys"):
        target.set_extra_state({**good, "other": 1})
    with pytest.raises(TypeError, match="real numeric"):
        target.set_extra_state(dict(good, **{rows: np.array([["a"] * good[rows].shape[1]])}))
    if kind == "kv":
        with pytest.raises(ValueError, match="stamps must be a list of 5"):
            target.set_extra_state(dict(good, stamps=[1]))
        with pytest.raises(ValueError, match="capacity"):
            KeyValueMemory(4, 3, capacity=2, device=device).set_extra_state(good)
    if kind == "episodic":
        with pytest.raises(ValueError, match="lengths must be positive and add up"):
            target.set_extra_state(dict(good, lengths=[1, 1, 1]))
    after = [np.asarray(x) for x in target.get_extra_state().values() if isinstance(x, gp.Array)]
    for x, y in zip(after, before):
        np.testing.assert_array_equal(x, y)


def test_capsule_transformer_saves_its_memory_and_old_checkpoints_load(device):
    cfg = CapsuleConfig(vocab_size=8, d_model=8, num_heads=2, num_layers=1, dim_feedforward=8,
                        max_len=6, num_place_cells=4, num_time_cells=4, capsule_dim=4,
                        memory_capacity=8, memory_top_k=2)
    rng = np.random.default_rng(0)
    model = CapsuleTransformer(cfg).to(device)
    # capsules written straight in (remember() runs the encoder: slow to start on Vulkan)
    caps = rng.standard_normal((3, 4))
    model.memory.write(caps, caps)
    buf = io.BytesIO()
    gp.save(model, buf)
    buf.seek(0)
    back = CapsuleTransformer(cfg).to(device)
    back.load_state_dict(gp.load(buf, map_location=device))
    assert len(back.memory) == len(model.memory) == 3
    q = gp.asarray(rng.standard_normal((2, 4)), dtype=gp.float32, device=device)
    np.testing.assert_allclose(np.asarray(back.memory(q, top_k=2)),
                               np.asarray(model.memory(q, top_k=2)), rtol=1e-6, atol=1e-6)
    for (k, a), b in zip(model.state_dict().items(), back.state_dict().values()):
        if isinstance(a, gp.Array):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=k)
    # a state dict saved before the rows were kept (no '_extra_state'): loads strictly, and a
    # fresh model's memory stays empty
    old = {k: v for k, v in model.state_dict().items() if not k.endswith("_extra_state")}
    fresh = CapsuleTransformer(cfg).to(device)
    assert fresh.load_state_dict(old) == ([], [])
    assert len(fresh.memory) == 0
