"""What porting well-known tutorials (PyTorch's 60-minute blitz, a VAE, an LSTM on packed
sequences, a Transformer copy task, snnTorch's tutorial 5, a NumPy analysis) changing only the
imports ran into: torch's top-level names (gp.tensor, cat, stack(dim=), save/load, randn_like,
flatten, x.data), NumPy's linalg.lstsq and linalg.norm, ``(pred == y).mean()`` of a bool array,
snnTorch's ``snn.Leaky``. Each test failed before its fix; each compares with torch or NumPy on
every device."""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)


def _g(a, device, requires_grad=False):
    x = gp.asarray(np.asarray(a), device=device)
    return x.requires_grad_() if requires_grad else x


# ---- torch's top-level names -----------------------------------------------------------------
def test_cat_and_stack_dim_match_torch(device):
    """torch.cat(xs, dim=1) and torch.stack(xs, dim=0) (snnTorch's spk_rec): gp.cat did not
    exist and gp.stack refused ``dim``; values and gradients against torch."""
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 1))
    ga, gb = _g(a, device, True), _g(b, device, True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    w = RNG.normal(size=(2, 4))
    (gp.cat([ga, gb], dim=1) * _g(w, device)).sum().backward()
    (torch.cat([ta, tb], dim=1) * torch.tensor(w)).sum().backward()
    assert_close(ga.grad, ta.grad.numpy())
    assert_close(gb.grad, tb.grad.numpy())
    ga.grad = None
    ts = [torch.tensor(a, requires_grad=True) for _ in range(3)]
    gs = [_g(a, device, True) for _ in range(3)]
    w = RNG.normal(size=(2, 3, 3))
    out = gp.stack(gs, dim=-1)
    tout = torch.stack(ts, dim=-1)
    assert out.shape == tuple(tout.shape)
    (out * _g(w, device)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for g, t in zip(gs, ts):
        assert_close(g.grad, t.grad.numpy())
    assert_close(gp.cat((ga, ga), axis=0), np.concatenate([a, a]))
    with pytest.raises(TypeError, match="stack: give axis or dim"):
        gp.stack(gs, axis=1, dim=1)
    with pytest.raises(TypeError, match="cat: give dim or axis"):
        gp.cat(gs, 1, axis=1)


def test_torch_creation_names(device):
    """gp.tensor, from_numpy, randn/rand (float32, seeded by gp.manual_seed), randn_like /
    rand_like (the input's shape, dtype and device), flatten(x, 1), sigmoid: AttributeError before."""
    with gp.device_scope(device):
        assert gp.tensor([1, 2]).dtype == gp.int64
        assert gp.from_numpy(np.ones(3, np.float32)).dtype == gp.float32
        gp.manual_seed(3)
        a = gp.randn(2, 3)
        gp.manual_seed(3)
        assert np.array_equal(a.numpy(), gp.randn((2, 3)).numpy())
        assert a.dtype == gp.float32 and a.device == gp.asarray(0).device
        u = gp.rand(1000)
        assert u.dtype == gp.float32 and 0.0 <= float(u.min()) and float(u.max()) < 1.0
    x = _g(RNG.normal(size=(2, 3, 4)).astype(np.float32), device)
    for f in (gp.randn_like, gp.rand_like):
        r = f(x)
        assert r.shape == x.shape and r.dtype == x.dtype and r.device == x.device
    assert gp.randn_like(x, dtype=gp.float64).dtype == gp.float64
    with pytest.raises(TypeError, match="randn_like: needs a real floating dtype"):
        gp.randn_like(_g(np.arange(3), device))
    t = torch.tensor(np.asarray(x.numpy()))
    assert_close(gp.flatten(x, 1), torch.flatten(t, 1).numpy())
    assert_close(gp.flatten(x), torch.flatten(t).numpy())
    assert_close(gp.sigmoid(x), torch.sigmoid(t).numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(TypeError, match="from_numpy: expected a numpy.ndarray"):
        gp.from_numpy([1, 2])


def test_save_load_state_dict(tmp_path, device):
    """The blitz's torch.save(net.state_dict(), PATH) / net.load_state_dict(torch.load(PATH))."""
    path = str(tmp_path / "net.pth")
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
    gp.save(net.state_dict(), path)
    sd = gp.load(path, map_location=device)
    assert list(sd) == list(net.state_dict())
    net2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
    net2.load_state_dict(sd)
    x = _g(RNG.normal(size=(5, 3)).astype(np.float32), device)
    assert np.array_equal(net(x).numpy(), net2(x).numpy())
    with pytest.raises(TypeError, match="save: the object comes first"):
        gp.save(path, net.state_dict())
    with pytest.raises(TypeError, match="save: a state dict, a Module or a checkpoint"):
        gp.save(object(), path)   # (a list is a checkpoint: tests/test_train_hunt5.py)


def test_data_property_as_torch(device):
    """``outputs.data`` (the blitz's torch.max(outputs.data, 1)) and ``p.data.mul_(...)``,
    ``p.data = ...``: AttributeError before. As torch: no graph, same memory, assignable."""
    t = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = _g(t.detach().numpy(), device, True)
    d = w.data
    assert not d.requires_grad and t.data.requires_grad is False
    w.data.mul_(2.0)   # in place on a leaf that requires grad, outside autograd
    t.data.mul_(2.0)
    assert_close(w, t.detach().numpy())
    w.data = _g(np.array([5.0, 6.0, 7.0]), device)
    t.data = torch.tensor([5.0, 6.0, 7.0])
    assert_close(w, t.detach().numpy())
    assert w.requires_grad and nn.is_parameter(w) is False
    (w * w).sum().backward()
    assert_close(w.grad, 2 * t.detach().numpy())
    with pytest.raises(ValueError, match="Array.data: cannot assign values of shape"):
        w.data = _g(np.zeros(2), device)


# ---- NumPy ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape_b", [(6,), (6, 2)])
def test_lstsq_matches_numpy_and_torch(device, shape_b):
    """np.linalg.lstsq / torch.linalg.lstsq (a fit y = X w + b): gp.linalg had no lstsq."""
    a = RNG.normal(size=(6, 3))
    b = RNG.normal(size=shape_b)
    r = gp.linalg.lstsq(_g(a, device), _g(b, device), rcond=None)
    n = np.linalg.lstsq(a, b, rcond=None)
    assert_close(r.solution, n[0])
    assert_close(r[1], n[1])
    assert int(r.rank) == n[2]
    assert_close(r.singular_values, n[3])
    assert r.solution.device == _g(a, device).device
    # rank-deficient: the minimum-norm solution, no residuals (NumPy)
    ad = np.c_[a, a[:, :1]]
    r = gp.linalg.lstsq(_g(ad, device), _g(b, device))
    n = np.linalg.lstsq(ad, b)
    assert_close(r.solution, n[0])
    assert r.residuals.shape == n[1].shape == (0,)
    assert int(r.rank) == n[2] == 3
    # gradients with respect to a and b (torch's gelsd: the same solution)
    ga, gb = _g(a, device, True), _g(b, device, True)
    ta = torch.tensor(a, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    w = RNG.normal(size=(3,) + shape_b[1:])
    (gp.linalg.lstsq(ga, gb).solution * _g(w, device)).sum().backward()
    tbb = tb if tb.ndim == 2 else tb[:, None]
    tsol = torch.linalg.lstsq(ta, tbb, driver="gelsd").solution
    (tsol.reshape(w.shape) * torch.tensor(w)).sum().backward()
    assert_close(ga.grad, ta.grad.numpy(), rtol=1e-6, atol=1e-9)
    assert_close(gb.grad, tb.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_lstsq_errors(device):
    a = _g(np.ones((4, 2)), device)
    with pytest.raises(ValueError, match="lstsq: b of shape"):
        gp.linalg.lstsq(a, _g(np.ones(3), device))
    with pytest.raises(ValueError, match="lstsq: x must have at least 2 dimensions"):
        gp.linalg.lstsq(_g(np.ones(4), device), _g(np.ones(4), device))
    with pytest.raises(NotImplementedError, match="lstsq: driver 'gelsy'"):
        gp.linalg.lstsq(a, _g(np.ones(4), device), driver="gelsy")


@pytest.mark.parametrize("kw", [{}, {"ord": 1, "axis": 1}, {"axis": (0, 2)},
                                {"ord": "nuc", "axis": (2, 1), "keepdims": True},
                                {"ord": np.inf, "axis": -1}, {"ord": 3, "axis": 0},
                                {"ord": 1, "axis": (2, 0)}])
def test_norm_matches_numpy(device, kw):
    """np.linalg.norm: gp.linalg had only vector_norm / matrix_norm."""
    x = RNG.normal(size=(2, 3, 4))
    assert_close(gp.linalg.norm(_g(x, device), **kw), np.linalg.norm(x, **kw))


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_norm_of_a_matrix(device, ord):
    m = RNG.normal(size=(3, 4))
    assert_close(gp.linalg.norm(_g(m, device), ord), np.linalg.norm(m, ord))


def test_norm_torch_spelling_and_gradient(device):
    """torch.linalg.norm(x, dim=, keepdim=) and its gradient; integers in float64 (NumPy)."""
    x = RNG.normal(size=(3, 4))
    gx = _g(x, device, True)
    tx = torch.tensor(x, requires_grad=True)
    out = gp.linalg.norm(gx, dim=1, keepdim=True)
    tout = torch.linalg.norm(tx, dim=1, keepdim=True)
    assert_close(out, tout.detach().numpy())
    out.sum().backward()
    tout.sum().backward()
    assert_close(gx.grad, tx.grad.numpy())
    r = gp.linalg.norm(_g(np.array([3, 4]), device))
    assert r.dtype == gp.float64 and float(r) == 5.0
    with pytest.raises(ValueError, match="norm: ord=1 without axis needs a 1-D or 2-D"):
        gp.linalg.norm(_g(x[None], device), 1)
    with pytest.raises(ValueError, match="norm: ord='fro' is a matrix norm"):
        gp.linalg.norm(_g(x, device), "fro", axis=0)
    with pytest.raises(TypeError, match="norm: give axis or dim"):
        gp.linalg.norm(_g(x, device), axis=0, dim=0)


def test_mean_of_bool_is_a_fraction(device):
    """``(pred == y).mean()`` (accuracy, NumPy style) raised TypeError for a bool array; NumPy's
    methods give the float64 fraction, also through np.mean and for var/std. The namespace
    functions keep the Array API's TypeError."""
    m = np.array([[True, False, True], [True, True, True]])
    gm = _g(m, device)
    assert_close(gm.mean(), m.mean())
    assert gm.mean().dtype == gp.float64
    assert_close(np.mean(gm, axis=0), np.mean(m, axis=0))
    assert_close(gm.var(axis=1), m.var(axis=1))
    assert_close(gm.std(), m.std())
    assert_close(gm.mean(dtype=gp.float32), m.mean(dtype=np.float32))
    with pytest.raises(TypeError, match="mean: dtype bool is not supported"):
        gp.mean(gm)


# ---- snnTorch --------------------------------------------------------------------------------
def test_snn_leaky_is_snntorch_leaky(device):
    """snnTorch's tutorial 5 spells the neuron ``snn.Leaky(beta=0.95)``: it raised
    AttributeError (pointing at LIF). Spikes and membranes step for step against snnTorch."""
    from grilly.nn import snn

    snntorch = pytest.importorskip("snntorch")
    x = RNG.normal(size=(6, 4, 5)).astype(np.float32) * 1.5
    lif = snn.Leaky(beta=0.9).to(device)   # (its beta and threshold are buffers, as snnTorch's)
    ref = snntorch.Leaky(beta=0.9)
    mem, tmem = lif.init_leaky(), ref.init_leaky()
    for t in range(x.shape[0]):
        spk, mem = lif(_g(x[t], device), mem)
        tspk, tmem = ref(torch.tensor(x[t]), tmem)
        assert_close(spk, tspk.detach().numpy())
        assert_close(mem, tmem.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert isinstance(lif, snn.LIF) and repr(lif).startswith("Leaky(")


# ---- the two tutorial examples, short runs -----------------------------------------------------
def _load_example(name: str):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_blitz_example_runs(tmp_path, capsys):
    """examples/blitz_cnn_digits.py, two epochs on 300 digits: progress per epoch, the
    reloaded state dict, and the curve written (a PNG, or .npy without matplotlib)."""
    pytest.importorskip("sklearn")
    ex = _load_example("blitz_cnn_digits")
    acc = ex.main(["--device", "cpu", "--epochs", "2", "--limit", "300",
                   "--out", str(tmp_path / "curve.png")])
    out = capsys.readouterr().out
    assert "epoch  2/2  loss" in out and "Accuracy of the reloaded network" in out
    assert 0.0 <= acc <= 1.0
    assert list(tmp_path.iterdir())


def test_vae_example_elbo_decreases(tmp_path, capsys):
    """examples/vae_digits.py, three epochs on 300 digits: the negative ELBO decreases and the
    kl_divergence KL equals the closed form it prints."""
    pytest.importorskip("sklearn")
    ex = _load_example("vae_digits")
    hist = ex.main(["--device", "cpu", "--epochs", "3", "--limit", "300",
                    "--out", str(tmp_path / "vae.png")])
    assert hist[-1] < hist[0]
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("epoch"):
            kl, closed = line.split("KL ")[1].split(" (closed form ")
            assert kl == closed.split(")")[0]
    assert list(tmp_path.iterdir())
