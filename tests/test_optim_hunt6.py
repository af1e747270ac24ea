"""A PyTorch user's training-loop port (hunt 6), against torch as the oracle: ``optimizer.state[p]``
(it raised TypeError: unhashable Array), torch.optim.swa_utils (AveragedModel with SWA / EMA /
use_buffers / avg_fn, update_bn, SWALR: missing), nn.init's ``generator=`` (refused), its
case-insensitive kaiming ``mode`` and zero-element no-ops (orthogonal_ raised ZeroDivisionError);
and, as new-ground checks that held, every optimizer with its less common options over groups
with a None gradient, a parameter frozen mid-training and an lr given as a 0-d Array."""
import copy
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly import nn, optim
from grilly.optim import lr_scheduler as sched
from grilly.optim import swa_utils

torch = pytest.importorskip("torch")
TS = torch.optim.swa_utils

_rng = np.random.default_rng(6)
SHAPES = [(4,), (2, 3), (3,)]
P0 = [_rng.standard_normal(s) for s in SHAPES]


def _grads(t: int) -> list:
    r = np.random.default_rng(60 + t)
    return [r.standard_normal(s) for s in SHAPES]


def _close(a, b, rtol=1e-12, atol=1e-13, what="") -> None:
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    np.testing.assert_allclose(np.asarray(a).astype(float), b.astype(float), rtol=rtol, atol=atol,
                               err_msg=what)


# ---- optimizers: uncommon options, None / frozen grads, groups, 0-d Array lr ----------------
KITCHEN = [
    ("SGD", dict(momentum=0.9, dampening=0.3, weight_decay=0.1, maximize=True)),
    ("SGD", dict(momentum=0.8, nesterov=True, weight_decay=0.05)),
    ("Adam", dict(amsgrad=True, maximize=True, weight_decay=0.1)),
    ("AdamW", dict(amsgrad=True, weight_decay=0.2)),
    ("RMSprop", dict(centered=True, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("Adagrad", dict(lr_decay=0.1, initial_accumulator_value=0.2, maximize=True)),
    ("NAdam", dict(momentum_decay=0.1, decoupled_weight_decay=True, weight_decay=0.1)),
    ("RAdam", dict(decoupled_weight_decay=True, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(weight_decay=0.1)),
    ("ASGD", dict(t0=2, weight_decay=0.1)),
    ("Rprop", dict(maximize=True)),
    ("Adadelta", dict(weight_decay=0.1)),
]


@pytest.mark.parametrize("name,kw", KITCHEN, ids=[f"{n}-{i}" for i, (n, _) in enumerate(KITCHEN)])
def test_optimizer_options_groups_and_frozen_params(device, name, kw):
    """Two groups (the second with its own lr), a 0-d Array lr in the first, a gradient None on
    one step, a parameter frozen (grad None) from step 3 on; float64, six steps."""
    ps = [gp.asarray(p, device=device) for p in P0]
    tps = [torch.tensor(p, requires_grad=True) for p in P0]
    opt = getattr(optim, name)([{"params": ps[:2], "lr": gp.asarray(0.05, device=device)},
                                {"params": ps[2:], "lr": 0.02}], **kw)
    topt = getattr(torch.optim, name)([{"params": tps[:2], "lr": torch.tensor(0.05, dtype=torch.float64)},
                                       {"params": tps[2:], "lr": 0.02}], **kw)
    for t in range(6):
        for i, (p, tp, g) in enumerate(zip(ps, tps, _grads(t))):
            none = (t == 1 and i == 2) or (t >= 3 and i == 0)
            p.grad = None if none else gp.asarray(g, device=device)
            tp.grad = None if none else torch.tensor(g)
        opt.step()
        topt.step()
    for i, (p, tp) in enumerate(zip(ps, tps)):
        _close(p, tp, what=f"{name} param {i}")


def test_zero_grad_keeps_the_gradient_buffers(device):
    p = gp.asarray(P0[0], device=device)
    p.grad = gp.asarray(_grads(0)[0], device=device)
    g = p.grad
    opt = optim.SGD([p], lr=0.1)
    opt.zero_grad(set_to_none=False)
    tp = torch.tensor(P0[0], requires_grad=True)
    tp.grad = torch.tensor(_grads(0)[0])
    torch.optim.SGD([tp], lr=0.1).zero_grad(set_to_none=False)
    assert p.grad is g
    _close(g, tp.grad)


# ---- optimizer.state indexed by the parameter -------------------------------------------------
def test_state_indexed_by_parameter(device):
    """torch's ``optimizer.state[p]``: read a buffer, seed one before the first step (torch's
    defaultdict), iterate the parameters that have state; ``p in state``."""
    ps = [gp.asarray(p, device=device) for p in P0[:2]]
    tps = [torch.tensor(p, requires_grad=True) for p in P0[:2]]
    opt = optim.SGD(ps, lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(tps, lr=0.1, momentum=0.9)
    assert opt.state[ps[1]] == {} and len(topt.state[tps[1]]) == 0
    seed = np.full(SHAPES[1], 0.5)
    opt.state[ps[1]]["momentum_buffer"] = gp.asarray(seed, device=device)
    topt.state[tps[1]]["momentum_buffer"] = torch.tensor(seed)
    for t in range(3):
        for p, tp, g in zip(ps, tps, _grads(t)):
            p.grad, tp.grad = gp.asarray(g, device=device), torch.tensor(g)
        opt.step()
        topt.step()
    for p, tp in zip(ps, tps):
        assert p in opt.state
        _close(opt.state[p]["momentum_buffer"], topt.state[tp]["momentum_buffer"])
        _close(p, tp)
    assert [id(p) for p in opt.state] == [id(p) for p in ps]
    assert len(opt.state) == 2 and all(isinstance(k, gp.Array) for k, _ in opt.state.items())
    assert gp.zeros(1) not in opt.state
    with pytest.raises(KeyError, match="Optimizer.state"):
        opt.state[gp.zeros(1, device=device)]
    with pytest.raises(TypeError, match="Optimizer.state"):
        opt.state["exp_avg"]


# ---- swa_utils ------------------------------------------------------------------------------
X = [_rng.standard_normal((5, 3)) for _ in range(5)]


def _models(device):
    m = nn.Sequential(nn.Linear(3, 4, dtype=gp.float64), nn.BatchNorm1d(4, dtype=gp.float64),
                      nn.Linear(4, 2, dtype=gp.float64))
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                             torch.nn.Linear(4, 2)).double()
    tm.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in m.state_dict().items()})
    return m.to(device), tm


AVERAGES = {
    "swa": lambda S: dict(),
    "swa_buffers": lambda S: dict(use_buffers=True),
    "ema_multi": lambda S: dict(multi_avg_fn=S.get_ema_multi_avg_fn(0.9), use_buffers=True),
    "swa_multi": lambda S: dict(multi_avg_fn=S.get_swa_multi_avg_fn()),
    "ema": lambda S: dict(avg_fn=S.get_ema_avg_fn(0.8)),
    "own_fn": lambda S: dict(avg_fn=lambda avg, cur, n: 0.7 * avg + 0.3 * cur),
}


@pytest.mark.parametrize("kind", list(AVERAGES))
def test_averaged_model_matches_torch(device, kind):
    """Train four steps, averaging after each: the averaged copy's state_dict (torch's keys,
    n_averaged, BatchNorm buffers) and forward equal torch's."""
    m, tm = _models(device)
    avg = swa_utils.AveragedModel(m, **AVERAGES[kind](swa_utils))
    tavg = TS.AveragedModel(tm, **AVERAGES[kind](TS))
    opt = optim.SGD(m.parameters(), lr=0.1, momentum=0.5)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.5)
    for i in range(4):
        opt.zero_grad()
        topt.zero_grad()
        (m(gp.asarray(X[i], device=device)) ** 2).sum().backward()
        (tm(torch.tensor(X[i])) ** 2).sum().backward()
        opt.step()
        topt.step()
        avg.update_parameters(m)
        tavg.update_parameters(tm)
    sd, tsd = avg.state_dict(), tavg.state_dict()
    assert list(sd) == list(tsd)
    for k in sd:
        _close(sd[k], tsd[k], rtol=1e-11, what=k)
    _close(avg(gp.asarray(X[4], device=device)), tavg(torch.tensor(X[4])), rtol=1e-11)


def test_update_bn_matches_torch(device):
    m, tm = _models(device)
    m.eval()
    tm.eval()
    swa_utils.update_bn([(gp.asarray(x, device=device), 0) for x in X], m)
    TS.update_bn([(torch.tensor(x), 0) for x in X], tm)
    for k, v in m.state_dict().items():
        _close(v, tm.state_dict()[k], what=k)
    assert not m.training and m[1].momentum == tm[1].momentum


SWALRS = [dict(swa_lr=0.05), dict(swa_lr=[0.05, 0.01], anneal_epochs=3, anneal_strategy="linear"),
          dict(swa_lr=0.5, anneal_epochs=0)]


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")  # torch's, nested
@pytest.mark.parametrize("kw", SWALRS + ["sequential"])
def test_swalr_matches_torch_and_resumes(kw):
    """The lr of each group after every step, with a state_dict round trip into a new
    optimizer and scheduler at step 5; and SWALR after a cosine phase in SequentialLR."""
    def make(S, L, o):
        if kw == "sequential":
            return L.SequentialLR(o, [L.CosineAnnealingLR(o, T_max=5),
                                      S.SWALR(o, swa_lr=0.01, anneal_epochs=3)], milestones=[5])
        return S.SWALR(o, **kw)

    seqs = []
    for lib, S, L, zeros in ((optim, swa_utils, sched, gp.zeros),
                             (torch.optim, TS, torch.optim.lr_scheduler,
                              lambda n: torch.zeros(n, requires_grad=True))):
        ps = [zeros(1), zeros(2)]

        def new():
            o = lib.SGD([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.03}], lr=0.1)
            return o, make(S, L, o)
        o, s = new()
        lrs = [s.get_last_lr()]
        for i in range(12):
            if i == 5:
                o2, s2 = new()
                o2.load_state_dict(copy.deepcopy(o.state_dict()))
                s2.load_state_dict(copy.deepcopy(s.state_dict()))
                o, s = o2, s2
            o.step()
            s.step()
            lrs.append(s.get_last_lr())
        seqs.append(np.asarray(lrs, dtype=float))
    np.testing.assert_allclose(seqs[0], seqs[1], rtol=1e-13, atol=1e-15)


def test_swa_utils_refusals():
    lin, o = nn.Linear(2, 2), optim.SGD([gp.zeros(1)], lr=0.1)
    tlin, to = torch.nn.Linear(2, 2), torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    f = swa_utils.get_swa_avg_fn()
    with pytest.raises(ValueError, match="AveragedModel"):
        swa_utils.AveragedModel(lin, avg_fn=f, multi_avg_fn=f)
    with pytest.raises(Exception):   # (torch: AssertionError)
        TS.AveragedModel(tlin, avg_fn=f, multi_avg_fn=f)
    for bad in (dict(anneal_strategy="exp"), dict(anneal_epochs=-1), dict(anneal_epochs=2.5),
                dict(swa_lr=[0.1, 0.2])):
        kw = {"swa_lr": 0.1, **bad}
        with pytest.raises(ValueError):
            TS.SWALR(to, **kw)
        with pytest.raises(ValueError, match="SWALR"):
            swa_utils.SWALR(o, **kw)
    for fn in ("get_ema_avg_fn", "get_ema_multi_avg_fn"):
        with pytest.raises(ValueError):
            getattr(TS, fn)(1.5)
        with pytest.raises(ValueError, match=fn):
            getattr(swa_utils, fn)(1.5)
    with pytest.raises(ValueError, match="update_parameters"):
        swa_utils.AveragedModel(lin).update_parameters(nn.Linear(2, 2, bias=False))


# ---- nn.init ---------------------------------------------------------------------------------
INITS = [("uniform_", ()), ("normal_", ()), ("trunc_normal_", ()), ("xavier_uniform_", ()),
         ("xavier_normal_", ()), ("kaiming_uniform_", ()), ("kaiming_normal_", ()),
         ("orthogonal_", ()), ("sparse_", (0.3,))]


@pytest.mark.parametrize("name,args", INITS, ids=[n for n, _ in INITS])
def test_init_generator(device, name, args):
    """torch's ``generator=``: a grilly.random.Generator, the same seed the same values on
    every device, the default stream untouched; torch's own Generator is refused clearly."""
    fill = getattr(nn.init, name)
    torch_fill = getattr(torch.nn.init, name)
    torch_fill(torch.zeros(6, 5), *args, generator=torch.Generator().manual_seed(0))

    def draw(seed, dev):
        w = gp.zeros((6, 5), device=dev)
        out = fill(w, *args, generator=gp.random.Generator(seed))
        assert out is w
        return np.asarray(w)

    state = gp.random.default_generator.get_state()
    a = draw(3, device)
    assert gp.random.default_generator.get_state() == state
    np.testing.assert_allclose(a, draw(3, "cpu"), rtol=1e-6, atol=1e-7)
    assert not np.array_equal(a, draw(4, device))
    with pytest.raises(TypeError, match=f"{name}: generator"):
        fill(gp.zeros((6, 5)), *args, generator=torch.Generator())


def test_kaiming_mode_is_case_insensitive(device):
    """mode='FAN_OUT' as torch takes it: the same bound as torch's (the largest draw of many
    uniform values reaches it)."""
    w = gp.zeros((64, 16, 3), device=device)
    tw = torch.zeros(64, 16, 3)
    nn.init.kaiming_uniform_(w, mode="FAN_OUT", nonlinearity="relu")
    torch.nn.init.kaiming_uniform_(tw, mode="FAN_OUT", nonlinearity="relu")
    bound = float(tw.abs().max())
    assert float(gp.max(gp.abs(w))) <= bound * 1.01
    assert float(gp.max(gp.abs(w))) >= bound * 0.98
    for lib, z in ((nn.init, gp.zeros((3, 4))), (torch.nn.init, torch.zeros(3, 4))):
        with pytest.raises(ValueError, match="fan_avg"):
            lib.kaiming_normal_(z, mode="fan_avg")


@pytest.mark.parametrize("name", ["kaiming_uniform_", "kaiming_normal_", "orthogonal_"])
def test_init_of_zero_elements_is_a_no_op(device, name):
    """As torch: nothing to fill (kaiming warns that it is a no-op; orthogonal_ raised
    ZeroDivisionError, kaiming a fan-is-0 ValueError)."""
    for shape in ((4, 0), (0, 0)):
        with warnings.catch_warnings(record=True) as tw:
            warnings.simplefilter("always")
            getattr(torch.nn.init, name)(torch.zeros(shape))
        w = gp.zeros(shape, device=device)
        with warnings.catch_warnings(record=True) as gw:
            warnings.simplefilter("always")
            assert getattr(nn.init, name)(w) is w
        assert [str(x.message) for x in gw] == [str(x.message) for x in tw]
