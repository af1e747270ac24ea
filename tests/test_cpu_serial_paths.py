"""The cpu backend's small calls run serial twins of its parallel kernels (jit.serial: the same
body without parallel=True, so no parallel-region launch): philox draws, conv2d and its
backward, matmul_topk, complex batched matmul. Each is run with its threshold forced both ways
(serial twin / parallel kernel): the two give the same bits, and both match numpy references;
every device gives the reference's values."""
import numpy as np
import pytest

import grilly as gp
from grilly.array import conv as C
from grilly.array import neighbors, random_bits
from grilly.backends.cpu_numba import blas, conv, jit, philox
from grilly.backends.cpu_numba import neighbors as cpu_neighbors
from test_conv2d_fused import CONV_CASES, _out, np_conv2d, np_conv2d_grads
from test_neighbors import _order
from test_philox_dropout import _reference as dropout_reference
from test_philox_uniform import _bits
from test_philox_uniform import _reference as uniform_reference

# the thresholds jit.sized is given, and the values that force each path
_LIMITS = [(jit, "PARALLEL_MIN"), (blas, "MIN_SPLIT")]
_FORCE = {"serial": 1 << 62, "parallel": 0}


def _run_both(monkeypatch, fn):
    """{path: (fn(), the serial twins it used)} with every threshold forced to that path."""
    out = {}
    real = jit.serial
    for path, limit in _FORCE.items():
        used = []
        monkeypatch.setattr(jit, "serial", lambda k, used=used: used.append(k) or real(k))
        for mod, name in _LIMITS:
            monkeypatch.setattr(mod, name, limit)
        out[path] = (fn(), used)
    return out


def _same_bits(a, b):
    for x, y in zip(a, b):
        x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.array_equal(x.view(np.uint8), y.view(np.uint8))   # bits, NaN and -0 too


def _check_paths(device, monkeypatch, fn, kernels):
    """fn() on ``device``; on cpu, both paths, the same bits, and the serial one used the twins
    of ``kernels`` (and the parallel one none)."""
    if device.backend.name != "cpu":
        return fn()
    res = _run_both(monkeypatch, fn)
    (ser, used_s), (par, used_p) = res["serial"], res["parallel"]
    assert set(used_s) == set(kernels) and not used_p
    _same_bits(ser, par)
    return ser


def test_serial_twin_is_its_own_kernel():
    """The twin compiles without ``parallel`` and under a name of its own (Numba's cache would
    otherwise hand the two the same machine code), once per kernel."""
    twin = jit.serial(philox._draw32)
    assert twin is jit.serial(philox._draw32)
    assert philox._draw32.targetoptions["parallel"] and "parallel" not in twin.targetoptions
    assert twin.py_func.__qualname__ != philox._draw32.py_func.__qualname__
    assert twin.py_func.__code__ is philox._draw32.py_func.__code__
    assert jit.sized(philox._draw32, jit.PARALLEL_MIN - 1) is twin
    assert jit.sized(philox._draw32, jit.PARALLEL_MIN) is philox._draw32


# n across one and several 1024-block chunks, not a multiple of 4
@pytest.mark.parametrize("n", [3, 130, 4099, 9001])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_philox(device, monkeypatch, n, dtype):
    d, counter, key = getattr(gp, dtype), 2 ** 32 - 7, 2 ** 63 + 11

    def draw():
        return (random_bits.philox_uniform(n, counter, key, d, device),
                random_bits.philox_dropout(n, counter, key, 0.3, 1 / 0.7, d, device))

    if dtype == "float16":   # uniforms draw float32 and round (no twin); dropout has its own
        kernels = {philox._drop16, philox._draw32}
    else:
        kernels = {philox._draw64 if dtype == "float64" else philox._draw32}
    u, m = _check_paths(device, monkeypatch, draw, kernels)
    assert np.array_equal(_bits(u), _bits(uniform_reference(n, counter, key, dtype)))
    assert np.array_equal(_bits(m), _bits(dropout_reference(n, counter, key, 0.3, 1 / 0.7,
                                                            dtype)))


def test_philox_blocks(monkeypatch):
    """The words themselves (cpu kernel), both paths against numpy's equations."""
    got = _check_paths(gp.backends.registry.device("cpu"), monkeypatch,
                       lambda: (philox.philox_blocks(1500, 2 ** 64 - 3, 99),), {philox._blocks})
    u = (got[0] >> 8).T.reshape(-1).astype(np.float32) * np.float32(2.0 ** -24)
    assert np.array_equal(u, uniform_reference(6000, 2 ** 64 - 3, 99, "float32"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv2d(device, monkeypatch, case, dtype):
    xs, ws, stride, dilation, pads, groups = CONV_CASES[case]
    rng = np.random.default_rng(50 + case)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    out = _out(xs, ws, stride, dilation, pads)
    gy = rng.standard_normal((xs[0], ws[0]) + out)
    on = [gp.asarray(a.astype(dtype), device=device) for a in (x, w, b, gy)]

    def run():
        y = C.conv2d(on[0], on[1], on[2], stride, dilation, pads, groups, out)
        return (y, *C.conv2d_backward(on[3], on[0], on[1], stride, dilation, pads, groups,
                                      (True, True, True)))

    got = _check_paths(device, monkeypatch, run, {conv._conv_fwd, conv._conv_bwd})
    want = (np_conv2d(x, w, b, stride, dilation, pads, groups),
            *np_conv2d_grads(gy, x, w, stride, dilation, pads, groups))
    tol = 1e-12 if dtype == np.float64 else 2e-5
    for g, r in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), r, rtol=tol,
                                   atol=tol * 10 * max(1.0, float(np.abs(r).max())))


def test_conv2d_batch_over_threads(monkeypatch):
    """More images than threads: several images per task, and per-task weight-gradient
    partials that the serial twin must form (and sum) exactly as the threads do."""
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((9, 3, 6, 5)), rng.standard_normal((4, 3, 3, 3))
    gy = rng.standard_normal((9, 4, 6, 5))
    cpu = gp.backends.registry.device("cpu")
    on = [gp.asarray(a.astype(np.float32), device=cpu) for a in (x, w, gy)]
    got = _check_paths(cpu, monkeypatch, lambda: C.conv2d_backward(
        on[2], on[0], on[1], (1, 1), (1, 1), (1, 1, 1, 1), 1, (True, True, True)),
        {conv._conv_bwd})
    want = np_conv2d_grads(gy, x, w, (1, 1), (1, 1), (1, 1, 1, 1), 1)
    for g, r in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), r, rtol=2e-5, atol=2e-4 * np.abs(r).max())


@pytest.mark.parametrize("largest", [True, False])
def test_matmul_topk(device, monkeypatch, largest):
    """Several spans of mat's rows (the merge) and several query blocks; integer scores, so
    ties are many and exact."""
    monkeypatch.setattr(cpu_neighbors, "BLOCK_X", 3)
    monkeypatch.setattr(cpu_neighbors, "BLOCK_M", 5)
    monkeypatch.setattr(cpu_neighbors, "_parts", lambda blocks, m: 3)
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, (7, 5)).astype(np.float32)
    mat = rng.integers(-2, 3, (41, 5)).astype(np.float32)
    xa, ma = gp.asarray(x, device=device), gp.asarray(mat, device=device)
    v, i = _check_paths(device, monkeypatch,
                        lambda: neighbors.matmul_topk(xa, ma, 6, largest=largest),
                        {cpu_neighbors._tasks, cpu_neighbors._merge})
    s = x.astype(np.float64) @ mat.T.astype(np.float64)
    want = _order(s, 6, largest)
    np.testing.assert_array_equal(np.asarray(i), want)
    np.testing.assert_array_equal(np.asarray(v), np.take_along_axis(s, want, 1))


def test_complex_batched_matmul(monkeypatch):
    """A small complex batch runs its products in order instead of one task each."""
    rng = np.random.default_rng(4)
    # products of BLAS size (linalg._SMALL_MM), a batch of 3
    a = rng.standard_normal((3, 16, 20)) + 1j * rng.standard_normal((3, 16, 20))
    b = rng.standard_normal((3, 20, 16)) + 1j * rng.standard_normal((3, 20, 16))
    cpu = gp.backends.registry.device("cpu")
    calls, batched = [], blas._batched
    monkeypatch.setattr(blas, "_batched", lambda *args: calls.append(1) or batched(*args))

    def run():
        calls.clear()
        res = gp.matmul(gp.asarray(a, device=cpu), gp.asarray(b, device=cpu))
        return res, len(calls)

    res = _run_both(monkeypatch, run)
    assert res["serial"][0][1] == 0 and res["parallel"][0][1] == 1
    _same_bits([res["serial"][0][0]], [res["parallel"][0][0]])
    np.testing.assert_allclose(np.asarray(res["serial"][0][0]), a @ b, rtol=1e-12, atol=1e-12)
