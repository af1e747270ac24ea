"""A PyTorch user sweeping nn.init, optim.lr_scheduler and the losses against torch (hunt 10),
table-driven: one small table per family. Found: class-index targets out of range (an
off-by-one label, a -1 that is not ignore_index) were silently dropped by cross_entropy,
nll_loss, multi_margin_loss and multilabel_margin_loss where torch raises (now NaN: torch's
check reads the targets back), and AdaptiveLogSoftmaxWithLoss wrapped a negative one;
nn.Linear(..., dtype=bfloat16) and every uniform initializer of a bfloat16 array raised;
trunc_normal_ gave up ("holds too little") on a narrow or tail [a, b]
that torch fills; torch 2.13's F.linear_cross_entropy / nn.LinearCrossEntropyLoss were
missing. The sweeps that held (every scheduler's lr and momentum sequence with state_dict
round trips and resumes, every loss's reductions, weights and options with input gradients)
keep a representative row each."""
import copy
import math
import warnings

import numpy as np
import pytest

import grilly as gp
import grilly.nn.functional as F
from grilly import nn, optim

torch = pytest.importorskip("torch")
TF = torch.nn.functional

_rng = np.random.default_rng(10)


def _np(a) -> np.ndarray:
    return np.asarray(a.to_device("cpu")) if isinstance(a, gp.Array) else a.detach().numpy()


def _pair(a, device, dtype, grad):
    """(grilly Array, torch tensor) of the NumPy ``a`` (floats in ``dtype``)."""
    if a.dtype.kind == "f":
        a = a.astype(dtype)
    g, t = gp.asarray(a, device=device), torch.tensor(a)
    if grad:
        g.requires_grad_(True)
        t.requires_grad_(True)
    return g, t


# ---- losses: values and input gradients, float32 and float64 ---------------------------------
N, C = 3, 4
X = _rng.standard_normal((N, C))
Y = _rng.standard_normal((N, C))
X4 = _rng.standard_normal((2, C, 2))
T = np.array([2, 0, 3])
T_IGN = np.array([2, -100, 3])
T4 = np.array([[1, 3], [0, 2]])
PROB = _rng.dirichlet(np.ones(C), N)
W = _rng.random(C) + 0.5
P = _rng.random((N, C)) * 0.9 + 0.05
YB = (_rng.random((N, C)) > 0.5).astype(float)
PM = np.array([1.0, -1.0, 1.0])
A, B, CC = (_rng.standard_normal((N, 5)) for _ in range(3))
MLM = np.array([[0, 2, -1, 1], [3, -1, 0, 0], [1, 0, 2, 3]])

# (id, grilly call, torch call, arrays, which arrays get a gradient); W (class weights) and
# others given as constants ride in the arrays without a gradient
LOSSES = [
    ("ce_w_ls_sum", lambda f, x, t, w: f.cross_entropy(x, t, weight=w, label_smoothing=0.2,
                                                         reduction="sum"), (X, T, W), (0,)),
    ("ce_ign_ls_mean", lambda f, x, t: f.cross_entropy(x, t, ignore_index=-100,
                                                       label_smoothing=0.1), (X, T_IGN), (0,)),
    ("ce_ii_in_range_w", lambda f, x, t, w: f.cross_entropy(x, t, w, ignore_index=3),
     (X, T, W), (0,)),
    ("ce_kdim_none", lambda f, x, t, w: f.cross_entropy(x, t, w, reduction="none"),
     (X4, T4, W), (0,)),
    ("ce_probs_w_ls", lambda f, x, p, w: f.cross_entropy(x, p, w, label_smoothing=0.3),
     (X, PROB, W), (0, 1)),
    ("nll_w_mean", lambda f, x, t, w: f.nll_loss(x, t, w), (X, T_IGN, W), (0,)),
    ("bce_w_none", lambda f, p, y, w: f.binary_cross_entropy(p, y, w, reduction="none"),
     (P, YB, P), (0, 1)),
    ("bcel_posw", lambda f, x, y, pw: f.binary_cross_entropy_with_logits(x, y, pos_weight=pw),
     (X, PROB, W), (0, 1)),
    ("smooth_l1_beta", lambda f, x, y: f.smooth_l1_loss(x, y, reduction="sum", beta=0.4),
     (X, Y), (0, 1)),
    ("huber_delta", lambda f, x, y: f.huber_loss(x, y, delta=0.3), (X, Y), (0, 1)),
    ("kl_logt_batchmean", lambda f, x, y: f.kl_div(x, y, reduction="batchmean",
                                                    log_target=True),
     (np.log(PROB), np.log(PROB[::-1].copy())), (0, 1)),
    ("poisson_full", lambda f, x, y: f.poisson_nll_loss(x, y, log_input=False, full=True),
     (P * 3, np.floor(P * 5)), (0,)),
    ("gauss_full_var1", lambda f, x, y, v: f.gaussian_nll_loss(x, y, v, full=True,
                                                                reduction="none"),
     (X, Y, P[:, :1]), (0, 1, 2)),
    ("margin_rank", lambda f, a, b, y: f.margin_ranking_loss(a, b, y, margin=0.3),
     (X[:, 0].copy(), Y[:, 0].copy(), PM), (0, 1)),
    ("hinge_emb", lambda f, x, y: f.hinge_embedding_loss(x, y, margin=0.5, reduction="sum"),
     (X, np.sign(Y)), (0,)),
    ("cos_emb", lambda f, a, b, y: f.cosine_embedding_loss(a, b, y, margin=0.2), (A, B, PM),
     (0, 1)),
    ("soft_margin", lambda f, x, y: f.soft_margin_loss(x, y, reduction="none"),
     (X, np.sign(Y)), (0,)),
    ("ml_soft_margin_w", lambda f, x, y, w: f.multilabel_soft_margin_loss(x, y, weight=w),
     (X, YB, W), (0,)),
    ("multi_margin_p2_w", lambda f, x, t, w: f.multi_margin_loss(x, t, p=2, margin=0.7,
                                                                 weight=w), (X, T, W), (0,)),
    ("ml_margin", lambda f, x, t: f.multilabel_margin_loss(x, t, reduction="none"), (X, MLM),
     (0,)),
    ("triplet_p1_swap", lambda f, a, p, n: f.triplet_margin_loss(a, p, n, margin=0.5, p=1.0,
                                                                 swap=True), (A, B, CC),
     (0, 1, 2)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,call,arrays,grads", LOSSES, ids=[r[0] for r in LOSSES])
def test_loss_matches_torch(device, dtype, name, call, arrays, grads):
    pairs = [_pair(a, device, dtype, i in grads) for i, a in enumerate(arrays)]
    got = call(F, *[g for g, _ in pairs])
    want = call(TF, *[t for _, t in pairs])
    tol = 2e-5 if dtype == np.float32 else 1e-12
    assert got.dtype == (gp.float32 if dtype == np.float32 else gp.float64)
    np.testing.assert_allclose(_np(got), _np(want), rtol=tol, atol=tol)
    up = _rng.standard_normal(tuple(want.shape))
    (got * gp.asarray(up.astype(dtype), device=device)).sum().backward()
    (want * torch.tensor(up.astype(dtype))).sum().backward()
    for i in grads:
        np.testing.assert_allclose(_np(pairs[i][0].grad), _np(pairs[i][1].grad), rtol=tol * 10,
                                   atol=tol * 10, err_msg=f"gradient of argument {i}")


BAD_TARGETS = [
    ("ce", lambda f, x, t: f.cross_entropy(x, t), [2, 4, 1]),
    ("ce_minus1", lambda f, x, t: f.cross_entropy(x, t), [2, -1, 1]),
    ("ce_ls", lambda f, x, t: f.cross_entropy(x, t, label_smoothing=0.1), [0, 7, 1]),
    ("ce_none_ls", lambda f, x, t: f.cross_entropy(x, t, reduction="none", label_smoothing=0.2),
     [0, 1, 9]),
    ("nll_ignore", lambda f, x, t: f.nll_loss(x, t, ignore_index=2), [2, 4, 1]),
    ("multi_margin", lambda f, x, t: f.multi_margin_loss(x, t), [0, 1, 4]),
    ("ml_margin", lambda f, x, t: f.multilabel_margin_loss(x, t),
     [[0, -1, 5, 0], [1, 2, -1, 0], [0, 0, 0, -1]]),
]


@pytest.mark.parametrize("name,call,target", BAD_TARGETS, ids=[r[0] for r in BAD_TARGETS])
def test_class_target_out_of_range_is_nan(device, name, call, target):
    """torch raises ('Target 4 is out of bounds'); its check reads the targets back, so grilly
    (which reads nothing back in a training step, as for BCELoss's probabilities) makes the
    loss and the input's gradient NaN. It dropped the row: an off-by-one label trained on a
    wrong loss without a sign."""
    x, tx = _pair(X, device, np.float64, True)
    t, tt = _pair(np.array(target), device, np.float64, False)
    with pytest.raises((IndexError, RuntimeError)):
        call(TF, tx, tt)
    loss = call(F, x, t)
    assert np.isnan(_np(loss)).all()
    loss.sum().backward()
    assert np.isnan(_np(x.grad)).any()
    tn = np.array(target)
    good = np.where((tn >= C) | ((tn == -1) & (name != "ml_margin")), 0, tn)   # the bad ones fixed
    assert not np.isnan(_np(call(F, x, gp.asarray(good, device=device)))).any()


def test_adaptive_log_softmax_target_out_of_range(device):
    """torch raises for a target outside [0, n_classes); grilly wrapped a negative one (-1
    read class 5's log-probability) and gave take's message for a large one."""
    m = nn.AdaptiveLogSoftmaxWithLoss(16, 6, [2, 4]).to(device)
    x = gp.asarray(_rng.standard_normal((2, 16)).astype(np.float32), device=device)
    for bad in (-1, 6):
        with pytest.raises(IndexError, match=r"AdaptiveLogSoftmaxWithLoss: target values "
                                             r"should be in \[0, 5\]"):
            m(x, gp.asarray([0, bad], device=device))
    assert m(x, gp.asarray([0, 5], device=device)).output.shape == (2,)


# ---- linear_cross_entropy (torch 2.13) --------------------------------------------------------
LCE = [
    ("plain", dict(), (N,), None, False),
    ("bias_w_ls_sum", dict(reduction="sum", label_smoothing=0.2), (N,), W, True),
    ("ignore", dict(ignore_index=1), (N,), None, False),
    ("kdim_none", dict(reduction="none"), (N, 2, 3), W, True),
    ("probs", dict(), "probs", None, True),
    ("unbatched", dict(), (), None, True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,kw,tshape,weight,bias", LCE, ids=[r[0] for r in LCE])
def test_linear_cross_entropy_module_and_functional(device, dtype, name, kw, tshape, weight,
                                                    bias):
    """nn.LinearCrossEntropyLoss (its flat Linear weight, as torch's) and the functional
    form: loss, and the gradients of the input and of the Linear's parameters."""
    if not hasattr(torch.nn, "LinearCrossEntropyLoss"):
        pytest.skip("the oracle is torch 2.13's LinearCrossEntropyLoss")
    out = (2, 3) if tshape == (N, 2, 3) else ()
    lw = None if weight is None else torch.tensor(weight.astype(dtype))
    tm = torch.nn.LinearCrossEntropyLoss(5, C, out_features=out, bias=bias, weight=lw,
                                         dtype=torch.float64 if dtype == np.float64
                                         else torch.float32, **kw)
    gw = None if weight is None else gp.asarray(weight.astype(dtype), device=device)
    gm = nn.LinearCrossEntropyLoss(5, C, out_features=out, bias=bias, weight=gw,
                                   dtype=gp.float64 if dtype == np.float64 else gp.float32,
                                   **kw).to(device)
    assert [k for k, _ in gm.named_parameters()] == [k for k, _ in tm.named_parameters()]
    gm.load_state_dict({k: gp.asarray(_np(v), device=device) for k, v in tm.state_dict().items()})
    x = _rng.standard_normal((5,) if tshape == () else (N, 5))
    if tshape == "probs":
        tgt = _rng.dirichlet(np.ones(C), N).astype(dtype)
    else:
        tgt = _rng.integers(0, C, tshape)
    gx, tx = _pair(x, device, dtype, True)
    gt, tt = _pair(tgt, device, dtype, False)
    got, want = gm(gx, gt), tm(tx, tt)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(_np(got), _np(want), rtol=tol, atol=tol)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(_np(gx.grad), _np(tx.grad), rtol=tol * 10, atol=tol * 10)
    for (k, p), (_, q) in zip(gm.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(_np(p.grad), _np(q.grad), rtol=tol * 10, atol=tol * 10,
                                   err_msg=k)
    # the functional form, the weight in its (C, d..., in_features) shape
    lin_w = gp.reshape(gm.linear.weight, (C, *out, 5))
    lin_b = None if not bias else gp.reshape(gm.linear.bias, (C, *out))
    f = F.linear_cross_entropy(gx, lin_w, gt, linear_bias=lin_b, weight=gw, **kw)
    np.testing.assert_allclose(_np(f), _np(want), rtol=tol, atol=tol)


def test_linear_cross_entropy_errors(device):
    x = gp.asarray(np.ones((2, 3), np.float32), device=device)
    w = gp.asarray(np.ones((4, 3), np.float32), device=device)
    t = gp.asarray([0, 1], device=device)
    with pytest.raises(NotImplementedError, match="linear_cross_entropy: options"):
        F.linear_cross_entropy(x, w, t, options=object())
    with pytest.raises(NotImplementedError, match="LinearCrossEntropyLoss: options"):
        nn.LinearCrossEntropyLoss(3, 4, options=object())
    with pytest.raises(ValueError, match="linear_cross_entropy: input and linear_weight"):
        F.linear_cross_entropy(x, gp.asarray(np.ones((4, 2), np.float32), device=device), t)
    with pytest.raises(ValueError, match="linear_cross_entropy: expected linear_bias"):
        F.linear_cross_entropy(x, w, t, linear_bias=gp.zeros((3,), device=device))
    with pytest.raises(ValueError, match="linear_cross_entropy: ignore_index"):
        F.linear_cross_entropy(x, w, gp.ones((2, 4), device=device), ignore_index=0)
    assert math.isnan(float(F.linear_cross_entropy(x, w, gp.asarray([0, 4], device=device))))


# ---- nn.init ----------------------------------------------------------------------------------
def _phi(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2))


TRUNC = [(0.0, 1.0, -2.0, 2.0), (0.0, 1.0, 2.5, 3.0), (0.0, 1.0, 4.0, 5.0),
         (0.0, 1.0, -10.0, -6.0), (3.0, 0.5, -1.0, 1.0), (0.0, 1.0, 0.0, 0.01),
         (0.0, 1.0, 0.0, math.inf)]


@pytest.mark.parametrize("mean,std,a,b", TRUNC, ids=[str(r) for r in TRUNC])
def test_trunc_normal_any_interval(device, mean, std, a, b):
    """The truncated normal's CDF (a Kolmogorov-Smirnov bound at 0.1 %), as torch's fills of
    the same interval; a narrow or far-tail [a, b] raised 'holds too little'."""
    w = nn.init.trunc_normal_(gp.zeros((2000,), device=device), mean, std, a, b,
                              generator=gp.random.Generator(5))
    x = np.sort(_np(w).astype(np.float64))
    assert a <= x[0] and x[-1] <= b
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # torch: 'mean is more than 2 std from [a, b]'
        t = torch.nn.init.trunc_normal_(torch.zeros(2000, dtype=torch.float64), mean, std, a, b,
                                        generator=torch.Generator().manual_seed(5))
    lo, hi = _phi((a - mean) / std), _phi((b - mean) / std)
    for s in (x, np.sort(t.numpy())):
        cdf = (np.vectorize(_phi)((s - mean) / std) - lo) / (hi - lo)
        ks = np.max(np.abs(cdf - np.arange(1, s.size + 1) / s.size))
        assert ks < 1.95 / math.sqrt(s.size)     # (torch's own fill: the reference holds)


INITS = [  # (name, args, kwargs, shape)
    ("kaiming_uniform_", (), dict(a=0.3, mode="fan_out"), (32, 8, 3, 3)),
    ("kaiming_normal_", (), dict(mode="fan_in", nonlinearity="tanh"), (32, 64)),
    ("xavier_uniform_", (2.0,), {}, (16, 8, 5)),
    ("xavier_normal_", (), dict(gain=0.5), (16, 8, 5)),
    ("uniform_", (-0.3, 0.7), {}, (48, 48)),
    ("normal_", (0.5, 2.0), {}, (48, 48)),
    ("sparse_", (0.4,), dict(std=0.3), (40, 30)),
]


@pytest.mark.parametrize("name,args,kw,shape", INITS, ids=[r[0] for r in INITS])
def test_init_statistics_match_torch(device, name, args, kw, shape):
    """Range, mean, std and the share of zeros of torch's fill of the same shape (sampling
    tolerance: several thousand draws)."""
    g = _np(getattr(nn.init, name)(gp.zeros(shape, device=device), *args, **kw,
                                   generator=gp.random.Generator(7))).astype(np.float64)
    torch.manual_seed(7)   # (torch's sparse_ draws its zero rows from the global generator)
    t = getattr(torch.nn.init, name)(torch.zeros(shape, dtype=torch.float64), *args, **kw,
                                     generator=torch.Generator().manual_seed(7)).numpy()
    sd = t.std()
    assert abs(g.mean() - t.mean()) < 6 * sd / math.sqrt(g.size) + 1e-12
    assert abs(g.std() / sd - 1) < 0.08
    assert np.mean(g == 0) == pytest.approx(np.mean(t == 0), abs=0.02)
    if "uniform" in name:
        np.testing.assert_allclose([g.min(), g.max()], [t.min(), t.max()], atol=0.03 * sd)


@pytest.mark.parametrize("shape,groups", [((6, 2, 3), 2), ((4, 4, 3, 3), 2),
                                          ((6, 3, 2, 2, 2), 3)])
def test_dirac_eye_orthogonal_exact(device, shape, groups):
    w = nn.init.dirac_(gp.zeros(shape, device=device), groups)
    np.testing.assert_array_equal(_np(w), torch.nn.init.dirac_(torch.zeros(shape), groups))
    for s in ((3, 5), (5, 3)):
        np.testing.assert_array_equal(_np(nn.init.eye_(gp.zeros(s, device=device))),
                                      torch.nn.init.eye_(torch.zeros(s)).numpy())
    q = _np(nn.init.orthogonal_(gp.zeros(shape, device=device), gain=1.5)).reshape(shape[0], -1)
    gram = q @ q.T if q.shape[0] <= q.shape[1] else q.T @ q
    np.testing.assert_allclose(gram, 2.25 * np.eye(min(q.shape)), atol=1e-5)


@pytest.mark.parametrize("name,args", [("uniform_", (-0.5, 0.5)), ("xavier_uniform_", ()),
                                       ("kaiming_uniform_", ()), ("trunc_normal_", (0, 1, 2, 3))])
def test_bfloat16_initializers(device, name, args):
    """torch fills bfloat16 weights (nn.Linear(..., dtype=torch.bfloat16)); grilly raised
    'uniform: bfloat16 would round values up to high' from every uniform initializer (and
    trunc_normal_'s new proposals). Drawn in float32 and rounded: torch's bounds, the same
    values on every device."""
    lin = nn.Linear(16, 4, dtype=gp.bfloat16, device=device)
    assert lin.weight.dtype == gp.bfloat16 and lin.bias.dtype == gp.bfloat16
    assert float(gp.max(gp.abs(gp.astype(lin.weight, gp.float32)))) <= 0.25
    torch.manual_seed(3)
    t = getattr(torch.nn.init, name)(torch.zeros(40, 30, dtype=torch.bfloat16), *args)
    lo, hi = float(t.float().min()), float(t.float().max())
    if name == "trunc_normal_":   # (a tail interval: a sample's extremes are far from a, b)
        lo, hi = float(args[2]), float(args[3])

    def fill(dev):
        w = gp.zeros((40, 30), dtype=gp.bfloat16, device=dev)
        out = getattr(nn.init, name)(w, *args, generator=gp.random.Generator(3))
        assert out is w and w.dtype == gp.bfloat16
        return _np(gp.astype(w, gp.float32))

    g = fill(device)
    np.testing.assert_array_equal(g, fill("cpu"))
    spread = hi - lo
    assert lo - 0.02 * spread <= g.min() and g.max() <= hi + 0.02 * spread
    assert g.std() == pytest.approx(float(t.float().std()), rel=0.1)


GAINS = ["linear", "conv_transpose2d", "sigmoid", "tanh", "relu", "leaky_relu", "selu", "gelu"]


@pytest.mark.parametrize("param", [None, 0.2, 3, True, "x"])
def test_calculate_gain_matches_torch(param):
    for nl in GAINS:
        try:
            want = torch.nn.init.calculate_gain(nl, param)
        except ValueError:
            with pytest.raises(ValueError, match="calculate_gain"):
                nn.init.calculate_gain(nl, param)
            continue
        assert nn.init.calculate_gain(nl, param) == pytest.approx(want)


# ---- lr_scheduler ------------------------------------------------------------------------------
def _opts(kind):
    """(grilly, torch) optimizers with two param groups of different lr."""
    gps = [nn.Parameter(gp.zeros(2)), nn.Parameter(gp.zeros(2))]
    tps = [torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)]
    out = []
    for lib, ps in ((optim, gps), (torch.optim, tps)):
        groups = [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.05}]
        out.append(lib.SGD(groups, lr=0.1, momentum=0.9) if kind == "sgd"
                   else lib.Adam(groups, lr=0.1))
    return out


def _lam(e):
    return 0.95 ** e


SCHEDULERS = [
    ("StepLR", lambda M, o: M.StepLR(o, 7, gamma=0.5), "sgd"),
    ("MultiStepLR", lambda M, o: M.MultiStepLR(o, [5, 12, 12], gamma=0.3), "sgd"),
    ("ConstantLR", lambda M, o: M.ConstantLR(o, factor=0.25, total_iters=6), "sgd"),
    ("LinearLR", lambda M, o: M.LinearLR(o, 0.2, 0.9, total_iters=11), "sgd"),
    ("ExponentialLR", lambda M, o: M.ExponentialLR(o, 0.93), "sgd"),
    ("PolynomialLR", lambda M, o: M.PolynomialLR(o, total_iters=25, power=2.0), "sgd"),
    ("CosineAnnealingLR", lambda M, o: M.CosineAnnealingLR(o, T_max=9, eta_min=0.001), "sgd"),
    ("WarmRestarts", lambda M, o: M.CosineAnnealingWarmRestarts(o, 3, T_mult=2, eta_min=0.01),
     "sgd"),
    ("LambdaLR", lambda M, o: M.LambdaLR(o, [_lam, lambda e: 1 / (1 + e)]), "sgd"),
    ("MultiplicativeLR", lambda M, o: M.MultiplicativeLR(o, lambda e: 0.97), "sgd"),
    ("SequentialLR", lambda M, o: M.SequentialLR(o, [M.LinearLR(o, 0.1, total_iters=4),
                                                     M.ExponentialLR(o, 0.9),
                                                     M.StepLR(o, 3)], milestones=[5, 20]),
     "sgd"),
    ("ChainedScheduler", lambda M, o: M.ChainedScheduler([M.ConstantLR(o, 0.5, total_iters=4),
                                                          M.ExponentialLR(o, 0.95)]), "sgd"),
    ("OneCycleLR", lambda M, o: M.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=40), "sgd"),
    ("OneCycleLR_3phase_linear", lambda M, o: M.OneCycleLR(
        o, 1.0, epochs=4, steps_per_epoch=10, three_phase=True, anneal_strategy="linear",
        pct_start=0.25, div_factor=10, final_div_factor=100), "adam"),
    ("CyclicLR_triangular2", lambda M, o: M.CyclicLR(
        o, [0.01, 0.02], 0.1, step_size_up=5, mode="triangular2", base_momentum=0.7,
        max_momentum=[0.9, 0.95]), "sgd"),
    ("CyclicLR_exp_range", lambda M, o: M.CyclicLR(o, 0.01, 0.1, step_size_up=3,
                                                   step_size_down=4, mode="exp_range",
                                                   gamma=0.97), "adam"),
    ("ReduceLROnPlateau", lambda M, o: M.ReduceLROnPlateau(
        o, mode="max", factor=0.5, patience=2, threshold=0.05, threshold_mode="abs",
        cooldown=2, min_lr=[0.02, 0.001]), "sgd"),
]


def _metric(i):
    return [1.0, 0.9, 0.9, 0.95, 0.9, 0.91, 0.8, 0.8, 0.81, 0.82][i % 10] + 0.01 * (i // 10)


@pytest.mark.parametrize("name,make,kind", SCHEDULERS, ids=[r[0] for r in SCHEDULERS])
def test_scheduler_sequences_match_torch(name, make, kind):
    """40 steps: every group's lr (and momentum or beta1) and get_last_lr as torch's, with a
    state_dict round trip into fresh optimizer and scheduler at step 17 (torch's resume)."""
    go, to = _opts(kind)
    gs, ts = make(optim.lr_scheduler, go), make(torch.optim.lr_scheduler, to)
    plateau = name == "ReduceLROnPlateau"
    for i in range(40):
        go.step()
        to.step()
        (gs.step(_metric(i)) if plateau else gs.step())
        (ts.step(_metric(i)) if plateau else ts.step())
        np.testing.assert_allclose(gs.get_last_lr(), ts.get_last_lr(), rtol=1e-12,
                                   err_msg=f"step {i}")
        np.testing.assert_allclose([g["lr"] for g in go.param_groups],
                                   [g["lr"] for g in to.param_groups], rtol=1e-12)
        for g, t in zip(go.param_groups, to.param_groups):
            key = "momentum" if kind == "sgd" else "betas"
            assert np.allclose(g[key], t[key], rtol=1e-12), (i, g[key], t[key])
        if i == 17:
            sd, tsd = copy.deepcopy(gs.state_dict()), copy.deepcopy(ts.state_dict())
            go2, to2 = _opts(kind)
            gs, ts = make(optim.lr_scheduler, go2), make(torch.optim.lr_scheduler, to2)
            go2.load_state_dict(go.state_dict())
            to2.load_state_dict(to.state_dict())
            gs.load_state_dict(sd)
            ts.load_state_dict(tsd)
            go, to = go2, to2


def test_warm_restarts_fractional_epochs_and_resume():
    """CosineAnnealingWarmRestarts.step(epoch) with fractional epochs (per batch) and a
    scheduler resumed with last_epoch, as torch's."""
    go, to = _opts("sgd")
    gs = optim.lr_scheduler.CosineAnnealingWarmRestarts(go, 3, 2, eta_min=0.01)
    ts = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(to, 3, 2, eta_min=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ep in [0.1, 0.5, 2.9, 3.0, 3.3, 7.5, 9.0, 12.2, 21.7, 5.0]:
            go.step()
            to.step()
            gs.step(ep)
            ts.step(ep)
            np.testing.assert_allclose(gs.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
    gs = optim.lr_scheduler.CosineAnnealingWarmRestarts(go, 3, 2, eta_min=0.01, last_epoch=4)
    ts = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(to, 3, 2, eta_min=0.01,
                                                              last_epoch=4)
    for _ in range(12):
        go.step()
        to.step()
        gs.step()
        ts.step()
        np.testing.assert_allclose(gs.get_last_lr(), ts.get_last_lr(), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_fused_ignore_index_rows(device, dtype):
    """The fused (N, C) kernel: rows at ignore_index (-100, or a custom one past C) take no
    part, as torch's, in value and gradient; a row out of range besides them makes it NaN."""
    rng = np.random.default_rng(4)
    xv = rng.standard_normal((6, 5)).astype(dtype)
    for ignore, tv in ((-100, [0, -100, 4, 2, -100, 1]), (7, [3, 7, 0, 7, 1, 4])):
        x = gp.asarray(xv, device=device, requires_grad=True)
        tx = torch.tensor(xv, requires_grad=True)
        for red in ("mean", "sum"):
            want = TF.cross_entropy(tx, torch.tensor(tv), ignore_index=ignore, reduction=red)
            got = F.cross_entropy(x, gp.asarray(tv, device=device), ignore_index=ignore,
                                  reduction=red)
            np.testing.assert_allclose(float(got), float(want), rtol=1e-5 if dtype == np.float32
                                       else 1e-12)
            x.grad = None
            tx.grad = None
            got.backward()
            want.backward()
            np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-6)
    bad = F.cross_entropy(gp.asarray(xv, device=device), gp.asarray([0, -100, 5, 2, 1, 1],
                                                                     device=device))
    assert math.isnan(float(bad))
