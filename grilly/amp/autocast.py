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

__all__ = ["autocast", "custom_bwd", "custom_fwd", "get_autocast_dtype", "is_autocast_enabled"]

_local = threading.local()
_lock = threading.Lock()
_active = [0]   # regions open in any thread: the dispatch hook is installed while > 0
_LOW = ("float16", "bfloat16")


def _stack() -> list:
    st = getattr(_local, "stack", None)
    if st is None:
        st = _local.stack = []
    return st


def _cast_one(a, target, kind: str, device_type):
    if isinstance(a, Array):
        d = a.dtype
        if d.kind != "f" or d is target:
            return a
        if kind == LOWER and d.name not in ("float32",) + _LOW:   # float64 stays, as torch's
            return a
        if kind == FLOAT32 and d.name not in _LOW:
            return a
        if device_type is not None and str(a.device).split(":")[0] != device_type:
            return a
        return gp.astype(a, target)
    if isinstance(a, (list, tuple)):
        return type(a)(_cast_one(x, target, kind, device_type) for x in a)
    return a


def _hook(name: str, args: tuple) -> tuple:
    st = getattr(_local, "stack", None)
    if not st:
        return args
    enabled, dtype, device_type = st[-1]
    kind = POLICY.get(name) if enabled else None
    if kind is None:
        return args
    target = dtype if kind == LOWER else gp.float32
    return tuple(_cast_one(a, target, kind, device_type) for a in args)


class autocast:
    """``with grilly.amp.autocast(device_type=None, dtype=gp.float16, enabled=True):`` (or as a
    decorator): ops in the policy's LOWER list run in ``dtype``, those in its FLOAT32 list in
    float32, inside the region of this thread; ``device_type`` ("cpu", "vulkan") limits the
    casts to arrays on that kind of device (None: every device). Regions nest; an inner
    ``enabled=False`` region turns autocast off."""

    def __init__(self, device_type: str | None = None, dtype=None, enabled: bool = True,
                 cache_enabled=None) -> None:
        if device_type is not None and not isinstance(device_type, str):
            raise TypeError(f"autocast: device_type must be a str such as 'cpu' or 'vulkan', got "
                            f"{type(device_type).__name__}")
        dtype = gp.float16 if dtype is None else dtype
        if getattr(dtype, "name", None) not in _LOW or getattr(gp, dtype.name, None) is not dtype:
            raise ValueError(f"autocast: dtype must be a grilly low-precision float "
                             f"({', '.join(n for n in _LOW if hasattr(gp, n))}), got {dtype!r}")
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: enabled must be a bool, got {type(enabled).__name__}")
        self.device_type = device_type.split(":")[0] if device_type else None
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


def _applies(region, device_type) -> bool:
    """Whether ``region`` (enabled, dtype, device_type) casts arrays on ``device_type``."""
    return region[0] and (device_type is None or region[2] is None
                          or region[2] == device_type.split(":")[0])


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether this thread is inside an enabled autocast region (torch.is_autocast_enabled);
    with ``device_type`` ("cpu", "vulkan"), one that casts arrays on that kind of device."""
    if device_type is not None and not isinstance(device_type, str):
        raise TypeError(f"is_autocast_enabled: device_type must be a str such as 'cpu' or "
                        f"'vulkan', got {type(device_type).__name__}")
    st = getattr(_local, "stack", None)
    return bool(st) and _applies(st[-1], device_type)


def _mode_key():
    """This thread's innermost region as grilly.jit keys a graph on it."""
    st = getattr(_local, "stack", None)
    if not st:
        return None
    enabled, dtype, device_type = st[-1]
    return (enabled, getattr(dtype, "name", None), device_type) if enabled else None


_dispatch.mode_keys.append(_mode_key)


def get_autocast_dtype(device_type: str | None = None):
    """The low-precision dtype of this thread's innermost region (None outside one; torch
    returns its per-device default there). ``device_type`` is taken for torch's spelling."""
    if device_type is not None and not isinstance(device_type, str):
        raise TypeError(f"get_autocast_dtype: device_type must be a str such as 'cpu' or "
                        f"'vulkan', got {type(device_type).__name__}")
    st = getattr(_local, "stack", None)
    return st[-1][1] if st else None


def _cast_inputs(x, dtype, device_type):
    """custom_fwd's cast: floating Arrays other than float64 (on ``device_type``) to ``dtype``,
    through lists, tuples and dict values, as torch.amp's."""
    if isinstance(x, Array):
        if (x.dtype.kind == "f" and x.dtype.name != "float64" and x.dtype is not dtype
                and (device_type is None or str(x.device).split(":")[0] == device_type)):
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
    if device_type is not None and not isinstance(device_type, str):
        raise TypeError(f"custom_fwd: device_type must be a str such as 'cpu' or 'vulkan', got "
                        f"{type(device_type).__name__}")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    dev = device_type.split(":")[0] if device_type else None

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
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    dev = device_type.split(":")[0] if device_type else None

    @functools.wraps(bwd)
    def decorate_bwd(ctx, *args, **kwargs):
        on = getattr(ctx, "_fwd_used_autocast", None)
        if on is None:
            raise RuntimeError("custom_bwd: the Function's forward was not decorated with "
                               "grilly.amp.custom_fwd")
        with autocast(dev, dtype=ctx._dtype, enabled=on):
            return bwd(ctx, *args, **kwargs)
    return decorate_bwd
