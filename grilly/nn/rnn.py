"""LSTM and GRU (PyTorch parameter names, gate order and initialization)."""
from __future__ import annotations

import math
import warnings

from ..array import api as gp
from ..array import dispatch as _dispatch

from . import functional as F
from . import init
from .layers import _empty
from .module import Module
from .utils.rnn import PackedSequence, pack_like, step_masks

__all__ = ["LSTM", "GRU", "RNNBase"]


def _check_sizes(name: str, **sizes) -> None:
    """Each size an int (a float one would fail later, in an allocation naming no argument)."""
    for what, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name}: {what} must be an int, got {v!r}")


class _RNNBase(Module):
    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device=None, dtype=None) -> None:
        super().__init__()
        name = type(self).__name__
        _check_sizes(name, input_size=input_size, hidden_size=hidden_size,
                     num_layers=num_layers, proj_size=proj_size)
        if input_size < 1 or num_layers < 1 or hidden_size < 1:
            raise ValueError(f"{name}: input_size, hidden_size and num_layers must be positive, "
                             f"got {input_size}, {hidden_size} and {num_layers}")
        if proj_size < 0 or (proj_size and proj_size >= hidden_size):
            raise ValueError(f"{name}: proj_size must be 0 or in [1, hidden_size), "
                             f"got {proj_size}")
        if (isinstance(dropout, bool) or not isinstance(dropout, (int, float))
                or not 0.0 <= dropout <= 1.0):
            raise ValueError(f"{name}: dropout must be a number in [0, 1], got {dropout!r}")
        dropout = float(dropout)
        if dropout > 0 and num_layers == 1:
            # torch's warning: the dropout falls between layers, so one layer has none
            warnings.warn(f"{name}: dropout is applied after all but the last recurrent layer, "
                          f"so a non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, dropout
        self.bidirectional, self.proj_size = bidirectional, proj_size
        dirs = 2 if bidirectional else 1
        g = self._gates * hidden_size
        real = proj_size or hidden_size   # the size of h (LSTM's projection makes it smaller)
        for layer in range(num_layers):
            in_sz = input_size if layer == 0 else real * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                setattr(self, "weight_ih" + sfx, _empty((g, in_sz), dtype, device))
                setattr(self, "weight_hh" + sfx, _empty((g, real), dtype, device))
                if bias:
                    setattr(self, "bias_ih" + sfx, _empty((g,), dtype, device))
                    setattr(self, "bias_hh" + sfx, _empty((g,), dtype, device))
                if proj_size:
                    setattr(self, "weight_hr" + sfx, _empty((proj_size, hidden_size), dtype, device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        k = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -k, k)

    def _weights(self, layer: int, d: int):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        get = self._parameters.get
        return get("weight_ih" + sfx), get("weight_hh" + sfx), get("bias_ih" + sfx), get("bias_hh" + sfx)

    def _init_state(self, n, like, size):
        dirs = 2 if self.bidirectional else 1
        return gp.zeros((self.num_layers * dirs, n, size), dtype=like.dtype, device=like.device)

    def flatten_parameters(self) -> None:
        """Nothing to do (torch's cuDNN weight packing); kept so torch code runs unchanged."""

    def forward(self, input, hx=None):
        name = type(self).__name__
        packed, masks = input if isinstance(input, PackedSequence) else None, None
        if packed is not None:
            # run in the original batch order (so hx and h_n need no permuting), each sequence's
            # state held past its last step by the masks; the output packed as the input was
            input, masks = step_masks(packed)   # time-major, whatever batch_first says
        batch_first = self.batch_first and packed is None
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: expected a 2-D or 3-D input, got shape {input.shape}")
        unbatched = input.ndim == 2
        x = gp.expand_dims(input, axis=1) if unbatched else (
            gp.permute_dims(input, (1, 0, 2)) if batch_first else input)
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input has {x.shape[-1]} features, expected {self.input_size}")
        if x.shape[0] == 0:   # (no step to run: stack would fail on an empty list)
            raise ValueError(f"{name}: expected a sequence length larger than 0, got input "
                             f"shape {input.shape}")
        n = x.shape[1]
        lstm = self._gates == 4
        real = self.proj_size or self.hidden_size
        if hx is None:
            h0 = self._init_state(n, x, real)
            c0 = self._init_state(n, x, self.hidden_size) if lstm else None
        else:
            if lstm and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
                raise TypeError(f"{name}: hx must be a tuple (h_0, c_0), got "
                                f"{type(hx).__name__}")
            h0, c0 = hx if lstm else (hx, None)
            for state, what in ((h0, "h_0"), (c0, "c_0")):
                if state is not None and not isinstance(state, gp.Array):
                    raise TypeError(f"{name}: hx's {what} must be an Array, got "
                                    f"{type(state).__name__}"
                                    + ("" if lstm else " (a (h_0, c_0) tuple is LSTM's)"))
            if unbatched:
                h0 = gp.expand_dims(h0, axis=1)
                c0 = None if c0 is None else gp.expand_dims(c0, axis=1)
        dirs = 2 if self.bidirectional else 1
        for state, what, size in ((h0, "h0", real), (c0, "c0", self.hidden_size)):
            want = (self.num_layers * dirs, n, size)
            if state is not None and tuple(state.shape) != want:
                got = state.shape[:1] + state.shape[2:] if unbatched else state.shape
                raise ValueError(f"{name}: expected {what} of shape "
                                 f"{want[:1] + want[2:] if unbatched else want}, got {got}")
        hn, cn = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                idx = layer * dirs + d
                ys, h, c = self._run(x, layer, d, h0[idx], None if c0 is None else c0[idx],
                                     masks)
                outs.append(ys)
                hn.append(h)
                cn.append(c)
            x = outs[0] if dirs == 1 else gp.concat(outs, axis=-1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        if packed is not None:
            out = pack_like(x, packed)
        else:
            out = gp.squeeze(x, axis=1) if unbatched else (
                gp.permute_dims(x, (1, 0, 2)) if batch_first else x)
        h_n = gp.stack(hn, axis=0)
        if unbatched:
            h_n = gp.squeeze(h_n, axis=1)
        if not lstm:
            return out, h_n
        c_n = gp.stack(cn, axis=0)
        return out, (h_n, gp.squeeze(c_n, axis=1) if unbatched else c_n)

    def _run(self, x, layer, d, h, c, masks=None):
        w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
        if _dispatch.hooks.cast is not None:   # an autocast region (in some thread)
            # the states run in the low dtype, as torch's cells and its cuDNN layers (a float32
            # zero state made every step, and the outputs, float32)
            cell = {4: "lstm_cell", 3: "gru_cell"}.get(self._gates) or \
                f"rnn_{getattr(self, 'nonlinearity', 'tanh')}_cell"
            h, c = _dispatch.autocast(cell, h, c)
        xp = F.linear(x, w_ih, b_ih)  # every time step's input projection in one matmul
        steps = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
        ys = [None] * x.shape[0]
        w_hr = self._parameters.get("weight_hr" + f"_l{layer}" + ("_reverse" if d else ""))
        for t in steps:
            hn, cn = self._cell(xp[t], h, c, w_hh, b_hh)
            if w_hr is not None:   # LSTM's proj_size: h projected down, c kept
                hn = F.linear(hn, w_hr)
            if masks is not None:
                # a finished (or, going backwards, not yet started) sequence keeps its state:
                # the reverse direction starts at each sequence's own last step
                hn = gp.where(masks[t], hn, h)
                cn = None if c is None else gp.where(masks[t], cn, c)
            h, c = hn, cn
            ys[t] = h
        return gp.stack(ys, axis=0), h, c

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:   # where torch shows it
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


# torch's name for the multi-layer recurrent layers' base class (isinstance checks in
# weight-initialization loops); not meant to be built directly
RNNBase = _RNNBase


class LSTM(_RNNBase):
    """Long short-term memory; gates (i, f, g, o); returns (output, (h_n, c_n))."""

    _gates = 4

    def _cell(self, xt, h, c, w_hh, b_hh):
        g = xt + F.linear(h, w_hh, b_hh)
        hs = self.hidden_size
        i, f, gg, o = (g[:, k * hs:(k + 1) * hs] for k in range(4))
        c = F.sigmoid(f) * c + F.sigmoid(i) * gp.tanh(gg)
        return F.sigmoid(o) * gp.tanh(c), c


class GRU(_RNNBase):
    """Gated recurrent unit; gates (r, z, n); returns (output, h_n)."""

    _gates = 3

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None) -> None:
        # torch's GRU has no proj_size (an LSTM option)
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)

    def _cell(self, xt, h, c, w_hh, b_hh):
        gh = F.linear(h, w_hh, b_hh)
        hs = self.hidden_size
        xr, xz, xn = (xt[:, k * hs:(k + 1) * hs] for k in range(3))
        hr, hz, hn = (gh[:, k * hs:(k + 1) * hs] for k in range(3))
        r = F.sigmoid(xr + hr)
        z = F.sigmoid(xz + hz)
        n = gp.tanh(xn + r * hn)
        return (1.0 - z) * n + z * h, None
