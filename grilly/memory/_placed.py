"""Where a memory module keeps what it stores: one device and dtype for its rows.

The memories take host data (numpy arrays, lists: the seed's modules took numpy) and place it
there; a grilly Array on another device is a ValueError naming the call (grilly copies nothing
between devices implicitly). ``Module.to`` moves the stored rows with the module (KeptState)."""
from __future__ import annotations

import numbers
import operator

import numpy as np

from ..array import api as gp
from ..array.array import Array
from ..array.core import resolve_device
from ..array.dtypes import as_dtype
from ..nn.snn.base import KeptState

__all__ = ["Placed", "pos_int", "pos_real"]


def pos_int(v, op: str, name: str) -> int:
    """``v`` (an int or numpy integer, not a bool) if >= 1, else a ValueError naming it."""
    try:
        if isinstance(v, bool):
            raise TypeError
        n = operator.index(v)
    except TypeError:
        n = None
    if n is None or n < 1:
        raise ValueError(f"{op}: {name} must be a positive int, got {v!r}")
    return n


def pos_real(v, op: str, name: str) -> float:
    """``v`` (a real number, numpy's included, not a bool) as a float if > 0, else a
    ValueError naming it."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v > 0:
        raise ValueError(f"{op}: {name} must be a number > 0, got {v!r}")
    return float(v)


class Placed(KeptState):
    """Mixin: ``_device``/``_dtype`` (given to the constructor, or None: the first stored rows'
    device, host data on the default device; their dtype, host data float32), ``_take`` to
    check and place inputs, and the stored rows moved by ``Module.to``."""

    def _place_init(self, device, dtype, op: str) -> None:
        self._device = None if device is None else resolve_device(device, op)
        if dtype is not None:
            dtype = as_dtype(dtype, op)
            if not gp.isdtype(dtype, "real floating"):
                raise TypeError(f"{op}: dtype must be a real floating dtype, got {dtype}")
        self._dtype = dtype

    def _ref(self) -> Array | None:
        """An Array whose device (and dtype) the stored rows have, or None while empty."""
        return None

    def _home(self, r: Array | None) -> tuple:
        """(device, dtype) where host data goes: ``r``'s (the stored rows'), else the
        constructor's."""
        if r is not None:
            return r.device, r.dtype
        dev = self._device if self._device is not None else resolve_device(None)
        return dev, self._dtype if self._dtype is not None else gp.float32

    def _take(self, x, op: str, arg: str, *, store: bool = False,
              like: Array | None = None) -> Array:
        """``x`` as a real floating Array where the memory keeps its rows (or, while it is
        empty, beside ``like``: another argument of the same call); ``store``: cast to the
        memory's dtype if one was given."""
        r = self._ref()
        r = like if r is None else r
        if isinstance(x, Array):
            dev = r.device if r is not None else self._device
            if dev is not None and x.device != dev:
                raise ValueError(f"{op}: {arg} is on {x.device}, the memory on {dev}; move it "
                                 "with to_device() first")
            if not gp.isdtype(x.dtype, "real floating"):
                raise TypeError(f"{op}: {arg} must have a real floating dtype, got {x.dtype}")
            if store and self._dtype is not None and x.dtype != self._dtype:
                x = gp.astype(x, self._dtype)
            return x
        if type(x).__module__.split(".")[0] == "torch":
            x = x.detach().cpu().numpy()
        try:
            h = np.asarray(x)
        except ValueError as e:   # ragged lists
            raise ValueError(f"{op}: {arg} must be a rectangular numeric array: {e}") from e
        if h.dtype.kind not in "biuf":
            raise TypeError(f"{op}: {arg} must be a real numeric array, got "
                            f"{type(x).__name__} of dtype {h.dtype}")
        dev, dt = self._home(r)
        return gp.asarray(h, dtype=dt, device=dev)

    def _to_state(self, conv) -> None:
        """Move the stored rows (and where later host data goes) as ``Module.to`` says."""
        KeptState._to_state(self, conv)
        before = gp.zeros((0,), dtype=self._dtype if self._dtype is not None else gp.float32,
                          device=self._device)
        after = conv(before)
        if after.device != before.device:
            self._device = after.device
        if after.dtype != before.dtype:
            self._dtype = after.dtype
