"""The seed API as a user of the original grilly calls it: numpy copies that share no memory
with grilly's buffers, errors of the NumPy-expected type naming the op and the argument, and
the seed's utils and functional names with the inputs users pass (numpy integers, Python
floats, integer arrays). Each test failed before its fix."""
import numpy as np
import pytest
import torch

import grilly
import grilly.functional as F
import grilly.utils as utils


def test_snncompute_get_state_is_a_copy(device):
    # docs/snn.md: get_state() -> numpy copies. On the cpu device it returned views of the
    # live state, so editing the dict changed the neurons.
    snn = grilly.SNNCompute(4, device=str(device))
    snn.process(np.array([60.0, 0.0, 60.0, 0.0], np.float32))
    state = snn.get_state()
    state["membrane"][:] = 0.99
    state["refractory"][:] = 0.0
    np.testing.assert_array_equal(snn.get_state()["refractory"], [2.0, 0.0, 2.0, 0.0])
    np.testing.assert_array_equal(snn.get_state()["membrane"], 0.0)
    # the refractory neurons stay silent, the others need more than one small step to fire
    np.testing.assert_array_equal(snn.process(np.full(4, 1.0, np.float32)), 0.0)


def test_compute_outputs_and_inputs_share_no_memory(device):
    c = grilly.Compute(device=str(device))
    i = np.full(3, 30.0, np.float32)
    v = np.zeros(3, np.float32)
    r = np.zeros(3, np.float32)
    v2, r2, s = c.lif_step(i, v, r)
    for out in (v2, r2, s):
        assert out.flags.owndata and out.flags.writeable
        assert not any(np.shares_memory(out, a) for a in (i, v, r))
    np.testing.assert_array_equal(i, 30.0)
    np.testing.assert_array_equal(v, 0.0)
    x = grilly.ones(3, device=device)
    y = utils.from_vulkan(x)           # docs/utils.md: a numpy copy, on any device
    y[0] = 7.0
    np.testing.assert_array_equal(np.asarray(x), 1.0)


def test_compute_rejects_bad_inputs_by_name():
    c = grilly.Compute()
    z = np.zeros(3, np.float32)
    with pytest.raises(TypeError, match=r"Compute.lif_step: input must be a numeric array, got None"):
        c.lif_step(None, z, z)            # was NaN, silently
    with pytest.raises(TypeError, match=r"Compute.activation_relu: x must be a numeric array of "
                                        r"real values, got dtype complex128"):
        c.activation_relu(np.array([1 + 2j, -1]))   # was the real part, with a ComplexWarning
    with pytest.raises(TypeError, match=r"Compute.lif_step: dt must be a real number, got str"):
        c.lif_step(z, z, z, dt="0.001")
    with pytest.raises(TypeError, match=r"Compute.lif_step: v_thresh must be a real number, got "
                                        r"ndarray of shape \(3,\)"):
        c.lif_step(z, z, z, v_thresh=np.ones(3))
    with pytest.raises(TypeError, match=r"Compute.hebbian_learning: learning_rate must be a real"):
        c.hebbian_learning(np.zeros((2, 3)), z, np.zeros(2), None)
    with pytest.raises(ValueError, match=r"Compute.layernorm: x needs at least 1 dimension"):
        c.layernorm(1.5)                  # was IndexError: tuple index out of range
    with pytest.raises(ValueError, match=r"linear: bias shape \(3,\) does not broadcast to the "
                                         r"output shape \(2, 5\)"):
        c.linear(np.ones((2, 4)), np.ones((5, 4)), np.ones(3))   # was named 'add'
    # numbers from numpy are numbers; a torch tensor that requires grad is read detached
    v, _, s = c.lif_step(torch.full((3,), 60.0, requires_grad=True), z, z,
                         dt=np.float64(0.001), tau_mem=np.float32(20.0), v_thresh=np.array(1.0))
    np.testing.assert_array_equal(s, 1.0)
    np.testing.assert_array_equal(v, 0.0)


def test_snncompute_and_learning_errors():
    with pytest.raises(TypeError, match=r"SNNCompute: n_neurons must be an int >= 1, got float"):
        grilly.SNNCompute(3.0)
    with pytest.raises(TypeError, match=r"SNNCompute: dt must be a real number, got str"):
        grilly.SNNCompute(3, dt="1ms")
    snn = grilly.SNNCompute(np.int64(3))    # a numpy integer (x.shape[0], np.prod) is an int
    assert snn.get_state()["membrane"].shape == (3,)
    with pytest.raises(TypeError, match=r"SNNCompute.set_state: expected a dict .* got NoneType"):
        snn.set_state(None)
    with pytest.raises(TypeError, match=r"SNNCompute.process: input must be a numeric array, "
                                        r"got None"):
        snn.process(None)
    snn.cleanup()
    for call in (snn.get_state, snn.reset, lambda: snn.process(np.zeros(3))):
        with pytest.raises(RuntimeError, match=r"SNNCompute\.\w+: this SNNCompute was cleaned up"):
            call()
    learn = grilly.Learning()
    learn.cleanup()
    with pytest.raises(RuntimeError, match=r"Learning.whitening: this Learning was cleaned up"):
        learn.whitening(np.ones((4, 2)))


def test_learning_ewc_pair_of_lists():
    # a (current, consolidated) pair given as two Python lists, with one Fisher list
    got = grilly.Learning().ewc_penalty(([1.0, 2.0], [0.0, 0.5]), [1.0, 4.0], 2.0)
    np.testing.assert_allclose(got, 1.0 * (1.0 + 4.0 * 1.5 ** 2), rtol=1e-6)


def test_functional_relu_of_integers(device):
    x = np.array([-3, 0, 5], np.int32)
    y = F.relu(grilly.asarray(x, device=device))   # was TypeError naming 'maximum'
    assert y.dtype == grilly.int32
    np.testing.assert_array_equal(np.asarray(y), np.maximum(x, 0))
    np.testing.assert_array_equal(np.asarray(F.relu([-1, 2])), [0, 2])
    with pytest.raises(TypeError, match=r"relu: input must have a real numeric dtype, got .*bool"):
        F.relu(grilly.asarray([True, False], device=device))


def test_utils_creation_sizes():
    # torch.zeros takes numpy integers (x.shape[0] of a numpy array, np.prod); grilly's raised
    n = np.int64(4)
    assert utils.zeros(n, 3).shape == (4, 3) and utils.randn((n,)).shape == (4,)
    assert utils.zeros((np.int32(2), 3)).dtype == grilly.float32
    with pytest.raises(TypeError, match="zeros: the shape must be non-negative ints"):
        utils.zeros(2.0, 3)
    with pytest.raises(TypeError, match="zeros: the shape must be non-negative ints"):
        utils.zeros(True)
    with pytest.raises(ValueError, match="zeros: the shape must be non-negative ints"):
        utils.zeros(-1)
    # docs/utils.md: tensor keeps the Array API's float64 for Python floats (not torch's float32)
    assert utils.tensor([1.5]).dtype == grilly.float64
    assert utils.tensor(np.array([1.5], np.float32)).dtype == grilly.float32


def test_to_vulkan_of_a_vulkan_array_is_a_copy():
    try:
        a = utils.to_vulkan(np.ones(3, np.float32))
    except RuntimeError as e:
        pytest.skip(str(e))
    b = utils.to_vulkan(a)        # docs/utils.md: a device copy (it returned ``a`` itself)
    b[0] = 5.0
    np.testing.assert_array_equal(utils.from_vulkan(a), 1.0)
    assert isinstance(b, utils.VulkanTensor)
    assert utils.to_vulkan(a, dtype=np.float64).dtype == grilly.float64


def test_seed_attention_takes_numpy(device):
    # the seed README's high-level snippet feeds modules numpy; nn.Attention raised
    # "expand_dims: expected a grilly Array" (Linear and LayerNorm already took numpy)
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    att = grilly.nn.Attention(embed_dim=8, num_heads=2).to(device)
    want = np.asarray(att(grilly.asarray(x, device=device)))
    got = att(x)
    assert got.device == device and got.shape == (2, 5, 8)
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(att(x[0])), np.asarray(att(grilly.asarray(x[0], device=device))))
