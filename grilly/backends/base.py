"""Backend and Device: what a backend plugin hands to the registry."""
from __future__ import annotations


class KernelTable(dict):
    """A device's kernels, ``{op name: callable}``, filled in place by the registry. Looking up
    a kernel the device lacks (``device.kernels["to_host"]``) raises NotImplementedError naming
    the op, the device and its backend, as the array layer's lookups do, not a bare KeyError;
    ``get`` and ``in`` answer as for any dict."""

    def __init__(self, device: "Device"):
        super().__init__()
        self._device = device

    def __missing__(self, op):
        d = self._device
        raise NotImplementedError(f"{op}: not available on device {d}; backend "
                                  f"{d.backend.name!r} provides no {op!r} kernel")


class Device:
    """One place arrays live and run: a backend plus an index (``cpu``, ``vulkan:0``)."""

    __slots__ = ("backend", "index", "description", "kernels", "__weakref__")

    def __init__(self, backend: "Backend", index: int = 0, description: str = ""):
        self.backend = backend
        self.index = index
        self.description = description
        # op name -> kernel; filled (in place) by the registry whenever plugins change
        self.kernels: dict = KernelTable(self)

    @property
    def name(self) -> str:
        return self.backend.name if self.backend.single_device else f"{self.backend.name}:{self.index}"

    def __repr__(self) -> str:
        return f"Device({self.name!r})"

    def synchronize(self) -> None:
        """Wait until the work queued on this device has finished (no-op for eager backends)."""

    __str__ = name.fget

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return hash((self.backend.name, self.index))


class Backend:
    """Base class of a backend: a name, its devices, and its kernel table.

    Subclasses set ``name``, create their devices, and return ``{op: kernel}`` from ``kernels``.
    docs/backends.md lists the kernels a backend must provide and their calling conventions.
    """

    name = "backend"
    single_device = True  # devices are named "name" rather than "name:i"
    # rank among backends when choosing the default device; higher wins (cpu_numba is 10)
    priority = 0
    # the class (or tuple of classes) of this backend's buffers; checked mode (GRILLY_CHECK=1)
    # rejects kernel results of any other type when it is set
    buffer_type = None

    def devices(self) -> list[Device]:
        raise NotImplementedError

    def kernels(self) -> dict:
        raise NotImplementedError

    def supports_dtype(self, device: Device, dtype) -> bool:
        return True

    def native_bfloat16(self, device: Device) -> frozenset:
        """Namespace ops (of grilly.array.bfloat16.DEVICE_NATIVE) that this device runs on
        bfloat16 arrays itself: their kernels get bfloat16 buffers and return bfloat16 results.
        The array layer computes every other op in float32 (the default: none)."""
        return frozenset()

    def buffer_device(self, buf) -> Device | None:
        """The device holding ``buf``, or None when the backend cannot tell (checked mode)."""
        return None

    def info(self, device: Device) -> dict:
        """Capabilities and facts shown by ``grilly info`` and ``__array_namespace_info__``."""
        return {}

    def stats(self, device: Device) -> dict:
        """Monotonic counters and memory figures for ``gp.device_stats`` (docs/backends.md):
        ints only; a backend reports what it counts (none by default)."""
        return {}

    def reset_peak(self, device: Device) -> None:
        """Start ``stats``' peak memory figure over from what is live now (``gp.reset_peak_
        memory_stats``); nothing to do by default."""

    def profile(self, device: Device) -> dict:
        """GRILLY_PROFILE=1: kernel name -> (count, device seconds) since the device started
        (none by default; ``gp.profile_report`` prints it)."""
        return {}

    def capture(self, device: Device):
        """An object with begin(), end() -> handle, abort() and run(handle) that records the
        kernels called between begin and end once and replays them with run (grilly.jit); None
        where the backend cannot (the default: grilly.jit then calls the kernels again). Where
        it has ``takes_after = True``, run(handle, after) calls ``after()``, which calls the
        kernels that follow the replay (its outputs copied out), and may submit them with it.
        Where it has ``run_io(handle, before, after, outs) -> list``, a replay calls that
        instead: copy each ``(dst, src)`` of ``before``, run, copy each of ``after``, and copy
        each buffer of ``outs`` into a new one (returned in order), buffers of one shape and
        dtype each (a replay's inputs in, in-place writes back, its outputs out)."""
        return None
