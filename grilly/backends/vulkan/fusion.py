"""Elementwise fusion: consecutive elementwise ops of one 32-bit dtype over contiguous arrays
of one size are recorded as one dispatch of shaders/elementwise/fused.comp (a small
interpreter), not one dispatch each.

An op joins the open *run* as an instruction; its output buffer is allocated as usual. The run
is emitted (recorded as one dispatch) before anything else is recorded and at every sync point,
so the order of work is unchanged. A thread of the fused kernel takes one element through every
instruction in order, so it computes what the ops one by one would; a result later ops use is
taken from a register, and a result is stored only if an array still holds its buffer when the
run is emitted (the buffer of one no array holds went back to the pool: nothing can read it).
Recording an op this way is a few list appends instead of five Vulkan calls, which is what
bounds small-array work (docs/vulkan.md, "Elementwise fusion").
"""
from __future__ import annotations

import os
import struct
import weakref

# elementwise variant -> fused variant
FUSED = {"ew_float32": "fuse_float32", "ew_float64": "fuse_float64", "ew_int32": "fuse_int32",
         "ew_uint32": "fuse_uint32"}
_WIDE = {"ew_float64"}   # an immediate takes two 32-bit words
# elements: the fused kernel's GPU time beat the one-op kernels' up to 2^22 on the H100 (13-op
# chain: 44 vs 70 µs at 2^20, 145 vs 195 µs at 2^22); larger ops are dispatched one by one
FUSE_MAX = 1 << 22
NB = 8               # buffers of the fused kernel (runtime.FUSED_BINDINGS)
NI = 16              # instructions per run
NM = 6               # 32-bit words of immediates (constants) per run
# operand codes: the result of instruction j (j), element i of binding k (BIND + k), the one
# element of binding k (BCAST + k), the immediate at word m (IMM + m)
BIND, BCAST, IMM = 16, 24, 32
STORE = 1 << 23
_PC = struct.Struct(f"<II{NB}i{NI}I{NM}I")
_ZEROS = (0,) * NI


def wanted(phys) -> bool:
    """Whether a device fuses: GPUs do; CPU implementations (lavapipe) do not, since they run
    every case of the kernel's op switch on every element (27x slower than one kernel per op).
    GRILLY_VULKAN_FUSION=1 or 0 decides instead."""
    if phys.max_stage_buffers < NB:
        return False
    env = os.environ.get("GRILLY_VULKAN_FUSION")
    if env:
        return env != "0"
    return phys.type != 4   # VK_PHYSICAL_DEVICE_TYPE_CPU


def enable(ctx, on: bool) -> None:
    """Turn fusion on or off for a running device (tests run lavapipe both ways)."""
    with ctx.lock:
        if ctx.recorder.pending is not None:
            ctx.recorder.pending.emit()
        ctx.fuser = ctx.new_fuser() if on else None


class Fuser:
    """The open run of one device: instructions, input bindings, results' buffers (weakly)."""

    def __init__(self, ctx, dispatch_flat):
        self.ctx = ctx
        self.rec = ctx.recorder
        self._dispatch_flat = dispatch_flat
        self.variant = None
        self.n = 0
        self.first = None   # (op, bufs, flat) of a lone op: a run starts when a second joins
        self._reset()

    def _reset(self) -> None:
        self.code: list[int] = []       # instructions: op | a << 8 | b << 14
        self.outs: list = []            # weakref to each instruction's output allocation
        self.out_offs: list[int] = []
        self.inputs: list = []          # allocation bound at binding NB - 1 - k (held)
        self.offs = [0] * NB
        self.bound: dict = {}           # (id(alloc), offset, contiguous) -> binding
        self.input_ids: set = set()
        self.made: dict = {}            # id(alloc) -> (instruction, weakref, offset)
        self.imms: list[int] = []       # constants' bits
        self.words = 1                  # 32-bit words per immediate

    def add(self, variant: str, op: int, bufs: list, flat: tuple, n: int) -> None:
        """Append the elementwise op writing ``bufs[0]`` from ``bufs[1:]`` to the open run, after
        emitting it when the op cannot join (another size or dtype, a full run, or buffers
        whose reads or writes would not be per element)."""
        if self.first is not None:
            if n == self.n and variant == self.variant:
                first, self.first = self.first, None
                self.words = 2 if variant in _WIDE else 1
                self._join(*first)   # the lone op becomes instruction 0
                if self._join(op, bufs, flat):
                    return
                self._reset()
                self.first = first   # the op cannot join: the lone op stays lone
            self.emit()
        elif self.code:
            if (n == self.n and variant == self.variant and len(self.code) < NI
                    and self._join(op, bufs, flat)):
                return
            self.emit()
        # a lone op costs no bookkeeping: most ops of a training step do not fuse
        self.variant, self.n, self.first = variant, n, (op, bufs, flat)
        self.rec.pending = self

    def _join(self, op: int, bufs: list, flat: tuple) -> bool:
        """Add the instruction if its operands fit this run; False leaves the run unchanged."""
        out = bufs[0].alloc
        if id(out) in self.input_ids:
            return False   # written in place: a broadcast read of it elsewhere would see the write
        made, bound = self.made, self.bound
        srcs = []
        new = []   # (key, binding, allocation) of inputs this run does not bind yet
        for b, contiguous in zip(bufs[1:], flat[1:]):
            a = b.alloc
            m = made.get(id(a))
            if m is not None and m[1]() is a:
                if not contiguous or b.offset != m[2]:
                    return False   # another view of a result: it must be stored first
                srcs.append(m[0])
                continue
            if not contiguous and a.const is not None:
                c, imms, w = a.const, self.imms, self.words
                if c in imms:
                    srcs.append(IMM + w * imms.index(c))
                    continue
                if (len(imms) + 1) * w <= NM:
                    imms.append(c)   # (kept if the op cannot join: harmless, unused)
                    srcs.append(IMM + w * (len(imms) - 1))
                    continue
            key = (id(a), b.offset, contiguous)
            k = bound.get(key)
            if k is None:
                for nk, nb, _ in new:
                    if nk == key:
                        k = nb
                        break
                else:
                    k = NB - 1 - len(self.inputs) - len(new)
                    new.append((key, k, a))
            srcs.append((BIND if contiguous else BCAST) + k)
        used = len(self.inputs) + len(new) + 1
        if used + len(self.outs) > NB and used + self._live() > NB:
            return False
        for key, k, a in new:
            bound[key] = k
            self.inputs.append(a)
            self.input_ids.add(id(a))
            self.offs[k] = key[1]
        j = len(self.code)
        self.code.append(op | srcs[0] << 8 | (srcs[1] << 14 if len(srcs) > 1 else 0))
        ref = weakref.ref(out)
        self.outs.append(ref)
        self.out_offs.append(bufs[0].offset)
        made[id(out)] = (j, ref, bufs[0].offset)
        return True

    def _live(self) -> int:
        return sum(1 for r in self.outs if r() is not None)

    def emit(self) -> None:
        """Record the open run as one dispatch (or none, when no array holds a result)."""
        rec = self.rec
        rec.pending = None
        first = self.first
        if first is not None:
            self.first = None
            op, bufs, flat = first
            self._dispatch_flat(self.ctx, self.variant, op, [b.alloc for b in bufs],
                                [b.offset for b in bufs], flat, self.n)
            return
        code, n = self.code, self.n
        live = [(j, a) for j, r in enumerate(self.outs) if (a := r()) is not None]
        if not live:
            self._reset()
            return
        code = code[:live[-1][0] + 1]   # instructions after the last stored result are dead
        offs = self.offs
        for k, (j, a) in enumerate(live):
            code[j] |= k << 20 | STORE
            offs[k] = self.out_offs[j]
        vec4 = n & 3 == 0 and all(o & 3 == 0 for o in offs[:len(live)]) and all(
            key[1] & 3 == 0 for key in self.bound if key[2])
        allocs = [a for _, a in live]
        allocs += [allocs[0]] * (NB - len(allocs) - len(self.inputs)) + self.inputs[::-1]
        items = n >> 2 if vec4 else n
        spec = (0, 1, int(vec4))
        variant = FUSED[self.variant]
        pipe = self.ctx.pipelines.get((variant, spec)) or self.ctx.pipeline(variant, spec)
        imms = self.imms
        if self.words == 2:
            imms = [w for c in imms for w in (c & 0xFFFFFFFF, c >> 32)]
        pc = _PC.pack(items, len(code), *offs, *code, *_ZEROS[:NI - len(code)], *imms,
                      *_ZEROS[:NM - len(imms)])
        self._reset()
        rec.dispatch_allocs(pipe, allocs, pc, items, len(live))
