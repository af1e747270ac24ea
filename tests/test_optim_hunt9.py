"""A PyTorch training-loop user (hunt 9), against torch as the oracle: ``nn.utils.prune``
(l1_unstructured, random_unstructured, ln_structured, random_structured, global_unstructured,
custom_from_mask, identity, remove, is_pruned; iterative pruning through a PruningContainer)
and ``optim.SparseAdam`` were missing. New-ground checks that held (every optimizer's options
with state_dict round trips both ways, every scheduler, clipping, fusion) are not repeated."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn, optim
from grilly.nn.utils import prune

torch = pytest.importorskip("torch")
import torch.nn.utils.prune as TP  # noqa: E402

_rng = np.random.default_rng(9)
W = _rng.standard_normal((4, 3))
B = _rng.standard_normal(4)
X = _rng.standard_normal((2, 3))


def _np(a) -> np.ndarray:
    return np.asarray(a.to_device("cpu")) if isinstance(a, gp.Array) else a.detach().numpy()


def _linears(device):
    m = nn.Linear(3, 4, dtype=gp.float64).to(device)
    m.load_state_dict({"weight": gp.asarray(W), "bias": gp.asarray(B)})
    t = torch.nn.Linear(3, 4).double()
    t.load_state_dict({"weight": torch.tensor(W), "bias": torch.tensor(B)})
    return m, t


def _same(m, t, name="weight") -> None:
    np.testing.assert_array_equal(_np(getattr(m, name + "_mask")), _np(getattr(t, name + "_mask")))
    np.testing.assert_allclose(_np(getattr(m, name)), _np(getattr(t, name)), rtol=1e-15)


# ---- prune ------------------------------------------------------------------------------------
def test_iterative_pruning_matches_torch(device):
    """l1 (fraction, then a count of what is left), then L2 rows, then L1 columns: masks,
    the reparametrization's names, forward and the gradient of weight_orig, then remove."""
    m, t = _linears(device)
    for f in (lambda P, mod: P.l1_unstructured(mod, "weight", 0.3),
              lambda P, mod: P.l1_unstructured(mod, "weight", 3),
              lambda P, mod: P.ln_structured(mod, "weight", 1, n=2, dim=0),
              lambda P, mod: P.ln_structured(mod, "weight", 0.34, n=1, dim=-1)):
        assert f(prune, m) is m
        f(TP, t)
        _same(m, t)
    assert isinstance(m.__dict__["_forward_pre_hooks"], dict)
    assert [k for k, _ in m.named_parameters()] == [k for k, _ in t.named_parameters()]
    assert [k for k, _ in m.named_buffers()] == [k for k, _ in t.named_buffers()]
    assert list(m.state_dict()) == list(t.state_dict())
    assert prune.is_pruned(m) and len(m.__dict__["_forward_pre_hooks"]) == 1
    y, ty = m(gp.asarray(X, device=device)), t(torch.tensor(X))
    np.testing.assert_allclose(_np(y), _np(ty), rtol=1e-13)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(_np(m.weight_orig.grad), _np(t.weight_orig.grad), rtol=1e-13)
    orig = m.weight_orig
    assert prune.remove(m, "weight") is m
    TP.remove(t, "weight")
    assert m.weight is orig and not prune.is_pruned(m)
    assert [k for k, _ in m.named_parameters()] == [k for k, _ in t.named_parameters()]
    np.testing.assert_allclose(_np(m.weight), _np(t.weight), rtol=1e-15)


def test_conv_structured_importance_and_global(device):
    c = nn.Conv2d(2, 3, 2, dtype=gp.float64).to(device)
    tc = torch.nn.Conv2d(2, 3, 2).double()
    tc.load_state_dict({k: torch.tensor(_np(v)) for k, v in c.state_dict().items()})
    prune.ln_structured(c, "weight", 0.5, n=float("inf"), dim=1)
    TP.ln_structured(tc, "weight", 0.5, n=float("inf"), dim=1)
    _same(c, tc)
    m, t = _linears(device)
    s = _rng.standard_normal((4, 3))
    prune.l1_unstructured(m, "weight", 5, importance_scores=gp.asarray(s, device=device))
    TP.l1_unstructured(t, "weight", 5, importance_scores=torch.tensor(s))
    _same(m, t)
    # global: one ranking over an already pruned weight (its pruned entries stay), a second
    # layer's weight and its bias
    m2 = nn.Linear(4, 2, dtype=gp.float64).to(device)
    t2 = torch.nn.Linear(4, 2).double()
    t2.load_state_dict({k: torch.tensor(_np(v)) for k, v in m2.state_dict().items()})
    prune.global_unstructured([(m, "weight"), (m2, "weight"), (m2, "bias")],
                              prune.L1Unstructured, amount=0.4)
    TP.global_unstructured([(t, "weight"), (t2, "weight"), (t2, "bias")], TP.L1Unstructured,
                           amount=0.4)
    _same(m, t)
    _same(m2, t2)
    _same(m2, t2, "bias")


def test_random_pruning_and_custom_mask(device):
    """Random masks cannot be torch's; what they prune can: how many, among what is left,
    whole channels; custom_from_mask and identity as torch's."""
    nn.manual_seed(0)
    m, t = _linears(device)
    prune.random_unstructured(m, "weight", 0.5)
    first = _np(m.weight_mask)
    assert (first == 0).sum() == 6
    prune.random_unstructured(m, "weight", 2)
    second = _np(m.weight_mask)
    assert (second == 0).sum() == 8 and np.all(second <= first)
    prune.random_structured(m, "weight", 1, dim=0)
    rows = _np(m.weight_mask).sum(axis=1)
    assert (rows == 0).sum() >= 1 and np.all(_np(m.weight_mask) <= second)
    mask = np.array([1, 0, 1, 0])
    prune.custom_from_mask(m, "bias", gp.asarray(mask, device=device))
    TP.custom_from_mask(t, "bias", torch.tensor(mask))
    _same(m, t, "bias")
    prune.identity(m, "bias")
    TP.identity(t, "bias")
    _same(m, t, "bias")


def test_pruned_layer_trains_as_torch(device):
    """An optimizer given parameters() after pruning steps weight_orig; the pruned entries of
    weight stay zero."""
    m, t = _linears(device)
    prune.l1_unstructured(m, "weight", 4)
    TP.l1_unstructured(t, "weight", 4)
    opt = optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(t.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        opt.zero_grad()
        topt.zero_grad()
        (m(gp.asarray(X, device=device)) ** 2).sum().backward()
        (t(torch.tensor(X)) ** 2).sum().backward()
        opt.step()
        topt.step()
    m(gp.asarray(X, device=device))
    t(torch.tensor(X))
    np.testing.assert_allclose(_np(m.weight_orig), _np(t.weight_orig), rtol=1e-12)
    _same(m, t)
    assert np.all(_np(m.weight)[_np(m.weight_mask) == 0] == 0)


def test_prune_errors_leave_the_module_as_it_was():
    m = nn.Linear(3, 4)
    bad = [(lambda: prune.l1_unstructured(m, "weight", 1.5), ValueError, "amount"),
           (lambda: prune.l1_unstructured(m, "weight", 13), ValueError, "amount"),
           (lambda: prune.l1_unstructured(m, "weight", "a"), TypeError, "amount"),
           (lambda: prune.l1_unstructured(m, "nope", 1), ValueError, "nope"),
           (lambda: prune.ln_structured(m, "bias", 1, n=2, dim=0), ValueError, "dimensions"),
           (lambda: prune.ln_structured(m, "weight", 1, n=2, dim=2), IndexError, "dim"),
           (lambda: prune.ln_structured(m, "weight", 1, n="nuc", dim=0), ValueError, "n must"),
           (lambda: prune.l1_unstructured(m, "weight", 1, importance_scores=gp.zeros(3)),
            ValueError, "importance_scores"),
           (lambda: prune.remove(m, "weight"), ValueError, "pruned before"),
           (lambda: prune.global_unstructured([(m, "weight")], prune.LnStructured, amount=1,
                                              n=2, dim=0), TypeError, "unstructured"),
           (lambda: prune.global_unstructured(m, prune.L1Unstructured, amount=1), TypeError,
            "iterable")]
    for f, exc, match in bad:
        with pytest.raises(exc, match=match):
            f()
        assert [k for k, _ in m.named_parameters()] == ["weight", "bias"]
        assert not prune.is_pruned(m)


# ---- SparseAdam ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(lr=0.1), dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3,
                                                    maximize=True)])
def test_sparse_adam_matches_torch(device, kw):
    """A dense gradient's zero rows are the rows a sparse (embedding) gradient leaves out:
    they keep their moments and values, as torch's with the gradient made sparse."""
    rng = np.random.default_rng(90)
    p0 = rng.standard_normal((5, 3))
    p, tp = gp.asarray(p0, device=device), torch.tensor(p0, requires_grad=True)
    opt, topt = optim.SparseAdam([p], **kw), torch.optim.SparseAdam([tp], **kw)
    for _ in range(5):
        g = rng.standard_normal((5, 3))
        g[rng.integers(0, 5, 2)] = 0
        p.grad, tp.grad = gp.asarray(g, device=device), torch.tensor(g).to_sparse()
        opt.step()
        topt.step()
        np.testing.assert_allclose(_np(p), _np(tp), rtol=1e-13, atol=1e-15)
    for k in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_allclose(_np(opt.state[p][k]), _np(topt.state[tp][k]), rtol=1e-13,
                                   atol=1e-15)
    assert opt.state[p]["step"] == topt.state[tp]["step"]


def test_sparse_adam_errors():
    p = gp.zeros(3)
    for kw, match in [(dict(lr=0.0), "lr"), (dict(eps=0.0), "eps"), (dict(betas=(1.0, 0.9)),
                                                                        "betas")]:
        with pytest.raises(ValueError, match=match):
            optim.SparseAdam([p], **kw)
    with pytest.raises(TypeError):
        optim.SparseAdam([p], weight_decay=0.1)
