"""autocast: a thread-local region in which namespace ops (and the layers that consult the
policy: linear, flash attention, cross entropy) run in the dtypes grilly.amp.policy gives.
The casts are namespace ``astype`` calls, so autograd records them and each gradient comes back
in its parameter's own dtype (float32 master weights)."""
from __future__ import annotations

import functools
import threading

from ..array import api as gp
from ..array import dispatch as _dispatch
from ..array.array import Array
from .policy import FLOAT32, LOWER, POLICY

__all__ = ["autocast", "custom_bwd", "custom_fwd", "get_autocast_dtype", "is_autocast_available",
           "is_autocast_enabled"]

_local = threading.local()
_lock = threading.Lock()
_active = [0]   # regions open in any thread: the dispatch hook is installed while > 0
_LOW = ("float16", "bfloat16")


def _stack() -> list:
    st = getattr(_local, "stack", None)
    if st is None:
        st = _local.stack = []
    return st


_KIND_OF: dict = {}   # Device -> its type name (every autocast op asks, for each array)


def _kind(device) -> str:
    """The device type of a Device or a name ("vulkan:0" -> "vulkan")."""
    k = _KIND_OF.get(device)
    if k is None:
        k = str(device).split(":")[0]
        if not isinstance(device, str):
            _KIND_OF[device] = k
    return k


def _device_type(device_type, who: str):
    """``device_type`` checked and reduced to its kind ("vulkan:0" -> "vulkan"); None stays.
    A name grilly has no device type for (torch's "cuda", "mps", ...) is a ValueError: as a
    region's filter it would cast nothing, silently."""
    if device_type is None:
        return None
    if not isinstance(device_type, str):
        raise TypeError(f"{who}: device_type must be a str such as 'cpu' or 'vulkan', got "
                        f"{type(device_type).__name__}")
    kind = _kind(device_type)
    # "vulkan" is always a device type (code written for a GPU runs where none is found, its
    # region casting nothing there, as torch's "cuda" region on a machine without CUDA)
    known = {"cpu", "vulkan"} | {_kind(d) for d in gp.devices()}
    if kind not in known:
        raise ValueError(f"{who}: device_type {device_type!r} is not a grilly device type "
                         f"({', '.join(sorted(known))}; a GPU is 'vulkan', None is every "
                         f"device)")
    return kind


def _default_dtype(kind):
    """A region's dtype where none is given or in force: bfloat16 for "cpu" (torch's CPU
    default: no GradScaler needed), float16 elsewhere (torch's CUDA default)."""
    return gp.bfloat16 if kind == "cpu" else gp.float16


def _region(st: list, kind):
    """The innermost region of ``st`` that governs arrays on device type ``kind`` (a region
    names one device type or None, every one): regions are per device type, as torch's, so a
    region for another device type leaves the enclosing one in force. None if there is none."""
    for r in reversed(st):
        if r[2] is None or r[2] == kind:
            return r
    return None


def _cast_one(a, kind: str, st: list, memo: dict):
    if isinstance(a, Array):
        d = a.dtype
        if d.kind != "f":
            return a
        if kind == LOWER and d.name not in ("float32",) + _LOW:   # float64 stays, as torch's
            return a
        if kind == FLOAT32 and d.name not in _LOW:
            return a
        dev = _kind(a._device)
        r = memo.get(dev)
        if r is None:
            r = memo[dev] = _region(st, dev) or (False,)
        if not r[0]:
            return a
        target = r[1] if kind == LOWER else gp.float32
        return a if d is target else gp.astype(a, target)
    if isinstance(a, (list, tuple)):
        return type(a)(_cast_one(x, kind, st, memo) for x in a)
    return a


def _hook(name: str, args: tuple) -> tuple:
    st = getattr(_local, "stack", None)
    if not st or _dispatch.cast_suspended():   # (an in-place op: torch's autocast skips them)
        return args
    kind = POLICY.get(name)
    if kind is None:
        return args
    memo: dict = {}   # device type -> its region (an op's arrays share one, mostly)
    return tuple(_cast_one(a, kind, st, memo) for a in args)


class autocast:
    """``with grilly.amp.autocast(device_type=None, dtype=None, enabled=True):`` (or as a
    decorator): ops in the policy's LOWER list run in ``dtype``, those in its FLOAT32 list in
    float32, inside the region of this thread; ``device_type`` ("cpu", "vulkan") limits the
    casts to arrays on that kind of device (None: every device). Regions nest per device type,
    as torch's: an inner ``enabled=False`` region turns autocast off for its device type, and
    ``dtype=None`` is the enclosing region's dtype for it (outside any: bfloat16 for "cpu", as
    torch's CPU default, float16 otherwise)."""

    def __init__(self, device_type: str | None = None, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        self.device_type = _device_type(device_type, "autocast")
        if dtype is None:   # torch's: the dtype in force for this device type, at construction
            st = getattr(_local, "stack", None) or []
            r = st[-1] if st and self.device_type is None else _region(st, self.device_type)
            dtype = _default_dtype(self.device_type) if r is None else r[1]
        if getattr(dtype, "name", None) not in _LOW or getattr(gp, dtype.name, None) is not dtype:
            raise ValueError(f"autocast: dtype must be a grilly low-precision float "
                             f"({', '.join(n for n in _LOW if hasattr(gp, n))}), got {dtype!r}")
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: enabled must be a Python bool, got "
                            f"{type(enabled).__module__}.{type(enabled).__qualname__}")
        # cache_enabled (torch's cache of casted weights) changes no result: grilly casts once
        # per use; it is checked as torch checks it
        if cache_enabled is not None and not isinstance(cache_enabled, bool):
            raise TypeError(f"autocast: cache_enabled must be a bool or None, got "
                            f"{type(cache_enabled).__name__}")
        self.dtype, self.enabled = dtype, enabled

    def __enter__(self) -> "autocast":
        _stack().append((self.enabled, self.dtype, self.device_type))
        with _lock:
            _active[0] += 1
            _dispatch.hooks.cast = _hook
        return self

    def __exit__(self, *exc) -> bool:
        _stack().pop()
        with _lock:
            _active[0] -= 1
            if _active[0] == 0:
                _dispatch.hooks.cast = None
        return False

    def __call__(self, fn):
        """Use as a decorator: ``fn`` runs inside this region on every call."""
        @functools.wraps(fn)
        def wrapped(*a, **k):
            with autocast(self.device_type, self.dtype, self.enabled):
                return fn(*a, **k)
        return wrapped


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can cast arrays on ``device_type`` (torch.amp.is_autocast_available):
    True for grilly's device types ("cpu", "vulkan", "vulkan:0"), False for torch's others
    ("cuda", "mps", ...), so ported code can test before opening a region."""
    if not isinstance(device_type, str):
        raise TypeError(f"is_autocast_available: device_type must be a str such as 'cpu' or "
                        f"'vulkan', got {type(device_type).__name__}")
    try:
        _device_type(device_type, "is_autocast_available")
    except ValueError:
        return False
    return True


def _kinds(st: list) -> list:
    """The device types the regions of ``st`` name, None (every other device) included."""
    return list(dict.fromkeys(r[2] for r in st))


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether this thread's autocast state casts arrays on ``device_type`` ("cpu", "vulkan";
    torch.is_autocast_enabled(device_type)); None: on any device."""
    kind = _device_type(device_type, "is_autocast_enabled")
    st = getattr(_local, "stack", None)
    if not st:
        return False
    if kind is not None:
        r = _region(st, kind)
        return r is not None and r[0]
    return any(_region(st, k)[0] for k in _kinds(st))


def _mode_key():
    """This thread's autocast state as grilly.jit keys a graph on it: each device type's
    (enabled) dtype."""
    st = getattr(_local, "stack", None)
    if not st:
        return None
    key = tuple((k, r[1].name) for k in _kinds(st) if (r := _region(st, k))[0])
    return key or None


_dispatch.mode_keys.append(_mode_key)


def get_autocast_dtype(device_type: str | None = None):
    """The low-precision dtype in force for ``device_type`` in this thread (its innermost
    region's, enabled or not; None: the innermost region's). Outside any region: the device
    type's default (bfloat16 for "cpu", float16 else), as torch's; None without a device
    type."""
    kind = _device_type(device_type, "get_autocast_dtype")
    st = getattr(_local, "stack", None) or []
    r = (st[-1] if st else None) if kind is None else _region(st, kind)
    if r is None:   # outside any region: None, or the device type's default, as torch's
        return None if kind is None else _default_dtype(kind)
    return r[1]


def _cast_inputs(x, dtype, device_type):
    """custom_fwd's cast: floating Arrays other than float64 (on ``device_type``) to ``dtype``,
    through lists, tuples and dict values, as torch.amp's."""
    if isinstance(x, Array):
        if (x.dtype.kind == "f" and x.dtype.name != "float64" and x.dtype is not dtype
                and (device_type is None or _kind(x.device) == device_type)):
            return gp.astype(x, dtype)
        return x
    if isinstance(x, (list, tuple)):
        return type(x)(_cast_inputs(v, dtype, device_type) for v in x)
    if isinstance(x, dict):
        return {k: _cast_inputs(v, dtype, device_type) for k, v in x.items()}
    return x


def custom_fwd(fwd=None, *, device_type: str | None = None, cast_inputs=None):
    """Decorator for a grilly.autograd.Function's ``forward`` (torch.amp.custom_fwd): it runs
    in the caller's autocast state, which ``custom_bwd`` restores for backward; with
    ``cast_inputs`` (a dtype) and inside an enabled region, its floating array arguments are
    cast to ``cast_inputs`` and it runs with autocast off."""
    dev = _device_type(device_type, "custom_fwd")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(ctx, *args, **kwargs):
        ctx._dtype = get_autocast_dtype(dev)
        on = is_autocast_enabled(dev)
        if cast_inputs is None or not on:
            ctx._fwd_used_autocast = on
            return fwd(ctx, *args, **kwargs)
        ctx._fwd_used_autocast = False
        with autocast(dev, enabled=False):
            return fwd(ctx, *_cast_inputs(args, cast_inputs, dev),
                       **_cast_inputs(kwargs, cast_inputs, dev))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str | None = None):
    """Decorator for a grilly.autograd.Function's ``backward`` (torch.amp.custom_bwd): it runs
    in the autocast state its ``custom_fwd`` forward ran in."""
    dev = _device_type(device_type, "custom_bwd")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(ctx, *args, **kwargs):
        on = getattr(ctx, "_fwd_used_autocast", None)
        if on is None:
            raise RuntimeError("custom_bwd: the Function's forward was not decorated with "
                               "grilly.amp.custom_fwd")
        with autocast(dev, dtype=ctx._dtype, enabled=on):
            return bwd(ctx, *args, **kwargs)
    return decorate_bwd
