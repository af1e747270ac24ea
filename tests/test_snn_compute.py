"""The seed API (grilly.Compute / VulkanCompute / SNNCompute) against numpy references, on
every device, and the seed's quick-start example run as written."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import grilly

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _np_lif(i, v, r, dt=0.001, tau=20.0, thr=1.0, v_rest=0.0, v_reset=0.0, r_mem=1.0, t_ref=2.0):
    """The seed's LIF step in float64 numpy (dt in s, tau and t_ref in ms)."""
    dt_ms = dt * 1000
    in_ref = r > 0
    vn = v + dt_ms / tau * (r_mem * i - (v - v_rest))
    spike = ~in_ref & (vn >= thr)
    v_out = np.where(in_ref | spike, v_reset, vn)
    r_out = np.where(spike, t_ref, np.where(in_ref, np.maximum(r - dt_ms, 0), r))
    return v_out, r_out, spike.astype(np.float64)


def test_lif_step_matches_numpy(device):
    rng = np.random.default_rng(0)
    c = grilly.Compute(device=str(device))
    v = np.zeros(257, np.float32)
    r = np.zeros(257, np.float32)
    wv, wr = v.astype(np.float64), r.astype(np.float64)
    drive = (rng.uniform(0, 60, 257)).astype(np.float32)
    total = 0
    for _ in range(40):
        v, r, s = c.lif_step(drive, v, r, dt=0.001, tau_mem=10.0, v_thresh=1.0, t_refrac=3.0)
        wv, wr, ws = _np_lif(drive.astype(np.float64), wv, wr, tau=10.0, t_ref=3.0)
        assert v.dtype == r.dtype == s.dtype == np.float32
        np.testing.assert_array_equal(s, ws)
        np.testing.assert_allclose(v, wv, rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(r, wr, rtol=1e-5, atol=1e-5)
        total += s.sum()
    assert total > 100
    c.cleanup()


def test_learning_rules_match_numpy(device):
    rng = np.random.default_rng(1)
    c = grilly.VulkanCompute(device=str(device))
    w = rng.uniform(0.2, 0.8, (4, 6)).astype(np.float32)
    pre = rng.standard_normal((5, 3, 6)).astype(np.float32)   # (batch, time, n) as the seed's
    post = rng.standard_normal((5, 3, 4)).astype(np.float32)
    want = w + 0.05 * np.einsum("bti,btj->ij", post, pre) / 15 - 0.01 * w
    np.testing.assert_allclose(c.hebbian_learning(w, pre, post, 0.05, weight_decay=0.01), want,
                               rtol=1e-5, atol=1e-6)
    pre_s = (rng.uniform(size=(20, 6)) < 0.3).astype(np.float32)
    post_s = (rng.uniform(size=(20, 4)) < 0.3).astype(np.float32)
    wn, xp, xq = w.astype(np.float64), np.zeros(6), np.zeros(4)
    for t in range(20):  # dt 2 ms, tau 10 ms
        xp = xp * math.exp(-0.2) + pre_s[t]
        xq = xq * math.exp(-0.2) + post_s[t]
        wn = np.clip(wn + 0.02 * np.outer(post_s[t], xp) - 0.03 * np.outer(xq, pre_s[t]), 0, 1)
    got = c.stdp_learning(w, pre_s, post_s, dt=0.002, A_plus=0.02, A_minus=0.03, tau_plus=10.0,
                          tau_minus=10.0)
    np.testing.assert_allclose(got, wn, rtol=1e-5, atol=1e-6)


def test_dense_ops_match_numpy(device):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((5, 16)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    with grilly.Compute(device=str(device)) as c:
        np.testing.assert_allclose(c.linear(x, w, b), x @ w.T + b, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(c.activation_relu(x), np.maximum(x, 0))
        g, h = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        np.testing.assert_allclose(c.layernorm(x, g, h, 1e-5), (x - mu) / np.sqrt(var + 1e-5) * g + h,
                                   rtol=1e-4, atol=1e-5)
        q, k, v = (rng.standard_normal((2, 7, 8)).astype(np.float32) for _ in range(3))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(8)
        p = np.exp(s - s.max(-1, keepdims=True))
        want = (p / p.sum(-1, keepdims=True)) @ v
        np.testing.assert_allclose(c.flash_attention2(q, k, v), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="Compute.linear: this Compute was cleaned up"):
        c.linear(x, w, b)


def test_snncompute_state(device):
    rng = np.random.default_rng(3)
    snn = grilly.SNNCompute(n_neurons=50, dt=0.001, tau_mem=5.0, device=str(device))
    v, r = np.zeros(50), np.zeros(50)
    inputs = rng.uniform(0, 8, (12, 50)).astype(np.float32)
    for t in range(6):
        s = snn.process(inputs[t])
        v, r, ws = _np_lif(inputs[t].astype(np.float64), v, r, tau=5.0)
        np.testing.assert_array_equal(s, ws)
    state = snn.get_state()
    np.testing.assert_allclose(state["membrane"], v, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(state["refractory"], r, atol=1e-5)
    rest = [snn.process(inputs[t]) for t in range(6, 12)]
    snn.set_state(state)
    np.testing.assert_array_equal([snn.process(inputs[t]) for t in range(6, 12)], rest)
    snn.reset()
    assert not snn.get_state()["membrane"].any() and not snn.get_state()["refractory"].any()


def test_seed_api_errors():
    with pytest.raises(ValueError, match="SNNCompute: n_neurons must be an int >= 1"):
        grilly.SNNCompute(0)
    with pytest.raises(ValueError, match="SNNCompute.process: input must have shape"):
        grilly.SNNCompute(3).process(np.zeros(4))
    with pytest.raises(ValueError, match="SNNCompute.set_state: expected a dict"):
        grilly.SNNCompute(3).set_state({"membrane": np.zeros(3)})
    with pytest.raises(ValueError, match="Compute.lif_step: input .* must have one shape"):
        grilly.Compute().lif_step(np.zeros(3), np.zeros(4), np.zeros(3))
    with pytest.raises(ValueError, match="lif_step: dt and tau_mem must be > 0"):
        grilly.Compute().lif_step(np.zeros(3), np.zeros(3), np.zeros(3), dt=0.0)
    with pytest.raises(TypeError, match="Compute.linear: x must be a numeric array"):
        grilly.Compute().linear("abc", np.zeros((2, 2)))
    assert grilly.VulkanCompute is grilly.Compute


def test_quickstart_example_runs():
    env = dict(os.environ, PYTHONPATH=ROOT, GRILLY_DEVICE="cpu")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "snn_quickstart.py")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Spike count:" in out.stdout and "Timestep 9:" in out.stdout
    assert "Spikes in 100 ms for drive [0.0, 10.0, 20.0, 40.0]: [0.0, " in out.stdout
