"""Key-value memory: write (key, value) rows; read by similarity with a temperature, over all
slots (soft) or the top k; a fixed capacity with FIFO or LRU eviction.

    score_i = sim(q, k_i) / temperature      (sim: cosine or dot)
    read(q) = sum_i softmax(score)_i v_i      (over the top_k scores only, if given)

Reads are differentiable in the query, and in the stored keys/values while they still carry
the graph of the step that wrote them; ``write`` stores them detached when ``detach=True``.
Optional learnable projections make the module trainable end to end.
"""
from __future__ import annotations

import threading

from ..array import api as gp
from ..array.array import Array
from ..nn import functional as F
from ..nn.layers import Linear
from ..nn.module import Module
from ._placed import Placed, count_list, pos_int, pos_real, state_fields

__all__ = ["KeyValueMemory", "ContextAggregator"]

# a write changes keys, values and stamps together and a read takes them as one snapshot, so
# threads sharing a memory never see them out of step; one lock for every memory (a lock
# attribute would stop copy.deepcopy and pickle of the module)
_LOCK = threading.Lock()


def _unit(x: Array) -> Array:
    return x / gp.sqrt(gp.sum(x * x, axis=-1, keepdims=True) + 1e-12)


class KeyValueMemory(Placed, Module):
    """A slot memory of ``capacity`` (key, value) pairs (see the module doc)."""

    def __init__(self, key_dim: int, value_dim: int, capacity: int = 1024, *,
                 temperature: float = 1.0, similarity: str = "cosine", eviction: str = "fifo",
                 project: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        key_dim, value_dim, capacity = (pos_int(v, "KeyValueMemory", n) for n, v in (
            ("key_dim", key_dim), ("value_dim", value_dim), ("capacity", capacity)))
        if similarity not in ("cosine", "dot"):
            raise ValueError(f"KeyValueMemory: similarity must be 'cosine' or 'dot', got "
                             f"{similarity!r}")
        if eviction not in ("fifo", "lru"):
            raise ValueError(f"KeyValueMemory: eviction must be 'fifo' or 'lru', got {eviction!r}")
        temperature = pos_real(temperature, "KeyValueMemory", "temperature")
        self.key_dim, self.value_dim, self.capacity = key_dim, value_dim, capacity
        self.temperature, self.similarity, self.eviction = float(temperature), similarity, eviction
        self.query_proj = Linear(key_dim, key_dim, device=device, dtype=dtype) if project else None
        self._place_init(device, dtype, "KeyValueMemory")
        self.reset()

    def reset(self) -> None:
        """Forget every slot."""
        with _LOCK:
            self.keys: list = []
            self.values: list = []
            self._stamp: list = []   # insertion or last-use time, for eviction
            self._clock = 0

    def __len__(self) -> int:
        return len(self.keys)

    def get_extra_state(self) -> dict:
        """The slots for ``state_dict``: {"keys" (n, key_dim), "values" (n, value_dim),
        "stamps" (each slot's insertion or last-use time, for eviction), "clock"}."""
        with _LOCK:
            keys, values, stamps, clock = list(self.keys), list(self.values), list(self._stamp), \
                self._clock
        dev, dt = self._home(self._ref())

        def rows(xs: list, width: int) -> Array:
            if not xs:
                return gp.zeros((0, width), dtype=dt, device=dev)
            return gp.stack(xs, axis=0).detach()
        return {"keys": rows(keys, self.key_dim), "values": rows(values, self.value_dim),
                "stamps": stamps, "clock": clock}

    def set_extra_state(self, state: dict) -> None:
        """Restore the slots ``get_extra_state`` gave (rows placed on the memory's device and
        dtype)."""
        op = "KeyValueMemory.set_extra_state"
        keys, values, stamps, clock = state_fields(state, op, ("keys", "values", "stamps",
                                                               "clock"))
        keys = self._state_rows(keys, op, "keys", self.key_dim)
        values = self._state_rows(values, op, "values", self.value_dim)
        n = keys.shape[0]
        if values.shape[0] != n:
            raise ValueError(f"{op}: keys and values must have as many rows, got {n} and "
                             f"{values.shape[0]}")
        if n > self.capacity:
            raise ValueError(f"{op}: {n} slots do not fit the memory's capacity {self.capacity}")
        stamps = count_list(stamps, op, "stamps", n)
        (clock,) = count_list([clock], op, "clock", 1)
        if clock < max(stamps, default=0):   # later writes and reads must stamp newer
            raise ValueError(f"{op}: clock {clock} is below a stamp ({max(stamps)})")
        with _LOCK:
            self.keys = [keys[i] for i in range(n)]
            self.values = [values[i] for i in range(n)]
            self._stamp, self._clock = stamps, clock

    def _ref(self):
        if self.keys:
            return self.keys[0]
        return None if self.query_proj is None else self.query_proj.weight

    def write(self, keys: Array, values: Array, *, detach: bool = True) -> None:
        """Store rows of ``keys`` (n, key_dim) and ``values`` (n, value_dim), evicting the
        oldest (FIFO) or least recently read (LRU) slots beyond capacity. Host data (numpy)
        goes to the memory's device; rows are cast to its dtype if one was given."""
        keys = self._take(keys, "KeyValueMemory.write", "keys", store=True)
        values = self._take(values, "KeyValueMemory.write", "values", store=True, like=keys)
        if keys.ndim == 1:
            keys, values = gp.reshape(keys, (1, -1)), gp.reshape(values, (1, -1))
        if keys.ndim != 2 or keys.shape[1] != self.key_dim or values.ndim != 2 \
                or values.shape != (keys.shape[0], self.value_dim):
            raise ValueError(f"KeyValueMemory.write: keys must be (n, {self.key_dim}) and values "
                             f"(n, {self.value_dim}), got {keys.shape} and {values.shape}")
        rows = []
        for i in range(keys.shape[0]):
            k, v = keys[i], values[i]
            if detach:
                k, v = gp.asarray(k, copy=True), gp.asarray(v, copy=True)
            rows.append((k, v))
        with _LOCK:
            for k, v in rows:
                if len(self.keys) >= self.capacity:
                    j = min(range(len(self._stamp)), key=self._stamp.__getitem__)
                    del self.keys[j], self.values[j], self._stamp[j]
                self._clock += 1
                self.keys.append(k)
                self.values.append(v)
                self._stamp.append(self._clock)

    def _slots(self) -> tuple[list, list]:
        """(keys, values): copies of the slot lists taken together."""
        with _LOCK:
            return list(self.keys), list(self.values)

    def scores(self, query: Array) -> Array:
        """Similarity / temperature of each query row (b, key_dim) with every slot: (b, slots)."""
        return self._scores(query, self._slots()[0])

    def _scores(self, query: Array, keys: list) -> Array:
        if not keys:
            raise RuntimeError("KeyValueMemory: the memory is empty; write first")
        query = self._take(query, "KeyValueMemory.read", "query")
        if query.ndim not in (1, 2) or query.shape[-1] != self.key_dim:
            raise ValueError(f"KeyValueMemory.read: query must be ({self.key_dim},) or (b, "
                             f"{self.key_dim}), got shape {query.shape}")
        q = query if query.ndim == 2 else gp.reshape(query, (1, -1))
        if self.query_proj is not None:
            q = self.query_proj(q)
        k = gp.stack(keys, axis=0)
        if self.similarity == "cosine":
            q, k = _unit(q), _unit(k)
        return gp.matmul(q, gp.matrix_transpose(k)) * (1.0 / self.temperature)

    def read(self, query: Array, top_k: int | None = None) -> tuple[Array, Array]:
        """(values read (b, value_dim), attention weights (b, slots)) for query rows (or one
        (key_dim,) query); ``top_k``: softmax over each row's k best slots only."""
        keys, values = self._slots()
        if keys:
            query = self._take(query, "KeyValueMemory.read", "query")
        s = self._scores(query, keys)
        if top_k is not None:
            if isinstance(top_k, bool) or not hasattr(top_k, "__index__") or top_k < 1:
                raise ValueError(f"KeyValueMemory.read: top_k must be a positive int, got "
                                 f"{top_k!r}")
            k = min(top_k.__index__(), s.shape[1])
            kth = gp.topk(s, k, axis=1)[0][:, k - 1:k]
            s = gp.where(s >= kth, s, -float(gp.finfo(s.dtype).max))
        w = F.softmax(s, dim=-1)
        out = gp.matmul(w, gp.stack(values, axis=0))
        if self.eviction == "lru":   # the slots a read mostly used count as used now
            best = gp.argmax(w, axis=1).tolist()
            with _LOCK:
                self._clock += 1
                for j in set(best):
                    # by identity: a write since the snapshot may have moved or evicted it
                    at = j if j < len(self.keys) and self.keys[j] is keys[j] else next(
                        (i for i, kk in enumerate(self.keys) if kk is keys[j]), None)
                    if at is not None:
                        self._stamp[at] = self._clock
        if query.ndim == 1:
            return out[0], w[0]
        return out, w

    def forward(self, query: Array, top_k: int | None = None) -> Array:
        """The values read for ``query``."""
        return self.read(query, top_k)[0]


class ContextAggregator(Module):
    """Attention pooling of a set of context vectors (n, dim) into one (dim,) vector with a
    learnable query: softmax(items q / sqrt(dim)) items."""

    def __init__(self, dim: int, device=None, dtype=None) -> None:
        super().__init__()
        self.query = Linear(dim, 1, bias=False, device=device, dtype=dtype)
        self.dim = dim

    def forward(self, items: Array) -> Array:
        """items (n, dim) or (batch, n, dim) -> (dim,) or (batch, dim); host data (numpy) goes
        to the query's device and dtype."""
        if not isinstance(items, Array):
            w = self.query.weight
            items = gp.asarray(items, dtype=w.dtype, device=w.device)
        s = self.query(items)[..., 0] * (1.0 / self.dim ** 0.5)
        w = F.softmax(s, dim=-1)
        return gp.sum(gp.expand_dims(w, axis=-1) * items, axis=-2)
