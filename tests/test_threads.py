"""Many threads on one device (issue 10): each thread's results match numpy and a serial run,
first calls from many threads at once succeed in a fresh process, and grad mode and
device_scope are per thread."""
import os
import subprocess
import sys
import tempfile
import textwrap
import threading

import numpy as np
import pytest

import grilly as gp

THREADS = 8
OPS = 160      # per thread; results are read back in batches, so work stays pending meanwhile
BATCH = 12
COLD_RUNS = 5


def _op(i: int, rng: np.random.Generator, dev) -> tuple:
    """Operation ``i`` of a thread's mixed workload: (grilly result, numpy float64 reference,
    relative tolerance). Inputs are float32 unless the case says otherwise."""
    kind = i % 10
    # every 40th op is large: the CPU backend's pooled host blocks (>= 1 MiB) and parallel
    # Numba kernels (>= 2**17 elements)
    n = int(rng.integers(270_000, 280_000)) if i % 40 == 39 else int(rng.integers(1, 300))
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    x, y = gp.asarray(a, device=dev), gp.asarray(b, device=dev)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if kind == 0:     # a fusable chain of elementwise ops with scalar operands
        r = ((x * y + 1.5) - x) * 0.5 + gp.abs(y)
        return r, ((a64 * b64 + 1.5) - a64) * 0.5 + np.abs(b64), 1e-5
    if kind == 1:
        return gp.sqrt(gp.abs(x)) + gp.maximum(x, y), np.sqrt(np.abs(a64)) + np.maximum(a64, b64), 1e-5
    if kind == 2:     # reductions, one with keepdims over a 2-D view
        m = gp.reshape(x[: n - n % 3], (-1, 3)) if n >= 3 else gp.reshape(x, (1, -1))
        am = a64[: n - n % 3].reshape(-1, 3) if n >= 3 else a64.reshape(1, -1)
        r = gp.sum(m, axis=0, keepdims=True) + gp.max(m, axis=0, keepdims=True)
        return r, am.sum(axis=0, keepdims=True) + am.max(axis=0, keepdims=True), 1e-4
    if kind == 3:     # matmul
        k = int(rng.integers(1, 24))
        p = rng.standard_normal((5, k)).astype(np.float32)
        q = rng.standard_normal((k, 7)).astype(np.float32)
        return (gp.asarray(p, device=dev) @ gp.asarray(q, device=dev),
                p.astype(np.float64) @ q.astype(np.float64), 1e-4)
    if kind == 4:     # basic and integer-array indexing
        idx = rng.integers(0, n, size=9)
        r = x[::2] * 2.0
        g = x[gp.asarray(idx, device=dev)]
        return gp.concat([r, g]), np.concatenate([a64[::2] * 2.0, a64[idx]]), 1e-6
    if kind == 5:     # boolean mask (a data-dependent shape: a sync inside the op)
        return x[x > 0.0] - 1.0, a64[a64 > 0] - 1.0, 1e-6
    if kind == 6:     # creation
        r = gp.arange(n, dtype=gp.float32, device=dev) * 0.25 + gp.full((n,), 2.0, device=dev,
                                                                          dtype=gp.float32)
        return r, np.arange(n) * 0.25 + 2.0, 1e-6
    if kind == 7:     # float64 and int32 elementwise, where
        c = gp.where(x > y, gp.astype(x, gp.float64), gp.astype(y, gp.float64) * 3.0)
        ia = gp.asarray((a * 10).astype(np.int32), device=dev)
        w = gp.astype(ia * 3 - 7, gp.float64)
        return c + w, np.where(a64 > b64, a64, b64 * 3.0) + ((a * 10).astype(np.int32) * 3 - 7), 1e-6
    if kind == 8:     # softmax-like mean / exp chain
        e = gp.exp(x - gp.max(x))
        return e / gp.sum(e), np.exp(a64 - a64.max()) / np.exp(a64 - a64.max()).sum(), 1e-4
    # a round trip through the host and another device
    h = gp.asarray(np.asarray(x * 3.0), device=dev)
    return gp.asarray(h.to_device("cpu"), device=dev) - y, a64 * 3.0 - b64, 1e-5


def _workload(dev, seed: int) -> list:
    """A thread's results (numpy arrays) and references, read back BATCH ops at a time."""
    rng = np.random.default_rng(seed)
    out, pending = [], []
    for i in range(OPS):
        pending.append(_op(i, rng, dev))
        if len(pending) == BATCH:
            out += [(np.asarray(r), ref, tol) for r, ref, tol in pending]
            pending = []
    out += [(np.asarray(r), ref, tol) for r, ref, tol in pending]
    return out


def _run_threads(fn, n: int = THREADS) -> list:
    """Run ``fn(k)`` in ``n`` threads started together; return the results, re-raising the
    first thread's error."""
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


def _fusion(device, on: bool):
    """Turn Vulkan elementwise fusion on or off (lavapipe has it off by default); returns the
    restore callback."""
    if device.backend.name != "vulkan":
        return lambda: None
    from grilly.backends.vulkan import fusion

    ctx = device.ctx
    before = ctx.fuser is not None
    fusion.enable(ctx, on)
    return lambda: fusion.enable(ctx, before)


@pytest.mark.parametrize("fused", [False, True], ids=["plain", "fused"])
def test_threads_match_numpy_and_serial(device, fused):
    """8 threads x OPS mixed ops on one device: each result equals the same op run serially
    and is close to numpy's float64 result."""
    if fused and device.backend.name != "vulkan":
        pytest.skip("elementwise fusion is a Vulkan feature")
    restore = _fusion(device, fused)
    try:
        np.asarray(gp.sum(gp.asarray(np.ones(3, np.float32), device=device)))   # warm-up in the main thread
        threaded = _run_threads(lambda k: _workload(device, 1000 + k))
        serial = [_workload(device, 1000 + k) for k in range(THREADS)]
    finally:
        restore()
    for k in range(THREADS):
        assert len(threaded[k]) == OPS
        for i, ((got, ref, tol), (want, _, _)) in enumerate(zip(threaded[k], serial[k])):
            np.testing.assert_array_equal(got, want, err_msg=f"thread {k} op {i}: differs from serial")
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol,
                                       err_msg=f"thread {k} op {i} on {device}")


def test_dead_fused_result_not_stored_in_its_reused_block(device, monkeypatch):
    """A thread switch just as a pending fused result dies (its block back in the pool): another
    thread takes the block for an upload and syncs, which emits the pending run. The dead result
    must not be stored over the upload (CI once read another thread's ``ia * 3`` of op kind 7
    in a kind 4 op's input). The switch is forced: the dying thread runs the other one right
    after the block's release."""
    if device.backend.name != "vulkan":
        pytest.skip("elementwise fusion is a Vulkan feature")
    from grilly.backends.vulkan import memory

    a = np.linspace(-1, 1, 40, dtype=np.float32)
    armed, got = [False], []
    release = memory.Pool.release

    def other():
        h = gp.asarray(a, device=device)   # the block just released (free lists are LIFO)
        got.append(np.asarray(h))          # a sync: emits the pending run

    def switch_after(self, *args):
        release(self, *args)
        if armed[0]:
            armed[0] = False
            t = threading.Thread(target=other)
            t.start()
            t.join()

    restore = _fusion(device, True)
    monkeypatch.setattr(memory.Pool, "release", switch_after)
    try:
        ia = gp.asarray(np.arange(-20, 20, dtype=np.int32), device=device)
        armed[0] = True
        w = ia * 3 - 7   # the temporary ia * 3 dies here, an instruction of the pending run
        armed[0] = False
        np.testing.assert_array_equal(np.asarray(w), np.arange(-20, 20) * 3 - 7)
    finally:
        restore()
    assert len(got) == 1
    np.testing.assert_array_equal(got[0], a)


def test_threads_share_arrays_read_only(device):
    """Threads reading one shared array (and the cached scalar operands) get numpy's result."""
    a = np.linspace(-3, 3, 1000, dtype=np.float32)
    x = gp.asarray(a, device=device)

    def fn(k):
        return [np.asarray(gp.sum(x * float(k) + float(j))) for j in range(30)]

    got = _run_threads(fn)
    for k in range(THREADS):
        want = [(a.astype(np.float64) * k + j).sum() for j in range(30)]
        np.testing.assert_allclose(got[k], want, rtol=1e-4, atol=1e-3)


def test_grad_mode_is_per_thread(device):
    """no_grad in one thread leaves the others recording; backward in threads at once is right."""
    inside, leave = threading.Event(), threading.Event()

    def quiet():
        with gp.no_grad():
            inside.set()
            leave.wait(10)
            return gp.is_grad_enabled()

    t_result = []
    t = threading.Thread(target=lambda: t_result.append(quiet()))
    t.start()
    assert inside.wait(10)
    try:
        assert gp.is_grad_enabled()   # this thread is unaffected
    finally:
        leave.set()
        t.join()
    assert t_result == [False]

    def grads(k):
        a = np.arange(1, 6, dtype=np.float32) * (k + 1)
        x = gp.asarray(a, device=device).requires_grad_()
        gp.sum(x * x * 0.5).backward()
        return np.asarray(x.grad), a

    for g, a in _run_threads(grads):
        np.testing.assert_allclose(g, a, rtol=1e-6)


def test_device_scope_is_per_thread():
    """Each thread's device_scope decides only its own default device."""
    devs = gp.devices()
    outer = gp.default_device()
    barrier = threading.Barrier(THREADS)

    def fn(k):
        want = devs[k % len(devs)]
        with gp.device_scope(want):
            barrier.wait()   # every thread is inside its own scope now
            got = [gp.asarray([1.0, 2.0]).device for _ in range(20)]
            barrier.wait()
        return want, got

    for want, got in _run_threads(fn):
        assert all(d == want for d in got)
    assert gp.default_device() == outer


_COLD = textwrap.dedent("""
    import sys, threading, traceback
    import numpy as np
    import grilly as gp   # the registry loads on first use: by the threads below, all at once

    names, n, size = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3])
    barrier = threading.Barrier(n * len(names))   # n threads per device, all at once
    errors = []

    def body(name, k):
        try:
            barrier.wait()
            a = (np.arange(size) % 97).astype(np.float32) + k
            x = gp.asarray(a, device=name)
            m = gp.reshape(x[:12], (3, 4))
            got = [np.asarray(x * 2.0 + 1.0), np.asarray(gp.sum(x)),
                   np.asarray(m @ gp.reshape(x[:12], (4, 3))), np.asarray(gp.exp(x[::3] * 0.01))]
            a = a.astype(np.float64)
            want = [a * 2 + 1, a.sum(), a[:12].reshape(3, 4) @ a[:12].reshape(4, 3),
                    np.exp(a[::3] * 0.01)]
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-4)
        except BaseException:
            errors.append(f"on {name}: " + traceback.format_exc())

    ts = [threading.Thread(target=body, args=(name, k)) for k in range(n) for name in names]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        print(errors[0])
        sys.exit(1)
    print("ok", n, "threads on each of", ",".join(names))
""")


def _env(**extra) -> dict:
    """This environment with the checkout under test first on PYTHONPATH (the caller's kept)."""
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.dirname(os.path.dirname(gp.__file__)), env.get("PYTHONPATH")) if p)
    return env


def _cold(devices: list, envs: list, size: int) -> None:
    """Run the cold-start script once per environment, all at once; each must succeed."""
    names = ",".join(map(str, devices))
    procs = [subprocess.Popen([sys.executable, "-c", _COLD, names, str(THREADS), str(size)],
                              env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for e in envs]
    for run, p in enumerate(procs):
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, f"cold start run {run} on {names} failed:\n{out}"
        assert f"ok {THREADS} threads on each of {names}" in out


def test_cold_start_threads():
    """Fresh processes in which 8 threads per device (every device the other tests run on, all
    in each process: a process's start-up, most of these seconds, is paid once for all) make
    their first grilly calls at the same moment; the first process also starts with an empty
    kernel cache, so the threads compile together."""
    from conftest import _device_names   # the devices the ``device`` fixture runs tests on

    with tempfile.TemporaryDirectory() as fresh:
        _cold(_device_names(), [_env(GRILLY_CACHE_DIR=fresh)] + [_env()] * (COLD_RUNS - 1), 12)


def test_cold_start_threads_numba_workqueue():
    """With Numba's workqueue threading layer (no TBB or OpenMP), 8 threads running parallel
    kernels at once (2**18 elements) do not abort the process."""
    _cold(["cpu"], [_env(NUMBA_THREADING_LAYER="workqueue")], 1 << 18)


def test_cpu_host_pool_never_hands_one_block_to_two_threads():
    """8 threads taking and dropping pooled blocks (>= 1 MiB) with a tiny switch interval: a
    block a thread holds is never handed to another (each thread's fill survives)."""
    from grilly.backends.cpu_numba.pool import MIN_BYTES, HostPool

    pool = HostPool(64 * MIN_BYTES)
    shape, dt = (MIN_BYTES // 4,), np.dtype(np.float32)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        def fn(k):
            bad = 0
            for _ in range(300):
                a = pool.empty(shape, dt)
                a[:8] = k
                bad += int((a[:8] != k).any())
                del a
            return bad

        assert _run_threads(fn) == [0] * THREADS
    finally:
        sys.setswitchinterval(old)


def test_cpu_kernel_module_generated_once(monkeypatch, tmp_path):
    """8 threads asking for one generated kernel module in an empty cache at once all get the
    one module; none trips over another's half-written file."""
    from grilly.backends.cpu_numba import jit

    monkeypatch.setenv("GRILLY_CACHE_DIR", str(tmp_path))
    name = f"thread_probe_{os.getpid()}"
    src = "import numba\n\n@numba.njit(cache=True)\ndef twice(x):\n    return 2 * x\n"
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        mods = _run_threads(lambda k: jit.module(name, src))
    finally:
        sys.setswitchinterval(old)
        jit._modules.pop(name, None)
        sys.modules.pop(f"_grilly_kernel_{name}", None)
    assert all(m is mods[0] for m in mods)
    assert [m.twice(k) for k, m in enumerate(mods)] == [2 * k for k in range(THREADS)]


def test_attention_from_many_threads(device):
    """Fused attention forward and backward (big enough for the CPU kernel's worker threads)
    from 8 threads at once: each equals the serial run."""
    from grilly.array import attention as att

    rng = np.random.default_rng(9)
    data = [[rng.standard_normal((2, 4, 64, 32)).astype(np.float32) for _ in range(4)]
            for _ in range(THREADS)]

    def run(k):
        q, kk, v, g = (gp.asarray(a, device=device) for a in data[k])
        out, lse = att.attention(q, kk, v, causal=k % 2 == 1, scale=0.2)
        grads = att.attention_backward(g, q, kk, v, None, None, out, lse, causal=k % 2 == 1,
                                       scale=0.2)
        return [np.asarray(a) for a in (out, lse, *grads)]

    threaded = _run_threads(run)
    for k in range(THREADS):
        for got, want in zip(threaded[k], run(k)):
            np.testing.assert_array_equal(got, want)
