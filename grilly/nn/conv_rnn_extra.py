"""torch.nn's transposed and 3-D convolutions, recurrent cells, the Elman RNN and the fixed
upsampling layers, with torch's signatures, parameter names, weight layouts and initialization."""
from __future__ import annotations

import math

from ..array import api as gp
from ..array import dispatch as _dispatch

from . import functional as F
from . import init
from .layers import Upsample, _ConvNd, _empty
from .module import Module
from .rnn import GRU, LSTM, _check_sizes, _RNNBase

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Conv3d",
           "RNNCell", "LSTMCell", "GRUCell", "RNN", "RNNCellBase",
           "UpsamplingNearest2d", "UpsamplingBilinear2d"]


# ---- convolution --------------------------------------------------------------------------
class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W)."""

    _n = 3

    def forward(self, input):
        if self.padding_mode != "zeros":
            # torch's order: the input padded in that mode, then an unpadded convolution
            x = F.pad(input, self._mode_pads(), mode=self.padding_mode)
            return F.conv3d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return F.conv3d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class _ConvTransposeNd(_ConvNd):
    """Weight (in_channels, out_channels/groups, *kernel_size), as torch's."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        Module.__init__(self)
        n, name = self._n, type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(f"{name}: only padding_mode='zeros' is supported, got "
                             f"{padding_mode!r}")
        if isinstance(padding, str):
            raise ValueError(f"{name}: padding must be an int or a tuple of {n} ints, got "
                             f"{padding!r}")
        if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels and out_channels must be divisible by "
                             f"groups={groups}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = F._pair(kernel_size, n, "kernel_size", name)
        self.stride = F._pair(stride, n, "stride", name)
        self.padding = F._pair(padding, n, "padding", name)
        self.output_padding = F._pair(output_padding, n, "output_padding", name)
        self.dilation = F._pair(dilation, n, "dilation", name)
        self.padding_mode = padding_mode
        self.weight = _empty((in_channels, out_channels // groups, *self.kernel_size), dtype,
                             device)
        if bias:
            self.bias = _empty((out_channels,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()   # fan_in: out_channels/groups * kernel, as torch's

    def _output_padding(self, input, output_size) -> tuple:
        """output_padding, or the one that gives ``output_size`` (torch's rule and range)."""
        if output_size is None:
            return self.output_padding
        n, name = self._n, type(self).__name__
        lead = 2 if input.ndim == n + 2 else 1
        size = tuple(int(v) for v in output_size)
        if len(size) == lead + n:
            size = size[lead:]
        if len(size) != n:
            raise ValueError(f"{name}: for a {input.ndim}-D input, output_size must have {n} or "
                             f"{lead + n} elements, got {len(size)}")
        lo = tuple((i - 1) * s - 2 * p + d * (k - 1) + 1 for i, s, p, d, k in
                   zip(input.shape[lead:], self.stride, self.padding, self.dilation,
                       self.kernel_size))
        hi = tuple(m + s - 1 for m, s in zip(lo, self.stride))
        if any(not a <= v <= b for v, a, b in zip(size, lo, hi)):
            raise ValueError(f"{name}: requested an output size of {list(size)}, but valid sizes "
                             f"range from {list(lo)} to {list(hi)} (for an input of "
                             f"{input.shape[lead:]})")
        return tuple(v - a for v, a in zip(size, lo))

    def forward(self, input, output_size=None):
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._n - 1]
        return fn(input, self.weight, self.bias, self.stride, self.padding,
                  self._output_padding(input, output_size), self.groups, self.dilation)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        n = self._n
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C, L)."""

    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C, H, W)."""

    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over (N, C, D, H, W)."""

    _n = 3


# ---- recurrent cells ----------------------------------------------------------------------
class _CellBase(Module):
    _chunks = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        _check_sizes(type(self).__name__, input_size=input_size, hidden_size=hidden_size)
        if input_size < 0 or hidden_size < 1:
            raise ValueError(f"{type(self).__name__}: hidden_size must be positive and "
                             f"input_size non-negative, got {input_size} and {hidden_size}")
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        g = self._chunks * hidden_size
        self.weight_ih = _empty((g, input_size), dtype, device)
        self.weight_hh = _empty((g, hidden_size), dtype, device)
        if bias:
            self.bias_ih = _empty((g,), dtype, device)
            self.bias_hh = _empty((g,), dtype, device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        k = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -k, k)

    def _batched(self, input, states) -> tuple:
        """(input, states, unbatched): input (N, input_size) and each state (N, hidden_size)
        (zeros where None), after checking them as torch does."""
        name = type(self).__name__
        if not isinstance(input, gp.Array) or input.ndim not in (1, 2):
            raise ValueError(f"{name}: expected input to be 1-D or 2-D, got "
                             f"{getattr(input, 'ndim', type(input).__name__)}-D")
        if input.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input has {input.shape[-1]} features, expected "
                             f"{self.input_size}")
        unbatched = input.ndim == 1
        x = gp.expand_dims(input, axis=0) if unbatched else input
        want = (x.shape[0], self.hidden_size)
        out = []
        for s in states:
            if s is None:
                out.append(gp.zeros(want, dtype=x.dtype, device=x.device))
                continue
            if not isinstance(s, gp.Array):
                raise TypeError(f"{name}: the hidden state must be an Array, got "
                                f"{type(s).__name__}"
                                + (" (a (h_0, c_0) tuple is LSTMCell's)"
                                   if isinstance(s, (tuple, list)) else ""))
            if s.ndim != input.ndim:
                raise ValueError(f"{name}: expected the hidden state to be "
                                 f"{input.ndim}-D as the input, got {s.ndim}-D")
            s = gp.expand_dims(s, axis=0) if unbatched else s
            if tuple(s.shape) != want:
                raise ValueError(f"{name}: expected the hidden state of shape "
                                 f"{want[1:] if unbatched else want}, got "
                                 f"{s.shape[1:] if unbatched else s.shape}")
            out.append(s)
        return x, out, unbatched

    def _step(self, cell, x, h, c=None) -> tuple:
        """One step of the matching multi-layer module's ``cell`` (its gate math and order):
        the input projection here, the hidden one in the cell. Inside autocast the input and
        the states run in the low dtype, as torch's lstm_cell/gru_cell/rnn_*_cell (a float32
        zero state made c' and h' float32)."""
        if _dispatch.hooks.cast is not None:   # an autocast region (in some thread)
            name = ("lstm_cell" if isinstance(self, LSTMCell) else "gru_cell"
                    if isinstance(self, GRUCell) else f"rnn_{self.nonlinearity}_cell")
            x, h, c = _dispatch.autocast(name, x, h, c)
        return cell(self, F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                    self.bias_hh)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


# torch's name for the cells' base class (for isinstance checks)
RNNCellBase = _CellBase


def _unbatch(h, unbatched: bool):
    return gp.squeeze(h, axis=0) if unbatched else h


class RNNCell(_CellBase):
    """An Elman cell: h' = tanh (or relu) (x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: unknown nonlinearity {nonlinearity!r}, select from "
                             "'tanh' or 'relu'")
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), unbatched = self._batched(input, (hx,))
        return _unbatch(self._step(RNN._cell, x, h)[0], unbatched)


class LSTMCell(_CellBase):
    """A long short-term memory cell, gates (i, f, g, o); returns (h', c')."""

    _chunks = 4

    def forward(self, input, hx=None):
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"LSTMCell: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
        x, (h, c), unbatched = self._batched(input, (None, None) if hx is None else hx)
        h, c = self._step(LSTM._cell, x, h, c)
        return _unbatch(h, unbatched), _unbatch(c, unbatched)


class GRUCell(_CellBase):
    """A gated recurrent unit cell, gates (r, z, n); returns h'."""

    _chunks = 3

    def forward(self, input, hx=None):
        x, (h,), unbatched = self._batched(input, (hx,))
        return _unbatch(self._step(GRU._cell, x, h)[0], unbatched)


# ---- Elman RNN ----------------------------------------------------------------------------
class RNN(_RNNBase):
    """A multi-layer Elman RNN, tanh or relu; returns (output, h_n). Parameters and options
    as LSTM's and GRU's (weight_ih_l0, ..., _reverse)."""

    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: unknown nonlinearity {nonlinearity!r}, select from 'tanh' "
                             "or 'relu'")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity

    def _cell(self, xt, h, c, w_hh, b_hh):
        pre = xt + F.linear(h, w_hh, b_hh)
        return (gp.tanh(pre) if self.nonlinearity == "tanh" else F.relu(pre)), None


# ---- upsampling ---------------------------------------------------------------------------
class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling (torch's nn.UpsamplingNearest2d)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling with align_corners=True (torch's nn.UpsamplingBilinear2d)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
