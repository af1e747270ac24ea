"""grilly.utils (the seed's transfer names, creation helpers, device manager), ALLOW_CPU_VULKAN,
and the seed's nn/functional names."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import grilly
import grilly as gp
from grilly import nn
from grilly import utils
from grilly.utils import tensor_conversion as tc

VK = [d for d in gp.devices() if str(d).startswith("vulkan")]
needs_vk = pytest.mark.skipif(not VK, reason="no Vulkan device")
R = np.random.default_rng(2)


@needs_vk
def test_to_and_from_vulkan_numpy_lists_torch():
    a = R.standard_normal((3, 4)).astype(np.float32)
    v = tc.to_vulkan(a)
    assert isinstance(v, gp.Array) and str(v.device).startswith("vulkan")
    assert isinstance(v, utils.VulkanTensor) and not isinstance(gp.asarray(a, device="cpu"),
                                                                 utils.VulkanTensor)
    np.testing.assert_array_equal(utils.from_vulkan(v), a)
    np.testing.assert_array_equal(utils.from_vulkan(utils.to_vulkan([[1, 2], [3, 4]])),
                                  [[1, 2], [3, 4]])
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    np.testing.assert_array_equal(utils.from_vulkan(utils.to_vulkan(t)), t.numpy())
    back = utils.to_torch(v)
    assert isinstance(back, torch.Tensor) and torch.equal(back, torch.from_numpy(a))
    vt = utils.VulkanTensor(a, dtype=gp.float64)
    assert vt.dtype == gp.float64 and isinstance(vt, gp.Array)
    with pytest.raises(TypeError, match="from_vulkan"):
        utils.from_vulkan(a)


def test_torch_dlpack_shares_cpu_memory():
    t = torch.zeros(4)
    g = utils.from_torch(t)
    t[1] = 5.0   # the grilly Array sees the torch tensor's memory
    assert float(g[1]) == 5.0
    x = gp.asarray(np.arange(3.0), device="cpu")
    tx = utils.to_torch(x)
    assert torch.equal(tx, torch.arange(3.0, dtype=torch.float64))
    with pytest.raises(TypeError, match="from_torch"):
        utils.from_torch(np.zeros(3))


def test_to_vulkan_without_a_vulkan_device_raises(monkeypatch):
    class NoDevices:
        unavailable_reason = "testing: no driver"

        def devices(self):
            return []
    monkeypatch.setitem(gp.backends.registry.backends, "vulkan", NoDevices())
    with pytest.raises(RuntimeError, match="to_vulkan: no usable Vulkan device .*testing"):
        utils.to_vulkan(np.ones(3))


def test_creation_helpers(device):
    t = utils.tensor([1.0, 2.0], device=device, requires_grad=True)
    assert t.requires_grad and t.dtype == gp.float64 and str(t.device) == str(device)
    z = utils.zeros(2, 3, device=device)
    assert z.shape == (2, 3) and z.dtype == gp.float32 and float(gp.sum(z)) == 0
    assert utils.zeros((4,), dtype=gp.int32, device=device).dtype == gp.int32
    gp.random.seed(0)
    r = np.asarray(utils.randn(20000, device=device))
    assert r.dtype == np.float32 and abs(r.mean()) < 0.03 and abs(r.std() - 1) < 0.03
    with pytest.raises(TypeError, match="zeros"):
        utils.zeros(2.5)


@needs_vk
def test_device_manager():
    dm = utils.get_device_manager()
    devs = dm.devices
    assert devs and {"device", "name", "type", "memory_heaps"} <= set(devs[0])
    info = dm.memory_info()
    assert info["total"] > 0 and ("budget" not in info or info["budget"] >= 0)
    assert utils.get_vulkan_backend() is gp.backends.registry.backends["vulkan"]
    before = gp.default_device()
    try:
        assert str(dm.select(0)).startswith("vulkan") and str(gp.default_device()) == str(VK[0])
        assert str(dm.select("cpu")) == "cpu"
        with pytest.raises(ValueError, match="no Vulkan device named"):
            dm.select("no such gpu")
        with pytest.raises(IndexError):
            dm.select(99)
    finally:
        gp.set_default_device(before)


@needs_vk
def test_allow_cpu_vulkan_makes_lavapipe_the_default():
    if VK[0].phys.type != 4:   # VK_PHYSICAL_DEVICE_TYPE_CPU
        pytest.skip("the Vulkan device is a GPU: it is the default anyway")
    code = "import grilly as gp; print(gp.default_device())"
    env = {k: v for k, v in os.environ.items() if k not in ("GRILLY_DEVICE", "VK_GPU_INDEX",
                                                             "VK_GPU_NAME")}
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    allow = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**env, "ALLOW_CPU_VULKAN": "1"})
    assert plain.stdout.strip() == "cpu", plain.stderr
    assert allow.stdout.strip().startswith("vulkan"), allow.stderr


def test_seed_nn_and_functional_names(device):
    assert grilly.functional is nn.functional
    emb = nn.Embedding(vocab_size=50, embedding_dim=8)
    assert emb.num_embeddings == 50 and emb.weight.shape == (50, 8)
    with pytest.raises(TypeError, match="not both"):
        nn.Embedding(10, 4, vocab_size=10)
    F = grilly.functional
    x = R.standard_normal((5, 6)).astype(np.float32)
    w = R.standard_normal((4, 6)).astype(np.float32)
    out = F.linear(gp.asarray(x, device=device), w)       # numpy weight on x's device
    np.testing.assert_allclose(np.asarray(out), x @ w.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(F.relu(x.tolist())), np.maximum(x, 0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(F.matmul(x, w.T)), x @ w.T, rtol=1e-5, atol=1e-5)
    q, k = R.standard_normal((3, 8)), R.standard_normal((4, 8))
    np.testing.assert_allclose(np.asarray(F.attention_scores(q, k)), q @ k.T / np.sqrt(8),
                               rtol=1e-12)
    att = nn.Attention(embed_dim=8, num_heads=2).to(device)
    seq = gp.asarray(R.standard_normal((2, 5, 8)).astype(np.float32), device=device)
    y = att(seq)
    ref = nn.MultiheadAttention.forward(att, seq, seq, seq, need_weights=False)[0]
    assert y.shape == (2, 5, 8)
    np.testing.assert_allclose(np.asarray(y), np.asarray(ref), rtol=1e-6)
    assert att(seq[0]).shape == (5, 8)   # unbatched (seq, embed), as in the seed's snippet


def test_utils_quickstart_example_runs(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "utils_quickstart.py"
    spec = importlib.util.spec_from_file_location("utils_quickstart", path)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    ex.main()
    out = capsys.readouterr().out
    assert "Output shape: (32, 512)" in out
    assert ("equal: True" in out) == bool(VK)
