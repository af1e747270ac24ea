"""autocast: a thread-local region in which namespace ops (and the layers that consult the
policy: linear, flash attention, cross entropy) run in the dtypes grilly.amp.policy gives.
The casts are namespace ``astype`` calls, so autograd records them and each gradient comes back
in its parameter's own dtype (float32 master weights)."""
from __future__ import annotations

import functools
import threading
import warnings

from ..array import api as gp
from ..array import dispatch as _dispatch
from ..array.array import Array
from .policy import AS_GIVEN, FLOAT32, LOWER, POLICY

__all__ = ["autocast", "autocast_decrement_nesting", "autocast_increment_nesting",
           "clear_autocast_cache", "custom_bwd", "custom_fwd", "get_autocast_cpu_dtype",
           "get_autocast_dtype", "get_autocast_gpu_dtype", "is_autocast_available",
           "is_autocast_cache_enabled", "is_autocast_cpu_enabled", "is_autocast_enabled",
           "set_autocast_cache_enabled", "set_autocast_cpu_dtype", "set_autocast_cpu_enabled",
           "set_autocast_dtype", "set_autocast_enabled", "set_autocast_gpu_dtype"]

# This thread's autocast state (torch's is thread-local too): ``stack`` holds entries
# (enabled, dtype, device_type), innermost last; a region appends one and, on exit, cuts the
# stack back to its length at entry (``marks``), so what torch.set_autocast_* calls changed
# inside it is undone as torch's autocast restores the state it found. An entry's enabled or
# dtype may be None: the set_* calls change one of them, the other is the one in force below.
_local = threading.local()
_lock = threading.Lock()
_active = [0]   # entries in every thread's stack: the dispatch hook is installed while > 0
_LOW = ("float16", "bfloat16")


def _stack() -> list:
    st = getattr(_local, "stack", None)
    if st is None:
        st = _local.stack = []
    return st


def _marks() -> list:
    m = getattr(_local, "marks", None)
    if m is None:
        m = _local.marks = []
    return m


def _count(n: int) -> None:
    """``n`` entries added to (or, negative, removed from) a stack: the hook is installed while
    any thread has one."""
    with _lock:
        _active[0] += n
        _dispatch.hooks.cast = _hook if _active[0] > 0 else None


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
    """(enabled, dtype) in force for arrays on device type ``kind``: the innermost entries of
    ``st`` that govern it (an entry names one device type or None, every one); regions are per
    device type, as torch's, so a region for another device type leaves the enclosing one in
    force. None if no entry governs ``kind``."""
    en = dt = None
    found = False
    for r in reversed(st):
        if r[2] is None or r[2] == kind:
            found = True
            if en is None:
                en = r[0]
            if dt is None:
                dt = r[1]
            if en is not None and dt is not None:
                break
    if not found:
        return None
    return bool(en), dt if dt is not None else _default_dtype(kind)


def _innermost_dtype(st: list):
    """The dtype of the innermost entry that sets one (None if none does)."""
    for r in reversed(st):
        if r[1] is not None:
            return r[1]
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
    if kind == AS_GIVEN:   # the composition runs uncast (dispatch.op / dispatch.policy)
        return _dispatch.Uncast(args)
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
            dtype = get_autocast_dtype(self.device_type)
            if dtype is None:
                dtype = _default_dtype(self.device_type)
        if getattr(dtype, "name", None) not in _LOW or getattr(gp, dtype.name, None) is not dtype:
            raise ValueError(f"autocast: dtype must be a grilly low-precision float "
                             f"({', '.join(n for n in _LOW if hasattr(gp, n))}), got {dtype!r}")
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: enabled must be a Python bool, got "
                            f"{type(enabled).__module__}.{type(enabled).__qualname__}")
        # cache_enabled (torch's cache of casted weights) changes no result: grilly casts once
        # per use; it is checked as torch checks it, and is_autocast_cache_enabled() reports it
        # inside the region (None: the thread's setting when the region is made, as torch's)
        if cache_enabled is not None and not isinstance(cache_enabled, bool):
            raise TypeError(f"autocast: cache_enabled must be a bool or None, got "
                            f"{type(cache_enabled).__name__}")
        self.dtype, self.enabled = dtype, enabled
        self.cache_enabled = (is_autocast_cache_enabled() if cache_enabled is None
                              else cache_enabled)

    def __enter__(self) -> "autocast":
        st = _stack()
        _marks().append((len(st), is_autocast_cache_enabled()))
        st.append((self.enabled, self.dtype, self.device_type))
        _local.cache = self.cache_enabled
        autocast_increment_nesting()
        _count(1)
        return self

    def __exit__(self, *exc) -> bool:
        st = _stack()
        n, _local.cache = _marks().pop()
        gone = len(st) - n
        del st[n:]   # the region's entry and what set_autocast_* changed inside it
        autocast_decrement_nesting()
        _count(-gone)
        return False

    def __call__(self, fn):
        """Use as a decorator: ``fn`` runs inside this region on every call."""
        @functools.wraps(fn)
        def wrapped(*a, **k):
            with autocast(self.device_type, self.dtype, self.enabled, self.cache_enabled):
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
    if kind is None:   # outside any region: None (torch requires a device type)
        return _innermost_dtype(st)
    r = _region(st, kind)
    return _default_dtype(kind) if r is None else r[1]   # outside: the default, as torch's


# ---- torch's global autocast state: torch.set_autocast_enabled(device_type, enabled), ... ----
def _check_bool(who: str, name: str, v) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"{who}: {name} must be a Python bool, got {type(v).__name__}")
    return v


def _check_low(who: str, dtype):
    if getattr(dtype, "name", None) not in _LOW or getattr(gp, dtype.name, None) is not dtype:
        raise ValueError(f"{who}: dtype must be a grilly low-precision float "
                         f"({', '.join(n for n in _LOW if hasattr(gp, n))}), got {dtype!r}")
    return dtype


def _set(kind, enabled, dtype) -> None:
    """This thread's state for ``kind`` changed (enabled or dtype; None keeps the other): an
    entry above the innermost region, replacing the one an earlier call there made."""
    st, m = _stack(), _marks()
    base = m[-1][0] + 1 if m else 0   # the entries above the innermost region's own
    old = next((i for i in range(len(st) - 1, base - 1, -1) if st[i][2] == kind), None)
    if old is not None:
        en0, dt0, _ = st.pop(old)
        enabled = en0 if enabled is None else enabled
        dtype = dt0 if dtype is None else dtype
    st.append((enabled, dtype, kind))
    added = old is None
    if not m and all(_region(st, k) == (False, _default_dtype(k)) for k in _kinds(st)):
        added -= len(st)   # back to the default state: no entries (and no hook) left
        st.clear()
    _count(int(added))


def set_autocast_enabled(device_type, enabled=None) -> None:
    """torch.set_autocast_enabled(device_type, enabled): turn autocast on or off for arrays on
    ``device_type`` in this thread, until changed again or the enclosing region exits (torch's
    older ``set_autocast_enabled(enabled)``: every device type, as ``autocast()``)."""
    if enabled is None and isinstance(device_type, bool):   # the device-less form
        device_type, enabled = None, device_type
    elif device_type is None:
        raise TypeError("set_autocast_enabled: device_type must be a str such as 'cpu' or "
                        "'vulkan'")
    kind = _device_type(device_type, "set_autocast_enabled")
    _set(kind, _check_bool("set_autocast_enabled", "enabled", enabled), None)


def set_autocast_dtype(device_type: str, dtype) -> None:
    """torch.set_autocast_dtype(device_type, dtype): the low-precision dtype autocast uses for
    arrays on ``device_type`` in this thread (and a region made with ``dtype=None``)."""
    if not isinstance(device_type, str):
        raise TypeError("set_autocast_dtype: device_type must be a str such as 'cpu' or "
                        f"'vulkan', got {type(device_type).__name__}")
    _set(_device_type(device_type, "set_autocast_dtype"), None,
         _check_low("set_autocast_dtype", dtype))


def _nesting() -> int:
    return getattr(_local, "nesting", 0)


def autocast_increment_nesting() -> int:
    """torch.autocast_increment_nesting: this thread's region depth counter, plus one (the new
    value; torch's autocast clears its cast cache when it falls back to 0)."""
    _local.nesting = _nesting() + 1
    return _local.nesting


def autocast_decrement_nesting() -> int:
    """torch.autocast_decrement_nesting: this thread's region depth counter, minus one."""
    _local.nesting = _nesting() - 1
    return _local.nesting


def clear_autocast_cache() -> None:
    """torch.clear_autocast_cache: grilly keeps no cache of cast weights (it casts once per
    use), so there is nothing to clear."""


def is_autocast_cache_enabled() -> bool:
    """torch.is_autocast_cache_enabled: this thread's setting (True unless a region's
    ``cache_enabled=False`` or set_autocast_cache_enabled(False) turned it off)."""
    return getattr(_local, "cache", True)


def set_autocast_cache_enabled(enabled: bool) -> None:
    """torch.set_autocast_cache_enabled: this thread's setting, reported by
    is_autocast_cache_enabled (grilly caches nothing either way, so no result changes)."""
    _local.cache = _check_bool("set_autocast_cache_enabled", "enabled", enabled)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated (as torch's). Please use {new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """torch.is_autocast_cpu_enabled (deprecated): is_autocast_enabled("cpu")."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """torch.set_autocast_cpu_enabled (deprecated): set_autocast_enabled("cpu", enabled)."""
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    """torch.get_autocast_cpu_dtype (deprecated): get_autocast_dtype("cpu")."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    """torch.set_autocast_cpu_dtype (deprecated): set_autocast_dtype("cpu", dtype)."""
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    """torch.get_autocast_gpu_dtype (deprecated; torch's GPU is grilly's "vulkan"):
    get_autocast_dtype("vulkan")."""
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('vulkan')")
    return get_autocast_dtype("vulkan")


def set_autocast_gpu_dtype(dtype) -> None:
    """torch.set_autocast_gpu_dtype (deprecated): set_autocast_dtype("vulkan", dtype)."""
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('vulkan', dtype)")
    set_autocast_dtype("vulkan", dtype)


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
