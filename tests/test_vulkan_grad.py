"""Gradients on the Vulkan device against the CPU backend's, in float32: every VJP rule (the
cases of tests/test_autograd_rules.py and tests/test_autograd_linalg.py) and one Adam step of
two whole models from identical weights.

Cases whose forward the Vulkan device cannot run (the backend's NotImplementedError, or its
TypeError for a dtype it cannot hold) are skipped and counted; the count is printed at the end of
the module.
"""
import os

import numpy as np
import pytest

import grilly as gp
from grilly import nn, optim

VK = [d for d in gp.devices() if str(d).startswith("vulkan")]
if not VK and os.environ.get("GRILLY_REQUIRE_VULKAN") == "1":
    pytest.fail("GRILLY_REQUIRE_VULKAN=1 but no Vulkan device was found", pytrace=False)
pytestmark = pytest.mark.skipif(not VK, reason="no Vulkan device")

from test_autograd_linalg import CASES as LINALG_CASES  # noqa: E402
from test_autograd_rules import CASES as RULE_CASES  # noqa: E402

CASES = {**RULE_CASES, **LINALG_CASES}
UNSUPPORTED: dict = {}


@pytest.fixture(scope="module", autouse=True)
def _report_unsupported(request):
    yield
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    cm = request.config.pluginmanager.get_plugin("capturemanager")
    if tr is not None and cm is not None:
        with cm.global_and_fixture_disabled():
            lines = "".join(f"\n  {k}: {v}" for k, v in sorted(UNSUPPORTED.items()))
            tr.write_line(f"\ntest_vulkan_grad: {len(UNSUPPORTED)} of {len(CASES)} rule cases "
                          f"not runnable on Vulkan{lines}")


def _unsupported(e: BaseException) -> bool:
    return isinstance(e, NotImplementedError) or (
        isinstance(e, TypeError) and "does not support dtype" in str(e))


def _outputs(out) -> list:
    return [out] if isinstance(out, gp.Array) else [o for o in out if isinstance(o, gp.Array)]


def _grads(fn, inputs, weights, device):
    """Gradients of sum(w * out) for each float32 input, computed on ``device``."""
    with gp.device_scope(device):  # constants built inside the case land on the same device
        xs = [gp.asarray(x.astype(np.float32), device=device) for x in inputs]
        for x in xs:
            x.requires_grad_()
        outs = [o for o in _outputs(fn(*xs)) if o.requires_grad]
        gos = [gp.asarray(w.reshape(o.shape).astype(np.float32), dtype=o.dtype, device=device)
               for o, w in zip(outs, weights)]
        gs = gp.autograd.grad(outs, xs, grad_outputs=gos, allow_unused=True)
    return [None if g is None else np.asarray(g) for g in gs]


def _weights(fn, inputs) -> list:
    rng = np.random.default_rng(3)
    with gp.no_grad():
        outs = _outputs(fn(*[gp.asarray(x.astype(np.float32)) for x in inputs]))
    return [rng.standard_normal(o.shape) for o in outs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_gradient_matches_cpu(name):
    fn, inputs, *_ = CASES[name]
    base = name.split(".")[-1].split("/")[0]
    if not base.startswith("__") and base != "to_device" and not hasattr(
            {"linalg": gp.linalg, "fft": gp.fft}.get(name.partition(".")[0], gp), base):
        pytest.skip(f"{name} is not in the namespace yet")
    vk = gp.backends.registry.device("vulkan")
    w = _weights(fn, inputs)
    ref = _grads(fn, inputs, w, gp.backends.registry.device("cpu"))
    try:
        got = _grads(fn, inputs, w, vk)
    except (NotImplementedError, TypeError) as e:
        if not _unsupported(e):
            raise
        UNSUPPORTED[name] = f"{type(e).__name__}: {str(e)[:120]}"
        pytest.skip(f"{name} cannot run on {vk}: {str(e)[:200]}")
    for i, (g, r) in enumerate(zip(got, ref)):
        assert (g is None) == (r is None), f"{name}: input {i} gradient present on one device only"
        if r is None:
            continue
        assert g.dtype == r.dtype == np.float32 and g.shape == r.shape
        scale = max(1.0, float(np.max(np.abs(r), initial=0.0)))
        np.testing.assert_allclose(g, r, rtol=1e-3, atol=2e-4 * scale, err_msg=f"{name}: input {i}")


def _mlp():
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def _cnn():
    # no conv bias before BatchNorm: its gradient is exactly zero, i.e. rounding noise
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 10))


@pytest.mark.parametrize("make,shape", [(_mlp, (16, 64)), (_cnn, (6, 1, 8, 8))], ids=["mlp", "cnn"])
def test_one_adam_step_matches_cpu(make, shape):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, shape).astype(np.float32)
    y = rng.integers(0, 10, shape[0])
    params, grads = {}, {}
    for dev in ("cpu", "vulkan"):
        nn.manual_seed(0)
        model = make().to(dev)
        opt = optim.Adam(model.parameters(), lr=1e-3)
        loss = nn.CrossEntropyLoss()(model(gp.asarray(x, device=dev)), gp.asarray(y, device=dev))
        opt.zero_grad()
        loss.backward()
        grads[dev] = {k: np.asarray(p.grad) for k, p in model.named_parameters()}
        opt.step()
        params[dev] = {k: np.asarray(p) for k, p in model.named_parameters()}
    assert params["cpu"].keys() == params["vulkan"].keys()
    for k, r in grads["cpu"].items():
        np.testing.assert_allclose(grads["vulkan"][k], r, rtol=1e-3,
                                   atol=1e-4 * max(1e-3, float(np.abs(r).max())), err_msg=k)
    # Adam's first step is about lr * sign(grad): tiny gradients near eps may differ by < lr
    for k, r in params["cpu"].items():
        np.testing.assert_allclose(params["vulkan"][k], r, rtol=0, atol=2e-4, err_msg=k)
        assert not np.array_equal(r, np.asarray(0)), k
