"""snnTorch's neurons under their names and calling conventions (``snn.Leaky``, ``snn.Alpha``,
``snn.Lapicque``, ``snn.RSynaptic``, and here ``Synaptic`` and ``RLeaky``, snnTorch's exactly),
built on grilly's LIF/Synaptic/RLeaky: snnTorch's step per step (``_Neuron._snntorch_step``,
with its inhibition, state_quant, graded_spikes_factor, surrogate_disable) and the fused
kernels where the equations agree.

What they share with snnTorch beyond grilly's LIF (docs/snn.md, "Porting"): the constructor's
positional order, the state_dict keys (``beta``, ``threshold``, ``graded_spikes_factor``,
``reset_mechanism_val``, ``alpha``, ``V``, ``R``, ``C``, ``time_step``; fixed values stored as
buffers), an input of a new shape silently starting from zeros, the state readable as
``lif.mem`` (``syn``, ``syn_exc``, ...) and ``reset_delay=False`` computed as snnTorch 1.0 does
(the delayed reset first, then the spike's reset less it). ``init_leaky()`` and the other
``init_*``/``reset_mem`` return None (zeros when passed back as the state)."""
from __future__ import annotations

import math
import numbers

from ...array import api as gp

from ..parameter import Parameter
from . import neurons as _own
from .neurons import LIF, _check_decay, _Neuron, _param_value, _port_kw

# Synaptic and RLeaky are not exported into grilly.nn.snn, whose Synaptic/RLeaky are grilly's
# own (grilly's state_dict keys, its in-step reset_delay=False); import them from here
__all__ = ["Leaky", "Alpha", "Lapicque", "RSynaptic"]

_RESET_VAL = {"subtract": 0, "zero": 1, "none": 2}


def _register(module, name: str, value, learn: bool, dtype, device=None):
    """snnTorch's storage of a neuron parameter: under its own name, a Parameter when
    learnable, else a buffer (a copy of ``value`` in ``dtype``, on ``device`` if given)."""
    op = type(module).__name__
    value = _param_value(value, name, op)
    if isinstance(value, float) and value != value:
        raise ValueError(f"{op}: {name} must not be NaN")
    arr = gp.asarray(value, dtype=dtype, copy=True)
    if device is not None:
        arr = arr.to_device(device)
    if learn:
        module.register_parameter(name, Parameter(arr))
    else:
        module.register_buffer(name, arr)
    return arr


class _SnnTorchConventions:
    """Mixin over a grilly neuron: snnTorch's state_dict keys, state attributes, its step
    (``_Neuron._snntorch_step``) and its reset of the state when the input's shape changes."""

    _snntorch = True

    def _set_param(self, name: str, value, learn: bool) -> None:
        _register(self, name, value, learn, self._dtype)

    def _snntorch_buffers(self, reset: str) -> None:
        # (graded_spikes_factor is registered by _Neuron, a buffer or a Parameter)
        self.register_buffer("reset_mechanism_val", gp.asarray(_RESET_VAL[reset], dtype=gp.int64))

    def __getattr__(self, name: str):
        d = self.__dict__
        # grilly's neurons read their parameters as _beta, _threshold, ...
        if name.startswith("_") and not name.startswith("__"):
            for k in ("_parameters", "_buffers"):
                if k in d and name[1:] in d[k]:
                    return d[k][name[1:]]
        return super().__getattr__(name)   # the state by name (_Neuron), then Module's

    def reset_mem(self):
        """snnTorch's ``reset_mem()``: a new sequence; None per state (zeros when passed back)."""
        return self._init_none()

    def _current_state(self, x, given):
        # snnTorch: a kept or given state of another shape than the input restarts from zeros
        if self.state is not None and self.state[0].shape != x.shape:
            self.state = None
        given = tuple(gp.zeros_like(x) if isinstance(s, gp.Array) and s.shape != x.shape else s
                      for s in given)
        return super()._current_state(x, given)


def _snntorch_kw(spike_grad, surrogate_disable, inhibition, reset_mechanism, state_quant,
                 output, **extra) -> dict:
    return dict(spike_grad=spike_grad, surrogate_disable=surrogate_disable,
                inhibition=inhibition, reset_mechanism=reset_mechanism, state_quant=state_quant,
                output=output, **extra)


class Leaky(_SnnTorchConventions, LIF):
    """snnTorch's ``snn.Leaky``: LIF (mem = beta mem + x - reset thr) with snnTorch's argument
    order, state_dict keys and conventions; ``spk, mem = lif(x, mem)``, or with
    ``init_hidden=True`` ``spk = lif(x)`` (``(spk, mem)`` with ``output=True``). grilly keywords
    (``step_mode``, ``dtype``, ``fused``, ``recompute``) may follow."""

    def __init__(self, beta, threshold=1.0, spike_grad=None, surrogate_disable: bool = False,
                 init_hidden: bool = False, inhibition: bool = False, learn_beta: bool = False,
                 learn_threshold: bool = False, reset_mechanism: str = "subtract",
                 state_quant=False, output: bool = False, graded_spikes_factor=1.0,
                 learn_graded_spikes_factor: bool = False, reset_delay: bool = True,
                 **grilly_kw) -> None:
        kw = _snntorch_kw(spike_grad, surrogate_disable, inhibition, reset_mechanism,
                          state_quant, output, graded_spikes_factor=graded_spikes_factor,
                          learn_graded_spikes_factor=learn_graded_spikes_factor)
        super().__init__(beta, threshold, init_hidden=init_hidden, learn_beta=learn_beta,
                         learn_threshold=learn_threshold, reset_delay=reset_delay,
                         detach_reset=True, **grilly_kw, **kw)
        self._snntorch_buffers(reset_mechanism)

    def _fused_multi_step(self, x_seq, st, p, return_mem):
        if not self.reset_delay:   # snnTorch's own reset_delay=False: per step
            return None
        return super()._fused_multi_step(x_seq, st, p, return_mem)


class Synaptic(_SnnTorchConventions, _own.Synaptic):
    """snnTorch's ``snn.Synaptic`` exactly: syn = alpha syn + x, mem = beta mem + syn - reset
    thr (zero: the new membrane zeroed), snnTorch's argument order, state_dict keys (``alpha``,
    ``beta``, ``threshold``, ``graded_spikes_factor``, ``reset_mechanism_val``) and options;
    ``reset_delay=False`` as snnTorch 1.0 computes it (the delayed reset, then the spike's reset
    less it). ``grilly.nn.snn.Synaptic`` is grilly's own (its keys, its in-step reset)."""

    def __init__(self, alpha, beta, threshold=1.0, spike_grad=None,
                 surrogate_disable: bool = False, init_hidden: bool = False,
                 inhibition: bool = False, learn_alpha: bool = False, learn_beta: bool = False,
                 learn_threshold: bool = False, reset_mechanism: str = "subtract",
                 state_quant=False, output: bool = False, reset_delay: bool = True,
                 **grilly_kw) -> None:
        kw = _snntorch_kw(spike_grad, surrogate_disable, inhibition, reset_mechanism,
                          state_quant, output)
        super().__init__(alpha, beta, threshold, init_hidden=init_hidden,
                         learn_alpha=learn_alpha, learn_beta=learn_beta,
                         learn_threshold=learn_threshold, reset_delay=reset_delay,
                         detach_reset=True, **grilly_kw, **kw)
        self._snntorch_buffers(reset_mechanism)

    def reset_mem(self):
        """snnTorch's ``syn, mem = lif.reset_mem()``: a new sequence; (None, None)."""
        return self._init_none()

    def _fused_multi_step(self, x_seq, st, p, return_mem):
        if not self.reset_delay:   # snnTorch's reset_delay=False: per step
            return None
        return super()._fused_multi_step(x_seq, st, p, return_mem)


class RLeaky(_SnnTorchConventions, _own.RLeaky):
    """snnTorch's ``snn.RLeaky`` exactly: mem = beta mem + x + V(spk_prev) - reset thr (zero:
    the new membrane zeroed), V a Linear(n, n) (``all_to_all=True``, ``linear_features=n``), a
    Conv2d(C, C, k) (``conv2d_channels=C``, ``kernel_size=k``) or one-to-one weights ``V``
    (``all_to_all=False``); snnTorch's argument order, state_dict keys and options,
    ``reset_delay=False`` as snnTorch 1.0 computes it. ``grilly.nn.snn.RLeaky`` is
    grilly's own (its keys, its in-step reset)."""

    def __init__(self, beta, V=1.0, all_to_all: bool = True,  # noqa: N803
                 linear_features: int | None = None, conv2d_channels=None, kernel_size=None,
                 threshold=1.0, spike_grad=None, surrogate_disable: bool = False,
                 init_hidden: bool = False, inhibition: bool = False, learn_beta: bool = False,
                 learn_threshold: bool = False, learn_recurrent: bool = True,
                 reset_mechanism: str = "subtract", state_quant=False, output: bool = False,
                 reset_delay: bool = True, **grilly_kw) -> None:
        if all_to_all and not linear_features and conv2d_channels is None and kernel_size is None:
            raise TypeError("RLeaky: all_to_all=True needs linear_features (the number of "
                            "neurons), or conv2d_channels and kernel_size (a convolution)")
        kw = _snntorch_kw(spike_grad, surrogate_disable, inhibition, reset_mechanism,
                          state_quant, output, conv2d_channels=conv2d_channels,
                          kernel_size=kernel_size)
        super().__init__(beta, V=None if all_to_all else V, threshold=threshold,
                         learn_beta=learn_beta, learn_threshold=learn_threshold,
                         learn_recurrent=learn_recurrent, init_hidden=init_hidden,
                         all_to_all=bool(all_to_all),
                         linear_features=linear_features if all_to_all else None,
                         reset_delay=reset_delay, **grilly_kw, **kw)
        self._snntorch_buffers(reset_mechanism)

    def reset_mem(self):
        """snnTorch's ``spk, mem = lif.reset_mem()``: a new sequence; (None, None)."""
        return self.init_rleaky()


class Lapicque(_SnnTorchConventions, LIF):
    """snnTorch's ``snn.Lapicque``: the RC membrane mem = (1 - dt/(R C)) mem + x dt / C - reset
    thr, from ``beta`` (R = 1, C = dt / log(1/beta)) or two of ``beta``, ``R``, ``C``
    (``time_step`` = dt), as snnTorch computes them; ``learn_beta`` is not supported (snnTorch's
    dynamics read R and C, fixed at construction)."""

    def __init__(self, beta=False, R=False, C=False, time_step=1, threshold=1.0,  # noqa: N803
                 spike_grad=None, surrogate_disable: bool = False, init_hidden: bool = False,
                 inhibition: bool = False, learn_beta: bool = False,
                 learn_threshold: bool = False, reset_mechanism: str = "subtract",
                 state_quant=False, output: bool = False, **grilly_kw) -> None:
        op = "Lapicque"
        if learn_beta:
            raise NotImplementedError(f"{op}: learn_beta is not supported (the membrane's "
                                      "decay is 1 - time_step/(R C), fixed at construction)")
        for name, v in (("beta", beta), ("R", R), ("C", C), ("time_step", time_step)):
            if v is not False and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
                raise TypeError(f"{op}: {name} must be a float, got {type(v).__name__}")
        dt = float(time_step)
        if not (beta or (R and C)) or (not beta and bool(R) != bool(C)):
            raise ValueError(f"{op}: give beta, or two of beta, R and C")
        if not (R and C):
            if not 0.0 < beta < 1.0:
                raise ValueError(f"{op}: beta must be in (0, 1) to derive R or C, got {beta}")
            if R:
                C = dt / (R * math.log(1.0 / beta))
            else:
                R = 1.0 if not C else dt / (C * math.log(1.0 / beta))
                C = C or dt / (R * math.log(1.0 / beta))
        from_rc = not beta
        if from_rc:
            beta = math.exp(-dt / (R * C))
        kw = _snntorch_kw(spike_grad, surrogate_disable, inhibition, reset_mechanism,
                          state_quant, output)
        super().__init__(beta, threshold, init_hidden=init_hidden,
                         learn_threshold=learn_threshold, **grilly_kw, **kw)
        self._snntorch_buffers(reset_mechanism)
        if from_rc:   # snnTorch computes this beta as a (1,) tensor: its state_dict loads as is
            self.register_buffer("beta", gp.reshape(self._buffers["beta"], (1,)))
        for name, v in (("time_step", dt), ("R", R), ("C", C)):
            self.register_buffer(name, gp.asarray(float(v), dtype=self._dtype))
        # the step as snnTorch writes it: x R (1/(R C)) dt + (1 - dt/(R C)) mem
        self._scale, self._leak = float(R) * (1.0 / (R * C)) * dt, 1.0 - dt / (R * C)

    def _params(self) -> dict:
        return {"thr": self._threshold, "beta": self._leak}

    def _fused_multi_step(self, x_seq, st, p, return_mem):
        if self.reset_mechanism == "zero":   # snnTorch zeroes the new membrane here: per step
            return None
        return super()._fused_multi_step(x_seq * self._scale, st, p, return_mem)

    def _charge(self, x, st, p, r):
        mem = x * self._scale + p["beta"] * st[0]
        if self.reset_mechanism == "subtract":
            return (mem - r * p["thr"],)
        if self.reset_mechanism == "zero":   # the new membrane zeroed
            return (mem - r * mem,)
        return (mem,)

    def init_lapicque(self):
        """snnTorch's ``mem = lif.init_lapicque()``: a new sequence; None."""
        return self._init_none()


class Alpha(_SnnTorchConventions, _Neuron):
    """snnTorch's ``snn.Alpha``: an excitatory current syn_exc = alpha syn_exc + x and an
    inhibitory one syn_inh = beta syn_inh - x, mem = tau_alpha (syn_exc + syn_inh) with
    tau_alpha = log(alpha) / (log(beta) - log(alpha)) + 1 (alpha > beta); returns
    ``(spk, syn_exc, syn_inh, mem)``. Reset (default ``"zero"``) as snnTorch computes it."""

    _state_names = ("syn_exc", "syn_inh", "mem")
    _mem_index = 2

    def __init__(self, alpha, beta, threshold=1.0, spike_grad=None,
                 surrogate_disable: bool = False, init_hidden: bool = False,
                 inhibition: bool = False, learn_alpha: bool = False, learn_beta: bool = False,
                 learn_threshold: bool = False, reset_mechanism: str = "zero",
                 state_quant=False, output: bool = False, *, step_mode: str = "s",
                 dtype=None) -> None:
        reset, surrogate, output, opts = _port_kw("Alpha", _snntorch_kw(
            spike_grad, surrogate_disable, inhibition, reset_mechanism, state_quant, output),
            "subtract", None, False)
        super().__init__(threshold=threshold, reset=reset, surrogate=surrogate,
                         detach_reset=True, reset_delay=True, learn_threshold=learn_threshold,
                         step_mode=step_mode, return_mem=output, dtype=dtype,
                         init_hidden=init_hidden, snntorch_opts=opts)
        for name, v in (("alpha", alpha), ("beta", beta)):
            if isinstance(v, numbers.Real) and not isinstance(v, bool) and not 0 < v < 1:
                raise ValueError(f"Alpha: {name} must be in (0, 1), got {v}")
        if isinstance(alpha, numbers.Real) and isinstance(beta, numbers.Real) and alpha <= beta:
            raise ValueError(f"Alpha: alpha must be greater than beta, got alpha={alpha}, "
                             f"beta={beta}")
        self._set_param("beta", beta, learn_beta)
        self._set_param("alpha", alpha, learn_alpha)
        self._snntorch_buffers(reset)

    def init_alpha(self):
        """snnTorch's ``syn_exc, syn_inh, mem = lif.init_alpha()``: (None, None, None)."""
        return self._init_none()

    def _params(self) -> dict:
        return {"thr": self._threshold, "alpha": self._decay("alpha"), "beta": self._decay("beta")}

    def _charge(self, x, st, p, r):
        exc0, inh0, _ = st
        a, b, thr = p["alpha"], p["beta"], p["thr"]
        exc, inh = a * exc0 + x, b * inh0 - x
        la, lb = gp.log(a), gp.log(b)
        mem = (la / (lb - la) + 1.0) * (exc + inh)
        if self.reset_mechanism == "subtract":
            exc, inh, mem = exc - thr * r, inh - inh * r, mem + inh0 * r
        elif self.reset_mechanism == "zero":
            exc, inh, mem = exc - exc * r, inh - inh * r, mem - mem * r
        return exc, inh, mem


class RSynaptic(_SnnTorchConventions, _own.RLeaky):
    """snnTorch's ``snn.RSynaptic``: syn = alpha syn + x + V(spk_prev), mem = beta mem + syn -
    reset thr (a zero reset zeroes the new membrane), V a Linear(n, n) (``all_to_all=True``,
    ``linear_features=n``), a Conv2d(C, C, k) (``conv2d_channels=C``, ``kernel_size=k``) or
    one-to-one weights ``V``; returns ``(spk, syn, mem)``. ``reset_delay=False`` is not
    supported."""

    _state_names = ("spk", "syn", "mem")
    _mem_index = 2

    def __init__(self, alpha, beta, V=1.0, all_to_all: bool = True,  # noqa: N803
                 linear_features: int | None = None, conv2d_channels=None, kernel_size=None,
                 threshold=1.0, spike_grad=None, surrogate_disable: bool = False,
                 init_hidden: bool = False, inhibition: bool = False, learn_alpha: bool = False,
                 learn_beta: bool = False, learn_threshold: bool = False,
                 learn_recurrent: bool = True, reset_mechanism: str = "subtract",
                 state_quant=False, output: bool = False, reset_delay: bool = True,
                 **grilly_kw) -> None:
        if not reset_delay:
            raise NotImplementedError("RSynaptic: reset_delay=False is not supported (snnTorch "
                                      "1.0's branch does not change the returned state)")
        if all_to_all and not linear_features and conv2d_channels is None and kernel_size is None:
            raise TypeError("RSynaptic: all_to_all=True needs linear_features (the number of "
                            "neurons), or conv2d_channels and kernel_size (a convolution)")
        kw = _snntorch_kw(spike_grad, surrogate_disable, inhibition, reset_mechanism,
                          state_quant, output, conv2d_channels=conv2d_channels,
                          kernel_size=kernel_size)
        super().__init__(beta, V=None if all_to_all else V, threshold=threshold,
                         learn_beta=learn_beta, learn_threshold=learn_threshold,
                         learn_recurrent=learn_recurrent, init_hidden=init_hidden,
                         all_to_all=bool(all_to_all),
                         linear_features=linear_features if all_to_all else None,
                         **grilly_kw, **kw)
        _check_decay(alpha, "alpha", "RSynaptic")
        self._set_param("alpha", alpha, learn_alpha)
        self._snntorch_buffers(reset_mechanism)

    def init_rsynaptic(self):
        """snnTorch's ``spk, syn, mem = lif.init_rsynaptic()``: (None, None, None)."""
        self.reset_state()
        return None, None, None

    reset_mem = init_rsynaptic

    def _params(self) -> dict:
        return {"thr": self._threshold, "alpha": self._decay("alpha"), "beta": self._decay("beta")}

    def _charge(self, x, st, p, r):
        syn = p["alpha"] * st[1] + x + self._recur(st[0])
        mem = p["beta"] * st[2] + syn
        if self.reset_mechanism == "subtract":
            return st[0], syn, mem - r * p["thr"]
        if self.reset_mechanism == "zero":   # the new membrane zeroed (the current is not)
            return st[0], syn, mem - r * mem
        return st[0], syn, mem
