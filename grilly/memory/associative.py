"""Associative recall (a modern Hopfield network, Ramsauer et al. 2020): stored patterns X
(n, d); a cue xi is updated ``xi <- X^T softmax(beta X xi)`` for a few steps and converges to
the stored pattern it is closest to (one step suffices when the patterns are well separated)."""
from __future__ import annotations

import threading

from ..array import api as gp
from ..array.array import Array
from ..nn import functional as F
from ..nn.module import Module
from ._placed import Placed, pos_int, pos_real, state_fields

__all__ = ["AssociativeMemory"]

_LOCK = threading.Lock()   # (one for every memory: a lock attribute would stop deepcopy)


class AssociativeMemory(Placed, Module):
    """Store patterns (``store``), recall the closest one from a noisy or partial cue."""

    def __init__(self, dim: int, beta: float = 8.0, steps: int = 3, *, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.dim = pos_int(dim, "AssociativeMemory", "dim")
        self.steps = pos_int(steps, "AssociativeMemory", "steps")
        self.beta = pos_real(beta, "AssociativeMemory", "beta")
        self._place_init(device, dtype, "AssociativeMemory")
        self.patterns: Array | None = None

    def _ref(self):
        return self.patterns

    def get_extra_state(self) -> dict:
        """The stored patterns for ``state_dict``: {"patterns" (n, dim)}."""
        X = self.patterns
        if X is None:
            dev, dt = self._home(None)
            X = gp.zeros((0, self.dim), dtype=dt, device=dev)
        return {"patterns": X.detach()}

    def set_extra_state(self, state: dict) -> None:
        """Restore the patterns ``get_extra_state`` gave (placed on the memory's device and
        dtype)."""
        op = "AssociativeMemory.set_extra_state"
        (X,) = state_fields(state, op, ("patterns",))
        X = self._state_rows(X, op, "patterns", self.dim)
        self.patterns = X if X.shape[0] else None

    def store(self, patterns: Array) -> None:
        """Add rows of ``patterns`` (n, dim)."""
        patterns = self._take(patterns, "AssociativeMemory.store", "patterns", store=True)
        if patterns.ndim != 2 or patterns.shape[1] != self.dim:
            raise ValueError(f"AssociativeMemory.store: patterns must be (n, {self.dim}), got "
                             f"{patterns.shape}")
        p = gp.asarray(patterns, copy=True)
        with _LOCK:   # read-modify-write: two threads storing at once keep both
            old = self.patterns
            self.patterns = p if old is None else gp.concat([old, p], axis=0)

    def reset(self) -> None:
        """Forget every pattern."""
        self.patterns = None

    def forward(self, cue: Array) -> Array:
        """The recalled pattern(s) for ``cue`` (dim,) or (b, dim)."""
        X = self.patterns   # once: another thread may store meanwhile
        if X is None:
            raise RuntimeError("AssociativeMemory: nothing stored yet")
        cue = self._take(cue, "AssociativeMemory", "cue")
        if cue.ndim not in (1, 2) or cue.shape[-1] != self.dim:
            raise ValueError(f"AssociativeMemory: cue must be ({self.dim},) or (b, {self.dim}), "
                             f"got shape {cue.shape}")
        x = cue if cue.ndim == 2 else gp.reshape(cue, (1, -1))
        for _ in range(self.steps):
            w = F.softmax(gp.matmul(x, gp.matrix_transpose(X)) * self.beta, dim=-1)
            x = gp.matmul(w, X)
        return x if cue.ndim == 2 else x[0]

    recall = forward
