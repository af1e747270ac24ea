"""A Norse / snnTorch / SpikingJelly user's hunt, round 6, each against the real library on
every device: gradients through a length-1 unstack (T = 1 or batch 1 per-step loops), Norse's
learnable v_leak (its initial state is a detached copy), a Norse state left on another device,
Norse's encoders (constant-current LIF, latency, Poisson), snnTorch's heaviside() /
custom_surrogate / spike_rate_escape / SFS surrogates, snntorch.functional's population codes
and reductions, SpikingJelly's seq_to_ann_forward on tuples (MaxPool indices, MaxUnpool)."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import snn

torch = pytest.importorskip("torch")

R = np.random.default_rng(61)
GTOL = dict(rtol=1e-4, atol=1e-6)


def _np(a):
    return np.asarray(a.to_device("cpu"))


def _g(a, device, grad=False, dtype=np.float32):
    x = gp.asarray(np.asarray(a, dtype=dtype), device=device)
    return x.requires_grad_() if grad else x


def _t(a, grad=False, dtype=torch.float32):
    return torch.tensor(np.asarray(a), dtype=dtype, requires_grad=grad)


# ---- autograd: a sequence output of one element ----------------------------------------------

def test_single_output_sequence_ops_backward(device):
    """unstack of a length-1 axis (a T = 1 loop), broadcast_arrays / meshgrid of one array:
    the gradient is torch's (it raised a reshape error)."""
    x = R.standard_normal((1, 2, 3))
    w = R.standard_normal((2, 3))
    cases = [(lambda a: gp.unstack(a, axis=0)[0], lambda a: torch.unbind(a, 0)[0]),
             (lambda a: gp.unstack(a[:, :1], axis=1)[0], lambda a: torch.unbind(a[:, :1], 1)[0]),
             (lambda a: gp.broadcast_arrays(a)[0][0], lambda a: torch.broadcast_tensors(a)[0][0])]
    for f_g, f_t in cases:
        xg, xt = _g(x, device, True, np.float64), _t(x, True, torch.float64)
        yg, yt = f_g(xg), f_t(xt)
        gp.sum(yg * _g(w[:yg.shape[0]], device, dtype=np.float64)).backward()
        (yt * torch.tensor(w[:yt.shape[0]])).sum().backward()
        np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy())
    v = R.standard_normal(4)
    vg, vt = _g(v, device, True, np.float64), _t(v, True, torch.float64)
    gp.sum(gp.meshgrid(vg)[0] * 3.0).backward()
    (torch.meshgrid(vt, indexing="xy")[0] * 3.0).sum().backward()
    np.testing.assert_allclose(_np(vg.grad), vt.grad.numpy())


# ---- Norse ------------------------------------------------------------------------------------

def _norse():
    nt = pytest.importorskip("norse.torch")
    import grilly.nn.snn.norse as gn
    return nt, gn


@pytest.mark.parametrize("kind,fused,steps,batch", [
    ("LIF", True, 9, 2), ("LIF", False, 1, 1), ("LI", True, 9, 2), ("LI", False, 1, 1),
    ("LIFBox", True, 1, 1), ("LIFBox", False, 9, 2)])
def test_norse_learnable_parameters_every_field(device, kind, fused, steps, batch):
    """Every field of the parameters learnable (v_leak too: Norse starts from a detached
    copy of it, so its gradient comes only through the equations), T = 1 / batch 1 per step
    included (that loop's unstack had no backward)."""
    nt, gn = _norse()
    fields = {"LIF": ("tau_syn_inv", "tau_mem_inv", "v_leak", "v_th", "v_reset"),
              "LI": ("tau_syn_inv", "tau_mem_inv", "v_leak"),
              "LIFBox": ("tau_mem_inv", "v_leak", "v_th", "v_reset")}[kind]
    vals = {"tau_syn_inv": 150.0, "tau_mem_inv": [100.0, 80.0, 120.0], "v_leak": 0.2,
            "v_th": [1.0, 0.8, 1.1], "v_reset": -0.1}
    pt = {f: torch.nn.Parameter(torch.tensor(vals[f])) for f in fields}
    pg = {f: nn.Parameter(_g(vals[f], device)) for f in fields}
    x = (R.standard_normal((steps, batch, 3)) * 6 + 3) * (20 if kind == "LIFBox" else 1)
    w = R.standard_normal((steps, batch, 3))
    xt, xg = _t(x, True), _g(x, device, True)
    if kind == "LIFBox":   # Norse 1.1 has the cell only
        cell, s, zs = nt.LIFBoxCell(nt.LIFBoxParameters(**pt)), None, []
        for k in range(steps):
            z, s = cell(xt[k], s)
            zs.append(z)
        ot = torch.stack(zs)
        og, sg = gn.LIFBox(gn.LIFBoxParameters(**pg), fused=fused)(xg)
    else:
        cls_t, cls_g = (nt.LIF, gn.LIF) if kind == "LIF" else (nt.LI, gn.LI)
        par_t, par_g = ((nt.LIFParameters, gn.LIFParameters) if kind == "LIF"
                        else (nt.LIParameters, gn.LIParameters))
        ot, s = cls_t(par_t(**pt))(xt)
        og, sg = cls_g(par_g(**pg), fused=fused)(xg)
    np.testing.assert_allclose(_np(og), ot.detach().numpy(), rtol=1e-5, atol=2e-5)
    lt = (ot * torch.tensor(w, dtype=torch.float32)).sum() + 0.3 * s.v.sum()
    lg = gp.sum(og * _g(w, device)) + 0.3 * gp.sum(sg.v)
    if kind != "LIFBox":   # (the current: tau_syn_inv's only path at T = 1)
        lt, lg = lt + 0.2 * s.i.sum(), lg + 0.2 * gp.sum(sg.i)
    lt.backward()
    lg.backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **GTOL)
    for f in fields:
        np.testing.assert_allclose(_np(pg[f].grad), pt[f].grad.numpy(), rtol=2e-4, atol=1e-5,
                                   err_msg=f)


def test_norse_state_on_another_device(device):
    """A state kept from before moving to another device: a ValueError naming the layer and
    the field (was the bare "add: arrays are on different devices")."""
    _, gn = _norse()
    others = [d for d in gp.devices() if str(d) != str(device)
              and str(d).partition(":")[0] in ("cpu", "vulkan")]
    if not others:
        pytest.skip("one device only")
    x = _g(R.standard_normal((3, 2, 4)), device)
    s = gn.LIFFeedForwardState(gp.zeros((2, 4), device=others[0]),
                               gp.zeros((2, 4), device=others[0]))
    with pytest.raises(ValueError, match=r"LIF: state\.v is on .*, the input on"):
        gn.LIF()(x, s)
    with pytest.raises(ValueError, match=r"LIFCell: state\.v is on"):
        gn.LIFCell()(x[0], s)
    # moved over, it runs
    moved = gn.LIFFeedForwardState(s.v.to_device(device), s.i.to_device(device))
    z, _ = gn.LIFCell()(x[0], moved)
    assert z.device == x.device


@pytest.mark.parametrize("method", ["super", "tanh"])
def test_norse_current_encoders(device, method):
    """constant_current_lif_encode / spike_latency_lif_encode (and their modules), spikes and
    the currents' gradients; spike_latency_encode of a spike train."""
    nt, gn = _norse()
    x = R.random((2, 5)) * 4
    w = R.standard_normal((12, 2, 5))
    pt = nt.LIFParameters(v_leak=torch.tensor(0.1), v_reset=torch.tensor(-0.2),
                          v_th=torch.tensor(0.8), method=method, alpha=torch.tensor(2.0))
    pg = gn.LIFParameters(v_leak=0.1, v_reset=-0.2, v_th=0.8, method=method, alpha=2.0)
    for ref, mine in ((nt.ConstantCurrentLIFEncoder(12, pt, dt=0.002),
                       gn.ConstantCurrentLIFEncoder(12, pg, dt=0.002)),
                      (nt.SpikeLatencyLIFEncoder(12, pt, dt=0.002),
                       gn.SpikeLatencyLIFEncoder(12, pg, dt=0.002))):
        xt, xg = _t(x, True), _g(x, device, True)
        zt, zg = ref(xt), mine(xg)
        np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
        assert 0 < float(zt.detach().sum()) < zt.numel()
        (zt * torch.tensor(w, dtype=torch.float32)).sum().backward()
        gp.sum(zg * _g(w, device)).backward()
        np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **GTOL)
    spikes = (R.random((6, 2, 3)) > 0.5).astype(np.float32)
    xt, xg = _t(spikes, True), _g(spikes, device, True)
    zt, zg = nt.spike_latency_encode(xt), gn.SpikeLatencyEncoder()(xg)
    np.testing.assert_array_equal(_np(zg), zt.detach().numpy())
    (zt * torch.tensor(w[:6, :, :3], dtype=torch.float32)).sum().backward()
    gp.sum(zg * _g(w[:6, :, :3], device)).backward()
    np.testing.assert_array_equal(_np(xg.grad), xt.grad.numpy())
    v = np.zeros((2, 3), np.float32)
    z, vn = gn.lif_current_encoder(_g(x[:, :3], device), _g(v, device), pg, 0.002)
    from norse.torch.functional.encode import lif_current_encoder
    zr, vr = lif_current_encoder(_t(x[:, :3]), _t(v), pt, 0.002)
    np.testing.assert_array_equal(_np(z), zr.numpy())
    np.testing.assert_allclose(_np(vn), vr.numpy(), rtol=1e-6)


def test_norse_poisson_encoders(device):
    """poisson_encode / signed_poisson_encode (and the modules): where dt f_max x is 0 or >= 1
    Norse's spikes are certain (equal here); elsewhere the firing rate over many steps is
    dt f_max x, drawn from gp.random (seeded)."""
    nt, gn = _norse()
    v = np.array([[0.0, 10.0, 20.0, -30.0]], np.float32)
    for ref, mine in ((nt.PoissonEncoder(5), gn.PoissonEncoder(5)),
                      (nt.SignedPoissonEncoder(5), gn.SignedPoissonEncoder(5))):
        np.testing.assert_array_equal(_np(mine(_g(v, device))), ref(_t(v)).numpy())
    from norse.torch.module.encode import PoissonEncoderStep
    np.testing.assert_array_equal(_np(gn.PoissonEncoderStep()(_g(v / 10, device))),
                                  PoissonEncoderStep()(_t(v / 10)).numpy())
    gp.random.seed(3)
    x = np.array([0.5, 2.0, -4.0, 7.0], np.float32)
    z = _np(gn.signed_poisson_encode(_g(x, device), 1000, f_max=100, dt=0.001))
    assert z.shape == (1000, 4) and z.dtype == np.float32
    # (within 4 standard deviations of the rate: at most sqrt(0.25 / 1000) = 0.016)
    np.testing.assert_allclose(z.mean(axis=0), np.sign(x) * np.abs(x) * 0.1, atol=0.065)
    with pytest.raises(ValueError, match="poisson_encode: seq_length must be an int"):
        gn.poisson_encode(_g(x, device), 0)
    with pytest.raises(TypeError, match="poisson_encode: generator must be a grilly"):
        gn.poisson_encode(_g(x, device), 3, generator=torch.Generator())


# ---- snnTorch surrogates and snntorch.functional ----------------------------------------------

def _custom_t(input_, grad_input, spikes):
    return grad_input / (10 * torch.abs(input_) + 1.0) ** 2 + 0.1 * spikes * grad_input


def _custom_g(input_, grad_input, spikes):
    return grad_input / (10 * gp.abs(input_) + 1.0) ** 2 + 0.1 * spikes * grad_input


@pytest.mark.parametrize("name", ["custom", "heaviside", "spike_rate_escape", "SFS"])
def test_snntorch_surrogates_heaviside_custom(device, name):
    """snnTorch's surrogate.heaviside(), custom_surrogate(fn), spike_rate_escape, SFS on a
    Leaky with learnable beta and threshold (they were missing; heaviside() a TypeError)."""
    stn = pytest.importorskip("snntorch")
    from snntorch import surrogate as ts
    gs = snn.surrogate
    sg_t, sg_g = {"custom": (ts.custom_surrogate(_custom_t), gs.custom_surrogate(_custom_g)),
                  "heaviside": (ts.heaviside(), gs.heaviside()),
                  "spike_rate_escape": (ts.spike_rate_escape(0.7, 5), gs.spike_rate_escape(0.7, 5)),
                  "SFS": (ts.SFS(5, 0.2), gs.SFS(5, 0.2))}[name]
    steps = 6
    x = R.standard_normal((steps, 2, 3)) * 0.8 + 0.5
    w = R.standard_normal((steps, 2, 3))
    ref = stn.Leaky(beta=0.8, spike_grad=sg_t, learn_beta=True, learn_threshold=True)
    mine = snn.Leaky(beta=0.8, spike_grad=sg_g, learn_beta=True, learn_threshold=True).to(device)
    xt, xg = _t(x, True), _g(x, device, True)
    mt, mg, out_t, out_g = ref.init_leaky(), mine.init_leaky(), [], []
    for k in range(steps):
        st, mt = ref(xt[k], mt)
        sg, mg = mine(xg[k], mg)
        out_t.append(st + 0.1 * mt)
        out_g.append(sg + 0.1 * mg)
    ot, og = torch.stack(out_t), gp.stack(out_g)
    np.testing.assert_allclose(_np(og), ot.detach().numpy(), rtol=1e-5, atol=1e-6)
    (ot * torch.tensor(w, dtype=torch.float32)).sum().backward()
    gp.sum(og * _g(w, device)).backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy(), **GTOL)
    np.testing.assert_allclose(_np(mine.beta.grad), ref.beta.grad.numpy(), **GTOL)
    np.testing.assert_allclose(_np(mine.threshold.grad), ref.threshold.grad.numpy(), **GTOL)


def test_surrogate_errors():
    with pytest.raises(TypeError, match="custom_surrogate: custom_surrogate_function must be"):
        snn.surrogate.custom_surrogate(3)
    with pytest.raises(TypeError, match="surrogate=custom_surrogate is the factory"):
        snn.LIF(0.9, surrogate=snn.surrogate.custom_surrogate)


@pytest.mark.parametrize("name,kw", [
    ("mse_count_loss", dict(correct_rate=0.8, incorrect_rate=0.2, population_code=True,
                            num_classes=4)),
    ("mse_count_loss", dict(population_code=True, num_classes=4, reduction="none")),
    ("ce_count_loss", dict(population_code=True, num_classes=4, reduction="sum")),
    ("ce_rate_loss", dict(reduction="none")),
    ("ce_max_membrane_loss", dict(reduction="sum")),
])
def test_snntorch_population_code_and_reductions(device, name, kw):
    """SF's population_code / num_classes and reduction "sum" / "none" (they raised
    NotImplementedError): values and the spikes' gradient, and accuracy_rate's population
    code, against snnTorch."""
    tsf = pytest.importorskip("snntorch.functional")
    import grilly.nn.snn.functional as SF
    steps, batch, classes = 7, 3, 4
    spk = (R.random((steps, batch, 3 * classes)) > 0.6).astype(np.float32)
    if name == "ce_max_membrane_loss":   # membranes: no ties in the max over time
        spk = R.standard_normal(spk.shape).astype(np.float32)
    y = R.integers(0, classes if kw.get("population_code") else 3 * classes, batch)
    st, sg = _t(spk, True), _g(spk, device, True)
    lt = getattr(tsf, name)(**kw)(st, torch.tensor(y))
    lg = getattr(SF, name)(**kw)(sg, gp.asarray(y, device=device))
    np.testing.assert_allclose(_np(lg).ravel(), lt.detach().numpy().ravel(), rtol=1e-5)
    w = R.standard_normal(lg.shape).astype(np.float32)
    (lt * torch.tensor(w).reshape(lt.shape)).sum().backward()
    gp.sum(lg * _g(w, device)).backward()
    np.testing.assert_allclose(_np(sg.grad), st.grad.numpy(), rtol=1e-5, atol=1e-7)
    if kw.get("population_code"):
        assert SF.accuracy_rate(sg.detach(), gp.asarray(y, device=device), population_code=True,
                                num_classes=classes) == pytest.approx(tsf.accuracy_rate(
                                    st.detach(), torch.tensor(y), population_code=True,
                                    num_classes=classes))


def test_population_code_errors(device):
    import grilly.nn.snn.functional as SF
    spk, y = _g(np.ones((2, 3, 12)), device), gp.asarray([0, 1, 2], device=device)
    with pytest.raises(ValueError, match="ce_count_loss: population_code=True needs num_classes"):
        SF.ce_count_loss(population_code=True)(spk, y)
    with pytest.raises(ValueError, match=r"mse_count_loss: num_classes \(5\) must divide"):
        SF.mse_count_loss(population_code=True, num_classes=5)(spk, y)
    with pytest.raises(ValueError, match=r"accuracy_rate: targets must be class indices in "
                                         r"\[0, 2\)"):
        SF.accuracy_rate(spk, y, population_code=True, num_classes=2)
    with pytest.raises(ValueError, match="reduction must be one of"):
        SF.ce_rate_loss(reduction="avg")
    with pytest.raises(NotImplementedError, match="ce_rate_loss: population_code"):
        SF.ce_rate_loss(population_code=True, num_classes=4)


# ---- SpikingJelly: seq_to_ann_forward on tuples ----------------------------------------------

def test_seq_to_ann_forward_tuples(device):
    """A module returning (values, indices) through seq_to_ann_forward / SeqToANNContainer,
    and the tuple passed on to MaxUnpool2d: SpikingJelly's (it raised AttributeError)."""
    # the references as SpikingJelly 2.0 computes them: every element of a tuple flattened
    # over T and B, the module run once, each result unflattened (its 0.0.0.0.14, on the GPU
    # machine, cannot take or return tuples, so torch computes them directly)
    x = R.standard_normal((2, 2, 1, 4, 4))
    xt, xg = _t(x, True, torch.float64), _g(x, device, True, np.float64)
    vt, it = torch.nn.MaxPool2d(2, return_indices=True)(xt.flatten(0, 1))
    vt, it = (t.reshape(*xt.shape[:2], *t.shape[1:]) for t in (vt, it))
    vg, ig = snn.functional.seq_to_ann_forward(xg, [nn.MaxPool2d(2, return_indices=True)])
    np.testing.assert_allclose(_np(vg), vt.detach().numpy())
    np.testing.assert_array_equal(_np(ig), it.numpy())
    yt = torch.nn.MaxUnpool2d(2)(vt.flatten(0, 1), it.flatten(0, 1))
    yt = yt.reshape(*vt.shape[:2], *yt.shape[1:])
    yg = snn.functional.seq_to_ann_forward((vg, ig), nn.MaxUnpool2d(2))
    np.testing.assert_allclose(_np(yg), yt.detach().numpy())
    w = R.standard_normal(tuple(yt.shape))
    (yt * torch.tensor(w)).sum().backward()
    gp.sum(yg * _g(w, device, dtype=np.float64)).backward()
    np.testing.assert_allclose(_np(xg.grad), xt.grad.numpy())
    vc, ic = snn.SeqToANNContainer(nn.MaxPool2d(2, return_indices=True))(xg)
    np.testing.assert_array_equal(_np(ic), it.numpy())
    with pytest.raises(ValueError, match=r"seq_to_ann_forward: every Array of x_seq must share"):
        snn.functional.seq_to_ann_forward((vg, ig[:1]), nn.MaxUnpool2d(2))
