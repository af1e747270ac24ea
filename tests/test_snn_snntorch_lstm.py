"""snnTorch's SLSTM, SConv2dLSTM, the convolutional RLeaky/RSynaptic and BatchNormTT1d/2d
against snnTorch itself (its state_dict loaded into grilly's): spikes and states step by step,
every reset mechanism, init_hidden on and off, and the gradients of a loss over the steps with
respect to the input and the weights (torch's autograd), on every device."""
import contextlib

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import snn
from grilly.nn.snn import snntorch_compat as stc

torch = pytest.importorskip("torch")
snntorch = pytest.importorskip("snntorch")
from snntorch.functional import quant as squant  # noqa: E402

T = 3
R = np.random.default_rng(11)
TOL = dict(rtol=1e-6, atol=1e-7)   # float64 (grilly's sigmoid and tanh are float32-accurate)
TOL32 = dict(rtol=1e-4, atol=1e-5)    # the conv RLeaky/RSynaptic run in float32 (below)
RESETS = ["subtract", "zero", "none"]


@pytest.fixture(autouse=True)
def _seed():
    # each test draws the same data and torch weights whatever ran before it (pytest -n too)
    global R
    R = np.random.default_rng(11)
    torch.manual_seed(11)


def _np(a):
    return np.asarray(a.to_device("cpu"))


def _g(a, device, dtype=gp.float64, grad=False):
    x = gp.asarray(np.asarray(a), dtype=dtype, device=device)
    return x.requires_grad_() if grad else x


@contextlib.contextmanager
def _torch64():
    # snnTorch's SLSTM/SConv2dLSTM create their zero states in torch's default dtype
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def _load(ref, mine, device):
    """snnTorch's state_dict into grilly's layer (the keys must be the same)."""
    sd = {k: v.detach().numpy() for k, v in ref.state_dict().items()}
    assert set(sd) == set(mine.state_dict())
    mine.load_state_dict(sd)
    return mine.to(device)


def _run(layer, x, names, init_hidden, feed_spk, grilly):
    """The snnTorch loop over x's steps: ``spk, *state = layer(x[t], *state)`` (the spikes
    passed back too for the recurrent neurons), or with init_hidden ``spk = layer(x[t])`` and
    the state read off the layer; per step (spk, *state)."""
    state, out = (), []
    for t in range(x.shape[0]):
        if init_hidden:
            spk = layer(x[t])
            st = tuple(getattr(layer, n) for n in names)
        else:
            res = layer(x[t], *state)
            spk, st = res[0], tuple(res[1:])
            state = (spk, *st) if feed_spk else st
        out.append((spk, *st))
    return out


def _compare(ref_out, my_out, device, tol, dtype):
    """Every step's spikes and states equal; returns the two losses sum(W * out) (random W)."""
    lt, lg = 0, 0
    for rs, ms in zip(ref_out, my_out):
        for k, (r, m) in enumerate(zip(rs, ms)):
            rn = r.detach().numpy()
            if k == 0:
                np.testing.assert_array_equal(_np(m), rn)
            else:
                np.testing.assert_allclose(_np(m), rn, **tol)
            w = R.standard_normal(rn.shape)
            lt = lt + (r * torch.tensor(w, dtype=r.dtype)).sum()
            lg = lg + gp.sum(m * _g(w, device, dtype))
    assert any(float(rs[0].detach().sum()) > 0 for rs in ref_out[:-1])   # spikes (and resets) happen
    return lt, lg


def _check_grads(ref, mine, xt, xg, names, tol):
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **tol)
    params = dict(ref.named_parameters())
    mp = dict(mine.named_parameters())
    for n in names:
        np.testing.assert_allclose(_np(mp[n].grad), params[n].grad.numpy(), **tol)


# ---- SLSTM ------------------------------------------------------------------------------------
@pytest.mark.parametrize("init_hidden", [False, True])
@pytest.mark.parametrize("reset", RESETS)
def test_slstm_equals_snntorch(reset, init_hidden, device):
    """SLSTM (LSTMCell state (mem, syn), the membrane's reset, learnable threshold): spikes,
    syn, mem per step and the gradients for the input, the LSTM's weights and the threshold
    equal snnTorch's (input_size == hidden_size: snnTorch keeps its state only then)."""
    B, N = 2, 3
    x = R.standard_normal((T, B, N)) * 1.5
    kw = dict(threshold=0.125, reset_mechanism=reset, init_hidden=init_hidden,
              learn_threshold=True)
    with _torch64():
        ref = snntorch.SLSTM(N, N, **kw).double()
        mine = _load(ref, snn.SLSTM(N, N, **kw, dtype=gp.float64), device)
        xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
        if not init_hidden:
            assert mine.init_slstm() == (None, None)
        ro = _run(ref, xt, ("syn", "mem"), init_hidden, False, False)
        mo = _run(mine, xg, ("syn", "mem"), init_hidden, False, True)
        lt, lg = _compare(ro, mo, device, TOL, gp.float64)
        lt.backward()
    lg.backward()
    _check_grads(ref, mine, xt, xg, ["lstm_cell.weight_ih", "lstm_cell.weight_hh",
                                     "lstm_cell.bias_ih", "lstm_cell.bias_hh", "threshold"], TOL)


@pytest.mark.parametrize("opt", ["state_quant", "surrogate_disable"])
def test_slstm_options_equal_snntorch(opt, device):
    """snnTorch's state_quant (both states rounded, the gradient straight through) and
    surrogate_disable (spikes without a gradient) on SLSTM."""
    B, N = 2, 3
    x = R.standard_normal((T, B, N)) * 1.5
    kw = dict(threshold=0.125, reset_mechanism="subtract")
    q = dict(num_bits=4, threshold=0.125, upper_limit=2.0)
    rk = dict(kw, **({"state_quant": squant.state_quant(**q)} if opt == "state_quant" else
                     {"surrogate_disable": True}))
    mk = dict(kw, **({"state_quant": snn.functional.state_quant(**q)}
                     if opt == "state_quant" else {"surrogate_disable": True}))
    # float32: snnTorch's quantized states are float32 and feed its LSTMCell
    x = x.astype(np.float32)
    ref = snntorch.SLSTM(N, N, **rk)
    mine = _load(ref, snn.SLSTM(N, N, **mk), device)
    xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, gp.float32, grad=True)
    ro = _run(ref, xt, ("syn", "mem"), False, False, False)
    mo = _run(mine, xg, ("syn", "mem"), False, False, True)
    lt, lg = _compare(ro, mo, device, TOL32, gp.float32)
    lt.backward()
    lg.backward()
    _check_grads(ref, mine, xt, xg, ["lstm_cell.weight_ih", "lstm_cell.bias_hh"], TOL32)


def test_slstm_keeps_its_state_when_input_and_hidden_sizes_differ(device):
    """input_size != hidden_size: the state carries over the steps (snnTorch 1.0 compares it
    with the input's shape and restarts from zeros every step); the reference is snnTorch's
    equations on torch's LSTMCell with snnTorch's ATan spike."""
    B, n_in, n_h, thr = 2, 2, 3, 0.125
    x = R.standard_normal((T, B, n_in)) * 1.5
    with _torch64():
        cell = torch.nn.LSTMCell(n_in, n_h)
        spike = snntorch.surrogate.atan()
        mine = snn.SLSTM(n_in, n_h, threshold=thr, reset_mechanism="subtract",
                         dtype=gp.float64)
        mine.load_state_dict({"lstm_cell." + k: v.detach().numpy()
                              for k, v in cell.state_dict().items()}, strict=False)
        mine.to(device)
        xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
        syn, mem, ro = torch.zeros(B, n_h), torch.zeros(B, n_h), []
        for t in range(T):
            r = (mem > thr).double()
            mem, syn = cell(xt[t], (mem, syn))
            mem = mem - r * thr
            ro.append((spike(mem - thr), syn, mem))
        mo = _run(mine, xg, ("syn", "mem"), False, False, True)
        lt, lg = _compare(ro, mo, device, TOL, gp.float64)
        lt.backward()
    lg.backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)
    np.testing.assert_allclose(_np(mine.lstm_cell.weight_hh.grad), cell.weight_hh.grad.numpy(),
                               **TOL)


# ---- SConv2dLSTM ------------------------------------------------------------------------------
@pytest.mark.parametrize("init_hidden", [False, True])
@pytest.mark.parametrize("reset,pool", [("subtract", "max_pool"), ("zero", "avg_pool"),
                                        ("none", None)])
def test_sconv2dlstm_equals_snntorch(reset, pool, init_hidden, device):
    """SConv2dLSTM (one Conv2d for the gates i, f, o, g; the spike of the max/avg-pooled
    membrane): spikes, syn, mem per step and the gradients for the input and conv.weight/bias
    equal snnTorch's."""
    x = R.standard_normal((T, 1, 1, 4, 4)) * 1.5
    kw = dict(threshold=0.0625, reset_mechanism=reset, init_hidden=init_hidden,
              **({pool: 2} if pool else {}))
    with _torch64():
        ref = snntorch.SConv2dLSTM(1, 2, 3, **kw).double()
        mine = _load(ref, snn.SConv2dLSTM(1, 2, 3, **kw, dtype=gp.float64), device)
        xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
        ro = _run(ref, xt, ("syn", "mem"), init_hidden, False, False)
        mo = _run(mine, xg, ("syn", "mem"), init_hidden, False, True)
        assert mo[0][0].shape == ((1, 2, 2, 2) if pool else (1, 2, 4, 4))
        lt, lg = _compare(ro, mo, device, TOL, gp.float64)
        lt.backward()
    lg.backward()
    _check_grads(ref, mine, xt, xg, ["conv.weight", "conv.bias"], TOL)


# ---- convolutional RLeaky / RSynaptic ---------------------------------------------------------
_RECURRENT = {
    "RLeaky": (lambda: snntorch.RLeaky, lambda: stc.RLeaky, dict(beta=0.8), ("spk", "mem")),
    "RSynaptic": (lambda: snntorch.RSynaptic, lambda: snn.RSynaptic, dict(alpha=0.6, beta=0.8),
                  ("spk", "syn", "mem")),
}


@pytest.mark.parametrize("init_hidden", [False, True])
@pytest.mark.parametrize("reset", RESETS)
@pytest.mark.parametrize("name", list(_RECURRENT))
def test_conv_recurrent_equals_snntorch(name, reset, init_hidden, device):
    """RLeaky/RSynaptic with conv2d_channels and kernel_size (all_to_all=True): the recurrence
    a Conv2d(C, C, k) over the previous spikes; spikes and states per step and the gradients
    for the input and recurrent.weight/bias equal snnTorch's. In float32: snnTorch's spikes
    are float32 and feed its recurrent convolution."""
    ref_cls, my_cls, kw, names = _RECURRENT[name]
    x = (R.standard_normal((T, 1, 2, 4, 4)) * 1.5).astype(np.float32)
    kw = dict(kw, conv2d_channels=2, kernel_size=3, reset_mechanism=reset,
              init_hidden=init_hidden)
    ref = ref_cls()(**kw)
    mine = _load(ref, my_cls()(**kw), device)
    assert isinstance(mine.recurrent, nn.Conv2d)
    xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, gp.float32, grad=True)
    ro = _run(ref, xt, names, init_hidden, True, False)
    mo = _run(mine, xg, names, init_hidden, True, True)
    lt, lg = _compare(ro, mo, device, TOL32, gp.float32)
    lt.backward()
    lg.backward()
    _check_grads(ref, mine, xt, xg, ["recurrent.weight", "recurrent.bias"], TOL32)


@pytest.mark.parametrize("reset", ["subtract", "zero"])
def test_grilly_rleaky_conv_multi_step_equals_snntorch(reset, device):
    """grilly's own snn.RLeaky with the convolutional recurrence, all T steps in one 'm' call
    (its own step), equals snnTorch's RLeaky step by step, gradients included."""
    x = (R.standard_normal((T, 1, 2, 4, 4)) * 1.5).astype(np.float32)
    ref = snntorch.RLeaky(0.8, conv2d_channels=2, kernel_size=3, reset_mechanism=reset)
    mine = snn.RLeaky(0.8, conv2d_channels=2, kernel_size=3, reset=reset, step_mode="m",
                      return_mem=True)
    mine.recurrent.load_state_dict({k: v.numpy() for k, v in ref.recurrent.state_dict().items()})
    mine.to(device)
    xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, gp.float32, grad=True)
    ro = _run(ref, xt, ("spk", "mem"), False, True, False)
    sg, mg = mine(xg)
    w = R.standard_normal(x.shape).astype(np.float32)
    st, mt = torch.stack([o[0] for o in ro]), torch.stack([o[1] for o in ro])
    np.testing.assert_array_equal(_np(sg), st.detach().numpy())
    np.testing.assert_allclose(_np(mg), mt.detach().numpy(), **TOL32)
    (st * torch.tensor(w)).sum().backward()
    gp.sum(sg * _g(w, device, gp.float32)).backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL32)
    np.testing.assert_allclose(_np(mine.recurrent.weight.grad),
                               ref.recurrent.weight.grad.numpy(), **TOL32)


# ---- BatchNormTT ------------------------------------------------------------------------------
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dim", ["1d", "2d"])
def test_batchnormtt_equals_snntorch(dim, affine, device):
    """BatchNormTT1d/2d: a ModuleList of one BatchNorm per step, a scale (ones) and no bias;
    step t through bntt[t] in training (outputs, running statistics, the gradients for the
    input and each step's weight) and in eval mode equal snnTorch's."""
    shape = (T, 4, 3) if dim == "1d" else (T, 2, 3, 2, 2)
    x = R.standard_normal(shape) * 2.0 + 0.5
    ref = getattr(snntorch, f"BatchNormTT{dim}")(3, T, eps=1e-4, momentum=0.2,
                                                 affine=affine).double()
    mine = getattr(snn, f"BatchNormTT{dim}")(3, T, eps=1e-4, momentum=0.2, affine=affine,
                                             dtype=gp.float64)
    assert isinstance(mine, nn.ModuleList) and len(mine) == T
    if affine:   # snnTorch's start: ones (a random scale tests the gradient better)
        assert np.all(_np(mine[0].weight) == 1.0) and mine[0].bias is None
        for bn in ref:
            bn.weight.data = torch.tensor(R.uniform(0.5, 1.5, 3))
    mine = _load(ref, mine, device)
    xt, xg = torch.tensor(x, requires_grad=True), _g(x, device, grad=True)
    w = R.standard_normal(shape)
    yt = torch.stack([ref[t](xt[t]) for t in range(T)])
    yg = gp.stack([mine[t](xg[t]) for t in range(T)])
    np.testing.assert_allclose(_np(yg), yt.detach().numpy(), **TOL)
    (yt * torch.tensor(w)).sum().backward()
    gp.sum(yg * _g(w, device)).backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **TOL)
    for t in range(T):
        for k in ("running_mean", "running_var"):
            np.testing.assert_allclose(_np(getattr(mine[t], k)),
                                       getattr(ref[t], k).numpy(), **TOL)
        if affine:
            np.testing.assert_allclose(_np(mine[t].weight.grad), ref[t].weight.grad.numpy(),
                                       **TOL)
    ref.eval()
    mine.eval()
    np.testing.assert_allclose(_np(mine[1](xg[1])), ref[1](xt[1]).detach().numpy(), **TOL)


# ---- conventions and errors -------------------------------------------------------------------
def test_slstm_conventions(device):
    """output=True with init_hidden returns (spk, syn, mem); 'm' mode equals the steps; the
    state is readable as .syn/.mem; a new batch size restarts from zeros (as snnTorch);
    reset_mem() starts a new sequence."""
    x = _g(R.standard_normal((T, 2, 3)), device)
    a = snn.SLSTM(3, 4, threshold=0.125, init_hidden=True, output=True,
                  dtype=gp.float64).to(device)
    outs = [a(x[t]) for t in range(T)]
    assert len(outs[0]) == 3 and outs[0][0].shape == (2, 4)
    np.testing.assert_array_equal(_np(a.mem), _np(outs[-1][2]))
    b = snn.SLSTM(3, 4, threshold=0.125, step_mode="m", output=True, dtype=gp.float64).to(device)
    b.load_state_dict(a.state_dict())
    spk, mem = b(x)
    np.testing.assert_allclose(_np(spk), _np(gp.stack([o[0] for o in outs])), **TOL)
    np.testing.assert_allclose(_np(mem), _np(gp.stack([o[2] for o in outs])), **TOL)
    first = _np(a(x[0][:1])[2])   # a batch of 1: from zeros again
    np.testing.assert_allclose(first, _np(outs[0][2])[:1], **TOL)
    assert a.reset_mem() == (None, None) and a.mem is None


def test_errors_name_the_class_and_argument():
    with pytest.raises(TypeError, match="SLSTM: input_size must be an int"):
        snn.SLSTM("3", 3)
    with pytest.raises(ValueError, match="SLSTM: hidden_size must be positive"):
        snn.SLSTM(3, 0)
    with pytest.raises(ValueError, match="SLSTM: reset must be one of"):
        snn.SLSTM(3, 3, reset_mechanism="hard")
    with pytest.raises(NotImplementedError, match="SLSTM: inhibition"):
        snn.SLSTM(3, 3, inhibition=True)
    with pytest.raises(ValueError, match=r"SLSTM: expected an input \(batch, 3\)"):
        snn.SLSTM(3, 3)(gp.zeros((2, 4)))
    with pytest.raises(TypeError, match="SLSTM: init_hidden=True keeps the state"):
        snn.SLSTM(3, 3, init_hidden=True)(gp.zeros((2, 3)), gp.zeros((2, 3)))
    with pytest.raises(ValueError, match="SConv2dLSTM: only one of max_pool or avg_pool"):
        snn.SConv2dLSTM(1, 2, 3, max_pool=2, avg_pool=2)
    with pytest.raises(TypeError, match="SConv2dLSTM: kernel_size must be an int or a pair"):
        snn.SConv2dLSTM(1, 2, 3.0)
    with pytest.raises(ValueError, match="SConv2dLSTM: max_pool must be positive"):
        snn.SConv2dLSTM(1, 2, 3, max_pool=-1)
    with pytest.raises(ValueError, match=r"SConv2dLSTM: expected an input \(batch, 1, H, W\)"):
        snn.SConv2dLSTM(1, 2, 3)(gp.zeros((1, 2, 4, 4)))
    with pytest.raises(TypeError, match="RLeaky: conv2d_channels and kernel_size must both"):
        snn.RLeaky(0.8, conv2d_channels=2)
    with pytest.raises(TypeError, match="RSynaptic: linear_features .* cannot be given with"):
        snn.RSynaptic(0.5, 0.8, linear_features=4, conv2d_channels=2, kernel_size=3)
    with pytest.raises(TypeError, match="RLeaky: the convolutional recurrence is all-to-all"):
        stc.RLeaky(0.8, all_to_all=False, conv2d_channels=2, kernel_size=3)
    with pytest.raises(ValueError, match="RLeaky: conv2d_channels must be positive"):
        snn.RLeaky(0.8, conv2d_channels=0, kernel_size=3)
    with pytest.raises(ValueError, match=r"RLeaky: the convolutional recurrence takes inputs "
                                         r"\(batch, 2, H, W\)"):
        snn.RLeaky(0.8, conv2d_channels=2, kernel_size=3)(gp.zeros((1, 3, 4, 4)))
    with pytest.raises(ValueError, match="BatchNormTT1d: time_steps must be positive"):
        snn.BatchNormTT1d(3, 0)
    with pytest.raises(TypeError, match="BatchNormTT2d: eps must be a float"):
        snn.BatchNormTT2d(3, 2, eps="1e-5")
