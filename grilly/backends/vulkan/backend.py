"""The Vulkan backend: one grilly Device per physical device (``vulkan:0``, ...)."""
from __future__ import annotations

import functools
import os
import threading

from ..base import Backend, Device, KernelTable
from ..contract import BFLOAT16_ELEMENTWISE
from . import runtime
from .locking import locked, with_ctx
from .memory import Buffer

# complex64 is two float32s (always there); complex128 is two doubles
_KIND_BY_DTYPE = {"float64": "shaderFloat64", "int64": "shaderInt64", "uint64": "shaderInt64",
                  "float16": "storageBuffer16BitAccess", "complex128": "shaderFloat64"}


class _Kernels(KernelTable):
    """A device's kernel table: every kernel runs under the device's lock, and creation kernels
    (which take no buffer; also any kernel marked ``takes_ctx``) get the device's context."""

    def update(self, table=(), **kw):
        from .kernels import CREATION

        dev = self._device
        for name, fn in dict(table, **kw).items():
            attrs = getattr(fn, "__dict__", {})   # what a kernel declares (max_features, ...)
            if CREATION.get(name) is fn or getattr(fn, "takes_ctx", False):
                fn = functools.partial(with_ctx, fn, dev)
            else:
                fn = functools.partial(locked, fn, dev.lock)
            fn.__dict__.update(attrs)
            fn.__name__ = name
            self[name] = fn


class _Capturer:
    """Backend.capture for one device: its recorder's begin/end/abort/run_capture, locked."""

    def __init__(self, device):
        from . import kernels

        self.device = device
        self._kernels = kernels   # (run_io's: imported once, not on every replay)

    # the device lock is held from begin to end (or abort): no other thread's work may land
    # in the captured command buffer
    def begin(self) -> None:
        self.device.lock.acquire()
        try:
            self.device.ctx.recorder.begin_capture()
        except BaseException:
            self.device.lock.release()
            raise

    def end(self):
        try:
            return self.device.ctx.recorder.end_capture()
        finally:
            self.device.lock.release()

    def abort(self) -> None:
        try:
            self.device.ctx.recorder.abort_capture()
        finally:
            self.device.lock.release()

    takes_after = True   # run(handle, after): the kernels after a replay go in its submission

    def run(self, handle, after=None) -> None:
        with self.device.lock:
            self.device.ctx.recorder.run_capture(handle, after)

    def run_io(self, handle, before: list, after: list, outs: list) -> list:
        """run(handle) with a replay's copies (Backend.capture) in its submission: a plain copy
        (contiguous, as a replay's inputs and outputs mostly are) records one vkCmdCopyBuffer
        here, without the assign kernel's general checks, which cost a small replay a third of
        its host time; others go through that kernel."""
        k = self._kernels
        assign, copy_plain, new_buffer = k.assign, k.copy_plain, k.new_buffer
        res: list = []
        with self.device.lock:
            rec = self.device.ctx.recorder
            for dst, src in before:
                copy_plain(rec, dst, src) or assign(dst, src)

            def later():
                for dst, src in after:
                    copy_plain(rec, dst, src) or assign(dst, src)
                for src in outs:
                    out = new_buffer(src.ctx, src.shape, src.dtype)
                    copy_plain(rec, out, src) or assign(out, src)
                    res.append(out)

            rec.run_capture(handle, later)
        return res



class VulkanDevice(Device):
    """A grilly Device on one Vulkan physical device; its logical device starts on first use."""

    def __init__(self, backend, index: int, phys):
        super().__init__(backend, index, f"{phys.name} ({runtime.TYPE_NAMES.get(phys.type)})")
        self.phys = phys
        self.rank = runtime.RANK.get(phys.type, 0)
        self._ctx = None
        self.lock = threading.RLock()   # held by every kernel call on this device
        self.kernels = _Kernels(self)

    def synchronize(self) -> None:
        """Submit what is recorded and wait for it."""
        if self._ctx is not None:
            with self.lock:
                self._ctx.recorder.flush()

    @property
    def ctx(self):
        ctx = self._ctx
        if ctx is None:
            with self.lock:   # threads using a fresh device at once make one logical device
                if self._ctx is None:
                    self._ctx = open_context(self.phys, self.lock)
                ctx = self._ctx
        return ctx


def open_context(phys, lock) -> "runtime.Context":
    """A device context with its memory pool, recorder, staging and (on GPUs) fuser."""
    from .fusion import Fuser, wanted
    from .kernels import dispatch_flat
    from .memory import Pool, Staging
    from .recorder import Recorder

    ctx = runtime.Context(phys, lock)
    ctx.pool, ctx.recorder, ctx.staging = Pool(ctx), Recorder(ctx), Staging(ctx)
    ctx.new_fuser = functools.partial(Fuser, ctx, dispatch_flat)
    ctx.fuser = ctx.new_fuser() if wanted(phys) else None
    return ctx


def _selected(phys: list) -> int | None:
    """The physical device VK_GPU_INDEX or VK_GPU_NAME (a name substring) asks for."""
    idx = os.environ.get("VK_GPU_INDEX", "").strip()
    if idx.isdigit() and int(idx) < len(phys):
        return int(idx)
    name = os.environ.get("VK_GPU_NAME", "").strip().lower()
    if name:
        for i, p in enumerate(phys):
            if name in p.name.lower():
                return i
    return None


# what runs on bfloat16's bits on every device (float32 registers, each result rounded once):
# products on tensor cores where the device has VK_KHR_shader_bfloat16's cooperative matrices,
# else sgemm.comp's bfloat16 variants; convolutions' windows and pools (conv.comp, pool.comp)
_BF16_NATIVE = frozenset({"matmul", "linalg.matmul", "dense.linear", "dense.linear_backward",
                          "conv.conv2d", "conv.conv2d_backward", "conv.max_pool2d",
                          "conv.max_pool2d_backward", "fused.relu_backward"})


class VulkanBackend(Backend):
    """Compute shaders (SPIR-V built from shaders/) on every usable Vulkan device."""

    name = "vulkan"
    single_device = False
    # default device = max(priority + rank): a discrete (10) or integrated (8) GPU beats the
    # cpu backend (priority 10); lavapipe (rank 0) does not
    priority = 5
    buffer_type = Buffer

    def __init__(self):
        self.unavailable_reason = ""
        self._devices = None
        self._lock = threading.Lock()

    def devices(self) -> list[Device]:
        if self._devices is None:
            with self._lock:   # one probe (one VkInstance) however many threads ask first
                if self._devices is None:
                    self._devices = self._probe()
        return self._devices

    def _probe(self) -> list:
        if runtime.IMPORT_ERROR:
            self.unavailable_reason = runtime.IMPORT_ERROR
            return []
        try:
            inst = runtime.Instance()
        except Exception as e:
            self.unavailable_reason = f"no Vulkan driver could start ({e})"
            return []
        self.instance = inst
        usable, why = [], []
        for p in inst.physical:
            miss = p.missing()
            (why.append(f"{p.name} lacks {', '.join(miss)}") if miss else usable.append(p))
        if not usable:
            self.unavailable_reason = "; ".join(why) or "the Vulkan loader reports no device"
        devs = [VulkanDevice(self, i, p) for i, p in enumerate(usable)]
        if os.environ.get("ALLOW_CPU_VULKAN", "").strip() in ("1", "true", "yes"):
            # a CPU Vulkan driver (lavapipe) may become the default device: it outranks the cpu
            # backend (priority 10) once its rank makes 5 + rank > 10
            for d in devs:
                if d.phys.type == 4:
                    d.rank = max(d.rank, 6)
        sel = _selected(usable)
        if sel is not None:
            devs[sel].rank += 100  # the user's choice becomes `vulkan` and the default device
        return devs

    def kernels(self) -> dict:
        from . import families
        from .kernels import CREATION, STORAGE, elementwise

        table = {**CREATION, **STORAGE, **elementwise()}
        for fam in families.MODULES:
            table.update(fam.KERNELS)
        return table

    def buffer_device(self, buf) -> Device | None:
        """The device whose context allocated ``buf``."""
        for d in self._devices or ():
            if d._ctx is not None and d._ctx is getattr(buf, "ctx", None):
                return d
        return None

    def supports_dtype(self, device: Device, dtype) -> bool:
        feat = _KIND_BY_DTYPE.get(dtype.name)
        return feat is None or device.phys.features.get(feat, False)

    def native_bfloat16(self, device: Device) -> frozenset:
        """Elementwise arithmetic and comparisons, matrix products, convolutions and max
        pooling on bfloat16 arrays run natively (their bits, float32 arithmetic, one rounding
        per result; products on tensor cores where the device has them)."""
        return BFLOAT16_ELEMENTWISE | _BF16_NATIVE

    def stats(self, device: Device) -> dict:
        """This device's submits, dispatches, copies, transfers and pool bytes (zeros before use)."""
        ctx = device._ctx
        if ctx is None:
            return dict.fromkeys(("submits", "dispatches", "copies", "uploads", "downloads",
                                  "held_bytes", "live_bytes", "peak_live_bytes"), 0)
        with device.lock:
            # blocks that dying arrays queued while another thread held the lock are free:
            # not live bytes (they stayed counted until the next alloc took them back)
            ctx.pool.take_deferred()
            return {"submits": ctx.recorder.n_submits, "dispatches": ctx.recorder.n_dispatches,
                    "copies": ctx.recorder.n_copies, "uploads": ctx.n_uploads, "downloads": ctx.n_downloads,
                    "held_bytes": ctx.pool.held, "live_bytes": ctx.pool.live,
                    "peak_live_bytes": ctx.pool.peak}

    def reset_peak(self, device: Device) -> None:
        """The pool's peak_live_bytes starts over from its live bytes."""
        ctx = device._ctx
        if ctx is not None:
            with device.lock:
                ctx.pool.take_deferred()
                ctx.pool.peak = ctx.pool.live

    def profile(self, device: Device) -> dict:
        """Per shader variant: (dispatches, GPU seconds), with GRILLY_PROFILE=1."""
        ctx = device._ctx
        if ctx is None or ctx.recorder.profile is None:
            return {}
        with device.lock:
            ctx.recorder.flush()
            return {k: (v[0], v[1]) for k, v in ctx.recorder.profile.items()}

    def capture(self, device: Device) -> "_Capturer":
        """Kernels recorded once into a command buffer and resubmitted (grilly.jit)."""
        return _Capturer(device)

    def info(self, device: Device) -> dict:
        from .recorder import stats

        from .fusion import wanted

        out = device.phys.info()
        out["elementwise_fusion"] = wanted(device.phys)
        if device._ctx is not None:
            with device.lock:
                device._ctx.pool.take_deferred()
                out.update(pool_held_bytes=device._ctx.pool.held,
                           pool_live_bytes=device._ctx.pool.live, **stats)
        return out
