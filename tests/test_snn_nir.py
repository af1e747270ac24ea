"""NIR export and import (grilly.nn.snn.export_to_nir / import_from_nir) against snnTorch 1.0's
own (snntorch.export_nir / import_nir): the same model built in both exports the same NIR graph
(node types, edges, every parameter array); snnTorch's exported graph imported into grilly runs
as the snnTorch model, step by step (spikes and membranes); grilly's exported graph imported by
snnTorch runs as the grilly model; grilly's export -> import gives the same outputs; unsupported
modules and nodes raise NotImplementedError naming them. On every device."""
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import snn
from grilly.nn.snn import snntorch_compat as stc
from grilly.nn.snn.neurons import _Neuron

nir = pytest.importorskip("nir")
torch = pytest.importorskip("torch")
snntorch = pytest.importorskip("snntorch")
pytest.importorskip("nirtorch")
from snntorch.export_nir import export_to_nir as t_export  # noqa: E402
from snntorch import utils as tutils  # noqa: E402
from snntorch.import_nir import import_from_nir as t_import  # noqa: E402

T = 6
TOL = dict(rtol=1e-5, atol=1e-6)


@pytest.fixture(autouse=True)
def _forget_snntorch_neurons():
    """snnTorch lists every init_hidden neuron in a class-level list that its reset_hidden
    walks (other files' tests call it): drop the ones made here after each test."""
    before = list(snntorch.SpikingNeuron.instances)
    yield
    snntorch.SpikingNeuron.instances[:] = before


def _np(a):
    return np.asarray(a.to_device("cpu")) if isinstance(a, gp.Array) else np.asarray(a)


def _vec(*shape, lo=0.5, hi=0.95, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


def _ff_pair(device):
    """Linear -> Leaky -> Linear (no bias) -> Synaptic, per-neuron parameters (snnTorch 1.0's
    export needs them: a scalar beta gives NIR a 0-d type), NIR's reset (zero, in the step)."""
    torch.manual_seed(0)
    b1, t1, a2, b2, t2 = _vec(3), _vec(3, lo=0.8, hi=1.2, seed=1), _vec(2, seed=2), \
        _vec(2, seed=3), _vec(2, lo=0.8, hi=1.2, seed=4)
    kw = dict(init_hidden=True, reset_mechanism="zero", reset_delay=False)
    ref = torch.nn.Sequential(
        torch.nn.Linear(4, 3), snntorch.Leaky(torch.tensor(b1), torch.tensor(t1), **kw),
        torch.nn.Linear(3, 2, bias=False),
        snntorch.Synaptic(torch.tensor(a2), torch.tensor(b2), torch.tensor(t2), **kw))
    mine = nn.Sequential(nn.Linear(4, 3), stc.Leaky(b1, t1, **kw), nn.Linear(3, 2, bias=False),
                         stc.Synaptic(a2, b2, t2, **kw))
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return ref, mine.to(device)


def _rec_pair(device):
    """Linear -> RLeaky (all-to-all) -> Linear, NIR's reset."""
    torch.manual_seed(1)
    b1, t1 = _vec(3), _vec(3, lo=0.8, hi=1.2, seed=1)
    kw = dict(init_hidden=True, reset_mechanism="zero", reset_delay=False)
    ref = torch.nn.Sequential(
        torch.nn.Linear(4, 3),
        snntorch.RLeaky(torch.tensor(b1), threshold=torch.tensor(t1), linear_features=3, **kw),
        torch.nn.Linear(3, 2))
    mine = nn.Sequential(nn.Linear(4, 3), stc.RLeaky(b1, threshold=t1, linear_features=3, **kw),
                         nn.Linear(3, 2))
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return ref, mine.to(device)


def _conv_pair(device):
    """Conv2d -> Leaky -> AvgPool2d -> Flatten -> Linear -> Leaky."""
    torch.manual_seed(2)
    b1, t1, b2, t2 = _vec(2, 4, 4), _vec(2, 4, 4, lo=0.8, hi=1.2, seed=1), _vec(3, seed=2), \
        _vec(3, lo=0.8, hi=1.2, seed=3)
    kw = dict(init_hidden=True, reset_mechanism="zero", reset_delay=False)
    ref = torch.nn.Sequential(
        torch.nn.Conv2d(1, 2, 3, padding=1), snntorch.Leaky(torch.tensor(b1), torch.tensor(t1),
                                                            **kw),
        torch.nn.AvgPool2d((2, 2)), torch.nn.Flatten(), torch.nn.Linear(8, 3),
        snntorch.Leaky(torch.tensor(b2), torch.tensor(t2), **kw))
    mine = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), stc.Leaky(b1, t1, **kw),
                         nn.AvgPool2d((2, 2)), nn.Flatten(), nn.Linear(8, 3),
                         stc.Leaky(b2, t2, **kw))
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return ref, mine.to(device)


def _same_graph(a, b, rtol=0.0):
    """The same nodes, edges and parameters (exactly; a round trip's recurrent neurons come
    back float32 where snnTorch's convention exported float64: ``rtol``)."""
    assert set(a.nodes) == set(b.nodes)
    assert sorted(a.edges) == sorted(b.edges)
    for k in a.nodes:
        na, nb = a.nodes[k], b.nodes[k]
        assert type(na) is type(nb), k
        da, db = na.to_dict(), nb.to_dict()
        assert set(da) == set(db), k
        for f in da:
            if f == "metadata":
                continue
            va, vb = np.asarray(da[f]), np.asarray(db[f])
            if rtol and va.dtype.kind == "f":
                np.testing.assert_allclose(va, vb, rtol=rtol, err_msg=f"{k}.{f}")
            else:
                np.testing.assert_array_equal(va, vb, err_msg=f"{k}.{f}")
        for t in ("input_type", "output_type"):
            ta, tb = getattr(na, t), getattr(nb, t)
            assert set(ta) == set(tb)
            for f in ta:
                np.testing.assert_array_equal(np.asarray(ta[f]), np.asarray(tb[f]))


def _neurons(model):
    if isinstance(model, torch.nn.Module):
        return [m for m in model.modules() if isinstance(m, snntorch.SpikingNeuron)]
    return [m for m in model.modules() if isinstance(m, _Neuron)]


def _inputs(shape, seed=0):
    return np.random.default_rng(seed).uniform(0.0, 2.5, (T, *shape)).astype(np.float32)


def _run_both(ref, mine, xs, device, ref_out=lambda o: o):
    """Step both models through xs; every step's output and every neuron's membrane equal."""
    snn.reset(mine)
    for t in range(T):
        out_t = ref_out(ref(torch.tensor(xs[t])))
        out_g = mine(gp.asarray(xs[t], device=device))
        np.testing.assert_allclose(_np(out_g), out_t.detach().numpy(), **TOL, err_msg=f"t={t}")
        for nt, ng in zip(_neurons(ref), _neurons(mine), strict=True):
            np.testing.assert_allclose(_np(ng.mem), nt.mem.detach().numpy(), **TOL,
                                       err_msg=f"mem t={t}")


# ---- (a) the same model exports the same graph ---------------------------------------------
@pytest.mark.parametrize("build, sample, ignore", [
    (_ff_pair, (4,), ()), (_rec_pair, (4,), ()), (_conv_pair, (1, 1, 4, 4), (0,))])
def test_export_equals_snntorch(build, sample, ignore, device):
    ref, mine = build(device)
    x = np.zeros(sample, np.float32)
    g_ref = t_export(ref, torch.tensor(x), ignore_dims=list(ignore))
    g_mine = snn.export_to_nir(mine, gp.asarray(x, device=device), ignore_dims=ignore)
    _same_graph(g_ref, g_mine)


def test_export_rsynaptic_equals_snntorch(device):
    torch.manual_seed(3)
    a, b, v = _vec(2), _vec(2, seed=1), _vec(2, lo=-0.5, hi=0.5, seed=2)
    ref = torch.nn.Sequential(torch.nn.Linear(3, 2), snntorch.RSynaptic(
        torch.tensor(a), torch.tensor(b), V=torch.tensor(v), all_to_all=False, init_hidden=True))
    mine = nn.Sequential(nn.Linear(3, 2), stc.RSynaptic(a, b, V=v, all_to_all=False,
                                                        init_hidden=True))
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()},
                         strict=False)   # (snnTorch also lists V as recurrent.V)
    mine = mine.to(device)
    g_ref = t_export(ref, torch.zeros(3))
    with pytest.warns(UserWarning, match="RSynaptic"):   # its subtract reset is not NIR's
        g_mine = snn.export_to_nir(mine)
    _same_graph(g_ref, g_mine)


def test_grilly_neurons_export_as_nir_neurons(device):
    """grilly's own LIF / IF / Synaptic / RLeaky / LIFNode and snnTorch's Lapicque: the NIR
    node's Euler step (dt = 1e-4) is the neuron's step."""
    dt = 1e-4
    beta, thr = _vec(3), _vec(3, lo=0.8, hi=1.2, seed=1)
    g = snn.export_to_nir(nn.Sequential(
        nn.Linear(2, 3), snn.LIF(beta, thr, reset="zero", reset_delay=False),
        snn.IF(0.7, reset="zero", reset_delay=False),
        snn.LIFNode(tau=4.0), snn.Synaptic(0.6, 0.8, reset="zero", reset_delay=False),
        snn.RLeaky(0.9, V=np.full(3, 0.3, np.float32), reset="zero", reset_delay=False)))
    lif, if_, node, cuba, rec = (g.nodes[k] for k in ("1", "2", "3", "4", "5.lif"))
    np.testing.assert_allclose(1 - dt / lif.tau, beta, rtol=1e-5)
    np.testing.assert_allclose(lif.r * dt / lif.tau, 1.0, rtol=1e-5)
    np.testing.assert_array_equal(lif.v_threshold, thr)
    assert isinstance(if_, nir.IF)
    np.testing.assert_array_equal(if_.v_threshold, np.full(3, 0.7, np.float32))
    np.testing.assert_array_equal(if_.r, np.ones(3, np.float32))
    # SpikingJelly's v = v + (x - v) / tau: NIR's tau = tau dt, r = 1
    np.testing.assert_allclose(node.tau, 4.0 * dt, rtol=1e-5)
    np.testing.assert_allclose(node.r, 1.0, rtol=1e-5)
    np.testing.assert_allclose(1 - dt / cuba.tau_syn, 0.6, rtol=1e-5)
    np.testing.assert_allclose(cuba.w_in * dt / cuba.tau_syn, 1.0, rtol=1e-5)
    np.testing.assert_array_equal(g.nodes["5.w_rec"].weight, np.diag(np.full(3, 0.3, np.float32)))
    assert isinstance(rec, nir.LIF) and ("5.w_rec", "5.lif") in g.edges
    with pytest.warns(UserWarning, match="Lapicque"):   # its reset is a step late
        lap = snn.export_to_nir(stc.Lapicque(R=2.0, C=5.0, time_step=1.0,
                                             reset_mechanism="zero"), np.zeros(3))
    n = lap.nodes["grilly"]
    np.testing.assert_allclose(1 - dt / n.tau, 1 - 1 / 10.0, rtol=1e-5)   # 1 - dt/(R C)
    np.testing.assert_allclose(n.r * dt / n.tau, 2.0 / 10.0, rtol=1e-5)   # R dt / (R C)


# ---- (b) snnTorch's graph imported into grilly runs as the snnTorch model ------------------
@pytest.mark.parametrize("build, shape, ignore", [
    (_ff_pair, (2, 4), ()), (_rec_pair, (2, 4), ()), (_conv_pair, (2, 1, 4, 4), (0,))])
def test_import_snntorch_graph(build, shape, ignore, device):
    ref, _ = build(device)
    sample = torch.zeros(shape[1:]) if not ignore else torch.zeros((1, *shape[1:]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = t_export(ref, sample, ignore_dims=list(ignore))
    mine = snn.import_from_nir(g).to(device)
    if build is _rec_pair:
        assert isinstance(mine, snn.NIRGraphModule)
    else:
        assert isinstance(mine, nn.Sequential)
    tutils.reset(ref)
    _run_both(ref, mine, _inputs(shape), device)


# ---- (c) grilly's graph imported by snnTorch runs as the grilly model ----------------------
def test_snntorch_imports_grilly_graph(device, capsys):
    # (snnTorch's import asserts one threshold per layer; per-neuron decays are fine)
    b1, t1 = _vec(3), 0.8
    kw = dict(reset="zero", reset_delay=False, init_hidden=True)
    mine = nn.Sequential(nn.Linear(4, 3), snn.LIF(b1, t1, **kw), nn.Linear(3, 2, bias=False),
                         snn.Synaptic(_vec(2, seed=2), _vec(2, seed=3), 0.9, **kw)).to(device)
    ref = t_import(snn.export_to_nir(mine, np.zeros(4, np.float32)))
    _run_both(ref, mine, _inputs((2, 4), seed=5), device, ref_out=lambda o: o[0])


# ---- (d) grilly's export -> import gives the same model -------------------------------------
@pytest.mark.parametrize("which", ["ff", "rleaky", "rleaky_last", "conv", "if"])
def test_round_trip(which, device):
    kw = dict(reset="zero", reset_delay=False, init_hidden=True)
    rng = np.random.default_rng(7)
    gp.random.seed(7)
    shape = (2, 4)
    if which == "ff":
        model = nn.Sequential(nn.Linear(4, 3), snn.LIF(_vec(3), 1.0, **kw), nn.Linear(3, 2),
                              snn.Synaptic(0.7, _vec(2), _vec(2, lo=0.8, hi=1.2), **kw))
    elif which == "rleaky":
        model = nn.Sequential(nn.Linear(4, 3), snn.RLeaky(_vec(3), 3, **kw), nn.Linear(3, 2),
                              snn.RLeaky(0.8, V=rng.uniform(-1, 1, 2).astype(np.float32), **kw))
    elif which == "rleaky_last":   # the recurrent cycle feeds the output node
        model = nn.Sequential(nn.Linear(4, 3), snn.RLeaky(0.9, 3, **kw))
    elif which == "conv":
        shape = (2, 1, 5, 5)
        model = nn.Sequential(nn.Conv2d(1, 2, 3, stride=1, padding=1, bias=False),
                              snn.LIF(0.8, 0.5, **kw), nn.AvgPool2d(2, 1, 0), nn.Flatten(),
                              nn.Linear(32, 3), snn.LIF(0.9, 0.7, **kw))
    else:
        model = nn.Sequential(nn.Linear(4, 3), snn.IF(0.8, **kw), nn.Linear(3, 2, bias=False),
                              snn.IFNode())
    model = model.to(device)
    g = snn.export_to_nir(model, np.zeros(shape[1:], np.float32))
    back = snn.import_from_nir(g).to(device)
    g2 = snn.export_to_nir(back, np.zeros(shape[1:], np.float32))
    _same_graph(g, g2, rtol=1e-6)
    xs = _inputs(shape, seed=3)
    snn.reset(model)
    snn.reset(back)
    for t in range(T):
        x = gp.asarray(xs[t], device=device)
        np.testing.assert_allclose(_np(back(x)), _np(model(x)), **TOL, err_msg=f"t={t}")
        for a, b in zip(_neurons(model), _neurons(back), strict=True):
            np.testing.assert_allclose(_np(b.mem), _np(a.mem), **TOL, err_msg=f"mem t={t}")


def test_round_trip_weights_copied(device):
    model = nn.Sequential(nn.Linear(2, 2), snn.LIF(0.9, reset="zero", reset_delay=False,
                                                   init_hidden=True)).to(device)
    back = snn.import_from_nir(snn.export_to_nir(model))
    np.testing.assert_array_equal(_np(back[0].weight), _np(model[0].weight))
    np.testing.assert_array_equal(_np(back[0].bias), _np(model[0].bias))
    assert back[1].reset_mechanism == "zero" and not back[1].reset_delay


# ---- (e) errors -----------------------------------------------------------------------------
def test_unsupported_module_raises(device):
    with pytest.raises(NotImplementedError, match="MaxPool2d"):
        snn.export_to_nir(nn.Sequential(nn.Conv2d(1, 1, 3), nn.MaxPool2d(2)), np.zeros((1, 6, 6)))
    with pytest.raises(NotImplementedError, match="Alpha"):
        snn.export_to_nir(nn.Sequential(nn.Linear(2, 2), stc.Alpha(0.9, 0.8)))
    with pytest.raises(NotImplementedError, match="inhibition"):
        snn.export_to_nir(nn.Sequential(nn.Linear(2, 2), stc.Leaky(0.9, inhibition=True)))
    with pytest.raises(NotImplementedError, match="graded_spikes_factor"):
        snn.export_to_nir(nn.Sequential(nn.Linear(2, 2),
                                        stc.Leaky(0.9, graded_spikes_factor=2.0)))
    with pytest.raises(NotImplementedError, match="model_fwd_args"):
        snn.export_to_nir(nn.Linear(2, 2), model_fwd_args=[1])
    with pytest.raises(TypeError, match="export_to_nir"):
        snn.export_to_nir(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="sample_data"):
        snn.export_to_nir(nn.Sequential(nn.Conv2d(1, 1, 3),
                                        snn.LIF(0.9, reset="zero", reset_delay=False)))


def test_subtract_reset_warns_as_snntorch_exports_it(device):
    with pytest.warns(UserWarning, match="Leaky"):
        g = snn.export_to_nir(nn.Sequential(nn.Linear(2, 2), stc.Leaky(0.9)))
    assert isinstance(g.nodes["1"], nir.LIF)


def test_unsupported_node_raises(device):
    li = nir.LI(tau=np.ones(2), r=np.ones(2), v_leak=np.zeros(2))
    g = nir.NIRGraph(nodes={"input": nir.Input(np.array([2])), "li": li,
                            "output": nir.Output(np.array([2]))},
                     edges=[("input", "li"), ("li", "output")])
    with pytest.raises(NotImplementedError, match="LI"):
        snn.import_from_nir(g)
    lif = nir.LIF(tau=np.ones(2), r=np.ones(2), v_leak=np.ones(2), v_threshold=np.ones(2))
    g = nir.NIRGraph(nodes={"input": nir.Input(np.array([2])), "lif": lif,
                            "output": nir.Output(np.array([2]))},
                     edges=[("input", "lif"), ("lif", "output")])
    with pytest.raises(NotImplementedError, match="v_leak"):
        snn.import_from_nir(g)
    with pytest.raises(TypeError, match="import_from_nir"):
        snn.import_from_nir({"nodes": {}})


def test_snntorch_module_names():
    """snnTorch's `from snntorch.export_nir import export_to_nir` spelling."""
    from grilly.nn.snn.export_nir import export_to_nir
    from grilly.nn.snn.import_nir import import_from_nir
    assert export_to_nir is snn.export_to_nir and import_from_nir is snn.import_from_nir
