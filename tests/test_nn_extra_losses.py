"""torch.nn's losses grilly lacked (grilly/nn/extra_losses.py and their functional forms):
values and input gradients against torch (a test-only oracle) on every device, every reduction
and option, and the errors."""
import math
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RTOL, ATOL = 1e-4, 1e-5
REDUCTIONS = ["mean", "sum", "none"]


def _np(t):
    return t.detach().numpy()


def _g(x, device, requires_grad=False):
    a = gp.asarray(_np(x), device=device)
    if requires_grad:
        a.requires_grad_()
    return a


def _close(a, e, rtol=RTOL, atol=ATOL):
    assert_close(a, _np(e) if hasattr(e, "detach") else e, rtol=rtol, atol=atol)


def _against(device, tfn, gfn, args, grads, rtol=RTOL, atol=ATOL):
    """tfn(*args) and gfn(*the same as grilly arrays): the values, then the gradients of the
    arguments at the positions ``grads`` under a random cotangent."""
    targs = [a.clone().requires_grad_() if i in grads else a for i, a in enumerate(args)]
    gargs = [_g(a, device, i in grads) for i, a in enumerate(args)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # kl_div's reduction='mean' warning
        t = tfn(*targs)
    g = gfn(*gargs)
    assert tuple(g.shape) == tuple(t.shape)
    _close(g, t, rtol, atol)
    cot = torch.randn(t.shape)
    (t * cot).sum().backward()
    gp.sum(g * _g(cot, device)).backward()
    for i in grads:
        _close(gargs[i].grad, targs[i].grad, rtol, atol)


def _sign(*shape):
    return torch.where(torch.rand(*shape) < 0.5, -1.0, 1.0)


# ---- functional forms ------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(device, reduction, log_target):
    torch.manual_seed(0)
    x = torch.log_softmax(torch.randn(4, 5), 1)
    t = torch.softmax(torch.randn(4, 5), 1)
    if log_target:
        t = t.log()
    kw = dict(reduction=reduction, log_target=log_target)
    _against(device, lambda a, b: TF.kl_div(a, b, **kw), lambda a, b: F.kl_div(a, b, **kw),
             [x, t], (0, 1))


def test_kl_div_zero_target_counts_nothing(device):
    torch.manual_seed(1)
    x = torch.log_softmax(torch.randn(3, 4), 1)
    t = torch.softmax(torch.randn(3, 4), 1)
    t[0, 1] = 0.0
    t[2, 3] = 0.0
    _against(device, lambda a, b: TF.kl_div(a, b, reduction="batchmean"),
             lambda a, b: F.kl_div(a, b, reduction="batchmean"), [x, t], (0,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input,full", [(True, False), (True, True), (False, False),
                                            (False, True)])
def test_poisson_nll_loss(device, reduction, log_input, full):
    torch.manual_seed(2)
    x = torch.randn(4, 5) if log_input else torch.rand(4, 5) + 0.1
    t = torch.tensor([[0., 1., 2., 5., 0.5], [3., 0., 1., 7., 2.]]).repeat(2, 1)
    kw = dict(log_input=log_input, full=full, eps=1e-8, reduction=reduction)
    # (full: torch's target gradient is nan where a target is 0, from 0 * log(0) masked later)
    _against(device, lambda a, b: TF.poisson_nll_loss(a, b, **kw),
             lambda a, b: F.poisson_nll_loss(a, b, **kw), [x, t], (0,) if full else (0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("vshape", [(4, 3), (4,), (4, 1), (1, 3)])
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll_loss(device, reduction, vshape, full):
    torch.manual_seed(3)
    x, t = torch.randn(4, 3), torch.randn(4, 3)
    v = torch.rand(*vshape) + 0.2
    v.view(-1)[0] = 1e-8     # below eps: clamped, its gradient still passed (as torch)
    kw = dict(full=full, eps=1e-6, reduction=reduction)
    _against(device, lambda a, b, c: TF.gaussian_nll_loss(a, b, c, **kw),
             lambda a, b, c: F.gaussian_nll_loss(a, b, c, **kw), [x, t, v], (0, 1, 2),
             rtol=1e-4, atol=1e-4)


def test_gaussian_nll_loss_scalar_var(device):
    torch.manual_seed(4)
    x, t = torch.randn(5), torch.randn(5)
    _against(device, lambda a, b: TF.gaussian_nll_loss(a, b, 0.7, full=True),
             lambda a, b: F.gaussian_nll_loss(a, b, 0.7, full=True), [x, t], (0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_margin_ranking_loss(device, reduction, margin):
    torch.manual_seed(5)
    a, b, y = torch.randn(8), torch.randn(8), _sign(8)
    kw = dict(margin=margin, reduction=reduction)
    _against(device, lambda p, q, r: TF.margin_ranking_loss(p, q, r, **kw),
             lambda p, q, r: F.margin_ranking_loss(p, q, r, **kw), [a, b, y], (0, 1, 2))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [1.0, 0.4])
def test_hinge_embedding_loss(device, reduction, margin):
    torch.manual_seed(6)
    x, y = torch.randn(3, 5) * 2, _sign(3, 5)
    kw = dict(margin=margin, reduction=reduction)
    _against(device, lambda a, b: TF.hinge_embedding_loss(a, b, **kw),
             lambda a, b: F.hinge_embedding_loss(a, b, **kw), [x, y], (0,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.2])
@pytest.mark.parametrize("batched", [True, False])
def test_cosine_embedding_loss(device, reduction, margin, batched):
    torch.manual_seed(7)
    shape = (6, 5) if batched else (5,)
    a, b = torch.randn(*shape), torch.randn(*shape)
    y = _sign(6) if batched else torch.tensor(-1.0)
    if not batched:
        b = -0.5 * a + 0.3 * b    # a positive hinge for the -1 target
    kw = dict(margin=margin, reduction=reduction)
    _against(device, lambda p, q, r: TF.cosine_embedding_loss(p, q, r, **kw),
             lambda p, q, r: F.cosine_embedding_loss(p, q, r, **kw), [a, b, y], (0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_loss(device, reduction):
    torch.manual_seed(8)
    x, y = torch.randn(4, 5) * 3, _sign(4, 5)
    _against(device, lambda a, b: TF.soft_margin_loss(a, b, reduction=reduction),
             lambda a, b: F.soft_margin_loss(a, b, reduction=reduction), [x, y], (0,))


def test_soft_margin_loss_is_finite_where_torchs_form_overflows(device):
    x = gp.asarray(np.array([-200.0, 200.0], np.float32), device=device)
    y = gp.asarray(np.array([1.0, 1.0], np.float32), device=device)
    assert_close(F.soft_margin_loss(x, y, reduction="none"), np.array([200.0, 0.0], np.float32))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_soft_margin_loss(device, reduction, weighted):
    torch.manual_seed(9)
    x = torch.randn(4, 5) * 2
    t = (torch.rand(4, 5) < 0.4).float()
    w = torch.rand(5) + 0.5 if weighted else None
    tfn = lambda a, b: TF.multilabel_soft_margin_loss(  # noqa: E731
        a, b, weight=w, reduction=reduction)
    gfn = lambda a, b: F.multilabel_soft_margin_loss(  # noqa: E731
        a, b, weight=None if w is None else _g(w, device), reduction=reduction)
    _against(device, tfn, gfn, [x, t], (0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,margin", [(1, 1.0), (2, 1.0), (1, 0.5), (2, 1.7)])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss(device, reduction, p, margin, weighted):
    torch.manual_seed(10)
    x = torch.randn(6, 5)
    y = torch.tensor([0, 4, 2, 2, 1, 3])
    w = torch.rand(5) + 0.5 if weighted else None
    tfn = lambda a: TF.multi_margin_loss(a, y, p=p, margin=margin, weight=w,  # noqa: E731
                                         reduction=reduction)
    gfn = lambda a: F.multi_margin_loss(  # noqa: E731
        a, _g(y, device), p=p, margin=margin, weight=None if w is None else _g(w, device),
        reduction=reduction)
    _against(device, tfn, gfn, [x], (0,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("tshape", [(), (1,)])
def test_multi_margin_loss_one_sample(device, reduction, tshape):
    torch.manual_seed(11)
    x, y = torch.randn(5), torch.tensor(3).reshape(tshape)
    _against(device, lambda a: TF.multi_margin_loss(a, y, reduction=reduction),
             lambda a: F.multi_margin_loss(a, _g(y, device), reduction=reduction), [x], (0,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(device, reduction):
    torch.manual_seed(12)
    x = torch.randn(5, 5)
    # ended by -1 (what follows is ignored), a duplicate, every class a target, no target
    y = torch.tensor([[3, 0, -1, 1, 2], [1, -1, 4, 4, 4], [2, 2, -1, 0, 0],
                      [0, 1, 2, 3, 4], [-1, 1, 2, 3, 4]])
    _against(device, lambda a: TF.multilabel_margin_loss(a, y, reduction=reduction),
             lambda a: F.multilabel_margin_loss(a, _g(y, device), reduction=reduction),
             [x], (0,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_one_sample(device, reduction):
    torch.manual_seed(13)
    x, y = torch.randn(4), torch.tensor([2, 0, -1, 3])
    _against(device, lambda a: TF.multilabel_margin_loss(a, y, reduction=reduction),
             lambda a: F.multilabel_margin_loss(a, _g(y, device), reduction=reduction),
             [x], (0,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [2, 1, 3, math.inf])
@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_loss(device, reduction, p, swap):
    torch.manual_seed(14)
    a, pos, neg = torch.randn(6, 4), torch.randn(6, 4), torch.randn(6, 4)
    kw = dict(margin=1.5, p=p, eps=1e-6, swap=swap, reduction=reduction)
    _against(device, lambda *t: TF.triplet_margin_loss(*t, **kw),
             lambda *g: F.triplet_margin_loss(*g, **kw), [a, pos, neg], (0, 1, 2))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("custom", [False, True])
@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance_loss(device, reduction, custom, swap):
    torch.manual_seed(15)
    a, pos, neg = torch.randn(6, 4), torch.randn(6, 4), torch.randn(6, 4)
    td = (lambda u, v: (u - v).abs().sum(-1)) if custom else None
    gd = (lambda u, v: gp.sum(gp.abs(u - v), axis=-1)) if custom else None
    tfn = lambda *t: TF.triplet_margin_with_distance_loss(  # noqa: E731
        *t, distance_function=td, margin=2.0, swap=swap, reduction=reduction)
    gfn = lambda *g: F.triplet_margin_with_distance_loss(  # noqa: E731
        *g, distance_function=gd, margin=2.0, swap=swap, reduction=reduction)
    _against(device, tfn, gfn, [a, pos, neg], (0, 1, 2))


# ---- modules ---------------------------------------------------------------------------------
def _sample(name):
    """(constructor kwargs, forward args, the positions differentiated) for a loss module."""
    torch.manual_seed(16)
    x = torch.randn(4, 5)
    if name == "KLDivLoss":
        return ({"reduction": "batchmean", "log_target": True},
                [torch.log_softmax(x, 1), torch.log_softmax(torch.randn(4, 5), 1)], (0, 1))
    if name == "PoissonNLLLoss":
        return ({"log_input": False, "full": True, "eps": 1e-6},
                [torch.rand(4, 5) + 0.1, torch.randint(0, 6, (4, 5)).float()], (0,))
    if name == "GaussianNLLLoss":
        return {"full": True, "reduction": "sum"}, [x, torch.randn(4, 5), torch.rand(4, 1) + .1], \
            (0, 1, 2)
    if name in ("MarginRankingLoss", "CosineEmbeddingLoss"):
        return {"margin": 0.1}, [x, torch.randn(4, 5), _sign(4, 5) if name[0] == "M" else
                                 _sign(4)], (0, 1)
    if name == "HingeEmbeddingLoss":
        return {"margin": 0.7, "reduction": "none"}, [x, _sign(4, 5)], (0,)
    if name == "SoftMarginLoss":
        return {"reduction": "sum"}, [x, _sign(4, 5)], (0,)
    if name == "MultiLabelSoftMarginLoss":
        return {"weight": torch.rand(5) + 0.5}, [x, (torch.rand(4, 5) < 0.5).float()], (0,)
    if name == "MultiMarginLoss":
        return ({"p": 2, "margin": 0.8, "weight": torch.rand(5) + 0.5},
                [x, torch.tensor([1, 0, 4, 2])], (0,))
    if name == "MultiLabelMarginLoss":
        return {}, [x, torch.tensor([[1, 3, -1, 0, 0], [4, -1, 0, 0, 0], [0, 1, 2, -1, 3],
                                     [2, -1, 1, 1, 1]])], (0,)
    if name == "TripletMarginLoss":
        return {"margin": 0.5, "p": 1.0, "swap": True}, [x, torch.randn(4, 5),
                                                         torch.randn(4, 5)], (0, 1, 2)
    if name == "TripletMarginWithDistanceLoss":
        return {"margin": 0.5, "swap": True, "reduction": "none"}, \
            [x, torch.randn(4, 5), torch.randn(4, 5)], (0, 1, 2)
    raise AssertionError(name)


@pytest.mark.parametrize("name", nn.extra_losses.__all__)
def test_module_matches_torch(device, name):
    kw, args, grads = _sample(name)
    tmod = getattr(torch.nn, name)(**kw)
    gmod = getattr(nn, name)(**{k: _g(v, device) if hasattr(v, "detach") else v
                                for k, v in kw.items()})
    if name != "TripletMarginWithDistanceLoss":   # torch's holds a PairwiseDistance child
        assert repr(gmod) == repr(tmod)
    assert sorted(gmod.state_dict()) == sorted(tmod.state_dict())
    _against(device, tmod, gmod, args, grads)


def test_weighted_module_state_dict_round_trip(device):
    w = torch.rand(5) + 0.5
    gmod = nn.MultiMarginLoss(weight=_g(torch.ones(5), device))
    gmod.load_state_dict({k: _np(v) for k, v in torch.nn.MultiMarginLoss(weight=w)
                          .state_dict().items()})
    _close(gmod.weight, w)
    x, y = torch.randn(3, 5), torch.tensor([0, 2, 4])
    _close(gmod(_g(x, device), _g(y, device)), TF.multi_margin_loss(x, y, weight=w))


def test_modules_are_exported():
    for name in nn.extra_losses.__all__:
        assert getattr(nn, name) is getattr(nn.extra_losses, name)
        assert name in nn.__all__
    for name in ("kl_div", "poisson_nll_loss", "gaussian_nll_loss", "margin_ranking_loss",
                 "hinge_embedding_loss", "cosine_embedding_loss", "soft_margin_loss",
                 "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
                 "triplet_margin_loss", "triplet_margin_with_distance_loss"):
        assert name in F.__all__ and callable(getattr(F, name))


# ---- errors ----------------------------------------------------------------------------------
def test_errors_name_the_op_and_argument(device):
    x = gp.asarray(np.zeros((3, 4), np.float32), device=device)
    y = gp.asarray(np.array([0, 1, 2]), device=device)
    with pytest.raises(ValueError, match="kl_div: reduction"):
        F.kl_div(x, x, reduction="avg")
    with pytest.raises(ValueError, match="KLDivLoss: reduction"):
        nn.KLDivLoss(reduction="avg")
    with pytest.raises(ValueError, match="MSELoss|SoftMarginLoss"):
        nn.SoftMarginLoss(reduction="batchmean")
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        F.multi_margin_loss(x, y, p=3)
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="weight must be one-dimensional"):
        F.multi_margin_loss(x, y, weight=x)
    with pytest.raises(TypeError, match="multi_margin_loss: target must be .*integer"):
        F.multi_margin_loss(x, gp.astype(y, gp.float32))
    with pytest.raises(ValueError, match="multi_margin_loss: target of shape"):
        F.multi_margin_loss(x, y[:2])
    with pytest.raises(ValueError, match="multilabel_margin_loss: target shape"):
        F.multilabel_margin_loss(x, y)
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        F.triplet_margin_loss(x, x, x, margin=0.0)
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=-1.0)
    with pytest.raises(ValueError, match="same number of dimensions"):
        F.triplet_margin_loss(x, x, x[0])
    with pytest.raises(TypeError, match="distance_function must be callable"):
        F.triplet_margin_with_distance_loss(x, x, x, distance_function=3)
    with pytest.raises(ValueError, match="gaussian_nll_loss: var of shape"):
        F.gaussian_nll_loss(x, x, gp.ones((2, 4), device=device))
    with pytest.raises(ValueError, match="gaussian_nll_loss: var has a negative entry"):
        F.gaussian_nll_loss(x, x, -1.0)
    with pytest.raises(ValueError, match="cosine_embedding_loss: a 1-D target needs 2-D"):
        F.cosine_embedding_loss(x[0], x[0], gp.ones((3,), device=device))
    with pytest.raises(ValueError, match="margin_ranking_loss: input1, input2 and target"):
        F.margin_ranking_loss(x, x, gp.ones((3,), device=device))
    with pytest.raises(TypeError, match="poisson_nll_loss: input must have a real floating"):
        F.poisson_nll_loss(y, y)
