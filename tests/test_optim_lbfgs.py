"""optim.LBFGS, optim.Adafactor and lr_scheduler.CyclicLR against torch.optim (a test-only
oracle): parameter trajectories and returned losses on every device, lr and momentum
sequences, state_dict round trips."""
import copy

import numpy as np
import pytest

import grilly as gp
from grilly import optim
from grilly.testing import assert_close

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


def _g(x, device, requires_grad=False):
    a = gp.asarray(_np(x), device=device)
    if requires_grad:
        a.requires_grad_()
    return a


# ---- LBFGS -----------------------------------------------------------------------------------
def _problem(kind, seed=0):
    """(data, initial parameters, loss of (backend, data, params)) for a small problem, in
    float64: LBFGS's line searches and curvature pairs amplify rounding, and a GPU's float32
    (fused multiply-adds) moved the third step by 2e-3 from torch's CPU one."""
    rng = np.random.default_rng(seed)
    if kind == "lstsq":
        a = rng.standard_normal((24, 4)).astype(np.float64)
        b = rng.standard_normal(24).astype(np.float64)
        params = [np.zeros(4, np.float64), np.zeros(1, np.float64)]

        def loss(lib, data, ps):
            a, b = data
            r = a @ ps[0] + ps[1] - b
            return (r * r).mean() if lib is torch else gp.mean(r * r)
    else:   # logistic regression
        a = rng.standard_normal((32, 3)).astype(np.float64)
        b = (a @ np.array([1.5, -2.0, 0.5], np.float64) + 0.3
             + 0.8 * rng.standard_normal(32) > 0).astype(np.float64)
        params = [0.1 * rng.standard_normal(3).astype(np.float64), np.zeros(1, np.float64)]

        def loss(lib, data, ps):
            a, b = data
            z = a @ ps[0] + ps[1]
            if lib is torch:
                return torch.nn.functional.binary_cross_entropy_with_logits(z, b)
            from grilly.nn import functional as F
            return F.binary_cross_entropy_with_logits(z, b)
    return (a, b), params, loss


def _runs(device, kind, steps, make_t, make_g):
    """Both optimizers run ``steps`` steps on the problem: the returned losses and the
    parameters after each step, compared."""
    data, init, loss = _problem(kind)
    tdata = [torch.from_numpy(d) for d in data]
    gdata = [gp.asarray(d, device=device) for d in data]
    tp = [torch.from_numpy(p.copy()).requires_grad_() for p in init]
    gps = [gp.asarray(p, device=device) for p in init]
    for p in gps:
        p.requires_grad_()
    topt, gopt = make_t(tp), make_g(gps)

    def tclosure():
        topt.zero_grad()
        v = loss(torch, tdata, tp)
        v.backward()
        return v

    def gclosure():
        gopt.zero_grad()
        v = loss(gp, gdata, gps)
        v.backward()
        return v

    for _ in range(steps):
        tl, gl = topt.step(tclosure), gopt.step(gclosure)
        assert_close(gl, _np(tl), rtol=1e-4, atol=1e-6)
        for a, e in zip(gps, tp):
            assert_close(a, _np(e), rtol=1e-4, atol=1e-5)
    return topt, gopt, gps, gclosure


LBFGS_CASES = [
    ("lstsq", dict(lr=0.5, max_iter=4, history_size=3)),
    ("lstsq", dict(line_search_fn="strong_wolfe", max_iter=3)),
    ("logistic", dict(lr=0.8, max_iter=5)),
    ("logistic", dict(line_search_fn="strong_wolfe", max_iter=4, history_size=2)),
    ("logistic", dict(line_search_fn="strong_wolfe")),   # runs to convergence
]


@pytest.mark.parametrize("kind,kw", LBFGS_CASES)
def test_lbfgs_trajectory_matches_torch(device, kind, kw):
    topt, gopt, _, _ = _runs(device, kind, 3, lambda p: torch.optim.LBFGS(p, **kw),
                             lambda p: optim.LBFGS(p, **kw))
    ts, gs = topt.state[topt.param_groups[0]["params"][0]], gopt.state_of(gopt._params[0])
    assert gs["n_iter"] == ts["n_iter"] and gs["func_evals"] == ts["func_evals"]
    assert len(gs["old_dirs"]) == len(ts["old_dirs"])


def test_lbfgs_state_dict_round_trip(device):
    kw = dict(line_search_fn="strong_wolfe", max_iter=3, history_size=4)
    topt, gopt, gps, gclosure = _runs(device, "logistic", 2, lambda p: torch.optim.LBFGS(p, **kw),
                                      lambda p: optim.LBFGS(p, **kw))
    sd = gopt.state_dict()
    assert sd["param_groups"][0]["line_search_fn"] == "strong_wolfe"
    # a copy of the parameters and a fresh optimizer loading the state continue identically
    gps2 = [gp.asarray(p, copy=True) for p in gps]
    for p in gps2:
        p.requires_grad_()
    gopt2 = optim.LBFGS(gps2, **kw)
    gopt2.load_state_dict(copy.deepcopy(sd))
    # torch's state loads too (its tensors become grilly arrays)
    gopt3 = optim.LBFGS([gp.asarray(p, copy=True) for p in gps], **kw)
    gopt3.load_state_dict(topt.state_dict())
    st3 = gopt3.state_of(gopt3._params[0])
    assert isinstance(st3["d"], gp.Array) and all(isinstance(v, gp.Array) for v in st3["old_dirs"])

    def closure2():
        gopt2.zero_grad()
        data, _, loss = _problem("logistic")
        v = loss(gp, [gp.asarray(d, device=device) for d in data], gps2)
        v.backward()
        return v

    tl = topt.step(lambda: (topt.zero_grad(), _tloss(topt))[1])
    assert_close(gopt.step(gclosure), _np(tl), rtol=1e-4, atol=1e-6)
    assert_close(gopt2.step(closure2), _np(tl), rtol=1e-4, atol=1e-6)
    for a, b in zip(gps2, gps):
        assert_close(a, b.numpy(), rtol=1e-6, atol=1e-7)


def _tloss(topt):
    data, _, loss = _problem("logistic")
    v = loss(torch, [torch.from_numpy(d) for d in data], topt.param_groups[0]["params"])
    v.backward()
    return v


def test_lbfgs_stops_at_once_when_optimal(device):
    p = gp.zeros((3,), device=device)
    p.requires_grad_()
    opt = optim.LBFGS([p])

    def closure():
        opt.zero_grad()
        v = gp.sum(p * p)
        v.backward()
        return v

    assert float(opt.step(closure)) == 0.0
    assert opt.state_of(p)["n_iter"] == 0 and opt.state_of(p)["func_evals"] == 1


def test_lbfgs_errors():
    p = gp.zeros((3,))
    with pytest.raises(ValueError, match="line_search_fn"):
        optim.LBFGS([p], line_search_fn="armijo")
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [p]}, {"params": [gp.zeros((2,))]}])
    with pytest.raises(ValueError, match="lr must be >= 0"):
        optim.LBFGS([p], lr=-1.0)
    with pytest.raises(TypeError, match="closure"):
        optim.LBFGS([p]).step()


# ---- Adafactor -------------------------------------------------------------------------------
ADAFACTOR_CASES = [
    {},
    dict(lr=0.05, weight_decay=0.1),
    dict(lr=0.02, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.2, maximize=True),
]


@pytest.mark.parametrize("kw", ADAFACTOR_CASES)
def test_adafactor_trajectory_matches_torch(device, kw):
    if not hasattr(torch.optim, "Adafactor"):
        pytest.skip("this torch has no optim.Adafactor")
    torch.manual_seed(0)
    shapes = [(4, 3), (2, 3, 5), (6,), ()]
    tp = [torch.randn(s, requires_grad=True) for s in shapes]
    gps = [_g(t, device, True) for t in tp]
    topt, gopt = torch.optim.Adafactor(tp, **kw), optim.Adafactor(gps, **kw)
    for step in range(5):
        grads = [torch.randn(s) * (1 + step) for s in shapes]
        for t, g, gr in zip(tp, gps, grads):
            t.grad, g.grad = gr.clone(), _g(gr, device)
        topt.step()
        gopt.step()
        for a, e in zip(gps, tp):
            assert_close(a, _np(e), rtol=2e-5, atol=2e-6)
    # state as torch lays it out, and a round trip continuing identically
    ts, gs = topt.state_dict()["state"], gopt.state_dict()["state"]
    for i in ts:
        assert sorted(ts[i]) == sorted(gs[i])
        assert float(gs[i]["step"]) == float(ts[i]["step"])
        for k in ts[i]:
            if k != "step":
                assert_close(gs[i][k], _np(ts[i][k]), rtol=2e-5, atol=1e-7)
    gps2 = [_g(t, device, True) for t in tp]
    gopt2 = optim.Adafactor(gps2, **kw)
    gopt2.load_state_dict(topt.state_dict())    # from torch's state_dict
    grads = [torch.randn(s) for s in shapes]
    for t, g, gr in zip(tp, gps2, grads):
        t.grad, g.grad = gr.clone(), _g(gr, device)
    topt.step()
    gopt2.step()
    for a, e in zip(gps2, tp):
        assert_close(a, _np(e), rtol=2e-5, atol=2e-6)


def test_adafactor_errors():
    p = [gp.zeros((3,))]
    for kw, msg in [(dict(lr=-1.0), "lr"), (dict(beta2_decay=0.5), "beta2_decay"),
                    (dict(eps=(None, -1.0)), "eps"), (dict(d=0.5), "clipping threshold"),
                    (dict(weight_decay=-1.0), "weight_decay")]:
        with pytest.raises(ValueError, match=msg):
            optim.Adafactor(p, **kw)


# ---- CyclicLR --------------------------------------------------------------------------------
CYCLIC_CASES = [
    ("SGD", dict(momentum=0.9), dict(base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("SGD", dict(momentum=0.9), dict(base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=3,
                                     step_size_down=5, mode="triangular2")),
    ("Adam", {}, dict(base_lr=0.001, max_lr=0.01, step_size_up=2, mode="exp_range",
                      gamma=0.9, base_momentum=0.7, max_momentum=0.95)),
    ("SGD", {}, dict(base_lr=0.1, max_lr=1.0, step_size_up=3, cycle_momentum=False,
                     scale_fn=lambda x: 0.5 ** x, scale_mode="iterations")),
]


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step")
@pytest.mark.parametrize("opt,okw,kw", CYCLIC_CASES)
def test_cyclic_lr_matches_torch(opt, okw, kw):
    def build(lib, module):
        ps = [module.zeros(2), module.zeros(3)] if lib == "t" else [gp.zeros((2,)),
                                                                     gp.zeros((3,))]
        if lib == "t":
            for p in ps:
                p.requires_grad_()
        o = getattr(torch.optim if lib == "t" else optim, opt)(
            [{"params": [ps[0]]}, {"params": [ps[1]]}], lr=0.5, **okw)
        sched = (torch.optim.lr_scheduler if lib == "t" else optim.lr_scheduler).CyclicLR(o, **kw)
        return o, sched

    to, ts = build("t", torch)
    go, gs = build("g", gp)
    key = "betas" if opt == "Adam" else "momentum"
    for _ in range(17):
        assert gs.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        for a, b in zip(go.param_groups, to.param_groups):
            assert a["lr"] == pytest.approx(b["lr"], rel=1e-12)
            if kw.get("cycle_momentum", True):
                assert a[key] == pytest.approx(b[key], rel=1e-12)
        ts.step()
        gs.step()
    # state_dict round trip: a new scheduler picks up where this one is
    sd = gs.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == ts.last_epoch
    go2, gs2 = build("g", gp)
    gs2.load_state_dict(sd)
    for _ in range(3):
        ts.step()
        gs2.step()
        assert gs2.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)


def test_cyclic_lr_errors():
    with pytest.raises(ValueError, match="cycle_momentum"):
        optim.lr_scheduler.CyclicLR(optim.Adagrad([gp.zeros((2,))]), 0.1, 1.0)
    with pytest.raises(ValueError, match="mode"):
        optim.lr_scheduler.CyclicLR(optim.SGD([gp.zeros((2,))], momentum=0.9), 0.1, 1.0,
                                    mode="sawtooth")
    with pytest.raises(ValueError, match="base_lr"):
        optim.lr_scheduler.CyclicLR(optim.SGD([gp.zeros((2,))], momentum=0.9), [0.1, 0.2], 1.0)
