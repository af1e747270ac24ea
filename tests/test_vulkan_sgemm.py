"""The large float32 matmul shader (shaders/linalg/sgemm.comp) in each operand layout: A and B
as stored or as transposed views (read without a copy), tile-aligned shapes and ragged edges,
batched, against a float64 numpy reference."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import grilly as gp

VK = [d for d in gp.devices() if str(d).startswith("vulkan")]
pytestmark = pytest.mark.skipif(not VK, reason="no Vulkan device")


@pytest.fixture(autouse=True)
def _fresh_plans():
    """Products choose their variant afresh: tests here change the tuning constants and spy on
    the choice, which linalg's plan cache (a product's choice, kept per layout) would skip."""
    from grilly.backends.vulkan import linalg

    linalg._PLANS.clear()
    yield
    linalg._PLANS.clear()

# aligned; ragged everywhere; ragged M, N, K; small; ragged M only (the aligned shader, clamped)
SHAPES = [(256, 256, 64), (200, 260, 52), (1000, 640, 100), (300, 132, 20), (1000, 512, 64)]


@pytest.fixture
def variants(monkeypatch):
    from grilly.backends.vulkan import linalg

    used = []
    real = linalg.dispatch

    def spy(ctx, variant, *a, **k):
        used.append(variant)
        return real(ctx, variant, *a, **k)

    monkeypatch.setattr(linalg, "dispatch", spy)
    from grilly.backends.vulkan import conv

    def conv_spy(ctx, variant, *a, **k):   # the GEMMs conv2d dispatches itself
        if not variant.startswith("conv_"):
            used.append(variant)
        return real(ctx, variant, *a, **k)

    monkeypatch.setattr(conv, "dispatch", conv_spy)
    return used


def _operands(rng, ta, tb, batch, m, n, k, dtype=np.float32) -> tuple:
    """(a, b, ga, gb): random (M, K) and (K, N) operands (batched where ``batch``), on the
    device as stored (``ta``/``tb``: transposed views of (K, M) / (N, K) arrays) and on the
    host as the logical matrices."""
    sa, sb = ((k, m) if ta else (m, k)), ((n, k) if tb else (k, n))
    if batch:
        sa, sb = (batch, *sa), (batch, *sb)
    a = rng.standard_normal(sa).astype(dtype)
    b = rng.standard_normal(sb).astype(dtype)
    ga, gb = gp.asarray(a, device=VK[0]), gp.asarray(b, device=VK[0])
    if ta:
        a, ga = np.swapaxes(a, -1, -2), gp.matrix_transpose(ga)
    if tb:
        b, gb = np.swapaxes(b, -1, -2), gp.matrix_transpose(gb)
    return a, b, ga, gb


def _check_product(variants, rng, ta, tb, batch, m, n, k) -> list:
    """One (M, K) @ (K, N) product in the given layouts (batched where ``batch``) against
    float64; the shader variants it dispatched."""
    a, b, ga, gb = _operands(rng, ta, tb, batch, m, n, k)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    variants.clear()
    got = np.asarray(ga @ gb)
    assert got.shape == ref.shape
    # float32 accumulation over k terms: error bound ~ k * eps * |a||b|
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert np.all(np.abs(got - ref) <= 4 * k * 2.0**-24 * scale + 1e-30)
    return list(variants)


@pytest.mark.parametrize("m,n,k", [(256, 384, 128), (200, 130, 52), (1024, 512, 64),
                                   (128, 128, 8192)])
@pytest.mark.parametrize("offset", [0, 3])
def test_float16_linear_takes_the_bias_in_the_product(variants, m, n, k, offset):
    """float16 linear (autocast's) runs Vulkan's kernel: on tensor cores the accumulators start
    at the bias (hgemm_n*_coop_bias_float16, aligned and edge: one rounding, with the bias in
    it) unless K is split; elsewhere the sgemm float16 epilogue or an add after the product;
    within float16 rounding of float64 (one rounding where the bias is in the product)."""
    from grilly.array import dense

    rng = np.random.default_rng(17)
    x = rng.standard_normal((m, k)).astype(np.float16)
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float16)
    b = rng.standard_normal(n + offset).astype(np.float16)
    bias = gp.asarray(b, device=VK[0])[offset:]
    variants.clear()
    got = dense.linear(gp.asarray(x, device=VK[0]), gp.asarray(w, device=VK[0]), bias)
    assert got.dtype == gp.float16
    got = np.asarray(got).astype(np.float64)
    prod = x.astype(np.float64) @ w.T.astype(np.float64)
    ref = prod + b[offset:]
    scale = np.abs(x).astype(np.float64) @ np.abs(w.T).astype(np.float64) + np.abs(b[offset:])
    one = _f16_bound(ref, scale, k)
    fused = [v for v in variants if "_coop_bias_" in v]
    if VK[0].ctx.phys.coop_f16:
        assert bool(fused) == (k < 8192), variants   # (the K split adds the bias after)
    else:
        assert not fused and variants, variants
    bound = one if fused else one + 0.5 * np.spacing(np.abs(prod).astype(np.float16))
    assert np.all(np.abs(got - ref) <= bound)


@pytest.mark.parametrize("m,n,k", [(256, 384, 128), (200, 130, 52), (128, 128, 8192)])
@pytest.mark.parametrize("offset", [0, 3])
def test_bfloat16_linear_takes_the_bias(variants, m, n, k, offset):
    """bfloat16 linear (autocast's) on Vulkan's kernel: on bfloat16 tensor cores the
    accumulators start at the bias (hgemm_n*_coop_bias_bfloat16) unless K is split; elsewhere
    sgemm.comp's bfloat16 epilogue or an add after the product (bfloat16 variants only); within
    bfloat16 rounding of float64."""
    import ml_dtypes

    from grilly.array import dense

    rng = np.random.default_rng(19)
    bf = ml_dtypes.bfloat16
    x = rng.standard_normal((m, k)).astype(bf)
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(bf)
    b = rng.standard_normal(n + offset).astype(bf)
    bias = gp.asarray(b, device=VK[0])[offset:]
    variants.clear()
    got = dense.linear(gp.asarray(x, device=VK[0]), gp.asarray(w, device=VK[0]), bias)
    assert got.dtype == gp.bfloat16
    got = np.asarray(got).astype(np.float64)
    prod = x.astype(np.float64) @ w.T.astype(np.float64)
    ref = prod + b[offset:].astype(np.float64)
    scale = (np.abs(x).astype(np.float64) @ np.abs(w.T).astype(np.float64)
             + np.abs(b[offset:]).astype(np.float64))
    fused = [v for v in variants if "_coop_bias_" in v]
    if VK[0].ctx.phys.coop_bf16:
        assert bool(fused) == (k < 8192), variants   # (the K split adds the bias after)
    else:
        assert not fused and variants and all(v.endswith("_bfloat16") for v in variants), variants
    # one rounding where the bias is in the product, two where it is added after
    bound = (2.0**-8 if fused else 2.0**-7) * np.abs(ref) + 4 * k * 2.0**-24 * scale \
        + (0 if fused else 2.0**-8 * np.abs(prod))
    assert np.all(np.abs(got - ref) <= bound)


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("batch", [None, 3])
def test_sgemm_layouts(variants, ta, tb, batch):
    rng = np.random.default_rng(7)
    seen = set()
    for m, n, k in SHAPES:
        used = _check_product(variants, rng, ta, tb, batch, m, n, k)
        seen.update(used)
        if (m, n, k) == (1000, 512, 64):   # ragged M only: the aligned shader, clamped
            assert len(used) == 1 and "_edge" not in used[0], used
    tag = ("t" if ta else "n") + ("t" if tb else "n")
    assert f"sgemm_{tag}_float32" in seen and f"sgemm_{tag}_edge_float32" in seen, seen


def test_sgemm_small_and_misaligned_use_the_general_shader(variants):
    rng = np.random.default_rng(1)
    for (m, n, k) in [(8, 8, 8), (130, 130, 7), (129, 131, 33)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        variants.clear()
        got = np.asarray(gp.asarray(a, device=VK[0]) @ gp.asarray(b, device=VK[0]))
        assert variants == ["mm_tiled_float32"]
        np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ta,tb", [(True, False), (False, False), (False, True)])
def test_split_k_for_a_long_k_and_a_small_output(variants, monkeypatch, ta, tb):
    """x^T @ g with the batch as K (a weight gradient): few output tiles, so K runs in slices
    (one batched dispatch of partial products, then their sum); the threshold is lowered so that
    a small product, quick on lavapipe, takes the path."""
    from grilly.backends.vulkan import linalg

    monkeypatch.setattr(linalg, "SPLITK_MIN_TILES", 1)
    monkeypatch.setattr(linalg, "SPLITK_MIN_K", 64)
    m, n, k = 128, 256, 1024
    assert linalg._split_k("sgemm_nn_float32", 1, m, n, k) > 1
    rng = np.random.default_rng(3)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    ga, gb = gp.asarray(a, device=VK[0]), gp.asarray(b, device=VK[0])
    got = gp.matmul(gp.matrix_transpose(ga) if ta else ga, gp.matrix_transpose(gb) if tb else gb)
    ref = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    assert any(v.startswith("sgemm_") for v in variants)


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("m,n,k", [(128, 576, 8192), (200, 132, 4096)])
def test_edge_shader_splits_a_long_k_with_few_tiles(variants, ta, tb, m, n, k):
    """A weight gradient whose output is not tile-aligned and too small to fill the GPU runs in
    K slices, not on the generic shader: on the 64x64 aligned variant where its edges are whole
    64x64 tiles (a conv layer's 128 x 576), else on the edge sgemm."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    ga, gb = gp.asarray(a, device=VK[0]), gp.asarray(b, device=VK[0])
    variants.clear()
    got = gp.matmul(gp.matrix_transpose(ga) if ta else ga, gp.matrix_transpose(gb) if tb else gb)
    a64, b64 = (a.T if ta else a).astype(np.float64), (b.T if tb else b).astype(np.float64)
    scale = np.abs(a64) @ np.abs(b64)
    assert np.all(np.abs(np.asarray(got) - a64 @ b64) <= 4 * k * 2.0**-24 * scale)
    tag = ("t" if ta else "n") + ("t" if tb else "n")
    whole64 = m % 64 == 0 and n % 64 == 0
    assert variants == [f"sgemm_{tag}_{'s64' if whole64 else 'edge'}_float32"]


def test_the_wave_model_picks_whole_waves():
    """linalg._waves against hand-counted cases on 132 compute units: 18 tiles of a conv weight
    gradient fill waves best in 32 slices (576 workgroups, 4.4 waves, against 144 in 8: 1.1);
    the encoder's 32 WIDE tiles stay at 4 (128 workgroups, one wave: more slices only add
    reduction); a product whose partial sums outweigh the waves saved is not split; slices stay
    SPLITK_MIN_K long and whole granules."""
    from grilly.backends.vulkan import linalg

    assert linalg._waves(18, 16384, 16, 132, 1, 16384, 256, 1152) == 32
    assert linalg._waves(32, 8192, 16, 132, 1, 32768, 512, 2048) == 4
    assert linalg._waves(120, 512, 16, 132, 1, 16384, 1280, 1536) == 1
    assert linalg._waves(1, 1024, 16, 132, 1, 16384, 128, 128) == 4      # 1024 / 256
    assert linalg._waves(1, 1024, 48, 132, 1, 16384, 128, 128) == 1      # not whole granules
    # tensor cores: a conv weight gradient of one tile takes up to COOP_SPLIT_MAX slices there
    assert linalg._coop_split(1, 1, 262144, False, 132, 64, 27) == linalg.COOP_SPLIT_MAX
    assert linalg._coop_split(1, 1, 262144, False) == linalg.SPLITK_MAX    # units unknown
    assert linalg._coop_split(1, 1, 1024, False, 132, 64, 27) == 1         # K too short


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False)])
@pytest.mark.parametrize("units", [1, 3, 132])
def test_split_products_with_the_devices_compute_units(variants, monkeypatch, ta, tb, units):
    """Where the device reports its compute units, split products take the wave model's slice
    counts (128x128, WIDE and 64x64 tiles), and still match float64."""
    from grilly.backends.vulkan import linalg

    monkeypatch.setattr(VK[0].ctx.phys, "compute_units", units)
    monkeypatch.setattr(linalg, "SPLITK_MIN_TILES", 1)
    monkeypatch.setattr(linalg, "SPLITK_MIN_K", 64)
    picked = []
    real = linalg._waves
    monkeypatch.setattr(linalg, "_waves", lambda *a: picked.append(real(*a)) or picked[-1])
    rng = np.random.default_rng(31)
    for m, n, k in [(256, 384, 2048), (256, 512, 2048), (128, 576, 2048), (1000, 256, 1024)]:
        picked.clear()
        _check_product(variants, rng, ta, tb, None, m, n, k)
        assert picked, (m, n, k)


@pytest.mark.parametrize("m,n,k", [(64, 27, 65536), (7, 5, 4096), (9, 3, 1000)])
def test_generic_shader_splits_a_long_k(variants, m, n, k):
    """A narrow output with a long K on the generic tiled shader (a conv layer's weight
    gradient: 27 columns, K = batch x pixels) runs as K slices in one batched dispatch, then
    their sum; a K that no power of two divides runs unsplit."""
    from grilly.backends.vulkan import linalg

    rng = np.random.default_rng(5)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    got = gp.matmul(gp.asarray(a, device=VK[0]), gp.matrix_transpose(gp.asarray(b, device=VK[0])))
    ref = a.astype(np.float64) @ b.T.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).T.astype(np.float64)
    assert np.all(np.abs(np.asarray(got) - ref) <= 4 * k * 2.0**-24 * scale)
    split = linalg._tiled_split(1, 1, k)
    assert (split > 1) == (k % 2 == 0 and k >= max(2 * linalg.SPLITK_MIN_K,
                                                    linalg.TILED_SPLIT_MIN_K))
    assert variants.count("mm_tiled_float32") == 1


def _f16_bound(ref: np.ndarray, scale: np.ndarray, k: int) -> np.ndarray:
    """float32 accumulation of k products, then one float16 rounding of the result."""
    return 0.5 * np.spacing(np.abs(ref).astype(np.float16)).astype(np.float64) \
        + 4 * k * 2.0**-24 * scale


def _half_products(variants, rng, ta, tb, batch, dtype, shapes, bound) -> set:
    """Products of 16-bit operands in the given layouts against float64 (within
    ``bound(ref, scale, k)``), each returning ``dtype``; the shader variants they ran."""
    seen = set()
    for m, n, k in shapes:
        a, b, ga, gb = _operands(rng, ta, tb, batch, m, n, k, dtype)
        variants.clear()
        got = ga @ gb
        seen.update(variants)
        assert got.dtype == ga.dtype
        got = np.asarray(got).astype(np.float64)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
        assert np.all(np.abs(got - ref) <= bound(ref, scale, k))
    return seen


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("batch", [None, 2])
def test_float16_matmul_layouts(variants, ta, tb, batch):
    """float16 products accumulate in float32 and round once: on tensor cores where the device
    has cooperative matrices (hgemm_*_coop), else in the float16 variants of the sgemm shader."""
    seen = _half_products(variants, np.random.default_rng(11), ta, tb, batch, np.float16,
                          [(256, 256, 64), (200, 260, 52), (130, 384, 96), (5, 7, 3)],
                          _f16_bound)
    tag = ("t" if ta else "n") + ("t" if tb else "n")
    if VK[0].ctx.phys.coop_f16:
        assert f"hgemm_{tag}_coop_float16" in seen and f"hgemm_{tag}_edge_coop_float16" in seen
    else:
        assert any(v.startswith(f"sgemm_{tag}") and v.endswith("_float16") for v in seen), seen


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("batch", [None, 2])
def test_bfloat16_matmul_layouts(variants, ta, tb, batch):
    """bfloat16 products accumulate in float32 and round once (to nearest even): on tensor
    cores where the device has VK_KHR_shader_bfloat16's cooperative matrices (hgemm_*_coop_
    bfloat16, aligned and edge variants, a long K split into float32 partial sums), else in the
    bfloat16 variants of the sgemm shader (its bits, float32 sums; small or ragged products
    the generic one); against float64."""
    import ml_dtypes

    seen = _half_products(
        variants, np.random.default_rng(13), ta, tb, batch, ml_dtypes.bfloat16,
        [(256, 256, 64), (200, 260, 52), (130, 384, 96), (5, 7, 3), (128, 128, 4096)],
        lambda ref, scale, k: 2.0**-8 * np.abs(ref) + 4 * k * 2.0**-24 * scale)
    tag = ("t" if ta else "n") + ("t" if tb else "n")
    if VK[0].ctx.phys.coop_bf16:
        assert {f"hgemm_{tag}_coop_bfloat16", f"hgemm_{tag}_edge_coop_bfloat16"} <= seen, seen
        if not batch:
            assert f"hgemm_{tag}_coop_f32out_bfloat16" in seen, seen
    else:
        assert any(v.startswith(f"sgemm_{tag}") and v.endswith("_bfloat16") for v in seen), seen
        assert not any(v.endswith("_float32") for v in seen), seen   # (no float32 copies)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tensor_core_nt_products_copy_b(variants, monkeypatch, dtype):
    """On tensor cores, an "nt" product with linalg.NT_COPY_MIN_M rows and NT_COPY_MIN_N
    columns or more runs "nn" on a copy of B^T (the "nt" variant keeps a slower loop); smaller
    ones, and edge shapes, read B in place. Against float64 on every device."""
    import ml_dtypes

    from grilly.backends.vulkan import linalg

    monkeypatch.setattr(linalg, "NT_COPY_MIN_M", 256)
    monkeypatch.setattr(linalg, "NT_COPY_MIN_N", 256)
    host = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    coop = VK[0].ctx.phys.coop_f16 if dtype == "float16" else VK[0].ctx.phys.coop_bf16
    rng = np.random.default_rng(17)
    for m, n, k, want in [(256, 256, 64, "nn"), (128, 256, 64, "nt"), (256, 260, 64, "nt")]:
        a, b, ga, gb = _operands(rng, False, True, None, m, n, k, host)
        variants.clear()
        got = np.asarray(ga @ gb).astype(np.float64)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
        assert np.all(np.abs(got - ref) <= 2.0**-8 * np.abs(ref) + 4 * k * 2.0**-24 * scale)
        if coop:
            assert variants and variants[0].startswith(f"hgemm_{want}_"), variants


def test_bfloat16_native_ops_follow_the_backend():
    """The array layer runs a DEVICE_NATIVE op on bfloat16 itself only where the device's
    backend lists it (Backend.native_bfloat16) and every array argument is bfloat16."""
    import types

    from grilly.array import bfloat16 as bf

    class Arr:
        def __init__(self, dtype, device):
            self._dtype, self._device = dtype, device

    class Dev:   # (hashable, as devices are)
        def __init__(self, ops):
            self.backend = types.SimpleNamespace(native_bfloat16=lambda d: ops)

    dev_n, dev_f = Dev({"matmul", "dense.linear"}), Dev(frozenset())
    x, y = Arr(gp.bfloat16, dev_n), Arr(gp.bfloat16, dev_n)
    assert bf.native_on("matmul", (x, y)) and bf.native_on("dense.linear", (x, y, None))
    assert not bf.native_on("dense.linear_backward", (x, x, y, (True,) * 3))  # not listed
    assert not bf.native_on("add", (x, y))                                     # not listed
    assert not bf.native_on("cos", (x,))                                       # never native
    assert not bf.native_on("matmul", (x, Arr(gp.float32, dev_n)))             # mixed dtypes
    assert not bf.native_on("matmul", (Arr(gp.bfloat16, dev_f), Arr(gp.bfloat16, dev_f)))
    dev_e = Dev({"add"})   # elementwise: Python scalars only where they are bfloat16 values
    xe = Arr(gp.bfloat16, dev_e)
    assert bf.native_on("add", (xe, xe)) and bf.native_on("add", (xe, 0.5))
    assert bf.native_on("add", (3, xe)) and not bf.native_on("add", (xe, 0.1))
    assert not bf.native_on("add", (xe, 257)) and not bf.native_on("add", (xe, True))
    assert not bf.native_on("add", (xe, 10**400))   # (past float64: the usual OverflowError)
    # Vulkan runs every DEVICE_NATIVE op on bfloat16's bits on every device (tensor cores
    # or not)
    assert VK[0].backend.native_bfloat16(VK[0]) == bf.ELEMENTWISE | bf.DEVICE_NATIVE


def test_float16_matmul_odd_strides_overflow_and_zeros():
    """Views at odd offsets and strides, results past float16's range (inf, as numpy rounds
    them), K = 0 and signed zeros."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((70, 41)).astype(np.float16)
    b = rng.standard_normal((41, 90)).astype(np.float16)
    ga, gb = gp.asarray(a, device=VK[0]), gp.asarray(b, device=VK[0])
    got = np.asarray(ga[3:, 1::2] @ gb[1::2, 5:]).astype(np.float64)
    av, bv = a[3:, 1::2].astype(np.float64), b[1::2, 5:].astype(np.float64)
    ref = av @ bv
    assert np.all(np.abs(got - ref) <= _f16_bound(ref, np.abs(av) @ np.abs(bv), 20))
    big = np.full((130, 64), 100.0, np.float16)
    out = np.asarray(gp.asarray(big, device=VK[0]) @ gp.asarray(big.T.copy(), device=VK[0]))
    assert np.all(np.isposinf(out))   # 64 * 100 * 100 = 640000 > 65504
    z = gp.zeros((4, 0), dtype=gp.float16, device=VK[0]) @ gp.zeros((0, 3), dtype=gp.float16,
                                                                  device=VK[0])
    assert np.asarray(z).tolist() == [[0.0] * 3] * 4


@pytest.mark.parametrize("m,n,k,ta", [(128, 256, 4096, True), (512, 10, 4096, False),
                                      (10, 200, 2048, True), (64, 27, 65536, False)])
def test_float16_long_k_few_tiles(variants, m, n, k, ta):
    """Weight gradients and narrow layers: few output tiles and a long K. On tensor cores K runs
    in slices (float32 partial products, summed in float32, rounded once)."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    ga = gp.asarray(a, device=VK[0])
    ga = gp.matrix_transpose(ga) if ta else ga
    av = a.T if ta else a
    variants.clear()
    got = np.asarray(ga @ gp.asarray(b, device=VK[0])).astype(np.float64)
    ref = av.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(av).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert np.all(np.abs(got - ref) <= _f16_bound(ref, scale, k))
    if VK[0].ctx.phys.coop_f16:
        assert any("_coop_f32out_" in v for v in variants), variants


@pytest.mark.parametrize("m,n,k", [(512, 256, 64), (1000, 512, 64), (300, 132, 20),
                                   (200, 132, 4096), (128, 64, 512), (32, 10, 512),
                                   (256, 10, 4096)])
@pytest.mark.parametrize("offset", [0, 3])
def test_linear_adds_the_bias_in_the_sgemm_epilogue(monkeypatch, m, n, k, offset):
    """Vulkan's linear kernel: x @ w^T (w read transposed in place) plus the bias in the sgemm
    shader's epilogue where it runs unsplit with a 16-byte aligned bias (aligned, and ragged M
    on the aligned shader, clamped), in the generic tiled shader's where that runs unsplit (any offset), else
    one add after the product (a K split, a bias view at an odd offset); all against float64."""
    from grilly.array import dense
    from grilly.backends.vulkan import linalg

    used = []
    real = linalg.dispatch

    def spy(ctx, variant, spec, *a, **kw):
        used.append((variant, spec))
        return real(ctx, variant, spec, *a, **kw)

    monkeypatch.setattr(linalg, "dispatch", spy)
    rng = np.random.default_rng(13)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n + offset).astype(np.float32)
    bias = gp.asarray(b, device=VK[0])[offset:]
    got = np.asarray(dense.linear(gp.asarray(x, device=VK[0]), gp.asarray(w, device=VK[0]), bias))
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + b[offset:]
    scale = np.abs(x).astype(np.float64) @ np.abs(w.T).astype(np.float64) + np.abs(b[offset:])
    assert np.all(np.abs(got - ref) <= 4 * k * 2.0**-24 * scale)
    fused = [v for v, spec in used if spec[:3] == (0, 1, 1)]
    sgemm = [v for v, _ in used if v.startswith("sgemm_")]
    split = linalg._split_k(sgemm[0], 1, m, n, k) > 1 if sgemm else False
    tiled = not sgemm and linalg._tiled_split(1, -(-m // 64) * -(-n // 64), k) == 1
    assert bool(fused) == ((offset == 0 and bool(sgemm) and not split) or tiled), used
    if tiled:
        assert used == [("mm_tiled_float32", (0, 1, 1))], used


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("batch", [None, 3])
def test_sgemm_64x64_tiles(variants, monkeypatch, ta, tb, batch):
    """sgemm.comp's S64 variants (64x64 tiles, 32-deep slabs), forced on every shape: aligned
    and ragged, batched, each layout, and a linear layer's bias in their epilogue."""
    from grilly.array import dense
    from grilly.backends.vulkan import linalg

    monkeypatch.setattr(linalg, "use_s64", lambda *a: True)
    rng = np.random.default_rng(11)
    seen = set()
    for m, n, k in SHAPES + [(64, 64, 32), (70, 8, 12)]:
        seen.update(_check_product(variants, rng, ta, tb, batch, m, n, k))
    tag = ("t" if ta else "n") + ("t" if tb else "n")
    assert {f"sgemm_{tag}_s64_float32", f"sgemm_{tag}_edge_s64_float32"} <= seen, seen
    if not batch and tag == "nn":
        x = rng.standard_normal((4100, 48)).astype(np.float32)
        w = rng.standard_normal((36, 48)).astype(np.float32)
        bias = rng.standard_normal(36).astype(np.float32)
        variants.clear()
        got = np.asarray(dense.linear(*(gp.asarray(v, device=VK[0]) for v in (x, w, bias))))
        assert variants == ["sgemm_nt_edge_s64_float32"]   # the bias in the epilogue
        np.testing.assert_allclose(got, x.astype(np.float64) @ w.T + bias, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("batch", [None, 3])
def test_sgemm_wide_tiles(variants, monkeypatch, ta, tb, batch):
    """sgemm.comp's WIDE variants (128x256 tiles, 8-deep slabs, 16x8 outputs per invocation)
    wherever N is whole 256-column tiles (their tile minimum lifted): aligned, ragged rows (its
    loads of A clamped, CLAMP_M), split over K, each layout, batched; and a linear layer's bias
    in their epilogue; against float64."""
    from grilly.array import dense
    from grilly.backends.vulkan import linalg

    monkeypatch.setattr(linalg, "WIDE_MIN_TILES", 1)
    monkeypatch.setattr(linalg, "SPLITK_MIN_TILES", 1)
    monkeypatch.setattr(linalg, "SPLITK_MIN_K", 64)
    rng = np.random.default_rng(19)
    tag = ("t" if ta else "n") + ("t" if tb else "n")
    wide = f"sgemm_{tag}_w256_float32"
    for m, n, k in [(256, 512, 64), (384, 768, 48), (1000, 512, 64), (256, 512, 1024)]:
        used = _check_product(variants, rng, ta, tb, batch, m, n, k)
        if m == 1000:   # every row on the WIDE shader, the last 104 through clamped loads
            assert used == [wide], used
        else:
            assert wide in used, ((m, n, k), used)
    if not batch and tag == "nn":
        x = rng.standard_normal((384, 40 * 4)).astype(np.float32)
        w = rng.standard_normal((512, 40 * 4)).astype(np.float32)
        bias = rng.standard_normal(512).astype(np.float32)
        variants.clear()
        got = np.asarray(dense.linear(*(gp.asarray(v, device=VK[0]) for v in (x, w, bias))))
        assert variants == ["sgemm_nt_w256_float32"]   # the bias in the epilogue
        np.testing.assert_allclose(got, x.astype(np.float64) @ w.T + bias, rtol=1e-5, atol=1e-4)


def test_sgemm_wide_tiles_where_n_and_the_tile_count_allow():
    from grilly.backends.vulkan import linalg

    assert linalg._wide("sgemm_nt_float32", 1, 4096, 4096) == "sgemm_nt_w256_float32"
    assert linalg._wide("sgemm_nn_float32", 1, 1024, 4096)             # 128 tiles of 128x256
    assert linalg._wide("sgemm_nn_float32", 1, 512, 4096) is None      # 64: 128x128 tiles
    assert linalg._wide("sgemm_tn_float32", 1, 512, 2048, split=True)  # K slices fill the GPU
    assert linalg._wide("sgemm_nn_float32", 1, 4096, 4224) is None     # N not whole 256s
    for v in ("sgemm_nn_edge_float32", "sgemm_nn_s64_float32", "sgemm_nn_float16"):
        assert linalg._wide(v, 1, 4096, 4096) is None


@pytest.mark.parametrize("ta", [False, True])
def test_a_transposed_b_is_copied_for_many_rows(variants, monkeypatch, ta):
    """An "nt" ("tt") product with linalg.NT_COPY_MIN_M rows or more and N whole 256-column
    tiles (NT_COPY_MIN_N or more) runs as "nn" ("tn") on a contiguous copy of B^T (aligned,
    ragged rows, a linear layer with its bias); fewer rows, or N not whole 256s, read B in
    place. Against float64."""
    from grilly.array import dense
    from grilly.backends.vulkan import linalg

    monkeypatch.setattr(linalg, "NT_COPY_MIN_M", 384)
    monkeypatch.setattr(linalg, "NT_COPY_MIN_N", 512)
    monkeypatch.setattr(linalg, "WIDE_MIN_TILES", 1)
    rng = np.random.default_rng(29)
    t = "t" if ta else "n"
    for m, n, k, copied in [(384, 512, 64, True), (1000, 512, 80, True), (256, 512, 64, False),
                            (512, 384, 64, False)]:
        used = _check_product(variants, rng, ta, True, None, m, n, k)
        assert all(v.startswith(f"sgemm_{t}{'n' if copied else 't'}_") for v in used), used
    x = rng.standard_normal((512, 64)).astype(np.float32)
    w = rng.standard_normal((512, 64)).astype(np.float32)
    bias = rng.standard_normal(512).astype(np.float32)
    variants.clear()
    got = np.asarray(dense.linear(*(gp.asarray(v, device=VK[0]) for v in (x, w, bias))))
    assert variants == ["sgemm_nn_w256_float32"]   # the bias still in the epilogue
    np.testing.assert_allclose(got, x.astype(np.float64) @ w.T + bias, rtol=1e-5, atol=1e-4)


def test_a_large_product_is_submitted_at_once(monkeypatch):
    """A product of linalg.SUBMIT_FLOPS or more is submitted as soon as it is recorded (the GPU
    starts on it while the host records what follows); smaller ones wait for the batch."""
    from grilly.backends.vulkan import linalg

    dev = VK[0]
    rng = np.random.default_rng(23)
    a = rng.standard_normal((256, 64)).astype(np.float32)
    b = rng.standard_normal((64, 128)).astype(np.float32)
    ga, gb = gp.asarray(a, device=dev), gp.asarray(b, device=dev)
    for limit, more in ((2 * 256 * 128 * 64, 1), (2 * 256 * 128 * 64 + 1, 0)):
        monkeypatch.setattr(linalg, "SUBMIT_FLOPS", limit)
        gp.synchronize(dev)
        before = gp.device_stats(dev)["submits"]
        c = ga @ gb
        assert gp.device_stats(dev)["submits"] - before == more
        np.testing.assert_allclose(np.asarray(c), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


def test_sgemm_64x64_tiles_where_128_would_be_half_empty():
    from grilly.backends.vulkan import linalg

    assert linalg.use_s64(256, 256, 64, 256)        # attention's p v: half-empty 128 tiles
    assert linalg.use_s64(1, 65536, 64, 576)        # a narrow layer over many rows
    assert not linalg.use_s64(1, 4096, 4096, 4096)  # full tiles
    assert not linalg.use_s64(256, 256, 256, 64)
    assert not linalg.use_s64(1, 128, 64, 8192)     # few tiles: the K-split paths


@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("ta", [False, True])
def test_ragged_rows_run_on_the_aligned_shader(variants, ta, with_bias):
    """(1000, 2048) x (2048, 512) as a linear layer, and (1000, 2048) x (2048, 512) with A a
    transposed view: only M is ragged, so the aligned shader runs every row (sgemm.comp's
    CLAMP_M: loads of A past its last row clamped, stores past M skipped) in one dispatch,
    the bias in its epilogue; against float64."""
    from grilly.array import dense

    rng = np.random.default_rng(17)
    x = rng.standard_normal((1000, 2048)).astype(np.float32)
    w = rng.standard_normal((512, 2048)).astype(np.float32)
    b = rng.standard_normal(512).astype(np.float32) if with_bias else None
    if ta:   # A^T stored (2048, 1000): column loading, clamped to its last quad of rows
        xa = gp.asarray(np.ascontiguousarray(x.T), device=VK[0])
        wa = gp.asarray(np.ascontiguousarray(w.T), device=VK[0])
        variants.clear()
        got = np.asarray(gp.matmul(gp.matrix_transpose(xa), wa)
                         + (0 if b is None else gp.asarray(b, device=VK[0])))
        assert variants[0] == "sgemm_tn_float32", variants
    else:
        args = [gp.asarray(v, device=VK[0]) for v in (x, w)] + [
            None if b is None else gp.asarray(b, device=VK[0])]
        variants.clear()
        got = np.asarray(dense.linear(*args))
        assert variants == ["sgemm_nt_float32"], variants
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + (0 if b is None else b)
    scale = np.abs(x).astype(np.float64) @ np.abs(w.T).astype(np.float64) + (
        0 if b is None else np.abs(b))
    assert np.all(np.abs(got - ref) <= 4 * 2048 * 2.0**-24 * scale)


@pytest.mark.parametrize("m,n,k", [(128, 128, 64), (200, 64, 40), (130, 132, 12), (8, 8, 8)])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul4_reads_heads_in_place_and_merges_them(variants, m, n, k, tb):
    """Two batch levels read in place (the k part of a packed (N, L, 3, H, E) projection, per
    head) and the output written with merged heads ((N, L, H, n) memory as an (N, H, L, n)
    view): one sgemm dispatch, against float64; too small a product for the shader's tiles
    records nothing and says so."""
    from grilly.array import core
    from grilly.backends.vulkan import kernels, linalg

    rng = np.random.default_rng(19)
    nb, h = 4, 4
    packed = rng.standard_normal((nb, m, 3, h, k)).astype(np.float32)
    other = rng.standard_normal((nb, h, n, k) if tb else (nb, h, k, n)).astype(np.float32)
    gq = gp.asarray(packed, device=VK[0])._buf
    st = gq.strides
    a = kernels._view(gq, gq.offset + h * k, (nb, h, m, k), (st[0], st[3], st[1], 1))
    gb = gp.asarray(other, device=VK[0])._buf
    b = kernels.permute(gb, (0, 1, 3, 2)) if tb else gb
    out = kernels.new_buffer(gq.ctx, (nb, m, h, n), gq.dtype)
    variants.clear()
    done = linalg.matmul4_into(kernels.permute(out, (0, 2, 1, 3)), a, b)
    if m == 8:
        assert not done and not variants
        return
    assert done and len(variants) == 1 and variants[0].startswith("sgemm_"), variants
    av = packed[:, :, 1].transpose(0, 2, 1, 3).astype(np.float64)
    bv = (other.transpose(0, 1, 3, 2) if tb else other).astype(np.float64)
    ref = av @ bv
    got = np.asarray(core.wrap(out, gp.float32, VK[0])).transpose(0, 2, 1, 3)
    scale = np.abs(av) @ np.abs(bv)
    assert np.all(np.abs(got - ref) <= 4 * k * 2.0**-24 * scale)


@pytest.mark.parametrize("n,c,o,hw,stride,with_bias", [
    (32, 16, 32, 8, 1, True),     # 64x64 edge tiles, the bias in the epilogue (per channel)
    (4, 32, 64, 8, 1, True),      # 64x64 aligned tiles
    (16, 8, 128, 8, 2, False),    # strided, no bias
    (2, 3, 8, 6, 1, True),        # too small (and Ho*Wo = 36): the generic tiled shader
    (8, 3, 64, 9, 1, True),       # 3x3x3 windows (27 rows) and 81 pixels: the generic shader
    (8, 3, 70, 9, 2, False),      # ragged channels over two tile rows, strided, no bias
])
def test_vulkan_conv2d_writes_nchw_from_one_gemm(variants, n, c, o, hw, stride, with_bias):
    """Vulkan's conv2d kernel: im2col, then one sgemm over the images (the weight shared)
    writing (N, O, Ho, Wo) with the bias added in its epilogue; against float64."""
    from grilly.array import conv as C

    rng = np.random.default_rng(n + c)
    x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
    w = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32) if with_bias else None
    ho = (hw + 2 - 3) // stride + 1
    args = [gp.asarray(x, device=VK[0]), gp.asarray(w, device=VK[0]),
            None if b is None else gp.asarray(b, device=VK[0])]
    variants.clear()
    before = gp.device_stats(VK[0])["dispatches"]
    got = C.conv2d(*args, (stride, stride), (1, 1), (1, 1, 1, 1), 1, (ho, ho))
    count = gp.device_stats(VK[0])["dispatches"] - before
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((n, o, ho, ho))
    for i in range(3):
        for j in range(3):
            win = xp[:, :, i:i + stride * (ho - 1) + 1:stride, j:j + stride * (ho - 1) + 1:stride]
            ref += np.einsum("nchw,oc->nohw", win, w[:, :, i, j].astype(np.float64))
    ref += 0 if b is None else b[None, :, None, None]
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-4, atol=1e-4)
    if n * o >= 128 and c * 9 % 4 == 0 and ho * ho % 4 == 0:
        # im2col (its windows in the weight's own order: no weight copy), the GEMM: no layout
        # or bias pass
        assert len(variants) == 1 and variants[0].startswith("sgemm_") and count == 2, variants
    else:
        # the generic tiled shader, batched over the images the same way: NCHW and the bias
        # written by the product itself
        assert variants == ["mm_tiled_float32"] and count == 2, variants
