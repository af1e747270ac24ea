"""Elementwise fusion on Vulkan (grilly/backends/vulkan/fusion.py): a run of elementwise ops is
one dispatch, computes what the ops one by one compute, and keeps the order of other work.
lavapipe does not fuse by default (docs/vulkan.md), so these tests turn fusion on."""
import numpy as np
import pytest

import grilly as gp
from grilly.backends.vulkan import fusion
from grilly.backends.vulkan.recorder import stats
from grilly.testing import assert_close

VK = [d for d in gp.devices() if str(d).startswith("vulkan")]
pytestmark = pytest.mark.skipif(not VK, reason="no Vulkan device")


@pytest.fixture
def dev():
    d = VK[0]
    ctx = d.ctx
    was = ctx.fuser is not None
    fusion.enable(ctx, True)
    yield d
    fusion.enable(ctx, was)


def _h(n=1024, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-2, 2, n).astype(dtype)


def _chain(xp, x):
    y = x * 1.5 + 0.5
    y = xp.exp(-y * y) - 0.25
    y = xp.tanh(y) * 2.0 + x
    y = xp.sin(y) + xp.cos(y)
    return y * y


def _dispatches(fn):
    before = stats["dispatches"]
    out = fn()
    return out, stats["dispatches"] - before


def test_chain_is_one_dispatch(dev):
    h = _h()
    x = gp.asarray(h, device=dev)
    dev.synchronize()
    r, n = _dispatches(lambda: (_chain(gp, x), dev.synchronize())[0])
    assert n == 1
    assert_close(np.asarray(r), _chain(np, h), rtol=1e-5, atol=1e-6)


def test_fused_equals_unfused(dev):
    h = _h(4099, seed=1)   # not a multiple of 4: the scalar path
    x = gp.asarray(h, device=dev)
    fused = np.asarray(_chain(gp, x))
    fusion.enable(dev.ctx, False)
    plain = np.asarray(_chain(gp, x))
    np.testing.assert_allclose(fused, plain, rtol=2e-7, atol=1e-7)


def test_held_intermediates_are_stored(dev):
    h = _h()
    x = gp.asarray(h, device=dev)
    a = x + 1
    b = a * a
    c = b - x
    d = gp.sqrt(gp.abs(c))
    for got, want in ((a, h + 1), (b, (h + 1) ** 2), (c, (h + 1) ** 2 - h),
                      (d, np.sqrt(np.abs((h + 1) ** 2 - h)))):
        assert_close(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_unheld_results_are_not_computed(dev):
    x = gp.asarray(_h(), device=dev)
    dev.synchronize()

    def discard():
        x + 1
        gp.exp(x) * 2
        dev.synchronize()
    _, n = _dispatches(discard)
    assert n == 0


def test_views_of_results(dev):
    h = _h()
    x = gp.asarray(h, device=dev)
    y = x + 1
    z = gp.reshape(y, (32, 32)) * 2     # same elements: stays in the run
    w = y[1:] * 3                        # another view: the run is emitted first
    assert_close(np.asarray(z), ((h + 1) * 2).reshape(32, 32), rtol=1e-6)
    assert_close(np.asarray(w), (h[1:] + 1) * 3, rtol=1e-6)


def test_many_inputs_and_long_runs(dev):
    hs = [_h(256, seed=s) for s in range(12)]   # more inputs than the kernel has bindings
    xs = [gp.asarray(h, device=dev) for h in hs]
    acc, want = xs[0], hs[0]
    for x, h in zip(xs[1:], hs[1:]):
        acc, want = acc * 0.5 + x, want * np.float32(0.5) + h
    assert_close(np.asarray(acc), want, rtol=1e-5, atol=1e-6)
    y, hy = xs[0], hs[0]
    dev.synchronize()

    def long_chain():
        nonlocal y
        for _ in range(40):   # more instructions than a run holds
            y = y * 0.9 + 0.1
        dev.synchronize()
    _, n = _dispatches(long_chain)
    for _ in range(40):
        hy = hy * np.float32(0.9) + np.float32(0.1)
    assert n == -(-80 // fusion.NI)
    assert_close(np.asarray(y), hy, rtol=1e-5, atol=1e-6)


def test_order_with_other_work(dev):
    h = _h(64 * 64).reshape(64, 64)
    x = gp.asarray(h, device=dev)
    y = x * 2 + 1
    m = gp.matmul(y, y)      # not elementwise: the run is recorded before it
    z = m * 0.5 - y
    s = gp.sum(z)
    want = (h * 2 + 1) @ (h * 2 + 1) * 0.5 - (h * 2 + 1)
    assert_close(np.asarray(z), want, rtol=1e-4, atol=1e-3)
    assert_close(s, want.sum(), rtol=1e-3)


def test_dtype_and_size_changes(dev):
    hf, hi = _h(), np.arange(1024, dtype=np.int32) - 512
    xf, xi = gp.asarray(hf, device=dev), gp.asarray(hi, device=dev)
    a = xf * 3
    b = xi * 3 + 7        # int32: another run
    c = a + 1
    d = xf[:100] - 1      # another size
    e = b // 5 - b % 7
    assert_close(np.asarray(c), hf * 3 + 1, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(e), (hi * 3 + 7) // 5 - (hi * 3 + 7) % 7)
    assert_close(np.asarray(d), hf[:100] - 1, rtol=1e-6)


def test_reused_buffer_of_a_dropped_result(dev):
    """A result no array holds is not stored, so the pool may hand its buffer out at once."""
    h = _h()
    x = gp.asarray(h, device=dev)
    keep = x * 2
    for s in range(5):
        tmp = x + s
        del tmp
        fresh = gp.asarray(np.full(1024, s, np.float32), device=dev)   # may reuse its block
        keep = keep + fresh
    np.testing.assert_allclose(np.asarray(keep), h * 2 + 10, rtol=1e-6)


def test_broadcast_scalars_and_zero_d(dev):
    h = _h(12)
    x = gp.asarray(h, device=dev)
    s = gp.asarray(np.float32(3.0), device=dev)
    y = gp.maximum(x * s, 0.25) / s
    assert_close(np.asarray(y), np.maximum(h * 3, 0.25) / 3, rtol=1e-6)
    z = gp.asarray(np.float32(2.0), device=dev) * 4 + 1    # 0-d run
    assert float(z) == 9.0


def test_env_setting(monkeypatch):
    phys = VK[0].phys
    monkeypatch.setenv("GRILLY_VULKAN_FUSION", "0")
    assert not fusion.wanted(phys)
    monkeypatch.setenv("GRILLY_VULKAN_FUSION", "1")
    assert fusion.wanted(phys) == (phys.max_stage_buffers >= fusion.NB)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.uint32])
def test_other_dtypes(dev, dtype):
    if dtype == np.float64 and not dev.backend.supports_dtype(dev, gp.float64):
        pytest.skip("no float64 on this device")
    h = (np.arange(1, 257) % 17).astype(dtype)
    x = gp.asarray(h, device=dev)
    dev.synchronize()
    y, n = _dispatches(lambda: np.asarray(((x * 3 + 5) // 2 - x) * 7 + 1))
    want = ((h * dtype(3) + dtype(5)) // dtype(2) - h) * dtype(7) + dtype(1)
    np.testing.assert_array_equal(y, want)
    assert n == 1
    if dtype == np.float64:   # immediates take two words: 3 fit
        z = ((x * 0.1 + 0.2) * 0.3 + 0.4) * 0.5
        np.testing.assert_allclose(np.asarray(z), ((h * 0.1 + 0.2) * 0.3 + 0.4) * 0.5, rtol=1e-15)


def test_in_place_writes_keep_order(dev):
    """A kernel writing a buffer the open run reads is not fused into it (a broadcast read of
    that buffer by another thread would see the write)."""
    from grilly.backends.vulkan import kernels
    from grilly.backends.vulkan.variants import op_codes

    h = _h(256)
    x = gp.asarray(h, device=dev)
    buf = x._buf
    for _ in range(3):   # x = x + x, in place
        kernels.launch(dev.ctx, "ew_float32", op_codes()["add"], [buf, buf, buf], (256,), "add")
    np.testing.assert_allclose(np.asarray(x), h * 8, rtol=1e-6)
