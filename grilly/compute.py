"""The seed API: ``grilly.Compute()`` (alias ``VulkanCompute``) and ``grilly.SNNCompute``, a thin
numpy-in/numpy-out layer over the namespace for code written against the original grilly. Each
call copies its numpy inputs (as float32, as the original did) to the Compute's device (the
default device, or ``Compute(device=...)``), runs namespace ops there and returns numpy arrays.

Units follow the seed's documentation: ``dt`` in seconds, ``tau_mem``, ``t_refrac`` and the
STDP time constants in milliseconds. The LIF step is the seed's Euler step with a refractory
period (see docs/snn.md, "The seed API"):
    V' = V + (dt_ms / tau_mem) (-(V - v_rest) + r_mem I)       (outside the refractory period)
    spike = V' >= v_thresh;  a spiking or refractory neuron is held at v_reset;
    refractory = t_refrac after a spike, then counts down by dt_ms to 0.
"""
from __future__ import annotations

import numpy as np

from . import backends as _backends
from .array import api as gp

from .array.array import Array
from .nn import functional as F
from .nn.snn import plasticity as _plasticity

__all__ = ["Compute", "VulkanCompute", "SNNCompute"]


def _lif(i, v, r, dt, tau_mem, v_thresh, v_rest, v_reset, r_mem, t_refrac):
    """The seed's LIF step on device arrays: (membrane, refractory, spikes)."""
    dt_ms = 1000.0 * dt
    in_ref = r > 0
    v_new = v + (dt_ms / tau_mem) * (r_mem * i - (v - v_rest))
    spike = gp.logical_and(gp.logical_not(in_ref), v_new >= v_thresh)
    v_out = gp.where(gp.logical_or(in_ref, spike), v_reset, v_new)
    r_out = gp.where(spike, float(t_refrac), gp.where(in_ref, gp.maximum(r - dt_ms, 0.0), r))
    return v_out, r_out, gp.astype(spike, v.dtype)


def _check_lif_params(op: str, dt: float, tau_mem: float, t_refrac: float) -> None:
    if not (dt > 0 and tau_mem > 0):
        raise ValueError(f"{op}: dt and tau_mem must be > 0, got dt={dt}, tau_mem={tau_mem}")
    if t_refrac < 0:
        raise ValueError(f"{op}: t_refrac must be >= 0 (ms), got {t_refrac}")


class Compute:
    """The seed's compute backend object: numpy in, numpy out, on one device."""

    def __init__(self, device=None) -> None:
        reg = _backends.registry
        self.device = reg.default_device() if device is None else reg.device(device)
        self._closed = False

    # ---- plumbing --------------------------------------------------------------------------
    def _in(self, a, op: str, name: str) -> Array:
        if self._closed:
            raise RuntimeError(f"Compute.{op}: this Compute was cleaned up; create a new one")
        if isinstance(a, gp.Array):
            a = np.asarray(a.to_device("cpu"))
        try:
            arr = np.asarray(a, dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise TypeError(f"Compute.{op}: {name} must be a numeric array, got "
                            f"{type(a).__name__}") from e
        return gp.asarray(arr, device=self.device)

    @staticmethod
    def _out(x: Array) -> np.ndarray:
        return np.asarray(x.to_device("cpu"))

    def cleanup(self) -> None:
        """Finish the device's queued work and close this object (later calls raise)."""
        if not self._closed:
            self.device.synchronize()
            self._closed = True

    def __enter__(self) -> "Compute":
        return self

    def __exit__(self, *exc) -> None:
        self.cleanup()

    def __repr__(self) -> str:
        return f"Compute(device={str(self.device)!r}{', closed' if self._closed else ''})"

    # ---- SNN -------------------------------------------------------------------------------
    def lif_step(self, input, membrane, refractory, dt: float = 0.001, tau_mem: float = 20.0,
                 v_thresh: float = 1.0, *, v_rest: float = 0.0, v_reset: float = 0.0,
                 r_mem: float = 1.0, t_refrac: float = 2.0) -> tuple:
        """One LIF step for every neuron: (membrane, refractory, spikes) as numpy float32."""
        op = "lif_step"
        _check_lif_params(op, dt, tau_mem, t_refrac)
        i = self._in(input, op, "input")
        v = self._in(membrane, op, "membrane")
        r = self._in(refractory, op, "refractory")
        if not i.shape == v.shape == r.shape:
            raise ValueError(f"Compute.lif_step: input {i.shape}, membrane {v.shape} and "
                             f"refractory {r.shape} must have one shape")
        v, r, s = _lif(i, v, r, dt, tau_mem, v_thresh, v_rest, v_reset, r_mem, t_refrac)
        return self._out(v), self._out(r), self._out(s)

    def hebbian_learning(self, weights, pre_activity, post_activity, learning_rate: float = 0.01,
                         weight_decay: float = 0.0) -> np.ndarray:
        """Plain Hebbian step W + lr <post (x) pre> - weight_decay W (batch/time averaged)."""
        op = "hebbian_learning"
        w = self._in(weights, op, "weights")
        pre = _flat(self._in(pre_activity, op, "pre_activity"))
        post = _flat(self._in(post_activity, op, "post_activity"))
        return self._out(_plasticity.hebbian(w, pre, post, lr=learning_rate,
                                             weight_decay=weight_decay))

    def stdp_learning(self, weights, pre_spikes, post_spikes, dt: float = 0.001,
                      A_plus: float = 0.01, A_minus: float = 0.012, *, tau_plus: float = 20.0,
                      tau_minus: float = 20.0, w_min: float = 0.0, w_max: float = 1.0,
                      bounds: str | None = "hard") -> np.ndarray:
        """Pair-based STDP over spike trains (T, n) or (T, batch, n), traces starting at 0;
        a 1-D pair is one step. Returns the new weights."""
        op = "stdp_learning"
        w = self._in(weights, op, "weights")
        pre = self._in(pre_spikes, op, "pre_spikes")
        post = self._in(post_spikes, op, "post_spikes")
        if pre.ndim == 1:
            pre, post = gp.expand_dims(pre, axis=0), gp.expand_dims(post, axis=0)
        if pre.ndim not in (2, 3) or pre.shape[0] != post.shape[0]:
            raise ValueError(f"Compute.stdp_learning: spikes must be (n,), (T, n) or "
                             f"(T, batch, n) with one T, got {pre.shape} and {post.shape}")
        xp = xq = None
        for t in range(pre.shape[0]):
            w, xp, xq = _plasticity.stdp(w, pre[t], post[t], xp, xq, a_plus=A_plus,
                                         a_minus=A_minus, tau_plus=tau_plus, tau_minus=tau_minus,
                                         dt=1000.0 * dt, w_min=w_min, w_max=w_max, bounds=bounds)
        return self._out(w)

    # ---- dense ops --------------------------------------------------------------------------
    def linear(self, x, weight, bias=None) -> np.ndarray:
        """x @ weight.T + bias (weight is (out_features, in_features))."""
        op = "linear"
        b = None if bias is None else self._in(bias, op, "bias")
        return self._out(F.linear(self._in(x, op, "x"), self._in(weight, op, "weight"), b))

    def activation_relu(self, x) -> np.ndarray:
        """max(x, 0)."""
        return self._out(F.relu(self._in(x, "activation_relu", "x")))

    def layernorm(self, x, weight=None, bias=None, eps: float = 1e-5) -> np.ndarray:
        """Layer normalization over the last axis, then weight * . + bias."""
        op = "layernorm"
        xi = self._in(x, op, "x")
        w = None if weight is None else self._in(weight, op, "weight")
        b = None if bias is None else self._in(bias, op, "bias")
        return self._out(F.layer_norm(xi, xi.shape[-1], w, b, eps))

    def flash_attention2(self, query, key, value, *, is_causal: bool = False,
                         scale: float | None = None) -> np.ndarray:
        """softmax(q k^T * scale) v by FlashAttention-2 blocks ((..., L, d) arrays)."""
        op = "flash_attention2"
        return self._out(F.flash_attention2(self._in(query, op, "query"), self._in(key, op, "key"),
                                            self._in(value, op, "value"), is_causal=is_causal,
                                            scale=scale))


VulkanCompute = Compute


def _flat(x: Array) -> Array:
    """(n,) stays; (batch, ..., n) becomes (batch * ..., n) so the rule averages over it all."""
    return x if x.ndim <= 2 else gp.reshape(x, (-1, x.shape[-1]))


class SNNCompute:
    """A population of ``n_neurons`` seed LIF neurons with state kept on the device."""

    def __init__(self, n_neurons: int, dt: float = 0.001, tau_mem: float = 20.0,
                 v_thresh: float = 1.0, *, v_rest: float = 0.0, v_reset: float = 0.0,
                 r_mem: float = 1.0, t_refrac: float = 2.0, device=None) -> None:
        if isinstance(n_neurons, bool) or not isinstance(n_neurons, int) or n_neurons < 1:
            raise ValueError(f"SNNCompute: n_neurons must be an int >= 1, got {n_neurons!r}")
        _check_lif_params("SNNCompute", dt, tau_mem, t_refrac)
        self.n_neurons = n_neurons
        self.params = dict(dt=dt, tau_mem=tau_mem, v_thresh=v_thresh, v_rest=v_rest,
                           v_reset=v_reset, r_mem=r_mem, t_refrac=t_refrac)
        self._compute = Compute(device)
        self.device = self._compute.device
        self.reset()

    def reset(self) -> None:
        """Membrane at v_rest, no neuron refractory."""
        shape = (self.n_neurons,)
        self.membrane = gp.full(shape, float(self.params["v_rest"]), dtype=gp.float32,
                                device=self.device)
        self.refractory = gp.zeros(shape, dtype=gp.float32, device=self.device)

    def process(self, input) -> np.ndarray:
        """One time step with input current (n_neurons,): the spikes (float32 0/1)."""
        i = self._compute._in(input, "process", "input")
        if i.shape != (self.n_neurons,):
            raise ValueError(f"SNNCompute.process: input must have shape ({self.n_neurons},), "
                             f"got {i.shape}")
        p = self.params
        self.membrane, self.refractory, s = _lif(
            i, self.membrane, self.refractory, p["dt"], p["tau_mem"], p["v_thresh"], p["v_rest"],
            p["v_reset"], p["r_mem"], p["t_refrac"])
        return Compute._out(s)

    def get_state(self) -> dict:
        """{'membrane': ..., 'refractory': ...} as numpy float32 copies."""
        return {"membrane": Compute._out(self.membrane),
                "refractory": Compute._out(self.refractory)}

    def set_state(self, state: dict) -> None:
        """Restore a state from ``get_state``."""
        if not isinstance(state, dict) or set(state) != {"membrane", "refractory"}:
            raise ValueError("SNNCompute.set_state: expected a dict with exactly 'membrane' and "
                             f"'refractory', got {sorted(state) if isinstance(state, dict) else state!r}")
        new = {k: self._compute._in(v, "set_state", k) for k, v in state.items()}
        for k, v in new.items():
            if v.shape != (self.n_neurons,):
                raise ValueError(f"SNNCompute.set_state: {k} must have shape ({self.n_neurons},), "
                                 f"got {v.shape}")
        self.membrane, self.refractory = new["membrane"], new["refractory"]

    def cleanup(self) -> None:
        """Finish queued work and close the underlying Compute."""
        self._compute.cleanup()

    def __enter__(self) -> "SNNCompute":
        return self

    def __exit__(self, *exc) -> None:
        self.cleanup()
