"""flash_attention2's hand-written backward (FlashAttention-2): outputs and gradients against
torch's scaled_dot_product_attention (a test-only oracle), gradcheck, and its memory bound."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grilly as gp
from grilly.array.array import Array
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
tF = torch.nn.functional

# name: (query, key, value shapes, mask kind and shape, is_causal, scale, block_size)
CASES = {
    "plain_bs_not_dividing": ((2, 3, 6, 4), (2, 3, 6, 4), (2, 3, 6, 5), None, False, None, 4),
    "bs_divides_l_ne_s": ((2, 6, 4), (2, 8, 4), (2, 8, 3), None, False, None, 4),
    "bs_1": ((5, 4), (7, 4), (7, 3), None, False, None, 1),
    "bs_over_s": ((5, 4), (7, 4), (7, 3), None, False, None, 128),
    "bool_mask": ((2, 5, 4), (2, 7, 4), (2, 7, 4), ("bool", (5, 7)), False, None, 3),
    "bool_mask_batched": ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 2), ("bool", (2, 1, 5, 7)), False, None, 3),
    "float_mask": ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 4), ("float", (2, 3, 5, 7)), False, None, 2),
    "float_mask_one_column": ((5, 4), (7, 4), (7, 3), ("float", (5, 1)), False, None, 3),
    "causal_l_lt_s": ((2, 5, 4), (2, 9, 4), (2, 9, 3), None, True, None, 2),
    "causal_l_gt_s": ((2, 9, 4), (2, 4, 4), (2, 4, 3), None, True, None, 3),
    "causal_heads": ((2, 3, 6, 4), (2, 3, 6, 4), (2, 3, 6, 4), None, True, None, 4),
    "custom_scale": ((2, 3, 5, 4), (2, 3, 8, 4), (2, 3, 8, 5), None, False, 0.3, 3),
    "causal_scale": ((3, 6, 2), (3, 6, 2), (3, 6, 2), None, True, 1.7, 4),
}


def _inputs(case, dtype, seed=0):
    qsh, ksh, vsh, mask, causal, scale, bs = case
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in (qsh, ksh, vsh))
    m = None
    if mask is not None:
        kind, msh = mask
        if kind == "bool":
            m = rng.random(msh) > 0.4
            m[..., 0] = True  # no fully masked row here: torch gives 0 there, grilly nan
        else:
            m = rng.standard_normal(msh).astype(dtype)
    cot = rng.standard_normal(np.broadcast_shapes(qsh[:-1], ksh[:-2] + (1,)) + vsh[-1:]).astype(dtype)
    return q, k, v, m, cot, dict(is_causal=causal, scale=scale)


def _grilly(q, k, v, m, cot, kw, bs, device):
    g = [gp.asarray(x, device=device) for x in (q, k, v)]
    for x in g:
        x.requires_grad = True
    out = F.flash_attention2(*g, attn_mask=None if m is None else gp.asarray(m, device=device),
                             block_size=bs, **kw)
    gp.sum(out * gp.asarray(cot, device=device)).backward()
    return [out] + [x.grad for x in g]


def _torch(q, k, v, m, cot, kw):
    t = [torch.tensor(x, requires_grad=True) for x in (q, k, v)]
    out = tF.scaled_dot_product_attention(*t, attn_mask=None if m is None else torch.tensor(m), **kw)
    (out * torch.tensor(cot)).sum().backward()
    return [x.detach().numpy() for x in [out] + [x.grad for x in t]]


def _compare(got, ref, rtol):
    for name, a, e in zip(("out", "dq", "dk", "dv"), got, ref):
        assert a is not None, f"no gradient for {name}"
        assert_close(a, e, rtol=rtol, atol=rtol * float(np.abs(e).max()))


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_float32(device, name):
    case = CASES[name]
    q, k, v, m, cot, kw = _inputs(case, np.float32)
    _compare(_grilly(q, k, v, m, cot, kw, case[-1], device), _torch(q, k, v, m, cot, kw), 1e-5)


@pytest.mark.parametrize("name", ["plain_bs_not_dividing", "bool_mask", "float_mask", "causal_l_lt_s",
                                  "causal_l_gt_s", "custom_scale"])
def test_matches_torch_float64(name):
    case = CASES[name]
    q, k, v, m, cot, kw = _inputs(case, np.float64, seed=1)
    _compare(_grilly(q, k, v, m, cot, kw, case[-1], "cpu"), _torch(q, k, v, m, cot, kw), 1e-11)


@given(lq=st.integers(1, 9), sk=st.integers(1, 9), e=st.integers(1, 4), bs=st.integers(1, 10),
       mode=st.sampled_from(["none", "causal", "bool", "float"]), seed=st.integers(0, 2**16))
def test_property_float64(lq, sk, e, bs, mode, seed):
    mask = {"bool": ("bool", (lq, sk)), "float": ("float", (1, lq, sk))}.get(mode)
    case = ((2, lq, e), (2, sk, e), (2, sk, 3), mask, mode == "causal", None, bs)
    q, k, v, m, cot, kw = _inputs(case, np.float64, seed)
    _compare(_grilly(q, k, v, m, cot, kw, bs, "cpu"), _torch(q, k, v, m, cot, kw), 1e-10)


@pytest.mark.parametrize("kw", [dict(block_size=2), dict(block_size=2, is_causal=True),
                                dict(block_size=3, scale=0.5, mask="bool"),
                                dict(block_size=1, mask="float")])
def test_gradcheck(kw):
    kw = dict(kw)
    rng = np.random.default_rng(3)
    q, k, v = (gp.asarray(rng.standard_normal(s)) for s in ((2, 3, 2), (2, 5, 2), (2, 5, 3)))
    mask = kw.pop("mask", None)
    if mask == "bool":
        mm = rng.random((3, 5)) > 0.4
        mm[:, 1] = True
        kw["attn_mask"] = gp.asarray(mm)
    elif mask == "float":
        kw["attn_mask"] = gp.asarray(rng.standard_normal((3, 5)))
    assert gp.autograd.gradcheck(lambda a, b, c: F.flash_attention2(a, b, c, **kw), (q, k, v))


def test_fully_masked_row(device):
    q, k, v, _, cot, kw = _inputs(CASES["bool_mask"], np.float32)
    m = np.ones((5, 7), bool)
    m[2] = False
    got = _grilly(q, k, v, m, cot, kw, 3, device)
    ref = _torch(q, k, v, m, cot, kw)
    # the output row is 0, as torch's (the kernel's NaN row is replaced); it adds nothing to
    # the gradients, as in torch, instead of spreading nan over every key
    out = np.asarray(got[0])
    assert (out[:, 2] == 0).all() and not np.isnan(out).any()
    _compare(got, ref, 1e-5)


def test_partial_requires_grad_and_mask_grad(device):
    # one input needing a gradient gets it; an additive mask that needs one gets torch's
    q, k, v, m, cot, kw = _inputs(CASES["float_mask"], np.float32)
    ref = _torch(q, k, v, m, cot, kw)
    tm = torch.tensor(m, requires_grad=True)
    (tF.scaled_dot_product_attention(*(torch.tensor(x) for x in (q, k, v)), attn_mask=tm)
     * torch.tensor(cot)).sum().backward()
    for i in range(3):
        g = [gp.asarray(x, device=device) for x in (q, k, v)]
        g[i].requires_grad = True
        mask = gp.asarray(m, device=device)
        mask.requires_grad = i == 0
        out = F.flash_attention2(*g, attn_mask=mask, block_size=2)
        gp.sum(out * gp.asarray(cot, device=device)).backward()
        assert_close(g[i].grad, ref[i + 1], rtol=1e-5, atol=1e-5 * float(np.abs(ref[i + 1]).max()))
        for j in range(3):
            assert (g[j].grad is None) == (j != i)
        if i == 0:
            assert_close(mask.grad, tm.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_broadcast_batch_dims(device):
    # key/value shared over the heads of the query: their gradient sums over the broadcast axis
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4, 2), (2, 1, 6, 2), (2, 1, 6, 3)))
    cot = rng.standard_normal((2, 3, 4, 3)).astype(np.float32)
    got = _grilly(q, k, v, None, cot, {}, 4, device)
    ref = _torch(q, np.ascontiguousarray(np.broadcast_to(k, (2, 3, 6, 2))),
                 np.ascontiguousarray(np.broadcast_to(v, (2, 3, 6, 3))), None, cot, {})
    ref[2], ref[3] = ref[2].sum(1, keepdims=True), ref[3].sum(1, keepdims=True)
    _compare(got, ref, 1e-5)


# ---- memory ---------------------------------------------------------------------------------
L = S = 64
E, BS = 4, 8


@pytest.fixture
def sizes(monkeypatch):
    """Record the element count of every Array made while ``sizes["on"]`` is set."""
    rec = {"on": False, "all": []}
    orig = Array._new

    def _new(cls, buf, dtype, device):
        if rec["on"]:
            rec["all"].append(math.prod(buf.shape))
        return orig(buf, dtype, device)
    monkeypatch.setattr(Array, "_new", classmethod(_new))
    return rec


def _memory_run(attn, device, sizes, mask):
    """The sizes of the Arrays made by the forward, and by the backward."""
    rng = np.random.default_rng(0)
    g = [gp.asarray(rng.standard_normal((L, E)).astype(np.float32), device=device) for _ in range(3)]
    for x in g:
        x.requires_grad = True
    kw = {"attn_mask": gp.asarray(rng.random((L, S)) > 0.2, device=device)} if mask else {"is_causal": True}
    sizes["on"] = True
    out = attn(*g, **kw)
    fwd, sizes["all"] = sizes["all"], []
    gp.sum(out).backward()
    sizes["on"] = False
    return fwd, sizes["all"]


def _plain(q, k, v, attn_mask=None, is_causal=False):
    s = gp.matmul(q, gp.matrix_transpose(k)) / math.sqrt(q.shape[-1])
    if is_causal:
        attn_mask = gp.asarray(np.tril(np.ones((L, S), bool)), device=q.device)
    s = gp.where(attn_mask, s, gp.asarray(-math.inf, device=q.device))
    return gp.matmul(F.softmax(s, dim=-1), v)


@pytest.mark.parametrize("mask", [False, True])
def test_memory_bound(device, sizes, mask):
    fwd, bwd = _memory_run(lambda *a, **k: F.flash_attention2(*a, block_size=BS, **k), device, sizes, mask)
    # beyond one block of scores, only a boolean mask's additive form (made once, then seen as
    # (N, H, L, S) through a reshape view) has L * S elements; the backward makes none
    big = [n for n in fwd + bwd if n > L * BS]
    assert big == ([L * S] * 2 if mask else [])
    assert max(bwd) <= L * BS
    # the check can fail: plain attention's forward and backward make (L, S) arrays
    fwd, bwd = _memory_run(_plain, device, sizes, mask)
    assert max(fwd) >= L * S and max(bwd) >= L * S


def test_saved_for_backward(monkeypatch):
    saved = []
    from grilly.autograd import function
    real = function._Ctx.save_for_backward

    def spy(self, *arrays):
        saved.extend(arrays)
        real(self, *arrays)
    monkeypatch.setattr(function._Ctx, "save_for_backward", spy)
    rng = np.random.default_rng(0)
    q = gp.asarray(rng.standard_normal((2, L, E)))
    k, v = (gp.asarray(rng.standard_normal((2, S, E))) for _ in range(2))
    q.requires_grad = True
    F.flash_attention2(q, k, v, block_size=BS)
    arrays = [a for a in saved if a is not None]
    assert len(arrays) == 5  # q, k, v, O and the row logsumexp (as (N, H, L, ...) views)
    assert max(a.size for a in arrays) == 2 * L * E
    assert (1, 2, L) in [tuple(a.shape) for a in arrays]


# ---- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, exc, text", [
    (dict(is_causal=True, attn_mask=True), ValueError, "not both"),
    (dict(block_size=0), ValueError, "block_size must be positive"),
    (dict(block_size=2.5), TypeError, "block_size must be an int"),
    (dict(block_size=True), TypeError, "block_size must be an int"),
    (dict(kshape=(5, 3)), ValueError, "expected query"),
    (dict(vshape=(4, 2)), ValueError, "expected query"),
    (dict(kshape=(0, 2), vshape=(0, 2)), ValueError, "S == 0"),
    (dict(qdtype=gp.int32), TypeError, "query must have a real floating dtype"),
    (dict(qshape=(2,)), ValueError, "query needs shape"),
])
def test_errors(kw, exc, text):
    kw = dict(kw)
    q = gp.ones(kw.pop("qshape", (3, 2)), dtype=kw.pop("qdtype", gp.float64))
    k = gp.ones(kw.pop("kshape", (5, 2)))
    v = gp.ones(kw.pop("vshape", (5, 2)))
    if kw.get("attn_mask") is True:
        kw["attn_mask"] = gp.ones((3, 5), dtype=gp.bool)
    with pytest.raises(exc, match=text):
        F.flash_attention2(q, k, v, **kw)
