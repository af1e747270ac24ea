"""grilly.nn: Module machinery, containers, state dicts, devices, save/load, init, errors."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close


def _mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def test_functional_aliases():
    import grilly.functional as gf

    assert gf is nn.functional


def test_parameter_marker():
    x = gp.zeros((2,), dtype=gp.float32)
    assert not isinstance(x, nn.Parameter)
    p = nn.Parameter(x)
    assert p is x and p.requires_grad and isinstance(p, nn.Parameter)
    assert not isinstance(gp.zeros((2,)), nn.Parameter)


def test_registration_and_iteration():
    m = _mlp()
    assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(list(m.parameters())) == 4
    assert [n for n, _ in m.named_children()] == ["0", "1", "2"]
    assert [n for n, _ in m.named_modules()] == ["", "0", "1", "2"]
    assert isinstance(m[0], nn.Linear) and isinstance(m[-1], nn.Linear) and len(m[1:]) == 2
    m.extra = nn.Linear(2, 2)
    assert "extra.weight" in dict(m.named_parameters())
    del m.extra
    assert "extra.weight" not in m.state_dict()


def test_shared_parameter_listed_once():
    m = nn.Module()
    m.a = nn.Linear(3, 3)
    m.b = m.a
    assert len(list(m.parameters())) == 2


def test_buffers_and_state_dict():
    bn = nn.BatchNorm1d(3)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    m = nn.Module()
    m.register_buffer("tmp", gp.zeros((2,)), persistent=False)
    assert "tmp" not in m.state_dict() and "tmp" in dict(m.named_buffers())


def test_train_eval_flags():
    m = nn.Sequential(nn.Dropout(0.5), nn.Sequential(nn.BatchNorm1d(2)))
    assert all(x.training for x in m.modules())
    m.eval()
    assert not any(x.training for x in m.modules())
    m.train()
    assert m[1][0].training


def test_load_state_dict_strict_and_in_place(device):
    a, b = _mlp().to(device), _mlp().to(device)
    w = b[0].weight
    res = b.load_state_dict(a.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert b[0].weight is w  # copied in place: an optimizer's references stay valid
    assert_close(b[0].weight, np.asarray(a[0].weight))
    sd = dict(a.state_dict())
    sd.pop("0.bias")
    sd["junk"] = gp.zeros((1,), device=device)
    with pytest.raises(RuntimeError, match="missing keys.*0.bias.*unexpected keys.*junk"):
        b.load_state_dict(sd)
    res = b.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["0.bias"] and res.unexpected_keys == ["junk"]
    with pytest.raises(ValueError, match="shape"):
        b.load_state_dict({**a.state_dict(), "0.weight": np.zeros((3, 3), np.float32)})


def test_to_device_keeps_parameters(device):
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)).to(device)
    for _, p in m.named_parameters():
        assert p.device == device and isinstance(p, nn.Parameter) and p.requires_grad
    for _, b in m.named_buffers():
        assert b.device == device
    m.double()
    assert m[0].weight.dtype == gp.float64 and m[1].num_batches_tracked.dtype == gp.int64


def test_deepcopy_is_an_independent_trainable_copy(device):
    import copy

    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).to(device)
    m[2].bias.requires_grad_(False)   # a frozen parameter stays frozen
    x = gp.asarray(np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32),
                   device=device)
    gp.sum(m(x) ** 2).backward()
    c = copy.deepcopy(m)
    for (n, p), (n2, q) in zip(m.named_parameters(), c.named_parameters(), strict=True):
        assert n == n2 and q is not p and isinstance(q, nn.Parameter)
        assert (q.device, q.dtype, q.requires_grad) == (p.device, p.dtype, p.requires_grad)
        assert_close(q, np.asarray(p))
        assert (q.grad is None) == (p.grad is None)
        if p.grad is not None:
            assert q.grad is not p.grad and q.grad.device == device
            assert_close(q.grad, np.asarray(p.grad))
    for b, b2 in zip(m.buffers(), c.buffers(), strict=True):
        assert b2 is not b and b2.device == device and b2.dtype == b.dtype
        assert_close(b2, np.asarray(b))
    # independent: a change to either leaves the other as it was
    w0, b0 = np.asarray(m[0].weight).copy(), np.asarray(c[2].bias).copy()
    with gp.autograd.no_grad():
        m[0].weight[...] = 0.0
        c[2].bias[...] = 5.0
    assert_close(c[0].weight, w0)
    assert_close(m[2].bias, b0)
    # the copy trains: backward reaches its own parameters only, an optimizer steps them
    g0 = np.asarray(m[0].weight.grad).copy()
    c.zero_grad()
    gp.sum(c(x) ** 2).backward()
    assert all((p.grad is not None) == p.requires_grad for p in c.parameters())
    assert_close(m[0].weight.grad, g0)
    before = np.asarray(c[2].weight).copy()
    gp.optim.SGD(c.parameters(), lr=0.1).step()
    assert not np.allclose(np.asarray(c[2].weight), before)
    # shared modules and arrays stay shared in the copy (one copy each)
    tied = nn.Module()
    tied.a = nn.Linear(2, 2).to(device)
    tied.b = tied.a
    t2 = copy.deepcopy(tied)
    assert t2.b is t2.a and t2.a.weight is not tied.a.weight
    a = gp.arange(6.0, device=device)
    a2, same, view = copy.deepcopy([a, a, a[2:4]])
    assert a2 is same and a2 is not a and a2.device == device
    with gp.autograd.no_grad():
        a[...] = 0.0
    assert_close(a2, np.arange(6.0))
    assert_close(view, np.array([2.0, 3.0]))   # a view is copied as an array of its own


def test_zero_grad_and_backward(device):
    m = _mlp().to(device)
    x = gp.asarray(np.ones((2, 4), np.float32), device=device)
    gp.sum(m(x)).backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_repr():
    r = repr(_mlp())
    assert r == ("Sequential(\n  (0): Linear(in_features=4, out_features=8, bias=True)\n  (1): ReLU()\n"
                 "  (2): Linear(in_features=8, out_features=3, bias=True)\n)")
    assert repr(nn.GELU(approximate="tanh")) == "GELU(approximate='tanh')"


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(ml) == 3 and len(list(ml.parameters())) == 6
    md = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    assert list(md.keys()) == ["a", "b"] and "a.weight" in md.state_dict()


def test_bad_assignments():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="parameter 'weight'"):
        m.weight = gp.zeros((2, 2))
    with pytest.raises(TypeError, match="register_buffer"):
        m.register_buffer("b", [1, 2])
    with pytest.raises(IndexError):
        nn.Sequential(nn.ReLU())[3]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "float16", "uint8",
                                   "bfloat16"])
def test_save_load_roundtrip(device, tmp_path, dtype):
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to(device)
    sd = dict(m.state_dict())
    sd["extra"] = gp.asarray(np.arange(6).reshape(2, 3) % 2, dtype=getattr(gp, dtype), device=device)
    path = tmp_path / "m.safetensors"
    nn.save(sd, path)
    back = nn.load(path, device=device)
    assert list(back) == list(sd)
    for k, v in sd.items():
        assert back[k].device == device
        assert_close(back[k], np.asarray(v))
    m2 = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to(device)
    back.pop("extra")
    m2.load_state_dict(back)
    assert_close(m2[0].weight, np.asarray(m[0].weight))


def test_load_errors(tmp_path):
    p = tmp_path / "bad"
    p.write_bytes(b"xx")
    with pytest.raises(ValueError, match="not a safetensors"):
        nn.load(p)
    with pytest.raises(TypeError, match="grilly Array"):
        nn.save({"a": [1, 2]}, tmp_path / "x")


def test_init_statistics():
    nn.manual_seed(0)
    w = nn.Parameter(gp.zeros((256, 128), dtype=gp.float32))
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    h = np.asarray(w)
    bound = math.sqrt(6 / ((1 + 5) * 128))
    assert np.abs(h).max() <= bound and np.abs(h).max() > 0.95 * bound
    nn.init.xavier_normal_(w)
    assert abs(np.asarray(w).std() - math.sqrt(2 / (256 + 128))) < 0.005
    nn.init.zeros_(w)
    assert not np.asarray(w).any()
    assert nn.init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(2 / 6))


def test_init_trunc_normal_is_truncated_not_clipped(device):
    # N(0, 1) truncated to [-2, 2] has std 0.8796 and no mass at the ends; clipping left
    # 4.6 % of the values exactly on -2 and 2 (std 0.95)
    nn.manual_seed(0)
    w = nn.Parameter(gp.zeros((200, 100), dtype=gp.float32, device=device))
    assert nn.init.trunc_normal_(w) is w
    h = np.asarray(w)
    assert np.abs(h).max() <= 2.0
    assert (np.abs(h) > 1.99).mean() < 0.005
    assert abs(h.std() - 0.8796) < 0.02
    nn.init.trunc_normal_(w, mean=1.0, std=2.0, a=0.5, b=1.0)
    h = np.asarray(w)
    assert h.min() >= 0.5 and h.max() <= 1.0 and abs(h.mean() - 0.75) < 0.01


def test_init_orthogonal():
    w = gp.zeros((4, 6), dtype=gp.float64)
    nn.init.orthogonal_(w, gain=2.0)
    h = np.asarray(w)
    np.testing.assert_allclose(h @ h.T, 4 * np.eye(4), atol=1e-10)


def test_init_reproducible():
    nn.manual_seed(3)
    a = np.asarray(nn.Linear(5, 5).weight)
    nn.manual_seed(3)
    assert np.array_equal(a, np.asarray(nn.Linear(5, 5).weight))


def test_dropout(device):
    nn.manual_seed(1)
    x = gp.ones((200, 50), dtype=gp.float32, device=device)
    d = nn.Dropout(0.3)
    y = np.asarray(d(x))
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.7)}
    assert abs((y == 0).mean() - 0.3) < 0.02
    d.eval()
    assert d(x) is x


def test_errors():
    x = gp.zeros((2, 3, 4, 4), dtype=gp.float32)
    with pytest.raises(ValueError, match="conv2d: input has 3 channels"):
        F.conv2d(x, gp.zeros((4, 2, 3, 3), dtype=gp.float32))
    with pytest.raises(TypeError, match="conv2d: input must have a real floating dtype"):
        F.conv2d(gp.zeros((1, 1, 3, 3), dtype=gp.int32), gp.zeros((1, 1, 1, 1)))
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(gp.zeros((2,)), gp.zeros((2,)), reduction="avg")
    with pytest.raises(ValueError, match="cross_entropy: target shape"):
        F.cross_entropy(gp.zeros((2, 3)), gp.zeros((3,), dtype=gp.int64))
    with pytest.raises(ValueError, match="linear"):
        nn.Linear(3, 2)(gp.zeros((2, 4), dtype=gp.float32))
    with pytest.raises(ValueError, match="embed_dim 5 is not divisible"):
        nn.MultiheadAttention(5, 2)


def test_multihead_attention_mask_shape_errors(device):
    # (a reshape or add error before, naming neither the module nor the mask)
    m = nn.MultiheadAttention(8, 2).to(device)
    x = gp.zeros((3, 2, 8), dtype=gp.float32, device=device)
    with pytest.raises(ValueError, match=r"MultiheadAttention: key_padding_mask must have shape \(2, 3\)"):
        m(x, x, x, key_padding_mask=gp.zeros((2, 4), dtype=gp.bool, device=device))
    with pytest.raises(ValueError, match=r"MultiheadAttention: attn_mask must have shape \(3, 3\)"):
        m(x, x, x, attn_mask=gp.zeros((4, 4), dtype=gp.bool, device=device))
    out, _ = m(x, x, x, attn_mask=gp.zeros((4, 3, 3), dtype=gp.float32, device=device))
    assert out.shape == (3, 2, 8)


@pytest.mark.parametrize("make,shape,match", [
    (lambda: nn.Conv2d(3, 2, 3, stride=0), (1, 3, 6, 6), "conv2d: stride must be positive"),
    (lambda: nn.Conv2d(3, 2, 3, dilation=(1, 0)), (1, 3, 6, 6), "conv2d: dilation must be positive"),
    (lambda: nn.Conv2d(3, 2, 3, padding=-1), (1, 3, 6, 6), "conv2d: padding must be non-negative"),
    (lambda: nn.Conv2d(3, 2, 3, padding="full"), (1, 3, 6, 6), "Conv2d: invalid padding string"),
    (lambda: nn.Conv1d(3, 2, 3, stride=0), (1, 3, 6), "stride must be positive"),
    (lambda: nn.MaxPool2d(2, stride=0), (1, 3, 6, 6), "max_pool2d: stride must be positive"),
    (lambda: nn.AvgPool2d(2, stride=0), (1, 3, 6, 6), "avg_pool2d: stride must be positive"),
    (lambda: nn.MaxPool1d(2, stride=0), (1, 3, 6), "max_pool2d: stride must be positive"),
    (lambda: nn.MaxPool2d(3, 1, 1, dilation=0), (1, 3, 6, 6), "max_pool2d: dilation must be positive"),
])
def test_conv_pool_geometry_errors(device, make, shape, match):
    # (a zero stride was a ZeroDivisionError, or silently the kernel size in the pool modules)
    with pytest.raises(ValueError, match=match):
        make().to(device)(gp.zeros(shape, dtype=gp.float32, device=device))


@given(st.integers(1, 4), st.integers(1, 3), st.integers(0, 2), st.integers(5, 9))
def test_conv2d_matches_direct_sum(k, s, p, n):
    """conv2d equals the definition (a sum over the window) computed in numpy."""
    rng = np.random.default_rng(k * 100 + s * 10 + p)
    x = rng.standard_normal((1, 2, n, n)).astype(np.float64)
    w = rng.standard_normal((3, 2, k, k)).astype(np.float64)
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    o = (n + 2 * p - k) // s + 1
    ref = np.zeros((1, 3, o, o))
    for i in range(o):
        for j in range(o):
            ref[0, :, i, j] = np.tensordot(w, xp[0, :, i * s:i * s + k, j * s:j * s + k], axes=3)
    assert_close(F.conv2d(gp.asarray(x), gp.asarray(w), stride=s, padding=p), ref, rtol=1e-10, atol=1e-12)


@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 6))
def test_flash_attention_matches_softmax(lq, sk, bs):
    rng = np.random.default_rng(lq * 13 + sk)
    q, k, v = (rng.standard_normal(sh) for sh in ((2, lq, 3), (2, sk, 3), (2, sk, 2)))
    s = q @ k.transpose(0, 2, 1) / math.sqrt(3)
    a = np.exp(s - s.max(-1, keepdims=True))
    ref = (a / a.sum(-1, keepdims=True)) @ v
    got = F.flash_attention2(gp.asarray(q), gp.asarray(k), gp.asarray(v), block_size=bs)
    assert_close(got, ref, rtol=1e-10, atol=1e-12)


def test_embedding_index_check_holds_on_a_jit_replay():
    """On the CPU backend a jitted lookup traces (the bounds check is the replayed
    normalize_indices kernel, no host read added); a replay rejects a negative index too."""
    emb = nn.Embedding(5, 2).to("cpu")
    f = gp.jit(lambda i: emb(i))
    assert f(gp.asarray([1, 2], device="cpu")).shape == (2, 2)
    assert f(gp.asarray([3, 4], device="cpu")).shape == (2, 2)
    for bad in ([1, -1], [1, 9]):
        with pytest.raises(IndexError):
            f(gp.asarray(bad, device="cpu"))
