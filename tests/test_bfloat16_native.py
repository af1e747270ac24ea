"""bfloat16 computed on its own bits by the Vulkan backend (Backend.native_bfloat16: products,
convolutions, max pooling, ReLU's gradient, attention, the dropout multiplier): float32
registers, each result rounded once, as the CPU backend's composition (widen, the float32 op,
round) computes them. Checked against that composition (the cpu device) and float64, and that the
bfloat16 kernels ran (not float32 ones on widened copies)."""
import ml_dtypes
import numpy as np
import pytest

import grilly as gp
import grilly.nn.functional as F
from grilly import amp, nn

VK = [d for d in gp.devices() if str(d).startswith("vulkan")]
pytestmark = pytest.mark.skipif(not VK, reason="no Vulkan device")
BF = ml_dtypes.bfloat16


@pytest.fixture
def kernels_run(monkeypatch):
    """The shader variants (names without specialization) the Vulkan recorder dispatches."""
    from grilly.backends.vulkan import recorder

    seen = []
    real = recorder.Recorder.dispatch_allocs

    def spy(self, pipeline, *a, **k):
        names = {p: v for (v, _), p in self.ctx.pipelines.items()}
        seen.append(names.get(pipeline, "?"))
        return real(self, pipeline, *a, **k)

    monkeypatch.setattr(recorder.Recorder, "dispatch_allocs", spy)
    return seen


def _bf(rng, shape, scale=1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(BF)


def _np(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def _close_bf16(got, want, ulps: float = 1.0) -> None:
    """``got`` within ``ulps`` bfloat16 ulps (2^-7 relative) of ``want`` (both bfloat16 results of
    float32 arithmetic: they differ where float32 sums in another order round apart), or, where
    a sum cancels, within a bfloat16 rounding of the largest result (a sum of rounded terms)."""
    g, w = _np(got), _np(want)
    assert g.shape == w.shape
    tol = ulps * 2.0**-7 * np.maximum(np.abs(w), np.abs(g)) + 2.0**-8 * np.abs(w).max()
    bad = np.abs(g - w) > tol
    assert not bad.any(), (np.abs(g - w)[bad].max(), int(bad.sum()))


def test_conv_pool_relu_match_the_composition(kernels_run):
    """conv2d (+bias), ReLU, max_pool2d forward and backward on bfloat16 arrays: Vulkan's kernels
    against the cpu device's float32 composition, and the convolution against float64."""
    rng = np.random.default_rng(0)
    x, w, b = _bf(rng, (2, 3, 9, 10)), _bf(rng, (4, 3, 3, 3), 0.3), _bf(rng, (4,))
    g = _bf(rng, (2, 4, 4, 5))
    res = {}
    for dev in ("cpu", VK[0]):
        xs = [gp.asarray(a, device=dev) for a in (x, w, b)]
        for a in xs:
            a.requires_grad_(True)
        y = F.max_pool2d(F.relu(F.conv2d(xs[0], xs[1], xs[2], padding=1)), 2)
        gp.sum(y * gp.asarray(g, device=dev)).backward()
        assert y.dtype == gp.bfloat16 and all(a.grad.dtype == gp.bfloat16 for a in xs)
        res[str(dev)] = [y] + [a.grad for a in xs]
        if dev == "cpu":
            kernels_run.clear()
    vk = res[str(VK[0])]
    for got, want in zip(vk, res["cpu"]):
        _close_bf16(got, want, 2.0)
    ref = np.zeros((2, 4, 9, 10))
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    for i in range(3):
        for j in range(3):
            ref += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 9, j:j + 10],
                             w[:, :, i, j].astype(np.float64))
    ref = np.maximum(ref + b.astype(np.float64)[None, :, None, None], 0)
    ref = ref[:, :, :8, :10].reshape(2, 4, 4, 2, 5, 2).max(axis=(3, 5))
    _close_bf16(vk[0], ref, 2.0)
    ran = set(kernels_run)
    assert {"conv_bfloat16", "pool_bfloat16", "ew_bfloat16"} <= ran, ran
    # (the loss's sum composes in float32: casts there, none in the layers)
    assert not {"conv_float32", "pool_float32", "mm_float32", "mm_tiled_float32"} & ran, ran


def test_linear_and_master_gradients_under_autocast(kernels_run):
    """Linear and Conv2d under autocast(bfloat16): bfloat16 activations, float32 weight and bias
    gradients (the masters), on Vulkan from bfloat16 products and float32 sums, against the cpu
    device's composition."""
    rng = np.random.default_rng(1)
    xin = rng.standard_normal((4, 3, 8, 8)).astype(np.float32)
    out = {}
    for dev in ("cpu", VK[0]):
        nn.manual_seed(0)
        m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 16, 10)).to(dev)
        kernels_run.clear()
        with amp.autocast(dtype=gp.bfloat16):
            y = m(gp.asarray(xin, device=dev))
        assert y.dtype == gp.bfloat16
        gp.sum(gp.astype(y, gp.float32) ** 2).backward()
        grads = [p.grad for p in m.parameters()]
        assert all(gr.dtype == gp.float32 for gr in grads)
        out[str(dev)] = (y, grads, set(kernels_run))
    (yc, gc, _), (yv, gv, ran) = out["cpu"], out[str(VK[0])]
    _close_bf16(yv, yc, 2.0)
    for a, b in zip(gv, gc):
        a, b = _np(a), _np(b)
        assert np.allclose(a, b, rtol=3e-2, atol=3e-2 * np.abs(b).max()), np.abs(a - b).max()
    assert {"conv_bfloat16", "pool_bfloat16"} <= ran, ran
    assert any(v.startswith("red_bfloat16") for v in ran), ran   # (bias sums into float32)
    assert not {"conv_float32", "pool_float32"} & ran, ran


@pytest.mark.parametrize("causal", [False, True])
def test_attention_forward_backward(kernels_run, causal):
    """Attention on bfloat16 q, k, v (attn_bfloat16): the output and gradients against float64
    (bfloat16 rounding of each result), lse float32 on both devices."""
    rng = np.random.default_rng(2)
    q, k, v = (_bf(rng, (2, 2, 6, 8)) for _ in range(3))
    g = _bf(rng, (2, 2, 6, 8))
    from grilly.array import attention as att

    got = {}
    for dev in ("cpu", VK[0]):
        arrs = [gp.asarray(a, device=dev) for a in (q, k, v, g)]
        kernels_run.clear()
        o, lse = att.attention(*arrs[:3], causal=causal, scale=0.35)
        assert o.dtype == gp.bfloat16 and lse.dtype == gp.float32
        grads = att.attention_backward(arrs[3], *arrs[:3], None, None, o, lse, causal=causal,
                                       scale=0.35)
        got[str(dev)] = (o, lse, grads, set(kernels_run))
    Q, K, V = (a.astype(np.float64) for a in (q, k, v))
    s = Q @ K.transpose(0, 1, 3, 2) * 0.35
    if causal:
        s = np.where(np.tril(np.ones((6, 6), bool)), s, -np.inf)
    lse_ref = np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1)) + s.max(-1)
    p = np.exp(s - lse_ref[..., None])
    for dev in ("cpu", str(VK[0])):
        o, lse, grads, _ = got[dev]
        assert np.allclose(_np(lse), lse_ref, rtol=1e-5, atol=1e-5)
        _close_bf16(o, p @ V, 4.0)
    o_c, _, gr_c, _ = got["cpu"]
    o_v, _, gr_v, ran = got[str(VK[0])]
    for a, b in zip(gr_v, gr_c):
        a, b = _np(a), _np(b)
        assert np.allclose(a, b, rtol=2e-2, atol=2e-2 * np.abs(b).max())
    assert "attn_bfloat16" in ran and "attn_float32" not in ran, ran


def test_dropout_multiplier_bits(kernels_run):
    """bfloat16 dropout: the same bits on both devices and as the float32 multiplier rounded,
    drawn in one kernel on Vulkan."""
    from grilly.array import random_bits as rb

    for dev in ("cpu", VK[0]):
        a = rb.philox_dropout(1001, 5, 11, 0.25, 1 / 0.75, gp.bfloat16, dev)
        b = rb.philox_dropout(1001, 5, 11, 0.25, 1 / 0.75, gp.float32, dev)
        assert a.dtype == gp.bfloat16
        assert (np.asarray(a).view(np.uint16)
                == np.asarray(b).astype(BF).view(np.uint16)).all()
    kernels_run.clear()
    gp.random.seed(4) if hasattr(gp.random, "seed") else None
    x = gp.ones((8, 64), dtype=gp.bfloat16, device=VK[0])
    y = F.dropout(x, 0.5)
    assert y.dtype == gp.bfloat16
    assert set(np.unique(_np(y))) <= {0.0, 2.0}
    assert "philox_dropout_bfloat16" in kernels_run, kernels_run


def test_sums_into_float32_and_bfloat16():
    """Vulkan's bfloat16 reductions: into float32 (red_bfloat16_f32: a master's bias gradient)
    as float32 sums of the bits, and into bfloat16 summed in float32 and rounded once."""
    rng = np.random.default_rng(3)
    from grilly.backends.vulkan import reductions

    for shape, axes in [((3, 4000), (1,)), ((64, 37), (0,)), ((5, 6, 7), (0, 2))]:
        a = _bf(rng, shape)
        buf = gp.asarray(a, device=VK[0])._buf
        ref = a.astype(np.float64).sum(axis=axes)
        s32 = np.asarray(_wrap(reductions.KERNELS["sum"](buf, axes, False, gp.float32)))
        assert s32.dtype == np.float32
        assert np.allclose(s32, ref, rtol=1e-5, atol=1e-4)
        s16 = _wrap(reductions.KERNELS["sum"](buf, axes, False, gp.bfloat16))
        assert np.array_equal(np.asarray(s16).view(np.uint16),
                              ref.astype(np.float32).astype(BF).view(np.uint16)) or \
            np.allclose(_np(s16), ref, rtol=2.0**-7, atol=1e-3)


def _wrap(buf):
    from grilly.array import core

    return core.wrap(buf, buf.dtype, VK[0])


def test_joins_and_splits_move_bits(kernels_run):
    """concat, stack and unstack of bfloat16 arrays move the bits (no float32 round trip, the
    same bits back); mixed with float32 they promote, with an integer array they raise,
    naming the op, as before."""
    rng = np.random.default_rng(5)
    a, b = _bf(rng, (2, 3)), _bf(rng, (2, 3))
    for dev in ("cpu", VK[0]):
        ga, gb = gp.asarray(a, device=dev), gp.asarray(b, device=dev)
        kernels_run.clear()
        c, s = gp.concat([ga, gb[:, ::-1]], axis=1), gp.stack([ga, gb], axis=0)
        parts = gp.unstack(s, axis=0)
        assert c.dtype == s.dtype == parts[0].dtype == gp.bfloat16
        assert np.array_equal(np.asarray(c).view(np.uint16),
                              np.concatenate([a, b[:, ::-1]], axis=1).view(np.uint16))
        assert np.array_equal(np.asarray(parts[1]).view(np.uint16), b.view(np.uint16))
        assert not any(v.startswith("cast_bfloat16_float32") for v in kernels_run), kernels_run
        f = gp.asarray(np.ones((2, 3), np.float32), device=dev)
        assert gp.stack([ga, f]).dtype == gp.float32 and gp.concat([ga, f]).dtype == gp.float32
        with pytest.raises(TypeError, match="stack: no type promotion between bfloat16 and int32"):
            gp.stack([ga, gp.asarray(np.ones((2, 3), np.int32), device=dev)])
