"""Threads as users hit them (tests/test_threads.py has the mixed-workload runs): gradients
of shared parameters, jit graphs and the thread's default device, the process-wide default
device, and device_stats after other threads freed arrays. Each test failed before its fix."""
import sys
import threading

import numpy as np
import pytest
import torch

import grilly as gp
import grilly.jit as gj
from grilly.backends import registry

THREADS = 8


def _run_threads(fn, n: int = THREADS) -> list:
    """``fn(k)`` in ``n`` threads started together; their results, the first error re-raised."""
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def body(k):
        try:
            barrier.wait()
            results[k] = fn(k)
        except BaseException as e:   # noqa: BLE001 - handed to the test thread
            errors.append(e)

    ts = [threading.Thread(target=body, args=(k,)) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    return results


def _in_thread(fn):
    """``fn()`` run in one other thread (joined); its result, its error re-raised."""
    return _run_threads(lambda k: fn(), 1)[0]


def test_shared_leaf_gradients_accumulate_from_threads(device):
    """8 threads backward separate graphs through one set of leaves (Hogwild-style data
    parallelism): each leaf's .grad is the sum of every thread's gradients, as torch's. Before,
    ``x.grad = x.grad + g`` raced: two threads read the same .grad and one sum was lost (cpu:
    29 where 900 was due)."""
    reps = 12
    w = gp.asarray(np.zeros(64, np.float32), device=device).requires_grad_()
    b = gp.asarray(np.zeros(1, np.float32), device=device).requires_grad_()
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        def fn(k):
            x = gp.asarray(np.full(64, k + 1, np.float32), device=device)
            for _ in range(reps):
                gp.sum(w * x + b).backward()

        _run_threads(fn)
    finally:
        sys.setswitchinterval(old)
    # integers: exact in float32 in any order of the adds
    want = reps * sum(range(1, THREADS + 1))
    np.testing.assert_array_equal(np.asarray(w.grad), np.full(64, want, np.float32))
    np.testing.assert_array_equal(np.asarray(b.grad), [reps * THREADS * 64])


def test_shared_model_trained_from_threads_matches_torch(device):
    """Threads each run forward and backward of one shared nn.Linear on their own batch; the
    accumulated gradients equal torch's over all the batches."""
    rng = np.random.default_rng(3)
    wn = rng.standard_normal((3, 5)).astype(np.float32)
    bn = rng.standard_normal(3).astype(np.float32)
    xs = [rng.standard_normal((4, 5)).astype(np.float32) for _ in range(THREADS)]
    lin = gp.nn.Linear(5, 3)
    with gp.no_grad():
        lin.weight[...] = gp.asarray(wn)
        lin.bias[...] = gp.asarray(bn)
    lin.to(device)

    def fn(k):
        for _ in range(3):
            gp.sum(gp.tanh(lin(gp.asarray(xs[k], device=device)))).backward()

    _run_threads(fn)
    tl = torch.nn.Linear(5, 3)
    with torch.no_grad():
        tl.weight.copy_(torch.from_numpy(wn))
        tl.bias.copy_(torch.from_numpy(bn))
    for x in xs:
        for _ in range(3):
            torch.tanh(tl(torch.from_numpy(x))).sum().backward()
    np.testing.assert_allclose(np.asarray(lin.weight.grad), tl.weight.grad.numpy(), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(np.asarray(lin.bias.grad), tl.bias.grad.numpy(), rtol=1e-4,
                               atol=1e-4)


def _other(device):
    """A device other than ``device``."""
    others = [d for d in gp.devices() if d != device]
    if not others:
        pytest.skip("needs a second device")
    return others[0]


def test_jit_graph_keyed_on_the_thread_default_device(device):
    """A jitted function that creates an array without ``device=`` makes it on the calling
    thread's default device: a graph traced in a thread inside ``device_scope(other)`` is not
    replayed for a thread whose default is ``device``. Before, the second thread got the first
    one's device (the key held only the arguments' devices, grad mode and autocast)."""
    other = _other(device)

    @gj.jit
    def f(x):
        return gp.arange(x.shape[0], dtype=gp.float32) * 2.0 + 4.0

    x = gp.asarray(np.ones(3, np.float32), device="cpu")

    def traced_elsewhere():
        with gp.device_scope(other):
            return f(x)

    r = _in_thread(traced_elsewhere)
    assert r.device == other
    with gp.device_scope(device):
        s = f(x)
        t = f(x)   # replays this thread's graph
    for a in (r, s, t):
        np.testing.assert_array_equal(np.asarray(a), [4.0, 6.0, 8.0])
    assert s.device == device and t.device == device
    assert f.traces == 2


def test_set_default_device_not_undone_by_a_thread_computing_the_default(monkeypatch):
    """A thread making its first call computes the automatic default device; a
    set_default_device made meanwhile by another thread stays. Before, the first thread
    stored the automatic device over it. The switch is forced: the other thread runs while the
    first one lists the devices."""
    monkeypatch.delenv("GRILLY_DEVICE", raising=False)
    old = registry._default
    registry._default = None
    try:
        auto = gp.default_device()
        wanted = _other(auto)
        registry._default = None
        devices = registry.devices
        armed = [True]

        def switch(*a, **k):
            out = devices(*a, **k)
            if armed[0]:
                armed[0] = False
                _in_thread(lambda: gp.set_default_device(wanted))
            return out

        monkeypatch.setattr(registry, "devices", switch)
        gp.default_device()
        assert not armed[0]
        assert gp.default_device() == wanted
        assert _in_thread(gp.default_device) == wanted
    finally:
        registry._default = old


def test_device_stats_live_bytes_after_another_thread_freed(device):
    """An array dropped by a thread while another holds the device lock is queued for the
    pool; device_stats (and the peak reset) count it free at once. Before, live_bytes kept it
    until the next allocation."""
    if device.backend.name != "vulkan":
        pytest.skip("the deferred release is the Vulkan pool's")
    n = 1 << 16
    held = [gp.asarray(np.ones(n, np.float32), device=device)]
    gp.synchronize(device)   # no pending work refers to it any more
    before = gp.device_stats(device)["live_bytes"]
    def drop():
        del held[0]   # the last reference: the array dies in this thread

    with device.lock:   # another thread now cannot take the lock: its release is queued
        _in_thread(drop)
    assert not held
    after = gp.device_stats(device)["live_bytes"]
    assert after <= before - 4 * n
    gp.reset_peak_memory_stats(device)
    assert gp.device_stats(device)["peak_live_bytes"] == after


def test_shared_generator_draws_disjoint_numbers(device, monkeypatch):
    """Two threads drawing from one generator (the module functions' default one, as
    nn.Dropout does) get different blocks of the stream. Before, a draw on the CPU read the
    counter, then computed its block count (a call: a thread switch could come there), then
    wrote the counter back: a draw that ran in between got the same numbers. The switch is
    forced: the other thread draws inside that call."""
    from grilly.array import random_bits

    g = gp.random.Generator(11)
    blocks = random_bits.uniform_blocks
    armed, other = [True], []

    def switch(*a):
        if armed[0]:
            armed[0] = False
            other.append(_in_thread(lambda: np.asarray(g.uniform(shape=(8,), device=device))))
        return blocks(*a)

    monkeypatch.setattr(random_bits, "uniform_blocks", switch)
    mine = np.asarray(g.uniform(shape=(8,), device=device))
    assert not armed[0]
    ref = np.asarray(gp.random.Generator(11).uniform(shape=(16,), device=device))
    np.testing.assert_array_equal(np.sort(np.concatenate([mine, other[0]])), np.sort(ref))
    assert g.get_state() == (11, 4)


def test_threads_sharing_the_default_generator(device):
    """8 threads drawing from the default generator at once: together they draw each block of
    the stream once (the numbers of one serial draw of them all); a Generator per thread is
    reproducible whatever the others do."""
    state = gp.random.get_state()
    gp.random.seed(21)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        def fn(k):
            mine = gp.random.Generator(100 + k)
            shared = [np.asarray(gp.random.uniform(shape=(4,), device=device))
                      for _ in range(20)]
            own = np.asarray(mine.normal(shape=(30,), device=device))
            return shared, own

        got = _run_threads(fn)
    finally:
        sys.setswitchinterval(old)
        after = gp.random.get_state()
        gp.random.set_state(state)
    assert after == (21, THREADS * 20)
    drawn = np.sort(np.concatenate([w for shared, _ in got for w in shared]))
    ref = np.asarray(gp.random.Generator(21).uniform(shape=(THREADS * 20 * 4,), device=device))
    np.testing.assert_array_equal(drawn, np.sort(ref))
    for k, (_, own) in enumerate(got):
        want = np.asarray(gp.random.Generator(100 + k).normal(shape=(30,), device=device))
        np.testing.assert_array_equal(own, want)


def test_jit_first_calls_from_threads_trace_once(device):
    """8 threads making the same first call of a jitted function at once: one traces it, the
    others replay that graph (each result right). Before, each thread that missed the cache
    traced its own copy (up to 8 traces, 8 graphs filling the signature's cache slots)."""
    rng = np.random.default_rng(5)
    data = [rng.standard_normal((6, 5)).astype(np.float32) for _ in range(THREADS)]
    wn = rng.standard_normal((5, 4)).astype(np.float32)
    w = gp.asarray(wn, device=device)

    @gj.jit
    def f(x):
        return gp.tanh(x @ w) * 2.0 + 1.0

    got = _run_threads(lambda k: np.asarray(f(gp.asarray(data[k], device=device))))
    assert f.traces == 1
    assert len(f.graphs) == 1 and len(next(iter(f.graphs.values()))) == 1
    for k in range(THREADS):
        np.testing.assert_allclose(got[k], np.tanh(data[k] @ wn) * 2.0 + 1.0, rtol=1e-5,
                                   atol=1e-5)
