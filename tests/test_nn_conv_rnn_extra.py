"""Transposed and 3-D convolutions, the recurrent cells, nn.RNN, the upsampling layers and
F.interpolate's bicubic, trilinear and area modes against torch (a test-only oracle): values,
state_dict keys and layouts, and the gradients of inputs and parameters, on every device."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _np(t):
    return t.detach().numpy()


def _g(x, device, requires_grad=False):
    a = gp.asarray(_np(x), device=device)
    if requires_grad:
        a.requires_grad_()
    return a


def _close(a, e, rtol=RTOL, atol=ATOL):
    assert_close(a, _np(e) if hasattr(e, "detach") else e, rtol=rtol, atol=atol)


def _flat(out):
    """A module's output as a list of arrays (tuples of states flattened)."""
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in _flat(o)]
    return [] if out is None else [out]


def _backward_both(touts, gouts, device):
    """A random cotangent on every output, then backward on both sides."""
    tl, gl = 0, 0
    for t, g in zip(touts, gouts):
        _close(g, t)
        cot = torch.randn(t.shape, dtype=t.dtype)
        tl = tl + (t * cot).sum()
        gl = gl + gp.sum(g * _g(cot, device))
    tl.backward()
    gl.backward()


def _check_fn(tf, gf, tensors, device, **kw):
    """tf(*tensors, **kw) against gf on the same values: outputs and every input's gradient
    (None entries are passed as None)."""
    ts = [None if t is None else t.clone().requires_grad_() for t in tensors]
    gs = [None if t is None else _g(t, device, True) for t in tensors]
    _backward_both([tf(*ts, **kw)], [gf(*gs, **kw)], device)
    for t, g in zip(ts, gs):
        if t is not None:
            _close(g.grad, t.grad)


def _check_module(tmod, gmod, inputs, device, **kw):
    """tmod's state_dict loaded into gmod (same keys, same shapes); outputs, the inputs' and
    every parameter's gradients against torch. ``inputs``: tensors, or tuples of them."""
    gmod.to(device)
    sd = tmod.state_dict()
    assert list(gmod.state_dict()) == list(sd)
    assert {k: tuple(v.shape) for k, v in gmod.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in sd.items()}
    res = gmod.load_state_dict({k: _np(v) for k, v in sd.items()})
    assert res.missing_keys == [] and res.unexpected_keys == []
    flat_t = [t.clone().requires_grad_() for t in _flat(inputs)]
    flat_g = [_g(t, device, True) for t in _flat(inputs)]

    def rebuild(flat):
        it = iter(flat)
        return [tuple(next(it) for _ in i) if isinstance(i, tuple) else
                (None if i is None else next(it)) for i in inputs]

    targs = rebuild(flat_t)
    gargs = rebuild(flat_g)
    _backward_both(_flat(tmod(*targs, **kw)), _flat(gmod(*gargs, **kw)), device)
    for t, g in zip(flat_t, flat_g):
        _close(g.grad, t.grad)
    tp = dict(tmod.named_parameters())
    for name, p in gmod.named_parameters():
        _close(p.grad, tp[name].grad)


def _randn(*shape):
    return torch.randn(*shape)


# ---- transposed convolution ---------------------------------------------------------------
CT2 = [  # (input, weight, bias, options)
    ((2, 4, 5, 6), (4, 3, 3, 2), 6, dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                                         groups=2, dilation=(1, 2))),
    ((2, 3, 4, 5), (3, 2, 3, 3), None, dict(stride=1, padding=2, output_padding=(1, 0),
                                            dilation=(2, 1))),
    ((1, 2, 3, 3), (2, 4, 1, 1), 4, dict(stride=2)),
    ((3, 4, 5), (3, 2, 2, 3), 2, {}),   # unbatched
]


@pytest.mark.parametrize("xs,ws,bs,kw", CT2)
def test_conv_transpose2d_values_and_gradients(device, xs, ws, bs, kw):
    _check_fn(TF.conv_transpose2d, F.conv_transpose2d,
              [_randn(*xs), _randn(*ws), None if bs is None else _randn(bs)], device, **kw)


@pytest.mark.parametrize("xs,ws,bs,kw", [
    ((2, 4, 7), (4, 3, 3), 6, dict(stride=2, padding=1, output_padding=1, groups=2, dilation=2)),
    ((3, 5), (3, 2, 4), None, dict(stride=3, padding=(2,))),   # unbatched
])
def test_conv_transpose1d_values_and_gradients(device, xs, ws, bs, kw):
    _check_fn(TF.conv_transpose1d, F.conv_transpose1d,
              [_randn(*xs), _randn(*ws), None if bs is None else _randn(bs)], device, **kw)


@pytest.mark.parametrize("xs,ws,bs,kw", [
    ((2, 4, 3, 4, 3), (4, 3, 3, 2, 3), 6, dict(stride=(2, 1, 2), padding=(1, 0, 1),
                                               output_padding=(1, 0, 1), groups=2,
                                               dilation=(1, 2, 1))),
    ((2, 3, 2, 3), (2, 2, 2, 2, 2), None, {}),   # unbatched
])
def test_conv_transpose3d_values_and_gradients(device, xs, ws, bs, kw):
    _check_fn(TF.conv_transpose3d, F.conv_transpose3d,
              [_randn(*xs), _randn(*ws), None if bs is None else _randn(bs)], device, **kw)


def test_conv_transpose2d_second_order(device):
    """create_graph: the gradient is itself differentiable (a gradient penalty), float64."""
    x, w, b = (torch.randn(*s, dtype=torch.float64) for s in ((2, 4, 3, 4), (4, 3, 3, 2), (6,)))
    kw = dict(stride=2, padding=1, output_padding=1, groups=2)
    tx, tw, tb = (t.clone().requires_grad_() for t in (x, w, b))
    gx, gw, gb = (_g(t, device, True) for t in (x, w, b))
    r = torch.rand(2, 6, 6, 7, dtype=torch.float64)
    tgs = torch.autograd.grad((r * TF.conv_transpose2d(tx, tw, tb, **kw) ** 2).sum(), (tx, tw),
                              create_graph=True)
    ggs = gp.autograd.grad(gp.sum(_g(r, device) * F.conv_transpose2d(gx, gw, gb, **kw) ** 2),
                           (gx, gw), create_graph=True)
    sum(t.square().sum() for t in tgs).backward()
    sum(gp.sum(g * g) for g in ggs).backward()
    for g, t in [*zip(ggs, tgs), (gx.grad, tx.grad), (gw.grad, tw.grad), (gb.grad, tb.grad)]:
        _close(g, t, 1e-9, 1e-9)


@pytest.mark.parametrize("n,args,kw,out_size", [
    (2, (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1), None),
    (2, (3, 4, (2, 3)), dict(stride=(2, 3), bias=False, dilation=2), None),
    (2, (3, 4, 3), dict(stride=3, padding=1), (2, 4, 11, 14)),   # output_size picks the padding
    (1, (4, 2, 3), dict(stride=2, groups=2), [16]),
    (1, (3, 2, 5), dict(padding=2, dilation=2), None),
    (3, (2, 4, (2, 3, 2)), dict(stride=(1, 2, 2), padding=(0, 1, 0), output_padding=(0, 1, 1)),
     None),
])
def test_conv_transpose_modules(device, n, args, kw, out_size):
    tmod = getattr(torch.nn, f"ConvTranspose{n}d")(*args, **kw)
    gmod = getattr(nn, f"ConvTranspose{n}d")(*args, **kw)
    assert repr(gmod) == repr(tmod)
    assert gmod.weight.shape == tuple(tmod.weight.shape)
    size = {1: (7,), 2: (4, 5), 3: (3, 4, 3)}[n]
    x = torch.randn(2, args[0], *size)
    extra = {} if out_size is None else {"output_size": out_size}
    _check_module(tmod, gmod, [x], device, **extra)


def test_conv_transpose_default_initialization_bounds():
    """kaiming_uniform(a=sqrt(5)) over fan_in = out_channels/groups * kernel, as torch's."""
    m = nn.ConvTranspose2d(6, 4, 3, groups=2)
    fan_in = 2 * 9
    w, b = np.asarray(m.weight), np.asarray(m.bias)
    assert np.abs(w).max() <= 1 / np.sqrt(fan_in) + 1e-7 < np.abs(w).max() * 1.5
    assert np.abs(b).max() <= 1 / np.sqrt(fan_in) + 1e-7


def test_conv_transpose_errors():
    x = gp.ones((1, 4, 3, 3))
    w = gp.ones((4, 2, 3, 3))
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(x, w, stride=2, output_padding=2)
    with pytest.raises(ValueError, match="channels"):
        F.conv_transpose2d(gp.ones((1, 3, 3, 3)), w)
    with pytest.raises(ValueError, match="padding"):
        F.conv_transpose2d(x, w, padding="same")
    with pytest.raises(ValueError, match="too small"):
        F.conv_transpose2d(x, gp.ones((4, 2, 1, 1)), padding=2)
    with pytest.raises(ValueError, match="bias"):
        F.conv_transpose2d(x, w, gp.ones((3,)))
    with pytest.raises(TypeError, match="conv_transpose2d"):
        F.conv_transpose2d(gp.ones((1, 4, 3, 3), dtype=gp.int32), w)
    with pytest.raises(ValueError, match="padding_mode"):
        nn.ConvTranspose2d(4, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="divisible"):
        nn.ConvTranspose2d(4, 3, 3, groups=2)
    m = nn.ConvTranspose2d(4, 2, 3, stride=2)
    with pytest.raises(ValueError, match="valid sizes range from"):
        m(x, output_size=(9, 9))
    with pytest.raises(ValueError, match="output_size must have"):
        m(x, output_size=(7,))
    assert m(x, output_size=(8, 7)).shape == (1, 2, 8, 7)


# ---- 3-D convolution ----------------------------------------------------------------------
@pytest.mark.parametrize("xs,ws,bs,kw", [
    ((2, 4, 5, 6, 5), (6, 2, 3, 2, 3), 6, dict(stride=(2, 1, 2), padding=(1, 0, 1), groups=2,
                                               dilation=(1, 2, 1))),
    ((1, 3, 4, 5, 4), (2, 3, 3, 3, 2), None, dict(padding="same", dilation=(2, 1, 1))),
    ((1, 2, 3, 4, 4), (2, 2, 1, 2, 2), 2, dict(padding="valid", stride=2)),
    ((2, 3, 4, 3), (3, 2, 2, 2, 2), 3, dict(padding=1)),   # unbatched
])
def test_conv3d_values_and_gradients(device, xs, ws, bs, kw):
    _check_fn(TF.conv3d, F.conv3d, [_randn(*xs), _randn(*ws), None if bs is None else _randn(bs)],
              device, **kw)


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1, groups=2),
                                dict(padding="same", bias=False, dilation=(1, 2, 1)),
                                dict(padding=(1, 0, 2), padding_mode="reflect"),
                                dict(padding=1, padding_mode="circular")])
def test_conv3d_module(device, kw):
    tmod, gmod = torch.nn.Conv3d(4, 6, (3, 2, 3), **kw), nn.Conv3d(4, 6, (3, 2, 3), **kw)
    assert repr(gmod) == repr(tmod)
    _check_module(tmod, gmod, [torch.randn(2, 4, 4, 5, 4)], device)


def test_conv3d_errors():
    with pytest.raises(ValueError, match="conv3d"):
        F.conv3d(gp.ones((1, 2, 3, 3)), gp.ones((2, 2, 1, 1)))
    with pytest.raises(ValueError, match="channels"):
        F.conv3d(gp.ones((1, 3, 3, 3, 3)), gp.ones((2, 2, 1, 1, 1)))
    with pytest.raises(ValueError, match="stride 1"):
        F.conv3d(gp.ones((1, 2, 3, 3, 3)), gp.ones((2, 2, 1, 1, 1)), padding="same", stride=2)
    with pytest.raises(ValueError, match="larger than the padded input"):
        F.conv3d(gp.ones((1, 2, 2, 3, 3)), gp.ones((2, 2, 3, 1, 1)))


# ---- recurrent cells and RNN --------------------------------------------------------------
@pytest.mark.parametrize("name,kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                                     ("LSTMCell", {}), ("GRUCell", {}),
                                     ("RNNCell", {"bias": False}), ("LSTMCell", {"bias": False}),
                                     ("GRUCell", {"bias": False})])
@pytest.mark.parametrize("batched,with_hx", [(True, True), (True, False), (False, True),
                                             (False, False)])
def test_cells(device, name, kw, batched, with_hx):
    tmod, gmod = getattr(torch.nn, name)(3, 5, **kw), getattr(nn, name)(3, 5, **kw)
    assert repr(gmod) == repr(tmod)
    lead = (4,) if batched else ()
    x = torch.randn(*lead, 3)
    hx = None
    if with_hx:
        hx = (torch.randn(*lead, 5), torch.randn(*lead, 5)) if name == "LSTMCell" else \
            torch.randn(*lead, 5)
    _check_module(tmod, gmod, [x, hx], device)


def test_cell_state_dict_initialization_and_errors():
    m = nn.LSTMCell(3, 4)
    assert [(k, v.shape) for k, v in m.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in torch.nn.LSTMCell(3, 4).state_dict().items()]
    assert all(np.abs(np.asarray(p)).max() <= 0.5 for p in m.parameters())
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNNCell(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="GRUCell.*1-D or 2-D"):
        nn.GRUCell(3, 4)(gp.ones((2, 2, 3)))
    with pytest.raises(ValueError, match="RNNCell.*features"):
        nn.RNNCell(3, 4)(gp.ones((2, 5)))
    with pytest.raises(ValueError, match="GRUCell.*hidden state of shape"):
        nn.GRUCell(3, 4)(gp.ones((2, 3)), gp.ones((3, 4)))
    with pytest.raises(TypeError, match="LSTMCell.*tuple"):   # torch's TypeError too
        m(gp.ones((2, 3)), gp.ones((2, 4)))


@pytest.mark.parametrize("kw", [
    {},
    {"nonlinearity": "relu", "num_layers": 2},
    {"num_layers": 2, "bidirectional": True, "batch_first": True},
    {"bias": False, "bidirectional": True},
    {"num_layers": 2, "dropout": 1.0},   # train mode: the second layer sees zeros, as torch's
])
@pytest.mark.parametrize("batched,with_h0", [(True, False), (True, True), (False, True)])
def test_rnn(device, kw, batched, with_h0):
    tmod, gmod = torch.nn.RNN(3, 4, **kw), nn.RNN(3, 4, **kw)
    assert repr(gmod) == repr(tmod)
    dirs = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1)
    shape = ((2, 5) if kw.get("batch_first") else (5, 2)) if batched else (5,)
    x = torch.randn(*shape, 3)
    h0 = torch.randn(layers * dirs, *((2,) if batched else ()), 4) if with_h0 else None
    _check_module(tmod, gmod, [x, h0], device)


def test_rnn_positional_nonlinearity_and_errors():
    m = nn.RNN(3, 4, 2, "relu", False)
    assert (m.nonlinearity, m.num_layers, m.bias) == ("relu", 2, False)
    assert "weight_hh_l1" in m.state_dict() and "bias_ih_l0" not in m.state_dict()
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="RNN.*h0 of shape"):
        nn.RNN(3, 4)(gp.ones((5, 2, 3)), gp.ones((2, 2, 4)))


# ---- upsampling layers and interpolate modes ----------------------------------------------
@pytest.mark.parametrize("name,kw", [("UpsamplingNearest2d", {"scale_factor": 2}),
                                     ("UpsamplingNearest2d", {"size": (5, 7)}),
                                     ("UpsamplingBilinear2d", {"scale_factor": 2}),
                                     ("UpsamplingBilinear2d", {"size": (7, 4)})])
def test_upsampling_modules(device, name, kw):
    tmod, gmod = getattr(torch.nn, name)(**kw), getattr(nn, name)(**kw)
    assert repr(gmod) == repr(tmod)
    _check_module(tmod, gmod, [torch.randn(2, 3, 3, 4)], device)


INTERP = [
    ((2, 3, 5, 7), dict(mode="bicubic", size=(9, 4))),
    ((2, 3, 5, 7), dict(mode="bicubic", size=(9, 4), align_corners=True)),
    ((2, 3, 5, 7), dict(mode="bicubic", scale_factor=(1.7, 2.5))),
    ((2, 3, 5, 7), dict(mode="bicubic", scale_factor=(1.7, 2.5), align_corners=True)),
    ((1, 2, 6, 5), dict(mode="bicubic", scale_factor=0.6, recompute_scale_factor=True)),
    ((1, 2, 4, 3), dict(mode="bicubic", size=1, align_corners=True)),
    ((1, 2, 4, 3, 5), dict(mode="trilinear", size=(7, 5, 2))),
    ((1, 2, 4, 3, 5), dict(mode="trilinear", scale_factor=(1.5, 2, 0.5), align_corners=True)),
    ((2, 3, 7), dict(mode="area", size=3)),
    ((2, 3, 5, 7), dict(mode="area", size=(3, 9))),
    ((2, 3, 5, 7), dict(mode="area", scale_factor=0.5)),
    ((1, 2, 4, 6, 5), dict(mode="area", size=(2, 3, 4))),
    ((1, 2, 4, 6, 5), dict(mode="nearest", size=(2, 8, 4))),
    ((1, 2, 4, 6, 5), dict(mode="nearest-exact", scale_factor=1.5)),
]


@pytest.mark.parametrize("shape,kw", INTERP)
def test_interpolate_modes(device, shape, kw):
    _check_fn(TF.interpolate, F.interpolate, [torch.randn(*shape)], device, **kw)


def test_interpolate_mode_errors():
    with pytest.raises(ValueError, match="align_corners"):
        F.interpolate(gp.ones((1, 1, 4, 4)), size=2, mode="area", align_corners=True)
    with pytest.raises(ValueError, match="bicubic.*4-D"):
        F.interpolate(gp.ones((1, 1, 4)), size=2, mode="bicubic")
    with pytest.raises(ValueError, match="trilinear.*5-D"):
        F.interpolate(gp.ones((1, 1, 4, 4)), size=2, mode="trilinear")
    with pytest.raises(ValueError, match="antialias"):   # bilinear and bicubic only
        F.interpolate(gp.ones((1, 1, 4, 4)), size=2, mode="area", antialias=True)
