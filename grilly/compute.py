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

import numbers
import operator

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


def _real(op: str, name: str, v) -> float:
    """``v`` as a Python float, or a TypeError naming ``op`` and the argument: the seed's
    scalar parameters (a 0-d or one-element numpy array counts as a number)."""
    if isinstance(v, np.ndarray) and v.size == 1 and v.dtype.kind in "iuf":
        v = v.reshape(()).item()
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}: {name} must be a real number, got {type(v).__name__}"
                        + (f" of shape {v.shape}" if isinstance(v, np.ndarray) else ""))
    return float(v)


def _lif_params(op: str, p: dict) -> dict:
    """The seed LIF's scalar parameters checked (TypeError/ValueError naming ``op``)."""
    p = {k: _real(op, k, v) for k, v in p.items()}
    _check_lif_params(op, p["dt"], p["tau_mem"], p["t_refrac"])
    return p


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
    def _check_open(self, op: str, owner: str | None = None) -> None:
        if self._closed:
            who = owner or type(self).__name__
            raise RuntimeError(f"{who}.{op}: this {who} was cleaned up; create a new one")

    def _in(self, a, op: str, name: str, owner: str | None = None) -> Array:
        """``a`` (numpy array, list, scalar, torch tensor or grilly Array) as a float32 Array
        on this object's device: always a copy, so the caller's array is never aliased."""
        self._check_open(op, owner)
        where = f"{owner or type(self).__name__}.{op}"
        if isinstance(a, gp.Array):
            a = np.asarray(a.to_device("cpu"))
        elif type(a).__module__.split(".")[0] == "torch":
            a = a.detach().cpu().numpy()
        if a is None:
            raise TypeError(f"{where}: {name} must be a numeric array, got None")
        try:
            arr = np.asarray(a)
            if arr.dtype.kind == "c":
                raise TypeError(f"{where}: {name} must be a numeric array of real values, got "
                                f"dtype {arr.dtype}")
            if arr.dtype.kind not in "biuf":
                raise TypeError(f"{where}: {name} must be a numeric array, got "
                                f"{type(a).__name__}")
            arr = arr.astype(np.float32)
        except ValueError as e:   # ragged lists
            raise ValueError(f"{where}: {name} must be a rectangular numeric array: {e}") from e
        return gp.asarray(arr, device=self.device)

    @staticmethod
    def _out(x: Array) -> np.ndarray:
        """A numpy copy of ``x`` that shares no memory with the device (on the cpu device a
        plain ``asarray`` would be a view of grilly's buffer)."""
        return np.array(x.to_device("cpu"), copy=True)

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
        closed = ", closed" if self._closed else ""
        return f"{type(self).__name__}(device={str(self.device)!r}{closed})"

    # ---- SNN -------------------------------------------------------------------------------
    def lif_step(self, input, membrane, refractory, dt: float = 0.001, tau_mem: float = 20.0,
                 v_thresh: float = 1.0, *, v_rest: float = 0.0, v_reset: float = 0.0,
                 r_mem: float = 1.0, t_refrac: float = 2.0) -> tuple:
        """One LIF step for every neuron: (membrane, refractory, spikes) as numpy float32."""
        op = "lif_step"
        p = _lif_params(f"{type(self).__name__}.{op}", dict(
            dt=dt, tau_mem=tau_mem, v_thresh=v_thresh, v_rest=v_rest, v_reset=v_reset,
            r_mem=r_mem, t_refrac=t_refrac))
        i = self._in(input, op, "input")
        v = self._in(membrane, op, "membrane")
        r = self._in(refractory, op, "refractory")
        if not i.shape == v.shape == r.shape:
            raise ValueError(f"Compute.lif_step: input {i.shape}, membrane {v.shape} and "
                             f"refractory {r.shape} must have one shape")
        v, r, s = _lif(i, v, r, **p)
        return self._out(v), self._out(r), self._out(s)

    def hebbian_learning(self, weights, pre_activity, post_activity, learning_rate: float = 0.01,
                         weight_decay: float = 0.0) -> np.ndarray:
        """Plain Hebbian step W + lr <post (x) pre> - weight_decay W (batch/time averaged)."""
        op = "hebbian_learning"
        where = f"{type(self).__name__}.{op}"
        learning_rate = _real(where, "learning_rate", learning_rate)
        weight_decay = _real(where, "weight_decay", weight_decay)
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
        where = f"{type(self).__name__}.{op}"
        dt, A_plus, A_minus, tau_plus, tau_minus, w_min, w_max = (
            _real(where, n, v) for n, v in (("dt", dt), ("A_plus", A_plus), ("A_minus", A_minus),
                                            ("tau_plus", tau_plus), ("tau_minus", tau_minus),
                                            ("w_min", w_min), ("w_max", w_max)))
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
        eps = _real(f"{type(self).__name__}.{op}", "eps", eps)
        xi = self._in(x, op, "x")
        if xi.ndim == 0:
            raise ValueError(f"{type(self).__name__}.layernorm: x needs at least 1 dimension "
                             "(it is normalized over its last axis), got a 0-D array")
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
        try:
            if isinstance(n_neurons, bool):
                raise TypeError
            n = operator.index(n_neurons)   # int, numpy integer
        except TypeError:
            raise TypeError(f"SNNCompute: n_neurons must be an int >= 1, got "
                            f"{type(n_neurons).__name__} {n_neurons!r}") from None
        if n < 1:
            raise ValueError(f"SNNCompute: n_neurons must be an int >= 1, got {n}")
        self.n_neurons = n
        self.params = _lif_params("SNNCompute", dict(
            dt=dt, tau_mem=tau_mem, v_thresh=v_thresh, v_rest=v_rest, v_reset=v_reset,
            r_mem=r_mem, t_refrac=t_refrac))
        self._compute = Compute(device)
        self.device = self._compute.device
        self.reset()

    def reset(self) -> None:
        """Membrane at v_rest, no neuron refractory."""
        self._compute._check_open("reset", "SNNCompute")
        shape = (self.n_neurons,)
        self.membrane = gp.full(shape, float(self.params["v_rest"]), dtype=gp.float32,
                                device=self.device)
        self.refractory = gp.zeros(shape, dtype=gp.float32, device=self.device)

    def process(self, input) -> np.ndarray:
        """One time step with input current (n_neurons,): the spikes (float32 0/1)."""
        i = self._compute._in(input, "process", "input", "SNNCompute")
        if i.shape != (self.n_neurons,):
            raise ValueError(f"SNNCompute.process: input must have shape ({self.n_neurons},), "
                             f"got {i.shape}")
        self.membrane, self.refractory, s = _lif(i, self.membrane, self.refractory,
                                                 **self.params)
        return Compute._out(s)

    def get_state(self) -> dict:
        """{'membrane': ..., 'refractory': ...} as numpy float32 copies."""
        self._compute._check_open("get_state", "SNNCompute")
        return {"membrane": Compute._out(self.membrane),
                "refractory": Compute._out(self.refractory)}

    def set_state(self, state: dict) -> None:
        """Restore a state from ``get_state``."""
        if not isinstance(state, dict):
            raise TypeError("SNNCompute.set_state: expected a dict with exactly 'membrane' and "
                            f"'refractory' (from get_state), got {type(state).__name__}")
        if set(state) != {"membrane", "refractory"}:
            raise ValueError("SNNCompute.set_state: expected a dict with exactly 'membrane' and "
                             f"'refractory', got {sorted(map(str, state))}")
        new = {k: self._compute._in(v, "set_state", k, "SNNCompute") for k, v in state.items()}
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
