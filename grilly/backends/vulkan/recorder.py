"""Lazily recorded command buffers: dispatches accumulate in a command buffer that is submitted
without waiting once it holds enough work (so the GPU runs while Python records what follows) or
many dispatches, and at a sync point (``to_host``, ``synchronize``), which also waits for all of it.
A small ring of command buffers, each with its fence and the allocations its work uses, lets a few
submissions be in flight at once."""
from __future__ import annotations

import functools
import operator
import os
import time
import weakref

from .runtime import MAX_BINDINGS, check, ffi, lib

WG = 256
# How long a sync polls the fence before a blocking wait. A blocking wait sleeps: after a long
# one the host thread wakes cold (its next Python runs 1.5-2x slower for a few hundred
# microseconds: on the H200's host an SNN layer's backward took 143 us to record a sum after
# its 6 ms forward's sync with 2 ms of polling, 79 us with 50), so a GPU is polled as CUDA's
# default schedule spins while it has cores to spare. A CPU implementation (lavapipe) runs
# the work on this machine's cores, which polling would take from it.
SPIN_S = 0.002
SPIN_GPU_S = float(os.environ.get("GRILLY_VULKAN_SPIN_MS", "50")) / 1e3
BATCH_MAX = 256   # dispatches per submit; bounds the memory pending work keeps alive
SUBMIT_WORK = 1 << 20   # items recorded after which the batch is submitted (GPU starts on it)
# ... but only while the GPU has nothing left to run (the last submission's fence signalled): a
# busy GPU gains nothing from another submission now, and each costs host time (a submit, and
# a wait for a ring slot once RING - 1 are in flight); the batch goes at the first dispatch
# after the GPU runs dry
SUBMIT_WHEN_IDLE = True
# a batch this large goes even to a busy GPU: memory its work uses is reused only once the
# batch completes, so what an unsubmitted batch pins stays bounded (H200, eager steps against a
# submit per 2^20 items: the encoder 26 -> 18 submits, peak the same 757 MB; cnn32 27 -> 12,
# peak 1039 -> 1129 MB, 2^26 1113, 2^22 1071 with 22 submits; lavapipe, whose GPU is always
# busy, an encoder layer of 32 x 128: 421 -> 534 MB, 658 with no cap)
SUBMIT_WORK_BUSY = 1 << 24
# command buffers: at most RING - 1 submissions in flight while recording (H200, eager steps:
# 8 against 4 made cnn32's 4.12 -> 3.78 ms, the encoder's the same; 16 slowed the encoder)
RING = 8
# GRILLY_PROFILE=1: a GPU timestamp after each dispatch; per kernel variant, the count and the
# GPU time (from the previous timestamp of its command buffer to its own: serialized work)
PROFILE = os.environ.get("GRILLY_PROFILE", "").strip() not in ("", "0")

_DESC = operator.attrgetter("desc")   # an Allocation's VkDescriptorBufferInfo fields
_ALLOC = operator.attrgetter("alloc")   # a Buffer's Allocation
_BIND_COMPUTE = 1   # VK_PIPELINE_BIND_POINT_COMPUTE
_STAGE_COMPUTE = 0x20   # VK_SHADER_STAGE_COMPUTE_BIT

# counts submissions and transfers; tests use these to prove data stays on the device (host
# round trips of the array layer's host path: grilly.device_stats(device))
stats = {"submits": 0, "dispatches": 0, "uploads": 0, "downloads": 0, "barriers": 0,
         "copies": 0}


class Recorder:
    """Records dispatches into a ring of command buffers (``_Slot``), submits them, and tracks
    the hazards between dispatches and the allocations each submission keeps alive."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.spin_s = SPIN_S if ctx.phys.type == 4 else SPIN_GPU_S   # 4: a CPU device
        # this device's counts (gp.device_stats): dispatches, submits, buffer-to-buffer copies
        self.n_dispatches = self.n_submits = self.n_copies = 0
        dev = ctx.device
        pinfo = ffi.new("VkCommandPoolCreateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
            "flags": lib.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            "queueFamilyIndex": ctx.phys.queue_family})
        pool = ffi.new("VkCommandPool*")
        check(lib.vkCreateCommandPool(dev, pinfo, ffi.NULL, pool), "vkCreateCommandPool")
        self.cmd_pool = pool[0]
        ainfo = ffi.new("VkCommandBufferAllocateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, "commandPool": self.cmd_pool,
            "level": lib.VK_COMMAND_BUFFER_LEVEL_PRIMARY, "commandBufferCount": RING})
        cmds = ffi.new("VkCommandBuffer[]", RING)
        check(lib.vkAllocateCommandBuffers(dev, ainfo, cmds), "vkAllocateCommandBuffers")
        finfo = ffi.new("VkFenceCreateInfo*", {"sType": lib.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO})
        self._free = [_Slot(dev, cmds[i], finfo) for i in range(RING)]
        self.profile = None           # kernel variant -> [count, GPU seconds] when profiling
        if PROFILE:
            self._start_profiling()
        self._inflight: list = []     # submitted slots, oldest first
        self._cur = None              # the slot being recorded
        # structs reused by every dispatch: building one through cffi costs microseconds
        self._begin = ffi.new("VkCommandBufferBeginInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
            "flags": lib.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT})
        self._infos = ffi.new("VkDescriptorBufferInfo[]", ctx.bindings)
        self._writes = ffi.new("VkWriteDescriptorSet[]", ctx.bindings)
        for i in range(ctx.bindings):
            w = self._writes[i]
            w.sType = lib.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
            w.dstBinding = i
            w.descriptorCount = 1
            w.descriptorType = lib.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
            w.pBufferInfo = self._infos + i
        self._barrier = ffi.new("VkMemoryBarrier*", {
            "sType": lib.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            "srcAccessMask": lib.VK_ACCESS_SHADER_WRITE_BIT | lib.VK_ACCESS_TRANSFER_WRITE_BIT,
            "dstAccessMask": (lib.VK_ACCESS_SHADER_READ_BIT | lib.VK_ACCESS_SHADER_WRITE_BIT
                              | lib.VK_ACCESS_TRANSFER_READ_BIT | lib.VK_ACCESS_TRANSFER_WRITE_BIT)})
        self._host_barrier = ffi.new("VkMemoryBarrier*", {
            "sType": lib.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            "srcAccessMask": lib.VK_ACCESS_SHADER_WRITE_BIT | lib.VK_ACCESS_TRANSFER_WRITE_BIT,
            "dstAccessMask": lib.VK_ACCESS_HOST_READ_BIT})
        self._region = ffi.new("VkBufferCopy*")
        self._stages = lib.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | lib.VK_PIPELINE_STAGE_TRANSFER_BIT
        self.recording = False
        self._bound = None            # pipeline bound in the command buffer being recorded
        self._pc = None               # push constants last recorded in it
        # the allocations the descriptor infos describe (a tuple: what the last dispatch bound),
        # and at the bindings from MAX_BINDINGS on, the last one each held (held until a sync)
        self._slots = ()
        self._high = [None] * (ctx.bindings - MAX_BINDINGS)
        # allocations -> those bound at bindings 0, 1, ...: padded to MAX_BINDINGS with the
        # first one (dispatch_allocs); per count of allocations, (getter, bindings pushed)
        self._pads = [(operator.itemgetter(*[i if i < k else 0
                                             for i in range(max(k, MAX_BINDINGS))]),
                       max(k, MAX_BINDINGS)) for k in range(ctx.bindings + 1)]
        self.pending = None           # an open fused run (fusion.Fuser), emitted before other work
        self.count = 0
        self.work = 0                 # items dispatched into the command buffer being recorded
        self.cmd = None
        # vkCmd* functions with the command buffer being recorded, and their other fixed
        # arguments, bound (_use): every dispatch records through them
        self._cmd_bind = self._cmd_push = self._cmd_pc = self._cmd_dispatch = None
        self._cmd_barrier = None
        self.keep: list = []          # allocations the command buffer being recorded uses
        self._written: set = set()    # allocations written since the last barrier
        self._read: set = set()
        self.max_groups = min(ctx.phys.max_groups, 65535)
        self._fence_status = functools.partial(lib.vkGetFenceStatus, ctx.device)   # (_gpu_idle)
        self.capturing = None         # the Capture being recorded (begin_capture), else None
        # (batch before, Capture) of a run_capture whose after-work is recording: the next
        # submission submits them with it, in that order
        self._held = None
        self._dead: list = []         # (command buffer array, fence) of dropped Captures
        # submitted Captures not yet waited for -> what to wait on: the Capture's own fence, or
        # the slot it rode with (Recorder.run_capture); the dict holds them alive meanwhile
        self._captures_inflight: dict = {}

    def _start(self) -> None:
        slot = self._free.pop() if self._free else self._retire(self._inflight.pop(0))
        # resets happen here, off the sync path: a reader gets its data without waiting for them
        # (vkBeginCommandBuffer resets the buffer itself: its pool allows per-buffer resets)
        lib.vkResetFences(self.ctx.device, 1, slot.fence)
        check(lib.vkBeginCommandBuffer(slot.cmd, self._begin), "vkBeginCommandBuffer")
        self._cur, self.keep = slot, slot.keep
        self._use(slot)
        if self.profile is not None:
            lib.vkCmdResetQueryPool(slot.cmd, self._qpool, slot.qbase, _QMAX + 1)
            lib.vkCmdWriteTimestamp(slot.cmd, _BOTTOM, self._qpool, slot.qbase)
            slot.names = []
        self._bound = self._pc = None
        self.recording = True

    def _use(self, slot: "_Slot") -> None:
        """Record into ``slot``'s command buffer from here: the vkCmd* calls every dispatch
        makes bound to it and to their other fixed arguments (functools.partial, in C: a
        dispatch then loads a few arguments per call, not up to ten), made once per slot."""
        b = slot.binders
        if b is None:
            cmd, p, ctx = slot.cmd, functools.partial, self.ctx
            b = slot.binders = (
                p(lib.vkCmdBindPipeline, cmd, _BIND_COMPUTE),
                p(ctx.push_descriptors, cmd, _BIND_COMPUTE, ctx.layout, 0),
                p(lib.vkCmdPushConstants, cmd, ctx.layout, _STAGE_COMPUTE, 0),
                p(lib.vkCmdDispatch, cmd),
                p(lib.vkCmdPipelineBarrier, cmd, self._stages, self._stages, 0, 1,
                  self._barrier, 0, ffi.NULL, 0, ffi.NULL))
        self.cmd = slot.cmd
        self._cmd_bind, self._cmd_push, self._cmd_pc, self._cmd_dispatch, self._cmd_barrier = b

    def _retire(self, slot: "_Slot") -> "_Slot":
        """Wait for a submitted slot, release what its work kept alive, make it reusable."""
        self._wait(slot)
        if slot.rider is not None:   # a capture submitted with it is done too
            if self._captures_inflight.get(slot.rider) is slot:
                del self._captures_inflight[slot.rider]
            slot.rider = None
        slot.keep.clear()
        if slot.names:
            self._read_timestamps(slot)
        first = slot.companion
        if first is not None:   # submitted before it in the same vkQueueSubmit: done too
            slot.companion = None
            first.keep.clear()
            if first.names:
                self._read_timestamps(first)
            self._free.append(first)
        return slot

    def dispatch(self, pipeline, bufs: list, pc: bytes, n: int, writes: int = 1) -> None:
        """Record one dispatch of ``pipeline`` over ``n`` items; ``bufs[:writes]`` are written."""
        self.dispatch_allocs(pipeline, list(map(_ALLOC, bufs)), pc, n, writes)

    def dispatch_allocs(self, pipeline, allocs: list, pc: bytes, n: int, writes: int = 1) -> None:
        """``dispatch`` with the allocations bound at bindings 0, 1, ... given directly."""
        if self.pending is not None:
            self.pending.emit()   # an open fused run goes first: the order of work stays
        if not self.recording:
            self._start()
        written = self._written
        read = self._read
        # (set.isdisjoint walks the list in C: every dispatch checks its hazards)
        if not written.isdisjoint(allocs) or (allocs[0] in read if writes == 1
                                              else not read.isdisjoint(allocs[:writes])):
            # (_barrier_all, inlined: most dispatches of an eager step follow a hazard)
            self._cmd_barrier()
            stats["barriers"] += 1
            written.clear()
            read.clear()
        if writes == 1:
            written.add(allocs[0])
            read.update(allocs)   # (the written one too: harmless, it is in ``written`` anyway)
        else:
            written.update(allocs[:writes])
            read.update(allocs[writes:])
        self.keep += allocs
        if pipeline is not self._bound:
            self._cmd_bind(pipeline)
            self._bound = pipeline
        # unused bindings repeat the first buffer: every shader declares (and may reach in a
        # branch its push constants rule out) MAX_BINDINGS buffers, and a binding a pipeline
        # statically uses must hold a valid descriptor
        pad, nb = self._pads[len(allocs)]
        bound = pad(allocs)
        if bound != self._slots:   # (identity compares, in C: Allocation has no __eq__)
            # the cffi structs keep their fields: written only when a buffer changed, in one
            # C-level slice assignment of each allocation's (buffer, offset, range)
            self._slots = bound
            self._infos[0:nb] = map(_DESC, bound)
            if nb > MAX_BINDINGS:
                self._high[:nb - MAX_BINDINGS] = bound[MAX_BINDINGS:]
        self._cmd_push(nb, self._writes)
        if pc != self._pc:
            # push constants survive pipeline binds (one layout): same-shaped ops reuse them
            self._cmd_pc(len(pc), pc)
            self._pc = pc
        groups = -(-n // WG)
        self._cmd_dispatch(groups if groups < self.max_groups else self.max_groups, 1, 1)
        if self.profile is not None and self.capturing is None:
            self._timestamp(self._pipeline_name(pipeline))
        stats["dispatches"] += 1
        self.n_dispatches += 1
        self.count += 1
        self.work += n
        if (self.count >= BATCH_MAX or self.work >= SUBMIT_WORK and (
                self.work >= SUBMIT_WORK_BUSY or self._gpu_idle())) and self.capturing is None:
            self.submit()

    def _timestamp(self, name: str) -> None:
        """GRILLY_PROFILE: a GPU timestamp after the command just recorded, named ``name``."""
        names = self._cur.names
        if len(names) < _QMAX:
            lib.vkCmdWriteTimestamp(self.cmd, _BOTTOM, self._qpool,
                                    self._cur.qbase + 1 + len(names))
            names.append(name)

    def dispatch_reaching(self, pipeline, allocs: list, pc: bytes, n: int, writes: int,
                          reached_w: list, reached_r: list) -> None:
        """``dispatch_allocs`` for a shader that also reaches memory by address (vulkan/
        addresses.py): ``reached_w`` written, ``reached_r`` read. They are ordered against
        other work and kept alive as bound allocations are."""
        if self.pending is not None:
            self.pending.emit()
        if not self.recording:
            self._start()
        written, read = self._written, self._read
        if (any(a in written for a in reached_w) or any(a in written for a in reached_r)
                or any(a in read for a in reached_w)):
            self._barrier_all()
        # kept by this batch (dispatch_allocs may submit it); marked after it, since a barrier
        # it records for the bound allocations clears the hazard sets
        self.keep += reached_w
        self.keep += reached_r
        self.dispatch_allocs(pipeline, allocs, pc, n, writes)
        self._written.update(reached_w)
        self._read.update(reached_r)

    def _gpu_idle(self) -> bool:
        """Whether every submission has finished (submissions run in order: the last one's
        fence tells), or SUBMIT_WHEN_IDLE is off."""
        if not SUBMIT_WHEN_IDLE or not self._inflight:
            return True
        return self._fence_status(self._inflight[-1].fence[0]) == 0

    def references(self, a) -> int:
        """How many references to allocation ``a`` are this recorder's own bookkeeping (no
        holder of its memory: grilly.backends.vulkan.ownership)."""
        n = (self.keep.count(a) + self._slots.count(a) + self._high.count(a) + (a in self._written)
             + (a in self._read))
        for slot in self._inflight:
            n += slot.keep.count(a)
            if slot.companion is not None:
                n += slot.companion.keep.count(a)
        return n

    def _barrier_all(self) -> None:
        """Order everything recorded (and submitted) so far before what follows."""
        self._cmd_barrier()   # (vkCmdPipelineBarrier: shader and transfer writes before all)
        stats["barriers"] += 1
        self._written.clear()
        self._read.clear()

    def copy(self, src, src_offset: int, dst_buffer, nbytes: int) -> None:
        """Record a transfer of ``nbytes`` from allocation ``src`` (at byte ``src_offset`` of its
        VkBuffer) to the start of ``dst_buffer`` (a staging buffer no dispatch touches)."""
        if self.pending is not None:
            self.pending.emit()
        if not self.recording:
            self._start()
        if src in self._written:
            self._barrier_all()
        self._read.add(src)
        self.keep.append(src)
        region = self._region
        region.srcOffset, region.dstOffset, region.size = src_offset, 0, nbytes
        lib.vkCmdCopyBuffer(self.cmd, src.chunk.buffer, dst_buffer, 1, region)
        self.count += 1

    def copy_allocs(self, dst, dst_offset: int, src, src_offset: int, nbytes: int) -> None:
        """Record a transfer of ``nbytes`` from allocation ``src`` to allocation ``dst`` (byte
        offsets from each one's start; the ranges must not overlap): a contiguous copy as one
        vkCmdCopyBuffer, about a third of a copy shader's host work (a replay's inputs and
        outputs are such copies), ordered against dispatches as a dispatch writing ``dst``."""
        if self.pending is not None:
            self.pending.emit()
        if not self.recording:
            self._start()
        written, read = self._written, self._read
        if dst in written or src in written or dst in read:
            self._barrier_all()
        written.add(dst)
        read.add(src)
        keep = self.keep
        keep.append(dst)
        keep.append(src)
        region = self._region
        region.srcOffset = src.offset + src_offset
        region.dstOffset = dst.offset + dst_offset
        region.size = nbytes
        lib.vkCmdCopyBuffer(self.cmd, src.chunk.buffer, dst.chunk.buffer, 1, region)
        if self.profile is not None and self.capturing is None:
            self._timestamp("copy_buffer")
        stats["copies"] += 1
        self.n_copies += 1
        self.count += 1
        if self.count >= BATCH_MAX and self.capturing is None:
            self.submit()

    def _wait(self, slot: "_Slot") -> None:
        """Wait for a slot's fence: poll first (a blocking wait sleeps in the driver and wakes
        tens of microseconds late, longer than a small batch takes), then block."""
        dev, fence = self.ctx.device, slot.fence[0]
        status = lib.vkGetFenceStatus
        end = time.perf_counter() + self.spin_s
        while time.perf_counter() < end:
            if status(dev, fence) == 0:
                return
        check(lib.vkWaitForFences(dev, 1, slot.fence, 1, 2**64 - 1), "vkWaitForFences")

    def submit(self) -> None:
        """Submit what was recorded without waiting; recording goes on in another buffer."""
        if self.capturing is not None:
            raise RuntimeError("vulkan: a sync or a transfer inside a captured graph (a kernel "
                               "that reads the device on the host cannot be captured)")
        if self.pending is not None:
            self.pending.emit()
        held = self._held
        if held is not None:   # a captured graph's run, then what was recorded after it
            self._held = None
            self._submit_run(held[0], held[1], self._close() if self.recording else None)
            return
        if not self.recording:
            return
        slot = self._close()
        check(lib.vkQueueSubmit(self.ctx.queue, 1, slot.submit, slot.fence[0]), "vkQueueSubmit")
        stats["submits"] += 1
        self.n_submits += 1
        self._inflight.append(slot)

    def _close(self) -> "_Slot":
        """End the command buffer being recorded (for a submit) and return its slot."""
        slot = self._cur
        # every submission ends with a host-visibility barrier, so a later sync needs nothing more
        lib.vkCmdPipelineBarrier(slot.cmd, self._stages, lib.VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                 self._host_barrier, 0, ffi.NULL, 0, ffi.NULL)
        check(lib.vkEndCommandBuffer(slot.cmd), "vkEndCommandBuffer")
        self.recording = False
        self._cur = self.cmd = None
        self.keep = []
        self.count = self.work = 0
        return slot

    def retire_oldest(self) -> bool:
        """Wait for the oldest submitted batch and release what it kept alive; False when
        nothing is in flight."""
        if not self._inflight:
            return False
        self._free.append(self._retire(self._inflight.pop(0)))
        return True

    def flush(self) -> None:
        """Submit what was recorded and wait for everything submitted (a sync point)."""
        self.submit()
        while self._inflight:
            self._free.append(self._retire(self._inflight.pop(0)))
        for w in self._captures_inflight.values():   # (the riders' slots are retired above)
            self._wait(w)
        self._captures_inflight.clear()
        self._free_dead()
        self._slots = ()
        self._high = [None] * (self.ctx.bindings - MAX_BINDINGS)
        self._written.clear()
        self._read.clear()


    # ---- GRILLY_PROFILE ----------------------------------------------------------------------
    def _start_profiling(self) -> None:
        info = ffi.new("VkQueryPoolCreateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            "queryType": lib.VK_QUERY_TYPE_TIMESTAMP, "queryCount": RING * (_QMAX + 1)})
        pool = ffi.new("VkQueryPool*")
        check(lib.vkCreateQueryPool(self.ctx.device, info, ffi.NULL, pool), "vkCreateQueryPool")
        self._qpool = pool[0]
        for i, slot in enumerate(self._free):
            slot.qbase = i * (_QMAX + 1)
        self._qdata = ffi.new("uint64_t[]", _QMAX + 1)
        self._period = self.ctx.phys.timestamp_period * 1e-9   # seconds per tick
        self._names: dict = {}
        self.profile = {}

    def _pipeline_name(self, pipeline) -> str:
        name = self._names.get(pipeline)
        if name is None:
            self._names = {p: f"{v}{'' if not spec else spec}"
                           for (v, spec), p in self.ctx.pipelines.items()}
            name = self._names.get(pipeline, "?")
        return name

    def _read_timestamps(self, slot: "_Slot") -> None:
        n = len(slot.names)
        check(lib.vkGetQueryPoolResults(self.ctx.device, self._qpool, slot.qbase, n + 1,
                                        8 * (n + 1), self._qdata, 8, lib.VK_QUERY_RESULT_64_BIT),
              "vkGetQueryPoolResults")
        d, prof, per = self._qdata, self.profile, self._period
        for i, name in enumerate(slot.names):
            row = prof.get(name)
            if row is None:
                row = prof[name] = [0, 0.0]
            row[0] += 1
            row[1] += (d[i + 1] - d[i]) * per
        slot.names = []

    # ---- captured graphs (grilly.jit): one command buffer recorded once, submitted per call --
    def begin_capture(self) -> "Capture":
        """Record the dispatches that follow into a command buffer of their own (never
        submitted by the recorder), until end_capture."""
        self.submit()   # work recorded before goes in its own submission, first
        ainfo = ffi.new("VkCommandBufferAllocateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            "commandPool": self.cmd_pool, "level": lib.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            "commandBufferCount": 1})
        cmds = ffi.new("VkCommandBuffer[]", 1)
        check(lib.vkAllocateCommandBuffers(self.ctx.device, ainfo, cmds),
              "vkAllocateCommandBuffers")
        finfo = ffi.new("VkFenceCreateInfo*", {"sType": lib.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO})
        self._free_dead()
        cap = Capture(self.ctx.device, cmds[0], finfo)
        # a capture dropped later (its graph evicted) gives its command buffer back at the next
        # capture or sync, under the device lock (a command pool is not thread-safe)
        weakref.finalize(cap, self._dead.append, (cap._cmds, cap.fence))
        begin = ffi.new("VkCommandBufferBeginInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, "flags": 0})
        check(lib.vkBeginCommandBuffer(cap.cmd, begin), "vkBeginCommandBuffer")
        self._cur, self.keep = cap, cap.keep
        self._use(cap)
        self._bound = self._pc = None
        self.recording = True
        self.capturing = cap
        self._barrier_all()   # after everything submitted before it, on every run
        return cap

    def _free_dead(self) -> None:
        """Free the command buffers and fences of Captures that were dropped (none of them can
        be in flight: _captures_inflight holds those)."""
        dev = self.ctx.device
        while self._dead:
            cmds, fence = self._dead.pop()
            lib.vkFreeCommandBuffers(dev, self.cmd_pool, 1, cmds)
            lib.vkDestroyFence(dev, fence[0], ffi.NULL)

    def end_capture(self) -> "Capture":
        """Close the command buffer begin_capture opened; its allocations stay with it."""
        cap = self.capturing
        if self.pending is not None:
            self.pending.emit()
        lib.vkCmdPipelineBarrier(cap.cmd, self._stages, lib.VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                 self._host_barrier, 0, ffi.NULL, 0, ffi.NULL)
        check(lib.vkEndCommandBuffer(cap.cmd), "vkEndCommandBuffer")
        cap.written = set(cap.keep)
        self._leave_capture()
        return cap

    def _leave_capture(self) -> None:
        """Recording goes back to the ring (a new slot at the next dispatch)."""
        self.capturing = None
        self.recording = False
        self._cur = self.cmd = None
        self.keep = []
        self.count = self.work = 0
        self._written.clear()
        self._read.clear()

    def abort_capture(self) -> None:
        """Drop a capture that failed part way (its command buffer is never submitted)."""
        cap = self.capturing
        if cap is None:
            return
        self.pending = None
        lib.vkEndCommandBuffer(cap.cmd)
        self._leave_capture()   # the dropped capture's command buffer is freed by its finalizer

    def run_capture(self, cap: "Capture", after=None) -> None:
        """Submit a captured command buffer after what is recorded now (a replay's inputs
        copied in): both in one vkQueueSubmit, the capture riding with that batch's slot and
        fence (its first barrier orders it after them), else alone with its own fence. A
        submit costs 20-25 us of host time on the H200's host: a jitted small step's replay
        made three. ``after()``, where given, records the dispatches that follow the capture
        (a replay's outputs copied out of its buffers) into a batch of their own, submitted in
        the same vkQueueSubmit behind it: one submission a replay, where it took two."""
        if self.capturing is not None or self._held is not None:
            raise RuntimeError("vulkan: a captured graph cannot run inside a capture")
        if self.pending is not None:
            self.pending.emit()
        # its previous run must finish before a resubmit (not a simultaneous-use buffer)
        prev = self._captures_inflight.pop(cap, None)
        if prev is not None:
            self._wait(prev)
        first = self._close() if self.recording else None
        if after is None:
            self._submit_run(first, cap, None)
            return
        # what follows reads what the capture wrote: a barrier before it (the hazard sets)
        self._written |= cap.written
        self._held = (first, cap)   # (any submission from here submits them first)
        try:
            after()
        finally:   # what was recorded, in order, even where after() failed part way
            self.submit()

    def _submit_run(self, first, cap: "Capture", last) -> None:
        """One vkQueueSubmit of batch ``first``, Capture ``cap`` and batch ``last`` (either
        batch may be None), with the fence of the last batch, else cap's own."""
        if last is not None:
            cmds, n = last._cmds3, 0
            if first is not None:
                cmds[0], n = first.cmd, 1
            cmds[n], cmds[n + 1] = cap.cmd, last.cmd
            last.submit3.commandBufferCount = n + 2
            check(lib.vkQueueSubmit(self.ctx.queue, 1, last.submit3, last.fence[0]),
                  "vkQueueSubmit")
            # (the capture's run, and the first batch, are known done when it retires)
            last.rider, last.companion = cap, first
            self._captures_inflight[cap] = last
            self._inflight.append(last)
        elif first is not None:   # the capture rides with the batch before it
            first._cmds2[0], first._cmds2[1] = first.cmd, cap.cmd
            check(lib.vkQueueSubmit(self.ctx.queue, 1, first.submit2, first.fence[0]),
                  "vkQueueSubmit")
            first.rider = cap
            self._captures_inflight[cap] = first
            self._inflight.append(first)
        else:
            lib.vkResetFences(self.ctx.device, 1, cap.fence)
            check(lib.vkQueueSubmit(self.ctx.queue, 1, cap.submit, cap.fence[0]),
                  "vkQueueSubmit")
            self._captures_inflight[cap] = cap
        stats["submits"] += 1
        self.n_submits += 1
        # what follows and touches its buffers waits for it (a barrier, as for any hazard)
        self._written |= cap.written


_QMAX = BATCH_MAX   # timed dispatches per command buffer (a submit comes at BATCH_MAX)
_BOTTOM = 0x2000     # VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT: after everything before it


class _Slot:
    """A command buffer, its fence, its submit info, and the allocations its work uses."""

    __slots__ = ("cmd", "fence", "submit", "keep", "_cmds", "qbase", "names", "_cmds2",
                 "submit2", "rider", "_cmds3", "submit3", "companion", "binders")

    def __init__(self, dev, cmd, finfo):
        self.cmd = cmd
        self._cmds = ffi.new("VkCommandBuffer[1]", [cmd])
        self.fence = ffi.new("VkFence[1]")
        check(lib.vkCreateFence(dev, finfo, ffi.NULL, self.fence), "vkCreateFence")
        self.submit = ffi.new("VkSubmitInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_SUBMIT_INFO, "commandBufferCount": 1,
            "pCommandBuffers": self._cmds})
        # this buffer, then a Capture's (Recorder.run_capture)
        self._cmds2 = ffi.new("VkCommandBuffer[2]")
        self.submit2 = ffi.new("VkSubmitInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_SUBMIT_INFO, "commandBufferCount": 2,
            "pCommandBuffers": self._cmds2})
        # a batch, a Capture and this buffer (Recorder.run_capture's after-work); the count is
        # set per submission
        self._cmds3 = ffi.new("VkCommandBuffer[3]")
        self.submit3 = ffi.new("VkSubmitInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_SUBMIT_INFO, "commandBufferCount": 3,
            "pCommandBuffers": self._cmds3})
        self.rider = None   # the Capture submitted with this buffer, until it retires
        self.companion = None   # the batch submitted before it in the same vkQueueSubmit
        self.keep: list = []
        self.qbase = 0
        self.names: list = []   # kernel of each timestamp written (GRILLY_PROFILE)
        self.binders = None   # the vkCmd* partials bound to cmd (Recorder._use)


class Capture(_Slot):
    """A command buffer recorded once (begin_capture .. end_capture) and submitted by
    run_capture any number of times; ``keep`` holds every allocation it uses."""

    __slots__ = ("written", "__weakref__")

    def __init__(self, dev, cmd, finfo):
        super().__init__(dev, cmd, finfo)
        self.written: set = set()
