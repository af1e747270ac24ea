"""lif_forward / lif_backward kernels of the Vulkan backend (the contract's calls; docs/snn.md,
"The fused path"; shader shaders/nn/lif.comp): one dispatch runs all T steps of a layer, one
invocation per neuron. The per-neuron inputs are packed into one buffer and the results come back
as views of one output buffer, so a kernel binds at most 4 buffers (every device allows that).
float32 and float64.
"""
from __future__ import annotations

import math
import struct

from .kernels import assign, copy, full, new_buffer, slice_view
from .reductions import dispatch

RESETS = {"subtract": 0, "zero": 1, "none": 2}
SURROGATES = {"atan": 0, "fast_sigmoid": 1, "sigmoid": 2, "triangle": 3, "straight_through": 4}
_DTYPES = ("float32", "float64")


def _check(op: str, x) -> None:
    if x.dtype.name not in _DTYPES:
        raise NotImplementedError(f"{op}: dtype {x.dtype.name} is not supported on Vulkan device "
                                  f"{x.ctx.phys.name!r} (float32 and float64 are)")
    if x.size >= 2**31:
        raise ValueError(f"{op}: {x.size} elements exceed the Vulkan backend's 2**31 limit")


def _flat(buf):
    """A contiguous buffer with buf's elements (buf itself when it already is one)."""
    return buf if buf.is_contiguous() else copy(buf)


def _pack(rows: list, n: int, like):
    """One (len(rows), n) buffer holding the (n,) rows: a single binding for the kernel."""
    out = new_buffer(like.ctx, (len(rows), n), like.dtype)
    for k, r in enumerate(rows):
        assign(slice_view(out, (k,)), r)
    return out


def _rows(out, start: int, stop: int, N: int, shape: tuple):
    """Rows [start, stop) of a flat (rows * N,) output buffer as a view of ``shape``."""
    v = slice_view(out, (slice(start * N, stop * N, 1),))
    return type(v)(v.ctx, v.alloc, v.offset, shape, _strides(shape), v.dtype)


def _strides(shape: tuple) -> tuple:
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


def _consts(surrogate: str, a: float, dtype_name: str) -> list:
    """slope, c1, c2 (atan: pi/2 alpha and alpha/2; sigmoid: slope/2) as push-constant words."""
    c1 = math.pi / 2 * a if surrogate == "atan" else 0.0
    vals = (a, c1, a / 2)
    if dtype_name == "float32":
        return list(struct.unpack("<3i", struct.pack("<3f", *vals)))
    return list(struct.unpack("<6i", struct.pack("<3d", *vals)))


def lif_forward(x, mem0, beta, thr, reset: str, delay: bool, store: bool):
    """(T, N) currents -> (spikes (T, N), final membrane (N,), trace (T, N) or None)."""
    _check("lif_forward", x)
    T, N = x.shape
    rows = 2 * T + 1 if store else T + 1
    out = new_buffer(x.ctx, (rows * N,), x.dtype)
    if T == 0 or N == 0:
        assign(_rows(out, T, T + 1, N, (N,)), mem0)
    else:
        xs = _flat(x)
        params = _pack([mem0, beta, thr], N, x)
        dispatch(x.ctx, f"lif_{x.dtype.name}",
                 (0, 1, RESETS[reset], int(bool(delay)), int(bool(store)), 0),
                 [out, xs, params], N, N, (out.offset, xs.offset, params.offset), (T,))
    return (_rows(out, 0, T, N, (T, N)), _rows(out, T, T + 1, N, (N,)),
            _rows(out, T + 1, 2 * T + 1, N, (T, N)) if store else None)


def lif_backward(gs, gm, x, mem0, beta, thr, trace, reset: str, delay: bool, surrogate: str,
                 slope: float, detach_reset: bool = True):
    """BPTT of lif_forward: (grad x (T, N), grad mem0, grad beta, grad thr (each (N,)));
    ``detach_reset=False`` differentiates the reset signal through the surrogate too."""
    _check("lif_backward", x)
    T, N = x.shape
    if trace is None:   # recompute: the forward again, its trace held only for this call
        trace = lif_forward(x, mem0, beta, thr, reset, delay, True)[2]
    out = new_buffer(x.ctx, ((T + 3) * N,), x.dtype)
    if T == 0 or N == 0:
        assign(_rows(out, T, T + 1, N, (N,)), gm)
        assign(_rows(out, T + 1, T + 3, N, (2 * N,)), full(x.ctx, (), 0, x.dtype))
    else:
        g, tr = _flat(gs), _flat(trace)
        params = _pack([mem0, beta, thr, gm], N, x)
        consts = _consts(surrogate, float(slope), x.dtype.name)
        dispatch(x.ctx, f"lif_{x.dtype.name}",
                 (1, 1, RESETS[reset], int(bool(delay)), 1, SURROGATES[surrogate],
                  int(bool(detach_reset))),
                 [out, g, tr, params], N, N, (out.offset, g.offset, tr.offset, params.offset),
                 (T,), (consts[:5], consts[5:]))   # rows of MAXD = 5 words, read as one run
    return (_rows(out, 0, T, N, (T, N)), _rows(out, T, T + 1, N, (N,)),
            _rows(out, T + 1, T + 2, N, (N,)), _rows(out, T + 2, T + 3, N, (N,)))


def leaky_integrate(x, s0, alpha, reverse: bool):
    """out[t] = alpha out[t -/+ 1] + x[t] over the T steps of x (T, N), from s0
    (shaders/nn/leaky.comp, one invocation per neuron)."""
    _check("leaky_integrate", x)
    T, N = x.shape
    out = new_buffer(x.ctx, (T, N), x.dtype)
    if T and N:
        xs = _flat(x)
        params = _pack([s0, alpha], N, x)
        dispatch(x.ctx, f"leaky_{x.dtype.name}", (0, 1, int(bool(reverse))), [out, xs, params], N, N,
                 (out.offset, xs.offset, params.offset), (T,))
    return out


KERNELS: dict = {"lif_forward": lif_forward, "lif_backward": lif_backward,
                 "leaky_integrate": leaky_integrate}
