"""plasticity_step of the Vulkan backend: STDP, Hebbian and Oja weight updates in one dispatch
(shaders/nn/plasticity.comp, one invocation per weight element; the equations:
grilly/array/plasticity.py). The per-step inputs are packed into one buffer and the new traces
come back in one output buffer, so the kernel binds 3 buffers. float32 and float64."""
from __future__ import annotations

import struct

from .kernels import assign, copy, new_buffer
from .reductions import dispatch
from .snn import _check, _rows

RULES = {"stdp": 0, "stdp_hard": 1, "stdp_soft": 2, "hebbian": 3, "oja": 4}


def _words(params: tuple, dtype_name: str) -> list:
    """The 6 rule constants as push-constant words (float bits; two words each for float64)."""
    if dtype_name == "float32":
        return list(struct.unpack("<6i", struct.pack("<6f", *params)))
    return list(struct.unpack("<12i", struct.pack("<6d", *params)))


def plasticity_step(w, pre, post, ptr, qtr, pout, qout, rule: str, params: tuple) -> None:
    """Update w (P, Q) in place by one step of ``rule``; STDP writes its new traces."""
    _check("plasticity_step", w)
    P, Q = w.shape
    B = pre.shape[0]
    if P * Q == 0:
        return
    stdp = RULES[rule] <= 2
    parts = [pre, post] + ([pre if ptr is None else ptr, post if qtr is None else qtr]
                           if stdp else [])
    packed = new_buffer(w.ctx, (sum(p.size for p in parts),), w.dtype)
    at = 0
    for part in parts:   # [x][y][u_old][v_old], each contiguous
        assign(_rows(packed, at, at + part.size, 1, part.shape), part)
        at += part.size
    out = new_buffer(w.ctx, (B * (P + Q) if stdp else 1,), w.dtype)
    wc = w if w.is_contiguous() else copy(w)
    words = _words(params, w.dtype.name)
    dispatch(w.ctx, f"plasticity_{w.dtype.name}", (0, 1, RULES[rule]), [wc, out, packed],
             P * Q, P * Q, (wc.offset, out.offset, packed.offset),
             (B, P, Q, int(ptr is not None), int(qtr is not None)),
             (words[:5], words[5:10], words[10:]), writes=2)
    if wc is not w:
        assign(w, wc)
    if stdp:
        assign(pout, _rows(out, 0, B * Q, 1, (B, Q)))
        assign(qout, _rows(out, B * Q, B * (P + Q), 1, (B, P)))


KERNELS = {"plasticity_step": plasticity_step}
