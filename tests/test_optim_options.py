"""grilly.optim's options against torch.optim's (an option-parity sweep; each test failed
before): torch's implementation flags (foreach/fused/capturable accepted, differentiable=True
refused), Adam's decoupled_weight_decay, state made when amsgrad/centered/momentum is switched
on mid-training (it was silently ignored), ReduceLROnPlateau after add_param_group, and the
optimizers that were missing (NAdam, RAdam, Adamax, ASGD, Rprop, Adadelta) step for step with
torch, with gradients that are None, zero or sparse on some steps."""
import copy

import numpy as np
import pytest

import grilly as gp
from grilly import optim
from grilly.optim import lr_scheduler as sched

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(7)
SHAPES = [(5,), (3, 4), (2,)]
P0 = [_rng.standard_normal(s) for s in SHAPES]


def _grads(t: int) -> list:
    """Step t's gradients: parameter 1 has none every third step, parameter 2 none on the first
    two; all zero at step 4; mostly zeros (sparse) on even steps."""
    r = np.random.default_rng(50 + t)
    out = []
    for i, s in enumerate(SHAPES):
        g = r.standard_normal(s)
        if t % 2 == 0:
            g = g * (r.random(s) < 0.3)
        if t == 4:
            g = np.zeros(s)
        if (t % 3 == 1 and i == 1) or (t < 2 and i == 2):
            g = None
        out.append(g)
    return out


def _pair(dtype, device):
    ps = [gp.asarray(p.astype(dtype), device=device) for p in P0]
    tps = [torch.tensor(p.astype(dtype), requires_grad=True) for p in P0]
    return ps, tps


def _set_grads(ps, tps, t: int) -> None:
    for p, tp, g in zip(ps, tps, _grads(t)):
        p.grad = None if g is None else gp.asarray(g.astype(np.asarray(p).dtype), device=p.device)
        tp.grad = None if g is None else torch.tensor(g.astype(np.asarray(p).dtype))


def _tol(dtype) -> dict:
    return dict(rtol=2e-6, atol=1e-7) if dtype == "float32" else dict(rtol=1e-11, atol=1e-13)


def _assert_params(ps, tps, dtype, what="") -> None:
    for i, (p, tp) in enumerate(zip(ps, tps)):
        np.testing.assert_allclose(np.asarray(p), tp.detach().numpy(), **_tol(dtype),
                                   err_msg=f"{what} param {i}")


def _assert_state(opt, topt, dtype) -> None:
    """The same state keys per parameter as torch's, the arrays and scalars equal (torch's
    float32 0-d tensors as numbers: step, NAdam's mu_product, ASGD's eta and mu)."""
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["state"].keys() == tsd["state"].keys()
    for i, ts in tsd["state"].items():
        s = sd["state"][i]
        assert s.keys() == ts.keys(), i
        for k, v in ts.items():
            if v.ndim:
                np.testing.assert_allclose(np.asarray(s[k]), v.numpy(), **_tol(dtype),
                                           err_msg=k)
            else:
                assert float(s[k]) == float(v), k
    assert set(sd["param_groups"][0]) == set(tsd["param_groups"][0])


NEW = [
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, betas=(0.5, 0.8), eps=1e-3, weight_decay=0.1, momentum_decay=0.01,
                   maximize=True)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.8), eps=1e-3, weight_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.6), weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, betas=(0.5, 0.8), eps=1e-3, weight_decay=0.1, maximize=True)),
    ("ASGD", dict(lr=0.01)),
    ("ASGD", dict(lr=0.05, lambd=0.1, alpha=0.5, t0=3, weight_decay=0.1, maximize=True)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.7), step_sizes=(1e-3, 0.2), maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.7, eps=1e-3, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, amsgrad=True)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", NEW, ids=[f"{n}-{i}" for i, (n, _) in enumerate(NEW)])
def test_optimizer_matches_torch(device, name, kw, dtype):
    """Ten steps: parameters after each and the state after all (torch's keys and values)."""
    ps, tps = _pair(dtype, device)
    opt = getattr(optim, name)(ps, **kw)
    topt = getattr(torch.optim, name)(tps, **kw)
    for t in range(10):
        _set_grads(ps, tps, t)
        opt.step()
        topt.step()
        _assert_params(ps, tps, dtype, f"{name} step {t}")
        assert all(p.dtype == getattr(gp, dtype) for p in ps)
    _assert_state(opt, topt, dtype)


GROUPED = [
    ("NAdam", dict(), dict(lr=0.05, betas=(0.7, 0.8), weight_decay=0.1),
     dict(lr=0.02, betas=(0.5, 0.9), momentum_decay=0.01)),
    ("RAdam", dict(), dict(lr=0.05, decoupled_weight_decay=True, weight_decay=0.1),
     dict(lr=0.02, betas=(0.5, 0.7), eps=1e-3)),
    ("Adamax", dict(), dict(lr=0.05, betas=(0.7, 0.8)), dict(lr=0.02, weight_decay=0.1)),
    ("ASGD", dict(t0=2), dict(lr=0.05, lambd=0.1), dict(lr=0.02, alpha=0.5)),
    ("Rprop", dict(), dict(lr=0.05, etas=(0.4, 1.5)), dict(step_sizes=(1e-2, 0.1))),
    ("Adadelta", dict(), dict(lr=0.5, rho=0.8), dict(lr=0.2, rho=0.5, weight_decay=0.1)),
]


@pytest.mark.parametrize("name,g0,g1,edit", GROUPED, ids=[g[0] for g in GROUPED])
def test_groups_edits_and_added_group(device, name, g0, g1, edit):
    """Two groups with their own options, a third added mid-training, and group 1's options
    edited between steps (as a scheduler does), float64."""
    ps, tps = _pair("float64", device)
    opt = getattr(optim, name)([{"params": [ps[0]], **g0}, {"params": [ps[1]], **g1}], lr=0.1)
    topt = getattr(torch.optim, name)([{"params": [tps[0]], **g0},
                                       {"params": [tps[1]], **g1}], lr=0.1)
    for t in range(8):
        if t == 3:
            opt.add_param_group({"params": [ps[2]], "lr": 0.03})
            topt.add_param_group({"params": [tps[2]], "lr": 0.03})
        if t == 5:
            opt.param_groups[1].update(edit)
            topt.param_groups[1].update(edit)
        n = 3 if t >= 3 else 2
        _set_grads(ps[:n], tps[:n], t)
        opt.step()
        topt.step()
        _assert_params(ps, tps, "float64", f"{name} step {t}")


@pytest.mark.parametrize("name,kw", [("NAdam", dict(weight_decay=0.1)), ("RAdam", dict()),
                                     ("Adamax", dict()), ("ASGD", dict(t0=2)),
                                     ("Rprop", dict()), ("Adadelta", dict()),
                                     ("Adam", dict(decoupled_weight_decay=True,
                                                   weight_decay=0.1))])
def test_state_dict_both_ways_mid_training(device, name, kw):
    """After 4 steps, grilly's state loaded into torch (arrays as tensors) and torch's into
    grilly: all four runs continue on the same trajectory."""
    ps, tps = _pair("float64", device)
    opt = getattr(optim, name)(ps, lr=0.02, **kw)
    topt = getattr(torch.optim, name)(tps, lr=0.02, **kw)
    for t in range(4):
        _set_grads(ps, tps, t)
        opt.step()
        topt.step()
    sd = opt.state_dict()
    as_torch = copy.deepcopy(sd)
    as_torch["state"] = {i: {k: torch.tensor(np.array(v)) if isinstance(v, gp.Array) else v
                             for k, v in s.items()} for i, s in sd["state"].items()}
    tps2 = [torch.tensor(np.asarray(p), requires_grad=True) for p in ps]
    topt2 = getattr(torch.optim, name)(tps2, lr=0.02, **kw)
    topt2.load_state_dict(as_torch)
    ps2 = [gp.asarray(tp.detach().numpy(), device=device, copy=True) for tp in tps]
    opt2 = getattr(optim, name)(ps2, lr=0.02, **kw)
    opt2.load_state_dict(topt.state_dict())
    for t in range(4, 9):
        _set_grads(ps, tps, t)
        _set_grads(ps2, tps2, t)
        for o in (opt, topt, opt2, topt2):
            o.step()
    _assert_params(ps, tps, "float64", "grilly")
    _assert_params(ps2, tps, "float64", "torch -> grilly")
    _assert_params(ps, tps2, "float64", "grilly -> torch")


FLAGGED = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adamax", "ASGD",
           "Rprop", "Adadelta"]


@pytest.mark.parametrize("name", FLAGGED)
def test_torch_implementation_flags(name):
    """foreach/fused/capturable (where torch's optimizer has them) are accepted, kept in the
    groups under torch's keys and change nothing; differentiable=True is refused by name; an
    option torch's optimizer lacks is a TypeError in both (they were all TypeErrors)."""
    tcls = getattr(torch.optim, name)
    params = __import__("inspect").signature(tcls).parameters
    flags = {k: True for k in ("foreach", "fused", "capturable") if k in params}
    ps, tps = _pair("float64", "cpu")
    ref, _ = _pair("float64", "cpu")
    runs = [getattr(optim, name)(ref, lr=0.01)]
    for k in flags:
        ps_k, _ = _pair("float64", "cpu")
        runs.append((getattr(optim, name)(ps_k, lr=0.01, **{k: True}), ps_k))
    topt = tcls(tps, lr=0.01)
    assert set(runs[0].param_groups[0]) == set(topt.param_groups[0])
    for t in range(4):
        _set_grads(ref, tps, t)
        runs[0].step()
        for o, p in runs[1:]:
            _set_grads(p, tps, t)
            o.step()
    for (o, p), k in zip(runs[1:], flags):
        assert o.param_groups[0][k] is True
        for a, b in zip(p, ref):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=k)
    with pytest.raises(NotImplementedError, match=f"{name}: differentiable"):
        getattr(optim, name)(_pair("float64", "cpu")[0], lr=0.01, differentiable=True)
    if "fused" in params:
        with pytest.raises(RuntimeError, match="fused"):
            getattr(optim, name)(_pair("float64", "cpu")[0], lr=0.01, fused=True, foreach=True)
    for k in {"foreach", "fused", "capturable"} - set(params):
        with pytest.raises(TypeError, match=k):
            getattr(optim, name)(_pair("float64", "cpu")[0], **{k: True})


def test_adam_decoupled_weight_decay_is_adamw(device):
    """Adam(decoupled_weight_decay=True) is AdamW (it was a TypeError); AdamW stays decoupled
    after loading groups saved without it, as torch's."""
    ps, tps = _pair("float64", device)
    qs, _ = _pair("float64", device)
    opt = optim.Adam(ps, lr=0.05, weight_decay=0.2, decoupled_weight_decay=True)
    ref = optim.AdamW(qs, lr=0.05, weight_decay=0.2)
    topt = torch.optim.Adam(tps, lr=0.05, weight_decay=0.2, decoupled_weight_decay=True)
    assert opt.param_groups[0]["decoupled_weight_decay"] is True
    assert ref.param_groups[0]["decoupled_weight_decay"] is True
    sd = optim.Adam(_pair("float64", device)[0], lr=0.05, weight_decay=0.2).state_dict()
    ref.load_state_dict(sd)   # decoupled_weight_decay False in the saved groups
    for t in range(6):
        _set_grads(ps, tps, t)
        _set_grads(qs, tps, t)
        opt.step()
        ref.step()
        topt.step()
    _assert_params(ps, tps, "float64")
    _assert_params(qs, tps, "float64", "AdamW")


@pytest.mark.parametrize("name,key,value,state_key", [
    ("Adam", "amsgrad", True, "max_exp_avg_sq"),
    ("AdamW", "amsgrad", True, "max_exp_avg_sq"),
    ("RMSprop", "centered", True, "grad_avg"),
    ("RMSprop", "momentum", 0.5, "momentum_buffer"),
])
def test_option_switched_on_mid_training(device, name, key, value, state_key):
    """An option switched on in param_groups after some steps takes effect, its state starting
    at zeros (as at step 1); it was silently ignored (amsgrad, centered) or raised from the
    kernel (momentum). torch raises KeyError there: its run gets the zeros by hand."""
    ps, tps = _pair("float64", device)
    opt = getattr(optim, name)(ps, lr=0.02)
    topt = getattr(torch.optim, name)(tps, lr=0.02)
    for t in range(8):
        if t == 3:
            opt.param_groups[0][key] = value
            topt.param_groups[0][key] = value
            for tp in tps:
                if topt.state[tp]:
                    topt.state[tp][state_key] = torch.zeros_like(tp)
        _set_grads(ps, tps, t)
        opt.step()
        topt.step()
        _assert_params(ps, tps, "float64", f"step {t}")
    _assert_state(opt, topt, "float64")


def test_lr_array_must_have_one_element():
    with pytest.raises(ValueError, match="Adam: an lr given as an array must have one element"):
        optim.Adam([gp.zeros(2)], lr=gp.asarray([0.1, 0.2]))


@pytest.mark.parametrize("name", ["NAdam", "Rprop", "Adam"])
def test_lr_as_array_with_scheduler(device, name):
    """lr a 0-d array (torch: a 0-d tensor), scheduled by StepLR."""
    ps, tps = _pair("float64", device)
    opt = getattr(optim, name)(ps, lr=gp.asarray(0.01, device=device))
    topt = getattr(torch.optim, name)(tps, lr=torch.tensor(0.01, dtype=torch.float64))
    s, ts = sched.StepLR(opt, 2, 0.5), torch.optim.lr_scheduler.StepLR(topt, 2, 0.5)
    for t in range(6):
        _set_grads(ps, tps, t)
        opt.step()
        topt.step()
        s.step()
        ts.step()
    _assert_params(ps, tps, "float64")


def _plateau_after_added_group(optim_mod, sched_mod, make, min_lr):
    o = optim_mod.SGD([make()], lr=0.1)
    s = sched_mod.ReduceLROnPlateau(o, patience=0, min_lr=min_lr)
    o.add_param_group({"params": [make()], "lr": 0.5})
    for _ in range(3):
        s.step(1.0)
    return [g["lr"] for g in o.param_groups], set(s.state_dict())


def test_plateau_after_add_param_group():
    """A group added after ReduceLROnPlateau was made is reduced too (zip left it out) with a
    single min_lr, and is a RuntimeError with a per-group list, as torch; the state_dict has
    torch's keys."""
    lrs, keys = _plateau_after_added_group(optim, sched, lambda: gp.zeros(1), 0.01)
    tlrs, tkeys = _plateau_after_added_group(
        torch.optim, torch.optim.lr_scheduler, lambda: torch.zeros(1, requires_grad=True), 0.01)
    assert lrs == tlrs and lrs[1] < 0.5
    assert keys == tkeys
    with pytest.raises(RuntimeError, match="ReduceLROnPlateau.*param groups"):
        _plateau_after_added_group(optim, sched, lambda: gp.zeros(1), [0.01])
    with pytest.raises(RuntimeError, match="param groups"):
        _plateau_after_added_group(torch.optim, torch.optim.lr_scheduler,
                                   lambda: torch.zeros(1, requires_grad=True), [0.01])
