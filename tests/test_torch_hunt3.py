"""A PyTorch user's training script ported to grilly (schedulers, optimizers, module utilities,
losses), each against torch 2.13 on every device; each test failed before its fix: step(epoch)
and ReduceLROnPlateau as an LRScheduler, optimizers built from named_parameters and their step
hooks, state_dict's detached arrays (an EMA updated in place), the checks of loss options, CTC
lengths and targets on another device than log_probs, BatchNorm's repr."""
import copy
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly import nn, optim
from grilly.nn import functional as F
from grilly.optim import lr_scheduler as GS

torch = pytest.importorskip("torch")
TS = torch.optim.lr_scheduler

_rng = np.random.default_rng(11)
X = _rng.standard_normal((6, 4)).astype(np.float32)


def _params(device, lib):
    """Two parameters (one per param group) in torch or grilly, the same values."""
    vals = [np.ones(2, np.float32), np.full(3, 0.5, np.float32)]
    if lib == "t":
        return [torch.nn.Parameter(torch.tensor(v)) for v in vals]
    ps = [gp.asarray(v, device=device) for v in vals]
    for p in ps:
        p.requires_grad = True
    return ps


def _sgd(device, lib):
    ps = _params(device, lib)
    opt_cls = torch.optim.SGD if lib == "t" else optim.SGD
    return opt_cls([{"params": [ps[0]], "lr": 0.1}, {"params": [ps[1]], "lr": 0.05}], momentum=0.9)


def _models(device):
    # (no BatchNorm right after a Linear: that bias's gradient is 0 up to rounding, which Adam
    # would blow up to steps of either sign)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.BatchNorm1d(5),
                             torch.nn.Linear(5, 2))
    gm = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.BatchNorm1d(5), nn.Linear(5, 2)).to(device)
    gm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return tm, gm


def _close(t, g, tol=1e-6):
    np.testing.assert_allclose(np.asarray(g), t.detach().numpy(), rtol=tol, atol=tol)


# ---- schedulers -----------------------------------------------------------------------------
@pytest.mark.parametrize("name, kw", [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=4, eta_min=0.001)),
    ("LinearLR", dict(start_factor=0.25, total_iters=4)),
    ("LambdaLR", dict(lr_lambda=lambda e: 0.9 ** e)),
])
def test_scheduler_step_with_epoch_as_torch(device, name, kw):
    # torch's deprecated step(epoch) jumps to that epoch (closed form where there is one)
    # with a UserWarning; grilly's step() took no argument (TypeError)
    res = {}
    for lib in "tg":
        o = _sgd(device, lib)
        s = getattr(TS if lib == "t" else GS, name)(o, **kw)
        lrs = []
        for e in (5, 6, 2):
            o.step()
            with pytest.warns(UserWarning, match="epoch"):
                s.step(e)
            lrs.append(list(s.get_last_lr()) + [g["lr"] for g in o.param_groups] + [s.last_epoch])
        o.step()
        s.step()
        lrs.append(list(s.get_last_lr()) + [s.last_epoch])
        res[lib] = lrs
    for a, b in zip(res["t"], res["g"]):
        np.testing.assert_allclose(b, a, rtol=1e-12)


def test_plateau_step_with_epoch_and_is_an_lr_scheduler(device):
    res = {}
    for lib in "tg":
        o = _sgd(device, lib)
        M = TS if lib == "t" else GS
        s = M.ReduceLROnPlateau(o, patience=1)
        assert isinstance(s, M.LRScheduler)
        out = []
        for e, m in [(3, 1.0), (4, 1.0), (10, 2.0), (11, 3.0)]:
            with pytest.warns(UserWarning, match="epoch"):
                s.step(m, e)
            out.append(list(s.get_last_lr()) + [s.last_epoch])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            s.step(5.0)
        out.append(list(s.get_last_lr()) + [s.last_epoch])
        res[lib] = out
    np.testing.assert_allclose(res["g"], res["t"], rtol=1e-12)


def test_old_lrscheduler_name_subclassed(device):
    # torch keeps _LRScheduler for schedulers written against torch < 2.0
    res = {}
    for lib in "tg":
        M = TS if lib == "t" else GS

        class Warmup(M._LRScheduler):
            def __init__(self, o, n, last_epoch=-1):
                self.n = n
                super().__init__(o, last_epoch)

            def get_lr(self):
                return [b * min(1.0, (self.last_epoch + 1) / self.n) for b in self.base_lrs]

        o = _sgd(device, lib)
        s = Warmup(o, 3)
        out = [list(s.get_last_lr())]
        for _ in range(4):
            o.step()
            s.step()
            out.append(list(s.get_last_lr()))
        res[lib] = out
    np.testing.assert_allclose(res["g"], res["t"], rtol=1e-12)


# ---- optimizers -----------------------------------------------------------------------------
def _train(model, opt, x, steps=4):
    for _ in range(steps):
        opt.zero_grad()
        y = model(x)
        (y * y).mean().backward()
        opt.step()


@pytest.mark.parametrize("name, kw", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                      ("AdamW", dict(lr=0.01, amsgrad=True))])
def test_optimizer_from_named_parameters(device, name, kw):
    # torch 2.6+: (name, param) pairs; the names kept in each group's 'param_names' and in
    # state_dict (grilly raised TypeError: parameters must be grilly Arrays, got tuple)
    tm, gm = _models(device)
    to = getattr(torch.optim, name)(tm.named_parameters(), **kw)
    go = getattr(optim, name)(gm.named_parameters(), **kw)
    assert go.param_groups[0]["param_names"] == to.param_groups[0]["param_names"]
    _train(tm, to, torch.tensor(X))
    _train(gm, go, gp.asarray(X, device=device))
    for (k, t), g in zip(tm.named_parameters(), gm.parameters()):
        _close(t, g, 2e-5)
    assert (go.state_dict()["param_groups"][0]["param_names"]
            == to.state_dict()["param_groups"][0]["param_names"])
    # groups of named parameters, and add_param_group of more
    to2 = getattr(torch.optim, name)([{"params": tm[0].named_parameters()}], **kw)
    go2 = getattr(optim, name)([{"params": gm[0].named_parameters()}], **kw)
    to2.add_param_group({"params": tm[3].named_parameters(), "lr": 0.02})
    go2.add_param_group({"params": gm[3].named_parameters(), "lr": 0.02})
    assert [g["param_names"] for g in go2.param_groups] == [g["param_names"]
                                                            for g in to2.param_groups]


def test_optimizer_named_and_unnamed_groups_refused(device):
    tm, gm = _models(device)
    for lib, m, opt_cls in (("t", tm, torch.optim.SGD), ("g", gm, optim.SGD)):
        o = opt_cls(m[0].named_parameters(), lr=0.1)
        with pytest.raises(ValueError, match="names"):
            o.add_param_group({"params": list(m[3].parameters())})
        with pytest.raises(ValueError, match="names|name all"):
            opt_cls([("w", next(iter(m[0].parameters()))), next(iter(m[3].parameters()))], lr=0.1)
        with pytest.raises(TypeError):
            opt_cls([{"params": set(m.parameters())}], lr=0.1)


def test_optimizer_step_hooks(device):
    # register_step_pre_hook / register_step_post_hook (missing: AttributeError); a pre-hook
    # may replace the step's (args, kwargs); removed hooks stop; LBFGS's own step is hooked
    res = {}
    tm, gm = _models(device)
    for lib in "tg":
        m = tm if lib == "t" else gm
        x = torch.tensor(X) if lib == "t" else gp.asarray(X, device=device)
        mod = torch.optim if lib == "t" else optim
        o = mod.SGD(m.parameters(), lr=0.1)
        log = []
        h1 = o.register_step_pre_hook(lambda opt, a, k: log.append(("pre", opt is o is a[0],
                                                                     len(a), k)))
        h2 = o.register_step_post_hook(lambda opt, a, k: log.append(("post", len(a), k)))
        _train(m, o, x, 2)
        h1.remove()
        _train(m, o, x, 1)
        h2.remove()
        _train(m, o, x, 1)
        lb = mod.LBFGS(m.parameters(), max_iter=2)
        calls = []

        def closure(m=m, lb=lb, x=x):
            lb.zero_grad()
            loss = (m(x) ** 2).mean()
            loss.backward()
            return loss

        # the pre-hook swaps in the closure: step() is called without one (args hold the
        # optimizer, as torch's)
        lb.register_step_pre_hook(lambda opt, a, k: ((opt,), {"closure": closure}))
        lb.register_step_post_hook(lambda opt, a, k: calls.append(sorted(k)))
        lb.step()
        res[lib] = (log, calls, [p.detach().numpy() if lib == "t" else np.asarray(p)
                                 for p in m.parameters()])
    assert res["g"][0] == res["t"][0] and res["g"][1] == res["t"][1]
    for a, b in zip(res["t"][2], res["g"][2]):
        np.testing.assert_allclose(b, a, rtol=2e-5, atol=2e-5)


def test_step_hooks_are_not_pickled(device):
    import pickle

    tm, gm = _models(device)
    o = optim.Adam(gm.parameters(), lr=0.01)
    o.register_step_post_hook(lambda opt, a, k: None)
    _train(gm, o, gp.asarray(X, device=device), 1)
    o2 = pickle.loads(pickle.dumps(o))
    assert not o2._optimizer_step_post_hooks
    assert copy.deepcopy(o).state_dict()["state"][0]["step"] == 1


# ---- module utilities -----------------------------------------------------------------------
def test_state_dict_is_detached_as_torch(device):
    # torch's state_dict holds detached tensors sharing memory: an EMA updated in place through
    # it needs no no_grad (grilly's held the parameters: RuntimeError, a leaf in an in-place op)
    tm, gm = _models(device)
    te, ge = copy.deepcopy(tm), copy.deepcopy(gm)
    for lib, m, e in (("t", tm, te), ("g", gm, ge)):
        sd, esd = m.state_dict(), e.state_dict()
        for k, v in esd.items():
            if (v.dtype.is_floating_point if lib == "t" else v.dtype == gp.float32):
                v.mul_(0.9).add_(sd[k], alpha=0.1)
        for k in sd:
            assert sd[k].requires_grad is False
    for (k, t), g in zip(te.state_dict().items(), ge.state_dict().values()):
        _close(t, g)
    # the EMA model's parameters were written (shared memory), are still parameters
    assert ge[0].weight.requires_grad and nn.is_parameter(ge[0].weight)
    kv = gm.state_dict(keep_vars=True)
    tkv = tm.state_dict(keep_vars=True)
    assert (kv["0.weight"] is gm[0].weight) == (tkv["0.weight"] is tm[0].weight) is True
    assert list(kv) == list(tkv) == list(gm.state_dict(prefix=""))
    # and a training step after loading back still works
    gm.load_state_dict(ge.state_dict())
    _train(gm, optim.SGD(gm.parameters(), lr=0.1), gp.asarray(X, device=device), 1)


def test_batchnorm_repr_as_torch():
    try:
        new = "bias=" in repr(torch.nn.BatchNorm2d(3, bias=False))
    except TypeError:
        new = False
    if not new:
        pytest.skip("this torch's BatchNorm repr predates its bias= field (grilly follows 2.13)")
    for kw in ({}, dict(affine=False), dict(bias=False), dict(momentum=None)):
        assert repr(nn.BatchNorm2d(3, **kw)) == repr(torch.nn.BatchNorm2d(3, **kw))


# ---- losses ---------------------------------------------------------------------------------
def _both_raise(tf, gf, exc, match):
    """torch raises for the call (any error); grilly raises ``exc`` naming the op."""
    with pytest.raises(Exception):
        tf()
    with pytest.raises(exc, match=match):
        gf()


def test_loss_option_checks(device):
    x = _rng.standard_normal((4, 3)).astype(np.float32)
    tx, gx = torch.tensor(x), gp.asarray(x, device=device)
    idx = np.array([0, 1, 2, 0])
    ti, gi = torch.tensor(idx), gp.asarray(idx, device=device)
    w5 = np.ones(5, np.float32)
    _both_raise(lambda: torch.nn.functional.cross_entropy(tx, ti, weight=torch.tensor(w5)),
                lambda: F.cross_entropy(gx, gi, weight=gp.asarray(w5, device=device)),
                ValueError, "cross_entropy: weight must hold one value per class")
    _both_raise(lambda: torch.nn.NLLLoss(weight=torch.tensor(w5))(tx, ti),
                lambda: nn.NLLLoss(weight=gp.asarray(w5, device=device))(gx, gi),
                ValueError, "nll_loss: weight")
    fi = idx.astype(np.float32)
    _both_raise(lambda: torch.nn.functional.cross_entropy(tx, torch.tensor(fi)),
                lambda: F.cross_entropy(gx, gp.asarray(fi, device=device)),
                TypeError, "cross_entropy: .*class indices, which must be integers")
    _both_raise(lambda: torch.nn.CrossEntropyLoss(ignore_index=1)(tx, tx.softmax(1)),
                lambda: nn.CrossEntropyLoss(ignore_index=1)(gx, F.softmax(gx, 1)),
                ValueError, "cross_entropy: ignore_index")
    _both_raise(lambda: torch.nn.HuberLoss(delta=0.0)(tx, tx * 2),
                lambda: nn.HuberLoss(delta=0.0)(gx, gx * 2), ValueError, "huber_loss: delta")
    _both_raise(lambda: torch.nn.SmoothL1Loss(beta=-1.0)(tx, tx * 2),
                lambda: nn.SmoothL1Loss(beta=-1.0)(gx, gx * 2), ValueError, "smooth_l1_loss: beta")
    y3 = np.ones(3, np.float32)
    _both_raise(lambda: torch.nn.CosineEmbeddingLoss()(tx, tx, torch.tensor(y3)),
                lambda: nn.CosineEmbeddingLoss()(gx, gx, gp.asarray(y3, device=device)),
                ValueError, "cosine_embedding_loss: target of shape")


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_loss_options_still_match_torch(device, reduction):
    # the new checks leave the accepted forms alone: probabilities with the default
    # ignore_index, beta 0, a target of one label broadcast over the pairs
    x = _rng.standard_normal((4, 3)).astype(np.float32)
    p = np.abs(_rng.standard_normal((4, 3))).astype(np.float32)
    p /= p.sum(1, keepdims=True)
    tx, gx = torch.tensor(x, requires_grad=True), gp.asarray(x, device=device)
    gx.requires_grad = True
    pairs = [
        (torch.nn.functional.cross_entropy(tx, torch.tensor(p), reduction=reduction,
                                           label_smoothing=0.1),
         F.cross_entropy(gx, gp.asarray(p, device=device), reduction=reduction,
                         label_smoothing=0.1)),
        (torch.nn.functional.smooth_l1_loss(tx, torch.tensor(p), reduction=reduction, beta=0.0),
         F.smooth_l1_loss(gx, gp.asarray(p, device=device), reduction=reduction, beta=0.0)),
        (torch.nn.functional.cosine_embedding_loss(tx, torch.tensor(p), torch.tensor([-1.0]),
                                                   reduction=reduction, margin=-0.5),
         F.cosine_embedding_loss(gx, gp.asarray(p, device=device),
                                 gp.asarray(np.array([-1.0], np.float32), device=device),
                                 reduction=reduction, margin=-0.5)),
    ]
    for t, g in pairs:
        _close(t, g, 1e-5)
    sum(t.sum() for t, _ in pairs).backward()
    gsum = None
    for _, g in pairs:
        gsum = gp.sum(g) if gsum is None else gsum + gp.sum(g)
    gsum.backward()
    _close(tx.grad, gx.grad, 1e-5)


@pytest.mark.parametrize("padded", [True, False])
def test_ctc_lengths_and_targets_on_the_cpu(device, padded):
    # torch takes lengths (host data) and targets of another device than log_probs (it moves
    # them); grilly raised ValueError (arrays on different devices) for cpu lengths beside
    # Vulkan log_probs
    T, N, C = 6, 2, 4
    lp = _rng.standard_normal((T, N, C)).astype(np.float32)
    il, tl = np.array([6, 5]), np.array([3, 2])
    tg = _rng.integers(1, C, (N, 3))
    flat = np.concatenate([tg[0, :3], tg[1, :2]])
    tgt = tg if padded else flat
    t_lp = torch.tensor(lp, requires_grad=True)
    tv = torch.nn.CTCLoss()(t_lp.log_softmax(2), torch.tensor(tgt), torch.tensor(il),
                            torch.tensor(tl))
    tv.backward()
    g_lp = gp.asarray(lp, device=device)
    g_lp.requires_grad = True
    cpu = gp.backends.registry.device("cpu")
    gv = nn.CTCLoss()(F.log_softmax(g_lp, 2), gp.asarray(tgt, device=cpu),
                      gp.asarray(il, device=cpu), gp.asarray(tl, device=cpu))
    gv.backward()
    assert gv.device == g_lp.device
    _close(tv, gv, 2e-5)
    _close(t_lp.grad, g_lp.grad, 2e-5)
