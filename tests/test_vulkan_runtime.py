"""Vulkan runtime: device discovery, memory pool, lazy execution, shader build freshness."""
import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

import grilly as gp
from grilly.backends.vulkan import backend as vkb
from grilly.backends.vulkan import kernels
from grilly.backends.vulkan import runtime
from grilly.backends.vulkan.recorder import stats
from grilly.testing import assert_close

VK = [d for d in gp.devices() if str(d).startswith("vulkan")]
ROOT = Path(__file__).resolve().parents[1]
needs_vk = pytest.mark.skipif(not VK, reason="no Vulkan device")


def _build_module():
    spec = importlib.util.spec_from_file_location("_build_shaders", ROOT / "tools" / "build_shaders.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_spirv_is_fresh():
    """Every variant's .spv exists and was built from the current GLSL (else rebuild shaders)."""
    b = _build_module()
    stale = []
    for name, (src, flags) in b.variants().items():
        stamp = b.SPV_DIR / f"{name}.spv.sha256"
        if not (b.SPV_DIR / f"{name}.spv").exists() or not stamp.exists() \
                or stamp.read_text().strip() != b.source_digest(src, flags):
            stale.append(name)
    assert not stale, f"stale SPIR-V, run `python tools/build_shaders.py`: {stale[:5]}"


def test_stale_check_can_fail(tmp_path, monkeypatch):
    b = _build_module()
    src = tmp_path / "shaders"
    shutil.copytree(b.SHADER_DIR, src)
    name, (rel, flags) = next(iter(b.variants().items()))
    before = b.source_digest(rel, flags)
    monkeypatch.setattr(b, "SHADER_DIR", src)
    (src / rel).write_text((src / rel).read_text() + "\n// edited\n")
    assert b.source_digest(rel, flags) != before


def test_missing_loader_reports_no_device(monkeypatch):
    monkeypatch.setattr(runtime, "IMPORT_ERROR", "the Vulkan loader could not be loaded (test)")
    b = vkb.VulkanBackend()
    assert b.devices() == []
    assert "loader" in b.unavailable_reason


def test_flag_exported():
    import grilly.backends.vulkan as v

    assert v.VULKAN_AVAILABLE == bool(VK)
    assert isinstance(v.UNAVAILABLE_REASON, str)


@needs_vk
def test_info_and_rank():
    d = VK[0]
    info = d.backend.info(d)
    for k in ("shaderInt64", "shaderFloat64", "subgroup_size", "maxStorageBufferRange",
              "memory_heaps", "cooperative_matrix"):
        assert k in info
    assert d.backend.supports_dtype(d, gp.complex64)
    assert d.backend.supports_dtype(d, gp.float32)
    if info["type"] == "CPU":  # lavapipe never wins the default device over the cpu backend
        assert d.backend.priority + d.rank < gp.backends.registry.backends["cpu"].priority


@needs_vk
def test_device_stats_count_this_device():
    d = VK[0]
    x = gp.asarray(np.arange(1000, dtype=np.float32), device=d)
    gp.synchronize(d)
    before = gp.device_stats(d)
    assert set(before) >= {"submits", "dispatches", "uploads", "downloads", "held_bytes",
                           "live_bytes", "host_round_trips"}
    y = gp.sqrt(x * x + 1.0)   # recorded (or fused, on a GPU) until the sync below
    gp.synchronize(d)
    mid = gp.device_stats(str(d))
    assert mid["dispatches"] >= before["dispatches"] + 1
    assert mid["submits"] >= before["submits"] + 1 and mid["downloads"] == before["downloads"]
    np.testing.assert_allclose(np.asarray(y), np.sqrt(np.arange(1000.0) ** 2 + 1), rtol=1e-6)
    after = gp.device_stats(d)
    assert after["downloads"] == before["downloads"] + 1
    assert after["live_bytes"] >= 2 * 4000 and after["held_bytes"] >= after["live_bytes"]
    assert after["peak_live_bytes"] >= after["live_bytes"]
    assert "submits" not in gp.device_stats("cpu")


@needs_vk
def test_reset_peak_memory_stats():
    """The pool's peak starts over from the live bytes, then rises with what is made after."""
    d = VK[0]
    big = gp.asarray(np.ones(1 << 20, np.float32), device=d)
    gp.synchronize(d)
    del big
    gp.synchronize(d)
    st = gp.device_stats(d)
    assert st["peak_live_bytes"] >= st["live_bytes"] + (4 << 20)
    gp.reset_peak_memory_stats(d)
    st = gp.device_stats(d)
    assert st["peak_live_bytes"] == st["live_bytes"]
    small = gp.asarray(np.ones(1000, np.float32), device=d)
    assert gp.device_stats(d)["peak_live_bytes"] >= st["live_bytes"] + 4000
    del small
    gp.reset_peak_memory_stats("cpu")   # a backend without the figure: nothing to do


@needs_vk
def test_chain_stays_on_device():
    d = VK[0]
    x = gp.asarray(np.arange(1000, dtype=np.float32), device=d)
    before = dict(stats)
    y = x
    for _ in range(20):
        y = gp.sqrt(y * y + 1.0) - 0.5
    assert stats["downloads"] == before["downloads"]
    assert stats["submits"] == before["submits"]  # recorded, not yet run
    gp.synchronize(d)  # runs what is recorded; nothing comes back to the host
    assert stats["submits"] == before["submits"] + 1
    assert stats["downloads"] == before["downloads"]
    h = np.asarray(y)
    assert stats["downloads"] == before["downloads"] + 1
    # nothing was left to submit; a read from uncached memory (resizable BAR) submits its copy
    # into staging (vulkan/kernels.py STAGE_MIN)
    staged = d.ctx.pool.staged_reads() is not None and 4000 >= kernels.STAGE_MIN
    assert stats["submits"] == before["submits"] + 1 + staged
    e = np.arange(1000, dtype=np.float32)
    for _ in range(20):
        e = np.sqrt(e * e + np.float32(1.0)) - np.float32(0.5)
    assert_close(h, e, rtol=1e-5)


@needs_vk
def test_alloc_free_loop_keeps_live_bytes():
    import gc

    # no earlier tests' garbage (cycles a collection during the loop would free) and no earlier
    # work still holding, then releasing, blocks: the loop's own bytes only
    gc.collect()
    VK[0].synchronize()
    pool = VK[0].ctx.pool
    with VK[0].lock:
        pool.take_deferred()
    live, held = pool.live, pool.held
    gc.disable()
    try:
        for i in range(10_000):
            a = pool.alloc(256 + (i % 7) * 1000)
            del a
    finally:
        gc.enable()
    assert pool.live == live
    assert pool.held <= held + 8 * (8 << 20)


@needs_vk
def test_too_large_array_is_refused():
    d = VK[0]
    limit = d.phys.max_storage
    with pytest.raises(MemoryError, match="maxStorageBufferRange"):
        d.ctx.pool.alloc(limit + 1)


@needs_vk
def test_bad_pipeline_names_shader():
    ctx = VK[0].ctx
    with pytest.raises(runtime.VulkanError, match="my_broken_shader"):
        ctx.create_pipeline("my_broken_shader", b"\x03\x02\x23\x07" + b"\0" * 16)
    with pytest.raises(runtime.VulkanError, match="not valid SPIR-V"):
        ctx.create_pipeline("junk", b"hello")


@needs_vk
def test_missing_variant_is_clear():
    with pytest.raises(NotImplementedError, match="build_shaders"):
        VK[0].ctx.pipeline("no_such_variant", (0,))


@needs_vk
def test_float16_nextafter_steps_float16_bits():
    # float16 computes in float32, where a float32 step would be wrong: the shader steps the
    # float16 bit pattern (subnormals, zeros, the largest finite value and infinities included)
    rng = np.random.default_rng(1)
    bits = np.concatenate([np.arange(0, 2**16, dtype=np.uint16), rng.integers(0, 2**16, 2**16)
                           .astype(np.uint16)])
    x = bits[: 2**16].view(np.float16)
    y = bits[2**16:].view(np.float16)
    y[::7] = np.float16(np.inf) * np.sign(x[::7].astype(np.float32) + 0.5).astype(np.float16)
    got = np.asarray(gp.nextafter(gp.asarray(x, device=VK[0]), gp.asarray(y, device=VK[0])))
    want = np.nextafter(x, y)
    same = (got.view(np.uint16) == want.view(np.uint16)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (x[~same][:5], y[~same][:5], got[~same][:5], want[~same][:5])


@needs_vk
def test_creation_kernels():
    d = VK[0]
    assert_close(gp.arange(2, 20, 3, device=d, dtype=gp.int32), np.arange(2, 20, 3, dtype=np.int32))
    assert_close(gp.linspace(0, 1, 7, device=d), np.linspace(0, 1, 7))
    assert_close(gp.eye(3, 4, k=1, device=d, dtype=gp.float32), np.eye(3, 4, 1, dtype=np.float32))
    assert_close(gp.full((2, 3), 5, device=d, dtype=gp.uint8), np.full((2, 3), 5, np.uint8))
    assert gp.empty((4, 0), device=d).shape == (4, 0)


@needs_vk
def test_staged_download_of_views(monkeypatch):
    """Downloads through the host-cached staging copy (the path resizable-BAR GPUs take; lavapipe's
    own memory is cached, so force it) give every view's exact contents."""
    d = VK[0]
    pool = d.ctx.pool
    monkeypatch.setattr(pool, "_staging_type", pool.type_index(~0))
    h = np.arange(300 * 257, dtype=np.float32).reshape(300, 257)
    x = gp.asarray(h, device=d)
    y = x * 2.0
    for view, ref in ((y, h * 2), (y[::-1, 3:200:2], (h * 2)[::-1, 3:200:2]), (y.T, (h * 2).T),
                      (y[7:9], (h * 2)[7:9])):
        before = stats["downloads"]
        assert_close(np.asarray(view), ref, rtol=0)
        assert stats["downloads"] == before + 1
    big = gp.asarray(np.ones((600, 600), np.float64), device=d)
    assert float(gp.sum(big)) == 360000.0
    assert_close(np.asarray(big[1:, ::7]), np.ones((599, 86)), rtol=0)


@needs_vk
def test_namespace_info_reports_probed_capabilities():
    info = gp.__array_namespace_info__().device_info(device=VK[0])
    for k in ("shaderFloat64", "shaderInt64", "shaderFloat16", "shaderInt8", "storageBuffer8BitAccess",
              "subgroup_size", "subgroup_arithmetic", "cooperative_matrix", "memory_heaps",
              "memory_budget", "maxStorageBufferRange", "maxComputeWorkGroupCount",
              "matmul_float16"):
        assert k in info, k
    assert info["maxComputeWorkGroupCount"][0] >= 65535
    assert VK[0].ctx.pool.available() > 0


def test_lost_device_error_is_clear():
    with pytest.raises(runtime.VulkanError, match="device was lost"):
        runtime.check(-4, "vkQueueSubmit")


def test_denorm_preserve_patch():
    """DenormPreserve (for devices that offer it) adds one capability and one execution mode per
    entry point, once, and leaves every other word of the module as it was."""
    from grilly.backends.vulkan import spirv
    code = (_build_module().SPV_DIR / "ew_float32.spv").read_bytes()
    new = spirv.add_denorm_preserve(code, 32)
    assert spirv.add_denorm_preserve(new, 32) == new
    words = spirv._words(new)
    added = [ins for _, op, ins in spirv._instructions(words)
             if (op == spirv.OP_CAPABILITY and ins[1] == spirv.CAP_DENORM_PRESERVE)
             or (op == spirv.OP_EXECUTION_MODE and ins[2] == spirv.DENORM_PRESERVE)]
    assert [len(i) for i in added] == [2, 4] and added[1][3] == 32
    kept = [w for _, _, ins in spirv._instructions(words) if ins not in added for w in ins]
    assert kept == spirv._words(code)[5:]
    with pytest.raises(ValueError, match="SPIR-V"):
        spirv.add_denorm_preserve(b"\0" * 20)
