"""Spike encoders, readouts and losses against snnTorch's spikegen and functional losses
(test-only oracles) and numpy, on every device."""
import numpy as np
import pytest

import grilly as gp
from grilly.nn import snn

torch = pytest.importorskip("torch")
spikegen = pytest.importorskip("snntorch.spikegen")
SFL = pytest.importorskip("snntorch.functional")


def _np(x):
    return np.asarray(x.to_device("cpu"))


def _g(a, device, dtype=np.float64):
    return gp.asarray(np.asarray(a, dtype=dtype), device=device)


def test_rate_is_bernoulli_and_seeded(device):
    p = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 1.7, -0.3])
    gp.random.seed(3)
    a = snn.rate(_g(p, device, np.float32), 4000)
    gp.random.seed(3)
    b = snn.rate(_g(p, device, np.float32), 4000)
    assert a.shape == (4000, 7) and a.dtype == gp.float32
    np.testing.assert_array_equal(_np(a), _np(b))
    got = _np(a)
    assert set(np.unique(got)) <= {0.0, 1.0}
    want = np.clip(p, 0, 1)
    # 4000 draws: 5 standard deviations of a Bernoulli mean
    tol = 5 * np.sqrt(want * (1 - want) / 4000) + 1e-12
    assert np.all(np.abs(got.mean(axis=0) - want) <= tol)
    half = _np(snn.rate(_g(p, device, np.float32), 4000, gain=0.5)).mean(axis=0)
    assert abs(half[3] - 0.45) < 0.04


@pytest.mark.parametrize("linear,normalize,clip", [(True, True, False), (False, True, False),
                                                    (False, False, True), (True, False, True)])
def test_latency_equals_snntorch(linear, normalize, clip, device):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(0, 1, 40), [0.0, 0.005, 1.0, 0.5]]).reshape(4, 11)
    kw = dict(threshold=0.01, tau=5 if not normalize else 1, linear=linear, normalize=normalize,
              clip=clip)
    want = spikegen.latency(torch.tensor(x), num_steps=20, bypass=True, **kw).numpy()
    got = snn.latency(_g(x, device), 20, **kw)
    np.testing.assert_array_equal(_np(got), want)
    assert np.all(_np(got).sum(axis=0) <= 1)


@pytest.mark.parametrize("padding,off_spike", [(False, False), (True, False), (False, True),
                                               (True, True)])
def test_delta_equals_snntorch(padding, off_spike, device):
    x = np.cumsum(np.random.default_rng(1).standard_normal((30, 3, 4)) * 0.2, axis=0)
    want = spikegen.delta(torch.tensor(x), threshold=0.15, padding=padding,
                          off_spike=off_spike).numpy()
    got = snn.delta(_g(x, device), threshold=0.15, padding=padding, off_spike=off_spike)
    np.testing.assert_array_equal(_np(got), want)


def test_readouts(device):
    rng = np.random.default_rng(2)
    spk = (rng.uniform(size=(9, 3, 5)) < 0.3).astype(np.float64)
    mem = rng.standard_normal((9, 3, 5))
    np.testing.assert_array_equal(_np(snn.spike_count(_g(spk, device))), spk.sum(0))
    np.testing.assert_allclose(_np(snn.spike_rate(_g(spk, device))), spk.mean(0), rtol=1e-14)
    np.testing.assert_array_equal(_np(snn.membrane_max(_g(mem, device))), mem.max(0))
    np.testing.assert_array_equal(_np(snn.membrane_last(_g(mem, device))), mem[-1])
    np.testing.assert_allclose(_np(snn.membrane_mean(_g(mem, device))), mem.mean(0), rtol=1e-14)


LOSSES = [
    ("mse_count_loss", lambda: SFL.mse_count_loss(correct_rate=0.8, incorrect_rate=0.2),
     lambda s, y: snn.mse_count_loss(s, y, correct_rate=0.8, incorrect_rate=0.2)),
    ("mse_count_default", lambda: SFL.mse_count_loss(), snn.MSECountLoss()),
    ("ce_rate_loss", lambda: SFL.ce_rate_loss(), snn.ce_rate_loss),
    ("ce_count_loss", lambda: SFL.ce_count_loss(), snn.CECountLoss()),
    ("ce_max_membrane_loss", lambda: SFL.ce_max_membrane_loss(), snn.ce_max_membrane_loss),
]


@pytest.mark.parametrize("name", [n for n, _, _ in LOSSES])
def test_losses_equal_snntorch(name, device):
    _, ref, ours = next(entry for entry in LOSSES if entry[0] == name)
    rng = np.random.default_rng(3)
    if "membrane" in name:
        out = rng.standard_normal((10, 6, 4)).astype(np.float32)
    else:
        out = (rng.uniform(size=(10, 6, 4)) < 0.4).astype(np.float32)
    y = rng.integers(0, 4, 6)
    ot = torch.tensor(out, requires_grad=True)
    lt = ref()(ot, torch.tensor(y))
    lt.backward()
    og = gp.asarray(out, device=device).requires_grad_()
    lg = ours(og, gp.asarray(y, device=device))
    lg.backward()
    np.testing.assert_allclose(float(_np(lg)), float(lt.detach()), rtol=2e-6)
    np.testing.assert_allclose(_np(og.grad), ot.grad.numpy(), rtol=2e-5, atol=1e-7)


def test_encoder_and_loss_errors():
    with pytest.raises(ValueError, match="rate: num_steps must be an int >= 1"):
        snn.rate(gp.zeros(3), 0)
    with pytest.raises(TypeError, match="rate: data must have a real floating"):
        snn.rate(gp.zeros(3, dtype=gp.int32), 5)
    with pytest.raises(ValueError, match="latency: threshold"):
        snn.latency(gp.zeros(3), 5, threshold=1.5)
    with pytest.raises(ValueError, match="delta: data must be"):
        snn.delta(gp.zeros(()))
    with pytest.raises(ValueError, match="mse_count_loss: spk_out must be"):
        snn.mse_count_loss(gp.zeros((3, 4)), gp.asarray([0, 1, 2]))
    with pytest.raises(TypeError, match="ce_rate_loss: targets must be an integer"):
        snn.ce_rate_loss(gp.zeros((3, 2, 4)), gp.asarray([0.0, 1.0]))
    with pytest.raises(ValueError, match="ce_count_loss: targets shape"):
        snn.ce_count_loss(gp.zeros((3, 2, 4)), gp.asarray([0, 1, 2]))


@pytest.mark.parametrize("name", ["mse_count_loss", "ce_rate_loss", "ce_count_loss",
                                  "ce_max_membrane_loss"])
def test_losses_reject_class_labels_out_of_range(name, device):
    """As snnTorch (torch raises): a label outside [0, classes) is an error, not a number."""
    loss = getattr(snn, name)
    out = gp.zeros((4, 2, 3), device=device)
    for labels, seen in (([0, 7], r"\[0, 7\]"), ([0, -1], r"\[-1, 0\]")):
        with pytest.raises(ValueError, match=rf"{name}: targets must be class indices in "
                                             rf"\[0, 3\), got values in {seen}"):
            loss(out, gp.asarray(labels, device=device))
    loss(out, gp.asarray([0, 2], device=device))   # the edges are fine
    # a grilly.jit trace cannot read the labels on the host: it records the loss unchecked
    import grilly.jit

    traced = grilly.jit(loss)
    y = gp.asarray([2, 1], device=device)
    for _ in range(2):
        np.testing.assert_allclose(_np(traced(out, y)), _np(loss(out, y)))
