"""Thread-local grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, and
``inference_mode``."""
from __future__ import annotations

import functools
import inspect
import threading

__all__ = ["enable_grad", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled",
           "no_grad", "set_grad_enabled"]


class _State(threading.local):
    """Per thread, as torch's: a worker thread starts with grad on, whatever other threads set."""

    def __init__(self) -> None:
        self.enabled = True      # whether ops are recorded (what the recording code reads)
        self.grad = True         # grad mode as set by the blocks (set_grad_enabled, ...)
        self.inference = False   # in inference_mode: nothing records, whatever grad mode says
        self.saved: list[tuple] = []   # (enabled, grad, inference) the enclosing blocks replaced


state = _State()


def is_grad_enabled() -> bool:
    """Whether operations on arrays that require grad are recorded (this thread); as torch's,
    also True in inference mode under enable_grad(), where nothing records."""
    return state.enabled or (state.inference and state.grad)


def is_inference_mode_enabled() -> bool:
    """Whether this thread is in an ``inference_mode()`` block."""
    return state.inference


def _push(grad: bool, inference: bool) -> None:
    state.saved.append((state.enabled, state.grad, state.inference))
    state.grad, state.inference = grad, inference
    state.enabled = grad and not inference


def _pop() -> None:
    state.enabled, state.grad, state.inference = state.saved.pop()


class set_grad_enabled:
    """Context manager (and decorator) that sets grad mode to ``mode`` for its body; called on
    its own (``gp.set_grad_enabled(False)``) it sets grad mode from then on, as torch's."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)
        self._before = None
        if type(self) is set_grad_enabled:
            # torch's function form sets the mode at once; a ``with`` or decorator use undoes
            # it on exit (or at decoration) from the state kept here
            self._before = (state.enabled, state.grad, state.inference)
            state.grad = self.mode
            state.enabled = self.mode and not state.inference

    def __enter__(self):
        # the mode to restore goes on this thread's stack, not on the object: one no_grad()
        # instance may be entered by several threads at once
        before, self._before = self._before, None
        if before is not None:   # the first use after the call that set the mode already
            state.saved.append(before)
            state.grad = self.mode
            state.enabled = self.mode and not state.inference
            return self
        _push(self.mode, state.inference)
        return self

    def __exit__(self, *exc) -> None:
        _pop()

    def __call__(self, fn):
        if self._before is not None:   # a decorator: the mode applies inside fn only
            state.enabled, state.grad, state.inference = self._before
            self._before = None
        if inspect.isgeneratorfunction(fn):
            return _generator(self, fn)

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self:   # (reentrant: the state is on the thread's stack)
                return fn(*a, **k)
        return wrapper


def _generator(ctx, fn):
    """Generator function ``fn`` run in mode ``ctx`` on each resumption, the caller's mode kept
    between them (torch's decorators do the same)."""
    @functools.wraps(fn)
    def wrapper(*a, **k):
        gen = fn(*a, **k)
        try:
            with ctx:
                out = gen.send(None)
            while True:
                try:
                    sent = yield out
                except GeneratorExit:
                    with ctx:
                        gen.close()
                    raise
                except BaseException as e:
                    with ctx:
                        out = gen.throw(e)
                else:
                    with ctx:
                        out = gen.send(sent)
        except StopIteration as e:
            return e.value
    return wrapper


class _BareDecorator:
    """A mode class also used bare as a decorator (``@no_grad``: the function comes as the
    first argument; the mode is then its default)."""

    def __new__(cls, arg=None):
        self = super().__new__(cls)
        if callable(arg):
            self.__init__()
            return self(arg)
        return self


class no_grad(_BareDecorator, set_grad_enabled):
    """Context manager (and decorator) that turns graph recording off for its body."""

    def __init__(self, fn=None) -> None:
        super().__init__(False)


class enable_grad(_BareDecorator, set_grad_enabled):
    """Context manager (and decorator, bare or called) that turns graph recording on for its
    body."""

    def __init__(self, fn=None) -> None:
        super().__init__(True)


class inference_mode(_BareDecorator, set_grad_enabled):
    """Context manager (and decorator, bare or called) for inference, as torch's: its body
    records no graph (results do not require grad), and ``enable_grad()`` inside does not turn
    recording back on. ``inference_mode(False)`` leaves inference mode and turns grad on."""

    def __init__(self, mode: bool = True) -> None:
        super().__init__(not mode)
        self.inference = bool(mode)

    def __enter__(self):
        _push(not self.inference, self.inference)
        return self
