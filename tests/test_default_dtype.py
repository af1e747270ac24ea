"""``gp.set_default_dtype`` as torch's (torch 2.13 CPU as the oracle): float64, float16 and
bfloat16 become the dtype of grilly.nn's parameters and buffers, the torch-style float factories
and distributions' float parameters, while the Array API creation functions keep NumPy's float64;
a float64 model trained one step with SGD or Adam agrees with torch's float64 to ~1e-12."""
import threading

import numpy as np
import pytest

import grilly as gp
import grilly.distributions as D
from grilly.testing import assert_close

torch = pytest.importorskip("torch")

R = np.random.default_rng(11)
NAMES = ("float64", "float16", "bfloat16", "float32")


@pytest.fixture
def default():
    """Sets grilly's and torch's default dtype together; both are float32 again afterwards."""
    def set_(name: str) -> None:
        gp.set_default_dtype(getattr(gp, name))
        torch.set_default_dtype(getattr(torch, name))
    yield set_
    gp.set_default_dtype(gp.float32)
    torch.set_default_dtype(torch.float32)


def _name(d) -> str:
    return str(d).rsplit(".", 1)[-1]


def _n(x) -> np.ndarray:
    return np.asarray(gp.astype(x, gp.float64).to_device("cpu"))


def test_set_and_get_as_torch(default):
    for name in NAMES:
        default(name)
        assert gp.get_default_dtype() is getattr(gp, name)
        assert _name(gp.get_default_dtype()) == _name(torch.get_default_dtype())
        # the Array API creation functions keep NumPy's float64 (and say so)
        assert gp.zeros(2).dtype == gp.asarray(1.5).dtype == gp.arange(2.0).dtype == gp.float64
        assert gp.tensor([1.5]).dtype == gp.ones(1).dtype == gp.float64
        assert gp.__array_namespace_info__().default_dtypes()["real floating"] == gp.float64
    for bad, tbad in ((gp.int32, torch.int32), (gp.complex64, torch.complex64),
                      (gp.bool, torch.bool)):
        with pytest.raises(TypeError):
            torch.set_default_dtype(tbad)
        with pytest.raises(TypeError, match="set_default_dtype"):
            gp.set_default_dtype(bad)
    with pytest.raises(TypeError, match="set_default_dtype"):
        gp.set_default_dtype("no such dtype")
    assert gp.get_default_dtype() is gp.float32   # (the last accepted one; errors change nothing)
    gp.set_default_dtype("float64")   # a dtype's name, as gp.dtype takes it
    assert gp.get_default_dtype() is gp.float64


def test_process_global_as_torch(default):
    """Set in one thread, seen by every thread (torch's default dtype is process-global)."""
    seen = []
    t = threading.Thread(target=lambda: (gp.set_default_dtype(gp.float64),
                                         seen.append(gp.nn.Linear(2, 2).weight.dtype)))
    t.start()
    t.join()
    assert seen == [gp.float64] and gp.get_default_dtype() is gp.float64
    assert gp.nn.Linear(2, 2).weight.dtype == gp.float64


def _modules(nn, device):
    kw = {"device": device}
    return {"linear": nn.Linear(3, 2, **kw), "conv": nn.Conv2d(2, 2, 3, **kw),
            "bn": nn.BatchNorm2d(2, **kw), "ln": nn.LayerNorm(3, **kw),
            "lstm": nn.LSTM(3, 2, **kw), "gru": nn.GRU(3, 2, **kw),
            "emb": nn.Embedding(4, 3, **kw), "mha": nn.MultiheadAttention(4, 2, **kw),
            "enc": nn.TransformerEncoderLayer(4, 2, 8, **kw), "prelu": nn.PReLU(**kw),
            "bilinear": nn.Bilinear(2, 2, 3, **kw)}


def _state_dtypes(m) -> dict:
    return {k: _name(v.dtype) for k, v in m.state_dict().items()}


@pytest.mark.parametrize("name", ["float64", "float16", "bfloat16"])
def test_parameters_buffers_and_factories_follow_it(device, default, name):
    default(name)
    tdev = "cpu"
    mods = _modules(gp.nn, device)
    for key, tm in _modules(torch.nn, tdev).items():
        assert _state_dtypes(mods[key]) == _state_dtypes(tm), key   # running stats too
    pairs = [
        (gp.rand(2, device=device), torch.rand(2)),
        (gp.randn(2, device=device), torch.randn(2)),
        (gp.normal(0.0, 1.0, (2,), device=device), torch.normal(0.0, 1.0, (2,))),
        (gp.hann_window(4, device=device), torch.hann_window(4)),
        (gp.nn.Parameter(), torch.nn.Parameter()),
        (gp.nn.Transformer.generate_square_subsequent_mask(3, device=device),
         torch.nn.Transformer.generate_square_subsequent_mask(3)),
        (D.Normal(0.0, 1.0).loc, torch.distributions.Normal(0.0, 1.0).loc),
        (D.Bernoulli(probs=0.3).probs, torch.distributions.Bernoulli(probs=0.3).probs),
        (D.Exponential(2.0).sample((2,)), torch.distributions.Exponential(2.0).sample((2,))),
    ]
    for g, t in pairs:
        assert _name(g.dtype) == _name(t.dtype), (g, t)
    # *_like keep their input's dtype, not the default (as torch's)
    x = gp.zeros((2,), dtype=gp.float32, device=device)
    assert gp.rand_like(x).dtype == gp.randn_like(x).dtype == gp.float32
    # a forward in that dtype, against float64 math on the same (rounded) weights
    lin, xs = mods["linear"], R.standard_normal((4, 3))
    xa = gp.astype(gp.asarray(xs, device=device), gp.get_default_dtype())
    y = lin(xa)
    assert y.dtype == gp.get_default_dtype()
    want = _n(xa) @ _n(lin.weight).T + _n(lin.bias)
    tol = 2e-2 if name == "bfloat16" else 2e-3 if name == "float16" else 1e-12
    assert_close(_n(y), want, rtol=tol, atol=tol)


class _Net:
    """The same small model in grilly.nn and torch.nn: conv, batch norm, linear, LSTM and
    multi-head attention."""

    @staticmethod
    def make(nn, device=None):
        kw = {} if device is None else {"device": device}

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(2, 3, 3, padding=1, **kw)
                self.bn = nn.BatchNorm2d(3, **kw)
                self.act = nn.Tanh()
                self.lin = nn.Linear(3 * 3 * 3, 8, **kw)
                self.lstm = nn.LSTM(4, 4, batch_first=True, **kw)
                self.mha = nn.MultiheadAttention(4, 2, batch_first=True, **kw)

            def forward(self, x):
                h = self.lin(self.act(self.bn(self.conv(x))).flatten(1))
                s, _ = self.lstm(h.reshape(2, 2, 4))
                a, _ = self.mha(s, s, s)
                return (a * a).mean()
        return Net()


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_float64_training_step_matches_torch(device, default, opt):
    default("float64")
    gm, tm = _Net.make(gp.nn, device), _Net.make(torch.nn)
    sd = gm.state_dict()
    assert all(v.dtype == gp.float64 for v in sd.values() if gp.isdtype(v.dtype, "real floating"))
    tm.load_state_dict({k: torch.tensor(np.asarray(v.to_device("cpu"))) for k, v in sd.items()})
    kw = {"lr": 0.1, "momentum": 0.9} if opt == "SGD" else {"lr": 0.01}
    gopt = getattr(gp.optim, opt)(gm.parameters(), **kw)
    topt = getattr(torch.optim, opt)(tm.parameters(), **kw)
    x = R.standard_normal((2, 2, 3, 3))
    for _ in range(2):
        gopt.zero_grad()
        topt.zero_grad()
        gl = gm(gp.asarray(x, device=device))
        tl = tm(torch.tensor(x))
        assert gl.dtype == gp.float64
        gl.backward()
        tl.backward()
        gopt.step()
        topt.step()
        assert_close(_n(gl), tl.item(), rtol=1e-12, atol=1e-12)
    for (k, gp_), (_, tp) in zip(gm.named_parameters(), tm.named_parameters(), strict=True):
        assert gp_.dtype == gp_.grad.dtype == gp.float64, k
        assert_close(_n(gp_.grad), tp.grad.numpy(), rtol=1e-10, atol=1e-12)
        # (Adam's m / sqrt(v) near +-1 in its first steps magnifies a last-bit difference in
        # the gradient: 1.3e-11 relative on the H200's float64, 1e-16 on the cpu)
        assert_close(_n(gp_), tp.detach().numpy(), rtol=1e-10, atol=1e-12)
    for st in gopt.state.values():
        assert all(v.dtype == gp.float64 for v in st.values() if isinstance(v, gp.Array))
    assert_close(_n(gm.bn.running_var), tm.bn.running_var.numpy(), rtol=1e-12, atol=1e-12)


def test_float64_distribution_and_optimizer_scalars_as_torch(device, default):
    """Distributions of Python floats compute in float64; NAdam's mu_product and ASGD's eta/mu
    are float64 scalars in torch under a float64 default (float32 otherwise)."""
    default("float64")
    lp = D.Normal(0.5, 2.0).log_prob(gp.asarray([0.1, 3.0], device=device))
    tlp = torch.distributions.Normal(0.5, 2.0).log_prob(torch.tensor([0.1, 3.0]))
    assert lp.dtype == gp.float64
    assert_close(_n(lp), tlp.numpy(), rtol=1e-14, atol=1e-14)
    w0 = R.standard_normal((3,))
    for opt in ("NAdam", "ASGD"):
        gw = gp.nn.Parameter(gp.asarray(w0, device=device))
        tw = torch.nn.Parameter(torch.tensor(w0))
        go, to = getattr(gp.optim, opt)([gw], lr=0.3), getattr(torch.optim, opt)([tw], lr=0.3)
        for _ in range(4):
            go.zero_grad()
            to.zero_grad()
            (gw * gw * gw).sum().backward()
            (tw * tw * tw).sum().backward()
            go.step()
            to.step()
        assert_close(_n(gw), tw.detach().numpy(), rtol=1e-14, atol=1e-14)


def test_lazy_modules_take_the_default_at_construction(device, default):
    """torch's lazy modules fix their dtype when built, not when first called."""
    m = gp.nn.LazyLinear(2, device=device)
    default("float64")
    m(gp.zeros((1, 3), dtype=gp.float32, device=device))
    assert m.weight.dtype == gp.float32
    m2 = gp.nn.LazyLinear(2, device=device)
    m2(gp.zeros((1, 3), device=device))
    assert m2.weight.dtype == gp.float64
