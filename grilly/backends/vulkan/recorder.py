"""Lazily recorded command buffers: dispatches accumulate in one command buffer and are
submitted in a batch at a sync point (``to_host``), or when the batch grows large."""
from __future__ import annotations

import time

from .runtime import MAX_BINDINGS, check, ffi, lib

WG = 256
SPIN_S = 0.002     # how long a sync polls the fence before a blocking wait
BATCH_MAX = 256   # dispatches per submit; bounds the memory pending work keeps alive

# counts host round trips and transfers; tests use these to prove data stays on the device
stats = {"submits": 0, "dispatches": 0, "uploads": 0, "downloads": 0, "barriers": 0,
         "host_round_trips": 0}


class Recorder:
    """One command buffer being recorded, a fence, and the allocations pending work uses."""

    def __init__(self, ctx):
        self.ctx = ctx
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
            "level": lib.VK_COMMAND_BUFFER_LEVEL_PRIMARY, "commandBufferCount": 1})
        self._cmd = ffi.new("VkCommandBuffer[1]")
        check(lib.vkAllocateCommandBuffers(dev, ainfo, self._cmd), "vkAllocateCommandBuffers")
        self.cmd = self._cmd[0]
        finfo = ffi.new("VkFenceCreateInfo*", {"sType": lib.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO})
        self._fence = ffi.new("VkFence[1]")
        check(lib.vkCreateFence(dev, finfo, ffi.NULL, self._fence), "vkCreateFence")
        # structs reused by every dispatch: building one through cffi costs microseconds
        self._begin = ffi.new("VkCommandBufferBeginInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
            "flags": lib.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT})
        self._submit = ffi.new("VkSubmitInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_SUBMIT_INFO, "commandBufferCount": 1,
            "pCommandBuffers": self._cmd})
        self._infos = ffi.new("VkDescriptorBufferInfo[]", MAX_BINDINGS)
        self._writes = ffi.new("VkWriteDescriptorSet[]", MAX_BINDINGS)
        for i in range(MAX_BINDINGS):
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
        self._slots = [None] * MAX_BINDINGS   # allocation each descriptor info describes
        self.count = 0
        self.keep: list = []          # allocations pending work reads or writes
        self._written: set = set()    # allocations written since the last barrier
        self._read: set = set()
        self.max_groups = min(ctx.phys.max_groups, 65535)

    def _start(self) -> None:
        check(lib.vkBeginCommandBuffer(self.cmd, self._begin), "vkBeginCommandBuffer")
        self._bound = None
        self.recording = True

    def dispatch(self, pipeline, bufs: list, pc: bytes, n: int, writes: int = 1) -> None:
        """Record one dispatch of ``pipeline`` over ``n`` items; ``bufs[:writes]`` are written."""
        if not self.recording:
            self._start()
        cmd = self.cmd
        allocs = [b.alloc for b in bufs]
        written, read = self._written, self._read
        hazard = False
        for i, a in enumerate(allocs):
            if a in written or (i < writes and a in read):
                hazard = True
                break
        if hazard:
            lib.vkCmdPipelineBarrier(cmd, self._stages, self._stages, 0, 1, self._barrier,
                                     0, ffi.NULL, 0, ffi.NULL)
            stats["barriers"] += 1
            written.clear()
            read.clear()
        written.update(allocs[:writes])
        read.update(allocs[writes:])
        self.keep += allocs
        if pipeline is not self._bound:
            lib.vkCmdBindPipeline(cmd, lib.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline)
            self._bound = pipeline
        infos, slots = self._infos, self._slots
        for i in range(MAX_BINDINGS):
            a = allocs[i] if i < len(allocs) else allocs[0]
            if slots[i] is not a:
                # the cffi struct keeps its fields: write only slots whose buffer changed
                slots[i] = a
                info = infos[i]
                info.buffer = a.chunk.buffer
                info.offset = a.offset
                info.range = a.size
        self.ctx.push_descriptors(cmd, lib.VK_PIPELINE_BIND_POINT_COMPUTE, self.ctx.layout, 0,
                                  MAX_BINDINGS, self._writes)
        lib.vkCmdPushConstants(cmd, self.ctx.layout, lib.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(pc), pc)
        groups = -(-n // WG)
        lib.vkCmdDispatch(cmd, groups if groups < self.max_groups else self.max_groups, 1, 1)
        stats["dispatches"] += 1
        self.count += 1
        if self.count >= BATCH_MAX:
            self.flush()

    def copy(self, src, src_offset: int, dst_buffer, nbytes: int) -> None:
        """Record a transfer of ``nbytes`` from allocation ``src`` (at byte ``src_offset`` of its
        VkBuffer) to the start of ``dst_buffer`` (a staging buffer no dispatch touches)."""
        if not self.recording:
            self._start()
        if src in self._written:
            lib.vkCmdPipelineBarrier(self.cmd, self._stages, self._stages, 0, 1, self._barrier,
                                     0, ffi.NULL, 0, ffi.NULL)
            stats["barriers"] += 1
            self._written.clear()
            self._read.clear()
        self._read.add(src)
        self.keep.append(src)
        region = self._region
        region.srcOffset, region.dstOffset, region.size = src_offset, 0, nbytes
        lib.vkCmdCopyBuffer(self.cmd, src.chunk.buffer, dst_buffer, 1, region)
        self.count += 1

    def _wait(self) -> None:
        """Wait for the fence: poll first (a blocking wait sleeps in the driver and wakes tens of
        microseconds late, longer than a small batch takes), then block."""
        dev, fence = self.ctx.device, self._fence[0]
        status = lib.vkGetFenceStatus
        end = time.perf_counter() + SPIN_S
        while time.perf_counter() < end:
            if status(dev, fence) == 0:
                return
        check(lib.vkWaitForFences(dev, 1, self._fence, 1, 2**64 - 1), "vkWaitForFences")

    def flush(self) -> None:
        """Submit what was recorded and wait for it (a sync point)."""
        if not self.recording:
            return
        lib.vkCmdPipelineBarrier(self.cmd, self._stages, lib.VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                 self._host_barrier, 0, ffi.NULL, 0, ffi.NULL)
        check(lib.vkEndCommandBuffer(self.cmd), "vkEndCommandBuffer")
        self.recording = False
        check(lib.vkQueueSubmit(self.ctx.queue, 1, self._submit, self._fence[0]), "vkQueueSubmit")
        stats["submits"] += 1
        self._wait()
        lib.vkResetFences(self.ctx.device, 1, self._fence)
        lib.vkResetCommandBuffer(self.cmd, 0)
        self.count = 0
        self._slots = [None] * MAX_BINDINGS
        self.keep.clear()
        self._written.clear()
        self._read.clear()
