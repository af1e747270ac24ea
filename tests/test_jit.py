"""grilly.jit against eager execution on every device: traced forward functions and whole
training steps (parameters after N replayed steps equal N eager steps), retracing, fresh random
numbers on replay, the Tracer/TracedGraph API and every error a trace raises."""
import threading

import numpy as np
import pytest

import grilly as gp
import grilly.nn as nn
import grilly.nn.functional as F
from grilly.jit import JitError, Tracer

R = np.random.default_rng(3)


def _arr(shape, device, dtype=np.float32):
    return gp.asarray(R.standard_normal(shape).astype(dtype), device=device)


def test_forward_replays_equal_eager(device):
    w, w2 = _arr((24, 16), device), _arr((5, 24), device)

    def f(x):
        return F.linear(F.relu(F.linear(x, w)), w2)

    jf = gp.jit(f)
    for _ in range(4):
        x = _arr((8, 16), device)
        np.testing.assert_array_equal(np.asarray(jf(x)), np.asarray(f(x)))
    assert jf.traces == 1 and jf.graph.n_ops >= 3


def test_retrace_on_new_signature_and_bounded_cache(device):
    jf = gp.jit(lambda x, s: x * s + 1.0, cache_size=2)
    for n in (3, 4, 3, 5, 3):
        x = _arr((n,), device)
        np.testing.assert_allclose(np.asarray(jf(x, 2.0)), np.asarray(x) * 2 + 1, rtol=1e-6)
    assert jf.traces == 3   # 3, 4, 3 (replayed), 5 (evicts 4, the least recently used), 3
    x = _arr((3,), device)
    np.testing.assert_allclose(np.asarray(jf(x, 3.0)), np.asarray(x) * 3 + 1, rtol=1e-6)
    assert jf.traces == 4 and len(jf.graphs) == 2   # another scalar: another signature


def _model(device, seed=0):
    gp.random.seed(seed)
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.25),
                         nn.Linear(32, 4)).to(device)


def _train_step(m, o):
    """A training step of model ``m`` with optimizer ``o`` (cross entropy): its loss."""
    def step(x, y):
        o.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        o.step()
        return loss
    return step


def _assert_replays_equal_eager(make, xs, ys) -> None:
    """Steps of ``make()``'s (model, step) run eagerly and through one jit trace from the same
    seed: the same losses, parameters and gradients."""
    gp.random.seed(1)
    m1, s1 = make()
    eager = [float(s1(x, y)) for x, y in zip(xs, ys)]
    gp.random.seed(1)
    m2, s2 = make()
    js = gp.jit(s2)
    jitted = [float(js(x, y)) for x, y in zip(xs, ys)]
    assert js.traces == 1
    np.testing.assert_allclose(jitted, eager, rtol=1e-6)
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(np.asarray(p2), np.asarray(p1), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(np.asarray(p2.grad), np.asarray(p1.grad), rtol=1e-6,
                                   atol=1e-7)


@pytest.mark.parametrize("opt", ["sgd", "adam", "adamw"])
def test_training_steps_equal_eager(device, opt):
    xs = [_arr((16, 12), device) for _ in range(6)]
    ys = [gp.asarray(R.integers(0, 4, 16), device=device) for _ in range(6)]

    def make():
        m = _model(device)
        ps = m.parameters()
        o = {"sgd": lambda: gp.optim.SGD(ps, lr=0.1, momentum=0.9),
             "adam": lambda: gp.optim.Adam(ps, lr=1e-2),
             "adamw": lambda: gp.optim.AdamW(ps, lr=1e-2, weight_decay=0.1)}[opt]()

        return m, _train_step(m, o)

    _assert_replays_equal_eager(make, xs, ys)


_OPTS = {
    "sgd": lambda ps: gp.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "adam-amsgrad": lambda ps: gp.optim.Adam(ps, lr=1e-2, amsgrad=True, weight_decay=1e-3),
    "adamw": lambda ps: gp.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
    "rmsprop": lambda ps: gp.optim.RMSprop(ps, lr=1e-2, momentum=0.5, centered=True),
    "adagrad": lambda ps: gp.optim.Adagrad(ps, lr=1e-1, lr_decay=0.01),
}


@pytest.mark.parametrize("opt", sorted(_OPTS))
def test_whole_training_step_is_one_captured_graph(device, opt):
    """The optimizer's kernels are traced (its Python part, the step counts and scalars, is a
    host op that makes their scalars): traced at the first step (SGD's momentum buffer starts
    there), replayed under a learning rate a scheduler changes, the parameters and state are
    bit for bit the eager steps'; on Vulkan two captured graphs (forward and backward, then the
    update) and a replay two submissions, the loss's copy out riding with the second. (A device
    whose optim_multi kernel does not take its scalars from a buffer, the CPU's, replays the
    whole optimizer step, kernels included, as one host op.)"""
    xs = [_arr((16, 12), device) for _ in range(6)]
    ys = [gp.asarray(R.integers(0, 4, 16), device=device) for _ in range(6)]

    def make():
        nn.manual_seed(0)
        m = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
        o = _OPTS[opt](m.parameters())
        sched = gp.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5)

        return m, o, sched, _train_step(m, o)

    m1, o1, sc1, s1 = make()
    eager = []
    for x, y in zip(xs, ys):
        eager.append(float(s1(x, y)))
        sc1.step()
    m2, o2, sc2, s2 = make()
    js = gp.jit(s2)
    jitted = []
    for x, y in zip(xs, ys):
        jitted.append(float(js(x, y)))
        sc2.step()
    assert js.traces == 1
    np.testing.assert_array_equal(jitted, eager)
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_array_equal(np.asarray(p2), np.asarray(p1))
        for k, v in o1.state_of(p1).items():
            v2 = o2.state_of(p2)[k]
            np.testing.assert_array_equal(np.asarray(v2), np.asarray(v))
    graph = js.graph
    if not getattr(device.kernels.get("optim_multi"), "takes_vals", False):
        assert "_step_all (host)" in graph.summary()   # the whole step as one host op
        return
    assert "_collect_vals (host)" in graph.summary()
    assert graph.summary().splitlines()[-1].startswith(f"[{graph.n_ops - 1}] optim_multi")
    if device.backend.capture(device) is None:
        return
    assert graph.captured == 2
    gp.synchronize(device)
    before = gp.device_stats(device)
    js(xs[0], ys[0])
    after = gp.device_stats(device)
    assert after["submits"] - before["submits"] == 2   # forward and backward, the update
    # copies of x, y, scalars, loss: each one transfer command (contiguous, one dtype)
    assert after["dispatches"] - before["dispatches"] == 0
    assert after["copies"] - before["copies"] == 4
    gp.synchronize(device)   # the loss's copy went with the update: nothing left to submit
    assert gp.device_stats(device)["submits"] - before["submits"] == 2


def test_optimizer_parameters_changing_after_a_trace_is_an_error(device):
    """Where the optimizer's kernels are in the graph (a device whose optim_multi takes its
    scalars from a buffer), a parameter that had a gradient at the trace and has none on a
    replay changes the step the graph holds: JitError, not a silently different update.
    (Elsewhere the step is a host op, which runs the optimizer as it finds it.)"""
    if not getattr(device.kernels.get("optim_multi"), "takes_vals", False):
        pytest.skip("the optimizer step is a host op on this device")
    w = gp.asarray(np.ones((3,), np.float32), device=device)
    w.requires_grad = True
    v = gp.asarray(np.ones((2,), np.float32), device=device)
    v.requires_grad = True
    o = gp.optim.SGD([w, v], lr=0.1)

    def step(x):
        (gp.sum(w * x)).backward()
        o.step()
        return w

    js = gp.jit(step)
    x = gp.asarray(np.ones((3,), np.float32), device=device)
    v.grad = gp.ones((2,), dtype=gp.float32, device=device)
    js(x)
    w.grad = None   # as at the trace (an Array there would be accumulated into: another graph)
    v.grad = None
    with pytest.raises(JitError, match="trace again"):
        js(x)


def test_outputs_final_before_a_host_op_are_copied_then(device):
    """An output no later step references is copied out of the captured buffers as soon as
    it is final (before a host op: the copy goes with the next submission); one written in
    place after the host op is copied at the end. Both equal the eager results on every
    replay."""
    def f(x):
        y = x * 2.0
        z = x * 3.0
        u = gp.random.uniform(shape=x.shape, device=x.device)   # a host op (the counter)
        z += u
        return y, z

    xs = [_arr((5,), device) for _ in range(4)]
    gp.random.seed(11)
    eager = [[np.asarray(a) for a in f(x)] for x in xs]
    gp.random.seed(11)
    jf = gp.jit(f)
    for x, want in zip(xs, eager):
        got = jf(x)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)
    if device.backend.capture(device) is not None:
        assert list(jf.graph._final_at.values()) == [[0]]   # y, before the draw's host op


def test_traces_in_several_threads_wait_for_each_other(device):
    """Threads that jit their own training steps at once: a trace waits for the one active in
    another thread (traces wrap every device's kernel table), then each thread's replays run
    alongside the others'; every thread's losses equal its eager steps'."""
    def make(k):
        nn.manual_seed(k)
        m = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
        o = gp.optim.Adam(m.parameters(), lr=1e-2)
        x = gp.asarray(np.random.default_rng(k).standard_normal((16, 6)).astype(np.float32),
                       device=device)
        y = gp.asarray(np.random.default_rng(k + 9).integers(0, 3, 16), device=device)
        step = _train_step(m, o)
        return lambda: step(x, y)

    want = {k: [float(s()) for _ in range(6)] for k, s in ((k, make(k)) for k in range(4))}
    steps = [make(k) for k in range(4)]   # (here: initialisation draws from one generator)
    got, errors = {}, []

    def worker(k):
        try:
            js = gp.jit(steps[k])
            got[k] = [float(js()) for _ in range(6)]
        except Exception as e:   # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(4):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6)
    with Tracer():
        with pytest.raises(JitError, match="do not nest"):
            with Tracer():
                pass


def test_modes_a_graph_was_traced_in_guard_its_replays(device):
    """A replay must compute what an eager call would: after model.eval() the graph traced in
    training (Dropout on, BatchNorm on batch statistics) is not replayed, the function traces
    again; back in training the first graph replays. Autocast and grad mode key the graphs
    too (a matmul traced outside autocast is float32, inside float16)."""
    nn.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.BatchNorm1d(8)).to(device)
    f = gp.jit(lambda x: m(x))
    x = _arr((16, 4), device)
    with gp.no_grad():
        f(x)
        m.eval()
        got, want = np.asarray(f(x)), np.asarray(m(x))
        m.train()
        f(x)
    np.testing.assert_array_equal(got, want)
    assert f.traces == 2 and len(f.graphs) == 1   # one signature, a graph per mode
    w = _arr((4, 3), device)
    g = gp.jit(lambda x: x @ w)
    assert g(x).dtype == gp.float32
    with gp.amp.autocast(device_type=str(device).split(":")[0], dtype=gp.float16):
        assert g(x).dtype == gp.float16
    with gp.no_grad():
        g(x)
    assert g.traces == 3


def test_results_carry_no_autograd_graph_from_the_first_call_on(device):
    """A replay records no autograd graph, so no call hands one back, the tracing call
    included: differentiating a traced model's result fails the same way on every call (it
    used to work on the first call only); a whole training step differentiates inside."""
    m = nn.Linear(4, 2).to(device)
    jm = gp.jit(m)
    x = _arr((3, 4), device)
    for _ in range(2):
        y = jm(x)
        assert not y.requires_grad
        with pytest.raises(RuntimeError, match="does not require grad"):
            gp.sum(y).backward()


def test_random_draws_are_fresh_on_replay(device):
    def f(x):
        return x + gp.random.uniform(shape=x.shape, device=x.device)

    x = gp.zeros((6,), dtype=gp.float32, device=device)
    gp.random.seed(7)
    eager = [np.asarray(f(x)) for _ in range(3)]
    gp.random.seed(7)
    jf = gp.jit(f)
    jitted = [np.asarray(jf(x)) for _ in range(3)]
    for e, j in zip(eager, jitted):
        np.testing.assert_array_equal(j, e)
    assert not np.array_equal(jitted[1], jitted[2])


def test_tracer_api_and_summary(device):
    w = _arr((32, 16), device)
    x = _arr((4, 16), device)
    tracer = Tracer()
    with tracer:
        tracer.register_input(x)
        y = F.relu(F.linear(x, w))
    graph = tracer.build([y])
    text = graph.summary()
    assert text.splitlines()[0].startswith(f"TracedGraph: {graph.n_ops} ops")
    # the product's kernel: "linear" where the backend has it (the seed's own line), else matmul
    assert any(line.startswith("[") and ("linear: [0" in line or "matmul: [0, " in line)
               and "(4, 32)" in line for line in text.splitlines())
    x2 = _arr((4, 16), device)
    (y2,) = graph(x2)
    np.testing.assert_array_equal(np.asarray(y2), np.asarray(F.relu(F.linear(x2, w))))
    with pytest.raises(ValueError, match=r"TracedGraph: input 0 must be \(4, 16\) float32"):
        graph(_arr((5, 16), device))


def test_trace_a_module(device):
    m = _model(device).eval()
    x = _arr((3, 12), device)
    tm = gp.jit.trace(m, x)
    x2 = _arr((3, 12), device)
    np.testing.assert_allclose(np.asarray(tm(x2)), np.asarray(m(x2)), rtol=1e-6, atol=1e-7)


def test_errors(device):
    x = _arr((4,), device)
    with pytest.raises(JitError, match="inside a trace reads an array on the host"):
        gp.jit(lambda a: a * float(a[0]))(x)
    with pytest.raises(JitError, match="mask_indices inside a trace gives a result whose shape"):
        gp.jit(lambda a: a[a > 0])(x)
    with pytest.raises(TypeError, match="must return an Array, None, or a tuple"):
        gp.jit(lambda a: 3)(x)
    with pytest.raises(TypeError, match="neither an Array nor hashable"):
        gp.jit(lambda a, b: a)(x, [np.ones(2)])
    with Tracer():
        with pytest.raises(JitError, match="traces do not nest"):
            Tracer().__enter__()
    # after a failed trace, eager work goes on as before
    np.testing.assert_array_equal(np.asarray(x + 1.0), np.asarray(x) + 1)


def test_other_threads_are_not_recorded(device):
    a = _arr((5,), device)
    tracer = Tracer()
    with tracer:
        tracer.register_input(a)
        t = threading.Thread(target=lambda: np.asarray(gp.exp(a)))   # a host read: not traced
        t.start()
        t.join()
        b = a + 1.0
    graph = tracer.build(b)
    assert [r.name for r in graph.records if r.name == "exp"] == []
    np.testing.assert_allclose(np.asarray(graph(a)), np.asarray(a) + 1, rtol=1e-6)


def test_captured_replay_is_one_submission(device):
    """Where the backend captures (Vulkan), a replay records only the input and output copies
    and submits the input copies, the captured command buffer and the output copies in one
    vkQueueSubmit; results kept from earlier calls stay."""
    w = _arr((24, 16), device)
    jf = gp.jit(lambda x: F.relu(F.linear(x, w)) * 2.0 + 1.0)
    xs = [_arr((8, 16), device) for _ in range(4)]
    outs = [jf(x) for x in xs]
    for x, y in zip(xs, outs):   # each result is the caller's own, not the graph's buffer
        np.testing.assert_allclose(np.asarray(y), np.maximum(np.asarray(x) @ np.asarray(w).T, 0)
                                   * 2 + 1, rtol=1e-5, atol=1e-5)
    if device.backend.capture(device) is None:
        assert jf.graph.captured == 0
        return
    assert jf.graph.captured == 1
    gp.synchronize(device)
    before = gp.device_stats(device)
    jf(xs[0])
    gp.synchronize(device)
    after = gp.device_stats(device)
    assert after["dispatches"] - before["dispatches"] <= 2   # copy in, copy out
    assert after["submits"] - before["submits"] == 1   # copies in, the graph, copies out


def test_replay_whose_output_copy_fails_leaves_the_device_whole(device, monkeypatch):
    """An error while a replay's outputs are copied out (here a failing copy kernel) reaches the
    caller; what was recorded still runs, in order, and later replays and eager work give the
    right results."""
    w = _arr((24, 16), device)
    jf = gp.jit(lambda x: F.relu(F.linear(x, w)) + 1.0)
    xs = [_arr((8, 16), device) for _ in range(3)]
    ref = [np.maximum(np.asarray(x) @ np.asarray(w).T, 0) + 1 for x in xs]
    for x, r in zip(xs, ref):
        np.testing.assert_allclose(np.asarray(jf(x)), r, rtol=1e-5, atol=1e-5)
    if device.backend.capture(device) is None:
        pytest.skip("no captured graph on this device: its replay copies nothing out")

    def broken(b):
        raise MemoryError("copy: out of device memory (test)")

    monkeypatch.setitem(device.kernels, "copy", broken)
    if getattr(device.backend.capture(device), "run_io", None) is not None:
        # its replays copy outputs out in the backend (Backend.capture's run_io), into
        # buffers it makes there
        from grilly.backends.vulkan import kernels as vk

        monkeypatch.setattr(vk, "new_buffer", lambda *a: broken(None))
    with pytest.raises(MemoryError, match="test"):
        jf(xs[1])
    monkeypatch.undo()
    gp.synchronize(device)
    for x, r in zip(xs, ref):
        np.testing.assert_allclose(np.asarray(jf(x)), r, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(xs[0] + 1.0), np.asarray(xs[0]) + 1, rtol=0)


def test_replay_submitting_within_its_output_copies_keeps_the_order(device, monkeypatch):
    """A submission while a replay's outputs are being copied out (here every dispatch
    submits: a batch limit of one) submits the input copies, the captured graph and the copies
    recorded so far first, in that order: every output is the replay's own."""
    w = _arr((24, 16), device)
    jf = gp.jit(lambda x: (F.relu(F.linear(x, w)) + 1.0, F.linear(x, w) * 3.0))
    xs = [_arr((8, 16), device) for _ in range(3)]
    jf(xs[0])
    jf(xs[0])
    if device.backend.capture(device) is None:
        pytest.skip("no captured graph on this device")
    from grilly.backends.vulkan import recorder

    monkeypatch.setattr(recorder, "BATCH_MAX", 1)
    for x in xs:
        a, b = jf(x)
        p = np.asarray(x) @ np.asarray(w).T
        np.testing.assert_allclose(np.asarray(a), np.maximum(p, 0) + 1, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(b), p * 3, rtol=1e-5, atol=1e-5)


def test_cnn_training_steps_equal_eager(device):
    """Conv, BatchNorm (running statistics updated in forward), pooling and Dropout: a traced
    step leaves every parameter and buffer as the eager steps do; on Vulkan every kernel is
    captured, Dropout's and the optimizer's included."""
    xs = [_arr((8, 1, 8, 8), device) for _ in range(4)]
    ys = [gp.asarray(R.integers(0, 5, 8), device=device) for _ in range(4)]

    def make():
        nn.manual_seed(0)
        gp.random.seed(0)
        m = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.2),
                          nn.Linear(64, 5)).to(device)
        o = gp.optim.Adam(m.parameters(), lr=1e-2)

        return m, _train_step(m, o)

    m1, s1 = make()
    eager = [float(s1(x, y)) for x, y in zip(xs, ys)]
    m2, s2 = make()
    js = gp.jit(s2)
    np.testing.assert_allclose([float(js(x, y)) for x, y in zip(xs, ys)], eager, rtol=1e-6)
    if device.backend.capture(device) is not None:
        # two host ops (Dropout's counter, the optimizer's scalars), the kernels around them
        # captured: up to the draw, the rest of the forward and the backward, the update
        summary = js.graph.summary()
        assert js.graph.captured == 3 and summary.count("(host)") == 2
        assert "_advance (host)" in summary and "_collect_vals (host)" in summary
    sd1, sd2 = m1.state_dict(), m2.state_dict()
    assert "1.running_mean" in sd1
    for k in sd1:
        np.testing.assert_allclose(np.asarray(sd2[k]), np.asarray(sd1[k]), rtol=1e-6, atol=1e-7)


def test_training_step_with_gradient_hooks_equals_eager(device):
    """Gradient hooks run as Python while the trace records, so their ops are part of the
    graph: a hook on a parameter (registered once) and one on an activation (each call), both
    scaling the gradient, replay to what eager steps compute."""
    xs = [_arr((16, 12), device) for _ in range(4)]
    ys = [gp.asarray(R.integers(0, 4, 16), device=device) for _ in range(4)]

    def make():
        m = _model(device)
        o = gp.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        m[0].weight.register_hook(lambda g: g * 0.5)

        def step(x, y):
            o.zero_grad()
            h = m[0](x)
            h.register_hook(lambda g: g * 3.0)
            loss = F.cross_entropy(m[3](m[2](m[1](h))), y)
            loss.backward()
            o.step()
            return loss
        return m, step

    _assert_replays_equal_eager(make, xs, ys)
    m3, s3 = make()   # the hooks change the step (not a no-op that the test would miss)
    m3[0].weight.register_hook(lambda g: g * 0.0)
    s3(xs[0], ys[0])
    assert not np.asarray(m3[0].weight.grad).any()


def test_replay_takes_views_and_returns_inputs_views_and_in_place_writes(device):
    """A replay's inputs may be strided or offset views (copied in through the assign kernel,
    not as bytes), its outputs views of its buffers or an input itself, and an input written in
    place gets the write: each replay as the eager call, with its own results."""
    w = _arr((16, 16), device)

    def f(x, y):
        y += 1.0   # an input written in place
        z = gp.matmul(x, w) + y
        return z[:, 1:], z.T, x   # two views of a captured buffer, an input as is

    jf = gp.jit(f)
    base = _arr((16, 24), device)
    for k in range(4):
        x = (base + float(k))[:, 4:20]   # an offset view
        xt = gp.asarray(np.asarray(_arr((16, 16), device)).T.copy(), device=device).T
        for xi in (x, xt):   # (one signature: the same shape, dtype and device)
            y_eager, y_jit = _arr((16, 16), device), None
            y_jit = gp.asarray(np.asarray(y_eager), device=device)
            ref = f(xi, y_eager)
            got = jf(xi, y_jit)
            for r, g in zip(ref, got):
                np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(np.asarray(y_jit), np.asarray(y_eager))
    assert jf.traces == 1
