"""Anomaly detection, as torch.autograd.detect_anomaly / set_detect_anomaly: while on, every
node recorded keeps the stack of the forward call that made it, and a backward rule that
returns a NaN gradient raises ``RuntimeError("Function 'XBackward' returned nan values in its
0th output.")`` after a warning that shows that forward stack (a rule that raises shows it too).

It is slow, as torch's: recording a node captures the Python stack, and checking a gradient for
NaN reads a flag back from the device (a host sync after every rule). Use it to debug.

The mode is global (as torch's), not per thread. Only nodes recorded while it is on are
watched (their rule wrapped as the node is made), and only while it is still on in backward:
build the graph and run backward inside the block. The wrapping is installed on
``tape.Node`` while the mode is on and taken off when it goes off, so that the tape itself
costs nothing more when it is off.
"""
from __future__ import annotations

import functools
import os
import threading
import traceback
import warnings

from ..array import dispatch as _dispatch
from ..array.array import Array
from . import mode
from .tape import Node

__all__ = ["detect_anomaly", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
           "set_detect_anomaly"]

_LOCK = threading.Lock()
_MODE = {"enabled": False, "check_nan": True}
_ORIGINAL_INIT = Node.__init__
# the recording's own frames, trimmed from the end of a forward stack
_INTERNAL = (os.path.dirname(os.path.abspath(__file__)),
             os.path.abspath(_dispatch.__file__).rsplit(".", 1)[0])


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return _MODE["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks gradients for NaN (besides recording forward stacks)."""
    return _MODE["check_nan"]


def _forward_stack() -> traceback.StackSummary:
    """The caller's stack, without the recording's own frames at its end."""
    frames = traceback.extract_stack()
    while frames and os.path.abspath(frames[-1].filename).startswith(_INTERNAL):
        frames.pop()
    return traceback.StackSummary.from_list(frames)


def _has_nan(r) -> bool:
    ns = _dispatch.ns
    with mode.no_grad():
        return bool(ns.any(ns.isnan(r)))   # (the host read that makes the mode slow)


def _first_nan(res) -> int | None:
    """The position of the first result (or sequence of results) holding a NaN."""
    for i, r in enumerate(res):
        items = r if isinstance(r, (list, tuple)) else (r,)
        for a in items:
            if isinstance(a, Array) and a._dtype.kind in "fc" and _has_nan(a):
                return i
    return None


def _watch(rule, name: str, stack: traceback.StackSummary):
    """``rule`` that, while the mode is on, shows ``stack`` when it fails and checks its
    results for NaN."""
    @functools.wraps(rule)
    def watched(*args, **kw):
        if not _MODE["enabled"]:
            return rule(*args, **kw)
        fname = f"{name}Backward"
        try:
            res = rule(*args, **kw)
            if _MODE["check_nan"]:
                i = _first_nan(res)
                if i is not None:
                    raise RuntimeError(f"Function '{fname}' returned nan values in its {i}th "
                                       "output.")
        except Exception:
            warnings.warn(f"Error detected in {fname}. Traceback of forward call that caused "
                          "the error:\n" + "".join(stack.format()), stacklevel=2)
            raise
        return res
    watched.__grilly_anomaly__ = True
    return watched


def _node_init(self, *args, **kw) -> None:
    _ORIGINAL_INIT(self, *args, **kw)
    rule = self.rule
    if rule is not None and not getattr(rule, "__grilly_anomaly__", False):
        self.rule = _watch(rule, self.name, _forward_stack())


def _set(enabled: bool, check_nan: bool) -> None:
    with _LOCK:
        _MODE["enabled"], _MODE["check_nan"] = enabled, check_nan
        Node.__init__ = _node_init if enabled else _ORIGINAL_INIT


class set_detect_anomaly:
    """Turn anomaly detection on or off (``mode``); as a context manager, restore the previous
    setting on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = (_MODE["enabled"], _MODE["check_nan"])
        _set(bool(mode), bool(check_nan))

    def __enter__(self) -> "set_detect_anomaly":
        return self

    def __exit__(self, *exc) -> None:
        _set(*self.prev)


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly detection on for its body (a NaN
    gradient raises, naming its op and the forward stack); slow, for debugging."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = bool(check_nan)
        self.saved: list = []
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> "detect_anomaly":
        with _LOCK:
            self.saved.append((_MODE["enabled"], _MODE["check_nan"]))
        _set(True, self.check_nan)
        return self

    def __exit__(self, *exc) -> None:
        _set(*self.saved.pop())

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self:
                return fn(*a, **k)
        return wrapper
