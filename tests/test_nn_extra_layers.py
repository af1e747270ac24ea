"""torch.nn activations and simple layers grilly lacked (AttributeError for a PyTorch user):
values, input and parameter gradients and reprs against torch (a test-only oracle) on every
device; the random layers by eval identity, statistics, mask structure and mask-consistent
gradients."""
import math

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RTOL, ATOL = 1e-5, 1e-5


def _np(t):
    return t.detach().numpy()


def _g(h, device, requires_grad=False):
    a = gp.asarray(_np(h) if hasattr(h, "detach") else h, device=device)
    if requires_grad:
        a.requires_grad_()
    return a


def _close(a, e, rtol=RTOL, atol=ATOL):
    assert_close(a, _np(e) if hasattr(e, "detach") else e, rtol=rtol, atol=atol)


def _against(tfn, gfn, inputs, device, rtol=RTOL, atol=ATOL):
    """tfn(*torch inputs) and gfn(*grilly inputs): outputs and every input's gradient."""
    ts = [torch.tensor(h, requires_grad=True) for h in inputs]
    gs = [_g(h, device, True) for h in inputs]
    t, g = tfn(*ts), gfn(*gs)
    assert tuple(g.shape) == tuple(t.shape)
    _close(g, t, rtol, atol)
    cot = np.random.default_rng(1).standard_normal(tuple(t.shape)).astype(np.float32)
    (t * torch.tensor(cot)).sum().backward()
    gp.sum(g * _g(cot, device)).backward()
    for tx, gx in zip(ts, gs):
        _close(gx.grad, tx.grad, rtol, atol)
    return g


# points on every branch and on the bounds the activations switch at (0, +-0.5, +-1, +-3)
_GRID = np.concatenate([np.linspace(-5, 5, 41), [-3, 3, 0, -0.5, 0.5, -1, 1, 30, -30, 0.25,
                                                 2.5, -0.25, 7.0, 0.75, -0.75]]).astype(np.float32)
_X = _GRID.reshape(2, -1)
_HARDSWISH_X = _X[~np.isin(_X, (-3.0, 3.0))].reshape(2, -1)   # torch < 2.13 differs at +-3

ACTS = [("celu", dict(alpha=0.7)), ("celu", {}), ("selu", {}), ("hardswish", {}),
        ("hardsigmoid", {}), ("hardtanh", {}), ("hardtanh", dict(min_val=-0.5, max_val=3.0)),
        ("hardshrink", {}), ("hardshrink", dict(lambd=1.0)), ("softshrink", {}),
        ("softshrink", dict(lambd=1.0)), ("tanhshrink", {}), ("softsign", {}),
        ("logsigmoid", {}), ("mish", {}), ("glu", {}), ("glu", dict(dim=0)),
        ("threshold", dict(threshold=0.5, value=-2.0)), ("softmin", dict(dim=1)),
        ("softmin", dict(dim=0)), ("rrelu", {}), ("rrelu", dict(lower=0.1, upper=0.5))]


@pytest.mark.parametrize("name,kw", ACTS, ids=[f"{n}-{'-'.join(map(str, k.values()))}"
                                               for n, k in ACTS])
def test_activation_functional_as_torch(device, name, kw):
    h = _HARDSWISH_X if name == "hardswish" else _X
    _against(lambda t: getattr(TF, name)(t, **kw), lambda x: getattr(F, name)(x, **kw),
             [h], device)


def test_hardswish_slope_at_its_bounds(device):
    # torch 2.13: no slope at -3, slope 1 at 3 (the end of the quadratic piece excluded)
    x = _g(np.array([-3.5, -3.0, -1.5, 0.0, 3.0, 3.5], np.float32), device, True)
    gp.sum(F.hardswish(x)).backward()
    _close(x.grad, np.array([0.0, 0.0, 0.0, 0.5, 1.0, 1.0], np.float32))


def test_activations_in_float64_and_float16(device):
    h = _X.astype(np.float64)
    for name in ("selu", "mish", "logsigmoid", "hardswish", "softsign"):
        _close(getattr(F, name)(_g(h, device)), getattr(TF, name)(torch.tensor(h)), 1e-12, 1e-12)
    try:
        x16 = _g(_X.astype(np.float16), device)
    except TypeError:
        return
    for name in ("mish", "logsigmoid", "celu"):
        y = getattr(F, name)(x16)
        assert y.dtype == gp.float16
        _close(y, getattr(TF, name)(torch.tensor(_X)).numpy().astype(np.float16), 2e-3, 2e-3)


@pytest.mark.parametrize("name", ["hardswish", "logsigmoid", "mish", "selu", "softsign",
                                  "celu"])
def test_activation_second_derivative_as_torch(device, name):
    # a gradient penalty: the hand-written backwards are themselves differentiable
    h = _HARDSWISH_X.astype(np.float64)
    r = np.random.default_rng(2).random(h.shape) + 0.5
    tx = torch.tensor(h, requires_grad=True)
    (tg,) = torch.autograd.grad((torch.tensor(r) * getattr(TF, name)(tx) ** 2).sum(), (tx,),
                                create_graph=True)
    (tg ** 2).sum().backward()
    gx = _g(h, device, True)
    (gg,) = gp.autograd.grad(gp.sum(_g(r, device) * getattr(F, name)(gx) ** 2), (gx,),
                             create_graph=True)
    gp.sum(gg ** 2).backward()
    _close(gg, tg, 1e-9, 1e-9)
    _close(gx.grad, tx.grad, 1e-9, 1e-9)


MODS = [("CELU", (0.6,), {}), ("SELU", (), {}), ("Hardswish", (), {}), ("Hardsigmoid", (), {}),
        ("Hardtanh", (-0.5, 2.0), {}), ("Hardshrink", (0.7,), {}), ("Softshrink", (0.7,), {}),
        ("Tanhshrink", (), {}), ("Softsign", (), {}), ("LogSigmoid", (), {}), ("Mish", (), {}),
        ("GLU", (), dict(dim=1)), ("Threshold", (0.1, 20.0), {}), ("Softmin", (), dict(dim=-1)),
        ("RReLU", (0.2, 0.4), {}), ("Softmax2d", (), {})]


@pytest.mark.parametrize("name,args,kw", MODS, ids=[m[0] for m in MODS])
def test_activation_module_as_torch(device, name, args, kw):
    h = np.random.default_rng(3).standard_normal((2, 4, 3, 2)).astype(np.float32) * 3
    tm, gm = getattr(torch.nn, name)(*args, **kw), getattr(nn, name)(*args, **kw)
    if name == "RReLU":   # the fixed slope of evaluation; training draws are tested below
        tm.eval()
        gm.eval()
    _against(tm, gm, [h], device)
    assert repr(gm) == repr(tm)


INPLACE = [("CELU", dict(alpha=0.5), "celu_"), ("SELU", {}, "selu_"), ("Hardswish", {}, None),
           ("Hardsigmoid", {}, None), ("Mish", {}, None),
           ("Hardtanh", dict(min_val=-0.5, max_val=0.5), "hardtanh_"),
           ("Threshold", dict(threshold=0.2, value=-1.0), "threshold_"),
           ("RReLU", {}, "rrelu_")]


@pytest.mark.parametrize("name,kw,fn", INPLACE, ids=[i[0] for i in INPLACE])
def test_inplace_activation(device, name, kw, fn):
    h = np.random.default_rng(4).standard_normal((3, 5)).astype(np.float32) * 3
    tm, gm = getattr(torch.nn, name)(**kw, inplace=True), getattr(nn, name)(**kw, inplace=True)
    tm.eval()
    gm.eval()
    if name != "Mish" or "inplace" in repr(tm):   # torch < 2.13 printed Mish() either way
        assert repr(gm) == repr(tm)
    # a non-leaf input is overwritten, and the gradient still flows through the old values
    tx, gx = torch.tensor(h, requires_grad=True), _g(h, device, True)
    th, gh = tx * 1.5, gx * 1.5
    t, g = tm(th), gm(gh)
    assert g is gh
    _close(gh, th)
    cot = np.random.default_rng(5).standard_normal(h.shape).astype(np.float32)
    (t * torch.tensor(cot)).sum().backward()
    gp.sum(g * _g(cot, device)).backward()
    _close(gx.grad, tx.grad)
    if fn is not None:   # the functional in-place form
        y = _g(h, device)
        args = tuple(kw.values())
        assert getattr(F, fn)(y, *args) is y
        _close(y, getattr(TF, fn)(torch.tensor(h), *args))


@pytest.mark.parametrize("fn,args", [("relu_", ()), ("elu_", (0.5,)), ("leaky_relu_", (0.2,))])
def test_existing_inplace_functionals(device, fn, args):
    h = np.random.default_rng(6).standard_normal((4, 3)).astype(np.float32)
    y = _g(h, device)
    assert getattr(F, fn)(y, *args) is y
    _close(y, getattr(TF, fn)(torch.tensor(h), *args))
    leaf = _g(h, device, True)
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(F, fn)(leaf, *args)


@pytest.mark.parametrize("c", [1, 4])
def test_prelu_as_torch(device, c):
    h = np.random.default_rng(7).standard_normal((2, 4, 3)).astype(np.float32)
    h[0, 0, 0] = 0.0
    tm, gm = torch.nn.PReLU(c, init=0.1), nn.PReLU(c, init=0.1)
    with torch.no_grad():
        tm.weight.copy_(torch.linspace(-0.5, 0.5, c))
    gm.to(device)
    gm.load_state_dict({k: _np(v) for k, v in tm.state_dict().items()})
    assert list(gm.state_dict()) == ["weight"]
    tx, gx = torch.tensor(h, requires_grad=True), _g(h, device, True)
    t, g = tm(tx), gm(gx)
    _close(g, t)
    cot = np.random.default_rng(8).standard_normal(h.shape).astype(np.float32)
    (t * torch.tensor(cot)).sum().backward()
    gp.sum(g * _g(cot, device)).backward()
    _close(gx.grad, tx.grad)
    _close(gm.weight.grad, tm.weight.grad)
    assert repr(gm) == repr(tm)
    # the functional form, a 1-D input and a scalar slope
    v = np.array([-2.0, 0.0, 3.0], np.float32)
    _close(F.prelu(_g(v, device), _g(np.array([0.3], np.float32), device)),
           TF.prelu(torch.tensor(v), torch.tensor([0.3])))


def test_rrelu_training_draws(device):
    nn.manual_seed(11)
    lower, upper = 0.1, 0.4
    h = np.concatenate([-np.linspace(0.5, 4.0, 3000), np.linspace(0.5, 4.0, 1000)]
                       ).astype(np.float32)
    x = _g(h, device, True)
    y = F.rrelu(x, lower, upper, training=True)
    out = np.asarray(y)
    neg = h < 0
    np.testing.assert_array_equal(out[~neg], h[~neg])        # positives pass through
    slope = out[neg] / h[neg]
    assert slope.min() >= lower - 1e-6 and slope.max() <= upper + 1e-6
    # U(0.1, 0.4): mean 0.25, std 0.087; 3000 draws put the mean within 0.25 +- 0.006 (4 sigma)
    assert abs(slope.mean() - 0.25) < 0.01
    assert abs(slope.std() - (upper - lower) / math.sqrt(12)) < 0.01
    assert len(np.unique(np.round(slope, 5))) > 2000        # a slope per element
    gp.sum(y).backward()
    g = np.asarray(x.grad)
    np.testing.assert_allclose(g[neg], slope, rtol=1e-5)     # the gradient is the drawn slope
    np.testing.assert_array_equal(g[~neg], 1.0)
    # the module draws while training, uses the mean slope in evaluation
    m = nn.RReLU(lower, upper)
    a, b = np.asarray(m(_g(h, device))), np.asarray(m(_g(h, device)))
    assert not np.array_equal(a, b)
    m.eval()
    _close(m(_g(h, device)), TF.rrelu(torch.tensor(h), lower, upper, training=False))


def test_activation_errors():
    x = gp.ones((2, 3))
    for call, err, match in [
            (lambda: F.glu(x, dim=1), ValueError, "even"),
            (lambda: F.glu(gp.ones(()),), ValueError, "scalar"),
            (lambda: F.glu(x, dim=2), ValueError, "out of range"),
            (lambda: F.hardtanh(x, 1.0, -1.0), ValueError, "min_val"),
            (lambda: nn.Hardtanh(1.0, 0.0), ValueError, "min_val"),
            (lambda: F.softshrink(x, -0.1), ValueError, "lambd"),
            (lambda: F.celu(x, 0.0), ValueError, "alpha"),
            (lambda: F.rrelu(x, 0.5, 0.1), ValueError, "lower"),
            (lambda: F.prelu(x, gp.ones((2,))), ValueError, "channel"),
            (lambda: F.prelu(x, gp.ones((3, 1))), ValueError, "1-D"),
            (lambda: F.selu([1.0]), TypeError, "selu"),
            (lambda: F.mish(gp.asarray([1, 2])), TypeError, "floating"),
            (lambda: nn.Softmax2d()(x), ValueError, "Softmax2d"),
            (lambda: nn.PReLU(0), ValueError, "num_parameters")]:
        with pytest.raises(err, match=match):
            call()


# ---- padding ------------------------------------------------------------------------------
PADS = [("ConstantPad1d", ((1, 2), 1.5), (2, 3, 4)), ("ConstantPad2d", ((1, 0, 2, 1), -1.0), (2, 3, 4)),
        ("ConstantPad3d", (1, 0.5), (1, 2, 3, 2, 3)), ("ConstantPad2d", ((-1, 1, 0, 2), 2.0), (3, 4)),
        ("ZeroPad1d", (2,), (3, 4)), ("ZeroPad2d", ((1, 2, 0, 1),), (1, 2, 3, 4)),
        ("ZeroPad3d", ((1, 0, 0, 1, 2, 0),), (2, 2, 3, 2)),
        ("ReflectionPad1d", ((2, 3),), (2, 3, 5)), ("ReflectionPad1d", (1,), (3, 4)),
        ("ReflectionPad2d", ((1, 2, 2, 0),), (1, 2, 3, 4)), ("ReflectionPad2d", (1,), (2, 3, 3)),
        ("ReflectionPad3d", ((1, 0, 1, 2, 0, 1),), (1, 2, 3, 3, 3)),
        ("ReflectionPad3d", (1,), (2, 2, 3, 2)),
        ("ReplicationPad1d", ((2, 3),), (2, 3, 2)), ("ReplicationPad2d", ((3, 0, 1, 2),), (1, 2, 3, 2)),
        ("ReplicationPad3d", ((1, 2, 0, 1, 2, 1),), (1, 2, 2, 3, 2)),
        ("ReplicationPad3d", (1,), (2, 2, 2, 2)),
        ("CircularPad1d", ((2, 3),), (2, 3, 4)), ("CircularPad2d", ((1, 2, 2, 0),), (1, 2, 3, 4)),
        ("CircularPad3d", ((1, 1, 0, 2, 1, 0),), (1, 2, 2, 3, 2)), ("CircularPad2d", (1,), (2, 3, 3))]


@pytest.mark.parametrize("name,args,shape", PADS, ids=[f"{p[0]}-{len(p[2])}d" for p in PADS])
def test_pad_module_as_torch(device, name, args, shape):
    if not hasattr(torch.nn, name):
        pytest.skip(f"this torch has no nn.{name}")
    h = np.random.default_rng(9).standard_normal(shape).astype(np.float32)
    tm, gm = getattr(torch.nn, name)(*args), getattr(nn, name)(*args)
    _against(tm, gm, [h], device)
    assert repr(gm) == repr(tm)


def test_pad_errors():
    with pytest.raises(ValueError, match="ReflectionPad2d: padding must be an int or a tuple of 4"):
        nn.ReflectionPad2d((1, 2))
    with pytest.raises(ValueError, match="ReflectionPad2d: expected a 3-D or 4-D"):
        nn.ReflectionPad2d(1)(gp.ones((4, 4)))
    with pytest.raises(ValueError, match="CircularPad1d: expected a 2-D or 3-D"):
        nn.CircularPad1d(1)(gp.ones((1, 1, 4, 4)))
    with pytest.raises(ValueError, match="reflect"):
        nn.ReflectionPad1d(3)(gp.ones((1, 3)))


# ---- reshuffles and windows ---------------------------------------------------------------
@pytest.mark.parametrize("shape,r", [((2, 8, 3, 2), 2), ((9, 2, 3), 3), ((1, 2, 4, 2, 1), 1)])
def test_pixel_shuffle_as_torch(device, shape, r):
    h = np.random.default_rng(10).standard_normal(shape).astype(np.float32)
    y = _against(torch.nn.PixelShuffle(r), nn.PixelShuffle(r), [h], device)
    # pixel_unshuffle undoes it, exactly
    np.testing.assert_array_equal(np.asarray(nn.PixelUnshuffle(r)(y.detach())), h)
    _against(lambda t: TF.pixel_unshuffle(t, r), lambda x: F.pixel_unshuffle(x, r),
             [np.asarray(y.detach())], device)
    assert repr(nn.PixelShuffle(r)) == repr(torch.nn.PixelShuffle(r))
    assert repr(nn.PixelUnshuffle(r)) == repr(torch.nn.PixelUnshuffle(r))


@pytest.mark.parametrize("shape,g", [((2, 6, 3), 3), ((1, 4, 2, 3), 2), ((2, 6, 1, 1, 2), 6)])
def test_channel_shuffle_as_torch(device, shape, g):
    h = np.random.default_rng(12).standard_normal(shape).astype(np.float32)
    _against(torch.nn.ChannelShuffle(g), nn.ChannelShuffle(g), [h], device)
    assert repr(nn.ChannelShuffle(g)) == repr(torch.nn.ChannelShuffle(g))


def test_shuffle_errors():
    with pytest.raises(ValueError, match="divisible by upscale_factor squared"):
        F.pixel_shuffle(gp.ones((1, 6, 2, 2)), 2)
    with pytest.raises(ValueError, match="divisible by downscale_factor"):
        F.pixel_unshuffle(gp.ones((1, 1, 3, 2)), 2)
    with pytest.raises(ValueError, match="at least 3"):
        F.pixel_shuffle(gp.ones((4, 2)), 2)
    with pytest.raises(ValueError, match="divisible by groups"):
        F.channel_shuffle(gp.ones((1, 5, 2)), 2)
    with pytest.raises(ValueError, match="groups must be a positive int"):
        F.channel_shuffle(gp.ones((1, 4, 2)), 0)


UNFOLD = [((2, 3, 5, 6), dict(kernel_size=(2, 3))),
          ((1, 2, 5, 5), dict(kernel_size=3, dilation=2, padding=1)),
          ((2, 2, 6, 7), dict(kernel_size=(3, 2), padding=(1, 2), stride=(2, 3))),
          ((3, 4, 4), dict(kernel_size=2, stride=2)),
          ((1, 1, 4, 5), dict(kernel_size=(1, 3), dilation=(1, 2), padding=(0, 1)))]


@pytest.mark.parametrize("shape,kw", UNFOLD, ids=[str(i) for i in range(len(UNFOLD))])
def test_unfold_and_fold_as_torch(device, shape, kw):
    h = np.random.default_rng(13).standard_normal(shape).astype(np.float32)
    cols = _against(torch.nn.Unfold(**kw), nn.Unfold(**kw), [h], device)
    size = shape[-2:]
    hc = np.random.default_rng(14).standard_normal(cols.shape).astype(np.float32)
    _against(torch.nn.Fold(size, **kw), nn.Fold(size, **kw), [hc], device)
    assert repr(nn.Unfold(**kw)) == repr(torch.nn.Unfold(**kw))
    assert repr(nn.Fold(size, **kw)) == repr(torch.nn.Fold(size, **kw))


def test_unfold_fold_errors():
    with pytest.raises(ValueError, match="unfold: input must be 3-D"):
        F.unfold(gp.ones((2, 2)), 2)
    with pytest.raises(ValueError, match="unfold: kernel"):
        F.unfold(gp.ones((1, 1, 2, 2)), 3)
    with pytest.raises(ValueError, match="divisible by the product of kernel_size"):
        F.fold(gp.ones((1, 5, 4)), (3, 3), 2)
    with pytest.raises(ValueError, match="sliding blocks"):
        F.fold(gp.ones((1, 4, 5)), (3, 3), 2)
    with pytest.raises(ValueError, match="stride must be positive"):
        F.fold(gp.ones((1, 4, 4)), (3, 3), 2, stride=0)


# ---- distances, normalize, Bilinear -------------------------------------------------------
def _with_zero_rows(shape, seed):
    h = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    h.reshape(-1, shape[-1])[0] = 0.0
    return h


@pytest.mark.parametrize("kw", [{}, dict(p=1.0, dim=0), dict(p=3.0, dim=-1), dict(p=math.inf),
                                dict(dim=1, eps=0.5)])
def test_normalize_as_torch(device, kw):
    h = _with_zero_rows((4, 3), 15)
    h[1] *= 0.01
    _against(lambda t: TF.normalize(t, **kw), lambda x: F.normalize(x, **kw), [h], device)


@pytest.mark.parametrize("s1,s2,kw", [((4, 3), (4, 3), {}), ((2, 3, 4), (2, 3, 4), dict(dim=-1)),
                                      ((5, 3), (1, 3), dict(dim=1)),
                                      ((3, 4), (3, 4), dict(dim=0, eps=0.5))])
def test_cosine_similarity_as_torch(device, s1, s2, kw):
    h1, h2 = _with_zero_rows(s1, 16), np.random.default_rng(17).standard_normal(s2).astype(np.float32)
    _against(lambda a, b: TF.cosine_similarity(a, b, **kw),
             lambda a, b: F.cosine_similarity(a, b, **kw), [h1, h2], device)
    _against(torch.nn.CosineSimilarity(**kw), nn.CosineSimilarity(**kw), [h1, h2], device)
    assert repr(nn.CosineSimilarity(**kw)) == repr(torch.nn.CosineSimilarity(**kw))


@pytest.mark.parametrize("kw", [{}, dict(p=1.0), dict(p=3.0, keepdim=True), dict(eps=0.1)])
def test_pairwise_distance_as_torch(device, kw):
    r = np.random.default_rng(18)
    h1, h2 = r.standard_normal((5, 3)).astype(np.float32), r.standard_normal((5, 3)).astype(np.float32)
    _against(torch.nn.PairwiseDistance(**kw), nn.PairwiseDistance(**kw), [h1, h2], device)
    _against(lambda a, b: TF.pairwise_distance(a, b, **kw),
             lambda a, b: F.pairwise_distance(a, b, **kw), [h1[0], h2], device)
    assert repr(nn.PairwiseDistance(**kw)) == repr(torch.nn.PairwiseDistance(**kw))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_pdist_as_torch(device, p):
    h = np.random.default_rng(19).standard_normal((5, 3)).astype(np.float32)
    _against(lambda t: TF.pdist(t, p), lambda x: F.pdist(x, p), [h], device)


def test_distance_errors():
    with pytest.raises(ValueError, match="pdist: input must be 2-D"):
        F.pdist(gp.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="do not broadcast"):
        F.cosine_similarity(gp.ones((2, 3)), gp.ones((2, 4)))
    with pytest.raises(TypeError, match="pairwise_distance"):
        F.pairwise_distance(gp.ones((2, 3)), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("bias,lead", [(True, (4,)), (False, (2, 3)), (True, ())])
def test_bilinear_as_torch(device, bias, lead):
    torch.manual_seed(0)
    tm, gm = torch.nn.Bilinear(3, 2, 4, bias=bias), nn.Bilinear(3, 2, 4, bias=bias)
    assert repr(gm) == repr(tm)
    assert list(gm.state_dict()) == list(tm.state_dict())
    gm.to(device)
    gm.load_state_dict({k: _np(v) for k, v in tm.state_dict().items()})
    r = np.random.default_rng(20)
    h1 = r.standard_normal(lead + (3,)).astype(np.float32)
    h2 = r.standard_normal(lead + (2,)).astype(np.float32)
    _against(tm, gm, [h1, h2], device)
    for name, p in gm.named_parameters():
        _close(p.grad, dict(tm.named_parameters())[name].grad)
    # the default initialization is U(-1/sqrt(in1), 1/sqrt(in1))
    w = np.asarray(nn.Bilinear(9, 2, 50).weight)
    assert np.abs(w).max() <= 1 / 3 and np.abs(w).max() > 0.3


def test_bilinear_errors():
    w = gp.ones((4, 3, 2))
    with pytest.raises(ValueError, match="same batch dimensions"):
        F.bilinear(gp.ones((5, 3)), gp.ones((4, 2)), w)
    with pytest.raises(ValueError, match="do not match weight"):
        F.bilinear(gp.ones((5, 2)), gp.ones((5, 2)), w)
    with pytest.raises(ValueError, match="bias shape"):
        F.bilinear(gp.ones((5, 3)), gp.ones((5, 2)), w, gp.ones((3,)))


# ---- ParameterList and ParameterDict ------------------------------------------------------
class _Holder:
    """A module holding a ParameterList and a ParameterDict, grilly's and torch's alike."""

    @staticmethod
    def build(lib, arrays):
        m = lib.Module()
        m.plist = lib.ParameterList(arrays[:2])
        m.plist.append(arrays[2])
        m.pdict = lib.ParameterDict({"b": arrays[3], "a": arrays[4]})
        m.pdict.update([("c", arrays[5])])
        return m


def test_parameter_containers_match_torch_keys_and_train(device):
    r = np.random.default_rng(21)
    hs = [r.standard_normal(s).astype(np.float32) for s in ((2, 3), (3,), (1,), (2,), (4,), (2, 2))]
    tm = _Holder.build(torch.nn, [torch.nn.Parameter(torch.tensor(h)) for h in hs])
    gm = _Holder.build(nn, [gp.asarray(h) for h in hs])
    assert list(gm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in gm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert all(nn.Parameter.__instancecheck__(p) for p in gm.plist)   # arrays became parameters
    gm.to(device)
    p0 = gm.plist[0]
    assert p0.device == device and gm.pdict["a"].device == device
    # indexing, iteration, negative indices, slices, keys in order
    assert gm.plist[-3] is p0 and len(gm.plist) == 3 and len(gm.plist[1:]) == 2
    assert list(gm.pdict) == ["a", "b", "c"] and "b" in gm.pdict and len(gm.pdict) == 3
    # gradients reach every entry, and an optimizer made before .to() trains them
    from grilly import optim

    opt = optim.SGD(gm.parameters(), lr=0.1)
    loss = sum(gp.sum(p * p) for p in gm.parameters())
    loss.backward()
    opt.step()
    _close(gm.plist[0], hs[0] * 0.8)
    _close(gm.pdict["c"], hs[5] * 0.8)
    # state_dict round trip into the torch layout
    tm.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in gm.state_dict().items()})
    _close(gm.pdict["b"], tm.pdict["b"])


def test_parameter_list_and_dict_operations():
    pl = nn.ParameterList()
    pl.extend([gp.ones((2,), dtype=gp.float32), gp.zeros((3,))])
    pl += [gp.ones((1,))]
    pl[1] = gp.full((3,), 2.0)
    assert len(pl) == 3 and np.asarray(pl[1]).tolist() == [2.0, 2.0, 2.0]
    assert nn.Parameter.__instancecheck__(pl[1])
    assert "(0): Parameter containing: [grilly.float32 of size 2" in repr(pl)   # (a device after)
    with pytest.raises(IndexError):
        pl[3]
    with pytest.raises(TypeError, match="iterable"):
        pl.extend(gp.ones((2,)))
    with pytest.raises(RuntimeError, match="should not be called"):
        pl(1)
    pd = nn.ParameterDict(dict(x=gp.ones((1,))))
    pd["y"] = gp.ones((2,))
    assert pd.get("z") is None and pd.setdefault("z", gp.zeros((1,))).shape == (1,)
    assert list(pd.keys()) == ["x", "y", "z"]
    k, v = pd.popitem()
    assert k == "z" and v.shape == (1,) and "z" not in pd
    assert pd.pop("x").shape == (1,) and list(pd) == ["y"]
    assert list((pd | nn.ParameterDict({"w": gp.ones((3,))})).keys()) == ["y", "w"]
    assert list(pd.copy().state_dict()) == ["y"]
    with pytest.raises(TypeError, match="keys must be strings"):
        pd[1] = gp.ones((1,))
    with pytest.raises(ValueError, match="length 3"):
        pd.update([("a", 1, 2)])
    with pytest.raises(KeyError):
        pd["missing"]
    pd.clear()
    assert len(pd) == 0 and list(pd.state_dict()) == []


# ---- channel and alpha dropout ------------------------------------------------------------
DROPS = [("Dropout1d", F.dropout1d, (20, 30, 8), True), ("Dropout1d", F.dropout1d, (40, 8), True),
         ("Dropout2d", F.dropout2d, (10, 40, 3, 3), True),
         ("Dropout3d", F.dropout3d, (6, 50, 2, 2, 2), True),
         ("Dropout3d", F.dropout3d, (300, 2, 2, 2), True),
         ("AlphaDropout", F.alpha_dropout, (40, 50), False),
         ("FeatureAlphaDropout", F.feature_alpha_dropout, (20, 30, 4), False)]


@pytest.mark.parametrize("name,fn,shape,scaled", DROPS, ids=[f"{d[0]}-{len(d[2])}d" for d in DROPS])
def test_random_dropouts(device, name, fn, shape, scaled):
    p = 0.3
    h = (np.random.default_rng(22).random(shape).astype(np.float32) + 0.5)   # no zeros
    # evaluation (and p = 0) is the identity, the very same array
    m = getattr(nn, name)(p)
    assert repr(m) == repr(getattr(torch.nn, name)(p))
    x = _g(h, device)
    assert m.eval()(x) is x and fn(x, 0.0, True) is x and fn(x, p, False) is x
    m.train()
    x = _g(h, device, True)
    y = m(x)
    out = np.asarray(y)
    feature = name != "AlphaDropout"
    lead = 1 if len(shape) in (2, 4) and name in ("Dropout1d", "Dropout3d") else 2
    units = out.reshape(int(np.prod(shape[:lead])), -1) if feature else out.reshape(-1, 1)
    ref = h.reshape(units.shape)
    if scaled:
        keep = units != 0
        # whole channels are kept (scaled by 1 / (1 - p)) or zeroed
        assert np.all(keep.all(axis=1) | ~keep.any(axis=1))
        kept = keep.all(axis=1)
        np.testing.assert_allclose(units[kept], ref[kept] / (1 - p), rtol=1e-6)
    else:
        alpha = 1.7580993408473766
        a = 1 / math.sqrt((alpha ** 2 * p + 1) * (1 - p))
        dropped_value = -alpha * a + alpha * a * p
        kept_vals = a * ref + alpha * a * p
        kept = np.isclose(units, kept_vals, rtol=1e-5, atol=1e-6)
        dropped = np.isclose(units, dropped_value, rtol=1e-5, atol=1e-6)
        assert np.all(kept | dropped)
        assert np.all(kept.all(axis=1) | dropped.all(axis=1))
        kept = kept.all(axis=1)
    # about 1 - p of the units kept (binomial: 4 sigma)
    n = kept.size
    assert abs(kept.mean() - (1 - p)) < 4 * math.sqrt(p * (1 - p) / n) + 1 / n
    # the gradient is the mask: 1 / (1 - p) (or a) on kept units, 0 on dropped ones
    gp.sum(y).backward()
    g = np.asarray(x.grad).reshape(units.shape)
    gain = 1 / (1 - p) if scaled else a
    np.testing.assert_allclose(g[kept], gain, rtol=1e-6)
    np.testing.assert_array_equal(g[~kept], 0.0)
    # p = 1 drops everything
    assert np.all(np.asarray(fn(_g(h, device), 1.0, True)) == 0)


def test_alpha_dropout_keeps_selu_statistics(device):
    # standard normal input keeps mean 0 and variance 1 through alpha dropout
    h = np.random.default_rng(23).standard_normal((200, 100)).astype(np.float32)
    y = np.asarray(F.alpha_dropout(_g(h, device), 0.2, training=True))
    assert abs(y.mean()) < 0.03 and abs(y.var() - 1.0) < 0.05


def test_dropout_inplace_and_errors(device):
    h = np.ones((4, 6, 3), np.float32)
    x = _g(h, device)
    assert F.dropout2d(x, 0.5, True, inplace=True) is x
    vals = np.unique(np.asarray(x))
    assert set(vals.tolist()) <= {0.0, 2.0}
    with pytest.raises(ValueError, match="dropout1d: expected a 2-D"):
        F.dropout1d(gp.ones((2, 2, 2, 2)))
    with pytest.raises(ValueError, match="probability p must be in"):
        F.dropout3d(gp.ones((2, 2)), 1.5)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        F.feature_alpha_dropout(gp.ones((3,)), 0.5, True)
