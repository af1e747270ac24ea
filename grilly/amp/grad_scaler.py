"""GradScaler: loss scaling for float16 training (torch.amp.GradScaler's semantics).

``scaler.scale(loss).backward()`` makes small float16 gradients representable; ``unscale_``
divides the gradients back in place and looks for inf/NaN; ``step`` runs the optimizer unless
one was found; ``update`` shrinks the scale after an overflow (``backoff_factor``) and grows it
after ``growth_interval`` clean steps (``growth_factor``). The inf/NaN check and the unscale run
on the device in one pass per gradient (the ``amp_unscale`` kernel), each or-ing one device
flag, and ``step`` reads that flag once, the step's only host read.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Iterable

from ..array import api as gp
from ..array import optim_steps as _steps
from ..array.array import Array
from ..autograd.mode import no_grad
from .autocast import _device_type

__all__ = ["GradScaler"]


def _f32(x: float) -> float:
    """``x`` rounded to float32 (inf past its range): torch keeps the scale in a float32
    tensor, so its growth, backoff and new values are float32's."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


_F32_TINY = 2.0 ** -126   # float32's smallest normal number


def _refuse_trace(what: str) -> None:
    """JitError where ``what`` runs inside a grilly.jit trace: a replay would get it wrong."""
    from ..jit.tracer import JitError, tracing

    if tracing():
        raise JitError(f"GradScaler.{what} inside a grilly.jit trace: the scale is a Python "
                       "number a replay would keep (update() changes it), and step() reads the "
                       "device's inf/NaN flag to decide whether the optimizer steps (a host "
                       "read); run a training step with a GradScaler eagerly")


def _any_set(flags) -> bool:
    """Whether any device's inf/NaN flag is set (one host read each)."""
    return any(bool(f) for f in flags or ())


class GradScaler:
    """Dynamic loss scaling (torch.amp.GradScaler's interface and rules)."""

    def __init__(self, device: str | None = None, init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        if not (init_scale > 0 and math.isfinite(_f32(init_scale))):
            raise ValueError(f"GradScaler: init_scale must be > 0 and finite in float32, got "
                             f"{init_scale}")
        if not growth_factor > 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got {backoff_factor}")
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) \
                or growth_interval < 1:
            raise ValueError(f"GradScaler: growth_interval must be an int >= 1, got "
                             f"{growth_interval!r}")
        # torch's first argument ("cuda", "cpu"): the scaler works on every device, but a name
        # grilly has no device type for is refused as autocast refuses it (it was kept unread)
        if device is not None and not isinstance(device, str) and device not in gp.devices():
            raise TypeError(f"GradScaler: device must be a str such as 'cpu' or 'vulkan', a grilly "
                            f"Device or None, got {type(device).__name__}")
        if isinstance(device, str):
            _device_type(device, "GradScaler")
        self.device = device
        self._scale = _f32(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._enabled = bool(enabled)
        self._per_opt: dict = {}   # id(optimizer) -> {"unscaled": bool, "found": [flag per device]}

    # ---- the step ------------------------------------------------------------------------
    def is_enabled(self) -> bool:
        """Whether scaling is on (``enabled=False`` makes every method a pass-through)."""
        return self._enabled

    def scale(self, outputs):
        """``outputs`` times the current scale: an Array, or (as torch's) any iterable of
        them, nested; lists and tuples keep their type, other iterables come back lazily."""
        if not self._enabled:
            return outputs
        _refuse_trace("scale")
        if isinstance(outputs, Array):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, Iterable) and not isinstance(outputs, (str, bytes, dict)):
            return map(self.scale, outputs)
        raise TypeError(f"GradScaler.scale: expected a grilly Array or an iterable of them, got "
                        f"{type(outputs).__name__}")

    def _state(self, optimizer) -> dict:
        return self._per_opt.setdefault(id(optimizer), {"unscaled": False, "found": None})

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, and note any inf/NaN (on
        the device). Once per step, before gradient clipping."""
        if not self._enabled:
            return
        _refuse_trace("unscale_")
        st = self._state(optimizer)
        if "skipped" in st:
            raise RuntimeError("GradScaler.unscale_: called after step() on this optimizer "
                               "(unscale_ before step, then update)")
        if st["unscaled"]:
            raise RuntimeError("GradScaler.unscale_: already called on this optimizer since "
                               "the last update()")
        inv = _f32(1.0 / self._scale)   # torch's float32 reciprocal, float64 gradients too
        # a scale above 2**126 has a subnormal float32 reciprocal, which a device that flushes
        # subnormals (NVIDIA's Vulkan driver) reads as 0: it is applied as two normal factors,
        # inv * 2**64 then 2**-64 (exact powers of two: the same product where it is normal)
        split = 0.0 < inv < _F32_TINY
        found: dict = {}   # device -> its 0-d uint32 flag
        grads = [p.grad for group in optimizer.param_groups for p in group["params"]
                 if p.grad is not None]
        with no_grad(), _steps.batched():   # one dispatch for all the gradients where it can
            for g in grads:
                flag = found.get(g.device)
                if flag is None:
                    flag = found[g.device] = gp.zeros((), dtype=gp.uint32, device=g.device)
                # one pass: the check and the unscale
                _steps.amp_unscale(g, flag, inv * 2.0 ** 64 if split else inv)
        if split:   # (a batch of its own: a batch must not update a gradient twice)
            with no_grad(), _steps.batched():
                for g in grads:
                    _steps.amp_unscale(g, found[g.device], 2.0 ** -64)
        st["unscaled"], st["found"] = True, list(found.values())

    def step(self, optimizer, *args, **kwargs):
        """Unscale (if not done yet) and run ``optimizer.step(*args, **kwargs)`` unless a
        gradient held inf or NaN; returns what step returned, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        _refuse_trace("step")
        if "closure" in kwargs:   # the closure would recompute unscaled gradients (torch too)
            raise RuntimeError("GradScaler.step: a closure is not supported while the scaler is "
                               "enabled")
        st = self._state(optimizer)
        if "skipped" in st:
            raise RuntimeError("GradScaler.step: already called on this optimizer since the last "
                               "update()")
        if not st["unscaled"]:
            self.unscale_(optimizer)
        if not st["found"]:   # torch asserts it too: a backward was forgotten, most likely
            raise RuntimeError("GradScaler.step: none of this optimizer's parameters has a "
                               "gradient (call scaler.scale(loss).backward() first)")
        st["skipped"] = _any_set(st["found"])   # the step's one host read (per device)
        if st["skipped"]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | None = None) -> None:
        """Set the scale for the next step: backoff after an overflow in any optimizer's
        step, growth after ``growth_interval`` clean steps in a row (or ``new_scale``)."""
        if not self._enabled:
            return
        if new_scale is not None:
            if isinstance(new_scale, Array):
                if new_scale.size != 1:
                    raise ValueError(f"GradScaler.update: new_scale must be a float or a "
                                     f"1-element array, got shape {new_scale.shape}")
                new_scale = float(gp.reshape(new_scale, ()))
            if not new_scale > 0:
                raise ValueError(f"GradScaler.update: new_scale must be > 0, got {new_scale}")
            self._scale = _f32(new_scale)
        else:
            if not any(s["found"] for s in self._per_opt.values()):
                # optimizer.step() called instead of scaler.step(optimizer) would step on
                # scaled gradients and never move the scale (torch asserts as well)
                raise RuntimeError("GradScaler.update: no inf/NaN checks were recorded since the "
                                   "last update (call scaler.step(optimizer) before update)")
            overflow = False
            for s in self._per_opt.values():
                if "skipped" not in s:   # unscaled but not stepped: read its flag now
                    s["skipped"] = _any_set(s["found"])
                overflow = overflow or s["skipped"]
            if overflow:
                self._scale = _f32(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = _f32(self._scale * self._growth_factor)
                    if math.isfinite(grown):   # torch's: the scale never grows to inf
                        self._scale = grown
                    self._growth_tracker = 0
        self._per_opt = {}

    # ---- state ---------------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale grows by after ``growth_interval`` clean steps."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the growth factor (torch's setter)."""
        if not new_factor > 1.0:
            raise ValueError(f"GradScaler.set_growth_factor: must be > 1, got {new_factor}")
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after an overflow."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the backoff factor (torch's setter)."""
        if not 0.0 < new_factor < 1.0:
            raise ValueError(f"GradScaler.set_backoff_factor: must be in (0, 1), got {new_factor}")
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        """How many clean steps in a row grow the scale."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the growth interval (torch's setter)."""
        if isinstance(new_interval, bool) or not isinstance(new_interval, int) or new_interval < 1:
            raise ValueError(f"GradScaler.set_growth_interval: must be an int >= 1, got "
                             f"{new_interval!r}")
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        """Clean steps in a row since the scale last changed (torch's private accessor)."""
        return self._growth_tracker if self._enabled else 0

    def state_dict(self) -> dict:
        """The scale and its update rule's state (empty when disabled, as torch's)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state: dict) -> None:
        """Restore what ``state_dict`` returned."""
        if not self._enabled:
            return
        if not state:
            raise RuntimeError("GradScaler.load_state_dict: the state is empty (saved from a "
                               "disabled scaler)")
        self._scale = _f32(float(state["scale"]))
        self._growth_factor = float(state["growth_factor"])
        self._backoff_factor = float(state["backoff_factor"])
        self._growth_interval = int(state["growth_interval"])
        self._growth_tracker = int(state["_growth_tracker"])
