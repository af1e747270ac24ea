"""EmbeddingBag, gumbel_softmax, affine_grid/grid_sample, CTC loss, AdaptiveLogSoftmaxWithLoss,
fractional max pooling and the lazy layers against torch (a test-only oracle): values, input
and parameter gradients on every device."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly import random as grandom
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
tF = torch.nn.functional
RTOL, ATOL = 1e-4, 1e-5


def _np(t):
    return t.detach().numpy()


def _g(x, device, requires_grad=False):
    a = gp.asarray(_np(x) if hasattr(x, "detach") else np.asarray(x), device=device)
    if requires_grad:
        a.requires_grad_()
    return a


def _close(a, e, rtol=RTOL, atol=ATOL):
    assert_close(a, _np(e) if hasattr(e, "detach") else e, rtol=rtol, atol=atol)


def _backward_both(t, g, device):
    """Backpropagate the same random cotangent through the torch and grilly outputs."""
    cot = torch.randn(t.shape)
    (t * cot).sum().backward()
    gp.sum(g * _g(cot, device)).backward()


def _copy(tmod, gmod, device):
    gmod.to(device)
    res = gmod.load_state_dict({k: _np(v) for k, v in tmod.state_dict().items()})
    assert res.missing_keys == [] and res.unexpected_keys == []


# ---- embedding_bag / EmbeddingBag -----------------------------------------------------------
IDX = [1, 2, 4, 5, 4, 3, 2, 9, 0, 7]
OFFSETS = [0, 4, 4, 7]            # bag 1 is empty


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 4])
@pytest.mark.parametrize("two_d", [False, True])
def test_embedding_bag_matches_torch(device, mode, padding_idx, two_d):
    torch.manual_seed(0)
    w = torch.randn(10, 3)
    if two_d:
        idx, off = torch.tensor([[1, 4, 3], [4, 4, 4], [9, 0, 2]]), None
    else:
        idx, off = torch.tensor(IDX), torch.tensor(OFFSETS)
    tw, gw = w.clone().requires_grad_(), _g(w, device, True)
    t = tF.embedding_bag(idx, tw, off, mode=mode, padding_idx=padding_idx)
    g = F.embedding_bag(_g(idx, device), gw, None if off is None else _g(off, device), mode=mode,
                        padding_idx=padding_idx)
    assert g.shape == tuple(t.shape)
    _close(g, t)
    _backward_both(t, g, device)
    _close(gw.grad, tw.grad)


@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_per_sample_weights(device, include_last_offset):
    torch.manual_seed(1)
    w, psw = torch.randn(10, 4), torch.rand(len(IDX))
    off = torch.tensor(OFFSETS + ([len(IDX)] if include_last_offset else []))
    tw, tp = w.clone().requires_grad_(), psw.clone().requires_grad_()
    gw, gpw = _g(w, device, True), _g(psw, device, True)
    t = tF.embedding_bag(torch.tensor(IDX), tw, off, mode="sum", per_sample_weights=tp,
                         include_last_offset=include_last_offset, padding_idx=2)
    g = F.embedding_bag(_g(torch.tensor(IDX), device), gw, _g(off, device), mode="sum",
                        per_sample_weights=gpw, include_last_offset=include_last_offset,
                        padding_idx=2)
    assert g.shape == (4, 4)
    _close(g, t)
    _backward_both(t, g, device)
    _close(gw.grad, tw.grad)
    _close(gpw.grad, tp.grad)


def test_embedding_bag_module_and_from_pretrained(device):
    torch.manual_seed(2)
    tm = torch.nn.EmbeddingBag(10, 3, mode="max", padding_idx=0)
    gm = nn.EmbeddingBag(10, 3, mode="max", padding_idx=0)
    assert repr(gm) == repr(tm)
    assert np.all(gm.weight.numpy()[0] == 0)   # the padding row starts at zero
    _copy(tm, gm, device)
    idx, off = torch.tensor(IDX), torch.tensor(OFFSETS)
    t, g = tm(idx, off), gm(_g(idx, device), _g(off, device))
    _close(g, t)
    _backward_both(t, g, device)
    _close(gm.weight.grad, tm.weight.grad)
    # offsets as a Python list, as torch accepts a tensor
    _close(gm(_g(idx, device), OFFSETS), t)
    w = torch.randn(6, 2)
    tp = torch.nn.EmbeddingBag.from_pretrained(w, mode="sum")
    gpm = nn.EmbeddingBag.from_pretrained(_g(w, device), mode="sum")
    assert not gpm.weight.requires_grad and repr(gpm) == repr(tp)
    i2 = torch.tensor([[0, 5], [3, 3]])
    _close(gpm(_g(i2, device)), tp(i2))
    assert nn.EmbeddingBag.from_pretrained(_g(w, device), freeze=False).weight.requires_grad


def test_embedding_bag_errors(device):
    w = gp.ones((5, 2), device=device)
    i1 = gp.asarray([0, 1, 2], device=device)
    with pytest.raises(ValueError, match="offsets"):
        F.embedding_bag(i1, w)
    with pytest.raises(ValueError, match="offsets must be None"):
        F.embedding_bag(gp.asarray([[0, 1]], device=device), w, i1)
    with pytest.raises(ValueError, match="mode"):
        F.embedding_bag(i1, w, gp.asarray([0], device=device), mode="prod")
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        F.embedding_bag(i1, w, gp.asarray([0], device=device), mode="mean",
                        per_sample_weights=gp.ones(3, device=device))
    with pytest.raises(TypeError, match="integer"):
        F.embedding_bag(gp.ones(3, device=device), w, gp.asarray([0], device=device))
    with pytest.raises(IndexError, match="embedding_bag"):
        F.embedding_bag(gp.asarray([0, 7], device=device), w, gp.asarray([0], device=device))
    with pytest.raises(NotImplementedError, match="sparse"):
        nn.EmbeddingBag(5, 2, sparse=True)


# ---- gumbel_softmax -------------------------------------------------------------------------
def test_gumbel_softmax_soft_samples_and_statistics(device):
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32))
    x = _g(np.tile(logits, (3000, 1)), device)
    grandom.seed(0)
    y = F.gumbel_softmax(x, tau=0.5)
    assert y.shape == (3000, 4)
    _close(gp.sum(y, axis=-1), np.ones(3000, np.float32))
    # the argmax of a Gumbel-perturbed sample is distributed as softmax(logits)
    freq = np.bincount(gp.argmax(y, axis=-1).numpy(), minlength=4) / 3000
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4], atol=0.035)
    grandom.seed(0)
    _close(F.gumbel_softmax(x, tau=0.5), y.numpy(), atol=0, rtol=0)   # seeded: reproducible
    grandom.seed(1)
    assert not np.allclose(F.gumbel_softmax(x, tau=0.5).numpy(), y.numpy())


@pytest.mark.parametrize("dim", [-1, 0])
def test_gumbel_softmax_hard_straight_through(device, dim):
    torch.manual_seed(3)
    logits, cot = torch.randn(5, 4), torch.randn(5, 4)
    tau = 0.7
    grandom.seed(7)
    soft = F.gumbel_softmax(_g(logits, device), tau=tau, dim=dim).numpy()
    grandom.seed(7)   # the same noise: the hard sample is the one-hot of that soft one
    gx = _g(logits, device, True)
    y = F.gumbel_softmax(gx, tau=tau, hard=True, dim=dim)
    hard = np.eye(soft.shape[dim], dtype=np.float32)[soft.argmax(axis=dim)]
    _close(y, hard if dim == -1 else hard.T)
    gp.sum(y * _g(cot, device)).backward()
    # straight-through: the gradient of the soft sample, torch's softmax backward
    ts = torch.tensor(soft).requires_grad_()
    z = torch.log(ts.detach()) * 1.0   # softmax(z) == soft
    z.requires_grad_()
    (torch.softmax(z, dim=dim) * cot).sum().backward()
    _close(gx.grad, z.grad / tau)


def test_gumbel_softmax_errors(device):
    with pytest.raises(ValueError, match="tau"):
        F.gumbel_softmax(gp.ones((2, 3), device=device), tau=0.0)
    with pytest.raises(TypeError, match="gumbel_softmax"):
        F.gumbel_softmax(gp.ones((2, 3), dtype=gp.int64, device=device))
    with pytest.raises(ValueError, match="dim"):
        F.gumbel_softmax(gp.ones((2, 3), device=device), dim=2)


def test_one_hot_matches_torch(device):
    t = torch.tensor([[0, 3], [2, 1]])
    _close(F.one_hot(_g(t, device), 5), tF.one_hot(t, 5))


# ---- affine_grid / grid_sample ---------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:Since version 1.3.0, affine_grid")
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 3, 4, 2), (1, 1, 1, 3)])
def test_affine_grid_matches_torch(device, size, align_corners):
    torch.manual_seed(4)
    nd = len(size) - 2
    theta = torch.randn(size[0], nd, nd + 1)
    tt, gt = theta.clone().requires_grad_(), _g(theta, device, True)
    t = tF.affine_grid(tt, size, align_corners=align_corners)
    g = F.affine_grid(gt, size, align_corners=align_corners)
    _close(g, t)
    _backward_both(t, g, device)
    _close(gt.grad, tt.grad)


GRID_CASES = [(m, p, a) for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection")
              for a in (False, True)]


@pytest.mark.parametrize("mode,padding_mode,align_corners", GRID_CASES)
def test_grid_sample_4d_matches_torch(device, mode, padding_mode, align_corners):
    torch.manual_seed(5)
    x = torch.randn(2, 3, 4, 5)
    grid = torch.rand(2, 3, 6, 2) * 2.8 - 1.4   # partly outside [-1, 1]
    tx, tg = x.clone().requires_grad_(), grid.clone().requires_grad_()
    gx, gg = _g(x, device, True), _g(grid, device, True)
    t = tF.grid_sample(tx, tg, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    g = F.grid_sample(gx, gg, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    _close(g, t)
    _backward_both(t, g, device)
    _close(gx.grad, tx.grad)
    if mode == "bilinear":
        _close(gg.grad, tg.grad, rtol=1e-4, atol=1e-4)
    else:   # nearest: no gradient reaches the grid (torch's is zero)
        assert gg.grad is None or np.all(gg.grad.numpy() == 0)
        assert np.all(tg.grad.numpy() == 0)


@pytest.mark.parametrize("mode,padding_mode", [("bilinear", "zeros"), ("bilinear", "reflection"),
                                               ("nearest", "border")])
def test_grid_sample_5d_matches_torch(device, mode, padding_mode):
    torch.manual_seed(6)
    x = torch.randn(1, 2, 3, 4, 3)
    grid = torch.rand(1, 2, 3, 2, 3) * 2.6 - 1.3
    tx, tg = x.clone().requires_grad_(), grid.clone().requires_grad_()
    gx, gg = _g(x, device, True), _g(grid, device, True)
    t = tF.grid_sample(tx, tg, mode=mode, padding_mode=padding_mode, align_corners=False)
    g = F.grid_sample(gx, gg, mode=mode, padding_mode=padding_mode, align_corners=False)
    _close(g, t)
    _backward_both(t, g, device)
    _close(gx.grad, tx.grad)
    if mode == "bilinear":
        _close(gg.grad, tg.grad, rtol=1e-4, atol=1e-4)


def test_spatial_transformer_identity_and_theta_gradient(device):
    torch.manual_seed(7)
    x = torch.randn(2, 1, 5, 5)
    eye = torch.tensor([[1.0, 0, 0], [0, 1.0, 0]]).repeat(2, 1, 1)
    g = F.grid_sample(_g(x, device), F.affine_grid(_g(eye, device), (2, 1, 5, 5)))
    _close(g, x)   # the identity map samples the pixel centres
    theta = eye + 0.1 * torch.randn(2, 2, 3)
    tt, gt = theta.clone().requires_grad_(), _g(theta, device, True)
    t = tF.grid_sample(x, tF.affine_grid(tt, (2, 1, 4, 4), align_corners=False),
                       align_corners=False)
    g = F.grid_sample(_g(x, device), F.affine_grid(gt, (2, 1, 4, 4)))
    _close(g, t)
    _backward_both(t, g, device)
    _close(gt.grad, tt.grad, atol=1e-4)


def test_grid_sample_and_affine_grid_errors(device):
    x = gp.ones((1, 1, 3, 3), device=device)
    grid = gp.zeros((1, 2, 2, 2), device=device)
    with pytest.raises(ValueError, match="mode"):
        F.grid_sample(x, grid, mode="area")
    with pytest.raises(ValueError, match="bicubic"):   # 4-D only, as torch's
        F.grid_sample(gp.ones((1, 1, 2, 2, 2), device=device),
                      gp.zeros((1, 1, 1, 1, 3), device=device), mode="bicubic")
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(x, grid, padding_mode="circular")
    with pytest.raises(ValueError, match="grid"):
        F.grid_sample(x, gp.zeros((1, 2, 2, 3), device=device))
    with pytest.raises(ValueError, match="theta"):
        F.affine_grid(gp.zeros((1, 2, 3), device=device), (2, 1, 3, 3))
    with pytest.raises(ValueError, match="size"):
        F.affine_grid(gp.zeros((1, 2, 3), device=device), (1, 3, 3))


# ---- ctc_loss / CTCLoss ---------------------------------------------------------------------
def _ctc_case(seed=8, t_len=6, n=3, c=5):
    torch.manual_seed(seed)
    logits = torch.randn(t_len, n, c)
    # repeated labels (1, 1), a label next to its repeat across a blank, several lengths
    padded = torch.tensor([[1, 1, 2, 4], [3, 0, 0, 0], [2, 3, 2, 0]])
    return logits, padded, [6, 5, 4], [3, 1, 3]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("concatenated", [False, True])
@pytest.mark.parametrize("host_lengths", [False, True])
def test_ctc_loss_matches_torch(device, reduction, concatenated, host_lengths):
    logits, padded, il, tl = _ctc_case()
    targets = torch.cat([padded[i, :k] for i, k in enumerate(tl)]) if concatenated else padded
    tx, gx = logits.clone().requires_grad_(), _g(logits, device, True)
    t = tF.ctc_loss(tx.log_softmax(2), targets, torch.tensor(il), torch.tensor(tl),
                    reduction=reduction)
    lens = (il, tl) if host_lengths else (_g(torch.tensor(il), device), _g(torch.tensor(tl), device))
    g = F.ctc_loss(F.log_softmax(gx, dim=2), _g(targets, device), *lens, reduction=reduction)
    _close(g, t)
    _backward_both(t, g, device)
    # torch's gradient with respect to log_probs assumes they come from log_softmax; through
    # log_softmax (the usual use) both are the true gradient
    _close(gx.grad, tx.grad)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_impossible_and_blank(device, zero_infinity):
    logits, padded, _, _ = _ctc_case(seed=9)
    il, tl = [6, 2, 2], [3, 2, 3]   # entries 1 and 2: more labels than steps allow
    targets = padded.clone()
    targets[targets == 0] = 4
    targets[1, 1] = 3   # '3 3' needs a blank between: 3 steps > 2, impossible
    tx, gx = logits.clone().requires_grad_(), _g(logits, device, True)
    t = tF.ctc_loss(tx.log_softmax(2), targets, torch.tensor(il), torch.tensor(tl), blank=0,
                    reduction="none", zero_infinity=zero_infinity)
    g = F.ctc_loss(F.log_softmax(gx, dim=2), _g(targets, device), il, tl, blank=0,
                   reduction="none", zero_infinity=zero_infinity)
    _close(g, t)
    assert np.isinf(g.numpy()[1:]).all() != zero_infinity
    if zero_infinity:
        _backward_both(t, g, device)
        _close(gx.grad, tx.grad)
    # another blank index
    tb = tF.ctc_loss(logits.log_softmax(2), padded + 1, torch.tensor([6, 5, 4]),
                     torch.tensor([3, 1, 3]), blank=0)
    t2 = tF.ctc_loss(logits.log_softmax(2)[..., [1, 2, 3, 4, 0]], padded, torch.tensor([6, 5, 4]),
                     torch.tensor([3, 1, 3]), blank=4)
    g2 = F.ctc_loss(F.log_softmax(_g(logits, device), dim=2)[..., gp.asarray([1, 2, 3, 4, 0],
                                                                               device=device)],
                    _g(padded, device), [6, 5, 4], [3, 1, 3], blank=4)
    _close(g2, t2)
    _close(t2, tb)


def test_ctc_loss_unbatched_and_module(device):
    logits, padded, _, _ = _ctc_case(seed=10)
    lp = logits[:, 0].log_softmax(1)
    t = tF.ctc_loss(lp, padded[0, :3], torch.tensor(5), torch.tensor(3), reduction="none")
    g = F.ctc_loss(_g(lp, device), _g(padded[0, :3], device), 5, 3, reduction="none")
    assert g.shape == ()
    _close(g, t)
    tm, gm = torch.nn.CTCLoss(blank=0, reduction="sum"), nn.CTCLoss(blank=0, reduction="sum")
    t = tm(logits.log_softmax(2), padded, torch.tensor([6, 5, 4]), torch.tensor([3, 1, 3]))
    g = gm(F.log_softmax(_g(logits, device), dim=2), _g(padded, device), [6, 5, 4], [3, 1, 3])
    _close(g, t)


def test_ctc_loss_errors(device):
    lp = gp.zeros((4, 2, 3), device=device)
    tg = gp.asarray([[1, 2], [1, 1]], device=device)
    with pytest.raises(ValueError, match="blank"):
        F.ctc_loss(lp, tg, [4, 4], [2, 2], blank=3)
    with pytest.raises(ValueError, match="input_lengths"):
        F.ctc_loss(lp, tg, [4], [2, 2])
    with pytest.raises(ValueError, match="exceed"):
        F.ctc_loss(lp, tg, [5, 4], [2, 2])
    with pytest.raises(ValueError, match="reduction"):
        F.ctc_loss(lp, tg, [4, 4], [2, 2], reduction="avg")
    with pytest.raises(TypeError, match="targets"):
        F.ctc_loss(lp, gp.ones((2, 2), device=device), [4, 4], [2, 2])
    with pytest.raises(ValueError, match="sum"):
        F.ctc_loss(lp, gp.asarray([1, 2, 1], device=device), [4, 4], [2, 2])


# ---- AdaptiveLogSoftmaxWithLoss --------------------------------------------------------------
@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_matches_torch(device, head_bias):
    torch.manual_seed(11)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 7], div_value=2.0, head_bias=head_bias)
    gm = nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 7], div_value=2.0, head_bias=head_bias)
    _copy(tm, gm, device)
    x, target = torch.randn(6, 8), torch.tensor([0, 4, 11, 2, 7, 6])
    tx, gx = x.clone().requires_grad_(), _g(x, device, True)
    t, g = tm(tx, target), gm(gx, _g(target, device))
    _close(g.output, t.output)
    _close(g.loss, t.loss)
    (t.loss + (t.output * torch.arange(6.0)).sum()).backward()
    (g.loss + gp.sum(g.output * gp.arange(6.0, device=device))).backward()
    _close(gx.grad, tx.grad)
    tp = dict(tm.named_parameters())
    for name, p in gm.named_parameters():
        _close(p.grad, tp[name].grad)
    _close(gm.log_prob(_g(x, device)), tm.log_prob(x))
    np.testing.assert_array_equal(gm.predict(_g(x, device)).numpy(), tm.predict(x).numpy())
    # unbatched
    t1 = tm(x[0], target[0])
    g1 = gm(_g(x[0], device), _g(target[0], device))
    assert g1.output.shape == ()
    _close(g1.output, t1.output)


def test_adaptive_log_softmax_errors(device):
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 10, [5, 3])
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 10, [])
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 10, [10])
    m = nn.AdaptiveLogSoftmaxWithLoss(4, 10, [5]).to(device)
    with pytest.raises(ValueError, match="batch"):
        m(gp.ones((3, 4), device=device), gp.asarray([1, 2], device=device))
    with pytest.raises(ValueError, match="multi-target"):
        m(gp.ones((3, 4), device=device), gp.asarray([[1]], device=device))


# ---- fractional_max_pool2d / FractionalMaxPool2d ---------------------------------------------
@pytest.mark.parametrize("kw", [dict(output_size=(4, 5)), dict(output_ratio=(0.5, 0.7)),
                                dict(output_size=1)])
def test_fractional_max_pool2d_matches_torch(device, kw):
    torch.manual_seed(12)
    x, samples = torch.randn(2, 3, 9, 8), torch.rand(2, 3, 2)
    tx, gx = x.clone().requires_grad_(), _g(x, device, True)
    t, ti = tF.fractional_max_pool2d(tx, (3, 2), return_indices=True, _random_samples=samples,
                                     **kw)
    g, gi = F.fractional_max_pool2d(gx, (3, 2), return_indices=True,
                                    _random_samples=_g(samples, device), **kw)
    _close(g, t)
    np.testing.assert_array_equal(gi.numpy(), ti.numpy())
    _backward_both(t, g, device)
    _close(gx.grad, tx.grad)


def test_fractional_max_pool2d_module_and_random(device):
    torch.manual_seed(13)
    x, samples = torch.randn(3, 7, 7), torch.rand(1, 3, 2)
    tm = torch.nn.FractionalMaxPool2d(2, output_size=3, _random_samples=samples)
    gm = nn.FractionalMaxPool2d(2, output_size=3, _random_samples=_g(samples, device))
    _close(gm(_g(x, device)), tm(x))
    assert "_random_samples" in gm.state_dict()
    # drawn samples: each output is the maximum of a 2x2 window of the input
    xg = _g(x, device)
    y, idx = nn.FractionalMaxPool2d(2, output_ratio=0.5, return_indices=True)(xg)
    assert y.shape == (3, 3, 3)
    flat = x.reshape(3, -1).numpy()
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy().reshape(3, -1), 1),
                                  y.numpy().reshape(3, -1))


def test_fractional_max_pool2d_errors(device):
    x = gp.ones((1, 1, 5, 5), device=device)
    with pytest.raises(ValueError, match="exactly one"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(ValueError, match="do not fit"):
        F.fractional_max_pool2d(x, 3, output_size=4)
    with pytest.raises(ValueError, match="output_ratio"):
        F.fractional_max_pool2d(x, 2, output_ratio=1.5)
    with pytest.raises(ValueError, match="_random_samples"):
        F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=gp.ones((1, 2, 2)))
    with pytest.raises(ValueError, match="either"):
        nn.FractionalMaxPool2d(2)


# ---- LazyLinear / LazyConv1d / LazyConv2d -----------------------------------------------------
@pytest.mark.parametrize("name,args,shape", [
    ("LazyLinear", (4,), (2, 5)),
    ("LazyConv1d", (4, 3), (2, 3, 7)),
    ("LazyConv2d", (4, 3), (2, 3, 6, 5)),
    ("LazyConv2d", (4, 3), (3, 6, 5)),   # unbatched: channels from the first dimension
])
def test_lazy_layers_materialize_on_first_call(device, name, args, shape):
    kw = {} if name == "LazyLinear" else {"padding": 1, "groups": 1}
    gm = getattr(nn, name)(*args, **kw)
    tm = getattr(torch.nn, name)(*args, **kw)
    assert gm.has_uninitialized_params() and list(gm.parameters()) == []
    assert repr(gm) == repr(tm)
    torch.manual_seed(14)
    x = torch.randn(*shape)
    tx, gx = x.clone().requires_grad_(), _g(x, device, True)
    g = gm(gx)   # materializes with this input's sizes, on its device
    t = tm(tx)
    assert type(gm) is getattr(nn, name[4:]) and type(tm).__name__ == name[4:]
    assert repr(gm) == repr(tm)
    assert [tuple(p.shape) for p in gm.parameters()] == [tuple(p.shape) for p in tm.parameters()]
    assert all(p.device == device for p in gm.parameters())
    assert g.shape == tuple(t.shape)
    _copy(tm, gm, device)
    g = gm(gx)
    _close(g, t)
    _backward_both(t, g, device)
    _close(gx.grad, tx.grad)
    tp = dict(tm.named_parameters())
    for n, p in gm.named_parameters():
        _close(p.grad, tp[n].grad)


def test_lazy_errors(device):
    with pytest.raises(ValueError, match="LazyConv2d"):
        nn.LazyConv2d(4, 3)(gp.ones((2, 3), device=device))
    with pytest.raises(ValueError, match="groups"):
        nn.LazyConv2d(4, 3, groups=2)(gp.ones((1, 3, 5, 5), device=device))


# ---- no host reads: a traced replay with other offsets / lengths gives their results ---------
def test_offsets_and_lengths_are_not_read_back(device):
    import grilly

    rng = np.random.default_rng(0)
    w = _g(rng.standard_normal((10, 3)).astype(np.float32), device)
    bag = grilly.jit(lambda i, o: F.embedding_bag(i, w, o, mode="mean"))
    bag(_g([1, 2, 3, 4], device), _g([0, 2], device))
    i2, o2 = _g([5, 6, 7, 8], device), _g([0, 1], device)
    _close(bag(i2, o2), F.embedding_bag(i2, w, o2, mode="mean").numpy())
    lp = _g(np.log(rng.dirichlet(np.ones(4), (5, 2))).astype(np.float32), device)
    tg = _g([[1, 2], [3, 3]], device)
    ctc = grilly.jit(lambda lp, il, tl: F.ctc_loss(lp, tg, il, tl))
    ctc(lp, _g([5, 4], device), _g([2, 1], device))
    il, tl = _g([4, 5], device), _g([1, 2], device)
    _close(ctc(lp, il, tl), F.ctc_loss(lp, tg, il, tl).numpy())
