"""snnTorch 1.0's newer neurons under their names, arguments and state_dict keys: the parallel
ones over a whole (T, B, N) sequence (``LeakyParallel`` on grilly's ``nn.RNN``, ``StateLeaky``
and ``LinearLeaky`` a causal depthwise conv1d of an exponential kernel, ``AssociativeLeaky`` a
decaying outer-product memory), ``DeltaLeaky`` (spikes on membrane changes) and the
``GradedSpikes`` layer. See docs/snn.md ("Porting") for what each computes and where they
differ from snnTorch's code."""
from __future__ import annotations

import math
import numbers
import warnings

from ...array import api as gp
from ...array.defaults import get_default_dtype
from ...array.array import Array
from .. import functional as NF
from .._random import uniform as _uniform
from ..layers import Linear
from ..module import Module, _no_grad
from ..parameter import Parameter
from ..conv_rnn_extra import RNN
from .base import KeptState
from .checks import _check_input
from .snntorch_compat import _register
from .surrogate import atan, check_surrogate, heaviside

__all__ = ["LeakyParallel", "StateLeaky", "LinearLeaky", "DeltaLeaky", "AssociativeLeaky",
           "GradedSpikes"]


def _flag(v, name: str, op: str) -> bool:
    if not isinstance(v, (bool, int)) or isinstance(v, float):
        raise TypeError(f"{op}: {name} must be a bool, got {type(v).__name__}")
    return bool(v)


def _count(v, name: str, op: str) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0:
        raise ValueError(f"{op}: {name} must be a positive int, got {v!r}")
    return int(v)


class _SnnTorchNeuron(KeptState, Module):
    """snnTorch's ``SpikingNeuron`` parts these share: ``threshold`` and
    ``graded_spikes_factor`` (a Parameter when learnable, else a buffer, of the default dtype
    as snnTorch stores them), ``reset_mechanism_val``, the spike function and ``fire``."""

    def _spiking(self, threshold, spike_grad, surrogate_disable, learn_threshold, state_quant,
                 graded_spikes_factor, learn_graded_spikes_factor, reset_val: bool = True,
                 device=None) -> None:
        op = type(self).__name__
        self.surrogate_disable = _flag(surrogate_disable, "surrogate_disable", op)
        if spike_grad is not None:   # a torch surrogate is a TypeError even when disabled
            spike_grad = check_surrogate(spike_grad, op)
        # snnTorch's _surrogate_bypass: the plain step, no gradient
        self.spike_grad = (heaviside if self.surrogate_disable else
                           spike_grad if spike_grad is not None else atan(2.0))
        if state_quant is None or state_quant is False:
            state_quant = False
        elif not callable(state_quant):
            raise TypeError(f"{op}: state_quant must be a function of the membrane (e.g. "
                            f"snn.functional.state_quant(num_bits=4)) or False, got "
                            f"{type(state_quant).__name__}")
        self.state_quant = state_quant
        self._dtype, self._device = get_default_dtype(), device
        self._tensor("threshold", threshold, _flag(learn_threshold, "learn_threshold", op))
        self._tensor("graded_spikes_factor", graded_spikes_factor,
                     _flag(learn_graded_spikes_factor, "learn_graded_spikes_factor", op))
        if reset_val:   # snnTorch's LIF classes store the reset (0: subtract)
            self.register_buffer("reset_mechanism_val",
                                 gp.asarray(0, dtype=gp.int64, device=device))

    def _tensor(self, name: str, value, learn: bool) -> Array:
        return _register(self, name, value, learn, self._dtype, self._device)

    def fire(self, mem: Array) -> Array:
        """snnTorch's ``fire``: state_quant (if any), the spike of mem - threshold, times
        graded_spikes_factor."""
        if self.state_quant:
            mem = self.state_quant(mem)
        return self.spike_grad(mem - self.threshold) * self.graded_spikes_factor


def _sequence(x, op: str, features: int | None = None, what: str = "features") -> Array:
    x = _check_input(x, op)
    if x.ndim != 3:
        raise ValueError(f"{op}: expected a (T, batch, {what}) input, got shape {x.shape}")
    if features is not None and x.shape[-1] != features:
        raise ValueError(f"{op}: input has {x.shape[-1]} {what}, expected {features}")
    return x


# ---- LeakyParallel ----------------------------------------------------------------------------
class LeakyParallel(_SnnTorchNeuron):
    """snnTorch's ``snn.LeakyParallel``: a whole (T, B, input_size) sequence (or (T,
    input_size)) through a one-layer ReLU ``nn.RNN``, mem[t] = relu(W_ih x[t] + b_ih + W_hh
    mem[t-1] + b_hh), W_hh diagonal with ``beta`` on it (``weight_hh_enable=True``: dense), then
    spk = spike(mem - threshold) * graded_spikes_factor; returns the spikes (T, B,
    hidden_size). state_dict keys as snnTorch's (``rnn.weight_ih_l0``, ..., ``threshold``,
    ``beta`` when given, ``graded_spikes_factor``)."""

    def __init__(self, input_size: int, hidden_size: int, beta=None, bias: bool = True,
                 threshold=1.0, dropout: float = 0.0, spike_grad=None,
                 surrogate_disable: bool = False, learn_beta: bool = False,
                 learn_threshold: bool = False, graded_spikes_factor=1.0,
                 learn_graded_spikes_factor: bool = False, weight_hh_enable: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__()
        op = "LeakyParallel"
        self.input_size = _count(input_size, "input_size", op)
        self.hidden_size = _count(hidden_size, "hidden_size", op)
        self.learn_beta = _flag(learn_beta, "learn_beta", op)
        dense = _flag(weight_hh_enable, "weight_hh_enable", op)
        self.rnn = RNN(input_size, hidden_size, num_layers=1, nonlinearity="relu",
                       bias=_flag(bias, "bias", op), batch_first=False, dropout=dropout,
                       device=device, dtype=dtype)
        self._spiking(threshold, spike_grad, surrogate_disable, learn_threshold, False,
                      graded_spikes_factor, learn_graded_spikes_factor, reset_val=False,
                      device=device)
        if beta is None:
            self.register_buffer("beta", None)
        else:
            b = gp.clip(gp.reshape(self._tensor("beta", beta, False), (-1,)), 0.0, 1.0)
            if b.shape[0] not in (1, self.hidden_size):
                raise ValueError(f"{op}: beta must be a single value or hidden_size "
                                 f"({self.hidden_size}) values, got shape {b.shape}")
            self.register_buffer("beta", b)
            w = self.rnn.weight_hh_l0
            with _no_grad():   # row i filled with beta[i] (beta: every entry)
                w[...] = gp.astype(gp.broadcast_to(gp.reshape(b, (-1, 1)), w.shape), w.dtype)
        if not dense:
            self.weight_hh_enable()
            if self.learn_beta:   # the off-diagonal stays zero while training
                self.rnn.weight_hh_l0.register_hook(self.grad_hook)
        if not self.learn_beta:
            self.rnn.weight_hh_l0.requires_grad_(False)

    def weight_hh_enable(self) -> None:
        """snnTorch's (misnamed) method: make the hidden-hidden matrix diagonal."""
        w = self.rnn.weight_hh_l0
        with _no_grad():
            w[...] = w * gp.eye(self.hidden_size, dtype=w.dtype, device=w.device)

    def grad_hook(self, grad: Array) -> Array:
        """The hidden-hidden gradient with its off-diagonal zeroed (a diagonal W_hh)."""
        return grad * gp.eye(self.hidden_size, dtype=grad.dtype, device=grad.device)

    def forward(self, input_: Array) -> Array:
        """The spikes of every step of ``input_`` (T, B, input_size) or (T, input_size)."""
        x = _check_input(input_, "LeakyParallel")
        mem = self.rnn(x)[0]
        return self.spike_grad(mem - self.threshold) * self.graded_spikes_factor

    def reset_state(self) -> None:
        """Nothing is kept between calls (every call starts from a zero membrane)."""


# ---- StateLeaky / LinearLeaky -----------------------------------------------------------------
class StateLeaky(_SnnTorchNeuron):
    """snnTorch's ``StateLeaky``: the membrane of a (T, B, channels) sequence as a causal
    depthwise convolution with exp(-k / tau), tau = 1 / (1 - beta), mem[t] = sum_k
    exp(-k/tau) x[t-k] over the last ``kernel_truncation_steps`` taps (all by default): a
    leaky integrator with no reset. Returns ``(spk, mem)`` (``output=True``, spk = spike(mem -
    threshold) * graded_spikes_factor) or ``mem``. ``learn_beta`` learns ``tau``; state_dict
    keys ``tau``, ``beta`` (as given), ``threshold``, ``graded_spikes_factor``,
    ``reset_mechanism_val``."""

    def __init__(self, beta, channels: int, threshold=1.0, spike_grad=None,
                 surrogate_disable: bool = False, learn_beta: bool = False,
                 learn_threshold: bool = False, state_quant=False, output: bool = True,
                 graded_spikes_factor=1.0, learn_graded_spikes_factor: bool = False,
                 kernel_truncation_steps: int | None = None, *, device=None) -> None:
        super().__init__()
        op = type(self).__name__
        self.output = _flag(output, "output", op)
        self._spiking(threshold, spike_grad, surrogate_disable, learn_threshold, state_quant,
                      graded_spikes_factor, learn_graded_spikes_factor, device=device)
        if not self.output and (spike_grad is not None or self.surrogate_disable
                                or learn_threshold or learn_graded_spikes_factor
                                or bool(gp.any(self.graded_spikes_factor != 1.0))):
            warnings.warn(f"{op}: spike-related settings are unused when output=False (no "
                          "spikes emitted).", UserWarning, stacklevel=2)
        self.channels = _count(channels, "channels", op)
        if kernel_truncation_steps is not None:
            kernel_truncation_steps = _count(kernel_truncation_steps,
                                             "kernel_truncation_steps", op)
        self.kernel_truncation_steps = kernel_truncation_steps
        learn = _flag(learn_beta, "learn_beta", op)
        # snnTorch also keeps beta as given (a Parameter when learnable, never read again)
        b = self._tensor("beta", beta, learn)
        if b.shape not in ((self.channels,), (), (1,)):
            raise ValueError(f"{op}: beta has shape {b.shape}; it must be a single value or "
                             f"({self.channels},)")
        tau = 1.0 / (1.0 - gp.asarray(b, copy=True) + 1e-12)
        if learn:
            self.register_parameter("tau", Parameter(tau.detach()))
        else:
            self.register_buffer("tau", tau.detach())
        self.spk = self.mem = None

    @property
    def beta(self) -> Array:
        """The decay per step the kernel uses, (tau - 1) / tau."""
        return (self.tau - 1.0) / self.tau

    def _state(self, x: Array) -> Array:
        # (T, B, C) -> (B, C, T), convolved with the flipped kernel (a causal convolution)
        op = type(self).__name__
        steps, _, c = x.shape
        tau = self.tau
        if tau.ndim == 1 and tau.shape[0] != 1 and tau.shape[0] != c:
            raise ValueError(f"{op}: input has {c} channels, but beta/tau has {tau.shape[0]}")
        k = steps if self.kernel_truncation_steps is None else min(
            self.kernel_truncation_steps, steps)
        t = gp.arange(k, dtype=tau.dtype, device=x.device)
        tau_c = gp.reshape(tau, (-1, 1, 1))
        kernel = gp.broadcast_to(gp.exp(-t / tau_c), (c, 1, k))
        xt = NF.pad(gp.permute_dims(x, (1, 2, 0)), (k - 1, 0))
        mem = NF.conv1d(xt, gp.flip(kernel, axis=-1), groups=c)
        return gp.permute_dims(mem, (2, 0, 1))

    def _emit(self, mem: Array):
        # (snnTorch 1.0's forward multiplies fire()'s graded spikes by graded_spikes_factor
        # again, g^2; here once, as its docstring says)
        if self.state_quant:
            mem = self.state_quant(mem)
        if not self.output:
            return mem
        self.spk = self.fire(mem)
        return self.spk, mem

    def forward(self, input_: Array):
        """``(spk, mem)`` of every step of ``input_`` (T, B, channels); ``mem`` when
        ``output=False``."""
        return self._emit(self._state(_sequence(input_, type(self).__name__, what="channels")))

    def reset_state(self) -> None:
        """Forget the last call's ``spk``/``mem`` (nothing carries over between calls)."""
        self.spk = self.mem = None


class LinearLeaky(StateLeaky):
    """snnTorch's ``LinearLeaky``: ``nn.Linear(in_features, out_features)`` at every step of a
    (T, B, in_features) sequence, then ``StateLeaky`` over ``out_features`` channels (state_dict
    adds ``linear.weight``, ``linear.bias``)."""

    def __init__(self, beta, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None, threshold=1.0, spike_grad=None,
                 surrogate_disable: bool = False, learn_beta: bool = False,
                 learn_threshold: bool = False, state_quant=False, output: bool = True,
                 graded_spikes_factor=1.0, learn_graded_spikes_factor: bool = False,
                 kernel_truncation_steps: int | None = None) -> None:
        super().__init__(beta, out_features, threshold, spike_grad, surrogate_disable,
                         learn_beta, learn_threshold, state_quant, output,
                         graded_spikes_factor, learn_graded_spikes_factor,
                         kernel_truncation_steps, device=device)
        self.linear = Linear(_count(in_features, "in_features", "LinearLeaky"), out_features,
                             bias=bias, device=device, dtype=dtype)

    def forward(self, input_: Array):
        """``(spk, mem)`` of every step of ``input_`` (T, B, in_features); ``mem`` when
        ``output=False`` (also kept as ``.mem``)."""
        x = _sequence(input_, "LinearLeaky", self.linear.in_features)
        self.mem = self._state(self.linear(x))
        out = self._emit(self.mem)
        if self.state_quant:   # snnTorch keeps the quantized membrane
            self.mem = out[1] if self.output else out
        return out


# ---- DeltaLeaky -------------------------------------------------------------------------------
class DeltaLeaky(_SnnTorchNeuron):
    """snnTorch's ``DeltaLeaky``: mem = beta mem + x with no reset, spiking where the change
    |mem[t] - mem[t-1]| exceeds ``delta_threshold``; ``spk, (mem, mem_prev) = lif(x, (mem,
    mem_prev))`` (the state required unless ``init_hidden=True``, (None, None) meaning zeros).
    Then snn.Leaky's arguments in its order, stored as its state_dict keys (``beta``,
    ``threshold``, ``graded_spikes_factor``, ``reset_mechanism_val``); as in snnTorch the step
    reads only beta, delta_threshold and the spike function."""

    def __init__(self, delta_threshold=1.0, beta=None, threshold=1.0, spike_grad=None,
                 surrogate_disable: bool = False, init_hidden: bool = False,
                 inhibition: bool = False, learn_beta: bool = False,
                 learn_threshold: bool = False, reset_mechanism: str = "subtract",
                 state_quant=False, output: bool = False, graded_spikes_factor=1.0,
                 learn_graded_spikes_factor: bool = False, reset_delay: bool = True) -> None:
        super().__init__()
        op = "DeltaLeaky"
        if beta is None:
            raise TypeError(f"{op}: missing the argument beta (after delta_threshold)")
        resets = {"subtract": 0, "zero": 1, "none": 2}
        if reset_mechanism not in resets:
            raise ValueError(f"{op}: reset_mechanism must be one of {tuple(resets)}, got "
                             f"{reset_mechanism!r}")
        if isinstance(delta_threshold, bool) or not isinstance(delta_threshold, numbers.Real):
            raise TypeError(f"{op}: delta_threshold must be a float, got "
                            f"{type(delta_threshold).__name__}")
        self.delta_threshold = float(delta_threshold)
        self._spiking(threshold, spike_grad, surrogate_disable, learn_threshold, state_quant,
                      graded_spikes_factor, learn_graded_spikes_factor)
        self.reset_mechanism_val = gp.asarray(resets[reset_mechanism], dtype=gp.int64)
        self._tensor("beta", beta, _flag(learn_beta, "learn_beta", op))
        self.init_hidden = _flag(init_hidden, "init_hidden", op)
        self.inhibition = _flag(inhibition, "inhibition", op)
        self.output = _flag(output, "output", op)
        self.reset_delay = _flag(reset_delay, "reset_delay", op)
        self.reset_mechanism = reset_mechanism
        self.mem = self.mem_prev = None

    def forward(self, input_: Array, mem=None):
        """One step: ``(spk, (mem, mem_prev))``."""
        op = "DeltaLeaky"
        x = _check_input(input_, op)
        if self.init_hidden:
            if mem is not None:
                raise TypeError(f"{op}: init_hidden=True keeps the state in the layer; call it "
                                "with the input only")
            if self.mem is not None and self.mem.shape != x.shape:
                raise ValueError(f"{op}: input shape {x.shape} does not match the kept state "
                                 f"{self.mem.shape}; call reset_mem() before a new sequence")
            m = self.mem
        else:
            if mem is None:
                raise TypeError(f"{op}: the state (mem, mem_prev) must be given when "
                                "init_hidden=False (reset_mem() gives (None, None))")
            if not isinstance(mem, (tuple, list)) or len(mem) != 2:
                raise TypeError(f"{op}: the state must be a pair (mem, mem_prev), got "
                                f"{type(mem).__name__}")
            m = mem[0] if mem[0] is None else _check_input(mem[0], op, "mem")
        if m is None:
            m = gp.zeros_like(x)
        new = self.beta * m + x
        # the change of the membrane, not its level, makes the spike (no reset)
        spk = self.spike_grad(gp.abs(new - m) - self.delta_threshold)
        self.mem, self.mem_prev = new, m
        return spk, (new, m)

    def reset_mem(self):
        """A new sequence: ``(None, None)`` (zeros when passed back as the state)."""
        self.mem = self.mem_prev = None
        return self.mem, self.mem_prev

    init_leaky = reset_mem

    def reset_state(self) -> None:
        """A new sequence (``snn.reset(net)``)."""
        self.reset_mem()

    def detach_hidden(self) -> None:
        """Keep the state's values, cut the graph (truncated BPTT)."""
        if self.mem is not None:
            self.mem, self.mem_prev = self.mem.detach(), self.mem_prev.detach()

    detach_state = detach_hidden


# ---- AssociativeLeaky -------------------------------------------------------------------------
class AssociativeLeaky(_SnnTorchNeuron):
    """snnTorch's ``AssociativeLeaky``: a (d_value x d_key) memory S per sample written by
    outer products of v = to_v(x) and k = to_k(x) and decayed per key column by alpha =
    sigmoid(to_alpha(x)), S[t] = alpha[t] S[t-1] + v[t] k[t]^T (computed over the whole
    sequence with cumulative sums, as snnTorch), spiking where S > threshold; returns the
    spikes flattened (T, B, d_value d_key), or with ``use_q_projection`` S_spk @ q, q =
    to_q(x) viewed (d_key, d_value): (T, B, d_value^2)."""

    eps = 1e-8

    def __init__(self, in_dim: int, d_value: int, d_key: int, num_spiking_neurons,
                 use_q_projection: bool = True) -> None:
        super().__init__()
        op = "AssociativeLeaky"
        for name, v in (("in_dim", in_dim), ("d_value", d_value), ("d_key", d_key)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise TypeError(f"{op}: {name} must be an int, got {type(v).__name__}")
        if in_dim <= 0:
            raise ValueError(f"{op}: in_dim must be a positive integer, got {in_dim}")
        if d_value <= 0 or d_key <= 0:
            raise ValueError(f"{op}: d_value and d_key must be positive integers, got "
                             f"{d_value}, {d_key}")
        if num_spiking_neurons is not None and num_spiking_neurons != d_value * d_key:
            raise ValueError(f"{op}: num_spiking_neurons={num_spiking_neurons} must equal "
                             f"d_value * d_key={d_value * d_key}")
        self._spiking(1.0, None, False, False, False, 1.0, False)
        self.output = True
        self.d_value, self.d_key = int(d_value), int(d_key)
        # snnTorch keeps the argument as given (None stays None)
        self.num_spiking_neurons = num_spiking_neurons
        self.use_q_projection = _flag(use_q_projection, "use_q_projection", op)
        self.to_v = Linear(in_dim, d_value)
        self.to_k = Linear(in_dim, d_key)
        self.to_alpha = Linear(in_dim, d_key)
        self.to_q = Linear(in_dim, d_value * d_key) if self.use_q_projection else None

    @classmethod
    def from_num_spiking_neurons(cls, in_dim: int, num_spiking_neurons: int,
                                 use_q_projection: bool = True) -> "AssociativeLeaky":
        """d_value = d_key = sqrt(num_spiking_neurons) (a perfect square)."""
        if isinstance(num_spiking_neurons, bool) or not isinstance(num_spiking_neurons,
                                                                    numbers.Integral):
            raise TypeError(f"AssociativeLeaky: num_spiking_neurons must be an int, got "
                            f"{type(num_spiking_neurons).__name__}")
        if num_spiking_neurons <= 0:
            raise ValueError("AssociativeLeaky: num_spiking_neurons must be positive")
        m = math.isqrt(num_spiking_neurons)
        if m * m != num_spiking_neurons:
            raise ValueError(f"AssociativeLeaky: num_spiking_neurons={num_spiking_neurons} must "
                             "be a perfect square to set d_value = d_key = sqrt(N)")
        return cls(in_dim, m, m, num_spiking_neurons, use_q_projection)

    def forward(self, x: Array) -> Array:
        """The readout of every step of ``x`` (T, B, in_dim)."""
        x = _sequence(x, "AssociativeLeaky", self.to_v.in_features)
        steps, batch, _ = x.shape
        d, n = self.d_value, self.d_key
        v, k = self.to_v(x), self.to_k(x)
        alpha = NF.sigmoid(self.to_alpha(x))
        outer = gp.expand_dims(v, axis=-1) * gp.expand_dims(k, axis=-2)      # (T, B, d, n)
        # the decay products alpha[1..t] per key: S[t] = P[t] sum_{r<=t} write[r] / P[r]
        prefix = gp.exp(gp.cumsum(gp.log(gp.maximum(alpha, self.eps)), axis=0))
        pre = gp.expand_dims(prefix, axis=2)
        s = gp.cumsum(outer * (1.0 / (pre + 1e-8)), axis=0) * pre
        mem = gp.reshape(s, (steps, batch, d * n))
        if self.state_quant:
            mem = self.state_quant(mem)
        spk = self.fire(mem) if self.output else mem
        if not self.use_q_projection:
            return spk
        q = gp.reshape(self.to_q(x), (steps, batch, n, d))
        y = gp.matmul(gp.reshape(spk, (steps, batch, d, n)), q)
        return gp.reshape(y, (steps, batch, d * d))

    def reset_state(self) -> None:
        """Nothing is kept between calls."""


# ---- GradedSpikes -----------------------------------------------------------------------------
class GradedSpikes(Module):
    """snnTorch's ``GradedSpikes``: learnable spike magnitudes, x * weights with ``weights``
    (size, 1) = constant_factor, or U(0.5, 1.5) from gp.random when constant_factor is 0 or
    None (broadcast as torch.multiply does)."""

    def __init__(self, size: int, constant_factor) -> None:
        super().__init__()
        self.size = _count(size, "size", "GradedSpikes")
        if constant_factor is not None and (isinstance(constant_factor, bool) or not
                                            isinstance(constant_factor, numbers.Real)):
            raise TypeError(f"GradedSpikes: constant_factor must be a float or None, got "
                            f"{type(constant_factor).__name__}")
        if constant_factor:
            w = gp.full((self.size, 1), float(constant_factor), dtype=get_default_dtype())
        else:
            w = _uniform((self.size, 1), 0.5, 1.5, dtype=get_default_dtype(), op="GradedSpikes")
        self.weights = Parameter(w)

    def forward(self, x: Array) -> Array:
        """Spikes times their magnitudes."""
        return _check_input(x, "GradedSpikes") * self.weights
