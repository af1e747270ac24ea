"""lif_forward / lif_backward and alif_forward / alif_backward kernels of the Vulkan backend (the
contract's calls; docs/snn.md, "The fused path"; shader shaders/nn/lif.comp): one dispatch runs
all T steps of a layer, one invocation per neuron. The per-neuron inputs are packed into one
buffer and the results come back as views of one output buffer, so a kernel binds at most 4
buffers (every device allows that). Where the device allows 8 bindings (every one lif.comp's
SEP variant needs), the parameter rows are bound as they are, through their strides, with no
copies. float32 and float64.
"""
from __future__ import annotations

import math
import struct

from .kernels import assign, copy, full, new_buffer, slice_view
from .reductions import dispatch

RESETS = {"subtract": 0, "zero": 1, "none": 2}
SURROGATES = {"atan": 0, "fast_sigmoid": 1, "sigmoid": 2, "triangle": 3, "straight_through": 4}
_DTYPES = ("float32", "float64")
SEPARATE = True   # parameter rows bound one by one where the device allows (False: packed)


def _check(op: str, x) -> None:
    if x.dtype.name not in _DTYPES:
        raise NotImplementedError(f"{op}: dtype {x.dtype.name} is not supported on Vulkan device "
                                  f"{x.ctx.phys.name!r} (float32 and float64 are)")
    if x.size >= 2**31:
        raise ValueError(f"{op}: {x.size} elements exceed the Vulkan backend's 2**31 limit")


def _check_index(op: str, n: int) -> None:
    """The shader indexes its buffers with 32-bit ints: n elements must stay below 2**31."""
    if n >= 2**31:
        raise ValueError(f"{op}: {n} elements (outputs and trace) exceed the Vulkan backend's "
                         "2**31 limit")


def _flat(buf):
    """A contiguous buffer with buf's elements (buf itself when it already is one)."""
    return buf if buf.is_contiguous() else copy(buf)


def _grad_layout(gs) -> tuple:
    """The spikes' gradient (T, N) as lif.comp's MODE 1 reads it, and its GS layout: a
    broadcast row (strides (0, 1)) or value (0, 0), as a loss over the steps leaves it, is
    read in place (1, 2); anything else from a contiguous copy (0)."""
    if gs.strides[0] == 0 and gs.strides[1] in (0, 1):
        return gs, 1 + (gs.strides[1] == 0 and gs.shape[1] > 1)
    return _flat(gs), 0


def _pack(rows: list, n: int, like):
    """One (len(rows), n) buffer holding the (n,) rows: a single binding for the kernel."""
    out = new_buffer(like.ctx, (len(rows), n), like.dtype)
    for k, r in enumerate(rows):
        assign(slice_view(out, (k,)), r)
    return out


def _params(ctx, variant: str, bufs: list, offs: tuple, params: list, first: int):
    """The kernel's variant, bindings and offsets for ``params``: each its own binding from
    ``first`` (lif.comp's SEP: offset and stride in push-constant words 8 + 2k, 9 + 2k) where
    the device allows it, else one packed buffer (a copy per row)."""
    if SEPARATE and ctx.bindings >= first + len(params):   # (rows: (N,) views, any stride)
        words = [0] * 8
        for r in params:
            words += [r.offset, r.strides[0]]
        return variant.replace("lif_", "lifsep_"), bufs + params, offs, words
    packed = _pack(params, params[0].shape[0], bufs[1])
    return variant, bufs + [packed], offs + (packed.offset,), [0] * 8


def _rows(out, start: int, stop: int, N: int, shape: tuple):
    """Rows [start, stop) of a flat (rows * N,) output buffer as a view of ``shape``."""
    v = slice_view(out, (slice(start * N, stop * N, 1),))
    return type(v)(v.ctx, v.alloc, v.offset, shape, _strides(shape), v.dtype)


def _chunks(words: list) -> tuple:
    """Push-constant words as the rows of MAXD = 5 that ``dispatch`` lays out as one run."""
    return tuple(words[i:i + 5] for i in range(0, len(words), 5))


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


def _forward(x, params: list, neuron: int, k: int, reset: str, delay: bool, store: bool):
    """One forward dispatch: (spikes, mem, second state or None, trace or None); the trace is
    (2, T, N) (membrane, second state) when ``neuron`` carries one (lif.comp's NEURON)."""
    T, N = x.shape
    ext = int(neuron != 0)
    rows = T + 1 + ext + ((1 + ext) * T if store else 0)
    _check_index("lif_forward" if neuron < 2 else "alif_forward", rows * N)
    out = new_buffer(x.ctx, (rows * N,), x.dtype)
    if T == 0 or N == 0:
        assign(_rows(out, T, T + 1, N, (N,)), params[0])
        if ext:
            assign(_rows(out, T + 1, T + 2, N, (N,)), params[3])
    else:
        xs = _flat(x)
        variant, bufs, offs, words = _params(x.ctx, f"lif_{x.dtype.name}", [out, xs],
                                             (out.offset, xs.offset), params, 2)
        dispatch(x.ctx, variant,
                 (0, 1, RESETS[reset], int(bool(delay)), int(bool(store)), 0, 1, neuron),
                 bufs, N, N, offs, (T, k), _chunks(words))
    t0 = T + 1 + ext
    trace = None
    if store:
        trace = _rows(out, t0, t0 + (1 + ext) * T, N, (2, T, N) if ext else (T, N))
    return (_rows(out, 0, T, N, (T, N)), _rows(out, T, T + 1, N, (N,)),
            _rows(out, T + 1, T + 2, N, (N,)) if ext else None, trace)


def _backward(x, gs, trace, params: list, neuron: int, k: int, reset: str, delay: bool,
              surrogate: str, slope: float, detach: bool) -> tuple:
    """One backward dispatch: (g_x, g_mem0, g_beta, g_thr) and g_a0 for the adaptive neuron."""
    T, N = x.shape
    nout = 4 if neuron == 2 else 3
    _check_index("lif_backward" if neuron < 2 else "alif_backward",
                 max((T + nout) * N, trace.size))
    out = new_buffer(x.ctx, ((T + nout) * N,), x.dtype)
    if T == 0 or N == 0:
        assign(_rows(out, T, T + 1, N, (N,)), params[3])
        assign(_rows(out, T + 1, T + 3, N, (2 * N,)), full(x.ctx, (), 0, x.dtype))
        if neuron == 2:
            assign(_rows(out, T + 3, T + 4, N, (N,)), params[7])
    else:
        g, layout = _grad_layout(gs)
        tr = _flat(trace)
        variant, bufs, offs, words = _params(x.ctx, f"lif_{x.dtype.name}", [out, g, tr],
                                             (out.offset, g.offset, tr.offset), params, 3)
        consts = _consts(surrogate, float(slope), x.dtype.name)
        words[:len(consts)] = consts
        dispatch(x.ctx, variant,
                 (1, 1, RESETS[reset], int(bool(delay)), 1, SURROGATES[surrogate],
                  int(bool(detach)), neuron, layout),
                 bufs, N, N, offs, (T, k), _chunks(words))
    return tuple([_rows(out, 0, T, N, (T, N))]
                 + [_rows(out, T + j, T + j + 1, N, (N,)) for j in range(nout)])


def lif_forward(x, mem0, beta, thr, reset: str, delay: bool, store: bool, refractory: int = 0,
                ref0=None):
    """(T, N) currents -> (spikes (T, N), final membrane (N,), trace (T, N) or None); with
    ``refractory`` steps from counter ref0, the final counter too and a (2, T, N) trace."""
    _check("lif_forward", x)
    if refractory:
        spk, mem, ref, tr = _forward(x, [mem0, beta, thr, ref0], 1, refractory, reset, delay,
                                     store)
        return spk, mem, tr, ref
    spk, mem, _, tr = _forward(x, [mem0, beta, thr], 0, 0, reset, delay, store)
    return spk, mem, tr


def lif_backward(gs, gm, x, mem0, beta, thr, trace, reset: str, delay: bool, surrogate: str,
                 slope: float, detach_reset: bool = True, refractory: int = 0, ref0=None):
    """BPTT of lif_forward: (grad x (T, N), grad mem0, grad beta, grad thr (each (N,)));
    ``detach_reset=False`` differentiates the reset signal through the surrogate too."""
    _check("lif_backward", x)
    if trace is None:   # recompute: the forward again, its trace held only for this call
        trace = lif_forward(x, mem0, beta, thr, reset, delay, True, refractory, ref0)[2]
    params, neuron = [mem0, beta, thr, gm], 0
    if refractory:
        params, neuron = params + [ref0], 1
    return _backward(x, gs, trace, params, neuron, refractory, reset, delay, surrogate, slope,
                     detach_reset)


def alif_forward(x, mem0, a0, beta, rho, gamma, thr, reset: str, delay: bool, store: bool):
    """(T, N) currents -> (spikes, final membrane, final adaptation, trace (2, T, N) or None)."""
    _check("alif_forward", x)
    spk, mem, a, tr = _forward(x, [mem0, beta, thr, a0, rho, gamma], 2, 0, reset, delay, store)
    return spk, mem, a, tr


def alif_backward(gs, gm, ga, x, mem0, a0, beta, rho, gamma, thr, trace, reset: str, delay: bool,
                  surrogate: str, slope: float, detach_reset: bool):
    """BPTT of alif_forward: (grad x, grad mem0, grad a0, grad beta, grad thr)."""
    _check("alif_backward", x)
    if trace is None:
        trace = alif_forward(x, mem0, a0, beta, rho, gamma, thr, reset, delay, True)[3]
    gx, gm0, gb, gth, ga0 = _backward(x, gs, trace, [mem0, beta, thr, gm, a0, rho, gamma, ga], 2,
                                      0, reset, delay, surrogate, slope, detach_reset)
    return gx, gm0, ga0, gb, gth


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
                 "alif_forward": alif_forward, "alif_backward": alif_backward,
                 "leaky_integrate": leaky_integrate}
