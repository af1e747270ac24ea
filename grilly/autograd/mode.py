"""Thread-local grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``."""
from __future__ import annotations

import functools
import threading

__all__ = ["enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled"]


class _State(threading.local):
    """Per thread, as torch's: a worker thread starts with grad on, whatever other threads set."""

    def __init__(self) -> None:
        self.enabled = True
        self.saved: list[bool] = []   # modes the enclosing set_grad_enabled blocks replaced


state = _State()


def is_grad_enabled() -> bool:
    """Whether operations on arrays that require grad are recorded (this thread)."""
    return state.enabled


class set_grad_enabled:
    """Context manager (and decorator) that sets grad mode to ``mode`` for its body."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def __enter__(self):
        # the mode to restore goes on this thread's stack, not on the object: one no_grad()
        # instance may be entered by several threads at once
        state.saved.append(state.enabled)
        state.enabled = self.mode
        return self

    def __exit__(self, *exc) -> None:
        state.enabled = state.saved.pop()

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with set_grad_enabled(mode):
                return fn(*a, **k)
        return wrapper


class no_grad(set_grad_enabled):
    """Context manager (and decorator) that turns graph recording off for its body."""

    def __init__(self, fn=None) -> None:
        super().__init__(False)

    def __new__(cls, fn=None):
        self = super().__new__(cls)
        if callable(fn):  # used bare as @no_grad
            self.__init__()
            return self(fn)
        return self


class enable_grad(set_grad_enabled):
    """Context manager (and decorator) that turns graph recording on for its body."""

    def __init__(self) -> None:
        super().__init__(True)
