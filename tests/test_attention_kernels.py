"""grilly.array.attention (the fused attention kernels and their composition) against a float64
numpy reference: outputs, logsumexp and the three gradients, with additive masks broadcast over
heads, batch, rows or keys, causal masks (L < S and L > S), dropout multipliers, fully masked
rows, strided views, and argument errors."""
import numpy as np
import pytest

import grilly as gp
from grilly.array import attention as att
from grilly.array import core
from grilly.testing import assert_close as _assert_close


def assert_close(actual, expected, **kw):
    """grilly's assert_close against a float64 reference rounded to the array's dtype."""
    _assert_close(actual, np.asarray(expected).astype(np.asarray(actual).dtype), **kw)


def _sm(s):
    m = s.max(-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        p = np.exp(s - m)
        return p / p.sum(-1, keepdims=True), (m + np.log(p.sum(-1, keepdims=True)))[..., 0]


def assert_f16(got, want):
    """A float16 result against float64 from the same float16 inputs: within half a float16 ulp
    of the exact value (one rounding of a float32 result), plus float32 arithmetic's error
    (1e-6 of the largest value); NaN where the reference is NaN."""
    a = np.asarray(got)
    assert a.dtype == np.float16
    w = np.asarray(want, np.float64)
    assert a.shape == w.shape
    nan = np.isnan(w)
    assert (np.isnan(a) == nan).all()
    err = np.abs(a.astype(np.float64) - w)[~nan]
    top = float(np.abs(w[~nan]).max(initial=0.0))
    bound = 2.0**-11 * np.abs(w[~nan]) + 1e-6 * top + 2.0**-25
    assert (err <= bound).all(), f"max excess {float((err - bound).max())} (largest |value| {top})"


def np_scores(q, k, bias, causal, scale):
    s = np.einsum("nhle,nhse->nhls", q, k) * scale
    if bias is not None:
        s = s + bias
    if causal:
        L, S = s.shape[-2:]
        s = np.where(np.arange(S)[None, :] <= np.arange(L)[:, None], s, -np.inf)
    return s


def np_attention(q, k, v, bias, drop, causal, scale):
    """(out, lse) in float64."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    p, lse = _sm(np_scores(q, k, bias, causal, scale))
    return (p if drop is None else p * drop) @ v, lse


def np_attention_backward(g, q, k, v, bias, drop, causal, scale, out=None):
    """(dq, dk, dv) in float64; fully masked rows contribute nothing. ``out``: the forward's
    output as given to the backward (D = rowsum(g out) comes from it: a float16 out carries its
    rounding into dQ and dK), else computed in float64."""
    q, k, v, g = (np.asarray(x, np.float64) for x in (q, k, v, g))
    p, lse = _sm(np_scores(q, k, bias, causal, scale))
    live = np.isfinite(lse)[..., None]
    p, g = np.where(live, p, 0), np.where(live, g, 0)
    pd = p if drop is None else p * drop
    out = pd @ v if out is None else np.where(live, np.asarray(out, np.float64), 0)
    dp = g @ np.swapaxes(v, -1, -2)
    if drop is not None:
        dp = dp * drop
    ds = p * (dp - (g * out).sum(-1, keepdims=True))
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, np.swapaxes(pd, -1, -2) @ g


# name: (N, H, L, S, E, Ev), bias shape or None, causal, dropout
CASES = {
    "plain": ((2, 3, 7, 9, 4, 5), None, False, False),
    "one_head_square": ((1, 1, 5, 5, 3, 3), None, False, False),
    "key_padding": ((2, 3, 6, 8, 4, 4), (2, 1, 1, 8), False, False),
    "per_head_rows": ((2, 3, 6, 8, 4, 2), (1, 3, 6, 8), False, False),
    "one_key_column": ((2, 2, 5, 7, 3, 3), (1, 1, 5, 1), False, False),
    "causal_l_lt_s": ((2, 2, 5, 9, 4, 3), None, True, False),
    "causal_l_gt_s": ((2, 2, 9, 4, 4, 3), None, True, False),
    "dropout": ((2, 2, 6, 7, 4, 4), None, False, True),
    "dropout_mask_causal": ((1, 2, 7, 7, 3, 3), (1, 1, 7, 7), True, True),
    "blocks": ((1, 2, 70, 300, 8, 4), (1, 1, 1, 300), True, True),   # many kernel blocks
}


def random_inputs(nhlse, dtype, seed=0, bias_shape=None, dropout=False, p=0.3):
    """q, k, v, bias (None without bias_shape), a dropout multiplier dropping with probability
    ``p`` (None without dropout) and an output gradient g, for (N, H, L, S, E, Ev)."""
    n, h, lq, sk, e, ev = nhlse
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in
               ((n, h, lq, e), (n, h, sk, e), (n, h, sk, ev)))
    bias = None if bias_shape is None else rng.standard_normal(bias_shape).astype(dtype)
    drop = ((rng.random((n, h, lq, sk)) >= p) / (1 - p)).astype(dtype) if dropout else None
    g = rng.standard_normal((n, h, lq, ev)).astype(dtype)
    return q, k, v, bias, drop, g


def assert_attention(out, lse, grads, q, k, v, bias, drop, g, causal, scale):
    """A forward's (out, lse) and its backward's three gradients against float64 numpy."""
    want_out, want_lse = np_attention(q, k, v, bias, drop, causal, scale)
    want = np_attention_backward(g, q, k, v, bias, drop, causal, scale)
    tol = 2e-5 if q.dtype == np.float32 else 1e-12
    assert_close(out, want_out, rtol=tol, atol=tol)
    assert_close(lse, want_lse, rtol=tol, atol=tol)
    for a, w in zip(grads, want):
        assert_close(a, w, rtol=tol * 5, atol=tol * 5 * max(1.0, float(np.abs(w).max())))


def _inputs(case, dtype, seed=0):
    nhlse, bshape, causal, dropout = case
    return (*random_inputs(nhlse, dtype, seed, bshape, dropout), causal)


def _run(fn_fwd, fn_bwd, dev, case, dtype, scale=0.4):
    q, k, v, bias, drop, g, causal = _inputs(case, dtype)
    on = [None if a is None else gp.asarray(a, device=dev) for a in (q, k, v, bias, drop, g)]
    out, lse = fn_fwd(*on[:5], causal, scale)
    grads = fn_bwd(on[5], *on[:5], out, lse, causal, scale)
    assert_attention(out, lse, grads, q, k, v, bias, drop, g, causal, scale)


def _kernel(q, k, v, bias, drop, causal, scale):
    return att.attention(q, k, v, bias, drop, causal=causal, scale=scale, block=3)


def _kernel_bwd(g, q, k, v, bias, drop, out, lse, causal, scale):
    return att.attention_backward(g, q, k, v, bias, drop, out, lse, causal=causal, scale=scale,
                                  block=3)


def _composed(q, k, v, bias, drop, causal, scale):
    return core.composite(q.device, "attention")(q.device, q, k, v, bias, drop, causal, scale, 3)


def _composed_bwd(g, q, k, v, bias, drop, out, lse, causal, scale):
    return core.composite(q.device, "attention_backward")(
        q.device, g, q, k, v, bias, drop, out, lse, causal, scale, 3, (True, True, True))


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention(device, name, dtype):
    if dtype == np.float64 and not device.backend.supports_dtype(device, gp.float64):
        pytest.skip("no float64 on this device")
    _run(_kernel, _kernel_bwd, device, CASES[name], dtype)


@pytest.mark.parametrize("name", ["plain", "key_padding", "dropout_mask_causal"])
def test_float16_kernel(device, name, monkeypatch):
    """float16 arrays (autocast's attention) run the kernel, in float32 arithmetic: as they are
    where it declares takes_float16 (Vulkan), else its float32 variant on float32 copies (CPU).
    out and the gradients are float16 (one rounding of a float32 result), lse float32 (and the
    backward takes it so); against float64 numpy on the float16 inputs, and no composed block
    ever runs where the device has the kernel."""
    if "attention" not in device.kernels:
        pytest.skip("no attention kernel on this device")
    monkeypatch.setattr(att, "composed_attention", None)            # would fail if called
    monkeypatch.setattr(att, "composed_attention_backward", None)
    q, k, v, bias, drop, g, causal = _inputs(CASES[name], np.float16)
    on = [None if a is None else gp.asarray(a, device=device) for a in (q, k, v, bias, drop, g)]
    out, lse = _kernel(*on[:5], causal, 0.4)
    grads = _kernel_bwd(on[5], *on[:5], out, lse, causal, 0.4)
    assert lse.dtype == gp.float32
    want_out, want_lse = np_attention(q, k, v, bias, drop, causal, 0.4)
    assert_f16(out, want_out)
    assert_close(lse, want_lse, rtol=2e-6, atol=2e-6)
    for a, w in zip(grads, np_attention_backward(g, q, k, v, bias, drop, causal, 0.4,
                                                 out=np.asarray(out))):
        assert_f16(a, w)


def test_float16_composition(device, monkeypatch):
    """float16 on the composition (a device without the kernels): out and the gradients
    float16, lse float32 all the same, and the backward takes it."""
    monkeypatch.delitem(device.kernels, "attention", raising=False)
    monkeypatch.delitem(device.kernels, "attention_backward", raising=False)
    q, k, v, bias, drop, g, causal = _inputs(CASES["dropout_mask_causal"], np.float16)
    on = [None if a is None else gp.asarray(a, device=device) for a in (q, k, v, bias, drop, g)]
    out, lse = _kernel(*on[:5], causal, 0.4)
    assert out.dtype == gp.float16 and lse.dtype == gp.float32
    want_out, want_lse = np_attention(q, k, v, bias, drop, causal, 0.4)
    assert_close(out, want_out, rtol=2e-2, atol=2e-2)
    assert_close(lse, want_lse, rtol=2e-2, atol=2e-2)
    grads = _kernel_bwd(on[5], *on[:5], out, lse, causal, 0.4)
    for a, w in zip(grads, np_attention_backward(g, q, k, v, bias, drop, causal, 0.4)):
        assert a.dtype == gp.float16
        assert_close(a, w, rtol=5e-2, atol=5e-2 * max(1.0, float(np.abs(w).max())))


@pytest.mark.parametrize("name", ["plain", "key_padding", "causal_l_gt_s", "dropout_mask_causal"])
def test_composition(device, name):
    _run(_composed, _composed_bwd, device, CASES[name], np.float32)


def test_fully_masked_row(device):
    q, k, v, _, _, g, _ = _inputs(CASES["plain"], np.float32)
    bias = np.zeros((1, 1, 7, 9), np.float32)
    bias[0, 0, 3] = -np.inf
    for fwd, bwd in ((_kernel, _kernel_bwd), (_composed, _composed_bwd)):
        on = [gp.asarray(a, device=device) for a in (q, k, v, bias, g)]
        out, lse = fwd(*on[:4], None, False, 0.5)
        o, ls = np.asarray(out), np.asarray(lse)
        assert np.isnan(o[:, :, 3]).all() and not np.isnan(np.delete(o, 3, axis=2)).any()
        assert (ls[:, :, 3] == -np.inf).all()
        grads = bwd(on[4], *on[:4], None, out, lse, False, 0.5)
        want = np_attention_backward(g, q, k, v, bias, None, False, 0.5)
        for a, w in zip(grads, want):
            assert_close(a, w, rtol=1e-4, atol=1e-5)


def test_strided_views(device):
    # permuted (N, L, H, E) projections, as multi-head attention makes them: no copy needed
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 2, 6, 2, 4)).astype(np.float32)     # (qkv, N, L, H, E)
    xa = gp.permute_dims(gp.asarray(x, device=device), (0, 1, 3, 2, 4))
    q, k, v = xa[0], xa[1], xa[2]
    out, lse = att.attention(q, k, v, causal=True, scale=0.5)
    xp = x.transpose(0, 1, 3, 2, 4)
    want, want_lse = np_attention(xp[0], xp[1], xp[2], None, None, True, 0.5)
    assert_close(out, want, rtol=2e-5, atol=2e-5)
    g = gp.broadcast_to(gp.asarray(np.float32(1.0), device=device), out.shape)   # read-only view
    grads = att.attention_backward(g, q, k, v, None, None, out, lse, causal=True, scale=0.5)
    for a, w in zip(grads, np_attention_backward(np.ones(out.shape), xp[0], xp[1], xp[2], None,
                                                 None, True, 0.5)):
        assert_close(a, w, rtol=1e-4, atol=1e-5)


def test_need_gives_none(device):
    q, k, v, bias, drop, g, causal = _inputs(CASES["plain"], np.float32)
    on = [gp.asarray(a, device=device) for a in (q, k, v, g)]
    out, lse = att.attention(*on[:3], scale=1.0)
    grads = att.attention_backward(on[3], *on[:3], None, None, out, lse, scale=1.0,
                                   need=(False, True, False))
    assert grads[0] is None and grads[2] is None and grads[1] is not None


@pytest.mark.parametrize("change, exc, text", [
    (dict(q=(2, 3, 7)), TypeError, "4-D"),
    (dict(k=(2, 3, 9, 5)), ValueError, "expected q"),
    (dict(bias=(2, 2, 7, 9)), ValueError, "bias must be float32 of shape"),
    (dict(drop=(2, 3, 1, 9)), ValueError, "drop must be float32 of shape"),
    (dict(block=0), ValueError, "block must be a positive int"),
])
def test_errors(change, exc, text):
    shapes = dict(q=(2, 3, 7, 4), k=(2, 3, 9, 4), v=(2, 3, 9, 5), bias=None, drop=None)
    block = change.pop("block", 4)
    shapes.update(change)
    arr = {n: None if s is None else gp.ones(s, dtype=gp.float32) for n, s in shapes.items()}
    with pytest.raises(exc, match=text):
        att.attention(arr["q"], arr["k"], arr["v"], arr["bias"], arr["drop"], scale=1.0,
                      block=block)
