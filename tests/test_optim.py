"""Optimizers and schedulers against torch.optim (trajectories and lr sequences)."""
import copy
import math


import ml_dtypes
import numpy as np
import pytest

import grilly as gp
from grilly import optim
from grilly.optim import lr_scheduler as sched

torch = pytest.importorskip("torch")

N = 7
_rng = np.random.default_rng(3)
W0 = _rng.standard_normal(N)
C = _rng.uniform(0.5, 2.0, N)
T = _rng.standard_normal(N)


def _grad_gp(w):
    return 2.0 * gp.asarray(C.astype(np.asarray(w).dtype), device=w.device) * (
        w - gp.asarray(T.astype(np.asarray(w).dtype), device=w.device)) + 0.4 * w * w * w


def _grad_torch(w):
    c, t = torch.tensor(C, dtype=w.dtype), torch.tensor(T, dtype=w.dtype)
    return 2.0 * c * (w - t) + 0.4 * w * w * w


CASES = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=False)),
    ("SGD", dict(lr=0.02, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.9), maximize=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1)),
]


@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-5), ("float64", 1e-10)])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_matches_torch(device, name, kw, dtype, rtol):
    w = gp.asarray(W0.astype(dtype), device=device)
    w.requires_grad = True
    tw = torch.tensor(W0.astype(dtype), requires_grad=True)
    opt = getattr(optim, name)([w], **kw)
    topt = getattr(torch.optim, name)([tw], **kw)
    for _ in range(20):
        w.grad = _grad_gp(w)
        tw.grad = _grad_torch(tw.detach())
        opt.step()
        topt.step()
    assert w.dtype == getattr(gp, dtype) and w.requires_grad and w.is_leaf
    np.testing.assert_allclose(np.asarray(w), tw.detach().numpy(), rtol=rtol, atol=rtol * 1e-2)


BF = ml_dtypes.bfloat16
# 64 bfloat16 parameters: enough values that a second rounding shows
W_BF, C_BF, T_BF = (_rng.standard_normal(64), _rng.uniform(0.5, 2.0, 64),
                    _rng.standard_normal(64))


def _bf_grad(w) -> np.ndarray:
    """The test gradient at ``w``'s values, in float64 rounded to bfloat16 (the same bits for
    grilly and torch from the same values)."""
    x = np.asarray(w).astype(np.float64)
    return (2.0 * C_BF * (x - T_BF) + 0.4 * x ** 3).astype(np.float32).astype(BF)


def _torch_bf(a) -> "torch.Tensor":
    """A grilly bfloat16 array (or ml_dtypes array) as a torch.bfloat16 tensor, bit for bit."""
    return torch.from_numpy(np.asarray(a).view(np.int16).copy()).view(torch.bfloat16)


def _bits(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().view(torch.int16).numpy().view(np.uint16)
    return np.asarray(a).view(np.uint16)


def _f32(a) -> np.ndarray:
    """bfloat16 bits (a grilly array, an ml_dtypes array or a torch tensor) as float32."""
    return (_bits(a).astype(np.uint32) << 16).view(np.float32)


def _assert_ulps(a, b, before, n: int, what: str) -> None:
    """The updates ``a`` and ``b`` (bfloat16) of the values ``before`` (float32, or None for
    zeros) within n bfloat16 ulps of the largest of the values before, after and the change
    (where the change cancels the value, one rounding of torch's operands is many ulps of
    the result)."""
    x, y = _f32(a), _f32(b)
    o = np.zeros_like(x) if before is None else before
    scale = np.maximum.reduce([np.abs(x), np.abs(y), np.abs(o), np.abs(x - o), np.abs(y - o)])
    ulp = np.spacing(scale) * 2.0 ** 16
    assert np.all(np.abs(x - y) <= n * ulp), (what, x, y)


def _float32_reference(name, kw, w, state, g, device):
    """The float32 optimizer's step from ``w``'s values and ``state`` (widened), as arrays
    rounded to bfloat16: what a bfloat16 step computes in float32 and rounds once."""
    if not state and name == "Adagrad":   # its first state, as the bfloat16 step makes it
        state = {"step": 0, "sum": gp.full_like(w, kw.get("initial_accumulator_value", 0.0))}
    w32 = gp.astype(w.detach(), gp.float32)
    ref = getattr(optim, name)([w32], **kw)
    ref.state_of(w32).update({k: gp.astype(v, gp.float32) if isinstance(v, gp.Array) else v
                              for k, v in state.items()})
    w32.grad = gp.asarray(g.astype(np.float32), device=device)
    if name == "NLMS":
        ref.set_input(gp.asarray(C_BF.astype(np.float32), device=device))
    ref.step()
    st = ref.state_of(w32)
    return (np.asarray(w32).astype(BF),
            {k: np.asarray(v).astype(BF) for k, v in st.items() if isinstance(v, gp.Array)})


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_bfloat16_params_match_torch(device, name, kw):
    """bfloat16 parameters, as torch.optim takes them: each step computes in float32 and rounds
    once (the float32 optimizer's step from the same values, rounded: bit for bit) and is within
    2 bfloat16 ulps of torch.optim's bfloat16 step from the same parameter and state, the
    parameter and each state array (torch rounds after each op); the state stays bfloat16, as
    torch's does."""
    w = gp.asarray(W_BF.astype(np.float32).astype(BF), device=device)
    w.requires_grad = True
    opt = getattr(optim, name)([w], **kw)
    tw = torch.zeros(len(W_BF), dtype=torch.bfloat16, requires_grad=True)
    topt = getattr(torch.optim, name)([tw], **kw)
    for _ in range(6):
        g = _bf_grad(w)
        state = opt.state_of(w)
        ref_w, ref_state = _float32_reference(name, kw, w, state, g, device)
        before = {"param": _f32(w), **{k: _f32(v) for k, v in state.items()
                                       if isinstance(v, gp.Array)}}
        with torch.no_grad():   # torch from grilly's parameter and state
            tw.copy_(_torch_bf(w))
            for k, v in state.items():
                if isinstance(v, gp.Array):
                    topt.state[tw][k].copy_(_torch_bf(v))
        w.grad = gp.asarray(g, device=device)
        tw.grad = _torch_bf(g)
        opt.step()
        topt.step()
        assert w.dtype == gp.bfloat16
        assert np.array_equal(_bits(w), _bits(ref_w))
        _assert_ulps(w, tw, before["param"], 2, "param")
        arrays = {k: v for k, v in opt.state_of(w).items() if isinstance(v, gp.Array)}
        assert arrays.keys() == ref_state.keys()
        for k, v in arrays.items():
            assert v.dtype == gp.bfloat16, k
            assert np.array_equal(_bits(v), _bits(ref_state[k])), k
            _assert_ulps(v, topt.state[tw][k], before.get(k), 2, k)


@pytest.mark.parametrize("name,kw", [("NLMS", dict(lr=0.5)),
                                     ("NaturalGradient", dict(lr=0.05, weight_decay=0.01))])
def test_bfloat16_params_rounded_once(device, name, kw):
    """The optimizers torch lacks on bfloat16 parameters: float32 computation rounded once,
    bit for bit with the float32 optimizer's step from the same values; state in bfloat16."""
    w = gp.asarray(W_BF.astype(np.float32).astype(BF), device=device)
    w.requires_grad = True
    opt = getattr(optim, name)([w], **kw)
    for _ in range(4):
        g = _bf_grad(w)
        ref_w, ref_state = _float32_reference(name, kw, w, opt.state_of(w), g, device)
        w.grad = gp.asarray(g, device=device)
        if name == "NLMS":
            opt.set_input(gp.asarray(C_BF.astype(np.float32), device=device))
        opt.step()
        assert w.dtype == gp.bfloat16
        assert np.array_equal(_bits(w), _bits(ref_w))
        for k, v in ref_state.items():
            assert opt.state_of(w)[k].dtype == gp.bfloat16, k
            assert np.array_equal(_bits(opt.state_of(w)[k]), _bits(v)), k


def test_update_in_place_and_autograd_grads(device):
    w = gp.asarray(W0, device=device)
    w.requires_grad = True
    buf = w._buf
    opt = optim.Adam([w], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss = (w - 1.0) * (w - 1.0)
        loss.backward(gp.ones_like(loss))
        opt.step()
    assert w._buf is buf
    opt.zero_grad()
    assert w.grad is None
    w.grad = gp.ones_like(w)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(np.asarray(w.grad), np.zeros(N))


def test_state_dict_roundtrip(device):
    def run(n, opt=None, w=None):
        if w is None:
            w = gp.asarray(W0, device=device)
            w.requires_grad = True
            opt = optim.Adam([w], lr=0.05, amsgrad=True)
        for _ in range(n):
            w.grad = _grad_gp(w)
            opt.step()
        return w, opt
    w, opt = run(5)
    sd = opt.state_dict()
    assert sd["state"][0]["step"] == 5 and sd["param_groups"][0]["params"] == [0]
    w2 = gp.asarray(np.asarray(w), device=device)
    w2.requires_grad = True
    opt2 = optim.Adam([w2], lr=0.05, amsgrad=True)
    opt2.load_state_dict(sd)
    run(5, opt, w)
    run(5, opt2, w2)
    np.testing.assert_array_equal(np.asarray(w), np.asarray(w2))


def test_param_groups_and_errors(device):
    a = gp.asarray([1.0, 2.0], device=device)
    b = gp.asarray([3.0], device=device)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad, b.grad = gp.ones_like(a), gp.ones_like(b)
    opt.step()
    np.testing.assert_allclose(np.asarray(a), [0.9, 1.9])
    np.testing.assert_allclose(np.asarray(b), [2.5])
    with pytest.raises(ValueError, match="more than one group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="single Array"):
        optim.SGD(a)
    with pytest.raises(ValueError, match="nesterov"):
        optim.SGD([a], nesterov=True)
    with pytest.raises(TypeError, match="floating"):
        optim.SGD([gp.asarray([1, 2], device=device)])
    with pytest.raises(ValueError, match="lr"):
        optim.Adam([a], lr=-1.0)


def test_nlms_identifies_filter(device):
    rng = np.random.default_rng(0)
    h = np.array([0.5, -0.3, 0.2, 0.1])
    w = gp.zeros(4, dtype=gp.float64, device=device)
    w.requires_grad = True
    ref = np.zeros(4)
    opt = optim.NLMS([w], lr=0.5, eps=1e-6)
    for _ in range(200):
        x = rng.standard_normal(4)
        d = h @ x
        xa = gp.asarray(x, device=device)
        e = gp.asarray(d, device=device) - gp.sum(w * xa)
        loss = 0.5 * e * e
        loss.backward()
        opt.step(xa)
        opt.zero_grad()
        ref = ref + 0.5 * (d - ref @ x) * x / (1e-6 + x @ x)
    np.testing.assert_allclose(np.asarray(w), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(w), h, atol=1e-6)


def test_natural_gradient_formula(device):
    w = gp.asarray(W0, device=device)
    w.requires_grad = True
    opt = optim.NaturalGradient([w], lr=0.05, beta=0.9, damping=1e-3, weight_decay=0.01)
    ref, f = W0.copy(), np.zeros(N)
    for t in range(1, 21):
        w.grad = _grad_gp(w)
        opt.step()
        g = 2 * C * (ref - T) + 0.4 * ref ** 3 + 0.01 * ref
        f = 0.9 * f + 0.1 * g * g
        ref = ref - 0.05 * g / (f / (1 - 0.9 ** t) + 1e-3)
    np.testing.assert_allclose(np.asarray(w), ref, rtol=1e-10)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm(device, norm_type):
    ga, gb = np.array([3.0, -4.0]), np.array([[1.0, 2.0], [-2.0, 0.5]])
    a = gp.zeros(2, dtype=gp.float64, device=device)
    b = gp.zeros((2, 2), dtype=gp.float64, device=device)
    a.grad, b.grad = gp.asarray(ga, device=device), gp.asarray(gb, device=device)
    ta, tb = torch.zeros(2, dtype=torch.float64), torch.zeros(2, 2, dtype=torch.float64)
    ta.grad, tb.grad = torch.tensor(ga), torch.tensor(gb)
    n = optim.clip_grad_norm_([a, b], 1.5, norm_type)
    tn = torch.nn.utils.clip_grad_norm_([ta, tb], 1.5, norm_type)
    assert abs(float(n) - float(tn)) < 1e-12
    np.testing.assert_allclose(np.asarray(a.grad), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(b.grad), tb.grad.numpy(), rtol=1e-12)
    optim.clip_grad_value_([a], 0.1)
    assert np.max(np.abs(np.asarray(a.grad))) <= 0.1


def _lrs(make, make_t, steps=30, metric=None, opt_name="SGD", kw=None):
    kw = kw or dict(lr=0.1, momentum=0.9)
    w = gp.zeros(1)
    tw = torch.zeros(1, requires_grad=True)
    opt = getattr(optim, opt_name)([w], **kw)
    topt = getattr(torch.optim, opt_name)([tw], **kw)
    s, ts = make(opt), make_t(topt)
    got, want, mom, tmom = [], [], [], []
    for i in range(steps):
        opt.step()
        topt.step()
        if metric is None:
            s.step()
            ts.step()
        else:
            s.step(metric[i])
            ts.step(metric[i])
        got.append(s.get_last_lr()[0])
        want.append(ts.get_last_lr()[0])
        key = "betas" if opt_name != "SGD" else "momentum"
        mom.append(opt.param_groups[0][key])
        tmom.append(topt.param_groups[0][key])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert np.allclose(np.asarray(mom, dtype=float), np.asarray(tmom, dtype=float), rtol=1e-12)


def test_step_lr():
    _lrs(lambda o: sched.StepLR(o, 4, gamma=0.5),
         lambda o: torch.optim.lr_scheduler.StepLR(o, 4, gamma=0.5))


def test_cosine_annealing_lr():
    _lrs(lambda o: sched.CosineAnnealingLR(o, T_max=7, eta_min=0.01),
         lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=7, eta_min=0.01), 40)


@pytest.mark.parametrize("kw", [dict(), dict(anneal_strategy="linear", pct_start=0.4),
                                dict(three_phase=True)])
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_one_cycle_lr(kw, opt_name):
    okw = dict(lr=0.1, momentum=0.9) if opt_name == "SGD" else dict(lr=0.1)
    _lrs(lambda o: sched.OneCycleLR(o, max_lr=1.0, total_steps=30, **kw),
         lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=30, **kw),
         29, opt_name=opt_name, kw=okw)


@pytest.mark.parametrize("kw", [dict(patience=2), dict(mode="max", patience=1, cooldown=2,
                                                         factor=0.5, min_lr=0.02),
                                dict(threshold_mode="abs", threshold=0.1, patience=0)])
def test_reduce_on_plateau(kw):
    metric = [1.0, 0.9, 0.95, 0.95, 0.97, 0.8, 0.8, 0.8, 0.85, 0.9, 0.7, 0.71, 0.72, 0.73,
              0.74, 0.75, 0.5, 0.5, 0.5, 0.5]
    _lrs(lambda o: sched.ReduceLROnPlateau(o, **kw),
         lambda o: torch.optim.lr_scheduler.ReduceLROnPlateau(o, **kw), len(metric), metric)


def test_scheduler_errors():
    w = gp.zeros(1)
    with pytest.raises(ValueError, match="total_steps"):
        sched.OneCycleLR(optim.SGD([w], lr=0.1, momentum=0.9), max_lr=1.0)
    with pytest.raises(ValueError, match="factor"):
        sched.ReduceLROnPlateau(optim.SGD([w], lr=0.1), factor=2.0)




class _Warmup:
    """A callable object: LambdaLR saves its __dict__ (a plain function is not saved)."""

    def __init__(self, k):
        self.k = k

    def __call__(self, e):
        return min(1.0, (e + 1) / self.k)


TL = torch.optim.lr_scheduler

# make(L, opt) builds the same scheduler from L = grilly's module or torch's
SCHEDULERS = {
    "MultiStepLR": lambda L, o: L.MultiStepLR(o, [3, 7, 7, 20], gamma=0.5),
    "ExponentialLR": lambda L, o: L.ExponentialLR(o, gamma=0.9),
    "LambdaLR": lambda L, o: L.LambdaLR(o, lambda e: 0.95 ** e),
    "LambdaLR_groups": lambda L, o: L.LambdaLR(o, [lambda e: 0.95 ** e, _Warmup(6)]),
    "MultiplicativeLR": lambda L, o: L.MultiplicativeLR(o, lambda e: 0.95),
    "MultiplicativeLR_groups": lambda L, o: L.MultiplicativeLR(
        o, [lambda e: 0.9, lambda e: 1.0 - 0.01 * (e % 3)]),
    "LinearLR": lambda L, o: L.LinearLR(o),
    "LinearLR_args": lambda L, o: L.LinearLR(o, start_factor=0.25, end_factor=0.1,
                                             total_iters=10),
    "ConstantLR": lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=8),
    "PolynomialLR": lambda L, o: L.PolynomialLR(o, total_iters=20, power=2.0),
    "PolynomialLR_default": lambda L, o: L.PolynomialLR(o),
    "CosineAnnealingWarmRestarts": lambda L, o: L.CosineAnnealingWarmRestarts(
        o, T_0=5, T_mult=2, eta_min=0.001),
    "CosineAnnealingWarmRestarts_T1": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=7),
    "SequentialLR_warmup_cosine": lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.1, total_iters=5), L.CosineAnnealingLR(o, T_max=20)],
        milestones=[5]),
    "SequentialLR_three": lambda L, o: L.SequentialLR(
        o, [L.ConstantLR(o, factor=0.3, total_iters=2), L.ExponentialLR(o, gamma=0.8),
            L.StepLR(o, 3, gamma=0.5)], milestones=[4, 12]),
    "SequentialLR_no_closed_form": lambda L, o: L.SequentialLR(
        o, [L.MultiplicativeLR(o, lambda e: 0.9), L.LambdaLR(o, lambda e: 1 / (e + 1)),
            L.CosineAnnealingWarmRestarts(o, T_0=4)], milestones=[6, 15]),
    "ChainedScheduler": lambda L, o: L.ChainedScheduler(
        [L.ConstantLR(o, factor=0.1, total_iters=2), L.ExponentialLR(o, gamma=0.9)]),
    "ChainedScheduler_optimizer": lambda L, o: L.ChainedScheduler(
        [L.LinearLR(o, start_factor=0.5, total_iters=6), L.MultiStepLR(o, [4, 9], gamma=0.3),
         L.PolynomialLR(o, total_iters=25)], optimizer=o),
    "SequentialLR_of_chained": lambda L, o: L.SequentialLR(
        o, [L.ChainedScheduler([L.LinearLR(o, start_factor=0.2, total_iters=4),
                                L.ExponentialLR(o, gamma=0.95)]),
            L.CosineAnnealingLR(o, T_max=10, eta_min=0.01)], milestones=[8]),
}


def _group_opts():
    """The same two-group SGD in grilly and torch (different lrs per group)."""
    ws, tws = [gp.zeros(1), gp.zeros(2)], [torch.zeros(1, requires_grad=True),
                                           torch.zeros(2, requires_grad=True)]
    groups = lambda ps: [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.03}]  # noqa: E731
    return (optim.SGD(groups(ws), lr=0.1, momentum=0.9),
            torch.optim.SGD(groups(tws), lr=0.1, momentum=0.9))


def _lr_sequence(make, steps=36, resume_at=None):
    """Each param group's lr after the constructor and every step, grilly's and torch's; with
    ``resume_at``, grilly's run continues from a new optimizer and scheduler loaded from (deep
    copies of) the state dicts there, as from a checkpoint."""
    opt, topt = _group_opts()
    s, ts = make(sched, opt), make(TL, topt)
    got, want = [s.get_last_lr()], [ts.get_last_lr()]
    for i in range(steps):
        if i == resume_at:
            opt2, _ = _group_opts()
            s2 = make(sched, opt2)
            opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
            s2.load_state_dict(copy.deepcopy(s.state_dict()))
            opt, s = opt2, s2
        opt.step()
        topt.step()
        s.step()
        ts.step()
        assert [g["lr"] for g in opt.param_groups] == s.get_last_lr()
        got.append(s.get_last_lr())
        want.append(ts.get_last_lr())
    return np.asarray(got, dtype=float), np.asarray(want, dtype=float)


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")  # torch's, nested
@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_new_schedulers_match_torch(name):
    got, want = _lr_sequence(SCHEDULERS[name])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert len(np.unique(got[:, 0])) > 1  # the schedule does change the lr


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")  # torch's, nested
@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_new_schedulers_state_dict_resume(name):
    got, want = _lr_sequence(SCHEDULERS[name], resume_at=17)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_lambda_lr_state_dict_saves_callable_objects_only():
    opt, _ = _group_opts()
    fn, obj = (lambda e: 1.0), _Warmup(6)
    s = sched.LambdaLR(opt, [fn, obj])
    state = s.state_dict()
    assert state["lr_lambdas"] == [None, {"k": 6}]
    assert "optimizer" not in state
    obj2 = _Warmup(2)
    s2 = sched.LambdaLR(_group_opts()[0], [fn, obj2])
    s2.load_state_dict(state)
    assert obj2.k == 6 and s2.lr_lambdas[1] is obj2 and "lr_lambdas" in state


def test_warm_restarts_fractional_epochs():
    opt, topt = _group_opts()
    s = sched.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.002)
    ts = TL.CosineAnnealingWarmRestarts(topt, T_0=3, T_mult=2, eta_min=0.002)
    for epoch in range(12):
        for i in range(4):
            s.step(epoch + i / 4)
            ts.step(epoch + i / 4)
            np.testing.assert_allclose(s.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
    with pytest.raises(ValueError, match="CosineAnnealingWarmRestarts"):
        s.step(-1)


@pytest.mark.parametrize("name", ["MultiStepLR", "ExponentialLR", "LinearLR_args", "ConstantLR",
                                  "PolynomialLR", "LambdaLR_groups"])
def test_new_schedulers_last_epoch_resume(name):
    """A scheduler built with last_epoch (groups holding initial_lr) steps as torch's."""
    opt, topt = _group_opts()
    for o in (opt, topt):
        for g in o.param_groups:
            g["initial_lr"] = g["lr"]
    make = SCHEDULERS[name]
    s = make(lambda_module(sched, 5), opt)
    ts = make(lambda_module(TL, 5), topt)
    for _ in range(20):
        opt.step()
        topt.step()
        s.step()
        ts.step()
        np.testing.assert_allclose(s.get_last_lr(), ts.get_last_lr(), rtol=1e-12, atol=1e-15)


class lambda_module:  # noqa: N801
    """A scheduler module whose classes get ``last_epoch``."""

    def __init__(self, module, last_epoch):
        self.module, self.last_epoch = module, last_epoch

    def __getattr__(self, name):
        cls = getattr(self.module, name)
        return lambda *a, **k: cls(*a, last_epoch=self.last_epoch, **k)


BAD = [
    ("ConstantLR", lambda L, o: L.ConstantLR(o, factor=1.5)),
    ("ConstantLR", lambda L, o: L.ConstantLR(o, factor=-0.1)),
    ("LinearLR", lambda L, o: L.LinearLR(o, start_factor=0.0)),
    ("LinearLR", lambda L, o: L.LinearLR(o, start_factor=1.2)),
    ("LinearLR", lambda L, o: L.LinearLR(o, end_factor=1.5)),
    ("CosineAnnealingWarmRestarts", lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=0)),
    ("CosineAnnealingWarmRestarts", lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=2.5)),
    ("CosineAnnealingWarmRestarts", lambda L, o: L.CosineAnnealingWarmRestarts(o, 5, T_mult=0)),
    ("CosineAnnealingWarmRestarts", lambda L, o: L.CosineAnnealingWarmRestarts(
        o, 5, eta_min="0")),
    ("LambdaLR", lambda L, o: L.LambdaLR(o, [lambda e: 1.0])),
    ("MultiplicativeLR", lambda L, o: L.MultiplicativeLR(o, [lambda e: 1.0] * 3)),
    ("MultiplicativeLR", lambda L, o: L.MultiplicativeLR(o, 0.9)),
    ("SequentialLR", lambda L, o: L.SequentialLR(o, [], milestones=[])),
    ("SequentialLR", lambda L, o: L.SequentialLR(o, [L.ExponentialLR(o, 0.9)], milestones=[3])),
    ("SequentialLR", lambda L, o: L.SequentialLR(
        o, [L.ExponentialLR(o, 0.9), L.ReduceLROnPlateau(o)], milestones=[3])),
    ("SequentialLR", lambda L, o: L.SequentialLR(o, [object()], milestones=[])),
    ("ChainedScheduler", lambda L, o: L.ChainedScheduler([])),
    ("ChainedScheduler", lambda L, o: L.ChainedScheduler(
        [L.ExponentialLR(o, 0.9), L.ReduceLROnPlateau(o)])),
    ("ChainedScheduler", lambda L, o: L.ChainedScheduler([L.ExponentialLR(o, 0.9), object()])),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_new_scheduler_errors(i):
    """Each bad argument raises what torch raises, with a message naming the scheduler."""
    name, make = BAD[i]
    opt, topt = _group_opts()
    with pytest.raises((ValueError, TypeError)) as t_err:
        make(TL, topt)
    with pytest.raises(t_err.type, match=name):
        make(sched, opt)


def test_composite_schedulers_need_one_optimizer():
    (a, ta), (b, tb) = _group_opts(), _group_opts()
    for L, o1, o2 in ((sched, a, b), (TL, ta, tb)):
        with pytest.raises(ValueError, match="SequentialLR.*same optimizer"):
            L.SequentialLR(o1, [L.ExponentialLR(o1, 0.9), L.ExponentialLR(o2, 0.9)], [3])
        with pytest.raises(ValueError, match="ChainedScheduler.*same optimizer"):
            L.ChainedScheduler([L.ExponentialLR(o1, 0.9), L.ExponentialLR(o2, 0.9)])
    with pytest.raises(TypeError, match="not an Optimizer"):
        sched.ExponentialLR([gp.zeros(1)], 0.9)


def test_scheduler_lists_per_group_and_optimizer_checked():
    """A per-group list of another length is a ValueError (min_lr's was cut short by zip, so the
    extra groups were never reduced), and a scheduler of something else a TypeError, as torch."""
    a, b = gp.zeros(1), gp.zeros(1)
    opt = optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="min_lr"):
        sched.ReduceLROnPlateau(opt, min_lr=[0.01])
    with pytest.raises(ValueError, match="max_lr"):
        sched.OneCycleLR(opt, max_lr=[1.0], total_steps=10)
    with pytest.raises(TypeError, match="not an Optimizer"):
        sched.StepLR([a], 2)
    with pytest.raises(TypeError, match="not an Optimizer"):
        sched.ReduceLROnPlateau([a])


def test_duplicate_parameter_in_a_group_is_an_error(device):
    w = gp.asarray([1.0, 2.0], device=device)
    # (it was updated twice per step, with one state)
    with pytest.raises(ValueError, match="more than once"):
        optim.SGD([w, w], lr=0.1)


@pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.05, amsgrad=True)),
                                     ("SGD", dict(lr=0.05, momentum=0.9)),
                                     ("RMSprop", dict(lr=0.01, centered=True))])
def test_load_torch_state_dict(device, name, kw):
    """torch.optim's state dict (same layout; tensors and a tensor step) continues the run: the
    state is copied, not shared with torch's tensors (they were updated by both optimizers)."""
    tw = torch.tensor(W0, requires_grad=True)
    topt = getattr(torch.optim, name)([tw], **kw)
    for _ in range(3):
        tw.grad = _grad_torch(tw.detach())
        topt.step()
    w = gp.asarray(tw.detach().numpy(), device=device)
    w.requires_grad = True
    opt = getattr(optim, name)([w], **kw)
    opt.load_state_dict(topt.state_dict())
    for _ in range(5):
        w.grad = _grad_gp(w)
        opt.step()
        tw.grad = _grad_torch(tw.detach())
        topt.step()
    np.testing.assert_allclose(np.asarray(w), tw.detach().numpy(), rtol=1e-10)
