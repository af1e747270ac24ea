"""grilly.amp as a torch.amp user ports a training script (tenth hunt): recurrent cells and
layers under autocast, torch's cumsum / cumprod / norm on bfloat16 arguments, torch.amp's
is_autocast_available, GradScaler's device argument. Oracles: torch 2.13's CPU autocast, and its
CUDA lists applied on the CPU (test_amp_parity.cuda_policy_on_cpu), float32 runs for gradients."""
import contextlib

import ml_dtypes
import numpy as np
import pytest

import grilly as gp
from grilly import amp, nn

torch = pytest.importorskip("torch")
from test_amp_parity import cuda_policy_on_cpu  # noqa: E402  (needs torch)

R = np.random.default_rng(10)
LOW = {"float16": (gp.float16, torch.float16, np.float16),
       "bfloat16": (gp.bfloat16, torch.bfloat16, ml_dtypes.bfloat16)}


def _name(dt) -> str:
    return str(dt).replace("torch.", "").replace("grilly.", "")


def _f64(a) -> np.ndarray:
    return np.asarray(gp.astype(a, gp.float64))


def _t64(t) -> np.ndarray:
    return t.detach().double().numpy()


def _pair(tmod, gcls, device, *args, **kw):
    """A grilly module with the torch module's weights."""
    g = gcls(*args, **kw).to(device)
    g.load_state_dict({k: gp.asarray(v.detach().numpy().copy(), device=device)
                       for k, v in tmod.state_dict().items()})
    return g


def _leaves(r) -> list:
    return [y for x in r for y in _leaves(x)] if isinstance(r, (tuple, list)) else [r]


# ---- recurrent cells and layers -------------------------------------------------------------
@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_rnn_cells_run_in_the_low_dtype(device, low):
    """torch's CUDA autocast lists lstm_cell, gru_cell and rnn_*_cell as lower precision: h' (and
    c') come back in the region's dtype. grilly's LSTMCell and GRUCell returned float32 (their
    float32 zero state promoted every step); a float32 hx given by the caller is cast too."""
    gdt, tdt, _ = LOW[low]
    x = R.standard_normal((3, 4)).astype(np.float32)
    h = R.standard_normal((3, 5)).astype(np.float32)
    cases = [(torch.nn.LSTMCell, nn.LSTMCell, {}, (None, "hc")),
             (torch.nn.GRUCell, nn.GRUCell, {}, (None, "h")),
             (torch.nn.RNNCell, nn.RNNCell, {"nonlinearity": "relu"}, ("h",))]
    for tcls, gcls, kw, states in cases:
        torch.manual_seed(0)
        tm = tcls(4, 5, **kw)
        gm = _pair(tm, gcls, device, 4, 5, **kw)
        for st in states:
            th = None if st is None else (
                (torch.from_numpy(h), torch.from_numpy(h)) if st == "hc" else torch.from_numpy(h))
            gh = None if st is None else (
                (gp.asarray(h, device=device),) * 2 if st == "hc" else gp.asarray(h, device=device))
            with cuda_policy_on_cpu(tdt):
                want = _leaves(tm(torch.from_numpy(x), th))
            with amp.autocast(dtype=gdt):
                got = _leaves(gm(gp.asarray(x, device=device), gh))
            assert [_name(g.dtype) for g in got] == [_name(w.dtype) for w in want] == [low] * len(
                want), (gcls.__name__, st)
            for g, w in zip(got, want):
                np.testing.assert_allclose(_f64(g), _t64(w), rtol=3e-2, atol=3e-2)


def test_lstm_layer_low_dtype_and_gradients(device):
    """nn.LSTM under autocast as torch's (its CPU autocast, and its cuDNN layers on CUDA): output,
    h_n and c_n in the low dtype (grilly's were float32); parameters and their gradients stay
    float32, the gradients close to a float32 run's."""
    torch.manual_seed(0)
    tm = torch.nn.LSTM(4, 5, num_layers=2, batch_first=True)
    gm = _pair(tm, nn.LSTM, device, 4, 5, num_layers=2, batch_first=True)
    x = R.standard_normal((2, 3, 4)).astype(np.float32)
    w = np.cos(np.arange(2 * 3 * 5)).reshape(2, 3, 5).astype(np.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tout, (th, tc) = tm(torch.from_numpy(x))
    (tout.float() * torch.from_numpy(w)).sum().backward()

    def run(ctx):
        gm.zero_grad()
        with ctx:
            out, (h, c) = gm(gp.asarray(x, device=device))
        gp.sum(gp.astype(out, gp.float32) * gp.asarray(w, device=device)).backward()
        return (out, h, c), {n: p.grad for n, p in gm.named_parameters()}
    (out, h, c), g_low = run(amp.autocast(dtype=gp.bfloat16))
    assert [_name(a.dtype) for a in (out, h, c)] == [_name(a.dtype) for a in (tout, th, tc)]
    np.testing.assert_allclose(_f64(out), _t64(tout), rtol=5e-2, atol=5e-2)
    _, g32 = run(contextlib.nullcontext())
    for n, p in gm.named_parameters():
        assert p.dtype == gp.float32 and g_low[n].dtype == gp.float32, n
        ref = _f64(g32[n])
        np.testing.assert_allclose(_f64(g_low[n]), ref, rtol=0,
                                   atol=4e-2 * max(1.0, float(np.abs(ref).max())))
        np.testing.assert_allclose(ref, _t64(dict(tm.named_parameters())[n].grad), rtol=0,
                                   atol=4e-2 * max(1.0, float(np.abs(ref).max())))


# ---- torch's float32 list through NumPy's spellings ---------------------------------------------
@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_cumsum_cumprod_norm_run_in_float32(device, low):
    """torch lists cumsum, cumprod and norm as float32 ops (its trapezoid sums in float32):
    float16 arguments gave float32, but bfloat16 ones, run whole in float32 and rounded back,
    came back bfloat16 (gp.cumsum, gp.cumprod, gp.linalg.norm, gp.trapezoid)."""
    gdt, tdt, ndt = LOW[low]
    v = (R.random((3, 4)) + 0.5).astype(ndt)
    t = torch.from_numpy(v.astype(np.float32)).to(tdt)
    a = gp.asarray(v, device=device)
    f = v.astype(np.float64)   # the values: float64 (torch's trapezoid adds in the low dtype)
    cases = [(lambda: gp.cumsum(a, axis=1), lambda: torch.cumsum(t, 1), np.cumsum(f, 1)),
             (lambda: gp.cumsum(a), lambda: torch.cumsum(t.reshape(-1), 0), np.cumsum(f)),
             (lambda: a.cumsum(0), lambda: t.cumsum(0), np.cumsum(f, 0)),
             (lambda: gp.cumprod(a, axis=0), lambda: torch.cumprod(t, 0), np.cumprod(f, 0)),
             (lambda: gp.linalg.norm(a), lambda: torch.linalg.norm(t), np.linalg.norm(f)),
             (lambda: gp.linalg.norm(a, axis=1), lambda: torch.linalg.norm(t, dim=1),
              np.linalg.norm(f, axis=1)),
             (lambda: gp.linalg.norm(a, ord=1, axis=(0, 1)),
              lambda: torch.linalg.norm(t, ord=1, dim=(0, 1)), np.linalg.norm(f, 1)),
             (lambda: gp.norm(a), lambda: torch.norm(t), np.linalg.norm(f)),
             (lambda: gp.trapezoid(a), lambda: torch.trapezoid(t), np.trapezoid(f))]
    for i, (g, w, ref) in enumerate(cases):
        with cuda_policy_on_cpu(tdt):
            want = w()
        with amp.autocast(dtype=gdt):
            got = g()
        assert _name(got.dtype) == _name(want.dtype) == "float32", i
        np.testing.assert_allclose(_f64(got), ref, rtol=1e-5, atol=1e-5, err_msg=str(i))
        # an explicit dtype is the caller's, as torch's set_opt_dtype ops leave it
        if i == 0:
            with amp.autocast(dtype=gdt):
                assert gp.cumsum(a, axis=1, dtype=gdt).dtype == gdt


# ---- torch.amp's helpers and GradScaler's device -----------------------------------------------
def test_is_autocast_available_and_scaler_device(device):
    """torch.amp.is_autocast_available(device_type) (grilly lacked it): True for grilly's device
    types, False for torch's others (grilly has no "cuda"), TypeError for a non-str as torch's.
    GradScaler's device argument was stored unread: "cuda" (torch's default) and an int
    passed silently; now checked as autocast's device_type."""
    kind = str(device).split(":")[0]
    assert amp.is_autocast_available("cpu") is torch.amp.is_autocast_available("cpu") is True
    assert amp.is_autocast_available(kind) and amp.is_autocast_available(str(device))
    assert amp.is_autocast_available("cuda") is False
    for mod in (amp, torch.amp):
        with pytest.raises(TypeError):
            mod.is_autocast_available(0)
    for ok in (kind, str(device), device, None):
        s = amp.GradScaler(ok, init_scale=8.0)
        assert s.get_scale() == torch.amp.GradScaler("cpu", init_scale=8.0).get_scale()
    with pytest.raises(ValueError, match="GradScaler.*cuda.*vulkan"):
        amp.GradScaler("cuda")
    with pytest.raises(TypeError, match="GradScaler: device"):
        amp.GradScaler(0)


# ---- in-place ops inside a region ------------------------------------------------------------
@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_inplace_ops_keep_their_dtype(device, low):
    """torch's autocast leaves in-place ops alone: ``x.exp_()``, ``x.pow_(2)``, ``x **= 2`` on a
    low-precision array stay in its dtype. grilly cast their argument to float32 (exp, log, pow,
    reciprocal ... are on the float32 list) and raised TypeError storing the result; a float32
    ``m @= m`` likewise ran in the low dtype. Gradients through them reach float32 leaves."""
    gdt, tdt, ndt = LOW[low]
    v = (R.random(5) + 0.5).astype(np.float32)
    tw = torch.from_numpy(v.copy())
    gw = gp.asarray(v, device=device)
    gw.requires_grad_(True)
    m = R.standard_normal((3, 3)).astype(np.float32)
    with torch.autocast("cpu", dtype=tdt):
        ty = tw.to(tdt) * 1.0
        ty.exp_()
        ty **= 2
        ty.reciprocal_()
        tz = torch.from_numpy(m.copy()).to(tdt)
        tz.sinh_()
        tm = torch.from_numpy(m.copy())
        tm.pow_(2)
    with amp.autocast(dtype=gdt):
        gy = gp.astype(gw, gdt) * 1.0
        gy.exp_()
        gy **= 2
        gy.reciprocal_()
        gz = gp.astype(gp.asarray(m, device=device), gdt)
        gz.sinh_()
        gm = gp.asarray(m, device=device)
        gm.pow_(2)
        gmm = gp.asarray(m, device=device)
        gmm @= gmm
    for g, t in ((gy, ty), (gz, tz), (gm, tm)):
        assert _name(g.dtype) == _name(t.dtype)
        np.testing.assert_allclose(_f64(g), _t64(t), rtol=2e-2, atol=1e-3)
    assert gmm.dtype == gp.float32
    np.testing.assert_allclose(np.asarray(gmm), m @ m, rtol=1e-5, atol=1e-5)
    gp.sum(gp.astype(gy, gp.float32)).backward()
    tr = tw.clone().requires_grad_()   # the gradient's reference: float32, out of place (torch
    (1.0 / torch.exp(tr) ** 2).sum().backward()   # refuses exp_ then an in-place pow on it)
    assert gw.grad.dtype == gp.float32
    np.testing.assert_allclose(np.asarray(gw.grad), tr.grad.numpy(), rtol=3e-2, atol=1e-3)


# ---- an explicit dtype= inside a region ----------------------------------------------------------
@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_explicit_dtype_is_kept_under_autocast(device, low):
    """torch's float32 ops with a dtype slot (softmax, log_softmax, norms) run in a dtype the
    caller gives, autocast or not. grilly's softmax, log_softmax, softmin, vector_norm,
    linalg.norm, matrix_norm and norm cast to that dtype and then ran the float32 op: float32."""
    gdt, tdt, _ = LOW[low]
    v = R.standard_normal((3, 4)).astype(np.float32)
    t32 = torch.from_numpy(v).requires_grad_()
    g32 = gp.asarray(v, device=device)
    g32.requires_grad_(True)
    TF = torch.nn.functional
    F = nn.functional
    cases = [(lambda g: F.softmax(g, -1, dtype=gdt), lambda t: TF.softmax(t, -1, dtype=tdt)),
             (lambda g: F.log_softmax(g, 1, dtype=gdt), lambda t: TF.log_softmax(t, 1, dtype=tdt)),
             (lambda g: F.softmin(g, 0, dtype=gdt), lambda t: TF.softmin(t, 0, dtype=tdt)),
             # torch's norms refuse a dtype narrower than the input's: low inputs
             (lambda g: gp.linalg.vector_norm(gp.astype(g, gdt), dim=1, dtype=gdt),
              lambda t: torch.linalg.vector_norm(t.to(tdt), dim=1, dtype=tdt)),
             (lambda g: gp.linalg.norm(gp.astype(g, gdt), dtype=gdt),
              lambda t: torch.linalg.norm(t.to(tdt), dtype=tdt)),
             (lambda g: gp.linalg.matrix_norm(gp.astype(g, gdt), dtype=gdt),
              lambda t: torch.linalg.matrix_norm(t.to(tdt), dtype=tdt)),
             (lambda g: gp.astype(g, gdt).norm(dim=0, dtype=gdt),
              lambda t: t.to(tdt).norm(dim=0, dtype=tdt))]
    for i, (gf, tf) in enumerate(cases):
        with cuda_policy_on_cpu(tdt):
            want = tf(t32)
        with amp.autocast(dtype=gdt):
            got = gf(g32)
        assert _name(got.dtype) == _name(want.dtype) == low, i
        np.testing.assert_allclose(_f64(got), _t64(want), rtol=2e-2, atol=2e-2, err_msg=str(i))
        t32.grad = None
        g32.grad = None
        want.float().sum().backward()
        gp.sum(gp.astype(got, gp.float32)).backward()
        assert g32.grad.dtype == gp.float32
        np.testing.assert_allclose(np.asarray(g32.grad), t32.grad.numpy(), rtol=3e-2, atol=3e-2,
                                   err_msg=str(i))
