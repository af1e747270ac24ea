"""The seed's user on grilly.memory, grilly.search and grilly.learning: numpy in (the seed's
modules took numpy), the constructor's device and dtype honoured, memories that follow
``Module.to``, and bad arguments named. References: numpy float64 formulas, faiss-cpu. Each
test failed before its fix."""
import numpy as np
import pytest

import grilly as gp
from grilly.learning import (EWC, Learning, Whitening, ewc_penalty, natural_gradient, oja_step,
                             sanger_step)
from grilly.memory import (AssociativeMemory, ContextAggregator, EpisodicMemory, GridCells,
                           KeyValueMemory, PlaceCells, TimeCells)
from grilly.search import IndexFlat


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _kv_ref(k, v, q, temperature):
    w = _softmax(_unit(q) @ _unit(k).T / temperature)
    return w @ v, w


def _other(device):
    """A second device (cpu <-> vulkan), or None on a machine with one."""
    names = [str(d) for d in gp.devices() if str(d).split(":")[0] in ("cpu", "vulkan")]
    others = [n for n in names if n.split(":")[0] != device.backend.name]
    return gp.backends.registry.device(others[0]) if others else None


def test_kv_memory_takes_numpy_on_its_device_and_dtype(device):
    R = np.random.default_rng(50)
    k, v, q = R.standard_normal((6, 4)), R.standard_normal((6, 3)), R.standard_normal((2, 4))
    # device= was ignored (numpy rows went to the default device) and read(numpy) raised
    # "reshape: expected a grilly Array"
    m = KeyValueMemory(4, 3, temperature=0.5, device=device)
    m.write(k, v)
    assert m.keys[0].device == device and m.keys[0].dtype == gp.float32
    out, w = m.read(q)
    assert out.device == device and out.dtype == gp.float32
    ref_out, ref_w = _kv_ref(k, v, q, 0.5)
    np.testing.assert_allclose(np.asarray(w), ref_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(out), ref_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(m(q[0].tolist())), ref_out[0], rtol=1e-5, atol=1e-5)
    # dtype= was ignored for the stored rows (float32 arrays stayed float32)
    m64 = KeyValueMemory(4, 3, temperature=0.5, device=device, dtype=gp.float64)
    m64.write(gp.asarray(k.astype(np.float32), device=device), v)
    assert m64.keys[0].dtype == m64.values[0].dtype == gp.float64
    ref_out, _ = _kv_ref(k.astype(np.float32).astype(np.float64), v, q, 0.5)
    np.testing.assert_allclose(np.asarray(m64.read(q)[0]), ref_out, rtol=1e-12)


def test_memories_follow_module_to(device):
    R = np.random.default_rng(51)
    k, v = R.standard_normal((5, 4)), R.standard_normal((5, 3))
    # written on the cpu, then moved: the stored rows stayed behind and every read raised
    # "matmul: arrays are on different devices"
    kv = KeyValueMemory(4, 3, temperature=0.5)
    kv.write(gp.asarray(k, device="cpu"), gp.asarray(v, device="cpu"))
    kv.to(device)
    out = kv.read(gp.asarray(k[:2], device=device))[0]
    assert out.device == device
    np.testing.assert_allclose(np.asarray(out), _kv_ref(k, v, k[:2], 0.5)[0], rtol=1e-10)
    am = AssociativeMemory(4, beta=2.0, steps=1)
    am.store(gp.asarray(k, device="cpu"))
    am.to(device)
    np.testing.assert_allclose(np.asarray(am(gp.asarray(v[:, :1] * k[0], device=device))),
                               _softmax(2.0 * (v[:, :1] * k[0]) @ k.T) @ k, rtol=1e-10)
    em = EpisodicMemory(4, context_dim=3)
    em.store(gp.asarray(k, device="cpu"), gp.asarray(v[0], device="cpu"))
    em.to(device)
    assert em.recall(cue=gp.asarray(k[3], device=device))["step"] == 3
    # an empty memory moved: later numpy rows go to its new device, in its new dtype
    e = KeyValueMemory(4, 3).to(device, gp.float64)
    e.write(k, v)
    assert e.keys[0].device == device and e.keys[0].dtype == gp.float64


def test_memories_take_numpy_queries(device):
    R = np.random.default_rng(52)
    seqs = [R.standard_normal((5, 6)) for _ in range(3)]
    ctx = [R.standard_normal(3) for _ in range(3)]
    em = EpisodicMemory(6, context_dim=3, device=device, dtype=gp.float64)
    for s, c in zip(seqs, ctx):
        em.store(s, c)          # numpy: stored on the memory's device
    assert em.episodes[0][0].device == device
    # recall/complete with numpy raised "sum: expected a grilly Array"
    sims = [float(_unit(c) @ _unit(ctx[1] + 0.1)) for c in ctx]
    r = em.recall(context=ctx[1] + 0.1)
    assert r["index"] == int(np.argmax(sims))
    np.testing.assert_allclose(r["score"], max(sims), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(em.complete(seqs[2][:2])), seqs[2][2:], rtol=1e-12)
    pats = np.sign(R.standard_normal((4, 16)))
    am = AssociativeMemory(16, beta=0.5, steps=2, device=device, dtype=gp.float64)
    am.store(pats)
    cue = pats[2] * np.where(R.random(16) < 0.2, -1.0, 1.0)
    x = cue[None]
    for _ in range(2):
        x = _softmax(0.5 * x @ pats.T) @ pats
    got = am(cue)                # numpy cue: "reshape: expected a grilly Array"
    assert got.device == device and got.shape == (16,)
    np.testing.assert_allclose(np.asarray(got), x[0], rtol=1e-10)
    agg = ContextAggregator(4).to(device)
    items = R.standard_normal((3, 4)).astype(np.float32)
    want = np.asarray(agg(gp.asarray(items, device=device)))
    np.testing.assert_array_equal(np.asarray(agg(items)), want)   # "multiply: cannot combine"


def test_cells_decode_numpy(device):
    pc = PlaceCells.grid(6, dims=2, device=device)
    gc = GridCells((0.3, 0.5), phases=3, device=device)
    tc = TimeCells(16, device=device)
    pos = np.array([[0.3, 0.7]])
    for cells, x, kw in ((pc, pos, {}), (gc, pos, {"resolution": 11}),
                         (tc, np.array([2.0, 9.0]), {})):
        a = cells(x)
        # decode(numpy) raised "max: expected a grilly Array" where forward took numpy
        got = cells.decode(np.asarray(a), **kw)
        assert got.device == device
        np.testing.assert_array_equal(np.asarray(got), np.asarray(cells.decode(a, **kw)))
        with pytest.raises(ValueError, match=rf"{type(cells).__name__}.decode: activity must be"):
            cells.decode(np.ones((1, 3)))
    np.testing.assert_allclose(np.asarray(pc.decode(np.asarray(pc(pos)))), pos, atol=0.02)


def test_memory_arguments_checked():
    with pytest.raises(ValueError, match="GridCells: phases must be a positive int, got 0"):
        GridCells(phases=0)            # was a code of no cells
    with pytest.raises(ValueError, match="TimeCells: n must be a positive int, got 8.0"):
        TimeCells(n=8.0)               # was "'float' object cannot be interpreted as an integer"
    with pytest.raises(ValueError, match="KeyValueMemory: temperature must be a number > 0"):
        KeyValueMemory(4, 3, temperature="a")   # was "could not convert string to float"
    with pytest.raises(TypeError, match="KeyValueMemory: dtype must be a real floating dtype"):
        KeyValueMemory(4, 3, dtype=gp.int32)
    # numpy integers (x.shape[1], np.prod) are ints
    assert KeyValueMemory(np.int64(4), 3, temperature=np.float32(0.5)).key_dim == 4
    assert AssociativeMemory(np.int64(8), beta=np.float32(2.0)).dim == 8
    with pytest.raises(TypeError, match=r"KeyValueMemory.write: keys must be a real numeric "
                                        r"array, got list of dtype <U1"):
        KeyValueMemory(4, 3).write(["a", "b", "c", "d"], np.ones(3))


def test_memories_refuse_another_devices_rows(device):
    other = _other(device)
    if other is None:
        pytest.skip("one device only")
    R = np.random.default_rng(53)
    k = R.standard_normal((3, 4))
    am = AssociativeMemory(4, device=device)
    am.store(k)
    # was "concat: arrays are on different devices", and the episodic memory's came at
    # recall time (from stack), after the bad episode was stored
    with pytest.raises(ValueError, match=rf"AssociativeMemory.store: patterns is on {other}, "
                                         rf"the memory on {device}"):
        am.store(gp.asarray(k, device=other))
    em = EpisodicMemory(4)
    em.store(gp.asarray(k, device=device), gp.asarray(k[0], device=device))
    with pytest.raises(ValueError, match=rf"EpisodicMemory.store: sequence is on {other}"):
        em.store(gp.asarray(k, device=other), gp.asarray(k[0], device=other))
    assert len(em) == 1
    with pytest.raises(ValueError, match=rf"KeyValueMemory.read: query is on {other}"):
        kv = KeyValueMemory(4, 4, device=device)
        kv.write(k, k)
        kv.read(gp.asarray(k, device=other))
    # the cells too (their forward copied such an Array over, silently)
    pc = PlaceCells(np.linspace(0, 1, 5), 0.3).to(device)
    with pytest.raises(ValueError, match=rf"PlaceCells: positions is on {other}"):
        pc(gp.asarray([0.5], device=other))
    tc = TimeCells(4, 1.0, 8.0).to(device)
    with pytest.raises(ValueError, match=rf"TimeCells: t is on {other}"):
        tc(gp.asarray([1.0, 2.0], device=other))
    np.testing.assert_allclose(np.asarray(tc([1.0, 2.0])),
                               np.asarray(tc(gp.asarray([1.0, 2.0], device=device))))


def test_index_flat_numpy_dtype(device):
    R = np.random.default_rng(54)
    xb, xq = R.standard_normal((30, 5)), R.standard_normal((4, 5))
    # dtype=np.float64 was "IndexFlat: dtype must be a real floating dtype"
    ix = IndexFlat(5, "l2", dtype=np.float64, device=device)
    assert ix.dtype == gp.float64
    ix.add(xb)
    d, i = ix.search(xq, 3)
    full = ((xq[:, None, :] - xb[None]) ** 2).sum(-1)
    order = np.argsort(full, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(np.asarray(i), order)
    np.testing.assert_allclose(np.asarray(d), np.take_along_axis(full, order, 1), rtol=1e-10)
    assert IndexFlat(5, dtype="float16", device=device).dtype == gp.float16
    with pytest.raises(TypeError, match=r"IndexFlat.add: x must be a real numeric array"):
        ix.add(np.array([["a"] * 5]))   # was numpy's "could not convert string to float"
    with pytest.raises(TypeError, match=r"IndexFlat.search: queries must be a real numeric"):
        ix.search(None, 2)


def test_index_flat_float64_matches_faiss_ids(device):
    faiss = pytest.importorskip("faiss")
    R = np.random.default_rng(55)
    xb, xq = R.standard_normal((40, 6)).astype(np.float32), R.standard_normal((3, 6))
    f = faiss.IndexFlatIP(6)
    f.add(xb)
    fD, fI = f.search(xq.astype(np.float32), 5)
    ix = IndexFlat(6, "ip", dtype=np.float64, device=device)
    ix.add(xb)
    d, i = ix.search(xq.astype(np.float32), 5)
    np.testing.assert_array_equal(np.asarray(i), fI)
    np.testing.assert_allclose(np.asarray(d), fD, rtol=1e-5)


def test_learning_seed_scalars_checked(device):
    L = gp.VulkanLearning(device=device)    # the seed README's class name
    assert isinstance(L, Learning) and repr(L).startswith("Learning(")
    t, a, f = np.ones(3), np.zeros(3), np.full(3, 2.0)
    np.testing.assert_allclose(L.ewc_penalty((t, a), f, np.float32(2.0)), 6.0, rtol=1e-6)
    # a string was read as a number ("2" -> 2.0) or failed in float() without the op's name
    with pytest.raises(TypeError, match="Learning.ewc_penalty: weight must be a real number"):
        L.ewc_penalty((t, a), f, "2")
    with pytest.raises(TypeError, match="Learning.nlms_update: step_size must be a real number"):
        L.nlms_update(t, t, 0.1, "0.5")
    with pytest.raises(TypeError, match="Learning.whitening: eps must be a real number"):
        L.whitening(np.eye(3), "1e-5")
    with pytest.raises(TypeError, match="Learning.natural_gradient: damping must be a real"):
        L.natural_gradient(t, f, None)


def test_learning_rules_name_bad_arguments(device):
    A = lambda a: gp.asarray(a, device=device)   # noqa: E731
    p, f, a = {"w": A(np.ones(3))}, {"w": A(np.full(3, 2.0))}, {"w": A(np.zeros(3))}
    np.testing.assert_allclose(float(ewc_penalty(p, f, a, np.float64(3.0))), 9.0)
    with pytest.raises(TypeError, match=r"ewc_penalty: params must be a dict of Arrays"):
        ewc_penalty([p["w"]], [f["w"]], [a["w"]])   # was "'list' object has no attribute"
    with pytest.raises(TypeError, match="ewc_penalty: lam must be a real number, got str"):
        ewc_penalty(p, f, a, "2")
    with pytest.raises(TypeError, match=r"ewc_penalty: 'w': the parameter must be a grilly Array"):
        ewc_penalty({"w": np.ones(3)}, f, a)       # was "square: expected a grilly Array"
    with pytest.raises(TypeError, match="natural_gradient: a list of gradients needs a list"):
        natural_gradient([A(np.ones(3))], {"w": A(np.ones(3))})   # was AttributeError
    with pytest.raises(TypeError, match="oja_step: lr must be a real number, got str"):
        oja_step(A(np.ones(3)), A(np.ones(3)), "0.1")
    with pytest.raises(TypeError, match="sanger_step: lr must be a real number, got NoneType"):
        sanger_step(A(np.ones((2, 3))), A(np.ones(3)), None)
    with pytest.raises(TypeError, match="Whitening: eps must be a real number"):
        Whitening(eps="1e-5")
    with pytest.raises(ValueError, match="EWC: kind must be 'empirical' or 'true'"):
        EWC(gp.nn.Linear(2, 2), kind="fisher")     # was accepted until the first consolidate


def test_capsule_transformer_memory_moves_with_the_model(device):
    # the seed's grilly.CapsuleTransformer: episodes remembered on the cpu, then model.to(device)
    # left the capsule memory behind and the next forward raised a device mismatch
    from grilly.memory import CapsuleConfig, CapsuleTransformer
    gp.nn.manual_seed(0)
    cfg = CapsuleConfig(vocab_size=8, d_model=8, num_heads=2, num_layers=1, dim_feedforward=8,
                        max_len=6, capsule_dim=4, memory_capacity=4, memory_top_k=2)
    model = CapsuleTransformer(cfg)
    tokens = np.random.default_rng(56).integers(0, 8, (2, 5))
    model.remember(tokens)
    want = np.asarray(model(tokens))
    model.to(device)
    got = model(tokens)
    assert got.device == device and model.memory.keys[0].device == device
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)
