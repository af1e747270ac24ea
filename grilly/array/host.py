"""The host boundary: Python objects and numpy arrays in, numpy arrays out (numpy is the host
interchange format), and the one host round-trip path: the documented short list of ops that
compute with NumPy/SciPy on the host (``HOST_OPS``) when a device has no kernel for them."""
from __future__ import annotations

import atexit
import os
import threading

import numpy as np

from . import dispatch as _dispatch
from . import dtypes as dt
from .array import Array
from .core import resolve_device

# The ops a device may leave to the host (docs/kernels/linalg.md, "Host round trips").
HOST_OPS = ("cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matrix_rank", "pinv",
            "qr", "slogdet", "solve", "svd", "svdvals", "fft_c2c", "fft_r2c", "fft_c2r")

_TRIPS: dict = {}   # device -> host round trips made by host_call
_TRIPS_LOCK = threading.Lock()


def host_call(op: str, fn, device, *args):
    """``fn`` (NumPy on host arrays) applied to ``args`` with each Array downloaded, its numpy
    results uploaded to ``device``; counts one host round trip on ``device``. A host op
    (dispatch.host_op): grilly.jit replays it on every call with the replay's arrays (on a GPU
    the replay's submission splits there) instead of refusing its download."""
    return _dispatch.host_op(_round_trip, op, fn, device, *args)


def _round_trip(op: str, fn, device, *args):
    with _TRIPS_LOCK:
        _TRIPS[device] = _TRIPS.get(device, 0) + 1
    res = fn(*[a._host() if isinstance(a, Array) else a for a in args])
    kernels = device.kernels

    def up(h):
        h = np.asarray(h)
        d = dt.from_numpy(h.dtype)
        return Array._new(kernels["from_host"](h, d), d, device)
    return tuple(up(r) for r in res) if isinstance(res, (tuple, list)) else up(res)


def host_round_trips(device) -> int:
    """How many host round trips ``host_call`` has made for ``device``."""
    return _TRIPS.get(device, 0)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def scalar_dtype(v) -> dt.DType:
    """The default dtype of a Python scalar."""
    if isinstance(v, bool):
        return dt.bool
    if isinstance(v, int):
        return dt.int64
    if isinstance(v, float):
        return dt.float64
    if isinstance(v, complex):
        return dt.complex128
    raise TypeError(f"asarray: cannot make an array from {type(v).__name__}")


def to_numpy(obj, dtype: dt.DType | None, op: str = "asarray") -> tuple[np.ndarray, dt.DType]:
    """Host data for ``obj`` (a scalar, nested sequence or buffer) and its grilly dtype."""
    if isinstance(obj, (bool, int, float, complex)):
        d = dtype or scalar_dtype(obj)
        if isinstance(obj, int) and not isinstance(obj, bool) and d.kind in "iu":
            info = np.iinfo(d.np)
            if not info.min <= obj <= info.max:
                raise OverflowError(f"{op}: {obj} does not fit in {d.name}")
        if isinstance(obj, complex) and d.kind != "c":
            raise TypeError(f"{op}: a complex value cannot make a {d.name} array")
        if isinstance(obj, float) and d.kind in "biu":
            raise TypeError(f"{op}: a float value cannot make a {d.name} array")
        return np.asarray(obj, dtype=d.np), d
    try:
        h = np.asarray(obj)
    except (OverflowError, ValueError) as e:
        raise type(e)(f"{op}: cannot make an array from the given object ({e})") from None
    if h.dtype == object:
        flat = list(_flatten(obj))
        if flat and all(isinstance(v, int) for v in flat):
            raise OverflowError(f"{op}: Python ints beyond the int64 range")
        raise TypeError(f"{op}: cannot make an array from the given object (mixed or unsupported types)")
    if not h.dtype.isnative and h.dtype.fields is None:
        # big-endian data (from a file, '>f4'): the same values in the machine's byte order
        h = h.astype(h.dtype.newbyteorder("="))
    if dtype is None:
        if h.dtype.kind in "US":
            raise TypeError(f"{op}: strings are not supported")
        d = dt.from_numpy(h.dtype)
    else:
        d = dtype
        if h.dtype.kind == "i" and d.kind in "iu" and h.size:
            info = np.iinfo(d.np)
            if h.min() < info.min or h.max() > info.max:
                raise OverflowError(f"{op}: values do not fit in {d.name}")
    return h, d


def _flatten(obj):
    if isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flatten(o)
    else:
        yield obj


def device_stats(device=None) -> dict:
    """Counters for ``device`` (a Device, a name, or None for the default): the array layer's
    ``host_round_trips`` (calls served on the host, docs/kernels/linalg.md) and what its backend
    counts (Vulkan: ``submits``, ``dispatches``, ``uploads``, ``downloads``, ``held_bytes``,
    ``live_bytes``, ``peak_live_bytes``; docs/backends.md)."""
    dev = resolve_device(device)
    return {**dev.backend.stats(dev), "host_round_trips": host_round_trips(dev)}


def reset_peak_memory_stats(device=None) -> None:
    """Start ``device_stats(device)["peak_live_bytes"]`` (where the backend reports it) over
    from the bytes live now, as torch.cuda.reset_peak_memory_stats does."""
    dev = resolve_device(device)
    dev.backend.reset_peak(dev)


def profile_report(device=None) -> str:
    """Per kernel, GPU time and count on ``device`` since it started (GRILLY_PROFILE=1; the
    backend's ``profile`` hook), as a table sorted by time; empty where nothing was timed."""
    dev = resolve_device(device)
    dev.synchronize()   # timestamps are read as submissions finish
    rows = sorted(dev.backend.profile(dev).items(), key=lambda kv: -kv[1][1])
    if not rows:
        return ""
    total = sum(t for _, (_, t) in rows) or 1.0
    lines = [f"grilly profile: {dev} ({total * 1e3:.3f} ms of GPU time)",
             f"{'kernel':40s} {'count':>8s} {'total ms':>10s} {'mean us':>9s} {'share':>6s}"]
    for name, (n, t) in rows:
        lines.append(f"{name[:40]:40s} {n:8d} {t * 1e3:10.3f} {t / n * 1e6:9.2f} "
                     f"{t / total:6.1%}")
    return "\n".join(lines)


def _print_profiles() -> None:
    from ..backends.registry import registry

    for d in registry.devices():
        try:
            text = profile_report(d)
        except Exception:   # noqa: BLE001 (at exit: a device that cannot report is skipped)
            continue
        if text:
            print(text)


if os.environ.get("GRILLY_PROFILE", "").strip() not in ("", "0"):
    atexit.register(_print_profiles)
