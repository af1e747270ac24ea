"""Episodic memory: episodes are sequences of states (T, dim) stored with a context vector;
``recall`` by context or by a cue state returns the best-matching episode (and where in it the
cue falls), ``complete`` continues a partial sequence from the matching episode."""
from __future__ import annotations

import threading

from ..array import api as gp
from ..array.array import Array
from ..nn.module import Module
from ._placed import Placed, count_list, pos_int, state_fields

__all__ = ["EpisodicMemory"]

_LOCK = threading.Lock()   # (one for every memory: a lock attribute would stop deepcopy)


def _cos(a: Array, b: Array) -> Array:
    """Cosine similarity of rows of a (n, d) with b (d,): (n,)."""
    na = gp.sqrt(gp.sum(a * a, axis=-1)) + 1e-12
    nb = gp.sqrt(gp.sum(b * b)) + 1e-12
    return gp.matmul(a, b) / (na * nb)


class EpisodicMemory(Placed, Module):
    """A store of (sequence, context) episodes with similarity-based recall."""

    def __init__(self, dim: int, context_dim: int | None = None, capacity: int = 1000, *,
                 device=None, dtype=None) -> None:
        super().__init__()
        context_dim = dim if context_dim is None else context_dim
        dim, context_dim, capacity = (pos_int(v, "EpisodicMemory", n) for n, v in (
            ("dim", dim), ("context_dim", context_dim), ("capacity", capacity)))
        self.dim, self.context_dim, self.capacity = dim, context_dim, capacity
        self._place_init(device, dtype, "EpisodicMemory")
        self.episodes: list[tuple[Array, Array]] = []

    def _ref(self):
        return self.episodes[0][0] if self.episodes else None

    def __len__(self) -> int:
        return len(self.episodes)

    def get_extra_state(self) -> dict:
        """The episodes for ``state_dict``: {"sequences" (their states one after another,
        (sum T, dim)), "lengths" (each T), "contexts" (n, context_dim)}."""
        eps = list(self.episodes)
        dev, dt = self._home(self._ref())
        if not eps:
            return {"sequences": gp.zeros((0, self.dim), dtype=dt, device=dev), "lengths": [],
                    "contexts": gp.zeros((0, self.context_dim), dtype=dt, device=dev)}
        return {"sequences": gp.concat([s for s, _ in eps], axis=0).detach(),
                "lengths": [s.shape[0] for s, _ in eps],
                "contexts": gp.stack([c for _, c in eps], axis=0).detach()}

    def set_extra_state(self, state: dict) -> None:
        """Restore the episodes ``get_extra_state`` gave (placed on the memory's device and
        dtype)."""
        op = "EpisodicMemory.set_extra_state"
        seqs, lengths, ctxs = state_fields(state, op, ("sequences", "lengths", "contexts"))
        seqs = self._state_rows(seqs, op, "sequences", self.dim)
        ctxs = self._state_rows(ctxs, op, "contexts", self.context_dim)
        n = ctxs.shape[0]
        lengths = count_list(lengths, op, "lengths", n)
        if sum(lengths) != seqs.shape[0] or 0 in lengths:
            raise ValueError(f"{op}: lengths must be positive and add up to the {seqs.shape[0]} "
                             f"rows of sequences, got {lengths}")
        if n > self.capacity:
            raise ValueError(f"{op}: {n} episodes do not fit the memory's capacity "
                             f"{self.capacity}")
        eps, at = [], 0
        for i, t in enumerate(lengths):
            eps.append((seqs[at:at + t], ctxs[i]))
            at += t
        self.episodes = eps

    def store(self, sequence: Array, context: Array) -> int:
        """Add an episode (sequence (T, dim), context (context_dim,)); the oldest goes when
        full. Returns its index."""
        sequence = self._take(sequence, "EpisodicMemory.store", "sequence", store=True)
        context = self._take(context, "EpisodicMemory.store", "context", store=True,
                             like=sequence)
        if sequence.ndim != 2 or sequence.shape[1] != self.dim or sequence.shape[0] == 0:
            raise ValueError(f"EpisodicMemory.store: sequence must be (T, {self.dim}) with "
                             f"T >= 1, got {sequence.shape}")
        if context.shape != (self.context_dim,):
            raise ValueError(f"EpisodicMemory.store: context must be ({self.context_dim},), got "
                             f"{context.shape}")
        ep = (gp.asarray(sequence, copy=True), gp.asarray(context, copy=True))
        with _LOCK:   # a new list, assigned at once: a recall in another thread reads a whole state
            eps = self.episodes
            self.episodes = eps[max(0, len(eps) - self.capacity + 1):] + [ep]
            return len(self.episodes) - 1

    def reset(self) -> None:
        """Forget every episode."""
        self.episodes = []

    def recall(self, *, context: Array | None = None, cue: Array | None = None) -> dict:
        """The episode whose context (or one of whose states) is most similar to ``context``
        (or ``cue``): {"index", "sequence", "context", "score", "step" (cue only)}."""
        if (context is None) == (cue is None):
            raise ValueError("EpisodicMemory.recall: give exactly one of context or cue")
        if context is not None:
            context = self._take(context, "EpisodicMemory.recall", "context")
        else:
            cue = self._take(cue, "EpisodicMemory.recall", "cue")
        want = (self.context_dim,) if context is not None else (self.dim,)
        got = (context if context is not None else cue).shape
        if got != want:
            raise ValueError(f"EpisodicMemory.recall: {'context' if context is not None else 'cue'}"
                             f" must be {want}, got {got}")
        eps = list(self.episodes)   # one snapshot: another thread may store meanwhile
        if not eps:
            raise RuntimeError("EpisodicMemory.recall: no episodes stored")
        if context is not None:
            sims = _cos(gp.stack([c for _, c in eps], axis=0), context)
            i = int(gp.argmax(sims))
            return {"index": i, "sequence": eps[i][0], "context": eps[i][1],
                    "score": float(sims[i])}
        best = None
        for i, (seq, _) in enumerate(eps):
            s = _cos(seq, cue)
            t = int(gp.argmax(s))
            v = float(s[t])
            if best is None or v > best[0]:
                best = (v, i, t)
        v, i, t = best
        return {"index": i, "sequence": eps[i][0], "context": eps[i][1],
                "score": v, "step": t}

    def complete(self, partial: Array) -> Array:
        """The continuation of ``partial`` (t, dim): the rest of the episode whose state best
        matches partial's last state, after that state."""
        partial = self._take(partial, "EpisodicMemory.complete", "partial")
        if partial.ndim != 2 or partial.shape[1] != self.dim or partial.shape[0] == 0:
            raise ValueError(f"EpisodicMemory.complete: partial must be (t, {self.dim}) with "
                             f"t >= 1, got {partial.shape}")
        r = self.recall(cue=partial[-1])
        return r["sequence"][r["step"] + 1:]
