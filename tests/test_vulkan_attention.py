"""The Vulkan attention kernels (grilly/backends/vulkan/attention.py, shaders/nn/attention.comp)
against a float64 numpy reference, beyond tests/test_attention_kernels.py: head dims across the
shader's lane layouts (1 to 256; past it the kernel's error and the array layer's composition),
lengths that are not multiples of the tiles and span many tiles, causal masks with L > S and
L < S, a bias broadcast along each axis, dropout, fully masked rows and empty key sets, strided
views (read in place or copied), float64, more work units than workgroups, and the dispatch
counts (1 forward, 3 backward). Every test runs on both float32 paths: the fused kernels and the
composition around materialized scores (batched GEMMs and the row passes OP 4-6), which
attention.py otherwise picks by size."""
import numpy as np
import pytest

import grilly as gp
from grilly.array import attention as att
from grilly.backends.vulkan import attention as vk_att

from test_attention_kernels import (assert_attention, assert_close, assert_f16, np_attention,
                                    np_attention_backward, random_inputs)

VK = [d for d in gp.devices() if str(d).startswith("vulkan")]
pytestmark = pytest.mark.skipif(not VK, reason="no Vulkan device")


@pytest.fixture(params=[str(d) for d in VK] or ["none"])
def vdev(request):
    return gp.backends.registry.device(request.param)


@pytest.fixture(autouse=True, params=["fused", "composed"])
def path(request, monkeypatch):
    monkeypatch.setattr(vk_att, "COMPOSE_MIN", 1 if request.param == "composed" else 1 << 62)
    return request.param


def _data(shape_nhlse, dtype, seed=0, bias_shape=None, dropout=False):
    return random_inputs(shape_nhlse, dtype, seed, bias_shape, dropout, p=0.25)


def _check(dev, q, k, v, bias, drop, g, causal, scale=None, on=None):
    """Forward and backward of the kernel on ``dev`` against numpy; ``on`` overrides the device
    arrays (views) standing for q, k, v, bias, drop, g."""
    scale = 1.0 / np.sqrt(max(q.shape[-1], 1)) if scale is None else scale
    if on is None:
        on = [None if a is None else gp.asarray(a, device=dev) for a in (q, k, v, bias, drop, g)]
    out, lse = att.attention(*on[:5], causal=causal, scale=scale)
    grads = att.attention_backward(on[5], *on[:5], out, lse, causal=causal, scale=scale)
    assert_attention(out, lse, grads, q, k, v, bias, drop, g, causal, scale)


# (E, Ev): every lane layout (1, 2, 4 and 8 lanes a row; float64 holds half as many features a
# lane), partial quads, E != Ev
HEADS = [(1, 1), (3, 3), (3, 5), (32, 32), (64, 64), (64, 16), (100, 100), (128, 128), (8, 200),
         (256, 256)]


@pytest.mark.parametrize("e, ev", HEADS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_head_dims(vdev, e, ev, dtype):
    # L and S off every tile multiple; S over several key tiles
    _check(vdev, *_data((1, 2, 37, 75, e, ev), dtype), causal=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_many_tiles(vdev, dtype):
    # 600 keys: 19 tiles of 32; 300 queries: two row blocks (plus a partial one at 64 features)
    _check(vdev, *_data((2, 2, 300, 600, 64, 64), dtype, bias_shape=(2, 1, 1, 600)),
           causal=False)


@pytest.mark.parametrize("lq, sk", [(200, 70), (70, 200), (129, 129), (1, 50), (50, 1)])
@pytest.mark.parametrize("e", [16, 64, 128])
def test_causal(vdev, lq, sk, e):
    _check(vdev, *_data((2, 2, lq, sk, e, e), np.float32, seed=lq + sk), causal=True)


@pytest.mark.parametrize("bshape", [(2, 1, 1, 40), (1, 3, 1, 40), (1, 1, 33, 40), (2, 3, 33, 1),
                                    (1, 1, 1, 1), (2, 3, 33, 40), (2, 1, 33, 1)])
def test_bias_broadcast(vdev, bshape):
    _check(vdev, *_data((2, 3, 33, 40, 24, 24), np.float32, bias_shape=bshape), causal=False)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout(vdev, causal, dtype):
    _check(vdev, *_data((2, 2, 45, 67, 32, 48), dtype, bias_shape=(1, 1, 45, 67), dropout=True),
           causal=causal)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fully_masked_rows(vdev, dtype):
    q, k, v, _, _, g = _data((2, 2, 40, 50, 64, 64), dtype)
    bias = np.zeros((2, 1, 40, 50), dtype)
    bias[0, 0, 5] = -np.inf           # one row of batch 0
    bias[1, 0, :, :] = -np.inf        # all of batch 1
    bias[1, 0, 7, 3] = 0.0            # but one row with one key
    g[0, :, 5] = np.nan               # a masked row's gradient (out is NaN there) takes no part
    on = [gp.asarray(a, device=vdev) for a in (q, k, v, bias, g)]
    out, lse = att.attention(*on[:4], causal=False, scale=0.125)
    o, ls = np.asarray(out), np.asarray(lse)
    dead = np.zeros((2, 2, 40), bool)
    dead[0, :, 5] = True
    dead[1] = True
    dead[1, :, 7] = False
    assert np.isnan(o[dead]).all() and not np.isnan(o[~dead]).any()
    assert (ls[dead] == -np.inf).all() and np.isfinite(ls[~dead]).all()
    want_out, want_lse = np_attention(q, k, v, bias, None, False, 0.125)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    assert_close(o[~dead], want_out[~dead], rtol=tol, atol=tol)
    grads = att.attention_backward(on[4], *on[:4], None, out, lse, causal=False, scale=0.125)
    for a, w in zip(grads, np_attention_backward(g, q, k, v, bias, None, False, 0.125)):
        assert_close(a, w, rtol=tol * 5, atol=tol * 5 * max(1.0, float(np.abs(w).max())))
    assert (np.asarray(grads[0])[dead] == 0).all()


def test_no_keys(vdev):
    q, k, v, _, _, g = _data((1, 2, 5, 0, 8, 4), np.float32)
    on = [gp.asarray(a, device=vdev) for a in (q, k, v, g)]
    out, lse = att.attention(*on[:3], scale=0.5)
    assert np.isnan(np.asarray(out)).all() and (np.asarray(lse) == -np.inf).all()
    dq, dk, dv = att.attention_backward(on[3], *on[:3], None, None, out, lse, scale=0.5)
    assert (np.asarray(dq) == 0).all() and dk.shape == (1, 2, 0, 8) and dv.shape == (1, 2, 0, 4)


def test_no_queries(vdev):
    q, k, v, _, _, g = _data((1, 2, 0, 6, 8, 4), np.float32)
    on = [gp.asarray(a, device=vdev) for a in (q, k, v, g)]
    out, lse = att.attention(*on[:3], causal=True, scale=0.5)
    assert out.shape == (1, 2, 0, 4) and lse.shape == (1, 2, 0)
    dq, dk, dv = att.attention_backward(on[3], *on[:3], None, None, out, lse, causal=True,
                                        scale=0.5)
    assert dq.shape == (1, 2, 0, 8)
    assert (np.asarray(dk) == 0).all() and (np.asarray(dv) == 0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_views(vdev, dtype):
    # (qkv, N, L, H, E) projections permuted to (N, H, L, E): read in place; a feature-strided
    # v, a transposed bias, a permuted drop and a broadcast g: copied or read through strides
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 2, 45, 3, 32)).astype(dtype)
    xa = gp.permute_dims(gp.asarray(x, device=vdev), (0, 1, 3, 2, 4))
    xp = x.transpose(0, 1, 3, 2, 4)
    vw = rng.standard_normal((2, 3, 45, 40)).astype(dtype)
    bt = rng.standard_normal((1, 3, 45, 45)).astype(dtype)
    dt = ((rng.random((2, 3, 45, 45)) >= 0.2) / 0.8).astype(dtype)
    g1 = rng.standard_normal((1, 1, 1, 20)).astype(dtype)
    on = [xa[0], xa[1], gp.asarray(vw, device=vdev)[..., ::2],
          gp.matrix_transpose(gp.asarray(bt, device=vdev)),
          gp.permute_dims(gp.asarray(dt.transpose(1, 0, 2, 3), device=vdev), (1, 0, 2, 3)),
          gp.broadcast_to(gp.asarray(g1, device=vdev), (2, 3, 45, 20))]
    g = np.broadcast_to(g1, (2, 3, 45, 20))
    _check(vdev, xp[0], xp[1], vw[..., ::2], np.swapaxes(bt, -1, -2), dt, g, causal=True,
           on=on)


# dispatches per path: forward, backward, backward without dQ (and dK)
COUNTS = {
    "fused": (1, 3, 2),      # forward; D and the masks, dQ, dK with dV; no dQ dispatch
    # q k^T, the probabilities, p v; D and the masks, g's masked rows (a bias), q k^T, g v^T,
    # dS, and dQ, dK, dV; no dQ or dK product
    "composed": (3, 8, 6),
}


def test_dispatch_counts(vdev, path):
    n_fwd, n_bwd, n_dv = COUNTS[path]
    q, k, v, bias, drop, g = _data((2, 3, 70, 90, 64, 64), np.float32, bias_shape=(2, 1, 1, 90),
                                   dropout=True)
    on = [gp.asarray(a, device=vdev) for a in (q, k, v, bias, drop, g)]
    before = gp.device_stats(vdev)["dispatches"]
    out, lse = att.attention(*on[:5], causal=True, scale=0.125)
    fwd = gp.device_stats(vdev)["dispatches"]
    assert fwd - before == n_fwd
    att.attention_backward(on[5], *on[:5], out, lse, causal=True, scale=0.125)
    bwd = gp.device_stats(vdev)["dispatches"]
    assert bwd - fwd == n_bwd
    att.attention_backward(on[5], *on[:5], out, lse, causal=True, scale=0.125,
                           need=(False, False, True))
    assert gp.device_stats(vdev)["dispatches"] - bwd == n_dv


def test_composed_reads_heads_in_place(vdev, path):
    # q, k, v as the heads of one packed (N, L, 3, H, E) projection (MultiheadAttention's) are
    # read in place, and out comes back with its heads merged ((N, L, H, E) memory): the
    # forward is the three passes and nothing else, the backward copies nothing either
    if path == "fused":
        pytest.skip("the composition's layouts")
    rng = np.random.default_rng(23)
    n, h, lq, e = 2, 4, 256, 64
    x = rng.standard_normal((n, lq, 3, h, e)).astype(np.float32)
    g = rng.standard_normal((n, lq, h, e)).astype(np.float32)
    xa = gp.asarray(x, device=vdev)
    qkv = [gp.permute_dims(xa[:, :, i], (0, 2, 1, 3)) for i in range(3)]
    ga = gp.permute_dims(gp.asarray(g, device=vdev), (0, 2, 1, 3))
    before = gp.device_stats(vdev)["dispatches"]
    out, lse = att.attention(*qkv, causal=True, scale=0.125)
    fwd = gp.device_stats(vdev)["dispatches"]
    assert fwd - before == 3
    assert out._buf.strides == (lq * h * e, e, h * e, 1)
    grads = att.attention_backward(ga, *qkv, None, None, out, lse, causal=True, scale=0.125)
    assert gp.device_stats(vdev)["dispatches"] - fwd == 7   # D, 2 products, dS, 3 products
    p = [np.ascontiguousarray(x[:, :, i].transpose(0, 2, 1, 3)) for i in range(3)]
    assert_attention(out, lse, grads, *p, None, None, g.transpose(0, 2, 1, 3), True, 0.125)


def test_compose_by_size(vdev, monkeypatch):
    # the composition's score memory is bounded: past COMPOSE_MAX the fused kernel runs
    monkeypatch.setattr(vk_att, "COMPOSE_MIN", 1)
    monkeypatch.setattr(vk_att, "COMPOSE_MAX", 2 * 3 * 70 * 90 - 1)
    on = [gp.asarray(a, device=vdev) for a in _data((2, 3, 70, 90, 64, 64), np.float32)[:3]]
    before = gp.device_stats(vdev)["dispatches"]
    att.attention(*on, scale=0.125)
    assert gp.device_stats(vdev)["dispatches"] - before == 1


@pytest.mark.parametrize("causal", [False, True])
def test_many_work_units(vdev, monkeypatch, causal):
    # more (n, h, row block) units than workgroups (65535 at most; 3 here): the grid strides
    q, k, v, bias, drop, g = _data((3, 4, 300, 270, 64, 32), np.float32, bias_shape=(3, 1, 1, 270),
                                   dropout=True)
    on = [gp.asarray(a, device=vdev) for a in (q, k, v, bias, drop, g)]
    monkeypatch.setattr(on[0]._buf.ctx.recorder, "max_groups", 3)
    _check(vdev, q, k, v, bias, drop, g, causal=causal, on=on)


@pytest.mark.parametrize("e, ev", [(257, 8), (8, 300)])
def test_head_dim_limit(vdev, e, ev):
    # the kernel names its limit; the array layer composes above its max_features
    q, k, v, _, _, g = _data((1, 2, 3, 5, e, ev), np.float32)
    on = [gp.asarray(a, device=vdev) for a in (q, k, v, g)]
    with pytest.raises(NotImplementedError, match=f"at most {vk_att.MAX_HEAD}"):
        vk_att.attention(on[0]._buf, on[1]._buf, on[2]._buf, None, None, False, 1.0, 128)
    assert vk_att.attention.max_features == vk_att.MAX_HEAD
    out, lse = att.attention(*on[:3], scale=0.1)
    want, want_lse = np_attention(q, k, v, None, None, False, 0.1)
    assert_close(out, want, rtol=2e-5, atol=2e-5)
    grads = att.attention_backward(on[3], *on[:3], None, None, out, lse, scale=0.1)
    for a, w in zip(grads, np_attention_backward(g, q, k, v, None, None, False, 0.1)):
        assert_close(a, w, rtol=1e-4, atol=1e-5)


def test_other_dtypes(vdev):
    # float16 and bfloat16 buffers go to the kernel as they are (it declares takes_float16 and
    # takes_bfloat16), lse float32; other dtypes it names as not taken
    assert vk_att.attention.takes_float16 and vk_att.attention_backward.takes_float16
    assert vk_att.attention.takes_bfloat16 and vk_att.attention_backward.takes_bfloat16
    for dt in (gp.float16, gp.bfloat16):
        q = gp.ones((1, 1, 2, 4), dtype=dt, device=vdev)
        out, lse = vk_att.attention(q._buf, q._buf, q._buf, None, None, False, 1.0, 128)
        assert out.dtype is dt and lse.dtype is gp.float32
        out, lse = att.attention(q, q, q, scale=1.0)
        assert out.dtype == dt and lse.dtype == gp.float32
    i = gp.ones((1, 1, 2, 4), dtype=gp.int32, device=vdev)
    with pytest.raises(NotImplementedError, match="attention: dtype int32"):
        vk_att.attention(i._buf, i._buf, i._buf, None, None, False, 1.0, 128)


# ---- float16 storage (autocast's attention): float16 q, k, v, g, bias, drop, out, dq, dk, dv;
# float32 arithmetic and lse. The fused path runs the attn_float16 variant; the composed path
# (its size range) the float32 composition on float32 copies, lse kept float32.

def _check16(dev, q, k, v, bias, drop, g, causal, scale=None):
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    on = [None if a is None else gp.asarray(a, device=dev) for a in (q, k, v, bias, drop, g)]
    out, lse = att.attention(*on[:5], causal=causal, scale=scale)
    grads = att.attention_backward(on[5], *on[:5], out, lse, causal=causal, scale=scale)
    want_out, want_lse = np_attention(q, k, v, bias, drop, causal, scale)
    assert_f16(out, want_out)
    # lse float32 to float32's accuracy (rounded to float16 it would be off by up to 5e-4)
    assert lse.dtype == gp.float32
    assert_close(lse, np.where(np.isnan(want_lse), -np.inf, want_lse), rtol=2e-6, atol=2e-6)
    # (D = rowsum(g out) from the float16 out the backward is given)
    want = np_attention_backward(g, q, k, v, bias, drop, causal, scale, out=np.asarray(out))
    for a, w in zip(grads, want):
        assert_f16(a, w)
    return out, lse, grads


# head dims 16 to 128, not all multiples of 4, E != Ev; L and S off every tile multiple
HEADS16 = [(16, 16), (30, 18), (64, 64), (66, 100), (128, 128), (127, 125)]


@pytest.mark.parametrize("e, ev", HEADS16)
def test_float16_head_dims(vdev, e, ev):
    _check16(vdev, *_data((1, 2, 37, 75, e, ev), np.float16), causal=False)


@pytest.mark.parametrize("lq, sk", [(45, 67), (70, 33)])
@pytest.mark.parametrize("causal", [False, True])
def test_float16_causal_bias_dropout(vdev, lq, sk, causal):
    q, k, v, bias, drop, g = _data((2, 2, lq, sk, 32, 48), np.float16, seed=lq,
                                   bias_shape=(2, 1, lq, sk), dropout=True)
    bias[0, 0, 5] = -np.inf   # a fully masked row: NaN out, lse -inf, no gradient
    out, lse, grads = _check16(vdev, q, k, v, bias, drop, g, causal)
    assert (np.asarray(lse)[0, :, 5] == -np.inf).all()
    assert (np.asarray(grads[0])[0, :, 5] == 0).all()


def test_float16_no_casts(vdev, path, monkeypatch):
    # fused: the float16 buffers go to the kernel and its results come back as they are: no
    # cast (nor copy) dispatch, and the dispatches of float32 (1 forward, 3 backward). composed:
    # today's widening (q, k, v, bias, drop and g, out to float32; out and the gradients back),
    # but lse is never rounded
    from grilly.backends.vulkan import kernels as vk_kernels
    casts = []
    real = vk_kernels._cast_into
    monkeypatch.setattr(vk_kernels, "_cast_into",
                        lambda dst, src, name: casts.append((src.dtype.name, dst.dtype.name))
                        or real(dst, src, name))
    q, k, v, bias, drop, g = _data((2, 3, 70, 90, 64, 64), np.float16, bias_shape=(2, 1, 1, 90),
                                   dropout=True)
    on = [gp.asarray(a, device=vdev) for a in (q, k, v, bias, drop, g)]
    n_fwd, n_bwd, _ = COUNTS[path]
    before = gp.device_stats(vdev)["dispatches"]
    out, lse = att.attention(*on[:5], causal=True, scale=0.125)
    fwd = gp.device_stats(vdev)["dispatches"]
    fwd_casts = list(casts)
    att.attention_backward(on[5], *on[:5], out, lse, causal=True, scale=0.125)
    bwd = gp.device_stats(vdev)["dispatches"]
    bwd_casts = casts[len(fwd_casts):]
    if path == "fused":
        assert casts == []
        assert (fwd - before, bwd - fwd) == (n_fwd, n_bwd)
    else:
        assert sorted(fwd_casts) == [("float16", "float32")] * 5 + [("float32", "float16")]
        assert sorted(bwd_casts) == [("float16", "float32")] * 7 + [("float32", "float16")] * 3
        assert (fwd - before, bwd - fwd) == (n_fwd + 6, n_bwd + 10)
    assert lse.dtype == gp.float32


def test_float16_lse_must_be_float32(vdev):
    q, k, v, g = (gp.asarray(a, device=vdev)
                  for a in _data((1, 2, 5, 6, 8, 8), np.float16) if a is not None)
    out, lse = att.attention(q, k, v, scale=0.5)
    lse16 = gp.astype(lse, gp.float16)
    with pytest.raises(ValueError, match="attention_backward: lse must be float32"):
        att.attention_backward(g, q, k, v, None, None, out, lse16, scale=0.5)
    with pytest.raises(TypeError, match="attention_backward: lse must be float32"):
        vk_att.attention_backward(g._buf, q._buf, k._buf, v._buf, None, None, out._buf,
                                  lse16._buf, False, 0.5, 128, (True, True, True))


def test_float16_head_dim_limit(vdev):
    # above the kernel's max_features float16 composes (in float16), lse still float32
    q, k, v, _, _, g = _data((1, 2, 3, 5, 260, 8), np.float16)
    on = [gp.asarray(a, device=vdev) for a in (q, k, v, g)]
    out, lse = att.attention(*on[:3], scale=0.05)
    assert out.dtype == gp.float16 and lse.dtype == gp.float32
    want, want_lse = np_attention(q, k, v, None, None, False, 0.05)
    assert_close(out, want, rtol=1e-2, atol=1e-2)
    assert_close(lse, want_lse, rtol=1e-2, atol=1e-2)
    grads = att.attention_backward(on[3], *on[:3], None, None, out, lse, scale=0.05)
    for a, w in zip(grads, np_attention_backward(g, q, k, v, None, None, False, 0.05)):
        assert a.dtype == gp.float16
        assert_close(a, w, rtol=2e-2, atol=2e-2 * max(1.0, float(np.abs(w).max())))


def test_float16_autocast_sdpa(vdev):
    # through nn.functional's autograd node under autocast: float32 leaves, the attention in
    # float16 (the kernel), gradients against float64 from the float16-rounded inputs
    F = gp.nn.functional
    rng = np.random.default_rng(3)
    x = [rng.standard_normal((2, 3, 20, 24)).astype(np.float32) for _ in range(3)]
    g = rng.standard_normal((2, 3, 20, 24)).astype(np.float16)
    leaves = [gp.asarray(a, device=vdev).requires_grad_() for a in x]
    with gp.autocast(dtype=gp.float16):
        out = F.scaled_dot_product_attention(*leaves, is_causal=True)
    assert out.dtype == gp.float16
    out.backward(gp.asarray(g, device=vdev))
    x16 = [a.astype(np.float16) for a in x]
    scale = 1.0 / np.sqrt(24)
    want_out, _ = np_attention(*x16, None, None, True, scale)
    assert_f16(out.detach(), want_out)
    want = np_attention_backward(g, *x16, None, None, True, scale, out=np.asarray(out.detach()))
    for leaf, w in zip(leaves, want):
        # the float16 gradient widened to the float32 leaf (exactly)
        assert leaf.grad.dtype == gp.float32
        assert_f16(np.asarray(leaf.grad).astype(np.float16), w)
