"""Norse 1.1's remaining containers and layers on grilly Arrays: ``RecurrentSequential`` (a
``SequentialState`` whose output is added to the next step's input), ``LConv2d`` (a 2-d
convolution applied to every step of (T, N, C, H, W) input, Norse's Conv3d weight layout) and
``SpikesToTimesDecoder`` / ``ToSpikeTimes`` (the first spike times of a (T, B, O) spike train,
with Norse's gradient), and the ``ResetMethod`` type of ``LIFBoxParameters.reset_method``; the
names are re-exported by ``grilly.nn.snn.norse``.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from ...array import api as gp

from ...array.array import Array
from ...autograd.function import Function
from .. import functional as NF
from ..conv_rnn_extra import Conv3d
from ..module import Module
from . import functional as F
from .norse_compat import SequentialState, _float

__all__ = ["RecurrentSequentialState", "RecurrentSequential", "LConv2d", "ToSpikeTimes",
           "SpikesToTimesDecoder", "ResetMethod"]

# Norse's type of a reset function (z, v, v_reset, v_th) -> v (reset_value, reset_subtract)
ResetMethod = Callable[[Array, Array, Array, Array], Array]


# ---- RecurrentSequential ---------------------------------------------------------------------

class RecurrentSequentialState(NamedTuple):
    """A RecurrentSequential's state: the output fed back (``cache``) and the modules' states."""

    cache: Array | list | None = None
    state: list | None = None


class RecurrentSequential(Module):
    """Norse's ``RecurrentSequential(*modules, output_modules=-1)``: ``SequentialState`` (its
    ``module``) whose output ``output_modules`` (an index, or a list of them) is returned and,
    given back as the state, added to the next call's input."""

    def __init__(self, *modules: Module, output_modules: int | list = -1) -> None:
        super().__init__()
        if isinstance(output_modules, bool) or not (
                isinstance(output_modules, int) or (isinstance(output_modules, (list, tuple))
                                                    and all(isinstance(i, int) and not
                                                            isinstance(i, bool)
                                                            for i in output_modules))):
            raise TypeError(f"RecurrentSequential: output_modules must be an int or a list of "
                            f"ints, got {output_modules!r}")
        self.module = SequentialState(*modules, return_hidden=True)
        n = len(self.module)
        for i in ([output_modules] if isinstance(output_modules, int) else output_modules):
            if not -n <= i < n:
                raise ValueError(f"RecurrentSequential: output module {i} is out of range for "
                                 f"{n} modules")
        self.output_modules = (output_modules if isinstance(output_modules, int)
                               else list(output_modules))

    def forward(self, x: Array, state: RecurrentSequentialState | None = None) -> tuple:
        """(output, RecurrentSequentialState): the modules run on x plus the cached output."""
        op = "RecurrentSequential"
        x = F._check_input(x, op, "x")
        if state is None:
            state = RecurrentSequentialState()
        elif not isinstance(state, RecurrentSequentialState):
            raise TypeError(f"{op}: state must be a RecurrentSequentialState or None, got "
                            f"{type(state).__name__}")
        elif state.cache is not None:
            if not isinstance(state.cache, Array):
                # (Norse 1.1 fails here too: it stacks the input with the list)
                raise TypeError(f"{op}: the cached output is a list (output_modules="
                                f"{self.output_modules}); only one output (an int) can be fed "
                                "back into the input")
            if tuple(gp.broadcast_shapes(tuple(x.shape), tuple(state.cache.shape))) != \
                    tuple(x.shape):
                raise ValueError(f"{op}: the fed-back output has shape "
                                 f"{tuple(state.cache.shape)}, the input {tuple(x.shape)}; the "
                                 "output must have the input's shape")
            x = x + state.cache
        outputs, out_state = self.module(x, state.state)
        if isinstance(self.output_modules, int):
            out = outputs[self.output_modules]
        else:
            out = [outputs[i] for i in self.output_modules]
        return out, RecurrentSequentialState(out, out_state)


# ---- LConv2d ---------------------------------------------------------------------------------

def _two(v, name: str) -> tuple:
    if isinstance(v, int) and not isinstance(v, bool):
        return (v, v)
    if isinstance(v, (tuple, list)) and len(v) == 2 and all(
            isinstance(a, int) and not isinstance(a, bool) for a in v):
        return tuple(v)
    raise ValueError(f"LConv2d: {name} must be an int or a pair of ints, got {v!r}")


class LConv2d(Conv3d):
    """Norse's ``LConv2d(in_channels, out_channels, kernel_size, stride, padding, dilation,
    groups)``: a bias-free 2-d convolution of every step of (T, N, C, H, W) input; its weight
    is Norse's Conv3d one, (out, in / groups, kh, kw, 1) (a Norse state_dict loads as is)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, device=None, dtype=None) -> None:
        kernel_size, stride = _two(kernel_size, "kernel_size"), _two(stride, "stride")
        padding, dilation = _two(padding, "padding"), _two(dilation, "dilation")
        super().__init__(in_channels, out_channels, (*kernel_size, 1), (*stride, 1),
                         (*padding, 0), (*dilation, 1), groups, bias=False, device=device,
                         dtype=dtype)

    def forward(self, input_tensor: Array) -> Array:
        """(T, N, C_out, H_out, W_out): the conv of each step (steps and batch as one batch)."""
        x = F._check_input(input_tensor, "LConv2d", "input_tensor")
        if x.ndim != 5:
            raise ValueError(f"LConv2d: input_tensor must be (T, N, C, H, W), got shape "
                             f"{tuple(x.shape)}")
        T, N = x.shape[:2]
        y = NF.conv2d(gp.reshape(x, (T * N, *x.shape[2:])), self.weight[..., 0], None,
                      self.stride[:2], self.padding[:2], self.dilation[:2], self.groups)
        return gp.reshape(y, (T, N, *y.shape[1:]))


# ---- SpikesToTimesDecoder --------------------------------------------------------------------

class ToSpikeTimes(Function):
    """Norse's ``ToSpikeTimes``: spikes (T, B, O) of 0/1 to the indices of the first
    ``spike_count`` spikes of each trace in ascending order (min(spike_count, T), B, O), inf
    where there are fewer; the gradient of a returned index is -1 at its spike."""

    @staticmethod
    def forward(ctx, spike_input, spike_count):
        T = spike_input.shape[0]
        steps = gp.reshape(gp.arange(1, T + 1, dtype=spike_input.dtype,
                                     device=spike_input.device), (T, 1, 1))
        # a spike at step t is t (0-based), no spike -1 -> inf, so the sort puts spikes first
        idx = spike_input * steps - 1.0
        idx = gp.where(idx == -1.0, gp.asarray(float("inf"), dtype=idx.dtype,
                                               device=idx.device), idx)
        times = gp.sort(idx, axis=0)[:min(spike_count, T)]
        ctx.save_for_backward(times)
        ctx.T = T
        return times

    @staticmethod
    def backward(ctx, grad_output):
        (times,) = ctx.saved_tensors
        T = ctx.T
        steps = gp.reshape(gp.arange(T, dtype=times.dtype, device=times.device), (1, T, 1, 1))
        # (K, T, B, O): where each returned index sits in the input (inf matches nothing)
        hit = gp.astype(gp.expand_dims(times, axis=1) == steps, grad_output.dtype)
        return -gp.sum(hit * gp.expand_dims(grad_output, axis=1), axis=0), None


class SpikesToTimesDecoder(Module):
    """Norse's ``SpikesToTimesDecoder(spike_count=1, convert_indices_to_times=True, dt=1e-3)``:
    the first ``spike_count`` spike indices of (T, B, O) 0/1 spikes (``ToSpikeTimes``), times
    dt where ``convert_indices_to_times``."""

    def __init__(self, spike_count: int = 1, convert_indices_to_times: bool = True,
                 dt: float = 1e-3) -> None:
        super().__init__()
        count = spike_count.item() if hasattr(spike_count, "item") else spike_count
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"SpikesToTimesDecoder: spike_count must be a positive int, got "
                             f"{spike_count!r}")
        self.spike_count = count
        self.convert_to_time = bool(convert_indices_to_times)
        self.dt = _float(dt, "dt", "SpikesToTimesDecoder")

    def forward(self, spike_input: Array) -> Array:
        """(min(spike_count, T), B, O) indices (or times), inf where a trace has fewer spikes."""
        x = F._check_input(spike_input, "SpikesToTimesDecoder", "spike_input")
        if x.ndim != 3 or x.shape[0] < 1:
            raise ValueError(f"SpikesToTimesDecoder: spike_input must be (T, B, O) with T >= 1, "
                             f"got shape {tuple(x.shape)}")
        times = ToSpikeTimes.apply(x, self.spike_count)
        return times * self.dt if self.convert_to_time else times

    def extra_repr(self) -> str:
        return (f"spike_count={self.spike_count}, convert_indices_to_times="
                f"{self.convert_to_time}, dt={self.dt}")
