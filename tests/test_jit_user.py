"""grilly.jit as users call it, against eager execution on every device: gradients when
zero_grad() runs outside the traced function or eager steps are mixed in, the same array passed
twice, in-place writes to inputs, an input returned as an output, replays from several threads,
a jitted function called inside another, @grilly.jit on a method, an out-of-range index."""
import threading

import numpy as np
import pytest

import grilly as gp
import grilly.nn as nn
import grilly.nn.functional as F

R = np.random.default_rng(5)


def _arr(x, device):
    return gp.asarray(np.asarray(x), device=device)


def _full(n, v, device):
    return _arr(np.full(n, v, np.float32), device)


@pytest.mark.parametrize("between", ["zero_grad_outside", "eager_step_between",
                                     "zero_grad_at_the_end"])
def test_gradients_set_on_every_replay(device, between):
    """A leaf's .grad is the replay's gradient even where the caller dropped it: opt.zero_grad()
    outside a jitted forward+backward, or an eager step between jitted whole steps; and stays
    None after a replay of a step that ends with opt.zero_grad() (eager steps after it do not
    accumulate into a stale gradient)."""
    x = _arr(R.standard_normal((8, 3)).astype(np.float32), device)
    t = _arr(R.standard_normal((8, 2)).astype(np.float32), device)

    def run(jitted):
        gp.random.seed(0)
        m = nn.Linear(3, 2).to(device)
        o = gp.optim.SGD(m.parameters(), lr=0.1)
        losses, grads = [], []
        if between == "zero_grad_outside":
            def fwd_bwd(x, t):
                loss = F.mse_loss(m(x), t)
                loss.backward()
                return loss
            f = gp.jit(fwd_bwd) if jitted else fwd_bwd
            for _ in range(4):
                o.zero_grad()
                losses.append(float(f(x, t)))
                grads.append(None if m.weight.grad is None else np.asarray(m.weight.grad))
                o.step()
        elif between == "eager_step_between":
            def step(x, t):
                o.zero_grad()
                loss = F.mse_loss(m(x), t)
                loss.backward()
                o.step()
                return loss
            f = gp.jit(step) if jitted else step
            for i in range(5):
                losses.append(float((step if i == 2 else f)(x, t)))
                grads.append(np.asarray(m.weight.grad))
        else:
            def step_end(x, t):
                loss = F.mse_loss(m(x), t)
                loss.backward()
                o.step()
                o.zero_grad()
                return loss
            f = gp.jit(step_end) if jitted else step_end
            for i in range(6):
                losses.append(float((step_end if i >= 4 else f)(x, t)))
                assert m.weight.grad is None
        return losses, grads, [np.asarray(p) for p in m.parameters()]

    eager, jitted = run(False), run(True)
    np.testing.assert_allclose(jitted[0], eager[0], rtol=1e-5, atol=1e-6)
    for gj, ge in zip(jitted[1], eager[1]):
        assert gj is not None
        np.testing.assert_allclose(gj, ge, rtol=1e-5, atol=1e-6)
    for pj, pe in zip(jitted[2], eager[2]):
        np.testing.assert_allclose(pj, pe, rtol=1e-5, atol=1e-6)


def test_same_array_twice_traces_apart(device):
    """f(x, x) and f(x, y) are different graphs (the aliasing is part of the signature)."""
    x, y = _full(4, 1.0, device), _full(4, 5.0, device)
    f = gp.jit(lambda a, b: a - b)
    f(x, x)
    np.testing.assert_array_equal(np.asarray(f(x, y)), np.full(4, -4.0))
    g = gp.jit(lambda a, b: a - b)
    g(x, y)
    np.testing.assert_array_equal(np.asarray(g(x, x)), np.zeros(4))
    np.testing.assert_array_equal(np.asarray(g(y, x)), np.full(4, 4.0))
    np.testing.assert_array_equal(np.asarray(f(y, y)), np.zeros(4))
    assert f.traces == 2 and g.traces == 2


def test_in_place_writes_to_inputs_reach_the_caller(device):
    """x += 1 and x[1:3] = v inside a jitted function change the caller's array on every call
    (traced, capturing and captured replays)."""
    def f(x):
        x += 1.0
        return x * 2.0

    def g(x, v):
        x[1:3] = v

    jf, jg = gp.jit(f), gp.jit(g)
    for i in range(4):
        x = _full(4, float(i), device)
        np.testing.assert_array_equal(np.asarray(jf(x)), np.full(4, 2.0 * (i + 1)))
        np.testing.assert_array_equal(np.asarray(x), np.full(4, i + 1.0))
        x = _arr(np.zeros(4, np.float32), device)
        jg(x, _full(2, i + 5.0, device))
        np.testing.assert_array_equal(np.asarray(x), [0, i + 5, i + 5, 0])


def test_input_returned_as_output_is_not_overwritten(device):
    """An input returned as is keeps its values after later calls."""
    f = gp.jit(lambda x: (x, x * 2.0))
    outs = [(i, *f(_full(3, float(i), device))) for i in range(4)]
    for i, a, b in outs:
        np.testing.assert_array_equal(np.asarray(a), np.full(3, float(i)))
        np.testing.assert_array_equal(np.asarray(b), np.full(3, 2.0 * i))


def test_replays_from_several_threads(device):
    """One graph replayed from several threads at once: every result is its own input's."""
    w_np = R.standard_normal((16, 16)).astype(np.float32)
    w = _arr(w_np, device)
    f = gp.jit(lambda x: F.relu(x @ w) * 2.0)
    x0 = _arr(np.ones((8, 16), np.float32), device)
    f(x0)
    f(x0)   # traced, then captured where the device can
    wrong, errors = [], []

    def worker(k):
        try:
            rng = np.random.default_rng(k)
            for _ in range(10):
                a = rng.standard_normal((8, 16)).astype(np.float32)
                y = np.asarray(f(_arr(a, device)))
                if not np.allclose(y, np.maximum(a @ w_np, 0) * 2, rtol=1e-4, atol=1e-4):
                    wrong.append(k)
        except Exception as e:   # noqa: BLE001 (reported below)
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    assert not errors and not wrong and f.traces == 1


def test_jitted_function_inside_a_trace_runs_eagerly(device):
    """A jitted function called while another is traced is part of the outer trace, whether
    it was traced before (its replay must not be baked in) or not (no nested trace)."""
    inner = gp.jit(lambda x: x * 2.0)
    outer = gp.jit(lambda x: inner(x) + 1.0)
    inner(_full(3, 0.0, device))
    for i in range(1, 4):
        np.testing.assert_array_equal(np.asarray(outer(_full(3, float(i), device))),
                                      np.full(3, 2.0 * i + 1))
    assert outer.traces == 1
    inner2 = gp.jit(lambda x: x * 2.0)
    outer2 = gp.jit(lambda x: inner2(x) + 1.0)
    for i in range(1, 3):
        np.testing.assert_array_equal(np.asarray(outer2(_full(3, float(i), device))),
                                      np.full(3, 2.0 * i + 1))


def test_jit_on_a_method(device):
    """@grilly.jit on forward binds self; each instance has its own graph."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        @gp.jit
        def forward(self, x):
            return F.relu(self.lin(x))

    gp.random.seed(0)
    m1, m2 = M().to(device), M().to(device)
    for _ in range(3):
        x = _arr(R.standard_normal((4, 3)).astype(np.float32), device)
        for m in (m1, m2):
            np.testing.assert_allclose(np.asarray(m(x)), np.asarray(F.relu(m.lin(x))),
                                       rtol=1e-6, atol=1e-6)
    assert M.forward.traces == 2


def test_out_of_range_index_on_replay_raises(device):
    """An index out of range raises IndexError on a replay as it does eagerly."""
    gp.random.seed(0)
    emb = nn.Embedding(10, 4).to(device)
    f = gp.jit(lambda i: emb(i))
    f(_arr(np.array([1, 2, 3]), device))   # traces on every device (Vulkan: index_check)
    good = _arr(np.array([5, 0, 9]), device)
    np.testing.assert_array_equal(np.asarray(f(good)), np.asarray(emb(good)))
    for bad in ([1, 2, 10], [1, -1, 2]):   # (torch's Embedding: negative indices are errors)
        with pytest.raises(IndexError):
            emb(_arr(np.array(bad), device))
        with pytest.raises(IndexError):
            f(_arr(np.array(bad), device))
    assert f.traces == 1


@pytest.mark.parametrize("case", ["grads_start_none", "grads_start_arrays",
                                  "zero_grad_every_other_call"])
def test_gradients_accumulate_across_replays(device, case):
    """A jitted forward and backward called several times without zero_grad() between
    (micro-batches, then opt.step()) leaves each .grad the sum of the calls' gradients, as
    eagerly: where .grad was None before the first call, where it held an Array (an eager
    backward's, then zeros in place), and with zero_grad() before every other call. A graph
    is kept for each (None or an Array) and reads the .grad the leaf holds at the call."""
    xs = [_arr(R.standard_normal((4, 3)).astype(np.float32), device) for _ in range(9)]

    def run(jitted):
        gp.random.seed(0)
        m = nn.Linear(3, 2).to(device)
        o = gp.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

        def micro(x):
            loss = gp.sum(m(x) ** 2)
            loss.backward()
            return loss

        f = gp.jit(micro) if jitted else micro
        grads = []

        def keep():
            grads.append([np.array(np.asarray(p.grad)) for p in m.parameters()])

        if case == "zero_grad_every_other_call":
            for i, x in enumerate(xs[:8]):
                if i % 2 == 0:
                    o.zero_grad()
                f(x)
                keep()
                if i % 2:
                    o.step()
        else:
            if case == "grads_start_arrays":
                micro(xs[8])   # eagerly: each .grad is an Array before the first jitted call
            for step in range(3):
                if case == "grads_start_none":
                    o.zero_grad()
                for x in xs[3 * step:3 * step + 3]:
                    f(x)
                keep()
                o.step()
                if case == "grads_start_arrays":
                    o.zero_grad(set_to_none=False)   # zeros in place: Arrays again
        if jitted:
            assert f.traces <= 2   # one graph for .grad None, one for .grad an Array
        return grads, [np.array(np.asarray(p)) for p in m.parameters()]

    (ge, pe), (gj, pj) = run(False), run(True)
    for a, b in zip(gj, ge):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
    for x, y in zip(pj, pe):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)


def test_embedding_training_step_replays_and_a_bad_index_changes_nothing(device):
    """A jitted Embedding + Linear training step (integer-array indexing forward, scatter-add
    backward, Adam) equals the eager steps; a replay with an index out of range raises
    IndexError and leaves the parameters and optimizer state as they were, and the next replay
    goes on from there as an eager step would."""
    ids = [R.integers(0, 12, (6, 5)) for _ in range(4)]
    t = R.standard_normal((6, 5, 3)).astype(np.float32)

    def run(jitted):
        gp.random.seed(3)
        emb, lin = nn.Embedding(12, 8).to(device), nn.Linear(8, 3).to(device)
        o = gp.optim.Adam([*emb.parameters(), *lin.parameters()], lr=0.05)
        tt = _arr(t, device)

        def step(i):
            o.zero_grad()
            loss = F.mse_loss(lin(emb(i)), tt)
            loss.backward()
            o.step()
            return loss
        f = gp.jit(step) if jitted else step
        out = [float(f(_arr(i, device))) for i in ids[:2]]
        before = [np.asarray(p).copy() for p in (emb.weight, lin.weight)]
        for bad in (12, -13):
            i = ids[2].copy()
            i[3, 1] = bad
            with pytest.raises(IndexError):
                f(_arr(i, device))
            for p, b in zip((emb.weight, lin.weight), before):
                np.testing.assert_array_equal(np.asarray(p), b)
        out += [float(f(_arr(i, device))) for i in ids[2:]]
        if jitted:
            assert f.traces == 1
        return out, [np.asarray(p) for p in (emb.weight, lin.weight)]

    (le, pe), (lj, pj) = run(False), run(True)
    np.testing.assert_allclose(lj, le, rtol=1e-5, atol=1e-6)
    for a, b in zip(pj, pe):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_take_traces_and_checks_bounds_on_replay(device):
    """x[idx] and take with an index array computed inside the function trace and replay; the
    replay checks the bounds of each new index (the first bad one in the message)."""
    x = _arr(R.standard_normal((7, 3)).astype(np.float32), device)
    f = gp.jit(lambda i: gp.take(x, i * 2, axis=0) + x[i])
    i0 = np.array([0, 1, 3, -1])
    np.testing.assert_allclose(np.asarray(f(_arr(i0, device))),
                               np.asarray(x)[i0 * 2] + np.asarray(x)[i0], rtol=1e-6)
    i1 = np.array([2, -2, 0, 1])
    np.testing.assert_allclose(np.asarray(f(_arr(i1, device))),
                               np.asarray(x)[i1 * 2] + np.asarray(x)[i1], rtol=1e-6)
    with pytest.raises(IndexError, match="index 8 is out of bounds"):
        f(_arr(np.array([0, 4, 1, 0]), device))
    assert f.traces == 1


def test_batch_norm_cumulative_average_traces(device):
    """BatchNorm1d(momentum=None) (the running statistics a cumulative average) jitted gives
    torch's running statistics and outputs over five batches."""
    torch = pytest.importorskip("torch")
    bn = nn.BatchNorm1d(4, momentum=None).to(device)
    tb = torch.nn.BatchNorm1d(4, momentum=None)
    f = gp.jit(lambda x: bn(x))
    for k in range(5):
        x = (R.standard_normal((8, 4)) * (k + 1) + k).astype(np.float32)
        y, ty = f(_arr(x, device)), tb(torch.from_numpy(x))
        np.testing.assert_allclose(np.asarray(y), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert f.traces == 1 and int(bn.num_batches_tracked) == 5
    np.testing.assert_allclose(np.asarray(bn.running_mean), tb.running_mean.numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(bn.running_var), tb.running_var.numpy(),
                               rtol=1e-5, atol=1e-5)


def test_replays_of_arrays_made_in_the_trace_then_written_in_place(device):
    """zeros made inside a traced function and then written by an advanced-index assignment
    (scatter) or an in-place add: each replay starts from zeros and keeps every write. On
    Vulkan a captured replay kept the last run's values (the zeros are a host fill, done once
    at capture) and lost writes (scatter's claim buffer, also a host fill, kept old claims)."""
    @gp.jit
    def f(x, c):
        z = gp.zeros((2, 6), dtype=gp.float32, device=x.device)
        z[gp.reshape(gp.arange(2, dtype=gp.int64, device=x.device), (-1, 1)), c] = x
        w = gp.zeros((2, 6), dtype=gp.float32, device=x.device)
        w += z
        w[:, 0] += 1.0
        return z, w

    rng = np.random.default_rng(0)
    for _ in range(5):
        xn = rng.random((2, 2), dtype=np.float32) + 1
        cn = rng.permutation(6)[:4].reshape(2, 2)
        want = np.zeros((2, 6), np.float32)
        want[np.arange(2)[:, None], cn] = xn
        z, w = f(gp.asarray(xn, device=device), gp.asarray(cn, device=device))
        np.testing.assert_array_equal(np.asarray(z), want)
        want[:, 0] += 1.0
        np.testing.assert_array_equal(np.asarray(w), want)
