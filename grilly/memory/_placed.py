"""Where a memory module keeps what it stores: one device and dtype for its rows.

The memories take host data (numpy arrays, lists: the seed's modules took numpy) and place it
there; a grilly Array on another device is a ValueError naming the call (grilly copies nothing
between devices implicitly). ``Module.to`` moves the stored rows with the module (KeptState)."""
from __future__ import annotations

import numbers
import operator
from collections.abc import Mapping

import numpy as np

from ..array import api as gp
from ..array.array import Array
from ..array.core import resolve_device
from ..array.dtypes import as_dtype
from ..nn.snn.base import KeptState

__all__ = ["Placed", "pos_int", "pos_real", "state_fields", "count_list"]


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


def state_fields(state, op: str, names: tuple) -> list:
    """The values of ``names`` in ``state`` (a set_extra_state argument: a mapping with exactly
    those keys), else a TypeError or ValueError naming ``op``."""
    if not isinstance(state, Mapping):
        raise TypeError(f"{op}: state must be a dict with keys {list(names)} (what "
                        f"get_extra_state returns), got {type(state).__name__}")
    if set(state) != set(names):
        raise ValueError(f"{op}: state must have the keys {list(names)}, got {list(state)}")
    return [state[n] for n in names]


def count_list(v, op: str, name: str, n: int) -> list:
    """``v`` as a list of ``n`` non-negative ints, else a ValueError naming it."""
    ok = isinstance(v, (list, tuple)) and len(v) == n and all(
        isinstance(i, numbers.Integral) and not isinstance(i, bool) and i >= 0 for i in v)
    if not ok:
        raise ValueError(f"{op}: {name} must be a list of {n} non-negative ints, got {v!r:.200}")
    return [int(i) for i in v]


def _host(x, op: str, arg: str) -> np.ndarray:
    """Host data (a torch tensor, a list, a NumPy array) as a NumPy array, ragged lists a
    ValueError naming ``op`` and ``arg``."""
    if type(x).__module__.split(".")[0] == "torch":
        x = x.detach().cpu().numpy()
    try:
        return np.asarray(x)
    except ValueError as e:   # ragged lists
        raise ValueError(f"{op}: {arg} must be a rectangular numeric array: {e}") from e


class Placed(KeptState):
    """Mixin: ``_device``/``_dtype`` (given to the constructor, or None: the first stored rows'
    device, host data on the default device; their dtype, host data float32), ``_take`` to
    check and place inputs, and the stored rows moved by ``Module.to``."""

    # The stored rows are the memories' extra state (get_extra_state). A state dict saved before
    # grilly kept them has no '_extra_state' key: a strict load of it still works and leaves the
    # rows as they are (a fresh memory: empty), as a checkpoint without BatchNorm's
    # num_batches_tracked keeps the count. Those checkpoints never held rows, so they say nothing
    # about them, and a user loading weights into a model expects the load to succeed (not to
    # need strict=False, which would hide real missing weights too).
    _optional_state = ("_extra_state",)

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
        h = _host(x, op, arg)
        if h.dtype.kind not in "biuf":
            raise TypeError(f"{op}: {arg} must be a real numeric array, got "
                            f"{type(x).__name__} of dtype {h.dtype}")
        dev, dt = self._home(r)
        return gp.asarray(h, dtype=dt, device=dev)

    def _state_rows(self, x, op: str, arg: str, width: int) -> Array:
        """Rows (n, ``width``) from a state dict (an Array or host data) as a new Array where
        the memory keeps its rows (the stored rows' or constructor's device, else ``x``'s; the
        constructor's dtype, else the stored rows', else ``x``'s (host data: float32)), as
        load_state_dict copies a parameter into the module's device and dtype."""
        if not isinstance(x, Array):
            x = _host(x, op, arg)
        if x.dtype.kind not in "biuf" if isinstance(x, np.ndarray) else \
                not gp.isdtype(x.dtype, ("real floating", "integral")):
            raise TypeError(f"{op}: {arg} must be real numeric data, got dtype {x.dtype}")
        if x.ndim != 2 or x.shape[1] != width:
            raise ValueError(f"{op}: {arg} must be (n, {width}), got shape {tuple(x.shape)}")
        r = self._ref()
        host = not isinstance(x, Array)
        dev = r.device if r is not None else self._device if self._device is not None else (
            resolve_device(None) if host else x.device)
        dt = self._dtype if self._dtype is not None else r.dtype if r is not None else (
            gp.float32 if host or not gp.isdtype(x.dtype, "real floating") else x.dtype)
        return gp.asarray(x, dtype=dt, device=dev, copy=True)

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
