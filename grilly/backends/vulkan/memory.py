"""Device memory: a bucketed pool of VkBuffers (small sizes carved from shared slabs) and the
Buffer view the array layer holds: (allocation, element offset, shape, element strides, dtype).

Memory comes from a host-visible type (device-local + host-visible where the device has one:
always on lavapipe, resizable BAR on NVIDIA), mapped once, so uploads write straight into it.
"""
from __future__ import annotations

import math
import weakref
from collections import deque

import numpy as np

from . import addresses
from .runtime import check, ffi, lib

MIN_BYTES = 256          # every block is aligned to this (>= minStorageBufferOffsetAlignment)
SLAB_MAX = 1 << 20       # blocks up to this size are carved from shared slabs
SLAB_BYTES = 8 << 20
# a new chunk this large costs milliseconds (vkAllocateMemory, then mapping it: about 10 ms for
# 512 MiB on the H100), more than waiting for the oldest submitted work, which may hold released
# blocks of the size wanted (a loop over big blocks that never syncs, as search's, otherwise
# grows the pool by a block per step while the host records ahead of the GPU)
REUSE_MIN = 16 << 20


def bucket(n: int) -> int:
    """Round up to a quarter of the enclosing power of two (at most 25% slack), >= 256 bytes."""
    n = max(n, MIN_BYTES)
    step = max(1 << max(n.bit_length() - 3, 0), MIN_BYTES)
    return -(-n // step) * step


# VkMemoryPropertyFlagBits (spec values: this module must import without a Vulkan loader)
_LOCAL, _VISIBLE, _COHERENT, _CACHED = 0x1, 0x2, 0x4, 0x8
_HOST = _VISIBLE | _COHERENT


def _find_type(types: list, bits: int, wants: tuple) -> int | None:
    """The first memory type allowed by ``bits`` with every flag of a ``wants`` entry, in order."""
    for want in wants:
        for i, (flags, _heap) in enumerate(types):
            if bits >> i & 1 and flags & want == want:
                return i
    return None


class Chunk:
    """One VkBuffer bound to its own VkDeviceMemory, mapped persistently."""

    __slots__ = ("buffer", "memory", "size", "host", "address")

    def __init__(self, pool: "Pool", size: int, type_index: int | None = None):
        ctx = pool.ctx
        usage = (lib.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | lib.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                 | lib.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
        addressed = ctx.get_buffer_address is not None   # (vulkan/addresses.py)
        if addressed:
            usage |= lib.VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT
        info = ffi.new("VkBufferCreateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, "size": size, "usage": usage,
            "sharingMode": lib.VK_SHARING_MODE_EXCLUSIVE})
        out = ffi.new("VkBuffer*")
        check(lib.vkCreateBuffer(ctx.device, info, ffi.NULL, out), "vkCreateBuffer")
        self.buffer = out[0]
        req = ffi.new("VkMemoryRequirements*")
        lib.vkGetBufferMemoryRequirements(ctx.device, self.buffer, req)
        ainfo = ffi.new("VkMemoryAllocateInfo*", {
            "sType": lib.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, "allocationSize": req.size,
            "memoryTypeIndex": pool.type_index(req.memoryTypeBits) if type_index is None
            else type_index})
        if addressed:
            flags = ffi.new("VkMemoryAllocateFlagsInfo*", {
                "sType": lib.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                "flags": lib.VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT})
            ainfo.pNext = flags
        mem = ffi.new("VkDeviceMemory*")
        res = lib.vkAllocateMemory(ctx.device, ainfo, ffi.NULL, mem)
        if res != 0:
            lib.vkDestroyBuffer(ctx.device, self.buffer, ffi.NULL)
            raise MemoryError(res)
        self.memory = mem[0]
        check(lib.vkBindBufferMemory(ctx.device, self.buffer, self.memory, 0), "vkBindBufferMemory")
        self.address = addresses.of_buffer(ctx, self.buffer) if addressed else None
        self.size = size
        self.host = None
        if ctx.phys.mem_types[ainfo.memoryTypeIndex][0] & _VISIBLE:
            ptr = ffi.new("void**")
            check(lib.vkMapMemory(ctx.device, self.memory, 0, size, 0, ptr), "vkMapMemory")
            self.host = np.frombuffer(ffi.buffer(ptr[0], size), np.uint8)

    def destroy(self, ctx) -> None:
        if self.host is not None:
            self.host = None
            lib.vkUnmapMemory(ctx.device, self.memory)
        lib.vkDestroyBuffer(ctx.device, self.buffer, ffi.NULL)
        lib.vkFreeMemory(ctx.device, self.memory, ffi.NULL)


class Allocation:
    """A block of a chunk handed out by the pool; returns to it when no view references it
    (Pool._dead, the callback of the pool's weak reference to it)."""

    __slots__ = ("chunk", "offset", "size", "const", "desc", "__weakref__")

    def __init__(self, block: tuple):
        # the pool's record of the block, (chunk, offset, size, desc, its free list), made once
        # per block (Pool._grow): unpacked, no tuple built per allocation (every op's output);
        # desc is its VkDescriptorBufferInfo (buffer, offset, range): what the recorder binds
        self.chunk, self.offset, self.size, self.desc, _ = block
        self.const = None   # bits of a shared scalar operand no kernel writes (kernels.scalar)

    def host(self) -> np.ndarray:
        """The block's bytes as a mapped numpy view (zero-copy)."""
        return self.chunk.host[self.offset:self.offset + self.size]


class _Block(weakref.ref):
    """The pool's weak reference to an Allocation it handed out, with the block to give back.

    Not ``Allocation.__del__``: a finalizer runs while weak references to the dying allocation
    still answer, so a thread switch there let another thread take the released block and then
    reach the old allocation through the fuser's weak reference to a pending result, and store
    that result over the new owner's data (tests/test_threads.py). A weakref callback runs only
    once every weak reference to the allocation is cleared."""

    __slots__ = ("block",)   # the pool's record of the block (Allocation): what _dead gives back


class Pool:
    """Free lists of blocks by bucket size; slabs for small blocks, own chunks for large ones."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.free: dict[int, list] = {}
        self.chunks: list[Chunk] = []
        self.held = 0        # bytes of VkDeviceMemory this pool owns
        self.live = 0        # bytes handed out and not yet released
        self.peak = 0        # the most ``live`` has been (gp.device_stats: peak_live_bytes)
        self._staging_type = -1   # -1: not probed yet
        # request -> (its bucket size, that size's free list), for sizes checked against the
        # limit (a free list is never replaced: trim and release change it in place)
        self._buckets: dict = {}
        # blocks released by a thread that could not take the device lock; alloc takes them back
        self._deferred: deque = deque()
        self._blocks: set = set()   # a _Block per allocation handed out (their callbacks free)
        self._on_dead = self._dead  # (one bound method for every _Block)
        self._lock = ctx.lock       # (the device lock, read by every release)

    def type_index(self, bits: int) -> int:
        i = _find_type(self.ctx.phys.mem_types, bits, (_HOST | _LOCAL, _HOST))
        if i is None:
            raise MemoryError(f"vulkan: {self.ctx.phys.name} has no host-visible memory type")
        return i

    def staged_reads(self) -> int | None:
        """The host-cached memory type downloads go through, or None when array memory is
        itself cached: reading uncached device memory over PCIe (resizable BAR) runs at a
        few hundred MB/s, a GPU copy into cached memory at full bus speed."""
        if self._staging_type == -1:
            types = self.ctx.phys.mem_types
            own = types[self.type_index(~0)][0]
            cached = _find_type(types, ~0, (_HOST | _CACHED,))
            slow = not own & _CACHED
            self._staging_type = cached if slow else None
        return self._staging_type

    def available(self) -> int:
        """Device-local bytes left: the driver's budget minus usage (VK_EXT_memory_budget,
        which counts other processes too) where it reports one, else heap size minus ours."""
        phys = self.ctx.phys
        budget = phys.memory_budget()
        if budget:
            return sum(b - u for (b, u), (_, fl) in zip(budget, phys.heaps) if fl & 1)
        return sum(s for s, fl in phys.heaps if fl & 1) - self.held

    def alloc(self, nbytes: int) -> Allocation:
        """A block of at least ``nbytes`` (call with the device lock held)."""
        if self._deferred:
            self.take_deferred()
        hit = self._buckets.get(nbytes)
        if hit is None:
            limit = self.ctx.phys.max_storage
            if nbytes > limit:
                raise MemoryError(f"vulkan: an array of {nbytes} bytes exceeds "
                                  f"{self.ctx.phys.name}'s maxStorageBufferRange of {limit} bytes")
            size = bucket(nbytes)
            hit = (size, self.free.setdefault(size, []))
            if len(self._buckets) < 4096:
                self._buckets[nbytes] = hit
        size, lst = hit
        if not lst:
            self._grow(size, lst)
        block = lst.pop()
        live = self.live = self.live + size
        if live > self.peak:
            self.peak = live
        a = Allocation(block)
        r = _Block(a, self._on_dead)
        r.block = block
        self._blocks.add(r)
        return a

    def _grow(self, size: int, lst: list) -> None:
        if size >= REUSE_MIN:
            # oldest first, so the GPU keeps the rest of the queue: no pipeline drain
            rec = self.ctx.recorder
            while rec.retire_oldest():
                self.take_deferred()
                if lst:
                    return
        csize = SLAB_BYTES if size <= SLAB_MAX else size
        try:
            chunk = Chunk(self, csize)
        except MemoryError:
            self.ctx.recorder.flush()  # pending work may hold blocks; then give free ones back
            self.trim()
            try:
                chunk = Chunk(self, csize)
            except MemoryError:
                raise MemoryError(
                    f"vulkan: out of device memory on {self.ctx.phys.name}: wanted {size} bytes, "
                    f"about {max(self.available(), 0)} available ({self.held} held by grilly, "
                    f"{self.live} in live arrays)") from None
        self.chunks.append(chunk)
        self.held += csize
        # a record per block, kept for the pool's life (what Allocation unpacks, and _dead puts
        # back on its free list as it is)
        buf = chunk.buffer
        lst.extend((chunk, off, size, (buf, off, size), lst)
                   for off in range(csize - size, -1, -size))

    def _dead(self, r: _Block) -> None:
        """An allocation died (every weak reference to it is cleared): give its block back."""
        try:
            self._blocks.discard(r)
            self.release(r.block)
        except Exception:
            pass  # interpreter shutdown

    def release(self, block: tuple) -> None:
        """Return a dead allocation's block (its record, as Allocation takes it). An allocation
        dies in whichever thread drops its last reference, maybe one holding another device's
        lock: never wait for this one's (a deadlock); queue the block instead when another
        thread holds it."""
        lock = self._lock
        if lock.acquire(False):   # (not blocking; positional: every release comes here)
            try:
                self.live -= block[2]
                block[4].append(block)   # (its free list)
            finally:
                lock.release()
        else:
            self._deferred.append(block)   # (deque.append is atomic)

    def take_deferred(self) -> None:
        """Put the queued released blocks back on the free lists (device lock held)."""
        pop = self._deferred.popleft
        while True:
            try:
                block = pop()
            except IndexError:
                return
            self.live -= block[2]
            block[4].append(block)

    def trim(self) -> None:
        """Give back to the driver every chunk with no block in use."""
        self.take_deferred()
        used = {}
        for size, lst in self.free.items():
            for block in lst:
                used[id(block[0])] = used.get(id(block[0]), 0) + size
        idle = {id(c) for c in self.chunks if used.get(id(c), 0) == c.size}
        for lst in self.free.values():
            lst[:] = [b for b in lst if id(b[0]) not in idle]
        for c in [c for c in self.chunks if id(c) in idle]:
            self.held -= c.size
            c.destroy(self.ctx)
        self.chunks = [c for c in self.chunks if id(c) not in idle]


class Staging:
    """A host-cached buffer that downloads are copied into on the GPU (see Pool.staged_reads)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.chunk = None

    def read(self, buf: "Buffer") -> np.ndarray:
        """Sync point: copy the bytes ``buf`` spans into staging memory, return a host copy."""
        item = buf.dtype.itemsize
        first, end = buf.span()
        lo, nbytes = first // item, end - first
        if self.chunk is None or self.chunk.size < nbytes:
            if self.chunk is not None:
                self.ctx.recorder.flush()
                self.chunk.destroy(self.ctx)
                self.chunk = None
            self.chunk = Chunk(self.ctx.pool, bucket(nbytes), self.ctx.pool.staged_reads())
        rec = self.ctx.recorder
        rec.copy(buf.alloc, buf.alloc.offset + first, self.chunk.buffer, nbytes)
        rec.flush()
        raw = self.chunk.host[:nbytes].view(buf.dtype.np)
        view = np.lib.stride_tricks.as_strided(
            raw[buf.offset - lo:], buf.shape, tuple(s * item for s in buf.strides))
        return np.array(view, copy=True)


class Buffer:
    """A strided view of an allocation, in elements; what a vulkan grilly Array holds."""

    __slots__ = ("alloc", "offset", "shape", "strides", "dtype", "ctx")

    def __init__(self, ctx, alloc: Allocation, offset: int, shape: tuple, strides: tuple, dtype):
        # (one statement each: fewer bytecodes than tuple assignments, and every op makes one)
        self.ctx = ctx
        self.alloc = alloc
        self.offset = offset
        self.shape = shape
        self.strides = strides
        self.dtype = dtype

    @property
    def size(self) -> int:
        return math.prod(self.shape)   # (in C: asked for on most ops)

    def span(self) -> tuple:
        """The byte range [first, end) of the allocation this (non-empty) view's elements
        occupy, relative to the allocation's start."""
        lo = hi = self.offset
        for s, st in zip(self.shape, self.strides):
            lo += min(0, (s - 1) * st)
            hi += max(0, (s - 1) * st)
        item = self.dtype.itemsize
        return lo * item, (hi + 1) * item

    def is_contiguous(self) -> bool:
        st = _CONTIGUOUS.get(self.shape)   # (contiguous_strides' cache, read inline: hot)
        return (self.strides == (contiguous_strides(self.shape) if st is None else st)
                or self.size <= 1)

    def host_view(self) -> np.ndarray:
        """The mapped memory as a numpy view with this buffer's layout (valid after a sync)."""
        item = self.dtype.itemsize
        raw = self.alloc.host().view(self.dtype.np)
        if self.strides == contiguous_strides(self.shape):
            # the common case, without as_strided's few microseconds on every small read
            return raw[self.offset:self.offset + self.size].reshape(self.shape)
        return np.lib.stride_tricks.as_strided(
            raw[self.offset:], self.shape, tuple(s * item for s in self.strides))

    def __repr__(self) -> str:
        return f"vulkan.Buffer(shape={self.shape}, strides={self.strides}, dtype={self.dtype.name})"


def contiguous_strides(shape: tuple) -> tuple:
    st = _CONTIGUOUS.get(shape)
    if st is None:
        out, acc = [], 1
        for s in reversed(shape):
            out.append(acc)
            acc *= max(s, 1)
        st = tuple(reversed(out))
        if len(_CONTIGUOUS) < 4096 and type(shape) is tuple:
            _CONTIGUOUS[shape] = st
    return st


_CONTIGUOUS: dict = {}   # shape -> row-major element strides (asked for on every op)
