"""snnTorch's spiking LSTMs and batch norm through time under its names: ``snn.SLSTM`` (an
LSTMCell whose hidden state is the membrane), ``snn.SConv2dLSTM`` (its convolutional form) and
``snn.BatchNormTT1d``/``BatchNormTT2d`` (one BatchNorm per time step, no shift).

The neurons keep snnTorch's conventions (grilly.nn.snn.snntorch_compat): its argument order,
state_dict keys (``threshold``, ``graded_spikes_factor``, ``reset_mechanism_val``,
``lstm_cell.*`` / ``conv.*``, so an snnTorch checkpoint loads), ``spk, syn, mem = lstm(x, syn,
mem)`` or ``spk = lstm(x)`` with ``init_hidden=True``, and snnTorch's step: the reset R =
H(mem[t-1] - thr) (detached) applied to the new membrane only (subtract: mem - R thr; zero:
mem (1 - R); the default "none": no reset), ``state_quant`` on both states, then the spike of
the membrane (SConv2dLSTM: of the pooled membrane)."""
from __future__ import annotations

import numbers

from ...array import api as gp

from .. import functional as NF
from ..conv_rnn_extra import LSTMCell
from ..layers import AvgPool2d, BatchNorm1d, BatchNorm2d, Conv2d, MaxPool2d
from ..module import ModuleList
from .checks import _check_input, _check_kernel
from .neurons import _Neuron
from .snntorch_compat import _SnnTorchConventions

__all__ = ["SLSTM", "SConv2dLSTM", "BatchNormTT1d", "BatchNormTT2d"]


def _check_size(v, name: str, op: str) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{op}: {name} must be an int, got {type(v).__name__}")
    if v < 1:
        raise ValueError(f"{op}: {name} must be positive, got {v}")
    return int(v)


class _SpikingLSTM(_SnnTorchConventions, _Neuron):
    """snnTorch's SLSTM/SConv2dLSTM step over an LSTM whose cell state is ``syn`` and hidden
    state ``mem``; subclasses give the gates (``_lstm``) and the state's shape (``_state_shape``).
    """

    _state_names = ("syn", "mem")
    _mem_index = 1

    def __init__(self, threshold, spike_grad, surrogate_disable, init_hidden, inhibition,
                 learn_threshold, reset_mechanism, state_quant, output, step_mode,
                 dtype) -> None:
        op = type(self).__name__
        if not isinstance(inhibition, (bool, int)) or isinstance(inhibition, float):
            raise TypeError(f"{op}: inhibition must be a bool, got {type(inhibition).__name__}")
        if inhibition:
            # snnTorch's SLSTM/SConv2dLSTM accept it and fire without it (a warning only)
            raise NotImplementedError(f"{op}: inhibition is not supported (snnTorch's {op} "
                                      "ignores it)")
        super().__init__(threshold=threshold, reset=reset_mechanism, surrogate=spike_grad,
                         detach_reset=True, reset_delay=True, learn_threshold=learn_threshold,
                         step_mode=step_mode, return_mem=output, dtype=dtype,
                         init_hidden=init_hidden,
                         snntorch_opts={"surrogate_disable": surrogate_disable,
                                        "state_quant": state_quant})
        self._snntorch_buffers(reset_mechanism)

    def _state_shape(self, shape: tuple) -> tuple:
        """The shape of syn and mem for one step's input ``shape`` (checked)."""
        raise NotImplementedError

    def _lstm(self, x, syn, mem) -> tuple:
        """The LSTM's new (syn, mem) = (c, h) from the input and the old state."""
        raise NotImplementedError

    def init_state(self, like):
        want = self._state_shape(like.shape)
        return tuple(gp.zeros(want, dtype=like.dtype, device=like.device)
                     for _ in self._state_names)

    def _check_params(self, shape: tuple) -> None:
        super()._check_params(self._state_shape(shape))

    def _current_state(self, x, given: tuple) -> tuple:
        # snnTorch: a given state replaces the kept one; either of another shape than this
        # input's state restarts from zeros
        op = type(self).__name__
        if len(given) > 2:
            raise TypeError(f"{op}: takes the input and at most 2 state arrays (syn, mem), got "
                            f"{len(given)}")
        want = self._state_shape(x.shape)
        if self.state is not None and tuple(self.state[0].shape) != want:
            self.state = None
        if self.state is not None and self.state[0].device != x.device:
            self.state = tuple(s.to_device(x.device) for s in self.state)
        base = self.state if self.state is not None else self.init_state(x)
        out = []
        for s, b, name in zip((*given, None, None), base, self._state_names):
            if s is not None:
                s = _check_input(s, op, name)
            out.append(b if s is None or tuple(s.shape) != want else s)
        return tuple(out)

    def _charge(self, x, st, p, r):
        syn, mem = self._lstm(x, st[0], st[1])
        if self.reset_mechanism == "subtract":
            return syn, mem - r * p["thr"]
        if self.reset_mechanism == "zero":   # the new membrane zeroed (the cell state kept)
            return syn, mem - r * mem
        return syn, mem

    def reset_mem(self):
        """snnTorch's ``syn, mem = lstm.reset_mem()``: a new sequence; (None, None)."""
        return self._init_none()


class SLSTM(_SpikingLSTM):
    """snnTorch's ``snn.SLSTM``: (mem, syn) = LSTMCell(x, (mem, syn)) (gates i, f, g, o; syn
    the cell state, mem the hidden state), the reset of the membrane and the spike H(mem - thr)
    as snnTorch's; input (batch, input_size), states and spikes (batch, hidden_size). Weights
    are ``lstm_cell.weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh`` (torch's LSTMCell)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, threshold=1.0,
                 spike_grad=None, surrogate_disable: bool = False, init_hidden: bool = False,
                 inhibition: bool = False, learn_threshold: bool = False,
                 reset_mechanism: str = "none", state_quant=False, output: bool = False, *,
                 step_mode: str = "s", dtype=None) -> None:
        n_in = _check_size(input_size, "input_size", "SLSTM")
        n_hidden = _check_size(hidden_size, "hidden_size", "SLSTM")
        super().__init__(threshold, spike_grad, surrogate_disable, init_hidden, inhibition,
                         learn_threshold, reset_mechanism, state_quant, output, step_mode, dtype)
        self.input_size, self.hidden_size, self.bias = n_in, n_hidden, bool(bias)
        self.lstm_cell = LSTMCell(self.input_size, self.hidden_size, bias=self.bias,
                                  dtype=self._dtype)

    def _state_shape(self, shape: tuple) -> tuple:
        if len(shape) != 2 or shape[1] != self.input_size:
            raise ValueError(f"SLSTM: expected an input (batch, {self.input_size}), got shape "
                             f"{tuple(shape)}")
        return (shape[0], self.hidden_size)

    def _lstm(self, x, syn, mem):
        h, c = self.lstm_cell(x, (mem, syn))
        return c, h

    def init_slstm(self):
        """snnTorch's ``syn, mem = lstm.init_slstm()``: a new sequence; (None, None)."""
        return self._init_none()

    def extra_repr(self) -> str:
        return (f"{self.input_size}, {self.hidden_size}, reset={self.reset_mechanism!r}, "
                f"surrogate={self.surrogate!r}")


class SConv2dLSTM(_SpikingLSTM):
    """snnTorch's ``snn.SConv2dLSTM``: one Conv2d(in + out, 4 out, kernel_size) over the input
    and the membrane side by side gives the gates (i, f, o, g in that order, snnTorch's);
    syn = sig(f) syn + sig(i) tanh(g), mem = sig(o) tanh(syn), the reset of the membrane as
    snnTorch's, and the spike H(pool(mem) - thr) with ``max_pool`` or ``avg_pool`` (a kernel
    size, its stride) if given. Input (B, in_channels, H, W); states (B, out_channels, H, W).
    Weights are ``conv.weight``, ``conv.bias``; the convolution is padded to keep H and W."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, bias: bool = True,
                 max_pool=0, avg_pool=0, threshold=1.0, spike_grad=None,
                 surrogate_disable: bool = False, init_hidden: bool = False,
                 inhibition: bool = False, learn_threshold: bool = False,
                 reset_mechanism: str = "none", state_quant=False, output: bool = False, *,
                 step_mode: str = "s", dtype=None) -> None:
        op = "SConv2dLSTM"
        n_in = _check_size(in_channels, "in_channels", op)
        n_out = _check_size(out_channels, "out_channels", op)
        kernel = _check_kernel(kernel_size, op)
        if max_pool and avg_pool:
            raise ValueError(f"{op}: only one of max_pool or avg_pool may be given, not both")
        pool = (MaxPool2d(_check_kernel(max_pool, op, "max_pool")) if max_pool else
                AvgPool2d(_check_kernel(avg_pool, op, "avg_pool")) if avg_pool else None)
        super().__init__(threshold, spike_grad, surrogate_disable, init_hidden, inhibition,
                         learn_threshold, reset_mechanism, state_quant, output, step_mode, dtype)
        self.in_channels, self.out_channels, self.kernel_size = n_in, n_out, kernel_size
        self.max_pool, self.avg_pool, self.bias = max_pool, avg_pool, bool(bias)
        # 'same' keeps the map's size, as the state must (snnTorch pads k // 2: the same for
        # an odd kernel; an even one grows its map by one and fails there)
        self.conv = Conv2d(self.in_channels + self.out_channels, 4 * self.out_channels, kernel,
                           padding="same", bias=self.bias, dtype=self._dtype)
        self.pool = pool

    def _state_shape(self, shape: tuple) -> tuple:
        if len(shape) != 4 or shape[1] != self.in_channels:
            raise ValueError(f"SConv2dLSTM: expected an input (batch, {self.in_channels}, H, W), "
                             f"got shape {tuple(shape)}")
        return (shape[0], self.out_channels, shape[2], shape[3])

    def _lstm(self, x, syn, mem):
        gates = self.conv(gp.concat([x, mem], axis=1))
        c = self.out_channels
        i, f, o, g = (gates[:, k * c:(k + 1) * c] for k in range(4))
        syn = NF.sigmoid(f) * syn + NF.sigmoid(i) * gp.tanh(g)
        return syn, NF.sigmoid(o) * gp.tanh(syn)

    def _emit(self, mem, thr):
        # snnTorch fires on the pooled membrane (the state keeps the full map)
        return super()._emit(mem if self.pool is None else self.pool(mem), thr)

    def init_sconv2dlstm(self):
        """snnTorch's ``syn, mem = lstm.init_sconv2dlstm()``: a new sequence; (None, None)."""
        return self._init_none()

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
        if self.max_pool:
            s += f", max_pool={self.max_pool}"
        if self.avg_pool:
            s += f", avg_pool={self.avg_pool}"
        return s + f", reset={self.reset_mechanism!r}"


def _batch_norm_tt(cls, op: str, input_features, time_steps, eps, momentum, affine,
                   dtype) -> ModuleList:
    n = _check_size(input_features, "input_features", op)
    steps = _check_size(time_steps, "time_steps", op)
    for name, v in (("eps", eps), ("momentum", momentum)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{op}: {name} must be a float, got {type(v).__name__}")
    if eps <= 0:
        raise ValueError(f"{op}: eps must be positive, got {eps}")
    # BNTT learns a scale per step and no shift: snnTorch drops each BatchNorm's bias
    return ModuleList([cls(n, eps=float(eps), momentum=float(momentum), affine=bool(affine),
                           bias=False, dtype=dtype) for _ in range(steps)])


def BatchNormTT1d(input_features: int, time_steps: int, eps: float = 1e-5,  # noqa: N802
                  momentum: float = 0.1, affine: bool = True, *, dtype=None) -> ModuleList:
    """snnTorch's batch norm through time: a ModuleList of ``time_steps`` BatchNorm1d (step t
    normalized by ``bntt[t]``), each a scale (ones) without a bias (keys ``0.weight``,
    ``0.running_mean``, ...)."""
    return _batch_norm_tt(BatchNorm1d, "BatchNormTT1d", input_features, time_steps, eps,
                          momentum, affine, dtype)


def BatchNormTT2d(input_features: int, time_steps: int, eps: float = 1e-5,  # noqa: N802
                  momentum: float = 0.1, affine: bool = True, *, dtype=None) -> ModuleList:
    """snnTorch's batch norm through time for (N, C, H, W): a ModuleList of ``time_steps``
    BatchNorm2d, each a scale (ones) without a bias."""
    return _batch_norm_tt(BatchNorm2d, "BatchNormTT2d", input_features, time_steps, eps,
                          momentum, affine, dtype)

